# SPDX-License-Identifier: MIT
"""ROSS runs read by threads in byte pieces (core/parts.c weft__pieces_run,
formats/ross: the cuts that the open's scan notes): `top`, `info`,
`check`, `profile` and `summary` print, byte for byte, what one thread
prints, with 2, 3 and 4 threads, on every run of tests/data/ross; on runs
that make `check` list mismatches (capped per stream across pieces); and
on damaged runs (a cut record, garbage read past with --resync, a junk
file, the run given as its one file)."""

import subprocess

import pytest

from weftlib import ROSS_RUNS as RUNS, WEFT, assert_same_run, ross_damaged_runs

COMMANDS = (
    ["top", "--streams"],
    ["top", "--time"],
    ["profile", "--by", "stream"],
    ["info"],
    ["check"],
    ["summary", "--json"],
    ["summary", "--dedup"],
)


def run(args):
    return subprocess.run([str(a) for a in args], capture_output=True, text=True,
                          timeout=300)


def assert_same_on_threads(command, trace, threads=(2, 3, 4)):
    """The command on `threads` threads against one thread."""
    expected = run([WEFT] + command + ["--threads", "1", trace])
    for n in threads:
        got = run([WEFT] + command + ["--threads", n, trace])
        assert_same_run(expected, got, f"{' '.join(command)} of {trace} on {n} threads")
    return expected


def test_the_runs_are_the_tests_ross_runs():
    assert len(RUNS) == 7, RUNS


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: "-".join(c))
def test_pieces_on_threads_print_what_one_thread_prints(command):
    for trace in RUNS:
        expected = assert_same_on_threads(command, trace)
        assert expected.returncode in (0, 1), expected.stderr


@pytest.mark.parametrize("command", ["top", "info", "check", "profile", "summary"])
def test_the_threads_are_used(command):
    """Verbose: the threads the command used (pieces, not a fallback)."""
    got = run([WEFT, command, "--verbose", "--threads", "3", RUNS[0]])
    assert got.returncode == 0, got.stderr
    assert f"weft {command}: threads used: 3" in got.stderr, got.stderr


@pytest.mark.parametrize("schema, listing", [
    ("MODEL: u64 a, u64 b, u64 c, u64 d, u64 e, u64 f", "phold-model-gvt"),
    ("EVENT: u64 a, u64 b, u64 c", "phold-evtrace-full")])
def test_mismatches_are_listed_as_one_thread_lists_them(schema, listing):
    """A schema longer than the model data: every record mismatches; each
    stream lists its first 10 in file order, then the overflow line, as
    the pieces of every thread come together."""
    for trace in RUNS:
        expected = assert_same_on_threads(["check", "--ross-model-schema", schema], trace)
        assert expected.returncode in (0, 1), expected.stderr
        if trace.parent.name == listing:
            assert "more payloads not matching" in expected.stdout, expected.stdout


@pytest.mark.parametrize("damage", ["cut", "garbage", "junk", "one-file"])
def test_damaged_runs_print_what_one_thread_prints(tmp_path, damage):
    trace = ross_damaged_runs(tmp_path)[damage]
    for command in (["top", "--streams"], ["info"], ["check"], ["summary"]):
        expected = assert_same_on_threads(command, trace, threads=(2, 4))
        if damage != "one-file":
            assert expected.stderr or expected.returncode != 0 or "warning" in expected.stdout
    if damage == "garbage":
        # the pieces jump over the regions that the open skipped
        for command in (["top", "--streams", "--resync"], ["check", "--resync"],
                        ["info", "--resync"], ["summary", "--resync"]):
            expected = assert_same_on_threads(command, trace, threads=(2, 4))
            assert "skipped" in expected.stdout + expected.stderr, expected
