/* SPDX-License-Identifier: MIT */
/*
 * python/src/parallel.c - events(order="stream", threads=N): the selected
 * streams read by N threads at once, each stream's batches in order.
 *
 * A trace belongs to one thread at a time (weft/trace.h), so each reader
 * thread opens the trace again (the path and open options of the
 * Python trace) and reads its share of the streams, each stream with a
 * cursor of its own, into chunks of at most batch_size events: C columns
 * and a code table of its own. The streams are dealt out by bytes as the
 * library shares them (weft_trace_share_among()), and each reader reads
 * its streams in index order. The consumer, the Python thread, takes the
 * chunks as they come, from each reader's queue in turn: a stream's
 * batches come in order, the streams interleaved. (Taking stream 0, then
 * 1, ... would let a reader run ahead only as far as its queue, a few
 * chunks: no parallelism. Trace.to_pandas() puts the streams back in
 * order.) The queues hold a few chunks each (memory stays bounded); a
 * reader waits while its queue is full. The consumer maps each reader's
 * code indices to the trace's (the chunks carry the codes each reader met
 * first in them) and hands the columns to numpy without a copy.
 *
 * Diagnostics recorded on a reader's trace while it reads a stream travel
 * with the stream's last chunk and join the Python trace's list
 * (wpy_trace_add_diag); an error that stops a reader travels as the last
 * chunk of its stream and is raised by the consumer with its file and
 * offset.
 *
 * Map: chunks and queues; the reader thread; dealing the streams; the
 * consumer (next batch); start and stop.
 */
#include "columns.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* Chunks a reader may have queued before it waits. */
#define QUEUE_DEPTH 4

/* ---- Chunks and queues ----------------------------------------------------------------- */

typedef struct saved_diag {
	int severity;
	uint64_t offset;
	char *file, *message, *line;
} saved_diag;

typedef struct chunk {
	struct chunk *next;
	int last;               /* the stream's last chunk */
	size_t n;               /* rows */
	void *col[COL_COUNT];
	/* codes the reader met first in this chunk: local indices from code_base */
	uint32_t code_base, new_codes;
	char **code_bytes;
	uint32_t *code_len;
	/* on the last chunk: the diagnostics of the stream, and the error that ended it */
	saved_diag *diags;
	size_t diag_count;
	int status;             /* < 0: the reader failed */
	char *err_msg, *err_file, *err_text;
	uint64_t err_offset;
} chunk;

typedef struct reader {
	struct wpy_par *par;
	pthread_t thread;
	int started;
	size_t *positions;      /* its streams (positions), in index order */
	size_t count;
	chunk *head, *tail;     /* its queue */
	size_t queued;
	uint32_t *remap;        /* local code index -> the trace's (consumer side) */
	uint32_t remap_cap;
} reader;

struct wpy_par {
	pthread_mutex_t lock;
	pthread_cond_t changed;  /* a chunk queued or taken, or stop */
	int stop;
	reader *readers;
	int reader_count;
	const uint32_t *streams; /* the selected streams (the iterator's) */
	size_t stream_count;
	size_t streams_done;     /* streams whose last chunk the consumer took */
	int next_reader;         /* the queue the consumer looks at first */
	int failed;              /* the consumer met an error: no more batches */
	size_t batch;
	const char *path;        /* the trace's path and open options */
	weft_open_options options;
	weft_filter filter;
};

static void chunk_free(chunk *c)
{
	if (c == NULL)
		return;
	for (int k = 0; k < COL_COUNT; k++)
		free(c->col[k]);
	for (uint32_t i = 0; i < c->new_codes; i++)
		free(c->code_bytes[i]);
	free(c->code_bytes);
	free(c->code_len);
	for (size_t i = 0; i < c->diag_count; i++) {
		free(c->diags[i].file);
		free(c->diags[i].message);
		free(c->diags[i].line);
	}
	free(c->diags);
	free(c->err_msg);
	free(c->err_file);
	free(c->err_text);
	free(c);
}

static char *dup_or_null(const char *s)
{
	return s == NULL ? NULL : strdup(s);
}

/* Queues c on r, waiting while the queue is full: 0, or -1 when stopped (c freed). */
static int queue_push(reader *r, chunk *c)
{
	struct wpy_par *p = r->par;
	pthread_mutex_lock(&p->lock);
	while (r->queued >= QUEUE_DEPTH && !p->stop)
		pthread_cond_wait(&p->changed, &p->lock);
	if (p->stop) {
		pthread_mutex_unlock(&p->lock);
		chunk_free(c);
		return -1;
	}
	if (r->tail != NULL)
		r->tail->next = c;
	else
		r->head = c;
	r->tail = c;
	r->queued++;
	pthread_cond_broadcast(&p->changed);
	pthread_mutex_unlock(&p->lock);
	return 0;
}

/* ---- The reader thread ----------------------------------------------------------------- */

typedef struct reader_state {
	reader *r;
	weft_trace *trace;
	wpy_codes codes;
	uint32_t codes_sent;    /* local codes already sent in chunks */
	size_t diags_sent;      /* the trace's diagnostics already sent */
} reader_state;

/* Attaches the codes met since the last chunk: -1 without memory. */
static int attach_codes(reader_state *s, chunk *c)
{
	uint32_t n = s->codes.count - s->codes_sent;
	c->code_base = s->codes_sent;
	if (n == 0)
		return 0;
	c->code_bytes = calloc(n, sizeof *c->code_bytes);
	c->code_len = calloc(n, sizeof *c->code_len);
	if (c->code_bytes == NULL || c->code_len == NULL)
		return -1;
	for (uint32_t i = 0; i < n; i++) {
		const wpy_code *code = &s->codes.codes[s->codes_sent + i];
		c->code_bytes[i] = malloc(code->len ? code->len : 1);
		if (c->code_bytes[i] == NULL)
			return -1;
		memcpy(c->code_bytes[i], code->bytes, code->len);
		c->code_len[i] = code->len;
		c->new_codes = i + 1;
	}
	s->codes_sent = s->codes.count;
	return 0;
}

/* Attaches the diagnostics the reader's trace recorded since the last time: -1 without memory. */
static int attach_diags(reader_state *s, chunk *c)
{
	size_t total = weft_trace_diag_count(s->trace);
	if (total <= s->diags_sent)
		return 0;
	c->diags = calloc(total - s->diags_sent, sizeof *c->diags);
	if (c->diags == NULL)
		return -1;
	for (size_t i = s->diags_sent; i < total; i++) {
		const weft_diag *d = weft_trace_diag(s->trace, i);
		saved_diag *o = &c->diags[c->diag_count++];
		o->severity = d->severity;
		o->offset = d->offset;
		o->file = dup_or_null(d->file);
		o->message = dup_or_null(d->message);
		o->line = weft_diag_line(d, weft_trace_path(s->trace));
	}
	s->diags_sent = total;
	return 0;
}

/* Records the library's last error (this thread's) as the chunk's failure. */
static void attach_error(chunk *c, int status)
{
	c->status = status;
	c->last = 1;
	c->err_msg = dup_or_null(weft_last_error());
	c->err_file = dup_or_null(weft_last_error_file());
	c->err_text = dup_or_null(weft_last_error_text());
	c->err_offset = weft_last_error_offset();
}

static chunk *chunk_new(size_t rows)
{
	chunk *c = calloc(1, sizeof *c);
	if (c == NULL)
		return NULL;
	for (int k = 0; k < COL_COUNT; k++) {
		c->col[k] = malloc(rows * columns[k].size);
		if (c->col[k] == NULL) {
			chunk_free(c);
			return NULL;
		}
	}
	return c;
}

/*
 * Reads stream position `pos` into chunks queued on the reader: 0, 1 when
 * the reading must stop (stopped, or a failure sent), -1 without memory.
 */
static int read_stream(reader_state *s, size_t pos)
{
	struct wpy_par *p = s->r->par;
	weft_cursor *cur = NULL;
	int rc = weft_cursor_create_stream_filtered(s->trace, p->streams[pos], &p->filter, &cur);
	for (;;) {
		chunk *c = chunk_new(p->batch);
		if (c == NULL) {
			weft_cursor_free(cur);
			return -1;
		}
		batch_out o = batch_out_at(c->col, 0);
		const weft_event *ev;
		while (rc >= 0 && c->n < p->batch && (rc = weft_cursor_next(cur, &ev)) == 1) {
			if (store_event(&s->codes, &o, c->n, ev) < 0) {
				rc = WEFT_ENOMEM;
				break;
			}
			c->n++;
		}
		if (rc < 0)
			attach_error(c, rc);
		else if (rc == 0)
			c->last = 1;
		if (attach_codes(s, c) < 0 || (c->last && attach_diags(s, c) < 0)) {
			chunk_free(c);
			weft_cursor_free(cur);
			return -1;
		}
		int last = c->last, failed = c->status < 0;
		if (queue_push(s->r, c) < 0 || failed) {
			weft_cursor_free(cur);
			return 1;
		}
		if (last)
			break;
	}
	weft_cursor_free(cur);
	return 0;
}

static void *reader_main(void *arg)
{
	reader_state s;
	memset(&s, 0, sizeof s);
	s.r = arg;
	struct wpy_par *p = s.r->par;
	int rc = weft_trace_open(p->path, &p->options, &s.trace);
	if (rc < 0) {
		chunk *c = calloc(1, sizeof *c);
		if (c != NULL) {
			attach_error(c, rc);
			queue_push(s.r, c);
		}
	} else {
		/* what opening found is the Python trace's already */
		s.diags_sent = weft_trace_diag_count(s.trace);
		for (size_t i = 0; i < s.r->count; i++) {
			int done = read_stream(&s, s.r->positions[i]);
			if (done == 0)
				continue;
			if (done < 0) {
				chunk *c = calloc(1, sizeof *c);
				if (c != NULL) {
					c->status = WEFT_ENOMEM;
					c->last = 1;
					queue_push(s.r, c);
				}
			}
			break;
		}
	}
	wpy_codes_free(&s.codes);
	weft_trace_free(s.trace);
	return NULL;
}

/* ---- Dealing the streams --------------------------------------------------------------- */

/*
 * Deals the streams to the readers as the library shares a trace among
 * threads and ranks (weft_trace_share_among(): the largest first, to the
 * one with the fewest bytes); each reader's positions come out in stream
 * order (p->streams is in stream order).
 */
static int deal(struct wpy_par *p, weft_trace *trace)
{
	size_t n = weft_trace_stream_count(trace);
	uint8_t *among = calloc(n ? n : 1, 1), *mine = malloc(n ? n : 1);
	int rc = among != NULL && mine != NULL ? 0 : -1;

	for (size_t i = 0; rc == 0 && i < p->stream_count; i++)
		among[p->streams[i]] = 1;
	for (int k = 0; rc == 0 && k < p->reader_count; k++) {
		if (weft_trace_share_among(trace, among, k, p->reader_count, mine) < 0) {
			rc = -1;
			break;
		}
		for (size_t i = 0; i < p->stream_count; i++)
			if (mine[p->streams[i]])
				p->readers[k].positions[p->readers[k].count++] = i;
	}
	free(among);
	free(mine);
	return rc;
}

/* ---- The consumer ---------------------------------------------------------------------- */

/*
 * Takes the next chunk of any reader (their queues in turn, so that none
 * waits on a full queue for long), waiting without the GIL; *from: its reader.
 */
static chunk *take_chunk(struct wpy_par *p, reader **from)
{
	reader *r = NULL;
	chunk *c;
	Py_BEGIN_ALLOW_THREADS
	pthread_mutex_lock(&p->lock);
	for (;;) {
		for (int k = 0; k < p->reader_count && r == NULL; k++) {
			int i = (p->next_reader + k) % p->reader_count;
			if (p->readers[i].head != NULL) {
				r = &p->readers[i];
				p->next_reader = (i + 1) % p->reader_count;
			}
		}
		if (r != NULL)
			break;
		pthread_cond_wait(&p->changed, &p->lock);
	}
	*from = r;
	c = r->head;
	r->head = c->next;
	if (r->head == NULL)
		r->tail = NULL;
	r->queued--;
	pthread_cond_broadcast(&p->changed);
	pthread_mutex_unlock(&p->lock);
	Py_END_ALLOW_THREADS
	return c;
}

/* Maps the chunk's codes to the trace's table (adding the new ones): -1 without memory. */
static int map_codes(wpy_trace *owner, reader *r, chunk *c)
{
	if (c->new_codes > 0) {
		uint32_t need = c->code_base + c->new_codes;
		if (need > r->remap_cap) {
			uint32_t *m = realloc(r->remap, need * 2 * sizeof *m);
			if (m == NULL)
				return -1;
			r->remap = m;
			r->remap_cap = need * 2;
		}
		for (uint32_t i = 0; i < c->new_codes; i++) {
			int64_t g = wpy_codes_index(&owner->codes, c->code_bytes[i], c->code_len[i]);
			if (g < 0)
				return -1;
			r->remap[c->code_base + i] = (uint32_t)g;
		}
	}
	uint32_t *code = c->col[COL_CODE];
	for (size_t i = 0; i < c->n; i++)
		code[i] = r->remap[code[i]];
	return 0;
}

/* The chunk's diagnostics into the Python trace's list: -1 with an error. */
static int add_diags(wpy_trace *owner, chunk *c)
{
	for (size_t i = 0; i < c->diag_count; i++) {
		const saved_diag *d = &c->diags[i];
		if (wpy_trace_add_diag(owner, d->severity, d->file, d->offset, d->message,
				       d->line) < 0)
			return -1;
	}
	return 0;
}

/* The chunk's columns as a batch dict (taken from the chunk). */
static PyObject *chunk_batch(chunk *c)
{
	PyObject *d = PyDict_New();
	for (int k = 0; d != NULL && k < COL_COUNT; k++) {
		PyObject *a = wpy_column_take(&c->col[k], k, c->n);
		if (a == NULL || PyDict_SetItemString(d, columns[k].name, a) < 0)
			Py_CLEAR(d);
		Py_XDECREF(a);
	}
	return d;
}

/*
 * The next batch: a dict, or NULL at the end (no error set) or with an
 * error raised (the reading is over either way).
 */
PyObject *wpy_par_next(struct wpy_par *p, wpy_trace *owner)
{
	while (!p->failed && p->streams_done < p->stream_count) {
		reader *r;
		chunk *c = take_chunk(p, &r);
		PyObject *batch = NULL;
		int failed = 0;
		if (map_codes(owner, r, c) < 0) {
			PyErr_NoMemory();
			failed = 1;
		} else if (add_diags(owner, c) < 0 || wpy_trace_publish_codes(owner) < 0) {
			failed = 1;
		} else if (c->status < 0) {
			wpy_raise_error(c->status, c->err_msg, c->err_file, c->err_offset, c->err_text);
			failed = 1;
		} else if (c->n > 0) {
			batch = chunk_batch(c);
			failed = batch == NULL;
		}
		if (c->last)
			p->streams_done++;
		chunk_free(c);
		if (failed) {
			p->failed = 1;
			return NULL;
		}
		if (batch != NULL)
			return batch;
	}
	return NULL;
}

/* ---- Start and stop -------------------------------------------------------------------- */

void wpy_par_free(struct wpy_par *p)
{
	if (p == NULL)
		return;
	pthread_mutex_lock(&p->lock);
	p->stop = 1;
	pthread_cond_broadcast(&p->changed);
	pthread_mutex_unlock(&p->lock);
	for (int k = 0; k < p->reader_count; k++) {
		reader *r = &p->readers[k];
		if (r->started)
			pthread_join(r->thread, NULL);
		while (r->head != NULL) {
			chunk *c = r->head;
			r->head = c->next;
			chunk_free(c);
		}
		free(r->positions);
		free(r->remap);
	}
	free(p->readers);
	pthread_cond_destroy(&p->changed);
	pthread_mutex_destroy(&p->lock);
	free(p);
}

struct wpy_par *wpy_par_start(wpy_trace *owner, const uint32_t *streams, size_t stream_count,
			      const weft_filter *filter, size_t batch, int threads)
{
	struct wpy_par *p = calloc(1, sizeof *p);
	if (p == NULL)
		return (struct wpy_par *)PyErr_NoMemory();
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->changed, NULL);
	p->streams = streams;
	p->stream_count = stream_count;
	p->batch = batch;
	p->filter = *filter;
	p->path = owner->open_path;
	p->options = owner->open_options;
	p->options.progress = NULL; /* the readers call no Python */
	p->options.progress_data = NULL;
	p->reader_count = threads < (int)stream_count ? threads : (int)stream_count;
	p->readers = calloc((size_t)p->reader_count, sizeof *p->readers);
	if (p->readers == NULL)
		goto nomem;
	for (int k = 0; k < p->reader_count; k++) {
		p->readers[k].par = p;
		p->readers[k].positions = malloc(stream_count * sizeof(size_t));
		if (p->readers[k].positions == NULL)
			goto nomem;
	}
	if (deal(p, owner->trace) < 0)
		goto nomem;
	for (int k = 0; k < p->reader_count; k++) {
		if (pthread_create(&p->readers[k].thread, NULL, reader_main, &p->readers[k]) != 0) {
			wpy_par_free(p);
			PyErr_SetString(PyExc_RuntimeError, "cannot start a reader thread");
			return NULL;
		}
		p->readers[k].started = 1;
	}
	return p;
nomem:
	wpy_par_free(p);
	return (struct wpy_par *)PyErr_NoMemory();
}
