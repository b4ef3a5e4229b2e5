/* SPDX-License-Identifier: MIT */
/*
 * outputs/paraver/paraver_sink.c - the view sink's callbacks: tracks
 * become tasks and rows, and spans, instants, counters and running states
 * become records (paraver_window.c routes them).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "outputs/paraver/paraver_internal.h"

/* ---- Tracks ------------------------------------------------------------------------------- */


/* Makes room for track `id`. 0 or -1. */
static int tracks_reserve(weft__paraver_writer *w, uint32_t id)
{
	return weft__array_grow_zeroed((void **)&w->tracks, &w->track_cap, id, sizeof *w->tracks);
}

/* A new task named `name`; its number (1, 2, ...), or 0 on ENOMEM. */
uint32_t weft__pv_task_new(weft__paraver_writer *w, const char *name)
{
	if (weft__array_grow((void **)&w->tasks, &w->task_cap, w->task_count + 1,
			     sizeof *w->tasks) != 0)
		return 0;
	char *copy = weft__pv_label_text_copy(name, strlen(name));
	if (copy == NULL)
		return 0;
	w->tasks[w->task_count].name = copy;
	w->tasks[w->task_count].threads = 0;
	return (uint32_t)++w->task_count;
}

/*
 * A new row (Paraver thread) in `task`, named "<task name>/<name>"; sets
 * the track's task and thread. 0 or -1 (ENOMEM).
 */
int weft__pv_row_new(weft__paraver_writer *w, pv_track *tr, uint32_t task, const char *name)
{
	if (weft__array_grow((void **)&w->rows, &w->row_cap, w->row_count + 1,
			     sizeof *w->rows) != 0)
		return -1;
	const char *task_name = w->tasks[task - 1].name;
	size_t n = strlen(task_name) + strlen(name) + 2;
	char *full = malloc(n);
	if (full == NULL)
		return -1;
	snprintf(full, n, "%s/%s", task_name, name);
	char *clean = weft__pv_label_text_copy(full, strlen(full));
	free(full);
	if (clean == NULL)
		return -1;
	tr->task = task;
	tr->thread = ++w->tasks[task - 1].threads;
	w->rows[w->row_count].task = task;
	w->rows[w->row_count].thread = tr->thread;
	w->rows[w->row_count++].name = clean;
	return 0;
}

/*
 * The row of a track whose parent is `parent`: the parent's row; a new
 * row in the parent's task when the parent is a process; a new task and
 * row when there is no parent. 0 or -1 (ENOMEM).
 */
static int place_on_row(weft__paraver_writer *w, pv_track *tr, const weft__view_track *t)
{
	const pv_track *p = track_get(w, t->parent);

	if (p != NULL && p->kind != WEFT__TRACK_PROCESS) {
		tr->task = p->task;
		tr->thread = p->thread;
		return 0;
	}
	uint32_t task = p != NULL ? p->task : weft__pv_task_new(w, t->name);
	if (task == 0)
		return -1;
	return weft__pv_row_new(w, tr, task, t->name);
}

/* The type of a CHANNEL or COUNTER track, or the state of a STATE track. */
static void track_type(weft__paraver_writer *w, pv_track *tr, const weft__view_track *t)
{
	const char *name = t->channel != NULL ? t->channel : t->name;
	label *created;

	switch (t->kind) {
	case WEFT__TRACK_THREAD:
		tr->type = TYPE_OWN_SPANS; /* labelled at its first span */
		break;
	case WEFT__TRACK_CHANNEL:
		tr->type = weft__pv_type_of(w, KEY_SPAN, RANGE_SPAN, name, strlen(name), NULL,
					    &created);
		break;
	case WEFT__TRACK_COUNTER:
		tr->type = weft__pv_type_of(w, KEY_COUNTER, RANGE_COUNTER, name, strlen(name), NULL,
					    &created);
		if (created != NULL)
			created->numeric = 1;
		break;
	case WEFT__TRACK_STATE:
		tr->type = weft__pv_state_of(w, name);
		break;
	default:
		break;
	}
}

/* The text ":0:1:<task>:<thread>:" that follows a record's kind on its row. */
static void track_prefix(pv_track *tr)
{
	char *p = tr->prefix;

	memcpy(p, ":0:1:", 5);
	p = weft__fmt_u64(p + 5, tr->task);
	*p++ = ':';
	p = weft__fmt_u64(p, tr->thread);
	*p++ = ':';
	tr->prefix_len = (uint32_t)(p - tr->prefix);
}

/* Sink: a new track (once, parents first). */
static void on_track(void *ctx, const weft__view_track *t)
{
	weft__paraver_writer *w = ctx;

	if (w->finished || t->id == 0 || t->id > MAX_TRACK_ID || t->name == NULL)
		return;
	if (tracks_reserve(w, t->id) != 0) {
		weft__pv_fail_nomem(w, "tracks");
		return;
	}
	pv_track *tr = &w->tracks[t->id - 1];
	if (tr->kind != 0)
		return; /* declared twice: the first one counts */
	if (t->kind == WEFT__TRACK_PROCESS) {
		tr->task = weft__pv_task_new(w, t->name);
		if (tr->task == 0) {
			weft__pv_fail_nomem(w, "tasks");
			return;
		}
	} else if (place_on_row(w, tr, t) != 0) {
		weft__pv_fail_nomem(w, "rows");
		return;
	} else {
		track_prefix(tr);
	}
	tr->kind = (int)t->kind;
	track_type(w, tr, t);
}

/* ---- State tracks -------------------------------------------------------------------- */

/* 1 while state spans get placeholders (before the first write, and direct). */
static int placeholders_on(const weft__paraver_writer *w)
{
	return w->mode == MODE_COLLECT || w->mode == MODE_DIRECT;
}

/*
 * A placeholder for the state record that begins at `time` (a span, or
 * the gap after one): it holds back the records after `time` until it
 * is resolved or written. None for a begin older than the output (the
 * closing of spans at the end): its record will be late, merged at the
 * end like any other.
 */
static void ph_open(weft__paraver_writer *w, pv_track *tr, uint32_t id, int kind, uint64_t time)
{
	if (w->mode == MODE_DIRECT && time < w->mark)
		return;
	tr->ph = (uint8_t)kind;
	tr->ph_gen++;
	tr->ph_begin = time;
	if (weft__pv_ph_push(&w->win, (ph_entry){ time, w->seq++, id, tr->ph_gen }) != 0) {
		weft__pv_ph_drop(tr);
		weft__pv_fail_nomem(w, "placeholders");
	}
}

/*
 * A STATE span opens at `time`: the gap since the last one is "Not
 * running" (a record, the completion of its written placeholder, or
 * nothing when there is no gap).
 */
static void gap_resolve(weft__paraver_writer *w, pv_track *tr, uint32_t id, uint64_t time)
{
	if (tr->ph == PH_WRITTEN_GAP) {
		if (time > tr->ph_begin) {
			weft__pv_patch_end(w, tr, time);
			see_time(w, tr->ph_begin, time);
		} else {
			weft__pv_vanish_add(w, tr);
		}
		weft__pv_ph_drop(tr);
		return;
	}
	if (tr->ph == PH_OPEN_GAP)
		weft__pv_ph_drop(tr);
	if (tr->state_ended && time > tr->state_last_end)
		add_record(w, REC_STATE, id, 0, tr->state_last_end, time, 0);
}

/* A STATE span opens: the gap before it, then its own placeholder. */
void weft__pv_state_begin(weft__paraver_writer *w, pv_track *tr, uint32_t id, uint64_t time)
{
	if (tr->state_depth++ > 0)
		return; /* nested: the outer span holds the state */
	gap_resolve(w, tr, id, time);
	tr->state_begin = time;
	if (placeholders_on(w))
		ph_open(w, tr, id, PH_OPEN_RUN, time);
}

/* A STATE span closes: one state record for the outermost span. */
static void state_end(weft__paraver_writer *w, pv_track *tr, uint32_t id, uint64_t time)
{
	if (tr->state_depth == 0 || --tr->state_depth > 0)
		return;
	if (tr->ph == PH_WRITTEN_RUN) {
		weft__pv_patch_end(w, tr, time);
		see_time(w, tr->state_begin, time);
		weft__pv_ph_drop(tr);
	} else {
		weft__pv_ph_drop(tr); /* unwritten: the record takes its place */
		add_record(w, REC_STATE, id, 0, tr->state_begin, time, tr->type);
	}
	tr->state_last_end = time;
	tr->state_ended = 1;
	if (placeholders_on(w))
		ph_open(w, tr, id, PH_OPEN_GAP, time);
}

/* A complete span on a STATE track (never on the direct path). */
static void state_complete(weft__paraver_writer *w, pv_track *tr, uint32_t id,
			   uint64_t time, uint64_t end)
{
	if (tr->state_depth > 0) {
		add_record(w, REC_STATE, id, 0, time, end, tr->type);
		return;
	}
	weft__pv_state_begin(w, tr, id, time);
	state_end(w, tr, id, end);
}

/* ---- Spans, instants, counters ------------------------------------------------------------ */

/* The number cached for key[0..len), or -1. */
static int64_t cache_get(const key_cache *c, const char *key, size_t len)
{
	if (c->len == 0 || c->len != len || memcmp(c->key, key, len) != 0)
		return -1;
	return c->number;
}

/* Remembers key -> number when the key fits. */
static void cache_put(key_cache *c, const char *key, size_t len, int64_t number)
{
	if (len == 0 || len > CACHE_KEY_MAX)
		return;
	memcpy(c->key, key, len);
	c->len = (uint32_t)len;
	c->number = number;
}

/* The value of the span an item names (and the label of the own type). */
static int64_t item_value(weft__paraver_writer *w, pv_track *tr, const weft__view_item *item)
{
	const char *name = "(unnamed)";
	size_t len = 9;

	if (item != NULL && item->name != NULL && item->name_len > 0) {
		name = item->name;
		len = item->name_len;
	} else if (item != NULL && item->category != NULL) {
		name = item->category;
		len = strlen(name);
	}
	int64_t v = cache_get(&tr->span_cache, name, len);
	if (v >= 0)
		return v;
	if (tr->type == TYPE_OWN_SPANS &&
	    weft__pv_fixed_type(w, TYPE_OWN_SPANS, "Spans of the stream's own timeline") != 0)
		weft__pv_fail_nomem(w, "type labels");
	v = weft__pv_value_of(w, tr->type, name, len);
	cache_put(&tr->span_cache, name, len, v);
	return v;
}

/* The track of a span callback, or NULL when it takes no span (finished,
 * unknown, a counter or a process). */
static pv_track *span_track(weft__paraver_writer *w, uint32_t id)
{
	pv_track *tr = track_get(w, id);

	if (w->finished || tr == NULL || tr->kind == WEFT__TRACK_COUNTER ||
	    tr->kind == WEFT__TRACK_PROCESS)
		return NULL;
	return tr;
}

/* Sink: a span opens. */
static void on_begin(void *ctx, const weft__view_track *t, uint64_t time,
		     const weft__view_item *item)
{
	weft__paraver_writer *w = ctx;
	pv_track *tr = span_track(w, t->id);

	if (tr == NULL)
		return;
	if (tr->kind == WEFT__TRACK_STATE) {
		weft__pv_state_begin(w, tr, t->id, time);
		return;
	}
	int64_t value = item_value(w, tr, item);
	add_record(w, REC_BEGIN, t->id, tr->type, time, time, value);
}

/* Sink: the innermost open span of a track closes. */
static void on_end(void *ctx, const weft__view_track *t, uint64_t time,
		   const weft__view_item *item)
{
	weft__paraver_writer *w = ctx;
	pv_track *tr = span_track(w, t->id);

	(void)item;
	if (tr == NULL)
		return;
	if (tr->kind == WEFT__TRACK_STATE) {
		state_end(w, tr, t->id, time);
		return;
	}
	add_record(w, REC_END, t->id, tr->type, time, time, 0);
}

/*
 * Complete spans come with their ends, in any order (Heph: children
 * first): the sort path takes them (before the first write), or the
 * rebuild (after).
 */
static void leave_direct(weft__paraver_writer *w)
{
	if (w->mode == MODE_COLLECT)
		weft__pv_to_sort_mode(w);
	else
		weft__pv_enter_rebuild(w);
}

/* Sink: a span [time, end] at once. */
static void on_complete(void *ctx, const weft__view_track *t, uint64_t time, uint64_t end,
			const weft__view_item *item)
{
	weft__paraver_writer *w = ctx;
	pv_track *tr = span_track(w, t->id);

	if (tr == NULL)
		return;
	leave_direct(w);
	if (end < time)
		end = time;
	if (tr->kind == WEFT__TRACK_STATE) {
		state_complete(w, tr, t->id, time, end);
		return;
	}
	int64_t value = item_value(w, tr, item);
	if (end == time) {
		add_record(w, REC_PULSE, t->id, tr->type, time, time, value);
		return;
	}
	add_record(w, REC_CBEGIN, t->id, tr->type, time, end, value);
	add_record(w, REC_CEND, t->id, tr->type, end, end, 0);
}

/* The first integer (or boolean) argument of an item, or NULL. */
static const weft_field *first_integer(const weft__view_item *item)
{
	for (int i = 0; item->args != NULL && i < item->arg_count; i++) {
		const weft_field *f = &item->args[i];
		if (!f->is_array && f->type != WEFT_TYPE_F32 && f->type != WEFT_TYPE_F64 &&
		    f->type != WEFT_TYPE_STR && f->type != WEFT_TYPE_BYTES)
			return f;
	}
	return NULL;
}

/* An integer field as a Paraver value (u64 above 2^63 - 1: clamped). */
static int64_t field_value(const weft_field *f)
{
	if (f->type >= WEFT_TYPE_I8 && f->type <= WEFT_TYPE_I64)
		return f->v.i;
	return f->v.u > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)f->v.u;
}

/* "category/name": the identity of an instant's type. len = bytes written. */
static size_t instant_key(const weft__view_item *item, char *buf, size_t cap)
{
	const char *name = item->name != NULL ? item->name : "(unnamed)";
	size_t name_len = item->name != NULL ? item->name_len : 9;
	int n = snprintf(buf, cap, "%s/%.*s", item->category ? item->category : "",
			 (int)(name_len > 4096 ? 4096 : name_len), name);
	return n < 0 ? 0 : ((size_t)n < cap ? (size_t)n : cap - 1);
}

/*
 * The .pcf label of a new instant type: the name (prefixed with the
 * category unless the name starts with it), and the argument its values
 * are, if any.
 */
static void instant_label(const weft__view_item *item, const weft_field *arg,
			  char *buf, size_t cap)
{
	const char *cat = item->category;
	const char *name = item->name != NULL ? item->name : "(unnamed)";
	int name_len = (int)(item->name != NULL ? (item->name_len > 256 ? 256 : item->name_len) : 9);
	size_t cat_len = cat != NULL ? strlen(cat) : 0;
	int prefix = cat_len > 0 && !((size_t)name_len > cat_len &&
				      strncmp(name, cat, cat_len) == 0 && name[cat_len] == ' ');
	int n = snprintf(buf, cap, "%s%s%.*s", prefix ? cat : "", prefix ? ": " : "",
			 name_len, name);
	if (arg != NULL && n >= 0 && (size_t)n < cap)
		snprintf(buf + n, cap - (size_t)n, " (%.*s)",
			 (int)(arg->name_len > 64 ? 64 : arg->name_len), arg->name);
}

/*
 * The cache key of an instant: category, name and the argument that
 * gives its value, separated by control bytes (no formatting: this is
 * the hot path). Its length, or 0 when it does not fit.
 */
static size_t instant_cache_key(const weft__view_item *item, const weft_field *arg, char *buf)
{
	size_t cat = item->category != NULL ? strlen(item->category) : 0;
	size_t arg_len = arg != NULL ? arg->name_len : 0;
	size_t len = cat + 1 + item->name_len + 1 + arg_len;

	if (item->name == NULL || len > CACHE_KEY_MAX)
		return 0;
	if (cat > 0) /* no category: NULL, which memcpy must not get even for 0 bytes */
		memcpy(buf, item->category, cat);
	buf[cat] = 0x1f;
	memcpy(buf + cat + 1, item->name, item->name_len);
	buf[cat + 1 + item->name_len] = arg != NULL ? 0x1e : 0x1d;
	if (arg_len > 0)
		memcpy(buf + cat + 2 + item->name_len, arg->name, arg_len);
	return len;
}

/* The type of an instant, made and labelled on its first occurrence. */
static uint32_t instant_type(weft__paraver_writer *w, const weft__view_item *item,
			     const weft_field *arg)
{
	char key[4400], text[LABEL_TEXT_MAX];
	label *created;
	size_t len = instant_key(item, key, sizeof key);

	instant_label(item, arg, text, sizeof text);
	uint32_t type = weft__pv_type_of(w, KEY_INSTANT, RANGE_INSTANT, key, len, text, &created);
	if (type == TYPE_OTHER)
		weft__pv_other_value(w, type);
	if (type == 0 || type == TYPE_OTHER)
		return type;
	if (created != NULL && arg != NULL)
		created->numeric = 1;
	if (arg == NULL && weft__pv_label_by_key(&w->labels, type, "1", 1) == NULL &&
	    weft__pv_label_add(&w->labels, type, type, "1", 1, 1, text) == NULL)
		weft__pv_fail_nomem(w, "value labels");
	return type;
}

/* Most message ends kept waiting for their other end at once (40 bytes each). */
#define FLOWS_WAITING_MAX (1u << 20)

/* The integer field `name` of an item, or `otherwise`. */
static int64_t item_integer(const weft__view_item *item, const char *name, int64_t otherwise)
{
	for (int i = 0; item->args != NULL && i < item->arg_count; i++) {
		const weft_field *f = &item->args[i];
		if (f->is_array || f->name_len != strlen(name) ||
		    memcmp(f->name, name, f->name_len) != 0)
			continue;
		if ((f->type >= WEFT_TYPE_U8 && f->type <= WEFT_TYPE_I64) || f->type == WEFT_TYPE_BOOL)
			return field_value(f);
	}
	return otherwise;
}

/*
 * A message end (an instant with a flow id): the first end of a message
 * waits; the second makes its communication record at the send's time,
 * through the window while the send is not written yet, else through the
 * sort (merged into the .prv at the end, as every late record).
 */
static void on_flow_end(weft__paraver_writer *w, uint32_t track, uint64_t time,
			const weft__view_item *item)
{
	weft__flow_end e = { time, track, item->flow_end, 0, 0 }, other;
	int64_t size = item_integer(item, "length", item_integer(item, "size", 0));
	e.size = size > 0 ? (uint64_t)size : 0;
	e.tag = item_integer(item, "tag", 0);
	if (w->flows == NULL && (w->flows = weft__flow_pairs_create(FLOWS_WAITING_MAX)) == NULL) {
		weft__pv_fail_nomem(w, "message ends");
		return;
	}
	int rc = weft__flow_pairs_meet(w->flows, item->flow_id, &e, &other);
	if (rc < 0)
		w->stats.comm_dropped++;
	if (rc != 1)
		return;
	const weft__flow_end *send = e.end == WEFT_FLOW_IN ? &other : &e;
	const weft__flow_end *recv = e.end == WEFT_FLOW_IN ? &e : &other;
	uint64_t bytes = send->size ? send->size : recv->size;
	int64_t tag = send->tag ? send->tag : recv->tag;
	weft__pv_add_tagged(w, REC_COMM, send->track, recv->track, send->time, recv->time,
			    bytes > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)bytes,
			    tag < INT32_MIN   ? INT32_MIN
			    : tag > INT32_MAX ? INT32_MAX
					      : (int32_t)tag);
}

/* Sink: an instant. */
static void on_instant(void *ctx, const weft__view_track *t, uint64_t time,
		       const weft__view_item *item)
{
	weft__paraver_writer *w = ctx;
	pv_track *tr = track_get(w, t->id);
	char ckey[CACHE_KEY_MAX];

	if (w->finished || tr == NULL || tr->kind == WEFT__TRACK_PROCESS || item == NULL)
		return;
	const weft_field *arg = first_integer(item);
	size_t clen = instant_cache_key(item, arg, ckey);
	int64_t cached = clen > 0 ? cache_get(&tr->instant_cache, ckey, clen) : -1;
	uint32_t type = cached >= 0 ? (uint32_t)cached : instant_type(w, item, arg);
	if (type == 0)
		return;
	if (cached < 0)
		cache_put(&tr->instant_cache, ckey, clen, type);
	int64_t value = arg != NULL ? field_value(arg) : 1;
	if (type == TYPE_OTHER)
		value = VALUE_OTHER;
	add_record(w, REC_EVENT, t->id, type, time, time, value);
	if (item->flow_id != 0 && item->flow_end != 0)
		on_flow_end(w, t->id, time, item);
}

/*
 * A counter value as a Paraver integer: rounded half away from zero,
 * clamped to int64 (by hand: libweft does not link libm).
 */
static int64_t round_value(double v)
{
	if (v >= 9.2233720368547758e18)
		return INT64_MAX;
	if (v <= -9.2233720368547758e18)
		return INT64_MIN;
	int64_t t = (int64_t)v; /* toward zero; exact where v has a fraction */
	double frac = v - (double)t;
	if (frac >= 0.5)
		t++;
	else if (frac <= -0.5)
		t--;
	return t;
}

/* Sink: a counter takes a value. */
static void on_counter(void *ctx, const weft__view_track *t, uint64_t time, double value)
{
	weft__paraver_writer *w = ctx;
	pv_track *tr = track_get(w, t->id);

	if (w->finished || tr == NULL || tr->kind != WEFT__TRACK_COUNTER)
		return;
	if (!isfinite(value)) {
		w->stats.bad_counters++;
		return;
	}
	add_record(w, REC_EVENT, t->id, tr->type, time, time, round_value(value));
}

/* Binds the callbacks of this file to the writer's sink. */
void weft__pv_sink_init(weft__paraver_writer *w)
{
	w->sink.ctx = w;
	w->sink.track = on_track;
	w->sink.begin = on_begin;
	w->sink.end = on_end;
	w->sink.complete = on_complete;
	w->sink.instant = on_instant;
	w->sink.counter = on_counter;
}
