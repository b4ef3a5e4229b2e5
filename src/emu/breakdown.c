/* SPDX-License-Identifier: MIT */
/*
 * emu/breakdown.c - the breakdown traces of the nOS-V, Nanos6 and OpenMP
 * models (ovniemu -b: nosv-breakdown.*, nanos6-breakdown.*,
 * openmp-breakdown.*): what every physical CPU does, as one value, the
 * CPUs' values sorted so that the rows draw a stacked area of runtime,
 * idle and task time.
 *
 * Per physical CPU, from its model outputs (subsystem, task type, idle):
 *   tr  = the task type when the subsystem is "running a body" and a task
 *         type shows, else the subsystem, else "Unknown subsystem" (2);
 *   tri = tr while the CPU progresses (idle 100), else its idle state.
 * OpenMP has no idle channel and selects on its label channel instead:
 *   tr  = the label (a task or work-sharing region's) when one shows, else
 *         the subsystem (null: 0);
 *   tri = tr.
 * Each is a selection that ovniemu re-evaluates only when its selecting
 * channel changes (subsystem, or OpenMP's label, for tr; idle for tri);
 * between two such changes it follows the selected input. That is kept here as it is, so
 * that the values are ovniemu's even where the selection is stale. Then
 * the tri of every CPU, sorted in ascending order, are the rows; a row is
 * written when its value changes (0 allowed).
 *
 * Propagation follows the engine's dirty list (engine.h): the CPU outputs
 * this reads are marked WEFT__ROLE_CPU_OUT, tr and tri are channels of
 * their own (roles BD_TR, BD_TRI), the rows are channels bound to the
 * breakdown trace.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "core/internal.h"
#include "emu/engine.h"
#include "emu/pcf.h"

#define UNKNOWN_SS 2
#define PROGRESSING 100

enum sel { SEL_NONE = -1, SEL_SS = 0, SEL_TT = 1, SEL_TR = 0, SEL_IDLE = 1 };

/* What differs between the breakdowns. */
typedef struct bd_kind {
	const char *model;        /* "nosv" */
	weft__emu_kind kind;
	uint8_t file;
	uint32_t type;            /* Paraver type of the rows */
	int64_t task_body;        /* the subsystem value of a running body */
	const char *title;
	int needs_can_breakdown;  /* nOS-V: every thread must say it can */
	const char *task_chan;    /* the channel of task values: "task_type" */
	int by_label;             /* OpenMP: selects on task_chan, no idle */
} bd_kind;

static const bd_kind kinds[] = {
	{ "nanos6", WEFT__EMU_BD_NANOS6, WEFT__FILE_BD_NANOS6, 41, 1,
	  "CPU: Nanos6 Runtime/Idle/Task breakdown", 0, "task_type", 0 },
	{ "nosv", WEFT__EMU_BD_NOSV, WEFT__FILE_BD_NOSV, 17, 11,
	  "CPU: nOS-V Runtime/Idle/Task breakdown", 1, "task_type", 0 },
	{ "openmp", WEFT__EMU_BD_OPENMP, WEFT__FILE_BD_OPENMP, 53, 0,
	  "CPU: OpenMP Runtime/Label breakdown", 0, "label", 1 },
};
#define NKINDS (sizeof kinds / sizeof kinds[0])

/* One physical CPU's selections and channels. */
typedef struct bd_cpu {
	int8_t sel0, sel1;        /* enum sel */
	weft__emu_chan tr, tri;
} bd_cpu;

/* One breakdown. */
typedef struct bd_one {
	const bd_kind *k;
	int mi;                   /* its model's index */
	uint16_t ss, tt, idle;    /* the model's slots (idle: UINT16_MAX, none) */
	uint32_t ncpus;           /* physical CPUs: the rows */
	int32_t *input;           /* CPU index -> its input (physical), or -1 */
	bd_cpu *cpu;              /* per input */
	int64_t *values;          /* per input: its tri (null: 0) */
	int64_t *sorted;
	weft__emu_chan *rows;     /* per row: the sorted value */
} bd_one;

struct weft__emu_bd {
	bd_one one[NKINDS];
};

/* ---- Setting up ------------------------------------------------------------------- */

/* The slot of channel `name` of model index `mi`; -1 when none. */
static int find_slot(const weft__emu *e, int mi, const char *name)
{
	for (uint32_t s = 0; s < e->nslots; s++)
		if (e->slots[s].model == e->models[mi] && strcmp(e->slots[s].spec->name, name) == 0)
			return (int)s;
	return -1;
}

/*
 * nOS-V: whether every thread says nosv.can_breakdown true (ovniemu
 * refuses a thread without the key, and warns when some cannot). 1, 0,
 * or -1 after weft__emu_fail.
 */
static int can_breakdown(weft__emu *e)
{
	size_t yes = 0;
	for (uint32_t t = 0; t < e->sys->nthreads; t++) {
		const weft_node *n = weft_trace_node(e->trace, e->sys->threads[t].node);
		json_t *root = json_loads(n->metadata_json, 0, NULL);
		const json_t *v = json_object_get(json_object_get(root, "nosv"), "can_breakdown");
		int is_bool = json_is_boolean(v), ok = json_is_true(v);
		json_decref(root);
		if (!is_bool)
			return weft__emu_fail(e, "%s nosv.can_breakdown key: thread.%" PRId64,
					      v == NULL ? "missing" : "expected boolean",
					      e->sys->threads[t].tid);
		yes += ok;
	}
	if (yes == e->sys->nthreads)
		return 1;
	weft__emu_warn(e, "cannot enable breakdown for nOS-V model (suitable %zu/%zu)", yes,
		       (size_t)e->sys->nthreads);
	return 0;
}

/* A channel of the breakdown (an output: written several times per event). */
static void bd_chan(weft__emu_chan *c, uint32_t owner, uint8_t role, uint8_t file,
		    uint32_t type, uint8_t flags)
{
	memset(c, 0, sizeof *c);
	c->owner = owner;
	c->role = role;
	c->file = file;
	c->type = type;
	c->prv_flags = flags;
	c->props = WEFT__CHAN_DIRTY_WRITE | WEFT__CHAN_ALLOW_DUP;
	c->slot = WEFT__EMU_NO_SLOT;
	c->on_cpu = 1;
}

/* Sets up one breakdown when its model is enabled (and, nOS-V, can). */
static int setup_one(weft__emu *e, bd_one *b, const bd_kind *k)
{
	b->k = k;
	b->mi = -1;
	for (uint32_t m = 0; m < e->nmodels; m++)
		if (strcmp(e->models[m]->name, k->model) == 0)
			b->mi = (int)m;
	if (b->mi < 0)
		return 0;
	int ss = find_slot(e, b->mi, "subsystem"), tt = find_slot(e, b->mi, k->task_chan);
	int idle = k->by_label ? UINT16_MAX : find_slot(e, b->mi, "idle");
	if (ss < 0 || tt < 0 || idle < 0) {
		b->mi = -1;
		return 0;
	}
	if (k->needs_can_breakdown) {
		int rc = can_breakdown(e);
		if (rc <= 0) {
			b->mi = -1;
			return rc;
		}
	}
	b->ss = (uint16_t)ss, b->tt = (uint16_t)tt, b->idle = (uint16_t)idle;
	b->ncpus = (uint32_t)(e->sys->ncpus - e->sys->nlooms);
	b->input = malloc(e->sys->ncpus * sizeof *b->input);
	b->cpu = calloc(b->ncpus ? b->ncpus : 1, sizeof *b->cpu);
	b->values = calloc(b->ncpus ? b->ncpus : 1, sizeof *b->values);
	b->sorted = calloc(b->ncpus ? b->ncpus : 1, sizeof *b->sorted);
	b->rows = calloc(b->ncpus ? b->ncpus : 1, sizeof *b->rows);
	if (!b->input || !b->cpu || !b->values || !b->sorted || !b->rows)
		return weft__emu_fail(e, "out of memory");
	uint32_t i = 0;
	for (uint32_t c = 0; c < e->sys->ncpus; c++) {
		b->input[c] = e->sys->cpus[c].phyid < 0 ? -1 : (int32_t)i;
		if (e->sys->cpus[c].phyid < 0)
			continue;
		b->cpu[i].sel0 = SEL_NONE;
		b->cpu[i].sel1 = k->by_label ? SEL_TR : SEL_NONE;  /* no idle: tri = tr */
		bd_chan(&b->cpu[i].tr, c, WEFT__ROLE_BD_TR, 0, 0, 0);
		bd_chan(&b->cpu[i].tri, c, WEFT__ROLE_BD_TRI, 0, 0, 0);
		i++;
	}
	for (uint32_t r = 0; r < b->ncpus; r++)
		bd_chan(&b->rows[r], r, WEFT__ROLE_PLAIN, k->file, k->type,
			WEFT__PRV_SKIPDUP | WEFT__PRV_ZERO);
	return 0;
}

int weft__emu_bd_create(weft__emu *e)
{
	if (!e->opt.breakdown)
		return 0;
	if ((e->bd = calloc(1, sizeof *e->bd)) == NULL)
		return weft__emu_fail(e, "out of memory");
	for (size_t k = 0; k < NKINDS; k++)
		if (setup_one(e, &e->bd->one[k], &kinds[k]) < 0)
			return -1;
	return 0;
}

void weft__emu_bd_free(weft__emu *e)
{
	if (e->bd == NULL)
		return;
	for (size_t k = 0; k < NKINDS; k++) {
		bd_one *b = &e->bd->one[k];
		free(b->input);
		free(b->cpu);
		free(b->values);
		free(b->sorted);
		free(b->rows);
	}
	free(e->bd);
	e->bd = NULL;
}

/* ---- Propagation ---------------------------------------------------------------------- */

/* An output of the breakdown takes a value (dirty: written at the end if it changed). */
static int bd_set(weft__emu *e, weft__emu_chan *c, weft__emu_val v)
{
	return weft__emu_set(e, c, v);
}

/*
 * tr's selection: the task type in a body with a type, else the subsystem,
 * else none; OpenMP: the label when one shows, else the subsystem.
 */
static int select_tr(const bd_one *b, const weft__emu_cpu_st *cpu)
{
	weft__emu_val ss = cpu->out[b->ss].cur, tt = cpu->out[b->tt].cur;
	if (b->k->by_label)
		return tt.set ? SEL_TT : SEL_SS;
	if (ss.set && ss.v == b->k->task_body && tt.set)
		return SEL_TT;
	return ss.set ? SEL_SS : SEL_NONE;
}

/* The value of tr's selected input (none: "Unknown subsystem"). */
static weft__emu_val tr_value(const bd_one *b, const weft__emu_cpu_st *cpu, int sel)
{
	if (sel == SEL_SS)
		return cpu->out[b->ss].cur;
	if (sel == SEL_TT)
		return cpu->out[b->tt].cur;
	return weft__emu_int(UNKNOWN_SS);
}

/* The rows after input i's tri changed: the sorted values, rows that change. */
static int sort_changed(weft__emu *e, bd_one *b, uint32_t i, weft__emu_val tri)
{
	int64_t v = tri.set ? tri.v : 0;
	if (v == b->values[i])
		return 0;
	int64_t old = b->values[i];
	b->values[i] = v;
	/* keep `sorted` sorted: the old value's place moves to the new one's */
	int64_t *a = b->sorted;
	uint32_t j = 0;
	while (a[j] != old)
		j++;
	if (v > old)
		for (; j + 1 < b->ncpus && a[j + 1] < v; j++)
			a[j] = a[j + 1];
	else
		for (; j > 0 && a[j - 1] > v; j--)
			a[j] = a[j - 1];
	a[j] = v;
	for (uint32_t r = 0; r < b->ncpus; r++) {
		weft__emu_val want = weft__emu_int(b->sorted[r]);
		if (!weft__emu_val_eq(b->rows[r].cur, want) && bd_set(e, &b->rows[r], want) < 0)
			return -1;
	}
	return 0;
}

/* A dirty channel of breakdown `b`: a CPU output it reads, its tr or tri. */
static int bd_one_dirty(weft__emu *e, bd_one *b, weft__emu_chan *c)
{
	int32_t in = b->input[c->owner];
	if (in < 0)
		return 0;
	bd_cpu *s = &b->cpu[in];
	const weft__emu_cpu_st *cpu = &e->cpu[c->owner];
	if (c->role == WEFT__ROLE_CPU_OUT && b->k->by_label) {
		if (c->slot == b->tt) {
			s->sel0 = (int8_t)select_tr(b, cpu);
			return bd_set(e, &s->tr, tr_value(b, cpu, s->sel0));
		}
		if (c->slot == b->ss)
			return s->sel0 == SEL_SS ? bd_set(e, &s->tr, c->cur) : 0;
		return 0;
	}
	if (c->role == WEFT__ROLE_CPU_OUT) {
		if (c->slot == b->ss) {
			s->sel0 = (int8_t)select_tr(b, cpu);
			return bd_set(e, &s->tr, tr_value(b, cpu, s->sel0));
		}
		if (c->slot == b->tt)
			return s->sel0 == SEL_TT ? bd_set(e, &s->tr, c->cur) : 0;
		if (c->slot == b->idle) {
			s->sel1 = c->cur.set && c->cur.v == PROGRESSING ? SEL_TR : SEL_IDLE;
			return bd_set(e, &s->tri, s->sel1 == SEL_TR ? s->tr.cur : c->cur);
		}
		return 0;
	}
	if (c == &s->tr)
		return s->sel1 == SEL_TR ? bd_set(e, &s->tri, c->cur) : 0;
	if (c == &s->tri)
		return sort_changed(e, b, (uint32_t)in, c->cur);
	return 0;
}

int weft__emu_bd_dirty(weft__emu *e, weft__emu_chan *c)
{
	for (size_t k = 0; k < NKINDS; k++) {
		bd_one *b = &e->bd->one[k];
		if (b->mi < 0)
			continue;
		if (c->role != WEFT__ROLE_CPU_OUT) {
			/* tr and tri belong to one breakdown: theirs */
			int32_t in = b->input[c->owner];
			if (in < 0 || (c != &b->cpu[in].tr && c != &b->cpu[in].tri))
				continue;
		}
		if (bd_one_dirty(e, b, c) < 0)
			return -1;
	}
	return 0;
}

/* ---- The trace's frame ------------------------------------------------------------------- */

static const bd_one *find_one(const weft__emu *e, weft__emu_kind kind)
{
	for (size_t k = 0; e->bd != NULL && k < NKINDS; k++)
		if (kinds[k].kind == kind && e->bd->one[k].mi >= 0)
			return &e->bd->one[k];
	return NULL;
}

uint32_t weft__emu_bd_rows(const weft__emu *e, weft__emu_kind kind)
{
	const bd_one *b = find_one(e, kind);
	return b != NULL ? b->ncpus : 0;
}

/* The labels of a .pcf type of the model's own .pcf (task types), copied. */
static int copy_type_values(weft__emu *e, const bd_one *b, weft__emu_pcf_type *to)
{
	weft__emu_pcf scratch = { 0 };
	const weft__emu_model_spec *m = e->models[b->mi];
	int rc = 0;
	uint32_t type = e->slots[b->tt].spec->type;
	weft__emu_pcf_type *t = weft__emu_pcf_type_add(&scratch, type, "scratch");
	if (t == NULL)
		rc = WEFT_ENOMEM;
	if (rc == 0 && m->pcf != NULL)
		rc = m->pcf(e, WEFT__EMU_THREAD, &scratch);
	for (size_t i = 0; rc == 0 && t != NULL && i < t->nvalues; i++)
		rc = weft__emu_pcf_add(to, t->values[i].value, t->values[i].text);
	weft__emu_pcf_clear(&scratch);
	return rc;
}

int weft__emu_bd_pcf(weft__emu *e, weft__emu_kind kind, weft__emu_pcf *pcf)
{
	const bd_one *b = find_one(e, kind);
	if (b == NULL)
		return 0;
	weft__emu_pcf_type *t = weft__emu_pcf_type_add(pcf, b->k->type, b->k->title);
	if (t == NULL || weft__emu_pcf_add_list(t, e->slots[b->ss].spec->labels) < 0 ||
	    (!b->k->by_label && weft__emu_pcf_add_list(t, e->slots[b->idle].spec->labels) < 0))
		return WEFT_ENOMEM;
	return copy_type_values(e, b, t);
}
