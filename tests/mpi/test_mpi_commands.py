# SPDX-License-Identifier: MIT
"""`mpiexec -n R weft-mpi COMMAND` prints exactly what `weft COMMAND`
prints (stdout, stderr and exit code), for R = 1, 2 and 4, on traces of
every format and on a generated ovni trace of 64 looms; and `--threads N`
gives the same output for N = 1, 2 and 4. Ranks share the streams (by
bytes) and combine their tables (weft/dist.h): a table merged by order of
arrival or a stream counted twice or not at all shows here."""

import os
import re
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from weftlib import DATA_DIR, MPI_RANKS as RANKS, WEFT, ovni_event, write_ovni_stream

TRACES = {
    "ovni-v3-mpi": DATA_DIR / "ovni" / "v3" / "mpi-func-4procs",
    "ovni-v3-nosv": DATA_DIR / "ovni" / "v3" / "nosv-parallel-tasks",
    "heph": DATA_DIR / "heph" / "heph_sample.bin.log",
    "pallas": DATA_DIR / "pallas" / "wb_enterleave_f3_n1000_t2_logical" / "trace",
    "pallas-generic": DATA_DIR / "pallas" / "wb_generic_f2_n2000_t4_logical" / "trace",
    "ross": DATA_DIR / "ross" / "im-everything" / "np1",
    "otf2": DATA_DIR / "otf2" / "mpi-threads",
}

COMMANDS = {
    "top": ["top", "--streams"],
    "top-time": ["top", "--time"],
    "profile": ["profile"],
    "profile-stream": ["profile", "--by", "stream"],
    "info": ["info"],
    "check": ["check"],
    "check-sorted": ["check", "--sorted"],
}


def first_trace(directory):
    """The first trace directory under `directory` (the v1 and v2 samples)."""
    return sorted(p for p in Path(directory).iterdir() if p.is_dir())[0]


def make_looms_trace(root, looms=64, threads=2):
    """An ovni trace of `looms` looms of one process of `threads` threads:
    nOS-V-like task bodies (VTx .. VTe inside VAs .. VAS), a different
    number per stream so that the streams' sizes differ."""
    for loom in range(looms):
        pid = 1000 + loom
        for t in range(threads):
            tid = pid * 10 + t
            clock = 1_000_000 + loom * 13 + t * 7
            events = [ovni_event("OHx", clock, struct.pack("<iii", t, -1, 0))]
            for task in range(5 + (loom * 7 + t * 3) % 40):
                clock += 100
                events.append(ovni_event("VAs", clock))
                events.append(ovni_event("VTx", clock + 10, struct.pack("<II", task + 1, 1)))
                events.append(ovni_event("VTe", clock + 60 + task % 9,
                                         struct.pack("<II", task + 1, 1)))
                events.append(ovni_event("VAS", clock + 80))
            events.append(ovni_event("OHe", clock + 200))
            write_ovni_stream(root, events, loom=f"node{loom:02d}", pid=pid, tid=tid,
                              cpus=((0, 0), (1, 1)))
    return root


@pytest.fixture(scope="module")
def looms_trace(tmp_path_factory):
    return make_looms_trace(tmp_path_factory.mktemp("looms") / "trace")


def run(args, env=None):
    return subprocess.run([str(a) for a in args], capture_output=True, text=True,
                          timeout=600, env=env)


def serial(command, trace):
    return run([WEFT] + command + [trace])


def parallel(mpi_runner, ranks, command, trace):
    mpiexec, runner = mpi_runner
    return run([mpiexec, "-n", ranks, runner] + command + [trace])


def assert_same(expected, got, what):
    assert got.returncode == expected.returncode, what + "\n" + got.stderr
    assert got.stdout == expected.stdout, what
    assert got.stderr == expected.stderr, what


def all_traces(looms_trace):
    traces = dict(TRACES)
    traces["ovni-v1"] = first_trace(DATA_DIR / "ovni" / "v1")
    traces["ovni-v2"] = first_trace(DATA_DIR / "ovni" / "v2")
    traces["ovni-64-looms"] = looms_trace
    return traces


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_ranks_print_what_one_process_prints(mpi_runner, looms_trace, command):
    for name, trace in all_traces(looms_trace).items():
        expected = serial(COMMANDS[command], trace)
        assert expected.returncode in ((0, 1) if command.startswith("check") else (0,)), \
            f"{command} of {name}: {expected.stderr}"
        for ranks in RANKS:
            got = parallel(mpi_runner, ranks, COMMANDS[command], trace)
            assert_same(expected, got, f"{command} of {name} on {ranks} ranks")


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_threads_do_not_change_the_output(looms_trace, command):
    for name, trace in all_traces(looms_trace).items():
        expected = serial(COMMANDS[command] + ["--threads", "1"], trace)
        for threads in (2, 4):
            got = serial(COMMANDS[command] + ["--threads", str(threads)], trace)
            assert_same(expected, got, f"{command} of {name} with {threads} threads")


def test_the_generated_trace_has_64_looms(looms_trace):
    """The generated trace is what the tests above mean: 64 looms, 128
    streams, a valid trace."""
    info = serial(["info"], looms_trace)
    assert info.returncode == 0, info.stderr
    assert len(list(Path(looms_trace).glob("loom.*"))) == 64
    assert len(list(Path(looms_trace).glob("loom.*/proc.*/thread.*/stream.obs"))) == 128


def damaged_copy(tmp_path, stream_index):
    """A copy of the 64-loom trace whose stream `stream_index` (in sorted
    path order) has a garbage event header in its middle (its 7th event,
    after OHx, 12 + 12 bytes, and VAs, VTx, VTe, VAS, VAs: 12 + 20 + 20 +
    12 + 12 bytes)."""
    trace = make_looms_trace(tmp_path / "damaged", looms=8)
    obs = sorted(Path(trace).glob("loom.*/proc.*/thread.*/stream.obs"))[stream_index]
    data = bytearray(obs.read_bytes())
    at = 8 + 24 + 12 + 20 + 20 + 12 + 12
    assert data[at + 1:at + 4] == b"VTx"
    data[at] = 0xff
    obs.write_bytes(bytes(data))
    return trace


@pytest.mark.parametrize("stream_index", [0, 5, 15])
def test_a_read_error_on_any_rank_is_reported_by_rank_0(mpi_runner, tmp_path, stream_index):
    trace = damaged_copy(tmp_path, stream_index)
    for command in (COMMANDS["top"], COMMANDS["profile"], COMMANDS["info"],
                    COMMANDS["check"]):
        expected = serial(command, trace)
        said = expected.stdout + expected.stderr  # info lists problems on stdout
        assert expected.returncode == 1 and "stream.obs" in said, said
        for ranks in (2, 4):
            got = parallel(mpi_runner, ranks, command, trace)
            assert_same(expected, got, f"{command} of a damaged stream on {ranks} ranks")


def test_open_failure_is_one_message_and_exit_2(mpi_runner, tmp_path):
    expected = serial(["top"], tmp_path / "absent")
    got = parallel(mpi_runner, 4, ["top"], tmp_path / "absent")
    assert expected.returncode == 2
    assert_same(expected, got, "top of a missing trace")


def test_ranks_that_see_other_file_sizes_refuse_the_trace(mpi_runner, tmp_path):
    """Each rank deals the streams by the sizes the open saw and then checks
    the files of its own streams, so that a file that changed in between is
    not read short or long without a word (MPMD lets one rank have its own
    arguments). Exit status 2, nothing on stdout, the file and both sizes
    said; the same copy on every rank is read as the original.
    - Heph (every rank opens it, rank 0 sends its sizes): rank 2 on a copy
      16 bytes shorter fails, and rank 0 says which rank.
    - ovni: rank 1, on a copy whose streams are all 16 bytes shorter, reads
      the streams' metadata for rank 0 (books); rank 0 checks its own
      streams against them.
    - ovni: rank 2 given the `ovni/` of the copy (another path below the
      root): its books' failures do not make rank 0 drop streams (rank 0
      asks again), and it cannot find its streams' files."""
    mpiexec, runner = mpi_runner
    top = ["top", "--streams"]
    heph = TRACES["heph"]
    (tmp_path / "hs").mkdir()
    (tmp_path / "hc").mkdir()
    same_heph, changed_heph = tmp_path / "hs" / heph.name, tmp_path / "hc" / heph.name
    shutil.copy(heph, same_heph)
    changed_heph.write_bytes(heph.read_bytes()[:-16])
    got = run([mpiexec, "-n", 2, runner] + top + [same_heph, ":", "-n", 1, runner] + top
              + [changed_heph])
    assert got.returncode == 2 and got.stdout == "", got.stderr
    size = heph.stat().st_size
    assert got.stderr == (f"weft top: cannot open '{same_heph}': rank 2: {heph.name}: byte "
                          f"{size - 16}: the file changed since it was opened: it had {size} "
                          f"bytes on rank 0, it has {size - 16} here\n")

    same, changed = tmp_path / "same", tmp_path / "changed"
    shutil.copytree(TRACES["ovni-v3-mpi"], same)
    shutil.copytree(same, changed)
    for stream in changed.rglob("stream.obs"):
        stream.write_bytes(stream.read_bytes()[:-16])
    got = run([mpiexec, "-n", 1, runner] + top + [same, ":", "-n", 1, runner] + top + [changed])
    assert got.returncode == 2 and got.stdout == "", got.stderr
    said = re.fullmatch(f"weft top: cannot open '{re.escape(str(same))}': "
                        r"(\S+/stream\.obs): byte (\d+): the file changed since it was "
                        r"opened: it had (\d+) bytes on the rank that read its metadata, "
                        r"it has (\d+) on rank 0\n", got.stderr)
    assert said, got.stderr
    size = (same / said[1]).stat().st_size
    assert (int(said[2]), int(said[3]), int(said[4])) == (size - 16, size - 16, size)

    got = run([mpiexec, "-n", 2, runner] + top + [same, ":", "-n", 1, runner] + top
              + [changed / "ovni"])
    assert got.returncode == 2 and got.stdout == "", got.stderr
    assert re.fullmatch(f"weft top: cannot open '{re.escape(str(same))}': rank 2: "
                        r"\S+/stream\.obs: cannot read the stream's file: No such file or "
                        r"directory\n", got.stderr), got.stderr

    expected = serial(top, same)
    got = run([mpiexec, "-n", 2, runner] + top + [same, ":", "-n", 1, runner] + top + [same])
    assert_same(expected, got, "the same trace on 3 ranks, MPMD")


def copy_without(trace, to, patterns):
    """A copy of `trace` at `to` without the files that match `patterns`
    (globs below it)."""
    shutil.copytree(trace, to)
    for pattern in patterns:
        for path in to.glob(pattern):
            path.unlink()
    return to


def test_the_other_ranks_open_the_trace_from_rank_0s_tape(mpi_runner, tmp_path):
    """The other ranks open the trace from what rank 0 asked and was
    answered (core/metafs.c), not from the file system: ranks 1 and 2 here
    open a copy of a Pallas trace without its main file, which alone is
    no trace at all, and still print the serial command's output (what the
    others read for rank 0, the archives, is the next test's). A format
    that reads its own files (Heph) is opened by every rank."""
    mpiexec, runner = mpi_runner
    for cmd in (["profile"], ["info"]):
        trace = TRACES["pallas-generic"]
        bare = copy_without(trace, tmp_path / trace.name, ["*.pallas"])
        expected = serial(cmd, trace)
        alone = serial(cmd, bare)
        assert alone.returncode != 0 and expected.returncode == 0, alone.stderr
        got = run([mpiexec, "-n", 1, runner] + cmd + [trace, ":", "-n", 2, runner] + cmd + [bare])
        assert_same(expected, got, f"{cmd[0]} with ranks 1 and 2 on a copy without main file")
        shutil.rmtree(bare)
    heph = DATA_DIR / "heph" / "heph_sample.bin.log"
    assert_same(serial(["top"], heph), parallel(mpi_runner, 3, ["top"], heph), "heph top")


def test_the_other_ranks_read_the_metadata_for_rank_0(mpi_runner, tmp_path, looms_trace):
    """After rank 0 has listed an ovni trace's directory (or read a Pallas
    trace's main file) it sends PREFETCH, and ranks 1 and up walk their
    share of the looms and read their streams' sizes, headers and
    stream.json (Pallas: read their share of the archive files and stat
    their threads' files), for rank 0, which then asks the file system
    none of it (core/metafs.c, books). Rank 0 here opens a copy without
    those files (alone: streams without metadata, no mark names; Pallas:
    archives left out) and still prints the serial command's output, on 2
    and 3 ranks (the items dealt to one or two others)."""
    mpiexec, runner = mpi_runner
    marks = DATA_DIR / "ovni" / "v3" / "ovni-mark-4procs"
    ovni_meta = ["**/stream.json"]
    pallas_archives = ["archive_*/archive.pallas"]
    for cmd, trace, lacks, ranks in (
            (["profile"], marks, ovni_meta, (1, 2)),
            (["top", "--streams"], TRACES["ovni-v3-mpi"], ovni_meta, (2,)),
            (["info"], Path(looms_trace), ovni_meta, (2,)),
            (["profile"], TRACES["pallas-generic"], pallas_archives, (1, 2)),
            (["info"], TRACES["pallas-generic"], pallas_archives, (2,))):
        bare = copy_without(trace, tmp_path / trace.name, lacks)
        expected = serial(cmd, trace)
        alone = serial(cmd, bare)
        assert (alone.stdout, alone.stderr) != (expected.stdout, expected.stderr)
        for others in ranks:
            got = run([mpiexec, "-n", 1, runner] + cmd + [bare, ":", "-n", others, runner]
                      + cmd + [trace])
            # rank 0 prints the path it opened (info's first line)
            got.stdout = got.stdout.replace(str(bare), str(trace))
            got.stderr = got.stderr.replace(str(bare), str(trace))
            assert_same(expected, got, f"{cmd[0]} with rank 0 on a copy without metadata "
                        f"and {others} other ranks")
        shutil.rmtree(bare)


def test_the_looms_are_dealt_when_the_trace_is_given_by_its_parent(mpi_runner, tmp_path):
    """A trace given by the directory that holds its `ovni/` (here with
    the real tools' text files next to it): the other ranks share the
    looms one level down, not the parent's entries (which gave the whole
    `ovni/` to rank 1). Rank 0 opens a copy without any stream.json, rank 1
    one with the stream.json of looms 0 and 2 only (its share of four), rank
    2 one with those of looms 1 and 3: the serial output only when each
    reads its own share."""
    mpiexec, runner = mpi_runner
    trace = TRACES["ovni-v3-mpi"]
    looms = sorted(p.name for p in (trace / "ovni").iterdir())
    assert len(looms) == 4
    bare = copy_without(trace, tmp_path / "bare", ["**/stream.json"])
    first = copy_without(trace, tmp_path / "first", [f"ovni/{looms[1]}/**/stream.json",
                                                     f"ovni/{looms[3]}/**/stream.json"])
    second = copy_without(trace, tmp_path / "second", [f"ovni/{looms[0]}/**/stream.json",
                                                       f"ovni/{looms[2]}/**/stream.json"])
    cmd = ["top", "--streams"]
    expected = serial(cmd, trace)
    got = run([mpiexec, "-n", 1, runner] + cmd + [bare, ":", "-n", 1, runner] + cmd + [first,
              ":", "-n", 1, runner] + cmd + [second])
    assert_same(expected, got, "top with each other rank holding its share of the looms only")


def test_unknown_command_and_usage(mpi_runner):
    mpiexec, runner = mpi_runner
    got = run([mpiexec, "-n", 2, runner, "frobnicate"])
    assert got.returncode == 2
    assert got.stderr.count("unknown command 'frobnicate'") == 1
    got = run([mpiexec, "-n", 2, runner, "--help"])
    assert got.returncode == 0 and got.stdout.count("usage: mpiexec") == 1


def test_weft_mpi_option_runs_the_runner(mpi_runner):
    """`mpiexec -n R weft --mpi COMMAND` is weft-mpi's run (weft execs the
    weft-mpi next to it, which inherits what MPI_Init needs)."""
    mpiexec, _ = mpi_runner
    trace = TRACES["ovni-v3-mpi"]
    expected = serial(COMMANDS["top"], trace)
    got = run([mpiexec, "-n", 2, WEFT, "--mpi"] + COMMANDS["top"] + [trace])
    assert_same(expected, got, "weft --mpi top on 2 ranks")
    got = run([mpiexec, "-n", 2, WEFT, "sync", "--help"])
    assert got.returncode == 0 and got.stdout.startswith("usage: weft-mpi sync")
    got = run([WEFT, "--mpi"])
    assert got.returncode == 2 and "expects a command" in got.stderr
