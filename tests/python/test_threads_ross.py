# SPDX-License-Identifier: MIT
"""ROSS runs read by threads in byte pieces (core/parts.c weft__pieces_run,
formats/ross: the cuts that the open's scan notes): `top`, `info`,
`check`, `profile` and `summary` print, byte for byte, what one thread
prints, with 2, 3 and 4 threads, on every run of tests/data/ross (and
`table` and `dump`, whose records threads format in batches, as one
thread does); on runs
that make `check` list mismatches (capped per stream across pieces); on
vt runs whose virtual times go back (`summary`: duplicates and earlier
samples by each stream's whole past); and on damaged runs (a cut record,
garbage read past with --resync, a junk file, the run given as its one
file).

Both ways (THREADS): as the runs are (files below 1 MiB a thread: the
open scans them on one thread, noting cuts at 256 bounds that the
threads join into their pieces), and with WEFT_TEST_ROSS_PIECE_MIN=1
(the open's scan on threads too, formats/ross/ross_share.c, its guessed
record starts checked; a piece that does not join up makes its file
scanned whole)."""

import json
import os
import subprocess

import pytest

from weftlib import ROSS_COMMANDS as COMMANDS, ROSS_RUNS as RUNS, WEFT, assert_same_run, ross_damaged_runs, \
    ross_false_start_run, ross_vt_reordered_runs



OPEN_ON_THREADS = dict(os.environ, WEFT_TEST_ROSS_PIECE_MIN="1")


def run(args, env=None):
    return subprocess.run([str(a) for a in args], capture_output=True, text=True,
                          timeout=300, env=env)


# (threads, environment): the open's scan on one thread (files below 1 MiB
# a thread: the threads join the 256 pieces that its scan noted), and on
# the threads (the runs cut whatever their size).
THREADS = ((2, None), (4, None), (2, OPEN_ON_THREADS), (3, OPEN_ON_THREADS))


def assert_same_on_threads(command, trace, threads=THREADS):
    """The command on each (threads, environment) of `threads` against one
    thread."""
    expected = run([WEFT] + command + ["--threads", "1", trace])
    for n, env in threads:
        got = run([WEFT] + command + ["--threads", n, trace], env)
        assert_same_run(expected, got, f"{' '.join(command)} of {trace} on {n} threads"
                        + (" (open on threads)" if env else ""))
    return expected


# Commands whose rows come in the merged order of the files: the reading
# stays on one thread and threads format batches of records at once
# (outputs/pipeline.c weft__farm_run), the texts written in batch order.
FARM_COMMANDS = [["table", "--level", level, "-o", "-"]
                 for level in ("pe", "kp", "lp", "model", "event")] + [
    ["table", "--level", "lp", "--sort", "virtual", "-o", "-"],
    ["table", "--level", "pe", "--sort", "real", "--sort-budget", "4096", "-o", "-"],
    ["dump"], ["dump", "--json"], ["dump", "-x"]]


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
    for env in (None, OPEN_ON_THREADS):
        got = run([WEFT, command, "--verbose", "--threads", "3", RUNS[0]], env)
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


@pytest.mark.parametrize("command", [["summary", "--json"], ["summary", "--dedup"]],
                         ids=lambda c: "-".join(c))
def test_vt_files_in_pieces_count_what_one_pass_counts(tmp_path, command):
    """vt files whose virtual times go back, read in pieces: a sample is a
    duplicate or earlier by its stream's whole past, which the merge of
    the pieces supplies (analysis/ross_summary.c merge_vt_part: the
    pieces' first samples and record highs, the held-back samples of
    --dedup), or the file is read again whole (the shuffled run, on 2 and
    4 threads)."""
    for name, trace in ross_vt_reordered_runs(tmp_path).items():
        expected = assert_same_on_threads(command, trace)
        assert expected.returncode == 0, expected.stderr
        if command[1] == "--json":
            earlier = json.loads(expected.stdout)["modes"][0]["earlier"]
            assert sum(earlier.values()) > 0, (name, earlier)


def test_a_wrong_guess_of_a_record_start_is_caught(tmp_path):
    """The open's scan on 2 threads: the second thread's guess lands
    inside a record, which the first thread's framing shows, so the file
    is scanned whole, and the records are counted once each (a guess
    taken would add the copies as records)."""
    trace = ross_false_start_run(tmp_path / "false-start")
    for command in (["info"], ["top", "--streams"], ["check"]):
        expected = assert_same_on_threads(command, trace, threads=THREADS[2:])
        assert expected.returncode == 0, expected.stderr
    top = run([WEFT, "top", "--threads", "2", trace], OPEN_ON_THREADS)
    assert "301" in top.stdout and "EVENT" in top.stdout, top.stdout


@pytest.mark.parametrize("damage", ["cut", "garbage", "junk", "one-file"])
def test_damaged_runs_print_what_one_thread_prints(tmp_path, damage):
    trace = ross_damaged_runs(tmp_path)[damage]
    for command in (["top", "--streams"], ["info"], ["check"], ["summary"]):
        expected = assert_same_on_threads(command, trace, threads=THREADS[1:3])
        if damage != "one-file":
            assert expected.stderr or expected.returncode != 0 or "warning" in expected.stdout
    if damage == "garbage":
        # the pieces jump over the regions that the open skipped
        for command in (["top", "--streams", "--resync"], ["check", "--resync"],
                        ["info", "--resync"], ["summary", "--resync"]):
            expected = assert_same_on_threads(command, trace, threads=THREADS[1:3])
            assert "skipped" in expected.stdout + expected.stderr, expected


@pytest.mark.parametrize("command", FARM_COMMANDS, ids=lambda c: "-".join(c[:-2] if "-o" in c else c))
def test_rows_formatted_by_threads_are_one_threads_rows(command):
    """table and dump: batches formatted by 2, 3 and 5 threads at once,
    written in batch order (a sorted table's rows handed to its sort in
    that order): the same bytes as one thread."""
    for trace in RUNS:
        expected = assert_same_on_threads(command, trace, threads=((2, None), (3, None), (5, None)))
        assert expected.returncode in (0, 1), expected.stderr


@pytest.mark.parametrize("command", [["table", "--level", "lp", "-o", "-"], ["dump"]],
                         ids=lambda c: c[0])
def test_rows_formatted_by_threads_say_so_and_fail_cleanly(command):
    got = run([WEFT] + command + ["--verbose", "--threads", "3", RUNS[0]])
    assert got.returncode == 0, got.stderr
    assert f"weft {command[0]}: threads used: 3" in got.stderr, got.stderr
    with open("/dev/full", "w") as full:
        failed = subprocess.run([str(WEFT)] + command + ["--threads", "3", str(RUNS[0])],
                                stdout=full, stderr=subprocess.PIPE, text=True, timeout=60)
    assert failed.returncode == 2, failed.stderr
    assert "No space left on device" in failed.stderr, failed.stderr
