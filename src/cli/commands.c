/* SPDX-License-Identifier: MIT */
/*
 * cli/commands.c - the one list of the `weft` subcommands (info, dump,
 * top, check, sort, convert, profile, and for ROSS table, summary, plot),
 * the overall usage, and the dispatch that `weft` and `weft-mpi` share.
 */
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"

const cli_option cli_sync_options[] = {
	{ "help", 'h', 0, CLI_SYNC_HELP },
	{ "force", 'f', 0, CLI_SYNC_FORCE },
	{ "print", 0, 0, CLI_SYNC_PRINT },
	{ "verbose", 'v', 0, CLI_SYNC_VERBOSE },
	{ "rounds", 'n', 1, CLI_SYNC_ROUNDS },
	{ "output", 'o', 1, CLI_SYNC_OUTPUT },
	{ NULL, 0, 0, 0 }
};

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
		"on MPI ranks (weft-mpi, docs/mpi.md):\n"
		"  mpiexec -n R weft --mpi COMMAND ...  the command on R ranks sharing the streams\n"
		"  mpiexec -n R weft sync TRACE_DIR     the nodes' clock offsets (ovnisync)\n"
		"\n"
		"options:\n");
	cli_print_option_help(out, "-V, --version", "the version of weft (without a command)");
	cli_print_common_help(out, NULL);
	fprintf(out,
		"\n"
		"exit status: 0 ok; 1 problems found (check), or some data could not be\n"
		"read (listed on stderr; the output has the rest); 2 usage or open error.\n");
}

/*
 * `weft --mpi COMMAND ...` and `weft sync ...`: the MPI runner, weft-mpi,
 * in place of this process (under mpiexec, it inherits what MPI_Init
 * needs): the one next to this program, else the one on PATH.
 */
static int exec_mpi_runner(int argc, char **argv)
{
	char self[PATH_MAX], runner[PATH_MAX + 16];
	int drop = strcmp(argv[1], "--mpi") == 0; /* "sync" stays the command */
	char **args = argv + drop;
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	args[0] = "weft-mpi";
	if (n > 0) {
		self[n] = '\0';
		char *slash = strrchr(self, '/');
		if (slash != NULL) {
			*slash = '\0';
			snprintf(runner, sizeof runner, "%s/weft-mpi", self);
			execv(runner, args);
		}
	}
	execvp("weft-mpi", args);
	fprintf(stderr, "weft: %s needs weft-mpi, which is not here (weft is built with it "
		"when MPI is installed: Debian's mpich and libmpich-dev); run it as "
		"'mpiexec -n RANKS weft %s ...'\n", argv[1], argv[1]);
	(void)argc;
	return CLI_EXIT_FAILURE;
}

/* Picks the subcommand named by argv[1] and hands it the rest. */
int cli_main(int argc, char **argv)
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
	if (strcmp(name, "--mpi") == 0 || strcmp(name, "sync") == 0)
		return argc < 3 && strcmp(name, "--mpi") == 0
		       ? cli_usage_error("--mpi", "expects a command: weft --mpi COMMAND ...")
		       : exec_mpi_runner(argc, argv);
	if (strcmp(name, "__complete") == 0)
		return cli_complete(commands, argc - 1, argv + 1);
	for (const cli_command *c = commands; c->name != NULL; c++)
		if (strcmp(c->name, name) == 0)
			return c->run(argc - 1, argv + 1);
	fprintf(stderr, "weft: unknown command '%s'\n\n", name);
	print_usage(stderr);
	return CLI_EXIT_FAILURE;
}

int cli_command_exists(const char *name)
{
	for (const cli_command *c = commands; c->name != NULL; c++)
		if (strcmp(c->name, name) == 0)
			return 1;
	return 0;
}
