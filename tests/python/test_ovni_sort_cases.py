# SPDX-License-Identifier: MIT
"""`weft sort` and reading an unsorted trace against the real ovnisort
(1.14), on small streams made here with the patterns of ovni's own sort
tests (sort-into-previous-region, sort-flush: flush events inside a
region, regions whose events belong before the end of an earlier one) and
more. tests/data/ovni/sort-cases/<case>.obs is what ovnisort wrote for the
stream CASES[case] builds (`python3 test_ovni_sort_cases.py DIR` writes
the unsorted traces); sort-first-and-full-ring's pattern, which ovnisort
refuses, is built at run time (12 MB)."""

import struct
import sys

import pytest

from weftlib import (OVNI_DATA, events_of_stream_file, ovni_event, parse_dump,
                     run_weft, with_payload, write_ovni_stream)

GOLDEN = OVNI_DATA / "sort-cases"


def ev(mcv, clock, size=0):
    """An event whose payload is `size` bytes naming its clock (so that
    moved events are told apart)."""
    return ovni_event(mcv, clock, (b"%016d" % clock)[:size] if size else b"")


def previous_region():
    """ovni's sort-into-previous-region: [bbbb][BBbb] -> bbbbBB[]bb[]."""
    t = 100
    return [ev("OHx", 1), ev("OU[", t + 6), ev("OB.", t), ev("OB.", t + 1),
            ev("OB.", t + 2), ev("OB.", t + 3), ev("OU]", t + 7),
            ev("OU[", t + 10), ev("OB.", t + 4, 16), ev("OB.", t + 5, 16),
            ev("OB.", t + 8), ev("OB.", t + 9), ev("OU]", t + 11), ev("OHe", 200)]


def flush_in_region():
    """sort-flush's first case: the OF[/OF] of a full buffer right after
    the OU[, the region's events before them."""
    t = 5000
    return [ev("OHx", 10), ev("OF[", 20), ev("OF]", 30),
            ovni_event("OUj", t - 200, jumbo=bytes(range(40))), ev("OU[", t),
            ev("OF[", t + 3000), ev("OF]", t + 4000), ev("KCO", t + 1 - 100),
            ev("KCI", t + 2 - 100), ev("OU]", t + 4100), ev("OHe", t + 5000)]


def overlap():
    """sort-flush's overlap: the second region's events belong in the first."""
    t = 1000
    return [ev("OHx", 1), ev("OU[", t + 20), ev("KCO", t + 10), ev("KCI", t + 11),
            ev("OU]", t + 21), ev("OU[", t + 22), ev("KCO", t + 12), ev("KCI", t + 13),
            ev("OU]", t + 23), ev("OHe", t + 100)]


def overlap_flush():
    """sort-flush's overlap with flush events in the second region."""
    t = 2000
    return [ev("OHx", 1), ev("OU[", t + 20), ev("KCO", t + 10), ev("KCI", t + 11),
            ev("OU]", t + 21), ev("OU[", t + 30), ev("OF[", t + 40), ev("OF]", t + 50),
            ev("KCO", t + 12), ev("KCI", t + 13), ev("OU]", t + 60), ev("OHe", t + 100)]


def chain():
    """Three regions, each reaching into the one before, with events
    between them."""
    return [ev("OHx", 1), ev("OB.", 50), ev("OU[", 100), ev("OB.", 60, 4),
            ev("OB.", 70), ev("OU]", 101), ev("OB.", 102), ev("OU[", 110),
            ev("OB.", 65, 8), ev("OU]", 111), ev("OU[", 120), ev("OB.", 55),
            ovni_event("OUj", 66, jumbo=b"x" * 7), ev("OU]", 121), ev("OHe", 130)]


def past_a_region():
    """The third region's event goes before the first region's events, past
    the second region, whose own events stay after the first one."""
    return [ev("OHx", 1), ev("OB.", 10), ev("OU[", 20), ev("OB.", 15, 2), ev("OU]", 21),
            ev("OB.", 22), ev("OU[", 30), ev("OB.", 25), ev("OU]", 31),
            ev("OU[", 40), ev("OB.", 12, 4), ev("OU]", 41), ev("OHe", 50)]


def separate_regions():
    """Two close regions that do not overlap, a tie between them."""
    return [ev("OHx", 1), ev("OU[", 100), ev("OB.", 90), ev("OB.", 95), ev("OU]", 101),
            ev("OB.", 101), ev("OU[", 105), ev("OB.", 102), ev("OB.", 101, 2),
            ev("OU]", 106), ev("OHe", 107)]


def unsorted_outside():
    """Clocks that go back outside regions stay (ovnisort sorts from the
    last event below the region's first clock): ovniemu still refuses the
    sorted stream, and weft sort leaves it."""
    return [ev("OHx", 10), ev("OB.", 50), ev("OB.", 40), ev("OB.", 48),
            ev("OU[", 60), ev("OB.", 45), ev("OB.", 45, 2), ev("OU]", 70), ev("OHe", 80)]


def odd_regions():
    """An empty region, ties, an OU[ inside a region (an event like any
    other)."""
    return [ev("OHx", 10), ev("OU[", 20), ev("OU]", 21), ev("OU[", 30), ev("OB.", 25),
            ev("OB.", 29), ev("OB.", 25, 2), ev("OU]", 31), ev("OB.", 40), ev("OU[", 50),
            ev("OB.", 45), ev("OU[", 44), ev("OB.", 46), ev("OU]", 51), ev("OHe", 60)]


def early_close():
    """An OU] clocked before the region's events: it stays after them (the
    clock goes back there: ovniemu refuses the sorted stream, weft sort
    leaves it)."""
    return [ev("OHx", 10), ev("OU[", 30), ev("OB.", 25), ev("OB.", 29), ev("OU]", 22),
            ev("OHe", 60)]


def from_stream_start():
    """No event before the region is earlier: sorted from the first event."""
    return [ev("OU[", 100), ev("OB.", 5), ev("OHx", 3), ev("OB.", 4, 2), ev("OU]", 101)]


SORTED = {
    "previous-region": previous_region,
    "flush-in-region": flush_in_region,
    "overlap": overlap,
    "overlap-flush": overlap_flush,
    "chain": chain,
    "past-a-region": past_a_region,
    "separate-regions": separate_regions,
    "odd-regions": odd_regions,
    "from-stream-start": from_stream_start,
}
# ovnisort sorts these, but their clocks still go back afterwards: weft
# sort leaves them (reading them gives ovnisort's order, with a warning).
LEFT = {
    "unsorted-outside": unsorted_outside,
    "early-close": early_close,
}
CASES = {**SORTED, **LEFT}


def write_case(trace_dir, name):
    return write_ovni_stream(trace_dir, CASES[name](), loom=f"vm.{name}",
                             require={"ovni": "1.1.0", "kernel": "1.0.0"})


@pytest.mark.parametrize("name", sorted(SORTED))
def test_sort_writes_what_ovnisort_writes(tmp_path, name):
    obs = write_case(tmp_path, name)
    run_weft("sort", tmp_path, expect=0)
    assert obs.read_bytes() == (GOLDEN / f"{name}.obs").read_bytes()
    run_weft("sort", "--check", tmp_path, expect=0)


@pytest.mark.parametrize("name", sorted(LEFT))
def test_sort_leaves_streams_whose_clocks_still_go_back(tmp_path, name):
    obs = write_case(tmp_path, name)
    before = obs.read_bytes()
    proc = run_weft("sort", tmp_path, expect=2)
    assert "clock goes backwards" in proc.stderr and obs.read_bytes() == before


@pytest.mark.parametrize("name", sorted(CASES))
def test_reading_unsorted_gives_ovnisort_order(tmp_path, name):
    """The events (clock, MCV, bytes) in ovnisort's order; a warning only
    where the clock still goes back."""
    write_case(tmp_path, name)
    proc = run_weft("dump", "-x", tmp_path, expect=0)
    assert ("warning: clock goes backwards" in proc.stderr) == (name in LEFT)
    ours = [(e[0], e[1], e[3]) for e in with_payload(parse_dump(proc.stdout))]
    golden = [(e[3], e[2], e[4]) for e in events_of_stream_file(GOLDEN / f"{name}.obs")]
    assert ours == golden


def full_ring(trace_dir, inner):
    """sort-first-and-full-ring's pattern: a region of `inner` events, all
    earlier than its OU[, at the start of the stream."""
    body = bytearray(ovni_event("OU[", 10**9))
    for i in range(inner):
        body += b"\x00OB." + struct.pack("<Q", 1000 + i)
    body += ovni_event("OU]", 10**9 + 1)
    return write_ovni_stream(trace_dir, bytes(body))


def test_sort_refuses_what_ovnisort_refuses(tmp_path):
    """ovnisort looks back over 999,999 events: 999,998 events before the
    OU] (the OU[ and 999,997 inside) sort, 999,999 do not (checked with
    the real ovnisort: "cannot find a event previous to clock 1000")."""
    obs = full_ring(tmp_path / "refused", 999998)
    before = obs.read_bytes()
    proc = run_weft("sort", tmp_path / "refused", expect=2)
    assert "ovnisort cannot sort this stream" in proc.stderr
    assert obs.read_bytes() == before
    obs = full_ring(tmp_path / "sorted", 999997)
    run_weft("sort", tmp_path / "sorted", expect=0)
    data = obs.read_bytes()
    assert data[8:20] == b"\x00OB." + struct.pack("<Q", 1000)
    assert data[-24:-12] == ovni_event("OU[", 10**9)


if __name__ == "__main__":
    for case in sorted(CASES):
        write_case(sys.argv[1], case)
