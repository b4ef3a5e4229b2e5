# SPDX-License-Identifier: MIT
"""The merged cursor's order of events at equal times: by stream index,
for every reader. ROSS runs are read a whole file at a time (one slot per
file); two files whose records tie in time came out in whatever order
the heap left them (issue 14)."""

import json
import re
import shutil

from weftlib import DATA_DIR, run_weft


def stream_indexes(path):
    """stream path -> index, from `weft info`."""
    out = run_weft("info", path, expect=0).stdout
    return {m.group(2): int(m.group(1))
            for m in re.finditer(r"^\s+\[(\d+)\] (\S+)", out, re.M)}


def test_ross_files_that_tie_come_out_in_stream_order(tmp_path):
    """The same engine samples as a GVT-mode and a real-time-mode file:
    every time is in both, and the GVT file's streams come first."""
    gvt = DATA_DIR / "ross" / "phold-gvt-pekplp" / "np2" / "ross-stats-gvt.bin"
    shutil.copy(gvt, tmp_path / "ross-stats-gvt.bin")
    shutil.copy(gvt, tmp_path / "ross-stats-rt.bin")
    index = stream_indexes(tmp_path)
    assert len(index) == 52
    out = run_weft("dump", "--json", tmp_path, expect=0).stdout
    events = [json.loads(line) for line in out.splitlines()]
    keys = [(e["time"], index[e["stream"]]) for e in events]
    cross_file_ties = [(a, b) for a, b, ea, eb in
                       zip(keys, keys[1:], events, events[1:])
                       if a[0] == b[0] and ea["file"] != eb["file"]]
    assert len(cross_file_ties) > 40
    assert all(a[1] < b[1] for a, b in cross_file_ties)
    # both files whole, and the run read twice gives the same order
    assert len(events) == 2 * len(run_weft("dump", "--json", gvt, expect=0)
                                  .stdout.splitlines())
    assert run_weft("dump", "--json", tmp_path, expect=0).stdout == out
