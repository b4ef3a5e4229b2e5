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
 * needed. Values are rare in traces: a few snprintf/strtod calls each
 * are fine.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "outputs/float_format.h"

/* Most significant digits that ever need to be tried. */
#define MAX_DIGITS_DOUBLE 17
#define MAX_DIGITS_SINGLE 9

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
void weft__float_shortest(double v, int single, weft__float_digits *out)
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
