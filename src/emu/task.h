/* SPDX-License-Identifier: MIT */
/*
 * emu/task.h - tasks, their bodies and task types, shared by the models
 * that run tasks (nOS-V, Nanos6, OpenMP; docs/emulation.md, section 3.4).
 *
 * A task type has an id (per process) and a label; its Paraver value is a
 * hash of the label, so that a label has the same value in every trace.
 * A task has one body (a parallel task: a body per id > 0, created on its
 * first execution). A body is Created, Running, Paused or Dead, and while
 * it runs or is paused it sits on the body stack of the thread that runs
 * it: a body executed while another runs on that thread nests over it
 * (refused unless the running one allows it), and only the body on top of
 * the stack may pause, resume or end. These are ovniemu 1.14's rules, with
 * its messages.
 *
 * Memory: a task that may still change is held whole; a finished task
 * (its one body dead) is kept only as its type and flags in a compact
 * table, from which it comes back when it runs again (nOS-V tasks may), so
 * that a trace of millions of tasks costs a few bytes per finished task.
 */
#ifndef WEFT_EMU_TASK_H
#define WEFT_EMU_TASK_H

#include <stddef.h>
#include <stdint.h>

#include "emu/engine.h"

enum weft__emu_task_flags {
	WEFT__TASK_PARALLEL = 1u << 0,       /* a body per id > 0 */
	WEFT__TASK_RESURRECT = 1u << 1,      /* may run again once dead */
	WEFT__TASK_PAUSE = 1u << 2,          /* its bodies may pause */
	WEFT__TASK_RELAX_NESTING = 1u << 3   /* may nest over a running body (warned) */
};

enum weft__emu_body_state {
	WEFT__BODY_CREATED = 1,
	WEFT__BODY_RUNNING,
	WEFT__BODY_PAUSED,
	WEFT__BODY_DEAD
};

typedef struct weft__emu_task weft__emu_task;

typedef struct weft__emu_body {
	uint32_t id;             /* 1 for the body of a non-parallel task */
	uint8_t state;           /* enum weft__emu_body_state */
	int32_t thread;          /* the thread whose stack holds it, -1: none */
	uint32_t iteration;      /* times it ran again after dying */
	weft__emu_task *task;
} weft__emu_body;

typedef struct weft__emu_task_type {
	uint32_t id;             /* per process */
	uint32_t value;          /* Paraver value: weft__emu_type_value(label) */
	char *label;
} weft__emu_task_type;

struct weft__emu_task {
	uint32_t id;
	uint32_t type;           /* index in its process's type list */
	uint32_t flags;          /* enum weft__emu_task_flags */
	uint32_t nbodies;
	weft__emu_body body;     /* the body of a non-parallel task */
	struct weft__emu_idmap *bodies;  /* parallel: body id -> weft__emu_body * */
};

/* The task types and tasks of one process. */
typedef struct weft__emu_tasks weft__emu_tasks;

/* A thread's stack of running and paused bodies (top last). */
typedef struct weft__emu_body_stack {
	weft__emu_body **b;
	uint32_t n, cap;
} weft__emu_body_stack;

/* The Paraver value of a task type label (ovniemu's: Jenkins' lookup2
 * hash, initial value 0xfeedbeef, + 666, 31 bits, + 1000 below 1000). */
uint32_t weft__emu_type_value(const char *label, size_t len);

weft__emu_tasks *weft__emu_tasks_new(void);
void weft__emu_tasks_free(weft__emu_tasks *t);

/*
 * Creates type `id` labelled `label` (len bytes; none: "(unlabeled task
 * type <id>)"). 0, or -1 after weft__emu_fail (id 0, an id already used,
 * a label of 512 bytes or more).
 */
int weft__emu_type_create(weft__emu *e, weft__emu_tasks *t, uint32_t id, const char *label,
			  size_t len);
/* The type of index `i` (weft__emu_task.type); the types in creation order. */
const weft__emu_task_type *weft__emu_type_at(const weft__emu_tasks *t, uint32_t i);
size_t weft__emu_type_count(const weft__emu_tasks *t);
/* The type of id `id`, or NULL. */
const weft__emu_task_type *weft__emu_type_find(const weft__emu_tasks *t, uint32_t id);

/* Creates task `id` of type `type_id`: 0 or -1 (an id in use, an unknown type). */
int weft__emu_task_create(weft__emu *e, weft__emu_tasks *t, uint32_t id, uint32_t type_id,
			  uint32_t flags);
/* Task `id` (brought back whole if it had finished), or NULL. */
weft__emu_task *weft__emu_task_find(weft__emu *e, weft__emu_tasks *t, uint32_t id);

/*
 * The transitions of a task's body on thread `thread`'s stack: 0, or -1
 * after weft__emu_fail (with ovniemu's messages). A non-parallel task
 * that ends is filed away as finished; the task and its body stay valid
 * until the next task of the process ends.
 */
int weft__emu_task_execute(weft__emu *e, weft__emu_tasks *t, weft__emu_body_stack *s,
			   int32_t thread, weft__emu_task *task, uint32_t body_id);
int weft__emu_task_pause(weft__emu *e, weft__emu_body_stack *s, int32_t thread,
			 weft__emu_task *task, uint32_t body_id);
int weft__emu_task_resume(weft__emu *e, weft__emu_body_stack *s, int32_t thread,
			  weft__emu_task *task, uint32_t body_id);
int weft__emu_task_end(weft__emu *e, weft__emu_tasks *t, weft__emu_body_stack *s,
		       int32_t thread, weft__emu_task *task, uint32_t body_id);

/* The body on top of the stack if it runs, else NULL. */
weft__emu_body *weft__emu_body_running(const weft__emu_body_stack *s);
/* The body on top of the stack, or NULL. */
weft__emu_body *weft__emu_body_top(const weft__emu_body_stack *s);
void weft__emu_body_stack_free(weft__emu_body_stack *s);

/* Finished tasks filed away, and tasks held whole (for tests and figures). */
size_t weft__emu_tasks_finished(const weft__emu_tasks *t);
size_t weft__emu_tasks_live(const weft__emu_tasks *t);

/* ---- A map of 32-bit ids to 64-bit values (idmap.c) ---------------------- */

typedef struct weft__emu_idmap weft__emu_idmap;

weft__emu_idmap *weft__emu_idmap_new(void);
void weft__emu_idmap_free(weft__emu_idmap *m);
/* 1 and *value when `id` is there, else 0. */
int weft__emu_idmap_get(const weft__emu_idmap *m, uint32_t id, uint64_t *value);
/* Sets `id` to `value`: 0 or WEFT_ENOMEM. */
int weft__emu_idmap_put(weft__emu_idmap *m, uint32_t id, uint64_t value);
/* Removes `id` (nothing when absent). */
void weft__emu_idmap_del(weft__emu_idmap *m, uint32_t id);
size_t weft__emu_idmap_count(const weft__emu_idmap *m);
/* Calls fn on every entry (any order); stops when it returns non-zero. */
int weft__emu_idmap_each(const weft__emu_idmap *m, int (*fn)(void *ctx, uint32_t id,
							    uint64_t value), void *ctx);

#endif
