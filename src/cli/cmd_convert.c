/* SPDX-License-Identifier: MIT */
/*
 * cli/cmd_convert.c - `weft convert TRACE --to chrome -o OUT.json`: the
 * events of a trace of any format in a viewer's format, written by an
 * output of src/outputs/ (today Chrome's Trace Event JSON, optionally
 * byte for byte as Heph's converter writes it).
 *
 * This file decides what is not the output's business: the order the
 * events are read in (file order for one-file formats, so that the
 * conversion streams in one pass; time order for the others), the time
 * window and filters, and where the bytes go: a temporary file next to
 * OUT, synced and renamed over it at the end (so OUT is either the old
 * file or the whole new one), or standard output with `-o -`.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/convert.h"
#include "cli/outfile.h"
#include "outputs/chrome.h"

enum convert_option_id {
	OPT_OUTPUT = 100,
	OPT_TO,
	OPT_FROM,
	OPT_UNTIL,
	OPT_STREAM,
	OPT_EVENT,
	OPT_FORCE,
	OPT_HEPH_COMPAT,
	OPT_TIME,
	OPT_VT_UNIT,
	OPT_ALLOW_LOSS
};

static const cli_option convert_options[] = {
	CLI_COMMON_OPTIONS,
	{ "output", 'o', 1, OPT_OUTPUT },
	{ "to", 0, 1, OPT_TO },
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
	{ NULL, 0, 0, 0 }
};

/* Usage text of `weft convert --help`; the outputs come from the library's list. */
static void print_convert_help(void)
{
	char names[128];

	printf("usage: weft convert [OPTIONS] TRACE [--to FORMAT] -o OUT\n"
	       "\n"
	       "Writes the events of TRACE for a viewer or as a Pallas trace. FORMAT:\n");
	for (size_t i = 0; i < weft_output_count(); i++)
		printf("  %-9s %s\n", weft_output_get(i)->name, weft_output_get(i)->description);
	printf("Outputs are written to temporary names next to OUT, then renamed; '-' is\n"
	       "standard output (%s).\n"
	       "\n", weft_output_names(WEFT_OUTPUT_STDOUT, names, sizeof names));
	printf("options:\n"
	       "  -o, --output OUT     the output file, base name or directory\n"
	       "  --to FORMAT|T        an output format, or, when the value starts with a\n"
	       "                       digit, the end of the time window (like --until)\n"
	       "  --from T, --until T  the time window; T in ns or with a unit: 5us, 10ms,\n"
	       "                       2s, 1.5min, 1h. Viewer formats cut spans at its\n"
	       "                       edges (chrome: events that start in it)\n"
	       "  --stream GLOB        only streams whose path matches the glob\n"
	       "  --event GLOB         only events whose code (name) matches (alias: --mcv)\n"
	       "  -f, --force          replace OUT when it exists\n"
	       "  --heph-compat        chrome: the bytes Heph's converter (convert_trace)\n"
	       "                       writes (see docs/convert.md)\n"
	       "  --time real|virtual  the time axis of the viewer formats: real (default)\n"
	       "                       or ROSS's virtual time, one unit = --vt-unit\n"
	       "  --vt-unit T          the length of one unit of virtual time (default 1us)\n"
	       "  --allow-loss         viewer formats: drop spans nested deeper than the\n"
	       "                       viewers keep (512 levels) with a warning, instead of\n"
	       "                       an error (exit 1)\n"
	       "  --format NAME        trace format: auto (default), ovni, heph, ross, pallas\n"
	       "  --clock-offsets FILE ovnisync clock offsets (ovni)\n"
	       "  --threads N          1: everything on one thread; by default, on two\n"
	       "                       CPUs or more, Heph traces of 16 MiB or more are\n"
	       "                       scanned in two halves at once (same output)\n"
	       "  -h, --help           this text\n"
	       "\n"
	       "exit status: 0 done (warnings on stderr); 1 done, but some data could not\n"
	       "be read (listed on stderr; OUT is complete without it); 2 bad usage, or\n"
	       "the trace or OUT failed (no OUT).\n"
	       "\n"
	       "examples:\n"
	       "  weft convert ovni/ -o run.pftrace\n"
	       "  weft convert ovni/ --to paraver --from 1s --until 2s -o run\n"
	       "  weft convert run.bin.log --to chrome -o run.json\n");
}

/* Everything the options of `weft convert` set. */
typedef struct convert_settings {
	cli_common common;
	weft_filter filter;
	const char *output;       /* path, or "-" */
	const weft_output_info *to; /* the output, NULL until given */
	int force;
	int heph_compat;
	int virtual_time;         /* --time virtual */
	int allow_loss;           /* --allow-loss */
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
 * --to: a value that starts with a digit is a time (the end of the time
 * window, as --until); anything else names the output format.
 */
static int apply_to_option(convert_settings *s, const char *value)
{
	if (value[0] >= '0' && value[0] <= '9')
		return parse_time_option("--to", value, &s->filter.to);
	char names[128];
	s->to = weft_output_find(value);
	if (s->to == NULL) {
		cli_usage_error("convert", "unknown output format '%s' (%s), and not a "
				"time (times start with a digit: 10ms)", value,
				weft_output_names(0, names, sizeof names));
		return -1;
	}
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
	case OPT_FROM:
		return parse_time_option("--from", value, &s->filter.from);
	case OPT_UNTIL:
		return parse_time_option("--until", value, &s->filter.to);
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
	if (s->filter.to != 0 && s->filter.to < s->filter.from)
		return cli_usage_error("convert", "--until is before --from");
	if (s->heph_compat && !(s->to->flags & WEFT_OUTPUT_HEPH_COMPAT))
		return cli_usage_error("convert", "--heph-compat is for --to %s",
				       weft_output_names(WEFT_OUTPUT_HEPH_COMPAT, viewers,
							 sizeof viewers));
	weft_output_names(WEFT_OUTPUT_VIEWER, viewers, sizeof viewers);
	if (s->virtual_time && (s->heph_compat || !(s->to->flags & WEFT_OUTPUT_VIEWER)))
		return cli_usage_error("convert", "--time virtual is for the viewer formats "
				       "(%s)", viewers);
	if (s->allow_loss && (s->heph_compat || !(s->to->flags & WEFT_OUTPUT_VIEWER)))
		return cli_usage_error("convert", "--allow-loss is for the viewer formats "
				       "(%s)", viewers);
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
	cli_parser_init(&parser, "convert", argc, argv, convert_options);
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

/* ---- Reading ----------------------------------------------------------------------- */

/*
 * Formats whose every stream is in one file (Heph) are read in file
 * order: one pass, bounded memory, no time-order index (and the order
 * Heph's converter uses). The others are read merged by time.
 */
static int reads_in_file_order(weft_format format)
{
	return format == WEFT_FORMAT_HEPH;
}

/*
 * Opens the trace with the reading order of its format. When the format
 * is detected, the trace is first opened in stored order; a format read
 * in time order is then opened again (its opening is cheap, unlike a
 * Heph scan, which happens once).
 */
static int open_for_conversion(const convert_settings *s, weft_trace **out)
{
	cli_common c = s->common;
	int detect = c.open.format == WEFT_FORMAT_AUTO;

	c.open.stored_order = detect || reads_in_file_order(c.open.format);
	int exit_code = cli_open_trace(&c, "convert", out);
	if (exit_code != CLI_EXIT_OK || !detect)
		return exit_code;
	weft_format format = weft_trace_format(*out);
	if (reads_in_file_order(format))
		return exit_code;
	weft_trace_free(*out);
	c.open.format = format;
	c.open.stored_order = 0;
	return cli_open_trace(&c, "convert", out);
}

/*
 * The conversion loop: every event of the cursor to the writer. Stops
 * early when the output has failed. Returns what weft_cursor_next()
 * returned last (0 at the end, or a negative WEFT_E* code).
 */
static int convert_events(weft_cursor *cursor, weft__chrome_writer *writer)
{
	const weft_event *event;
	int rc;

	while ((rc = weft_cursor_next(cursor, &event)) == 1) {
		weft__chrome_writer_event(writer, event);
		if (weft__chrome_writer_failed(writer))
			return 0;
	}
	return rc;
}

/* ---- Report -------------------------------------------------------------------------- */

/*
 * The problems met on the way, on stderr. Returns 1 when some data could
 * not be read (an error diagnostic, fields that could not be decoded), 0
 * when there were only warnings or nothing.
 */
static int report_problems(const weft_trace *trace, const weft__chrome_stats *st)
{
	int lost = cli_print_diags_from(trace, "convert", 0);

	if (st->bad_fields > 0) {
		fprintf(stderr, "weft convert: error: %llu event(s) with fields that could "
			"not be decoded (written without them)\n",
			(unsigned long long)st->bad_fields);
		lost = 1;
	}
	if (st->fixup_stuck > 0)
		fprintf(stderr, "weft convert: warning: %llu event(s) left at their own "
			"timestamp: the same-start fix-up would never end for them (Heph's "
			"converter hangs there)\n", (unsigned long long)st->fixup_stuck);
	return lost;
}

/* ---- The command ------------------------------------------------------------------------ */

/*
 * Writes the whole document: header, events, footer. Returns 0, or the
 * exit code 2 after printing why the output failed. *read_rc gets the
 * reading's outcome. A regular file is written from a second thread;
 * OUT (`synced`: fsync'ed when committed) also goes to the disk as it is
 * written, leaving the page cache (docs/convert.md).
 */
static int write_document(const convert_settings *s, weft_trace *trace,
			  weft_cursor *cursor, int fd, int synced, int *read_rc,
			  weft__chrome_stats *stats)
{
	weft__chrome_options o = { .heph_compat = s->heph_compat,
				   .background = 1,
				   .write_behind = synced };
	weft__chrome_writer *writer;
	int rc = weft__chrome_writer_create(trace, fd, &o, &writer);

	if (rc < 0)
		return cli_library_error("convert", "cannot start the output", rc);
	weft__chrome_writer_begin(writer);
	*read_rc = convert_events(cursor, writer);
	rc = weft__chrome_writer_finish(writer);
	weft__chrome_writer_stats(writer, stats);
	weft__chrome_writer_free(writer);
	if (rc < 0)
		return cli_library_error("convert", "writing the output failed", rc);
	return CLI_EXIT_OK;
}

/* Converts into the output file, which is then committed or removed. */
static int convert_into(const convert_settings *s, weft_trace *trace, weft_cursor *cursor,
			cli_outfile *out)
{
	weft__chrome_stats stats;
	int read_rc = 0;

	memset(&stats, 0, sizeof stats);
	int exit_code = write_document(s, trace, cursor, out->fd, out->tmp_path != NULL,
				       &read_rc, &stats);
	if (exit_code != CLI_EXIT_OK) {
		cli_outfile_abort(out);
		return exit_code;
	}
	exit_code = cli_outfile_commit(out);
	if (exit_code != CLI_EXIT_OK)
		return exit_code;
	int lost = report_problems(trace, &stats);
	if (read_rc < 0) {
		cli_library_error("convert", "reading the events stopped early", read_rc);
		lost = 1;
	}
	return lost ? CLI_EXIT_PROBLEMS : CLI_EXIT_OK;
}

/*
 * Creates the output file first (so that a refused OUT costs no reading),
 * opens the trace, creates the cursor, converts.
 */
static int run_convert(const convert_settings *s)
{
	weft_trace *trace;
	weft_cursor *cursor = NULL;
	cli_outfile out;
	int exit_code = cli_outfile_open(&out, "convert", s->output, s->force);

	if (exit_code != CLI_EXIT_OK)
		return exit_code;
	exit_code = open_for_conversion(s, &trace);
	if (exit_code != CLI_EXIT_OK) {
		cli_outfile_abort(&out);
		return exit_code;
	}
	int rc = weft_cursor_create(trace, &s->filter, &cursor);
	if (rc < 0) {
		exit_code = cli_library_error("convert", "cannot read the events", rc);
		cli_outfile_abort(&out);
	} else {
		exit_code = convert_into(s, trace, cursor, &out);
	}
	weft_cursor_free(cursor);
	weft_trace_free(trace);
	return exit_code;
}

/*
 * The formats written through the view layer (perfetto, paraver) or the
 * Pallas writer: their own files (cli/convert_view.c, convert_pallas.c).
 */
static int run_other_convert(const convert_settings *s)
{
	cli_convert_job job = { NULL, s->filter, s->output, s->force,
				s->virtual_time ? (double)s->vt_unit : 0, s->allow_loss };
	int exit_code;

	int pallas = strcmp(s->to->name, "pallas") == 0; /* (until conversion is a library call) */
	if (pallas) {
		/* Pallas threads are written in time order (Heph: parents
		 * before their children). */
		cli_common c = s->common;
		c.open.stored_order = 0;
		exit_code = cli_open_trace(&c, "convert", &job.trace);
	} else {
		exit_code = open_for_conversion(s, &job.trace);
	}

	if (exit_code != CLI_EXIT_OK)
		return exit_code;
	if (pallas)
		exit_code = cli_convert_pallas(&job);
	else
		exit_code = cli_convert_view(&job, s->to->name);
	weft_trace_free(job.trace);
	return exit_code;
}

/* Entry of `weft convert`: options, then the conversion. */
int cli_cmd_convert(int argc, char **argv)
{
	convert_settings settings;
	int done = parse_convert_arguments(&settings, argc, argv);

	if (done >= 0)
		return done;
	if (!settings.heph_compat)
		return run_other_convert(&settings);
	return run_convert(&settings);
}
