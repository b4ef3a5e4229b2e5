# SPDX-License-Identifier: MIT
"""`weft convert -t chrome`: Heph traces to Chrome's Trace Event JSON.

- `--heph-compat` is byte for byte Heph's converter: the two goldens, and
  a Python transcription of Heph's mapping (integer microseconds, its
  same-start fix-up walked one microsecond at a time, floats as Rust's
  Display) on a generated trace larger than the reader's window;
- the default mode is the same mapping, corrected: exact fractional
  microseconds, escaped strings, NaN and infinities as strings, metadata
  events naming processes and threads, valid JSON for broken inputs;
- the command: output formats and times behind `--to`, filters, the
  temporary file and its rename, `--force`, exit statuses.

Crafted traces are built with the small packet writer below."""

import json
import math
import os
import random
import resource
import signal
import struct
import subprocess
from decimal import Decimal
from pathlib import Path

import pytest

from weftlib import DATA_DIR, OVNI_DATA, WEFT, run_weft

HEPH = DATA_DIR / "heph"
SAMPLE = HEPH / "heph_sample.bin.log"
SAMPLE_COMPAT = HEPH / "heph_sample_compat.bin.log"
EPOCH = 1610113734118010000


# ---- Writing Heph packets (big-endian, layout of the format document) -------

def _s16(data):
    return struct.pack(">H", len(data)) + data


def epoch_packet(ns):
    body = _s16(b"epoch") + struct.pack(">Q", ns)
    return struct.pack(">II", 0x75D11D4D, 8 + len(body)) + body


_SCALAR = {"u64": (0x01, ">Q"), "i64": (0x02, ">q"), "f64": (0x03, ">d")}


def _value(kind, v):
    if kind == "str":
        return _s16(v if isinstance(v, bytes) else v.encode())
    return struct.pack(_SCALAR[kind][1], v)


def attr(name, kind, value):
    """One attribute: kind is u64, i64, f64, str, or one of them + '[]'
    for an array; a raw int kind is written as the type byte as is."""
    raw_name = _s16(name if isinstance(name, bytes) else name.encode())
    if isinstance(kind, int):
        return raw_name + bytes([kind]) + value
    if kind.endswith("[]"):
        base = kind[:-2]
        code = 0x04 if base == "str" else _SCALAR[base][0]
        return (raw_name + bytes([code | 0x80]) + struct.pack(">H", len(value)) +
                b"".join(_value(base, v) for v in value))
    code = 0x04 if kind == "str" else _SCALAR[kind][0]
    return raw_name + bytes([code]) + _value(kind, value)


def event_packet(stream, counter, sub, start, end, desc, attrs=()):
    desc = desc if isinstance(desc, bytes) else desc.encode()
    body = struct.pack(">IIQQQ", stream, counter, sub, start, end) + _s16(desc)
    body += b"".join(attrs)
    return struct.pack(">II", 0xC1FC1FB7, 8 + len(body)) + body


class Trace:
    """Packets in file order, with a counter per stream."""

    def __init__(self, epoch=EPOCH):
        self.data = bytearray(epoch_packet(epoch) if epoch is not None else b"")
        self.counters = {}

    def event(self, stream, start, end, desc, attrs=(), sub=0):
        n = self.counters.get(stream, 0)
        self.counters[stream] = n + 1
        self.data += event_packet(stream, n, sub, start, end, desc, attrs)

    def write(self, path):
        Path(path).write_bytes(bytes(self.data))
        return path


# ---- Helpers ------------------------------------------------------------------

def convert(trace, out, *args, expect=0):
    return run_weft("convert", trace, "-t", "chrome", "-o", out, *args, expect=expect)


def load(path):
    """The document, numbers kept exact (Decimal), and its X events."""
    doc = json.loads(Path(path).read_text(), parse_float=Decimal)
    return doc, [e for e in doc["traceEvents"] if e["ph"] == "X"]


def leftovers(directory):
    return sorted(p.name for p in Path(directory).iterdir() if ".tmp." in p.name)


def rust_display(x):
    """Rust's `{}` of an f64: shortest round-trip digits, positional."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    text = format(Decimal(repr(x)), "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text


def significant_digits(text):
    """The significant digits of a number's text ('0.00120e5' -> '12')."""
    mantissa = text.lower().lstrip("-").split("e")[0].replace(".", "")
    return mantissa.lstrip("0").rstrip("0") or "0"


# ---- Heph's converter, transcribed (the reference of --heph-compat) -----------

def heph_walk(track, ts, dur):
    """Heph's fix-up, one microsecond at a time. Returns the place, or
    None where Heph loops forever (a state seen two moves before)."""
    history = []
    while ts in track:
        if len(history) >= 2 and history[-2] == (ts, dur):
            return None
        history.append((ts, dur))
        if track[ts] > dur:
            ts, dur = ts + 1, max(dur - 1, 0)
        else:
            ts, dur = ts - 1, dur + 1
    return ts, dur


def heph_reference(events, epoch):
    """What Heph's converter writes for `events` (stream, sub, start, end,
    desc, [(name, int or str)]) in file order: its layout, floors, and
    its fix-up; events where it would hang stay in place (as weft).
    Returns the bytes and the number of those."""
    taken = {}
    out = []
    endless = 0
    for stream, sub, start, end, desc, attrs in events:
        ts, dur = (epoch + start) // 1000, (end - start) // 1000
        track = taken.setdefault((stream, sub), {})
        place = heph_walk(track, ts, dur)
        if place is None:
            endless += 1
        else:
            ts, dur = place
            track[ts] = dur
        text = f'\t\t{{"pid": {stream}, "tid": {sub}, "ts": {ts}, "dur": {dur}, "name": "{desc}"'
        if attrs:
            parts = [f'"{k}": ' + (f'"{v}"' if isinstance(v, str) else str(v)) for k, v in attrs]
            text += ', "args": {' + ", ".join(parts) + "}"
        out.append(text + ', "ph": "X", "cat": ""}')
    return ('{\n\t"displayTimeUnit": "ns",\n\t"traceEvents": [\n' + ",\n".join(out) +
            "\n\t]\n}").encode(), endless


# ---- --heph-compat -----------------------------------------------------------------

@pytest.mark.parametrize("trace,golden", [
    (SAMPLE_COMPAT, HEPH / "heph_sample_compat.json"),
    (SAMPLE, HEPH / "heph_sample.json"),
], ids=["compat-golden", "arrays-golden"])
def test_compat_is_byte_exact(tmp_path, trace, golden):
    out = tmp_path / "out.json"
    proc = convert(trace, out, "--heph-compat")
    assert proc.stderr == ""
    assert out.read_bytes() == golden.read_bytes()
    assert leftovers(tmp_path) == []


def test_compat_fixup_moves_events_in_the_golden(tmp_path):
    # The golden has an event moved by the fix-up: without it, the bytes differ.
    _, golden = load(HEPH / "heph_sample_compat.json")
    _, ours = load(convert_default(tmp_path, SAMPLE_COMPAT))
    moved = [g for g, o in zip(golden, ours) if g["ts"] != math.floor(o["ts"])]
    assert moved


def test_compat_matches_heph_reference_on_a_large_trace(tmp_path):
    """8 streams, nested events written children first, many starting in
    the same microsecond, about 5 MB: larger than the reader's 4 MiB
    window, so that batches of events cross window moves."""
    rng = random.Random(7)
    trace = Trace()
    events = []
    clocks = {s: 1000 * s for s in range(8)}
    names = ["receiving message", "sending message", "Polling for OS events",
             "Running thread-local process", "Scheduling processes"]
    while len(trace.data) < 5_200_000:
        s = rng.randrange(8)
        parent_start = clocks[s]
        t = parent_start + rng.randrange(0, 3) * 300
        for _ in range(rng.randrange(1, 4)):
            end = t + rng.choice([0, 400, rng.randrange(0, 40000)])
            attrs = [("amount", rng.randrange(100))] if rng.random() < 0.25 else []
            desc = rng.choice(names)
            events.append((s, 0, t, end, desc, attrs))
            trace.event(s, t, end, desc, [attr(k, "u64", v) for k, v in attrs])
            t = end + rng.choice([0, 300, rng.randrange(0, 20000)])
        parent = (s, 0, parent_start, t + 50, "Running process", [("id", s), ("name", "x")])
        events.append(parent)
        trace.event(s, parent_start, t + 50, "Running process",
                    [attr("id", "u64", s), attr("name", "str", "x")])
        clocks[s] = t + 50 + rng.randrange(0, 30000)
    path = trace.write(tmp_path / "large.bin.log")
    out = tmp_path / "large.json"
    proc = convert(path, out, "--heph-compat")
    want, endless = heph_reference(events, EPOCH)
    assert out.read_bytes() == want
    assert ("would never end" in proc.stderr) == (endless > 0)
    doc, xs = load(convert_default(tmp_path, path))
    assert len(xs) == len(events)


def test_compat_writes_floats_as_rust_does(tmp_path):
    rng = random.Random(11)
    values = [789.0, 1e-7, 1e21, float(struct.unpack("f", struct.pack("f", 0.1))[0]),
              -2.5, 123.456, 0.0, -0.0, 5e-324, -5e-324, 1.7976931348623157e308,
              2.2250738585072014e-308, 2.225073858507201e-308, 2.0 ** 53, 2.0 ** 53 + 2,
              2.0 ** 64, 1e23, 0.1 + 0.2, 1 / 3, 4.35, 1e15, 1e16, 123456789012345678.0]
    while len(values) < 3000:
        bits = rng.getrandbits(64)
        if len(values) % 3 == 0:
            bits &= 0x800FFFFFFFFFFFFF  # subnormal
        x = struct.unpack(">d", struct.pack(">Q", bits))[0]
        if len(values) % 3 == 1:
            x = float(rng.getrandbits(rng.randrange(1, 70)))
        if math.isfinite(x):
            values.append(x)
    trace = Trace()
    for i in range(0, len(values), 20):
        chunk = values[i:i + 20]
        trace.event(1, 1000 * i, 1000 * i + 10, "floats",
                    [attr(f"v{j}", "f64", v) for j, v in enumerate(chunk)])
    path = trace.write(tmp_path / "floats.bin.log")

    def raw(text):  # the number's text as written
        return ("raw", text)
    convert(path, tmp_path / "c.json", "--heph-compat")
    compat = json.loads((tmp_path / "c.json").read_text(), parse_float=raw, parse_int=raw)
    got = [v for e in compat["traceEvents"] for v in e["args"].values()]
    assert [t for _, t in got] == [rust_display(v) for v in values]
    assert all("e" not in t for _, t in got)

    default = json.loads(Path(convert_default(tmp_path, path)).read_text(),
                         parse_float=raw, parse_int=raw)
    got = [v for e in default["traceEvents"] if e["ph"] == "X" for v in e["args"].values()]
    assert len(got) == len(values)
    for (_, text), v in zip(got, values):
        assert float(text) == v and math.copysign(1, float(text)) == math.copysign(1, v), text
        assert significant_digits(text) == significant_digits(repr(v)), (text, repr(v))


def test_nan_and_infinities_are_strings(tmp_path):
    trace = Trace()
    trace.event(1, 0, 1000, "odd floats", [
        attr("nan", "f64", float("nan")), attr("inf", "f64", float("inf")),
        attr("minus inf", "f64", float("-inf")),
        attr("array", "f64[]", [1.5, float("nan"), float("-inf")])])
    path = trace.write(tmp_path / "nan.bin.log")
    want = {"nan": "NaN", "inf": "inf", "minus inf": "-inf", "array": [1.5, "NaN", "-inf"]}
    for args in ([], ["--heph-compat"]):
        out = tmp_path / f"nan{len(args)}.json"
        convert(path, out, *args)
        _, xs = load(out)
        assert xs[0]["args"] == want
    assert (b'"args": {"nan": "NaN", "inf": "inf", "minus inf": "-inf", '
            b'"array": [1.5, "NaN", "-inf"]}') in (tmp_path / "nan1.json").read_bytes()


# ---- Default mode ----------------------------------------------------------------

def convert_default(tmp_path, trace, name="default.json"):
    out = tmp_path / name
    convert(trace, out, "--force")
    return out


def dump_events(trace):
    """(time, end) in ns of every event in file order, from weft dump."""
    out = run_weft("dump", "--json", "--stored-order", trace, expect=0).stdout
    return [json.loads(line) for line in out.splitlines()]


def test_default_matches_heph_golden_semantically(tmp_path):
    _, golden = load(HEPH / "heph_sample.json")
    doc, ours = load(convert_default(tmp_path, SAMPLE))
    assert doc["displayTimeUnit"] == "ns"
    assert len(ours) == len(golden) == 21
    # Heph's pid and tid are the stream and substream ids; ours are the
    # view's numbers (never 0, within 32 bits), named by metadata events
    meta = [e for e in doc["traceEvents"] if e["ph"] == "M"]
    stream = {e["pid"]: int(e["args"]["name"].split(".")[1]) for e in meta
              if e["name"] == "process_name"}
    substream = {(e["pid"], e["tid"]): int(e["args"]["name"].split(".")[1]) for e in meta
                 if e["name"] == "thread_name"}
    taken = {}
    moved = 0
    origin = doc["otherData"]["ts_origin_ns"]
    for o, g, d in zip(ours, golden, dump_events(SAMPLE)):
        assert (stream[o["pid"]], substream[(o["pid"], o["tid"])], o["name"]) == \
            (g["pid"], g["tid"], g["name"])
        assert o.get("args") == g.get("args")
        # exact nanoseconds from the origin, as fractional microseconds
        assert o["ts"] == Decimal(d["time"] - origin) / 1000
        assert o["dur"] == Decimal(d["end"] - d["time"]) / 1000
        ts = math.floor((origin + o["ts"] * 1000) / 1000)
        dur = math.floor(o["dur"])
        if g["ts"] != ts:  # Heph's fix-up moved it off a taken microsecond
            moved += 1
            assert ts in taken.setdefault((g["pid"], g["tid"]), set())
            assert g["ts"] + g["dur"] == ts + dur and abs(g["ts"] - ts) <= 2
        else:
            assert g["dur"] == dur
        taken.setdefault((g["pid"], g["tid"]), set()).add(g["ts"])
    assert moved >= 1


def test_default_names_processes_and_threads(tmp_path):
    doc, _ = load(convert_default(tmp_path, SAMPLE))
    meta = [e for e in doc["traceEvents"] if e["ph"] == "M"]
    processes = {e["pid"]: e["args"]["name"] for e in meta if e["name"] == "process_name"}
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in meta
               if e["name"] == "thread_name"}
    # the ids when they are numbers a viewer keeps (1 to 2^31 - 1), else
    # fresh numbers from above the largest of them (7), in order of first use
    assert processes == {9: "stream.0", 1: "stream.1", 2: "stream.2"}
    assert threads == {(9, 10): "substream.0", (1, 8): "substream.0",
                       (1, 11): "substream.94355107131408",
                       (1, 13): "substream.94355107131632",
                       (2, 12): "substream.0", (2, 7): "substream.7"}
    # each track is named before its first event
    named = set()
    for e in doc["traceEvents"]:
        if e["ph"] == "M":
            named.add((e["pid"], e.get("tid") if e["name"] == "thread_name" else None))
        else:
            assert (e["pid"], None) in named and (e["pid"], e["tid"]) in named, e
    assert sum(e["ph"] == "X" for e in doc["traceEvents"]) == 21


def test_fractional_microseconds(tmp_path):
    trace = Trace(epoch=1_000_000_000_000_000_000)
    for start, end in [(0, 1000), (50, 1050), (1, 2), (999, 123_456_789), (10, 10)]:
        trace.event(3, start, end, "t")
    doc = Path(convert_default(tmp_path, trace.write(tmp_path / "t.bin.log"))).read_text()
    # ts from the origin: the first time's second, less a day
    for text in ['"ts":86400000000,"dur":1,', '"ts":86400000000.05,"dur":1,',
                 '"ts":86400000000.001,"dur":0.001,',
                 '"ts":86400000000.999,"dur":123455.79,',
                 '"ts":86400000000.01,"dur":0,',
                 '"ts_origin_ns":999913600000000000}']:
        assert text in doc


def perfetto_ns(value):
    """A ts or dur (us) as Perfetto's JSON importer reads it into ns
    (json_trace_tokenizer.cc CoerceToTs, json_parser.h StringToDouble): an
    integer times 1000; else the integer part plus the decimals over their
    power of ten, in doubles, times 1000.0, rounded half away from zero."""
    if isinstance(value, int):
        return value * 1000
    text = str(value)  # a Decimal keeps the digits as written
    negative = text.startswith("-")
    whole, _, decimals = text.lstrip("-").partition(".")
    d = float(int(whole))
    if decimals:
        d += float(int(decimals)) / float(10 ** len(decimals))
    d = -d if negative else d
    if d == math.trunc(d):
        return int(d) * 1000
    x = abs(d * 1000.0)
    rounded = math.floor(x) + (1 if x - math.floor(x) >= 0.5 else 0)
    return -rounded if negative else rounded


def check_exact_in_perfetto(doc, times):
    """Every event's ts, read as Perfetto does, plus the stated origin, is
    the event's time to the nanosecond (times: exact ns in event order)."""
    origin = doc["metadata"]["ts_origin_ns"]
    assert doc["otherData"]["ts_origin_ns"] == origin and origin % 1_000_000_000 == 0
    events = [e for e in doc["traceEvents"] if e["ph"] != "M"]
    assert len(events) == len(times)
    for e, (time, end) in zip(events, times):
        assert perfetto_ns(e["ts"]) + origin == time, (e, time)
        if "dur" in e:
            assert perfetto_ns(e["dur"]) == end - time


def test_times_are_exact_in_perfetto(tmp_path):
    """Heph's times count from 1970: as absolute microseconds a double
    keeps a quarter of one, and Perfetto started sibling slices 0.1 us
    apart at the same instant. From the stated origin every nanosecond
    reads back."""
    doc, _ = load(convert_default(tmp_path, SAMPLE))
    events = dump_events(SAMPLE)
    check_exact_in_perfetto(doc, [(d["time"], d["end"]) for d in events])
    origin = doc["metadata"]["ts_origin_ns"]
    first = events[0]["time"]
    assert origin == (first // 10**9 - 86400) * 10**9 <= min(d["time"] for d in events)
    # siblings 100 ns apart, an event before the first one stored
    trace = Trace()
    trace.event(1, 5_000_000, 5_000_300, "first stored")
    trace.event(1, 5_000_100, 5_000_200, "sibling")
    trace.event(1, 1_000, 9_000_000, "parent, stored last")
    out = convert_default(tmp_path, trace.write(tmp_path / "siblings.bin.log"), "s.json")
    doc, xs = load(out)
    check_exact_in_perfetto(doc, [(EPOCH + 5_000_000, EPOCH + 5_000_300),
                                  (EPOCH + 5_000_100, EPOCH + 5_000_200),
                                  (EPOCH + 1_000, EPOCH + 9_000_000)])
    assert len({perfetto_ns(x["ts"]) for x in xs}) == 3


def test_times_far_from_the_origin_are_reported(tmp_path):
    """An event stored after one that starts more than a day later gets a
    negative ts (exact; Perfetto drops it), and the conversion says so."""
    day = 86400 * 10**9
    trace = Trace()
    trace.event(1, 2 * day, 2 * day + 10, "late")
    trace.event(1, 0, 10, "two days earlier")
    out = tmp_path / "far.json"
    proc = convert(trace.write(tmp_path / "far.bin.log"), out)
    assert "1 event time(s) more than a day before the first one" in proc.stderr
    doc, xs = load(out)
    check_exact_in_perfetto(doc, [(EPOCH + 2 * day, EPOCH + 2 * day + 10), (EPOCH, EPOCH + 10)])
    assert xs[1]["ts"] < 0


def test_small_clocks_stay_absolute(tmp_path):
    """Clocks that count from boot (ovni's) are less than a day: origin 0,
    ts the times themselves."""
    trace = OVNI_DATA / "v3" / "nosv-parallel-tasks" / "ovni"
    doc, _ = load(convert_default(tmp_path, trace))
    assert doc["otherData"] == doc["metadata"] == {"ts_origin_ns": 0}
    times = [(e["time"], e["time"]) for e in
             map(json.loads, run_weft("dump", "--json", trace, expect=0).stdout.splitlines())]
    assert min(perfetto_ns(e["ts"]) for e in doc["traceEvents"] if "ts" in e) == times[0][0]


def test_strings_are_escaped(tmp_path):
    tricky = 'quote " backslash \\ newline \n tab \t cr \r bell \x07 del \x7f é ✓ \u2028'
    trace = Trace()
    trace.event(1, 0, 5000, tricky, [attr('key "with" quotes\\', "str", tricky),
                                     attr("list", "str[]", [tricky, "", "\x00"])])
    path = trace.write(tmp_path / "strings.bin.log")
    for args in ([], ["--heph-compat"]):
        out = tmp_path / f"s{len(args)}.json"
        convert(path, out, *args)
        _, xs = load(out)  # valid JSON
        assert xs[0]["name"] == tricky
        assert xs[0]["args"] == {'key "with" quotes\\': tricky, "list": [tricky, "", "\x00"]}
    default, compat = (tmp_path / "s0.json").read_bytes(), (tmp_path / "s1.json").read_bytes()
    # compat copies what JSON allows raw (DEL), the default escapes it
    assert b"del \x7f" in compat and b"del \\u007f" in default
    assert b"bell \\u0007" in compat and b"bell \\u0007" in default


def test_ovni_spans_and_instants(tmp_path):
    trace = OVNI_DATA / "v3" / "nosv-parallel-tasks" / "ovni"
    out = tmp_path / "ovni.json"
    convert(trace, out)
    doc, _ = load(out)
    events = [e for e in doc["traceEvents"] if e["ph"] != "M"]
    dump = [json.loads(line) for line in
            run_weft("dump", "--json", trace, expect=0).stdout.splitlines()]
    # every event is one record: enters "B", leaves "E", the others "i"
    assert len(events) == len(dump)
    assert [e["ts"] for e in events] == [Decimal(d["time"]) / 1000 for d in dump]
    kinds = {"B": 0, "E": 0, "i": 0}
    for e in events:
        kinds[e["ph"]] += 1
    assert kinds["B"] == kinds["E"] == 201 and kinds["i"] == 2
    # B/E nest per (pid, tid); the task body is a span with its ids
    stacks = {}
    for e in events:
        key = (e["pid"], e["tid"])
        if e["ph"] == "B":
            stacks.setdefault(key, []).append(e)
        elif e["ph"] == "E":
            assert stacks[key].pop()["ts"] <= e["ts"]
    assert all(not s for s in stacks.values())
    tasks = [e for e in events if e["ph"] == "B" and e["name"] == "nosv task"]
    assert len(tasks) == 100 and all(e["args"]["taskid"] == 200 for e in tasks)
    names = {e["args"]["name"] for e in doc["traceEvents"]
             if e["ph"] == "M" and e["name"] == "thread_name"}
    assert {"thread.2184", "thread.2184 running", "thread.2184 nosv VA",
            "thread.2184 nosv VT"} <= names
    assert all(e["s"] == "t" for e in events if e["ph"] == "i")


def test_window_cuts_spans(tmp_path):
    trace = OVNI_DATA / "v3" / "nosv-parallel-tasks" / "ovni"
    full, part = tmp_path / "full.json", tmp_path / "part.json"
    convert(trace, full)
    events = [e for e in load(full)[0]["traceEvents"] if e["ph"] != "M"]
    lo, hi = events[0]["ts"], events[-1]["ts"]
    start, end = lo + (hi - lo) / 3, lo + 2 * (hi - lo) / 3
    start_ns, end_ns = int(start * 1000), int(end * 1000)
    convert(trace, part, "--from", str(start_ns), "--to", str(end_ns))
    cut = [e for e in load(part)[0]["traceEvents"] if e["ph"] != "M"]
    assert cut and all(start_ns <= e["ts"] * 1000 <= end_ns for e in cut)
    # the running span of the thread covers the whole window, cut at both ends
    running = [e for e in cut if e.get("name") == "running"]
    assert running and running[0]["ts"] * 1000 == start_ns
    assert running[0]["args"]["clipped"] is True
    assert sum(e["ph"] == "B" for e in cut) == sum(e["ph"] == "E" for e in cut)


# ---- Broken inputs ----------------------------------------------------------------

def test_truncated_trace_gives_complete_json_and_a_warning(tmp_path):
    data = SAMPLE.read_bytes()
    path = tmp_path / "cut.bin.log"
    path.write_bytes(data[:-10])
    for args in ([], ["--heph-compat"]):
        out = tmp_path / f"cut{len(args)}.json"
        proc = convert(path, out, *args, expect=0)
        assert "warning" in proc.stderr and "cut.bin.log" in proc.stderr
        _, xs = load(out)
        assert len(xs) == 20
    assert leftovers(tmp_path) == []


def test_bad_packets_are_skipped_with_exit_1(tmp_path):
    trace = Trace()
    trace.event(1, 0, 1000, "good")
    trace.event(1, 2000, 3000, "unknown type", [attr("x", 0x05, b"\0" * 8)])
    trace.event(1, 4000, 5000, b"bad \xff utf-8")
    trace.event(1, 6000, 7000, "good too")
    path = trace.write(tmp_path / "bad.bin.log")
    out = tmp_path / "bad.json"
    proc = convert(path, out, expect=1)
    assert proc.stderr.count("error") >= 2
    _, xs = load(out)
    assert [e["name"] for e in xs] == ["good", "good too"]


def test_trace_without_epoch_starts_at_0(tmp_path):
    out = tmp_path / "noepoch.json"
    convert(HEPH / "edge_no_epoch.bin.log", out, "--heph-compat")
    _, xs = load(out)
    assert sorted(e["ts"] for e in xs) == [5, 120, 1000]


def test_trace_with_only_an_epoch(tmp_path):
    for args in ([], ["--heph-compat"]):
        out = tmp_path / f"empty{len(args)}.json"
        convert(HEPH / "edge_epoch_only.bin.log", out, *args)
        doc, xs = load(out)
        assert doc["traceEvents"] == [] and xs == []


# ---- The command ----------------------------------------------------------------------

def test_existing_output_needs_force(tmp_path):
    out = tmp_path / "out.json"
    out.write_text("keep me")
    before = out.stat()
    proc = convert(SAMPLE, out, expect=2)
    assert "--force" in proc.stderr and str(out) in proc.stderr
    assert out.read_text() == "keep me" and out.stat().st_mtime_ns == before.st_mtime_ns
    convert(SAMPLE, out, "--force")
    load(out)
    assert leftovers(tmp_path) == []


def test_output_keeps_usual_permissions(tmp_path):
    out = tmp_path / "perm.json"
    convert(SAMPLE, out)
    mask = os.umask(0)
    os.umask(mask)
    assert out.stat().st_mode & 0o777 == 0o666 & ~mask


def convert_with_size_limit(out, ignore_signal):
    """weft convert with a 1000-byte file size limit (SIGXFSZ ignored:
    the write fails with EFBIG; else the signal kills the command)."""
    def limit():
        if ignore_signal:
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (1000, 1000))
    return subprocess.run([WEFT, "convert", str(SAMPLE), "-t", "chrome", "-o", str(out),
                           "--force"], capture_output=True, text=True, preexec_fn=limit)


def test_failed_write_removes_the_temporary_file(tmp_path):
    out = tmp_path / "out.json"
    out.write_text("old")
    proc = convert_with_size_limit(out, ignore_signal=True)
    assert proc.returncode == 2, proc.stderr
    assert "writing the output failed" in proc.stderr
    assert out.read_text() == "old"
    assert leftovers(tmp_path) == []


def test_killing_signal_removes_the_temporary_file(tmp_path):
    out = tmp_path / "out.json"
    out.write_text("old")
    proc = convert_with_size_limit(out, ignore_signal=False)
    assert proc.returncode == -signal.SIGXFSZ, proc.stderr
    assert out.read_text() == "old"
    assert leftovers(tmp_path) == []


def test_stdout_output(tmp_path):
    proc = run_weft("convert", SAMPLE, "-t", "chrome", "--heph-compat", "-o", "-",
                    expect=0, binary=True)
    assert proc.stdout == (HEPH / "heph_sample.json").read_bytes()


@pytest.mark.parametrize("args,message", [
    (["-t", "chrome"], "missing the output"),
    (["-t", "perfetto", "--heph-compat", "-o", "x.pb"], "--heph-compat is for -t chrome"),
    (["--to", "svg", "-o", "x.svg"], "unknown output format 'svg'"),
    (["--to", "10parsecs", "-o", "x.json"], "invalid time '10parsecs' for --to"),
    (["--from", "2s", "--to", "1s", "-o", "x.json"], "--to is before --from"),
    (["--from", "+2s", "--until", "+1s", "-o", "x.json"], "--to is before --from"),
    (["-t", "svg", "-o", "x.svg"], "unknown output format 'svg'"),
])
def test_usage_errors(tmp_path, args, message):
    proc = run_weft("convert", SAMPLE, *[str(tmp_path / a) if a.startswith("x.") else a
                                         for a in args], expect=2)
    assert message in proc.stderr
    assert list(tmp_path.iterdir()) == []


def test_unreadable_trace_leaves_nothing(tmp_path):
    out = tmp_path / "out.json"
    run_weft("convert", tmp_path / "missing.bin.log", "-t", "chrome", "-o", out, expect=2)
    assert list(tmp_path.iterdir()) == []


def test_to_takes_a_time_and_the_format_comes_from_json(tmp_path):
    # --to 1610113734120ms: a time (ms); the format is chrome because of .json
    out = tmp_path / "window.json"
    run_weft("convert", SAMPLE, "--from", "1610113734119ms", "--to", "1610113734120ms",
             "-o", out, expect=0)
    doc, xs = load(out)
    times = [doc["otherData"]["ts_origin_ns"] + e["ts"] * 1000 for e in xs]
    assert times and all(1610113734119000000 <= t <= 1610113734120000000 for t in times)
    out2 = tmp_path / "until.json"
    run_weft("convert", SAMPLE, "-t", "chrome", "--from", "1610113734119ms", "--until",
             "1610113734120ms", "-o", out2, expect=0)
    assert out2.read_bytes() == out.read_bytes()


def test_stream_and_event_filters(tmp_path):
    out = tmp_path / "f.json"
    convert(SAMPLE, out, "--stream", "stream.1/*", "--event", "receiving*")
    doc, xs = load(out)
    assert xs and all(e["pid"] == 1 and e["name"] == "receiving message" for e in xs)
    meta = [e for e in doc["traceEvents"] if e["ph"] == "M"]
    assert {e["pid"] for e in meta} == {1}
