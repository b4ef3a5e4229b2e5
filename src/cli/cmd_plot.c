/* SPDX-License-Identifier: MIT */
/*
 * cli/cmd_plot.c - `weft plot`: the efficiency and the events processed
 * of each PE (or KP) of a ROSS run over virtual or real time, as an SVG.
 * The analysis and the chart are the library's (weft_ross_plot_*(),
 * src/analysis/ross_plot.c); this file parses the options, opens the
 * output file and reports.
 */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/outfile.h"
#include "cli/ross_cli.h"

enum plot_option_id {
	OPT_OUTPUT = 100,
	OPT_FORCE,
	OPT_LEVEL,
	OPT_X,
	OPT_MODE,
	OPT_DEDUP
};

const cli_option cli_plot_options[] = {
	CLI_COMMON_OPTIONS,
	{ "output", 'o', 1, OPT_OUTPUT },
	{ "force", 'f', 0, OPT_FORCE },
	{ "level", 'l', 1, OPT_LEVEL },
	{ "x", 0, 1, OPT_X },
	{ "mode", 0, 1, OPT_MODE },
	{ "dedup", 0, 0, OPT_DEDUP },
	{ NULL, 0, 0, 0 }
};

/* Usage text of `weft plot --help`. */
static void print_plot_help(void)
{
	printf("usage: weft plot [OPTIONS] -o FILE.svg RUN\n"
	       "\n"
	       "Draws the engine samples of one sampling mode of a ROSS run as an SVG\n"
	       "(self-contained, for a browser): two panels, efficiency (%%) and events\n"
	       "processed per sample, over virtual or real time, one line per PE (or\n"
	       "KP) with a legend. Lines of more than 2000 samples are decimated (the\n"
	       "minimum and maximum of each bucket of consecutive samples). Samples at\n"
	       "the end of the simulation (virtual time DBL_MAX) are left out of\n"
	       "virtual-time plots, and NaN or infinite values of every plot; a note\n"
	       "on the plot says how many.\n"
	       "\n"
	       "options:\n"
	       "  -o, --output FILE    the SVG file ('-' for standard output); written to\n"
	       "                       a temporary file next to it, then renamed\n"
	       "  -f, --force          replace FILE when it exists\n"
	       "  -l, --level LEVEL    pe (default) or kp: one line per PE or per KP\n"
	       "  --x AXIS             virtual (default) or real (seconds since the first\n"
	       "                       sample, rescaled by --ross-clock-rate)\n"
	       "  --mode NAME          the file to plot: gvt, rt, vt, or a file node's name\n"
	       "                       (default: the first of gvt, rt, vt in the run; with\n"
	       "                       --x real, of rt, gvt, vt)\n"
	       "  --dedup              vt files: of the samples of a line with the same\n"
	       "                       virtual time, plot only the last (as summary)\n");
	cli_print_common_help(stdout, NULL);
	printf("\n"
	       "example:\n"
	       "  weft plot --x real -o run.svg run/\n");
}

typedef struct plot_settings {
	cli_common common;
	const char *output;
	const char *mode;
	int force;
	int kp;       /* --level kp */
	int real_x;   /* --x real */
	int dedup;    /* --dedup */
} plot_settings;

/* One option of `weft plot`; -1 after a message. */
static int plot_option(plot_settings *s, int id, const char *value)
{
	switch (id) {
	case OPT_OUTPUT:
		s->output = value;
		return 0;
	case OPT_FORCE:
		s->force = 1;
		return 0;
	case OPT_LEVEL:
		s->kp = strcmp(value, "kp") == 0;
		return s->kp || strcmp(value, "pe") == 0 ? 0 :
		       (cli_usage_error("plot", "unknown level '%s' (pe, kp)", value), -1);
	case OPT_X:
		s->real_x = strcmp(value, "real") == 0;
		return s->real_x || strcmp(value, "virtual") == 0 ? 0 :
		       (cli_usage_error("plot", "unknown axis '%s' (virtual, real)", value), -1);
	case OPT_MODE:
		s->mode = value;
		return 0;
	case OPT_DEDUP:
		s->dedup = 1;
		return 0;
	default:
		return cli_common_option(&s->common, "plot", id, value) == 1 ? 0 : -1;
	}
}

/* ---- The command ------------------------------------------------------------------------ */

/* The file, its lines, one pass (the library's), the SVG. */
static int plot_run(weft_trace *trace, const plot_settings *s)
{
	weft_ross_plot_options options;
	weft_ross_plot *plot;
	cli_outfile out;

	weft_ross_plot_options_init(&options);
	options.mode = s->mode;
	options.kp = s->kp;
	options.real_x = s->real_x;
	options.dedup = s->dedup;
	int rc = weft_ross_plot_create(trace, &options, &plot);
	if (rc == WEFT_ENOTFOUND) {
		fprintf(stderr, "weft plot: %s\n", weft_last_error());
		return CLI_EXIT_FAILURE;
	}
	if (rc == 0)
		rc = weft_ross_plot_read(plot);
	if (rc < 0) {
		weft_ross_plot_free(plot);
		return cli_library_error("plot", "reading the samples failed", rc);
	}
	if (cli_outfile_open(&out, "plot", s->output, s->force) != CLI_EXIT_OK) {
		weft_ross_plot_free(plot);
		return CLI_EXIT_FAILURE;
	}
	rc = weft_ross_plot_write(plot, out.fd);
	weft_ross_plot_free(plot);
	if (rc < 0) {
		cli_outfile_abort(&out);
		return cli_library_error("plot", "cannot write the plot", rc);
	}
	return cli_outfile_commit(&out);
}

/* Opens the run and plots it. */
static int run_plot(plot_settings *s)
{
	weft_trace *trace;
	int exit_code = cli_open_trace(&s->common, "plot", &trace);
	if (exit_code == CLI_EXIT_OK)
		exit_code = cli_ross_require(trace, "plot");
	if (exit_code == CLI_EXIT_OK) {
		exit_code = plot_run(trace, s);
		if (cli_print_diags_from(trace, "plot", 0) && exit_code == CLI_EXIT_OK)
			exit_code = CLI_EXIT_PROBLEMS; /* samples that could not be read */
	}
	cli_close_trace(trace);
	return exit_code;
}

/* Entry of `weft plot`: options, then the plot. */
int cli_cmd_plot(int argc, char **argv)
{
	cli_parser parser;
	plot_settings s;
	const char *value;
	int id;

	memset(&s, 0, sizeof s);
	cli_common_init(&s.common);
	cli_parser_init(&parser, "plot", argc, argv, cli_plot_options);
	while ((id = cli_next_option(&parser, &value)) != 0) {
		if (id < 0)
			return CLI_EXIT_FAILURE;
		if (id == CLI_OPT_HELP) {
			print_plot_help();
			return CLI_EXIT_OK;
		}
		if (plot_option(&s, id, value) < 0)
			return CLI_EXIT_FAILURE;
	}
	if (cli_take_trace_path(&s.common, &parser) < 0)
		return CLI_EXIT_FAILURE;
	if (s.output == NULL)
		return cli_usage_error("plot", "missing -o FILE.svg ('-' for standard output)");
	s.common.stdout_streamed = strcmp(s.output, "-") == 0;
	return run_plot(&s);
}
