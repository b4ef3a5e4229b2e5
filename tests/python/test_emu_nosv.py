# SPDX-License-Identifier: MIT
"""The nOS-V model of the ovni emulation (src/emu/model_nosv.c,
model_nosv_hwc.c; docs/emulation.md section 3.4) on small traces written
here, for the rules the reference corpus (test_emu_paraver.py) does not
reach: task types of several processes in the .pcf, the rank channel of a
process without rank, hardware counters of two threads, and the refusals
(each message is the one the real ovniemu 1.14 prints for the same trace:
every trace below was also run through it while writing these tests).
"""

import json
import struct

import pytest

import weftlib
from test_emu_vocabulary import type_value
from weftlib import ovni_event, run_weft, write_ovni_stream

NOSV = {"ovni": "1.1.0", "nosv": "2.7.0"}


def begin(clock, cpu=0):
    """OHx: the thread begins on CPU index `cpu`."""
    return ovni_event("OHx", clock, struct.pack("<iiQ", cpu, -1, 0))


def ev(mcv, clock, *u32):
    """A normal event whose payload is the given u32 numbers."""
    return ovni_event(mcv, clock, struct.pack(f"<{len(u32)}I", *u32))


def task_type(clock, type_id, label):
    """VYc: a task type (jumbo: u32 id, the label and its NUL)."""
    return ovni_event("VYc", clock, jumbo=struct.pack("<I", type_id) + label.encode() + b"\0")


def counters(clock, *values):
    """VWC: the hardware counters (jumbo: i64 each)."""
    return ovni_event("VWC", clock, jumbo=struct.pack(f"<{len(values)}q", *values))


def convert(trace, out, expect):
    return run_weft("convert", trace, "-t", "paraver", "--emulate", "-o", out, expect=expect)


def records(path):
    """(row, time, type, value) of every record of a .prv."""
    out = []
    for line in path.read_text().splitlines()[1:]:
        f = line.split(":")
        out.append((int(f[4]), int(f[5]), int(f[6]), int(f[7])))
    return out


def pcf_values(path, ptype):
    """The (value, label) lines of a .pcf type, in order."""
    lines = path.read_text().splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith(f"0 {ptype:<10} "))
    values = []
    for line in lines[start + 2:]:
        if not line:
            break
        value, label = line.split(None, 1)
        values.append((int(value), label))
    return values


def pcf_type_names(path):
    """Paraver type -> its name, for every type of a .pcf."""
    lines = path.read_text().splitlines()
    heads = [lines[i + 1] for i, l in enumerate(lines) if l == "EVENT_TYPE"]
    return {int(h[2:13]): h[13:] for h in heads}


def test_task_types_of_every_process_in_the_pcf(tmp_path):
    """Type 11 lists the task types process by process in rank order, each
    process's in creation order, a label two processes share once; an empty
    label is "(unlabeled task type <id>)". While a body runs the thread
    shows "Task: In body", body id 1, the task id, its type value, the app
    id and rank + 1; a pause hides them and keeps the subsystem."""
    trace = tmp_path / "t"
    # rank 1 is process 20 (listed second), rank 0 process 10
    write_ovni_stream(trace, [begin(100), task_type(200, 1, "shared"), task_type(210, 7, ""),
                              ev("VTc", 300, 5, 7), ev("VTx", 400, 5, 0), ev("VTp", 500, 5, 0),
                              ev("VTr", 600, 5, 0), ev("VTe", 700, 5, 0),
                              ovni_event("OHe", 800)],
                      pid=20, require=NOSV, extra_meta={"rank": 1, "nranks": 2})
    write_ovni_stream(trace, [begin(100, 1), task_type(150, 3, "first"),
                              task_type(160, 1, "shared"), ovni_event("OHe", 900)],
                      pid=10, cpus=((0, 0), (1, 1)), require=NOSV,
                      extra_meta={"rank": 0, "nranks": 2})
    out = tmp_path / "out"
    convert(trace, out, 0)
    want = [(type_value(l), l) for l in ("first", "shared", "(unlabeled task type 7)")]
    assert pcf_values(out / "thread.pcf", 11) == want
    assert pcf_values(out / "cpu.pcf", 11) == want
    value = want[2][0]
    recs = records(out / "thread.prv")
    row = 2  # process 20 has rank 1: the second row
    at = lambda t: [(ty, v) for r, tm, ty, v in recs if r == row and tm == t - 100]
    assert at(400) == [(13, 11), (15, 1), (10, 5), (11, value), (12, 1), (14, 2)]
    assert at(500) == [(15, 0), (10, 0), (11, 0), (12, 0), (14, 0)]
    assert at(600) == [(15, 1), (10, 5), (11, value), (12, 1), (14, 2)]
    assert at(700) == [(13, 0), (15, 0), (10, 0), (11, 0), (12, 0), (14, 0)]


def test_no_rank_channel_without_a_rank(tmp_path):
    """A process without a rank leaves the rank channel (14) null."""
    trace = tmp_path / "t"
    write_ovni_stream(trace, [begin(100), task_type(200, 1, "a"), ev("VTc", 300, 1, 1),
                              ev("VTx", 400, 1, 0), ev("VTe", 500, 1, 0),
                              ovni_event("OHe", 600)], require=NOSV)
    out = tmp_path / "out"
    convert(trace, out, 0)
    for name in ("thread.prv", "cpu.prv"):
        recs = records(out / name)
        assert {v for _, _, ty, v in recs if ty == 14} == {0}
        assert {v for _, _, ty, v in recs if ty == 10} == {0, 1}


def test_hardware_counters(tmp_path):
    """Two threads name the same two counters: types 200 and 201 named by
    them; each VWC sets both, a repeated value and 0 written again."""
    trace = tmp_path / "t"
    hwc = {"0": {"name": "INS"}, "1": {"name": "CYC"}}
    write_ovni_stream(trace, [begin(100), counters(200, 0, 0), counters(300, 5, 7),
                              counters(400, 5, 7), ovni_event("OHe", 500)], require=NOSV)
    write_ovni_stream(trace, [begin(100, 1), counters(250, 9, 1), ovni_event("OHe", 600)],
                      tid=2, cpus=((0, 0), (1, 1)), require=NOSV)
    edit_meta(trace, lambda meta: meta.update(nosv={"hwc": hwc}))
    out = tmp_path / "out"
    convert(trace, out, 0)
    for name in ("thread.pcf", "cpu.pcf"):
        names = pcf_type_names(out / name)
        assert names[200] == "INS" and names[201] == "CYC"
    recs = records(out / "thread.prv")
    th1 = [(t, ty, v) for r, t, ty, v in recs if r == 1 and ty >= 200]
    assert th1 == [(0, 200, 0), (0, 201, 0), (100, 200, 0), (100, 201, 0), (200, 200, 5),
                   (200, 201, 7), (300, 200, 5), (300, 201, 7), (400, 200, 0), (400, 201, 0)]
    cpu1 = [(t, ty, v) for r, t, ty, v in records(out / "cpu.prv") if r == 2 and ty >= 200]
    assert (150, 200, 9) in cpu1 and (150, 201, 1) in cpu1


def one_thread(trace, events, edit=None):
    """One thread of process 1 on CPU 0 running `events` (makers of an
    event at a clock) between its OHx at 100 and its OHe after them;
    `edit` changes its stream.json."""
    evs = [begin(100)] + [e(1000 + 10 * i) for i, e in enumerate(events)]
    evs.append(ovni_event("OHe", 1000 + 10 * len(events)))
    write_ovni_stream(trace, evs, require=NOSV)
    if edit is not None:
        edit_meta(trace, edit)


def edit_meta(trace, fn):
    """Calls fn on the metadata of every stream of a trace."""
    for stream in sorted(trace.rglob("stream.json")):
        meta = json.loads(stream.read_text())
        fn(meta)
        stream.write_text(json.dumps(meta))


def E(mcv, *u32):
    return lambda clock: ev(mcv, clock, *u32)


def T(type_id, label):
    return lambda clock: task_type(clock, type_id, label)


def raw(mcv, payload=b"", jumbo=None):
    return lambda clock: ovni_event(mcv, clock, payload, jumbo)


def two_counters(meta):
    meta["nosv"] = {"hwc": {"0": {"name": "A"}, "1": {"name": "B"}}}


# name: (events, ovniemu's message, stream.json edit)
REFUSED = {
    "subsystem-left": ([E("VSh")], "thread 1 ended with 1 stacked nosv subsystems", None),
    "parallel-body-0": ([T(1, "a"), E("VTC", 1, 1), E("VTx", 1, 0)],
                        "the body_id must be > 0 for parallel task 1", None),
    "task-body-3": ([T(1, "a"), E("VTc", 1, 1), E("VTx", 1, 3)],
                    "the body_id must be 0 for non-parallel task 1", None),
    "task-id-0": ([T(1, "a"), E("VTc", 0, 1), E("VTx", 0, 0)], "task id cannot be 0", None),
    "unknown-task": ([E("VTx", 5, 0)], "cannot find task with id 5", None),
    "unknown-type": ([E("VTc", 1, 4)], "unknown type id 4", None),
    "type-twice": ([T(1, "a"), T(1, "b")], "a task type with id 1 already exists", None),
    "not-active": ([raw("OHp"), E("VSh"), raw("OHr")], "current thread 1 not active", None),
    "unknown-subsystem-event": ([E("VSz")], "unknown nOS-V subsystem event", None),
    "type-not-jumbo": ([E("VYc", 1, 0)], "expecting a jumbo event", None),
    "hwc-none": ([raw("VWC", jumbo=b"\0" * 8)], "got hwc event VWC but no counters enabled",
                 None),
    "hwc-size": ([raw("VWC", jumbo=b"\0" * 8)],
                 "unexpected hwc event with jumbo payload size 8 (expecting 16)", two_counters),
    "collision": ([T(1, "t533468"), T(2, "t772872")],
                  "collision occurred in task type labels: t533468 and t772872", None),
    "nest-over-running": ([T(1, "a"), E("VTc", 1, 1), E("VTc", 2, 1), E("VTx", 1, 0),
                           E("VTx", 2, 0)],
                          "cannot nest body(id=1,taskid=2) over body(id=1,taskid=1) which is "
                          "already running", None),
    "resume-running": ([T(1, "a"), E("VTc", 1, 1), E("VTx", 1, 0), E("VTr", 1, 0)],
                       "body(id=1,taskid=1) state must be Paused but is Running", None),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refused(tmp_path, name):
    """Each trace breaks one rule: weft refuses it naming the rule (with the
    stream file of the event), as ovniemu -l does."""
    events, rule, edit = REFUSED[name]
    trace = tmp_path / "t"
    one_thread(trace, events, edit)
    proc = convert(trace, tmp_path / "out", 2)
    errors = [l for l in proc.stderr.splitlines() if ": error: " in l]
    assert errors and rule in errors[0], proc.stderr
    assert "stream.obs" in errors[0] or "stream" not in errors[0], errors[0]


def test_counters_must_agree(tmp_path):
    """Threads that name counters name as many, with the same names."""
    trace = tmp_path / "t"
    write_ovni_stream(trace, [begin(100), ovni_event("OHe", 200)], require=NOSV)
    write_ovni_stream(trace, [begin(100), ovni_event("OHe", 200)], tid=2, require=NOSV)
    hwc = [{"0": {"name": "A"}, "1": {"name": "B"}}, {"0": {"name": "A"}}]
    which = iter(hwc)
    edit_meta(trace, lambda meta: meta.update(nosv={"hwc": next(which)}))
    proc = convert(trace, tmp_path / "out", 2)
    assert "defines 1 hardware counters, but emu already has 2" in proc.stderr


@pytest.mark.parametrize("case", ["emu-nosv-bad-double-execute", "emu-nosv-nested-tasks"])
def test_task_type_labels_only_when_the_emulation_ends(tmp_path, case):
    """ovniemu adds the task type labels to the .pcf at the end of the
    emulation: a trace refused at an event (kept with --allow-loss) has
    none, an accepted one has them; both .pcf byte for byte ovniemu's."""
    case_dir = weftlib.DATA_DIR / "ovni-emu" / case
    out = tmp_path / "out"
    refused = "bad" in case
    run_weft("convert", case_dir / "ovni", "-t", "paraver", "--emulate", "--allow-loss",
             "-o", out, expect=1 if refused else 0)
    for name in ("thread.pcf", "cpu.pcf"):
        assert (out / name).read_text() == (case_dir / "ovniemu" / name).read_text()
        assert (pcf_values(out / name, 11) == []) == refused
