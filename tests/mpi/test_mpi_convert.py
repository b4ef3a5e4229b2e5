# SPDX-License-Identifier: MIT
"""`weft convert` and `weft table` give the same bytes whatever --threads
says (N = 1, 2, 4: with two or more, one thread reads and merges the
streams while another writes, outputs/pipeline.c; chrome with three or
more the viewers share the streams among threads, outputs/view_shared.c,
also tested on a trace made for it below), and `mpiexec -n R
weft-mpi convert` writes what `weft convert` writes (R = 1, 2, 4: pallas,
otf2 and the viewers shared among the ranks, docs/mpi.md), on traces of
every format and into every output.
A stale pointer into a reused batch of events, or an event handed over
twice or not at all, shows here as a difference."""

import filecmp
import os
import shutil
import struct
from pathlib import Path

import pytest

from test_mpi_commands import TRACES, all_traces, damaged_copy, looms_trace, run  # noqa: F401
from weftlib import DATA_DIR, MPI_RANKS, WEFT, ovni_event, write_ovni_stream

OUTPUTS = ("perfetto", "chrome", "paraver", "pallas", "otf2")


def cases(looms_trace):  # noqa: F811
    """(name, trace, options) of every trace: ovni traces whose threads
    declare their models are converted emulated (the default) and with
    --raw; the generated trace declares none."""
    for name, trace in all_traces(looms_trace).items():
        if name == "ovni-64-looms":
            yield name, trace, ["--raw"]
            continue
        yield name, trace, []
        if name.startswith("ovni-v3"):
            yield name + "-raw", trace, ["--raw"]


def tree(path):
    """{relative name: bytes} of a file, or of the files under a directory."""
    path = Path(path)
    if path.is_file():
        return {".": path.read_bytes()}
    return {str(p.relative_to(path)): p.read_bytes()
            for p in sorted(path.rglob("*")) if p.is_file()}


def outputs_of(base, output):
    """The files an output wrote at `base` (paraver: base.prv, .pcf, .row
    or, emulated, the directory base)."""
    if output == "paraver" and not Path(base).is_dir():
        return {suffix: tree(f"{base}{suffix}") for suffix in (".prv", ".pcf", ".row")
                if Path(f"{base}{suffix}").exists()}
    return tree(base) if Path(base).exists() else {}


def remove(path):
    """Removes an output: a file or a directory."""
    if Path(path).is_dir():
        shutil.rmtree(path)
    else:
        Path(path).unlink()


def convert(prefix, trace, output, out, extra=()):
    return run(prefix + ["convert", trace, "-t", output, "-o", out] + list(extra))


def assert_same_run(expected, got, what):
    assert got.returncode == expected.returncode, what + "\n" + got.stderr
    # messages name the output; the rest must match
    assert got.stdout == expected.stdout, what
    assert got.stderr.replace("/b/", "/a/") == expected.stderr, what


@pytest.mark.parametrize("output", OUTPUTS)
def test_convert_threads_do_not_change_the_output(tmp_path, looms_trace, output):  # noqa: F811
    for name, trace, options in cases(looms_trace):
        (tmp_path / name / "a").mkdir(parents=True)
        reference = tmp_path / name / "a" / "out"
        expected = convert([WEFT], trace, output, reference, options + ["--threads", "1"])
        assert expected.returncode in (0, 1), f"{output} of {name}: {expected.stderr}"
        want = outputs_of(reference, output)
        assert want, f"{output} of {name} wrote nothing"
        for threads in (2, 4):
            out = tmp_path / name / "b" / f"out{threads}"
            out.parent.mkdir(exist_ok=True)
            got = convert([WEFT], trace, output, out, options + ["--threads", str(threads)])
            what = f"{output} of {name} with {threads} threads"
            assert_same_run(expected, got, what)
            assert outputs_of(out, output) == want, what


def make_hard_trace(root):
    """An ovni trace of 12 streams that meets every order-dependent part
    of a viewer's output shared among threads (chrome: docs/mpi.md,
    Converting): events at the same times on every stream (ties broken by
    stream), fresh tids of channels numbered on first use across streams,
    processes of several streams, spans never closed (closed by the view's
    finish, in stream order), and one stream nested past the viewers'
    512 levels."""
    for stream in range(12):
        pid, tid = 100 + stream // 3, 1000 + stream
        clock = 5_000_000_000  # the same times on every stream
        events = [ovni_event("OHx", clock, struct.pack("<iii", 0, -1, 0))]
        tasks = 3 + stream % 4
        for task in range(tasks):
            clock += 100
            events.append(ovni_event("VAs", clock))
            events.append(ovni_event("VTx", clock + 10, struct.pack("<II", task + 1, 1)))
            if stream % 4 == 1 and task == tasks - 1:
                break  # left open: the task body and the API call
            events.append(ovni_event("VTe", clock + 60, struct.pack("<II", task + 1, 1)))
            events.append(ovni_event("VAS", clock + 80))
        if stream == 7:
            for depth in range(600):  # nested deeper than 512
                events.append(ovni_event("VAs", clock + 100 + depth))
        if stream % 4 != 1:
            events.append(ovni_event("OHe", clock + 1000))
        write_ovni_stream(root, events, loom=f"node{stream % 5}", pid=pid, tid=tid,
                          cpus=((0, 0), (1, 1)))
    return root


VIEWERS = ("chrome", "perfetto", "paraver")


@pytest.mark.parametrize("output", VIEWERS)
@pytest.mark.parametrize("extra", [[], ["--allow-loss"]])
def test_viewer_shared_among_threads_writes_what_one_thread_writes(tmp_path, extra, output):
    trace = make_hard_trace(tmp_path / "trace")
    reference = tmp_path / "one.out"
    expected = convert([WEFT], trace, output, reference, ["--raw", "--threads", "1"] + extra)
    # the trace meets what it is made for
    assert "never closed" in expected.stderr
    assert "nested deeper than 512" in expected.stderr
    assert expected.returncode == 1, expected.stderr  # OHx's fields: no model declared
    want = outputs_of(reference, output)
    for threads in (3, 4, 8):
        out = tmp_path / f"threads{threads}.out"
        got = convert([WEFT], trace, output, out, ["--raw", "--threads", str(threads)] + extra)
        what = f"{output} on {threads} threads"
        assert_same_run(expected, got, what)
        assert outputs_of(out, output) == want, what


@pytest.mark.parametrize("output", VIEWERS)
def test_viewer_shared_among_threads_with_a_damaged_stream(tmp_path, looms_trace,  # noqa: F811
                                                           output):
    """A stream that cannot be read to its end: its events up to there,
    the others whole, the same message, on one thread and on four."""
    trace = damaged_copy(tmp_path, 15)
    reference = tmp_path / "one.out"
    expected = convert([WEFT], trace, output, reference, ["--raw", "--threads", "1"])
    assert expected.returncode == 1 and "stream.obs" in expected.stderr, expected.stderr
    out = tmp_path / "four.out"
    got = convert([WEFT], trace, output, out, ["--raw", "--threads", "4"])
    assert_same_run(expected, got, f"{output} on 4 threads")
    assert outputs_of(out, output) == outputs_of(reference, output)


def make_long_trace(root, streams=4, tasks=10000):
    """An ovni trace whose Chrome output is about 11 MB: several chunks
    of records per rank, more than rank 0 asks for at once."""
    for stream in range(streams):
        clock = 1_000_000 + stream * 3
        events = [ovni_event("OHx", clock, struct.pack("<iii", 0, -1, 0))]
        for task in range(tasks):
            clock += 100
            events += [ovni_event("VAs", clock),
                       ovni_event("VTx", clock + 10, struct.pack("<II", task + 1, 1)),
                       ovni_event("VTe", clock + 60, struct.pack("<II", task + 1, 1)),
                       ovni_event("VAS", clock + 80)]
        events.append(ovni_event("OHe", clock + 200))
        write_ovni_stream(root, events, loom=f"node{stream}", pid=10 + stream,
                          tid=100 + stream, cpus=((0, 0), (1, 1)))
    return root


@pytest.mark.parametrize("output", VIEWERS)
def test_viewer_on_ranks_writes_what_one_process_writes(mpi_runner, tmp_path, output):
    """The viewers on ranks: each rank converts its share on its threads
    and sends its records to rank 0 a chunk at a time; the trace made for
    the shared conversion (ties, fresh tids, unclosed, too deep) and a
    long one (several chunks per rank), on 2 and 4 ranks with 1 and 2
    threads each."""
    mpiexec, runner = mpi_runner
    traces = {"hard": make_hard_trace(tmp_path / "hard"),
              "long": make_long_trace(tmp_path / "long")}
    for name, trace in traces.items():
        reference = tmp_path / f"{name}.out"
        expected = convert([WEFT], trace, output, reference, ["--raw", "--threads", "1"])
        assert expected.returncode in (0, 1), expected.stderr
        if name == "long" and output == "chrome":
            assert reference.stat().st_size > 8 << 20
        want = outputs_of(reference, output)
        for ranks, threads in ((2, 1), (2, 2), (4, 1)):
            out = tmp_path / f"{name}-{ranks}-{threads}.out"
            got = convert([mpiexec, "-n", str(ranks), runner], trace, output, out,
                          ["--raw", "--threads", str(threads)])
            what = f"{output} of {name} on {ranks} ranks of {threads} threads"
            assert got.returncode == expected.returncode, what + "\n" + got.stderr
            assert got.stderr == expected.stderr, what
            assert outputs_of(out, output) == want, what


@pytest.mark.parametrize("output", VIEWERS)
def test_viewer_on_ranks_with_a_damaged_stream(mpi_runner, tmp_path, looms_trace,  # noqa: F811
                                               output):
    """A stream that cannot be read to its end, read by another rank: its
    events up to there in rank 0's output, the others whole, and the
    message where one process says it."""
    mpiexec, runner = mpi_runner
    trace = damaged_copy(tmp_path, 15)
    reference = tmp_path / "one.out"
    expected = convert([WEFT], trace, output, reference, ["--raw", "--threads", "1"])
    assert expected.returncode == 1 and "stream.obs" in expected.stderr, expected.stderr
    for ranks in (2, 4):
        out = tmp_path / f"ranks{ranks}.out"
        got = convert([mpiexec, "-n", str(ranks), runner], trace, output, out, ["--raw"])
        assert got.returncode == expected.returncode, got.stderr
        assert got.stderr == expected.stderr
        assert outputs_of(out, output) == outputs_of(reference, output), f"{ranks} ranks"


@pytest.mark.parametrize("output", ("paraver", "perfetto"))
def test_emulation_on_ranks_writes_what_one_emulator_writes(mpi_runner, tmp_path, output):
    """The emulated outputs on ranks: each rank emulates whole looms on
    its threads, rank 0 merges the lines (Paraver) or records (Perfetto),
    counts the warnings and adds the task types (outputs/emu_shared.c); a
    loom whose emulation fails makes rank 0 convert again alone. The
    traces of tests/python/test_emu_shared.py, on 2 and 4 ranks of 1 and 2
    threads."""
    from test_emu_shared import files, make_failing_mix, make_runtime_mix, out_name

    mpiexec, runner = mpi_runner
    traces = {"runtimes": (make_runtime_mix(tmp_path / "runtimes"), [], 0),
              "failing": (make_failing_mix(tmp_path / "failing"), ["--allow-loss"], 1)}
    for name, (trace, extra, status) in traces.items():
        reference = out_name(tmp_path / f"{name}.serial", output)
        expected = convert([WEFT], trace, output, reference, extra + ["--threads", "1"])
        assert expected.returncode == status, expected.stderr
        for ranks, threads in ((2, 1), (2, 2), (4, 1)):
            out = out_name(tmp_path / f"{name}-{ranks}-{threads}", output)
            got = convert([mpiexec, "-n", str(ranks), runner], trace, output, out,
                          extra + ["--threads", str(threads)])
            what = f"{output} of {name} on {ranks} ranks of {threads} threads"
            assert got.returncode == expected.returncode, what + "\n" + got.stderr
            assert got.stderr == expected.stderr, what
            assert files(out) == files(reference) != {}, what


def test_table_threads_do_not_change_the_output(tmp_path):
    run_dir = DATA_DIR / "ross" / "im-everything" / "np1"  # every level
    for level in ("pe", "kp", "lp", "event", "model"):
        reference = tmp_path / f"{level}-1.csv"
        expected = run([WEFT, "table", "--level", level, "--threads", "1", "-o", reference,
                        run_dir])
        assert expected.returncode == 0, expected.stderr
        for threads in (2, 4):
            out = tmp_path / f"{level}-{threads}.csv"
            got = run([WEFT, "table", "--level", level, "--threads", str(threads), "-o", out,
                       run_dir])
            assert got.returncode == 0, got.stderr
            assert filecmp.cmp(reference, out, shallow=False), f"{level}, {threads} threads"


VIEWER_TRACES = ("ovni-v3-mpi", "ovni-v3-nosv", "heph", "pallas", "otf2", "ross",
                 "ovni-64-looms")
SHARED = ("ovni-v3-mpi", "ovni-v3-nosv", "heph", "pallas", "pallas-generic", "otf2", "ross",
          "ovni-64-looms")
RANK_TRACES = {
    # -t pallas and -t otf2 share the streams among the ranks (every
    # format but ROSS, whose streams share their files); the others run on
    # rank 0
    "pallas": SHARED,
    "otf2": SHARED,
    # the viewers: every rank converts its share, rank 0 merges
    # (docs/mpi.md; ovni traces converted emulated share their looms)
    "perfetto": VIEWER_TRACES,
    "chrome": VIEWER_TRACES,
    "paraver": VIEWER_TRACES,
}


@pytest.mark.parametrize("output", sorted(RANK_TRACES))
def test_ranks_convert_what_one_process_converts(mpi_runner, tmp_path, looms_trace,  # noqa: F811
                                                 output):
    mpiexec, runner = mpi_runner
    traces = all_traces(looms_trace)
    for name in RANK_TRACES[output]:
        trace = traces[name]
        options = ["--raw"] if name == "ovni-64-looms" else []
        reference = tmp_path / name / "serial"
        reference.parent.mkdir(parents=True)
        expected = convert([WEFT], trace, output, reference, options + ["--threads", "1"])
        # 1 is fine for the generated trace: the viewers say its OHx fields
        # cannot be decoded (no model declared)
        assert expected.returncode == 0 or (name == "ovni-64-looms" and
                                            expected.returncode == 1), expected.stderr
        for ranks in MPI_RANKS:
            out = tmp_path / name / f"ranks{ranks}"
            got = convert([mpiexec, "-n", str(ranks), runner], trace, output, out, options)
            assert got.returncode == expected.returncode, got.stderr
            assert got.stderr == expected.stderr, f"{output} of {name} on {ranks} ranks"
            assert outputs_of(out, output) == outputs_of(reference, output), \
                f"{output} of {name} on {ranks} ranks"
            # one conversion: no temporary ("OUT.tmp.XXXXXX") left next to the output
            left = [p.name for p in out.parent.iterdir() if ".tmp." in p.name]
            assert left == [], left


def test_ranks_convert_refuses_an_existing_output_once(mpi_runner, tmp_path):
    mpiexec, runner = mpi_runner
    out = tmp_path / "out.pftrace"
    out.write_bytes(b"keep")
    got = convert([mpiexec, "-n", "2", runner], TRACES["ovni-v3-mpi"], "perfetto", out)
    assert got.returncode != 0
    assert got.stderr.count("exists") == 1, got.stderr
    assert out.read_bytes() == b"keep"


DUMPS = {
    "dump": ["dump"],
    "dump-stored-order": ["dump", "--stored-order"],
    "dump-json": ["dump", "--json"],
}


@pytest.mark.parametrize("dump", sorted(DUMPS))
def test_dump_threads_do_not_change_the_output(looms_trace, dump):  # noqa: F811
    """dump with two threads reads and merges on one and formats on the
    other; with three or more the streams are shared (each thread writes
    its share's lines, merged into the serial order on the calling
    thread: outputs/keyed_runs.h), in stored order too (the streams are
    still merged by time)."""
    for name, trace in all_traces(looms_trace).items():
        expected = run([WEFT] + DUMPS[dump] + ["--threads", "1", trace])
        assert expected.returncode == 0 and expected.stdout, f"{dump} of {name}"
        for threads in (2, 4):
            got = run([WEFT] + DUMPS[dump] + ["--threads", str(threads), trace])
            assert got.returncode == 0, got.stderr
            assert got.stdout == expected.stdout, f"{dump} of {name}, {threads} threads"
            assert got.stderr == expected.stderr, f"{dump} of {name}, {threads} threads"


FILTERED_DUMPS = {
    "hex": ["-x"],
    "tree": ["--tree"],
    "streams": ["--stream", "loom.node1*"],
    "codes": ["--mcv", "V*"],
    "window": ["--from", "1001000", "--to", "1003000"],
    "all": ["--json", "--stored-order", "--stream", "*proc.[0-3]*", "--mcv", "O*"],
}


@pytest.mark.parametrize("dump", sorted(FILTERED_DUMPS))
def test_shared_dump_filters_as_one_thread_does(looms_trace, dump):  # noqa: F811
    """The filters apply to each thread's share as to the whole trace:
    the same lines on 1 and 3 threads (two shares)."""
    args = [WEFT, "dump"] + FILTERED_DUMPS[dump]
    expected = run(args + ["--threads", "1", looms_trace])
    assert expected.returncode == 0 and expected.stdout, expected.stderr
    for threads in (3,):
        got = run(args + ["--threads", str(threads), looms_trace])
        assert (got.returncode, got.stdout, got.stderr) == \
            (expected.returncode, expected.stdout, expected.stderr), f"{dump}, {threads} threads"


def test_shared_dump_of_damaged_streams_as_one_thread_does(tmp_path):
    """Two damaged streams, read by different threads: every readable
    line, the same messages, the same exit status. The messages come in
    stream order (as top's and profile's do), whoever read which stream:
    stream 15 fails early (its 7th event), stream 0 late (its last but
    one, at byte 340), so the time order would put stream 15 first."""
    trace = damaged_copy(tmp_path, 15)
    obs = sorted(Path(trace).glob("loom.*/proc.*/thread.*/stream.obs"))
    data = bytearray(obs[0].read_bytes())
    data[340] = 0xff
    obs[0].write_bytes(bytes(data))
    for mode in ([], ["--json"]):
        expected = run([WEFT, "dump", "--threads", "1"] + mode + [trace])
        errors = [line for line in expected.stderr.splitlines() if "error" in line]
        assert expected.stdout and len(errors) == 2, expected.stderr
        assert str(obs[0].relative_to(trace)) + ":340:" in errors[0], errors
        assert str(obs[15].relative_to(trace)) + ":108:" in errors[1], errors
        for threads in (4,):
            got = run([WEFT, "dump", "--threads", str(threads)] + mode + [trace])
            assert (got.returncode, got.stdout, got.stderr) == \
                (expected.returncode, expected.stdout, expected.stderr), f"{threads} threads"


@pytest.mark.parametrize("output", ("perfetto", "pallas", "otf2"))
@pytest.mark.parametrize("stream_index", [0, 5, 15])
def test_ranks_convert_a_damaged_trace_as_one_process_does(mpi_runner, tmp_path, output,
                                                           stream_index):
    """A stream that cannot be read (read by rank 0 or another: pallas
    and otf2 share the streams): the same message (file, byte offset), the same
    exit status and the same output as `weft convert`."""
    mpiexec, runner = mpi_runner
    trace = damaged_copy(tmp_path, stream_index)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    expected = convert([WEFT], trace, output, tmp_path / "a" / "out", ["--raw"])
    assert expected.returncode == 1 and "stream.obs:108: error" in expected.stderr, expected.stderr
    for ranks in (2, 4):
        got = convert([mpiexec, "-n", str(ranks), runner], trace, output,
                      tmp_path / "b" / "out", ["--raw"])
        assert_same_run(expected, got, f"convert of a damaged stream on {ranks} ranks")
        assert tree(tmp_path / "b" / "out") == tree(tmp_path / "a" / "out")
        assert sorted(p.name for p in (tmp_path / "b").iterdir()) == ["out"], "a leftover"
        remove(tmp_path / "b" / "out")


@pytest.mark.parametrize("output", ("pallas", "otf2"))
@pytest.mark.parametrize("stream_index", [0, 5, 15])
def test_shared_threads_convert_a_damaged_trace_as_one_thread_does(tmp_path, output,
                                                                   stream_index):
    """-t pallas and -t otf2 share the streams among the threads (a
    survey of the definitions, then each thread writes its streams' thread
    or event files, outputs/convert_pallas_shared.c): a stream that cannot be read, first,
    in the middle or last, gives the same message (once, though the survey
    reads it too), exit status and files (its thread holds the events
    before the damage)."""
    trace = damaged_copy(tmp_path, stream_index)
    (tmp_path / "a").mkdir()
    expected = convert([WEFT], trace, output, tmp_path / "a" / "out",
                       ["--raw", "--threads", "1"])
    assert expected.returncode == 1 and "stream.obs:108: error" in expected.stderr, \
        expected.stderr
    want = tree(tmp_path / "a" / "out")
    for threads in (2, 4):
        out = tmp_path / "b" / "out"
        out.parent.mkdir(exist_ok=True)
        got = convert([WEFT], trace, output, out, ["--raw", "--threads", str(threads)])
        assert_same_run(expected, got, f"{output} of a damaged stream, {threads} threads")
        assert tree(out) == want, f"{threads} threads"
        assert sorted(p.name for p in out.parent.iterdir()) == ["out"], "a leftover"
        remove(out)


def backwards_trace(root, stream_index):
    """Eight ovni streams on four looms; stream `stream_index` has an event
    whose clock goes back by more than the reader sorts, which the Pallas
    conversion refuses (a thread's events come in time order)."""
    for i in range(8):
        events = [ovni_event("OHx", 100)] + [ovni_event("OB.", 200 + 10 * k)
                                             for k in range(i + 1)]
        if i == stream_index:
            events.append(ovni_event("OB.", 50))
        events.append(ovni_event("OHe", 1000))
        write_ovni_stream(root, events, loom=f"n{i // 2}", pid=10 + i // 2, tid=100 + i)
    return root


@pytest.mark.parametrize("output", ("pallas", "otf2"))
@pytest.mark.parametrize("stream_index", [0, 3, 7])
def test_shared_refuses_an_event_as_one_thread_does(mpi_runner, tmp_path, output, stream_index):
    """An event refused while the streams are surveyed is said as the
    serial conversion says it, with the stream's warning, once; the exit
    status is 2 and nothing is written (the survey's failure sends the
    conversion to rank 0 alone, which meets the event again)."""
    mpiexec, runner = mpi_runner
    trace = backwards_trace(tmp_path / "trace", stream_index)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    expected = convert([WEFT], trace, output, tmp_path / "a" / "out", ["--threads", "1"])
    assert expected.returncode == 2, expected.stderr
    assert expected.stderr.startswith("weft convert: an event was refused: an event at 50 ns"), \
        expected.stderr
    assert "warning: clock goes backwards" in expected.stderr
    runs = [([WEFT], ["--threads", "2"]), ([WEFT], ["--threads", "4"]),
            ([mpiexec, "-n", "2", runner], []), ([mpiexec, "-n", "4", runner], [])]
    for prefix, extra in runs:
        got = convert(prefix, trace, output, tmp_path / "b" / "out", extra)
        assert_same_run(expected, got, f"{prefix} {extra}")
        assert list((tmp_path / "b").iterdir()) == [], "an output or a leftover"


@pytest.mark.parametrize("step,message", [("follow", "cannot survey the streams"),
                                          ("plan", "cannot convert the streams")])
@pytest.mark.parametrize("rank", [1, 3])
@pytest.mark.parametrize("output", ("pallas", "otf2"))
def test_shared_ranks_end_together_when_one_runs_out_of_memory(mpi_runner, tmp_path, step,
                                                                message, rank, output):
    """A rank other than 0 that cannot make its part of the conversion
    (WEFT_TEST_PALLAS_FAIL=follow@R) or hold the plan (plan@R) as if out
    of memory still takes part in every collective, failing it: rank 0
    says which rank failed, every rank ends (no hang: the run's timeout),
    exit status 2, and nothing is left next to the output."""
    mpiexec, runner = mpi_runner
    (tmp_path / "out").mkdir()
    env = dict(os.environ, WEFT_TEST_PALLAS_FAIL=f"{step}@{rank}")
    got = run([mpiexec, "-n", "4", runner, "convert", TRACES["ovni-v3-mpi"], "-t", output,
               "-o", tmp_path / "out" / "trace"], env=env)
    assert got.returncode == 2, got.stderr
    assert got.stderr == f"weft convert: {message}: rank {rank}: out of memory\n"
    assert list((tmp_path / "out").iterdir()) == [], "an output or a leftover"


@pytest.mark.parametrize("output,name", [("chrome", "trace.json"),
                                         ("paraver", "trace")])
@pytest.mark.parametrize("step,rank", [("parts", 0), ("parts", 1), ("parts", 3),
                                       ("follow", 1), ("follow", 3)])
def test_viewer_ranks_end_together_when_one_runs_out_of_memory(mpi_runner, tmp_path, step,
                                                               rank, output, name):
    """A viewer on ranks: a rank whose parts cannot start
    (WEFT_TEST_SHARE_FAIL=parts@R), or whose follower cannot be made
    (follow@R: it takes part without an output of its own), as if out of
    memory, still answers every round and the combination, failing it:
    rank 0 says which rank failed, every rank ends (no hang: the run's
    timeout; Chrome's first time is exchanged by the failed follower
    too), exit status 2, and nothing is left next to the output (no
    partial file under the final name)."""
    mpiexec, runner = mpi_runner
    (tmp_path / "out").mkdir()
    env = dict(os.environ, WEFT_TEST_SHARE_FAIL=f"{step}@{rank}")
    got = run([mpiexec, "-n", "4", runner, "convert", "--raw", TRACES["ovni-v3-mpi"], "-t",
               output, "-o", tmp_path / "out" / name], env=env)
    assert got.returncode == 2, got.stderr
    who = f"rank {rank}: " if rank else ""
    assert got.stderr == f"weft convert: cannot convert the streams: {who}out of memory\n"
    assert list((tmp_path / "out").iterdir()) == [], "an output or a leftover"


@pytest.mark.parametrize("output", ("pallas", "otf2"))
@pytest.mark.parametrize("budget", ["20", "60"])
def test_shared_over_the_string_budget_is_converted_as_one_thread_does(
        mpi_runner, tmp_path, budget, output):
    """Which string values the serial conversion keeps as attributes
    depends on the order it meets them, up to a budget of bytes (16 MiB;
    WEFT_TEST_PALLAS_VALUE_BUDGET lowers it for tests): over it the plan of
    the shared conversion is not the serial one and rank 0 converts alone.
    The files are the same (without that fallback they differ here)."""
    mpiexec, runner = mpi_runner
    env = dict(os.environ, WEFT_TEST_PALLAS_VALUE_BUDGET=budget)
    for name in ("heph", "otf2"):
        trace = TRACES[name]
        reference = tmp_path / name / "serial"
        reference.parent.mkdir(parents=True)
        expected = run([WEFT, "convert", trace, "-t", output, "-o", reference,
                        "--threads", "1"], env=env)
        assert expected.returncode == 0 and "not kept" in expected.stderr, expected.stderr
        runs = [([WEFT], ["--threads", "2"]), ([WEFT], ["--threads", "4"]),
                ([mpiexec, "-n", "2", runner], [])]
        for i, (prefix, extra) in enumerate(runs):
            out = tmp_path / name / f"run{i}"
            got = run(prefix + ["convert", trace, "-t", output, "-o", out] + extra, env=env)
            assert got.returncode == 0, got.stderr
            assert got.stderr == expected.stderr, f"{name}: {prefix} {extra}"
            assert tree(out) == tree(reference), f"{name}, budget {budget}: {prefix} {extra}"


@pytest.mark.parametrize("output", ("perfetto", "paraver"))
def test_convert_threads_report_a_refused_emulation_alike(tmp_path, looms_trace, output):  # noqa: F811
    """The generated trace's threads run nOS-V events without requiring
    the model: the emulation refuses it (in the writer's thread when there
    are two), and the messages, the exit status and what --allow-loss
    keeps are the same."""
    for options in ([], ["--allow-loss"]):
        runs = []
        for threads in (1, 2):
            out = tmp_path / f"out-{threads}-{len(options)}"
            got = convert([WEFT], looms_trace, output, out,
                          options + ["--threads", str(threads)])
            runs.append((got.returncode, got.stderr.replace(out.name, "OUT"),
                         outputs_of(out, output)))
        assert runs[0][0] == (1 if options else 2), runs[0][1]
        assert "model nosv not enabled" in runs[0][1]
        assert runs[1] == runs[0], f"{output} {options}"
