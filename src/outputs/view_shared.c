/* SPDX-License-Identifier: MIT */
/*
 * outputs/view_shared.c - a viewer conversion on streams shared among
 * threads, and among ranks ("Ranks" below), byte for byte the output of
 * one thread (outputs/view_shared.h).
 *
 * One thread converts the events in the merged order of the streams, and
 * what depends on that order across streams is numbered by one view for
 * the whole output, in the merged order: the tracks (pids and tids
 * handed out on first use, and the declarations written there) and the
 * flow ids (the n-th send and the n-th receive of a key). So:
 *   - the first time of all (Chrome's origin of ts) is found first, when
 *     the output wants it, by reading the merged streams on this thread
 *     until the view gives its first time (a few events);
 *   - each part (outputs/keyed_runs.h: a thread over its share of the
 *     streams, in its own merged order) runs a view of its own into the
 *     output's part sink, which writes records, each keyed by the
 *     (time, stream) of the event the view was at; a track the part's
 *     view declares is a 'D' record (kind, stream, channel or counter
 *     name); records of the view's finish (spans never closed) are keyed
 *     after every event, in stream order, as one view closes them;
 *   - the merge of the parts' runs gives the records in the merged order
 *     of all streams: a 'D' declares the track on the output's view
 *     (weft__view_declare(), which numbers it and declares it to the
 *     output as one view would, at the same place); every other record
 *     goes to the output with its track made the output's.
 *
 * Not shared (the caller converts on one thread): a time window (the view
 * opens it at the first event of all streams), virtual time, traces whose
 * streams share files or are read in file order.
 *
 * The 'D' record (native byte order: between ranks of one program):
 *   'D', kind (1), track (4), stream (4), name (the rest)
 * where track is the part's view id * its rank's parts + the part.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "outputs/view_shared.h"

/* ---- A part's records ------------------------------------------------------------ */

void weft__view_part_record_end(weft__view_part *p)
{
	if (p->rc == 0)
		p->rc = weft__keyed_run_line(p->runs, p->run, p->out, p->time, p->stream,
					     p->start);
}

void weft__view_part_declare(weft__view_part *p, const weft__view_track *t)
{
	uint8_t kind = (uint8_t)t->kind;
	uint32_t id = weft__view_part_track(p, t), stream = (uint32_t)t->stream;
	const char *name = t->kind == WEFT__TRACK_THREAD ? "" : t->name;

	if (t->kind == WEFT__TRACK_PROCESS)
		return; /* declared with its first thread by the merge */
	weft__view_part_key(p, t);
	p->start = p->out->len;
	char *b = weft__outbuf_reserve(p->out, 10);
	b[0] = 'D';
	b[1] = (char)kind;
	memcpy(b + 2, &id, 4);
	memcpy(b + 6, &stream, 4);
	weft__outbuf_commit(p->out, b + 10);
	weft__outbuf_put(p->out, name, strlen(name));
	weft__view_part_record_end(p);
}

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
static int find_first_time(weft_trace *trace, const weft__view_share_ops *ops,
			   const weft__view_shared *job, first_time *f)
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
	if (rc == 0 && ops->part_event == NULL)
		rc = weft__view_create(trace, &vo, &sink, &view);
	while (rc == 0 && !f->found && (rc = weft_cursor_next(cursor, &ev)) > 0) {
		if (view != NULL)
			weft__view_event(view, ev);
		else
			first_at(f, ev->time); /* parts that take events: the first */
	}
	weft__view_free(view);
	weft_cursor_free(cursor);
	weft__trace_diags_forget(trace, diags, dropped);
	return rc < 0 ? rc : 0;
}

/* ---- The parts -------------------------------------------------------------------- */

/* What the parts share, what each leaves, and what the merge keeps. */
typedef struct shared_view {
	weft__view_shared *job;
	weft__keyed_runs *runs;
	int parts;                        /* this process's: runs 0 .. parts - 1 */
	int run_count;                    /* rank 0 of ranks: + one per other rank */
	first_time first;
	weft__view_stats *stats;          /* per part */
	uint64_t (*counts)[WEFT__VIEW_SHARE_COUNTS]; /* per part: the output's */
	weft__view_too_deep_timeline **too_deep; /* per part (channels copied) */
	size_t *too_deep_count;
	weft__parts_live *live;
	/* The merge: per run, its track ids to the output's */
	const weft__view_share_ops *ops;
	void *out;
	weft__view *view;
	uint32_t **map;
	uint32_t *map_cap;
	/* Ranks (below) */
	const weft_dist *dist;
	size_t *lens;                     /* per rank, for the gathers */
	uint8_t *remote_ended;            /* rank 0: per rank, its last chunk came */
	struct outbox *outbox;            /* the other ranks: chunks for rank 0 */
} shared_view;

/* A part's sink from the output, writing into run `part`. */
static int part_sink_create(weft_trace *handle, shared_view *sc, int part,
			    const uint8_t *selected, weft__view_part *pt, void **state,
			    weft__view_sink *sink)
{
	*pt = (weft__view_part){ .runs = sc->runs, .run = part, .selected = selected,
				 .stride = (uint32_t)sc->parts, .part = (uint32_t)part };
	*state = NULL;
	return sc->ops->part_create(handle, pt, sc->first.found ? &sc->first.time : NULL,
				    sc->job->part_arg, state, sink);
}

/* The part's timelines that lost spans, kept past its view (channels copied:
 * the merge interns them in the output's view once the parts are done). */
static int keep_too_deep(shared_view *sc, int part, const weft__view *view)
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
 * One part: its share's events through a view of its own into the
 * output's part sink, keyed by event; then the view's finish (or, for an
 * output whose parts take the events, through its part_event and
 * part_finish). Runs on the part's thread, with its handle.
 */
static int part_run(weft_trace *handle, const uint8_t *selected, int part, void *arg)
{
	shared_view *sc = arg;
	weft__view_part pt;
	weft__view_sink sink;
	void *state = NULL;
	weft__view *view = NULL;
	weft_cursor *cursor = NULL;
	const weft_event *ev;
	int rc = part_sink_create(handle, sc, part, selected, &pt, &state, &sink);

	int by_view = sc->ops->part_event == NULL;
	if (rc == 0 && by_view)
		rc = weft__view_create(handle, &sc->job->view, &sink, &view);
	if (rc == 0)
		rc = weft__cursor_create_selected(handle, sc->job->filter, selected, &cursor);
	if (rc == 0)
		rc = weft__keyed_run_begin(sc->runs, part, pt.out);
	int begun = rc == 0;
	while (rc == 0 && (rc = weft_cursor_next(cursor, &ev)) > 0) {
		pt.time = ev->time;
		pt.stream = ev->stream;
		if (by_view)
			weft__view_event(view, ev);
		else if ((rc = sc->ops->part_event(state, &pt, ev)) > 0)
			break; /* the part needs no more */
		rc = rc < 0 ? rc : pt.rc;
	}
	if (rc >= 0) {
		pt.finishing = 1;
		if (by_view)
			weft__view_finish(view);
		rc = by_view ? 0 : sc->ops->part_finish(state, &pt);
		rc = rc < 0 ? rc : pt.rc;
	}
	if (rc == 0)
		rc = sc->ops->part_status(state); /* its buffer, its tracks */
	if (begun) {
		int end_rc = weft__keyed_run_end(sc->runs, part, pt.out, rc < 0);
		rc = rc < 0 ? rc : end_rc;
	}
	if (view != NULL) {
		weft__view_stats_get(view, &sc->stats[part]);
		if (rc == 0)
			rc = keep_too_deep(sc, part, view);
	}
	weft_cursor_free(cursor);
	weft__view_free(view);
	sc->ops->part_free(state, sc->counts[part]);
	return rc;
}

/* Called last on each part's thread: a part that never began ends its run. */
static void part_end(void *arg, int part, int rc)
{
	(void)rc;
	weft__keyed_run_close(((shared_view *)arg)->runs, part);
}

/* ---- The merge ---------------------------------------------------------------------- */

/* The output's track of part `run`'s track `id`, 0 when not declared. */
static uint32_t output_track(const shared_view *sc, int run, uint32_t id)
{
	return id < sc->map_cap[run] ? sc->map[run][id] : 0;
}

/* Part `run`'s track `id` is the output's `track`; -1 without memory. */
static int map_track(shared_view *sc, int run, uint32_t id, uint32_t track)
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

int weft__view_bad_record(void)
{
	return weft__error(WEFT_EINVAL, NULL, WEFT_NO_OFFSET,
			   "internal error: a part wrote a record the merge cannot read");
}

/* A record into the output, which may fail. */
static int merge_into_output(shared_view *sc, weft__view *view, uint32_t track,
			     const char *rec, size_t len)
{
	int rc = sc->ops->merge(sc->out, view, track, rec, len);
	if (rc == 0 && sc->ops->failed(sc->out))
		rc = weft__error(WEFT_EIO, NULL, WEFT_NO_OFFSET, "cannot write the output");
	return rc;
}

/* One record of a part, in the merged order, into the output. */
static int merge_record(void *ctx, int run, const weft__line_key *line_key, const char *rec)
{
	shared_view *sc = ctx;
	size_t len = line_key->len;
	uint32_t id, stream, track;

	if (sc->ops->part_event != NULL) /* records without tracks */
		return merge_into_output(sc, NULL, 0, rec, len);
	if (len >= 10 && rec[0] == 'D') {
		memcpy(&id, rec + 2, 4);
		memcpy(&stream, rec + 6, 4);
		const weft__view_track *t = weft__view_declare(
			sc->view, (weft__view_track_kind)(uint8_t)rec[1], stream, rec + 10, len - 10);
		if (t == NULL || map_track(sc, run, id, t->id) < 0)
			return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
		return 0;
	}
	if (len < 5)
		return weft__view_bad_record();
	memcpy(&id, rec + 1, 4);
	if ((track = output_track(sc, run, id)) == 0)
		return weft__view_bad_record();
	return merge_into_output(sc, sc->view, track, rec, len);
}

static void merge_progress(void *ctx)
{
	shared_view *sc = ctx;

	if (sc->live != NULL)
		weft__parts_show_progress(sc->live);
}

/* ---- Results ------------------------------------------------------------------------- */

/*
 * Adds counts and timelines that lost spans (their channels the output
 * view's strings) into the job and the output's writer; the timelines
 * kept in stream order. 0 or WEFT_ENOMEM.
 */
static int job_add(shared_view *sc, const weft__view_stats *vs, const uint64_t *counts,
		   const weft__view_too_deep_timeline *t, size_t n)
{
	weft__view_shared *job = sc->job;

	weft__view_stats_add(&job->stats, vs);
	sc->ops->add_counts(sc->out, counts);
	if (n == 0)
		return 0;
	weft__view_too_deep_timeline *all = realloc(job->too_deep,
						    (job->too_deep_count + n) * sizeof *all);
	if (all == NULL)
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	job->too_deep = all;
	for (size_t k = 0; k < n; k++) {
		size_t at = job->too_deep_count++;
		while (at > 0 && all[at - 1].stream > t[k].stream) {
			all[at] = all[at - 1];
			at--;
		}
		all[at] = t[k];
	}
	return 0;
}

/*
 * The channels of a part's timelines that lost spans, copied by the
 * part, made the output view's (its strings outlive the parts); the
 * copies freed. 1 when one could not be kept.
 */
static int intern_channels(shared_view *sc, weft__view_too_deep_timeline *t, size_t n)
{
	int lost = 0;

	for (size_t k = 0; k < n; k++) {
		char *copy = (char *)t[k].channel;
		if (copy == NULL)
			continue;
		t[k].channel = weft__view_intern(sc->view, copy, strlen(copy));
		lost |= t[k].channel == NULL;
		free(copy);
	}
	return lost;
}

/* This process's parts' results into the job (rank 0, or threads alone). */
static int add_local_results(shared_view *sc)
{
	int rc = 0;

	for (int i = 0; i < sc->parts; i++) {
		if (intern_channels(sc, sc->too_deep[i], sc->too_deep_count[i]))
			rc = weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
		int add_rc = job_add(sc, &sc->stats[i], sc->counts[i], sc->too_deep[i],
				     sc->too_deep_count[i]);
		rc = rc < 0 ? rc : add_rc;
		free(sc->too_deep[i]); /* copied into the job */
		sc->too_deep[i] = NULL;
		sc->too_deep_count[i] = 0;
	}
	return rc;
}

/* The tracks the output's view declared: the output's (its parts' do not count). */
static uint64_t output_tracks(const shared_view *sc)
{
	weft__view_stats own;

	if (sc->view == NULL)
		return 0; /* parts that take events: no view */
	weft__view_stats_get(sc->view, &own);
	return own.tracks;
}

/* The per-part and per-run tables; -1 without memory. */
static int shared_alloc(shared_view *sc, int parts, int run_count)
{
	size_t np = (size_t)(parts > 0 ? parts : 1), nr = (size_t)(run_count > 0 ? run_count : 1);

	sc->parts = parts;
	sc->run_count = run_count;
	sc->runs = run_count > 0 ? weft__keyed_runs_create(run_count) : NULL;
	sc->stats = calloc(np, sizeof *sc->stats);
	sc->counts = calloc(np, sizeof *sc->counts);
	sc->too_deep = calloc(np, sizeof *sc->too_deep);
	sc->too_deep_count = calloc(np, sizeof *sc->too_deep_count);
	sc->map = calloc(nr, sizeof *sc->map);
	sc->map_cap = calloc(nr, sizeof *sc->map_cap);
	if ((run_count > 0 && sc->runs == NULL) || sc->stats == NULL ||
	    sc->counts == NULL || sc->too_deep == NULL || sc->too_deep_count == NULL ||
	    sc->map == NULL || sc->map_cap == NULL) {
		sc->parts = 0; /* nothing indexes the tables; shared_free() frees them */
		sc->run_count = 0;
		return -1;
	}
	return 0;
}

static void shared_free(shared_view *sc)
{
	for (int i = 0; sc->map != NULL && i < sc->run_count; i++)
		free(sc->map[i]);
	for (int i = 0; sc->too_deep != NULL && i < sc->parts; i++) {
		for (size_t k = 0; sc->too_deep[i] != NULL && k < sc->too_deep_count[i]; k++)
			free((char *)sc->too_deep[i][k].channel); /* copies not interned */
		free(sc->too_deep[i]);
	}
	free(sc->map);
	free(sc->map_cap);
	free(sc->too_deep);
	free(sc->too_deep_count);
	free(sc->stats);
	free(sc->counts);
	free(sc->lens);
	free(sc->remote_ended);
	weft__keyed_runs_free(sc->runs);
}

/* Starts this process's parts over `among`; the parts' error or the count. */
static int start_parts(weft_trace *trace, shared_view *sc, const uint8_t *among)
{
	return weft__parts_start(trace, among, sc->job->groups, sc->parts, part_run, part_end, sc,
				 &sc->live);
}

/* Tells the output the first time (rank 0 or threads alone). */
static void tell_first_time(shared_view *sc)
{
	if (sc->first.found)
		sc->ops->set_first_time(sc->out, sc->first.time);
}

/* The job's results emptied before a conversion. */
static void job_reset(weft__view_shared *job)
{
	memset(&job->stats, 0, sizeof job->stats);
	free(job->too_deep);
	job->too_deep = NULL;
	job->too_deep_count = 0;
	job->write_failed = 0;
}

int weft__view_convert_shared(weft_trace *trace, const weft__view_share_ops *ops, void *out,
			      weft__view *view, weft__view_shared *job)
{
	shared_view sc = { .job = job, .ops = ops, .out = out, .view = view };

	job_reset(job);
	if (shared_alloc(&sc, job->parts, job->parts) < 0) {
		shared_free(&sc);
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	}
	int rc = ops->wants_first_time ? find_first_time(trace, ops, job, &sc.first) : 0;
	if (rc < 0) {
		shared_free(&sc);
		return rc;
	}
	tell_first_time(&sc);
	int started = start_parts(trace, &sc, job->among);
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
	sc.live = NULL;
	rc = add_local_results(&sc);
	job->stats.tracks = output_tracks(&sc);
	shared_free(&sc);
	if (write_rc < 0) {
		job->write_failed = 1;
		return weft__error_raise(&write_error);
	}
	return read_rc < 0 ? read_rc : rc;
}

/* ---- Ranks ------------------------------------------------------------------------- */

/*
 * On ranks (weft_dist), every rank converts its share of the streams on
 * parts of its own. Rank 0 merges its parts' runs and one run per other
 * rank, whose chunks it asks for as its merge needs them, a round at a
 * time: rank 0 broadcasts the rank it wants (or ROUND_DONE), then every
 * rank takes part in a gather where only that rank gives bytes: its next
 * chunk of records, with their keys. The other ranks merge their parts'
 * runs on a thread into chunks for rank 0 (at most OUTBOX_DEPTH waiting:
 * memory stays bounded), while their calling thread answers the rounds.
 * weft__dist_combine() then brings the ranks' counts, timelines that lost
 * spans, diagnostics and status to rank 0.
 *
 * A chunk: the records, their keys (count weft__line_key, native
 * layout: the ranks run one program), count (8), end (1 byte: 1 for the
 * rank's last). The records come first, so that both ends keep them in
 * the buffer they were written to (or received in).
 */
#define ROUND_DONE (-1)
#define OUTBOX_DEPTH 4
#define OUTBOX_CHUNK (1u << 20)
#define CHUNK_TAIL 9u

typedef struct outbox {
	pthread_mutex_t lock;
	pthread_cond_t changed;
	char *msg[OUTBOX_DEPTH];  /* ring of sealed chunks */
	size_t len[OUTBOX_DEPTH];
	int head, count;
	int aborted;              /* rank 0 wants no more: the packing stops */
	int done;                 /* the packing ended */
	/* the chunk being filled (packing thread) */
	weft__line_key *keys;
	size_t key_count, key_cap;
	char *text;
	size_t text_len, text_cap;
	pthread_t thread;
	int started;
} outbox;

/* Room for `n` more of `size` bytes in a growing array; -1 without memory. */
static int grow(void **array, size_t *cap, size_t used, size_t n, size_t size)
{
	if (used + n <= *cap)
		return 0;
	size_t want = *cap ? *cap : 4096;
	while (want < used + n)
		want *= 2;
	void *a = realloc(*array, want * size);
	if (a == NULL)
		return -1;
	*array = a;
	*cap = want;
	return 0;
}

/*
 * Seals the chunk being filled (`end`: the last): its records' buffer
 * becomes the chunk, the keys and the trailer appended, and a buffer of
 * the same size is taken for the next. Queues it, waiting while
 * OUTBOX_DEPTH wait. 0, or an error (no memory, rank 0 stopped).
 */
static int outbox_seal(outbox *ob, int end)
{
	size_t key_bytes = ob->key_count * sizeof *ob->keys, cap = ob->text_cap;
	uint64_t count = ob->key_count;

	if (grow((void **)&ob->text, &ob->text_cap, ob->text_len, key_bytes + CHUNK_TAIL, 1) < 0)
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	char *msg = ob->text;
	size_t len = ob->text_len + key_bytes + CHUNK_TAIL;
	if (key_bytes > 0)
		memcpy(msg + ob->text_len, ob->keys, key_bytes);
	memcpy(msg + len - CHUNK_TAIL, &count, 8);
	msg[len - 1] = (char)end;
	ob->key_count = 0;
	ob->text_len = 0;
	ob->text = malloc(cap ? cap : 1);
	ob->text_cap = ob->text != NULL ? cap : 0;
	pthread_mutex_lock(&ob->lock);
	while (ob->count == OUTBOX_DEPTH && !ob->aborted)
		pthread_cond_wait(&ob->changed, &ob->lock);
	int aborted = ob->aborted;
	if (!aborted) {
		int at = (ob->head + ob->count++) % OUTBOX_DEPTH;
		ob->msg[at] = msg;
		ob->len[at] = len;
		pthread_cond_broadcast(&ob->changed);
	}
	pthread_mutex_unlock(&ob->lock);
	if (aborted) {
		free(msg);
		return weft__error(WEFT_EIO, NULL, WEFT_NO_OFFSET,
				   "the output stopped (rank 0 ended it)");
	}
	return 0;
}

/* One record of this rank's merged parts into the chunk being filled. */
static int pack_record(void *ctx, int run, const weft__line_key *key, const char *rec)
{
	outbox *ob = ((shared_view *)ctx)->outbox;

	(void)run;
	if (grow((void **)&ob->keys, &ob->key_cap, ob->key_count, 1, sizeof *ob->keys) < 0 ||
	    grow((void **)&ob->text, &ob->text_cap, ob->text_len, key->len, 1) < 0)
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	ob->keys[ob->key_count++] = *key;
	memcpy(ob->text + ob->text_len, rec, key->len);
	ob->text_len += key->len;
	return ob->text_len >= OUTBOX_CHUNK ? outbox_seal(ob, 0) : 0;
}

/* The packing thread: this rank's parts merged into chunks, the last marked. */
static void *pack_main(void *arg)
{
	shared_view *sc = arg;
	outbox *ob = sc->outbox;
	int rc = weft__keyed_runs_merge_each(sc->runs, pack_record, sc, NULL, NULL);

	if (rc == 0)
		outbox_seal(ob, 1);
	pthread_mutex_lock(&ob->lock);
	ob->done = 1;
	pthread_cond_broadcast(&ob->changed);
	pthread_mutex_unlock(&ob->lock);
	return NULL;
}

/* The next chunk for rank 0 (waiting for it), or NULL when there is none
 * (the packing failed: its parts say why). */
static char *outbox_pop(outbox *ob, size_t *len)
{
	char *msg = NULL;

	pthread_mutex_lock(&ob->lock);
	while (ob->count == 0 && !ob->done)
		pthread_cond_wait(&ob->changed, &ob->lock);
	if (ob->count > 0) {
		msg = ob->msg[ob->head];
		*len = ob->len[ob->head];
		ob->head = (ob->head + 1) % OUTBOX_DEPTH;
		ob->count--;
		pthread_cond_broadcast(&ob->changed);
	}
	pthread_mutex_unlock(&ob->lock);
	return msg;
}

/* Starts the packing thread over this rank's runs; -1 when it cannot. */
static int outbox_start(shared_view *sc)
{
	outbox *ob = calloc(1, sizeof *ob);

	if (ob == NULL)
		return -1;
	if (pthread_mutex_init(&ob->lock, NULL) != 0) {
		free(ob);
		return -1;
	}
	if (pthread_cond_init(&ob->changed, NULL) != 0) {
		pthread_mutex_destroy(&ob->lock);
		free(ob);
		return -1;
	}
	sc->outbox = ob;
	ob->started = pthread_create(&ob->thread, NULL, pack_main, sc) == 0;
	ob->done = !ob->started; /* rank 0 then gets an empty last chunk */
	return ob->started ? 0 : -1;
}

/* Stops the packing (its parts too) and frees the outbox. */
static void outbox_stop(shared_view *sc)
{
	outbox *ob = sc->outbox;

	if (ob == NULL)
		return;
	pthread_mutex_lock(&ob->lock);
	ob->aborted = 1;
	pthread_cond_broadcast(&ob->changed);
	pthread_mutex_unlock(&ob->lock);
	weft__keyed_runs_abort(sc->runs);
	if (ob->started)
		pthread_join(ob->thread, NULL);
	for (int i = 0; i < ob->count; i++)
		free(ob->msg[(ob->head + i) % OUTBOX_DEPTH]);
	pthread_cond_destroy(&ob->changed);
	pthread_mutex_destroy(&ob->lock);
	free(ob->keys);
	free(ob->text);
	free(ob);
	sc->outbox = NULL;
}

/*
 * The other ranks' side of the rounds until rank 0 says ROUND_DONE: when
 * asked, this rank's next chunk (the last one, empty, when there is no
 * more: a rank whose parts could not start says so at the end).
 */
static int serve_rounds(shared_view *sc)
{
	const weft_dist *d = sc->dist;
	static const char last[CHUNK_TAIL] = { 0, 0, 0, 0, 0, 0, 0, 0, 1 };

	for (;;) {
		int32_t wanted = ROUND_DONE;
		int rc = d->broadcast(d->user, &wanted, sizeof wanted);
		if (rc < 0 || wanted == ROUND_DONE)
			return rc;
		size_t len = 0;
		char *msg = wanted == d->rank && sc->outbox != NULL ? outbox_pop(sc->outbox, &len)
				  : NULL;
		const char *bytes = msg != NULL ? msg : last;
		if (msg == NULL)
			len = wanted == d->rank ? sizeof last : 0;
		void *all = NULL;
		rc = d->gather(d->user, bytes, len, &all, sc->lens);
		free(msg);
		free(all);
		if (rc < 0)
			return rc;
	}
}

/*
 * A chunk received from another rank (`m`, `n` bytes: the records, their
 * keys, the count and the end mark), checked, as a run's next chunk: its
 * records stay in `m` (the runs free it), the keys are copied out.
 */
static int unpack_chunk(char *m, size_t n, char **text, size_t *len,
			weft__line_key **keys, size_t *count, uint8_t *ended)
{
	uint64_t c = 0;
	size_t sum = 0;

	if (n >= CHUNK_TAIL)
		memcpy(&c, m + n - CHUNK_TAIL, 8);
	if (n < CHUNK_TAIL || c > (n - CHUNK_TAIL) / sizeof **keys)
		return weft__view_bad_record();
	size_t key_bytes = (size_t)c * sizeof **keys, text_len = n - CHUNK_TAIL - key_bytes;
	*keys = malloc(key_bytes ? key_bytes : 1);
	if (*keys == NULL)
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	memcpy(*keys, m + text_len, key_bytes);
	*text = m;
	for (size_t i = 0; i < c; i++)
		sum += (*keys)[i].len;
	*len = text_len;
	*count = (size_t)c;
	*ended = m[n - 1] == 1;
	return sum == text_len ? 1 : weft__view_bad_record(); /* the runs free what was given */
}

/* Rank 0: the next chunk of the run of another rank, asked for in a round. */
static int remote_source(void *ctx, int run, char **text, size_t *len,
			 weft__line_key **keys, size_t *count)
{
	shared_view *sc = ctx;
	const weft_dist *d = sc->dist;
	int32_t wanted = run - sc->parts + 1;
	void *all = NULL;

	if (sc->remote_ended[wanted])
		return 0;
	int rc = d->broadcast(d->user, &wanted, sizeof wanted);
	if (rc == 0)
		rc = d->gather(d->user, "", 0, &all, sc->lens);
	if (rc < 0) {
		free(all);
		return weft__error(rc, NULL, WEFT_NO_OFFSET,
				   "the ranks cannot exchange the output's events");
	}
	for (int r = 0; r < d->ranks; r++)
		if (r != wanted && sc->lens[r] != 0) {
			free(all);
			return weft__view_bad_record(); /* only the rank asked gives bytes */
		}
	rc = unpack_chunk(all, sc->lens[wanted], text, len, keys, count,
			  &sc->remote_ended[wanted]);
	if (*text != all)
		free(all);
	return rc;
}

/* Another rank's counts and timelines that lost spans (weft__dist_pack_fn). */
static void pack_results(weft__pack *out, const void *ctx)
{
	const shared_view *sc = ctx;
	weft__view_stats vs;
	uint64_t counts[WEFT__VIEW_SHARE_COUNTS] = { 0 }, n = 0;

	memset(&vs, 0, sizeof vs);
	for (int i = 0; i < sc->parts; i++) {
		weft__view_stats_add(&vs, &sc->stats[i]);
		for (int k = 0; k < WEFT__VIEW_SHARE_COUNTS; k++)
			counts[k] += sc->counts[i][k];
		n += sc->too_deep_count[i];
	}
	for (size_t k = 0; k < sizeof vs / sizeof(uint64_t); k++)
		weft__pack_u64(out, ((const uint64_t *)&vs)[k]);
	for (int k = 0; k < WEFT__VIEW_SHARE_COUNTS; k++)
		weft__pack_u64(out, counts[k]);
	weft__pack_u64(out, n);
	for (int i = 0; i < sc->parts; i++)
		for (size_t k = 0; k < sc->too_deep_count[i]; k++) {
			const weft__view_too_deep_timeline *t = &sc->too_deep[i][k];
			weft__pack_u64(out, t->stream);
			weft__pack_u64(out, t->channel != NULL);
			weft__pack_text(out, t->channel);
			weft__pack_u64(out, t->lost);
			weft__pack_u64(out, t->deepest);
		}
}

/* Rank 0: another rank's results into the job (weft__dist_merge_fn). */
static int merge_results(void *ctx, weft__unpack *in)
{
	shared_view *sc = ctx;
	weft__view_stats vs;
	uint64_t counts[WEFT__VIEW_SHARE_COUNTS];
	static const uint64_t none[WEFT__VIEW_SHARE_COUNTS];

	for (size_t k = 0; k < sizeof vs / sizeof(uint64_t); k++)
		((uint64_t *)&vs)[k] = weft__unpack_u64(in);
	for (int k = 0; k < WEFT__VIEW_SHARE_COUNTS; k++)
		counts[k] = weft__unpack_u64(in);
	uint64_t n = weft__unpack_u64(in);
	int rc = job_add(sc, &vs, counts, NULL, 0);
	for (uint64_t k = 0; rc == 0 && k < n && !in->bad; k++) {
		weft__view_too_deep_timeline t = { 0 };
		t.stream = (uint32_t)weft__unpack_u64(in);
		int has_channel = weft__unpack_u64(in) != 0;
		const char *channel = weft__unpack_text(in);
		t.lost = weft__unpack_u64(in);
		t.deepest = weft__unpack_u64(in);
		if (has_channel && (t.channel = weft__view_intern(sc->view, channel,
								  strlen(channel))) == NULL)
			rc = weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
		if (rc == 0 && !in->bad)
			rc = job_add(sc, &(weft__view_stats){ 0 }, none, &t, 1);
	}
	return rc == 0 && in->bad ? weft__view_bad_record() : rc;
}

/* The groups that hold streams of `among` (n streams). */
static size_t groups_among(const uint32_t *groups, const uint8_t *among, size_t n)
{
	uint8_t *seen = calloc(n + 1, 1);
	size_t count = 0;

	if (seen == NULL)
		return 1; /* one part, then */
	for (size_t i = 0; i < n; i++) {
		size_t g = groups[i] < n ? groups[i] : n;
		if (among[i] && !seen[g]) {
			seen[g] = 1;
			count++;
		}
	}
	free(seen);
	return count;
}

/*
 * This rank's streams among those converted, its parts, and the tables
 * (rank 0: a run more per other rank); parts 0 when it has no stream.
 */
static int rank_setup(weft_trace *trace, shared_view *sc, uint8_t **mine)
{
	const uint8_t *share = weft__dist_selected(trace), *among = sc->job->among;
	size_t n = trace->stream_count, count = 0;
	int ranks = sc->dist->ranks;

	*mine = malloc(n ? n : 1);
	if (*mine == NULL)
		return -1;
	if (sc->job->groups != NULL) {
		/* groups kept whole: dealt again, not as the open dealt the streams */
		int64_t dealt = weft__share_deal_groups(trace, among, sc->job->groups,
							sc->dist->rank, ranks, *mine);
		if (dealt < 0)
			return -1;
		count = (size_t)dealt;
	}
	for (size_t i = 0; sc->job->groups == NULL && i < n; i++)
		count += (*mine)[i] = (uint8_t)((share == NULL || share[i]) && among[i]);
	int parts = count == 0 ? 0 : weft__parts_threads(trace, *mine, 0, WEFT__WORK_HEAVY);
	if (parts < 0)
		parts = 1;
	size_t groups = sc->job->groups != NULL ? groups_among(sc->job->groups, *mine, n) : 0;
	if (groups > 0 && (size_t)parts > groups)
		parts = (int)groups; /* no part without a group */
	int runs = parts + (sc->dist->rank == 0 ? ranks - 1 : 0);
	sc->lens = calloc((size_t)ranks, sizeof *sc->lens);
	sc->remote_ended = calloc((size_t)ranks, 1);
	if (shared_alloc(sc, parts, runs) < 0 || sc->lens == NULL || sc->remote_ended == NULL)
		return -1;
	for (int r = parts; sc->dist->rank == 0 && r < runs; r++)
		weft__keyed_run_set_source(sc->runs, r, remote_source, sc);
	return 0;
}

/*
 * Test hook: WEFT_TEST_SHARE_FAIL="STEP@RANK" makes rank RANK fail STEP as
 * if memory ran out: "parts", the start of its parts; "follow" (not rank
 * 0), the making of its follower, which then takes part in the
 * collectives without an output of its own. The paths where a rank must
 * fail without leaving the others waiting, which no test could reach
 * otherwise (tests/mpi/test_mpi_convert.py).
 */
int weft__view_share_test_fault(const weft_trace *trace, const char *step)
{
	const char *spec = getenv("WEFT_TEST_SHARE_FAIL");
	size_t n = strlen(step);
	const weft_dist *d = trace->options.dist;

	return spec != NULL && d != NULL && strncmp(spec, step, n) == 0 && spec[n] == '@' &&
	       strtol(spec + n + 1, NULL, 10) == d->rank;
}

/* The first time, found by rank 0, on every rank; 0 or an error. */
static int share_first_time(weft_trace *trace, shared_view *sc, int rc)
{
	uint64_t first[2] = { 0, 0 };

	if (!sc->ops->wants_first_time)
		return rc; /* every rank has the same output */
	if (sc->dist->rank == 0 && rc == 0 && (rc = find_first_time(trace, sc->ops, sc->job,
								    &sc->first)) == 0) {
		first[0] = (uint64_t)sc->first.found;
		first[1] = sc->first.time;
	}
	int brc = sc->dist->broadcast(sc->dist->user, first, sizeof first);
	sc->first.found = first[0] != 0;
	sc->first.time = first[1];
	return rc < 0 ? rc : brc;
}

/* Rank 0: its parts and the other ranks' chunks merged into the output. */
static int rank0_merge(weft_trace *trace, shared_view *sc, const uint8_t *mine, int rc)
{
	int32_t done = ROUND_DONE;
	weft__error_copy start_error;
	int started = 0;

	tell_first_time(sc);
	if (rc == 0 && sc->parts > 0 && (started = start_parts(trace, sc, mine)) < 0) {
		weft__error_save(&start_error, started);
		weft__keyed_runs_abort(sc->runs);
	}
	if (rc == 0 && started >= 0) {
		rc = weft__keyed_runs_merge_each(sc->runs, merge_record, sc, merge_progress, sc);
		sc->job->write_failed = rc < 0 && sc->ops->failed(sc->out);
	}
	sc->dist->broadcast(sc->dist->user, &done, sizeof done);
	int read_rc = sc->live != NULL || started < 0 ? weft__parts_finish(sc->live) : 0;
	sc->live = NULL;
	if (started < 0 && read_rc == 0)
		read_rc = weft__error_raise(&start_error);
	int add_rc = add_local_results(sc);
	return rc < 0 ? rc : read_rc < 0 ? read_rc : add_rc;
}

/* Another rank: its parts merged on a thread, sent to rank 0 as it asks. */
static int rank_follow(weft_trace *trace, shared_view *sc, const uint8_t *mine, int rc)
{
	weft__error_copy start_error;
	int started = 0;

	if (rc == 0 && sc->parts > 0 && (started = start_parts(trace, sc, mine)) < 0) {
		weft__error_save(&start_error, started);
		weft__keyed_runs_abort(sc->runs);
	}
	if (rc == 0 && sc->parts > 0 && started >= 0 && outbox_start(sc) < 0)
		rc = weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "cannot start a thread");
	int serve_rc = serve_rounds(sc);
	outbox_stop(sc);
	int read_rc = sc->live != NULL || started < 0 ? weft__parts_finish(sc->live) : 0;
	sc->live = NULL;
	if (started < 0 && read_rc == 0)
		read_rc = weft__error_raise(&start_error);
	return rc < 0 ? rc : serve_rc < 0 ? serve_rc : read_rc;
}

int weft__view_convert_ranks(weft_trace *trace, const weft__view_share_ops *ops, void *out,
			     weft__view *view, weft__view_shared *job, int share)
{
	const weft_dist *d = trace->options.dist;
	shared_view sc = { .job = job, .ops = ops, .out = out, .view = view, .dist = d };
	int64_t verdict = share;
	uint8_t *mine = NULL;

	job_reset(job);
	if (d->broadcast(d->user, &verdict, sizeof verdict) < 0 || verdict == 0)
		return 0; /* rank 0 converts alone */
	size_t diags = weft_trace_diag_count(trace);
	int rc = job->among == NULL || rank_setup(trace, &sc, &mine) < 0 ||
		 weft__view_share_test_fault(trace, "parts")
		 ? weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory") : 0;
	rc = share_first_time(trace, &sc, rc);
	rc = d->rank == 0 ? rank0_merge(trace, &sc, mine, rc) : rank_follow(trace, &sc, mine, rc);
	rc = weft__dist_combine(trace, rc, diags, d->rank == 0 ? NULL : pack_results,
				d->rank == 0 ? merge_results : NULL, &sc);
	if (d->rank == 0)
		job->stats.tracks = output_tracks(&sc);
	free(mine);
	shared_free(&sc);
	return rc < 0 ? rc : 1;
}
