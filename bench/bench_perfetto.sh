#!/bin/sh
# SPDX-License-Identifier: MIT
# Benchmark of the Perfetto writer (docs/perfetto.md):
#
# 1. the writer alone: a small program (written and compiled here against
#    BUILD_DIR/libweft.a) feeds the sink begin/end pairs on 16 threads
#    (begin: name, category, two u32 fields; end: one u32 field; 19-digit
#    nanosecond timestamps) and reports events/s and bytes/event, into
#    /dev/null, then into a file: inline writes, inline + fsync, writer
#    thread with write-behind + fsync;
# 2. `weft convert TRACE -t perfetto` end to end on an ovni trace of
#    nOS-V spans (written by bench_emit --write-trace --spans when
#    missing), to `-o -` (/dev/null) and to a file (temporary file, fsync,
#    rename), with GNU time's wall, user, system time and maximum RSS.
#
# usage: bench/bench_perfetto.sh [BUILD_DIR] [EVENTS] [TRACE_DIR] [SIZE] [RUNS]
#   BUILD_DIR  default build/ (a Release build: cmake -DCMAKE_BUILD_TYPE=Release)
#   EVENTS     events of the writer-only runs (default 20000000)
#   TRACE_DIR  default /tmp/weft-perfetto-bench-trace
#   SIZE       bench_emit --bytes for a missing trace (default 512M)
#   RUNS       runs of each row; the fastest is shown (default 3)
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$top/build}
events=${2:-20000000}
trace=${3:-/tmp/weft-perfetto-bench-trace}
size=${4:-512M}
runs=${5:-3}
weft=$build/weft
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

command -v /usr/bin/time >/dev/null 2>&1 || {
	echo "needs GNU time (apt-get install time)" >&2; exit 1; }

cat > "$tmp/writer_bench.c" <<'EOF'
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "outputs/perfetto.h"

/* Seconds of the monotonic clock. */
static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* usage: writer_bench EVENTS OUT MODE (inline, fsync, background) */
int main(int argc, char **argv)
{
	long n = atol(argv[1]);
	const char *mode = argv[3];
	int fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
	weft__perfetto_options o = { strcmp(mode, "background") == 0, 1 };
	weft__perfetto_writer *w;
	static const char *names[] = { "nosv VAs", "nosv VAp", "nosv VAy", "nosv VAw", "nosv task" };
	weft__view_track t[17];
	char tnames[16][32];
	weft_field args[2];
	uint64_t ts = 1700000000000000000ull;

	if (fd < 0 || weft__perfetto_writer_create_with(fd, &o, &w) != 0)
		return 1;
	const weft__view_sink *s = weft__perfetto_writer_sink(w);
	t[0] = (weft__view_track){ 1, 0, WEFT__TRACK_PROCESS, 1, 0, -1, "proc.1", NULL };
	s->track(s->ctx, &t[0]);
	for (int i = 1; i <= 16; i++) {
		snprintf(tnames[i - 1], sizeof tnames[0], "thread.%d", i);
		t[i] = (weft__view_track){ (uint32_t)i + 1, 1, WEFT__TRACK_THREAD, 1, i, i - 1,
					   tnames[i - 1], NULL };
		s->track(s->ctx, &t[i]);
	}
	memset(args, 0, sizeof args);
	args[0].name = "taskid"; args[0].name_len = 6; args[0].type = WEFT_TYPE_U32;
	args[1].name = "bodyid"; args[1].name_len = 6; args[1].type = WEFT_TYPE_U32;
	double t0 = now();
	for (long i = 0; i < n / 2; i++) {
		const char *nm = names[i % 5];
		args[0].v.u = (uint64_t)i;
		args[1].v.u = (uint64_t)i % 100;
		weft__view_item b = { nm, (uint32_t)strlen(nm), "nosv", args, 2, NULL, 0 };
		weft__view_item e = { "", 0, NULL, args, 1, NULL, 0 };
		s->begin(s->ctx, &t[1 + i % 16], ts, &b);
		ts += 37;
		s->end(s->ctx, &t[1 + i % 16], ts, &e);
		ts += 11;
	}
	int rc = weft__perfetto_writer_finish(w);
	if (rc == 0 && strcmp(mode, "inline") != 0 && fsync(fd) != 0)
		rc = 1;
	double dt = now() - t0;
	weft__perfetto_stats st;
	weft__perfetto_writer_stats(w, &st);
	printf("%.3f %.1f %.1f\n", dt, (double)n / dt / 1e6, (double)st.bytes / (double)n);
	weft__perfetto_writer_free(w);
	close(fd);
	return rc != 0;
}
EOF
cc -std=c11 -O2 -D_DEFAULT_SOURCE -D_POSIX_C_SOURCE=200809L -I"$top/include" -I"$top/src" \
	"$tmp/writer_bench.c" "$build/libweft.a" $(pkg-config --libs jansson libzstd) \
	-lpthread -lm -o "$tmp/writer_bench"

# best NAME FILE: the fastest of the RUNS lines "<wall> ..." in FILE.
best() {
	sort -n "$2" | head -n 1 | awk -v name="$1" '{ printf "| %s | %s |\n", name, $0 }'
}

echo "## The writer alone ($events events)"
echo
echo "| output | wall s, M events/s, bytes/event, user s, system s |"
echo "|---|---|"
for row in "null inline" "file inline" "file fsync" "file background"; do
	set -- $row
	: > "$tmp/times"
	i=0
	while [ "$i" -lt "$runs" ]; do
		out=/dev/null
		[ "$1" = file ] && out=$tmp/out.pftrace && rm -f "$out" && sync
		/usr/bin/time -f "%U %S" -o "$tmp/cpu" "$tmp/writer_bench" "$events" "$out" "$2" \
			> "$tmp/one"
		echo "$(cat "$tmp/one") $(cat "$tmp/cpu")" >> "$tmp/times"
		i=$((i + 1))
	done
	best "$1 $2" "$tmp/times"
done
rm -f "$tmp/out.pftrace"

if [ ! -d "$trace" ]; then
	"$build/bench/bench_emit" --write-trace "$trace" --bytes "$size" --threads 4 --spans >&2
fi
cat $(find "$trace" -name stream.obs) > /dev/null
count=$("$weft" check "$trace" | sed -n 's/.*streams, \([0-9]*\) events.*/\1/p')
echo
echo "## weft convert -t perfetto ($count events, $(du -sh "$trace" | cut -f1))"
echo
echo "| output | wall s, user s, system s, max RSS KB | M events/s |"
echo "|---|---|---|"
for target in null file; do
	: > "$tmp/times"
	i=0
	while [ "$i" -lt "$runs" ]; do
		if [ "$target" = file ]; then
			rm -f "$tmp/conv.pftrace"
			sync
			/usr/bin/time -f "%e %U %S %M" -o "$tmp/one" "$weft" convert "$trace" \
				-t perfetto -o "$tmp/conv.pftrace"
		else
			/usr/bin/time -f "%e %U %S %M" -o "$tmp/one" "$weft" convert "$trace" \
				-t perfetto -o - > /dev/null
		fi
		tail -n 1 "$tmp/one" >> "$tmp/times"
		i=$((i + 1))
	done
	sort -n "$tmp/times" | head -n 1 | awk -v n="$count" -v t="$target" \
		'{ printf "| %s | %s | %.1f |\n", t, $0, n / $1 / 1e6 }'
done
