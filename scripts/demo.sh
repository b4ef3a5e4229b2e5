#!/bin/sh
# SPDX-License-Identifier: MIT
# Command 1 of the README: installs what is missing, builds weft, records a
# trace of the bundled example (a multi-threaded computation instrumented
# through the ovni-compatible API), then shows `weft info` and `weft top`.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$top/build}
BUILD_DIR=$build "$top/scripts/build.sh"

trace_dir=${1:-$top/weft-demo-trace}
rm -rf "$trace_dir"
OVNI_TRACEDIR=$trace_dir "$build/examples/ovni_workers" "$trace_dir"
echo
echo "== weft info $trace_dir"
"$build/weft" info "$trace_dir"
echo
echo "== weft top $trace_dir"
"$build/weft" top "$trace_dir"
echo
echo "The trace is in $trace_dir (try: $build/weft dump $trace_dir | head)"
