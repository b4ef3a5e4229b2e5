/* SPDX-License-Identifier: MIT */
/*
 * emu/task_model.h - what a model that runs tasks keeps besides its
 * channels (Nanos6, OpenMP): the task types and tasks of every process,
 * the body stack of every thread, the jumbo event that creates a task
 * type, and the per-trace values of the task type channel (the label
 * hashes) for the .pcf and for the outputs that name values as they go.
 */
#ifndef WEFT_EMU_TASK_MODEL_H
#define WEFT_EMU_TASK_MODEL_H

#include "emu/task.h"
#include "emu/pcf.h"

typedef struct weft__emu_task_model {
	weft__emu_tasks **procs;        /* per process (weft__emu_system.procs) */
	weft__emu_body_stack *stacks;   /* per thread */
	size_t nprocs, nthreads;
	void *extra;                    /* the model's own state besides (nOS-V: its
	                                   hardware counters), its free hook frees it */
} weft__emu_task_model;

/*
 * The state of model `spec` (its create hook): empty registries for
 * every process, empty stacks for every thread, kept as the model's state.
 * 0 or -1 after weft__emu_fail.
 */
int weft__emu_task_model_create(weft__emu *e, const weft__emu_model_spec *spec);
/* The state of model `spec` (NULL before its create hook ran). */
weft__emu_task_model *weft__emu_task_model_get(weft__emu *e, const weft__emu_model_spec *spec);
/* Frees the state of model `spec` (its free hook). */
void weft__emu_task_model_destroy(weft__emu *e, const weft__emu_model_spec *spec);

/* The registry of the process of thread `t`. */
static inline weft__emu_tasks *weft__emu_task_model_of(const weft__emu *e,
							  const weft__emu_task_model *m, uint32_t t)
{
	return m->procs[e->th[t].info->proc];
}

/*
 * A jumbo "creates a task type" event (6Yc, POc): its data is the type id
 * (u32) and the label (up to a NUL or the end). 0 or -1 after
 * weft__emu_fail (ovniemu's messages for a value other than 'c', an event
 * that is not jumbo; the type rules of weft__emu_type_create).
 */
int weft__emu_task_model_type_event(weft__emu *e, weft__emu_task_model *m,
				    const weft__emu_ev *ev);

/*
 * Adds the value of every task type to .pcf type `type` (declared by the
 * model's channel table before): process by process, each in creation
 * order, a value already there kept (ovniemu's task_create_pcf_types; two
 * labels of one value, a hash collision that ovniemu refuses, is a
 * warning). 0 or WEFT_ENOMEM; nothing when `type` is not in the .pcf.
 */
int weft__emu_task_model_pcf(weft__emu *e, const weft__emu_task_model *m, weft__emu_pcf *pcf,
			     uint32_t type);

/*
 * The end check of ovniemu's linter mode: an end error per thread whose
 * channel `ch` of model `spec` (a stack) is not empty, "thread <tid> ended
 * with <n> stacked <what>". 0, or -1 when a thread failed it.
 */
int weft__emu_task_model_end_check(weft__emu *e, const weft__emu_model_spec *spec, uint32_t ch,
				   const char *what);

/* The label of a task type value created so far, or NULL. */
const char *weft__emu_task_model_label(const weft__emu_task_model *m, int64_t value);

#endif
