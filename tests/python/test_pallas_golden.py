# SPDX-License-Identifier: MIT
"""weft on the Pallas 0.20 reference traces of tests/data/pallas: the
events of `weft dump --json` against `pallas_print` (every event, its
time, thread and name, in the same order), the per-event counts and first
timestamps against the full decode, and clear errors on damaged copies
(with the rest of the trace still readable where the format allows)."""

import json
import re
import struct

import pytest

from pallas_layout import patch
from weftlib import DATA_DIR, run_weft

PALLAS = DATA_DIR / "pallas"
TRACES = sorted(p.name for p in PALLAS.iterdir() if (p / "trace").is_dir())
PRINTED = [t for t in TRACES if (PALLAS / t / "golden" / f"{t}.print.txt").exists()]
DECODED = [t for t in TRACES if (PALLAS / t / "golden" / f"{t}.decode.txt").exists()]


def dump_json(path, *args):
    out = run_weft("dump", "--json", *args, path, expect=0).stdout
    return [json.loads(line) for line in out.splitlines()]


def thread_names(path):
    """stream path -> thread name, from `weft info`."""
    out = run_weft("info", path, expect=0).stdout
    names, archive = {}, None
    for line in out.splitlines():
        m = re.match(r"\s+(archive_\d+)\s+\[archive", line)
        if m:
            archive = m.group(1)
        m = re.match(r"\s+(thread_\d+)\s+\[thread \d+, stream \d+\] name=(\S+)", line)
        if m:
            names[f"{archive}/{m.group(1)}"] = m.group(2)
    return names


def describe(event):
    """The event as pallas_print names it."""
    f = event["fields"]
    if event["code"] in ("Enter", "Leave"):
        return f"{event['code']} {f['region_ref']} ({f['region']})"
    if event["code"] == "Generic":
        return f["name"]
    raise AssertionError(f"no pallas_print name for {event}")


def printed_events(name):
    """(time ns, thread, name) of every line of <name>.print.txt."""
    lines = (PALLAS / name / "golden" / f"{name}.print.txt").read_text().splitlines()
    assert lines[0].strip() == "Timestamp"
    events = []
    for line in lines[1:]:
        stamp, rest = line[:21], line[21:]
        thread, desc = rest.split("    ", 1)
        seconds, nanos = stamp.strip().split(".")
        events.append((int(seconds) * 10**9 + int(nanos), thread.strip(), desc))
    return events


@pytest.mark.parametrize("name", PRINTED)
def test_dump_matches_pallas_print(name):
    path = PALLAS / name / "trace"
    names = thread_names(path)
    ours = [(e["time"], names[e["stream"]], describe(e)) for e in dump_json(path)]
    assert ours == printed_events(name)


def decoded_events(name):
    """{thread id: {(record, payload hex): (n, first timestamps)}} from the
    full decode."""
    threads, current = {}, None
    text = (PALLAS / name / "golden" / f"{name}.decode.txt").read_text()
    for line in text.splitlines():
        m = re.match(r" thread (\d+) ", line)
        if m:
            current = threads.setdefault(int(m.group(1)), {})
        m = re.match(r"  E\d+ rec=(\d+) payload=(\w*) n=(\d+) .*ts\[:4\]=\[([\d, ]*)\]", line)
        if m:
            stamps = [int(x) for x in m.group(4).split(",") if x.strip()]
            current[(int(m.group(1)), m.group(2))] = (int(m.group(3)), stamps)
    return threads


RECORDS = {"Enter": 2, "Leave": 3, "Generic": 58}


@pytest.mark.parametrize("name", DECODED)
def test_event_counts_and_timestamps_match_decode(name):
    path = PALLAS / name / "trace"
    ours = {}
    for e in dump_json(path):
        thread = int(e["stream"].rsplit("_", 1)[1])
        key = (RECORDS[e["code"]], e["payload"])
        ours.setdefault(thread, {}).setdefault(key, []).append(e["time"])
    expected = decoded_events(name)
    assert set(ours) == set(expected)
    for thread, events in expected.items():
        got = {k: (len(v), v[:4]) for k, v in ours[thread].items()}
        assert got == events, f"thread {thread}"


def info_threads(name):
    """Thread names in the order of `pallas_info -la -lt`'s thread table."""
    lines = (PALLAS / name / "golden" / f"{name}.info.txt").read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("#Thread_name"))
    return [line.split()[0] for line in lines[start + 1:] if line.strip()]


def test_streams_in_pallas_order():
    """Issue 13 item 5: Pallas sorts location groups and locations by id
    when it reads (an archive's own locations, then the main file's): the
    streams of `weft info`, and so the order of equal times in the merged
    dump (test_dump_matches_pallas_print), are pallas_info's."""
    path = PALLAS / "weft_order" / "trace"
    names = thread_names(path)
    assert list(names.values()) == info_threads("weft_order")
    assert list(names) == [f"archive_{a}/thread_{t}" for a, t in
                           ((0, 0), (0, 1), (0, 2), (1, 3), (1, 4), (1, 5))]


def expected_parents(events):
    """Each event's parent as a stack of Enters gives it: the index in its
    stream of the Enter of the innermost call around it, -1 outside."""
    parents, stacks, index = [], {}, {}
    for e in events:
        stack = stacks.setdefault(e["stream"], [])
        i = index[e["stream"]] = index.get(e["stream"], -1) + 1
        if e["code"] == "Leave" and stack:
            stack.pop()
        parents.append(stack[-1] if stack else -1)
        if e["code"] == "Enter":
            stack.append(i)
    return parents


@pytest.mark.parametrize("name", TRACES)
def test_parent_is_the_enter_of_the_call(name):
    """Issue 13 item 7: `parent` was -1 for every Pallas event."""
    events = dump_json(PALLAS / name / "trace")
    assert [e["parent"] for e in events] == expected_parents(events)


def test_uncompressed_trace_has_the_same_events():
    zstd = dump_json(PALLAS / "wb_enterleave_f3_n1000_t2_logical" / "trace")
    none = dump_json(PALLAS / "wb_enterleave_f3_n1000_t2_logical_None" / "trace")
    assert len(zstd) == 12000 and zstd == none


def test_per_thread_dump_and_main_file_path():
    path = PALLAS / "wb_generic_f2_n2000_t4_logical" / "trace"
    events = dump_json(path / "main.pallas", "--stream", "archive_0/thread_2")
    assert len(events) == 4000
    assert {e["stream"] for e in events} == {"archive_0/thread_2"}
    assert [e["time"] for e in events] == list(range(1, 4001))


def test_info_shows_settings_archives_and_threads():
    out = run_weft("info", PALLAS / "write_pattern" / "trace", expect=0).stdout
    assert "format: pallas" in out
    assert "settings.compression=ZSTD" in out
    assert "settings.loop_finding=BasicTruncated" in out
    assert 'name="Main process"' in out
    assert "name=main_thread" in out
    assert "events: 56, first: 0, last: 55" in out
    assert "grammar: 6 events, 6 sequences, 5 loops" in out


# ---- Damaged copies -------------------------------------------------------------


@pytest.fixture
def broken(copy_pallas):
    """A writable copy of the small reference trace."""
    return copy_pallas("write_pattern")


def test_wrong_version_byte(broken):
    patch(broken / "main.pallas", 0, bytes([19]))
    err = run_weft("info", broken, expect=2).stderr
    assert "main.pallas" in err and "byte 0" in err and "version 19" in err


def test_truncated_main_file(broken):
    main = broken / "main.pallas"
    main.write_bytes(main.read_bytes()[:60])
    err = run_weft("info", broken, expect=2).stderr
    assert "main.pallas" in err and "byte " in err and "expected" in err


def test_huge_string_count_is_refused_without_allocating(broken):
    patch(broken / "main.pallas", 33, struct.pack("<Q", 1 << 60))
    err = run_weft("info", broken, expect=2).stderr
    assert "byte 33" in err and "string count" in err


def test_missing_archive_is_a_warning(broken):
    (broken / "archive_0" / "archive.pallas").unlink()
    out = run_weft("info", broken, expect=0).stdout
    assert "archive.pallas" in out and "streams: 0" in out


def test_missing_thread_file_is_a_warning(broken):
    (broken / "archive_0" / "thread_0" / "thread.pallas").unlink()
    out = run_weft("info", broken, expect=0).stdout
    assert "has no grammar file" in out


def test_token_out_of_range(broken):
    thread = broken / "archive_0" / "thread_0" / "thread.pallas"
    data = thread.read_bytes()
    # Sequence 1 holds tokens E0 E1 (u32 1, 5): make its first E99.
    at = data.index(struct.pack("<IQII", 0, 2, 0x01, 0x05))
    patch(thread, at + 12, struct.pack("<I", (99 << 2) | 1))
    err = run_weft("dump", broken, expect=1).stderr
    assert f"thread.pallas:{at + 12}: error" in err and "E99" in err
    out = run_weft("check", broken, expect=1).stdout
    assert "E99" in out
    err = run_weft("profile", broken, expect=2).stderr
    assert "E99" in err or "grammar" in err


def test_zstd_frame_that_does_not_decode(broken):
    dat = broken / "archive_0" / "thread_0" / "event_durations.dat"
    patch(dat, 8, b"\xff" * 8)  # the first frame's magic
    err = run_weft("dump", broken, expect=1).stderr
    assert "event_durations.dat:8: error" in err and "zstd" in err
    run_weft("check", broken, expect=1)


def test_offset_past_the_end_of_the_data_file(broken):
    dat = broken / "archive_0" / "thread_0" / "event_durations.dat"
    dat.write_bytes(dat.read_bytes()[:40])
    err = run_weft("dump", broken, expect=1).stderr
    assert "event_durations.dat:36: error" in err and "file has 40 bytes" in err


def test_profile_replay_says_when_a_stream_ends_early(broken):
    """A stream that fails on the way: the profile of what was read, the
    error on stderr, and exit 1 (some data could not be read)."""
    dat = broken / "archive_0" / "thread_0" / "event_durations.dat"
    dat.write_bytes(dat.read_bytes()[:40])
    proc = run_weft("profile", "--replay", broken, expect=1)
    assert "event_durations.dat:36: error" in proc.stderr
    assert "(the stream ends here)" in proc.stderr
    assert proc.stdout.splitlines()[0].split()[:2] == ["region", "calls"]


def test_garbage_thread_file_never_crashes(broken):
    thread = broken / "archive_0" / "thread_0" / "thread.pallas"
    data = bytearray(thread.read_bytes())
    for i in range(0, len(data), 7):
        data[i] ^= 0x5A
    thread.write_bytes(bytes(data))
    proc = run_weft("dump", broken)
    assert proc.returncode in (0, 1)
    assert "thread.pallas" in proc.stderr


# ---- Profile ----------------------------------------------------------------------


def profile(path, *args):
    return json.loads(run_weft("profile", "--json", *args, path, expect=0).stdout)


def interval_counts(name):
    """region -> calls, from pallas_print -i (one interval)."""
    path = PALLAS / name / "golden" / f"{name}.print_i1.txt"
    counts = {}
    for line in path.read_text().splitlines():
        m = re.match(r"S\d+: (\d+)\t(\S+)", line)
        if m and not m.group(2).startswith("Sequence_"):
            counts[m.group(2)] = counts.get(m.group(2), 0) + int(m.group(1))
    return counts


@pytest.mark.parametrize("name", TRACES)
def test_profile_from_durations_equals_replay(name):
    path = PALLAS / name / "trace"
    grammar, replay = profile(path), profile(path, "--replay")
    assert grammar["source"] == "durations" and replay["source"] == "replay"
    assert grammar["regions"] == replay["regions"]
    headers = profile(path, "--headers-only")["regions"]
    assert [(r["region"], r["count"]) for r in headers] == \
        [(r["region"], r["count"]) for r in grammar["regions"]]


@pytest.mark.parametrize("name", [t for t in TRACES if
                                  (PALLAS / t / "golden" / f"{t}.print_i1.txt").exists()])
def test_profile_counts_match_pallas_print_intervals(name):
    regions = profile(PALLAS / name / "trace")["regions"]
    # pallas_print -i counts the calls of thread 0.
    threads = len(list((PALLAS / name / "trace" / "archive_0").glob("thread_*")))
    assert {r["region"]: r["count"] // threads for r in regions} == interval_counts(name)


def test_profile_from_stored_durations_refuses_other_formats():
    err = run_weft("profile", "--headers-only", DATA_DIR / "heph" / "heph_sample.bin.log",
                   expect=2).stderr
    assert "only Pallas traces store call durations (this is a heph trace)" in err


# ---- Structure ----------------------------------------------------------------------


def structure_of(name):
    """{thread: {token: {"children": [...], "line": text}}} from `weft dump
    --structure`: a line's children are the lines one level deeper below it
    (a sequence printed again is marked "(above)" and has none)."""
    out = run_weft("dump", "--structure", PALLAS / name / "trace", expect=0).stdout
    threads, nodes, stack = {}, None, []
    for line in out.splitlines():
        m = re.match(r"--- archive_\d+/thread_(\d+):", line)
        if m:
            nodes = threads.setdefault(int(m.group(1)), {})
            stack = []
            continue
        depth = (len(line) - len(line.lstrip(" "))) // 2
        token = line.split()[0]
        del stack[depth:]
        if stack:
            nodes[stack[-1]]["children"].append(token)
        nodes.setdefault(token, {"children": [], "line": line})
        stack.append(token)
    return threads


def decoded_grammar(name):
    """{thread: {"S1": [tokens], "L0": (repeated, iterations, occurrences)}}."""
    threads, current = {}, None
    text = (PALLAS / name / "golden" / f"{name}.decode.txt").read_text()
    for line in text.splitlines():
        m = re.match(r" thread (\d+) ", line)
        if m:
            current = threads.setdefault(int(m.group(1)), {})
        m = re.match(r"  (S\d+) type=\d tokens=\[(.*?)\] n=(\d+)", line)
        if m:
            current[m.group(1)] = ([t.strip(" '") for t in m.group(2).split(",")],
                                   int(m.group(3)))
        m = re.match(r"  (L\d+) \{'repeated': '(\w+)', 'iterations': (\d+), "
                     r"'occurrences': (\d+)\}", line)
        if m and not m.group(2).startswith("I"):
            current[m.group(1)] = ([m.group(2)], (int(m.group(3)), int(m.group(4))))
    return threads


@pytest.mark.parametrize("name", DECODED)
def test_structure_matches_decode(name):
    ours, golden = structure_of(name), decoded_grammar(name)
    assert set(ours) == set(golden)
    for thread, grammar in golden.items():
        for token, (children, counts) in grammar.items():
            node = ours[thread][token]
            assert node["children"] == children, (thread, token)
            if token.startswith("S"):
                assert f"  x{counts}" in node["line"]
            else:
                assert f"  {counts[0]} iterations  x{counts[1]}" in node["line"]


def test_structure_refuses_other_formats():
    err = run_weft("dump", "--structure", DATA_DIR / "heph" / "heph_sample.bin.log",
                   expect=2).stderr
    assert "Pallas" in err
