/* SPDX-License-Identifier: MIT */
/*
 * util/fsum.h - an exact sum of single-precision values, whatever the
 * order of the additions (ROSS's engine phase times are floats, summed
 * per PE by `weft summary`, in pieces by its ranks).
 *
 * Why: a sum of doubles rounds at each step, so the total depends on the
 * order, and a sum made of pieces merged on rank 0 would print other
 * digits than one pass. Here the sum is an integer, exact: a float is
 * m * 2^e with |m| < 2^24 and -149 <= e <= 104, an integer number of
 * units of 2^-149 below 2^277; 2^64 of them stay below 2^341, which six
 * 64-bit limbs hold in two's complement. Infinities and NaN are kept as
 * flags (their sum does not depend on the order either). A value that is
 * no float (more precision or range) goes to a plain double sum: the
 * callers give floats.
 *
 * Internal to libweft (weft__ prefix).
 */
#ifndef WEFT_UTIL_FSUM_H
#define WEFT_UTIL_FSUM_H

#include <stdint.h>

#define WEFT__FSUM_LIMBS 6

typedef struct weft__fsum {
	uint64_t limb[WEFT__FSUM_LIMBS]; /* the sum of floats, in units of 2^-149 */
	double other;                    /* the sum of the values that are not floats */
	uint8_t pos_inf, neg_inf, nan;
} weft__fsum;

/* Adds a value (a zeroed weft__fsum is 0). */
void weft__fsum_add(weft__fsum *s, double v);
/* Adds another sum: the same as adding its values one by one. */
void weft__fsum_merge(weft__fsum *s, const weft__fsum *t);
/* The sum as a double (one rounding of the exact sum, plus `other`). */
double weft__fsum_value(const weft__fsum *s);

#endif /* WEFT_UTIL_FSUM_H */
