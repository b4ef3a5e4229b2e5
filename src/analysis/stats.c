/* SPDX-License-Identifier: MIT */
/*
 * analysis/stats.c - the statistics of a stream (weft/stats.h): event
 * count, first and last time, from the format's stored summary (the
 * backend's stream_stats hook) or from reading the events; of every
 * stream, shared among threads (core/parts.c) and ranks (weft/dist.h).
 */
#include <stdlib.h>
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

/* The figures of every stream in one merged pass (of this rank's pieces). */
static int stats_merged(weft_trace *trace, int pieces, weft_stream_stats *stats)
{
	weft_cursor *cursor;
	const weft_event *ev;
	int rc = pieces ? weft__cursor_create_pieces(trace, NULL, &cursor)
		 : weft_cursor_create(trace, NULL, &cursor);

	memset(stats, 0, trace->stream_count * sizeof *stats);
	if (rc < 0)
		return rc;
	while ((rc = weft_cursor_next(cursor, &ev)) == 1)
		weft_stream_stats_add(&stats[ev->stream], ev);
	weft_cursor_free(cursor);
	return rc;
}

int weft_trace_stats_merged(weft_trace *trace, weft_stream_stats *stats)
{
	return stats_merged(trace, 0, stats);
}

/* ---- Every stream, shared among threads and ranks ---------------------------------- */

/* Where the figures of every stream go (the caller's arrays). */
typedef struct stats_table {
	weft_stream_stats *stats;
	int *status;
	size_t count;
	const uint8_t *selected; /* the streams this part read (NULL: all) */
} stats_table;

/*
 * The statistics of the selected streams, each alone. A stream that
 * cannot be read: its status, and its error as a diagnostic of the trace
 * (the readers record the problems of the data; this is the error that
 * stopped the reading: a stored summary that does not parse, a file that
 * cannot be read).
 */
static int stats_streams(weft_trace *trace, const uint8_t *selected, weft_stream_stats *stats,
			 int *status)
{
	for (size_t i = 0; i < trace->stream_count; i++) {
		if (selected != NULL && !selected[i])
			continue;
		int rc = weft_trace_stream_stats(trace, (uint32_t)i, &stats[i]);
		status[i] = rc < 0 ? rc : 0;
		if (rc == WEFT_ENOMEM)
			return rc;
		if (rc < 0)
			weft__trace_diag_last_error(trace, WEFT_SEV_ERROR, rc, NULL);
	}
	return 0;
}

/* The figures of the selected streams: index, then each figure. */
static void pack_stats(weft__pack *p, const void *ctx)
{
	const stats_table *t = ctx;
	for (size_t i = 0; i < t->count; i++) {
		if (t->selected != NULL && !t->selected[i])
			continue;
		const weft_stream_stats *s = &t->stats[i];
		weft__pack_u64(p, i);
		weft__pack_u64(p, s->events);
		weft__pack_u64(p, s->untimed);
		weft__pack_u64(p, s->first);
		weft__pack_u64(p, s->last);
		weft__pack_u64(p, (uint64_t)s->stored);
		weft__pack_u64(p, (uint64_t)(int64_t)t->status[i]);
		weft__pack_text(p, s->detail);
	}
}

/*
 * Adds the figures of another part of a stream: a stream read in pieces
 * by several ranks (weft__dist_pieces); else the stream's only part.
 */
static void stats_add_part(weft_stream_stats *all, int *status, const weft_stream_stats *s,
			   int part_status)
{
	if (*status == 0)
		*status = part_status;
	if (all->events == 0 && !all->stored && all->detail[0] == '\0') {
		*all = *s;
		return;
	}
	int timed = all->events > all->untimed, part_timed = s->events > s->untimed;
	if (part_timed && (!timed || s->first < all->first))
		all->first = s->first;
	if (part_timed && (!timed || s->last > all->last))
		all->last = s->last;
	all->events += s->events;
	all->untimed += s->untimed;
}

/* Takes another part's streams into the table. */
static int merge_stats(void *ctx, weft__unpack *u)
{
	stats_table *t = ctx;
	while (!u->bad && u->pos < u->len) {
		uint64_t i = weft__unpack_u64(u);
		weft_stream_stats s = { 0 };
		s.events = weft__unpack_u64(u);
		s.untimed = weft__unpack_u64(u);
		s.first = weft__unpack_u64(u);
		s.last = weft__unpack_u64(u);
		s.stored = (int)weft__unpack_u64(u);
		int status = (int)(int64_t)weft__unpack_u64(u);
		const char *detail = weft__unpack_text(u);
		if (u->bad || i >= t->count || strlen(detail) >= sizeof s.detail) {
			u->bad = 1;
			break;
		}
		strcpy(s.detail, detail);
		stats_add_part(&t->stats[i], &t->status[i], &s, status);
	}
	return 0;
}

/*
 * One merged pass (of this handle's pieces when `pieces`) into the table.
 * A pass that fails is the status of the first stream, its error among
 * the diagnostics; 0, or WEFT_ENOMEM.
 */
static int stats_pass(weft_trace *trace, int pieces, stats_table *t)
{
	int rc = stats_merged(trace, pieces, t->stats);
	if (rc == WEFT_ENOMEM || rc >= 0)
		return rc;
	weft__trace_diag_last_error(trace, WEFT_SEV_ERROR, rc, NULL);
	t->status[0] = rc;
	return 0;
}

/*
 * A thread's part: its streams' figures (`pieces` 0), or every stream's
 * in its piece of the files, packed.
 */
static int stats_part_read(weft_trace *handle, const uint8_t *selected, weft__pack *result,
			   const stats_table *whole, int pieces)
{
	stats_table part = { calloc(whole->count ? whole->count : 1, sizeof *part.stats),
			     calloc(whole->count ? whole->count : 1, sizeof *part.status),
			     whole->count, selected };
	int rc = part.stats != NULL && part.status != NULL ? 0
		 : weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	if (rc == 0)
		rc = pieces ? stats_pass(handle, 1, &part)
		     : stats_streams(handle, selected, part.stats, part.status);
	if (rc == 0)
		pack_stats(result, &part);
	free(part.stats);
	free(part.status);
	return rc;
}

/* A thread's part of the streams (weft__part_fn). */
static int stats_part(weft_trace *handle, const uint8_t *selected, weft__pack *result,
		      void *arg)
{
	return stats_part_read(handle, selected, result, arg, 0);
}

/* A thread's piece of the files (weft__pieces_run). */
static int stats_piece(weft_trace *handle, const uint8_t *selected, weft__pack *result,
		       void *arg)
{
	(void)selected;
	return stats_part_read(handle, NULL, result, arg, 1);
}

/* This process's streams: its rank's, in one merged pass or by threads. */
static int stats_shared(weft_trace *trace, int threads_asked, stats_table *t)
{
	const uint8_t *share = weft__dist_selected(trace);
	t->selected = share;
	if (weft_trace_file_order_default(trace)) {
		/* One pass over the files: this rank's pieces of them, each
		 * stream's figures added up on rank 0; else the whole files,
		 * rank 0's share, in pieces on threads when worth it. */
		int pieces = weft__dist_pieces(trace) > 0;
		if (pieces)
			t->selected = NULL;
		else if (!weft__dist_root(trace))
			return 0;
		int threads = pieces ? 1 : weft__pieces_threads(trace, threads_asked,
								 WEFT__WORK_LIGHT);
		if (threads > 1)
			return weft__pieces_run(trace, threads, stats_piece, t, merge_stats, t);
		return stats_pass(trace, pieces, t);
	}
	int threads = weft__parts_threads(trace, share, threads_asked, WEFT__WORK_LIGHT);
	if (threads <= 1)
		return stats_streams(trace, share, t->stats, t->status);
	return weft__parts_run(trace, share, threads, stats_part, t, merge_stats, t);
}

int weft_trace_stats_all(weft_trace *trace, int threads, weft_stream_stats *stats,
			 int *status)
{
	size_t n = trace->stream_count;
	int *own = status != NULL ? NULL : calloc(n ? n : 1, sizeof *own);
	if (status == NULL && own == NULL)
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	stats_table t = { stats, status != NULL ? status : own, n, NULL };
	memset(stats, 0, n * sizeof *stats);
	memset(t.status, 0, n * sizeof *t.status);
	size_t diags = weft_trace_diag_count(trace);
	weft__progress_begin(trace, "reading");
	int rc = stats_shared(trace, threads, &t);
	if (weft__dist_active(trace)) /* t.selected: this rank's streams */
		rc = weft__dist_combine(trace, rc, diags, pack_stats, merge_stats, &t);
	weft__trace_diags_sort(trace, diags);
	/* The first stream that failed, in stream order, is the status (its
	 * message is among the diagnostics). */
	for (size_t i = 0; rc == 0 && i < n; i++)
		if (t.status[i] < 0)
			rc = weft__error(t.status[i], NULL, WEFT_NO_OFFSET,
					 "%s: the stream could not be read to its end",
					 trace->streams[i].path);
	free(own);
	return weft__progress_end_with(trace, rc);
}
