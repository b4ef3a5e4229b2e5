#!/bin/sh
# SPDX-License-Identifier: MIT
# The `weft` command built against libweft.so alone (weft_public_cli,
# which links only because the command uses nothing but the public API)
# prints what the installed, statically linked command prints.
#
# usage: tests/public_cli_test.sh BUILD_DIR DATA_DIR
set -eu
build=$1
data=$2
out=$(mktemp -d "${TMPDIR:-/tmp}/weft-public-cli-XXXXXX")
trap 'rm -rf "$out"' EXIT
status=0
for trace in "$data/ovni/v3/mpi-func-4procs/ovni" "$data/heph/heph_sample.bin.log" \
	"$data/ross/phold-evtrace-full/np1" "$data/pallas/weft_order/trace"; do
	for command in "info" "top --streams" "check" "dump --json" "profile --by stream" \
		"convert -t chrome -o -"; do
		# shellcheck disable=SC2086
		"$build/weft" $command "$trace" > "$out/static" 2>&1 || true
		# shellcheck disable=SC2086
		"$build/weft_public_cli" $command "$trace" > "$out/public" 2>&1 || true
		if ! cmp -s "$out/static" "$out/public"; then
			echo "weft $command $trace: the two commands differ" >&2
			status=1
		fi
	done
done
[ "$status" = 0 ] && echo "public cli ok"
exit "$status"
