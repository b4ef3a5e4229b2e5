/* SPDX-License-Identifier: MIT */
/*
 * emu/model_nodes.c - the NODES model ('D', docs/emulation.md section
 * 3.8): a stack of subsystems of the running thread (shown while it is
 * active); `[` enters, `]` leaves; none may be left at the end.
 */
#include "emu/model_table.h"

enum { CH_SS = 0, CH_MAX };

enum {
	ST_REGISTER = 1, ST_UNREGISTER, ST_IF0_WAIT, ST_IF0_INLINE, ST_TASKWAIT, ST_CREATE,
	ST_SUBMIT, ST_SPAWN
};

static const weft__emu_label ss_labels[] = {
	{ ST_REGISTER, "Dependencies: Registering task accesses" },
	{ ST_UNREGISTER, "Dependencies: Unregistering task accesses" },
	{ ST_IF0_WAIT, "If0: Waiting for an If0 task" },
	{ ST_IF0_INLINE, "If0: Executing an If0 task inline" },
	{ ST_TASKWAIT, "Taskwait: Taskwait" },
	{ ST_CREATE, "Add Task: Creating a task" },
	{ ST_SUBMIT, "Add Task: Submitting a task" },
	{ ST_SPAWN, "Spawn Function: Spawning a function" },
	{ 0, NULL }
};

static const weft__emu_chan_spec chans[CH_MAX] = {
	[CH_SS] = { .name = "subsystem", .type = 30, .prefix = "NODES subsystem",
		    .labels = ss_labels, .stack = 1, .track = WEFT__TRACK_ACT,
		    .prv_flags = WEFT__PRV_SKIPDUP },
};

#define PAIR(c, st) { c, '[', CH_SS, WEFT__ACT_PUSH, st }, { c, ']', CH_SS, WEFT__ACT_POP, st }

static const weft__emu_rule rules[] = {
	PAIR('R', ST_REGISTER), PAIR('U', ST_UNREGISTER), PAIR('W', ST_IF0_WAIT),
	PAIR('I', ST_IF0_INLINE), PAIR('T', ST_TASKWAIT), PAIR('C', ST_CREATE),
	PAIR('S', ST_SUBMIT), PAIR('P', ST_SPAWN),
};

static int nodes_event(weft__emu *e, const weft__emu_ev *ev)
{
	if (weft__emu_require_running(e, ev) < 0)
		return -1;
	if (weft__emu_rule_find(rules, sizeof rules / sizeof rules[0], ev) == NULL &&
	    !(ev->c == 'R' || ev->c == 'U' || ev->c == 'W' || ev->c == 'I' || ev->c == 'T' ||
	      ev->c == 'C' || ev->c == 'S' || ev->c == 'P'))
		return weft__emu_fail(e, "unknown NODES event category");
	return weft__emu_rule_apply(e, &weft__emu_model_nodes, rules,
				    sizeof rules / sizeof rules[0], ev, "NODES subsystem");
}

static int nodes_finish(weft__emu *e)
{
	if (e->opt.no_end_checks)
		return 0;
	return weft__emu_stack_end_check(e, &weft__emu_model_nodes, CH_SS, "nodes subsystems");
}

const weft__emu_model_spec weft__emu_model_nodes = {
	.id = 'D', .name = "nodes", .version = "1.0.0",
	.chans = chans, .nchans = CH_MAX,
	.event = nodes_event, .finish = nodes_finish,
};
