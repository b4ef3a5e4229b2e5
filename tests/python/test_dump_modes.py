# SPDX-License-Identifier: MIT
"""The layouts of `weft dump` beyond the ovni goldens: `--tree` (the code
indented by call-tree depth), the end and duration of interval events in
the text dump, the "file" key of ROSS records in `--json`, and the end
samples of ROSS (virtual time DBL_MAX) shown as `end` in the text dump."""

import json
import struct

import pytest

from weftlib import DATA_DIR, run_weft, v3_dir, v3_traces

HEPH_SAMPLE = DATA_DIR / "heph" / "heph_sample.bin.log"
ROSS = DATA_DIR / "ross"
ROSS_BINS = sorted(ROSS.glob("*/*/*.bin"))
ROSS_RUNS = sorted({b.parent for b in ROSS_BINS})
RT = ROSS / "phold-rt-pekplp" / "np2" / "ross-stats-rt.bin"
DBL_MAX = 1.7976931348623157e308


def text_lines(*args):
    return run_weft("dump", *args, expect=0).stdout.splitlines()


def json_events(*args):
    return [json.loads(l) for l in text_lines("--json", *args)]


def split_head(line, event):
    """(indentation, text after the stream and its two spaces) of a text
    line whose clock, code and stream are those of the JSON `event` (a
    line with nothing after the stream ends there)."""
    clock, rest = line.lstrip(" ").split("  ", 1)
    assert int(clock) == event["time"], line
    body = rest.lstrip(" ")
    head = f"{event['code']}  {event['stream']}"
    assert body.startswith(head), (line, head)
    tail = body[len(head):]
    assert tail == "" or tail.startswith("  "), line
    return len(rest) - len(body), tail[2:]


def heph_packet(stream, counter, start, end, desc):
    """A Heph event packet (format 0.1.0, substream 0, no attribute)."""
    d = desc.encode()
    body = struct.pack(">IIQQQH", stream, counter, 0, start, end, len(d)) + d
    return struct.pack(">II", 0xC1FC1FB7, 8 + len(body)) + body


# ---- --tree ---------------------------------------------------------------------

def test_tree_indent_is_twice_the_depth():
    events = json_events(HEPH_SAMPLE)
    lines = text_lines("--tree", HEPH_SAMPLE)
    assert len(lines) == len(events)
    for line, event in zip(lines, events):
        indent, _ = split_head(line, event)
        assert indent == 2 * event["depth"], line
    assert max(e["depth"] for e in events) >= 1


def test_tree_with_stream_filter():
    """A stream filter keeps the tree lines of that stream, unchanged."""
    everything = text_lines("--tree", HEPH_SAMPLE)
    selected = text_lines("--tree", "--stream", "stream.1/substream.0", HEPH_SAMPLE)
    assert selected == [l for l in everything if "  stream.1/substream.0  " in l]
    assert any(l.split("  ", 1)[1].startswith("  ") for l in selected)


def test_tree_without_a_call_tree_is_the_plain_dump():
    """Depth -1 (ovni, Heph in stored order) is printed unindented."""
    for trace in [v3_dir(n) / "ovni" for n in v3_traces()[:3]]:
        for mode in ([], ["-x"]):
            assert text_lines("--tree", *mode, trace) == text_lines(*mode, trace)
    assert (text_lines("--tree", "--stored-order", HEPH_SAMPLE) ==
            text_lines("--stored-order", HEPH_SAMPLE))


def test_tree_and_json_is_a_usage_error():
    proc = run_weft("dump", "--tree", "--json", HEPH_SAMPLE, expect=2)
    assert "--tree" in proc.stderr and proc.stdout == ""


def test_tree_of_a_deep_nest(tmp_path):
    """300 nested events: indentation grows to 256 levels and stays there;
    the 3-byte code goes through the same layout as the long ones."""
    depth = 300
    packets = [heph_packet(1, i, i, 2 * depth - i, "abc" if i % 2 else "nested")
               for i in reversed(range(depth))]
    path = tmp_path / "deep.bin.log"
    path.write_bytes(b"".join(packets))
    events = json_events(path)
    lines = text_lines("--tree", path)
    assert [e["depth"] for e in events] == list(range(depth))
    for line, event in zip(lines, events):
        indent, rest = split_head(line, event)
        assert indent == 2 * min(event["depth"], 256), line
        assert rest == f"end={event['end']} dur={event['end'] - event['time']}"


# ---- Intervals in the text dump -------------------------------------------------------

@pytest.mark.parametrize("mode", [[], ["-x"], ["--stored-order"]])
def test_interval_lines_show_end_and_duration(mode):
    events = json_events(*[m for m in mode if m != "-x"], HEPH_SAMPLE)
    lines = text_lines(*mode, HEPH_SAMPLE)
    assert len(lines) == len(events) == 21
    for line, event in zip(lines, events):
        indent, rest = split_head(line, event)
        assert indent == 0
        part = f"end={event['end']} dur={event['end'] - event['time']}"
        assert rest.startswith(part), line
        after = rest[len(part):]
        if "-x" in mode:  # ovnidump -x's separator, even before no bytes
            assert after == "  " + "".join(":" + event["payload"][i:i + 2]
                                           for i in range(0, len(event["payload"]), 2))
        elif not event["fields"]:
            assert after == ""
        else:
            assert after.startswith("  ") and not after.endswith(" ")


def test_interval_line_example():
    line = next(l for l in text_lines(HEPH_SAMPLE) if "Scheduling processes" in l)
    assert line == ("1610113734119010050  Scheduling processes  stream.1/substream.0  "
                    "end=1610113734119018250 dur=8200  "
                    "local amount=2 shared amount=1 total amount=3")


def test_point_events_have_no_interval_part():
    for name in v3_traces()[:3]:
        for line in text_lines(v3_dir(name) / "ovni"):
            assert " end=" not in line and " dur=" not in line


# ---- ROSS: "file" in --json -------------------------------------------------------------

@pytest.mark.parametrize("path", ROSS_BINS, ids=lambda p: f"{p.parent.parent.name}/{p.name}")
def test_ross_json_file_of_a_single_file(path):
    events = json_events(path)
    assert events
    data = path.read_bytes()
    for e in events:
        keys = list(e)
        assert keys[keys.index("offset") + 1] == "file", keys
        assert e["file"] == path.name
        payload = bytes.fromhex(e["payload"])
        assert data[e["offset"]:e["offset"] + len(payload)] == payload


@pytest.mark.parametrize("run", ROSS_RUNS, ids=lambda p: p.parent.name)
def test_ross_json_file_of_a_run(run):
    """Every record names its file; (file, offset) points at its bytes,
    and each file's records are those of dumping the file alone."""
    events = json_events(run)
    names = {b.name for b in run.glob("*.bin")}
    by_file = {}
    for e in events:
        assert e["file"] in names, e
        by_file.setdefault(e["file"], []).append((e["offset"], e["code"], e["payload"]))
    for name, records in by_file.items():
        alone = [(e["offset"], e["code"], e["payload"]) for e in json_events(run / name)]
        assert records == alone, name
    assert len(by_file) > 0


def test_no_file_key_for_ovni_and_heph():
    for trace in (v3_dir(v3_traces()[0]) / "ovni", HEPH_SAMPLE):
        assert all("file" not in e for e in json_events(trace))


# ---- ROSS: end samples in the text dump -----------------------------------------------

@pytest.mark.parametrize("path", [RT, ROSS / "im-everything" / "np1" / "ross-stats-rt.bin"],
                         ids=["phold-rt", "im-everything-rt"])
def test_ross_end_virtual_time_is_end_in_text(path):
    events = json_events(path)
    lines = text_lines(path)
    assert len(lines) == len(events)
    ends = 0
    for line, event in zip(lines, events):
        _, rest = split_head(line, event)
        vt = event["fields"]["virtual_time"]
        first = rest.split(" ", 1)[0]
        if vt == DBL_MAX:
            ends += 1
            assert first == "virtual_time=end", line
        else:
            assert first.startswith("virtual_time=") and float(first[13:]) == vt, line
        assert "1.7976931348623157e+308" not in line
    assert ends == {RT: 26}.get(path, 9)
    # --json keeps the number
    assert sum(e["fields"]["virtual_time"] == DBL_MAX for e in events) == ends


# ---- No trailing spaces ---------------------------------------------------------------

@pytest.mark.parametrize("trace", [
    DATA_DIR / "ovni" / "v3" / "bench-mix-small" / "ovni",
    DATA_DIR / "ovni" / "v3" / "nosv-parallel-tasks" / "ovni",
    HEPH_SAMPLE,
    DATA_DIR / "pallas" / "wb_enterleave_f3_n1000_t2_logical" / "trace",
    DATA_DIR / "ross" / "im-everything" / "np1",
], ids=lambda p: p.parent.name if p.name in ("ovni", "trace", "np1") else p.name)
@pytest.mark.parametrize("threads", ["1", "2"])
def test_text_lines_have_no_trailing_spaces(trace, threads):
    """The text dump ends every line with its last field (or the stream, or
    the duration), with one thread or two (-x keeps ovnidump -x's separator
    before an empty payload: test_dump_golden compares it byte for byte)."""
    for args in ([], ["--tree"]):
        lines = text_lines("--threads", threads, *args, trace)
        assert lines
        assert [l for l in lines if l != l.rstrip()] == []
