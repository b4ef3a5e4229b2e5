/* SPDX-License-Identifier: MIT */
/*
 * outputs/chrome/chrome_sink.c - the view mode: a sink of the view layer
 * (outputs/view.h) that writes tracks as process and thread name events,
 * spans as B/E or X, instants, flows and counters, with times relative to
 * an origin chosen at the first timed event.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "outputs/chrome/chrome_internal.h"

/* ---- View mode (outputs/view.h) ----------------------------------------------------- */

/* The writer's record of view track `id`, the table grown as needed. */
static chrome_track *view_track(weft__chrome_writer *w, uint32_t id)
{
	if (id > w->track_cap) {
		uint32_t cap = w->track_cap ? w->track_cap : 64;
		while (cap < id)
			cap *= 2;
		chrome_track *t = realloc(w->tracks, cap * sizeof *t);
		if (t == NULL)
			return NULL;
		memset(t + w->track_cap, 0, (cap - w->track_cap) * sizeof *t);
		w->tracks = t;
		w->track_cap = cap;
	}
	return &w->tracks[id - 1];
}

/* {"ph":"M","pid":P[,"tid":T],"name":"<what>_name","args":{"name":<name>}} */
static void put_name_event(weft__chrome_writer *w, const chrome_track *t, int thread,
			   const char *name)
{
	char *p = put_separator(w, weft__outbuf_reserve(&w->out, HEAD_ROOM));

	p = COPY_LITERAL(p, "{\"ph\":\"M\",");
	memcpy(p, t->prefix, t->prefix_len - 6); /* without ,"ts": */
	p += t->prefix_len - 6;
	if (thread)
		p = COPY_LITERAL(p, ",\"name\":\"thread_name\",\"args\":{\"name\":");
	else
		p = COPY_LITERAL(p, ",\"name\":\"process_name\",\"args\":{\"name\":");
	weft__outbuf_commit(&w->out, p);
	weft__chrome_put_string(w, name, strlen(name));
	PUT_LITERAL(&w->out, "}}");
}

/* "<thread name> <channel>" of a track under a thread; NULL without memory. */
static char *child_label(weft__chrome_writer *w, const weft__view_track *t)
{
	const chrome_track *parent = t->parent ? view_track(w, t->parent) : NULL;
	const char *thread = parent && parent->label ? parent->label : "";
	char *label = malloc(strlen(thread) + strlen(t->name) + 2);

	if (label != NULL)
		sprintf(label, "%s%s%s", thread, *thread ? " " : "", t->name);
	return label;
}

/*
 * A new track: its prefix, and its metadata event (counters have none).
 * Chrome keeps one begin/end stack per (pid, tid): the channels of a
 * stream (ovni "nosv VT", "running") have tids of their own from the view
 * (all within 32 bits, none 0: outputs/view.h), named "<thread>
 * <channel>" by their metadata event. A process has no tid.
 */
static void on_view_track(void *ctx, const weft__view_track *t)
{
	weft__chrome_writer *w = ctx;
	chrome_track *c = view_track(w, t->id);
	char *p;

	if (c == NULL) {
		w->error = WEFT_ENOMEM;
		return;
	}
	weft__clock_cache_init(&c->ts, 0);
	p = COPY_LITERAL(c->prefix, "\"pid\":");
	p = weft__fmt_i64(p, t->pid);
	if (t->kind != WEFT__TRACK_PROCESS) {
		p = COPY_LITERAL(p, ",\"tid\":");
		p = weft__fmt_i64(p, t->tid);
	}
	p = COPY_LITERAL(p, ",\"ts\":");
	c->prefix_len = (size_t)(p - c->prefix);
	c->label = t->kind == WEFT__TRACK_THREAD ? strdup(t->name)
		   : t->kind == WEFT__TRACK_PROCESS ? NULL : child_label(w, t);
	if (w->part != NULL) {
		weft__chrome_part_declare(w, t); /* the merge writes the name */
		return;
	}
	if (t->kind == WEFT__TRACK_PROCESS)
		put_name_event(w, c, 0, t->name);
	else if (t->kind != WEFT__TRACK_COUNTER)
		put_name_event(w, c, 1, c->label ? c->label : t->name);
	maybe_hand_over(w);
}

/* 0 when the track could not be recorded (out of memory): its events are lost. */
static int known_track(const weft__chrome_writer *w, const weft__view_track *t)
{
	return t->id <= w->track_cap && w->tracks[t->id - 1].prefix_len > 0;
}

/*
 * The origin of ts, from the first time the view gives: that time in
 * whole seconds, less one day (Heph, read in file order, gives events
 * that started before the first one it stores), or 0 when that is
 * negative (clocks that count from boot stay as they are). ts is then
 * far below 2^42 us, where Perfetto's JSON importer (integer part +
 * fraction as a double, times 1000, rounded) reads back every
 * nanosecond, while times since 1970 (1.6e15 us) keep a quarter of a
 * microsecond there.
 */
uint64_t weft__chrome_time_origin(uint64_t first)
{
	uint64_t seconds = first / WEFT__CHROME_NS_PER_S;

	return seconds > WEFT__CHROME_ORIGIN_MARGIN_S
	       ? (seconds - WEFT__CHROME_ORIGIN_MARGIN_S) * WEFT__CHROME_NS_PER_S : 0;
}

/*
 * time - origin as microseconds at p: exact decimals; a time before the
 * origin (more than a day before the first) is negative, which viewers
 * may drop, and one 2^42 us after it may be read a nanosecond off: both
 * counted for the warning.
 */
static char *put_view_ts(weft__chrome_writer *w, chrome_track *c, char *p, uint64_t time)
{
	if (!w->origin_set) {
		w->origin = weft__chrome_time_origin(time);
		w->origin_set = 1;
	}
	if (time < w->origin) {
		w->stats.before_origin++;
		*p++ = '-';
		return put_micros(p, w->origin - time);
	}
	if (time - w->origin >= WEFT__CHROME_EXACT_NS)
		w->stats.beyond_exact++;
	return put_start_micros(&c->ts, p, time - w->origin);
}

/* {"ph":"<ph>",<prefix><ts> of an event on a track (reserved and committed). */
static void put_view_head(weft__chrome_writer *w, const char *ph, const weft__view_track *t,
			  uint64_t time)
{
	chrome_track *c = &w->tracks[t->id - 1];
	char *p = weft__outbuf_reserve(&w->out, HEAD_ROOM);

	if (WEFT__OUT_UNLIKELY(w->part != NULL)) {
		p = weft__chrome_part_head(w, p, t, ph[0]); /* the merge adds the prefix */
	} else {
		p = put_separator(w, p);
		p = COPY_LITERAL(p, "{\"ph\":\"");
		while (*ph)
			*p++ = *ph++;
		p = COPY_LITERAL(p, "\",");
		memcpy(p, c->prefix, c->prefix_len);
		p += c->prefix_len;
	}
	p = put_view_ts(w, c, p, time);
	weft__outbuf_commit(&w->out, p);
}

/* Part mode's merge: an event a part wrote, on the output's track `track`. */
void weft__chrome_put_part_line(weft__chrome_writer *w, uint32_t track, char ph,
				const char *text, size_t n)
{
	const chrome_track *c = &w->tracks[track - 1];
	char *p = put_separator(w, weft__outbuf_reserve(&w->out, HEAD_ROOM));

	p = COPY_LITERAL(p, "{\"ph\":\"");
	*p++ = ph;
	p = COPY_LITERAL(p, "\",");
	memcpy(p, c->prefix, c->prefix_len);
	weft__outbuf_commit(&w->out, p + c->prefix_len);
	weft__outbuf_put(&w->out, text, n);
	maybe_hand_over(w);
}

/* 1 when an event without decoded fields has bytes to show in hex. */
static int has_raw_bytes(const weft__view_item *it)
{
	return it->arg_count == 0 && it->event != NULL &&
	       (it->event->payload_size > 0 || it->event->data_size > 0);
}

/*
 * ,"args":{fields..., "clipped":true, "unclosed":true} when any; an event
 * the library cannot decode shows its stored bytes: "payload":"<hex>".
 */
static void put_view_args(weft__chrome_writer *w, const weft__view_item *it)
{
	int first = 1;

	if (it->arg_count == 0 && it->flags == 0 && !has_raw_bytes(it))
		return;
	PUT_LITERAL(&w->out, ",\"args\":{");
	if (has_raw_bytes(it)) {
		PUT_LITERAL(&w->out, "\"payload\":\"");
		weft__put_hex_plain(&w->out, it->event->payload, it->event->payload_size);
		weft__put_hex_plain(&w->out, it->event->data, (size_t)it->event->data_size);
		PUT_LITERAL(&w->out, "\"");
		first = 0;
	}
	for (int i = 0; i < it->arg_count; i++, first = 0) {
		if (!first)
			PUT_LITERAL(&w->out, ",");
		weft__chrome_put_member(w, &it->args[i]);
	}
	if (it->flags & WEFT__VIEW_CLIPPED) {
		weft__outbuf_puts(&w->out, first ? "\"clipped\":true" : ",\"clipped\":true");
		first = 0;
	}
	if (it->flags & WEFT__VIEW_UNCLOSED)
		weft__outbuf_puts(&w->out, first ? "\"unclosed\":true" : ",\"unclosed\":true");
	PUT_LITERAL(&w->out, "}");
}

/* ,"name":N[,"cat":C] then the args and the closing brace. */
static void put_view_tail(weft__chrome_writer *w, const weft__view_item *it)
{
	PUT_LITERAL(&w->out, ",\"name\":");
	weft__chrome_put_string(w, it->name, it->name_len);
	if (it->category != NULL) {
		PUT_LITERAL(&w->out, ",\"cat\":");
		weft__chrome_put_string(w, it->category, strlen(it->category));
	}
	put_view_args(w, it);
	PUT_LITERAL(&w->out, "}");
	w->stats.events++;
	maybe_hand_over(w);
}

static void on_view_begin(void *ctx, const weft__view_track *t, uint64_t time,
			  const weft__view_item *it)
{
	if (!known_track(ctx, t))
		return;
	put_view_head(ctx, "B", t, time);
	put_view_tail(ctx, it);
}

/* An end needs no name (it closes the innermost span); flags as args. */
static void on_view_end(void *ctx, const weft__view_track *t, uint64_t time,
			const weft__view_item *it)
{
	weft__chrome_writer *w = ctx;
	weft__view_item flags_only = { .flags = it->flags };

	if (!known_track(w, t))
		return;
	put_view_head(w, "E", t, time);
	put_view_args(w, &flags_only);
	PUT_LITERAL(&w->out, "}");
	w->stats.events++;
	maybe_hand_over(w);
}

static void on_view_complete(void *ctx, const weft__view_track *t, uint64_t time,
			     uint64_t end, const weft__view_item *it)
{
	weft__chrome_writer *w = ctx;
	char *p;

	if (!known_track(w, t))
		return;
	put_view_head(w, "X", t, time);
	p = weft__outbuf_reserve(&w->out, 40);
	p = COPY_LITERAL(p, ",\"dur\":");
	weft__outbuf_commit(&w->out, put_micros(p, end - time));
	put_view_tail(w, it);
}

/*
 * A message end also gets a flow event at the same place: "s" (start)
 * at the send, "f" (finish, bound to the enclosing slice) at the receive,
 * with the id both ends share.
 */
static void put_flow_event(weft__chrome_writer *w, const weft__view_track *t, uint64_t time,
			   const weft__view_item *it)
{
	char *p;

	put_view_head(w, it->flow_end == WEFT_FLOW_IN ? "f" : "s", t, time);
	p = weft__outbuf_reserve(&w->out, 80);
	p = COPY_LITERAL(p, ",\"id\":\"0x");
	for (int shift = 60; shift >= 0; shift -= 4)
		*p++ = "0123456789abcdef"[(it->flow_id >> shift) & 15];
	p = COPY_LITERAL(p, "\",\"name\":\"message\",\"cat\":\"flow\"");
	if (it->flow_end == WEFT_FLOW_IN)
		p = COPY_LITERAL(p, ",\"bp\":\"e\"");
	p = COPY_LITERAL(p, "}");
	weft__outbuf_commit(&w->out, p);
}

static void on_view_instant(void *ctx, const weft__view_track *t, uint64_t time,
			    const weft__view_item *it)
{
	weft__chrome_writer *w = ctx;

	if (!known_track(w, t))
		return;
	put_view_head(w, "i", t, time);
	PUT_LITERAL(&w->out, ",\"s\":\"t\"");
	put_view_tail(w, it);
	if (it->flow_id != 0 && w->part != NULL)
		weft__chrome_part_flow(w, t, time, it); /* the merge numbers it */
	else if (it->flow_id != 0)
		put_flow_event(w, t, time, it);
}

/* Part mode's merge: the flow event of a message end, with its id. */
void weft__chrome_put_flow(weft__chrome_writer *w, const weft__view_track *t,
			   uint64_t time, uint64_t flow_id, int end)
{
	weft__view_item it = { .flow_id = flow_id, .flow_end = end };

	put_flow_event(w, t, time, &it);
	maybe_hand_over(w);
}

/* {"ph":"C",...,"name":"<thread> <counter>","args":{"value":V}} */
static void on_view_counter(void *ctx, const weft__view_track *t, uint64_t time,
			    double value)
{
	weft__chrome_writer *w = ctx;

	if (!known_track(w, t))
		return;
	const char *label = w->tracks[t->id - 1].label;
	put_view_head(w, "C", t, time);
	PUT_LITERAL(&w->out, ",\"name\":");
	weft__chrome_put_string(w, label ? label : t->name, strlen(label ? label : t->name));
	PUT_LITERAL(&w->out, ",\"args\":{\"value\":");
	weft__chrome_put_float(w, value, 0);
	PUT_LITERAL(&w->out, "}}");
	w->stats.events++;
	maybe_hand_over(w);
}

const weft__view_sink *weft__chrome_writer_sink(weft__chrome_writer *w)
{
	w->sink = (weft__view_sink){ w, on_view_track, on_view_begin, on_view_end,
				     on_view_complete, on_view_instant, on_view_counter };
	return &w->sink;
}
