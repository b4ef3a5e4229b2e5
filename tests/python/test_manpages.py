# SPDX-License-Identifier: MIT
"""The man pages the build generates from the help texts
(scripts/gen-manpages.py, in BUILD/man/man1): one per command and
weft(1), each with its NAME from the command's summary, every option of
its --help, a SEE ALSO, and no warning from groff. The install test
checks the installed copies with `man -l`."""

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from weftlib import WEFT, run_weft

BUILD_DIR = Path(os.environ.get("WEFT_BUILD_DIR", Path(WEFT).parent))
MAN_DIR = BUILD_DIR / "man" / "man1"


def commands():
    """{command: summary} of `weft __complete commands`."""
    out = run_weft("__complete", "commands", expect=0).stdout
    return dict(line.split("\t", 1) for line in out.splitlines())


COMMANDS = commands()
PAGES = ["weft"] + ["weft-" + c for c in COMMANDS]


def page_text(name):
    path = MAN_DIR / (name + ".1")
    if not MAN_DIR.is_dir():
        pytest.skip(f"no man pages in {MAN_DIR} (WEFT_MANPAGES=OFF?)")
    assert path.is_file(), f"the build wrote no man page {path}"
    return path.read_text()


def test_no_page_of_a_removed_command():
    page_text("weft")
    assert sorted(p.name for p in MAN_DIR.glob("*.1")) == sorted(p + ".1" for p in PAGES)


@pytest.mark.parametrize("name", PAGES)
def test_page_says_what_the_help_says(name):
    text = page_text(name)
    command = name.split("-", 1)[1] if "-" in name else None
    name_line = text.split(".SH NAME\n", 1)[1].splitlines()[0]
    assert name_line.startswith(name.replace("-", "\\-") + " \\- ")
    if command:
        assert name_line.endswith(COMMANDS[command].replace("-", "\\-"))
    help_text = run_weft(*([command] if command else []), "--help", expect=0).stdout
    for option in set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", help_text)):
        assert "\\fB" + option.replace("-", "\\-") in text or \
            option.replace("-", "\\-") in text, f"{name}.1 lacks {option}"
    see_also = text.split(".SH SEE ALSO\n", 1)[1]
    for other in PAGES:
        if other != name:
            assert ".BR %s (1)" % other.replace("-", "\\-") in see_also


@pytest.mark.parametrize("name", PAGES)
def test_page_renders_without_warnings(name):
    page_text(name)
    groff = shutil.which("groff")
    if groff is None:
        pytest.skip("groff is not installed (Debian: groff-base)")
    proc = subprocess.run([groff, "-ww", "-z", "-man", str(MAN_DIR / (name + ".1"))],
                          capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
