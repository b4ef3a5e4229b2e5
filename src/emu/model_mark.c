/* SPDX-License-Identifier: MIT */
/*
 * emu/model_mark.c - marks (docs/emulation.md, section 2): every thread's
 * metadata may declare mark types under ovni.mark ("<type>": { title,
 * chan_type single or stack, labels { "<value>": label } }); threads that
 * declare the same type must agree on its title and channel type, and on
 * the label of a value. Each type is a channel of every thread (shown
 * while the thread is active) and CPU (its running thread's), Paraver
 * type 100 + the type, written unless it repeats a null.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "core/internal.h"
#include "emu/model_mark.h"
#include "emu/pcf.h"

#define MARK_PRV_BASE 100

typedef struct mark_type {
	long type;
	int stack;
	char *title;
	weft__emu_label *labels;   /* the values declared, in order (text malloc'd) */
	size_t nlabels;
} mark_type;

struct weft__emu_mark {
	mark_type *types;          /* in the order they were first declared */
	size_t ntypes;
	weft__emu_chan_spec *chans;/* one per type, after the ovni model's own */
	uint32_t first_slot;       /* the slot of the first type's channel */
};

/* malloc'd copy of `s`, or NULL. */
static char *copy(const char *s)
{
	size_t n = strlen(s) + 1;
	char *d = malloc(n);
	return d ? memcpy(d, s, n) : NULL;
}

/* A whole decimal number, or -1 (errno-free strtoll check). */
static int parse_long(const char *s, long long *out)
{
	char *end;
	errno = 0;
	*out = strtoll(s, &end, 10);
	return errno != 0 || end == s || *end != '\0' ? -1 : 0;
}

static mark_type *find_type(weft__emu_mark *m, long type)
{
	for (size_t i = 0; i < m->ntypes; i++)
		if (m->types[i].type == type)
			return &m->types[i];
	return NULL;
}

/* Adds the label of `value` (the same label again is fine). */
static int add_label(weft__emu *e, mark_type *t, int64_t value, const char *text,
		     const char *path)
{
	for (size_t i = 0; i < t->nlabels; i++)
		if (t->labels[i].value == value) {
			if (strcmp(t->labels[i].text, text) == 0)
				return 0;
			return weft__error(WEFT_EFORMAT, path, WEFT_NO_OFFSET, "mark value %"
					   PRId64 " already defined with label %s", value,
					   t->labels[i].text);
		}
	weft__emu_label *g = realloc(t->labels, (t->nlabels + 2) * sizeof *g);
	char *c = copy(text);
	if (g != NULL)
		t->labels = g;
	if (g == NULL || c == NULL) {
		free(c);
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	}
	t->labels[t->nlabels++] = (weft__emu_label){ value, c };
	t->labels[t->nlabels] = (weft__emu_label){ 0, NULL };
	(void)e;
	return 0;
}

/* One "<type>": {...} entry of a thread's ovni.mark. */
static int parse_mark(weft__emu *e, weft__emu_mark *m, const char *key, const json_t *v,
		      const char *path)
{
	long long type;
	if (parse_long(key, &type) < 0 || type < 0 || type >= 100)
		return weft__error(WEFT_EFORMAT, path, WEFT_NO_OFFSET, "mark type \"%s\" "
				   "is not a number in [0, 100)", key);
	const char *title = json_string_value(json_object_get(v, "title"));
	const char *ctype = json_string_value(json_object_get(v, "chan_type"));
	if (title == NULL || ctype == NULL)
		return weft__error(WEFT_EFORMAT, path, WEFT_NO_OFFSET, "mark type %lld has "
				   "no title or chan_type", type);
	int stack = strcmp(ctype, "stack") == 0;
	if (!stack && strcmp(ctype, "single") != 0)
		return weft__error(WEFT_EFORMAT, path, WEFT_NO_OFFSET, "mark type %lld: "
				   "chan_type %s not understood", type, ctype);
	mark_type *t = find_type(m, (long)type);
	if (t == NULL) {
		mark_type *g = realloc(m->types, (m->ntypes + 1) * sizeof *g);
		if (g == NULL)
			return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
		m->types = g;
		t = &m->types[m->ntypes];
		*t = (mark_type){ .type = (long)type, .stack = stack, .title = copy(title) };
		if (t->title == NULL)
			return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
		m->ntypes++;
	} else if (strcmp(t->title, title) != 0 || t->stack != stack) {
		return weft__error(WEFT_EFORMAT, path, WEFT_NO_OFFSET, "mark with type %lld "
				   "already registered with another %s", type,
				   t->stack != stack ? "channel type" : "title");
	}
	const json_t *labels = json_object_get(v, "labels");
	const char *vk;
	const json_t *lv;
	json_object_foreach((json_t *)labels, vk, lv) {
		long long value;
		if (parse_long(vk, &value) < 0 || !json_is_string(lv))
			return weft__error(WEFT_EFORMAT, path, WEFT_NO_OFFSET, "mark type %lld: "
					   "label of \"%s\" is not a number and a string", type, vk);
		int rc = add_label(e, t, value, json_string_value(lv), path);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* The mark types of thread `t`'s metadata. */
static int scan_thread(weft__emu *e, weft__emu_mark *m, uint32_t t)
{
	const weft_node *n = weft_trace_node(e->trace, e->sys->threads[t].node);
	json_t *root = json_loads(n->metadata_json, 0, NULL);
	const json_t *marks = json_object_get(json_object_get(root, "ovni"), "mark");
	const char *key;
	const json_t *v;
	int rc = 0;
	json_object_foreach((json_t *)marks, key, v)
		if (rc == 0)
			rc = parse_mark(e, m, key, v, n->path);
	json_decref(root);
	return rc;
}

int weft__emu_mark_create(weft__emu *e, weft__emu_mark **out)
{
	weft__emu_mark *m = calloc(1, sizeof *m);
	*out = m;
	if (m == NULL)
		return weft__emu_fail(e, "out of memory");
	for (uint32_t t = 0; t < e->sys->nthreads; t++)
		if (scan_thread(e, m, t) < 0)
			return weft__emu_fail(e, "%s", weft_last_error());
	if (m->ntypes == 0)
		return 0;
	m->chans = calloc(m->ntypes, sizeof *m->chans);
	if (m->chans == NULL)
		return weft__emu_fail(e, "out of memory");
	for (size_t i = 0; i < m->ntypes; i++)
		m->chans[i] = (weft__emu_chan_spec){
			.name = m->types[i].title, .type = MARK_PRV_BASE + (uint32_t)m->types[i].type,
			.prefix = m->types[i].title, .labels = m->types[i].labels,
			.stack = (uint8_t)m->types[i].stack, .dup = 1,
			.track = WEFT__TRACK_ACT, .prv_flags = WEFT__PRV_SKIPDUPNULL };
	m->first_slot = weft__emu_add_chans(e, &weft__emu_model_ovni, m->chans,
					    (uint32_t)m->ntypes);
	return 0;
}

int weft__emu_mark_event(weft__emu *e, weft__emu_mark *m, const weft__emu_ev *ev)
{
	if (ev->payload_size != 12)
		return weft__emu_fail(e, "unexpected payload size %" PRIu32, ev->payload_size);
	int64_t value = weft__emu_ev_i64(ev, 0);
	long type = weft__emu_ev_i32(ev, 8);
	size_t i = 0;
	while (i < m->ntypes && m->types[i].type != type)
		i++;
	if (i == m->ntypes)
		return weft__emu_fail(e, "cannot find mark with type %ld", type);
	if (value == 0)
		return weft__emu_fail(e, "mark value cannot be zero, type %ld", type);
	weft__emu_chan *ch = &e->th[ev->thread].raw[m->first_slot + i];
	switch (ev->v) {
	case '[':
		return weft__emu_push(e, ch, value);
	case ']':
		return weft__emu_pop(e, ch, value);
	case '=':
		return weft__emu_set(e, ch, weft__emu_int(value));
	default:
		return weft__emu_fail(e, "unknown mark event value %c", ev->v);
	}
}

int weft__emu_mark_pcf(weft__emu *e, const weft__emu_mark *m, weft__emu_kind kind,
		       weft__emu_pcf *pcf)
{
	(void)e;
	(void)kind;
	for (size_t i = 0; m != NULL && i < m->ntypes; i++) {
		weft__emu_pcf_type *t = weft__emu_pcf_type_add(pcf, m->chans[i].type,
							       m->types[i].title);
		if (t == NULL || weft__emu_pcf_add_list(t, m->types[i].labels) < 0)
			return WEFT_ENOMEM;
	}
	return 0;
}

void weft__emu_mark_free(weft__emu_mark *m)
{
	if (m == NULL)
		return;
	for (size_t i = 0; i < m->ntypes; i++) {
		for (size_t j = 0; j < m->types[i].nlabels; j++)
			free((char *)m->types[i].labels[j].text);
		free(m->types[i].labels);
		free(m->types[i].title);
	}
	free(m->types);
	free(m->chans);
	free(m);
}
