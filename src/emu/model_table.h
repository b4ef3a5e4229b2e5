/* SPDX-License-Identifier: MIT */
/*
 * emu/model_table.h - models whose events each push, pop or set one value
 * of one channel (kernel, MPI, TAMPI, NODES; the subsystem events of the
 * task models too): a table of rules, and the end check of a stack.
 */
#ifndef WEFT_EMU_MODEL_TABLE_H
#define WEFT_EMU_MODEL_TABLE_H

#include "emu/engine.h"

enum weft__emu_action { WEFT__ACT_PUSH = 1, WEFT__ACT_POP, WEFT__ACT_SET, WEFT__ACT_IGNORE };

/* Event <model> `c` `v` does `action` with `value` on channel `chan`. */
typedef struct weft__emu_rule {
	char c, v;
	uint8_t chan;
	uint8_t action;      /* enum weft__emu_action */
	int64_t value;
} weft__emu_rule;

/* The rule of the event's category and value, or NULL. */
const weft__emu_rule *weft__emu_rule_find(const weft__emu_rule *rules, size_t n,
					  const weft__emu_ev *ev);
/*
 * Applies the event's rule to its thread's channel of model `spec`: 0, or
 * -1 after weft__emu_fail ("unknown <what> event" when no rule matches).
 */
int weft__emu_rule_apply(weft__emu *e, const weft__emu_model_spec *spec,
			 const weft__emu_rule *rules, size_t n, const weft__emu_ev *ev,
			 const char *what);
/*
 * The end check of a stack channel: every thread whose channel `chan` of
 * model `spec` still holds values is an end error, "thread T ended with N
 * stacked <noun>" (ovniemu's words). Returns -1 when one was found.
 */
int weft__emu_stack_end_check(weft__emu *e, const weft__emu_model_spec *spec, uint32_t chan,
			      const char *noun);
/* The event's thread must be running ("current thread T not running"). */
int weft__emu_require_running(weft__emu *e, const weft__emu_ev *ev);

#endif
