/* SPDX-License-Identifier: MIT */
/*
 * outputs/paraver/paraver_sort.c - the sort path: every record through
 * the external sort, then written in time order, each group of records of
 * one time reordered so that complete spans nest right (their ends, then
 * their begins longest first, then the rest in the order they came).
 */
#include <stdlib.h>

#include "outputs/paraver/paraver_internal.h"

/* ---- Writing the .prv: the sort path ------------------------------------------------------------- */

/* Order of records of one time: complete ends, complete begins (longest
 * first), then the rest, each in order of arrival. */
static int compare_group(const void *a, const void *b)
{
	const group_rec *x = a, *y = b;

	if (x->cls != y->cls)
		return x->cls < y->cls ? -1 : 1;
	if (x->tie != y->tie)
		return x->tie < y->tie ? -1 : 1;
	return x->index < y->index ? -1 : (x->index > y->index);
}

/* Writes the records of one time, reordered when complete spans are among them. */
void weft__pv_flush_group(weft__paraver_writer *w)
{
	int reorder = 0;

	for (size_t i = 0; i < w->group_len; i++)
		if (w->group[i].cls < 2)
			reorder = 1;
	if (reorder && w->group_len > 1)
		qsort(w->group, w->group_len, sizeof *w->group, compare_group);
	for (size_t i = 0; i < w->group_len; i++)
		weft__pv_write_record(w, &w->group[i].r);
	w->group_len = 0;
}

/* Takes the next record in time order: groups them by time, then writes them. */
void weft__pv_emit_rec(weft__paraver_writer *w, const rec *r)
{
	group_rec g;

	if (w->group_len > 0 &&
	    (r->time != w->group[0].r.time || w->group_len == GROUP_MAX))
		weft__pv_flush_group(w);
	g.r = *r;
	g.cls = r->kind == REC_CEND ? 0 : r->kind == REC_CBEGIN ? 1 : 2;
	g.tie = r->kind == REC_CBEGIN ? UINT64_MAX - r->end : 0;
	g.index = (uint32_t)w->group_len;
	w->group[w->group_len++] = g;
}

/* A packed record back from the sort; 0, or WEFT_EIO when it is damaged. */
int weft__pv_sorted_rec(const char *bytes, size_t len, rec *r)
{
	if (len > REC_MAX || weft__pv_rec_unpack(bytes, len, r) != 0)
		return weft__error(WEFT_EIO, NULL, WEFT_NO_OFFSET,
				   "paraver: a sorted record came back damaged (%zu bytes)", len);
	return 0;
}

/* Receives the sorted records of the sort path. */
static int emit_record(void *ctx, const char *bytes, size_t len)
{
	weft__paraver_writer *w = ctx;
	rec r;
	int rc = weft__pv_sorted_rec(bytes, len, &r);

	if (rc == 0)
		weft__pv_emit_rec(w, &r);
	return rc;
}

/* The buffer of a time group. 0 or WEFT_ENOMEM. */
int weft__pv_group_alloc(weft__paraver_writer *w)
{
	if (w->group == NULL)
		w->group = malloc(GROUP_MAX * sizeof *w->group);
	return w->group != NULL ? 0 : weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET,
						  "paraver: out of memory (record group)");
}

/* The sort's statistics into ours. */
void weft__pv_sort_stats(weft__paraver_writer *w)
{
	weft__row_sort_stats s;

	weft__row_sorter_stats(w->sorter, &s);
	w->stats.sort_runs = s.runs;
}

/* Sort path: the header, the trace-start record, then the sorted records. */
int weft__pv_write_prv_sorted(weft__paraver_writer *w)
{
	int rc = weft__outbuf_init(&w->out, w->prv_fd, WEFT__OUTBUF_DEFAULT_SIZE);

	if (rc < 0 || (rc = weft__pv_put_header(w)) < 0)
		return rc;
	weft__pv_put_trace_start(w);
	if (w->sorter != NULL) {
		if ((rc = weft__pv_group_alloc(w)) < 0)
			return rc;
		rc = weft__row_sorter_finish(w->sorter, emit_record, w);
		weft__pv_flush_group(w);
		weft__pv_sort_stats(w);
		if (rc != 0)
			return rc < 0 ? rc : WEFT_EIO;
	}
	if (w->error != 0)
		return w->error;
	rc = weft__outbuf_flush(&w->out);
	weft__outbuf_destroy(&w->out);
	return rc;
}

/*
 * Nothing written yet and every record in the window: the exact header,
 * then the window in order (no placeholder: those still open never
 * closed, and make no record).
 */
int weft__pv_write_prv_collected(weft__paraver_writer *w)
{
	rec r;
	int rc = weft__outbuf_init(&w->out, w->prv_fd, WEFT__OUTBUF_DEFAULT_SIZE);

	if (rc < 0 || (rc = weft__pv_put_header(w)) < 0)
		return rc;
	weft__pv_put_trace_start(w);
	while (window_count(&w->win) > 0) {
		window_pop(&w->win, &r);
		weft__pv_write_record(w, &r);
	}
	if (w->error != 0)
		return w->error;
	rc = weft__outbuf_flush(&w->out);
	weft__outbuf_destroy(&w->out);
	return rc;
}
