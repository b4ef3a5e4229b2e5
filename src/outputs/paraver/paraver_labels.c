/* SPDX-License-Identifier: MIT */
/*
 * outputs/paraver/paraver_labels.c - names become numbers: the label
 * table (types, values of span names, states; open addressing by key and
 * by number, bounded by WEFT__PARAVER_MAX_LABEL_BYTES) and the hashing
 * of names into the documented type and value ranges (docs/paraver.md).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "outputs/paraver/paraver_internal.h"

/* ---- Hashing --------------------------------------------------------------------- */

/* FNV-1a, 64 bits, of n bytes: the documented source of type numbers. */
static uint64_t fnv1a(const char *s, size_t n)
{
	uint64_t h = 14695981039346656037ull;

	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)s[i];
		h *= 1099511628211ull;
	}
	return h;
}

/* Slot hash of a key in a namespace. */
static uint64_t key_slot_hash(uint32_t ns, const char *key, size_t len)
{
	return fnv1a(key, len) ^ ((uint64_t)ns * 0x9e3779b97f4a7c15ull);
}

/* Slot hash of a number in a namespace. */
static uint64_t number_slot_hash(uint32_t ns, int64_t number)
{
	uint64_t x = (uint64_t)number * 0xff51afd7ed558ccdull ^ ((uint64_t)ns << 29);

	x ^= x >> 33;
	return x * 0xc4ceb9fe1a85ec53ull;
}

/* ---- Label table -------------------------------------------------------------------- */

/* The label of (ns, key), or NULL. */
label *weft__pv_label_by_key(label_table *t, uint32_t ns, const char *key, size_t len)
{
	if (t->slots == 0)
		return NULL;
	size_t mask = t->slots - 1;
	for (size_t i = key_slot_hash(ns, key, len) & mask;; i = (i + 1) & mask) {
		uint32_t s = t->by_key[i];
		if (s == 0)
			return NULL;
		label *l = &t->items[s - 1];
		if (l->key_ns == ns && l->key_len == len && memcmp(l->key, key, len) == 0)
			return l;
	}
}

/* 1 when `number` is taken in namespace ns. */
static int number_used(const label_table *t, uint32_t ns, int64_t number)
{
	if (t->slots == 0)
		return 0;
	size_t mask = t->slots - 1;
	for (size_t i = number_slot_hash(ns, number) & mask;; i = (i + 1) & mask) {
		uint32_t s = t->by_number[i];
		if (s == 0)
			return 0;
		const label *l = &t->items[s - 1];
		if (l->number_ns == ns && l->number == number)
			return 1;
	}
}

/* Puts item index `idx` (0-based) into both indexes. */
static void index_insert(label_table *t, uint32_t idx)
{
	size_t mask = t->slots - 1;
	const label *l = &t->items[idx];
	size_t i = key_slot_hash(l->key_ns, l->key, l->key_len) & mask;

	while (t->by_key[i] != 0)
		i = (i + 1) & mask;
	t->by_key[i] = idx + 1;
	i = number_slot_hash(l->number_ns, l->number) & mask;
	while (t->by_number[i] != 0)
		i = (i + 1) & mask;
	t->by_number[i] = idx + 1;
}

/* Doubles the indexes (kept at most half full). 0 or -1. */
static int index_grow(label_table *t)
{
	size_t slots = t->slots ? t->slots * 2 : 64;
	uint32_t *k = calloc(slots, sizeof *k), *n = calloc(slots, sizeof *n);

	if (k == NULL || n == NULL) {
		free(k);
		free(n);
		return -1;
	}
	free(t->by_key);
	free(t->by_number);
	t->by_key = k;
	t->by_number = n;
	t->slots = slots;
	for (size_t i = 0; i < t->count; i++)
		index_insert(t, (uint32_t)i);
	return 0;
}

/* A printable copy of `s` for the .pcf: one line, at most LABEL_TEXT_MAX. */
char *weft__pv_label_text_copy(const char *s, size_t len)
{
	if (len > LABEL_TEXT_MAX)
		len = LABEL_TEXT_MAX;
	char *c = malloc(len + 1);
	if (c == NULL)
		return NULL;
	for (size_t i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)s[i];
		c[i] = ch < 0x20 || ch == 0x7f ? ' ' : (char)ch;
	}
	c[len] = '\0';
	return c;
}

/*
 * Adds a label: key bytes (copied), its number and its text (copied;
 * NULL: the key). Returns it, or NULL on ENOMEM.
 */
label *weft__pv_label_add(label_table *t, uint32_t key_ns, uint32_t number_ns,
			  const char *key, size_t len, int64_t number, const char *text)
{
	if ((t->count + 1) * 2 > t->slots && index_grow(t) != 0)
		return NULL;
	if (weft__array_grow((void **)&t->items, &t->cap, t->count + 1, sizeof *t->items) < 0)
		return NULL;
	label *l = &t->items[t->count];
	memset(l, 0, sizeof *l);
	l->key = malloc(len + 1);
	l->text = text ? weft__pv_label_text_copy(text, strlen(text))
		       : weft__pv_label_text_copy(key, len);
	if (l->key == NULL || l->text == NULL) {
		free(l->key);
		free(l->text);
		return NULL;
	}
	memcpy(l->key, key, len);
	l->key[len] = '\0';
	l->key_len = (uint32_t)len;
	l->key_ns = key_ns;
	l->number_ns = number_ns;
	l->number = number;
	t->bytes += sizeof *l + 2 * len + 16 * sizeof(uint32_t);
	index_insert(t, (uint32_t)t->count++);
	return l;
}

/* The first free number at or after the hashed place of `key` in [first, first + count). */
static int64_t hashed_number(const label_table *t, uint32_t ns, const char *key,
			     size_t len, int64_t first, uint64_t count)
{
	uint64_t off = fnv1a(key, len) % count;

	for (uint64_t i = 0; i < count; i++) {
		int64_t n = first + (int64_t)((off + i) % count);
		if (!number_used(t, ns, n))
			return n;
	}
	return -1;
}

/* ---- Numbers of names ------------------------------------------------------------------ */

/* 1 when another name would take the label table past its budget. */
static int over_budget(weft__paraver_writer *w, size_t len)
{
	if (w->labels.bytes + len * 2 + 256 <= WEFT__PARAVER_MAX_LABEL_BYTES)
		return 0;
	w->stats.labels_dropped++;
	return 1;
}

/* The fixed type `type` with its label (added once). 0 or -1 (ENOMEM). */
int weft__pv_fixed_type(weft__paraver_writer *w, uint32_t type, const char *text)
{
	char key[16];
	int n = snprintf(key, sizeof key, "%u", type);

	if (weft__pv_label_by_key(&w->labels, KEY_FIXED, key, (size_t)n) != NULL)
		return 0;
	return weft__pv_label_add(&w->labels, KEY_FIXED, NS_TYPES, key, (size_t)n, type, text)
		       ? 0 : -1;
}

/*
 * The type of a name of kind key_ns (KEY_SPAN, KEY_INSTANT, KEY_COUNTER)
 * in its range; *created tells a new one. 0 on ENOMEM (failure recorded).
 */
uint32_t weft__pv_type_of(weft__paraver_writer *w, uint32_t key_ns, uint32_t first,
			  const char *key, size_t len, const char *text, label **created)
{
	label *l = weft__pv_label_by_key(&w->labels, key_ns, key, len);

	*created = NULL;
	if (l != NULL)
		return (uint32_t)l->number;
	if (over_budget(w, len)) {
		if (weft__pv_fixed_type(w, TYPE_OTHER, OTHER_LABEL) != 0)
			goto nomem;
		return TYPE_OTHER;
	}
	int64_t n = hashed_number(&w->labels, NS_TYPES, key, len, first, RANGE_SIZE);
	l = weft__pv_label_add(&w->labels, key_ns, NS_TYPES, key, len, n, text);
	if (l == NULL)
		goto nomem;
	*created = l;
	return (uint32_t)n;
nomem:
	weft__pv_fail_nomem(w, "type labels");
	return 0;
}

/* The shared value of the names past the label budget in `type`. */
int64_t weft__pv_other_value(weft__paraver_writer *w, uint32_t type)
{
	if (weft__pv_label_by_key(&w->labels, type, "", 0) == NULL &&
	    weft__pv_label_add(&w->labels, type, type, "", 0, VALUE_OTHER, OTHER_LABEL) == NULL)
		weft__pv_fail_nomem(w, "value labels");
	return VALUE_OTHER;
}

/* The value of a span name in `type` (hashed, labelled once). */
int64_t weft__pv_value_of(weft__paraver_writer *w, uint32_t type, const char *name, size_t len)
{
	label *l = weft__pv_label_by_key(&w->labels, type, name, len);

	if (l != NULL)
		return l->number;
	if (over_budget(w, len))
		return weft__pv_other_value(w, type);
	int64_t n = hashed_number(&w->labels, type, name, len, VALUE_FIRST, VALUE_COUNT);
	if (weft__pv_label_add(&w->labels, type, type, name, len, n, NULL) == NULL)
		weft__pv_fail_nomem(w, "value labels");
	return n;
}

/* The state number of a STATE channel (1, 2, ... in first-seen order). */
uint32_t weft__pv_state_of(weft__paraver_writer *w, const char *name)
{
	size_t len = strlen(name);
	label *l = weft__pv_label_by_key(&w->labels, NS_STATES, name, len);
	char text[LABEL_TEXT_MAX + 1];

	if (l != NULL)
		return (uint32_t)l->number;
	snprintf(text, sizeof text, "%s", name);
	if (text[0] >= 'a' && text[0] <= 'z')
		text[0] = (char)(text[0] - 'a' + 'A'); /* "running" -> "Running" */
	uint32_t n = ++w->labels.states;
	if (weft__pv_label_add(&w->labels, NS_STATES, NS_STATES, name, len, n, text) == NULL)
		weft__pv_fail_nomem(w, "state labels");
	return n;
}
