/* SPDX-License-Identifier: MIT */
/*
 * emu/idmap.c - maps of 32-bit ids to 64-bit non-zero values (tasks by id,
 * bodies by id, pages of finished tasks): open addressing with linear
 * probing, removal by backward shift (no tombstones, so a map whose
 * entries come and go keeps short probes), grown at 3/4 full.
 */
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "emu/task.h"

struct weft__emu_idmap {
	uint32_t *keys;
	uint64_t *vals;   /* 0: empty slot */
	size_t cap;       /* a power of two */
	size_t count;
};

/* Spreads an id over the slots (Murmur3's finalizer constant). */
static size_t slot_of(uint32_t id, size_t cap)
{
	uint64_t h = (uint64_t)id * 0x9E3779B97F4A7C15ull;
	return (size_t)(h >> 32) & (cap - 1);
}

weft__emu_idmap *weft__emu_idmap_new(void)
{
	return calloc(1, sizeof(weft__emu_idmap));
}

void weft__emu_idmap_free(weft__emu_idmap *m)
{
	if (m == NULL)
		return;
	free(m->keys);
	free(m->vals);
	free(m);
}

size_t weft__emu_idmap_count(const weft__emu_idmap *m)
{
	return m->count;
}

int weft__emu_idmap_get(const weft__emu_idmap *m, uint32_t id, uint64_t *value)
{
	if (m->cap == 0)
		return 0;
	for (size_t i = slot_of(id, m->cap);; i = (i + 1) & (m->cap - 1)) {
		if (m->vals[i] == 0)
			return 0;
		if (m->keys[i] == id) {
			*value = m->vals[i];
			return 1;
		}
	}
}

/* Doubles the table (or makes the first one). 0 or WEFT_ENOMEM. */
static int grow(weft__emu_idmap *m)
{
	size_t cap = m->cap ? m->cap * 2 : 16;
	uint32_t *keys = malloc(cap * sizeof *keys);
	uint64_t *vals = calloc(cap, sizeof *vals);
	if (keys == NULL || vals == NULL) {
		free(keys);
		free(vals);
		return WEFT_ENOMEM;
	}
	for (size_t j = 0; j < m->cap; j++) {
		if (m->vals[j] == 0)
			continue;
		size_t i = slot_of(m->keys[j], cap);
		while (vals[i] != 0)
			i = (i + 1) & (cap - 1);
		keys[i] = m->keys[j];
		vals[i] = m->vals[j];
	}
	free(m->keys);
	free(m->vals);
	m->keys = keys;
	m->vals = vals;
	m->cap = cap;
	return 0;
}

int weft__emu_idmap_put(weft__emu_idmap *m, uint32_t id, uint64_t value)
{
	if ((m->count + 1) * 4 > m->cap * 3 && grow(m) < 0)
		return WEFT_ENOMEM;
	size_t i = slot_of(id, m->cap);
	while (m->vals[i] != 0 && m->keys[i] != id)
		i = (i + 1) & (m->cap - 1);
	m->count += m->vals[i] == 0;
	m->keys[i] = id;
	m->vals[i] = value;
	return 0;
}

void weft__emu_idmap_del(weft__emu_idmap *m, uint32_t id)
{
	if (m->cap == 0)
		return;
	size_t mask = m->cap - 1, i = slot_of(id, m->cap);
	while (m->vals[i] != 0 && m->keys[i] != id)
		i = (i + 1) & mask;
	if (m->vals[i] == 0)
		return;
	/* shift back the entries of the run after the hole that may fill it */
	for (size_t j = (i + 1) & mask; m->vals[j] != 0; j = (j + 1) & mask) {
		size_t home = slot_of(m->keys[j], m->cap);
		/* j's entry may move to i when its home is not in (i, j] */
		if (((j - home) & mask) >= ((j - i) & mask)) {
			m->keys[i] = m->keys[j];
			m->vals[i] = m->vals[j];
			i = j;
		}
	}
	m->vals[i] = 0;
	m->count--;
}

int weft__emu_idmap_each(const weft__emu_idmap *m,
			 int (*fn)(void *ctx, uint32_t id, uint64_t value), void *ctx)
{
	for (size_t i = 0; i < m->cap; i++)
		if (m->vals[i] != 0) {
			int rc = fn(ctx, m->keys[i], m->vals[i]);
			if (rc != 0)
				return rc;
		}
	return 0;
}
