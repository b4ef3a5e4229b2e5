/* SPDX-License-Identifier: MIT */
/*
 * test_parts_borrow.c - the threads of weft__parts_run() (core/parts.c)
 * borrow the open trace for the formats whose readers never write what
 * the open built (ovni, OTF2, ROSS: readers_share_data), sharing its
 * backend data with one thread each in their options, and open their own
 * copy for the others (Pallas); either way every stream is read by one
 * part, and a stream file that changed since the open is caught. Heph's
 * parts borrow too: the first to read in time order builds the index the
 * others wait for and share (every event read once, as one reader does).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/internal.h"
#include "testutil.h"
#include "weft/weft.h"

typedef struct seen {
	const weft_trace *origin;
} seen;

/* A part: whether its handle shares the origin's data, and its streams. */
static int part(weft_trace *handle, const uint8_t *selected, weft__pack *result, void *arg)
{
	const seen *s = arg;
	uint64_t streams = 0;
	for (size_t i = 0; i < weft_trace_stream_count(handle); i++)
		streams += selected[i] != 0;
	weft__pack_u64(result, handle->backend_data == s->origin->backend_data);
	weft__pack_u64(result, (uint64_t)handle->borrowed);
	weft__pack_u64(result, (uint64_t)handle->options.threads);
	weft__pack_u64(result, streams);
	return 0;
}

typedef struct totals {
	int parts, shared, borrowed, one_thread;
	uint64_t streams;
} totals;

static int merge(void *ctx, weft__unpack *u)
{
	totals *t = ctx;
	t->parts++;
	t->shared += (int)weft__unpack_u64(u);
	t->borrowed += (int)weft__unpack_u64(u);
	t->one_thread += weft__unpack_u64(u) == 1;
	t->streams += weft__unpack_u64(u);
	return 0;
}

/* The parts of the trace at `path` on 2 threads: 0 or the run's error. */
static int run_parts(const char *path, totals *t)
{
	weft_trace *trace;
	REQUIRE(weft_trace_open(path, NULL, &trace) == 0);
	seen s = { trace };
	memset(t, 0, sizeof *t);
	int rc = weft__parts_run(trace, NULL, 2, part, &s, merge, t);
	CHECK(rc < 0 || t->streams == weft_trace_stream_count(trace));
	weft_trace_free(trace);
	return rc;
}

/* A part that reads its streams in time order (Heph: through the index). */
static int read_part(weft_trace *handle, const uint8_t *selected, weft__pack *result,
		     void *arg)
{
	weft_filter f = { .order = WEFT_ORDER_TIME };
	weft_cursor *c = NULL;
	const weft_event *ev;
	uint64_t events = 0;
	int rc;
	(void)arg;
	if ((rc = weft__cursor_create_selected(handle, &f, selected, &c)) < 0)
		return rc;
	while ((rc = weft_cursor_next(c, &ev)) > 0)
		events++;
	weft_cursor_free(c);
	weft__pack_u64(result, events);
	return rc;
}

static int add_events(void *ctx, weft__unpack *u)
{
	*(uint64_t *)ctx += weft__unpack_u64(u);
	return 0;
}

/* Heph on 2 and 3 threads, time order: the events one cursor reads. */
static void test_heph_index_shared(void)
{
	weft_trace *trace;
	REQUIRE(weft_trace_open(tu_data_path("heph/heph_sample.bin.log"), NULL, &trace) == 0);
	weft_filter f = { .order = WEFT_ORDER_TIME };
	weft_cursor *c = NULL;
	const weft_event *ev;
	uint64_t alone = 0;
	REQUIRE(weft_cursor_create(trace, &f, &c) == 0);
	while (weft_cursor_next(c, &ev) > 0)
		alone++;
	weft_cursor_free(c);
	weft_trace_free(trace);
	CHECK(alone > 0);
	for (int threads = 2; threads <= 3; threads++) {
		uint64_t shared = 0;
		REQUIRE(weft_trace_open(tu_data_path("heph/heph_sample.bin.log"), NULL,
					&trace) == 0);
		CHECK(weft__parts_run(trace, NULL, threads, read_part, NULL, add_events,
				      &shared) == 0);
		CHECK_EQ_I64(shared, alone);
		weft_trace_free(trace);
	}
}

int main(void)
{
	static const struct { const char *rel; int borrows; } cases[] = {
		{ "ovni/v3/mpi-func-4procs", 1 },
		{ "otf2/mpi-threads/traces.otf2", 1 },
		{ "ross/phold-gvt-pekplp/np2", 1 },
		{ "pallas/weft_order/trace", 0 },
		{ "heph/heph_sample.bin.log", 1 },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		totals t;
		CHECK(run_parts(tu_data_path(cases[i].rel), &t) == 0);
		int parts = t.parts;
		CHECK(parts >= 1);
		CHECK_EQ_I64(t.borrowed, cases[i].borrows ? parts : 0);
		CHECK_EQ_I64(t.shared, cases[i].borrows ? parts : 0);
		CHECK_EQ_I64(t.one_thread, parts);
	}
	test_heph_index_shared();

	/* A borrowed part checks its streams' files against the open's sizes. */
	char *dir = tu_mkdtemp("parts-borrow");
	REQUIRE(dir != NULL);
	char cmd[8192], path[4096];
	snprintf(path, sizeof path, "%s/ovni", dir);
	snprintf(cmd, sizeof cmd, "cp -r '%s' '%s'", tu_data_path("ovni/v3/mpi-func-4procs"), path);
	REQUIRE(system(cmd) == 0);
	weft_trace *trace;
	REQUIRE(weft_trace_open(path, NULL, &trace) == 0);
	const weft_stream_info *si = weft_trace_stream(trace, 0);
	REQUIRE(si->file != NULL);
	char file[8192];
	snprintf(file, sizeof file, "%s/%s", path, si->file); /* relative to the root */
	REQUIRE(truncate(file, (off_t)si->file_size - 16) == 0);
	seen s = { trace };
	totals t = { 0 };
	CHECK(weft__parts_run(trace, NULL, 2, part, &s, merge, &t) == WEFT_ETRUNCATED);
	CHECK(strstr(weft_last_error(), "changed since it was opened") != NULL);
	weft_trace_free(trace);
	return tu_finish_dir(dir);
}
