/* SPDX-License-Identifier: MIT */
/*
 * test_keyed_runs.c - outputs/keyed_runs.c: lines written by writer
 * threads over shares of the streams come out as one greedy (time,
 * stream) merge of all the streams gives them, also when streams go back
 * in time, across many chunks, with a line longer than a chunk, an empty
 * run and a run that never began; a writer that fails ends its run
 * without a hang; an output that fails stops the writers, whose last
 * writes neither hang nor leak.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "outputs/keyed_runs.h"
#include "testutil.h"

#define STREAMS 7
#define MAX_RUNS 4

/* The streams' event times; some go back (as unsorted ovni streams do). */
typedef struct streams {
	uint64_t *times[STREAMS];
	size_t count[STREAMS];
	size_t long_line_stream, long_line_index; /* one line of 3 MiB */
} streams;

static void make_streams(streams *s, size_t per_stream, unsigned seed)
{
	srand(seed);
	for (int i = 0; i < STREAMS; i++) {
		s->count[i] = per_stream + (size_t)i * 1000;
		s->times[i] = malloc(s->count[i] * sizeof *s->times[i]);
		uint64_t t = 0;
		for (size_t k = 0; k < s->count[i]; k++) {
			t += (uint64_t)(rand() % 5);
			/* now and then a step back, and equal times across streams */
			s->times[i][k] = (rand() % 97 == 0 && t > 20) ? t - 20 : t;
		}
	}
	s->long_line_stream = 2;
	s->long_line_index = per_stream / 2;
}

/* The line of event k of stream i. Writes it into `out`. */
static void put_line(const streams *s, int i, size_t k, weft__outbuf *out)
{
	char text[64];
	int n = snprintf(text, sizeof text, "%llu %d %zu\n",
			 (unsigned long long)s->times[i][k], i, k);
	if ((size_t)i == s->long_line_stream && k == s->long_line_index) {
		static char big[3u << 20];
		memset(big, 'x', sizeof big - 1);
		big[sizeof big - 1] = '\n';
		weft__outbuf_put(out, text, (size_t)n - 1);
		weft__outbuf_put(out, big, sizeof big);
		return;
	}
	weft__outbuf_put(out, text, (size_t)n);
}

/*
 * The greedy merge of the streams whose bit is in `mask` (a merged
 * cursor's order); calls `emit` for each (stream, index) in turn.
 * Returns the number emitted.
 */
typedef int (*emit_fn)(void *ctx, int stream, size_t index);
static size_t greedy_merge(const streams *s, unsigned mask, emit_fn emit, void *ctx)
{
	size_t next[STREAMS] = { 0 }, emitted = 0;
	for (;;) {
		int best = -1;
		for (int i = 0; i < STREAMS; i++) {
			if (!(mask & (1u << i)) || next[i] == s->count[i])
				continue;
			if (best < 0 || s->times[i][next[i]] < s->times[best][next[best]])
				best = i;
		}
		if (best < 0)
			return emitted;
		if (emit(ctx, best, next[best]) != 0)
			return emitted;
		next[best]++;
		emitted++;
	}
}

/* ---- Writers ------------------------------------------------------------- */

typedef struct writer {
	const streams *s;
	weft__keyed_runs *kr;
	int run;
	unsigned mask;          /* its streams */
	int begin;              /* 0: closes its run without beginning */
	size_t fail_after;      /* > 0: stops (failed) after this many lines */
	weft__outbuf out;
	size_t lines;
	int rc;
	pthread_t thread;
} writer;

static int write_one(void *ctx, int stream, size_t index)
{
	writer *w = ctx;
	if (w->fail_after > 0 && w->lines == w->fail_after) {
		w->rc = -1;
		return 1;
	}
	size_t start = w->out.len;
	put_line(w->s, stream, index, &w->out);
	w->lines++;
	w->rc = weft__keyed_run_line(w->kr, w->run, &w->out, w->s->times[stream][index],
				     (uint32_t)stream, start);
	return w->rc != 0;
}

static void *writer_main(void *arg)
{
	writer *w = arg;
	w->out = (weft__outbuf){ .fd = WEFT__OUTBUF_GROW };
	if (!w->begin) {
		weft__keyed_run_close(w->kr, w->run);
		return NULL;
	}
	w->rc = weft__keyed_run_begin(w->kr, w->run, &w->out);
	if (w->rc == 0)
		greedy_merge(w->s, w->mask, write_one, w);
	int failed = w->rc != 0;
	int end_rc = weft__keyed_run_end(w->kr, w->run, &w->out, failed);
	if (!failed)
		w->rc = end_rc;
	weft__keyed_run_close(w->kr, w->run); /* as the part's end does: idempotent */
	CHECK(w->out.buf == NULL);
	return NULL;
}

/* ---- Cases ---------------------------------------------------------------- */

/* The expected bytes: the whole greedy merge of the streams in `mask`. */
typedef struct expected {
	const streams *s;
	weft__outbuf out;
} expected;

static int expect_one(void *ctx, int stream, size_t index)
{
	expected *e = ctx;
	put_line(e->s, stream, index, &e->out);
	return 0;
}

/* A file's bytes; malloc'd. */
static char *read_all(int fd, size_t *len)
{
	off_t size = lseek(fd, 0, SEEK_END);
	char *bytes = malloc((size_t)size + 1);
	*len = pread(fd, bytes, (size_t)size, 0) == size ? (size_t)size : 0;
	return bytes;
}

/*
 * Runs `runs` writers (writer r takes the streams of masks[r]; begins[r]:
 * whether it begins) into a file and compares it with the greedy merge
 * of the streams of `covered`.
 */
static void merge_case(const streams *s, int runs, const unsigned *masks, const int *begins,
		       unsigned covered)
{
	char path[] = "/tmp/weft-keyed-runs-XXXXXX";
	int fd = mkstemp(path);
	REQUIRE(fd >= 0);
	unlink(path);
	weft__keyed_runs *kr = weft__keyed_runs_create(runs);
	REQUIRE(kr != NULL);
	writer w[MAX_RUNS];
	for (int r = 0; r < runs; r++) {
		w[r] = (writer){ .s = s, .kr = kr, .run = r, .mask = masks[r], .begin = begins[r] };
		REQUIRE(pthread_create(&w[r].thread, NULL, writer_main, &w[r]) == 0);
	}
	weft__outbuf out;
	REQUIRE(weft__outbuf_init(&out, fd, 0) == 0);
	CHECK_EQ_I64(weft__keyed_runs_merge(kr, &out, NULL, NULL), 0);
	CHECK_EQ_I64(weft__outbuf_flush(&out), 0);
	for (int r = 0; r < runs; r++) {
		pthread_join(w[r].thread, NULL);
		CHECK_EQ_I64(w[r].rc, 0);
	}
	weft__outbuf_destroy(&out);
	weft__keyed_runs_free(kr);

	expected e = { .s = s };
	REQUIRE(weft__outbuf_init(&e.out, WEFT__OUTBUF_GROW, 0) == 0);
	greedy_merge(s, covered, expect_one, &e);
	size_t len;
	char *got = read_all(fd, &len);
	CHECK_EQ_U64(len, e.out.len);
	if (len == e.out.len)
		CHECK(memcmp(got, e.out.buf, len) == 0);
	free(got);
	weft__outbuf_destroy(&e.out);
	close(fd);
}

/* A writer fails half-way: the merge ends, with the other runs' lines. */
static void failing_writer_case(const streams *s)
{
	weft__keyed_runs *kr = weft__keyed_runs_create(2);
	REQUIRE(kr != NULL);
	writer w[2] = {
		{ .s = s, .kr = kr, .run = 0, .mask = 0x0f, .begin = 1, .fail_after = 150000 },
		{ .s = s, .kr = kr, .run = 1, .mask = 0x70, .begin = 1 },
	};
	for (int r = 0; r < 2; r++)
		REQUIRE(pthread_create(&w[r].thread, NULL, writer_main, &w[r]) == 0);
	weft__outbuf out;
	REQUIRE(weft__outbuf_init(&out, WEFT__OUTBUF_GROW, 0) == 0);
	CHECK_EQ_I64(weft__keyed_runs_merge(kr, &out, NULL, NULL), 0);
	for (int r = 0; r < 2; r++)
		pthread_join(w[r].thread, NULL);
	CHECK(w[0].rc != 0);
	CHECK_EQ_I64(w[1].rc, 0);
	/* every line of run 1, and fewer than run 0 wrote before failing */
	size_t newlines = 0;
	for (size_t i = 0; i < out.len; i++)
		newlines += out.buf[i] == '\n';
	size_t run1 = s->count[4] + s->count[5] + s->count[6];
	CHECK(newlines >= run1 && newlines < run1 + 150000);
	weft__outbuf_destroy(&out);
	weft__keyed_runs_free(kr);
}

/* The output fails: the merge says so and the writers stop (no hang). */
static void failing_output_case(const streams *s)
{
	int pipe_fds[2];
	REQUIRE(pipe(pipe_fds) == 0);
	close(pipe_fds[0]); /* writes fail with EPIPE (SIGPIPE ignored below) */
	weft__keyed_runs *kr = weft__keyed_runs_create(2);
	REQUIRE(kr != NULL);
	writer w[2] = {
		{ .s = s, .kr = kr, .run = 0, .mask = 0x0f, .begin = 1 },
		{ .s = s, .kr = kr, .run = 1, .mask = 0x70, .begin = 1 },
	};
	for (int r = 0; r < 2; r++)
		REQUIRE(pthread_create(&w[r].thread, NULL, writer_main, &w[r]) == 0);
	weft__outbuf out;
	REQUIRE(weft__outbuf_init(&out, pipe_fds[1], 0) == 0);
	CHECK(weft__keyed_runs_merge(kr, &out, NULL, NULL) == WEFT_EIO);
	for (int r = 0; r < 2; r++) {
		pthread_join(w[r].thread, NULL);
		CHECK(w[r].rc != 0);
	}
	weft__outbuf_destroy(&out);
	weft__keyed_runs_free(kr);
	close(pipe_fds[1]);
}

/*
 * A writer whose chunk was handed on when the runs were already stopped
 * (its next chunk never comes: the buffer has none) may still write the
 * rest of its event into `out`: the buffer grows on its own (no endless
 * doubling of a zero capacity) and the end of the run frees it (no leak,
 * under ASan).
 */
static void write_after_stop_case(void)
{
	weft__keyed_runs *kr = weft__keyed_runs_create(1);
	weft__outbuf out = { .fd = WEFT__OUTBUF_GROW };
	REQUIRE(kr != NULL);
	REQUIRE(weft__keyed_run_begin(kr, 0, &out) == 0);
	weft__keyed_runs_abort(kr);
	size_t start = out.len;
	char *p = weft__outbuf_reserve(&out, 1u << 20); /* a chunk: handed on */
	memset(p, 'x', 1u << 20);
	weft__outbuf_commit(&out, p + (1u << 20));
	CHECK(weft__keyed_run_line(kr, 0, &out, 1, 0, start) != 0); /* no next chunk */
	CHECK(out.cap == 0);
	p = weft__outbuf_reserve(&out, 100); /* the rest of the event */
	CHECK(out.error == 0 && out.cap >= 100);
	memset(p, 'y', 100);
	weft__outbuf_commit(&out, p + 100);
	weft__keyed_run_end(kr, 0, &out, 1);
	CHECK(out.buf == NULL);
	weft__keyed_runs_free(kr);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	streams s;
	make_streams(&s, 200000, 7);
	const int all_begin[MAX_RUNS] = { 1, 1, 1, 1 };
	/* two runs, the streams interleaved between them */
	merge_case(&s, 2, (const unsigned[]){ 0x55, 0x2a }, all_begin, 0x7f);
	/* four runs, one of them without streams (it begins and ends empty) */
	merge_case(&s, 4, (const unsigned[]){ 0x03, 0x0c, 0x70, 0x00 }, all_begin, 0x7f);
	/* one run that never began: the others' lines, and no hang */
	merge_case(&s, 3, (const unsigned[]){ 0x11, 0x22, 0x4c },
		   (const int[]){ 1, 1, 0 }, 0x33);
	/* one run alone: its merge as it is */
	merge_case(&s, 1, (const unsigned[]){ 0x7f }, all_begin, 0x7f);
	failing_writer_case(&s);
	failing_output_case(&s);
	write_after_stop_case();
	for (int i = 0; i < STREAMS; i++)
		free(s.times[i]);
	return tu_result();
}
