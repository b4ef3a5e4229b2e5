/* SPDX-License-Identifier: MIT */
/*
 * emu/emu_api.c - the public face of the ovni emulation (weft/emu.h): a
 * thin layer over the emulator of emu.h. It owns a time-ordered cursor,
 * hands every event to the emulator, and gives out the records the
 * emulator writes as changes with their names and labels.
 *
 * The records come from the emulator's sink while it handles one event:
 * they wait in a queue (at most the row channels one event changes) that
 * weft_emu_next() drains before it reads the next event. So while a
 * change is given out, the emulator's state is the one right after its
 * event, which is where the stacks of the stack channels are read.
 *
 * Names: a model channel's title is its .pcf prefix, its .pcf name comes
 * from the .pcf the emulator renders (parsed once at creation: the types
 * are known then, only their value labels grow); the thread and CPU
 * channels of the system have fixed names (ovniemu's, and its .cfg
 * window names for the CPU ones, which its .pcf leaves out).
 *
 * Map:
 *   names     system channels, the .pcf names of the types
 *   objects   threads, CPUs, models
 *   changes   the sink's queue, labels, stacks, weft_emu_next()
 *   life      create, free, diagnostics
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "emu/engine.h"
#include "weft/emu.h"

/* A system channel of a row: what weft_emu_change says of it. */
typedef struct sys_chan {
	uint32_t type;
	const char *channel;  /* ovniemu's channel name */
	const char *title;    /* its .pcf name (the CPU's: its .cfg window's) */
} sys_chan;

static const sys_chan thread_sys[] = {
	{ 6, "cpu_gindex", "Thread: CPU affinity" },
	{ 2, "tid_active", "Thread: TID of the ACTIVE thread" },
	{ 4, "state", "Thread: thread state" },
};

static const sys_chan cpu_sys[] = {
	{ 2, "tid_running", "CPU: TID of the RUNNING thread" },
	{ 1, "pid_running", "CPU: PID of the RUNNING thread" },
	{ 3, "nrunning", "CPU: Number of RUNNING threads" },
};

#define NSYS 3

/* The labels of the thread states (type 4), by value. */
static const char *const state_labels[] = { "Unknown", "Running", "Paused", "Dead",
					    "Cooling", "Warming" };

/* A thread and its label's text. */
typedef struct thread_entry {
	weft_emu_thread_info info;
	char label[64];
} thread_entry;

typedef struct cpu_entry {
	weft_emu_cpu_info info;
	char label[64];
} cpu_entry;

/* The .pcf name of a type in one kind of trace. */
typedef struct type_name {
	uint32_t type;
	char *name;
} type_name;

struct weft_emu {
	weft__emu *emu;
	weft_trace *trace;
	weft_cursor *cursor;
	weft_emu_options options;
	thread_entry *threads;
	cpu_entry *cpus;
	type_name *names[2];         /* per object kind */
	size_t nnames[2];
	/* the records of the event being handed out */
	weft__emu_record *queue;
	size_t queued, queue_cap, next;
	int queue_failed;
	uint32_t ev_stream;
	uint64_t ev_offset;
	/* the change given out, and its stack */
	weft_emu_change change;
	int64_t *stack;
	size_t stack_cap;
	int done;
	int status;                  /* what next() returns once done */
};

void weft_emu_options_init(weft_emu_options *options)
{
	memset(options, 0, sizeof *options);
}

/* ---- Names ------------------------------------------------------------------------- */

/* The system channel of `type` on a row of `object`, or NULL. */
static const sys_chan *find_sys(weft_emu_object object, uint32_t type)
{
	const sys_chan *t = object == WEFT_EMU_THREAD ? thread_sys : cpu_sys;
	for (int i = 0; i < NSYS; i++)
		if (t[i].type == type)
			return &t[i];
	return NULL;
}

/*
 * Reads the type names of a rendered .pcf: each "EVENT_TYPE" line is
 * followed by "0 <type> <spaces> <name>". 0 or WEFT_ENOMEM.
 */
static int parse_pcf_names(weft_emu *w, weft_emu_object object, const char *pcf)
{
	size_t cap = 0;
	for (const char *p = strstr(pcf, "EVENT_TYPE\n"); p != NULL;
	     p = strstr(p, "EVENT_TYPE\n")) {
		p += strlen("EVENT_TYPE\n");
		char *end;
		if (p[0] != '0' || p[1] != ' ')
			continue;
		unsigned long type = strtoul(p + 2, &end, 10);
		while (*end == ' ')
			end++;
		size_t n = strcspn(end, "\n");
		if (weft__array_grow((void **)&w->names[object], &cap, w->nnames[object] + 1,
				     sizeof *w->names[object]) < 0)
			return WEFT_ENOMEM;
		char *name = malloc(n + 1);
		if (name == NULL)
			return WEFT_ENOMEM;
		memcpy(name, end, n);
		name[n] = '\0';
		w->names[object][w->nnames[object]++] = (type_name){ (uint32_t)type, name };
		p = end + n;
	}
	return 0;
}

/* The .pcf name of `type` on rows of `object`, or NULL. */
static const char *pcf_name(const weft_emu *w, weft_emu_object object, uint32_t type)
{
	for (size_t i = 0; i < w->nnames[object]; i++)
		if (w->names[object][i].type == type)
			return w->names[object][i].name;
	return NULL;
}

/* The type names of both traces, from the .pcf texts the emulator renders. */
static int load_names(weft_emu *w)
{
	for (int k = 0; k < 2; k++) {
		char *pcf = weft__emu_pcf_text(w->emu, (weft__emu_kind)k);
		int rc = pcf == NULL ? WEFT_ENOMEM : parse_pcf_names(w, (weft_emu_object)k, pcf);
		free(pcf);
		if (rc < 0)
			return weft__error(rc, NULL, WEFT_NO_OFFSET, "out of memory");
	}
	return 0;
}

/* ---- Objects ------------------------------------------------------------------------ */

/* Row labels without ovniemu's padding blank (" CPU 0.1"). */
static void row_label(const weft__emu_system *sys, weft__emu_kind kind, size_t row,
		      char *buf, size_t cap)
{
	weft__emu_row_label(sys, kind, row, buf, cap);
	if (buf[0] == ' ')
		memmove(buf, buf + 1, strlen(buf));
}

/* The thread and CPU tables of the emulated system. */
static int load_objects(weft_emu *w)
{
	const weft__emu_system *sys = weft__emu_system_of(w->emu);
	w->threads = calloc(sys->nthreads ? sys->nthreads : 1, sizeof *w->threads);
	w->cpus = calloc(sys->ncpus ? sys->ncpus : 1, sizeof *w->cpus);
	if (w->threads == NULL || w->cpus == NULL)
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	for (size_t t = 0; t < sys->nthreads; t++) {
		const weft__emu_thread *th = &sys->threads[t];
		const weft__emu_proc *p = &sys->procs[th->proc];
		thread_entry *te = &w->threads[t];
		row_label(sys, WEFT__EMU_THREAD, t, te->label, sizeof te->label);
		te->info = (weft_emu_thread_info){
			.tid = th->tid, .pid = p->pid, .rank = p->rank, .app_id = p->app_id,
			.stream = th->stream, .loom = (uint32_t)p->loom, .label = te->label };
	}
	for (size_t c = 0; c < sys->ncpus; c++) {
		const weft__emu_cpu *cpu = &sys->cpus[c];
		cpu_entry *ce = &w->cpus[c];
		row_label(sys, WEFT__EMU_CPU, c, ce->label, sizeof ce->label);
		ce->info = (weft_emu_cpu_info){
			.loom = (uint32_t)cpu->loom, .loom_name = sys->looms[cpu->loom].id,
			.phyid = cpu->phyid, .index = cpu->index, .label = ce->label };
	}
	return 0;
}

size_t weft_emu_thread_count(const weft_emu *w)
{
	return weft__emu_system_of(w->emu)->nthreads;
}

const weft_emu_thread_info *weft_emu_thread(const weft_emu *w, size_t index)
{
	return index < weft_emu_thread_count(w) ? &w->threads[index].info : NULL;
}

size_t weft_emu_cpu_count(const weft_emu *w)
{
	return weft__emu_system_of(w->emu)->ncpus;
}

const weft_emu_cpu_info *weft_emu_cpu(const weft_emu *w, size_t index)
{
	return index < weft_emu_cpu_count(w) ? &w->cpus[index].info : NULL;
}

size_t weft_emu_model_count(const weft_emu *w)
{
	return weft__emu_model_count(w->emu);
}

const char *weft_emu_model_name(const weft_emu *w, size_t index)
{
	return weft__emu_model_name(w->emu, index);
}

const char *weft_emu_model_version(const weft_emu *w, size_t index)
{
	return index < w->emu->nmodels ? w->emu->models[index]->version : NULL;
}

uint64_t weft_emu_event_count(const weft_emu *w)
{
	return weft__emu_event_count(w->emu);
}

uint64_t weft_emu_start_clock(const weft_emu *w)
{
	return weft__emu_first_time(w->emu);
}

uint64_t weft_emu_duration(const weft_emu *w)
{
	return weft__emu_now(w->emu);
}

/* ---- Changes ------------------------------------------------------------------------- */

/* The emulator's sink: the records of the event being handled, queued. */
static int queue_record(void *ctx, const weft__emu_record *r)
{
	weft_emu *w = ctx;
	if (r->kind != WEFT__EMU_THREAD && r->kind != WEFT__EMU_CPU)
		return 0; /* the breakdown traces are not asked for (not public yet) */
	if (weft__array_grow((void **)&w->queue, &w->queue_cap, w->queued + 1,
			     sizeof *w->queue) < 0) {
		w->queue_failed = 1;
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	}
	w->queue[w->queued++] = *r;
	return 0;
}

/* The label of Paraver value `value` of a system channel, or NULL. */
static const char *sys_label(const weft_emu *w, weft_emu_object object, uint32_t type,
			     int64_t value)
{
	if (object != WEFT_EMU_THREAD || value <= 0)
		return NULL;
	if (type == 4 && value < (int64_t)(sizeof state_labels / sizeof state_labels[0]))
		return state_labels[value];
	/* the affinity shows the CPU's index + 1 */
	if (type == 6 && (uint64_t)value <= weft_emu_cpu_count(w))
		return w->cpus[value - 1].label;
	return NULL;
}

const char *weft_emu_value_label(weft_emu *w, weft_emu_object object, uint32_t type,
				 int64_t value)
{
	weft__emu *e = w->emu;
	if (value == 0)
		return NULL;
	for (uint32_t s = 0; s < e->nslots; s++)
		if (e->slots[s].spec->type == type)
			return weft__emu_value_label(e, (uint16_t)s, value);
	return sys_label(w, object, type, value);
}

/*
 * The raw channel behind a model channel's record: the thread's own, or
 * the one of the thread a CPU runs (NULL when it runs none).
 */
static const weft__emu_chan *raw_of(const weft_emu *w, const weft__emu_record *r)
{
	const weft__emu *e = w->emu;
	if (r->kind == WEFT__EMU_THREAD)
		return &e->th[r->row].raw[r->slot];
	int32_t sel = e->cpu[r->row].sel;
	return sel >= 0 ? &e->th[sel].raw[r->slot] : NULL;
}

/*
 * The values of a stack channel's record, bottom first, as Paraver values
 * (NULL when empty, not a stack, or the state no longer matches it).
 */
static const int64_t *stack_of(weft_emu *w, const weft__emu_record *r)
{
	if (r->slot == WEFT__EMU_NO_SLOT || r->value == 0 || r->depth == 0)
		return NULL;
	const weft__emu_chan *raw = raw_of(w, r);
	if (raw == NULL || !(raw->props & WEFT__CHAN_STACK) || raw->depth != r->depth)
		return NULL;
	if (weft__array_grow((void **)&w->stack, &w->stack_cap, raw->depth, sizeof *w->stack) < 0)
		return NULL;
	int64_t add = (raw->prv_flags & WEFT__PRV_NEXT) ? 1 : 0;
	for (uint32_t i = 0; i < raw->depth; i++)
		w->stack[i] = raw->stack[i] + add;
	return w->stack[raw->depth - 1] == r->value ? w->stack : NULL;
}

/* Fills the change given out from record `r`. */
static void make_change(weft_emu *w, const weft__emu_record *r)
{
	weft__emu *e = w->emu;
	weft_emu_object object = r->kind == WEFT__EMU_THREAD ? WEFT_EMU_THREAD : WEFT_EMU_CPU;
	weft_emu_change *c = &w->change;
	*c = (weft_emu_change){
		.clock = r->time + weft__emu_first_time(e), .time = r->time, .object = object,
		.row = r->row, .type = r->type, .value = r->value, .depth = r->depth,
		.pcf_name = pcf_name(w, object, r->type), .event_stream = w->ev_stream,
		.event_offset = w->ev_offset,
	};
	if (r->slot != WEFT__EMU_NO_SLOT && r->slot < e->nslots) {
		const weft__emu_slot *s = &e->slots[r->slot];
		c->model = s->model->name;
		c->channel = s->spec->name;
		c->title = s->spec->prefix;
		c->label = r->value != 0 ? weft__emu_value_label(e, r->slot, r->value) : NULL;
		c->stack = stack_of(w, r);
	} else {
		const sys_chan *sc = find_sys(object, r->type);
		c->model = "system";
		c->channel = sc != NULL ? sc->channel : "?";
		c->title = sc != NULL ? sc->title : "?";
		c->label = sys_label(w, object, r->type, r->value);
	}
	if (c->pcf_name == NULL)
		c->pcf_name = c->title;
}

/* The error of the emulation's last error diagnostic, as the message; WEFT_EFORMAT. */
static int refused(weft_emu *w)
{
	const weft__emu *e = w->emu;
	for (size_t i = weft__emu_diag_count(e); i-- > 0;) {
		const weft_diag *d = &weft__emu_diag_get(e, i)->d;
		if (d->severity == WEFT_SEV_ERROR)
			return weft__error(WEFT_EFORMAT, d->file, d->offset, "%s", d->message);
	}
	return weft__error(WEFT_EFORMAT, weft_trace_path(w->trace), WEFT_NO_OFFSET,
			   "the emulation refused the trace");
}

/* Reads and emulates the next event (its records are queued); ends at the last. */
static void step(weft_emu *w)
{
	const weft_event *ev;
	int rc = weft_cursor_next(w->cursor, &ev);
	if (rc == 1) {
		w->ev_stream = ev->stream;
		w->ev_offset = ev->offset;
		rc = weft__emu_event(w->emu, ev);
		if (rc == 0)
			return;
		w->queued = 0; /* a failed event's records are not written */
		w->status = w->queue_failed ? WEFT_ENOMEM : rc == WEFT_EFORMAT ? refused(w) : rc;
	} else if (rc == 0) {
		w->status = weft__emu_finish(w->emu, !w->options.no_end_checks) < 0 ? refused(w) : 0;
	} else {
		w->status = rc; /* the cursor's message stays */
	}
	w->done = 1;
}

int weft_emu_next(weft_emu *w, const weft_emu_change **change)
{
	*change = NULL;
	while (w->next == w->queued) {
		w->next = w->queued = 0;
		if (w->done)
			return w->status;
		step(w);
	}
	make_change(w, &w->queue[w->next++]);
	*change = &w->change;
	return 1;
}

char *weft_emu_pcf_text(weft_emu *w, weft_emu_object object)
{
	char *text = weft__emu_pcf_text(w->emu, object == WEFT_EMU_CPU ? WEFT__EMU_CPU
								       : WEFT__EMU_THREAD);
	if (text == NULL)
		weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	return text;
}

/* ---- Diagnostics --------------------------------------------------------------------- */

size_t weft_emu_diag_count(const weft_emu *w)
{
	return weft__emu_diag_count(w->emu);
}

const weft_diag *weft_emu_diag(const weft_emu *w, size_t index)
{
	const weft__emu_diag *d = weft__emu_diag_get(w->emu, index);
	return d != NULL ? &d->d : NULL;
}

uint64_t weft_emu_diag_repeats(const weft_emu *w, size_t index)
{
	const weft__emu_diag *d = weft__emu_diag_get(w->emu, index);
	return d != NULL ? d->count : 0;
}

/* ---- Life ------------------------------------------------------------------------------ */

int weft_emu_create(weft_trace *trace, const weft_emu_options *options, weft_emu **out)
{
	*out = NULL;
	if (trace == NULL)
		return weft__error(WEFT_EINVAL, NULL, WEFT_NO_OFFSET, "emulation: no trace");
	weft_emu *w = calloc(1, sizeof *w);
	if (w == NULL)
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	w->trace = trace;
	if (options != NULL)
		w->options = *options;
	weft__emu_options eo = { .all_models = w->options.all_models,
				 .no_end_checks = w->options.no_end_checks };
	weft__emu_sink sink = { w, queue_record };
	weft_filter f = { .order = WEFT_ORDER_TIME };
	int rc = weft__emu_create(trace, &eo, &sink, &w->emu);
	if (rc == 0)
		rc = load_objects(w);
	if (rc == 0)
		rc = load_names(w);
	if (rc == 0)
		rc = weft_cursor_create(trace, &f, &w->cursor);
	if (rc < 0) {
		weft_emu_free(w);
		return rc;
	}
	*out = w;
	return 0;
}

void weft_emu_free(weft_emu *w)
{
	if (w == NULL)
		return;
	for (int k = 0; k < 2; k++) {
		for (size_t i = 0; i < w->nnames[k]; i++)
			free(w->names[k][i].name);
		free(w->names[k]);
	}
	weft_cursor_free(w->cursor);
	weft__emu_free(w->emu);
	free(w->threads);
	free(w->cpus);
	free(w->queue);
	free(w->stack);
	free(w);
}
