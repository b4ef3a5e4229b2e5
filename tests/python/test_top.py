# SPDX-License-Identifier: MIT
"""`weft top` against ovnitop: the same counts per MCV in the same order,
for every reference trace; --streams adds correct per-stream tables."""

import collections

import pytest

from weftlib import (OLD_TRACES, parse_dump, parse_v1_dump, run_weft, v3_dir,
                     v3_traces)


@pytest.mark.parametrize("name", v3_traces())
def test_top_equals_ovnitop(name):
    ours = run_weft("top", v3_dir(name) / "ovni", expect=0).stdout
    assert ours == (v3_dir(name) / "ovnitop.txt").read_text()


def parse_top(text):
    """[(code, count)] of a top table ("OHx       1964" lines)."""
    rows = []
    for line in text.splitlines():
        code, count = line.rsplit(None, 1)
        rows.append((code.strip(), int(count)))
    return rows


@pytest.mark.parametrize("version", sorted(OLD_TRACES))
def test_top_counts_old_layouts(version):
    base = OLD_TRACES[version]
    golden_text = (base / "golden" / "ovnidump.txt").read_text()
    golden = parse_v1_dump(golden_text) if version == 1 else parse_dump(golden_text)
    expected = collections.Counter(e.mcv for e in golden)
    ours = dict(parse_top(run_weft("top", base / "ovni", expect=0).stdout))
    assert ours == dict(expected)


def parse_top_streams(text):
    """Overall table and {stream path: {code: count}} of top --streams."""
    blocks = text.split("\n\n")
    overall = dict(parse_top(blocks[0]))
    per_stream = {}
    for block in blocks[1:]:
        lines = block.splitlines()
        assert lines[0].endswith(":")
        assert all(l.startswith("  ") for l in lines[1:])
        per_stream[lines[0][:-1]] = dict(parse_top("\n".join(lines[1:])))
    return overall, per_stream


@pytest.mark.parametrize("name", ["bench-mix-small", "mpi-func-4procs"])
def test_top_per_stream(name):
    out = run_weft("top", "--streams", v3_dir(name) / "ovni", expect=0).stdout
    overall, per_stream = parse_top_streams(out)
    golden = parse_dump((v3_dir(name) / "ovnidump-x.txt").read_text())
    expected = collections.defaultdict(collections.Counter)
    for e in golden:
        expected[e.path][e.mcv] += 1
    assert per_stream == {p: dict(c) for p, c in expected.items()}
    assert overall == dict(sum(expected.values(), collections.Counter()))
    assert out.startswith((v3_dir(name) / "ovnitop.txt").read_text())
