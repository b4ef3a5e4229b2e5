/* SPDX-License-Identifier: MIT */
/*
 * formats/pallas/pallas_inspect.c - the public view of a thread's grammar
 * (weft/pallas_grammar.h): tables of events, sequences and loops with
 * their counts and stored duration summaries, for `weft dump --structure`,
 * `weft info` and `weft profile`. Only the thread file is read, except
 * for weft_pallas_grammar_sequence_totals() and _durations(), which read
 * the durations.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/pallas/pallas_internal.h"
#include "weft/pallas_grammar.h"

struct weft_pallas_grammar {
	weft_trace *trace;
	pallas_trace *pt;
	const pallas_archive *archive;
	pallas_thread *t;
	char text[512];          /* the last description or name */
};

int weft_pallas_grammar_open(weft_trace *trace, uint32_t stream,
			     weft_pallas_grammar **out)
{
	*out = NULL;
	if (trace == NULL || weft_trace_format(trace) != WEFT_FORMAT_PALLAS)
		return weft__error(WEFT_EUNSUPPORTED, NULL, WEFT_NO_OFFSET,
				   "grammars exist in Pallas traces only");
	pallas_trace *pt = trace->backend_data;
	pallas_thread *t;
	int rc = weft__pallas_stream_thread(trace, stream, &t);
	if (rc < 0)
		return rc;
	weft_pallas_grammar *g = calloc(1, sizeof *g);
	if (g == NULL) {
		weft__pallas_thread_free(t);
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	}
	g->trace = trace;
	g->pt = pt;
	g->archive = &pt->archives[pt->streams[stream].archive];
	g->t = t;
	*out = g;
	return 0;
}

void weft_pallas_grammar_free(weft_pallas_grammar *g)
{
	if (g == NULL)
		return;
	weft__pallas_cache_forget(g->pt->cache, g->t);
	weft__pallas_thread_free(g->t);
	free(g);
}

size_t weft_pallas_grammar_event_count(const weft_pallas_grammar *g)
{
	return (size_t)g->t->event_count;
}

size_t weft_pallas_grammar_sequence_count(const weft_pallas_grammar *g)
{
	return (size_t)g->t->sequence_count;
}

size_t weft_pallas_grammar_loop_count(const weft_pallas_grammar *g)
{
	return (size_t)g->t->loop_count;
}

uint32_t weft_pallas_grammar_root(const weft_pallas_grammar *g)
{
	return g->t->root;
}

/* A string reference as text ("" when undefined). */
static const char *string_text(const weft_pallas_grammar *g, uint32_t ref)
{
	const pallas_string *s = weft__pallas_string(g->pt, g->archive, ref);
	return s ? s->text : "";
}

/* The name of a region reference ("" when undefined). */
static const char *region_name(const weft_pallas_grammar *g, uint32_t ref)
{
	const pallas_region *r = weft__pallas_find_region(&g->archive->defs, ref);
	if (r == NULL)
		r = weft__pallas_find_region(&g->pt->defs, ref);
	return r ? string_text(g, r->name) : "";
}

/* pallas_info's name of an event: "Enter 1 (f)", a generic's name... */
static void describe_event(weft_pallas_grammar *g, const pallas_event_def *e)
{
	const char *code = weft__pallas_record_name(e->record);
	uint32_t ref = e->payload_size >= 4 ? weft__pallas_le32(e->payload) : 0;
	if ((e->record == WEFT_PALLAS_REC_ENTER || e->record == WEFT_PALLAS_REC_LEAVE) &&
	    e->payload_size == 4)
		snprintf(g->text, sizeof g->text, "%s %u (%s)", code, ref,
			 region_name(g, ref));
	else if (e->record == WEFT_PALLAS_REC_GENERIC && e->payload_size == 4)
		snprintf(g->text, sizeof g->text, "%s", string_text(g, ref));
	else
		snprintf(g->text, sizeof g->text, "%s", code ? code : "Unknown");
}

int weft_pallas_grammar_event(weft_pallas_grammar *g, size_t i,
			      weft_pallas_event_info *out)
{
	if (i >= g->t->event_count)
		return weft__error(WEFT_EINVAL, g->t->file, WEFT_NO_OFFSET, "no event %zu", i);
	const pallas_event_def *e = &g->t->events[i];
	memset(out, 0, sizeof *out);
	out->record = e->record;
	out->code = weft__pallas_record_name(e->record);
	out->occurrences = e->timestamps.size;
	describe_event(g, e);
	out->description = g->text;
	if (e->timestamps.sub_count > 0) {
		pallas_subarray first, last;
		weft__pallas_vector_sub(&e->timestamps, 0, &first);
		weft__pallas_vector_sub(&e->timestamps, e->timestamps.sub_count - 1, &last);
		out->first_time = first.first;
		out->last_time = last.last;
	}
	return 0;
}

static void summary_of(const pallas_vector *v, weft_pallas_summary *s)
{
	s->count = v->size;
	s->min = v->min;
	s->max = v->max;
	s->mean = v->mean;
}

/* The region of a block whose first token is an Enter event, or -1. */
static int64_t block_region(const pallas_thread *t, const pallas_sequence *s)
{
	if (s->type != WEFT_PALLAS_SEQUENCE_BLOCK || s->token_count == 0)
		return -1;
	uint32_t token = weft__pallas_le32(s->tokens);
	if (WEFT_PALLAS_TOKEN_TYPE(token) != WEFT_PALLAS_TOKEN_EVENT)
		return -1;
	const pallas_event_def *e = &t->events[WEFT_PALLAS_TOKEN_IDX(token)];
	if (e->record != WEFT_PALLAS_REC_ENTER || e->payload_size != 4)
		return -1;
	return weft__pallas_le32(e->payload);
}

int weft_pallas_grammar_sequence(weft_pallas_grammar *g, size_t i,
				 weft_pallas_sequence_info *out)
{
	if (i >= g->t->sequence_count)
		return weft__error(WEFT_EINVAL, g->t->file, WEFT_NO_OFFSET,
				   "no sequence %zu", i);
	const pallas_sequence *s = &g->t->sequences[i];
	memset(out, 0, sizeof *out);
	out->dead = s->token_count == 0;
	out->region_ref = -1;
	if (out->dead)
		return 0;
	out->is_loop_body = s->type == WEFT_PALLAS_SEQUENCE_LOOP;
	out->token_count = s->token_count;
	out->region_ref = block_region(g->t, s);
	if (out->region_ref >= 0)
		snprintf(g->text, sizeof g->text, "%s",
			 region_name(g, (uint32_t)out->region_ref));
	else
		snprintf(g->text, sizeof g->text, "Sequence_%zu", i);
	out->name = g->text;
	summary_of(&s->durations, &out->durations);
	summary_of(&s->exclusive, &out->exclusive);
	return 0;
}

int weft_pallas_grammar_token(const weft_pallas_grammar *g, size_t i,
			      uint64_t k, weft_pallas_token *out)
{
	if (i >= g->t->sequence_count || k >= g->t->sequences[i].token_count)
		return weft__error(WEFT_EINVAL, g->t->file, WEFT_NO_OFFSET,
				   "no token %llu in sequence %zu",
				   (unsigned long long)k, i);
	uint32_t token = weft__pallas_le32(g->t->sequences[i].tokens + 4 * k);
	out->kind = (weft_pallas_token_kind)WEFT_PALLAS_TOKEN_TYPE(token);
	out->index = WEFT_PALLAS_TOKEN_IDX(token);
	return 0;
}

int weft_pallas_grammar_loop(const weft_pallas_grammar *g, size_t i,
			     weft_pallas_loop_info *out)
{
	if (i >= g->t->loop_count)
		return weft__error(WEFT_EINVAL, g->t->file, WEFT_NO_OFFSET, "no loop %zu", i);
	const pallas_loop *l = &g->t->loops[i];
	memset(out, 0, sizeof *out);
	out->dead = l->repeated == WEFT_PALLAS_TOKEN_NONE;
	out->repeated.kind = (weft_pallas_token_kind)WEFT_PALLAS_TOKEN_TYPE(l->repeated);
	out->repeated.index = WEFT_PALLAS_TOKEN_IDX(l->repeated);
	out->iterations = l->iterations;
	out->occurrences = l->occurrences;
	return 0;
}

/* The sum of every value of a duration vector, a sub-array at a time. */
static int vector_sum(weft_pallas_grammar *g, const pallas_vector *v,
		      uint64_t *sum)
{
	pallas_values vals = { 0 };
	*sum = 0;
	for (uint64_t s = 0; s < v->sub_count; s++) {
		int rc = weft__pallas_values_get(g->pt->cache, g->t, v, s, &vals);
		if (rc < 0)
			return rc;
		for (uint64_t k = 0; k < vals.count; k++)
			*sum += vals.v[k];
	}
	weft__pallas_values_release(g->pt->cache, &vals);
	return 0;
}

int weft_pallas_grammar_sequence_totals(weft_pallas_grammar *g, size_t i,
					uint64_t *total, uint64_t *exclusive_total)
{
	if (i >= g->t->sequence_count)
		return weft__error(WEFT_EINVAL, g->t->file, WEFT_NO_OFFSET,
				   "no sequence %zu", i);
	const pallas_sequence *s = &g->t->sequences[i];
	int rc = vector_sum(g, &s->durations, total);
	if (rc == 0)
		rc = vector_sum(g, &s->exclusive, exclusive_total);
	return rc;
}

/*
 * Copies values first.. of a duration vector into out[0..max-1], a
 * sub-array at a time: the sub-array headers (in memory) locate `first`
 * without reading the values before it.
 */
static int vector_copy(weft_pallas_grammar *g, const pallas_vector *v, uint64_t first,
		       uint64_t *out, size_t max, size_t *copied)
{
	pallas_values vals = { 0 };
	uint64_t start = 0; /* index of the first value of sub-array s */
	int rc = 0;
	*copied = 0;
	for (uint64_t s = 0; s < v->sub_count && *copied < max; s++) {
		pallas_subarray sub;
		weft__pallas_vector_sub(v, s, &sub);
		uint64_t at = first + *copied;
		if (at >= start + sub.size) {
			start += sub.size;
			continue;
		}
		if ((rc = weft__pallas_values_get(g->pt->cache, g->t, v, s, &vals)) < 0)
			break;
		uint64_t n = vals.count - (at - start);
		if (n > max - *copied)
			n = max - *copied;
		memcpy(out + *copied, vals.v + (at - start), (size_t)n * sizeof *out);
		*copied += (size_t)n;
		start += sub.size;
	}
	weft__pallas_values_release(g->pt->cache, &vals);
	return rc;
}

int weft_pallas_grammar_sequence_durations(weft_pallas_grammar *g, size_t i, int exclusive,
					   uint64_t first, uint64_t *out, size_t max,
					   size_t *copied)
{
	*copied = 0;
	if (i >= g->t->sequence_count)
		return weft__error(WEFT_EINVAL, g->t->file, WEFT_NO_OFFSET,
				   "no sequence %zu", i);
	const pallas_sequence *s = &g->t->sequences[i];
	return vector_copy(g, exclusive ? &s->exclusive : &s->durations, first, out, max, copied);
}

/*
 * The statistics of a Pallas thread from its grammar alone, like
 * pallas_info: the events are the occurrences counted in the event
 * headers, first and last times come from the timestamp sub-array
 * headers; no value data is read. The detail gives the grammar's size.
 */
int weft__pallas_stream_stats(weft_trace *trace, uint32_t stream, weft_stream_stats *st)
{
	weft_pallas_grammar *g;
	int rc = weft_pallas_grammar_open(trace, stream, &g);

	if (rc < 0)
		return rc;
	for (size_t i = 0; i < weft_pallas_grammar_event_count(g); i++) {
		weft_pallas_event_info e;
		if (weft_pallas_grammar_event(g, i, &e) < 0 || e.occurrences == 0)
			continue;
		if (st->events == 0 || e.first_time < st->first)
			st->first = e.first_time;
		if (st->events == 0 || e.last_time > st->last)
			st->last = e.last_time;
		st->events += e.occurrences;
	}
	snprintf(st->detail, sizeof st->detail, "grammar: %zu events, %zu sequences, %zu loops",
		 weft_pallas_grammar_event_count(g), weft_pallas_grammar_sequence_count(g),
		 weft_pallas_grammar_loop_count(g));
	weft_pallas_grammar_free(g);
	return 0;
}
