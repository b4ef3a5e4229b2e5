/* SPDX-License-Identifier: MIT */
/*
 * outputs/csv_writer.c - CSV cells and rows (see csv_writer.h). Float
 * cells use the shortest round-trip text of outputs/float_format.c.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "outputs/csv_writer.h"
#include "outputs/float_format.h"
#include "outputs/outputs.h"

/*
 * The shortest round-trip text in JavaScript's notation. That text is at
 * most 24 bytes ("-2.2250738585072014e-308"), so with its NUL it fits in
 * WEFT__CSV_FLOAT_MAX.
 */
char *weft__csv_float(char *p, double v, int single)
{
	return p + weft__fmt_float_json(p, v, single);
}

/* ---- Rows -------------------------------------------------------------------------- */

/* An empty row: the buffer comes with the first write. */
void weft__csv_row_init(weft__csv_row *row)
{
	memset(row, 0, sizeof *row);
}

/* Frees the buffer; the row is empty again. */
void weft__csv_row_free(weft__csv_row *row)
{
	free(row->buf);
	memset(row, 0, sizeof *row);
}

/* The scratch area of failed allocations (see weft__csv_row_grow). */
#define WEFT__CSV_SCRATCH 4096

/*
 * Doubles the buffer until n more bytes fit. On failure the row is
 * marked and a scratch area is handed out instead (its bytes are lost):
 * callers reserving more than WEFT__CSV_SCRATCH bytes check `oom` first.
 */
char *weft__csv_row_grow(weft__csv_row *row, size_t n)
{
	static _Thread_local char scratch[WEFT__CSV_SCRATCH];
	size_t cap = row->cap ? row->cap : 256;
	while (cap - row->len < n && cap < ((size_t)1 << 40))
		cap *= 2;
	char *bigger = !row->oom && cap - row->len >= n ? realloc(row->buf, cap) : NULL;
	if (bigger == NULL) {
		row->oom = 1;
		return scratch;
	}
	row->buf = bigger;
	row->cap = cap;
	return row->buf + row->len;
}

/* 1 when a text cell must be quoted (RFC 4180: comma, quote, CR, LF). */
static int needs_quotes(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] == ',' || s[i] == '"' || s[i] == '\r' || s[i] == '\n')
			return 1;
	return 0;
}

/* A text cell, quoted (quotes doubled) only when it must be. */
void weft__csv_row_put_text(weft__csv_row *row, const char *s, size_t n)
{
	if (!needs_quotes(s, n)) {
		weft__csv_row_put(row, s, n);
		return;
	}
	char *p = weft__csv_row_reserve(row, 2 * n + 2);
	if (row->oom)
		return;
	char *start = p;
	*p++ = '"';
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '"')
			*p++ = '"';
		*p++ = s[i];
	}
	*p++ = '"';
	row->len += (size_t)(p - start);
}

/* Bytes as two lowercase hex digits each (model data). */
void weft__csv_row_put_hex(weft__csv_row *row, const uint8_t *bytes, size_t n)
{
	char *p = weft__csv_row_reserve(row, 2 * n);
	if (row->oom)
		return;
	row->len += (size_t)(weft__fmt_hex_plain(p, bytes, n) - p);
}
