/* SPDX-License-Identifier: MIT */
/*
 * cli/common.c - helpers every subcommand uses: opening the trace with a
 * clear message on failure, reporting library errors, printing
 * diagnostics in the "<file>:<offset>: <severity>: <message>" form.
 */
#include <inttypes.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

/* The library's detailed message, or the generic text of the status. */
static const char *error_text(int status)
{
	const char *msg = weft_last_error();

	if (msg != NULL && msg[0] != '\0')
		return msg;
	return weft_strerror(status);
}

/*
 * The library's message about `path` without its leading "<path>: ",
 * which the command's own line already shows.
 */
const char *cli_message_about(const char *path, int status)
{
	const char *msg = error_text(status);
	size_t n = strlen(path);

	if (strncmp(msg, path, n) == 0 && strncmp(msg + n, ": ", 2) == 0)
		return msg + n + 2;
	return msg;
}

/* Opens c->trace_path; on failure explains why and returns exit code 2. */
int cli_open_trace(const cli_common *c, const char *command, weft_trace **out)
{
	weft_open_options o = c->open;
	cli_feedback_options(c, command, &o);
	int rc = weft_trace_open(c->trace_path, &o, out);

	if (rc < 0) {
		cli_feedback_clear();
		fprintf(stderr, "weft %s: cannot open '%s': %s\n", command,
			c->trace_path, cli_message_about(c->trace_path, rc));
		*out = NULL;
		return CLI_EXIT_FAILURE;
	}
	cli_feedback_opened(*out);
	return CLI_EXIT_OK;
}

/* "weft CMD: WHAT: <library message>" for a failed call after opening. */
int cli_library_error(const char *command, const char *what, int status)
{
	cli_feedback_clear();
	fprintf(stderr, "weft %s: %s: %s\n", command, what, error_text(status));
	return CLI_EXIT_FAILURE;
}

/* "note", "warning" or "error", as printed in problem lines. */
const char *cli_severity_name(int severity)
{
	return weft_severity_name(severity);
}

/*
 * One diagnostic per line. The file is relative to the trace root; when
 * the diagnostic has none, `default_file` (the trace path) is used.
 */
void cli_print_diag(FILE *out, const weft_diag *diag, const char *default_file)
{
	char *line = weft_diag_line(diag, default_file);

	fprintf(out, "%s\n", line != NULL ? line : diag->message);
	free(line);
}

int cli_print_diags_from(const weft_trace *trace, const char *command, size_t from)
{
	size_t n = weft_trace_diag_count(trace);
	int lost = 0;
	if (from < n)
		cli_feedback_clear();
	for (size_t i = from; i < n; i++) {
		const weft_diag *d = weft_trace_diag(trace, i);
		fprintf(stderr, "weft %s: ", command);
		cli_print_diag(stderr, d, weft_trace_path(trace));
		lost |= d->severity == WEFT_SEV_ERROR;
	}
	return lost;
}

/* A duration in the largest unit that keeps it above 1. */
void cli_format_duration(char *buf, size_t size, uint64_t ns)
{
	if (ns < 1000)
		snprintf(buf, size, "%" PRIu64 " ns", ns);
	else if (ns < 1000000)
		snprintf(buf, size, "%.3f us", (double)ns / 1e3);
	else if (ns < 1000000000)
		snprintf(buf, size, "%.3f ms", (double)ns / 1e6);
	else
		snprintf(buf, size, "%.3f s", (double)ns / 1e9);
}

/*
 * "auto<auto_note>, ovni, heph, ...": the names of the formats, from the
 * library's list, for help texts and messages (a static buffer).
 */
const char *cli_format_list(const char *auto_note)
{
	static char text[256];
	size_t n = (size_t)snprintf(text, sizeof text, "auto%s", auto_note);

	for (size_t i = 0; i < weft_format_count() && n < sizeof text; i++)
		n += (size_t)snprintf(text + n, sizeof text - n, ", %s",
				      weft_format_name(weft_format_at(i)));
	return text;
}

/* How many streams of `trace` the glob matches. */
static size_t streams_matching(const weft_trace *trace, const char *pattern)
{
	size_t n = 0;
	for (size_t i = 0; i < weft_trace_stream_count(trace); i++)
		n += fnmatch(pattern, weft_trace_stream(trace, i)->path, 0) == 0;
	return n;
}

/* "a, b, c and 12 more": the first streams' paths, on stderr. */
static void print_some_streams(const weft_trace *trace)
{
	size_t n = weft_trace_stream_count(trace), shown = n < 5 ? n : 5;
	for (size_t i = 0; i < shown; i++)
		fprintf(stderr, "%s%s", i ? ", " : "", weft_trace_stream(trace, i)->path);
	if (n > shown)
		fprintf(stderr, " and %zu more", n - shown);
}

/* "OHx (1964), OB. (2000), ...": the most frequent codes, on stderr. */
static void print_some_codes(weft_trace *trace)
{
	weft_counts *counts;
	weft_count_row rows[8];
	if (weft_counts_compute(trace, NULL, &counts) < 0)
		return;
	size_t n = weft_counts_rows(counts, WEFT_COUNTS_ALL, rows, 8);
	for (size_t i = 0; i < n && i < 8; i++)
		fprintf(stderr, "%s%s (%" PRIu64 ")", i ? ", " : "", rows[i].code, rows[i].count);
	if (n > 8)
		fprintf(stderr, " and %zu more", n - 8);
	weft_counts_free(counts);
}

int cli_stream_pattern_unmatched(const weft_trace *trace, const char *command,
				 const char *pattern)
{
	if (pattern == NULL || streams_matching(trace, pattern) > 0)
		return 0;
	fprintf(stderr, "weft %s: warning: no stream matches --stream '%s'; the streams are: ",
		command, pattern);
	print_some_streams(trace);
	fputc('\n', stderr);
	return 1;
}

/*
 * A time window that selected nothing: says where the trace starts, since
 * the usual cause is a time meant from the start ("10ms") given as a
 * clock value. Returns 1.
 */
static int report_empty_window(weft_trace *trace, const char *command,
			       const weft_filter *filter)
{
	uint64_t start;
	char to[32] = "the end";

	if (filter->to != 0)
		snprintf(to, sizeof to, "%" PRIu64 " ns", filter->to);
	fprintf(stderr, "weft %s: warning: no event%s%s%s from %" PRIu64 " ns to %s",
		command, filter->code_pattern ? " matches --event '" : "",
		filter->code_pattern ? filter->code_pattern : "",
		filter->code_pattern ? "'" : "", filter->from, to);
	if (weft_trace_start_time(trace, &start) == 1)
		fprintf(stderr, "; the trace starts at %" PRIu64 " ns (times are the trace's "
			"clock; +10ms is 10 ms after its start)", start);
	fputc('\n', stderr);
	return 1;
}

int cli_report_unmatched(weft_trace *trace, const char *command, const weft_filter *filter,
			 uint64_t delivered)
{
	if (filter == NULL || delivered > 0)
		return 0;
	if (cli_stream_pattern_unmatched(trace, command, filter->stream_pattern))
		return 1;
	if (filter->from != 0 || filter->to != 0)
		return report_empty_window(trace, command, filter);
	if (filter->code_pattern == NULL)
		return 0;
	fprintf(stderr, "weft %s: warning: no event matches --event '%s'%s; the codes are: ",
		command, filter->code_pattern,
		filter->stream_pattern ? " in the streams chosen" : "");
	print_some_codes(trace);
	fputc('\n', stderr);
	return 1;
}
