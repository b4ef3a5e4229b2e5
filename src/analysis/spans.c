/* SPDX-License-Identifier: MIT */
/*
 * analysis/spans.c - the public span iterator (weft/span.h).
 *
 * The view layer (outputs/view.h) already pairs enters and leaves for the
 * viewers, with the window, the nesting limit and the closing of what is
 * left open. The iterator is one more sink of it: it keeps, per track, a
 * stack of the spans the view has begun (to give each its id, parent,
 * depth and children time when the view ends it), and a stack of the
 * complete spans (INTERVAL events) not yet known to be closed, whose
 * nesting it rebuilds by containment: an interval arriving in start order
 * is the child of the innermost open interval that contains it; those
 * that do not contain it are over and come out.
 *
 * The iterator reads one event at a time and queues the spans it ends;
 * next() hands them out before reading on. Memory: the stacks (bounded by
 * the nesting) and the queue (the spans one event ends).
 */
#include <stdlib.h>
#include <string.h>

#include "analysis/spans_emu.h"
#include "analysis/spans_share.h"
#include "core/internal.h"
#include "outputs/view.h"
#include "weft/span.h"

/* A span begun and not ended yet. */
typedef struct open_entry {
	uint64_t id;
	uint64_t start, end;   /* end: complete spans only */
	uint64_t children;     /* ns covered by the children ended so far */
	const char *name;      /* stable (trace or view) */
	const char *category;
	const char *code;      /* with_codes: the beginning event's (interned) */
	unsigned flags;        /* enum weft_span_flags */
} open_entry;

typedef struct entry_stack {
	open_entry *entries;
	size_t depth, cap;
} entry_stack;

/* What the iterator keeps of one track of the view. */
typedef struct track_state {
	uint32_t stream;
	const char *timeline;  /* NULL: the stream's own */
	entry_stack open;      /* begun by the view (ENTER) */
	entry_stack nest;      /* complete spans (INTERVAL), by containment */
} track_state;

struct weft_span_iter {
	weft_trace *trace;
	weft_cursor *cursor;
	weft__view *view;
	weft_span_options options;
	track_state *tracks;   /* by track id - 1 */
	size_t track_cap;
	weft_span *queue;      /* spans ended by the last event */
	size_t queued, queue_cap, next;
	uint64_t next_id;
	int done;              /* the cursor ended (or failed) */
	int status;            /* what next() returns once the queue is empty */
	int out_of_memory;
	weft_span_stats stats;
	/* The name stable_name() returned last: instants mostly repeat it. */
	const char *last_name;
	uint32_t last_len;
	/* options.emulate: the spans of the emulation, which does the rest */
	weft__emu_spans *emu;
};

void weft_span_options_init(weft_span_options *options)
{
	memset(options, 0, sizeof *options);
}

/* ---- Queue and stacks --------------------------------------------------------- */

/* Room for one more entry on a stack; NULL when out of memory. */
static open_entry *stack_push(entry_stack *s)
{
	if (weft__array_grow((void **)&s->entries, &s->cap, s->depth + 1, sizeof *s->entries) < 0)
		return NULL;
	return &s->entries[s->depth++];
}

/* Room for one more span in the queue; NULL when out of memory. */
static weft_span *queue_slot(weft_span_iter *it)
{
	if (weft__array_grow((void **)&it->queue, &it->queue_cap, it->queued + 1,
			     sizeof *it->queue) < 0) {
		it->out_of_memory = 1;
		return NULL;
	}
	return &it->queue[it->queued++];
}

/* The state of a track id (NULL: unknown, or out of memory). */
static track_state *track_of(weft_span_iter *it, uint32_t id)
{
	if (id == 0 || id > it->track_cap)
		return NULL;
	return &it->tracks[id - 1];
}

/* The view's flags as the span's. */
static unsigned span_flags(unsigned view_flags)
{
	return (view_flags & WEFT__VIEW_CLIPPED ? WEFT_SPAN_CLIPPED : 0) |
	       (view_flags & WEFT__VIEW_UNCLOSED ? WEFT_SPAN_UNCLOSED : 0);
}

/*
 * Pops the top entry of `s` as a span ending at `end`: its duration goes
 * to the children time of the entry below it (its parent).
 */
static void emit_top(weft_span_iter *it, const track_state *t, entry_stack *s,
		     uint64_t end, unsigned flags)
{
	open_entry *e = &s->entries[--s->depth];
	open_entry *parent = s->depth > 0 ? &s->entries[s->depth - 1] : NULL;
	uint64_t length = end > e->start ? end - e->start : 0;
	if (parent != NULL)
		parent->children += length;
	weft_span *span = queue_slot(it);
	if (span == NULL)
		return;
	*span = (weft_span){
		.id = e->id, .parent = parent ? parent->id : 0, .stream = t->stream,
		.depth = s->depth, .timeline = t->timeline, .name = e->name,
		.category = e->category, .code = e->code, .start = e->start,
		.end = e->start + length,
		.children = e->children,
		.exclusive = length > e->children ? length - e->children : 0,
		.flags = e->flags | flags
	};
	it->stats.spans++;
}

/* Ends the complete spans of a track that do not contain [start, end]. */
static void close_nest(weft_span_iter *it, track_state *t, uint64_t start, uint64_t end)
{
	while (t->nest.depth > 0) {
		const open_entry *top = &t->nest.entries[t->nest.depth - 1];
		if (top->start <= start && end <= top->end)
			return;
		emit_top(it, t, &t->nest, top->end, 0);
	}
}

/* ---- The view's sink ---------------------------------------------------------- */

static void on_track(void *ctx, const weft__view_track *track)
{
	weft_span_iter *it = ctx;
	if (weft__array_grow_zeroed((void **)&it->tracks, &it->track_cap, track->id,
				    sizeof *it->tracks) < 0) {
		it->out_of_memory = 1;
		return;
	}
	track_state *t = &it->tracks[track->id - 1];
	t->stream = track->stream < 0 ? 0 : (uint32_t)track->stream;
	t->timeline = track->kind == WEFT__TRACK_THREAD ? NULL : track->channel;
}

/*
 * with_codes: the code of the event behind a view item, interned (NULL
 * for items the view made: a span begun by the window).
 */
static const char *item_code(weft_span_iter *it, const weft__view_item *item)
{
	if (!it->options.with_codes || item->event == NULL)
		return NULL;
	const char *code = weft__view_intern(it->view, item->event->code,
					     item->event->code_len);
	if (code == NULL)
		it->out_of_memory = 1;
	return code;
}

static void on_begin(void *ctx, const weft__view_track *track, uint64_t time,
		     const weft__view_item *item)
{
	weft_span_iter *it = ctx;
	track_state *t = track_of(it, track->id);
	open_entry *e = t ? stack_push(&t->open) : NULL;
	if (e == NULL) {
		it->out_of_memory = 1;
		return;
	}
	/* The view's span names are stable: a classified name or interned. */
	*e = (open_entry){ .id = ++it->next_id, .start = time, .name = item->name,
			   .category = item->category, .code = item_code(it, item),
			   .flags = span_flags(item->flags) };
}

static void on_end(void *ctx, const weft__view_track *track, uint64_t time,
		   const weft__view_item *item)
{
	weft_span_iter *it = ctx;
	track_state *t = track_of(it, track->id);
	if (t != NULL && t->open.depth > 0)
		emit_top(it, t, &t->open, time, span_flags(item->flags));
}

/* A name that lives as long as the iterator ("" when out of memory). */
static const char *stable_name(weft_span_iter *it, const weft__view_item *item)
{
	if (it->last_name != NULL && item->name_len == it->last_len &&
	    memcmp(item->name, it->last_name, item->name_len) == 0)
		return it->last_name;
	const char *name = weft__view_intern(it->view, item->name, item->name_len);
	if (name == NULL) {
		it->out_of_memory = 1;
		return "";
	}
	it->last_name = name;
	it->last_len = item->name_len;
	return name;
}

static void on_complete(void *ctx, const weft__view_track *track, uint64_t time,
			uint64_t end, const weft__view_item *item)
{
	weft_span_iter *it = ctx;
	track_state *t = track_of(it, track->id);
	if (t == NULL)
		return;
	close_nest(it, t, time, end);
	open_entry *e = stack_push(&t->nest);
	if (e == NULL) {
		it->out_of_memory = 1;
		return;
	}
	*e = (open_entry){ .id = ++it->next_id, .start = time, .end = end,
			   .name = stable_name(it, item), .category = item->category,
			   .code = item_code(it, item), .flags = span_flags(item->flags) };
}

/* An instant: its parent is the innermost span open on its stream's track. */
static void on_instant(void *ctx, const weft__view_track *track, uint64_t time,
		       const weft__view_item *item)
{
	weft_span_iter *it = ctx;
	track_state *t = track_of(it, track->id);
	if (!it->options.with_instants || t == NULL)
		return;
	close_nest(it, t, time, time);
	const entry_stack *s = t->open.depth > 0 ? &t->open : &t->nest;
	weft_span *span = queue_slot(it);
	if (span == NULL)
		return;
	*span = (weft_span){
		.id = ++it->next_id,
		.parent = s->depth > 0 ? s->entries[s->depth - 1].id : 0,
		.stream = t->stream, .depth = s->depth, .timeline = t->timeline,
		.name = stable_name(it, item), .category = item->category,
		.start = time, .end = time, .flags = WEFT_SPAN_INSTANT
	};
	it->stats.instants++;
}

static void on_counter(void *ctx, const weft__view_track *track, uint64_t time,
		       double value)
{
	(void)ctx;
	(void)track;
	(void)time;
	(void)value;
}

/* ---- Iteration ------------------------------------------------------------------ */

/* The end of the events: the view closes what is open, the nests empty. */
static void finish(weft_span_iter *it, int status)
{
	weft__view_finish(it->view);
	for (size_t i = 0; i < it->track_cap; i++) {
		track_state *t = &it->tracks[i];
		while (t->nest.depth > 0)
			emit_top(it, t, &t->nest, t->nest.entries[t->nest.depth - 1].end, 0);
	}
	it->done = 1;
	it->status = status < 0 ? status : 0;
}

int weft_span_iter_next(weft_span_iter *it, const weft_span **span)
{
	const weft_event *ev;

	*span = NULL;
	if (it->emu != NULL)
		return weft__emu_spans_next(it->emu, span);
	while (it->next == it->queued) {
		it->next = it->queued = 0;
		if (it->done)
			return it->status;
		int rc = weft_cursor_next(it->cursor, &ev);
		if (rc == 1) {
			weft__view_event(it->view, ev);
			if (weft__view_window_ended(it->view))
				finish(it, 0);
		} else {
			finish(it, rc);
		}
		if (it->out_of_memory) {
			it->done = 1;
			it->status = weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET,
						 "out of memory for the spans");
			it->queued = 0;
			return it->status;
		}
	}
	*span = &it->queue[it->next++];
	return 1;
}

void weft_span_iter_stats(const weft_span_iter *it, weft_span_stats *out)
{
	weft__view_stats v;

	if (it->emu != NULL) {
		weft__emu_spans_stats(it->emu, out);
		return;
	}
	weft__view_stats_get(it->view, &v);
	*out = it->stats;
	out->events = v.events;
	out->selected = v.in_window;
	out->unmatched_leaves = v.unmatched_leaves;
	out->unclosed = v.unclosed_spans;
	out->too_deep = v.too_deep;
	out->no_time = v.no_real_time + v.no_virtual_time + v.virtual_end;
}

/* ---- Life cycle --------------------------------------------------------------------- */

/* The iterator over the streams of `selected` (NULL: every stream). */
static int span_iter_create(weft_trace *trace, const weft_span_options *options,
			    const uint8_t *selected, int pieces, weft_span_iter **out)
{
	static const weft__view_sink sink_template = {
		NULL, on_track, on_begin, on_end, on_complete, on_instant, on_counter
	};

	*out = NULL;
	if (trace == NULL || options == NULL)
		return weft__error(WEFT_EINVAL, NULL, WEFT_NO_OFFSET,
				   "spans: no trace or no options");
	if (options->filter.to != 0 && options->filter.to < options->filter.from)
		return weft__error(WEFT_EINVAL, NULL, WEFT_NO_OFFSET,
				   "spans: the window ends before it starts");
	if (!(options->virtual_unit >= 0))
		return weft__error(WEFT_EINVAL, NULL, WEFT_NO_OFFSET,
				   "spans: the virtual time unit is negative or not a number");
	weft_span_iter *it = calloc(1, sizeof *it);
	if (it == NULL)
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	it->trace = trace;
	it->options = *options;
	if (options->emulate) {
		int rc = weft__emu_spans_create(trace, options, &it->emu);
		if (rc < 0) {
			free(it);
			return rc;
		}
		*out = it;
		return 0;
	}
	/*
	 * The view cuts the window; the cursor selects streams and codes, in
	 * time order whatever the trace was opened with: intervals nest by
	 * containment only when parents come first (Heph's stored order
	 * writes children first).
	 */
	weft_filter select = { .stream_pattern = options->filter.stream_pattern,
			       .code_pattern = options->filter.code_pattern,
			       .order = WEFT_ORDER_TIME };
	weft__view_sink sink = sink_template;
	sink.ctx = it;
	int rc = pieces ? weft__cursor_create_pieces(trace, &select, &it->cursor)
		 : weft__cursor_create_selected(trace, &select, selected, &it->cursor);
	if (rc == 0) {
		/* Formats read whole files merged by time (ROSS) may go back in
		 * time within a file: the view reads them to the end. */
		weft__view_options vo = {
			.from = options->filter.from, .to = options->filter.to,
			.time_ordered = weft_cursor_order(it->cursor) == WEFT_ORDER_TIME &&
					!weft_trace_file_order_default(trace) &&
					options->virtual_unit == 0,
			.virtual_unit = options->virtual_unit, .no_args = 1
		};
		rc = weft__view_create(trace, &vo, &sink, &it->view);
	}
	if (rc < 0) {
		weft_span_iter_free(it);
		return rc;
	}
	*out = it;
	return 0;
}

int weft_span_iter_create(weft_trace *trace, const weft_span_options *options,
			  weft_span_iter **out)
{
	return span_iter_create(trace, options, NULL, 0, out);
}

int weft__span_iter_create_selected(weft_trace *trace, const weft_span_options *options,
				    const uint8_t *selected, weft_span_iter **out)
{
	if (selected != NULL && options != NULL && options->emulate)
		return weft__error(WEFT_EUNSUPPORTED, NULL, WEFT_NO_OFFSET,
				   "the emulation reads every stream: it is not shared");
	return span_iter_create(trace, options, selected, 0, out);
}

int weft__span_iter_create_pieces(weft_trace *trace, const weft_span_options *options,
				  weft_span_iter **out)
{
	if (options != NULL && options->emulate)
		return weft__error(WEFT_EUNSUPPORTED, NULL, WEFT_NO_OFFSET,
				   "the emulation reads every stream: it is not shared");
	return span_iter_create(trace, options, NULL, 1, out);
}

void weft_span_iter_free(weft_span_iter *it)
{
	if (it == NULL)
		return;
	for (size_t i = 0; i < it->track_cap; i++) {
		free(it->tracks[i].open.entries);
		free(it->tracks[i].nest.entries);
	}
	free(it->tracks);
	free(it->queue);
	weft__emu_spans_free(it->emu);
	weft__view_free(it->view);
	weft_cursor_free(it->cursor);
	free(it);
}
