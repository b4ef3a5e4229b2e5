#!/bin/sh
# SPDX-License-Identifier: MIT
# Installs the Debian 12 packages weft needs to build and test, when they
# are missing. Runs apt-get only when something is missing (as root, or
# through sudo when available). Used by scripts/demo.sh and scripts/test.sh;
# with --fuzz, also what the fuzz targets need (clang and its libFuzzer
# and sanitizer runtimes: scripts/fuzz-campaign.sh, docs/fuzzing.md).
set -eu

# man-db (and groff): the tests render the generated man pages; zsh: the
# test of the zsh completion; libopen-trace-format2-dev: the OTF2 format
# (read through libotf2), otf2-tools and python3-otf2: the OTF2 tests
# compare with otf2-print and write traces with the OTF2 Python module;
# eztrace, mpich and libmpich-dev: the tests of weft's OTF2 library on
# Pallas run EZTrace on a threaded and an MPI program (docs/otf2-pallas.md).
PACKAGES="build-essential cmake ninja-build pkg-config libjansson-dev libzstd-dev python3 python3-pytest python3-dev python3-numpy python3-pandas protobuf-compiler man-db zsh libopen-trace-format2-dev otf2-tools python3-otf2 eztrace mpich libmpich-dev"
if [ "${1:-}" = --fuzz ]; then
	PACKAGES="$PACKAGES clang libclang-rt-14-dev"
fi

missing=""
for p in $PACKAGES; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
		missing="$missing $p"
	fi
done
[ -z "$missing" ] && exit 0

echo "weft: installing missing Debian packages:$missing"
if [ "$(id -u)" -eq 0 ]; then
	SUDO=""
elif command -v sudo >/dev/null 2>&1; then
	SUDO="sudo"
else
	echo "weft: please install as root: apt-get install$missing" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $missing
