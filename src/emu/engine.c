/* SPDX-License-Identifier: MIT */
/*
 * emu/engine.c - the channels of the emulated system and how a change
 * travels from a thread's model state to the rows of thread.prv and
 * cpu.prv (the four phases of engine.h), plus the system operations
 * every model needs: thread states, CPU placement, the running thread of
 * each CPU.
 *
 * Map:
 *   building     threads, CPUs, their system and model channels
 *   changes      set, push, pop with ovniemu's duplicate rules
 *   propagation  outputs follow states, raw channels, running threads
 *   records      a dirty row channel becomes a record, or not
 *   system       thread states, CPU placement, cpu_update
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "emu/engine.h"

/* ---- Building -------------------------------------------------------------------- */

/* A channel bound to row `owner` of `file` with Paraver `type` (file 0: none). */
static void chan_init(weft__emu_chan *c, uint32_t owner, uint8_t props, uint8_t role,
		      uint8_t file, uint32_t type, uint8_t prv_flags)
{
	memset(c, 0, sizeof *c);
	c->owner = owner;
	c->props = props;
	c->role = role;
	c->file = file;
	c->type = type;
	c->prv_flags = prv_flags;
	c->slot = WEFT__EMU_NO_SLOT;
}

/* The system channels of thread `t`: CPU affinity, TID while active, state. */
static void thread_sys_init(weft__emu_th *th, uint32_t t)
{
	chan_init(&th->sys[WEFT__TH_CH_CPU], t, 0, WEFT__ROLE_PLAIN, WEFT__FILE_THREAD, 6,
		  WEFT__PRV_NEXT);
	/* Running -> Cooling keeps the TID: a repeat that is no error */
	chan_init(&th->sys[WEFT__TH_CH_TID], t, WEFT__CHAN_IGNORE_DUP, WEFT__ROLE_PLAIN,
		  WEFT__FILE_THREAD, 2, 0);
	chan_init(&th->sys[WEFT__TH_CH_STATE], t, 0, WEFT__ROLE_TH_STATE, WEFT__FILE_THREAD,
		  4, WEFT__PRV_SKIPDUP);
}

/* The system channels of CPU `c`; a state change may repeat any of them. */
static void cpu_sys_init(weft__emu_cpu_st *cpu, uint32_t c)
{
	uint8_t p = WEFT__CHAN_IGNORE_DUP;
	chan_init(&cpu->sys[WEFT__CPU_CH_TID], c, p, WEFT__ROLE_PLAIN, WEFT__FILE_CPU, 2, 0);
	chan_init(&cpu->sys[WEFT__CPU_CH_PID], c, p, WEFT__ROLE_PLAIN, WEFT__FILE_CPU, 1, 0);
	chan_init(&cpu->sys[WEFT__CPU_CH_THRUN], c, p, WEFT__ROLE_CPU_THRUN, 0, 0, 0);
	chan_init(&cpu->sys[WEFT__CPU_CH_NRUN], c, p, WEFT__ROLE_PLAIN, WEFT__FILE_CPU, 3,
		  WEFT__PRV_ZERO);
	chan_init(&cpu->sys[WEFT__CPU_CH_THACT], c, p, WEFT__ROLE_PLAIN, 0, 0, 0);
}

/*
 * The model channels of thread `t`: a raw channel per slot, written to
 * the thread's row itself when its tracking is ANY, else through an
 * output channel that follows the thread's state.
 */
static void thread_model_init(weft__emu *e, weft__emu_th *th, uint32_t t)
{
	for (uint32_t s = 0; s < e->nslots; s++) {
		const weft__emu_chan_spec *sp = e->slots[s].spec;
		uint8_t props = (sp->stack ? WEFT__CHAN_STACK : 0) |
				(sp->dup ? WEFT__CHAN_ALLOW_DUP : 0);
		int direct = sp->track == WEFT__TRACK_ANY;
		chan_init(&th->raw[s], t, props, WEFT__ROLE_TH_RAW,
			  direct ? WEFT__FILE_THREAD : 0, sp->type, sp->prv_flags);
		chan_init(&th->out[s], t, WEFT__CHAN_DIRTY_WRITE | WEFT__CHAN_ALLOW_DUP,
			  WEFT__ROLE_PLAIN, direct ? 0 : WEFT__FILE_THREAD, sp->type,
			  sp->prv_flags);
		th->raw[s].slot = th->out[s].slot = (uint16_t)s;
	}
}

/* The output channels of CPU `c`: the running thread's raw channels. */
static void cpu_model_init(weft__emu *e, weft__emu_cpu_st *cpu, uint32_t c)
{
	for (uint32_t s = 0; s < e->nslots; s++) {
		const weft__emu_chan_spec *sp = e->slots[s].spec;
		chan_init(&cpu->out[s], c, WEFT__CHAN_DIRTY_WRITE | WEFT__CHAN_ALLOW_DUP,
			  WEFT__ROLE_CPU_OUT, WEFT__FILE_CPU, sp->type, sp->prv_flags);
		cpu->out[s].slot = (uint16_t)s;
	}
}

/*
 * Builds the slots of the enabled models (model by model, in their
 * order), then every thread and CPU with their channels, and the map from
 * a loom's CPU index to the CPU. WEFT_ENOMEM.
 */
int weft__emu_engine_build(weft__emu *e)
{
	const weft__emu_system *sys = e->sys;
	uint32_t n = 0;
	for (uint32_t m = 0; m < e->nmodels; m++)
		n += e->models[m]->nchans + e->nextra[m];
	e->slots = calloc(n ? n : 1, sizeof *e->slots);
	e->th = calloc(sys->nthreads ? sys->nthreads : 1, sizeof *e->th);
	e->cpu = calloc(sys->ncpus ? sys->ncpus : 1, sizeof *e->cpu);
	e->cpu_by_index = malloc((sys->ncpus ? sys->ncpus : 1) * sizeof *e->cpu_by_index);
	if (!e->slots || !e->th || !e->cpu || !e->cpu_by_index)
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	for (uint32_t m = 0; m < e->nmodels; m++) {
		e->model_base[m] = e->nslots;
		for (uint32_t i = 0; i < e->models[m]->nchans; i++)
			e->slots[e->nslots++] = (weft__emu_slot){ e->models[m],
								  &e->models[m]->chans[i] };
		for (uint32_t i = 0; i < e->nextra[m]; i++)
			e->slots[e->nslots++] = (weft__emu_slot){ e->models[m], &e->extra[m][i] };
	}
	for (uint32_t t = 0; t < sys->nthreads; t++) {
		weft__emu_th *th = &e->th[t];
		th->info = &sys->threads[t];
		th->loom = (uint32_t)sys->procs[th->info->proc].loom;
		th->cpu = th->cpu_sel = -1;
		th->raw = calloc(e->nslots ? e->nslots : 1, sizeof *th->raw);
		th->out = calloc(e->nslots ? e->nslots : 1, sizeof *th->out);
		if (th->raw == NULL || th->out == NULL)
			return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
		thread_sys_init(th, t);
		thread_model_init(e, th, t);
	}
	for (uint32_t c = 0; c < sys->ncpus; c++) {
		weft__emu_cpu_st *cpu = &e->cpu[c];
		const weft__emu_loom *l = &sys->looms[sys->cpus[c].loom];
		cpu->info = &sys->cpus[c];
		cpu->sel = -1;
		cpu->out = calloc(e->nslots ? e->nslots : 1, sizeof *cpu->out);
		if (cpu->out == NULL)
			return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
		cpu_sys_init(cpu, c);
		cpu_model_init(e, cpu, c);
		for (int i = 0; i < WEFT__CPU_CH_MAX; i++)
			cpu->sys[i].on_cpu = 1;
		for (uint32_t s = 0; s < e->nslots; s++)
			cpu->out[s].on_cpu = 1;
		/* index k of the loom is entry first_cpu + k; the vCPU follows */
		int64_t k = cpu->info->index < 0 ? (int64_t)l->ncpus : cpu->info->index;
		e->cpu_by_index[l->first_cpu + (size_t)k] = (int32_t)c;
	}
	return 0;
}

uint32_t weft__emu_add_chans(weft__emu *e, const weft__emu_model_spec *spec,
			     const weft__emu_chan_spec *specs, uint32_t n)
{
	int mi = weft__emu_model_index(e, spec);
	uint32_t first = 0;
	for (int m = 0; m < mi; m++)
		first += e->models[m]->nchans + e->nextra[m];
	e->extra[mi] = specs;
	e->nextra[mi] = n;
	return first + spec->nchans;
}

/* Frees a channel's stack. */
static void chan_free(weft__emu_chan *c)
{
	free(c->stack);
}

void weft__emu_engine_free(weft__emu *e)
{
	for (uint32_t t = 0; e->th != NULL && t < e->sys->nthreads; t++) {
		for (uint32_t s = 0; e->th[t].raw != NULL && s < e->nslots; s++)
			chan_free(&e->th[t].raw[s]);
		free(e->th[t].raw);
		free(e->th[t].out);
	}
	for (uint32_t c = 0; e->cpu != NULL && c < e->sys->ncpus; c++) {
		free(e->cpu[c].out);
		free(e->cpu[c].threads);
	}
	free(e->th);
	free(e->cpu);
	free(e->slots);
	free(e->cpu_by_index);
	free(e->dirty);
}

/* ---- Changes ------------------------------------------------------------------------ */

/* The channel's name for messages: "thread 123: nosv subsystem". */
static void chan_name(const weft__emu *e, const weft__emu_chan *c, char *buf, size_t cap)
{
	static const char *const th_sys[] = { "CPU affinity", "TID", "state" };
	static const char *const cpu_sys[] = { "running TID", "running PID", "running thread",
					       "number of running threads", "active thread" };
	char owner[96];
	const char *what = "channel";
	if (c->on_cpu) {
		char label[64];
		weft__emu_row_label(e->sys, WEFT__EMU_CPU, c->owner, label, sizeof label);
		snprintf(owner, sizeof owner, "%s", label[0] == ' ' ? label + 1 : label);
		if (c >= e->cpu[c->owner].sys && c < e->cpu[c->owner].sys + WEFT__CPU_CH_MAX)
			what = cpu_sys[c - e->cpu[c->owner].sys];
	} else {
		snprintf(owner, sizeof owner, "thread %" PRId64, e->th[c->owner].info->tid);
		if (c >= e->th[c->owner].sys && c < e->th[c->owner].sys + WEFT__TH_CH_MAX)
			what = th_sys[c - e->th[c->owner].sys];
	}
	if (c->slot != WEFT__EMU_NO_SLOT)
		snprintf(buf, cap, "%s: %s %s", owner, e->slots[c->slot].model->name,
			 e->slots[c->slot].spec->name);
	else
		snprintf(buf, cap, "%s: %s", owner, what);
}

/* Appends a channel that turns dirty to the dirty list. */
static int mark_dirty(weft__emu *e, weft__emu_chan *c)
{
	if (c->dirty)
		return 0;
	if (e->ndirty == e->dirty_cap) {
		size_t cap = e->dirty_cap ? e->dirty_cap * 2 : 64;
		weft__emu_chan **p = realloc(e->dirty, cap * sizeof *p);
		if (p == NULL)
			return weft__emu_fail(e, "out of memory");
		e->dirty = p;
		e->dirty_cap = cap;
	}
	c->dirty = 1;
	e->dirty[e->ndirty++] = c;
	return 0;
}

/* "null" or the number, for messages (buf of 24 bytes at least). */
static const char *val_text(weft__emu_val v, char *buf, size_t cap)
{
	if (!v.set)
		return "null";
	snprintf(buf, cap, "%" PRId64, v.v);
	return buf;
}

/*
 * What every change checks first: the channel changes once per event
 * (outputs excepted), and a value equal to the last event's is refused
 * unless allowed. Returns 1 to go on, 0 to ignore the change (a repeat
 * the channel ignores), -1 on failure.
 */
static int change_allowed(weft__emu *e, weft__emu_chan *c, weft__emu_val v)
{
	char name[160], a[24];
	if (c->dirty && !(c->props & WEFT__CHAN_DIRTY_WRITE)) {
		chan_name(e, c, name, sizeof name);
		return weft__emu_fail(e, "%s changed twice by one event", name);
	}
	if (!(c->props & WEFT__CHAN_ALLOW_DUP) && weft__emu_val_eq(c->last, v)) {
		if (c->props & WEFT__CHAN_IGNORE_DUP)
			return 0;
		chan_name(e, c, name, sizeof name);
		return weft__emu_fail(e, "%s set to %s, the value it already had", name,
				      val_text(v, a, sizeof a));
	}
	return 1;
}

int weft__emu_set(weft__emu *e, weft__emu_chan *c, weft__emu_val v)
{
	int ok = change_allowed(e, c, v);
	if (ok <= 0)
		return ok;
	c->cur = v;
	return mark_dirty(e, c);
}

int weft__emu_set_depth(weft__emu *e, weft__emu_chan *c, weft__emu_val v, uint32_t depth)
{
	int ok = change_allowed(e, c, v);
	if (ok <= 0)
		return ok;
	c->cur = v;
	c->depth = depth;
	return mark_dirty(e, c);
}

int weft__emu_push(weft__emu *e, weft__emu_chan *c, int64_t v)
{
	char name[160];
	int ok = change_allowed(e, c, weft__emu_int(v));
	if (ok <= 0)
		return ok;
	if (c->depth >= WEFT__EMU_STACK_MAX) {
		chan_name(e, c, name, sizeof name);
		return weft__emu_fail(e, "%s: stack full (%d entries)", name, WEFT__EMU_STACK_MAX);
	}
	if (c->depth == c->cap) {
		uint32_t cap = c->cap ? c->cap * 2 : 8;
		int64_t *p = realloc(c->stack, cap * sizeof *p);
		if (p == NULL)
			return weft__emu_fail(e, "out of memory");
		c->stack = p;
		c->cap = cap;
	}
	c->stack[c->depth++] = v;
	c->cur = weft__emu_int(v);
	return mark_dirty(e, c);
}

int weft__emu_pop(weft__emu *e, weft__emu_chan *c, int64_t expected)
{
	char name[160];
	if (c->dirty && !(c->props & WEFT__CHAN_DIRTY_WRITE)) {
		chan_name(e, c, name, sizeof name);
		return weft__emu_fail(e, "%s changed twice by one event", name);
	}
	if (c->depth == 0) {
		chan_name(e, c, name, sizeof name);
		return weft__emu_fail(e, "%s: pop of %" PRId64 " from an empty stack", name,
				      expected);
	}
	if (c->stack[c->depth - 1] != expected) {
		chan_name(e, c, name, sizeof name);
		return weft__emu_fail(e, "%s: pop of %" PRId64 " does not match the top of the "
				      "stack, %" PRId64, name, expected, c->stack[c->depth - 1]);
	}
	c->depth--;
	c->cur = c->depth ? weft__emu_int(c->stack[c->depth - 1]) : weft__emu_null();
	return mark_dirty(e, c);
}

/* ---- Propagation ---------------------------------------------------------------------- */

/* An output takes a value (and the depth of the stack it shows). */
static int out_set(weft__emu *e, weft__emu_chan *out, weft__emu_val v, uint32_t depth)
{
	out->cur = v;
	out->depth = v.set ? depth : 0;
	return mark_dirty(e, out);
}

/* 1 when a thread's output of tracking `track` shows its raw value. */
static int th_selects(const weft__emu_th *th, int track)
{
	return track == WEFT__TRACK_RUN ? th->sel_run : th->sel_act;
}

/* The thread's state changed: its RUN and ACT outputs show or hide. */
static int state_changed(weft__emu *e, weft__emu_chan *c)
{
	weft__emu_th *th = &e->th[c->owner];
	int64_t st = c->cur.set ? c->cur.v : -1;
	th->sel_run = st == WEFT__TH_RUNNING;
	th->sel_act = st == WEFT__TH_RUNNING || st == WEFT__TH_COOLING ||
		      st == WEFT__TH_WARMING;
	for (uint32_t s = 0; s < e->nslots; s++) {
		int track = e->slots[s].spec->track;
		if (track == WEFT__TRACK_ANY)
			continue;
		int shown = th_selects(th, track);
		if (out_set(e, &th->out[s], shown ? th->raw[s].cur : weft__emu_null(),
			    th->raw[s].depth) < 0)
			return -1;
	}
	return 0;
}

/* A raw channel changed: the thread's output and the CPU's that follow it. */
static int raw_changed(weft__emu *e, weft__emu_chan *c)
{
	weft__emu_th *th = &e->th[c->owner];
	int track = e->slots[c->slot].spec->track;
	if (track != WEFT__TRACK_ANY && th_selects(th, track) &&
	    out_set(e, &th->out[c->slot], c->cur, c->depth) < 0)
		return -1;
	if (th->cpu_sel >= 0)
		return out_set(e, &e->cpu[th->cpu_sel].out[c->slot], c->cur, c->depth);
	return 0;
}

/* The value a CPU's output shows without a single running thread. */
static weft__emu_val cpu_default(const weft__emu *e, uint32_t s)
{
	const weft__emu_chan_spec *sp = e->slots[s].spec;
	return sp->cpu_default_set ? weft__emu_int(sp->cpu_default) : weft__emu_null();
}

/* A CPU's running thread changed: its outputs follow the new one. */
static int thrun_changed(weft__emu *e, weft__emu_chan *c)
{
	weft__emu_cpu_st *cpu = &e->cpu[c->owner];
	int32_t next = c->cur.set ? (int32_t)c->cur.v : -1;
	if (cpu->sel >= 0 && e->th[cpu->sel].cpu_sel == (int32_t)c->owner)
		e->th[cpu->sel].cpu_sel = -1;
	cpu->sel = next;
	if (next >= 0)
		e->th[next].cpu_sel = (int32_t)c->owner;
	for (uint32_t s = 0; s < e->nslots; s++) {
		const weft__emu_chan *raw = next >= 0 ? &e->th[next].raw[s] : NULL;
		if (out_set(e, &cpu->out[s], raw ? raw->cur : cpu_default(e, s),
			    raw ? raw->depth : 0) < 0)
			return -1;
	}
	return 0;
}

/* ---- Records -------------------------------------------------------------------------- */

/*
 * Writes a dirty row channel as a record, unless its duplicate rule
 * skips the value (ovniemu's prv emission). 0 or -1.
 */
static int emit(weft__emu *e, weft__emu_chan *c)
{
	weft__emu_val v = c->cur;
	char name[160], a[24];
	if (!(c->prv_flags & WEFT__PRV_EMITDUP)) {
		if (c->emitted_set && weft__emu_val_eq(v, c->emitted)) {
			if (c->prv_flags & WEFT__PRV_SKIPDUP)
				return 0;
			if (!(c->prv_flags & WEFT__PRV_SKIPDUPNULL)) {
				chan_name(e, c, name, sizeof name);
				return weft__emu_fail(e, "%s: the value %s written twice in a row",
						      name, val_text(v, a, sizeof a));
			}
			if (!v.set)
				return 0;
		}
		c->emitted = v;
		c->emitted_set = 1;
	}
	int64_t value = 0;
	if (v.set) {
		value = v.v + ((c->prv_flags & WEFT__PRV_NEXT) ? 1 : 0);
		if (value == 0 && !(c->prv_flags & WEFT__PRV_ZERO)) {
			chan_name(e, c, name, sizeof name);
			return weft__emu_fail(e, "%s: value 0 is not allowed", name);
		}
	}
	c->written = value;
	if (e->sink.record == NULL)
		return 0;
	weft__emu_record r = {
		.time = e->now,
		.kind = (weft__emu_kind)(c->file - 1),
		.row = c->owner, .type = c->type, .value = value,
		.depth = c->role == WEFT__ROLE_TH_RAW ? c->depth : (v.set ? c->depth : 0),
		.slot = c->slot,
	};
	if (e->sink.record(e->sink.ctx, &r) < 0) {
		e->sink_failed = 1;
		return -1;
	}
	return 0;
}

/*
 * Phases 2 to 4 (engine.h): propagate along the dirty list, write the
 * dirty row channels (`emit`; the connect phase writes nothing), make
 * every channel clean. 0 or -1 (the list is cleaned either way).
 */
int weft__emu_propagate(weft__emu *e, int emit_records)
{
	int rc = 0;
	for (size_t i = 0; rc == 0 && i < e->ndirty; i++) {
		weft__emu_chan *c = e->dirty[i];
		if (c->role == WEFT__ROLE_TH_STATE)
			rc = state_changed(e, c);
		else if (c->role == WEFT__ROLE_TH_RAW)
			rc = raw_changed(e, c);
		else if (c->role == WEFT__ROLE_CPU_THRUN)
			rc = thrun_changed(e, c);
		else if (c->role >= WEFT__ROLE_CPU_OUT && e->bd != NULL)
			rc = weft__emu_bd_dirty(e, c);
	}
	for (size_t i = 0; rc == 0 && emit_records && i < e->ndirty; i++)
		if (e->dirty[i]->file != WEFT__FILE_NONE)
			rc = emit(e, e->dirty[i]);
	for (size_t i = 0; i < e->ndirty; i++) {
		e->dirty[i]->last = e->dirty[i]->cur;
		e->dirty[i]->dirty = 0;
	}
	e->ndirty = 0;
	return rc;
}

/* A record of row channel `c` at `time` with its last written value. */
static int snapshot_one(weft__emu *e, const weft__emu_chan *c, uint64_t time)
{
	if (c->file == WEFT__FILE_NONE || c->written == 0 || e->sink.record == NULL)
		return 0;
	weft__emu_record r = {
		.time = time,
		.kind = (weft__emu_kind)(c->file - 1),
		.row = c->owner, .type = c->type, .value = c->written, .depth = c->depth,
		.slot = c->slot,
	};
	return e->sink.record(e->sink.ctx, &r);
}

/*
 * Writes, at `time`, a record of every row channel whose last record
 * holds a value (not 0): the state of every row, to open a time window.
 */
int weft__emu_snapshot(weft__emu *e, uint64_t time)
{
	int rc = 0;
	for (uint32_t t = 0; rc == 0 && t < e->sys->nthreads; t++) {
		weft__emu_th *th = &e->th[t];
		for (int i = 0; rc == 0 && i < WEFT__TH_CH_MAX; i++)
			rc = snapshot_one(e, &th->sys[i], time);
		for (uint32_t s = 0; rc == 0 && s < e->nslots; s++)
			rc = snapshot_one(e, th->raw[s].file ? &th->raw[s] : &th->out[s], time);
	}
	for (uint32_t c = 0; rc == 0 && c < e->sys->ncpus; c++) {
		weft__emu_cpu_st *cpu = &e->cpu[c];
		for (int i = 0; rc == 0 && i < WEFT__CPU_CH_MAX; i++)
			rc = snapshot_one(e, &cpu->sys[i], time);
		for (uint32_t s = 0; rc == 0 && s < e->nslots; s++)
			rc = snapshot_one(e, &cpu->out[s], time);
	}
	return rc < 0 ? WEFT_EIO : 0;
}

/* ---- System ----------------------------------------------------------------------------- */

int weft__emu_th_set_state(weft__emu *e, uint32_t t, int state)
{
	weft__emu_th *th = &e->th[t];
	if (th->cpu < 0)
		return weft__emu_fail(e, "thread %" PRId64 " has no CPU", th->info->tid);
	th->state = state;
	th->running = state == WEFT__TH_RUNNING;
	th->active = th->running || state == WEFT__TH_COOLING || state == WEFT__TH_WARMING;
	if (weft__emu_set(e, &th->sys[WEFT__TH_CH_STATE], weft__emu_int(state)) < 0)
		return -1;
	return weft__emu_set(e, &th->sys[WEFT__TH_CH_TID],
			     th->active ? weft__emu_int(th->info->tid) : weft__emu_null());
}

int weft__emu_th_set_cpu(weft__emu *e, uint32_t t, int32_t cpu)
{
	weft__emu_th *th = &e->th[t];
	if (th->cpu >= 0)
		return weft__emu_fail(e, "thread %" PRId64 " already has a CPU", th->info->tid);
	th->cpu = cpu;
	return weft__emu_set(e, &th->sys[WEFT__TH_CH_CPU], weft__emu_int(cpu));
}

int weft__emu_th_migrate_cpu(weft__emu *e, uint32_t t, int32_t cpu)
{
	weft__emu_th *th = &e->th[t];
	if (th->cpu < 0)
		return weft__emu_fail(e, "thread %" PRId64 " has no CPU", th->info->tid);
	th->cpu = cpu;
	return weft__emu_set(e, &th->sys[WEFT__TH_CH_CPU], weft__emu_int(cpu));
}

int weft__emu_th_unset_cpu(weft__emu *e, uint32_t t)
{
	weft__emu_th *th = &e->th[t];
	if (th->cpu < 0)
		return weft__emu_fail(e, "thread %" PRId64 " has no CPU", th->info->tid);
	th->cpu = -1;
	return weft__emu_set(e, &th->sys[WEFT__TH_CH_CPU], weft__emu_null());
}

/* The label of CPU `c` without its leading blank: "CPU 0.1", "vCPU 0.*". */
static void cpu_label(const weft__emu *e, int32_t c, char *buf, size_t cap)
{
	char label[64];
	weft__emu_row_label(e->sys, WEFT__EMU_CPU, (size_t)c, label, sizeof label);
	snprintf(buf, cap, "%s", label[0] == ' ' ? label + 1 : label);
}

/*
 * Recomputes what CPU `c` runs from the states of its threads: one
 * running thread shows its TID, PID and row; none or several (only a
 * virtual CPU may have several) show nothing; the count is always set.
 */
int weft__emu_cpu_update(weft__emu *e, int32_t c)
{
	weft__emu_cpu_st *cpu = &e->cpu[c];
	uint32_t running = 0, active = 0;
	int32_t th_run = -1, th_act = -1;
	for (uint32_t i = 0; i < cpu->nthreads; i++) {
		const weft__emu_th *th = &e->th[cpu->threads[i]];
		if (th->state == WEFT__TH_RUNNING) {
			th_run = th_act = (int32_t)cpu->threads[i];
			running++;
			active++;
		} else if (th->state == WEFT__TH_COOLING || th->state == WEFT__TH_WARMING) {
			th_act = (int32_t)cpu->threads[i];
			active++;
		}
	}
	if (running > 1 && cpu->info->phyid >= 0) {
		char label[64];
		cpu_label(e, c, label, sizeof label);
		return weft__emu_fail(e, "physical %s has %" PRIu32 " threads running at the "
				      "same time", label, running);
	}
	weft__emu_val tid = weft__emu_null(), pid = weft__emu_null(), row = weft__emu_null();
	if (running == 1) {
		const weft__emu_th *th = &e->th[th_run];
		tid = weft__emu_int(th->info->tid);
		pid = weft__emu_int(e->sys->procs[th->info->proc].pid);
		row = weft__emu_int(th_run);
	}
	if (weft__emu_set(e, &cpu->sys[WEFT__CPU_CH_TID], tid) < 0 ||
	    weft__emu_set(e, &cpu->sys[WEFT__CPU_CH_PID], pid) < 0 ||
	    weft__emu_set(e, &cpu->sys[WEFT__CPU_CH_THRUN], row) < 0 ||
	    weft__emu_set(e, &cpu->sys[WEFT__CPU_CH_NRUN], weft__emu_int(running)) < 0)
		return -1;
	return weft__emu_set(e, &cpu->sys[WEFT__CPU_CH_THACT],
			     active == 1 ? weft__emu_int(th_act) : weft__emu_null());
}

int weft__emu_cpu_add(weft__emu *e, int32_t c, uint32_t t)
{
	weft__emu_cpu_st *cpu = &e->cpu[c];
	for (uint32_t i = 0; i < cpu->nthreads; i++)
		if (cpu->threads[i] == t) {
			char label[64];
			cpu_label(e, c, label, sizeof label);
			return weft__emu_fail(e, "thread %" PRId64 " already assigned to %s",
					      e->th[t].info->tid, label);
		}
	if (cpu->nthreads == cpu->cap) {
		uint32_t cap = cpu->cap ? cpu->cap * 2 : 4;
		uint32_t *p = realloc(cpu->threads, cap * sizeof *p);
		if (p == NULL)
			return weft__emu_fail(e, "out of memory");
		cpu->threads = p;
		cpu->cap = cap;
	}
	cpu->threads[cpu->nthreads++] = t;
	return weft__emu_cpu_update(e, c);
}

int weft__emu_cpu_remove(weft__emu *e, int32_t c, uint32_t t)
{
	weft__emu_cpu_st *cpu = &e->cpu[c];
	uint32_t i = 0;
	while (i < cpu->nthreads && cpu->threads[i] != t)
		i++;
	if (i == cpu->nthreads) {
		char label[64];
		cpu_label(e, c, label, sizeof label);
		return weft__emu_fail(e, "cannot remove thread %" PRId64 " from %s: not there",
				      e->th[t].info->tid, label);
	}
	memmove(&cpu->threads[i], &cpu->threads[i + 1],
		(cpu->nthreads - i - 1) * sizeof *cpu->threads);
	cpu->nthreads--;
	return weft__emu_cpu_update(e, c);
}

int32_t weft__emu_loom_cpu(const weft__emu *e, uint32_t loom, int64_t index)
{
	const weft__emu_loom *l = &e->sys->looms[loom];
	if (index == -1)
		return e->cpu_by_index[l->first_cpu + l->ncpus];
	if (index < 0 || (uint64_t)index >= l->ncpus)
		return -1;
	return e->cpu_by_index[l->first_cpu + (size_t)index];
}

uint32_t weft__emu_find_thread(const weft__emu *e, size_t proc, uint32_t loom, int64_t tid)
{
	uint32_t found = UINT32_MAX;
	for (uint32_t t = 0; t < e->sys->nthreads; t++) {
		const weft__emu_th *th = &e->th[t];
		if (th->info->tid != tid || th->loom != loom)
			continue;
		if (th->info->proc == proc)
			return t;
		if (found == UINT32_MAX)
			found = t;
	}
	return found;
}
