# SPDX-License-Identifier: MIT
"""`weft convert -t paraver`: OUT.prv, OUT.pcf and OUT.row of reference
traces of every format (ovni, Heph, ROSS, Pallas), parsed back here.

- the files agree with each other: records sorted by time, on rows the
  header declares, every event type named in the .pcf with every value of
  a labelled type, every state named, the .row names as many tasks and
  threads as the header;
- they agree with `weft dump --json` of the same trace: one row per
  stream (named by its path), time 0 at the earliest event (the type-1
  record carries it), the duration, and the number of event records the
  mapping of docs/paraver.md makes of the events;
- type numbers are the documented hashes of the names, so a name has the
  same type whatever else the trace holds;
- the ovni reference trace `nosv-parallel-tasks` against ovniemu's own
  `thread.prv` (tests/data/ovni/v3/nosv-parallel-tasks/ovniemu-golden):
  the same transitions at the same times where both show the same thing;
- an ovni trace larger than the writer's reorder window (written by
  bench/bench_emit): the direct path gives the same agreement, with the
  zero-padded header.

Skipped while `weft convert` reports the paraver format unsupported."""

import collections
import json
import subprocess
from pathlib import Path

import pytest

from weftlib import DATA_DIR, OVNI_DATA, WEFT, run_weft

NOSV = OVNI_DATA / "v3" / "nosv-parallel-tasks"
GOLDEN = NOSV / "ovniemu-golden"

TRACES = {
    "ovni-nosv": NOSV / "ovni",
    "ovni-mpi": OVNI_DATA / "v3" / "mpi-func-4procs" / "ovni",
    "ovni-mark": OVNI_DATA / "v3" / "ovni-mark-4procs" / "ovni",
    # instants without a category (OB., OU[): UBSan found a memcpy from NULL
    "ovni-sort-sorted": OVNI_DATA / "v3" / "ovni-sort-sorted" / "ovni",
    "ovni-sort-unsorted": OVNI_DATA / "v3" / "ovni-sort-unsorted" / "ovni",
    "heph": DATA_DIR / "heph" / "heph_sample.bin.log",
    "ross-gvt": DATA_DIR / "ross" / "phold-gvt-pekplp" / "np2" / "ross-stats-gvt.bin",
    "ross-evtrace": DATA_DIR / "ross" / "phold-evtrace-full" / "np1" / "ross-stats-evtrace.bin",
    "pallas": DATA_DIR / "pallas" / "wb_enterleave_f3_n1000_t2_logical" / "trace",
}
FORMAT = {"ovni-nosv": "ovni", "ovni-mpi": "ovni", "ovni-mark": "ovni", "heph": "heph",
          "ovni-sort-sorted": "ovni", "ovni-sort-unsorted": "ovni",
          "ross-gvt": "ross", "ross-evtrace": "ross", "pallas": "pallas"}

TYPE_START, TYPE_OWN = 1, 2
RANGES = {"span": 100000000, "instant": 200000000, "counter": 300000000}


# ---- Running and parsing -------------------------------------------------------

def convert(trace, out_base, *args):
    """Runs the conversion (it must succeed)."""
    proc = run_weft("convert", trace, "-t", "paraver", "--raw", "-o", out_base, *args)
    assert proc.returncode == 0, proc.stderr
    return proc


Prv = collections.namedtuple("Prv", "duration tasks records")
Rec = collections.namedtuple("Rec", "kind task thread time end type value")


def parse_header(line):
    """`#Paraver (date):<dur>_ns:0:1:<ntasks>(<threads>:<node>,...)`."""
    assert line.startswith("#Paraver (")
    rest = line[line.index("):") + 2:]
    duration, nodes, apps, app = rest.split(":", 3)
    assert duration.endswith("_ns") and nodes == "0" and apps == "1", line
    ntasks, threads = app.split("(", 1)
    assert threads.endswith(")")
    tasks = []
    for t in threads[:-1].split(","):
        count, node = t.split(":")
        assert node == "1"
        tasks.append(int(count))
    assert len(tasks) == int(ntasks)
    return int(duration[:-3]), tasks


def parse_prv(path):
    lines = path.read_text().splitlines()
    duration, tasks = parse_header(lines[0])
    records = []
    for line in lines[1:]:
        f = line.split(":")
        assert f[1] == "0" and f[2] == "1", line  # no CPU, one application
        if f[0] == "1":
            assert len(f) == 8, line
            records.append(Rec(1, int(f[3]), int(f[4]), int(f[5]), int(f[6]), None, int(f[7])))
        else:
            assert f[0] == "2" and len(f) == 8, line
            records.append(Rec(2, int(f[3]), int(f[4]), int(f[5]), None, int(f[6]), int(f[7])))
    return Prv(duration, tasks, records)


def parse_pcf(path):
    """(states {n: label}, types {type: (label, {value: label})})."""
    states, types = {}, {}
    section, current = None, None
    for line in path.read_text().splitlines():
        if line in ("STATES", "STATES_COLOR", "EVENT_TYPE", "VALUES",
                    "DEFAULT_OPTIONS", "DEFAULT_SEMANTIC"):
            section = line
            continue
        if not line.strip():
            continue
        if section == "STATES":
            n, label = line.split(None, 1)
            states[int(n)] = label
        elif section == "EVENT_TYPE":
            color, t, label = line.split(None, 2)
            assert color == "0"
            current = int(t)
            assert current not in types, f"type {current} twice"
            types[current] = (label, {})
        elif section == "VALUES":
            v, label = line.split(None, 1)
            types[current][1][int(v)] = label
    return states, types


def parse_row(path):
    """{level: [names]}."""
    levels, lines = {}, path.read_text().splitlines()
    i = 0
    while i < len(lines):
        if lines[i].startswith("LEVEL "):
            _, level, size_kw, n = lines[i].split()
            assert size_kw == "SIZE"
            levels[level] = lines[i + 1:i + 1 + int(n)]
            i += 1 + int(n)
        else:
            assert not lines[i].strip(), lines[i]
            i += 1
    return levels


def paraver(trace, tmp_path, name="out", *args):
    base = tmp_path / name
    convert(trace, base, *args)
    prv = parse_prv(base.with_suffix(".prv"))
    states, types = parse_pcf(base.with_suffix(".pcf"))
    return prv, states, types, parse_row(base.with_suffix(".row"))


def dump_json(trace):
    out = run_weft("dump", "--json", trace, expect=0).stdout
    return [json.loads(line) for line in out.splitlines()]


def row_names(prv, rows):
    """(task, thread) -> .row name: rows are listed task by task."""
    names, i = {}, 0
    for task, count in enumerate(prv.tasks, 1):
        for thread in range(1, count + 1):
            names[(task, thread)] = rows["THREAD"][i]
            i += 1
    return names


def fnv1a(text):
    h = 14695981039346656037
    for b in text.encode():
        h = ((h ^ b) * 1099511628211) % 2**64
    return h


# ---- The files agree with each other -----------------------------------------------

def check_consistent(prv, states, types, rows):
    assert len(rows["TASK"]) == len(prv.tasks)
    assert len(rows["THREAD"]) == sum(prv.tasks)
    assert rows["CPU"] == []
    last = 0
    for r in prv.records:
        assert r.time >= last, f"record out of order: {r}"
        last = r.time
        assert 1 <= r.task <= len(prv.tasks) and 1 <= r.thread <= prv.tasks[r.task - 1], r
        assert r.time <= prv.duration
        if r.kind == 1:
            assert r.time <= r.end <= prv.duration and r.value in states, r
            continue
        assert r.type in types, f"type {r.type} not in the .pcf"
        values = types[r.type][1]
        if values and r.value != 0:
            assert r.value in values, f"value {r.value} of type {r.type} not labelled"
    assert prv.records[0].type == TYPE_START and prv.records[0].time == 0


@pytest.mark.parametrize("name", sorted(TRACES))
def test_files_are_consistent(name, tmp_path):
    check_consistent(*paraver(TRACES[name], tmp_path))


# ---- The files agree with `weft dump --json` -------------------------------------------

# Fields of ROSS samples that identify the sample or give its times: not
# counters (docs/convert.md, the view layer).
ROSS_SAMPLE_SKIP = {"virtual_time", "real_time", "pe_id", "kp_id", "lp_id", "stats_type",
                    "model_size", "model_data_size"}


def numeric_fields(event):
    """Measuring numeric scalar fields (booleans included: they are 0 or 1)."""
    return sum(1 for k, v in event["fields"].items()
               if isinstance(v, (int, float)) and k not in ROSS_SAMPLE_SKIP)


def expected_event_records(fmt, events):
    """Event records (type 1 aside) the mapping makes of the events:
    ovni: one per event, except the thread state events (state records);
    Heph: a begin and an end per interval; Pallas: one per event; ROSS:
    an instant per event record, a counter value per numeric field of a
    sample."""
    if fmt == "ovni":
        return sum(1 for e in events if e["code"] not in ("OHx", "OHr", "OHp", "OHe"))
    if fmt == "heph":
        return 2 * len(events)
    if fmt == "pallas":
        return len(events)
    return sum(1 if e["code"] == "EVENT" else numeric_fields(e) for e in events)


@pytest.mark.parametrize("name", sorted(TRACES))
def test_matches_dump(name, tmp_path):
    prv, states, types, rows = paraver(TRACES[name], tmp_path)
    events = dump_json(TRACES[name])
    start = min(e["time"] for e in events)
    end = max(max(e["time"], e.get("end", e["time"])) for e in events)
    assert prv.records[0].value == start
    assert str(start) in types[TYPE_START][0]
    assert prv.duration == end - start
    assert sorted(rows["THREAD"]) == sorted({e["stream"] for e in events})
    got = sum(1 for r in prv.records if r.kind == 2 and r.type != TYPE_START)
    assert got == expected_event_records(FORMAT[name], events)
    # every record on the row of a stream the dump has events on
    names = row_names(prv, rows)
    assert {names[(r.task, r.thread)] for r in prv.records} <= {e["stream"] for e in events}


def test_running_state_of_ovni_threads(tmp_path):
    prv, states, types, rows = paraver(TRACES["ovni-mpi"], tmp_path)
    events = dump_json(TRACES["ovni-mpi"])
    names = row_names(prv, rows)
    running = [s for s, label in states.items() if label == "Running"]
    assert len(running) == 1 and states[0] == "Not running"
    for stream in {e["stream"] for e in events}:
        begins = [e["time"] - prv.records[0].value for e in events
                  if e["stream"] == stream and e["code"] in ("OHx", "OHr")]
        ends = [e["time"] - prv.records[0].value for e in events
                if e["stream"] == stream and e["code"] in ("OHp", "OHe")]
        spans = [(r.time, r.end) for r in prv.records if r.kind == 1
                 and r.value == running[0] and names[(r.task, r.thread)] == stream]
        assert spans == list(zip(begins, ends))


# ---- The direct path on a trace larger than its window -----------------------------------

def bench_emit():
    """bench/bench_emit next to the weft under test, or None."""
    tool = Path(WEFT).resolve().parent / "bench" / "bench_emit"
    return tool if tool.is_file() else None


def test_direct_path_on_a_larger_ovni_trace(tmp_path):
    """An ovni trace of 660 000 events (nOS-V tasks with API calls, two
    threads) is more than the writer's reorder window: the .prv is written
    as the records come, the running spans (as long as the threads) with
    their ends completed in place, the header rewritten at the end. The
    files agree with each other and with the dump, as for every trace."""
    tool = bench_emit()
    if tool is None:
        pytest.skip("bench/bench_emit is not built")
    trace = tmp_path / "trace"
    subprocess.run([str(tool), "--write-trace", str(trace), "--bytes", "8M", "--threads", "2",
                    "--spans"], check=True, capture_output=True, timeout=120)
    prv, states, types, rows = paraver(trace, tmp_path)
    check_consistent(prv, states, types, rows)
    events = dump_json(trace)
    assert len(events) > 600000
    start = min(e["time"] for e in events)
    assert prv.records[0].value == start
    assert prv.duration == max(e["time"] for e in events) - start
    got = sum(1 for r in prv.records if r.kind == 2 and r.type != TYPE_START)
    assert got == expected_event_records("ovni", events)
    names = row_names(prv, rows)
    for stream in {e["stream"] for e in events}:
        ends = [e["time"] - start for e in events
                if e["stream"] == stream and e["code"] in ("OHx", "OHe")]
        spans = [(r.time, r.end) for r in prv.records
                 if r.kind == 1 and names[(r.task, r.thread)] == stream]
        assert spans == [tuple(ends)]
    header = (tmp_path / "out.prv").open().readline()
    assert "):%020d_ns:0:1:1(00002:1)" % prv.duration in header


# ---- Type numbers -----------------------------------------------------------------------

def labels_to_types(types):
    return {label: t for t, (label, _) in types.items()}


def test_types_are_documented_hashes(tmp_path):
    prv, states, types, rows = paraver(TRACES["ovni-mpi"], tmp_path)
    channels = {label: t for t, (label, values) in types.items()
                if RANGES["span"] <= t < RANGES["instant"]}
    assert channels
    for label, t in channels.items():
        assert t == RANGES["span"] + fnv1a(label) % 10**8, label
        for value, name in types[t][1].items():
            assert value == 1 + fnv1a(name) % (2**31 - 2), name


def test_types_do_not_depend_on_the_rest_of_the_trace(tmp_path):
    _, _, whole, _ = paraver(TRACES["ovni-mpi"], tmp_path, "whole")
    _, _, part, _ = paraver(TRACES["ovni-mpi"], tmp_path, "part", "--stream", "*proc.2195*")
    common = set(labels_to_types(whole)) & set(labels_to_types(part))
    assert len(common) > 3
    for label in common:
        if labels_to_types(whole)[label] != TYPE_START:
            assert labels_to_types(whole)[label] == labels_to_types(part)[label], label


def test_time_window(tmp_path):
    events = dump_json(TRACES["ovni-nosv"])
    start = min(e["time"] for e in events)
    frm, until = start + 200000, start + 900000
    prv, states, types, rows = paraver(TRACES["ovni-nosv"], tmp_path, "win",
                                       "--from", str(frm), "--to", str(until))
    check_consistent(prv, states, types, rows)
    assert prv.records[0].value >= frm
    assert prv.records[0].value + prv.duration <= until


# ---- Against ovniemu ------------------------------------------------------------------------

def transitions(pairs):
    """[(time, value)] -> the changes: the last value of each time, kept
    when it differs from the one before."""
    last_at = {}
    for t, v in pairs:
        last_at[t] = v
    out, prev = [], object()
    for t in sorted(last_at):
        if last_at[t] != prev:
            out.append((t, last_at[t]))
            prev = last_at[t]
    return out


def golden():
    prv = parse_prv(GOLDEN / "thread.prv")
    states, types = parse_pcf(GOLDEN / "thread.pcf")
    return prv, types


def golden_type(prv, t):
    return [(r.time, r.value) for r in prv.records if r.kind == 2 and r.type == t]


def weft_channels(prv, types, labels):
    """The innermost open span over the channels `labels` -> label of its
    channel, at each time (None: none open)."""
    by_type = {t: label for t, (label, _) in types.items() if label in labels}
    assert set(by_type.values()) == set(labels)
    open_order, out = [], []
    for r in prv.records:
        if r.kind != 2 or r.type not in by_type:
            continue
        if r.type in open_order:
            open_order.remove(r.type)
        if r.value != 0:
            open_order.append(r.type)
        out.append((r.time, by_type[open_order[-1]] if open_order else None))
    return transitions(out)


def test_ovniemu_same_transitions(tmp_path):
    ours, states, types, rows = paraver(TRACES["ovni-nosv"], tmp_path)
    gold, gold_types = golden()
    assert ours.duration == gold.duration
    assert ours.tasks == gold.tasks == [1]
    assert rows["THREAD"][0].endswith("thread.2184") and "2184" in (GOLDEN / "thread.row").read_text()

    # type 13, the nOS-V subsystem: "API: Submit" and "Task: In body" are
    # weft's channels "nosv VA" and "nosv VT" (innermost first)
    names = gold_types[13][1]
    subsystem = {0: None}
    subsystem.update({v: {"API: Submit": "nosv VA", "Task: In body": "nosv VT"}[names[v]]
                      for v in {v for _, v in golden_type(gold, 13) if v != 0}})
    expected = transitions((t, subsystem[v]) for t, v in golden_type(gold, 13))
    assert expected[0] == (0, None)
    assert weft_channels(ours, types, ["nosv VA", "nosv VT"]) == expected[1:]

    # type 15, the task body id: set and cleared when weft's "nosv VT" spans open and close
    vt = labels_to_types(types)["nosv VT"]
    body = transitions((t, v != 0) for t, v in golden_type(gold, 15))
    ours_vt = transitions((r.time, r.value != 0) for r in ours.records
                          if r.kind == 2 and r.type == vt)
    assert body[0] == (0, False) and ours_vt == body[1:]

    # type 4, the thread state: Running while weft's state record says Running
    running = [s for s, label in states.items() if label == "Running"]
    state = transitions((t, v == 1) for t, v in golden_type(gold, 4))
    ours_state = [(r.time, r.end) for r in ours.records if r.kind == 1 and r.value in running]
    assert state == [(0, True), (gold.duration, False)]
    assert ours_state == [(0, gold.duration)]

    # type 10, the task id: what weft's VTC instant (task creation) carries
    task_ids = {v for _, v in golden_type(gold, 10) if v != 0}
    vtc = [t for t, (label, _) in types.items() if label.startswith("nosv VTC")]
    assert len(vtc) == 1
    assert {r.value for r in ours.records if r.type == vtc[0]} == task_ids
