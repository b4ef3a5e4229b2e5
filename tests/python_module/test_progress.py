# SPDX-License-Identifier: MIT
"""The progress callback (weft.open(progress=), Trace.progress) and the
guard that keeps a trace to one call at a time: re-entering it from a
callback or using it from another thread while a call runs raises
RuntimeError instead of corrupting the library's state."""

import gc
import threading
import time
import weakref

import pytest

import weft

from conftest import DATA

PALLAS = DATA / "pallas" / "wb_enterleave_f3_n1000_t2_logical" / "trace" / "main.pallas"
OVNI = DATA / "ovni" / "v3" / "bench-mix-small" / "ovni"


def test_open_and_convert_report(tmp_path):
    seen = []
    with weft.open(OVNI, progress=seen.append) as trace:
        assert [p.phase for p in seen if p.finished] == ["opening"]
        seen.clear()
        report = trace.convert(tmp_path / "out.json", to="chrome")
        finished = [p for p in seen if p.finished]
        assert [p.phase for p in finished] == ["converting", "writing"]
        conv = finished[0]
        assert isinstance(conv, weft.Progress)
        assert conv.events_done == report["events"] == 4008
        assert conv.bytes_total > 0 and conv.bytes_done == conv.bytes_total
        assert conv.fraction == 1.0
        assert conv.elapsed >= 0.0


def test_reading_reports_with_interval_zero():
    seen = []
    with weft.open(PALLAS, progress=seen.append, progress_interval=0) as trace:
        seen.clear()
        n = 0
        for b in trace.events(batch_size=1000):
            n += len(b["time"])
            time.sleep(0.01)  # past the resolution of the library's coarse clock
    reading = [p for p in seen if p.phase == "reading"]
    assert n == 12000
    # the cursors look at the clock every 4096 events
    assert reading and 4096 <= reading[0].events_done <= n


def test_set_and_remove_later(tmp_path):
    seen = []
    with weft.open(OVNI) as trace:
        assert trace.progress is None
        trace.progress = seen.append
        assert trace.progress == seen.append
        trace.profile()
        assert [p.phase for p in seen if p.finished] == ["profiling"]
        trace.progress = None
        seen.clear()
        trace.profile()
        assert seen == []


def test_exception_in_callback_is_raised_after_the_call(tmp_path):
    calls = []

    def fail(p):
        calls.append(p)
        raise KeyError("stop")

    with weft.open(OVNI) as trace:
        trace.progress = fail
        with pytest.raises(KeyError, match="stop"):
            trace.convert(tmp_path / "out.json", to="chrome")
        # not called again once it raised, during that call
        assert len(calls) == 1
        # the trace stays usable, and the next call reports again
        trace.progress = None
        assert len(trace.to_pandas()) == 4008


def test_exception_while_opening(tmp_path):
    def fail(p):
        raise ValueError("no")

    with pytest.raises(ValueError, match="no"):
        weft.open(OVNI, progress=fail)


def test_bad_arguments():
    with pytest.raises(TypeError):
        weft.open(OVNI, progress=3)
    with pytest.raises(weft.ArgumentError):
        weft.open(OVNI, progress=print, progress_interval=-1)
    with weft.open(OVNI) as trace:
        with pytest.raises(TypeError):
            trace.progress = "not callable"


def test_reentering_from_the_callback_is_refused(tmp_path):
    errors = []
    with weft.open(OVNI) as trace:
        def reenter(p):
            if p.finished:
                for call in (trace.to_pandas, trace.profile, trace.close):
                    try:
                        call()
                    except RuntimeError as e:
                        errors.append(str(e))

                def set_progress():
                    trace.progress = None
                try:
                    set_progress()
                except RuntimeError as e:
                    errors.append(str(e))
        trace.progress = reenter
        trace.convert(tmp_path / "out.json", to="chrome")
        assert len(errors) == 2 * 4  # converting and writing: four refusals each
        assert not trace.closed
        trace.progress = None
        assert len(trace.to_pandas()) == 4008


def test_another_thread_is_refused_while_a_call_runs(tmp_path):
    """The callback runs inside the library's call: while it waits, the
    trace is busy, and another thread's use of it raises RuntimeError."""
    outcome = {}
    with weft.open(OVNI) as trace:
        def other():
            try:
                next(iter(trace.events()))
                outcome["other"] = "ran"
            except RuntimeError as e:
                outcome["other"] = str(e)

        def wait_for_other(p):
            if p.finished and "other" not in outcome:
                t = threading.Thread(target=other)
                t.start()
                t.join()  # releases the GIL: the other thread runs now
        trace.progress = wait_for_other
        trace.profile()
        assert "another thread" in outcome["other"]
        trace.progress = None
        # once the call returned, the trace serves any thread
        t = threading.Thread(target=other)
        outcome.clear()
        t.start()
        t.join()
        assert outcome["other"] == "ran"


def test_callback_referring_to_its_trace_is_collected():
    trace = weft.open(OVNI)
    trace.progress = lambda p, t=trace: None
    ref = weakref.ref(trace)
    del trace
    gc.collect()
    assert ref() is None


def test_exception_during_a_ross_table_is_raised_by_it():
    """Every call that runs the library with the callback raises what the
    callback raised (ross_table reports the phase "tabulating"), and no
    later call raises it again."""
    run = DATA / "ross" / "phold-gvt-pekplp" / "np2"

    def fail(p):
        raise KeyError("tabulating")

    with weft.open(run) as trace:
        trace.progress = fail
        with pytest.raises(KeyError, match="tabulating"):
            trace.ross_table("pe")
        trace.progress = None
        assert len(trace.ross_table("pe")) > 0
