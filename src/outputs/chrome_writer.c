/* SPDX-License-Identifier: MIT */
/*
 * outputs/chrome_writer.c - Chrome's Trace Event format (JSON), streamed
 * from the unified event model (see chrome.h for the mapping and the two
 * modes). The constant part of each event of a stream ("pid":P,"tid":T,
 * "ts":) is rendered once per stream; the rest is formatted by hand into
 * the output buffer, so that an event costs no printf and, in the common
 * case, a few reservations of the buffer.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "outputs/bg_writer.h"
#include "outputs/chrome.h"
#include "outputs/float_format.h"
#include "outputs/outputs.h"
#include "outputs/view.h"

/* Strings up to this length are copied in one reservation when plain. */
#define SHORT_STRING_MAX 256
#define INITIAL_FIELD_CAP 16
/* Room of the per-stream prefix: two 20-digit numbers and the keys. */
#define PREFIX_MAX 96
/* Room for the head of an event: separator, phase, prefix, two times. */
#define HEAD_ROOM (PREFIX_MAX + 96)
/*
 * Background mode: a buffer goes to the writer thread once it holds
 * CHUNK bytes; the slack above that takes the event that crosses the
 * mark, so that only events larger than the slack are written directly
 * (in order all the same: see weft__bg_writer_start_positioned).
 */
#define CHUNK (1u << 20)
#define CHUNK_SLACK (64u << 10)

/* ---- The writer ---------------------------------------------------------------- */

/* What the writer keeps of one stream. */
typedef struct chrome_stream {
	char prefix[PREFIX_MAX]; /* '"pid":P,"tid":T,"ts":' (compat: Heph's spacing) */
	size_t prefix_len;
	uint64_t pid, tid;
	uint32_t track;          /* compat: the fix-up table of its (pid, tid) */
	weft__clock_cache ts;    /* the digits of ts above the last four */
} chrome_stream;

/* View mode: what the writer keeps of one view track. */
typedef struct chrome_track {
	char prefix[PREFIX_MAX]; /* '"pid":P,"tid":T,"ts":' */
	size_t prefix_len;
	char *label;             /* counters: "<thread> <counter>" */
	weft__clock_cache ts;
} chrome_track;

struct weft__chrome_writer {
	weft__outbuf out;
	const weft_trace *trace;
	int compat;
	chrome_stream *streams;
	size_t stream_count;
	weft__fixup *fixup;      /* compat: the same-start fix-up */
	size_t track_count;
	weft_field *fields;      /* scratch array for weft_event_fields() */
	size_t field_cap;
	int need_separator;      /* an event was written: the next needs ",\n" */
	int error;               /* WEFT_ENOMEM of the fix-up, else 0 */
	weft__chrome_stats stats;
	weft__bg_output bg;      /* the writer thread, when asked for */
	chrome_track *tracks;    /* view mode: by view track id - 1 */
	uint32_t track_cap;
	weft__view_sink sink;    /* view mode: the callbacks */
	/* View mode: ts is time - origin (ns, whole seconds), chosen at the
	 * first timed event (see time_origin()). */
	uint64_t origin;
	int origin_set;
	char warning[256];       /* weft__chrome_writer_warning() */
};

/* Appends a constant string. */
#define PUT_LITERAL(ob, lit) put_small((ob), (lit), sizeof(lit) - 1)

/* Appends n bytes (n <= WEFT__OUTBUF_MAX_RESERVE) with one reservation. */
static inline void put_small(weft__outbuf *ob, const char *s, size_t n)
{
	char *p = weft__outbuf_reserve(ob, n);
	memcpy(p, s, n);
	weft__outbuf_commit(ob, p + n);
}

/* Copies a constant string at p and returns the end. */
#define COPY_LITERAL(p, lit) (memcpy((p), (lit), sizeof(lit) - 1), (p) + sizeof(lit) - 1)

/* ---- Background writes ------------------------------------------------------------ */

/* After each event: hands the buffer to the writer thread once it holds a chunk. */
static inline void maybe_hand_over(weft__chrome_writer *w)
{
	if (w->bg.running && w->out.len >= CHUNK)
		weft__bg_output_hand_over(&w->bg, &w->out);
}

/* ---- The same-start fix-up (compat mode) ------------------------------------------ */

/*
 * Heph's same-start fix-up of one interval (ts, dur in us) on its track
 * (outputs/chrome_fixup.c). An event whose walk would never end (Heph's
 * converter hangs there) is left where it was.
 */
static void fixup_place(weft__chrome_writer *w, uint32_t track, uint64_t *ts, uint64_t *dur)
{
	uint64_t given = *ts;
	int rc = weft__fixup_place(w->fixup, track, ts, dur);

	if (rc == 0)
		w->stats.fixup_stuck++;
	else if (rc < 0 && w->error == 0)
		w->error = WEFT_ENOMEM;
	else if (rc > 0 && *ts != given)
		w->stats.fixup_moved++;
}

/* ---- Streams: pid, tid, prefixes, tracks ------------------------------------------- */

/* The top-level node above (or at) `node`. */
static const weft_node *top_node(const weft_trace *trace, const weft_node *node)
{
	while (node->parent != WEFT_NO_PARENT)
		node = weft_trace_node(trace, node->parent);
	return node;
}

/* A node's number as an unsigned id (Heph's u64 substreams), or `fallback`. */
static uint64_t node_number(const weft_node *node, uint64_t fallback)
{
	return node->number != -1 ? (uint64_t)node->number : fallback;
}

/* pid, tid and the prefix text of one stream. */
static void stream_setup(weft__chrome_writer *w, size_t index)
{
	chrome_stream *s = &w->streams[index];
	const weft_node *node = weft_trace_node(w->trace, weft_trace_stream(w->trace, index)->node);
	const weft_node *top = top_node(w->trace, node);
	char *p = s->prefix;

	weft__clock_cache_init(&s->ts, 0);
	s->pid = node_number(top, top->id);
	s->tid = node_number(node, index);
	p = COPY_LITERAL(p, "\t\t{\"pid\": ");
	p = weft__fmt_u64(p, s->pid);
	p = COPY_LITERAL(p, ", \"tid\": ");
	p = weft__fmt_u64(p, s->tid);
	p = COPY_LITERAL(p, ", \"ts\": ");
	s->prefix_len = (size_t)(p - s->prefix);
}

/* (pid, tid, stream) for sorting the streams into tracks. */
typedef struct track_key {
	uint64_t pid, tid;
	size_t stream;
} track_key;

/* qsort order of track keys: pid, then tid. */
static int track_key_compare(const void *a, const void *b)
{
	const track_key *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return 0;
}

/*
 * Compat mode: streams with the same (pid, tid) share one fix-up table,
 * as they share one map in Heph's converter. Sorting the pairs numbers
 * the tracks.
 */
static int assign_tracks(weft__chrome_writer *w)
{
	size_t n = w->stream_count;
	track_key *keys = malloc((n ? n : 1) * sizeof *keys);

	if (keys == NULL)
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	for (size_t i = 0; i < n; i++)
		keys[i] = (track_key){ w->streams[i].pid, w->streams[i].tid, i };
	qsort(keys, n, sizeof *keys, track_key_compare);
	for (size_t i = 0; i < n; i++) {
		if (i == 0 || track_key_compare(&keys[i - 1], &keys[i]) != 0)
			w->track_count++;
		w->streams[keys[i].stream].track = (uint32_t)(w->track_count - 1);
	}
	free(keys);
	return weft__fixup_create(w->track_count, &w->fixup);
}

/* ---- Strings ---------------------------------------------------------------------- */

/* Each byte of a word set to b. */
#define BYTES_OF(b) (0x0101010101010101ull * (uint8_t)(b))

/*
 * 1 when one of the 8 bytes of `word` would need an escape or is not
 * ASCII: a byte below 0x20, 0x7f or above, '"' or '\\'. (The "some byte
 * is zero" test, (v - 0x01..) & ~v & 0x80.., is exact for "any".)
 */
static inline int word_needs_care(uint64_t word)
{
	const uint64_t high = BYTES_OF(0x80);
	uint64_t quote = word ^ BYTES_OF('"'), slash = word ^ BYTES_OF('\\');
	uint64_t del = word ^ BYTES_OF(0x7f);
	uint64_t flags = word | ((word - BYTES_OF(0x20)) & ~word) |
			 ((quote - BYTES_OF(1)) & ~quote) | ((slash - BYTES_OF(1)) & ~slash) |
			 ((del - BYTES_OF(1)) & ~del);
	return (flags & high) != 0;
}

/*
 * 1 when the bytes can stand in a JSON string as they are (printable
 * ASCII): eight bytes at a time, then the tail.
 */
static inline int json_plain(const char *s, size_t n)
{
	size_t i = 0;
	for (; n - i >= 8; i += 8) {
		uint64_t word;
		memcpy(&word, s + i, 8);
		if (word_needs_care(word))
			return 0;
	}
	if (i < n && n >= 8) {
		uint64_t last;
		memcpy(&last, s + n - 8, 8);
		return !word_needs_care(last);
	}
	for (; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c < 0x20 || c >= 0x7f || c == '"' || c == '\\')
			return 0;
	}
	return 1;
}

/* The JSON escape of an ASCII byte that JSON does not allow raw. */
static char *escape_ascii(char *p, unsigned char c)
{
	static const char hex[] = "0123456789abcdef";

	switch (c) {
	case '"': return COPY_LITERAL(p, "\\\"");
	case '\\': return COPY_LITERAL(p, "\\\\");
	case '\n': return COPY_LITERAL(p, "\\n");
	case '\t': return COPY_LITERAL(p, "\\t");
	case '\r': return COPY_LITERAL(p, "\\r");
	default: break;
	}
	p = COPY_LITERAL(p, "\\u00");
	*p++ = hex[c >> 4];
	*p++ = hex[c & 15];
	return p;
}

/*
 * Compat mode: Heph's converter copies strings as they are. Only what
 * JSON forbids raw is escaped (quote, backslash, U+0000..U+001F), and an
 * invalid UTF-8 byte (which Heph's reader never delivers) becomes
 * U+FFFD; everything else, DEL included, is copied, so the bytes equal
 * Heph's wherever Heph's output is valid JSON.
 */
static void put_compat_string(weft__outbuf *ob, const char *str, size_t len)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t i = 0, run = 0;

	weft__outbuf_put(ob, "\"", 1);
	while (i < len) {
		size_t seq = 1;
		if (s[i] >= 0x20 && s[i] != '"' && s[i] != '\\' &&
		    (s[i] < 0x80 || (seq = weft__utf8_sequence_length(s + i, len - i)) > 0)) {
			i += seq;
			continue;
		}
		weft__outbuf_put(ob, s + run, i - run);
		char *p = weft__outbuf_reserve(ob, 8);
		if (s[i] >= 0x80)
			p = COPY_LITERAL(p, "\\ufffd");
		else
			p = escape_ascii(p, s[i]);
		weft__outbuf_commit(ob, p);
		run = ++i;
	}
	weft__outbuf_put(ob, s + run, i - run);
	weft__outbuf_put(ob, "\"", 1);
}

/*
 * A JSON string literal: short plain strings (most names) are copied in
 * one reservation; others go through the escaper of the mode.
 */
static void put_string(weft__chrome_writer *w, const char *s, size_t n)
{
	if (WEFT__OUT_LIKELY(n <= SHORT_STRING_MAX && json_plain(s, n))) {
		char *p = weft__outbuf_reserve(&w->out, n + 2);
		p[0] = '"';
		memcpy(p + 1, s, n);
		p[n + 1] = '"';
		weft__outbuf_commit(&w->out, p + n + 2);
		return;
	}
	if (w->compat)
		put_compat_string(&w->out, s, n);
	else
		weft__put_json_string(&w->out, s, n);
}

/* ---- Numbers -------------------------------------------------------------------------- */

/*
 * The three decimals of a time in microseconds, without trailing zeros
 * (nothing for whole microseconds).
 */
static inline char *put_fraction(char *p, uint32_t frac)
{
	if (frac == 0)
		return p;
	*p++ = '.';
	*p++ = (char)('0' + frac / 100);
	frac %= 100;
	if (frac != 0) {
		*p++ = (char)('0' + frac / 10);
		if (frac % 10 != 0)
			*p++ = (char)('0' + frac % 10);
	}
	return p;
}

/*
 * Nanoseconds as microseconds: the integer part, then up to three
 * decimals without trailing zeros (1610113734119010050 ns ->
 * 1610113734119010.05). Exact: no floating point involved.
 */
static inline char *put_micros(char *p, uint64_t ns)
{
	return put_fraction(weft__fmt_u64(p, ns / 1000), (uint32_t)(ns % 1000));
}

/*
 * The same for the start times of a stream, which grow slowly: the
 * digits above the last four come from the stream's cache.
 */
static inline char *put_start_micros(weft__clock_cache *c, char *p, uint64_t ns)
{
	return put_fraction(weft__fmt_clock(c, p, ns / 1000), (uint32_t)(ns % 1000));
}

/*
 * A float: the shortest text that reads back (compat: positional, as Rust
 * prints f64; default: a JSON number, with an exponent when very large or
 * small). NaN and infinities are not JSON numbers: they become strings.
 */
static void put_float(weft__chrome_writer *w, double v, int single)
{
	char text[WEFT__FLOAT_TEXT_MAX + 2];
	size_t n = w->compat ? weft__fmt_float_positional(text + 1, v, single)
			     : weft__fmt_float_json(text + 1, v, single);

	if (isfinite(v)) {
		weft__outbuf_put(&w->out, text + 1, n);
		return;
	}
	text[0] = '"';
	text[n + 1] = '"';
	weft__outbuf_put(&w->out, text, n + 2);
}

/* ---- Field values ---------------------------------------------------------------------- */

/* One scalar value. */
static void put_scalar(weft__chrome_writer *w, const weft_field *f)
{
	weft__outbuf *ob = &w->out;
	char *p;

	switch (f->type) {
	case WEFT_TYPE_U8: case WEFT_TYPE_U16: case WEFT_TYPE_U32: case WEFT_TYPE_U64:
		p = weft__outbuf_reserve(ob, 24);
		weft__outbuf_commit(ob, weft__fmt_u64(p, f->v.u));
		break;
	case WEFT_TYPE_I8: case WEFT_TYPE_I16: case WEFT_TYPE_I32: case WEFT_TYPE_I64:
		p = weft__outbuf_reserve(ob, 24);
		weft__outbuf_commit(ob, weft__fmt_i64(p, f->v.i));
		break;
	case WEFT_TYPE_F32: case WEFT_TYPE_F64:
		put_float(w, f->v.f, f->type == WEFT_TYPE_F32);
		break;
	case WEFT_TYPE_BOOL:
		weft__outbuf_puts(ob, f->v.u ? "true" : "false");
		break;
	case WEFT_TYPE_STR:
		put_string(w, f->v.s.ptr, f->v.s.len);
		break;
	case WEFT_TYPE_BYTES:
		weft__outbuf_put(ob, "\"", 1);
		weft__put_hex_plain(ob, (const uint8_t *)f->v.s.ptr, f->v.s.len);
		weft__outbuf_put(ob, "\"", 1);
		break;
	default:
		PUT_LITERAL(ob, "null");
		break;
	}
}

/* An array as a JSON array, elements taken one by one from the library. */
static void put_array(weft__chrome_writer *w, const weft_field *f)
{
	PUT_LITERAL(&w->out, "[");
	for (uint32_t i = 0; i < f->count; i++) {
		weft_field element;
		if (i > 0) {
			if (w->compat)
				PUT_LITERAL(&w->out, ", ");
			else
				PUT_LITERAL(&w->out, ",");
		}
		if (weft_field_element(f, i, &element) < 0)
			PUT_LITERAL(&w->out, "null");
		else
			put_scalar(w, &element);
	}
	PUT_LITERAL(&w->out, "]");
}

/* "name": value (compat) or "name":value. */
static void put_member(weft__chrome_writer *w, const weft_field *f)
{
	put_string(w, f->name, f->name_len);
	if (w->compat)
		PUT_LITERAL(&w->out, ": ");
	else
		PUT_LITERAL(&w->out, ":");
	if (f->is_array)
		put_array(w, f);
	else
		put_scalar(w, f);
}

/*
 * Decodes the fields of the event into w->fields, growing the array when
 * the event has more. Returns what weft_event_fields() returns.
 */
static int decode_fields(weft__chrome_writer *w, const weft_event *ev)
{
	int n = weft_event_fields(w->trace, ev, w->fields, w->field_cap);

	if (n > 0 && (size_t)n > w->field_cap) {
		weft_field *bigger = realloc(w->fields, (size_t)n * sizeof *bigger);
		if (bigger == NULL)
			return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET,
					   "out of memory for %d fields", n);
		w->fields = bigger;
		w->field_cap = (size_t)n;
		n = weft_event_fields(w->trace, ev, w->fields, w->field_cap);
	}
	return n;
}

/*
 * Compat mode: ,"args": {...} of the event; nothing when it has no fields
 * (as Heph).
 */
static void put_args(weft__chrome_writer *w, const weft_event *ev)
{
	int n = decode_fields(w, ev);

	if (n < 0)
		w->stats.bad_fields++;
	if (n <= 0)
		return;
	PUT_LITERAL(&w->out, ", \"args\": {");
	for (int i = 0; i < n; i++) {
		if (i > 0)
			PUT_LITERAL(&w->out, ", ");
		put_member(w, &w->fields[i]);
	}
	PUT_LITERAL(&w->out, "}");
}

/* ---- Events ------------------------------------------------------------------------------ */

/* ",\n" before every event but the first. */
static inline char *put_separator(weft__chrome_writer *w, char *p)
{
	if (WEFT__OUT_LIKELY(w->need_separator)) {
		p[0] = ',';
		p[1] = '\n';
		return p + 2;
	}
	w->need_separator = 1;
	return p;
}

/*
 * Compat mode, Heph's layout: \t\t{"pid": P, "tid": T, "ts": TS, "dur": D,
 * "name": N[, "args": {..}], "ph": "X", "cat": ""} with ts and dur in
 * whole microseconds (floor), after the same-start fix-up.
 */
static void write_compat_event(weft__chrome_writer *w, const weft_event *ev)
{
	chrome_stream *s = &w->streams[ev->stream];
	int interval = (ev->flags & WEFT_EVENT_INTERVAL) != 0;
	uint64_t ts = ev->time / 1000, dur = (ev->end - ev->time) / 1000;
	char *p;

	if (interval)
		fixup_place(w, s->track, &ts, &dur);
	p = put_separator(w, weft__outbuf_reserve(&w->out, HEAD_ROOM));
	memcpy(p, s->prefix, s->prefix_len);
	p = weft__fmt_clock(&s->ts, p + s->prefix_len, ts);
	if (interval) {
		p = COPY_LITERAL(p, ", \"dur\": ");
		p = weft__fmt_u64(p, dur);
	}
	p = COPY_LITERAL(p, ", \"name\": ");
	weft__outbuf_commit(&w->out, p);
	put_string(w, ev->code, ev->code_len);
	put_args(w, ev);
	if (interval)
		PUT_LITERAL(&w->out, ", \"ph\": \"X\", \"cat\": \"\"}");
	else
		PUT_LITERAL(&w->out, ", \"ph\": \"i\", \"s\": \"t\", \"cat\": \"\"}");
}

/* One event (compat mode); counted for the report. */
void weft__chrome_writer_event(weft__chrome_writer *w, const weft_event *event)
{
	write_compat_event(w, event);
	w->stats.events++;
	maybe_hand_over(w);
}

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
	put_string(w, name, strlen(name));
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
static uint64_t time_origin(uint64_t first)
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
		w->origin = time_origin(time);
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
	char *p = put_separator(w, weft__outbuf_reserve(&w->out, HEAD_ROOM));

	p = COPY_LITERAL(p, "{\"ph\":\"");
	while (*ph)
		*p++ = *ph++;
	p = COPY_LITERAL(p, "\",");
	memcpy(p, c->prefix, c->prefix_len);
	p = put_view_ts(w, c, p + c->prefix_len, time);
	weft__outbuf_commit(&w->out, p);
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
		put_member(w, &it->args[i]);
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
	put_string(w, it->name, it->name_len);
	if (it->category != NULL) {
		PUT_LITERAL(&w->out, ",\"cat\":");
		put_string(w, it->category, strlen(it->category));
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
	if (it->flow_id != 0)
		put_flow_event(w, t, time, it);
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
	put_string(w, label ? label : t->name, strlen(label ? label : t->name));
	PUT_LITERAL(&w->out, ",\"args\":{\"value\":");
	put_float(w, value, 0);
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

/* ---- Entry points ------------------------------------------------------------------------ */

/*
 * Compat mode: streams, tracks and the field array; the buffer is set up
 * by the caller. (The default mode gets its tracks from the view.)
 */
static int writer_setup(weft__chrome_writer *w)
{
	w->stream_count = weft_trace_stream_count(w->trace);
	w->streams = calloc(w->stream_count ? w->stream_count : 1, sizeof *w->streams);
	w->field_cap = INITIAL_FIELD_CAP;
	w->fields = calloc(w->field_cap, sizeof *w->fields);
	if (w->streams == NULL || w->fields == NULL)
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET,
				   "out of memory for the Chrome writer");
	for (size_t i = 0; i < w->stream_count; i++)
		stream_setup(w, i);
	return assign_tracks(w);
}

/*
 * The writer, its output buffer (1 MiB; in background mode two buffers
 * of a chunk and its slack) and the per-stream prefixes.
 */
int weft__chrome_writer_create(const weft_trace *trace, int fd,
			       const weft__chrome_options *options,
			       weft__chrome_writer **out)
{
	weft__chrome_options none = { 0 };
	weft__chrome_writer *w = calloc(1, sizeof *w);

	*out = NULL;
	if (w == NULL)
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	if (options == NULL)
		options = &none;
	w->trace = trace;
	w->compat = options->heph_compat;
	int rc = options->background ? weft__bg_output_start(&w->bg, fd, options->write_behind,
							      CHUNK + CHUNK_SLACK) : 0;
	if (rc == 0)
		rc = weft__outbuf_init(&w->out, fd, w->bg.running ? CHUNK + CHUNK_SLACK :
				       WEFT__OUTBUF_DEFAULT_SIZE);
	if (rc == 0 && w->compat)
		rc = writer_setup(w);
	if (rc < 0) {
		weft__chrome_writer_free(w);
		return rc;
	}
	*out = w;
	return 0;
}

/* The opening of the document (Heph's spacing in compat mode). */
void weft__chrome_writer_begin(weft__chrome_writer *w)
{
	if (w->compat) {
		PUT_LITERAL(&w->out, "{\n\t\"displayTimeUnit\": \"ns\",\n\t\"traceEvents\": [\n");
		return;
	}
	PUT_LITERAL(&w->out, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
}

/*
 * View mode: the end of traceEvents, then the origin of ts, under the
 * two keys readers keep: "otherData" (the format's document: Chrome's
 * trace viewer shows it under Metadata) and "metadata" (Perfetto's
 * importer keeps it as json_metadata.ts_origin_ns).
 */
static void put_view_footer(weft__chrome_writer *w)
{
	char origin[24];
	size_t n = (size_t)(weft__fmt_u64(origin, w->origin) - origin);

	PUT_LITERAL(&w->out, "\n],\"otherData\":{\"ts_origin_ns\":");
	weft__outbuf_put(&w->out, origin, n);
	PUT_LITERAL(&w->out, "},\"metadata\":{\"ts_origin_ns\":");
	weft__outbuf_put(&w->out, origin, n);
	PUT_LITERAL(&w->out, "}}\n");
}

/*
 * The closing of the document (Heph's ends without a newline), flushed:
 * the writer thread's last buffer first, then the rest.
 */
int weft__chrome_writer_finish(weft__chrome_writer *w)
{
	if (w->compat)
		PUT_LITERAL(&w->out, "\n\t]\n}");
	else
		put_view_footer(w);
	int rc = weft__bg_output_stop(&w->bg);
	if (rc < 0)
		return rc;
	rc = weft__outbuf_flush(&w->out);
	if (rc < 0)
		return rc;
	if (w->error != 0)
		return weft__error(w->error, NULL, WEFT_NO_OFFSET,
				   "out of memory: the output misses metadata events "
				   "or same-start shifts");
	return 0;
}

/* 1 once a write of the output buffer or of the writer thread has failed. */
int weft__chrome_writer_failed(const weft__chrome_writer *w)
{
	return w->out.error != 0 || w->bg.failed;
}

/* What viewers may not read as written (view mode), or NULL. */
const char *weft__chrome_writer_warning(weft__chrome_writer *w)
{
	if (w->stats.before_origin == 0 && w->stats.beyond_exact == 0)
		return NULL;
	snprintf(w->warning, sizeof w->warning,
		 "%llu event time(s) more than a day before the first one have a "
		 "negative ts (Perfetto drops them), %llu more than 2^42 us after "
		 "ts_origin_ns may be read up to a few ns off",
		 (unsigned long long)w->stats.before_origin,
		 (unsigned long long)w->stats.beyond_exact);
	return w->warning;
}

/* The counts of the writer, with those of the fix-up tables. */
void weft__chrome_writer_stats(const weft__chrome_writer *w, weft__chrome_stats *out)
{
	*out = w->stats;
	if (w->fixup != NULL) {
		out->fixup_entries = weft__fixup_entries(w->fixup);
		out->fixup_bytes = weft__fixup_bytes(w->fixup);
	}
}

/*
 * Releases everything; the buffered bytes are dropped (a buffer the
 * writer thread holds is still written: the thread is stopped first).
 */
void weft__chrome_writer_free(weft__chrome_writer *w)
{
	if (w == NULL)
		return;
	weft__bg_output_free(&w->bg);
	weft__fixup_free(w->fixup);
	free(w->streams);
	free(w->fields);
	for (uint32_t i = 0; w->tracks != NULL && i < w->track_cap; i++)
		free(w->tracks[i].label);
	free(w->tracks);
	weft__outbuf_destroy(&w->out);
	free(w);
}
