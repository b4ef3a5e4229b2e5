/* SPDX-License-Identifier: MIT */
/*
 * outputs/chrome/chrome_shared.c - the view mode on streams shared among
 * threads, byte for byte the output of one thread.
 *
 * One thread writes the events in the merged order of the streams, and
 * three things in them depend on that order across streams: the pids and
 * tids of the tracks (fresh numbers handed out on first use), the flow
 * ids (the n-th send and the n-th receive of a key), and the origin of
 * ts (the first time of all). So:
 *   - the origin is found first, by reading the merged streams on this
 *     thread until the view gives its first time (a few events);
 *   - each part (outputs/keyed_runs.h: a thread over its share of the
 *     streams, in its own merged order) runs a view of its own into a
 *     writer in part mode, which writes records, each keyed by the
 *     (time, stream) of the event the view was at:
 *       D  a track the part's view declared (kind, stream, channel or
 *          counter name; processes are left to their threads),
 *       L  an event without its head: its track (the part's number),
 *          its phase, then its text from ts on,
 *       F  the flow event of a message end: track, time, flow key, end;
 *     records of the view's finish (spans never closed) are keyed after
 *     every event, in stream order, as one view closes them;
 *   - the merge of the parts' runs gives the records in the merged order
 *     of all streams, and this thread turns them into the output: a D
 *     declares the track on the output's view (weft__view_declare(),
 *     which numbers it and writes its name event as one view would, at
 *     the same place), an L gets the head of its track, an F its flow id
 *     from the output's view (weft__view_flow_id()).
 * The formatting of the events, most of the work, is done by the parts.
 *
 * Not shared (the caller converts on one thread): a time window (the view
 * opens it at the first event of all streams), virtual time, Heph's
 * compatible bytes, traces whose streams share files.
 *
 * Record layout (native byte order: they never leave the process):
 *   D: 'D', kind (1), part's track id (4), stream (4), name (the rest)
 *   L: 'L', part's track id (4), phase (1), text (the rest)
 *   F: 'F', part's track id (4), time (8), flow key (8), end (1)
 */
#include <stdlib.h>
#include <string.h>

#include "outputs/chrome/chrome_internal.h"

/* ---- Part mode: the records ---------------------------------------------------- */

/* The key of the records of the view's finish: after every event's. */
#define FINISH_STREAM 0x80000000u

/* Sets the key of what the view writes next: the event it is at. */
static void part_key_finishing(chrome_part *pt, const weft__view_track *t)
{
	if (pt->finishing) {
		pt->time = UINT64_MAX;
		pt->stream = FINISH_STREAM | (uint32_t)t->stream;
	}
}

void weft__chrome_part_line_end(weft__chrome_writer *w)
{
	chrome_part *pt = w->part;

	if (pt->rc == 0)
		pt->rc = weft__keyed_run_line(pt->runs, pt->run, &w->out, pt->time, pt->stream,
					      pt->start);
}

void weft__chrome_part_declare(weft__chrome_writer *w, const weft__view_track *t)
{
	chrome_part *pt = w->part;
	uint8_t kind = (uint8_t)t->kind;
	uint32_t id = t->id, stream = (uint32_t)t->stream;
	const char *name = t->kind == WEFT__TRACK_THREAD ? "" : t->name;

	if (t->kind == WEFT__TRACK_PROCESS)
		return; /* declared with its first thread by the merge */
	part_key_finishing(pt, t);
	pt->start = w->out.len;
	char *p = weft__outbuf_reserve(&w->out, 10);
	p[0] = 'D';
	p[1] = (char)kind;
	memcpy(p + 2, &id, 4);
	memcpy(p + 6, &stream, 4);
	weft__outbuf_commit(&w->out, p + 10);
	weft__outbuf_put(&w->out, name, strlen(name));
	weft__chrome_part_line_end(w);
}

char *weft__chrome_part_head(weft__chrome_writer *w, char *p, const weft__view_track *t,
			     char ph)
{
	chrome_part *pt = w->part;
	uint32_t id = t->id;

	part_key_finishing(pt, t);
	pt->start = (size_t)(p - w->out.buf);
	p[0] = 'L';
	memcpy(p + 1, &id, 4);
	p[5] = ph;
	return p + 6;
}

void weft__chrome_part_flow(weft__chrome_writer *w, const weft__view_track *t,
			    uint64_t time, const weft__view_item *it)
{
	chrome_part *pt = w->part;
	uint32_t id = t->id;
	char *p = weft__outbuf_reserve(&w->out, 22);

	part_key_finishing(pt, t);
	pt->start = w->out.len;
	p[0] = 'F';
	memcpy(p + 1, &id, 4);
	memcpy(p + 5, &time, 8);
	memcpy(p + 13, &it->flow_key, 8);
	p[21] = (char)it->flow_end;
	weft__outbuf_commit(&w->out, p + 22);
	weft__chrome_part_line_end(w);
}

/* ---- The origin ------------------------------------------------------------------ */

/* A sink that keeps the first time the view gives. */
typedef struct first_time {
	int found;
	uint64_t time;
} first_time;

static void first_at(void *ctx, uint64_t time)
{
	first_time *f = ctx;

	if (!f->found) {
		f->found = 1;
		f->time = time;
	}
}

static void probe_track(void *ctx, const weft__view_track *t)
{
	(void)ctx;
	(void)t;
}

static void probe_span(void *ctx, const weft__view_track *t, uint64_t time,
		       const weft__view_item *it)
{
	(void)t;
	(void)it;
	first_at(ctx, time);
}

static void probe_complete(void *ctx, const weft__view_track *t, uint64_t time,
			   uint64_t end, const weft__view_item *it)
{
	(void)t;
	(void)end;
	(void)it;
	first_at(ctx, time);
}

static void probe_counter(void *ctx, const weft__view_track *t, uint64_t time, double value)
{
	(void)t;
	(void)value;
	first_at(ctx, time);
}

/*
 * The first time the view of the merged streams gives (what one writer
 * takes its origin from), read on this thread: the events up to it. The
 * diagnostics of that reading are forgotten (the parts read it again).
 */
static int find_first_time(weft_trace *trace, const weft__chrome_shared *job, first_time *f)
{
	weft__view_sink sink = { f, probe_track, probe_span, probe_span, probe_complete,
				 probe_span, probe_counter };
	size_t diags = weft_trace_diag_count(trace);
	uint64_t dropped = trace->diags_dropped;
	weft_cursor *cursor = NULL;
	weft__view *view = NULL;
	const weft_event *ev;
	weft__view_options vo = job->view;

	vo.no_args = 1;
	int rc = weft__cursor_create_selected(trace, job->filter, job->among, &cursor);
	if (rc == 0)
		rc = weft__view_create(trace, &vo, &sink, &view);
	while (rc == 0 && !f->found && (rc = weft_cursor_next(cursor, &ev)) > 0)
		weft__view_event(view, ev);
	weft__view_free(view);
	weft_cursor_free(cursor);
	weft__trace_diags_forget(trace, diags, dropped);
	return rc < 0 ? rc : 0;
}

/* ---- The parts -------------------------------------------------------------------- */

/* What the parts share, and what each leaves for the merge. */
typedef struct shared_chrome {
	weft__chrome_shared *job;
	weft__keyed_runs *runs;
	first_time first;
	weft__view_stats *stats;          /* per part */
	weft__chrome_stats *chrome_stats; /* per part */
	weft__view_too_deep_timeline **too_deep; /* per part (channels copied) */
	size_t *too_deep_count;
	weft__parts_live *live;
	/* The merge: per part, its track ids to the output's */
	weft__chrome_writer *out;
	weft__view *view;
	uint32_t **map;
	uint32_t *map_cap;
} shared_chrome;

/* A part's writer: part mode, the origin set, the run's chunks as its buffer. */
static int part_writer_create(weft_trace *handle, shared_chrome *sc, int part,
			      chrome_part *pt, weft__chrome_writer **out)
{
	int rc = weft__chrome_writer_create(handle, WEFT__OUTBUF_GROW, NULL, out);

	if (rc < 0)
		return rc;
	weft__outbuf_destroy(&(*out)->out); /* the run's chunks are its buffers */
	(*out)->part = pt;
	*pt = (chrome_part){ .runs = sc->runs, .run = part };
	if (sc->first.found) {
		(*out)->origin = weft__chrome_time_origin(sc->first.time);
		(*out)->origin_set = 1;
	}
	return 0;
}

/* The part's timelines that lost spans, kept past its view (channels copied:
 * the merge interns them in the output's view once the parts are done). */
static int keep_too_deep(shared_chrome *sc, int part, const weft__view *view)
{
	size_t n = weft__view_too_deep(view, NULL, 0);
	weft__view_too_deep_timeline *t = n ? calloc(n, sizeof *t) : NULL;

	if (n == 0)
		return 0;
	if (t == NULL)
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	weft__view_too_deep(view, t, n);
	sc->too_deep[part] = t;
	sc->too_deep_count[part] = n;
	int lost = 0;
	for (size_t i = 0; i < n; i++)
		if (t[i].channel != NULL)
			lost |= (t[i].channel = strdup(t[i].channel)) == NULL;
	return lost ? weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory") : 0;
}

/*
 * One part: its share's events through a view of its own into a writer
 * in part mode, keyed by event; then the view's finish. Runs on the
 * part's thread, with its handle.
 */
static int chrome_part_run(weft_trace *handle, const uint8_t *selected, int part, void *arg)
{
	shared_chrome *sc = arg;
	chrome_part pt;
	weft__chrome_writer *w = NULL;
	weft__view *view = NULL;
	weft_cursor *cursor = NULL;
	const weft_event *ev;
	int rc = part_writer_create(handle, sc, part, &pt, &w);

	if (rc == 0)
		rc = weft__view_create(handle, &sc->job->view, weft__chrome_writer_sink(w), &view);
	if (rc == 0)
		rc = weft__cursor_create_selected(handle, sc->job->filter, selected, &cursor);
	if (rc == 0)
		rc = weft__keyed_run_begin(sc->runs, part, &w->out);
	while (rc == 0 && (rc = weft_cursor_next(cursor, &ev)) > 0) {
		pt.time = ev->time;
		pt.stream = ev->stream;
		weft__view_event(view, ev);
		rc = pt.rc;
	}
	if (rc == 0) {
		pt.finishing = 1;
		weft__view_finish(view);
		rc = pt.rc;
	}
	if (rc == 0 && (w->out.error != 0 || w->error != 0)) /* its buffer, its tracks */
		rc = weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET,
				 "out of memory for the output's events");
	if (w != NULL) {
		int end_rc = weft__keyed_run_end(sc->runs, part, &w->out, rc < 0);
		rc = rc < 0 ? rc : end_rc;
		weft__chrome_writer_stats(w, &sc->chrome_stats[part]);
	}
	if (view != NULL) {
		weft__view_stats_get(view, &sc->stats[part]);
		if (rc == 0)
			rc = keep_too_deep(sc, part, view);
	}
	weft_cursor_free(cursor);
	weft__view_free(view);
	weft__chrome_writer_free(w);
	return rc;
}

/* Called last on each part's thread: a part that never began ends its run. */
static void chrome_part_end(void *arg, int part, int rc)
{
	(void)rc;
	weft__keyed_run_close(((shared_chrome *)arg)->runs, part);
}

/* ---- The merge ---------------------------------------------------------------------- */

/* The output's track of part `run`'s track `id`, 0 when not declared. */
static uint32_t output_track(const shared_chrome *sc, int run, uint32_t id)
{
	return id < sc->map_cap[run] ? sc->map[run][id] : 0;
}

/* Part `run`'s track `id` is the output's `track`; -1 without memory. */
static int map_track(shared_chrome *sc, int run, uint32_t id, uint32_t track)
{
	if (id >= sc->map_cap[run]) {
		uint32_t cap = sc->map_cap[run] ? sc->map_cap[run] : 64;
		while (cap <= id)
			cap *= 2;
		uint32_t *m = realloc(sc->map[run], cap * sizeof *m);
		if (m == NULL)
			return -1;
		memset(m + sc->map_cap[run], 0, (cap - sc->map_cap[run]) * sizeof *m);
		sc->map[run] = m;
		sc->map_cap[run] = cap;
	}
	sc->map[run][id] = track;
	return 0;
}

static int bad_record(void)
{
	return weft__error(WEFT_EINVAL, NULL, WEFT_NO_OFFSET,
			   "internal error: a part wrote a record the merge cannot read");
}

/* One record of a part, in the merged order, into the output. */
static int merge_record(void *ctx, int run, const char *rec, size_t len)
{
	shared_chrome *sc = ctx;
	uint32_t id, stream, track;
	uint64_t time, key;

	if (len < 6)
		return bad_record();
	memcpy(&id, rec + 1, 4);
	if (rec[0] == 'D') {
		if (len < 10)
			return bad_record();
		memcpy(&id, rec + 2, 4);
		memcpy(&stream, rec + 6, 4);
		const weft__view_track *t = weft__view_declare(
			sc->view, (weft__view_track_kind)(uint8_t)rec[1], stream, rec + 10, len - 10);
		if (t == NULL || map_track(sc, run, id, t->id) < 0)
			return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	} else if ((track = output_track(sc, run, id)) == 0) {
		return bad_record();
	} else if (rec[0] == 'L') {
		weft__chrome_put_part_line(sc->out, track, rec[5], rec + 6, len - 6);
	} else if (rec[0] == 'F' && len == 22) {
		memcpy(&time, rec + 5, 8);
		memcpy(&key, rec + 13, 8);
		uint64_t flow = weft__view_flow_id(sc->view, key, rec[21]);
		if (flow != 0)
			weft__chrome_put_flow(sc->out, weft__view_track_get(sc->view, track), time,
					      flow, rec[21]);
	} else {
		return bad_record();
	}
	return weft__chrome_writer_failed(sc->out)
	       ? weft__error(WEFT_EIO, NULL, WEFT_NO_OFFSET, "cannot write the output") : 0;
}

static void merge_progress(void *ctx)
{
	weft__parts_show_progress(((shared_chrome *)ctx)->live);
}

/*
 * The channels of the parts' timelines that lost spans, copied by the
 * parts, now the output view's (its strings outlive the parts). 1 when
 * one could not be kept.
 */
static int intern_channels(shared_chrome *sc, int parts)
{
	int lost = 0;

	for (int i = 0; i < parts; i++)
		for (size_t k = 0; k < sc->too_deep_count[i]; k++) {
			char *copy = (char *)sc->too_deep[i][k].channel;
			if (copy == NULL)
				continue;
			sc->too_deep[i][k].channel = weft__view_intern(sc->view, copy, strlen(copy));
			lost |= sc->too_deep[i][k].channel == NULL;
			free(copy);
		}
	return lost;
}

/* The parts' counts added into the job and the output's writer. */
static int add_results(shared_chrome *sc, int parts)
{
	weft__chrome_shared *job = sc->job;
	weft__view_stats own;
	size_t n = 0;

	weft__view_stats_get(sc->view, &own);
	int lost = intern_channels(sc, parts);
	for (int i = 0; i < parts; i++) {
		weft__view_stats_add(&job->stats, &sc->stats[i]);
		sc->out->stats.events += sc->chrome_stats[i].events;
		sc->out->stats.before_origin += sc->chrome_stats[i].before_origin;
		sc->out->stats.beyond_exact += sc->chrome_stats[i].beyond_exact;
		n += sc->too_deep_count[i];
	}
	job->stats.tracks = own.tracks;
	job->too_deep = n ? calloc(n, sizeof *job->too_deep) : NULL;
	if (lost || (n > 0 && job->too_deep == NULL))
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	/* each part's in stream order; together, in stream order */
	for (int i = 0; i < parts; i++)
		for (size_t k = 0; k < sc->too_deep_count[i]; k++) {
			size_t at = job->too_deep_count++;
			while (at > 0 && job->too_deep[at - 1].stream > sc->too_deep[i][k].stream) {
				job->too_deep[at] = job->too_deep[at - 1];
				at--;
			}
			job->too_deep[at] = sc->too_deep[i][k];
		}
	return 0;
}

static void shared_free(shared_chrome *sc, int parts)
{
	for (int i = 0; sc->map != NULL && i < parts; i++)
		free(sc->map[i]);
	for (int i = 0; sc->too_deep != NULL && i < parts; i++)
		free(sc->too_deep[i]); /* their channels: add_results() */
	free(sc->map);
	free(sc->map_cap);
	free(sc->too_deep);
	free(sc->too_deep_count);
	free(sc->stats);
	free(sc->chrome_stats);
	weft__keyed_runs_free(sc->runs);
}

int weft__chrome_convert_shared(weft_trace *trace, weft__chrome_writer *w, weft__view *view,
				weft__chrome_shared *job)
{
	int parts = job->parts;
	size_t np = (size_t)parts;
	shared_chrome sc = { .job = job, .out = w, .view = view };

	memset(&job->stats, 0, sizeof job->stats);
	job->too_deep = NULL;
	job->too_deep_count = 0;
	job->write_failed = 0;
	sc.runs = weft__keyed_runs_create(parts);
	sc.stats = calloc(np, sizeof *sc.stats);
	sc.chrome_stats = calloc(np, sizeof *sc.chrome_stats);
	sc.too_deep = calloc(np, sizeof *sc.too_deep);
	sc.too_deep_count = calloc(np, sizeof *sc.too_deep_count);
	sc.map = calloc(np, sizeof *sc.map);
	sc.map_cap = calloc(np, sizeof *sc.map_cap);
	if (sc.runs == NULL || sc.stats == NULL || sc.chrome_stats == NULL ||
	    sc.too_deep == NULL || sc.too_deep_count == NULL || sc.map == NULL ||
	    sc.map_cap == NULL) {
		shared_free(&sc, parts);
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	}
	int rc = find_first_time(trace, job, &sc.first);
	if (rc < 0) {
		shared_free(&sc, parts);
		return rc;
	}
	if (sc.first.found) {
		w->origin = weft__chrome_time_origin(sc.first.time);
		w->origin_set = 1;
	}
	int started = weft__parts_start(trace, job->among, parts, chrome_part_run,
					chrome_part_end, &sc, &sc.live);
	int write_rc = 0;
	weft__error_copy write_error, start_error;
	if (started < 0) {
		weft__error_save(&start_error, started);
		weft__keyed_runs_abort(sc.runs);
	} else {
		write_rc = weft__keyed_runs_merge_each(sc.runs, merge_record, &sc, merge_progress,
						       &sc);
		if (write_rc < 0)
			weft__error_save(&write_error, write_rc);
	}
	int read_rc = weft__parts_finish(sc.live);
	if (started < 0 && read_rc == 0) /* no part said more */
		read_rc = weft__error_raise(&start_error);
	rc = add_results(&sc, parts);
	shared_free(&sc, parts);
	if (write_rc < 0) {
		job->write_failed = 1;
		return weft__error_raise(&write_error);
	}
	return read_rc < 0 ? read_rc : rc;
}
