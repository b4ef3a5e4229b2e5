/* SPDX-License-Identifier: MIT */
/*
 * emu/task_model.c - the registries and stacks of a model that runs tasks
 * (task_model.h), the jumbo event that creates a task type, and the task
 * type values of the .pcf and of the outputs.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "emu/task_model.h"

int weft__emu_task_model_create(weft__emu *e, const weft__emu_model_spec *spec)
{
	const weft__emu_system *sys = e->sys;
	weft__emu_task_model *m = calloc(1, sizeof *m);
	if (m == NULL)
		return weft__emu_fail(e, "out of memory");
	e->model_state[weft__emu_model_index(e, spec)] = m;
	m->procs = calloc(sys->nprocs ? sys->nprocs : 1, sizeof *m->procs);
	m->stacks = calloc(sys->nthreads ? sys->nthreads : 1, sizeof *m->stacks);
	if (m->procs == NULL || m->stacks == NULL)
		return weft__emu_fail(e, "out of memory");
	m->nprocs = sys->nprocs;
	m->nthreads = sys->nthreads;
	for (size_t p = 0; p < m->nprocs; p++)
		if ((m->procs[p] = weft__emu_tasks_new()) == NULL)
			return weft__emu_fail(e, "out of memory");
	return 0;
}

weft__emu_task_model *weft__emu_task_model_get(weft__emu *e, const weft__emu_model_spec *spec)
{
	return e->model_state[weft__emu_model_index(e, spec)];
}

void weft__emu_task_model_destroy(weft__emu *e, const weft__emu_model_spec *spec)
{
	weft__emu_task_model *m = weft__emu_task_model_get(e, spec);
	if (m == NULL)
		return;
	for (size_t p = 0; m->procs != NULL && p < m->nprocs; p++)
		weft__emu_tasks_free(m->procs[p]);
	for (size_t t = 0; m->stacks != NULL && t < m->nthreads; t++)
		weft__emu_body_stack_free(&m->stacks[t]);
	free(m->procs);
	free(m->stacks);
	free(m);
}

int weft__emu_task_model_end_check(weft__emu *e, const weft__emu_model_spec *spec, uint32_t ch,
				   const char *what)
{
	int rc = 0, mi = weft__emu_model_index(e, spec);
	for (uint32_t t = 0; !e->opt.no_end_checks && t < e->sys->nthreads; t++) {
		uint32_t n = weft__emu_th_chan(e, t, mi, ch)->depth;
		if (n > 0) {
			weft__emu_end_error(e, t, "thread %" PRId64 " ended with %" PRIu32
					    " stacked %s", e->th[t].info->tid, n, what);
			rc = -1;
		}
	}
	return rc;
}

int weft__emu_task_model_type_event(weft__emu *e, weft__emu_task_model *m,
				    const weft__emu_ev *ev)
{
	if (ev->v != 'c')
		return weft__emu_fail(e, "unexpected event value %c", ev->v);
	if (!ev->jumbo)
		return weft__emu_fail(e, "expecting a jumbo event");
	if (ev->payload_size < 4)
		return weft__emu_fail(e, "jumbo payload of %" PRIu32 " bytes has no task type id",
				      ev->payload_size);
	uint32_t id = weft__emu_ev_u32(ev, 0);
	const char *label = (const char *)ev->payload + 4;
	const char *nul = memchr(label, '\0', ev->payload_size - 4);
	size_t len = nul != NULL ? (size_t)(nul - label) : ev->payload_size - 4;
	weft__emu_tasks *t = weft__emu_task_model_of(e, m, ev->thread);
	if (weft__emu_type_create(e, t, id, label, len) < 0)
		return -1;
	if (e->type_fn != NULL) {
		uint32_t last = (uint32_t)weft__emu_type_count(t) - 1;
		const weft__emu_task_type *tt = weft__emu_type_at(t, last);
		e->type_fn(e->type_ctx, ev->m, (uint32_t)e->th[ev->thread].info->proc, tt->id,
			   tt->label);
	}
	return 0;
}

int weft__emu_task_model_pcf(weft__emu *e, const weft__emu_task_model *m, weft__emu_pcf *pcf,
			     uint32_t type)
{
	weft__emu_pcf_type *pt = weft__emu_pcf_type_find(pcf, type);
	for (size_t p = 0; pt != NULL && p < m->nprocs; p++) {
		size_t n = weft__emu_type_count(m->procs[p]);
		for (uint32_t i = 0; i < n; i++) {
			const weft__emu_task_type *tt = weft__emu_type_at(m->procs[p], i);
			const char *had = weft__emu_pcf_find(pt, tt->value);
			if (had != NULL && strcmp(had, tt->label) != 0)
				weft__emu_warn(e, "collision occurred in task type labels: %s and %s",
					       had, tt->label);
			else if (had == NULL && weft__emu_pcf_add(pt, tt->value, tt->label) < 0)
				return WEFT_ENOMEM;
		}
	}
	return 0;
}

const char *weft__emu_task_model_label(const weft__emu_task_model *m, int64_t value)
{
	for (size_t p = 0; p < m->nprocs; p++) {
		size_t n = weft__emu_type_count(m->procs[p]);
		for (uint32_t i = 0; i < n; i++) {
			const weft__emu_task_type *tt = weft__emu_type_at(m->procs[p], i);
			if (tt->value == value)
				return tt->label;
		}
	}
	return NULL;
}

/* ---- Task types handed between emulators (emu.h) --------------------------------- */

void weft__emu_set_type_sink(weft__emu *e, weft__emu_type_fn fn, void *ctx)
{
	e->type_fn = fn;
	e->type_ctx = ctx;
}

/* The models that run tasks, whose state is a weft__emu_task_model. */
static const weft__emu_model_spec *const task_models[] = {
	&weft__emu_model_nosv, &weft__emu_model_nanos6, &weft__emu_model_openmp
};

int weft__emu_task_type_add(weft__emu *e, char model, uint32_t proc, uint32_t id,
			    const char *label)
{
	int mi = model >= 0 ? e->model_by_id[(unsigned char)model] : -1;
	const weft__emu_task_model *m = NULL;
	for (size_t k = 0; mi >= 0 && k < sizeof task_models / sizeof *task_models; k++)
		if (e->models[mi] == task_models[k])
			m = e->model_state[mi];
	if (m == NULL || proc >= m->nprocs)
		return weft__error(WEFT_EFORMAT, NULL, WEFT_NO_OFFSET,
				   "internal error: a task type of model '%c', process %" PRIu32
				   ", that the emulation does not have", model, proc);
	if (weft__emu_type_create(e, m->procs[proc], id, label, strlen(label)) < 0)
		return weft__error(WEFT_EFORMAT, NULL, WEFT_NO_OFFSET, "internal error: %s",
				   e->error ? e->error : "a task type cannot be added");
	return 0;
}
