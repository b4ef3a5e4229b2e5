# SPDX-License-Identifier: MIT
"""Damaged Pallas traces, made from a copy of a reference trace with one
field changed (tests/python/pallas_layout.py says where each field is):
every command gives a clear error naming the file and never crashes, also
under ASan (the suite runs on the sanitizer build too). Each case is a
count or an id that the reader once trusted."""

import json
import shutil
import struct

import pytest

from pallas_layout import (E, S, archive_layout, main_layout, nested_trace, patch,
                           splice, thread_layout, write_trace)
from weftlib import DATA_DIR, run_weft

PALLAS = DATA_DIR / "pallas"
NO_REF = 0xFFFFFFFF
COMMANDS = [("info",), ("dump",), ("dump", "--json"), ("check",), ("top",),
            ("profile",), ("profile", "--replay"), ("dump", "--structure")]


@pytest.fixture
def trace(copy_pallas):
    """A writable copy of the small reference trace (one thread)."""
    return copy_pallas("write_pattern")


def thread_file(trace, archive=0, thread=0):
    return trace / f"archive_{archive}" / f"thread_{thread}" / "thread.pallas"


def run_all(path, tmp_path, *commands):
    """Runs every command (and a conversion) on a damaged trace: none may
    crash; returns {command: CompletedProcess}."""
    out = {}
    for args in commands or COMMANDS:
        proc = run_weft(*args, path)
        assert proc.returncode in (0, 1, 2), (args, proc.returncode, proc.stderr)
        out[args] = proc
    conv = run_weft("convert", path, "-t", "pallas", "-o", tmp_path / "conv")
    assert conv.returncode in (0, 1, 2), conv.stderr
    out["convert"] = conv
    return out


# ---- Vectors ------------------------------------------------------------------


def test_empty_timestamp_vector_with_a_sub_array_count(trace, tmp_path):
    """Issue 13 item 15: size 0 with n_sub 1 (what Pallas writes for an
    empty vector) followed by the bytes of a sub-array entry: the vector
    has nothing after its count, so the entry is read as the next event,
    which is refused; it once left a NULL entry table with a count."""
    path = thread_file(trace)
    ts = thread_layout(path.read_bytes())["events"][0]["timestamps"]
    patch(path, ts["at"], struct.pack("<Q", 0))
    res = run_all(trace, tmp_path)
    check = res[("check",)]
    assert check.returncode == 1
    assert "thread.pallas" in check.stdout and "expected at least 5" in check.stdout
    assert res[("dump",)].returncode == 1 and "thread.pallas" in res[("dump",)].stderr


def test_event_without_timestamps_that_occurs(trace, tmp_path):
    """The same vector made consistent (its entries removed): the event has
    no timestamps but the grammar uses it, which the replay reports."""
    path = thread_file(trace)
    ts = thread_layout(path.read_bytes())["events"][0]["timestamps"]
    splice(path, ts["at"], ts["end"], struct.pack("<QQ", 0, 1))
    res = run_all(trace, tmp_path)
    assert res[("dump",)].returncode == 1
    assert "E0 occurs more often than its 0 timestamps" in res[("dump",)].stderr
    assert res[("check",)].returncode == 1


@pytest.mark.parametrize("which", ["durations", "exclusive", "timestamps"])
def test_empty_sequence_vector_with_a_sub_array_count(trace, tmp_path, which):
    """Item 15 through `profile` (vector_sum) and the grammar API: a live
    sequence whose vector has size 0 and n_sub 3, nothing after. weft's
    replay does not need it, but `check` (which called the file clean)
    counts the sequence's occurrences against its vectors."""
    path = thread_file(trace)
    v = thread_layout(path.read_bytes())["sequences"][1][which]
    splice(path, v["at"], v["end"], struct.pack("<QQ", 0, 3))
    res = run_all(trace, tmp_path)
    assert res[("profile",)].returncode in (0, 1, 2)
    check = res[("check",)]
    assert check.returncode == 1
    assert f"the {which.replace('exclusive', 'exclusive durations')} of sequence S 1 " \
        "occurs 4 times in the grammar but has 0 values" in check.stdout


# ---- Every count and id of a thread file ----------------------------------------


def thread_fields(data):
    """(name, offset, size) of the counts, ids and vector headers of a
    thread.pallas: the header, the first two events, the first three
    sequences, the first two loops and the id maps."""
    t = thread_layout(data)
    fields = [(k, t[k], 8 if k.endswith("count") or k == "first_timestamp" else 4)
              for k in ("thread_id", "archive_id", "event_count", "sequence_count",
                        "loop_count", "root", "first_timestamp")]
    for i, e in enumerate(t["events"][:2]):
        fields += [(f"E{i}.record", e["at"], 4), (f"E{i}.size", e["at"] + 4, 1),
                   (f"E{i}.attr_size", e["attr_size_at"], 8)]
        fields += vector_fields(f"E{i}.ts", e["timestamps"], False)
    for i, s in enumerate(t["sequences"][:3]):
        fields += [(f"S{i}.type", s["at"], 4), (f"S{i}.ntokens", s["at"] + 4, 8)]
        if s["tokens"]:
            fields.append((f"S{i}.token0", s["tokens_at"], 4))
            for which in ("durations", "exclusive", "timestamps"):
                fields += vector_fields(f"S{i}.{which}", s[which], which != "timestamps")
    for i, l in enumerate(t["loops"][:2]):
        fields += [(f"L{i}.repeated", l["at"], 4), (f"L{i}.iterations", l["at"] + 4, 4),
                   (f"L{i}.occurrences", l["at"] + 8, 8)]
    fields += [(m, t[m], 8) for m in ("event_map", "sequence_map", "loop_map")]
    return fields


def vector_fields(name, v, durations):
    out = [(name + ".size", v["at"], 8), (name + ".n_sub", v["at"] + 8, 8)]
    if "subs" in v:
        out += [(name + ".sub0.size", v["subs"], 8),
                (name + ".sub0.offset", v["subs"] + (32 if durations else 24), 8)]
    return out


VALUES = {1: [0, 0x80, 0xFF], 4: [0, 1, 0x3FFFFFFF, 0xFFFFFFFF],
          8: [0, 1, 1001, 1 << 32, 1 << 63, (1 << 64) - 1]}


def test_every_thread_field_damaged(trace, tmp_path):
    """Each count, id and vector header of the thread file set in turn to
    0, 1, a limit or a huge value: check (which reads every event),
    dump --structure, profile (the grammar API) and convert give a result or a clear error, never a crash."""
    path = thread_file(trace)
    original = path.read_bytes()
    for name, at, size in thread_fields(original):
        for value in VALUES[size]:
            path.write_bytes(original)
            patch(path, at, value.to_bytes(size, "little"))
            for args in (("check",), ("dump", "--structure"), ("profile",)):
                proc = run_weft(*args, trace)
                assert proc.returncode in (0, 1, 2), (name, value, args, proc.stderr)
                if proc.returncode == 2:
                    assert "thread.pallas" in proc.stderr or ".dat" in proc.stderr, \
                        (name, value, args, proc.stderr)
            conv = run_weft("convert", trace, "-t", "pallas", "-o",
                            tmp_path / "conv", "--force")
            assert conv.returncode in (0, 1, 2), (name, value, conv.stderr)


# ---- Location groups and locations ------------------------------------------------


def set_table(path, layout_of, table, entries):
    """Replaces a location group or location table of a main or archive
    file by `entries` ((id, name, parent) each)."""
    data = path.read_bytes()
    lay = layout_of(data)
    start = lay[table]
    count = struct.unpack_from("<Q", data, start)[0]
    body = struct.pack("<Q", len(entries)) + b"".join(struct.pack("<III", *e)
                                                       for e in entries)
    splice(path, start, start + 8 + 12 * count, body)


def add_thread_dirs(trace, *ids):
    """Copies of thread_0 as thread_<id> in archive_0."""
    for i in ids:
        shutil.copytree(trace / "archive_0" / "thread_0", trace / "archive_0" / f"thread_{i}")


def streams_of(trace):
    out = run_weft("info", trace, expect=0).stdout
    return [line.split()[1] for line in out.splitlines()
            if line.startswith("  [") and "archive_" in line]


def test_location_group_given_twice_with_main_file_locations(trace, tmp_path):
    """Issue 13 item 16: the stream table was sized by the location total,
    but the main file's locations were added once per archive of their
    parent's id: two groups of id 0 and two main-file locations overflowed
    it (glibc abort). The group given again is a warning, left out."""
    main = trace / "main.pallas"
    set_table(main, main_layout, "location_groups", [(0, 0, NO_REF), (0, 0, NO_REF)])
    set_table(main, main_layout, "locations", [(1, 5, 0), (2, 5, 0)])
    add_thread_dirs(trace, 1, 2)
    res = run_all(trace, tmp_path)
    info = res[("info",)]
    assert info.returncode == 0
    assert "location group 0 is defined again" in info.stdout
    assert streams_of(trace) == ["archive_0/thread_0", "archive_0/thread_1",
                                 "archive_0/thread_2"]


def test_thread_given_twice_in_an_archive(trace, tmp_path):
    """A thread id given twice (in the archive, and again in the main file)
    would be two streams reading one directory: the later ones are
    warnings, left out."""
    set_table(trace / "archive_0" / "archive.pallas", archive_layout, "locations",
              [(0, 5, 0), (0, 5, 0)])
    set_table(trace / "main.pallas", main_layout, "locations", [(0, 5, 0)])
    res = run_all(trace, tmp_path)
    assert res[("info",)].stdout.count("thread 0 of archive 0 is defined again") == 2
    assert streams_of(trace) == ["archive_0/thread_0"]
    assert res[("check",)].returncode == 1


def test_location_whose_parent_is_no_group(trace, tmp_path):
    set_table(trace / "main.pallas", main_layout, "locations", [(7, 5, 3)])
    res = run_all(trace, tmp_path)
    assert "location 7: its parent 3 is not a location group" in res[("info",)].stdout
    assert streams_of(trace) == ["archive_0/thread_0"]


# ---- What Pallas 0.20 cannot read: weft check says so ---------------------------------


def check_output(path, expect):
    return run_weft("check", path, expect=expect).stdout


def test_grammar_deeper_than_pallas_reads(tmp_path):
    """Issue 13 item 6: Pallas 0.20's reader keeps 100 frames (the root and
    99 sequences or loops below it): 99 nested calls are read, 100
    overflow its call stack (checked with its pallas_print built with
    ASan). weft reads both; check flags the second."""
    assert "no problems" in check_output(nested_trace(tmp_path / "ok", 99), 0)
    deep = nested_trace(tmp_path / "deep", 100)
    out = check_output(deep, 1)
    assert "the grammar nests 100 sequences and loops below the root: Pallas 0.20's " \
        "reader holds 99" in out
    depths = [json.loads(line)["depth"] for line in
              run_weft("dump", "--json", deep, expect=0).stdout.splitlines()]
    assert len(depths) == 200 and max(depths) == 99


def test_archive_ids_pallas_cannot_index(copy_pallas):
    """Thread 1 of weft_order's archive 0 renamed 5: Pallas keeps thread
    <id> at threads[id - 0] of 3 entries (its ids 0, 5, and 2 from the main
    file), past the end; weft reads it."""
    trace = copy_pallas("weft_order")
    (trace / "archive_0" / "thread_1").rename(trace / "archive_0" / "thread_5")
    archive = trace / "archive_0" / "archive.pallas"
    items = archive_layout(archive.read_bytes())["locations_items"]
    ids = [struct.unpack_from("<I", archive.read_bytes(), at)[0] for at in items]
    patch(archive, items[ids.index(1)], struct.pack("<I", 5))
    out = check_output(trace, 1)
    assert "archive_0/archive.pallas: error: thread 5: Pallas 0.20 cannot read this " \
        "archive" in out
    run_weft("dump", trace, expect=0)


def test_archive_thread_count_differs(copy_pallas):
    trace = copy_pallas("weft_order")
    patch(trace / "archive_1" / "archive.pallas", 4, struct.pack("<I", 2))
    assert "archive_1/archive.pallas:4: error: a thread count of 2 for 3 locations" in \
        check_output(trace, 1)


GENERIC = 58


def test_root_that_starts_with_an_event(tmp_path):
    """Pallas's reader enters the root's first token at once: an event
    there aborts it. weft reads it."""
    path = write_trace(tmp_path / "t", [(GENERIC, struct.pack("<I", 2), [5]),
                                        (GENERIC, struct.pack("<I", 3), [6])],
                       [(0, [E(0), E(1)], [1], [1], [5])],
                       strings=[(2, "a"), (3, "b")])
    out = check_output(path, 1)
    assert "the root sequence starts with an event: Pallas 0.20's reader aborts" in out
    assert len(run_weft("dump", path, expect=0).stdout.splitlines()) == 2


def test_root_of_several_tokens(tmp_path):
    """pallas_print (merged) stops a thread that comes back to its root."""
    g = struct.pack("<I", 2)
    path = write_trace(tmp_path / "t", [(GENERIC, g, [5, 6])],
                       [(0, [S(1), S(1)], [1], [1], [5]), (1, [E(0)], [0, 0], [0, 0], [5, 6])],
                       strings=[(2, "a")])
    out = check_output(path, 1)
    assert "warning: the root sequence holds 2 tokens: Pallas 0.20's pallas_print " \
        "stops the thread at the end of the first" in out


def test_thread_without_events(tmp_path):
    path = write_trace(tmp_path / "t", [], [(0, [], [], [], [])])
    assert "a thread without events: Pallas 0.20's pallas_print reads an " \
        "uninitialised cursor" in check_output(path, 1)


def test_undefined_region_and_string(copy_pallas):
    """Item 17's other half: a Generic whose name (or an Enter whose
    region) refers to nothing was accepted by check."""
    trace = copy_pallas("write_pattern")
    path = thread_file(trace)
    e0 = thread_layout(path.read_bytes())["events"][0]["at"]
    patch(path, e0 + 5, struct.pack("<I", 77))
    out = check_output(trace, 1)
    assert f"thread.pallas:{e0 + 5}: error: region 77 is not defined" in out
    order = copy_pallas("weft_order", "o")
    path = thread_file(order)
    generic = [e for e in thread_layout(path.read_bytes())["events"] if e["record"] == GENERIC]
    patch(path, generic[0]["at"] + 5, struct.pack("<I", 999))
    assert "error: string 999 is not defined" in check_output(order, 1)


def test_delta_timestamps_are_flagged(trace):
    """weft's delta_timestamps: Pallas 0.20 would read the differences as
    timestamps (here the values are absolute, so the sums fail too)."""
    patch(trace / "main.pallas", 29, struct.pack("<i", 3))
    assert "main.pallas:29: warning: timestamps stored as differences" in \
        check_output(trace, 1)


# ---- Every count and id of the main and archive files ---------------------------------


def defs_fields(data, lay, settings):
    """(name, offset, size) of the counts and ids of a main or archive file."""
    fields = [(t, lay[t], 8) for t in ("strings", "regions", "attributes", "groups",
                                       "comms", "location_groups", "locations", "metadata")]
    fields += settings
    for i, at in enumerate(lay["strings_items"][:2]):
        fields += [(f"string{i}.ref", at, 4), (f"string{i}.len", at + 4, 4)]
    for table in ("location_groups", "locations"):
        for i, at in enumerate(lay[table + "_items"][:2]):
            fields += [(f"{table}{i}.{k}", at + 4 * j, 4)
                       for j, k in enumerate(("id", "name", "parent"))]
    fields += [(f"metadata.len{i}", at, 8) for i, at in enumerate(lay["metadata_items"][:2])]
    return fields


MAIN_SETTINGS = [("version", 0, 1), ("compression", 1, 4), ("encoding", 5, 4),
                 ("loop_finding", 17, 4), ("timestamp_storage", 29, 4)]


@pytest.mark.parametrize("name", ["weft_order", "wb_generic_f2_n2000_t4_logical"])
def test_every_main_and_archive_field_damaged(copy_pallas, tmp_path, name):
    """Each count and id of the main file and of an archive file (settings,
    table counts, strings, location groups, locations, metadata lengths)
    set in turn to 0, 1, a limit or a huge value: info, check and convert
    give a result or a clear error naming the file, never a crash."""
    trace = copy_pallas(name)
    main, archive = trace / "main.pallas", trace / "archive_0" / "archive.pallas"
    targets = [(main, defs_fields(main.read_bytes(), main_layout(main.read_bytes()),
                                  MAIN_SETTINGS)),
               (archive, defs_fields(archive.read_bytes(),
                                     archive_layout(archive.read_bytes()),
                                     [("archive id", 0, 4), ("threads", 4, 4)]))]
    for path, fields in targets:
        original = path.read_bytes()
        for field, at, size in fields:
            for value in VALUES[size]:
                path.write_bytes(original)
                patch(path, at, value.to_bytes(size, "little"))
                for args in (("info",), ("check",)):
                    proc = run_weft(*args, trace)
                    assert proc.returncode in (0, 1, 2), (field, value, args, proc.stderr)
                    if proc.returncode == 2:
                        assert ".pallas" in proc.stderr, (field, value, args, proc.stderr)
                conv = run_weft("convert", trace, "-t", "pallas", "-o",
                                tmp_path / "conv", "--force")
                assert conv.returncode in (0, 1, 2), (field, value, conv.stderr)
        path.write_bytes(original)


def test_names_that_are_not_utf8(copy_pallas):
    """A string with a byte that is not UTF-8 (here the group's name): the
    trace opened, then failed with "out of memory" (jansson refused the
    name); now the byte is U+FFFD in the metadata."""
    trace = copy_pallas("write_pattern")
    main = trace / "main.pallas"
    data = main.read_bytes()
    patch(main, data.index(b"Main process"), b"\xff")
    assert 'name="\ufffdain process"' in run_weft("info", trace, expect=0).stdout
    run_weft("check", trace, expect=0)


def test_id_map_that_is_not_the_identity(trace):
    """Pallas reads token ids through the id maps, weft as indexes (Pallas
    0.20 writes the identity, 0xFFFFFFFF for dead loops): another map
    would be read differently, which check says."""
    path = thread_file(trace)
    at = thread_layout(path.read_bytes())["event_map"] + 8
    patch(path, at, struct.pack("<I", 1))
    assert f"thread.pallas:{at}: warning: an id map entry that is not its index" in \
        check_output(trace, 1)
