# SPDX-License-Identifier: MIT
"""The ovni emulation from Python: Trace.emulate(), Trace.spans(emulate=True)
and Trace.profile(emulate=True), against what the real ovniemu 1.14 wrote
for the cases copied into tests/data/ovni-emu (docs/emulation.md).

For every case weft emulates: the changes are the records of ovniemu's
thread.prv and cpu.prv (sorted within a time, as issue 17 compares them),
and the time each value of each channel shows on each thread, computed
from the golden thread.prv (a record's value lasts until the next record
of its row and type, the last one until the trace's end), equals the
exclusive time of the emulated spans and of the emulated profile. Cases
whose models weft does not emulate yet raise weft.FormatError and are
skipped (named); the list grows with the models.
"""

import gzip
import re
from collections import defaultdict

import pytest

import weft

from conftest import DATA

CASES_DIR = DATA / "ovni-emu"


def golden_text(case, name):
    """ovniemu/<name> of a case (stored gzipped when large), or None."""
    base = CASES_DIR / case / "ovniemu"
    if (base / name).exists():
        return (base / name).read_text()
    if (base / (name + ".gz")).exists():
        return gzip.decompress((base / (name + ".gz")).read_bytes()).decode()
    return None


def cases():
    """The cases with a trace and ovniemu's thread.prv that ovniemu accepted."""
    out = []
    for d in sorted(CASES_DIR.iterdir()):
        log = d / "ovniemu" / "ovniemu.log"
        if not (d / "ovni").is_dir() or golden_text(d.name, "thread.prv") is None:
            continue
        if log.exists() and "exit status: 0" not in log.read_text():
            continue
        out.append(d.name)
    return out


def all_models(case):
    written = CASES_DIR / case / "ovniemu" / "written.txt"
    return written.exists() and "ovniemu -a" in written.read_text().splitlines()[0]


def prv_records(text):
    """(duration, [(row, time, type, value)]) of a .prv text."""
    lines = text.splitlines()
    duration = int(re.match(r"#Paraver \([^)]*\):(\d+)_ns", lines[0]).group(1))
    recs = []
    for line in lines[1:]:
        f = line.split(":")
        recs.append((int(f[4]) - 1, int(f[5]), int(f[6]), int(f[7])))
    return duration, recs


def pcf_labels(text):
    """{type: {value: label}} of a .pcf text."""
    labels, cur, in_values = {}, None, False
    for line in text.splitlines():
        if line.startswith("EVENT_TYPE"):
            cur, in_values = None, False
        elif cur is None and re.match(r"^0 +\d+ ", line):
            cur = int(line.split()[1])
            labels[cur] = {}
        elif line.startswith("VALUES"):
            in_values = True
        elif in_values and cur is not None and line.strip():
            value, label = re.match(r"^(-?\d+)\s+(.*)$", line).groups()
            labels[cur][int(value)] = label.strip()
        elif not line.strip():
            in_values = False
    return labels


def golden_durations(case, start=None, end=None):
    """{(row, type, value): ns shown} of the golden thread.prv, optionally
    within the window [start, end] (ns since the first event)."""
    duration, recs = prv_records(golden_text(case, "thread.prv"))
    lo, hi = start or 0, duration if end is None else end
    by_chan = defaultdict(list)
    for row, time, typ, value in recs:
        by_chan[(row, typ)].append((time, value))
    out = defaultdict(int)
    for (row, typ), seq in by_chan.items():
        for i, (time, value) in enumerate(seq):
            until = seq[i + 1][0] if i + 1 < len(seq) else duration
            a, b = max(time, lo), min(until, hi)
            if value != 0 and b > a:
                out[(row, typ, value)] += b - a
    return out


def emulate_or_skip(trace, case, **kw):
    try:
        return trace.emulate(all_models=all_models(case), **kw)
    except weft.FormatError as e:
        pytest.skip("%s: not emulated yet (%s)" % (case, e))


def expected_by_name(case, trace, changes, start=None, end=None):
    """The golden durations keyed as the spans: (stream, title, name)."""
    labels = pcf_labels(golden_text(case, "thread.pcf"))
    threads = changes.attrs["threads"]
    titles = dict(changes[changes["object"] == "thread"].groupby("type", observed=True)["title"]
                  .first())
    out = defaultdict(int)
    for (row, typ, value), ns in golden_durations(case, start, end).items():
        name = labels.get(typ, {}).get(value, str(value))
        out[(trace.stream_paths[threads[row]["stream"]], titles[typ], name)] += ns
    return dict(out)


@pytest.mark.parametrize("case", cases())
def test_changes_are_ovniemu_records(case):
    """The changes, per time and sorted, are ovniemu's records of both traces."""
    with weft.open(CASES_DIR / case / "ovni") as trace:
        changes = emulate_or_skip(trace, case)
        for kind, name in ((0, "thread.prv"), (1, "cpu.prv")):
            duration, want = prv_records(golden_text(case, name))
            part = changes[changes["object"] == ("thread", "cpu")[kind]]
            got = list(zip(part["row"].astype(int), part["prv_time"].astype(int),
                           part["type"].astype(int), part["value"].astype(int)))
            assert sorted(got) == sorted(want), name
            assert changes.attrs["duration"] == duration
        assert "ovni" in [m[0] for m in changes.attrs["models"]]
        assert not [d for d in changes.attrs["diagnostics"] if d.severity == "error"]


@pytest.mark.parametrize("case", cases())
def test_spans_and_profile_durations(case):
    """Per thread, channel and value: the exclusive time of the emulated
    spans and profile is the time the golden thread.prv shows the value."""
    with weft.open(CASES_DIR / case / "ovni") as trace:
        changes = emulate_or_skip(trace, case)
        want = expected_by_name(case, trace, changes)
        spans = trace.spans(emulate=True, all_models=all_models(case), channels="*")
        got = spans.groupby([spans["stream"].astype(str), "timeline", spans["name"].astype(str)]
                            )["exclusive"].sum()
        got = {k: int(v) for k, v in got.items() if v > 0}
        assert got == {k: v for k, v in want.items() if v > 0}
        # nesting: a span's parent is on its timeline, one level up
        by_id = spans.set_index("id")
        inner = spans[spans["parent"] != 0]
        for _, s in inner.iterrows():
            p = by_id.loc[s["parent"]]
            assert p["timeline"] == s["timeline"] and p["depth"] + 1 == s["depth"]
            assert p["start"] <= s["start"] and s["end"] <= p["end"]
        prof = trace.profile(by="stream", emulate=True, all_models=all_models(case),
                             channels="*")
        got = {(r.stream, r.channel, r.region): int(r.exclusive_ns)
               for r in prof.itertuples() if r.exclusive_ns > 0}
        assert got == {k: v for k, v in want.items() if v > 0}


def test_time_per_task_type_per_thread_labelled_only():
    """Without a channel selection only labelled values come (no TIDs or
    numbers); a selection by model.name or title keeps one channel."""
    case = "emu-ovni-libovni-mark"
    with weft.open(CASES_DIR / case / "ovni") as trace:
        spans = trace.spans(emulate=True)
        assert set(spans["timeline"]) == {"Thread: thread state", "Thread: CPU affinity",
                                          "Colors"}
        assert set(spans["model"]) == {"system", "ovni"}
        assert set(spans[spans["timeline"] == "Colors"]["name"]) == {"Red", "Gray", "Blue"}
        prof = trace.profile(by="stream", emulate=True, channels="ovni.Colors")
        assert list(prof.columns[:3]) == ["channel", "region", "stream"]
        assert set(prof["channel"]) == {"Colors"}
        assert len(prof) == 4 * 3  # 4 threads, 3 colours each
        by_title = trace.profile(emulate=True, channels="Thread: thread state")
        assert set(by_title["region"]) == {"Running", "Paused", "Dead"}
        # numbers come from the channels named
        tids = trace.spans(emulate=True, channels="system.tid_active")
        assert set(tids["name"].astype(str)) == {"7337", "7338", "7341", "7342"}


def test_window_and_streams():
    """A window cuts the spans (clipped) and keeps the time inside it; a
    stream glob keeps the threads whose stream matches."""
    case = "emu-ovni-libovni-mark"
    with weft.open(CASES_DIR / case / "ovni") as trace:
        changes = trace.emulate()
        t0 = changes.attrs["start_clock"]
        lo, hi = 10_000_000, 30_000_000
        spans = trace.spans(emulate=True, channels="*", start=t0 + lo, end=t0 + hi)
        assert spans["start"].min() >= t0 + lo and spans["end"].max() <= t0 + hi
        assert spans["clipped"].any()
        got = spans.groupby([spans["stream"].astype(str), "timeline", spans["name"].astype(str)]
                            )["exclusive"].sum()
        got = {k: int(v) for k, v in got.items() if v > 0}
        want = expected_by_name(case, trace, changes, lo, hi)
        assert got == {k: v for k, v in want.items() if v > 0}
        one = trace.spans(emulate=True, streams="loom.vm.1/*")
        assert set(one["stream"].astype(str)) == {"loom.vm.1/proc.7338/thread.7338"}


def test_emulate_frame_and_objects():
    case = "emu-ovni-libovni-mark"
    with weft.open(CASES_DIR / case / "ovni") as trace:
        changes = trace.emulate()
        threads, cpus = changes.attrs["threads"], changes.attrs["cpus"]
        assert [t["label"] for t in threads] == ["TH 1.7337", "TH 1.7338", "TH 1.7341",
                                                 "TH 1.7342"]
        assert cpus[4]["label"] == "vCPU 0.*" and cpus[4]["phyid"] == -1
        assert cpus[1] == {"loom": 0, "loom_name": "loom.vm.0", "phyid": 1, "index": 1,
                           "label": "CPU 0.1"}
        running = changes[(changes["channel"] == "state") & (changes["value"] == 1)]
        assert set(running["label"]) == {"Running"}
        assert running["stream"].notna().all()
        assert changes[changes["object"] == "cpu"]["stream"].isna().all()
        red = changes[(changes["type"] == 102) & (changes["value"] == 3)]
        assert set(red["label"]) == {"Red"} and set(red["title"]) == {"Colors"}
        assert (changes["time"] - changes["prv_time"] == changes.attrs["start_clock"]).all()
        assert changes.attrs["events"] > 0


def test_refused_trace():
    """An event of a model the thread did not require: weft.FormatError
    with the place; allow_loss=True gives the changes before it."""
    path = CASES_DIR / "emu-nosv-require-missing" / "ovni"
    with weft.open(path) as trace:
        with pytest.raises(weft.FormatError) as e:
            trace.emulate()
        assert "VYc" in str(e.value)
        assert e.value.file == "loom.vm.0/proc.7902/thread.7902/stream.obs"
        assert e.value.offset == 36  # ovniemu's panic names the same offset
        kept = trace.emulate(allow_loss=True)
        assert len(kept) > 0
        errors = [d for d in kept.attrs["diagnostics"] if d.severity == "error"]
        assert len(errors) == 1 and errors[0].offset == 36
        with pytest.raises(weft.FormatError):
            trace.spans(emulate=True)
        with pytest.raises(weft.FormatError):
            trace.profile(emulate=True)


def test_refused_at_load_and_bad_arguments():
    with weft.open(CASES_DIR / "emu-ovni-require-bad-version" / "ovni") as trace:
        with pytest.raises(weft.FormatError, match="unsupported ovni model version"):
            trace.emulate()
    with weft.open(CASES_DIR / "emu-ovni-libovni-mark" / "ovni") as trace:
        with pytest.raises(weft.ArgumentError):
            trace.spans(emulate=True, codes="OH*")
        with pytest.raises(weft.ArgumentError):
            trace.profile(emulate=True, source="durations")
    with weft.open(DATA / "heph" / "heph_sample.bin.log") as trace:
        with pytest.raises(weft.ArgumentError):
            trace.emulate()
