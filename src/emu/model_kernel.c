/* SPDX-License-Identifier: MIT */
/*
 * emu/model_kernel.c - the kernel model ('K', docs/emulation.md section
 * 3.6): context switches seen by the runtime (nOS-V at ovni.level >= 3).
 * KCO pushes "Out of the CPU" and marks the thread out of its CPU (its
 * ovni and nOS-V events are then errors) until KCI pops it. The channel
 * shows on the thread's row whatever its state.
 */
#include "emu/model_table.h"

enum { CH_CS = 0, CH_MAX };
enum { ST_CSOUT = 3 };

static const weft__emu_label cs_labels[] = {
	{ ST_CSOUT, "Context switch: Out of the CPU" }, { 0, NULL }
};

static const weft__emu_chan_spec chans[CH_MAX] = {
	[CH_CS] = { .name = "context_switch", .type = 45, .prefix = "Kernel context switch",
		    .labels = cs_labels, .stack = 1, .track = WEFT__TRACK_ANY,
		    .prv_flags = WEFT__PRV_SKIPDUP },
};

static const weft__emu_rule rules[] = {
	{ 'C', 'O', CH_CS, WEFT__ACT_PUSH, ST_CSOUT },
	{ 'C', 'I', CH_CS, WEFT__ACT_POP, ST_CSOUT },
};

static int kernel_event(weft__emu *e, const weft__emu_ev *ev)
{
	if (ev->c != 'C')
		return weft__emu_fail(e, "unknown Kernel event category");
	if (ev->v == 'O' || ev->v == 'I')
		e->th[ev->thread].out_of_cpu = ev->v == 'O';
	return weft__emu_rule_apply(e, &weft__emu_model_kernel, rules,
				    sizeof rules / sizeof rules[0], ev, "context switch");
}

const weft__emu_model_spec weft__emu_model_kernel = {
	.id = 'K', .name = "kernel", .version = "1.0.0",
	.chans = chans, .nchans = CH_MAX,
	.event = kernel_event,
};
