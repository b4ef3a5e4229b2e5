/* SPDX-License-Identifier: MIT */
/*
 * test_libovni_flush - where the OF[ / OF] pairs of flushes land, as in
 * libovni 1.14, so that traces of ovni's own tests get the same ovniemu
 * verdict with either library:
 *
 *   last flush   the pair of an ovni_flush() with nothing after it is not
 *                written (libovni loses it; ovni's sort-into-previous-region
 *                test expects the trace to end with the last event);
 *   ahead        a program that stamps events ahead of ovni_clock_now()
 *                (ovni's clockgate test: +2 h) never gets a pair whose
 *                clock goes back;
 *   full buffer  an event that would fill the buffer exactly flushes it
 *                first (libovni: used + size >= capacity), the pair after
 *                it: the flush events land where libovni puts them (ovni's
 *                sort-flush test depends on it).
 */
#include <pthread.h>

#include "test_libovni_common.h"

#define LOOM "testhost.flush"
#define HOUR (3600ull * 1000000000ull)

/* The events of the calling thread's stream, as raw bytes read back. */
typedef struct seen {
	got_ev ev[600];
	size_t n;
	raw_stream raw;
} seen;

/* Reads every event of the stream of thread tid of this process. */
static void
read_back(seen *s, const char *dir, pid_t tid)
{
	char sdir[4096];
	stream_dir(sdir, sizeof(sdir), dir, LOOM, getpid(), tid);
	memset(s, 0, sizeof(*s));
	REQUIRE(raw_open(&s->raw, sdir) == 0);
	while (s->n < sizeof(s->ev) / sizeof(s->ev[0]) && raw_next(&s->raw, &s->ev[s->n]))
		s->n++;
	CHECK(!s->raw.truncated);
}

static int
mcv_is(const got_ev *g, const char *mcv)
{
	return memcmp(g->mcv, mcv, 3) == 0;
}

/* Emits a 12-byte event at `clock`. */
static void
emit_at(const char *mcv, uint64_t clock)
{
	struct ovni_ev ev = { 0 };
	ovni_ev_set_mcv(&ev, mcv);
	ovni_ev_set_clock(&ev, clock);
	ovni_ev_emit(&ev);
}

/* Each case in its own thread (its own stream); returns its tid. */
typedef struct thread_case {
	void (*body)(void);
	pid_t tid;
} thread_case;

static void *
case_main(void *arg)
{
	thread_case *c = arg;
	c->tid = test_gettid();
	ovni_thread_init(c->tid);
	c->body();
	ovni_thread_free();
	return NULL;
}

static pid_t
run_in_thread(void (*body)(void))
{
	thread_case c = { body, 0 };
	pthread_t th;
	REQUIRE(pthread_create(&th, NULL, case_main, &c) == 0);
	pthread_join(th, NULL);
	return c.tid;
}

/* Synthetic clocks, a last flush: the stream ends with the last event. */
static void
body_last_flush(void)
{
	emit_at("OHx", 1);
	emit_at("OB.", 100);
	emit_at("OHe", 200);
	ovni_flush();
}

/* ovni's clockgate: one event 2 h ahead, flush, close. */
static void
body_ahead_alone(void)
{
	emit_at("OHx", ovni_clock_now() + 2 * HOUR);
	ovni_flush();
}

/* The same with events after the flush: the pair is written, clamped. */
static void
body_ahead_more(void)
{
	emit_at("OHx", ovni_clock_now() + 2 * HOUR);
	ovni_flush();
	ovni_flush();
	emit_at("OHe", ovni_clock_now() + 2 * HOUR);
}

/* 16-byte events into the 4096-byte buffer (WEFT_OVNI_BUFSIZE): the
 * 256th would fill it exactly, so it flushes the 255 before it. */
static void
body_full_buffer(void)
{
	for (uint32_t i = 0; i < 300; i++) {
		struct ovni_ev ev = { 0 };
		ovni_ev_set_mcv(&ev, "TBf");
		ovni_ev_set_clock(&ev, ovni_clock_now());
		ovni_payload_add(&ev, (const uint8_t *) &i, 4);
		ovni_ev_emit(&ev);
	}
	emit_at("OHe", ovni_clock_now());
}

/* The u32 payload of a TBf event, or -1. */
static long
tbf_index(const got_ev *g)
{
	uint32_t i;
	if (!mcv_is(g, "TBf") || g->psize != 4)
		return -1;
	memcpy(&i, g->payload, 4);
	return i;
}

/* Clocks of the stream never go back. */
static void
check_monotonic(const seen *s)
{
	for (size_t i = 1; i < s->n; i++)
		if (s->ev[i].clock < s->ev[i - 1].clock)
			tu_fail(__FILE__, __LINE__, "event %zu (%.3s): clock %llu after %llu", i,
				s->ev[i].mcv, (unsigned long long) s->ev[i].clock,
				(unsigned long long) s->ev[i - 1].clock);
}

int
main(void)
{
	char *dir = fresh_tracedir("libovni_flush");
	seen s;

	setenv("WEFT_OVNI_BUFSIZE", "4096", 1);
	ovni_proc_init(1, LOOM, getpid());
	ovni_thread_init(test_gettid());
	ovni_add_cpu(0, 0);

	pid_t last = run_in_thread(body_last_flush);
	pid_t alone = run_in_thread(body_ahead_alone);
	pid_t more = run_in_thread(body_ahead_more);
	pid_t full = run_in_thread(body_full_buffer);
	ovni_thread_free();
	ovni_proc_fini();

	read_back(&s, dir, last);
	CHECK_EQ_U64(s.n, 3);
	CHECK(s.n == 3 && mcv_is(&s.ev[2], "OHe") && s.ev[2].clock == 200);
	raw_close(&s.raw);

	read_back(&s, dir, alone);
	CHECK_EQ_U64(s.n, 1);
	raw_close(&s.raw);

	/* OHx, OF[ OF] of the first flush (written by the second), OF[ OF] of
	 * the second (written at close: OHe follows), OHe. */
	read_back(&s, dir, more);
	CHECK_EQ_U64(s.n, 6);
	if (s.n == 6) {
		CHECK(mcv_is(&s.ev[1], "OF[") && mcv_is(&s.ev[2], "OF]"));
		CHECK(mcv_is(&s.ev[3], "OF[") && mcv_is(&s.ev[4], "OF]"));
		CHECK(s.ev[1].clock == s.ev[0].clock); /* raised to the OHx clock */
	}
	check_monotonic(&s);
	raw_close(&s.raw);

	read_back(&s, dir, full);
	CHECK(s.n > 258);
	if (s.n > 258) {
		CHECK_EQ_I64(tbf_index(&s.ev[255]), 255);
		CHECK(mcv_is(&s.ev[256], "OF[") && mcv_is(&s.ev[257], "OF]"));
		CHECK_EQ_I64(tbf_index(&s.ev[258]), 256);
	}
	raw_close(&s.raw);

	/* weft reads them all without a problem (no clock going back). */
	weft_trace *t = weft_open_checked(dir);
	weft_cursor *c;
	const weft_event *ev;
	REQUIRE(weft_cursor_create(t, NULL, &c) == 0);
	while (weft_cursor_next(c, &ev) == 1)
		;
	weft_cursor_free(c);
	for (size_t i = 0; i < weft_trace_diag_count(t); i++)
		tu_fail(__FILE__, __LINE__, "%s", weft_trace_diag(t, i)->message);
	weft_trace_free(t);
	return tu_finish_dir(dir);
}
