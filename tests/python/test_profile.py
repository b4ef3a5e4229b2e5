# SPDX-License-Identifier: MIT
"""`weft profile` on every format: calls, inclusive and exclusive time,
min and max per region (and per stream), checked against figures worked
out here from `weft dump --json` by a second implementation (containment
of Heph intervals, counts of ROSS records), and the table, JSON and CSV
outputs against each other. The Pallas profile (stored durations against
the replay) is tested in test_pallas_golden.py."""

import collections
import csv
import io
import json
import os
import subprocess
from pathlib import Path

import pytest

from weftlib import DATA_DIR, WEFT, run_weft

HEPH = DATA_DIR / "heph" / "heph_sample.bin.log"
OVNI = DATA_DIR / "ovni" / "v3" / "mpi-func-4procs" / "ovni"
ROSS = DATA_DIR / "ross" / "phold-evtrace-full" / "np1" / "ross-stats-evtrace.bin"
PALLAS = DATA_DIR / "pallas" / "wb_enterleave_f3_n1000_t2_logical" / "trace"


def profile_json(path, *args):
    return json.loads(run_weft("profile", "--json", *args, path, expect=0).stdout)


def dump(path, *args):
    out = run_weft("dump", "--json", *args, path, expect=0).stdout
    return [json.loads(line) for line in out.splitlines()]


def heph_calls(window=None):
    """Each Heph interval with its exclusive time: its length minus that
    of its direct children, the intervals it contains on its stream (a
    stack over the intervals in start order, longest first)."""
    by_stream = collections.defaultdict(list)
    for e in dump(HEPH):
        start, end = e["time"], e["end"]
        if window:
            if end < window[0] or start > window[1]:
                continue
            start, end = max(start, window[0]), min(end, window[1])
        by_stream[e["stream"]].append([start, end, e["code"], 0])
    calls = []
    for events in by_stream.values():
        stack = []
        for call in events:  # dump order: start order, parents first
            while stack and not (stack[-1][0] <= call[0] and call[1] <= stack[-1][1]):
                stack.pop()
            if stack:
                stack[-1][3] += call[1] - call[0]
            stack.append(call)
            calls.append(call)
    return calls


def expected_rows(calls):
    rows = {}
    for start, end, name, children in calls:
        r = rows.setdefault(name, {"count": 0, "total_ns": 0, "exclusive_ns": 0,
                                   "min_ns": None, "max_ns": 0})
        length = end - start
        r["count"] += 1
        r["total_ns"] += length
        r["exclusive_ns"] += max(length - children, 0)
        r["min_ns"] = length if r["min_ns"] is None else min(r["min_ns"], length)
        r["max_ns"] = max(r["max_ns"], length)
    return rows


def rows_by_name(profile):
    return {r["region"]: {k: r[k] for k in ("count", "total_ns", "exclusive_ns",
                                            "min_ns", "max_ns")}
            for r in profile["regions"]}


def test_heph_call_tree_gives_exclusive_times():
    profile = profile_json(HEPH)
    assert profile["source"] == "replay"
    rows = rows_by_name(profile)
    # By hand: 8200 ns minus its four children (300 + 1500 + 900 + 1000).
    assert rows["Scheduling processes"]["exclusive_ns"] == 4500
    assert rows["Relaying process signals"]["exclusive_ns"] == 40000 - 3400
    assert rows == expected_rows(heph_calls())


def test_window_cuts_the_calls_to_it():
    events = dump(HEPH)
    start = min(e["time"] for e in events)
    window = (start + 1_000_000, start + 6_000_000)
    profile = profile_json(HEPH, "--from", str(window[0]), "--to", str(window[1]))
    assert rows_by_name(profile) == expected_rows(heph_calls(window))


def test_rows_per_stream_add_up_to_the_rows_per_name():
    for trace in (HEPH, OVNI):
        total = rows_by_name(profile_json(trace))
        per_stream = profile_json(trace, "--by", "stream")
        assert per_stream["by"] == "stream"
        sums = collections.defaultdict(collections.Counter)
        for r in per_stream["regions"]:
            for k in ("count", "total_ns", "exclusive_ns"):
                sums[r["region"]][k] += r[k]
        assert {n: {k: total[n][k] for k in ("count", "total_ns", "exclusive_ns")}
                for n in total} == {n: dict(c) for n, c in sums.items()}
        # Rows come per stream in stream order, largest total first.
        keys = [(r["stream"], -r["total_ns"], r["region"]) for r in per_stream["regions"]]
        assert keys == sorted(keys)


def test_ovni_threads_each_run_once_and_call_mpi():
    per_stream = profile_json(OVNI, "--by", "stream")["regions"]
    running = [r for r in per_stream if r["region"] == "running"]
    assert len(running) == 4 and all(r["count"] == 1 for r in running)
    assert {r["stream_path"] for r in running} == \
        {e["stream"] for e in dump(OVNI, "--event", "OHx")}


def test_csv_table_and_json_say_the_same():
    as_json = profile_json(OVNI, "--by", "stream")["regions"]
    text = run_weft("profile", "--by", "stream", "--csv", OVNI, expect=0).stdout
    as_csv = list(csv.DictReader(io.StringIO(text)))
    assert [(r["stream_path"], r["region"], int(r["calls"]), int(r["total_ns"]),
             int(r["exclusive_ns"])) for r in as_csv] == \
        [(r["stream_path"], r["region"], r["count"], r["total_ns"], r["exclusive_ns"])
         for r in as_json]
    table = run_weft("profile", "--by", "stream", OVNI, expect=0).stdout.splitlines()
    assert table[0].split() == ["stream", "region", "calls", "total_ns", "mean_ns",
                                "min_ns", "max_ns", "exclusive_ns"]
    assert len(table) == len(as_json) + 1


def test_ross_event_records_are_counted_per_lp():
    """ROSS records are instants, not spans: the profile counts them."""
    profile = profile_json(ROSS, "--by", "stream")
    counted = {r["stream_path"]: r["instants"] for r in profile["regions"]}
    expected = collections.Counter(e["stream"] for e in dump(ROSS, "--event", "EVENT"))
    assert counted == dict(expected) and sum(counted.values()) == 2392
    assert all(r["count"] == 0 for r in profile["regions"])


def test_instants_are_counted_on_request():
    """bench-mix-small: 2000 OB. (buffer flush) and 40 VYc point events
    (weft top counts them), and enter/leave pairs (OHx...)."""
    mix = DATA_DIR / "ovni" / "v3" / "bench-mix-small" / "ovni"
    profile = profile_json(mix, "--instants")
    instants = {r["region"]: r["instants"] for r in profile["regions"] if r["instants"]}
    assert instants == {"ovni OB.": 2000, "nosv VYc": 40}
    assert all("instants" not in r for r in profile_json(mix)["regions"])


def test_pallas_with_a_filter_replays():
    whole = profile_json(PALLAS)
    assert whole["source"] == "durations"
    one = profile_json(PALLAS, "--stream", "*thread_0*")
    assert one["source"] == "replay"
    assert [r["count"] * 2 for r in one["regions"]] == [r["count"] for r in whole["regions"]]


@pytest.mark.parametrize("args, message", [
    (["--by", "thread"], "--by takes name or stream, not 'thread'"),
    (["--json", "--csv"], "--json and --csv exclude each other"),
    (["--from", "2s", "--to", "1s"], "--to is before --from"),
    (["--headers-only", "--stream", "x"], "stored durations cover whole streams"),
])
def test_usage_errors(args, message):
    err = run_weft("profile", *args, PALLAS, expect=2).stderr
    assert message in err


def test_example_prints_the_profile_per_thread_and_the_imbalance():
    """examples/profile.c (public API only) on a trace of each format."""
    build = Path(os.environ.get("WEFT_BUILD_DIR", Path(WEFT).parent))
    program = build / "examples" / "profile"
    if not program.exists():
        pytest.skip("examples/profile is not built")
    out = subprocess.run([program, OVNI, "2"], check=True, capture_output=True,
                         text=True).stdout
    per_stream = profile_json(OVNI, "--by", "stream")["regions"]
    for path in {r["stream_path"] for r in per_stream}:
        assert f"\n{path}\n" in out
    # The imbalance of "running": the largest thread total over the mean.
    totals = [r["total_ns"] for r in per_stream if r["region"] == "running"]
    line = next(x for x in out.splitlines() if x.startswith("running ") and
                len(x.split()) == 5)
    assert line.split()[1:3] == ["4", str(max(totals))]
    assert line.split()[4] == f"{max(totals) / (sum(totals) / 4):.2f}"
    for trace in (HEPH, ROSS, PALLAS):
        proc = subprocess.run([program, trace], capture_output=True, text=True)
        assert proc.returncode == 0 and "figures from" in proc.stdout, proc.stderr
