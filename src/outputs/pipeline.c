/* SPDX-License-Identifier: MIT */
/*
 * outputs/pipeline.c - reading and writing on two cores. The calling
 * thread (the reader) merges the streams through the cursor and copies
 * each event, with its code, payload and data bytes, into a batch; full
 * batches go through a fixed ring to a worker thread (the consumer) that
 * formats them. The pointers of an event are only valid until the next
 * weft_cursor_next(), hence the copies.
 *
 * Each side waits for the other with a very short spin, then sleeps on a
 * condition variable until a quarter of the ring is ready: a side that is
 * faster does not burn its core, is woken once per quarter ring rather
 * than once per batch, and the other side still has three quarters of
 * the ring to go on with while it wakes up (which takes up to a
 * millisecond on virtual machines; longer spins were measured to gain
 * nothing). Either side can end the run: the reader when the cursor ends
 * or fails, the consumer when it asks to stop (an output error).
 *
 * The farm (weft__farm_run) shares the formatting among threads: batches
 * are claimed in order by whichever thread is free, each formats its
 * batch into the batch's own text, and whoever completes the next batch
 * to write writes it and every one after it that is ready, so the output
 * is the texts in batch order whatever the threads did. The reader helps
 * format when the ring is full instead of waiting, so N threads are N
 * busy cores. One lock guards the farm's counters: it is taken a few
 * times per batch of 1024 events, which is nothing beside their
 * formatting (microseconds per event for `weft table`).
 */
#include <assert.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/internal.h"
#include "outputs/pipeline.h"

/* Batches in the ring: 32 Ki events, about 4 MiB. */
#define RING_BATCHES 32
/* Events per batch, and bytes (codes, payloads, data) per batch. */
#define BATCH_EVENTS 1024
#define BATCH_BYTES (32u << 10)
/* A sleeping side is woken when this many batches are ready for it. */
#define WAKE_BATCHES (RING_BATCHES / 4)
/* Polls of the other side before sleeping (about a microsecond). */
#define SPIN_POLLS 100
/*
 * The reader asks for the cache lines it writes this many events ahead;
 * the allocations have that much slack after their end.
 */
#define WRITE_AHEAD 8
#define EVENTS_ALLOC (BATCH_EVENTS + WRITE_AHEAD)
#define BYTES_SLACK (WRITE_AHEAD * 32)
/* Traces smaller than this are dumped in one thread. */
#define PIPELINE_MIN_BYTES (4u << 20)
/* Most threads of a farm by default, and at all. */
#define FARM_DEFAULT_MAX 8
#define FARM_MAX 64
/* A batch's text keeps at most this much memory between uses. */
#define FARM_TEXT_KEEP (4u << 20)
/* Initial size of a batch's text. */
#define FARM_TEXT_INITIAL (64u << 10)

/* Copies of events and of the bytes they point to. */
typedef struct event_batch {
	weft_event *events;   /* BATCH_EVENTS slots (EVENTS_ALLOC allocated) */
	size_t count;
	unsigned char *bytes; /* the codes, payloads and data of the events */
	size_t used;
	size_t cap;           /* BATCH_BYTES, more while it holds a huge event
	                         (BYTES_SLACK more allocated) */
} event_batch;

/* One side's sleeping state, guarded by the ring's lock. */
typedef struct ring_side {
	pthread_cond_t cond;
	int asleep;
	size_t wake_at;       /* value of the awaited counter that wakes it */
} ring_side;

/*
 * Batch number n lives in batches[n % RING_BATCHES]. `filled` counts the
 * batches the reader has published, `drained` those the consumer has
 * given back; both only grow, and filled - drained <= RING_BATCHES.
 */
typedef struct event_ring {
	event_batch batches[RING_BATCHES];
	atomic_size_t filled;
	atomic_size_t drained;
	atomic_int reader_done;   /* no more batches will be published */
	atomic_int consumer_done; /* no more batches will be taken */
	pthread_mutex_t lock;
	ring_side reader;
	ring_side consumer;
	weft__consume_fn consume;
	void *ctx;
} event_ring;

/* ---- Policy --------------------------------------------------------------- */

/* Two threads when asked, or when there are enough CPUs and bytes. */
int weft__pipeline_wanted_bytes(const weft_trace *trace, uint64_t bytes, int min_cpus)
{
	int asked = trace->options.threads > 0 || weft__threads_from_environment() > 0;

	if (!asked && min_cpus > 2 && sysconf(_SC_NPROCESSORS_ONLN) < min_cpus)
		return 0;
	return weft__helper_wanted(trace->options.threads, bytes, PIPELINE_MIN_BYTES);
}

/* ---- Batches --------------------------------------------------------------- */

/* Empties a batch for reuse; one grown for a huge event shrinks back. */
static void batch_reset(event_batch *b)
{
	b->count = 0;
	b->used = 0;
	if (b->cap > BATCH_BYTES) {
		unsigned char *smaller = realloc(b->bytes, BATCH_BYTES + BYTES_SLACK);
		if (smaller != NULL) {
			b->bytes = smaller;
			b->cap = BATCH_BYTES;
		}
	}
}

/*
 * Copies n bytes without a call for the short codes and payloads that
 * make most events: two overlapping fixed-size copies, or three bytes.
 */
static inline void copy_bytes(unsigned char *dst, const unsigned char *src, size_t n)
{
	if (n > 16) {
		memcpy(dst, src, n);
	} else if (n >= 8) {
		memcpy(dst, src, 8);
		memcpy(dst + n - 8, src + n - 8, 8);
	} else if (n >= 4) {
		memcpy(dst, src, 4);
		memcpy(dst + n - 4, src + n - 4, 4);
	} else if (n > 0) {
		dst[0] = src[0];
		dst[n / 2] = src[n / 2];
		dst[n - 1] = src[n - 1];
	}
}

/* Copies n bytes into the batch; NULL stays NULL. */
static inline const void *batch_copy(event_batch *b, const void *src, size_t n)
{
	unsigned char *dst = b->bytes + b->used;

	if (src == NULL)
		return NULL;
	copy_bytes(dst, src, n);
	b->used += n;
	return dst;
}

/* Bytes an event needs in a batch besides its slot. */
static inline uint64_t event_bytes(const weft_event *ev)
{
	return (uint64_t)ev->code_len + ev->payload_size + ev->data_size;
}

/*
 * Copies the event into the batch: 1, or 0 when the batch is full. The
 * lines written a few events later are requested now: the consumer read
 * them last, on the other core.
 */
static inline int batch_add(event_batch *b, const weft_event *ev)
{
	if (b->count == BATCH_EVENTS || b->cap - b->used < event_bytes(ev))
		return 0;
	weft_event *copy = &b->events[b->count++];
	__builtin_prefetch(copy + WRITE_AHEAD, 1);
	__builtin_prefetch(b->bytes + b->used + WRITE_AHEAD * 32, 1);
	*copy = *ev;
	copy->code = batch_copy(b, ev->code, ev->code_len);
	copy->payload = batch_copy(b, ev->payload, ev->payload_size);
	copy->data = batch_copy(b, ev->data, (size_t)ev->data_size);
	return 1;
}

/*
 * Makes an empty batch big enough for an event larger than BATCH_BYTES
 * (a huge jumbo event): memory grows with the largest event, as the
 * stream reader's window does. 0, or WEFT_ENOMEM.
 */
static int batch_make_room(event_batch *b, const weft_event *ev)
{
	uint64_t need = event_bytes(ev);

	if (need <= b->cap)
		return 0;
	unsigned char *bigger = need <= SIZE_MAX - BYTES_SLACK
					? malloc((size_t)need + BYTES_SLACK) : NULL;
	if (bigger == NULL)
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET,
				   "out of memory for a copy of an event of %llu bytes",
				   (unsigned long long)need);
	free(b->bytes);
	b->bytes = bigger;
	b->cap = (size_t)need;
	return 0;
}

/* An empty batch's memory; 0, or -1 without memory (free it anyway). */
static int batch_alloc(event_batch *b)
{
	b->events = malloc(EVENTS_ALLOC * sizeof *b->events);
	b->bytes = malloc(BATCH_BYTES + BYTES_SLACK);
	b->cap = BATCH_BYTES;
	b->count = b->used = 0;
	return b->events != NULL && b->bytes != NULL ? 0 : -1;
}

static void batch_release(event_batch *b)
{
	free(b->events);
	free(b->bytes);
}

/*
 * Where the reader's batches come from and go: the ring's consumer or the
 * farm's formatters. `take` gives the empty batch that will be number
 * `filled` (NULL: stop reading), `publish` makes `filled` batches ready,
 * `end` says that no more will come.
 */
typedef struct batch_queue {
	event_batch *(*take)(void *q, size_t filled);
	void (*publish)(void *q, size_t filled);
	void (*end)(void *q);
	void *q;
} batch_queue;

/* ---- The ring ---------------------------------------------------------------- */

/* Frees the ring and its batches (NULL is fine). */
static void ring_free(event_ring *r)
{
	if (r == NULL)
		return;
	for (int i = 0; i < RING_BATCHES; i++)
		batch_release(&r->batches[i]);
	pthread_mutex_destroy(&r->lock);
	pthread_cond_destroy(&r->reader.cond);
	pthread_cond_destroy(&r->consumer.cond);
	free(r);
}

/* A ring with all its batches allocated, or NULL. */
static event_ring *ring_create(weft__consume_fn consume, void *ctx)
{
	event_ring *r = calloc(1, sizeof *r);

	if (r == NULL)
		return NULL;
	pthread_mutex_init(&r->lock, NULL);
	pthread_cond_init(&r->reader.cond, NULL);
	pthread_cond_init(&r->consumer.cond, NULL);
	r->consume = consume;
	r->ctx = ctx;
	for (int i = 0; i < RING_BATCHES; i++)
		if (batch_alloc(&r->batches[i]) < 0) {
			ring_free(r);
			return NULL;
		}
	return r;
}

/* Lets the CPU breathe inside a spin loop. */
static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

/* 1 when *counter has reached `need` or the other side has ended. */
static inline int ring_ready(const atomic_size_t *counter, size_t need,
			     const atomic_int *ended)
{
	return atomic_load_explicit(counter, memory_order_acquire) >= need ||
	       atomic_load_explicit(ended, memory_order_acquire);
}

/*
 * Waits until *counter reaches `need` or the other side ends: a short
 * spin first, then sleep until *counter reaches `need_asleep` (>= need),
 * so that one wake-up brings several batches.
 */
static void ring_wait(event_ring *r, ring_side *self, const atomic_size_t *counter,
		      size_t need, size_t need_asleep, const atomic_int *ended)
{
	for (int i = 0; i < SPIN_POLLS; i++) {
		if (ring_ready(counter, need, ended))
			return;
		cpu_relax();
	}
	pthread_mutex_lock(&r->lock);
	self->asleep = 1;
	self->wake_at = need_asleep;
	while (!ring_ready(counter, need_asleep, ended))
		pthread_cond_wait(&self->cond, &r->lock);
	self->asleep = 0;
	pthread_mutex_unlock(&r->lock);
}

/* Sets *counter to `value` and wakes the other side when it waits for it. */
static void ring_advance(event_ring *r, atomic_size_t *counter, size_t value,
			 ring_side *other)
{
	pthread_mutex_lock(&r->lock);
	atomic_store_explicit(counter, value, memory_order_release);
	if (other->asleep && value >= other->wake_at)
		pthread_cond_signal(&other->cond);
	pthread_mutex_unlock(&r->lock);
}

/* Raises an end flag and wakes the other side. */
static void ring_end(event_ring *r, atomic_int *flag, ring_side *other)
{
	pthread_mutex_lock(&r->lock);
	atomic_store_explicit(flag, 1, memory_order_release);
	if (other->asleep)
		pthread_cond_signal(&other->cond);
	pthread_mutex_unlock(&r->lock);
}

/* ---- The reader ----------------------------------------------------------------- */

/*
 * The batch the reader fills after publishing `filled` batches, once the
 * consumer has given it back. NULL when the consumer has stopped.
 */
static event_batch *ring_take(void *q, size_t filled)
{
	event_ring *r = q;

	if (filled >= RING_BATCHES)
		ring_wait(r, &r->reader, &r->drained, filled - RING_BATCHES + 1,
			  filled - RING_BATCHES + WAKE_BATCHES, &r->consumer_done);
	if (atomic_load_explicit(&r->consumer_done, memory_order_acquire))
		return NULL;
	event_batch *b = &r->batches[filled % RING_BATCHES];
	batch_reset(b);
	return b;
}

static void ring_publish(void *q, size_t filled)
{
	event_ring *r = q;
	ring_advance(r, &r->filled, filled, &r->consumer);
}

static void ring_end_reading(void *q)
{
	event_ring *r = q;
	ring_end(r, &r->reader_done, &r->consumer);
}

/*
 * The reader: events from the cursor into batches, batches to the queue,
 * until the cursor ends or fails or the queue stops taking them. The last
 * partial batch is published too, so that everything read is written.
 */
static int reader_run(const batch_queue *bq, weft_cursor *cursor)
{
	size_t filled = 0;
	event_batch *b = bq->take(bq->q, filled);
	const weft_event *ev;
	int rc = 0;

	while (b != NULL && (rc = weft_cursor_next(cursor, &ev)) == 1) {
		if (WEFT_LIKELY(batch_add(b, ev)))
			continue;
		if (b->count > 0) {
			bq->publish(bq->q, ++filled);
			if ((b = bq->take(bq->q, filled)) == NULL)
				break;
		}
		if ((rc = batch_make_room(b, ev)) < 0)
			break;
		batch_add(b, ev);
	}
	if (b != NULL && b->count > 0)
		bq->publish(bq->q, ++filled);
	bq->end(bq->q);
	return rc < 0 ? rc : 0;
}

/* ---- The consumer ----------------------------------------------------------------- */

/*
 * The consumer thread: batches in order until the reader is done and the
 * ring is empty, or until the consumer asks to stop.
 */
static void *consumer_main(void *arg)
{
	event_ring *r = arg;
	size_t drained = 0;

	for (;;) {
		ring_wait(r, &r->consumer, &r->filled, drained + 1,
			  drained + WAKE_BATCHES, &r->reader_done);
		if (atomic_load_explicit(&r->filled, memory_order_acquire) == drained)
			break; /* the reader is done and everything is consumed */
		const event_batch *b = &r->batches[drained % RING_BATCHES];
		int stop = r->consume(r->ctx, b->events, b->count);
		ring_advance(r, &r->drained, ++drained, &r->reader);
		if (stop)
			break;
	}
	ring_end(r, &r->consumer_done, &r->reader);
	return NULL;
}

/* ---- Running -------------------------------------------------------------------- */

/* Everything in the calling thread, one event at a time, no copies. */
static int run_in_one_thread(weft_cursor *cursor, weft__consume_fn consume, void *ctx)
{
	const weft_event *ev;
	int rc;

	while ((rc = weft_cursor_next(cursor, &ev)) == 1)
		if (consume(ctx, ev, 1) != 0)
			return 0;
	return rc;
}

/* Two threads when asked and possible; else one. */
int weft__pipeline_run(weft_cursor *cursor, weft__consume_fn consume, void *ctx,
		       int threaded)
{
	event_ring *r = threaded ? ring_create(consume, ctx) : NULL;
	pthread_t consumer;

	if (r != NULL && pthread_create(&consumer, NULL, consumer_main, r) != 0) {
		ring_free(r);
		r = NULL;
	}
	if (r == NULL)
		return run_in_one_thread(cursor, consume, ctx);
	batch_queue bq = { ring_take, ring_publish, ring_end_reading, r };
	int rc = reader_run(&bq, cursor);
	pthread_join(consumer, NULL);
	ring_free(r);
	return rc;
}

/* ---- The farm ------------------------------------------------------------------- */

/* A batch's text, and whether it is formatted and waits to be written. */
typedef struct farm_slot {
	weft__farm_text text;
	int done;
} farm_slot;

/*
 * Batch number n lives in batches[n % RING_BATCHES] with its text in
 * slots[n % RING_BATCHES]. Batches are published (filled), claimed by a
 * formatter, formatted, then written in order (written); the counters
 * only grow, written <= claimed <= filled <= written + RING_BATCHES, and
 * all of them are guarded by `lock`.
 */
typedef struct event_farm {
	event_batch batches[RING_BATCHES];
	farm_slot slots[RING_BATCHES];
	const weft__farm *ops;
	pthread_mutex_t lock;
	pthread_cond_t work;    /* idle formatters: a batch to claim, or the end */
	pthread_cond_t space;   /* the waiting reader: a batch written, or a stop */
	size_t filled, claimed, written;
	size_t stop_at;         /* the first batch not to write (SIZE_MAX: none) */
	int reader_done;
	int emitting;           /* a thread is writing texts (the lock released) */
	int emit_stopped;       /* `emit` asked to stop */
	int idle;               /* formatters waiting on `work` */
	int reader_waits;       /* the reader waits on `space` */
	weft__error_copy error; /* why batch stop_at failed */
} event_farm;

int weft__farm_threads(const weft_trace *trace)
{
	long n = trace->options.threads > 0 ? trace->options.threads
					    : weft__threads_from_environment();
	if (n <= 0) {
		/* the bytes of the files (consecutive streams that share one,
		 * ROSS's, count it once) */
		uint64_t bytes = 0;
		const char *file = NULL;
		for (size_t i = 0; i < weft_trace_stream_count(trace); i++) {
			const weft_stream_info *s = weft_trace_stream(trace, i);
			if (file == NULL || s->file == NULL || strcmp(s->file, file) != 0)
				bytes += s->file_size;
			file = s->file;
		}
		n = bytes >= PIPELINE_MIN_BYTES ? sysconf(_SC_NPROCESSORS_ONLN) : 1;
		if (n > FARM_DEFAULT_MAX)
			n = FARM_DEFAULT_MAX;
	}
	return n < 1 ? 1 : n > FARM_MAX ? FARM_MAX : (int)n;
}

static void farm_free(event_farm *f)
{
	if (f == NULL)
		return;
	for (int i = 0; i < RING_BATCHES; i++) {
		batch_release(&f->batches[i]);
		free(f->slots[i].text.buf);
	}
	pthread_mutex_destroy(&f->lock);
	pthread_cond_destroy(&f->work);
	pthread_cond_destroy(&f->space);
	free(f);
}

static event_farm *farm_create(const weft__farm *ops)
{
	event_farm *f = calloc(1, sizeof *f);

	if (f == NULL)
		return NULL;
	pthread_mutex_init(&f->lock, NULL);
	pthread_cond_init(&f->work, NULL);
	pthread_cond_init(&f->space, NULL);
	f->ops = ops;
	f->stop_at = SIZE_MAX;
	for (int i = 0; i < RING_BATCHES; i++) {
		weft__farm_text *t = &f->slots[i].text;
		t->buf = malloc(FARM_TEXT_INITIAL);
		t->cap = FARM_TEXT_INITIAL;
		if (batch_alloc(&f->batches[i]) < 0 || t->buf == NULL) {
			farm_free(f);
			return NULL;
		}
	}
	return f;
}

/* 1 when a published batch before the stop waits for a formatter. */
static int farm_claimable(const event_farm *f)
{
	return f->claimed < f->filled && f->claimed < f->stop_at;
}

/* 1 when no batch will ever be claimed again. */
static int farm_all_claimed(const event_farm *f)
{
	return f->claimed >= f->stop_at || (f->reader_done && f->claimed >= f->filled);
}

/* Empties a written slot; a text grown for huge lines shrinks back. */
static void slot_reset(farm_slot *slot)
{
	slot->done = 0;
	slot->text.len = 0;
	if (slot->text.cap > FARM_TEXT_KEEP) {
		char *smaller = realloc(slot->text.buf, FARM_TEXT_INITIAL);
		if (smaller != NULL) {
			slot->text.buf = smaller;
			slot->text.cap = FARM_TEXT_INITIAL;
		}
	}
}

/* Stops the run before batch `at`; wakes everyone. Lock held. */
static void farm_stop(event_farm *f, size_t at)
{
	if (at < f->stop_at)
		f->stop_at = at;
	pthread_cond_broadcast(&f->work);
	pthread_cond_broadcast(&f->space);
}

/*
 * Writes the formatted batches that come next, in order, unless another
 * thread is at it (it will find them: it checks again after each text).
 * The lock is held on entry and exit, released around each `emit`.
 */
static void farm_emit_ready(event_farm *f)
{
	if (f->emitting)
		return;
	f->emitting = 1;
	while (f->written < f->stop_at && f->written < f->filled &&
	       f->slots[f->written % RING_BATCHES].done) {
		farm_slot *slot = &f->slots[f->written % RING_BATCHES];
		pthread_mutex_unlock(&f->lock);
		int stop = f->ops->emit(f->ops->ctx, slot->text.buf, slot->text.len);
		pthread_mutex_lock(&f->lock);
		slot_reset(slot);
		f->written++;
		if (stop) {
			f->emit_stopped = 1;
			farm_stop(f, f->written);
		}
		if (f->reader_waits)
			pthread_cond_signal(&f->space);
	}
	f->emitting = 0;
}

/*
 * Formats batch `c` (claimed by this thread) with worker `worker`'s state,
 * then writes what is ready. The lock is held on entry and exit, released
 * while formatting. A failed batch stops the run before it, keeping its
 * error unless an earlier batch failed too.
 */
static void farm_format(event_farm *f, int worker, size_t c)
{
	event_batch *b = &f->batches[c % RING_BATCHES];
	farm_slot *slot = &f->slots[c % RING_BATCHES];

	pthread_mutex_unlock(&f->lock);
	int rc = f->ops->format(f->ops->ctx, worker, b->events, b->count, &slot->text);
	weft__error_copy failure;
	if (rc < 0)
		weft__error_save(&failure, rc);
	pthread_mutex_lock(&f->lock);
	if (rc < 0 && c < f->stop_at) {
		f->error = failure;
		farm_stop(f, c);
	}
	slot->done = 1;
	farm_emit_ready(f);
}

/* A formatter: claims batches until none is left to claim. */
static void farm_work(event_farm *f, int worker)
{
	pthread_mutex_lock(&f->lock);
	for (;;) {
		if (farm_claimable(f)) {
			farm_format(f, worker, f->claimed++);
			continue;
		}
		if (farm_all_claimed(f))
			break;
		f->idle++;
		pthread_cond_wait(&f->work, &f->lock);
		f->idle--;
	}
	pthread_mutex_unlock(&f->lock);
}

/* A formatter thread's start. */
typedef struct farm_worker {
	event_farm *f;
	int worker;
	pthread_t thread;
} farm_worker;

static void *farm_worker_main(void *arg)
{
	farm_worker *w = arg;
	farm_work(w->f, w->worker);
	return NULL;
}

/*
 * The reader's next empty batch (number `filled`): while the ring is
 * full, it formats a published batch itself, or waits for one to be
 * written when all are being formatted. NULL once the run stopped.
 */
static event_batch *farm_take(void *q, size_t filled)
{
	event_farm *f = q;

	pthread_mutex_lock(&f->lock);
	while (f->stop_at == SIZE_MAX && filled - f->written >= RING_BATCHES) {
		if (farm_claimable(f)) {
			farm_format(f, 0, f->claimed++);
			continue;
		}
		f->reader_waits = 1;
		pthread_cond_wait(&f->space, &f->lock);
		f->reader_waits = 0;
	}
	int stopped = f->stop_at != SIZE_MAX;
	pthread_mutex_unlock(&f->lock);
	if (stopped)
		return NULL;
	event_batch *b = &f->batches[filled % RING_BATCHES];
	batch_reset(b);
	return b;
}

static void farm_publish(void *q, size_t filled)
{
	event_farm *f = q;

	pthread_mutex_lock(&f->lock);
	f->filled = filled;
	if (f->idle > 0)
		pthread_cond_signal(&f->work);
	pthread_mutex_unlock(&f->lock);
}

static void farm_end_reading(void *q)
{
	event_farm *f = q;

	pthread_mutex_lock(&f->lock);
	f->reader_done = 1;
	pthread_cond_broadcast(&f->work);
	pthread_mutex_unlock(&f->lock);
}

int weft__farm_run(weft_cursor *cursor, const weft__farm *farm, int threads)
{
	event_farm *f = farm_create(farm);
	farm_worker workers[FARM_MAX];
	int started = 0;

	if (f == NULL)
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET,
				   "out of memory for the batches of %d threads", threads);
	if (threads > FARM_MAX)
		threads = FARM_MAX;
	for (int i = 1; i < threads; i++) {
		workers[started] = (farm_worker){ .f = f, .worker = i };
		if (pthread_create(&workers[started].thread, NULL, farm_worker_main,
				   &workers[started]) != 0)
			break; /* fewer threads: the same bytes */
		started++;
	}
	batch_queue bq = { farm_take, farm_publish, farm_end_reading, f };
	int rc = reader_run(&bq, cursor);
	farm_work(f, 0); /* the reader helps with what is left */
	for (int i = 0; i < started; i++)
		pthread_join(workers[i].thread, NULL);
	assert(f->written == (f->stop_at < f->filled ? f->stop_at : f->filled));
	if (f->emit_stopped)
		rc = 1;
	else if (f->stop_at != SIZE_MAX)
		rc = weft__error_raise(&f->error);
	farm_free(f);
	return rc;
}
