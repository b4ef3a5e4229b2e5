/* SPDX-License-Identifier: MIT */
/*
 * formats/heph/heph_kinds.c - the event kinds of a Heph trace
 * (weft/schema.h), gathered by the open scan: one kind per event
 * description, in the order the file first has them, with the attributes
 * of its first event as fields. Heph writes attributes per event, so the
 * same description may carry others elsewhere: every field is marked
 * variable, and so is the list.
 *
 * Cost on the scan: the description of each event is compared with the
 * one a small cache of recent descriptions holds for its length and end
 * bytes; a miss is looked up by hash, and only a description never seen
 * decodes its attributes.
 */
#include <stdlib.h>
#include <string.h>

#include "formats/heph/heph_internal.h"

/* The fields of a new kind from its first event's attributes. */
static int kind_fields(weft_trace *trace, const heph_event_packet *ev, uint64_t offset,
		       weft_event_schema *k)
{
	weft_field fields[64];
	weft_event e = { .offset = offset, .flags = WEFT_EVENT_INTERVAL | WEFT_EVENT_BIG_ENDIAN,
			 .payload = ev->attrs, .payload_size = ev->attrs_size };
	int n = weft__heph_event_fields(trace, &e, fields, 64);
	if (n <= 0) /* none, or attributes the scan will report */
		return 0;
	size_t count = n < 64 ? (size_t)n : 64;
	weft_field_schema *f = calloc(count, sizeof *f);
	if (f == NULL)
		return -1;
	k->fields = f;
	for (size_t i = 0; i < count; i++) {
		char *name = malloc(fields[i].name_len + 1u);
		if (name == NULL)
			return -1;
		memcpy(name, fields[i].name, fields[i].name_len);
		name[fields[i].name_len] = '\0';
		f[i] = (weft_field_schema){ .name = name, .type = fields[i].type,
					    .is_array = fields[i].is_array, .variable = 1 };
		k->field_count = i + 1;
	}
	return 0;
}

/* A new kind, index `index` of the names table. -1 when out of memory. */
static int kind_add(heph_kinds *k, weft_trace *trace, size_t index,
		    const heph_event_packet *ev, uint64_t offset)
{
	if (weft__array_grow((void **)&k->schemas, &k->cap, index + 1, sizeof *k->schemas) < 0)
		return -1;
	weft_event_schema *s = &k->schemas[index];
	*s = (weft_event_schema){ .code = weft__strtab_text(&k->names, index),
				  .role = WEFT_ROLE_INTERVAL, .variable_fields = 1 };
	k->count = index + 1;
	return ev != NULL ? kind_fields(trace, ev, offset, s) : 0;
}

/* The slot of a description in the cache of recent ones. */
static inline size_t recent_slot(const heph_event_packet *ev)
{
	size_t n = ev->desc_len;
	unsigned last = n > 0 ? ev->desc[n - 1] : 0, first = n > 0 ? ev->desc[0] : 0;
	return (n * 7 + first * 3 + last) & 63;
}

int weft__heph_kind_note(heph_kinds *k, weft_trace *trace, const heph_event_packet *ev,
			 uint64_t offset)
{
	uint32_t *recent = &k->recent[recent_slot(ev)];
	if (*recent != 0) {
		size_t i = *recent - 1;
		if (k->names.lengths[i] == ev->desc_len &&
		    memcmp(k->names.texts[i], ev->desc, ev->desc_len) == 0)
			return 0;
	}
	size_t index;
	int added = weft__strtab_intern(&k->names, (const char *)ev->desc, ev->desc_len, &index);
	if (added < 0 || (added == 1 && kind_add(k, trace, index, ev, offset) < 0))
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET,
				   "out of memory for the event kinds");
	if (index < UINT32_MAX - 1)
		*recent = (uint32_t)(index + 1);
	return 0;
}

/* A copy of a kind's fields for another table; -1 when out of memory. */
static int copy_fields(weft_event_schema *to, const weft_event_schema *from)
{
	if (from->field_count == 0)
		return 0;
	weft_field_schema *f = calloc(from->field_count, sizeof *f);
	if (f == NULL)
		return -1;
	to->fields = f;
	for (size_t i = 0; i < from->field_count; i++) {
		f[i] = from->fields[i];
		if ((f[i].name = strdup(from->fields[i].name)) == NULL)
			return -1;
		to->field_count = i + 1;
	}
	return 0;
}

int weft__heph_kinds_merge(heph_kinds *into, const heph_kinds *from)
{
	for (size_t i = 0; i < from->count; i++) {
		const char *name = weft__strtab_text(&from->names, i);
		size_t index;
		int added = weft__strtab_intern(&into->names, name, from->names.lengths[i],
						&index);
		if (added < 0 || (added == 1 && (kind_add(into, NULL, index, NULL, 0) < 0 ||
						 copy_fields(&into->schemas[index],
							     &from->schemas[i]) < 0)))
			return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET,
					   "out of memory for the event kinds");
	}
	return 0;
}

void weft__heph_kinds_free(heph_kinds *k)
{
	for (size_t i = 0; i < k->count; i++) {
		for (size_t f = 0; f < k->schemas[i].field_count; f++)
			free((char *)k->schemas[i].fields[f].name);
		free((void *)k->schemas[i].fields);
	}
	free(k->schemas);
	weft__strtab_free(&k->names);
	memset(k, 0, sizeof *k);
}

size_t weft__heph_event_schemas(const weft_trace *trace, const weft_event_schema **out)
{
	const heph_data *d = trace->backend_data;
	*out = d != NULL ? d->kinds.schemas : NULL;
	return d != NULL ? d->kinds.count : 0;
}
