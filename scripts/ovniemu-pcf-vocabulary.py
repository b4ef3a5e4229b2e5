#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Writes the Paraver vocabulary of ovniemu (ovni 1.14.0) as a TSV: the union
of the EVENT_TYPE blocks of every `ovniemu/{thread,cpu}.pcf` golden of the
ovniemu reference corpus (../shared/refdata/ovni-emu, one directory per case).

    ovniemu-pcf-vocabulary.py CORPUS_DIR > tests/data/ovni-emu/pcf-vocabulary.tsv

Columns: type, file (thread or cpu), label (the type's name in the .pcf,
trailing blanks kept), value, value_label, model. One row per value of a
type whose VALUES list is the same in every .pcf that declares it; a type
declared with an empty VALUES list gets one row with value and value_label
"-"; a type whose VALUES differ between traces (CPU affinity, task types,
OpenMP labels) gets one row with value "*" and value_label "per-trace".
Mark types (ovni's mark API: type 100 + the mark type, named by the trace)
get label "per-trace" too. model = the one model that is enabled (listed in
ovniemu.log) in exactly the cases whose .pcf declares the type.
The table is explained in docs/emulation.md; tests/python/test_emu_vocabulary.py
checks it against copies of some goldens.
"""

import collections
import re
import sys
from pathlib import Path

MARK_BASE = 100  # PRV type of mark type N is MARK_BASE + N


def parse_pcf(text):
    """{type: (label, [(value, label), ...])} in file order."""
    types = {}
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        if lines[i] != "EVENT_TYPE":
            i += 1
            continue
        i += 1
        ids = []
        while i < len(lines) and re.match(r"^0 \d+ ", lines[i]):
            # "0 %-10d %s": the name starts after the padded type and one blank
            m = re.match(r"^0 (\d+) ", lines[i])
            ids.append((int(m[1]), lines[i][2 + max(len(m[1]), 10) + 1:]))
            i += 1
        vals = []
        if i < len(lines) and lines[i] == "VALUES":
            i += 1
            while i < len(lines) and lines[i].strip():
                # "%-4d %s": a label may start with blanks (" CPU 0.0")
                m = re.match(r"^(-?\d+) ", lines[i])
                vals.append((int(m[1]), lines[i][max(len(m[1]), 4) + 1:]))
                i += 1
        for t, label in ids:
            types[t] = (label, vals)
    return types


def enabled_models(log_text):
    return set(re.findall(r"INFO:\s+(\w+) [\d.]+ '.' \(\d+ events\)", log_text))


def main():
    root = Path(sys.argv[1])
    seen = collections.defaultdict(list)      # (file, type) -> [(case, label, values)]
    models = {"thread": {}, "cpu": {}}        # file -> case -> enabled models
    for case in sorted(p for p in root.iterdir() if p.is_dir()):
        for f in ("thread", "cpu"):
            pcf = case / "ovniemu" / f"{f}.pcf"
            if not pcf.exists() or pcf.stat().st_size == 0:
                continue
            models[f][case.name] = enabled_models((case / "ovniemu" / "ovniemu.log").read_text())
            for t, (label, vals) in parse_pcf(pcf.read_text()).items():
                seen[(f, t)].append((case.name, label, tuple(vals)))

    print("type\tfile\tlabel\tvalue\tvalue_label\tmodel")
    for (f, t) in sorted(seen, key=lambda k: (k[1], k[0] != "thread")):
        ent = seen[(f, t)]
        have = {e[0] for e in ent}
        cands = [m for m in set.intersection(*(models[f][c] for c in have))
                 if all((m in models[f][c]) == (c in have) for c in models[f])]
        model = ",".join(sorted(cands)) if cands else "?"
        labels = {e[1] for e in ent}
        valsets = {e[2] for e in ent}
        if t > MARK_BASE:
            print(f"{t}\t{f}\tper-trace\t*\tper-trace\tovni")
            continue
        assert len(labels) == 1, (f, t, labels)
        label = labels.pop()
        if len(valsets) > 1:
            print(f"{t}\t{f}\t{label}\t*\tper-trace\t{model}")
            continue
        vals = valsets.pop()
        if not vals:
            print(f"{t}\t{f}\t{label}\t-\t-\t{model}")
        for v, vl in vals:
            print(f"{t}\t{f}\t{label}\t{v}\t{vl}\t{model}")


if __name__ == "__main__":
    main()
