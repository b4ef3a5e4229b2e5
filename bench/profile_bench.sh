#!/bin/sh
# SPDX-License-Identifier: MIT
# Benchmark of `weft profile` (the span iterator and the profile rows) on
# a large trace of three formats: calls (spans) per second and peak
# resident memory (GNU time's maximum RSS), per region and per stream,
# and for Pallas the stored durations against the replay of the events.
#
# usage: bench/profile_bench.sh [BUILD_DIR] [RUNS]
#   BUILD_DIR  default build/
#   RUNS       runs per row (default 3); each row shows the median
# Traces (written when missing, then read once so that they are in the
# page cache):
#   /tmp/weft-bench-trace          ovni, 1 GB, by BUILD_DIR/bench/bench_emit
#                                  (bench/read_bench.sh uses the same)
#   /tmp/weft-convert-bench.bin.log Heph, 3 M events, 8 streams, by
#                                  bench_heph_write (bench/convert_bench.sh)
#   /tmp/weft-profile-pallas       Pallas, 2 threads x 2 M iterations of 3
#                                  functions (12 M events), bench/make_pallas_trace.py
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$top/build}
runs=${2:-3}
weft=$build/weft
ovni=/tmp/weft-bench-trace
heph=/tmp/weft-convert-bench.bin.log
pallas=/tmp/weft-profile-pallas
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

command -v /usr/bin/time >/dev/null 2>&1 || {
	echo "needs GNU time (apt-get install time)" >&2; exit 1; }
[ -d "$ovni" ] || "$build/bench/bench_emit" --write-trace "$ovni" --bytes 1G --threads 4 >&2
[ -f "$heph" ] || "$build/bench/bench_heph_write" --write-trace "$heph" --events 3000000 \
	--streams 8 >&2
[ -d "$pallas" ] || /usr/bin/python3 "$top/bench/make_pallas_trace.py" "$pallas" \
	--iterations 2000000 --threads 2 --functions 3 >&2
for t in "$ovni" "$heph" "$pallas"; do
	find "$t" -type f -exec cat {} + > /dev/null
done

# The number of calls a profile counts (the sum of its rows' calls).
calls_of() {
	"$weft" profile --json "$@" | /usr/bin/python3 -c \
		'import json,sys; print(sum(r["count"] for r in json.load(sys.stdin)["regions"]))'
}

# run NAME TRACE ARGS...: RUNS timed profiles, one table row with the
# median wall time, the calls per second and the largest RSS.
run() {
	name=$1; trace=$2; shift 2
	: > "$tmp/times"
	i=0
	while [ "$i" -lt "$runs" ]; do
		/usr/bin/time -f "%e %M" -a -o "$tmp/times" "$weft" profile "$@" "$trace" > /dev/null
		i=$((i + 1))
	done
	calls=$(calls_of "$@" "$trace")
	sort -n "$tmp/times" | awk -v name="$name" -v calls="$calls" -v runs="$runs" '
		{ t[NR] = $1; if ($2 > rss) rss = $2 }
		END { m = t[int((runs + 1) / 2)]
		      printf "| %s | %d | %.2f s | %.1f M calls/s | %.1f MB |\n",
			name, calls, m, (m > 0 ? calls / m / 1e6 : 0), rss / 1024 }'
}

echo "| profile | calls | median time | rate | peak RSS |"
echo "|---|---|---|---|---|"
run "ovni, per region" "$ovni"
run "ovni, --by stream" "$ovni" --by stream
run "Heph, per region" "$heph"
run "Heph, --by stream" "$heph" --by stream
run "Pallas, stored durations" "$pallas"
run "Pallas, --replay" "$pallas" --replay
