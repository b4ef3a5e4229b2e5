/* SPDX-License-Identifier: MIT */
/*
 * cli/cmd_top.c - `weft top`: how many events of each code (MCV) a trace
 * has, like ovnitop, optionally per stream. Built for speed: each stream
 * is read alone through its own cursor (no merge, no sorting; ROSS, whose
 * streams share files, is read in one pass over its files), and a
 * 3-letter ASCII code is counted through one look-up in a flat table
 * indexed by its three bytes; no payload is decoded.
 */
#include <inttypes.h>
#include <pthread.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

enum top_option_id {
	OPT_STREAMS = 100
};

static const cli_option top_options[] = {
	CLI_COMMON_OPTIONS,
	{ "streams", 0, 0, OPT_STREAMS },
	{ NULL, 0, 0, 0 }
};

/* Usage text of `weft top --help`. */
static void print_top_help(void)
{
	printf("usage: weft top [OPTIONS] TRACE\n"
	       "\n"
	       "Counts the events of each code (ovni MCV), most frequent first\n"
	       "(same output as ovnitop: '<code> <count>').\n"
	       "\n"
	       "options:\n"
	       "  --streams            also the counts of every stream\n"
	       "  --format NAME        %s\n"
	       "  --clock-offsets FILE ovnisync clock offsets\n"
	       "  -h, --help           this text\n"
	       "\n"
	       "example:\n"
	       "  weft top --streams ovni/\n",
	       cli_format_list(" (default)"));
}

/* ---- Code table: code -> dense slot number ------------------------------- */

/* 7 bits per character, three characters: the flat table's size. */
#define FAST_TABLE_SIZE (1u << 21)

typedef struct code_slot {
	char *code;
	uint32_t len;
	uint64_t total; /* over all streams */
} code_slot;

typedef struct code_table {
	int32_t *fast;      /* slot + 1 of each 3-character ASCII code, 0 = none */
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
	for (size_t i = 0; i < t->slot_count; i++)
		free(t->slots[i].code);
	free(t->slots);
	free(t->fast);
}

/* Slot of a code seen before (linear search: only for unusual codes). */
static int64_t find_slow_slot(const code_table *t, const char *code, uint32_t len)
{
	for (size_t i = 0; i < t->slot_count; i++)
		if (t->slots[i].len == len && memcmp(t->slots[i].code, code, len) == 0)
			return (int64_t)i;
	return -1;
}

/* Adds a new code; returns its slot, or -1 when out of memory. */
static int64_t add_slot(code_table *t, const char *code, uint32_t len)
{
	if (t->slot_count == t->slot_cap) {
		size_t cap = t->slot_cap ? t->slot_cap * 2 : 64;
		code_slot *bigger = realloc(t->slots, cap * sizeof *bigger);
		if (bigger == NULL)
			return -1;
		t->slots = bigger;
		t->slot_cap = cap;
	}
	code_slot *s = &t->slots[t->slot_count];
	s->code = malloc(len + 1u);
	if (s->code == NULL)
		return -1;
	memcpy(s->code, code, len);
	s->code[len] = '\0';
	s->len = len;
	s->total = 0;
	return (int64_t)t->slot_count++;
}

/* Slot of any code, creating it on first sight; -1 when out of memory. */
static int64_t code_table_slot(code_table *t, const char *code, uint32_t len)
{
	int64_t fi = fast_index(code, len);
	int64_t slot;

	if (fi >= 0 && t->fast[fi] > 0)
		return t->fast[fi] - 1;
	slot = fi >= 0 ? -1 : find_slow_slot(t, code, len);
	if (slot >= 0)
		return slot;
	slot = add_slot(t, code, len);
	if (slot >= 0 && fi >= 0)
		t->fast[fi] = (int32_t)(slot + 1);
	return slot;
}

/* ---- Counting -------------------------------------------------------------- */

/* Counts of one stream, indexed by slot. */
typedef struct stream_counts {
	uint64_t *count;
	size_t cap;
} stream_counts;

/* Makes room for `slots` counters (new ones zeroed). */
static int counts_reserve(stream_counts *c, size_t slots)
{
	if (slots <= c->cap)
		return 0;
	size_t cap = c->cap ? c->cap : 64;
	while (cap < slots)
		cap *= 2;
	uint64_t *bigger = realloc(c->count, cap * sizeof *bigger);
	if (bigger == NULL)
		return -1;
	memset(bigger + c->cap, 0, (cap - c->cap) * sizeof *bigger);
	c->count = bigger;
	c->cap = cap;
	return 0;
}

/* Counts an event whose code is not yet in the flat table or is unusual. */
static int count_slow(code_table *t, stream_counts *c, const weft_event *ev)
{
	int64_t slot = code_table_slot(t, ev->code, ev->code_len);

	if (slot < 0 || counts_reserve(c, t->slot_count) < 0)
		return -1;
	c->count[slot]++;
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
			c->count[slot1 - 1]++;
			continue;
		}
		if (fi < 0 && ev->code_len == last_len && (size_t)last_slot < c->cap &&
		    memcmp(ev->code, last_code, last_len) == 0) {
			c->count[last_slot]++;
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
	int rc = weft_cursor_create_stream(trace, stream, &cursor);

	if (rc < 0)
		return rc;
	rc = count_cursor(cursor, t, c, 0);
	weft_cursor_free(cursor);
	return rc;
}

/* ---- Output ------------------------------------------------------------------ */

/* One line of the table: a code and how many times it occurs. */
typedef struct top_row {
	const code_slot *slot;
	uint64_t count;
} top_row;

/* Most frequent first; equal counts by code bytes, as ovnitop orders them. */
static int compare_rows(const void *a, const void *b)
{
	const top_row *x = a, *y = b;

	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	uint32_t n = x->slot->len < y->slot->len ? x->slot->len : y->slot->len;
	int c = memcmp(x->slot->code, y->slot->code, n);
	if (c != 0)
		return c;
	return (x->slot->len > y->slot->len) - (x->slot->len < y->slot->len);
}

/* Prints the non-zero counts sorted, each line "<code> <count, 10 wide>". */
static int print_counts(const code_table *t, const uint64_t *counts, size_t n,
			const char *indent)
{
	top_row *rows = malloc((n ? n : 1) * sizeof *rows);
	size_t used = 0;

	if (rows == NULL)
		return -1;
	for (size_t i = 0; i < n; i++)
		if (counts[i] > 0)
			rows[used++] = (top_row){ &t->slots[i], counts[i] };
	qsort(rows, used, sizeof *rows, compare_rows);
	for (size_t i = 0; i < used; i++)
		printf("%s%-3s %10" PRIu64 "\n", indent, rows[i].slot->code, rows[i].count);
	free(rows);
	return 0;
}

/* ---- The command ---------------------------------------------------------------- */

typedef struct top_state {
	code_table table;
	stream_counts *per_stream; /* one per stream when --streams, else one */
	size_t stream_count;
	int by_stream;
	int lost;                  /* an error diagnostic: some events not counted */
} top_state;

/*
 * Reads the streams first, first + step, ...; with --streams each keeps
 * its own counters, else all go to per_stream[0].
 */
static int count_streams(weft_trace *trace, top_state *st, size_t first, size_t step)
{
	for (size_t i = first; i < st->stream_count; i += step) {
		stream_counts *c = &st->per_stream[st->by_stream ? i : 0];
		int rc = count_stream(trace, (uint32_t)i, &st->table, c);
		if (rc < 0)
			return rc;
		if (counts_reserve(c, st->table.slot_count) < 0)
			return WEFT_ENOMEM;
	}
	return 0;
}

/* Sets each code's total over the streams. */
static void sum_totals(top_state *st)
{
	size_t n = st->by_stream ? st->stream_count : 1;
	for (size_t s = 0; s < st->table.slot_count; s++) {
		st->table.slots[s].total = 0;
		for (size_t i = 0; i < n; i++)
			if (s < st->per_stream[i].cap)
				st->table.slots[s].total += st->per_stream[i].count[s];
	}
}

/* ---- Counting on several cores ------------------------------------------------ */

/*
 * A worker counts every step-th stream with its own trace handle (a trace
 * belongs to one thread) and its own table; the tables are merged after.
 */
typedef struct top_worker {
	const cli_common *common;
	size_t first, step;
	top_state st;
	weft_trace *trace;
	size_t open_diags; /* diagnostics of opening, also in the main handle */
	int rc;
	pthread_t thread;
} top_worker;

static void *top_worker_main(void *arg)
{
	top_worker *w = arg;
	w->rc = weft_trace_open(w->common->trace_path, &w->common->open, &w->trace);
	if (w->rc == 0) {
		w->open_diags = weft_trace_diag_count(w->trace);
		w->rc = count_streams(w->trace, &w->st, w->first, w->step);
	}
	return NULL;
}

/* Adds a worker's counts into the main state, code by code. */
static int merge_worker(top_state *main_st, const top_worker *w)
{
	const top_state *ws = &w->st;
	size_t n = ws->by_stream ? ws->stream_count : 1;
	for (size_t s = 0; s < ws->table.slot_count; s++) {
		const code_slot *cs = &ws->table.slots[s];
		int64_t m = code_table_slot(&main_st->table, cs->code, cs->len);
		if (m < 0)
			return WEFT_ENOMEM;
		for (size_t i = 0; i < n; i++) {
			if (s >= ws->per_stream[i].cap || ws->per_stream[i].count[s] == 0)
				continue;
			if (counts_reserve(&main_st->per_stream[i], main_st->table.slot_count) < 0)
				return WEFT_ENOMEM;
			main_st->per_stream[i].count[m] += ws->per_stream[i].count[s];
		}
	}
	return 0;
}

/* Allocates the counters of a state for `streams` streams. */
static int top_state_init(top_state *st, size_t streams, int by_stream)
{
	memset(st, 0, sizeof *st);
	st->by_stream = by_stream;
	st->stream_count = streams;
	st->per_stream = calloc(by_stream && streams ? streams : 1, sizeof *st->per_stream);
	if (st->per_stream == NULL || code_table_init(&st->table) < 0)
		return WEFT_ENOMEM;
	return 0;
}

static void free_top_state(top_state *st);
static int report_diagnostics(const weft_trace *trace, size_t from);

/*
 * Formats whose merged cursor reads each file once (ROSS, many streams
 * per file): one pass over all the streams, on this thread, instead of a
 * read of the file per stream.
 */
static int count_merged(weft_trace *trace, top_state *st)
{
	weft_cursor *cursor;
	int rc = weft_cursor_create(trace, NULL, &cursor);

	if (rc == 0) {
		rc = count_cursor(cursor, &st->table, st->per_stream, st->by_stream);
		weft_cursor_free(cursor);
	}
	size_t n = st->by_stream ? st->stream_count : 1;
	for (size_t i = 0; rc == 0 && i < n; i++)
		if (counts_reserve(&st->per_stream[i], st->table.slot_count) < 0)
			rc = WEFT_ENOMEM;
	sum_totals(st);
	return rc;
}

/*
 * Reads every stream: on one core with the main handle, or split among
 * the cores (streams are independent, so counting scales with them).
 */
static int count_all_streams(const cli_common *common, weft_trace *trace, top_state *st)
{
	if (weft_trace_file_order_default(trace))
		return count_merged(trace, st);
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	size_t workers = cores > 1 ? (size_t)cores : 1;
	if (workers > 8)
		workers = 8;
	if (workers > st->stream_count)
		workers = st->stream_count;
	if (workers <= 1) {
		int rc = count_streams(trace, st, 0, 1);
		sum_totals(st);
		return rc;
	}
	top_worker *w = calloc(workers, sizeof *w);
	if (w == NULL)
		return WEFT_ENOMEM;
	size_t started = 0;
	int rc = 0;
	for (; started < workers; started++) {
		w[started] = (top_worker){ .common = common, .first = started, .step = workers };
		if (top_state_init(&w[started].st, st->stream_count, st->by_stream) < 0 ||
		    pthread_create(&w[started].thread, NULL, top_worker_main, &w[started]) != 0) {
			free_top_state(&w[started].st);
			rc = WEFT_ENOMEM;
			break;
		}
	}
	for (size_t i = 0; i < started; i++) {
		pthread_join(w[i].thread, NULL);
		if (rc == 0)
			rc = w[i].rc < 0 ? w[i].rc : merge_worker(st, &w[i]);
		if (w[i].trace != NULL)
			st->lost |= report_diagnostics(w[i].trace, w[i].open_diags);
		weft_trace_free(w[i].trace);
		free_top_state(&w[i].st);
	}
	free(w);
	sum_totals(st);
	return rc;
}

/* The overall table, then (with --streams) one table per stream. */
static int print_top(const weft_trace *trace, const top_state *st)
{
	size_t n = st->table.slot_count;
	uint64_t *totals = calloc(n ? n : 1, sizeof *totals);

	if (totals == NULL)
		return -1;
	for (size_t s = 0; s < n; s++)
		totals[s] = st->table.slots[s].total;
	int rc = print_counts(&st->table, totals, n, "");
	free(totals);
	for (size_t i = 0; st->by_stream && rc == 0 && i < st->stream_count; i++) {
		printf("\n%s:\n", weft_trace_stream(trace, i)->path);
		rc = print_counts(&st->table, st->per_stream[i].count, n, "  ");
	}
	return rc;
}

/* Releases the counters and the code table. */
static void free_top_state(top_state *st)
{
	if (st->per_stream != NULL) {
		size_t n = st->by_stream ? st->stream_count : 1;
		for (size_t i = 0; i < n; i++)
			free(st->per_stream[i].count);
	}
	free(st->per_stream);
	code_table_free(&st->table);
}

/*
 * Problems the library found (from the from-th on), on stderr; 1 when one
 * is an error (some events could not be read).
 */
static int report_diagnostics(const weft_trace *trace, size_t from)
{
	return cli_print_diags_from(trace, "top", from);
}

/* Opens the trace, counts, prints. */
static int run_top(cli_common *common, int by_stream)
{
	weft_trace *trace;
	top_state st;
	int exit_code;

	/* Counting does not need unordered regions sorted. */
	common->open.stored_order = 1;
	exit_code = cli_open_trace(common, "top", &trace);
	if (exit_code != CLI_EXIT_OK)
		return exit_code;
	if (top_state_init(&st, weft_trace_stream_count(trace), by_stream) < 0) {
		exit_code = cli_library_error("top", "out of memory", WEFT_ENOMEM);
	} else {
		int rc = count_all_streams(common, trace, &st);
		if (rc < 0)
			exit_code = cli_library_error("top", "reading the events failed", rc);
		else if (print_top(trace, &st) < 0)
			exit_code = cli_library_error("top", "out of memory", WEFT_ENOMEM);
	}
	int lost = report_diagnostics(trace, 0) || st.lost;
	free_top_state(&st);
	weft_trace_free(trace);
	return exit_code == CLI_EXIT_OK && lost ? CLI_EXIT_PROBLEMS : exit_code;
}

/* Entry of `weft top`: options, then the counting. */
int cli_cmd_top(int argc, char **argv)
{
	cli_parser parser;
	cli_common common;
	const char *value;
	int by_stream = 0;
	int id;

	cli_common_init(&common);
	cli_parser_init(&parser, "top", argc, argv, top_options);
	while ((id = cli_next_option(&parser, &value)) != 0) {
		if (id < 0)
			return CLI_EXIT_FAILURE;
		if (id == CLI_OPT_HELP) {
			print_top_help();
			return CLI_EXIT_OK;
		}
		if (id == OPT_STREAMS)
			by_stream = 1;
		else if (cli_common_option(&common, "top", id, value) != 1)
			return CLI_EXIT_FAILURE;
	}
	if (cli_take_trace_path(&common, &parser) < 0)
		return CLI_EXIT_FAILURE;
	return run_top(&common, by_stream);
}
