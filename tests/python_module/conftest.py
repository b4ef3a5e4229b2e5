# SPDX-License-Identifier: MIT
"""Tests of the Python module weft (docs/python.md), run by the ctest entry
python_module with PYTHONPATH=<build>/python and /usr/bin/python3."""

import os
import pathlib
import subprocess

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
DATA = pathlib.Path(os.environ.get("WEFT_TEST_DATA", REPO / "tests" / "data"))


def weft_bin():
    """The weft command of the build the module comes from."""
    if "WEFT_BIN" in os.environ:
        return os.environ["WEFT_BIN"]
    return str(REPO / "build" / "weft")


def all_traces():
    """Every trace of tests/data that the byte-identity check converts
    (scripts/compare-outputs.sh), the ROSS run directories and the ovni
    sort cases (single stream files)."""
    globs = ["ovni/v1/*/ovni", "ovni/v2/*/ovni", "ovni/v3/*/ovni", "ovni/peer/*/ovni",
             "ovni/sort-cases/*.obs", "heph/*.bin.log", "pallas/*/trace/main.pallas",
             "ross/*/*/*.bin", "ross/*/np*", "otf2/*/traces.otf2"]
    return sorted(p for g in globs for p in DATA.glob(g))


def dump_json(path, *args):
    """The events of `weft dump --json` as JSON texts, one per event."""
    r = subprocess.run([weft_bin(), "dump", "--json", *args, str(path)], capture_output=True,
                       text=True, check=False)
    assert r.returncode in (0, 1), r.stderr
    return r.stdout.splitlines()


@pytest.fixture
def heph_path():
    return DATA / "heph" / "heph_sample.bin.log"
