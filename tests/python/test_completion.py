# SPDX-License-Identifier: MIT
"""The shell completion scripts (data/completion/): bash's is sourced in
bash and asked as bash asks it (COMP_WORDS, COMP_CWORD, then the
function); zsh's is loaded in zsh with compsys's builtins replaced by
functions that print what they are given (zsh completes only inside the
line editor), so what is checked is the words it offers. Both ask
`weft __complete`, whose values are checked against the help texts."""

import re
import shutil
import subprocess

import pytest

from weftlib import REPO_DIR, WEFT, run_weft

COMPLETION_DIR = REPO_DIR / "data" / "completion"
FORMATS = ["auto", "ovni", "heph", "ross", "pallas", "otf2"]
OUTPUTS = ["perfetto", "chrome", "paraver", "pallas", "otf2"]


def bash_complete(*words):
    """The words bash's completion offers for the command line `words`
    (the last one is the word being completed)."""
    script = (f'source "{COMPLETION_DIR}/weft.bash"\n'
              'COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _weft\n'
              'printf "%s\\n" "${COMPREPLY[@]}"\n')
    proc = subprocess.run(["bash", "-c", script, "bash", WEFT, *words],
                          capture_output=True, text=True, cwd=REPO_DIR, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return [w for w in proc.stdout.splitlines() if w]


ZSH_STUBS = r'''
compadd() { if [[ $1 == -a ]]; then print -rl -- ${(P)2}; else shift; print -rl -- "$@"; fi }
_describe() { local name; for name in ${(P)4}; do print -r -- ${name%%:*}; done }
_files() { print -r -- '<files>' }
_call_program() { shift; eval "$@" }
compset() { : }
fpath=("$1" $fpath)
autoload -U _weft
shift
words=("$@")
CURRENT=$#
_weft
'''


def zsh_complete(*words):
    """The words zsh's completion function offers for `words`."""
    zsh = shutil.which("zsh")
    if zsh is None:
        pytest.skip("zsh is not installed (Debian: zsh; scripts/setup-deps.sh installs it)")
    proc = subprocess.run([zsh, "-f", "-c", ZSH_STUBS, "zsh", str(COMPLETION_DIR), WEFT, *words],
                          capture_output=True, text=True, cwd=REPO_DIR, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return [w for w in proc.stdout.splitlines() if w]


def test_bash_commands():
    assert bash_complete("d") == ["dump"]
    assert set(bash_complete("")) >= {"info", "dump", "convert", "profile", "--help", "-V"}


def test_bash_options_of_a_command():
    assert bash_complete("dump", "--f") == ["--format", "--from"]
    assert "--force" in bash_complete("convert", "--f")
    assert bash_complete("sort", "-") == run_weft("__complete", "options", "sort",
                                                  expect=0).stdout.split()


def test_bash_values():
    assert bash_complete("convert", "--format", "") == FORMATS
    assert bash_complete("dump", "--format", "=", "o") == ["ovni", "otf2"]
    assert bash_complete("dump", "--format=h") == ["--format=heph"]
    assert bash_complete("convert", "-t", "") == OUTPUTS
    assert bash_complete("convert", "--to", "") == []  # a time (--to FORMAT is deprecated)
    assert bash_complete("dump", "--ross-kind", "") == ["gvt", "rt", "vt", "evtrace", "model"]
    assert bash_complete("profile", "--by", "") == ["name", "stream"]
    assert bash_complete("table", "-l", "") == ["pe", "kp", "lp", "model", "event"]
    assert bash_complete("plot", "--level", "") == ["pe", "kp"]
    assert bash_complete("dump", "--from", "") == []


def test_bash_output_format_of_convert():
    """convert's output format option completes the outputs, under
    every name convert accepts for it."""
    spellings = run_weft("__complete", "options", "convert", expect=0).stdout.split()
    for option in ("-t", "--format-out", "--output-format"):
        assert option in spellings
        assert bash_complete("convert", option, "") == OUTPUTS


def test_bash_mpi_and_sync():
    """`weft --mpi COMMAND` completes as `weft COMMAND`, shifted by one
    word; `weft sync` (run by weft-mpi) completes its own options."""
    assert bash_complete("--m") == ["--mpi"]
    assert bash_complete("--mpi", "p") == ["plot", "profile"]
    assert "--mpi" not in bash_complete("--mpi", "")
    assert bash_complete("--mpi", "profile", "--b") == ["--by"]
    assert bash_complete("--mpi", "profile", "--by", "") == ["name", "stream"]
    assert bash_complete("--mpi", "dump", "--format", "=", "o") == ["ovni", "otf2"]
    assert "sync" in bash_complete("s")
    assert bash_complete("sync", "--r") == ["--rounds"]
    assert bash_complete("sync", "-o", "tests/da") == ["tests/data"]


def test_bash_files():
    assert bash_complete("dump", "tests/data/he") == ["tests/data/heph"]
    assert bash_complete("dump", "--clock-offsets", "tests/da") == ["tests/data"]
    assert bash_complete("dump", "-x", "tests/data/he") == ["tests/data/heph"]


def test_zsh_commands_options_values():
    # The stubs print every word offered: compsys, not _weft, keeps those
    # that start with what was typed.
    assert zsh_complete("d") == commands() + ["sync", "-h", "--help", "-V", "--version", "--mpi"]
    assert "--from" in zsh_complete("dump", "--f")
    assert "--force" not in zsh_complete("dump", "--f")
    assert zsh_complete("convert", "--format", "") == FORMATS
    assert zsh_complete("convert", "--format-out", "") == OUTPUTS
    assert zsh_complete("dump", "--format=") == FORMATS
    assert zsh_complete("profile", "--by", "") == ["name", "stream"]
    assert zsh_complete("dump", "--clock-offsets", "") == ["<files>"]
    assert zsh_complete("dump", "--from", "") == []
    assert zsh_complete("dump", "") == ["<files>"]
    assert zsh_complete("--mpi", "") == commands() + ["sync"]
    assert zsh_complete("--mpi", "profile", "--by", "") == ["name", "stream"]
    assert "--rounds" in zsh_complete("sync", "-")


def commands():
    out = run_weft("__complete", "commands", expect=0).stdout
    return [line.split("\t")[0] for line in out.splitlines()]


@pytest.mark.parametrize("command", commands())
def test_values_are_in_the_help(command):
    """Every value `weft __complete` offers for an option of a command is
    named in that command's --help (the lists cannot drift apart)."""
    help_text = run_weft(command, "--help", expect=0).stdout
    words = set(re.findall(r"[\w.-]+", help_text))
    for option in run_weft("__complete", "options", command, expect=0).stdout.split():
        proc = run_weft("__complete", "values", command, option)
        if proc.returncode != 0 or proc.stdout.strip() in ("", "@file"):
            continue
        for value in proc.stdout.split():
            assert value in words, (
                f"weft __complete offers '{value}' for 'weft {command} {option}', "
                f"which 'weft {command} --help' does not name")
