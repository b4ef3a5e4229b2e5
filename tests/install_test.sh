#!/bin/sh
# SPDX-License-Identifier: MIT
# Installs the build into a scratch prefix, then builds programs (among
# them examples/profile.c and read_trace.c) against
# the installed headers and libraries through pkg-config (weft.pc) and a
# libovni program against the installed ovni.h, and runs both. The
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
cc -std=c11 ${CFLAGS:-} -o "$prefix/use_ovni" "$prefix/use_ovni.c" -I"$prefix/include" -L"$prefix/lib" \
	-lovni -Wl,-rpath,"$prefix/lib"
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
others=$(nm -D --defined-only "$prefix"/lib/libweft.so | awk '{print $3}' | grep -v '^weft_[a-z]' || true)
if [ -n "$others" ]; then
	echo "libweft.so exports names that are not the public API:" $others >&2
	exit 1
fi
test "$(nm -D --defined-only "$prefix"/lib/libweft.so | grep -c ' weft_')" -gt 100
echo "install ok"
