/* SPDX-License-Identifier: MIT */
/*
 * cli/cmd_top.c - `weft top`: how many events of each code (MCV) a trace
 * has, like ovnitop, optionally per stream. The counting is the library's
 * (weft_counts_compute(), weft/counts.h); this file parses the options and
 * prints the rows.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli/cli.h"
#include "weft/counts.h"

enum top_option_id {
	OPT_STREAMS = 100,
	OPT_TIME
};

const cli_option cli_top_options[] = {
	CLI_COMMON_OPTIONS,
	{ "streams", 0, 0, OPT_STREAMS },
	{ "time", 0, 0, OPT_TIME },
	{ NULL, 0, 0, 0 }
};

/* Usage text of `weft top --help`. */
static void print_top_help(void)
{
	printf("usage: weft top [OPTIONS] TRACE\n"
	       "\n"
	       "Counts the events of each code (ovni MCV), most frequent first\n"
	       "(same output as ovnitop: '<code> <count>'), in aligned columns. When\n"
	       "events are intervals (Heph), also the total and mean time per name,\n"
	       "under a header line.\n"
	       "\n"
	       "options:\n"
	       "  --streams            also the counts of every stream\n"
	       "  --time               also the time of the spans each code's events\n"
	       "                       began (ovni VTx: its tasks; pairs enters and\n"
	       "                       leaves: several times slower than counting)\n");
	cli_print_common_help(stdout, cli_stream_threads_notes);
	printf("\n"
	       "example:\n"
	       "  weft top --streams ovni/\n");
}

/* The widths of the columns, over every table printed. */
typedef struct top_layout {
	int code_width;   /* at least 3: ovnitop's "%-3s" */
	int count_width;  /* at least 10: ovnitop's "%10" */
	int timed;        /* some events have a duration: time columns */
} top_layout;

/* The rows of one scope (WEFT_COUNTS_ALL or a stream); NULL when out of memory. */
static weft_count_row *scope_rows(const weft_counts *counts, int64_t stream, size_t *n)
{
	*n = weft_counts_rows(counts, stream, NULL, 0);
	weft_count_row *rows = malloc((*n ? *n : 1) * sizeof *rows);
	if (rows != NULL)
		*n = weft_counts_rows(counts, stream, rows, *n);
	return rows;
}

/*
 * Sizes the columns for the widest code and count of the whole trace
 * (the per-stream tables hold no wider ones): ovni's three-letter codes
 * and counts under ten digits keep ovnitop's exact layout.
 */
static void measure(const weft_count_row *rows, size_t n, top_layout *l)
{
	char digits[32];

	*l = (top_layout){ 3, 10, 0 };
	for (size_t i = 0; i < n; i++) {
		if (rows[i].code_len > (uint32_t)l->code_width)
			l->code_width = rows[i].code_len > 60 ? 60 : (int)rows[i].code_len;
		int w = snprintf(digits, sizeof digits, "%" PRIu64, rows[i].count);
		if (w > l->count_width)
			l->count_width = w;
		l->timed |= rows[i].timed > 0;
	}
	if (l->timed && l->code_width < 4)
		l->code_width = 4; /* the header's "name" */
}

/* "total  mean" of a row's durations, or "-" when it has none. */
static void print_times(const weft_count_row *r)
{
	char total[32] = "-", mean[32] = "-";

	if (r->timed > 0) {
		cli_format_duration(total, sizeof total, r->time_total);
		cli_format_duration(mean, sizeof mean, r->time_total / r->timed);
	}
	printf("  %14s  %14s", total, mean);
}

/* Prints the rows of one scope: "<code> <count>" (and the times), aligned. */
static void print_rows(const weft_count_row *rows, size_t n, const char *indent,
		       const top_layout *l)
{
	if (l->timed)
		printf("%s%-*s %*s  %14s  %14s\n", indent, l->code_width, "name", l->count_width,
		       "events", "total", "mean");
	for (size_t i = 0; i < n; i++) {
		printf("%s%-*s %*" PRIu64, indent, l->code_width, rows[i].code, l->count_width,
		       rows[i].count);
		if (l->timed)
			print_times(&rows[i]);
		putchar('\n');
	}
}

/*
 * The overall table, sized for its rows, then (with --streams) one table
 * per stream in the same columns. -1 when out of memory.
 */
static int print_top(const weft_trace *trace, const weft_counts *counts, int by_stream)
{
	top_layout layout;
	size_t n;
	weft_count_row *rows = scope_rows(counts, WEFT_COUNTS_ALL, &n);

	if (rows == NULL)
		return -1;
	measure(rows, n, &layout);
	print_rows(rows, n, "", &layout);
	free(rows);
	for (size_t i = 0; by_stream && i < weft_trace_stream_count(trace); i++) {
		if ((rows = scope_rows(counts, (int64_t)i, &n)) == NULL)
			return -1;
		printf("\n%s:\n", weft_trace_stream(trace, i)->path);
		print_rows(rows, n, "  ", &layout);
		free(rows);
	}
	return 0;
}

/* Opens the trace, counts, prints. */
static int run_top(cli_common *common, int by_stream, int span_time)
{
	weft_trace *trace;
	weft_counts *counts = NULL;
	weft_count_options options;
	int exit_code = cli_open_trace(common, "top", &trace);

	if (exit_code != CLI_EXIT_OK)
		return exit_code;
	weft_count_options_init(&options);
	options.by_stream = by_stream;
	options.span_time = span_time;
	int rc = weft_counts_compute(trace, &options, &counts);
	if (rc < 0)
		exit_code = cli_library_error("top", "reading the events failed", rc);
	else if (print_top(trace, counts, by_stream) < 0)
		exit_code = cli_library_error("top", "out of memory", WEFT_ENOMEM);
	int lost = cli_print_diags_from(trace, "top", 0);
	weft_counts_free(counts);
	cli_close_trace(trace);
	return exit_code == CLI_EXIT_OK && lost ? CLI_EXIT_PROBLEMS : exit_code;
}

/* Entry of `weft top`: options, then the counting. */
int cli_cmd_top(int argc, char **argv)
{
	cli_parser parser;
	cli_common common;
	const char *value;
	int by_stream = 0, span_time = 0;
	int id;

	cli_common_init(&common);
	cli_parser_init(&parser, "top", argc, argv, cli_top_options);
	while ((id = cli_next_option(&parser, &value)) != 0) {
		if (id < 0)
			return CLI_EXIT_FAILURE;
		if (id == CLI_OPT_HELP) {
			print_top_help();
			return CLI_EXIT_OK;
		}
		if (id == OPT_STREAMS)
			by_stream = 1;
		else if (id == OPT_TIME)
			span_time = 1;
		else if (cli_common_option(&common, "top", id, value) != 1)
			return CLI_EXIT_FAILURE;
	}
	if (cli_take_trace_path(&common, &parser) < 0)
		return CLI_EXIT_FAILURE;
	return run_top(&common, by_stream, span_time);
}
