"""A count or size field that points past the end of its file, in the
readers whose framing depends on it, beyond the Heph and ROSS cases of
their own test files: losing more than the last record is an error (exit
1 from dump, convert and check), a cut last record a warning.

- Pallas `archive.pallas`: a location count past the end left every
  thread of the archive out with a warning and exit 0."""

import shutil
import struct

import pytest

from weftlib import DATA_DIR, run_weft

PALLAS_TRACE = DATA_DIR / "pallas" / "wb_enterleave_f3_n1000_t2_logical" / "trace"


def writable_copy(src, dst):
    shutil.copytree(src, dst)
    for p in dst.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    return dst


# The location count of the archive (2 threads) in archive_0/archive.pallas,
# where the reader names it ("the location count" at byte 56).
LOCATION_COUNT_AT = 56


@pytest.mark.parametrize("command", [["dump"], ["check"],
                                     ["convert", "--to", "chrome"]])
def test_pallas_damaged_archive_is_an_error(tmp_path, command):
    trace = writable_copy(PALLAS_TRACE, tmp_path / "trace")
    archive = trace / "archive_0" / "archive.pallas"
    data = bytearray(archive.read_bytes())
    at = LOCATION_COUNT_AT
    assert struct.unpack_from("<I", data, at)[0] == 2
    struct.pack_into("<I", data, at, 0x7FFFFFFF)
    archive.write_bytes(bytes(data))
    args = command + [trace] + (["-o", tmp_path / "o.json"] if command[0] == "convert"
                                else [])
    proc = run_weft(*args, expect=1)
    out = proc.stdout + proc.stderr
    assert (f"archive.pallas:{at}: error: the location count: expected at most 2 items"
            in out)
    assert "(the archive's threads are left out)" in out
