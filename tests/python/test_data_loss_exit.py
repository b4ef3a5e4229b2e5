# SPDX-License-Identifier: MIT
"""Losing data is an error: every command that reads events exits 1 when
some of them could not be read (an error diagnostic: a file that stops
being readable in its middle), with its output holding the rest. `top`,
`info`, `table`, `summary` and `plot` exited 0 then."""

import os
import shutil

import pytest

from weftlib import DATA_DIR, run_weft

ROSS_RUN = DATA_DIR / "ross" / "phold-gvt-pekplp" / "np2"
OVNI_TRACE = DATA_DIR / "ovni" / "v3" / "mpi-func-4procs" / "ovni"
OVNI_STREAM = "loom.vm.0/proc.2192/thread.2192/stream.obs"


@pytest.fixture
def garbled_run(tmp_path):
    """The run with 64 bytes of garbage in the middle of its only file."""
    run = tmp_path / "run"
    shutil.copytree(ROSS_RUN, run)
    path = run / "ross-stats-gvt.bin"
    data = bytearray(path.read_bytes())
    middle = len(data) // 2
    data[middle:middle + 64] = b"\xff" * 64
    path.write_bytes(bytes(data))
    return run


@pytest.mark.parametrize("args, output", [
    (["info"], None), (["top"], None), (["summary"], None), (["dump"], None),
    (["table", "--level", "pe", "-o", "{out}"], "out.csv"),
    (["plot", "-o", "{out}"], "out.svg"),
    (["convert", "-t", "chrome", "-o", "{out}"], "out.json"),
])
def test_ross_file_garbled_in_the_middle(tmp_path, garbled_run, args, output):
    out = tmp_path / (output or "none")
    proc = run_weft(*[str(out) if a == "{out}" else a for a in args], garbled_run,
                    expect=1)
    text = proc.stderr + (proc.stdout if args[0] == "info" else "")
    assert "ross-stats-gvt.bin:" in text and ": error: expected a sample header" in text
    if output:
        assert out.stat().st_size > 0


@pytest.mark.parametrize("command", ["info", "top", "dump", "check"])
def test_ovni_stream_cut_in_an_event(tmp_path, command):
    """A finished stream that ends in the middle of an event lost its end."""
    trace = tmp_path / "trace"
    shutil.copytree(OVNI_TRACE, trace)
    stream = trace / OVNI_STREAM
    os.truncate(stream, stream.stat().st_size - 5)
    proc = run_weft(command, trace, expect=1)
    text = proc.stderr + proc.stdout
    assert f"{OVNI_STREAM}:" in text and ": error: " in text
