/* SPDX-License-Identifier: MIT */
/*
 * test_cursor_order.c - order as a cursor property (weft/event.h): each
 * format's natural order (Heph: its file order; ovni, ROSS, Pallas: time),
 * what a cursor says it delivers and that it delivers it, the order asked
 * of a cursor on a trace opened the other way (no second opening), and the
 * single-stream cursor with the merged cursor's filter (time window, code
 * glob); the start of a trace (weft_trace_start_time).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "weft/weft.h"

static char path_buf[4096];

/* $WEFT_TEST_DATA/<rel>; exits 77 (skipped) without the data. */
static const char *data_path(const char *rel)
{
	const char *data = getenv("WEFT_TEST_DATA");
	if (data == NULL) {
		fprintf(stderr, "WEFT_TEST_DATA is not set\n");
		exit(77);
	}
	snprintf(path_buf, sizeof path_buf, "%s/%s", data, rel);
	return path_buf;
}

/* Opens a trace of tests/data, in stored order when asked. */
static weft_trace *open_trace(const char *rel, int stored)
{
	weft_open_options o;
	weft_trace *t = NULL;
	weft_open_options_init(&o);
	o.stored_order = stored;
	int rc = weft_trace_open(data_path(rel), &o, &t);
	if (rc < 0)
		fprintf(stderr, "%s\n", weft_last_error());
	REQUIRE(rc == 0);
	return t;
}

/* What a cursor delivered: count, time order kept, a child before its parent. */
typedef struct walk {
	uint64_t count;
	int time_sorted;  /* every time >= the one before */
	int depth_unknown; /* some event with depth -1 (Heph stored order) */
	uint64_t sum;     /* of times and offsets, to compare two walks */
} walk;

/* Reads a cursor to its end. */
static walk walk_cursor(weft_cursor *c)
{
	walk w = { 0, 1, 0, 0 };
	const weft_event *ev;
	uint64_t last = 0;
	int rc;
	while ((rc = weft_cursor_next(c, &ev)) == 1) {
		if (w.count > 0 && ev->time < last)
			w.time_sorted = 0;
		last = ev->time;
		w.depth_unknown |= ev->depth < 0;
		w.sum = w.sum * 31 + ev->time * 7 + ev->offset;
		w.count++;
	}
	CHECK(rc == 0);
	return w;
}

/* A merged cursor with `order`: checks what it says it delivers. */
static walk merged(weft_trace *t, int order, weft_order says)
{
	weft_filter f = { 0 };
	weft_cursor *c = NULL;
	f.order = order;
	REQUIRE(weft_cursor_create(t, &f, &c) == 0);
	CHECK_EQ_I64(weft_cursor_order(c), says);
	walk w = walk_cursor(c);
	weft_cursor_free(c);
	return w;
}

/* Heph: natural order is the file's; time order on the same opened trace. */
static void test_heph(void)
{
	weft_trace *t = open_trace("heph/heph_sample.bin.log", 0);
	CHECK_EQ_I64(weft_trace_natural_order(t), WEFT_ORDER_STORED);
	walk natural = merged(t, WEFT_ORDER_NATURAL, WEFT_ORDER_STORED);
	walk time = merged(t, WEFT_ORDER_TIME, WEFT_ORDER_TIME);
	walk deflt = merged(t, WEFT_ORDER_DEFAULT, WEFT_ORDER_TIME);
	CHECK(natural.count > 0);
	CHECK_EQ_U64(natural.count, time.count);
	CHECK(natural.depth_unknown);  /* file order: children first, depth unknown */
	CHECK(!time.depth_unknown);
	CHECK(time.time_sorted);
	CHECK_EQ_U64(time.sum, deflt.sum);
	weft_trace_free(t);

	/* opened in stored order: DEFAULT is stored, TIME still available */
	t = open_trace("heph/heph_sample.bin.log", 1);
	walk stored = merged(t, WEFT_ORDER_DEFAULT, WEFT_ORDER_STORED);
	walk time2 = merged(t, WEFT_ORDER_TIME, WEFT_ORDER_TIME);
	CHECK_EQ_U64(stored.sum, natural.sum);
	CHECK_EQ_U64(time2.sum, time.sum);
	weft_trace_free(t);
}

/*
 * ovni: natural order is time; a stream written out of order comes sorted
 * in time order and as stored in stored order, from one opened trace.
 */
static void test_ovni(void)
{
	weft_trace *t = open_trace("ovni/v3/ovni-sort-unsorted/ovni", 0);
	CHECK_EQ_I64(weft_trace_natural_order(t), WEFT_ORDER_TIME);
	walk natural = merged(t, WEFT_ORDER_NATURAL, WEFT_ORDER_TIME);
	walk stored = merged(t, WEFT_ORDER_STORED, WEFT_ORDER_STORED);
	CHECK(natural.time_sorted);
	CHECK(!stored.time_sorted);
	CHECK_EQ_U64(natural.count, stored.count);
	weft_trace_free(t);
}

/* ROSS: whole files merged by time in every order. */
static void test_ross(void)
{
	weft_trace *t = open_trace("ross/phold-gvt-pekplp/np2/ross-stats-gvt.bin", 0);
	CHECK_EQ_I64(weft_trace_natural_order(t), WEFT_ORDER_TIME);
	walk a = merged(t, WEFT_ORDER_STORED, WEFT_ORDER_TIME);
	walk b = merged(t, WEFT_ORDER_NATURAL, WEFT_ORDER_TIME);
	CHECK_EQ_U64(a.sum, b.sum);
	weft_trace_free(t);
}

/*
 * The single-stream cursor with a filter delivers what the merged cursor
 * with the same filter delivers of that stream.
 */
static void test_stream_filter(void)
{
	weft_trace *t = open_trace("ovni/v3/nosv-parallel-tasks/ovni", 0);
	REQUIRE(weft_trace_stream_count(t) > 0);
	const weft_event *ev;
	weft_cursor *c = NULL;
	weft_filter all = { 0 };
	uint64_t first = UINT64_MAX, last = 0;
	REQUIRE(weft_cursor_create_stream(t, 0, &c) == 0);
	while (weft_cursor_next(c, &ev) == 1) {
		first = ev->time < first ? ev->time : first;
		last = ev->time > last ? ev->time : last;
	}
	weft_cursor_free(c);
	REQUIRE(last > first);

	weft_filter f = { 0 };
	f.from = first + (last - first) / 4;
	f.to = last - (last - first) / 4;
	f.code_pattern = "V*";
	f.stream_pattern = weft_trace_stream(t, 0)->path;
	REQUIRE(weft_cursor_create(t, &f, &c) == 0);
	walk want = walk_cursor(c);
	weft_cursor_free(c);
	REQUIRE(weft_cursor_create_stream_filtered(t, 0, &f, &c) == 0);
	CHECK_EQ_I64(weft_cursor_order(c), WEFT_ORDER_TIME);
	walk got = walk_cursor(c);
	weft_cursor_free(c);
	CHECK(want.count > 0);
	CHECK_EQ_U64(got.count, want.count);
	CHECK_EQ_U64(got.sum, want.sum);

	/* without a filter: every event of the stream */
	REQUIRE(weft_cursor_create_stream_filtered(t, 0, &all, &c) == 0);
	walk whole = walk_cursor(c);
	weft_cursor_free(c);
	CHECK(whole.count > got.count);

	/* an order that is none, a stream past the end */
	all.order = 7;
	CHECK_EQ_I64(weft_cursor_create_stream_filtered(t, 0, &all, &c), WEFT_EINVAL);
	CHECK(c == NULL);
	CHECK_EQ_I64(weft_cursor_create(t, &all, &c), WEFT_EINVAL);
	CHECK(c == NULL);
	CHECK(strstr(weft_last_error(), "order") != NULL);
	all.order = 0;
	CHECK_EQ_I64(weft_cursor_create_stream_filtered(t, 1u << 30, &all, &c), WEFT_EINVAL);
	weft_trace_free(t);
}

/*
 * weft_trace_start_time: the earliest time of the events that have one,
 * found by walking every event, in each format, whatever order the trace
 * was opened in, the same on a second call; ROSS analysis model samples
 * (no real time, time 0) are not the start.
 */
static void check_start_time(const char *rel, int stored)
{
	weft_trace *t = open_trace(rel, stored);
	weft_filter all = { .order = WEFT_ORDER_STORED };
	weft_cursor *c;
	const weft_event *ev;
	uint64_t first = UINT64_MAX, untimed = 0, start = 1;

	REQUIRE(weft_cursor_create(t, &all, &c) == 0);
	while (weft_cursor_next(c, &ev) == 1) {
		if (ev->flags & WEFT_EVENT_NO_TIME)
			untimed++;
		else if (ev->time < first)
			first = ev->time;
	}
	weft_cursor_free(c);
	REQUIRE(first != UINT64_MAX);
	size_t diags = weft_trace_diag_count(t);
	CHECK_EQ_I64(weft_trace_start_time(t, &start), 1);
	CHECK_EQ_U64(weft_trace_diag_count(t), diags); /* read on a handle of its own */
	CHECK_EQ_U64(start, first);
	start = 0;
	CHECK_EQ_I64(weft_trace_start_time(t, &start), 1);
	CHECK_EQ_U64(start, first);
	if (strstr(rel, "im-everything") != NULL)
		CHECK(untimed > 0 && first > 0);
	weft_trace_free(t);
}

static void test_start_time(void)
{
	check_start_time("heph/heph_sample.bin.log", 0);
	check_start_time("heph/heph_sample.bin.log", 1);
	check_start_time("ovni/v3/nosv-parallel-tasks/ovni", 0);
	check_start_time("ovni/v3/bench-mix-small/ovni", 1);
	check_start_time("ross/im-everything/np1", 0);
	check_start_time("ross/phold-vt-pekplp/np1", 0);
	check_start_time("pallas/wb_enterleave_f3_n1000_t2_logical/trace", 0);
}

int main(void)
{
	test_heph();
	test_ovni();
	test_ross();
	test_stream_filter();
	test_start_time();
	return tu_result();
}
