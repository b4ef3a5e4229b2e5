# SPDX-License-Identifier: MIT
"""The format extras of weft.Trace (docs/python.md, "Format extras"): ROSS
tables and summaries, Pallas grammars and their stored durations, ovni
marks and clock offsets. Each goes through a public libweft call (the C
part is python/src/extras.c); nothing here reads a trace file."""

import csv as _csv
import io as _io
import json as _json
import tempfile as _tempfile

import numpy as np

from . import _weft


def ross_levels():
    """The levels of Trace.ross_table(): "pe", "kp", "lp", "model", "event"
    (weft_ross_table_level_name())."""
    return _weft.ross_levels()


# ---- ROSS tables ---------------------------------------------------------------------

# The columns weft_ross_table_write() puts before the record's fields, with
# their types (docs/ross.md, "Tables"); virtual_time and real_time are
# typed by the record's fields of those names.
_TABLE_FIXED = {"file": "category", "offset": "u", "stream": "category", "kind": "category",
                "time_ns": "u", "is_end": "b"}
# A table column filled from another field for some records: an EVENT
# record's virtual_time is its virtual_recv_time (docs/ross.md).
_TABLE_ALIASES = {"virtual_time": ("virtual_time", "virtual_recv_time")}


def _type_class(types):
    """The column type of a set of weft field types: "u" (unsigned
    integers), "i" (integers, some signed), "f32" (float32 only), "f64"
    (floats, or floats and integers), "b" (bool) or "str"."""
    if not types or any(t in ("str", "bytes") for t in types):
        return "str"
    if types == {"bool"}:
        return "b"
    if "bool" in types:
        return "str"
    if all(t.startswith("u") for t in types):
        return "u"
    if all(t[0] in "ui" for t in types):
        return "i"
    return "f32" if types == {"f32"} else "f64"


def _table_types(schema, kinds, header, short_data):
    """{column: (type class, may be missing)} for the columns of a table
    whose rows are of the event kinds `kinds` (codes), from the kinds'
    fields (weft_trace_event_schema()): a column may be missing when a
    kind lacks the field, or when records had short model data and the
    field comes from the data (or when it mixes signed and unsigned
    integers: see _read_dtypes)."""
    kinds = [k for k in schema if k["code"] in kinds]
    out = {}
    for column in header:
        if column in _TABLE_FIXED:
            out[column] = (_TABLE_FIXED[column], False)
            continue
        names = _TABLE_ALIASES.get(column, (column,))
        types, missing = set(), False
        for k in kinds:
            field = next((f for n in names for f in k["fields"] if f["name"] == n), None)
            if field is None:
                missing = True
                continue
            types.add("str" if field["array"] else field["type"])
            missing = missing or (short_data > 0 and field["in_data"])
        kind = _type_class(types)
        # signed and unsigned fields in one column: through the categories,
        # which keep a u64 past 2**63 exact (an object column then)
        mixed = kind == "i" and any(t.startswith("u") for t in types)
        out[column] = (kind, missing or mixed)
    return out


def _read_dtypes(types):
    """The read_csv dtype of each column and the columns whose empty cells
    are missing values. Integers and booleans that may be missing are read
    as categories (one object per distinct value, not per cell) and
    turned into exact nullable columns afterwards (read_csv would make
    them float64)."""
    dtype, na = {}, {}
    for column, (kind, missing) in types.items():
        if kind == "category" or (missing and kind in ("u", "i", "b")):
            dtype[column] = "category"
        else:
            dtype[column] = {"u": np.uint64, "i": np.int64, "b": np.bool_, "f32": np.float32,
                             "f64": np.float64, "str": object}[kind]
        na[column] = [""] if kind in ("f32", "f64") or dtype[column] == "category" else []
    return dtype, na


def _from_categories(pd, column, kind):
    """An integer or bool column read as categories as an exact column:
    numpy when no cell is empty, else pandas' nullable array."""
    codes = column.cat.codes.to_numpy()
    cats = list(column.cat.categories)
    if kind == "b":
        values = np.array([c == "true" for c in cats] or [False], dtype=np.bool_)[codes]
    else:
        ints = [int(c) for c in cats]
        dtype = np.uint64 if kind == "u" else np.int64
        if kind == "i" and any(v > np.iinfo(np.int64).max for v in ints):
            dtype = object
        values = np.array(ints or [0], dtype=dtype)[codes]
    mask = codes < 0
    if not mask.any():
        return values
    if values.dtype == object:
        values[mask] = None
        return values
    values[mask] = 0
    if kind == "b":
        return pd.arrays.BooleanArray(values, mask)
    return pd.arrays.IntegerArray(values, mask)


def _header(f):
    """The header line of the CSV file f, as names (RFC 4180)."""
    f.seek(0)
    line = f.readline().decode("utf-8", "replace")
    f.seek(0)
    return next(_csv.reader(_io.StringIO(line)), [])


def _kinds_of(pd, f, rows, schema):
    """The event kinds (codes) of a table's rows: a first pass over its
    kind column (all the schema's kinds for an empty table)."""
    if rows == 0:
        return {k["code"] for k in schema}
    kinds = pd.read_csv(f, usecols=["kind"], dtype="category", keep_default_na=False)
    f.seek(0)
    return set(kinds["kind"].cat.categories)


def _table_frame(pd, f, rows, short_data, schema):
    """The DataFrame of the CSV table in f (see Trace.ross_table())."""
    header = _header(f)
    types = _table_types(schema, _kinds_of(pd, f, rows, schema), header, short_data)
    dtype, na = _read_dtypes(types)
    frame = pd.read_csv(f, dtype=dtype, keep_default_na=False, na_values=na,
                        float_precision="round_trip")
    for column, (kind, missing) in types.items():
        if kind == "f32":
            # the float32 values the records hold, exactly, as float64
            frame[column] = frame[column].astype(np.float64)
        elif kind in ("u", "i", "b") and dtype[column] == "category":
            frame[column] = _from_categories(pd, frame[column], kind)
    return frame


class FormatExtras:
    """The format-specific methods of weft.Trace (mixed into it)."""

    def ross_table(self, level="pe", streams=None, order="file", sort_budget=None):
        """The records of one level of a ROSS run as a pandas DataFrame:
        the table `weft table --level LEVEL` writes (weft_ross_table_write()),
        one row per record.

        level: "pe", "kp", "lp", "model" or "event" (weft.ross_levels()).
        streams: a glob on the stream paths ("gvt/*"). order: "file" (each
        file's order, files merged by real time), "virtual" or "real"
        (stable sorts by that column, NaN last). sort_budget: bytes a sort
        holds before it spills sorted runs to a temporary file (None: 32 MiB).

        Columns (docs/ross.md, "Tables"): file, stream and kind
        (categorical), offset and time_ns (uint64), virtual_time,
        real_time, is_end (bool), then the fields of the level's records:
        integers as uint64/int64 (pandas' nullable UInt64/Int64 where some
        records lack the field), float32 fields as float64 holding the
        stored float32 value exactly, float64 fields exactly, texts and
        model data (hex) as str. NaN and infinite values, and the fields a
        record lacks, are NaN. attrs["short_data"]: the records with less
        model data than the model schema (their model columns are missing).

        The table goes through an unlinked temporary file (memory: the
        DataFrame, not the CSV text). Raises weft.FormatError
        (WEFT_EUNSUPPORTED) for a trace that is no ROSS run and
        weft.ArgumentError for an unknown level, with the library's message.
        """
        import pandas as pd
        self._check_open()
        with _tempfile.TemporaryFile() as f:
            rows, short = self._ross_table(level, streams, order, sort_budget or 0, f.fileno())
            self._issue_warnings(2)
            frame = _table_frame(pd, f, rows, short, self.schema)
        frame.attrs["short_data"] = short
        return frame

    def ross_summary(self, dedup=False):
        """What `weft summary --json` says of a ROSS run
        (weft_ross_summary_write()) as a pandas DataFrame: one row per
        sampling-mode file (mode) and PE, then a row for all its PEs (pe
        <NA>); columns mode, pe, then the counts (samples,
        events_processed, ..., efficiency, net_events, num_gvts, ...) and
        the phase times (network_read_time, ..., seconds), as the JSON has
        them. attrs["summary"] is the whole JSON object (per mode: file,
        source, real and virtual time spans, end samples...). dedup: vt
        files keep only the last sample of each group with the same entity
        and virtual time. Raises weft.FormatError for a trace that is no
        ROSS run.
        """
        import pandas as pd
        self._check_open()
        summary = _json.loads(self._ross_summary(dedup))
        self._issue_warnings(2)
        rows = []
        for mode in summary["modes"]:
            for pe in mode.get("pes", []) + ([dict(mode["all"], pe=None)] if "all" in mode else []):
                row = {"mode": mode["mode"], "pe": pe.get("pe")}
                row.update({k: v for k, v in pe.items() if k not in ("pe", "phase_times")})
                row.update(pe.get("phase_times") or {})
                rows.append(row)
        frame = pd.DataFrame(rows)
        if len(frame):
            frame["pe"] = pd.array(frame["pe"], dtype="Int64")
        frame.attrs["summary"] = summary
        return frame

    def grammar(self, stream, totals=True):
        """The grammar of one Pallas thread, without unrolling it
        (weft/pallas_grammar.h): a weft.Grammar with its events, sequences,
        loops, tokens and each sequence's stored durations.

        stream: the stream index or its path. totals=True reads the value
        data of every sequence for its exact total durations (the columns
        total_ns and exclusive_total_ns); False: the headers only. Raises
        weft.FormatError for a trace that is not Pallas.
        """
        self._check_open()
        index = _stream_index(self, stream)
        cols = self._pallas_grammar(index, totals)
        self._issue_warnings(2)
        return Grammar(self, index, cols)

    @property
    def clock_offsets(self):
        """The clock offset of each stream (ns, added to its clocks by the
        reader: ovni's clock-offsets.txt or the ovni.clock_offsets option,
        per loom) as a pandas DataFrame: stream (the path), top (the path of
        its topmost node: an ovni loom) and clock_offset (int64)."""
        import pandas as pd
        nodes = {n["id"]: n for n in self._nodes()}
        rows = []
        for s in self._streams():
            node = nodes.get(s["node"])
            while node is not None and node["parent"] is not None:
                node = nodes[node["parent"]]
            rows.append((s["path"], node["path"] if node else None, s["clock_offset"]))
        return pd.DataFrame({"stream": [r[0] for r in rows], "top": [r[1] for r in rows],
                             "clock_offset": np.array([r[2] for r in rows], dtype=np.int64)})

    def marks(self, streams=None, start=None, end=None):
        """The ovni marks of the trace (ovni_mark_push/pop/set: events OM[,
        OM], OM=) as a pandas DataFrame, in time order: time (uint64),
        stream (categorical), type (int64), title (the mark type's title,
        None when the thread's metadata does not define it), action
        ("push", "pop" or "set"), value (int64), label (the value's label,
        None when it has none) and channel ("single" or "stack"); type and
        value are nullable Int64 when a payload could not be decoded.

        The types, titles and labels are those the threads declared
        (ovni_mark_type, ovni_mark_label: the metadata key ovni.mark of the
        thread, else of its process); the values are decoded by the
        library (weft_event_fields()). streams, start, end: as in events().
        A trace of another format has no marks (an empty DataFrame).
        """
        import pandas as pd
        self._check_open()
        df = self.to_pandas(streams=streams, start=start, end=end, codes="OM?",
                            fields=["value", "type"])
        # other formats have no marks (an event of theirs named OM[ is not one)
        df = df[df["code"].isin(list(_MARK_ACTIONS) if self.format == "ovni" else [])]
        defs = _mark_definitions(self)
        stream = df["stream"].astype(str).to_numpy()
        types, values = _int_column(pd, df["type"]), _int_column(pd, df["value"])
        titles, labels, channels = [], [], []
        for s, t, v in zip(stream, types.tolist(), values.tolist()):
            d = defs.get(s, {}).get(t) if t is not pd.NA else None
            titles.append(d["title"] if d else None)
            labels.append(d["labels"].get(v) if d and v is not pd.NA else None)
            channels.append(d["chan_type"] if d else None)
        return pd.DataFrame({
            "time": df["time"].to_numpy(),
            "stream": df["stream"].array,
            "type": types,
            "title": np.array(titles, dtype=object),
            "action": pd.Categorical([_MARK_ACTIONS[c] for c in df["code"].astype(str)],
                                     categories=["push", "pop", "set"]),
            "value": values,
            "label": np.array(labels, dtype=object),
            "channel": np.array(channels, dtype=object),
        })


def _int_column(pd, column):
    """A field column of integers as int64, or nullable Int64 when some
    events lack the field (a payload that does not match its layout)."""
    if not len(column):
        return np.empty(0, np.int64)
    if column.isna().any():
        return pd.array(column, dtype="Int64")
    return column.to_numpy(dtype=np.int64)


# The ovni mark events and what they do to their type's channel.
_MARK_ACTIONS = {"OM[": "push", "OM]": "pop", "OM=": "set"}


def _mark_types(metadata):
    """The mark types of a node's metadata (ovni.mark: {"type": {title,
    chan_type, labels}}) as {type: {title, chan_type, labels{value: str}}}."""
    marks = (metadata.get("ovni") or {}).get("mark") or {}
    out = {}
    for t, d in marks.items():
        try:
            labels = {int(v): str(l) for v, l in (d.get("labels") or {}).items()}
            out[int(t)] = {"title": d.get("title"), "chan_type": d.get("chan_type"),
                           "labels": labels}
        except (TypeError, ValueError, AttributeError):
            continue
    return out


def _mark_definitions(trace):
    """{stream path: {type: definition}}: the marks of each stream's node,
    completed by its ancestors' (the process's, as ovni merges them)."""
    nodes = {n["id"]: n for n in trace.nodes}
    out = {}
    for s in trace.streams:
        defs = {}
        node = nodes.get(s["node"])
        while node is not None:
            for t, d in _mark_types(node["metadata"]).items():
                defs.setdefault(t, d)
            node = nodes.get(node["parent"]) if node["parent"] is not None else None
        out[s["path"]] = defs
    return out


def _stream_index(trace, stream):
    """A stream given by index or path as its index (IndexError, KeyError)."""
    paths = trace.stream_paths
    if isinstance(stream, str):
        if stream not in paths:
            raise KeyError("no stream %r" % stream)
        return paths.index(stream)
    index = int(stream)
    if not 0 <= index < len(paths):
        raise IndexError("no stream %d" % index)
    return index


# ---- Pallas grammars --------------------------------------------------------------

_TOKEN_KINDS = ("invalid", "event", "sequence", "loop")


class Grammar:
    """The grammar of one Pallas thread (Trace.grammar()): how its events
    repeat, without unrolling them (weft/pallas_grammar.h; what `weft dump
    --structure` prints).

    Attributes:
      stream, stream_path: the thread's stream index and path.
      root: the index of the thread's root sequence (a block).
      events: DataFrame, one row per event of the grammar (index: the
        event's number E<i>): record (the Pallas record kind), code
        ("Enter", "MPI_Send", ...), description ("Enter 1 (main)", as
        pallas_info names it), occurrences, first_time, last_time (ns).
      sequences: DataFrame, one row per sequence (S<i>): kind ("block",
        "loop_body", or "dead" for an unused slot), name (the region of a
        block that starts with an Enter, else "Sequence_<i>"), region_ref
        (Int64, <NA> when none), token_count, occurrences, min_ns, max_ns,
        mean_ns (the stored summary), exclusive_occurrences,
        exclusive_min_ns, exclusive_max_ns, exclusive_mean_ns (blocks: time
        not in nested blocks; loop bodies: time in blocks), and with totals
        the exact sums total_ns and exclusive_total_ns (uint64).
      loops: DataFrame, one row per loop (L<i>): body (the repeated
        sequence, Int64: <NA> for a dead slot), iterations, occurrences, dead.
    """

    def __init__(self, trace, stream, cols):
        import pandas as pd
        self._trace = trace
        self.stream = stream
        self.stream_path = trace.stream_paths[stream]
        self.root = cols["root"]
        ev = cols["events"]
        self.events = pd.DataFrame({
            "record": ev["record"], "code": ev["code"], "description": ev["description"],
            "occurrences": ev["occurrences"], "first_time": ev["first_time"],
            "last_time": ev["last_time"]})
        sq = cols["sequences"]
        kind = np.where(sq["dead"], "dead", np.where(sq["loop_body"], "loop_body", "block"))
        region = sq["region_ref"]
        seq = {
            "kind": pd.Categorical(kind, categories=["block", "loop_body", "dead"]),
            "name": sq["name"],
            "region_ref": pd.arrays.IntegerArray(np.maximum(region, 0), region < 0),
            "token_count": sq["token_count"],
            "occurrences": sq["count"], "min_ns": sq["min"], "max_ns": sq["max"],
            "mean_ns": sq["mean"], "exclusive_occurrences": sq["exclusive_count"],
            "exclusive_min_ns": sq["exclusive_min"], "exclusive_max_ns": sq["exclusive_max"],
            "exclusive_mean_ns": sq["exclusive_mean"]}
        if "total" in sq:
            seq["total_ns"] = sq["total"]
            seq["exclusive_total_ns"] = sq["exclusive_total"]
        self.sequences = pd.DataFrame(seq)
        lp = cols["loops"]
        self.loops = pd.DataFrame({"body": pd.arrays.IntegerArray(
                                       np.where(lp["dead"], 0, lp["body"]).astype(np.int64),
                                       lp["dead"].copy()),
                                   "iterations": lp["iterations"],
                                   "occurrences": lp["occurrences"], "dead": lp["dead"]})
        self._tokens = cols["tokens"]

    def __repr__(self):
        return "<weft.Grammar %r: %d events, %d sequences, %d loops>" % (
            self.stream_path, len(self.events), len(self.sequences), len(self.loops))

    def tokens(self, sequence):
        """The tokens of a sequence, in order, as a DataFrame: kind
        ("event", "sequence" or "loop") and index (into events, sequences
        or loops)."""
        import pandas as pd
        n = len(self.sequences)
        if not 0 <= sequence < n:
            raise IndexError("no sequence %d" % sequence)
        lo, hi = int(self._tokens["start"][sequence]), int(self._tokens["start"][sequence + 1])
        kinds = self._tokens["kind"][lo:hi]
        return pd.DataFrame({
            "kind": pd.Categorical.from_codes(np.minimum(kinds, 3).astype(np.int8),
                                              categories=list(_TOKEN_KINDS)),
            "index": self._tokens["index"][lo:hi]})

    def durations(self, sequence, exclusive=False):
        """The stored durations (ns) of a sequence, one per occurrence in
        the order they occurred, as a numpy uint64 array
        (weft_pallas_grammar_sequence_durations(); its sum is total_ns).
        exclusive=True: its exclusive durations."""
        self._trace._check_open()
        if not 0 <= sequence < len(self.sequences):
            raise IndexError("no sequence %d" % sequence)
        return self._trace._pallas_durations(self.stream, sequence, exclusive)
