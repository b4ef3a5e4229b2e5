/* SPDX-License-Identifier: MIT */
/*
 * outputs/float_format.c - shortest round-trip decimal text of floating-
 * point values (see float_format.h).
 *
 * The digits come from the C library, whose printf rounds correctly and
 * whose strtod/strtof read back correctly: for p significant digits,
 * "%.*e" gives the p-digit decimal closest to the value; when it does not
 * read back to the same value, one of its two neighbours (one unit more
 * or less in the last digit) may, since the set of decimals that read
 * back is an interval around the value. The first p with a decimal that
 * reads back gives the shortest, and the closest is tried first.
 *
 * Normal doubles start at p = DBL_DIG (15): a decimal of up to 15 digits
 * survives the trip to double and back, so if one of them reads back it
 * is what "%.15e" prints, padded with zeros. Subnormals have fewer
 * significant bits (5e-324 needs one digit) and start at p = 1; floats
 * start at FLT_DIG (6) likewise. At most 17 (floats: 9) digits are ever
 * needed. That path costs a few snprintf/strtod calls (~400 ns), so the
 * common values take a fast exact path first:
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
 * subnormals) take the printf path.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "outputs/float_format.h"
#include "outputs/outputs.h"

/* Most significant digits that ever need to be tried. */
#define MAX_DIGITS_DOUBLE 17
#define MAX_DIGITS_SINGLE 9

__extension__ typedef unsigned __int128 u128;

/* ---- Fast path: exact digits with 128-bit integers ------------------------------ */

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

/* ---- Candidates ------------------------------------------------------------- */

/* Reads the digits and exponent of "%.*e" text of a positive value. */
static void parse_scientific(const char *s, weft__float_digits *d)
{
	d->count = 0;
	for (; *s != 'e' && *s != '\0'; s++)
		if (*s >= '0' && *s <= '9')
			d->digits[d->count++] = *s;
	d->exp10 = *s == 'e' ? atoi(s + 1) : 0;
}

/* "d.ddde<exp>" of a candidate, for strtod. */
static void candidate_text(const weft__float_digits *d, char *buf, size_t size)
{
	char *p = buf;

	*p++ = d->digits[0];
	*p++ = '.';
	memcpy(p, d->digits + 1, (size_t)d->count - 1);
	p += d->count - 1;
	snprintf(p, size - (size_t)(p - buf), "e%d", d->exp10);
}

/* 1 when the candidate reads back to |v| (as a float with `single`). */
static int reads_back(const weft__float_digits *d, double magnitude, int single)
{
	char text[64];

	candidate_text(d, text, sizeof text);
	if (single)
		return strtof(text, NULL) == (float)magnitude;
	return strtod(text, NULL) == magnitude;
}

/*
 * The candidate one unit above (+1) or below (-1) in the last digit,
 * keeping the first digit non-zero (9.99 + 1 = 10.00 moves the exponent
 * up, 1.00 - 1 = 0.99 moves it down). Returns 0 when it would be zero.
 */
static int neighbour(const weft__float_digits *d, int step, weft__float_digits *out)
{
	*out = *d;
	int i = out->count - 1;
	char wrap = step > 0 ? '9' : '0';

	while (i >= 0 && out->digits[i] == wrap) {
		out->digits[i] = step > 0 ? '0' : '9';
		i--;
	}
	if (i < 0) { /* 9.99 -> 10.00: only a carry can run past the front */
		memmove(out->digits + 1, out->digits, (size_t)out->count);
		out->digits[0] = '1';
		out->count++;
		out->exp10++;
		return 1;
	}
	out->digits[i] = (char)(out->digits[i] + step);
	if (out->digits[0] != '0')
		return 1;
	if (out->count == 1)
		return 0;
	memmove(out->digits, out->digits + 1, (size_t)out->count - 1);
	out->count--;
	out->exp10--;
	return 1;
}

/*
 * The p-digit decimal that reads back to |v|, closest first, then its
 * neighbours. Returns 1 and fills *out when there is one.
 */
static int try_precision(double magnitude, int single, int p, weft__float_digits *out)
{
	char text[64];
	weft__float_digits closest, other;

	snprintf(text, sizeof text, "%.*e", p - 1, magnitude);
	parse_scientific(text, &closest);
	if (reads_back(&closest, magnitude, single)) {
		*out = closest;
		return 1;
	}
	for (int step = 1; step >= -1; step -= 2) {
		if (neighbour(&closest, step, &other) && reads_back(&other, magnitude, single)) {
			*out = other;
			return 1;
		}
	}
	return 0;
}

/* Drops the zeros at the end of the digits (keeping one digit). */
static void strip_trailing_zeros(weft__float_digits *d)
{
	while (d->count > 1 && d->digits[d->count - 1] == '0')
		d->count--;
}

/*
 * Zero is "0" with its sign; other values try p = 15 (6) digits upwards,
 * or from 1 for subnormals, until a decimal reads back.
 */
void weft__float_shortest_reference(double v, int single, weft__float_digits *out)
{
	double magnitude = fabs(v);
	int negative = signbit(v) != 0;

	if (magnitude == 0) {
		*out = (weft__float_digits){ .digits = "0", .count = 1, .exp10 = 0 };
		out->negative = negative;
		return;
	}
	int normal = single ? (float)magnitude >= FLT_MIN : magnitude >= DBL_MIN;
	int first = normal ? (single ? FLT_DIG : DBL_DIG) : 1;
	int last = single ? MAX_DIGITS_SINGLE : MAX_DIGITS_DOUBLE;

	for (int p = first; p <= last; p++)
		if (try_precision(magnitude, single, p, out))
			break;
	/* p = 17 (9) always succeeds: the closest decimal reads back. */
	strip_trailing_zeros(out);
	out->negative = negative;
}

/* The digits of the fast path; 0 when the value is outside its range. */
static int fast_shortest(double magnitude, int single, weft__float_digits *out)
{
	interval iv;
	uint64_t d;
	int places;
	if (!make_interval(magnitude, single, &iv) || !shortest_decimal(&iv, &d, &places))
		return 0;
	out->count = (int)(weft__fmt_u64(out->digits, d) - out->digits);
	out->exp10 = out->count - 1 - places;
	strip_trailing_zeros(out);
	return 1;
}

void weft__float_shortest(double v, int single, weft__float_digits *out)
{
	double magnitude = fabs(v);
	if (magnitude != 0 && fast_shortest(magnitude, single, out)) {
		out->negative = signbit(v) != 0;
		return;
	}
	weft__float_shortest_reference(v, single, out);
}

/* ---- Notations ---------------------------------------------------------------- */

/* "NaN", "inf" or "-inf" for a value that is not finite. */
static size_t put_non_finite(char *buf, double v)
{
	const char *word = isnan(v) ? "NaN" : v < 0 ? "-inf" : "inf";
	size_t n = strlen(word);

	memcpy(buf, word, n + 1);
	return n;
}

/* The digits written out around the decimal point, without an exponent. */
static char *put_positional(char *p, const weft__float_digits *d)
{
	int k = d->count, e = d->exp10;

	if (e < 0) { /* 0.000ddd */
		*p++ = '0';
		*p++ = '.';
		memset(p, '0', (size_t)(-e - 1));
		p += -e - 1;
		memcpy(p, d->digits, (size_t)k);
		return p + k;
	}
	if (e >= k - 1) { /* ddd000 */
		memcpy(p, d->digits, (size_t)k);
		p += k;
		memset(p, '0', (size_t)(e - (k - 1)));
		return p + (e - (k - 1));
	}
	memcpy(p, d->digits, (size_t)e + 1); /* dd.ddd */
	p += e + 1;
	*p++ = '.';
	memcpy(p, d->digits + e + 1, (size_t)(k - e - 1));
	return p + (k - e - 1);
}

/* d[.ddd]e+X / d[.ddd]e-X, as JavaScript writes large and tiny numbers. */
static char *put_exponential(char *p, const weft__float_digits *d)
{
	*p++ = d->digits[0];
	if (d->count > 1) {
		*p++ = '.';
		memcpy(p, d->digits + 1, (size_t)d->count - 1);
		p += d->count - 1;
	}
	return p + sprintf(p, "e%c%d", d->exp10 < 0 ? '-' : '+', abs(d->exp10));
}

/* Rust's Display: sign, then every digit around the point. */
size_t weft__fmt_float_positional(char *buf, double v, int single)
{
	weft__float_digits d;
	char *p = buf;

	if (!isfinite(v))
		return put_non_finite(buf, v);
	weft__float_shortest(v, single, &d);
	if (d.negative)
		*p++ = '-';
	p = put_positional(p, &d);
	*p = '\0';
	return (size_t)(p - buf);
}

/* JavaScript's notation: positional for exponents -7 < e < 21. */
size_t weft__fmt_float_json(char *buf, double v, int single)
{
	weft__float_digits d;
	char *p = buf;

	if (!isfinite(v))
		return put_non_finite(buf, v);
	weft__float_shortest(v, single, &d);
	if (d.negative)
		*p++ = '-';
	if (d.exp10 > -7 && d.exp10 < 21)
		p = put_positional(p, &d);
	else
		p = put_exponential(p, &d);
	*p = '\0';
	return (size_t)(p - buf);
}
