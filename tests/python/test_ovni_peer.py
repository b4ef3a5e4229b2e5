# SPDX-License-Identifier: MIT
"""Traces of ovni 1.14's own tests and of the real nOS-V 4.1 runtime
(tests/data/ovni/peer, README.md there) that weft once mishandled: the
same events as the real ovnidump, payloads longer than the signature
table decoded with the rest kept raw (a note once per event kind, exit 0;
`check --strict` counts the notes), VWC counters as an array."""

import json

import pytest

from weftlib import (PEER_TRACES, assert_same_merge, expected_fields_text,
                     hex_bytes, parse_dump, run_weft, with_payload)

ACCEPTED = ["rt-nosv-several-tasks", "emu-nosv-hwc",
            "emu-ovni-sort-into-previous-region-sorted"]


def trace(name):
    return PEER_TRACES / name / "ovni"


def notes(text):
    return [l for l in text.splitlines() if ": note: " in l]


@pytest.mark.parametrize("name", ACCEPTED)
def test_dump_matches_ovnidump(name):
    """Same events, clocks, streams and payload bytes as ovnidump -x, and
    the fields the signature rules give (extra bytes, arrays)."""
    ours = with_payload(parse_dump(run_weft("dump", "-x", trace(name), expect=0).stdout))
    golden = with_payload(parse_dump((PEER_TRACES / name / "ovnidump-x.txt").read_text()))
    assert_same_merge(ours, golden, name)
    fields = parse_dump(run_weft("dump", trace(name), expect=0).stdout)
    hexes = parse_dump(run_weft("dump", "-x", trace(name), expect=0).stdout)
    for f, x in zip(fields, hexes):
        assert (f.clock, f.mcv, f.path) == (x.clock, x.mcv, x.path)
        assert f.rest == expected_fields_text(x.mcv, hex_bytes(x.rest)), f"{name}: {f}"


@pytest.mark.parametrize("name", ACCEPTED)
def test_check_accepts_with_notes_and_strict_counts_them(name):
    out = run_weft("check", trace(name), expect=0).stdout
    assert out.splitlines()[-1].startswith("ok: ")
    found = notes(out)
    kinds = [n.split(": note: ")[1][:3] for n in found]
    assert len(kinds) == len(set(kinds))  # once per event kind
    expected = {"rt-nosv-several-tasks": ["OCn"], "emu-nosv-hwc": [],
                "emu-ovni-sort-into-previous-region-sorted": ["OB."]}[name]
    assert kinds == expected
    run_weft("check", "--strict", trace(name), expect=1 if expected else 0)


def test_ocn_of_nosv_4_1_keeps_its_second_word():
    """nOS-V 4.1 writes OCn with 8 bytes; the 1.14 table says i32 cpu."""
    out = run_weft("check", trace("rt-nosv-several-tasks"), expect=0).stdout
    assert notes(out) == [
        "loom.vm.nosv-u0-p19594/proc.19594/thread.19594/stream.obs:1236: note: OCn has "
        "8 payload bytes, its ovni 1.14 signature names 4 (i32 cpu): those fields are "
        "decoded, the other 4 bytes kept raw (field \"extra\"); reported once per event kind"]
    dump = run_weft("dump", trace("rt-nosv-several-tasks"), expect=0)
    ocn = [l for l in dump.stdout.splitlines() if "  OCn  " in l]
    assert len(ocn) == 1 and ocn[0].endswith("  cpu=2 extra=:01:00:00:00")
    assert len(notes(dump.stderr)) == 1


def test_vwc_counters_are_an_array():
    """VWC carries one i64 per counter of nosv.hwc (here 2), as ovniemu
    reads it: an array, not a mismatch."""
    lines = run_weft("dump", "--json", trace("emu-nosv-hwc"), expect=0).stdout.splitlines()
    vwc = [json.loads(l) for l in lines if '"code":"VWC"' in l]
    assert len(vwc) == 11
    golden = [l for l in (PEER_TRACES / "emu-nosv-hwc" / "ovnidump.txt").read_text().splitlines()
              if "  VWC  " in l]
    for obj, line in zip(vwc, golden):
        first = int(line.split("(first ")[1].rstrip(")"))
        assert len(obj["fields"]["value"]) == 2 and obj["fields"]["value"][0] == first


@pytest.mark.parametrize("name", ACCEPTED)
@pytest.mark.parametrize("to", ["perfetto", "chrome", "paraver"])
def test_convert_exits_0(tmp_path, name, to):
    proc = run_weft("convert", trace(name), "-t", to, "-o", tmp_path / "out", expect=0)
    assert "error" not in proc.stderr


def test_sort_into_previous_region_as_ovnisort(copy_trace):
    """ovni's sort-into-previous-region: weft sort writes the bytes
    ovnisort wrote (the -sorted trace is the same run after ovnisort), and
    reading the unsorted trace gives ovnidump's lines of the sorted one."""
    unsorted = PEER_TRACES / "emu-ovni-sort-into-previous-region-unsorted"
    golden = PEER_TRACES / "emu-ovni-sort-into-previous-region-sorted"
    proc = run_weft("dump", "-x", unsorted / "ovni", expect=0)
    assert proc.stdout == (golden / "ovnidump-x.txt").read_text()
    assert "warning" not in proc.stderr
    trace = copy_trace(unsorted)
    run_weft("sort", trace, expect=0)
    rel = "loom.vm.0/proc.11553/thread.11553/stream.obs"
    assert (trace / rel).read_bytes() == (golden / "ovni" / rel).read_bytes()


def test_check_refuses_the_clock_gate_of_ovni_clockgate_test():
    """ovni's clockgate test: 4 looms whose first clocks are 2 h apart, no
    clock offsets. ovniemu refuses it ("detected large clock gate"),
    naming the same streams with the same distances."""
    out = run_weft("check", trace("emu-ovni-clockgate"), expect=1).stdout
    ours = [(l.split("/stream.obs")[0], l.split(" is ")[1].split(" h ")[0])
            for l in out.splitlines() if "detected large clock gate" in l]
    log = (PEER_TRACES / "emu-ovni-clockgate" / "ovniemu-l.log").read_text()
    golden = [(l.split("stream ")[1].split(" has")[0], l.split("delta=")[1].split(" h")[0])
              for l in log.splitlines() if "has starting clock too far" in l]
    assert ours == golden and len(golden) == 3
