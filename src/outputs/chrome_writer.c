/*
 * outputs/chrome_writer.c - Chrome's Trace Event format (JSON), streamed
 * from the unified event model (see chrome.h for the mapping and the two
 * modes). The constant part of each event of a stream ("pid":P,"tid":T,
 * "ts":) is rendered once per stream; the rest is formatted by hand into
 * the output buffer, so that an event costs no printf and, in the common
 * case, a few reservations of the buffer.
 */
#include <fnmatch.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "outputs/bg_writer.h"
#include "outputs/chrome.h"
#include "outputs/float_format.h"
#include "outputs/outputs.h"

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

struct weft__chrome_writer {
	weft__outbuf out;
	const weft_trace *trace;
	int compat;
	char *stream_pattern;
	chrome_stream *streams;
	size_t stream_count;
	weft__fixup *fixup;      /* compat: the same-start fix-up */
	size_t track_count;
	weft_field *fields;      /* scratch array for weft_event_fields() */
	size_t field_cap;
	int need_separator;      /* an event was written: the next needs ",\n" */
	int error;               /* WEFT_ENOMEM of the fix-up, else 0 */
	weft__chrome_stats stats;
	weft__bg_writer bg;      /* the writer thread, when `background` */
	int background;          /* 1 while the writer thread runs */
	int bg_failed;           /* a write of the thread failed */
	char *spare;             /* background: the second buffer, until used */
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

/*
 * Background mode: the full buffer goes to the writer thread and the
 * formatting goes on in the buffer the thread gives back (the spare one
 * the first time).
 */
static void hand_over(weft__chrome_writer *w)
{
	char *buf = w->out.buf;
	size_t cap = w->out.cap;

	if (weft__bg_writer_submit(&w->bg, &buf, &cap, w->out.len) < 0)
		w->bg_failed = 1;
	if (buf == NULL) {
		buf = w->spare;
		cap = w->out.cap;
		w->spare = NULL;
	}
	w->out.buf = buf;
	w->out.cap = cap;
	w->out.len = 0;
}

/* After each event: hands the buffer over once it holds a chunk. */
static inline void maybe_hand_over(weft__chrome_writer *w)
{
	if (w->background && w->out.len >= CHUNK)
		hand_over(w);
}

/*
 * Starts the writer thread when asked and the output is a regular file,
 * with the spare buffer; 0 (no thread when it cannot), or WEFT_ENOMEM.
 */
static int background_start(weft__chrome_writer *w, int fd, const weft__chrome_options *o)
{
	if (!o->background)
		return 0;
	w->spare = malloc(CHUNK + CHUNK_SLACK);
	if (w->spare == NULL)
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET,
				   "cannot allocate an output buffer of %u bytes",
				   CHUNK + CHUNK_SLACK);
	w->background = weft__bg_writer_start_positioned(&w->bg, fd, o->write_behind);
	if (!w->background) {
		free(w->spare);
		w->spare = NULL;
	}
	return 0;
}

/* Waits for the thread's last write and stops it; 0 or WEFT_EIO. */
static int background_stop(weft__chrome_writer *w)
{
	if (!w->background)
		return 0;
	w->background = 0;
	return weft__bg_writer_finish(&w->bg);
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
	p = w->compat ? COPY_LITERAL(p, "\t\t{\"pid\": ") : COPY_LITERAL(p, "\"pid\":");
	p = weft__fmt_u64(p, s->pid);
	p = w->compat ? COPY_LITERAL(p, ", \"tid\": ") : COPY_LITERAL(p, ",\"tid\":");
	p = weft__fmt_u64(p, s->tid);
	p = w->compat ? COPY_LITERAL(p, ", \"ts\": ") : COPY_LITERAL(p, ",\"ts\":");
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
 * Default mode, for events the library cannot decode: their stored bytes
 * in hex, or the reason the decoding failed.
 */
static void put_undecoded_args(weft__chrome_writer *w, const weft_event *ev, int n)
{
	weft__outbuf *ob = &w->out;

	if (n < 0) {
		const char *msg = weft_last_error();
		PUT_LITERAL(ob, ",\"args\":{\"decode_error\":");
		weft__put_json_string(ob, msg, strlen(msg));
		PUT_LITERAL(ob, "}");
		return;
	}
	if (ev->payload_size == 0 && ev->data_size == 0)
		return;
	PUT_LITERAL(ob, ",\"args\":{\"payload\":\"");
	weft__put_hex_plain(ob, ev->payload, ev->payload_size);
	weft__put_hex_plain(ob, ev->data, (size_t)ev->data_size);
	PUT_LITERAL(ob, "\"}");
}

/* ,"args":{...} of the event; nothing when it has no fields (as Heph). */
static void put_args(weft__chrome_writer *w, const weft_event *ev)
{
	int n = decode_fields(w, ev);

	if (n < 0)
		w->stats.bad_fields++;
	if (n <= 0) {
		if (!w->compat)
			put_undecoded_args(w, ev, n);
		return;
	}
	if (w->compat)
		PUT_LITERAL(&w->out, ", \"args\": {");
	else
		PUT_LITERAL(&w->out, ",\"args\":{");
	for (int i = 0; i < n; i++) {
		if (i > 0) {
			if (w->compat)
				PUT_LITERAL(&w->out, ", ");
			else
				PUT_LITERAL(&w->out, ",");
		}
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
 * Default mode: {"ph":"X","pid":P,"tid":T,"ts":TS,"dur":D,"name":N,
 * "args":{..}} with exact fractional microseconds; point events are
 * instant events {"ph":"i","s":"t",...} without dur.
 */
static void write_default_event(weft__chrome_writer *w, const weft_event *ev)
{
	chrome_stream *s = &w->streams[ev->stream];
	int interval = (ev->flags & WEFT_EVENT_INTERVAL) != 0;
	char *p = weft__outbuf_reserve(&w->out, HEAD_ROOM);

	p = put_separator(w, p);
	if (WEFT__OUT_LIKELY(interval))
		p = COPY_LITERAL(p, "{\"ph\":\"X\",");
	else
		p = COPY_LITERAL(p, "{\"ph\":\"i\",\"s\":\"t\",");
	memcpy(p, s->prefix, s->prefix_len);
	p = put_start_micros(&s->ts, p + s->prefix_len, ev->time);
	if (WEFT__OUT_LIKELY(interval)) {
		p = COPY_LITERAL(p, ",\"dur\":");
		p = put_micros(p, ev->end - ev->time);
	}
	p = COPY_LITERAL(p, ",\"name\":");
	weft__outbuf_commit(&w->out, p);
	put_string(w, ev->code, ev->code_len);
	put_args(w, ev);
	PUT_LITERAL(&w->out, "}");
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

/* One event in the writer's mode; counted for the report. */
void weft__chrome_writer_event(weft__chrome_writer *w, const weft_event *event)
{
	if (w->compat)
		write_compat_event(w, event);
	else
		write_default_event(w, event);
	w->stats.events++;
	maybe_hand_over(w);
}

/* ---- Metadata events (default mode) --------------------------------------------------- */

/* "<kind> <number>" of a node ("stream 1", "substream 0"), or its name. */
static void put_node_label(weft__chrome_writer *w, const weft_node *node)
{
	size_t len = strlen(node->kind) + 24;
	char *label = malloc(len);

	if (label == NULL || node->number == -1) {
		put_string(w, node->name, strlen(node->name));
		free(label);
		return;
	}
	snprintf(label, len, "%s %llu", node->kind, (unsigned long long)node->number);
	put_string(w, label, strlen(label));
	free(label);
}

/* {"ph":"M","pid":P[,"tid":T],"name":"<what>","args":{"name":<label>}} */
static void put_metadata_event(weft__chrome_writer *w, const chrome_stream *s,
			       int thread, const weft_node *node)
{
	char *p = put_separator(w, weft__outbuf_reserve(&w->out, HEAD_ROOM));

	p = COPY_LITERAL(p, "{\"ph\":\"M\",\"pid\":");
	p = weft__fmt_u64(p, s->pid);
	if (thread) {
		p = COPY_LITERAL(p, ",\"tid\":");
		p = weft__fmt_u64(p, s->tid);
		p = COPY_LITERAL(p, ",\"name\":\"thread_name\",\"args\":{\"name\":");
	} else {
		p = COPY_LITERAL(p, ",\"name\":\"process_name\",\"args\":{\"name\":");
	}
	weft__outbuf_commit(&w->out, p);
	put_node_label(w, node);
	PUT_LITERAL(&w->out, "}}");
}

/*
 * A process_name event for the top-level node of every selected stream
 * (once each) and a thread_name event for every selected stream.
 */
static int write_metadata(weft__chrome_writer *w)
{
	size_t nodes = weft_trace_node_count(w->trace);
	unsigned char *named = calloc(nodes ? nodes : 1, 1);

	if (named == NULL)
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	for (size_t i = 0; i < w->stream_count; i++) {
		const weft_stream_info *si = weft_trace_stream(w->trace, i);
		if (w->stream_pattern != NULL && fnmatch(w->stream_pattern, si->path, 0) != 0)
			continue;
		const weft_node *node = weft_trace_node(w->trace, si->node);
		const weft_node *top = top_node(w->trace, node);
		if (!named[top->id]) {
			named[top->id] = 1;
			put_metadata_event(w, &w->streams[i], 0, top);
		}
		put_metadata_event(w, &w->streams[i], 1, node);
		maybe_hand_over(w);
	}
	free(named);
	return 0;
}

/* ---- Entry points ------------------------------------------------------------------------ */

/* Streams, tracks and the field array; the buffer is set up by the caller. */
static int writer_setup(weft__chrome_writer *w, const weft__chrome_options *o)
{
	w->stream_count = weft_trace_stream_count(w->trace);
	w->streams = calloc(w->stream_count ? w->stream_count : 1, sizeof *w->streams);
	w->field_cap = INITIAL_FIELD_CAP;
	w->fields = calloc(w->field_cap, sizeof *w->fields);
	if (o->stream_pattern != NULL)
		w->stream_pattern = strdup(o->stream_pattern);
	if (w->streams == NULL || w->fields == NULL ||
	    (o->stream_pattern != NULL && w->stream_pattern == NULL))
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET,
				   "out of memory for the Chrome writer");
	for (size_t i = 0; i < w->stream_count; i++)
		stream_setup(w, i);
	return w->compat ? assign_tracks(w) : 0;
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
	int rc = background_start(w, fd, options);
	if (rc == 0)
		rc = weft__outbuf_init(&w->out, fd, w->background ? CHUNK + CHUNK_SLACK :
				       WEFT__OUTBUF_DEFAULT_SIZE);
	if (rc == 0)
		rc = writer_setup(w, options);
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
	if (write_metadata(w) < 0 && w->error == 0)
		w->error = WEFT_ENOMEM;
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
		PUT_LITERAL(&w->out, "\n]}\n");
	int rc = background_stop(w);
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
	return w->out.error != 0 || w->bg_failed;
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
	background_stop(w);
	free(w->spare);
	weft__fixup_free(w->fixup);
	free(w->streams);
	free(w->fields);
	free(w->stream_pattern);
	weft__outbuf_destroy(&w->out);
	free(w);
}
