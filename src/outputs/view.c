/* SPDX-License-Identifier: MIT */
/*
 * outputs/view.c - the timeline view of a trace (see view.h): tracks,
 * span stacks per timeline, counters, the time window.
 *
 * State: a record per stream (its tracks, its timelines with their span
 * stacks, its counters) created at the stream's first event, a track
 * table, and a table of interned names (event codes used as span names,
 * counter names), so that what the sink gets outlives the cursor's
 * event buffers. Nothing grows with the number of events.
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "outputs/view.h"
#include "util/strtab.h"

/* A span opened on a timeline and not closed yet. */
typedef struct open_span {
	uint64_t key;
	const char *name;      /* stable: classified name or interned code */
	uint32_t name_len;
	const char *category;
	int begun;             /* 1 once the sink has its begin */
} open_span;

/* One timeline of a stream: its own, or a channel. */
typedef struct timeline {
	const char *channel;   /* NULL: the stream's own */
	uint32_t track;
	int state;             /* a STATE track: its spans do not nest */
	open_span *spans;
	uint32_t depth, cap;
	/* Spans open above WEFT__VIEW_MAX_DEPTH (not kept: the next leaves
	 * close them first), how many were dropped, and the deepest nesting
	 * met (depth + excess). */
	uint64_t excess, lost, deepest;
} timeline;

/* One counter of a stream. */
typedef struct counter {
	const char *name;      /* interned */
	uint32_t name_len;
	uint32_t track;
	double last;           /* last value, shown at the window's start */
	int has_last;
	int shown;             /* the sink has a value since the window began */
} counter;

typedef struct stream_view {
	int ready;             /* tracks created */
	uint32_t thread_track;
	uint64_t last_time;    /* latest time seen on the stream */
	timeline *timelines;   /* [0]: the stream's own */
	uint32_t timeline_count, timeline_cap;
	counter *counters;
	uint32_t counter_count, counter_cap;
} stream_view;

/* The message ends seen so far of one flow key. */
typedef struct flow_count {
	uint64_t key;
	uint64_t sent, received;
	int used;
} flow_count;

#define MAX_ARGS 64

struct weft__view {
	const weft_trace *trace;
	weft__view_sink sink;
	weft__view_options options;
	weft__view_stats stats;
	int window_started;    /* events at or after `from` have been seen */
	int window_ended;      /* an event after `to` has been seen */

	weft__view_track *tracks; /* id - 1 */
	uint32_t track_count, track_cap;
	uint32_t *process_track;  /* per node: its process track, 0 = none */
	stream_view *streams;
	size_t stream_count;

	int64_t *used_numbers;    /* open addressing, INT64_MIN = free */
	size_t used_cap, used_count;
	int64_t next_number;      /* the next fresh pid/tid to try */

	weft__strtab names;       /* interned names (util/strtab.h) */

	flow_count *flows;        /* open addressing by flow key, used = 0 free */
	size_t flow_cap, flow_used;

	weft_field args[MAX_ARGS];
};

/* ---- Interning ----------------------------------------------------------------- */

const char *weft__view_intern(weft__view *v, const char *s, size_t n)
{
	size_t index;
	if (weft__strtab_intern(&v->names, s, n, &index) < 0)
		return NULL;
	return weft__strtab_text(&v->names, index);
}

/* ---- Flows ------------------------------------------------------------------------ */

/* The slot of `key` in `table` (cap a power of two): its own or a free one. */
static flow_count *flow_slot(flow_count *table, size_t cap, uint64_t key)
{
	size_t j = (key * 0x9E3779B97F4A7C15ull) >> 7 & (cap - 1);
	while (table[j].used && table[j].key != key)
		j = (j + 1) & (cap - 1);
	return &table[j];
}

/* Doubles the flow table; -1 when out of memory. */
static int flows_grow(weft__view *v)
{
	size_t cap = v->flow_cap ? v->flow_cap * 2 : 256;
	flow_count *t = calloc(cap, sizeof *t);
	if (t == NULL)
		return -1;
	for (size_t i = 0; i < v->flow_cap; i++)
		if (v->flows[i].used)
			*flow_slot(t, cap, v->flows[i].key) = v->flows[i];
	free(v->flows);
	v->flows = t;
	v->flow_cap = cap;
	return 0;
}

/*
 * The flow id of a message end: the n-th send and the n-th receive of a
 * key get the same id (nonzero). 0 when out of memory.
 */
static uint64_t flow_id(weft__view *v, uint64_t key, int end)
{
	if ((v->flow_used + 1) * 2 > v->flow_cap && flows_grow(v) < 0)
		return 0;
	flow_count *f = flow_slot(v->flows, v->flow_cap, key);
	if (!f->used) {
		*f = (flow_count){ key, 0, 0, 1 };
		v->flow_used++;
	}
	uint64_t n = end == WEFT_FLOW_OUT ? f->sent++ : f->received++;
	uint64_t id = (key ^ (n * 0xC2B2AE3D27D4EB4Full)) * 0x9E3779B97F4A7C15ull;
	return id != 0 ? id : 1;
}

/* ---- Process and thread numbers ----------------------------------------------- */

/*
 * Every pid and tid of the view is in [1, WEFT__VIEW_NUMBER_MAX]: Chrome's
 * JSON readers keep 32 bits (Perfetto's makes a larger number 0, and a
 * tid 0 the pid), Perfetto's protobuf int32, and its importer files pid 0
 * / tid 0 under the idle thread. The set below holds, for every number
 * handed out, one key per scope it is unique in:
 *   - pids: the number itself (below 2^31);
 *   - every number, pid or tid, anywhere: 2^31 + the number (below 2^32),
 *     so that a fresh number is new to the whole output;
 *   - tids: a hash of (pid, number) with bit 62 set: unique per process.
 * Two tid keys that collide only cost a fresh number.
 */
#define ANY_SCOPE (INT64_C(1) << 31)

/* The key of `number` as a tid of process `pid`. */
static int64_t tid_key(int64_t pid, int64_t number)
{
	uint64_t h = ((uint64_t)number * 0x100000001B3ull) ^
		     ((uint64_t)pid * 0x9E3779B97F4A7C15ull);
	return (int64_t)((h & ((UINT64_C(1) << 62) - 1)) | UINT64_C(1) << 62);
}

/* The slot of `key` in the set (cap a power of two): its own or a free one. */
static size_t number_slot(const int64_t *set, size_t cap, int64_t key)
{
	size_t j = (size_t)((uint64_t)key * 0x9E3779B97F4A7C15ull >> 20) & (cap - 1);
	while (set[j] != INT64_MIN && set[j] != key)
		j = (j + 1) & (cap - 1);
	return j;
}

/* 1 when `key` is in the set. */
static int number_has(const weft__view *v, int64_t key)
{
	return v->used_cap > 0 &&
	       v->used_numbers[number_slot(v->used_numbers, v->used_cap, key)] == key;
}

/* Adds `key` to the set; -1 without memory (the number may then repeat). */
static int number_add(weft__view *v, int64_t key)
{
	if ((v->used_count + 1) * 2 > v->used_cap) {
		size_t cap = v->used_cap ? v->used_cap * 2 : 64;
		int64_t *t = malloc(cap * sizeof *t);
		if (t == NULL)
			return -1;
		for (size_t i = 0; i < cap; i++)
			t[i] = INT64_MIN;
		for (size_t i = 0; i < v->used_cap; i++)
			if (v->used_numbers[i] != INT64_MIN)
				t[number_slot(t, cap, v->used_numbers[i])] = v->used_numbers[i];
		free(v->used_numbers);
		v->used_numbers = t;
		v->used_cap = cap;
	}
	size_t j = number_slot(v->used_numbers, v->used_cap, key);
	if (v->used_numbers[j] != key) {
		v->used_numbers[j] = key;
		v->used_count++;
	}
	return 0;
}

/* The key of `number` in its scope: pid < 0 for a process's own number. */
static int64_t scope_key(int64_t pid, int64_t number)
{
	return pid < 0 ? number : tid_key(pid, number);
}

/*
 * A pid (pid_of < 0) or a tid of process `pid_of`: the node's number when
 * it is in range and not taken in its scope (pids in the output, tids in
 * their process), else a fresh number that nothing in the output has,
 * counted up from above the largest node number in range (then from 1).
 * So a sub-timeline's tid is never its process's pid, the main thread's
 * tid. Deterministic: the same trace and options give the same numbers.
 */
static int64_t assign_number(weft__view *v, int64_t pid_of, int64_t number)
{
	if (number < 1 || number > WEFT__VIEW_NUMBER_MAX ||
	    number_has(v, scope_key(pid_of, number))) {
		do {
			number = v->next_number;
			v->next_number = number == WEFT__VIEW_NUMBER_MAX ? 1 : number + 1;
		} while (number_has(v, ANY_SCOPE + number) ||
			 number_has(v, scope_key(pid_of, number)));
	}
	number_add(v, scope_key(pid_of, number));
	number_add(v, ANY_SCOPE + number);
	return number;
}

/* ---- Tracks -------------------------------------------------------------------- */

/* Declares a new track to the sink; its id, or 0 when out of memory. */
static uint32_t add_track(weft__view *v, weft__view_track_kind kind, uint32_t parent,
			  int64_t pid, int64_t tid, int32_t stream, const char *name,
			  const char *channel)
{
	if (v->track_count == v->track_cap) {
		uint32_t cap = v->track_cap ? v->track_cap * 2 : 64;
		weft__view_track *t = realloc(v->tracks, cap * sizeof *t);
		if (t == NULL)
			return 0;
		v->tracks = t;
		v->track_cap = cap;
	}
	weft__view_track *t = &v->tracks[v->track_count++];
	*t = (weft__view_track){ v->track_count, parent, kind, pid, tid, stream,
				 name, channel };
	v->stats.tracks++;
	v->sink.track(v->sink.ctx, t);
	return t->id;
}

/* The process track of a stream's parent node (created once). */
static uint32_t process_track_of(weft__view *v, const weft_node *node)
{
	const weft_node *parent = node->parent == WEFT_NO_PARENT ? node
				  : &v->trace->nodes[node->parent];
	uint32_t *slot = &v->process_track[parent->id];
	if (*slot == 0)
		*slot = add_track(v, WEFT__TRACK_PROCESS, 0, assign_number(v, -1, parent->number),
				  0, -1, parent->path, NULL);
	return *slot;
}

/* Creates the process and thread tracks of a stream; -1 without memory. */
static int stream_ready(weft__view *v, uint32_t stream)
{
	stream_view *s = &v->streams[stream];
	const weft_node *node = &v->trace->nodes[v->trace->streams[stream].node];
	uint32_t process = process_track_of(v, node);
	if (process == 0)
		return -1;
	const weft__view_track *p = &v->tracks[process - 1];
	int64_t tid = assign_number(v, p->pid, node->number);
	s->thread_track = add_track(v, WEFT__TRACK_THREAD, process, p->pid, tid,
				    (int32_t)stream, node->name, NULL);
	s->timelines = calloc(4, sizeof *s->timelines);
	if (s->thread_track == 0 || s->timelines == NULL)
		return -1;
	s->timeline_cap = 4;
	s->timeline_count = 1;
	s->timelines[0].track = s->thread_track;
	s->ready = 1;
	return 0;
}

/* The timeline of `channel` met by another address, or a new one. */
static timeline *timeline_by_name(weft__view *v, stream_view *s, uint32_t stream,
				  const char *channel)
{
	for (uint32_t i = 1; i < s->timeline_count; i++)
		if (strcmp(s->timelines[i].channel, channel) == 0)
			return &s->timelines[i];
	if (s->timeline_count == s->timeline_cap) {
		timeline *t = realloc(s->timelines, 2 * s->timeline_cap * sizeof *t);
		if (t == NULL)
			return NULL;
		s->timelines = t;
		s->timeline_cap *= 2;
	}
	const weft__view_track *th = &v->tracks[s->thread_track - 1];
	int state = strcmp(channel, "running") == 0;
	/* A tid of its own, for the viewers that know no sub-tracks (Chrome). */
	uint32_t id = add_track(v, state ? WEFT__TRACK_STATE : WEFT__TRACK_CHANNEL,
				th->id, th->pid, assign_number(v, th->pid, 0), (int32_t)stream,
				channel, channel);
	if (id == 0)
		return NULL;
	timeline *t = &s->timelines[s->timeline_count++];
	memset(t, 0, sizeof *t);
	t->channel = channel;
	t->track = id;
	t->state = state;
	return t;
}

/* The timeline of `channel` on a stream (created at first use). */
static inline timeline *timeline_of(weft__view *v, stream_view *s, uint32_t stream,
				    const char *channel)
{
	if (channel == NULL)
		return &s->timelines[0];
	/* Channel names are stable pointers: compared by address first. */
	for (uint32_t i = 1; i < s->timeline_count; i++)
		if (s->timelines[i].channel == channel)
			return &s->timelines[i];
	return timeline_by_name(v, s, stream, channel);
}

/* The counter `name` of a stream (created at first use). */
static counter *counter_of(weft__view *v, stream_view *s, uint32_t stream,
			   const char *name, size_t len)
{
	for (uint32_t i = 0; i < s->counter_count; i++) {
		counter *c = &s->counters[i];
		if (c->name_len == len && (c->name == name || memcmp(c->name, name, len) == 0))
			return c;
	}
	if (s->counter_count == s->counter_cap) {
		uint32_t cap = s->counter_cap ? s->counter_cap * 2 : 8;
		counter *t = realloc(s->counters, cap * sizeof *t);
		if (t == NULL)
			return NULL;
		s->counters = t;
		s->counter_cap = cap;
	}
	const char *owned = weft__view_intern(v, name, len);
	const weft__view_track *th = &v->tracks[s->thread_track - 1];
	uint32_t id = owned ? add_track(v, WEFT__TRACK_COUNTER, th->id, th->pid, th->tid,
					(int32_t)stream, owned, owned) : 0;
	if (id == 0)
		return NULL;
	counter *c = &s->counters[s->counter_count++];
	*c = (counter){ owned, (uint32_t)len, id, 0, 0, 0 };
	return c;
}

/* ---- Items ---------------------------------------------------------------------- */

/* The decoded fields of `ev` into v->args; their count (0 on failure). */
static int decode_args(weft__view *v, const weft_event *ev)
{
	int n = weft_event_fields(v->trace, ev, v->args, MAX_ARGS);
	if (n < 0) {
		v->stats.bad_fields++;
		return 0;
	}
	return n > MAX_ARGS ? MAX_ARGS : n;
}

/* The item of an event: its class's name (or code) and its fields. */
static void event_item(weft__view *v, const weft_event *ev, const weft_event_class *c,
		       weft__view_item *item)
{
	item->name = c->name != NULL ? c->name : ev->code;
	item->name_len = c->name == NULL ? ev->code_len
			 : c->name_len ? c->name_len : (uint32_t)strlen(c->name);
	item->category = c->category;
	item->arg_count = v->options.no_args ? 0 : decode_args(v, ev);
	item->args = v->args;
	item->event = ev;
	item->flags = 0;
	item->flow_id = 0;
	item->flow_end = 0;
	item->flow_key = 0;
}

/* The item of a span that the view closes or opens itself. */
static void span_item(const open_span *sp, unsigned flags, weft__view_item *item)
{
	*item = (weft__view_item){ .name = sp->name, .name_len = sp->name_len,
				   .category = sp->category, .flags = flags };
}

/* ---- Window ---------------------------------------------------------------------- */

/* 1 when `t` is inside the window. */
static int in_window(const weft__view *v, uint64_t t)
{
	return t >= v->options.from && (v->options.to == 0 || t <= v->options.to);
}

/* Opens the window: spans open now begin at `from`, counters show their value. */
static void start_window(weft__view *v)
{
	weft__view_item item;

	v->window_started = 1;
	for (size_t i = 0; i < v->stream_count; i++) {
		stream_view *s = &v->streams[i];
		for (uint32_t k = 0; k < s->timeline_count; k++) {
			timeline *t = &s->timelines[k];
			for (uint32_t d = 0; d < t->depth; d++) {
				span_item(&t->spans[d], WEFT__VIEW_CLIPPED, &item);
				v->sink.begin(v->sink.ctx, &v->tracks[t->track - 1],
					      v->options.from, &item);
				t->spans[d].begun = 1;
			}
		}
		for (uint32_t k = 0; k < s->counter_count; k++) {
			counter *c = &s->counters[k];
			if (c->has_last) {
				v->sink.counter(v->sink.ctx, &v->tracks[c->track - 1],
						v->options.from, c->last);
				v->stats.counter_values++;
			}
		}
	}
}

/* Closes the spans of a timeline above `depth`, innermost first. */
static void close_spans(weft__view *v, timeline *t, uint32_t depth, uint64_t time,
			unsigned flags)
{
	weft__view_item item;

	while (t->depth > depth) {
		open_span *sp = &t->spans[--t->depth];
		if (!sp->begun)
			continue;
		span_item(sp, flags, &item);
		v->sink.end(v->sink.ctx, &v->tracks[t->track - 1], time, &item);
	}
}

/* Closes the window at `to`: every begun span ends there. */
static void end_window(weft__view *v)
{
	v->window_ended = 1;
	for (size_t i = 0; i < v->stream_count; i++)
		for (uint32_t k = 0; k < v->streams[i].timeline_count; k++)
			close_spans(v, &v->streams[i].timelines[k], 0, v->options.to,
				    WEFT__VIEW_CLIPPED);
}

/* ---- Roles ------------------------------------------------------------------------- */

/*
 * An ENTER past the limit (or one the stack cannot hold for want of
 * memory): dropped and counted; the leaves that come while such spans
 * are open close them first, so that the spans kept stay paired.
 */
static void drop_enter(weft__view *v, timeline *t)
{
	t->excess++;
	t->lost++;
	if (t->depth + t->excess > t->deepest)
		t->deepest = t->depth + t->excess;
	v->stats.too_deep++;
}

/*
 * A state timeline (STATE: ovni "running") shows a state, which does not
 * nest: an ENTER while the state is on (ovni OHx while running, which
 * ovni's model forbids) restarts it, closing the span before (flagged
 * unclosed: no leave closed it).
 */
static void restart_state(weft__view *v, timeline *t, uint64_t time)
{
	if (t->depth == 0 || !t->state)
		return;
	v->stats.state_restarts += t->depth;
	close_spans(v, t, 0, time, WEFT__VIEW_UNCLOSED);
}

/* ENTER: a span opens on its timeline. */
static void on_enter(weft__view *v, timeline *t, const weft_event *ev,
		     const weft_event_class *c)
{
	restart_state(v, t, ev->time);
	if (t->depth == WEFT__VIEW_MAX_DEPTH) {
		drop_enter(v, t);
		return;
	}
	if (t->depth == t->cap) {
		uint32_t cap = t->cap ? t->cap * 2 : 8;
		open_span *s = realloc(t->spans, cap * sizeof *s);
		if (s == NULL) {
			drop_enter(v, t);
			return;
		}
		t->spans = s;
		t->cap = cap;
	}
	if (t->depth + 1 > t->deepest)
		t->deepest = t->depth + 1;
	const char *name = c->name;
	uint32_t len = name == NULL ? 0 : c->name_len ? c->name_len : (uint32_t)strlen(name);
	if (name == NULL && (name = weft__view_intern(v, ev->code, ev->code_len)) != NULL)
		len = ev->code_len;
	open_span *sp = &t->spans[t->depth++];
	*sp = (open_span){ c->pair_key, name ? name : "", len, c->category, 0 };
	if (!v->window_started || v->window_ended)
		return;
	weft__view_item item;
	event_item(v, ev, c, &item);
	item.name = sp->name;
	item.name_len = sp->name_len;
	v->sink.begin(v->sink.ctx, &v->tracks[t->track - 1], ev->time, &item);
	sp->begun = 1;
	v->stats.spans++;
}

/*
 * LEAVE: closes the innermost open span with the same key; spans opened
 * inside it and still open are closed with it (flagged unclosed), so that
 * the timeline stays nested. A leave that matches nothing is skipped.
 * While spans past the limit are open, a leave closes the innermost of
 * them (their keys are not kept).
 */
static void on_leave(weft__view *v, timeline *t, const weft_event *ev,
		     const weft_event_class *c)
{
	if (t->excess > 0) { /* the innermost open span was dropped */
		t->excess--;
		return;
	}
	uint32_t d = t->depth;
	while (d > 0 && t->spans[d - 1].key != c->pair_key)
		d--;
	if (d == 0) {
		v->stats.unmatched_leaves++;
		return;
	}
	if (t->depth > d) { /* rare: spans inside it never closed */
		v->stats.unclosed_spans += t->depth - d;
		close_spans(v, t, d, ev->time, WEFT__VIEW_UNCLOSED);
	}
	open_span *sp = &t->spans[--t->depth];
	if (!sp->begun)
		return;
	weft__view_item item;
	span_item(sp, 0, &item);
	item.event = ev;
	v->sink.end(v->sink.ctx, &v->tracks[t->track - 1], ev->time, &item);
}

/* INTERVAL: a complete span, cut to the window. */
static void on_interval(weft__view *v, stream_view *s, const weft_event *ev,
			const weft_event_class *c)
{
	uint64_t from = ev->time, to = ev->end > ev->time ? ev->end : ev->time;
	if (to < v->options.from || (v->options.to != 0 && from > v->options.to))
		return;
	weft__view_item item;
	event_item(v, ev, c, &item);
	if (from < v->options.from) {
		from = v->options.from;
		item.flags |= WEFT__VIEW_CLIPPED;
	}
	if (v->options.to != 0 && to > v->options.to) {
		to = v->options.to;
		item.flags |= WEFT__VIEW_CLIPPED;
	}
	v->sink.complete(v->sink.ctx, &v->tracks[s->thread_track - 1], from, to, &item);
	v->stats.spans++;
}

/* The value of a numeric scalar field; 0 when it has none. */
static int field_number(const weft_field *f, double *out)
{
	if (f->is_array)
		return 0;
	switch (f->type) {
	case WEFT_TYPE_U8: case WEFT_TYPE_U16: case WEFT_TYPE_U32: case WEFT_TYPE_U64:
	case WEFT_TYPE_BOOL:
		*out = (double)f->v.u;
		return 1;
	case WEFT_TYPE_I8: case WEFT_TYPE_I16: case WEFT_TYPE_I32: case WEFT_TYPE_I64:
		*out = (double)f->v.i;
		return 1;
	case WEFT_TYPE_F32: case WEFT_TYPE_F64:
		*out = f->v.f;
		return 1;
	default:
		return 0;
	}
}

/* The value of the numeric field `name` of the decoded args; 0 if none. */
static int arg_number(const weft__view *v, int n, const char *name, double *out)
{
	size_t len = strlen(name);
	for (int i = 0; i < n; i++)
		if (v->args[i].name_len == len && memcmp(v->args[i].name, name, len) == 0)
			return field_number(&v->args[i], out);
	return 0;
}

/*
 * Virtual time: a message whose sending end is no event (ROSS) gets that
 * end drawn as a "send" instant on the sender's timeline at its virtual
 * send time, and both ends an id of their own. Returns the id (0: none).
 */
static uint64_t draw_send_end(weft__view *v, const weft_event *ev, const weft_event_class *c,
			      const weft__view_item *item)
{
	double vt;

	if (v->options.virtual_unit <= 0 || c->flow_from_stream < 0 ||
	    (uint64_t)c->flow_from_stream >= v->stream_count ||
	    !arg_number(v, item->arg_count, c->flow_from_virtual_field, &vt) ||
	    !(vt >= 0) || vt * v->options.virtual_unit >= 1.8e19)
		return 0;
	uint64_t id = ((uint64_t)ev->stream << 40 ^ ev->seq) * 0x9E3779B97F4A7C15ull | 1;
	uint64_t time = (uint64_t)(vt * v->options.virtual_unit + 0.5);
	stream_view *from = &v->streams[c->flow_from_stream];
	if (!in_window(v, time) ||
	    (!from->ready && stream_ready(v, (uint32_t)c->flow_from_stream) < 0))
		return id;
	weft__view_item send = { .name = "send", .name_len = 4, .category = c->category,
				 .flow_id = id, .flow_end = WEFT_FLOW_OUT };
	v->sink.instant(v->sink.ctx, &v->tracks[from->thread_track - 1], time, &send);
	v->stats.instants++;
	v->stats.flow_ends++;
	return id;
}

/* POINT: an instant on the stream's timeline. */
static void on_point(weft__view *v, stream_view *s, const weft_event *ev,
		     const weft_event_class *c)
{
	/* Message ends are counted even outside the window, so that the
	 * n-th send still meets the n-th receive. */
	uint64_t flow = c->flow != WEFT_FLOW_NONE ? flow_id(v, c->flow_key, c->flow) : 0;

	if (!in_window(v, ev->time))
		return;
	weft__view_item item;
	event_item(v, ev, c, &item);
	item.flow_id = flow;
	item.flow_end = flow != 0 ? c->flow : 0;
	item.flow_key = c->flow_key;
	if (c->flow_from_stream >= 0 && (flow = draw_send_end(v, ev, c, &item)) != 0) {
		item.flow_id = flow;
		item.flow_end = WEFT_FLOW_IN;
	}
	v->stats.flow_ends += flow != 0;
	v->sink.instant(v->sink.ctx, &v->tracks[s->thread_track - 1], ev->time, &item);
	v->stats.instants++;
}

/* A counter takes a value: shown in the window, remembered before it. */
static void set_counter(weft__view *v, counter *c, uint64_t time, double value)
{
	c->last = value;
	c->has_last = 1;
	if (!in_window(v, time))
		return;
	v->sink.counter(v->sink.ctx, &v->tracks[c->track - 1], time, value);
	v->stats.counter_values++;
}

/* 1 when the field is in the NULL-terminated list of names. */
static int field_listed(const weft_field *f, const char *const *names)
{
	for (; names != NULL && *names != NULL; names++)
		if (strlen(*names) == f->name_len && memcmp(*names, f->name, f->name_len) == 0)
			return 1;
	return 0;
}

/* SAMPLE: each measuring numeric field is a counter of the stream. */
static void on_sample(weft__view *v, stream_view *s, const weft_event *ev,
		      const weft_event_class *c)
{
	int n = decode_args(v, ev);
	for (int i = 0; i < n; i++) {
		double value;
		/* NaN and infinities are not values a counter track can show. */
		if (!field_number(&v->args[i], &value) || !isfinite(value) ||
		    field_listed(&v->args[i], c->sample_skip))
			continue;
		counter *k = counter_of(v, s, ev->stream, v->args[i].name, v->args[i].name_len);
		if (k != NULL)
			set_counter(v, k, ev->time, value);
	}
}

/* ---- Events -------------------------------------------------------------------------- */

/* Moves the window forward to the event's time. */
static void advance_window(weft__view *v, uint64_t time)
{
	if (!v->window_started && time >= v->options.from)
		start_window(v);
	if (!v->window_ended && v->options.to != 0 && time > v->options.to &&
	    v->options.time_ordered)
		end_window(v);
}

/*
 * --time virtual: a copy of the event at its virtual time (the field the
 * backend names, times the unit), in *copy. 0 when the event has none,
 * 2 when it is DBL_MAX (or infinite): the end of the run (ROSS's last
 * real-time samples), which has no place on the axis.
 */
static int virtual_event(weft__view *v, const weft_event *ev, const weft_event_class *c,
			 weft_event *copy)
{
	double vt;

	if (c->virtual_time_field == NULL ||
	    !arg_number(v, decode_args(v, ev), c->virtual_time_field, &vt))
		return 0;
	if (vt >= DBL_MAX)
		return 2;
	/* Negative, NaN or past 2^64 ns: no place on the axis. */
	if (!(vt >= 0) || vt * v->options.virtual_unit >= 1.8e19)
		return 0;
	*copy = *ev;
	copy->time = copy->end = (uint64_t)(vt * v->options.virtual_unit + 0.5);
	return 1;
}

/* One event by its role, once its stream is ready and the window moved. */
static void dispatch(weft__view *v, stream_view *s, const weft_event *ev,
		     const weft_event_class *c)
{
	switch (c->role) {
	case WEFT_ROLE_ENTER:
	case WEFT_ROLE_LEAVE: {
		timeline *t = timeline_of(v, s, ev->stream, c->channel);
		if (t != NULL && !v->window_ended)
			(c->role == WEFT_ROLE_ENTER ? on_enter : on_leave)(v, t, ev, c);
		break;
	}
	case WEFT_ROLE_INTERVAL:
		on_interval(v, s, ev, c);
		break;
	case WEFT_ROLE_COUNTER: {
		const char *name = c->name ? c->name : "value";
		counter *k = counter_of(v, s, ev->stream, name, strlen(name));
		if (k != NULL)
			set_counter(v, k, ev->time, c->value);
		break;
	}
	case WEFT_ROLE_SAMPLE:
		on_sample(v, s, ev, c);
		break;
	default:
		on_point(v, s, ev, c);
		break;
	}
}

void weft__view_event(weft__view *v, const weft_event *ev)
{
	weft_event_class c;
	weft_event copy;

	v->stats.events++;
	v->stats.in_window += in_window(v, ev->time);
	if (ev->stream >= v->stream_count)
		return;
	weft_event_classify(v->trace, ev, &c);
	if (v->options.virtual_unit > 0) {
		int placed = virtual_event(v, ev, &c, &copy);
		if (placed != 1) {
			if (placed == 2)
				v->stats.virtual_end++;
			else
				v->stats.no_virtual_time++;
			return;
		}
		ev = &copy;
	} else if (ev->flags & WEFT_EVENT_NO_TIME) {
		v->stats.no_real_time++;
		return;
	}
	stream_view *s = &v->streams[ev->stream];
	if (!s->ready && stream_ready(v, ev->stream) < 0)
		return;
	advance_window(v, ev->time);
	uint64_t last = ev->end > ev->time ? ev->end : ev->time;
	if (last > s->last_time)
		s->last_time = last;
	dispatch(v, s, ev, &c);
}

/*
 * Only the nesting: ENTER and LEAVE on their timelines. The window never
 * opens, so nothing but the tracks reaches the sink.
 */
void weft__view_nesting(weft__view *v, const weft_event *ev)
{
	weft_event_class c;

	if (ev->stream >= v->stream_count)
		return;
	weft_event_classify(v->trace, ev, &c);
	if (c.role != WEFT_ROLE_ENTER && c.role != WEFT_ROLE_LEAVE)
		return;
	stream_view *s = &v->streams[ev->stream];
	if (!s->ready && stream_ready(v, ev->stream) < 0)
		return;
	timeline *t = timeline_of(v, s, ev->stream, c.channel);
	if (t != NULL)
		(c.role == WEFT_ROLE_ENTER ? on_enter : on_leave)(v, t, ev, &c);
}

int weft__view_run(weft__view *v, weft_cursor *cursor)
{
	const weft_event *ev;
	int rc;

	while ((rc = weft_cursor_next(cursor, &ev)) == 1) {
		weft__view_event(v, ev);
		if (v->window_ended)
			break;
	}
	weft__view_finish(v);
	return rc < 0 ? rc : 0;
}

/*
 * Spans still open at the end close at the last time of their stream
 * (or the window's end), flagged unclosed.
 */
void weft__view_finish(weft__view *v)
{
	if (!v->window_started)
		return;
	for (size_t i = 0; i < v->stream_count; i++) {
		stream_view *s = &v->streams[i];
		uint64_t time = s->last_time;
		if (v->options.to != 0 && time > v->options.to)
			time = v->options.to;
		if (time < v->options.from)
			time = v->options.from;
		for (uint32_t k = 0; k < s->timeline_count; k++) {
			v->stats.unclosed_spans += s->timelines[k].depth;
			close_spans(v, &s->timelines[k], 0, time, WEFT__VIEW_UNCLOSED);
		}
	}
}

/* ---- Life cycle ------------------------------------------------------------------------ */

int weft__view_create(const weft_trace *trace, const weft__view_options *options,
		      const weft__view_sink *sink, weft__view **out)
{
	weft__view *v = calloc(1, sizeof *v);

	*out = NULL;
	if (v == NULL)
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	v->trace = trace;
	v->sink = *sink;
	if (options != NULL)
		v->options = *options;
	v->stream_count = trace->stream_count;
	v->streams = calloc(v->stream_count + 1, sizeof *v->streams);
	v->process_track = calloc(trace->node_count + 1, sizeof *v->process_track);
	v->next_number = 1;
	for (size_t i = 0; i < trace->node_count; i++)
		if (trace->nodes[i].number >= v->next_number &&
		    trace->nodes[i].number < WEFT__VIEW_NUMBER_MAX)
			v->next_number = trace->nodes[i].number + 1;
	if (v->streams == NULL || v->process_track == NULL) {
		weft__view_free(v);
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	}
	*out = v;
	return 0;
}

int weft__view_window_ended(const weft__view *v)
{
	return v->window_ended;
}

const weft__view_track *weft__view_track_get(const weft__view *v, uint32_t id)
{
	return id >= 1 && id <= v->track_count ? &v->tracks[id - 1] : NULL;
}

void weft__view_stats_get(const weft__view *v, weft__view_stats *out)
{
	*out = v->stats;
}

/* Every member of weft__view_stats is a uint64_t count, added as an
 * array: a new member must be one too (then change the count here). */
_Static_assert(sizeof(weft__view_stats) == 15 * sizeof(uint64_t),
	       "weft__view_stats: every member a uint64_t count");

void weft__view_stats_add(weft__view_stats *sum, const weft__view_stats *part)
{
	uint64_t *s = (uint64_t *)sum;
	const uint64_t *p = (const uint64_t *)part;

	for (size_t i = 0; i < sizeof *sum / sizeof(uint64_t); i++)
		s[i] += p[i];
}

const weft__view_track *weft__view_declare(weft__view *v, weft__view_track_kind kind,
					   uint32_t stream, const char *name, size_t name_len)
{
	if (kind == WEFT__TRACK_PROCESS || stream >= v->stream_count)
		return NULL;
	stream_view *s = &v->streams[stream];
	if (!s->ready && stream_ready(v, stream) < 0)
		return NULL;
	uint32_t id = s->thread_track;
	if (kind == WEFT__TRACK_CHANNEL || kind == WEFT__TRACK_STATE) {
		const char *channel = weft__view_intern(v, name, name_len);
		const timeline *t = channel ? timeline_of(v, s, stream, channel) : NULL;
		id = t ? t->track : 0;
	} else if (kind == WEFT__TRACK_COUNTER) {
		const counter *c = counter_of(v, s, stream, name, name_len);
		id = c ? c->track : 0;
	}
	return id ? &v->tracks[id - 1] : NULL;
}

uint64_t weft__view_flow_id(weft__view *v, uint64_t key, int end)
{
	return flow_id(v, key, end);
}

size_t weft__view_too_deep(const weft__view *v, weft__view_too_deep_timeline *out,
			   size_t cap)
{
	size_t n = 0;

	for (size_t i = 0; i < v->stream_count; i++)
		for (uint32_t k = 0; k < v->streams[i].timeline_count; k++) {
			const timeline *t = &v->streams[i].timelines[k];
			if (t->lost == 0)
				continue;
			if (n < cap)
				out[n] = (weft__view_too_deep_timeline){
					(uint32_t)i, t->channel, t->lost, t->deepest };
			n++;
		}
	return n;
}

void weft__view_free(weft__view *v)
{
	if (v == NULL)
		return;
	for (size_t i = 0; v->streams != NULL && i < v->stream_count; i++) {
		for (uint32_t k = 0; k < v->streams[i].timeline_count; k++)
			free(v->streams[i].timelines[k].spans);
		free(v->streams[i].timelines);
		free(v->streams[i].counters);
	}
	weft__strtab_free(&v->names);
	free(v->flows);
	free(v->used_numbers);
	free(v->tracks);
	free(v->process_track);
	free(v->streams);
	free(v);
}
