/*
 * outputs/csv_writer.c - CSV cells and rows (see csv_writer.h), and the
 * shortest round-trip text of floating-point values at table speed.
 *
 * Shortest round-trip digits, exactly, with 128-bit integers: a finite
 * value is v = m * 2^e. The decimals that read back to v are those inside
 * its rounding interval [v - lower gap / 2, v + upper gap / 2] (bounds
 * included when m is even: a reader rounding half to even then picks v).
 * Scaled by 4 the bounds are integers times 2^(e-2):
 *     NL = 4m - 2 (4m - 1 when m is a power of two: the gap below is
 *     half), N = 4m, NH = 4m + 2.
 * For j decimal places, the decimals d * 10^-j in the interval are the
 * integers d in [NL * 10^j / 2^s, NH * 10^j / 2^s] (s = 2 - e), which one
 * multiplication and one shift per bound give when everything fits in
 * 128 bits. The fewest decimal places with such a d is the shortest text
 * (a d ending in 0 would mean one place fewer works), found by binary
 * search since a d at j places gives 10d at j + 1; among those d the one
 * closest to N * 10^j / 2^s is taken (ties to even). That covers doubles
 * from about 1e-4 up to 2^54 and floats from about 1e-21 up to 2^25:
 * every time, counter and efficiency of a ROSS sample. Other values (and
 * subnormals) go through outputs/float_format.c, which is exact too but
 * costs a few snprintf/strtod calls.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "outputs/csv_writer.h"
#include "outputs/float_format.h"
#include "outputs/outputs.h"

__extension__ typedef unsigned __int128 u128;

/* ---- Shortest digits ------------------------------------------------------ */

/* 10^j for j <= 19 (u64), the rest as products. */
static const uint64_t pow10_u64[20] = {
	1ull, 10ull, 100ull, 1000ull, 10000ull, 100000ull, 1000000ull, 10000000ull,
	100000000ull, 1000000000ull, 10000000000ull, 100000000000ull,
	1000000000000ull, 10000000000000ull, 100000000000000ull,
	1000000000000000ull, 10000000000000000ull, 100000000000000000ull,
	1000000000000000000ull, 10000000000000000000ull
};

/* 10^j as a 128-bit integer, j <= 38. */
static inline u128 pow10_u128(int j)
{
	if (j < 20)
		return pow10_u64[j];
	return (u128)pow10_u64[19] * pow10_u64[j - 19];
}

/* The rounding interval of a value, scaled to integers times 2^-shift. */
typedef struct interval {
	uint64_t nl, n, nh; /* lower bound, value, upper bound (x 2^-shift) */
	int shift;          /* 1..127 */
	int inclusive;      /* the bounds read back to the value */
	int max_places;     /* most decimal places that fit in 128 bits */
} interval;

/*
 * Splits a positive finite value into its interval. Returns 0 when the
 * value is outside the range this fast path handles.
 */
static int make_interval(double v, int single, interval *out)
{
	uint64_t m;
	int e, pow2;
	if (single) {
		float f = (float)v;
		uint32_t bits;
		memcpy(&bits, &f, sizeof bits);
		uint32_t exp = (bits >> 23) & 0xff, frac = bits & 0x7fffff;
		if (exp == 0)
			return 0; /* subnormal */
		m = frac | (1u << 23);
		e = (int)exp - 150;
		pow2 = frac == 0 && exp > 1;
		out->max_places = 30; /* 2^26 * 10^30 < 2^128 */
	} else {
		uint64_t bits;
		memcpy(&bits, &v, sizeof bits);
		uint64_t exp = (bits >> 52) & 0x7ff, frac = bits & ((1ull << 52) - 1);
		if (exp == 0)
			return 0;
		m = frac | (1ull << 52);
		e = (int)exp - 1075;
		pow2 = frac == 0 && exp > 1;
		out->max_places = 21; /* 2^55 * 10^21 < 2^128 */
	}
	out->shift = 2 - e;
	if (out->shift < 1 || out->shift > 127)
		return 0;
	out->n = 4 * m;
	out->nh = 4 * m + 2;
	out->nl = 4 * m - (pow2 ? 1 : 2);
	out->inclusive = (m & 1) == 0;
	return 1;
}

/* The integers [*lo, *hi] inside the interval at j decimal places. */
static inline void bounds_at(const interval *iv, int j, u128 *lo, u128 *hi)
{
	u128 p10 = pow10_u128(j);
	u128 mask = ((u128)1 << iv->shift) - 1;
	u128 low = (u128)iv->nl * p10, high = (u128)iv->nh * p10;
	*lo = low >> iv->shift;
	if ((low & mask) != 0 || !iv->inclusive)
		*lo += 1; /* ceil, or strictly above an excluded bound */
	*hi = high >> iv->shift;
	if ((high & mask) == 0 && !iv->inclusive && *hi > 0)
		*hi -= 1; /* strictly below an excluded bound */
}

/* 1 when some decimal with j places reads back to the value. */
static inline int fits_at(const interval *iv, int j)
{
	u128 lo, hi;
	bounds_at(iv, j, &lo, &hi);
	return lo <= hi;
}

/*
 * The shortest decimal d * 10^-places of the interval, the closest to
 * the value; 0 when it needs more places than fit.
 */
static int shortest_decimal(const interval *iv, uint64_t *d, int *places)
{
	int lo_j = 0, hi_j = iv->max_places;
	if (!fits_at(iv, hi_j))
		return 0;
	while (lo_j < hi_j) {
		int mid = (lo_j + hi_j) / 2;
		if (fits_at(iv, mid))
			hi_j = mid;
		else
			lo_j = mid + 1;
	}
	u128 lo, hi;
	bounds_at(iv, lo_j, &lo, &hi);
	u128 r = (u128)iv->n * pow10_u128(lo_j);
	u128 best = r >> iv->shift;
	u128 rest = r & (((u128)1 << iv->shift) - 1), half = (u128)1 << (iv->shift - 1);
	if (rest > half || (rest == half && (best & 1)))
		best++;
	best = best < lo ? lo : best > hi ? hi : best;
	*d = (uint64_t)best; /* at most 17 digits at the fewest places */
	*places = lo_j;
	return 1;
}

/* ---- Notation -------------------------------------------------------------------- */

/*
 * Writes digits[0..count) times 10^exp10 (exp10 of the first digit):
 * positional for -7 < exp10 < 21, else d.ddde+X.
 */
static char *put_notation(char *p, const char *digits, int count, int exp10)
{
	if (exp10 >= 21 || exp10 <= -7) {
		*p++ = digits[0];
		if (count > 1) {
			*p++ = '.';
			memcpy(p, digits + 1, (size_t)count - 1);
			p += count - 1;
		}
		*p++ = 'e';
		*p++ = exp10 < 0 ? '-' : '+';
		return weft__fmt_u64(p, (uint64_t)(exp10 < 0 ? -exp10 : exp10));
	}
	if (exp10 < 0) {
		*p++ = '0';
		*p++ = '.';
		memset(p, '0', (size_t)(-exp10 - 1));
		p += -exp10 - 1;
		memcpy(p, digits, (size_t)count);
		return p + count;
	}
	int whole = exp10 + 1;
	if (count <= whole) {
		memcpy(p, digits, (size_t)count);
		memset(p + count, '0', (size_t)(whole - count));
		return p + whole;
	}
	memcpy(p, digits, (size_t)whole);
	p += whole;
	*p++ = '.';
	memcpy(p, digits + whole, (size_t)(count - whole));
	return p + (count - whole);
}

/* Values outside the fast range: float_format.c's exact (slow) digits. */
static char *put_slow(char *p, double v, int single)
{
	char buf[WEFT__FLOAT_TEXT_MAX];
	size_t n = weft__fmt_float_json(buf, v, single);
	if (n > WEFT__CSV_FLOAT_MAX)
		n = WEFT__CSV_FLOAT_MAX; /* cannot happen: JSON texts are short */
	memcpy(p, buf, n);
	return p + n;
}

/* The shortest round-trip text of a finite value (see the header). */
char *weft__csv_float(char *p, double v, int single)
{
	interval iv;
	uint64_t d;
	int places;
	if (v == 0) {
		if (signbit(v))
			*p++ = '-';
		*p++ = '0';
		return p;
	}
	if (v < 0) {
		*p++ = '-';
		v = -v;
	}
	if (!make_interval(v, single, &iv) || !shortest_decimal(&iv, &d, &places))
		return put_slow(p, v, single);
	char digits[24];
	int count = (int)(weft__fmt_u64(digits, d) - digits);
	int exp10 = count - 1 - places;
	while (count > 1 && digits[count - 1] == '0')
		count--;
	return put_notation(p, digits, count, exp10);
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
