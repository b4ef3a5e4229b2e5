# SPDX-License-Identifier: MIT
"""Building pandas DataFrames from the event batches of weft._weft."""

import numpy as np

from . import EVENT_COLUMNS


def _categorical(pd, codes, categories):
    """A categorical column from integer codes into `categories` (made
    unique: codes that decode to the same text share a category)."""
    categories = list(categories)
    if len(set(categories)) != len(categories):
        uniques, inverse = np.unique(np.array(categories, dtype=object), return_inverse=True)
        codes = inverse[codes] if len(codes) else codes
        categories = list(uniques)
    # Few categories: the narrowest integer type holds the codes (pandas
    # would narrow them anyway; the int64 copy would be the largest array).
    dtype = np.int8 if len(categories) < 2**7 else np.int16 if len(categories) < 2**15 \
        else np.int32 if len(categories) < 2**31 else np.int64
    return pd.Categorical.from_codes(codes.astype(dtype), categories=categories)


def _piece_kind(values):
    """The kind of a batch's field values: "u", "i", "f", "b" or "O"."""
    return values.dtype.kind


def _join_field(pd, pieces, lengths):
    """One field column from its pieces, one per batch: (values, mask) or
    None for a batch where no event had the field."""
    kinds = {_piece_kind(p[0]) for p in pieces if p is not None}
    missing = any(p is None or p[1] is not None for p in pieces)
    if not kinds:  # no event has the field
        return np.full(sum(lengths), np.nan)
    if "O" in kinds or ("b" in kinds and len(kinds) > 1):
        out = []
        for p, n in zip(pieces, lengths):
            if p is None:
                out.append(np.full(n, None, dtype=object))
                continue
            v = p[0].astype(object)
            if p[1] is not None:
                v[p[1]] = None
            out.append(v)
        return np.concatenate(out)
    if "f" in kinds:
        out = [np.full(n, np.nan) if p is None else p[0].astype(np.float64)
               for p, n in zip(pieces, lengths)]
        return np.concatenate(out)
    if kinds == {"i", "u"}:
        biggest = max(int(p[0].max()) for p in pieces if p is not None and p[0].dtype.kind == "u"
                      and len(p[0]))
        if biggest > np.iinfo(np.int64).max:
            return _join_field(pd, [None if p is None else (p[0].astype(object), p[1])
                                    for p in pieces], lengths)
    dtype = {"b": np.bool_, "u": np.uint64}.get(kinds.pop(), np.int64) if len(kinds) == 1 \
        else np.int64
    values = np.concatenate([np.zeros(n, dtype) if p is None else p[0].astype(dtype)
                             for p, n in zip(pieces, lengths)])
    if not missing:
        return values
    mask = np.concatenate([np.ones(n, np.bool_) if p is None else
                           (p[1] if p[1] is not None else np.zeros(n, np.bool_))
                           for p, n in zip(pieces, lengths)])
    if dtype is np.bool_:
        return pd.arrays.BooleanArray(values, mask)
    return pd.arrays.IntegerArray(values, mask)


def events_frame(trace, batches, fields):
    """The DataFrame of Trace.to_pandas() from its batches."""
    import pandas as pd

    columns = {name: [] for name, _ in EVENT_COLUMNS}
    field_parts, lengths, names = [], [], {}
    for batch in batches:  # one batch of everything when without fields
        for name in columns:
            columns[name].append(batch[name])
        lengths.append(len(batch["time"]))
        if fields:
            field_parts.append(batch["fields"])
            for name in batch["fields"]:
                names.setdefault(name, None)
    # One column at a time, its batches released once joined: the peak is
    # the batches and one joined column, not two copies of everything.
    data = {}
    for name, dtype in EVENT_COLUMNS:
        parts = columns.pop(name)
        data[name] = parts[0] if len(parts) == 1 else \
            np.concatenate(parts) if parts else np.empty(0, dtype)
        del parts
        if name == "stream":
            data[name] = _categorical(pd, data[name], trace.stream_paths)
        elif name == "code":
            data[name] = _categorical(pd, data[name], trace.codes)
    if fields is not None and fields is not True and fields is not False:
        for name in fields:
            names.setdefault(name, None)
    for name in names:
        pieces = [part.get(name) for part in field_parts]  # None: not in that batch
        # A field named as an event column (a Heph attribute "time") keeps both.
        column = "fields." + name if name in data else name
        data[column] = _join_field(pd, pieces, lengths) if pieces else np.empty(0, np.float64)
    # copy=False: pandas keeps each array as a block of its own, without a
    # copy (the default copies the columns of one type into one block, and
    # assigning the columns one by one copies each). With many field
    # columns pandas calls such a frame fragmented; it consolidates it when
    # an operation needs to, not at the peak here.
    return pd.DataFrame(data, index=pd.RangeIndex(len(data["time"])), copy=False)


# Flags of weft_span (weft/span.h).
_SPAN_CLIPPED, _SPAN_UNCLOSED, _SPAN_INSTANT = 1, 2, 4


def _texts(codes, texts):
    """An object column of `texts[code]`, None where the code is -1."""
    return np.array([None] + list(texts), dtype=object)[codes + 1] \
        if len(codes) else np.array([], dtype=object)


def spans_frame(trace, cols, emulate=False):
    """The DataFrame of Trace.spans() from the columns of Trace._spans()
    (emulated: with the channels' model after the timeline)."""
    import pandas as pd
    flags = cols["flags"]
    timeline = _texts(cols["timeline"], cols["timelines"])
    model = {"model": _categorical(pd, cols["category"], cols["categories"])} \
        if emulate else {}
    return pd.DataFrame({
        "stream": _categorical(pd, cols["stream"], trace.stream_paths),
        "timeline": timeline,
        **model,
        "name": _categorical(pd, cols["name"], cols["names"]),
        "start": cols["start"],
        "end": cols["end"],
        "duration": cols["end"] - cols["start"],
        "exclusive": cols["exclusive"],
        "depth": cols["depth"],
        "id": cols["id"],
        "parent": cols["parent"],
        "clipped": (flags & _SPAN_CLIPPED) != 0,
        "unclosed": (flags & _SPAN_UNCLOSED) != 0,
        "instant": (flags & _SPAN_INSTANT) != 0,
    })


def _optional_categorical(pd, codes, categories):
    """A categorical column whose code -1 is a missing value."""
    return pd.Categorical.from_codes(codes.astype(np.int32), categories=list(categories)) \
        if len(set(categories)) == len(categories) else \
        pd.Categorical(_texts(codes, categories))


def emulation_frame(trace, cols):
    """The DataFrame of Trace.emulate() from the dict of Trace._emulate()."""
    import pandas as pd
    from . import Diagnostic
    threads, cpus = cols["threads"], cols["cpus"]
    thread_rows = cols["object"] == 0
    row_codes = cols["row"].astype(np.int64) + np.where(thread_rows, 0, len(threads))
    paths = trace.stream_paths
    stream_of_thread = np.array([t["stream"] for t in threads], dtype=np.int64)
    stream_codes = np.where(thread_rows, stream_of_thread[np.where(thread_rows, cols["row"], 0)]
                            if len(threads) else -1, -1)
    frame = pd.DataFrame({
        "time": cols["clock"],
        "prv_time": cols["time"],
        "object": pd.Categorical.from_codes(cols["object"].astype(np.int8),
                                            categories=["thread", "cpu"]),
        "row": cols["row"],
        "row_label": _optional_categorical(pd, row_codes,
                                           [t["label"] for t in threads] +
                                           [c["label"] for c in cpus]),
        "stream": _optional_categorical(pd, stream_codes, paths),
        "type": cols["type"],
        "value": cols["value"],
        "label": _optional_categorical(pd, cols["label"], cols["labels"]),
        "depth": cols["depth"],
        "model": _optional_categorical(pd, cols["model"], cols["models"]),
        "channel": _optional_categorical(pd, cols["channel"], cols["channels"]),
        "title": _optional_categorical(pd, cols["title"], cols["titles"]),
    })
    frame.attrs["models"] = [tuple(m) for m in cols["models_enabled"]]
    frame.attrs["threads"] = threads
    frame.attrs["cpus"] = cpus
    frame.attrs["diagnostics"] = [Diagnostic(d[1], d[2], d[3], d[4], d[5])
                                  for d in cols["diagnostics"]]
    frame.attrs["start_clock"] = cols["start_clock"]
    frame.attrs["duration"] = cols["duration"]
    frame.attrs["events"] = cols["events"]
    return frame
