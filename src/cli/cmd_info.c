/* SPDX-License-Identifier: MIT */
/*
 * cli/cmd_info.c - `weft info`: what a trace is made of. The format and
 * layout version, the node hierarchy (e.g. loom > process > thread) with
 * a one-line summary of each node's merged metadata, every stream with
 * its file, size, event count and time range, the overall time span, and
 * the warnings collected while opening and reading.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli/cli.h"

const cli_option cli_info_options[] = {
	CLI_COMMON_OPTIONS,
	{ NULL, 0, 0, 0 }
};

/* Usage text of `weft info --help`. */
static void print_info_help(void)
{
	printf("usage: weft info [OPTIONS] TRACE\n"
	       "\n"
	       "Describes TRACE: format and layout version, the hierarchy of nodes\n"
	       "(loom > process > thread for ovni) with their metadata, every stream\n"
	       "(file, size, events, first and last time), the time span and the\n"
	       "warnings found. Every stream is read once to count its events (ROSS:\n"
	       "every file is read once, all its streams together).\n");
	cli_print_common_help(stdout, cli_stream_threads_notes);
	printf("\n"
	       "example:\n"
	       "  weft info ovni/\n");
}

/* ---- Metadata summaries --------------------------------------------------- */

static void summarise_object(FILE *out, json_t *obj, const char *prefix);

/* "ovni@1.1.0,nosv@2.7.0" for an object of model name -> version. */
static void summarise_require(FILE *out, const char *name, json_t *obj)
{
	const char *key;
	json_t *val;
	int first = 1;

	fprintf(out, " %s=", name);
	json_object_foreach(obj, key, val) {
		fprintf(out, "%s%s@%s", first ? "" : ",", key,
			json_is_string(val) ? json_string_value(val) : "?");
		first = 0;
	}
}

/* A scalar as key=value; strings with spaces (or empty) are quoted. */
static void summarise_scalar(FILE *out, const char *name, json_t *val)
{
	if (json_is_string(val)) {
		const char *s = json_string_value(val);
		if (s[0] == '\0' || strpbrk(s, " \t\"") != NULL)
			fprintf(out, " %s=\"%s\"", name, s);
		else
			fprintf(out, " %s=%s", name, s);
	} else if (json_is_integer(val)) {
		fprintf(out, " %s=%" JSON_INTEGER_FORMAT, name, json_integer_value(val));
	} else if (json_is_real(val)) {
		fprintf(out, " %s=%g", name, json_real_value(val));
	} else if (json_is_boolean(val)) {
		fprintf(out, " %s=%s", name, json_is_true(val) ? "true" : "false");
	} else {
		fprintf(out, " %s=null", name);
	}
}

/*
 * One member of a metadata object. Lists are summarised by their length
 * ("cpus=4"), `require` as model@version pairs, `mark` by the number of
 * mark types; nested objects are flattened with dotted names.
 */
static void summarise_member(FILE *out, const char *prefix, const char *key, json_t *val)
{
	char name[256];

	snprintf(name, sizeof name, "%s%s", prefix, key);
	if (json_is_object(val)) {
		if (strcmp(key, "require") == 0) {
			summarise_require(out, name, val);
		} else if (strcmp(key, "mark") == 0) {
			fprintf(out, " marks=%zu", json_object_size(val));
		} else {
			char nested[300];
			snprintf(nested, sizeof nested, "%s.", name);
			summarise_object(out, val, nested);
		}
	} else if (json_is_array(val)) {
		fprintf(out, " %s=%zu", strstr(key, "cpus") ? "cpus" : name,
			json_array_size(val));
	} else {
		summarise_scalar(out, name, val);
	}
}

/*
 * Keys left out of the summaries: the commit hash and model version
 * string are long, and the ids and the loom name are already in the node
 * names of the tree.
 */
static int is_redundant_key(const char *key)
{
	static const char *const redundant[] = {
		"commit", "model_version", "part", "tid", "pid", "loom", NULL
	};

	for (int i = 0; redundant[i] != NULL; i++)
		if (strcmp(key, redundant[i]) == 0)
			return 1;
	return 0;
}

/*
 * All members of an object. At the top level the metadata version and
 * the "ovni" wrapper of layout v3 are left out (the keys inside are shown
 * without the "ovni." prefix), and so are the redundant keys.
 */
static void summarise_object(FILE *out, json_t *obj, const char *prefix)
{
	const char *key;
	json_t *val;

	json_object_foreach(obj, key, val) {
		if (prefix[0] == '\0' && strcmp(key, "version") == 0)
			continue;
		if (is_redundant_key(key))
			continue;
		if (prefix[0] == '\0' && strcmp(key, "ovni") == 0 && json_is_object(val)) {
			summarise_object(out, val, "");
			continue;
		}
		summarise_member(out, prefix, key, val);
	}
}

/* The metadata of a node on the rest of its line. */
static void print_metadata_summary(FILE *out, const char *metadata_json)
{
	json_error_t error;
	json_t *root = json_loads(metadata_json, 0, &error);

	if (root == NULL) {
		fprintf(out, " (metadata is not valid JSON: %s)", error.text);
		return;
	}
	if (json_is_object(root))
		summarise_object(out, root, "");
	json_decref(root);
}

/* ---- Hierarchy ---------------------------------------------------------------- */

/* Children of every node as linked lists, so the tree prints in O(nodes). */
typedef struct node_links {
	uint32_t *first_child;  /* per node, WEFT_NO_PARENT when none */
	uint32_t *next_sibling; /* per node, WEFT_NO_PARENT when last */
} node_links;

/* Links each node to its parent, keeping children in table order. */
static int build_node_links(const weft_trace *trace, node_links *links)
{
	size_t n = weft_trace_node_count(trace);
	uint32_t *last_child = malloc((n ? n : 1) * sizeof *last_child);

	links->first_child = malloc((n ? n : 1) * sizeof *links->first_child);
	links->next_sibling = malloc((n ? n : 1) * sizeof *links->next_sibling);
	if (last_child == NULL || links->first_child == NULL || links->next_sibling == NULL) {
		free(last_child);
		return -1;
	}
	for (size_t i = 0; i < n; i++)
		links->first_child[i] = links->next_sibling[i] = last_child[i] = WEFT_NO_PARENT;
	for (size_t i = 0; i < n; i++) {
		uint32_t parent = weft_trace_node(trace, i)->parent;
		if (parent == WEFT_NO_PARENT || parent >= n)
			continue;
		if (last_child[parent] == WEFT_NO_PARENT)
			links->first_child[parent] = (uint32_t)i;
		else
			links->next_sibling[last_child[parent]] = (uint32_t)i;
		last_child[parent] = (uint32_t)i;
	}
	free(last_child);
	return 0;
}

/* One node and, indented below it, its children. */
static void print_node_tree(const weft_trace *trace, const node_links *links,
			    uint32_t id, int depth)
{
	const weft_node *node = weft_trace_node(trace, id);

	printf("  %*s%s  [%s", depth * 2, "", node->name, node->kind);
	if (node->number >= 0)
		printf(" %" PRId64, node->number);
	if (node->stream >= 0)
		printf(", stream %" PRId32, node->stream);
	printf("]");
	print_metadata_summary(stdout, node->metadata_json);
	printf("\n");
	for (uint32_t c = links->first_child[id]; c != WEFT_NO_PARENT;
	     c = links->next_sibling[c])
		print_node_tree(trace, links, c, depth + 1);
}

/* The whole tree, from every root node. */
static void print_hierarchy(const weft_trace *trace)
{
	size_t n = weft_trace_node_count(trace);
	node_links links;

	printf("\nhierarchy:\n");
	if (build_node_links(trace, &links) < 0) {
		printf("  (out of memory)\n");
	} else {
		for (size_t i = 0; i < n; i++)
			if (weft_trace_node(trace, i)->parent == WEFT_NO_PARENT)
				print_node_tree(trace, &links, (uint32_t)i, 0);
	}
	free(links.first_child);
	free(links.next_sibling);
}

/* ---- Streams -------------------------------------------------------------------- */

/* The lines of one stream. */
static void print_stream(const weft_stream_info *si, const weft_stream_stats *st)
{
	char span[64];

	printf("  [%" PRIu32 "] %s\n", si->index, si->path);
	printf("      file: %s (%" PRIu64 " bytes)\n", si->file, si->file_size);
	printf("      events: %" PRIu64, st->events);
	if (st->events > st->untimed) {
		cli_format_duration(span, sizeof span, st->last - st->first);
		printf(", first: %" PRIu64 ", last: %" PRIu64 ", span: %s",
		       st->first, st->last, span);
	}
	if (st->untimed > 0)
		printf(", without a real time: %" PRIu64, st->untimed);
	printf("\n      finished: %s, byte order: %s",
	       si->finished == 1 ? "yes" : si->finished == 0 ? "no" : "unknown",
	       si->big_endian ? "big-endian" : "little-endian");
	if (si->clock_offset != 0)
		printf(", clock offset: %" PRId64 " ns", si->clock_offset);
	printf("\n");
}

/*
 * Reads (weft_trace_stats_all: shared among threads, and ranks under
 * weft-mpi) and prints every stream; adds their counts and times into
 * *total. Returns 0 or the first reading error.
 */
static int print_streams(weft_trace *trace, weft_stream_stats *total)
{
	size_t n = weft_trace_stream_count(trace);
	weft_stream_stats *all = calloc(n ? n : 1, sizeof *all);

	memset(total, 0, sizeof *total);
	if (all == NULL)
		return WEFT_ENOMEM;
	int rc = weft_trace_stats_all(trace, 0, all, NULL);
	cli_feedback_clear(); /* stdout may be the progress line's terminal */
	printf("\nstreams:\n");
	for (size_t i = 0; i < n && rc != WEFT_ENOMEM; i++) {
		const weft_stream_stats *st = &all[i];
		print_stream(weft_trace_stream(trace, i), st);
		if (st->detail[0] != '\0')
			printf("      %s\n", st->detail);
		int timed = total->events > total->untimed;
		total->events += st->events;
		total->untimed += st->untimed;
		if (st->events == st->untimed)
			continue;
		if (!timed || st->first < total->first)
			total->first = st->first;
		if (!timed || st->last > total->last)
			total->last = st->last;
	}
	free(all);
	return rc;
}

/* ---- The command -------------------------------------------------------------------- */

/* Trace-wide metadata (Heph: epochs, packet counts) on one line. */
static void print_trace_metadata(const weft_trace *trace)
{
	json_t *obj = json_loads(weft_trace_metadata_json(trace), 0, NULL);

	if (json_is_object(obj) && json_object_size(obj) > 0) {
		printf("metadata:");
		summarise_object(stdout, obj, "");
		printf("\n");
	}
	json_decref(obj);
}

/* The first lines: what the trace is. */
static void print_summary_head(const weft_trace *trace)
{
	weft_format format = weft_trace_format(trace);
	const char *name = weft_format_name(format);
	uint64_t bytes = 0;
	size_t n = weft_trace_stream_count(trace);

	/* Streams of one-file formats (Heph) share their file: count it once. */
	for (size_t i = 0; i < n; i++)
		if (i == 0 || strcmp(weft_trace_stream(trace, i)->file,
				     weft_trace_stream(trace, i - 1)->file) != 0)
			bytes += weft_trace_stream(trace, i)->file_size;
	printf("trace: %s\n", weft_trace_path(trace));
	printf("format: %s\n", name ? name : "unknown");
	if (weft_trace_layout_version(trace) != 0)
		printf("layout version: %d\n", weft_trace_layout_version(trace));
	print_trace_metadata(trace);
	printf("streams: %zu (%" PRIu64 " bytes)\n", n, bytes);
}

/* Totals over all streams. */
static void print_totals(const weft_stream_stats *total)
{
	char span[64];

	printf("\nevents: %" PRIu64 "\n", total->events);
	if (total->events > total->untimed) {
		cli_format_duration(span, sizeof span, total->last - total->first);
		printf("time: %" PRIu64 " .. %" PRIu64 " (span %" PRIu64 " ns, %s)\n",
		       total->first, total->last, total->last - total->first, span);
	}
}

/*
 * The diagnostics of opening and reading, and the count of events left
 * out of the time span; or "none". 1 when one of the diagnostics is an
 * error (some data could not be read: the figures miss it).
 */
static int print_warnings(const weft_trace *trace, const weft_stream_stats *total)
{
	size_t n = weft_trace_diag_count(trace);
	int lost = 0;

	printf("\nwarnings: %s\n", n == 0 && total->untimed == 0 ? "none" : "");
	if (total->untimed > 0)
		printf("  warning: %" PRIu64 " event(s) without a real time (ROSS analysis "
		       "model samples: ROSS records none) left out of the time span\n",
		       total->untimed);
	for (size_t i = 0; i < n; i++) {
		const weft_diag *d = weft_trace_diag(trace, i);
		printf("  ");
		cli_print_diag(stdout, d, weft_trace_path(trace));
		lost |= d->severity == WEFT_SEV_ERROR;
	}
	return lost;
}

/* Opens the trace and prints every section of the description. */
static int run_info(const cli_common *common)
{
	weft_trace *trace;
	weft_stream_stats total;
	int exit_code = cli_open_trace(common, "info", &trace);

	if (exit_code != CLI_EXIT_OK)
		return exit_code;
	print_summary_head(trace);
	print_hierarchy(trace);
	int rc = print_streams(trace, &total);
	print_totals(&total);
	int lost = print_warnings(trace, &total);
	fflush(stdout);
	if (rc < 0)
		exit_code = cli_library_error("info", "reading the events failed", rc);
	else if (lost)
		exit_code = CLI_EXIT_PROBLEMS;
	cli_close_trace(trace);
	return exit_code;
}

/* Entry of `weft info`: options, then the description. */
int cli_cmd_info(int argc, char **argv)
{
	cli_parser parser;
	cli_common common;
	const char *value;
	int id;

	cli_common_init(&common);
	cli_parser_init(&parser, "info", argc, argv, cli_info_options);
	while ((id = cli_next_option(&parser, &value)) != 0) {
		if (id < 0)
			return CLI_EXIT_FAILURE;
		if (id == CLI_OPT_HELP) {
			print_info_help();
			return CLI_EXIT_OK;
		}
		if (cli_common_option(&common, "info", id, value) != 1)
			return CLI_EXIT_FAILURE;
	}
	if (cli_take_trace_path(&common, &parser) < 0)
		return CLI_EXIT_FAILURE;
	return run_info(&common);
}
