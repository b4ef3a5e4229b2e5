# SPDX-License-Identifier: MIT
"""`weft dump` against the real ovnidump: every event of every reference
trace (layouts 1, 2 and 3) with the same clock, MCV, stream path and
payload bytes, in the same merged order (ties of equal clocks compared as
multisets), and the decoded fields matching the signature table."""

import pytest

from weftlib import (OLD_TRACES, assert_same_merge, expected_fields_text,
                     hex_bytes, parse_dump, parse_v1_dump, run_weft,
                     v3_dir, v3_traces, with_payload)

SORTED_GOLDEN_EXEMPT = {"ovni-sort-unsorted"}  # golden is in stored order


def golden_x(name):
    return parse_dump((v3_dir(name) / "ovnidump-x.txt").read_text())


def weft_x(trace_dir, *extra):
    return parse_dump(run_weft("dump", "-x", *extra, trace_dir, expect=0).stdout)


@pytest.mark.parametrize("name", [n for n in v3_traces() if n not in SORTED_GOLDEN_EXEMPT])
def test_v3_hex_dump_matches_ovnidump_x(name):
    ours = with_payload(weft_x(v3_dir(name) / "ovni"))
    golden = with_payload(golden_x(name))
    assert_same_merge(ours, golden, name)


@pytest.mark.parametrize("name", v3_traces())
def test_v3_hex_lines_have_ovnidump_shape(name):
    """Lines of groups without ties are byte for byte those of ovnidump -x."""
    ours = run_weft("dump", "-x", v3_dir(name) / "ovni", "--stored-order", expect=0).stdout
    golden = (v3_dir(name) / "ovnidump-x.txt").read_text()
    golden_lines = set(golden.splitlines())
    for line in ours.splitlines():
        assert line in golden_lines, f"line not in the golden: {line!r}"


def test_unsorted_stored_order_equals_golden_exactly():
    name = "ovni-sort-unsorted"
    ours = run_weft("dump", "--stored-order", "-x", v3_dir(name) / "ovni", expect=0).stdout
    assert ours == (v3_dir(name) / "ovnidump-x.txt").read_text()


def test_unsorted_default_order_is_golden_stably_sorted():
    name = "ovni-sort-unsorted"
    golden = with_payload(golden_x(name))
    ours = with_payload(weft_x(v3_dir(name) / "ovni"))
    assert ours == sorted(golden, key=lambda e: e[0])
    assert ours != golden  # the region really moved events


def test_sorted_trace_matches_unsorted_trace_read_sorted():
    """Reading the unsorted trace gives the event order ovnisort wrote to
    disk for the same program (another run: the clocks differ, the order
    of the events and their payloads do not)."""
    a = [(e[1], e[3]) for e in with_payload(weft_x(v3_dir("ovni-sort-unsorted") / "ovni"))]
    b = [(e[1], e[3]) for e in with_payload(golden_x("ovni-sort-sorted"))]
    assert a == b


@pytest.mark.parametrize("name", v3_traces())
def test_v3_fields_dump_matches_ovnidump(name):
    """Plain dump: same events as ovnidump (descriptions differ), and the
    fields are those the signature table gives for the payload bytes."""
    trace = v3_dir(name) / "ovni"
    extra = ["--stored-order"] if name in SORTED_GOLDEN_EXEMPT else []
    fields = parse_dump(run_weft("dump", *extra, trace, expect=0).stdout)
    hexes = weft_x(trace, *extra)
    golden = parse_dump((v3_dir(name) / "ovnidump.txt").read_text())
    strip = lambda evs: [(e.clock, e.mcv, e.path) for e in evs]
    if name in SORTED_GOLDEN_EXEMPT:
        assert strip(fields) == strip(golden)
    else:
        assert_same_merge(strip(fields), strip(golden), name)
    assert strip(fields) == strip(hexes)
    for f, x in zip(fields, hexes):
        expected = expected_fields_text(x.mcv, hex_bytes(x.rest))
        assert f.rest == expected, f"{name}: {f}"


def test_fields_are_decoded_by_name():
    out = run_weft("dump", v3_dir("nosv-parallel-tasks") / "ovni", expect=0).stdout
    lines = out.splitlines()
    assert lines[0].endswith("  OHx  loom.vm.0/proc.2184/thread.2184  cpu=0 tid=-1 tag=0")
    assert 'typeid=100 label="testtype100"' in lines[1]
    # OUj is not in the signature table: raw hex
    unsorted = run_weft("dump", v3_dir("ovni-sort-unsorted") / "ovni", expect=0).stdout
    ouj = [l for l in unsorted.splitlines() if "  OUj  " in l]
    assert len(ouj) == 1
    assert ouj[0].split("  ")[-1].startswith(":80:00:00:00:00:01:02:03")


@pytest.mark.parametrize("version", sorted(OLD_TRACES))
def test_old_layout_hex_dump_matches_golden(version):
    """v1 (1.4.1) and v2 (1.10.0): payloads compared with the golden of
    that release's ovnidump; stream paths are the .obs files."""
    base = OLD_TRACES[version]
    ours = with_payload(weft_x(base / "ovni"))
    if version == 1:
        golden = with_payload(parse_v1_dump((base / "golden" / "ovnidump.txt").read_text()))
    else:
        golden = with_payload(parse_dump((base / "golden" / "ovnidump-x.txt").read_text()))
    assert_same_merge(ours, golden, f"v{version}")
    assert all(e[2].endswith(".obs") for e in ours)


def test_v2_fields_dump_matches_golden_events():
    base = OLD_TRACES[2]
    ours = parse_dump(run_weft("dump", base / "ovni", expect=0).stdout)
    golden = parse_dump((base / "golden" / "ovnidump.txt").read_text())
    strip = lambda evs: [(e.clock, e.mcv, e.path) for e in evs]
    assert_same_merge(strip(ours), strip(golden), "v2")
    byline = {(e.clock, e.path): e.rest for e in ours}
    assert byline[(1100, "loom.node1.trace/proc.1000/thread.1001.obs")] == 'typeid=1 label="task_A"'
    assert byline[(1250, "loom.node1.trace/proc.1000/thread.1002.obs")] == "cpu=1 tid=1001 tag=4098"
    assert byline[(1500, "loom.node1.trace/proc.1000/thread.1001.obs")] == "value=1 type=0"
    # OB. with a 2-byte payload the signature does not have: hex
    assert byline[(1350, "loom.node1.trace/proc.1000/thread.1002.obs")] == ":ef:be"


def test_dump_clock_column_is_ovnidump_width():
    """ovnidump right-aligns clocks in 10 columns; so does weft."""
    out = run_weft("dump", "-x", OLD_TRACES[2] / "ovni", expect=0).stdout
    assert out.splitlines()[0] == ("      1000  OHx  loom.node1.trace/proc.1000/thread.1001.obs  "
                                   ":00:00:00:00:ff:ff:ff:ff:00:00:00:00:00:00:00:00")
