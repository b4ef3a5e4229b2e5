# SPDX-License-Identifier: MIT
"""weft.HephWriter (docs/python.md, "Writing traces"): traces written from
Python read back, through weft.open() and `weft dump --json`, with every
event and every attribute and its type; a trace of tests/data rewritten
event by event; the fast path writes the bytes of the slow one; errors."""

import json
import os
import re
import threading

import numpy as np
import pytest

import weft
from conftest import DATA, REPO, dump_json
from writerlib import assert_same_events, module_events

EPOCH = 1_600_000_000_000_000_000


def write_sample(path):
    """Events of every attribute type on two streams and substreams; the
    events as weft reads them."""
    expected = []
    with weft.HephWriter(path, epoch=EPOCH) as w:
        s0, s1 = w.stream(0), w.stream(7)
        s0.event("plain", 10)
        expected.append(("plain", 10, 10, 0, 0, {}))
        attrs = {"u": 42, "neg": -5, "big": 2**64 - 1, "small": -2**63, "f": 0.1,
                 "text": "héllo", "empty": "", "ul": [1, 2, 2**64 - 1], "il": (-1, 5),
                 "fl": [1.5, -0.25], "sl": ["a", "", "ü"], "none": [],
                 "npu": np.uint32(7), "npi": np.int16(3), "npf": np.float32(0.5),
                 "au": np.array([1, 2], dtype=np.uint8), "ai": np.array([-3], dtype=np.int64),
                 "af": np.array([2.5]), "as": np.array(["x", "yz"]),
                 "npl": [np.int8(-3), 4, np.uint64(2**63 - 1)], "obj": np.array([1, -2], dtype=object)}
        s0.event("all types", 20, 35, 3, **attrs)
        read = {k: [x for x in v] if isinstance(v, (list, tuple, np.ndarray)) else v
                for k, v in attrs.items()}
        read = {k: (v.item() if isinstance(v, np.generic) else
                    [x.item() if isinstance(x, np.generic) else x for x in v]
                    if isinstance(v, list) else v) for k, v in read.items()}
        expected.append(("all types", 20, 35, 0, 3, read))
        s1.event("end named", 40, 50, 0, {"end": 1, "substream": "s", "name": "n"})
        expected.append(("end named", 40, 50, 7, 0, {"end": 1, "substream": "s", "name": "n"}))
        s1.event("kw", 60, end=70, substream=2, name="n", start=-1)
        expected.append(("kw", 60, 70, 7, 2, {"name": "n", "start": -1}))
    return [{"time": EPOCH + a, "end": EPOCH + b, "stream": "stream.%d/substream.%d" % (s, u),
             "code": name, "fields": f} for name, a, b, s, u, f in expected]


def test_every_event_and_attribute_comes_back(tmp_path):
    path = tmp_path / "t.bin.log"
    expected = write_sample(path)
    assert sorted(os.listdir(tmp_path)) == ["t.bin.log"]
    assert_same_events(path, expected)


def test_the_comparison_can_fail(tmp_path):
    path = tmp_path / "t.bin.log"
    expected = write_sample(path)
    expected[1]["fields"]["u"] = 43
    with pytest.raises(AssertionError):
        assert_same_events(path, expected)


def test_attribute_types(tmp_path):
    """ints >= 0 are u64, negative ones i64, numpy integers keep their
    signedness, floats f64; lists and arrays by their elements."""
    path = tmp_path / "t.bin.log"
    write_sample(path)
    with weft.open(path) as t:
        fields = {f["name"]: (f["type"], f["array"]) for s in t.schema for f in s["fields"]}
        assert t.metadata["epoch"] == EPOCH
    assert fields == {
        "u": ("u64", False), "neg": ("i64", False), "big": ("u64", False),
        "small": ("i64", False), "f": ("f64", False), "text": ("str", False),
        "empty": ("str", False), "ul": ("u64", True), "il": ("i64", True),
        "fl": ("f64", True), "sl": ("str", True), "none": ("u64", True),
        "npu": ("u64", False), "npi": ("i64", False), "npf": ("f64", False),
        "au": ("u64", True), "ai": ("i64", True), "af": ("f64", True), "as": ("str", True),
        "npl": ("i64", True), "obj": ("i64", True),
        "end": ("u64", False), "substream": ("str", False), "name": ("str", False),
        "start": ("i64", False)}


def test_fast_path_writes_the_same_bytes(tmp_path):
    n = 1000
    rng = np.random.default_rng(1)
    starts = np.sort(rng.integers(0, 10**9, n)).astype(np.uint64)
    ends = starts + rng.integers(0, 1000, n).astype(np.uint64)
    subs = rng.integers(0, 3, n)
    names = np.array(["a", "bé", "c"])[rng.integers(0, 3, n)]
    count = np.arange(n, dtype=np.uint32)
    delta = rng.integers(-5, 5, n)
    ratio = rng.random(n)
    with weft.HephWriter(tmp_path / "slow", epoch=5) as w:
        s = w.stream(1)
        for i in range(n):
            s.event(str(names[i]), int(starts[i]), int(ends[i]), int(subs[i]),
                    count=int(count[i]), delta=np.int64(delta[i]), ratio=float(ratio[i]))
    with weft.HephWriter(tmp_path / "fast", epoch=5) as w:
        w.stream(1).events(names, starts, ends, subs, count=count, delta=delta, ratio=ratio)
    with weft.HephWriter(tmp_path / "list", epoch=5) as w:
        w.stream(1).events(list(names), list(starts), ends, subs, count=count, delta=delta,
                           ratio=ratio)
    slow = (tmp_path / "slow").read_bytes()
    assert (tmp_path / "fast").read_bytes() == slow
    assert (tmp_path / "list").read_bytes() == slow


def test_fast_path_names(tmp_path):
    """One name for all, a pandas Categorical, a category Series."""
    import pandas as pd
    cat = pd.Categorical(["x", "y", "x"])
    with weft.HephWriter(tmp_path / "t", epoch=0) as w:
        s = w.stream(0)
        s.events("same", [1, 2])
        s.events(cat, [3, 4, 5])
        s.events(pd.Series(cat), [6, 7, 8], [9, 9, 9])
    got = [(e["code"], e["time"], e["end"]) for e in module_events(tmp_path / "t")]
    assert got == [("same", 1, 1), ("same", 2, 2), ("x", 3, 3), ("y", 4, 4), ("x", 5, 5),
                   ("x", 6, 9), ("y", 7, 9), ("x", 8, 9)]


def test_fast_path_columns_with_missing_values(tmp_path):
    """Columns of texts, masked arrays and pandas nullable columns: a
    missing value leaves the attribute out of that event, as event()
    without it."""
    import pandas as pd
    n = 6
    texts = np.array(["a", None, "", "é", None, "z"], dtype=object)
    masked = np.ma.masked_array(np.arange(n, dtype=np.int32), [0, 1, 0, 0, 1, 0])
    nullable = pd.array([1, None, 2**64 - 1, None, 0, 5], dtype="UInt64")
    floats = pd.Series([0.5, np.nan, 1.5, None, 2.5, 3.5])
    cols = {"t": texts, "m": masked, "u": nullable, "f": floats, "s": np.array(["x"] * n)}
    with weft.HephWriter(tmp_path / "slow") as w:
        for i in range(n):
            attrs = {"t": texts[i], "m": None if masked.mask[i] else np.int64(masked[i]),
                     "u": None if nullable[i] is pd.NA else int(nullable[i]),
                     "f": None if np.isnan(floats[i]) else floats[i], "s": "x"}
            w.stream(0).event("e", i, **{k: v for k, v in attrs.items() if v is not None})
    with weft.HephWriter(tmp_path / "fast") as w:
        w.stream(0).events("e", np.arange(n), **cols)
    assert (tmp_path / "fast").read_bytes() == (tmp_path / "slow").read_bytes()
    with weft.HephWriter(tmp_path / "bad") as w:
        for bad in (np.array([True] * n), np.array([1, "a", None, 2, 3, 4], dtype=object),
                    (np.arange(n), np.zeros(n))):
            with pytest.raises(TypeError, match="attribute c"):
                w.stream(0).events("e", np.arange(n), c=bad)
        with pytest.raises(ValueError, match="attribute c"):
            w.stream(0).events("e", np.arange(n), c=np.arange(n + 1))


def test_rewrite_through_the_fast_path(tmp_path):
    """The columns of to_pandas(fields=True), one events() call per
    stream: the same events as the trace read."""
    src = DATA / "heph" / "heph_sample_compat.bin.log"
    with weft.open(src) as t:
        epoch = t.metadata.get("epoch")
        df = t.to_pandas(fields=True)
    fields = [c for c in df.columns if c not in ("time", "end", "stream", "code", "offset",
                                                 "depth", "parent")]
    ids = df["stream"].astype(str).str.extract(r"stream\.(\d+)/substream\.(\d+)").astype(int)
    with weft.HephWriter(tmp_path / "copy", epoch=epoch) as w:
        for stream_id, rows in df.groupby(ids[0].to_numpy()):
            w.stream(int(stream_id)).events(
                rows["code"].astype(str).to_numpy(), rows["time"].to_numpy() - epoch,
                rows["end"].to_numpy() - epoch, ids[1].to_numpy()[rows.index],
                **{f: rows[f] for f in fields if rows[f].notna().any()})
    assert_same_events(tmp_path / "copy", module_events(src))


def typed(value, ftype, array):
    """A field value read from a trace with its Heph type, for the writer."""
    kinds = {"u64": np.uint64, "i64": np.int64, "f64": np.float64}
    if ftype == "str":
        return value
    if array:
        return np.array(value, dtype=kinds[ftype])
    return kinds[ftype](value)


@pytest.mark.parametrize("name", ["heph_sample.bin.log", "edge_no_epoch.bin.log"])
def test_rewrite_a_trace_of_tests_data(tmp_path, name):
    """Read with weft.open(...).to_pandas(fields=True), written back event
    by event with the attributes' types, read again: the same events."""
    src = DATA / "heph" / name
    with weft.open(src, stored_order=True) as t:
        epoch = t.metadata.get("epoch")
        types = {f["name"]: (f["type"], f["array"]) for s in t.schema for f in s["fields"]}
        df = t.to_pandas(fields=True)
    fields = [c for c in df.columns if c in types]
    out = tmp_path / name
    with weft.HephWriter(out, epoch=epoch) as w:
        for i in range(len(df)):
            m = re.fullmatch(r"stream\.(\d+)/substream\.(\d+)", str(df["stream"].iat[i]))
            attrs = {}
            for f in fields:
                v = df[f].iat[i]
                if v is not None and v is not __import__("pandas").NA and \
                        not (isinstance(v, float) and np.isnan(v)):
                    attrs[f] = typed(v, *types[f])
            base = epoch or 0
            w.stream(int(m[1])).event(str(df["code"].iat[i]), int(df["time"].iat[i]) - base,
                                      int(df["end"].iat[i]) - base, int(m[2]), attrs)
    assert len(df) > 0
    assert_same_events(out, module_events(src))
    with weft.open(out) as t:
        assert t.metadata.get("epoch") == epoch


@pytest.mark.parametrize("name", ["heph_sample.bin.log", "heph_sample_compat.bin.log",
                                  "edge_no_epoch.bin.log", "edge_epoch_only.bin.log"])
def test_rewrite_gives_the_bytes_of_heph(tmp_path, name):
    """Heph's sample traces (written by Heph's runtime, docs/heph-writer.md)
    rewritten from `weft dump --json` in file order, each attribute with
    its type from the schema, each event flushed at once so that the
    packets of the streams interleave as in the file: the same bytes."""
    src = DATA / "heph" / name
    with weft.open(src) as t:
        epoch = t.metadata.get("epoch")
        types = {f["name"]: (f["type"], f["array"]) for s in t.schema for f in s["fields"]}
    events = sorted((json.loads(line) for line in dump_json(src)), key=lambda e: e["offset"])
    out = tmp_path / name
    with weft.HephWriter(out, epoch=epoch) as w:
        for e in events:
            m = re.fullmatch(r"stream\.(\d+)/substream\.(\d+)", e["stream"])
            attrs = {k: typed(v, *types[k]) for k, v in e["fields"].items()}
            s = w.stream(int(m[1]))
            s.event(e["code"], e["time"] - (epoch or 0), e.get("end", e["time"]) - (epoch or 0),
                    int(m[2]), attrs)
            s.flush()
    assert out.read_bytes() == src.read_bytes()


def test_counter_and_flush(tmp_path):
    path = tmp_path / "t"
    with weft.HephWriter(path) as w:
        s = w.stream(2)
        assert s.counter == 0 and s.stream_id == 2 and w.stream(2) is s
        s.event("a", 1)
        assert s.counter == 1
        s.counter = 2**32 - 1
        s.event("b", 2)
        assert s.counter == 0
        tmp = tmp_path / "t.tmp"
        assert tmp.stat().st_size == 0
        s.flush()
        assert tmp.stat().st_size > 0 and not path.exists()
    assert path.exists() and not tmp.exists()


def test_bad_attribute_types_name_the_attribute(tmp_path):
    with weft.HephWriter(tmp_path / "t") as w:
        s = w.stream(0)
        for bad in (True, np.bool_(False), {"a": 1}, None, [1, "a"], [True], b"x",
                    np.zeros((2, 2)), np.array([True])):
            with pytest.raises(TypeError, match="attribute flag"):
                s.event("e", 1, flag=bad)
        with pytest.raises(OverflowError, match="attribute big"):
            s.event("e", 1, big=2**64)
        with pytest.raises(OverflowError, match="attribute small"):
            s.event("e", 1, small=-2**63 - 1)
        with pytest.raises(OverflowError, match="attribute mixed"):
            s.event("e", 1, mixed=[-1, 2**63])
        with pytest.raises(TypeError):
            s.event(5, 1)
        with pytest.raises(TypeError, match="start"):
            s.event("e", True)
        with pytest.raises(OverflowError, match="start"):
            s.event("e", -1)
        with pytest.raises(weft.ArgumentError, match="before it starts"):
            s.event("e", 10, 5)
        with pytest.raises(weft.ArgumentError, match="65535") as e:
            s.event("x" * 70000, 1)
        assert e.value.status and e.value.code < 0
        with pytest.raises(TypeError, match="attribute col"):
            s.events("e", [1, 2], col=np.array([b"a", b"b"]))
        with pytest.raises(weft.ArgumentError, match="event 1 ends"):
            s.events("e", [1, 2], [1, 1])
        with pytest.raises(ValueError, match="1 names for 2 events"):
            s.events(["a"], [1, 2])
        with pytest.raises(OverflowError, match="starts"):
            s.events("e", np.array([1, -1]))
        with pytest.raises(TypeError, match="starts"):
            s.events("e", np.array([1.5]))
        s.event("kept", 3)
    # nothing of a refused event was written
    assert [e["code"] for e in module_events(tmp_path / "t")] == ["kept"]


def test_write_after_close(tmp_path):
    w = weft.HephWriter(tmp_path / "t")
    s = w.stream(0)
    w.close()
    assert w.closed
    w.close()  # harmless
    for call in (lambda: s.event("e", 1), lambda: s.flush(), lambda: s.counter,
                 lambda: w.stream(1), lambda: s.events("e", [1])):
        with pytest.raises(weft.Error, match="closed"):
            call()


def test_missing_directory_is_not_found(tmp_path):
    """The library's ENOENT: weft.NotFoundError, a FileNotFoundError (as
    Python's open() raises), naming the file."""
    path = tmp_path / "no" / "t.bin.log"
    with pytest.raises(weft.NotFoundError) as e:
        weft.HephWriter(path)
    assert isinstance(e.value, FileNotFoundError)
    assert e.value.file == str(path) + ".tmp"
    assert not (tmp_path / "no").exists()


def test_unwritable_name_is_an_io_error(tmp_path):
    path = tmp_path / ("x" * 300)  # longer than a file name may be
    with pytest.raises(weft.IOError) as e:
        weft.HephWriter(path)
    assert isinstance(e.value, OSError) and e.value.file == str(path) + ".tmp"


def test_existing_trace_is_kept_unless_replace(tmp_path):
    path = tmp_path / "t"
    path.write_bytes(b"old")
    with pytest.raises(weft.Error, match="exists"):
        weft.HephWriter(path)
    assert path.read_bytes() == b"old"
    with weft.HephWriter(path, replace=True, sync=True) as w:
        w.stream(0).event("new", 1)
    assert [e["code"] for e in module_events(path)] == ["new"]


def test_exception_inside_with_leaves_no_file(tmp_path):
    path = tmp_path / "t"
    with pytest.raises(KeyError):
        with weft.HephWriter(path) as w:
            w.stream(0).event("e", 1)
            w.stream(0).flush()
            assert (tmp_path / "t.tmp").exists()
            raise KeyError("stop")
    assert os.listdir(tmp_path) == []
    w.discard()  # harmless
    with pytest.raises(weft.Error, match="closed"):
        w.stream(0).event("e", 2)


def test_a_second_thread_is_refused_while_busy(tmp_path):
    """While events() writes without the GIL, another thread's call is
    refused (RuntimeError), as weft.Trace does."""
    n = 2_000_000
    starts = np.arange(n, dtype=np.uint64)
    with weft.HephWriter(tmp_path / "t", buffer_size=256) as w:
        s = w.stream(0)
        refused = []
        done = threading.Event()

        def other():
            while not done.is_set():
                try:
                    w.stream(0).event("other", 1)
                except RuntimeError as e:
                    refused.append(str(e))
                    return

        t = threading.Thread(target=other)
        t.start()
        s.events("many", starts)
        done.set()
        t.join()
    assert refused and "another thread" in refused[0]


def test_docs_examples_run(tmp_path, monkeypatch):
    """The code blocks of docs/python.md, "Writing traces", run as written."""
    text = (REPO / "docs" / "python.md").read_text()
    section = text.split("## Writing traces", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    assert len(blocks) >= 2
    monkeypatch.chdir(tmp_path)
    for code in blocks:
        exec(compile(code, "docs/python.md", "exec"), {})
    assert (tmp_path / "run.bin.log").exists() and (tmp_path / "ring" / "main.pallas").exists()
