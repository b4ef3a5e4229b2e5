#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Time each thread of an ovni trace spends in each state.

ovni's thread events (ovni's "OH" class) change the state of the thread
that writes them: OHx (execute: the thread starts running), OHr (resume),
OHp (pause), OHc (cool), OHw (warm) and OHe (end: the thread is dead).
A state lasts from its event to the thread's next state event; the time
after OHe is not counted. OHC (the thread creates another) and OHa/OHA
(affinity) change no state of their own and are left out.

usage: thread_states.py OVNI_TRACE_DIR
"""

import sys

import weft

STATE = {"OHx": "running", "OHr": "running", "OHp": "paused", "OHc": "cooling",
         "OHw": "warming", "OHe": "dead"}


def thread_states(path):
    """A DataFrame: one row per thread (stream), one column per state, in ns."""
    with weft.open(path) as trace:
        # Per-thread analysis: stream after stream, each in time order.
        df = trace.to_pandas(codes="OH[xrpcwe]", order="stream")
    df["state"] = df["code"].astype(str).map(STATE)
    # A state lasts until the thread's next state event.
    df["until"] = df.groupby("stream", observed=True)["time"].shift(-1)
    spans = df[(df["state"] != "dead") & df["until"].notna()]
    ns = (spans["until"] - spans["time"]).astype("int64")
    table = ns.groupby([spans["stream"].astype(str), spans["state"]]).sum().unstack(fill_value=0)
    return table.reindex(columns=[s for s in ("running", "paused", "cooling", "warming")
                                  if s in table.columns])


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__.strip().splitlines()[-1])
    table = thread_states(sys.argv[1])
    print(table.to_string())
    share = table.div(table.sum(axis=1), axis=0)
    print()
    print((100 * share).round(1).to_string())


if __name__ == "__main__":
    main()
