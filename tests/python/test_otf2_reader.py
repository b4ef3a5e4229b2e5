# SPDX-License-Identifier: MIT
"""The OTF2 backend (read through Debian's libotf2) against otf2-print, the
OTF2 project's own printer: an archive with every event record kind of OTF2
3.0 and attributes of every type, written by tests/c/otf2_make_trace.c with
libotf2, reads in weft as otf2-print prints it, record by record; the
duplicate group definition of EZTrace is a warning; damaged archives give
clear errors; every command and output works on it."""

import json
import os
import random
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from weftlib import DATA_DIR, run_weft

BUILD = Path(os.environ.get("WEFT_BUILD_DIR", Path(__file__).resolve().parents[2] / "build"))
MAKER = BUILD / "tests" / "otf2_make_trace"


def make_trace(path, *args):
    """An OTF2 archive at `path` (directory) written by otf2_make_trace."""
    if not MAKER.exists():
        pytest.skip(f"{MAKER} was not built")
    subprocess.run([str(MAKER), str(path), *map(str, args)], check=True)
    return path / "traces.otf2"


SAMPLE = DATA_DIR / "otf2" / "mpi-threads"


@pytest.fixture(scope="module")
def trace():
    return SAMPLE / "traces.otf2"


def otf2_print(anchor):
    """otf2-print's output for the anchor (Debian's otf2-tools)."""
    exe = shutil.which("otf2-print")
    if exe is None:
        pytest.skip("otf2-print is missing (Debian package otf2-tools)")
    return subprocess.run([exe, str(anchor)], capture_output=True, text=True,
                          check=True).stdout


def test_golden_is_what_otf2_print_prints(trace):
    assert otf2_print(trace) == (SAMPLE / "otf2-print.txt").read_text()


# otf2-print's attribute names -> weft's field names (and how to compare).
PRINT_FIELDS = {
    "Region": "region", "Receiver": "peer", "Sender": "peer", "Communicator": "comm_name",
    "Tag": "tag", "Length": "length", "Request": "request", "Root": "root",
    "Sent": "sent", "Received": "received", "Task": "task", "Lock": "lock",
    "Parameter": "parameter", "Value": "value", "Window": "win_name", "Remote": "remote",
    "Bytes": "bytes", "Matching": "matching_id", "Handle": "handle_name",
    "Thread Team": "team_name", "Acquisition Order": "acquisition_order",
    "Exit Status": "exit_status", "Name": "program", "Creating Thread": "creating_thread",
    "Generation Number": "generation", "Sequence Number": "sequence",
}


def parse_print(text):
    """otf2-print's event lines: (kind, location, time, {attribute: value})
    plus the additional attributes of the record."""
    events = []
    for line in text.splitlines():
        m = re.match(r"^([A-Z][A-Z_0-9]+)\s+(\d+)\s+(\d+)\s*(.*)$", line)
        if m:
            attrs = {}
            for key, quoted, plain in re.findall(
                    r'([A-Z][A-Za-z ]*?): (?:"([^"]*)"|([-\w.]+))', m.group(4)):
                attrs[key] = quoted if quoted or plain == "" else plain
            events.append([m.group(1), int(m.group(2)), int(m.group(3)), attrs, []])
        elif line.strip().startswith("ADDITIONAL ATTRIBUTES:") and events:
            events[-1][4] = re.findall(r'\("([^"]+)" <\d+>; (\w+); ("?[^")]*"?)', line)
    return events


# otf2-print's names that are not weft's code in capitals without "_".
PRINT_ALIASES = {"IOCHANGEFLAGS": "IOCHANGESTATUSFLAGS", "PARAMETERINT64": "PARAMETERINT",
                 "PARAMETERUINT64": "PARAMETERUNSIGNEDINT"}


def normalized(kind):
    k = kind.replace("_", "").upper()
    return PRINT_ALIASES.get(k, k)


def weft_events(anchor):
    out = run_weft("dump", "--json", anchor, expect=0).stdout
    events = []
    for line in out.splitlines():
        e = json.loads(line)
        loc = int(e["stream"].rsplit(".", 1)[1])
        events.append((e["code"], loc, e["time"], e.get("fields", {})))
    return events


def test_every_record_as_otf2_print_prints_it(trace):
    printed = parse_print((SAMPLE / "otf2-print.txt").read_text())
    ours = weft_events(trace)
    kinds = {normalized(k) for k, *_ in printed}
    assert len(kinds) == 79, sorted(kinds)   # every event record kind of OTF2 3.0
    assert kinds == {normalized(code) for code, *_ in ours}
    # The same records in each location, in the same order.
    by_loc_print, by_loc_weft = {}, {}
    for kind, loc, time, attrs, extra in printed:
        by_loc_print.setdefault(loc, []).append((normalized(kind), time, attrs, extra))
    for code, loc, time, fields in ours:
        by_loc_weft.setdefault(loc, []).append((normalized(code), time, fields))
    assert sorted(by_loc_print) == sorted(by_loc_weft)
    compared = 0
    for loc, theirs in by_loc_print.items():
        mine = by_loc_weft[loc]
        assert [(k, t) for k, t, _, _ in theirs] == [(k, t) for k, t, _ in mine], loc
        for (kind, _, attrs, extra), (_, _, fields) in zip(theirs, mine):
            for key, value in attrs.items():
                name = PRINT_FIELDS.get(key)
                if name is None or name not in fields:
                    continue
                if value in ("NONE", "UNDEFINED"):   # OTF2's undefined number
                    assert fields[name] in (2**32 - 1, 2**64 - 1), (kind, key, fields)
                else:
                    assert str(fields[name]) == value, (kind, key, value, fields)
                compared += 1
            for name, otype, value in extra:
                got = fields[name]
                if otype in ("STRING", "REGION"):
                    assert got == value.strip('"'), (name, value, fields)
                else:
                    assert float(got) == float(value), (name, value, fields)
                compared += 1
    assert compared > 500


def test_times_follow_the_clock_resolution(tmp_path):
    fast = make_trace(tmp_path / "a")
    slow = make_trace(tmp_path / "b", "--resolution", 2000000000)  # 2 ticks per ns
    a = [t for _, _, t, _ in weft_events(fast)]
    b = [t for _, _, t, _ in weft_events(slow)]
    assert sorted(b) == sorted(t // 2 for t in a)


def test_info_shows_the_hierarchy_and_definitions(trace):
    out = run_weft("info", trace, expect=0).stdout
    assert "format: otf2" in out
    assert "machine/node1/process.3/thread.7" in out
    assert 'name="MPI Rank 3"' in out
    assert "definitions.region=5" in out and "clock.resolution=1000000000" in out
    # Regions with their role, paradigm and source; communicators with their size.
    for item in ("regions.0.name=main", "regions.0.role=function", "regions.0.paradigm=user",
                 "regions.0.file=main.c", "regions.0.begin=10", "regions.3.role=point2point",
                 "regions.3.paradigm=mpi", "communicators.0.name=MPI_COMM_WORLD",
                 "communicators.0.size=4"):
        assert f" {item} " in out, item
    # The directory holding the anchor opens the same trace.
    assert run_weft("info", trace.parent, expect=0).stdout.count("thread.") >= 8


def test_duplicate_group_is_a_warning(tmp_path):
    anchor = make_trace(tmp_path / "d", "--duplicate-group")
    proc = run_weft("check", anchor, expect=1)
    assert "group 0 is defined more than once; the first definition is kept" in proc.stdout
    dump = run_weft("dump", anchor, expect=0)
    assert "group 0 is defined more than once" in dump.stderr
    assert len(dump.stdout.splitlines()) == 532


def test_messages_and_spans_in_every_output(trace, tmp_path):
    run_weft("check", trace, expect=0)
    top = run_weft("top", trace, expect=0).stdout
    assert re.search(r"^MPI_Send\s+16$", top, re.M)
    profile = run_weft("profile", trace, expect=0).stdout
    assert re.search(r"^compute\s+24\s+1200\b", profile, re.M)
    chrome = tmp_path / "t.json"
    run_weft("convert", trace, "-t", "chrome", "-o", chrome, expect=0)
    phases = [e.get("ph") for e in json.loads(chrome.read_text())["traceEvents"]]
    assert phases.count("s") == phases.count("f") == 20   # 16 sends, 4 isends
    run_weft("convert", trace, "-t", "paraver", "-o", tmp_path / "p", expect=0)
    comms = [l for l in (tmp_path / "p.prv").read_text().splitlines() if l.startswith("3:")]
    assert len(comms) == 20
    run_weft("convert", trace, "-t", "perfetto", "-o", tmp_path / "t.pftrace", expect=0)
    run_weft("convert", trace, "-t", "pallas", "-o", tmp_path / "pl", expect=0)
    back = run_weft("top", tmp_path / "pl", expect=0).stdout
    assert re.search(r"^Enter\s+76$", back, re.M)


def test_the_sample_is_what_the_maker_writes(trace, tmp_path):
    fresh = make_trace(tmp_path / "m")
    assert run_weft("dump", fresh, expect=0).stdout == run_weft("dump", trace, expect=0).stdout


def damaged(tmp_path, trace, what):
    dst = tmp_path / "x"
    shutil.copytree(trace.parent, dst)
    what(dst)
    return dst / "traces.otf2"


@pytest.mark.parametrize("case,message", [
    ("garbage-anchor", "byte 2: expected the magic \"OTF2\""),
    ("empty-anchor", "byte 2: expected the magic \"OTF2\""),
    ("damaged-anchor", "libotf2"),
    ("huge-property-count", "byte 94: expected a property count that fits in the 19 bytes"),
    ("truncated-anchor", "property count of the anchor file; the file ends"),
    ("no-definitions", "global definitions"),
    ("truncated-events", "traces/0.evt"),
    ("garbage-events", "traces/0.evt"),
])
def test_damaged_archives_give_clear_errors(trace, tmp_path, case, message):
    def act(d):
        if case == "garbage-anchor":
            (d / "traces.otf2").write_bytes(os.urandom(200))
        elif case == "damaged-anchor":
            p = d / "traces.otf2"
            noise = random.Random(18).randbytes(100)
            p.write_bytes(p.read_bytes()[:6] + bytes([2]) + noise[1:])
        elif case == "huge-property-count":
            # The sample's three anchor strings end at byte 94; a count of
            # 2^31 properties once kept libotf2 busy for minutes.
            p = d / "traces.otf2"
            data = bytearray(p.read_bytes())
            assert data[94:98] == bytes(4)
            data[94:98] = b"\xff\xff\xff\x7f"
            p.write_bytes(bytes(data))
        elif case == "truncated-anchor":
            p = d / "traces.otf2"
            p.write_bytes(p.read_bytes()[:80])
        elif case == "empty-anchor":
            (d / "traces.otf2").write_bytes(b"")
        elif case == "no-definitions":
            (d / "traces.def").unlink()
        elif case == "truncated-events":
            p = d / "traces" / "0.evt"
            p.write_bytes(p.read_bytes()[:700])
        else:
            p = d / "traces" / "0.evt"
            data = bytearray(p.read_bytes())
            data[40:400] = os.urandom(360)
            p.write_bytes(bytes(data))
    anchor = damaged(tmp_path, trace, act)
    proc = run_weft("dump", anchor)
    assert proc.returncode != 0
    assert message in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr and "AddressSanitizer" not in proc.stderr


def test_a_directory_with_two_anchors_is_refused(trace, tmp_path):
    d = tmp_path / "two"
    shutil.copytree(trace.parent, d)
    shutil.copy(d / "traces.otf2", d / "other.otf2")
    proc = run_weft("info", d)
    assert proc.returncode != 0
