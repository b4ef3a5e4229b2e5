/* SPDX-License-Identifier: MIT */
/*
 * formats/otf2/otf2_defs.c - the tables of OTF2 definitions weft keeps:
 * appended while libotf2 reads the global definitions, then sorted by
 * reference once, duplicates removed (the first definition wins, as
 * EZTrace 2.0 defines its group 0 twice), looked up by binary search or,
 * when the references are dense, by a direct index.
 */
#include <stdlib.h>
#include <string.h>

#include "formats/otf2/otf2_internal.h"

/* A direct index is built when the largest reference is below this... */
#define DIRECT_MAX ((uint64_t)1 << 22)

static const char *const kind_names[OTF2_DEF_KIND_COUNT] = {
	"string", "paradigm", "attribute", "system tree node", "location group",
	"location", "region", "group", "communicator", "parameter", "metric member",
	"metric class", "metric instance", "rma window", "calling context",
	"io handle", "io file"
};

const char *weft__otf2_def_kind_name(otf2_def_kind kind)
{
	return kind < OTF2_DEF_KIND_COUNT ? kind_names[kind] : "definition";
}

int weft__otf2_def_add(otf2_def_table *t, const otf2_def *def)
{
	if (weft__array_grow((void **)&t->defs, &t->cap, t->count + 1, sizeof *t->defs) < 0)
		return WEFT_ENOMEM;
	otf2_def *d = &t->defs[t->count];
	*d = *def;
	d->members = NULL;
	d->text = NULL;
	d->seq = (uint32_t)t->count;
	if (def->member_count > 0) {
		d->members = malloc(def->member_count * sizeof *d->members);
		if (d->members == NULL)
			return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
		memcpy(d->members, def->members, def->member_count * sizeof *d->members);
	}
	if (def->text != NULL) {
		d->text = strdup(def->text);
		if (d->text == NULL) {
			free(d->members);
			return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
		}
	}
	t->count++;
	return 0;
}

static int by_ref_then_seq(const void *a, const void *b)
{
	const otf2_def *x = a, *y = b;
	if (x->ref != y->ref)
		return x->ref < y->ref ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static void def_free(otf2_def *d)
{
	free(d->members);
	free(d->text);
}

int weft__otf2_def_finish(otf2_def_table *t, otf2_def_kind kind,
			  void (*on_duplicate)(void *ctx, otf2_def_kind kind, uint64_t ref),
			  void *ctx)
{
	if (t->count == 0)
		return 0;
	qsort(t->defs, t->count, sizeof *t->defs, by_ref_then_seq);
	size_t kept = 1;
	for (size_t i = 1; i < t->count; i++) {
		if (t->defs[i].ref == t->defs[kept - 1].ref) {
			on_duplicate(ctx, kind, t->defs[i].ref);
			def_free(&t->defs[i]);
			continue;
		}
		t->defs[kept++] = t->defs[i];
	}
	t->count = kept;
	uint64_t top = t->defs[kept - 1].ref;
	if (top < DIRECT_MAX && top <= 8 * (uint64_t)kept + 1024) {
		t->direct = calloc(top + 1, sizeof *t->direct);
		if (t->direct == NULL)
			return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
		t->direct_count = top + 1;
		for (size_t i = 0; i < kept; i++)
			t->direct[t->defs[i].ref] = (uint32_t)i + 1;
	}
	return 0;
}

const otf2_def *weft__otf2_def_find(const otf2_def_table *t, uint64_t ref)
{
	if (t->direct != NULL) {
		if (ref >= t->direct_count || t->direct[ref] == 0)
			return NULL;
		return &t->defs[t->direct[ref] - 1];
	}
	size_t lo = 0, hi = t->count;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (t->defs[mid].ref < ref)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < t->count && t->defs[lo].ref == ref ? &t->defs[lo] : NULL;
}

void weft__otf2_def_table_free(otf2_def_table *t)
{
	for (size_t i = 0; i < t->count; i++)
		def_free(&t->defs[i]);
	free(t->defs);
	free(t->direct);
	memset(t, 0, sizeof *t);
}

const char *weft__otf2_string(const otf2_trace *ot, uint32_t ref)
{
	const otf2_def *d = weft__otf2_def_find(&ot->defs[OTF2_DEF_STRING], ref);
	return d ? d->text : NULL;
}

const char *weft__otf2_def_name(const otf2_trace *ot, otf2_def_kind kind, uint64_t ref)
{
	const otf2_def *d = weft__otf2_def_find(&ot->defs[kind], ref);
	return d ? weft__otf2_string(ot, d->name) : NULL;
}
