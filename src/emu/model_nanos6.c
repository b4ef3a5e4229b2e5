/* SPDX-License-Identifier: MIT */
/*
 * emu/model_nanos6.c - the Nanos6 model (docs/emulation.md, section 3.5):
 * the subsystem stack of each thread, its thread type stack and idle
 * state, task types (6Yc), tasks and their one body (6Tc 6Tx 6Tp 6Tr
 * 6Te), with ovniemu 1.14's rules and messages (its nanos6/event.c and
 * setup.c, restated). The task id, type and rank channels show the body
 * running on top of the thread's body stack.
 */
#include <inttypes.h>

#include "emu/engine.h"
#include "emu/task_model.h"

enum { CH_TASKID = 0, CH_TYPE, CH_SUBSYSTEM, CH_RANK, CH_THREAD, CH_IDLE, CH_MAX };

/* Subsystem values (type 37), in the order of the breakdown view. */
enum {
	SS_TASK_BODY = 1, SS_UNKNOWN, SS_TASK_CREATING, SS_TASK_SUBMIT, SS_TASK_SPAWNING,
	SS_TASK_FOR, SS_SCHED_ADDING, SS_SCHED_PROCESSING, SS_SCHED_SERVING, SS_DEP_REG,
	SS_DEP_UNREG, SS_BLK_TASKWAIT, SS_BLK_WAITFOR, SS_BLK_BLOCKING, SS_BLK_UNBLOCKING,
	SS_ALLOCATING, SS_FREEING, SS_HANDLING_TASK, SS_WORKER_LOOP, SS_SWITCH_TO,
	SS_MIGRATE, SS_SUSPEND, SS_RESUME, SS_SPONGE
};

enum { TH_LEADER = 1, TH_MAIN, TH_WORKER, TH_EXTERNAL };
enum { IDLE_PROGRESSING = 100, IDLE_RESTING, IDLE_ABSORBING };

/* The .pcf labels, in ovniemu's order. */
static const weft__emu_label ss_labels[] = {
	{ SS_UNKNOWN, "Unknown subsystem" },
	{ SS_TASK_BODY, "Task: Running body" },
	{ SS_TASK_CREATING, "Task: Creating" },
	{ SS_TASK_SUBMIT, "Task: Submitting" },
	{ SS_TASK_SPAWNING, "Task: Spawning function" },
	{ SS_TASK_FOR, "Task: Running task for" },
	{ SS_SCHED_SERVING, "Scheduler: Serving tasks" },
	{ SS_SCHED_ADDING, "Scheduler: Adding ready tasks" },
	{ SS_SCHED_PROCESSING, "Scheduler: Processing ready tasks" },
	{ SS_DEP_REG, "Dependency: Registering" },
	{ SS_DEP_UNREG, "Dependency: Unregistering" },
	{ SS_BLK_TASKWAIT, "Blocking: Taskwait" },
	{ SS_BLK_BLOCKING, "Blocking: Blocking current task" },
	{ SS_BLK_UNBLOCKING, "Blocking: Unblocking remote task" },
	{ SS_BLK_WAITFOR, "Blocking: Wait for deadline" },
	{ SS_HANDLING_TASK, "Worker: Handling task" },
	{ SS_WORKER_LOOP, "Worker: Looking for work" },
	{ SS_SWITCH_TO, "Worker: Switching to another thread" },
	{ SS_MIGRATE, "Worker: Migrating CPU" },
	{ SS_SUSPEND, "Worker: Suspending thread" },
	{ SS_RESUME, "Worker: Resuming another thread" },
	{ SS_SPONGE, "Worker: Sponge mode" },
	{ SS_ALLOCATING, "Memory: Allocating" },
	{ SS_FREEING, "Memory: Freeing" },
	/* declared, set by no event (value 51 is broken in old Paraver) */
	{ 61, "EV Scheduler: Send task" },
	{ 60, "EV Scheduler: Recv task" },
	{ 62, "EV Scheduler: Self-assign task" },
	{ 63, "EV CPU: Becomes idle" },
	{ 64, "EV CPU: Becomes active" },
	{ 65, "EV Worker: Waking another thread" },
	{ 0, NULL }
};

static const weft__emu_label thread_labels[] = {
	{ TH_EXTERNAL, "External" }, { TH_WORKER, "Worker" }, { TH_LEADER, "Leader" },
	{ TH_MAIN, "Main" }, { 0, NULL }
};

static const weft__emu_label idle_labels[] = {
	{ IDLE_PROGRESSING, "Progressing" }, { IDLE_RESTING, "Resting" },
	{ IDLE_ABSORBING, "Absorbing noise" }, { 0, NULL }
};

static const weft__emu_chan_spec chans[CH_MAX] = {
	[CH_TASKID] = { .name = "taskid", .type = 35, .prefix = "Nanos6 task ID",
			.track = WEFT__TRACK_RUN, .prv_flags = WEFT__PRV_SKIPDUP },
	/* a nested task of the same type or rank writes its value again */
	[CH_TYPE] = { .name = "task_type", .type = 36, .prefix = "Nanos6 task type", .dup = 1,
		      .track = WEFT__TRACK_RUN, .prv_flags = WEFT__PRV_EMITDUP },
	[CH_SUBSYSTEM] = { .name = "subsystem", .type = 37, .prefix = "Nanos6 subsystem",
			   .labels = ss_labels, .stack = 1, .track = WEFT__TRACK_ACT,
			   .prv_flags = WEFT__PRV_SKIPDUP },
	[CH_RANK] = { .name = "rank", .type = 38, .prefix = "Nanos6 task MPI rank", .dup = 1,
		      .track = WEFT__TRACK_RUN, .prv_flags = WEFT__PRV_EMITDUP },
	[CH_THREAD] = { .name = "thread_type", .type = 39, .prefix = "Nanos6 thread type",
			.labels = thread_labels, .stack = 1, .track = WEFT__TRACK_ANY,
			.prv_flags = WEFT__PRV_SKIPDUP },
	/* a CPU that runs no single thread rests */
	[CH_IDLE] = { .name = "idle", .type = 40, .prefix = "Nanos6 idle state",
		      .labels = idle_labels, .track = WEFT__TRACK_RUN,
		      .prv_flags = WEFT__PRV_SKIPDUP, .cpu_default_set = 1,
		      .cpu_default = IDLE_RESTING },
};

/* ---- Subsystems, thread types, idle ------------------------------------------------------ */

enum { PUSH = 1, POP, SET, IGNORE };

/* What an event of the simple categories does: to which channel, with which value. */
typedef struct simple_entry {
	char c, v;
	uint8_t chan, action;
	int16_t value;
} simple_entry;

static const simple_entry simple_table[] = {
	{ 'W', '[', CH_SUBSYSTEM, PUSH, SS_WORKER_LOOP },
	{ 'W', ']', CH_SUBSYSTEM, POP, SS_WORKER_LOOP },
	{ 'W', 't', CH_SUBSYSTEM, PUSH, SS_HANDLING_TASK },
	{ 'W', 'T', CH_SUBSYSTEM, POP, SS_HANDLING_TASK },
	{ 'W', 'w', CH_SUBSYSTEM, PUSH, SS_SWITCH_TO },
	{ 'W', 'W', CH_SUBSYSTEM, POP, SS_SWITCH_TO },
	{ 'W', 'm', CH_SUBSYSTEM, PUSH, SS_MIGRATE },
	{ 'W', 'M', CH_SUBSYSTEM, POP, SS_MIGRATE },
	{ 'W', 's', CH_SUBSYSTEM, PUSH, SS_SUSPEND },
	{ 'W', 'S', CH_SUBSYSTEM, POP, SS_SUSPEND },
	{ 'W', 'r', CH_SUBSYSTEM, PUSH, SS_RESUME },
	{ 'W', 'R', CH_SUBSYSTEM, POP, SS_RESUME },
	{ 'W', 'g', CH_SUBSYSTEM, PUSH, SS_SPONGE },
	{ 'W', 'G', CH_SUBSYSTEM, POP, SS_SPONGE },
	{ 'W', '*', CH_SUBSYSTEM, IGNORE, 0 },
	{ 'P', 'p', CH_IDLE, SET, IDLE_PROGRESSING },
	{ 'P', 'r', CH_IDLE, SET, IDLE_RESTING },
	{ 'P', 'a', CH_IDLE, SET, IDLE_ABSORBING },
	{ 'C', '[', CH_SUBSYSTEM, PUSH, SS_TASK_CREATING },
	{ 'C', ']', CH_SUBSYSTEM, POP, SS_TASK_CREATING },
	{ 'U', '[', CH_SUBSYSTEM, PUSH, SS_TASK_SUBMIT },
	{ 'U', ']', CH_SUBSYSTEM, POP, SS_TASK_SUBMIT },
	{ 'F', '[', CH_SUBSYSTEM, PUSH, SS_TASK_SPAWNING },
	{ 'F', ']', CH_SUBSYSTEM, POP, SS_TASK_SPAWNING },
	{ 'O', '[', CH_SUBSYSTEM, PUSH, SS_TASK_FOR },
	{ 'O', ']', CH_SUBSYSTEM, POP, SS_TASK_FOR },
	{ 't', '[', CH_SUBSYSTEM, IGNORE, 0 },
	{ 't', ']', CH_SUBSYSTEM, IGNORE, 0 },
	{ 'M', 'a', CH_SUBSYSTEM, PUSH, SS_ALLOCATING },
	{ 'M', 'A', CH_SUBSYSTEM, POP, SS_ALLOCATING },
	{ 'M', 'f', CH_SUBSYSTEM, PUSH, SS_FREEING },
	{ 'M', 'F', CH_SUBSYSTEM, POP, SS_FREEING },
	{ 'D', 'r', CH_SUBSYSTEM, PUSH, SS_DEP_REG },
	{ 'D', 'R', CH_SUBSYSTEM, POP, SS_DEP_REG },
	{ 'D', 'u', CH_SUBSYSTEM, PUSH, SS_DEP_UNREG },
	{ 'D', 'U', CH_SUBSYSTEM, POP, SS_DEP_UNREG },
	{ 'S', '[', CH_SUBSYSTEM, PUSH, SS_SCHED_SERVING },
	{ 'S', ']', CH_SUBSYSTEM, POP, SS_SCHED_SERVING },
	{ 'S', 'a', CH_SUBSYSTEM, PUSH, SS_SCHED_ADDING },
	{ 'S', 'A', CH_SUBSYSTEM, POP, SS_SCHED_ADDING },
	{ 'S', 'p', CH_SUBSYSTEM, PUSH, SS_SCHED_PROCESSING },
	{ 'S', 'P', CH_SUBSYSTEM, POP, SS_SCHED_PROCESSING },
	{ 'S', '@', CH_SUBSYSTEM, IGNORE, 0 },
	{ 'S', 'r', CH_SUBSYSTEM, IGNORE, 0 },
	{ 'S', 's', CH_SUBSYSTEM, IGNORE, 0 },
	{ 'B', 'b', CH_SUBSYSTEM, PUSH, SS_BLK_BLOCKING },
	{ 'B', 'B', CH_SUBSYSTEM, POP, SS_BLK_BLOCKING },
	{ 'B', 'u', CH_SUBSYSTEM, PUSH, SS_BLK_UNBLOCKING },
	{ 'B', 'U', CH_SUBSYSTEM, POP, SS_BLK_UNBLOCKING },
	{ 'B', 'w', CH_SUBSYSTEM, PUSH, SS_BLK_TASKWAIT },
	{ 'B', 'W', CH_SUBSYSTEM, POP, SS_BLK_TASKWAIT },
	{ 'B', 'f', CH_SUBSYSTEM, PUSH, SS_BLK_WAITFOR },
	{ 'B', 'F', CH_SUBSYSTEM, POP, SS_BLK_WAITFOR },
	{ 'H', 'e', CH_THREAD, PUSH, TH_EXTERNAL },
	{ 'H', 'E', CH_THREAD, POP, TH_EXTERNAL },
	{ 'H', 'w', CH_THREAD, PUSH, TH_WORKER },
	{ 'H', 'W', CH_THREAD, POP, TH_WORKER },
	{ 'H', 'l', CH_THREAD, PUSH, TH_LEADER },
	{ 'H', 'L', CH_THREAD, POP, TH_LEADER },
	{ 'H', 'm', CH_THREAD, PUSH, TH_MAIN },
	{ 'H', 'M', CH_THREAD, POP, TH_MAIN },
};
#define NSIMPLE (sizeof simple_table / sizeof simple_table[0])

/* The categories whose events the table handles. */
static int simple_category(char c)
{
	switch (c) {
	case 'C': case 'S': case 'U': case 'F': case 'O': case 't':
	case 'H': case 'D': case 'B': case 'W': case 'M': case 'P':
		return 1;
	default:
		return 0;
	}
}

static int model_index(weft__emu *e)
{
	return weft__emu_model_index(e, &weft__emu_model_nanos6);
}

static weft__emu_task_model *state(weft__emu *e)
{
	return weft__emu_task_model_get(e, &weft__emu_model_nanos6);
}

static weft__emu_chan *chan(weft__emu *e, uint32_t t, uint32_t ch)
{
	return weft__emu_th_chan(e, t, model_index(e), ch);
}

/* An event of a simple category: a push, pop or set of one channel, or nothing. */
static int simple_event(weft__emu *e, const weft__emu_ev *ev)
{
	const simple_entry *s = NULL;
	for (size_t i = 0; i < NSIMPLE && s == NULL; i++)
		if (simple_table[i].c == ev->c && simple_table[i].v == ev->v)
			s = &simple_table[i];
	if (s == NULL)
		return weft__emu_fail(e, "unknown Nanos6 subsystem event");
	weft__emu_chan *ch = chan(e, ev->thread, s->chan);
	switch (s->action) {
	case PUSH:
		return weft__emu_push(e, ch, s->value);
	case POP:
		return weft__emu_pop(e, ch, s->value);
	case SET:
		return weft__emu_set(e, ch, weft__emu_int(s->value));
	default:
		return 0;
	}
}

/* ---- Tasks ------------------------------------------------------------------------------- */

/* 6Tc: creates a task; Nanos6 tasks may pause and (inline tasks) nest over a running one. */
static int task_create(weft__emu *e, const weft__emu_ev *ev)
{
	if (ev->payload_size != 8)
		return weft__emu_fail(e, "unexpected payload size");
	return weft__emu_task_create(e, weft__emu_task_model_of(e, state(e), ev->thread),
				     weft__emu_ev_u32(ev, 0), weft__emu_ev_u32(ev, 4),
				     WEFT__TASK_PAUSE | WEFT__TASK_RELAX_NESTING);
}

/* The task channels show no task (after 6Tp, and 6Te of the outermost). */
static int chans_stopped(weft__emu *e, uint32_t t, uint32_t depth)
{
	if (weft__emu_set_depth(e, chan(e, t, CH_TASKID), weft__emu_null(), depth) < 0 ||
	    weft__emu_set(e, chan(e, t, CH_TYPE), weft__emu_null()) < 0)
		return -1;
	if (e->sys->procs[e->th[t].info->proc].rank >= 0)
		return weft__emu_set(e, chan(e, t, CH_RANK), weft__emu_null());
	return 0;
}

/* The task channels show `task`: its id, its type's value, the rank + 1. */
static int chans_task(weft__emu *e, uint32_t t, const weft__emu_task *task, uint32_t depth,
		      const char *what)
{
	const weft__emu_task_type *type =
		weft__emu_type_at(weft__emu_task_model_of(e, state(e), t), task->type);
	if (task->id == 0)
		return weft__emu_fail(e, "%stask id cannot be 0", what);
	if (type == NULL || type->value == 0)
		return weft__emu_fail(e, "%stask type gid cannot be 0", what);
	if (weft__emu_set_depth(e, chan(e, t, CH_TASKID), weft__emu_int(task->id), depth) < 0 ||
	    weft__emu_set(e, chan(e, t, CH_TYPE), weft__emu_int(type->value)) < 0)
		return -1;
	int64_t rank = e->sys->procs[e->th[t].info->proc].rank;
	if (rank >= 0)
		return weft__emu_set(e, chan(e, t, CH_RANK), weft__emu_int(rank + 1));
	return 0;
}

/* The transition of 6Tx, 6Tp, 6Tr or 6Te on the body of task `task`. */
static int task_transition(weft__emu *e, const weft__emu_ev *ev, weft__emu_tasks *tasks,
			   weft__emu_body_stack *s, weft__emu_task *task)
{
	int32_t t = (int32_t)ev->thread;
	switch (ev->v) {
	case 'x':
		return weft__emu_task_execute(e, tasks, s, t, task, 1);
	case 'e':
		return weft__emu_task_end(e, tasks, s, t, task, 1);
	case 'p':
		return weft__emu_task_pause(e, s, t, task, 1);
	default:
		return weft__emu_task_resume(e, s, t, task, 1);
	}
}

/*
 * 6Tx, 6Tp, 6Tr, 6Te: the body changes state on the thread's stack; 6Tx
 * and 6Te push and pop "Task: Running body"; the task channels then show
 * the body running on top (a nested 6Tx switches them to the inner task,
 * its 6Te back to the outer one), or nothing.
 */
static int task_update(weft__emu *e, const weft__emu_ev *ev)
{
	weft__emu_task_model *m = state(e);
	weft__emu_tasks *tasks = weft__emu_task_model_of(e, m, ev->thread);
	weft__emu_body_stack *s = &m->stacks[ev->thread];
	if (ev->payload_size < 4)
		return weft__emu_fail(e, "missing task id in payload");
	uint32_t id = weft__emu_ev_u32(ev, 0);
	weft__emu_body *bprev = weft__emu_body_running(s);
	weft__emu_task *prev = bprev != NULL ? bprev->task : NULL;
	weft__emu_task *task = weft__emu_task_find(e, tasks, id);
	if (task == NULL && e->error == NULL)
		return weft__emu_fail(e, "cannot find task with id %" PRIu32, id);
	if (task == NULL)
		return -1;
	if (task_transition(e, ev, tasks, s, task) < 0)
		return -1;
	weft__emu_body *bnext = weft__emu_body_running(s);
	weft__emu_task *next = bnext != NULL ? bnext->task : NULL;
	weft__emu_chan *ss = chan(e, ev->thread, CH_SUBSYSTEM);
	if ((ev->v == 'x' && weft__emu_push(e, ss, SS_TASK_BODY) < 0) ||
	    (ev->v == 'e' && weft__emu_pop(e, ss, SS_TASK_BODY) < 0))
		return -1;
	int rc;
	/* a 6Tx over a running body, or a 6Te back to one, switches tasks */
	int nested = (ev->v == 'x' && prev != NULL) || (ev->v == 'e' && next != NULL);
	if (nested) {
		if (prev == NULL || next == NULL)
			return weft__emu_fail(e, "cannot switch to or from a NULL task");
		if (prev == next)
			return weft__emu_fail(e, "cannot switch to the same task");
		rc = chans_task(e, ev->thread, next, s->n, "next ");
	} else if (ev->v == 'x' || ev->v == 'r') {
		rc = chans_task(e, ev->thread, next, s->n, "");
	} else {
		rc = chans_stopped(e, ev->thread, s->n);
	}
	if (rc < 0 || ev->v != 'x')
		return rc;
	/* a body that begins runs, inside "Task: Running body" */
	if (bnext == NULL || bnext->state != WEFT__BODY_RUNNING)
		return weft__emu_fail(e, "task body %" PRIu32 " not in running state on begin",
				      bnext != NULL ? bnext->id : 0);
	if (ss->cur.set && ss->cur.v != SS_TASK_BODY)
		return weft__emu_fail(e, "wrong subsystem state on task begin");
	return 0;
}

static int task_event(weft__emu *e, const weft__emu_ev *ev)
{
	switch (ev->v) {
	case 'C':
		weft__emu_warn(e, "got old 6TC event, ignoring");
		return 0;
	case 'c':
		return task_create(e, ev);
	case 'x':
	case 'e':
	case 'p':
	case 'r':
		return task_update(e, ev);
	default:
		return weft__emu_fail(e, "unexpected Nanos6 task event value");
	}
}

/* ---- The model ----------------------------------------------------------------------------- */

static int nanos6_event(weft__emu *e, const weft__emu_ev *ev)
{
	if (!e->th[ev->thread].active)
		return weft__emu_fail(e, "current thread %" PRId64 " not active",
				      e->th[ev->thread].info->tid);
	if (ev->c == 'T')
		return task_event(e, ev);
	if (ev->c == 'Y')
		return weft__emu_task_model_type_event(e, state(e), ev);
	if (simple_category(ev->c))
		return simple_event(e, ev);
	return weft__emu_fail(e, "unknown Nanos6 event category");
}

static int nanos6_create(weft__emu *e)
{
	return weft__emu_task_model_create(e, &weft__emu_model_nanos6);
}

/* Every thread starts Progressing (a CPU without a single running thread rests). */
static int nanos6_connect(weft__emu *e)
{
	for (uint32_t t = 0; t < e->sys->nthreads; t++)
		if (weft__emu_set(e, chan(e, t, CH_IDLE), weft__emu_int(IDLE_PROGRESSING)) < 0)
			return -1;
	return 0;
}

/* At the end no thread may be inside a subsystem. */
static int nanos6_finish(weft__emu *e)
{
	return weft__emu_task_model_end_check(e, &weft__emu_model_nanos6, CH_SUBSYSTEM,
					      "nanos6 subsystems");
}

static int nanos6_pcf(weft__emu *e, weft__emu_kind kind, weft__emu_pcf *pcf)
{
	(void)kind;
	return weft__emu_task_model_pcf(e, state(e), pcf, chans[CH_TYPE].type);
}

static const char *nanos6_label(weft__emu *e, uint32_t ch, int64_t value)
{
	return ch == CH_TYPE ? weft__emu_task_model_label(state(e), value) : NULL;
}

static void nanos6_free(weft__emu *e)
{
	weft__emu_task_model_destroy(e, &weft__emu_model_nanos6);
}

const weft__emu_model_spec weft__emu_model_nanos6 = {
	.id = '6', .name = "nanos6", .version = "1.1.0",
	.chans = chans, .nchans = CH_MAX,
	.create = nanos6_create, .connect = nanos6_connect, .event = nanos6_event,
	.finish = nanos6_finish, .pcf = nanos6_pcf, .label = nanos6_label, .free = nanos6_free,
};
