/* SPDX-License-Identifier: MIT */
/*
 * outputs/chrome/chrome_json.c - the JSON text of values, shared by both
 * modes: strings (escaped only where needed, Heph's escaping in compat
 * mode), numbers, and the typed fields of an event as "args".
 */
#include <math.h>
#include <string.h>

#include "outputs/chrome/chrome_internal.h"

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
void weft__chrome_put_string(weft__chrome_writer *w, const char *s, size_t n)
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
 * A float: the shortest text that reads back (compat: positional, as Rust
 * prints f64; default: a JSON number, with an exponent when very large or
 * small). NaN and infinities are not JSON numbers: they become strings.
 */
void weft__chrome_put_float(weft__chrome_writer *w, double v, int single)
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

/* Floats of field values (weft__put_value): the writer's notation. */
static void put_float_value(weft__outbuf *ob, void *ctx, double v, int single)
{
	weft__chrome_put_float(ctx, v, single);
}

/* Strings of field values: the writer's escaping. */
static void put_string_value(weft__outbuf *ob, void *ctx, const char *s, size_t n)
{
	weft__chrome_put_string(ctx, s, n);
}

/* "name": value (compat) or "name":value. */
void weft__chrome_put_member(weft__chrome_writer *w, const weft_field *f)
{
	weft__chrome_put_string(w, f->name, f->name_len);
	if (w->compat)
		PUT_LITERAL(&w->out, ": ");
	else
		PUT_LITERAL(&w->out, ":");
	weft__value_style values = {
		put_float_value, put_string_value, w, w->compat ? ", " : ",", "null", 1
	};
	weft__put_value(&w->out, f, &values);
}

/*
 * Decodes the fields of the event into w->fields, growing the array when
 * the event has more. Returns what weft_event_fields() returns.
 */
static int decode_fields(weft__chrome_writer *w, const weft_event *ev)
{
	int n = weft_event_fields(w->trace, ev, w->fields, w->field_cap);

	if (n > 0 && (size_t)n > w->field_cap)
		n = weft__event_fields_grow(w->trace, ev, &w->fields, &w->field_cap, n);
	return n;
}

/*
 * Compat mode: ,"args": {...} of the event; nothing when it has no fields
 * (as Heph).
 */
void weft__chrome_put_args(weft__chrome_writer *w, const weft_event *ev)
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
		weft__chrome_put_member(w, &w->fields[i]);
	}
	PUT_LITERAL(&w->out, "}");
}
