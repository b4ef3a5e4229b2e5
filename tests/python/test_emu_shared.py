# SPDX-License-Identifier: MIT
"""The emulated Paraver and Perfetto outputs of an ovni trace with its looms
shared among threads (outputs/emu_shared.c): `weft convert -t paraver` (or
`-t perfetto`) `--threads N` writes, byte for byte, what one emulator
writes, and says
what it says (warnings counted across looms, the reading's notes), for
N = 4 and 6 (one part fewer than the threads), on every reference case of
several looms and on traces put together from the cases' looms:

- six real nOS-V runtime traces (one loom each), whose warnings (`ignoring
  old event OCn`) are counted across the looms and whose reading note is
  said once;
- those with a loom whose emulation fails: one emulator stops at the
  failing event, so the conversion is done again on one thread
  (`--verbose` says so), with and without --allow-loss.

With --verbose, "threads used" tells that the parts ran (the pipeline of
one emulator uses two, the parts one per loom up to N - 1). The same traces on ranks: tests/mpi/
test_mpi_convert.py."""

import json
import shutil
from pathlib import Path

import pytest

import weftlib
from weftlib import run_weft

EMU_DATA = weftlib.DATA_DIR / "ovni-emu"
FILES = ["thread.prv", "cpu.prv", "thread.pcf", "cpu.pcf", "thread.row", "cpu.row"]
RUNTIME_CASES = ["rt-nosv-attach", "rt-nosv-init-nested", "rt-nosv-nosv-pthread",
                 "rt-nosv-resubmit-race", "rt-nosv-several-tasks-level-0",
                 "rt-nosv-attach-instr"]
FAILING_CASE = "emu-nosv-bad-double-execute"
VERBOSE_LINES = ("opening:", "opened ", "converting:", "converting again",
                 "writing:", "threads used:", "done in")


def looms(trace):
    """The loom directories of a trace."""
    return sorted(p for p in Path(trace).iterdir() if p.name.startswith("loom."))


def multi_loom_cases():
    """The reference cases whose trace has two looms or more."""
    return sorted(p.name for p in EMU_DATA.iterdir()
                  if (p / "ovni").is_dir() and len(looms(p / "ovni")) >= 2)


def make_runtime_mix(root):
    """The looms of the real nOS-V runtime cases in one trace."""
    trace = Path(root) / "ovni"
    trace.mkdir(parents=True)
    for case in RUNTIME_CASES:
        for loom in looms(EMU_DATA / case / "ovni"):
            shutil.copytree(loom, trace / loom.name)
    return trace


def make_failing_mix(root):
    """Four looms that emulate well and one (rank 4, loom vm.9) whose
    emulation fails at an event (a task body nested over itself)."""
    trace = Path(root) / "ovni"
    shutil.copytree(EMU_DATA / "emu-nosv-mp-rank" / "ovni", trace)
    bad = trace / "loom.vm.9"
    shutil.copytree(looms(EMU_DATA / FAILING_CASE / "ovni")[0], bad)
    for meta in bad.rglob("stream.json"):
        doc = json.loads(meta.read_text())
        doc["ovni"]["loom"] = "vm.9"
        doc["ovni"]["rank"] = 4
        meta.write_text(json.dumps(doc, indent=4))
    return trace


def files(out):
    """{name: bytes} of an emulated Paraver output (a directory) or a
    Perfetto one (a file); empty when none."""
    out = Path(out)
    if out.suffix == ".pftrace":
        return {"trace.pftrace": out.read_bytes()} if out.exists() else {}
    return {f: (out / f).read_bytes() for f in FILES if (out / f).exists()}


def out_name(base, output):
    return Path(f"{base}.pftrace") if output == "perfetto" else Path(base)


def quiet(stderr):
    """stderr without the --verbose lines (times and threads)."""
    return "".join(line for line in stderr.splitlines(keepends=True)
                   if not any(line.startswith("weft convert: " + v) for v in VERBOSE_LINES))


def threads_used(stderr):
    for line in stderr.splitlines():
        if line.startswith("weft convert: threads used: "):
            return int(line.rsplit(" ", 1)[1])
    raise AssertionError("no 'threads used' line:\n" + stderr)


def check_shared(tmp_path, trace, extra=(), again=False, output="paraver"):
    """--threads 4 and 6 against --threads 1: the same files, stderr and
    status; the parts ran (one a loom at most, one thread fewer than asked:
    more than the two of one emulator's pipeline but for two looms or
    streams) and,
    when `again`, the conversion was done again on one thread."""
    one = run_weft("convert", trace, "-t", output, "--threads", "1", *extra,
                   "-o", out_name(tmp_path / "one", output))
    assert one.returncode in (0, 1, 2), one.stderr
    want = files(out_name(tmp_path / "one", output))
    assert (want != {}) == (one.returncode != 2), one.stderr
    nlooms = len(looms(trace))
    nstreams = len(list(Path(trace).rglob("stream.obs")))
    for threads in (4, 6):
        out = out_name(tmp_path / f"threads{threads}", output)
        got = run_weft("convert", trace, "-t", output, "--threads", threads, *extra,
                       "--verbose", "-o", out)
        what = f"{output} of {trace} on {threads} threads {list(extra)}"
        assert got.returncode == one.returncode, what + "\n" + got.stderr
        assert quiet(got.stderr) == one.stderr, what
        assert files(out) == want, what
        assert ("converting again on one thread" in got.stderr) == again, what
        if not again:
            # the threads asked, at most one a stream (core/parts.c), one
            # of them merging, and at most one part a loom
            assert threads_used(got.stderr) == min(min(threads, nstreams) - 1, nlooms), what
    return one


OUTPUTS = ("paraver", "perfetto")


@pytest.mark.parametrize("output", OUTPUTS)
@pytest.mark.parametrize("case", multi_loom_cases())
def test_reference_case_on_threads(tmp_path, case, output):
    check_shared(tmp_path, EMU_DATA / case / "ovni", output=output)


@pytest.mark.parametrize("output", OUTPUTS)
def test_warnings_counted_across_looms(tmp_path, output):
    trace = make_runtime_mix(tmp_path / "mix")
    one = check_shared(tmp_path, trace, output=output)
    assert one.returncode == 0, one.stderr
    # each loom warns; one emulator counts them under the first
    assert "warning: ignoring old event OCn (6 times)" in one.stderr
    assert one.stderr.count("note: OCn has 8 payload bytes") == 1


@pytest.mark.parametrize("output", OUTPUTS)
@pytest.mark.parametrize("extra", [[], ["--allow-loss"]])
def test_a_failing_loom_is_converted_again_on_one_thread(tmp_path, extra, output):
    trace = make_failing_mix(tmp_path / "mix")
    one = check_shared(tmp_path, trace, extra, again=True, output=output)
    assert one.returncode == (1 if extra else 2), one.stderr
    assert "cannot nest body(id=1,taskid=2)" in one.stderr


def test_perfetto_window_not_shared(tmp_path):
    trace = make_runtime_mix(tmp_path / "mix")
    one = run_weft("convert", trace, "-t", "perfetto", "--threads", "1", "--from", "1",
                   "-o", tmp_path / "one.pftrace", expect=0)
    got = run_weft("convert", trace, "-t", "perfetto", "--threads", "6", "--from", "1",
                   "--verbose", "-o", tmp_path / "six.pftrace", expect=0)
    assert quiet(got.stderr) == one.stderr
    assert threads_used(got.stderr) <= 3  # the pipeline and the encoder's writer
    assert (tmp_path / "one.pftrace").read_bytes() == (tmp_path / "six.pftrace").read_bytes()


def test_not_shared_with_a_window_or_breakdowns(tmp_path):
    """A time window (the state at its start is every row's) and the
    breakdown traces (rows sorted over every loom's CPUs) are one
    emulator's: the pipeline (two threads), the same bytes."""
    trace = make_runtime_mix(tmp_path / "mix")
    for name, extra in (("window", ["--from", "1"]), ("breakdown", ["--breakdown"])):
        one = run_weft("convert", trace, "-t", "paraver", "--threads", "1", *extra,
                       "-o", tmp_path / f"{name}1", expect=0)
        got = run_weft("convert", trace, "-t", "paraver", "--threads", "6", *extra,
                       "--verbose", "-o", tmp_path / f"{name}6", expect=0)
        assert quiet(got.stderr) == one.stderr, name
        assert threads_used(got.stderr) <= 2, name
        names = sorted(p.name for p in (tmp_path / f"{name}1").iterdir())
        for f in names:
            if (tmp_path / f"{name}1" / f).is_file():
                assert (tmp_path / f"{name}6" / f).read_bytes() == \
                    (tmp_path / f"{name}1" / f).read_bytes(), (name, f)
