/* SPDX-License-Identifier: MIT */
/*
 * outputs/paraver/paraver_emu.h - the Paraver output of an emulated ovni
 * trace (paraver_emu.c), and its conversion on looms shared among threads
 * and ranks (paraver_emu_shared.c): what the two files share.
 *
 * Internal to libweft (weft__ prefix).
 */
#ifndef WEFT_OUTPUTS_PARAVER_EMU_H
#define WEFT_OUTPUTS_PARAVER_EMU_H

#include <stddef.h>
#include <stdint.h>

#include "emu/emu.h"
#include "outputs/bg_writer.h"
#include "outputs/emu_output.h"
#include "outputs/outputs.h"
#include "outputs/writer.h"

/* ---- The text of a record --------------------------------------------------------- */

/* Bytes a record's line takes at most: prefix (31) + time (24) + type and
 * value (21 each) + 2. */
#define WEFT__PRV_LINE_MAX 128

/*
 * What the lines of records are made from: per trace, the prefix of each
 * row, "2:0:1:1:<row + 1>:" (WEFT__PRV_ROW_PREFIX bytes each, its length
 * first; NULL for a trace not written), made once; and the text of the
 * last time written (the records of an event share it).
 */
#define WEFT__PRV_ROW_PREFIX 32
typedef struct weft__prv_lines {
	char *prefix[WEFT__EMU_KINDS];
	uint64_t time;
	char time_text[24];
	size_t time_len;
} weft__prv_lines;

/* The prefixes of the traces `e` writes: 0 or WEFT_ENOMEM (message set). */
int weft__prv_lines_init(weft__prv_lines *l, const weft__emu *e);
void weft__prv_lines_free(weft__prv_lines *l);
/* Writes the line of `r` at `time` (newline included) at `p`, which has
 * room for WEFT__PRV_LINE_MAX bytes; returns its end. */
char *weft__prv_line(weft__prv_lines *l, const weft__emu_record *r, uint64_t time, char *p);

/* ---- The writer -------------------------------------------------------------------- */

/*
 * One .prv being written: formatted into `ob`, whose full buffers a
 * thread of its own writes (positioned, written back to the disk as it
 * goes, as the output is synced at the end), so that formatting and the
 * kernel's copying overlap: the .prv are several times larger than the
 * trace.
 */
typedef struct weft__prv_file {
	int fd;
	weft__outbuf ob;
	weft__bg_output bg;
} weft__prv_file;

/* Bytes a .prv's buffer hands to its writer thread at once (and slack for
 * the record that crosses that). */
#define WEFT__PRV_CHUNK (1u << 20)
#define WEFT__PRV_CHUNK_SLACK (4u << 10)

/* What the lines of a shared conversion leave for the end. */
typedef struct weft__paraver_emu_shared {
	int first_found;      /* the first time of all streams (the origin) */
	uint64_t first;
	uint64_t now;         /* the latest last event of the parts (since the origin) */
	uint64_t events;      /* handled by the parts */
	uint64_t problems;    /* the parts' diagnostics and failures */
} weft__paraver_emu_shared;

typedef struct weft__paraver_emu {
	weft__emu *emu;
	char *out;            /* OUT (the directory) */
	char *tmp;            /* the temporary directory being written */
	char *cfg_source;     /* ovni's views to copy into cfg/, or NULL */
	int replace;          /* OUT exists and is replaced */
	int committed;
	weft__prv_file prv[WEFT__EMU_KINDS]; /* thread, cpu, the breakdowns (fd -1: none) */
	weft__emu_window win; /* the time window */
	weft__prv_lines lines;
	weft__paraver_emu_shared shared;
} weft__paraver_emu;

/* Writes lines of trace `kind` into its .prv: 0 or WEFT_EIO (message set). */
int weft__paraver_emu_put(weft__paraver_emu *ew, int kind, const char *lines, size_t len);
/*
 * Starts the emulation again from nothing (the shared conversion could
 * not give one emulator's output: one thread converts after all): a new
 * emulator, the .prv files emptied. 0 or < 0 (message set).
 */
int weft__paraver_emu_restart(weft_output_writer *w);

/*
 * The writer's convert_shared (outputs/writer.h): the looms shared among
 * threads and ranks (paraver_emu_shared.c says how). 1 when done, 0 when
 * the caller reads the merged cursor into the writer.
 */
int weft__paraver_emu_convert_shared(weft_output_writer *w);

#endif /* WEFT_OUTPUTS_PARAVER_EMU_H */
