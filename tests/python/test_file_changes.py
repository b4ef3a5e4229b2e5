# SPDX-License-Identifier: MIT
"""A trace file that shrinks while weft reads it (a tracer still writing
it, a copy being replaced): every command reports "the file changed since
it was opened" with the file and the byte where data went missing, exits 1
(2 for sort, which then writes nothing), keeps going with what it read, and
leaves no temporary file. Through mapped windows this was a SIGBUS (exit
-7), or zeros read as garbage ("expected a printable MCV").

Pallas, whose files were always read with pread(), has its own words
for it ("value data ends early", at the byte): tested at the end.

The truncation is injected at a chosen read (tests/c/shrink_preload.c,
preloaded into weft): the K-th read that crosses byte T of the file (K
counts the passes over the file: opening a Heph trace or a ROSS run scans
it once before the events are read)."""

import os
import re
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from weftlib import DATA_DIR, REPO_DIR, WEFT
from test_heph_cli import many_packets

PRELOAD = Path(os.environ.get("WEFT_BUILD_DIR", REPO_DIR / "build")) / "tests" / \
    "libweft_shrink_preload.so"
AT, TO = 1_000_000, 500_000  # shrink to 500 kB at the read that crosses 1 MB
OVNI_STREAM = "loom.test/proc.1/thread.1/stream.obs"


def make_ovni(root):
    """A v3 trace of one 2 MB stream of 180,000 OB. events."""
    stream = root / OVNI_STREAM
    stream.parent.mkdir(parents=True)
    events = b"".join(struct.pack("<B3sQ", 0, b"OB.", 1000 + 10 * i)
                      for i in range(180_000))
    stream.write_bytes(b"ovni" + struct.pack("<I", 1) + events)
    (stream.parent / "stream.json").write_text(
        '{"version": 3, "ovni": {"part": "thread", "tid": 1, "pid": 1, '
        '"loom": "test", "app_id": 1, "finished": 1, "loom_cpus": '
        '[{"index": 0, "phyid": 0}]}}')
    return root, stream


def make_ovni_two(root):
    """make_ovni's trace and a second stream (tid 2): two streams, so
    that -t pallas and -t otf2 --threads 2 share them (a survey, then the
    writing)."""
    trace, stream = make_ovni(root)
    other = root / OVNI_STREAM.replace("thread.1", "thread.2")
    other.parent.mkdir(parents=True)
    other.write_bytes(stream.read_bytes())
    (other.parent / "stream.json").write_text(
        (stream.parent / "stream.json").read_text().replace('"tid": 1', '"tid": 2'))
    return trace, stream


def make_heph(root):
    """A 1.9 MB Heph trace of 40,000 events over 3 streams."""
    path = root / "trace.bin.log"
    path.write_bytes(many_packets(40_000))
    return path, path


def make_ross(root):
    """A 2 MB ROSS run (the gvt file of a reference run, repeated)."""
    subprocess.run([sys.executable, str(REPO_DIR / "bench" / "make_ross_run.py"),
                    "--ref", str(DATA_DIR / "ross/phold-gvt-pekplp/np2/ross-stats-gvt.bin"),
                    "--size", "2M", str(root / "run")], check=True, capture_output=True)
    return root / "run", root / "run" / "ross-stats-gvt.bin"


MAKERS = {"ovni": make_ovni, "ovni2": make_ovni_two, "heph": make_heph, "ross": make_ross}

# id -> (format, pass K, command arguments ({out}: an output path), expected exit)
CASES = {
    "ovni-dump": ("ovni", 1, ["dump"], 1),
    "ovni-dump-stored": ("ovni", 1, ["dump", "--stored-order"], 1),
    "ovni-top": ("ovni", 1, ["top"], 1),
    "ovni-info": ("ovni", 1, ["info"], 1),
    "ovni-check": ("ovni", 1, ["check"], 1),
    "ovni-convert-paraver": ("ovni", 1, ["convert", "-t", "paraver", "-o", "{out}"], 1),
    "ovni-convert-chrome": ("ovni", 1, ["convert", "-t", "chrome", "-o", "{out}"], 1),
    "ovni-convert-pallas": ("ovni", 1, ["convert", "-t", "pallas", "-o", "{out}"], 1),
    "ovni-sort": ("ovni", 1, ["sort"], 2),
    # shared among 2 threads: the file shrinks in the survey (a thread that
    # opens the trace again finds it changed: nothing is written), or
    # while the threads write (the stream's prefix, as one thread does)
    "ovni-convert-pallas-survey": ("ovni2", 1, ["convert", "-t", "pallas", "--threads", "2",
                                                "-o", "{out}"], 2),
    # (1 or 2: the other thread may open the trace again after the change)
    "ovni-convert-pallas-write": ("ovni2", 2, ["convert", "-t", "pallas", "--threads", "2",
                                               "-o", "{out}"], (1, 2)),
    "ovni-convert-otf2-survey": ("ovni2", 1, ["convert", "-t", "otf2", "--threads", "2",
                                              "-o", "{out}"], 2),
    "ovni-convert-otf2-write": ("ovni2", 2, ["convert", "-t", "otf2", "--threads", "2",
                                             "-o", "{out}"], (1, 2)),
    "heph-dump": ("heph", 2, ["dump"], 1),
    "heph-dump-stored": ("heph", 2, ["dump", "--stored-order"], 1),
    "heph-convert-perfetto": ("heph", 2, ["convert", "-t", "perfetto", "-o", "{out}"], 1),
    "heph-convert-compat": ("heph", 2, ["convert", "--heph-compat", "-o", "{out}.json"], 1),
    "ross-dump": ("ross", 2, ["dump"], 1),
    "ross-table": ("ross", 2, ["table", "--level", "kp", "-o", "{out}"], 1),
    "ross-table-sorted": ("ross", 2, ["table", "--level", "pe", "--sort", "virtual",
                                      "-o", "{out}"], 1),
    "ross-convert-paraver": ("ross", 2, ["convert", "-t", "paraver", "-o", "{out}"], 1),
    "ross-summary": ("ross", 2, ["summary"], 1),
    "ross-plot": ("ross", 2, ["plot", "-o", "{out}"], 1),
}


def run_shrinking(tmp_path, fmt, k, args):
    """Runs weft on a fresh trace whose file shrinks at the K-th crossing
    of AT; returns (process, the trace's file, the output directory)."""
    if not PRELOAD.exists():
        pytest.skip(f"{PRELOAD} is not built")
    src = tmp_path / "in"
    src.mkdir()
    trace, victim = MAKERS[fmt](src)
    size = victim.stat().st_size
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    args = [a.replace("{out}", str(out_dir / "result")) for a in args]
    env = dict(os.environ, LD_PRELOAD=str(PRELOAD), WEFT_SHRINK_FILE=str(victim),
               WEFT_SHRINK_AT=str(AT), WEFT_SHRINK_PASS=str(k), WEFT_SHRINK_TO=str(TO))
    env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "") + ":verify_asan_link_order=0"
    proc = subprocess.run([WEFT, *args, str(trace)], capture_output=True, text=True,
                          env=env, timeout=300)
    assert victim.stat().st_size == TO, "the file was not truncated while read"
    return proc, victim, size, out_dir


@pytest.mark.parametrize("case", sorted(CASES))
def test_file_that_shrinks_while_read(tmp_path, case):
    fmt, k, args, status = CASES[case]
    proc, victim, size, out_dir = run_shrinking(tmp_path, fmt, k, args)
    text = proc.stderr + (proc.stdout if args[0] in ("info", "check") else "")
    if isinstance(status, tuple):
        assert proc.returncode in status, f"exit {proc.returncode}\n{proc.stderr}"
        status = proc.returncode
    assert proc.returncode == status, f"exit {proc.returncode}\n{proc.stderr}"
    if args[0] == "sort":  # nothing is rewritten: the stream has a problem
        found = re.search(r"'[^']*': (\S+): the stream has problems \(expected .*the "
                          r"file changed since it was opened", text)
    elif status == 2:  # a thread's own handle found it changed: nothing written
        found = re.search(r"(\S+): byte (\d+): the file changed since it was opened", text)
        assert list(out_dir.iterdir()) == [], "an output was left"
    else:
        found = re.search(r"(\S+?):(\d+): error: .*the (trace )?file changed since it "
                          r"was opened", text)
    assert found, text
    assert victim.name in found.group(1), found.group(0)
    if args[0] != "sort":
        assert TO <= int(found.group(2)) < size, found.group(0)
    if fmt.startswith("ovni") and args[0] != "sort":
        assert "it had %d bytes, it now has %d" % (size, TO) in text
    # nothing temporary is left, next to the output or next to the stream
    for d in (out_dir, victim.parent):
        left = [n for n in os.listdir(d) if ".tmp" in n]
        assert left == [], left
    if "{out}" in " ".join(args) and status == 1:
        assert os.listdir(out_dir), "the output (without the lost part) is missing"


PALLAS_TRACE = DATA_DIR / "pallas" / "wb_enterleave_f3_n1000_t2_logical_None" / "trace"
PALLAS_VALUES = "archive_0/thread_0/event_durations.dat"


@pytest.mark.parametrize("args", [
    ["dump"], ["check"], ["profile", "--replay"],
    ["convert", "-t", "paraver", "-o", "{out}"],
    ["convert", "-t", "pallas", "-o", "{out}"],
], ids=lambda a: "-".join(x for x in a if not x.startswith(("-", "{"))))
def test_pallas_value_file_that_shrinks_while_read(tmp_path, args):
    """Pallas reads its value files with pread() (never mapped): a value
    file cut after the trace was opened ends its stream with "value data
    ends early" at the byte where it now ends."""
    if not PRELOAD.exists():
        pytest.skip(f"{PRELOAD} is not built")
    trace = tmp_path / "trace"
    shutil.copytree(PALLAS_TRACE, trace)
    victim = trace / PALLAS_VALUES
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    args = [a.replace("{out}", str(out_dir / "result")) for a in args]
    env = dict(os.environ, LD_PRELOAD=str(PRELOAD), WEFT_SHRINK_FILE=str(victim),
               WEFT_SHRINK_AT="0", WEFT_SHRINK_PASS="1", WEFT_SHRINK_TO="1000")
    env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "") + ":verify_asan_link_order=0"
    proc = subprocess.run([WEFT, *args, str(trace)], capture_output=True, text=True,
                          env=env, timeout=300)
    assert victim.stat().st_size == 1000
    assert proc.returncode == 1, proc.stderr
    text = proc.stderr + proc.stdout
    assert re.search(r"event_durations\.dat:1000: error: value data ends early", text), text
    left = [n for n in os.listdir(out_dir) if ".tmp" in n]
    assert left == [] and (len(os.listdir(out_dir)) > 0) == (args[0] == "convert")
