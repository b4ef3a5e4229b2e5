# SPDX-License-Identifier: MIT
"""`weft check --models` and `weft profile --emulate`: the ovni emulation
through the commands (docs/cli.md), against the real ovniemu 1.14.0 on
the cases of test_emu_paraver.py (the copies in tests/data/ovni-emu and,
where it is next to the checkout, the whole corpus).

- check --models: a case ovniemu accepts is clean (exit 0, no error); a
  case it refuses gives exit 1 and an error line naming ovniemu's rule;
  a refusal during the emulation names the stream file and the byte
  offset ovniemu's panic report names (relpath=, offset=).
- profile --emulate --by stream: the exclusive time of each thread,
  channel and value is the time ovniemu's thread.prv shows the value (a
  record lasts until the next one of its row and type, the last until
  the trace's end).
"""

import csv
import io
import re
from collections import defaultdict

import pytest

from test_emu_paraver import CASES, first_error, golden, skip_unless_emulated
from weftlib import run_weft


def all_models_args(case_dir):
    written = case_dir / "ovniemu" / "written.txt"
    words = written.read_text().split("\n", 1)[0].split() if written.exists() else []
    return ["--all-models"] if "-a" in words else []


def panic_place(case_dir):
    """(stream file, offset) of ovniemu's panic report, or None."""
    log = (case_dir / "ovniemu" / "ovniemu.log").read_text()
    rel = re.search(r"relpath=(\S+)", log)
    off = re.search(r"  offset=(\d+)", log)
    return (rel.group(1) + "/stream.obs", int(off.group(1))) if rel and off else None


@pytest.mark.parametrize("case", sorted(CASES))
def test_check_models_as_ovniemu(case):
    case_dir = CASES[case]
    skip_unless_emulated(case_dir)
    rule = first_error(case_dir)
    proc = run_weft("check", "--models", *all_models_args(case_dir), case_dir / "ovni")
    errors = [l for l in proc.stdout.splitlines() if ": error: " in l]
    if rule is None:
        assert proc.returncode == 0 and errors == [], proc.stdout
        return
    assert proc.returncode == 1, proc.stdout
    assert any(rule in l for l in errors), (rule, proc.stdout)
    place = panic_place(case_dir)
    if place is not None:
        line = next(l for l in errors if rule in l)
        assert line.startswith("%s:%d: error: " % place), (place, line)


def test_check_models_options():
    case_dir = CASES["emu-ovni-libovni-mark"]
    out = run_weft("check", "--models", case_dir / "ovni", expect=0).stdout
    assert out.startswith("ok: ")
    proc = run_weft("check", "--all-models", case_dir / "ovni", expect=2)
    assert "--all-models goes with --models" in proc.stderr
    heph = CASES["emu-ovni-libovni-mark"].parents[1] / "heph" / "heph_sample.bin.log"
    proc = run_weft("check", "--models", heph, expect=2)
    assert "only ovni traces" in proc.stderr


def test_check_models_refused_at_load():
    """A model version ovniemu 1.14 does not emulate: the thread's file and the rule."""
    case_dir = CASES["emu-ovni-require-bad-version"]
    out = run_weft("check", "--models", case_dir / "ovni", expect=1).stdout
    assert ("loom.vm.0/proc.7012/thread.7012: error: unsupported ovni model version "
            "(want 666.66.6, have 1.1.0) in thread.7012") in out
    # without --models the trace is clean: the refusal is the emulation's
    assert run_weft("check", case_dir / "ovni", expect=0).stdout.startswith("ok: ")


def pcf_types(text):
    """{type: (title, {value: label})} of a .pcf: the title without the
    tracking suffix of a model's channel."""
    types, cur = {}, None
    for line in text.splitlines():
        m = re.match(r"^0 +(\d+) +(.*)$", line)
        if m:
            name = m.group(2).strip()  # the thread's own types keep their names
            title = name if name.startswith("Thread: ") else \
                re.sub(r" of the (RUNNING|ACTIVE) thread$", "", name)
            cur = types[int(m.group(1))] = (title, {})
            continue
        m = re.match(r"^(-?\d+)\s+(\S.*)$", line)
        if m and cur is not None:
            cur[1][int(m.group(1))] = m.group(2).strip()
        elif not line.strip() or line.startswith("EVENT_TYPE"):
            cur = None if line.startswith("EVENT_TYPE") else cur
    return types


def golden_profile(case_dir):
    """{(tid, title, label): ns} from ovniemu's thread.prv, .pcf and .row."""
    prv = golden(case_dir, "thread.prv").splitlines()
    duration = int(re.match(r"#Paraver \([^)]*\):(\d+)_ns", prv[0]).group(1))
    tids = [int(l.split(".")[-1]) for l in golden(case_dir, "thread.row").splitlines()
            if l.startswith("TH ")]
    types = pcf_types(golden(case_dir, "thread.pcf"))
    seqs = defaultdict(list)
    for line in prv[1:]:
        f = line.split(":")
        seqs[(int(f[4]) - 1, int(f[6]))].append((int(f[5]), int(f[7])))
    out = defaultdict(int)
    for (row, typ), seq in seqs.items():
        title, labels = types[typ]
        for i, (t, v) in enumerate(seq):
            until = seq[i + 1][0] if i + 1 < len(seq) else duration
            if v != 0 and until > t:
                out[(tids[row], title, labels.get(v, str(v)))] += until - t
    return dict(out), tids


def accepted_cases():
    return sorted(c for c, d in CASES.items()
                  if first_error(d) is None and golden(d, "thread.prv"))


@pytest.mark.parametrize("case", accepted_cases())
def test_profile_emulate_as_thread_prv(case):
    case_dir = CASES[case]
    skip_unless_emulated(case_dir)
    want, tids = golden_profile(case_dir)
    if len(set(tids)) != len(tids):
        pytest.skip("two threads share a TID: rows cannot be told apart by it")
    out = run_weft("profile", "--emulate", "--by", "stream", "--channel", "*", "--csv",
                   *all_models_args(case_dir), case_dir / "ovni", expect=0).stdout
    got = defaultdict(int)
    for r in csv.DictReader(io.StringIO(out)):
        tid = int(r["stream_path"].rsplit(".", 1)[1])
        if int(r["exclusive_ns"]) > 0:
            got[(tid, r["channel"], r["region"])] += int(r["exclusive_ns"])
    assert dict(got) == want


def test_profile_emulate_table_and_options():
    case_dir = CASES["emu-ovni-libovni-mark"]
    out = run_weft("profile", "--emulate", "--by", "stream", "--channel", "ovni.Colors",
                   case_dir / "ovni", expect=0).stdout.splitlines()
    assert out[0].split()[:3] == ["stream", "channel", "region"]
    assert len(out) == 1 + 4 * 3  # 4 threads, 3 colours
    assert all(l.split()[1] == "Colors" for l in out[1:])
    js = run_weft("profile", "--emulate", "--json", case_dir / "ovni", expect=0).stdout
    assert '"channel":"Thread: thread state"' in js and '"emulated":true' in js
    # the default: labelled values only, no TIDs
    assert "TID" not in run_weft("profile", "--emulate", case_dir / "ovni", expect=0).stdout
    for bad in (["--channel", "x"], ["--all-models"], ["--emulate", "--replay"]):
        run_weft("profile", *bad, case_dir / "ovni", expect=2)
    proc = run_weft("profile", "--emulate", "--event", "OH*", case_dir / "ovni", expect=2)
    assert "no event selection" in proc.stderr
