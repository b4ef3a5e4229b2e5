#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Benchmark of the writer classes of the Python module (docs/python.md,
"Writing traces"): events per second written

1. by weft.HephStream.event(), one Python call per event, without and
   with two attributes (an int and a float);
2. by weft.HephStream.events(), the same events from numpy arrays in one
   call (the fast path), also with a column of texts and with a pandas
   nullable UInt64 column missing one value in three;
3. by weft.PallasThread.enter()/leave() (one call per record), a loop of
   4 regions, without and with one int attribute.

Each measurement writes a fresh trace in --dir (removed afterwards) and
counts the time up to the end of close(); the fastest of --runs is shown.

usage: /usr/bin/python3 bench/python_writer_bench.py [--build DIR] [--dir DIR]
           [--events N] [--runs N]
"""

import argparse
import os
import pathlib
import shutil
import sys
import time

TOP = pathlib.Path(__file__).resolve().parents[1]


def heph_loop(weft, path, n, attrs):
    """n events, one event() call each."""
    with weft.HephWriter(path, epoch=0) as w:
        s = w.stream(0)
        names = ("compute", "send", "recv", "wait")
        if attrs:
            for i in range(n):
                s.event(names[i & 3], i * 10, i * 10 + 5, 0, count=i, ratio=0.5)
        else:
            for i in range(n):
                s.event(names[i & 3], i * 10, i * 10 + 5)


def heph_arrays(weft, np, path, n, attrs):
    """The same n events with one events() call (the arrays made before the
    clock starts); attrs: None, "numbers", "text" or "nullable"."""
    import pandas as pd
    names = pd.Categorical.from_codes(np.arange(n) & 3, ["compute", "send", "recv", "wait"])
    starts = np.arange(n, dtype=np.uint64) * 10
    ends = starts + 5
    cols = {}
    if attrs == "numbers":
        cols = {"count": np.arange(n, dtype=np.uint64), "ratio": np.full(n, 0.5)}
    elif attrs == "text":
        cols = {"who": np.array(["alpha", "beta"], dtype=object)[np.arange(n) & 1]}
    elif attrs == "nullable":
        cols = {"count": pd.array(np.arange(n), dtype="UInt64")}
        cols["count"][::3] = pd.NA
    t0 = time.perf_counter()
    with weft.HephWriter(path, epoch=0) as w:
        w.stream(0).events(names, starts, ends, **cols)
    return time.perf_counter() - t0


def pallas_loop(weft, path, n, attrs):
    """n records (n/2 enter/leave pairs over 4 regions), one call each."""
    with weft.PallasWriter(path) as w:
        t = w.thread(w.location("main"))
        regions = [w.region(r) for r in ("compute", "send", "recv", "wait")]
        for i in range(n // 2):
            r = regions[i & 3]
            if attrs:
                t.enter(r, i * 10, i=i)
            else:
                t.enter(r, i * 10)
            t.leave(r, i * 10 + 5)


def measure(fn, runs):
    """The fastest of `runs` calls of fn() (which returns its own time, or None)."""
    best = None
    for _ in range(runs):
        t0 = time.perf_counter()
        own = fn()
        s = own if own is not None else time.perf_counter() - t0
        best = s if best is None else min(best, s)
    return best


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=str(TOP / "build"))
    ap.add_argument("--dir", default="/tmp/weft-writer-bench")
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    sys.path.insert(0, os.path.join(args.build, "python"))
    import numpy as np
    import weft
    out = pathlib.Path(args.dir)
    n = args.events

    def fresh(name):
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir(parents=True)
        return out / name

    cases = [
        ("heph event()", lambda: heph_loop(weft, fresh("t.bin.log"), n, False)),
        ("heph event() + 2 attributes", lambda: heph_loop(weft, fresh("t.bin.log"), n, True)),
        ("heph events()", lambda: heph_arrays(weft, np, fresh("t.bin.log"), n, None)),
        ("heph events() + 2 attributes",
         lambda: heph_arrays(weft, np, fresh("t.bin.log"), n, "numbers")),
        ("heph events() + a str column",
         lambda: heph_arrays(weft, np, fresh("t.bin.log"), n, "text")),
        ("heph events() + a UInt64 column, NA",
         lambda: heph_arrays(weft, np, fresh("t.bin.log"), n, "nullable")),
        ("pallas enter/leave", lambda: pallas_loop(weft, fresh("trace"), n, False)),
        ("pallas enter/leave + 1 attribute", lambda: pallas_loop(weft, fresh("trace"), n, True)),
    ]
    print("%d events, fastest of %d runs" % (n, args.runs))
    for name, fn in cases:
        s = measure(fn, args.runs)
        print("%-34s %8.3f s %10.2f M events/s" % (name, s, n / s / 1e6))
    shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    main()
