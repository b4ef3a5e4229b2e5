/* SPDX-License-Identifier: MIT */
/*
 * cli/cmd_convert.c - `weft convert TRACE -t chrome -o OUT.json`: the
 * events of a trace of any format in a viewer's format or as a Pallas
 * trace. The command reads its options (the outputs, their help and
 * their abilities come from the registry, weft/output.h), opens the
 * trace, calls weft_convert() (weft/convert.h) and prints its report.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"

enum convert_option_id {
	OPT_OUTPUT = 100,
	OPT_TO,
	OPT_FORMAT_OUT,
	OPT_FROM,
	OPT_UNTIL,
	OPT_STREAM,
	OPT_EVENT,
	OPT_FORCE,
	OPT_HEPH_COMPAT,
	OPT_TIME,
	OPT_VT_UNIT,
	OPT_ALLOW_LOSS,
	OPT_EMULATE,
	OPT_RAW,
	OPT_ALL_MODELS,
	OPT_BREAKDOWN,
	OPT_OVNI_CFG,
	OPT_NO_OVNI_CFG
};

const cli_option cli_convert_options[] = {
	CLI_COMMON_OPTIONS,
	{ "output", 'o', 1, OPT_OUTPUT },
	{ "to", 0, 1, OPT_TO },
	{ "format-out", 't', 1, OPT_FORMAT_OUT },
	{ "output-format", 0, 1, OPT_FORMAT_OUT },
	{ "from", 0, 1, OPT_FROM },
	{ "until", 0, 1, OPT_UNTIL },
	{ "stream", 0, 1, OPT_STREAM },
	{ "event", 0, 1, OPT_EVENT },
	{ "mcv", 0, 1, OPT_EVENT },
	{ "force", 'f', 0, OPT_FORCE },
	{ "heph-compat", 0, 0, OPT_HEPH_COMPAT },
	{ "time", 0, 1, OPT_TIME },
	{ "vt-unit", 0, 1, OPT_VT_UNIT },
	{ "allow-loss", 0, 0, OPT_ALLOW_LOSS },
	{ "emulate", 0, 0, OPT_EMULATE },
	{ "raw", 0, 0, OPT_RAW },
	{ "all-models", 0, 0, OPT_ALL_MODELS },
	{ "breakdown", 0, 0, OPT_BREAKDOWN },
	{ "ovni-cfg", 0, 1, OPT_OVNI_CFG },
	{ "no-ovni-cfg", 0, 0, OPT_NO_OVNI_CFG },
	{ NULL, 0, 0, 0 }
};

/* Usage text of `weft convert --help`; the outputs come from the library's list. */
static void print_convert_help(void)
{
	char names[128];

	printf("usage: weft convert [OPTIONS] TRACE [-t FORMAT] -o OUT\n"
	       "\n"
	       "Writes the events of TRACE for a viewer or as a Pallas trace. FORMAT:\n");
	for (size_t i = 0; i < weft_output_count(); i++)
		printf("  %-9s %s\n", weft_output_get(i)->name, weft_output_get(i)->description);
	printf("Outputs are written to temporary names next to OUT, then renamed; '-' is\n"
	       "standard output (%s).\n"
	       "\n", weft_output_names(WEFT_OUTPUT_STDOUT, names, sizeof names));
	printf("options:\n"
	       "  -o, --output OUT     the output file, base name or directory\n"
	       "  -t, --format-out, --output-format FORMAT\n"
	       "                       the output format; by default from OUT's\n"
	       "                       extension, else perfetto\n"
	       "  --from T, --to T     the time window; T is a clock value of the trace\n"
	       "                       (as dump prints it) or +T from its start; in ns or\n"
	       "                       with a unit: 5us, 10ms, 2s, 1.5min, 1h. Viewer\n"
	       "                       formats cut spans at its edges (chrome: events\n"
	       "                       that start in it)\n"
	       "  --until T            deprecated: --to T (and --to FORMAT: -t FORMAT);\n"
	       "                       they work, with a note\n"
	       "  --stream GLOB        only streams whose path matches the glob\n"
	       "  --event, --mcv GLOB  only events whose code (name) matches\n"
	       "  -f, --force          replace OUT when it exists\n"
	       "  --heph-compat        chrome: the bytes Heph's converter (convert_trace)\n"
	       "                       writes (see docs/convert.md)\n"
	       "  --time real|virtual  the time axis of the viewer formats: real (default)\n"
	       "                       or ROSS's virtual time, one unit = --vt-unit\n"
	       "  --vt-unit T          the length of one unit of virtual time (default 1us)\n"
	       "  --allow-loss         viewer formats: drop spans nested deeper than the\n"
	       "                       viewers keep (512 levels) with a warning, instead of\n"
	       "                       an error (exit 1); with --emulate, keep what came\n"
	       "                       before an event the models refuse (as ovniemu)\n"
	       "  --emulate            ovni: replay the runtimes' models as ovniemu does\n"
	       "                       (the default for traces whose threads declare their\n"
	       "                       models): -t paraver writes ovniemu's thread.prv and\n"
	       "                       cpu.prv (with .pcf, .row) into the directory OUT,\n"
	       "                       -t perfetto their threads, CPUs, tasks, subsystems\n"
	       "  --raw                the generic mapping, without emulation\n"
	       "  --all-models         emulate every model, required or not (ovniemu -a)\n"
	       "  --breakdown          emulated paraver: also the breakdown traces of nOS-V,\n"
	       "                       Nanos6 and OpenMP, nosv-breakdown.prv, ...\n"
	       "                       (ovniemu -b)\n"
	       "  --ovni-cfg DIR       emulated paraver: copy ovni's Paraver views (.cfg) from\n"
	       "                       DIR (an installed ovni's share/ovni, or ovni's cfg/)\n"
	       "                       into OUT/cfg/, as ovniemu does (default: from\n"
	       "                       $OVNI_CONFIG_DIR, /usr/local/share/ovni or\n"
	       "                       /usr/share/ovni when one has them)\n"
	       "  --no-ovni-cfg        do not copy them\n");
	cli_print_common_help(stdout, cli_write_threads_notes);
	printf("\n"
	       "exit status: 0 done (warnings on stderr); 1 done, but some data could not\n"
	       "be read (listed on stderr; OUT is complete without it); 2 bad usage, or\n"
	       "the trace or OUT failed (no OUT).\n"
	       "\n"
	       "examples:\n"
	       "  weft convert ovni/ -o run.pftrace\n"
	       "  weft convert ovni/ -t paraver -o run/   (emulated: run/thread.prv, run/cpu.prv)\n"
	       "  weft convert ovni/ -t paraver --raw --from +1s --to +2s -o run\n"
	       "  weft convert run.bin.log -t chrome -o run.json\n");
}

/* Everything the options of `weft convert` set. */
typedef struct convert_settings {
	cli_common common;
	weft_filter filter;
	cli_window window;        /* --from, --to (--until) */
	const char *output;       /* path, or "-" */
	const weft_output_info *to; /* the output, NULL until given */
	int force;
	int heph_compat;
	int virtual_time;         /* --time virtual */
	int allow_loss;           /* --allow-loss */
	int emulate;              /* --emulate, --raw: enum weft_emulate */
	int all_models;           /* --all-models */
	int breakdown;            /* --breakdown */
	const char *ovni_cfg;     /* --ovni-cfg DIR, "" for --no-ovni-cfg, NULL: default */
	uint64_t vt_unit;         /* --vt-unit: ns per unit of virtual time */
} convert_settings;

/* ---- Options ------------------------------------------------------------------ */

/* A time option's value into *dest; -1 after an error. */
static int parse_time_option(const char *option, const char *value, uint64_t *dest)
{
	if (cli_parse_time(value, dest) == 0)
		return 0;
	cli_usage_error("convert", "invalid time '%s' for %s (e.g. 1500, 10ms, 2s)",
			value, option);
	return -1;
}

/*
 * -t FORMAT: the output format, by name; `hint` ends the message of an
 * unknown one.
 */
static int apply_format_out(convert_settings *s, const char *value, const char *hint)
{
	char names[128];

	s->to = weft_output_find(value);
	if (s->to != NULL)
		return 0;
	cli_usage_error("convert", "unknown output format '%s' (%s)%s", value,
			weft_output_names(0, names, sizeof names), hint);
	return -1;
}

/*
 * --to: the end of the time window, as in every command. Until the next
 * release, a value that is no time ("perfetto") still names the output
 * format, as --to did before -t existed, with a note.
 */
static int apply_to_option(convert_settings *s, const char *value)
{
	if ((value[0] >= '0' && value[0] <= '9') || value[0] == '+')
		return cli_window_option(&s->window, "convert", "--to", value, 1);
	if (apply_format_out(s, value, ", and not a time (times start with a digit: 10ms)") < 0)
		return -1;
	fprintf(stderr, "weft convert: note: --to %s is deprecated: write -t %s "
		"(--format-out); --to is the end of the time window\n", value, value);
	return 0;
}

/* Applies one convert option; -1 after printing an error. */
static int apply_convert_option(convert_settings *s, int id, const char *value)
{
	switch (id) {
	case OPT_OUTPUT:
		s->output = value;
		return 0;
	case OPT_TO:
		return apply_to_option(s, value);
	case OPT_FORMAT_OUT:
		return apply_format_out(s, value, "");
	case OPT_FROM:
		return cli_window_option(&s->window, "convert", "--from", value, 0);
	case OPT_UNTIL:
		fprintf(stderr, "weft convert: note: --until is deprecated: write --to %s\n",
			value);
		return cli_window_option(&s->window, "convert", "--until", value, 1);
	case OPT_STREAM:
		s->filter.stream_pattern = value;
		return 0;
	case OPT_EVENT:
		s->filter.code_pattern = value;
		return 0;
	case OPT_FORCE:
		s->force = 1;
		return 0;
	case OPT_HEPH_COMPAT:
		s->heph_compat = 1;
		return 0;
	case OPT_ALLOW_LOSS:
		s->allow_loss = 1;
		return 0;
	case OPT_EMULATE:
	case OPT_RAW: {
		int mode = id == OPT_EMULATE ? WEFT_EMULATE_ON : WEFT_EMULATE_OFF;
		if (s->emulate != WEFT_EMULATE_AUTO && s->emulate != mode) {
			cli_usage_error("convert", "--emulate and --raw exclude each other");
			return -1;
		}
		s->emulate = mode;
		return 0;
	}
	case OPT_ALL_MODELS:
		s->all_models = 1;
		return 0;
	case OPT_BREAKDOWN:
		s->breakdown = 1;
		return 0;
	case OPT_OVNI_CFG:
	case OPT_NO_OVNI_CFG:
		if (s->ovni_cfg != NULL) {
			cli_usage_error("convert", "--ovni-cfg and --no-ovni-cfg: give one, once");
			return -1;
		}
		s->ovni_cfg = id == OPT_OVNI_CFG ? value : "";
		if (id == OPT_OVNI_CFG && value[0] == '\0') {
			cli_usage_error("convert", "--ovni-cfg needs a directory (--no-ovni-cfg: none)");
			return -1;
		}
		return 0;
	case OPT_TIME:
		if (strcmp(value, "real") != 0 && strcmp(value, "virtual") != 0) {
			cli_usage_error("convert", "--time takes real or virtual, not '%s'", value);
			return -1;
		}
		s->virtual_time = strcmp(value, "virtual") == 0;
		return 0;
	case OPT_VT_UNIT:
		if (parse_time_option("--vt-unit", value, &s->vt_unit) < 0)
			return -1;
		if (s->vt_unit == 0) {
			cli_usage_error("convert", "--vt-unit must be at least 1ns");
			return -1;
		}
		return 0;
	default:
		return cli_common_option(&s->common, "convert", id, value) == 1 ? 0 : -1;
	}
}

/* The checks that need every option: output, format, window. */
static int check_convert_settings(convert_settings *s)
{
	char viewers[128];

	if (s->output == NULL)
		return cli_usage_error("convert", "missing the output: -o OUT ('-' for stdout)");
	if (s->to == NULL)
		s->to = weft_output_for_path(s->output);
	if (s->heph_compat && !(s->to->flags & WEFT_OUTPUT_HEPH_COMPAT))
		return cli_usage_error("convert", "--heph-compat is for -t %s",
				       weft_output_names(WEFT_OUTPUT_HEPH_COMPAT, viewers,
							 sizeof viewers));
	weft_output_names(WEFT_OUTPUT_VIEWER, viewers, sizeof viewers);
	if (s->virtual_time && (s->heph_compat || !(s->to->flags & WEFT_OUTPUT_VIEWER)))
		return cli_usage_error("convert", "--time virtual is for the viewer formats "
				       "(%s)", viewers);
	if (s->allow_loss && (s->heph_compat || !(s->to->flags & WEFT_OUTPUT_VIEWER)))
		return cli_usage_error("convert", "--allow-loss is for the viewer formats "
				       "(%s)", viewers);
	if ((s->all_models || s->breakdown || (s->ovni_cfg != NULL && *s->ovni_cfg)) &&
	    s->emulate == WEFT_EMULATE_OFF)
		return cli_usage_error("convert", "--%s is for the emulation, not --raw",
				       s->all_models ? "all-models"
				       : s->breakdown ? "breakdown" : "ovni-cfg");
	if (s->emulate == WEFT_EMULATE_ON && !(s->to->flags & WEFT_OUTPUT_EMULATE))
		return cli_usage_error("convert", "--emulate is for -t %s",
				       weft_output_names(WEFT_OUTPUT_EMULATE, viewers,
							 sizeof viewers));
	return -1;
}

/*
 * Reads the arguments. Returns -1 to go on, or the exit code to end with
 * (0 after --help, 2 after an error).
 */
static int parse_convert_arguments(convert_settings *s, int argc, char **argv)
{
	cli_parser parser;
	const char *value;
	int id;

	memset(s, 0, sizeof *s);
	cli_common_init(&s->common);
	s->vt_unit = 1000;
	cli_parser_init(&parser, "convert", argc, argv, cli_convert_options);
	while ((id = cli_next_option(&parser, &value)) != 0) {
		if (id < 0)
			return CLI_EXIT_FAILURE;
		if (id == CLI_OPT_HELP) {
			print_convert_help();
			return CLI_EXIT_OK;
		}
		if (apply_convert_option(s, id, value) < 0)
			return CLI_EXIT_FAILURE;
	}
	if (cli_take_trace_path(&s->common, &parser) < 0)
		return CLI_EXIT_FAILURE;
	return check_convert_settings(s);
}

/* ---- The command ------------------------------------------------------------------------ */

/* The library's options from the command's settings. */
static void convert_options_from(const convert_settings *s, weft_convert_options *o)
{
	weft_convert_options_init(o);
	o->output = s->to->name;
	o->path = s->output;
	o->filter = s->filter;
	o->force = s->force;
	o->heph_compat = s->heph_compat;
	o->virtual_unit_ns = s->virtual_time ? s->vt_unit : 0;
	o->allow_loss = s->allow_loss;
	o->emulate = s->emulate;
	o->all_models = s->all_models;
	o->breakdown = s->breakdown;
	o->ovni_cfg = s->ovni_cfg;
	o->remove_on_signal = 1;
}

/*
 * Opens the trace once (each output reads it in the order it needs),
 * converts, prints what the conversion said. Exit 2 when OUT was not
 * written, 1 when it was but data was lost, else 0.
 */
static int run_convert(convert_settings *s)
{
	weft_convert_options o;
	weft_convert_report report;
	weft_trace *trace;
	int exit_code = cli_open_trace(&s->common, "convert", &trace);

	if (exit_code == CLI_EXIT_OK)
		exit_code = cli_window_apply(&s->window, trace, "convert", &s->filter);
	if (exit_code != CLI_EXIT_OK) {
		weft_trace_free(trace);
		return exit_code;
	}
	convert_options_from(s, &o);
	int rc = weft_convert(trace, &o, &report);
	for (size_t i = 0; i < report.message_count; i++)
		fprintf(stderr, "weft convert: %s\n", report.messages[i]);
	exit_code = rc < 0 ? CLI_EXIT_FAILURE
		    : report.data_lost ? CLI_EXIT_PROBLEMS : CLI_EXIT_OK;
	if (rc >= 0 && cli_report_unmatched(trace, "convert", &s->filter, report.selected))
		exit_code = CLI_EXIT_PROBLEMS;
	weft_convert_report_free(&report);
	cli_close_trace(trace);
	return exit_code;
}

/* Entry of `weft convert`: options, then the conversion. */
int cli_cmd_convert(int argc, char **argv)
{
	convert_settings settings;
	int done = parse_convert_arguments(&settings, argc, argv);

	if (done >= 0)
		return done;
	settings.common.stdout_streamed = strcmp(settings.output, "-") == 0;
	return run_convert(&settings);
}
