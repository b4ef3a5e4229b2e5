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
	OPT_STREAMS = 100
};

const cli_option cli_top_options[] = {
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
	       "  --streams            also the counts of every stream\n");
	cli_print_common_help(stdout, NULL);
	printf("\n"
	       "example:\n"
	       "  weft top --streams ovni/\n");
}

/* Prints the rows of one scope, each line "<code> <count, 10 wide>". */
static int print_counts(const weft_counts *counts, int64_t stream, const char *indent)
{
	size_t n = weft_counts_rows(counts, stream, NULL, 0);
	weft_count_row *rows = malloc((n ? n : 1) * sizeof *rows);

	if (rows == NULL)
		return -1;
	n = weft_counts_rows(counts, stream, rows, n);
	for (size_t i = 0; i < n; i++)
		printf("%s%-3s %10" PRIu64 "\n", indent, rows[i].code, rows[i].count);
	free(rows);
	return 0;
}

/* The overall table, then (with --streams) one table per stream. */
static int print_top(const weft_trace *trace, const weft_counts *counts, int by_stream)
{
	int rc = print_counts(counts, WEFT_COUNTS_ALL, "");
	for (size_t i = 0; by_stream && rc == 0 && i < weft_trace_stream_count(trace); i++) {
		printf("\n%s:\n", weft_trace_stream(trace, i)->path);
		rc = print_counts(counts, (int64_t)i, "  ");
	}
	return rc;
}

/* Opens the trace, counts, prints. */
static int run_top(cli_common *common, int by_stream)
{
	weft_trace *trace;
	weft_counts *counts = NULL;
	weft_count_options options;
	int exit_code = cli_open_trace(common, "top", &trace);

	if (exit_code != CLI_EXIT_OK)
		return exit_code;
	weft_count_options_init(&options);
	options.by_stream = by_stream;
	int rc = weft_counts_compute(trace, &options, &counts);
	if (rc < 0)
		exit_code = cli_library_error("top", "reading the events failed", rc);
	else if (print_top(trace, counts, by_stream) < 0)
		exit_code = cli_library_error("top", "out of memory", WEFT_ENOMEM);
	int lost = cli_print_diags_from(trace, "top", 0);
	weft_counts_free(counts);
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
		else if (cli_common_option(&common, "top", id, value) != 1)
			return CLI_EXIT_FAILURE;
	}
	if (cli_take_trace_path(&common, &parser) < 0)
		return CLI_EXIT_FAILURE;
	return run_top(&common, by_stream);
}
