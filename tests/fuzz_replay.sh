#!/bin/sh
# SPDX-License-Identifier: MIT
# The fuzz targets (fuzz/, built as replay programs without libFuzzer) on
# every input kept from fuzzing, tests/data/crashers/<target>/ (each made
# a target crash, leak or misbehave under the sanitizers once: a
# regression test), and on their seed corpora (fuzz/seeds.sh). In an
# ASan + UBSan build a regression stops its program with the report.
#
# usage: tests/fuzz_replay.sh BUILD_DIR
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
build=$1
seeds=$build/fuzz-seeds
"$top/fuzz/seeds.sh" "$seeds" >/dev/null
status=0
for b in "$build"/fuzz/replay_fuzz_*; do
	t=${b##*/replay_}
	log=$build/fuzz-seeds/$t.log
	crashers=$top/tests/data/crashers/$t
	[ -d "$crashers" ] || crashers=
	if "$b" $crashers "$seeds/$t" >/dev/null 2>"$log"; then
		tail -n 1 "$log"
	else
		echo "FAILED: $t (exit $?)"
		tail -n 60 "$log"
		status=1
	fi
done
exit $status
