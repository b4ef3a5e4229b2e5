/* SPDX-License-Identifier: MIT */
/*
 * outputs/writer.c - the writer of an output (weft/writer.h), what every
 * output shares: choosing the output and checking the options against
 * what it can do (as weft_convert() does), copying the options, the
 * streams the stream glob selects, the checks of each event (its stream,
 * the writer's state), and the report. What each output does with the
 * events is behind its weft__writer_ops (outputs/writer.h).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "emu/emu.h"
#include "outputs/writer.h"

/* ---- Options --------------------------------------------------------------------- */

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

/*
 * Whether the output shows the trace's emulated models (options->emulate):
 * AUTO for an ovni trace whose threads declare their models and an output
 * that can; ON only where it can (WEFT_EINVAL otherwise).
 */
static int resolve_emulation(weft_trace *trace, const weft_convert_options *o,
			     const weft_output_info *out, weft_convert_report *r, int *emulated)
{
	char names[128];
	int can = (out->flags & WEFT_OUTPUT_EMULATE) && weft__output_emu_ops(out) != NULL;
	weft_output_names(WEFT_OUTPUT_EMULATE, names, sizeof names);
	*emulated = 0;
	if (o->emulate == WEFT_EMULATE_OFF) {
		if (o->all_models || o->breakdown || (o->ovni_cfg != NULL && *o->ovni_cfg))
			return refuse(r, "all_models, breakdown and ovni_cfg are for the "
				      "emulation of ovni models%s", "");
		return 0;
	}
	if (o->emulate == WEFT_EMULATE_ON) {
		if (!can)
			return refuse(r, "the emulation of ovni models is for the outputs %s",
				      names);
		if (weft_trace_format(trace) != WEFT_FORMAT_OVNI)
			return refuse(r, "only ovni traces can be emulated (the models of their "
				      "runtimes)%s", "");
		*emulated = 1;
		return 0;
	}
	if (o->emulate != WEFT_EMULATE_AUTO)
		return refuse(r, "unknown emulate mode%s", "");
	*emulated = can && weft_trace_format(trace) == WEFT_FORMAT_OVNI &&
		    (o->all_models || weft__emu_declares_models(trace));
	if (o->all_models && !*emulated)
		return refuse(r, "all_models is for the emulation of ovni models (outputs %s)",
			      names);
	if (o->ovni_cfg != NULL && *o->ovni_cfg && !*emulated)
		return refuse(r, "ovni_cfg is for the emulation of ovni models (-t paraver)%s",
			      "");
	return 0;
}

/* The output the options name (or their path chooses); NULL after saying why. */
static const weft_output_info *choose_output(const weft_convert_options *o,
					     weft_convert_report *r)
{
	char names[128];
	const weft_output_info *out = o->output != NULL ? weft_output_find(o->output)
							: weft_output_for_path(o->path);

	if (out == NULL) {
		weft__error(WEFT_EINVAL, NULL, WEFT_NO_OFFSET, "unknown output '%s' (%s)",
			    o->output, weft_output_names(0, names, sizeof names));
		weft__convert_say(r, "%s", weft_last_error());
	}
	return out;
}

/* A copy of `s` (NULL stays NULL) into *dst; -1 when out of memory. */
static int copy_string(const char **dst, const char *s)
{
	*dst = s != NULL ? strdup(s) : NULL;
	return s != NULL && *dst == NULL ? -1 : 0;
}

/*
 * The writer's copy of the options (strings included, so that the caller
 * may free theirs) and the per-stream tables: which streams the stream
 * glob selects (fnmatch, no flags, as the cursors match it).
 */
static int copy_options(weft_output_writer *w, weft_trace *trace,
			const weft_convert_options *o)
{
	w->options = *o;
	w->options.output = w->info->name;
	if (copy_string(&w->options.path, o->path) < 0 ||
	    copy_string(&w->options.filter.stream_pattern, o->filter.stream_pattern) < 0 ||
	    copy_string(&w->options.filter.code_pattern, o->filter.code_pattern) < 0 ||
	    copy_string(&w->options.ovni_cfg, o->ovni_cfg) < 0)
		return -1;
	w->filter = w->options.filter;
	w->stream_count = (uint32_t)weft_trace_stream_count(trace);
	w->selected = calloc(w->stream_count ? w->stream_count : 1, 1);
	w->ended = calloc(w->stream_count ? w->stream_count : 1, 1);
	if (w->selected == NULL || w->ended == NULL)
		return -1;
	weft__streams_matching(trace, w->filter.stream_pattern, w->selected);
	return 0;
}

/* Frees what writer.c holds (not the output's state). */
static void writer_release(weft_output_writer *w)
{
	free((char *)w->options.path);
	free((char *)w->options.filter.stream_pattern);
	free((char *)w->options.filter.code_pattern);
	free((char *)w->options.ovni_cfg);
	free(w->selected);
	free(w->ended);
	weft_convert_report_free(&w->own);
	free(w);
}

/* ---- Life ------------------------------------------------------------------------ */

/*
 * Makes the writer: the output chosen (options->output, else the path's
 * suffix) and the options checked against it, the copy
 * of the options, then the output's create. Its lines go to `report`
 * (NULL: the writer's own). 0, or < 0 with nothing left behind.
 */
static int writer_create(weft_trace *trace, const weft_convert_options *options,
			 weft_convert_report *report, int follower, weft_output_writer **out)
{
	weft_output_writer *w = calloc(1, sizeof *w);
	const weft_output_info *output;
	int rc;

	if (w == NULL)
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	w->job.report = report != NULL ? report : &w->own;
	w->job.trace = trace;
	report = w->job.report;
	memset(report, 0, sizeof *report);
	if ((output = choose_output(options, report)) == NULL) {
		rc = WEFT_EINVAL;
		goto fail;
	}
	report->output = output->name;
	if ((rc = check_options(options, output, report)) < 0)
		goto fail;
	w->info = output;
	int emulated = 0;
	if ((rc = resolve_emulation(trace, options, output, report, &emulated)) < 0)
		goto fail;
	w->ops = emulated ? weft__output_emu_ops(output) : weft__output_ops(output);
	if (w->ops == NULL) { /* an entry without a writer: none today */
		rc = refuse(report, "the output %s cannot take events one by one", output->name);
		rc = WEFT_EUNSUPPORTED;
		goto fail;
	}
	if (copy_options(w, trace, options) < 0) {
		rc = weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
		weft__convert_say(report, "%s", weft_last_error());
		goto fail;
	}
	w->job.options = &w->options;
	w->follower = follower;
	if ((rc = w->ops->create(w)) < 0)
		goto fail;
	*out = w;
	return 0;
fail:
	/* a writer of its own: weft_last_error() says what the last line said */
	if (report == &w->own && report->message_count > 0)
		weft__error(rc, NULL, WEFT_NO_OFFSET, "%s",
			    report->messages[report->message_count - 1]);
	if (follower && w->ops != NULL) {
		/* a failed follower still takes part in the collectives
		 * (convert_shared with no impl), failing them */
		w->state = WEFT__WRITER_FAILED;
		*out = w;
		return rc;
	}
	writer_release(w);
	return rc;
}

int weft__output_writer_create(weft_trace *trace, const weft_convert_options *options,
			       weft_convert_report *report, weft_output_writer **out)
{
	*out = NULL;
	memset(report, 0, sizeof *report);
	if (trace == NULL || options == NULL)
		return weft__error(WEFT_EINVAL, NULL, WEFT_NO_OFFSET,
				   "weft_convert needs a trace and options");
	return writer_create(trace, options, report, 0, out);
}

int weft__output_writer_follow(weft_trace *trace, const weft_convert_options *options,
			       weft_convert_report *report, weft_output_writer **out)
{
	*out = NULL;
	memset(report, 0, sizeof *report);
	return writer_create(trace, options, report, 1, out);
}

int weft_output_writer_create(weft_trace *trace, const weft_convert_options *options,
			      weft_output_writer **out)
{
	if (out == NULL)
		return weft__error(WEFT_EINVAL, NULL, WEFT_NO_OFFSET,
				   "weft_output_writer_create needs a place for the writer");
	*out = NULL;
	if (trace == NULL || options == NULL)
		return weft__error(WEFT_EINVAL, NULL, WEFT_NO_OFFSET,
				   "an output writer needs a trace and options");
	return writer_create(trace, options, NULL, 0, out);
}

void weft__output_writer_fail(weft_output_writer *w)
{
	if (w->state == WEFT__WRITER_OPEN)
		w->state = WEFT__WRITER_FAILED;
}

const weft_output_info *weft_output_writer_output(const weft_output_writer *w)
{
	return w != NULL ? w->info : NULL;
}

weft_order weft_output_writer_order(const weft_output_writer *w)
{
	return (weft_order)w->filter.order;
}

void weft_output_writer_filter(const weft_output_writer *w, weft_filter *filter)
{
	*filter = w->filter;
}

/* ---- Events ---------------------------------------------------------------------- */

/*
 * Refuses a call on a writer that takes no more (finished or failed), or
 * about a stream the trace does not have; 0 when the call may go on.
 */
static int check_call(const weft_output_writer *w, uint32_t stream, const char *what)
{
	if (w->state == WEFT__WRITER_FINISHED)
		return weft__error(WEFT_EINVAL, NULL, WEFT_NO_OFFSET,
				   "%s after the output was finished", what);
	if (w->state == WEFT__WRITER_FAILED)
		return weft__error(WEFT_EINVAL, NULL, WEFT_NO_OFFSET,
				   "%s after the output failed", what);
	if (stream >= w->stream_count)
		return weft__error(WEFT_EINVAL, NULL, WEFT_NO_OFFSET,
				   "%s of stream %" PRIu32 ": the trace has %" PRIu32
				   " stream(s) (an event of another trace?)", what, stream,
				   w->stream_count);
	if (w->ended[stream])
		return weft__error(WEFT_EINVAL, NULL, WEFT_NO_OFFSET,
				   "%s of stream %" PRIu32 ", which was ended", what, stream);
	return 0;
}

/* A failure of the output (not a refusal): no more calls are taken. */
static int output_failed(weft_output_writer *w, int rc)
{
	if (rc < 0 && rc != WEFT_EINVAL)
		w->state = WEFT__WRITER_FAILED;
	return rc;
}

int weft_output_writer_event(weft_output_writer *w, const weft_event *event)
{
	if (w == NULL || event == NULL)
		return weft__error(WEFT_EINVAL, NULL, WEFT_NO_OFFSET,
				   "weft_output_writer_event needs a writer and an event");
	int rc = check_call(w, event->stream, "an event");
	return rc < 0 ? rc : output_failed(w, w->ops->event(w, event));
}

int weft_output_writer_end_stream(weft_output_writer *w, uint32_t stream)
{
	if (w == NULL)
		return weft__error(WEFT_EINVAL, NULL, WEFT_NO_OFFSET,
				   "weft_output_writer_end_stream needs a writer");
	int rc = check_call(w, stream, "the end");
	if (rc < 0)
		return rc;
	w->ended[stream] = 1;
	return w->ops->end_stream != NULL ? output_failed(w, w->ops->end_stream(w, stream)) : 0;
}

void weft_output_writer_read_failed(weft_output_writer *w, uint32_t stream, int status)
{
	const char *msg = weft_last_error();

	if (w == NULL || w->state == WEFT__WRITER_FINISHED)
		return;
	if (stream >= w->stream_count)
		stream = WEFT_OUTPUT_ALL_STREAMS; /* no such stream: the whole reading */
	w->ops->read_failed(w, stream, msg != NULL && msg[0] != '\0' ? msg
								     : weft_strerror(status));
}

/* ---- The end --------------------------------------------------------------------- */

int weft_output_writer_finish(weft_output_writer *w, weft_convert_report *report)
{
	if (w == NULL || report == NULL || w->state == WEFT__WRITER_FINISHED) {
		if (report != NULL && (w == NULL || report != w->job.report))
			memset(report, 0, sizeof *report);
		return weft__error(WEFT_EINVAL, NULL, WEFT_NO_OFFSET,
				   w == NULL || report == NULL
				   ? "weft_output_writer_finish needs a writer and a report"
				   : "the output was finished already");
	}
	int failed = w->state == WEFT__WRITER_FAILED;
	w->state = WEFT__WRITER_FINISHED;
	int rc = w->ops->finish(w, failed);
	if (report != w->job.report) {
		/* hand the writer's own report over */
		*report = *w->job.report;
		memset(w->job.report, 0, sizeof *w->job.report);
	}
	return rc;
}

void weft_output_writer_free(weft_output_writer *w)
{
	if (w == NULL)
		return;
	w->ops->free(w);
	writer_release(w);
}
