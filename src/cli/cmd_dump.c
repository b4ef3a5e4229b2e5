/* SPDX-License-Identifier: MIT */
/*
 * cli/cmd_dump.c - `weft dump`: every event of the trace merged in time
 * order, one line each, as decoded fields, raw hex (ovnidump -x) or JSON
 * lines: the library's weft_dump() (weft/dump.h) into standard output;
 * this file parses the options and prints the failures and diagnostics.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "weft/dump.h"

enum dump_option_id {
	OPT_HEX = 100,
	OPT_JSON,
	OPT_FROM,
	OPT_TO,
	OPT_STREAM,
	OPT_CODE,
	OPT_STORED_ORDER,
	OPT_TREE,
	OPT_STRUCTURE
};

const cli_option cli_dump_options[] = {
	CLI_COMMON_OPTIONS,
	{ "hex", 'x', 0, OPT_HEX },
	{ "json", 0, 0, OPT_JSON },
	{ "from", 0, 1, OPT_FROM },
	{ "to", 0, 1, OPT_TO },
	{ "stream", 0, 1, OPT_STREAM },
	{ "mcv", 0, 1, OPT_CODE },
	{ "event", 0, 1, OPT_CODE },
	{ "stored-order", 0, 0, OPT_STORED_ORDER },
	{ "tree", 0, 0, OPT_TREE },
	{ "structure", 'S', 0, OPT_STRUCTURE },
	{ NULL, 0, 0, 0 }
};

/*
 * --structure: the grammar of every thread of a Pallas trace as a tree
 * (the library's weft_pallas_structure_write()); a thread that cannot be
 * read is told and the others go on.
 */
static int print_structure(weft_trace *trace)
{
	int status = CLI_EXIT_OK;

	if (!weft_pallas_grammar_available(trace)) {
		fprintf(stderr, "weft dump: --structure needs a Pallas trace, not %s\n",
			weft_format_name(weft_trace_format(trace)));
		return CLI_EXIT_FAILURE;
	}
	for (size_t s = 0; s < weft_trace_stream_count(trace); s++) {
		int rc = weft_pallas_structure_write(trace, (uint32_t)s, stdout);
		if (rc < 0) {
			cli_library_error("dump", weft_trace_stream(trace, s)->path, rc);
			status = CLI_EXIT_FAILURE;
		}
	}
	return status;
}

/* Usage text of `weft dump --help`. */
static void print_dump_help(void)
{
	printf("usage: weft dump [OPTIONS] TRACE\n"
	       "\n"
	       "Prints every event of TRACE merged in time order, one per line:\n"
	       "  <clock>  <code>  <stream>  <fields>\n"
	       "Fields are decoded by name (cpu=0 tid=-1 tag=0); events without a\n"
	       "known layout show their payload bytes as :xx:xx. Interval events (Heph)\n"
	       "show their end and duration after the stream: end=E dur=D.\n"
	       "\n"
	       "options:\n"
	       "  -x, --hex            payload bytes in hex instead of fields (as ovnidump -x;\n"
	       "                       for jumbo events the 4-byte size, then the data)\n"
	       "  --json               one JSON object per event (see docs/dump-json.md)\n"
	       "  --from T, --to T     only events with from <= time <= to; T is a clock\n"
	       "                       value (as printed) or +T from the trace's start;\n"
	       "                       in ns or with a unit: 5us, 10ms, 2s, 1.5min, 1h\n"
	       "  --stream GLOB        only streams whose path matches the glob\n"
	       "  --mcv, --event GLOB  only events whose code matches; write \\[ for a\n"
	       "                       literal [\n"
	       "  --stored-order       events of unordered regions as stored (not sorted)\n"
	       "  --tree               text: the code indented by two spaces per call-tree\n"
	       "                       level (Heph, Pallas; time order); not with --json\n"
	       "  -S, --structure      Pallas: the grammar of each thread (sequences,\n"
	       "                       loops, events with counts and durations), not\n"
	       "                       unrolled, instead of the events\n");
	cli_print_common_help(stdout, cli_write_threads_notes);
	printf("\n"
	       "example:\n"
	       "  weft dump -x --from +10ms --to +20ms --mcv 'OH?' ovni/\n");
}

/* Everything the options of `weft dump` set. */
typedef struct dump_settings {
	cli_common common;
	weft_dump_options options; /* mode, flags, filter */
	cli_window window;       /* --from, --to */
	int structure;           /* --structure: the grammar, not the events */
} dump_settings;

/* Applies one dump option; -1 after printing an error. */
static int apply_dump_option(dump_settings *s, int id, const char *value)
{
	switch (id) {
	case OPT_HEX:
		s->options.mode = WEFT_DUMP_HEX;
		return 0;
	case OPT_JSON:
		s->options.mode = WEFT_DUMP_JSON;
		return 0;
	case OPT_FROM:
	case OPT_TO:
		return cli_window_option(&s->window, "dump", id == OPT_FROM ? "--from" : "--to",
					 value, id == OPT_TO);
	case OPT_STREAM:
		s->options.filter.stream_pattern = value;
		return 0;
	case OPT_CODE:
		s->options.filter.code_pattern = value;
		return 0;
	case OPT_STORED_ORDER:
		s->common.open.stored_order = 1;
		return 0;
	case OPT_TREE:
		s->options.flags |= WEFT_DUMP_TREE;
		return 0;
	case OPT_STRUCTURE:
		s->structure = 1;
		return 0;
	default:
		return cli_common_option(&s->common, "dump", id, value) == 1 ? 0 : -1;
	}
}

/*
 * Reads the arguments. Returns -1 to go on, or the exit code to end with
 * (0 after --help, 2 after an error).
 */
static int parse_dump_arguments(dump_settings *s, int argc, char **argv)
{
	cli_parser parser;
	const char *value;
	int id;

	memset(s, 0, sizeof *s);
	cli_common_init(&s->common);
	weft_dump_options_init(&s->options);
	cli_parser_init(&parser, "dump", argc, argv, cli_dump_options);
	while ((id = cli_next_option(&parser, &value)) != 0) {
		if (id < 0)
			return CLI_EXIT_FAILURE;
		if (id == CLI_OPT_HELP) {
			print_dump_help();
			return CLI_EXIT_OK;
		}
		if (apply_dump_option(s, id, value) < 0)
			return CLI_EXIT_FAILURE;
	}
	if ((s->options.flags & WEFT_DUMP_TREE) && s->options.mode == WEFT_DUMP_JSON)
		return cli_usage_error("dump", "--tree indents the text dump; --json has "
				       "\"depth\" and \"parent\" instead");
	if (cli_take_trace_path(&s->common, &parser) < 0)
		return CLI_EXIT_FAILURE;
	return -1;
}

/* The phrase of `weft dump`'s message for a failure at `stage`. */
static const char *failure_phrase(weft_dump_stage stage)
{
	switch (stage) {
	case WEFT_DUMP_CURSOR: return "cannot read the events";
	case WEFT_DUMP_START: return "cannot start the output";
	case WEFT_DUMP_READ: return "reading the events failed";
	default: return "writing the output failed";
	}
}

/* Opens, dumps (weft_dump()), reports. */
static int run_dump(dump_settings *s)
{
	weft_trace *trace;
	weft_dump_status status;
	int exit_code = cli_open_trace(&s->common, "dump", &trace);

	if (exit_code == CLI_EXIT_OK)
		exit_code = cli_window_apply(&s->window, trace, "dump", &s->options.filter);
	if (exit_code != CLI_EXIT_OK) {
		weft_trace_free(trace);
		return exit_code;
	}
	if (s->structure) {
		exit_code = print_structure(trace);
		cli_close_trace(trace);
		return exit_code;
	}
	int rc = weft_dump(trace, &s->options, STDOUT_FILENO, &status);
	if (rc < 0)
		exit_code = cli_library_error("dump", failure_phrase(status.stage), rc);
	else if (cli_report_unmatched(trace, "dump", &s->options.filter, status.events))
		exit_code = CLI_EXIT_PROBLEMS;
	/* Problems the library found while reading, after the dump (none
	 * when the cursor or the output could not start). */
	if (status.stage != WEFT_DUMP_CURSOR && status.stage != WEFT_DUMP_START &&
	    cli_print_diags_from(trace, "dump", 0) && exit_code == CLI_EXIT_OK)
		exit_code = CLI_EXIT_PROBLEMS;
	cli_close_trace(trace);
	return exit_code;
}

/* Entry of `weft dump`: options, then the dump. */
int cli_cmd_dump(int argc, char **argv)
{
	dump_settings settings;
	int done = parse_dump_arguments(&settings, argc, argv);

	if (done >= 0)
		return done;
	settings.common.stdout_streamed = 1; /* the lines go out while it reads */
	return run_dump(&settings);
}
