/* SPDX-License-Identifier: MIT */
/*
 * util/fsum.c - the exact sum of floats (util/fsum.h): a value split into
 * its integer mantissa and its place, added into the limbs with carries.
 */
#include <float.h>
#include <math.h>
#include <string.h>

#include "util/fsum.h"

/* Units of the integer sum: 2^-149, the smallest float. */
#define UNIT_EXPONENT (-149)

/* Adds (or subtracts) mag * 2^shift into the limbs, carrying to the top. */
static void add_shifted(uint64_t *limb, uint64_t mag, unsigned shift, int negative)
{
	unsigned k = shift / 64, b = shift % 64;
	uint64_t part[2] = { mag << b, b ? mag >> (64 - b) : 0 };
	uint64_t carry = 0;
	for (unsigned i = k; i < WEFT__FSUM_LIMBS; i++) {
		uint64_t x = i - k < 2 ? part[i - k] : 0;
		if (x == 0 && carry == 0 && i - k >= 2)
			break;
		uint64_t was = limb[i];
		if (!negative) {
			limb[i] = was + x + carry;
			carry = limb[i] < was || (carry && limb[i] == was);
		} else {
			limb[i] = was - x - carry;
			carry = was < x || (carry && was == x);
		}
	}
}

void weft__fsum_add(weft__fsum *s, double v)
{
	if (v == 0)
		return;
	if (isnan(v)) {
		s->nan = 1;
		return;
	}
	if (isinf(v)) {
		if (v > 0)
			s->pos_inf = 1;
		else
			s->neg_inf = 1;
		return;
	}
	/* (a double beyond a float's range must not be converted to one:
	 * undefined behaviour) */
	if (fabs(v) > FLT_MAX || (double)(float)v != v) {
		s->other += v;
		return;
	}
	/* v = f * 2^e, f in [0.5, 1): a float's mantissa is f * 2^24, at
	 * 2^(e - 24); in units of 2^-149, shifted by e - 24 + 149. */
	int e;
	double f = frexp(fabs(v), &e);
	uint64_t mag = (uint64_t)ldexp(f, 24);
	int shift = e - 24 - UNIT_EXPONENT;
	if (shift < 0) { /* a subnormal float: its low bits are zeros */
		mag >>= -shift;
		shift = 0;
	}
	add_shifted(s->limb, mag, (unsigned)shift, v < 0);
}

void weft__fsum_merge(weft__fsum *s, const weft__fsum *t)
{
	uint64_t carry = 0;
	for (int i = 0; i < WEFT__FSUM_LIMBS; i++) {
		uint64_t was = s->limb[i];
		s->limb[i] = was + t->limb[i] + carry;
		carry = s->limb[i] < was || (carry && s->limb[i] == was);
	}
	s->other += t->other;
	s->pos_inf |= t->pos_inf;
	s->neg_inf |= t->neg_inf;
	s->nan |= t->nan;
}

double weft__fsum_value(const weft__fsum *s)
{
	if (s->nan || (s->pos_inf && s->neg_inf))
		return NAN;
	if (s->pos_inf || s->neg_inf)
		return s->pos_inf ? INFINITY : -INFINITY;
	uint64_t mag[WEFT__FSUM_LIMBS];
	memcpy(mag, s->limb, sizeof mag);
	int negative = (mag[WEFT__FSUM_LIMBS - 1] >> 63) != 0;
	if (negative) { /* two's complement: invert and add one */
		uint64_t carry = 1;
		for (int i = 0; i < WEFT__FSUM_LIMBS; i++) {
			mag[i] = ~mag[i] + carry;
			carry = carry && mag[i] == 0;
		}
	}
	double d = 0;
	for (int i = WEFT__FSUM_LIMBS - 1; i >= 0; i--)
		d = d * 0x1p64 + (double)mag[i];
	d = ldexp(d, UNIT_EXPONENT);
	return (negative ? -d : d) + s->other;
}
