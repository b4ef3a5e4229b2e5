# SPDX-License-Identifier: MIT
"""`weft sort` shared among threads (--threads N) and MPI ranks
(`mpiexec -n R weft-mpi sort`): each sorts its share of the streams, and
the files, the report, the message and the exit status are those of one
process sorting stream after stream, also when a stream in the middle
cannot be sorted (one process stops there: the streams after it stay as
they were). The unsorted streams are the patterns of ovni's own sort
tests (test_ovni_sort_cases.py)."""

import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python"))
from test_ovni_sort_cases import SORTED as CASES  # noqa: E402
from test_mpi_commands import run  # noqa: E402
from weftlib import WEFT, ovni_event, write_ovni_stream  # noqa: E402

PATTERNS = sorted(CASES)


def make_trace(root, damaged=None):
    """16 streams on 4 looms: every other one unsorted (a pattern of
    CASES), the others in order; `damaged`: that stream's last event is
    cut (a truncated tail, which sort refuses to rewrite)."""
    for i in range(16):
        loom, pid, tid = f"node{i // 4}", 100 + i // 4, 1000 + i
        if i % 2:
            events = CASES[PATTERNS[i % len(PATTERNS)]]()
        else:
            events = [ovni_event("OHx", 1)] + [ovni_event("OB.", 10 + k) for k in range(i)] \
                + [ovni_event("OHe", 100)]
        write_ovni_stream(root, events, loom=loom, pid=pid, tid=tid)
    streams = sorted(Path(root).glob("loom.*/proc.*/thread.*/stream.obs"))
    assert len(streams) == 16
    if damaged is not None:
        data = streams[damaged].read_bytes()
        streams[damaged].write_bytes(data[:-3])
    return root


def tree(root):
    return {str(p.relative_to(root)): p.read_bytes()
            for p in sorted(Path(root).rglob("*")) if p.is_file()}


def copies(tmp_path, damaged, names):
    original = make_trace(tmp_path / "original", damaged)
    out = {}
    for name in names:
        shutil.copytree(original, tmp_path / name)
        out[name] = tmp_path / name
    return original, out


def runs(mpi_runner):
    mpiexec, runner = mpi_runner
    yield "threads2", lambda args: run([WEFT] + args + ["--threads", "2"])
    yield "threads4", lambda args: run([WEFT] + args + ["--threads", "4"])
    for ranks in (2, 4):
        yield f"ranks{ranks}", lambda args, r=ranks: run([mpiexec, "-n", r, runner] + args)


@pytest.mark.parametrize("damaged", [None, 0, 5, 9, 15])
@pytest.mark.parametrize("check", [False, True])
def test_shared_sort_leaves_what_one_process_leaves(mpi_runner, tmp_path, damaged, check):
    ways = dict(runs(mpi_runner))
    original, traces = copies(tmp_path, damaged, ["serial"] + list(ways))
    args = ["sort"] + (["--check"] if check else [])
    expected = run([WEFT] + args + ["--threads", "1", traces["serial"]])
    assert expected.returncode == (2 if damaged is not None else 1 if check else 0), \
        expected.stderr
    if damaged is None:
        assert "unsorted streams: 8" in expected.stdout
    want = tree(traces["serial"])
    if not check and damaged is not None:
        # one process sorted the streams before the damaged one, not after
        before = tree(original)
        assert want != before or damaged == 0
    for name, way in ways.items():
        got = way(args + [traces[name]])
        what = f"sort {args} of a trace damaged at {damaged}, {name}"
        assert got.returncode == expected.returncode, what + "\n" + got.stderr
        assert got.stdout == expected.stdout, what
        assert got.stderr.replace(str(traces[name]), "T") == \
            expected.stderr.replace(str(traces["serial"]), "T"), what
        assert tree(traces[name]) == want, what


def test_each_rank_sorts_its_own_share(mpi_runner, tmp_path):
    """The ranks share the sorting, not only its result: in an MPMD run
    where rank 1 is given another copy of the trace (its metadata comes
    from rank 0, its streams' files from its own copy), each copy has
    exactly the streams of one rank's share sorted, and the two shares
    together are the serial sort. A sort done by rank 0 alone would leave
    rank 1's copy untouched."""
    mpiexec, runner = mpi_runner
    original, traces = copies(tmp_path, None, ["serial", "zero", "one"])
    assert run([WEFT, "sort", "--threads", "1", traces["serial"]]).returncode == 0
    got = run([mpiexec, "-n", 1, runner, "sort", traces["zero"], ":",
               "-n", 1, runner, "sort", traces["one"]])
    assert got.returncode == 0, got.stderr
    before, want = tree(original), tree(traces["serial"])
    zero, one = tree(traces["zero"]), tree(traces["one"])
    changed = {f for f in want if want[f] != before[f]}
    assert len(changed) == 8  # the unsorted streams
    by_zero = {f for f in changed if zero[f] == want[f]}
    by_one = {f for f in changed if one[f] == want[f]}
    assert by_zero and by_one and by_zero.isdisjoint(by_one), (by_zero, by_one)
    assert by_zero | by_one == changed
    for f in changed - by_zero:
        assert zero[f] == before[f], f
    for f in changed - by_one:
        assert one[f] == before[f], f
