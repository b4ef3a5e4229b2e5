# SPDX-License-Identifier: MIT
"""Trace.convert() (issue 16): the bytes `weft convert` writes, for every
output, with filters and windows; the report; the refusals."""

import subprocess

import pytest

import weft
from conftest import DATA, weft_bin

TRACES = {
    "ovni": DATA / "ovni" / "v3" / "nosv-parallel-tasks" / "ovni",
    "heph": DATA / "heph" / "heph_sample.bin.log",
    "pallas": DATA / "pallas" / "wb_enterleave_f3_n1000_t2_logical" / "trace",
    "ross": DATA / "ross" / "phold-evtrace-full" / "np1",
}
FILES = {"perfetto": [""], "chrome": [""], "paraver": [".prv", ".pcf", ".row"]}


def tree(path):
    """Relative path -> bytes of every file under path (or of the file)."""
    if path.is_file():
        return {"": path.read_bytes()}
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*"))
            if p.is_file()}


def cli_convert(trace, out, *args):
    r = subprocess.run([weft_bin(), "convert", str(trace), "-o", str(out), *args],
                       capture_output=True, text=True, check=False)
    assert r.returncode in (0, 1), r.stderr
    return r


@pytest.mark.parametrize("to", ["perfetto", "chrome", "paraver", "pallas"])
@pytest.mark.parametrize("name", sorted(TRACES))
def test_convert_writes_what_the_command_writes(tmp_path, name, to):
    trace = TRACES[name]
    mine, theirs = tmp_path / "py", tmp_path / "cli"
    with weft.open(trace) as t:
        report = t.convert(mine, to=to)
    cli_convert(trace, theirs, "-t", to)
    assert report["output"] == to
    assert report["selected"] > 0 and not report["data_lost"]
    # an ovni trace whose models are emulated converts to Paraver as a directory
    for suffix in [None] if mine.is_dir() else FILES.get(to, [None]):
        if suffix is None:
            assert tree(mine) == tree(theirs)
        else:
            a = mine.with_name(mine.name + suffix)
            b = theirs.with_name(theirs.name + suffix)
            assert a.read_bytes() == b.read_bytes()


def test_filters_and_window(tmp_path):
    trace = TRACES["ovni"]
    with weft.open(trace) as t:
        start = t.start_time
        report = t.convert(tmp_path / "py.json", codes="VT*", start=start + 10**6,
                           end=start + 5 * 10**6)
    cli_convert(trace, tmp_path / "cli.json", "--event", "VT*", "--from", "+1ms",
                "--to", "+5ms")
    assert (tmp_path / "py.json").read_bytes() == (tmp_path / "cli.json").read_bytes()
    assert 0 < report["selected"] < report["events"]


def test_refusals_leave_nothing(tmp_path):
    out = tmp_path / "out.json"
    with weft.open(TRACES["heph"]) as t:
        t.convert(out)
        first = out.read_bytes()
        with pytest.raises(weft.Error, match="exists"):
            t.convert(out)
        assert out.read_bytes() == first
        t.convert(out, force=True)
        with pytest.raises(weft.Error):
            t.convert(tmp_path / "x", to="svg")
        with pytest.raises(weft.Error):
            t.convert(tmp_path / "y.pftrace", to="perfetto", heph_compat=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]


def test_emulation_options(tmp_path):
    """emulate, all_models, breakdown, ovni_cfg: the bytes of `weft convert`
    with --emulate/--raw, --all-models, --breakdown, --no-ovni-cfg."""
    trace = DATA / "ovni-emu" / "rt-nosv-yield-noisy-l3" / "ovni"
    with weft.open(trace) as t:
        t.convert(tmp_path / "raw", to="paraver", emulate=False)
        t.convert(tmp_path / "emu", to="paraver", emulate=True, breakdown=True,
                  all_models=True, ovni_cfg="")
        with pytest.raises(weft.Error, match="for the emulation"):
            t.convert(tmp_path / "x", to="paraver", emulate=False, breakdown=True)
        with pytest.raises(weft.Error, match="expected a directory of ovni's Paraver views"):
            t.convert(tmp_path / "y", to="paraver", ovni_cfg=tmp_path)
    cli_convert(trace, tmp_path / "raw-cli", "-t", "paraver", "--raw")
    cli_convert(trace, tmp_path / "emu-cli", "-t", "paraver", "--emulate", "--breakdown",
                "--all-models", "--no-ovni-cfg")
    for suffix in FILES["paraver"]:
        assert (tmp_path / ("raw" + suffix)).read_bytes() == \
            (tmp_path / ("raw-cli" + suffix)).read_bytes()
    assert "nosv-breakdown.prv" in tree(tmp_path / "emu")
    assert tree(tmp_path / "emu") == tree(tmp_path / "emu-cli")
    assert not (tmp_path / "x").exists() and not (tmp_path / "y").exists()
