#!/bin/sh
# SPDX-License-Identifier: MIT
# Scaling of weft on one machine: `weft top`, `weft profile`, `weft info`,
# `weft convert` (every output) and `weft dump` of the 1 GB ovni benchmark
# trace with 1, 2 and 4 threads (--threads; dump also 3) and on 1, 2 and 4
# MPI ranks (weft-mpi,
# mpich's mpiexec), with each run's wall time, the speed-up over one
# thread, and the peak resident memory of one process (GNU time's maximum
# RSS; for ranks, the largest rank's). Every parallel output is compared
# with the serial one (cmp) before it is timed. Also the cost of a run of
# weft-mpi on a trace of one small stream (start-up, collective open, one
# combine): the fixed cost per run in the model of docs/SCALING.md.
#
# usage: bench/scaling_bench.sh [BUILD_DIR] [TRACE_DIR] [RUNS]
#   BUILD_DIR  default build/ (a Release build for figures)
#   TRACE_DIR  default /tmp/weft-view-bench: the nOS-V-like spans of
#              bench_emit --write-trace --spans, 1 GB, 4 streams (written
#              when missing; bench/bench_perfetto.sh uses the same)
#   RUNS       runs of each row; the fastest is shown (default 3)
# SCALING_COMMANDS (default "top profile info"): the commands of the first
# part; set it empty to run only the conversion and the fixed costs.
# SCALING_OUTPUTS (default "perfetto chrome paraver pallas"): the outputs
# of the conversion rows. SCALING_DUMP (default yes; empty: skipped): the
# dump rows. SCALING_EMU (default yes; empty: skipped): the rows of the
# emulation of a trace of 8 looms (/tmp/weft-emu-looms, written when
# missing).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$top/build}
trace=${2:-/tmp/weft-view-bench}
runs=${3:-3}
weft=$build/weft
runner=$build/weft-mpi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

command -v /usr/bin/time >/dev/null 2>&1 || {
	echo "needs GNU time (apt-get install time)" >&2; exit 1; }
[ -x "$runner" ] || { echo "no $runner: build with MPI (mpich, libmpich-dev)" >&2; exit 1; }
if [ ! -d "$trace" ]; then
	"$build/bench/bench_emit" --write-trace "$trace" --bytes 1G --threads 4 --spans
fi
cat $(find "$trace" -name stream.obs) > /dev/null
bytes=$(du -sb "$trace" | cut -f1)
echo "trace: $trace ($bytes bytes, $(find "$trace" -name stream.obs | wc -l) streams)"
echo "cores: $(nproc); runs per row: $runs (fastest shown)"
printf '%-34s %9s %8s %10s\n' "run" "wall s" "speed-up" "max RSS MB"

# best NAME BASE_SECONDS CMD...: the fastest of RUNS runs and the largest RSS.
best() {
	name=$1; base=$2; shift 2
	: > "$tmp/times"
	: > "$tmp/ranks"
	i=0
	while [ "$i" -lt "$runs" ]; do
		/usr/bin/time -f "%e %M" -a -o "$tmp/times" "$@" > /dev/null
		i=$((i + 1))
	done
	# The job's wall time; the largest RSS of a process (under mpiexec,
	# each rank's is in $tmp/ranks).
	secs=$(awk 'NF == 2 { print $1 }' "$tmp/times" | sort -n | head -1)
	rss=$(cat "$tmp/times" "$tmp/ranks" | awk 'NF == 2 { print $2 }' | sort -n | tail -1)
	[ -n "$base" ] || base=$secs
	awk -v n="$name" -v s="$secs" -v b="$base" -v r="$rss" \
		'BEGIN { printf "%-34s %9.2f %7.2fx %10.1f\n", n, s, b / s, r / 1024 }'
	last=$secs
}

# same NAME OUT_A OUT_B: the parallel output must be the serial one.
same() {
	cmp -s "$2" "$3" || { echo "$1: the output differs from the serial one" >&2; exit 1; }
}

for cmd in ${SCALING_COMMANDS-top profile info}; do
	"$weft" "$cmd" --threads 1 "$trace" > "$tmp/serial.txt"
	best "$cmd --threads 1" "" "$weft" "$cmd" --threads 1 "$trace"
	base=$last
	for n in 2 4; do
		"$weft" "$cmd" --threads "$n" "$trace" > "$tmp/par.txt"
		same "$cmd --threads $n" "$tmp/serial.txt" "$tmp/par.txt"
		best "$cmd --threads $n" "$base" "$weft" "$cmd" --threads "$n" "$trace"
	done
	for r in 1 2 4; do
		mpiexec -n "$r" "$runner" "$cmd" --threads 1 "$trace" > "$tmp/par.txt"
		same "$cmd on $r ranks" "$tmp/serial.txt" "$tmp/par.txt"
		best "weft-mpi $cmd, $r ranks x 1 thread" "$base" \
			mpiexec -n "$r" /usr/bin/time -f "%e %M" -a -o "$tmp/ranks" \
			"$runner" "$cmd" --threads 1 "$trace"
	done
done

# convert on 1 and 2 threads: with two, one thread reads and merges the
# streams while another writes (outputs/pipeline.c); the streams are not
# shared (docs/mpi.md). Every output; the two outputs must be the same.
for out in ${SCALING_OUTPUTS-perfetto chrome paraver pallas}; do
	rm -rf "$tmp/c1" "$tmp/c2" "$tmp/c1".* "$tmp/c2".*
	"$weft" convert -q --raw -t "$out" --threads 1 -o "$tmp/c1" "$trace" || true
	"$weft" convert -q --raw -t "$out" --threads 2 -o "$tmp/c2" "$trace" || true
	for f in $(find "$tmp" -path "$tmp/c1*" -type f); do
		same "convert -t $out" "$f" "$tmp/c2${f#"$tmp/c1"}"
	done
	best "convert -t $out --threads 1" "" "$weft" convert -q -f --raw -t "$out" \
		--threads 1 -o "$tmp/c1" "$trace"
	base=$last
	best "convert -t $out --threads 2" "$base" "$weft" convert -q -f --raw -t "$out" \
		--threads 2 -o "$tmp/c2" "$trace"
	rm -rf "$tmp/c1" "$tmp/c2" "$tmp/c1".* "$tmp/c2".*
done

# dump (text lines to /dev/null) on 1 to 4 threads: with two, the
# pipeline; with three or more, N - 1 threads over shares of the streams
# and the calling thread merging their lines (outputs/keyed_runs.c). The
# outputs are compared through their checksums (4.7 GB each).
if [ -n "${SCALING_DUMP-yes}" ]; then
	sum1=$("$weft" dump --threads 1 "$trace" | cksum)
	best "dump --threads 1" "" "$weft" dump --threads 1 "$trace"
	base=$last
	for n in 2 3 4; do
		[ "$("$weft" dump --threads "$n" "$trace" | cksum)" = "$sum1" ] || {
			echo "dump --threads $n: the output differs from the serial one" >&2; exit 1; }
		best "dump --threads $n" "$base" "$weft" dump --threads "$n" "$trace"
	done
fi

# The emulation of ovni models into Paraver and Perfetto, looms shared
# among threads and ranks (outputs/emu_shared.c): a nOS-V program of 8
# looms x 4 threads (bench_emit --nosv --looms 8, 512 MiB), on 1 thread,
# 2 (the pipeline), 3 and 5 (2 and 4 parts and the merge) and 2 ranks;
# every output compared with the serial one first (3.1 GB of .prv).
if [ -n "${SCALING_EMU-yes}" ]; then
	emu=/tmp/weft-emu-looms
	[ -d "$emu" ] || "$build/bench/bench_emit" --write-trace "$emu" --bytes 512M \
		--threads 4 --nosv --looms 8
	cat $(find "$emu" -name stream.obs) > /dev/null
	echo "trace: $emu ($(du -sb "$emu" | cut -f1) bytes, 8 looms)"
	# the trace's warnings (large flushes) are said by every run: not shown
	quiet='exec "$@" 2> /dev/null'
	for out in paraver perfetto; do
		ext=; [ "$out" = paraver ] || ext=.pftrace
		rm -rf "$tmp/e1$ext" "$tmp/e2$ext"
		sh -c "$quiet" sh "$weft" convert -q -t "$out" --threads 1 -o "$tmp/e1$ext" "$emu"
		best "convert emulated -t $out --threads 1" "" sh -c "$quiet" sh "$weft" convert \
			-q -f -t "$out" --threads 1 -o "$tmp/e2$ext" "$emu"
		base=$last
		for n in 2 3 5 ranks; do
			rm -rf "$tmp/e2$ext"
			if [ "$n" = ranks ]; then
				set -- mpiexec -n 2 /usr/bin/time -f "%e %M" -a -o "$tmp/ranks" \
					"$runner" convert -q -t "$out" --threads 1
				name="weft-mpi convert emulated -t $out, 2 ranks"
			else
				set -- "$weft" convert -q -t "$out" --threads "$n"
				name="convert emulated -t $out --threads $n"
			fi
			sh -c "$quiet" sh "$@" -o "$tmp/e2$ext" "$emu"
			diff -r "$tmp/e1$ext" "$tmp/e2$ext" > /dev/null || {
				echo "$name: the output differs" >&2; exit 1; }
			best "$name" "$base" sh -c "$quiet" sh "$@" -f -o "$tmp/e2$ext" "$emu"
		done
		rm -rf "$tmp/e1$ext" "$tmp/e2$ext"
	done
fi

# The fixed cost of a run on R ranks: a trace of one small stream.
small=$top/tests/data/ovni/v3/mpi-func-4procs
for r in 1 2 4; do
	best "weft-mpi top, tiny trace, $r ranks" "" mpiexec -n "$r" "$runner" top "$small"
done

# Many small streams: 4096 (512 looms x 8 threads, the generator of
# tests/mpi): what opening costs per stream (every rank opens the whole
# trace: its metadata), against reading.
many=/tmp/weft-looms-4096
if [ ! -d "$many" ]; then
	/usr/bin/python3 -c "import sys; sys.path[:0] = ['$top/tests/mpi', '$top/tests/python']
from pathlib import Path
from test_mpi_commands import make_looms_trace
make_looms_trace(Path('$many'), looms=512, threads=8)"
fi
cat $(find "$many" -name 'stream.*') > /dev/null
echo "trace: $many ($(du -sb "$many" | cut -f1) bytes, $(find "$many" -name stream.obs | wc -l) streams)"
best "info (open only: weft info | head)" "" sh -c "'$weft' info '$many' | head -1"
best "top --threads 1, 4096 streams" "" "$weft" top --threads 1 "$many"
base=$last
best "top --threads 2, 4096 streams" "$base" "$weft" top --threads 2 "$many"
for r in 2 4; do
	best "weft-mpi top, 4096 streams, $r ranks" "$base" mpiexec -n "$r" "$runner" top \
		--threads 1 "$many"
done
