# SPDX-License-Identifier: MIT
"""weft.open(): the attributes of a trace against what the weft command
says of it, options, closing, context manager, diagnostics as warnings."""

import json
import subprocess
import warnings

import pytest

import weft
from conftest import DATA, all_traces, weft_bin

OVNI = DATA / "ovni" / "v3" / "nosv-parallel-tasks" / "ovni"
ROSS = DATA / "ross" / "phold-gvt-pekplp" / "np2"


def weft_info_json(path):
    r = subprocess.run([weft_bin(), "info", "--json", str(path)], capture_output=True, text=True)
    return json.loads(r.stdout) if r.returncode == 0 and r.stdout.startswith("{") else None


def test_formats_and_version():
    assert weft.formats() == ["ovni", "heph", "ross", "pallas", "otf2"]
    assert weft.version().count(".") == 2
    keys = [o["key"] for o in weft.format_options()]
    assert "ross.kind" in keys
    assert all(o["key"].startswith("ross.") for o in weft.format_options("ross"))


@pytest.mark.parametrize("path", all_traces(), ids=lambda p: str(p.relative_to(DATA)))
def test_streams_match_the_command(path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with weft.open(path) as t:
            assert t.format in weft.formats()
            streams = t.streams
            assert [s["index"] for s in streams] == list(range(len(streams)))
            assert [s["path"] for s in streams] == t.stream_paths
            nodes = t.nodes
            for s in streams:
                node = nodes[s["node"]]
                assert node["stream"] == s["index"] and node["path"] == s["path"]
                assert node["kind"] == s["kind"] and node["metadata"] == s["metadata"]
            for n in nodes:
                assert n["parent"] is None or 0 <= n["parent"] < len(nodes)
            for k in t.schema:
                assert isinstance(k["code"], str) and isinstance(k["fields"], list)
            assert isinstance(t.metadata, dict)


def test_info_json_agrees():
    info = weft_info_json(OVNI)
    with weft.open(OVNI) as t:
        assert t.format == "ovni" and t.layout_version == 3
        if info is not None:
            paths = [s["path"] for s in info.get("streams", [])]
            if paths:
                assert paths == t.stream_paths


def test_heph_attributes(heph_path):
    with weft.open(heph_path) as t:
        assert t.format == "heph"
        assert t.metadata["event_packets"] == 21
        assert t.path == str(heph_path)
        assert len(t.streams) == 6 and t.streams[0]["file"] == "heph_sample.bin.log"
        assert t.start_time == 1610113734118015000
        kinds = {k["code"]: k for k in t.schema}
        assert kinds["Scheduling processes"]["role"] == "interval"


def test_format_options_as_keywords():
    for kwargs in ({"ross_kind": "gvt"}, {"ross.kind": "gvt"}):
        with weft.open(ROSS, **kwargs) as t:
            assert t.format == "ross"
            assert {s["path"].split("/")[0] for s in t.streams} == {"gvt"}
    with pytest.raises(weft.ArgumentError) as e:
        weft.open(ROSS, ross_kind="nonsense")
    assert isinstance(e.value, ValueError) and "ROSS kind" in str(e.value)
    with pytest.raises(weft.ArgumentError):
        weft.open(ROSS, no_such_option=1)
    with weft.open(OVNI, threads=1, stored_order=True) as t:
        assert next(t.events(order="stored"))["time"].size > 0


def test_closed_trace_raises(heph_path):
    t = weft.open(heph_path)
    batches = t.events(batch_size=2)
    next(batches)
    t.close()
    t.close()
    assert t.closed
    for use in (lambda: t.format, lambda: t.streams, lambda: t.codes, lambda: t.to_pandas(),
                lambda: t.events(), lambda: t.start_time, lambda: t.diagnostics):
        with pytest.raises(ValueError, match="closed"):
            use()
    with pytest.raises(ValueError, match="closed"):
        next(batches)
    with pytest.raises(StopIteration):
        next(batches)
    with weft.open(heph_path) as t2:
        pass
    assert t2.closed and "closed" in repr(t2)


def test_everything_has_a_docstring():
    """Every public function, class, method and attribute of the package."""
    missing = []
    for name in weft.__all__:
        obj = getattr(weft, name)
        if callable(obj) and not (obj.__doc__ or "").strip():
            missing.append(name)
    for cls in (weft.Trace, weft.Diagnostic):
        for name in dir(cls):
            if name.startswith("_"):
                continue
            if not (getattr(cls, name).__doc__ or "").strip():
                missing.append(f"{cls.__name__}.{name}")
    assert not missing
