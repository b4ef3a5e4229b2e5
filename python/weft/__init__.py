# SPDX-License-Identifier: MIT
"""Read execution traces (ovni, Heph, ROSS, Pallas) into numpy and pandas.

    import weft
    with weft.open("trace/") as trace:
        for batch in trace.events():          # dicts of numpy arrays
            ...
        df = trace.to_pandas(fields=["cpu"])  # one DataFrame

The reading is done by libweft (the C library of the `weft` command); this
package is its Python front end: weft._weft is the extension written in C,
this file the thin layer above it. See docs/python.md.
"""

import json as _json
import warnings as _warnings

from . import _weft
from ._weft import (ArgumentError, Error, FormatError, IOError, NotFoundError,
                    Progress, format_options, formats, version)
from ._extras import FormatExtras as _FormatExtras, Grammar, ross_levels
from ._writers import HephStream, HephWriter, PallasThread, PallasWriter

__all__ = ["open", "Trace", "Diagnostic", "TraceWarning", "Error", "FormatError",
           "IOError", "NotFoundError", "ArgumentError", "formats", "format_options",
           "version", "EVENT_COLUMNS", "Progress", "Grammar", "ross_levels",
           "HephWriter", "HephStream", "PallasWriter", "PallasThread"]

#: The columns of an event batch (Trace.events()) and of Trace.to_pandas(),
#: with their numpy types.
EVENT_COLUMNS = (("time", "uint64"), ("end", "uint64"), ("stream", "uint32"),
                 ("code", "uint32"), ("offset", "uint64"), ("depth", "int32"),
                 ("parent", "int64"))

# Options of weft.open() that are settings of the library's open options
# rather than format options (weft_open_options_set).
_OPEN_SETTINGS = ("stored_order", "threads", "read_budget_bytes", "progress",
                  "progress_interval", "comm")


class TraceWarning(UserWarning):
    """A problem found in a trace that leaves it readable (a diagnostic of
    severity warning or error), issued by warnings.warn when the trace is
    opened or while its events are read. The same problem is a
    weft.Diagnostic in Trace.diagnostics."""


class Diagnostic:
    """One problem found in a trace: where and what.

    Attributes: severity ("note", "warning" or "error"), file (the file,
    relative to the trace, or None), offset (the byte offset in it, or
    None when the problem is not at one place), message (what was
    expected and found). str() gives the line the weft command prints.
    """

    __slots__ = ("_severity", "_file", "_offset", "_message", "_line")

    def __init__(self, severity, file, offset, message, line):
        self._severity = severity
        self._file = file
        self._offset = offset
        self._message = message
        self._line = line

    severity = property(lambda self: self._severity, doc='"note", "warning" or "error".')
    file = property(lambda self: self._file, doc="The file, relative to the trace, or None.")
    offset = property(lambda self: self._offset,
                      doc="The byte offset in the file, or None when not at one place.")
    message = property(lambda self: self._message, doc="What was expected and what was found.")

    def __str__(self):
        return self._line

    def __repr__(self):
        return "weft.Diagnostic(%r)" % self._line


def _option_key(key):
    """A keyword of weft.open() as a format option key: ross_kind is
    "ross.kind" (the first underscore separates the format)."""
    if "." in key or "_" not in key:
        return key
    fmt, name = key.split("_", 1)
    return fmt + "." + name


def _option_value(value):
    """A format option value as the text the library parses."""
    if value is True:
        return "true"
    if value is False:
        return "false"
    return str(value)


def open(path, format=None, **options):
    """Opens the trace at `path` (a directory or a file) and returns a Trace.

    format: "ovni", "heph", "ross" or "pallas"; None detects it.
    options: the library's format options, as keywords with the first
    underscore for the dot (ross_kind="gvt") or spelled out
    (**{"ross.kind": "gvt"}); weft.format_options() lists them. Also
    stored_order=True (events as the files hold them), threads=N (threads
    for opening; 1: none) and read_budget_bytes=N.
    progress: a callable given a weft.Progress (phase, bytes and events
    done and total, fraction, finished) at most every progress_interval
    seconds (0.1 by default) while the library works on the trace, from
    the opening on; Trace.progress changes it later. What it raises is
    raised when the running call returns (the library is not stopped).

    Raises weft.NotFoundError (a FileNotFoundError) when there is nothing
    at `path` or no format recognises it, weft.FormatError when the trace
    is malformed, weft.IOError (an OSError) when reading fails, and
    weft.ArgumentError (a ValueError) for a bad option. Problems that leave
    the trace readable are issued as weft.TraceWarning warnings and kept in
    Trace.diagnostics.

    comm: an MPI communicator (mpi4py's MPI.COMM_WORLD, or any object with
    its Get_rank(), Get_size(), gather(obj) and bcast(obj)) to share the
    trace among ranks, as weft-mpi does (docs/mpi.md): every rank calls
    weft.open() and then profile() together; each reads its share of the
    streams and rank 0's profile() is the whole trace's (the other ranks
    get their part). weft links no MPI: it calls the communicator.
    """
    return Trace(path, format, **options)


class Trace(_FormatExtras, _weft.Trace):
    """An open trace (weft.open()): its streams, hierarchy, event kinds and
    diagnostics, and its events as numpy columns or a pandas DataFrame.

    A context manager: `with weft.open(path) as trace:` closes it at the
    end. Every use of a closed trace raises ValueError. A trace belongs to
    one thread at a time (open it once per thread to read in parallel).
    """

    def __init__(self, path, format=None, **options):
        settings = {k: options.pop(k) for k in _OPEN_SETTINGS if k in options}
        pairs = [(_option_key(k), _option_value(v)) for k, v in options.items()]
        super().__init__(path, format, pairs, **settings)
        self._diags_issued = 0
        self._issue_warnings(3)

    def _issue_warnings(self, stacklevel):
        """Issues the diagnostics found since the last call (warnings and
        errors, not notes) as TraceWarning."""
        new = self._diagnostics(self._diags_issued)
        self._diags_issued += len(new)
        for d in new:
            if d[0] >= 1:
                _warnings.warn(TraceWarning(d[5]), stacklevel=stacklevel + 1)

    def __enter__(self):
        self._check_open()
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __repr__(self):
        if self.closed:
            return "<weft.Trace closed>"
        return "<weft.Trace %s %r, %d streams>" % (self.format, self.path, len(self.stream_paths))

    def _check_open(self):
        if self.closed:
            raise ValueError("the trace is closed")

    @property
    def metadata(self):
        """The trace-wide metadata as a dict ({} when the format has none;
        Heph: its epochs and packet counts)."""
        return _json.loads(self.metadata_json)

    @property
    def streams(self):
        """The streams as a list of dicts: index, path, kind, name, number
        (pid, tid... or None), file (relative to the trace), file_size,
        finished (True, False, or None when the layout does not record it),
        big_endian, clock_offset (ns), node (its index in nodes) and
        metadata (a dict)."""
        streams = self._streams()
        for s in streams:
            s["metadata"] = _json.loads(s["metadata"])
        return streams

    @property
    def nodes(self):
        """The hierarchy (e.g. loom > process > thread) as a list of dicts:
        id (its index), parent (the parent's id, None at the top), kind,
        name, path, number (or None), stream (the stream index when the node
        is a stream, else None) and metadata (a dict)."""
        nodes = self._nodes()
        for n in nodes:
            n["metadata"] = _json.loads(n["metadata"])
        return nodes

    @property
    def diagnostics(self):
        """The problems found so far, opening and reading, as a list of
        weft.Diagnostic (the list grows as reading finds more)."""
        return [Diagnostic(d[1], d[2], d[3], d[4], d[5]) for d in self._diagnostics()]

    @property
    def schema(self):
        """The event kinds of the trace's format as a list of dicts: code,
        payload_size (0 unless it tells layouts apart), role ("point",
        "interval", "enter", ...), category, data_size, variable_fields (True
        when events may have fields past the listed ones) and fields (a list
        of dicts: name, type ("u32", "str", ...), array, variable, in_data)."""
        return self._schema()

    @property
    def start_time(self):
        """The time (ns) of the trace's earliest event, None when it has none."""
        return self._start_time()

    def events(self, streams=None, start=None, end=None, codes=None, order=None,
               batch_size=65536, threads=1):
        """The events in batches: each a dict of numpy arrays of equal length.

        time, end (uint64, ns; end == time for point events), stream (uint32,
        an index into trace.stream_paths), code (uint32, an index into
        trace.codes, which grows as codes are met), offset (uint64, the byte
        offset of the record in its stream's file), depth (int32, the depth
        in a call tree, -1 if none) and parent (int64, the stored index of the
        enclosing event in its stream, -1 if none).

        streams, codes: glob patterns (fnmatch) on the stream path and on
        the code. start, end: the time window in ns, both inclusive.
        order: "time" (merged by time), "stored" (as the files hold them),
        "natural" (the format's best), "stream" (each stream in turn, in
        stream index order: the fastest for traces of one file per stream)
        or None (as the trace was opened).
        batch_size: the events per batch (memory is about 40 bytes per
        event of a batch). threads: with order="stream", the streams are
        read by that many threads at once (each opens the trace again);
        each batch holds events of one stream, a stream's batches come in
        order, and the streams' batches come interleaved as read. The
        library reads without the GIL. Problems met while reading are
        issued as TraceWarning and kept in diagnostics.
        """
        return self._batches(self._events(streams, start, end, codes, order, batch_size,
                                          threads=threads))

    def _batches(self, it):
        """Yields the batches of `it`, issuing the new diagnostics after each."""
        try:
            for batch in it:
                self._issue_warnings(2)
                yield batch
        finally:
            if not self.closed:
                self._issue_warnings(2)

    def to_pandas(self, streams=None, start=None, end=None, codes=None, order=None,
                  fields=None, batch_size=1 << 20, threads=1):
        """The events as one pandas DataFrame.

        Columns: time, end, stream and code (categorical: the stream paths
        and the codes), offset, depth, parent (see events()); with
        fields=["cpu", "tid"] (or fields=True: every field met) a column per
        typed field decoded from the payloads (weft_event_fields), named as
        the field: integers as uint64/int64 (pandas' nullable UInt64/Int64
        where some events lack the field, so that 64-bit values stay exact),
        floats as float64 (NaN where missing), booleans, and texts, bytes and
        arrays (lists) as object columns (None where missing). A field named
        as one of the columns above is the column "fields.<name>". Other
        arguments as in events().
        """
        from ._frames import events_frame
        it = self._events(streams, start, end, codes, order, batch_size, fields,
                          threads=threads)
        if not fields and threads == 1:  # all in one batch: no batches to join
            return events_frame(self, self._batches(iter([it._read_all()])), fields)
        if threads != 1:  # the streams' batches come interleaved: one stream after another
            by_stream = {}
            for b in self._batches(it):
                by_stream.setdefault(int(b["stream"][0]), []).append(b)
            return events_frame(self, iter([b for s in sorted(by_stream) for b in by_stream[s]]),
                                fields)
        return events_frame(self, self._batches(it), fields)

    def spans(self, streams=None, start=None, end=None, codes=None, instants=False,
              emulate=False, all_models=False, channels=None):
        """The calls of the trace as a pandas DataFrame, one row per span.

        A span is a region between its enter and its leave (ovni, Pallas)
        or an interval (Heph), paired and nested as the viewer outputs and
        `weft profile` do (the library's span iterator, weft/span.h).
        Columns: stream (categorical: the stream paths), timeline (the
        channel, e.g. ovni "nosv VT"; None for the stream's own call tree),
        name (categorical), start, end, duration (ns), exclusive (duration
        minus the children's), depth (in its timeline), id and parent (the
        enclosing span's id, 0 at the top), and the flags clipped (cut by
        the window), unclosed (never closed in the trace) and instant.
        Spans come in the order they end (children before their parent).

        streams, codes: glob patterns; start, end: a window in ns that cuts
        the spans crossing it; instants=True adds the point events (start
        == end, their parent the span open on their stream). Every span is
        in memory: restrict with the arguments on large traces.

        emulate=True (ovni traces): the spans of the emulated channels of
        each thread (ovniemu's thread view, see emulate()) instead: the
        timeline is the channel ("nOS-V task type", "Thread: thread
        state"), the name its value's label ("Running", a task type's
        label), a "model" column says the channel's model ("nosv";
        "system" for the thread's state, affinity and TID), stack channels
        (subsystems) nest. channels: a glob on "<model>.<name>"
        ("nosv.type") or on the title; without it, every channel's labelled
        values (numbers such as task ids only from the channels named).
        all_models=True runs every model (ovniemu -a). No codes, no
        instants. A trace the models refuse raises weft.FormatError.
        """
        from ._frames import spans_frame
        self._check_open()
        columns = self._spans(streams, start, end, codes, instants, emulate, all_models, channels)
        self._issue_warnings(2)
        return spans_frame(self, columns, emulate)

    def profile(self, by="name", streams=None, start=None, end=None, codes=None,
                source="auto", emulate=False, all_models=False, channels=None):
        """The profile of the trace as a pandas DataFrame: what `weft
        profile --json` prints, computed by the library (weft/profile.h).

        One row per region (by="name"), or per stream and region
        (by="stream": threads, ranks; a "stream" column with the paths):
        region, calls, instants, total_ns, exclusive_ns, min_ns, max_ns and
        mean_ns. source: "auto" (Pallas: its stored durations; the others:
        the spans), "spans" or "replay" (replay the events into spans),
        "durations" or "headers" (Pallas only). A filter (streams, codes,
        start, end) replays the spans; the window cuts the calls crossing
        it. The DataFrame's attrs["source"] says what the figures came
        from: "replay", "durations" or "headers", as `weft profile --json`.

        emulate=True (ovni traces): the profile of the emulated channels
        (`weft profile --emulate`, the spans of spans(emulate=True)): a
        row per channel and value, a "channel" column before the region
        (the value's label). With by="stream", the time per task type per
        thread: trace.profile(by="stream", emulate=True,
        channels="nosv.type"). exclusive_ns is the time the value shows
        (on top of its stack). channels and all_models as in spans().
        """
        import pandas as pd
        self._check_open()
        rows, used = self._profile(by, streams, start, end, codes, source, emulate, all_models,
                                   channels)
        self._issue_warnings(2)
        paths = self.stream_paths
        frame = pd.DataFrame({
            "region": [r[0] for r in rows],
            "stream": [paths[r[1]] if r[1] is not None else None for r in rows],
            "calls": pd.array([r[2] for r in rows], dtype="uint64"),
            "instants": pd.array([r[3] for r in rows], dtype="uint64"),
            "total_ns": pd.array([r[4] for r in rows], dtype="uint64"),
            "exclusive_ns": pd.array([r[5] for r in rows], dtype="uint64"),
            "min_ns": pd.array([r[6] for r in rows], dtype="uint64"),
            "max_ns": pd.array([r[7] for r in rows], dtype="uint64"),
            "mean_ns": pd.array([r[8] for r in rows], dtype="float64"),
        })
        if emulate:
            frame.insert(0, "channel", [r[9] for r in rows])
        if by != "stream":
            frame = frame.drop(columns="stream")
        frame.attrs["source"] = used
        return frame

    def emulate(self, all_models=False, end_checks=True, allow_loss=False):
        """The ovni emulation of the trace (weft/emu.h): its runtime
        models replayed as ovniemu 1.14 replays them, every change of a
        channel of a thread or CPU as a row of a pandas DataFrame (the
        records of ovniemu's thread.prv and cpu.prv, with their names).

        Columns: time (the trace clock, ns), prv_time (ns since the first
        event, the .prv time), object ("thread" or "cpu", categorical),
        row (the thread or CPU index), row_label ("TH 1.123", "CPU 0.1"),
        stream (the thread's stream path; None on CPU rows), type
        (Paraver event type), value (0: none), label (the value's label,
        e.g. a subsystem or a task type; None for numbers), depth (the
        entries of a stack channel, a task's nesting), model ("nosv";
        "system" for the thread states, CPUs and TIDs), channel
        ("subsystem") and title ("nOS-V subsystem").

        attrs: "models" (list of (name, version)), "threads" and "cpus"
        (lists of dicts: tid, pid, rank, app_id, stream, loom, label;
        loom, loom_name, phyid, index, label), "diagnostics" (list of
        weft.Diagnostic: the rule an event broke, the end checks' errors,
        ovniemu's warnings), "start_clock", "duration" (ns) and "events".

        all_models=True runs every model (ovniemu -a; traces of libovni
        before 1.5 declare none). end_checks=False skips the checks of
        what is left open at the end. A trace the models refuse raises
        weft.FormatError with the rule, the file and the offset; with
        allow_loss=True it returns the changes before the failing event
        (the error is in attrs["diagnostics"]), as ovniemu keeps them.
        Every change is in memory.
        """
        from ._frames import emulation_frame
        self._check_open()
        cols = self._emulate(all_models, end_checks, allow_loss)
        self._issue_warnings(2)
        return emulation_frame(self, cols)

    def convert(self, path, to=None, streams=None, start=None, end=None, codes=None,
                force=False, heph_compat=False, virtual_unit=None, allow_loss=False,
                emulate=None, all_models=False, breakdown=False, ovni_cfg=None):
        """Writes the trace for a viewer or as a Pallas trace, as `weft
        convert` does (the library's weft_convert(), without the GIL).

        to: "perfetto", "chrome", "paraver" or "pallas"; None
        chooses by `path` (.json: chrome, .prv: paraver, a trailing "/":
        pallas, else perfetto). path: the file, the base name (paraver:
        path.prv, .pcf, .row) or the directory (pallas); the output is
        written to a temporary name and renamed at the end, so a failure
        leaves no half-written output. force=True replaces an existing one.
        streams, codes: globs; start, end: the window in ns (viewers cut the
        spans crossing it); heph_compat: chrome, the bytes of Heph's own
        converter; virtual_unit: ROSS, draw virtual time, one unit = this
        many ns; allow_loss: viewers, drop spans nested deeper than 512
        levels instead of counting it as lost data (emulated: keep the
        records before an event the models refuse, as ovniemu does).

        ovni traces (docs/emulation.md): emulate=None replays the runtimes'
        models as ovniemu does when the trace's threads declare them and
        the output can show them (paraver: ovniemu's thread.* and cpu.* in
        the directory `path`; perfetto: threads, CPUs, tasks, subsystems);
        True forces it (an error where it cannot), False gives the generic
        mapping. all_models: every model, required or not (ovniemu -a);
        breakdown: paraver, also the breakdown traces (ovniemu -b);
        ovni_cfg: paraver, the directory of ovni's Paraver views copied into
        path/cfg/ (None: $OVNI_CONFIG_DIR or ovni's installed share/ovni
        when present; "": none).

        Returns the report as a dict: output, events (read by the viewers'
        view layer; 0 for pallas), selected (the events the filter kept), unclosed_spans, unmatched_leaves, too_deep, data_lost
        (True when some data could not be read or was dropped: the output is
        complete without it) and messages (the lines `weft convert` prints).
        Raises weft.Error when nothing was written (an existing output
        without force=True, an unknown output, options that do not fit it,
        or the error that stopped it), with the library's message.
        """
        self._check_open()
        report = self._convert(str(path), to, streams, start, end, codes, force, heph_compat,
                               virtual_unit, allow_loss, emulate, all_models, breakdown,
                               None if ovni_cfg is None else str(ovni_cfg))
        self._issue_warnings(2)
        return report
