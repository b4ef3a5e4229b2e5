#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Efficiency of each PE of a ROSS run over GVT.

ROSS's GVT-triggered instrumentation samples each PE's counters at every
GVT computation (the records of level "pe" whose virtual_time is the
GVT); its efficiency is 100 * (1 - rolled back / (processed - rolled
back)) over the interval, the figure ROSS prints at the end of a run.
The samples taken at the end of the run (is_end) are left out.

usage: ross_efficiency.py ROSS_RUN_DIR
"""

import sys

import weft


def efficiency(path):
    """(per GVT: one row per GVT, one column per PE; per PE: the run's totals)."""
    with weft.open(path) as trace:
        pe = trace.ross_table("pe", streams="gvt/*")
    pe = pe[~pe["is_end"]]
    per_gvt = pe.pivot_table(index="virtual_time", columns="pe_id", values="efficiency")
    totals = pe.groupby("pe_id")[["events_processed", "events_rolled_back"]].sum()
    net = totals["events_processed"] - totals["events_rolled_back"]
    totals["efficiency"] = 100 * (1 - totals["events_rolled_back"] / net)
    return per_gvt, totals


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__.strip().splitlines()[-1])
    per_gvt, totals = efficiency(sys.argv[1])
    print(per_gvt.head(10).round(1).to_string())
    print()
    print(totals.round(2).to_string())


if __name__ == "__main__":
    main()
