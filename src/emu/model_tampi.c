/* SPDX-License-Identifier: MIT */
/*
 * emu/model_tampi.c - the TAMPI model ('T', docs/emulation.md section
 * 3.6): a stack of subsystems of the running thread (shown while it is
 * active), and at the end no subsystem may be left.
 */
#include "emu/model_table.h"

enum { CH_SS = 0, CH_MAX };

enum {
	ST_COMM_ISSUE = 1, ST_GLOBAL_CHECK, ST_LIB_INTERFACE, ST_LIB_POLLING, ST_QUEUE_ADD,
	ST_QUEUE_TRANSFER, ST_REQ_COMPLETED, ST_REQ_TEST, ST_REQ_TESTALL, ST_REQ_TESTSOME,
	ST_TICKET_CREATE, ST_TICKET_WAIT
};

/* In ovniemu's .pcf order (Testing before Processing a completed request). */
static const weft__emu_label ss_labels[] = {
	{ ST_COMM_ISSUE, "Communication: Issuing a non-blocking operation" },
	{ ST_GLOBAL_CHECK, "Global array: Checking pending requests" },
	{ ST_LIB_INTERFACE, "Library code: Interface function" },
	{ ST_LIB_POLLING, "Library code: Polling function" },
	{ ST_QUEUE_ADD, "Queue: Adding to a queue" },
	{ ST_QUEUE_TRANSFER, "Queue: Transfering to global array" },
	{ ST_REQ_TEST, "Request: Testing a request" },
	{ ST_REQ_COMPLETED, "Request: Processing a completed request" },
	{ ST_REQ_TESTALL, "Request: Testing all requests" },
	{ ST_REQ_TESTSOME, "Request: Testing some requests" },
	{ ST_TICKET_CREATE, "Ticket: Creating a ticket" },
	{ ST_TICKET_WAIT, "Ticket: Waiting a ticket" },
	{ 0, NULL }
};

static const weft__emu_chan_spec chans[CH_MAX] = {
	[CH_SS] = { .name = "subsystem", .type = 20, .prefix = "TAMPI subsystem",
		    .labels = ss_labels, .stack = 1, .track = WEFT__TRACK_ACT,
		    .prv_flags = WEFT__PRV_SKIPDUP },
};

/* An upper-case value pops what its lower-case one pushed. */
#define PAIR(c, v, st) { c, v, CH_SS, WEFT__ACT_PUSH, st }, \
		       { c, (char)((v) - 'a' + 'A'), CH_SS, WEFT__ACT_POP, st }

static const weft__emu_rule rules[] = {
	PAIR('C', 'i', ST_COMM_ISSUE), PAIR('G', 'c', ST_GLOBAL_CHECK),
	PAIR('L', 'i', ST_LIB_INTERFACE), PAIR('L', 'p', ST_LIB_POLLING),
	PAIR('Q', 'a', ST_QUEUE_ADD), PAIR('Q', 't', ST_QUEUE_TRANSFER),
	PAIR('R', 'c', ST_REQ_COMPLETED), PAIR('R', 't', ST_REQ_TEST),
	PAIR('R', 'a', ST_REQ_TESTALL), PAIR('R', 's', ST_REQ_TESTSOME),
	PAIR('T', 'c', ST_TICKET_CREATE), PAIR('T', 'w', ST_TICKET_WAIT),
};

static int tampi_event(weft__emu *e, const weft__emu_ev *ev)
{
	if (weft__emu_require_running(e, ev) < 0)
		return -1;
	return weft__emu_rule_apply(e, &weft__emu_model_tampi, rules,
				    sizeof rules / sizeof rules[0], ev, "TAMPI subsystem");
}

static int tampi_finish(weft__emu *e)
{
	if (e->opt.no_end_checks)
		return 0;
	return weft__emu_stack_end_check(e, &weft__emu_model_tampi, CH_SS, "tampi subsystems");
}

const weft__emu_model_spec weft__emu_model_tampi = {
	.id = 'T', .name = "tampi", .version = "1.0.0",
	.chans = chans, .nchans = CH_MAX,
	.event = tampi_event, .finish = tampi_finish,
};
