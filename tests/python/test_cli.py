# SPDX-License-Identifier: MIT
"""The `weft` command itself: usage and error paths (exit 2 with a
message), the dump filters, and `weft sort`."""

import fnmatch

import pytest

from weftlib import (DATA_DIR, OLD_TRACES, parse_dump, run_weft, v3_dir, with_payload)

TRACE = v3_dir("bench-valid-small") / "ovni"
COMMANDS = ["info", "dump", "top", "check", "sort"]


def test_global_help_lists_commands():
    out = run_weft("--help", expect=0).stdout
    for c in COMMANDS:
        assert f"  {c} " in out


@pytest.mark.parametrize("command", COMMANDS)
def test_command_help(command):
    out = run_weft(command, "--help", expect=0).stdout
    assert out.startswith(f"usage: weft {command}")
    assert "example:" in out


def test_no_arguments_is_usage_error():
    proc = run_weft(expect=2)
    assert "usage: weft" in proc.stderr


def test_unknown_command():
    proc = run_weft("frobnicate", TRACE, expect=2)
    assert "unknown command 'frobnicate'" in proc.stderr


@pytest.mark.parametrize("command", ["info", "dump", "top", "check"])
def test_nonexistent_path(command, tmp_path):
    missing = tmp_path / "no-such-trace"
    proc = run_weft(command, missing, expect=2)
    assert str(missing) in proc.stderr
    assert proc.stdout == ""


def test_sort_nonexistent_path(tmp_path):
    proc = run_weft("sort", "--check", tmp_path / "nothing", expect=2)
    assert "nothing" in proc.stderr


@pytest.mark.parametrize("args,message", [
    (["dump", "--bogus", TRACE], "unknown option '--bogus'"),
    (["dump", "-k", TRACE], "unknown option '-k'"),
    (["dump", TRACE, "--from"], "option --from needs a value"),
    (["dump", "--from", "10parsecs", TRACE], "invalid time '10parsecs'"),
    (["dump", "--from", "2s", "--to", "1s", TRACE], "--to is before --from"),
    (["dump"], "missing the TRACE argument"),
    (["dump", TRACE, TRACE], "unexpected argument"),
    (["top", "--format", "nonsense", TRACE], "unknown format 'nonsense'"),
    (["check", "--json", TRACE], "unknown option '--json'"),
    (["info", "--streams=yes", TRACE], "unknown option '--streams=yes'"),
    (["top", "--streams=yes", TRACE], "option --streams takes no value"),
])
def test_usage_errors(args, message):
    proc = run_weft(*args, expect=2)
    assert message in proc.stderr, proc.stderr
    assert proc.stdout == ""


def test_wrong_format_forced():
    proc = run_weft("dump", "--format", "ross", TRACE, expect=2)
    assert "cannot open" in proc.stderr


# ---- Filters -----------------------------------------------------------------------

def all_events():
    return with_payload(parse_dump(run_weft("dump", "-x", TRACE, expect=0).stdout))


def filtered(*args):
    return with_payload(parse_dump(run_weft("dump", "-x", *args, TRACE, expect=0).stdout))


def test_time_window():
    events = all_events()
    lo, hi = events[100][0], events[2000][0]
    assert filtered("--from", lo, "--to", hi) == [e for e in events if lo <= e[0] <= hi]


def test_time_units():
    events = all_events()
    start = events[0][0]
    lo_us = start // 1000 + 50           # in microseconds
    hi_ms = start / 1e6 + 0.5            # in milliseconds, with a fraction
    hi_ms_text = f"{hi_ms:.3f}"
    hi_ns = int(hi_ms_text.split(".")[0]) * 10**6 + int(hi_ms_text.split(".")[1]) * 1000
    got = filtered("--from", f"{lo_us}us", "--to", f"{hi_ms_text}ms")
    assert got == [e for e in events if lo_us * 1000 <= e[0] <= hi_ns]
    assert got  # not empty
    # Times are clock values: this trace runs ~498 s after boot, so 1h is
    # past its end (a warning that names the start, exit 1) and 10ms is
    # before its start (the whole trace, with a note that says so)
    proc = run_weft("dump", "-x", "--from", "1h", TRACE, expect=1)
    assert proc.stdout == ""
    assert (f"warning: no event from 3600000000000 ns to the end; the trace starts at "
            f"{start} ns") in proc.stderr
    proc = run_weft("dump", "-x", "--from", "10ms", TRACE, expect=0)
    assert with_payload(parse_dump(proc.stdout)) == events
    assert "--from 10000000 ns is before the start of the trace" in proc.stderr


def test_stream_and_code_globs():
    events = all_events()
    pattern = "*/thread.2215"
    assert filtered("--stream", pattern) == [e for e in events if fnmatch.fnmatchcase(e[2], pattern)]
    assert filtered("--mcv", "V*") == [e for e in events if e[1].startswith("V")]
    assert filtered("--event", "OM?", "--stream", pattern) == [
        e for e in events if e[1].startswith("OM") and fnmatch.fnmatchcase(e[2], pattern)]


def test_json_and_fields_modes_accept_filters():
    out = run_weft("dump", "--json", "--mcv", "VYc", TRACE, expect=0).stdout
    assert len(out.splitlines()) == 4


# ---- weft sort ------------------------------------------------------------------------

def test_sort_check_then_sort(copy_trace):
    trace = copy_trace(v3_dir("ovni-sort-unsorted"))
    proc = run_weft("sort", "--check", trace, expect=1)
    assert "unsorted streams: 1" in proc.stdout
    before = with_payload(parse_dump(run_weft("dump", "-x", trace, expect=0).stdout))
    proc = run_weft("sort", trace, expect=0)
    assert "streams rewritten: 1" in proc.stdout
    run_weft("sort", "--check", trace, expect=0)
    run_weft("check", "--sorted", trace, expect=0)
    stored = with_payload(parse_dump(
        run_weft("dump", "--stored-order", "-x", trace, expect=0).stdout))
    assert stored == before


def test_sort_check_on_sorted_trace():
    out = run_weft("sort", "--check", v3_dir("ovni-sort-sorted") / "ovni", expect=0).stdout
    assert "unsorted streams: 0" in out


def test_version():
    assert run_weft("--version", expect=0).stdout.startswith("weft ")
    assert run_weft("-V", expect=0).stdout == run_weft("--version", expect=0).stdout


def test_usage_lists_the_formats_of_the_library():
    usage = run_weft("--help", expect=0).stdout
    assert "--format NAME the trace format: auto (default), ovni, heph, ross, pallas, otf2" \
        in " ".join(usage.split())
    assert "-V, --version" in usage


def test_check_says_1_stream():
    """One stream: "1 stream", not "1 streams" (issue 15)."""
    trace = DATA_DIR / "ovni" / "peer" / "emu-nosv-hwc" / "ovni"
    out = run_weft("check", trace, expect=0).stdout
    assert out.splitlines()[-1] == "ok: 1 stream, 13 events, no problems"


def test_old_layout_forced_format():
    run_weft("top", "--format", "ovni", OLD_TRACES[1] / "ovni", expect=0)


def test_clock_offsets_shift_every_clock(tmp_path):
    trace = v3_dir("mpi-func-4procs") / "ovni"
    table = tmp_path / "clock-offsets.txt"
    table.write_text("rank       hostname             offset_median        offset_mean          offset_std\n"
                     "0          vm                   1000                 1000.0               0.0\n")
    plain = all_events_of(trace)
    shifted = all_events_of(trace, "--clock-offsets", table)
    assert [(e[0] + 1000,) + e[1:] for e in plain] == shifted
    info = run_weft("info", "--clock-offsets", table, trace, expect=0).stdout
    assert "clock offset: 1000 ns" in info


def test_missing_clock_offsets_file(tmp_path):
    proc = run_weft("dump", "--clock-offsets", tmp_path / "none.txt",
                    v3_dir("mpi-func-4procs") / "ovni", expect=2)
    assert "none.txt" in proc.stderr


def all_events_of(trace, *args):
    return with_payload(parse_dump(run_weft("dump", "-x", *args, trace, expect=0).stdout))


@pytest.mark.parametrize("trace", ["heph/heph_sample.bin.log", "ross/phold-rt-pekplp/np2"])
def test_sort_says_it_sorts_ovni_only(trace):
    """It said that the Heph file lacked the ovni magic (issue 15)."""
    err = run_weft("sort", DATA_DIR / trace, expect=2).stderr
    fmt = trace.split("/")[0]
    assert f"is a {fmt} trace; weft sort sorts ovni traces only" in err


def test_a_filter_that_matches_nothing_says_so_and_exits_1():
    """--stream nomatch and --mcv 'OH[' printed nothing and exited 0
    (issue 15): now a warning names the pattern and what there is."""
    trace = v3_dir("mpi-func-4procs") / "ovni"
    proc = run_weft("dump", "--stream", "nomatch", trace, expect=1)
    assert proc.stdout == ""
    assert "no stream matches --stream 'nomatch'; the streams are: " \
        "loom.vm.0/proc.2192/thread.2192, " in proc.stderr
    proc = run_weft("dump", "--mcv", "OH[", trace, expect=1)
    assert "no event matches --event 'OH['; the codes are: MTS (400), " in proc.stderr
    proc = run_weft("profile", "--event", "zzz", DATA_DIR / "heph" / "heph_sample.bin.log",
                    expect=1)
    assert "no event matches --event 'zzz'; the codes are: receiving message (4)" \
        in proc.stderr
    run_weft("dump", "--stream", "*thread.2192", "--mcv", "M*", trace, expect=0)
