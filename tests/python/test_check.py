# SPDX-License-Identifier: MIT
"""`weft check`: exit 0 on the clean reference traces, exit 1 with a line
naming the file and offset on copies broken on purpose; plus a stream
byte-swapped to big-endian, which weft must read right or refuse."""

import json
import re
import struct

import pytest

from weftlib import (MESSAGE_LINE, OLD_TRACES, events_of_stream_file,
                     parse_dump, run_weft, v3_dir, v3_traces, with_payload)


def problems(out):
    """(file, offset or None, severity, message) of every problem line."""
    found = []
    for line in out.splitlines():
        m = MESSAGE_LINE.match(line)
        if m:
            found.append((m["file"], int(m["offset"]), m["sev"], m["msg"]))
            continue
        m = re.match(r"^(?P<file>[^:]+): (?P<sev>note|warning|error): (?P<msg>.*)$", line)
        if m:
            found.append((m["file"], None, m["sev"], m["msg"]))
    return found


@pytest.mark.parametrize("name", v3_traces())
def test_clean_v3_traces_pass(name):
    out = run_weft("check", v3_dir(name) / "ovni", expect=0).stdout
    assert problems(out) == []
    assert out.startswith("ok: ")


@pytest.mark.parametrize("version", sorted(OLD_TRACES))
def test_old_traces_only_have_the_odd_burst_payload(version):
    """The v1/v2 generators gave OB. a 2-byte payload on purpose (to use
    size code 1); the ovni 1.14 signature of OB. has none: one note, which
    only --strict counts."""
    expected = [(
        "loom.node1.trace/proc.1000/thread.1002.obs", 36, "note",
        "OB. has 2 payload bytes, its ovni 1.14 signature has no fields: "
        "the bytes are kept raw; reported once per event kind")]
    out = run_weft("check", OLD_TRACES[version] / "ovni", expect=0).stdout
    assert problems(out) == expected
    assert out.splitlines()[-1].endswith("no problems (1 note, counted with --strict)")
    out = run_weft("check", "--strict", OLD_TRACES[version] / "ovni", expect=1).stdout
    assert problems(out) == expected


def test_sorted_option(copy_trace):
    out = run_weft("check", "--sorted", v3_dir("ovni-sort-unsorted") / "ovni", expect=1).stdout
    found = problems(out)
    assert ("loom.vm.0/proc.2161/thread.2161/stream.obs", 48) in [f[:2] for f in found]
    assert any("unsorted" in f[3] for f in found)
    run_weft("check", "--sorted", v3_dir("ovni-sort-sorted") / "ovni", expect=0)


# ---- Broken copies -------------------------------------------------------------

STREAM = "loom.vm.0/proc.2184/thread.2184/stream.obs"  # nosv-parallel-tasks


def broken(copy_trace, name="nosv-parallel-tasks"):
    trace = copy_trace(v3_dir(name))
    return trace, trace / STREAM if name == "nosv-parallel-tasks" else None


def assert_problem_at(out, file, offset, words=()):
    found = problems(out)
    hits = [f for f in found if f[0] == file and f[1] == offset]
    assert hits, f"no problem at {file}:{offset} in:\n{out}"
    for w in words:
        assert any(w in h[3].lower() for h in hits), (w, hits)


def test_truncated_last_event(copy_trace):
    trace, obs = broken(copy_trace)
    events = events_of_stream_file(obs)
    last_offset = events[-1][0]
    data = obs.read_bytes()
    obs.write_bytes(data[:last_offset + 6])  # half of the last header
    out = run_weft("check", trace, expect=1).stdout
    assert_problem_at(out, STREAM, last_offset)
    # the events before it are still there; the lost event makes it exit 1
    proc = run_weft("dump", "-x", trace, expect=1)
    assert "error: expected a 12-byte event header" in proc.stderr
    dump = parse_dump(proc.stdout)
    assert len(dump) == len(events) - 1


def test_reserved_flag_bits(copy_trace):
    trace, obs = broken(copy_trace)
    events = events_of_stream_file(obs)
    offset = events[3][0]
    data = bytearray(obs.read_bytes())
    data[offset] |= 0x40
    obs.write_bytes(bytes(data))
    out = run_weft("check", trace, expect=1).stdout
    assert_problem_at(out, STREAM, offset, ["reserved"])


def test_wrong_magic(copy_trace):
    trace, obs = broken(copy_trace)
    data = bytearray(obs.read_bytes())
    data[0:4] = b"ovnX"
    obs.write_bytes(bytes(data))
    proc = run_weft("check", trace, expect=1)
    assert_problem_at(proc.stdout, STREAM, 0, ["magic"])


def test_jumbo_size_past_the_end(copy_trace):
    trace, obs = broken(copy_trace)
    events = events_of_stream_file(obs)
    jumbo = [e for e in events if e[1] & 0x10][0]
    data = bytearray(obs.read_bytes())
    struct.pack_into("<I", data, jumbo[0] + 12, len(data) * 2)
    obs.write_bytes(bytes(data))
    out = run_weft("check", trace, expect=1).stdout
    assert_problem_at(out, STREAM, jumbo[0])


def test_clock_going_backwards(copy_trace):
    trace, obs = broken(copy_trace)
    events = events_of_stream_file(obs)
    offset = events[10][0]
    data = bytearray(obs.read_bytes())
    struct.pack_into("<Q", data, offset + 4, events[10][3] - 10**6)
    obs.write_bytes(bytes(data))
    out = run_weft("check", trace, expect=1).stdout
    assert_problem_at(out, STREAM, offset, ["backwards"])


def edit_json(path, change):
    meta = json.loads(path.read_text())
    change(meta)
    path.write_text(json.dumps(meta, indent=4))


def test_stream_not_finished(copy_trace):
    trace, obs = broken(copy_trace)
    edit_json(obs.parent / "stream.json", lambda m: m["ovni"].pop("finished"))
    out = run_weft("check", trace, expect=1).stdout
    found = problems(out)
    assert any(f[0].startswith("loom.vm.0/proc.2184/thread.2184") and
               ("finished" in f[3] or "closed" in f[3]) for f in found), out


def test_conflicting_process_metadata(copy_trace):
    trace = copy_trace(v3_dir("bench-mix-small"))
    other = trace / "loom.vm.bench/proc.2208/thread.2210/stream.json"
    edit_json(other, lambda m: m["ovni"].__setitem__("app_id", 2))
    out = run_weft("check", trace, expect=1).stdout
    found = problems(out)
    assert any("app_id" in f[3] and "thread.22" in f[0] for f in found), out


def test_missing_loom_cpus(copy_trace):
    trace = copy_trace(v3_dir("bench-mix-small"))
    first = trace / "loom.vm.bench/proc.2208/thread.2209/stream.json"
    edit_json(first, lambda m: m["ovni"].pop("loom_cpus"))
    out = run_weft("check", trace, expect=1).stdout
    assert any("loom_cpus" in f[3] for f in problems(out)), out


def byteswap_stream(path):
    """Rewrites a stream as a big-endian writer would have: the header
    version, every clock and every jumbo size byte-swapped (the payload
    fields are left: the test compares raw bytes)."""
    data = bytearray(path.read_bytes())
    version = struct.unpack_from("<I", data, 4)[0]
    struct.pack_into(">I", data, 4, version)
    jumbo_offsets = []
    for offset, flags, _mcv, clock, _payload in events_of_stream_file(path):
        struct.pack_into(">Q", data, offset + 4, clock)
        if flags & 0x10:
            size = struct.unpack_from("<I", data, offset + 12)[0]
            struct.pack_into(">I", data, offset + 12, size)
            jumbo_offsets.append(offset)
    path.write_bytes(bytes(data))
    return jumbo_offsets


def test_big_endian_stream_read_or_refused(copy_trace):
    original = v3_dir("nosv-parallel-tasks") / "ovni"
    trace, obs = broken(copy_trace)
    byteswap_stream(obs)
    proc = run_weft("dump", "-x", trace)
    if proc.returncode != 0 or proc.stdout == "":
        assert "big-endian" in proc.stderr.lower() or "byte order" in proc.stderr.lower()
        return
    ours = with_payload(parse_dump(proc.stdout))
    expected = with_payload(parse_dump(run_weft("dump", "-x", original, expect=0).stdout))
    assert len(ours) == len(expected)
    jumbo = {"VYc"}
    for (c1, m1, p1, b1), (c2, m2, p2, b2) in zip(ours, expected):
        assert (c1, m1, p1) == (c2, m2, p2)
        if m1 in jumbo:  # the size field is stored swapped
            assert b1[:4] == b2[:4][::-1] and b1[4:] == b2[4:]
        else:
            assert b1 == b2
    info = run_weft("info", trace, expect=0).stdout
    assert "byte order: big-endian" in info


# ---- What ovniemu refuses before emulating --------------------------------------

HOUR = 3600 * 10**9


def gate_trace(tmp_path, second_clock):
    """Two looms on hosts a and b, first clocks 1000 and second_clock; a
    third stream without events (not looked at)."""
    from weftlib import ovni_event, write_ovni_stream
    write_ovni_stream(tmp_path, [ovni_event("OB.", 1000), ovni_event("OB.", 2000)], loom="a.0")
    write_ovni_stream(tmp_path, [ovni_event("OB.", second_clock)], loom="b.0", pid=2)
    write_ovni_stream(tmp_path, [], loom="c.0", pid=3)
    return tmp_path


def test_clock_gate(tmp_path):
    """ovniemu: every stream's first clock within one hour of the first
    stream's (clock offsets applied), or "detected large clock gate"."""
    trace = gate_trace(tmp_path / "apart", 1000 + HOUR + 1)
    found = problems(run_weft("check", trace, expect=1).stdout)
    assert [(f[0], f[1], f[2]) for f in found] == [
        ("loom.b.0/proc.2/thread.2/stream.obs", 8, "error")]
    assert found[0][3].startswith(f"first clock {1000 + HOUR + 1} is 1.00 h from the first "
                                  "clock of loom.a.0/proc.1/thread.1 (more than 1 h)")
    trace = gate_trace(tmp_path / "hour", 1000 + HOUR)
    run_weft("check", trace, expect=0)
    trace = gate_trace(tmp_path / "offsets", 1000 + 2 * HOUR)
    (trace / "clock-offsets.txt").write_text(
        "rank hostname offset_median offset_mean offset_std\n"
        f"0 a 0 0 0\n1 b {-2 * HOUR} 0 0\n2 c 0 0 0\n")
    run_weft("check", trace, expect=0)


def cpu_trace(tmp_path, *per_process):
    """One loom, one process per list of (index, phyid) CPUs it declares."""
    from weftlib import ovni_event, write_ovni_stream
    for pid, cpus in enumerate(per_process, 1):
        write_ovni_stream(tmp_path, [ovni_event("OB.", 1000)], pid=pid, cpus=cpus)
    return tmp_path


@pytest.mark.parametrize("cpus,why", [
    ([[(0, 0)], [(0, 1)], [(0, 2)]],
     'CPU index 0 is declared for phyid 0 and phyid 1 (ovniemu: "cpu with index 0 already taken")'),
    ([[(0, 0), (1, 1)], [(1, 0)]],
     'CPU phyid 0 has index 0 and index 1 (ovniemu: "mismatch index in existing cpu")'),
    ([[(0, 0)], [(2, 1)]],
     'CPU index 2 out of bounds: the loom has 2 CPUs, indices 0..1 (ovniemu: "cpu index out of bounds")'),
])
def test_loom_cpus_ovniemu_refuses(tmp_path, cpus, why):
    """ovni's duplicated-cpu-index test: each process of a loom declares
    index 0 for its own phyid; and the other rules of ovniemu's loom.c."""
    found = problems(run_weft("check", cpu_trace(tmp_path, *cpus), expect=1).stdout)
    assert found == [("loom.vm.0", None, "warning", "the CPUs of this loom (ovni.loom_cpus "
                      f"of its streams) are not valid: {why}; ovniemu refuses the trace")]


def test_loom_cpus_split_over_processes_are_fine(tmp_path):
    """partial-cpus / merge-cpus-loom: each process declares some CPUs, or
    the same ones again."""
    run_weft("check", cpu_trace(tmp_path, [(0, 4)], [(1, 7), (0, 4)], [(2, 5)]), expect=0)
