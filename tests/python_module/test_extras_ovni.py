# SPDX-License-Identifier: MIT
"""Trace.marks() and Trace.clock_offsets (issue 16, format extras): the
marks of an ovni 1.14 trace equal the OM events of `weft dump --json`,
with the titles and labels the threads declared in their metadata (read
here from the stream.json files); clock offsets from clock-offsets.txt
or the ovni.clock_offsets option appear per stream and shift the times."""

import json
import shutil
import struct
import sys
import warnings

import numpy as np
import pytest

import weft
from conftest import DATA, REPO, dump_json

MARKS = DATA / "ovni" / "v3" / "ovni-mark-4procs" / "ovni"
MPI = DATA / "ovni" / "v3" / "mpi-func-4procs" / "ovni"
ACTIONS = {"OM[": "push", "OM]": "pop", "OM=": "set"}


def declared_marks(trace_dir, stream):
    """The mark types a thread declared: its stream.json's ovni.mark."""
    meta = json.loads((trace_dir / stream / "stream.json").read_text())
    return meta["ovni"].get("mark", {})


def test_marks_equal_the_dump():
    events = [json.loads(x) for x in dump_json(MARKS, "--mcv", "OM?")]
    assert {e["code"] for e in events} == set(ACTIONS)
    with weft.open(MARKS) as t:
        marks = t.marks()
    assert list(marks.columns) == ["time", "stream", "type", "title", "action", "value",
                                   "label", "channel"]
    assert marks["time"].dtype == np.uint64 and marks["value"].dtype == np.int64
    assert len(marks) == len(events)
    for row, e in zip(marks.itertuples(), events):
        declared = declared_marks(MARKS, e["stream"])[str(e["fields"]["type"])]
        assert (row.time, row.stream, row.action) == (e["time"], e["stream"], ACTIONS[e["code"]])
        assert (row.type, row.value) == (e["fields"]["type"], e["fields"]["value"])
        assert row.title == declared["title"] and row.channel == declared["chan_type"]
        assert row.label == declared.get("labels", {}).get(str(e["fields"]["value"]))
    assert set(marks["title"]) == {"Progress", "Colors"}
    assert set(marks["label"].dropna()) <= {"Blue", "Gray", "Red"}
    assert marks["label"].isna().any()  # the "single" type has no labels


def test_marks_filters_and_none():
    with weft.open(MARKS) as t:
        every = t.marks()
        one = t.marks(streams="loom.vm.2/*")
        start = int(every["time"].iloc[3])
        late = t.marks(start=start)
    assert set(one["stream"].astype(str)) == {"loom.vm.2/proc.2172/thread.2172"}
    assert len(one) == (every["stream"] == "loom.vm.2/proc.2172/thread.2172").sum()
    assert (late["time"] >= start).all() and len(late) == (every["time"] >= start).sum()
    with weft.open(MPI) as t:
        none = t.marks()
    assert len(none) == 0 and list(none.columns) == list(every.columns)
    with weft.open(DATA / "heph" / "heph_sample.bin.log") as t:
        other = t.marks()
    assert len(other) == 0 and list(other.columns) == list(every.columns)


def copy_trace(src, tmp_path):
    dst = tmp_path / "ovni"
    shutil.copytree(src, dst)
    return dst


def test_clock_offsets_from_the_trace_directory(tmp_path):
    """ovnisync's table in the trace directory: every loom of host "vm"
    gets its offset, added to every clock."""
    path = copy_trace(MPI, tmp_path)
    (path / "clock-offsets.txt").write_text(
        "rank       hostname             offset_median        offset_mean          offset_std\n"
        "0          vm                   1000                 1000.0               0.0\n")
    with weft.open(MPI) as t:
        before = t.to_pandas()
        assert (t.clock_offsets["clock_offset"] == 0).all()
    with weft.open(path) as t:
        offsets = t.clock_offsets
        after = t.to_pandas()
        paths = t.stream_paths
    assert list(offsets.columns) == ["stream", "top", "clock_offset"]
    assert list(offsets["stream"]) == paths and offsets["clock_offset"].dtype == np.int64
    assert (offsets["clock_offset"] == 1000).all()
    assert list(offsets["top"]) == [p.split("/")[0] for p in paths]
    assert np.array_equal(after["time"].to_numpy(), before["time"].to_numpy() + 1000)
    # the command sees the same clocks
    first = json.loads(dump_json(path)[0])
    assert first["time"] == int(after["time"].iloc[0])


def test_clock_offsets_option(tmp_path):
    table = tmp_path / "offsets.txt"
    table.write_text("rank hostname offset_median\n0 vm -250\n")
    with weft.open(MARKS, ovni_clock_offsets=str(table)) as t:
        assert (t.clock_offsets["clock_offset"] == -250).all()
        shifted = t.marks()
    with weft.open(MARKS) as t:
        plain = t.marks()
    assert np.array_equal(shifted["time"].to_numpy(), plain["time"].to_numpy() - 250)
    table.write_text("rank hostname offset_median\n0 other 5\n")
    with pytest.warns(weft.TraceWarning, match="no clock offset for host vm"):
        t = weft.open(MARKS, ovni_clock_offsets=str(table))
    with t:
        assert (t.clock_offsets["clock_offset"] == 0).all()


def test_clock_offsets_of_other_formats():
    with weft.open(DATA / "heph" / "heph_sample.bin.log") as t:
        offsets = t.clock_offsets
        assert list(offsets["stream"]) == t.stream_paths
    assert (offsets["clock_offset"] == 0).all()


def test_marks_of_a_written_trace(tmp_path):
    """A trace written here (tests/python/weftlib.py): a mark the thread
    declared with a label, and a mark whose payload is too short for its
    layout (no fields: type and value missing, no title)."""
    sys.path.insert(0, str(REPO / "tests" / "python"))
    import weftlib
    events = [weftlib.ovni_event("OM=", 1000, struct.pack("<qi", 5, 1)),
              weftlib.ovni_event("OM[", 2000, struct.pack("<i", 7))]
    mark = {"1": {"title": "Phase", "chan_type": "single", "labels": {"5": "five"}}}
    weftlib.write_ovni_stream(tmp_path, events, extra_meta={"mark": mark})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with weft.open(tmp_path) as t:
            marks = t.marks()
    assert marks["time"].tolist() == [1000, 2000]
    assert marks["action"].tolist() == ["set", "push"]
    assert str(marks["type"].dtype) == "Int64" and str(marks["value"].dtype) == "Int64"
    assert (marks["type"][0], marks["value"][0]) == (1, 5)
    assert marks["type"].isna().tolist() == [False, True]
    assert marks["title"].tolist() == ["Phase", None]
    assert marks["label"].tolist() == ["five", None]
    assert marks["channel"].tolist() == ["single", None]
