/* SPDX-License-Identifier: MIT */
/*
 * outputs/escape.c - strings written safely: as JSON string literals
 * (RFC 8259: quote, backslash and control characters escaped; invalid
 * UTF-8 replaced by U+FFFD so that every line stays valid JSON) and as
 * quoted text for humans (control and invalid bytes shown as \xNN).
 */
#include <string.h>

#include "core/internal.h"
#include "outputs/outputs.h"

enum escape_style {
	ESCAPE_JSON,       /* JSON string contents */
	ESCAPE_TEXT,       /* C-like quoted text contents */
	ESCAPE_TEXT_BARE   /* text without quotes: only unprintable bytes */
};

static const char hex_digits[] = "0123456789abcdef";

/* 1 when the ASCII byte c can be copied as is in the given style. */
static int is_plain_ascii(unsigned char c, enum escape_style style)
{
	if (c < 0x20 || c == 0x7f)
		return 0;
	if (style != ESCAPE_TEXT_BARE && (c == '"' || c == '\\'))
		return 0;
	return 1;
}

/*
 * The escape of one ASCII byte that is not plain: the short forms \n \t
 * \r \" \\ where both notations have them, else \u00XX (JSON) or \xNN.
 */
static char *escape_ascii(char *p, unsigned char c, enum escape_style style)
{
	const char *shorts = NULL;

	switch (c) {
	case '"': shorts = "\\\""; break;
	case '\\': shorts = "\\\\"; break;
	case '\n': shorts = "\\n"; break;
	case '\t': shorts = "\\t"; break;
	case '\r': shorts = "\\r"; break;
	default: break;
	}
	if (shorts != NULL) {
		p[0] = shorts[0];
		p[1] = shorts[1];
		return p + 2;
	}
	if (style == ESCAPE_JSON) {
		memcpy(p, "\\u00", 4);
		p += 4;
	} else {
		memcpy(p, "\\x", 2);
		p += 2;
	}
	p[0] = hex_digits[c >> 4];
	p[1] = hex_digits[c & 15];
	return p + 2;
}

/* A byte that does not start valid UTF-8: U+FFFD in JSON, \xNN in text. */
static char *escape_invalid(char *p, unsigned char c, enum escape_style style)
{
	if (style == ESCAPE_JSON) {
		memcpy(p, "\\ufffd", 6);
		return p + 6;
	}
	p[0] = '\\';
	p[1] = 'x';
	p[2] = hex_digits[c >> 4];
	p[3] = hex_digits[c & 15];
	return p + 4;
}

/*
 * Copies runs of bytes that need no escape in one go and escapes the
 * others one at a time; valid multi-byte UTF-8 is copied as is.
 */
static void put_escaped(weft__outbuf *ob, const char *str, size_t len,
			enum escape_style style)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t i = 0;

	while (i < len) {
		size_t run = i;
		while (run < len && s[run] < 0x80 && is_plain_ascii(s[run], style))
			run++;
		if (run > i) {
			weft__outbuf_put(ob, s + i, run - i);
			i = run;
			continue;
		}
		if (s[i] >= 0x80) {
			size_t seq = weft__utf8_sequence_length(s + i, len - i);
			if (seq > 0) {
				weft__outbuf_put(ob, s + i, seq);
				i += seq;
				continue;
			}
			char *p = weft__outbuf_reserve(ob, 8);
			weft__outbuf_commit(ob, escape_invalid(p, s[i], style));
		} else {
			char *p = weft__outbuf_reserve(ob, 8);
			weft__outbuf_commit(ob, escape_ascii(p, s[i], style));
		}
		i++;
	}
}

/* A JSON string literal, quotes included. */
void weft__put_json_string(weft__outbuf *ob, const char *s, size_t len)
{
	weft__outbuf_put(ob, "\"", 1);
	put_escaped(ob, s, len, ESCAPE_JSON);
	weft__outbuf_put(ob, "\"", 1);
}

/* A quoted text literal for the human-readable dump. */
void weft__put_text_string(weft__outbuf *ob, const char *s, size_t len)
{
	weft__outbuf_put(ob, "\"", 1);
	put_escaped(ob, s, len, ESCAPE_TEXT);
	weft__outbuf_put(ob, "\"", 1);
}

/* Unquoted text (event codes): only what would break a line is escaped. */
void weft__put_text_bare(weft__outbuf *ob, const char *s, size_t len)
{
	put_escaped(ob, s, len, ESCAPE_TEXT_BARE);
}
