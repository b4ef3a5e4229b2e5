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
    proc = run_weft("convert", src, "--to", "paraver", "-o", tmp_path / "out")
    assert proc.returncode in (0, 1), proc.stderr
    assert "runtime error" not in proc.stderr
    assert (tmp_path / "out.prv").stat().st_size > 0
