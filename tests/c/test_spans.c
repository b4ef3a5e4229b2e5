/* SPDX-License-Identifier: MIT */
/*
 * test_spans.c - the public span iterator (weft/span.h) and profiles
 * (weft/profile.h), through the public API only, on reference traces:
 * the Heph call tree rebuilt by containment (ids, parents, depths,
 * children time, children before parents), the time window, instants,
 * ovni channels, stored order refused, bad options; profile rows per
 * stream, sources, and the errors.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "weft/weft.h"

#define MAX_SPANS 20000

typedef struct kept_span {
	weft_span span;
	char name[96];
	size_t order;        /* position in the iteration */
} kept_span;

static weft_trace *open_trace(const char *rel, int stored_order)
{
	weft_open_options o;
	weft_trace *t = NULL;
	weft_open_options_init(&o);
	o.stored_order = stored_order;
	int rc = weft_trace_open(tu_data_path(rel), &o, &t);
	if (rc < 0)
		fprintf(stderr, "%s: %s\n", rel, weft_last_error());
	REQUIRE(rc == 0);
	return t;
}

/* Every span of the trace with these options into out[]; their count. */
static size_t collect(weft_trace *t, const weft_span_options *o, kept_span *out,
		      weft_span_stats *stats)
{
	weft_span_iter *it;
	const weft_span *s;
	size_t n = 0;
	int rc;

	REQUIRE(weft_span_iter_create(t, o, &it) == 0);
	while ((rc = weft_span_iter_next(it, &s)) == 1) {
		REQUIRE(n < MAX_SPANS);
		out[n].span = *s;
		snprintf(out[n].name, sizeof out[n].name, "%s", s->name);
		out[n].span.name = out[n].name;
		out[n].order = n;
		n++;
	}
	CHECK(rc == 0);
	CHECK(weft_span_iter_next(it, &s) == 0 && s == NULL); /* stays at the end */
	if (stats != NULL)
		weft_span_iter_stats(it, stats);
	weft_span_iter_free(it);
	return n;
}

static const kept_span *by_id(const kept_span *spans, size_t n, uint64_t id)
{
	for (size_t i = 0; i < n; i++)
		if (spans[i].span.id == id)
			return &spans[i];
	return NULL;
}

/*
 * The promises of every span: a parent comes after its children, on the
 * same stream and timeline, one level up, containing it; the children
 * time of a span is the sum of its children's lengths; exclusive time is
 * the rest; ids are unique.
 */
static void check_tree(const kept_span *spans, size_t n)
{
	uint64_t *children = calloc(n + 1, sizeof *children);
	REQUIRE(children != NULL);
	for (size_t i = 0; i < n; i++) {
		const weft_span *s = &spans[i].span;
		CHECK(s->end >= s->start);
		CHECK(s->id != 0);
		for (size_t j = i + 1; j < n; j++)
			if (spans[j].span.id == s->id)
				tu_fail(__FILE__, __LINE__, "id %llu twice",
					(unsigned long long)s->id);
		if (s->flags & WEFT_SPAN_INSTANT)
			continue;
		if (s->parent == 0) {
			CHECK_EQ_U64(s->depth, 0);
			continue;
		}
		const kept_span *p = by_id(spans, n, s->parent);
		REQUIRE(p != NULL);
		CHECK(p->order > spans[i].order);
		CHECK_EQ_U64(p->span.stream, s->stream);
		CHECK(p->span.timeline == s->timeline);
		CHECK_EQ_U64(p->span.depth + 1, s->depth);
		CHECK(p->span.start <= s->start && s->end <= p->span.end);
		children[p - spans] += s->end - s->start;
	}
	for (size_t i = 0; i < n; i++) {
		const weft_span *s = &spans[i].span;
		if (s->flags & WEFT_SPAN_INSTANT)
			continue;
		CHECK_EQ_U64(s->children, children[i]);
		uint64_t length = s->end - s->start;
		CHECK_EQ_U64(s->exclusive, length > children[i] ? length - children[i] : 0);
	}
	free(children);
}

static const kept_span *find(const kept_span *spans, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(spans[i].name, name) == 0)
			return &spans[i];
	return NULL;
}

/* Heph: one span per event, nested by containment. */
static void test_heph_tree(kept_span *spans)
{
	weft_trace *t = open_trace("heph/heph_sample.bin.log", 0);
	weft_span_options o;
	weft_span_stats st;
	weft_span_options_init(&o);
	size_t n = collect(t, &o, spans, &st);

	CHECK_EQ_U64(n, st.spans);
	CHECK_EQ_U64(st.events, n);
	CHECK_EQ_U64(st.instants, 0);
	check_tree(spans, n);
	const kept_span *sched = find(spans, n, "Scheduling processes");
	REQUIRE(sched != NULL);
	CHECK_EQ_U64(sched->span.end - sched->span.start, 8200);
	CHECK_EQ_U64(sched->span.children, 300 + 1500 + 900 + 1000);
	CHECK_EQ_U64(sched->span.exclusive, 4500);
	CHECK_EQ_U64(sched->span.depth, 0);
	CHECK(sched->span.timeline == NULL);
	size_t inside = 0;
	for (size_t i = 0; i < n; i++)
		inside += spans[i].span.parent == sched->span.id;
	CHECK_EQ_U64(inside, 4);

	/* A window: every span inside it, the cut ones flagged. */
	uint64_t from = sched->span.start + 1000, to = sched->span.end - 1000;
	o.filter.from = from;
	o.filter.to = to;
	size_t m = collect(t, &o, spans, NULL);
	CHECK(m > 0 && m < n);
	check_tree(spans, m);
	const kept_span *cut = find(spans, m, "Scheduling processes");
	REQUIRE(cut != NULL);
	CHECK_EQ_U64(cut->span.start, from);
	CHECK_EQ_U64(cut->span.end, to);
	CHECK(cut->span.flags & WEFT_SPAN_CLIPPED);
	for (size_t i = 0; i < m; i++)
		CHECK(spans[i].span.start >= from && spans[i].span.end <= to);
	weft_trace_free(t);

	/* Opened in stored order (children first in the file): the iterator
	 * reads in time order all the same, and finds the same tree. */
	t = open_trace("heph/heph_sample.bin.log", 1);
	weft_span_options_init(&o);
	kept_span *again = calloc(MAX_SPANS, sizeof *again);
	REQUIRE(again != NULL);
	size_t k = collect(t, &o, again, NULL);
	o.filter.from = o.filter.to = 0;
	weft_trace_free(t);
	t = open_trace("heph/heph_sample.bin.log", 0);
	CHECK_EQ_U64(collect(t, &o, spans, NULL), k);
	for (size_t i = 0; i < k; i++) {
		CHECK_EQ_STR(again[i].name, spans[i].name);
		CHECK_EQ_U64(again[i].span.start, spans[i].span.start);
		CHECK_EQ_U64(again[i].span.parent, spans[i].span.parent);
		CHECK_EQ_U64(again[i].span.exclusive, spans[i].span.exclusive);
	}
	free(again);
	weft_trace_free(t);
}

/* ovni: channels are timelines; instants come with their parent. */
static void test_ovni_channels_and_instants(kept_span *spans)
{
	weft_trace *t = open_trace("ovni/v3/bench-mix-small/ovni", 0);
	weft_span_options o;
	weft_span_stats st;
	weft_span_options_init(&o);
	size_t plain = collect(t, &o, spans, NULL);
	o.with_instants = 1;
	size_t n = collect(t, &o, spans, &st);

	CHECK_EQ_U64(st.instants, 2040); /* 2000 OB. and 40 VYc (weft top) */
	CHECK_EQ_U64(n, plain + st.instants);
	check_tree(spans, n);
	size_t running = 0;
	for (size_t i = 0; i < n; i++) {
		const weft_span *s = &spans[i].span;
		if (s->flags & WEFT_SPAN_INSTANT)
			CHECK_EQ_U64(s->start, s->end);
		if (s->timeline != NULL && strcmp(s->timeline, "running") == 0)
			running++;
	}
	CHECK(running > 0);
	weft_trace_free(t);
}

/* Pallas: the instants inside a region have it as parent. */
static void test_instant_parents(kept_span *spans)
{
	weft_trace *t = open_trace("pallas/weft_order/trace", 0);
	weft_span_options o;
	weft_span_stats st;
	weft_span_options_init(&o);
	o.with_instants = 1;
	size_t n = collect(t, &o, spans, &st);

	CHECK_EQ_U64(st.spans, 6);     /* "main" on each of the six threads */
	CHECK_EQ_U64(st.instants, 18); /* Generic, name "tick" */
	check_tree(spans, n);
	for (size_t i = 0; i < n; i++) {
		const weft_span *s = &spans[i].span;
		if (!(s->flags & WEFT_SPAN_INSTANT)) {
			CHECK_EQ_STR(s->name, "main");
			CHECK_EQ_U64(s->end - s->start, 300);
			CHECK_EQ_U64(s->children, 0);
			continue;
		}
		CHECK_EQ_STR(s->name, "Generic"); /* the code: classify names no Generic */
		CHECK_EQ_U64(s->depth, 1);
		const kept_span *p = by_id(spans, n, s->parent);
		REQUIRE(p != NULL);
		CHECK_EQ_STR(p->name, "main");
		CHECK_EQ_U64(p->span.stream, s->stream);
	}
	weft_trace_free(t);
}

/* What the iterator refuses. */
static void test_refusals(void)
{
	weft_span_iter *it = (weft_span_iter *)&it;
	weft_span_options o;
	weft_trace *t = open_trace("heph/heph_sample.bin.log", 0);

	weft_span_options_init(&o);
	o.filter.from = 10;
	o.filter.to = 5;
	CHECK(weft_span_iter_create(t, &o, &it) == WEFT_EINVAL && it == NULL);
	o.filter.to = 0;
	o.virtual_unit = -1;
	CHECK(weft_span_iter_create(t, &o, &it) == WEFT_EINVAL);
	CHECK(weft_span_iter_create(t, NULL, &it) == WEFT_EINVAL);
	weft_span_iter_free(NULL);
	weft_trace_free(t);
}

/* Profiles: rows per stream, sources, errors. */
static void test_profiles(void)
{
	weft_profile_options o;
	weft_profile *p = NULL;
	weft_trace *t = open_trace("heph/heph_sample.bin.log", 0);

	weft_profile_options_init(&o);
	REQUIRE(weft_profile_compute(t, &o, &p) == 0);
	CHECK(weft_profile_source_used(p) == WEFT_PROFILE_SPANS);
	CHECK_EQ_STR(weft_profile_source_name(WEFT_PROFILE_SPANS), "replay");
	uint64_t calls = 0;
	for (size_t i = 0; i < weft_profile_row_count(p); i++) {
		const weft_profile_row *r = weft_profile_row_get(p, i);
		CHECK_EQ_I64(r->stream, -1);
		CHECK(r->min <= r->max && r->exclusive <= r->inclusive);
		if (i > 0)
			CHECK(weft_profile_row_get(p, i - 1)->inclusive >= r->inclusive);
		calls += r->calls;
	}
	CHECK(weft_profile_row_get(p, weft_profile_row_count(p)) == NULL);
	weft_profile_free(p);

	o.by = WEFT_PROFILE_BY_STREAM;
	REQUIRE(weft_profile_compute(t, &o, &p) == 0);
	uint64_t per_stream = 0;
	for (size_t i = 0; i < weft_profile_row_count(p); i++) {
		const weft_profile_row *r = weft_profile_row_get(p, i);
		CHECK(r->stream >= 0 && (size_t)r->stream < weft_trace_stream_count(t));
		if (i > 0)
			CHECK(weft_profile_row_get(p, i - 1)->stream <= r->stream);
		per_stream += r->calls;
	}
	CHECK_EQ_U64(per_stream, calls);
	weft_profile_free(p);

	o.source = WEFT_PROFILE_DURATIONS;
	CHECK(weft_profile_compute(t, &o, &p) == WEFT_EINVAL && p == NULL);
	CHECK(strstr(weft_last_error(), "only Pallas traces store call durations") != NULL);
	weft_profile_free(NULL);
	weft_trace_free(t);

	t = open_trace("pallas/wb_enterleave_f3_n1000_t2_logical/trace", 0);
	weft_profile_options_init(&o);
	REQUIRE(weft_profile_compute(t, &o, &p) == 0);
	CHECK(weft_profile_source_used(p) == WEFT_PROFILE_DURATIONS);
	CHECK_EQ_U64(weft_profile_row_count(p), 3);
	CHECK_EQ_U64(weft_profile_row_get(p, 0)->calls, 2000);
	weft_profile_free(p);
	o.source = WEFT_PROFILE_HEADERS;
	o.filter.stream_pattern = "*";
	CHECK(weft_profile_compute(t, &o, &p) == WEFT_EINVAL);
	weft_trace_free(t);
}

/*
 * with_codes: each span carries the code of the event that began it
 * (ovni: VTx begins the task, OHx the running state; a window's start
 * begins no span with an event), and none without the option.
 */
static void test_codes(void)
{
	weft_trace *t = open_trace("ovni/v3/nosv-parallel-tasks/ovni", 0);
	weft_span_options o;
	weft_span_iter *it;
	const weft_span *s;
	uint64_t tasks = 0, running = 0, clipped_without = 0, all = 0;

	weft_span_options_init(&o);
	o.with_codes = 1;
	REQUIRE(weft_span_iter_create(t, &o, &it) == 0);
	while (weft_span_iter_next(it, &s) == 1) {
		REQUIRE(s->code != NULL);
		tasks += strcmp(s->name, "nosv task") == 0 && strcmp(s->code, "VTx") == 0;
		running += strcmp(s->name, "running") == 0 && strcmp(s->code, "OHx") == 0;
		all++;
	}
	weft_span_iter_free(it);
	CHECK_EQ_U64(tasks, 100);
	CHECK_EQ_U64(running, 1);
	CHECK_EQ_U64(all, 201);

	/* cut by a window: the spans open at its start have no code */
	weft_span_options_init(&o);
	o.with_codes = 1;
	REQUIRE(weft_trace_start_time(t, &o.filter.from) == 1);
	o.filter.from += 1000000;
	REQUIRE(weft_span_iter_create(t, &o, &it) == 0);
	while (weft_span_iter_next(it, &s) == 1)
		clipped_without += (s->flags & WEFT_SPAN_CLIPPED) && s->start == o.filter.from &&
				   s->code == NULL;
	weft_span_iter_free(it);
	CHECK(clipped_without > 0);

	weft_span_options_init(&o);
	REQUIRE(weft_span_iter_create(t, &o, &it) == 0);
	while (weft_span_iter_next(it, &s) == 1)
		CHECK(s->code == NULL);
	weft_span_iter_free(it);
	weft_trace_free(t);
}

int main(void)
{
	kept_span *spans = calloc(MAX_SPANS, sizeof *spans);
	REQUIRE(spans != NULL);
	test_heph_tree(spans);
	test_ovni_channels_and_instants(spans);
	test_instant_parents(spans);
	test_refusals();
	test_profiles();
	test_codes();
	free(spans);
	return tu_result();
}
