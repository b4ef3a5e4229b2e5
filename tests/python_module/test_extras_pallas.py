# SPDX-License-Identifier: MIT
"""Trace.grammar() (issue 16, format extras): for every thread of every
Pallas trace of tests/data, the grammar's events, sequences, loops, tokens
and root equal what `weft dump --structure` prints; each sequence's
stored durations (numpy uint64, one per occurrence) have the counts,
minimum, maximum and exact sums of the C summaries and totals; the
stored-duration profile equals `weft profile --json` with each source."""

import json
import re
import subprocess

import numpy as np
import pandas as pd
import pytest

import weft
from conftest import DATA, weft_bin

PALLAS = sorted(DATA.glob("pallas/*/trace"))
IDS = [p.parent.name for p in PALLAS]

SEQ = re.compile(r"^( *)S(\d+) (.*)  (block|loop body)  x(\d+)"
                 r"(?:  duration min (\d+) max (\d+) mean (\d+) ns)?(  \(above\))?$")
DEAD = re.compile(r"^( *)S(\d+) \(no tokens\)$")
LOOP = re.compile(r"^( *)L(\d+)  (\d+) iterations  x(\d+)$")
EVENT = re.compile(r"^( *)E(\d+) (.*)  x(\d+)$")


def structure(path):
    """`weft dump --structure` by stream path: the lines of each thread's
    tree as (depth, letter, index, match)."""
    r = subprocess.run([weft_bin(), "dump", "--structure", str(path)], capture_output=True,
                       text=True, check=False)
    assert r.returncode == 0, r.stderr
    out, current = {}, None
    for line in r.stdout.splitlines():
        head = re.match(r"^--- (.*): (\d+) events, (\d+) sequences, (\d+) loops ---$", line)
        if head:
            current = out.setdefault(head.group(1), {"counts": tuple(map(int, head.groups()[1:])),
                                                      "lines": []})
            continue
        for letter, pattern in (("S", SEQ), ("S", DEAD), ("L", LOOP), ("E", EVENT)):
            m = pattern.match(line)
            if m:
                current["lines"].append((len(m.group(1)) // 2, letter, int(m.group(2)), m))
                break
        else:
            raise AssertionError("unparsed line %r" % line)
    return out


def children(lines, k):
    """The direct children of line k of a tree: the tokens of a sequence."""
    depth = lines[k][0]
    out = []
    for d, letter, index, _ in lines[k + 1:]:
        if d <= depth:
            break
        if d == depth + 1:
            out.append((letter, index))
    return out


def check_tree(g, tree):
    """The grammar against the printed tree of its thread."""
    lines = tree["lines"]
    assert tree["counts"] == (len(g.events), len(g.sequences), len(g.loops))
    assert lines[0][1:3] == ("S", g.root)
    letters = {"event": "E", "sequence": "S", "loop": "L"}
    seen = set()
    for k, (depth, letter, index, m) in enumerate(lines):
        if letter == "E":
            row = g.events.iloc[index]
            assert (m.group(3), int(m.group(4))) == (row.description, row.occurrences)
        elif letter == "L":
            row = g.loops.iloc[index]
            assert (int(m.group(3)), int(m.group(4))) == (row.iterations, row.occurrences)
            assert lines[k + 1][1:3] == ("S", row.body)
        elif m.re is DEAD:
            assert g.sequences.kind.iloc[index] == "dead"
        else:
            row = g.sequences.iloc[index]
            kind = "loop_body" if m.group(4) == "loop body" else "block"
            assert (m.group(3), kind, int(m.group(5))) == (row["name"], row.kind, row.occurrences)
            if m.group(6) is not None:
                assert tuple(int(m.group(i)) for i in (6, 7, 8)) == \
                    (row.min_ns, row.max_ns, row.mean_ns)
            if m.group(9) is None:  # printed in full: its children are its tokens
                tokens = g.tokens(index)
                assert children(lines, k) == [(letters[kd], int(i)) for kd, i in
                                              zip(tokens["kind"], tokens["index"])]
                assert len(tokens) == row.token_count
                seen.add(index)
    return seen


@pytest.mark.parametrize("path", PALLAS, ids=IDS)
def test_grammar_equals_the_structure_dump(path):
    trees = structure(path)
    with weft.open(path) as t:
        assert sorted(trees) == sorted(t.stream_paths)
        for s, stream in enumerate(t.stream_paths):
            g = t.grammar(stream)
            assert g.stream == s and g.stream_path == stream
            seen = check_tree(g, trees[stream])
            live = set(np.flatnonzero((g.sequences.kind != "dead").to_numpy()))
            assert seen <= live and len(seen) > 0


@pytest.mark.parametrize("path", PALLAS, ids=IDS)
def test_durations_match_the_summaries_and_totals(path):
    """Every live sequence: as many stored durations as occurrences, their
    sum the exact total (weft_pallas_grammar_sequence_totals), their min and
    max the stored summary's; the same for the exclusive durations."""
    checked = 0
    with weft.open(path) as t:
        for s in range(len(t.stream_paths)):
            g = t.grammar(s)
            for i, row in enumerate(g.sequences.itertuples()):
                if row.kind == "dead":
                    continue
                for prefix, exclusive in (("", False), ("exclusive_", True)):
                    d = g.durations(i, exclusive=exclusive)
                    assert d.dtype == np.uint64 and d.ndim == 1
                    assert len(d) == getattr(row, prefix + "occurrences")
                    assert int(d.sum(dtype=np.uint64)) == getattr(row, prefix + "total_ns")
                    if len(d):
                        assert (int(d.min()), int(d.max())) == \
                            (getattr(row, prefix + "min_ns"), getattr(row, prefix + "max_ns"))
                checked += 1
            # without totals: the headers only, the same summaries
            light = t.grammar(s, totals=False)
            assert "total_ns" not in light.sequences
            pd.testing.assert_frame_equal(light.sequences, g.sequences.drop(
                columns=["total_ns", "exclusive_total_ns"]))
    assert checked > 0


def cli_profile(path, *args):
    r = subprocess.run([weft_bin(), "profile", "--json", "--instants", *args, str(path)],
                       capture_output=True, text=True, check=False)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    return {row["region"]: row for row in doc["regions"]}, doc


@pytest.mark.parametrize("source,args", [("durations", []), ("headers", ["--headers-only"]),
                                         ("replay", ["--replay"])])
@pytest.mark.parametrize("path", PALLAS, ids=IDS)
def test_stored_duration_profile_equals_the_command(path, source, args):
    want, _ = cli_profile(path, *args)
    with weft.open(path) as t:
        got = t.profile(source=source)
    assert got.attrs["source"] == source
    assert {r.region: (r.calls, r.total_ns, r.exclusive_ns, r.min_ns, r.max_ns)
            for r in got.itertuples()} == \
        {k: (w["count"], w["total_ns"], w["exclusive_ns"], w["min_ns"], w["max_ns"])
         for k, w in want.items()}


@pytest.mark.parametrize("path", PALLAS, ids=IDS)
def test_region_durations_add_up_to_the_profile(path):
    """The stored durations of the blocks of a region, over every thread,
    are the profile's calls and total of that region."""
    with weft.open(path) as t:
        profile = t.profile(source="durations")
        calls, totals = {}, {}
        for s in range(len(t.stream_paths)):
            g = t.grammar(s, totals=False)
            blocks = g.sequences[(g.sequences.kind == "block") & g.sequences.region_ref.notna()]
            for i in blocks.index:
                d = g.durations(int(i))
                name = g.sequences["name"].iat[i]
                calls[name] = calls.get(name, 0) + len(d)
                totals[name] = totals.get(name, 0) + int(d.sum(dtype=np.uint64))
    rows = profile[profile["calls"] > 0]
    assert {r.region: (r.calls, r.total_ns) for r in rows.itertuples()} == \
        {k: (calls[k], totals[k]) for k in calls if calls[k] > 0}


def test_grammar_errors_and_tokens():
    path = PALLAS[0]
    with weft.open(path) as t:
        g = t.grammar(0)
        assert repr(g).startswith("<weft.Grammar ")
        with pytest.raises(IndexError):
            g.durations(len(g.sequences))
        with pytest.raises(IndexError):
            g.tokens(-1)
        with pytest.raises(IndexError):
            t.grammar(len(t.stream_paths))
        with pytest.raises(KeyError):
            t.grammar("no/such/stream")
        tokens = g.tokens(g.root)
        assert list(tokens.columns) == ["kind", "index"] and len(tokens) > 0
        assert str(g.sequences["region_ref"].dtype) == "Int64"
        assert g.events["occurrences"].dtype == np.uint64
    with pytest.raises(ValueError):
        g.durations(0)  # closed trace
    with weft.open(DATA / "heph" / "heph_sample.bin.log") as t:
        with pytest.raises(weft.FormatError, match="Pallas traces only"):
            t.grammar(0)
