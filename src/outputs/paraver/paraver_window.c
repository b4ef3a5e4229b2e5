/* SPDX-License-Identifier: MIT */
/*
 * outputs/paraver/paraver_window.c - where records go: the reorder
 * window of the direct path (a FIFO for records in time order, a heap for
 * the others), the heap of unwritten placeholders, and the routing of
 * each record to the window, to the external sort (sort path, or a late
 * record of the direct path) or to the written body.
 */
#include <stdlib.h>
#include <string.h>

#include "outputs/paraver/paraver_internal.h"

/* ---- Reorder window ---------------------------------------------------------------------------- */

/* The smallest power of two of at least n (n >= 2). */
static size_t pow2_at_least(size_t n)
{
	size_t cap = 2;

	while (cap < n)
		cap *= 2;
	return cap;
}

/* The FIFO's first size in records: it doubles as it fills, up to ring_max. */
#define RING_FIRST 1024u

/*
 * Makes the FIFO `cap` records (a power of two, at least its count), its
 * records copied in order. 0, or -1 (ENOMEM: the FIFO is left as it was).
 */
static int window_resize(pv_window *wn, size_t cap)
{
	rec *ring = malloc(cap * sizeof *ring);

	if (ring == NULL)
		return -1;
	for (size_t i = 0; i < wn->count; i++)
		ring[i] = wn->ring[(wn->head + i) & (wn->ring_cap - 1)];
	free(wn->ring);
	wn->ring = ring;
	wn->ring_cap = cap;
	wn->head = 0;
	return 0;
}

/*
 * Allocates the window's FIFO at the first record. The window is
 * COLLECT_FACTOR times its size until the first write (the tasks the
 * header makes room for are those known then: the later it comes, the
 * more of them), its size after it; the FIFO starts small and doubles
 * as it fills (a small trace, and every input of a fuzz target, never
 * pays for the 16 MiB). 0, or -1 (ENOMEM).
 */
static int window_ensure(weft__paraver_writer *w)
{
	pv_window *wn = &w->win;

	if (wn->ring != NULL)
		return 0;
	size_t limit = (size_t)(w->window_bytes / sizeof(rec));
	wn->steady = limit < 2 ? 2 : limit;
	wn->limit = wn->steady * COLLECT_FACTOR;
	wn->ring_max = pow2_at_least(wn->limit);
	wn->ring_cap = wn->ring_max < RING_FIRST ? wn->ring_max : RING_FIRST;
	wn->ring = malloc(wn->ring_cap * sizeof *wn->ring);
	return wn->ring != NULL ? 0 : -1;
}

/*
 * After the first write: the FIFO shrinks to the window's size once it
 * holds no more. Keeps the large one when the small one cannot be had.
 */
static void window_shrink(pv_window *wn)
{
	wn->shrink = 0;
	if (wn->ring_cap > wn->ring_max)
		window_resize(wn, wn->ring_max);
}

/* Moves heap[i] up to its place. */
static void heap_up(rec *h, size_t i)
{
	rec x = h[i];

	while (i > 0 && rec_before(&x, &h[(i - 1) / 2])) {
		h[i] = h[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	h[i] = x;
}

/* Moves heap[i] down to its place. */
void weft__pv_heap_down(rec *h, size_t n, size_t i)
{
	rec x = h[i];

	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= n)
			break;
		if (c + 1 < n && rec_before(&h[c + 1], &h[c]))
			c++;
		if (!rec_before(&h[c], &x))
			break;
		h[i] = h[c];
		i = c;
	}
	h[i] = x;
}

/*
 * Where a record of time `time` goes in the window: the FIFO's next
 * slot when it comes in order (*in_ring set), else the heap's end. NULL
 * on ENOMEM.
 */
static inline rec *window_slot(pv_window *wn, uint64_t time, int *in_ring)
{
	if (WEFT__OUT_UNLIKELY(wn->count == wn->ring_cap && wn->ring_cap < wn->ring_max))
		window_resize(wn, wn->ring_cap * 2); /* ENOMEM: the heap takes it */
	*in_ring = wn->count < wn->ring_cap && (wn->count == 0 || time >= wn->tail_time);
	if (*in_ring)
		return &wn->ring[(wn->head + wn->count) & (wn->ring_cap - 1)];
	if (wn->heap_count == wn->heap_cap &&
	    weft__array_grow((void **)&wn->heap, &wn->heap_cap, wn->heap_count + 1,
			     sizeof *wn->heap) < 0)
		return NULL;
	return &wn->heap[wn->heap_count];
}

/* Makes the record written in the slot from window_slot part of the window. */
static inline void window_commit(pv_window *wn, uint64_t time, int in_ring)
{
	if (in_ring) {
		wn->count++;
		wn->tail_time = time;
		return;
	}
	heap_up(wn->heap, wn->heap_count++);
}

/* Frees the window's memory. */
void weft__pv_window_free(pv_window *wn)
{
	free(wn->ring);
	free(wn->heap);
	free(wn->ph);
	memset(wn, 0, sizeof *wn);
}

/* ---- Placeholder heap --------------------------------------------------------------------------- */

/* (a before b) among placeholders: by begin, then order of creation. */
static inline int ph_before(const ph_entry *a, const ph_entry *b)
{
	return a->begin < b->begin || (a->begin == b->begin && a->seq < b->seq);
}

/* Adds an unwritten placeholder. 0 or -1 (ENOMEM). */
int weft__pv_ph_push(pv_window *wn, ph_entry e)
{
	if (weft__array_grow((void **)&wn->ph, &wn->ph_cap, wn->ph_count + 1, sizeof *wn->ph) < 0)
		return -1;
	size_t i = wn->ph_count++;
	while (i > 0 && ph_before(&e, &wn->ph[(i - 1) / 2])) {
		wn->ph[i] = wn->ph[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	wn->ph[i] = e;
	return 0;
}

/* Removes the first placeholder. */
static void ph_pop(pv_window *wn)
{
	ph_entry x = wn->ph[--wn->ph_count];
	size_t i = 0, n = wn->ph_count;

	if (n == 0)
		return;
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= n)
			break;
		if (c + 1 < n && ph_before(&wn->ph[c + 1], &wn->ph[c]))
			c++;
		if (!ph_before(&wn->ph[c], &x))
			break;
		wn->ph[i] = wn->ph[c];
		i = c;
	}
	wn->ph[i] = x;
}

/* 1 when the entry is its track's current unwritten placeholder. */
static int ph_valid(const weft__paraver_writer *w, const ph_entry *e)
{
	const pv_track *tr = &w->tracks[e->track - 1];

	return tr->ph_gen == e->gen && (tr->ph == PH_OPEN_RUN || tr->ph == PH_OPEN_GAP);
}

/* The earliest unwritten placeholder (stale entries dropped), or NULL. */
const ph_entry *weft__pv_ph_top(weft__paraver_writer *w)
{
	pv_window *wn = &w->win;

	while (wn->ph_count > 0 && !ph_valid(w, &wn->ph[0]))
		ph_pop(wn);
	return wn->ph_count > 0 ? &wn->ph[0] : NULL;
}

/* A track's placeholder is gone (resolved, or its span reverts to the sort). */
void weft__pv_ph_drop(pv_track *tr)
{
	tr->ph = PH_NONE;
	tr->ph_gen++;
}

/*
 * Unwritten placeholders go back to being plain state records made when
 * their span closes (leaving the direct path, or at the end).
 */
void weft__pv_ph_revert_all(weft__paraver_writer *w)
{
	pv_window *wn = &w->win;

	for (size_t i = 0; i < wn->ph_count; i++)
		if (ph_valid(w, &wn->ph[i]))
			weft__pv_ph_drop(&w->tracks[wn->ph[i].track - 1]);
	wn->ph_count = 0;
}

/* ---- Where records go --------------------------------------------------------------------------- */

/* Hands a record to the external sort (created at the first one). */
static void sort_add(weft__paraver_writer *w, const rec *r)
{
	char bytes[REC_MAX];

	if (w->error != 0)
		return;
	if (w->sorter == NULL) {
		int rc = weft__row_sorter_create(w->budget, w->tmpdir, &w->sorter);
		if (rc < 0) {
			weft__pv_fail(w, rc);
			return;
		}
	}
	size_t len = rec_pack(r, bytes);
	int rc = weft__row_sorter_add(w->sorter, r->time, bytes, len);
	if (rc < 0)
		weft__pv_fail(w, rc);
	if (r->time < w->late_min)
		w->late_min = r->time;
}

/*
 * Before anything is written: every record from now on goes through the
 * sort, those in the window first (in their order), and placeholders
 * revert to records made when their spans close.
 */
void weft__pv_to_sort_mode(weft__paraver_writer *w)
{
	rec r;

	weft__pv_ph_revert_all(w);
	w->mode = MODE_SORT;
	while (window_count(&w->win) > 0) {
		window_pop(&w->win, &r);
		sort_add(w, &r);
	}
	weft__pv_window_free(&w->win);
}

/*
 * After the first write, a record broke what the direct path relies on:
 * the window still goes to the body at the end, every new record to the
 * sort, and the .prv is remade from both at the end.
 */
void weft__pv_enter_rebuild(weft__paraver_writer *w)
{
	if (w->mode != MODE_DIRECT)
		return;
	weft__pv_ph_revert_all(w);
	w->mode = MODE_REBUILD;
}

/* Writes a placeholder: the state record with its end zero-padded. */
static void write_placeholder(weft__paraver_writer *w, const ph_entry *e)
{
	pv_track *tr = &w->tracks[e->track - 1];
	char *p = weft__outbuf_reserve(&w->out, LINE_MAX), *line = p;

	p = put_object(p, '1', tr);
	p = put_time(w, p, e->begin - w->start_base);
	*p++ = ':';
	char *end_at = p;
	memset(p, '0', END_DIGITS);
	p += END_DIGITS;
	*p++ = ':';
	p = weft__fmt_i64(p, tr->ph == PH_OPEN_RUN ? (int64_t)tr->type : 0);
	*p++ = '\n';
	weft__outbuf_commit(&w->out, p);
	tr->ph_line = w->buf_offset + (uint64_t)(line - w->out.buf);
	tr->ph_end_at = w->buf_offset + (uint64_t)(end_at - w->out.buf);
	tr->ph = tr->ph == PH_OPEN_RUN ? PH_WRITTEN_RUN : PH_WRITTEN_GAP;
	w->mark = e->begin;
	w->stats.records++;
	w->stats.state_records++;
	w->stats.padded_states++;
	maybe_hand_over(w);
}

/* Writes the placeholders that begin before `time` (their records come first). */
static void write_due_placeholders(weft__paraver_writer *w, uint64_t time)
{
	const ph_entry *e;

	while ((e = weft__pv_ph_top(w)) != NULL && e->begin < time) {
		ph_entry x = *e;
		ph_pop(&w->win);
		write_placeholder(w, &x);
	}
}

/* A record leaves the window into the body. */
void weft__pv_body_record(weft__paraver_writer *w, const rec *r)
{
	pv_track *tr = track_get(w, r->track);

	if (tr != NULL) {
		tr->window_count--;
		tr->body_last = r->time;
		tr->has_body = 1;
	}
	w->mark = r->time;
	log_record(w, r);
	weft__pv_write_record(w, r);
	maybe_hand_over(w);
}

/*
 * The first write: the direct path starts (time 0, header area, the
 * trace-start record), or, when it cannot, everything goes to the sort.
 * 0 when it started.
 */
static int first_write(weft__paraver_writer *w)
{
	if (weft__pv_first_row_track(w) == NULL || weft__pv_log_open(w) != 0) {
		weft__pv_to_sort_mode(w);
		return -1;
	}
	if (weft__pv_direct_start(w) != 0) {
		weft__pv_log_close(w);
		weft__pv_to_sort_mode(w);
		return -1;
	}
	w->mode = MODE_DIRECT;
	w->stats.direct = 1;
	w->win.limit = w->win.steady;
	w->win.ring_max = pow2_at_least(w->win.steady);
	w->win.shrink = w->win.ring_max < w->win.ring_cap;
	if (weft__pv_put_trace_start(w))
		log_put(w, 0, LOG_SKIP);
	return 0;
}

/* Writes the oldest record of the window (and the placeholders before it). */
static void release_one(weft__paraver_writer *w)
{
	if (w->mode == MODE_COLLECT && first_write(w) != 0)
		return;
	const rec *m = window_min(&w->win);
	if (m == NULL)
		return;
	if (w->win.ph_count > 0)
		write_due_placeholders(w, m->time);
	weft__pv_body_record(w, m);
	window_drop(&w->win, m);
}

/*
 * Puts a record in the window, its fields written in place from the
 * arguments (a record built on the stack and copied stalls on store
 * forwarding); the oldest records leave while it is full.
 */
static void window_add(weft__paraver_writer *w, pv_track *tr, uint8_t kind, uint32_t track,
		       uint32_t type, uint64_t time, uint64_t end, int64_t value, uint64_t seq,
		       int32_t tag)
{
	pv_window *wn = &w->win;
	rec *slot = NULL;
	int in_ring = 0;

	if (WEFT__OUT_UNLIKELY(window_ensure(w) != 0 ||
			       (slot = window_slot(wn, time, &in_ring)) == NULL)) {
		rec r = { .time = time, .end = end, .value = value, .seq = seq,
			  .track = track, .type = type, .kind = kind, .tag = tag };
		if (w->mode == MODE_COLLECT) {
			weft__pv_to_sort_mode(w);
			sort_add(w, &r);
		} else {
			weft__pv_fail_nomem(w, "reorder window");
		}
		return;
	}
	slot->time = time;
	slot->end = end;
	slot->value = value;
	slot->seq = seq;
	slot->track = track;
	slot->type = type;
	slot->kind = kind;
	slot->tag = tag;
	window_commit(wn, time, in_ring);
	if (tr != NULL)
		tr->window_count++;
	while (window_count(wn) >= wn->limit &&
	       (w->mode == MODE_COLLECT || w->mode == MODE_DIRECT) && w->error == 0)
		release_one(w);
	if (WEFT__OUT_UNLIKELY(wn->shrink) && wn->count < wn->limit)
		window_shrink(wn);
}

/* Where a record goes. */
enum route { ROUTE_WINDOW, ROUTE_SORT, ROUTE_LATE, ROUTE_NONE };

/*
 * Before the first write: a span or event record older than one before
 * it means an input out of time order (not only the state records and
 * the window's small disorder): the sort takes it all.
 */
static int collect_route(weft__paraver_writer *w, unsigned kind, uint64_t time)
{
	if (kind != REC_STATE && kind != REC_COMM) {
		if (w->have_input && time < w->input_max) {
			weft__pv_to_sort_mode(w);
			return ROUTE_SORT;
		}
		w->input_max = time;
		w->have_input = 1;
	}
	return ROUTE_WINDOW;
}

/* On the direct path: the window, or the sort for what is too old. */
static int direct_route(weft__paraver_writer *w, const pv_track *tr, unsigned kind,
			uint64_t time)
{
	if (tr == NULL)
		return ROUTE_NONE;
	if (time < w->start_base) {
		weft__pv_enter_rebuild(w); /* before time 0: every time shifts */
		return ROUTE_SORT;
	}
	if (time < w->mark)
		return ROUTE_LATE;
	if (tr->late && stack_kind(kind)) {
		weft__pv_enter_rebuild(w); /* would follow its track's late ends */
		return ROUTE_SORT;
	}
	return ROUTE_WINDOW;
}

/*
 * A record older than the output: to the sort, merged in at the end.
 * The end of a span may go there only when nothing of its track is
 * written after it or waits in the window (then its value follows from
 * the stack the body left); else the .prv is rebuilt at the end.
 */
static void late_record(weft__paraver_writer *w, pv_track *tr, const rec *r)
{
	if (stack_kind(r->kind)) {
		if (tr->window_count > 0 || (tr->has_body && tr->body_last > r->time))
			weft__pv_enter_rebuild(w);
		else
			tr->late = 1;
	}
	w->stats.late_records++;
	sort_add(w, r);
}

/*
 * One record from a callback, to where the current path sends it (a
 * message's tag with it; 0 for the other kinds).
 */
void weft__pv_add_tagged(weft__paraver_writer *w, uint8_t kind, uint32_t track, uint32_t type,
			 uint64_t time, uint64_t end, int64_t value, int32_t tag)
{
	if (w->error != 0)
		return;
	uint64_t seq = w->seq++;
	pv_track *tr = track_get(w, track);
	int route = ROUTE_SORT;

	w->records_seen = 1;
	see_time(w, time < end ? time : end, end > time ? end : time);
	if (w->mode == MODE_COLLECT)
		route = collect_route(w, kind, time);
	else if (w->mode == MODE_DIRECT)
		route = direct_route(w, tr, kind, time);
	if (route == ROUTE_WINDOW) {
		window_add(w, tr, kind, track, type, time, end, value, seq, tag);
		return;
	}
	rec r = { .time = time, .end = end, .value = value, .seq = seq,
		  .track = track, .type = type, .kind = kind, .tag = tag };
	if (route == ROUTE_LATE)
		late_record(w, tr, &r);
	else if (route == ROUTE_SORT)
		sort_add(w, &r);
}

