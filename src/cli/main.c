/* SPDX-License-Identifier: MIT */
/*
 * cli/main.c - the `weft` command: dispatches to one subcommand (info,
 * dump, top, check, sort, convert, and for ROSS table, summary, plot) and
 * prints the overall usage.
 */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

typedef int (*cli_command_fn)(int argc, char **argv);

static const struct cli_command {
	const char *name;
	cli_command_fn run;
	const char *summary;
} commands[] = {
	{ "info", cli_cmd_info, "format, hierarchy, streams and time span of a trace" },
	{ "dump", cli_cmd_dump, "every event in time order (text, raw hex or JSON lines)" },
	{ "top", cli_cmd_top, "number of events per event code (and per stream)" },
	{ "check", cli_cmd_check, "validate a trace; exit 1 when problems are found" },
	{ "sort", cli_cmd_sort, "sort the unordered regions of an ovni trace (ovnisort)" },
	{ "convert", cli_cmd_convert, "write the events for a viewer (Chrome JSON: -t chrome -o OUT)" },
	{ "table", cli_cmd_table, "ROSS: the records of one level as a CSV table (-o FILE.csv)" },
	{ "summary", cli_cmd_summary, "ROSS: events, rollbacks, efficiency, GVTs and phase times per PE" },
	{ "plot", cli_cmd_plot, "ROSS: efficiency and events per PE over time as an SVG (-o FILE.svg)" },
	{ "profile", cli_cmd_profile, "calls, total, mean, min, max and exclusive time per region (--by stream)" },
	{ NULL, NULL, NULL }
};

/* The list of subcommands and the options they all accept. */
static void print_usage(FILE *out)
{
	fprintf(out,
		"usage: weft COMMAND [OPTIONS] TRACE\n"
		"\n"
		"Reads execution traces of parallel programs (ovni, and more formats).\n"
		"\n"
		"commands:\n");
	for (const struct cli_command *c = commands; c->name != NULL; c++)
		fprintf(out, "  %-7s %s\n", c->name, c->summary);
	fprintf(out,
		"\n"
		"options of every command:\n"
		"  --format NAME                         trace format: %s\n"
		"  --clock-offsets FILE                  ovnisync clock offset table\n"
		"  --threads N                           1: no helper thread (default:\n"
		"                                        one when it pays; WEFT_THREADS)\n"
		"  -h, --help                            usage of the command\n"
		"  -V, --version                         (alone) the version of weft\n"
		"\n"
		"exit status: 0 ok; 1 problems found (check), or some data could not be\n"
		"read (listed on stderr; the output has the rest); 2 usage or open error\n"
		"'weft COMMAND --help' describes each command.\n", cli_format_list(" (default)"));
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
	for (const struct cli_command *c = commands; c->name != NULL; c++)
		if (strcmp(c->name, name) == 0)
			return c->run(argc - 1, argv + 1);
	fprintf(stderr, "weft: unknown command '%s'\n\n", name);
	print_usage(stderr);
	return CLI_EXIT_FAILURE;
}
