# SPDX-License-Identifier: MIT
"""weft's commands on Heph traces: the decode of every packet against the
golden conversion of Heph's own tool (heph_sample.json holds the stream,
substream, times, description and attributes of every packet, in file
order), the call tree, and the reports of info/check on broken files."""

import json
import struct

import pytest

from weftlib import DATA_DIR, run_weft

HEPH = DATA_DIR / "heph"
SAMPLE = HEPH / "heph_sample.bin.log"


def dump_json(*args):
    out = run_weft("dump", "--json", *args, expect=0).stdout
    return [json.loads(line) for line in out.splitlines()]


def stream_ids(path):
    """(stream id, substream id) from a stream path."""
    stream, sub = path.split("/")
    return int(stream.split(".")[1]), int(sub.split(".")[1])


def test_decode_matches_golden_conversion():
    """Every packet decoded like Heph's converter decoded it: same ids,
    description and attribute values (arrays included), same times up
    to the microsecond flooring and same-start fix-up of the converter."""
    golden = json.loads((HEPH / "heph_sample.json").read_text())["traceEvents"]
    events = dump_json("--stored-order", SAMPLE)
    assert len(events) == len(golden) == 21
    shifted = 0
    for ours, want in zip(events, golden):
        assert stream_ids(ours["stream"]) == (want["pid"], want["tid"])
        assert ours["code"] == want["name"]
        assert ours["fields"] == want.get("args", {})
        ts, dur = ours["time"] // 1000, (ours["end"] - ours["time"]) // 1000
        if (ts, dur) != (want["ts"], want["dur"]):
            # the converter moved it by whole microseconds, keeping the end
            assert abs(want["ts"] - ts) <= 3
            assert want["ts"] + want["dur"] == ts + dur
            shifted += 1
    assert 0 < shifted <= 3  # e.g. "Scheduling processes" shares 119010 us


def test_file_order_offsets_increase():
    events = dump_json("--stored-order", SAMPLE)
    offsets = [e["offset"] for e in events]
    assert offsets == sorted(offsets) and offsets[0] == 23


def test_time_order_and_call_tree():
    events = dump_json(SAMPLE)
    times = [e["time"] for e in events]
    assert times == sorted(times)
    by_code = {(e["stream"], e["code"]): e for e in events}
    child = by_code[("stream.1/substream.0", "Polling for OS events")]
    parent = by_code[("stream.1/substream.0", "Scheduling processes")]
    assert (child["depth"], parent["depth"]) == (1, 0)
    assert parent["parent"] == -1
    # parent is the stored index of the enclosing event in its stream
    stored = [e for e in dump_json("--stored-order", SAMPLE)
              if e["stream"] == "stream.1/substream.0"]
    assert stored[child["parent"]]["code"] == "Scheduling processes"


def test_info_and_top():
    out = run_weft("info", SAMPLE, expect=0).stdout
    assert "format: heph" in out
    assert "epoch=1610113734118010000" in out
    assert "stream.1/substream.94355107131408" in out
    assert "lost_packets=0" in out
    top = run_weft("top", SAMPLE, expect=0).stdout.splitlines()
    assert top[0].split() == ["name", "events", "total", "mean"]
    assert top[1].split()[:3] == ["receiving", "message", "4"]


def event_packet(stream, counter, start, end, desc, attrs=b""):
    d = desc.encode()
    body = struct.pack(">IIQQQH", stream, counter, 0, start, end, len(d)) + d + attrs
    return struct.pack(">II", 0xC1FC1FB7, 8 + len(body)) + body


def test_check_reports_lost_packets(tmp_path):
    data = b"".join(event_packet(1, c, c * 10, c * 10 + 5, "e")
                    for c in (0, 1, 2, 6, 7))
    path = tmp_path / "gap.bin.log"
    path.write_bytes(data)
    proc = run_weft("check", path)
    assert proc.returncode == 1
    assert "3 packet(s) lost (counters 3..5 missing)" in proc.stdout
    info = run_weft("info", path, expect=0).stdout
    assert "lost_packets=3" in info


@pytest.mark.parametrize("attrs, message", [
    (b"\x00\x01a\x80\x00\x00", "0x80 alone is invalid"),
    (b"\x00\x01a\x09", "unknown attribute type 0x09"),
    (b"\x00\x01a\x04\x00\x40xy", "runs past the packet end"),
])
def test_check_names_the_byte(tmp_path, attrs, message):
    first = event_packet(1, 0, 1, 2, "ok")
    data = first + event_packet(1, 1, 3, 4, "bad", attrs) + event_packet(1, 2, 5, 6, "ok")
    path = tmp_path / "bad.bin.log"
    path.write_bytes(data)
    proc = run_weft("check", path)
    assert proc.returncode == 1
    assert message in proc.stdout
    # the problem is located inside the second packet
    line = next(l for l in proc.stdout.splitlines() if message in l)
    offset = int(line.split(":")[1])
    assert len(first) + 44 <= offset < len(first) + 42 + 3 + len(attrs)
    # the packets around it are still read; the skipped one makes it exit 1
    proc = run_weft("dump", "--json", path, expect=1)
    assert message in proc.stderr
    assert len(proc.stdout.splitlines()) == 2


def test_truncated_file_is_read_with_warning(tmp_path):
    data = event_packet(1, 0, 1, 2, "one") + event_packet(1, 1, 3, 4, "two")
    path = tmp_path / "cut.bin.log"
    path.write_bytes(data[:-5])
    proc = run_weft("dump", "--json", path)
    assert proc.returncode == 0
    assert [json.loads(l)["code"] for l in proc.stdout.splitlines()] == ["one"]
    assert "warning" in proc.stderr and "larger than" in proc.stderr


def with_size(data, offset, size):
    """The trace with the size field of the packet at `offset` set."""
    return data[:offset + 4] + struct.pack(">I", size) + data[offset + 8:]


@pytest.mark.parametrize("command", [["check"], ["dump"], ["convert", "-t", "chrome"]])
@pytest.mark.parametrize("size", [0x7FFFFFFF, "past"])
def test_wrong_size_mid_file_is_an_error(tmp_path, command, size):
    """A size that runs past the end of the file while packets follow (a
    corrupted size, not a cut last packet): the rest of the file is lost,
    which is an error (exit 1), not the warning of a cut last packet."""
    data = SAMPLE.read_bytes()
    offsets = [e["offset"] for e in dump_json("--stored-order", SAMPLE)]
    bad, after = offsets[9], offsets[10]
    if size == "past":  # just one byte past the end
        size = len(data) - bad + 1
    path = tmp_path / "bad.bin.log"
    path.write_bytes(with_size(data, bad, size))
    args = command + [path] + (["-o", tmp_path / "o.json"] if command[0] == "convert" else [])
    proc = run_weft(*args, expect=1)
    out = proc.stdout + proc.stderr
    assert f":{bad + 4}: error: packet size {size} is larger than the " in out
    assert f"but a packet starts at byte {after} within them" in out
    if command[0] == "dump":
        assert len(proc.stdout.splitlines()) == 9  # the packets before it


@pytest.mark.parametrize("command", [["check"], ["dump"], ["convert", "-t", "chrome"]])
def test_wrong_size_of_the_last_packet_is_a_warning(tmp_path, command):
    """The same size on the last packet loses that packet only: a warning,
    as for a file cut by a crash of the writer (exit 0; check reports it,
    as every problem, with exit 1)."""
    data = SAMPLE.read_bytes()
    last = dump_json("--stored-order", SAMPLE)[-1]["offset"]
    path = tmp_path / "last.bin.log"
    path.write_bytes(with_size(data, last, 0x7FFFFFFF))
    args = command + [path] + (["-o", tmp_path / "o.json"] if command[0] == "convert" else [])
    proc = run_weft(*args, expect=1 if command[0] == "check" else 0)
    out = proc.stdout + proc.stderr
    assert f":{last + 4}: warning: packet size 2147483647 is larger than the " in out
    assert "error" not in out


def many_packets(count):
    """A trace of `count` events over 3 streams, in runs of one stream."""
    counters = [0, 0, 0]
    out = []
    for i in range(count):
        stream = (i // 25) % 3
        out.append(event_packet(stream, counters[stream], i * 10, i * 10 + 4,
                                "work" if i % 2 else "exchange"))
        counters[stream] += 1
    return b"".join(out)


@pytest.mark.parametrize("to, suffix", [
    ("perfetto", ".pftrace"), ("chrome", ".json"), ("paraver", ".prv")])
def test_convert_same_output_with_helper_threads(tmp_path, to, suffix):
    """The scan in two halves (forced on small files by --threads 2)
    changes no byte of any output."""
    path = tmp_path / "many.bin.log"
    path.write_bytes(many_packets(3000))
    outputs = []
    for threads in ("1", "2"):
        out = tmp_path / f"out{threads}{suffix}"
        run_weft("convert", "--threads", threads, "-t", to, path, "-o", out, expect=0)
        outputs.append(out.read_bytes())
    assert outputs[0] == outputs[1] and len(outputs[0]) > 1000
    assert run_weft("info", "--threads", "2", path, expect=0).stdout == \
        run_weft("info", "--threads", "1", path, expect=0).stdout


@pytest.mark.parametrize("value", ["0", "-1", "x", "2000"])
def test_threads_option_is_checked(value):
    proc = run_weft("info", "--threads", value, SAMPLE)
    assert proc.returncode == 2
    assert "--threads expects a number from 1 to 1024" in proc.stderr
