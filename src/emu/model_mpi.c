/* SPDX-License-Identifier: MIT */
/*
 * emu/model_mpi.c - the MPI model ('M', docs/emulation.md section 3.6): a
 * stack of the MPI functions the running thread is in (shown while it
 * runs); the events must come from a running thread and no function may
 * be left open at the end.
 */
#include "emu/model_table.h"

enum { CH_FUNCTION = 0, CH_MAX };

/* Values 1..49 in ovniemu's order. */
static const weft__emu_label fn_labels[] = {
	{ 1, "MPI_Init" },
	{ 2, "MPI_Init_thread" },
	{ 3, "MPI_Finalize" },
	{ 4, "MPI_Wait" },
	{ 5, "MPI_Waitall" },
	{ 6, "MPI_Waitany" },
	{ 7, "MPI_Waitsome" },
	{ 8, "MPI_Test" },
	{ 9, "MPI_Testall" },
	{ 10, "MPI_Testany" },
	{ 11, "MPI_Testsome" },
	{ 12, "MPI_Recv" },
	{ 13, "MPI_Send" },
	{ 14, "MPI_Bsend" },
	{ 15, "MPI_Rsend" },
	{ 16, "MPI_Ssend" },
	{ 17, "MPI_Sendrecv" },
	{ 18, "MPI_Sendrecv_replace" },
	{ 19, "MPI_Irecv" },
	{ 20, "MPI_Isend" },
	{ 21, "MPI_Ibsend" },
	{ 22, "MPI_Irsend" },
	{ 23, "MPI_Issend" },
	{ 24, "MPI_Isendrecv" },
	{ 25, "MPI_Isendrecv_replace" },
	{ 26, "MPI_Allgather" },
	{ 27, "MPI_Allreduce" },
	{ 28, "MPI_Alltoall" },
	{ 29, "MPI_Barrier" },
	{ 30, "MPI_Bcast" },
	{ 31, "MPI_Gather" },
	{ 32, "MPI_Reduce" },
	{ 33, "MPI_Reduce_scatter" },
	{ 34, "MPI_Reduce_scatter_block" },
	{ 35, "MPI_Scatter" },
	{ 36, "MPI_Scan" },
	{ 37, "MPI_Exscan" },
	{ 38, "MPI_Iallgather" },
	{ 39, "MPI_Iallreduce" },
	{ 40, "MPI_Ialltoall" },
	{ 41, "MPI_Ibarrier" },
	{ 42, "MPI_Ibcast" },
	{ 43, "MPI_Igather" },
	{ 44, "MPI_Ireduce" },
	{ 45, "MPI_Ireduce_scatter" },
	{ 46, "MPI_Ireduce_scatter_block" },
	{ 47, "MPI_Iscatter" },
	{ 48, "MPI_Iscan" },
	{ 49, "MPI_Iexscan" },
	{ 0, NULL }
};

/* (category, entering value, function); the leaving value is its upper case
 * (']' for '['). */
#define FN(c, in, out, fn) { c, in, CH_FUNCTION, WEFT__ACT_PUSH, fn }, \
			   { c, out, CH_FUNCTION, WEFT__ACT_POP, fn }

static const weft__emu_rule rules[] = {
	FN('U', 'i', 'I', 1),  /* MPI_Init */
	FN('U', 't', 'T', 2),  /* MPI_Init_thread */
	FN('U', 'f', 'F', 3),  /* MPI_Finalize */
	FN('W', '[', ']', 4),  /* MPI_Wait */
	FN('W', 'a', 'A', 5),  /* MPI_Waitall */
	FN('W', 'y', 'Y', 6),  /* MPI_Waitany */
	FN('W', 's', 'S', 7),  /* MPI_Waitsome */
	FN('T', '[', ']', 8),  /* MPI_Test */
	FN('T', 'a', 'A', 9),  /* MPI_Testall */
	FN('T', 'y', 'Y', 10),  /* MPI_Testany */
	FN('T', 's', 'S', 11),  /* MPI_Testsome */
	FN('R', '[', ']', 12),  /* MPI_Recv */
	FN('R', 's', 'S', 17),  /* MPI_Sendrecv */
	FN('R', 'o', 'O', 18),  /* MPI_Sendrecv_replace */
	FN('r', '[', ']', 19),  /* MPI_Irecv */
	FN('r', 's', 'S', 24),  /* MPI_Isendrecv */
	FN('r', 'o', 'O', 25),  /* MPI_Isendrecv_replace */
	FN('S', '[', ']', 13),  /* MPI_Send */
	FN('S', 'b', 'B', 14),  /* MPI_Bsend */
	FN('S', 'r', 'R', 15),  /* MPI_Rsend */
	FN('S', 's', 'S', 16),  /* MPI_Ssend */
	FN('s', '[', ']', 20),  /* MPI_Isend */
	FN('s', 'b', 'B', 21),  /* MPI_Ibsend */
	FN('s', 'r', 'R', 22),  /* MPI_Irsend */
	FN('s', 's', 'S', 23),  /* MPI_Issend */
	FN('A', 'g', 'G', 26),  /* MPI_Allgather */
	FN('A', 'r', 'R', 27),  /* MPI_Allreduce */
	FN('A', 'a', 'A', 28),  /* MPI_Alltoall */
	FN('a', 'g', 'G', 38),  /* MPI_Iallgather */
	FN('a', 'r', 'R', 39),  /* MPI_Iallreduce */
	FN('a', 'a', 'A', 40),  /* MPI_Ialltoall */
	FN('C', 'b', 'B', 29),  /* MPI_Barrier */
	FN('C', 's', 'S', 36),  /* MPI_Scan */
	FN('C', 'e', 'E', 37),  /* MPI_Exscan */
	FN('c', 'b', 'B', 41),  /* MPI_Ibarrier */
	FN('c', 's', 'S', 48),  /* MPI_Iscan */
	FN('c', 'e', 'E', 49),  /* MPI_Iexscan */
	FN('D', 'b', 'B', 30),  /* MPI_Bcast */
	FN('D', 'g', 'G', 31),  /* MPI_Gather */
	FN('D', 's', 'S', 35),  /* MPI_Scatter */
	FN('d', 'b', 'B', 42),  /* MPI_Ibcast */
	FN('d', 'g', 'G', 43),  /* MPI_Igather */
	FN('d', 's', 'S', 47),  /* MPI_Iscatter */
	FN('E', '[', ']', 32),  /* MPI_Reduce */
	FN('E', 's', 'S', 33),  /* MPI_Reduce_scatter */
	FN('E', 'b', 'B', 34),  /* MPI_Reduce_scatter_block */
	FN('e', '[', ']', 44),  /* MPI_Ireduce */
	FN('e', 's', 'S', 45),  /* MPI_Ireduce_scatter */
	FN('e', 'b', 'B', 46),  /* MPI_Ireduce_scatter_block */
};

static const weft__emu_chan_spec chans[CH_MAX] = {
	[CH_FUNCTION] = { .name = "function", .type = 25, .prefix = "MPI function",
			  .labels = fn_labels, .stack = 1, .track = WEFT__TRACK_RUN,
			  .prv_flags = WEFT__PRV_SKIPDUP },
};

static int mpi_event(weft__emu *e, const weft__emu_ev *ev)
{
	if (weft__emu_require_running(e, ev) < 0)
		return -1;
	return weft__emu_rule_apply(e, &weft__emu_model_mpi, rules,
				    sizeof rules / sizeof rules[0], ev, "mpi function");
}

static int mpi_finish(weft__emu *e)
{
	if (e->opt.no_end_checks)
		return 0;
	return weft__emu_stack_end_check(e, &weft__emu_model_mpi, CH_FUNCTION, "mpi functions");
}

const weft__emu_model_spec weft__emu_model_mpi = {
	.id = 'M', .name = "mpi", .version = "1.0.0",
	.chans = chans, .nchans = CH_MAX,
	.event = mpi_event, .finish = mpi_finish,
};
