# SPDX-License-Identifier: MIT
"""Errors are exceptions with the file, byte offset and the library's
message; problems that leave a trace readable are diagnostics and
weft.TraceWarning warnings, on opening and while reading; iterators end."""

import json
import re
import shutil
import struct
import subprocess
import warnings

import pytest

import weft
from conftest import DATA, dump_json, weft_bin

HEPH = DATA / "heph" / "heph_sample.bin.log"


def writable_copy(src, dst):
    shutil.copytree(src, dst)
    for p in dst.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    return dst


def test_missing_file(tmp_path):
    missing = tmp_path / "nothing-here"
    with pytest.raises(weft.NotFoundError) as e:
        weft.open(missing)
    assert isinstance(e.value, FileNotFoundError) and isinstance(e.value, weft.Error)
    assert e.value.file == str(missing)
    assert str(e.value) == f"{missing}: no such file or directory"
    assert e.value.offset is None
    assert e.value.message == "no such file or directory"


def test_not_a_trace(tmp_path):
    junk = tmp_path / "junk.bin"
    junk.write_bytes(b"not a trace\n" * 100)
    with pytest.raises(weft.NotFoundError, match="not a trace of any supported format"):
        weft.open(junk)


def test_corrupt_file_names_file_and_offset(tmp_path):
    """A Heph file whose first packet has no magic: FormatError at byte 0,
    the message the weft command prints."""
    junk = tmp_path / "junk.bin"
    junk.write_bytes(b"\x07\xa1\x9b\xdd" * 64)
    with pytest.raises(weft.FormatError) as e:
        weft.open(junk, format="heph")
    assert not isinstance(e.value, OSError)
    assert e.value.file == "junk.bin" and e.value.offset == 0
    assert e.value.message.startswith("expected a packet magic")
    r = subprocess.run([weft_bin(), "dump", "--format", "heph", str(junk)],
                       capture_output=True, text=True)
    assert r.returncode != 0 and e.value.message in r.stderr


def test_truncated_file_is_a_warning_with_offset(tmp_path):
    """A Heph trace cut inside a packet header: the packets before it are
    read, and the warning (file, offset) is issued when the trace is opened."""
    cut = tmp_path / "cut.bin.log"
    cut.write_bytes(HEPH.read_bytes()[:100])
    with pytest.warns(weft.TraceWarning) as w:
        t = weft.open(cut)
    with t:
        d = [x for x in t.diagnostics if x.severity == "warning"]
        assert len(d) == 1 and (d[0].file, d[0].offset) == ("cut.bin.log", 94)
        assert str(d[0]).startswith("cut.bin.log:94: warning: expected a packet header")
        assert [str(x.message) for x in w] == [str(d[0])]
        assert len(t.to_pandas()) == len(dump_json(cut))


def test_damaged_pallas_archive_warns_on_open(tmp_path):
    """A location count past the end of archive.pallas: an error
    diagnostic (the archive's threads are left out), issued as a warning."""
    trace = writable_copy(DATA / "pallas" / "wb_enterleave_f3_n1000_t2_logical" / "trace",
                          tmp_path / "trace")
    archive = trace / "archive_0" / "archive.pallas"
    data = bytearray(archive.read_bytes())
    struct.pack_into("<I", data, 56, 0x7FFFFFFF)
    archive.write_bytes(bytes(data))
    with pytest.warns(weft.TraceWarning, match="archive.pallas:56: error: the location count"):
        t = weft.open(trace)
    with t:
        assert any(d.severity == "error" and d.offset == 56 for d in t.diagnostics)


def test_warning_while_reading(tmp_path):
    """An unclosed ovni stream cut inside a jumbo event: the events before
    it come, and the warning is issued while the events are read."""
    trace = writable_copy(DATA / "ovni" / "v3" / "bench-mix-small" / "ovni", tmp_path / "ovni")
    stream = "loom.vm.bench/proc.2208/thread.2209"
    meta = trace / stream / "stream.json"
    meta.write_text(re.sub(r'"finished": *1', '"finished": 0', meta.read_text()))
    events = [json.loads(x) for x in dump_json(trace, "--stored-order")]
    mine = [(e["offset"], e["code"]) for e in events if e["stream"] == stream]
    k = next(i for i, (_, code) in enumerate(mine) if code == "VYc" and i > 400)
    at = mine[k][0]
    obs = trace / stream / "stream.obs"
    obs.write_bytes(obs.read_bytes()[:at + 20])
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        with weft.open(trace) as t:
            opened = [str(d) for d in t.diagnostics]
            assert len(opened) == 1 and "the stream was not closed" in opened[0]
            df = t.to_pandas(order="stored")
            assert (df["stream"] == stream).sum() == k
            texts = [str(x.message) for x in w if issubclass(x.category, weft.TraceWarning)]
            assert len(texts) == 2 and f"stream.obs:{at}: warning: event VYc needs " in texts[1]
            assert [str(d) for d in t.diagnostics] == texts


def test_iterators_end(tmp_path):
    with weft.open(HEPH) as t:
        it = t.events(batch_size=4)
        sizes = [len(b["time"]) for b in it]
        assert sizes == [4, 4, 4, 4, 4, 1]
        with pytest.raises(StopIteration):
            next(it)
        assert list(t.events(codes="no such code")) == []
        assert list(t.events(start=2**63)) == []
        for _ in t.events():
            break
        assert sum(len(b["time"]) for b in t.events()) == 21


def test_bad_arguments():
    with weft.open(HEPH) as t:
        with pytest.raises(ValueError, match="order"):
            t.events(order="sideways")
        with pytest.raises(ValueError, match="batch_size"):
            t.events(batch_size=0)
        with pytest.raises(ValueError, match="start"):
            t.events(start=-1)
        with pytest.raises(TypeError):
            t.to_pandas(fields="cpu")
    with pytest.raises(weft.ArgumentError, match="unknown format"):
        weft.open(HEPH, format="csv")


@pytest.mark.parametrize("cut", [1, 7, 64, 1000, 2000])
def test_any_truncation_never_crashes(tmp_path, cut):
    """Every prefix length of a trace file: an exception of weft or a
    trace whose iterators end."""
    p = tmp_path / "t.bin.log"
    p.write_bytes(HEPH.read_bytes()[:cut])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            t = weft.open(p, format="heph")
        except weft.Error as e:
            assert e.file is not None
            return
        with t:
            assert len(t.to_pandas(fields=True)) <= 21


def crasher_inputs():
    """The inputs the fuzz targets once crashed on (tests/data/crashers)."""
    return sorted(p for p in (DATA / "crashers").rglob("*") if p.is_file())


@pytest.mark.parametrize("fmt", [None, "ovni", "heph", "ross", "pallas"])
def test_fuzz_crashers_raise_or_read(tmp_path, fmt):
    """Every input a fuzz target crashed on, as every format: a weft.Error,
    or a trace whose events and fields are read to the end."""
    inputs = crasher_inputs()
    assert inputs
    for p in inputs:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                with weft.open(p, format=fmt) as t:
                    t.streams, t.nodes, t.schema, t.diagnostics
                    t.to_pandas(fields=True, batch_size=64)
            except weft.Error as e:
                assert e.message


HOSTILE = ["heph/heph_sample.bin.log", "ovni/v3/nosv-parallel-tasks/ovni",
           "pallas/wb_generic_f2_n20_t4_logical/trace", "ross/phold-gvt-pekplp/np2",
           "ross/im-everything/np1"]


@pytest.mark.parametrize("rel", HOSTILE)
def test_every_file_cut_or_garbled(tmp_path, rel):
    """Each file of a trace cut at several places, or with bytes flipped in
    its middle: weft.Error, or a trace read to the end (warnings allowed),
    never a crash or a hang."""
    src = DATA / rel
    files = [src] if src.is_file() else sorted(p for p in src.rglob("*") if p.is_file())
    for victim in files:
        data = victim.read_bytes()
        variants = [data[:n] for n in sorted({0, 1, len(data) // 3, len(data) // 2,
                                              max(len(data) - 1, 0)})]
        if len(data) > 16:
            mid = len(data) // 2
            variants.append(data[:mid] + bytes(b ^ 0xA5 for b in data[mid:mid + 8]) +
                            data[mid + 8:])
        for variant in variants:
            case = tmp_path / "case"
            if case.exists():
                shutil.rmtree(case)
            if src.is_file():
                case.mkdir()
                target = case / src.name
                trace = target
            else:
                writable_copy(src, case)
                target = case / victim.relative_to(src)
                trace = case
            target.write_bytes(variant)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    with weft.open(trace) as t:
                        t.streams, t.nodes, t.schema, t.diagnostics
                        t.to_pandas(fields=True, batch_size=50)
                except weft.Error as e:
                    assert e.message
