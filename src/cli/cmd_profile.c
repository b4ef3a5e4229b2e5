/* SPDX-License-Identifier: MIT */
/*
 * cli/cmd_profile.c - `weft profile`: per region (or per stream and
 * region), calls, total, mean, min and max duration and exclusive time,
 * for a trace of any format. The figures are the library's
 * (weft_profile_compute(), weft/profile.h); this file parses the options
 * and prints the rows as a table, JSON or CSV.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli/cli.h"
#include "weft/profile.h"

enum profile_option_id {
	OPT_JSON = 100,
	OPT_CSV,
	OPT_BY,
	OPT_INSTANTS,
	OPT_HEADERS_ONLY,
	OPT_REPLAY,
	OPT_FROM,
	OPT_TO,
	OPT_STREAM,
	OPT_EVENT,
	OPT_EMULATE,
	OPT_ALL_MODELS,
	OPT_CHANNEL
};

const cli_option cli_profile_options[] = {
	CLI_COMMON_OPTIONS,
	{ "json", 0, 0, OPT_JSON },
	{ "csv", 0, 0, OPT_CSV },
	{ "by", 0, 1, OPT_BY },
	{ "instants", 0, 0, OPT_INSTANTS },
	{ "headers-only", 0, 0, OPT_HEADERS_ONLY },
	{ "replay", 0, 0, OPT_REPLAY },
	{ "from", 0, 1, OPT_FROM },
	{ "to", 0, 1, OPT_TO },
	{ "stream", 0, 1, OPT_STREAM },
	{ "event", 0, 1, OPT_EVENT },
	{ "mcv", 0, 1, OPT_EVENT },
	{ "emulate", 0, 0, OPT_EMULATE },
	{ "all-models", 0, 0, OPT_ALL_MODELS },
	{ "channel", 0, 1, OPT_CHANNEL },
	{ NULL, 0, 0, 0 }
};

static void print_profile_help(void)
{
	printf("usage: weft profile [OPTIONS] TRACE\n"
	       "\n"
	       "Per region (span name: region, task type, state, event description),\n"
	       "over all streams or per stream: calls, total, mean, min and max\n"
	       "duration and exclusive time (ns: without the time of the calls nested\n"
	       "in them), largest total first. Works on every format: the calls are\n"
	       "the trace's spans (enter/leave pairs, intervals). Pallas traces are\n"
	       "profiled from the durations their grammar stores (the same figures,\n"
	       "faster), unless a filter or --replay asks for the events.\n"
	       "\n"
	       "options:\n"
	       "  --by name|stream     one row per region (default), or per stream and\n"
	       "                       region (threads, ranks: to see load imbalance)\n"
	       "  --json               one JSON object instead of the table\n"
	       "  --csv                CSV with a header line instead of the table\n"
	       "  --instants           also count the instants (point events) per name;\n"
	       "                       shown anyway when the trace has no spans (ROSS)\n"
	       "  --from T, --to T     only the time in [from, to] (calls are cut to it);\n"
	       "                       T is a clock value of the trace, or +T from its\n"
	       "                       start; in ns or with a unit: 5us, 10ms, 2s\n"
	       "  --stream GLOB        only streams whose path matches the glob\n"
	       "  --event, --mcv GLOB  only events whose code matches\n"
	       "  --replay             Pallas: replay every Enter/Leave instead\n"
	       "  --headers-only       Pallas: from the sequence headers alone (instant;\n"
	       "                       totals from the stored, rounded means)\n"
	       "  --emulate            ovni: profile the channels of ovniemu's thread view\n"
	       "                       instead of the regions: per channel (thread state,\n"
	       "                       subsystem, task type, ...) the time of each value,\n"
	       "                       a \"channel\" column first; with --by stream, the\n"
	       "                       time per task type per thread\n"
	       "  --channel GLOB       with --emulate: only the channels whose\n"
	       "                       <model>.<name> (nosv.type, system.state) or title\n"
	       "                       (\"nOS-V task type\") matches, numbers included\n"
	       "                       (task ids, ranks); without it, every channel's\n"
	       "                       labelled values\n"
	       "  --all-models         with --emulate: every model, required or not\n"
	       "                       (ovniemu -a)\n");
	cli_print_common_help(stdout, cli_stream_threads_notes);
	printf("\n"
	       "examples:\n"
	       "  weft profile trace/main.pallas\n"
	       "  weft profile --by stream --csv ovni/ > per-thread.csv\n"
	       "  weft profile --emulate --by stream --channel nosv.type ovni/\n");
}

typedef struct profile_settings {
	cli_common common;
	weft_profile_options options;
	cli_window window; /* --from, --to */
	int json, csv, instants, headers_only, replay;
} profile_settings;

/* The channel of an emulated row ("" otherwise). */
static const char *row_channel(const weft_profile_row *r)
{
	return r->timeline != NULL ? r->timeline : "";
}

/* One option of `weft profile`: 0, or -1 after a usage error. */
static int profile_option(profile_settings *s, int id, const char *value)
{
	switch (id) {
	case OPT_JSON: s->json = 1; return 0;
	case OPT_CSV: s->csv = 1; return 0;
	case OPT_INSTANTS: s->instants = 1; return 0;
	case OPT_HEADERS_ONLY: s->headers_only = 1; return 0;
	case OPT_REPLAY: s->replay = 1; return 0;
	case OPT_STREAM: s->options.filter.stream_pattern = value; return 0;
	case OPT_EVENT: s->options.filter.code_pattern = value; return 0;
	case OPT_EMULATE: s->options.emulate = 1; return 0;
	case OPT_ALL_MODELS: s->options.all_models = 1; return 0;
	case OPT_CHANNEL: s->options.channels = value; return 0;
	case OPT_BY:
		if (strcmp(value, "name") == 0 || strcmp(value, "region") == 0)
			s->options.by = WEFT_PROFILE_BY_NAME;
		else if (strcmp(value, "stream") == 0)
			s->options.by = WEFT_PROFILE_BY_STREAM;
		else
			return cli_usage_error("profile", "--by takes name or stream, not '%s'",
					       value), -1;
		return 0;
	case OPT_FROM:
	case OPT_TO:
		return cli_window_option(&s->window, "profile", id == OPT_FROM ? "--from" : "--to",
					 value, id == OPT_TO);
	default:
		return cli_common_option(&s->common, "profile", id, value) == 1 ? 0 : -1;
	}
}

/* ---- Output ------------------------------------------------------------------ */

/* The rows to print: those with calls, and with instants when they show. */
static int row_shown(const weft_profile_row *r, int instants)
{
	return r->calls > 0 || (instants && r->instants > 0);
}

/* The path of a row's stream ("" for rows over every stream). */
static const char *row_stream_path(const weft_trace *trace, const weft_profile_row *r)
{
	const weft_stream_info *info = r->stream >= 0
				       ? weft_trace_stream(trace, (size_t)r->stream) : NULL;
	return info != NULL && info->path != NULL ? info->path : "";
}

/* The profile as one JSON object (jansson does the escaping). */
static int print_profile_json(const weft_trace *trace, const weft_profile *p, int instants,
			      int by_stream, int emulated)
{
	json_t *regions = json_array();
	for (size_t i = 0; regions && i < weft_profile_row_count(p); i++) {
		const weft_profile_row *r = weft_profile_row_get(p, i);
		if (!row_shown(r, instants))
			continue;
		/* NULL for a name that is not UTF-8: the array append fails. */
		json_t *o = json_pack(
			"{s:s,s:I,s:I,s:f,s:I,s:I,s:I}", "region", r->name,
			"count", (json_int_t)r->calls, "total_ns", (json_int_t)r->inclusive,
			"mean_ns", r->mean, "min_ns", (json_int_t)r->min,
			"max_ns", (json_int_t)r->max, "exclusive_ns", (json_int_t)r->exclusive);
		if (o != NULL && instants)
			json_object_set_new(o, "instants", json_integer((json_int_t)r->instants));
		if (o != NULL && r->timeline != NULL)
			json_object_set_new(o, "channel", json_string(r->timeline));
		if (o != NULL && by_stream) {
			json_object_set_new(o, "stream", json_integer(r->stream));
			json_object_set_new(o, "stream_path",
					    json_string(row_stream_path(trace, r)));
		}
		if (json_array_append_new(regions, o) < 0) {
			json_decref(regions);
			fprintf(stderr, "weft profile: region name '%s' is not UTF-8; "
				"use the table output\n", r->name);
			return CLI_EXIT_FAILURE;
		}
	}
	json_t *root = json_pack("{s:s,s:o}", "source",
				 weft_profile_source_name(weft_profile_source_used(p)),
				 "regions", regions);
	if (root != NULL && by_stream)
		json_object_set_new(root, "by", json_string("stream"));
	if (root != NULL && emulated)
		json_object_set_new(root, "emulated", json_true());
	char *text = root ? json_dumps(root, JSON_COMPACT | JSON_REAL_PRECISION(17)) : NULL;
	json_decref(root);
	if (text == NULL)
		return cli_library_error("profile", "out of memory", WEFT_ENOMEM);
	puts(text);
	free(text);
	return 0;
}

/* A CSV field: quoted when it holds a comma, a quote or a line break. */
static void print_csv_text(const char *text)
{
	if (strpbrk(text, ",\"\r\n") == NULL) {
		fputs(text, stdout);
		return;
	}
	putchar('"');
	for (const char *c = text; *c; c++) {
		if (*c == '"')
			putchar('"');
		putchar(*c);
	}
	putchar('"');
}

/* The rows as CSV: one header line, one line per row. */
static void print_profile_csv(const weft_trace *trace, const weft_profile *p, int instants,
			      int by_stream, int emulated)
{
	printf("%s%sregion,calls,total_ns,mean_ns,min_ns,max_ns,exclusive_ns,instants\n",
	       by_stream ? "stream,stream_path," : "", emulated ? "channel," : "");
	for (size_t i = 0; i < weft_profile_row_count(p); i++) {
		const weft_profile_row *r = weft_profile_row_get(p, i);
		if (!row_shown(r, instants))
			continue;
		if (by_stream) {
			printf("%" PRId64 ",", r->stream);
			print_csv_text(row_stream_path(trace, r));
			putchar(',');
		}
		if (emulated) {
			print_csv_text(row_channel(r));
			putchar(',');
		}
		print_csv_text(r->name);
		printf(",%" PRIu64 ",%" PRIu64 ",%.3f,%" PRIu64 ",%" PRIu64 ",%" PRIu64
		       ",%" PRIu64 "\n", r->calls, r->inclusive, r->mean, r->min, r->max,
		       r->exclusive, r->instants);
	}
}

/*
 * The width of a column of text: its longest value (column 0: region
 * names, 1: stream paths, 2: channels), at least `least`, at most 200.
 */
static int column_width(const weft_trace *trace, const weft_profile *p, int column,
			size_t least)
{
	size_t width = least;
	for (size_t i = 0; i < weft_profile_row_count(p); i++) {
		const weft_profile_row *r = weft_profile_row_get(p, i);
		size_t n = strlen(column == 1 ? row_stream_path(trace, r)
				  : column == 2 ? row_channel(r) : r->name);
		if (n > width)
			width = n;
	}
	return width > 200 ? 200 : (int)width;
}

/* The table: largest total first (per stream with --by stream). */
static void print_profile_table(const weft_trace *trace, const weft_profile *p, int instants,
				int by_stream, int emulated)
{
	int width = by_stream ? column_width(trace, p, 1, strlen("stream")) : 0;
	int channel_width = emulated ? column_width(trace, p, 2, strlen("channel")) : 0;
	int name_width = column_width(trace, p, 0, emulated ? 16 : 32);
	if (by_stream)
		printf("%-*s ", width, "stream");
	if (emulated)
		printf("%-*s ", channel_width, "channel");
	printf("%-*s %12s %16s %14s %12s %12s %16s", name_width, "region", "calls", "total_ns",
	       "mean_ns", "min_ns", "max_ns", "exclusive_ns");
	printf(instants ? " %12s\n" : "\n", "instants");
	for (size_t i = 0; i < weft_profile_row_count(p); i++) {
		const weft_profile_row *r = weft_profile_row_get(p, i);
		if (!row_shown(r, instants))
			continue;
		if (by_stream)
			printf("%-*s ", width, row_stream_path(trace, r));
		if (emulated)
			printf("%-*s ", channel_width, row_channel(r));
		printf("%-*s %12" PRIu64 " %16" PRIu64 " %14.3f %12" PRIu64 " %12" PRIu64
		       " %16" PRIu64, name_width, r->name, r->calls, r->inclusive, r->mean, r->min,
		       r->max, r->exclusive);
		if (instants)
			printf(" %12" PRIu64, r->instants);
		putchar('\n');
	}
}

/*
 * 1 when the spans of the trace, chosen by default, hold no call (ROSS
 * event records): the instants are all there is to show. Not with
 * --replay, whose rows are those of the stored durations.
 */
static int only_instants(const weft_profile *p, const weft_profile_options *o)
{
	if (weft_profile_source_used(p) != WEFT_PROFILE_SPANS || o->source != WEFT_PROFILE_AUTO)
		return 0;
	for (size_t i = 0; i < weft_profile_row_count(p); i++)
		if (weft_profile_row_get(p, i)->calls > 0)
			return 0;
	return 1;
}

/* Spans the replay had to leave out: said on stderr; 1 when data was lost. */
static int report_losses(const weft_profile *p)
{
	weft_span_stats st;
	weft_profile_span_stats(p, &st);
	if (st.too_deep == 0)
		return 0;
	fprintf(stderr, "weft profile: %" PRIu64 " calls nested deeper than 512 levels "
		"are left out (their time counts as their parents' own)\n", st.too_deep);
	return 1;
}

static int run_profile(profile_settings *s)
{
	weft_trace *trace;
	weft_profile *p;

	if (cli_open_trace(&s->common, "profile", &trace) != CLI_EXIT_OK)
		return CLI_EXIT_FAILURE;
	if (cli_window_apply(&s->window, trace, "profile", &s->options.filter) != CLI_EXIT_OK) {
		weft_trace_free(trace);
		return CLI_EXIT_FAILURE;
	}
	int rc = weft_profile_compute(trace, &s->options, &p);
	if (rc < 0) {
		cli_library_error("profile", "cannot compute the profile", rc);
		cli_print_diags_from(trace, "profile", 0);
		cli_close_trace(trace);
		return CLI_EXIT_FAILURE;
	}
	int instants = s->instants || only_instants(p, &s->options);
	int by_stream = s->options.by == WEFT_PROFILE_BY_STREAM;
	int emulated = s->options.emulate;
	if (s->json)
		rc = print_profile_json(trace, p, instants, by_stream, emulated);
	else if (s->csv)
		print_profile_csv(trace, p, instants, by_stream, emulated);
	else
		print_profile_table(trace, p, instants, by_stream, emulated);
	int lost = report_losses(p);
	weft_span_stats read;
	weft_profile_span_stats(p, &read);
	if (weft_profile_source_used(p) == WEFT_PROFILE_SPANS)
		lost |= cli_report_unmatched(trace, "profile", &s->options.filter, read.selected);
	weft_profile_free(p);
	/* A stream that failed on the way ends early: said, and exit 1. */
	lost |= cli_print_diags_from(trace, "profile", 0);
	cli_close_trace(trace);
	return rc != 0 ? CLI_EXIT_FAILURE : lost ? CLI_EXIT_PROBLEMS : CLI_EXIT_OK;
}

int cli_cmd_profile(int argc, char **argv)
{
	cli_parser parser;
	profile_settings s = { 0 };
	const char *value;
	int id;

	cli_common_init(&s.common);
	weft_profile_options_init(&s.options);
	cli_parser_init(&parser, "profile", argc, argv, cli_profile_options);
	while ((id = cli_next_option(&parser, &value)) != 0) {
		if (id < 0)
			return CLI_EXIT_FAILURE;
		if (id == CLI_OPT_HELP) {
			print_profile_help();
			return CLI_EXIT_OK;
		}
		if (profile_option(&s, id, value) < 0)
			return CLI_EXIT_FAILURE;
	}
	if (s.headers_only && s.replay)
		return cli_usage_error("profile", "--headers-only and --replay exclude each other");
	if (s.json && s.csv)
		return cli_usage_error("profile", "--json and --csv exclude each other");
	if (s.options.emulate && (s.headers_only || s.replay))
		return cli_usage_error("profile", "--emulate profiles the emulated channels from "
				       "their spans: no --headers-only or --replay");
	if (!s.options.emulate && (s.options.all_models || s.options.channels != NULL))
		return cli_usage_error("profile", "--all-models and --channel go with --emulate");
	s.options.source = s.replay ? WEFT_PROFILE_SPANS
			   : s.headers_only ? WEFT_PROFILE_HEADERS : WEFT_PROFILE_AUTO;
	if (cli_take_trace_path(&s.common, &parser) < 0)
		return CLI_EXIT_FAILURE;
	return run_profile(&s);
}
