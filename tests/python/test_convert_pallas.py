# SPDX-License-Identifier: MIT
"""`weft convert TRACE -t pallas -o DIR` (docs/convert-pallas.md): every
reference trace (ovni of every layout, Heph, ROSS, Pallas) converted to
Pallas, read back with `weft dump --json` and mapped back to the source's
events: the same events, times, interval ends, codes, streams, payload
bytes and decoded fields as `weft dump --json` of the source. `weft info`,
`weft check` and `weft profile` work on every output. Filters, and the
output directory's safety: an existing DIR is refused without --force
(and left untouched), replaced with it only when it is a Pallas trace,
nothing is left behind when the output cannot be written."""

import collections
import json
import os
import re
import shutil
import struct

import pytest

from pallas_layout import nested_trace
from weftlib import DATA_DIR, run_weft

OVNI_TRACES = sorted(
    p for v in ("v1", "v2", "v3") for p in (DATA_DIR / "ovni" / v).glob("*/ovni")
    if p.is_dir())
HEPH_TRACES = sorted((DATA_DIR / "heph").glob("*.bin.log"))
ROSS_TRACES = sorted(p for p in (DATA_DIR / "ross").glob("*/np*") if p.is_dir())
PALLAS_TRACES = sorted(p for p in (DATA_DIR / "pallas").glob("*/trace") if p.is_dir())

# Fields of the records themselves and the converter's own attributes.
RECORD_FIELDS = {"region", "region_ref", "name", "name_ref"}

Event = collections.namedtuple("Event", "stream time end code payload fields")


def trace_id(path):
    """A short test id: the reference trace's directory or file name."""
    parts = path.parts
    return parts[-2] if parts[-1] in ("ovni", "trace") or parts[-1].startswith("np") \
        else parts[-1]


def convert(src, out, *args, expect=0):
    return run_weft("convert", src, "-t", "pallas", "-o", out, *args, expect=expect)


def dump_json(path, *args):
    out = run_weft("dump", "--json", *args, path, expect=0).stdout
    return [json.loads(line) for line in out.splitlines()]


def stream_paths(path):
    """Pallas stream path -> source stream path, from `weft info`: the
    archive's `weft.path` metadata (the parent node's path) and the
    thread's name (the stream node's name)."""
    out = run_weft("info", path, expect=0).stdout
    paths, parent = {}, None
    for line in out.splitlines():
        m = re.match(r"\s+(archive_\d+)\s+\[archive \d+\]", line)
        if m:
            archive = m.group(1)
            p = re.search(r' metadata\.weft\.path=("?)(.*?)\1$', line)
            parent = p.group(2) if p else None
            continue
        m = re.match(r'\s+(thread_\d+)\s+\[thread \d+, stream \d+\] name=("?)(.*?)\2$', line)
        if m:
            assert parent is not None, line
            name = m.group(3)
            paths[f"{archive}/{m.group(1)}"] = f"{parent}/{name}" if parent else name
    return paths


# ---- The source's events -------------------------------------------------------

def source_events(path, *args):
    """Every event of the source as an Event (payload as stored, in hex)."""
    return [Event(e["stream"], e["time"], e.get("end"), e["code"], e["payload"],
                  e["fields"]) for e in dump_json(path, *args)]


def pallas_label(fields):
    """An Enter/Leave's region or a Generic's name (Pallas sources)."""
    return fields.get("region", fields.get("name"))


def pallas_source_events(path, *args):
    """Pallas sources keep their records: the code, the region or name and
    the attributes stand for the payload (whose references are renumbered)."""
    return [Event(e["stream"], e["time"], None, e["code"], pallas_label(e["fields"]),
                  {k: v for k, v in e["fields"].items() if k not in RECORD_FIELDS})
            for e in dump_json(path, *args)]


# ---- The converted trace, mapped back ---------------------------------------------

def payload_hex(fields):
    """The stored bytes from weft.payload_size and the u64 chunks weft.payload.<i>."""
    size = fields.get("weft.payload_size", 0)
    data = b"".join(fields[f"weft.payload.{i}"].to_bytes(8, "little")
                    for i in range((size + 7) // 8) if f"weft.payload.{i}" in fields)
    return data[:size].hex()


def own_fields(fields):
    """The source's decoded fields among the attributes."""
    return {k: v for k, v in fields.items()
            if k not in RECORD_FIELDS and not k.startswith("weft.")}


def mapped(stream, e, code, end=None):
    f = e["fields"]
    return Event(stream, e["time"], end, code, payload_hex(f), own_fields(f))


def enter_code(enter):
    """An Enter stands for the event whose code is weft.code, or its region's name."""
    return enter["fields"].get("weft.code", enter["fields"]["region"])


def generic_name(e):
    """A Generic stands for the event named by its name."""
    assert e["code"] == "Generic", e
    return e["fields"]["name"]


def thread_events(stream, events, point_code=generic_name, event=mapped):
    """The source events of one converted thread (its events in stream
    order). Enter/Leave pair as Pallas nests them: a Leave with weft.code
    is a leave event of its own (its Enter an enter event); a Leave without
    it ends the interval its Enter started. Any other record is the event
    that point_code() names (an interval when it has weft.end). event()
    makes each Event (test_convert_otf2 uses these with its own two)."""
    stack, out = [], []
    for e in events:
        f = e["fields"]
        if e["code"] == "Enter":
            stack.append(e)
        elif e["code"] == "Leave":
            enter = stack.pop()
            if "weft.code" in f:
                out.append(event(stream, enter, enter_code(enter)))
                out.append(event(stream, e, f["weft.code"]))
            else:
                out.append(event(stream, enter, enter_code(enter), end=e["time"]))
        else:
            out.append(event(stream, e, point_code(e), end=f.get("weft.end")))
    out += [event(stream, enter, enter_code(enter)) for enter in stack]
    return out


def converted_events(path):
    """The events of a converted (non-Pallas) trace, mapped back."""
    paths = stream_paths(path)
    per_thread = collections.defaultdict(list)
    for e in dump_json(path):
        per_thread[e["stream"]].append(e)
    out = []
    for stream, events in per_thread.items():
        out += thread_events(paths[stream], events)
    return out


def converted_pallas_events(path):
    """The events of a trace converted from Pallas: records as they are."""
    paths = stream_paths(path)
    return [Event(paths[e["stream"]], e["time"], None, e["code"], pallas_label(e["fields"]),
                  {k: v for k, v in e["fields"].items() if k not in RECORD_FIELDS})
            for e in dump_json(path)]


def sort_key(e):
    return (e.stream, e.time, e.end if e.end is not None else -1, e.code, e.payload,
            json.dumps(e.fields, sort_keys=True))


def assert_same_events(source, converted):
    """The same events (stream, time, end, code, payload); the converted
    fields are the source's, less those Pallas has no type for (arrays,
    bytes: they stay in the payload)."""
    assert len(converted) == len(source)
    src = sorted(source, key=sort_key)
    out = sorted(converted, key=lambda e: sort_key(e)[:5])
    assert [sort_key(e)[:5] for e in out] == [sort_key(e)[:5] for e in src]
    for a, b in zip(src, out):
        for k, v in b.fields.items():
            assert a.fields.get(k) == v, (a, b)
        for k in a.fields.keys() - b.fields.keys():
            assert isinstance(a.fields[k], (str, list)), (k, a, b)


def archive_thread_ids(out):
    """{archive id: [thread ids]} from `weft info`'s hierarchy."""
    ids, archive = {}, None
    for line in run_weft("info", out, expect=0).stdout.splitlines():
        m = re.match(r"\s+archive_(\d+)\s+\[archive", line)
        if m:
            archive = ids.setdefault(int(m.group(1)), [])
        m = re.match(r"\s+thread_(\d+)\s+\[thread", line)
        if m:
            archive.append(int(m.group(1)))
    return ids


def assert_contiguous_ids(out):
    """Pallas 0.20 finds a thread at threads[id - first id] of its archive,
    an array of the archive's thread count: each archive's ids must follow
    each other (issue 13 item 6); they are unique in the trace too."""
    ids = archive_thread_ids(out)
    for archive, threads in ids.items():
        assert sorted(threads) == list(range(min(threads), min(threads) + len(threads))) \
            if threads else True, (archive, threads)
    every = [t for threads in ids.values() for t in threads]
    assert len(every) == len(set(every))


def check_commands(out):
    """info, check and profile read the converted trace; check finds
    nothing that Pallas 0.20 cannot read, but a trace without threads (a
    source without events), which its pallas_print cannot read."""
    assert_contiguous_ids(out)
    if any(archive_thread_ids(out).values()):
        run_weft("check", out, expect=0)
    else:
        assert "no thread: Pallas 0.20" in run_weft("check", out, expect=1).stdout
    return json.loads(run_weft("profile", "--json", out, expect=0).stdout)


def assert_times_in_order(out):
    """Each converted thread's timestamps never go back."""
    last = {}
    for e in dump_json(out):
        assert e["time"] >= last.get(e["stream"], 0), e
        last[e["stream"]] = e["time"]


def assert_nothing_left(parent, keep):
    """No temporary or moved-aside directory next to the output."""
    left = sorted(p.name for p in parent.iterdir() if p.name not in keep)
    assert left == []


# ---- Round trips -----------------------------------------------------------------------

@pytest.mark.parametrize("src", OVNI_TRACES + HEPH_TRACES + ROSS_TRACES, ids=trace_id)
def test_round_trip(src, tmp_path):
    out = tmp_path / "out"
    convert(src, out)
    assert (out / "main.pallas").is_file()
    assert_same_events(source_events(src), converted_events(out))
    assert_times_in_order(out)
    check_commands(out)
    assert_nothing_left(tmp_path, {"out"})


@pytest.mark.parametrize("src", PALLAS_TRACES, ids=trace_id)
def test_round_trip_pallas(src, tmp_path):
    out = tmp_path / "out"
    convert(src, out)
    assert_same_events(pallas_source_events(src), converted_pallas_events(out))
    before = json.loads(run_weft("profile", "--json", src, expect=0).stdout)
    after = check_commands(out)
    assert after["regions"] == before["regions"]


def test_ovni_spans_become_regions(tmp_path):
    """nosv task bodies, API calls and the running state are Enter/Leave
    of regions named after the span, with the MCV as weft.code."""
    src = DATA_DIR / "ovni" / "v3" / "nosv-parallel-tasks" / "ovni"
    out = tmp_path / "out"
    convert(src, out)
    events = dump_json(out)
    enters = collections.Counter((e["fields"]["region"], e["fields"]["weft.code"])
                                 for e in events if e["code"] == "Enter")
    source = collections.Counter(e["code"] for e in dump_json(src))
    assert enters[("nosv task", "VTx")] == source["VTx"] > 0
    assert sum(n for (_, code), n in enters.items() if code == "OHx") == source["OHx"]
    leaves = collections.Counter(e["fields"]["weft.code"] for e in events
                                 if e["code"] == "Leave")
    assert leaves["VTe"] == source["VTe"]
    generics = collections.Counter(e["fields"]["name"] for e in events
                                   if e["code"] == "Generic")
    assert generics["VTC"] == source["VTC"] > 0
    regions = {r["region"]: r for r in check_commands(out)["regions"]}
    assert regions["nosv task"]["count"] == source["VTx"]


def test_interleaved_leave_is_generic(tmp_path):
    """A leave that does not close the innermost open span (the ovni 1.4.1
    trace has one) is a Generic event; nothing is lost."""
    src = DATA_DIR / "ovni" / "v1" / "1.4.1" / "ovni"
    out = tmp_path / "out"
    proc = convert(src, out)
    assert "did not close the innermost open span" in proc.stderr
    generic_leaves = [e for e in dump_json(out) if e["code"] == "Generic"
                      and e["fields"]["name"] in ("OHp", "OHe")]
    assert generic_leaves
    assert_same_events(source_events(src), converted_events(out))


def test_thread_ids_follow_each_other_in_each_archive(tmp_path):
    """Threads 1001 and 1003 of proc.1000 have the selected events, 1002
    none: their ids were their places among the selected streams (0 and
    2), which Pallas's reader indexes past its array of 2 threads."""
    src = DATA_DIR / "ovni" / "v2" / "1.10.0" / "ovni"
    out = tmp_path / "out"
    convert(src, out, "--event", "O[FH][[c]")
    ids = archive_thread_ids(out)
    assert [len(t) for t in ids.values() if t] == [2]
    assert_contiguous_ids(out)
    assert_same_events(source_events(src, "--event", "O[FH][[c]"), converted_events(out))


def test_spans_deeper_than_pallas_reads_are_flattened(tmp_path):
    """bench-mix-small leaves hundreds of running spans open (their leaves
    do not close the innermost span): past 98 open blocks, which Pallas
    0.20 could not read (its writer refuses the 128th), Enters are Generic
    events, with a warning; nothing is lost (test_round_trip)."""
    src = DATA_DIR / "ovni" / "v3" / "bench-mix-small" / "ovni"
    out = tmp_path / "out"
    proc = convert(src, out)
    assert re.search(r"warning: \d+ block\(s\) would nest deeper than 98, which "
                     r"Pallas 0.20 cannot read: written as Generic events", proc.stderr)
    assert max(e["depth"] for e in dump_json(out)) == 98  # inside the 98th block


def test_pallas_source_deeper_than_pallas_reads(tmp_path):
    """A Pallas source of 100 nested calls (written here from scratch, as
    Pallas's writer would, which refuses only the 128th): the 99th and
    100th Enters and their Leaves become the same records without their
    blocks, with a warning; every event keeps its time, and its depth and
    parent down to the 98th call (the events below it are in that call),
    and the output is one Pallas reads (check is clean)."""
    src = nested_trace(tmp_path / "src", 100)
    out = tmp_path / "out"
    proc = convert(src, out)
    assert "warning: 2 block(s) would nest deeper than 98, which Pallas 0.20 cannot " \
        "read: written as plain events (the record without its block)" in proc.stderr
    def same(e, flat=False):  # references are renumbered
        depth, parent = (min(e["depth"], 98), min(e["parent"], 97)) if flat \
            else (e["depth"], e["parent"])
        return (e["stream"], e["time"], e["code"], e["fields"]["region"], depth, parent)
    assert [same(e) for e in dump_json(out)] == [same(e, True) for e in dump_json(src)]
    run_weft("check", out, expect=0)


def test_heph_intervals_keep_start_and_end(tmp_path):
    """Each Heph interval is an Enter at its start and a Leave at its end,
    nested as its call tree, with non-decreasing times per thread."""
    src = DATA_DIR / "heph" / "heph_sample.bin.log"
    out = tmp_path / "out"
    convert(src, out)
    events = dump_json(out)
    assert_times_in_order(out)
    intervals = {(e.stream, e.time, e.end, e.code) for e in converted_events(out)}
    assert intervals == {(e.stream, e.time, e.end, e.code) for e in source_events(src)}
    assert all(e["code"] in ("Enter", "Leave") for e in events)
    regions = {r["region"]: r for r in check_commands(out)["regions"]}
    assert regions["Scheduling processes"]["total_ns"] == 8200


def test_heph_stored_order_input(tmp_path):
    """Forcing the Heph format (stored order kept) gives the same trace."""
    src = DATA_DIR / "heph" / "heph_sample.bin.log"
    convert(src, tmp_path / "a")
    convert(src, tmp_path / "b", "--format", "heph")
    assert dump_json(tmp_path / "a") == dump_json(tmp_path / "b")


# ---- Crafted Heph traces: nesting edge cases and attribute limits ----------------------

def heph_event(stream, counter, start, end, desc, attrs=b""):
    """One Heph event packet (docs/heph-writer.md), substream 0."""
    d = desc.encode()
    body = struct.pack(">IIQQQH", stream, counter, 0, start, end, len(d)) + d + attrs
    return struct.pack(">II", 0xC1FC1FB7, 8 + len(body)) + body


def heph_u64(name, value):
    return struct.pack(">H", len(name)) + name.encode() + b"\x01" + struct.pack(">Q", value)


def heph_str(name, value):
    v = value.encode()
    return struct.pack(">H", len(name)) + name.encode() + b"\x04" + struct.pack(">H", len(v)) + v


def write_heph(path, events):
    path.write_bytes(b"".join(heph_event(1, i, *e) for i, e in enumerate(events)))
    return path


def test_heph_nesting_edges(tmp_path):
    """Back-to-back siblings, a zero-length child at its parent's end and
    an interval overlapping its sibling without nesting (a Generic with
    weft.end): every interval keeps its start and end."""
    src = write_heph(tmp_path / "t.bin.log", [
        (0, 100, "root"), (10, 20, "a"), (20, 30, "b"), (30, 30, "b-end"),
        (25, 40, "overlap"), (100, 100, "at-end"), (200, 210, "later")])
    out = tmp_path / "out"
    proc = convert(src, out)
    assert "1 interval(s) overlap" in proc.stderr
    assert_same_events(source_events(src), converted_events(out))
    generic = [e for e in dump_json(out) if e["code"] == "Generic"]
    assert [(e["fields"]["name"], e["time"], e["fields"]["weft.end"]) for e in generic] == \
        [("overlap", 25, 40)]
    assert_times_in_order(out)
    check_commands(out)


def test_attribute_limits(tmp_path):
    """Fields beyond Pallas's 127 attribute values and string values over
    4096 bytes are left out (counted in a note); the payload is kept as
    far as the list holds it, with its full size."""
    many = b"".join(heph_u64(f"f{i}", i) for i in range(200))
    long = heph_str("text", "x" * 5000)
    src = write_heph(tmp_path / "t.bin.log", [(0, 10, "many", many), (20, 30, "long", long),
                                                (40, 50, "small", heph_u64("n", 7))])
    out = tmp_path / "out"
    proc = convert(src, out)
    assert "string value(s) not kept" in proc.stderr
    assert "did not fit in Pallas attribute lists" in proc.stderr
    source = {e.code: e for e in source_events(src)}
    for e in converted_events(out):
        s = source[e.code]
        assert (e.time, e.end) == (s.time, s.end)
        assert s.payload.startswith(e.payload)
        assert all(s.fields[k] == v for k, v in e.fields.items())
    enters = {e["fields"]["region"]: e["fields"] for e in dump_json(out) if e["code"] == "Enter"}
    assert enters["long"]["weft.payload_size"] == len(bytes.fromhex(source["long"].payload))
    assert "text" not in enters["long"]
    assert enters["small"]["n"] == 7 and payload_hex(enters["small"]) == source["small"].payload
    assert len(enters["many"]) <= 127 + 2
    check_commands(out)


# ---- Filters --------------------------------------------------------------------------------

def test_filters_match_dump(tmp_path):
    """--stream, --event and the time window select what dump selects."""
    src = DATA_DIR / "ovni" / "v3" / "mpi-func-4procs" / "ovni"
    events = source_events(src)
    times = sorted(e.time for e in events)
    lo, hi = times[len(times) // 4], times[3 * len(times) // 4]
    cases = [
        (["--stream", "*/proc.*/thread.*"], ["--stream", "*/proc.*/thread.*"]),
        (["--event", "MU?"], ["--mcv", "MU?"]),
        (["--from", str(lo), "--until", str(hi)], ["--from", str(lo), "--to", str(hi)]),
    ]
    streams = sorted({e.stream for e in events})
    cases.append((["--stream", streams[0]], ["--stream", streams[0]]))
    for i, (conv_args, dump_args) in enumerate(cases):
        out = tmp_path / f"out{i}"
        convert(src, out, *conv_args)
        expected = source_events(src, *dump_args)
        assert expected
        assert_same_events(expected, converted_events(out))


def test_empty_selection(tmp_path):
    """No event selected: a valid trace whose threads are empty."""
    src = DATA_DIR / "ovni" / "v3" / "nosv-parallel-tasks" / "ovni"
    out = tmp_path / "out"
    proc = convert(src, out, "--event", "nothing-matches", expect=1)
    assert "no event matches --event 'nothing-matches'" in proc.stderr
    assert dump_json(out) == []
    run_weft("info", out, expect=0)


# ---- The output directory --------------------------------------------------------------------

NOSV = DATA_DIR / "ovni" / "v3" / "nosv-parallel-tasks" / "ovni"
HEPH = DATA_DIR / "heph" / "heph_sample.bin.log"


def snapshot(path):
    """Relative path -> bytes of every file under path."""
    return {str(p.relative_to(path)): p.read_bytes()
            for p in sorted(path.rglob("*")) if p.is_file()}


def test_existing_output_needs_force(tmp_path):
    out = tmp_path / "out"
    convert(NOSV, out)
    before = snapshot(out)
    proc = convert(HEPH, out, expect=2)
    assert "use --force" in proc.stderr
    assert snapshot(out) == before
    assert_nothing_left(tmp_path, {"out"})


def test_force_replaces_a_pallas_trace(tmp_path):
    out = tmp_path / "out"
    convert(NOSV, out)
    convert(HEPH, out, "--force")
    assert_same_events(source_events(HEPH), converted_events(out))
    assert "metadata.weft.source.format=heph" in run_weft("info", out, expect=0).stdout
    assert_nothing_left(tmp_path, {"out"})


def test_force_refuses_other_directories(tmp_path):
    """--force never removes a directory that is not a Pallas trace."""
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("keep me\n")
    proc = convert(NOSV, out, "--force", expect=2)
    assert "not a Pallas trace" in proc.stderr
    assert (out / "notes.txt").read_text() == "keep me\n"
    f = tmp_path / "file"
    f.write_text("x")
    convert(NOSV, f, "--force", expect=2)
    assert f.read_text() == "x"
    assert_nothing_left(tmp_path, {"mine", "file"})


def test_force_on_empty_directory(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    convert(NOSV, out, expect=2)
    convert(NOSV, out, "--force")
    assert (out / "main.pallas").is_file()


def test_unwritable_output(tmp_path):
    """A parent that is a file, or a read-only directory: exit 2, nothing left."""
    f = tmp_path / "file"
    f.write_text("x")
    proc = convert(NOSV, f / "out", expect=2)
    assert re.search("cannot (use|create)", proc.stderr)
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        if os.geteuid() != 0:   # root writes anywhere
            convert(NOSV, ro / "out", expect=2)
            assert list(ro.iterdir()) == []
    finally:
        ro.chmod(0o755)
    assert_nothing_left(tmp_path, {"file", "ro"})


def test_trailing_slash_and_copy(tmp_path):
    """DIR/ is DIR; the trace stays readable where it is moved."""
    out = tmp_path / "out"
    convert(NOSV, str(out) + "/")
    shutil.move(str(out), str(tmp_path / "moved"))
    assert len(dump_json(tmp_path / "moved")) == len(dump_json(NOSV))


def test_profile_and_replay_agree_on_unclosed_spans(tmp_path):
    """bench-mix-small ends with its threads' running spans open (OHx
    without OHp): the writer closes their blocks at the last timestamp, and
    the replay of `weft profile` closes the open calls there too."""
    src = DATA_DIR / "ovni" / "v3" / "bench-mix-small" / "ovni"
    out = tmp_path / "mix.pallas"
    convert(src, out)
    durations = json.loads(run_weft("profile", "--json", out, expect=0).stdout)
    replay = json.loads(run_weft("profile", "--replay", "--json", out, expect=0).stdout)
    assert durations["source"] == "durations" and replay["source"] == "replay"
    assert durations["regions"] and durations["regions"] == replay["regions"]
