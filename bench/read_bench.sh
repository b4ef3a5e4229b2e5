#!/bin/sh
# SPDX-License-Identifier: MIT
# Read-side benchmark of weft on a large ovni trace: `weft top`,
# `weft dump` (text, -x, --json; two threads, then the text dump again in
# one thread with WEFT_THREADS=1) and `weft check`, each with its wall time,
# throughput and peak resident memory (GNU time's maximum RSS).
#
# usage: bench/read_bench.sh [BUILD_DIR] [TRACE_DIR] [SIZE] [RUNS]
#   BUILD_DIR  default build/
#   TRACE_DIR  default /tmp/weft-bench-trace (written by bench_emit when missing)
#   SIZE       trace size for bench_emit --bytes (default 1G)
#   RUNS       runs of each command; the fastest is shown (default 1; on a
#              shared machine take 3 or more)
# The trace is read once before measuring so that it is in the page cache.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$top/build}
trace=${2:-/tmp/weft-bench-trace}
size=${3:-1G}
runs=${4:-1}
weft=$build/weft

command -v /usr/bin/time >/dev/null 2>&1 || {
	echo "needs GNU time (apt-get install time)" >&2; exit 1; }
if [ ! -d "$trace" ]; then
	"$build/bench/bench_emit" --write-trace "$trace" --bytes "$size" --threads 4
fi
bytes=$(du -sb "$trace" | cut -f1)
cat $(find "$trace" -name stream.obs) > /dev/null
events=$("$weft" check "$trace" | sed -n 's/.*streams, \([0-9]*\) events.*/\1/p')

# run NAME ARGS...: time one command RUNS times, print a table row with
# the fastest run and the largest peak RSS.
run() {
	name=$1; shift
	: > /tmp/weft-bench.times
	i=0
	while [ "$i" -lt "$runs" ]; do
		/usr/bin/time -f "%e %M" -a -o /tmp/weft-bench.times "$@" > /dev/null
		i=$((i + 1))
	done
	best=$(sort -n /tmp/weft-bench.times | awk 'NR == 1 { s = $1 } $2 > r { r = $2 } END { print s, r }')
	secs=${best% *}
	rss_kb=${best#* }
	awk -v n="$name" -v s="$secs" -v r="$rss_kb" -v b="$bytes" -v e="$events" 'BEGIN {
		printf "| %-22s | %7.2f s | %8.2f GB/s | %8.1f M events/s | %6.1f MB |\n",
		       n, s, b / s / 1e9, e / s / 1e6, r / 1024 }'
}

echo "trace: $trace, $bytes bytes, $events events"
echo "| command                | time      | throughput    | events            | peak RSS |"
echo "|---|---|---|---|---|"
run "weft top" "$weft" top "$trace"
run "weft dump -x" "$weft" dump -x "$trace"
run "weft dump" "$weft" dump "$trace"
run "weft dump --json" "$weft" dump --json "$trace"
run "weft dump, 1 thread" env WEFT_THREADS=1 "$weft" dump "$trace"
run "weft check" "$weft" check "$trace"
