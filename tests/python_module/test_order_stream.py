# SPDX-License-Identifier: MIT
"""order="stream": each selected stream in turn, its events as the merged
cursor gives them (the same events, the same per-stream order), against
`weft dump --stream` of each stream."""

import json
import warnings

import numpy as np
import pytest

import weft
from conftest import DATA, all_traces, dump_json

TRACES = all_traces()
IDS = [str(p.relative_to(DATA)) for p in TRACES]
COLUMNS = ("time", "end", "offset", "depth", "parent")


def frame(path, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with weft.open(path) as t:
            return t.to_pandas(**kwargs)


@pytest.mark.parametrize("path", TRACES, ids=IDS)
def test_streams_one_after_another(path):
    merged = frame(path, fields=True)
    by_stream = frame(path, order="stream", fields=True)
    assert len(by_stream) == len(merged)
    codes = by_stream["stream"].cat.codes.to_numpy()
    assert np.all(np.diff(codes) >= 0), "streams in index order, each once"
    for s in by_stream["stream"].cat.categories:
        ours = by_stream[by_stream["stream"] == s]
        theirs = merged[merged["stream"] == s]
        assert list(ours["code"].astype(str)) == list(theirs["code"].astype(str)), s
        for k in COLUMNS:
            assert np.array_equal(ours[k].to_numpy(), theirs[k].to_numpy()), (s, k)
        for k in set(merged.columns) - set(COLUMNS) - {"stream", "code"}:
            a = ours[k].astype(object).where(ours[k].notna(), None).tolist()
            b = theirs[k].astype(object).where(theirs[k].notna(), None).tolist()
            assert a == b, (s, k)


OVNI = DATA / "ovni" / "v3" / "mpi-func-4procs" / "ovni"


def test_each_stream_is_dump_stream():
    with weft.open(OVNI) as t:
        paths = t.stream_paths
    df = frame(OVNI, order="stream", streams="*proc.2192*", codes="M*")
    expected = []
    for p in paths:
        if "proc.2192" in p:
            expected += [json.loads(x) for x in dump_json(OVNI, "--stream", p, "--mcv", "M*")]
    assert len(expected) > 0
    assert [(e["time"], e["stream"], e["code"]) for e in expected] == \
        list(zip(df["time"].tolist(), df["stream"].astype(str), df["code"].astype(str)))


def test_nothing_selected_and_windows():
    assert len(frame(OVNI, order="stream", streams="no-such-stream")) == 0
    with weft.open(OVNI) as t:
        assert list(t.events(order="stream", streams="no-such-stream")) == []
    all_times = frame(OVNI)["time"].to_numpy()
    lo, hi = int(all_times[100]), int(all_times[200])
    df = frame(OVNI, order="stream", start=lo, end=hi)
    assert sorted(df["time"].tolist()) == \
        all_times[(all_times >= lo) & (all_times <= hi)].tolist()


def test_bad_order_names_the_choices():
    with weft.open(OVNI) as t:
        with pytest.raises(ValueError, match='"stream"'):
            t.events(order="sideways")


def test_closing_mid_way_ends_the_iterator():
    t = weft.open(OVNI)
    it = t.events(order="stream", batch_size=10)
    next(it)
    t.close()
    with pytest.raises(ValueError, match="closed"):
        next(it)


# ---- threads: the same batches' events, read by several threads ----------------------------

def columns_of(batches, trace):
    """The batches joined: each column, and the codes as text."""
    out = {k: [] for k in ("time", "end", "stream", "code", "offset", "depth", "parent")}
    for b in batches:
        for k in out:
            out[k].append(b[k])
    out = {k: np.concatenate(v) if v else np.empty(0) for k, v in out.items()}
    out["code"] = [trace.codes[c] for c in out["code"]]
    return out


@pytest.mark.parametrize("path", TRACES, ids=IDS)
@pytest.mark.parametrize("threads", [2, 3])
def test_threads_give_the_same_events(path, threads):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with weft.open(path) as t:
            one = columns_of(t.events(order="stream", batch_size=100), t)
            diags_one = [str(d) for d in t.diagnostics]
        with weft.open(path) as t:
            batches = list(t.events(order="stream", batch_size=100, threads=threads))
            for b in batches:
                assert 0 < len(b["time"]) <= 100
                assert len(set(b["stream"].tolist())) == 1, "a batch holds one stream's events"
            # each stream's batches in order, the streams interleaved: put them back in order
            batches.sort(key=lambda b: int(b["stream"][0]))  # stable
            many = columns_of(batches, t)
            diags_many = [str(d) for d in t.diagnostics]
        with weft.open(path) as t:
            frame = t.to_pandas(order="stream", threads=threads)
    assert one["code"] == many["code"] == list(frame["code"].astype(str))
    for k in ("time", "end", "stream", "offset", "depth", "parent"):
        assert np.array_equal(one[k], many[k]), k
        if k != "stream":
            assert np.array_equal(one[k], frame[k].to_numpy()), k
    assert sorted(diags_one) == sorted(diags_many)


def test_threads_with_filters_and_pandas():
    with weft.open(OVNI) as t:
        expected = t.to_pandas(order="stream", streams="*proc.2192*", codes="M*")
        got = t.to_pandas(order="stream", streams="*proc.2192*", codes="M*", threads=2)
        assert len(got) > 0
        for k in ("time", "offset"):
            assert np.array_equal(expected[k].to_numpy(), got[k].to_numpy())
        assert list(expected["code"].astype(str)) == list(got["code"].astype(str))
        assert list(t.events(order="stream", streams="none", threads=2)) == []


def test_threads_need_stream_order_and_no_fields():
    with weft.open(OVNI) as t:
        with pytest.raises(ValueError, match="order=\"stream\""):
            t.events(threads=2)
        with pytest.raises(ValueError, match="fields"):
            t.to_pandas(order="stream", fields=True, threads=2)
        with pytest.raises(ValueError, match="threads"):
            t.events(order="stream", threads=0)


def test_threads_stop_when_the_loop_stops_or_the_trace_closes():
    with weft.open(OVNI) as t:
        for _ in t.events(order="stream", batch_size=5, threads=2):
            break  # the readers wait on full queues: they must be stopped and joined
        it = t.events(order="stream", batch_size=5, threads=2)
        next(it)
        del it
        assert len(t.to_pandas()) > 0
    t = weft.open(OVNI)
    it = t.events(order="stream", batch_size=5, threads=2)
    next(it)
    t.close()
    with pytest.raises(ValueError, match="closed"):
        next(it)


def test_threads_carry_the_diagnostics_of_reading(tmp_path):
    """A stream cut inside an event: the reader thread's warning reaches
    the trace's diagnostics and the warnings, as without threads."""
    import re
    import shutil
    src = DATA / "ovni" / "v3" / "bench-mix-small" / "ovni"
    trace = tmp_path / "ovni"
    shutil.copytree(src, trace)
    stream = "loom.vm.bench/proc.2208/thread.2209"
    meta = trace / stream / "stream.json"
    meta.write_text(re.sub(r'"finished": *1', '"finished": 0', meta.read_text()))
    obs = trace / stream / "stream.obs"
    obs.write_bytes(obs.read_bytes()[:5000])
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        with weft.open(trace) as t:
            plain = t.to_pandas(order="stream")
            plain_diags = [str(d) for d in t.diagnostics]
        with weft.open(trace) as t:
            threaded = t.to_pandas(order="stream", threads=2)
            threaded_diags = [str(d) for d in t.diagnostics]
    assert len(plain_diags) == 2, plain_diags
    assert threaded_diags == plain_diags
    assert len(threaded) == len(plain)
    texts = [str(x.message) for x in w if issubclass(x.category, weft.TraceWarning)]
    assert texts == plain_diags + plain_diags


def test_threads_raise_a_reader_error(tmp_path):
    """A reader that cannot open the trace again (it vanished after the
    first open): the error is raised by the loop, with its file."""
    import shutil
    trace = tmp_path / "ovni"
    shutil.copytree(OVNI, trace)
    with weft.open(trace) as t:
        shutil.rmtree(trace)
        with pytest.raises(weft.Error) as e:
            list(t.events(order="stream", threads=2))
        assert e.value.file is not None or "ovni" in str(e.value)


def test_threads_refuse_a_close_from_another_thread_while_waiting():
    """While the loop waits for the readers (without the GIL), the trace is
    busy: another thread's close() raises RuntimeError instead of freeing
    the readers under the loop (a use after free that the sanitizer build,
    which runs this test too, reports; a plain build may not notice it)."""
    import threading
    with weft.open(OVNI) as t:
        total = len(t.to_pandas())
        it = t.events(order="stream", batch_size=1, threads=2)
        refused = []

        go = threading.Event()

        def closer():
            go.wait()
            for _ in range(2000):
                try:
                    t.close()
                    refused.append(False)
                    return
                except RuntimeError:
                    refused.append(True)
        next(it)
        n = 1
        th = threading.Thread(target=closer)
        th.start()
        go.set()  # the closer runs when this thread next gives up the GIL
        try:
            for _ in it:
                n += 1
        except ValueError:
            pass  # closed between two batches: the loop says so and ends
        th.join()
        # the closer first gets the GIL when the loop gives it up, waiting for
        # the readers: that attempt must be refused
        assert refused[0] is True and n > 0
        # whatever the interleaving, the trace ends closed or readable
        assert t.closed or len(t.to_pandas()) == total
