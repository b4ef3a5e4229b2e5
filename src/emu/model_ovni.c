/* SPDX-License-Identifier: MIT */
/*
 * emu/model_ovni.c - the ovni model (docs/emulation.md, section 3.2):
 * thread states (OH*), CPU affinity (OA*), buffer flushes (OF[ OF]), the
 * events ovniemu only reads (OB., OU[ OU], OCn), and marks (OM*, in
 * model_mark.c). Every rule is ovniemu 1.14's: the state a transition
 * needs, the payload it carries, the CPU index it names.
 */
#include <inttypes.h>
#include <stdlib.h>

#include "emu/engine.h"
#include "emu/model_mark.h"

enum { CH_FLUSH = 0, CH_MAX };

static const weft__emu_label flush_labels[] = { { 1, "Flushing" }, { 0, NULL } };

static const weft__emu_chan_spec chans[CH_MAX] = {
	[CH_FLUSH] = { .name = "flush", .type = 7, .prefix = "Flushing ovni buffer",
		       .labels = flush_labels, .track = WEFT__TRACK_ANY,
		       .prv_flags = WEFT__PRV_SKIPDUP },
};

/* Per thread: when its flush began (to warn about long ones). */
typedef struct ovni_state {
	uint64_t *flush_start;
	weft__emu_mark *marks;
} ovni_state;

static ovni_state *state(weft__emu *e)
{
	return e->model_state[weft__emu_model_index(e, &weft__emu_model_ovni)];
}

/* ---- Threads -------------------------------------------------------------------- */

/* OHx: the thread begins running on the CPU of index cpu (-1: the vCPU). */
static int thread_execute(weft__emu *e, const weft__emu_ev *ev)
{
	weft__emu_th *th = &e->th[ev->thread];
	if (th->state == WEFT__TH_RUNNING)
		return weft__emu_fail(e, "cannot execute thread %" PRId64 ", is already running",
				      th->info->tid);
	if (ev->payload_size < 4)
		return weft__emu_fail(e, "missing payload in thread %" PRId64 " execute event",
				      th->info->tid);
	int32_t index = weft__emu_ev_i32(ev, 0);
	int32_t cpu = weft__emu_loom_cpu(e, th->loom, index);
	if (cpu < 0)
		return weft__emu_fail(e, "cannot find CPU with index %" PRId32 " in loom %s",
				      index, e->sys->looms[th->loom].id);
	/* the CPU first, then the state, then the CPU sees the new state */
	if (weft__emu_th_set_cpu(e, ev->thread, cpu) < 0 ||
	    weft__emu_th_set_state(e, ev->thread, WEFT__TH_RUNNING) < 0)
		return -1;
	return weft__emu_cpu_add(e, cpu, ev->thread);
}

/* OHe: a running or cooling thread ends and leaves its CPU. */
static int thread_end(weft__emu *e, const weft__emu_ev *ev)
{
	weft__emu_th *th = &e->th[ev->thread];
	if (th->state != WEFT__TH_RUNNING && th->state != WEFT__TH_COOLING)
		return weft__emu_fail(e, "cannot end thread %" PRId64 ": state not running or "
				      "cooling", th->info->tid);
	int32_t cpu = th->cpu;
	if (weft__emu_th_set_state(e, ev->thread, WEFT__TH_DEAD) < 0 ||
	    weft__emu_cpu_remove(e, cpu, ev->thread) < 0)
		return -1;
	return weft__emu_th_unset_cpu(e, ev->thread);
}

/*
 * A state change that keeps the thread on its CPU: from one of the
 * states of `from` (a bit per state) to `to`; `what` names it in the error.
 */
static int thread_move(weft__emu *e, const weft__emu_ev *ev, unsigned from, int to,
		       const char *what, const char *needed)
{
	weft__emu_th *th = &e->th[ev->thread];
	if (!(from & (1u << th->state)))
		return weft__emu_fail(e, "cannot %s thread %" PRId64 ": state not %s", what,
				      th->info->tid, needed);
	if (weft__emu_th_set_state(e, ev->thread, to) < 0)
		return -1;
	return weft__emu_cpu_update(e, th->cpu);
}

#define BIT(s) (1u << (s))

static int thread_event(weft__emu *e, const weft__emu_ev *ev)
{
	switch (ev->v) {
	case 'C':
		return 0;  /* another thread is created: no state changes */
	case 'x':
		return thread_execute(e, ev);
	case 'e':
		return thread_end(e, ev);
	case 'p':
		return thread_move(e, ev, BIT(WEFT__TH_RUNNING) | BIT(WEFT__TH_COOLING),
				   WEFT__TH_PAUSED, "pause", "running or cooling");
	case 'r':
		return thread_move(e, ev, BIT(WEFT__TH_PAUSED) | BIT(WEFT__TH_WARMING),
				   WEFT__TH_RUNNING, "resume", "paused or warming");
	case 'c':
		return thread_move(e, ev, BIT(WEFT__TH_RUNNING), WEFT__TH_COOLING, "cool",
				   "running");
	case 'w':
		return thread_move(e, ev, BIT(WEFT__TH_PAUSED), WEFT__TH_WARMING, "warm",
				   "paused");
	default:
		return weft__emu_fail(e, "unknown thread event value %c", ev->v);
	}
}

/* ---- Affinity ------------------------------------------------------------------- */

/* Moves thread `t` from its CPU to `cpu` (both CPUs, then the thread's channel). */
static int migrate(weft__emu *e, uint32_t t, int32_t cpu)
{
	if (weft__emu_cpu_remove(e, e->th[t].cpu, t) < 0 || weft__emu_cpu_add(e, cpu, t) < 0)
		return -1;
	return weft__emu_th_migrate_cpu(e, t, cpu);
}

/* OAs: the (active) thread moves itself to the CPU of index cpu. */
static int affinity_set(weft__emu *e, const weft__emu_ev *ev)
{
	weft__emu_th *th = &e->th[ev->thread];
	if (th->cpu < 0)
		return weft__emu_fail(e, "thread %" PRId64 " doesn't have CPU set", th->info->tid);
	if (!th->active)
		return weft__emu_fail(e, "thread %" PRId64 " is not active", th->info->tid);
	if (ev->payload_size != 4)
		return weft__emu_fail(e, "unexpected payload size %" PRIu32, ev->payload_size);
	int32_t index = weft__emu_ev_i32(ev, 0);
	int32_t cpu = weft__emu_loom_cpu(e, th->loom, index);
	if (cpu < 0)
		return weft__emu_fail(e, "cannot find cpu with index %" PRId32, index);
	return cpu == th->cpu ? 0 : migrate(e, ev->thread, cpu);
}

/* OAr: moves thread tid (of the process, else of the loom) to CPU index cpu. */
static int affinity_remote(weft__emu *e, const weft__emu_ev *ev)
{
	const weft__emu_th *self = &e->th[ev->thread];
	if (ev->payload_size != 8)
		return weft__emu_fail(e, "unexpected payload size %" PRIu32, ev->payload_size);
	int32_t index = weft__emu_ev_i32(ev, 0), tid = weft__emu_ev_i32(ev, 4);
	uint32_t t = weft__emu_find_thread(e, self->info->proc, self->loom, tid);
	if (t == UINT32_MAX)
		return weft__emu_fail(e, "thread %" PRId32 " not found", tid);
	if (e->th[t].state == WEFT__TH_DEAD)
		return weft__emu_fail(e, "thread %" PRId32 " is dead", tid);
	if (e->th[t].state == WEFT__TH_UNKNOWN)
		return weft__emu_fail(e, "thread %" PRId32 " in state unknown", tid);
	if (e->th[t].cpu < 0)
		return weft__emu_fail(e, "thread %" PRId32 " has no CPU", tid);
	int32_t cpu = weft__emu_loom_cpu(e, self->loom, index);
	if (cpu < 0)
		return weft__emu_fail(e, "cannot find CPU with index %" PRId32, index);
	return migrate(e, t, cpu);
}

/* ---- Flushes -------------------------------------------------------------------- */

/* OF[ / OF]: the flush channel is 1 while libovni writes its buffer. */
static int flush_event(weft__emu *e, const weft__emu_ev *ev)
{
	int mi = weft__emu_model_index(e, &weft__emu_model_ovni);
	weft__emu_chan *ch = weft__emu_th_chan(e, ev->thread, mi, CH_FLUSH);
	ovni_state *s = state(e);
	if (ev->v == '[') {
		s->flush_start[ev->thread] = ev->time;
		return weft__emu_set(e, ch, weft__emu_int(1));
	}
	if (ev->v != ']')
		return weft__emu_fail(e, "unexpected value '%c' (expecting '[' or ']')", ev->v);
	if (weft__emu_set(e, ch, weft__emu_null()) < 0)
		return -1;
	double ms = (double)(ev->time - s->flush_start[ev->thread]) * 1e-6;
	if (ms > 10.0 && e->th[ev->thread].running)
		weft__emu_warn(e, "large flush of %.1f ms at %" PRIu64 " ns from the start in "
			       "thread %" PRId64, ms, ev->time, e->th[ev->thread].info->tid);
	return 0;
}

/* ---- The model ------------------------------------------------------------------ */

static int ovni_event(weft__emu *e, const weft__emu_ev *ev)
{
	if (e->th[ev->thread].out_of_cpu)
		return weft__emu_fail(e, "current thread %" PRId64 " out of CPU",
				      e->th[ev->thread].info->tid);
	switch (ev->c) {
	case 'H':
		return thread_event(e, ev);
	case 'A':
		if (ev->v == 's')
			return affinity_set(e, ev);
		if (ev->v == 'r')
			return affinity_remote(e, ev);
		return weft__emu_fail(e, "unknown affinity event value %c", ev->v);
	case 'B':
		return 0;  /* latency bursts: statistics only */
	case 'C':
		if (ev->v != 'n')
			return weft__emu_fail(e, "unknown cpu event value %c", ev->v);
		weft__emu_warn(e, "ignoring old event OCn");
		return 0;
	case 'F':
		return flush_event(e, ev);
	case 'U':
		return 0;  /* the bounds of unordered regions (weft sorts them) */
	case 'M':
		return weft__emu_mark_event(e, state(e)->marks, ev);
	default:
		return weft__emu_fail(e, "unknown ovni event category %c", ev->c);
	}
}

static int ovni_create(weft__emu *e)
{
	ovni_state *s = calloc(1, sizeof *s);
	int mi = weft__emu_model_index(e, &weft__emu_model_ovni);
	if (s == NULL)
		return weft__emu_fail(e, "out of memory");
	e->model_state[mi] = s;
	s->flush_start = calloc(e->sys->nthreads ? e->sys->nthreads : 1,
				sizeof *s->flush_start);
	if (s->flush_start == NULL)
		return weft__emu_fail(e, "out of memory");
	return weft__emu_mark_create(e, &s->marks);
}

/* At the end every thread must be dead. */
static int ovni_finish(weft__emu *e)
{
	int rc = 0;
	for (uint32_t t = 0; t < e->sys->nthreads; t++)
		if (e->th[t].state != WEFT__TH_DEAD) {
			weft__emu_end_error(e, t, "thread %" PRId64 " is not dead at the end of "
					    "the trace", e->th[t].info->tid);
			rc = -1;
		}
	return rc;
}

static int ovni_pcf(weft__emu *e, weft__emu_kind kind, weft__emu_pcf *pcf)
{
	return weft__emu_mark_pcf(e, state(e)->marks, kind, pcf);
}

static void ovni_free(weft__emu *e)
{
	ovni_state *s = state(e);
	if (s == NULL)
		return;
	weft__emu_mark_free(s->marks);
	free(s->flush_start);
	free(s);
}

const weft__emu_model_spec weft__emu_model_ovni = {
	.id = 'O', .name = "ovni", .version = "1.1.0",
	.chans = chans, .nchans = CH_MAX,
	.create = ovni_create, .event = ovni_event, .finish = ovni_finish,
	.pcf = ovni_pcf, .free = ovni_free,
};
