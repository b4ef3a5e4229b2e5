#!/bin/sh
# SPDX-License-Identifier: MIT
# Command 2 of the README: installs what is missing, builds weft and runs
# every test (C unit tests and the command-level golden tests) with ctest.
# Extra arguments go to cmake (scripts/test.sh -DWEFT_SANITIZE=ON).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$top/build}
BUILD_DIR=$build "$top/scripts/build.sh" "$@"
cd "$build"
ctest --output-on-failure -j "$(nproc)"
