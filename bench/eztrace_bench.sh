#!/bin/sh
# SPDX-License-Identifier: MIT
# The writing overhead of EZTrace through weft's OTF2 library on Pallas
# (docs/otf2-pallas.md) next to EZTrace on Debian's libotf2 (issue 18):
# tests/eztrace/mpi_ring.c with ROUNDS rounds on RANKS ranks, run without
# tracing, with `eztrace -t mpich` on the real libotf2, and with
# LD_LIBRARY_PATH=BUILD_DIR/lib/otf2-pallas. Each row: the median wall time
# of RUNS runs (GNU time, the whole mpiexec), the time over the untraced
# run per traced event, the events, and the size of the trace.
#
# usage: bench/eztrace_bench.sh [BUILD_DIR] [ROUNDS] [RANKS] [RUNS]
#   BUILD_DIR  default build/ (its weft counts the events)
#   ROUNDS     default 20000 (12 events per rank and round, plus the ends)
#   RANKS      default 2 (this machine has 2 cores: more ranks measure the
#              oversubscription)
#   RUNS       default 3
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$top/build}
rounds=${2:-20000}
ranks=${3:-2}
runs=${4:-3}
weft=$build/weft
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for tool in mpicc mpiexec eztrace /usr/bin/time; do
	command -v "$tool" >/dev/null 2>&1 || {
		echo "needs $tool (scripts/setup-deps.sh installs eztrace and mpich)" >&2; exit 1; }
done
mpicc -O2 "$top/tests/eztrace/mpi_ring.c" -o "$tmp/mpi_ring"
echo "mpi_ring $rounds rounds on $ranks ranks, median of $runs runs"
echo
echo "| run | wall time | overhead per event | events | trace |"
echo "|---|---|---|---|---|"

# median TIMES_FILE: the median of the numbers in the file.
median() {
	sort -n "$1" | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'
}

# run NAME LIBDIR TRACED: RUNS runs in $tmp/run (the trace left there).
run() {
	name=$1; libdir=$2; traced=$3
	: > "$tmp/times"
	i=0
	while [ "$i" -lt "$runs" ]; do
		rm -rf "$tmp/run"
		mkdir "$tmp/run"
		if [ "$traced" = 1 ]; then
			(cd "$tmp/run" && LD_LIBRARY_PATH=$libdir /usr/bin/time -f %e -o "$tmp/one" \
				mpiexec -n "$ranks" eztrace -t mpich "$tmp/mpi_ring" "$rounds" \
				> /dev/null 2> "$tmp/err") || { cat "$tmp/err" >&2; exit 1; }
		else
			(cd "$tmp/run" && /usr/bin/time -f %e -o "$tmp/one" \
				mpiexec -n "$ranks" "$tmp/mpi_ring" "$rounds" > /dev/null)
		fi
		cat "$tmp/one" >> "$tmp/times"
		i=$((i + 1))
	done
	t=$(median "$tmp/times")
	events=- size=- per=-
	if [ "$traced" = 1 ]; then
		trace=$tmp/run/mpi_ring_trace
		path=$trace
		[ -f "$trace/eztrace_log.pallas" ] && path=$trace/eztrace_log.pallas
		events=$("$weft" info "$path" 2>/dev/null | sed -n 's/^events: \([0-9]*\).*/\1/p')
		size=$(du -sh "$trace" | cut -f1)
		per=$(awk -v t="$t" -v b="$base" -v e="$events" \
			'BEGIN { printf "%.0f ns", (t - b) * 1e9 / e }')
	else
		base=$t
	fi
	echo "| $name | $t s | $per | $events | $size |"
}

base=0
run "untraced" "" 0
run "eztrace, Debian's libotf2" "" 1
run "eztrace, weft's OTF2 library on Pallas" "$build/lib/otf2-pallas" 1
