# SPDX-License-Identifier: MIT
"""The checks that the real ovniemu and ovnidump apply when they load a
trace, re-implemented in Python and run on traces written by weft's libovni
and on the reference traces written by the real libovni 1.14.

Issue #2 asks that "the real ovnidump/ovniemu accept" what weft's libovni
writes. The real tools cannot run here, so each rule below was read out of
ovni's emulator sources (bsc-pm/ovni, the trace-format-v3 versions of
src/emu/*.c that libovni 1.11 to 1.14 share: stream.c and system.c and
metadata.c at commit 12835ad23a3b, player.c at 004173857816, the v3
versions of loom.c, proc.c, thread.c and model.c, ovni/event.c, trace.c,
ovnidump.c; src/rt/ovni.c for the writer side) and is restated here in our
own words. Each test docstring names the file and function holding the rule.

Traces checked:
- weft:workers  examples/ovni_workers (4 threads, nOS-V task events, marks,
                jumbo events, loom CPUs), run with OVNI_TRACEDIR=<tmp>;
- weft:ranks    a small program compiled here against include/ovni.h and the
                built libovni.so, run three times into one trace: three
                processes of one loom with rank/nranks, app id 2, CPUs
                declared by two of them (phyid != index), two threads each,
                every OH thread-state transition;
- ref:<name>    every layout-v3 reference trace in tests/data/ovni/v3.

Two reference traces are refused by the real ovniemu (see their README);
for them the matching rule is asserted to FIND the problem, which also
shows that the checks can fail.
"""

import json
import os
import re
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

import weftlib

REPO = weftlib.REPO_DIR
V3_DIR = weftlib.OVNI_DATA / "v3"

# Values that the ovni 1.14 tools expect (ovni.h of the v3 format).
STREAM_MAGIC = b"ovni"
STREAM_VERSION = 1
METADATA_VERSION = 3
HEADER_SIZE = 8          # 4 bytes magic + u32 version
EV_HEADER_SIZE = 12      # flags, model, category, value, u64 clock
EV_JUMBO = 0x10
ONE_HOUR_NS = 3600 * 10**9


# ---- Emulator models of ovni 1.14 (from the signature table) ---------------

def emulator_models():
    """model id char -> (name, version), from the ovni 1.14.0 emulator event
    list that data/ovni-event-signatures.tsv was generated from."""
    models = {}
    for line in weftlib.SIGNATURES_TSV.read_text().splitlines():
        if not line or line.startswith("#") or line.startswith("model\t"):
            continue
        name, mid, version = line.split("\t")[:3]
        models[mid] = (name, version)
    return models


MODELS = emulator_models()
MODEL_BY_NAME = {name: version for name, version in MODELS.values()}


# ---- Reading a trace ---------------------------------------------------------

class Stream:
    def __init__(self, root, obs_path):
        self.dir = obs_path.parent
        self.relpath = str(self.dir.relative_to(root))
        self.json_path = self.dir / "stream.json"
        self.obs = obs_path.read_bytes()
        self.meta = None
        self.meta_error = None
        try:
            self.meta = json.loads(self.json_path.read_text())
        except (OSError, ValueError) as e:
            self.meta_error = repr(e)
        self._events = None

    def ovni_obj(self):
        o = self.meta.get("ovni") if isinstance(self.meta, dict) else None
        return o if isinstance(o, dict) else {}

    def ovni(self, key, default=None):
        return self.ovni_obj().get(key, default)

    def events(self):
        """[(offset, flags, mcv, clock, payload)] and the framing error (or
        None): an event whose size runs past the end of the file."""
        if self._events is None:
            evs, err, off, buf = [], None, HEADER_SIZE, self.obs
            while off < len(buf):
                if off + EV_HEADER_SIZE > len(buf):
                    err = f"{len(buf) - off} bytes left at offset {off}: incomplete event header"
                    break
                flags = buf[off]
                if flags & EV_JUMBO:
                    if off + EV_HEADER_SIZE + 4 > len(buf):
                        err = f"jumbo size cut at offset {off}"
                        break
                    psize = 4 + struct.unpack_from("<I", buf, off + 12)[0]
                else:
                    n = flags & 0x0F
                    psize = n + 1 if n else 0
                size = EV_HEADER_SIZE + psize
                if off + size > len(buf):
                    err = f"event at offset {off} needs {size} bytes, {len(buf) - off} left"
                    break
                mcv = buf[off + 1:off + 4].decode("latin-1")
                clock = struct.unpack_from("<q", buf, off + 4)[0]
                evs.append((off, flags, mcv, clock, buf[off + 12:off + size]))
                off += size
            self._events = (evs, err)
        return self._events


def load_trace(root):
    root = Path(root)
    obs = sorted(root.rglob("stream.obs"))
    assert obs, f"no stream.obs under {root}"
    return [Stream(root, p) for p in obs]


def is_number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def as_int(v):
    """The (int) cast the emulator applies to a JSON number."""
    return int(v)


# ---- The rules: each returns a list of violations (empty = accepted) --------

def rule_layout(streams):
    """Every stream directory (holding stream.obs) has its stream.json, and
    libovni's path loom.<loom>/proc.<pid>/thread.<tid> agrees with the
    metadata."""
    bad = []
    for s in streams:
        if not s.json_path.is_file():
            bad.append(f"{s.relpath}: no stream.json next to stream.obs")
            continue
        parts = s.relpath.split("/")
        if s.meta is None:
            continue
        want = [f"loom.{s.ovni('loom')}", f"proc.{s.ovni('pid')}", f"thread.{s.ovni('tid')}"]
        if parts[-3:] != want:
            bad.append(f"{s.relpath}: path does not match metadata {'/'.join(want)}")
    return bad


def rule_json_object(streams):
    return [f"{s.relpath}: stream.json is not a JSON object ({s.meta_error or type(s.meta).__name__})"
            for s in streams if not isinstance(s.meta, dict)]


def rule_metadata_version(streams):
    bad = []
    for s in streams:
        v = s.meta.get("version") if isinstance(s.meta, dict) else None
        if not is_number(v) or as_int(v) != METADATA_VERSION:
            bad.append(f"{s.relpath}: version {v!r}, expected {METADATA_VERSION}")
    return bad


def rule_part_thread(streams):
    return [f"{s.relpath}: ovni.part {s.ovni('part')!r}, expected \"thread\""
            for s in streams if s.ovni("part") != "thread"]


def rule_loom_name(streams):
    bad = []
    for s in streams:
        loom = s.ovni("loom")
        if not isinstance(loom, str) or loom == "":
            bad.append(f"{s.relpath}: ovni.loom {loom!r} is not a string")
        elif "/" in loom:
            bad.append(f"{s.relpath}: ovni.loom {loom!r} contains '/'")
    return bad


def rule_pid_tid(streams):
    bad, seen = [], set()
    for s in streams:
        for key in ("pid", "tid"):
            v = s.ovni(key)
            if not is_number(v) or v == 0 or v != int(v):
                bad.append(f"{s.relpath}: ovni.{key} {v!r} is not a non-zero integer")
        key = (s.ovni("loom"), s.ovni("pid"), s.ovni("tid"))
        if key in seen:
            bad.append(f"{s.relpath}: tid {key[2]} twice in process {key[1]}")
        seen.add(key)
    return bad


def rule_finished(streams):
    return [f"{s.relpath}: ovni.finished {s.ovni('finished')!r}, expected 1"
            for s in streams if not is_number(s.ovni("finished")) or s.ovni("finished") != 1]


def procs_of(streams):
    procs = {}
    for s in streams:
        procs.setdefault((s.ovni("loom"), s.ovni("pid")), []).append(s)
    return procs


def rule_app_id(streams):
    bad = []
    for (loom, pid), ss in procs_of(streams).items():
        ids = set()
        for s in ss:
            if "app_id" not in s.ovni_obj():
                continue
            v = s.ovni("app_id")
            if not is_number(v) or as_int(v) <= 0:
                bad.append(f"{s.relpath}: ovni.app_id {v!r} must be > 0")
            else:
                ids.add(as_int(v))
        if len(ids) > 1:
            bad.append(f"process {pid} of loom {loom}: app ids differ {sorted(ids)}")
        if not ids:
            bad.append(f"process {pid} of loom {loom}: no stream sets ovni.app_id")
    return bad


def rule_rank(streams):
    bad = []
    for (loom, pid), ss in procs_of(streams).items():
        ranks, nranks = set(), set()
        for s in ss:
            o = s.ovni_obj()
            if "rank" not in o:
                continue
            r, n = o["rank"], o.get("nranks")
            if not is_number(r) or as_int(r) < 0:
                bad.append(f"{s.relpath}: rank {r!r} must be >= 0")
                continue
            if n is None:
                bad.append(f"{s.relpath}: rank without nranks")
                continue
            if not is_number(n) or as_int(n) <= 0:
                bad.append(f"{s.relpath}: nranks {n!r} must be > 0")
                continue
            if as_int(r) >= as_int(n):
                bad.append(f"{s.relpath}: rank {r} not below nranks {n}")
            ranks.add(as_int(r))
            nranks.add(as_int(n))
        if len(ranks) > 1 or len(nranks) > 1:
            bad.append(f"process {pid}: streams disagree on rank {ranks} / nranks {nranks}")
    return bad


def rule_rank_whole_loom(streams):
    bad, looms = [], {}
    for (loom, pid), ss in procs_of(streams).items():
        has = any("rank" in s.ovni_obj() for s in ss)
        looms.setdefault(loom, {})[pid] = has
    for loom, procs in looms.items():
        if any(procs.values()) and not all(procs.values()):
            missing = sorted(p for p, h in procs.items() if not h)
            bad.append(f"loom {loom}: processes {missing} have no rank while others have one")
    return bad


def loom_cpus(streams):
    """loom -> ({phyid: index}, violations), merged the way the emulator
    merges the ovni.loom_cpus arrays of all the streams of a loom."""
    result = {}
    for s in streams:
        loom = s.ovni("loom")
        cpus, bad = result.setdefault(loom, ({}, []))
        o = s.ovni_obj()
        if "loom_cpus" not in o:
            continue
        arr = o["loom_cpus"]
        if not isinstance(arr, list) or not arr:
            bad.append(f"{s.relpath}: loom_cpus is not a non-empty array")
            continue
        for c in arr:
            if not isinstance(c, dict) or not is_number(c.get("index")) or not is_number(c.get("phyid")):
                bad.append(f"{s.relpath}: CPU entry {c!r} lacks numeric index/phyid")
                continue
            index, phyid = as_int(c["index"]), as_int(c["phyid"])
            if index < 0 or phyid < 0:
                bad.append(f"{s.relpath}: CPU {c} has a negative index or phyid")
            elif phyid in cpus:
                if cpus[phyid] != index:
                    bad.append(f"{s.relpath}: phyid {phyid} has index {index}, before {cpus[phyid]}")
            elif index in cpus.values():
                bad.append(f"{s.relpath}: index {index} redefined with phyid {phyid}")
            else:
                cpus[phyid] = index
    return result


def rule_loom_cpus(streams):
    bad = []
    for loom, (cpus, errs) in loom_cpus(streams).items():
        bad += errs
        if not cpus:
            bad.append(f"loom {loom}: no stream declares loom_cpus (no physical CPUs)")
        elif sorted(cpus.values()) != list(range(len(cpus))):
            bad.append(f"loom {loom}: CPU indices {sorted(cpus.values())} are not 0..{len(cpus) - 1}")
    return bad


def rule_lib_version(streams):
    bad = []
    for s in streams:
        lib = s.ovni("lib")
        if not isinstance(lib, dict) or not isinstance(lib.get("version"), str) \
                or not isinstance(lib.get("commit"), str):
            bad.append(f"{s.relpath}: ovni.lib.version / ovni.lib.commit missing or not strings: {lib!r}")
    return bad


VERSION_RE = re.compile(r"^(\d+)\.(\d+)\.(\d+)(-.*)?$")


def rule_require(streams):
    bad = []
    for s in streams:
        req = s.ovni("require")
        if not isinstance(req, dict):
            bad.append(f"{s.relpath}: ovni.require {req!r} is not an object")
            continue
        if "ovni" not in req:
            bad.append(f"{s.relpath}: ovni.require lacks the ovni model")
        for name, ver in req.items():
            if name not in MODEL_BY_NAME:
                continue  # no emulator model reads it
            m = VERSION_RE.match(ver) if isinstance(ver, str) else None
            if m is None:
                bad.append(f"{s.relpath}: require {name} {ver!r} is not X.Y.Z")
                continue
            have = VERSION_RE.match(MODEL_BY_NAME[name])
            if int(m[1]) != int(have[1]) or int(m[2]) > int(have[2]):
                bad.append(f"{s.relpath}: require {name} {ver}, ovniemu 1.14 has {MODEL_BY_NAME[name]}")
    return bad


def rule_has_threads(streams):
    n = sum(1 for s in streams if s.ovni("part") == "thread")
    return [] if n > 0 else ["no thread stream"]


def rule_stream_header(streams):
    bad = []
    for s in streams:
        if len(s.obs) < HEADER_SIZE:
            bad.append(f"{s.relpath}: stream.obs has {len(s.obs)} bytes, less than its header")
            continue
        magic, version = s.obs[:4], struct.unpack_from("<I", s.obs, 4)[0]
        if magic != STREAM_MAGIC:
            bad.append(f"{s.relpath}: magic {magic!r}")
        if version != STREAM_VERSION:
            bad.append(f"{s.relpath}: stream version {version}")
    return bad


def rule_framing(streams):
    return [f"{s.relpath}: {s.events()[1]}" for s in streams if s.events()[1] is not None]


def rule_has_events(streams):
    return [f"{s.relpath}: no events" for s in streams if not s.events()[0]]


def rule_clock_monotonic(streams):
    bad = []
    for s in streams:
        last = 0
        for off, _, mcv, clock, _ in s.events()[0]:
            if clock < last:
                bad.append(f"{s.relpath}: clock goes back {last} -> {clock} at offset {off} ({mcv})")
                break
            last = clock
    return bad


def rule_clock_gate(streams):
    firsts = [(s.relpath, s.events()[0][0][3]) for s in streams if s.events()[0]]
    if not firsts:
        return ["no events at all"]
    t0 = firsts[0][1]
    return [f"{rel}: first clock {c} is {abs(c - t0) / 3.6e12:.2f} h from {firsts[0][0]}"
            for rel, c in firsts if abs(c - t0) > ONE_HOUR_NS]


def rule_models_enabled(streams):
    required = set()
    for s in streams:
        req = s.ovni("require")
        if isinstance(req, dict):
            required |= set(req)
    bad = []
    for s in streams:
        for off, _, mcv, _, _ in s.events()[0]:
            mid = mcv[0]
            if mid not in MODELS:
                bad.append(f"{s.relpath}: {mcv} at offset {off}: no emulator model '{mid}'")
                break
            if MODELS[mid][0] not in required:
                bad.append(f"{s.relpath}: {mcv} at offset {off}: model {MODELS[mid][0]} not in any ovni.require")
                break
    return bad


# Thread states of the emulator and the OH events allowed in each.
UNKNOWN, RUNNING, PAUSED, DEAD, COOLING, WARMING = range(6)
OH_RULES = {  # value: (states it is allowed from, state after)
    "x": (None, RUNNING),               # any state but RUNNING
    "e": ({RUNNING, COOLING}, DEAD),
    "p": ({RUNNING, COOLING}, PAUSED),
    "r": ({PAUSED, WARMING}, RUNNING),
    "c": ({RUNNING}, COOLING),
    "w": ({PAUSED}, WARMING),
}


def rule_thread_state(streams):
    bad, cpus = [], loom_cpus(streams)
    for s in streams:
        state, ncpus = UNKNOWN, len(cpus[s.ovni("loom")][0])
        for off, _, mcv, _, payload in s.events()[0]:
            if mcv[:2] != "OH" or mcv[2] == "C":
                continue
            rule = OH_RULES.get(mcv[2])
            if rule is None:
                bad.append(f"{s.relpath}: unknown thread event {mcv} at offset {off}")
                break
            allowed, after = rule
            ok = state != RUNNING if allowed is None else state in allowed
            if not ok:
                bad.append(f"{s.relpath}: {mcv} at offset {off} in thread state {state}")
                break
            if mcv == "OHx":
                if len(payload) < 4:
                    bad.append(f"{s.relpath}: OHx at offset {off} without a CPU payload")
                    break
                index = struct.unpack_from("<i", payload)[0]
                if index != -1 and not 0 <= index < ncpus:
                    bad.append(f"{s.relpath}: OHx at offset {off} on CPU index {index}, loom has {ncpus}")
                    break
            state = after
    return bad


# rule id -> check (the ovni source location is in RULE_DOCS below)
RULES = {
    "layout": rule_layout,
    "json_object": rule_json_object,
    "metadata_version": rule_metadata_version,
    "part_thread": rule_part_thread,
    "loom_name": rule_loom_name,
    "pid_tid": rule_pid_tid,
    "finished": rule_finished,
    "app_id": rule_app_id,
    "rank": rule_rank,
    "rank_whole_loom": rule_rank_whole_loom,
    "loom_cpus": rule_loom_cpus,
    "lib_version": rule_lib_version,
    "require": rule_require,
    "has_threads": rule_has_threads,
    "stream_header": rule_stream_header,
    "framing": rule_framing,
    "has_events": rule_has_events,
    "clock_monotonic": rule_clock_monotonic,
    "clock_gate": rule_clock_gate,
    "models_enabled": rule_models_enabled,
    "thread_state": rule_thread_state,
}

# Reference traces that the real tools refuse, and the rule that says why
# (tests/data/ovni/v3/README.md): the rule must find the problem there.
REFUSED = {
    ("clock_monotonic", "ovni-sort-unsorted"),   # "clock goes backwards"
    ("thread_state", "bench-mix-small"),         # OHx repeated: not model-consistent
}

# Rules that weft's libovni output breaks (none found): rule id -> reason.
WEFT_BREAKS = {}


# ---- Producing weft traces ---------------------------------------------------

def build_dir():
    candidates = []
    if os.environ.get("WEFT_BUILD_DIR"):
        candidates.append(Path(os.environ["WEFT_BUILD_DIR"]))
    candidates.append(Path(weftlib.WEFT).resolve().parent)
    for c in candidates:
        if (c / "libovni.so").exists():
            return c
    pytest.fail(f"no libovni.so in {candidates}: build the `ovni` target and set WEFT_BUILD_DIR")


RANKS_PROGRAM = r"""
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <ovni.h>

static int rank;

static void ev(const char *mcv, const void *p, int n)
{
	struct ovni_ev e = { 0 };
	ovni_ev_set_mcv(&e, mcv);
	ovni_ev_set_clock(&e, ovni_clock_now());
	if (n > 0)
		ovni_payload_add(&e, p, n);
	ovni_ev_emit(&e);
}

static void *second(void *arg)
{
	(void) arg;
	int32_t ohx[4] = { 1, 0, 0, 0 };
	ovni_thread_init((pid_t) syscall(SYS_gettid));
	ev("OHx", ohx, sizeof(ohx));
	ovni_mark_push(3, 7);
	ovni_mark_pop(3, 7);
	ev("OHe", NULL, 0);
	ovni_thread_free();
	return NULL;
}

int main(int argc, char **argv)
{
	rank = atoi(argv[1]);
	int32_t ohx[4] = { rank % 2, -1, 0, 0 };
	ovni_version_check();
	ovni_proc_init(2, "h1check.ranks", getpid());
	ovni_thread_init((pid_t) syscall(SYS_gettid));
	ovni_proc_set_rank(rank, 3);
	if (rank < 2) { /* the same CPUs, declared by two processes */
		ovni_add_cpu(0, 10);
		ovni_add_cpu(1, 11);
	}
	ovni_mark_type(3, OVNI_MARK_STACK, "Phase");
	ev("OHx", ohx, sizeof(ohx));
	pthread_t th;
	pthread_create(&th, NULL, second, NULL);
	ev("OHp", NULL, 0);
	ev("OHw", NULL, 0);
	ev("OHr", NULL, 0);
	pthread_join(th, NULL);
	ev("OHc", NULL, 0);
	ev("OHe", NULL, 0);
	ovni_thread_free();
	ovni_proc_fini();
	return 0;
}
"""


def run_checked(cmd, **kw):
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, **kw)
    assert proc.returncode == 0, f"{cmd}: exit {proc.returncode}\n{proc.stderr[:2000]}"
    return proc


@pytest.fixture(scope="session")
def weft_traces(tmp_path_factory):
    """name -> trace directory, written by weft's libovni."""
    bdir = build_dir()
    tmp = tmp_path_factory.mktemp("libovni_emu_checks")
    traces = {}

    exe = bdir / "examples" / "ovni_workers"
    assert exe.is_file(), f"{exe} not built"
    workers = tmp / "workers"
    env = dict(os.environ, OVNI_TRACEDIR=str(workers))
    run_checked([str(exe), str(workers)], env=env)
    traces["workers"] = workers

    cc = shutil.which(os.environ.get("CC", "cc")) or shutil.which("cc")
    assert cc, "no C compiler to build the rank test program"
    src = tmp / "ranks.c"
    src.write_text(RANKS_PROGRAM)
    prog = tmp / "ranks"
    cflags = []
    cache = bdir / "CMakeCache.txt"
    if cache.exists() and "WEFT_SANITIZE:BOOL=ON" in cache.read_text():
        cflags = ["-fsanitize=address,undefined"]  # the library needs the runtime
    run_checked([cc, "-std=c11", *cflags, "-o", str(prog), str(src), f"-I{REPO / 'include'}",
                 f"-L{bdir}", f"-Wl,-rpath,{bdir}", "-lovni", "-pthread"])
    ranks = tmp / "ranks_trace"
    for r in range(3):
        run_checked([str(prog), str(r)], env=dict(os.environ, OVNI_TRACEDIR=str(ranks)))
    traces["ranks"] = ranks
    return traces


def check(rule, streams):
    return RULES[rule](streams)


# ---- The rules, one test each, on weft's traces and on the references -------
#
# Each rule gives two tests: test_<rule>_weft on both weft traces and
# test_<rule>_ref on every reference trace.

_loaded = {}


def weft_streams(weft_traces, name):
    key = ("weft", name)
    if key not in _loaded:
        _loaded[key] = load_trace(weft_traces[name])
    return _loaded[key]


def ref_streams(name):
    key = ("ref", name)
    if key not in _loaded:
        _loaded[key] = load_trace(weftlib.v3_dir(name) / "ovni")
    return _loaded[key]


def assert_accepted(rule, streams, what):
    bad = check(rule, streams)
    assert bad == [], f"{what}: rule {rule} refuses the trace:\n" + "\n".join(bad[:20])


def assert_ref(rule, name):
    bad = check(rule, ref_streams(name))
    if (rule, name) in REFUSED:
        assert bad, f"ref:{name} is refused by ovniemu ({rule}) but the check finds nothing"
    else:
        assert bad == [], f"ref:{name}: rule {rule} refuses the trace:\n" + "\n".join(bad[:20])


def make_rule_test(rule, doc):
    @pytest.mark.parametrize("source", ["workers", "ranks"])
    def test_weft(weft_traces, source):
        assert_accepted(rule, weft_streams(weft_traces, source), f"weft:{source}")

    if rule in WEFT_BREAKS:
        test_weft = pytest.mark.xfail(strict=True, reason=WEFT_BREAKS[rule])(test_weft)

    @pytest.mark.parametrize("name", weftlib.v3_traces())
    def test_ref(name):
        assert_ref(rule, name)

    test_weft.__doc__ = doc
    test_ref.__doc__ = doc
    return test_weft, test_ref


RULE_DOCS = {
    "layout": """Streams are found by walking the trace directory for stream.obs files
    (src/emu/trace.c, trace_load and its nftw callback); each stream directory
    must also hold stream.json (src/emu/stream.c, stream_load). libovni puts
    them at loom.<loom>/proc.<pid>/thread.<tid> (src/rt/ovni.c, mkdir_proc and
    mkdir_thread; doc/user/runtime/trace_spec.md).""",
    "json_object": """stream.json must parse as JSON and be an object
    (src/emu/stream.c, load_json); ovnidump loads it too (stream_load).""",
    "metadata_version": """The top-level "version" must be present and equal
    OVNI_METADATA_VERSION, 3 (src/emu/metadata.c, check_version, called from
    metadata_load_proc).""",
    "part_thread": """ovni.part must be a string; streams whose part is not "thread"
    are ignored with a warning, so every libovni stream must say "thread"
    (src/emu/system.c, is_thread_stream, called from create_system).""",
    "loom_name": """ovni.loom must be a string (src/emu/loom.c, loom_name) without
    '/' (src/emu/loom.c, loom_init_begin).""",
    "pid_tid": """ovni.pid and ovni.tid must be non-zero numbers (src/emu/proc.c,
    proc_stream_get_pid; src/emu/thread.c, thread_stream_get_tid), and a tid
    appears once per process (src/emu/system.c, create_thread;
    src/emu/proc.c, proc_add_thread).""",
    "finished": """ovni.finished must be 1, else the stream is taken as
    incomplete and the trace refused (src/emu/thread.c, thread_load_metadata).""",
    "app_id": """ovni.app_id, where present, must be > 0 and the same in all the
    streams of a process (src/emu/proc.c, load_appid); every process needs one
    (src/emu/proc.c, proc_init_end: "appid not set").""",
    "rank": """ovni.rank is optional; when present it must be >= 0, come with
    ovni.nranks > 0, be below nranks, and agree across the streams of the
    process (src/emu/proc.c, load_rank).""",
    "rank_whole_loom": """If one process of a loom has a rank, all processes of
    that loom must have one (src/emu/loom.c, loom_set_rank_min).""",
    "loom_cpus": """ovni.loom_cpus, where present, is a non-empty array of
    {index, phyid}, both >= 0; the arrays of all streams of a loom are merged
    (the same phyid must keep its index, an index cannot get another phyid:
    src/emu/loom.c, load_cpus and loom_add_cpu); afterwards the loom must have
    at least one CPU and the indices must be exactly 0..N-1 (src/emu/loom.c,
    loom_init_end).""",
    "lib_version": """ovni.lib.version and ovni.lib.commit must be strings in every
    thread stream (src/emu/system.c, report_libovni_version).""",
    "require": """ovni.require is mandatory (src/emu/model.c, should_enable); each
    version of a model the emulator knows must parse as X.Y.Z (version_parse)
    and be compatible with the emulator's model version: same major, minor
    not newer (src/emu/model.c, should_enable and model_version_probe; the
    1.14 model versions are those of data/ovni-event-signatures.tsv). libovni
    always requires the ovni model (src/rt/ovni.c, ovni_thread_init).""",
    "has_threads": """At least one thread stream: the ovni model's probe fails on a
    system without threads (src/emu/ovni/probe.c, ovni_probe).""",
    "stream_header": """stream.obs must be non-empty (src/emu/stream.c,
    load_stream_fd), hold the whole 8-byte header, start with the magic
    "ovni" and carry stream version 1 (src/emu/stream.c, check_stream_header).
    ovnidump applies the same loader.""",
    "framing": """Events are walked by their size (12-byte header, payload size
    from the low 4 flag bits as n+1, or for the jumbo flag 0x10 a u32 size
    plus that many bytes: src/rt/ovni.c, ovni_payload_size); an event running
    past the end of the file is an error (src/emu/stream.c, stream_step).""",
    "has_events": """Every stream needs a first event: a zero-event stream is only a
    warning when loaded (src/emu/stream.c, load_obs) but the player then reads
    the current event of every stream to compare start clocks
    (src/emu/player.c, check_clock_gate), which such a stream does not have.""",
    "clock_monotonic": """Within a stream the clock, read as a signed 64-bit value
    and starting from 0, must never go backwards (src/emu/stream.c,
    stream_step: "clock goes backwards"); the merged order must not either
    (src/emu/player.c, update_clocks).""",
    "clock_gate": """The first clocks of all the streams must lie within one hour of
    the first stream's, unless a clock offset table is given
    (src/emu/player.c, check_clock_gate, run by player_init for ovniemu and
    ovnidump).""",
    "models_enabled": """Each event's model letter must belong to an emulator
    model, and that model must be enabled by the ovni.require of at least one
    thread (src/emu/model.c, model_event: "model not registered" / "not
    enabled ... missing call to ovni_thread_require"). Applied to every event
    as it is emulated.""",
    "thread_state": """Thread-state events of the ovni model, checked per thread as
    they are emulated (src/emu/ovni/event.c, pre_thread and pre_thread_execute,
    pre_thread_end, pre_thread_pause, pre_thread_resume, pre_thread_cool,
    pre_thread_warm): OHx needs a thread not running and a CPU index payload
    that is -1 or one of the loom's (src/emu/loom.c, loom_get_cpu); OHe and
    OHp need running or cooling; OHr paused or warming; OHc running; OHw
    paused.""",
}

assert set(RULE_DOCS) == set(RULES)

for _rule, _doc in RULE_DOCS.items():
    _w, _r = make_rule_test(_rule, _doc)
    globals()[f"test_{_rule}_weft"] = _w
    globals()[f"test_{_rule}_ref"] = _r
del _rule, _doc, _w, _r


# ---- The checks do catch broken traces ----------------------------------------

def _edit_json(path, fn):
    meta = json.loads(path.read_text())
    fn(meta)
    path.write_text(json.dumps(meta))


def _first(trace, name):
    return sorted(Path(trace).rglob(name))[0]


BREAKAGES = {
    "metadata_version": lambda t: _edit_json(_first(t, "stream.json"), lambda m: m.update(version=2)),
    "finished": lambda t: _edit_json(_first(t, "stream.json"), lambda m: m["ovni"].pop("finished")),
    "part_thread": lambda t: _edit_json(_first(t, "stream.json"), lambda m: m["ovni"].update(part="proc")),
    "require": lambda t: _edit_json(_first(t, "stream.json"),
                                    lambda m: m["ovni"]["require"].update(nosv="2.8.0")),
    "rank": lambda t: _edit_json(_first(t, "stream.json"),
                                 lambda m: m["ovni"].update(rank=5, nranks=3)),
    "loom_cpus": lambda t: _edit_json(_first(t, "stream.json"),
                                      lambda m: m["ovni"].update(loom_cpus=[{"index": 1, "phyid": 0}])),
    "stream_header": lambda t: _first(t, "stream.obs").write_bytes(
        b"ovnj" + _first(t, "stream.obs").read_bytes()[4:]),
    "framing": lambda t: _first(t, "stream.obs").write_bytes(_first(t, "stream.obs").read_bytes()[:-1]),
    "clock_monotonic": lambda t: _swap_clocks(_first(t, "stream.obs")),
}


def _swap_clocks(path):
    """Moves the first event's clock past the second's."""
    buf = bytearray(path.read_bytes())
    evs = Stream(path.parent.parent, path).events()[0]
    (o1, _, _, _, _), (_, _, _, c2, _) = evs[0], evs[1]
    struct.pack_into("<q", buf, o1 + 4, c2 + 1)
    path.write_bytes(bytes(buf))


@pytest.mark.parametrize("rule", sorted(BREAKAGES))
def test_check_finds_breakage(weft_traces, tmp_path, rule):
    """Each check refuses a copy of weft's workers trace broken on purpose in
    the way its rule forbids (so an accepted trace is a real result)."""
    trace = tmp_path / "trace"
    shutil.copytree(weft_traces["workers"], trace)
    assert check(rule, load_trace(trace)) == [], "the unbroken copy must pass"
    BREAKAGES[rule](trace)
    assert check(rule, load_trace(trace)), f"breaking the trace for {rule} went unnoticed"


def test_weft_traces_exercise_the_rules(weft_traces):
    """The weft traces contain what the rules look at, so that accepting them
    means something: several processes and threads, ranks, CPUs merged from
    two processes, jumbo events, marks and every OH transition."""
    w = weft_streams(weft_traces, "workers")
    r = weft_streams(weft_traces, "ranks")
    assert len(w) == 4 and len(r) == 6
    assert len(procs_of(r)) == 3
    # rank/nranks in the stream of the thread that set them, as in libovni
    assert sorted(s.ovni("rank") for s in r if s.ovni("rank") is not None) == [0, 1, 2]
    assert {s.ovni("app_id") for s in r} == {2}
    assert sum(1 for s in r if "loom_cpus" in s.ovni_obj()) == 2
    assert loom_cpus(r)["h1check.ranks"][0] == {10: 0, 11: 1}
    mcvs = {e[2] for s in w + r for e in s.events()[0]}
    assert {"OHx", "OHp", "OHw", "OHr", "OHc", "OHe", "VYc", "OM[", "OM]"} <= mcvs
    assert any(e[1] & EV_JUMBO for s in w for e in s.events()[0])
