# SPDX-License-Identifier: MIT
"""The ROSS analysis commands against the reference runs of tests/data/ross:
`weft table` (every cell against the golden decodes, the orders, sorting
through spilled runs, schemas, quoting, the output file), `weft summary`
(every number against sums computed here from the golden files, the
duplicates of virtual-time samples, --dedup) and `weft plot` (the SVG
parses, one line per PE or KP per panel, legend, axes, notes, decimation,
NaN and a single point); and the one-pass info/top/check on a run with
many streams."""

import csv
import io
import json
import math
import os
import re
import shutil
import struct
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

import pytest

from weftlib import DATA_DIR, REPO_DIR, WEFT, run_weft

ROSS = DATA_DIR / "ross"
RUNS = sorted({b.parent for b in ROSS.glob("*/*/*.bin")})
IM = ROSS / "im-everything" / "np1"
GVT_RUN = ROSS / "phold-gvt-pekplp" / "np2"
RT_RUN = ROSS / "phold-rt-pekplp" / "np2"
VT_RUN = ROSS / "phold-vt-pekplp" / "np1"
DBL_MAX = sys.float_info.max
SVG = "{http://www.w3.org/2000/svg}"

# Fields stored as float32 (the goldens print their float64 widening).
F32 = {"efficiency", "network_read_time", "network_other_time", "gvt_time",
       "fossil_collect_time", "events_aborted_time", "events_processed_time",
       "priority_queue_time", "rollback_time", "cancel_q_time", "avl_tree_time",
       "buddy_time", "lz4_time", "time_ahead_gvt", "gvt", "virtual_send_time",
       "virtual_recv_time"}
LEVEL_KINDS = {"pe": {"PE"}, "kp": {"KP"}, "lp": {"LP"},
               "model": {"MODEL", "ANALYSIS_MODEL"}, "event": {"EVENT"}}
PHASES = ["network_read_time", "network_other_time", "gvt_time", "fossil_collect_time",
          "events_aborted_time", "events_processed_time", "priority_queue_time",
          "rollback_time", "cancel_q_time", "avl_tree_time", "buddy_time", "lz4_time"]
COUNTERS = ["events_processed", "events_aborted", "events_rolled_back", "total_rollbacks",
            "secondary_rollbacks", "fossil_collect_attempts", "network_sends",
            "network_receives", "pe_event_ties", "all_reduce_count"]


def golden_records(run):
    """{file name: [records]} of every golden decode of a run directory."""
    out = {}
    for b in sorted(run.glob("*.bin")):
        name = b.name[:-len(".bin")] + ".golden.jsonl"
        out[b.name] = [json.loads(l) for l in (run / name).read_text().splitlines()]
    return out


def table(*args, expect=0):
    """`weft table ARGS -o -`: (header, rows as dicts, stderr)."""
    proc = run_weft("table", *args, "-o", "-", expect=expect)
    reader = csv.DictReader(io.StringIO(proc.stdout, newline=""))
    rows = list(reader)
    return reader.fieldnames, rows, proc.stderr


def is_float(key, kind):
    return key in F32 or (key == "real_time" and kind == "EVENT")


def same_cell(key, kind, cell, want):
    """A CSV cell against a golden value: ints and hex exact, floats read
    back to the same float32/float64, non-finite values empty."""
    if isinstance(want, str):
        return cell == want
    if isinstance(want, bool) or isinstance(want, int):
        return cell == str(want)
    if not math.isfinite(want):
        return cell == ""
    if is_float(key, kind):
        return struct.pack("<f", float(cell)) == struct.pack("<f", want)
    return float(cell) == want


def check_row(row, rec, file_name):
    """Every golden field of a record, and the common columns, in a row."""
    kind = rec["kind"]
    assert row["file"] == file_name and int(row["offset"]) == rec["offset"]
    assert row["kind"] == kind
    for key, want in rec.items():
        if key in ("offset", "kind"):
            continue
        assert same_cell(key, kind, row[key], want), (file_name, rec["offset"], key,
                                                      row[key], want)
    vt = rec.get("virtual_time", rec.get("virtual_recv_time"))
    vt_key = "virtual_time" if "virtual_time" in rec else "virtual_recv_time"
    assert same_cell(vt_key, kind, row["virtual_time"], vt)
    assert row["is_end"] == ("true" if vt == DBL_MAX else "false")
    rt = rec["real_time"]
    assert int(row["time_ns"]) == (int(rt * 1e9 + 0.5) if rt >= 0 else 0)


# ---- weft table ------------------------------------------------------------------

@pytest.mark.parametrize("level", sorted(LEVEL_KINDS))
@pytest.mark.parametrize("run", RUNS, ids=lambda p: p.parent.name)
def test_table_matches_golden(run, level):
    """One row per record of the level, every cell as the golden says."""
    header, rows, _ = table("--level", level, run)
    assert header[:8] == ["file", "offset", "stream", "kind", "time_ns", "virtual_time",
                          "real_time", "is_end"]
    want = {(f, r["offset"]): r for f, recs in golden_records(run).items()
            for r in recs if r["kind"] in LEVEL_KINDS[level]}
    assert len(rows) == len(want)
    for row in rows:
        check_row(row, want[(row["file"], int(row["offset"]))], row["file"])


@pytest.mark.parametrize("run", [IM, RT_RUN, VT_RUN], ids=lambda p: p.parent.name)
def test_table_default_order_is_the_merged_cursor(run):
    """Default order: each file's order, files merged by time, as dump."""
    _, rows, _ = table("--level", "lp", run)
    dump = run_weft("dump", "--json", "--mcv", "LP", run, expect=0).stdout
    events = [json.loads(l) for l in dump.splitlines()]
    assert [(r["stream"], int(r["offset"])) for r in rows] == [
        (e["stream"], e["offset"]) for e in events]


@pytest.mark.parametrize("order,key", [("virtual", "virtual_time"), ("real", "real_time")])
@pytest.mark.parametrize("level", ["pe", "lp", "model", "event"])
def test_table_sorted(order, key, level):
    """Stable sorts: the default order sorted by the time, with the rows
    in memory and with a budget small enough to spill sorted runs."""
    run = IM
    _, rows, _ = table("--level", level, run)
    want = sorted(rows, key=lambda r: float(r[key]) if r[key] else math.inf)
    _, got, _ = table("--level", level, "--sort", order, run)
    assert got == want
    _, spilled, _ = table("--level", level, "--sort", order, "--sort-budget", "64K", run)
    assert spilled == want


def test_table_sort_spills_runs(tmp_path):
    """A table larger than the budget: runs in a temporary file, merged,
    none left behind."""
    run = ROSS / "phold-evtrace-full" / "np1"
    _, rows, _ = table("--level", "event", run)
    env = dict(os.environ, TMPDIR=str(tmp_path))
    proc = subprocess.run([WEFT, "table", "--level", "event", "--sort", "real", "--sort-budget",
                           "64K", "-o", "-", run], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    got = list(csv.DictReader(io.StringIO(proc.stdout, newline="")))
    assert len(proc.stdout) > 3 * 65536  # several sorted runs of 64 KiB
    assert got == sorted(rows, key=lambda r: float(r["real_time"]))
    assert list(tmp_path.iterdir()) == []


def test_table_model_schema():
    schema = "MODEL: u32 magic, u32 lpid, i64 count; ANALYSIS_MODEL: u64 events, f64 vt"
    header, rows, _ = table("--level", "model", "--ross-model-schema", schema, IM)
    assert header[8:] == ["pe_id", "kp_id", "lp_id", "gvt", "stats_type", "model_size",
                          "sample_size", "magic", "lpid", "count", "rest", "events", "vt"]
    golden = {(f, r["offset"]): r for f, recs in golden_records(IM).items() for r in recs}
    for row in rows:
        rec = golden[(row["file"], int(row["offset"]))]
        data = bytes.fromhex(rec["model_data"])
        if row["kind"] == "MODEL":
            magic, lpid, count = struct.unpack_from("<IIq", data)
            assert (int(row["magic"]), int(row["lpid"]), int(row["count"])) == (
                magic, lpid, count)
            assert row["events"] == row["vt"] == row["sample_size"] == ""
        else:
            events, vt = struct.unpack_from("<Qd", data)
            assert int(row["events"]) == events and float(row["vt"]) == vt
            assert row["magic"] == row["gvt"] == ""
        assert row["rest"] == data[16:].hex()


def test_table_short_model_data():
    """Data shorter than the schema: fixed columns kept, model columns empty."""
    path = ROSS / "phold-model-gvt" / "np2"
    header, rows, err = table("--level", "model", "--ross-model-schema",
                              "MODEL: u32 word, u32 more", path)
    assert header[-4:] == ["word", "more", "rest", "model_data"]  # no ANALYSIS section
    assert len(rows) == 1680
    assert all(r["word"] == r["more"] == "" and r["lp_id"] != "" for r in rows)
    assert "1680 records have less model data than the model schema" in err


def test_table_output_file(tmp_path):
    out = tmp_path / "pe.csv"
    run_weft("table", "--level", "pe", "-o", out, GVT_RUN, expect=0)
    first = out.read_text()
    assert first.startswith("file,offset,stream,kind,") and first.count("\n") == 195
    out.write_text("keep me")
    proc = run_weft("table", "--level", "kp", "-o", out, GVT_RUN, expect=2)
    assert "exists; use --force" in proc.stderr and out.read_text() == "keep me"
    run_weft("table", "--level", "pe", "--force", "-o", out, GVT_RUN, expect=0)
    assert out.read_text() == first
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pe.csv"]
    proc = run_weft("table", "--level", "pe", "-o", tmp_path / "no" / "x.csv", GVT_RUN,
                    expect=2)
    assert "cannot create" in proc.stderr


def test_table_quoting(tmp_path):
    """RFC 4180: a file name with a comma and a quote is quoted."""
    run = tmp_path / "run"
    run.mkdir()
    shutil.copy(GVT_RUN / "ross-stats-gvt.bin", run / 'a,"b"-gvt.bin')
    proc = run_weft("table", "--level", "pe", "-o", "-", run, expect=0)
    assert '\n"a,""b""-gvt.bin",0,' in proc.stdout
    rows = list(csv.DictReader(io.StringIO(proc.stdout, newline="")))
    assert len(rows) == 194 and rows[0]["file"] == 'a,"b"-gvt.bin'


def test_table_usage_errors():
    assert "missing --level" in run_weft("table", "-o", "-", IM, expect=2).stderr
    # Without -o the table goes to standard output (issue 15), as with -o -.
    assert run_weft("table", "--level", "pe", IM, expect=0).stdout == \
        run_weft("table", "--level", "pe", "-o", "-", IM, expect=0).stdout
    assert "unknown level" in run_weft("table", "--level", "x", "-o", "-", IM,
                                       expect=2).stderr
    assert "unknown order" in run_weft("table", "--level", "pe", "--sort", "x", "-o", "-",
                                       IM, expect=2).stderr
    ovni = next((DATA_DIR / "ovni" / "v3").glob("*/ovni"))
    assert "this command reads ROSS runs" in run_weft("table", "--level", "pe", "-o", "-",
                                                      ovni, expect=2).stderr
    assert "usage: weft table" in run_weft("table", "--help", expect=0).stdout
    header, rows, err = table("--level", "event", GVT_RUN)
    assert rows == [] and header[8:] == ["source_lp", "destination_lp", "virtual_send_time",
                                         "virtual_recv_time", "model_data_size", "model_data"]
    assert "no event records" in err


# ---- weft summary ----------------------------------------------------------------

def python_summary(records, dedup=False):
    """Sums per PE computed here from golden PE records (file order)."""
    per = defaultdict(lambda: {"samples": 0, **{c: 0 for c in COUNTERS},
                               "phases": {p: 0.0 for p in PHASES}, "num_gvts": None,
                               "pq": 0})
    pes = [r for r in records if r["kind"] == "PE"]
    if dedup:  # keep the last of consecutive samples of a PE at one virtual time
        kept, last = [], {}
        for r in pes:
            if r["pe_id"] in last and last[r["pe_id"]][0] == r["virtual_time"]:
                kept[last[r["pe_id"]][1]] = None
            last[r["pe_id"]] = (r["virtual_time"], len(kept))
            kept.append(r)
        pes = [r for r in kept if r is not None]
    for r in pes:
        t = per[r["pe_id"]]
        t["samples"] += 1
        for c in COUNTERS:
            t[c] += r[c]
        for p in PHASES:
            t["phases"][p] += r[p]
        t["num_gvts"] = r["num_gvts"]
        t["pq"] = max(t["pq"], r["priority_queue_size"])
    return per


def efficiency(processed, rolled_back):
    if processed == rolled_back:
        return 0.0
    return 100.0 * (1.0 - rolled_back / (processed - rolled_back))


def assert_totals(got, want):
    assert got["samples"] == want["samples"]
    for c in COUNTERS:
        assert got[c] == want[c], c
    assert got["net_events"] == want["events_processed"] - want["events_rolled_back"]
    assert math.isclose(got["efficiency"], efficiency(want["events_processed"],
                                                       want["events_rolled_back"]),
                        rel_tol=1e-12, abs_tol=1e-12)
    assert got["primary_rollbacks"] == want["total_rollbacks"] - want["secondary_rollbacks"]
    assert got["num_gvts"] == want["num_gvts"]
    assert got["priority_queue_size_max"] == want["pq"]
    for p in PHASES:
        assert math.isclose(got["phase_times"][p], want["phases"][p], rel_tol=1e-12,
                            abs_tol=1e-15), p


@pytest.mark.parametrize("run", [GVT_RUN, RT_RUN, VT_RUN, IM],
                         ids=lambda p: p.parent.name)
def test_summary_numbers(run):
    out = json.loads(run_weft("summary", "--json", run, expect=0).stdout)
    files = golden_records(run)
    kinds = {"ross-stats-gvt.bin": "gvt", "ross-stats-rt.bin": "rt",
             "ross-stats-analysis-lps.bin": "vt"}
    modes = {m["file"]: m for m in out["modes"]}
    assert set(modes) == {f for f in files if f in kinds}
    for f, mode in modes.items():
        assert mode["mode"] == kinds[f] and mode["source"] == "PE"
        per = python_summary(files[f])
        assert [p["pe"] for p in mode["pes"]] == sorted(per)
        for p in mode["pes"]:
            assert_totals(p, per[p["pe"]])
        # all-reduces are collective: the run did as many as each PE (like GVTs)
        all_want = {"samples": sum(t["samples"] for t in per.values()),
                    **{c: sum(t[c] for t in per.values()) for c in COUNTERS},
                    "all_reduce_count": max(t["all_reduce_count"] for t in per.values()),
                    "phases": {ph: sum(t["phases"][ph] for t in per.values())
                               for ph in PHASES},
                    "num_gvts": max(t["num_gvts"] for t in per.values()),
                    "pq": max(t["pq"] for t in per.values())}
        assert_totals(mode["all"], all_want)
        pe_recs = [r for r in files[f] if r["kind"] == "PE"]
        assert mode["end_samples"] == sum(r["virtual_time"] == DBL_MAX for r in pe_recs)
        assert mode["real_time_first"] == min(r["real_time"] for r in pe_recs)
        # ROSS's own count (stdout.log) covers the whole run, the samples
        # up to the last one: never above it
        total = int(re.search(r"Total All Reduce Calls\s+(\d+)",
                              (run / "stdout.log").read_text()).group(1))
        assert mode["all"]["all_reduce_count"] <= total


def python_duplicates(records):
    """Samples whose entity and virtual time equal the entity's previous."""
    def entity(r):
        k = r["kind"]
        if k == "PE":
            return (k, r["pe_id"])
        if k == "KP":
            return (k, r["pe_id"], r["kp_id"])
        return ("LP" if k == "LP" else "MODEL", r["pe_id"], r["kp_id"], r["lp_id"])
    last, dups = {}, defaultdict(int)
    for r in records:
        e = entity(r)
        if e in last and last[e] == r["virtual_time"]:
            dups[e[0]] += 1
        last[e] = r["virtual_time"]
    return dups


@pytest.mark.parametrize("run", [VT_RUN, IM], ids=lambda p: p.parent.name)
def test_summary_duplicates_and_dedup(run):
    records = golden_records(run)["ross-stats-analysis-lps.bin"]
    out = json.loads(run_weft("summary", "--json", run, expect=0).stdout)
    vt = next(m for m in out["modes"] if m["mode"] == "vt")
    want = python_duplicates(records)
    assert vt["duplicates"] == {k: want.get(k, 0) for k in ("PE", "KP", "LP", "MODEL")}
    assert vt["duplicates"]["PE"] > 0
    deduped = json.loads(run_weft("summary", "--json", "--dedup", run, expect=0).stdout)
    vt = next(m for m in deduped["modes"] if m["mode"] == "vt")
    per = python_summary(records, dedup=True)
    for p in vt["pes"]:
        assert_totals(p, per[p["pe"]])
    assert vt["dropped"] == want["PE"]


def test_summary_text():
    out = run_weft("summary", RT_RUN, expect=0).stdout
    assert "rt samples (ross-stats-rt.bin): 150 PE samples of 2 PEs" in out
    lines = out.splitlines()
    head = next(i for i, l in enumerate(lines) if l.split()[:3] == ["pe", "samples", "processed"])
    assert [l.split()[0] for l in lines[head + 1:head + 4]] == ["0", "1", "all"]
    assert "time per engine phase (s):" in out
    assert "2 samples at the end (virtual time DBL_MAX)" in out
    im = run_weft("summary", IM, expect=0).stdout
    assert "evtrace (ross-stats-evtrace.bin): 1372 records, not engine samples" in im
    assert "duplicates (same entity and virtual time as its previous sample): PE 32" in im


def test_summary_kp_source_and_clock_rate(tmp_path):
    """A file without PE samples is summed from its KP samples; the clock
    rate rescales the phase times."""
    run = tmp_path / "run"
    run.mkdir()
    data = (GVT_RUN / "ross-stats-gvt.bin").read_bytes()
    kept, pos = bytearray(), 0
    while pos < len(data):
        typ, size = struct.unpack_from("<ii", data, pos)
        if typ != 0:
            kept += data[pos:pos + 24 + size]
        pos += 24 + size
    (run / "x-gvt.bin").write_bytes(bytes(kept))
    out = json.loads(run_weft("summary", "--json", run, expect=0).stdout)
    mode = out["modes"][0]
    kps = [r for r in golden_records(GVT_RUN)["ross-stats-gvt.bin"] if r["kind"] == "KP"]
    assert mode["source"] == "KP"
    for p in mode["pes"]:
        mine = [r for r in kps if r["pe_id"] == p["pe"]]
        assert p["events_processed"] == sum(r["events_processed"] for r in mine)
        assert p["num_gvts"] is None and p["phase_times"] is None
    base = json.loads(run_weft("summary", "--json", GVT_RUN, expect=0).stdout)
    fast = json.loads(run_weft("summary", "--json", "--ross-clock-rate", "2e9", GVT_RUN,
                               expect=0).stdout)
    a, b = base["modes"][0]["all"]["phase_times"], fast["modes"][0]["all"]["phase_times"]
    assert all(math.isclose(b[p], a[p] / 2, rel_tol=1e-12) for p in PHASES)


def analysis_only(data):
    """The ANALYSIS_MODEL records of an analysis-lps file (48-byte headers
    with flag 3), without its engine samples."""
    kept, pos = bytearray(), 0
    while pos < len(data):
        typ, size = struct.unpack_from("<ii", data, pos)
        if (typ, size) in ((0, 104), (1, 44), (2, 36), (2, 48), (3, 24)):
            pos += 24 + size + (struct.unpack_from("<I", data, pos + 44)[0] if typ == 3 else 0)
            continue
        size = struct.unpack_from("<i", data, pos + 40)[0]
        kept += data[pos:pos + 48 + size]
        pos += 48 + size
    return bytes(kept)


def test_summary_modes_without_engine_samples(tmp_path):
    """A mode file with no engine samples (empty, or model samples only) is
    a section without PEs; its table of PEs is never sorted (qsort got NULL:
    the ASan+UBSan build aborted)."""
    run = tmp_path / "run"
    run.mkdir()
    (run / "ross-stats-gvt.bin").write_bytes(b"")
    vt = analysis_only((IM / "ross-stats-analysis-lps.bin").read_bytes())
    assert len(vt) == 36 * 64
    (run / "ross-stats-analysis-lps.bin").write_bytes(vt)
    out = json.loads(run_weft("summary", "--json", run, expect=0).stdout)
    assert [(m["mode"], m["source"], m["pes"], m["all"]["samples"]) for m in out["modes"]] \
        == [("vt", None, [], 0), ("gvt", None, [], 0)]
    text = run_weft("summary", run, expect=0).stdout
    assert "vt samples (ross-stats-analysis-lps.bin): none" in text
    assert "gvt samples (ross-stats-gvt.bin): none" in text


# ---- Samples without a real time, samples at the end -------------------------------

def real_span(run):
    """(first, last) ns of the records that have a real time: every record
    but ANALYSIS_MODEL (ROSS never sets its real time), and their count."""
    times = [int(r["real_time"] * 1e9 + 0.5) for recs in golden_records(run).values()
             for r in recs if r["kind"] != "ANALYSIS_MODEL"]
    untimed = sum(r["kind"] == "ANALYSIS_MODEL" for recs in golden_records(run).values()
                  for r in recs)
    return min(times), max(times), untimed


def ross_total_time(run):
    """ROSS's own "Total Time" of the run (s), from its stdout.log."""
    return float(re.search(r"Total Time \(Note[^)]*\)\s+([\d.]+)",
                           (run / "stdout.log").read_text()).group(1))


@pytest.mark.parametrize("run", [IM, ROSS / "phold-model-gvt" / "np2", VT_RUN],
                         ids=lambda p: p.parent.name)
def test_info_span_is_real_time(run):
    """Analysis model samples (time 0: no real time) are left out of info's
    span with a counted warning; the span is then the run's (ROSS's Total
    Time, within the few ms of sampling before and after it)."""
    first, last, untimed = real_span(run)
    out = run_weft("info", run, expect=0).stdout
    assert f"\ntime: {first} .. {last} (span {last - first} ns" in out
    assert (last - first) / 1e9 < ross_total_time(run) + 0.01
    if untimed:
        assert untimed == 36
        assert (f"warning: {untimed} event(s) without a real time (ROSS analysis model "
                "samples: ROSS records none) left out of the time span") in out
        assert out.count(f"events: 9, without a real time: 9\n") == 4
    else:
        assert "\nwarnings: none\n" in out


def test_untimed_samples_left_out_of_real_time_views(tmp_path):
    """Paraver's duration and time 0, Chrome's counters: only what has a real
    time, with a counted warning; --time virtual keeps the model samples."""
    first, last, untimed = real_span(IM)
    base = tmp_path / "p"
    proc = run_weft("convert", IM, "-t", "paraver", "-o", base, expect=0)
    warning = (f"weft convert: warning: {untimed} event(s) without a real time (ROSS "
               "analysis model samples: ROSS records none) left out of the real-time view")
    assert warning in proc.stderr
    prv = base.with_suffix(".prv").read_text().splitlines()
    assert prv[0].split("):")[1].startswith(f"{last - first:020d}_ns:")
    assert prv[1] == f"2:0:1:1:1:0:1:{first}"
    out = tmp_path / "c.json"
    proc = run_weft("convert", IM, "-t", "chrome", "-o", out, expect=0)
    assert warning in proc.stderr
    events = json.loads(out.read_text())["traceEvents"]
    assert min(e["ts"] for e in events if "ts" in e) * 1000 >= first - 1
    # the model samples' streams hold nothing else: no track, no counter at 0
    assert not [e for e in events if e["ph"] == "M" and e["args"].get("name") == "model"]
    assert not [e for e in events if e["ph"] == "C" and e["name"].endswith("sample_size")]
    proc = run_weft("convert", IM, "-t", "chrome", "-o", out, "--force", "--time",
                    "virtual", expect=0)
    assert "without a real time" not in proc.stderr
    events = json.loads(out.read_text())["traceEvents"]
    model = [e for e in events if e["ph"] == "C" and e["name"].endswith("sample_size")]
    assert len(model) == untimed


@pytest.mark.parametrize("run,count", [(IM, 9), (RT_RUN, 26)], ids=["im", "rt"])
def test_virtual_time_counts_end_samples(tmp_path, run, count):
    """--time virtual leaves out the samples taken at the end of the run
    (virtual time DBL_MAX) with a warning that counts them."""
    want = sum(r.get("virtual_time") == DBL_MAX for recs in golden_records(run).values()
               for r in recs)
    assert want == count
    proc = run_weft("convert", run, "-t", "chrome", "-o", tmp_path / "v.json",
                    "--time", "virtual", expect=0)
    assert (f"weft convert: warning: {count} sample(s) taken at the end of the run "
            "(virtual time DBL_MAX) left out") in proc.stderr
    assert "without a virtual time" not in proc.stderr


# ---- Sizes past the end of the file ------------------------------------------------

@pytest.mark.parametrize("which", ["middle", "last"])
def test_model_data_size_past_the_end(tmp_path, which):
    """A model data size that runs past the end of the file loses the rest:
    an error (exit 1) when records follow, a warning (exit 0) when it is
    the last record, cut as a crash of ROSS leaves it."""
    src = IM / "ross-stats-evtrace.bin"
    records = golden_records(IM)[src.name]
    k = len(records) // 2 if which == "middle" else len(records) - 1
    start = records[k]["offset"]
    data = bytearray(src.read_bytes())
    struct.pack_into("<I", data, start + 20, len(data) - start - 24 + 1)
    run = tmp_path / "run"
    run.mkdir()
    (run / src.name).write_bytes(bytes(data))
    expect = 1 if which == "middle" else 0
    for args in (["dump"], ["convert", "-t", "chrome", "-o", tmp_path / "o.json", "--force"]):
        proc = run_weft(*args, run, expect=expect)
        assert f"ross-stats-evtrace.bin:{start + 20}: " in proc.stderr
        if which == "middle":
            assert (f"error: expected {len(data) - start - 23} bytes of model data, the "
                    f"file ends after {len(data) - start - 24}, but records start at byte "
                    f"{records[k + 1]['offset']} within them") in proc.stderr
        else:
            assert "warning: expected" in proc.stderr and "error" not in proc.stderr
    assert len(run_weft("dump", run, expect=expect).stdout.splitlines()) == k


# ---- weft plot ---------------------------------------------------------------------

def plot(tmp_path, *args, name="p.svg"):
    out = tmp_path / name
    proc = run_weft("plot", "-o", out, *args, expect=0)
    return ET.parse(out).getroot(), out, proc


def panel_lines(root, panel):
    g = next(g for g in root.iter(SVG + "g") if g.get("id") == panel)
    return g, g.findall(SVG + "polyline")


def texts(root, cls):
    return [t.text for t in root.iter(SVG + "text") if t.get("class") == cls]


def points(polyline):
    text = polyline.get("points").strip()
    return [tuple(map(float, p.split(","))) for p in text.split()] if text else []


@pytest.mark.parametrize("run", [GVT_RUN, RT_RUN], ids=lambda p: p.parent.name)
def test_plot_two_pes(tmp_path, run):
    root, out, _ = plot(tmp_path, run)
    assert root.tag == SVG + "svg"
    assert not list(root.iter(SVG + "script")) and "href" not in out.read_text()
    pes = golden_records(run)
    per_pe = defaultdict(int)
    for recs in pes.values():
        for r in recs:
            if r["kind"] == "PE" and r["virtual_time"] != DBL_MAX:
                per_pe[r["pe_id"]] += 1
    for panel in ("efficiency", "events"):
        _, lines = panel_lines(root, panel)
        assert [l.get("data-line") for l in lines] == ["pe.0", "pe.1"]
        assert [l.find(SVG + "title").text for l in lines] == ["pe.0", "pe.1"]
        assert [len(points(l)) for l in lines] == [per_pe[0], per_pe[1]]
        assert len({l.get("stroke") for l in lines}) == 2
    assert texts(root, "legend-name") == ["pe.0", "pe.1"]
    assert texts(root, "axis-title").count("virtual time (GVT)") == 2
    assert "efficiency (%)" in texts(root, "axis-title")
    assert "events processed per sample" in texts(root, "axis-title")
    assert len(texts(root, "tick")) >= 10
    notes = " ".join(texts(root, "note"))
    if run == RT_RUN:
        assert "2 samples taken at the end of the simulation (virtual time DBL_MAX)" in notes
    else:
        assert "DBL_MAX" not in notes


def test_plot_real_time_and_kp(tmp_path):
    root, _, _ = plot(tmp_path, "--x", "real", "--level", "kp", RT_RUN)
    _, lines = panel_lines(root, "efficiency")
    assert len(lines) == 8 and lines[0].get("data-line") == "pe.0/kp.0"
    assert texts(root, "axis-title")[0] == "real time since the first sample (s)"
    notes = " ".join(texts(root, "note"))
    assert "DBL_MAX" not in notes and "Real time 0 is the first sample" in notes
    assert all(len(points(l)) == 75 for l in lines)  # the end samples too


def test_plot_on_real_time_picks_the_real_time_file(tmp_path):
    """A run with gvt, rt and vt files: --x real plots the rt samples
    (taken in real time), the virtual axis the gvt ones (issue 15)."""
    root, _, _ = plot(tmp_path, "--x", "real", IM)
    assert "rt samples (ross-stats-rt.bin)" in texts(root, "title")[0]
    root, _, _ = plot(tmp_path, IM, name="virtual.svg")
    assert "(ross-stats-gvt.bin)" in texts(root, "title")[0]


def dedup_counts(records):
    """Samples per PE of a vt file plotted on the virtual axis (the end
    samples left out), and kept by --dedup: the last of consecutive
    samples of a PE at one virtual time."""
    total, kept, last = defaultdict(int), defaultdict(int), {}
    for r in records:
        if r["kind"] != "PE" or r["virtual_time"] == DBL_MAX:
            continue
        pe = r["pe_id"]
        total[pe] += 1
        if last.get(pe) != r["virtual_time"]:
            kept[pe] += 1
        last[pe] = r["virtual_time"]
    return total, kept


def test_plot_dedup(tmp_path):
    """--dedup as summary's: one point per run of samples of a PE at one
    virtual time, and a note that counts the others (issue 15)."""
    total, kept = dedup_counts(golden_records(VT_RUN)["ross-stats-analysis-lps.bin"])
    dropped = sum(total.values()) - sum(kept.values())
    assert dropped > 0
    for args, want in (([], total), (["--dedup"], kept)):
        root, _, _ = plot(tmp_path, "--mode", "vt", *args, VT_RUN, name=f"vt{len(args)}.svg")
        for panel in ("efficiency", "events"):
            _, lines = panel_lines(root, panel)
            assert [len(points(l)) for l in lines] == [want[pe] for pe in sorted(want)]
        notes = " ".join(texts(root, "note"))
        assert (f"--dedup: {dropped} duplicate samples" in notes) == bool(args)
    root, _, _ = plot(tmp_path, "--dedup", GVT_RUN, name="gvt.svg")
    assert "--dedup merges the samples of vt files only" in " ".join(texts(root, "note"))


def test_plot_single_point_and_modes(tmp_path):
    root, _, _ = plot(tmp_path, "--mode", "gvt", IM)
    _, lines = panel_lines(root, "events")
    assert len(lines) == 1 and len(points(lines[0])) == 1
    assert len(list(root.iter(SVG + "circle"))) == 2  # one marker per panel
    root, _, _ = plot(tmp_path, "--mode", "vt", IM, name="vt.svg")
    assert "(ross-stats-analysis-lps.bin)" in texts(root, "title")[0]
    proc = run_weft("plot", "--mode", "nope", "-o", tmp_path / "n.svg", IM, expect=2)
    assert "no file 'nope'" in proc.stderr


def test_plot_nan_and_infinite_values(tmp_path):
    """NaN and infinite efficiencies are left out, and the note says so."""
    data = bytearray((GVT_RUN / "ross-stats-gvt.bin").read_bytes())
    pes, pos = [], 0
    while pos < len(data):
        typ, size = struct.unpack_from("<ii", data, pos)
        if typ == 0:
            pes.append(pos)
        pos += 24 + size
    struct.pack_into("<f", data, pes[0] + 76, float("nan"))  # efficiency
    struct.pack_into("<f", data, pes[1] + 76, float("inf"))
    run = tmp_path / "run"
    run.mkdir()
    (run / "ross-stats-gvt.bin").write_bytes(bytes(data))
    root, _, _ = plot(tmp_path, run)
    _, eff = panel_lines(root, "efficiency")
    _, events = panel_lines(root, "events")
    assert sum(len(points(l)) for l in eff) == 194 - 2
    assert sum(len(points(l)) for l in events) == 194
    assert "2 NaN or infinite efficiencies" in " ".join(texts(root, "note"))


def test_plot_decimates_huge_runs(tmp_path):
    """A run of 12 MB (about 9000 PE samples per PE): at most 2000 points
    per line, the extremes kept, a small SVG."""
    run = tmp_path / "big"
    subprocess.run([sys.executable, REPO_DIR / "bench" / "make_ross_run.py", "--size", "12M",
                    run], check=True, capture_output=True)
    root, out, _ = plot(tmp_path, run)
    _, lines = panel_lines(root, "events")
    assert len(lines) == 2
    assert all(1000 < len(points(l)) <= 2000 for l in lines)
    assert out.stat().st_size < 400_000
    assert "2 lines decimated" in " ".join(texts(root, "note"))


def test_plot_output_file(tmp_path):
    out = tmp_path / "p.svg"
    out.write_text("old")
    proc = run_weft("plot", "-o", out, GVT_RUN, expect=2)
    assert "use --force" in proc.stderr and out.read_text() == "old"
    run_weft("plot", "-f", "-o", out, GVT_RUN, expect=0)
    ET.parse(out)
    assert "usage: weft plot" in run_weft("plot", "--help", expect=0).stdout


# ---- info, top, check in one pass --------------------------------------------------

def test_one_pass_commands_on_many_streams(tmp_path):
    """A run with 64 times the KPs and LPs of the reference: info, top and
    check give the per-stream counts of the golden (each record under its
    relabelled stream)."""
    run = tmp_path / "many"
    subprocess.run([sys.executable, REPO_DIR / "bench" / "make_ross_run.py", "--size", "12M",
                    "--spread", "64", run], check=True, capture_output=True)
    reps = (run / "ross-stats-gvt.bin").stat().st_size // (GVT_RUN / "ross-stats-gvt.bin").stat().st_size
    info = run_weft("info", run, expect=0).stdout
    records = golden_records(GVT_RUN)["ross-stats-gvt.bin"]
    assert f"events: {reps * len(records)}\n" in info
    assert info.count("      events: ") == 2 + 64 * (8 + 16)
    top = run_weft("top", "--streams", run, expect=0).stdout
    totals = dict(l.split() for l in top.split("\n\n")[0].splitlines())
    assert totals == {"LP": str(reps * 1552), "KP": str(reps * 776), "PE": str(reps * 194)}
    assert sum(l.endswith(":") for l in top.splitlines()) == 2 + 64 * 24
    check = run_weft("check", run, expect=0).stdout
    assert check.startswith(f"ok: {2 + 64 * 24} streams, {reps * len(records)} events")
