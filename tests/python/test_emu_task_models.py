# SPDX-License-Identifier: MIT
"""The Nanos6 and OpenMP models of the emulation (docs/emulation.md,
sections 3.5 and 3.7) on small traces written here, for the rules that
ovniemu's corpus (test_emu_paraver.py) does not reach.

Every expectation below is what the real ovniemu 1.14.0 (`ovniemu -l`)
wrote or said for the same trace when these tests were written: the
records of thread.prv, the .pcf values of task types from two processes,
the warnings, and the rule of each refusal.
"""

import itertools
import struct

import pytest

from weftlib import ovni_event, run_weft, write_ovni_stream

NANOS6 = {"ovni": "1.1.0", "nanos6": "1.1.0"}
OPENMP = {"ovni": "1.1.0", "openmp": "1.2.1"}


def u32(*values):
    return struct.pack(f"<{len(values)}I", *values)


def ohx(cpu, tid):
    return struct.pack("<iiQ", cpu, tid, 0)


def type_event(type_id, label):
    """The jumbo data of 6Yc / POc: the type id, the label and its NUL."""
    return u32(type_id) + label.encode() + b"\0"


def events(*items):
    """ovni events 10 ns apart from clock 1000: (mcv, payload) or
    (mcv, b"", jumbo data)."""
    out = []
    for i, item in enumerate(items):
        payload = item[1] if len(item) > 1 else b""
        jumbo = item[2] if len(item) > 2 else None
        out.append(ovni_event(item[0], 1000 + 10 * i, payload, jumbo=jumbo))
    return out


def write(trace, items, require, pid=10, **kw):
    write_ovni_stream(trace, events(("OHx", ohx(0, pid)), *items, ("OHe",)), pid=pid,
                      require=require, cpus=((0, 0), (1, 1)), **kw)


def convert(trace, out, expect):
    return run_weft("convert", trace, "-t", "paraver", "--emulate", "-o", out, expect=expect)


def thread_records(out):
    """thread.prv of row 1 as {time: "type=value ..."} in file order."""
    lines = (out / "thread.prv").read_text().splitlines()[1:]
    return {int(t): " ".join(f"{l.split(':')[6]}={l.split(':')[7]}" for l in g)
            for t, g in itertools.groupby(lines, key=lambda l: l.split(":")[5])}


def nesting_items(create_4):
    """Tasks 1 (type a), 2 (a) and 3 (b) nested in 1, then 4 (b, created by
    `create_4`) over the paused task 1."""
    return [
        ("6Yc", b"", type_event(1, "a")), ("6Yc", b"", type_event(2, "b")),
        ("6Tc", u32(1, 1)), ("6Tc", u32(2, 1)), ("6Tc", u32(3, 2)),
        ("6Tx", u32(1)), ("6U[",), ("6Tx", u32(2)), ("6Te", u32(2)), ("6U]",),
        ("6F[",), ("6Tx", u32(3)), ("6Tp", u32(3)), ("6Tr", u32(3)), ("6Te", u32(3)),
        ("6F]",), ("6Bb",), ("6Tp", u32(1)), (create_4, u32(4, 2)), ("6Tx", u32(4)),
        ("6Te", u32(4)), ("6Tr", u32(1)), ("6BB",), ("6Te", u32(1))]


def test_nanos6_old_create_event_is_ignored(tmp_path):
    """6TC (an old event) creates nothing, with ovniemu's warning."""
    write(tmp_path / "t", nesting_items("6TC"), NANOS6)
    proc = convert(tmp_path / "t", tmp_path / "o", expect=2)
    assert "cannot find task with id 4" in proc.stderr
    assert "warning: got old 6TC event, ignoring" in proc.stderr


def test_nanos6_nesting_pause_and_rank(tmp_path):
    """Inline tasks nest over a running one (warned); the task channels
    switch to the inner task and back; a paused body shows no task; the
    rank of a ranked process shows as rank + 1."""
    write(tmp_path / "t", nesting_items("6Tc"), NANOS6, extra_meta={"rank": 0, "nranks": 1})
    proc = convert(tmp_path / "t", tmp_path / "o", expect=0)
    assert proc.stderr.count("warning: deprecated nesting") == 2
    assert "deprecated nesting body(id=1,taskid=3) over already running " \
           "body(id=1,taskid=1)" in proc.stderr
    a, b = 2068372317, 505740363
    assert thread_records(tmp_path / "o") == {
        0: "6=1 4=1 2=10 35=0 36=0 37=0 38=0 40=100",
        60: f"37=1 35=1 36={a} 38=1",
        70: "37=4",
        80: f"37=1 35=2 36={a} 38=1",
        90: f"37=4 35=1 36={a} 38=1",
        100: "37=1",
        110: "37=5",
        120: f"37=1 35=3 36={b} 38=1",
        130: "35=0 36=0 38=0",
        140: f"35=3 36={b} 38=1",
        150: f"37=5 35=1 36={a} 38=1",
        160: "37=1",
        170: "37=14",
        180: "35=0 36=0 38=0",
        200: f"37=1 35=4 36={b} 38=1",
        210: "37=14 35=0 36=0 38=0",
        220: f"35=1 36={a} 38=1",
        230: "37=1",
        240: "37=0 35=0 36=0 38=0",
        250: "4=3 2=0 6=0 36=0 38=0 40=0",
    }


def test_nanos6_types_of_two_processes(tmp_path):
    """The task type values of the .pcf: process by process, each in
    creation order, a label two processes share listed once."""
    t = tmp_path / "t"
    write(t, [("6Yc", b"", type_event(1, "b")), ("6Yc", b"", type_event(2, "a"))],
          NANOS6, pid=10)
    write_ovni_stream(t, events(("OHx", ohx(1, 20)), ("6Yc", b"", type_event(1, "c")),
                                ("6Yc", b"", type_event(2, "a")),
                                ("6Yc", b"", type_event(3, "b")), ("OHe",)),
                      pid=20, require=NANOS6, cpus=((0, 0), (1, 1)))
    convert(t, tmp_path / "o", expect=0)
    for name in ("thread.pcf", "cpu.pcf"):
        pcf = (tmp_path / "o" / name).read_text()
        block = pcf.split("0 36         Nanos6 task type of the RUNNING thread\nVALUES\n")[1]
        assert block.split("\n\n")[0] == "505740363 b\n2068372317 a\n952177206 c"


def test_nanos6_cooling_and_ignored_events(tmp_path):
    """Nanos6 events need an active thread (Cooling is); the thread type
    stack may stay open; 6W*, 6S@, 6Sr, 6Ss, 6t[, 6t] change nothing."""
    write(tmp_path / "t", [
        ("6Hw",), ("6W[",), ("6W*",), ("6S@",), ("6Sr",), ("6Ss",), ("6t[",), ("6t]",),
        ("OHc",), ("6Wg",), ("6Pa",), ("6WG",), ("6W]",)], NANOS6)
    proc = convert(tmp_path / "t", tmp_path / "o", expect=0)
    assert "warning" not in proc.stderr and "error" not in proc.stderr
    assert thread_records(tmp_path / "o") == {
        0: "6=1 4=1 2=10 35=0 36=0 37=0 38=0 40=100",
        10: "39=3", 20: "37=19",
        90: "4=4 36=0 38=0 40=0",    # Cooling: the RUN channels hide, 36 and 38 rewritten
        100: "37=24", 120: "37=19", 130: "37=0",  # the subsystem still shows (ACT)
        140: "4=3 2=0 6=0 36=0 38=0",
    }


def test_openmp_task_runs_again_and_worksharing(tmp_path):
    """An OpenMP task may run again once ended; a work-sharing region
    pushes its type's label over the task's; PBs/PBS are ignored."""
    write(tmp_path / "t", [
        ("POc", b"", type_event(1, "t.1")), ("POc", b"", type_event(2, "w.2")),
        ("PPc", u32(1, 1)), ("PPx", u32(1)), ("PQx", u32(2)), ("PBs",), ("PBS",),
        ("PQe", u32(2)), ("PPe", u32(1)), ("PPx", u32(1)), ("PPe", u32(1))], OPENMP)
    convert(tmp_path / "t", tmp_path / "o", expect=0)
    t1, w2 = 492483778, 1623539523
    assert thread_records(tmp_path / "o") == {
        0: "6=1 4=1 2=10 50=0 51=0 52=0",
        40: f"52=1 51={t1}", 50: f"51={w2}", 80: f"51={t1}", 90: "52=0 51=0",
        100: f"52=1 51={t1}", 110: "52=0 51=0", 120: "4=3 2=0 6=0",
    }


def test_openmp_nested_tasks_of_one_type(tmp_path):
    """Nested tasks of one type write the label again (duplicates allowed)."""
    write(tmp_path / "t", [
        ("POc", b"", type_event(1, "t.1")), ("PPc", u32(1, 1)), ("PPc", u32(2, 1)),
        ("PPx", u32(1)), ("PTs",), ("PPx", u32(2)), ("PPe", u32(2)), ("PTS",),
        ("PPe", u32(1))], OPENMP)
    proc = convert(tmp_path / "t", tmp_path / "o", expect=0)
    assert "deprecated nesting body(id=1,taskid=2) over already running " \
           "body(id=1,taskid=1)" in proc.stderr
    t1 = 492483778
    assert thread_records(tmp_path / "o") == {
        0: "6=1 4=1 2=10 50=0 51=0 52=0",
        40: f"52=1 51={t1}", 50: "50=21", 60: f"52=2 51={t1}", 70: f"52=1 51={t1}",
        80: "50=0", 90: "52=0 51=0", 100: "4=3 2=0 6=0",
    }


REFUSED = [
    ("nanos6-paused", NANOS6, [("OHp",), ("6W[",), ("OHr",)], "current thread 10 not active"),
    ("nanos6-unknown-ss", NANOS6, [("6Wx",)], "unknown Nanos6 subsystem event"),
    ("nanos6-unknown-cat", NANOS6, [("6Z[",)], "unknown Nanos6 event category"),
    ("nanos6-not-jumbo", NANOS6, [("6Yc", u32(1, 0))], "expecting a jumbo event"),
    ("nanos6-no-task", NANOS6, [("6Tx", u32(7))], "cannot find task with id 7"),
    ("nanos6-task-value", NANOS6, [("6Tq", u32(7))], "unexpected Nanos6 task event value"),
    ("nanos6-run-twice", NANOS6, [("6Yc", b"", type_event(1, "a")), ("6Tc", u32(1, 1)),
                                  ("6Tx", u32(1)), ("6Te", u32(1)), ("6Tx", u32(1))],
     "body(id=1,taskid=1) is not allowed to run again"),
    ("nanos6-left", NANOS6, [("6W[",), ("6Sa",)], "thread 10 ended with 2 stacked nanos6 "
     "subsystems"),
    ("openmp-cooling", OPENMP, [("OHc",), ("PBb",)], "current thread 10 not running"),
    ("openmp-no-ws", OPENMP, [("PQx", u32(5))], "cannot find ws with type 5"),
    ("openmp-ws-0", OPENMP, [("PQx", u32(0))], "worksharing type id cannot be 0"),
    ("openmp-unknown-fn", OPENMP, [("PBx",)], "unknown openmp function event"),
    ("openmp-unknown-cat", OPENMP, [("PZx",)], "unknown event category"),
    ("openmp-task-0", OPENMP, [("POc", b"", type_event(1, "t.1")), ("PPc", u32(0, 1))],
     "taskid cannot be 0"),
    ("openmp-task-value", OPENMP, [("PPr", u32(1))], "unexpected task event value"),
    ("openmp-left", OPENMP, [("PH[",), ("PTs",)], "thread 10 ended with 2 stacked openmp "
     "functions"),
]


@pytest.mark.parametrize("name,require,items,rule", REFUSED, ids=[r[0] for r in REFUSED])
def test_refusals(tmp_path, name, require, items, rule):
    write(tmp_path / "t", items, require)
    proc = convert(tmp_path / "t", tmp_path / "o", expect=2)
    errors = [l for l in proc.stderr.splitlines() if ": error: " in l]
    assert errors and rule in errors[0], proc.stderr
    assert "thread.10/stream.obs" in errors[0]


def test_many_distinct_warnings_are_counted_not_listed(tmp_path):
    """Each nesting warns with its own task ids; past 100 distinct warnings
    the rest are only counted (the diagnostics stay bounded)."""
    items = [("POc", b"", type_event(1, "t.1"))]
    items += [("PPc", u32(k, 1)) for k in range(1, 202)]
    items += [("PPx", u32(1))]
    for k in range(2, 202):
        items += [("PPx", u32(k)), ("PPe", u32(k))]
    items += [("PPe", u32(1))]
    write(tmp_path / "t", items, OPENMP)
    proc = convert(tmp_path / "t", tmp_path / "o", expect=0)
    assert proc.stderr.count("warning: deprecated nesting") == 100
    assert "over already running body(id=1,taskid=1)" in proc.stderr
    assert "warning: more warnings, not listed one by one (100 times)" in proc.stderr


def timed(items):
    """ovni events at the given clocks: (clock, mcv[, payload[, jumbo]])."""
    return [ovni_event(it[1], it[0], it[2] if len(it) > 2 else b"",
                       jumbo=it[3] if len(it) > 3 else None) for it in items]


def test_openmp_breakdown_of_three_cpus(tmp_path):
    """--breakdown writes openmp-breakdown.* (ovniemu -b): per physical CPU
    its label (a task's or work-sharing region's type) when one shows, else
    its subsystem, the CPUs' values sorted. Three threads on three CPUs,
    with labels over subsystems and subsystems over labels: the records
    are what the real ovniemu 1.14.0 wrote for this trace."""
    cpus = ((0, 0), (1, 1), (2, 2))
    trace = tmp_path / "t"
    write_ovni_stream(trace, timed([
        (1000, "OHx", ohx(0, 10)), (1010, "POc", b"", type_event(1, "t.1")),
        (1012, "POc", b"", type_event(2, "w.2")), (1030, "PBb"), (1060, "PBB"),
        (1070, "PPc", u32(1, 1)), (1100, "PPx", u32(1)), (1120, "PTs"),
        (1130, "PQx", u32(2)), (1140, "PQe", u32(2)), (1150, "PPe", u32(1)),
        (1170, "PTS"), (1210, "OHe")]), pid=10, tid=10, cpus=cpus, require=OPENMP)
    write_ovni_stream(trace, timed([
        (1005, "OHx", ohx(1, 11)), (1035, "PMu"), (1045, "PPc", u32(2, 1)),
        (1085, "PPx", u32(2)), (1125, "PPe", u32(2)), (1145, "PMU"), (1190, "OHe")]),
        pid=10, tid=11, cpus=cpus, require=OPENMP)
    write_ovni_stream(trace, timed([
        (1002, "OHx", ohx(2, 12)), (1040, "PIa"), (1050, "PIA"), (1055, "PI["),
        (1095, "PI]"), (1100, "PTa"), (1160, "PTA"), (1200, "OHe")]),
        pid=10, tid=12, cpus=cpus, require=OPENMP)
    out = tmp_path / "o"
    run_weft("convert", trace, "-t", "paraver", "--breakdown", "--no-ovni-cfg", "-o", out,
             expect=0)
    t1, w2 = 492483778, 1623539523
    want = ("1:30:0 2:30:0 3:30:3 2:35:3 3:35:30 1:40:3 2:40:6 1:50:0 2:50:3 1:55:3 "
            "2:55:8 1:60:0 3:85:T1 2:95:0 2:100:T1 1:100:15 2:125:30 3:130:W2 3:140:T1 "
            "1:145:0 2:145:15 3:150:21 2:160:0 3:170:0").replace("T1", str(t1)) \
        .replace("W2", str(w2))
    lines = (out / "openmp-breakdown.prv").read_text().splitlines()
    assert lines[0] == "#Paraver (19/01/38 at 03:14):00000000000000000210_ns:0:1:1(3:1)"
    assert [f"2:0:1:1:{r.split(':')[0]}:{r.split(':')[1]}:53:{r.split(':')[2]}"
            for r in want.split()] == lines[1:]
    assert (out / "openmp-breakdown.row").read_text() == \
        "LEVEL NODE SIZE 1\nhostname\n\nLEVEL THREAD SIZE 3\n~CPU    3\n~CPU    2\n~CPU    1\n"
    pcf = (out / "openmp-breakdown.pcf").read_text()
    assert "0 53         CPU: OpenMP Runtime/Label breakdown" in pcf
    assert f"{t1} t.1\n{w2} w.2\n" in pcf and "31   Runtime: Worker main loop\n" in pcf
