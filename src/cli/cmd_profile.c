/* SPDX-License-Identifier: MIT */
/*
 * cli/cmd_profile.c - `weft profile`: per region, how many calls, their
 * total, mean, min and max duration and their exclusive time, over every
 * thread of a Pallas trace.
 *
 * By default the figures come from the grammar: each block sequence that
 * starts with an Enter is a set of calls of its region, whose count, min
 * and max are in the sequence headers and whose exact totals are the sums
 * of its stored durations (one value per call, not per event).
 * --headers-only reads nothing but the headers (totals = mean x count, as
 * stored means are rounded); --replay replays every Enter/Leave instead,
 * which is how the other two are checked.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli/cli.h"
#include "weft/pallas_grammar.h"

enum profile_option_id {
	OPT_JSON = 100,
	OPT_HEADERS_ONLY,
	OPT_REPLAY
};

static const cli_option profile_options[] = {
	CLI_COMMON_OPTIONS,
	{ "json", 0, 0, OPT_JSON },
	{ "headers-only", 0, 0, OPT_HEADERS_ONLY },
	{ "replay", 0, 0, OPT_REPLAY },
	{ NULL, 0, 0, 0 }
};

static void print_profile_help(void)
{
	printf("usage: weft profile [OPTIONS] TRACE\n"
	       "\n"
	       "Per region of a Pallas trace, over all threads: calls, total,\n"
	       "mean, min and max duration and exclusive time (ns), from the\n"
	       "grammar's sequence durations, largest total first.\n"
	       "\n"
	       "options:\n"
	       "  --headers-only       from the sequence headers alone (instant;\n"
	       "                       totals from the stored, rounded means)\n"
	       "  --replay             replay every Enter/Leave instead\n"
	       "  --json               one JSON object instead of the table\n"
	       "  --format NAME        auto (default) or pallas\n"
	       "  -h, --help           this text\n"
	       "\n"
	       "example:\n"
	       "  weft profile trace/main.pallas\n");
}

typedef struct region_stats {
	char *name;
	uint64_t count, total, min, max, exclusive;
} region_stats;

typedef struct profile {
	region_stats *regions;
	size_t count, cap;
} profile;

/* The entry of a region name, added when new (NULL on ENOMEM). */
static region_stats *region_of(profile *p, const char *name)
{
	for (size_t i = 0; i < p->count; i++)
		if (strcmp(p->regions[i].name, name) == 0)
			return &p->regions[i];
	if (p->count == p->cap) {
		size_t cap = p->cap ? 2 * p->cap : 32;
		region_stats *r = realloc(p->regions, cap * sizeof *r);
		if (r == NULL)
			return NULL;
		p->regions = r;
		p->cap = cap;
	}
	region_stats *r = &p->regions[p->count];
	memset(r, 0, sizeof *r);
	r->min = UINT64_MAX;
	r->name = strdup(name);
	if (r->name == NULL)
		return NULL;
	p->count++;
	return r;
}

/* Adds calls of a region: count, their sum, min, max, exclusive sum. */
static int add_calls(profile *p, const char *name, uint64_t count,
		     uint64_t total, uint64_t min, uint64_t max, uint64_t exclusive)
{
	region_stats *r = region_of(p, name);
	if (r == NULL)
		return cli_library_error("profile", "out of memory", WEFT_ENOMEM);
	r->count += count;
	r->total += total;
	r->exclusive += exclusive;
	if (min < r->min)
		r->min = min;
	if (max > r->max)
		r->max = max;
	return 0;
}

/* The calls of one thread from its grammar's block sequences. */
static int profile_grammar(weft_trace *trace, uint32_t stream, int headers_only,
			   profile *p)
{
	weft_pallas_grammar *g;
	int rc = weft_pallas_grammar_open(trace, stream, &g);
	if (rc < 0)
		return cli_library_error("profile", "cannot read a grammar", rc);
	for (size_t i = 0; rc == 0 && i < weft_pallas_grammar_sequence_count(g); i++) {
		weft_pallas_sequence_info s;
		rc = weft_pallas_grammar_sequence(g, i, &s);
		if (rc < 0 || s.dead || s.region_ref < 0 || s.durations.count == 0)
			continue;
		uint64_t total = s.durations.mean * s.durations.count;
		uint64_t exclusive = s.exclusive.mean * s.exclusive.count;
		char *name = strdup(s.name);
		if (name == NULL) {
			rc = WEFT_ENOMEM;
			break;
		}
		if (!headers_only)
			rc = weft_pallas_grammar_sequence_totals(g, i, &total, &exclusive);
		if (rc == 0)
			rc = add_calls(p, name, s.durations.count, total, s.durations.min,
				       s.durations.max, exclusive);
		free(name);
	}
	weft_pallas_grammar_free(g);
	return rc < 0 ? cli_library_error("profile", "cannot read durations", rc) : 0;
}

/* ---- Replay -------------------------------------------------------------------- */

typedef struct open_call {
	char name[256];
	uint64_t start, children;
} open_call;

/* The text of the event's `region` field into buf ("" when none). */
static void region_field(const weft_trace *trace, const weft_event *ev,
			 char *buf, size_t size)
{
	weft_field fields[8];
	int n = weft_event_fields(trace, ev, fields, 8);
	buf[0] = '\0';
	for (int i = 0; i < n && i < 8; i++)
		if (fields[i].name_len == 6 && memcmp(fields[i].name, "region", 6) == 0 &&
		    fields[i].type == WEFT_TYPE_STR) {
			snprintf(buf, size, "%.*s", (int)fields[i].v.s.len, fields[i].v.s.ptr);
			return;
		}
}

/* Closes the innermost open call at `time` and counts it. */
static int close_call(profile *p, open_call *stack, size_t *depth, uint64_t time)
{
	open_call *c = &stack[--*depth];
	uint64_t d = time - c->start;
	if (*depth > 0)
		stack[*depth - 1].children += d;
	return add_calls(p, c->name, 1, d, d, d, d - c->children);
}

/*
 * The calls of one stream from its Enter/Leave events: a stack of open
 * calls; a Leave closes the innermost call (its duration goes to the
 * parent's children time, for the parent's exclusive time). Calls still
 * open at the end close at the stream's last timestamp, as the writer
 * closes them in the grammar, so that the replay counts what the
 * durations count.
 */
static int profile_replay(weft_trace *trace, uint32_t stream, profile *p)
{
	weft_cursor *cur;
	int rc = weft_cursor_create_stream(trace, stream, &cur);
	if (rc < 0)
		return cli_library_error("profile", "cannot read a stream", rc);
	open_call *stack = NULL;
	size_t depth = 0, cap = 0;
	const weft_event *ev;
	uint64_t last = 0;
	while (rc == 0 && (rc = weft_cursor_next(cur, &ev)) == 1) {
		rc = 0;
		last = ev->time;
		if (ev->code_len == 5 && memcmp(ev->code, "Enter", 5) == 0) {
			if (depth == cap) {
				size_t ncap = cap ? 2 * cap : 64;
				open_call *s = realloc(stack, ncap * sizeof *s);
				if (s == NULL) {
					rc = WEFT_ENOMEM;
					break;
				}
				stack = s;
				cap = ncap;
			}
			region_field(trace, ev, stack[depth].name, sizeof stack[depth].name);
			stack[depth].start = ev->time;
			stack[depth++].children = 0;
		} else if (ev->code_len == 5 && memcmp(ev->code, "Leave", 5) == 0 && depth > 0) {
			rc = close_call(p, stack, &depth, ev->time);
		}
	}
	while (rc == 0 && depth > 0)
		rc = close_call(p, stack, &depth, last);
	free(stack);
	weft_cursor_free(cur);
	return rc < 0 ? cli_library_error("profile", "cannot read events", rc) : 0;
}

/* ---- Output ---------------------------------------------------------------------- */

static int by_total(const void *a, const void *b)
{
	const region_stats *x = a, *y = b;
	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* The profile as one JSON object (jansson does the escaping). */
static int print_profile_json(const profile *p, const char *source)
{
	json_t *regions = json_array();
	for (size_t i = 0; regions && i < p->count; i++) {
		const region_stats *r = &p->regions[i];
		/* NULL for a name that is not UTF-8: the array append fails. */
		json_t *o = json_pack(
			"{s:s,s:I,s:I,s:f,s:I,s:I,s:I}", "region", r->name,
			"count", (json_int_t)r->count, "total_ns", (json_int_t)r->total,
			"mean_ns", (double)r->total / (double)r->count,
			"min_ns", (json_int_t)r->min, "max_ns", (json_int_t)r->max,
			"exclusive_ns", (json_int_t)r->exclusive);
		if (json_array_append_new(regions, o) < 0) {
			json_decref(regions);
			fprintf(stderr, "weft profile: region name '%s' is not UTF-8; "
				"use the table output\n", r->name);
			return CLI_EXIT_FAILURE;
		}
	}
	json_t *root = json_pack("{s:s,s:o}", "source", source, "regions", regions);
	char *text = root ? json_dumps(root, JSON_COMPACT | JSON_REAL_PRECISION(17)) : NULL;
	json_decref(root);
	if (text == NULL)
		return cli_library_error("profile", "out of memory", WEFT_ENOMEM);
	puts(text);
	free(text);
	return 0;
}

/* The table, largest total first. */
static void print_profile_table(const profile *p)
{
	printf("%-32s %12s %16s %14s %12s %12s %16s\n", "region", "calls", "total_ns",
	       "mean_ns", "min_ns", "max_ns", "exclusive_ns");
	for (size_t i = 0; i < p->count; i++) {
		const region_stats *r = &p->regions[i];
		printf("%-32s %12" PRIu64 " %16" PRIu64 " %14.3f %12" PRIu64 " %12" PRIu64
		       " %16" PRIu64 "\n", r->name, r->count, r->total,
		       (double)r->total / (double)r->count, r->min, r->max, r->exclusive);
	}
}

static int run_profile(const cli_common *common, int json, int headers_only,
		       int replay)
{
	weft_trace *trace;
	if (cli_open_trace(common, "profile", &trace) != CLI_EXIT_OK)
		return CLI_EXIT_FAILURE;
	if (weft_trace_format(trace) != WEFT_FORMAT_PALLAS) {
		fprintf(stderr, "weft profile: '%s' is a %s trace; profiles are computed "
			"for Pallas traces\n", common->trace_path,
			weft_format_name(weft_trace_format(trace)));
		weft_trace_free(trace);
		return CLI_EXIT_FAILURE;
	}
	profile p = { 0 };
	int rc = 0;
	for (size_t s = 0; rc == 0 && s < weft_trace_stream_count(trace); s++)
		rc = replay ? profile_replay(trace, (uint32_t)s, &p)
			    : profile_grammar(trace, (uint32_t)s, headers_only, &p);
	if (rc == 0) {
		if (p.count > 1)
			qsort(p.regions, p.count, sizeof *p.regions, by_total);
		const char *source = replay ? "replay" : headers_only ? "headers" : "durations";
		if (json)
			rc = print_profile_json(&p, source);
		else
			print_profile_table(&p);
	}
	for (size_t i = 0; i < p.count; i++)
		free(p.regions[i].name);
	free(p.regions);
	/* A stream that failed on the way ends early: said, and exit 1. */
	int lost = cli_print_diags_from(trace, "profile", 0);
	weft_trace_free(trace);
	return rc != 0 ? CLI_EXIT_FAILURE : lost ? CLI_EXIT_PROBLEMS : CLI_EXIT_OK;
}

int cli_cmd_profile(int argc, char **argv)
{
	cli_parser parser;
	cli_common common;
	const char *value;
	int json = 0, headers_only = 0, replay = 0, id;

	cli_common_init(&common);
	cli_parser_init(&parser, "profile", argc, argv, profile_options);
	while ((id = cli_next_option(&parser, &value)) != 0) {
		if (id < 0)
			return CLI_EXIT_FAILURE;
		if (id == CLI_OPT_HELP) {
			print_profile_help();
			return CLI_EXIT_OK;
		}
		if (id == OPT_JSON)
			json = 1;
		else if (id == OPT_HEADERS_ONLY)
			headers_only = 1;
		else if (id == OPT_REPLAY)
			replay = 1;
		else if (cli_common_option(&common, "profile", id, value) != 1)
			return CLI_EXIT_FAILURE;
	}
	if (headers_only && replay)
		return cli_usage_error("profile", "--headers-only and --replay exclude each other");
	if (cli_take_trace_path(&common, &parser) < 0)
		return CLI_EXIT_FAILURE;
	return run_profile(&common, json, headers_only, replay);
}
