/* SPDX-License-Identifier: MIT */
/*
 * outputs/emu_shared.h - the outputs of an emulated ovni trace (Paraver,
 * Perfetto) converted with the looms shared among threads and ranks:
 * byte for byte one emulator's output (outputs/emu_shared.c says how).
 *
 * Internal to libweft (weft__ prefix).
 */
#ifndef WEFT_OUTPUTS_EMU_SHARED_H
#define WEFT_OUTPUTS_EMU_SHARED_H

#include <stddef.h>
#include <stdint.h>

#include "emu/emu.h"
#include "outputs/writer.h"

/* Bytes a record's .prv line takes at most: prefix (31) + time (24) + type
 * and value (21 each) + 2. */
#define WEFT__PRV_LINE_MAX 128
#define WEFT__PRV_ROW_PREFIX 32

/*
 * What the .prv lines of records are made from: per trace, the prefix of
 * each row, "2:0:1:1:<row + 1>:" (WEFT__PRV_ROW_PREFIX bytes each, its
 * length first; NULL for a trace not written), made once; and the text
 * of the last time written (the records of an event share it). Made by
 * the Paraver output and by the parts that format its lines.
 */
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

/* What an emulated output gives the shared conversion. `w` is its impl. */
typedef struct weft__emu_target {
	/* 1: the parts format the .prv lines (Paraver); 0: they hand over
	 * each record of a thread or CPU with what the emulator knew of it
	 * (the thread a row shows, a stack's entries: Perfetto). */
	int lines;
	/* 1 when one emulator's output can come from parts (no time window,
	 * no option that sees every loom at once). */
	int (*can_share)(const weft_output_writer *w);
	/* The writer's emulator: it takes the task types and warnings in the
	 * merged order, and ends as one emulator that handled every event. */
	weft__emu *(*emulator)(void *w);
	/* The merge, in the order of one emulator: lines of trace `kind`; a
	 * record (`stack`: its `depth` entries, or NULL) */
	int (*put_lines)(void *w, int kind, const char *text, size_t len);
	int (*put_record)(void *w, const weft__emu_record *r, int32_t thread,
			  const int64_t *stack);
	/* 1 once the output failed (a write) */
	int (*failed)(void *w);
	/* Starts the output over from nothing (one thread converts after
	 * all): 0, or < 0 said in the report. */
	int (*restart)(weft_output_writer *w);
} weft__emu_target;

/*
 * The writer's convert_shared (outputs/writer.h) for target `t`: 1 when
 * done (its failures said), 0 when the caller reads the merged cursor
 * into the writer (not shared, or converted again on one thread).
 * Collective on ranks; a follower (no impl) takes part.
 */
int weft__emu_convert_shared(weft_output_writer *w, const weft__emu_target *t);

#endif /* WEFT_OUTPUTS_EMU_SHARED_H */
