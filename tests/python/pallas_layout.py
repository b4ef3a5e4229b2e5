"""Where things are in the files of a Pallas 0.20 trace, so that tests can
damage one field on purpose (docs/pallas.md, /work/shared/specs/pallas.md):
the offsets of the counts, ids, vector headers and tables of a
thread.pallas, and of the location groups and locations of a main or
archive file. Only reads well-formed files (the copies before damage)."""

import struct


class Reader:
    """Little-endian reads at a moving offset."""

    def __init__(self, data, at=0):
        self.data, self.at = data, at

    def u8(self):
        self.at += 1
        return self.data[self.at - 1]

    def u32(self):
        self.at += 4
        return struct.unpack_from("<I", self.data, self.at - 4)[0]

    def u64(self):
        self.at += 8
        return struct.unpack_from("<Q", self.data, self.at - 8)[0]

    def skip(self, n):
        self.at += n


def vector(r, durations):
    """A vector header at r.at: {"at", "size", "n_sub", "subs" (offset of
    the entries), "end"}."""
    v = {"at": r.at, "size": r.u64(), "n_sub": r.u64()}
    if v["size"]:
        if durations:
            r.skip(24)
        v["subs"] = r.at
        r.skip(v["n_sub"] * (40 if durations else 32))
    v["end"] = r.at
    return v


def thread_layout(data):
    """The parts of a thread.pallas: header field offsets, events (with
    their timestamp vector), id maps, sequences (with their three vectors)
    and loops, each with its offset."""
    r = Reader(data)
    t = {"thread_id": 0, "archive_id": 4, "event_count": 8, "sequence_count": 16,
         "loop_count": 24, "root": 32, "first_timestamp": 36}
    r.skip(8)
    n_events, n_seqs, n_loops = r.u64(), r.u64(), r.u64()
    r.skip(12)
    t["events"] = []
    for _ in range(n_events):
        e = {"at": r.at, "record": r.u32(), "size": r.u8()}
        r.skip(e["size"] - 5)
        e["attr_size_at"] = r.at
        r.skip(r.u64())
        e["timestamps"] = vector(r, False)
        t["events"].append(e)
    t["event_map"] = r.at
    r.skip(r.u64() * 4)
    t["sequences"] = []
    for _ in range(n_seqs):
        s = {"at": r.at, "type": r.u32(), "tokens_at": r.at + 8}
        n = r.u64()
        s["tokens"] = list(struct.unpack_from(f"<{n}I", data, r.at))
        r.skip(n * 4)
        if n:
            s["durations"] = vector(r, True)
            s["exclusive"] = vector(r, True)
            s["timestamps"] = vector(r, False)
        t["sequences"].append(s)
    t["sequence_map"] = r.at
    r.skip(r.u64() * 4)
    t["loops"] = []
    for _ in range(n_loops):
        t["loops"].append({"at": r.at})
        r.skip(16)
    t["loop_map"] = r.at
    r.skip(r.u64() * 4)
    assert r.at == len(data), "not a whole thread.pallas"
    return t


def defs_layout(data, at):
    """The definitions, location groups, locations and metadata that start
    at `at` in a main or archive file: offsets of each table's count and
    of each location group and location (id, name, parent)."""
    r = Reader(data, at)
    out = {"strings": r.at}
    for _ in range(r.u64()):
        r.skip(4)
        r.skip(r.u32())
    out["regions"] = r.at
    r.skip(r.u64() * 8)
    out["attributes"] = r.at
    r.skip(r.u64() * 16)
    out["groups"] = r.at
    for _ in range(r.u64()):
        r.skip(16)
        r.skip(r.u32() * 4)
    out["comms"] = r.at
    r.skip(r.u64() * 16)
    for table in ("location_groups", "locations"):
        out[table] = r.at
        n = r.u64()
        out[table + "_items"] = [r.at + 12 * i for i in range(n)]
        r.skip(12 * n)
    out["metadata"] = r.at
    return out


def main_layout(data):
    """defs_layout of a main file (after its version byte and settings)."""
    return defs_layout(data, 33)


def archive_layout(data):
    """defs_layout of an archive file (after its id and thread count)."""
    return defs_layout(data, 8)


def patch(path, offset, data):
    """Overwrites bytes of a file."""
    b = bytearray(path.read_bytes())
    b[offset:offset + len(data)] = data
    path.write_bytes(bytes(b))


def splice(path, start, end, data=b""):
    """Replaces bytes [start, end) of a file (the file may change size)."""
    b = path.read_bytes()
    path.write_bytes(b[:start] + data + b[end:])
