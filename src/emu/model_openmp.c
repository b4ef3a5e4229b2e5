/* SPDX-License-Identifier: MIT */
/*
 * emu/model_openmp.c - the OpenMP model (docs/emulation.md, section 3.7):
 * the subsystem stack of each thread, types shared by tasks and
 * work-sharing regions (POc), tasks (PPc PPx PPe: their id and type label
 * pushed while they run) and work-sharing regions (PQx PQe: their type
 * label pushed), with ovniemu 1.14's rules and messages (its
 * openmp/event.c and setup.c, restated). OpenMP runs inline tasks over a
 * running one: that nesting is allowed with a warning, and a task may run
 * again once it ended.
 */
#include <inttypes.h>

#include "emu/engine.h"
#include "emu/task_model.h"

enum { CH_SUBSYSTEM = 0, CH_LABEL, CH_TASKID, CH_MAX };

/* Subsystem values (type 50). */
enum {
	SS_BARRIER_FORK = 1, SS_BARRIER_JOIN, SS_BARRIER_PLAIN, SS_BARRIER_SPIN_WAIT,
	SS_BARRIER_TASK, SS_CRITICAL_ACQ, SS_CRITICAL_REL, SS_CRITICAL_SECTION,
	SS_WD_DISTRIBUTE, SS_WD_FOR_DYNAMIC_CHUNK, SS_WD_FOR_DYNAMIC_INIT, SS_WD_FOR_STATIC,
	SS_WD_SECTION, SS_WD_SINGLE, SS_TASK_ALLOC, SS_TASK_CHECK_DEPS, SS_TASK_DUP_ALLOC,
	SS_TASK_RELEASE_DEPS, SS_TASK_RUN, SS_TASK_RUN_IF0, SS_TASK_SCHEDULE,
	SS_TASK_TASKGROUP, SS_TASK_TASKWAIT, SS_TASK_TASKWAIT_DEPS, SS_TASK_TASKYIELD,
	SS_RT_ATTACHED, SS_RT_FORK_CALL, SS_RT_INIT, SS_RT_MICROTASK_INTERNAL,
	SS_RT_MICROTASK_USER, SS_RT_WORKER_LOOP
};

/* The .pcf labels, in ovniemu's order. */
static const weft__emu_label ss_labels[] = {
	{ SS_WD_DISTRIBUTE, "Work-distribution: Distribute" },
	{ SS_WD_FOR_DYNAMIC_CHUNK, "Work-distribution: Dynamic for chunk" },
	{ SS_WD_FOR_DYNAMIC_INIT, "Work-distribution: Dynamic for initialization" },
	{ SS_WD_FOR_STATIC, "Work-distribution: Static for chunk" },
	{ SS_WD_SECTION, "Work-distribution: Section" },
	{ SS_WD_SINGLE, "Work-distribution: Single" },
	{ SS_TASK_ALLOC, "Task: Allocation" },
	{ SS_TASK_CHECK_DEPS, "Task: Check deps" },
	{ SS_TASK_DUP_ALLOC, "Task: Duplicating" },
	{ SS_TASK_RELEASE_DEPS, "Task: Releasing deps" },
	{ SS_TASK_RUN, "Task: Running task" },
	{ SS_TASK_RUN_IF0, "Task: Running task if0" },
	{ SS_TASK_SCHEDULE, "Task: Scheduling" },
	{ SS_TASK_TASKGROUP, "Task: Taskgroup" },
	{ SS_TASK_TASKWAIT, "Task: Taskwait" },
	{ SS_TASK_TASKWAIT_DEPS, "Task: Taskwait deps" },
	{ SS_TASK_TASKYIELD, "Task: Taskyield" },
	{ SS_CRITICAL_ACQ, "Critical: Acquiring" },
	{ SS_CRITICAL_REL, "Critical: Releasing" },
	{ SS_CRITICAL_SECTION, "Critical: Section" },
	{ SS_BARRIER_FORK, "Barrier: Fork" },
	{ SS_BARRIER_JOIN, "Barrier: Join" },
	{ SS_BARRIER_PLAIN, "Barrier: Plain" },
	{ SS_BARRIER_TASK, "Barrier: Task" },
	{ SS_BARRIER_SPIN_WAIT, "Barrier: Spin wait" },
	{ SS_RT_ATTACHED, "Runtime: Attached" },
	{ SS_RT_FORK_CALL, "Runtime: Fork call" },
	{ SS_RT_INIT, "Runtime: Initialization" },
	{ SS_RT_MICROTASK_INTERNAL, "Runtime: Internal microtask" },
	{ SS_RT_MICROTASK_USER, "Runtime: User microtask" },
	{ SS_RT_WORKER_LOOP, "Runtime: Worker main loop" },
	{ 0, NULL }
};

/* Three stacks shown while the thread is active; each may repeat its
 * value (two nested tasks of one type). */
static const weft__emu_chan_spec chans[CH_MAX] = {
	[CH_SUBSYSTEM] = { .name = "subsystem", .type = 50, .prefix = "OpenMP subsystem",
			   .labels = ss_labels, .stack = 1, .dup = 1, .track = WEFT__TRACK_ACT,
			   .prv_flags = WEFT__PRV_SKIPDUPNULL },
	[CH_LABEL] = { .name = "label", .type = 51, .prefix = "OpenMP label", .stack = 1,
		       .dup = 1, .track = WEFT__TRACK_ACT, .prv_flags = WEFT__PRV_SKIPDUPNULL },
	[CH_TASKID] = { .name = "task ID", .type = 52, .prefix = "OpenMP task ID", .stack = 1,
			.dup = 1, .track = WEFT__TRACK_ACT, .prv_flags = WEFT__PRV_SKIPDUPNULL },
};

/* ---- Subsystems -------------------------------------------------------------------------- */

/* An event that enters (lower case value, or '[') or leaves a subsystem. */
typedef struct ss_entry {
	char c, enter, leave;
	uint8_t value;
} ss_entry;

static const ss_entry ss_table[] = {
	{ 'B', 'b', 'B', SS_BARRIER_PLAIN },
	{ 'B', 'j', 'J', SS_BARRIER_JOIN },
	{ 'B', 'f', 'F', SS_BARRIER_FORK },
	{ 'B', 't', 'T', SS_BARRIER_TASK },
	{ 'B', 's', 'S', 0 },  /* spin wait: ignored */
	{ 'I', 'a', 'A', SS_CRITICAL_ACQ },
	{ 'I', 'r', 'R', SS_CRITICAL_REL },
	{ 'I', '[', ']', SS_CRITICAL_SECTION },
	{ 'W', 'd', 'D', SS_WD_DISTRIBUTE },
	{ 'W', 'c', 'C', SS_WD_FOR_DYNAMIC_CHUNK },
	{ 'W', 'y', 'Y', SS_WD_FOR_DYNAMIC_INIT },
	{ 'W', 's', 'S', SS_WD_FOR_STATIC },
	{ 'W', 'e', 'E', SS_WD_SECTION },
	{ 'W', 'i', 'I', SS_WD_SINGLE },
	{ 'T', 'a', 'A', SS_TASK_ALLOC },
	{ 'T', 'c', 'C', SS_TASK_CHECK_DEPS },
	{ 'T', 'd', 'D', SS_TASK_DUP_ALLOC },
	{ 'T', 'r', 'R', SS_TASK_RELEASE_DEPS },
	{ 'T', '[', ']', SS_TASK_RUN },
	{ 'T', 'i', 'I', SS_TASK_RUN_IF0 },
	{ 'T', 's', 'S', SS_TASK_SCHEDULE },
	{ 'T', 'g', 'G', SS_TASK_TASKGROUP },
	{ 'T', 't', 'T', SS_TASK_TASKWAIT },
	{ 'T', 'w', 'W', SS_TASK_TASKWAIT_DEPS },
	{ 'T', 'y', 'Y', SS_TASK_TASKYIELD },
	{ 'A', '[', ']', SS_RT_ATTACHED },
	{ 'M', 'i', 'I', SS_RT_MICROTASK_INTERNAL },
	{ 'M', 'u', 'U', SS_RT_MICROTASK_USER },
	{ 'H', '[', ']', SS_RT_WORKER_LOOP },
	{ 'C', 'i', 'I', SS_RT_INIT },
	{ 'C', 'f', 'F', SS_RT_FORK_CALL },
};
#define NSS (sizeof ss_table / sizeof ss_table[0])

static int model_index(weft__emu *e)
{
	return weft__emu_model_index(e, &weft__emu_model_openmp);
}

static weft__emu_task_model *state(weft__emu *e)
{
	return weft__emu_task_model_get(e, &weft__emu_model_openmp);
}

static weft__emu_chan *chan(weft__emu *e, uint32_t t, uint32_t ch)
{
	return weft__emu_th_chan(e, t, model_index(e), ch);
}

/* An event of a subsystem category: a push or pop of the subsystem, or nothing. */
static int ss_event(weft__emu *e, const weft__emu_ev *ev)
{
	for (size_t i = 0; i < NSS; i++) {
		const ss_entry *s = &ss_table[i];
		if (s->c != ev->c || (s->enter != ev->v && s->leave != ev->v))
			continue;
		weft__emu_chan *ch = chan(e, ev->thread, CH_SUBSYSTEM);
		if (s->value == 0)
			return 0;
		if (ev->v == s->enter)
			return weft__emu_push(e, ch, s->value);
		return weft__emu_pop(e, ch, s->value);
	}
	return weft__emu_fail(e, "unknown openmp function event");
}

/* ---- Tasks and work-sharing regions ---------------------------------------------------- */

/* PPc: creates a task that may nest over a running one and run again once ended. */
static int task_create(weft__emu *e, const weft__emu_ev *ev)
{
	if (ev->payload_size != 8)
		return weft__emu_fail(e, "unexpected payload size");
	uint32_t id = weft__emu_ev_u32(ev, 0), type = weft__emu_ev_u32(ev, 4);
	if (id == 0)
		return weft__emu_fail(e, "taskid cannot be 0");
	if (type == 0)
		return weft__emu_fail(e, "typeid cannot be 0");
	return weft__emu_task_create(e, weft__emu_task_model_of(e, state(e), ev->thread), id, type,
				     WEFT__TASK_RELAX_NESTING | WEFT__TASK_RESURRECT);
}

/* PPx / PPe: the task's body runs (its id and label pushed) or ends (popped). */
static int task_update(weft__emu *e, const weft__emu_ev *ev)
{
	weft__emu_task_model *m = state(e);
	weft__emu_tasks *tasks = weft__emu_task_model_of(e, m, ev->thread);
	weft__emu_body_stack *s = &m->stacks[ev->thread];
	if (ev->payload_size < 4)
		return weft__emu_fail(e, "missing task id in payload");
	uint32_t id = weft__emu_ev_u32(ev, 0);
	if (id == 0)
		return weft__emu_fail(e, "taskid cannot be 0");
	weft__emu_task *task = weft__emu_task_find(e, tasks, id);
	if (task == NULL && e->error == NULL)
		return weft__emu_fail(e, "cannot find task with id %" PRIu32, id);
	if (task == NULL)
		return -1;
	/* the value is read first: an ended task is filed away */
	int64_t label = weft__emu_type_at(tasks, task->type)->value;
	weft__emu_chan *tid = chan(e, ev->thread, CH_TASKID), *lab = chan(e, ev->thread, CH_LABEL);
	if (ev->v == 'x') {
		if (weft__emu_task_execute(e, tasks, s, (int32_t)ev->thread, task, 1) < 0 ||
		    weft__emu_push(e, tid, id) < 0)
			return -1;
		return weft__emu_push(e, lab, label);
	}
	if (weft__emu_task_end(e, tasks, s, (int32_t)ev->thread, task, 1) < 0 ||
	    weft__emu_pop(e, tid, id) < 0)
		return -1;
	return weft__emu_pop(e, lab, label);
}

static int task_event(weft__emu *e, const weft__emu_ev *ev)
{
	if (ev->v == 'c')
		return task_create(e, ev);
	if (ev->v == 'x' || ev->v == 'e')
		return task_update(e, ev);
	return weft__emu_fail(e, "unexpected task event value");
}

/* PQx / PQe: a work-sharing region of a type begins (its label pushed) or ends. */
static int ws_event(weft__emu *e, const weft__emu_ev *ev)
{
	if (ev->v != 'x' && ev->v != 'e')
		return weft__emu_fail(e, "unexpected ws event value %c", ev->v);
	if (ev->payload_size < 4)
		return weft__emu_fail(e, "missing worksharing id in payload");
	uint32_t id = weft__emu_ev_u32(ev, 0);
	if (id == 0)
		return weft__emu_fail(e, "worksharing type id cannot be 0");
	const weft__emu_task_type *type =
		weft__emu_type_find(weft__emu_task_model_of(e, state(e), ev->thread), id);
	if (type == NULL)
		return weft__emu_fail(e, "cannot find ws with type %" PRIu32, id);
	weft__emu_chan *lab = chan(e, ev->thread, CH_LABEL);
	if (ev->v == 'x')
		return weft__emu_push(e, lab, type->value);
	return weft__emu_pop(e, lab, type->value);
}

/* ---- The model ----------------------------------------------------------------------------- */

static int openmp_event(weft__emu *e, const weft__emu_ev *ev)
{
	if (!e->th[ev->thread].running)
		return weft__emu_fail(e, "current thread %" PRId64 " not running",
				      e->th[ev->thread].info->tid);
	switch (ev->c) {
	case 'B': case 'I': case 'W': case 'T': case 'A': case 'M': case 'H': case 'C':
		return ss_event(e, ev);
	case 'P':
		return task_event(e, ev);
	case 'O':
		return weft__emu_task_model_type_event(e, state(e), ev);
	case 'Q':
		return ws_event(e, ev);
	default:
		return weft__emu_fail(e, "unknown event category");
	}
}

static int openmp_create(weft__emu *e)
{
	return weft__emu_task_model_create(e, &weft__emu_model_openmp);
}

/* At the end no thread may be inside a subsystem. */
static int openmp_finish(weft__emu *e)
{
	return weft__emu_task_model_end_check(e, &weft__emu_model_openmp, CH_SUBSYSTEM,
					      "openmp functions");
}

static int openmp_pcf(weft__emu *e, weft__emu_kind kind, weft__emu_pcf *pcf)
{
	(void)kind;
	return weft__emu_task_model_pcf(e, state(e), pcf, chans[CH_LABEL].type);
}

static const char *openmp_label(weft__emu *e, uint32_t ch, int64_t value)
{
	return ch == CH_LABEL ? weft__emu_task_model_label(state(e), value) : NULL;
}

static void openmp_free(weft__emu *e)
{
	weft__emu_task_model_destroy(e, &weft__emu_model_openmp);
}

const weft__emu_model_spec weft__emu_model_openmp = {
	.id = 'P', .name = "openmp", .version = "1.2.1",
	.chans = chans, .nchans = CH_MAX,
	.create = openmp_create, .event = openmp_event, .finish = openmp_finish,
	.pcf = openmp_pcf, .label = openmp_label, .free = openmp_free,
};
