/* SPDX-License-Identifier: MIT */
/*
 * outputs/convert_pallas_defs.c - `weft convert -t pallas`: small helpers,
 * the string table (every name, code and string value as a global string
 * of the output), the attribute map, the definitions (regions and
 * attributes named after what they stand for) and the location groups,
 * archives and locations made from the source's nodes and streams.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "outputs/convert_pallas.h"
#include "util/strtab.h"

/* ---- Small helpers --------------------------------------------------------------------- */

/* Reports the library's last message for a failed writer call; returns -1. */
int weft__pconv_writer_error(conv *c, const char *what, int rc)
{
	weft__convert_fail(c->report, what, rc);
	return -1;
}

/* Reports "out of memory"; returns -1. */
int weft__pconv_out_of_memory(conv *c)
{
	weft__convert_say(c->report, "out of memory");
	return -1;
}


/* ---- String table ------------------------------------------------------------------------- */

/* Doubles the table (or makes it); 0 or -1. */
static int str_table_grow(str_table *t)
{
	size_t cap = t->cap ? t->cap * 2 : 256;
	str_entry *slots = calloc(cap, sizeof *slots);
	if (slots == NULL)
		return -1;
	for (size_t i = 0; i < t->cap; i++) {
		if (t->slots[i].text == NULL)
			continue;
		size_t j = t->slots[i].hash & (cap - 1);
		while (slots[j].text != NULL)
			j = (j + 1) & (cap - 1);
		slots[j] = t->slots[i];
	}
	free(t->slots);
	t->slots = slots;
	t->cap = cap;
	return 0;
}

/* The slot of `s` (found, or the free slot where it would go). */
str_entry *weft__pconv_str_slot(const str_table *t, const char *s, uint32_t len,
			       uint64_t h)
{
	size_t j = h & (t->cap - 1);
	for (;;) {
		str_entry *e = &t->slots[j];
		if (e->text == NULL ||
		    (e->hash == h && e->len == len && memcmp(e->text, s, len) == 0))
			return e;
		j = (j + 1) & (t->cap - 1);
	}
}

/* Frees the strings and the table. */
void weft__pconv_str_free(str_table *t)
{
	for (size_t i = 0; i < t->cap; i++)
		free(t->slots[i].text);
	free(t->slots);
	memset(t, 0, sizeof *t);
}

/*
 * The global string ref of `s` (`len` bytes, no NUL inside), registered at
 * its first use: 0 with *ref set (and *text, when asked, the interned copy,
 * which stays put), or -1 after printing why. No slot of the table is
 * handed out: the next string may move them all (the table grows).
 */
int weft__pconv_intern(conv *c, const char *s, uint32_t len, uint32_t *ref,
		      const char **text)
{
	str_table *t = &c->strings;
	if ((t->count + 1) * 2 > t->cap && str_table_grow(t) < 0)
		return weft__pconv_out_of_memory(c);
	uint64_t h = weft__hash_bytes(s, len);
	str_entry *e = weft__pconv_str_slot(t, s, len, h);
	if (e->text == NULL) {
		char *copy = malloc((size_t)len + 1);
		if (copy == NULL)
			return weft__pconv_out_of_memory(c);
		memcpy(copy, s, len);
		copy[len] = '\0';
		int rc = c->target->string(c, copy, &e->ref);
		if (rc < 0) {
			free(copy);
			return weft__pconv_writer_error(c, "cannot add a string", rc);
		}
		e->text = copy;
		e->len = len;
		e->hash = h;
		t->count++;
		c->defined++;
	}
	*ref = e->ref;
	if (text != NULL)
		*text = e->text;
	return 0;
}

/* The string ref of a NUL-terminated string; 0 or -1. */
static int string_ref(conv *c, const char *s, uint32_t *ref)
{
	return weft__pconv_intern(c, s, (uint32_t)strlen(s), ref, NULL);
}

/* ---- u64 -> u32 map --------------------------------------------------------------------------- */

/* The slot index of `key` (found, or free). */
static size_t u64_map_slot(const u64_map *m, uint64_t key)
{
	size_t j = weft__hash_bytes(&key, sizeof key) & (m->cap - 1);
	while (m->keys[j] != 0 && m->keys[j] != key + 1)
		j = (j + 1) & (m->cap - 1);
	return j;
}

/* Doubles the map (or makes it); 0 or -1. */
static int u64_map_grow(u64_map *m)
{
	u64_map n = { NULL, NULL, m->cap ? m->cap * 2 : 64, m->count };
	n.keys = calloc(n.cap, sizeof *n.keys);
	n.values = calloc(n.cap, sizeof *n.values);
	if (n.keys == NULL || n.values == NULL) {
		free(n.keys);
		free(n.values);
		return -1;
	}
	for (size_t i = 0; i < m->cap; i++) {
		if (m->keys[i] == 0)
			continue;
		size_t j = u64_map_slot(&n, m->keys[i] - 1);
		n.keys[j] = m->keys[i];
		n.values[j] = m->values[i];
	}
	free(m->keys);
	free(m->values);
	*m = n;
	return 0;
}

/* The value of `key`, or NONE. */
static uint32_t u64_map_get(const u64_map *m, uint64_t key)
{
	if (m->cap == 0)
		return NONE;
	size_t j = u64_map_slot(m, key);
	return m->keys[j] != 0 ? m->values[j] : NONE;
}

/* Sets `key` (absent) to `value`; 0 or -1. */
static int u64_map_put(u64_map *m, uint64_t key, uint32_t value)
{
	if ((m->count + 1) * 2 > m->cap && u64_map_grow(m) < 0)
		return -1;
	size_t j = u64_map_slot(m, key);
	m->keys[j] = key + 1;
	m->values[j] = value;
	m->count++;
	return 0;
}

/* Frees the map. */
void weft__pconv_map_free(u64_map *m)
{
	free(m->keys);
	free(m->values);
	memset(m, 0, sizeof *m);
}

/* ---- Definitions ---------------------------------------------------------------------------- */

/*
 * The region named `name` (`len` bytes): one region per distinct name,
 * whose ref is the ref of its name string. 0 or -1.
 */
int weft__pconv_region_ref(conv *c, const char *name, uint32_t len, uint32_t *ref)
{
	if (weft__pconv_intern(c, name, len, ref, NULL) < 0)
		return -1;
	/* Its slot, found again right after: nothing can have moved it. */
	str_entry *e = weft__pconv_str_slot(&c->strings, name, len, weft__hash_bytes(name, len));
	if (!e->region) {
		int rc = c->target->region(c, *ref, *ref);
		if (rc < 0)
			return weft__pconv_writer_error(c, "cannot add a region", rc);
		e->region = 1;
		c->defined++;
	}
	return 0;
}

int weft__pconv_attribute_ref(conv *c, const char *name, uint32_t len, int type,
			      uint32_t *ref)
{
	uint32_t name_ref;
	if (weft__pconv_intern(c, name, len, &name_ref, NULL) < 0)
		return -1;
	uint64_t key = ((uint64_t)name_ref << 8) | (uint64_t)type;
	uint32_t found = u64_map_get(&c->attributes, key);
	if (found != NONE) {
		*ref = found;
		return 0;
	}
	uint32_t id = c->next_attribute;
	int rc = c->target->attribute(c, id, name_ref, type);
	if (rc < 0)
		return weft__pconv_writer_error(c, "cannot add an attribute", rc);
	if (u64_map_put(&c->attributes, key, id) < 0)
		return weft__pconv_out_of_memory(c);
	c->next_attribute++;
	c->defined++;
	*ref = id;
	return 0;
}

/* The same for a NUL-terminated name, remembered in *slot (NONE at first). */
int weft__pconv_named_attribute(conv *c, const char *name, int type, uint32_t *slot)
{
	if (*slot != NONE)
		return 0;
	return weft__pconv_attribute_ref(c, name, (uint32_t)strlen(name), type, slot);
}

/*
 * attribute_ref() for a field, through a small cache keyed by the address
 * of the field's name (the formats' names mostly stay put; a name read
 * from a file window may move: the text is compared too).
 */
int weft__pconv_field_attribute(conv *c, const weft_field *f, int type, uint32_t *ref)
{
	uintptr_t key = ((uintptr_t)f->name >> 2) ^ (uintptr_t)type;
	field_attr *e = &c->field_cache[key % FIELD_CACHE_SIZE];
	if (e->name == f->name && e->len == f->name_len && e->type == type &&
	    memcmp(e->text, f->name, f->name_len) == 0) {
		*ref = e->ref;
		return 0;
	}
	uint32_t name_ref;
	const char *text;
	if (weft__pconv_intern(c, f->name, f->name_len, &name_ref, &text) < 0 ||
	    weft__pconv_attribute_ref(c, f->name, f->name_len, type, ref) < 0)
		return -1;
	e->text = text;
	e->name = f->name;
	e->len = f->name_len;
	e->type = type;
	e->ref = *ref;
	return 0;
}

/* ---- Location groups, archives and locations ------------------------------------------- */

/* Adds a location group (a Pallas archive) after the others; 0 or -1. */
static int add_group(conv *c, uint32_t name, uint32_t parent, uint32_t *id)
{
	uint32_t g = c->group_count;
	int rc = c->target->group(c, g, name, parent);
	if (rc < 0)
		return weft__pconv_writer_error(c, "cannot add a location group", rc);
	c->group_count++;
	*id = g;
	return 0;
}

/*
 * Sets an archive's metadata: the source node's path, kind and merged
 * metadata (a JSON text), so that nothing of the hierarchy is lost.
 */
static int describe_group(conv *c, uint32_t group, const weft_node *node)
{
	int rc = c->target->group_metadata(c, group, "weft.path", node != NULL ? node->path : "");
	if (rc == 0 && node != NULL)
		rc = c->target->group_metadata(c, group, "weft.kind", node->kind);
	if (rc == 0 && node != NULL && strcmp(node->metadata_json, "{}") != 0)
		rc = c->target->group_metadata(c, group, "weft.metadata", node->metadata_json);
	return rc < 0 ? weft__pconv_writer_error(c, "cannot add metadata", rc) : 0;
}

/*
 * The location group of node `id`, made at its first use after the
 * groups of its ancestors (so that a parent always has a smaller id).
 */
static int node_group(conv *c, uint32_t id, uint32_t *out)
{
	if (c->node_group[id] != NONE) {
		*out = c->node_group[id];
		return 0;
	}
	const weft_node *node = weft_trace_node(c->trace, id);
	uint32_t parent = NONE, name, g;
	if (node->parent != WEFT_NO_PARENT && node_group(c, node->parent, &parent) < 0)
		return -1;
	if (string_ref(c, node->name, &name) < 0 || add_group(c, name, parent, &g) < 0 ||
	    describe_group(c, g, node) < 0)
		return -1;
	c->node_group[id] = g;
	*out = g;
	return 0;
}

/* The group of streams whose node has no parent, named after the trace. */
static int root_group(conv *c, uint32_t *out)
{
	if (c->root_group != NONE) {
		*out = c->root_group;
		return 0;
	}
	const char *path = weft_trace_path(c->trace);
	const char *slash = strrchr(path, '/');
	const char *base = slash != NULL && slash[1] != '\0' ? slash + 1 : path;
	uint32_t name;
	if (string_ref(c, base, &name) < 0 ||
	    add_group(c, name, NONE, &c->root_group) < 0 ||
	    describe_group(c, c->root_group, NULL) < 0)
		return -1;
	*out = c->root_group;
	return 0;
}

/* The node whose group holds selected stream `loc`'s thread, or the node count (no parent). */
static uint32_t parent_slot(const conv *c, uint32_t loc)
{
	const weft_stream_info *s = weft_trace_stream(c->trace, c->selected[loc]);
	const weft_node *node = weft_trace_node(c->trace, s->node);
	return node->parent != WEFT_NO_PARENT ? node->parent
					      : (uint32_t)weft_trace_node_count(c->trace);
}

/*
 * The location of selected stream number `loc`, named after its node, in
 * its parent's group (made with its ancestors' when new): *group and *id
 * get them. Ids run on in each group from the first id kept for it (see
 * plan_locations), so that each archive's ids are contiguous, as Pallas's
 * reader needs, and unique in the trace.
 */
int weft__pconv_add_location(conv *c, uint32_t loc, uint32_t *group, uint32_t *id)
{
	const weft_stream_info *s = weft_trace_stream(c->trace, c->selected[loc]);
	const weft_node *node = weft_trace_node(c->trace, s->node);
	uint32_t slot = parent_slot(c, loc), name;
	int rc = slot < weft_trace_node_count(c->trace) ? node_group(c, slot, group)
							 : root_group(c, group);
	if (rc < 0 || string_ref(c, node->name, &name) < 0)
		return -1;
	*id = c->next_location[slot]++;
	c->defined++;
	rc = c->target->location(c, *group, *id, name, c->selected[loc]);
	return rc < 0 ? weft__pconv_writer_error(c, "cannot add a location", rc) : 0;
}

/*
 * Keeps for each group (each parent node, and the streams without one)
 * as many location ids as it has selected streams, one run after the
 * other: Pallas 0.20 finds a thread at threads[id - first id] of its
 * archive, in an array of the archive's thread count, so ids with gaps
 * overflow it. A stream that turns out to have no selected event takes
 * no id (ids are given as threads are made).
 */
static int plan_locations(conv *c)
{
	size_t slots = weft_trace_node_count(c->trace) + 1;
	c->next_location = calloc(slots, sizeof *c->next_location);
	uint32_t *count = calloc(slots, sizeof *count);
	if (c->next_location == NULL || count == NULL) {
		free(count);
		return weft__pconv_out_of_memory(c);
	}
	for (uint32_t loc = 0; loc < c->selected_count; loc++)
		count[parent_slot(c, loc)]++;
	uint32_t first = 0;
	for (size_t k = 0; k < slots; k++) {
		c->next_location[k] = first;
		first += count[k];
	}
	free(count);
	return 0;
}

/* The source format and trace metadata, in the main file's metadata. */
static int describe_trace(conv *c)
{
	weft_format f = weft_trace_format(c->trace);
	const char *name = weft_format_name(f);
	int rc = c->target->metadata(c, "weft.source.format", name ? name : "?");
	if (rc == 0)
		rc = c->target->metadata(c, "weft.source.path", weft_trace_path(c->trace));
	const char *meta = weft_trace_metadata_json(c->trace);
	if (rc == 0 && meta != NULL && strcmp(meta, "{}") != 0)
		rc = c->target->metadata(c, "weft.source.metadata", meta);
	return rc < 0 ? weft__pconv_writer_error(c, "cannot add metadata", rc) : 0;
}

/*
 * What is defined before the events: the trace's metadata and the tables.
 * Locations and their groups come with the first event of each stream
 * (an empty Pallas thread cannot be read back: docs/convert-pallas.md).
 */
int weft__pconv_define_structure(conv *c)
{
	size_t nodes = weft_trace_node_count(c->trace);
	c->node_group = malloc((nodes ? nodes : 1) * sizeof *c->node_group);
	if (c->node_group == NULL)
		return weft__pconv_out_of_memory(c);
	for (size_t i = 0; i < nodes; i++)
		c->node_group[i] = NONE;
	c->root_group = NONE;
	for (size_t i = 0; i < PAYLOAD_CHUNKS_MAX; i++)
		c->chunk_attr[i] = NONE;
	c->code_attr = c->end_attr = c->size_attr = NONE;
	return plan_locations(c) < 0 ? -1 : describe_trace(c);
}
