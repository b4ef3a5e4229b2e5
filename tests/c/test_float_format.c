/* SPDX-License-Identifier: MIT */
/*
 * test_float_format.c - the shortest round-trip float texts of
 * outputs/float_format.c: a table of values whose text is known (Rust's
 * Display for the positional form, JavaScript's Number#toString for the
 * JSON form), then random bit patterns of every magnitude that must read
 * back exactly, never use an exponent in the positional form, and never
 * have a shorter decimal that also reads back.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "outputs/float_format.h"
#include "testutil.h"

/* "0." then n zeros then `digits`: the text of a tiny value. */
static char *tiny(int zeros, const char *digits)
{
	static char buf[WEFT__FLOAT_TEXT_MAX];
	char *p = buf;

	*p++ = '0';
	*p++ = '.';
	memset(p, '0', (size_t)zeros);
	strcpy(p + zeros, digits);
	return buf;
}

/* `digits` then n zeros: the text of a large integral value. */
static char *large(const char *digits, int zeros)
{
	static char buf[WEFT__FLOAT_TEXT_MAX];
	size_t n = strlen(digits);

	memcpy(buf, digits, n);
	memset(buf + n, '0', (size_t)zeros);
	buf[n + (size_t)zeros] = '\0';
	return buf;
}

/* "-" before a text of tiny() or large() (in its own buffer). */
static char *negate(const char *text)
{
	static char buf[WEFT__FLOAT_TEXT_MAX + 1];

	buf[0] = '-';
	strcpy(buf + 1, text);
	return buf;
}

/* Checks one value in both notations. */
static void check_double(double v, const char *positional, const char *json)
{
	char buf[WEFT__FLOAT_TEXT_MAX];
	size_t n = weft__fmt_float_positional(buf, v, 0);

	CHECK_EQ_U64(n, strlen(buf));
	if (strcmp(buf, positional) != 0)
		tu_fail(__FILE__, __LINE__, "positional %.17g: got %s, want %s", v, buf, positional);
	n = weft__fmt_float_json(buf, v, 0);
	CHECK_EQ_U64(n, strlen(buf));
	if (strcmp(buf, json) != 0)
		tu_fail(__FILE__, __LINE__, "json %.17g: got %s, want %s", v, buf, json);
}

/* Values whose text is known. */
static void test_table(void)
{
	check_double(789.0, "789", "789");
	check_double(1e-7, "0.0000001", "1e-7");
	check_double(1.5e-7, "0.00000015", "1.5e-7");
	check_double(1e-6, "0.000001", "0.000001");
	check_double(1e21, "1000000000000000000000", "1e+21");
	check_double(1e20, "100000000000000000000", "100000000000000000000");
	check_double(1e23, "100000000000000000000000", "1e+23");
	check_double((double)0.1f, "0.10000000149011612", "0.10000000149011612");
	check_double(-2.5, "-2.5", "-2.5");
	check_double(123.456, "123.456", "123.456");
	check_double(0.0, "0", "0");
	check_double(-0.0, "-0", "-0");
	check_double(0.3, "0.3", "0.3");
	check_double(0.1 + 0.2, "0.30000000000000004", "0.30000000000000004");
	check_double(1.0 / 3.0, "0.3333333333333333", "0.3333333333333333");
	check_double(2.0 / 3.0, "0.6666666666666666", "0.6666666666666666");
	check_double(100.0, "100", "100");
	check_double(1e15, "1000000000000000", "1000000000000000");
	check_double(1e16, "10000000000000000", "10000000000000000");
	check_double(9007199254740992.0, "9007199254740992", "9007199254740992");
	check_double(9007199254740994.0, "9007199254740994", "9007199254740994");
	check_double(9007199254740996.0, "9007199254740996", "9007199254740996");
	check_double(18446744073709551616.0, "18446744073709552000", "18446744073709552000");
	check_double(-9223372036854775808.0, "-9223372036854776000", "-9223372036854776000");
	check_double(123456789012345678.0, "123456789012345680", "123456789012345680");
	check_double(5e-324, tiny(323, "5"), "5e-324");
	check_double(-5e-324, negate(tiny(323, "5")), "-5e-324");
	check_double(1e-323, tiny(322, "1"), "1e-323");
	check_double(DBL_MIN, tiny(307, "22250738585072014"), "2.2250738585072014e-308");
	check_double(2.225073858507201e-308, tiny(307, "2225073858507201"),
		     "2.225073858507201e-308");
	check_double(DBL_MAX, large("17976931348623157", 292), "1.7976931348623157e+308");
	check_double(-DBL_MAX, negate(large("17976931348623157", 292)),
		     "-1.7976931348623157e+308");
	check_double(1.7976931348623155e308, large("17976931348623155", 292),
		     "1.7976931348623155e+308");
	check_double(4.35, "4.35", "4.35");
	check_double(0.000001234, "0.000001234", "0.000001234");
	check_double(1e22, "10000000000000000000000", "1e+22");
	check_double(5e-7, "0.0000005", "5e-7");
}

/* Non-finite values: Rust's words in both notations. */
static void test_non_finite(void)
{
	char buf[WEFT__FLOAT_TEXT_MAX];

	weft__fmt_float_positional(buf, NAN, 0);
	CHECK_EQ_STR(buf, "NaN");
	weft__fmt_float_positional(buf, INFINITY, 0);
	CHECK_EQ_STR(buf, "inf");
	weft__fmt_float_json(buf, -INFINITY, 0);
	CHECK_EQ_STR(buf, "-inf");
	weft__fmt_float_json(buf, -NAN, 1);
	CHECK_EQ_STR(buf, "NaN");
}

/* Single precision: round-trips as a float. */
static void test_single(void)
{
	char buf[WEFT__FLOAT_TEXT_MAX];

	weft__fmt_float_positional(buf, (double)0.1f, 1);
	CHECK_EQ_STR(buf, "0.1");
	weft__fmt_float_positional(buf, (double)16777216.0f, 1);
	CHECK_EQ_STR(buf, "16777216");
	weft__fmt_float_positional(buf, (double)FLT_MAX, 1);
	CHECK_EQ_STR(buf, "340282350000000000000000000000000000000");
	weft__fmt_float_json(buf, (double)FLT_MAX, 1);
	CHECK_EQ_STR(buf, "3.4028235e+38");
	weft__fmt_float_json(buf, (double)1e-45f, 1);
	CHECK_EQ_STR(buf, "1e-45");
	weft__fmt_float_json(buf, (double)FLT_MIN, 1);
	CHECK_EQ_STR(buf, "1.1754944e-38");
	weft__fmt_float_json(buf, (double)-1.5f, 1);
	CHECK_EQ_STR(buf, "-1.5");
}

/* xorshift64*: reproducible random bits. */
static uint64_t next_random(uint64_t *state)
{
	uint64_t x = *state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * 0x2545F4914F6CDD1Dull;
}

/* 1 when some decimal of `digits` significant digits reads back to v. */
static int shorter_exists(double v, int digits)
{
	char text[64];

	for (int p = 1; p <= digits; p++) {
		snprintf(text, sizeof text, "%.*e", p - 1, v);
		if (strtod(text, NULL) == v)
			return 1;
	}
	return 0;
}

/*
 * A random double: its positional text reads back, has no exponent, and
 * its digit count is minimal (no closest decimal with fewer digits reads
 * back; the neighbours are covered by the table and the pytest tests).
 */
static void check_random(double v)
{
	char buf[WEFT__FLOAT_TEXT_MAX], json[WEFT__FLOAT_TEXT_MAX];
	weft__float_digits d;

	if (!isfinite(v))
		return;
	weft__fmt_float_positional(buf, v, 0);
	weft__fmt_float_json(json, v, 0);
	weft__float_shortest(v, 0, &d);
	if (strtod(buf, NULL) != v || strchr(buf, 'e') != NULL)
		tu_fail(__FILE__, __LINE__, "%.17g: positional %s", v, buf);
	if (strtod(json, NULL) != v)
		tu_fail(__FILE__, __LINE__, "%.17g: json %s", v, json);
	if (d.count > 1 && shorter_exists(v, d.count - 1))
		tu_fail(__FILE__, __LINE__, "%.17g: %d digits, fewer read back", v, d.count);
	if (d.count > 1 && d.digits[d.count - 1] == '0')
		tu_fail(__FILE__, __LINE__, "%.17g: trailing zero digit", v);
}

/* Random bit patterns (every exponent, subnormals) and random integers. */
static void test_random(void)
{
	uint64_t state = 0x9E3779B97F4A7C15ull;

	for (int i = 0; i < 40000; i++) {
		uint64_t bits = next_random(&state);
		double v;
		if (i % 4 == 1)
			bits &= 0x800FFFFFFFFFFFFFull; /* subnormal */
		memcpy(&v, &bits, sizeof v);
		if (i % 4 == 2)
			v = (double)(bits >> (bits % 64)); /* integers, up to 2^64 */
		check_random(v);
	}
}

int main(void)
{
	test_table();
	test_non_finite();
	test_single();
	test_random();
	return tu_result();
}
