# SPDX-License-Identifier: MIT
"""`weft convert -t perfetto`: the protobuf trace of reference traces of
every format (ovni nosv-parallel-tasks and ovni-mark-4procs, Heph, ROSS,
Pallas), read back independently of the writer:

- `protoc --decode_raw` (Debian's protobuf-compiler) proves the wire
  format and shows the expected field structure;
- a small protobuf decoder below (varints, length-delimited fields, the
  few Perfetto messages by field number) checks the packets, the tracks
  (a process track per parent node, a thread track per stream named from
  the metadata, uuids unique, parents declared first, (pid, tid) pairs
  unique and within int32), the interning rule (every iid used is defined
  in the same or an earlier packet since the last clear of the
  incremental state), and the slices replayed in time order as Perfetto's
  importer does (balanced and nested per track);
- the content against `weft dump --json` of the same trace: ovni
  enter/leave pairs of the signature table become slices of the right
  times, marks become slices named with their labels and counters named
  with their titles; Heph events become slices with their attributes as
  annotations and their call-tree depth; ROSS samples become counter
  values; Pallas Enter/Leave become slices named after their regions."""

import collections
import json
import math
import shutil
import struct
import subprocess

import pytest

from weftlib import DATA_DIR, OVNI_DATA, SIGNATURES_TSV, run_weft

TRACES = {
    "ovni-nosv": OVNI_DATA / "v3" / "nosv-parallel-tasks" / "ovni",
    "ovni-mark": OVNI_DATA / "v3" / "ovni-mark-4procs" / "ovni",
    "heph": DATA_DIR / "heph" / "heph_sample.bin.log",
    "ross": DATA_DIR / "ross" / "phold-gvt-pekplp" / "np2",
    "pallas": DATA_DIR / "pallas" / "wb_enterleave_f3_n1000_t2_logical" / "trace",
}

# More traces for the checks of the tracks alone (numbers, names).
MORE_TRACES = {
    "ovni-mix": OVNI_DATA / "v3" / "bench-mix-small" / "ovni",
    "ross-evtrace": DATA_DIR / "ross" / "phold-evtrace-full" / "np1",
    "pallas-4": DATA_DIR / "pallas" / "wb_generic_f2_n2000_t4_logical" / "trace",
}

INT32 = (-(1 << 31), (1 << 31) - 1)


# ---- A protobuf reader ----------------------------------------------------------

class Malformed(AssertionError):
    pass


def read_varint(buf, pos):
    """(value, next position); the varint must be minimal."""
    value, shift = 0, 0
    for i in range(10):
        if pos >= len(buf):
            raise Malformed("varint past the end")
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            if byte == 0 and i > 0:
                raise Malformed("varint not minimal")
            return value, pos
        shift += 7
    raise Malformed("varint longer than 10 bytes")


def read_fields(buf):
    """[(field number, wire type, value)]: int for varints, 8 bytes for
    fixed64, bytes for length-delimited fields."""
    out, pos = [], 0
    while pos < len(buf):
        tag, pos = read_varint(buf, pos)
        num, wire = tag >> 3, tag & 7
        if num == 0:
            raise Malformed("field number 0")
        if wire == 0:
            value, pos = read_varint(buf, pos)
        elif wire == 1:
            if pos + 8 > len(buf):
                raise Malformed("fixed64 past the end")
            value, pos = buf[pos:pos + 8], pos + 8
        elif wire == 2:
            size, pos = read_varint(buf, pos)
            if pos + size > len(buf):
                raise Malformed("length past the end")
            value, pos = buf[pos:pos + size], pos + size
        else:
            raise Malformed(f"unexpected wire type {wire}")
        out.append((num, wire, value))
    return out


def signed(v):
    """A varint as the int64 it encodes."""
    return v - (1 << 64) if v >= 1 << 63 else v


def as_double(raw):
    return struct.unpack("<d", raw)[0]


# ---- Perfetto's messages -----------------------------------------------------------

Track = collections.namedtuple("Track", "uuid parent kind name pid tid")
Event = collections.namedtuple("Event",
                               "time index type uuid name category args counter flows")


class Slice:
    def __init__(self, event, depth, parent):
        self.track = event.uuid
        self.begin = event.time
        self.end = None
        self.name = event.name
        self.category = event.category
        self.args = event.args
        self.end_args = {}
        self.depth = depth
        self.parent = parent


class PerfettoTrace:
    """Everything decoded from one .pftrace, with the checks that need no
    knowledge of the input."""

    def __init__(self, data):
        self.tracks = {}        # uuid -> Track, in declaration order
        self.events = []        # Event, in file order
        self.packets = 0
        self.clears = 0
        self.definitions = collections.Counter()  # (table, string) -> times
        self.sequence = None
        self.defs = None        # table -> {iid: string}; None before a clear
        for num, wire, body in read_fields(data):
            if (num, wire) != (1, 2):
                raise Malformed("top-level field other than Trace.packet")
            self.packet(body)
        self.slices, self.instants, self.counters = self.replay()

    # -- packets

    def packet(self, body):
        f = {}
        for num, wire, value in read_fields(body):
            if num in f:
                raise Malformed(f"TracePacket field {num} repeated")
            f[num] = value
        known = {8, 10, 11, 12, 13, 60, 87}
        if set(f) - known:
            raise Malformed(f"unknown TracePacket fields {set(f) - known}")
        if self.sequence is None:
            self.sequence = f.get(10)
        assert f.get(10) is not None and f[10] == self.sequence, "one sequence id"
        assert bool(f.get(87)) == (self.packets == 0), "first_packet_on_sequence"
        flags = f.get(13, 0)
        if flags & 1:
            self.defs = {1: {}, 2: {}, 3: {}}
            self.clears += 1
        if 12 in f:
            assert self.defs is not None, "interned data before the state was cleared"
            assert flags & 2, "interned data without SEQ_NEEDS_INCREMENTAL_STATE"
            self.interned(f[12])
        assert (60 in f) != (11 in f), "one track descriptor or one track event"
        if 60 in f:
            self.track(f[60])
        else:
            self.event(f[11], f.get(8), flags)
        self.packets += 1

    def interned(self, body):
        for table, wire, entry in read_fields(body):
            assert table in (1, 2, 3) and wire == 2, "InternedData field"
            e = {n: v for n, _, v in read_fields(entry)}
            assert set(e) == {1, 2} and e[1] != 0, "interned entry {iid, name}"
            name = e[2].decode("utf-8", errors="surrogateescape")
            old = self.defs[table].get(e[1])
            assert old in (None, name), "iid redefined with another string"
            self.defs[table][e[1]] = name
            self.definitions[(table, name)] += 1

    def lookup(self, table, iid):
        assert self.defs is not None and iid in self.defs[table], (
            f"iid {iid} of table {table} used before its definition")
        return self.defs[table][iid]

    def track(self, body):
        f = {}
        for num, wire, value in read_fields(body):
            f[num] = value
        assert set(f) <= {1, 2, 3, 4, 5, 8}, f"TrackDescriptor fields {set(f)}"
        uuid, parent = f[1], f.get(5)
        assert uuid not in self.tracks, "track uuids are unique"
        assert parent is None or parent in self.tracks, "parent declared first"
        pid = tid = None
        name = f[2].decode() if 2 in f else None
        if 3 in f:
            kind = "process"
            p = {n: v for n, _, v in read_fields(f[3])}
            pid, name = signed(p[1]), p[6].decode()
        elif 4 in f:
            kind = "thread"
            t = {n: v for n, _, v in read_fields(f[4])}
            pid, tid, name = signed(t[1]), signed(t[2]), t[5].decode()
        elif 8 in f:
            kind = "counter"
            assert f[8] == b"", "empty CounterDescriptor"
        else:
            kind = "named"
        self.tracks[uuid] = Track(uuid, parent, kind, name, pid, tid)

    def annotation(self, body, named=True):
        """(name, value) of a DebugAnnotation (arrays as lists)."""
        name, values, array = None, [], []
        for num, wire, v in read_fields(body):
            if num == 1 and named:
                name = self.lookup(3, v)
            elif num == 2:
                values.append(bool(v))
            elif num == 3:
                values.append(v)
            elif num == 4:
                values.append(signed(v))
            elif num == 5:
                values.append(as_double(v))
            elif num == 6:
                values.append(v.decode("utf-8", errors="surrogateescape"))
            elif num == 12:
                array.append(self.annotation(v, named=False)[1])
            else:
                raise Malformed(f"DebugAnnotation field {num}")
        assert len(values) + (1 if array else 0) <= 1, "one value per annotation"
        assert not named or name is not None, "annotation without a name"
        return name, (array if array or not values else values[0])

    def event(self, body, time, flags):
        f = collections.defaultdict(list)
        for num, wire, value in read_fields(body):
            f[num].append(value)
        assert set(f) <= {3, 4, 9, 10, 11, 44, 47, 48}, f"TrackEvent fields {set(f)}"
        uses_iids = bool(f[3] or f[4] or f[10])
        assert not uses_iids or flags & 2, "interned data used without flag 2"
        assert time is not None, "track event without a timestamp"
        kind = f[9][0]
        uuid = f[11][0]
        assert uuid in self.tracks, "event on an undeclared track"
        name = self.lookup(2, f[10][0]) if f[10] else None
        category = self.lookup(1, f[3][0]) if f[3] else None
        assert len(f[3]) <= 1, "one category"
        args = dict(self.annotation(a) for a in f[4])
        counter = as_double(f[44][0]) if f[44] else None
        assert (kind == 4) == (self.tracks[uuid].kind == "counter") == (counter is not None)
        assert kind in (1, 2, 3, 4)
        if kind in (1, 3):
            assert name is not None, "slice or instant without a name"
        # message ends: flow_ids start a flow, terminating_flow_ids end it
        flows = [("out", struct.unpack("<Q", v)[0]) for v in f[47]] + \
                [("in", struct.unpack("<Q", v)[0]) for v in f[48]]
        assert not flows or kind == 3, "flows on instants only"
        self.events.append(Event(time, len(self.events), kind, uuid, name, category,
                                 args, counter, flows))

    # -- slices, as Perfetto's importer sees them (sorted by time)

    def replay(self):
        stacks = collections.defaultdict(list)
        slices, instants, counters = [], [], []
        for e in sorted(self.events, key=lambda e: (e.time, e.index)):
            stack = stacks[e.uuid]
            if e.type == 1:
                s = Slice(e, len(stack), stack[-1] if stack else None)
                stack.append(s)
                slices.append(s)
            elif e.type == 2:
                assert stack, f"slice end at {e.time} without an open slice"
                s = stack.pop()
                s.end = e.time
                s.end_args = e.args
            elif e.type == 3:
                instants.append(e)
            else:
                counters.append(e)
        assert not any(stacks.values()), "slices never closed"
        for s in slices:
            assert s.end >= s.begin
            if s.parent is not None:
                assert s.parent.begin <= s.begin and s.end <= s.parent.end, "nesting"
        return slices, instants, counters

    # -- helpers of the tests

    def thread_of(self, uuid):
        """The thread track a track belongs to (itself for threads)."""
        t = self.tracks[uuid]
        while t.kind != "thread":
            t = self.tracks[t.parent]
        return t

    def stream_of(self, uuid):
        """The stream path of a track: its process's name / its thread's."""
        t = self.thread_of(uuid)
        return f"{self.tracks[t.parent].name}/{t.name}"


# ---- Running weft ---------------------------------------------------------------------

_cache = {}


def convert(name, tmp_path_factory):
    """The .pftrace of reference trace `name` (converted once)."""
    if name not in _cache:
        out = tmp_path_factory.mktemp("perfetto") / f"{name}.pftrace"
        # ovni: the generic mapping (the emulated one: test_emu_perfetto.py)
        raw = ["--raw"] if name.startswith("ovni") else []
        proc = run_weft("convert", {**TRACES, **MORE_TRACES}[name], "-t", "perfetto",
                        *raw, "-o", out)
        assert proc.returncode == 0, proc.stderr
        _cache[name] = out
    return _cache[name]


def decoded(name, tmp_path_factory):
    path = convert(name, tmp_path_factory)
    key = ("decoded", name)
    if key not in _cache:
        _cache[key] = PerfettoTrace(path.read_bytes())
    return _cache[key]


def dump(name):
    key = ("dump", name)
    if key not in _cache:
        out = run_weft("dump", "--json", TRACES[name], expect=0).stdout
        _cache[key] = [json.loads(line) for line in out.splitlines()]
    return _cache[key]


# ---- Every format ------------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(TRACES))
def test_protoc_decode_raw(name, tmp_path_factory):
    """protoc parses the file; its top level is Trace.packet only, each
    packet on sequence 1, the first one marked first_packet_on_sequence,
    track descriptors (60) and track events (11) present."""
    if shutil.which("protoc") is None:
        pytest.skip("protoc (protobuf-compiler) is not installed")
    path = convert(name, tmp_path_factory)
    with open(path, "rb") as f:
        proc = subprocess.run(["protoc", "--decode_raw"], stdin=f, capture_output=True,
                              text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    top = [line for line in lines if not line.startswith(" ")]
    assert set(top) == {"1 {", "}"}
    packets = top.count("1 {")
    assert packets == decoded(name, tmp_path_factory).packets
    assert lines.count("  10: 1") == packets
    assert lines[:3] == ["1 {", "  10: 1", "  87: 1"]
    assert lines.count("  60 {") > 0 and lines.count("  11 {") > 0
    assert "  87: 1" not in lines[3:]


@pytest.mark.parametrize("name", sorted(TRACES))
def test_tracks(name, tmp_path_factory):
    """A thread track per stream with events, named after the stream's
    node, under a process track named after the parent node; channel and
    counter tracks under threads; (pid, tid) unique and within int32."""
    t = decoded(name, tmp_path_factory)
    tracks = list(t.tracks.values())
    threads = [x for x in tracks if x.kind == "thread"]
    for x in tracks:
        parent = t.tracks.get(x.parent)
        if x.kind == "process":
            assert x.parent is None
        elif x.kind == "thread":
            assert parent.kind == "process" and x.pid == parent.pid
        else:
            assert parent.kind == "thread" and x.name
    streams = {e["stream"] for e in dump(name)}
    assert sorted(t.stream_of(x.uuid) for x in threads) == sorted(streams)
    pairs = [(x.pid, x.tid) for x in threads]
    assert len(set(pairs)) == len(pairs)
    pids = [x.pid for x in tracks if x.kind == "process"]
    assert len(set(pids)) == len(pids)
    for pid, tid in pairs:
        assert INT32[0] <= pid <= INT32[1] and INT32[0] <= tid <= INT32[1]


@pytest.mark.parametrize("name", sorted({**TRACES, **MORE_TRACES}))
def test_numbers(name, tmp_path_factory):
    """Every pid and tid is one Perfetto's importer keeps apart: within
    int32 and never 0 (pid 0 / tid 0 is its idle thread, "swapper", which
    takes the thread's name away); pids unique, (pid, tid) unique."""
    t = decoded(name, tmp_path_factory)
    tracks = [x for x in t.tracks.values() if x.kind in ("process", "thread")]
    assert tracks
    for x in tracks:
        assert 1 <= x.pid <= INT32[1], x
        assert x.kind == "process" or 1 <= x.tid <= INT32[1], x
    pids = [x.pid for x in tracks if x.kind == "process"]
    pairs = [(x.pid, x.tid) for x in tracks if x.kind == "thread"]
    assert len(set(pids)) == len(pids) and len(set(pairs)) == len(pairs)


@pytest.mark.parametrize("name", sorted(TRACES))
def test_interning(name, tmp_path_factory):
    """Interned once: every string is defined once per table (the tables
    of these traces stay far below the bound: one clear only)."""
    t = decoded(name, tmp_path_factory)
    assert t.clears == (1 if t.definitions else 0)
    assert all(n == 1 for n in t.definitions.values())
    names = {e.name for e in t.events if e.name is not None}
    assert names == {s for (table, s) in t.definitions if table == 2}


# ---- ovni ----------------------------------------------------------------------------------

def enter_leave_pairs():
    """MCV of an enter -> MCV of its leave, from the signature table."""
    pairs = {}
    for line in SIGNATURES_TSV.read_text().splitlines():
        cols = line.split("\t")
        if line.startswith("#") or len(cols) < 8 or cols[0] == "model":
            continue
        if cols[6] == "enter" and cols[7]:
            pairs[cols[3]] = cols[7]
    return pairs


def expected_ovni_spans(events):
    """(stream, begin, end, enter MCV) of every enter/leave pair of the
    signature table, matched per stream and pair, innermost first."""
    pairs = enter_leave_pairs()
    leaves = {v: k for k, v in pairs.items()}
    open_spans = collections.defaultdict(list)
    spans = []
    for e in events:
        code = e["code"]
        if code in pairs:
            open_spans[(e["stream"], code)].append(e["time"])
        elif code in leaves and open_spans[(e["stream"], leaves[code])]:
            begin = open_spans[(e["stream"], leaves[code])].pop()
            spans.append((e["stream"], begin, e["time"], leaves[code]))
    return spans


def test_ovni_enter_leave_slices(tmp_path_factory):
    """Every enter/leave pair of the dump is a slice of the same times on
    its stream's tracks, named after its model and MCV; the enter's
    fields are its annotations."""
    t = decoded("ovni-nosv", tmp_path_factory)
    events = dump("ovni-nosv")
    spans = expected_ovni_spans(events)
    assert len(spans) > 50
    got = collections.Counter((t.stream_of(s.track), s.begin, s.end, s.name.split()[-1])
                              for s in t.slices)
    missing = [s for s in spans if got[s] == 0]
    assert not missing, missing[:5]
    fields = {(e["stream"], e["time"], e["code"]): e["fields"] for e in events}
    for s in t.slices:
        key = (t.stream_of(s.track), s.begin, s.name.split()[-1])
        if key in fields:
            assert {k: v for k, v in s.args.items() if k not in ("clipped", "unclosed")} \
                == fields[key]


def test_ovni_running_and_instants(tmp_path_factory):
    """Threads get a "running" track from OHx/OHr to OHp/OHe; the other
    events are instants with their fields as annotations."""
    t = decoded("ovni-nosv", tmp_path_factory)
    running = [s for s in t.slices if t.tracks[s.track].name.endswith("running")]
    executes = [e for e in dump("ovni-nosv") if e["code"] in ("OHx", "OHr")]
    assert len(running) == len(executes) > 0
    assert sorted((t.stream_of(s.track), s.begin) for s in running) == \
        sorted((e["stream"], e["time"]) for e in executes)
    assert t.instants
    by_key = {(e["stream"], e["time"], e["code"]): e["fields"] for e in dump("ovni-nosv")}
    for i in t.instants:
        code = i.name.split()[-1]
        key = (t.stream_of(i.uuid), i.time, code)
        assert key in by_key, key
        assert i.args == by_key[key]


def test_ovni_tasks(tmp_path_factory):
    """Task bodies: from VTx (or VTr) to VTp (or VTe) of the same task id, a
    slice on the thread's "nosv VT" track with the task id annotated."""
    t = decoded("ovni-nosv", tmp_path_factory)
    opened, expected = {}, []
    for e in dump("ovni-nosv"):
        key = (e["stream"], e["fields"].get("taskid"))
        if e["code"] in ("VTx", "VTr"):
            opened[key] = e["time"]
        elif e["code"] in ("VTp", "VTe"):
            expected.append((e["stream"], opened.pop(key), e["time"], key[1]))
    assert len(expected) >= 100 and not opened
    got = sorted((t.stream_of(s.track), s.begin, s.end, s.args["taskid"]) for s in t.slices
                 if t.tracks[s.track].name.endswith("nosv VT"))
    assert got == sorted(expected)


def mark_metadata():
    """type -> (title, stack, {value: label}) from the threads' metadata."""
    marks = {}
    for meta in TRACES["ovni-mark"].glob("*/*/*/stream.json"):
        for key, desc in json.loads(meta.read_text())["ovni"].get("mark", {}).items():
            labels = {int(k): v for k, v in desc.get("labels", {}).items()}
            marks.setdefault(int(key), (desc["title"], desc["chan_type"] == "stack", labels))
    return marks


def test_ovni_marks(tmp_path_factory):
    """Stack marks (OM[ / OM]) are slices named with their labels on a
    track named with the mark's title; single marks (OM=) are counter
    values on a counter track named with the title."""
    t = decoded("ovni-mark", tmp_path_factory)
    marks = mark_metadata()
    events = dump("ovni-mark")
    expected_slices, opened = [], collections.defaultdict(list)
    expected_counters = []
    for e in events:
        f = e["fields"]
        title, stack, labels = marks[f["type"]] if e["code"].startswith("OM") else (0, 0, 0)
        if e["code"] == "OM[":
            opened[(e["stream"], f["type"])].append(e)
        elif e["code"] == "OM]":
            begin = opened[(e["stream"], f["type"])].pop()
            expected_slices.append((e["stream"], title, begin["time"], e["time"],
                                    labels.get(begin["fields"]["value"])))
        elif e["code"] == "OM=":
            expected_counters.append((e["stream"], title, e["time"], float(f["value"])))
    got_slices = sorted((t.stream_of(s.track), t.tracks[s.track].name.split()[-1], s.begin,
                         s.end, s.name) for s in t.slices
                        if t.tracks[s.track].kind == "named"
                        and not t.tracks[s.track].name.endswith("running"))
    assert got_slices == sorted(expected_slices)
    got_counters = sorted((t.stream_of(c.uuid), t.tracks[c.uuid].name.split()[-1], c.time,
                           c.counter)
                          for c in t.counters)
    assert got_counters == sorted(expected_counters)


# ---- Heph -----------------------------------------------------------------------------------

def frozen(value):
    """A value of the dump or of an annotation, comparable and hashable
    (dicts and lists as tuples; 789.0 and 789 are the same number)."""
    if isinstance(value, dict):
        return tuple(sorted((k, frozen(v)) for k, v in value.items()))
    if isinstance(value, list):
        return tuple(frozen(v) for v in value)
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**63:
        return int(value)
    return value


def test_heph_slices(tmp_path_factory):
    """Every Heph event is a slice [time, end] on its (stream, substream)
    track, named after its description, its attributes as annotations
    (every attribute type: integers at their limits, floats, strings,
    arrays), at its call-tree depth."""
    t = decoded("heph", tmp_path_factory)
    expected = sorted((e["stream"], e["time"], e["end"], e["code"], e["depth"],
                       frozen(e["fields"])) for e in dump("heph"))
    got = sorted((t.stream_of(s.track), s.begin, s.end, s.name, s.depth, frozen(s.args))
                 for s in t.slices)
    assert got == expected
    assert not t.instants and not t.counters


# ---- ROSS -------------------------------------------------------------------------------------

def test_ross_counters(tmp_path_factory):
    """Numeric fields of the samples are values of counter tracks named
    after the fields, under the sample's stream, at the sample's time (the
    same number, f32 fields widened). The view leaves out the fields that
    identify the record (pe_id, kp_id, lp_id); every measure is there."""
    t = decoded("ross", tmp_path_factory)
    expected = collections.defaultdict(list)
    for e in dump("ross"):
        for field, value in e["fields"].items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                expected[(e["stream"], field)].append((e["time"], value))
    got = collections.defaultdict(list)
    for c in t.counters:
        got[(t.stream_of(c.uuid), t.tracks[c.uuid].name.split()[-1])].append(
            (c.time, c.counter))
    assert set(got) <= set(expected)
    for key in expected:
        if key[1] in ("events_processed", "efficiency", "total_rollbacks"):
            assert key in got, key
    for key, mine in got.items():
        values = expected[key]
        assert len(mine) == len(values), key
        for (time, want), (gtime, value) in zip(sorted(values), sorted(mine)):
            assert gtime == time
            assert math.isclose(value, want, rel_tol=1e-6, abs_tol=1e-30), (key, time)


def test_ross_flow_ends_on_both_lps(tmp_path):
    """--time virtual: each event-trace record is a message from its source
    LP's track at the virtual send time to its destination LP's track at
    the virtual receive time (the receiving end was on the source LP)."""
    trace = DATA_DIR / "ross" / "phold-evtrace-full" / "np1"
    out = tmp_path / "v.pftrace"
    run_weft("convert", trace, "-t", "perfetto", "-o", out, "--time", "virtual",
             "--vt-unit", "1ms", expect=0)
    t = PerfettoTrace(out.read_bytes())
    ends = {"out": {}, "in": {}}
    for e in t.instants:
        for end, fid in e.flows:
            assert fid not in ends[end]
            ends[end][fid] = (t.stream_of(e.uuid), e.time)
    assert ends["out"].keys() == ends["in"].keys()
    got = collections.Counter((ends["out"][i], ends["in"][i]) for i in ends["out"])
    records = [json.loads(line) for line in
               run_weft("dump", "--json", trace, expect=0).stdout.splitlines()]
    # the stored float32 widened, times 1e6 (1 ms per unit), nearest ns
    ns = lambda v: int(struct.unpack("<f", struct.pack("<f", v))[0] * 1e6 + 0.5)  # noqa: E731
    want = collections.Counter(
        ((f"evtrace/lp.{r['fields']['source_lp']}", ns(r["fields"]["virtual_send_time"])),
         (f"evtrace/lp.{r['fields']['destination_lp']}", ns(r["fields"]["virtual_recv_time"])))
        for r in records)
    assert sum(a[0] != b[0] for a, b in want.elements()) > 100
    assert got == want


# ---- Pallas -----------------------------------------------------------------------------------

def test_pallas_enter_leave(tmp_path_factory):
    """Enter/Leave pairs are slices named after their regions, at the
    times of the dump, nested as the calls are."""
    t = decoded("pallas", tmp_path_factory)
    opened, expected = collections.defaultdict(list), []
    for e in dump("pallas"):
        if e["code"] == "Enter":
            opened[e["stream"]].append(e)
        elif e["code"] == "Leave":
            begin = opened[e["stream"]].pop()
            assert begin["fields"]["region"] == e["fields"]["region"]
            expected.append((e["stream"], begin["time"], e["time"], e["fields"]["region"],
                             len(opened[e["stream"]])))
    got = sorted((t.stream_of(s.track), s.begin, s.end, s.name, s.depth) for s in t.slices)
    assert got == sorted(expected)
    assert len(expected) > 1000
    others = [e for e in dump("pallas") if e["code"] not in ("Enter", "Leave")]
    assert len(t.instants) == len(others)


# ---- Flags --------------------------------------------------------------------------------

def test_time_window_flags(tmp_path):
    """With a time window, spans crossing its edges are cut there and carry
    a bool annotation "clipped" (on the begin, or on the end)."""
    events = dump("ovni-nosv")
    first, last = events[0]["time"], events[-1]["time"]
    lo, hi = first + (last - first) // 3, first + 2 * (last - first) // 3
    out = tmp_path / "window.pftrace"
    proc = run_weft("convert", TRACES["ovni-nosv"], "-t", "perfetto", "--raw", "--from", lo,
                    "--to", hi, "-o", out)
    assert proc.returncode == 0, proc.stderr
    t = PerfettoTrace(out.read_bytes())
    assert t.slices
    for s in t.slices:
        assert lo <= s.begin <= s.end <= hi
        if s.args.get("clipped"):
            assert s.begin == lo
        if s.end_args.get("clipped"):
            assert s.end == hi
    assert any(s.args.get("clipped") for s in t.slices)
    assert any(s.end_args.get("clipped") for s in t.slices)
    assert all(isinstance(v, bool) for s in t.slices for k, v in
               list(s.args.items()) + list(s.end_args.items()) if k in ("clipped", "unclosed"))
