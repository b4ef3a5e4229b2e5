# SPDX-License-Identifier: MIT
"""`weft convert -t paraver` of an ovni trace, emulated (docs/emulation.md),
against the real ovniemu 1.14.0's own output on the same trace.

The cases are the traces of ovniemu's reference corpus (ovni 1.14's
emulator tests of every model and real nOS-V runtime traces) copied into
tests/data/ovni-emu/<case>/ (`ovni/` the trace, `ovniemu/` what ovniemu
wrote and its log), plus, where it is next to the checkout, every other
case of the whole corpus (../shared/refdata/ovni-emu).

- a case ovniemu accepts: thread.prv and cpu.prv (and, for the cases run
  with ovniemu -b, the breakdown traces) hold the same header and
  the same records (records of one time compared as sets: their order
  within a time is ovniemu's internal channel order), and thread.pcf,
  cpu.pcf, thread.row, cpu.row are byte for byte ovniemu's;
- a case ovniemu refuses: weft refuses it too (exit 2, nothing written)
  naming the same rule as ovniemu's first ERROR line, with the stream
  file and the byte offset of the event (for a refusal during the
  emulation); with --allow-loss it keeps, as ovniemu does, the records
  before the failing event (exit 1);
- a time window gives the records of the window with the state at its
  start.
"""

import gzip
import itertools
import json
import re
from pathlib import Path

import pytest

import weftlib
from weftlib import run_weft

EMU_DATA = weftlib.DATA_DIR / "ovni-emu"
CORPUS = weftlib.REPO_DIR.parent / "shared" / "refdata" / "ovni-emu"
FILES = ["thread.prv", "cpu.prv", "thread.pcf", "cpu.pcf", "thread.row", "cpu.row"]
# The models weft emulates so far (issue 17 lands them one by one); a case
# that needs another is skipped, saying which.
EMULATED = {"ovni", "kernel", "mpi", "tampi", "nodes", "nanos6", "openmp", "nosv"}


def case_dirs():
    """Case name -> directory: the copies first, then the rest of the corpus."""
    cases = {}
    for root in (EMU_DATA, CORPUS):
        if not root.is_dir():
            continue
        for d in sorted(root.iterdir()):
            if (d / "ovni").is_dir() and (d / "ovniemu" / "ovniemu.log").exists():
                cases.setdefault(d.name, d)
    return cases


CASES = case_dirs()


def golden(case_dir, name):
    """A golden file's text ('' when ovniemu wrote none); .gz copies too."""
    p = case_dir / "ovniemu" / name
    if p.exists():
        return p.read_text()
    gz = p.with_name(name + ".gz")
    return gzip.decompress(gz.read_bytes()).decode() if gz.exists() else ""


def ovniemu_args(case_dir):
    """The extra flags ctest gave ovniemu (first line of written.txt): -a, -b."""
    written = case_dir / "ovniemu" / "written.txt"
    words = written.read_text().split("\n", 1)[0].split() if written.exists() else []
    return (["--all-models"] if "-a" in words else []) + \
        (["--breakdown"] if "-b" in words else [])


def first_error(case_dir):
    """The rule of ovniemu's first ERROR line (without its function), or None."""
    for line in (case_dir / "ovniemu" / "ovniemu.log").read_text().splitlines():
        if "ERROR: " in line:
            rule = line.split("ERROR: ", 1)[1]
            return rule.split(": ", 1)[1] if ": " in rule else rule
    return None


def case_models(case_dir):
    """The models ovniemu enabled for the case (its log), or those the
    threads require when it refused the trace before saying."""
    log = (case_dir / "ovniemu" / "ovniemu.log").read_text().splitlines()
    models = set()
    for line in itertools.dropwhile(lambda l: "models are enabled" not in l, log):
        m = re.match(r"ovniemu: INFO: +(\w+) [0-9.]+ '.' \(", line)
        if m:
            models.add(m.group(1))
    if not models:
        for js in (case_dir / "ovni").rglob("stream.json"):
            models |= set(json.loads(js.read_text())["ovni"].get("require", {}))
    return models


def skip_unless_emulated(case_dir):
    rule = first_error(case_dir) or ""
    named = re.match(r"model (\w+) not enabled", rule)
    missing = (case_models(case_dir) | ({named.group(1)} if named else set())) - EMULATED
    if missing:
        pytest.skip(f"model(s) {', '.join(sorted(missing))} not emulated yet")


def records_by_time(text):
    """A .prv's header, and its records with those of one time sorted."""
    lines = text.splitlines()
    recs = []
    for _, group in itertools.groupby(lines[1:], key=lambda l: int(l.split(":")[5])):
        recs += sorted(group)
    return lines[0], recs


def convert(case_dir, out, *args, expect=None):
    """weft convert --emulate as ovniemu ran; ovni's views are not copied
    (--no-ovni-cfg: the same output whether ovni is installed or not)."""
    return run_weft("convert", case_dir / "ovni", "-t", "paraver", "--emulate",
                    "-o", out, "--no-ovni-cfg", *ovniemu_args(case_dir), *args,
                    expect=expect)


def tree(root):
    """The files below `root`, by their path relative to it, with their text."""
    if not root.is_dir():
        return {}
    return {str(p.relative_to(root)): p.read_text() for p in root.rglob("*") if p.is_file()}


@pytest.mark.parametrize("case", sorted(CASES))
def test_same_output_as_ovniemu(tmp_path, case):
    case_dir = CASES[case]
    skip_unless_emulated(case_dir)
    rule = first_error(case_dir)
    out = tmp_path / "out"
    if rule is not None:
        proc = convert(case_dir, out, expect=2)
        assert rule in proc.stderr, (case, rule, proc.stderr)
        assert not out.exists()
        return
    proc = convert(case_dir, out, expect=0)
    assert "error" not in proc.stderr, proc.stderr
    breakdowns = [f"{m}-breakdown.{x}" for m in ("nosv", "nanos6") for x in ("prv", "pcf", "row")]
    for name in breakdowns:
        assert (out / name).exists() == bool(golden(case_dir, name)), (case, name)
    for name in FILES + [b for b in breakdowns if (out / b).exists()]:
        ours, theirs = (out / name).read_text(), golden(case_dir, name)
        if name.endswith(".prv"):
            assert records_by_time(ours) == records_by_time(theirs), (case, name)
        else:
            assert ours == theirs, (case, name)
    # the views ovniemu makes for the trace (hardware counters), byte for
    # byte; a trace without them gets no cfg/ (ovniemu's copied views are
    # not in the goldens)
    assert tree(out / "cfg") == tree(case_dir / "ovniemu" / "cfg"), case


def fake_ovni_views(root):
    """A directory laid out as ovni's share/ovni: two views, and what is
    not a view (a README, a file too deep, a hidden directory)."""
    (root / "thread" / "nosv").mkdir(parents=True)
    (root / "cpu" / "ovni" / "a" / "b").mkdir(parents=True)
    (root / "thread" / ".git").mkdir()
    (root / "thread" / "nosv" / "task-type.cfg").write_text("#ParaverCFG\nthread view\n")
    (root / "cpu" / "ovni" / "pid.cfg").write_text("#ParaverCFG\ncpu view\n")
    (root / "cpu" / "ovni" / "README").write_text("not a view")
    (root / "cpu" / "ovni" / "a" / "b" / "deep.cfg").write_text("too deep")
    (root / "thread" / ".git" / "x.cfg").write_text("hidden")
    return {"thread/nosv/task-type.cfg": "#ParaverCFG\nthread view\n",
            "cpu/ovni/pid.cfg": "#ParaverCFG\ncpu view\n"}


def test_ovni_views_are_copied(tmp_path, monkeypatch):
    """--ovni-cfg DIR copies ovni's views into OUT/cfg/ next to the ones
    made for the trace; $OVNI_CONFIG_DIR is the default place, as for
    ovniemu; --no-ovni-cfg copies none; a directory without views, --raw
    and -t perfetto are refused before anything is written."""
    case_dir = CASES["emu-nosv-hwc"]
    views = tmp_path / "share-ovni"
    want = fake_ovni_views(views)
    made = tree(case_dir / "ovniemu" / "cfg")
    trace = case_dir / "ovni"
    out = tmp_path / "out"
    proc = run_weft("convert", trace, "-t", "paraver", "--ovni-cfg", views, "-o", out,
                    expect=0)
    assert tree(out / "cfg") == {**want, **made}
    assert "2 Paraver views of ovni copied" in proc.stderr
    monkeypatch.setenv("OVNI_CONFIG_DIR", str(views))
    run_weft("convert", trace, "-t", "paraver", "-o", tmp_path / "env", expect=0)
    assert tree(tmp_path / "env" / "cfg") == {**want, **made}
    run_weft("convert", trace, "-t", "paraver", "--no-ovni-cfg", "-o", tmp_path / "none",
             expect=0)
    assert tree(tmp_path / "none" / "cfg") == made
    monkeypatch.delenv("OVNI_CONFIG_DIR")
    proc = run_weft("convert", trace, "-t", "paraver", "--ovni-cfg", tmp_path / "none",
                    "-o", tmp_path / "bad", expect=2)
    assert "expected a directory of ovni's Paraver views" in proc.stderr
    assert not (tmp_path / "bad").exists()
    proc = run_weft("convert", trace, "-t", "paraver", "--raw", "--ovni-cfg", views,
                    "-o", tmp_path / "raw", expect=2)
    assert "--ovni-cfg is for the emulation" in proc.stderr
    proc = run_weft("convert", trace, "-t", "perfetto", "--ovni-cfg", views,
                    "-o", tmp_path / "o.pftrace", expect=2)
    assert "views are Paraver's" in proc.stderr


def refused_during_emulation():
    """Refused cases whose ovniemu wrote the records up to the failing event."""
    return sorted(c for c, d in CASES.items()
                  if first_error(d) is not None and golden(d, "thread.pcf"))


@pytest.mark.parametrize("case", refused_during_emulation())
def test_refused_trace_keeps_the_records_before_the_error(tmp_path, case):
    """--allow-loss: the same records as ovniemu's up to the failing event,
    the header's duration the time of that event; exit 1. The error names
    the stream file and the event's byte offset in it."""
    case_dir = CASES[case]
    skip_unless_emulated(case_dir)
    out = tmp_path / "out"
    proc = convert(case_dir, out, "--allow-loss", expect=1)
    errors = [l for l in proc.stderr.splitlines() if ": error: " in l]
    assert errors and first_error(case_dir) in errors[0], proc.stderr
    assert "stream.obs" in errors[0], errors[0]
    for name in ("thread.prv", "cpu.prv"):
        assert records_by_time((out / name).read_text()) == \
            records_by_time(golden(case_dir, name)), (case, name)


def test_time_window_cuts_the_records(tmp_path):
    """The records of [from, to] with times from `from`, after the state of
    every row at `from`; the duration is the window's length."""
    case_dir = CASES["emu-ovni-libovni-mark"]
    whole, part = tmp_path / "whole", tmp_path / "part"
    convert(case_dir, whole, expect=0)
    head, recs = records_by_time((whole / "thread.prv").read_text())
    times = sorted({int(r.split(":")[5]) for r in recs})
    lo, hi = times[len(times) // 3], times[2 * len(times) // 3]
    first = first_clock(case_dir)
    convert(case_dir, part, "--from", first + lo, "--to", first + hi, expect=0)
    phead, precs = records_by_time((part / "thread.prv").read_text())
    assert re.search(r"_ns(.*)", phead).group(1) == re.search(r"_ns(.*)", head).group(1)
    assert int(re.search(r"\):(\d+)_ns", phead).group(1)) == hi - lo
    inside = [r for r in recs if lo <= int(r.split(":")[5]) <= hi]
    shifted = [":".join(r.split(":")[:5] + [str(int(r.split(":")[5]) - lo)] + r.split(":")[6:])
               for r in inside]
    at_start = [r for r in precs if int(r.split(":")[5]) == 0]
    assert [r for r in precs if int(r.split(":")[5]) > 0] == \
        [r for r in shifted if int(r.split(":")[5]) > 0]
    # the state at the window's start: the last value of every row channel
    state = {}
    for r in recs:
        f = r.split(":")
        if int(f[5]) <= lo:
            state[(f[4], f[6])] = f[7]
    want = {k: v for k, v in state.items() if v != "0"}
    got = {(r.split(":")[4], r.split(":")[6]): r.split(":")[7] for r in at_start}
    assert got == want


def first_clock(case_dir):
    """The clock of the trace's first event (from `weft dump`)."""
    line = run_weft("dump", case_dir / "ovni", expect=0).stdout.splitlines()[0]
    return int(line.split()[0])


def test_only_ovni_traces_are_emulated(tmp_path):
    heph = next(weftlib.DATA_DIR.glob("heph/**/*.bin.log"), None)
    if heph is None:
        pytest.skip("no Heph trace in the test data")
    proc = run_weft("convert", heph, "-t", "paraver", "--emulate", "-o", tmp_path / "o",
                    expect=2)
    assert "only ovni traces can be emulated" in proc.stderr


def test_out_is_a_directory(tmp_path):
    case_dir = CASES["emu-ovni-mp-simple"] if "emu-ovni-mp-simple" in CASES else \
        CASES["emu-ovni-sort"]
    proc = convert(case_dir, tmp_path / "run.prv", expect=2)
    assert "OUT is a directory" in proc.stderr and "--raw" in proc.stderr
    out = tmp_path / "run"
    convert(case_dir, out, expect=0)
    proc = convert(case_dir, out, expect=2)
    assert "exists; use --force" in proc.stderr
    convert(case_dir, out, "--force", expect=0)
    # --force never replaces a directory that is not an emulated output
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    proc = convert(case_dir, other, "--force", expect=2)
    assert (other / "notes.txt").read_text() == "mine"


@pytest.mark.parametrize("case", sorted(c for c, d in CASES.items()
                                        if (d / "ovniemu-b").is_dir()))
def test_breakdown_written_for_this_repository(tmp_path, case):
    """Cases the corpus ran without -b, whose breakdown traces the real
    ovniemu 1.14.0 wrote for this repository (`ovniemu-b/`, see its
    written.txt): --breakdown gives them byte for byte, and the same
    thread.* and cpu.* as without it."""
    case_dir = CASES[case]
    out = tmp_path / "out"
    convert(case_dir, out, "--breakdown", expect=0)
    for f in sorted((case_dir / "ovniemu-b").glob("*-breakdown.*")):
        assert (out / f.name).read_text() == f.read_text(), (case, f.name)
    for name in FILES:
        assert (out / name).read_text() == golden(case_dir, name), (case, name)
