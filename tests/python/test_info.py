# SPDX-License-Identifier: MIT
"""`weft info`: the layout version, every stream with its file and event
count, the hierarchy with the merged metadata, the overall time span."""

import re

import pytest

from weftlib import (OLD_TRACES, parse_dump, run_weft, v3_dir, v3_traces,
                     with_payload)


def hex_events(trace):
    return with_payload(parse_dump(run_weft("dump", "-x", trace, expect=0).stdout))


def all_traces():
    return [(3, v3_dir(n) / "ovni") for n in v3_traces()] + \
        [(v, OLD_TRACES[v] / "ovni") for v in sorted(OLD_TRACES)]


@pytest.mark.parametrize("version,trace", all_traces(), ids=lambda x: str(x))
def test_info_lists_streams_and_version(version, trace):
    out = run_weft("info", trace, expect=0).stdout
    assert "format: ovni\n" in out
    assert f"layout version: {version}\n" in out
    events = hex_events(trace)
    paths = sorted({e[2] for e in events})
    for p in paths:
        assert re.search(rf"^  \[\d+\] {re.escape(p)}$", out, re.M), p
        count = sum(1 for e in events if e[2] == p)
        block = out[out.index(f"] {p}\n"):]
        assert re.search(rf"events: {count}\b", block.split("\n  [")[0]), p
    assert f"\nevents: {len(events)}\n" in out
    first, last = min(e[0] for e in events), max(e[0] for e in events)
    assert f"time: {first} .. {last} (span {last - first} ns" in out
    if version == 3:
        assert "\nwarnings: none\n" in out
    else:  # the 2-byte OB. payload of the v1/v2 generators: a note
        notes = out.split("\nwarnings: \n")[1].strip().splitlines()
        assert len(notes) == 1 and ": note: OB. has 2 payload bytes" in notes[0]


def test_info_hierarchy_and_metadata():
    out = run_weft("info", v3_dir("bench-mix-small") / "ovni", expect=0).stdout
    hierarchy = out.split("hierarchy:\n")[1].split("\n\n")[0].splitlines()
    assert hierarchy[0].startswith("  loom.vm.bench  [loom]")
    assert "cpus=4" in hierarchy[0]
    assert hierarchy[1].startswith("    proc.2208  [process 2208]")
    assert "app_id=1" in hierarchy[1]
    threads = [l for l in hierarchy if "[thread" in l]
    assert len(threads) == 4
    assert threads[0].startswith("      thread.2209  [thread 2209, stream 0]")
    assert "lib.version=1.14.0" in threads[0]
    assert "require=ovni@1.1.0,nosv@2.7.0" in threads[0]
    assert "finished=1" in threads[0]


def test_info_v1_metadata():
    out = run_weft("info", OLD_TRACES[1] / "ovni", expect=0).stdout
    assert re.search(r"proc\.1000  \[process 1000\].*rank=0.*nranks=2", out)
    assert re.search(r"proc\.2000  \[process 2000\].*rank=1.*nranks=2", out)


def test_info_of_a_v3_stream_directory():
    """A trace path may be one stream's directory: its stream.json is the
    one in that directory (it was looked up as thread.T/stream.json below
    it: "missing or unreadable stream.json")."""
    thread = v3_dir("bench-mix-small") / "ovni" / "loom.vm.bench" / "proc.2208" / "thread.2209"
    out = run_weft("info", thread, expect=0).stdout
    assert "\nwarnings: none\n" in out
    assert re.search(r"thread\.2209  \[thread 2209, stream 0\].*finished=1", out)
