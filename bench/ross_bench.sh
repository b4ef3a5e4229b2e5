#!/bin/sh
# SPDX-License-Identifier: MIT
# ROSS benchmark of weft: decoding through the API (bench_ross_decode),
# `weft table` of each level (to a pipe and to a file), sorted tables,
# `weft summary`, `weft plot`, and info/top/check on a run with many
# streams; each with its wall time, input throughput and peak RSS (GNU
# time's maximum resident set size). Last, top/info/check/profile/summary
# on 1 and 2 threads (the run read in byte pieces, the open's scan too),
# and table and dump (batches of records formatted by the threads), the
# fastest of 3 runs each, the two outputs compared.
#
# usage: bench/ross_bench.sh [BUILD_DIR] [RUN_DIR] [SIZE]
#   BUILD_DIR  default build/ (needs weft and bench/bench_ross_decode)
#   RUN_DIR    default /tmp/weft-ross-bench (written by make_ross_run.py
#              when missing: the reference gvt file of 2 PEs repeated
#              with increasing times)
#   SIZE       run size when it is written (default 500M)
# The many-streams run (100M, 6146 streams) goes to RUN_DIR-many, a vt run
# (the reference analysis-lps file repeated, SIZE) to RUN_DIR-vt. The
# tables written to a file go to $TMPDIR (default /tmp) and are removed.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$top/build}
run=${2:-/tmp/weft-ross-bench}
size=${3:-500M}
many=$run-many
weft=$build/weft
tmp=${TMPDIR:-/tmp}

command -v /usr/bin/time >/dev/null 2>&1 || {
	echo "needs GNU time (apt-get install time)" >&2; exit 1; }
[ -d "$run" ] || python3 "$top/bench/make_ross_run.py" --size "$size" "$run"
[ -d "$many" ] || python3 "$top/bench/make_ross_run.py" --size 100M --spread 256 "$many"
vt=$run-vt
[ -d "$vt" ] || python3 "$top/bench/make_ross_run.py" --size "$size" \
	--ref "$top/tests/data/ross/phold-vt-pekplp/np1/ross-stats-analysis-lps.bin" "$vt"
cat "$run"/*.bin "$many"/*.bin "$vt"/*.bin > /dev/null   # in the page cache
bytes=$(cat "$run"/*.bin | wc -c)

# measure NAME BYTES CMD...: time a command (stdout to /dev/null), print a row.
measure() {
	name=$1; in=$2; shift 2
	/usr/bin/time -f "%e %M" -o "$tmp/weft-ross-bench.time" "$@" > /dev/null
	read -r secs rss_kb < "$tmp/weft-ross-bench.time"
	awk -v n="$name" -v s="$secs" -v r="$rss_kb" -v b="$in" 'BEGIN {
		printf "| %-40s | %6.2f s | %7.0f MB/s | %6.1f MB |\n", n, s, b / s / 1e6, r / 1024 }'
}

echo "run: $run, $bytes bytes ($(nproc) CPUs, load $(cut -d' ' -f1 /proc/loadavg))"
"$build/bench/bench_ross_decode" "$run" 5
"$build/bench/bench_ross_decode" "$run" 5 typed
echo
echo "| command | time | input | peak RSS |"
echo "|---|---|---|---|"
for level in pe kp lp; do
	measure "weft table --level $level -o - (pipe)" "$bytes" "$weft" table --level "$level" -o - "$run"
done
for level in pe kp lp; do
	out="$tmp/weft-ross-bench-$level.csv"
	rm -f "$out"
	measure "weft table --level $level -o FILE" "$bytes" "$weft" table --level "$level" -o "$out" "$run"
	rm -f "$out"
done
measure "weft table --level lp --sort virtual (pipe)" "$bytes" "$weft" table --level lp --sort virtual -o - "$run"
measure "weft table --level pe --sort real (pipe)" "$bytes" "$weft" table --level pe --sort real -o - "$run"
measure "weft summary" "$bytes" "$weft" summary "$run"
measure "weft plot --level kp" "$bytes" "$weft" plot --level kp -o - "$run"
mbytes=$(cat "$many"/*.bin | wc -c)
echo
echo "many streams: $many, $mbytes bytes, $("$weft" check "$many" | sed -n 's/^ok: \([0-9]*\) streams.*/\1/p') streams"
echo
echo "| command | time | input | peak RSS |"
echo "|---|---|---|---|"
measure "weft info" "$mbytes" "$weft" info "$many"
measure "weft top --streams" "$mbytes" "$weft" top --streams "$many"
measure "weft check" "$mbytes" "$weft" check "$many"

# fastest N CMD...: the shortest wall time of N runs (stdout to /dev/null).
fastest() {
	n=$1; shift
	: > "$tmp/weft-ross-bench.times"
	for _ in $(seq "$n"); do
		/usr/bin/time -f "%e" -a -o "$tmp/weft-ross-bench.times" "$@" > /dev/null
	done
	sort -n "$tmp/weft-ross-bench.times" | head -1
}

echo
echo "threads: $run (and $vt), the fastest of 3 runs"
echo
echo "| command | 1 thread | 2 threads | speed-up |"
echo "|---|---|---|---|"
# threads_row NAME RUN CMD...: CMD on 1 and 2 threads, compared, then timed.
threads_row() {
	name=$1; in=$2; shift 2
	"$weft" "$@" --threads 1 "$in" > "$tmp/weft-ross-bench.1"
	"$weft" "$@" --threads 2 "$in" > "$tmp/weft-ross-bench.2"
	cmp -s "$tmp/weft-ross-bench.1" "$tmp/weft-ross-bench.2" || {
		echo "$name: 2 threads print other bytes than 1" >&2; exit 1; }
	one=$(fastest 3 "$weft" "$@" --threads 1 "$in")
	two=$(fastest 3 "$weft" "$@" --threads 2 "$in")
	awk -v c="$name" -v a="$one" -v b="$two" 'BEGIN {
		printf "| %s | %.2f s | %.2f s | %.2fx |\n", c, a, b, a / b }'
}
for cmd in top info check profile summary; do
	threads_row "weft $cmd" "$run" "$cmd"
done
threads_row "weft summary (vt run)" "$vt" summary
threads_row "weft summary --dedup (vt run)" "$vt" summary --dedup
# rows in the files' merged order: threads format batches of records
threads_row "weft table --level lp -o -" "$run" table --level lp -o -
threads_row "weft table --level pe --sort virtual -o -" "$run" table --level pe --sort virtual -o -
threads_row "weft dump (2.1 GB of text)" "$run" dump
rm -f "$tmp/weft-ross-bench.time" "$tmp/weft-ross-bench.times" "$tmp/weft-ross-bench.1" \
	"$tmp/weft-ross-bench.2"
