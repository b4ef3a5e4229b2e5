# SPDX-License-Identifier: MIT
"""Heph attributes (issue 16, format extras): Trace.to_pandas(fields=True)
is the way to them (docs/python.md, "Heph attributes"). For every Heph
trace of tests/data, every attribute of every event in `weft dump --json`
is a column of the type its values call for (integers exact in
uint64/int64 or nullable UInt64/Int64, floats float64, texts str, arrays
lists, in object columns), and it is missing exactly on the events
without that attribute."""

import json
import math

import numpy as np
import pandas as pd
import pytest

import weft
from conftest import DATA, dump_json

HEPH = sorted(DATA.glob("heph/*.bin.log"))
EVENT_KEYS = ("time", "end", "stream", "code", "offset", "depth", "parent")


def missing(v):
    return v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v))


def expected_kinds(schema):
    """{attribute: "int", "float", "str", "list" or "bytes"}: the column each
    attribute calls for, from the types the event kinds declare (JSON
    cannot tell 789.0 from 789)."""
    out = {}
    for k in schema:
        for f in k["fields"]:
            t = f["type"]
            kind = "list" if f["array"] else "int" if t[0] in "ui" and t[1:].isdigit() else \
                "float" if t in ("f32", "f64") else t
            out.setdefault(f["name"], set()).add(kind)
    return {name: kinds.pop() if len(kinds) == 1 else "object" for name, kinds in out.items()}


def check_attribute(series, values, name, kind):
    """A column against the attribute's value per event (absent: missing)."""
    present = [v is not None for v in values]
    got = series.tolist()
    assert [not missing(v) for v in got] == present, name
    if kind == "int":
        assert str(series.dtype) in ("uint64", "int64", "UInt64", "Int64"), (name, series.dtype)
        assert all(int(g) == v for g, v in zip(got, values) if v is not None), name
    elif kind == "float":
        assert series.dtype == np.float64, (name, series.dtype)
        assert all(isinstance(g, float) and (g == v or np.float32(g) == np.float32(v))
                   for g, v in zip(got, values) if v is not None), name
    else:
        assert series.dtype == object, (name, series.dtype)
        want_type = {"str": str, "list": list, "bytes": bytes}.get(kind)
        for g, v in zip(got, values):
            if v is not None:
                assert want_type is None or isinstance(g, want_type), (name, g)
                assert (g.hex() if kind == "bytes" else g) == v, (name, g, v)


@pytest.mark.parametrize("path", HEPH, ids=[p.name for p in HEPH])
def test_every_attribute_is_a_typed_column(path):
    events = [json.loads(x) for x in dump_json(path)]
    names = {}
    for e in events:
        for k in e["fields"]:
            names.setdefault(k, None)
    with weft.open(path) as t:
        df = t.to_pandas(fields=True)
        # every attribute the kinds declare is a column too
        kinds = expected_kinds(t.schema)
    assert len(df) == len(events)
    columns = [c for c in df.columns if c not in EVENT_KEYS]
    assert sorted(c[len("fields."):] if c.startswith("fields.") else c for c in columns) == \
        sorted(names)
    assert set(names) <= set(kinds)
    for name in names:
        column = "fields." + name if name in EVENT_KEYS else name
        check_attribute(df[column], [e["fields"].get(name) for e in events], name, kinds[name])


def test_the_guide_example():
    """The example of docs/python.md, "Heph attributes"."""
    with weft.open(DATA / "heph" / "heph_sample.bin.log") as trace:
        df = trace.to_pandas(fields=True)
        per_kind = {k["code"]: [f["name"] for f in k["fields"]] for k in trace.schema}
    built = df[df["code"] == "Building runtime"]
    assert built["worker_threads"].tolist() == [1]
    assert per_kind["Building runtime"] == ["worker_threads"]
    with_amount = df[df["amount"].notna()]
    assert len(with_amount) > 0 and str(df["amount"].dtype) == "UInt64"
    assert with_amount["code"].astype(str).str.contains("Scheduling").all()
