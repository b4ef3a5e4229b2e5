/* SPDX-License-Identifier: MIT */
/*
 * formats/pallas/pallas_stream.c - the events of one thread, in order, by
 * replaying its grammar: a stack of frames walks the root sequence,
 * entering sequences and repeating loops; each event token is the next
 * occurrence of that event, whose timestamp is the next value of the
 * event's timestamp vector (loaded a sub-array at a time through the value
 * cache) and whose attributes are the next list of the event's attribute
 * bytes when its occurrence index matches. Timestamps come from the
 * cache already absolute (delta-stored ones are summed when loaded, in
 * pallas_values.c), so the replay is the same for both storages.
 *
 * Depth: the number of calls (block sequences below the root) around an
 * event; the Enter that starts a call and the Leave that ends it are at
 * the call's own depth, the events inside it one deeper. Parent: the
 * index in the stream (seq) of the first event of the innermost call
 * around the event (its Enter), -1 outside calls; the Enter and the
 * Leave of a call have the parent of the call.
 *
 * Termination on any input: the stack depth is bounded (a sequence that
 * contains itself is reported), every live sequence has tokens, and each
 * event occurrence must have its timestamp, so the number of events is
 * bounded by the timestamp vectors; loops that repeat nothing for too
 * long are reported too.
 */
#include <stdlib.h>
#include <string.h>

#include "formats/pallas/pallas_internal.h"

#define MAX_DEPTH 4096
/* Grammar steps allowed between two events (loops of empty loops). */
#define MAX_IDLE_STEPS ((uint64_t)1 << 24)
#define ATTR_LIST_HEADER 7

typedef struct frame {
	uint32_t token;      /* a sequence or a loop */
	uint32_t remaining;  /* loops: iterations left */
	uint64_t pos;        /* sequences: next token */
} frame;

/* Where the replay is in the values and attributes of one event. */
typedef struct event_cursor {
	uint64_t next;       /* next occurrence index */
	uint64_t sub;        /* sub-array held in vals */
	uint64_t sub_start;  /* occurrence index of vals.v[0] */
	pallas_values vals;
	uint64_t attr_pos;   /* next attribute list in the event's bytes */
} event_cursor;

typedef struct pallas_reader {
	weft_trace *trace;
	pallas_trace *pt;
	pallas_thread *t;
	uint32_t stream;
	event_cursor *events;
	frame *stack;
	size_t depth;
	int block_depth;     /* block sequences on the stack */
	int root_block;      /* 1 when the root sequence counts in block_depth */
	/* By block depth (1..block_depth): seq of the block's first event, -1
	 * until it comes. */
	int64_t *call_start;
	int boundary;        /* the last event starts or ends its call */
	uint64_t emitted;
	int failed;
} pallas_reader;

/* Pushes a sequence or a loop frame; refuses nesting beyond MAX_DEPTH. */
static int push(pallas_reader *r, uint32_t token)
{
	if (r->depth == MAX_DEPTH)
		return weft__error(WEFT_EFORMAT, r->t->file, WEFT_NO_OFFSET,
				   "the grammar nests deeper than %d sequences and "
				   "loops (a sequence that contains itself?)", MAX_DEPTH);
	frame *f = &r->stack[r->depth++];
	f->token = token;
	f->pos = 0;
	f->remaining = 0;
	uint32_t id = WEFT_PALLAS_TOKEN_IDX(token);
	if (WEFT_PALLAS_TOKEN_TYPE(token) == WEFT_PALLAS_TOKEN_LOOP)
		f->remaining = r->t->loops[id].iterations;
	else if (r->t->sequences[id].type == WEFT_PALLAS_SEQUENCE_BLOCK)
		r->call_start[++r->block_depth] = -1;
	return 0;
}

static void pop(pallas_reader *r)
{
	frame *f = &r->stack[--r->depth];
	if (WEFT_PALLAS_TOKEN_TYPE(f->token) == WEFT_PALLAS_TOKEN_SEQUENCE &&
	    r->t->sequences[WEFT_PALLAS_TOKEN_IDX(f->token)].type ==
		    WEFT_PALLAS_SEQUENCE_BLOCK)
		r->block_depth--;
}

/*
 * Whether the event at position pos - 1 of the innermost sequence `s`
 * starts or ends a call: the first token of a block below the root, or
 * its last when that is a Leave (a block left open at close ends with
 * whatever came last, which is inside the call).
 */
static int is_call_boundary(const pallas_reader *r, const pallas_sequence *s,
			    uint64_t pos, uint32_t event_id)
{
	if (s->type != WEFT_PALLAS_SEQUENCE_BLOCK || r->depth < 2)
		return 0;
	return pos == 1 || (pos == s->token_count &&
			    r->t->events[event_id].record == WEFT_PALLAS_REC_LEAVE);
}

/*
 * Advances the walk to the next event token; returns 1 with its id, 0 at
 * the end of the grammar, or an error.
 */
static int next_event_id(pallas_reader *r, uint32_t *event_id)
{
	uint64_t idle = 0;
	while (r->depth > 0) {
		if (++idle > MAX_IDLE_STEPS)
			return weft__error(WEFT_EFORMAT, r->t->file, WEFT_NO_OFFSET,
					   "the grammar runs %llu steps without an "
					   "event (loops of nothing?)",
					   (unsigned long long)MAX_IDLE_STEPS);
		frame *f = &r->stack[r->depth - 1];
		uint32_t id = WEFT_PALLAS_TOKEN_IDX(f->token);
		if (WEFT_PALLAS_TOKEN_TYPE(f->token) == WEFT_PALLAS_TOKEN_LOOP) {
			if (f->remaining == 0) {
				pop(r);
				continue;
			}
			f->remaining--;
			int rc = push(r, r->t->loops[id].repeated);
			if (rc < 0)
				return rc;
			continue;
		}
		const pallas_sequence *s = &r->t->sequences[id];
		if (f->pos == s->token_count) {
			pop(r);
			continue;
		}
		uint32_t token = weft__pallas_le32(s->tokens + 4 * f->pos++);
		if (WEFT_PALLAS_TOKEN_TYPE(token) == WEFT_PALLAS_TOKEN_EVENT) {
			*event_id = WEFT_PALLAS_TOKEN_IDX(token);
			r->boundary = is_call_boundary(r, s, f->pos, *event_id);
			return 1;
		}
		int rc = push(r, token);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* The timestamp of the next occurrence of event `id`. */
static int next_timestamp(pallas_reader *r, uint32_t id, uint64_t *time)
{
	const pallas_event_def *e = &r->t->events[id];
	event_cursor *c = &r->events[id];
	if (c->next >= e->timestamps.size)
		return weft__error(WEFT_EFORMAT, r->t->file, e->offset,
				   "event E%u occurs more often than its %llu timestamps",
				   id, (unsigned long long)e->timestamps.size);
	if (c->vals.entry == NULL || c->next - c->sub_start >= c->vals.count) {
		uint64_t sub = c->vals.entry == NULL && c->next == 0 ? 0 : c->sub + 1;
		uint64_t start = c->vals.entry == NULL && c->next == 0
					 ? 0 : c->sub_start + c->vals.count;
		int rc = weft__pallas_values_get(r->pt->cache, r->t, &e->timestamps,
						 sub, &c->vals);
		if (rc < 0)
			return rc;
		c->sub = sub;
		c->sub_start = start;
	}
	*time = c->vals.v[c->next - c->sub_start];
	return 0;
}

/*
 * The attribute list of occurrence `occurrence` of event `id`, if any.
 * Lists are stored by increasing occurrence index; a list that does not
 * fit in the event's attribute bytes is an error.
 */
static int attributes_of(pallas_reader *r, uint32_t id, uint64_t occurrence,
			 const uint8_t **list, uint64_t *size)
{
	const pallas_event_def *e = &r->t->events[id];
	event_cursor *c = &r->events[id];
	*list = NULL;
	*size = 0;
	while (e->attr_size - c->attr_pos >= ATTR_LIST_HEADER) {
		const uint8_t *p = e->attrs + c->attr_pos;
		int32_t index = (int32_t)weft__pallas_le32(p);
		uint16_t list_size;
		memcpy(&list_size, p + 4, 2);
		if (list_size < ATTR_LIST_HEADER || list_size > e->attr_size - c->attr_pos)
			return weft__error(WEFT_EFORMAT, r->t->file,
					   (uint64_t)(e->attrs - r->t->buf) + c->attr_pos,
					   "attribute list of %u bytes, expected %d to %llu",
					   list_size, ATTR_LIST_HEADER,
					   (unsigned long long)(e->attr_size - c->attr_pos));
		if (index < 0 || (uint64_t)index < occurrence) {
			c->attr_pos += list_size; /* a list of an occurrence passed */
			continue;
		}
		if ((uint64_t)index == occurrence) {
			*list = p;
			*size = list_size;
			c->attr_pos += list_size;
		}
		break;
	}
	return 0;
}

int weft__pallas_stream_next(void *state, weft_event *ev)
{
	pallas_reader *r = state;
	if (r->failed)
		return WEFT_EFORMAT;
	uint32_t id = 0;
	uint64_t time = 0;
	const uint8_t *attrs = NULL;
	uint64_t attr_size = 0;
	int rc = next_event_id(r, &id);
	if (rc <= 0) {
		r->failed = rc < 0;
		return rc;
	}
	uint64_t occurrence = r->events[id].next;
	if ((rc = next_timestamp(r, id, &time)) < 0 ||
	    (rc = attributes_of(r, id, occurrence, &attrs, &attr_size)) < 0) {
		r->failed = 1;
		return rc;
	}
	r->events[id].next++;
	const pallas_event_def *e = &r->t->events[id];
	ev->time = ev->end = time;
	ev->offset = e->offset;
	ev->seq = r->emitted++;
	ev->stream = r->stream;
	ev->flags = 0;
	ev->code = e->code;
	ev->code_len = e->code_len;
	ev->payload = e->payload;
	ev->payload_size = e->payload_size;
	ev->data = attrs;
	ev->data_size = attr_size;
	/* The first event of a block starts its call (and that of blocks
	 * that start with this one). */
	for (int d = r->block_depth; d > 0 && r->call_start[d] < 0; d--)
		r->call_start[d] = (int64_t)ev->seq;
	/* Blocks below the thread's root block are the calls. */
	int calls = r->block_depth - r->root_block - r->boundary;
	ev->depth = calls > 0 ? calls : 0;
	ev->parent = calls > 0 ? r->call_start[r->root_block + calls] : -1;
	return 1;
}

/*
 * Up to `cap` events at once (for the merged cursor). Each event only
 * points into the thread's grammar, which lives as long as the reader, so
 * all of them stay valid until the next call.
 */
int weft__pallas_stream_next_batch(void *state, weft_event *events, size_t cap)
{
	size_t n = 0;
	while (n < cap) {
		int rc = weft__pallas_stream_next(state, &events[n]);
		if (rc < 0)
			return n > 0 ? (int)n : rc;
		if (rc == 0)
			break;
		n++;
	}
	return (int)n;
}

void weft__pallas_stream_close(void *state)
{
	pallas_reader *r = state;
	if (r == NULL)
		return;
	if (r->t) {
		for (uint64_t i = 0; r->events && i < r->t->event_count; i++)
			weft__pallas_values_release(r->pt->cache, &r->events[i].vals);
		weft__pallas_cache_forget(r->pt->cache, r->t);
	}
	weft__pallas_thread_free(r->t);
	free(r->events);
	free(r->stack);
	free(r->call_start);
	free(r);
}

int weft__pallas_stream_open(weft_trace *trace, uint32_t stream, int stored,
			   void **state)
{
	pallas_reader *r = calloc(1, sizeof *r);
	if (r == NULL)
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	r->trace = trace;
	r->pt = trace->backend_data;
	r->stream = stream;
	int rc = weft__pallas_stream_thread(trace, stream, &r->t);
	if (rc == 0) {
		r->events = calloc(r->t->event_count ? r->t->event_count : 1,
				   sizeof *r->events);
		r->stack = malloc(MAX_DEPTH * sizeof *r->stack);
		r->call_start = malloc((MAX_DEPTH + 1) * sizeof *r->call_start);
		if (r->events == NULL || r->stack == NULL || r->call_start == NULL)
			rc = weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	}
	if (rc == 0 && r->t->sequence_count > 0) {
		rc = push(r, WEFT_PALLAS_TOKEN(WEFT_PALLAS_TOKEN_SEQUENCE, r->t->root));
		r->root_block = r->block_depth;
	}
	if (rc < 0) {
		weft__pallas_stream_close(r);
		return rc;
	}
	*state = r;
	return 0;
}
