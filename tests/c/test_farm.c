/* SPDX-License-Identifier: MIT */
/*
 * test_farm.c - weft__farm_run() (outputs/pipeline.h): the texts of the
 * batches come out in batch order whatever thread formats which batch
 * and however long each takes (delays shuffle the completions); a failed
 * batch stops the run before it, and when two batches fail the earlier
 * one's error is the run's even when the later one fails first; an emit
 * that stops the run is called no more.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/internal.h"
#include "outputs/pipeline.h"
#include "testutil.h"
#include "weft/weft.h"

/* The trace: 4 streams of EVENTS events each (Heph), about 20 batches. */
#define STREAMS 4
#define EVENTS 5000
static char trace_path[4096];

/* Writes the trace into `dir`. */
static void make_trace(const char *dir)
{
	weft_heph_writer_options o = { .epoch = 1, .has_epoch = 1 };
	weft_heph_writer *w;
	snprintf(trace_path, sizeof trace_path, "%s/farm.bin.log", dir);
	REQUIRE(weft_heph_writer_create(trace_path, &o, &w) == 0);
	for (uint32_t s = 0; s < STREAMS; s++) {
		weft_heph_stream *hs;
		REQUIRE(weft_heph_stream_create(w, s, &hs) == 0);
		for (uint64_t i = 0; i < EVENTS; i++) /* streams interleave in time */
			REQUIRE(weft_heph_emit(hs, 0, i * 10 + s * 3, i * 10 + s * 3 + 2,
					       "work") == 0);
	}
	REQUIRE(weft_heph_writer_close(w) == 0);
	weft_heph_writer_free(w);
}

/* An event's identity in the serial order. */
typedef struct event_id {
	uint32_t stream;
	uint64_t offset;
} event_id;

typedef struct farm_test {
	const event_id *ids;   /* the serial order of the events */
	size_t fail_a, fail_b; /* events whose batch fails (SIZE_MAX: none) */
	size_t slow;           /* the event whose batch sleeps longest */
	int stop_after;        /* emits before emit asks to stop (0: never) */
	int emits;
	char *out;             /* what was emitted */
	size_t len, cap;
} farm_test;

static int same_event(const weft_event *ev, const event_id *id)
{
	return ev->stream == id->stream && ev->offset == id->offset;
}

/* One line per event; the batch sleeps a little, fails when told to. */
static int format(void *ctx, int worker, const weft_event *events, size_t count,
		  weft__farm_text *text)
{
	farm_test *ft = ctx;
	(void)worker;
	useconds_t nap = (useconds_t)(events[0].offset * 2654435761u % 997);
	for (size_t i = 0; i < count; i++) {
		if (ft->slow != SIZE_MAX && same_event(&events[i], &ft->ids[ft->slow]))
			nap = 30000;
		for (int k = 0; k < 2; k++) {
			size_t at = k ? ft->fail_b : ft->fail_a;
			if (at != SIZE_MAX && same_event(&events[i], &ft->ids[at])) {
				usleep(nap);
				return weft__error(WEFT_EFORMAT, NULL, WEFT_NO_OFFSET,
						   "injected failure at event %zu", at);
			}
		}
		if (text->cap - text->len < 64) {
			text->cap = text->cap * 2 + 64;
			text->buf = realloc(text->buf, text->cap);
			REQUIRE(text->buf != NULL);
		}
		text->len += (size_t)snprintf(text->buf + text->len, 64, "%u %llu %llu\n",
					      events[i].stream,
					      (unsigned long long)events[i].offset,
					      (unsigned long long)events[i].time);
	}
	usleep(nap);
	return 0;
}

static int emit(void *ctx, const char *text, size_t len)
{
	farm_test *ft = ctx;
	if (ft->len + len + 1 > ft->cap) {
		ft->cap = (ft->len + len + 1) * 2;
		ft->out = realloc(ft->out, ft->cap);
		REQUIRE(ft->out != NULL);
	}
	memcpy(ft->out + ft->len, text, len);
	ft->len += len;
	ft->out[ft->len] = '\0';
	ft->emits++;
	return ft->stop_after > 0 && ft->emits >= ft->stop_after;
}

/* The farm over the whole trace with `threads`; its return value. */
static int run(farm_test *ft, int threads)
{
	weft_trace *t;
	weft_cursor *c;
	REQUIRE(weft_trace_open(trace_path, NULL, &t) == 0);
	REQUIRE(weft_cursor_create(t, NULL, &c) == 0);
	ft->len = 0;
	ft->emits = 0;
	if (ft->out != NULL)
		ft->out[0] = '\0';
	weft__farm farm = { format, emit, ft };
	int rc = weft__farm_run(c, &farm, threads);
	weft_cursor_free(c);
	weft_trace_free(t);
	return rc;
}

/* The lines of the serial order, and the events' identities. */
static char *serial_text(event_id **ids, size_t *count)
{
	weft_trace *t;
	weft_cursor *c;
	const weft_event *ev;
	size_t cap = 1 << 20, len = 0, n = 0, id_cap = 1024;
	char *text = malloc(cap);
	*ids = malloc(id_cap * sizeof **ids);
	REQUIRE(text != NULL && *ids != NULL);
	REQUIRE(weft_trace_open(trace_path, NULL, &t) == 0);
	REQUIRE(weft_cursor_create(t, NULL, &c) == 0);
	while (weft_cursor_next(c, &ev) == 1) {
		if (cap - len < 64)
			REQUIRE((text = realloc(text, cap *= 2)) != NULL);
		if (n == id_cap)
			REQUIRE((*ids = realloc(*ids, (id_cap *= 2) * sizeof **ids)) != NULL);
		(*ids)[n++] = (event_id){ ev->stream, ev->offset };
		len += (size_t)snprintf(text + len, 64, "%u %llu %llu\n", ev->stream,
					(unsigned long long)ev->offset,
					(unsigned long long)ev->time);
	}
	weft_cursor_free(c);
	weft_trace_free(t);
	*count = n;
	return text;
}

static size_t lines_of(const char *s, size_t len)
{
	size_t n = 0;
	for (size_t i = 0; i < len; i++)
		n += s[i] == '\n';
	return n;
}

int main(void)
{
	char *dir = tu_mkdtemp("farm");
	REQUIRE(dir != NULL);
	make_trace(dir);
	event_id *ids;
	size_t n;
	char *serial = serial_text(&ids, &n);
	REQUIRE(n >= 8 * 1024); /* enough batches to shuffle */
	farm_test ft = { .ids = ids, .fail_a = SIZE_MAX, .fail_b = SIZE_MAX, .slow = SIZE_MAX };

	/* Every thread count gives the serial text. */
	for (int threads = 1; threads <= 5; threads++) {
		ft.slow = threads > 1 ? n / 4 : SIZE_MAX;
		CHECK(run(&ft, threads) == 0);
		REQUIRE(ft.out != NULL);
		CHECK_EQ_STR(ft.out, serial);
	}

	/* Two failures: the earlier batch's wins, though it fails last
	 * (it sleeps); only whole batches before it are written. */
	ft.fail_a = n / 3;
	ft.fail_b = 2 * n / 3;
	ft.slow = ft.fail_a;
	for (int threads = 1; threads <= 4; threads++) {
		CHECK(run(&ft, threads) == WEFT_EFORMAT);
		char want[64];
		snprintf(want, sizeof want, "injected failure at event %zu", ft.fail_a);
		CHECK(strstr(weft_last_error(), want) != NULL);
		CHECK(ft.len < strlen(serial) && memcmp(ft.out, serial, ft.len) == 0);
		CHECK(ft.len == 0 || ft.out[ft.len - 1] == '\n');
		CHECK(lines_of(ft.out, ft.len) <= ft.fail_a);
		CHECK(lines_of(ft.out, ft.len) + 1024 > ft.fail_a); /* every batch before its batch */
	}

	/* An emit that stops the run is the last. */
	ft.fail_a = ft.fail_b = ft.slow = SIZE_MAX;
	ft.stop_after = 3;
	for (int threads = 1; threads <= 4; threads++) {
		CHECK(run(&ft, threads) == 1);
		CHECK(ft.emits == 3);
		CHECK(memcmp(ft.out, serial, ft.len) == 0);
	}
	free(ft.out);
	free(serial);
	free(ids);
	return tu_finish_dir(dir);
}
