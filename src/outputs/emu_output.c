/* SPDX-License-Identifier: MIT */
/*
 * outputs/emu_output.c - what the outputs of an emulated ovni trace share
 * (see emu_output.h): option checks, report lines, the time window.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "outputs/emu_output.h"

int weft__emu_output_check(weft_output_writer *w, const char *path_why)
{
	const weft_convert_options *o = &w->options;
	const char *why = path_why;
	if (o->filter.stream_pattern != NULL || o->filter.code_pattern != NULL)
		why = "the emulation replays every event of every thread: no stream or event "
		      "selection (a time window is fine; --raw converts a selection without "
		      "emulating)";
	else if (o->virtual_unit_ns > 0)
		why = "an ovni trace has no virtual time";
	if (why == NULL)
		return 0;
	weft__convert_say(w->job.report, "%s", why);
	return weft__error(WEFT_EINVAL, NULL, WEFT_NO_OFFSET, "%s", why);
}

void weft__emu_output_say_models(weft_output_writer *w, const weft__emu *e)
{
	char list[256] = "";
	size_t len = 0;
	for (size_t i = 0; i < weft__emu_model_count(e); i++)
		len += (size_t)snprintf(list + len, len < sizeof list ? sizeof list - len : 0,
					"%s%s", i ? ", " : "", weft__emu_model_name(e, i));
	weft__convert_say(w->job.report, "note: emulating the models of ovniemu 1.14: %s "
			  "(--raw: the generic mapping)", list);
}

int weft__emu_output_say_diags(weft_output_writer *w, const weft__emu *e)
{
	int errors = 0;
	for (size_t i = 0; i < weft__emu_diag_count(e); i++) {
		const weft__emu_diag *d = weft__emu_diag_get(e, i);
		char *line = weft_diag_line(&d->d, weft_trace_path(w->job.trace));
		if (line != NULL && d->count > 1)
			weft__convert_say(w->job.report, "%s (%llu times)", line,
					  (unsigned long long)d->count);
		else if (line != NULL)
			weft__convert_say(w->job.report, "%s", line);
		free(line);
		errors |= d->d.severity == WEFT_SEV_ERROR;
	}
	return errors;
}

void weft__emu_output_read_failed(weft_output_writer *w, uint32_t stream, const char *message)
{
	(void)stream;
	weft__convert_say(w->job.report, "error: %s", message);
	w->job.report->data_lost = 1;
}

int weft__emu_output_end(weft_output_writer *w, weft__emu *e, const weft__emu_window *win,
			 int failed, const char *hint, int *refused)
{
	weft_convert_report *r = w->job.report;
	weft__emu_finish(e, !win->cut && !failed && !r->data_lost);
	*refused = weft__emu_output_say_diags(w, e);
	r->events = weft__emu_event_count(e);
	weft__trace_diags_sort(w->job.trace, win->diag_from);
	weft__convert_diags(r, w->job.trace);
	if (failed)
		return WEFT_EIO;
	if (*refused && !w->options.allow_loss) {
		weft__convert_say(r, "the emulation refused the trace: nothing written (%s; "
				  "--raw converts without emulating)", hint);
		return WEFT_EFORMAT;
	}
	return 0;
}

void weft__emu_window_init(weft__emu_window *win, const weft_output_writer *w)
{
	memset(win, 0, sizeof *win);
	win->from = w->options.filter.from;
	win->to = w->options.filter.to;
	win->windowed = win->from != 0 || win->to != 0;
	win->diag_from = weft_trace_diag_count(w->job.trace);
	win->opened = !win->windowed;
}

int weft__emu_window_open(weft__emu_window *win, weft__emu *e)
{
	win->opened = 1;
	if (weft__emu_event_count(e) == 0)
		return 0;
	win->base = win->from - weft__emu_first_time(e);
	win->snapshot = 1;
	int rc = weft__emu_snapshot(e, win->base);
	win->snapshot = 0;
	return rc;
}

int weft__emu_window_step(weft__emu_window *win, weft__emu *e, const weft_event *ev)
{
	if (win->to != 0 && ev->time > win->to) {
		win->cut = 1;
		return 1;
	}
	if (win->opened || ev->time < win->from)
		return 0;
	int rc = weft__emu_window_open(win, e);
	return rc < 0 ? rc : 2;
}
