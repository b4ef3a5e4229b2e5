/* SPDX-License-Identifier: MIT */
/*
 * test_progress.c - the progress callback of a trace (weft/progress.h):
 * which phases it sees and in what order, that its figures only grow
 * within a phase and end on the trace's totals (events, bytes of the data
 * files), that it is called on the caller's thread, that it keeps to its
 * interval, and the threads the library says it used.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"
#include "weft/weft.h"

#define MAX_CALLS 100000

/* Every call the callback received, in order. */
typedef struct record {
	weft_progress calls[MAX_CALLS];
	size_t count;
	int other_thread;   /* a call came on another thread than the caller's */
	pthread_t caller;
} record;

static record rec;

static void on_progress(const weft_progress *p, void *user_data)
{
	record *r = user_data;
	if (!pthread_equal(pthread_self(), r->caller))
		r->other_thread = 1;
	if (r->count < MAX_CALLS)
		r->calls[r->count++] = *p;
}

static void record_reset(void)
{
	memset(&rec, 0, sizeof rec);
	rec.caller = pthread_self();
}

/* Open options with the recording callback, called at every look (`interval` < 0). */
static weft_open_options recording_options(int64_t interval)
{
	weft_open_options o;
	weft_open_options_init(&o);
	o.progress = on_progress;
	o.progress_data = &rec;
	o.progress_interval_ns = interval;
	return o;
}

/* The calls of phase `phase` from index `from`: count, and the final one's index. */
static size_t phase_calls(const char *phase, size_t from, size_t *final)
{
	size_t n = 0;
	*final = SIZE_MAX;
	for (size_t i = from; i < rec.count; i++) {
		if (strcmp(rec.calls[i].phase, phase) != 0)
			continue;
		n++;
		if (rec.calls[i].finished && *final == SIZE_MAX)
			*final = i;
	}
	return n;
}

/* Within each phase, events, bytes and time never go back; bytes stay within the total. */
static void check_monotone(void)
{
	for (size_t i = 1; i < rec.count; i++) {
		const weft_progress *a = &rec.calls[i - 1], *b = &rec.calls[i];
		CHECK(b->bytes_done <= b->bytes_total || b->bytes_total == 0);
		if (a->finished || strcmp(a->phase, b->phase) != 0)
			continue;
		CHECK(b->events_done >= a->events_done);
		CHECK(b->bytes_done >= a->bytes_done);
		CHECK(b->elapsed_ns >= a->elapsed_ns);
	}
}

/* Reads every event of the trace through one merged cursor; their count. */
static uint64_t read_all(weft_trace *t)
{
	weft_cursor *c;
	const weft_event *ev;
	uint64_t events = 0;
	REQUIRE(weft_cursor_create(t, NULL, &c) == 0);
	while (weft_cursor_next(c, &ev) == 1)
		events++;
	weft_cursor_free(c);
	return events;
}

/* The sizes of the streams' data files, as stat() sees them (one file per ovni stream). */
static uint64_t stream_bytes(const weft_trace *t)
{
	uint64_t total = 0;
	for (size_t i = 0; i < weft_trace_stream_count(t); i++) {
		const weft_stream_info *s = weft_trace_stream(t, i);
		char path[4096];
		struct stat st;
		snprintf(path, sizeof path, "%s/%s", weft_trace_path(t), s->file);
		REQUIRE(stat(path, &st) == 0);
		total += (uint64_t)st.st_size;
	}
	return total;
}

/*
 * An ovni trace read through a plain cursor: the open's final call, then
 * calls of "reading" whose last has every event and every byte.
 */
static void test_cursor_reading(void)
{
	record_reset();
	weft_open_options o = recording_options(-1);
	weft_trace *t;
	REQUIRE(weft_trace_open(tu_data_path("ovni/v3/bench-mix-small"), &o, &t) == 0);
	size_t final;
	CHECK(phase_calls("opening", 0, &final) >= 1);
	CHECK(final != SIZE_MAX && final == rec.count - 1);
	uint64_t files = stream_bytes(t);
	CHECK_EQ_U64(weft_trace_data_bytes(t), files);
	CHECK_EQ_U64(weft_trace_data_files(t), weft_trace_stream_count(t));
	size_t opened = rec.count;

	uint64_t events = read_all(t);
	CHECK(phase_calls("reading", opened, &final) > 1);
	CHECK(final == SIZE_MAX); /* a plain cursor has no final call */
	const weft_progress *last = &rec.calls[rec.count - 1];
	CHECK_EQ_U64(last->bytes_total, files);
	CHECK_EQ_U64(last->bytes_done, files); /* each file read once, whole */
	CHECK(last->events_done <= events && last->events_done + 64 * 4 >= events);
	check_monotone();
	CHECK(!rec.other_thread);
	CHECK_EQ_I64(weft_trace_threads_used(t), 1);
	weft_trace_free(t);
}

/*
 * weft_convert: "converting" then "writing", each with a final call; the
 * converting one has read every event. Then weft_trace_check: "checking".
 */
static void test_operations(const char *dir)
{
	record_reset();
	weft_open_options o = recording_options(-1);
	weft_trace *t;
	REQUIRE(weft_trace_open(tu_data_path("ovni/v3/nosv-parallel-tasks"), &o, &t) == 0);
	size_t final;
	uint64_t events = read_all(t);

	char out[4096];
	snprintf(out, sizeof out, "%s/out.json", dir);
	weft_convert_options co;
	weft_convert_options_init(&co);
	co.output = "chrome";
	co.path = out;
	weft_convert_report report;
	size_t before = rec.count;
	REQUIRE(weft_convert(t, &co, &report) == 0);
	weft_convert_report_free(&report);
	CHECK(phase_calls("converting", before, &final) >= 2);
	REQUIRE(final != SIZE_MAX);
	CHECK_EQ_U64(rec.calls[final].events_done, events);
	CHECK_EQ_U64(rec.calls[final].bytes_done, weft_trace_data_bytes(t));
	size_t writing = final;
	CHECK(phase_calls("writing", before, &final) == 1);
	CHECK(final != SIZE_MAX && final > writing);
	CHECK_EQ_I64(weft_trace_threads_used(t), 2); /* the viewer writes behind */

	weft_check_options ck;
	weft_check_report *cr;
	weft_check_options_init(&ck);
	before = rec.count;
	REQUIRE(weft_trace_check(t, &ck, &cr) == 0);
	CHECK(phase_calls("checking", before, &final) >= 2);
	CHECK(final == rec.count - 1);
	CHECK_EQ_U64(rec.calls[final].events_done, weft_check_report_events(cr));
	weft_check_report_free(cr);
	check_monotone();
	CHECK(!rec.other_thread);
	weft_trace_free(t);
}

/* A Heph file: the open scan reports with the file's size as its total. */
static void test_heph_open(void)
{
	record_reset();
	weft_open_options o = recording_options(-1);
	o.threads = 1;
	weft_trace *t;
	const char *path = tu_data_path("heph/heph_sample.bin.log");
	struct stat st;
	REQUIRE(stat(path, &st) == 0);
	REQUIRE(weft_trace_open(path, &o, &t) == 0);
	size_t final;
	CHECK(phase_calls("opening", 0, &final) >= 2);
	REQUIRE(final != SIZE_MAX);
	CHECK_EQ_U64(rec.calls[final].bytes_total, (uint64_t)st.st_size);
	CHECK_EQ_U64(rec.calls[final].bytes_done, (uint64_t)st.st_size);
	CHECK_EQ_U64(rec.calls[final].events_done, 21);
	CHECK_EQ_U64(weft_trace_data_bytes(t), (uint64_t)st.st_size);
	CHECK_EQ_U64(rec.calls[final].events_total, 0); /* counted by the scan itself */

	/* in time order: the index is a stage of its own, then the events */
	size_t before = rec.count;
	CHECK_EQ_U64(read_all(t), 21);
	size_t indexed;
	CHECK(phase_calls("indexing", before, &indexed) >= 2);
	REQUIRE(indexed != SIZE_MAX);
	CHECK_EQ_U64(rec.calls[indexed].events_done, 21);
	CHECK_EQ_U64(rec.calls[indexed].events_total, 21);
	CHECK_EQ_U64(rec.calls[indexed].bytes_done, (uint64_t)st.st_size);
	CHECK(phase_calls("reading", indexed, &final) >= 1);
	const weft_progress *last = &rec.calls[rec.count - 1];
	CHECK_EQ_STR(last->phase, "reading");
	CHECK_EQ_U64(last->events_done, 21); /* from the end of the index on */
	CHECK_EQ_U64(last->bytes_done, (uint64_t)st.st_size);
	check_monotone();
	weft_trace_free(t);
}

/* ns of the monotonic clock. */
static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * The interval: reading for 300 ms with one of 50 ms gives calls 50 ms
 * apart at least (less the clock's few ms of resolution), and not more
 * than the time allows; with none installed, nothing is called.
 */
static void test_interval(void)
{
	record_reset();
	weft_open_options o = recording_options(50000000);
	weft_trace *t;
	REQUIRE(weft_trace_open(tu_data_path("ovni/v3/bench-mix-small"), &o, &t) == 0);
	size_t opened = rec.count;
	uint64_t start = now_ns();
	while (now_ns() - start < 300000000ull)
		read_all(t);
	size_t calls = rec.count - opened;
	CHECK(calls >= 2 && calls <= 7);
	for (size_t i = opened + 1; i < rec.count; i++)
		CHECK(rec.calls[i].elapsed_ns - rec.calls[i - 1].elapsed_ns >= 45000000ull);
	/* removed: no call any more */
	weft_trace_set_progress(t, NULL, NULL, 0);
	size_t before = rec.count;
	read_all(t);
	CHECK_EQ_U64(rec.count, before);
	weft_trace_free(t);
}

/* The dump on two threads says so; on one, one. */
static void test_threads_used(void)
{
	for (int threads = 1; threads <= 2; threads++) {
		weft_open_options o;
		weft_open_options_init(&o);
		o.threads = threads;
		weft_trace *t;
		REQUIRE(weft_trace_open(tu_data_path("ovni/v3/nosv-parallel-tasks"), &o, &t) == 0);
		weft_dump_options d;
		weft_dump_options_init(&d);
		weft_dump_status status;
		FILE *null = fopen("/dev/null", "w");
		REQUIRE(null != NULL);
		CHECK(weft_dump(t, &d, fileno(null), &status) == 0);
		fclose(null);
		CHECK_EQ_I64(weft_trace_threads_used(t), threads);
		weft_trace_free(t);
	}
}

/*
 * weft_counts_compute on two threads: the callback is called on the
 * caller's thread only (it shows what the parts publish while it waits),
 * and the final call has every event and byte.
 */
static void test_counts_in_threads(void)
{
	record_reset();
	weft_open_options o = recording_options(-1);
	weft_trace *t;
	REQUIRE(weft_trace_open(tu_data_path("ovni/v3/ovni-mark-4procs"), &o, &t) == 0);
	REQUIRE(weft_trace_stream_count(t) >= 2);
	weft_count_options co;
	weft_count_options_init(&co);
	co.threads = 2;
	weft_counts *counts;
	size_t before = rec.count, final;
	REQUIRE(weft_counts_compute(t, &co, &counts) == 0);
	weft_counts_free(counts);
	CHECK(phase_calls("counting", before, &final) >= 1);
	REQUIRE(final != SIZE_MAX);
	uint64_t events = rec.calls[final].events_done;
	CHECK_EQ_U64(events, read_all(t));
	CHECK_EQ_U64(rec.calls[final].bytes_done, weft_trace_data_bytes(t));
	CHECK_EQ_I64(weft_trace_threads_used(t), 2);
	CHECK(!rec.other_thread);
	weft_trace_free(t);
}

/* weft_ovni_sort_with: the opening, then the sort, on the caller's thread. */
static void test_sort(void)
{
	record_reset();
	weft_open_options o = recording_options(-1);
	weft_ovni_sort_report r;
	REQUIRE(weft_ovni_sort_with(tu_data_path("ovni/v3/ovni-sort-unsorted"), &o, 1, &r) == 0);
	size_t final;
	CHECK(phase_calls("opening", 0, &final) >= 1);
	size_t opened = final;
	CHECK(phase_calls("sorting", 0, &final) >= 2);
	CHECK(final != SIZE_MAX && final > opened && final == rec.count - 1);
	CHECK(r.unsorted_streams > 0);
	CHECK(!rec.other_thread);
}

int main(void)
{
	char *dir = tu_mkdtemp("weft-progress");
	REQUIRE(dir != NULL);
	test_cursor_reading();
	test_operations(dir);
	test_heph_open();
	test_interval();
	test_threads_used();
	test_counts_in_threads();
	test_sort();
	return tu_finish_dir(dir);
}
