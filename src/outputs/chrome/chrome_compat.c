/* SPDX-License-Identifier: MIT */
/*
 * outputs/chrome/chrome_compat.c - the Heph-compatible mode: events as
 * read, one stream at a time, written as Heph's converter `convert_trace`
 * writes them (its layout, integer microseconds, its pid and tid per
 * stream) with its same-start fix-up (chrome_fixup.c) on each track.
 */
#include <stdlib.h>
#include <string.h>

#include "outputs/chrome/chrome_internal.h"

/* ---- The same-start fix-up (compat mode) ------------------------------------------ */

/*
 * Heph's same-start fix-up of one interval (ts, dur in us) on its track
 * (chrome_fixup.c). An event whose walk would never end (Heph's
 * converter hangs there) is left where it was.
 */
static void fixup_place(weft__chrome_writer *w, uint32_t track, uint64_t *ts, uint64_t *dur)
{
	uint64_t given = *ts;
	int rc = weft__fixup_place(w->fixup, track, ts, dur);

	if (rc == 0)
		w->stats.fixup_stuck++;
	else if (rc < 0 && w->error == 0)
		w->error = WEFT_ENOMEM;
	else if (rc > 0 && *ts != given)
		w->stats.fixup_moved++;
}

/* ---- Streams: pid, tid, prefixes, tracks ------------------------------------------- */

/* The top-level node above (or at) `node`. */
static const weft_node *top_node(const weft_trace *trace, const weft_node *node)
{
	while (node->parent != WEFT_NO_PARENT)
		node = weft_trace_node(trace, node->parent);
	return node;
}

/* A node's number as an unsigned id (Heph's u64 substreams), or `fallback`. */
static uint64_t node_number(const weft_node *node, uint64_t fallback)
{
	return node->number != -1 ? (uint64_t)node->number : fallback;
}

/* pid, tid and the prefix text of one stream. */
void weft__chrome_stream_setup(weft__chrome_writer *w, size_t index)
{
	chrome_stream *s = &w->streams[index];
	const weft_node *node = weft_trace_node(w->trace, weft_trace_stream(w->trace, index)->node);
	const weft_node *top = top_node(w->trace, node);
	char *p = s->prefix;

	weft__clock_cache_init(&s->ts, 0);
	s->pid = node_number(top, top->id);
	s->tid = node_number(node, index);
	p = COPY_LITERAL(p, "\t\t{\"pid\": ");
	p = weft__fmt_u64(p, s->pid);
	p = COPY_LITERAL(p, ", \"tid\": ");
	p = weft__fmt_u64(p, s->tid);
	p = COPY_LITERAL(p, ", \"ts\": ");
	s->prefix_len = (size_t)(p - s->prefix);
}

/* (pid, tid, stream) for sorting the streams into tracks. */
typedef struct track_key {
	uint64_t pid, tid;
	size_t stream;
} track_key;

/* qsort order of track keys: pid, then tid. */
static int track_key_compare(const void *a, const void *b)
{
	const track_key *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return 0;
}

/*
 * Compat mode: streams with the same (pid, tid) share one fix-up table,
 * as they share one map in Heph's converter. Sorting the pairs numbers
 * the tracks.
 */
int weft__chrome_assign_tracks(weft__chrome_writer *w)
{
	size_t n = w->stream_count;
	track_key *keys = malloc((n ? n : 1) * sizeof *keys);

	if (keys == NULL)
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	for (size_t i = 0; i < n; i++)
		keys[i] = (track_key){ w->streams[i].pid, w->streams[i].tid, i };
	qsort(keys, n, sizeof *keys, track_key_compare);
	for (size_t i = 0; i < n; i++) {
		if (i == 0 || track_key_compare(&keys[i - 1], &keys[i]) != 0)
			w->track_count++;
		w->streams[keys[i].stream].track = (uint32_t)(w->track_count - 1);
	}
	free(keys);
	return weft__fixup_create(w->track_count, &w->fixup);
}

/* ---- Events ------------------------------------------------------------------------------ */

/*
 * Compat mode, Heph's layout: \t\t{"pid": P, "tid": T, "ts": TS, "dur": D,
 * "name": N[, "args": {..}], "ph": "X", "cat": ""} with ts and dur in
 * whole microseconds (floor), after the same-start fix-up.
 */
static void write_compat_event(weft__chrome_writer *w, const weft_event *ev)
{
	chrome_stream *s = &w->streams[ev->stream];
	int interval = (ev->flags & WEFT_EVENT_INTERVAL) != 0;
	uint64_t ts = ev->time / 1000, dur = (ev->end - ev->time) / 1000;
	char *p;

	if (interval)
		fixup_place(w, s->track, &ts, &dur);
	p = put_separator(w, weft__outbuf_reserve(&w->out, HEAD_ROOM));
	memcpy(p, s->prefix, s->prefix_len);
	p = weft__fmt_clock(&s->ts, p + s->prefix_len, ts);
	if (interval) {
		p = COPY_LITERAL(p, ", \"dur\": ");
		p = weft__fmt_u64(p, dur);
	}
	p = COPY_LITERAL(p, ", \"name\": ");
	weft__outbuf_commit(&w->out, p);
	weft__chrome_put_string(w, ev->code, ev->code_len);
	weft__chrome_put_args(w, ev);
	if (interval)
		PUT_LITERAL(&w->out, ", \"ph\": \"X\", \"cat\": \"\"}");
	else
		PUT_LITERAL(&w->out, ", \"ph\": \"i\", \"s\": \"t\", \"cat\": \"\"}");
}

/* One event (compat mode); counted for the report. */
void weft__chrome_writer_event(weft__chrome_writer *w, const weft_event *event)
{
	write_compat_event(w, event);
	w->stats.events++;
	maybe_hand_over(w);
}
