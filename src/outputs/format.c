/*
 * outputs/format.c - integer and hex formatting by hand: two decimal
 * digits per table look-up and one table look-up per hex byte. printf
 * would cost more than everything else in a dump.
 */
#include <string.h>

#include "outputs/outputs.h"

/* "00" "01" ... "99": the decimal digits of every pair. */
static const char digit_pairs[201] =
	"00010203040506070809"
	"10111213141516171819"
	"20212223242526272829"
	"30313233343536373839"
	"40414243444546474849"
	"50515253545556575859"
	"60616263646566676869"
	"70717273747576777879"
	"80818283848586878889"
	"90919293949596979899";

static const char hex_digits[] = "0123456789abcdef";

/*
 * Writes the decimal digits of v backwards, ending at `end`, and returns
 * where they start. The caller provides 20 bytes before `end`.
 */
static char *digits_backwards(char *end, uint64_t v)
{
	char *p = end;

	while (v >= 100) {
		unsigned pair = (unsigned)(v % 100) * 2;
		v /= 100;
		p -= 2;
		p[0] = digit_pairs[pair];
		p[1] = digit_pairs[pair + 1];
	}
	if (v >= 10) {
		unsigned pair = (unsigned)v * 2;
		p -= 2;
		p[0] = digit_pairs[pair];
		p[1] = digit_pairs[pair + 1];
	} else {
		*--p = (char)('0' + v);
	}
	return p;
}

/* Decimal of an unsigned 64-bit value, no padding. */
char *weft__fmt_u64(char *p, uint64_t v)
{
	char tmp[24];
	char *start = digits_backwards(tmp + sizeof tmp, v);
	size_t n = (size_t)(tmp + sizeof tmp - start);

	memcpy(p, start, n);
	return p + n;
}

/* Decimal of a signed value; INT64_MIN is handled through its magnitude. */
char *weft__fmt_i64(char *p, int64_t v)
{
	if (v < 0) {
		*p++ = '-';
		return weft__fmt_u64(p, (uint64_t)0 - (uint64_t)v);
	}
	return weft__fmt_u64(p, (uint64_t)v);
}

/* Decimal right-aligned in `width` columns (wider values are not cut). */
char *weft__fmt_u64_width(char *p, uint64_t v, unsigned width)
{
	char tmp[24];
	char *start = digits_backwards(tmp + sizeof tmp, v);
	size_t n = (size_t)(tmp + sizeof tmp - start);

	while (width > n) {
		*p++ = ' ';
		width--;
	}
	memcpy(p, start, n);
	return p + n;
}

/* ":xx" per byte, the notation of ovnidump -x. */
char *weft__fmt_hex_colon(char *p, const uint8_t *bytes, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		p[0] = ':';
		p[1] = hex_digits[bytes[i] >> 4];
		p[2] = hex_digits[bytes[i] & 15];
		p += 3;
	}
	return p;
}

/* "xx" per byte, for the JSON payload string. */
char *weft__fmt_hex_plain(char *p, const uint8_t *bytes, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		p[0] = hex_digits[bytes[i] >> 4];
		p[1] = hex_digits[bytes[i] & 15];
		p += 2;
	}
	return p;
}

/* The colon hex of any number of bytes (jumbo data), in chunks. */
void weft__put_hex_colon(weft__outbuf *ob, const uint8_t *bytes, size_t n)
{
	const size_t per_chunk = WEFT__OUTBUF_MAX_RESERVE / 3;

	while (n > 0) {
		size_t chunk = n < per_chunk ? n : per_chunk;
		char *p = weft__outbuf_reserve(ob, chunk * 3);
		weft__outbuf_commit(ob, weft__fmt_hex_colon(p, bytes, chunk));
		bytes += chunk;
		n -= chunk;
	}
}

/* The plain hex of any number of bytes, in chunks. */
void weft__put_hex_plain(weft__outbuf *ob, const uint8_t *bytes, size_t n)
{
	const size_t per_chunk = WEFT__OUTBUF_MAX_RESERVE / 2;

	while (n > 0) {
		size_t chunk = n < per_chunk ? n : per_chunk;
		char *p = weft__outbuf_reserve(ob, chunk * 2);
		weft__outbuf_commit(ob, weft__fmt_hex_plain(p, bytes, chunk));
		bytes += chunk;
		n -= chunk;
	}
}
