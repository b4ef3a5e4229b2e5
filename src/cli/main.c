/* SPDX-License-Identifier: MIT */
/*
 * cli/main.c - the `weft` command: dispatches to one subcommand (info,
 * dump, top, check, sort, convert, and for ROSS table, summary, plot) and
 * prints the overall usage.
 */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

static const cli_command commands[] = {
	{ "info", cli_cmd_info, "format, hierarchy, streams and time span of a trace",
	  cli_info_options },
	{ "dump", cli_cmd_dump, "every event in time order (text, raw hex or JSON lines)",
	  cli_dump_options },
	{ "top", cli_cmd_top, "number of events per event code (and per stream)",
	  cli_top_options },
	{ "check", cli_cmd_check, "validate a trace; exit 1 when problems are found",
	  cli_check_options },
	{ "sort", cli_cmd_sort, "sort the unordered regions of an ovni trace (ovnisort)",
	  cli_sort_options },
	{ "convert", cli_cmd_convert, "write the events for a viewer (Chrome JSON: -t chrome -o OUT)",
	  cli_convert_options },
	{ "table", cli_cmd_table, "ROSS: the records of one level as a CSV table (-o FILE.csv)",
	  cli_table_options },
	{ "summary", cli_cmd_summary, "ROSS: events, rollbacks, efficiency, GVTs and phase times per PE",
	  cli_summary_options },
	{ "plot", cli_cmd_plot, "ROSS: efficiency and events per PE over time as an SVG (-o FILE.svg)",
	  cli_plot_options },
	{ "profile", cli_cmd_profile, "calls, total, mean, min, max, exclusive time per region or stream",
	  cli_profile_options },
	{ NULL, NULL, NULL, NULL }
};

/* The list of subcommands and the options they all accept. */
static void print_usage(FILE *out)
{
	fprintf(out,
		"usage: weft COMMAND [OPTIONS] TRACE\n"
		"       weft --help | --version\n"
		"\n"
		"Reads, checks, converts and analyses execution traces of parallel\n"
		"programs: ovni, Heph, ROSS, Pallas and OTF2 traces.\n"
		"\n"
		"commands:\n");
	for (const cli_command *c = commands; c->name != NULL; c++)
		fprintf(out, "  %-9s%s\n", c->name, c->summary);
	fprintf(out, "'weft COMMAND --help' (or 'man weft-COMMAND') describes each command.\n"
		"\n"
		"options:\n");
	cli_print_option_help(out, "-V, --version", "the version of weft (without a command)");
	cli_print_common_help(out, NULL);
	fprintf(out,
		"\n"
		"exit status: 0 ok; 1 problems found (check), or some data could not be\n"
		"read (listed on stderr; the output has the rest); 2 usage or open error.\n");
}

/* Picks the subcommand named by argv[1] and hands it the rest. */
int main(int argc, char **argv)
{
	if (argc < 2) {
		print_usage(stderr);
		return CLI_EXIT_FAILURE;
	}
	const char *name = argv[1];
	if (strcmp(name, "-h") == 0 || strcmp(name, "--help") == 0 ||
	    strcmp(name, "help") == 0) {
		print_usage(stdout);
		return CLI_EXIT_OK;
	}
	if (strcmp(name, "--version") == 0 || strcmp(name, "-V") == 0 ||
	    strcmp(name, "version") == 0) {
		printf("weft %s\n", weft_version());
		return CLI_EXIT_OK;
	}
	if (strcmp(name, "__complete") == 0)
		return cli_complete(commands, argc - 1, argv + 1);
	for (const cli_command *c = commands; c->name != NULL; c++)
		if (strcmp(c->name, name) == 0)
			return c->run(argc - 1, argv + 1);
	fprintf(stderr, "weft: unknown command '%s'\n\n", name);
	print_usage(stderr);
	return CLI_EXIT_FAILURE;
}
