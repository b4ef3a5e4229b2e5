/* SPDX-License-Identifier: MIT */
/*
 * formats/pallas/pallas_check.c - weft_pallas_check(): what weft reads in
 * a Pallas trace but Pallas 0.20's own reader cannot (docs/pallas.md,
 * "What weft check says"), and what is inconsistent without stopping
 * weft's replay. Each finding is a diagnostic of the trace, for `weft
 * check`; nothing here is done when a trace is only read.
 *
 *   - archives: Pallas finds a thread at threads[id - first id] of an
 *     array of the archive file's thread count: ids must follow each other
 *     from the first (the smallest of the archive's own) and be as many as
 *     that count;
 *   - threads: the grammar below the root must fit Pallas's 100 frames,
 *     its id maps are the identity (weft reads ids as indexes);
 *     the root must hold one sequence or loop (an event first aborts its
 *     reader, several tokens stop pallas_print after the first); a thread
 *     without events, a trace without threads, delta timestamps;
 *   - every thread: each event occurs as often as it has timestamps and
 *     each sequence as often as its vectors have values (counted over the
 *     grammar, loops times their iterations); every region, string and
 *     attribute an event refers to is defined.
 *
 * The grammar is walked without recursion (a damaged one may be deep).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/pallas/pallas_internal.h"
#include "weft/pallas_grammar.h"

#define READER_FRAMES 100  /* Pallas 0.20's MAX_CALLSTACK_DEPTH: frames 0..99 */
#define REPORTS_MAX 10     /* findings of one kind listed per thread */

/* ---- Archives ------------------------------------------------------------------ */

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

/*
 * The location ids Pallas lists for archive `a`, in its order: its own,
 * sorted, then the main file's whose parent it is, sorted. malloc'd.
 */
static uint32_t *pallas_location_ids(const pallas_trace *pt, const pallas_archive *a,
				     size_t *n)
{
	size_t own = a->defs.location_count;
	uint32_t *ids = malloc((own + pt->defs.location_count + 1) * sizeof *ids);
	*n = 0;
	if (ids == NULL)
		return NULL;
	for (size_t k = 0; k < own; k++)
		ids[(*n)++] = a->defs.locations[k].id;
	qsort(ids, own, sizeof *ids, cmp_u32);
	for (size_t k = 0; k < pt->defs.location_count; k++)
		if (pt->defs.locations[k].parent == a->id)
			ids[(*n)++] = pt->defs.locations[k].id;
	qsort(ids + own, *n - own, sizeof *ids, cmp_u32);
	return ids;
}

/* Whether Pallas's threads[id - first] of `count` entries holds every id, once. */
static int ids_indexable(const uint32_t *ids, size_t n, uint32_t count, uint32_t *bad)
{
	uint8_t *seen = calloc(count ? count : 1, 1);
	int ok = seen != NULL;
	for (size_t k = 0; ok && k < n; k++) {
		uint32_t index = ids[k] - ids[0]; /* unsigned, as Pallas computes it */
		ok = index < count && !seen[index];
		if (ok)
			seen[index] = 1;
		else
			*bad = ids[k];
	}
	free(seen);
	return ok;
}

/* The archive findings: thread count and location ids against Pallas's indexing. */
static void check_archive(weft_trace *trace, const pallas_trace *pt, const pallas_archive *a)
{
	char file[64];
	snprintf(file, sizeof file, WEFT_PALLAS_ARCHIVE_FMT "/%s", a->id, WEFT_PALLAS_ARCHIVE_FILE);
	size_t n;
	uint32_t *ids = pallas_location_ids(pt, a, &n), bad = 0;
	if (ids == NULL)
		return;
	if (n != a->nb_threads)
		weft__trace_diag(trace, WEFT_SEV_ERROR, WEFT_EFORMAT, file, 4,
				 "a thread count of %u for %zu locations: Pallas 0.20 "
				 "cannot read this archive (it lists %u threads by "
				 "location)", a->nb_threads, n, a->nb_threads);
	else if (n > 0 && !ids_indexable(ids, n, a->nb_threads, &bad))
		weft__trace_diag(trace, WEFT_SEV_ERROR, WEFT_EFORMAT, file, WEFT_NO_OFFSET,
				 "thread %u: Pallas 0.20 cannot read this archive: it "
				 "keeps thread <id> at [id - %u] of %u entries (the "
				 "location ids must follow each other, once each)",
				 bad, ids[0], a->nb_threads);
	free(ids);
}

/* ---- The grammar walk -------------------------------------------------------- */

/* The grammar as nodes: sequences 0..S-1, then loops S..S+L-1. */
typedef struct walk {
	const pallas_thread *t;
	uint64_t nodes;
	uint8_t *state;     /* 0 unseen, 1 on the stack, 2 done */
	uint32_t *height;   /* frames a node takes (1 + its tallest child's) */
	uint64_t *occ;      /* times a node occurs when unrolled (saturated) */
	uint64_t *event_occ;
	uint64_t *post;     /* nodes in post-order */
	uint64_t npost;
	int cycle;
} walk;

/* The node of a sequence or loop token, or UINT64_MAX for an event. */
static uint64_t node_of(const walk *w, uint32_t tok)
{
	uint32_t id = WEFT_PALLAS_TOKEN_IDX(tok);
	if (WEFT_PALLAS_TOKEN_TYPE(tok) == WEFT_PALLAS_TOKEN_SEQUENCE)
		return id;
	if (WEFT_PALLAS_TOKEN_TYPE(tok) == WEFT_PALLAS_TOKEN_LOOP)
		return w->t->sequence_count + id;
	return UINT64_MAX;
}

/* Children of a node: a sequence's tokens, a loop's body. */
static uint64_t child_count(const walk *w, uint64_t node)
{
	return node < w->t->sequence_count ? w->t->sequences[node].token_count : 1;
}

static uint32_t child_token(const walk *w, uint64_t node, uint64_t k)
{
	if (node < w->t->sequence_count)
		return weft__pallas_le32(w->t->sequences[node].tokens + 4 * k);
	return w->t->loops[node - w->t->sequence_count].repeated;
}

/* Post-order of the nodes reachable from the root (iterative DFS). */
static int walk_order(walk *w)
{
	typedef struct { uint64_t node, next; } item;
	item *stack = malloc((w->nodes + 1) * sizeof *stack);
	size_t depth = 0;
	if (stack == NULL)
		return -1;
	stack[depth++] = (item){ w->t->root, 0 };
	w->state[w->t->root] = 1;
	while (depth > 0 && !w->cycle) {
		item *top = &stack[depth - 1];
		if (top->next == child_count(w, top->node)) {
			w->state[top->node] = 2;
			w->post[w->npost++] = top->node;
			depth--;
			continue;
		}
		uint64_t c = node_of(w, child_token(w, top->node, top->next++));
		if (c == UINT64_MAX || w->state[c] == 2)
			continue;
		if (w->state[c] == 1) {
			w->cycle = 1; /* weft's replay reports it */
			break;
		}
		w->state[c] = 1;
		stack[depth++] = (item){ c, 0 };
	}
	free(stack);
	return 0;
}

static uint64_t sat_add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static uint64_t sat_mul(uint64_t a, uint64_t b)
{
	return b != 0 && a > UINT64_MAX / b ? UINT64_MAX : a * b;
}

/* Heights in post-order, occurrences in the reverse (parents first). */
static void walk_counts(walk *w)
{
	for (uint64_t i = 0; i < w->npost; i++) {
		uint64_t node = w->post[i];
		uint32_t h = 0;
		for (uint64_t k = 0; k < child_count(w, node); k++) {
			uint64_t c = node_of(w, child_token(w, node, k));
			if (c != UINT64_MAX && w->height[c] > h)
				h = w->height[c];
		}
		w->height[node] = h + 1;
	}
	w->occ[w->t->root] = 1;
	for (uint64_t i = w->npost; i-- > 0;) {
		uint64_t node = w->post[i], times = w->occ[node];
		if (node >= w->t->sequence_count)
			times = sat_mul(times, w->t->loops[node - w->t->sequence_count].iterations);
		for (uint64_t k = 0; k < child_count(w, node); k++) {
			uint32_t tok = child_token(w, node, k);
			uint64_t c = node_of(w, tok);
			if (c != UINT64_MAX)
				w->occ[c] = sat_add(w->occ[c], times);
			else
				w->event_occ[WEFT_PALLAS_TOKEN_IDX(tok)] =
					sat_add(w->event_occ[WEFT_PALLAS_TOKEN_IDX(tok)], times);
		}
	}
}

static void walk_free(walk *w)
{
	free(w->state), free(w->height), free(w->occ), free(w->event_occ), free(w->post);
}

static int walk_grammar(walk *w, const pallas_thread *t)
{
	memset(w, 0, sizeof *w);
	w->t = t;
	w->nodes = t->sequence_count + t->loop_count;
	w->state = calloc(w->nodes + 1, 1);
	w->height = calloc(w->nodes + 1, sizeof *w->height);
	w->occ = calloc(w->nodes + 1, sizeof *w->occ);
	w->event_occ = calloc(t->event_count + 1, sizeof *w->event_occ);
	w->post = malloc((w->nodes + 1) * sizeof *w->post);
	if (!w->state || !w->height || !w->occ || !w->event_occ || !w->post ||
	    walk_order(w) < 0)
		return -1;
	if (!w->cycle)
		walk_counts(w);
	return 0;
}

/* ---- Threads ------------------------------------------------------------------- */

/* The root: Pallas's reader needs one sequence or loop there. */
static void check_root(weft_trace *trace, const pallas_thread *t, const walk *w)
{
	const pallas_sequence *root = &t->sequences[t->root];
	if (root->token_count == 0) {
		weft__trace_diag(trace, WEFT_SEV_WARNING, WEFT_EFORMAT, t->file, 32,
				 "a thread without events: Pallas 0.20's pallas_print "
				 "reads an uninitialised cursor for it");
		return;
	}
	uint32_t first = weft__pallas_le32(root->tokens);
	if (WEFT_PALLAS_TOKEN_TYPE(first) == WEFT_PALLAS_TOKEN_EVENT)
		weft__trace_diag(trace, WEFT_SEV_ERROR, WEFT_EFORMAT, t->file, root->offset + 12,
				 "the root sequence starts with an event: Pallas 0.20's "
				 "reader aborts (\"Invalid parameter to getToken\")");
	else if (root->token_count > 1)
		weft__trace_diag(trace, WEFT_SEV_WARNING, WEFT_EFORMAT, t->file, root->offset + 4,
				 "the root sequence holds %llu tokens: Pallas 0.20's "
				 "pallas_print stops the thread at the end of the first",
				 (unsigned long long)root->token_count);
	if (!w->cycle && w->height[t->root] > READER_FRAMES)
		weft__trace_diag(trace, WEFT_SEV_ERROR, WEFT_EFORMAT, t->file, WEFT_NO_OFFSET,
				 "the grammar nests %u sequences and loops below the "
				 "root: Pallas 0.20's reader holds %d (its call stack "
				 "overflows)", w->height[t->root] - 1, READER_FRAMES - 1);
}

/* A vector's size against the occurrences of its owner; counts the mismatches. */
static void check_size(weft_trace *trace, const pallas_thread *t, uint64_t at,
		       const char *what, uint64_t id, const pallas_vector *v,
		       uint64_t occurrences, unsigned *reported)
{
	if (v->size == occurrences || (*reported)++ >= REPORTS_MAX)
		return;
	weft__trace_diag(trace, WEFT_SEV_ERROR, WEFT_EFORMAT, t->file, at,
			 "%s %llu occurs %llu times in the grammar but has %llu values",
			 what, (unsigned long long)id, (unsigned long long)occurrences,
			 (unsigned long long)v->size);
}

/* Occurrences against the vectors: events' timestamps, sequences' three vectors. */
static void check_counts(weft_trace *trace, const pallas_thread *t, const walk *w)
{
	unsigned reported = 0;
	if (w->cycle)
		return;
	for (uint64_t e = 0; e < t->event_count; e++)
		check_size(trace, t, t->events[e].offset, "event E", e, &t->events[e].timestamps,
			   w->event_occ[e], &reported);
	for (uint64_t s = 0; s < t->sequence_count; s++) {
		const pallas_sequence *q = &t->sequences[s];
		if (w->state[s] != 2)
			continue;
		check_size(trace, t, q->offset, "the durations of sequence S", s, &q->durations,
			   w->occ[s], &reported);
		check_size(trace, t, q->offset, "the exclusive durations of sequence S", s,
			   &q->exclusive, w->occ[s], &reported);
		check_size(trace, t, q->offset, "the timestamps of sequence S", s,
			   &q->timestamps, w->occ[s], &reported);
	}
}

/* An undefined reference of an event. */
static void undefined(weft_trace *trace, const pallas_thread *t, uint64_t at,
		      const char *what, uint32_t ref, unsigned *reported)
{
	if ((*reported)++ < REPORTS_MAX)
		weft__trace_diag(trace, WEFT_SEV_ERROR, WEFT_EFORMAT, t->file, at,
				 "%s %u is not defined", what, ref);
}

/* The references of one attribute list: attributes, and string values. */
static void check_attr_list(weft_trace *trace, const pallas_trace *pt,
			    const pallas_archive *a, const pallas_thread *t,
			    const uint8_t *list, uint64_t size, unsigned *reported)
{
	uint64_t pos = 7;
	for (uint8_t i = 0; i < list[6] && size - pos >= 6; i++) {
		uint16_t entry;
		memcpy(&entry, list + pos, 2);
		if (entry < 6 || entry > size - pos)
			return; /* the replay reports it */
		uint32_t ref = weft__pallas_le32(list + pos + 2);
		const pallas_attribute *def = weft__pallas_find_attribute(&a->defs, ref);
		def = def ? def : weft__pallas_find_attribute(&pt->defs, ref);
		uint64_t at = (uint64_t)(list - t->buf) + pos;
		if (def == NULL)
			undefined(trace, t, at, "attribute", ref, reported);
		else if (def->type == WEFT_PALLAS_ATTR_STRING && entry >= 10 &&
			 weft__pallas_string(pt, a, weft__pallas_le32(list + pos + 6)) == NULL)
			undefined(trace, t, at, "string", weft__pallas_le32(list + pos + 6),
				  reported);
		pos += entry;
	}
}

/* Every reference of an event's payload and attribute lists is defined. */
static void check_refs(weft_trace *trace, const pallas_trace *pt, const pallas_archive *a,
		       const pallas_thread *t)
{
	unsigned reported = 0;
	for (uint64_t i = 0; i < t->event_count; i++) {
		const pallas_event_def *e = &t->events[i];
		uint32_t ref = e->payload_size == 4 ? weft__pallas_le32(e->payload) : 0;
		int region = e->record == WEFT_PALLAS_REC_ENTER || e->record == WEFT_PALLAS_REC_LEAVE;
		if (e->payload_size == 4 && region) {
			const pallas_region *r = weft__pallas_find_region(&a->defs, ref);
			r = r ? r : weft__pallas_find_region(&pt->defs, ref);
			if (r == NULL)
				undefined(trace, t, e->offset + 5, "region", ref, &reported);
			else if (weft__pallas_string(pt, a, r->name) == NULL)
				undefined(trace, t, e->offset + 5, "the name of region", ref,
					  &reported);
		} else if (e->payload_size == 4 && e->record == WEFT_PALLAS_REC_GENERIC &&
			   weft__pallas_string(pt, a, ref) == NULL) {
			undefined(trace, t, e->offset + 5, "string", ref, &reported);
		}
		for (uint64_t pos = 0; e->attr_size - pos >= 7;) {
			uint16_t list;
			memcpy(&list, e->attrs + pos + 4, 2);
			if (list < 7 || list > e->attr_size - pos)
				break;
			check_attr_list(trace, pt, a, t, e->attrs + pos, list, &reported);
			pos += list;
		}
	}
	if (reported > REPORTS_MAX)
		weft__trace_diag(trace, WEFT_SEV_ERROR, WEFT_EFORMAT, t->file, WEFT_NO_OFFSET,
				 "%u more undefined references", reported - REPORTS_MAX);
}

/* The findings of one thread (its grammar is loaded again: nothing is kept). */
static void check_thread(weft_trace *trace, pallas_trace *pt, uint32_t stream)
{
	pallas_thread *t;
	walk w;
	if (weft__pallas_stream_thread(trace, stream, &t) < 0)
		return; /* reported when the stream was read */
	const pallas_archive *a = &pt->archives[pt->streams[stream].archive];
	if (t->thread_id != pt->streams[stream].location)
		weft__trace_diag(trace, WEFT_SEV_WARNING, WEFT_EFORMAT, t->file, 0,
				 "thread id %u in a thread file of location %u: Pallas "
				 "0.20 takes the header's", t->thread_id,
				 pt->streams[stream].location);
	if (t->other_map_entry != 0)
		weft__trace_diag(trace, WEFT_SEV_WARNING, WEFT_EFORMAT, t->file,
				 t->other_map_entry, "an id map entry that is not its "
				 "index: weft reads token ids as indexes (as Pallas 0.20 "
				 "writes them), Pallas through the map");
	if (t->sequence_count > 0 && walk_grammar(&w, t) == 0) {
		check_root(trace, t, &w);
		check_counts(trace, t, &w);
	}
	if (t->sequence_count > 0)
		walk_free(&w);
	check_refs(trace, pt, a, t);
	weft__pallas_cache_forget(pt->cache, t);
	weft__pallas_thread_free(t);
}

int weft_pallas_check(weft_trace *trace)
{
	if (trace == NULL || weft_trace_format(trace) != WEFT_FORMAT_PALLAS)
		return weft__error(WEFT_EUNSUPPORTED, NULL, WEFT_NO_OFFSET,
				   "weft_pallas_check: not a Pallas trace");
	pallas_trace *pt = trace->backend_data;
	size_t before = weft_trace_diag_count(trace);
	const char *main_name = strrchr(pt->main_path, '/');
	main_name = main_name ? main_name + 1 : pt->main_path;
	if (pt->settings.timestamp_storage == WEFT_PALLAS_TS_WEFT_DELTA)
		weft__trace_diag(trace, WEFT_SEV_WARNING, WEFT_EUNSUPPORTED, main_name, 29,
				 "timestamps stored as differences (weft's "
				 "delta_timestamps): Pallas 0.20 reads them as timestamps");
	if (pt->stream_count == 0)
		weft__trace_diag(trace, WEFT_SEV_WARNING, WEFT_EFORMAT, main_name,
				 WEFT_NO_OFFSET, "no thread: Pallas 0.20's pallas_print "
				 "reads past its table of thread readers");
	for (size_t i = 0; i < pt->archive_count; i++)
		if (pt->archives[i].loaded)
			check_archive(trace, pt, &pt->archives[i]);
	for (size_t s = 0; s < pt->stream_count; s++)
		check_thread(trace, pt, (uint32_t)s);
	return (int)(weft_trace_diag_count(trace) - before);
}

/*
 * What weft_trace_check() adds for Pallas traces: after the events were
 * read, what Pallas 0.20 cannot read, as diagnostics of the trace.
 */
static void pallas_trace_check(weft_trace *trace, const weft_check_options *options,
			       const weft__stream_start *starts, weft__check_sink *sink)
{
	(void)options;
	(void)starts;
	(void)sink;
	weft_pallas_check(trace);
}

/* Pallas stored clocks are not checked: events are replayed in time order. */
const weft__check_hooks weft__pallas_check_hooks = {
	.trace_check = pallas_trace_check,
};
