/* SPDX-License-Identifier: MIT */
/*
 * outputs/chrome/chrome_shared.c - Chrome JSON on streams shared among
 * threads and ranks (the engine: outputs/view_shared.c), byte for byte
 * the output of one thread.
 *
 * Besides the tracks and flow ids (numbered by the engine's one view),
 * one thing in Chrome's bytes depends on the merged order across
 * streams: the origin of ts, the first time of all, which the engine
 * finds before the parts start (wants_first_time). Each part's writer
 * runs in part mode: it formats the events' text and writes records,
 * each keyed by the (time, stream) of the event the view was at:
 *   L  an event without its head: its track (the part's number), its
 *      phase, then its text from ts on,
 *   F  the flow event of a message end: track, time, flow key, end;
 * (and the engine's D, a track the part's view declared). The merge gives
 * an L the head of its track (its pid and tid, numbered by the output's
 * view), an F its flow id from the output's view (weft__view_flow_id()).
 * The formatting of the events, most of the work, is done by the parts.
 *
 * Not shared besides the engine's cases: Heph's compatible bytes.
 *
 * Record layout (native byte order: between ranks of one program):
 *   L: 'L', track (4), phase (1), text (the rest)
 *   F: 'F', track (4), time (8), flow key (8), end (1)
 */
#include <stdlib.h>
#include <string.h>

#include "outputs/chrome/chrome_internal.h"
#include "outputs/view_shared.h"

/* ---- Part mode: the records ---------------------------------------------------- */

void weft__chrome_part_line_end(weft__chrome_writer *w)
{
	weft__view_part_record_end(w->part);
}

void weft__chrome_part_declare(weft__chrome_writer *w, const weft__view_track *t)
{
	weft__view_part_declare(w->part, t);
}

char *weft__chrome_part_head(weft__chrome_writer *w, char *p, const weft__view_track *t,
			     char ph)
{
	weft__view_part *pt = w->part;
	uint32_t id = weft__view_part_track(pt, t);

	weft__view_part_key(pt, t);
	pt->start = (size_t)(p - w->out.buf);
	p[0] = 'L';
	memcpy(p + 1, &id, 4);
	p[5] = ph;
	return p + 6;
}

void weft__chrome_part_flow(weft__chrome_writer *w, const weft__view_track *t,
			    uint64_t time, const weft__view_item *it)
{
	weft__view_part *pt = w->part;
	uint32_t id = weft__view_part_track(pt, t);
	char *p = weft__outbuf_reserve(&w->out, 22);

	weft__view_part_key(pt, t);
	pt->start = w->out.len;
	p[0] = 'F';
	memcpy(p + 1, &id, 4);
	memcpy(p + 5, &time, 8);
	memcpy(p + 13, &it->flow_key, 8);
	p[21] = (char)it->flow_end;
	weft__outbuf_commit(&w->out, p + 22);
	weft__view_part_record_end(pt);
}

/* ---- The engine's calls (weft__view_share_ops) ------------------------------------ */

/* A part's writer: part mode, the origin set, the run's chunks as its buffer. */
static int part_create(weft_trace *handle, weft__view_part *p, const uint64_t *first,
		       const void *arg, void **state, weft__view_sink *sink)
{
	weft__chrome_writer *w = NULL;
	int rc = weft__chrome_writer_create(handle, WEFT__OUTBUF_GROW, NULL, &w);

	(void)arg;
	if (rc < 0)
		return rc;
	weft__outbuf_destroy(&w->out); /* the run's chunks are its buffers */
	w->part = p;
	p->out = &w->out;
	if (first != NULL) {
		w->origin = weft__chrome_time_origin(*first);
		w->origin_set = 1;
	}
	*state = w;
	*sink = *weft__chrome_writer_sink(w);
	return 0;
}

static int part_status(void *state)
{
	const weft__chrome_writer *w = state;

	return w->out.error != 0 || w->error != 0
	       ? weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET,
			     "out of memory for the output's events") : 0;
}

/* Counts: events written, times before the origin, times past exact. */
static void part_free(void *state, uint64_t *counts)
{
	weft__chrome_writer *w = state;
	weft__chrome_stats st;

	if (w == NULL)
		return;
	weft__chrome_writer_stats(w, &st);
	counts[0] += st.events;
	counts[1] += st.before_origin;
	counts[2] += st.beyond_exact;
	weft__chrome_writer_free(w);
}

static void set_first_time(void *out, uint64_t time)
{
	weft__chrome_writer *w = out;

	w->origin = weft__chrome_time_origin(time);
	w->origin_set = 1;
}

/* An L or F record of the output's track `track`, into the output. */
static int merge(void *out, weft__view *view, uint32_t track, const char *rec, size_t len)
{
	weft__chrome_writer *w = out;
	uint64_t time, key;

	if (rec[0] == 'L' && len >= 6) {
		weft__chrome_put_part_line(w, track, rec[5], rec + 6, len - 6);
		return 0;
	}
	if (rec[0] != 'F' || len != 22)
		return weft__view_bad_record();
	memcpy(&time, rec + 5, 8);
	memcpy(&key, rec + 13, 8);
	uint64_t flow = weft__view_flow_id(view, key, rec[21]);
	if (flow != 0)
		weft__chrome_put_flow(w, weft__view_track_get(view, track), time, flow, rec[21]);
	return 0;
}

static int failed(void *out)
{
	return weft__chrome_writer_failed(out);
}

static void add_counts(void *out, const uint64_t *counts)
{
	weft__chrome_writer *w = out;

	w->stats.events += counts[0];
	w->stats.before_origin += counts[1];
	w->stats.beyond_exact += counts[2];
}

const weft__view_share_ops weft__chrome_share_ops = {
	1, part_create, part_status, part_free, set_first_time, merge, failed, add_counts,
	NULL, NULL
};
