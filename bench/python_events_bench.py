#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Benchmark of the Python module weft (docs/python.md).

1. Every event of the 1 GB ovni trace of the read benchmarks
   (bench/read_bench.sh) into numpy columns with trace.events(), merged
   by time (the default), stream after stream (order="stream") and so with
   2 reader threads: events per second and the peak resident memory of
   the process.
2. A smaller ovni trace into one pandas DataFrame: trace.to_pandas()
   (with and without the typed fields) against what users do without the
   module, `weft dump --json TRACE | pandas.read_json(lines=True)`: seconds,
   peak memory and the ratio.
3. to_pandas() of a 12 M-event Pallas trace of 2 threads
   (bench/make_pallas_trace.py --iterations 1000000 --threads 2), in the
   three orders of 1.

Each measurement runs in a fresh interpreter (peak RSS is per process);
the fastest of --runs is shown.

usage: /usr/bin/python3 bench/python_events_bench.py [--build DIR] [--trace DIR]
           [--small DIR] [--small-bytes 50M] [--pallas DIR] [--runs N] [--batch-size N]
"""

import argparse
import os
import pathlib
import subprocess
import sys

TOP = pathlib.Path(__file__).resolve().parents[1]

# Each measurement starts after the imports (numpy, pandas: 0.2-0.5 s).
EVENTS = r"""
import resource, sys, time, weft
t0 = time.perf_counter()
n = 0
with weft.open(sys.argv[1]) as t:
    for b in t.events(batch_size=int(sys.argv[2]), order=sys.argv[3] or None,
                      threads=int(sys.argv[4])):
        n += len(b["time"])
s = time.perf_counter() - t0
print(n, s, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""

TO_PANDAS = r"""
import resource, sys, time, weft
import pandas
t0 = time.perf_counter()
with weft.open(sys.argv[1]) as t:
    df = t.to_pandas(fields=sys.argv[2] == "fields", order=sys.argv[3] or None,
                     threads=int(sys.argv[4]))
s = time.perf_counter() - t0
print(len(df), s, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""

DUMP_PANDAS = r"""
import io, resource, subprocess, sys, time
import pandas as pd
t0 = time.perf_counter()
p = subprocess.Popen([sys.argv[2], "dump", "--json", sys.argv[1]], stdout=subprocess.PIPE)
df = pd.read_json(p.stdout, lines=True)
p.wait()
s = time.perf_counter() - t0
kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(len(df), s, max(kids, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss))
"""


def run(code, *args, env):
    """Runs `code` in a fresh /usr/bin/python3: (rows, seconds, peak RSS in MB)."""
    out = subprocess.run(["/usr/bin/python3", "-c", code, *map(str, args)], env=env,
                         check=True, capture_output=True, text=True).stdout.split()
    return int(out[0]), float(out[1]), int(out[2]) / 1024


def best(runs, code, *args, env):
    results = [run(code, *args, env=env) for _ in range(runs)]
    return min(results, key=lambda r: r[1])


def ensure_trace(build, path, size):
    """Writes an ovni trace of `size` bytes with bench_emit when missing."""
    if not path.exists():
        subprocess.run([str(build / "bench" / "bench_emit"), "--write-trace", str(path),
                        "--bytes", size, "--threads", "4"], check=True)
    # Into the page cache, read by another process: the peak RSS of a
    # process outlives exec, so this one stays small for its children.
    for f in path.rglob("stream.obs"):
        subprocess.run(["cat", str(f)], stdout=subprocess.DEVNULL, check=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=str(TOP / "build"))
    ap.add_argument("--trace", default="/tmp/weft-bench-trace")
    ap.add_argument("--small", default="/tmp/weft-py-bench-small")
    ap.add_argument("--small-bytes", default="50M")
    ap.add_argument("--pallas", default="/tmp/py-pallas-12m")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=65536)
    a = ap.parse_args()
    build = pathlib.Path(a.build).resolve()
    env = dict(os.environ, PYTHONPATH=str(build / "python"))
    trace, small = pathlib.Path(a.trace), pathlib.Path(a.small)
    ensure_trace(build, trace, "1G")
    ensure_trace(build, small, a.small_bytes)

    for order, threads in (("", 1), ("stream", 1), ("stream", 2)):
        n, s, rss = best(a.runs, EVENTS, trace, a.batch_size, order, threads, env=env)
        print(f"events(order={order or 'None'}, threads={threads}) into numpy, {trace}: "
              f"{n} events in {s:.2f} s, {n / s / 1e6:.1f} M events/s, peak RSS {rss:.0f} MB "
              f"(batch {a.batch_size})")
    rows = {}
    for what, code, args in (("to_pandas()", TO_PANDAS, ("no", "", 1)),
                             ("to_pandas(fields=True)", TO_PANDAS, ("fields", "", 1)),
                             ("weft dump --json | pandas.read_json", DUMP_PANDAS,
                              (build / "weft",))):
        n, s, rss = best(a.runs, code, small, *args, env=env)
        rows[what] = s
        print(f"{what}, {small}: {n} rows in {s:.2f} s, {n / s / 1e6:.2f} M rows/s, "
              f"peak RSS {rss:.0f} MB")
    ref = rows["weft dump --json | pandas.read_json"]
    print(f"ratio: to_pandas() {ref / rows['to_pandas()']:.0f}x, "
          f"to_pandas(fields=True) {ref / rows['to_pandas(fields=True)']:.1f}x faster than "
          f"dump --json | pandas")
    pallas = pathlib.Path(a.pallas)
    if not pallas.exists():
        subprocess.run(["/usr/bin/python3", str(TOP / "bench" / "make_pallas_trace.py"),
                        str(pallas), "--iterations", "1000000", "--threads", "2"], check=True)
    for order, threads in (("", 1), ("stream", 1), ("stream", 2)):
        n, s, rss = best(a.runs, TO_PANDAS, pallas, "no", order, threads, env=env)
        print(f"to_pandas(order={order or 'None'}, threads={threads}), {pallas}: {n} rows in "
              f"{s:.2f} s, peak RSS {rss:.0f} MB")


if __name__ == "__main__":
    sys.exit(main())
