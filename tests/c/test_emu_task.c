/* SPDX-License-Identifier: MIT */
/*
 * test_emu_task.c - the task layer of the ovni emulation (src/emu/task.c,
 * idmap.c): type values equal ovniemu's for labels of its corpus, the id
 * maps keep every entry through growth and removals, a finished task is
 * kept compactly (dense and sparse ids) and comes back with its type, and
 * bodies follow ovniemu's rules with its messages.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu/task.h"
#include "testutil.h"

/* Type values of ovniemu's .pcf goldens (tests/data/ovni-emu). */
static void test_type_values(void)
{
	CHECK_EQ_U64(weft__emu_type_value("testtype10", 10), 39445232);
	CHECK_EQ_U64(weft__emu_type_value("tiny", 4), 42188137);
	CHECK_EQ_U64(weft__emu_type_value("main task.1", 11), 1541689984);
	CHECK_EQ_U64(weft__emu_type_value("outer for.2", 11), 901260193);
	CHECK_EQ_U64(weft__emu_type_value("inner for.3", 11), 391050673);
	/* at least 1000 whatever the hash: the values below are reserved */
	for (unsigned i = 0; i < 20000; i++) {
		char l[32];
		int n = snprintf(l, sizeof l, "type-%u", i);
		uint32_t v = weft__emu_type_value(l, (size_t)n);
		CHECK(v >= 1000 && v <= 0x7fffffffu);
	}
}

/* Puts, overwrites and removes many ids, checking every one after. */
static void test_idmap(void)
{
	weft__emu_idmap *m = weft__emu_idmap_new();
	REQUIRE(m != NULL);
	enum { N = 50000 };
	for (uint32_t i = 0; i < N; i++)
		REQUIRE(weft__emu_idmap_put(m, i * 7919u, i + 1) == 0);
	CHECK_EQ_U64(weft__emu_idmap_count(m), N);
	for (uint32_t i = 0; i < N; i += 2)
		weft__emu_idmap_del(m, i * 7919u);
	weft__emu_idmap_del(m, 3); /* absent */
	CHECK_EQ_U64(weft__emu_idmap_count(m), N / 2);
	int bad = 0;
	for (uint32_t i = 0; i < N; i++) {
		uint64_t v = 0;
		int found = weft__emu_idmap_get(m, i * 7919u, &v);
		bad += (i % 2 == 0) ? found : !(found && v == i + 1);
	}
	CHECK_EQ_I64(bad, 0);
	REQUIRE(weft__emu_idmap_put(m, 7919u, 99) == 0);
	uint64_t v = 0;
	CHECK(weft__emu_idmap_get(m, 7919u, &v) && v == 99);
	CHECK_EQ_U64(weft__emu_idmap_count(m), N / 2);
	weft__emu_idmap_free(m);
}

/*
 * Runs `n` tasks with ids first, first + step, ... to their end on one
 * thread, then checks each comes back from the finished table with its
 * type and runs again (nOS-V tasks may).
 */
static void run_tasks(uint32_t first, uint32_t step, uint32_t n)
{
	weft__emu *e = calloc(1, sizeof *e); /* only its error and diagnostics are used */
	weft__emu_tasks *t = weft__emu_tasks_new();
	weft__emu_body_stack s = { 0 };
	REQUIRE(e != NULL && t != NULL);
	REQUIRE(weft__emu_type_create(e, t, 1, "a", 1) == 0);
	REQUIRE(weft__emu_type_create(e, t, 2, "", 0) == 0);
	CHECK_EQ_STR(weft__emu_type_at(t, 1)->label, "(unlabeled task type 2)");
	uint32_t flags = WEFT__TASK_RESURRECT | WEFT__TASK_PAUSE;
	int bad = 0;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t id = first + i * step;
		weft__emu_task *task;
		bad += weft__emu_task_create(e, t, id, 1 + i % 2, flags) != 0;
		bad += (task = weft__emu_task_find(e, t, id)) == NULL;
		bad += task == NULL || weft__emu_task_execute(e, t, &s, 0, task, 1) != 0;
		bad += task == NULL || weft__emu_task_end(e, t, &s, 0, task, 1) != 0;
	}
	CHECK_EQ_I64(bad, 0);
	CHECK_EQ_U64(weft__emu_tasks_finished(t), n);
	CHECK_EQ_U64(weft__emu_tasks_live(t), 0);
	for (uint32_t i = 0; i < n; i++) {
		uint32_t id = first + i * step;
		weft__emu_task *task = weft__emu_task_find(e, t, id);
		bad += task == NULL || task->type != i % 2 || task->flags != flags;
		bad += task == NULL || weft__emu_task_execute(e, t, &s, 0, task, 1) != 0;
		bad += task == NULL || task->body.iteration != 1;
		bad += task == NULL || weft__emu_task_end(e, t, &s, 0, task, 1) != 0;
	}
	CHECK_EQ_I64(bad, 0);
	CHECK(weft__emu_task_create(e, t, first, 1, flags) < 0);
	CHECK_EQ_STR(e->error, "task_id 1 already exists");
	CHECK(weft__emu_task_find(e, t, first + n * step + 1) == NULL);
	free(e->error);
	weft__emu_body_stack_free(&s);
	weft__emu_tasks_free(t);
	free(e);
}

/* The rules of bodies: nesting, pausing, resuming, ending, parallel tasks. */
static void test_body_rules(void)
{
	weft__emu *e = calloc(1, sizeof *e);
	weft__emu_tasks *t = weft__emu_tasks_new();
	weft__emu_body_stack s = { 0 };
	REQUIRE(e != NULL && t != NULL);
	REQUIRE(weft__emu_type_create(e, t, 5, "x", 1) == 0);
	CHECK(weft__emu_type_create(e, t, 5, "y", 1) < 0);
	CHECK_EQ_STR(e->error, "a task type with id 5 already exists");
	free(e->error), e->error = NULL;
	uint32_t nosv = WEFT__TASK_RESURRECT | WEFT__TASK_PAUSE;
	REQUIRE(weft__emu_task_create(e, t, 1, 5, nosv) == 0);
	REQUIRE(weft__emu_task_create(e, t, 2, 5, nosv) == 0);
	REQUIRE(weft__emu_task_create(e, t, 3, 5, WEFT__TASK_PARALLEL) == 0);
	weft__emu_task *t1 = weft__emu_task_find(e, t, 1), *t2 = weft__emu_task_find(e, t, 2);
	weft__emu_task *t3 = weft__emu_task_find(e, t, 3);
	REQUIRE(weft__emu_task_execute(e, t, &s, 0, t1, 1) == 0);
	CHECK(weft__emu_task_execute(e, t, &s, 0, t2, 1) < 0);
	CHECK_EQ_STR(e->error, "cannot nest body(id=1,taskid=2) over body(id=1,taskid=1) "
		     "which is already running");
	free(e->error), e->error = NULL;
	REQUIRE(weft__emu_task_pause(e, &s, 0, t1, 1) == 0);
	CHECK(weft__emu_task_execute(e, t, &s, 0, t1, 1) < 0);
	CHECK_EQ_STR(e->error, "refusing to run body(id=1,taskid=1) in Paused state, needs to "
		     "resume intead");
	free(e->error), e->error = NULL;
	REQUIRE(weft__emu_task_execute(e, t, &s, 0, t2, 1) == 0);
	CHECK(weft__emu_body_running(&s) == &t2->body);
	CHECK(weft__emu_task_resume(e, &s, 0, t1, 1) < 0);
	CHECK_EQ_STR(e->error, "body(id=1,taskid=1) is not on top of the stack");
	free(e->error), e->error = NULL;
	REQUIRE(weft__emu_task_end(e, t, &s, 0, t2, 1) == 0);
	CHECK(weft__emu_body_running(&s) == NULL && weft__emu_body_top(&s) == &t1->body);
	REQUIRE(weft__emu_task_resume(e, &s, 0, t1, 1) == 0);
	REQUIRE(weft__emu_task_end(e, t, &s, 0, t1, 1) == 0);
	/* parallel: a body per id > 0, none may pause, none runs again */
	REQUIRE(weft__emu_task_execute(e, t, &s, 1, t3, 1) == 0);
	CHECK(weft__emu_task_pause(e, &s, 1, t3, 1) < 0);
	CHECK_EQ_STR(e->error, "body(id=1,taskid=3) is not allowed to pause");
	free(e->error), e->error = NULL;
	REQUIRE(weft__emu_task_end(e, t, &s, 1, t3, 1) == 0);
	CHECK(weft__emu_task_execute(e, t, &s, 1, t3, 1) < 0);
	CHECK_EQ_STR(e->error, "body(id=1,taskid=3) is not allowed to run again");
	free(e->error), e->error = NULL;
	REQUIRE(weft__emu_task_execute(e, t, &s, 1, t3, 2) == 0);
	CHECK(weft__emu_task_end(e, t, &s, 0, t3, 2) < 0);
	CHECK_EQ_STR(e->error, "body(id=2,taskid=3) has another stack");
	free(e->error), e->error = NULL;
	CHECK(weft__emu_task_pause(e, &s, 1, t3, 7) < 0);
	CHECK_EQ_STR(e->error, "cannot find body with id 7 in task 3");
	free(e->error), e->error = NULL;
	CHECK(weft__emu_task_create(e, t, 9, 6, nosv) < 0);
	CHECK_EQ_STR(e->error, "unknown type id 6");
	free(e->error);
	weft__emu_body_stack_free(&s);
	weft__emu_tasks_free(t);
	free(e);
}

int main(void)
{
	test_type_values();
	test_idmap();
	run_tasks(1, 1, 300000);         /* dense ids: nOS-V's numbering */
	run_tasks(1, 104729, 30000);     /* sparse ids: the hash form */
	test_body_rules();
	return tu_result();
}
