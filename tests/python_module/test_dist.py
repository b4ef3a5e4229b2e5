# SPDX-License-Identifier: MIT
"""weft.open(path, comm=...): the library's collectives over the caller's
communicator (python/src/dist.c). A communicator of 2 and 3 processes
over pipes plays mpi4py's (the four methods weft calls: Get_rank,
Get_size, gather, bcast); rank 0's profile() equals the profile of one
process, byte for byte as JSON, whatever the number of ranks, and each
rank read only its share (its own part differs from the whole)."""

import multiprocessing
import os

import pytest

import weft
from conftest import DATA

TRACES = ["ovni/v3/mpi-func-4procs/ovni", "ovni/v3/nosv-parallel-tasks/ovni",
          "heph/heph_sample.bin.log", "otf2/mpi-threads/traces.otf2"]


class PipeComm:
    """Ranks joined by one pipe each to rank 0: gather and bcast of
    picklable objects with root 0, as mpi4py's lower-case methods."""

    def __init__(self, rank, size, conns):
        self.rank, self.size, self.conns = rank, size, conns

    def Get_rank(self):
        return self.rank

    def Get_size(self):
        return self.size

    def gather(self, obj, root=0):
        assert root == 0
        if self.rank == 0:
            return [obj] + [c.recv() for c in self.conns]
        self.conns[0].send(obj)
        return None

    def bcast(self, obj, root=0):
        assert root == 0
        if self.rank == 0:
            for c in self.conns:
                c.send(obj)
            return obj
        return self.conns[0].recv()


def profile_json(trace, by):
    return trace.profile(by=by).to_json(orient="records")


def rank_main(rank, size, conns, path, by, out):
    """One rank: opens collectively, profiles collectively, reports."""
    try:
        with weft.open(path, comm=PipeComm(rank, size, conns)) as trace:
            out.send(("ok", profile_json(trace, by)))
    except Exception as e:  # sent to the test, which fails with it
        out.send(("error", repr(e)))


def convert_options(to):
    """Perfetto and Paraver: the generic mapping, which the ranks share
    (ovni's models emulated run on rank 0)."""
    return {"emulate": False} if to in ("perfetto", "paraver") else {}


def rank_convert_main(rank, size, conns, path, target, out):
    """One rank: opens collectively, converts (target: (directory, output))
    collectively."""
    out_dir, to = target
    try:
        with weft.open(path, comm=PipeComm(rank, size, conns)) as trace:
            report = trace.convert(out_dir, to=to, **convert_options(to))
            out.send(("ok", report["data_lost"]))
    except Exception as e:
        out.send(("error", repr(e)))


def run_ranks(size, path, by, kill_rank=None, main=rank_main):
    ctx = multiprocessing.get_context("spawn")
    to_root = [ctx.Pipe() for _ in range(size - 1)]
    results = [ctx.Pipe(duplex=False) for _ in range(size)]
    procs = []
    for rank in range(size):
        conns = [a for a, _ in to_root] if rank == 0 else [to_root[rank - 1][1]]
        p = ctx.Process(target=main, args=(rank, size, conns, path, by, results[rank][1]))
        p.start()
        procs.append(p)
    got = [r.recv() if r.poll(120) else ("error", "no answer") for r, _ in results]
    for p in procs:
        p.join(30)
    return got


@pytest.mark.parametrize("name", TRACES)
@pytest.mark.parametrize("by", ["name", "stream"])
def test_rank_0_profiles_the_whole_trace(name, by):
    path = str(DATA / name)
    with weft.open(path) as trace:
        whole = profile_json(trace, by)
        streams = len(trace.stream_paths)
    for size in (2, 3):
        got = run_ranks(size, path, by)
        assert all(status == "ok" for status, _ in got), got
        assert got[0][1] == whole, f"{name} by {by} on {size} ranks"
        if by == "stream" and streams >= size and "heph" not in name:
            # rank 1 read its share alone: its part is not the whole
            assert got[1][1] != whole


def tree(path):
    if os.path.isfile(path):
        return {".": open(path, "rb").read()}
    return {os.path.relpath(os.path.join(d, f), path): open(os.path.join(d, f), "rb").read()
            for d, _, files in os.walk(path) for f in files}


@pytest.mark.parametrize("to", ["pallas", "otf2", "chrome", "perfetto", "paraver"])
@pytest.mark.parametrize("name", TRACES)
def test_ranks_convert_what_one_process_writes(name, to, tmp_path):
    """convert(to="pallas" or "otf2") on a shared trace is collective:
    each rank writes its streams' thread or event files, rank 0 the
    definitions; the files are one process's. The viewers: each rank
    reads its streams, rank 0 merges them a chunk at a time through the
    communicator's gather and writes the files, one process's bytes."""
    path = str(DATA / name)
    with weft.open(path) as trace:
        (tmp_path / "serial").mkdir()
        trace.convert(str(tmp_path / "serial" / "out"), to=to, **convert_options(to))
    for size in (2, 3):
        out = tmp_path / f"ranks{size}"
        out.mkdir()
        got = run_ranks(size, path, (str(out / "out"), to), main=rank_convert_main)
        assert all(status == "ok" for status, _ in got), got
        assert tree(out) == tree(tmp_path / "serial"), f"{name} on {size} ranks"
        assert tree(out), f"{name} to {to}: nothing written"


def test_a_communicator_of_one_is_no_communicator():
    path = str(DATA / TRACES[0])
    with weft.open(path) as alone, weft.open(path, comm=PipeComm(0, 1, [])) as one:
        assert profile_json(one, "name") == profile_json(alone, "name")


class BrokenComm(PipeComm):
    def gather(self, obj, root=0):
        raise RuntimeError("the network is down")


def test_what_the_communicator_raises_is_raised():
    """A communicator that fails: opening fails with its exception (one
    process plays rank 0 of 2; rank 1's bcast never comes, so the
    exception must surface before it is awaited)."""
    with pytest.raises(RuntimeError, match="the network is down"):
        weft.open(str(DATA / TRACES[0]), comm=BrokenComm(0, 2, []))


@pytest.mark.parametrize("bad", [("Get_size", 0), ("Get_rank", 5)])
def test_a_communicator_with_bad_numbers_is_refused(bad):
    class Bad(PipeComm):
        pass
    setattr(Bad, bad[0], lambda self: bad[1])
    with pytest.raises(weft.ArgumentError, match=bad[0]):
        weft.open(str(DATA / TRACES[0]), comm=Bad(0, 2, []))
