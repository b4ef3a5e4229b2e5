/* SPDX-License-Identifier: MIT */
/*
 * outputs/perfetto/perfetto_emu.c - the Perfetto output of an emulated
 * ovni trace (docs/perfetto.md, "Emulated ovni traces"): what ovniemu's
 * thread.prv and cpu.prv say, drawn as tracks and slices through the
 * Perfetto encoder's view sink (outputs/perfetto.h).
 *
 * The emulator (src/emu) replays the events in time order and hands over
 * its records (a row's channel takes a value at a time: weft__emu_record);
 * each record changes the slices of one line:
 *   - a process track per ovni process, a thread track per thread, with
 *     child tracks: "state" (type 4: Running, Paused, Cooling, Warming;
 *     Dead and Unknown draw nothing), "CPU" (type 6: the CPU the thread
 *     is on, named as in cpu.row), one per model channel that takes a
 *     value (named by its .pcf prefix: "nOS-V subsystem", a mark's title);
 *   - a process-like group "CPUs" with a track per CPU row ("CPU 0.1",
 *     "vCPU 0.*") whose slices are its running thread (types 2 and 1:
 *     "thread <tid>", args pid and tid), a counter "running threads"
 *     (type 3) and a child track per model channel;
 *   - a channel's value is a slice named by its label (or its number)
 *     from the record that sets it to the next that changes it; a stack
 *     channel's record carries its depth and the emulator its entries
 *     (weft__emu_record_stack): the slices nest as the entries do, those
 *     below an unchanged entry stay open;
 *   - the tasks of a model (nOS-V, Nanos6, OpenMP) are slices of one track
 *     per row, "<model> tasks", named by the task type's label with the
 *     id, body id, app id and rank as arguments: the records of its task
 *     channels at one time make one slice (the id channel drives it, the
 *     others name it and give its arguments). Their nesting follows the
 *     depth the id channel carries (the bodies on the thread's stack,
 *     weft__emu_set_depth) or, for OpenMP, the id channel's own stack: a
 *     task begun over another that still shows is its child.
 * Times are the trace's clock (as the generic Perfetto output's). Slices
 * still open at the end close at the last event's time, or at the
 * window's end (flagged "clipped", as are those open at its start).
 *
 * Memory: per row (thread or CPU) and line, the slices open and the last
 * value seen at each level, and the pending values of the task channels
 * until their time ends; nothing per event.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "emu/emu.h"
#include "outputs/emu_output.h"
#include "outputs/emu_shared.h"
#include "outputs/outfile.h"
#include "outputs/perfetto.h"
#include "outputs/view.h"
#include "outputs/writer.h"

/* Paraver types of the system channels (docs/emulation.md, section 2). */
enum { TH_STATE = 4, TH_CPU = 6, CPU_PID = 1, CPU_TID = 2, CPU_NRUN = 3 };
enum { STATE_DEAD = 3 };

#define NARGS 3

/* The task channels of a model (Paraver types; 0: none). */
typedef struct task_model {
	const char *model;          /* weft__emu_slot_info.model */
	const char *track;          /* its track's name */
	uint32_t id_type;           /* the task id: drives the slices */
	uint32_t name_type;         /* the task type: its label names them */
	int name_line;              /* the name channel has its own track too */
	uint32_t arg_type[NARGS];
	const char *arg_name[NARGS];
	uint8_t minus_one[NARGS];   /* the channel holds the value + 1 (rank) */
} task_model;

static const task_model task_models[] = {
	{ "nosv", "nOS-V tasks", 10, 11, 0, { 15, 12, 14 }, { "body", "app id", "rank" },
	  { 0, 0, 1 } },
	{ "nanos6", "Nanos6 tasks", 35, 36, 0, { 38, 0, 0 }, { "rank", NULL, NULL },
	  { 1, 0, 0 } },
	/* the label channel also holds work-sharing regions: a track of its own */
	{ "openmp", "OpenMP tasks", 52, 51, 1, { 0, 0, 0 }, { NULL, NULL, NULL }, { 0, 0, 0 } },
};
#define NTASK_MODELS (sizeof task_models / sizeof task_models[0])

enum { FIELD_ID = 0, FIELD_NAME = 1, FIELD_ARG = 2 };

/* What the records of a model channel slot do. */
typedef struct slot_role {
	int16_t group;              /* the task group it belongs to, -1 */
	uint8_t field;              /* FIELD_ID, FIELD_NAME, FIELD_ARG + k */
	uint8_t line;               /* it has a line (track) of its own */
	uint8_t stack;              /* a stack channel */
	const char *name;           /* its track's name (the .pcf prefix) */
	const char *category;       /* its model */
} slot_role;

/* A group of channels that makes one slice: a model's tasks, or (the
 * last group) the running thread of a CPU. */
typedef struct group_info {
	const task_model *tm;       /* NULL: the running thread */
	uint16_t name_slot;         /* the slot of the name channel */
	uint8_t id_stack;           /* the id channel is a stack (OpenMP) */
} group_info;

/* A slice at one level of a line: open, or the last one there. */
typedef struct level {
	int64_t value;              /* the channel's value; groups: the id */
	int64_t type;               /* groups: the name channel's value */
	int64_t args[NARGS];        /* groups: the arguments' channel values */
	int64_t paused;             /* groups: a task paused under the one above */
} level;

/* The slices of one track of one row. */
typedef struct line {
	uint32_t track;             /* view track id; 0 until declared */
	uint32_t open;              /* slices open (levels 0 .. open - 1) */
	uint32_t known;             /* levels holding a value (open or last) */
	uint32_t cap;
	level *levels;
} line;

/* The values a group's channels took at the current time. */
typedef struct group_state {
	int64_t id;
	int64_t type;
	int64_t args[NARGS];
	uint32_t depth;
	uint32_t nentries;          /* stack id channels: the entries copied */
	uint32_t cap;
	int32_t thread;             /* the thread whose channels the row shows, -1 */
	uint8_t dirty;
	int64_t *entries;
} group_state;

typedef struct pfe_writer {
	weft_trace *trace;
	weft__emu *emu;
	const weft__emu_system *sys;
	weft__perfetto_writer *pw;
	const weft__view_sink *sink;
	weft__outfile file;
	int file_open;
	weft__emu_window win;
	uint32_t nthreads, nrows, nslots;
	uint32_t nlines;            /* lines per row: slots, 2 system ones, groups */
	uint32_t ngroups;           /* task groups + the running thread */
	slot_role *roles;           /* per slot */
	group_info *groups;
	line *lines;                /* nrows * nlines */
	group_state *gstate;        /* nrows * ngroups */
	uint32_t *dirty;            /* group states changed at `now` */
	size_t ndirty;
	/* tracks and numbers */
	uint32_t *row_track;        /* per row: its thread or CPU track */
	uint32_t *proc_track;       /* per process */
	uint32_t cpus_track;
	int64_t *proc_pid, *thread_tid, cpus_pid;
	uint32_t ntracks;
	uint64_t now;               /* trace clock of the records being handled */
	uint64_t first;             /* trace clock of the emulator's time 0 */
	int clip;                   /* slices begun now are cut by the window */
	int error;                  /* WEFT_ENOMEM once an allocation failed */
	/* a record handed over by a part of a shared conversion (emu_shared.c):
	 * what the emulator knew of it, instead of asking this one */
	int replaying;
	int32_t replay_thread;
	const int64_t *replay_stack;
} pfe_writer;

/* The thread whose channels a record's row shows (weft__emu_record_thread). */
static int32_t record_thread(const pfe_writer *pf, const weft__emu_record *r)
{
	return pf->replaying ? pf->replay_thread : weft__emu_record_thread(pf->emu, r);
}

/* The entries of a stack channel's record (weft__emu_record_stack). */
static const int64_t *record_stack(const pfe_writer *pf, const weft__emu_record *r)
{
	return pf->replaying ? pf->replay_stack : weft__emu_record_stack(pf->emu, r);
}

#define SYS_LINE0 0u  /* threads: state; CPUs: the running threads counter */
#define SYS_LINE1 1u  /* threads: CPU affinity */

/* ---- Numbers ---------------------------------------------------------------------- */

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

/* 1 when `v` is a pid or tid Perfetto takes (int32, not 0). */
static int in_range(int64_t v)
{
	return v >= 1 && v <= WEFT__VIEW_NUMBER_MAX;
}

/* Fresh numbers: not in the sorted `used`, counted up from above its largest. */
typedef struct numbers {
	int64_t *used;
	size_t n;
	int64_t next;
} numbers;

static int64_t fresh(numbers *nb)
{
	for (;;) {
		int64_t v = nb->next;
		nb->next = v >= WEFT__VIEW_NUMBER_MAX ? 1 : v + 1;
		if (bsearch(&v, nb->used, nb->n, sizeof *nb->used, cmp_i64) == NULL)
			return v;
	}
}

/* A (key, number, index) to find repeated numbers in a scope. */
typedef struct keyed {
	int64_t key, number;
	size_t index;
} keyed;

static int cmp_keyed(const void *a, const void *b)
{
	const keyed *x = a, *y = b;
	if (x->key != y->key)
		return (x->key > y->key) - (x->key < y->key);
	if (x->number != y->number)
		return (x->number > y->number) - (x->number < y->number);
	return (x->index > y->index) - (x->index < y->index);
}

/*
 * out[i] = number of item i when it is in range and the first of its
 * scope (key) with it, else a fresh number. 0 or -1 (no memory).
 */
static int assign(numbers *nb, keyed *k, size_t n, int64_t *out)
{
	qsort(k, n, sizeof *k, cmp_keyed);
	for (size_t i = 0; i < n; i++) {
		int repeat = i > 0 && k[i].key == k[i - 1].key && k[i].number == k[i - 1].number;
		out[k[i].index] = in_range(k[i].number) && !repeat ? k[i].number : fresh(nb);
	}
	return 0;
}

/*
 * The pids (the process's, unique in the output), tids (the thread's,
 * unique in its process) and the CPU group's pid (new to the output), as
 * the generic output chooses them (outputs/view.h).
 */
static int assign_numbers(pfe_writer *pf)
{
	const weft__emu_system *s = pf->sys;
	size_t n = s->nprocs + s->nthreads;
	numbers nb = { malloc((n ? n : 1) * sizeof(int64_t)), 0, 1 };
	keyed *k = malloc((n ? n : 1) * sizeof *k);
	pf->proc_pid = malloc((s->nprocs ? s->nprocs : 1) * sizeof *pf->proc_pid);
	pf->thread_tid = malloc((s->nthreads ? s->nthreads : 1) * sizeof *pf->thread_tid);
	int rc = nb.used && k && pf->proc_pid && pf->thread_tid ? 0 : -1;
	for (size_t i = 0; rc == 0 && i < n; i++) {
		int64_t v = i < s->nprocs ? s->procs[i].pid : s->threads[i - s->nprocs].tid;
		if (in_range(v)) {
			nb.used[nb.n++] = v;
			if (v >= nb.next)
				nb.next = v == WEFT__VIEW_NUMBER_MAX ? 1 : v + 1;
		}
	}
	if (rc == 0) {
		qsort(nb.used, nb.n, sizeof *nb.used, cmp_i64);
		for (size_t i = 0; i < s->nprocs; i++)
			k[i] = (keyed){ 0, s->procs[i].pid, i };
		assign(&nb, k, s->nprocs, pf->proc_pid);
		for (size_t i = 0; i < s->nthreads; i++)
			k[i] = (keyed){ (int64_t)s->threads[i].proc, s->threads[i].tid, i };
		assign(&nb, k, s->nthreads, pf->thread_tid);
		pf->cpus_pid = fresh(&nb);
	}
	free(nb.used);
	free(k);
	return rc;
}

/* ---- Tracks -------------------------------------------------------------------------- */

/* Declares a track to the encoder; its id. */
static uint32_t declare(pfe_writer *pf, weft__view_track_kind kind, uint32_t parent,
			int64_t pid, int64_t tid, int32_t stream, const char *name)
{
	weft__view_track t = { ++pf->ntracks, parent, kind, pid, tid, stream, name,
			       kind >= WEFT__TRACK_CHANNEL ? name : NULL };
	pf->sink->track(pf->sink->ctx, &t);
	return t.id;
}

/* The track of process `p`: its node's path, and its rank when it has one. */
static uint32_t proc_track(pfe_writer *pf, size_t p)
{
	if (pf->proc_track[p] != 0)
		return pf->proc_track[p];
	const weft__emu_proc *proc = &pf->sys->procs[p];
	const weft_node *node = weft_trace_node(pf->trace, proc->node);
	char name[512];
	if (proc->rank >= 0)
		snprintf(name, sizeof name, "%s (rank %" PRId64 ")", node->path, proc->rank);
	else
		snprintf(name, sizeof name, "%s", node->path);
	pf->proc_track[p] = declare(pf, WEFT__TRACK_PROCESS, 0, pf->proc_pid[p], 0, -1, name);
	return pf->proc_track[p];
}

/* A CPU's label without Paraver's leading blank: "CPU 0.1", "vCPU 0.*". */
static void cpu_name(const pfe_writer *pf, size_t cpu, char *buf, size_t cap)
{
	char label[64];
	weft__emu_row_label(pf->sys, WEFT__EMU_CPU, cpu, label, sizeof label);
	snprintf(buf, cap, "%s", label[0] == ' ' ? label + 1 : label);
}

/* The track of a row: a thread (its node's name) or a CPU (in "CPUs"). */
static uint32_t row_track(pfe_writer *pf, uint32_t row)
{
	if (pf->row_track[row] != 0)
		return pf->row_track[row];
	const weft__emu_system *s = pf->sys;
	if (row < pf->nthreads) {
		const weft__emu_thread *th = &s->threads[row];
		uint32_t parent = proc_track(pf, th->proc);
		const weft_node *node = weft_trace_node(pf->trace, th->node);
		pf->row_track[row] = declare(pf, WEFT__TRACK_THREAD, parent, pf->proc_pid[th->proc],
					     pf->thread_tid[row], (int32_t)th->stream, node->name);
	} else {
		if (pf->cpus_track == 0)
			pf->cpus_track = declare(pf, WEFT__TRACK_PROCESS, 0, pf->cpus_pid, 0, -1,
						 "CPUs");
		char name[64];
		cpu_name(pf, row - pf->nthreads, name, sizeof name);
		pf->row_track[row] = declare(pf, WEFT__TRACK_CHANNEL, pf->cpus_track, pf->cpus_pid,
					     0, -1, name);
	}
	return pf->row_track[row];
}

static line *line_at(pfe_writer *pf, uint32_t row, uint32_t k)
{
	return &pf->lines[(size_t)row * pf->nlines + k];
}

/* The track of line `k` of `row` (declared with its parents at first use). */
static uint32_t line_track(pfe_writer *pf, uint32_t row, uint32_t k)
{
	line *ln = line_at(pf, row, k);
	if (ln->track != 0)
		return ln->track;
	uint32_t parent = row_track(pf, row);
	int thread = row < pf->nthreads;
	int64_t pid = thread ? pf->proc_pid[pf->sys->threads[row].proc] : pf->cpus_pid;
	int64_t tid = thread ? pf->thread_tid[row] : 0;
	weft__view_track_kind kind = WEFT__TRACK_CHANNEL;
	const char *name;
	if (k < pf->nslots) {
		name = pf->roles[k].name;
	} else if (k == pf->nslots + SYS_LINE0) {
		kind = thread ? WEFT__TRACK_STATE : WEFT__TRACK_COUNTER;
		name = thread ? "state" : "running threads";
	} else if (k == pf->nslots + SYS_LINE1) {
		name = "CPU";
	} else {
		const group_info *g = &pf->groups[k - pf->nslots - 2];
		if (g->tm == NULL) {  /* the running thread: on the CPU's own track */
			ln->track = parent;
			return parent;
		}
		name = g->tm->track;
	}
	ln->track = declare(pf, kind, parent, pid, tid, -1, name);
	return ln->track;
}

/* ---- Slices -------------------------------------------------------------------------- */

/* A slice begins at `now` on `track`. */
static void put_begin(pfe_writer *pf, uint32_t track, const char *name, const char *category,
		      const weft_field *args, int nargs)
{
	weft__view_track t = { .id = track };
	weft__view_item it = { .name = name, .name_len = (uint32_t)strlen(name),
			       .category = category, .args = args, .arg_count = nargs,
			       .flags = pf->clip || pf->win.snapshot ? WEFT__VIEW_CLIPPED : 0 };
	pf->sink->begin(pf->sink->ctx, &t, pf->now, &it);
}

/* The innermost slices of a line close at `now` until `keep` are left. */
static void close_to(pfe_writer *pf, line *ln, uint32_t keep, unsigned flags)
{
	weft__view_track t = { .id = ln->track };
	weft__view_item it = { .flags = flags };
	while (ln->open > keep) {
		ln->open--;
		pf->sink->end(pf->sink->ctx, &t, pf->now, &it);
	}
}

/* Room for `n` levels; 0 or -1 (out of memory: the output fails). */
static int reserve(pfe_writer *pf, line *ln, uint32_t n)
{
	if (n <= ln->cap)
		return 0;
	uint32_t cap = ln->cap ? ln->cap : 4;
	while (cap < n)
		cap *= 2;
	level *p = realloc(ln->levels, cap * sizeof *p);
	if (p == NULL) {
		pf->error = weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
		return -1;
	}
	memset(p + ln->cap, 0, (cap - ln->cap) * sizeof *p);
	ln->levels = p;
	ln->cap = cap;
	return 0;
}

/* Names a value of a line: into buf (a number) or a label. */
typedef const char *(*namer)(pfe_writer *pf, uint32_t k, int64_t value, char *buf, size_t cap);

/* A model channel's value: its label, or its number. */
static const char *slot_value_name(pfe_writer *pf, uint32_t k, int64_t value, char *buf,
				   size_t cap)
{
	const char *label = weft__emu_value_label(pf->emu, (uint16_t)k, value);
	if (label != NULL)
		return label;
	snprintf(buf, cap, "%" PRId64, value);
	return buf;
}

/* A thread state (type 4). */
static const char *state_name(pfe_writer *pf, uint32_t k, int64_t value, char *buf, size_t cap)
{
	static const char *const names[] = { "Unknown", "Running", "Paused", "Dead", "Cooling",
					     "Warming" };
	(void)pf;
	(void)k;
	if (value >= 0 && value < 6)
		return names[value];
	snprintf(buf, cap, "state %" PRId64, value);
	return buf;
}

/* A thread's CPU (type 6: the CPU row + 1). */
static const char *affinity_name(pfe_writer *pf, uint32_t k, int64_t value, char *buf,
				 size_t cap)
{
	(void)k;
	if (value >= 1 && (uint64_t)value <= pf->sys->ncpus)
		cpu_name(pf, (size_t)value - 1, buf, cap);
	else
		snprintf(buf, cap, "CPU row %" PRId64, value);
	return buf;
}

/*
 * Line `k` of `row` now shows the stack target[0..n) (n 0: nothing): the
 * slices of the entries both share stay open, the others close, the new
 * ones begin. 0 or -1 (out of memory).
 */
static int line_apply(pfe_writer *pf, uint32_t row, uint32_t k, const int64_t *target,
		      uint32_t n, namer name, const char *category)
{
	line *ln = line_at(pf, row, k);
	if (n > WEFT__VIEW_MAX_DEPTH)
		n = WEFT__VIEW_MAX_DEPTH;
	uint32_t p = 0;
	while (p < ln->open && p < n && ln->levels[p].value == target[p])
		p++;
	close_to(pf, ln, p, 0);
	if (n == p)
		return 0;
	if (reserve(pf, ln, n) < 0)
		return -1;
	uint32_t track = line_track(pf, row, k);
	for (uint32_t i = p; i < n; i++) {
		char buf[96];
		ln->levels[i].value = target[i];
		put_begin(pf, track, name(pf, k, target[i], buf, sizeof buf), category, NULL, 0);
	}
	ln->open = n;
	ln->known = ln->known > n ? ln->known : n;
	return 0;
}

/* ---- Groups (tasks, the running thread) ----------------------------------------------- */

static group_state *gstate_at(pfe_writer *pf, uint32_t row, uint32_t g)
{
	return &pf->gstate[(size_t)row * pf->ngroups + g];
}

/* Marks a group state changed at this time (flushed when the time moves on). */
static void group_touch(pfe_writer *pf, uint32_t row, uint32_t g)
{
	group_state *gs = gstate_at(pf, row, g);
	if (!gs->dirty) {
		gs->dirty = 1;
		pf->dirty[pf->ndirty++] = row * pf->ngroups + g;
	}
}

/* A group's slice begins at `now`: a task or a running thread. */
static void group_begin(pfe_writer *pf, uint32_t g, uint32_t track, const level *lv)
{
	const group_info *gi = &pf->groups[g];
	weft_field args[2 + NARGS];
	char buf[96];
	const char *name = NULL;
	int n = 0;
	memset(args, 0, sizeof args);
	if (gi->tm == NULL) {
		snprintf(buf, sizeof buf, "thread %" PRId64, lv->value);
		args[n++] = (weft_field){ .name = "pid", .name_len = 3, .type = WEFT_TYPE_I64,
					  .v.i = lv->args[0] };
		args[n++] = (weft_field){ .name = "tid", .name_len = 3, .type = WEFT_TYPE_I64,
					  .v.i = lv->value };
		put_begin(pf, track, buf, "ovni", args, n);
		return;
	}
	if (lv->type != 0)
		name = weft__emu_value_label(pf->emu, gi->name_slot, lv->type);
	if (name == NULL) {
		snprintf(buf, sizeof buf, "task %" PRId64, lv->value);
		name = buf;
	}
	args[n++] = (weft_field){ .name = "id", .name_len = 2, .type = WEFT_TYPE_I64,
				  .v.i = lv->value };
	if (lv->paused)
		args[n++] = (weft_field){ .name = "paused", .name_len = 6, .type = WEFT_TYPE_BOOL,
					  .v.u = 1 };
	for (int i = 0; i < NARGS; i++)
		if (gi->tm->arg_type[i] != 0 && lv->args[i] != 0)
			args[n++] = (weft_field){ .name = gi->tm->arg_name[i],
						  .name_len = (uint32_t)strlen(gi->tm->arg_name[i]),
						  .type = WEFT_TYPE_I64,
						  .v.i = lv->args[i] - gi->tm->minus_one[i] };
	put_begin(pf, track, name, gi->tm->model, args, n);
}

static int same_level(const level *a, const level *b)
{
	return memcmp(a, b, sizeof *a) == 0;
}

/*
 * The levels of the thread a group's row shows (its own, or those of the
 * thread a CPU runs): the last task slice at each level of its stack.
 */
static const line *thread_levels(pfe_writer *pf, const group_state *gs, uint32_t g)
{
	if (gs->thread < 0 || (uint32_t)gs->thread >= pf->nthreads)
		return NULL;
	return line_at(pf, (uint32_t)gs->thread, pf->nslots + 2 + g);
}

/*
 * Group `g` of `row` shows what its channels hold now. A stack id channel
 * gives every level (levels unchanged at the bottom stay open; a level
 * begun again with the same id as its last slice gets that slice's name
 * and arguments). Otherwise the id is the top at the depth it carries
 * (1 when none): the open slices below it stay, the one at its level
 * stays when it is the same task, else closes with those above it. The
 * levels below that show nothing (bodies paused under this one: nOS-V
 * runs a task over a paused one) begin again as the last tasks of the
 * thread at those levels, flagged "paused", as long as this one shows.
 */
static int group_flush(pfe_writer *pf, uint32_t row, uint32_t g)
{
	group_state *gs = gstate_at(pf, row, g);
	line *ln = line_at(pf, row, pf->nslots + 2 + g);
	gs->dirty = 0;
	if (gs->id == 0) {
		close_to(pf, ln, 0, 0);
		return 0;
	}
	level cur = { gs->id, gs->type, { gs->args[0], gs->args[1], gs->args[2] }, 0 };
	uint32_t from, to, enclosing = 0;
	if (gs->nentries > 0) {
		to = gs->nentries > WEFT__VIEW_MAX_DEPTH ? WEFT__VIEW_MAX_DEPTH : gs->nentries;
		from = 0;
		while (from < ln->open && from < to && ln->levels[from].value == gs->entries[from])
			from++;
		close_to(pf, ln, from, 0);
		if (from == to)
			return 0;
	} else {
		uint32_t d = gs->depth == 0 ? 1 : gs->depth;
		d = d > WEFT__VIEW_MAX_DEPTH ? WEFT__VIEW_MAX_DEPTH : d;
		from = d - 1 < ln->open ? d - 1 : ln->open;
		if (from < ln->open && same_level(&ln->levels[from], &cur)) {
			close_to(pf, ln, from + 1, 0);
			return 0;
		}
		if (from == ln->open && from > 0 && same_level(&ln->levels[from - 1], &cur))
			return 0;
		const line *th = thread_levels(pf, gs, g);
		to = from;
		while (th != NULL && to < d - 1 && to < th->known)
			to++;
		enclosing = to - from;
		to++;
	}
	close_to(pf, ln, from, 0);
	if (reserve(pf, ln, to) < 0)
		return -1;
	uint32_t track = line_track(pf, row, pf->nslots + 2 + g);
	for (uint32_t i = from; i < to; i++) {
		level *lv = &ln->levels[i];
		if (i == to - 1) {
			*lv = cur;
		} else if (enclosing > 0) {
			*lv = thread_levels(pf, gs, g)->levels[i];
			lv->paused = 1;
		} else if (!(i < ln->known && lv->value == gs->entries[i])) {
			*lv = (level){ .value = gs->entries[i] };
		}
		group_begin(pf, g, track, lv);
	}
	ln->open = to;
	ln->known = ln->known > to ? ln->known : to;
	return 0;
}

/* Every group changed at `now` shows its new state. */
static int flush_groups(pfe_writer *pf)
{
	int rc = 0;
	for (size_t i = 0; i < pf->ndirty; i++)
		if (group_flush(pf, pf->dirty[i] / pf->ngroups, pf->dirty[i] % pf->ngroups) < 0)
			rc = -1;
	pf->ndirty = 0;
	return rc;
}

/* A record of a group's channel: its value waits for the end of the time. */
static int group_record(pfe_writer *pf, uint32_t row, uint32_t g, unsigned field,
			const weft__emu_record *r)
{
	group_state *gs = gstate_at(pf, row, g);
	if (field == FIELD_ID) {
		gs->id = r->value;
		gs->depth = r->depth;
		gs->thread = record_thread(pf, r);
		gs->nentries = 0;
		const int64_t *st = pf->groups[g].id_stack && r->value != 0
				    ? record_stack(pf, r) : NULL;
		if (st != NULL) {
			if (r->depth > gs->cap) {
				int64_t *p = realloc(gs->entries, r->depth * sizeof *p);
				if (p == NULL) {
					pf->error = weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET,
								"out of memory");
					return -1;
				}
				gs->entries = p;
				gs->cap = r->depth;
			}
			memcpy(gs->entries, st, r->depth * sizeof *st);
			gs->nentries = r->depth;
		}
	} else if (field == FIELD_NAME) {
		gs->type = r->value;
	} else {
		gs->args[field - FIELD_ARG] = r->value;
	}
	group_touch(pf, row, g);
	return 0;
}

/* ---- Records ------------------------------------------------------------------------- */

/* A record of a system channel: thread state and CPU, a CPU's running thread. */
static int system_record(pfe_writer *pf, uint32_t row, const weft__emu_record *r)
{
	int64_t v = r->value;
	uint32_t base = pf->nslots;
	if (r->kind == WEFT__EMU_THREAD) {
		if (r->type == TH_STATE)
			return line_apply(pf, row, base + SYS_LINE0, &v,
					  v != 0 && v != STATE_DEAD, state_name, "ovni");
		if (r->type == TH_CPU)
			return line_apply(pf, row, base + SYS_LINE1, &v, v != 0, affinity_name,
					  "ovni");
		return 0;  /* type 2, the TID: the thread track itself */
	}
	uint32_t running = pf->ngroups - 1;
	if (r->type == CPU_TID) {
		gstate_at(pf, row, running)->id = v;
		group_touch(pf, row, running);
	} else if (r->type == CPU_PID) {
		gstate_at(pf, row, running)->args[0] = v;
		group_touch(pf, row, running);
	} else if (r->type == CPU_NRUN) {
		weft__view_track t = { .id = line_track(pf, row, base + SYS_LINE0) };
		pf->sink->counter(pf->sink->ctx, &t, pf->now, (double)v);
	}
	return 0;
}

/* The emulator's sink: one record. */
static int on_record(void *ctx, const weft__emu_record *r)
{
	pfe_writer *pf = ctx;
	if (!pf->win.opened || (r->kind != WEFT__EMU_THREAD && r->kind != WEFT__EMU_CPU))
		return 0;  /* the breakdown traces are Paraver's */
	if (pf->first == 0)
		pf->first = weft__emu_first_time(pf->emu);
	uint64_t t = r->time + pf->first;
	if (t != pf->now) {
		if (flush_groups(pf) < 0)
			return -1;
		pf->now = t;
	}
	uint32_t row = r->kind == WEFT__EMU_THREAD ? r->row : pf->nthreads + r->row;
	if (row >= pf->nrows)
		return 0;
	if (r->slot == WEFT__EMU_NO_SLOT)
		return system_record(pf, row, r) < 0 ? -1 : 0;
	if (r->slot >= pf->nslots)
		return 0;
	const slot_role *sr = &pf->roles[r->slot];
	if (sr->group >= 0 && group_record(pf, row, (uint32_t)sr->group, sr->field, r) < 0)
		return -1;
	if (!sr->line)
		return 0;
	const int64_t *st = sr->stack && r->value != 0 ? record_stack(pf, r) : NULL;
	if (st != NULL)
		return line_apply(pf, row, r->slot, st, r->depth, slot_value_name, sr->category);
	return line_apply(pf, row, r->slot, &r->value, r->value != 0, slot_value_name,
			  sr->category);
}

/* ---- Setup ----------------------------------------------------------------------------- */

/* The task model of a slot (its group) and the field it gives, or -1. */
static int find_field(const weft__emu_slot_info *si, size_t *model)
{
	for (size_t m = 0; m < NTASK_MODELS; m++) {
		const task_model *tm = &task_models[m];
		if (strcmp(si->model, tm->model) != 0)
			continue;
		*model = m;
		if (si->type == tm->id_type)
			return FIELD_ID;
		if (si->type == tm->name_type)
			return FIELD_NAME;
		for (int i = 0; i < NARGS; i++)
			if (tm->arg_type[i] != 0 && si->type == tm->arg_type[i])
				return FIELD_ARG + i;
	}
	return -1;
}

/*
 * The role of every slot: the task groups of the enabled models that
 * have an id channel (then the running thread's group), and the lines.
 */
static int build_roles(pfe_writer *pf)
{
	int16_t group_of[NTASK_MODELS];
	weft__emu_slot_info si;
	pf->nslots = weft__emu_slot_count(pf->emu);
	pf->roles = calloc(pf->nslots ? pf->nslots : 1, sizeof *pf->roles);
	pf->groups = calloc(NTASK_MODELS + 1, sizeof *pf->groups);
	if (pf->roles == NULL || pf->groups == NULL)
		return -1;
	for (size_t m = 0; m < NTASK_MODELS; m++)
		group_of[m] = -1;
	for (uint32_t s = 0; s < pf->nslots; s++) {
		size_t m;
		weft__emu_slot_describe(pf->emu, (uint16_t)s, &si);
		if (find_field(&si, &m) == FIELD_ID) {
			group_of[m] = (int16_t)pf->ngroups;
			pf->groups[pf->ngroups++] = (group_info){ &task_models[m], 0,
								  (uint8_t)si.stack };
		}
	}
	for (uint32_t s = 0; s < pf->nslots; s++) {
		size_t m = 0;
		weft__emu_slot_describe(pf->emu, (uint16_t)s, &si);
		int field = find_field(&si, &m);
		slot_role *sr = &pf->roles[s];
		*sr = (slot_role){ .group = -1, .line = 1, .stack = (uint8_t)si.stack,
				   .name = si.prefix ? si.prefix : si.name, .category = si.model };
		if (field < 0 || group_of[m] < 0)
			continue;
		sr->group = group_of[m];
		sr->field = (uint8_t)field;
		sr->line = field == FIELD_NAME && task_models[m].name_line;
		if (field == FIELD_NAME)
			pf->groups[group_of[m]].name_slot = (uint16_t)s;
	}
	pf->groups[pf->ngroups++] = (group_info){ NULL, 0, 0 };
	return 0;
}

/* The rows, lines, groups and numbers of the emulated system. */
static int build(pfe_writer *pf)
{
	pf->sys = weft__emu_system_of(pf->emu);
	pf->nthreads = (uint32_t)pf->sys->nthreads;
	pf->nrows = pf->nthreads + (uint32_t)pf->sys->ncpus;
	if (build_roles(pf) < 0 || assign_numbers(pf) < 0)
		return -1;
	pf->nlines = pf->nslots + 2 + pf->ngroups;
	size_t rows = pf->nrows ? pf->nrows : 1;
	pf->lines = calloc(rows * pf->nlines, sizeof *pf->lines);
	pf->gstate = calloc(rows * pf->ngroups, sizeof *pf->gstate);
	pf->dirty = malloc(rows * pf->ngroups * sizeof *pf->dirty);
	pf->row_track = calloc(rows, sizeof *pf->row_track);
	pf->proc_track = calloc(pf->sys->nprocs ? pf->sys->nprocs : 1, sizeof *pf->proc_track);
	return pf->lines && pf->gstate && pf->dirty && pf->row_track && pf->proc_track ? 0 : -1;
}

static void pfe_free_impl(pfe_writer *pf)
{
	if (pf == NULL)
		return;
	if (pf->file_open)
		weft__outfile_abort(&pf->file);
	weft__perfetto_writer_free(pf->pw);
	weft__emu_free(pf->emu);
	for (size_t i = 0; pf->lines != NULL && i < (size_t)pf->nrows * pf->nlines; i++)
		free(pf->lines[i].levels);
	for (size_t i = 0; pf->gstate != NULL && i < (size_t)pf->nrows * pf->ngroups; i++)
		free(pf->gstate[i].entries);
	free(pf->lines);
	free(pf->gstate);
	free(pf->dirty);
	free(pf->roles);
	free(pf->groups);
	free(pf->row_track);
	free(pf->proc_track);
	free(pf->proc_pid);
	free(pf->thread_tid);
	free(pf);
}

/* ---- The writer -------------------------------------------------------------------------- */

/*
 * The output file, the emulator, the tables and the encoder: *out, or
 * < 0 said in the report (nothing left).
 */
static int pfe_start(weft_output_writer *w, pfe_writer **out)
{
	weft_convert_report *r = w->job.report;
	pfe_writer *pf = calloc(1, sizeof *pf);
	*out = NULL;
	if (pf == NULL) {
		weft__convert_say(r, "out of memory");
		return WEFT_ENOMEM;
	}
	int rc = weft__outfile_open(&pf->file, w->options.path, w->options.force,
				    w->options.remove_on_signal);
	if (rc < 0) {
		weft__convert_say(r, "%s", weft_last_error());
		free(pf);
		return rc;
	}
	pf->file_open = 1;
	pf->trace = w->job.trace;
	weft__emu_options eo = { .all_models = w->options.all_models };
	weft__emu_sink sink = { pf, on_record };
	rc = weft__emu_create(w->job.trace, &eo, &sink, &pf->emu);
	if (rc < 0)
		weft__convert_say(r, "cannot emulate the trace: %s", weft_last_error());
	if (rc == 0 && build(pf) < 0)
		rc = weft__convert_fail(r, "cannot start the output",
					weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET,
						    "out of memory"));
	if (rc == 0) {
		weft__perfetto_options o = { .background = 1,
					     .write_behind = pf->file.tmp_path != NULL };
		rc = weft__perfetto_writer_create_with(pf->file.fd, &o, &pf->pw);
		if (rc < 0)
			weft__convert_fail(r, "cannot start the output", rc);
	}
	if (rc < 0) {
		pfe_free_impl(pf);
		return rc;
	}
	pf->sink = weft__perfetto_writer_sink(pf->pw);
	weft__emu_window_init(&pf->win, w);
	*out = pf;
	return 0;
}

static int pfe_create(weft_output_writer *w)
{
	const char *cfg = w->options.ovni_cfg;
	w->filter = (weft_filter){ .order = WEFT_ORDER_TIME };
	if (w->follower)
		return 0; /* another rank's part: emu_shared.c, no output */
	int rc = weft__emu_output_check(w, w->options.breakdown
					   ? "the breakdown traces are Paraver's (-t paraver "
					     "--breakdown)"
					   : cfg != NULL && *cfg ? "the .cfg views are Paraver's "
					     "(-t paraver --ovni-cfg DIR)" : NULL);
	pfe_writer *pf = NULL;
	if (rc == 0)
		rc = pfe_start(w, &pf);
	if (rc < 0)
		return rc;
	weft__trace_threads_note(w->job.trace, 2); /* the encoder writes behind on a thread */
	weft__emu_output_say_models(w, pf->emu);
	w->impl = pf;
	return 0;
}

/* The window began: the groups of its first state begin at its start, clipped. */
static int window_began(pfe_writer *pf)
{
	pf->clip = 1;
	int rc = flush_groups(pf);
	pf->clip = 0;
	return rc;
}

/* One event to the emulator; a refused trace or the window's end stops the reading (1). */
static int pfe_event(weft_output_writer *w, const weft_event *ev)
{
	pfe_writer *pf = w->impl;
	int rc = weft__emu_window_step(&pf->win, pf->emu, ev);
	if (rc == 1)
		return 1;
	if (rc < 0 || (rc == 2 && window_began(pf) < 0))
		return pf->error ? pf->error : WEFT_EIO;
	rc = weft__emu_event(pf->emu, ev);
	if (rc == WEFT_EFORMAT)
		return 1;
	if (rc < 0 && pf->error < 0)
		return pf->error;  /* the sink's: out of memory */
	return rc;
}

/*
 * The end of the output: the pending groups, then every slice still open
 * closes at the window's end (clipped) or the last event's time.
 */
static int close_all(pfe_writer *pf)
{
	int rc = 0;
	if (!pf->win.opened && (rc = weft__emu_window_open(&pf->win, pf->emu)) == 0)
		rc = window_began(pf);
	if (rc == 0)
		rc = flush_groups(pf);
	if (weft__emu_event_count(pf->emu) == 0)
		return rc;
	uint64_t last = weft__emu_now(pf->emu) + weft__emu_first_time(pf->emu);
	unsigned flags = 0;
	if (pf->win.cut) {
		last = pf->win.to;
		flags = WEFT__VIEW_CLIPPED;
	}
	pf->now = last > pf->now ? last : pf->now;
	for (size_t i = 0; i < (size_t)pf->nrows * pf->nlines; i++)
		close_to(pf, &pf->lines[i], 0, flags);
	return rc;
}

static int pfe_finish(weft_output_writer *w, int failed)
{
	pfe_writer *pf = w->impl;
	weft_convert_report *r = w->job.report;
	int refused;
	int rc = weft__emu_output_end(w, pf->emu, &pf->win, failed, "--allow-loss keeps the "
				      "slices before the error, as ovniemu keeps its records",
				      &refused);
	if (rc < 0)
		return rc;
	rc = close_all(pf);
	if (rc < 0)
		return weft__convert_fail(r, "writing the output failed",
					  pf->error ? pf->error : rc);
	rc = weft__perfetto_writer_finish(pf->pw);
	weft__perfetto_writer_free(pf->pw);
	pf->pw = NULL;
	if (rc < 0)
		return weft__convert_fail(r, "writing the output failed", rc);
	pf->file_open = 0;
	if ((rc = weft__outfile_commit(&pf->file)) < 0) {
		weft__convert_say(r, "%s", weft_last_error());
		return rc;
	}
	r->data_lost |= refused;
	return 0;
}

static void pfe_free(weft_output_writer *w)
{
	pfe_free_impl(w->impl);
	w->impl = NULL;
}

/* ---- On looms shared among threads and ranks (emu_shared.c) --------------------------- */

/* A time window is one emulator's: the state at its start is every row's. */
static int can_share(const weft_output_writer *w)
{
	const pfe_writer *pf = w->impl;
	return pf != NULL && !pf->win.windowed;
}

static weft__emu *emulator(void *w)
{
	return ((pfe_writer *)w)->emu;
}

/* A record of a part, with what its emulator knew of it. */
static int put_record(void *w, const weft__emu_record *r, int32_t thread,
		      const int64_t *stack)
{
	pfe_writer *pf = w;
	pf->replaying = 1;
	pf->replay_thread = thread;
	pf->replay_stack = stack;
	int rc = on_record(pf, r);
	pf->replaying = 0;
	return rc < 0 ? (pf->error ? pf->error : WEFT_ENOMEM) : 0;
}

static int failed(void *w)
{
	return ((pfe_writer *)w)->error != 0;
}

/* Starts over from nothing: the output file, the emulator, the tables. */
static int restart(weft_output_writer *w)
{
	pfe_writer *pf = NULL;
	pfe_free_impl(w->impl);
	w->impl = NULL;
	int rc = pfe_start(w, &pf);
	w->impl = pf;
	return rc;
}

static const weft__emu_target perfetto_target = {
	.lines = 0, .can_share = can_share, .emulator = emulator, .put_record = put_record,
	.failed = failed, .restart = restart,
};

static int pfe_convert_shared(weft_output_writer *w)
{
	return weft__emu_convert_shared(w, &perfetto_target);
}

const weft__writer_ops weft__perfetto_emu_writer_ops = {
	.by_stream = 0,
	.create = pfe_create,
	.event = pfe_event,
	.read_failed = weft__emu_output_read_failed,
	.finish = pfe_finish,
	.free = pfe_free,
	.convert_shared = pfe_convert_shared,
};
