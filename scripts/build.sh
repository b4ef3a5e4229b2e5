#!/bin/sh
# SPDX-License-Identifier: MIT
# Configures and builds weft into BUILD_DIR (default: build) with warnings
# as errors. Extra arguments go to cmake (e.g. -DWEFT_SANITIZE=ON).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$top/build}
"$top/scripts/setup-deps.sh"
cmake -S "$top" -B "$build" -G Ninja -DWEFT_WERROR=ON "$@" >/dev/null
cmake --build "$build" -j "$(nproc)"
