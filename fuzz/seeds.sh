#!/bin/sh
# SPDX-License-Identifier: MIT
# Writes the seed corpus of every fuzz target into OUT/<target>/ from the
# traces of tests/data (docs/fuzzing.md): the files each target puts its
# bytes in place of, cut to their first SEED_MAX bytes (default 4096: a
# cut stream is still a valid start of one, and short inputs run fast),
# with the leading choice byte of the targets that have one.
#
# usage: fuzz/seeds.sh OUT
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
data=$top/tests/data
out=${1:?usage: fuzz/seeds.sh OUT}
max=${SEED_MAX:-4096}

# seed TARGET CHOICE FILE: one seed; CHOICE is an octal byte or "-" (none).
seed() {
	dir=$out/$1
	mkdir -p "$dir"
	name=$(printf '%s %s' "$2" "$3" | cksum | cut -d' ' -f1)
	{
		[ "$2" = - ] || printf "\\$2"
		head -c "$max" "$3"
	} > "$dir/$name"
}

rm -rf "$out"
for f in "$data"/ovni/v3/*/ovni/*/*/*/stream.obs; do
	seed fuzz_ovni_stream - "$f"
	seed fuzz_convert_perfetto 000 "$f"
	seed fuzz_convert_chrome 000 "$f"
	seed fuzz_convert_paraver 000 "$f"
	seed fuzz_convert_pallas 000 "$f"
done
for f in "$data"/ovni-emu/*/ovni/*/*/*/stream.obs; do
	seed fuzz_emu - "$f"
done
for f in "$data"/ovni/v3/*/ovni/*/*/*/stream.json; do
	seed fuzz_ovni_json - "$f"
done
# fuzz_ovni_legacy: 0 v1 metadata.json, 1 v1 .obs, 2 v2 metadata.json,
# 3 v2 thread.json, 4 v2 .obs, 5 clock-offsets.txt
for f in "$data"/ovni/v1/*/ovni/*/*/metadata.json; do seed fuzz_ovni_legacy 000 "$f"; done
for f in "$data"/ovni/v1/*/ovni/*/*/*.obs; do seed fuzz_ovni_legacy 001 "$f"; done
for f in "$data"/ovni/v2/*/ovni/*/*/metadata.json; do seed fuzz_ovni_legacy 002 "$f"; done
for f in "$data"/ovni/v2/*/ovni/*/*/thread.*.json; do seed fuzz_ovni_legacy 003 "$f"; done
for f in "$data"/ovni/v2/*/ovni/*/*/*.obs; do seed fuzz_ovni_legacy 004 "$f"; done
offsets=$(mktemp)
printf 'rank hostname offset_median offset_mean offset_std\n0 node1 1200 1210.5 3.2\n' > "$offsets"
seed fuzz_ovni_legacy 005 "$offsets"
rm -f "$offsets"
for f in "$data"/heph/*.bin.log; do
	seed fuzz_heph - "$f"
	for t in perfetto chrome paraver pallas; do seed fuzz_convert_$t 001 "$f"; done
	seed fuzz_convert_chrome 005 "$f" # --heph-compat
done
# fuzz_ross: choice & 7 = name (0 gvt, 1 rt, 2 analysis-lps, 3 evtrace,
# 4 model, 5 data.bin), & 8 = --resync, >> 4 = what reads it (0 the
# library, 1 check, 2 summary, 3 plot, 4-8 table at each level)
for f in "$data"/ross/*/*/*.bin; do
	case $f in
	*-gvt.bin) k=0 ;; *-rt.bin) k=1 ;; *-analysis-lps.bin) k=2 ;;
	*-evtrace.bin) k=3 ;; *-model.bin) k=4 ;; *) k=5 ;;
	esac
	for a in 0 1 2 3 4 5 6 7 8; do
		seed fuzz_ross "$(printf %03o $((a * 16 + k)))" "$f"
	done
	seed fuzz_ross "$(printf %03o $((16 + 8 + k)))" "$f"  # check --resync
	seed fuzz_ross "$(printf %03o $((16 + 5)))" "$f"      # check, detected from the data
done
for f in "$data"/ross/*/*/ross-stats-gvt.bin; do
	for t in perfetto chrome paraver pallas; do
		seed fuzz_convert_$t 002 "$f"
		seed fuzz_convert_$t 006 "$f" # --time virtual
	done
done
for f in "$data"/pallas/*/trace/main.pallas; do seed fuzz_pallas_main - "$f"; done
for f in "$data"/pallas/*/trace/archive_*/archive.pallas; do seed fuzz_pallas_archive - "$f"; done
for f in "$data"/pallas/*/trace/archive_*/thread_*/thread.pallas; do
	for a in 0 1 2 3 4 5 6; do seed fuzz_pallas_thread 00$a "$f"; done  # the reader
	for t in perfetto chrome paraver pallas; do seed fuzz_convert_$t 003 "$f"; done
done
# fuzz_pallas_values: choice & 1 = the file, >> 1 = the reader
for f in "$data"/pallas/*/trace/archive_*/thread_*/event_durations.dat; do
	for a in 0 1 2 3 4 5 6; do seed fuzz_pallas_values "$(printf %03o $((a * 2)))" "$f"; done
done
for f in "$data"/pallas/*/trace/archive_*/thread_*/sequence_durations.dat; do
	for a in 0 1 2 3 4 5 6; do seed fuzz_pallas_values "$(printf %03o $((a * 2 + 1)))" "$f"; done
done
# Rank 0's own reports, with their choice byte (fuzz/fuzz_dist_report.c).
for f in "$data"/dist/*.report; do seed fuzz_dist_report - "$f"; done
for d in "$out"/*; do
	echo "$(basename "$d"): $(ls "$d" | wc -l) seeds"
done
