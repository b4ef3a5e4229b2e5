/* SPDX-License-Identifier: MIT */
/*
 * cli/cmd_dump.c - `weft dump`: every event of the trace merged in time
 * order, one line each, as decoded fields, raw hex (ovnidump -x) or JSON
 * lines. The lines are formatted by outputs/dump_writer.c straight into a
 * 1 MiB buffer written to standard output with write(2). On large traces
 * the reading and merging run in this thread and the formatting in a
 * second one (outputs/pipeline.c).
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "outputs/outputs.h"
#include "outputs/pipeline.h"

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

static const cli_option dump_options[] = {
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
	       "  --from T, --to T     only events with from <= time <= to; T in ns or\n"
	       "                       with a unit: 5us, 10ms, 2s, 1.5min, 1h\n"
	       "  --stream GLOB        only streams whose path matches the glob\n"
	       "  --mcv GLOB           only events whose code matches (alias: --event);\n"
	       "                       write \\[ for a literal [\n"
	       "  --stored-order       events of unordered regions as stored (not sorted)\n"
	       "  --tree               text: the code indented by two spaces per call-tree\n"
	       "                       level (Heph, Pallas; time order); not with --json\n"
	       "  -S, --structure      Pallas: the grammar of each thread (sequences,\n"
	       "                       loops, events with counts and durations), not\n"
	       "                       unrolled, instead of the events\n"
	       "  --format NAME        %s\n"
	       "  --clock-offsets FILE ovnisync clock offsets (default: clock-offsets.txt\n"
	       "                       in the trace directory when present)\n"
	       "  -h, --help           this text\n"
	       "\n"
	       "With two CPUs or more, traces of 4 MiB or more are dumped by two threads\n"
	       "(reading, formatting); --threads 1 (or WEFT_THREADS=1 in the environment)\n"
	       "forces one thread, 2 two.\n"
	       "\n"
	       "example:\n"
	       "  weft dump -x --from 10ms --to 20ms --mcv 'OH?' ovni/\n",
	       cli_format_list(" (default)"));
}

/* Everything the options of `weft dump` set. */
typedef struct dump_settings {
	cli_common common;
	weft__dump_mode mode;
	unsigned writer_options; /* weft__dump_option bits */
	weft_filter filter;
	int structure;           /* --structure: the grammar, not the events */
} dump_settings;

/* Applies one dump option; -1 after printing an error. */
static int apply_dump_option(dump_settings *s, int id, const char *value)
{
	switch (id) {
	case OPT_HEX:
		s->mode = WEFT__DUMP_HEX;
		return 0;
	case OPT_JSON:
		s->mode = WEFT__DUMP_JSON;
		return 0;
	case OPT_FROM:
	case OPT_TO: {
		uint64_t *dest = id == OPT_FROM ? &s->filter.from : &s->filter.to;
		if (cli_parse_time(value, dest) == 0)
			return 0;
		cli_usage_error("dump", "invalid time '%s' (e.g. 1500, 10ms, 2s)", value);
		return -1;
	}
	case OPT_STREAM:
		s->filter.stream_pattern = value;
		return 0;
	case OPT_CODE:
		s->filter.code_pattern = value;
		return 0;
	case OPT_STORED_ORDER:
		s->common.open.stored_order = 1;
		return 0;
	case OPT_TREE:
		s->writer_options |= WEFT__DUMP_TREE;
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
	s->mode = WEFT__DUMP_FIELDS;
	cli_parser_init(&parser, "dump", argc, argv, dump_options);
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
	if (s->filter.to != 0 && s->filter.to < s->filter.from)
		return cli_usage_error("dump", "--to is before --from");
	if ((s->writer_options & WEFT__DUMP_TREE) && s->mode == WEFT__DUMP_JSON)
		return cli_usage_error("dump", "--tree indents the text dump; --json has "
				       "\"depth\" and \"parent\" instead");
	if (cli_take_trace_path(&s->common, &parser) < 0)
		return CLI_EXIT_FAILURE;
	return -1;
}

/*
 * Consumer of the events: writes a run of them. Returns non-zero once the
 * output has failed, which stops the reading; the error itself is
 * reported by weft__dump_writer_finish().
 */
static int write_events(void *ctx, const weft_event *events, size_t count)
{
	weft__dump_writer *writer = ctx;

	for (size_t i = 0; i < count; i++)
		weft__dump_writer_event(writer, &events[i]);
	return weft__dump_writer_failed(writer);
}

/*
 * Writes every event of the cursor, in a second thread when the trace is
 * large enough (or WEFT_THREADS says so), then reports failures and the
 * diagnostics of the trace. Returns the exit code.
 *
 * With two threads, the writer decodes fields (weft_event_fields() on the
 * const trace) while this thread's cursor reads the same trace. The
 * backends' decoders only read what opening the trace built, never what a
 * cursor changes (its diagnostics); a second handle opened for the writer
 * would cost a second open, i.e. a second scan of a Heph file.
 */
static int dump_events(const dump_settings *s, weft_trace *trace, weft_cursor *cursor)
{
	weft__dump_writer writer;
	int exit_code = CLI_EXIT_OK;
	int rc = weft__dump_writer_init(&writer, trace, STDOUT_FILENO, s->mode,
					 s->writer_options);

	if (rc < 0)
		return cli_library_error("dump", "cannot start the output", rc);
	rc = weft__pipeline_run(cursor, write_events, &writer,
				weft__pipeline_wanted(trace));
	int out_rc = weft__dump_writer_finish(&writer);
	if (rc < 0)
		exit_code = cli_library_error("dump", "reading the events failed", rc);
	else if (out_rc < 0)
		exit_code = cli_library_error("dump", "writing the output failed", out_rc);
	weft__dump_writer_destroy(&writer);
	/* Problems the library found while reading, after the dump. */
	if (cli_print_diags_from(trace, "dump", 0) && exit_code == CLI_EXIT_OK)
		exit_code = CLI_EXIT_PROBLEMS;
	return exit_code;
}

/* Opens, creates the merged cursor, writes, reports. */
static int run_dump(const dump_settings *s)
{
	weft_trace *trace;
	weft_cursor *cursor = NULL;
	int exit_code = cli_open_trace(&s->common, "dump", &trace);

	if (exit_code != CLI_EXIT_OK)
		return exit_code;
	if (s->structure) {
		exit_code = print_structure(trace);
		weft_trace_free(trace);
		return exit_code;
	}
	int rc = weft_cursor_create(trace, &s->filter, &cursor);
	if (rc < 0)
		exit_code = cli_library_error("dump", "cannot read the events", rc);
	else
		exit_code = dump_events(s, trace, cursor);
	weft_cursor_free(cursor);
	weft_trace_free(trace);
	return exit_code;
}

/* Entry of `weft dump`: options, then the dump. */
int cli_cmd_dump(int argc, char **argv)
{
	dump_settings settings;
	int done = parse_dump_arguments(&settings, argc, argv);

	if (done >= 0)
		return done;
	return run_dump(&settings);
}
