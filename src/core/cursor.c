/* SPDX-License-Identifier: MIT */
/*
 * core/cursor.c - delivering the events of one stream, or of many streams
 * merged by time with a binary min-heap (one entry per live stream).
 *
 * Memory is one event per stream plus what each backend's stream reader
 * holds (a bounded window): the merge never buffers events.
 */
#include <fnmatch.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"

/*
 * A stream in a cursor: its reader and a batch of its next events (read
 * many at a time when the backend can, which saves a call per event).
 * batch[next] is the stream's current event.
 */
typedef struct cursor_slot {
	void *state;
	weft_event *batch;
	uint32_t count, next;
	uint32_t stream;
} cursor_slot;

/* Events per batch; 1 for cursors over very many streams (memory). */
#define BATCH_EVENTS 64
#define BATCH_MAX_STREAMS 1024

/*
 * fnmatch() is slow next to reading an event, and traces have few distinct
 * codes: the verdict for each code is cached in a direct-mapped table.
 */
#define CODE_CACHE_SIZE 1024
#define CODE_CACHE_MAX_LEN 15
typedef struct code_verdict {
	uint8_t len;        /* 0 = empty entry */
	uint8_t selected;
	char code[CODE_CACHE_MAX_LEN];
} code_verdict;

/* A heap entry keeps its key next to it: no pointer chasing to compare. */
typedef struct heap_entry {
	uint64_t time;
	uint32_t stream;
	uint32_t slot;
} heap_entry;

struct weft_cursor {
	weft_trace *trace;
	uint64_t from, to;
	char *code_pattern;
	code_verdict *code_cache;
	cursor_slot *slots;
	size_t slot_count;
	uint32_t batch_cap;
	uint8_t *stream_selected; /* file-order cursors: streams to deliver */
	heap_entry *heap; /* ordered by (time, stream) */
	size_t heap_count;
	long delivered;   /* slot whose event was handed out last, or -1 */
	int unfiltered;   /* 1: every event is selected (fast path) */
	weft_order order; /* TIME or STORED (weft_cursor_order) */
};

/*
 * Heap order: time, then the event's stream index, then the slot (one
 * per stream, or per file for the cursors over whole files, whose current
 * events can be of any stream and, for a stream written to several
 * files, of the same one): equal times come out in stream order whatever
 * the reader, and always in the same order.
 */
static inline int entry_before(const heap_entry *a, const heap_entry *b)
{
	if (a->time != b->time)
		return a->time < b->time;
	if (a->stream != b->stream)
		return a->stream < b->stream;
	return a->slot < b->slot;
}

/* The heap entry of a slot whose current event is batch[next]. */
static inline heap_entry slot_entry(const weft_cursor *c, uint32_t slot)
{
	const cursor_slot *s = &c->slots[slot];
	const weft_event *ev = &s->batch[s->next];
	return (heap_entry){ ev->time, ev->stream, slot };
}

static void heap_sift_down(weft_cursor *c, size_t i)
{
	heap_entry *h = c->heap;
	size_t n = c->heap_count;
	heap_entry moving = h[i];
	for (;;) {
		size_t l = 2 * i + 1;
		if (l >= n)
			break;
		size_t best = l;
		if (l + 1 < n && entry_before(&h[l + 1], &h[l]))
			best = l + 1;
		if (!entry_before(&h[best], &moving))
			break;
		h[i] = h[best];
		i = best;
	}
	h[i] = moving;
}

static void heap_sift_up(weft_cursor *c, size_t i)
{
	heap_entry *h = c->heap;
	heap_entry moving = h[i];
	while (i > 0) {
		size_t parent = (i - 1) / 2;
		if (!entry_before(&moving, &h[parent]))
			break;
		h[i] = h[parent];
		i = parent;
	}
	h[i] = moving;
}

/* fnmatch() of the code pattern on an event code (not NUL-terminated). */
static int code_matches(const char *pattern, const char *code, uint32_t len)
{
	char buf[256];
	size_t n = len < sizeof buf - 1 ? len : sizeof buf - 1;
	memcpy(buf, code, n);
	buf[n] = '\0';
	return fnmatch(pattern, buf, 0) == 0;
}

/* The code pattern's verdict on a code, through the cache. */
static int code_selected(weft_cursor *c, const char *code, uint32_t len)
{
	if (len == 0 || len > CODE_CACHE_MAX_LEN || c->code_cache == NULL)
		return code_matches(c->code_pattern, code, len);
	uint32_t h = 2166136261u;
	for (uint32_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)code[i]) * 16777619u;
	code_verdict *v = &c->code_cache[h % CODE_CACHE_SIZE];
	if (v->len != len || memcmp(v->code, code, len) != 0) {
		v->len = (uint8_t)len;
		memcpy(v->code, code, len);
		v->selected = (uint8_t)code_matches(c->code_pattern, code, len);
	}
	return v->selected;
}

/* Does the event pass the time window and the code pattern? */
static int event_selected(weft_cursor *c, const weft_event *ev)
{
	if (ev->time < c->from || ev->time > c->to)
		return 0;
	if (c->stream_selected != NULL && !c->stream_selected[ev->stream])
		return 0;
	if (c->code_pattern != NULL && !code_selected(c, ev->code, ev->code_len))
		return 0;
	return 1;
}

/* Reads the next batch of a slot's stream: > 0 events, 0 at end, < 0. */
static int slot_refill(weft_cursor *c, cursor_slot *slot)
{
	const weft_backend *b = c->trace->backend;
	int rc;
	if (b->stream_next_batch != NULL && c->batch_cap > 1)
		rc = b->stream_next_batch(slot->state, slot->batch, c->batch_cap);
	else
		rc = b->stream_next(slot->state, &slot->batch[0]);
	slot->next = 0;
	slot->count = rc > 0 ? (uint32_t)rc : 0;
	weft__progress_count(c->trace, slot->count);
	return rc;
}

/*
 * Moves a slot to its next selected event: 1 when there is one, 0 when the
 * stream ended. A stream that fails is recorded as a diagnostic and ends,
 * so that one broken stream does not hide the others.
 */
static int slot_advance(weft_cursor *c, cursor_slot *slot)
{
	for (;;) {
		if (++slot->next >= slot->count) {
			int rc = slot_refill(c, slot);
			if (rc <= 0) {
				if (rc < 0)
					weft__trace_diag_last_error(c->trace, WEFT_SEV_ERROR, rc,
								    " (the stream ends here)");
				c->trace->backend->stream_close(slot->state);
				slot->state = NULL;
				return 0;
			}
		}
		if (event_selected(c, &slot->batch[slot->next]))
			return 1;
	}
}

/* Allocates a cursor with room for `n` streams. */
static weft_cursor *cursor_alloc(weft_trace *trace, size_t n)
{
	weft_cursor *c = calloc(1, sizeof *c);
	if (c == NULL)
		return NULL;
	c->trace = trace;
	c->to = UINT64_MAX;
	c->delivered = -1;
	c->slots = calloc(n ? n : 1, sizeof *c->slots);
	c->heap = calloc(n ? n : 1, sizeof *c->heap);
	c->batch_cap = n > BATCH_MAX_STREAMS ? 1 : BATCH_EVENTS;
	if (c->slots == NULL || c->heap == NULL) {
		weft_cursor_free(c);
		return NULL;
	}
	return c;
}

/*
 * Opens stream `index` into a new slot and queues its first event. When
 * `tolerant`, a stream that cannot be opened becomes a diagnostic and is
 * left out (a merged cursor still shows the others).
 */
static int cursor_add_stream(weft_cursor *c, uint32_t index, int tolerant)
{
	cursor_slot *slot = &c->slots[c->slot_count++];
	slot->stream = index;
	slot->batch = malloc(c->batch_cap * sizeof *slot->batch);
	if (slot->batch == NULL)
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	int rc = c->trace->backend->stream_open(c->trace, index,
						c->order == WEFT_ORDER_STORED, &slot->state);
	if (rc < 0) {
		slot->state = NULL;
		if (!tolerant)
			return rc;
		weft__trace_diag_last_error(c->trace, WEFT_SEV_ERROR, rc,
					    " (the stream is left out)");
		return 0;
	}
	if (slot_advance(c, slot)) {
		c->heap[c->heap_count++] = slot_entry(c, (uint32_t)(slot - c->slots));
		heap_sift_up(c, c->heap_count - 1);
	}
	return 0;
}

/* Data files of a trace whose backend reads whole files (1 by default). */
static size_t file_count(const weft_trace *trace)
{
	return trace->backend->file_count != NULL ? trace->backend->file_count(trace) : 1;
}

weft_order weft_trace_natural_order(const weft_trace *trace)
{
	return trace->backend->natural_order == WEFT_ORDER_STORED ? WEFT_ORDER_STORED
								   : WEFT_ORDER_TIME;
}

/*
 * The order a filter asks for, resolved to TIME or STORED in *out (the
 * trace's open option for DEFAULT, the backend's for NATURAL); WEFT_EINVAL
 * for a value that is no weft_order.
 */
static int resolve_order(const weft_trace *trace, const weft_filter *filter, weft_order *out)
{
	int order = filter != NULL ? filter->order : WEFT_ORDER_DEFAULT;

	*out = WEFT_ORDER_TIME; /* set on every path (gcc -O3 cannot tell) */
	switch (order) {
	case WEFT_ORDER_DEFAULT:
		*out = trace->options.stored_order ? WEFT_ORDER_STORED : WEFT_ORDER_TIME;
		return 0;
	case WEFT_ORDER_NATURAL:
		*out = weft_trace_natural_order(trace);
		return 0;
	case WEFT_ORDER_TIME:
	case WEFT_ORDER_STORED:
		*out = (weft_order)order;
		return 0;
	default:
		return weft__error(WEFT_EINVAL, trace->path, WEFT_NO_OFFSET,
				   "no cursor order %d (weft_order: 0 to 3)", order);
	}
}

/* 1 when the merged cursor reads whole files rather than streams. */
static int uses_file_order(const weft_trace *trace, weft_order order)
{
	const weft_backend *b = trace->backend;
	return b->file_open != NULL && (order == WEFT_ORDER_STORED || b->file_order_default);
}

weft_order weft_cursor_order(const weft_cursor *c)
{
	/* whole files merged by time (ROSS) are a time order, whatever was asked */
	if (c->trace->backend->file_order_default)
		return WEFT_ORDER_TIME;
	return c->order;
}

/*
 * Opens data file `f` (or its piece `piece` of `pieces`) into a new slot
 * and queues its first event.
 */
static int cursor_add_file(weft_cursor *c, size_t f, int piece, size_t pieces)
{
	weft_trace *trace = c->trace;
	cursor_slot *slot = &c->slots[c->slot_count++];
	slot->batch = malloc(c->batch_cap * sizeof *slot->batch);
	if (slot->batch == NULL)
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	int rc = piece >= 0
		 ? trace->backend->dist_open->piece_open(trace, f, (size_t)piece, pieces,
							 &slot->state)
		 : trace->backend->file_open(trace, f, &slot->state);
	if (rc < 0) {
		slot->state = NULL;
		return rc;
	}
	if (slot_advance(c, slot)) {
		c->heap[c->heap_count++] = slot_entry(c, (uint32_t)(slot - c->slots));
		heap_sift_up(c, c->heap_count - 1);
	}
	return 0;
}

/*
 * The slots of a cursor over whole files: one per data file, each fed by
 * the backend's file reader (events of many streams in file order), merged
 * by time across files (or, `piece` >= 0, that piece of `pieces` of each
 * file: weft__cursor_create_pieces). The stream pattern is applied per
 * event through a table of selected streams; a file that holds none of
 * them is not opened (when the backend says which file holds a stream).
 */
static int cursor_add_files(weft_cursor *c, const char *stream_pattern, const uint8_t *share,
			    int piece, size_t pieces)
{
	weft_trace *trace = c->trace;
	if (stream_pattern != NULL || share != NULL) {
		c->stream_selected = calloc(trace->stream_count ? trace->stream_count : 1, 1);
		if (c->stream_selected == NULL)
			return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
		for (size_t i = 0; i < trace->stream_count; i++)
			c->stream_selected[i] =
				(share == NULL || share[i]) &&
				(stream_pattern == NULL ||
				 fnmatch(stream_pattern, trace->streams[i].path, 0) == 0);
	}
	uint8_t *wanted = NULL; /* the files of the selected streams */
	if (c->stream_selected != NULL && trace->backend->stream_file != NULL) {
		if ((wanted = calloc(file_count(trace) + 1, 1)) == NULL)
			return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
		for (size_t i = 0; i < trace->stream_count; i++)
			if (c->stream_selected[i])
				wanted[trace->backend->stream_file(trace, (uint32_t)i)] = 1;
	}
	int rc = 0;
	for (size_t f = 0; rc == 0 && f < file_count(trace); f++)
		if (wanted == NULL || wanted[f])
			rc = cursor_add_file(c, f, piece, pieces);
	free(wanted);
	return rc;
}

/* Sets the time window and the code pattern of a new cursor. */
static int cursor_set_filter(weft_cursor *c, const weft_filter *filter)
{
	if (filter == NULL)
		return 0;
	c->from = filter->from;
	if (filter->to != 0)
		c->to = filter->to;
	if (filter->code_pattern != NULL &&
	    ((c->code_pattern = strdup(filter->code_pattern)) == NULL ||
	     (c->code_cache = calloc(CODE_CACHE_SIZE, sizeof *c->code_cache)) == NULL))
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	return 0;
}

/* Notes whether event_selected() is true of every event (no filter). */
static void cursor_set_unfiltered(weft_cursor *c)
{
	c->unfiltered = c->from == 0 && c->to == UINT64_MAX &&
			c->stream_selected == NULL && c->code_pattern == NULL;
}

/*
 * A merged cursor over the streams that match `filter` and `share` (NULL:
 * all); over piece `piece` of `pieces` of each file when >= 0 (whole
 * files: -1).
 */
static int cursor_create(weft_trace *trace, const weft_filter *filter, const uint8_t *share,
			 int piece, size_t pieces, weft_cursor **out)
{
	weft_order order;
	*out = NULL;
	int rc = resolve_order(trace, filter, &order);
	if (rc < 0)
		return rc;
	int file_order = uses_file_order(trace, order);
	weft_cursor *c = cursor_alloc(trace, file_order ? file_count(trace) : trace->stream_count);
	if (c == NULL)
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	c->order = order;
	const char *stream_pattern = filter != NULL ? filter->stream_pattern : NULL;
	rc = cursor_set_filter(c, filter);
	if (rc == 0 && file_order)
		rc = cursor_add_files(c, stream_pattern, share, piece, pieces);
	if (rc < 0) {
		weft_cursor_free(c);
		return rc;
	}
	for (size_t i = 0; !file_order && i < trace->stream_count; i++) {
		if ((share != NULL && !share[i]) ||
		    (stream_pattern != NULL &&
		     fnmatch(stream_pattern, trace->streams[i].path, 0) != 0))
			continue;
		rc = cursor_add_stream(c, (uint32_t)i, 1);
		if (rc < 0) {
			weft_cursor_free(c);
			return rc;
		}
	}
	cursor_set_unfiltered(c);
	*out = c;
	return 0;
}

void weft__streams_matching(const weft_trace *trace, const char *pattern, uint8_t *selected)
{
	for (size_t i = 0; i < trace->stream_count; i++)
		selected[i] = pattern == NULL || fnmatch(pattern, trace->streams[i].path, 0) == 0;
}

int weft__cursor_merges_streams(const weft_trace *trace, const weft_filter *filter)
{
	weft_order order;
	if (filter != NULL && (unsigned)filter->order > WEFT_ORDER_NATURAL)
		return 0; /* the cursor's creation says what is wrong */
	resolve_order(trace, filter, &order);
	return !uses_file_order(trace, order) && !weft_trace_shared_files(trace);
}

int weft_cursor_create(weft_trace *trace, const weft_filter *filter,
		       weft_cursor **out)
{
	return cursor_create(trace, filter, NULL, -1, 0, out);
}

int weft__cursor_create_pieces(weft_trace *trace, const weft_filter *filter,
			       weft_cursor **out)
{
	*out = NULL;
	/* a thread's piece, else this rank's */
	size_t pieces = trace->piece_count > 0 ? trace->piece_count : weft__dist_pieces(trace);
	size_t piece = trace->piece_count > 0 ? trace->piece
		       : pieces > 0 ? (size_t)trace->options.dist->rank : 0;
	if (pieces == 0 || piece >= pieces || piece > INT_MAX)
		return weft__error(WEFT_EINVAL, trace->path, WEFT_NO_OFFSET,
				   "the trace's files are not cut into pieces (a bug)");
	weft_filter whole = { 0 };
	if (filter != NULL)
		whole = *filter;
	whole.order = WEFT_ORDER_STORED; /* whole files: the pieces of each */
	return cursor_create(trace, &whole, NULL, (int)piece, pieces, out);
}

int weft__cursor_create_selected(weft_trace *trace, const weft_filter *filter,
				 const uint8_t *selected, weft_cursor **out)
{
	return cursor_create(trace, filter, selected, -1, 0, out);
}

int weft_cursor_create_stream(weft_trace *trace, uint32_t stream,
			      weft_cursor **out)
{
	return weft_cursor_create_stream_filtered(trace, stream, NULL, out);
}

int weft_cursor_create_stream_filtered(weft_trace *trace, uint32_t stream,
				       const weft_filter *filter, weft_cursor **out)
{
	weft_order order;
	*out = NULL;
	if (stream >= trace->stream_count)
		return weft__error(WEFT_EINVAL, trace->path, WEFT_NO_OFFSET,
				   "no stream %u (the trace has %zu)", stream,
				   trace->stream_count);
	int rc = resolve_order(trace, filter, &order);
	if (rc < 0)
		return rc;
	weft_cursor *c = cursor_alloc(trace, 1);
	if (c == NULL)
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	c->order = order;
	rc = cursor_set_filter(c, filter);
	if (rc == 0)
		rc = cursor_add_stream(c, stream, 0);
	if (rc < 0) {
		weft_cursor_free(c);
		return rc;
	}
	cursor_set_unfiltered(c);
	*out = c;
	return 0;
}

int weft_cursor_next(weft_cursor *c, const weft_event **event)
{
	if (c->delivered >= 0) {
		/* The root of the heap is the slot handed out last. */
		cursor_slot *last = &c->slots[c->delivered];
		if (c->unfiltered && last->next + 1 < last->count) {
			/* Fast path: the next event of the batch, selected by
			 * construction; the heap is reordered only when that
			 * event no longer comes first. */
			heap_entry *h = c->heap;
			h[0].time = last->batch[++last->next].time;
			if ((c->heap_count > 1 && entry_before(&h[1], &h[0])) ||
			    (c->heap_count > 2 && entry_before(&h[2], &h[0])))
				heap_sift_down(c, 0);
			c->delivered = h[0].slot;
			cursor_slot *slot = &c->slots[c->delivered];
			*event = &slot->batch[slot->next];
			return 1;
		}
		if (slot_advance(c, last)) {
			c->heap[0].time = c->slots[c->delivered].batch[c->slots[c->delivered].next].time;
			if (c->heap_count > 1)
				heap_sift_down(c, 0);
		} else {
			c->heap[0] = c->heap[--c->heap_count];
			if (c->heap_count > 0)
				heap_sift_down(c, 0);
		}
		c->delivered = -1;
	}
	if (c->heap_count == 0)
		return 0;
	c->delivered = c->heap[0].slot;
	cursor_slot *slot = &c->slots[c->delivered];
	*event = &slot->batch[slot->next];
	return 1;
}

void weft_cursor_free(weft_cursor *c)
{
	if (c == NULL)
		return;
	for (size_t i = 0; i < c->slot_count; i++) {
		if (c->slots[i].state != NULL)
			c->trace->backend->stream_close(c->slots[i].state);
		free(c->slots[i].batch);
	}
	free(c->slots);
	free(c->heap);
	free(c->code_pattern);
	free(c->code_cache);
	free(c->stream_selected);
	free(c);
}
