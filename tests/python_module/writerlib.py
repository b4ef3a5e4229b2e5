# SPDX-License-Identifier: MIT
"""What the tests of the writer classes (test_writers_*.py) share: a
written trace's events as plain dicts, read through weft.open() and
through `weft dump --json`, to compare with what was written."""

import json
import math
import warnings

import numpy as np
import pandas as pd

import weft
from conftest import dump_json

COLUMNS = ("time", "end", "stream", "code", "offset", "depth", "parent")


def plain(v):
    """A field value as a plain Python value (numpy scalars, arrays as lists)."""
    if isinstance(v, np.ndarray):
        v = v.tolist()
    if isinstance(v, list):
        return [plain(x) for x in v]
    if isinstance(v, np.generic):
        return v.item()
    return v


def missing(v):
    return v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v))


def field_name(column):
    """The field of a DataFrame column (a field named as a column is "fields.<name>")."""
    if column.startswith("fields.") and column[7:] in COLUMNS:
        return column[7:]
    return column


def module_events(path, **options):
    """The events of the trace through weft.open(): dicts of time, end,
    stream, code and fields (those the event has), in the reader's order."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a written trace has no problem
        with weft.open(path, **options) as trace:
            df = trace.to_pandas(fields=True)
    names = [c for c in df.columns if c not in COLUMNS]
    out = []
    for i in range(len(df)):
        fields = {field_name(n): plain(df[n].iat[i]) for n in names if not missing(df[n].iat[i])}
        out.append({"time": int(df["time"].iat[i]), "end": int(df["end"].iat[i]),
                    "stream": str(df["stream"].iat[i]), "code": str(df["code"].iat[i]),
                    "fields": fields})
    return out


def command_events(path):
    """The same through `weft dump --json` (in the command's order)."""
    out = []
    for line in dump_json(path):
        e = json.loads(line)
        # dump --json leaves "end" out for point events
        out.append({"time": e["time"], "end": e.get("end", e["time"]), "stream": e["stream"],
                    "code": e["code"], "fields": e["fields"]})
    return out


def by_time(events):
    """The events sorted by time, stream, code and end (a stable order to compare)."""
    return sorted(events, key=lambda e: (e["time"], e["stream"], e["code"], e["end"],
                                         json.dumps(e["fields"], sort_keys=True)))


def assert_same_events(path, expected, **options):
    """Every event of the trace at `path`, through the module and through
    the command, is one of `expected` with every field, and none is missing."""
    want = by_time(expected)
    assert by_time(module_events(path, **options)) == want
    assert by_time(command_events(path)) == want
