/* SPDX-License-Identifier: MIT */
/*
 * emu/pcf.c - the .pcf of an emulated trace (docs/emulation.md, section
 * 1.5): ovniemu's fixed head, then one block per event type in the order
 * the types were declared (the thread's own types, then each enabled
 * model's channels), each with its labelled values in the order they were
 * added.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "emu/pcf.h"

/* Duplicates `s` (NULL without memory). */
static char *dup_text(const char *s)
{
	size_t n = strlen(s) + 1;
	char *d = malloc(n);
	if (d != NULL)
		memcpy(d, s, n);
	return d;
}

weft__emu_pcf_type *weft__emu_pcf_type_find(weft__emu_pcf *p, uint32_t type)
{
	for (size_t i = 0; i < p->ntypes; i++)
		if (p->types[i].type == type)
			return &p->types[i];
	return NULL;
}

/*
 * Declares type `type` named `name` (its values come later); a type
 * declared again keeps its first name. NULL without memory.
 */
weft__emu_pcf_type *weft__emu_pcf_type_add(weft__emu_pcf *p, uint32_t type, const char *name)
{
	weft__emu_pcf_type *t = weft__emu_pcf_type_find(p, type);
	if (t != NULL)
		return t;
	if (p->ntypes == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 16;
		weft__emu_pcf_type *g = realloc(p->types, cap * sizeof *g);
		if (g == NULL)
			return NULL;
		p->types = g;
		p->cap = cap;
	}
	t = &p->types[p->ntypes];
	memset(t, 0, sizeof *t);
	t->type = type;
	if ((t->name = dup_text(name)) == NULL)
		return NULL;
	p->ntypes++;
	return t;
}

const char *weft__emu_pcf_find(const weft__emu_pcf_type *t, int64_t value)
{
	for (size_t i = 0; i < t->nvalues; i++)
		if (t->values[i].value == value)
			return t->values[i].text;
	return NULL;
}

int weft__emu_pcf_add(weft__emu_pcf_type *t, int64_t value, const char *text)
{
	if (weft__emu_pcf_find(t, value) != NULL)
		return 0;
	if (t->nvalues == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 8;
		weft__emu_pcf_value *g = realloc(t->values, cap * sizeof *g);
		if (g == NULL)
			return WEFT_ENOMEM;
		t->values = g;
		t->cap = cap;
	}
	char *copy = dup_text(text);
	if (copy == NULL)
		return WEFT_ENOMEM;
	t->values[t->nvalues++] = (weft__emu_pcf_value){ value, copy };
	return 0;
}

/* Adds a fixed list of labels (ending with a NULL text). */
int weft__emu_pcf_add_list(weft__emu_pcf_type *t, const weft__emu_label *labels)
{
	for (const weft__emu_label *l = labels; l != NULL && l->text != NULL; l++)
		if (weft__emu_pcf_add(t, l->value, l->text) < 0)
			return WEFT_ENOMEM;
	return 0;
}

void weft__emu_pcf_clear(weft__emu_pcf *p)
{
	for (size_t i = 0; i < p->ntypes; i++) {
		for (size_t j = 0; j < p->types[i].nvalues; j++)
			free(p->types[i].values[j].text);
		free(p->types[i].values);
		free(p->types[i].name);
	}
	free(p->types);
	memset(p, 0, sizeof *p);
}

/* A growing text. */
typedef struct text {
	char *s;
	size_t len, cap;
	int failed;
} text;

/* Appends printf-formatted text. */
static void put(text *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(text *b, const char *fmt, ...)
{
	va_list ap;
	if (b->failed)
		return;
	va_start(ap, fmt);
	int n = vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
	va_end(ap);
	if (n >= 0 && (size_t)n >= b->cap - b->len) {
		size_t cap = (b->cap + (size_t)n) * 2;
		char *g = realloc(b->s, cap);
		if (g == NULL) {
			b->failed = 1;
			return;
		}
		b->s = g;
		b->cap = cap;
		va_start(ap, fmt);
		n = vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
		va_end(ap);
	}
	if (n < 0)
		b->failed = 1;
	else
		b->len += (size_t)n;
}

/*
 * The .pcf text: the head, then per type "EVENT_TYPE", "0 <type padded to
 * 10> <name>", "VALUES" and "<value padded to 4> <label>" lines, blocks
 * separated by two blank lines (ovniemu's pv/pcf.c layout). malloc'd.
 */
char *weft__emu_pcf_render(const weft__emu_pcf *p)
{
	text b = { malloc(4096), 0, 4096, 0 };
	if (b.s == NULL)
		return NULL;
	b.s[0] = '\0';
	const char *head = weft__emu_pcf_head();
	/* the head ends with the two blank lines that precede a block */
	put(&b, "%.*s", (int)(strlen(head) - 2), head);
	for (size_t i = 0; i < p->ntypes; i++) {
		const weft__emu_pcf_type *t = &p->types[i];
		put(&b, "\n\nEVENT_TYPE\n0 %-10" PRIu32 " %s\nVALUES\n", t->type, t->name);
		for (size_t j = 0; j < t->nvalues; j++)
			put(&b, "%-4" PRId64 " %s\n", t->values[j].value, t->values[j].text);
	}
	if (b.failed) {
		free(b.s);
		return NULL;
	}
	return b.s;
}
