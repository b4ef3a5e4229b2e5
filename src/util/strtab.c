/* SPDX-License-Identifier: MIT */
/*
 * util/strtab.c - the table of byte strings (util/strtab.h).
 */
#include <stdlib.h>
#include <string.h>

#include "util/strtab.h"

uint64_t weft__hash_bytes(const void *bytes, size_t n)
{
	const unsigned char *p = bytes;
	uint64_t h = 14695981039346656037ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 1099511628211ull;
	return h;
}

void weft__strtab_init(weft__strtab *t)
{
	memset(t, 0, sizeof *t);
}

/* The slot of s[0..n) with hash h: its own, or the free one to take. */
static size_t slot_of(const weft__strtab *t, const char *s, size_t n, uint64_t h)
{
	size_t mask = t->slot_cap - 1, j = (size_t)h & mask;
	for (; t->slots[j] != 0; j = (j + 1) & mask) {
		size_t i = t->slots[j] - 1;
		if (t->hashes[i] == h && t->lengths[i] == n && memcmp(t->texts[i], s, n) == 0)
			break;
	}
	return j;
}

/* Doubles the slots (rehashing from the stored hashes); -1 without memory. */
static int slots_grow(weft__strtab *t)
{
	size_t cap = t->slot_cap ? 2 * t->slot_cap : 64;
	uint32_t *slots = calloc(cap, sizeof *slots);
	if (slots == NULL)
		return -1;
	for (size_t i = 0; i < t->count; i++) {
		size_t j = (size_t)t->hashes[i] & (cap - 1);
		while (slots[j] != 0)
			j = (j + 1) & (cap - 1);
		slots[j] = (uint32_t)(i + 1);
	}
	free(t->slots);
	t->slots = slots;
	t->slot_cap = cap;
	return 0;
}

/* Room for one more string in the per-index arrays; -1 without memory. */
static int texts_reserve(weft__strtab *t)
{
	if (t->count < t->text_cap)
		return 0;
	size_t cap = t->text_cap ? 2 * t->text_cap : 32;
	uint64_t *hashes = realloc(t->hashes, cap * sizeof *hashes);
	if (hashes != NULL)
		t->hashes = hashes;
	char **texts = hashes ? realloc(t->texts, cap * sizeof *texts) : NULL;
	if (texts != NULL)
		t->texts = texts;
	uint32_t *lengths = texts ? realloc(t->lengths, cap * sizeof *lengths) : NULL;
	if (lengths == NULL)
		return -1;
	t->lengths = lengths;
	t->text_cap = cap;
	return 0;
}

int64_t weft__strtab_find(const weft__strtab *t, const char *s, size_t n)
{
	if (t->slot_cap == 0)
		return -1;
	size_t j = slot_of(t, s, n, weft__hash_bytes(s, n));
	return t->slots[j] != 0 ? (int64_t)t->slots[j] - 1 : -1;
}

int weft__strtab_intern(weft__strtab *t, const char *s, size_t n, size_t *index)
{
	if (n > UINT32_MAX || t->count >= UINT32_MAX - 1)
		return -1;
	if ((t->count + 1) * 2 > t->slot_cap && slots_grow(t) < 0)
		return -1;
	uint64_t h = weft__hash_bytes(s, n);
	size_t j = slot_of(t, s, n, h);
	if (t->slots[j] != 0) {
		*index = t->slots[j] - 1;
		return 0;
	}
	char *copy = malloc(n + 1);
	if (copy == NULL || texts_reserve(t) < 0) {
		free(copy);
		return -1;
	}
	memcpy(copy, s, n);
	copy[n] = '\0';
	t->hashes[t->count] = h;
	t->texts[t->count] = copy;
	t->lengths[t->count] = (uint32_t)n;
	t->slots[j] = (uint32_t)(t->count + 1);
	*index = t->count++;
	return 1;
}

void weft__strtab_free(weft__strtab *t)
{
	for (size_t i = 0; i < t->count; i++)
		free(t->texts[i]);
	free(t->texts);
	free(t->hashes);
	free(t->lengths);
	free(t->slots);
	memset(t, 0, sizeof *t);
}
