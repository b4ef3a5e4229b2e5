/* SPDX-License-Identifier: MIT */
/*
 * analysis/stats.c - the statistics of a stream (weft/stats.h): event
 * count, first and last time, from the format's stored summary (the
 * backend's stream_stats hook) or from reading the events.
 */
#include <string.h>

#include "core/internal.h"

/*
 * An event without a real time (time 0 by convention) is counted apart:
 * it would stretch the span back to 0.
 */
void weft_stream_stats_add(weft_stream_stats *st, const weft_event *ev)
{
	if (ev->flags & WEFT_EVENT_NO_TIME) {
		st->events++;
		st->untimed++;
		return;
	}
	int first = st->events == st->untimed;
	if (first || ev->time < st->first)
		st->first = ev->time;
	if (first || ev->time > st->last)
		st->last = ev->time;
	st->events++;
}

/* Counts the events of one stream through its own cursor. */
static int read_stream_stats(weft_trace *trace, uint32_t stream, weft_stream_stats *st)
{
	weft_cursor *cursor;
	const weft_event *ev;
	int rc = weft_cursor_create_stream(trace, stream, &cursor);

	if (rc < 0)
		return rc;
	while ((rc = weft_cursor_next(cursor, &ev)) == 1)
		weft_stream_stats_add(st, ev);
	weft_cursor_free(cursor);
	return rc;
}

int weft_trace_stream_stats(weft_trace *trace, uint32_t stream, weft_stream_stats *out)
{
	memset(out, 0, sizeof *out);
	if (stream >= trace->stream_count)
		return weft__error(WEFT_EINVAL, NULL, WEFT_NO_OFFSET, "no stream %u", stream);
	if (trace->backend->stream_stats != NULL) {
		out->stored = 1;
		return trace->backend->stream_stats(trace, stream, out);
	}
	return read_stream_stats(trace, stream, out);
}

int weft_trace_stats_merged(weft_trace *trace, weft_stream_stats *stats)
{
	weft_cursor *cursor;
	const weft_event *ev;
	int rc = weft_cursor_create(trace, NULL, &cursor);

	memset(stats, 0, trace->stream_count * sizeof *stats);
	if (rc < 0)
		return rc;
	while ((rc = weft_cursor_next(cursor, &ev)) == 1)
		weft_stream_stats_add(&stats[ev->stream], ev);
	weft_cursor_free(cursor);
	return rc;
}
