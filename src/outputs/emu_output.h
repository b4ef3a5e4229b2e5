/* SPDX-License-Identifier: MIT */
/*
 * outputs/emu_output.h - what the outputs of an emulated ovni trace share
 * (paraver/paraver_emu.c, perfetto/perfetto_emu.c): the options emulation
 * cannot honour, the report's lines (the models emulated, the emulator's
 * diagnostics), and the time window.
 *
 * The window [from, to] (trace clock; to 0: none): the emulation replays
 * every event from the start (the state at `from` depends on them); the
 * records before `from` are not wanted, the state of every row at `from`
 * is (weft__emu_snapshot), and the reading stops after `to`.
 *
 * Internal to libweft (weft__ prefix).
 */
#ifndef WEFT_OUTPUTS_EMU_OUTPUT_H
#define WEFT_OUTPUTS_EMU_OUTPUT_H

#include <stdint.h>

#include "emu/emu.h"
#include "outputs/writer.h"

/*
 * Refuses the options emulation cannot honour (stream or event patterns,
 * virtual time) and, when `path_why` is not NULL, OUT (the output's own
 * reason): 0, or WEFT_EINVAL with the reason in the report.
 */
int weft__emu_output_check(weft_output_writer *w, const char *path_why);
/* A note naming the models emulated. */
void weft__emu_output_say_models(weft_output_writer *w, const weft__emu *e);
/* The emulator's diagnostics as report lines; 1 when one is an error. */
int weft__emu_output_say_diags(weft_output_writer *w, const weft__emu *e);
/* writer ops: the caller's reading stopped (an error line, data lost). */
void weft__emu_output_read_failed(weft_output_writer *w, uint32_t stream,
				  const char *message);

/* The time window of an emulated output. */
typedef struct weft__emu_window {
	uint64_t from, to;    /* trace clock; to 0: none */
	int windowed;         /* from or to is set */
	int opened;           /* the window has begun: records are wanted */
	int snapshot;         /* 1 while the state at `from` is written */
	int cut;              /* the reading stopped at the window's end */
	uint64_t base;        /* emulator time of the window's start (0: none) */
	size_t diag_from;     /* the trace's diagnostics before the reading */
} weft__emu_window;

/*
 * The end of the reading: the emulator's end checks (when every event was
 * read: not after the window's cut), its diagnostics and the trace's as
 * report lines (the reading's in stream order, as the reading on threads
 * gives them), the events counted. 0 to write the output (*refused: an
 * error was found, the output keeps what came before it: --allow-loss),
 * WEFT_EIO after `failed`, or WEFT_EFORMAT for a refused trace without
 * --allow-loss (said in the report, with `hint`: what --allow-loss would
 * keep).
 */
int weft__emu_output_end(weft_output_writer *w, weft__emu *e, const weft__emu_window *win,
			 int failed, const char *hint, int *refused);

/* The window of the writer's options (records wanted at once without one). */
void weft__emu_window_init(weft__emu_window *win, const weft_output_writer *w);
/*
 * Before the emulator gets `ev`: 1 when it is past the window's end (stop
 * reading: win->cut is set), 2 when the window began now (the state at
 * `from` was written), 0 to go on, or the sink's error.
 */
int weft__emu_window_step(weft__emu_window *win, weft__emu *e, const weft_event *ev);
/*
 * Opens the window: records are wanted from now on, starting with the
 * state of every row at `from` (nothing when no event came before it).
 * 0 or the sink's error.
 */
int weft__emu_window_open(weft__emu_window *win, weft__emu *e);

#endif /* WEFT_OUTPUTS_EMU_OUTPUT_H */
