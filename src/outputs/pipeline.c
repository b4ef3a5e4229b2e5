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
 */
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

/* Two threads when asked, or when there are two CPUs and enough bytes. */
int weft__pipeline_wanted(const weft_trace *trace)
{
	uint64_t bytes = 0;
	for (size_t i = 0; i < weft_trace_stream_count(trace); i++)
		bytes += weft_trace_stream(trace, i)->file_size;
	return weft__pipeline_wanted_bytes(trace, bytes, 0);
}

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

/* ---- The ring ---------------------------------------------------------------- */

/* Frees the ring and its batches (NULL is fine). */
static void ring_free(event_ring *r)
{
	if (r == NULL)
		return;
	for (int i = 0; i < RING_BATCHES; i++) {
		free(r->batches[i].events);
		free(r->batches[i].bytes);
	}
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
	for (int i = 0; i < RING_BATCHES; i++) {
		event_batch *b = &r->batches[i];
		b->events = malloc(EVENTS_ALLOC * sizeof *b->events);
		b->bytes = malloc(BATCH_BYTES + BYTES_SLACK);
		b->cap = BATCH_BYTES;
		if (b->events == NULL || b->bytes == NULL) {
			ring_free(r);
			return NULL;
		}
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
static event_batch *reader_take_batch(event_ring *r, size_t filled)
{
	if (filled >= RING_BATCHES)
		ring_wait(r, &r->reader, &r->drained, filled - RING_BATCHES + 1,
			  filled - RING_BATCHES + WAKE_BATCHES, &r->consumer_done);
	if (atomic_load_explicit(&r->consumer_done, memory_order_acquire))
		return NULL;
	event_batch *b = &r->batches[filled % RING_BATCHES];
	batch_reset(b);
	return b;
}

/*
 * The reader: events from the cursor into batches, batches into the
 * ring, until the cursor ends or fails or the consumer stops. The last
 * partial batch is published too, so that everything read is written.
 */
static int reader_run(event_ring *r, weft_cursor *cursor)
{
	size_t filled = 0;
	event_batch *b = reader_take_batch(r, filled);
	const weft_event *ev;
	int rc = 0;

	while (b != NULL && (rc = weft_cursor_next(cursor, &ev)) == 1) {
		if (WEFT_LIKELY(batch_add(b, ev)))
			continue;
		if (b->count > 0) {
			ring_advance(r, &r->filled, ++filled, &r->consumer);
			if ((b = reader_take_batch(r, filled)) == NULL)
				break;
		}
		if ((rc = batch_make_room(b, ev)) < 0)
			break;
		batch_add(b, ev);
	}
	if (b != NULL && b->count > 0)
		ring_advance(r, &r->filled, ++filled, &r->consumer);
	ring_end(r, &r->reader_done, &r->consumer);
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
	int rc = reader_run(r, cursor);
	pthread_join(consumer, NULL);
	ring_free(r);
	return rc;
}
