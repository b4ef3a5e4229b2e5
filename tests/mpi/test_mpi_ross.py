# SPDX-License-Identifier: MIT
"""ROSS runs on ranks (formats/ross/ross_share.c): each rank scans one byte
piece of each file in the open and reads only its pieces in top, profile,
info, check and summary (whose vt files rank 0 reads whole), and the
output is exactly the serial command's (stdout, stderr, exit status). The tests' runs are small, so the test hook
WEFT_TEST_ROSS_PIECE_MIN=1 cuts them (alone, files below 1 MiB a rank are
scanned whole by every rank, which the command tests cover).

What must not change the output: a piece whose first record start is a
guess that is wrong (the test crafts one), a piece that meets a bad or
cut record (the file is then scanned whole by every rank, which reports
it), garbage skipped by --resync, a file that is no ROSS data, a run given
as one file."""

import os
import subprocess

import pytest

from weftlib import ROSS_COMMANDS as COMMANDS, ROSS_RUNS as RUNS, WEFT, assert_same_run, ross_damaged_runs, \
    ross_false_start_run, ross_vt_reordered_runs

PIECES = dict(os.environ, WEFT_TEST_ROSS_PIECE_MIN="1")



def run(args, env=None):
    return subprocess.run([str(a) for a in args], capture_output=True, text=True,
                          timeout=600, env=env)


def assert_same_on_ranks(mpi_runner, command, trace, ranks=(2, 3)):
    mpiexec, runner = mpi_runner
    expected = run([WEFT] + command + [trace])
    for n in ranks:
        got = run([mpiexec, "-n", n, runner] + command + [trace], env=PIECES)
        assert_same_run(expected, got, f"{' '.join(command)} of {trace} on {n} ranks")
    return expected


def test_the_runs_are_the_tests_ross_runs():
    assert len(RUNS) == 7, RUNS


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: "-".join(c))
def test_pieces_print_what_one_process_prints(mpi_runner, command):
    """Every run on 3 ranks (cuts that are no halves), the run of five
    files on 2 as well."""
    for trace in RUNS:
        ranks = (2, 3) if trace.parent.name == "im-everything" else (3,)
        expected = assert_same_on_ranks(mpi_runner, command, trace, ranks)
        assert expected.returncode in (0, 1), expected.stderr


def test_vt_files_in_pieces_count_what_one_process_counts(mpi_runner, tmp_path):
    """vt files whose virtual times go back, shared by the ranks: each
    rank's first samples, record highs and held-back samples merged on
    rank 0 (or the file read again whole there)."""
    for trace in ross_vt_reordered_runs(tmp_path).values():
        for command in (["summary", "--json"], ["summary", "--dedup"]):
            expected = assert_same_on_ranks(mpi_runner, command, trace)
            assert expected.returncode == 0, expected.stderr


def test_a_wrong_guess_of_a_record_start_is_caught(mpi_runner, tmp_path):
    """Rank 1's guess lands inside a record: rank 0's framing does not stop
    where the guess starts, so the file is scanned whole, and the records
    are counted once each (a guess taken would add the copies as records)."""
    trace = ross_false_start_run(tmp_path / "false-start")
    for command in (["info"], ["top", "--streams"], ["check"]):
        expected = assert_same_on_ranks(mpi_runner, command, trace)
        assert expected.returncode == 0, expected.stderr
    top = run([WEFT, "top", trace])
    assert "301" in top.stdout and "EVENT" in top.stdout, top.stdout


@pytest.mark.parametrize("damage", ["cut", "garbage", "junk", "one-file"])
def test_damaged_runs_print_what_one_process_prints(mpi_runner, tmp_path, damage):
    trace = ross_damaged_runs(tmp_path)[damage]
    for command in (["top", "--streams"], ["info"], ["check"], ["summary"]):
        expected = assert_same_on_ranks(mpi_runner, command, trace)
        if damage != "one-file":
            assert expected.stderr or expected.returncode != 0 or "warning" in expected.stdout
    if damage == "garbage":
        assert_same_on_ranks(mpi_runner, ["top", "--streams", "--resync"], trace)
        assert_same_on_ranks(mpi_runner, ["check", "--resync"], trace)
