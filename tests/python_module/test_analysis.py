# SPDX-License-Identifier: MIT
"""Trace.spans() and Trace.profile() (issue 16): the profile equals what
`weft profile --json` prints for every format, per region and per stream;
the spans add up to the profile; windows cut them; bad arguments raise."""

import json
import subprocess

import numpy as np
import pytest

import weft
from conftest import DATA, weft_bin

TRACES = {
    "ovni": DATA / "ovni" / "v3" / "nosv-parallel-tasks" / "ovni",
    "ovni-mix": DATA / "ovni" / "v3" / "bench-mix-small" / "ovni",
    "heph": DATA / "heph" / "heph_sample.bin.log",
    "pallas": DATA / "pallas" / "wb_enterleave_f3_n1000_t2_logical" / "trace",
    "ross": DATA / "ross" / "phold-evtrace-full" / "np1",
}


def cli_profile(path, *args):
    """The rows of `weft profile --json --instants` by (region, stream path)."""
    r = subprocess.run([weft_bin(), "profile", "--json", "--instants", *args, str(path)],
                       capture_output=True, text=True, check=False)
    assert r.returncode in (0, 1), r.stderr
    doc = json.loads(r.stdout)
    return {(row["region"], row.get("stream_path")): row for row in doc["regions"]}


@pytest.mark.parametrize("by", ["name", "stream"])
@pytest.mark.parametrize("name", sorted(TRACES))
def test_profile_equals_the_command(name, by):
    path = TRACES[name]
    want = cli_profile(path, *(["--by", "stream"] if by == "stream" else []))
    with weft.open(path) as t:
        got = t.profile(by=by)
    assert len(got) == len(want)
    for row in got.itertuples():
        key = (row.region, row.stream if by == "stream" else None)
        w = want[key]
        assert (row.calls, row.instants) == (w["count"], w["instants"]), key
        assert (row.total_ns, row.exclusive_ns, row.min_ns, row.max_ns) == \
            (w["total_ns"], w["exclusive_ns"], w["min_ns"], w["max_ns"]), key
        assert row.mean_ns == pytest.approx(w["mean_ns"])


def test_profile_sources_and_window():
    path = TRACES["pallas"]
    with weft.open(path) as t:
        stored = t.profile()
        replay = t.profile(source="spans")
        assert stored.attrs["source"] == "durations"
        assert replay.attrs["source"] == "replay"  # weft_profile_source_name()
        assert t.profile(source="replay").equals(replay)
        assert sorted(stored["total_ns"]) == sorted(replay["total_ns"])
        start = t.start_time
        cut = t.profile(start=start + 100, end=start + 2000)
    want = cli_profile(path, "--from", "+100", "--to", "+2000")
    assert {r.region: r.total_ns for r in cut.itertuples()} == \
        {k[0]: v["total_ns"] for k, v in want.items()}


@pytest.mark.parametrize("name", ["ovni", "ovni-mix", "heph", "pallas"])
def test_spans_add_up_to_the_profile(name):
    with weft.open(TRACES[name]) as t:
        spans = t.spans()
        profile = t.profile(source="spans", by="stream")
    calls = spans[~spans["instant"]].groupby(["name", "stream"], observed=True)
    sums = calls["duration"].sum()
    counts = calls.size()
    exclusive = calls["exclusive"].sum()
    for row in profile[profile["calls"] > 0].itertuples():
        key = (row.region, row.stream)
        assert counts[key] == row.calls
        assert sums[key] == row.total_ns
        assert exclusive[key] == row.exclusive_ns
    assert len(spans) == profile["calls"].sum()
    # parents: every parent id is a span of the same stream and timeline
    ids = dict(zip(spans["id"], zip(spans["stream"], spans["timeline"])))
    for row in spans[spans["parent"] != 0].itertuples():
        assert ids[row.parent] == (row.stream, row.timeline)
    assert (spans["duration"] >= spans["exclusive"]).all()


def test_spans_columns_window_and_instants():
    with weft.open(TRACES["ovni"]) as t:
        whole = t.spans()
        start = t.start_time
        lo, hi = start + 1_000_000, start + 2_000_000
        cut = t.spans(start=lo, end=hi)
        with_instants = t.spans(instants=True)
        only_tasks = t.spans(codes="VT*")
    assert list(whole.columns) == ["stream", "timeline", "name", "start", "end", "duration",
                                   "exclusive", "depth", "id", "parent", "clipped",
                                   "unclosed", "instant"]
    assert whole["start"].dtype == np.uint64 and str(whole["name"].dtype) == "category"
    assert set(whole["name"]) == {"running", "nosv VAs", "nosv task"}
    assert (cut["start"] >= lo).all() and (cut["end"] <= hi).all()
    assert cut["clipped"].any() and not whole["clipped"].any()
    assert with_instants["instant"].sum() == 2 and len(with_instants) == len(whole) + 2
    assert set(only_tasks["name"]) == {"nosv task"}


def test_bad_arguments_and_closed_trace():
    t = weft.open(TRACES["ovni"])
    with pytest.raises(ValueError):
        t.profile(by="thread")
    with pytest.raises(ValueError):
        t.profile(source="stored")
    with pytest.raises(weft.Error):
        t.profile(source="headers")  # Pallas only
    with pytest.raises(ValueError):
        t.spans(start=10, end=5)
    t.close()
    with pytest.raises(ValueError):
        t.spans()
    with pytest.raises(ValueError):
        t.profile()
