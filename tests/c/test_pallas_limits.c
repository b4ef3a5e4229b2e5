/* SPDX-License-Identifier: MIT */
/*
 * test_pallas_limits.c - what weft's Pallas writer does so that Pallas
 * 0.20's own reader can read every trace it writes (issue 13 item 6),
 * read back with weft's reader and the grammar API:
 *
 *   nesting  98 blocks open at once are recorded; a 99th block start is
 *            refused (WEFT_EUNSUPPORTED, with and without attributes) and
 *            the thread writer goes on; Pallas 0.20's reader overflows its
 *            call stack beyond 99 nested sequences and loops
 *   frames   repetitions at every depth down to the deepest: the loops
 *            that would nest the grammar deeper than the reader's frames
 *            are left unrolled, every event comes back
 *   root     a thread whose depth-0 events are not one block or loop gets
 *            a root of one sequence (Pallas's reader aborts on a root that
 *            starts with an event, and its merged reader stops a thread at
 *            the end of the root's first token)
 *
 * Frames are counted as Pallas's ThreadReader takes them: the root in
 * frame 0, each sequence or loop entered one deeper; the deepest frame
 * must be 99 or less (its call stack holds 100).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "weft/pallas.h"
#include "weft/pallas_grammar.h"
#include "weft/weft.h"

#define READER_FRAMES 100 /* Pallas 0.20's MAX_CALLSTACK_DEPTH */

static char *scratch;

/* What was recorded, to compare with what is read back. */
typedef struct recorded {
	uint64_t time[4096];
	const char *code[4096];
	int32_t depth[4096];
	size_t n;
} recorded;

/* A trace of one thread (archive 0, thread 0) with regions 1..3. */
typedef struct one {
	char dir[1024];
	weft_pallas_global *g;
	weft_pallas_archive *a;
	weft_pallas_thread *t;
	recorded r;
	uint64_t ts;
	int32_t depth;
} one;

static void one_begin(one *o, const char *name)
{
	memset(o, 0, sizeof *o);
	snprintf(o->dir, sizeof o->dir, "%s/%s", scratch, name);
	REQUIRE(weft_pallas_global_create(o->dir, "main", NULL, &o->g) == 0);
	weft_pallas_defs *d = weft_pallas_global_defs(o->g);
	const char *names[] = { "P", "f", "g", "h", "T", "tick", "tock" };
	for (uint32_t i = 0; i < 7; i++)
		CHECK_EQ_I64(weft_pallas_add_string(d, i, names[i]), 0);
	for (uint32_t r = 1; r <= 3; r++)
		CHECK_EQ_I64(weft_pallas_add_region(d, r, r), 0);
	CHECK_EQ_I64(weft_pallas_add_location_group(d, 0, 0, WEFT_PALLAS_NO_PARENT), 0);
	REQUIRE(weft_pallas_archive_create(o->g, 0, &o->a) == 0);
	CHECK_EQ_I64(weft_pallas_add_location(weft_pallas_archive_defs(o->a), 0, 4, 0), 0);
	REQUIRE(weft_pallas_thread_create(o->a, 0, &o->t) == 0);
	o->ts = 1;
}

static void note(one *o, const char *code, int32_t depth)
{
	REQUIRE(o->r.n < 4096);
	o->r.time[o->r.n] = o->ts++;
	o->r.code[o->r.n] = code;
	o->r.depth[o->r.n++] = depth;
}

static void enter(one *o, uint32_t region)
{
	CHECK_EQ_I64(weft_pallas_record_enter(o->t, NULL, o->ts, region), 0);
	note(o, "Enter", o->depth++);
}

static void leave(one *o, uint32_t region)
{
	CHECK_EQ_I64(weft_pallas_record_leave(o->t, NULL, o->ts, region), 0);
	note(o, "Leave", --o->depth);
}

static void tick(one *o, uint32_t name)
{
	CHECK_EQ_I64(weft_pallas_record_generic(o->t, NULL, o->ts, name), 0);
	note(o, "Generic", o->depth);
}

/* Closes the thread and writes the trace. */
static void one_end(one *o)
{
	CHECK_EQ_I64(weft_pallas_thread_close(o->t), 0);
	CHECK_EQ_I64(weft_pallas_archive_store(o->a), 0);
	CHECK_EQ_I64(weft_pallas_global_store(o->g), 0);
	weft_pallas_global_free(o->g);
}

/* The frames a token takes in Pallas's reader (0 for an event). */
static uint32_t height(const weft_pallas_grammar *g, weft_pallas_token tok)
{
	if (tok.kind == WEFT_PALLAS_TOKEN_KIND_LOOP) {
		weft_pallas_loop_info l;
		REQUIRE(weft_pallas_grammar_loop(g, tok.index, &l) == 0);
		return 1 + height(g, l.repeated);
	}
	if (tok.kind != WEFT_PALLAS_TOKEN_KIND_SEQUENCE)
		return 0;
	weft_pallas_sequence_info s;
	uint32_t h = 0;
	REQUIRE(weft_pallas_grammar_sequence((weft_pallas_grammar *)g, tok.index, &s) == 0);
	for (uint64_t k = 0; k < s.token_count; k++) {
		weft_pallas_token child;
		REQUIRE(weft_pallas_grammar_token(g, tok.index, k, &child) == 0);
		uint32_t c = height(g, child);
		h = c > h ? c : h;
	}
	return 1 + h;
}

/*
 * Reads the trace back: every event as recorded (code, time, depth), and
 * the shape Pallas's reader needs: a root of one sequence or loop, the
 * deepest frame within its call stack. Returns the deepest frame.
 */
static uint32_t check_back(const one *o)
{
	weft_trace *tr;
	REQUIRE(weft_trace_open(o->dir, NULL, &tr) == 0);
	weft_cursor *c;
	REQUIRE(weft_cursor_create(tr, NULL, &c) == 0);
	const weft_event *ev;
	size_t k = 0;
	while (weft_cursor_next(c, &ev) == 1 && k < o->r.n) {
		CHECK_EQ_U64(ev->time, o->r.time[k]);
		CHECK_EQ_I64(ev->depth, o->r.depth[k]);
		CHECK(ev->code_len == strlen(o->r.code[k]) &&
		      memcmp(ev->code, o->r.code[k], ev->code_len) == 0);
		k++;
	}
	CHECK_EQ_U64(k, o->r.n);
	weft_cursor_free(c);
	weft_pallas_grammar *g;
	REQUIRE(weft_pallas_grammar_open(tr, 0, &g) == 0);
	weft_pallas_sequence_info root;
	REQUIRE(weft_pallas_grammar_sequence(g, weft_pallas_grammar_root(g), &root) == 0);
	CHECK_EQ_U64(root.token_count, 1);
	weft_pallas_token first;
	REQUIRE(weft_pallas_grammar_token(g, weft_pallas_grammar_root(g), 0, &first) == 0);
	CHECK(first.kind == WEFT_PALLAS_TOKEN_KIND_SEQUENCE ||
	      first.kind == WEFT_PALLAS_TOKEN_KIND_LOOP);
	uint32_t frames = height(g, first);
	CHECK(frames < READER_FRAMES);
	weft_pallas_grammar_free(g);
	weft_trace_free(tr);
	return frames;
}

/* ---- nesting ----------------------------------------------------------------------------- */

static void test_nesting(void)
{
	one o;
	one_begin(&o, "nesting");
	for (int i = 0; i < WEFT_PALLAS_MAX_NESTING; i++)
		enter(&o, 1 + (uint32_t)i % 3);
	/* The 99th: refused, through both paths (attributes take the general one). */
	CHECK_EQ_I64(weft_pallas_record_enter(o.t, NULL, o.ts, 1), WEFT_EUNSUPPORTED);
	CHECK(strstr(weft_last_error(), "at most 98 nested blocks") != NULL);
	weft_pallas_attrs a;
	weft_pallas_attrs_init(&a);
	CHECK_EQ_I64(weft_pallas_attrs_add_u32(&a, 0, 7), 0);
	CHECK_EQ_I64(weft_pallas_record_enter(o.t, &a, o.ts, 1), WEFT_EUNSUPPORTED);
	CHECK_EQ_I64(weft_pallas_record_raw(o.t, NULL, o.ts, 35, WEFT_PALLAS_ROLE_BLOCK_START,
					    NULL, 0), WEFT_EUNSUPPORTED);
	tick(&o, 5); /* the thread writer goes on */
	for (int i = WEFT_PALLAS_MAX_NESTING; i-- > 0;)
		leave(&o, 1 + (uint32_t)i % 3);
	one_end(&o);
	CHECK_EQ_U64(check_back(&o), WEFT_PALLAS_MAX_NESTING); /* one block in the root */
}

/* ---- frames ------------------------------------------------------------------------------ */

/*
 * 97 blocks open, then at every depth on the way back five calls of a
 * leaf and five ticks: loops wherever they fit, none below.
 */
static void test_frames(void)
{
	one o;
	one_begin(&o, "frames");
	for (int i = 0; i < WEFT_PALLAS_MAX_NESTING - 1; i++)
		enter(&o, 1);
	for (int i = WEFT_PALLAS_MAX_NESTING - 1; i-- > 0;) {
		for (int k = 0; k < 5; k++) {
			enter(&o, 2), leave(&o, 2);
			tick(&o, 5), tick(&o, 6);
		}
		leave(&o, 1);
	}
	for (int k = 0; k < 5; k++)
		enter(&o, 3), leave(&o, 3);
	one_end(&o);
	/* The root's sequence and 98 more: the reader's last frame. */
	CHECK_EQ_U64(check_back(&o), WEFT_PALLAS_MAX_NESTING + 1);
}

/* ---- root -------------------------------------------------------------------------------- */

static void test_root(void)
{
	one o;
	one_begin(&o, "root_events"); /* an event first: Pallas's reader aborted */
	tick(&o, 5), tick(&o, 6), enter(&o, 1), leave(&o, 1);
	one_end(&o);
	check_back(&o);
	one_begin(&o, "root_blocks"); /* blocks of different regions */
	enter(&o, 1), leave(&o, 1), enter(&o, 2), leave(&o, 2);
	one_end(&o);
	check_back(&o);
	one_begin(&o, "root_loop"); /* one loop: the root holds it, as Pallas's does */
	for (int k = 0; k < 5; k++)
		enter(&o, 1), leave(&o, 1);
	one_end(&o);
	check_back(&o);
}

int main(void)
{
	scratch = tu_mkdtemp("pallas-limits");
	REQUIRE(scratch != NULL);
	test_nesting();
	test_frames();
	test_root();
	return tu_finish_dir(scratch);
}
