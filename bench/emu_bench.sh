#!/bin/sh
# SPDX-License-Identifier: MIT
# Benchmark of the ovni emulation (docs/emulation.md, docs/PERFORMANCE.md):
# on an ovni trace of a nOS-V program (bench_emit --nosv: tasks created,
# submitted, run, paused, ended, with API, scheduler and memory
# subsystems), the wall time, events per second and peak resident memory
# (GNU time's maximum RSS) of
#   - weft convert --emulate -t paraver (ovniemu's thread.* and cpu.*),
#   - weft convert --emulate -t perfetto,
#   - weft convert --raw -t paraver (the generic mapping, for comparison),
#   - weft check --models (the emulation without output),
#   - the real ovniemu -l on a copy of the trace, when OVNIEMU names it
#     (built from ovni's sources outside the repository; never committed).
# The fastest of RUNS runs is shown, with the largest peak RSS.
#
# usage: bench/emu_bench.sh [BUILD_DIR] [TRACE_DIR] [SIZE] [RUNS]
#   BUILD_DIR  default build/ (a Release build: cmake -DCMAKE_BUILD_TYPE=Release)
#   TRACE_DIR  default /tmp/weft-emu-bench-trace (written by bench_emit when missing)
#   SIZE       bench_emit --bytes for a missing trace (default 1G)
#   RUNS       runs of each row (default 1; take 3 on a quiet machine)
# Environment: OVNIEMU=/path/to/ovniemu to time the real one too.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$top/build}
trace=${2:-/tmp/weft-emu-bench-trace}
size=${3:-1G}
runs=${4:-1}
weft=$build/weft
out=$(mktemp -d "${TMPDIR:-/tmp}/weft-emu-bench.XXXXXX")
trap 'rm -rf "$out"' EXIT

command -v /usr/bin/time >/dev/null 2>&1 || {
	echo "needs GNU time (apt-get install time)" >&2; exit 1; }
if [ ! -d "$trace" ]; then
	"$build/bench/bench_emit" --write-trace "$trace" --bytes "$size" --threads 4 --nosv
fi
bytes=$(du -sb "$trace" | cut -f1)
cat $(find "$trace" -name stream.obs) > /dev/null
events=$("$weft" check "$trace" | sed -n 's/.*streams, \([0-9]*\) events.*/\1/p')

# run NAME COMMAND...: RUNS timed runs of COMMAND (its output removed
# before each), one table row: the fastest, the largest peak RSS.
run() {
	name=$1; shift
	: > "$out/times"
	i=0
	while [ "$i" -lt "$runs" ]; do
		rm -rf "$out/o" "$out/o.pftrace" "$out/o.prv" "$out/o.pcf" "$out/o.row" "$out/copy"
		[ "$name" != ovniemu ] || cp -r "$trace" "$out/copy"
		/usr/bin/time -f "%e %M" -a -o "$out/times" "$@" > /dev/null 2> "$out/err" || {
			echo "$name failed:" >&2; tail -3 "$out/err" >&2; }
		i=$((i + 1))
	done
	best=$(sort -n "$out/times" | awk 'NR == 1 { s = $1 } $2 > r { r = $2 } END { print s, r }')
	awk -v n="$name" -v s="${best% *}" -v r="${best#* }" -v e="$events" 'BEGIN {
		printf "| %-34s | %7.2f s | %7.2f M events/s | %7.1f MB |\n",
		       n, s, e / s / 1e6, r / 1024 }'
}

echo "trace: $trace, $bytes bytes, $events events"
echo "| command | time | events | peak RSS |"
echo "|---|---|---|---|"
run "weft convert --emulate -t paraver" "$weft" convert "$trace" --emulate -t paraver -o "$out/o"
if "$weft" convert --help | grep -q "perfetto.*emulat\|emulat.*perfetto"; then
	run "weft convert --emulate -t perfetto" "$weft" convert "$trace" --emulate \
		-t perfetto -o "$out/o.pftrace"
fi
run "weft convert --raw -t paraver" "$weft" convert "$trace" --raw -t paraver -o "$out/o"
if "$weft" check --help | grep -q -- "--models"; then
	run "weft check --models" "$weft" check --models "$trace"
fi
if [ -n "${OVNIEMU:-}" ]; then
	run ovniemu "$OVNIEMU" -l "$out/copy"
fi
