/* SPDX-License-Identifier: MIT */
/*
 * util/strtab.h - the one table of byte strings: each distinct string
 * gets an index (0, 1, 2, ... in the order first seen) and a stable,
 * NUL-terminated copy. Open addressing on FNV-1a hashes, load at most
 * one half. Used wherever names are interned or counted (the view's span
 * names, profile rows, event codes of `weft top`); tables keyed by
 * numbers, or whose entries are removed, have their own layouts.
 *
 * Internal to libweft (weft__ prefix).
 */
#ifndef WEFT_UTIL_STRTAB_H
#define WEFT_UTIL_STRTAB_H

#include <stddef.h>
#include <stdint.h>

typedef struct weft__strtab {
	uint32_t *slots;     /* index + 1 of the string, 0 = free */
	uint64_t *hashes;    /* by index */
	char **texts;        /* by index: NUL-terminated copies */
	uint32_t *lengths;   /* by index */
	size_t count;        /* strings */
	size_t slot_cap;     /* a power of two, or 0 */
	size_t text_cap;
} weft__strtab;

/* FNV-1a of n bytes. */
uint64_t weft__hash_bytes(const void *bytes, size_t n);
/* An empty table (no allocation until the first string). */
void weft__strtab_init(weft__strtab *t);
/*
 * The index of s[0..n) (which may hold NUL bytes), added when new: 1 when
 * it was added, 0 when it was there, -1 when out of memory (the table is
 * unchanged).
 */
int weft__strtab_intern(weft__strtab *t, const char *s, size_t n, size_t *index);
/* The index of s[0..n), or -1 when it is not in the table. */
int64_t weft__strtab_find(const weft__strtab *t, const char *s, size_t n);
/* The copy of string `index` (valid as long as the table). */
static inline const char *weft__strtab_text(const weft__strtab *t, size_t index)
{
	return t->texts[index];
}
void weft__strtab_free(weft__strtab *t);

#endif /* WEFT_UTIL_STRTAB_H */
