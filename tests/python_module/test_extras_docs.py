# SPDX-License-Identifier: MIT
"""The examples of docs/python.md, "Format extras", run as they are, on
the traces of tests/data linked under the names they use."""

import os
import re

import pytest

from conftest import DATA, REPO

LINKS = {
    "run": DATA / "ross" / "im-everything" / "np1",
    "pallas": DATA / "pallas" / "write_pattern" / "trace",
    "marks": DATA / "ovni" / "v3" / "ovni-mark-4procs" / "ovni",
    "heph.bin.log": DATA / "heph" / "heph_sample.bin.log",
}


def examples():
    """The python blocks of the section "## Format extras"."""
    text = (REPO / "docs" / "python.md").read_text()
    section = text.split("## Format extras\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, re.S)


def test_the_section_has_an_example_per_format():
    blocks = examples()
    assert len(blocks) == 4
    for call in ("ross_table", "grammar", "fields=True", "marks"):
        assert any(call in b for b in blocks), call


def test_examples_run(tmp_path, monkeypatch, capsys):
    for name, target in LINKS.items():
        os.symlink(target, tmp_path / name)
    monkeypatch.chdir(tmp_path)
    namespace = {}
    for block in examples():
        exec(compile(block, "docs/python.md", "exec"), namespace)
    out = capsys.readouterr().out
    assert "['pe', 'kp', 'lp', 'model', 'event']" in out
    assert "<weft.Grammar 'archive_0/thread_0'" in out
    assert namespace["runtime"].tolist() == [1]
    assert set(namespace["pushed"].index) <= {"Blue", "Gray", "Red"}
    assert len(namespace["gvt"]) == 1 and namespace["stored"].attrs["source"] == "durations"
    with pytest.raises(AssertionError):  # the examples check what they say
        exec("assert d.sum() == g.sequences['total_ns'][i] + 1", namespace)
