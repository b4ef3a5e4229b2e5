/* SPDX-License-Identifier: MIT */
/*
 * outputs/paraver/paraver_writer.c - the Paraver writer's life cycle:
 * creating it, its failures, finishing (the .prv on one of its three
 * paths, then the .pcf and the .row) and freeing it. How the writer
 * works and which file holds what: paraver_internal.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "outputs/paraver/paraver_internal.h"

/* ---- Errors ------------------------------------------------------------------------ */

/* Remembers the first failure of a callback (they cannot return it). */
void weft__pv_fail(weft__paraver_writer *w, int status)
{
	if (w->error != 0)
		return;
	w->error = status;
	snprintf(w->error_text, sizeof w->error_text, "%s", weft_last_error());
}

/* Out of memory in a callback: message and status. */
void weft__pv_fail_nomem(weft__paraver_writer *w, const char *what)
{
	weft__pv_fail(w, weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET,
				     "paraver: out of memory (%s)", what));
}

/* ---- Finishing ---------------------------------------------------------------------------------- */

/*
 * Tasks without threads get one empty row (Paraver wants at least one
 * thread per task), and an empty trace gets one task.
 */
static int complete_objects(weft__paraver_writer *w)
{
	if (w->task_count == 0 && weft__pv_task_new(w, "(no streams)") == 0)
		return -1;
	for (size_t i = 0; i < w->task_count; i++) {
		if (w->tasks[i].threads > 0)
			continue;
		pv_track dummy;
		memset(&dummy, 0, sizeof dummy);
		if (weft__pv_row_new(w, &dummy, (uint32_t)i + 1, "(no streams)") != 0)
			return -1;
	}
	return 0;
}

/* Counts, the time base, the label of type 1 and the object warning. */
static int prepare(weft__paraver_writer *w)
{
	char text[160];
	uint64_t max_threads = 0;

	if (complete_objects(w) != 0)
		return -1;
	w->stats.start = w->have_time ? w->min_time : 0;
	w->stats.duration = w->have_time ? w->max_time - w->min_time : 0;
	w->stats.tasks = w->task_count;
	w->stats.rows = w->row_count;
	for (size_t i = 0; i < w->task_count; i++)
		if (w->tasks[i].threads > max_threads)
			max_threads = w->tasks[i].threads;
	w->stats.max_object = max_threads > w->task_count ? max_threads : w->task_count;
	if (w->stats.max_object > WEFT__PARAVER_MAX_OBJECT)
		snprintf(w->warning, sizeof w->warning,
			 "paraver: %llu tasks, up to %llu threads in a task: Paraver reads "
			 "object numbers above %u only when built with extended objects",
			 (unsigned long long)w->task_count, (unsigned long long)max_threads,
			 WEFT__PARAVER_MAX_OBJECT);
	else if (w->flows != NULL && (weft__flow_pairs_waiting(w->flows) > 0 ||
				      w->stats.comm_dropped > 0))
		snprintf(w->warning, sizeof w->warning,
			 "paraver: %llu message end(s) without their other end in the trace%s "
			 "(shown as events, with no communication line)",
			 (unsigned long long)(weft__flow_pairs_waiting(w->flows) +
					      w->stats.comm_dropped),
			 w->stats.comm_dropped > 0 ? " or past the bound of waiting ends" : "");
	snprintf(text, sizeof text, "Trace start: time 0 is %llu ns of the trace's clock (value)",
		 (unsigned long long)w->stats.start);
	return weft__pv_fixed_type(w, TYPE_TRACE_START, text);
}

/* The .prv on the path the records took. */
static int write_prv(weft__paraver_writer *w)
{
	switch (w->mode) {
	case MODE_COLLECT:
		return weft__pv_write_prv_collected(w);
	case MODE_SORT:
		return weft__pv_write_prv_sorted(w);
	default:
		return weft__pv_write_prv_direct(w);
	}
}

/* Counts and names first, then .prv, .pcf, .row. */
int weft__paraver_writer_finish(weft__paraver_writer *w)
{
	int rc;

	if (w->finished)
		return weft__error(WEFT_EINVAL, NULL, WEFT_NO_OFFSET,
				   "paraver: the writer is finished already");
	w->finished = 1;
	if (w->error == 0 && (w->mode == MODE_DIRECT || w->mode == MODE_REBUILD)) {
		weft__pv_direct_drain(w);
		if (w->error == 0 && (rc = weft__pv_vanish_all(w)) < 0)
			weft__pv_fail(w, rc);
	}
	if (w->error == 0 && prepare(w) != 0)
		weft__pv_fail_nomem(w, "objects");
	if (w->error != 0)
		return weft__error(w->error, NULL, WEFT_NO_OFFSET, "%s", w->error_text);
	rc = write_prv(w);
	if (rc == 0 && w->error != 0)
		rc = weft__error(w->error, NULL, WEFT_NO_OFFSET, "%s", w->error_text);
	if (rc == 0)
		rc = weft__pv_write_pcf(w);
	if (rc == 0)
		rc = weft__pv_write_row(w);
	return rc;
}

/* ---- Life cycle ------------------------------------------------------------------------------------ */

int weft__paraver_writer_create(int prv_fd, int pcf_fd, int row_fd, const char *tmpdir,
				weft__paraver_writer **out)
{
	weft__paraver_writer *w = calloc(1, sizeof *w);

	*out = NULL;
	if (w == NULL || (tmpdir != NULL && (w->tmpdir = strdup(tmpdir)) == NULL)) {
		free(w);
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET,
				   "paraver: out of memory (writer)");
	}
	w->prv_fd = prv_fd;
	w->pcf_fd = pcf_fd;
	w->row_fd = row_fd;
	w->log_fd = -1;
	w->budget = WEFT__PARAVER_SORT_BUDGET;
	w->window_bytes = WEFT__PARAVER_WINDOW;
	w->late_min = UINT64_MAX;
	w->time_high = UINT64_MAX;
	w->direct_ok = weft__pv_direct_possible(prv_fd);
	w->mode = w->direct_ok ? MODE_COLLECT : MODE_SORT;
	weft__pv_sink_init(w);
	*out = w;
	return 0;
}

/* The callbacks, bound to this writer. */
const weft__view_sink *weft__paraver_writer_sink(weft__paraver_writer *w)
{
	return &w->sink;
}

/* The sort is made at the first record: the budget can change until then. */
int weft__paraver_writer_set_sort_budget(weft__paraver_writer *w, uint64_t bytes)
{
	if (w->records_seen || w->finished)
		return weft__error(WEFT_EINVAL, NULL, WEFT_NO_OFFSET,
				   "paraver: the sort budget is set before the first record");
	w->budget = bytes;
	return 0;
}

/* The window is made at the first record: its size can change until then. */
int weft__paraver_writer_set_window(weft__paraver_writer *w, uint64_t bytes)
{
	if (w->records_seen || w->finished)
		return weft__error(WEFT_EINVAL, NULL, WEFT_NO_OFFSET,
				   "paraver: the window is set before the first record");
	w->window_bytes = bytes;
	w->mode = bytes > 0 && w->direct_ok ? MODE_COLLECT : MODE_SORT;
	return 0;
}

/* A copy of the counters (complete after finish). */
void weft__paraver_writer_stats(const weft__paraver_writer *w, weft__paraver_stats *out)
{
	*out = w->stats;
	out->comm_unmatched = w->flows != NULL ? weft__flow_pairs_waiting(w->flows) : 0;
}

/* The warning prepared by finish, if any. */
const char *weft__paraver_writer_warning(const weft__paraver_writer *w)
{
	return w->warning[0] != '\0' ? w->warning : NULL;
}

/* Frees the label table. */
static void labels_free(label_table *t)
{
	for (size_t i = 0; i < t->count; i++) {
		free(t->items[i].key);
		free(t->items[i].text);
	}
	free(t->items);
	free(t->by_key);
	free(t->by_number);
}

/* The direct path's thread, buffers and files. */
static void direct_free(weft__paraver_writer *w)
{
	if (w->bg_on)
		weft__bg_writer_finish(&w->bg);
	w->bg_on = 0;
	free(w->spare);
	weft__pv_log_close(w);
	weft__pv_window_free(&w->win);
	free(w->patches);
	free(w->vanish);
	free(w->index);
}

/* Everything the writer owns: sort (and its file), tracks, names, buffers. */
void weft__paraver_writer_free(weft__paraver_writer *w)
{
	if (w == NULL)
		return;
	direct_free(w);
	weft__row_sorter_free(w->sorter);
	for (size_t i = 0; i < w->track_cap; i++)
		free(w->tracks[i].stack);
	free(w->tracks);
	for (size_t i = 0; i < w->task_count; i++)
		free(w->tasks[i].name);
	free(w->tasks);
	for (size_t i = 0; i < w->row_count; i++)
		free(w->rows[i].name);
	free(w->rows);
	labels_free(&w->labels);
	free(w->group);
	weft__flow_pairs_free(w->flows);
	if (w->out.buf != NULL)
		weft__outbuf_destroy(&w->out);
	free(w->tmpdir);
	free(w);
}
