/* SPDX-License-Identifier: MIT */
/*
 * test_emu_nosv.c - what the nOS-V model gives the outputs beyond the
 * Paraver records (src/emu/model_nosv.c), on ovni 1.14's emu-nosv-nested-
 * tasks trace (tests/data/ovni-emu: tasks nested by pausing the running
 * one and starting another, then unwound):
 *
 * - the task id records carry a nesting depth: the bodies on the thread's
 *   stack (running or paused), counted here from the events themselves
 *   (VTx adds a body, VTe removes one), and 0 when the record is null;
 * - the label hook names a task type value once its VYc was handled (and
 *   not before), fixed labels come from the channel table, and a value
 *   that is no type has no label.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu/emu.h"
#include "emu/task.h"
#include "testutil.h"
#include "weft/weft.h"

#define CASE "ovni-emu/emu-nosv-nested-tasks/ovni"

/* What the sink saw of the task id channel (type 10) of thread rows. */
typedef struct seen {
	uint64_t records, bad, max_depth;
	uint64_t bodies;      /* bodies on the (single) thread's stack now */
	uint64_t now;         /* ns since the first event */
} seen;

/* Checks each thread task-id record's depth against the bodies counted. */
static int on_record(void *ctx, const weft__emu_record *r)
{
	seen *s = ctx;
	if (r->kind != WEFT__EMU_THREAD || r->type != 10)
		return 0;
	s->records++;
	uint64_t want = r->value != 0 ? s->bodies : 0;
	if (r->depth != want) {
		if (s->bad++ < 5)
			fprintf(stderr, "t=%llu task %lld: depth %u, want %llu\n",
				(unsigned long long)r->time, (long long)r->value, r->depth,
				(unsigned long long)want);
	}
	if (r->depth > s->max_depth)
		s->max_depth = r->depth;
	return 0;
}

/* The slot of nOS-V channel `name`, or UINT16_MAX. */
static uint16_t nosv_slot(const weft__emu *e, const char *name)
{
	weft__emu_slot_info info;
	for (uint16_t s = 0; s < weft__emu_slot_count(e); s++)
		if (weft__emu_slot_describe(e, s, &info) == 0 && strcmp(info.model, "nosv") == 0 &&
		    strcmp(info.name, name) == 0)
			return s;
	return UINT16_MAX;
}

static void test_depth_and_labels(void)
{
	weft_trace *t = tu_open_data(CASE, 0, NULL, NULL);
	REQUIRE(t != NULL);
	seen s = { 0 };
	weft__emu_sink sink = { &s, on_record };
	weft__emu *e = NULL;
	REQUIRE(weft__emu_create(t, NULL, &sink, &e) == 0);
	uint16_t type_slot = nosv_slot(e, "task_type"), ss_slot = nosv_slot(e, "subsystem");
	REQUIRE(type_slot != UINT16_MAX && ss_slot != UINT16_MAX);
	uint32_t value = weft__emu_type_value("testtype1", 9);
	CHECK(weft__emu_value_label(e, type_slot, value) == NULL);  /* not created yet */
	CHECK_EQ_STR(weft__emu_value_label(e, ss_slot, 11), "Task: In body");

	weft_filter f = { .order = WEFT_ORDER_TIME };
	weft_cursor *c = NULL;
	const weft_event *ev;
	REQUIRE(weft_cursor_create(t, &f, &c) == 0);
	int rc;
	while ((rc = weft_cursor_next(c, &ev)) == 1) {
		/* count the bodies before the emulator writes this event's records */
		if (ev->code_len == 3 && memcmp(ev->code, "VTx", 3) == 0)
			s.bodies++;
		if (ev->code_len == 3 && memcmp(ev->code, "VTe", 3) == 0)
			s.bodies--;
		REQUIRE(weft__emu_event(e, ev) == 0);
	}
	CHECK_EQ_I64(rc, 0);
	weft_cursor_free(c);
	CHECK_EQ_I64(weft__emu_finish(e, 1), 0);

	CHECK(s.records > 100);
	CHECK_EQ_U64(s.bad, 0);
	CHECK(s.max_depth > 10);       /* the tasks really nest */
	CHECK_EQ_U64(s.bodies, 0);
	CHECK_EQ_STR(weft__emu_value_label(e, type_slot, value), "testtype1");
	CHECK(weft__emu_value_label(e, type_slot, value + 1) == NULL);
	CHECK(weft__emu_value_label(e, nosv_slot(e, "taskid"), 1) == NULL);  /* a number */
	weft__emu_free(e);
	weft_trace_free(t);
}

int main(void)
{
	test_depth_and_labels();
	return tu_result();
}
