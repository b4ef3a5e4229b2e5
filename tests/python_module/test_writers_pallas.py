# SPDX-License-Identifier: MIT
"""weft.PallasWriter (docs/python.md, "Writing traces"): traces written from
Python read back, through weft.open() and `weft dump --json`, with every
record kind, payload field and attribute; traces of tests/data rewritten
event by event; misuse and errors."""

import os
import re
import subprocess

import numpy as np
import pytest

import weft
from conftest import DATA, weft_bin
from writerlib import assert_same_events, by_time, command_events, module_events


def mpi_thread(w, t, rank, world, expected):
    """Every record kind on thread t (rank `rank` of 2), with the events
    weft reads appended to `expected`."""
    stream = "archive_%d/thread_%d" % (rank, rank)

    def rec(call, code, time, *args, fields=None, **attrs):
        getattr(t, call)(*args, time, **attrs)
        expected.append({"time": time, "end": time, "stream": stream, "code": code,
                         "fields": fields or {}})

    peer = 1 - rank
    compute = w.region("compute")
    rec("enter", "Enter", 100, "compute", iters=3, who="rank %d" % rank, frac=0.5, small=7,
        neg=-2, fields={"region": "compute", "region_ref": compute, "iters": 3,
                        "who": "rank %d" % rank, "frac": 0.5, "small": 7, "neg": -2})
    rec("leave", "Leave", 200, compute, fields={"region": "compute", "region_ref": compute})
    msg = {"peer": peer, "comm": world, "tag": 7, "length": 4096}
    rec("mpi_send", "MPI_Send", 300, peer, world, 7, 4096, fields=msg)
    rec("mpi_recv", "MPI_Recv", 310, peer, world, 7, 4096, fields=msg)
    rec("mpi_isend", "MPI_Isend", 320, peer, world, 7, 4096, 99, fields=msg | {"request": 99})
    rec("mpi_isend_complete", "MPI_IsendComplete", 330, 99, fields={"request": 99})
    rec("mpi_irecv_request", "MPI_IrecvRequest", 340, 2**64 - 1, fields={"request": 2**64 - 1})
    rec("mpi_irecv", "MPI_Irecv", 350, peer, world, 7, 4096, 98, fields=msg | {"request": 98})
    rec("mpi_collective_begin", "MPI_CollectiveBegin", 360)
    rec("mpi_collective_end", "MPI_CollectiveEnd", 370, 3, world, 0, 10, 20,
        fields={"op": 3, "comm": world, "root": 0, "sent": 10, "received": 20})
    rec("generic", "Generic", 380, "tick", fields={"name": "tick", "name_ref": w.string("tick")})
    rec("omp_fork", "OMP_Fork", 390, 4, fields={"requested_threads": 4})
    rec("omp_acquire_lock", "OMP_AcquireLock", 391, 1, fields={"lock": 1})
    rec("omp_release_lock", "OMP_ReleaseLock", 392, 1, fields={"lock": 1})
    for i, (call, code) in enumerate((("omp_task_create", "OMP_TaskCreate"),
                                      ("omp_task_switch", "OMP_TaskSwitch"),
                                      ("omp_task_complete", "OMP_TaskComplete"))):
        rec(call, code, 393 + i, 5, fields={"task": 5})
    rec("omp_join", "OMP_Join", 396)
    rec("thread_fork", "ThreadFork", 400, 2, fields={"requested_threads": 2})
    rec("thread_acquire_lock", "ThreadAcquireLock", 401, 3, fields={"lock": 3})
    rec("thread_release_lock", "ThreadReleaseLock", 402, 3, fields={"lock": 3})
    for i, name in enumerate(("ThreadTeamBegin", "ThreadBegin", "ThreadTaskCreate",
                              "ThreadTaskSwitch", "ThreadTaskComplete", "ThreadEnd",
                              "ThreadTeamEnd", "ThreadJoin")):
        call = "thread_" + re.sub(r"(?<!^)([A-Z])", r"_\1", name[6:]).lower()
        rec(call, name, 410 + i)


def write_mpi(path, **options):
    """Two ranks (one thread each) with every record kind and typed attributes."""
    expected = []
    with weft.PallasWriter(path, **options) as w:
        ranks = [w.process("rank 0"), w.process("rank 1")]
        locs = [w.location("thread %d" % r, process=r) for r in ranks]
        world = w.comm("MPI_COMM_WORLD", locs)
        w.attribute("small", "u8", "a byte")
        w.attribute("neg", "i16")
        w.metadata("program", "test")
        for r in ranks:
            mpi_thread(w, w.thread(locs[r]), r, world, expected)
    return expected


def test_every_record_and_attribute_comes_back(tmp_path):
    expected = write_mpi(tmp_path / "trace")
    assert sorted(os.listdir(tmp_path / "trace")) == ["archive_0", "archive_1", "main.pallas"]
    assert_same_events(tmp_path / "trace", expected)
    with weft.open(tmp_path / "trace") as t:
        meta = t.metadata
        df = t.to_pandas(fields=["iters", "who", "frac", "small", "neg"])
    assert meta["metadata"] == {"program": "test"}
    assert meta["definitions"]["comms"] == 1 and meta["definitions"]["attributes"] == 5
    # ints i64 unless declared (small: u8, neg: i16), floats double, str string
    assert [str(df[c].dtype) for c in ("iters", "who", "frac", "small", "neg")] == [
        "Int64", "object", "float64", "UInt64", "Int64"]


def test_the_comparison_can_fail(tmp_path):
    expected = write_mpi(tmp_path / "trace")
    expected[0]["fields"]["iters"] = 4
    with pytest.raises(AssertionError):
        assert_same_events(tmp_path / "trace", expected)


@pytest.mark.parametrize("options", [dict(compression="raw", layout="compact"),
                                     dict(loop_finding="none", compress_threads=0),
                                     dict(delta_timestamps=True, zstd_level=1)])
def test_options(tmp_path, options):
    expected = write_mpi(tmp_path / "trace", **options)
    assert_same_events(tmp_path / "trace", expected)


def test_weft_check_finds_no_problem(tmp_path):
    write_mpi(tmp_path / "trace")
    r = subprocess.run([weft_bin(), "check", str(tmp_path / "trace")], capture_output=True,
                       text=True, check=False)
    assert r.returncode == 0, r.stdout + r.stderr


def stream_ids(path):
    """(archive, thread) of a stream path archive_A/thread_T."""
    m = re.fullmatch(r"archive_(\d+)/thread_(\d+)", path)
    return int(m[1]), int(m[2])


@pytest.mark.parametrize("name", ["weft_order", "wb_enterleave_f3_n1000_t2_logical",
                                  "wb_generic_f2_n20_t4_logical"])
def test_rewrite_a_trace_of_tests_data(tmp_path, name):
    """Read with to_pandas(fields=True), written back event by event
    (processes, threads, regions and names as the trace has them), read
    again: the same events, through the module and the command."""
    src = DATA / "pallas" / name / "trace"
    with weft.open(src) as t:
        df = t.to_pandas(fields=True)
        nodes = t.nodes
    out = tmp_path / "copy"
    with weft.PallasWriter(out) as w:
        for n in nodes:  # processes then their threads, with their ids and names
            if n["kind"] == "archive":
                w.process(n["metadata"]["name"], id=n["number"])
        for n in nodes:
            if n["kind"] == "thread":
                group = stream_ids(n["path"])[0]
                w.location(n["metadata"]["name"], process=group, id=n["number"])
        for i in range(len(df)):
            t = w.thread(stream_ids(str(df["stream"].iat[i]))[1])
            code, time = str(df["code"].iat[i]), int(df["time"].iat[i])
            if code in ("Enter", "Leave"):
                region = w.region(df["region"].iat[i], ref=int(df["region_ref"].iat[i]))
                (t.enter if code == "Enter" else t.leave)(region, time)
            else:
                assert code == "Generic"
                t.generic(df["name"].iat[i], time)
    def without_name_refs(events):  # the string refs are the writer's
        for e in events:
            e["fields"].pop("name_ref", None)
        return events

    expected = without_name_refs(module_events(src))
    assert len(expected) == len(df) > 0
    assert without_name_refs(module_events(out)) == expected  # the same order too
    assert by_time(without_name_refs(command_events(out))) == by_time(expected)


@pytest.mark.parametrize("name", ["wb_enterleave_f3_n1000_t2_logical",
                                  "wb_enterleave_f3_n1000_t2_logical_None",
                                  "wb_generic_f2_n2000_t4_logical", "write_pattern"])
def test_rewrite_gives_the_files_of_pallas(tmp_path, name):
    """Traces written by Pallas 0.20 (docs/pallas-writer.md, "Byte
    compatibility") rewritten from Python with their definitions in ref
    order, their settings and their events: every file is Pallas's, byte
    for byte."""
    src = DATA / "pallas" / name / "trace"
    with weft.open(src) as t:
        df = t.to_pandas(fields=True)
        nodes, meta = t.nodes, t.metadata
    defs, settings = meta["definitions"], meta["settings"]
    out = tmp_path / "copy"
    compression = {"ZSTD": "zstd", "None": "raw"}[settings["compression"]]
    with weft.PallasWriter(out, compression=compression,
                           zstd_level=settings["zstd_level"]) as w:
        for ref in sorted(defs["strings"], key=int):
            assert w.string(defs["strings"][ref]) == int(ref)
        for ref in sorted(defs["regions"], key=int):
            w.region(defs["regions"][ref], ref=int(ref))
        for n in nodes:
            if n["kind"] == "archive":
                w.process(n["metadata"]["name"], id=n["number"], parent=n["metadata"]["parent"])
        for n in nodes:
            if n["kind"] == "thread":
                w.location(n["metadata"]["name"], process=stream_ids(n["path"])[0],
                           id=n["number"])
        for i in range(len(df)):
            t = w.thread(stream_ids(str(df["stream"].iat[i]))[1])
            code, time = str(df["code"].iat[i]), int(df["time"].iat[i])
            if code == "Generic":
                t.generic(int(df["name_ref"].iat[i]), time)
            else:
                (t.enter if code == "Enter" else t.leave)(int(df["region_ref"].iat[i]), time)
    files = sorted(p.relative_to(src) for p in src.rglob("*") if p.is_file())
    assert sorted(p.relative_to(out) for p in out.rglob("*") if p.is_file()) == files
    for f in files:
        assert (out / f).read_bytes() == (src / f).read_bytes(), f


def test_time_going_backwards(tmp_path):
    with weft.PallasWriter(tmp_path / "t") as w:
        t = w.thread(w.location("main"))
        t.enter("a", 10)
        with pytest.raises(weft.ArgumentError,
                           match=r"archive_0/thread_0: time 5 is before .* \(10\)"):
            t.leave("a", 5)
        assert t.last_time == 10
        t.leave("a", 10)  # equal times are fine
    assert [e["time"] for e in module_events(tmp_path / "t")] == [10, 10]


def test_bad_attributes(tmp_path):
    with weft.PallasWriter(tmp_path / "t") as w:
        t = w.thread(w.location("main"))
        w.attribute("byte", "u8")
        w.attribute("text", "string")
        for bad in (True, None, [1], b"x"):
            with pytest.raises(TypeError, match="attribute flag"):
                t.generic("e", 1, flag=bad)
        with pytest.raises(OverflowError, match="attribute byte"):
            t.generic("e", 1, byte=256)
        with pytest.raises(TypeError, match="attribute byte"):
            t.generic("e", 1, byte=1.5)
        with pytest.raises(TypeError, match="attribute text"):
            t.generic("e", 1, text=3)
        with pytest.raises(weft.ArgumentError, match="unknown type"):
            w.attribute("x", "u128")
        with pytest.raises(OverflowError, match="argument 1"):
            t.mpi_send(2**32, 0, 0, 0, 1)
        with pytest.raises(weft.ArgumentError, match="not defined"):
            w.thread(99)
        with pytest.raises(weft.ArgumentError, match="at most 127"):
            t.generic("e", 1, **{"a%d" % i: i for i in range(128)})
        with pytest.raises(ValueError, match="record kind 99"):  # the C part's own checks
            t._record(99, 1, None)
        with pytest.raises(TypeError, match="tuples"):
            t._record(2, 1, (1, 2, 3), 1)
        t.generic("kept", 2, byte=255, text="ok")
    assert module_events(tmp_path / "t") == [
        {"time": 2, "end": 2, "stream": "archive_0/thread_0", "code": "Generic",
         "fields": {"name": "kept", "name_ref": w._strings["kept"], "byte": 255, "text": "ok"}}]


def test_nesting_beyond_what_pallas_reads(tmp_path):
    """The library refuses the 99th open block (WEFT_EUNSUPPORTED: a
    weft.FormatError); the thread goes on."""
    with weft.PallasWriter(tmp_path / "t") as w:
        t = w.thread(w.location("main"))
        for i in range(98):
            t.enter("r%d" % i, i)
        with pytest.raises(weft.FormatError, match="98 nested blocks"):
            t.enter("deep", 100)
        t.generic("after", 101)
    assert len(module_events(tmp_path / "t")) == 99


def test_write_after_close(tmp_path):
    w = weft.PallasWriter(tmp_path / "t")
    t = w.thread(w.location("main"))
    t2 = w.thread(w.location("second"))
    t2.enter("a", 1)
    t2.close()
    assert t2.closed and not t.closed
    with pytest.raises(weft.Error, match="thread_1: the thread is closed"):
        t2.leave("a", 2)
    t.enter("a", 1)
    w.close()
    assert w.closed and t.closed
    w.close()  # harmless
    t.close()  # harmless
    for call in (lambda: t.leave("a", 2), lambda: w.region("b"), lambda: w.location("x")):
        with pytest.raises(weft.Error, match="Pallas writer is closed"):
            call()
    assert len(module_events(tmp_path / "t")) == 2


def test_exception_inside_with_writes_no_trace(tmp_path):
    with pytest.raises(KeyError):
        with weft.PallasWriter(tmp_path / "t") as w:
            w.thread(w.location("main")).enter("a", 1)
            raise KeyError("stop")
    assert w.closed
    assert not (tmp_path / "t" / "main.pallas").exists()
    assert not any(p.name.endswith(".pallas") for p in (tmp_path / "t").rglob("*"))
    with pytest.raises(weft.NotFoundError):
        weft.open(tmp_path / "t")


def test_existing_trace_and_bad_places(tmp_path):
    write_mpi(tmp_path / "trace")
    before = (tmp_path / "trace" / "main.pallas").read_bytes()
    with pytest.raises(weft.Error, match="exists"):
        weft.PallasWriter(tmp_path / "trace")
    assert (tmp_path / "trace" / "main.pallas").read_bytes() == before
    write_mpi(tmp_path / "trace", replace=True, sync=True)
    (tmp_path / "file").write_text("")
    with pytest.raises(weft.NotFoundError) as e:  # ENOTDIR, as Python's FileNotFoundError
        weft.PallasWriter(tmp_path / "file" / "trace")
    assert e.value.file == str(tmp_path / "file" / "trace")
    long = tmp_path / ("x" * 300)
    with pytest.raises(weft.IOError) as e:  # a name longer than a file name may be
        weft.PallasWriter(long)
    assert isinstance(e.value, OSError) and e.value.file == str(long)
    with pytest.raises(weft.ArgumentError, match="compression"):
        weft.PallasWriter(tmp_path / "x", compression="lz4")
    with pytest.raises(weft.ArgumentError, match="layout"):
        weft.PallasWriter(tmp_path / "x", layout="other")


def test_a_dataframe_of_the_written_trace_has_its_attributes(tmp_path):
    with weft.PallasWriter(tmp_path / "t", name="run") as w:
        t = w.thread(w.location("main"))
        for i in range(1000):  # a loop: the grammar finds it
            t.enter("step", 10 * i, i=i)
            t.leave("step", 10 * i + 5, bytes=np.uint64(2**64 - 1))
    assert (tmp_path / "t" / "run.pallas").exists()
    with weft.open(tmp_path / "t") as tr:
        df = tr.to_pandas(fields=["i", "bytes"])
        spans = tr.spans()
    assert df["i"].dropna().tolist() == list(range(1000))
    assert df["bytes"].dropna().unique().tolist() == [2**64 - 1]
    assert len(spans) == 1000 and (spans["duration"] == 5).all()
