# SPDX-License-Identifier: MIT
"""pytest set-up of the command-level tests: the helper module next to
this file is importable, and `copy_trace` gives a writable copy of a
reference trace in a temporary directory (to break it on purpose), and
`copy_pallas` the same for a Pallas reference trace."""

import os
import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import weftlib  # noqa: E402


def pytest_report_header(config):
    return f"weft binary: {weftlib.WEFT}; test data: {weftlib.DATA_DIR}"


@pytest.fixture
def copy_trace(tmp_path):
    """copy_trace(src_dir) -> path of a writable copy of the `ovni`
    directory of a reference trace (src_dir is the dir holding ovni/)."""
    def make(src_dir, name="trace"):
        dst = tmp_path / name
        shutil.copytree(Path(src_dir) / "ovni", dst)
        for root, dirs, files in os.walk(dst):
            for n in dirs + files:
                os.chmod(os.path.join(root, n), 0o755 if n in dirs else 0o644)
        return dst
    return make


@pytest.fixture
def copy_pallas(tmp_path):
    """copy_pallas(name) -> path of a writable copy of the trace directory
    of the Pallas reference trace `name` (tests/data/pallas/<name>/trace)."""
    def make(name, dst_name="t"):
        dst = tmp_path / dst_name
        shutil.copytree(weftlib.DATA_DIR / "pallas" / name / "trace", dst)
        for p in dst.rglob("*"):
            p.chmod(0o755 if p.is_dir() else 0o644)
        return dst
    return make
