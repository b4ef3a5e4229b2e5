# SPDX-License-Identifier: MIT
"""pytest set-up of the MPI tests (weft-mpi): the command tests' helper
module (tests/python/weftlib.py) is importable, and `mpi_runner` gives the
weft-mpi program and mpiexec, or skips when either is absent."""

import os
import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python"))


@pytest.fixture(scope="session")
def mpi_runner():
    """(mpiexec, weft-mpi) paths; skips when weft-mpi was not built."""
    build = os.environ.get("WEFT_BUILD_DIR", "")
    runner = Path(build) / "weft-mpi"
    mpiexec = shutil.which("mpiexec")
    if not runner.is_file() or mpiexec is None:
        pytest.skip("weft-mpi or mpiexec is absent (install mpich and libmpich-dev)")
    return mpiexec, runner
