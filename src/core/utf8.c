/* SPDX-License-Identifier: MIT */
/*
 * core/utf8.c - UTF-8 validation, shared by the readers (which reject
 * invalid text where a format requires UTF-8) and the writers (which
 * escape it).
 */
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"

/* 1 when c is the continuation byte of a UTF-8 sequence (10xxxxxx). */
static int is_continuation(unsigned char c)
{
	return (c & 0xc0) == 0x80;
}

/*
 * Length of the valid UTF-8 sequence at s, or 0. The ranges of the second
 * byte exclude overlong forms (E0, F0), UTF-16 surrogates (ED) and code
 * points beyond U+10FFFF (F4).
 */
size_t weft__utf8_sequence_length(const unsigned char *s, size_t len)
{
	unsigned char c = s[0];
	unsigned char lo = 0x80, hi = 0xbf;
	size_t need;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		need = 2;
	else if (c >= 0xe0 && c <= 0xef)
		need = 3;
	else if (c >= 0xf0 && c <= 0xf4)
		need = 4;
	else
		return 0;
	if (len < need)
		return 0;
	if (c == 0xe0)
		lo = 0xa0;
	else if (c == 0xed)
		hi = 0x9f;
	else if (c == 0xf0)
		lo = 0x90;
	else if (c == 0xf4)
		hi = 0x8f;
	if (s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < need; i++)
		if (!is_continuation(s[i]))
			return 0;
	return need;
}

/*
 * Length of the longest valid UTF-8 prefix of s: len when all of s is
 * valid, else the offset of the first byte that does not start a valid
 * sequence (for the error message of a reader).
 */
size_t weft__utf8_valid_prefix(const unsigned char *s, size_t len)
{
	size_t i = 0;
	while (i < len) {
		if (s[i] < 0x80) {
			i++;
			continue;
		}
		size_t n = weft__utf8_sequence_length(s + i, len - i);
		if (n == 0)
			return i;
		i += n;
	}
	return len;
}

/*
 * `len` bytes of text as UTF-8 (malloc'd, NUL-terminated): each byte that
 * does not start valid UTF-8 becomes U+FFFD, as `weft dump --json` shows
 * them. NULL on ENOMEM.
 */
char *weft__utf8_repaired(const char *s, size_t len)
{
	char *out = malloc(len * 3 + 1);
	size_t n = 0;
	for (size_t i = 0; out != NULL && i < len;) {
		size_t k = weft__utf8_sequence_length((const unsigned char *)s + i, len - i);
		if (k == 0) {
			memcpy(out + n, "\xEF\xBF\xBD", 3);
			n += 3, i++;
		} else {
			memcpy(out + n, s + i, k);
			n += k, i += k;
		}
	}
	if (out != NULL)
		out[n] = '\0';
	return out;
}
