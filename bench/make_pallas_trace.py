#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes a large Pallas 0.20 trace for the read benchmarks, in the layout
of the reference trace wb_enterleave_f3_n1000_t2_logical: T threads, each
N iterations of Enter/Leave of F functions (a loop over a body of F
blocks), timestamps 1, 2, 3... stored uncompressed (compression 0), so no
compressor is needed to make it.

usage: bench/make_pallas_trace.py DIR [--iterations N] [--threads T] [--functions F]
"""

import argparse
import os
import struct

SUB = 1000  # values per sub-array, as Pallas writes them


def settings():
    # compression none, encoding none, zstd level 5, basic truncated loops,
    # max loop length 100, timestamp storage delta (recorded only)
    return struct.pack("<iiQiQi", 0, 0, 5, 2, 100, 1)


def string_defs(strings):
    out = struct.pack("<Q", len(strings))
    for ref, text in enumerate(strings):
        b = text.encode() + b"\0"
        out += struct.pack("<Ii", ref, len(b)) + b
    return out


def empty(n=1):
    return struct.pack("<Q", 0) * n


def main_file(functions, threads):
    strings = ["Process"] + [f"function_{i}" for i in range(functions)] + \
              [f"thread_{t}" for t in range(threads)]
    regions = struct.pack("<Q", functions) + b"".join(
        struct.pack("<II", i + 1, i + 1) for i in range(functions))
    lgs = struct.pack("<Q", 1) + struct.pack("<III", 0, 0, 0xFFFFFFFF)
    return (bytes([20]) + settings() + string_defs(strings) + regions +
            empty(3) + lgs + empty(2))


def archive_file(functions, threads):
    locs = struct.pack("<Q", threads) + b"".join(
        struct.pack("<III", t, 1 + functions + t, 0) for t in range(threads))
    return struct.pack("<II", 0, threads) + empty(6) + locs + empty()


class DataFile:
    """Appends u64 nbytes + raw u64 values; returns sub-array headers."""

    def __init__(self, path):
        self.f = open(path, "wb")
        self.offset = 0

    def timestamps(self, values):
        subs = []
        for i in range(0, len(values), SUB):
            chunk = values[i:i + SUB]
            raw = struct.pack(f"<{len(chunk)}Q", *chunk)
            self.f.write(struct.pack("<Q", len(raw)) + raw)
            subs.append(struct.pack("<QQQQ", len(chunk), chunk[0], chunk[-1], self.offset))
            self.offset += 8 + len(raw)
        return struct.pack("<QQ", len(values), len(subs)) + b"".join(subs)

    def durations(self, values):
        subs = []
        for i in range(0, len(values), SUB):
            chunk = values[i:i + SUB]
            raw = struct.pack(f"<{len(chunk)}Q", *chunk)
            self.f.write(struct.pack("<Q", len(raw)) + raw)
            subs.append(struct.pack("<QQQQQ", len(chunk), min(chunk), max(chunk),
                                    sum(chunk) // len(chunk), self.offset))
            self.offset += 8 + len(raw)
        return struct.pack("<QQQQQ", len(values), len(subs), min(values), max(values),
                           sum(values) // len(values)) + b"".join(subs)


def thread_dir(path, thread, functions, n):
    os.makedirs(path, exist_ok=True)
    events = DataFile(os.path.join(path, "event_durations.dat"))
    seqs = DataFile(os.path.join(path, "sequence_durations.dat"))
    period = 2 * functions
    body = struct.pack("<IIQQQIQ", thread, 0, 2 * functions, functions + 2, 1, 0, 1)
    for e in range(2 * functions):  # E(2k) = Enter k+1, E(2k+1) = Leave k+1
        record = 2 + (e % 2)
        stamps = [1 + e + period * i for i in range(n)]
        body += struct.pack("<iB", record, 9) + struct.pack("<I", e // 2 + 1)
        body += struct.pack("<Q", 0) + events.timestamps(stamps)
    body += struct.pack("<Q", 2 * functions) + b"".join(
        struct.pack("<I", e) for e in range(2 * functions))
    span = period * n - 1
    # S0: root block [L0]
    body += struct.pack("<iQI", 0, 1, (0 << 2) | 3)
    body += seqs.durations([span]) + seqs.durations([0]) + seqs.timestamps([1])
    for k in range(functions):  # S1..SF: the calls
        body += struct.pack("<iQII", 0, 2, ((2 * k) << 2) | 1, ((2 * k + 1) << 2) | 1)
        starts = [1 + 2 * k + period * i for i in range(n)]
        body += seqs.durations([1] * n) + seqs.durations([1] * n) + seqs.timestamps(starts)
    # S(F+1): the loop body [S1..SF]
    body += struct.pack("<iQ", 1, functions) + b"".join(
        struct.pack("<I", ((k + 1) << 2) | 2) for k in range(functions))
    body += seqs.durations([period - 1] * n) + seqs.durations([functions] * n)
    body += seqs.timestamps([1 + period * i for i in range(n)])
    body += struct.pack("<Q", functions + 2) + b"".join(
        struct.pack("<I", s) for s in range(functions + 2))
    body += struct.pack("<IIQ", ((functions + 1) << 2) | 2, n, 1)
    body += struct.pack("<QI", 1, 0)
    with open(os.path.join(path, "thread.pallas"), "wb") as f:
        f.write(body)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--iterations", type=int, default=1_000_000)
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--functions", type=int, default=3)
    a = ap.parse_args()
    os.makedirs(os.path.join(a.dir, "archive_0"), exist_ok=True)
    with open(os.path.join(a.dir, "main.pallas"), "wb") as f:
        f.write(main_file(a.functions, a.threads))
    with open(os.path.join(a.dir, "archive_0", "archive.pallas"), "wb") as f:
        f.write(archive_file(a.functions, a.threads))
    for t in range(a.threads):
        thread_dir(os.path.join(a.dir, "archive_0", f"thread_{t}"), t, a.functions,
                   a.iterations)
    print(f"{a.dir}: {a.threads} threads x {2 * a.functions * a.iterations} events")


if __name__ == "__main__":
    main()
