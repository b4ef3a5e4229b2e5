/* SPDX-License-Identifier: MIT */
/*
 * cli/cmd_check.c - `weft check`: reads a whole trace and lists what is
 * wrong with it, one "<file>:<offset>: <severity>: <message>" per
 * problem; exit 0 when clean, 1 when problems were found.
 *
 * What is looked at: every diagnostic the library records while opening
 * and reading (missing or conflicting metadata, unfinished streams,
 * truncated or malformed events, byte order, ...), then the problems
 * weft_trace_check() finds (weft/check.h: payloads, clocks, nesting, and
 * what each format adds). Notes (layouts that differ from the signature
 * table but are kept whole) count only with --strict.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

enum check_option_id {
	OPT_SORTED = 100,
	OPT_STRICT,
	OPT_MODELS,
	OPT_ALL_MODELS
};

const cli_option cli_check_options[] = {
	CLI_COMMON_OPTIONS,
	{ "sorted", 0, 0, OPT_SORTED },
	{ "strict", 0, 0, OPT_STRICT },
	{ "models", 0, 0, OPT_MODELS },
	{ "all-models", 0, 0, OPT_ALL_MODELS },
	{ NULL, 0, 0, 0 }
};

/* What the options ask for. */
typedef struct check_settings {
	int want_sorted; /* --sorted */
	int strict;      /* --strict: notes are problems too */
	int models;      /* --models: run the emulation */
	int all_models;  /* --all-models: every model */
} check_settings;

/* Usage text of `weft check --help`. */
static void print_check_help(void)
{
	printf("usage: weft check [OPTIONS] TRACE\n"
	       "\n"
	       "Reads every event of TRACE and prints one line per problem:\n"
	       "  <file>:<offset>: <severity>: <message>\n"
	       "(file relative to the trace root; no offset when the problem is not at\n"
	       "one place). Exit status 0 when the trace is clean, 1 otherwise. Notes\n"
	       "(severity \"note\": layouts real runtimes write that differ from the ovni\n"
	       "1.14 signature table, such as longer payloads, fully kept) are listed\n"
	       "but only count with --strict.\n"
	       "\n"
	       "Checks: metadata (missing, conflicting, unfinished streams, missing\n"
	       "loom_cpus), stream headers and byte order, truncated or malformed events,\n"
	       "payloads that do not match their event's signature, clocks going back\n"
	       "outside unordered regions, spans nested deeper than viewers keep (512\n"
	       "levels); ovni: what ovniemu refuses before emulating (first clocks of the\n"
	       "streams more than 1 h apart without clock offsets, CPUs of a loom with a\n"
	       "duplicated index or phyid).\n"
	       "\n"
	       "With --models (ovni), the runtime models are emulated as ovniemu -l\n"
	       "emulates them (writing nothing) and what they refuse is listed too: the\n"
	       "rule an event breaks (a task executed twice, a thread running on two\n"
	       "CPUs, an event of a model the thread did not require) at the event's\n"
	       "stream file and offset, what is left open at the end (a subsystem stack,\n"
	       "a thread not dead) at the thread's stream, a trace refused at load (a\n"
	       "model version ovniemu 1.14 does not emulate, a loom without CPUs).\n"
	       "ovniemu's warnings (a long flush, an old event) are notes.\n"
	       "\n"
	       "options:\n"
	       "  --sorted             also require sorted unordered regions (as ovniemu)\n"
	       "  --strict             count notes as problems\n"
	       "  --models             ovni: also emulate the runtime models (ovniemu -l)\n"
	       "  --all-models         with --models: every model, required or not\n"
	       "                       (ovniemu -a; for traces of libovni before 1.5)\n");
	cli_print_common_help(stdout, cli_stream_threads_notes);
	printf("\n"
	       "example:\n"
	       "  weft check --sorted ovni/\n"
	       "  weft check --models ovni/\n");
}

/*
 * Diagnostics of the library first, then the problems found here.
 * Returns how many count as problems (notes only with --strict); *notes
 * gets the number of notes.
 */
static size_t print_problems(const weft_trace *trace, const weft_check_report *report,
			     int strict, size_t *notes)
{
	size_t n = weft_trace_diag_count(trace);
	const char *root = weft_trace_path(trace);

	*notes = 0;
	for (size_t i = 0; i < n; i++) {
		const weft_diag *d = weft_trace_diag(trace, i);
		*notes += d->severity == WEFT_SEV_NOTE;
		cli_print_diag(stdout, d, root);
	}
	size_t m = weft_check_report_count(report);
	for (size_t i = 0; i < m; i++) {
		const weft_diag *d = weft_check_report_problem(report, i);
		*notes += d->severity == WEFT_SEV_NOTE;
		cli_print_diag(stdout, d, root);
	}
	return n + m - (strict ? 0 : *notes);
}

/*
 * An open that failed on malformed data is a finding, not a usage error:
 * the library message "<file>: byte <offset>: <text>" becomes a problem
 * line "<file>:<offset>: error: <text>". A path that is no trace (missing,
 * of no format), that cannot be read (a failed system call) or a lack of
 * memory is a failure to open, as in every command.
 */
static int report_open_failure(const char *path, int status)
{
	const char *msg = weft_last_error();
	const char *byte = strstr(msg, ": byte ");
	uint64_t offset;
	char rest[1024];

	if (status == WEFT_ENOTFOUND || status == WEFT_EIO || status == WEFT_EINVAL ||
	    status == WEFT_ENOMEM) {
		fprintf(stderr, "weft check: cannot open '%s': %s\n", path,
			cli_message_about(path, status));
		return CLI_EXIT_FAILURE;
	}
	if (byte != NULL && sscanf(byte, ": byte %" SCNu64 ": %1023[^\n]", &offset, rest) == 2)
		printf("%.*s:%" PRIu64 ": error: %s\n", (int)(byte - msg), msg, offset, rest);
	else
		printf("%s: error: %s\n", path, msg[0] ? msg : weft_strerror(status));
	return CLI_EXIT_PROBLEMS;
}

/*
 * Opens in stored order, checks (the library reads every stream), prints
 * the problems and a summary line; the exit code says whether anything
 * was found.
 */
static int run_check(cli_common *common, const check_settings *set)
{
	weft_check_options options;
	weft_check_report *report;
	weft_trace *trace;

	common->open.stored_order = 1; /* clocks are checked as stored */
	weft_open_options open = common->open;
	cli_feedback_options(common, "check", &open);
	int rc = weft_trace_open(common->trace_path, &open, &trace);
	if (rc < 0) {
		cli_feedback_clear();
		return report_open_failure(common->trace_path, rc);
	}
	cli_feedback_opened(trace);
	weft_check_options_init(&options);
	options.sorted = set->want_sorted;
	options.models = set->models;
	options.all_models = set->all_models;
	rc = weft_trace_check(trace, &options, &report);
	if (rc < 0) {
		cli_close_trace(trace);
		return cli_library_error("check", common->trace_path, rc);
	}
	size_t streams = weft_trace_stream_count(trace);
	uint64_t events = weft_check_report_events(report);
	size_t notes;
	size_t found = print_problems(trace, report, set->strict, &notes);
	if (weft_check_report_incomplete(report))
		fprintf(stderr, "weft check: out of memory: some problems are not listed\n");
	const char *stream_s = streams == 1 ? "" : "s", *event_s = events == 1 ? "" : "s";
	if (found == 0 && notes > 0)
		printf("ok: %zu stream%s, %" PRIu64 " event%s, no problems (%zu note%s, "
		       "counted with --strict)\n", streams, stream_s, events, event_s, notes,
		       notes == 1 ? "" : "s");
	else if (found == 0)
		printf("ok: %zu stream%s, %" PRIu64 " event%s, no problems\n", streams, stream_s,
		       events, event_s);
	else
		printf("%zu problem%s in %zu stream%s, %" PRIu64 " event%s\n", found,
		       found == 1 ? "" : "s", streams, stream_s, events, event_s);
	weft_check_report_free(report);
	cli_close_trace(trace);
	return found == 0 ? CLI_EXIT_OK : CLI_EXIT_PROBLEMS;
}

/* Entry of `weft check`: options, then the check. */
int cli_cmd_check(int argc, char **argv)
{
	cli_parser parser;
	cli_common common;
	check_settings set = { 0, 0, 0, 0 };
	const char *value;
	int id;

	cli_common_init(&common);
	cli_parser_init(&parser, "check", argc, argv, cli_check_options);
	while ((id = cli_next_option(&parser, &value)) != 0) {
		if (id < 0)
			return CLI_EXIT_FAILURE;
		if (id == CLI_OPT_HELP) {
			print_check_help();
			return CLI_EXIT_OK;
		}
		if (id == OPT_SORTED)
			set.want_sorted = 1;
		else if (id == OPT_STRICT)
			set.strict = 1;
		else if (id == OPT_MODELS)
			set.models = 1;
		else if (id == OPT_ALL_MODELS)
			set.all_models = 1;
		else if (cli_common_option(&common, "check", id, value) != 1)
			return CLI_EXIT_FAILURE;
	}
	if (set.all_models && !set.models)
		return cli_usage_error("check", "--all-models goes with --models");
	if (cli_take_trace_path(&common, &parser) < 0)
		return CLI_EXIT_FAILURE;
	return run_check(&common, &set);
}
