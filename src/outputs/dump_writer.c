/* SPDX-License-Identifier: MIT */
/*
 * outputs/dump_writer.c - the event lines of `weft dump`, in three modes:
 *   fields: <clock>  <code>  <stream>  name=value name=value ...
 *   hex:    <clock>  <code>  <stream>  :xx:xx...   (exactly ovnidump -x)
 *   json:   {"time":..,"stream":..,"code":..,"fields":{..},"payload":..,
 *            "offset":..}  (schema in docs/dump-json.md)
 * Text lines of interval events (Heph) carry "end=E dur=D  " after the
 * stream; with WEFT__DUMP_TREE the code is indented by the call-tree
 * depth. Both only take the general path: point events at depth <= 0
 * keep their one-reservation lines, byte for byte.
 * The stream part of each line is rendered once per stream at start-up;
 * the rest is formatted by hand into the output buffer.
 */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "outputs/outputs.h"

/* Width of the clock column, as ovnidump prints it ("%10ld"). */
#define CLOCK_WIDTH 10
/* Codes up to this length are copied without escaping when printable. */
#define SHORT_CODE_MAX 64
#define INITIAL_FIELD_CAP 16
/* Room for "<clock>  " and a 3-byte code: 20 digits + 2 + 3 + margin. */
#define HEAD_ROOM 32
/* Stream prefixes up to this length go in the one-reservation path. */
#define SIMPLE_PREFIX_MAX 1024
/* Zero bytes after each stream prefix, and room left after it in a line. */
#define PREFIX_PAD 16
/* The one-reservation text line: at most this many integer fields... */
#define FAST_FIELDS_MAX 8
/* ...with names of at most this many printable bytes. */
#define FAST_NAME_MAX 16
/* Room for " name=value" in that path (a value has at most 20 bytes). */
#define FAST_FIELD_ROOM (1 + FAST_NAME_MAX + 1 + 20)
/* Room for a whole line in that path, after the stream prefix. */
#define FAST_LINE_ROOM (HEAD_ROOM + PREFIX_PAD + FAST_FIELDS_MAX * FAST_FIELD_ROOM + 1)
/* --tree: two spaces per level, at most this many levels (deeper events
 * are indented as this deep; --json has their exact depth). */
#define TREE_INDENT_STEP 2
#define TREE_DEPTH_MAX 256
/* Room for "end=<u64> dur=<u64>  " of an interval event. */
#define INTERVAL_ROOM (4 + 20 + 5 + 20 + 2)

/* ---- Stream prefixes ----------------------------------------------------- */

/*
 * Renders the constant part of a line for one stream in a scratch
 * buffer and keeps a copy: "  <path>  " for text, ',"stream":"<path>"'
 * for JSON (the path escaped once instead of once per event). The copy
 * is followed by PREFIX_PAD zero bytes, so that put_prefix() may copy it
 * in whole 16-byte pieces.
 */
static int render_stream_prefix(weft__dump_stream *ds, const char *path,
				weft__dump_mode mode)
{
	weft__outbuf scratch;
	int rc = weft__outbuf_init(&scratch, -1, 0);

	if (rc < 0)
		return rc;
	if (mode == WEFT__DUMP_JSON) {
		weft__outbuf_puts(&scratch, ",\"stream\":");
		weft__put_json_string(&scratch, path, strlen(path));
	} else {
		weft__outbuf_puts(&scratch, "  ");
		weft__put_text_bare(&scratch, path, strlen(path));
		weft__outbuf_puts(&scratch, "  ");
	}
	ds->prefix = calloc(1, scratch.len + PREFIX_PAD);
	if (ds->prefix == NULL) {
		weft__outbuf_destroy(&scratch);
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET,
				   "out of memory for stream names");
	}
	memcpy(ds->prefix, scratch.buf, scratch.len);
	ds->prefix_len = scratch.len;
	weft__outbuf_destroy(&scratch);
	return WEFT_OK;
}

/*
 * ',"file":"<file>"' of a stream, for JSON lines of traces whose files
 * hold many streams each (weft_trace_shared_files): rendered once, and
 * shared with the previous stream when both name the same file (streams
 * are numbered file by file), so memory grows with the files, not with
 * the streams.
 */
static int render_file_suffix(weft__dump_writer *w, size_t i)
{
	const char *file = weft_trace_stream(w->trace, i)->file;
	weft__dump_stream *ds = &w->streams[i];
	weft__outbuf scratch;

	if (i > 0 && strcmp(file, weft_trace_stream(w->trace, i - 1)->file) == 0) {
		ds->file = w->streams[i - 1].file;
		ds->file_len = w->streams[i - 1].file_len;
		return WEFT_OK;
	}
	int rc = weft__outbuf_init(&scratch, -1, 0);
	if (rc < 0)
		return rc;
	weft__outbuf_puts(&scratch, ",\"file\":");
	weft__put_json_string(&scratch, file, strlen(file));
	ds->file = malloc(scratch.len);
	if (ds->file != NULL) {
		memcpy(ds->file, scratch.buf, scratch.len);
		ds->file_len = scratch.len;
	}
	weft__outbuf_destroy(&scratch);
	if (ds->file == NULL)
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET,
				   "out of memory for file names");
	return WEFT_OK;
}

/* The constant parts of every stream's lines (see the two above). */
static int render_streams(weft__dump_writer *w)
{
	int with_file = w->mode == WEFT__DUMP_JSON && weft_trace_shared_files(w->trace);

	for (size_t i = 0; i < w->stream_count; i++) {
		int rc = render_stream_prefix(&w->streams[i],
					      weft_trace_stream(w->trace, i)->path, w->mode);
		if (rc == WEFT_OK && with_file)
			rc = render_file_suffix(w, i);
		if (rc < 0)
			return rc;
	}
	return WEFT_OK;
}

/*
 * Prepares the output buffer, the per-stream prefixes and the field array.
 * `options` is a set of weft__dump_option bits.
 */
int weft__dump_writer_init(weft__dump_writer *w, const weft_trace *trace,
			   int fd, weft__dump_mode mode, unsigned options)
{
	int rc;

	memset(w, 0, sizeof *w);
	w->trace = trace;
	w->mode = mode;
	/* Events deeper than this are indented; without --tree, none. */
	w->plain_depth = (options & WEFT__DUMP_TREE) ? 0 : INT32_MAX;
	weft__clock_cache_init(&w->clock, CLOCK_WIDTH);
	weft__clock_cache_init(&w->json_clock, 0);
	rc = weft__outbuf_init(&w->out, fd, WEFT__OUTBUF_DEFAULT_SIZE);
	if (rc < 0)
		return rc;
	w->stream_count = weft_trace_stream_count(trace);
	w->streams = calloc(w->stream_count ? w->stream_count : 1, sizeof *w->streams);
	w->field_cap = INITIAL_FIELD_CAP;
	w->fields = calloc(w->field_cap, sizeof *w->fields);
	if (w->streams == NULL || w->fields == NULL) {
		weft__dump_writer_destroy(w);
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET,
				   "out of memory for the dump writer");
	}
	rc = render_streams(w);
	if (rc < 0)
		weft__dump_writer_destroy(w);
	return rc;
}

/* Releases everything the writer holds (the output is not flushed). */
void weft__dump_writer_destroy(weft__dump_writer *w)
{
	if (w->streams != NULL)
		for (size_t i = 0; i < w->stream_count; i++) {
			free(w->streams[i].prefix);
			/* file suffixes are shared by consecutive streams */
			if (i == 0 || w->streams[i].file != w->streams[i - 1].file)
				free(w->streams[i].file);
		}
	free(w->streams);
	free(w->fields);
	weft__outbuf_destroy(&w->out);
	w->streams = NULL;
	w->fields = NULL;
}

/* Flushes the last bytes and reports a write error seen at any time. */
int weft__dump_writer_finish(weft__dump_writer *w)
{
	return weft__outbuf_flush(&w->out);
}

/*
 * The fields of the event into w->fields; inline on the hot path, the
 * array grown out of line when the event has more fields than it holds.
 */
static inline int decode_fields(weft__dump_writer *w, const weft_event *event)
{
	int n = weft_event_fields(w->trace, event, w->fields, w->field_cap);

	if (WEFT__OUT_LIKELY(n <= 0 || (size_t)n <= w->field_cap))
		return n;
	return weft__event_fields_grow(w->trace, event, &w->fields, &w->field_cap, n);
}

/*
 * Decodes the fields of the event, growing the scratch array when the
 * event has more fields than it holds.
 */
int weft__dump_writer_fields(weft__dump_writer *w, const weft_event *event)
{
	return decode_fields(w, event);
}

/* ---- Common line parts ----------------------------------------------------- */

/* 1 when every byte of the code is printable ASCII. */
static int code_is_plain(const char *code, uint32_t len)
{
	for (uint32_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)code[i];
		if (c < 0x20 || c >= 0x7f)
			return 0;
	}
	return 1;
}

/* 1 when the three bytes of an ovni MCV are printable ASCII. */
static inline int code3_is_plain(const char *code)
{
	const unsigned char *c = (const unsigned char *)code;

	return (unsigned)(c[0] - 0x20) < 0x5f && (unsigned)(c[1] - 0x20) < 0x5f &&
	       (unsigned)(c[2] - 0x20) < 0x5f;
}

/*
 * 1 when the head of the line can be written in one reservation: a
 * printable 3-byte code, a stream prefix of reasonable length, a point
 * event (no end to show) and no tree indentation.
 */
static inline int head_is_simple(const weft__dump_writer *w, const weft_event *ev)
{
	return ev->code_len == 3 && code3_is_plain(ev->code) &&
	       w->streams[ev->stream].prefix_len <= SIMPLE_PREFIX_MAX &&
	       (ev->flags & WEFT_EVENT_INTERVAL) == 0 && ev->depth <= w->plain_depth;
}

/*
 * Copies a stream prefix in 16-byte pieces (no call to memcpy for a
 * length known only at run time): up to PREFIX_PAD - 1 bytes past its
 * end are written too, which the reservations leave room for.
 */
static inline char *put_prefix(char *p, const weft__dump_stream *ds)
{
	for (size_t i = 0; i < ds->prefix_len; i += 16)
		memcpy(p + i, ds->prefix + i, 16);
	return p + ds->prefix_len;
}

/*
 * Writes "<clock>  <MCV>  <path>  " at p, which has room for
 * HEAD_ROOM + PREFIX_PAD + prefix_len bytes. Returns the end.
 */
static inline char *write_simple_head(char *p, weft__clock_cache *clock,
				      const weft__dump_stream *ds, const weft_event *ev)
{
	p = weft__fmt_clock(clock, p, ev->time);
	p[0] = ' ';
	p[1] = ' ';
	memcpy(p + 2, ev->code, 3);
	return put_prefix(p + 5, ds);
}

/*
 * --tree: two spaces per call-tree level at p (none at depth 0 or without
 * a tree, depth -1), at most TREE_DEPTH_MAX levels. Returns the end.
 */
static inline char *put_tree_indent(const weft__dump_writer *w, char *p,
				    const weft_event *ev)
{
	if (ev->depth <= w->plain_depth)
		return p;
	size_t levels = ev->depth < TREE_DEPTH_MAX ? (size_t)ev->depth : TREE_DEPTH_MAX;
	memset(p, ' ', levels * TREE_INDENT_STEP);
	return p + levels * TREE_INDENT_STEP;
}

/*
 * "end=<end> dur=<end - time>  " of an interval event, a part of its own
 * after the stream (an attribute may be named "end"), without the two
 * spaces when nothing follows. A reader never delivers an end before the
 * start; a duration of 0 is shown if it did.
 */
static void put_interval(weft__outbuf *ob, const weft_event *ev, int more)
{
	char *p = weft__outbuf_reserve(ob, INTERVAL_ROOM);

	memcpy(p, "end=", 4);
	p = weft__fmt_u64(p + 4, ev->end);
	memcpy(p, " dur=", 5);
	p = weft__fmt_u64(p + 5, ev->end > ev->time ? ev->end - ev->time : 0);
	p[0] = ' ';
	p[1] = ' ';
	weft__outbuf_commit(ob, more ? p + 2 : p);
}

/*
 * "<clock>  <code>" then the stream prefix "  <path>  ", any code; the
 * code indented with --tree, and the interval part after the prefix. The
 * separator at the end is left out when nothing follows (`more` 0): the
 * text lines have no trailing spaces (ovnidump -x lines keep them).
 */
static void put_text_head(weft__dump_writer *w, const weft_event *ev, int more)
{
	weft__outbuf *ob = &w->out;
	const weft__dump_stream *ds = &w->streams[ev->stream];
	int interval = (ev->flags & WEFT_EVENT_INTERVAL) != 0;
	size_t cut = more || interval ? 0 : 2;

	if (WEFT__OUT_LIKELY(head_is_simple(w, ev))) {
		char *p = weft__outbuf_reserve(ob, HEAD_ROOM + PREFIX_PAD + ds->prefix_len);
		weft__outbuf_commit(ob, write_simple_head(p, &w->clock, ds, ev) - cut);
		return;
	}
	char *p = weft__outbuf_reserve(ob, HEAD_ROOM + TREE_INDENT_STEP * TREE_DEPTH_MAX +
				       SHORT_CODE_MAX);
	p = weft__fmt_clock(&w->clock, p, ev->time);
	*p++ = ' ';
	*p++ = ' ';
	p = put_tree_indent(w, p, ev);
	if (ev->code_len <= SHORT_CODE_MAX && code_is_plain(ev->code, ev->code_len)) {
		memcpy(p, ev->code, ev->code_len);
		weft__outbuf_commit(ob, p + ev->code_len);
	} else {
		weft__outbuf_commit(ob, p);
		weft__put_text_bare(ob, ev->code, ev->code_len);
	}
	weft__outbuf_put(ob, ds->prefix, ds->prefix_len - cut);
	if (interval)
		put_interval(ob, ev, more);
}

/* The stored bytes of the event: payload, then the jumbo data. */
static void put_payload_colon_hex(weft__outbuf *ob, const weft_event *ev)
{
	if (WEFT__OUT_LIKELY(ev->payload_size <= 16 && ev->data_size == 0)) {
		char *p = weft__outbuf_reserve(ob, 16 * 3 + 1);
		weft__outbuf_commit(ob, weft__fmt_hex_colon(p, ev->payload,
							    ev->payload_size));
		return;
	}
	weft__put_hex_colon(ob, ev->payload, ev->payload_size);
	if (ev->data_size > 0)
		weft__put_hex_colon(ob, ev->data, (size_t)ev->data_size);
}

/* Ends the current line. */
static void put_newline(weft__outbuf *ob)
{
	char *p = weft__outbuf_reserve(ob, 1);
	*p = '\n';
	weft__outbuf_commit(ob, p + 1);
}

/* ---- Field values ------------------------------------------------------------ */

/*
 * A floating-point value: shortest round-trip form (%.9g for float,
 * %.17g for double). Floats are rare in traces, so snprintf is fine here.
 */
static void put_float_text(weft__outbuf *ob, void *ctx, double v, int single)
{
	char tmp[40];

	snprintf(tmp, sizeof tmp, single ? "%.9g" : "%.17g", v);
	weft__outbuf_puts(ob, tmp);
}

/* The same in JSON, where NaN and infinities are null. */
static void put_float_json(weft__outbuf *ob, void *ctx, double v, int single)
{
	if (!isfinite(v))
		weft__outbuf_puts(ob, "null");
	else
		put_float_text(ob, ctx, v, single);
}

/* Strings of the text dump: quoted, escaped for humans. */
static void put_string_text(weft__outbuf *ob, void *ctx, const char *s, size_t n)
{
	weft__put_text_string(ob, s, n);
}

/* Strings of the JSON dump. */
static void put_string_json(weft__outbuf *ob, void *ctx, const char *s, size_t n)
{
	weft__put_json_string(ob, s, n);
}

static const weft__value_style TEXT_VALUES = {
	put_float_text, put_string_text, NULL, ",", "?", 0
};
static const weft__value_style JSON_VALUES = {
	put_float_json, put_string_json, NULL, ",", "null", 1
};

/* The value of a field in the text dump. */
void weft__put_field_text(weft__outbuf *ob, const weft_field *field)
{
	weft__put_value(ob, field, &TEXT_VALUES);
}

/* The value of a field in the JSON dump. */
void weft__put_field_json(weft__outbuf *ob, const weft_field *field)
{
	weft__put_value(ob, field, &JSON_VALUES);
}

/* ---- The three line shapes ---------------------------------------------------- */

/* 1 for the integer types, which the fast path of put_fields_text() writes. */
static inline int is_integer_type(weft_type type)
{
	return type >= WEFT_TYPE_U8 && type <= WEFT_TYPE_I64;
}

/*
 * " name=value" of an integer field with a short printable name, in one
 * reservation. Returns 0 when the field needs the general path.
 */
static int put_integer_field_fast(weft__outbuf *ob, const weft_field *f, int first)
{
	if (f->is_array || !is_integer_type(f->type) || f->name_len > SHORT_CODE_MAX ||
	    !code_is_plain(f->name, f->name_len))
		return 0;
	char *p = weft__outbuf_reserve(ob, SHORT_CODE_MAX + 24);
	if (!first)
		*p++ = ' ';
	memcpy(p, f->name, f->name_len);
	p += f->name_len;
	*p++ = '=';
	if (f->type >= WEFT_TYPE_I8)
		p = weft__fmt_i64(p, f->v.i);
	else
		p = weft__fmt_u64(p, f->v.u);
	weft__outbuf_commit(ob, p);
	return 1;
}

/*
 * 1 for a float64 field `virtual_time` holding DBL_MAX: ROSS's mark of
 * the samples taken at the end of the simulation, which the text dump
 * shows as `end` (--json keeps the number). The name is only compared
 * for that value, so other fields cost two comparisons.
 */
static inline int is_end_virtual_time(const weft_field *f)
{
	static const char name[] = "virtual_time";

	return f->type == WEFT_TYPE_F64 && !f->is_array && f->v.f == DBL_MAX &&
	       f->name_len == sizeof name - 1 && memcmp(f->name, name, sizeof name - 1) == 0;
}

/* name=value pairs separated by one space. */
static void put_fields_text(weft__outbuf *ob, const weft_field *fields, int n)
{
	for (int i = 0; i < n; i++) {
		if (put_integer_field_fast(ob, &fields[i], i == 0))
			continue;
		if (i > 0)
			weft__outbuf_put(ob, " ", 1);
		weft__put_text_bare(ob, fields[i].name, fields[i].name_len);
		weft__outbuf_put(ob, "=", 1);
		if (is_end_virtual_time(&fields[i]))
			weft__outbuf_put(ob, "end", 3);
		else
			weft__put_field_text(ob, &fields[i]);
	}
}

/*
 * 1 when each of the 8 bytes of w is printable ASCII (0x20..0x7e), and
 * for JSON neither '"' nor '\\': a subtraction sets the top bit of a byte
 * below 0x20 (or of a zero byte, for the XORed words), the addition that
 * of a byte above 0x7e; a borrow or carry only ever starts at such a byte.
 */
static inline int word_plain(uint64_t w, int json)
{
	const uint64_t ones = 0x0101010101010101ull;
	uint64_t bad = ((w - ones * 0x20) & ~w) | ((w + ones) | w);

	if (json) {
		uint64_t quote = w ^ (ones * '"'), backslash = w ^ (ones * '\\');
		bad |= ((quote - ones) & ~quote) | ((backslash - ones) & ~backslash);
	}
	return (bad & (ones * 0x80)) == 0;
}

/*
 * Copies a name or code of up to 16 bytes and checks that it needs no
 * escape (word_plain), with two overlapping loads instead of a loop and
 * without reading outside it. The copy is made even when the check fails.
 */
static inline int copy_plain16(char *dst, const char *src, uint32_t len, int json)
{
	uint64_t a, b;

	if (len >= 8) {
		memcpy(&a, src, 8);
		memcpy(&b, src + len - 8, 8);
		memcpy(dst, &a, 8);
		memcpy(dst + len - 8, &b, 8);
		return word_plain(a, json) && word_plain(b, json);
	}
	if (len >= 4) {
		uint32_t x, y;
		memcpy(&x, src, 4);
		memcpy(&y, src + len - 4, 4);
		memcpy(dst, &x, 4);
		memcpy(dst + len - 4, &y, 4);
		return word_plain(x | (uint64_t)y << 32, json);
	}
	if (len == 0)
		return 1;
	dst[0] = src[0];
	dst[len / 2] = src[len / 2];
	dst[len - 1] = src[len - 1];
	a = (unsigned char)src[0] | (uint64_t)(unsigned char)src[len / 2] << 8 |
	    (uint64_t)(unsigned char)src[len - 1] << 16 | 0x2020202020000000ull;
	return word_plain(a, json);
}

/* An integer field's value; values of up to four digits without a call. */
static inline char *put_integer(char *p, const weft_field *f)
{
	uint64_t magnitude = f->v.u;

	if (f->type >= WEFT_TYPE_I8 && f->v.i < 0) {
		*p++ = '-';
		magnitude = (uint64_t)0 - (uint64_t)f->v.i;
	}
	if (magnitude < 10) {
		*p = (char)('0' + magnitude);
		return p + 1;
	}
	if (magnitude < 100) {
		memcpy(p, weft__digit_pairs + 2 * magnitude, 2);
		return p + 2;
	}
	if (magnitude < 10000) {
		uint32_t high = (uint32_t)magnitude / 100, low = (uint32_t)magnitude % 100;
		if (high < 10)
			*p++ = (char)('0' + high);
		else
			p = (char *)memcpy(p, weft__digit_pairs + 2 * high, 2) + 2;
		memcpy(p, weft__digit_pairs + 2 * low, 2);
		return p + 2;
	}
	return weft__fmt_u64(p, magnitude);
}

/*
 * " name=value" (no space before the first field) of an integer field
 * whose name is printable and at most 16 bytes long. NULL when the field
 * needs the general path.
 */
static inline char *put_fast_field(char *p, const weft_field *f, int first)
{
	if (f->is_array || !is_integer_type(f->type) || f->name_len > FAST_NAME_MAX)
		return NULL;
	if (!first)
		*p++ = ' ';
	if (!copy_plain16(p, f->name, f->name_len, 0))
		return NULL;
	p += f->name_len;
	*p++ = '=';
	return put_integer(p, f);
}

/*
 * The whole text line of a common event in one reservation: a printable
 * 3-byte code, a short stream prefix and either up to FAST_FIELDS_MAX
 * integer fields (n > 0) or no fields and a short payload (n == 0).
 * Returns 0, having written nothing, when the line needs the general path.
 */
static int write_fields_line_fast(weft__dump_writer *w, const weft_event *ev, int n)
{
	const weft__dump_stream *ds = &w->streams[ev->stream];

	if (!head_is_simple(w, ev) || n < 0 || n > FAST_FIELDS_MAX ||
	    (n == 0 && (ev->payload_size > 16 || ev->data_size != 0)))
		return 0;
	char *p = weft__outbuf_reserve(&w->out, ds->prefix_len + FAST_LINE_ROOM);
	p = write_simple_head(p, &w->clock, ds, ev);
	if (n == 0 && ev->payload_size == 0)
		p -= 2; /* nothing after the stream: no trailing separator */
	else if (n == 0)
		p = weft__fmt_hex_colon(p, ev->payload, ev->payload_size);
	for (int i = 0; i < n && p != NULL; i++)
		p = put_fast_field(p, &w->fields[i], i == 0);
	if (p == NULL)
		return 0;
	*p++ = '\n';
	weft__outbuf_commit(&w->out, p);
	return 1;
}

/*
 * Text line with decoded fields; events without a known layout, or whose
 * payload does not match it, show their bytes in hex instead.
 */
static void write_fields_line(weft__dump_writer *w, const weft_event *ev)
{
	int n = decode_fields(w, ev);

	if (WEFT__OUT_LIKELY(write_fields_line_fast(w, ev, n)))
		return;
	put_text_head(w, ev, n != 0 || ev->payload_size != 0 || ev->data_size != 0);
	if (n > 0)
		put_fields_text(&w->out, w->fields, n);
	else
		put_payload_colon_hex(&w->out, ev);
	if (n < 0)
		w->bad_payloads++;
	put_newline(&w->out);
}

/*
 * ovnidump -x line: the raw bytes only. The common case (short code and
 * path, no jumbo data) is written with one reservation.
 */
static void write_hex_line(weft__dump_writer *w, const weft_event *ev)
{
	if (WEFT__OUT_LIKELY(head_is_simple(w, ev) && ev->data_size == 0 &&
			     ev->payload_size <= 16)) {
		const weft__dump_stream *ds = &w->streams[ev->stream];
		char *p = weft__outbuf_reserve(&w->out, HEAD_ROOM + PREFIX_PAD + ds->prefix_len +
					       16 * 3 + 2);
		p = write_simple_head(p, &w->clock, ds, ev);
		p = weft__fmt_hex_colon(p, ev->payload, ev->payload_size);
		*p++ = '\n';
		weft__outbuf_commit(&w->out, p);
		return;
	}
	put_text_head(w, ev, 1); /* as ovnidump -x: the separator even before no bytes */
	put_payload_colon_hex(&w->out, ev);
	put_newline(&w->out);
}

/* ---- JSON lines ------------------------------------------------------------ */

/* Appends a short constant string. */
#define PUT_LITERAL(ob, lit) put_small((ob), (lit), sizeof(lit) - 1)

/* Appends n bytes (n <= WEFT__OUTBUF_MAX_RESERVE) with one reservation. */
static inline void put_small(weft__outbuf *ob, const char *s, size_t n)
{
	char *p = weft__outbuf_reserve(ob, n);
	memcpy(p, s, n);
	weft__outbuf_commit(ob, p + n);
}

/* 1 when s can stand in a JSON string as is: printable ASCII, no " or \. */
static inline int json_plain(const char *s, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c < 0x20 || c >= 0x7f || c == '"' || c == '\\')
			return 0;
	}
	return 1;
}

/* A JSON string of a short name or code, copied when no escape is needed. */
static void put_json_name(weft__outbuf *ob, const char *s, uint32_t n)
{
	if (WEFT__OUT_LIKELY(n <= SHORT_CODE_MAX && json_plain(s, n))) {
		char *p = weft__outbuf_reserve(ob, SHORT_CODE_MAX + 2);
		p[0] = '"';
		memcpy(p + 1, s, n);
		p[n + 1] = '"';
		weft__outbuf_commit(ob, p + n + 2);
		return;
	}
	weft__put_json_string(ob, s, n);
}

/* One "name":value member; integers are written in one reservation. */
static void put_field_member_json(weft__outbuf *ob, const weft_field *f)
{
	put_json_name(ob, f->name, f->name_len);
	if (!f->is_array && is_integer_type(f->type)) {
		char *p = weft__outbuf_reserve(ob, 24);
		*p++ = ':';
		p = f->type >= WEFT_TYPE_I8 ? weft__fmt_i64(p, f->v.i) : weft__fmt_u64(p, f->v.u);
		weft__outbuf_commit(ob, p);
		return;
	}
	PUT_LITERAL(ob, ":");
	weft__put_field_json(ob, f);
}

/*
 * "fields":{...} of the JSON line, from the n fields decoded (n < 0: the
 * payload does not match its layout, which "decode_error" explains).
 */
static void put_fields_json(weft__dump_writer *w, int n)
{
	weft__outbuf *ob = &w->out;

	PUT_LITERAL(ob, ",\"fields\":{");
	for (int i = 0; i < n; i++) {
		if (i > 0)
			PUT_LITERAL(ob, ",");
		put_field_member_json(ob, &w->fields[i]);
	}
	PUT_LITERAL(ob, "}");
	if (n < 0) {
		const char *msg = weft_last_error();
		w->bad_payloads++;
		PUT_LITERAL(ob, ",\"decode_error\":");
		weft__put_json_string(ob, msg, strlen(msg));
	}
}

/* {"time":T[,"end":E],"stream":"<path>","code":"<code>" */
static void put_json_head(weft__dump_writer *w, const weft_event *ev)
{
	weft__outbuf *ob = &w->out;
	const weft__dump_stream *ds = &w->streams[ev->stream];
	char *p = weft__outbuf_reserve(ob, 64);

	memcpy(p, "{\"time\":", 8);
	p = weft__fmt_clock(&w->json_clock, p + 8, ev->time);
	if (ev->flags & WEFT_EVENT_INTERVAL) {
		memcpy(p, ",\"end\":", 7);
		p = weft__fmt_u64(p + 7, ev->end);
	}
	weft__outbuf_commit(ob, p);
	weft__outbuf_put(ob, ds->prefix, ds->prefix_len);
	PUT_LITERAL(ob, ",\"code\":");
	put_json_name(ob, ev->code, ev->code_len);
}

/* Appends ,"key":<signed integer>. */
static void put_json_int_member(weft__outbuf *ob, const char *key, size_t key_len,
				int64_t v)
{
	char *p = weft__outbuf_reserve(ob, key_len + 24);
	memcpy(p, key, key_len);
	weft__outbuf_commit(ob, weft__fmt_i64(p + key_len, v));
}

/* ,"payload":"<hex>","offset":N[,"file":F][,"depth":D,"parent":P]}\n */
static void put_json_tail(weft__outbuf *ob, const weft__dump_stream *ds,
			  const weft_event *ev)
{
	static const char payload_key[] = ",\"payload\":\"";
	static const char offset_key[] = "\",\"offset\":";

	if (WEFT__OUT_LIKELY(ev->payload_size <= 16 && ev->data_size == 0)) {
		char *p = weft__outbuf_reserve(ob, 96);
		memcpy(p, payload_key, sizeof payload_key - 1);
		p = weft__fmt_hex_plain(p + sizeof payload_key - 1, ev->payload,
					ev->payload_size);
		memcpy(p, offset_key, sizeof offset_key - 1);
		weft__outbuf_commit(ob, weft__fmt_u64(p + sizeof offset_key - 1, ev->offset));
	} else {
		PUT_LITERAL(ob, ",\"payload\":\"");
		weft__put_hex_plain(ob, ev->payload, ev->payload_size);
		weft__put_hex_plain(ob, ev->data, (size_t)ev->data_size);
		put_json_int_member(ob, offset_key, sizeof offset_key - 1, (int64_t)ev->offset);
	}
	if (ds->file_len > 0)
		weft__outbuf_put(ob, ds->file, ds->file_len);
	if (ev->depth >= 0) {
		put_json_int_member(ob, ",\"depth\":", 9, ev->depth);
		put_json_int_member(ob, ",\"parent\":", 10, ev->parent);
	}
	PUT_LITERAL(ob, "}\n");
}

/* ---- JSON lines in one reservation -------------------------------------- */

/* Copies a string literal at p and returns its end. */
#define COPY_LITERAL(p, lit) ((char *)memcpy((p), (lit), sizeof(lit) - 1) + sizeof(lit) - 1)

/* {"time":T[,"end":E]  then  ,"stream":"<path>"  then  ,"code":"<code>" */
#define JSON_HEAD_ROOM (8 + 24 + 7 + 20 + PREFIX_PAD + 9 + FAST_NAME_MAX + 2)
/* ,"name":value */
#define JSON_FIELD_ROOM (1 + FAST_NAME_MAX + 3 + 21)
/* "payload":"<32 hex digits>","offset":N,"depth":D,"parent":P}\n */
#define JSON_TAIL_ROOM (12 + 32 + 11 + 20 + 9 + 21 + 10 + 21 + 2)
/* Room for a whole line, after the stream prefix. */
#define JSON_LINE_ROOM (JSON_HEAD_ROOM + 11 + FAST_FIELDS_MAX * JSON_FIELD_ROOM + 1 + \
			JSON_TAIL_ROOM)

/* The head of a JSON line at p; NULL when the code needs escapes. */
static inline char *json_head_fast(char *p, weft__dump_writer *w,
				   const weft__dump_stream *ds, const weft_event *ev)
{
	p = weft__fmt_clock(&w->json_clock, COPY_LITERAL(p, "{\"time\":"), ev->time);
	if (ev->flags & WEFT_EVENT_INTERVAL)
		p = weft__fmt_u64(COPY_LITERAL(p, ",\"end\":"), ev->end);
	p = COPY_LITERAL(put_prefix(p, ds), ",\"code\":\"");
	if (!copy_plain16(p, ev->code, ev->code_len, 1))
		return NULL;
	p += ev->code_len;
	*p++ = '"';
	return p;
}

/* ,"fields":{...} at p; NULL when a field is not a short plain integer. */
static inline char *json_fields_fast(char *p, const weft_field *fields, int n)
{
	p = COPY_LITERAL(p, ",\"fields\":{");
	for (int i = 0; i < n; i++) {
		const weft_field *f = &fields[i];
		if (f->is_array || !is_integer_type(f->type) || f->name_len > FAST_NAME_MAX)
			return NULL;
		if (i > 0)
			*p++ = ',';
		*p++ = '"';
		if (!copy_plain16(p, f->name, f->name_len, 1))
			return NULL;
		p = COPY_LITERAL(p + f->name_len, "\":");
		p = put_integer(p, f);
	}
	*p++ = '}';
	return p;
}

/* The tail of a JSON line at p, for a payload of up to 16 bytes. */
static inline char *json_tail_fast(char *p, const weft_event *ev)
{
	p = weft__fmt_hex_plain(COPY_LITERAL(p, ",\"payload\":\""), ev->payload,
				ev->payload_size);
	p = weft__fmt_u64(COPY_LITERAL(p, "\",\"offset\":"), ev->offset);
	if (ev->depth >= 0) {
		p = weft__fmt_i64(COPY_LITERAL(p, ",\"depth\":"), ev->depth);
		p = weft__fmt_i64(COPY_LITERAL(p, ",\"parent\":"), ev->parent);
	}
	return COPY_LITERAL(p, "}\n");
}

/*
 * The whole JSON line of a common event in one reservation: a plain code
 * of up to 16 bytes, a short stream prefix, up to FAST_FIELDS_MAX integer
 * fields with short plain names, a payload of up to 16 bytes, no data and
 * no "file" key. Returns 0, having written nothing, when the line needs
 * the general path.
 */
static int write_json_line_fast(weft__dump_writer *w, const weft_event *ev, int n)
{
	const weft__dump_stream *ds = &w->streams[ev->stream];

	if (n < 0 || n > FAST_FIELDS_MAX || ev->code_len > FAST_NAME_MAX ||
	    ev->payload_size > 16 || ev->data_size != 0 || ds->prefix_len > SIMPLE_PREFIX_MAX ||
	    ds->file_len > 0)
		return 0;
	char *p = weft__outbuf_reserve(&w->out, ds->prefix_len + JSON_LINE_ROOM);
	p = json_head_fast(p, w, ds, ev);
	if (p != NULL)
		p = json_fields_fast(p, w->fields, n);
	if (p == NULL)
		return 0;
	weft__outbuf_commit(&w->out, json_tail_fast(p, ev));
	return 1;
}

/* One JSON object per event; key order is fixed (docs/dump-json.md). */
static void write_json_line(weft__dump_writer *w, const weft_event *ev)
{
	int n = decode_fields(w, ev);

	if (WEFT__OUT_LIKELY(write_json_line_fast(w, ev, n)))
		return;
	put_json_head(w, ev);
	put_fields_json(w, n);
	put_json_tail(&w->out, &w->streams[ev->stream], ev);
}

/* Writes one event in the writer's mode. */
void weft__dump_writer_event(weft__dump_writer *w, const weft_event *event)
{
	switch (w->mode) {
	case WEFT__DUMP_HEX:
		write_hex_line(w, event);
		break;
	case WEFT__DUMP_JSON:
		write_json_line(w, event);
		break;
	default:
		write_fields_line(w, event);
		break;
	}
	w->events++;
}
