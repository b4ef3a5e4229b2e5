/* SPDX-License-Identifier: MIT */
/*
 * test_fsum.c - util/fsum.c: the sum of floats is exact, so it does not
 * depend on the order of the additions nor on how they were split into
 * sums merged later (what `weft summary` on ranks relies on); cancellation,
 * negative totals, subnormals, infinities and NaN; values that are not
 * floats go to the plain sum.
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/fsum.h"
#include "testutil.h"

#define VALUES 20000

/* Floats of every size and sign, from a fixed generator. */
static void make_values(float *v, size_t n)
{
	uint64_t x = 88172645463325252ull;
	for (size_t i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		float m = (float)(x % 1000003) / 1000003.0f;
		int e = (int)((x >> 20) % 60) - 40;
		v[i] = ldexpf((x >> 40) & 1 ? -m : m, e);
	}
}

static double sum_range(const float *v, size_t from, size_t to, int backwards)
{
	weft__fsum s;
	memset(&s, 0, sizeof s);
	for (size_t i = from; i < to; i++)
		weft__fsum_add(&s, v[backwards ? to - 1 - (i - from) : i]);
	return weft__fsum_value(&s);
}

/* Forward, backward, and in 7 pieces merged: the same bits. */
static void order_case(void)
{
	float *v = malloc(VALUES * sizeof *v);
	REQUIRE(v != NULL);
	make_values(v, VALUES);
	double forward = sum_range(v, 0, VALUES, 0);
	double backward = sum_range(v, 0, VALUES, 1);
	weft__fsum all, piece;
	memset(&all, 0, sizeof all);
	for (size_t p = 0; p < 7; p++) {
		memset(&piece, 0, sizeof piece);
		for (size_t i = VALUES * p / 7; i < VALUES * (p + 1) / 7; i++)
			weft__fsum_add(&piece, v[i]);
		weft__fsum_merge(&all, &piece);
	}
	double merged = weft__fsum_value(&all);
	CHECK(memcmp(&forward, &backward, sizeof forward) == 0);
	CHECK(memcmp(&forward, &merged, sizeof forward) == 0);
	/* a double sum of the same values depends on the order: the case
	 * is one where exactness matters */
	double fwd = 0, bwd = 0;
	for (size_t i = 0; i < VALUES; i++) {
		fwd += v[i];
		bwd += v[VALUES - 1 - i];
	}
	CHECK(fwd != bwd);
	CHECK(fabs(forward - fwd) <= 1e-9 * fabs(fwd) + 1e-12);
	free(v);
}

/* Sums whose exact value is known. */
static void exact_case(void)
{
	weft__fsum s;
	memset(&s, 0, sizeof s);
	for (int k = 1; k <= 1000; k++)
		weft__fsum_add(&s, ldexp(k, -20));
	CHECK(weft__fsum_value(&s) == ldexp(500500, -20));

	memset(&s, 0, sizeof s);
	weft__fsum_add(&s, 1e30f);
	weft__fsum_add(&s, 1.0f);
	weft__fsum_add(&s, -1e30f);
	CHECK(weft__fsum_value(&s) == 1.0); /* a double sum gives 0 */

	memset(&s, 0, sizeof s);
	weft__fsum_add(&s, 0.25f);
	weft__fsum_add(&s, -3.5f);
	CHECK(weft__fsum_value(&s) == -3.25);

	memset(&s, 0, sizeof s);
	for (int k = 0; k < 3; k++)
		weft__fsum_add(&s, FLT_TRUE_MIN);
	weft__fsum_add(&s, FLT_MAX);
	weft__fsum_add(&s, -FLT_MAX);
	CHECK(weft__fsum_value(&s) == 3.0 * FLT_TRUE_MIN);

	memset(&s, 0, sizeof s);
	weft__fsum_add(&s, 0.1); /* no float: the plain sum */
	weft__fsum_add(&s, 0.5f);
	CHECK(weft__fsum_value(&s) == 0.1 + 0.5);

	memset(&s, 0, sizeof s);
	weft__fsum_add(&s, 1e300); /* beyond a float's range: the plain sum */
	weft__fsum_add(&s, 2.0f);
	CHECK(weft__fsum_value(&s) == 1e300 + 2.0);
}

static void special_case(void)
{
	weft__fsum s, t;
	memset(&s, 0, sizeof s);
	memset(&t, 0, sizeof t);
	CHECK(weft__fsum_value(&s) == 0);
	weft__fsum_add(&s, 2.0f);
	weft__fsum_add(&s, INFINITY);
	CHECK(weft__fsum_value(&s) == INFINITY);
	weft__fsum_add(&t, -INFINITY);
	weft__fsum_merge(&s, &t);
	CHECK(isnan(weft__fsum_value(&s)));
	memset(&s, 0, sizeof s);
	weft__fsum_add(&s, NAN);
	CHECK(isnan(weft__fsum_value(&s)));
}

int main(void)
{
	order_case();
	exact_case();
	special_case();
	return tu_result();
}
