/* SPDX-License-Identifier: MIT */
/*
 * test_paraver_writer.c - the Paraver sink of the view layer
 * (outputs/paraver/), driven directly with synthetic tracks and
 * events, its three files parsed back:
 *   - the header (duration, tasks and their threads), the .row names
 *     (tasks, then threads in task order, whatever the declaration
 *     order), the trace-start record;
 *   - records sorted by time, on the right row; state records of a
 *     "running" STATE track with the "Not running" gaps;
 *   - nested spans: an end shows the enclosing span's value again; the
 *     same for complete spans delivered children first (as Heph stores
 *     them), with equal starts, equal ends and a span of no length;
 *   - instants (first integer argument, or 1), counters (rounded; NaN
 *     skipped), the documented type numbers (FNV-1a of the name in the
 *     kind's range: equal names share a type across streams);
 *   - every type used is in the .pcf, every value of a labelled type has
 *     its label, and the types without values are the numeric ones;
 *   - many records in a tiny sort budget (runs spilled), the warning for
 *     more than 65535 threads in a task, names past the label budget
 *     (the shared "other" value and type), a failing output, no tracks;
 *   - the direct path (an output open for reading and writing) against
 *     the sort path on a time-ordered input: byte for byte when the
 *     window holds everything; record for record with small windows
 *     (state records written before their spans close, late ends merged
 *     at the end, a task added after the first write, equal times past
 *     the window), and when records it cannot place come after its first
 *     write (rebuilt); complete spans first take the sort path.
 */
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "outputs/paraver.h"
#include "testutil.h"

#define MAX_TYPES 64
#define MAX_VALUES 64
#define MAX_NAMES 16
#define BASE 1000000000ull /* absolute time of the first record */

/* One .prv record. */
typedef struct prv_rec {
	int kind;            /* 1 state, 2 event, 3 communication */
	unsigned task, thread;
	uint64_t time, end;  /* end: state records; the receive of a message */
	uint64_t type;       /* messages: receiver task << 16 | thread */
	int64_t value;       /* event value or state; message size */
	int64_t tag;         /* messages */
} prv_rec;

/* One EVENT_TYPE block of the .pcf. */
typedef struct pcf_type {
	uint64_t type;
	char label[160];
	int value_count;
	int64_t values[MAX_VALUES];
	char value_labels[MAX_VALUES][64];
} pcf_type;

/* The three files, parsed. */
typedef struct parsed {
	uint64_t duration;
	unsigned tasks, task_threads[MAX_NAMES];
	prv_rec *recs;
	size_t rec_count, rec_cap;
	pcf_type types[MAX_TYPES];
	int type_count;
	int64_t states[MAX_NAMES];
	char state_labels[MAX_NAMES][64];
	int state_count;
	char task_names[MAX_NAMES][64];
	char thread_names[MAX_NAMES][64];
	int task_name_count, thread_name_count, cpu_level_seen;
} parsed;

/* ---- Driving the sink ------------------------------------------------------------ */

/* Declares a track to the sink. */
static void declare(const weft__view_sink *s, uint32_t id, uint32_t parent,
		    weft__view_track_kind kind, const char *name)
{
	weft__view_track t;

	memset(&t, 0, sizeof t);
	t.id = id;
	t.parent = parent;
	t.kind = kind;
	t.pid = parent == 0 ? id : parent;
	t.tid = kind == WEFT__TRACK_PROCESS ? 0 : id;
	t.stream = kind == WEFT__TRACK_PROCESS ? -1 : (int32_t)id;
	t.name = name;
	t.channel = kind == WEFT__TRACK_THREAD || kind == WEFT__TRACK_PROCESS ? NULL : name;
	s->track(s->ctx, &t);
}

/* A track as the callbacks see it (only the id matters to the writer). */
static weft__view_track track_ref(uint32_t id)
{
	weft__view_track t;

	memset(&t, 0, sizeof t);
	t.id = id;
	return t;
}

/* An item named `name` in `category` with the given fields. */
static weft__view_item item_of(const char *name, const char *category,
			       const weft_field *args, int n)
{
	weft__view_item it;

	memset(&it, 0, sizeof it);
	it.name = name;
	it.name_len = (uint32_t)strlen(name);
	it.category = category;
	it.args = args;
	it.arg_count = n;
	return it;
}

/* Opens a span named `name` on track `id` at BASE + t. */
static void begin(const weft__view_sink *s, uint32_t id, uint64_t t, const char *name)
{
	weft__view_track tr = track_ref(id);
	weft__view_item it = item_of(name, NULL, NULL, 0);
	s->begin(s->ctx, &tr, BASE + t, &it);
}

/* Closes the innermost span of track `id` at BASE + t. */
static void end(const weft__view_sink *s, uint32_t id, uint64_t t)
{
	weft__view_track tr = track_ref(id);
	weft__view_item it = item_of("", NULL, NULL, 0);
	s->end(s->ctx, &tr, BASE + t, &it);
}

/* A complete span [BASE + t, BASE + e] named `name` on track `id`. */
static void complete(const weft__view_sink *s, uint32_t id, uint64_t t, uint64_t e,
		     const char *name)
{
	weft__view_track tr = track_ref(id);
	weft__view_item it = item_of(name, "heph", NULL, 0);
	s->complete(s->ctx, &tr, BASE + t, BASE + e, &it);
}

/* A counter value on track `id` at BASE + t. */
static void counter(const weft__view_sink *s, uint32_t id, uint64_t t, double v)
{
	weft__view_track tr = track_ref(id);
	s->counter(s->ctx, &tr, BASE + t, v);
}

/* ---- Parsing the files --------------------------------------------------------------- */

/* Appends a record to the parsed list. */
static void push_rec(parsed *p, const prv_rec *r)
{
	if (p->rec_count == p->rec_cap) {
		p->rec_cap = p->rec_cap ? p->rec_cap * 2 : 256;
		p->recs = realloc(p->recs, p->rec_cap * sizeof *p->recs);
		REQUIRE(p->recs != NULL);
	}
	p->recs[p->rec_count++] = *r;
}

/* The header line: duration, tasks and their threads (one app, node 1). */
static void parse_header(parsed *p, const char *line)
{
	unsigned long long duration;
	int used = 0;

	REQUIRE(strncmp(line, "#Paraver (", 10) == 0);
	const char *q = strchr(line, ')');
	REQUIRE(q != NULL && q[1] == ':');
	REQUIRE(sscanf(q + 2, "%llu_ns:0:1:%u(%n", &duration, &p->tasks, &used) == 2 && used > 0);
	p->duration = duration;
	q += 2 + used;
	REQUIRE(p->tasks <= MAX_NAMES);
	for (unsigned i = 0; i < p->tasks; i++) {
		unsigned node;
		REQUIRE(sscanf(q, "%u:%u%n", &p->task_threads[i], &node, &used) == 2);
		CHECK_EQ_U64(node, 1);
		q += used;
		CHECK(*q == (i + 1 < p->tasks ? ',' : ')'));
		q++;
	}
	CHECK(*q == '\0' || *q == '\n');
}

/* One record line of the .prv. */
static void parse_record(parsed *p, const char *line)
{
	prv_rec r;
	unsigned cpu, app;
	unsigned long long a, b, c;
	long long v;

	memset(&r, 0, sizeof r);
	if (line[0] == '1') {
		REQUIRE(sscanf(line, "1:%u:%u:%u:%u:%llu:%llu:%lld", &cpu, &app, &r.task, &r.thread,
			       &a, &b, &v) == 7);
		r.kind = 1;
		r.time = a;
		r.end = b;
		r.value = v;
	} else if (line[0] == '3') {
		unsigned rcpu, rapp, rtask, rthread;
		unsigned long long pa, lr, pr;
		long long tag;
		REQUIRE(sscanf(line, "3:%u:%u:%u:%u:%llu:%llu:%u:%u:%u:%u:%llu:%llu:%lld:%lld",
			       &cpu, &app, &r.task, &r.thread, &a, &pa, &rcpu, &rapp, &rtask,
			       &rthread, &lr, &pr, &v, &tag) == 14);
		CHECK(pa == a && pr == lr && rcpu == 0 && rapp == 1);
		r.kind = 3;
		r.time = a;
		r.end = lr;
		r.type = (uint64_t)rtask << 16 | rthread;
		r.value = v;
		r.tag = tag;
	} else {
		REQUIRE(sscanf(line, "2:%u:%u:%u:%u:%llu:%llu:%lld", &cpu, &app, &r.task, &r.thread,
			       &a, &c, &v) == 7);
		r.kind = 2;
		r.time = a;
		r.type = c;
		r.value = v;
	}
	CHECK_EQ_U64(cpu, 0);
	CHECK_EQ_U64(app, 1);
	push_rec(p, &r);
}

/* The .prv: header, then records. */
static void parse_prv(parsed *p, char *text)
{
	char *save = NULL;
	char *line = strtok_r(text, "\n", &save);

	REQUIRE(line != NULL);
	parse_header(p, line);
	while ((line = strtok_r(NULL, "\n", &save)) != NULL)
		parse_record(p, line);
}

/* "<number> <label>" into *n and label; 0 when the line is not one. */
static int number_line(const char *line, int64_t *n, char *label, size_t cap)
{
	long long v;
	int used = 0;

	if (sscanf(line, "%lld %n", &v, &used) != 1 || used == 0)
		return 0;
	*n = v;
	snprintf(label, cap, "%s", line + used);
	return 1;
}

/* The .pcf: STATES and the EVENT_TYPE blocks. */
static void parse_pcf(parsed *p, char *text)
{
	char *save = NULL, *line;
	int section = 0; /* 1 states, 2 type line, 3 values */
	pcf_type *t = NULL;

	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		unsigned long long type;
		int64_t n;
		char label[160];
		int used = 0;
		if (strcmp(line, "STATES") == 0) { section = 1; continue; }
		if (strcmp(line, "STATES_COLOR") == 0 || strcmp(line, "DEFAULT_OPTIONS") == 0 ||
		    strcmp(line, "DEFAULT_SEMANTIC") == 0) { section = 0; continue; }
		if (strcmp(line, "EVENT_TYPE") == 0) { section = 2; continue; }
		if (strcmp(line, "VALUES") == 0) { section = 3; continue; }
		if (section == 1 && number_line(line, &n, label, sizeof label)) {
			REQUIRE(p->state_count < MAX_NAMES);
			p->states[p->state_count] = n;
			snprintf(p->state_labels[p->state_count++], 64, "%.63s", label);
		} else if (section == 2) {
			REQUIRE(sscanf(line, "0 %llu %n", &type, &used) == 1 && used > 0);
			REQUIRE(p->type_count < MAX_TYPES);
			t = &p->types[p->type_count++];
			memset(t, 0, sizeof *t);
			t->type = type;
			snprintf(t->label, sizeof t->label, "%s", line + used);
		} else if (section == 3 && t != NULL && number_line(line, &n, label, sizeof label)) {
			REQUIRE(t->value_count < MAX_VALUES);
			t->values[t->value_count] = n;
			snprintf(t->value_labels[t->value_count++], 64, "%.63s", label);
		}
	}
}

/* The .row: names of the TASK and THREAD levels. */
static void parse_row(parsed *p, char *text)
{
	char *save = NULL, *line;
	char level[32];
	int left = 0, which = 0;

	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (sscanf(line, "LEVEL %31s SIZE %d", level, &left) == 2) {
			which = strcmp(level, "TASK") == 0 ? 1 : strcmp(level, "THREAD") == 0 ? 2 : 0;
			if (strcmp(level, "CPU") == 0)
				p->cpu_level_seen = 1;
			continue;
		}
		if (left-- <= 0)
			continue;
		if (which == 1 && p->task_name_count < MAX_NAMES)
			snprintf(p->task_names[p->task_name_count++], 64, "%s", line);
		if (which == 2 && p->thread_name_count < MAX_NAMES)
			snprintf(p->thread_names[p->thread_name_count++], 64, "%s", line);
	}
}

/* Reads and parses OUT.prv, OUT.pcf, OUT.row of `base`. */
static void parse_files(const char *base, parsed *p)
{
	char path[512];
	char *text;

	memset(p, 0, sizeof *p);
	snprintf(path, sizeof path, "%s.prv", base);
	REQUIRE((text = tu_read_file(path, NULL)) != NULL);
	parse_prv(p, text);
	free(text);
	snprintf(path, sizeof path, "%s.pcf", base);
	REQUIRE((text = tu_read_file(path, NULL)) != NULL);
	parse_pcf(p, text);
	free(text);
	snprintf(path, sizeof path, "%s.row", base);
	REQUIRE((text = tu_read_file(path, NULL)) != NULL);
	parse_row(p, text);
	free(text);
}

/* ---- Running a writer --------------------------------------------------------------------- */

typedef struct outfiles {
	char base[400];
	int prv, pcf, row;
} outfiles;

/* Creates OUT.prv/.pcf/.row under dir. */
static void open_outputs(outfiles *o, const char *dir, const char *name)
{
	char path[512];

	snprintf(o->base, sizeof o->base, "%s/%s", dir, name);
	snprintf(path, sizeof path, "%s.prv", o->base);
	o->prv = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	snprintf(path, sizeof path, "%s.pcf", o->base);
	o->pcf = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	snprintf(path, sizeof path, "%s.row", o->base);
	o->row = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	REQUIRE(o->prv >= 0 && o->pcf >= 0 && o->row >= 0);
}

/* Closes the three files (the writer never does). */
static void close_outputs(outfiles *o)
{
	close(o->prv);
	close(o->pcf);
	close(o->row);
}

/* ---- Checks shared by the cases ------------------------------------------------------------ */

/* The .pcf entry of `type`, or NULL. */
static const pcf_type *find_type(const parsed *p, uint64_t type)
{
	for (int i = 0; i < p->type_count; i++)
		if (p->types[i].type == type)
			return &p->types[i];
	return NULL;
}

/* The label of `value` in a type, or NULL. */
static const char *value_label(const pcf_type *t, int64_t value)
{
	for (int i = 0; i < t->value_count; i++)
		if (t->values[i] == value)
			return t->value_labels[i];
	return NULL;
}

/* The .pcf type whose label is `label`, or NULL. */
static const pcf_type *type_by_label(const parsed *p, const char *label)
{
	for (int i = 0; i < p->type_count; i++)
		if (strcmp(p->types[i].label, label) == 0)
			return &p->types[i];
	return NULL;
}

/*
 * Records sorted by time (state records by their begin), on rows the
 * header declares; every event type in the .pcf; every nonzero value of
 * a type with VALUES labelled; every state labelled.
 */
static void check_consistency(const parsed *p)
{
	for (size_t i = 0; i < p->rec_count; i++) {
		const prv_rec *r = &p->recs[i];
		if (i > 0)
			CHECK(r->time >= p->recs[i - 1].time);
		CHECK(r->task >= 1 && r->task <= p->tasks);
		if (r->task >= 1 && r->task <= p->tasks)
			CHECK(r->thread >= 1 && r->thread <= p->task_threads[r->task - 1]);
		CHECK(r->time <= p->duration);
		if (r->kind == 1) {
			CHECK(r->end >= r->time && r->end <= p->duration);
			int found = 0;
			for (int s = 0; s < p->state_count; s++)
				found |= p->states[s] == r->value;
			CHECK(found);
			continue;
		}
		if (r->kind == 3) {
			unsigned task = (unsigned)(r->type >> 16), thread = r->type & 0xffff;
			CHECK(task >= 1 && task <= p->tasks && r->end <= p->duration);
			if (task >= 1 && task <= p->tasks)
				CHECK(thread >= 1 && thread <= p->task_threads[task - 1]);
			continue;
		}
		const pcf_type *t = find_type(p, r->type);
		CHECK(t != NULL);
		if (t != NULL && t->value_count > 0 && r->value != 0 && r->type != 1)
			CHECK(value_label(t, r->value) != NULL);
	}
	unsigned rows = 0;
	for (unsigned i = 0; i < p->tasks; i++)
		rows += p->task_threads[i];
	CHECK_EQ_U64(p->thread_name_count, rows);
	CHECK_EQ_U64(p->task_name_count, p->tasks);
	CHECK(p->cpu_level_seen);
}

/* The (time, value) sequence of `type` on (task, thread), as "t:v t:v ...". */
static void sequence(const parsed *p, unsigned task, unsigned thread, uint64_t type,
		     char *buf, size_t cap)
{
	size_t n = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < p->rec_count && n < cap; i++) {
		const prv_rec *r = &p->recs[i];
		if (r->kind != 2 || r->task != task || r->thread != thread || r->type != type)
			continue;
		n += (size_t)snprintf(buf + n, cap - n, "%s%llu:%lld", n ? " " : "",
				      (unsigned long long)r->time, (long long)r->value);
	}
}

/* The value a value label names in a type (-1 when none). */
static int64_t value_named(const pcf_type *t, const char *label)
{
	for (int i = 0; t != NULL && i < t->value_count; i++)
		if (strcmp(t->value_labels[i], label) == 0)
			return t->values[i];
	return -1;
}

/* FNV-1a, 64 bits, of a string (the documented hash). */
static uint64_t fnv(const char *name)
{
	uint64_t h = 14695981039346656037ull;

	for (const char *c = name; *c; c++) {
		h ^= (unsigned char)*c;
		h *= 1099511628211ull;
	}
	return h;
}

/* The documented type formula: first + FNV-1a 64(name) mod 10^8. */
static uint64_t documented_type(uint64_t first, const char *name)
{
	return first + fnv(name) % 100000000u;
}

/* The documented value formula: 1 + FNV-1a 64(name) mod (2^31 - 2). */
static int64_t documented_value(const char *name)
{
	return 1 + (int64_t)(fnv(name) % 2147483646u);
}

/* ---- Case 1: a small trace with every kind of track ----------------------------------------- */

enum { P_A = 1, T_A1, P_B, T_B1, T_A2, C_VT_A1, S_RUN_A1, K_EFF_B1, C_VT_A2 };

/* Tracks of the small trace, declared as a view would (parents first). */
static void declare_small(const weft__view_sink *s)
{
	declare(s, P_A, 0, WEFT__TRACK_PROCESS, "loom.x/proc.10");
	declare(s, T_A1, P_A, WEFT__TRACK_THREAD, "thread.11");
	declare(s, P_B, 0, WEFT__TRACK_PROCESS, "loom.x/proc.20");
	declare(s, T_B1, P_B, WEFT__TRACK_THREAD, "thread.21");
	declare(s, T_A2, P_A, WEFT__TRACK_THREAD, "thread.12");
	declare(s, C_VT_A1, T_A1, WEFT__TRACK_CHANNEL, "nosv VT");
	declare(s, S_RUN_A1, T_A1, WEFT__TRACK_STATE, "running");
	declare(s, K_EFF_B1, T_B1, WEFT__TRACK_COUNTER, "efficiency");
	declare(s, C_VT_A2, T_A2, WEFT__TRACK_CHANNEL, "nosv VT");
}

/* Instants: one with an integer argument (its value), one without (1). */
static void instants_small(const weft__view_sink *s)
{
	weft_field args[2];
	weft__view_track tr = track_ref(T_A1);

	memset(args, 0, sizeof args);
	args[0].name = "label";
	args[0].name_len = 5;
	args[0].type = WEFT_TYPE_STR;
	args[0].v.s.ptr = "x";
	args[0].v.s.len = 1;
	args[1].name = "task_id";
	args[1].name_len = 7;
	args[1].type = WEFT_TYPE_U32;
	args[1].v.u = 200;
	weft__view_item a = item_of("nosv VTC", "nosv", args, 2);
	s->instant(s->ctx, &tr, BASE + 1200, &a);
	weft__view_item b = item_of("MPI_Init", "mpi", args, 1);
	s->instant(s->ctx, &tr, BASE + 1300, &b);
}

/*
 * Events in the view's order: spans of the running state, nested own
 * spans, a channel span, instants, counters; then complete spans of
 * thread.21 children first (post-order), and a span of thread.12 that
 * starts at BASE (the earliest time) on the second "nosv VT" channel.
 */
static void events_small(const weft__view_sink *s)
{
	begin(s, C_VT_A2, 0, "nosv VTx");
	begin(s, S_RUN_A1, 1000, "running");
	begin(s, T_A1, 1000, "outer");
	instants_small(s);
	begin(s, C_VT_A1, 1500, "nosv VTx");
	begin(s, T_A1, 2000, "inner");
	end(s, C_VT_A1, 2500);
	end(s, T_A1, 3000);
	end(s, T_A1, 4000);
	end(s, S_RUN_A1, 5000);
	end(s, C_VT_A2, 5500);
	begin(s, S_RUN_A1, 7000, "running");
	end(s, S_RUN_A1, 9000);
	counter(s, K_EFF_B1, 100, 1.4);
	counter(s, K_EFF_B1, 200, 2.6);
	counter(s, K_EFF_B1, 300, NAN);
	counter(s, K_EFF_B1, 400, -2.5);
	/* P [2000, 6000] > A [2000, 3000], B [4000, 6000] > G [4000, 4000] */
	complete(s, T_B1, 2000, 3000, "A");
	complete(s, T_B1, 4000, 4000, "G");
	complete(s, T_B1, 4000, 6000, "B");
	complete(s, T_B1, 2000, 6000, "P");
}

/* The header, rows and names of the small trace. */
static void check_small_structure(const parsed *p, const weft__paraver_stats *st)
{
	CHECK_EQ_U64(p->duration, 9000);
	CHECK_EQ_U64(st->start, BASE);
	CHECK_EQ_U64(p->tasks, 2);
	CHECK_EQ_U64(p->task_threads[0], 2);
	CHECK_EQ_U64(p->task_threads[1], 1);
	CHECK_EQ_STR(p->task_names[0], "loom.x/proc.10");
	CHECK_EQ_STR(p->task_names[1], "loom.x/proc.20");
	CHECK_EQ_STR(p->thread_names[0], "loom.x/proc.10/thread.11");
	CHECK_EQ_STR(p->thread_names[1], "loom.x/proc.10/thread.12");
	CHECK_EQ_STR(p->thread_names[2], "loom.x/proc.20/thread.21");
	REQUIRE(p->rec_count > 0);
	/* the trace-start record first: type 1, the absolute time of 0 */
	CHECK_EQ_U64(p->recs[0].type, 1);
	CHECK_EQ_U64(p->recs[0].time, 0);
	CHECK_EQ_I64(p->recs[0].value, (int64_t)BASE);
	CHECK(find_type(p, 1) != NULL && strstr(find_type(p, 1)->label, "1000000000 ns") != NULL);
}

/* State records of the running track: 1 Running, with the gap "Not running". */
static void check_small_states(const parsed *p)
{
	char got[256];
	size_t n = 0;

	got[0] = '\0';
	for (size_t i = 0; i < p->rec_count; i++)
		if (p->recs[i].kind == 1)
			n += (size_t)snprintf(got + n, sizeof got - n, "%s%u.%u:%llu-%llu=%lld",
					      n ? " " : "", p->recs[i].task, p->recs[i].thread,
					      (unsigned long long)p->recs[i].time,
					      (unsigned long long)p->recs[i].end,
					      (long long)p->recs[i].value);
	CHECK_EQ_STR(got, "1.1:1000-5000=1 1.1:5000-7000=0 1.1:7000-9000=1");
	CHECK(p->state_count == 2 && p->states[0] == 0 && p->states[1] == 1);
	CHECK_EQ_STR(p->state_labels[0], "Not running");
	CHECK_EQ_STR(p->state_labels[1], "Running");
}

/* Own spans: nested B/E on thread.11, complete spans on thread.21. */
static void check_small_spans(const parsed *p)
{
	char got[512], want[512];
	const pcf_type *own = find_type(p, 2);

	REQUIRE(own != NULL);
	int64_t outer = value_named(own, "outer"), inner = value_named(own, "inner");
	int64_t P = value_named(own, "P"), A = value_named(own, "A");
	int64_t B = value_named(own, "B"), G = value_named(own, "G");
	CHECK(outer > 0 && inner > 0 && P > 0 && A > 0 && B > 0 && G > 0);
	sequence(p, 1, 1, 2, got, sizeof got);
	snprintf(want, sizeof want, "1000:%lld 2000:%lld 3000:%lld 4000:0", (long long)outer,
		 (long long)inner, (long long)outer);
	CHECK_EQ_STR(got, want);
	sequence(p, 2, 1, 2, got, sizeof got);
	snprintf(want, sizeof want,
		 "2000:%lld 2000:%lld 3000:%lld 4000:%lld 4000:%lld 4000:%lld 6000:%lld 6000:0",
		 (long long)P, (long long)A, (long long)P, (long long)B, (long long)G,
		 (long long)B, (long long)P);
	CHECK_EQ_STR(got, want);
	/* the value of a name: 1 + FNV-1a 64(name) mod (2^31 - 2) */
	CHECK_EQ_I64(P, documented_value("P"));
	CHECK_EQ_I64(outer, documented_value("outer"));
}

/* Channel types, instants and counters. */
static void check_small_events(const parsed *p)
{
	char got[256], want[256];
	uint64_t vt = documented_type(100000000, "nosv VT");
	const pcf_type *t = find_type(p, vt);

	REQUIRE(t != NULL);
	CHECK_EQ_STR(t->label, "nosv VT");
	int64_t vtx = value_named(t, "nosv VTx");
	CHECK(vtx > 0);
	sequence(p, 1, 1, vt, got, sizeof got);
	snprintf(want, sizeof want, "1500:%lld 2500:0", (long long)vtx);
	CHECK_EQ_STR(got, want);
	sequence(p, 1, 2, vt, got, sizeof got); /* the same type on thread.12 */
	snprintf(want, sizeof want, "0:%lld 5500:0", (long long)vtx);
	CHECK_EQ_STR(got, want);

	const pcf_type *vtc = type_by_label(p, "nosv VTC (task_id)");
	REQUIRE(vtc != NULL);
	CHECK_EQ_U64(vtc->type, documented_type(200000000, "nosv/nosv VTC"));
	CHECK_EQ_U64(vtc->value_count, 0); /* numeric: values are task ids */
	sequence(p, 1, 1, vtc->type, got, sizeof got);
	CHECK_EQ_STR(got, "1200:200");
	const pcf_type *init = type_by_label(p, "mpi: MPI_Init");
	REQUIRE(init != NULL);
	CHECK_EQ_U64(init->type, documented_type(200000000, "mpi/MPI_Init"));
	CHECK(init->value_count == 1 && init->values[0] == 1);
	sequence(p, 1, 1, init->type, got, sizeof got);
	CHECK_EQ_STR(got, "1300:1");

	uint64_t eff = documented_type(300000000, "efficiency");
	t = find_type(p, eff);
	REQUIRE(t != NULL);
	CHECK_EQ_STR(t->label, "efficiency");
	CHECK_EQ_U64(t->value_count, 0);
	sequence(p, 2, 1, eff, got, sizeof got);
	CHECK_EQ_STR(got, "100:1 200:3 400:-3");
}

/* The types without VALUES are exactly the numeric ones (and type 1). */
static void check_small_numeric(const parsed *p)
{
	for (int i = 0; i < p->type_count; i++) {
		const pcf_type *t = &p->types[i];
		int numeric = t->type == 1 || strcmp(t->label, "efficiency") == 0 ||
			      strcmp(t->label, "nosv VTC (task_id)") == 0;
		CHECK(numeric == (t->value_count == 0));
	}
}

/* Every kind of track and event, checked record by record. */
static void test_small(const char *dir)
{
	outfiles o;
	weft__paraver_writer *w;
	weft__paraver_stats st;
	parsed p;

	open_outputs(&o, dir, "small");
	REQUIRE(weft__paraver_writer_create(o.prv, o.pcf, o.row, dir, &w) == 0);
	const weft__view_sink *s = weft__paraver_writer_sink(w);
	declare_small(s);
	events_small(s);
	CHECK_EQ_I64(weft__paraver_writer_finish(w), 0);
	CHECK(weft__paraver_writer_warning(w) == NULL);
	weft__paraver_writer_stats(w, &st);
	CHECK_EQ_U64(st.bad_counters, 1);
	CHECK_EQ_U64(st.rows, 3);
	CHECK_EQ_U64(st.tasks, 2);
	CHECK_EQ_U64(st.state_records, 3);
	weft__paraver_writer_free(w);
	close_outputs(&o);
	parse_files(o.base, &p);
	CHECK_EQ_U64(st.records, p.rec_count);
	check_consistency(&p);
	check_small_structure(&p, &st);
	check_small_states(&p);
	check_small_spans(&p);
	check_small_events(&p);
	check_small_numeric(&p);
	free(p.recs);
}

/* ---- Case 2: many records, a tiny sort budget ----------------------------------------------- */

#define MANY 60000

/* Records in a scrambled time order over 8 rows; complete spans too. */
static void events_many(const weft__view_sink *s)
{
	uint64_t state = 99;

	for (uint32_t r = 0; r < 8; r++)
		declare(s, 2 + r, 1, WEFT__TRACK_THREAD, r % 2 ? "odd" : "even");
	for (uint32_t i = 0; i < MANY; i++) {
		state = state * 6364136223846793005ull + 1442695040888963407ull;
		uint64_t t = (state >> 20) % 10000000;
		uint32_t track = 2 + (uint32_t)((state >> 50) % 8);
		if (i % 3 == 0) {
			complete(s, track, t, t + 10, i % 2 ? "even span" : "odd span");
		} else {
			weft__view_track tr = track_ref(track);
			weft__view_item it = item_of("tick", "test", NULL, 0);
			s->instant(s->ctx, &tr, BASE + t, &it);
		}
	}
}

/* Sorted runs spilled to the temporary directory, merged in order. */
static void test_many(const char *dir)
{
	outfiles o;
	weft__paraver_writer *w;
	weft__paraver_stats st;
	parsed p;

	open_outputs(&o, dir, "many");
	REQUIRE(weft__paraver_writer_create(o.prv, o.pcf, o.row, dir, &w) == 0);
	CHECK_EQ_I64(weft__paraver_writer_set_sort_budget(w, 64u << 10), 0);
	const weft__view_sink *s = weft__paraver_writer_sink(w);
	declare(s, 1, 0, WEFT__TRACK_PROCESS, "proc");
	events_many(s);
	CHECK_EQ_I64(weft__paraver_writer_set_sort_budget(w, 1u << 20), WEFT_EINVAL);
	CHECK_EQ_I64(weft__paraver_writer_finish(w), 0);
	weft__paraver_writer_stats(w, &st);
	CHECK(st.sort_runs > 1);
	weft__paraver_writer_free(w);
	close_outputs(&o);
	parse_files(o.base, &p);
	check_consistency(&p);
	/* 1 start record + 2 per complete span + 1 per instant */
	CHECK_EQ_U64(p.rec_count, 1 + 2 * (MANY / 3) + (MANY - MANY / 3));
	CHECK_EQ_U64(p.tasks, 1);
	CHECK_EQ_U64(p.task_threads[0], 8);
	CHECK_EQ_STR(p.thread_names[1], "proc/odd");
	free(p.recs);
}

/* ---- Case 3: limits and failures ------------------------------------------------------------ */

/* More than 65535 threads in one task: a warning for extended objects. */
static void test_object_warning(const char *dir)
{
	outfiles o;
	weft__paraver_writer *w;
	weft__paraver_stats st;

	open_outputs(&o, dir, "wide");
	REQUIRE(weft__paraver_writer_create(o.prv, o.pcf, o.row, NULL, &w) == 0);
	const weft__view_sink *s = weft__paraver_writer_sink(w);
	declare(s, 1, 0, WEFT__TRACK_PROCESS, "proc");
	for (uint32_t i = 0; i < 65537; i++)
		declare(s, 2 + i, 1, WEFT__TRACK_THREAD, "t");
	CHECK_EQ_I64(weft__paraver_writer_finish(w), 0);
	weft__paraver_writer_stats(w, &st);
	CHECK_EQ_U64(st.max_object, 65537);
	CHECK(weft__paraver_writer_warning(w) != NULL &&
	      strstr(weft__paraver_writer_warning(w), "extended objects") != NULL);
	weft__paraver_writer_free(w);
	close_outputs(&o);
}

/* An output that cannot be written: WEFT_EIO with a message. */
static void test_bad_output(const char *dir)
{
	weft__paraver_writer *w;
	int fds[2];

	REQUIRE(pipe(fds) == 0);
	close(fds[0]); /* writes fail (EPIPE, SIGPIPE ignored below) */
	REQUIRE(weft__paraver_writer_create(fds[1], fds[1], fds[1], dir, &w) == 0);
	const weft__view_sink *s = weft__paraver_writer_sink(w);
	declare(s, 1, 0, WEFT__TRACK_PROCESS, "proc");
	declare(s, 2, 1, WEFT__TRACK_THREAD, "t");
	begin(s, 2, 0, "x");
	end(s, 2, 1);
	CHECK_EQ_I64(weft__paraver_writer_finish(w), WEFT_EIO);
	CHECK(strstr(weft_last_error(), "cannot write") != NULL);
	CHECK_EQ_I64(weft__paraver_writer_finish(w), WEFT_EINVAL);
	weft__paraver_writer_free(w);
	weft__paraver_writer_free(NULL);
	close(fds[1]);
}

/*
 * More distinct span names than the label budget holds: the later ones
 * share the "other" value, a new instant kind the "other" type (3), both
 * labelled.
 */
static void test_label_budget(const char *dir)
{
	outfiles o;
	weft__paraver_writer *w;
	weft__paraver_stats st;
	char name[160], path[512];
	uint32_t n = (uint32_t)(WEFT__PARAVER_MAX_LABEL_BYTES / 200);

	open_outputs(&o, dir, "labels");
	REQUIRE(weft__paraver_writer_create(o.prv, o.pcf, o.row, dir, &w) == 0);
	const weft__view_sink *s = weft__paraver_writer_sink(w);
	declare(s, 1, 0, WEFT__TRACK_PROCESS, "proc");
	declare(s, 2, 1, WEFT__TRACK_THREAD, "t");
	for (uint32_t i = 0; i < n; i++) {
		snprintf(name, sizeof name, "span %08u %0100u", i, i);
		begin(s, 2, 2 * (uint64_t)i, name);
		end(s, 2, 2 * (uint64_t)i + 1);
	}
	weft__view_track tr = track_ref(2);
	snprintf(name, sizeof name, "late kind %0140u", 0u); /* longer than the room left */
	weft__view_item it = item_of(name, "test", NULL, 0);
	s->instant(s->ctx, &tr, BASE + 2 * (uint64_t)n, &it);
	CHECK_EQ_I64(weft__paraver_writer_finish(w), 0);
	weft__paraver_writer_stats(w, &st);
	CHECK(st.labels_dropped > 0);
	weft__paraver_writer_free(w);
	close_outputs(&o);

	snprintf(path, sizeof path, "%s.prv", o.base);
	char *prv = tu_read_file(path, NULL);
	snprintf(path, sizeof path, "%s.pcf", o.base);
	char *pcf = tu_read_file(path, NULL);
	REQUIRE(prv != NULL && pcf != NULL);
	CHECK(strstr(prv, ":2:2147483647\n") != NULL);  /* a span past the budget */
	CHECK(strstr(prv, ":3:2147483647\n") != NULL);  /* the late instant kind */
	CHECK(strstr(pcf, "2147483647 (other names: label budget exceeded)") != NULL);
	CHECK(strstr(pcf, "\n0    3          (other names: label budget exceeded)\n") != NULL);
	free(prv);
	free(pcf);
}

/* No tracks at all: a valid trace with one empty task and thread. */
static void test_empty(const char *dir)
{
	outfiles o;
	weft__paraver_writer *w;
	parsed p;

	open_outputs(&o, dir, "empty");
	REQUIRE(weft__paraver_writer_create(o.prv, o.pcf, o.row, dir, &w) == 0);
	CHECK_EQ_I64(weft__paraver_writer_finish(w), 0);
	weft__paraver_writer_free(w);
	close_outputs(&o);
	parse_files(o.base, &p);
	CHECK_EQ_U64(p.tasks, 1);
	CHECK_EQ_U64(p.task_threads[0], 1);
	CHECK_EQ_U64(p.duration, 0);
	CHECK_EQ_U64(p.rec_count, 0);
	check_consistency(&p);
	free(p.recs);
}

/* ---- Case 4: the direct path ----------------------------------------------------------------- */

/*
 * A view's calls on a time-ordered input (the direct path), from a
 * seeded generator: 2 processes, 5 threads (the last one, of the second
 * process, declared half-way: a task added after the first write), each
 * with its own spans, a channel, a running STATE track; instants,
 * counters, equal times. Thread 3 stops early with spans open (closed
 * at the end at its last time: late ends), thread 4 stops running early
 * (its gap never closes). Variants inject what the direct path cannot
 * take after its first write.
 */
#define D_THREADS 5
#define D_STEPS 4000

typedef struct scenario {
	int late_begin;     /* a span begin older than the output, mid-way */
	int late_complete;  /* a complete span mid-way */
	int before_start;   /* an instant before the earliest time, mid-way */
	int burst;          /* 600 records at one time, state spans among them */
	int open_state;     /* thread 1's running span never closed */
	int simple;         /* every thread at once, none stops early */
	int late_task;      /* simple, but the second process comes half-way */
	int messages;       /* instants are message ends: sends, receives (some
	                       before their sends), one send never received */
} scenario;

typedef struct dthread {
	uint32_t thread, chan, run, counter;
	int declared, own, ch, running, done;
	uint64_t last;
} dthread;

#define D_QUEUE 64

typedef struct dgen {
	const weft__view_sink *s;
	dthread th[D_THREADS];
	int procs[2];
	int simple, messages;
	uint64_t rng, t;
	/* messages: flow ids of sends not received yet, of receives whose
	 * send is still to come (FIFO), and the next id */
	uint64_t sends[D_QUEUE], recvs[D_QUEUE];
	int send_count, recv_count;
	uint64_t next_flow;
} dgen;

/* The generator's next pseudo-random number. */
static uint32_t d_rand(dgen *g)
{
	g->rng = g->rng * 6364136223846793005ull + 1442695040888963407ull;
	return (uint32_t)(g->rng >> 33);
}

/* Declares thread i's tracks (and its process first) as a view would. */
static void d_declare(dgen *g, int i)
{
	dthread *d = &g->th[i];
	uint32_t base = 2 + 5 * (uint32_t)i, proc = i < 4 ? 1 : 100;

	if (!g->procs[i / 4]++)
		declare(g->s, proc, 0, WEFT__TRACK_PROCESS, i < 4 ? "loom.d/proc.1" : "loom.d/proc.2");
	d->thread = base;
	d->chan = base + 1;
	d->run = base + 2;
	d->counter = base + 3;
	declare(g->s, d->thread, proc, WEFT__TRACK_THREAD, i == 0 ? "t1" : i == 1 ? "t2" :
			  i == 2 ? "t3" : i == 3 ? "t4" : "t5");
	declare(g->s, d->chan, d->thread, WEFT__TRACK_CHANNEL, "nosv VA");
	declare(g->s, d->run, d->thread, WEFT__TRACK_STATE, "running");
	declare(g->s, d->counter, d->thread, WEFT__TRACK_COUNTER, "cycles");
	d->declared = 1;
}

/* Takes the oldest id of a FIFO of n ids. */
static uint64_t d_take(uint64_t *q, int *n)
{
	uint64_t id = q[0];
	memmove(q, q + 1, (size_t)(*n - 1) * sizeof *q);
	(*n)--;
	return id;
}

/*
 * Makes an instant a message end: a receive of the oldest send or of a
 * new message (its send comes later), or a send (the oldest waiting
 * receive's, or a new message's), with its length and tag.
 */
static void d_message(dgen *g, weft__view_item *it, weft_field *args)
{
	uint32_t r = d_rand(g) % 4;
	if (r == 0 && g->send_count > 0) {
		it->flow_id = d_take(g->sends, &g->send_count);
		it->flow_end = WEFT_FLOW_IN;
	} else if (r == 1 && g->recv_count < D_QUEUE && g->next_flow % 5 == 0) {
		it->flow_id = ++g->next_flow;
		it->flow_end = WEFT_FLOW_IN;
		g->recvs[g->recv_count++] = it->flow_id;
	} else if (g->recv_count > 0 && r == 2) {
		it->flow_id = d_take(g->recvs, &g->recv_count);
		it->flow_end = WEFT_FLOW_OUT;
	} else if (g->send_count < D_QUEUE) {
		it->flow_id = ++g->next_flow;
		it->flow_end = WEFT_FLOW_OUT;
		g->sends[g->send_count++] = it->flow_id;
	} else {
		return;
	}
	args[1] = (weft_field){ .name = "length", .name_len = 6, .type = WEFT_TYPE_U64,
				.v.u = 8 * (it->flow_id % 100) };
	args[2] = (weft_field){ .name = "tag", .name_len = 3, .type = WEFT_TYPE_I32,
				.v.i = (int64_t)(it->flow_id % 7) - 3 };
	it->arg_count = 3;
}

/* An instant on thread i at the current time, with an argument or not. */
static void d_instant(dgen *g, int i, int with_arg)
{
	weft_field args[3];
	weft__view_track tr = track_ref(g->th[i].thread);

	memset(args, 0, sizeof args);
	args[0].name = "id";
	args[0].name_len = 2;
	args[0].type = WEFT_TYPE_U64;
	args[0].v.u = g->t % 977;
	weft__view_item it = item_of(with_arg ? "tick" : "tock", "test", args, with_arg);
	if (g->messages && with_arg)
		d_message(g, &it, args);
	g->s->instant(g->s->ctx, &tr, BASE + g->t, &it);
}

/* One step of thread i at the current time. */
static void d_act(dgen *g, int i)
{
	static const char *names[] = { "alpha", "beta", "gamma", "delta" };
	dthread *d = &g->th[i];
	uint32_t a = d_rand(g) % 10;

	d->last = g->t;
	if (a <= 2 && d->own < 3) {
		begin(g->s, d->thread, g->t, names[d_rand(g) % 4]);
		d->own++;
	} else if (a <= 2 || (a >= 8 && d->own > 0)) {
		end(g->s, d->thread, g->t);
		d->own--;
	} else if (a <= 4 && d->ch < 2) {
		begin(g->s, d->chan, g->t, "nosv VAs");
		d->ch++;
	} else if (a <= 4) {
		end(g->s, d->chan, g->t);
		d->ch--;
	} else if (a == 6 && (i != 3 || g->t < 3000 || g->simple)) {
		if (d->running)
			end(g->s, d->run, g->t);
		else
			begin(g->s, d->run, g->t, "running");
		d->running = !d->running;
	} else if (a == 7) {
		counter(g->s, d->counter, g->t, (double)(g->t % 1000) / 7.0);
	} else {
		d_instant(g, i, a & 1);
	}
}

/* What the variants inject at step `k`, out of the view's usual order. */
static void d_inject(dgen *g, const scenario *sc, int k)
{
	if (sc->late_begin && k == D_STEPS / 2) {
		begin(g->s, g->th[0].thread, g->t - 5000, "late");
		end(g->s, g->th[0].thread, g->t);
	}
	if (sc->late_complete && k == D_STEPS / 2)
		complete(g->s, g->th[1].thread, g->t - 3000, g->t - 1000, "late complete");
	if (sc->before_start && k == D_STEPS / 2) {
		weft__view_track tr = track_ref(g->th[1].thread);
		weft__view_item it = item_of("early", "test", NULL, 0);
		g->s->instant(g->s->ctx, &tr, BASE - 100, &it);
	}
	if (sc->burst && k == D_STEPS / 3) {
		for (int j = 0; j < 600; j++) {
			int i = j % 4;
			if (j % 97 == 0 && !g->th[i].done) {
				if (g->th[i].running)
					end(g->s, g->th[i].run, g->t);
				else
					begin(g->s, g->th[i].run, g->t, "running");
				g->th[i].running = !g->th[i].running;
			} else if (!g->th[i].done) {
				d_instant(g, i, 1);
			}
		}
	}
}

/* The view's end: what is still open closes at its stream's last time. */
static void d_finish(dgen *g, const scenario *sc)
{
	for (int i = 0; i < D_THREADS; i++) {
		dthread *d = &g->th[i];
		if (!d->declared)
			continue;
		for (; d->own > 0; d->own--)
			end(g->s, d->thread, d->last);
		for (; d->ch > 0; d->ch--)
			end(g->s, d->chan, d->last);
		if (d->running && !(sc->open_state && i == 0))
			end(g->s, d->run, d->last);
	}
}

/* Drives the whole scenario into a sink. */
static void d_run(const weft__view_sink *s, const scenario *sc)
{
	dgen g;

	memset(&g, 0, sizeof g);
	g.s = s;
	g.rng = 42;
	g.simple = sc->simple;
	g.messages = sc->messages;
	for (int k = 0; k < D_STEPS; k++) {
		uint32_t r = d_rand(&g);
		g.t += r % 3 == 0 ? 0 : r % 40;
		int all = sc->simple && !sc->late_task;
		int i = (int)(d_rand(&g) % (k >= D_STEPS / 2 || all ? 5 : 4));
		for (int j = 0; j <= (sc->simple ? 4 : i); j++)
			if (!g.th[j].declared && (j == i || all || (sc->simple && j < 4)))
				d_declare(&g, j);
		if (i == 2 && k >= 2 * D_STEPS / 3 && !sc->simple)
			g.th[i].done = 1;
		if (!g.th[i].done)
			d_act(&g, i);
		d_inject(&g, sc, k);
	}
	d_finish(&g, sc);
}

/* Opens OUT.prv for reading and writing (the direct path needs both). */
static void open_outputs_rw(outfiles *o, const char *dir, const char *name)
{
	char path[512];

	open_outputs(o, dir, name);
	close(o->prv);
	snprintf(path, sizeof path, "%s.prv", o->base);
	o->prv = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	REQUIRE(o->prv >= 0);
}

/* Runs the scenario with a window of `window` bytes (0: the sort path). */
static void d_convert(const char *dir, const char *name, uint64_t window, const scenario *sc,
		      parsed *p, weft__paraver_stats *st)
{
	outfiles o;
	weft__paraver_writer *w;

	open_outputs_rw(&o, dir, name);
	REQUIRE(weft__paraver_writer_create(o.prv, o.pcf, o.row, dir, &w) == 0);
	CHECK_EQ_I64(weft__paraver_writer_set_window(w, window), 0);
	d_run(weft__paraver_writer_sink(w), sc);
	CHECK_EQ_I64(weft__paraver_writer_set_window(w, window), WEFT_EINVAL);
	CHECK_EQ_I64(weft__paraver_writer_finish(w), 0);
	weft__paraver_writer_stats(w, st);
	weft__paraver_writer_free(w);
	close_outputs(&o);
	parse_files(o.base, p);
	check_consistency(p);
	CHECK_EQ_U64(st->records, p->rec_count);
}

/* Order of state records for comparing them as a set. */
static int compare_states(const void *a, const void *b)
{
	const prv_rec *x = a, *y = b;

	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	if (x->task != y->task)
		return x->task < y->task ? -1 : 1;
	if (x->thread != y->thread)
		return x->thread < y->thread ? -1 : 1;
	return x->end < y->end ? -1 : x->end > y->end;
}

/* The state records of p, sorted; *n of them (malloc'd). */
static prv_rec *state_list(const parsed *p, size_t *n)
{
	prv_rec *s = malloc((p->rec_count + 1) * sizeof *s);

	REQUIRE(s != NULL);
	*n = 0;
	for (size_t i = 0; i < p->rec_count; i++)
		if (p->recs[i].kind == 1)
			s[(*n)++] = p->recs[i];
	qsort(s, *n, sizeof *s, compare_states);
	return s;
}

/*
 * The same trace as the sort path's: header numbers, every event record
 * in the same order with the same value, the same state records (a state
 * record written before its span closed may sit elsewhere among the
 * records of its begin time).
 */
static void check_same(const parsed *want, const parsed *got)
{
	size_t i = 0, j = 0, ns, ms;

	CHECK_EQ_U64(got->duration, want->duration);
	CHECK_EQ_U64(got->tasks, want->tasks);
	for (unsigned t = 0; t < want->tasks && t < got->tasks; t++)
		CHECK_EQ_U64(got->task_threads[t], want->task_threads[t]);
	CHECK_EQ_U64(got->rec_count, want->rec_count);
	for (;; i++, j++) {
		while (i < want->rec_count && want->recs[i].kind == 1)
			i++;
		while (j < got->rec_count && got->recs[j].kind == 1)
			j++;
		if (i >= want->rec_count || j >= got->rec_count)
			break;
		const prv_rec *a = &want->recs[i], *b = &got->recs[j];
		if (a->time != b->time || a->task != b->task || a->thread != b->thread ||
		    a->type != b->type || a->value != b->value || a->kind != b->kind ||
		    (a->kind == 3 && (a->end != b->end || a->tag != b->tag))) {
			tu_fail(__FILE__, __LINE__, "event record %zu differs: %u.%u %llu %llu %lld "
				"instead of %u.%u %llu %llu %lld", j, b->task, b->thread,
				(unsigned long long)b->time, (unsigned long long)b->type,
				(long long)b->value, a->task, a->thread, (unsigned long long)a->time,
				(unsigned long long)a->type, (long long)a->value);
			break;
		}
	}
	CHECK(i >= want->rec_count && j >= got->rec_count);
	prv_rec *sa = state_list(want, &ns), *sb = state_list(got, &ms);
	CHECK_EQ_U64(ms, ns);
	for (size_t k = 0; k < ns && k < ms; k++)
		CHECK(compare_states(&sa[k], &sb[k]) == 0 && sa[k].value == sb[k].value);
	free(sa);
	free(sb);
}

/* The .prv of `name` in dir, as text. */
static char *prv_text(const char *dir, const char *name)
{
	char path[512];

	snprintf(path, sizeof path, "%s/%s.prv", dir, name);
	char *text = tu_read_file(path, NULL);
	REQUIRE(text != NULL);
	return text;
}

/*
 * Time-ordered input: the direct path writes the same trace as the sort
 * path. With a window holding everything, byte for byte; with small
 * windows (many state records written before their span closed, ends of
 * spans older than the output merged at the end, a task added after the
 * first write: the header rewritten), record for record.
 */
static void test_direct(const char *dir)
{
	static const uint64_t windows[] = { 3 * 48, 40 * 48, 400 * 48 };
	scenario sc = { 0 };
	parsed want, got;
	weft__paraver_stats st;

	d_convert(dir, "d-sort", 0, &sc, &want, &st);
	CHECK_EQ_U64(st.direct, 0);
	CHECK(want.rec_count > 3000);
	d_convert(dir, "d-whole", WEFT__PARAVER_WINDOW, &sc, &got, &st);
	check_same(&want, &got);
	CHECK_EQ_U64(st.direct, 0); /* everything fit in the window */
	char *a = prv_text(dir, "d-sort"), *b = prv_text(dir, "d-whole");
	CHECK_EQ_STR(b, a);
	CHECK(strstr(a, "_ns:0:1:2(00004:1,00001:1)\n") != NULL);
	free(a);
	free(b);
	free(got.recs);
	for (size_t k = 0; k < sizeof windows / sizeof windows[0]; k++) {
		char name[32];
		snprintf(name, sizeof name, "d-window-%zu", k);
		d_convert(dir, name, windows[k], &sc, &got, &st);
		check_same(&want, &got);
		CHECK_EQ_U64(st.direct, 1);
		CHECK_EQ_U64(st.rebuilt, 0);
		CHECK(st.late_records > 0);    /* thread 3's ends */
		CHECK(st.padded_states > 0);
		CHECK(st.merge_bytes > 0);
		free(got.recs);
	}
	free(want.recs);
}

/*
 * Every task known at the first write and no record older than the
 * output: only the header is rewritten (nothing merged).
 */
static void test_direct_in_place(const char *dir)
{
	scenario sc = { .simple = 1 };
	parsed want, got;
	weft__paraver_stats st;

	d_convert(dir, "p-sort", 0, &sc, &want, &st);
	d_convert(dir, "p-direct", 400 * 48, &sc, &got, &st);
	check_same(&want, &got);
	CHECK_EQ_U64(st.direct, 1);
	CHECK_EQ_U64(st.late_records, 0);
	CHECK_EQ_U64(st.merge_bytes, 0);
	CHECK_EQ_U64(st.rebuilt, 0);
	free(want.recs);
	free(got.recs);

	/* a task more since the first write: less padding, the same length */
	sc.late_task = 1;
	d_convert(dir, "p-sort-2", 0, &sc, &want, &st);
	d_convert(dir, "p-direct-2", 100 * 48, &sc, &got, &st);
	check_same(&want, &got);
	CHECK_EQ_U64(st.direct, 1);
	CHECK_EQ_U64(st.merge_bytes, 0);
	char *a = prv_text(dir, "p-sort-2"), *b = prv_text(dir, "p-direct-2");
	CHECK(strstr(a, "):00000000000000052214_ns:0:1:2(00004:1,00001:1)\n") != NULL);
	/* ",00001:1" more than the room: 8 zeros less in the duration */
	CHECK(strstr(b, "):000000052214_ns:0:1:2(00004:1,00001:1)\n") != NULL);
	free(a);
	free(b);
	free(want.recs);
	free(got.recs);
}

/*
 * After the first write, records the direct path cannot place (a begin
 * older than what its track wrote, a complete span, a time before time
 * 0), equal times past the window, a state span never closed: the same
 * trace as the sort path's all the same.
 */
static void test_direct_rebuild(const char *dir)
{
	static const scenario cases[] = {
		{ .late_begin = 1 }, { .late_complete = 1 }, { .before_start = 1 },
		{ .burst = 1 }, { .open_state = 1 },
	};
	static const int rebuilt[] = { 1, 1, 1, 0, -1 };
	parsed want, got;
	weft__paraver_stats st;

	for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
		char name[32];
		d_convert(dir, "r-sort", 0, &cases[k], &want, &st);
		for (uint64_t window = 2 * 48; window <= 200 * 48; window *= 10) {
			snprintf(name, sizeof name, "r-%zu-%llu", k, (unsigned long long)window);
			d_convert(dir, name, window, &cases[k], &got, &st);
			check_same(&want, &got);
			CHECK_EQ_U64(st.direct, 1);
			if (rebuilt[k] >= 0)
				CHECK_EQ_U64(st.rebuilt, (uint64_t)rebuilt[k]);
			free(got.recs);
		}
		free(want.recs);
	}
}

/*
 * The direct path on an output that stops taking bytes (a file size
 * limit: the writes fail with EFBIG): WEFT_EIO with a message, nothing
 * leaked.
 */
static void test_direct_failing_output(const char *dir)
{
	outfiles o;
	weft__paraver_writer *w;
	struct rlimit old, small = { 1u << 16, 1u << 16 };
	scenario sc = { 0 };

	open_outputs_rw(&o, dir, "full");
	REQUIRE(getrlimit(RLIMIT_FSIZE, &old) == 0);
	small.rlim_max = old.rlim_max;
	signal(SIGXFSZ, SIG_IGN);
	REQUIRE(weft__paraver_writer_create(o.prv, o.pcf, o.row, dir, &w) == 0);
	CHECK_EQ_I64(weft__paraver_writer_set_window(w, 3 * 48), 0);
	REQUIRE(setrlimit(RLIMIT_FSIZE, &small) == 0);
	for (int k = 0; k < 40; k++)
		d_run(weft__paraver_writer_sink(w), &sc);
	CHECK_EQ_I64(weft__paraver_writer_finish(w), WEFT_EIO);
	CHECK(strstr(weft_last_error(), "cannot write") != NULL);
	REQUIRE(setrlimit(RLIMIT_FSIZE, &old) == 0);
	weft__paraver_writer_free(w);
	close_outputs(&o);
}

/*
 * Message ends become communication records (3:) at their send's time,
 * with both rows, both times, length and tag: the direct path (records in
 * the window, late ones merged) writes the same as the sort path; every
 * message received is one record, sent from the row and time of its
 * send; ends whose other end never came are counted.
 */
/* An instant that is the `end` of message `id`, with a length when > 0. */
static void message_end(const weft__view_sink *s, uint32_t track, uint64_t t, uint64_t id,
			int end, uint64_t length, int64_t tag)
{
	weft_field args[2] = {
		{ .name = "length", .name_len = 6, .type = WEFT_TYPE_U64, .v.u = length },
		{ .name = "tag", .name_len = 3, .type = WEFT_TYPE_I32, .v.i = tag },
	};
	weft__view_track tr = track_ref(track);
	weft__view_item it = item_of(end == WEFT_FLOW_OUT ? "send" : "recv", "mpi",
				     length > 0 ? args : args + 1, length > 0 ? 2 : 1);
	it.flow_id = id;
	it.flow_end = end;
	s->instant(s->ctx, &tr, BASE + t, &it);
}

/* Two messages (one received before it is sent, on skewed clocks) and one never received. */
static void test_communication_fields(const char *dir)
{
	outfiles o;
	weft__paraver_writer *w;
	weft__paraver_stats st;
	parsed p;

	open_outputs(&o, dir, "comm");
	REQUIRE(weft__paraver_writer_create(o.prv, o.pcf, o.row, dir, &w) == 0);
	const weft__view_sink *s = weft__paraver_writer_sink(w);
	declare(s, 1, 0, WEFT__TRACK_PROCESS, "rank.0");
	declare(s, 2, 1, WEFT__TRACK_THREAD, "t");
	declare(s, 3, 0, WEFT__TRACK_PROCESS, "rank.1");
	declare(s, 4, 3, WEFT__TRACK_THREAD, "t");
	message_end(s, 2, 10, 7, WEFT_FLOW_OUT, 64, 5);
	message_end(s, 4, 20, 7, WEFT_FLOW_IN, 0, 5);
	message_end(s, 2, 30, 9, WEFT_FLOW_IN, 128, -2);
	message_end(s, 4, 40, 9, WEFT_FLOW_OUT, 0, 0);
	message_end(s, 2, 50, 11, WEFT_FLOW_OUT, 8, 1);
	CHECK_EQ_I64(weft__paraver_writer_finish(w), 0);
	weft__paraver_writer_stats(w, &st);
	weft__paraver_writer_free(w);
	close_outputs(&o);
	CHECK_EQ_U64(st.comm_records, 2);
	CHECK_EQ_U64(st.comm_unmatched, 1);
	parse_files(o.base, &p);
	check_consistency(&p);
	const prv_rec *c[2] = { NULL, NULL };
	int n = 0;
	for (size_t i = 0; i < p.rec_count; i++)
		if (p.recs[i].kind == 3 && n < 2)
			c[n++] = &p.recs[i];
	REQUIRE(n == 2);
	/* times from the first record (10); task 1 = rank.0, task 2 = rank.1 */
	CHECK(c[0]->task == 1 && c[0]->thread == 1 && c[0]->time == 0);
	CHECK(c[0]->type == (2u << 16 | 1) && c[0]->end == 10);
	CHECK(c[0]->value == 64 && c[0]->tag == 5);
	CHECK(c[1]->task == 2 && c[1]->thread == 1 && c[1]->time == 30);
	CHECK(c[1]->type == (1u << 16 | 1) && c[1]->end == 20);
	CHECK(c[1]->value == 128 && c[1]->tag == -2);
	free(p.recs);
}

static void test_communications(const char *dir)
{
	scenario sc = { .messages = 1 };
	parsed want, got;
	weft__paraver_stats st;

	d_convert(dir, "c-sort", 0, &sc, &want, &st);
	CHECK_EQ_U64(st.direct, 0);
	uint64_t comms = 0;
	for (size_t i = 0; i < want.rec_count; i++) {
		const prv_rec *r = &want.recs[i];
		if (r->kind != 3)
			continue;
		comms++;
		CHECK(r->value % 8 == 0 && r->tag >= -3 && r->tag <= 3);
		/* its send: a "tick" on the sender's row at the send time */
		int found = 0;
		for (size_t j = 0; j < want.rec_count && !found; j++)
			found = want.recs[j].kind == 2 && want.recs[j].time == r->time &&
				want.recs[j].task == r->task && want.recs[j].thread == r->thread;
		CHECK(found);
	}
	CHECK(comms > 100);
	CHECK_EQ_U64(st.comm_records, comms);
	CHECK(st.comm_unmatched > 0);   /* the sends left in the queue */
	CHECK_EQ_U64(st.comm_dropped, 0);
	for (uint64_t window = 3 * 48; window <= 300 * 48; window *= 10) {
		char name[32];
		snprintf(name, sizeof name, "c-%llu", (unsigned long long)window);
		d_convert(dir, name, window, &sc, &got, &st);
		check_same(&want, &got);
		CHECK_EQ_U64(st.direct, 1);
		CHECK_EQ_U64(st.rebuilt, 0);
		CHECK_EQ_U64(st.comm_records, comms);
		if (window == 3 * 48)
			CHECK(st.late_records > 0); /* sends older than the output */
		free(got.recs);
	}
	free(want.recs);
	/* With what forces a rebuild: the written part, messages included,
	 * read back and merged. */
	sc.late_begin = 1;
	d_convert(dir, "c-sort-2", 0, &sc, &want, &st);
	d_convert(dir, "c-rebuilt", 30 * 48, &sc, &got, &st);
	check_same(&want, &got);
	CHECK_EQ_U64(st.rebuilt, 1);
	free(got.recs);
	free(want.recs);
}

/* Complete spans before the first write (Heph): the sort path, as before. */
static void test_direct_heph(const char *dir)
{
	outfiles o;
	weft__paraver_writer *w;
	weft__paraver_stats st;

	open_outputs_rw(&o, dir, "heph");
	REQUIRE(weft__paraver_writer_create(o.prv, o.pcf, o.row, dir, &w) == 0);
	CHECK_EQ_I64(weft__paraver_writer_set_window(w, 4 * 48), 0);
	const weft__view_sink *s = weft__paraver_writer_sink(w);
	declare(s, 1, 0, WEFT__TRACK_PROCESS, "proc");
	events_many(s);
	CHECK_EQ_I64(weft__paraver_writer_finish(w), 0);
	weft__paraver_writer_stats(w, &st);
	CHECK_EQ_U64(st.direct, 0);
	weft__paraver_writer_free(w);
	close_outputs(&o);
}

/* Each case writes its files into one scratch directory. */
int main(void)
{
	char *dir = tu_mkdtemp("paraver");

	signal(SIGPIPE, SIG_IGN);
	REQUIRE(dir != NULL);
	test_small(dir);
	test_many(dir);
	test_object_warning(dir);
	test_bad_output(dir);
	test_label_budget(dir);
	test_empty(dir);
	test_direct(dir);
	test_direct_in_place(dir);
	test_direct_rebuild(dir);
	test_direct_heph(dir);
	test_direct_failing_output(dir);
	test_communication_fields(dir);
	test_communications(dir);
	return tu_finish_dir(dir);
}
