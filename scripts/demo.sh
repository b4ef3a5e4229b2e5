#!/bin/sh
# SPDX-License-Identifier: MIT
# Command 1 of the README: installs what is missing, builds weft, records a
# trace of the bundled example (a multi-threaded computation instrumented
# through the ovni-compatible API), shows `weft info`, `weft top` and a
# per-thread profile, and converts the trace for Perfetto's viewer.
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
echo "== weft profile --by stream $trace_dir   (time per region of each thread)"
"$build/weft" profile --by stream "$trace_dir"
pftrace=${trace_dir%/}.pftrace
echo
echo "== weft convert $trace_dir -t perfetto -f -o $pftrace"
"$build/weft" convert "$trace_dir" -t perfetto -f -o "$pftrace"
echo
echo "The trace is in $trace_dir (try: $build/weft dump $trace_dir | head)."
echo "To see it on a timeline, open https://ui.perfetto.dev in a browser and drag"
echo "$pftrace onto the page (the file is read in the browser, not uploaded)."
