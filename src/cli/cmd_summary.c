/* SPDX-License-Identifier: MIT */
/*
 * cli/cmd_summary.c - `weft summary`: what the engine samples of a ROSS
 * run say, per sampling mode and per PE. The analysis is the library's
 * (weft_ross_summary_write(), src/analysis/ross_summary.c, where the
 * rules are described); this file parses the options and reports.
 */
#include <stdio.h>

#include "cli/cli.h"
#include "cli/ross_cli.h"

enum summary_option_id {
	OPT_JSON = 100,
	OPT_DEDUP
};

const cli_option cli_summary_options[] = {
	CLI_COMMON_OPTIONS,
	{ "json", 0, 0, OPT_JSON },
	{ "dedup", 0, 0, OPT_DEDUP },
	{ NULL, 0, 0, 0 }
};

/* Usage text of `weft summary --help`. */
static void print_summary_help(void)
{
	printf("usage: weft summary [OPTIONS] RUN\n"
	       "\n"
	       "Summarises the engine samples of a ROSS run, per sampling mode (gvt, rt,\n"
	       "vt file) and per PE, with a line for all PEs:\n"
	       "  samples      the number of engine samples (PE samples; a file without\n"
	       "               them is summed per PE from its KP, else LP samples)\n"
	       "  processed, aborted, rolled_back, net (= processed - rolled_back):\n"
	       "               sums of the per-sample deltas\n"
	       "  efficiency   100 * (1 - rolled_back / net), 0 when net is 0\n"
	       "  rollbacks, secondary: sums; gvts: num_gvts of the last sample\n"
	       "  phase times  sums of the PE *_time fields, in seconds (rescaled by\n"
	       "               --ross-clock-rate)\n"
	       "vt files: samples with the same entity and virtual time as the previous\n"
	       "one are counted as duplicates.\n"
	       "\n"
	       "options:\n"
	       "  --json               one JSON object (schema in docs/ross.md)\n"
	       "  --dedup              vt files: keep only the last of each duplicate group\n");
	cli_print_common_help(stdout, NULL);
	printf("\n"
	       "example:\n"
	       "  weft summary run/\n");
}

/* Opens the run and writes the report (the library's) on stdout. */
static int run_summary(const cli_common *common, int json, int dedup)
{
	weft_ross_summary_options options;
	weft_trace *trace;
	int exit_code = cli_open_trace(common, "summary", &trace);

	if (exit_code == CLI_EXIT_OK)
		exit_code = cli_ross_require(trace, "summary");
	if (exit_code == CLI_EXIT_OK) {
		weft_ross_summary_options_init(&options);
		options.json = json;
		options.dedup = dedup;
		int rc = weft_ross_summary_write(trace, &options, stdout);
		fflush(stdout);
		if (rc < 0)
			exit_code = cli_library_error("summary", "reading the samples failed", rc);
		if (cli_print_diags_from(trace, "summary", 0) && exit_code == CLI_EXIT_OK)
			exit_code = CLI_EXIT_PROBLEMS; /* samples that could not be read */
	}
	cli_close_trace(trace);
	return exit_code;
}

/* Entry of `weft summary`: options, then the report. */
int cli_cmd_summary(int argc, char **argv)
{
	cli_parser parser;
	cli_common common;
	const char *value;
	int json = 0, dedup = 0;
	int id;

	cli_common_init(&common);
	cli_parser_init(&parser, "summary", argc, argv, cli_summary_options);
	while ((id = cli_next_option(&parser, &value)) != 0) {
		if (id < 0)
			return CLI_EXIT_FAILURE;
		if (id == CLI_OPT_HELP) {
			print_summary_help();
			return CLI_EXIT_OK;
		}
		if (id == OPT_JSON)
			json = 1;
		else if (id == OPT_DEDUP)
			dedup = 1;
		else if (cli_common_option(&common, "summary", id, value) != 1)
			return CLI_EXIT_FAILURE;
	}
	if (cli_take_trace_path(&common, &parser) < 0)
		return CLI_EXIT_FAILURE;
	common.stdout_streamed = 1; /* the report is printed as the samples are read */
	return run_summary(&common, json, dedup);
}
