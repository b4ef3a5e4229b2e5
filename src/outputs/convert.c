/* SPDX-License-Identifier: MIT */
/*
 * outputs/convert.c - weft_convert() (weft/convert.h): finds the output in
 * the registry, checks the options against what it can do, and runs it;
 * the report's lines (what `weft convert` prints) are built here.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "outputs/convert.h"

/* ---- The report ------------------------------------------------------------- */

void weft__convert_say(weft_convert_report *r, const char *fmt, ...)
{
	va_list ap;
	char *line = NULL;

	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || (line = malloc((size_t)n + 1)) == NULL)
		return;
	va_start(ap, fmt);
	vsnprintf(line, (size_t)n + 1, fmt, ap);
	va_end(ap);
	char **grown = realloc(r->messages, (r->message_count + 1) * sizeof *grown);
	if (grown == NULL) {
		free(line);
		return;
	}
	r->messages = grown;
	r->messages[r->message_count++] = line;
}

int weft__convert_fail(weft_convert_report *r, const char *what, int status)
{
	const char *msg = weft_last_error();

	weft__convert_say(r, "%s: %s", what,
			  msg != NULL && msg[0] != '\0' ? msg : weft_strerror(status));
	return status;
}

int weft__convert_diags(weft_convert_report *r, const weft_trace *trace)
{
	size_t n = weft_trace_diag_count(trace);
	int lost = 0;

	for (size_t i = 0; i < n; i++) {
		const weft_diag *d = weft_trace_diag(trace, i);
		char *line = weft_diag_line(d, weft_trace_path(trace));
		if (line != NULL)
			weft__convert_say(r, "%s", line);
		free(line);
		lost |= d->severity == WEFT_SEV_ERROR;
	}
	return lost;
}

void weft_convert_report_free(weft_convert_report *r)
{
	if (r == NULL)
		return;
	for (size_t i = 0; i < r->message_count; i++)
		free(r->messages[i]);
	free(r->messages);
	r->messages = NULL;
	r->message_count = 0;
}

/* ---- The call ------------------------------------------------------------------ */

void weft_convert_options_init(weft_convert_options *o)
{
	memset(o, 0, sizeof *o);
}

/* A refused option: the message as the report's line and the last error. */
static int refuse(weft_convert_report *r, const char *fmt, const char *names)
{
	weft__error(WEFT_EINVAL, NULL, WEFT_NO_OFFSET, fmt, names);
	weft__convert_say(r, "%s", weft_last_error());
	return WEFT_EINVAL;
}

/* The options an output cannot take, before anything is opened. */
static int check_options(const weft_convert_options *o, const weft_output_info *out,
			 weft_convert_report *r)
{
	char names[128];
	const weft_filter *f = &o->filter;

	if (o->path == NULL)
		return refuse(r, "no output path%s", "");
	if (f->to != 0 && f->to < f->from) {
		weft__error(WEFT_EINVAL, NULL, WEFT_NO_OFFSET, "the time window ends (%" PRIu64
			    " ns) before it starts (%" PRIu64 " ns)", f->to, f->from);
		weft__convert_say(r, "%s", weft_last_error());
		return WEFT_EINVAL;
	}
	if (o->heph_compat && !(out->flags & WEFT_OUTPUT_HEPH_COMPAT))
		return refuse(r, "heph_compat is for the outputs %s",
			      weft_output_names(WEFT_OUTPUT_HEPH_COMPAT, names, sizeof names));
	weft_output_names(WEFT_OUTPUT_VIEWER, names, sizeof names);
	if (o->virtual_unit_ns > 0 && (o->heph_compat || !(out->flags & WEFT_OUTPUT_VIEWER)))
		return refuse(r, "virtual time is for the viewer outputs (%s)", names);
	if (o->allow_loss && (o->heph_compat || !(out->flags & WEFT_OUTPUT_VIEWER)))
		return refuse(r, "allow_loss is for the viewer outputs (%s)", names);
	return 0;
}

int weft_convert(weft_trace *trace, const weft_convert_options *options,
		 weft_convert_report *report)
{
	char names[128];
	const weft_output_info *out;

	memset(report, 0, sizeof *report);
	if (trace == NULL || options == NULL)
		return weft__error(WEFT_EINVAL, NULL, WEFT_NO_OFFSET,
				   "weft_convert needs a trace and options");
	out = options->output != NULL ? weft_output_find(options->output)
				      : weft_output_for_path(options->path);
	if (out == NULL) {
		weft__error(WEFT_EINVAL, NULL, WEFT_NO_OFFSET, "unknown output '%s' (%s)",
			    options->output, weft_output_names(0, names, sizeof names));
		weft__convert_say(report, "%s", weft_last_error());
		return WEFT_EINVAL;
	}
	report->output = out->name;
	int rc = check_options(options, out, report);
	return rc < 0 ? rc : out->run(trace, options, report);
}
