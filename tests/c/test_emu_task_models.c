/* SPDX-License-Identifier: MIT */
/*
 * test_emu_task_models.c - what the Nanos6 and OpenMP models give the
 * outputs besides the Paraver records (those are compared with ovniemu's
 * in tests/python/test_emu_paraver.py): the nesting depth of the task id
 * records (the bodies on the thread's stack) and the labels of task type
 * values, on cases of ovniemu's corpus copied into tests/data/ovni-emu.
 *
 * emu-nanos6-if0-pause-parent runs task k nested over task k - 1, paused,
 * so a record showing task k has depth k. emu-openmp-nested-task runs
 * task 2 over a running task 1 (relaxed nesting).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu/engine.h"
#include "emu/task.h"
#include "testutil.h"
#include "weft/weft.h"

/* The task id records (type `type`) seen by the sink, thread rows and CPU rows. */
typedef struct seen {
	uint32_t type;
	uint64_t records, nonzero, bad_depth, deepest;
	uint64_t max_depth_value;  /* the value shown at the deepest record */
} seen;

/* A record of the task id type: a task k must be k bodies deep, null 0 deep. */
static int on_record(void *ctx, const weft__emu_record *r)
{
	seen *s = ctx;
	if (r->type != s->type)
		return 0;
	s->records++;
	if (r->value == 0) {
		s->bad_depth += r->depth != 0;
		return 0;
	}
	s->nonzero++;
	s->bad_depth += r->depth != (uint64_t)r->value;
	if (r->depth > s->deepest) {
		s->deepest = r->depth;
		s->max_depth_value = (uint64_t)r->value;
	}
	return 0;
}

/* Runs the emulator over copied case `name`, its records into `s`. */
static weft__emu *run_case(const char *name, seen *s, weft_trace **trace)
{
	char rel[256];
	snprintf(rel, sizeof rel, "ovni-emu/%s/ovni", name);
	*trace = NULL;
	if (weft_trace_open(tu_data_path(rel), NULL, trace) < 0) {
		tu_fail(__FILE__, __LINE__, "%s: %s", rel, weft_last_error());
		return NULL;
	}
	weft__emu_sink sink = { s, on_record };
	weft__emu *e = NULL;
	REQUIRE(weft__emu_create(*trace, NULL, &sink, &e) == 0);
	weft_filter f = { .order = WEFT_ORDER_TIME };
	weft_cursor *c = NULL;
	const weft_event *ev;
	int rc = weft_cursor_create(*trace, &f, &c);
	while (rc >= 0 && (rc = weft_cursor_next(c, &ev)) == 1)
		CHECK_EQ_I64(weft__emu_event(e, ev), 0);
	CHECK_EQ_I64(rc, 0);
	weft_cursor_free(c);
	CHECK_EQ_I64(weft__emu_finish(e, 1), 0);
	return e;
}

/* The slot of the model channel written with Paraver type `type`. */
static uint16_t slot_of(const weft__emu *e, uint32_t type)
{
	weft__emu_slot_info info;
	for (uint16_t s = 0; s < weft__emu_slot_count(e); s++)
		if (weft__emu_slot_describe(e, s, &info) == 0 && info.type == type)
			return s;
	tu_fail(__FILE__, __LINE__, "no slot of type %u", type);
	return WEFT__EMU_NO_SLOT;
}

static void test_nanos6(void)
{
	seen s = { .type = 35 };
	weft_trace *t;
	weft__emu *e = run_case("emu-nanos6-if0-pause-parent", &s, &t);
	REQUIRE(e != NULL);
	/* every task id record is as deep as the task's number, nulls are flat */
	CHECK(s.nonzero > 10);
	CHECK_EQ_U64(s.bad_depth, 0);
	CHECK(s.deepest >= 10);
	CHECK_EQ_U64(s.max_depth_value, s.deepest);
	/* task type values and the fixed values are named */
	CHECK_EQ_STR(weft__emu_value_label(e, slot_of(e, 36), 1690940984), "testtype1");
	CHECK(weft__emu_value_label(e, slot_of(e, 36), 1690940985) == NULL);
	CHECK_EQ_STR(weft__emu_value_label(e, slot_of(e, 37), 1), "Task: Running body");
	CHECK_EQ_STR(weft__emu_value_label(e, slot_of(e, 39), 3), "Worker");
	CHECK_EQ_STR(weft__emu_value_label(e, slot_of(e, 40), 101), "Resting");
	CHECK(weft__emu_value_label(e, slot_of(e, 35), 1) == NULL);
	weft__emu_slot_info info;
	REQUIRE(weft__emu_slot_describe(e, slot_of(e, 39), &info) == 0);
	CHECK_EQ_STR(info.model, "nanos6");
	CHECK_EQ_STR(info.name, "thread_type");
	CHECK(info.stack && info.track == WEFT__TRACK_ANY);
	weft__emu_free(e);
	weft_trace_free(t);
}

static void test_openmp(void)
{
	seen s = { .type = 52 };
	weft_trace *t;
	weft__emu *e = run_case("emu-openmp-nested-task", &s, &t);
	REQUIRE(e != NULL);
	/* tasks 1 and 2 (nested) on the thread and CPU rows: 1, 2, 1, 0 each */
	CHECK_EQ_U64(s.nonzero, 6);
	CHECK_EQ_U64(s.bad_depth, 0);
	CHECK_EQ_U64(s.deepest, 2);
	CHECK_EQ_STR(weft__emu_value_label(e, slot_of(e, 51), weft__emu_type_value("task.1", 6)),
		     "task.1");
	CHECK_EQ_STR(weft__emu_value_label(e, slot_of(e, 50), 19), "Task: Running task");
	/* the nesting is allowed, with ovniemu's warning */
	int warned = 0;
	for (size_t i = 0; i < weft__emu_diag_count(e); i++) {
		const weft__emu_diag *d = weft__emu_diag_get(e, i);
		warned += d->d.severity == WEFT_SEV_WARNING &&
			  strcmp(d->d.message, "deprecated nesting body(id=1,taskid=2) over "
				 "already running body(id=1,taskid=1)") == 0;
	}
	CHECK_EQ_I64(warned, 1);
	weft__emu_free(e);
	weft_trace_free(t);
}

int main(void)
{
	test_nanos6();
	test_openmp();
	return tu_result();
}
