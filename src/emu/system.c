/* SPDX-License-Identifier: MIT */
/*
 * emu/system.c - the looms, processes, threads and CPUs of an ovni trace
 * as ovniemu numbers them (docs/emulation.md, section 1.3), read from the
 * trace's nodes and their merged metadata (public API only).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "core/internal.h"
#include "emu/emu.h"

/* ---- Metadata -------------------------------------------------------------- */

/* The "ovni" object of a node's merged metadata (a new reference), or NULL. */
static json_t *node_ovni(const weft_node *n)
{
	json_t *root = json_loads(n->metadata_json, 0, NULL);
	json_t *ovni = json_incref(json_object_get(root, "ovni"));
	json_decref(root);
	return ovni;
}

/* An integer key of an "ovni" object, or `def` when missing or not an integer. */
static int64_t ovni_int(const json_t *ovni, const char *key, int64_t def)
{
	const json_t *v = json_object_get(ovni, key);
	return json_is_integer(v) ? (int64_t)json_integer_value(v) : def;
}

/* The ancestor of node `id` of the given kind, or NULL. */
static const weft_node *ancestor(const weft_trace *t, uint32_t id, const char *kind)
{
	while (id != WEFT_NO_PARENT) {
		const weft_node *n = weft_trace_node(t, id);
		if (n == NULL)
			return NULL;
		if (strcmp(n->kind, kind) == 0)
			return n;
		id = n->parent;
	}
	return NULL;
}

/* ---- Collecting the objects ------------------------------------------------ */

/* Building state: the system and where each node went (SIZE_MAX: nowhere). */
typedef struct build {
	const weft_trace *trace;
	weft__emu_system *sys;
	size_t *slot;        /* per node id: index in looms or procs */
	size_t nnodes;
} build;

/* The loom of node `n`, added on first sight; SIZE_MAX when out of memory. */
static size_t add_loom(build *b, const weft_node *n)
{
	if (b->slot[n->id] != SIZE_MAX)
		return b->slot[n->id];
	weft__emu_system *s = b->sys;
	weft__emu_loom *p = realloc(s->looms, (s->nlooms + 1) * sizeof *p);
	if (p == NULL)
		return SIZE_MAX;
	s->looms = p;
	p[s->nlooms] = (weft__emu_loom){ .node = n->id, .id = n->name,
					 .min_rank = -1, .ranked = 1 };
	return b->slot[n->id] = s->nlooms++;
}

/* The process of node `n` in loom `loom`, added on first sight. */
static size_t add_proc(build *b, const weft_node *n, size_t loom)
{
	if (b->slot[n->id] != SIZE_MAX)
		return b->slot[n->id];
	weft__emu_system *s = b->sys;
	weft__emu_proc *p = realloc(s->procs, (s->nprocs + 1) * sizeof *p);
	if (p == NULL)
		return SIZE_MAX;
	s->procs = p;
	json_t *ovni = node_ovni(n);
	p[s->nprocs] = (weft__emu_proc){ .node = n->id, .loom = loom, .pid = n->number,
					 .rank = ovni_int(ovni, "rank", -1),
					 .app_id = ovni_int(ovni, "app_id", 0) };
	json_decref(ovni);
	return b->slot[n->id] = s->nprocs++;
}

/*
 * Adds the thread of stream `i` with its process and loom. Streams that
 * are not loom.*\/proc.*\/thread.* are left out, as ovniemu ignores them.
 */
static int add_stream(build *b, size_t i)
{
	const weft_stream_info *si = weft_trace_stream(b->trace, i);
	const weft_node *th = ancestor(b->trace, si->node, "thread");
	const weft_node *pr = th ? ancestor(b->trace, th->parent, "process") : NULL;
	const weft_node *lo = pr ? ancestor(b->trace, pr->parent, "loom") : NULL;
	if (lo == NULL)
		return 0;
	size_t loom = add_loom(b, lo);
	size_t proc = loom == SIZE_MAX ? SIZE_MAX : add_proc(b, pr, loom);
	weft__emu_system *s = b->sys;
	weft__emu_thread *p = proc == SIZE_MAX ? NULL
		: realloc(s->threads, (s->nthreads + 1) * sizeof *p);
	if (p == NULL)
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	s->threads = p;
	p[s->nthreads++] = (weft__emu_thread){ .stream = (uint32_t)i, .node = th->id,
					       .proc = proc, .tid = th->number };
	return 0;
}

/* ---- Sorting ---------------------------------------------------------------- */

/* Compares two int64 keys. */
static int cmp_i64(int64_t a, int64_t b)
{
	return (a > b) - (a < b);
}

/* Looms by their lowest rank (then name). */
static int cmp_loom_rank(const void *pa, const void *pb)
{
	const weft__emu_loom *a = pa, *b = pb;
	int c = cmp_i64(a->min_rank, b->min_rank);
	return c ? c : strcmp(a->id, b->id);
}

/* Looms by name ("loom.<hostname>...", as ovniemu's loom ids). */
static int cmp_loom_name(const void *pa, const void *pb)
{
	const weft__emu_loom *a = pa, *b = pb;
	return strcmp(a->id, b->id);
}

/* Processes by loom, then their key (rank when the loom is ranked, else pid). */
static int cmp_proc(const void *pa, const void *pb)
{
	const weft__emu_proc *a = pa, *b = pb;
	int c = cmp_i64((int64_t)a->loom, (int64_t)b->loom);
	if (c == 0)
		c = cmp_i64(a->key, b->key);
	return c ? c : cmp_i64(a->pid, b->pid);
}

/* Threads by process, then tid. */
static int cmp_thread(const void *pa, const void *pb)
{
	const weft__emu_thread *a = pa, *b = pb;
	int c = cmp_i64((int64_t)a->proc, (int64_t)b->proc);
	return c ? c : cmp_i64(a->tid, b->tid);
}

/*
 * Rank facts of the looms: the lowest rank of each, and whether all its
 * processes have one. Returns 1 when every process of the trace has a
 * rank (ovniemu then sorts the looms by rank, else by name).
 */
static int rank_looms(weft__emu_system *s)
{
	int all = s->nprocs > 0;
	for (size_t i = 0; i < s->nprocs; i++) {
		weft__emu_loom *l = &s->looms[s->procs[i].loom];
		int64_t r = s->procs[i].rank;
		if (r < 0)
			l->ranked = all = 0;
		else if (l->min_rank < 0 || r < l->min_rank)
			l->min_rank = r;
	}
	return all;
}

/*
 * Sorts looms, processes and threads into ovniemu's order and renumbers
 * the references between them (through b->slot, per node id).
 */
static void sort_objects(build *b)
{
	weft__emu_system *s = b->sys;
	s->looms_by_rank = rank_looms(s);
	qsort(s->looms, s->nlooms, sizeof *s->looms,
	      s->looms_by_rank ? cmp_loom_rank : cmp_loom_name);
	for (size_t i = 0; i < s->nlooms; i++)
		b->slot[s->looms[i].node] = i;
	for (size_t i = 0; i < s->nprocs; i++) {
		const weft_node *lo = ancestor(b->trace, s->procs[i].node, "loom");
		s->procs[i].loom = b->slot[lo->id];
		s->procs[i].key = s->looms[s->procs[i].loom].ranked
			? s->procs[i].rank : s->procs[i].pid;
	}
	qsort(s->procs, s->nprocs, sizeof *s->procs, cmp_proc);
	for (size_t i = 0; i < s->nprocs; i++)
		b->slot[s->procs[i].node] = i;
	for (size_t i = 0; i < s->nthreads; i++) {
		const weft_node *pr = ancestor(b->trace, s->threads[i].node, "process");
		s->threads[i].proc = b->slot[pr->id];
	}
	qsort(s->threads, s->nthreads, sizeof *s->threads, cmp_thread);
}

/* ---- CPUs ------------------------------------------------------------------- */

/* A CPU of loom_cpus: its physical id and its index. */
typedef struct cpu_id {
	int64_t phyid, index;
} cpu_id;

/* By phyid, for qsort. */
static int cmp_phyid(const void *pa, const void *pb)
{
	return cmp_i64(((const cpu_id *)pa)->phyid, ((const cpu_id *)pb)->phyid);
}

/*
 * The distinct CPUs of a loom's merged loom_cpus, sorted by phyid
 * (malloc'd into *out, count returned), checked as ovniemu checks them:
 * a phyid listed twice keeps its index, indexes are 0..count-1 and each
 * names one CPU. WEFT_EFORMAT (file: the loom) or WEFT_ENOMEM.
 */
static int loom_cpu_ids(const weft_node *n, cpu_id **out)
{
	json_t *ovni = node_ovni(n);
	const json_t *cpus = json_object_get(ovni, "loom_cpus");
	size_t cap = json_array_size(cpus), count = 0;
	cpu_id *ids = malloc((cap ? cap : 1) * sizeof *ids);
	int rc = ids ? 0 : weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	for (size_t i = 0; rc == 0 && i < cap; i++) {
		const json_t *c = json_array_get(cpus, i);
		cpu_id id = { ovni_int(c, "phyid", -1), ovni_int(c, "index", -1) };
		size_t k = 0;
		while (k < count && ids[k].phyid != id.phyid)
			k++;
		if (id.phyid < 0 || id.index < 0)
			rc = weft__error(WEFT_EFORMAT, n->path, WEFT_NO_OFFSET,
					 "loom_cpus entry %zu has no valid phyid and index "
					 "(ovniemu refuses the trace at load)", i);
		else if (k < count && ids[k].index != id.index)
			rc = weft__error(WEFT_EFORMAT, n->path, WEFT_NO_OFFSET,
					 "CPU with phyid %" PRId64 " listed with indexes %" PRId64
					 " and %" PRId64 " (ovniemu: mismatch index in existing cpu)",
					 id.phyid, ids[k].index, id.index);
		else if (k == count)
			ids[count++] = id;
	}
	json_decref(ovni);
	/* every index names exactly one CPU of 0..count-1 */
	for (size_t i = 0; rc == 0 && i < count; i++)
		for (size_t j = 0; rc == 0 && j <= i; j++)
			if (ids[i].index >= (int64_t)count || (j < i && ids[j].index == ids[i].index))
				rc = weft__error(WEFT_EFORMAT, n->path, WEFT_NO_OFFSET,
						 "CPU index %" PRId64 " %s (the loom has %zu CPUs; "
						 "ovniemu refuses the trace at load)", ids[i].index,
						 ids[i].index >= (int64_t)count ? "out of bounds"
						 : "already taken", count);
	if (rc < 0) {
		free(ids);
		return rc;
	}
	qsort(ids, count, sizeof *ids, cmp_phyid);
	*out = ids;
	return (int)count;
}

/* Appends loom `l`'s physical CPUs (sorted by phyid) and its virtual CPU. */
static int add_loom_cpus(build *b, size_t l)
{
	weft__emu_system *s = b->sys;
	const weft_node *n = weft_trace_node(b->trace, s->looms[l].node);
	cpu_id *ids = NULL;
	int count = loom_cpu_ids(n, &ids);
	if (count == 0)
		count = weft__error(WEFT_EFORMAT, n->path, WEFT_NO_OFFSET,
				    "loom %s has no physical CPUs: no stream of it lists "
				    "valid ovni.loom_cpus (ovniemu refuses the trace at load, "
				    "loom_init_end)", strncmp(n->name, "loom.", 5) == 0
				    ? n->name + 5 : n->name);
	weft__emu_cpu *p = count < 0 ? NULL
		: realloc(s->cpus, (s->ncpus + (size_t)count + 1) * sizeof *p);
	if (p != NULL) {
		s->cpus = p;
		s->looms[l].first_cpu = s->ncpus;
		s->looms[l].ncpus = (size_t)count;
		for (int i = 0; i < count; i++)
			p[s->ncpus++] = (weft__emu_cpu){ .loom = l, .phyid = ids[i].phyid,
							 .index = ids[i].index };
		p[s->ncpus++] = (weft__emu_cpu){ .loom = l, .phyid = -1, .index = -1 };
	} else if (count >= 0) {
		count = weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	}
	free(ids);
	return count < 0 ? count : 0;
}

/* ---- Entry points ------------------------------------------------------------ */

/* Frees a system of weft__emu_system_load() (NULL is fine). */
void weft__emu_system_free(weft__emu_system *sys)
{
	if (sys == NULL)
		return;
	free(sys->looms);
	free(sys->procs);
	free(sys->threads);
	free(sys->cpus);
	free(sys);
}

/*
 * Builds the system: every stream's thread, process and loom, sorted as
 * ovniemu sorts them, then each loom's CPUs. Refuses a trace with no
 * thread stream, as ovniemu has nothing to emulate then.
 */
int weft__emu_system_load(const weft_trace *trace, weft__emu_system **out)
{
	*out = NULL;
	build b = { .trace = trace, .nnodes = weft_trace_node_count(trace) };
	b.sys = calloc(1, sizeof *b.sys);
	b.slot = malloc((b.nnodes ? b.nnodes : 1) * sizeof *b.slot);
	int rc = b.sys && b.slot ? 0
		: weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	for (size_t i = 0; rc == 0 && i < b.nnodes; i++)
		b.slot[i] = SIZE_MAX;
	for (size_t i = 0; rc == 0 && i < weft_trace_stream_count(trace); i++)
		rc = add_stream(&b, i);
	if (rc == 0 && b.sys->nthreads == 0)
		rc = weft__error(WEFT_EFORMAT, weft_trace_path(trace), WEFT_NO_OFFSET,
				 "no thread stream below loom.*/proc.*/thread.*: nothing to "
				 "emulate");
	if (rc == 0)
		sort_objects(&b);
	for (size_t l = 0; rc == 0 && l < b.sys->nlooms; l++)
		rc = add_loom_cpus(&b, l);
	free(b.slot);
	if (rc < 0)
		weft__emu_system_free(b.sys);
	else
		*out = b.sys;
	return rc;
}

/*
 * Last event time minus first over every stream, through one merged
 * cursor in time order (ovniemu's duration of an accepted trace).
 */
int weft__emu_duration(weft_trace *trace, uint64_t *out)
{
	weft_filter f = { .order = WEFT_ORDER_TIME };
	weft_cursor *c = NULL;
	const weft_event *ev;
	uint64_t first = UINT64_MAX, last = 0;
	int rc = weft_cursor_create(trace, &f, &c);
	while (rc >= 0 && (rc = weft_cursor_next(c, &ev)) == 1) {
		if (ev->time < first)
			first = ev->time;
		if (ev->time > last)
			last = ev->time;
	}
	weft_cursor_free(c);
	*out = first == UINT64_MAX ? 0 : last - first;
	return rc < 0 ? rc : 0;
}
