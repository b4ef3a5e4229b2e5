# SPDX-License-Identifier: MIT
"""weft's commands on ROSS runs: `weft dump --json` of every .bin of
tests/data/ross against its golden decode (every record, same order and
byte offsets, ints exact, floats as float32/float64 values), the run
directory as one trace, info/top/check, and the ROSS options (kind,
clock rate, model schema, resync) on broken copies."""

import json
import math
import shutil
import struct
from collections import Counter

import pytest

from weftlib import DATA_DIR, run_weft

ROSS = DATA_DIR / "ross"
BINS = sorted(ROSS.glob("*/*/*.bin"))
RUNS = sorted({b.parent for b in BINS})
IM = ROSS / "im-everything" / "np1"
GVT = ROSS / "phold-gvt-pekplp" / "np2" / "ross-stats-gvt.bin"

# Fields stored as float32 (the golden prints their float64 widening).
F32 = {"efficiency", "network_read_time", "network_other_time", "gvt_time",
       "fossil_collect_time", "events_aborted_time", "events_processed_time",
       "priority_queue_time", "rollback_time", "cancel_q_time", "avl_tree_time",
       "buddy_time", "lz4_time", "time_ahead_gvt", "gvt", "virtual_send_time",
       "virtual_recv_time"}


def dump_json(*args):
    out = run_weft("dump", "--json", *args, expect=0).stdout
    return [json.loads(line) for line in out.splitlines()]


def golden(path):
    name = path.name[:-len(".bin")] + ".golden.jsonl"
    return [json.loads(line) for line in (path.parent / name).read_text().splitlines()]


def same_value(key, kind, ours, want):
    """One field: strings (model data hex) and ints exact, floats as the
    stored width; the JSON dump writes NaN and infinities as null."""
    if isinstance(want, str) or isinstance(want, int):
        return type(ours) is type(want) and ours == want
    if not math.isfinite(want):
        return ours is None
    if key in F32 or (key == "real_time" and kind == "EVENT"):
        return struct.pack("<f", ours) == struct.pack("<f", want)
    return float(ours) == want


def assert_matches_golden(events, records, what):
    assert len(events) == len(records), f"{what}: {len(events)} events, golden {len(records)}"
    for ours, want in zip(events, records):
        assert ours["offset"] == want["offset"], what
        assert ours["code"] == want["kind"], (what, want["offset"])
        keys = [k for k in want if k not in ("offset", "kind")]
        assert list(ours["fields"]) == keys, (what, want["offset"])
        for k in keys:
            assert same_value(k, want["kind"], ours["fields"][k], want[k]), (
                what, want["offset"], k, ours["fields"][k], want[k])


@pytest.mark.parametrize("path", BINS, ids=lambda p: f"{p.parent.parent.name}/{p.name}")
def test_dump_json_matches_golden(path):
    events = dump_json(path)
    records = golden(path)
    assert_matches_golden(events, records, str(path))
    data = path.read_bytes()
    for e, want in zip(events, records):
        # the payload is the stored record; the time its real time in ns
        payload = bytes.fromhex(e["payload"])
        assert data[e["offset"]:e["offset"] + len(payload)] == payload
        if e["code"] != "ANALYSIS_MODEL":
            assert e["time"] == int(want["real_time"] * 1e9 + 0.5)


@pytest.mark.parametrize("run", RUNS, ids=lambda p: p.parent.name)
def test_run_directory_is_every_file(run):
    """The directory dump holds each file's records in file order, under
    a root node per file kind, merged by time across files."""
    events = dump_json(run)
    by_root = {}
    for e in events:
        by_root.setdefault(e["stream"].split("/")[0], []).append(e)
    kinds = {"gvt": "gvt", "rt": "rt", "vt": "analysis-lps", "evtrace": "evtrace",
             "model": "model"}
    assert set(by_root) <= set(kinds)
    total = 0
    for root, evs in by_root.items():
        path = run / f"ross-stats-{kinds[root]}.bin"
        assert_matches_golden(evs, golden(path), f"{run} {root}")
        total += len(evs)
    assert total == sum(len(golden(b)) for b in run.glob("*.bin"))


def test_stream_paths_and_filters():
    events = dump_json("--stream", "gvt/pe.1/*", GVT)
    assert events and all(e["stream"].startswith("gvt/pe.1/") for e in events)
    assert {e["code"] for e in events} == {"KP", "LP"}
    lp = dump_json("--stream", "gvt/pe.0/kp.1/lp.3", GVT)
    assert lp and all(e["fields"]["lp_id"] == 3 and e["fields"]["kp_id"] == 1 for e in lp)
    model = dump_json("--mcv", "*MODEL", IM)
    assert {e["stream"] for e in model if e["code"] == "MODEL"} == {
        f"model/pe.0/kp.{i}/lp.{i}" for i in range(4)}
    assert {e["stream"] for e in model if e["code"] == "ANALYSIS_MODEL"} == {
        f"vt/pe.0/kp.{i}/lp.{i}/model" for i in range(4)}


def test_end_virtual_time_is_kept():
    """The last real-time samples have virtual time DBL_MAX ("end")."""
    events = dump_json(ROSS / "phold-rt-pekplp" / "np2" / "ross-stats-rt.bin")
    ends = [e for e in events if e["fields"]["virtual_time"] == 1.7976931348623157e308]
    assert len(ends) == 26


def test_info():
    out = run_weft("info", IM, expect=0).stdout
    assert "format: ross" in out
    assert "metadata: files=5 readable_files=5 records=1780" in out
    assert "vt  [file] file=ross-stats-analysis-lps.bin kind=vt" in out
    assert "  [30] model/pe.0/kp.0/lp.0\n" in out
    assert "events: 1780\n" in out
    # the only warning: the analysis model samples, which have no real time
    assert out.endswith("\nwarnings: \n  warning: 36 event(s) without a real time (ROSS "
                        "analysis model samples: ROSS records none) left out of the time "
                        "span\n")


@pytest.mark.parametrize("run", RUNS, ids=lambda p: p.parent.name)
def test_check_clean(run):
    out = run_weft("check", run, expect=0).stdout
    assert out.startswith("ok: ")


@pytest.mark.parametrize("run", RUNS, ids=lambda p: p.parent.name)
def test_top_counts_kinds(run):
    want = Counter()
    for b in run.glob("*.bin"):
        want.update(r["kind"] for r in golden(b))
    out = run_weft("top", run, expect=0).stdout
    got = {line.split()[0]: int(line.split()[1]) for line in out.splitlines() if line.strip()}
    assert got == dict(want)


# ---- Options ---------------------------------------------------------------------

def test_kind_option(tmp_path):
    copy = tmp_path / "samples.dat"
    shutil.copy(GVT, copy)
    events = dump_json("--ross-kind", "rt", copy)  # implies --format ross
    assert len(events) == 2522 and events[0]["stream"] == "rt/pe.0"
    proc = run_weft("dump", "--ross-kind", "evtrace", copy, expect=2)
    assert "samples.dat: byte 20: expected a model data size" in proc.stderr
    proc = run_weft("info", "--ross-kind", "pe", copy, expect=2)
    assert "unknown ROSS kind 'pe'" in proc.stderr


def test_generic_format_option(tmp_path):
    """-O KEY=VALUE sets any format option of the library, as the
    format's own flags do; the library says what a key takes."""
    copy = tmp_path / "samples.dat"
    shutil.copy(GVT, copy)
    assert dump_json("-O", "ross.kind=rt", copy) == dump_json("--ross-kind", "rt", copy)
    assert (dump_json("-O", "ross.clock_rate=2e9", GVT) ==
            dump_json("--ross-clock-rate", "2e9", GVT))
    proc = run_weft("info", "-O", "ross.kind=pe", copy, expect=2)
    assert "unknown ROSS kind 'pe' (gvt, rt, vt, evtrace, model)" in proc.stderr
    proc = run_weft("info", "-O", "ross.colour=red", copy, expect=2)
    assert "unknown format option 'ross.colour'" in proc.stderr
    proc = run_weft("info", "--option", "ross.kind", copy, expect=2)
    assert "-O takes KEY=VALUE" in proc.stderr


def test_clock_rate_option():
    base = dump_json(GVT)[0]["time"]
    scaled = dump_json("--ross-clock-rate", "2e9", GVT)[0]["time"]
    assert scaled == int(1148.493211576 * 1e9 / 2 + 0.5) and base == 1148493211576
    proc = run_weft("dump", "--ross-clock-rate", "fast", GVT, expect=2)
    assert "invalid clock rate 'fast'" in proc.stderr


def test_model_schema_option(tmp_path):
    schema = "MODEL: u32 magic, u32 lpid, i64 count; ANALYSIS_MODEL: u64 events, f64 vt"
    events = dump_json("--ross-model-schema", schema, "--mcv", "*MODEL", IM)
    model = [e for e in events if e["code"] == "MODEL"]
    assert len(model) == 12
    for e in model:
        f = e["fields"]
        assert f["magic"] == 0xC0FFEE and f["lpid"] == f["lp_id"] and "model_data" not in f
    for e in events:
        if e["code"] == "ANALYSIS_MODEL":
            assert e["fields"]["vt"] == e["fields"]["virtual_time"]
    schema_file = tmp_path / "phold.schema"
    schema_file.write_text("# phold's 4-byte model data\nMODEL: u32 word, u32 more\n")
    path = ROSS / "phold-model-gvt" / "np2" / "ross-stats-model.bin"
    proc = run_weft("dump", "--json", "--ross-model-schema", f"@{schema_file}", path,
                    expect=0)
    first = json.loads(proc.stdout.splitlines()[0])
    assert first["fields"] == {}
    assert "byte 48: expected 8 bytes of model data" in first["decode_error"]
    assert "1680 record(s) with less model data" in proc.stderr
    proc = run_weft("check", "--ross-model-schema", f"@{schema_file}", path, expect=1)
    assert "ross-stats-model.bin:0: warning: payload of MODEL does not match" in proc.stdout
    proc = run_weft("info", "--ross-model-schema", "u32 x,", path, expect=0)
    proc = run_weft("info", "--ross-model-schema", "u32 x y", path, expect=2)
    assert "model schema: line 1, column 7: expected ','" in proc.stderr


def broken_copy(tmp_path, garbage_at, garbage):
    data = GVT.read_bytes()
    path = tmp_path / "broken-gvt.bin"
    path.write_bytes(data[:garbage_at] + garbage + data[garbage_at:])
    return path


def test_garbage_and_resync(tmp_path):
    path = broken_copy(tmp_path, 400, b"\x5a" * 29)
    proc = run_weft("check", path, expect=1)
    assert "broken-gvt.bin:400: error: expected a sample header" in proc.stdout
    assert "reading of this file stops here" in proc.stdout
    proc = run_weft("check", "--resync", path, expect=1)
    assert "(resync: 29 bytes skipped, reading goes on at byte 429)" in proc.stdout
    assert "2522 events" in proc.stdout
    proc = run_weft("dump", "--json", "--resync", path, expect=1)  # bytes were skipped
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    assert len(events) == 2522
    assert [e["offset"] for e in events[4:7]] == [332, 429, 501]


def test_truncated_record(tmp_path):
    path = tmp_path / "cut-gvt.bin"
    path.write_bytes(GVT.read_bytes()[:1000])
    proc = run_weft("dump", "--json", path, expect=0)
    assert len(proc.stdout.splitlines()) == 13
    assert ("cut-gvt.bin:976: warning: expected a PE record of 128 bytes, the file "
            "ends after 24") in proc.stderr
    out = run_weft("info", path, expect=0).stdout
    assert "finished: no" in out


def test_not_ross(tmp_path):
    path = tmp_path / "run-gvt.bin"
    path.write_bytes(b"\x07" * 100)
    proc = run_weft("info", path, expect=2)
    assert "not ROSS data" in proc.stderr and "run-gvt.bin: byte 0" in proc.stderr
