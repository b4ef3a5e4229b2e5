/* SPDX-License-Identifier: MIT */
/*
 * analysis/spans_emu.c - the spans of the ovni emulation (weft/span.h,
 * `emulate`): the changes of the thread rows (weft/emu.h) turned into
 * intervals, one timeline per thread and channel.
 *
 * A channel of a thread row holds, after each change, a list of values:
 * none (value 0), one, or a stack (its values, bottom first; a channel
 * with a nesting depth but no stack, such as a task id over the bodies
 * of its thread, keeps what it held below that depth and shows its new
 * value on top). Each timeline keeps the spans open for the list it
 * held; a change keeps the entries both lists share from the bottom,
 * ends the others (innermost first) and begins the new ones. So a value
 * that stays on top across a change is one span, and a stack's entries
 * nest, which gives parents, depths and exclusive times (the time a
 * value is on top: what the row shows).
 *
 * Entries left out (a number on a channel the selection did not name)
 * still hold their place: the spans above them take the nearest shown
 * entry below as their parent, and their time counts as its children.
 *
 * Memory: per thread and channel, the open entries (bounded by the
 * stack limit); one copy of each name (labels, and the numbers of the
 * channels named in the selection); the spans one change ends.
 */
#include <fnmatch.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/spans_emu.h"
#include "core/internal.h"
#include "util/strtab.h"

/* An open entry of a timeline. */
typedef struct open_entry {
	int64_t value;
	uint64_t id;          /* 0: not shown */
	uint64_t start;
	uint64_t children;    /* ns of the shown spans directly below it */
	const char *name;
	uint32_t depth;       /* shown entries below it */
} open_entry;

typedef struct timeline {
	open_entry *open;
	size_t depth, cap;
} timeline;

/* A channel of the thread rows, as met in the changes (by Paraver type). */
typedef struct chan_info {
	uint32_t type;
	const char *title;    /* the emulator's: stable */
	const char *model;
	int selected;         /* 0: left out; 1: labelled values; 2: every value */
} chan_info;

/* The timelines of one thread, by channel index. */
typedef struct thread_lines {
	timeline *lines;
	size_t cap;
} thread_lines;

#define DIRECT_TYPES 1024

struct weft__emu_spans {
	weft_emu *emu;
	weft_trace *trace;
	weft_span_options options;
	uint8_t *thread_selected;
	thread_lines *threads;
	size_t nthreads;
	chan_info *chans;
	size_t nchans, chans_cap;
	int16_t direct[DIRECT_TYPES];  /* type -> channel index + 1 (small types) */
	weft__strtab names;
	int64_t *target;               /* the list a change makes */
	size_t target_cap;
	weft_span *queue;
	size_t queued, queue_cap, next;
	uint64_t next_id;
	int done, status, out_of_memory;
	weft_span_stats stats;
};

/* ---- Channels and names ------------------------------------------------------------- */

/* 1 when the channel selection names "<model>.<channel>" or the title. */
static int names_channel(const char *pattern, const weft_emu_change *c)
{
	char key[256];
	snprintf(key, sizeof key, "%s.%s", c->model, c->channel);
	return fnmatch(pattern, key, 0) == 0 || fnmatch(pattern, c->title, 0) == 0;
}

/* The channel index of a change's type, added when new; -1 without memory. */
static int64_t chan_of(weft__emu_spans *s, const weft_emu_change *c)
{
	if (c->type < DIRECT_TYPES && s->direct[c->type] > 0)
		return s->direct[c->type] - 1;
	for (size_t i = 0; c->type >= DIRECT_TYPES && i < s->nchans; i++)
		if (s->chans[i].type == c->type)
			return (int64_t)i;
	if (s->nchans >= INT16_MAX ||
	    weft__array_grow((void **)&s->chans, &s->chans_cap, s->nchans + 1,
			     sizeof *s->chans) < 0)
		return -1;
	const char *pattern = s->options.channels;
	s->chans[s->nchans] = (chan_info){
		.type = c->type, .title = c->title, .model = c->model,
		.selected = pattern == NULL ? 1 : names_channel(pattern, c) ? 2 : 0 };
	if (c->type < DIRECT_TYPES)
		s->direct[c->type] = (int16_t)(s->nchans + 1);
	return (int64_t)s->nchans++;
}

/*
 * The name of `value` on channel `ch` (interned: valid as long as the
 * iterator), or NULL when the value is not shown (a number on a channel
 * not named by the selection) or memory ran out (flagged).
 */
static const char *value_name(weft__emu_spans *s, const chan_info *ch, int64_t value,
			      const char *label)
{
	char number[24];
	if (ch->selected == 0)
		return NULL;
	if (label == NULL)
		label = weft_emu_value_label(s->emu, WEFT_EMU_THREAD, ch->type, value);
	if (label == NULL && ch->selected < 2)
		return NULL;
	if (label == NULL) {
		snprintf(number, sizeof number, "%" PRId64, value);
		label = number;
	}
	size_t index;
	if (weft__strtab_intern(&s->names, label, strlen(label), &index) < 0) {
		s->out_of_memory = 1;
		return NULL;
	}
	return weft__strtab_text(&s->names, index);
}

/* ---- Spans ---------------------------------------------------------------------------- */

/* The window's edges as clocks (to: UINT64_MAX without one). */
static uint64_t window_from(const weft__emu_spans *s)
{
	return s->options.filter.from;
}

static uint64_t window_to(const weft__emu_spans *s)
{
	return s->options.filter.to ? s->options.filter.to : UINT64_MAX;
}

/*
 * Ends the top entry of a timeline at `end`: a shown entry becomes a span
 * (cut to the window; none when it lies outside), its time the children
 * time of the nearest shown entry below.
 */
static void end_top(weft__emu_spans *s, timeline *tl, uint32_t stream, const chan_info *ch,
		    uint64_t end, unsigned flags)
{
	open_entry *e = &tl->open[--tl->depth];
	if (e->id == 0)
		return;
	uint64_t from = window_from(s), to = window_to(s);
	uint64_t start = e->start < from ? from : e->start;
	uint64_t stop = end > to ? to : end;
	if (e->start < from || end > to)
		flags |= WEFT_SPAN_CLIPPED;
	open_entry *parent = NULL;
	for (size_t i = tl->depth; i-- > 0;)
		if (tl->open[i].id != 0) {
			parent = &tl->open[i];
			break;
		}
	if (stop < start || (stop == start && (flags & (WEFT_SPAN_CLIPPED | WEFT_SPAN_UNCLOSED))))
		return; /* outside the window, on its edge, or begun at the very end */
	uint64_t length = stop - start;
	if (parent != NULL)
		parent->children += length;
	if (weft__array_grow((void **)&s->queue, &s->queue_cap, s->queued + 1,
			     sizeof *s->queue) < 0) {
		s->out_of_memory = 1;
		return;
	}
	s->queue[s->queued++] = (weft_span){
		.id = e->id, .parent = parent ? parent->id : 0, .stream = stream,
		.depth = e->depth, .timeline = ch->title, .name = e->name,
		.category = ch->model, .start = start, .end = stop, .children = e->children,
		.exclusive = length > e->children ? length - e->children : 0, .flags = flags };
	s->stats.spans++;
	if (flags & WEFT_SPAN_UNCLOSED)
		s->stats.unclosed++;
}

/* Begins an entry for `value` at `start` on top of a timeline. */
static void begin(weft__emu_spans *s, timeline *tl, const chan_info *ch, int64_t value,
		  const char *label, uint64_t start)
{
	if (weft__array_grow((void **)&tl->open, &tl->cap, tl->depth + 1, sizeof *tl->open) < 0) {
		s->out_of_memory = 1;
		return;
	}
	uint32_t shown = 0;
	for (size_t i = 0; i < tl->depth; i++)
		shown += tl->open[i].id != 0;
	const char *name = value_name(s, ch, value, label);
	tl->open[tl->depth++] = (open_entry){
		.value = value, .id = name != NULL ? ++s->next_id : 0, .start = start,
		.name = name, .depth = shown };
}

/*
 * The list of values a change leaves on its channel (into s->target):
 * its stack, or what was below its depth plus its value, or its value.
 */
static size_t change_list(weft__emu_spans *s, const timeline *tl, const weft_emu_change *c)
{
	size_t n, keep = 0;
	if (c->value == 0)
		return 0;
	if (c->stack != NULL)
		n = c->depth;
	else {
		keep = c->depth > 1 ? c->depth - 1 : 0;
		if (keep > tl->depth)
			keep = tl->depth;
		n = keep + 1;
	}
	if (weft__array_grow((void **)&s->target, &s->target_cap, n, sizeof *s->target) < 0) {
		s->out_of_memory = 1;
		return 0;
	}
	if (c->stack != NULL)
		memcpy(s->target, c->stack, n * sizeof *s->target);
	else {
		for (size_t i = 0; i < keep; i++)
			s->target[i] = tl->open[i].value;
		s->target[keep] = c->value;
	}
	return n;
}

/* The timeline of thread `row`, channel `ch`; NULL without memory. */
static timeline *timeline_of(weft__emu_spans *s, uint32_t row, size_t ch)
{
	thread_lines *t = &s->threads[row];
	if (weft__array_grow_zeroed((void **)&t->lines, &t->cap, ch + 1, sizeof *t->lines) < 0) {
		s->out_of_memory = 1;
		return NULL;
	}
	return &t->lines[ch];
}

/* One change of a thread row: the spans it ends go to the queue. */
static void apply(weft__emu_spans *s, const weft_emu_change *c)
{
	if (!s->thread_selected[c->row])
		return;
	int64_t ci = chan_of(s, c);
	timeline *tl = ci < 0 ? NULL : timeline_of(s, c->row, (size_t)ci);
	if (tl == NULL) {
		s->out_of_memory = 1;
		return;
	}
	const chan_info *ch = &s->chans[ci];
	if (ch->selected == 0)
		return;
	uint32_t stream = weft_emu_thread(s->emu, c->row)->stream;
	size_t n = change_list(s, tl, c), same = 0;
	while (same < n && same < tl->depth && tl->open[same].value == s->target[same])
		same++;
	while (tl->depth > same)
		end_top(s, tl, stream, ch, c->clock, 0);
	for (size_t i = same; i < n; i++)
		begin(s, tl, ch, s->target[i], i + 1 == n ? c->label : NULL, c->clock);
}

/* Ends every open entry at `end` (the trace's end, or where it stopped). */
static void close_all(weft__emu_spans *s, uint64_t end, unsigned flags)
{
	for (size_t t = 0; t < s->nthreads; t++) {
		uint32_t stream = weft_emu_thread(s->emu, t)->stream;
		for (size_t ci = 0; ci < s->threads[t].cap && ci < s->nchans; ci++) {
			timeline *tl = &s->threads[t].lines[ci];
			while (tl->depth > 0)
				end_top(s, tl, stream, &s->chans[ci], end, flags);
		}
	}
}

/* The emulation ended (status 0) or stopped (< 0): what is open closes. */
static void finish(weft__emu_spans *s, int status, uint64_t end)
{
	close_all(s, end, status == 0 && end > window_to(s) ? 0 : WEFT_SPAN_UNCLOSED);
	s->done = 1;
	s->status = status;
}

/* The clock of the last event handled (where open spans end). */
static uint64_t last_clock(const weft__emu_spans *s)
{
	return weft_emu_event_count(s->emu) ? weft_emu_start_clock(s->emu) +
					      weft_emu_duration(s->emu) : 0;
}

int weft__emu_spans_next(weft__emu_spans *s, const weft_span **span)
{
	*span = NULL;
	while (s->next == s->queued) {
		s->next = s->queued = 0;
		if (s->done)
			return s->status;
		const weft_emu_change *c;
		int rc = weft_emu_next(s->emu, &c);
		if (rc == 1 && c->clock > window_to(s))
			finish(s, 0, window_to(s) + 1);
		else if (rc == 1 && c->object == WEFT_EMU_THREAD)
			apply(s, c);
		else if (rc <= 0)
			finish(s, rc, last_clock(s));
		if (s->out_of_memory) {
			s->done = 1;
			s->queued = 0;
			s->status = weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET,
						"out of memory for the spans");
			return s->status;
		}
	}
	*span = &s->queue[s->next++];
	return 1;
}

void weft__emu_spans_stats(const weft__emu_spans *s, weft_span_stats *out)
{
	*out = s->stats;
	out->events = out->selected = weft_emu_event_count(s->emu);
}

/* ---- Life ------------------------------------------------------------------------------ */

/* The options the emulation cannot honour: WEFT_EINVAL with the reason, or 0. */
static int check_options(const weft_span_options *o)
{
	const char *why = NULL;
	if (o->filter.code_pattern != NULL)
		why = "the emulation replays every event: no event selection (select "
		      "channels instead)";
	else if (o->virtual_unit > 0)
		why = "an ovni trace has no virtual time";
	return why ? weft__error(WEFT_EINVAL, NULL, WEFT_NO_OFFSET, "emulated spans: %s", why) : 0;
}

int weft__emu_spans_create(weft_trace *trace, const weft_span_options *options,
			   weft__emu_spans **out)
{
	*out = NULL;
	int rc = check_options(options);
	if (rc < 0)
		return rc;
	weft__emu_spans *s = calloc(1, sizeof *s);
	if (s == NULL)
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	s->trace = trace;
	s->options = *options;
	weft__strtab_init(&s->names);
	weft_emu_options eo;
	weft_emu_options_init(&eo);
	eo.all_models = options->all_models;
	eo.no_end_checks = 1; /* what is left open ends with the trace */
	rc = weft_emu_create(trace, &eo, &s->emu);
	if (rc == 0) {
		s->nthreads = weft_emu_thread_count(s->emu);
		s->threads = calloc(s->nthreads ? s->nthreads : 1, sizeof *s->threads);
		s->thread_selected = calloc(s->nthreads ? s->nthreads : 1, 1);
		if (s->threads == NULL || s->thread_selected == NULL)
			rc = weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	}
	const char *pattern = options->filter.stream_pattern;
	for (size_t t = 0; rc == 0 && t < s->nthreads; t++) {
		const char *path = weft_trace_stream(trace, weft_emu_thread(s->emu, t)->stream)->path;
		s->thread_selected[t] = pattern == NULL || fnmatch(pattern, path, 0) == 0;
	}
	if (rc < 0) {
		weft__emu_spans_free(s);
		return rc;
	}
	*out = s;
	return 0;
}

void weft__emu_spans_free(weft__emu_spans *s)
{
	if (s == NULL)
		return;
	for (size_t t = 0; s->threads != NULL && t < s->nthreads; t++) {
		for (size_t ci = 0; ci < s->threads[t].cap; ci++)
			free(s->threads[t].lines[ci].open);
		free(s->threads[t].lines);
	}
	free(s->threads);
	free(s->thread_selected);
	free(s->chans);
	free(s->target);
	free(s->queue);
	weft__strtab_free(&s->names);
	weft_emu_free(s->emu);
	free(s);
}
