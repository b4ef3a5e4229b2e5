/* SPDX-License-Identifier: MIT */
/*
 * test_view.c - the timeline view (src/outputs/view.c) on reference
 * traces of every format, through a sink that records what it gets and
 * checks the view's promises: tracks declared once before use, parents
 * first; pids and tids within int32, never 0, unique where the viewers
 * need them to be; spans nested per track with end >= begin; every span of the
 * full run found again, cut, in a windowed run; counts equal to what the
 * events say.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "outputs/view.h"
#include "testutil.h"
#include "weft/ovni.h"
#include "weft/pallas.h"

#define MAX_TRACKS 4096
#define MAX_SPANS 200000

typedef struct span {
	uint32_t track;
	uint64_t begin, end;
	unsigned flags;
	char name[64];
} span;

typedef struct recorder {
	int declared[MAX_TRACKS];
	uint32_t parent[MAX_TRACKS];
	weft__view_track_kind kind[MAX_TRACKS];
	int64_t pid[MAX_TRACKS], tid[MAX_TRACKS];
	char track_name[MAX_TRACKS][64];
	/* open spans per track: indexes into spans */
	uint32_t stack[MAX_TRACKS][64];
	uint32_t depth[MAX_TRACKS];
	span *spans;
	size_t span_count;
	uint64_t instants, counters, completes, begins, ends, flagged_clipped;
	uint64_t min_time, max_time;
	char counter_names[256];
	/* message ends: (flow id, end, time) in arrival order */
	struct { uint64_t id; int end; uint64_t time; } flows[64];
	size_t flow_count;
} recorder;

static recorder *rec;

static void note_time(uint64_t t)
{
	if (t < rec->min_time)
		rec->min_time = t;
	if (t > rec->max_time)
		rec->max_time = t;
}

static void check_used(const weft__view_track *t)
{
	REQUIRE(t->id < MAX_TRACKS);
	CHECK(rec->declared[t->id]);
}

static void on_track(void *ctx, const weft__view_track *t)
{
	(void)ctx;
	REQUIRE(t->id > 0 && t->id < MAX_TRACKS);
	CHECK(!rec->declared[t->id]);
	CHECK(t->parent == 0 || rec->declared[t->parent]);
	CHECK((t->kind == WEFT__TRACK_PROCESS) == (t->parent == 0));
	rec->declared[t->id] = 1;
	rec->parent[t->id] = t->parent;
	rec->kind[t->id] = t->kind;
	rec->pid[t->id] = t->pid;
	rec->tid[t->id] = t->tid;
	snprintf(rec->track_name[t->id], 64, "%s", t->name);
	if (t->kind == WEFT__TRACK_COUNTER && strlen(rec->counter_names) < 200) {
		strcat(rec->counter_names, t->name);
		strcat(rec->counter_names, ",");
	}
}

static span *new_span(const weft__view_track *t, uint64_t time, const weft__view_item *it)
{
	REQUIRE(rec->span_count < MAX_SPANS);
	span *s = &rec->spans[rec->span_count++];
	s->track = t->id;
	s->begin = time;
	s->end = time;
	s->flags = it->flags;
	snprintf(s->name, sizeof s->name, "%.*s", (int)it->name_len, it->name);
	if (it->flags & WEFT__VIEW_CLIPPED)
		rec->flagged_clipped++;
	return s;
}

static void on_begin(void *ctx, const weft__view_track *t, uint64_t time,
		     const weft__view_item *it)
{
	(void)ctx;
	check_used(t);
	CHECK(t->kind != WEFT__TRACK_PROCESS && t->kind != WEFT__TRACK_COUNTER);
	note_time(time);
	span *s = new_span(t, time, it);
	REQUIRE(rec->depth[t->id] < 64);
	rec->stack[t->id][rec->depth[t->id]++] = (uint32_t)(s - rec->spans);
	rec->begins++;
}

static void on_end(void *ctx, const weft__view_track *t, uint64_t time,
		   const weft__view_item *it)
{
	(void)ctx;
	check_used(t);
	note_time(time);
	REQUIRE(rec->depth[t->id] > 0);
	span *s = &rec->spans[rec->stack[t->id][--rec->depth[t->id]]];
	CHECK(time >= s->begin);
	s->end = time;
	s->flags |= it->flags;
	rec->ends++;
}

static void on_complete(void *ctx, const weft__view_track *t, uint64_t time,
			uint64_t end, const weft__view_item *it)
{
	(void)ctx;
	check_used(t);
	CHECK(end >= time);
	note_time(time);
	note_time(end);
	span *s = new_span(t, time, it);
	s->end = end;
	rec->completes++;
}

static void on_instant(void *ctx, const weft__view_track *t, uint64_t time,
		       const weft__view_item *it)
{
	(void)ctx;
	(void)it;
	check_used(t);
	note_time(time);
	rec->instants++;
	if (it->flow_id != 0 && rec->flow_count < 64) {
		rec->flows[rec->flow_count].id = it->flow_id;
		rec->flows[rec->flow_count].end = it->flow_end;
		rec->flows[rec->flow_count++].time = time;
	}
}

static void on_counter(void *ctx, const weft__view_track *t, uint64_t time, double value)
{
	(void)ctx;
	(void)value;
	check_used(t);
	CHECK(t->kind == WEFT__TRACK_COUNTER);
	note_time(time);
	rec->counters++;
}

static const weft__view_sink sink = { NULL, on_track, on_begin, on_end, on_complete,
				      on_instant, on_counter };

/*
 * The numbers of the tracks, as Chrome's and Perfetto's readers need
 * them: every pid and tid in [1, INT32_MAX] (processes: tid 0, none);
 * pids unique among processes; a track's pid its process's; tids unique
 * in their process among threads and sub-timelines (which Chrome shows
 * as threads), no sub-timeline with its process's pid as tid (the main
 * thread's); counters with their thread's numbers.
 */
static void check_numbers(const recorder *r)
{
	for (uint32_t i = 1; i < MAX_TRACKS; i++) {
		if (!r->declared[i])
			continue;
		CHECK(r->pid[i] >= 1 && r->pid[i] <= INT32_MAX);
		if (r->kind[i] == WEFT__TRACK_PROCESS) {
			CHECK_EQ_I64(r->tid[i], 0);
			for (uint32_t k = 1; k < i; k++)
				CHECK(!r->declared[k] || r->kind[k] != WEFT__TRACK_PROCESS ||
				      r->pid[k] != r->pid[i]);
			continue;
		}
		uint32_t parent = r->parent[i];
		CHECK(r->tid[i] >= 1 && r->tid[i] <= INT32_MAX);
		CHECK_EQ_I64(r->pid[i], r->pid[parent]);
		if (r->kind[i] == WEFT__TRACK_COUNTER) {
			CHECK_EQ_I64(r->tid[i], r->tid[parent]);
			continue;
		}
		if (r->kind[i] != WEFT__TRACK_THREAD)
			CHECK(r->tid[i] != r->pid[i]);
		for (uint32_t k = 1; k < i; k++)
			if (r->declared[k] && r->kind[k] != WEFT__TRACK_PROCESS &&
			    r->kind[k] != WEFT__TRACK_COUNTER && r->pid[k] == r->pid[i] &&
			    r->tid[k] == r->tid[i])
				tu_fail(__FILE__, __LINE__, "tracks %s and %s share pid %lld tid %lld",
					r->track_name[k], r->track_name[i], (long long)r->pid[i],
					(long long)r->tid[i]);
	}
}

/* Runs the view of `path` with a window into a fresh recorder. */
static recorder *run(const char *path, uint64_t from, uint64_t to, weft__view_stats *st)
{
	weft_trace *trace;
	weft_cursor *cursor;
	weft__view *view;
	recorder *r = calloc(1, sizeof *r);

	REQUIRE(r != NULL);
	r->spans = calloc(MAX_SPANS, sizeof *r->spans);
	r->min_time = UINT64_MAX;
	rec = r;
	REQUIRE(weft_trace_open(path, NULL, &trace) == 0);
	REQUIRE(weft_cursor_create(trace, NULL, &cursor) == 0);
	weft__view_options o = { .from = from, .to = to, .time_ordered = 1 };
	REQUIRE(weft__view_create(trace, &o, &sink, &view) == 0);
	CHECK_EQ_I64(weft__view_run(view, cursor), 0);
	weft__view_stats_get(view, st);
	for (uint32_t i = 0; i < MAX_TRACKS; i++)
		CHECK_EQ_U64(r->depth[i], 0);
	CHECK_EQ_U64(r->begins, r->ends);
	check_numbers(r);
	weft__view_free(view);
	weft_cursor_free(cursor);
	weft_trace_free(trace);
	return r;
}

/* run() of the trace at `rel` under the test data, whole. */
static recorder *run_data(const char *data, const char *rel, weft__view_stats *st)
{
	char path[1024];

	snprintf(path, sizeof path, "%s/%s", data, rel);
	return run(path, 0, 0, st);
}

static void recorder_free(recorder *r)
{
	free(r->spans);
	free(r);
}

/* Events of the trace by role, counted independently of the view. */
static void count_roles(const char *path, uint64_t *enters, uint64_t *points)
{
	weft_trace *trace;
	weft_cursor *cursor;
	const weft_event *ev;

	*enters = *points = 0;
	REQUIRE(weft_trace_open(path, NULL, &trace) == 0);
	REQUIRE(weft_cursor_create(trace, NULL, &cursor) == 0);
	while (weft_cursor_next(cursor, &ev) == 1) {
		char mcv[4] = { ev->code[0], ev->code[1], ev->code[2], 0 };
		const weft_ovni_signature *s = weft_ovni_signature_find(mcv);
		int running = strcmp(mcv, "OHx") == 0 || strcmp(mcv, "OHr") == 0 ||
			      strcmp(mcv, "VTx") == 0 || strcmp(mcv, "VTr") == 0;
		int closing = strcmp(mcv, "VTe") == 0 || strcmp(mcv, "VTp") == 0;
		if (running || (s && strcmp(s->role, "enter") == 0 && s->partner[0] &&
				mcv[1] != 'M'))
			(*enters)++;
		else if (!closing && !(s && s->partner[0] && mcv[1] != 'M') && mcv[1] != 'M' &&
			 strcmp(mcv, "OHp") && strcmp(mcv, "OHe"))
			(*points)++;
	}
	weft_cursor_free(cursor);
	weft_trace_free(trace);
}

/* ovni: one span per enter, nested; points as instants; the window cut. */
static void test_ovni(const char *data)
{
	char path[1024];
	weft__view_stats st;
	uint64_t enters, points;

	snprintf(path, sizeof path, "%s/ovni/v3/nosv-parallel-tasks/ovni", data);
	count_roles(path, &enters, &points);
	recorder *full = run(path, 0, 0, &st);
	CHECK(enters > 10);
	CHECK_EQ_U64(full->begins, enters);
	CHECK_EQ_U64(full->instants, points);
	CHECK_EQ_U64(st.unmatched_leaves, 0);
	int running = 0, channel = 0;
	for (uint32_t i = 0; i < MAX_TRACKS; i++) {
		running += full->declared[i] && full->kind[i] == WEFT__TRACK_STATE;
		channel += full->declared[i] && full->kind[i] == WEFT__TRACK_CHANNEL &&
			   strncmp(full->track_name[i], "nosv ", 5) == 0;
	}
	CHECK(running >= 1);
	CHECK(channel >= 2);

	/* A window in the middle: every span of the full run that overlaps
	 * it appears cut to it, flagged when cut. */
	uint64_t from = full->min_time + (full->max_time - full->min_time) / 3;
	uint64_t to = full->min_time + 2 * (full->max_time - full->min_time) / 3;
	recorder *part = run(path, from, to, &st);
	CHECK(part->min_time >= from);
	CHECK(part->max_time <= to);
	uint64_t expected = 0, clipped = 0;
	for (size_t i = 0; i < full->span_count; i++) {
		const span *s = &full->spans[i];
		if (s->end < from || s->begin > to)
			continue;
		expected++;
		clipped += s->begin < from || s->end > to;
		uint64_t b = s->begin < from ? from : s->begin;
		uint64_t e = s->end > to ? to : s->end;
		int found = 0;
		for (size_t k = 0; k < part->span_count && !found; k++)
			found = part->spans[k].begin == b && part->spans[k].end == e &&
				strcmp(part->spans[k].name, s->name) == 0;
		if (!found)
			tu_fail(__FILE__, __LINE__, "span %s [%llu, %llu] not in the window",
				s->name, (unsigned long long)s->begin,
				(unsigned long long)s->end);
	}
	CHECK(expected > 0);
	CHECK(clipped > 0);
	/* Spans that only touch an edge by an instant may be missed by the
	 * window: none here, so the counts are equal. */
	CHECK_EQ_U64(part->span_count, expected);
	recorder_free(full);
	recorder_free(part);
}

/* ovni marks: stack marks are spans named with labels, single ones counters. */
static void test_marks(const char *data)
{
	weft__view_stats st;
	recorder *r = run_data(data, "ovni/v3/ovni-mark-4procs/ovni", &st);

	int colors = 0, labelled = 0;
	for (uint32_t i = 0; i < MAX_TRACKS; i++)
		colors += r->declared[i] && strcmp(r->track_name[i], "Colors") == 0;
	for (size_t i = 0; i < r->span_count; i++)
		labelled += strcmp(r->spans[i].name, "Blue") == 0 ||
			    strcmp(r->spans[i].name, "Red") == 0;
	CHECK_EQ_U64(colors, 4);
	CHECK(labelled > 0);
	CHECK(strstr(r->counter_names, "Progress,") != NULL);
	CHECK(r->counters > 0);
	recorder_free(r);
}

/* Heph: complete spans, one per event. */
static void test_heph(const char *data)
{
	char path[1024];
	weft__view_stats st;

	snprintf(path, sizeof path, "%s/heph/heph_sample.bin.log", data);
	recorder *r = run(path, 0, 0, &st);
	CHECK(r->completes > 0);
	CHECK_EQ_U64(r->completes, st.events);
	recorder_free(r);
}

/* ROSS samples: counters named after fields. */
static void test_ross(const char *data)
{
	char path[1024];
	weft__view_stats st;

	snprintf(path, sizeof path, "%s/ross/phold-rt-pekplp/np2/ross-stats-rt.bin", data);
	recorder *r = run(path, 0, 0, &st);
	CHECK(r->counters > 0);
	CHECK_EQ_U64(r->begins, 0);
	recorder_free(r);
}

/* Pallas: Enter/Leave spans named after regions, on the thread track. */
static void test_pallas(const char *data)
{
	char path[1024];
	weft__view_stats st;

	snprintf(path, sizeof path, "%s/pallas/wb_enterleave_f3_n1000_t2_logical/trace", data);
	recorder *r = run(path, 0, 0, &st);
	CHECK(r->begins > 1000);
	CHECK_EQ_U64(st.unmatched_leaves, 0);
	CHECK_EQ_U64(st.unclosed_spans, 0);
	for (size_t i = 0; i < r->span_count; i++) {
		CHECK(r->kind[r->spans[i].track] == WEFT__TRACK_THREAD);
		CHECK(strcmp(r->spans[i].name, "Enter") != 0);
	}
	recorder_free(r);
}

/*
 * pids and tids of every format (check_numbers() runs on each): node
 * numbers 0 (Heph substream 0, ROSS pe.0/kp.0/lp.0, Pallas thread_0) and
 * above int32 (Heph substream ids that are addresses) get fresh numbers;
 * node numbers in range are kept.
 */
static void test_numbers(const char *data)
{
	static const char *const traces[] = {
		"ovni/v3/mpi-func-4procs/ovni", "heph/heph_sample.bin.log",
		"ross/phold-gvt-pekplp/np2", "pallas/wb_generic_f2_n2000_t4_logical/trace",
	};
	weft__view_stats st;

	for (size_t i = 0; i < sizeof traces / sizeof traces[0]; i++)
		recorder_free(run_data(data, traces[i], &st));
	recorder *r = run_data(data, "heph/heph_sample.bin.log", &st);
	int kept = 0, renumbered = 0;
	for (uint32_t i = 1; i < MAX_TRACKS; i++) {
		if (!r->declared[i] || r->kind[i] != WEFT__TRACK_THREAD)
			continue;
		kept += strcmp(r->track_name[i], "substream.7") == 0 && r->tid[i] == 7;
		renumbered += strcmp(r->track_name[i], "substream.94355107131408") == 0 ||
			      strcmp(r->track_name[i], "substream.0") == 0;
	}
	CHECK_EQ_I64(kept, 1);
	CHECK_EQ_I64(renumbered, 4);
	recorder_free(r);
	r = run_data(data, "ovni/v3/mpi-func-4procs/ovni", &st);
	for (uint32_t i = 1; i < MAX_TRACKS; i++)
		if (r->declared[i] && r->kind[i] == WEFT__TRACK_THREAD)
			CHECK(strcmp(r->track_name[i] + 7, r->track_name[r->parent[i]] +
				     strlen(r->track_name[r->parent[i]]) - 4) == 0 &&
			      r->tid[i] == r->pid[i]);
	recorder_free(r);
}

/*
 * ovni's bench-mix-small repeats OHx without OHp/OHe: the "running" state
 * restarts at each, never nests (the recorder keeps 64 levels; it was 491
 * deep), and every OHx begins a span.
 */
static void test_state_restarts(const char *data)
{
	weft__view_stats st;
	recorder *r = run_data(data, "ovni/v3/bench-mix-small/ovni", &st);

	CHECK(st.state_restarts > 400);
	CHECK_EQ_U64(st.too_deep, 0);
	uint32_t running = 0;
	for (size_t i = 0; i < r->span_count; i++)
		running += r->kind[r->spans[i].track] == WEFT__TRACK_STATE;
	CHECK_EQ_U64(running, st.state_restarts + 4);
	recorder_free(r);
}

/*
 * Writes a Pallas trace of two ranks (location groups 0 and 1, a thread
 * each): rank 0 sends tags 5, 5, 7 to rank 1, which receives them in the
 * order 5, 7, 5 (different tags may be taken out of order), plus one send
 * nobody receives. Returns the trace directory (malloc'd).
 */
static char *write_mpi_trace(const char *scratch)
{
	weft_pallas_global *g;
	weft_pallas_archive *a[2];
	weft_pallas_thread *t[2];
	char *dir = malloc(strlen(scratch) + 8);

	REQUIRE(dir != NULL);
	sprintf(dir, "%s/mpi", scratch);
	REQUIRE(weft_pallas_global_create(dir, "main", NULL, &g) == 0);
	weft_pallas_defs *d = weft_pallas_global_defs(g);
	const char *names[] = { "rank0", "rank1", "t0", "t1", "world" };
	for (uint32_t i = 0; i < 5; i++)
		CHECK_EQ_I64(weft_pallas_add_string(d, i, names[i]), 0);
	uint32_t members[2] = { 0, 1 };
	CHECK_EQ_I64(weft_pallas_add_group(d, 0, 4, 2, 5, members, 2), 0);
	CHECK_EQ_I64(weft_pallas_add_comm(d, 0, 4, 0, WEFT_PALLAS_NO_PARENT), 0);
	for (uint32_t r = 0; r < 2; r++) {
		CHECK_EQ_I64(weft_pallas_add_location_group(d, r, r, WEFT_PALLAS_NO_PARENT), 0);
		REQUIRE(weft_pallas_archive_create(g, r, &a[r]) == 0);
		CHECK_EQ_I64(weft_pallas_add_location(weft_pallas_archive_defs(a[r]), r, 2 + r, r), 0);
		REQUIRE(weft_pallas_thread_create(a[r], r, &t[r]) == 0);
	}
	CHECK_EQ_I64(weft_pallas_record_mpi_send(t[0], NULL, 100, 1, 0, 5, 8), 0);
	CHECK_EQ_I64(weft_pallas_record_mpi_send(t[0], NULL, 110, 1, 0, 5, 8), 0);
	CHECK_EQ_I64(weft_pallas_record_mpi_send(t[0], NULL, 120, 1, 0, 7, 8), 0);
	CHECK_EQ_I64(weft_pallas_record_mpi_send(t[0], NULL, 130, 1, 0, 9, 8), 0);
	CHECK_EQ_I64(weft_pallas_record_mpi_recv(t[1], NULL, 150, 0, 0, 5, 8), 0);
	CHECK_EQ_I64(weft_pallas_record_mpi_recv(t[1], NULL, 160, 0, 0, 7, 8), 0);
	CHECK_EQ_I64(weft_pallas_record_mpi_recv(t[1], NULL, 170, 0, 0, 5, 8), 0);
	for (uint32_t r = 0; r < 2; r++) {
		CHECK_EQ_I64(weft_pallas_thread_close(t[r]), 0);
		CHECK_EQ_I64(weft_pallas_archive_store(a[r]), 0);
	}
	CHECK_EQ_I64(weft_pallas_global_store(g), 0);
	weft_pallas_global_free(g);
	return dir;
}

/* The id of the message end recorded at `time`, and its end. */
static uint64_t flow_at(const recorder *r, uint64_t time, int *end)
{
	for (size_t i = 0; i < r->flow_count; i++)
		if (r->flows[i].time == time) {
			*end = r->flows[i].end;
			return r->flows[i].id;
		}
	*end = 0;
	return 0;
}

/* Pallas MPI sends and receives: matched per (ranks, tag) in order. */
static void test_flows(void)
{
	char *scratch = tu_mkdtemp("weft-view");
	char *dir = write_mpi_trace(scratch);
	weft__view_stats st;
	int end;

	recorder *r = run(dir, 0, 0, &st);
	CHECK_EQ_U64(r->flow_count, 7);
	uint64_t s1 = flow_at(r, 100, &end);
	CHECK_EQ_I64(end, WEFT_FLOW_OUT);
	uint64_t s2 = flow_at(r, 110, &end), s3 = flow_at(r, 120, &end);
	uint64_t s4 = flow_at(r, 130, &end);
	uint64_t r1 = flow_at(r, 150, &end);
	CHECK_EQ_I64(end, WEFT_FLOW_IN);
	uint64_t r2 = flow_at(r, 160, &end), r3 = flow_at(r, 170, &end);
	CHECK(s1 != 0 && s1 == r1);
	CHECK(s3 != 0 && s3 == r2);
	CHECK(s2 != 0 && s2 == r3);
	CHECK(s1 != s2 && s2 != s3 && s4 != s1 && s4 != s2 && s4 != s3);
	CHECK(s4 != r1 && s4 != r2 && s4 != r3);
	recorder_free(r);
	free(dir);
	tu_finish_dir(scratch);
}

int main(void)
{
	const char *data = getenv("WEFT_TEST_DATA");
	REQUIRE(data != NULL);
	test_ovni(data);
	test_marks(data);
	test_heph(data);
	test_ross(data);
	test_pallas(data);
	test_numbers(data);
	test_state_restarts(data);
	test_flows();
	return tu_result();
}
