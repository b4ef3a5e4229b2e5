# SPDX-License-Identifier: MIT
"""Feedback on long work: the progress line on standard error when it is
a terminal (run here under a pseudo-terminal, stderr alone on it), its
absence with --quiet or when stderr is a pipe, and the --verbose lines.

WEFT_PROGRESS_INTERVAL_NS=0 (for tests) makes the library call the
progress at every batch of events, so that the small traces of
tests/data show a line at all (the default interval is 100 ms)."""

import fcntl
import os
import pty
import shutil
import struct
import subprocess
import tempfile
import termios

import pytest

from weftlib import DATA_DIR, OVNI_DATA, WEFT, run_weft

FAST = {"WEFT_PROGRESS_INTERVAL_NS": "0"}
OVNI = OVNI_DATA / "v3" / "bench-mix-small"
ROSS = DATA_DIR / "ross" / "phold-rt-pekplp" / "np2"
HEPH = DATA_DIR / "heph" / "heph_sample.bin.log"
CLEAR = b"\r\x1b[K"


def run_on_tty(args, env=None, stdout="file"):
    """Runs weft with stderr on a pseudo-terminal and stdout on a file,
    the same terminal ("tty") or a pipe ("pipe": small outputs only, it is
    read at the end). Returns (exit status, stdout, stderr)."""
    master, slave = pty.openpty()
    # 200 columns: the line is cut to the terminal's width (80 by default)
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 200, 0, 0))
    full_env = dict(os.environ, **(env or {}))
    out_file = tempfile.TemporaryFile()
    target = {"tty": slave, "pipe": subprocess.PIPE, "file": out_file}[stdout]
    proc = subprocess.Popen([WEFT, *map(str, args)], stdin=subprocess.DEVNULL,
                            stdout=target, stderr=slave, env=full_env)
    os.close(slave)
    err = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # the slave side is closed: the process ended
            break
        if not chunk:
            break
        err += chunk
    os.close(master)
    out = proc.stdout.read() if stdout == "pipe" else b""
    proc.wait(timeout=120)
    out_file.seek(0)
    out = out or out_file.read()
    out_file.close()
    return proc.returncode, out, err


def progress_lines(err):
    """The progress lines drawn: "\\r<line>\\033[K" (not the clearing
    "\\r\\033[K", nor the other lines' "\\r\\n" of the terminal)."""
    return [part[:-3].decode() for part in err.split(b"\r")[1:]
            if part.endswith(b"\x1b[K") and len(part) > 3]


def cleared_at_the_end(err):
    """1 when the last line drawn is cleared right after it."""
    last = err.rfind(b"\x1b[K\r")
    return last >= 0 and err[last + 3:].startswith(CLEAR)


def commands(tmp_path):
    """(name, arguments) of the commands that show a progress line."""
    sorted_copy = tmp_path / "sort-me"
    shutil.copytree(OVNI_DATA / "v3" / "ovni-sort-unsorted", sorted_copy)
    return [
        ("convert", ["convert", OVNI, "-t", "chrome", "-o", tmp_path / "out.json"]),
        ("dump", ["dump", OVNI]),
        ("check", ["check", OVNI]),
        ("sort", ["sort", sorted_copy]),
        ("info", ["info", OVNI]),
        ("table", ["table", "--level", "pe", "-o", tmp_path / "pe.csv", ROSS]),
    ]


@pytest.mark.parametrize("name", ["convert", "dump", "check", "sort", "info", "table"])
def test_progress_line_on_a_terminal(tmp_path, name):
    args = dict(commands(tmp_path))[name]
    status, _, err = run_on_tty(args, FAST)
    assert status == 0, err
    lines = progress_lines(err)
    assert lines, err
    assert all(line.startswith(f"weft {name}: ") for line in lines), lines
    assert any(" events" in line for line in lines), lines
    # the bytes are known (ovni, ROSS): a percentage and "X of Y"
    assert any("%" in line and " of " in line for line in lines), lines
    assert cleared_at_the_end(err), err[-200:]


def test_progress_line_names_the_phase_and_ends_at_100_percent(tmp_path):
    _, _, err = run_on_tty(["convert", HEPH, "-t", "chrome", "-o",
                            tmp_path / "h.json"], FAST)
    lines = progress_lines(err)
    assert any(line.endswith("(opening)") for line in lines), lines
    converting = [line for line in lines if line.endswith("(converting)")]
    assert converting and "100%" in converting[-1], lines


@pytest.mark.parametrize("name", ["convert", "dump", "check", "sort", "info", "table"])
def test_quiet_and_pipes_show_no_line(tmp_path, name):
    args = dict(commands(tmp_path))[name]
    if name == "sort":  # sort once: the runs below find it sorted, all alike
        run_weft(*args, expect=0)
    if name in ("convert", "table"):
        args = args + ["--force"]
    # stderr a pipe: what the command says (warnings), never a line, even
    # with the progress called at every batch
    plain = subprocess.run([WEFT, *map(str, args)], capture_output=True)
    fast = subprocess.run([WEFT, *map(str, args)], capture_output=True,
                          env=dict(os.environ, **FAST))
    assert fast.returncode == plain.returncode == 0
    assert fast.stderr == plain.stderr and b"\r" not in plain.stderr
    for quiet in ("--quiet", "-q"):
        status, _, err = run_on_tty(args + [quiet], FAST)
        assert status == 0
        # the terminal writes "\r\n" for "\n": the same text, no line drawn
        assert err.replace(b"\r\n", b"\n") == plain.stderr, err


def test_dump_to_the_terminal_or_a_pipe_shows_no_line():
    # stdout on the same terminal: the line would cut through the events
    status, out, err = run_on_tty(["dump", OVNI], FAST, stdout="tty")
    assert status == 0
    assert CLEAR not in err and b"weft dump:" not in err
    # a pipe is often a pager (| less), whose screen the line would spoil
    status, out, err = run_on_tty(["dump", HEPH], FAST, stdout="pipe")
    assert status == 0 and out.count(b"\n") == 21
    assert err == b"", err
    # the same small dump into a file does show it
    status, out, err = run_on_tty(["dump", HEPH], FAST)
    assert status == 0 and progress_lines(err), err


def test_verbose_lines_on_a_pipe_and_a_terminal(tmp_path):
    out = tmp_path / "v.json"
    proc = run_weft("convert", "--verbose", OVNI, "-t", "chrome", "-o", out, expect=0)
    lines = proc.stderr.splitlines()
    assert any(line.startswith(f"weft convert: opened '{OVNI}': format ovni, "
                               "layout version 3, ") for line in lines), lines
    assert any(line.startswith("weft convert: opening: ") for line in lines), lines
    assert any(line.startswith("weft convert: converting: ") and " events" in line
               for line in lines), lines
    assert any(line.startswith("weft convert: writing: ") for line in lines), lines
    assert "weft convert: threads used: 2" in lines, lines
    assert any(line.startswith("weft convert: done in ") for line in lines), lines
    # on a terminal: the same lines, the progress line cleared before them
    status, _, err = run_on_tty(["convert", "-v", "-f", OVNI, "-t", "chrome", "-o", out], FAST)
    assert status == 0
    text = err.replace(CLEAR, b"").decode()
    kept = [line.split("\r")[0] for line in text.splitlines()]
    assert any(line.startswith("weft convert: opened ") for line in kept), kept
    assert "weft convert: threads used: 2" in kept, kept


def test_verbose_threads_of_dump():
    for threads in ("1", "2"):
        proc = run_weft("dump", "-v", "--threads", threads, OVNI, expect=0)
        assert f"weft dump: threads used: {threads}" in proc.stderr.splitlines(), proc.stderr
        assert "weft dump: dumping: " in proc.stderr


def test_verbose_does_not_change_stdout(tmp_path):
    for args in (["dump", OVNI], ["info", OVNI], ["check", OVNI]):
        plain = run_weft(*args, expect=0)
        verbose = run_weft(*args, "--verbose", expect=0)
        assert verbose.stdout == plain.stdout
        assert plain.stderr == ""


def test_warnings_are_printed_with_quiet(tmp_path):
    # --quiet silences the progress only: diagnostics stay
    trace = DATA_DIR / "heph" / "heph_sample_compat.bin.log"
    plain = run_weft("dump", trace)
    quiet = run_weft("dump", "--quiet", trace)
    assert quiet.stderr == plain.stderr and quiet.returncode == plain.returncode


@pytest.mark.parametrize("trace", [
    OVNI_DATA / "v3" / "mpi-func-4procs", DATA_DIR / "otf2" / "mpi-threads" / "traces.otf2",
    DATA_DIR / "heph" / "heph_sample.bin.log", DATA_DIR / "pallas" / "weft_order" / "trace",
    DATA_DIR / "ross" / "phold-vt-pekplp" / "np1"], ids=lambda p: p.parts[-2])
def test_verbose_counts_each_event_once(trace):
    """The events of --verbose are the events read, each counted once
    (an OTF2 stream counted its batches as the cursor did: twice)."""
    lines = run_weft("dump", trace, expect=0).stdout.count("\n")
    proc = run_weft("top", "--verbose", "--threads", "1", trace, expect=0)
    counting = [line for line in proc.stderr.splitlines() if line.startswith("weft top: counting: ")]
    assert len(counting) == 1, proc.stderr
    count = counting[0].split(", ")[1]
    want = f"{lines} events" if lines < 1000 else f"{lines / 1000:.3g} k events"
    assert count == want, (counting, lines)
