/* SPDX-License-Identifier: MIT */
/*
 * cli/cmd_sort.c - `weft sort`: sorts the unordered regions (OU[ .. OU])
 * of every stream of an ovni trace in place, like ovnisort but through a
 * temporary file and a rename, so a crash never leaves a half-written
 * stream. With --check nothing is written.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

enum sort_option_id {
	OPT_CHECK = 100
};

const cli_option cli_sort_options[] = {
	CLI_COMMON_OPTIONS,
	{ "check", 'c', 0, OPT_CHECK },
	{ NULL, 0, 0, 0 }
};

/* Usage text of `weft sort --help`. */
static void print_sort_help(void)
{
	printf("usage: weft sort [--check] TRACE\n"
	       "\n"
	       "Sorts the events of the unordered regions (OU[ .. OU]) of every stream\n"
	       "of the ovni trace TRACE in place, in the order ovnisort writes. Each\n"
	       "stream that needs it is written sorted to a temporary file next to it,\n"
	       "synced, then renamed over it; a stream with problems (one ovnisort\n"
	       "cannot sort, clocks that still go back) is left as it is.\n"
	       "\n"
	       "options:\n"
	       "  -c, --check   only tell what would change; exit 1 when a stream\n"
	       "                is not sorted\n");
	cli_print_common_help(stdout, cli_stream_threads_notes);
	printf("\n"
	       "example:\n"
	       "  weft sort --check ovni/ && echo sorted\n");
}

/* The report, one "name: value" per line. */
static void print_sort_report(const weft_ovni_sort_report *r, int check_only)
{
	printf("streams: %" PRIu64 "\n", r->streams);
	printf("unordered regions: %" PRIu64 "\n", r->regions);
	printf("unsorted streams: %" PRIu64 "\n", r->unsorted_streams);
	printf("events out of place: %" PRIu64 "\n", r->moved_events);
	if (!check_only)
		printf("streams rewritten: %" PRIu64 "\n", r->rewritten_streams);
}

/* The names of the formats that can be sorted: "ovni" (a static buffer). */
static const char *sortable_formats(void)
{
	static char text[128];
	size_t n = 0;

	text[0] = '\0';
	for (size_t i = 0; i < weft_format_count() && n < sizeof text; i++)
		if (weft_format_sortable(weft_format_at(i)))
			n += (size_t)snprintf(text + n, sizeof text - n, "%s%s", n ? "/" : "",
					      weft_format_name(weft_format_at(i)));
	return text;
}

/* Runs the sort (or the check) and maps the outcome to an exit code. */
static int run_sort(const cli_common *common, int check_only)
{
	const char *path = common->trace_path;
	weft_ovni_sort_report report;
	weft_open_options open = common->open;
	int rc;

	memset(&report, 0, sizeof report);
	cli_feedback_options(common, "sort", &open);
	rc = weft_ovni_sort_with(path, &open, check_only, &report);
	cli_close_trace(NULL); /* (the library's, closed already) */
	if (rc < 0) {
		fprintf(stderr, "weft sort: cannot sort '%s': %s\n", path,
			cli_message_about(path, rc));
		return CLI_EXIT_FAILURE;
	}
	print_sort_report(&report, check_only);
	if (check_only && report.unsorted_streams > 0)
		return CLI_EXIT_PROBLEMS;
	return CLI_EXIT_OK;
}

/* Entry of `weft sort`: options, then the sort or the check. */
int cli_cmd_sort(int argc, char **argv)
{
	cli_parser parser;
	cli_common common;
	const char *value;
	int check_only = 0;
	int id;

	cli_common_init(&common);
	cli_parser_init(&parser, "sort", argc, argv, cli_sort_options);
	while ((id = cli_next_option(&parser, &value)) != 0) {
		if (id < 0)
			return CLI_EXIT_FAILURE;
		if (id == CLI_OPT_HELP) {
			print_sort_help();
			return CLI_EXIT_OK;
		}
		if (id == OPT_CHECK) {
			check_only = 1;
		} else {
			int handled = cli_common_option(&common, "sort", id, value);
			if (handled != 1)
				return CLI_EXIT_FAILURE;
		}
	}
	if (cli_take_trace_path(&common, &parser) < 0)
		return CLI_EXIT_FAILURE;
	if (!weft_format_sortable(common.open.format))
		return cli_usage_error("sort", "only %s traces have unordered regions",
				       sortable_formats());
	int detected = weft_format_detect(common.trace_path, &common.open);
	if (detected > 0 && !weft_format_sortable((weft_format)detected))
		return cli_usage_error("sort", "'%s' is a %s trace; weft sort sorts %s traces "
				       "only (their unordered regions)", common.trace_path,
				       weft_format_name((weft_format)detected), sortable_formats());
	return run_sort(&common, check_only);
}
