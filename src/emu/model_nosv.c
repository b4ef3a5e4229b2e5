/* SPDX-License-Identifier: MIT */
/*
 * emu/model_nosv.c - the nOS-V model ('V'; docs/emulation.md, section
 * 3.4), with ovniemu 1.14's rules and messages (its nosv/setup.c and
 * nosv/event.c restated, not copied):
 *
 * - a subsystem stack per thread (type 13): the scheduler, memory, API
 *   and thread-role events push and pop their subsystem, a few are only
 *   read; the idle state (type 16) is set by VP*, Progressing from the
 *   start, and a CPU running no single thread shows Resting;
 * - task types per process (VYc, jumbo: type id, label; the Paraver
 *   value is the hash of the label), tasks (VTc; VTC a parallel task),
 *   and the transitions of their bodies (VTx execute, VTp pause, VTr
 *   resume, VTe end) on the thread's body stack (task.c); while a body
 *   runs, the thread shows its task id, type, body id, the app id of the
 *   process and its rank + 1 (types 10, 11, 15, 12, 14), and "Task: In
 *   body" sits on the subsystem stack from VTx to VTe;
 * - hardware counters (VWC, model_nosv_hwc.c).
 *
 * Every nOS-V event needs its thread active and in its CPU.
 *
 * Map:
 *   channels     the table, the subsystem values and labels
 *   subsystems   the push/pop/set/ignore rules of the simple events
 *   tasks        types, tasks, bodies and the channels that follow them
 *   the model    event dispatch, connect, end checks, .pcf, labels
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "emu/engine.h"
#include "emu/model_nosv_hwc.h"
#include "emu/pcf.h"
#include "emu/task.h"
#include "emu/task_model.h"

/* ---- Channels ------------------------------------------------------------------ */

/* The channels, in ovniemu's order (the order of their records at one time). */
enum { CH_BODYID = 0, CH_TASKID, CH_TYPE, CH_APPID, CH_SUBSYSTEM, CH_RANK, CH_IDLE, CH_MAX };

/* Subsystem values (type 13). */
enum {
	SS_UNKNOWN = 2,
	SS_HUNGRY = 6, SS_SERVING, SS_SUBMITTING, SS_ALLOCATING, SS_FREEING,
	SS_TASK_BODY,
	SS_API_FIRST,          /* 12: API: Create .. 31: API: Wait all, below */
	SS_WORKER = 32, SS_DELEGATE,
	SS_EV_RECV, SS_EV_SEND, SS_EV_SELF
};

/* Idle values (type 16). */
enum { IDLE_PROGRESSING = 100, IDLE_RESTING, IDLE_ABSORBING };

static const weft__emu_label ss_labels[] = {
	{ SS_UNKNOWN, "Unknown subsystem" },
	{ SS_HUNGRY, "Scheduler: Hungry" },
	{ SS_SERVING, "Scheduler: Serving" },
	{ SS_SUBMITTING, "Scheduler: Submitting" },
	{ SS_ALLOCATING, "Memory: Allocating" },
	{ SS_FREEING, "Memory: Freeing" },
	{ SS_TASK_BODY, "Task: In body" },
	{ 12, "API: Create" }, { 13, "API: Destroy" }, { 14, "API: Submit" },
	{ 15, "API: Pause" }, { 16, "API: Yield" }, { 17, "API: Waitfor" },
	{ 18, "API: Scheduling point" }, { 19, "API: Attach" }, { 20, "API: Detach" },
	{ 21, "API: Mutex lock" }, { 22, "API: Mutex trylock" }, { 23, "API: Mutex unlock" },
	{ 24, "API: Barrier wait" }, { 25, "API: Cond wait" }, { 26, "API: Cond signal" },
	{ 27, "API: Cond broadcast" }, { 28, "API: Join" }, { 29, "API: Join all" },
	{ 30, "API: Wait" }, { 31, "API: Wait all" },
	{ SS_WORKER, "Thread: Worker" },
	{ SS_DELEGATE, "Thread: Delegate" },
	/* ovniemu lists Send before Recv */
	{ SS_EV_SEND, "EV Scheduler: Send task" },
	{ SS_EV_RECV, "EV Scheduler: Recv task" },
	{ SS_EV_SELF, "EV Scheduler: Self-assign task" },
	{ 0, NULL }
};

static const weft__emu_label idle_labels[] = {
	{ IDLE_PROGRESSING, "Progressing" },
	{ IDLE_RESTING, "Resting" },
	{ IDLE_ABSORBING, "Absorbing noise" },
	{ 0, NULL }
};

/*
 * The task channels allow a repeated value (a switch to another task of
 * the same type, body id, app or rank), and so does the subsystem stack
 * (two bodies started without subsystem events in between push "In body"
 * twice). Every channel writes a repeated value again unless it is null.
 */
static const weft__emu_chan_spec chans[CH_MAX] = {
	[CH_BODYID] = { .name = "bodyid", .type = 15, .prefix = "nOS-V task body ID", .dup = 1,
			.track = WEFT__TRACK_RUN, .prv_flags = WEFT__PRV_SKIPDUPNULL },
	[CH_TASKID] = { .name = "taskid", .type = 10, .prefix = "nOS-V task ID",
			.track = WEFT__TRACK_RUN, .prv_flags = WEFT__PRV_SKIPDUPNULL },
	[CH_TYPE] = { .name = "task_type", .type = 11, .prefix = "nOS-V task type", .dup = 1,
		      .track = WEFT__TRACK_RUN, .prv_flags = WEFT__PRV_SKIPDUPNULL },
	[CH_APPID] = { .name = "appid", .type = 12, .prefix = "nOS-V task AppID", .dup = 1,
		       .track = WEFT__TRACK_RUN, .prv_flags = WEFT__PRV_SKIPDUPNULL },
	[CH_SUBSYSTEM] = { .name = "subsystem", .type = 13, .prefix = "nOS-V subsystem",
			   .labels = ss_labels, .stack = 1, .dup = 1,
			   .track = WEFT__TRACK_ACT, .prv_flags = WEFT__PRV_SKIPDUPNULL },
	[CH_RANK] = { .name = "rank", .type = 14, .prefix = "nOS-V task MPI rank", .dup = 1,
		      .track = WEFT__TRACK_RUN, .prv_flags = WEFT__PRV_SKIPDUPNULL },
	[CH_IDLE] = { .name = "idle", .type = 16, .prefix = "nOS-V idle state",
		      .labels = idle_labels, .track = WEFT__TRACK_RUN,
		      .prv_flags = WEFT__PRV_SKIPDUPNULL, .cpu_default_set = 1,
		      .cpu_default = IDLE_RESTING },
};

/* The model's state: task types, tasks and body stacks (task_model.c),
 * the hardware counters as its extra. */
static weft__emu_task_model *state(weft__emu *e)
{
	return weft__emu_task_model_get(e, &weft__emu_model_nosv);
}

/* Raw channel `ch` of thread `t`. */
static weft__emu_chan *chan(weft__emu *e, uint32_t t, uint32_t ch)
{
	return weft__emu_th_chan(e, t, weft__emu_model_index(e, &weft__emu_model_nosv), ch);
}

/* ---- Subsystems ------------------------------------------------------------------ */

enum { ACT_NONE = 0, ACT_PUSH, ACT_POP, ACT_SET, ACT_IGNORE };

/* An event value that opens a subsystem and the one that closes it. */
typedef struct ss_pair {
	char open, close;
	int16_t value;
} ss_pair;

/* Per category: its pairs (ending with open 0), the values read and
 * ignored, and the values that set the idle state. */
static const ss_pair pairs_sched[] = {
	{ 'h', 'f', SS_HUNGRY }, { '[', ']', SS_SERVING }, { 'N', 'n', SS_SERVING }, { 0, 0, 0 }
};
static const ss_pair pairs_submit[] = { { '[', ']', SS_SUBMITTING }, { 0, 0, 0 } };
static const ss_pair pairs_memory[] = {
	{ 'a', 'A', SS_ALLOCATING }, { 'f', 'F', SS_FREEING }, { 0, 0, 0 }
};
static const ss_pair pairs_thread[] = {
	{ 'w', 'W', SS_WORKER }, { 'd', 'D', SS_DELEGATE }, { 0, 0, 0 }
};
/* The API calls: the n-th letter opens (lowercase) and closes (uppercase)
 * API subsystem SS_API_FIRST + n: create, destroy, submit, pause, yield,
 * waitfor, schedpoint, attach, detach, mutex lock, trylock, unlock,
 * barrier wait, cond wait, signal, broadcast, join, join all, wait, wait
 * all. */
static const char api_open[] = "rdspywcaeltubogkjmin";
static const char api_close[] = "RDSPYWCAELTUBOGKJMIN";
static const char idle_values[] = "pra";  /* Progressing, Resting, Absorbing */

/* What event category `c`, value `v` does to the subsystem (or idle) channel. */
static int ss_rule(char c, char v, int64_t *value)
{
	const ss_pair *pairs = NULL;
	const char *ignored = "";
	switch (c) {
	case 'S':
		pairs = pairs_sched;
		ignored = "@rs";
		break;
	case 'U':
		pairs = pairs_submit;
		break;
	case 'M':
		pairs = pairs_memory;
		break;
	case 'H':
		pairs = pairs_thread;
		ignored = "aA";
		break;
	case 'A': {
		const char *p = v ? strchr(api_open, v) : NULL;
		if (p != NULL) {
			*value = SS_API_FIRST + (p - api_open);
			return ACT_PUSH;
		}
		p = v ? strchr(api_close, v) : NULL;
		if (p != NULL) {
			*value = SS_API_FIRST + (p - api_close);
			return ACT_POP;
		}
		return ACT_NONE;
	}
	case 'P': {
		const char *p = v ? strchr(idle_values, v) : NULL;
		if (p == NULL)
			return ACT_NONE;
		*value = IDLE_PROGRESSING + (p - idle_values);
		return ACT_SET;
	}
	default:
		return ACT_NONE;
	}
	for (const ss_pair *q = pairs; q->open; q++) {
		*value = q->value;
		if (v == q->open)
			return ACT_PUSH;
		if (v == q->close)
			return ACT_POP;
	}
	return v && strchr(ignored, v) != NULL ? ACT_IGNORE : ACT_NONE;
}

/* A subsystem or idle event: push, pop or set its value, or nothing. */
static int simple_event(weft__emu *e, const weft__emu_ev *ev)
{
	int64_t value = 0;
	switch (ss_rule(ev->c, ev->v, &value)) {
	case ACT_PUSH:
		return weft__emu_push(e, chan(e, ev->thread, CH_SUBSYSTEM), value);
	case ACT_POP:
		return weft__emu_pop(e, chan(e, ev->thread, CH_SUBSYSTEM), value);
	case ACT_SET:
		return weft__emu_set(e, chan(e, ev->thread, CH_IDLE), weft__emu_int(value));
	case ACT_IGNORE:
		return 0;
	default:
		return weft__emu_fail(e, "unknown nOS-V subsystem event %c%c%c", ev->m, ev->c,
				      ev->v);
	}
}

/* ---- Tasks ------------------------------------------------------------------------ */

/* VTc / VTC (u32 task id, u32 type id): a task; a parallel one has a body
 * per id > 0 and neither pauses nor runs again once ended. */
static int task_create(weft__emu *e, weft__emu_task_model *m, const weft__emu_ev *ev)
{
	if (ev->payload_size < 8)
		return weft__emu_fail(e, "unexpected payload size %" PRIu32, ev->payload_size);
	uint32_t id = weft__emu_ev_u32(ev, 0), type = weft__emu_ev_u32(ev, 4);
	uint32_t flags = ev->v == 'C' ? WEFT__TASK_PARALLEL
				      : WEFT__TASK_RESURRECT | WEFT__TASK_PAUSE;
	return weft__emu_task_create(e, weft__emu_task_model_of(e, m, ev->thread), id, type,
				     flags);
}

/*
 * The task channels of thread `t` while body `b` (of `tasks`) runs on it,
 * `depth` bodies on its stack; `switching` from another running body.
 */
static int show_body(weft__emu *e, weft__emu_tasks *tasks, uint32_t t,
		     const weft__emu_body *b, uint32_t depth, int switching)
{
	const weft__emu_proc *proc = &e->sys->procs[e->th[t].info->proc];
	const weft__emu_task_type *type = weft__emu_type_at(tasks, b->task->type);
	if (b->task->id == 0)
		return weft__emu_fail(e, "%s id cannot be 0", switching ? "next task" : "task");
	if (type == NULL || type->value == 0)
		return weft__emu_fail(e, "%s cannot be 0", switching ? "next task type id"
								 : "task type gid");
	if (!switching && proc->app_id <= 0)
		return weft__emu_fail(e, "app id must be positive");
	if (weft__emu_set(e, chan(e, t, CH_BODYID), weft__emu_int(b->id)) < 0 ||
	    weft__emu_set_depth(e, chan(e, t, CH_TASKID), weft__emu_int(b->task->id),
				depth) < 0 ||
	    weft__emu_set(e, chan(e, t, CH_TYPE), weft__emu_int(type->value)) < 0 ||
	    weft__emu_set(e, chan(e, t, CH_APPID), weft__emu_int(proc->app_id)) < 0)
		return -1;
	if (proc->rank >= 0)
		return weft__emu_set(e, chan(e, t, CH_RANK), weft__emu_int(proc->rank + 1));
	return 0;
}

/* The task channels of a thread when no body runs on it. */
static int hide_body(weft__emu *e, uint32_t t, uint32_t depth)
{
	const weft__emu_proc *proc = &e->sys->procs[e->th[t].info->proc];
	if (weft__emu_set(e, chan(e, t, CH_BODYID), weft__emu_null()) < 0 ||
	    weft__emu_set_depth(e, chan(e, t, CH_TASKID), weft__emu_null(), depth) < 0 ||
	    weft__emu_set(e, chan(e, t, CH_TYPE), weft__emu_null()) < 0 ||
	    weft__emu_set(e, chan(e, t, CH_APPID), weft__emu_null()) < 0)
		return -1;
	if (proc->rank >= 0)
		return weft__emu_set(e, chan(e, t, CH_RANK), weft__emu_null());
	return 0;
}

/*
 * The body transition of a VTx/VTp/VTr/VTe event (u32 task id, u32 body
 * id) on the thread's body stack. A non-parallel task's events carry body
 * id 0, its one body being body 1; a parallel task's carry the body, > 0.
 */
static int body_transition(weft__emu *e, weft__emu_task_model *m, const weft__emu_ev *ev)
{
	if (ev->payload_size < 4)
		return weft__emu_fail(e, "missing task id in payload");
	uint32_t task_id = weft__emu_ev_u32(ev, 0);
	if (ev->payload_size < 8)
		return weft__emu_fail(e, "missing body id in payload");
	weft__emu_tasks *tasks = weft__emu_task_model_of(e, m, ev->thread);
	weft__emu_body_stack *stack = &m->stacks[ev->thread];
	int32_t t = (int32_t)ev->thread;
	weft__emu_task *task = weft__emu_task_find(e, tasks, task_id);
	if (task == NULL)
		return e->error != NULL ? -1
					: weft__emu_fail(e, "cannot find task with id %" PRIu32,
							 task_id);
	uint32_t body_id = weft__emu_ev_u32(ev, 4);
	if (task->flags & WEFT__TASK_PARALLEL) {
		if (body_id == 0)
			return weft__emu_fail(e, "the body_id must be > 0 for parallel task %"
					      PRIu32, task->id);
	} else {
		if (body_id != 0)
			return weft__emu_fail(e, "the body_id must be 0 for non-parallel task %"
					      PRIu32, task->id);
		body_id = 1;
	}
	switch (ev->v) {
	case 'x':
		return weft__emu_task_execute(e, tasks, stack, t, task, body_id);
	case 'e':
		return weft__emu_task_end(e, tasks, stack, t, task, body_id);
	case 'p':
		return weft__emu_task_pause(e, stack, t, task, body_id);
	default:
		return weft__emu_task_resume(e, stack, t, task, body_id);
	}
}

/*
 * VTx, VTp, VTr, VTe: the body changes state, then the subsystem stack
 * (VTx pushes "Task: In body", VTe pops it; a pause or resume leaves it),
 * then the task channels: a body that starts or resumes with none running
 * before shows; one that ends or pauses leaving none running hides; a body
 * started over a running one, or ended back to a running one, switches the
 * channels to the other body.
 */
static int task_update(weft__emu *e, weft__emu_task_model *m, const weft__emu_ev *ev)
{
	weft__emu_body_stack *stack = &m->stacks[ev->thread];
	weft__emu_tasks *tasks = weft__emu_task_model_of(e, m, ev->thread);
	weft__emu_body *prev = weft__emu_body_running(stack);
	if (body_transition(e, m, ev) < 0)
		return -1;
	weft__emu_body *next = weft__emu_body_running(stack);
	weft__emu_chan *ss = chan(e, ev->thread, CH_SUBSYSTEM);
	if (ev->v == 'x' && weft__emu_push(e, ss, SS_TASK_BODY) < 0)
		return -1;
	if (ev->v == 'e' && weft__emu_pop(e, ss, SS_TASK_BODY) < 0)
		return -1;
	int nested = (ev->v == 'x' && prev != NULL) || (ev->v == 'e' && next != NULL);
	int rc;
	if (nested) {
		if (prev == NULL || next == NULL)
			return weft__emu_fail(e, "cannot switch to or from a NULL body");
		if (prev == next)
			return weft__emu_fail(e, "cannot switch to the same body");
		rc = show_body(e, tasks, ev->thread, next, stack->n, 1);
	} else if (ev->v == 'x' || ev->v == 'r') {
		rc = show_body(e, tasks, ev->thread, next, stack->n, 0);
	} else {
		rc = hide_body(e, ev->thread, stack->n);
	}
	if (rc < 0 || ev->v != 'x')
		return rc;
	/* a body that begins runs, with "Task: In body" on top */
	if (next == NULL || next->state != WEFT__BODY_RUNNING)
		return weft__emu_fail(e, "body not in running state on begin");
	if (ss->cur.set && ss->cur.v != SS_TASK_BODY)
		return weft__emu_fail(e, "wrong subsystem state on task begin");
	return 0;
}

/* The task events (VT*). */
static int task_event(weft__emu *e, weft__emu_task_model *m, const weft__emu_ev *ev)
{
	switch (ev->v) {
	case 'c':
	case 'C':
		return task_create(e, m, ev);
	case 'x':
	case 'e':
	case 'p':
	case 'r':
		return task_update(e, m, ev);
	default:
		return weft__emu_fail(e, "unexpected nOS-V task event value %c", ev->v);
	}
}

/* ---- The model -------------------------------------------------------------------- */

static int nosv_event(weft__emu *e, const weft__emu_ev *ev)
{
	const weft__emu_th *th = &e->th[ev->thread];
	weft__emu_task_model *m = state(e);
	if (!th->active)
		return weft__emu_fail(e, "current thread %" PRId64 " not active", th->info->tid);
	if (th->out_of_cpu)
		return weft__emu_fail(e, "current thread %" PRId64 " out of CPU", th->info->tid);
	switch (ev->c) {
	case 'S':
	case 'U':
	case 'M':
	case 'H':
	case 'A':
	case 'P':
		return simple_event(e, ev);
	case 'T':
		return task_event(e, m, ev);
	case 'Y':
		return weft__emu_task_model_type_event(e, m, ev);
	case 'W':
		return weft__emu_hwc_event(e, m->extra, ev);
	default:
		return weft__emu_fail(e, "unknown nOS-V event category %c", ev->c);
	}
}

static int nosv_create(weft__emu *e)
{
	if (weft__emu_task_model_create(e, &weft__emu_model_nosv) < 0)
		return -1;
	weft__emu_hwc *hwc = NULL;
	int rc = weft__emu_hwc_create(e, &hwc);
	state(e)->extra = hwc;
	return rc;
}

/* Every thread starts Progressing (written when it first runs). */
static int nosv_connect(weft__emu *e)
{
	for (uint32_t t = 0; t < e->sys->nthreads; t++)
		if (weft__emu_set(e, chan(e, t, CH_IDLE), weft__emu_int(IDLE_PROGRESSING)) < 0)
			return -1;
	return 0;
}

/*
 * Two task types whose labels hash to one value, in the order the .pcf
 * lists them (processes in system order, types in creation order): an
 * error for each, as ovniemu refuses the trace when it writes the .pcf.
 * 0, or -1 when one was found (or without memory).
 */
static int check_collisions(weft__emu *e, const weft__emu_task_model *m)
{
	weft__emu_idmap *seen = weft__emu_idmap_new();   /* value -> its first label */
	int rc = seen == NULL ? -1 : 0;
	for (size_t p = 0; seen != NULL && p < m->nprocs; p++)
		for (uint32_t i = 0; i < weft__emu_type_count(m->procs[p]); i++) {
			const weft__emu_task_type *tt = weft__emu_type_at(m->procs[p], i);
			uint64_t v;
			if (!weft__emu_idmap_get(seen, tt->value, &v)) {
				if (weft__emu_idmap_put(seen, tt->value, (uintptr_t)tt->label) < 0) {
					weft__emu_end_error(e, UINT32_MAX, "out of memory");
					rc = -1;
				}
			} else if (strcmp((const char *)(uintptr_t)v, tt->label) != 0) {
				weft__emu_end_error(e, UINT32_MAX, "collision occurred in task type "
						    "labels: %s and %s", (const char *)(uintptr_t)v,
						    tt->label);
				rc = -1;
			}
		}
	weft__emu_idmap_free(seen);
	return rc;
}

/* The end: label collisions, then the end check of the subsystem stacks. */
static int nosv_finish(weft__emu *e)
{
	int rc = check_collisions(e, state(e));
	if (weft__emu_task_model_end_check(e, &weft__emu_model_nosv, CH_SUBSYSTEM,
					   "nosv subsystems") < 0)
		rc = -1;
	return rc;
}

/*
 * The counters' types, and the task types as labels of type 11 (every
 * process's in system order, each in creation order, the first label of a
 * value kept): as ovniemu, only when the emulation did not stop at an
 * event (it adds the labels at its end).
 */
static int nosv_pcf(weft__emu *e, weft__emu_kind kind, weft__emu_pcf *pcf)
{
	(void)kind;
	weft__emu_task_model *m = state(e);
	int rc = weft__emu_hwc_pcf(m->extra, pcf);
	if (rc < 0 || (e->failed && !e->finished))
		return rc;
	return weft__emu_task_model_pcf(e, m, pcf, chans[CH_TYPE].type);
}

/* The label of a task type value known so far (channel CH_TYPE). */
static const char *nosv_label(weft__emu *e, uint32_t ch, int64_t value)
{
	return ch == CH_TYPE ? weft__emu_task_model_label(state(e), value) : NULL;
}

/* The hardware counters' views. */
static int nosv_views(weft__emu *e, weft__emu_view_fn fn, void *arg)
{
	return weft__emu_hwc_views(state(e)->extra, fn, arg);
}

static void nosv_free(weft__emu *e)
{
	weft__emu_task_model *m = state(e);
	if (m != NULL)
		weft__emu_hwc_free(m->extra);
	weft__emu_task_model_destroy(e, &weft__emu_model_nosv);
}

const weft__emu_model_spec weft__emu_model_nosv = {
	.id = 'V', .name = "nosv", .version = "2.7.0",
	.chans = chans, .nchans = CH_MAX,
	.create = nosv_create, .connect = nosv_connect, .event = nosv_event,
	.finish = nosv_finish, .pcf = nosv_pcf, .label = nosv_label, .views = nosv_views,
	.free = nosv_free,
};
