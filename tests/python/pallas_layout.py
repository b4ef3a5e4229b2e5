# SPDX-License-Identifier: MIT
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
    at `at` in a main or archive file: offsets of each table's count, of
    each string (ref, length), location group and location (id, name,
    parent), and of each metadata key and value length."""
    r = Reader(data, at)
    out = {"strings": r.at, "strings_items": []}
    for _ in range(r.u64()):
        out["strings_items"].append(r.at)
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
    out["metadata_items"] = []
    for _ in range(r.u64()):
        out["metadata_items"].append(r.at)
        r.skip(r.u64())
        out["metadata_items"].append(r.at)
        r.skip(r.u64())
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


# ---- Writing small traces from scratch ----------------------------------------------

def E(i):
    """An event token."""
    return 1 | i << 2


def S(i):
    """A sequence token."""
    return 2 | i << 2


def L(i):
    """A loop token."""
    return 3 | i << 2


def _defs(strings=(), regions=(), groups=(), locations=()):
    """Definitions, location groups, locations and (no) metadata."""
    out = struct.pack("<Q", len(strings))
    for ref, text in strings:
        b = text.encode() + b"\0"
        out += struct.pack("<Ii", ref, len(b)) + b
    out += struct.pack("<Q", len(regions)) + b"".join(struct.pack("<II", *r) for r in regions)
    out += struct.pack("<QQQ", 0, 0, 0)  # attributes, groups, comms
    for table in (groups, locations):
        out += struct.pack("<Q", len(table)) + b"".join(struct.pack("<III", *e) for e in table)
    return out + struct.pack("<Q", 0)


class DataFile:
    """A .dat file of raw values (compression None): u64 nbytes, then u64s."""

    def __init__(self):
        self.data = b""

    def add(self, values):
        at = len(self.data)
        self.data += struct.pack("<Q", 8 * len(values)) + struct.pack(f"<{len(values)}Q", *values)
        return at


def _vector(values, data, durations):
    """A vector header of one sub-array (values kept in `data`); size 0:
    what Pallas writes (n_sub 1, nothing after)."""
    if not values:
        return struct.pack("<QQ", 0, 1)
    at = data.add(values)
    n = len(values)
    if durations:
        mean = sum(values) // n
        stats = struct.pack("<QQQ", min(values), max(values), mean)
        return struct.pack("<QQ", n, 1) + stats + struct.pack("<QQQQQ", n, min(values),
                                                              max(values), mean, at)
    return struct.pack("<QQ", n, 1) + struct.pack("<QQQQ", n, values[0], values[-1], at)


def write_trace(dir, events, sequences, loops=(), root=0, strings=(), regions=()):
    """A trace of one archive (0) and one thread (0) in `dir`, values
    uncompressed. events: (record, payload bytes, timestamps); sequences:
    (type, tokens, durations, exclusive, timestamps) (a sequence of no
    tokens is a dead slot); loops: (repeated token, iterations)."""
    strings = [(0, "P"), (1, "T")] + list(strings)
    settings = struct.pack("<iiQiQi", 0, 0, 5, 2, 100, 1)
    thread = dir / "archive_0" / "thread_0"
    thread.mkdir(parents=True)
    (dir / "main.pallas").write_bytes(bytes([20]) + settings + _defs(
        strings, regions, groups=[(0, 0, 0xFFFFFFFF)]))
    (dir / "archive_0" / "archive.pallas").write_bytes(
        struct.pack("<II", 0, 1) + _defs(locations=[(0, 1, 0)]))
    ev_data, seq_data = DataFile(), DataFile()
    first = min((e[2][0] for e in events if e[2]), default=0)
    body = struct.pack("<IIQQQIQ", 0, 0, len(events), len(sequences), len(loops), root, first)
    for record, payload, stamps in events:
        body += struct.pack("<iB", record, 5 + len(payload)) + payload + struct.pack("<Q", 0)
        body += _vector(list(stamps), ev_data, False)
    body += struct.pack("<Q", len(events)) + struct.pack(f"<{len(events)}I", *range(len(events)))
    for kind, tokens, dur, excl, stamps in sequences:
        body += struct.pack("<iQ", kind, len(tokens)) + struct.pack(f"<{len(tokens)}I", *tokens)
        if tokens:
            body += _vector(list(dur), seq_data, True) + _vector(list(excl), seq_data, True)
            body += _vector(list(stamps), seq_data, False)
    n = len(sequences)
    body += struct.pack("<Q", n) + struct.pack(f"<{n}I", *range(n))
    for repeated, iterations in loops:
        body += struct.pack("<IIQ", repeated, iterations, 1)
    body += struct.pack("<Q", len(loops)) + struct.pack(f"<{len(loops)}I", *range(len(loops)))
    (thread / "thread.pallas").write_bytes(body)
    (thread / "event_durations.dat").write_bytes(ev_data.data)
    (thread / "sequence_durations.dat").write_bytes(seq_data.data)
    return dir


def nested_trace(dir, depth):
    """`depth` nested calls of region 1 (Enter at 1 .. depth, Leaves after),
    each call its own block sequence: the grammar nests `depth` + 1 levels
    below the root's frame when the root is not counted."""
    enter, leave = struct.pack("<I", 1), struct.pack("<I", 1)
    events = [(2, enter, range(1, depth + 1)), (3, leave, range(depth + 1, 2 * depth + 1))]
    seqs = [(0, [S(1)], [2 * depth - 1], [0], [1])]
    for k in range(1, depth + 1):
        inner = [S(k + 1)] if k < depth else []
        start, end = k, 2 * depth + 1 - k
        seqs.append((0, [E(0)] + inner + [E(1)], [end - start], [1 if inner else end - start],
                     [start]))
    return write_trace(dir, events, seqs, strings=[(2, "f")], regions=[(1, 2)])
