/* SPDX-License-Identifier: MIT */
/*
 * outputs/float_format.h - floating-point values as the shortest decimal
 * text that reads back to the same value, in two notations:
 *
 *   positional: every digit written out, never an exponent, as Rust's
 *               `Display` for f64 prints it (789.0 -> "789", 1e-7 ->
 *               "0.0000001", 1e21 -> "1000000000000000000000", -0.0 ->
 *               "-0"). Heph's converter writes its f64 attributes so.
 *   JSON:       the same digits, positional for decimal exponents -7 < e
 *               < 21 and with an exponent outside ("1e+21", "5e-324"), as
 *               JavaScript's Number#toString prints them: compact and
 *               read back exactly by any JSON parser.
 *
 * "Shortest" is the fewest significant digits that round-trip, and among
 * those the one closest to the exact value (the rule of Rust, Python's
 * repr and JavaScript). Single-precision values (`single`) round-trip as
 * floats, so 0.1f gives "0.1". Internal to libweft (weft__ prefix).
 */
#ifndef WEFT_OUTPUTS_FLOAT_FORMAT_H
#define WEFT_OUTPUTS_FLOAT_FORMAT_H

#include <stddef.h>

/*
 * Room that any text of these functions fits in, NUL included: the
 * longest positional text is that of a tiny subnormal with 17 digits
 * ("-0." + 323 zeros + 17 digits, 343 bytes).
 */
#define WEFT__FLOAT_TEXT_MAX 352

/* The shortest round-trip digits of a finite value. */
typedef struct weft__float_digits {
	char digits[20]; /* significant digits, no trailing zeros ("0" for 0) */
	int count;       /* number of digits (1..17) */
	int exp10;       /* value = d1.d2d3... x 10^exp10 */
	int negative;    /* sign bit (so -0.0 is negative) */
} weft__float_digits;

/*
 * Computes the shortest round-trip digits of `v` (finite). With `single`,
 * `v` holds a float and round-trips as a float.
 */
void weft__float_shortest(double v, int single, weft__float_digits *out);
/* The same digits through printf/strtod only (tests check the fast path
 * against it). */
void weft__float_shortest_reference(double v, int single, weft__float_digits *out);

/*
 * Writes `v` at buf (WEFT__FLOAT_TEXT_MAX bytes), NUL-terminated, and
 * returns the length. NaN and infinities give "NaN", "inf" and "-inf"
 * (Rust's words; not JSON numbers: callers quote them).
 */
size_t weft__fmt_float_positional(char *buf, double v, int single);
size_t weft__fmt_float_json(char *buf, double v, int single);

#endif /* WEFT_OUTPUTS_FLOAT_FORMAT_H */
