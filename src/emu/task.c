/* SPDX-License-Identifier: MIT */
/*
 * emu/task.c - task types, tasks and bodies (task.h), with ovniemu 1.14's
 * rules and messages (its src/emu/task.c and body.c restated, not copied).
 *
 * Map:
 *   type values   the label hash
 *   finished      the compact table of finished tasks (pages, or a hash
 *                 when ids are sparse)
 *   registry      types and tasks of a process
 *   bodies        execute, pause, resume, end on a thread's body stack
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "emu/task.h"

#define LABEL_MAX 512          /* ovniemu's longest .pcf label, NUL included */
#define PAGE_IDS 1024u         /* ids per page of finished tasks */
#define FINISHED_TYPE_MAX (1u << 24)

/* ---- Type values ---------------------------------------------------------------- */

/* Bob Jenkins' lookup2 mixing of three 32-bit words. */
#define MIX(a, b, c) do {                                   \
	a -= b; a -= c; a ^= (c >> 13);                     \
	b -= c; b -= a; b ^= (a << 8);                      \
	c -= a; c -= b; c ^= (b >> 13);                     \
	a -= b; a -= c; a ^= (c >> 12);                     \
	b -= c; b -= a; b ^= (a << 16);                     \
	c -= a; c -= b; c ^= (b >> 5);                      \
	a -= b; a -= c; a ^= (c >> 3);                      \
	b -= c; b -= a; b ^= (a << 10);                     \
	c -= a; c -= b; c ^= (b >> 15);                     \
} while (0)

/* Little-endian 32-bit word of the n (<= 4) bytes at p. */
static uint32_t word(const unsigned char *p, size_t n)
{
	uint32_t w = 0;
	for (size_t i = 0; i < n; i++)
		w |= (uint32_t)p[i] << (8 * i);
	return w;
}

uint32_t weft__emu_type_value(const char *label, size_t len)
{
	const unsigned char *k = (const unsigned char *)label;
	uint32_t a = 0x9e3779b9u, b = 0x9e3779b9u, c = 0xfeedbeefu;
	size_t left = len;
	for (; left >= 12; k += 12, left -= 12) {
		a += word(k, 4);
		b += word(k + 4, 4);
		c += word(k + 8, 4);
		MIX(a, b, c);
	}
	c += (uint32_t)len;
	/* the tail: bytes 0-3 into a, 4-7 into b, 8-10 into c's upper bytes */
	a += word(k, left < 4 ? left : 4);
	if (left > 4)
		b += word(k + 4, left < 8 ? left - 4 : 4);
	if (left > 8)
		c += word(k + 8, left - 8) << 8;
	MIX(a, b, c);
	uint32_t v = (c + 666u) & 0x7fffffffu;
	return v < 1000 ? v + 1000 : v;
}

/* ---- Finished tasks ---------------------------------------------------------------- */

/*
 * What is kept of a finished task: its type index and flags in one word
 * whose top bit marks it present. Dense ids (nOS-V numbers the tasks of a
 * process 1, 2, ...) go into pages of PAGE_IDS words; when the pages are
 * mostly empty (sparse ids), every entry moves to a hash of id and word.
 */
typedef struct finished {
	weft__emu_idmap *pages;   /* id / PAGE_IDS -> uint32_t[PAGE_IDS] */
	uint64_t *slots;          /* the sparse form: id | word << 32, 0 empty */
	size_t cap, count;
	int sparse;
} finished;

static uint32_t pack(const weft__emu_task *t)
{
	return 0x80000000u | (t->flags & 0x7fu) << 24 | t->type;
}

static size_t hash_slot(uint32_t id, size_t cap)
{
	return (size_t)(((uint64_t)id * 0x9E3779B97F4A7C15ull) >> 32) & (cap - 1);
}

/* Stores `w` for `id` in the sparse form (grown at 7/8). 0 or WEFT_ENOMEM. */
static int sparse_put(finished *f, uint32_t id, uint32_t w)
{
	if ((f->count + 1) * 8 > f->cap * 7) {
		size_t cap = f->cap ? f->cap * 2 : 1024;
		uint64_t *s = calloc(cap, sizeof *s);
		if (s == NULL)
			return WEFT_ENOMEM;
		for (size_t j = 0; j < f->cap; j++) {
			if (f->slots[j] == 0)
				continue;
			size_t i = hash_slot((uint32_t)f->slots[j], cap);
			while (s[i] != 0)
				i = (i + 1) & (cap - 1);
			s[i] = f->slots[j];
		}
		free(f->slots);
		f->slots = s;
		f->cap = cap;
	}
	size_t i = hash_slot(id, f->cap);
	while (f->slots[i] != 0 && (uint32_t)f->slots[i] != id)
		i = (i + 1) & (f->cap - 1);
	f->count += f->slots[i] == 0;
	f->slots[i] = (uint64_t)w << 32 | id;
	return 0;
}

/* The word kept for `id`, or 0. */
static uint32_t finished_get(const finished *f, uint32_t id)
{
	if (f->sparse) {
		for (size_t i = f->cap ? hash_slot(id, f->cap) : 0; f->cap; i = (i + 1) & (f->cap - 1)) {
			if (f->slots[i] == 0)
				return 0;
			if ((uint32_t)f->slots[i] == id)
				return (uint32_t)(f->slots[i] >> 32);
		}
		return 0;
	}
	uint64_t page;
	if (f->pages == NULL || !weft__emu_idmap_get(f->pages, id / PAGE_IDS, &page))
		return 0;
	return ((const uint32_t *)(uintptr_t)page)[id % PAGE_IDS];
}

/* Moves every paged entry into the sparse form. 0 or WEFT_ENOMEM. */
static int page_to_sparse(void *ctx, uint32_t pno, uint64_t page)
{
	finished *f = ctx;
	const uint32_t *w = (const uint32_t *)(uintptr_t)page;
	for (uint32_t k = 0; k < PAGE_IDS; k++)
		if (w[k] != 0 && sparse_put(f, pno * PAGE_IDS + k, w[k]) < 0)
			return WEFT_ENOMEM;
	return 0;
}

static int free_page(void *ctx, uint32_t pno, uint64_t page)
{
	(void)ctx;
	(void)pno;
	free((void *)(uintptr_t)page);
	return 0;
}

/* Keeps `w` for `id`. 0 or WEFT_ENOMEM. */
static int finished_put(finished *f, uint32_t id, uint32_t w)
{
	if (f->sparse)
		return sparse_put(f, id, w);
	if (f->pages == NULL && (f->pages = weft__emu_idmap_new()) == NULL)
		return WEFT_ENOMEM;
	uint64_t page;
	if (!weft__emu_idmap_get(f->pages, id / PAGE_IDS, &page)) {
		uint32_t *p = calloc(PAGE_IDS, sizeof *p);
		if (p == NULL || weft__emu_idmap_put(f->pages, id / PAGE_IDS, (uintptr_t)p) < 0) {
			free(p);
			return WEFT_ENOMEM;
		}
		page = (uintptr_t)p;
		/* mostly empty pages: ids are sparse, a hash costs less */
		size_t npages = weft__emu_idmap_count(f->pages);
		if (npages > 64 && npages * PAGE_IDS > 32 * (f->count + 1)) {
			size_t count = f->count;
			f->count = 0;
			if (weft__emu_idmap_each(f->pages, page_to_sparse, f) != 0)
				return WEFT_ENOMEM;
			weft__emu_idmap_each(f->pages, free_page, NULL);
			weft__emu_idmap_free(f->pages);
			f->pages = NULL;
			f->sparse = 1;
			(void)count;
			return sparse_put(f, id, w);
		}
	}
	uint32_t *slot = &((uint32_t *)(uintptr_t)page)[id % PAGE_IDS];
	f->count += *slot == 0;
	*slot = w;
	return 0;
}

static void finished_free(finished *f)
{
	if (f->pages != NULL) {
		weft__emu_idmap_each(f->pages, free_page, NULL);
		weft__emu_idmap_free(f->pages);
	}
	free(f->slots);
}

/* ---- Registry -------------------------------------------------------------------- */

struct weft__emu_tasks {
	weft__emu_task_type *types;
	size_t ntypes, types_cap;
	weft__emu_idmap *type_index;  /* type id -> index + 1 */
	weft__emu_idmap *live;        /* task id -> weft__emu_task * */
	finished done;
	/* the task that finished last, freed when the next one finishes, so
	 * that a handler may still look at the body it just ended */
	weft__emu_task *retired;
};

weft__emu_tasks *weft__emu_tasks_new(void)
{
	weft__emu_tasks *t = calloc(1, sizeof *t);
	if (t == NULL)
		return NULL;
	t->type_index = weft__emu_idmap_new();
	t->live = weft__emu_idmap_new();
	if (t->type_index == NULL || t->live == NULL) {
		weft__emu_tasks_free(t);
		return NULL;
	}
	return t;
}

/* Frees a task and its bodies. */
static void task_free(weft__emu_task *task)
{
	if (task->bodies != NULL) {
		weft__emu_idmap_each(task->bodies, free_page, NULL);
		weft__emu_idmap_free(task->bodies);
	}
	free(task);
}

static int free_task(void *ctx, uint32_t id, uint64_t value)
{
	(void)ctx;
	(void)id;
	task_free((weft__emu_task *)(uintptr_t)value);
	return 0;
}

void weft__emu_tasks_free(weft__emu_tasks *t)
{
	if (t == NULL)
		return;
	for (size_t i = 0; i < t->ntypes; i++)
		free(t->types[i].label);
	free(t->types);
	weft__emu_idmap_free(t->type_index);
	if (t->live != NULL)
		weft__emu_idmap_each(t->live, free_task, NULL);
	weft__emu_idmap_free(t->live);
	finished_free(&t->done);
	if (t->retired != NULL)
		task_free(t->retired);
	free(t);
}

int weft__emu_type_create(weft__emu *e, weft__emu_tasks *t, uint32_t id, const char *label,
			  size_t len)
{
	char buf[LABEL_MAX];
	uint64_t index;
	if (id == 0)
		return weft__emu_fail(e, "invalid task type id 0");
	if (weft__emu_idmap_get(t->type_index, id, &index))
		return weft__emu_fail(e, "a task type with id %" PRIu32 " already exists", id);
	if (len == 0)
		len = (size_t)snprintf(buf, sizeof buf, "(unlabeled task type %" PRIu32 ")", id);
	else if (len >= LABEL_MAX)
		return weft__emu_fail(e, "task type %" PRIu32 " label too long", id);
	else
		memcpy(buf, label, len);
	buf[len] = '\0';
	if (t->ntypes == t->types_cap) {
		size_t cap = t->types_cap ? t->types_cap * 2 : 8;
		weft__emu_task_type *g = realloc(t->types, cap * sizeof *g);
		if (g == NULL)
			return weft__emu_fail(e, "out of memory");
		t->types = g;
		t->types_cap = cap;
	}
	char *copy = malloc(len + 1);
	if (copy == NULL || t->ntypes >= FINISHED_TYPE_MAX ||
	    weft__emu_idmap_put(t->type_index, id, t->ntypes + 1) < 0) {
		free(copy);
		return weft__emu_fail(e, "out of memory");
	}
	memcpy(copy, buf, len + 1);
	t->types[t->ntypes++] = (weft__emu_task_type){ id, weft__emu_type_value(buf, len), copy };
	return 0;
}

const weft__emu_task_type *weft__emu_type_at(const weft__emu_tasks *t, uint32_t i)
{
	return i < t->ntypes ? &t->types[i] : NULL;
}

size_t weft__emu_type_count(const weft__emu_tasks *t)
{
	return t->ntypes;
}

const weft__emu_task_type *weft__emu_type_find(const weft__emu_tasks *t, uint32_t id)
{
	uint64_t index;
	return weft__emu_idmap_get(t->type_index, id, &index) ? &t->types[index - 1] : NULL;
}

/* A task held whole, with its one body (non-parallel) ready. */
static weft__emu_task *task_new(uint32_t id, uint32_t type, uint32_t flags)
{
	weft__emu_task *task = calloc(1, sizeof *task);
	if (task == NULL)
		return NULL;
	task->id = id;
	task->type = type;
	task->flags = flags;
	task->body = (weft__emu_body){ .id = 1, .state = WEFT__BODY_CREATED, .thread = -1,
				       .task = task };
	return task;
}

int weft__emu_task_create(weft__emu *e, weft__emu_tasks *t, uint32_t id, uint32_t type_id,
			  uint32_t flags)
{
	uint64_t v;
	if (weft__emu_idmap_get(t->live, id, &v) || finished_get(&t->done, id) != 0)
		return weft__emu_fail(e, "task_id %" PRIu32 " already exists", id);
	if (!weft__emu_idmap_get(t->type_index, type_id, &v))
		return weft__emu_fail(e, "unknown type id %" PRIu32, type_id);
	weft__emu_task *task = task_new(id, (uint32_t)v - 1, flags);
	if (task == NULL || weft__emu_idmap_put(t->live, id, (uintptr_t)task) < 0) {
		free(task);
		return weft__emu_fail(e, "out of memory");
	}
	return 0;
}

weft__emu_task *weft__emu_task_find(weft__emu *e, weft__emu_tasks *t, uint32_t id)
{
	uint64_t v;
	if (weft__emu_idmap_get(t->live, id, &v))
		return (weft__emu_task *)(uintptr_t)v;
	uint32_t w = finished_get(&t->done, id);
	if (w == 0)
		return NULL;
	/* a finished task comes back whole: its one body dead */
	weft__emu_task *task = task_new(id, w & (FINISHED_TYPE_MAX - 1), (w >> 24) & 0x7fu);
	if (task == NULL || weft__emu_idmap_put(t->live, id, (uintptr_t)task) < 0) {
		free(task);
		weft__emu_fail(e, "out of memory");
		return NULL;
	}
	task->nbodies = 1;
	task->body.state = WEFT__BODY_DEAD;
	return task;
}

/* Files a finished non-parallel task away (its body dead and off every stack). */
static int task_finished(weft__emu *e, weft__emu_tasks *t, weft__emu_task *task)
{
	if (finished_put(&t->done, task->id, pack(task)) < 0)
		return weft__emu_fail(e, "out of memory");
	weft__emu_idmap_del(t->live, task->id);
	if (t->retired != NULL)
		task_free(t->retired);
	t->retired = task;
	return 0;
}

size_t weft__emu_tasks_finished(const weft__emu_tasks *t)
{
	return t->done.count;
}

size_t weft__emu_tasks_live(const weft__emu_tasks *t)
{
	return weft__emu_idmap_count(t->live);
}

/* ---- Bodies ------------------------------------------------------------------------ */

static const char *state_name(const weft__emu_body *b)
{
	static const char *const names[] = { "?", "Created", "Running", "Paused", "Dead" };
	return b->state <= WEFT__BODY_DEAD ? names[b->state] : "?";
}

/* "body(id=1,taskid=2)" */
static const char *body_name(const weft__emu_body *b, char *buf, size_t cap)
{
	snprintf(buf, cap, "body(id=%" PRIu32 ",taskid=%" PRIu32 ")", b->id, b->task->id);
	return buf;
}

weft__emu_body *weft__emu_body_top(const weft__emu_body_stack *s)
{
	return s->n ? s->b[s->n - 1] : NULL;
}

weft__emu_body *weft__emu_body_running(const weft__emu_body_stack *s)
{
	weft__emu_body *top = weft__emu_body_top(s);
	return top != NULL && top->state == WEFT__BODY_RUNNING ? top : NULL;
}

void weft__emu_body_stack_free(weft__emu_body_stack *s)
{
	free(s->b);
	memset(s, 0, sizeof *s);
}

/* The body `id` of a task, or NULL. */
static weft__emu_body *body_find(weft__emu_task *task, uint32_t id)
{
	uint64_t v;
	if (!(task->flags & WEFT__TASK_PARALLEL))
		return task->nbodies > 0 && id == task->body.id ? &task->body : NULL;
	if (task->bodies == NULL || !weft__emu_idmap_get(task->bodies, id, &v))
		return NULL;
	return (weft__emu_body *)(uintptr_t)v;
}

/* Creates body `id` on its first execution. */
static weft__emu_body *body_create(weft__emu *e, weft__emu_task *task, uint32_t id)
{
	if (!(task->flags & WEFT__TASK_PARALLEL) && task->nbodies > 0) {
		weft__emu_fail(e, "cannot create more than one body for non-parallel task %"
			       PRIu32, task->id);
		return NULL;
	}
	if (id == 0) {
		weft__emu_fail(e, "body id %" PRIu32 " must be non-zero", id);
		return NULL;
	}
	weft__emu_body *b = &task->body;
	if (task->flags & WEFT__TASK_PARALLEL) {
		if ((task->bodies == NULL && (task->bodies = weft__emu_idmap_new()) == NULL) ||
		    (b = malloc(sizeof *b)) == NULL ||
		    weft__emu_idmap_put(task->bodies, id, (uintptr_t)b) < 0) {
			if (b != &task->body)
				free(b);
			weft__emu_fail(e, "out of memory");
			return NULL;
		}
	}
	*b = (weft__emu_body){ .id = id, .state = WEFT__BODY_CREATED, .thread = -1, .task = task };
	task->nbodies++;
	return b;
}

/* The body a transition names, which must exist. */
static weft__emu_body *body_named(weft__emu *e, weft__emu_task *task, uint32_t id)
{
	weft__emu_body *b = body_find(task, id);
	if (b == NULL)
		weft__emu_fail(e, "cannot find body with id %" PRIu32 " in task %" PRIu32, id,
			       task->id);
	return b;
}

/* The checks of pause, resume and end: the body is `want` and on top of this stack. */
static int body_on_top(weft__emu *e, const weft__emu_body_stack *s, int32_t thread,
		       const weft__emu_body *b, int want, const char *want_name)
{
	char name[96];
	if (b->state != want)
		return weft__emu_fail(e, "%s state must be %s but is %s",
				      body_name(b, name, sizeof name), want_name, state_name(b));
	if (b->thread < 0)
		return weft__emu_fail(e, "%s stack not set", body_name(b, name, sizeof name));
	if (b->thread != thread)
		return weft__emu_fail(e, "%s has another stack", body_name(b, name, sizeof name));
	if (weft__emu_body_top(s) != b)
		return weft__emu_fail(e, "%s is not on top of the stack",
				      body_name(b, name, sizeof name));
	return 0;
}

int weft__emu_task_execute(weft__emu *e, weft__emu_tasks *t, weft__emu_body_stack *s,
			   int32_t thread, weft__emu_task *task, uint32_t body_id)
{
	char name[96], other[96];
	(void)t;
	weft__emu_body *b = body_find(task, body_id);
	if (b == NULL && (b = body_create(e, task, body_id)) == NULL)
		return -1;
	if (b->state == WEFT__BODY_DEAD) {
		if (!(task->flags & WEFT__TASK_RESURRECT))
			return weft__emu_fail(e, "%s is not allowed to run again",
					      body_name(b, name, sizeof name));
		b->state = WEFT__BODY_CREATED;
		b->iteration++;
	}
	if (b->state == WEFT__BODY_PAUSED)
		return weft__emu_fail(e, "refusing to run %s in Paused state, needs to resume "
				      "intead", body_name(b, name, sizeof name));
	if (b->state != WEFT__BODY_CREATED)
		return weft__emu_fail(e, "%s state must be Created but is %s",
				      body_name(b, name, sizeof name), state_name(b));
	if (b->thread >= 0)
		return weft__emu_fail(e, "%s stack already set", body_name(b, name, sizeof name));
	weft__emu_body *top = weft__emu_body_running(s);
	if (top != NULL) {
		if (!(top->task->flags & WEFT__TASK_RELAX_NESTING))
			return weft__emu_fail(e, "cannot nest %s over %s which is already running",
					      body_name(b, name, sizeof name),
					      body_name(top, other, sizeof other));
		weft__emu_warn(e, "deprecated nesting %s over already running %s",
			       body_name(b, name, sizeof name), body_name(top, other, sizeof other));
	}
	if (s->n == s->cap) {
		uint32_t cap = s->cap ? s->cap * 2 : 8;
		weft__emu_body **g = realloc(s->b, cap * sizeof *g);
		if (g == NULL)
			return weft__emu_fail(e, "out of memory");
		s->b = g;
		s->cap = cap;
	}
	s->b[s->n++] = b;
	b->thread = thread;
	b->state = WEFT__BODY_RUNNING;
	return 0;
}

int weft__emu_task_pause(weft__emu *e, weft__emu_body_stack *s, int32_t thread,
			 weft__emu_task *task, uint32_t body_id)
{
	char name[96];
	weft__emu_body *b = body_named(e, task, body_id);
	if (b == NULL)
		return -1;
	if (!(task->flags & WEFT__TASK_PAUSE))
		return weft__emu_fail(e, "%s is not allowed to pause",
				      body_name(b, name, sizeof name));
	if (body_on_top(e, s, thread, b, WEFT__BODY_RUNNING, "Running") < 0)
		return -1;
	b->state = WEFT__BODY_PAUSED;
	return 0;
}

int weft__emu_task_resume(weft__emu *e, weft__emu_body_stack *s, int32_t thread,
			  weft__emu_task *task, uint32_t body_id)
{
	weft__emu_body *b = body_named(e, task, body_id);
	if (b == NULL || body_on_top(e, s, thread, b, WEFT__BODY_PAUSED, "Paused") < 0)
		return -1;
	b->state = WEFT__BODY_RUNNING;
	return 0;
}

int weft__emu_task_end(weft__emu *e, weft__emu_tasks *t, weft__emu_body_stack *s,
		       int32_t thread, weft__emu_task *task, uint32_t body_id)
{
	weft__emu_body *b = body_named(e, task, body_id);
	if (b == NULL || body_on_top(e, s, thread, b, WEFT__BODY_RUNNING, "Running") < 0)
		return -1;
	b->state = WEFT__BODY_DEAD;
	b->thread = -1;
	s->n--;
	return task->flags & WEFT__TASK_PARALLEL ? 0 : task_finished(e, t, task);
}
