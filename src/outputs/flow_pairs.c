/* SPDX-License-Identifier: MIT */
/*
 * outputs/flow_pairs.c - waiting message ends by flow id: open addressing
 * with linear probing, deletion by shifting back the entries after the
 * removed one (no tombstones, so a long run of sends and receives never
 * slows the table down).
 */
#include <assert.h>
#include <stdlib.h>

#include "outputs/flow_pairs.h"

typedef struct slot {
	uint64_t id;          /* 0: empty */
	weft__flow_end end;
} slot;

struct weft__flow_pairs {
	slot *slots;
	size_t cap;           /* a power of two, or 0 */
	size_t count, max;
};

/* The home slot of a flow id (multiplicative hash: the top bits). */
static size_t home(const weft__flow_pairs *p, uint64_t id)
{
	return (size_t)((id * 0x9E3779B97F4A7C15ull) >> 32) & (p->cap - 1);
}

/* Doubles the table (or makes the first one); 0, or -1 without memory. */
static int grow(weft__flow_pairs *p)
{
	size_t cap = p->cap ? p->cap * 2 : 64;
	slot *old = p->slots;
	size_t old_cap = p->cap;
	p->slots = calloc(cap, sizeof *p->slots);
	if (p->slots == NULL) {
		p->slots = old;
		return -1;
	}
	p->cap = cap;
	for (size_t i = 0; i < old_cap; i++) {
		if (old[i].id == 0)
			continue;
		size_t j = home(p, old[i].id);
		while (p->slots[j].id != 0)
			j = (j + 1) & (cap - 1);
		p->slots[j] = old[i];
	}
	free(old);
	return 0;
}

/* Empties slot i and moves back the entries of its probe run after it. */
static void remove_at(weft__flow_pairs *p, size_t i)
{
	size_t hole = i;
	for (size_t j = (i + 1) & (p->cap - 1); p->slots[j].id != 0; j = (j + 1) & (p->cap - 1)) {
		size_t h = home(p, p->slots[j].id);
		/* j may fill the hole when its home is not in (hole, j]. */
		int between = hole <= j ? (h > hole && h <= j) : (h > hole || h <= j);
		if (!between) {
			p->slots[hole] = p->slots[j];
			hole = j;
		}
	}
	p->slots[hole].id = 0;
	p->count--;
}

weft__flow_pairs *weft__flow_pairs_create(size_t max_pending)
{
	weft__flow_pairs *p = calloc(1, sizeof *p);
	if (p != NULL)
		p->max = max_pending;
	return p;
}

int weft__flow_pairs_meet(weft__flow_pairs *p, uint64_t flow_id, const weft__flow_end *e,
			  weft__flow_end *other)
{
	assert(flow_id != 0);
	if (p->cap > 0) {
		for (size_t i = home(p, flow_id); p->slots[i].id != 0; i = (i + 1) & (p->cap - 1))
			if (p->slots[i].id == flow_id) {
				*other = p->slots[i].end;
				remove_at(p, i);
				return 1;
			}
	}
	if (p->count >= p->max || ((p->count + 1) * 2 > p->cap && grow(p) < 0))
		return -1;
	size_t i = home(p, flow_id);
	while (p->slots[i].id != 0)
		i = (i + 1) & (p->cap - 1);
	p->slots[i].id = flow_id;
	p->slots[i].end = *e;
	p->count++;
	return 0;
}

size_t weft__flow_pairs_waiting(const weft__flow_pairs *p)
{
	return p->count;
}

void weft__flow_pairs_free(weft__flow_pairs *p)
{
	if (p == NULL)
		return;
	free(p->slots);
	free(p);
}
