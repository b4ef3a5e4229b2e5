# SPDX-License-Identifier: MIT
"""order="stream": each selected stream in turn, its events as the merged
cursor gives them (the same events, the same per-stream order), against
`weft dump --stream` of each stream."""

import json
import warnings

import numpy as np
import pytest

import weft
from conftest import DATA, all_traces, dump_json

TRACES = all_traces()
IDS = [str(p.relative_to(DATA)) for p in TRACES]
COLUMNS = ("time", "end", "offset", "depth", "parent")


def frame(path, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with weft.open(path) as t:
            return t.to_pandas(**kwargs)


@pytest.mark.parametrize("path", TRACES, ids=IDS)
def test_streams_one_after_another(path):
    merged = frame(path, fields=True)
    by_stream = frame(path, order="stream", fields=True)
    assert len(by_stream) == len(merged)
    codes = by_stream["stream"].cat.codes.to_numpy()
    assert np.all(np.diff(codes) >= 0), "streams in index order, each once"
    for s in by_stream["stream"].cat.categories:
        ours = by_stream[by_stream["stream"] == s]
        theirs = merged[merged["stream"] == s]
        assert list(ours["code"].astype(str)) == list(theirs["code"].astype(str)), s
        for k in COLUMNS:
            assert np.array_equal(ours[k].to_numpy(), theirs[k].to_numpy()), (s, k)
        for k in set(merged.columns) - set(COLUMNS) - {"stream", "code"}:
            a = ours[k].astype(object).where(ours[k].notna(), None).tolist()
            b = theirs[k].astype(object).where(theirs[k].notna(), None).tolist()
            assert a == b, (s, k)


OVNI = DATA / "ovni" / "v3" / "mpi-func-4procs" / "ovni"


def test_each_stream_is_dump_stream():
    with weft.open(OVNI) as t:
        paths = t.stream_paths
    df = frame(OVNI, order="stream", streams="*proc.2192*", codes="M*")
    expected = []
    for p in paths:
        if "proc.2192" in p:
            expected += [json.loads(x) for x in dump_json(OVNI, "--stream", p, "--mcv", "M*")]
    assert len(expected) > 0
    assert [(e["time"], e["stream"], e["code"]) for e in expected] == \
        list(zip(df["time"].tolist(), df["stream"].astype(str), df["code"].astype(str)))


def test_nothing_selected_and_windows():
    assert len(frame(OVNI, order="stream", streams="no-such-stream")) == 0
    with weft.open(OVNI) as t:
        assert list(t.events(order="stream", streams="no-such-stream")) == []
    all_times = frame(OVNI)["time"].to_numpy()
    lo, hi = int(all_times[100]), int(all_times[200])
    df = frame(OVNI, order="stream", start=lo, end=hi)
    assert sorted(df["time"].tolist()) == \
        all_times[(all_times >= lo) & (all_times <= hi)].tolist()


def test_bad_order_names_the_choices():
    with weft.open(OVNI) as t:
        with pytest.raises(ValueError, match='"stream"'):
            t.events(order="sideways")


def test_closing_mid_way_ends_the_iterator():
    t = weft.open(OVNI)
    it = t.events(order="stream", batch_size=10)
    next(it)
    t.close()
    with pytest.raises(ValueError, match="closed"):
        next(it)
