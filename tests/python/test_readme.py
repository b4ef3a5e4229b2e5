# SPDX-License-Identifier: MIT
"""The README's quick start runs: every command of its table, on a trace
of tests/data (TRACE: an ovni trace, RUN: a ROSS run), parses its options,
opens the trace and writes what it says (exit 0)."""

import re
import shlex
import shutil
from pathlib import Path

import pytest

from weftlib import DATA_DIR, REPO_DIR, WEFT, run_weft

OVNI = DATA_DIR / "ovni" / "v3" / "nosv-parallel-tasks" / "ovni"
ROSS_RUN = DATA_DIR / "ross" / "im-everything" / "np1"


def quick_start_commands():
    """The `weft ...` commands in the quick start table."""
    text = (REPO_DIR / "README.md").read_text()
    section = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    commands = []
    for row in section.splitlines():
        if not row.startswith("| ") or row.startswith("| I want") or "---" in row:
            continue
        for code in re.findall(r"`([^`]+)`", row.rsplit(" | ", 1)[1]):
            if code.startswith("weft "):
                commands.append(code.replace("\\|", "|"))
    return commands


def test_the_table_has_commands():
    assert len(quick_start_commands()) >= 15


@pytest.mark.parametrize("command", quick_start_commands())
def test_quick_start_command_runs(tmp_path, command):
    words = shlex.split(command.split("|")[0].split(">")[0])
    assert words[0] == "weft"
    trace = tmp_path / "trace" / "ovni"  # a copy: `weft sort` writes into it
    shutil.copytree(OVNI, trace)
    args = []
    for w in words[1:]:
        w = {"TRACE": str(trace), "ovni/": str(trace), "RUN": str(ROSS_RUN)}.get(w, w)
        if w.startswith(("run", "pe.", "out/")):
            w = str(tmp_path / w)
        args.append(w)
    proc = run_weft(*args)
    assert proc.returncode == 0, (command, proc.stderr)
    out = [Path(a) for a in args if a.startswith(str(tmp_path)) and not a.startswith(str(trace))]
    for path in out:  # a file, a base name (paraver: run.prv...) or a directory
        assert any(p.name.startswith(path.name) for p in tmp_path.iterdir()), \
            (command, "wrote nothing")
