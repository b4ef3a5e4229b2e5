# SPDX-License-Identifier: MIT
"""weft's OTF2 library on Pallas (docs/otf2-pallas.md): Debian's EZTrace
2.0, linked with Debian's libotf2, writes a Pallas trace when
<build>/lib/otf2-pallas comes first in LD_LIBRARY_PATH. The same program
traced with the real libotf2 and through weft's library gives the same
events, location by location, in the same order (record kinds, regions,
MPI peers, communicators, tags, lengths, collective operations and
roots), modulo timestamps, the addresses EZTrace records (mutexes, MPI
requests) and what Pallas 0.20's records do not carry (the contingent of
ThreadBegin/ThreadEnd). Programs: tests/eztrace/*.c, built here with cc
and mpicc."""

import collections
import json
import os
import re
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from weftlib import run_weft

BUILD = Path(os.environ.get("WEFT_BUILD_DIR", Path(__file__).resolve().parents[2] / "build"))
LIBDIR = BUILD / "lib" / "otf2-pallas"
LIBRARY = LIBDIR / "libopen-trace-format2.so.10"
PROGRAMS = Path(__file__).resolve().parents[1] / "eztrace"
EZTRACE_LIBS = Path("/usr/lib/x86_64-linux-gnu")

# Fields that differ from run to run (addresses) or that Pallas 0.20's
# records do not have (OTF2's ThreadBegin/End contingent and sequence),
# or that only the OTF2 reader names (a communicator's name).
NOT_COMPARED = {"mutex", "cond", "request", "contingent", "contingent_name", "sequence",
                "comm_name"}


def need(*tools):
    for tool in tools:
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed (scripts/setup-deps.sh installs eztrace "
                        "and mpich)")
    if not LIBRARY.exists():
        pytest.skip(f"{LIBRARY} was not built")


def sanitizer_env():
    """A sanitized build's library needs its runtime first in the process
    (EZTrace and the MPI program are not sanitized)."""
    cache = (BUILD / "CMakeCache.txt").read_text() if (BUILD / "CMakeCache.txt").exists() else ""
    if "WEFT_SANITIZE:BOOL=ON" not in cache:
        return {}
    runtime = subprocess.run(["cc", "-print-file-name=libasan.so"], capture_output=True,
                             text=True).stdout.strip()
    return {"LD_PRELOAD": runtime, "ASAN_OPTIONS": "detect_leaks=0:verify_asan_link_order=0"}


def build(tmp_path, source, compiler, *flags):
    exe = tmp_path / Path(source).stem
    subprocess.run([compiler, "-O1", str(PROGRAMS / source), "-o", str(exe), *flags],
                   check=True)
    return exe


def trace(tmp_path, label, command, through_weft):
    """Runs `command` (eztrace ...) in tmp_path/label; the trace directory."""
    cwd = tmp_path / label
    cwd.mkdir()
    env = dict(os.environ)
    if through_weft:
        env["LD_LIBRARY_PATH"] = str(LIBDIR)
        env.update(sanitizer_env())
    proc = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    dirs = [p for p in cwd.iterdir() if p.is_dir() and p.name.endswith("_trace")]
    assert len(dirs) == 1, list(cwd.iterdir())
    return dirs[0], proc.stderr


def location_names(path):
    """{stream path: location name} from `weft info` (the OTF2 reader and the
    Pallas reader both show a location's name; its ids differ: Pallas's
    are rank * 65536 + place, docs/otf2-pallas.md)."""
    out = run_weft("info", path, expect=0).stdout
    names = {int(m.group(1)): m.group(3) for m in re.finditer(
        r"\[\w+ \d+, stream (\d+)\] name=(\"?)(.*?)\2$", out, re.M)}
    return {m.group(2): names[int(m.group(1))]
            for m in re.finditer(r"^  \[(\d+)\] (\S+)$", out, re.M)}


def events_by_location(path):
    """{location name: [(code, fields compared)]} of a trace, in stream order."""
    names = location_names(path)
    out = run_weft("dump", "--json", path, expect=0).stdout
    per = collections.defaultdict(list)
    for line in out.splitlines():
        e = json.loads(line)
        loc = names[e["stream"]]
        fields = {k: v for k, v in e["fields"].items()
                  if k not in NOT_COMPARED and not k.endswith("_ref")}
        per[loc].append((e["code"], fields))
    return per


def assert_same_events(real, ours):
    a, b = events_by_location(real), events_by_location(ours)
    assert sorted(a) == sorted(b)
    for loc in a:
        assert a[loc] == b[loc], loc


def test_the_library_defines_what_eztrace_calls():
    """Every OTF2 function EZTrace's libraries import is defined (EZTrace
    is linked with BIND_NOW: one missing function and it cannot start),
    and the library needs neither libotf2 nor libweft."""
    need("eztrace", "nm")
    wanted = set()
    for lib in EZTRACE_LIBS.glob("libeztrace-*.so"):
        out = subprocess.run(["nm", "-D", "--undefined-only", str(lib)], capture_output=True,
                             text=True).stdout
        wanted |= set(re.findall(r"\b(OTF2_\w+)", out))
    assert len(wanted) > 50
    defined = set(re.findall(r" T (OTF2_\w+)", subprocess.run(
        ["nm", "-D", "--defined-only", str(LIBRARY)], capture_output=True, text=True).stdout))
    assert wanted <= defined, sorted(wanted - defined)
    exported = subprocess.run(["nm", "-D", "--defined-only", str(LIBRARY)],
                              capture_output=True, text=True).stdout
    assert not re.search(r" T weft", exported)  # only libotf2's names
    needed = subprocess.run(["readelf", "-d", str(LIBRARY)], capture_output=True,
                            text=True).stdout
    assert "libweft" not in needed and "open-trace-format2" not in needed.replace(
        "Library soname: [libopen-trace-format2.so.10]", "")


def test_pthread_program(tmp_path):
    need("eztrace", "cc")
    app = build(tmp_path, "pthread_app.c", "cc", "-pthread")
    real, _ = trace(tmp_path, "real", ["eztrace", "-t", "pthread", str(app)], False)
    ours, stderr = trace(tmp_path, "ours", ["eztrace", "-t", "pthread", str(app)], True)
    main = ours / "eztrace_log.pallas"
    assert main.is_file() and not (ours / "eztrace_log.otf2").exists()
    assert "group 0 is defined more than once; the first definition is kept" in stderr
    run_weft("check", main, expect=0)
    assert_same_events(real, main)


@pytest.mark.parametrize("ranks", [4, 10])
def test_mpi_program(tmp_path, ranks):
    """EZTrace's mpich module on 4 ranks, and on 10 (whose OTF2 location
    refs pass 32 bits from the 10th rank on: rank * 536870911): each rank
    writes its archive, rank 0 the main file; the locations are named as
    rank 0 defines them and MPI_COMM_WORLD's location members are Pallas
    ids (exchanged through EZTrace's collective callbacks)."""
    need("eztrace", "mpicc", "mpiexec")
    ring = build(tmp_path, "mpi_ring.c", "mpicc")
    command = ["mpiexec", "-n", str(ranks), "eztrace", "-t", "mpich", str(ring)]
    real, _ = trace(tmp_path, "real", command, False)
    ours, _ = trace(tmp_path, "ours", command, True)
    main = ours / "eztrace_log.pallas"
    run_weft("check", main, expect=0)
    info = run_weft("info", main, expect=0).stdout
    for rank in range(ranks):
        assert re.search(rf"archive_{rank} .*name=P#{rank}\b", info)
        assert re.search(rf"thread_{rank << 16} .*name=P#{rank}T#0\b", info)
    assert_same_events(real, main)
    top = run_weft("top", main, expect=0).stdout
    assert re.search(rf"MPI_Send\s+{5 * ranks}\b", top)
    assert re.search(rf"MPI_Recv\s+{5 * ranks}\b", top)
    # MPI_COMM_WORLD's locations: the ids of the threads, in rank order.
    world = b"".join(struct.pack("<I", rank << 16) for rank in range(ranks))
    assert world in main.read_bytes()


def test_otf2_api_program(tmp_path):
    """A program written for libotf2 (tests/eztrace/otf2_api_writer.c: OpenMP
    and thread records, an attribute list, a metric): the same events
    through weft's library, but the metric (Pallas 0.20 has no metric
    record: left out, said once) and the arguments Pallas's records lack;
    creator and description are the main file's metadata."""
    need("cc")
    exe = build(tmp_path, "otf2_api_writer.c", "cc", "-Wno-deprecated-declarations",
                "-lopen-trace-format2")
    subprocess.run([str(exe), str(tmp_path / "real")], check=True)
    env = dict(os.environ, LD_LIBRARY_PATH=str(LIBDIR), **sanitizer_env())
    proc = subprocess.run([str(exe), str(tmp_path / "ours")], env=env, capture_output=True,
                          text=True)
    assert proc.returncode == 0, proc.stderr
    assert "OTF2_EvtWriter_Metric: Pallas 0.20 has no such record" in proc.stderr
    main = tmp_path / "ours" / "traces.pallas"
    run_weft("check", main, expect=0)
    real = events_by_location(tmp_path / "real")
    ours = events_by_location(main)
    lacking = {"acquisition_order", "model"}
    assert ours == {loc: [(code, {k: v for k, v in f.items() if k not in lacking})
                          for code, f in evs if code != "Metric"]
                    for loc, evs in real.items()}
    assert [c for c, _ in ours["thread 0"]][1:8] == ["OMP_Fork", "OMP_AcquireLock", "OMP_ReleaseLock",
                                           "OMP_TaskCreate", "OMP_TaskSwitch",
                                           "OMP_TaskComplete", "OMP_Join"]


def test_a_call_outside_the_library_is_named(tmp_path):
    """otf2_make_trace writes every record kind of OTF2 3.0, some of which
    (ProgramBegin...) this library does not have: the dynamic linker names
    the function and the program stops there (no crash, no trace that
    looks whole)."""
    maker = BUILD / "tests" / "otf2_make_trace"
    if not maker.exists() or not LIBRARY.exists():
        pytest.skip("otf2_make_trace or the library was not built")
    env = dict(os.environ, LD_LIBRARY_PATH=str(LIBDIR), **sanitizer_env())
    proc = subprocess.run([str(maker), str(tmp_path / "t")], env=env, capture_output=True,
                          text=True)
    assert proc.returncode == 127
    assert re.search(r"undefined symbol: OTF2_\w+", proc.stderr)
    assert not list((tmp_path / "t").glob("*.pallas"))
