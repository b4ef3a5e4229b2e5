# SPDX-License-Identifier: MIT
"""A count or size field that points past the end of its file, in the
readers whose framing depends on it, beyond the Heph and ROSS cases of
their own test files: losing more than the last record is an error (exit
1 from dump, convert and check), a cut last record a warning.

- Pallas `archive.pallas`: a location count past the end left every
  thread of the archive out with a warning and exit 0;
- ovni `stream.obs` of a stream that was not closed (a program that
  crashed): a jumbo event whose size runs past the end ended the stream
  there with a warning, whatever followed."""

import json
import re
import shutil
import struct

import pytest

from weftlib import DATA_DIR, OVNI_DATA, run_weft

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
                                     ["convert", "-t", "chrome"]])
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


# ---- ovni -------------------------------------------------------------------------

OVNI_TRACE = OVNI_DATA / "v3" / "bench-mix-small" / "ovni"
OVNI_STREAM = "loom.vm.bench/proc.2208/thread.2209"


def unclosed_copy(tmp_path):
    """The trace with the stream of OVNI_STREAM not closed ("finished": 0)
    and its events in stored order (offset, code)."""
    trace = writable_copy(OVNI_TRACE, tmp_path / "ovni")
    meta = trace / OVNI_STREAM / "stream.json"
    meta.write_text(re.sub(r'"finished": *1', '"finished": 0', meta.read_text()))
    events = [json.loads(line) for line in
              run_weft("dump", "--json", "--stored-order", OVNI_TRACE, expect=0)
              .stdout.splitlines()]
    mine = [(e["offset"], e["code"]) for e in events if e["stream"] == OVNI_STREAM]
    return trace, trace / OVNI_STREAM / "stream.obs", mine


@pytest.mark.parametrize("command", [["dump"], ["convert", "-t", "chrome"]])
def test_ovni_wrong_jumbo_size_mid_stream_is_an_error(tmp_path, command):
    trace, obs, mine = unclosed_copy(tmp_path)
    k = next(i for i, (_, code) in enumerate(mine) if code == "VYc" and i > 400)
    at, after = mine[k][0], mine[k + 1][0]
    data = bytearray(obs.read_bytes())
    assert data[at] & 0x10  # a jumbo event: its size follows the header
    struct.pack_into("<I", data, at + 12, 0x7FFFFFFF)
    obs.write_bytes(bytes(data))
    args = command + [trace] + (["-o", tmp_path / "o.json"] if command[0] == "convert"
                                else [])
    proc = run_weft(*args, expect=1)
    assert (f"stream.obs:{at}: error: event VYc needs 2147483663 bytes, only "
            f"{len(data) - at} left in the file, but events start again at byte "
            f"{after}") in proc.stderr


def test_ovni_cut_last_jumbo_is_a_warning(tmp_path):
    """The stream cut inside its jumbo event (a crash while writing it):
    the events before it are read, with a warning (exit 0)."""
    trace, obs, mine = unclosed_copy(tmp_path)
    k = next(i for i, (_, code) in enumerate(mine) if code == "VYc" and i > 400)
    at = mine[k][0]
    obs.write_bytes(obs.read_bytes()[:at + 20])
    proc = run_weft("dump", "--json", "--stored-order", trace, expect=0)
    assert f"stream.obs:{at}: warning: event VYc needs " in proc.stderr
    assert "error" not in proc.stderr
    assert sum(json.loads(line)["stream"] == OVNI_STREAM
               for line in proc.stdout.splitlines()) == k
