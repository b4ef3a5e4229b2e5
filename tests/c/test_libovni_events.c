/* SPDX-License-Identifier: MIT */
/*
 * test_libovni_events - every event shape emitted through <ovni.h> comes
 * back identical, field by field, from the bytes on disk and from the
 * weft reading API: no payload, each payload size 2..16 (added whole and
 * in pieces), jumbo events from 0 bytes to larger than the buffer (and
 * larger than libovni's 2 MiB limit), marks, explicit flushes (their
 * OF[ / OF] pair must be there, including the last one), automatic
 * flushes, and several threads emitting at the same time.
 */
#include <pthread.h>
#include <stddef.h>

#include "test_libovni_common.h"

/* The event layout is ABI: programs build struct ovni_ev on the stack. */
_Static_assert(sizeof(struct ovni_ev_header) == 12, "12-byte packed header");
_Static_assert(sizeof(union ovni_ev_payload) == 16, "16-byte payload");
_Static_assert(sizeof(struct ovni_ev) == 28, "28-byte event");
_Static_assert(offsetof(struct ovni_ev_header, clock) == 4, "clock at byte 4");
_Static_assert(offsetof(struct ovni_ev, payload) == 12, "payload at byte 12");
_Static_assert(offsetof(struct ovni_jumbo_payload, data) == 4, "jumbo data after size");
_Static_assert(sizeof(struct ovni_stream_header) == 8, "8-byte stream header");
_Static_assert(OVNI_MARK_STACK == 1 && OVNI_EV_JUMBO == 0x10, "libovni constants");

#define LOOM "testhost.events"
#define BUFSIZE_ENV "65536" /* small buffer: flushes and oversized jumbos */

static uint8_t pattern[16 << 20];

/* Distinct bytes for every size and position. */
static void
fill_pattern(void)
{
	uint32_t x = 2463534242u;
	for (size_t i = 0; i < sizeof(pattern); i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		pattern[i] = (uint8_t) x;
	}
}

/* MCV for a test event with a payload of size n: "Tp" + letter. */
static void
sized_mcv(char *mcv, int n)
{
	mcv[0] = 'T';
	mcv[1] = 'p';
	mcv[2] = (char) ('a' + n);
	mcv[3] = '\0';
}

/* The main thread: every shape, real clocks. */
static void
emit_all_shapes(exp_list *l)
{
	char mcv[4];

	emit_normal(l, "OB.", ovni_clock_now(), NULL, 0, 16);
	for (int n = 2; n <= 16; n++) {
		sized_mcv(mcv, n);
		emit_normal(l, mcv, ovni_clock_now(), pattern + 31 * n, n, 16);
		emit_normal(l, mcv, ovni_clock_now(), pattern + 17 * n, n, 2);
		emit_normal(l, mcv, ovni_clock_now(), pattern + 11 * n, n, 3);
	}
	/* A real payload layout: OHx {i32 cpu, i32 tid, u64 tag}. */
	uint8_t ohx[16];
	int32_t cpu = 3, tid = -1;
	uint64_t tag = 0x1122334455667788ull;
	memcpy(ohx, &cpu, 4);
	memcpy(ohx + 4, &tid, 4);
	memcpy(ohx + 8, &tag, 8);
	emit_normal(l, "OHx", ovni_clock_now(), ohx, 16, 16);

	static const uint32_t jsizes[] = { 0, 1, 2, 7, 100, 4096, 65536 - 16,
					   65536, 200000, 3u << 20 };
	for (size_t i = 0; i < sizeof(jsizes) / sizeof(jsizes[0]); i++)
		emit_jumbo(l, "TJa", ovni_clock_now(), pattern + i, jsizes[i]);

	uint8_t vyc[32];
	uint32_t typeid = 42;
	memcpy(vyc, &typeid, 4);
	memcpy(vyc + 4, "testtype42", 11);
	emit_jumbo(l, "VYc", ovni_clock_now(), vyc, 15);
}

/* Marks, with their records. */
static void
emit_marks(exp_list *l)
{
	ovni_mark_type(3, OVNI_MARK_STACK, "Test stack");
	ovni_mark_label(3, 1, "one");
	ovni_mark_type(4, 0, "Test single");
	ovni_mark_push(3, 1);
	record_mark(l, '[', 3, 1);
	ovni_mark_push(3, -5);
	record_mark(l, '[', 3, -5);
	ovni_mark_pop(3, -5);
	record_mark(l, ']', 3, -5);
	ovni_mark_pop(3, 1);
	record_mark(l, ']', 3, 1);
	ovni_mark_set(4, INT64_MAX);
	record_mark(l, '=', 4, INT64_MAX);
}

/* Enough 28-byte events to fill the buffer several times. */
static void
emit_many(exp_list *l, int count, int seed)
{
	for (int i = 0; i < count; i++) {
		uint8_t p[16];
		memcpy(p, &i, 4);
		memcpy(p + 4, &seed, 4);
		memcpy(p + 8, pattern + (i & 1023), 8);
		emit_normal(l, "OHx", ovni_clock_now(), p, 16, 16);
		if (i % 3 == 0)
			emit_normal(l, "OB.", ovni_clock_now(), NULL, 0, 16);
	}
}

/* A thread's work: what it emitted, and where its stream is. */
typedef struct job {
	int kind;
	pid_t tid;
	exp_list l;
} job;

/* Thread with synthetic clocks: arbitrary values survive exactly. */
static void
emit_synthetic(exp_list *l)
{
	char mcv[4];
	uint64_t clock = 1000;
	emit_normal(l, "OB.", clock++, NULL, 0, 16);
	for (int n = 2; n <= 16; n++) {
		sized_mcv(mcv, n);
		emit_normal(l, mcv, clock, pattern + 5 * n, n, 4);
		clock += 1000;
	}
	emit_jumbo(l, "TJb", clock, pattern + 99, 777);
}

/* Kind 1: synthetic clocks; others: many events, several buffers. */
static void *
job_main(void *arg)
{
	job *j = arg;
	j->tid = test_gettid();
	ovni_thread_init(j->tid);
	CHECK(ovni_thread_isready());
	if (j->kind == 1) {
		emit_synthetic(&j->l);
		do_flush(&j->l);
	} else {
		emit_many(&j->l, 20000, j->kind);
		do_flush(&j->l);
		emit_normal(&j->l, "OHe", ovni_clock_now(), NULL, 0, 16);
	}
	ovni_thread_free();
	CHECK(!ovni_thread_isready());
	return NULL;
}

/* Field decoding through weft for a mark and a jumbo event. */
static void
check_fields(weft_trace *t, int stream)
{
	weft_cursor *c;
	const weft_event *ev;
	int seen_mark = 0, seen_vyc = 0;

	REQUIRE(weft_cursor_create_stream(t, (uint32_t) stream, &c) == 0);
	while (weft_cursor_next(c, &ev) > 0) {
		weft_field f;
		if (memcmp(ev->code, "OM=", 3) == 0) {
			seen_mark = 1;
			CHECK(find_field(t, ev, "value", &f) && f.v.i == INT64_MAX);
			CHECK(find_field(t, ev, "type", &f) && f.v.i == 4);
		} else if (memcmp(ev->code, "VYc", 3) == 0) {
			seen_vyc = 1;
			CHECK(find_field(t, ev, "typeid", &f) && f.v.u == 42);
			CHECK(find_field(t, ev, "label", &f) && f.v.s.len == 10
			      && memcmp(f.v.s.ptr, "testtype42", 10) == 0);
		}
	}
	weft_cursor_free(c);
	CHECK(seen_mark && seen_vyc);
}

/* All streams merged by time: every event once, in time order. */
static void
check_merged(weft_trace *t, size_t want_events)
{
	weft_cursor *c;
	const weft_event *ev;
	size_t n = 0;
	uint64_t last = 0;
	int sorted = 1;

	REQUIRE(weft_cursor_create(t, NULL, &c) == 0);
	while (weft_cursor_next(c, &ev) > 0) {
		if (ev->time < last)
			sorted = 0;
		last = ev->time;
		n++;
	}
	weft_cursor_free(c);
	CHECK(sorted);
	CHECK_EQ_U64(n, want_events);
}

/* Events one stream holds: user events plus both events of each pair. */
static size_t
stream_events(const cmp_stats *s)
{
	return s->matched + 2 * (s->explicit_flush + s->auto_flush);
}

/* Emits everything, then checks each stream on disk and through weft. */
int
main(void)
{
	char *dir = fresh_tracedir("libovni_events");
	char path[4096], rel[512];
	exp_list main_l = { 0 };
	job jobs[3] = { { .kind = 1 }, { .kind = 2 }, { .kind = 3 } };
	pthread_t th[3];

	fill_pattern();
	setenv("WEFT_OVNI_BUFSIZE", BUFSIZE_ENV, 1);
	ovni_version_check();
	ovni_proc_init(1, LOOM, getpid());
	CHECK(!ovni_thread_isready());
	ovni_thread_init(test_gettid());
	ovni_thread_require("nosv", "2.7.0");

	emit_all_shapes(&main_l);
	do_flush(&main_l);
	emit_marks(&main_l);
	for (int i = 0; i < 3; i++)
		REQUIRE(pthread_create(&th[i], NULL, job_main, &jobs[i]) == 0);
	emit_many(&main_l, 5000, 0);
	for (int i = 0; i < 3; i++)
		pthread_join(th[i], NULL);
	do_flush(&main_l); /* nothing after it: its OF pair is left out */
	ovni_thread_free();
	ovni_proc_fini();

	/* The bytes on disk. */
	cmp_stats raw_main, weft_st[4];
	stream_dir(path, sizeof(path), dir, LOOM, getpid(), test_gettid());
	raw_main = check_stream_raw(&main_l, path, 0);
	CHECK_EQ_U64(raw_main.explicit_flush, 1);
	CHECK(raw_main.auto_flush >= 3);
	for (int i = 0; i < 3; i++) {
		stream_dir(path, sizeof(path), dir, LOOM, getpid(), jobs[i].tid);
		cmp_stats s = check_stream_raw(&jobs[i].l, path, 0);
		CHECK_EQ_U64(s.explicit_flush, jobs[i].kind == 1 ? 0 : 1);
		CHECK(jobs[i].kind == 1 || s.auto_flush >= 5);
	}

	/* The same through weft. */
	weft_trace *t = weft_open_checked(dir);
	CHECK_EQ_U64(weft_trace_stream_count(t), 4);
	stream_rel(rel, sizeof(rel), LOOM, getpid(), test_gettid());
	int main_idx = check_stream_weft(t, &main_l, rel, 1, 0, &weft_st[0]);
	CHECK_EQ_U64(weft_st[0].matched, raw_main.matched);
	CHECK_EQ_U64(weft_st[0].explicit_flush, 1);
	size_t total = stream_events(&weft_st[0]);
	for (int i = 0; i < 3; i++) {
		stream_rel(rel, sizeof(rel), LOOM, getpid(), jobs[i].tid);
		check_stream_weft(t, &jobs[i].l, rel, 1, 0, &weft_st[i + 1]);
		total += stream_events(&weft_st[i + 1]);
	}
	if (main_idx >= 0)
		check_fields(t, main_idx);
	check_merged(t, total);
	weft_trace_free(t);

	exp_free(&main_l);
	for (int i = 0; i < 3; i++)
		exp_free(&jobs[i].l);
	return tu_finish_dir(dir);
}
