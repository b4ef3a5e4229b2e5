/* SPDX-License-Identifier: MIT */
/*
 * analysis/counts.c - weft_counts_compute() (weft/counts.h): how many
 * events of each code a trace has, over all streams and per stream (what
 * `weft top` prints). Built for speed: each stream is read alone through
 * its own cursor in stored order (no merge, no sorting; ROSS, whose
 * streams share files, is read in one pass over its files), and a
 * 3-letter ASCII code is counted through one look-up in a flat table
 * indexed by its three bytes; no payload is decoded. On several cores,
 * threads share the streams (core/parts.c), and on several MPI ranks the
 * ranks do (weft/dist.h): their tables travel packed and are merged code
 * by code, by text.
 */
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "weft/counts.h"
#include "weft/span.h"
#include "analysis/spans_share.h"
#include "util/strtab.h"

/* ---- Code table: code -> dense slot number ------------------------------- */

/* 7 bits per character, three characters: the flat table's size. */
#define FAST_TABLE_SIZE (1u << 21)

/* What is counted of one code: events, and those with a duration, with their time. */
typedef struct code_cell {
	uint64_t count;
	uint64_t timed;      /* intervals; with span_time, events that began a span */
	uint64_t time;       /* sum of their durations, ns */
} code_cell;

typedef struct code_slot {
	const char *code;   /* the table's copy */
	uint32_t len;
	code_cell total;    /* over all streams */
} code_slot;

typedef struct code_table {
	int32_t *fast;      /* slot + 1 of each 3-character ASCII code, 0 = none */
	weft__strtab codes; /* every code: string i is slot i */
	code_slot *slots;
	size_t slot_count, slot_cap;
} code_table;

/* Index of a 3-character code in the flat table, or -1 when not ASCII. */
static inline int64_t fast_index(const char *code, uint32_t len)
{
	const unsigned char *k = (const unsigned char *)code;

	if (len != 3 || ((k[0] | k[1] | k[2]) & 0x80) != 0)
		return -1;
	return (int64_t)(((uint32_t)k[0] << 14) | ((uint32_t)k[1] << 7) | k[2]);
}

/* The flat table is allocated zeroed: untouched pages cost no memory. */
static int code_table_init(code_table *t)
{
	memset(t, 0, sizeof *t);
	t->fast = calloc(FAST_TABLE_SIZE, sizeof *t->fast);
	return t->fast != NULL ? 0 : -1;
}

/* Releases the table and the code strings. */
static void code_table_free(code_table *t)
{
	weft__strtab_free(&t->codes);
	free(t->slots);
	free(t->fast);
}

/*
 * Slot of any code, creating it on first sight; -1 when out of memory.
 * 3-letter ASCII codes (ovni's) are found in the flat table; the others
 * (Heph descriptions, ROSS and Pallas record names) by hash.
 */
static int64_t code_table_slot(code_table *t, const char *code, uint32_t len)
{
	int64_t fi = fast_index(code, len);
	size_t slot;

	if (fi >= 0 && t->fast[fi] > 0)
		return t->fast[fi] - 1;
	int added = weft__strtab_intern(&t->codes, code, len, &slot);
	if (added == 1 && weft__array_grow((void **)&t->slots, &t->slot_cap, slot + 1,
					   sizeof *t->slots) == 0) {
		t->slots[slot] = (code_slot){ weft__strtab_text(&t->codes, slot), len, { 0, 0, 0 } };
		t->slot_count = slot + 1;
	}
	if (added < 0 || slot >= t->slot_count)
		return -1;
	if (fi >= 0)
		t->fast[fi] = (int32_t)(slot + 1);
	return (int64_t)slot;
}

/* ---- Counting -------------------------------------------------------------- */

/* Counts of one stream, indexed by slot. */
typedef struct stream_counts {
	code_cell *cell;
	size_t cap;
} stream_counts;

/* Makes room for `slots` counters (new ones zeroed). */
static int counts_reserve(stream_counts *c, size_t slots)
{
	return weft__array_grow_zeroed((void **)&c->cell, &c->cap, slots, sizeof *c->cell);
}

/*
 * Counts one event in its code's cell; an interval (Heph) adds its
 * duration: events that carry their time cost nothing to time.
 */
static inline void count_event(code_cell *cell, const weft_event *ev)
{
	cell->count++;
	if (ev->flags & WEFT_EVENT_INTERVAL) {
		cell->timed++;
		cell->time += ev->end > ev->time ? ev->end - ev->time : 0;
	}
}

/* Adds the cell `from` into `to`. */
static void cell_add(code_cell *to, const code_cell *from)
{
	to->count += from->count;
	to->timed += from->timed;
	to->time += from->time;
}

/* Counts an event whose code is not yet in the flat table or is unusual. */
static int count_slow(code_table *t, stream_counts *c, const weft_event *ev)
{
	int64_t slot = code_table_slot(t, ev->code, ev->code_len);

	if (slot < 0 || counts_reserve(c, t->slot_count) < 0)
		return -1;
	count_event(&c->cell[slot], ev);
	return 0;
}

/*
 * The counters of the event's stream: its own with --streams, else the
 * single set.
 */
static stream_counts *counts_of(stream_counts *per_stream, int by_stream, const weft_event *ev)
{
	return &per_stream[by_stream ? ev->stream : 0];
}

/*
 * Counts every event of a cursor. The fast path costs a table read and an
 * increment per event; codes that are not 3 ASCII letters (Heph, ROSS)
 * go through the last code seen, then the slot list. Returns 0, or a
 * negative code.
 */
static int count_cursor(weft_cursor *cursor, code_table *t, stream_counts *per_stream,
			int by_stream)
{
	const weft_event *ev;
	char last_code[16];
	uint32_t last_len = UINT32_MAX;
	int64_t last_slot = -1;
	int rc;

	while ((rc = weft_cursor_next(cursor, &ev)) == 1) {
		stream_counts *c = counts_of(per_stream, by_stream, ev);
		int64_t fi = fast_index(ev->code, ev->code_len);
		int32_t slot1 = fi >= 0 ? t->fast[fi] : 0;
		if (slot1 > 0 && (size_t)slot1 <= c->cap) {
			count_event(&c->cell[slot1 - 1], ev);
			continue;
		}
		if (fi < 0 && ev->code_len == last_len && (size_t)last_slot < c->cap &&
		    memcmp(ev->code, last_code, last_len) == 0) {
			count_event(&c->cell[last_slot], ev);
			continue;
		}
		if (count_slow(t, c, ev) < 0)
			return WEFT_ENOMEM;
		if (fi < 0 && ev->code_len <= sizeof last_code) {
			last_len = ev->code_len;
			memcpy(last_code, ev->code, last_len);
			last_slot = code_table_slot(t, ev->code, ev->code_len);
		}
	}
	return rc;
}

/* Reads one stream to its end through its own cursor. */
static int count_stream(weft_trace *trace, uint32_t stream, code_table *t,
			stream_counts *c)
{
	weft_cursor *cursor;
	/* Counting needs no order: no sorting of ovni's unordered regions. */
	weft_filter stored = { .order = WEFT_ORDER_STORED };
	int rc = weft_cursor_create_stream_filtered(trace, stream, &stored, &cursor);

	if (rc < 0)
		return rc;
	rc = count_cursor(cursor, t, c, 0);
	weft_cursor_free(cursor);
	return rc;
}

/* ---- The counts of a trace --------------------------------------------------- */

struct weft_counts {
	code_table table;
	stream_counts *per_stream; /* one per stream when by_stream, else one */
	size_t stream_count;
	int by_stream;
	uint64_t total;
	/* The streams to read: this rank's or thread's (weft/dist.h,
	 * core/parts.c), NULL: every stream. */
	const uint8_t *share;
	int pieces; /* reading this rank's pieces of the files (weft__dist_pieces) */
};

/* Reads the streams of the share (all without one), each into its counters. */
static int count_streams(weft_trace *trace, weft_counts *st)
{
	for (size_t i = 0; i < st->stream_count; i++) {
		if (st->share != NULL && !st->share[i])
			continue;
		stream_counts *c = &st->per_stream[st->by_stream ? i : 0];
		int rc = count_stream(trace, (uint32_t)i, &st->table, c);
		if (rc < 0)
			return rc;
		if (counts_reserve(c, st->table.slot_count) < 0)
			return WEFT_ENOMEM;
	}
	return 0;
}

/* Sets each code's total over the streams, and the grand total. */
static void sum_totals(weft_counts *st)
{
	size_t n = st->by_stream ? st->stream_count : 1;
	st->total = 0;
	for (size_t s = 0; s < st->table.slot_count; s++) {
		code_cell *total = &st->table.slots[s].total;
		*total = (code_cell){ 0, 0, 0 };
		for (size_t i = 0; i < n; i++)
			if (s < st->per_stream[i].cap)
				cell_add(total, &st->per_stream[i].cell[s]);
		st->total += total->count;
	}
}

/* Allocates the counters for `streams` streams. */
static int counts_init(weft_counts *st, size_t streams, int by_stream)
{
	memset(st, 0, sizeof *st);
	st->by_stream = by_stream;
	st->stream_count = streams;
	st->per_stream = calloc(by_stream && streams ? streams : 1, sizeof *st->per_stream);
	if (st->per_stream == NULL || code_table_init(&st->table) < 0)
		return WEFT_ENOMEM;
	return 0;
}

/* Releases the counters and the code table (not `st` itself). */
static void counts_release(weft_counts *st)
{
	if (st->per_stream != NULL) {
		size_t n = st->by_stream ? st->stream_count : 1;
		for (size_t i = 0; i < n; i++)
			free(st->per_stream[i].cell);
	}
	free(st->per_stream);
	code_table_free(&st->table);
}

/*
 * Formats whose merged cursor reads each file once (ROSS, many streams
 * per file): one pass over all the streams, on this thread, instead of a
 * read of the file per stream. With files cut for the ranks
 * (weft__dist_pieces), this rank's pieces: the counts of every stream
 * there, added up on rank 0.
 */
static int count_merged(weft_trace *trace, weft_counts *st)
{
	weft_cursor *cursor;
	weft_filter stored = { .order = WEFT_ORDER_STORED };
	int rc = st->pieces ? weft__cursor_create_pieces(trace, &stored, &cursor)
		 : weft__cursor_create_selected(trace, &stored, st->share, &cursor);

	if (rc == 0) {
		rc = count_cursor(cursor, &st->table, st->per_stream, st->by_stream);
		weft_cursor_free(cursor);
	}
	size_t n = st->by_stream ? st->stream_count : 1;
	for (size_t i = 0; rc == 0 && i < n; i++)
		if (counts_reserve(&st->per_stream[i], st->table.slot_count) < 0)
			rc = WEFT_ENOMEM;
	return rc;
}

void weft_count_options_init(weft_count_options *options)
{
	memset(options, 0, sizeof *options);
}

/* ---- Span time ------------------------------------------------------------------ */

/* Forgets the times counted from intervals: the spans give them all. */
static void clear_times(weft_counts *st)
{
	size_t n = st->by_stream ? st->stream_count : 1;
	for (size_t i = 0; i < n; i++)
		for (size_t s = 0; s < st->per_stream[i].cap; s++)
			st->per_stream[i].cell[s].timed = st->per_stream[i].cell[s].time = 0;
}

/*
 * span_time: the spans of the trace (a pass of the span iterator, which
 * pairs enters and leaves and nests intervals), each span's duration to
 * the code of the event that began it. Spans begun by no event of the
 * trace (none without a window) have no code and are left out.
 */
static int add_span_times(weft_trace *trace, weft_counts *st)
{
	weft_span_options o;
	weft_span_iter *it;
	const weft_span *span;
	int rc;

	weft_span_options_init(&o);
	o.with_codes = 1;
	if ((rc = weft__span_iter_create_selected(trace, &o, st->share, &it)) < 0)
		return rc;
	clear_times(st);
	while ((rc = weft_span_iter_next(it, &span)) == 1) {
		if (span->code == NULL)
			continue;
		int64_t slot = code_table_slot(&st->table, span->code, (uint32_t)strlen(span->code));
		stream_counts *c = &st->per_stream[st->by_stream ? span->stream : 0];
		if (slot < 0 || counts_reserve(c, st->table.slot_count) < 0) {
			rc = weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
			break;
		}
		c->cell[slot].timed++;
		c->cell[slot].time += span->end - span->start;
	}
	weft_span_iter_free(it);
	return rc;
}

/* ---- Across ranks (weft/dist.h) ------------------------------------------------- */


/*
 * A rank's counts: per code its text, then the cells with events (per
 * stream: the stream index first), ended by a count of cells.
 */
static void pack_counts(weft__pack *p, const void *ctx)
{
	const weft_counts *st = ctx;
	size_t n = st->by_stream ? st->stream_count : 1;
	weft__pack_u64(p, st->table.slot_count);
	for (size_t s = 0; s < st->table.slot_count; s++) {
		weft__pack_bytes(p, st->table.slots[s].code, st->table.slots[s].len);
		size_t cells = 0;
		for (size_t i = 0; i < n; i++)
			cells += s < st->per_stream[i].cap && st->per_stream[i].cell[s].count > 0;
		weft__pack_u64(p, cells);
		for (size_t i = 0; i < n; i++) {
			if (s >= st->per_stream[i].cap || st->per_stream[i].cell[s].count == 0)
				continue;
			const code_cell *c = &st->per_stream[i].cell[s];
			weft__pack_u64(p, i);
			weft__pack_u64(p, c->count);
			weft__pack_u64(p, c->timed);
			weft__pack_u64(p, c->time);
		}
	}
}

/* Rank 0: adds another rank's packed counts, code by code (by text). */
static int merge_counts(void *ctx, weft__unpack *u)
{
	weft_counts *st = ctx;
	size_t n = st->by_stream ? st->stream_count : 1;
	uint64_t slots = weft__unpack_u64(u);
	for (uint64_t s = 0; !u->bad && s < slots; s++) {
		size_t len;
		const char *code = weft__unpack_bytes(u, &len);
		uint64_t cells = weft__unpack_u64(u);
		int64_t m = u->bad || len > UINT32_MAX ? 0 : code_table_slot(&st->table, code,
									     (uint32_t)len);
		if (m < 0)
			return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
		for (uint64_t k = 0; !u->bad && k < cells; k++) {
			uint64_t i = weft__unpack_u64(u);
			code_cell c;
			c.count = weft__unpack_u64(u);
			c.timed = weft__unpack_u64(u);
			c.time = weft__unpack_u64(u);
			if (u->bad || i >= n) {
				u->bad = 1;
				break;
			}
			if (counts_reserve(&st->per_stream[i], st->table.slot_count) < 0)
				return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET,
						   "out of memory");
			cell_add(&st->per_stream[i].cell[m], &c);
		}
	}
	return 0;
}


/*
 * A thread's part, packed: the counts of its streams (`selected`), or,
 * with `pieces`, of every stream in its piece of the files.
 */
static int count_part_read(weft_trace *handle, const uint8_t *selected, int pieces,
			   weft__pack *result, const weft_counts *whole)
{
	weft_counts part;
	int rc = counts_init(&part, whole->stream_count, whole->by_stream);
	part.pieces = pieces;
	part.share = pieces ? NULL : selected;
	if (rc == 0)
		rc = pieces ? count_merged(handle, &part) : count_streams(handle, &part);
	if (rc == 0)
		pack_counts(result, &part);
	counts_release(&part);
	return rc;
}

/* A thread's part of the streams (weft__part_fn). */
static int count_part(weft_trace *handle, const uint8_t *selected, weft__pack *result,
		      void *arg)
{
	return count_part_read(handle, selected, 0, result, arg);
}

/* A thread's piece of the files (weft__pieces_run). */
static int count_piece(weft_trace *handle, const uint8_t *selected, weft__pack *result,
		       void *arg)
{
	return count_part_read(handle, selected, 1, result, arg);
}

/*
 * This process's counts: of its rank's streams (weft/dist.h), shared
 * among threads when worth it; formats read by whole files in one pass
 * (of this rank's pieces, or shared by threads in pieces).
 */
static int count_shared(weft_trace *trace, weft_counts *st, int threads_asked)
{
	st->share = weft__dist_selected(trace);
	if (weft_trace_file_order_default(trace)) {
		st->pieces = weft__dist_pieces(trace) > 0;
		if (st->pieces)
			st->share = NULL; /* every stream's counts, from this rank's pieces */
		int pieces = st->pieces ? 1
			     : weft__pieces_threads(trace, threads_asked, WEFT__WORK_LIGHT);
		if (pieces > 1)
			return weft__pieces_run(trace, pieces, count_piece, st, merge_counts, st);
		return count_merged(trace, st);
	}
	int threads = weft__parts_threads(trace, st->share, threads_asked, WEFT__WORK_LIGHT);
	if (threads <= 1)
		return count_streams(trace, st);
	return weft__parts_run(trace, st->share, threads, count_part, st, merge_counts, st);
}

static int counts_run(weft_trace *trace, const weft_count_options *options,
		      weft_counts **out)
{
	weft_count_options defaults;

	*out = NULL;
	if (options == NULL) {
		weft_count_options_init(&defaults);
		options = &defaults;
	}
	weft_counts *st = malloc(sizeof *st);
	if (st == NULL || counts_init(st, weft_trace_stream_count(trace), options->by_stream) < 0) {
		if (st != NULL)
			counts_release(st);
		free(st);
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	}
	size_t diags = weft_trace_diag_count(trace);
	int rc = count_shared(trace, st, options->threads);
	/* Span times from pieces: rank 0 reads the whole trace (the spans of
	 * a stream cross pieces); the others' are dropped. */
	if (rc == 0 && options->span_time && st->pieces && !weft__dist_root(trace))
		clear_times(st);
	else if (rc == 0 && options->span_time)
		rc = add_span_times(trace, st);
	if (weft__dist_active(trace))
		rc = weft__dist_combine(trace, rc, diags, pack_counts, merge_counts, st);
	weft__trace_diags_sort(trace, diags);
	if (rc < 0) {
		weft_counts_free(st);
		return rc;
	}
	sum_totals(st);
	*out = st;
	return 0;
}

/* The operation above, as a phase of the progress ("counting"). */
int weft_counts_compute(weft_trace *trace, const weft_count_options *options,
			weft_counts **out)
{
	weft__progress_begin(trace, "counting");
	return weft__progress_end_with(trace, counts_run(trace, options, out));
}

/* ---- Rows ---------------------------------------------------------------------- */

/* Most frequent first; equal counts by code bytes, as ovnitop orders them. */
static int compare_rows(const void *a, const void *b)
{
	const weft_count_row *x = a, *y = b;

	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	uint32_t n = x->code_len < y->code_len ? x->code_len : y->code_len;
	int c = memcmp(x->code, y->code, n);
	if (c != 0)
		return c;
	return (x->code_len > y->code_len) - (x->code_len < y->code_len);
}

size_t weft_counts_rows(const weft_counts *st, int64_t stream, weft_count_row *out,
			size_t cap)
{
	const stream_counts *c = NULL;
	size_t n = st->table.slot_count, used = 0;

	if (stream != WEFT_COUNTS_ALL) {
		if (!st->by_stream || stream < 0 || (uint64_t)stream >= st->stream_count)
			return 0;
		c = &st->per_stream[stream];
	}
	weft_count_row *rows = malloc((n ? n : 1) * sizeof *rows);
	if (rows == NULL)
		return 0;
	for (size_t s = 0; s < n; s++) {
		static const code_cell none;
		const code_cell *cell = c == NULL ? &st->table.slots[s].total
					: s < c->cap ? &c->cell[s] : &none;
		if (cell->count > 0)
			rows[used++] = (weft_count_row){ st->table.slots[s].code,
							 st->table.slots[s].len, cell->count,
							 cell->timed, cell->time };
	}
	qsort(rows, used, sizeof *rows, compare_rows);
	if (cap > 0)
		memcpy(out, rows, (used < cap ? used : cap) * sizeof *rows);
	free(rows);
	return used;
}

uint64_t weft_counts_total(const weft_counts *st)
{
	return st->total;
}

void weft_counts_free(weft_counts *st)
{
	if (st == NULL)
		return;
	counts_release(st);
	free(st);
}
