# SPDX-License-Identifier: MIT
"""One time vocabulary (issue 15): --from/--to in dump, profile and
convert; "+T" is T after the trace's start, a plain T a clock value;
convert's output format is -t/--format-out/--output-format, and the old
spellings (--until T, --to FORMAT) still work with a note; a window that
selects nothing is said (exit 1)."""

import json

import pytest

from weftlib import DATA_DIR, run_weft

TRACES = {
    "ovni": DATA_DIR / "ovni" / "v3" / "bench-mix-small" / "ovni",
    "heph": DATA_DIR / "heph" / "heph_sample.bin.log",
    "pallas": DATA_DIR / "pallas" / "wb_enterleave_f3_n1000_t2_logical" / "trace",
    "ross": DATA_DIR / "ross" / "phold-gvt-pekplp" / "np2",
}


def events(trace, *args):
    """The events of `weft dump --json` with the arguments."""
    out = run_weft("dump", "--json", *args, trace, expect=0).stdout
    return [json.loads(line) for line in out.splitlines()]


def start_and_end(trace):
    """First and last time of the timed events, from an unfiltered dump."""
    times = [e["time"] for e in events(trace) if "no_time" not in e.get("flags", [])]
    return min(times), max(times)


@pytest.mark.parametrize("fmt", sorted(TRACES))
def test_relative_window_is_the_absolute_one_shifted(fmt):
    trace = TRACES[fmt]
    start, end = start_and_end(trace)
    lo, hi = (end - start) // 4, (end - start) // 2
    relative = events(trace, "--from", f"+{lo}", "--to", f"+{hi}ns")
    absolute = events(trace, "--from", start + lo, "--to", start + hi)
    assert relative == absolute
    assert relative, "the window selects some events"
    assert all(start + lo <= e["time"] <= start + hi for e in relative)
    # profile reads the same window
    rel = run_weft("profile", "--json", "--from", f"+{lo}", "--to", f"+{hi}", trace,
                   expect=0).stdout
    ab = run_weft("profile", "--json", "--from", start + lo, "--to", start + hi, trace,
                  expect=0).stdout
    assert rel == ab


def test_relative_times_take_units():
    trace = TRACES["ovni"]
    start, _ = start_and_end(trace)
    got = events(trace, "--from", "+0.5ms", "--to", "+600us")
    assert got == events(trace, "--from", start + 500000, "--to", start + 600000)
    assert got


@pytest.mark.parametrize("fmt", ["ovni", "heph"])
def test_convert_relative_window(tmp_path, fmt):
    trace = TRACES[fmt]
    start, end = start_and_end(trace)
    lo, hi = (end - start) // 4, (end - start) // 2
    run_weft("convert", trace, "-t", "chrome", "--from", f"+{lo}", "--to", f"+{hi}",
             "-o", tmp_path / "rel.json", expect=0)
    run_weft("convert", trace, "-t", "chrome", "--from", start + lo, "--to", start + hi,
             "-o", tmp_path / "abs.json", expect=0)
    assert (tmp_path / "rel.json").read_bytes() == (tmp_path / "abs.json").read_bytes()
    run_weft("convert", trace, "-t", "chrome", "-o", tmp_path / "all.json", expect=0)
    assert (tmp_path / "rel.json").stat().st_size < (tmp_path / "all.json").stat().st_size


@pytest.mark.parametrize("spelling", [["-t", "chrome"], ["-tchrome"], ["--format-out", "chrome"],
                                      ["--output-format=chrome"]])
def test_output_format_spellings(tmp_path, spelling):
    trace = TRACES["heph"]
    run_weft("convert", trace, "-o", tmp_path / "ref.pb", *spelling, expect=0)
    proc = run_weft("convert", trace, "-o", tmp_path / "ref2.pb", expect=0)
    assert proc.stderr == ""
    # the format named wins over OUT's extension: chrome JSON in a .pb file
    assert (tmp_path / "ref.pb").read_bytes().lstrip().startswith(b"{")
    assert not (tmp_path / "ref2.pb").read_bytes().lstrip().startswith(b"{")


def test_deprecated_spellings_still_work_with_a_note(tmp_path):
    trace = TRACES["ovni"]
    start, end = start_and_end(trace)
    hi = start + (end - start) // 2
    # --raw: the generic mapping, whose files are OUT.prv/.pcf/.row
    new = run_weft("convert", trace, "-t", "paraver", "--raw", "--from", start, "--to", hi,
                   "-o", tmp_path / "new", expect=0)
    old = run_weft("convert", trace, "--to", "paraver", "--raw", "--from", start,
                   "--until", hi, "-o", tmp_path / "old", expect=0)
    assert "note" not in new.stderr
    assert "note: --to paraver is deprecated: write -t paraver" in old.stderr
    assert f"note: --until is deprecated: write --to {hi}" in old.stderr
    for ext in ("prv", "pcf", "row"):
        assert (tmp_path / f"new.{ext}").read_bytes() == (tmp_path / f"old.{ext}").read_bytes()


@pytest.mark.parametrize("command", [["dump"], ["profile"], ["convert", "-t", "chrome"]])
def test_window_past_the_end_is_said(tmp_path, command):
    trace = TRACES["ovni"]
    start, end = start_and_end(trace)
    extra = ["-o", tmp_path / "out.json"] if command[0] == "convert" else []
    proc = run_weft(*command, trace, "--from", end + 1, *extra, expect=1)
    assert (f"weft {command[0]}: warning: no event from {end + 1} ns to the end; "
            f"the trace starts at {start} ns") in proc.stderr
    proc = run_weft(*command, trace, "--from", "+1h", "--to", "+2h", *extra, "-f", expect=1) \
        if command[0] == "convert" else \
        run_weft(*command, trace, "--from", "+1h", "--to", "+2h", expect=1)
    assert f"no event from {start + 3600 * 10**9} ns to {start + 7200 * 10**9} ns" in proc.stderr


def test_clock_value_before_the_start_gets_a_note():
    trace = TRACES["ovni"]
    proc = run_weft("dump", "--from", "10ms", trace, expect=0)
    assert "note: --from 10000000 ns is before the start of the trace" in proc.stderr
    assert "+10ms is 10 ms after its start" in proc.stderr
    assert proc.stdout == run_weft("dump", trace, expect=0).stdout


@pytest.mark.parametrize("args,message", [
    (["--from", "+x"], "invalid time '+x' for --from"),
    (["--to", "+-1"], "invalid time '+-1' for --to"),
    (["--from", "+2ms", "--to", "+1ms"], "--to is before --from"),
])
@pytest.mark.parametrize("command", ["dump", "profile"])
def test_bad_windows(command, args, message):
    proc = run_weft(command, TRACES["heph"], *args, expect=2)
    assert message in proc.stderr
