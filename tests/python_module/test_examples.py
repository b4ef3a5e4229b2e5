# SPDX-License-Identifier: MIT
"""The scripts of examples/python (the walkthrough of docs/python.md) on
traces of tests/data, their answers checked against `weft dump --json`."""

import importlib.util
import json
import os
import pathlib
import subprocess
import sys
from collections import defaultdict

import pytest

from conftest import DATA, REPO, dump_json, weft_bin

EXAMPLES = REPO / "examples" / "python"


def load(name):
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def run_example(name, *args):
    env = dict(os.environ)
    r = subprocess.run([sys.executable, str(EXAMPLES / f"{name}.py"), *map(str, args)],
                       capture_output=True, text=True, env=env, check=False)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_thread_states_against_the_dump():
    trace = DATA / "ovni" / "v2" / "1.10.0" / "ovni"
    table = load("thread_states").thread_states(trace)
    states = {"OHx": "running", "OHr": "running", "OHp": "paused", "OHc": "cooling",
              "OHw": "warming", "OHe": "dead"}
    per_stream = defaultdict(list)
    for line in dump_json(trace):
        e = json.loads(line)
        if e["code"] in states:
            per_stream[e["stream"]].append((e["time"], states[e["code"]]))
    expected = defaultdict(lambda: defaultdict(int))
    for stream, evs in per_stream.items():
        for (t, state), (t_next, _) in zip(evs, evs[1:]):
            if state != "dead":
                expected[stream][state] += t_next - t
    assert set(table.index) == set(expected)
    for stream, row in expected.items():
        for state, ns in row.items():
            assert table.loc[stream, state] == ns, (stream, state)
        assert table.loc[stream].sum() == sum(row.values())
    assert table.loc["loom.node1.trace/proc.1000/thread.1001.obs", "paused"] == 50
    out = run_example("thread_states", trace)
    assert "running" in out and "thread.1001" in out


@pytest.fixture(params=["python", "c"])
def ring(tmp_path, request):
    """A 4-rank Pallas MPI ring of 5 rounds, written from Python by
    examples/python/write_mpi_ring.py, or by examples/pallas_mpi_ring (C)."""
    out = tmp_path / "ring"
    if request.param == "python":
        text = run_example("write_mpi_ring", out, 4, 5)
        assert "4 ranks, 5 rounds" in text
        return out
    exe = pathlib.Path(weft_bin()).parent / "examples" / "pallas_mpi_ring"
    if not exe.exists():
        pytest.skip(f"{exe} is not built")
    subprocess.run([str(exe), str(out), "4", "5"], check=True, capture_output=True)
    return out


def test_written_ring_is_a_valid_pallas_trace(tmp_path):
    out = tmp_path / "ring"
    load("write_mpi_ring").write_ring(out, 3, 6)
    r = subprocess.run([weft_bin(), "check", str(out)], capture_output=True, text=True)
    assert r.returncode == 0 and "no problems" in r.stdout, r.stdout + r.stderr
    lengths = sorted({json.loads(x)["fields"]["length"]
                      for x in dump_json(out, "--mcv", "MPI_Send")})
    assert lengths == [1024, 2048, 4096, 8192]


def test_mpi_message_sizes_against_the_dump(ring):
    sends = load("mpi_message_sizes").message_sizes(ring)
    expected = [json.loads(x) for x in dump_json(ring, "--mcv", "MPI_*[Ss]end")]
    assert len(sends) == len(expected) == 20
    by_pair = defaultdict(int)
    for e in expected:
        by_pair[(e["stream"], e["fields"]["peer"])] += e["fields"]["length"]
    got = sends.groupby([sends["stream"].astype(str), "peer"])["length"].sum().to_dict()
    assert got == dict(by_pair)
    out = run_example("mpi_message_sizes", ring)
    assert "messages" in out and "bytes" in out


def test_ross_efficiency_against_weft_table():
    import csv
    import io
    import math
    run = DATA / "ross" / "phold-gvt-pekplp" / "np2"
    per_gvt, totals = load("ross_efficiency").efficiency(run)
    r = subprocess.run([weft_bin(), "table", "--level", "pe", "--stream", "gvt/*", str(run)],
                       capture_output=True, text=True, check=True)
    rows = [x for x in csv.DictReader(io.StringIO(r.stdout)) if x["is_end"] == "false"]
    assert rows
    sums = defaultdict(lambda: [0, 0])
    for x in rows:
        pe, vt = int(x["pe_id"]), float(x["virtual_time"])
        if x["efficiency"]:
            assert math.isclose(per_gvt.loc[vt, pe], float(x["efficiency"]), rel_tol=1e-6)
        sums[pe][0] += int(x["events_processed"])
        sums[pe][1] += int(x["events_rolled_back"])
    assert sorted(totals.index) == sorted(sums)
    for pe, (processed, rolled) in sums.items():
        assert totals.loc[pe, "events_processed"] == processed
        assert math.isclose(totals.loc[pe, "efficiency"],
                            100 * (1 - rolled / (processed - rolled)))
    out = run_example("ross_efficiency", run)
    assert "efficiency" in out
