/* SPDX-License-Identifier: MIT */
/*
 * test_threads_choice.c - how many threads an analysis reads a trace on
 * (core/parts.c): the automatic choice starts a thread only for enough
 * bytes, more of them for a trace of many streams (each thread opens the
 * whole trace again) and fewer for heavy work, at most 8 and the cores;
 * the cases are those measured in docs/SCALING.md. An asked count, or
 * WEFT_THREADS, is obeyed up to the streams read.
 */
#include <stdlib.h>

#include "core/internal.h"
#include "testutil.h"

#define MB 1000000ull

static void test_automatic(void)
{
	/* the 1 GB benchmark trace, 4 streams: every core, at most 8 */
	CHECK_EQ_I64(weft__threads_worth(1000 * MB, 4, 2, WEFT__WORK_LIGHT), 2);
	CHECK_EQ_I64(weft__threads_worth(1000 * MB, 4, 16, WEFT__WORK_LIGHT), 8);
	/* one core, or none known (sysconf failed): one thread */
	CHECK_EQ_I64(weft__threads_worth(1000 * MB, 4, 1, WEFT__WORK_HEAVY), 1);
	CHECK_EQ_I64(weft__threads_worth(1000 * MB, 4, -1, WEFT__WORK_HEAVY), 1);
	/* a small trace of few streams: one thread whatever the work */
	CHECK_EQ_I64(weft__threads_worth(3 * MB, 4, 8, WEFT__WORK_HEAVY), 1);
	CHECK_EQ_I64(weft__threads_worth(60 * MB, 4, 8, WEFT__WORK_LIGHT), 1);
	CHECK_EQ_I64(weft__threads_worth(60 * MB, 4, 8, WEFT__WORK_HEAVY), 8);
	/* 4096 streams of 16 KiB (66 MB): `top` lost on two threads,
	 * `profile` gained */
	CHECK_EQ_I64(weft__threads_worth(66 * MB, 4096, 2, WEFT__WORK_LIGHT), 1);
	CHECK_EQ_I64(weft__threads_worth(66 * MB, 4096, 2, WEFT__WORK_HEAVY), 2);
	/* 4096 streams of 64 KiB (262 MB): `top` even on two threads */
	CHECK_EQ_I64(weft__threads_worth(262 * MB, 4096, 2, WEFT__WORK_LIGHT), 1);
	/* 4096 streams of 7 KiB (30 MB): one thread, even for heavy work */
	CHECK_EQ_I64(weft__threads_worth(30 * MB, 4096, 8, WEFT__WORK_HEAVY), 1);
	/* nothing to read */
	CHECK_EQ_I64(weft__threads_worth(0, 0, 8, WEFT__WORK_HEAVY), 1);
}

static void test_asked(void)
{
	weft_trace *t = NULL;
	REQUIRE(weft_trace_open(tu_data_path("ovni/v3/mpi-func-4procs/ovni"), NULL, &t) == 0);
	REQUIRE(weft_trace_stream_count(t) == 4);
	unsetenv("WEFT_THREADS");
	/* 30 KB: one thread unless asked */
	CHECK_EQ_I64(weft__parts_threads(t, NULL, 0, WEFT__WORK_HEAVY), 1);
	CHECK_EQ_I64(weft__parts_threads(t, NULL, 3, WEFT__WORK_LIGHT), 3);
	/* never more threads than streams read */
	CHECK_EQ_I64(weft__parts_threads(t, NULL, 16, WEFT__WORK_LIGHT), 4);
	uint8_t two[4] = { 1, 0, 1, 0 };
	CHECK_EQ_I64(weft__parts_threads(t, two, 16, WEFT__WORK_LIGHT), 2);
	setenv("WEFT_THREADS", "2", 1);
	CHECK_EQ_I64(weft__parts_threads(t, NULL, 0, WEFT__WORK_LIGHT), 2);
	unsetenv("WEFT_THREADS");
	weft_trace_free(t);
}

int main(void)
{
	test_automatic();
	test_asked();
	return tu_result();
}
