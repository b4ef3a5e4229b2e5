/* SPDX-License-Identifier: MIT */
/*
 * outputs/csv_writer.h - the pieces of CSV tables (`weft table`): a row
 * buffer that grows as needed, cells quoted per RFC 4180 when they must
 * be, integers, bytes as hex, and floating-point values as the shortest
 * text that reads back to the same value (float or double), computed fast
 * enough for tables of millions of rows.
 *
 * Internal to libweft (weft__ prefix). The functions never fail: when
 * memory runs out the row remembers it (`oom`) and drops what follows;
 * the caller checks once per row.
 */
#ifndef WEFT_OUTPUTS_CSV_WRITER_H
#define WEFT_OUTPUTS_CSV_WRITER_H

#include <stddef.h>
#include <stdint.h>

/* Room that weft__csv_float() may use, NUL not included. */
#define WEFT__CSV_FLOAT_MAX 32

/*
 * Writes the finite value `v` at p as the shortest decimal that reads
 * back to the same double (with `single`: the same float, v holding a
 * float), the closest such decimal when several are as short; positional
 * for decimal exponents -7 < e < 21 ("17", "0.001", "1148.493211576"),
 * else with an exponent ("1e-7", "1.7976931348623157e+308"), as
 * JavaScript prints numbers. -0.0 gives "-0". Returns the end (at most
 * WEFT__CSV_FLOAT_MAX bytes written). NaN and infinities are the caller's
 * business (weft table leaves those cells empty).
 */
char *weft__csv_float(char *p, double v, int single);

/* One row (or any text) being built. */
typedef struct weft__csv_row {
	char *buf;
	size_t len;
	size_t cap;
	int oom;      /* an allocation failed: the row is incomplete */
} weft__csv_row;

void weft__csv_row_init(weft__csv_row *row);
void weft__csv_row_free(weft__csv_row *row);

/* Slow path of weft__csv_row_reserve(): grows the buffer. */
char *weft__csv_row_grow(weft__csv_row *row, size_t n);

/*
 * A place to write up to n bytes at the end of the row; commit the end
 * with weft__csv_row_commit(). Never NULL (after a failed allocation it
 * is a scratch area whose bytes are dropped).
 */
static inline char *weft__csv_row_reserve(weft__csv_row *row, size_t n)
{
	if (row->cap - row->len >= n)
		return row->buf + row->len;
	return weft__csv_row_grow(row, n);
}

/*
 * Sets the end of the row after a reserve (an end outside the row's
 * buffer, in the scratch area of a failed allocation, is ignored).
 */
static inline void weft__csv_row_commit(weft__csv_row *row, char *end)
{
	if (!row->oom && end >= row->buf && end <= row->buf + row->cap)
		row->len = (size_t)(end - row->buf);
}

/* Appends bytes as they are (no quoting). */
static inline void weft__csv_row_put(weft__csv_row *row, const void *bytes, size_t n)
{
	char *p = weft__csv_row_reserve(row, n);
	if (row->oom)
		return;
	__builtin_memcpy(p, bytes, n);
	row->len += n;
}

/*
 * Appends a text cell: as is when it holds no comma, quote, CR or LF,
 * else in double quotes with every quote doubled (RFC 4180).
 */
void weft__csv_row_put_text(weft__csv_row *row, const char *s, size_t n);

/* Appends bytes as lowercase hex, two digits per byte. */
void weft__csv_row_put_hex(weft__csv_row *row, const uint8_t *bytes, size_t n);

#endif /* WEFT_OUTPUTS_CSV_WRITER_H */
