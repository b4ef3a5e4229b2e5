# SPDX-License-Identifier: MIT
"""Writer classes: weft.HephWriter and weft.PallasWriter write Heph and
Pallas traces from Python through libweft's writers (weft/heph.h,
weft/pallas.h). The C parts are weft._weft.HephWriter, HephStream,
PallasWriter and PallasThread (python/src/heph_writer.c, pallas_writer.c);
this file gives them their Pythonic surface. See docs/python.md, "Writing
traces"."""

import os as _os

import numpy as _np

from . import _weft

__all__ = ["HephWriter", "HephStream", "PallasWriter", "PallasThread"]


class HephStream(_weft.HephStream):
    """One stream (a thread) of a Heph trace being written, made by
    HephWriter.stream(id). event() writes one event, events() many from
    arrays; flush() writes what it buffers; counter is the number the next
    event carries (settable)."""

    def events(self, names, starts, ends=None, substreams=None, **attributes):
        """Writes len(starts) events from arrays, in one call without the
        GIL (no Python object per event).

        names: one str for every event, a sequence or numpy array of str
        (one per event), or a pandas Categorical or category Series (its
        categories and codes). starts, ends (None: the starts), substreams
        (None: 0): integer arrays (or sequences) of ns >= 0. attributes:
        one column per attribute, one value per event: a 1-D numpy array
        of unsigned integers (u64), signed integers (i64), floats (f64) or
        str (str; None: no value), a numpy masked array (masked: no value),
        or a pandas Series or array (NA, NaN or None: no value; the
        nullable UInt64/Int64 types keep their signedness), so that the
        columns of Trace.to_pandas(fields=...) go back as they are.
        Everything is checked before anything is written (TypeError,
        ValueError, or weft.ArgumentError when an event ends before it
        starts).
        """
        starts = _np.asarray(starts)
        table, index = _name_table(names, len(starts))
        columns = {k: _attribute_column(v) for k, v in attributes.items()}
        self._events(table, index, starts, ends, substreams, columns)


#: The numpy type of the values of a column of numbers, by kind.
_COLUMN_TYPES = {"u": _np.uint64, "i": _np.int64, "f": _np.float64}


def _attribute_column(values):
    """A column of events() as the C part takes it: an array, or (an
    array, a mask true where the event has no value)."""
    if isinstance(values, _np.ma.MaskedArray):
        return (_np.ma.getdata(values), _np.ma.getmaskarray(values))
    if not type(values).__module__.startswith("pandas"):
        return values
    import pandas as pd
    series = values if isinstance(values, pd.Series) else pd.Series(values)
    mask = series.isna().to_numpy(dtype=bool)
    kind = series.dtype.kind
    if kind in _COLUMN_TYPES:
        data = series.to_numpy(dtype=_COLUMN_TYPES[kind], na_value=0)
    else:
        data = series.to_numpy(dtype=object, na_value=None)
    return (data, mask) if mask.any() else data


def _name_table(names, n):
    """The names of events() as (a tuple of str, an index array or None)."""
    if isinstance(names, str):
        return (names,), _np.zeros(n, dtype=_np.int64)
    categories = getattr(names, "categories", None)
    if categories is None and hasattr(names, "cat"):
        names = names.cat
        categories = names.categories
    if categories is not None:
        codes = _np.asarray(names.codes)
        return tuple(str(c) for c in categories), codes
    if isinstance(names, _np.ndarray):
        names = names.tolist()
    return tuple(names), None


class HephWriter(_weft.HephWriter):
    """A Heph trace being written to `path` (weft/heph.h): one file of
    events, each an interval [start, end] in ns on a stream and substream,
    with a name and typed attributes.

        with weft.HephWriter("run.bin.log", epoch=time.time_ns()) as w:
            s = w.stream(0)
            s.event("compute", 100, 250, iterations=4)

    Options: epoch (ns since the Unix epoch: written as the epoch packet,
    the trace's time 0; None: no epoch), buffer_size (bytes buffered per
    stream; 0: 256 KiB), replace (True: an existing `path` may be
    replaced, else weft.Error), sync (True: fsync before the rename).

    The data goes to `<path>.tmp`, renamed to `path` by close() (the end
    of a `with` block). Leaving the block on an exception discards the
    trace: `<path>.tmp` is removed and `path` is not created. A writer is
    used by one thread at a time (RuntimeError otherwise).
    """

    def __init__(self, path, epoch=None, buffer_size=0, replace=False, sync=False):
        super().__init__(path, epoch, buffer_size, replace, sync)
        #: The trace's final path (str).
        self.path = _os.fsdecode(path)
        self._streams = {}

    def stream(self, stream_id):
        """The HephStream of `stream_id` (a u32 chosen by the caller),
        created at the first call and the same object afterwards."""
        s = self._streams.get(stream_id)
        if s is None:
            s = self._streams[stream_id] = HephStream(self, stream_id)
        return s

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.close()
        else:
            self.discard()
        return False

    def __repr__(self):
        return "<weft.HephWriter %r%s>" % (self.path, " closed" if self.closed else "")


#: The attribute types of PallasWriter.attribute(), as Pallas numbers them.
PALLAS_TYPES = {"u8": 1, "u16": 2, "u32": 3, "u64": 4, "i8": 5, "i16": 6, "i32": 7, "i64": 8,
                "float": 9, "double": 10, "string": 11, "attribute": 12, "location": 13,
                "region": 14, "group": 15, "metric": 16, "comm": 17, "parameter": 18,
                "rma_win": 19, "source_code_location": 20, "calling_context": 21,
                "interrupt_generator": 22, "io_file": 23, "io_handle": 24,
                "location_group": 25}


def _inferred_type(name, value):
    """The Pallas type of an attribute first given as `value`: int i64
    (numpy unsigned integers u64), float double, str string."""
    if isinstance(value, (bool, _np.bool_)):
        raise TypeError("attribute %s: a bool has no Pallas type (use an int)" % name)
    if isinstance(value, _np.unsignedinteger):
        return "u64"
    if isinstance(value, (int, _np.integer)):
        return "i64"
    if isinstance(value, (float, _np.floating)):
        return "double"
    if isinstance(value, str):
        return "string"
    raise TypeError("attribute %s: an int, a float or a str, not %s"
                    % (name, type(value).__name__))


class PallasThread(_weft.PallasThread):
    """The writer of one thread (a location) of a Pallas trace, made by
    PallasWriter.thread(location). Each record takes its payload, then
    `time` (ns, never earlier than the thread's previous record:
    weft.ArgumentError otherwise), then attributes as keywords (see
    PallasWriter.attribute() for their types). Regions and names may be
    given as str (defined at first use) or as refs (int). Records after
    close() raise weft.Error."""

    def __init__(self, writer, group, location):
        super().__init__(writer, group, location)
        self._writer = writer

    def _attrs(self, attributes):
        """The keyword attributes as the (ref, type, value, name) tuples of _record."""
        if not attributes:
            return None
        return tuple(self._writer._attribute_value(k, v) for k, v in attributes.items())

    def enter(self, region, time, **attributes):
        """Enters `region` (a str: the region of that name, defined at first
        use; or a region ref): opens a block."""
        self._record(2, time, self._attrs(attributes), self._writer._region_ref(region))

    def leave(self, region, time, **attributes):
        """Leaves `region` (as in enter()): closes the open block."""
        self._record(3, time, self._attrs(attributes), self._writer._region_ref(region))

    def generic(self, name, time, **attributes):
        """A generic event named `name` (a str, or a string ref)."""
        ref = self._writer.string(name) if isinstance(name, str) else name
        self._record(58, time, self._attrs(attributes), ref)

    def mpi_send(self, receiver, communicator, tag, length, time, **attributes):
        """MPI_Send of `length` bytes to rank `receiver` of `communicator` (a ref)."""
        self._record(4, time, self._attrs(attributes), receiver, communicator, tag, length)

    def mpi_recv(self, sender, communicator, tag, length, time, **attributes):
        """MPI_Recv of `length` bytes from rank `sender` of `communicator`."""
        self._record(8, time, self._attrs(attributes), sender, communicator, tag, length)

    def mpi_isend(self, receiver, communicator, tag, length, request, time, **attributes):
        """MPI_Isend: as mpi_send() with the request id (a u64)."""
        self._record(5, time, self._attrs(attributes), receiver, communicator, tag, length,
                     request)

    def mpi_isend_complete(self, request, time, **attributes):
        """The completion of the MPI_Isend of `request`."""
        self._record(6, time, self._attrs(attributes), request)

    def mpi_irecv_request(self, request, time, **attributes):
        """The start of an MPI_Irecv, `request`."""
        self._record(7, time, self._attrs(attributes), request)

    def mpi_irecv(self, sender, communicator, tag, length, request, time, **attributes):
        """The completion of the MPI_Irecv of `request`: as mpi_recv() with the request."""
        self._record(9, time, self._attrs(attributes), sender, communicator, tag, length,
                     request)

    def mpi_collective_begin(self, time, **attributes):
        """The start of a collective (a plain event, as in Pallas)."""
        self._record(12, time, self._attrs(attributes))

    def mpi_collective_end(self, op, communicator, root, sent, received, time, **attributes):
        """The end of collective `op` (OTF2's number) on `communicator` with
        `root`, `sent` and `received` bytes."""
        self._record(13, time, self._attrs(attributes), op, communicator, root, sent, received)

    def omp_fork(self, threads, time, **attributes):
        """OpenMP fork of `threads` threads: opens a block."""
        self._record(14, time, self._attrs(attributes), threads)

    def omp_join(self, time, **attributes):
        """OpenMP join: closes the block of the fork."""
        self._record(15, time, self._attrs(attributes))

    def omp_acquire_lock(self, lock, time, **attributes):
        """OpenMP lock `lock` acquired."""
        self._record(16, time, self._attrs(attributes), lock)

    def omp_release_lock(self, lock, time, **attributes):
        """OpenMP lock `lock` released."""
        self._record(17, time, self._attrs(attributes), lock)

    def omp_task_create(self, task, time, **attributes):
        """OpenMP task `task` (a u64) created."""
        self._record(18, time, self._attrs(attributes), task)

    def omp_task_switch(self, task, time, **attributes):
        """Switch to OpenMP task `task`."""
        self._record(19, time, self._attrs(attributes), task)

    def omp_task_complete(self, task, time, **attributes):
        """OpenMP task `task` completed."""
        self._record(20, time, self._attrs(attributes), task)

    def thread_fork(self, threads, time, **attributes):
        """Thread fork of `threads` threads: opens a block."""
        self._record(25, time, self._attrs(attributes), threads)

    def thread_join(self, time, **attributes):
        """Thread join: closes the block of the fork."""
        self._record(26, time, self._attrs(attributes))

    def thread_team_begin(self, time, **attributes):
        """A thread team begins: opens a block."""
        self._record(27, time, self._attrs(attributes))

    def thread_team_end(self, time, **attributes):
        """The thread team ends: closes its block."""
        self._record(28, time, self._attrs(attributes))

    def thread_begin(self, time, **attributes):
        """The thread begins: opens a block."""
        self._record(35, time, self._attrs(attributes))

    def thread_end(self, time, **attributes):
        """The thread ends: closes its block."""
        self._record(37, time, self._attrs(attributes))

    def thread_acquire_lock(self, lock, time, **attributes):
        """Lock `lock` acquired."""
        self._record(29, time, self._attrs(attributes), lock)

    def thread_release_lock(self, lock, time, **attributes):
        """Lock `lock` released."""
        self._record(30, time, self._attrs(attributes), lock)

    def thread_task_create(self, time, **attributes):
        """A task created (no payload, as in Pallas)."""
        self._record(31, time, self._attrs(attributes))

    def thread_task_switch(self, time, **attributes):
        """A task switch (no payload)."""
        self._record(32, time, self._attrs(attributes))

    def thread_task_complete(self, time, **attributes):
        """A task completed (no payload)."""
        self._record(33, time, self._attrs(attributes))

    def __repr__(self):
        return "<weft.PallasThread %d%s>" % (self.location, " closed" if self.closed else "")


class PallasWriter(_weft.PallasWriter):
    """A Pallas trace being written to the directory `dir` as
    `<dir>/<name>.pallas` and its archives (weft/pallas.h), read by weft
    and by Pallas 0.20.

        with weft.PallasWriter("trace") as w:
            rank = w.process("rank 0")
            t = w.thread(w.location("thread 0", process=rank))
            t.enter("compute", 100)
            t.leave("compute", 250)

    Definitions: string(), region(), attribute(), process() (a location
    group), location() (a thread of a process), comm(), metadata(); they
    return refs (ints). thread(location) gives the PallasThread that
    records the events of a location.

    Options: compression ("zstd" or "raw"), zstd_level (5), loop_finding
    ("none", "basic" or "truncated"), max_loop_length (100), long_patterns
    (True), delta_timestamps (False: True is weft only), layout ("pallas"
    or "compact"), compress_threads (None: the library's default),
    replace (False: an existing trace is an error), sync (False); see
    docs/pallas-writer.md, "Options".

    close() (the end of a `with` block) closes the threads still open and
    writes the archives and the main file. Leaving the block on an
    exception discards the trace: the main file is not written (thread
    files already closed stay in the directory). One thread at a time.
    """

    def __init__(self, dir, name="main", **options):
        super().__init__(dir, name, **options)
        self._strings, self._regions, self._attributes = {}, {}, {}
        self._groups, self._locations, self._threads, self._comms = {}, {}, {}, {}

    def string(self, text):
        """The ref of string `text`, defined at the first call."""
        ref = self._strings.get(text)
        if ref is None:
            ref = self._strings[text] = self._register_string(text)
        return ref

    def region(self, name, ref=None):
        """The ref of region `name`, defined at the first call (ref: the ref
        to give it; None: 1 + the largest so far, 1 at first)."""
        known = self._regions.get(name)
        if known is not None and (ref is None or ref == known):
            return known
        if ref is None:
            ref = max(self._regions.values(), default=0) + 1
        self._add_region(ref, self.string(name))
        self._regions[name] = ref
        return ref

    def _region_ref(self, region):
        """A region given as a str (defined at first use) or as a ref."""
        return self.region(region) if isinstance(region, str) else region

    def attribute(self, name, type, description="", ref=None):
        """Defines attribute `name` of `type` and returns its ref (ref None:
        the next one, from 0). Types: "u8", "u16", "u32", "u64", "i8",
        "i16", "i32", "i64" (ints in range), "float", "double" (floats or
        ints), "string" (str values, stored as string refs), and the ref
        types "region", "location", "location_group", "comm", "group",
        "attribute", ... (int refs; PALLAS_TYPES lists them). An attribute
        used in a record without a definition is defined by its first
        value: int "i64" (a numpy unsigned integer "u64"), float "double",
        str "string"; bool and other types raise TypeError."""
        if type not in PALLAS_TYPES:
            raise _weft.ArgumentError("attribute %s: unknown type %r (one of %s)"
                                      % (name, type, ", ".join(PALLAS_TYPES)))
        if ref is None:
            ref = max((r for r, _ in self._attributes.values()), default=-1) + 1
        self._add_attribute(ref, self.string(name), self.string(description), PALLAS_TYPES[type])
        self._attributes[name] = (ref, PALLAS_TYPES[type])
        return ref

    def _attribute_value(self, name, value):
        """(ref, type, value, name) of a keyword attribute of a record."""
        known = self._attributes.get(name)
        if known is None:
            self.attribute(name, _inferred_type(name, value))
            known = self._attributes[name]
        ref, code = known
        if code == PALLAS_TYPES["string"]:
            if not isinstance(value, str):
                raise TypeError("attribute %s: a str, not %s" % (name, type(value).__name__))
            value = self.string(value)
        return (ref, code, value, name)

    def process(self, name, id=None, parent=None):
        """Defines a location group (a process) named `name` and returns its
        id (None: 1 + the largest so far, 0 at first); parent: the id of
        the enclosing group, or None."""
        if id is None:
            id = max(self._groups, default=-1) + 1
        self._add_location_group(id, self.string(name), parent)
        self._groups[id] = name
        return id

    def location(self, name, process=None, id=None):
        """Defines a location (a thread) named `name` in location group
        `process` (None: the first one, "process" created when there is
        none) and returns its id (None: 1 + the largest so far, 0 at
        first). Give each process's threads consecutive ids (Pallas
        reads them so)."""
        if process is None:
            process = next(iter(self._groups)) if self._groups else self.process("process")
        if id is None:
            id = max(self._locations, default=-1) + 1
        self._add_location(id, self.string(name), process)
        self._locations[id] = process
        return id

    def thread(self, location):
        """The PallasThread of `location` (a location id), created at the
        first call and the same object afterwards."""
        t = self._threads.get(location)
        if t is None:
            if location not in self._locations:
                raise _weft.ArgumentError("location %r is not defined (location())" % (location,))
            t = self._threads[location] = PallasThread(self, self._locations[location], location)
        return t

    def comm(self, name, members, parent=None, group_type=2, paradigm=5, ref=None):
        """Defines a communicator named `name` over `members` (location
        ids: rank i is members[i]) and returns its ref (None: the next one,
        from 0), for the MPI records. Its group gets OTF2's group_type and
        paradigm (the defaults are examples/pallas_mpi_ring.c's)."""
        if ref is None:
            ref = max(self._comms, default=-1) + 1
        group = len(self._comms)
        self._add_comm(ref, self.string(name), group, group_type, paradigm, list(members), parent)
        self._comms[ref] = name
        return ref

    def metadata(self, key, value):
        """Custom metadata of the trace: `value` (a str) for `key`."""
        self._add_metadata(key, value)

    def close(self):
        """Closes the threads still open, writes every archive and the main
        file (without the GIL), and frees the writer: weft.open(dir) reads
        the trace. Closing twice is harmless; a failure discards what was
        not written and raises."""
        if self.closed:
            return
        try:
            for t in self._threads.values():
                t.close()
        except BaseException:
            self.discard()
            raise
        self._store()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.close()
        else:
            self.discard()
        return False

    def __repr__(self):
        return "<weft.PallasWriter%s>" % (" closed" if self.closed else "")
