# SPDX-License-Identifier: MIT
"""What fuzzing found, on the command line (each input that made a fuzz
target fail is also kept in tests/data/crashers/<target>/ and replayed by
tests/fuzz_replay.sh). These fail under the ASan + UBSan build of the test
suite when the bug is back (UBSan stops the command)."""

import shutil

import pytest

from weftlib import DATA_DIR, run_weft


@pytest.mark.parametrize("trace", ["ovni-sort-unsorted", "ovni-sort-sorted"])
def test_paraver_instants_without_category(tmp_path, trace):
    """instant_cache_key copied from a NULL category (memcpy of 0 bytes
    from NULL: undefined behaviour) for the ovni-sort traces' instants."""
    src = DATA_DIR / "ovni" / "v3" / trace / "ovni"
    proc = run_weft("convert", src, "-t", "paraver", "--raw", "-o", tmp_path / "out")
    assert proc.returncode in (0, 1), proc.stderr
    assert "runtime error" not in proc.stderr
    assert (tmp_path / "out.prv").stat().st_size > 0


@pytest.mark.parametrize("with_events", [False, True])
def test_summary_of_a_mode_file_without_samples(tmp_path, with_events):
    """summary sorted the PEs of a mode file that has none: qsort of a
    NULL array (undefined behaviour); fuzz_ross's first input, empty."""
    (tmp_path / "ross-stats-gvt.bin").write_bytes(b"")
    if with_events:
        shutil.copy(DATA_DIR / "ross" / "phold-evtrace-full" / "np1" /
                    "ross-stats-evtrace.bin", tmp_path)
    proc = run_weft("summary", tmp_path)
    assert proc.returncode in (0, 1), proc.stderr
    assert "runtime error" not in proc.stderr


def test_plot_of_values_as_far_apart_as_doubles_go(tmp_path):
    """A damaged real-time file whose samples span -1e308 to 1e308: the
    axis was 2^1024 wide and its tick loop never ended (fuzz_ross; its
    first byte chose the file name and --resync)."""
    crasher = DATA_DIR / "crashers" / "fuzz_ross" / "plot-axis-2e308-wide"
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "ross-stats-rt.bin").write_bytes(crasher.read_bytes()[1:])
    out = tmp_path / "out.svg"
    proc = run_weft("plot", "--resync", "-o", out, tmp_path / "run", timeout=60)
    assert proc.returncode == 1, proc.stderr  # bytes were skipped: data lost
    assert "runtime error" not in proc.stderr
    svg = out.read_text()
    assert "nan" not in svg and "inf" not in svg
    assert "e+308" in svg  # the axes span the values
