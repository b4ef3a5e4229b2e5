/* SPDX-License-Identifier: MIT */
/*
 * cli/cmd_table.c - `weft table`: the records of one level of a ROSS run
 * as a tidy CSV table. The table is the library's (weft_ross_table_write(),
 * src/analysis/ross_table.c, columns from the trace's event kinds); this
 * file parses the options, opens the output file and reports.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/outfile.h"
#include "cli/ross_cli.h"

enum table_option_id {
	OPT_LEVEL = 100,
	OPT_OUTPUT,
	OPT_SORT,
	OPT_FORCE,
	OPT_STREAM,
	OPT_SORT_BUDGET
};

const cli_option cli_table_options[] = {
	CLI_COMMON_OPTIONS,
	{ "level", 'l', 1, OPT_LEVEL },
	{ "output", 'o', 1, OPT_OUTPUT },
	{ "sort", 0, 1, OPT_SORT },
	{ "force", 'f', 0, OPT_FORCE },
	{ "stream", 0, 1, OPT_STREAM },
	{ "sort-budget", 0, 1, OPT_SORT_BUDGET },
	{ NULL, 0, 0, 0 }
};

/* Usage text of `weft table --help`. */
static void print_table_help(void)
{
	printf("usage: weft table [OPTIONS] --level LEVEL [-o FILE.csv] RUN\n"
	       "\n"
	       "Writes the records of one level of a ROSS run as CSV: one row per\n"
	       "record, a header of column names, quoting per RFC 4180, numbers that\n"
	       "read back exactly (float32 fields to the same float32).\n"
	       "\n"
	       "columns: file, offset, stream, kind, time_ns, virtual_time, real_time,\n"
	       "is_end, then the record's fields (docs/ross.md). virtual_time is the\n"
	       "receive time for event records; is_end is true for the samples taken\n"
	       "at the end (virtual time DBL_MAX). NaN and infinite values are empty.\n"
	       "Model data is a hex column model_data, or the schema's columns with\n"
	       "--ross-model-schema.\n"
	       "\n"
	       "options:\n"
	       "  -l, --level LEVEL    pe, kp, lp, model (MODEL and ANALYSIS_MODEL) or event\n"
	       "  -o, --output FILE    the CSV file (default and '-': standard output);\n"
	       "                       written to a temporary file next to it, then renamed\n"
	       "  -f, --force          replace FILE when it exists\n"
	       "  --sort ORDER         file (default: each file's order, files merged by\n"
	       "                       real time), virtual or real (stable sorts)\n"
	       "  --sort-budget SIZE   memory of the sort before it spills sorted runs to\n"
	       "                       a temporary file in $TMPDIR (default 32M)\n"
	       "  --stream GLOB        only the streams whose path matches ('gvt/*')\n");
	cli_print_common_help(stdout, cli_write_threads_notes);
	printf("\n"
	       "example:\n"
	       "  weft table --level pe --sort virtual -o pe.csv run/\n");
}

/* ---- Settings ------------------------------------------------------------------ */

typedef struct table_settings {
	cli_common common;
	weft_ross_table_options table;
	const char *output;
	int force;
} table_settings;

/* "pe, kp, lp, model, event": the library's levels (a static buffer). */
static const char *level_list(void)
{
	static char text[128];
	size_t n = 0;
	const char *name;

	text[0] = '\0';
	for (size_t i = 0; (name = weft_ross_table_level_name(i)) != NULL && n < sizeof text; i++)
		n += (size_t)snprintf(text + n, sizeof text - n, "%s%s", i ? ", " : "", name);
	return text;
}

/* 1 when `name` is one of the library's levels. */
static int level_known(const char *name)
{
	const char *level;

	for (size_t i = 0; (level = weft_ross_table_level_name(i)) != NULL; i++)
		if (strcmp(level, name) == 0)
			return 1;
	return 0;
}

/* One option of `weft table`; -1 after a message. */
static int table_option(table_settings *s, int id, const char *value)
{
	switch (id) {
	case OPT_LEVEL:
		s->table.level = value;
		return level_known(value) ? 0 :
		       (cli_usage_error("table", "unknown level '%s' (%s)", value, level_list()), -1);
	case OPT_OUTPUT:
		s->output = value;
		return 0;
	case OPT_SORT:
		s->table.order = strcmp(value, "virtual") == 0 ? WEFT_ROSS_ORDER_VIRTUAL :
				 strcmp(value, "real") == 0 ? WEFT_ROSS_ORDER_REAL :
				 WEFT_ROSS_ORDER_FILE;
		return s->table.order != WEFT_ROSS_ORDER_FILE || strcmp(value, "file") == 0 ? 0 :
		       (cli_usage_error("table", "unknown order '%s' (file, virtual, real)", value), -1);
	case OPT_FORCE:
		s->force = 1;
		return 0;
	case OPT_STREAM:
		s->table.stream_pattern = value;
		return 0;
	case OPT_SORT_BUDGET:
		return cli_parse_size(value, &s->table.sort_budget) == 0 &&
		       s->table.sort_budget > 0 ? 0 :
		       (cli_usage_error("table", "invalid size '%s' (e.g. 64M)", value), -1);
	default:
		return cli_common_option(&s->common, "table", id, value) == 1 ? 0 : -1;
	}
}

/* ---- The command --------------------------------------------------------------------- */

/* A failure while writing: the library message, or the generic one. */
static int report_failure(int rc)
{
	if (rc == WEFT_EUNSUPPORTED) { /* a record the table cannot hold */
		fprintf(stderr, "weft table: %s\n", weft_last_error());
		return CLI_EXIT_FAILURE;
	}
	return cli_library_error("table", "cannot write the table", rc);
}

/* Opens the run, writes the table into the output file, reports. */
static int run_table(table_settings *s)
{
	weft_ross_table_report report;
	weft_trace *trace;
	cli_outfile out;

	memset(&report, 0, sizeof report);
	int exit_code = cli_open_trace(&s->common, "table", &trace);
	if (exit_code == CLI_EXIT_OK)
		exit_code = cli_ross_require(trace, "table");
	if (exit_code == CLI_EXIT_OK)
		exit_code = cli_outfile_open(&out, "table", s->output, s->force);
	if (exit_code == CLI_EXIT_OK) {
		int rc = weft_ross_table_write(trace, &s->table, out.fd, &report);
		if (rc != 0) {
			exit_code = report_failure(rc);
			cli_outfile_abort(&out);
		} else {
			exit_code = cli_outfile_commit(&out);
		}
	}
	if (exit_code == CLI_EXIT_OK && report.rows == 0)
		fprintf(stderr, "weft table: no %s records%s\n", s->table.level,
			s->table.stream_pattern ? " in the selected streams" : "");
	if (report.short_data > 0)
		fprintf(stderr, "weft table: %" PRIu64 " records have less model data than the "
			"model schema: their model columns are empty\n", report.short_data);
	if (trace != NULL && cli_print_diags_from(trace, "table", 0) &&
	    exit_code == CLI_EXIT_OK)
		exit_code = CLI_EXIT_PROBLEMS; /* the table lacks what could not be read */
	cli_close_trace(trace);
	return exit_code;
}

/* Entry of `weft table`: options, then the table. */
int cli_cmd_table(int argc, char **argv)
{
	cli_parser parser;
	table_settings s;
	const char *value;
	int id;

	memset(&s, 0, sizeof s);
	cli_common_init(&s.common);
	weft_ross_table_options_init(&s.table);
	cli_parser_init(&parser, "table", argc, argv, cli_table_options);
	while ((id = cli_next_option(&parser, &value)) != 0) {
		if (id < 0)
			return CLI_EXIT_FAILURE;
		if (id == CLI_OPT_HELP) {
			print_table_help();
			return CLI_EXIT_OK;
		}
		if (table_option(&s, id, value) < 0)
			return CLI_EXIT_FAILURE;
	}
	if (cli_take_trace_path(&s.common, &parser) < 0)
		return CLI_EXIT_FAILURE;
	if (s.table.level == NULL)
		return cli_usage_error("table", "missing --level (%s)", level_list());
	if (s.output == NULL) /* as the other commands that print: standard output */
		s.output = "-";
	s.common.stdout_streamed = strcmp(s.output, "-") == 0;
	return run_table(&s);
}
