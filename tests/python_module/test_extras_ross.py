# SPDX-License-Identifier: MIT
"""Trace.ross_table() and Trace.ross_summary() (issue 16, format extras):
for every ROSS run of tests/data and every level, the DataFrame equals
the CSV `weft table` writes with the same options, parsed here
independently (csv module), cell by cell: integers exact, floats the
stored values (formatting a float32 column's value as float32 gives back
the CSV text), empty cells missing. The summary equals `weft summary
--json`. Traces that are no ROSS run and bad arguments raise."""

import csv
import io
import json
import math
import subprocess

import numpy as np
import pandas as pd
import pytest

import weft
from conftest import DATA, weft_bin

RUNS = sorted(DATA.glob("ross/*/np*"))
IDS = [str(p.relative_to(DATA / "ross")) for p in RUNS]
IM = DATA / "ross" / "im-everything" / "np1"


def cli_table(path, *args):
    """The header and rows of `weft table`'s CSV."""
    r = subprocess.run([weft_bin(), "table", *args, str(path)], capture_output=True, text=True,
                       check=False)
    assert r.returncode == 0, r.stderr
    rows = list(csv.reader(io.StringIO(r.stdout, newline="")))
    return rows[0], rows[1:]


def is_missing(v):
    return v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v))


def float_widths(schema):
    """{(kind code, column): "f32" or "f64"}: the stored width of each float
    field of each record kind (weft_trace_event_schema()); a table's
    virtual_time is an EVENT record's virtual_recv_time (docs/ross.md)."""
    out = {}
    for k in schema:
        for f in k["fields"]:
            if f["type"] in ("f32", "f64"):
                out[(k["code"], f["name"])] = f["type"]
        if (k["code"], "virtual_time") not in out and (k["code"], "virtual_recv_time") in out:
            out[(k["code"], "virtual_time")] = out[(k["code"], "virtual_recv_time")]
    return out


def check_float(v, cell, width, where):
    """A float cell: a float64 field is the float64 the cell reads as; a
    float32 field holds the stored float32 exactly, whose float32 text is
    the cell."""
    if width == "f32":
        assert np.float32(v) == v and np.float32(cell) == np.float32(v), (where, v, cell)
    else:
        assert float(cell) == v, (where, v, cell, width)


def check_column(series, cells, name, kinds, widths):
    """One DataFrame column against the CSV cells of that column (kinds:
    the kind of each row)."""
    kind = series.dtype.kind if isinstance(series.dtype, np.dtype) else None
    values = series.tolist()
    assert len(values) == len(cells)
    for i, (v, cell) in enumerate(zip(values, cells)):
        where = (name, i)
        if cell == "" and not (kind == "O" or str(series.dtype) == "category"):
            assert is_missing(v), (where, v)
        elif str(series.dtype) == "category" or kind == "O":
            assert v == cell, (where, v, cell)
        elif str(series.dtype) in ("bool", "boolean"):
            assert cell in ("true", "false") and v == (cell == "true"), (where, v, cell)
        elif str(series.dtype) in ("uint64", "int64", "UInt64", "Int64"):
            assert not is_missing(v) and int(v) == int(cell), (where, v, cell)
        else:
            assert series.dtype == np.float64, (where, series.dtype)
            check_float(v, cell, widths.get((kinds[i], name), "f64"), where)


def check_table(df, header, rows, schema):
    assert list(df.columns) == header
    assert len(df) == len(rows)
    widths = float_widths(schema)
    kinds = [r[header.index("kind")] for r in rows]
    for j, name in enumerate(header):
        check_column(df[name], [r[j] for r in rows], name, kinds, widths)


@pytest.mark.parametrize("level", weft.ross_levels())
@pytest.mark.parametrize("path", RUNS, ids=IDS)
def test_table_equals_the_command(path, level):
    header, rows = cli_table(path, "--level", level)
    with weft.open(path) as t:
        df = t.ross_table(level)
        check_table(df, header, rows, t.schema)
    assert df["offset"].dtype == np.uint64 and df["time_ns"].dtype == np.uint64
    assert df["is_end"].dtype == np.bool_ and df["virtual_time"].dtype == np.float64
    assert df.attrs["short_data"] == 0


def test_levels_and_dtypes():
    assert weft.ross_levels() == ["pe", "kp", "lp", "model", "event"]
    with weft.open(IM) as t:
        pe = t.ross_table("pe")
        model = t.ross_table("model")
        event = t.ross_table("event")
    assert pe["events_processed"].dtype == np.uint64
    assert str(pe["stream"].dtype) == "category" and set(pe["kind"]) == {"PE"}
    # MODEL and ANALYSIS_MODEL rows: each lacks the other's fields
    assert str(model["stats_type"].dtype) == "Int64" and model["stats_type"].isna().any()
    assert str(model["sample_size"].dtype) == "Int64" and model["sample_size"].isna().any()
    assert model["model_data"].dtype == object
    # float32 fields hold the stored float32 values
    recv = event["virtual_recv_time"].to_numpy()
    assert np.array_equal(recv.astype(np.float32).astype(np.float64), recv)
    assert np.array_equal(event["virtual_time"].to_numpy(), recv)


@pytest.mark.parametrize("kwargs,args", [
    ({"order": "virtual"}, ["--sort", "virtual"]),
    ({"order": "real", "sort_budget": 4096}, ["--sort", "real", "--sort-budget", "4096"]),
    ({"streams": "gvt/*"}, ["--stream", "gvt/*"]),
])
def test_table_options_match_the_command(kwargs, args):
    header, rows = cli_table(IM, "--level", "kp", *args)
    with weft.open(IM) as t:
        check_table(t.ross_table("kp", **kwargs), header, rows, t.schema)


def test_model_schema_and_short_data():
    schema = "MODEL: u32 magic, u32 lpid, i64 count; ANALYSIS_MODEL: u64 events, f64 vt"
    header, rows = cli_table(IM, "--level", "model", "--ross-model-schema", schema)
    with weft.open(IM, ross_model_schema=schema) as t:
        df = t.ross_table("model")
        check_table(df, header, rows, t.schema)
    assert str(df["count"].dtype) == "Int64" and str(df["events"].dtype) == "UInt64"
    schema = "MODEL: i64 count; ANALYSIS_MODEL: u64 count"  # one column, both signs
    header, rows = cli_table(IM, "--level", "model", "--ross-model-schema", schema)
    with weft.open(IM, ross_model_schema=schema) as t:
        df = t.ross_table("model")
        check_table(df, header, rows, t.schema)
    assert str(df["count"].dtype) == "int64"
    short = DATA / "ross" / "phold-model-gvt" / "np2"
    schema = "MODEL: u32 word, u32 more"
    header, rows = cli_table(short, "--level", "model", "--ross-model-schema", schema)
    with pytest.warns(weft.TraceWarning, match="less model data than the model schema"):
        t = weft.open(short, ross_model_schema=schema)
    with t:
        df = t.ross_table("model")
        check_table(df, header, rows, t.schema)
    assert df.attrs["short_data"] == 1680 and df["word"].isna().all()


def test_empty_table():
    header, rows = cli_table(IM, "--level", "pe", "--stream", "nothing/*")
    with weft.open(IM) as t:
        df = t.ross_table("pe", streams="nothing/*")
    assert rows == [] and list(df.columns) == header and len(df) == 0
    assert df["pe_id"].dtype == np.uint64


def test_errors():
    ovni = DATA / "ovni" / "v3" / "nosv-parallel-tasks" / "ovni"
    r = subprocess.run([weft_bin(), "table", "--level", "pe", str(ovni)], capture_output=True,
                       text=True, check=False)
    with weft.open(ovni) as t:
        with pytest.raises(weft.FormatError) as e:
            t.ross_table("pe")
        assert e.value.message in r.stderr and "is an ovni trace" in e.value.message
        with pytest.raises(weft.FormatError):
            t.ross_summary()
    with weft.open(IM) as t:
        with pytest.raises(weft.ArgumentError):
            t.ross_table("thread")
        with pytest.raises(ValueError):
            t.ross_table("pe", order="sideways")
    with pytest.raises(ValueError):
        t.ross_table("pe")


@pytest.mark.parametrize("dedup", [False, True])
@pytest.mark.parametrize("path", RUNS, ids=IDS)
def test_summary_equals_the_command(path, dedup):
    r = subprocess.run([weft_bin(), "summary", "--json", *(["--dedup"] if dedup else []),
                        str(path)], capture_output=True, text=True, check=False)
    assert r.returncode == 0, r.stderr
    want = json.loads(r.stdout)
    with weft.open(path) as t:
        df = t.ross_summary(dedup=dedup)
    assert df.attrs["summary"] == want
    expected = []
    for mode in want["modes"]:
        for pe in mode.get("pes", []) + [dict(mode["all"], pe=None)]:
            flat = {k: v for k, v in pe.items() if k != "phase_times"}
            flat.update(pe.get("phase_times") or {})
            expected.append((mode["mode"], flat))
    assert len(df) == len(expected)
    for (mode, flat), row in zip(expected, df.to_dict("records")):
        assert row["mode"] == mode
        for k, v in flat.items():
            got = row[k]
            if v is None:
                assert is_missing(got), (k, got)
            else:
                assert got == v, (k, got, v)
