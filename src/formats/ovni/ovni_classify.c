/* SPDX-License-Identifier: MIT */
/*
 * formats/ovni/ovni_classify.c - what an ovni event is on a timeline
 * (weft_event_classify()), for the viewers and converters:
 *   - enter/leave events of the signature table open and close spans on
 *     a channel per model and category ("nosv VT": the task bodies,
 *     "nosv VA": the API calls), which nest within a channel only;
 *   - thread execute/resume (OHx, OHr) and pause/end (OHp, OHe) open and
 *     close a "running" span;
 *   - task execute/resume (nosv VTx/VTr, nanos6 6Tx/6Tr) and end/pause
 *     (VTe/VTp, 6Te/6Tp), point events in the table, open and close the
 *     span of the task (pair key: the task id) on the "<model> VT" channel,
 *     named "<model> task";
 *   - marks: OM[ / OM] of a "stack" mark open and close a span on a
 *     channel named with the mark's title, named with the value's label;
 *     OM= of a "single" mark sets a counter named with the title. Titles
 *     and labels come from the processes' metadata ("ovni.mark").
 * Everything else is a point event.
 */
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/ovni/ovni_internal.h"

/* Channel and span names of the signatures, built once. */
#define NAME_MAX_LEN 48
typedef struct signature_names {
	char channel[NAME_MAX_LEN]; /* "nosv VT" */
	/* The channel text of the first signature of the same model and
	 * category: one address per channel, so that the view finds the
	 * timeline of a leave by address, like its enter's. */
	const char *channel_ref;
	char name[NAME_MAX_LEN];    /* "nosv VTx" */
	const char *model;          /* "nosv" */
	uint32_t name_len;
	weft_event_role role;       /* ENTER/LEAVE when the pair is known */
	uint64_t pair_key;          /* the enter's MCV */
} signature_names;

static signature_names *names;
static pthread_once_t names_once = PTHREAD_ONCE_INIT;
/* Set once the table is built: later calls skip pthread_once. */
static _Atomic int names_ready;

static const char RUNNING[] = "running";
static const char THREAD_CATEGORY[] = "ovni";

/* The 3 MCV characters as a pair key. */
static uint64_t mcv_pair_key(const char *mcv)
{
	return ((uint64_t)(unsigned char)mcv[0] << 16) |
	       ((uint64_t)(unsigned char)mcv[1] << 8) | (unsigned char)mcv[2];
}

/*
 * Fills the name table (first classification, any thread): names, and
 * the role of the signatures whose pair is known (the others are points).
 */
static void names_build(void)
{
	size_t n = weft_ovni_signature_count();

	/* Builds the signature table: classification reads it inline. */
	(void)weft__ovni_signature_index((const unsigned char *)"OHx");
	names = calloc(n, sizeof *names);
	for (size_t i = 0; names != NULL && i < n; i++) {
		const weft_ovni_signature *s = weft_ovni_signature_at(i);
		signature_names *m = &names[i];
		snprintf(m->channel, NAME_MAX_LEN, "%s %.2s", s->model, s->mcv);
		snprintf(m->name, NAME_MAX_LEN, "%s %s", s->model, s->mcv);
		m->name_len = (uint32_t)strlen(m->name);
		m->model = s->model;
		m->channel_ref = m->channel;
		for (size_t j = 0; j < i; j++)
			if (strcmp(names[j].channel, m->channel) == 0) {
				m->channel_ref = names[j].channel_ref;
				break;
			}
		m->role = WEFT_ROLE_POINT;
		if (s->partner[0] != '\0' && strcmp(s->role, "enter") == 0) {
			m->role = WEFT_ROLE_ENTER;
			m->pair_key = mcv_pair_key(s->mcv);
		} else if (s->partner[0] != '\0' && strcmp(s->role, "leave") == 0) {
			m->role = WEFT_ROLE_LEAVE;
			m->pair_key = mcv_pair_key(s->partner);
		}
	}
}

/* ---- Marks ---------------------------------------------------------------- */

/* The mark of `type`, or NULL. */
static const ovni_mark *find_mark(const ovni_data *d, int64_t type)
{
	for (size_t i = 0; i < d->mark_count; i++)
		if (d->marks[i].type == type)
			return &d->marks[i];
	return NULL;
}

/* The label of `value` in `mark`, or NULL. */
static const char *find_label(const ovni_mark *mark, int64_t value)
{
	for (size_t i = 0; i < mark->label_count; i++)
		if (mark->labels[i].value == value)
			return mark->labels[i].label;
	return NULL;
}

/* Parses a decimal JSON key ("12"); 0 on success. */
static int parse_key(const char *key, int64_t *out)
{
	char *end;
	long long v = strtoll(key, &end, 10);

	if (end == key || *end != '\0')
		return -1;
	*out = v;
	return 0;
}

/* Adds the labels of one mark description ({"1": "Blue", ...}). */
static int add_labels(weft_trace *t, ovni_mark *mark, json_t *labels)
{
	const char *key;
	json_t *value;
	size_t n = json_object_size(labels);

	if (n == 0)
		return 0;
	mark->labels = calloc(n, sizeof *mark->labels);
	if (mark->labels == NULL)
		return WEFT_ENOMEM;
	json_object_foreach(labels, key, value) {
		int64_t v;
		if (!json_is_string(value) || parse_key(key, &v) != 0)
			continue;
		const char *label = weft__trace_strdup(t, json_string_value(value));
		if (label == NULL)
			return WEFT_ENOMEM;
		mark->labels[mark->label_count].value = v;
		mark->labels[mark->label_count++].label = label;
	}
	return 0;
}

/* Adds one mark type unless it is known already (the first one counts). */
static int add_mark(weft_trace *t, ovni_data *d, const char *key, json_t *desc)
{
	int64_t type;
	json_t *title = json_object_get(desc, "title");

	if (parse_key(key, &type) != 0 || !json_is_string(title) || find_mark(d, type))
		return 0;
	ovni_mark *grown = realloc(d->marks, (d->mark_count + 1) * sizeof *grown);
	if (grown == NULL)
		return WEFT_ENOMEM;
	d->marks = grown;
	ovni_mark *m = &d->marks[d->mark_count++];
	memset(m, 0, sizeof *m);
	m->type = type;
	m->title = weft__trace_strdup(t, json_string_value(title));
	json_t *chan = json_object_get(desc, "chan_type");
	m->stack = json_is_string(chan) && strcmp(json_string_value(chan), "stack") == 0;
	if (m->title == NULL)
		return WEFT_ENOMEM;
	return add_labels(t, m, json_object_get(desc, "labels"));
}

/* The marks described in one node's metadata text. */
static int add_node_marks(weft_trace *t, ovni_data *d, const char *text)
{
	json_t *root = json_loads(text, 0, NULL);
	json_t *marks = json_object_get(json_object_get(root, "ovni"), "mark");
	const char *key;
	json_t *desc;
	int rc = 0;

	json_object_foreach(marks, key, desc) {
		if (rc == 0 && json_is_object(desc))
			rc = add_mark(t, d, key, desc);
	}
	json_decref(root);
	return rc;
}

/*
 * Reads the mark titles and labels of every node that has some (a cheap
 * text search first: most traces have none). Mark types are the same in
 * every process of a run; where two disagree, the first one counts.
 */
int weft__ovni_marks_load(weft_trace *t, ovni_data *d)
{
	for (size_t i = 0; i < t->node_count; i++) {
		const char *text = t->nodes[i].metadata_json;
		if (text == NULL || strstr(text, "\"mark\"") == NULL)
			continue;
		int rc = add_node_marks(t, d, text);
		if (rc < 0)
			return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	}
	return 0;
}

void weft__ovni_marks_free(ovni_data *d)
{
	for (size_t i = 0; i < d->mark_count; i++)
		free(d->marks[i].labels);
	free(d->marks);
	d->marks = NULL;
	d->mark_count = 0;
}

/* OM[, OM] and OM= (fields: i64 value, i32 type). */
static void classify_mark(const weft_trace *t, const weft_event *ev, weft_event_class *out)
{
	weft_field f[2];
	const ovni_data *d = t->backend_data;

	if (weft__ovni_event_fields(t, ev, f, 2) != 2)
		return;
	const ovni_mark *mark = find_mark(d, f[1].v.i);
	if (mark == NULL)
		return;
	char kind = ev->code[2];
	out->category = THREAD_CATEGORY;
	out->channel = mark->title;
	out->pair_key = (uint64_t)f[1].v.i;
	if (kind == '=' && !mark->stack) {
		out->role = WEFT_ROLE_COUNTER;
		out->name = mark->title;
		out->value = (double)f[0].v.i;
	} else if (kind == '[' && mark->stack) {
		out->role = WEFT_ROLE_ENTER;
		const char *label = find_label(mark, f[0].v.i);
		out->name = label != NULL ? label : mark->title;
	} else if (kind == ']' && mark->stack) {
		out->role = WEFT_ROLE_LEAVE;
	}
}

/* ---- Classification --------------------------------------------------------- */

/* OHx/OHr open the "running" span, OHp/OHe close it; 1 when handled. */
static int classify_thread_state(const char *mcv, weft_event_class *out)
{
	if (mcv[0] != 'O' || mcv[1] != 'H')
		return 0;
	if (mcv[2] == 'x' || mcv[2] == 'r')
		out->role = WEFT_ROLE_ENTER;
	else if (mcv[2] == 'p' || mcv[2] == 'e')
		out->role = WEFT_ROLE_LEAVE;
	else
		return 0;
	out->channel = RUNNING;
	out->name = RUNNING;
	out->name_len = sizeof RUNNING - 1;
	out->category = THREAD_CATEGORY;
	out->pair_key = 1;
	return 1;
}

/* Task bodies: execute/resume open, end/pause close; 1 when handled. */
static int classify_task(const weft_trace *t, const weft_event *ev, int index,
			 weft_event_class *out)
{
	static const char task_name[][16] = { "nosv task", "nanos6 task" };
	static const uint32_t task_name_len[] = { sizeof "nosv task" - 1,
						  sizeof "nanos6 task" - 1 };
	const char *mcv = ev->code;

	(void)t;
	if ((mcv[0] != 'V' && mcv[0] != '6') || mcv[1] != 'T')
		return 0;
	if (mcv[2] == 'x' || mcv[2] == 'r')
		out->role = WEFT_ROLE_ENTER;
	else if (mcv[2] == 'e' || mcv[2] == 'p')
		out->role = WEFT_ROLE_LEAVE;
	else
		return 0;
	/* The task id is the first u32 of the payload (the signature's
	 * first field): read in place, the fields are decoded later. */
	if ((ev->flags & WEFT_EVENT_JUMBO) || ev->payload_size < 4) {
		out->role = WEFT_ROLE_POINT;
		return 0;
	}
	out->category = names[index].model;
	out->channel = names[index].channel_ref;
	out->name = task_name[mcv[0] == '6'];
	out->name_len = task_name_len[mcv[0] == '6'];
	out->pair_key = ovni_load32(ev->payload, (ev->flags & WEFT_EVENT_BIG_ENDIAN) != 0);
	return 1;
}

/* Enter/leave by the signature table, when the pair is known. */
static void classify_signature(int index, weft_event_class *out)
{
	const signature_names *m = &names[index];

	out->category = m->model;
	out->name = m->name;
	out->name_len = m->name_len;
	if (m->role == WEFT_ROLE_POINT)
		return;
	out->role = m->role;
	out->pair_key = m->pair_key;
	out->channel = m->channel_ref;
}

void weft__ovni_event_classify(const weft_trace *t, const weft_event *ev,
			       weft_event_class *out)
{
	if (ev->code_len != 3)
		return;
	if (!atomic_load_explicit(&names_ready, memory_order_acquire)) {
		pthread_once(&names_once, names_build);
		atomic_store_explicit(&names_ready, 1, memory_order_release);
	}
	if (names == NULL)
		return;
	if (classify_thread_state(ev->code, out))
		return;
	if (ev->code[0] == 'O' && ev->code[1] == 'M') {
		classify_mark(t, ev, out);
		return;
	}
	int index = ovni_signature_index_built((const unsigned char *)ev->code);
	if (index >= 0 && !classify_task(t, ev, index, out))
		classify_signature(index, out);
}
