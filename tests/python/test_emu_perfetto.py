# SPDX-License-Identifier: MIT
"""`weft convert -t perfetto` of an ovni trace, emulated (docs/perfetto.md,
"Emulated ovni traces"), read back with test_perfetto.py's protobuf reader
and checked against what the real ovniemu 1.14.0 wrote for the same trace
(the goldens of tests/data/ovni-emu/, see test_emu_paraver.py).

Each Paraver row and event type is a step function: at each time, the
value of the last record (0: nothing). Each Perfetto track gives one too:
at each time, the innermost slice open. They must be the same, the
Perfetto one ending at the last event:
- thread rows: the thread track (by tid) and its child tracks: "state"
  (type 4, Dead drawn as nothing), "CPU" (type 6, named as in cpu.row),
  one per model channel, named as the .pcf names it without the tracking
  suffix, its slices named by the .pcf's value labels (else the number);
- CPU rows: the CPU's track (named as in cpu.row) holds its running
  thread (type 2: "thread <tid>", the pid of type 1 as argument), its
  counter "running threads" the values of type 3, its child tracks the
  model channels;
- tasks: the "<model> tasks" track of a row shows the task of the id
  channel, named by the label of the type channel, the id as argument.
Also: nested stack values become nested slices (a libovni program built
here pushes marks three deep and pauses in between), refusals (nothing
written; --allow-loss keeps the slices before the error), the time
window, --raw and the default.
"""

import collections
import os
import re
import shutil
import subprocess

import pytest

import weftlib
from weftlib import run_weft
from test_emu_paraver import (CASES, first_error, golden, ovniemu_args,
                              refused_during_emulation, skip_unless_emulated)
from test_perfetto import PerfettoTrace

# Task id type -> (track name, type of the name channel); the channels
# shown only as the tasks' names and arguments have no track.
TASKS = {10: ("nOS-V tasks", 11), 35: ("Nanos6 tasks", 36), 52: ("OpenMP tasks", 51)}
TASK_ONLY = {11, 12, 14, 15, 36, 38}
STATE, AFFINITY = 4, 6


# ---- The goldens -------------------------------------------------------------------

def parse_pcf(text):
    """type -> (name, {value: label})."""
    types, current = {}, []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        if lines[i] == "EVENT_TYPE":
            current = []
            i += 1
            while i < len(lines) and lines[i].strip() and lines[i] != "VALUES":
                m = re.match(r"0\s+(\d+)\s+(.*)$", lines[i])
                types[int(m.group(1))] = (m.group(2), {})
                current.append(int(m.group(1)))
                i += 1
            continue
        if lines[i] == "VALUES":
            i += 1
            while i < len(lines) and lines[i].strip():
                value, label = lines[i].split(None, 1) if " " in lines[i].strip() \
                    else (lines[i].strip(), "")
                for t in current:
                    types[t][1][int(value)] = label.strip()
                i += 1
            continue
        i += 1
    return types


def track_name(pcf_name):
    """A channel's track name: its .pcf name without the tracking suffix."""
    return re.sub(r" (of the (RUNNING|ACTIVE) thread)?\s*$", "", pcf_name + " ").strip()


def row_labels(text):
    return [l.strip() for l in text.split("LEVEL THREAD SIZE", 1)[1].splitlines()[1:] if l]


class Golden:
    """ovniemu's thread.* and cpu.* of a case."""

    def __init__(self, case_dir):
        self.threads = row_labels(golden(case_dir, "thread.row"))
        self.cpus = row_labels(golden(case_dir, "cpu.row"))
        self.pcf = {"thread": parse_pcf(golden(case_dir, "thread.pcf")),
                    "cpu": parse_pcf(golden(case_dir, "cpu.pcf"))}
        self.records = {}
        self.duration = 0
        for kind in ("thread", "cpu"):
            lines = golden(case_dir, f"{kind}.prv").splitlines()
            self.duration = int(re.search(r"\):(\d+)_ns", lines[0]).group(1))
            recs = collections.defaultdict(list)
            for l in lines[1:]:
                f = l.split(":")
                recs[(int(f[4]) - 1, int(f[6]))].append((int(f[5]), int(f[7])))
            self.records[kind] = recs

    def value_at(self, kind, row, type_, time):
        v = 0
        for t, value in self.records[kind].get((row, type_), []):
            if t > time:
                break
            v = value
        return v

    def steps(self, kind, row, type_, key):
        """The step function of a row's type: [(time, key(value) or None)]."""
        points = {}
        for t, v in self.records[kind].get((row, type_), []):
            points[t] = key(v, t)
        return finish(sorted(points.items()), self.duration)

    def label(self, kind, type_, value):
        return self.pcf[kind].get(type_, ("", {}))[1].get(value, str(value))


def finish(points, end):
    """Sorted (time, key) points as a step function: None at `end`, of the
    points of one time the last (a value shown for no time is not seen),
    consecutive equal keys merged, leading None dropped."""
    if end is not None:
        points = list(points) + [(end, None)]
    last = {}
    for t, k in points:
        last[t] = k
    out = []
    for t, k in sorted(last.items()):
        if (out[-1][1] if out else None) != k:
            out.append((t, k))
    return out


# ---- The Perfetto output ----------------------------------------------------------------

def slice_steps(slices, t0, key):
    """The innermost open slice of a track over time: [(time - t0, key(slice))]."""
    bounds = sorted({s.begin for s in slices} | {s.end for s in slices})
    points = []
    for t in bounds:
        open_ = [s for s in slices if s.begin <= t < s.end]
        top = max(open_, key=lambda s: s.depth) if open_ else None
        points.append((t - t0, key(top) if top else None))
    return finish(points, None)  # every slice ends: the last key is None


class Output:
    """A decoded emulated .pftrace: tracks by row and name."""

    def __init__(self, data):
        self.t = PerfettoTrace(data)
        self.by_track = collections.defaultdict(list)
        for s in self.t.slices:
            self.by_track[s.track].append(s)
        self.children = collections.defaultdict(dict)
        for uuid, tr in self.t.tracks.items():
            if tr.parent is not None:
                self.children[tr.parent][tr.name] = uuid
        self.processes = {tr.name: uuid for uuid, tr in self.t.tracks.items()
                          if tr.kind == "process"}

    def thread(self, tid):
        found = [u for u, tr in self.t.tracks.items()
                 if tr.kind == "thread" and tr.name == f"thread.{tid}"]
        assert len(found) <= 1, f"tid {tid} twice"
        return found[0] if found else None

    def cpu(self, label):
        cpus = self.processes.get("CPUs")
        return self.children[cpus].get(label) if cpus is not None else None


_cache = {}


def convert(case_dir, out, *args, expect=0):
    """ovniemu's -a of the case (its -b, the breakdown traces, is Paraver's)."""
    flags = [a for a in ovniemu_args(case_dir) if a != "--breakdown"]
    return run_weft("convert", case_dir / "ovni", "-t", "perfetto", "--emulate", "-o", out,
                    *flags, *args, expect=expect)


def first_clock(trace):
    return int(run_weft("dump", trace, expect=0).stdout.split(None, 1)[0])


def channel_keys(g, kind, type_):
    """How a Paraver value of a type is named in the output (None: nothing)."""
    if kind == "thread" and type_ == STATE:
        return lambda v, t: None if v in (0, 3) else g.label(kind, STATE, v)
    if kind == "thread" and type_ == AFFINITY:
        return lambda v, t: g.cpus[v - 1] if v else None
    return lambda v, t: g.label(kind, type_, v) if v else None


def check_rows(g, out, t0, kind, task_names=True):
    """Every row's step functions against the output's tracks; the tracks
    of a row are exactly those of its types that take a value. Tasks are
    compared by name and id, or by id alone (`task_names` 0: a refused
    trace, whose .pcf ovniemu wrote without the task types' labels)."""
    labels = g.threads if kind == "thread" else g.cpus
    for row, label in enumerate(labels):
        uuid = out.thread(int(label.split(".")[-1])) if kind == "thread" else out.cpu(label)
        types = sorted({ty for (r, ty) in g.records[kind] if r == row})
        want_tracks = set()
        for ty in types:
            if kind == "thread" and ty == 2 or kind == "cpu" and ty == 1 or ty in TASK_ONLY:
                continue
            if kind == "cpu" and ty in (2, 3):
                if ty == 2 and any(v for _, v in g.records[kind][(row, ty)]):
                    check_running(g, out, t0, row, uuid)
                if ty == 3:
                    counter = out.children[uuid]["running threads"]
                    got = [(e.time - t0, e.counter) for e in out.t.counters if e.uuid == counter]
                    assert got == [(t, float(v)) for t, v in g.records[kind][(row, ty)]]
                    want_tracks.add("running threads")
                continue
            if ty in TASKS:
                name, name_type = TASKS[ty]
                key = task_key(g, kind, row, name_type if task_names else None)
                skey = lambda s: (s.name if task_names else None, s.args.get("id"))  # noqa
            else:
                name = {STATE: "state", AFFINITY: "CPU"}.get(ty) if kind == "thread" else None
                name = name or track_name(g.pcf[kind][ty][0])
                key = channel_keys(g, kind, ty)
                skey = lambda s: s.name  # noqa: E731
            if all(key(v, t) is None for t, v in g.records[kind][(row, ty)]):
                continue
            want = g.steps(kind, row, ty, key)
            want_tracks.add(name)
            assert uuid is not None, (label, ty)
            track = out.children[uuid].get(name)
            assert track is not None, (label, name, sorted(out.children[uuid]))
            got = slice_steps(out.by_track[track], t0, skey)
            assert got == want, (label, name)
        if uuid is not None:
            assert set(out.children[uuid]) == want_tracks, (label, sorted(out.children[uuid]))


def task_key(g, kind, row, name_type):
    """A task id record's key: the label of the type shown then, and the id."""
    if name_type is None:
        return lambda v, t: (None, v) if v else None
    return lambda v, t: (g.label(kind, name_type, g.value_at(kind, row, name_type, t)), v) \
        if v else None


def check_running(g, out, t0, row, uuid):
    """A CPU's own track: its running thread (type 2), the pid (type 1) as argument."""
    want = g.steps("cpu", row, 2, lambda v, t: f"thread {v}" if v else None)
    slices = out.by_track[uuid]
    assert slice_steps(slices, t0, lambda s: s.name) == want
    for s in slices:
        assert s.args["tid"] == int(s.name.split()[1])
        assert s.args["pid"] == g.value_at("cpu", row, 1, s.begin - t0)


def accepted_cases():
    return sorted(c for c, d in CASES.items() if first_error(d) is None)


@pytest.mark.parametrize("case", accepted_cases())
def test_slices_are_ovniemus_records(tmp_path, case):
    case_dir = CASES[case]
    skip_unless_emulated(case_dir)
    out_path = tmp_path / "out.pftrace"
    proc = convert(case_dir, out_path)
    assert "note: emulating the models" in proc.stderr and "error" not in proc.stderr
    out = Output(out_path.read_bytes())
    g = Golden(case_dir)
    t0 = first_clock(case_dir / "ovni")
    check_rows(g, out, t0, "thread")
    check_rows(g, out, t0, "cpu")


@pytest.mark.parametrize("case", sorted(c for c, d in CASES.items()
                                        if first_error(d) is not None))
def test_refused_trace_writes_nothing(tmp_path, case):
    case_dir = CASES[case]
    skip_unless_emulated(case_dir)
    out = tmp_path / "out.pftrace"
    proc = convert(case_dir, out, expect=2)
    assert first_error(case_dir) in proc.stderr, proc.stderr
    assert not out.exists() and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("case", refused_during_emulation())
def test_refused_trace_keeps_the_slices_before_the_error(tmp_path, case):
    case_dir = CASES[case]
    skip_unless_emulated(case_dir)
    out = tmp_path / "out.pftrace"
    proc = convert(case_dir, out, "--allow-loss", expect=1)
    assert first_error(case_dir) in proc.stderr
    g = Golden(case_dir)
    t0 = first_clock(case_dir / "ovni")
    o = Output(out.read_bytes())
    check_rows(g, o, t0, "thread", task_names=False)
    check_rows(g, o, t0, "cpu", task_names=False)


def test_a_task_run_over_a_paused_one_is_nested(tmp_path):
    """emu-nosv-same-subsystem: task 1 runs, pauses, task 2 runs on the
    same thread and ends, task 1 resumes and ends. Task 2 is drawn inside
    a slice of task 1 flagged "paused" that lasts as long as it; task 1's
    own slices are not flagged; the CPU shows the same."""
    case_dir = CASES["emu-nosv-same-subsystem"]
    skip_unless_emulated(case_dir)
    out_path = tmp_path / "n.pftrace"
    convert(case_dir, out_path)
    out = Output(out_path.read_bytes())
    for row in (out.thread(7880), out.cpu("CPU 0.0")):
        slices = out.by_track[out.children[row]["nOS-V tasks"]]
        got = sorted((s.begin, s.depth, s.args["id"], bool(s.args.get("paused")),
                      s.parent.args["id"] if s.parent else None, s.end) for s in slices)
        assert [g[1:5] for g in got] == [(0, 1, False, None), (0, 1, True, None),
                                          (1, 2, False, 1), (0, 1, False, None)]
        assert got[1][0] == got[2][0] and got[1][5] == got[2][5]
        assert all(s.name == "testtype10" for s in slices)


# ---- Nesting, built here with weft's libovni ------------------------------------------------

NESTED_PROGRAM = r"""
#define _GNU_SOURCE
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <ovni.h>

static void ev(const char *mcv, const void *p, int n)
{
	struct ovni_ev e = { 0 };
	ovni_ev_set_mcv(&e, mcv);
	ovni_ev_set_clock(&e, ovni_clock_now());
	if (n > 0)
		ovni_payload_add(&e, p, n);
	ovni_ev_emit(&e);
}

int main(int argc, char **argv)
{
	int32_t ohx[4] = { 0, -1, 0, 0 };
	(void) argv;
	ovni_version_check();
	ovni_proc_init(1, "pf.nested", getpid());
	ovni_thread_init((pid_t) syscall(SYS_gettid));
	ovni_add_cpu(0, 0);
	ovni_mark_type(1, OVNI_MARK_STACK, "Phase");
	ovni_mark_label(1, 1, "outer");
	ovni_mark_label(1, 2, "middle");
	ovni_mark_label(1, 3, "inner");
	ev("OHx", ohx, sizeof(ohx));
	ovni_mark_push(1, 1);
	ovni_mark_push(1, 2);
	ovni_mark_push(1, 3);
	ev("OHp", NULL, 0);
	ev("OHr", NULL, 0);
	ovni_mark_pop(1, 3);
	ovni_mark_push(1, 2);
	ovni_mark_pop(1, 2);
	ovni_mark_pop(1, 2);
	if (argc > 1)
		ev("OHr", NULL, 0); /* resumes a running thread: refused */
	ovni_mark_pop(1, 1);
	ev("OHe", NULL, 0);
	ovni_thread_free();
	ovni_proc_fini();
	return 0;
}
"""


@pytest.fixture(scope="module")
def nested_traces(tmp_path_factory):
    """A trace whose mark stack goes three deep, paused once; and the same
    with a refused event before its last pop."""
    bdir = weftlib.Path(weftlib.WEFT).resolve().parent
    if not (bdir / "libovni.so").exists():
        pytest.skip(f"no libovni.so in {bdir}")
    cc = shutil.which(os.environ.get("CC", "cc"))
    if cc is None:
        pytest.skip("no C compiler")
    tmp = tmp_path_factory.mktemp("emu_perfetto")
    src, prog = tmp / "nested.c", tmp / "nested"
    src.write_text(NESTED_PROGRAM)
    cflags = []
    cache = bdir / "CMakeCache.txt"
    if cache.exists() and "WEFT_SANITIZE:BOOL=ON" in cache.read_text():
        cflags = ["-fsanitize=address,undefined"]
    subprocess.run([cc, "-std=c11", *cflags, "-o", str(prog), str(src),
                    f"-I{weftlib.REPO_DIR / 'include'}", f"-L{bdir}", f"-Wl,-rpath,{bdir}",
                    "-lovni"], check=True, capture_output=True)
    traces = {}
    for name, args in (("good", []), ("bad", ["bad"])):
        traces[name] = tmp / name
        subprocess.run([str(prog), *args], check=True, capture_output=True,
                       env=dict(os.environ, OVNI_TRACEDIR=str(traces[name])))
    return traces


def dump_events(trace):
    """(time, code, value) of every event."""
    out = []
    for line in run_weft("dump", trace, expect=0).stdout.splitlines():
        f = line.split()
        value = re.search(r"value=(-?\d+)", line)
        out.append((int(f[0]), f[1], int(value.group(1)) if value else None))
    return out


def expected_nesting(events, end=None):
    """The mark slices (begin, end, depth, name) of the nested program: a
    push opens one, a pop closes it, a pause closes them all and the
    resume opens them again (the channel shows while the thread is active)."""
    names = {1: "outer", 2: "middle", 3: "inner"}
    stack, slices = [], []
    for t, code, value in events:
        if code == "OM[":
            stack.append([t, names[value]])
        elif code == "OM]":
            b, name = stack.pop()
            slices.append((b, t, len(stack), name))
        elif code == "OHp":
            for depth in range(len(stack) - 1, -1, -1):
                slices.append((stack[depth][0], t, depth, stack[depth][1]))
        elif code == "OHr":
            for entry in stack:
                entry[0] = t
    for depth in range(len(stack) - 1, -1, -1):
        slices.append((stack[depth][0], end, depth, stack[depth][1]))
    return sorted(slices)


def mark_slices(out, row_name):
    """(begin, end, depth, name) of the "Phase" track of a thread or CPU."""
    track = out.children[row_name]["Phase"]
    return sorted((s.begin, s.end, s.depth, s.name) for s in out.by_track[track])


def test_nested_marks_are_nested_slices(nested_traces, tmp_path):
    trace = nested_traces["good"]
    out_path = tmp_path / "n.pftrace"
    run_weft("convert", trace, "-o", out_path, expect=0)
    out = Output(out_path.read_bytes())
    events = dump_events(trace)
    want = expected_nesting(events)
    assert max(d for _, _, d, _ in want) == 2
    [tid] = [int(p.name.split(".")[1]) for p in trace.glob("loom.*/proc.*/thread.*")]
    thread = out.thread(tid)
    assert mark_slices(out, thread) == want
    # each nested slice lies in the one below it (the reader checks it) and
    # the CPU that runs the thread shows the same
    assert mark_slices(out, out.cpu("CPU 0.0")) == want
    at = {code: t for t, code, _ in events if code.startswith("OH")}
    state = out.children[thread]["state"]
    assert sorted((s.begin, s.end, s.name) for s in out.by_track[state]) == [
        (at["OHx"], at["OHp"], "Running"), (at["OHp"], at["OHr"], "Paused"),
        (at["OHr"], at["OHe"], "Running")]


def test_refused_event_keeps_the_slices_before_it(nested_traces, tmp_path):
    trace = nested_traces["bad"]
    out_path = tmp_path / "bad.pftrace"
    proc = run_weft("convert", trace, "-o", out_path, expect=2)
    assert "cannot resume thread" in proc.stderr and "nothing written" in proc.stderr
    assert not out_path.exists()
    proc = run_weft("convert", trace, "-o", out_path, "--allow-loss", expect=1)
    assert "cannot resume thread" in proc.stderr
    events = dump_events(trace)
    bad = [t for t, c, _ in events if c == "OHr"][-1]
    kept = [e for e in events if e[0] < bad]
    out = Output(out_path.read_bytes())
    [tid] = [int(p.name.split(".")[1]) for p in trace.glob("loom.*/proc.*/thread.*")]
    # what was open at the refused event closes there
    assert mark_slices(out, out.thread(tid)) == expected_nesting(kept, end=bad)


def test_time_window(nested_traces, tmp_path):
    """The slices of [from, to] (trace clock): those open at its edges cut
    there and flagged "clipped"."""
    trace = nested_traces["good"]
    events = dump_events(trace)
    lo = [t for t, c, _ in events if c == "OHr"][0] + 1
    hi = events[-3][0] + 1
    out_path = tmp_path / "w.pftrace"
    run_weft("convert", trace, "--from", lo, "--to", hi, "-o", out_path, expect=0)
    out = Output(out_path.read_bytes())
    [tid] = [int(p.name.split(".")[1]) for p in trace.glob("loom.*/proc.*/thread.*")]
    want = [(max(b, lo), min(e, hi), d, n) for b, e, d, n in expected_nesting(events)
            if e > lo and b <= hi]
    assert mark_slices(out, out.thread(tid)) == sorted(want)
    track = out.children[out.thread(tid)]["Phase"]
    for s in out.by_track[track]:
        assert bool(s.args.get("clipped")) == (s.begin == lo)
        assert bool(s.end_args.get("clipped")) == (s.end == hi)


# ---- Default, --raw, --emulate --------------------------------------------------------------

def test_emulation_is_the_default_and_raw_the_generic_mapping(nested_traces, tmp_path):
    trace = nested_traces["good"]
    proc = run_weft("convert", trace, "-o", tmp_path / "a.pftrace", expect=0)
    assert "emulating the models of ovniemu 1.14: ovni" in proc.stderr
    emulated = Output((tmp_path / "a.pftrace").read_bytes())
    assert "CPUs" in emulated.processes
    proc = run_weft("convert", trace, "--raw", "-o", tmp_path / "b.pftrace", expect=0)
    assert "emulating" not in proc.stderr
    raw = Output((tmp_path / "b.pftrace").read_bytes())
    assert "CPUs" not in raw.processes
    assert not any(tr.name == "state" for tr in raw.t.tracks.values())
    # standard output: the same bytes
    std = run_weft("convert", trace, "-t", "perfetto", "-o", "-", expect=0, binary=True)
    assert std.stdout == (tmp_path / "a.pftrace").read_bytes()


def test_a_trace_without_declared_models_is_not_emulated(tmp_path):
    trace = weftlib.OVNI_DATA / "v1" / "1.4.1" / "ovni"  # libovni 1.4: no ovni.require
    proc = run_weft("convert", trace, "-o", tmp_path / "v2.pftrace", expect=0)
    assert "emulating" not in proc.stderr
    proc = run_weft("convert", trace, "--emulate", "-o", tmp_path / "e.pftrace", expect=2)
    assert "declares no models" in proc.stderr and "--raw" in proc.stderr
    assert not (tmp_path / "e.pftrace").exists()


def test_selections_are_refused(nested_traces, tmp_path):
    proc = run_weft("convert", nested_traces["good"], "--emulate", "--stream", "*",
                    "-o", tmp_path / "s.pftrace", expect=2)
    assert "no stream or event selection" in proc.stderr
    proc = run_weft("convert", nested_traces["good"], "--breakdown",
                    "-o", tmp_path / "s.pftrace", expect=2)
    assert "the breakdown traces are Paraver's" in proc.stderr
    assert not (tmp_path / "s.pftrace").exists()
