# SPDX-License-Identifier: MIT
"""`weft top` against ovnitop: the same counts per MCV in the same order,
for every reference trace; --streams adds correct per-stream tables."""

import collections

import pytest

from weftlib import (DATA_DIR, OLD_TRACES, parse_dump, parse_v1_dump, run_weft, v3_dir,
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


# ---- Aligned columns, time per name (issue 15) ------------------------------------------

HEPH = DATA_DIR / "heph" / "heph_sample.bin.log"
DURATION_UNITS = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}


def duration_ns(text):
    """A duration as weft prints it ("5.309 ms") in ns; None for "-"."""
    if text.strip() == "-":
        return None
    value, unit = text.split()
    return float(value) * DURATION_UNITS[unit]


def parse_timed_top(lines):
    """{name: (events, total ns, mean ns)} of a table with time columns,
    whose header says where each column ends."""
    header = lines[0]
    assert header.split() == ["name", "events", "total", "mean"]
    ends = [header.index(w) + len(w) for w in ("events", "total", "mean")]
    rows = {}
    for line in lines[1:]:
        assert len(line) == len(header), "every row ends where the header ends"
        name_and_count = line[:ends[0]]
        name, count = name_and_count.rsplit(None, 1)
        rows[name.strip()] = (int(count), duration_ns(line[ends[0]:ends[1]]),
                              duration_ns(line[ends[1]:ends[2]]))
    return rows


def heph_durations(*args):
    """{code: [durations]} from the JSON dump of the Heph sample."""
    import json
    out = run_weft("dump", "--json", *args, HEPH, expect=0).stdout
    per = collections.defaultdict(list)
    for line in out.splitlines():
        e = json.loads(line)
        per[e["code"]].append(e["end"] - e["time"])
    return per


def assert_times(rows, per):
    assert set(rows) == set(per)
    for name, durations in per.items():
        count, total, mean = rows[name]
        assert count == len(durations)
        assert total == pytest.approx(sum(durations), rel=1e-3)
        assert mean == pytest.approx(sum(durations) / len(durations), rel=1e-3)


def test_top_of_intervals_has_time_per_name():
    lines = run_weft("top", HEPH, expect=0).stdout.splitlines()
    assert_times(parse_timed_top(lines), heph_durations())


def test_top_streams_of_intervals_has_time_per_name():
    out = run_weft("top", "--streams", HEPH, expect=0).stdout
    blocks = out.split("\n\n")
    for block in blocks[1:]:
        lines = block.splitlines()
        stream = lines[0][:-1]
        rows = parse_timed_top([l[2:] for l in lines[1:]])
        assert_times(rows, heph_durations("--stream", stream))


@pytest.mark.parametrize("trace", [
    DATA_DIR / "ross" / "im-everything" / "np1",
    DATA_DIR / "pallas" / "wb_enterleave_f3_n1000_t2_logical" / "trace",
    v3_dir("mpi-func-4procs") / "ovni",
], ids=["ross", "pallas", "ovni"])
def test_top_columns_are_aligned(trace):
    """Without intervals: ovnitop's two columns, the counts right-aligned
    in one column whatever the codes' lengths, and no header."""
    lines = run_weft("top", "--streams", trace, expect=0).stdout.splitlines()
    rows = [l for l in lines if l and not l.endswith(":")]
    assert len({len(l) for l in rows if not l.startswith("  ")}) == 1
    assert len({len(l) for l in rows if l.startswith("  ")}) == 1
    assert all(l.split()[-1].isdigit() for l in rows)


def test_top_time_of_spans():
    """--time: each code gets the time of the spans its events began (ovni:
    VTx its tasks, VAs the API calls, OHx the thread running), the figures
    of `weft profile`; a code that ends spans has none."""
    trace = v3_dir("nosv-parallel-tasks") / "ovni"
    assert "total" not in run_weft("top", trace, expect=0).stdout  # ovnitop's bytes
    every = parse_timed_top(run_weft("top", "--time", trace, expect=0).stdout.splitlines())
    rows = {code: row for code, row in every.items() if row[1] is not None}
    assert every["VTe"] == (100, None, None)
    import json
    profile = {r["region"]: r for r in
               json.loads(run_weft("profile", "--json", trace, expect=0).stdout)["regions"]}
    for code, region in (("VTx", "nosv task"), ("VAs", "nosv VAs"), ("OHx", "running")):
        count, total, mean = rows[code]
        assert total == pytest.approx(profile[region]["total_ns"], rel=1e-3)
        assert mean == pytest.approx(profile[region]["mean_ns"], rel=1e-3)
    assert sum(t for _, t, _ in rows.values()) == pytest.approx(
        sum(r["total_ns"] for r in profile.values()), rel=1e-3)
    assert set(rows) == {"VTx", "VAs", "OHx"}


def test_top_time_of_intervals_is_the_same_with_spans():
    """Heph's intervals are spans: --time changes nothing."""
    assert (run_weft("top", "--time", "--streams", HEPH, expect=0).stdout ==
            run_weft("top", "--streams", HEPH, expect=0).stdout)
