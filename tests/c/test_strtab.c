/* SPDX-License-Identifier: MIT */
/*
 * test_strtab.c - the table of byte strings (src/util/strtab.c): indexes
 * in the order strings are first seen, the same index again for the same
 * bytes, stable NUL-terminated copies through growth, strings with NUL
 * bytes and the empty string, find of what is and is not there; the FNV-1a
 * hash against its published test values.
 */
#include <stdio.h>
#include <string.h>

#include "testutil.h"
#include "util/strtab.h"

#define N 20000

int main(void)
{
	weft__strtab t;
	char buf[32];
	size_t index;

	/* FNV-1a 64: "" and "a" (the published offset basis and first value). */
	CHECK_EQ_U64(weft__hash_bytes("", 0), 0xcbf29ce484222325ull);
	CHECK_EQ_U64(weft__hash_bytes("a", 1), 0xaf63dc4c8601ec8cull);

	weft__strtab_init(&t);
	CHECK(weft__strtab_find(&t, "x", 1) == -1);
	const char *first = NULL;
	for (size_t i = 0; i < N; i++) {
		int n = snprintf(buf, sizeof buf, "name %zu", i);
		REQUIRE(weft__strtab_intern(&t, buf, (size_t)n, &index) == 1);
		CHECK_EQ_U64(index, i);
		if (i == 0)
			first = weft__strtab_text(&t, 0);
	}
	CHECK(first == weft__strtab_text(&t, 0)); /* copies do not move */
	CHECK_EQ_STR(first, "name 0");
	for (size_t i = 0; i < N; i += 97) {
		int n = snprintf(buf, sizeof buf, "name %zu", i);
		CHECK(weft__strtab_intern(&t, buf, (size_t)n, &index) == 0);
		CHECK_EQ_U64(index, i);
		CHECK_EQ_I64(weft__strtab_find(&t, buf, (size_t)n), (int64_t)i);
		CHECK_EQ_STR(weft__strtab_text(&t, i), buf);
	}
	/* Bytes, not C strings: "a\0b" and "a" differ; "" is a string too. */
	REQUIRE(weft__strtab_intern(&t, "a\0b", 3, &index) == 1);
	CHECK_EQ_U64(index, N);
	CHECK(weft__strtab_intern(&t, "a", 1, &index) == 1 && index == N + 1);
	CHECK(weft__strtab_intern(&t, "", 0, &index) == 1 && index == N + 2);
	CHECK(weft__strtab_intern(&t, "a\0b", 3, &index) == 0 && index == N);
	CHECK(memcmp(weft__strtab_text(&t, N), "a\0b", 4) == 0);
	CHECK_EQ_U64(t.count, N + 3);
	CHECK(weft__strtab_find(&t, "name 20000", 10) == -1);
	weft__strtab_free(&t);
	CHECK_EQ_U64(t.count, 0);
	weft__strtab_free(&t); /* twice is fine */
	return tu_result();
}
