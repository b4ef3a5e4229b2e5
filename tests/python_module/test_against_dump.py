# SPDX-License-Identifier: MIT
"""The module against `weft dump --json` (docs/dump-json.md) for every
trace of tests/data: every event, every field, in the same order; the
batches of events() against to_pandas(); the filters against the
command's options."""

import json
import math
import warnings

import numpy as np
import pandas as pd
import pytest

import weft
from conftest import DATA, all_traces, dump_json

TRACES = all_traces()
IDS = [str(p.relative_to(DATA)) for p in TRACES]
EVENT_KEYS = ("time", "end", "stream", "code", "offset", "depth", "parent")


def quiet_open(path, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return weft.open(path, **options)


def quiet_frame(trace, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return trace.to_pandas(**kwargs)


def as_json_value(v):
    """A field value of the DataFrame as dump --json writes it (bytes as
    hex, NaN as null); numpy scalars as Python ones."""
    if isinstance(v, (bytes, bytearray)):
        return v.hex()
    if isinstance(v, list):
        return [as_json_value(x) for x in v]
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


def same_value(ours, theirs):
    if isinstance(theirs, list):
        return isinstance(ours, list) and len(ours) == len(theirs) and \
            all(same_value(a, b) for a, b in zip(ours, theirs))
    if isinstance(theirs, float) or isinstance(ours, float):
        if theirs is None or ours is None:
            return theirs is None and ours is None
        # f32 fields are written with %.9g: equal as floats.
        return math.isclose(ours, theirs, rel_tol=1e-7, abs_tol=0.0) or \
            np.float32(ours) == np.float32(theirs)
    if isinstance(theirs, bool) or isinstance(ours, bool):
        return bool(ours) == bool(theirs) and type(ours) is type(theirs)
    return ours == theirs


def row_fields(df, names, i):
    """The fields of row i that the event has (missing: NA/None/NaN)."""
    out = {}
    for name in names:
        v = df[name].iat[i]
        if v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)):
            continue
        v = as_json_value(v)
        if v is not None:  # infinities: null in JSON
            out[name] = v
    return out


@pytest.mark.parametrize("path", TRACES, ids=IDS)
def test_every_event_and_field(path):
    lines = [json.loads(x) for x in dump_json(path)]
    with quiet_open(path) as t:
        df = quiet_frame(t, fields=True)
        names = [c for c in df.columns if c not in EVENT_KEYS]
        assert len(df) == len(lines)
        cols = {k: df[k].to_numpy() for k in ("time", "end", "offset", "depth", "parent")}
        streams = df["stream"].astype(str).to_numpy()
        codes = df["code"].astype(str).to_numpy()
        for i, e in enumerate(lines):
            where = f"event {i} of {path}: {e}"
            assert cols["time"][i] == e["time"], where
            assert cols["end"][i] == e.get("end", e["time"]), where
            assert streams[i] == e["stream"] and codes[i] == e["code"], where
            assert cols["offset"][i] == e["offset"], where
            assert cols["depth"][i] == e.get("depth", cols["depth"][i]), where
            assert cols["parent"][i] == e.get("parent", cols["parent"][i]), where
            if "depth" not in e:
                assert cols["depth"][i] == -1 and cols["parent"][i] == -1, where
            ours = row_fields(df, names, i)
            theirs = {k: v for k, v in e["fields"].items() if v is not None}
            assert ours.keys() == theirs.keys(), where
            for k in theirs:
                assert same_value(ours[k], theirs[k]), (k, ours[k], theirs[k], where)


@pytest.mark.parametrize("path", TRACES, ids=IDS)
def test_batches_are_the_frame(path):
    """Small batches give the same events as one DataFrame; no batch is
    larger than asked; the code and stream indexes name the same codes."""
    with quiet_open(path) as t:
        df = quiet_frame(t)
        parts = {k: [] for k in EVENT_KEYS}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for b in t.events(batch_size=97):
                n = len(b["time"])
                assert 1 <= n <= 97
                assert all(len(b[k]) == n for k in EVENT_KEYS)
                assert b["time"].dtype == np.uint64 and b["code"].dtype == np.uint32
                assert b["stream"].dtype == np.uint32 and b["depth"].dtype == np.int32
                for k in EVENT_KEYS:
                    parts[k].append(b[k])
        if not len(df):
            return
        codes = np.array(t.codes, dtype=object)[np.concatenate(parts["code"])]
        paths = np.array(t.stream_paths, dtype=object)[np.concatenate(parts["stream"])]
        assert list(codes) == list(df["code"].astype(str))
        assert list(paths) == list(df["stream"].astype(str))
        for k in ("time", "end", "offset", "depth", "parent"):
            assert np.array_equal(np.concatenate(parts[k]), df[k].to_numpy()), k


OVNI = DATA / "ovni" / "v3" / "mpi-func-4procs" / "ovni"


@pytest.mark.parametrize("kwargs,args", [
    ({"codes": "OH?"}, ["--mcv", "OH?"]),
    ({"streams": "*proc.2192*"}, ["--stream", "*proc.2192*"]),
    ({"order": "stored"}, ["--stored-order"]),
])
def test_filters_match_the_command(kwargs, args):
    lines = [json.loads(x) for x in dump_json(OVNI, *args)]
    with quiet_open(OVNI) as t:
        df = quiet_frame(t, **kwargs)
    assert len(lines) > 0
    assert [(e["time"], e["stream"], e["code"]) for e in lines] == \
        list(zip(df["time"].tolist(), df["stream"].astype(str), df["code"].astype(str)))


def test_time_window():
    with quiet_open(OVNI) as t:
        all_times = quiet_frame(t)["time"].to_numpy()
        lo, hi = int(all_times[100]), int(all_times[200])
        df = quiet_frame(t, start=lo, end=hi)
    expected = all_times[(all_times >= lo) & (all_times <= hi)]
    assert np.array_equal(df["time"].to_numpy(), expected)
    lines = [json.loads(x) for x in dump_json(OVNI, "--from", str(lo), "--to", str(hi))]
    assert [e["time"] for e in lines] == df["time"].tolist()


def test_chosen_fields_and_missing_values():
    """fields=["cpu", "tid"]: typed columns, missing where a kind lacks them."""
    path = DATA / "ovni" / "v3" / "nosv-parallel-tasks" / "ovni"
    lines = [json.loads(x) for x in dump_json(path)]
    with quiet_open(path) as t:
        df = quiet_frame(t, fields=["cpu", "tid", "no_such_field"])
    assert list(df.columns[-3:]) == ["cpu", "tid", "no_such_field"]
    assert str(df["cpu"].dtype) in ("Int64", "int64", "UInt32", "UInt64")
    assert df["no_such_field"].isna().all()
    for i, e in enumerate(lines):
        for k in ("cpu", "tid"):
            if k in e["fields"]:
                assert df[k].iat[i] == e["fields"][k]
            else:
                assert df[k].iat[i] is pd.NA


def test_heph_typed_columns():
    """Heph attributes of every type: integers stay exact (u64 max, i64
    min), floats are float64 with NaN where missing, texts and arrays are
    object columns with None where missing."""
    with quiet_open(DATA / "heph" / "heph_sample.bin.log") as t:
        df = quiet_frame(t, fields=True)
    assert str(df["u64 max"].dtype) == "UInt64"
    assert df["u64 max"].dropna().iloc[0] == 2**64 - 1
    assert df["i64 min"].dropna().iloc[0] == -2**63
    assert df["f64"].dtype == np.float64 and df["f64"].isna().sum() == len(df) - 1
    assert df["str"].dtype == object and df["str"].isna().sum() == len(df) - 1
    arr = df["u64 array"].dropna().iloc[0]
    assert isinstance(arr, list) and all(isinstance(x, int) for x in arr)


@pytest.mark.parametrize("path", TRACES, ids=IDS)
def test_fields_joined_across_batches(path):
    """Fields read in batches of 7 events (a field absent from some
    batches, of other types in others) join into the same columns as in
    one batch."""
    with quiet_open(path) as t:
        whole = quiet_frame(t, fields=True)
        pieces = quiet_frame(t, fields=True, batch_size=7)
    pd.testing.assert_frame_equal(whole, pieces)


def test_a_field_named_as_a_column_keeps_both(tmp_path):
    """A Heph attribute named "time" or "stream" (any column's name) is the
    column "fields.<name>"; the event columns keep their meaning."""
    path = tmp_path / "clash.bin.log"
    with weft.HephWriter(path, epoch=0) as w:
        s = w.stream(0)
        s.event("work", 100, 200, 0, {"time": 7, "stream": "x", "cpu": 3})
        s.event("work", 300, 400)
    with quiet_open(path) as t:
        df = quiet_frame(t, fields=True)
    assert df["time"].tolist() == [100, 300]
    assert str(df["stream"].dtype) == "category"
    assert df["fields.time"].tolist()[0] == 7 and df["fields.time"].isna().tolist()[1]
    assert df["fields.stream"].tolist() == ["x", None]
    assert "cpu" in df.columns and "fields.cpu" not in df.columns
    lines = [json.loads(x) for x in dump_json(path)]
    assert lines[0]["fields"]["time"] == 7 and lines[0]["time"] == 100
