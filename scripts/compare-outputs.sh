#!/bin/sh
# SPDX-License-Identifier: MIT
#
# scripts/compare-outputs.sh - every output of every trace of tests/data,
# written by one weft binary into one directory, so that two builds can
# be compared byte for byte (`diff -r`) before and after a refactoring.
#
#   scripts/compare-outputs.sh WEFT_BINARY OUT_DIR
#   scripts/compare-outputs.sh build-before/weft /tmp/before
#   scripts/compare-outputs.sh build/weft /tmp/after
#   diff -r /tmp/before /tmp/after && echo identical
#
# For each trace: info, top, check, dump (text and --json), profile, and
# convert to every output; for ROSS traces also summary and table. The
# exit status and standard error of each command are kept too, with the
# paths of this run replaced by fixed names so that they compare.
set -u

weft=$1
out=$2
here=$(cd "$(dirname "$0")/.." && pwd)
data=$here/tests/data
mkdir -p "$out"

# One command: its standard output, standard error and exit status.
run() {
	what=$1
	shift
	"$weft" "$@" >"$out/$what.out" 2>"$out/$what.err"
	echo $? >"$out/$what.rc"
	sed -i "s#$out#OUT#g; s#$data#DATA#g" "$out/$what.out" "$out/$what.err"
}

# Every conversion of one trace (the Pallas output is a directory; its
# files are compared too).
convert_all() {
	trace=$2
	for to in perfetto chrome paraver pallas; do
		run "$name.convert-$to" convert -t "$to" -f -o "$out/$name.$to" "$trace"
	done
	run "$name.convert-chrome-compat" convert -t chrome --heph-compat -f \
		-o "$out/$name.compat.json" "$trace"
}

traces() {
	for t in "$data"/ovni/v1/*/ovni "$data"/ovni/v2/*/ovni "$data"/ovni/v3/*/ovni \
		"$data"/ovni/peer/*/ovni "$data"/heph/*.bin.log \
		"$data"/pallas/*/trace/main.pallas "$data"/ross/*/*/*.bin \
		"$data"/otf2/*/traces.otf2; do
		[ -e "$t" ] && echo "$t"
	done
}

traces | while read -r t; do
	name=$(echo "${t#"$data"/}" | tr '/' '_')
	run "$name.info" info "$t"
	run "$name.top" top "$t"
	run "$name.check" check "$t"
	run "$name.dump" dump "$t"
	run "$name.dump-json" dump --json "$t"
	run "$name.profile" profile "$t"
	case $t in
	*/ross/*)
		run "$name.summary" summary "$t"
		run "$name.table" table -o "$out/$name.csv" "$t"
		;;
	esac
	convert_all "$name" "$t"
done
echo "$(ls "$out" | wc -l) files in $out"
