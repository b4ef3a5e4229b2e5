/* SPDX-License-Identifier: MIT */
/*
 * core/parts.c - an analysis over many streams on several threads.
 *
 * A trace and its cursors belong to one thread, so each thread opens the
 * trace again (weft__trace_reopen_part: ovni from what the trace's own
 * open read, core/metafs.c) and reads its part of the streams,
 * dealt by bytes as ranks deal them (weft__share_deal); or, for formats
 * whose streams share files that their open cut into pieces (ROSS), each
 * thread borrows the trace's data (weft__trace_borrow) and reads its
 * piece of every file (weft__pieces_run). A part's result
 * travels as a pack, the form ranks send (core/dist.c), and the caller
 * merges the packs in part order: one merge for threads and ranks, and a
 * result that does not depend on how many there were. While the parts
 * run, the calling thread shows their progress as the trace's (each
 * part publishes its counts from its handle's progress callback).
 */
#include <pthread.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/internal.h"

/* One thread's part: its streams, handle, result and status. */
typedef struct part_worker {
	weft_trace *origin;
	uint8_t *selected;      /* NULL: every stream, in pieces */
	const uint32_t *groups; /* the deal's groups of streams (NULL: none) */
	int index;              /* the part's number, in part order */
	int pieces;             /* > 0: the part reads piece `index` of that many */
	weft__part_fn compute;  /* a packed result; or: */
	weft__part_live_fn live; /* a result handed on while it runs */
	weft__part_end_fn end;  /* optional: called last, whatever happened */
	void *arg;
	weft_trace *handle;
	size_t open_diags; /* diagnostics of opening, also in the origin */
	weft__pack result;
	int rc;
	weft__error_copy error; /* the part's error: errors are per thread */
	pthread_t thread;
	weft__progress_cell progress; /* published by the part's thread */
} part_worker;

static void *part_main(void *arg)
{
	part_worker *w = arg;
	/* A part that borrows the trace got its handle before it started
	 * (start_parts, which kept the error when it could not); a part of
	 * streams checks that their files are still the size the table says,
	 * as a copy replayed from the open's tape does; else the part opens
	 * the trace again. */
	int failed_before = w->rc < 0;
	if (w->handle == NULL && !failed_before)
		w->rc = weft__trace_reopen_part(w->origin, w->selected, &w->handle);
	else if (!failed_before && w->pieces == 0)
		w->rc = weft__trace_check_sizes(w->handle, w->selected, 0);
	if (w->rc == 0) {
		weft_trace_set_progress(w->handle, weft__progress_cell_publish, &w->progress,
					10 * 1000 * 1000);
		w->open_diags = weft_trace_diag_count(w->handle);
		if (w->live != NULL)
			w->rc = w->live(w->handle, w->selected, w->index, w->arg);
		else
			w->rc = w->compute(w->handle, w->selected, &w->result, w->arg);
		if (w->rc == 0 && w->result.failed)
			w->rc = weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	}
	if (w->rc < 0 && !failed_before)
		weft__error_save(&w->error, w->rc);
	if (w->end != NULL)
		w->end(w->arg, w->index, w->rc);
	weft__progress_cell_finish(&w->progress);
	return NULL;
}

/* The progress cells of the parts (their counts shown by the caller). */
static weft__progress_cells part_cells(const part_worker *w, int parts)
{
	return (weft__progress_cells){ w != NULL ? &w[0].progress : NULL, sizeof *w,
				       w != NULL ? parts : 0 };
}

/*
 * 1 when a stream is read without the bytes of the others: a file of its
 * own (ovni, Pallas, OTF2) or its own packets of one file (Heph: top of
 * a 2 GB trace of 8 streams took 4.5 s on one thread, 3.5-4.4 s on two,
 * each thread scanning the file again when it opens it). Not ROSS, whose
 * streams are read in one pass over the files they share.
 */
static int streams_read_alone(const weft_trace *trace)
{
	return !weft_trace_shared_files(trace) && !weft_trace_file_order_default(trace);
}

/*
 * Bytes a thread must have to read for the automatic choice to start it,
 * for light work (WEFT__WORK_LIGHT: counting, checking): a base, and a
 * share for each stream of the trace, since each thread opens the whole
 * trace again (replayed from the open's tape: about 80 us of CPU a stream
 * with the thread's set-up, the time `top` takes to read 32-40 KB). A
 * trace of many small streams does not pay that back: 4096 streams of 16
 * KiB, `top` 0.44-0.53 s on one thread, 0.65-0.74 s on two; of 64 KiB,
 * 0.88-1.02 s against 0.85-1.07 s (docs/SCALING.md). Heavy work
 * (WEFT__WORK_HEAVY: profiles, conversions, dumps, sorting) does about 8
 * times more per byte, so a thread pays back 8 times fewer: `profile` of
 * the 16 KiB streams, 2.83-3.27 s on one thread, 1.97-2.40 s on two.
 * Threads that borrow the trace instead (readers_share_data: ovni, OTF2,
 * ROSS) cost nothing per stream: the bytes alone decide (`top` of the
 * 16 KiB streams on two threads 0.42 s, against 0.50 s on one).
 */
#define BYTES_PER_THREAD (32ull << 20)
#define BYTES_PER_STREAM (32ull << 10)
#define HEAVY_FACTOR 8
#define AUTO_THREADS_MAX 8

long weft__threads_worth(uint64_t bytes, size_t trace_streams, long cores, weft__work work)
{
	long n = cores < 1 ? 1 : cores < AUTO_THREADS_MAX ? cores : AUTO_THREADS_MAX;
	uint64_t per_thread = BYTES_PER_THREAD + (uint64_t)trace_streams * BYTES_PER_STREAM;
	if (work == WEFT__WORK_HEAVY)
		per_thread /= HEAVY_FACTOR;
	if ((uint64_t)n > bytes / per_thread)
		n = (long)(bytes / per_thread);
	return n > 1 ? n : 1;
}

int weft__parts_threads(const weft_trace *trace, const uint8_t *among, int asked,
			weft__work work)
{
	size_t streams = 0;
	uint64_t bytes = 0;
	const char *file = NULL;
	int shared = weft_trace_shared_files(trace);
	for (size_t i = 0; i < trace->stream_count; i++) {
		if (among != NULL && !among[i])
			continue;
		streams++;
		/* streams that share a file count its bytes once (they come
		 * file by file) */
		const char *f = trace->streams[i].file;
		if (!shared || file == NULL || f == NULL || strcmp(f, file) != 0)
			bytes += trace->streams[i].file_size;
		file = f;
	}
	long n = asked > 0 ? asked : trace->options.threads;
	if (n <= 0)
		n = weft__threads_from_environment();
	/*
	 * Streams that share their files (ROSS), for work that does not read
	 * them in pieces (weft__pieces_run: top, info, check, profile and
	 * summary do): each thread reads every file for its own streams, which
	 * only heavy work pays back (`profile` of the 524 MB run of
	 * bench/ross_bench.sh shared so, when each thread also scanned the
	 * files again: 6.17 s on one thread, 3.78 s on two; `top`: 1.03 s and
	 * 1.14 s).
	 */
	size_t opened_again = trace->backend->readers_share_data ? 0 : trace->stream_count;
	if (n <= 0 && (streams_read_alone(trace) || work == WEFT__WORK_HEAVY))
		n = weft__threads_worth(bytes, opened_again, sysconf(_SC_NPROCESSORS_ONLN), work);
	if ((size_t)n > streams)
		n = (long)streams;
	return n > 1 ? (int)n : 1;
}

/*
 * Pieces of the files on threads: each thread borrows the trace's data
 * (no open again, so no cost per stream) and reads its piece of every
 * file, so the bytes of the files are what counts.
 */
int weft__pieces_threads(const weft_trace *trace, int asked, weft__work work)
{
	const weft__dist_open_hooks *h = trace->backend->dist_open;
	size_t most = h != NULL && h->thread_pieces != NULL && weft__dist_pieces(trace) == 0
		      ? h->thread_pieces(trace) : 0;
	if (most < 2)
		return 1;
	long n = asked > 0 ? asked : trace->options.threads;
	if (n <= 0)
		n = weft__threads_from_environment();
	if (n <= 0)
		n = weft__threads_worth(trace->progress.data_bytes, 0,
					sysconf(_SC_NPROCESSORS_ONLN), work);
	if ((size_t)n > most)
		n = (long)most;
	return n > 1 ? (int)n : 1;
}

/* Takes a finished part's diagnostics and progress; `rc`, else its error. */
static int take_part_diags(weft_trace *trace, part_worker *w, int rc)
{
	if (w->handle != NULL) {
		for (size_t i = w->open_diags; i < weft_trace_diag_count(w->handle); i++)
			weft__trace_diag_copy(trace, w->handle, i);
		weft__progress_add(trace, &w->handle->progress);
	}
	if (rc < 0)
		return rc;
	return w->rc < 0 ? weft__error_raise(&w->error) : 0;
}

/* Takes a finished part: its diagnostics and progress, then its result. */
static int take_part(weft_trace *trace, part_worker *w, int rc,
		     weft__dist_merge_fn merge, void *ctx)
{
	rc = take_part_diags(trace, w, rc);
	if (rc < 0)
		return rc;
	weft__unpack u = { .data = w->result.data, .len = w->result.len };
	rc = merge(ctx, &u);
	if (rc == 0 && u.bad)
		rc = weft__error(WEFT_EFORMAT, NULL, WEFT_NO_OFFSET,
				 "a thread's result does not parse (a bug)");
	return rc;
}

/* Parts that run while their caller takes what they hand on. */
struct weft__parts_live {
	weft_trace *trace;
	part_worker *w;
	int started;
	uint64_t events, bytes; /* the trace's counts before the parts */
	int rc;                 /* of starting them */
};

/* Starts the threads of `live`'s parts; their number in live->started. */
static int start_parts(weft__parts_live *live, const uint8_t *among, int threads,
		       const part_worker *model)
{
	weft_trace *trace = live->trace;
	live->events = trace->progress.events;
	live->bytes = __atomic_load_n(&trace->progress.bytes, __ATOMIC_RELAXED);
	live->w = calloc((size_t)threads, sizeof *live->w);
	if (live->w == NULL)
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	int rc = 0;
	for (; live->started < threads; live->started++) {
		part_worker *p = &live->w[live->started];
		*p = *model;
		p->index = live->started;
		/* A handle that borrows the trace copies it here: the copy must
		 * not race with this thread's writes (the progress) once the
		 * parts run. */
		if (model->pieces > 0 || trace->backend->readers_share_data) {
			p->rc = weft__trace_borrow(trace, model->pieces > 0 ? (size_t)p->index : 0,
						   (size_t)model->pieces, &p->handle);
			if (p->rc < 0)
				weft__error_save(&p->error, p->rc);
		}
		p->selected = model->pieces > 0 ? NULL
			      : malloc(trace->stream_count ? trace->stream_count : 1);
		if ((model->pieces == 0 &&
		     (p->selected == NULL ||
		      weft__share_deal_groups(trace, among, model->groups, p->index, threads,
					      p->selected) < 0)) ||
		    pthread_create(&p->thread, NULL, part_main, p) != 0) {
			free(p->selected);
			weft_trace_free(p->handle);
			rc = weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET,
					 "cannot start a thread");
			break;
		}
	}
	weft__trace_threads_note(trace, live->started);
	return rc;
}

/* Joins the parts, takes them in part order (merged with `merge` when set). */
static int join_parts(weft__parts_live *live, int rc, weft__dist_merge_fn merge, void *ctx)
{
	weft_trace *trace = live->trace;
	trace->progress.events = live->events;
	__atomic_store_n(&trace->progress.bytes, live->bytes, __ATOMIC_RELAXED);
	for (int i = 0; i < live->started; i++) {
		part_worker *w = &live->w[i];
		pthread_join(w->thread, NULL);
		if (merge != NULL)
			rc = take_part(trace, w, rc, merge, ctx);
		else
			rc = take_part_diags(trace, w, rc);
		weft_trace_free(w->handle);
		weft__pack_release(&w->result);
		free(w->selected);
	}
	free(live->w);
	return rc;
}

int weft__parts_run(weft_trace *trace, const uint8_t *among, int threads,
		    weft__part_fn compute, void *arg, weft__dist_merge_fn merge, void *ctx)
{
	weft__parts_live live = { .trace = trace };
	part_worker model = { .origin = trace, .compute = compute, .arg = arg };
	int rc = start_parts(&live, among, threads, &model);
	weft__progress_cells cells = part_cells(live.w, live.started);
	weft__progress_show_cells(trace, &cells);
	return join_parts(&live, rc, merge, ctx);
}

int weft__pieces_run(weft_trace *trace, int threads, weft__part_fn compute, void *arg,
		     weft__dist_merge_fn merge, void *ctx)
{
	weft__parts_live live = { .trace = trace };
	part_worker model = { .origin = trace, .pieces = threads, .compute = compute,
			      .arg = arg };
	int rc = start_parts(&live, NULL, threads, &model);
	weft__progress_cells cells = part_cells(live.w, live.started);
	weft__progress_show_cells(trace, &cells);
	return join_parts(&live, rc, merge, ctx);
}

int weft__parts_start(weft_trace *trace, const uint8_t *among, const uint32_t *groups,
		      int threads, weft__part_live_fn run, weft__part_end_fn end, void *arg,
		      weft__parts_live **out)
{
	weft__parts_live *live = calloc(1, sizeof *live);
	*out = live;
	if (live == NULL)
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	live->trace = trace;
	part_worker model = { .origin = trace, .groups = groups, .live = run, .end = end,
			      .arg = arg };
	int rc = start_parts(live, among, threads, &model);
	live->rc = rc;
	return rc < 0 ? rc : live->started;
}

void weft__parts_show_progress(weft__parts_live *live)
{
	if (live != NULL) {
		weft__progress_cells cells = part_cells(live->w, live->started);
		weft__progress_show_cells_once(live->trace, &cells, live->events, live->bytes);
	}
}

int weft__parts_finish(weft__parts_live *live)
{
	if (live == NULL)
		return 0;
	int rc = join_parts(live, live->rc, NULL, NULL);
	free(live);
	return rc;
}
