# SPDX-License-Identifier: MIT
"""`weft convert TRACE -t otf2 -o DIR` (docs/convert-otf2.md): every
reference trace (ovni of every layout, Heph, ROSS, Pallas, OTF2) converted
to an OTF2 archive through libotf2; Debian's otf2-print and the OTF2
Python module (python3-otf2) read it without a warning; weft reads it back
and maps it to the source's events: the same events, times, interval ends,
codes, streams, payload bytes and decoded fields as `weft dump --json` of
the source (Pallas and OTF2 sources: their fields stand for their
payloads, which are their readers' packing of the record). The hierarchy comes back as properties; an existing DIR is
refused without --force and replaced only when it is an OTF2 archive."""

import collections
import json
import re
import subprocess

import pytest

from test_convert_pallas import (HEPH_TRACES, OVNI_TRACES, PALLAS_TRACES, ROSS_TRACES, Event,
                                 assert_same_events, dump_json, payload_hex,
                                 source_events, thread_events, trace_id)
from test_otf2_reader import make_trace
from weftlib import DATA_DIR, run_weft

OTF2_TRACES = sorted((DATA_DIR / "otf2").glob("*/traces.otf2"))
PYTHON = "/usr/bin/python3"
# An event in otf2-print's listing: record, location, timestamp.
EVENT_LINE = re.compile(r"[A-Z][A-Z_]+ +\d+ +\d+ ")


def convert(src, out, *args, expect=0):
    return run_weft("convert", src, "-t", "otf2", "-o", out, *args, expect=expect)


def otf2_print(anchor, *args):
    """otf2-print's output; it must exit 0 and warn about nothing."""
    proc = subprocess.run(["otf2-print", *args, str(anchor)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == "", proc.stderr
    return proc.stdout


def python_otf2_events(anchor):
    """(location name, event class, time) of every event, as python3-otf2 reads them."""
    script = ("import otf2, sys\n"
              "with otf2.reader.open(sys.argv[1]) as t:\n"
              "    for loc, ev in t.events:\n"
              "        print(loc.name, type(ev).__name__, ev.time)\n")
    proc = subprocess.run([PYTHON, "-W", "error", "-c", script, str(anchor)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.splitlines()


def stream_paths(path):
    """Converted stream path -> source stream path: the location's
    property weft.path, shown by `weft info` in the hierarchy."""
    out = run_weft("info", path, expect=0).stdout
    by_index = {}
    for m in re.finditer(r"\[\w+ \d+, stream (\d+)\].* properties\.weft\.path=(\"?)(.*?)\2$",
                         out, re.M):
        by_index[int(m.group(1))] = m.group(3)
    paths = {}
    for m in re.finditer(r"^  \[(\d+)\] (\S+)$", out, re.M):
        paths[m.group(2)] = by_index[int(m.group(1))]
    return paths


def weft_event_value(e):
    """A ParameterString of weft.event stands for the event its value names;
    an MPI record for itself."""
    f = e["fields"]
    if e["code"].startswith("MPI_"):
        return e["code"]
    assert e["code"] == "ParameterString", e
    assert record_field(f, "parameter") == "weft.event", e
    return record_field(f, "value")


# The fields of the records themselves: an Enter's or Leave's region, a
# ParameterString's parameter and value (and their refs).
RECORD_FIELDS = {"region", "region_ref", "parameter", "parameter_ref", "value", "value_ref"}


def record_first(pairs):
    """A JSON object of `weft dump --json` whose keys may come twice: the
    record's own field first, then an attribute of the same name (a source
    field such as ovni's "value" or an OTF2 ParameterString's "parameter"):
    the record's are kept under "record <name>"."""
    obj = {}
    for k, v in pairs:
        if k in obj and k in RECORD_FIELDS:
            obj["record " + k] = obj[k]
        obj[k] = v
    return obj


def record_field(f, name):
    return f.get("record " + name, f[name])


def own(stream, e, code, end=None):
    """The event as the source's: its attributes but the record's own fields
    (an Enter's or Leave's region, a ParameterString's parameter and value)
    and the converter's (weft.*)."""
    f = e["fields"]
    record = {"region", "region_ref"} if e["code"] in ("Enter", "Leave") else \
        set() if e["code"].startswith("MPI_") else RECORD_FIELDS
    fields = {k: v for k, v in f.items()
              if not k.startswith(("record ", "weft.")) and
              (k not in record or "record " + k in f)}
    return Event(stream, e["time"], end, code, payload_hex(f), fields)


def converted_events(path):
    paths = stream_paths(path)
    out = run_weft("dump", "--json", path, expect=0).stdout
    per_stream = collections.defaultdict(list)
    for line in out.splitlines():
        e = json.loads(line, object_pairs_hook=record_first)
        per_stream[e["stream"]].append(e)
    out = []
    for stream, events in per_stream.items():
        out += thread_events(paths[stream], events, weft_event_value, own)
    return out


# ---- Round trips ---------------------------------------------------------------------------

@pytest.mark.parametrize("src", OVNI_TRACES + HEPH_TRACES + ROSS_TRACES + PALLAS_TRACES +
                         OTF2_TRACES, ids=trace_id)
def test_round_trip(src, tmp_path):
    out = tmp_path / "out"
    convert(src, out)
    anchor = out / "traces.otf2"
    source = source_events(src)
    if src in PALLAS_TRACES + OTF2_TRACES:
        source = [e._replace(payload="") for e in source]
    if "streams: 0 " in run_weft("info", src, expect=0).stdout:
        # No stream, no location: weft reads the archive back (no event),
        # otf2-print refuses it (docs/convert-otf2.md).
        assert "streams: 0 " in run_weft("info", out, expect=0).stdout
        assert run_weft("dump", out, expect=0).stdout == ""
        proc = subprocess.run(["otf2-print", str(anchor)], capture_output=True, text=True)
        assert proc.returncode != 0 and "location definitions" in proc.stdout + proc.stderr
        return
    printed = otf2_print(anchor)
    records = [line for line in printed.splitlines()
               if EVENT_LINE.match(line)]
    assert len(records) == len(python_otf2_events(anchor))
    converted = converted_events(out)
    assert_same_events(source, converted)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_definitions_and_hierarchy(tmp_path):
    """Regions, attributes and the parameter have dense refs (otf2-print
    warns otherwise); the hierarchy is the source's, its paths, kinds and
    metadata properties; the source's metadata anchor properties."""
    src = DATA_DIR / "ovni" / "v3" / "bench-mix-small" / "ovni"
    out = tmp_path / "out"
    convert(src, out)
    defs = otf2_print(out / "traces.otf2", "-G")
    assert 'Class: "loom"' in defs and "Type: PROCESS" in defs
    assert re.search(r'LOCATION_PROPERTY .*"weft.path".*"loom.vm.bench/proc.2208/thread.2209"',
                     defs)
    info = run_weft("info", out, expect=0).stdout
    assert "properties.WEFT::SOURCE_FORMAT=ovni" in info
    assert "properties.weft.kind=loom" in info
    assert dump_json(out)[0]["time"] == min(e.time for e in source_events(src))


def test_mpi_records_stay_mpi_records(tmp_path):
    """An OTF2 source's MPI records are OTF2 MPI records again, with their
    peers, communicators (numbers and names), tags, lengths, requests and
    collective arguments; the messages are matched again (the same flows
    in Chrome JSON); spans stay regions; OTF2 records that OTF2 writes
    only from their own definitions (metrics, ...) are ParameterString
    events with their fields as attributes."""
    src = OTF2_TRACES[0]
    out = tmp_path / "out"
    convert(src, out)
    printed = otf2_print(out / "traces.otf2")
    assert re.search(r"^MPI_SEND .*Communicator: \"MPI_COMM_WORLD\"", printed, re.M)
    events = dump_json(out)
    source = dump_json(src)
    for code in ("MPI_Send", "MPI_Recv", "MPI_Isend", "MPI_Irecv", "MPI_IsendComplete",
                 "MPI_IrecvRequest", "MPI_CollectiveBegin", "MPI_CollectiveEnd"):
        mine = [(e["time"], e["fields"]) for e in events if e["code"] == code]
        theirs = [(e["time"], e["fields"]) for e in source if e["code"] == code]
        assert mine and len(mine) == len(theirs), code
        for (t1, f1), (t2, f2) in zip(sorted(mine, key=str), sorted(theirs, key=str)):
            assert t1 == t2 and all(f2.get(k) == v for k, v in f1.items()), (code, f1, f2)
    flows = []
    for trace in (src, out):
        chrome = tmp_path / f"{trace.name}.json"
        run_weft("convert", trace, "-t", "chrome", "-o", chrome, expect=0)
        flows.append(sum(1 for e in json.loads(chrome.read_text())["traceEvents"]
                         if e.get("ph") == "s"))
    assert flows[0] == flows[1] > 0
    assert any(e["code"] == "ParameterString" and e["fields"]["value"] == "Metric"
               for e in events)
    # the payload is the reader's packing of these fields: left out
    assert not any("weft.payload_size" in e["fields"] for e in events)
    before = json.loads(run_weft("profile", "--json", src, expect=0).stdout)
    after = json.loads(run_weft("profile", "--json", out, expect=0).stdout)
    assert [(r["region"], r["count"]) for r in after["regions"]] == \
        [(r["region"], r["count"]) for r in before["regions"]]


# ---- The output directory ------------------------------------------------------------------

NOSV = DATA_DIR / "ovni" / "v3" / "nosv-parallel-tasks" / "ovni"


def test_existing_output_needs_force(tmp_path):
    out = tmp_path / "out"
    convert(NOSV, out)
    before = (out / "traces.def").read_bytes()
    proc = convert(HEPH_TRACES[-1], out, expect=2)
    assert "use --force" in proc.stderr
    assert (out / "traces.def").read_bytes() == before
    convert(HEPH_TRACES[-1], out, "--force")
    assert (out / "traces.def").read_bytes() != before
    otf2_print(out / "traces.otf2")


def test_force_refuses_other_directories(tmp_path):
    """--force never removes a directory that is not an OTF2 archive."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    proc = convert(NOSV, out, "--force", expect=2)
    assert "not an OTF2 archive" in proc.stderr or "OTF2" in proc.stderr
    assert (out / "notes.txt").read_text() == "mine"


def test_long_location_is_written_in_chunks(tmp_path):
    """A location of more than 4 MiB of events: the writer keeps 4 chunks
    of 1 MiB at most and libotf2 flushes them as they fill (bounded
    memory); every event is there, in order, and otf2-print reads it."""
    anchor = make_trace(tmp_path / "src", "--ranks", 1, "--threads", 1, "--iterations", 20000)
    out = tmp_path / "out"
    convert(anchor, out)
    assert (out / "traces" / "0.evt").stat().st_size > 4 << 20
    printed = otf2_print(out / "traces.otf2")
    source = run_weft("dump", "-x", anchor, expect=0).stdout.splitlines()
    assert sum(1 for line in printed.splitlines()
               if EVENT_LINE.match(line)) == len(source)
    converted = run_weft("dump", out, expect=0).stdout.splitlines()
    assert len(converted) == len(source)
    assert converted[-1].split()[0] == run_weft("dump", anchor,
                                                expect=0).stdout.splitlines()[-1].split()[0]
