/* SPDX-License-Identifier: MIT */
/*
 * outputs/keyed_runs.c - runs of keyed lines from writer threads, merged
 * in key order on the calling thread (see keyed_runs.h for why the result
 * is the serial one).
 *
 * Each run owns RUN_DEPTH chunks that go round: the writer fills one,
 * hands it on (the `filled` ring), the merge reads the oldest and gives
 * it back (the `spare` stack). One lock and one condition variable for
 * all: they are taken once per chunk (about 1 MiB of lines), not per line.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "outputs/keyed_runs.h"

/* Chunks per run: one being written, one being merged, two waiting. */
#define RUN_DEPTH 4
/* A chunk is handed on once its lines reach this many bytes. */
#define CHUNK_BYTES (1u << 20)
/* Room above the mark, so that the line that crosses it seldom grows the
 * buffer (a longer one does: the buffer grows to hold it). */
#define CHUNK_SLACK (64u << 10)
#define INITIAL_KEYS 4096u

typedef struct chunk {
	char *text;
	size_t len, cap;
	weft__line_key *keys;
	size_t count, key_cap;
} chunk;

/*
 * The writer's keys of the chunk it fills, apart from the chunks that the
 * merge reads (a line's key written next to what the other thread reads
 * would move a cache line between the cores at every line).
 */
typedef struct writing_keys {
	weft__line_key *keys;
	size_t count, key_cap;
	char pad[64 - sizeof(weft__line_key *) - 2 * sizeof(size_t)];
} writing_keys;

typedef struct run {
	writing_keys *w;       /* the writer's own, on a line of its own */
	chunk chunks[RUN_DEPTH];
	int filled[RUN_DEPTH]; /* ring of chunks handed on, oldest first */
	int filled_head, filled_count;
	int spare[RUN_DEPTH];  /* stack of chunks free for the writer */
	int spare_count;
	int writing;           /* the writer's chunk, or -1 */
	int closed;            /* the writer hands on no more */
	/* A run fed by the merge itself (weft__keyed_run_set_source): its
	 * chunks[0] holds the source's current chunk. */
	weft__keyed_source_fn source;
	void *source_ctx;
} run;

struct weft__keyed_runs {
	pthread_mutex_t lock;
	pthread_cond_t changed;
	int aborted;           /* the merge stopped: writers stop too */
	int run_count;
	run *runs;
};

weft__keyed_runs *weft__keyed_runs_create(int runs)
{
	weft__keyed_runs *kr = calloc(1, sizeof *kr);
	if (kr == NULL)
		return NULL;
	kr->runs = calloc((size_t)(runs > 0 ? runs : 1), sizeof *kr->runs);
	if (kr->runs == NULL || pthread_mutex_init(&kr->lock, NULL) != 0) {
		free(kr->runs);
		free(kr);
		return NULL;
	}
	if (pthread_cond_init(&kr->changed, NULL) != 0) {
		pthread_mutex_destroy(&kr->lock);
		free(kr->runs);
		free(kr);
		return NULL;
	}
	kr->run_count = runs;
	for (int r = 0; r < runs; r++) {
		run *rn = &kr->runs[r];
		rn->w = aligned_alloc(64, sizeof *rn->w);
		if (rn->w == NULL) {
			weft__keyed_runs_free(kr);
			return NULL;
		}
		memset(rn->w, 0, sizeof *rn->w);
		rn->writing = -1;
		rn->spare_count = RUN_DEPTH;
		for (int i = 0; i < RUN_DEPTH; i++)
			rn->spare[i] = i;
	}
	return kr;
}

void weft__keyed_runs_free(weft__keyed_runs *kr)
{
	if (kr == NULL)
		return;
	for (int r = 0; r < kr->run_count; r++) {
		for (int i = 0; i < RUN_DEPTH; i++) {
			free(kr->runs[r].chunks[i].text);
			free(kr->runs[r].chunks[i].keys);
		}
		free(kr->runs[r].w);
	}
	pthread_cond_destroy(&kr->changed);
	pthread_mutex_destroy(&kr->lock);
	free(kr->runs);
	free(kr);
}

/* ---- Writer side ------------------------------------------------------------ */

static int stopped(void)
{
	return weft__error(WEFT_EIO, NULL, WEFT_NO_OFFSET,
			   "the output stopped (its merge ended)");
}

/*
 * Takes a spare chunk for the writer of `rn` (waiting for one) and points
 * `out` at its buffer. Lock held.
 */
static int take_spare(weft__keyed_runs *kr, run *rn, weft__outbuf *out)
{
	while (rn->spare_count == 0 && !kr->aborted)
		pthread_cond_wait(&kr->changed, &kr->lock);
	if (kr->aborted)
		return stopped();
	int i = rn->spare[--rn->spare_count];
	chunk *c = &rn->chunks[i];
	if (c->text == NULL) {
		c->text = malloc(CHUNK_BYTES + CHUNK_SLACK);
		c->keys = malloc(INITIAL_KEYS * sizeof *c->keys);
		if (c->text == NULL || c->keys == NULL) {
			free(c->text);
			free(c->keys);
			c->text = NULL;
			c->keys = NULL;
			rn->spare[rn->spare_count++] = i;
			return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET,
					   "out of memory for the output's lines");
		}
		c->cap = CHUNK_BYTES + CHUNK_SLACK;
		c->key_cap = INITIAL_KEYS;
	}
	c->len = 0;
	c->count = 0;
	rn->writing = i;
	rn->w->keys = c->keys;
	rn->w->key_cap = c->key_cap;
	rn->w->count = 0;
	out->buf = c->text;
	out->cap = c->cap;
	out->len = 0;
	return 0;
}

int weft__keyed_run_begin(weft__keyed_runs *kr, int run_index, weft__outbuf *out)
{
	pthread_mutex_lock(&kr->lock);
	int rc = take_spare(kr, &kr->runs[run_index], out);
	pthread_mutex_unlock(&kr->lock);
	return rc;
}

/*
 * Hands the writer's chunk on (its buffer taken back from `out`, which
 * may have grown it) and wakes the merge. Lock held.
 */
static void hand_on(weft__keyed_runs *kr, run *rn, weft__outbuf *out)
{
	chunk *c = &rn->chunks[rn->writing];
	c->text = out->buf;
	c->cap = out->cap;
	c->len = out->len;
	c->keys = rn->w->keys;
	c->key_cap = rn->w->key_cap;
	c->count = rn->w->count;
	out->buf = NULL;
	out->cap = out->len = 0;
	rn->filled[(rn->filled_head + rn->filled_count++) % RUN_DEPTH] = rn->writing;
	rn->writing = -1;
	pthread_cond_broadcast(&kr->changed);
}

/* Room for one more key in the writer's chunk. */
static int grow_keys(writing_keys *w)
{
	weft__line_key *bigger = realloc(w->keys, 2 * w->key_cap * sizeof *w->keys);
	if (bigger == NULL)
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET,
				   "out of memory for the output's lines");
	w->keys = bigger;
	w->key_cap *= 2;
	return 0;
}

int weft__keyed_run_line(weft__keyed_runs *kr, int run_index, weft__outbuf *out,
			 uint64_t time, uint32_t stream, size_t line_start)
{
	run *rn = &kr->runs[run_index];
	writing_keys *w = rn->w;
	if (w->count == w->key_cap && grow_keys(w) < 0)
		return WEFT_ENOMEM;
	if (out->len - line_start > UINT32_MAX)
		return weft__error(WEFT_EUNSUPPORTED, NULL, WEFT_NO_OFFSET,
				   "an output line of %zu bytes (4 GiB at most)",
				   out->len - line_start);
	w->keys[w->count++] = (weft__line_key){ time, stream, (uint32_t)(out->len - line_start) };
	if (out->len < CHUNK_BYTES)
		return 0;
	pthread_mutex_lock(&kr->lock);
	hand_on(kr, rn, out);
	int rc = take_spare(kr, rn, out);
	pthread_mutex_unlock(&kr->lock);
	return rc;
}

int weft__keyed_run_end(weft__keyed_runs *kr, int run_index, weft__outbuf *out, int failed)
{
	run *rn = &kr->runs[run_index];
	pthread_mutex_lock(&kr->lock);
	if (rn->writing >= 0) {
		if (!failed && !rn->closed) {
			hand_on(kr, rn, out);
		} else {
			/* the buffers, maybe grown, are the chunk's: kept, not handed on */
			rn->chunks[rn->writing].text = out->buf;
			rn->chunks[rn->writing].cap = out->cap;
			rn->chunks[rn->writing].keys = rn->w->keys;
			rn->chunks[rn->writing].key_cap = rn->w->key_cap;
			rn->spare[rn->spare_count++] = rn->writing;
			rn->writing = -1;
		}
	} else {
		free(out->buf); /* grown by the writer after its next chunk never came */
	}
	out->buf = NULL;
	out->cap = out->len = 0;
	rn->closed = 1;
	int rc = kr->aborted && !failed ? stopped() : 0;
	pthread_cond_broadcast(&kr->changed);
	pthread_mutex_unlock(&kr->lock);
	return rc;
}

void weft__keyed_run_close(weft__keyed_runs *kr, int run_index)
{
	run *rn = &kr->runs[run_index];
	pthread_mutex_lock(&kr->lock);
	rn->closed = 1;
	pthread_cond_broadcast(&kr->changed);
	pthread_mutex_unlock(&kr->lock);
}

void weft__keyed_runs_abort(weft__keyed_runs *kr)
{
	pthread_mutex_lock(&kr->lock);
	kr->aborted = 1;
	pthread_cond_broadcast(&kr->changed);
	pthread_mutex_unlock(&kr->lock);
}

/* ---- Merging side --------------------------------------------------------- */

/*
 * Where the merge is in one run: its chunk being read (a copy of what it
 * needs, so that reading a line touches nothing the writer writes), or
 * none (-1).
 */
typedef struct head {
	int chunk;     /* index in the run's chunks, -1 when none */
	const char *text;
	const weft__line_key *keys;
	size_t count;
	size_t line;   /* the next line's key */
	size_t offset; /* the next line's bytes */
	int done;      /* closed and drained */
} head;

void weft__keyed_run_set_source(weft__keyed_runs *kr, int run_index,
				weft__keyed_source_fn source, void *ctx)
{
	kr->runs[run_index].source = source;
	kr->runs[run_index].source_ctx = ctx;
}

/*
 * The next chunk of a run fed by its source (the previous one freed);
 * 0, or the source's error (the head is then done).
 */
static int source_refill(run *rn, int r, head *h)
{
	chunk *c = &rn->chunks[0];
	for (;;) {
		free(c->text);
		free(c->keys);
		memset(c, 0, sizeof *c);
		h->chunk = -1;
		int rc = rn->source(rn->source_ctx, r, &c->text, &c->len, &c->keys, &c->count);
		if (rc <= 0) {
			h->done = 1;
			return rc;
		}
		*h = (head){ .chunk = 0, .text = c->text, .keys = c->keys, .count = c->count };
		if (c->count > 0)
			return 0;
	}
}

/*
 * Gives back the head's chunk when it is read to the end and waits for
 * the run's next one (or its end). Lock not held. 0, or a source's error.
 */
static int head_refill(weft__keyed_runs *kr, int r, head *h)
{
	run *rn = &kr->runs[r];
	if (h->done || (h->chunk >= 0 && h->line < h->count))
		return 0;
	if (rn->source != NULL)
		return source_refill(rn, r, h);
	pthread_mutex_lock(&kr->lock);
	for (;;) {
		if (h->chunk >= 0) {
			rn->spare[rn->spare_count++] = h->chunk;
			h->chunk = -1;
			pthread_cond_broadcast(&kr->changed);
		}
		while (rn->filled_count == 0 && !rn->closed)
			pthread_cond_wait(&kr->changed, &kr->lock);
		if (rn->filled_count == 0) {
			h->done = 1;
			break;
		}
		h->chunk = rn->filled[rn->filled_head];
		rn->filled_head = (rn->filled_head + 1) % RUN_DEPTH;
		rn->filled_count--;
		const chunk *c = &rn->chunks[h->chunk];
		h->text = c->text;
		h->keys = c->keys;
		h->count = c->count;
		h->line = 0;
		h->offset = 0;
		if (h->count > 0)
			break; /* else an empty chunk (a run without lines): the next */
	}
	pthread_mutex_unlock(&kr->lock);
	return 0;
}

/* 1 when key a comes before key b in a merged cursor's order. */
static inline int key_before(const weft__line_key *a, const weft__line_key *b)
{
	return a->time != b->time ? a->time < b->time : a->stream < b->stream;
}

/* Where the merged lines go: `out` in one piece per run of lines, or
 * `line` called for each. */
typedef struct merge_sink {
	weft__outbuf *out;
	weft__keyed_line_fn line;
	void *ctx;
	int rc;        /* the first error of `line` */
} merge_sink;

/*
 * Passes on the head's lines that come before `bound` (NULL: all of its
 * chunk): into `out` in one piece, or line by line.
 */
static void copy_lines(head *h, int run_index, const weft__line_key *bound,
		       merge_sink *to)
{
	size_t start = h->offset;
	do {
		size_t len = h->keys[h->line].len;
		if (to->line != NULL && to->rc == 0)
			to->rc = to->line(to->ctx, run_index, &h->keys[h->line], h->text + h->offset);
		h->offset += len;
		h->line++;
	} while (h->line < h->count && (bound == NULL || key_before(&h->keys[h->line], bound)));
	if (to->line == NULL)
		weft__outbuf_put(to->out, h->text + start, h->offset - start);
}

/* The merge into `to`; 0, or the sink's error (the runs aborted). */
static int merge_into(weft__keyed_runs *kr, merge_sink *to, void (*progress)(void *ctx),
		      void *ctx)
{
	int n = kr->run_count;
	head *heads = calloc((size_t)(n > 0 ? n : 1), sizeof *heads);
	if (heads == NULL) {
		weft__keyed_runs_abort(kr);
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	}
	for (int r = 0; r < n; r++) {
		heads[r].chunk = -1;
		if (to->rc == 0)
			to->rc = head_refill(kr, r, &heads[r]);
		else
			heads[r].done = 1;
	}
	while (to->rc == 0 && (to->out == NULL || to->out->error == 0)) {
		/* The least head, and the least of the others: the first
		 * run's lines go out until they reach it. */
		head *first = NULL, *second = NULL;
		for (int r = 0; r < n; r++) {
			head *h = &heads[r];
			if (h->done)
				continue;
			if (first == NULL || key_before(&h->keys[h->line], &first->keys[first->line])) {
				second = first;
				first = h;
			} else if (second == NULL ||
				   key_before(&h->keys[h->line], &second->keys[second->line])) {
				second = h;
			}
		}
		if (first == NULL)
			break;
		copy_lines(first, (int)(first - heads),
			   second != NULL ? &second->keys[second->line] : NULL, to);
		if (first->line == first->count) {
			int rc = head_refill(kr, (int)(first - heads), first);
			if (to->rc == 0)
				to->rc = rc;
			if (progress != NULL)
				progress(ctx);
		}
	}
	free(heads);
	if (to->rc == 0 && to->out != NULL && to->out->error != 0)
		to->rc = weft__error(WEFT_EIO, NULL, WEFT_NO_OFFSET, "cannot write the output: %s",
				     strerror(to->out->error));
	if (to->rc < 0)
		weft__keyed_runs_abort(kr);
	return to->rc;
}

int weft__keyed_runs_merge(weft__keyed_runs *kr, weft__outbuf *out,
			   void (*progress)(void *ctx), void *ctx)
{
	merge_sink to = { .out = out };
	return merge_into(kr, &to, progress, ctx);
}

int weft__keyed_runs_merge_each(weft__keyed_runs *kr, weft__keyed_line_fn line,
				void *line_ctx, void (*progress)(void *ctx), void *ctx)
{
	merge_sink to = { .line = line, .ctx = line_ctx };
	return merge_into(kr, &to, progress, ctx);
}
