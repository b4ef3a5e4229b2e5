#!/bin/sh
# SPDX-License-Identifier: MIT
# Benchmark of weft on an OTF2 archive (issue 18): `weft dump` against
# Debian's `otf2-print` on the same archive (both print every event, merged
# by time, to /dev/null), `weft top`, and the conversions to Perfetto,
# Pallas and OTF2 (into files: temporary names, fsync and rename
# included). Each row: the median of RUNS runs, events per second, peak
# resident memory (GNU time), and the size of the output.
#
# usage: bench/otf2_bench.sh [BUILD_DIR] [TRACE_DIR] [RUNS] [ITERATIONS]
#   BUILD_DIR   default build/ (its tests/otf2_make_trace writes the archive)
#   TRACE_DIR   default /tmp/weft-otf2-bench, written when missing by
#               otf2_make_trace: 4 ranks of 2 threads, ITERATIONS
#               iterations (default 160000: 10.2 M events, 139 MB)
#   RUNS        runs per row (default 3)
# The archive is read once before measuring so that it is in the page
# cache; outputs go next to it and are removed after each run.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$top/build}
trace=${2:-/tmp/weft-otf2-bench}
runs=${3:-3}
iterations=${4:-160000}
weft=$build/weft
anchor=$trace/traces.otf2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

command -v /usr/bin/time >/dev/null 2>&1 || {
	echo "needs GNU time (apt-get install time)" >&2; exit 1; }
command -v otf2-print >/dev/null 2>&1 || {
	echo "needs otf2-print (apt-get install otf2-tools)" >&2; exit 1; }
if [ ! -f "$anchor" ]; then
	"$build/tests/otf2_make_trace" "$trace" --ranks 4 --threads 2 \
		--iterations "$iterations" >&2
fi
cat "$trace"/traces/*.evt "$trace"/traces.def > /dev/null
events=$("$weft" info "$anchor" | sed -n 's/^events: \([0-9]*\).*/\1/p')
echo "archive: $anchor, $events events, $(du -sh "$trace" | cut -f1)"
echo
echo "| command | time | events/s | peak RSS | output |"
echo "|---|---|---|---|---|"

# row NAME OUT CMD...: runs CMD `runs` times (OUT removed before each run),
# prints the median time, the events per second and the largest RSS.
row() {
	name=$1; out=$2; shift 2
	: > "$tmp/times"
	rss=0
	i=0
	while [ "$i" -lt "$runs" ]; do
		rm -rf "$out"
		/usr/bin/time -f "%e %M" -o "$tmp/one" "$@" > /dev/null 2> "$tmp/err" || {
			cat "$tmp/err" >&2; exit 1; }
		read -r t m < "$tmp/one"
		echo "$t" >> "$tmp/times"
		[ "$m" -gt "$rss" ] && rss=$m
		i=$((i + 1))
	done
	t=$(sort -n "$tmp/times" | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
	size=-
	[ -e "$out" ] && size=$(du -sh "$out" | cut -f1)
	rm -rf "$out"
	awk -v n="$name" -v t="$t" -v e="$events" -v r="$rss" -v s="$size" 'BEGIN {
		printf "| %s | %.2f s | %.1f M | %.0f MB | %s |\n", n, t, e / t / 1e6, r / 1024, s }'
}

row "weft dump" "" "$weft" dump "$anchor"
row "otf2-print" "" otf2-print "$anchor"
row "weft dump --json" "" "$weft" dump --json "$anchor"
row "weft top" "" "$weft" top "$anchor"
row "weft convert -t perfetto" "$tmp/out.pftrace" "$weft" convert "$anchor" -t perfetto -o "$tmp/out.pftrace"
row "weft convert -t pallas" "$tmp/out.pallas" "$weft" convert "$anchor" -t pallas -o "$tmp/out.pallas"
row "weft convert -t otf2" "$tmp/out.otf2" "$weft" convert "$anchor" -t otf2 -o "$tmp/out.otf2"
