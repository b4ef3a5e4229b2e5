#!/bin/sh
# SPDX-License-Identifier: MIT
# Benchmark of `weft convert -t chrome` (or TO) on a Heph trace: events
# per second and peak resident memory (GNU time's maximum RSS), for the
# default mode, one thread (--threads 1) and, for chrome, --heph-compat,
# written to a file (temporary file, fsync and rename included) and to
# /dev/null (-o -: the conversion alone, without the kernel's page cache
# and the disk).
#
# Each row also shows the median user and system CPU time: into a file,
# the system time is mostly the kernel's copy into the page cache, which
# runs on the writer thread, beside the formatting.
#
# usage: bench/convert_bench.sh [BUILD_DIR] [TRACE] [RUNS] [TO]
#   BUILD_DIR  default build/
#   TRACE      default /tmp/weft-convert-bench.bin.log, written when
#              missing by BUILD_DIR/bench/bench_heph_write --write-trace
#              (3 M events, 8 streams, about 200 MB)
#   RUNS       runs per row (default 5); each row shows the median
#   TO         the output format: chrome (default), perfetto
# The output goes next to the trace (OUT = TRACE.TO), which is removed
# before each run (outside the timing: freeing its pages is not the
# converter's work). The trace is read once before measuring so that it
# is in the page cache.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$top/build}
trace=${2:-/tmp/weft-convert-bench.bin.log}
runs=${3:-5}
to=${4:-chrome}
weft=$build/weft
out=$trace.$to
tmp=$(mktemp -d)
trap 'rm -rf "$tmp" "$out"' EXIT

command -v /usr/bin/time >/dev/null 2>&1 || {
	echo "needs GNU time (apt-get install time)" >&2; exit 1; }
if [ ! -f "$trace" ]; then
	"$build/bench/bench_heph_write" --write-trace "$trace" --events 3000000 --streams 8 >&2
fi
bytes=$(stat -c %s "$trace")
cat "$trace" > /dev/null
events=$("$weft" check "$trace" | sed -n 's/.*streams, \([0-9]*\) events.*/\1/p')

# run NAME TARGET ARGS...: RUNS timed conversions to TARGET (file or null),
# one table row with the median wall, user and system times and the
# largest RSS.
run() {
	name=$1; target=$2; shift 2
	: > "$tmp/times"
	i=0
	while [ "$i" -lt "$runs" ]; do
		rm -f "$out"
		sync
		if [ "$target" = file ]; then
			/usr/bin/time -f "%e %M %U %S" -o "$tmp/one" "$weft" convert "$trace" \
				-t "$to" -o "$out" "$@" 2> "$tmp/err" || true
		else
			/usr/bin/time -f "%e %M %U %S" -o "$tmp/one" "$weft" convert "$trace" \
				-t "$to" -o - "$@" > /dev/null 2> "$tmp/err" || true
		fi
		tail -n 1 "$tmp/one" >> "$tmp/times"
		i=$((i + 1))
	done
	mid=$(( (runs + 1) / 2 ))
	user=$(awk '{ print $3 }' "$tmp/times" | sort -n | sed -n "${mid}p")
	sys=$(awk '{ print $4 }' "$tmp/times" | sort -n | sed -n "${mid}p")
	sort -n "$tmp/times" | awk -v n="$name" -v e="$events" -v mid="$mid" \
		-v user="$user" -v sys="$sys" '
		{ t[NR] = $1; if ($2 > rss) rss = $2 }
		END {
			m = t[mid]
			printf "| %-34s | %6.2f s | %6.2f M events/s | %5.2f s | %5.2f s | %6.1f MB |\n",
			       n, m, e / m / 1e6, user, sys, rss / 1024 }'
}

echo "trace: $trace, $bytes bytes, $events events; median of $runs runs"
echo "| command                            | time     | events/s          | user    | sys     | max RSS  |"
echo "|---|---|---|---|---|---|"
run "convert -t $to -o OUT" file
run "convert -t $to -o - >/dev/null" null
run "same, --threads 1 -o OUT" file --threads 1
run "same, --threads 1 -o - >/dev/null" null --threads 1
if [ "$to" = chrome ]; then
	run "convert --heph-compat -o OUT" file --heph-compat
	run "convert --heph-compat -o - >/dev/null" null --heph-compat
fi
ls -l "$out" 2>/dev/null | awk '{ printf "output of the last run: %d bytes\n", $5 }' || true
