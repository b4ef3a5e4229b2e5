#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes a large ROSS run for benchmarks by repeating the records of a
reference file, with increasing times.

Each repetition k copies every record of the reference file, adds k times
the reference's span to the virtual time and to the real time of each
record (a DBL_MAX virtual time stays DBL_MAX), and with --spread N
relabels the KP and LP ids of repetition k by (k mod N) times their
count, which gives N times more KP and LP streams (a run "with many
LPs"). The records stay valid ROSS records of the same kind, so every
tool reads the result like a real run; the file keeps the reference's
name (its kind).

usage: make_ross_run.py [--ref FILE.bin] [--size 500M] [--spread N] OUTDIR
  --ref     reference file (default: tests/data/ross/phold-gvt-pekplp/np2/
            ross-stats-gvt.bin: PE, KP and LP samples of 2 PEs)
  --size    bytes to write, with K/M/G suffixes (default 500M)
  --spread  relabel KP/LP ids over N repetitions (default 1: same streams)
"""

import argparse
import os
import struct
import sys
from pathlib import Path

TOP = Path(__file__).resolve().parent.parent
DEFAULT_REF = TOP / "tests/data/ross/phold-gvt-pekplp/np2/ross-stats-gvt.bin"
DBL_MAX = sys.float_info.max
SAMPLE_BODIES = {(0, 104), (1, 44), (2, 36), (2, 48), (3, 24)}


def parse_size(text):
    """'500M' -> bytes (powers of 1024)."""
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    if text[-1:].upper() in units:
        return int(float(text[:-1]) * units[text[-1].upper()])
    return int(text)


def sample_records(data):
    """(offset, length, type) of every record of a sample file (24-byte
    headers, and the 48-byte analysis headers of analysis-lps files)."""
    out = []
    pos = 0
    while pos + 24 <= len(data):
        typ, size = struct.unpack_from("<ii", data, pos)
        if (typ, size) in SAMPLE_BODIES:
            length = 24 + size
            if typ == 3:
                length += struct.unpack_from("<I", data, pos + 44)[0]
            out.append((pos, length, typ))
        else:
            flag = struct.unpack_from("<i", data, pos + 44)[0]
            if flag != 3:
                raise SystemExit(f"{pos}: not a ROSS sample or analysis record")
            length = 48 + struct.unpack_from("<i", data, pos + 40)[0]
            out.append((pos, length, 4))
        pos += length
    if pos != len(data):
        raise SystemExit(f"{pos}: the reference ends inside a record")
    return out


def spans(data, records):
    """The widths of the virtual and real times of the reference (plus one
    unit, so that repetitions do not overlap)."""
    vts, rts = [], []
    for pos, _, typ in records:
        at = 24 if typ == 4 else 8
        vt, rt = struct.unpack_from("<dd", data, pos + at)
        if vt != DBL_MAX:
            vts.append(vt)
        if typ != 4:
            rts.append(rt)
    vspan = (max(vts) - min(vts) + 1) if vts else 1.0
    rspan = (max(rts) - min(rts) + 1e-3) if rts else 1.0
    return vspan, rspan


def id_counts(data, records):
    """Number of KP ids and LP ids in the reference (relabelling stride)."""
    kps, lps = set(), set()
    for pos, _, typ in records:
        if typ in (1, 2, 3):
            kps.add(struct.unpack_from("<I", data, pos + 28)[0])
        if typ in (2, 3):
            lps.add(struct.unpack_from("<I", data, pos + 32)[0])
    return max(kps, default=0) + 1, max(lps, default=0) + 1


def repetition(data, records, k, vspan, rspan, spread, nkp, nlp):
    """A copy of the reference with the times (and ids) of repetition k."""
    out = bytearray(data)
    shift = k % spread
    for pos, _, typ in records:
        at = 24 if typ == 4 else 8
        vt, rt = struct.unpack_from("<dd", out, pos + at)
        if vt != DBL_MAX:
            vt += k * vspan
        if typ != 4:
            rt += k * rspan
        struct.pack_into("<dd", out, pos + at, vt, rt)
        if shift and typ in (1, 2, 3):
            kp = struct.unpack_from("<I", out, pos + 28)[0]
            struct.pack_into("<I", out, pos + 28, kp + shift * nkp)
        if shift and typ in (2, 3):
            lp = struct.unpack_from("<I", out, pos + 32)[0]
            struct.pack_into("<I", out, pos + 32, lp + shift * nlp)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("outdir")
    ap.add_argument("--ref", default=str(DEFAULT_REF))
    ap.add_argument("--size", default="500M")
    ap.add_argument("--spread", type=int, default=1)
    args = ap.parse_args()
    ref = Path(args.ref)
    data = ref.read_bytes()
    records = sample_records(data)
    vspan, rspan = spans(data, records)
    nkp, nlp = id_counts(data, records)
    target = parse_size(args.size)
    reps = max(1, target // len(data))
    os.makedirs(args.outdir, exist_ok=True)
    out_path = Path(args.outdir) / ref.name
    with open(out_path, "wb") as out:
        for k in range(reps):
            out.write(repetition(data, records, k, vspan, rspan, max(1, args.spread), nkp, nlp))
    print(f"{out_path}: {reps} repetitions of {ref.name}, {reps * len(data)} bytes, "
          f"{reps * len(records)} records")


if __name__ == "__main__":
    main()
