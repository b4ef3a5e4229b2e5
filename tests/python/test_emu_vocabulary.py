# SPDX-License-Identifier: MIT
"""The Paraver vocabulary of ovniemu (tests/data/ovni-emu/pcf-vocabulary.tsv,
written by scripts/ovniemu-pcf-vocabulary.py from every .pcf golden of the
ovniemu corpus, explained in docs/emulation.md) against copies of the
`ovniemu/{thread,cpu}.pcf` goldens of a few cases of that corpus
(tests/data/ovni-emu/<case>/, one case per model at least).

These are the types and labels that the emulation layer of issue 17 must
write. The test checks the table itself, so it runs without any weft code:
- every EVENT_TYPE of a golden .pcf is in the table under its file, with
  the same name and, for a fixed type, the same VALUES (in order);
- the per-trace values follow the rules the document states: CPU affinity
  values 1..N name the rows of cpu.row (`CPU <loom>.<phyid>` then
  `vCPU <loom>.*`), and a task type / OpenMP label value is the hash of
  its label (Jenkins' lookup2 as uthash's HASH_JEN, + 666, 31 bits,
  + 1000 below 1000: ovni 1.14's task_get_type_gid, restated);
- a golden .pcf holds all the types of a model or none of them.
It skips only when the data files are missing.
"""

import csv
import re
from collections import defaultdict

import pytest

import weftlib

EMU_DATA = weftlib.DATA_DIR / "ovni-emu"
TSV = EMU_DATA / "pcf-vocabulary.tsv"
MARK_BASE = 100
HWC_BASE = 200   # nOS-V hardware counters: named by the trace (nosv.hwc)
CASES = sorted(p.parent.name for p in EMU_DATA.glob("*/ovniemu")
               if (p / "thread.pcf").exists() and (p / "thread.pcf").stat().st_size > 0
               ) if EMU_DATA.is_dir() else []


def load_tsv():
    if not TSV.exists():
        pytest.skip(f"{TSV} is missing")
    with open(TSV, newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
    vocab = {}
    for r in rows:
        key = (r["file"], int(r["type"]))
        ent = vocab.setdefault(key, {"label": r["label"], "model": r["model"],
                                     "kind": "fixed", "values": []})
        assert ent["label"] == r["label"] and ent["model"] == r["model"], r
        if r["value"] == "*":
            assert r["value_label"] == "per-trace", r
            ent["kind"] = "per-trace"
        elif r["value"] == "-":
            assert r["value_label"] == "-", r
            ent["kind"] = "empty"
        else:
            ent["values"].append((int(r["value"]), r["value_label"]))
    return vocab


def parse_pcf(text):
    """{type: (name, [(value, label)])} of the EVENT_TYPE blocks."""
    types = {}
    for block in text.split("EVENT_TYPE\n")[1:]:
        head, _, rest = block.partition("\n")
        # "0 %-10d %s": the name starts after the padded type and one blank
        m = re.match(r"^0 (\d+) +", head)
        assert m, head
        name = head[2 + max(len(m[1]), 10) + 1:]
        vals = []
        if rest.startswith("VALUES\n"):
            for line in rest[len("VALUES\n"):].split("\n"):
                if not line.strip():
                    break
                # "%-4d %s": a label may start with blanks (" CPU 0.0")
                v = re.match(r"^(-?\d+) ", line)
                vals.append((int(v[1]), line[max(len(v[1]), 4) + 1:]))
        types[int(m[1])] = (name, vals)
    return types


def jenkins_lookup2(data):
    """Bob Jenkins' lookup2 hash of bytes, initval 0xfeedbeef (uthash HASH_JEN)."""
    mask = 0xFFFFFFFF

    def mix(a, b, c):
        for s1, s2, s3 in ((13, 8, 13), (12, 16, 5), (3, 10, 15)):
            a = ((a - b - c) & mask) ^ (c >> s1)
            b = ((b - c - a) & mask) ^ ((a << s2) & mask)
            c = ((c - a - b) & mask) ^ (b >> s3)
        return a, b, c

    def word(k, i):
        return k[i] | k[i + 1] << 8 | k[i + 2] << 16 | k[i + 3] << 24

    a = b = 0x9E3779B9
    c = 0xFEEDBEEF
    i, left = 0, len(data)
    while left >= 12:
        a = (a + word(data, i)) & mask
        b = (b + word(data, i + 4)) & mask
        c = (c + word(data, i + 8)) & mask
        a, b, c = mix(a, b, c)
        i += 12
        left -= 12
    c = (c + len(data)) & mask
    tail = data[i:]
    acc = [a, b, c]
    for j, byte in enumerate(tail):
        # bytes 0-3 go to a, 4-7 to b, 8-10 to c shifted up by one byte
        if j < 4:
            acc[0] = (acc[0] + (byte << (8 * j))) & mask
        elif j < 8:
            acc[1] = (acc[1] + (byte << (8 * (j - 4)))) & mask
        else:
            acc[2] = (acc[2] + (byte << (8 * (j - 7)))) & mask
    return mix(*acc)[2]


def type_value(label):
    v = ((jenkins_lookup2(label.encode()) + 666) & 0xFFFFFFFF) & 0x7FFFFFFF
    return v + 1000 if v < 1000 else v


def test_hash_known_pairs():
    # pairs of the goldens (docs/emulation.md, task types)
    assert type_value("testtype10") == 39445232
    assert type_value("(unlabeled task type 1)") == 1375581571
    assert type_value("main task.1") == 1541689984


def test_tsv_shape():
    vocab = load_tsv()
    models = {e["model"] for e in vocab.values()}
    assert models == {"ovni", "nosv", "nanos6", "nodes", "tampi", "mpi", "openmp", "kernel"}
    for (f, t), e in vocab.items():
        assert f in ("thread", "cpu")
        if e["kind"] == "fixed":
            vals = [v for v, _ in e["values"]]
            assert len(vals) == len(set(vals)), (f, t)
        # thread and cpu declare the same types, except thread-only 2, 4, 6
        other = "cpu" if f == "thread" else "thread"
        assert (other, t) in vocab or (f, t) in {("thread", 2), ("thread", 4), ("thread", 6)}


def test_cases_cover_every_model():
    vocab = load_tsv()
    if not CASES:
        pytest.skip(f"no golden .pcf copies in {EMU_DATA}")
    covered = set()
    for case in CASES:
        for t in parse_pcf((EMU_DATA / case / "ovniemu" / "thread.pcf").read_text()):
            if ("thread", t) in vocab:
                covered.add(vocab[("thread", t)]["model"])
    assert covered == {e["model"] for e in vocab.values()}


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("file", ["thread", "cpu"])
def test_golden_pcf_matches_vocabulary(case, file):
    vocab = load_tsv()
    pcf = EMU_DATA / case / "ovniemu" / f"{file}.pcf"
    if not pcf.exists():
        pytest.skip(f"{pcf} is missing")
    types = parse_pcf(pcf.read_text())
    assert types, pcf
    # the fixed header before the first EVENT_TYPE
    head = pcf.read_text().split("EVENT_TYPE\n")[0]
    assert head.startswith("DEFAULT_OPTIONS\n\nLEVEL               THREAD\n")
    assert "STATES_COLOR\n0   {  0,   0,   0}\n" in head and "\n22  {  0,   0, 255}\n" in head

    cpu_rows = None
    for t, (name, vals) in types.items():
        if t >= HWC_BASE:
            continue    # no corpus case has counters (emu-nosv-hwc is a peer trace)
        assert (file, t) in vocab, f"{case}/{file}.pcf: type {t} ({name}) not in the table"
        e = vocab[(file, t)]
        if t > MARK_BASE:
            continue    # mark types: name and labels come from the trace
        assert name == e["label"], (case, file, t)
        if e["kind"] == "empty":
            assert vals == [], (case, file, t)
        elif e["kind"] == "fixed":
            assert vals == e["values"], (case, file, t)
        elif t == 6:
            assert [v for v, _ in vals] == list(range(1, len(vals) + 1))
            for _, label in vals:
                assert re.fullmatch(r"( CPU \d+\.\d+|vCPU \d+\.\*)", label), label
            cpu_rows = [label for _, label in vals]
        else:
            # may be empty: no task type was created in that trace
            for v, label in vals:
                assert v == type_value(label), (case, file, t, v, label)
    if cpu_rows is not None:
        # each loom: its physical CPUs, then its virtual CPU
        looms = [int(re.search(r"(\d+)\.", r)[1]) for r in cpu_rows]
        assert looms == sorted(looms)
        assert cpu_rows[-1].startswith("vCPU")
        for a, b in zip(cpu_rows, cpu_rows[1:]):
            if a.startswith("vCPU"):
                assert not b.startswith("vCPU")

    # a model's types come all together or not at all
    by_model = defaultdict(set)
    for (f, t), e in vocab.items():
        if f == file and t <= MARK_BASE:
            by_model[e["model"]].add(t)
    present = {t for t in types if t <= MARK_BASE}
    for model, ts in by_model.items():
        assert ts <= present or not (ts & present), (case, file, model, sorted(ts & present))
