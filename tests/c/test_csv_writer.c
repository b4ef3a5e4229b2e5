/* SPDX-License-Identifier: MIT */
/*
 * test_csv_writer.c - the CSV pieces of outputs/csv_writer.c: the fast
 * shortest round-trip float text against the exact (slow) reference of
 * outputs/float_format.c on millions of values of every magnitude (same
 * text, and it reads back to the same value), then quoting per RFC 4180
 * and hex cells.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "outputs/csv_writer.h"
#include "outputs/float_format.h"
#include "testutil.h"

/* A 64-bit pseudo-random sequence (xorshift*), fixed seed: reproducible. */
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 2685821657736338717ull;
}

static int mismatches;

/* The next value towards zero (bit pattern minus one; no libm needed). */
static double below_double(double v)
{
	uint64_t b;
	memcpy(&b, &v, sizeof b);
	b--;
	memcpy(&v, &b, sizeof v);
	return v;
}

static double below_float(float f)
{
	uint32_t b;
	memcpy(&b, &f, sizeof b);
	b--;
	memcpy(&f, &b, sizeof f);
	return f;
}

/*
 * One value: the same digits as the printf-only reference path, the text
 * written in JavaScript's notation of those digits, and the text reads
 * back to the value.
 */
static void check_value(double v, int single)
{
	char ours[WEFT__CSV_FLOAT_MAX + 1], ref[WEFT__FLOAT_TEXT_MAX];
	weft__float_digits fast, slow;
	if (!isfinite(v))
		return;
	char *end = weft__csv_float(ours, v, single);
	*end = '\0';
	CHECK((size_t)(end - ours) <= WEFT__CSV_FLOAT_MAX);
	weft__float_shortest(v, single, &fast);
	weft__float_shortest_reference(v, single, &slow);
	int same = fast.count == slow.count && fast.exp10 == slow.exp10 &&
		   fast.negative == slow.negative &&
		   memcmp(fast.digits, slow.digits, (size_t)fast.count) == 0;
	weft__fmt_float_json(ref, v, single);
	same = same && strcmp(ours, ref) == 0;
	int back = single ? strtof(ours, NULL) == (float)v : strtod(ours, NULL) == v;
	if ((!same || !back) && mismatches++ < 20)
		tu_fail(__FILE__, __LINE__, "%s %.17g: ours %s, digits %.*s e%d, reference %.*s e%d",
			single ? "float" : "double", v, ours, fast.count, fast.digits,
			fast.exp10, slow.count, slow.digits, slow.exp10);
}

/* A double from random bits (every exponent, subnormals included). */
static double random_bits_double(void)
{
	uint64_t b = rnd();
	double v;
	memcpy(&v, &b, sizeof v);
	return v;
}

static double random_bits_float(void)
{
	uint32_t b = (uint32_t)rnd();
	float f;
	memcpy(&f, &b, sizeof f);
	return f;
}

/* Values like a ROSS sample's: few digits, decimal fractions, times. */
static double random_short_decimal(void)
{
	uint64_t digits = rnd() % 1000000000000ull;
	int places = (int)(rnd() % 16);
	double v = (double)(digits % (1ull << (rnd() % 40 + 1)));
	for (int i = 0; i < places; i++)
		v /= 10;
	return v;
}

static void test_floats(void)
{
	static const double fixed[] = {
		1, 17, 0.1, 0.3, 100, 1148.493211576, 1147.5550537109375, 6.013470016999068e-154,
		DBL_MAX, -DBL_MAX, DBL_MIN, 5e-324, 1e21, 1e-7, 9.999999999999999e20,
		123456789012345680, 9007199254740992.0, 9007199254740993.0, 0.5, 2.5,
		-38.926170349121094, 8.238999726017937e-05, 1e-4, 1e-5, 4294967295.0,
		-0.0, 0.0, 1e300, 2.2250738585072014e-308,
	};
	for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++) {
		check_value(fixed[i], 0);
		check_value(fixed[i], 1);
	}
	for (int i = 0; i < 100000; i++) {
		check_value(random_bits_double(), 0);
		check_value(random_bits_float(), 1);
		double d = random_short_decimal();
		check_value(d, 0);
		check_value((float)d, 1);
		/* powers of two and their neighbours (uneven gaps) */
		uint64_t p2bits = (uint64_t)(1023 + (int)(rnd() % 200) - 100) << 52;
		double p2;
		memcpy(&p2, &p2bits, sizeof p2);
		check_value(p2, 0);
		check_value(below_double(p2), 0);
		check_value(p2, 1);
		check_value(below_float((float)p2), 1);
	}
	/* every float of a few binades around ROSS values */
	for (uint32_t b = 0x3f800000u; b < 0x3f800000u + (1u << 21); b += 7) {
		float f;
		memcpy(&f, &b, sizeof f);
		check_value(f, 1);
	}
}

/* Quoting of text cells and hex cells. */
static void test_cells(void)
{
	weft__csv_row row;
	weft__csv_row_init(&row);
	weft__csv_row_put_text(&row, "plain", 5);
	weft__csv_row_put(&row, ",", 1);
	weft__csv_row_put_text(&row, "a,b", 3);
	weft__csv_row_put(&row, ",", 1);
	weft__csv_row_put_text(&row, "say \"hi\"\n", 9);
	weft__csv_row_put(&row, ",", 1);
	weft__csv_row_put_hex(&row, (const uint8_t *)"\x00\xff\x10", 3);
	weft__csv_row_put(&row, "", 1);
	CHECK(!row.oom);
	CHECK_EQ_STR(row.buf, "plain,\"a,b\",\"say \"\"hi\"\"\n\",00ff10");
	/* a long row grows */
	for (int i = 0; i < 10000; i++)
		weft__csv_row_put(&row, "0123456789", 10);
	CHECK_EQ_U64(row.len, strlen("plain,\"a,b\",\"say \"\"hi\"\"\n\",00ff10") + 1 + 100000);
	weft__csv_row_free(&row);
}

int main(void)
{
	test_floats();
	test_cells();
	if (mismatches > 0)
		printf("%d float mismatches\n", mismatches);
	return tu_result();
}
