/* SPDX-License-Identifier: MIT */
/*
 * analysis/profile.c - weft_profile_compute() (weft/profile.h): calls,
 * inclusive and exclusive time, min, mean and max per name, or per
 * stream and name, for a trace of any format.
 *
 * Two sources fill the same rows:
 *   - the spans (analysis/spans.c), for every format: one call per span,
 *     one instant per point event;
 *   - Pallas's stored durations: each block sequence that starts with an
 *     Enter is a set of calls of its region, whose count, min and max are
 *     in the sequence header and whose exact totals are the sums of its
 *     stored durations (one value per call, not per event).
 * The rows live in a hash table keyed by (stream, name), then are sorted.
 */
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "weft/pallas_grammar.h"
#include "weft/profile.h"
#include "util/strtab.h"
#include "analysis/spans_share.h"

/* A recent (stream, timeline and name pointers) and its row: spans
 * repeat names by pointer (the iterator keeps one copy of each), so most
 * lookups end here without hashing or comparing text. */
typedef struct recent_row {
	const char *name;
	const char *timeline;
	int64_t stream;
	size_t row;
} recent_row;

#define RECENT_ROWS 256

struct weft_profile {
	weft_profile_row *rows;
	size_t count, cap;
	/* The rows' keys, the stream's 8 bytes, then (emulated) the
	 * timeline and a NUL, then the name: string i of the table is row i
	 * until the rows are sorted; the rows' names and timelines point
	 * into it. */
	weft__strtab keys;
	recent_row recent[RECENT_ROWS];
	weft_profile_source source;
	weft_span_stats stats;
};

void weft_profile_options_init(weft_profile_options *options)
{
	memset(options, 0, sizeof *options);
}

const char *weft_profile_source_name(weft_profile_source source)
{
	switch (source) {
	case WEFT_PROFILE_AUTO: return "auto";
	case WEFT_PROFILE_SPANS: return "replay";
	case WEFT_PROFILE_DURATIONS: return "durations";
	case WEFT_PROFILE_HEADERS: return "headers";
	}
	return "?";
}

/* ---- Rows ------------------------------------------------------------------------ */

/* The row of (stream, timeline, name), added when new (timeline NULL: rows
 * by name alone); NULL when out of memory. */
static weft_profile_row *row_of(weft_profile *p, int64_t stream, const char *timeline,
				const char *name)
{
	size_t len = strlen(name), tlen = timeline ? strlen(timeline) + 1 : 0, index;
	size_t klen = sizeof stream + tlen + len;
	char small[256];
	char *key = klen <= sizeof small ? small : malloc(klen);
	if (key == NULL)
		return NULL;
	memcpy(key, &stream, sizeof stream);
	if (timeline != NULL)
		memcpy(key + sizeof stream, timeline, tlen);
	memcpy(key + sizeof stream + tlen, name, len);
	int added = weft__strtab_intern(&p->keys, key, klen, &index);
	if (key != small)
		free(key);
	if (added == 1 &&
	    weft__array_grow((void **)&p->rows, &p->cap, p->count + 1, sizeof *p->rows) == 0) {
		const char *text = weft__strtab_text(&p->keys, index) + sizeof stream;
		p->rows[p->count++] = (weft_profile_row){
			.name = text + tlen, .stream = stream, .min = UINT64_MAX,
			.timeline = timeline ? text : NULL };
	}
	return added < 0 || index >= p->count ? NULL : &p->rows[index];
}

/* Adds `count` calls to a row: their total, min, max and exclusive sum. */
static void add_calls(weft_profile_row *r, uint64_t count, uint64_t total, uint64_t min,
		      uint64_t max, uint64_t exclusive)
{
	r->calls += count;
	r->inclusive += total;
	r->exclusive += exclusive;
	if (min < r->min)
		r->min = min;
	if (max > r->max)
		r->max = max;
}

static int out_of_memory(void)
{
	return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory for the profile");
}

/*
 * The row of a span's name: through the cache of recent name pointers
 * (valid while the iterator lives, which outlasts the lookups), else by
 * text. NULL when out of memory.
 */
static weft_profile_row *row_of_span(weft_profile *p, int64_t stream, const char *timeline,
				     const char *name)
{
	size_t h = (((uintptr_t)name >> 3) ^ ((uintptr_t)timeline >> 3) * 31 ^
		    (size_t)stream * 0x9e3779b1u) % RECENT_ROWS;
	recent_row *c = &p->recent[h];
	if (c->name == name && c->timeline == timeline && c->stream == stream)
		return &p->rows[c->row];
	weft_profile_row *r = row_of(p, stream, timeline, name);
	if (r != NULL)
		*c = (recent_row){ name, timeline, stream, (size_t)(r - p->rows) };
	return r;
}

/* ---- Sources ------------------------------------------------------------------------ */

/* Every span and instant of the streams of `selected` (NULL: all). */
static int profile_spans(weft_trace *trace, const weft_profile_options *o,
			 const uint8_t *selected, int pieces, weft_profile *p)
{
	weft_span_options so;
	weft_span_iter *it;
	const weft_span *s;

	weft_span_options_init(&so);
	so.filter = o->filter;
	so.virtual_unit = o->virtual_unit;
	so.with_instants = 1;
	so.emulate = o->emulate;
	so.all_models = o->all_models;
	so.channels = o->channels;
	int rc = pieces ? weft__span_iter_create_pieces(trace, &so, &it)
		 : weft__span_iter_create_selected(trace, &so, selected, &it);
	if (rc < 0)
		return rc;
	while ((rc = weft_span_iter_next(it, &s)) == 1) {
		int64_t stream = o->by == WEFT_PROFILE_BY_STREAM ? (int64_t)s->stream : -1;
		weft_profile_row *r = row_of_span(p, stream, o->emulate ? s->timeline : NULL,
						  s->name);
		if (r == NULL) {
			rc = out_of_memory();
			break;
		}
		uint64_t length = s->end - s->start;
		if (s->flags & WEFT_SPAN_INSTANT)
			r->instants++;
		else
			add_calls(r, 1, length, length, length, s->exclusive);
	}
	weft_span_iter_stats(it, &p->stats);
	weft_span_iter_free(it);
	return rc < 0 ? rc : 0;
}

/* The calls of one Pallas thread from its grammar's block sequences. */
static int profile_grammar(weft_trace *trace, uint32_t stream, const weft_profile_options *o,
			   weft_profile *p)
{
	weft_pallas_grammar *g;
	int headers_only = o->source == WEFT_PROFILE_HEADERS;
	int64_t row_stream = o->by == WEFT_PROFILE_BY_STREAM ? (int64_t)stream : -1;
	int rc = weft_pallas_grammar_open(trace, stream, &g);
	if (rc < 0)
		return rc;
	for (size_t i = 0; rc == 0 && i < weft_pallas_grammar_sequence_count(g); i++) {
		weft_pallas_sequence_info s;
		rc = weft_pallas_grammar_sequence(g, i, &s);
		if (rc < 0 || s.dead || s.region_ref < 0 || s.durations.count == 0) {
			rc = 0;
			continue;
		}
		uint64_t total = s.durations.mean * s.durations.count;
		uint64_t exclusive = s.exclusive.mean * s.exclusive.count;
		/* The name is valid until the next grammar call. */
		char *name = strdup(s.name);
		if (name == NULL) {
			rc = weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
			break;
		}
		if (!headers_only)
			rc = weft_pallas_grammar_sequence_totals(g, i, &total, &exclusive);
		weft_profile_row *r = rc == 0 ? row_of(p, row_stream, NULL, name) : NULL;
		if (r != NULL)
			add_calls(r, s.durations.count, total, s.durations.min,
				  s.durations.max, exclusive);
		else if (rc == 0)
			rc = out_of_memory();
		free(name);
	}
	weft_pallas_grammar_free(g);
	return rc;
}

/* 1 when the options select part of the trace (or virtual time). */
static int selects(const weft_profile_options *o)
{
	const weft_filter *f = &o->filter;
	return f->from || f->to || f->stream_pattern || f->code_pattern ||
	       o->virtual_unit > 0;
}

/* The source that AUTO means for this trace and these options. */
static weft_profile_source source_for(const weft_trace *trace, const weft_profile_options *o)
{
	if (o->source != WEFT_PROFILE_AUTO || o->emulate)
		return o->emulate && o->source == WEFT_PROFILE_AUTO ? WEFT_PROFILE_SPANS : o->source;
	return weft_trace_format(trace) == WEFT_FORMAT_PALLAS && !selects(o)
	       ? WEFT_PROFILE_DURATIONS : WEFT_PROFILE_SPANS;
}

/* ---- Result ------------------------------------------------------------------------ */

/* By stream (BY_STREAM), then inclusive time, largest first, then name. */
static int row_order(const void *a, const void *b)
{
	const weft_profile_row *x = a, *y = b;
	if (x->stream != y->stream)
		return x->stream < y->stream ? -1 : 1;
	int t = x->timeline && y->timeline ? strcmp(x->timeline, y->timeline) : 0;
	if (t != 0)
		return t;
	if (x->inclusive != y->inclusive)
		return x->inclusive > y->inclusive ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* Means, the min of rows without calls, and the order. */
static void finish_rows(weft_profile *p)
{
	for (size_t i = 0; i < p->count; i++) {
		weft_profile_row *r = &p->rows[i];
		if (r->calls == 0)
			r->min = 0;
		r->mean = r->calls ? (double)r->inclusive / (double)r->calls : 0;
	}
	if (p->count > 1) /* rows no longer follow the keys: no lookups after */
		qsort(p->rows, p->count, sizeof *p->rows, row_order);
}

/* ---- Across ranks (weft/dist.h) ------------------------------------------------- */

/* A rank's rows (keys and figures, before the means) and span statistics. */
static void pack_profile(weft__pack *pk, const void *ctx)
{
	const weft_profile *p = ctx;
	const weft_span_stats *st = &p->stats;
	const uint64_t stats[] = { st->events, st->selected, st->spans, st->instants,
				   st->unmatched_leaves, st->unclosed, st->too_deep, st->no_time };
	for (size_t i = 0; i < sizeof stats / sizeof *stats; i++)
		weft__pack_u64(pk, stats[i]);
	weft__pack_u64(pk, p->count);
	for (size_t i = 0; i < p->count; i++) {
		const weft_profile_row *r = &p->rows[i];
		weft__pack_u64(pk, (uint64_t)r->stream);
		weft__pack_u64(pk, r->timeline != NULL);
		weft__pack_text(pk, r->timeline);
		weft__pack_text(pk, r->name);
		const uint64_t figures[] = { r->calls, r->instants, r->inclusive, r->exclusive,
					     r->min, r->max };
		for (size_t k = 0; k < sizeof figures / sizeof *figures; k++)
			weft__pack_u64(pk, figures[k]);
	}
}

/* Rank 0: adds another rank's rows, each to the row of its key. */
static int merge_profile(void *ctx, weft__unpack *u)
{
	weft_profile *p = ctx;
	weft_span_stats *st = &p->stats;
	uint64_t *stats[] = { &st->events, &st->selected, &st->spans, &st->instants,
			      &st->unmatched_leaves, &st->unclosed, &st->too_deep, &st->no_time };
	for (size_t i = 0; i < sizeof stats / sizeof *stats; i++)
		*stats[i] += weft__unpack_u64(u);
	uint64_t rows = weft__unpack_u64(u);
	for (uint64_t i = 0; !u->bad && i < rows; i++) {
		int64_t stream = (int64_t)weft__unpack_u64(u);
		int has_timeline = weft__unpack_u64(u) != 0;
		const char *timeline = weft__unpack_text(u);
		const char *name = weft__unpack_text(u);
		uint64_t calls = weft__unpack_u64(u), instants = weft__unpack_u64(u);
		uint64_t inclusive = weft__unpack_u64(u), exclusive = weft__unpack_u64(u);
		uint64_t min = weft__unpack_u64(u), max = weft__unpack_u64(u);
		if (u->bad)
			break;
		weft_profile_row *r = row_of(p, stream, has_timeline ? timeline : NULL, name);
		if (r == NULL)
			return out_of_memory();
		r->instants += instants;
		add_calls(r, calls, inclusive, min, max, exclusive);
	}
	return 0;
}


/* ---- Shared among threads and ranks ---------------------------------------------- */

/* The rows of the streams of `selected` (NULL: all) into `p`. */
static int profile_streams(weft_trace *trace, const weft_profile_options *o,
			   const uint8_t *selected, weft_profile *p)
{
	int stored = p->source == WEFT_PROFILE_DURATIONS || p->source == WEFT_PROFILE_HEADERS;
	if (!stored)
		return profile_spans(trace, o, selected, 0, p);
	int rc = 0;
	for (size_t s = 0; rc == 0 && s < weft_trace_stream_count(trace); s++)
		if (selected == NULL || selected[s])
			rc = profile_grammar(trace, (uint32_t)s, o, p);
	return rc;
}

/* What a thread's part needs: the options and the source. */
typedef struct part_args {
	const weft_profile_options *options;
	weft_profile_source source;
} part_args;

/* A thread's part (weft__part_fn): its rows, packed. */
static int profile_part(weft_trace *handle, const uint8_t *selected, weft__pack *result,
			void *arg)
{
	const part_args *a = arg;
	weft_profile part = { .source = a->source };
	int rc = profile_streams(handle, a->options, selected, &part);
	if (rc == 0)
		pack_profile(result, &part);
	weft__strtab_free(&part.keys);
	free(part.rows);
	return rc;
}

/* A thread's piece of the files (weft__pieces_run): its rows, packed. */
static int profile_piece(weft_trace *handle, const uint8_t *selected, weft__pack *result,
			 void *arg)
{
	const part_args *a = arg;
	weft_profile part = { .source = a->source };
	(void)selected;
	int rc = profile_spans(handle, a->options, NULL, 1, &part);
	if (rc == 0)
		pack_profile(result, &part);
	weft__strtab_free(&part.keys);
	free(part.rows);
	return rc;
}

/*
 * This process's rows: of its rank's streams (weft/dist.h), shared among
 * threads when worth it. The emulation, whose CPUs see every stream, is
 * read whole, by rank 0 alone.
 */
static int profile_shared(weft_trace *trace, const weft_profile_options *o, weft_profile *p)
{
	const uint8_t *share = weft__dist_selected(trace);
	if (o->emulate)
		return weft__dist_root(trace) ? profile_streams(trace, o, NULL, p) : 0;
	/* Files cut for the ranks (ROSS): each its pieces, whose spans are
	 * instants (weft__span_iter_create_pieces), added up on rank 0; or,
	 * alone, cut for threads, added up here. */
	if (p->source == WEFT_PROFILE_SPANS && weft__dist_pieces(trace) > 0)
		return profile_spans(trace, o, NULL, 1, p);
	part_args args = { o, p->source };
	int pieces = p->source == WEFT_PROFILE_SPANS
		     ? weft__pieces_threads(trace, o->threads, WEFT__WORK_HEAVY) : 1;
	if (pieces > 1)
		return weft__pieces_run(trace, pieces, profile_piece, &args, merge_profile, p);
	int threads = weft__parts_threads(trace, share, o->threads, WEFT__WORK_HEAVY);
	if (threads <= 1)
		return profile_streams(trace, o, share, p);
	return weft__parts_run(trace, share, threads, profile_part, &args, merge_profile, p);
}

static int profile_run(weft_trace *trace, const weft_profile_options *options,
		       weft_profile **out)
{
	*out = NULL;
	if (trace == NULL || options == NULL)
		return weft__error(WEFT_EINVAL, NULL, WEFT_NO_OFFSET,
				   "profile: no trace or no options");
	weft_profile_source source = source_for(trace, options);
	int stored = source == WEFT_PROFILE_DURATIONS || source == WEFT_PROFILE_HEADERS;
	if (stored && options->emulate)
		return weft__error(WEFT_EINVAL, trace->path, WEFT_NO_OFFSET,
				   "the emulated channels are profiled from their spans: no "
				   "stored durations");
	if (stored && weft_trace_format(trace) != WEFT_FORMAT_PALLAS)
		return weft__error(WEFT_EINVAL, trace->path, WEFT_NO_OFFSET,
				   "only Pallas traces store call durations (this is "
				   "a %s trace): profile it from its spans",
				   weft_format_name(weft_trace_format(trace)));
	if (stored && selects(options))
		return weft__error(WEFT_EINVAL, trace->path, WEFT_NO_OFFSET,
				   "stored durations cover whole streams: no time "
				   "window, stream or code selection, or virtual time");
	weft_profile *p = calloc(1, sizeof *p);
	if (p == NULL)
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	p->source = source;
	size_t diags = weft_trace_diag_count(trace);
	int rc = profile_shared(trace, options, p);
	if (weft__dist_active(trace))
		rc = weft__dist_combine(trace, rc, diags, pack_profile, merge_profile, p);
	weft__trace_diags_sort(trace, diags);
	if (rc < 0) {
		weft_profile_free(p);
		return rc;
	}
	finish_rows(p);
	*out = p;
	return 0;
}

/* The operation above, as a phase of the progress ("profiling"). */
int weft_profile_compute(weft_trace *trace, const weft_profile_options *options,
			 weft_profile **out)
{
	weft__progress_begin(trace, "profiling");
	return weft__progress_end_with(trace, profile_run(trace, options, out));
}

size_t weft_profile_row_count(const weft_profile *p)
{
	return p->count;
}

const weft_profile_row *weft_profile_row_get(const weft_profile *p, size_t index)
{
	return index < p->count ? &p->rows[index] : NULL;
}

weft_profile_source weft_profile_source_used(const weft_profile *p)
{
	return p->source;
}

void weft_profile_span_stats(const weft_profile *p, weft_span_stats *out)
{
	*out = p->stats;
}

void weft_profile_free(weft_profile *p)
{
	if (p == NULL)
		return;
	weft__strtab_free(&p->keys);
	free(p->rows);
	free(p);
}
