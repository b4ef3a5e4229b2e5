# SPDX-License-Identifier: MIT
"""Every command on paths that are not traces it can open: a missing path,
an empty directory, an empty file, a directory of another format (or of
none), a file or directory without read permission, and a forced format
given the other kind of path. Each must exit 2 with one message that names
the path and says why, print nothing on standard output, not crash, and
leave no output file (not even a temporary one) behind."""

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

import weftlib
from weftlib import DATA_DIR, WEFT

OVNI_DIR = DATA_DIR / "ovni" / "v3" / "mpi-func-4procs" / "ovni"
ROSS_DIR = DATA_DIR / "ross" / "phold-gvt-pekplp" / "np2"
PALLAS_DIR = DATA_DIR / "pallas" / "wb_enterleave_f3_n1000_t2_logical" / "trace"
HEPH_FILE = DATA_DIR / "heph" / "heph_sample.bin.log"

# Every command, with the options it needs to get as far as opening the
# trace; "{out}" is an output path in a directory that must stay empty.
COMMANDS = {
    "info": ["info"],
    "dump": ["dump"],
    "dump-json": ["dump", "--json"],
    "top": ["top"],
    "check": ["check"],
    "sort": ["sort"],
    "sort-check": ["sort", "--check"],
    "table": ["table", "--level", "pe", "-o", "{out}"],
    "summary": ["summary"],
    "plot": ["plot", "-o", "{out}"],
    "profile": ["profile"],
    "convert-perfetto": ["convert", "-t", "perfetto", "-o", "{out}"],
    "convert-chrome": ["convert", "-t", "chrome", "-o", "{out}"],
    "convert-heph-compat": ["convert", "-t", "chrome", "--heph-compat", "-o", "{out}"],
    "convert-paraver": ["convert", "-t", "paraver", "-o", "{out}"],
    "convert-pallas": ["convert", "-t", "pallas", "-o", "{out}"],
}


def make_paths(root):
    """name -> (path, text expected in the message) for automatic detection."""
    empty_dir = root / "empty-dir"
    empty_dir.mkdir()
    empty_file = root / "empty-file"
    empty_file.write_bytes(b"")
    other = root / "not-a-trace"
    other.mkdir()
    (other / "notes.txt").write_text("nothing to see\n")
    heph_dir = root / "heph-files"  # Heph traces are files, not directories
    heph_dir.mkdir()
    shutil.copy(HEPH_FILE, heph_dir)
    text_file = root / "notes.txt"
    text_file.write_text("not a trace\n")
    return {
        "missing": (root / "nonexistent", "no such file or directory"),
        "missing-below-file": (text_file / "x", "no such file or directory"),
        "empty-dir": (empty_dir, "an empty directory, not a trace"),
        "empty-file": (empty_file, "an empty file, not a trace"),
        "other-dir": (other, "not a trace of any supported format"),
        "heph-dir": (heph_dir, "not a trace of any supported format"),
        "text-file": (text_file, "not a trace of any supported format"),
        "device": (Path("/dev/null"), "neither a regular file nor a directory"),
    }


# `sort` reads only ovni traces (the format is forced): ovni's reasons.
SORT_REASONS = {
    "empty-dir": "no ovni stream found",
    "other-dir": "no ovni stream found",
    "heph-dir": "no ovni stream found",
    "empty-file": "expected the 8-byte stream header",
    "text-file": "expected the magic \"ovni\"",
}

# A forced format given a path of another format: the format's own reason.
FORCED = {
    "heph-on-dir": ("heph", OVNI_DIR, "a directory; expected a Heph trace file"),
    "ovni-on-ross": ("ovni", ROSS_DIR, "no ovni stream found"),
    "ross-on-ovni": ("ross", OVNI_DIR, "expected ROSS files"),
    "pallas-on-ovni": ("pallas", OVNI_DIR, "expected a Pallas main file"),
    "ovni-on-missing": ("ovni", Path("/nonexistent/trace"), "no such file or directory"),
    "heph-on-missing": ("heph", Path("/nonexistent/x.bin.log"), "no such file or directory"),
}


def run_on(tmp_path, command, path, extra=()):
    """Runs one command on `path` with its output in an empty directory;
    returns (process, the entries of that directory afterwards)."""
    out_dir = tmp_path / ("out-" + command)
    out_dir.mkdir(exist_ok=True)
    args = [a.replace("{out}", str(out_dir / "result")) for a in COMMANDS[command]]
    proc = subprocess.run([WEFT, *args, *extra, str(path)], capture_output=True,
                          text=True, timeout=120)
    return proc, sorted(os.listdir(out_dir))


def check_refused(proc, left, path, reason):
    """Exit 2 (not a crash), the path and the reason on stderr, nothing else."""
    assert proc.returncode == 2, f"exit {proc.returncode}\nstderr: {proc.stderr}"
    assert f"'{path}'" in proc.stderr, proc.stderr
    assert reason in proc.stderr, proc.stderr
    assert proc.stderr.count("\n") == 1, proc.stderr
    assert proc.stdout == ""
    assert left == [], f"left behind: {left}"


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_command_refuses_what_is_not_a_trace(tmp_path, command):
    (tmp_path / "in").mkdir()
    for name, (path, reason) in make_paths(tmp_path / "in").items():
        if command.startswith("sort"):
            reason = SORT_REASONS.get(name, reason)
        proc, left = run_on(tmp_path, command, path)
        try:
            check_refused(proc, left, path, reason)
        except AssertionError as e:
            raise AssertionError(f"weft {command} on {name} ({path}): {e}") from None


@pytest.mark.parametrize("case", sorted(FORCED))
@pytest.mark.parametrize("command", sorted(c for c in COMMANDS if not c.startswith("sort")))
def test_forced_format_refuses_the_other_kind_of_path(tmp_path, command, case):
    fmt, path, reason = FORCED[case]
    proc, left = run_on(tmp_path, command, path, ["--format", fmt])
    check_refused(proc, left, path, reason)


def test_the_list_of_formats_names_every_format(tmp_path):
    """The list comes from the backend table: Pallas is in it."""
    empty = tmp_path / "e"
    empty.mkdir()
    err = weftlib.run_weft("info", empty, expect=2).stderr
    for what in ("ovni trace directory", "Heph trace file", "ROSS run directory",
                 "Pallas trace directory"):
        assert what in err, err


def test_profile_of_every_format_and_of_a_missing_trace():
    """It crashed (exit 139) after printing the open error; it refused
    other formats than Pallas, which it now profiles from their spans."""
    for path in (ROSS_DIR, OVNI_DIR, HEPH_FILE):
        proc = weftlib.run_weft("profile", path, expect=0)
        assert proc.stdout.startswith("region ") and proc.stderr == ""
    err = weftlib.run_weft("profile", "/nonexistent", expect=2).stderr
    assert err == "weft profile: cannot open '/nonexistent': no such file or directory\n"


def test_forced_heph_on_a_directory_names_it():
    """The message had an empty file name (': cannot read: Is a directory')."""
    err = weftlib.run_weft("info", "--format", "heph", OVNI_DIR, expect=2).stderr
    assert err == (f"weft info: cannot open '{OVNI_DIR}': a directory; "
                   "expected a Heph trace file\n")


def unprivileged():
    """The command prefix that runs weft as an ordinary user, or None."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        return None
    return [setpriv, "--reuid=nobody", "--regid=nogroup", "--clear-groups"]


@pytest.mark.parametrize("kind", ["file", "dir"])
def test_unreadable_path_is_named_with_the_reason(kind):
    prefix = unprivileged()
    if prefix is None:
        pytest.skip("running as root without setpriv: every file is readable")
    if prefix and not os.access(WEFT, os.X_OK):
        pytest.skip("weft is not executable by an ordinary user")
    root = Path(tempfile.mkdtemp(prefix="weft-perm-"))
    try:
        os.chmod(root, 0o755)
        if kind == "file":
            path = root / "trace.bin.log"
            shutil.copy(HEPH_FILE, path)
        else:
            path = root / "trace"
            shutil.copytree(OVNI_DIR, path)
        os.chmod(path, 0)
        proc = subprocess.run([*prefix, WEFT, "info", str(path)], capture_output=True,
                              text=True, timeout=60)
        if prefix and "Permission denied" not in proc.stderr and proc.returncode == 126:
            pytest.skip("the build directory is not reachable by an ordinary user")
        reason = "cannot read the file" if kind == "file" else "cannot list the directory"
        check_refused(proc, [], path, reason + ": Permission denied")
    finally:
        os.chmod(path, 0o755)
        shutil.rmtree(root)
