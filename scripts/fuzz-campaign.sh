#!/bin/sh
# SPDX-License-Identifier: MIT
# Fuzzing campaigns (docs/fuzzing.md): builds the libFuzzer targets of
# fuzz/ with clang (-DWEFT_FUZZ=ON: -fsanitize=fuzzer,address,undefined),
# seeds their corpora from tests/data (fuzz/seeds.sh), then runs each
# target in turn, for a time (CI: --seconds 30) or for a number of
# executions (long campaigns: --runs 1000000), and prints one table row
# per target: executions, seconds, executions per second, result.
#
# usage: scripts/fuzz-campaign.sh [--seconds S | --runs N] [--jobs J]
#                                 [--parallel P] [--max-len BYTES] [--seed N]
#                                 [--work DIR] [TARGET...]
#   --seconds S   run each target S seconds (default 30)
#   --runs N      run each target N executions instead
#   --jobs J      J fuzzing processes per target sharing the corpus (default 1)
#   --parallel P  P targets at a time (default 1; CI: one per core, so that
#                 each target still gets S seconds of one core)
#   --max-len B   largest input tried (default 8192)
#   --seed N      libFuzzer's random seed (default: a new one each run); CI
#                 gives one so that what it finds, a rerun finds again
#                 (with --jobs 1: every job would get the same seed)
#   --work DIR    corpora, findings and logs (default build-fuzz/campaign);
#                 the corpus of a target grows from one campaign to the next
#   TARGET        fuzz_ovni_stream, ... (default: every fuzz/fuzz_*.c)
# Environment: BUILD_DIR (default build-fuzz), CC (default clang).
# Exit status 1 when a target found a crash, a leak or a timeout (the
# input is in DIR/findings/TARGET/; replay it with
# BUILD_DIR/fuzz/replay_TARGET FILE, or TARGET FILE).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$top/build-fuzz}
seconds=30
runs=
jobs=1
parallel=1
seed=
max_len=8192
work=
targets=
while [ $# -gt 0 ]; do
	case $1 in
	--seconds) seconds=$2; runs=; shift 2 ;;
	--runs) runs=$2; shift 2 ;;
	--jobs) jobs=$2; shift 2 ;;
	--parallel) parallel=$2; shift 2 ;;
	--max-len) max_len=$2; shift 2 ;;
	--seed) seed=-seed=$2; shift 2 ;;
	--work) work=$2; shift 2 ;;
	-h|--help) sed -n '3,28p' "$0"; exit 0 ;;
	-*) echo "fuzz-campaign: unknown option $1" >&2; exit 2 ;;
	*) targets="$targets $1"; shift ;;
	esac
done
work=${work:-$build/campaign}

"$top/scripts/setup-deps.sh" --fuzz
if [ -z "$targets" ]; then
	for f in "$top"/fuzz/fuzz_*.c; do
		t=$(basename "$f" .c)
		[ "$t" = fuzz_common ] || targets="$targets $t"
	done
fi
CC=${CC:-clang} cmake -S "$top" -B "$build" -G Ninja -DWEFT_FUZZ=ON -DWEFT_WERROR=ON \
	-DCMAKE_BUILD_TYPE=RelWithDebInfo -DBUILD_TESTING=OFF >/dev/null
# shellcheck disable=SC2086
cmake --build "$build" -j "$(nproc)" --target $targets >/dev/null
"$top/fuzz/seeds.sh" "$work/seeds" >/dev/null

# Runs target $1 and writes its table row to $work/rows/$1; exit status 1
# when it found something.
run_target() {
	t=$1
	corpus=$work/corpus/$t
	findings=$work/findings/$t
	log=$work/logs/$t.log
	mkdir -p "$corpus" "$findings" "$work/logs"
	if [ -n "$runs" ]; then
		limit="-runs=$(( (runs + jobs - 1) / jobs ))"
	else
		limit="-max_total_time=$seconds"
	fi
	set +e
	if [ "$jobs" -gt 1 ]; then
		# -jobs: J processes, each of `limit`; their logs are fuzz-N.log
		# (in a directory per target: targets may run side by side)
		mkdir -p "$work/logs/$t.jobs"
		(cd "$work/logs/$t.jobs" && nice "$build/fuzz/$t" $limit $seed -jobs="$jobs" \
			-workers="$jobs" -close_fd_mask=3 -max_len="$max_len" -timeout=30 \
			-rss_limit_mb=4096 -print_final_stats=1 -artifact_prefix="$findings/" \
			"$corpus" "$work/seeds/$t") > "$log" 2>&1
		rc=$?
		cat "$work/logs/$t.jobs"/fuzz-*.log >> "$log" 2>/dev/null
		rm -rf "$work/logs/$t.jobs"
	else
		nice "$build/fuzz/$t" $limit $seed -close_fd_mask=3 -max_len="$max_len" -timeout=30 \
			-rss_limit_mb=4096 -print_final_stats=1 -artifact_prefix="$findings/" \
			"$corpus" "$work/seeds/$t" > "$log" 2>&1
		rc=$?
	fi
	set -e
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | awk '{s += $1} END {print s + 0}')
	secs=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$log" | sort -n | tail -1)
	secs=${secs:-$seconds}
	rate=$(awk -v e="$execs" -v s="$secs" 'BEGIN { printf "%d", (s > 0 ? e / s : 0) }')
	found=$(ls "$findings" 2>/dev/null | head -1)
	if [ $rc -eq 0 ] && [ -z "$found" ]; then
		result="no finding"
		failed=0
	else
		result="FOUND ${found:-exit $rc} (see $log)"
		failed=1
		# the sanitizer's or libFuzzer's report, for logs that are all one has
		grep -a -A40 -m1 -E '^==[0-9]+==|runtime error|ERROR: libFuzzer' "$log" >&2 || true
	fi
	echo "| $t | $execs | $secs | $rate | $result |" > "$work/rows/$t"
	return $failed
}

status=0
summary=$work/summary.md
mkdir -p "$work" "$work/rows"
echo "| target | executions | seconds | exec/s | result |" > "$summary"
echo "|---|---|---|---|---|" >> "$summary"
# P targets at a time; the rows in target order once all are done.
running=0
for t in $targets; do
	rm -f "$work/rows/$t"
	run_target "$t" &
	running=$((running + 1))
	if [ "$running" -ge "$parallel" ]; then
		wait
		running=0
	fi
done
wait
for t in $targets; do
	row=$(cat "$work/rows/$t" 2>/dev/null || echo "| $t | 0 | 0 | 0 | FOUND no result |")
	case $row in *FOUND*) status=1 ;; esac
	echo "$row" >> "$summary"
	echo "$row"
done
echo "summary: $summary"
exit $status
