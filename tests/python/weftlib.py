# SPDX-License-Identifier: MIT
"""Helpers of the command-level tests: running `weft`, parsing the dumps
of weft and of the real ovni tools, decoding payloads from the ovni event
signature table, and comparing merged event sequences."""

import collections
import json
import os
import re
import struct
import subprocess
from pathlib import Path

TESTS_DIR = Path(__file__).resolve().parent.parent
REPO_DIR = TESTS_DIR.parent
DATA_DIR = Path(os.environ.get("WEFT_TEST_DATA", TESTS_DIR / "data"))
OVNI_DATA = DATA_DIR / "ovni"
SIGNATURES_TSV = REPO_DIR / "data" / "ovni-event-signatures.tsv"


def find_weft_binary():
    """The weft command under test: $WEFT_BIN, else $WEFT_BUILD_DIR/weft,
    else the first build directory of the checkout that has one."""
    if os.environ.get("WEFT_BIN"):
        return os.environ["WEFT_BIN"]
    candidates = []
    if os.environ.get("WEFT_BUILD_DIR"):
        candidates.append(Path(os.environ["WEFT_BUILD_DIR"]) / "weft")
    candidates += sorted(REPO_DIR.glob("build*/weft"))
    for c in candidates:
        if c.is_file() and os.access(c, os.X_OK):
            return str(c)
    raise RuntimeError("no weft binary: set WEFT_BIN")


WEFT = find_weft_binary()


def run_weft(*args, expect=None, binary=False, timeout=300):
    """Runs weft with the arguments; checks the exit status when `expect`
    is given. Returns the CompletedProcess (text unless binary); a run
    longer than `timeout` seconds fails the test."""
    proc = subprocess.run([WEFT, *map(str, args)], capture_output=True,
                          text=not binary, timeout=timeout)
    if expect is not None:
        assert proc.returncode == expect, (
            f"weft {' '.join(map(str, args))}: exit {proc.returncode}, "
            f"expected {expect}\nstderr: {proc.stderr!s:.2000}")
    return proc


# ---- Reference traces ----------------------------------------------------

def v3_traces():
    """Names of the layout-v3 reference traces (directories with a golden)."""
    root = OVNI_DATA / "v3"
    return sorted(p.name for p in root.iterdir()
                  if p.is_dir() and (p / "ovnidump-x.txt").exists())


def v3_dir(name):
    return OVNI_DATA / "v3" / name


# Traces of ovni 1.14's own tests and of the real nOS-V 4.1 runtime that
# weft once mishandled (README.md there): directory with ovni/ and goldens.
PEER_TRACES = OVNI_DATA / "peer"

OLD_TRACES = {  # layout version -> directory with ovni/ and golden/
    1: OVNI_DATA / "v1" / "1.4.1",
    2: OVNI_DATA / "v2" / "1.10.0",
}


# ---- Parsing dumps -------------------------------------------------------

Event = collections.namedtuple("Event", "clock mcv path rest")


def parse_dump_line(line):
    """`<clock>  <MCV>  <path>  <rest>` (ovnidump >= 1.10 and weft dump);
    the clock may be right-aligned with spaces, rest may be empty."""
    parts = line.lstrip(" ").split("  ", 3)
    assert len(parts) >= 3, f"not a dump line: {line!r}"
    rest = parts[3] if len(parts) == 4 else ""
    return Event(int(parts[0]), parts[1], parts[2], rest)


def parse_dump(text):
    return [parse_dump_line(l) for l in text.splitlines()]


def parse_v1_dump(text):
    """ovnidump 1.4.1: `<relpath> <clock> +<delta> <MCV> [:<hex>]`."""
    events = []
    for line in text.splitlines():
        f = line.split()
        assert len(f) in (4, 5) and f[2].startswith("+"), line
        events.append(Event(int(f[1]), f[3], f[0], f[4] if len(f) == 5 else ""))
    return events


def hex_bytes(rest):
    """`:xx:xx` -> bytes (b"" for an empty string)."""
    if rest == "":
        return b""
    assert rest.startswith(":"), f"not colon hex: {rest!r}"
    return bytes(int(x, 16) for x in rest[1:].split(":"))


def with_payload(events):
    """Events whose rest is colon hex, as (clock, mcv, path, bytes)."""
    return [(e.clock, e.mcv, e.path, hex_bytes(e.rest)) for e in events]


# ---- Comparing merged sequences ---------------------------------------------

def assert_same_merge(ours, golden, what=""):
    """Two time-merged event lists (tuples starting with clock, mcv,
    path) are the same merge: the clock sequence is equal, each group of
    equal clocks holds the same events (a multiset: ties between streams
    may be broken differently), and every stream has its events in the
    same order."""
    assert len(ours) == len(golden), f"{what}: {len(ours)} events, golden {len(golden)}"
    ours_clocks = [e[0] for e in ours]
    golden_clocks = [e[0] for e in golden]
    for i, (a, b) in enumerate(zip(ours_clocks, golden_clocks)):
        assert a == b, f"{what}: event {i}: clock {a}, golden {b}"
    i = 0
    while i < len(ours):
        j = i
        while j < len(ours) and ours[j][0] == ours[i][0]:
            j += 1
        assert collections.Counter(ours[i:j]) == collections.Counter(golden[i:j]), (
            f"{what}: events at clock {ours[i][0]} differ:\n{ours[i:j]}\n{golden[i:j]}")
        i = j
    by_stream = lambda evs: {p: [e for e in evs if e[2] == p] for p in {e[2] for e in evs}}
    assert by_stream(ours) == by_stream(golden), f"{what}: per-stream order differs"


# ---- Signatures and payload decoding ------------------------------------------

def load_signatures():
    """MCV -> (jumbo, [(type, name)]) from the signature table."""
    sigs = {}
    header_seen = False
    for line in SIGNATURES_TSV.read_text().splitlines():
        if line.startswith("#") or not line.strip():
            continue
        cols = line.split("\t")
        if not header_seen:
            header_seen = True
            continue
        fields = []
        if cols[5].strip():
            for f in cols[5].split(","):
                ftype, fname = f.split()
                fields.append((ftype, fname))
        sigs[cols[3]] = (cols[4] == "1", fields)
    return sigs


SIGNATURES = load_signatures()
INT_FORMATS = {"u8": "<B", "u16": "<H", "u32": "<I", "u64": "<Q",
               "i8": "<b", "i16": "<h", "i32": "<i", "i64": "<q"}


class Extra(bytes):
    """The bytes after the fields a signature names (field "extra")."""


def decode_payload(mcv, payload):
    """[(name, value)] by the signature of `mcv` (value int, bytes for str,
    a list for the array of a jumbo event of one fixed-size field such as
    VWC, Extra for the bytes after the named fields), or None when the MCV
    is unknown, its signature names no fields, or the payload is too short.
    `payload` is as printed by -x: for jumbo events the size, then data."""
    if mcv not in SIGNATURES:
        return None
    jumbo, fields = SIGNATURES[mcv]
    if not fields:
        return None
    if jumbo:
        if len(payload) < 4 or struct.unpack("<I", payload[:4])[0] != len(payload) - 4:
            return None
        payload = payload[4:]
    if jumbo and len(fields) == 1 and fields[0][0] != "str":
        ftype, fname = fields[0]
        size = struct.calcsize(INT_FORMATS[ftype])
        n = len(payload) // size
        if n == 0:
            return None
        out = [(fname, [struct.unpack_from(INT_FORMATS[ftype], payload, i * size)[0]
                        for i in range(n)])]
        if len(payload) > n * size:
            out.append(("extra", Extra(payload[n * size:])))
        return out
    out = []
    pos = 0
    for ftype, fname in fields:
        if ftype == "str":
            end = payload.find(b"\0", pos)
            if end < 0:
                return None
            out.append((fname, payload[pos:end]))
            pos = end + 1
        else:
            size = struct.calcsize(INT_FORMATS[ftype])
            if pos + size > len(payload):
                return None
            out.append((fname, struct.unpack_from(INT_FORMATS[ftype], payload, pos)[0]))
            pos += size
    if pos != len(payload):
        out.append(("extra", Extra(payload[pos:])))
    return out


def field_text(value):
    """A decoded value as weft dump prints it."""
    if isinstance(value, Extra):
        return "".join(":%02x" % b for b in value)
    if isinstance(value, bytes):
        return text_string(value)
    if isinstance(value, list):
        return "[" + ",".join(str(v) for v in value) + "]"
    return str(value)


def field_json(value):
    """A decoded value as weft dump --json gives it."""
    if isinstance(value, Extra):
        return value.hex()
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return value


def text_string(raw):
    """The quoted text notation of weft dump for a string field."""
    out = ['"']
    i = 0
    text = raw.decode("utf-8", errors="surrogateescape")
    for ch in text:
        o = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif o < 0x20 or o == 0x7f:
            out.append("\\x%02x" % o)
        elif 0xdc80 <= o <= 0xdcff:  # an invalid byte
            out.append("\\x%02x" % (o - 0xdc00))
        else:
            out.append(ch)
        i += 1
    out.append('"')
    return "".join(out)


def expected_fields_text(mcv, payload):
    """What `weft dump` must print after the stream path for this event:
    name=value pairs, or the colon hex when there is no usable layout."""
    decoded = decode_payload(mcv, payload)
    if not decoded:
        return "".join(":%02x" % b for b in payload)
    return " ".join(f"{name}={field_text(value)}" for name, value in decoded)


def expected_fields_json(mcv, payload):
    """The "fields" object of weft dump --json for this event."""
    decoded = decode_payload(mcv, payload)
    if not decoded:
        return {}
    return {name: field_json(value) for name, value in decoded}


# ---- Streams on disk ------------------------------------------------------------

def stream_file(trace_dir, stream_path):
    """The binary file of a stream path (v3: a directory with stream.obs)."""
    p = Path(trace_dir) / stream_path
    return p / "stream.obs" if p.is_dir() else p


def events_of_stream_file(path):
    """Every event of a little-endian ovni stream file, in stored order:
    (offset, flags, mcv, clock, payload bytes as -x prints them)."""
    data = Path(path).read_bytes()
    assert data[:4] == b"ovni"
    pos = 8
    out = []
    while pos + 12 <= len(data):
        flags = data[pos]
        mcv = data[pos + 1:pos + 4].decode("ascii")
        clock = struct.unpack_from("<Q", data, pos + 4)[0]
        size = (flags & 0x0f) + 1 if flags & 0x0f else 0
        total = 12 + size
        if flags & 0x10:
            total += struct.unpack_from("<I", data, pos + 12)[0]
        out.append((pos, flags, mcv, clock, data[pos + 12:pos + total]))
        pos += total
    return out


def stream_paths_of_dump(events):
    return sorted({e[2] for e in events})


MESSAGE_LINE = re.compile(r"^(?P<file>[^:\n]+):(?P<offset>\d+): (?P<sev>note|warning|error): (?P<msg>.*)$")


# ---- Writing small ovni traces -----------------------------------------------

def ovni_event(mcv, clock, payload=b"", jumbo=None):
    """The bytes of one little-endian ovni event: a normal event with
    0 or 2..16 payload bytes, or (jumbo=data) a jumbo event."""
    if jumbo is not None:
        return bytes([0x13]) + mcv.encode() + struct.pack("<QI", clock, len(jumbo)) + jumbo
    assert len(payload) != 1 and len(payload) <= 16
    flags = len(payload) - 1 if payload else 0
    return bytes([flags]) + mcv.encode() + struct.pack("<Q", clock) + payload


def write_ovni_stream(trace_dir, events, loom="vm.0", pid=1, tid=None, cpus=((0, 0),),
                      require=None, extra_meta=None):
    """Writes loom.<loom>/proc.<pid>/thread.<tid> of a layout-3 trace: the
    events (bytes from ovni_event, or one bytes object) and a finished
    stream.json as libovni 1.14 writes it. Returns the stream.obs path."""
    tid = pid if tid is None else tid
    d = Path(trace_dir) / f"loom.{loom}" / f"proc.{pid}" / f"thread.{tid}"
    d.mkdir(parents=True, exist_ok=True)
    body = events if isinstance(events, (bytes, bytearray)) else b"".join(events)
    (d / "stream.obs").write_bytes(b"ovni" + struct.pack("<I", 1) + body)
    meta = {"version": 3, "ovni": {
        "lib": {"version": "1.14.0", "commit": "test"}, "part": "thread",
        "tid": tid, "pid": pid, "loom": loom, "app_id": 1,
        "require": require or {"ovni": "1.1.0"},
        "loom_cpus": [{"index": i, "phyid": p} for i, p in cpus], "finished": 1}}
    for key, value in (extra_meta or {}).items():
        meta["ovni"][key] = value
    (d / "stream.json").write_text(json.dumps(meta, indent=4))
    return d / "stream.obs"


# The rank counts the MPI tests run each parallel command on: 1, 2 and 4;
# the sanitizer build's run sets WEFT_TEST_MPI_RANKS=2 (tests/CMakeLists.txt).
MPI_RANKS = tuple(int(r) for r in os.environ.get("WEFT_TEST_MPI_RANKS", "1,2,4").split(","))

ROSS_DATA = DATA_DIR / "ross"
ROSS_RUNS = sorted(p for p in ROSS_DATA.glob("*/*") if p.is_dir())
# The commands that share a ROSS run among threads and ranks by byte pieces.
ROSS_COMMANDS = (
    ["top", "--streams"],
    ["top", "--time"],
    ["profile", "--by", "stream"],
    ["info"],
    ["check"],
    ["summary", "--json"],
    ["summary", "--dedup"],
)


def ross_damaged_runs(tmp_path):
    """Copies of the gvt run of 2 PEs of tests/data/ross, damaged: "cut"
    inside its last record; "garbage": record headers overwritten in three
    places (a fifth, half and four fifths into the file); "junk": a file
    that is no ROSS data next to it; and "one-file": the run given as its
    one file. For the commands that share a run among threads and ranks."""
    import shutil
    source = ROSS_DATA / "phold-gvt-pekplp" / "np2"
    gvt = "ross-stats-gvt.bin"
    runs = {}
    cut = shutil.copytree(source, tmp_path / "cut")
    data = (cut / gvt).read_bytes()
    (cut / gvt).write_bytes(data[:-10])
    runs["cut"] = cut
    garbage = shutil.copytree(source, tmp_path / "garbage")
    data = bytearray((garbage / gvt).read_bytes())
    for at in (len(data) // 5, len(data) // 2, len(data) * 4 // 5):
        data[at:at + 64] = b"\xff" * 64
    (garbage / gvt).write_bytes(bytes(data))
    runs["garbage"] = garbage
    junk = shutil.copytree(source, tmp_path / "junk")
    (junk / "notes-model.bin").write_bytes(b"not a ROSS file at all\n" * 1000)
    runs["junk"] = junk
    runs["one-file"] = source / gvt
    return runs


def ross_evtrace_record(src, dst, send, recv, real, data=b""):
    return struct.pack("<IIfffI", src, dst, send, recv, real, len(data)) + data


def ross_false_start_run(root, records=301):
    """An event-trace run whose model data are copies of event records: a
    piece that starts inside one finds a run of real-looking records there
    (a wrong guess). Records of 96 bytes, an odd count: the middle of the
    file is 24 bytes into a record's model data, where two copies and the
    next record's header look like three records."""
    fakes = b"".join(ross_evtrace_record(1, 2, 1.0, 2.0, 0.5) for _ in range(3))
    data = b"".join(ross_evtrace_record(k % 3, (k + 1) % 3, float(k), float(k) + 1.5,
                                        0.001 * (k + 1), fakes) for k in range(records))
    root.mkdir()
    (root / "ross-stats-evtrace.bin").write_bytes(data)
    assert len(data) // 2 % 96 == 48
    return root


def assert_same_run(expected, got, what):
    """Two runs of a command (subprocess results) print the same bytes
    and exit the same way."""
    assert got.returncode == expected.returncode, what + "\n" + got.stderr
    assert got.stdout == expected.stdout, what
    assert got.stderr == expected.stderr, what


def ross_vt_reordered_runs(tmp_path):
    """Copies of the vt run of tests/data/ross (dumps of 13 records, one
    sample of every entity each) with its dumps reordered, so that virtual
    times go back: "rotated" (the second half first: every stream's later
    samples below its earlier ones), "swapped" (every third dump of the
    middle third moved two dumps on: short runs of samples below the
    maximum before them) and "shuffled" (the dumps of the middle third in
    a fixed random order). For the merge of a vt file read in pieces."""
    import random
    source = ROSS_DATA / "phold-vt-pekplp" / "np1"
    name = "ross-stats-analysis-lps.bin"
    data = (source / name).read_bytes()
    out = subprocess.run([str(WEFT), "dump", "--json", str(source)], capture_output=True,
                         text=True, check=True).stdout
    records = sorted((e["offset"], len(e["payload"]) // 2, e["code"])
                     for e in map(json.loads, out.splitlines()))
    dumps = []
    for offset, size, code in records:
        if code == "PE" or not dumps:
            dumps.append([])
        dumps[-1].append(data[offset:offset + size])
    n = len(dumps)
    middle = list(range(n // 3, 2 * n // 3))
    orders = {"rotated": list(range(n // 2, n)) + list(range(n // 2))}
    swapped = list(range(n))
    for k in middle[::3]:
        if k + 2 < n:
            swapped[k], swapped[k + 2] = swapped[k + 2], swapped[k]
    orders["swapped"] = swapped
    shuffled = list(middle)
    random.Random(19).shuffle(shuffled)
    orders["shuffled"] = list(range(n // 3)) + shuffled + list(range(2 * n // 3, n))
    runs = {}
    for what, order in orders.items():
        run = tmp_path / what
        run.mkdir()
        (run / name).write_bytes(b"".join(b"".join(dumps[k]) for k in order))
        runs[what] = run
    return runs
