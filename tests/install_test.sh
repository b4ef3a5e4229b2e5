#!/bin/sh
# SPDX-License-Identifier: MIT
# Installs the build into a scratch prefix, then builds programs (among
# them examples/profile.c and read_trace.c) against
# the installed headers and libraries through pkg-config (weft.pc) and a
# libovni program through ovni.pc, and runs them; then the same two
# programs through the CMake package (find_package(weft): weft::weft,
# weft::ovni). Checks that the man pages and the completion scripts are
# installed and that `man -l` renders every page without a warning. The
# installed libweft.so must export the public API only: weft_ names, no
# weft__ internal (include/weft/api.h).
set -eu
build=$1
prefix=$(mktemp -d "${TMPDIR:-/tmp}/weft-install-XXXXXX")
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
cat > "$prefix/use_weft.c" <<'C'
#include <stdio.h>
#include <string.h>
#include <weft/weft.h>
int main(void)
{
	weft_trace *t = NULL;
	int rc = weft_trace_open("/nonexistent", NULL, &t);
	printf("weft %s: %s\n", weft_version(), weft_strerror(rc));
	return strcmp(weft_version(), WEFT_VERSION_STRING) != 0 || rc != WEFT_ENOTFOUND;
}
C
cat > "$prefix/use_ovni.c" <<'C'
#include <ovni.h>
int main(void)
{
	ovni_version_check();
	return ovni_clock_now() == 0;
}
C
cc -std=c11 ${CFLAGS:-} -o "$prefix/use_weft" "$prefix/use_weft.c" $(pkg-config --cflags --libs weft) \
	-Wl,-rpath,"$prefix/lib"
# ovni.pc, as upstream libovni installs it, finds the drop-in libovni.
test "$(pkg-config --modversion ovni)" = 1.14.0
cc -std=c11 ${CFLAGS:-} -o "$prefix/use_ovni" "$prefix/use_ovni.c" $(pkg-config --cflags --libs ovni) \
	-Wl,-rpath,"$prefix/lib"
"$prefix/use_weft"
"$prefix/use_ovni"
# examples/profile.c uses the public API only: it builds against the
# installed headers and the shared library, and profiles a trace.
here=$(cd "$(dirname "$0")" && pwd)
cc -std=c11 -Wall -Wextra -Werror ${CFLAGS:-} -o "$prefix/profile" "$here/../examples/profile.c" \
	$(pkg-config --cflags --libs weft) -Wl,-rpath,"$prefix/lib"
"$prefix/profile" "$here/data/heph/heph_sample.bin.log" | grep -q "^Scheduling processes "
# So does examples/read_trace.c: the kinds and the events with their fields.
cc -std=c11 -Wall -Wextra -Werror ${CFLAGS:-} -o "$prefix/read_trace" "$here/../examples/read_trace.c" \
	$(pkg-config --cflags --libs weft) -Wl,-rpath,"$prefix/lib"
"$prefix/read_trace" "$here/data/heph/heph_sample.bin.log" 5 > "$prefix/read.txt"
grep -q "^event kinds: 17$" "$prefix/read.txt"
grep -q "Scheduling processes  stream.1/substream.0 local amount=2 shared amount=1 total amount=3$" \
	"$prefix/read.txt"
test -x "$prefix/bin/weft"
# The CMake package: find_package(weft) with the targets weft::weft and
# weft::ovni, in a project of its own built against the install.
mkdir "$prefix/cmake-user"
cat > "$prefix/cmake-user/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.20)
project(weft_user LANGUAGES C)
find_package(weft 0.1 REQUIRED)
add_executable(use_weft ../use_weft.c)
target_link_libraries(use_weft PRIVATE weft::weft)
add_executable(use_ovni ../use_ovni.c)
target_link_libraries(use_ovni PRIVATE weft::ovni)
CMAKE
cmake -S "$prefix/cmake-user" -B "$prefix/cmake-user/build" -DCMAKE_PREFIX_PATH="$prefix" \
	-DCMAKE_C_FLAGS="${CFLAGS:-}" >/dev/null
cmake --build "$prefix/cmake-user/build" >/dev/null
"$prefix/cmake-user/build/use_weft" | grep -q "^weft "
"$prefix/cmake-user/build/use_ovni"
# The man pages (weft(1), one per command) and the completion scripts;
# every page renders without a warning.
man_dir="$prefix/share/man/man1"
for page in weft $("$prefix/bin/weft" __complete commands | cut -f1 | sed 's/^/weft-/'); do
	if [ ! -f "$man_dir/$page.1" ]; then
		echo "install: no man page $man_dir/$page.1" >&2
		exit 1
	fi
done
for page in "$man_dir"/*.1; do
	warnings=$(LC_ALL=C.UTF-8 MANROFFSEQ='' MANWIDTH=80 man --warnings -E UTF-8 -l "$page" 2>&1 >/dev/null)
	if [ -n "$warnings" ]; then
		echo "install: man -l $page: $warnings" >&2
		exit 1
	fi
done
test -f "$prefix/share/bash-completion/completions/weft"
test -f "$prefix/share/zsh/site-functions/_weft"
# The Python module, imported from the site directory under the prefix
# (when the build has it): it runs with the installed libweft.so.
site=$(find "$prefix/lib" -path '*/weft/__init__.py' 2>/dev/null | head -n 1)
if [ -n "$site" ]; then
	site=$(dirname "$(dirname "$site")")
	# A sanitized build's module needs the sanitizer runtimes preloaded.
	PYTHONPATH="$site" LD_PRELOAD="${WEFT_PY_PRELOAD:-}" ASAN_OPTIONS=detect_leaks=0 /usr/bin/python3 -c '
import sys, weft
t = weft.open(sys.argv[1])
assert t.format == "heph" and len(t.to_pandas()) == 21, t
assert weft.__file__.startswith(sys.argv[2]), weft.__file__
' "$here/data/heph/heph_sample.bin.log" "$site"
	# It finds the installed libweft.so relative to itself (RUNPATH $ORIGIN/...).
	lib=$(ldd "$site"/weft/_weft*.so | sed -n 's/.*libweft[.]so[.0-9]* => \([^ ]*\) .*/\1/p')
	test "$(readlink -f "$lib")" = "$(readlink -f "$prefix/lib/libweft.so")"
elif [ -d "$build/python/weft" ]; then
	echo "install: the Python module was built but not installed" >&2
	exit 1
fi
others=$(nm -D --defined-only "$prefix"/lib/libweft.so | awk '{print $3}' | grep -v '^weft_[a-z]' || true)
if [ -n "$others" ]; then
	echo "libweft.so exports names that are not the public API:" $others >&2
	exit 1
fi
test "$(nm -D --defined-only "$prefix"/lib/libweft.so | grep -c ' weft_')" -gt 100
echo "install ok"
