#!/bin/sh
# SPDX-License-Identifier: MIT
# Benchmark of `weft convert -t paraver` (docs/paraver.md): events per
# second and peak resident memory (GNU time's maximum RSS), with the
# median wall, user and system times, on
#   - an ovni trace of nOS-V spans (time ordered: the direct path, the
#     .prv written as the records come), written when missing by
#     BUILD_DIR/bench/bench_emit --write-trace DIR --bytes 1G --threads 4
#     --spans (80 M events, a 2.8 GB .prv);
#   - a Heph trace (complete spans in file order: the sort path), written
#     when missing by BUILD_DIR/bench/bench_heph_write --write-trace FILE
#     --events 3000000 --streams 8 (about 200 MB).
# Every run writes to a file (temporary file, fsync, rename: what the
# command does); the output is removed before each run, outside the
# timing, and the system's load average is printed before and after
# (the figures are only comparable on an idle machine).
#
# usage: bench/paraver_bench.sh [BUILD_DIR] [RUNS] [OVNI_TRACE] [HEPH_TRACE] [OTHER_WEFT]
#   BUILD_DIR   default build/ (a Release build: cmake -DCMAKE_BUILD_TYPE=Release)
#   RUNS        runs per row (default 5); each row shows the median
#   OVNI_TRACE  default /tmp/weft-view-bench
#   HEPH_TRACE  default /tmp/weft-convert-bench.bin.log
#   OTHER_WEFT  another weft binary measured the same way (e.g. a build
#               of an older commit), its runs alternating with weft's,
#               for a before/after table
# The outputs (OUT.prv, .pcf, .row) go to $TMPDIR (default /tmp) and are
# removed at the end.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$top/build}
runs=${2:-5}
ovni=${3:-/tmp/weft-view-bench}
heph=${4:-/tmp/weft-convert-bench.bin.log}
other=${5:-}
weft=$build/weft
tmp=$(mktemp -d)
out=${TMPDIR:-/tmp}/weft-paraver-bench-out
trap 'rm -rf "$tmp" "$out.prv" "$out.pcf" "$out.row"' EXIT

command -v /usr/bin/time >/dev/null 2>&1 || {
	echo "needs GNU time (apt-get install time)" >&2; exit 1; }
if [ ! -d "$ovni" ]; then
	"$build/bench/bench_emit" --write-trace "$ovni" --bytes 1G --threads 4 --spans >&2
fi
if [ ! -f "$heph" ]; then
	"$build/bench/bench_heph_write" --write-trace "$heph" --events 3000000 --streams 8 >&2
fi

# events TRACE: the number of events (weft check reads them all, and so
# puts the trace in the page cache before the timing).
events() {
	"$weft" check "$1" | sed -n 's/.*streams, \([0-9]*\) events.*/\1/p'
}

# one BINARY TRACE TIMES: one timed conversion, its "wall RSS user sys"
# line appended to TIMES and the size of the .prv kept in TIMES.size.
one() {
	rm -f "$out.prv" "$out.pcf" "$out.row"
	sync
	/usr/bin/time -f "%e %M %U %S" -o "$tmp/one" "$1" convert "$2" \
		-t paraver -o "$out" -f 2> "$tmp/err" || { cat "$tmp/err" >&2; exit 1; }
	tail -n 1 "$tmp/one" >> "$3"
	stat -c %s "$out.prv" > "$3.size"
	rm -f "$out.prv" "$out.pcf" "$out.row"
}

# row NAME EVENTS TIMES: the table row of a set of runs: median wall,
# user and system times, the largest RSS.
row() {
	mid=$(( (runs + 1) / 2 ))
	user=$(awk '{ print $3 }' "$3" | sort -n | sed -n "${mid}p")
	sys=$(awk '{ print $4 }' "$3" | sort -n | sed -n "${mid}p")
	sort -n "$3" | awk -v n="$1" -v e="$2" -v mid="$mid" -v user="$user" \
		-v sys="$sys" -v size="$(cat "$3.size")" '
		{ t[NR] = $1; if ($2 > rss) rss = $2 }
		END {
			m = t[mid]
			printf "| %-30s | %6.2f s | %6.2f M events/s | %5.2f s | %5.2f s | %6.1f MB | %7.0f MB |\n",
			       n, m, e / m / 1e6, user, sys, rss / 1024, size / 1e6 }'
}

# run NAME TRACE EVENTS: RUNS conversions of TRACE by weft (and by
# OTHER_WEFT, alternating with it, so that both meet the same state of
# the machine and of its page cache), one row each.
run() {
	: > "$tmp/times"
	: > "$tmp/other"
	i=0
	while [ "$i" -lt "$runs" ]; do
		one "$weft" "$2" "$tmp/times"
		[ -z "$other" ] || one "$other" "$2" "$tmp/other"
		i=$((i + 1))
	done
	row "$1" "$3" "$tmp/times"
	[ -z "$other" ] || row "$1 ($(basename "$other"))" "$3" "$tmp/other"
}

ovni_events=$(events "$ovni")
heph_events=$(events "$heph")
echo "load average before: $(cut -d ' ' -f 1-3 /proc/loadavg); $(nproc) CPUs; median of $runs runs"
echo "ovni: $ovni, $ovni_events events; heph: $heph, $heph_events events"
echo "| conversion                     | time     | events/s          | user    | sys     | max RSS  | .prv       |"
echo "|---|---|---|---|---|---|---|"
run "ovni -> paraver" "$ovni" "$ovni_events"
run "heph -> paraver" "$heph" "$heph_events"
echo "load average after: $(cut -d ' ' -f 1-3 /proc/loadavg)"
