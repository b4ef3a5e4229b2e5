# SPDX-License-Identifier: MIT
"""`weft dump --json`: one valid JSON object per line with the documented
keys (docs/dump-json.md), the same events as `weft dump -x`, offsets that
point at the event in its stream file, and correct string escaping."""

import json

import pytest

from weftlib import (OLD_TRACES, PEER_TRACES, events_of_stream_file, expected_fields_json,
                     parse_dump, run_weft, stream_file, v3_dir, v3_traces,
                     with_payload)

REQUIRED_KEYS = ["time", "stream", "code", "fields", "payload", "offset"]
OPTIONAL_KEYS = {"end", "depth", "parent", "decode_error"}


def json_events(trace):
    out = run_weft("dump", "--json", trace, expect=0).stdout
    lines = out.splitlines()
    return [json.loads(l) for l in lines]


def all_traces():
    return [v3_dir(n) / "ovni" for n in v3_traces()] + \
        [OLD_TRACES[v] / "ovni" for v in sorted(OLD_TRACES)]


@pytest.mark.parametrize("trace", all_traces(), ids=lambda p: p.parent.name)
def test_json_lines_match_hex_dump(trace):
    objs = json_events(trace)
    hexes = with_payload(parse_dump(run_weft("dump", "-x", trace, expect=0).stdout))
    assert len(objs) == len(hexes)
    for obj, (clock, mcv, path, payload) in zip(objs, hexes):
        keys = list(obj)
        assert [k for k in keys if k in REQUIRED_KEYS] == REQUIRED_KEYS, keys
        assert set(keys) - set(REQUIRED_KEYS) <= OPTIONAL_KEYS, keys
        assert isinstance(obj["time"], int) and isinstance(obj["offset"], int)
        assert (obj["time"], obj["code"], obj["stream"]) == (clock, mcv, path)
        assert bytes.fromhex(obj["payload"]) == payload
        assert obj["payload"] == obj["payload"].lower()
        assert obj["fields"] == expected_fields_json(mcv, payload), obj
        assert "end" not in obj and "depth" not in obj  # ovni: point events


@pytest.mark.parametrize("trace", all_traces(), ids=lambda p: p.parent.name)
def test_json_offsets_point_at_the_event(trace):
    stored = {}
    for obj in json_events(trace):
        path = obj["stream"]
        if path not in stored:
            stored[path] = {e[0]: e for e in events_of_stream_file(stream_file(trace, path))}
        offset, _flags, mcv, clock, payload = stored[path][obj["offset"]]
        assert (mcv, clock, payload.hex()) == (obj["code"], obj["time"], obj["payload"])


def test_json_decode_error_key_for_mismatched_payload(copy_trace):
    """A payload shorter than its signature: the 2-byte OB. payload of the
    v2 trace, renamed OHx (16 bytes: i32 cpu, i32 tid, u64 tag)."""
    trace = copy_trace(OLD_TRACES[2])
    obs = trace / "loom.node1.trace/proc.1000/thread.1002.obs"
    data = bytearray(obs.read_bytes())
    assert data[36:40] == b"\x01OB."
    data[37:40] = b"OHx"
    obs.write_bytes(bytes(data))
    objs = json_events(trace)
    bad = [o for o in objs if o["code"] == "OHx" and o["payload"] == "efbe"]
    assert len(bad) == 1
    assert bad[0]["fields"] == {} and "OHx expects 16" in bad[0]["decode_error"]


def test_json_longer_payload_keeps_the_rest_as_extra(copy_trace):
    """nOS-V 4.1 writes OCn with 8 bytes (the table: i32 cpu): cpu, then
    the other 4 bytes as "extra"; OB. with 2 bytes (no fields): none."""
    objs = json_events(PEER_TRACES / "rt-nosv-several-tasks" / "ovni")
    ocn = [o for o in objs if o["code"] == "OCn"]
    assert len(ocn) == 1
    assert ocn[0]["fields"] == {"cpu": 2, "extra": "01000000"}
    assert ocn[0]["payload"] == "0200000001000000" and "decode_error" not in ocn[0]
    ob = [o for o in json_events(OLD_TRACES[2] / "ovni") if o["code"] == "OB." and o["payload"]]
    assert len(ob) == 1 and ob[0]["fields"] == {} and "decode_error" not in ob[0]


def test_json_and_text_escape_strings(copy_trace):
    """A task type label with a quote, a backslash, a control character,
    an invalid UTF-8 byte and a valid two-byte character."""
    trace = copy_trace(v3_dir("nosv-parallel-tasks"))
    obs = next(trace.rglob("stream.obs"))
    data = bytearray(obs.read_bytes())
    old = b"testtype100\0"
    new = b'a"b\\c\x01\xff\xc3\xa9zq\0'
    assert len(old) == len(new) and data.count(old) == 1
    data[data.index(old):data.index(old) + len(old)] = new
    obs.write_bytes(bytes(data))
    vyc = [o for o in json_events(trace) if o["code"] == "VYc"]
    assert vyc[0]["fields"] == {"typeid": 100, "label": 'a"b\\c\x01\ufffd\u00e9zq'}
    text = run_weft("dump", trace, expect=0).stdout
    line = [l for l in text.splitlines() if "  VYc  " in l][0]
    assert line.endswith('typeid=100 label="a\\"b\\\\c\\x01\\xff\u00e9zq"')


def replace_jumbo_label(obs, old, new):
    """Replaces the string `old` of a jumbo event by `new` (any length),
    fixing the jumbo size field of that event."""
    data = bytearray(obs.read_bytes())
    at = data.index(old)
    for offset, flags, _mcv, _clock, payload in events_of_stream_file(obs):
        if flags & 0x10 and offset + 16 <= at < offset + 12 + len(payload):
            size = int.from_bytes(data[offset + 12:offset + 16], "little")
            data[offset + 12:offset + 16] = (size - len(old) + len(new)).to_bytes(4, "little")
            break
    else:
        raise AssertionError("no jumbo event holds the label")
    data[at:at + len(old)] = new
    obs.write_bytes(bytes(data))


def test_json_replaces_each_invalid_utf8_byte(copy_trace):
    """Overlong form, surrogate, stray continuation, truncated sequence
    (each invalid byte becomes U+FFFD), and valid 3- and 4-byte forms."""
    trace = copy_trace(v3_dir("nosv-parallel-tasks"))
    obs = next(trace.rglob("stream.obs"))
    label = b"<\xc0\xaf|\xed\xa0\x80|\x80|\xe2\x82\xac|\xf0\x9f\x98\x80|\x7f\x1f|\xe2\x82>"
    replace_jumbo_label(obs, b"testtype100", label)
    vyc = [o for o in json_events(trace) if o["code"] == "VYc"][0]
    assert vyc["fields"]["label"] == (
        "<\ufffd\ufffd|\ufffd\ufffd\ufffd|\ufffd|\u20ac|\U0001f600|\x7f\x1f|\ufffd\ufffd>")
    raw = run_weft("dump", "--json", trace, expect=0).stdout
    line = [l for l in raw.splitlines() if '"VYc"' in l][0]
    assert '\\u001f' in line and '\\ufffd' in line
    text = run_weft("dump", trace, expect=0).stdout
    tline = [l for l in text.splitlines() if "  VYc  " in l][0]
    assert tline.endswith('label="<\\xc0\\xaf|\\xed\\xa0\\x80|\\x80|\u20ac|\U0001f600|'
                          '\\x7f\\x1f|\\xe2\\x82>"')
