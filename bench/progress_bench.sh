#!/bin/sh
# SPDX-License-Identifier: MIT
# Does the progress cost anything? Times `weft top`, `weft dump`,
# `weft check` (on the ovni trace) and `weft convert --to chrome` (on the
# Heph trace) with two builds (BEFORE: without progress, AFTER: with it)
# and, for AFTER, in three ways:
#   plain     stderr a file: no callback is installed (what scripts see)
#   verbose   --verbose, stderr a file: the callback is installed and
#             called every 100 ms (it prints at the end of each phase only)
#   terminal  stderr a pseudo-terminal (script(1)), stdout /dev/null:
#             the progress line is drawn every 100 ms
# The four are run one after the other in each round (the machine's
# load then weighs on all alike); each row shows the fastest of RUNS.
#
# usage: bench/progress_bench.sh BEFORE_BUILD AFTER_BUILD [OVNI_TRACE] [HEPH_TRACE] [RUNS]
#   OVNI_TRACE default /tmp/weft-bench-trace (bench_emit, 1 GB, when missing)
#   HEPH_TRACE default /tmp/weft-convert-bench.bin.log (bench_heph_write, when missing)
#   RUNS       default 3
set -eu
before=$1
after=$2
ovni=${3:-/tmp/weft-bench-trace}
heph=${4:-/tmp/weft-convert-bench.bin.log}
runs=${5:-3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

command -v /usr/bin/time >/dev/null 2>&1 || {
	echo "needs GNU time (apt-get install time)" >&2; exit 1; }
command -v script >/dev/null 2>&1 || {
	echo "needs script(1) (util-linux)" >&2; exit 1; }
[ -d "$ovni" ] || "$after/bench/bench_emit" --write-trace "$ovni" --bytes 1G --threads 4
[ -f "$heph" ] || "$after/bench/bench_heph_write" --write-trace "$heph" --events 3000000 --streams 8
cat $(find "$ovni" -name stream.obs) "$heph" > /dev/null

# timed KEY COMMAND: appends the wall time of the shell COMMAND to $tmp/KEY.
timed() {
	/usr/bin/time -f "%e" -a -o "$tmp/$1" sh -c "$2" > /dev/null 2>&1 || true
}

# row NAME ARGS: the four ways, RUNS rounds, then the table row.
row() {
	name=$1; args=$2
	rm -f "$tmp"/t.*
	i=0
	while [ "$i" -lt "$runs" ]; do
		timed t.before "'$before/weft' $args > /dev/null 2> $tmp/err"
		timed t.plain "'$after/weft' $args > /dev/null 2> $tmp/err"
		timed t.verbose "'$after/weft' $args --verbose > /dev/null 2> $tmp/err"
		timed t.terminal "script -qec \"'$after/weft' $args > /dev/null\" /dev/null"
		i=$((i + 1))
	done
	printf "| %-28s |" "$name"
	for k in before plain verbose terminal; do
		printf " %6.2f s |" "$(sort -n "$tmp/t.$k" | head -n 1)"
	done
	echo
}

echo "fastest of $runs; load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "| command                      | before   | plain    | verbose  | terminal |"
echo "|---|---|---|---|---|"
row "weft top (1 GB ovni)" "top $ovni"
row "weft dump (1 GB ovni)" "dump $ovni"
row "weft check (1 GB ovni)" "check $ovni"
row "convert --to chrome (Heph)" "convert $heph --to chrome -f -o $tmp/out.json"
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
