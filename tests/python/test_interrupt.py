# SPDX-License-Identifier: MIT
"""A command that writes files and is killed by a signal leaves none of
its temporary files behind: every one of them (Paraver writes three at
once), not only the last one opened.

To interrupt a conversion at a known point, one value file of a Pallas
trace is a FIFO that nobody writes: the conversion blocks reading it, after
its output files were created, until the signal comes."""

import os
import shutil
import signal
import subprocess
import time

import pytest

from weftlib import DATA_DIR, WEFT

PALLAS_TRACE = DATA_DIR / "pallas" / "wb_enterleave_f3_n1000_t2_logical" / "trace"
BLOCKING_FILE = "archive_0/thread_1/event_durations.dat"


def blocking_trace(tmp_path):
    """A copy of a Pallas trace whose reading blocks on a FIFO."""
    trace = tmp_path / "trace"
    shutil.copytree(PALLAS_TRACE, trace)
    fifo = trace / BLOCKING_FILE
    fifo.unlink()
    os.mkfifo(fifo)
    return trace


def wait_for_entries(directory, count, proc, timeout=30):
    """Waits until `directory` has `count` entries (the temporary files)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if len(os.listdir(directory)) >= count:
            return
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.01)
    raise AssertionError(f"{directory}: {sorted(os.listdir(directory))}, "
                         f"expected {count} entries")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
@pytest.mark.parametrize("to, files", [("paraver", 3), ("perfetto", 1), ("chrome", 1)])
def test_signal_removes_every_temporary_file(tmp_path, to, files, sig):
    trace = blocking_trace(tmp_path)
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    proc = subprocess.Popen([WEFT, "convert", "-t", to, "-o", str(out_dir / "run"),
                             str(trace)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        wait_for_entries(out_dir, files, proc)
        assert all(".tmp." in n for n in os.listdir(out_dir)), os.listdir(out_dir)
        proc.send_signal(sig)
        proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == -sig
    assert os.listdir(out_dir) == []
