/* SPDX-License-Identifier: MIT */
/*
 * outputs/format.c - integer and hex formatting by hand: two decimal
 * digits per table look-up or eight at once in a 64-bit word, 32-bit
 * arithmetic wherever possible, and one 4-byte copy per hex byte. printf
 * would cost more than everything else in a dump.
 */
#include <string.h>

#include "outputs/outputs.h"

/* "00" "01" ... "99": the decimal digits of every pair. */
const char weft__digit_pairs[201] =
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

/* ":xx" of every byte value, padded to 4 bytes so one 32-bit copy writes it. */
static const char colon_hex[256 * 4 + 1] =
	":00\0:01\0:02\0:03\0:04\0:05\0:06\0:07\0:08\0:09\0:0a\0:0b\0:0c\0:0d\0:0e\0:0f\0"
	":10\0:11\0:12\0:13\0:14\0:15\0:16\0:17\0:18\0:19\0:1a\0:1b\0:1c\0:1d\0:1e\0:1f\0"
	":20\0:21\0:22\0:23\0:24\0:25\0:26\0:27\0:28\0:29\0:2a\0:2b\0:2c\0:2d\0:2e\0:2f\0"
	":30\0:31\0:32\0:33\0:34\0:35\0:36\0:37\0:38\0:39\0:3a\0:3b\0:3c\0:3d\0:3e\0:3f\0"
	":40\0:41\0:42\0:43\0:44\0:45\0:46\0:47\0:48\0:49\0:4a\0:4b\0:4c\0:4d\0:4e\0:4f\0"
	":50\0:51\0:52\0:53\0:54\0:55\0:56\0:57\0:58\0:59\0:5a\0:5b\0:5c\0:5d\0:5e\0:5f\0"
	":60\0:61\0:62\0:63\0:64\0:65\0:66\0:67\0:68\0:69\0:6a\0:6b\0:6c\0:6d\0:6e\0:6f\0"
	":70\0:71\0:72\0:73\0:74\0:75\0:76\0:77\0:78\0:79\0:7a\0:7b\0:7c\0:7d\0:7e\0:7f\0"
	":80\0:81\0:82\0:83\0:84\0:85\0:86\0:87\0:88\0:89\0:8a\0:8b\0:8c\0:8d\0:8e\0:8f\0"
	":90\0:91\0:92\0:93\0:94\0:95\0:96\0:97\0:98\0:99\0:9a\0:9b\0:9c\0:9d\0:9e\0:9f\0"
	":a0\0:a1\0:a2\0:a3\0:a4\0:a5\0:a6\0:a7\0:a8\0:a9\0:aa\0:ab\0:ac\0:ad\0:ae\0:af\0"
	":b0\0:b1\0:b2\0:b3\0:b4\0:b5\0:b6\0:b7\0:b8\0:b9\0:ba\0:bb\0:bc\0:bd\0:be\0:bf\0"
	":c0\0:c1\0:c2\0:c3\0:c4\0:c5\0:c6\0:c7\0:c8\0:c9\0:ca\0:cb\0:cc\0:cd\0:ce\0:cf\0"
	":d0\0:d1\0:d2\0:d3\0:d4\0:d5\0:d6\0:d7\0:d8\0:d9\0:da\0:db\0:dc\0:dd\0:de\0:df\0"
	":e0\0:e1\0:e2\0:e3\0:e4\0:e5\0:e6\0:e7\0:e8\0:e9\0:ea\0:eb\0:ec\0:ed\0:ee\0:ef\0"
	":f0\0:f1\0:f2\0:f3\0:f4\0:f5\0:f6\0:f7\0:f8\0:f9\0:fa\0:fb\0:fc\0:fd\0:fe\0:ff\0";

/*
 * Exactly eight digits of x < 100000000, all at once in one 64-bit word
 * (SWAR): the two 4-digit halves go in 32-bit lanes, each lane is split
 * into 2-digit halves in 16-bit lanes, then into digits in bytes, the
 * divisions by 100 and 10 done as multiplications by 10486 / 2^20 and
 * 103 / 2^10 (exact for the values a lane holds). The lowest byte holds
 * the first digit, as memory order wants on a little-endian host. Far
 * shorter dependency chains than four 2-digit look-ups.
 */
static inline char *put8(char *p, uint32_t x)
{
	uint64_t v = (uint64_t)(x / 10000) | ((uint64_t)(x % 10000) << 32);
	uint64_t hundreds = ((v * 10486) >> 20) & 0x0000007f0000007full;

	v = hundreds | ((v - hundreds * 100) << 16);
	uint64_t tens = ((v * 103) >> 10) & 0x000f000f000f000full;
	v = tens | ((v - tens * 10) << 8);
	v += 0x3030303030303030ull;
	memcpy(p, &v, 8);
	return p + 8;
}

/* Number of decimal digits of x (1..10). */
static inline unsigned digits32(uint32_t x)
{
	unsigned n = 1;

	while (x >= 100) {
		x /= 100;
		n += 2;
	}
	return n + (x >= 10);
}

/* The digits of a 32-bit value, no padding, filled from the end by pairs. */
static char *put_u32(char *p, uint32_t x)
{
	char *end = p + digits32(x);
	char *q = end;

	while (x >= 100) {
		q -= 2;
		memcpy(q, weft__digit_pairs + 2 * (x % 100), 2);
		x /= 100;
	}
	if (x >= 10)
		memcpy(q - 2, weft__digit_pairs + 2 * x, 2);
	else
		q[-1] = (char)('0' + x);
	return end;
}

/*
 * Decimal of an unsigned 64-bit value, no padding. The value is cut in
 * chunks of eight digits so that the digits come from 32-bit divisions:
 * a clock (about 12 digits) costs one 64-bit division.
 */
char *weft__fmt_u64(char *p, uint64_t v)
{
	const uint64_t e8 = 100000000u;

	if (v < e8)
		return put_u32(p, (uint32_t)v);
	if (v < e8 * e8) {
		p = put_u32(p, (uint32_t)(v / e8));
		return put8(p, (uint32_t)(v % e8));
	}
	p = put_u32(p, (uint32_t)(v / (e8 * e8)));
	p = put8(p, (uint32_t)(v / e8 % e8));
	return put8(p, (uint32_t)(v % e8));
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

/* Number of decimal digits of v (1..20). */
static unsigned digits64(uint64_t v)
{
	unsigned n = 0;

	while (v >= 100000000u) {
		v /= 100000000u;
		n += 8;
	}
	return n + digits32((uint32_t)v);
}

/* Decimal right-aligned in `width` columns (wider values are not cut). */
char *weft__fmt_u64_width(char *p, uint64_t v, unsigned width)
{
	unsigned n = digits64(v);

	if (width > n) {
		memset(p, ' ', width - n);
		p += width - n;
	}
	return weft__fmt_u64(p, v);
}

/* An empty cache for a column of `width` characters. */
void weft__clock_cache_init(weft__clock_cache *c, unsigned width)
{
	c->high = UINT64_MAX;
	c->width = width;
	c->len = 0;
}

/*
 * Values below 10^4, and every value in columns wider than 20, take the
 * general path (and leave the cache alone). Otherwise the cached text
 * becomes the high part v / 10^4, padded to width - 4 columns (at most 16
 * bytes), then weft__fmt_clock() writes the value from the cache.
 */
char *weft__fmt_clock_slow(weft__clock_cache *c, char *p, uint64_t v)
{
	uint64_t high = v / WEFT__CLOCK_LOW;

	if (high == 0 || c->width > 20)
		return weft__fmt_u64_width(p, v, c->width);
	unsigned high_width = c->width > 4 ? c->width - 4 : 0;
	memset(c->text, 0, sizeof c->text);
	c->len = (size_t)(weft__fmt_u64_width(c->text, high, high_width) - c->text);
	c->high = high;
	return weft__fmt_clock(c, p, v);
}

/*
 * ":xx" per byte, the notation of ovnidump -x. Each byte is one 4-byte
 * copy from the table (its 4th byte is overwritten by the next one), so
 * the caller leaves one spare byte after the 3 * n.
 */
char *weft__fmt_hex_colon(char *p, const uint8_t *bytes, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		memcpy(p, colon_hex + 4 * bytes[i], 4);
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
	const size_t per_chunk = (WEFT__OUTBUF_MAX_RESERVE - 1) / 3;

	while (n > 0) {
		size_t chunk = n < per_chunk ? n : per_chunk;
		char *p = weft__outbuf_reserve(ob, chunk * 3 + 1);
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
