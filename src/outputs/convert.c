/* SPDX-License-Identifier: MIT */
/*
 * outputs/convert.c - weft_convert() (weft/convert.h): the output's writer
 * (weft/writer.h, which chooses the output and checks the options), fed
 * with the events of the cursors it asks for, then finished; the report's
 * lines (what `weft convert` prints) are built here.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "outputs/convert.h"
#include "outputs/pipeline.h"
#include "outputs/writer.h"

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

/* ---- Reading ------------------------------------------------------------------- */

/* What push_batch() needs: the writer, and the streams of the pass. */
typedef struct push_ctx {
	weft_output_writer *w;
	const uint32_t *batch; /* per stream: 1 in the pass; NULL: all */
	int stopped;           /* the writer needs no more, or failed */
} push_ctx;

/*
 * Hands a run of events to the writer (weft__consume_fn: called by the
 * pipeline, in the reading thread or in the second one) until the writer
 * needs no more, or it fails or refuses one. Counts the events of the
 * window into the report (`selected`): the viewers read from the start,
 * to know what is open when the window begins.
 */
static int push_batch(void *ctx, const weft_event *events, size_t count)
{
	push_ctx *p = ctx;
	weft_output_writer *w = p->w;
	const weft_filter *window = &w->job.options->filter;

	for (size_t i = 0; i < count; i++) {
		const weft_event *ev = &events[i];
		if (p->batch != NULL && p->batch[ev->stream] == 0)
			continue;
		w->job.report->selected += ev->time >= window->from &&
					   (window->to == 0 || ev->time <= window->to);
		int taken = weft_output_writer_event(w, ev);
		if (taken < 0 && w->state == WEFT__WRITER_OPEN) {
			/* refused: the cursor broke the order the output needs */
			weft__convert_fail(w->job.report, "an event was refused", taken);
			weft__output_writer_fail(w);
		}
		if (taken != 0)
			return p->stopped = 1;
	}
	return 0;
}

/*
 * Pushes the events of `cursor` to the writer until the end, the writer
 * needs no more, or it fails. With `threaded`, the cursor is read in this
 * thread and the writer runs in a second one (outputs/pipeline.c): the
 * writer sees the same events in the same order, so the output does not
 * depend on it. Returns what the reading returned last (0 at the end), or
 * 0 when the writer stopped the reading (finish says why it failed).
 */
static int push_events(weft_output_writer *w, weft_cursor *cursor, const uint32_t *batch,
		       int threaded)
{
	push_ctx p = { .w = w, .batch = batch };

	/* the reading thread comes on top of the writer's own (noted when
	 * it was made: its writing or compressing threads) */
	if (threaded && !w->read_aside) {
		w->read_aside = 1;
		weft__trace_threads_note(w->job.trace, weft_trace_threads_used(w->job.trace) + 1);
	}
	int rc = weft__pipeline_run(cursor, push_batch, &p, threaded);

	return p.stopped ? 0 : rc;
}

/*
 * 1 when the events of `stream` (WEFT_OUTPUT_ALL_STREAMS: of the trace)
 * are read on a second thread while this one writes: as --threads says,
 * else when their bytes and the machine's CPUs pay for it (the output's
 * auto_cpus).
 */
static int read_aside(const weft_output_writer *w, uint32_t stream)
{
	const weft_trace *trace = w->job.trace;
	uint64_t bytes = 0;

	if (stream != WEFT_OUTPUT_ALL_STREAMS)
		bytes = weft_trace_stream(trace, stream)->file_size;
	for (uint32_t i = 0; stream == WEFT_OUTPUT_ALL_STREAMS && i < w->stream_count; i++)
		bytes += weft_trace_stream(trace, i)->file_size;
	return weft__pipeline_wanted_bytes(trace, bytes, w->ops->auto_cpus);
}

/*
 * The outputs that read a merged cursor (the viewers): the writer's
 * filter; a cursor that cannot be made leaves nothing (the writer is
 * freed by the caller).
 */
static int read_merged(weft_output_writer *w)
{
	weft_filter filter;
	weft_cursor *cursor = NULL;

	if (w->ops->convert_shared != NULL && w->ops->convert_shared(w))
		return 0; /* on the output's own threads (the viewers) */
	weft_output_writer_filter(w, &filter);
	int rc = weft_cursor_create(w->job.trace, &filter, &cursor);
	if (rc < 0)
		return weft__convert_fail(w->job.report, "cannot read the events", rc);
	rc = push_events(w, cursor, NULL, read_aside(w, WEFT_OUTPUT_ALL_STREAMS));
	if (rc < 0)
		weft_output_writer_read_failed(w, WEFT_OUTPUT_ALL_STREAMS, rc);
	weft_cursor_free(cursor);
	return 0;
}

/*
 * Outputs written a stream at a time (pallas): each selected stream
 * through its own cursor, ended before the next begins, so that one is
 * held at a time; a stream that cannot be read is reported and the
 * others go on.
 */
static int read_streams(weft_output_writer *w)
{
	weft_filter filter;

	weft_output_writer_filter(w, &filter);
	for (uint32_t i = 0; i < w->stream_count && w->state == WEFT__WRITER_OPEN; i++) {
		weft_cursor *cursor = NULL;
		if (!w->selected[i])
			continue;
		int rc = weft_cursor_create_stream_filtered(w->job.trace, i, &filter, &cursor);
		if (rc == 0)
			rc = push_events(w, cursor, NULL, read_aside(w, i));
		if (rc < 0)
			weft_output_writer_read_failed(w, i, rc);
		weft_cursor_free(cursor);
		if (w->state == WEFT__WRITER_OPEN)
			weft_output_writer_end_stream(w, i);
	}
	return 0;
}

/*
 * The same for formats whose streams share their files (ROSS): a batch of
 * WEFT__CONVERT_BATCH selected streams per pass of a merged cursor over
 * the files, the events of the other streams skipped; the batch's
 * streams are ended after its pass, in stream order.
 */
static int read_batches(weft_output_writer *w)
{
	weft_filter filter;
	uint32_t *batch = calloc(w->stream_count ? w->stream_count : 1, sizeof *batch);
	uint32_t next = 0;

	if (batch == NULL)
		return weft__convert_fail(w->job.report, "cannot read the events",
					  weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET,
						      "out of memory"));
	weft_output_writer_filter(w, &filter);
	int aside = read_aside(w, WEFT_OUTPUT_ALL_STREAMS);
	while (next < w->stream_count && w->state == WEFT__WRITER_OPEN) {
		uint32_t first = next, taken = 0;
		for (; next < w->stream_count && taken < WEFT__CONVERT_BATCH; next++)
			if (w->selected[next])
				batch[next] = 1, taken++;
		if (taken == 0)
			break;
		weft_cursor *cursor = NULL;
		int rc = weft_cursor_create(w->job.trace, &filter, &cursor);
		if (rc < 0) {
			weft__convert_say(w->job.report, "cannot read the events: %s",
					  weft_last_error());
			weft__output_writer_fail(w);
		} else if ((rc = push_events(w, cursor, batch, aside)) < 0) {
			weft_output_writer_read_failed(w, WEFT_OUTPUT_ALL_STREAMS, rc);
		}
		weft_cursor_free(cursor);
		for (uint32_t i = first; i < next; i++) {
			if (batch[i] && w->state == WEFT__WRITER_OPEN)
				weft_output_writer_end_stream(w, i);
			batch[i] = 0;
		}
	}
	free(batch);
	return 0;
}

/* ---- The call ------------------------------------------------------------------ */

void weft_convert_options_init(weft_convert_options *o)
{
	memset(o, 0, sizeof *o);
}

/*
 * The conversion with writer `w` (freed here): the streams read as the
 * output asks, or converted on the output's own parts (convert_shared),
 * then the writer's finish.
 */
static int convert_with(weft_output_writer *w, weft_convert_report *report)
{
	weft_trace *trace = w->job.trace;
	int rc;

	weft__progress_begin(trace, "converting");
	if (!weft__writer_by_stream(w))
		rc = read_merged(w);
	else if (weft_trace_file_order_default(trace))
		rc = read_batches(w);
	else if (w->ops->convert_shared == NULL || w->ops->convert_shared(w) == 0)
		rc = read_streams(w);
	else
		rc = 0;
	weft__progress_end(trace);
	if (rc == 0) {
		/* the writer's finish (Paraver's merge of its parts, the
		 * Pallas grammar, sync and rename): a phase of its own */
		weft__progress_begin(trace, "writing");
		rc = weft_output_writer_finish(w, report);
		weft__progress_end(trace);
	}
	weft_output_writer_free(w);
	return rc;
}

/*
 * On a trace shared among ranks: rank 0 makes the writer and says to the
 * others whether the output shares the streams (convert_shared: then
 * every rank converts its share, the others through a follower; a viewer,
 * read from one merged cursor, says again inside whether it shares this
 * time), or converts alone while they wait. Every rank returns rank 0's
 * status.
 */
static int convert_on_ranks(weft_trace *trace, const weft_convert_options *options,
			    weft_convert_report *report)
{
	const weft_dist *d = trace->options.dist;
	weft_output_writer *w = NULL;
	int64_t word = 0;
	int rc = 0;

	if (d->rank == 0) {
		rc = weft__output_writer_create(trace, options, report, &w);
		/* a viewer's convert_shared (not by stream) says itself, to
		 * the others, whether it shares this time */
		word = rc < 0 ? rc : w->ops->convert_shared != NULL &&
				     !weft_trace_file_order_default(trace);
	} else {
		memset(report, 0, sizeof *report);
	}
	int brc = d->broadcast(d->user, &word, sizeof word);
	if (brc < 0) {
		weft_output_writer_free(w);
		return weft__error(brc, NULL, WEFT_NO_OFFSET, "the ranks cannot agree to convert");
	}
	if (word < 0)
		return d->rank == 0 ? rc : (int)word;
	if (d->rank == 0) {
		rc = convert_with(w, report);
	} else if (word == 1) {
		weft_convert_report own;
		rc = weft__output_writer_follow(trace, options, &own, &w);
		if (w != NULL && w->ops->convert_shared != NULL)
			w->ops->convert_shared(w);
		weft_output_writer_free(w);
		weft_convert_report_free(&own);
	}
	int64_t status = rc;
	if (d->broadcast(d->user, &status, sizeof status) < 0)
		status = WEFT_EIO;
	if (d->rank != 0 && status < 0)
		return weft__error((int)status, NULL, WEFT_NO_OFFSET,
				   "the conversion failed on rank 0");
	return (int)status;
}

int weft_convert(weft_trace *trace, const weft_convert_options *options,
		 weft_convert_report *report)
{
	weft_output_writer *w = NULL;

	if (trace != NULL && options != NULL && report != NULL && weft__dist_active(trace))
		return convert_on_ranks(trace, options, report);
	int rc = weft__output_writer_create(trace, options, report, &w);
	if (rc < 0)
		return rc;
	return convert_with(w, report);
}
