/* SPDX-License-Identifier: MIT */
/*
 * analysis/ross_summary.c - weft_ross_summary_write(): what the engine
 * samples of a ROSS run say (what `weft summary` prints), per sampling mode (each gvt, rt and vt file) and per PE:
 * events processed, aborted and rolled back, efficiency, rollbacks, GVT
 * count, and the time spent in each engine phase.
 *
 * ROSS's counters are deltas since the previous sample of the same mode,
 * so the totals are sums over the samples; priority_queue_size is
 * instantaneous (its maximum is shown) and num_gvts cumulative (the last
 * sample's value is taken). Efficiency is recomputed from the totals:
 * 100 * (1 - rolled_back / (processed - rolled_back)), 0 when processed
 * equals rolled_back. PE samples are the source when the file has them;
 * else KP samples, else LP samples, summed per PE (fields they lack are
 * shown as '-' / null).
 *
 * Virtual-time samples (vt files): a sample whose entity (stream) and
 * virtual time equal its previous sample's is counted as a duplicate;
 * --dedup keeps only the last sample of each such group. One pass over
 * the run (the merged cursor), memory per stream and per PE only.
 *
 * On threads and ranks, the files are read in byte pieces (one per thread
 * or rank) and the pieces' sums are added up in file order; the phase
 * times are summed exactly (util/fsum.c), so the digits do not depend on
 * the pieces. A vt sample's duplicate and "earlier" status depend on its
 * stream's whole past, which a piece does not know: each piece keeps,
 * per stream, what the merge needs to supply it (merge_vt_part), and in
 * the rare case where that is not enough the vt files are read again
 * whole (vt_whole).
 *
 * The state is in ross_summary.h; the report is printed by
 * ross_summary_print.c.
 */
#include <float.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "analysis/ross_analysis.h"
#include "analysis/ross_summary.h"

const char *const weft__ross_slot_names[SL_COUNT] = {
	"events_processed", "events_aborted", "events_rolled_back", "total_rollbacks",
	"secondary_rollbacks", "fossil_collect_attempts", "network_sends",
	"network_receives", "pe_event_ties", "all_reduce_count",
	"num_gvts", "priority_queue_size",
	"network_read_time", "network_other_time", "gvt_time", "fossil_collect_time",
	"events_aborted_time", "events_processed_time", "priority_queue_time",
	"rollback_time", "cancel_q_time", "avl_tree_time", "buddy_time", "lz4_time",
	"virtual_time", "real_time", "pe_id",
};

const char *const weft__ross_level_codes[LV_COUNT] = { "PE", "KP", "LP", "MODEL", "?" };

/* The "file" member of a file node's metadata (else its name), into buf. */
const char *weft__ross_file_of_root(const weft_node *root, char *buf, size_t size)
{
	json_t *meta = json_loads(root->metadata_json, 0, NULL);
	json_t *file = json_object_get(meta, "file");
	snprintf(buf, size, "%s", json_is_string(file) ? json_string_value(file) : root->name);
	json_decref(meta);
	return buf;
}

/* The index of PE `pe`'s totals in a section, created on first sight. */
static int64_t pe_index(section *sec, uint64_t pe)
{
	for (size_t i = 0; i < sec->pe_count; i++)
		if (sec->pes[i].pe == pe)
			return (int64_t)i;
	if (sec->pe_count == sec->pe_cap) {
		size_t cap = sec->pe_cap ? 2 * sec->pe_cap : 16;
		pe_total *bigger = realloc(sec->pes, cap * sizeof *bigger);
		if (bigger == NULL)
			return WEFT_ENOMEM;
		sec->pes = bigger;
		sec->pe_cap = cap;
	}
	pe_total *t = &sec->pes[sec->pe_count];
	memset(t, 0, sizeof *t);
	t->pe = pe;
	return (int64_t)sec->pe_count++;
}

/*
 * Adds one sample into its PE's totals (the PE of a stream is looked up
 * once: a stream's samples all belong to one PE).
 */
static int commit_sample(section *sec, stream_state *st, const sample *s)
{
	if (st->pe_index < 0) {
		int64_t i = pe_index(sec, (uint64_t)s->v[SL_PE_ID]);
		if (i < 0)
			return (int)i;
		st->pe_index = (int32_t)i;
	}
	pe_total *t = &sec->pes[st->pe_index];
	t->samples++;
	t->has |= s->has;
	for (int k = 0; k < SL_COUNTERS; k++)
		t->counter[k] += (uint64_t)s->v[k];
	for (int k = 0; k < PHASES; k++)
		weft__fsum_add(&t->phase[k], s->v[SL_PHASE0 + k]);
	if (s->has & (1u << SL_NUM_GVTS))
		t->num_gvts = (uint64_t)s->v[SL_NUM_GVTS];
	if (s->v[SL_PQ_SIZE] > (double)t->pq_max)
		t->pq_max = (uint64_t)s->v[SL_PQ_SIZE];
	return 0;
}

/* ---- Reading the samples ------------------------------------------------------------ */

/* The slot of a field name, or -1. */
static int slot_of_name(const weft_field *f)
{
	for (int k = 0; k < SL_COUNT; k++)
		if (weft__field_is(f, weft__ross_slot_names[k]))
			return k;
	return -1;
}

/* The slot map of an event's layout (its n fields decoded in s->fields). */
static const slot_map *map_for(summary *s, const weft_event *ev, int n)
{
	for (size_t i = 0; i < s->map_count; i++) {
		const slot_map *m = &s->maps[i];
		if (m->count == n && m->payload_size == ev->payload_size &&
		    m->code_len == ev->code_len && memcmp(m->code, ev->code, ev->code_len) == 0)
			return m;
	}
	slot_map *bigger = realloc(s->maps, (s->map_count + 1) * sizeof *bigger);
	if (bigger == NULL)
		return NULL;
	s->maps = bigger;
	slot_map *m = &s->maps[s->map_count++];
	memset(m, 0, sizeof *m);
	m->code_len = ev->code_len < sizeof m->code ? ev->code_len : (uint32_t)sizeof m->code;
	memcpy(m->code, ev->code, m->code_len);
	m->payload_size = ev->payload_size;
	m->count = n;
	for (int k = 0; k < n && k < 64; k++)
		m->slot_of_field[k] = (int8_t)slot_of_name(&s->fields[k]);
	return m;
}

/* Decodes a sample's slots. Returns 0, or < 0 when it does not decode. */
static int read_sample(summary *s, const weft_event *ev, sample *out)
{
	int n = weft_event_fields(s->trace, ev, s->fields, 64);
	if (n < 0 || n > 64)
		return n < 0 ? n : WEFT_EUNSUPPORTED;
	const slot_map *m = map_for(s, ev, n);
	if (m == NULL)
		return WEFT_ENOMEM;
	memset(out, 0, sizeof *out);
	for (int k = 0; k < n; k++) {
		int slot = m->slot_of_field[k];
		if (slot < 0)
			continue;
		out->v[slot] = weft__field_number(&s->fields[k]);
		out->has |= 1u << slot;
	}
	return 0;
}

/* The level of a record from its code. */
static level level_of(const weft_event *ev)
{
	for (int l = 0; l < LV_OTHER; l++)
		if (ev->code_len == strlen(weft__ross_level_codes[l]) &&
		    memcmp(ev->code, weft__ross_level_codes[l], ev->code_len) == 0)
			return (level)l;
	if (ev->code_len == 14 && memcmp(ev->code, "ANALYSIS_MODEL", 14) == 0)
		return LV_MODEL;
	return LV_OTHER;
}

/* In pieces: what the merge needs of a sample of a vt file (stream_state). */
static void note_for_merge(stream_state *st, level lv, double vt, int high)
{
	if (vt != vt) {
		st->nan = 1;
	} else if (!st->seen) {
		st->first_vt = vt;
		st->lv = (int8_t)lv;
	} else if (high && st->high_count < VT_HIGHS) {
		st->highs[st->high_count++] = vt;
	} else if (high) {
		st->more_highs = 1;
	}
}

/*
 * vt files: is this sample's virtual time its stream's previous one
 * (a duplicate), or below an earlier one? Returns 1 for a duplicate.
 * `pieces`: the file is read in pieces (note_for_merge).
 */
static int note_virtual_time(section *sec, stream_state *st, level lv, double vt, int pieces)
{
	int dup = st->seen && vt == st->last_vt;
	if (dup)
		sec->dup[lv]++;
	else if (st->seen && vt < st->max_vt)
		sec->earlier[lv]++;
	if (pieces)
		note_for_merge(st, lv, vt, !dup && !(vt < st->max_vt));
	if (!st->seen || vt > st->max_vt)
		st->max_vt = vt;
	st->last_vt = vt;
	st->seen = 1;
	return dup;
}

/*
 * --dedup: a duplicate replaces the held-back sample of its stream; any
 * other sample commits the held-back one and is held back in turn.
 */
static int hold_back(section *sec, stream_state *st, const sample *smp, int dup)
{
	if (st->pending == NULL) {
		if ((st->pending = malloc(sizeof *st->pending)) == NULL)
			return WEFT_ENOMEM;
	} else if (dup) {
		sec->dropped++;
	} else {
		int rc = commit_sample(sec, st, st->pending);
		if (rc < 0)
			return rc;
	}
	*st->pending = *smp;
	return 0;
}

/* Span of the real and virtual times of a section's source samples. */
static void note_times(section *sec, const sample *smp)
{
	double rt = smp->v[SL_RT] * 1.0, vt = smp->v[SL_VT];
	if (!sec->have_rt || rt < sec->rt_first)
		sec->rt_first = rt;
	if (!sec->have_rt || rt > sec->rt_last)
		sec->rt_last = rt;
	sec->have_rt = 1;
	if (vt == DBL_MAX || vt > DBL_MAX) {
		sec->end_samples++;
	} else if (!sec->have_vt || vt > sec->vt_last) {
		sec->vt_last = vt;
		sec->have_vt = 1;
	}
}

/* One record of the run. */
static int summary_record(summary *s, const weft_event *ev)
{
	stream_state *st = &s->streams[ev->stream];
	if (st->section < 0)
		return 0;
	section *sec = &s->sections[st->section];
	level lv = level_of(ev);
	int is_vt = strcmp(sec->kind, "vt") == 0;
	if (lv == LV_OTHER || (lv != sec->source && !is_vt))
		return 0;
	sample smp;
	int rc = read_sample(s, ev, &smp);
	if (rc < 0)
		return 0; /* a record that does not decode: check reports it */
	int dup = is_vt ? note_virtual_time(sec, st, lv, smp.v[SL_VT], s->pieces) : 0;
	if (lv != sec->source)
		return 0;
	note_times(sec, &smp);
	if (s->dedup && is_vt)
		return hold_back(sec, st, &smp, dup);
	return commit_sample(sec, st, &smp);
}

/* --dedup: the samples still held back count too. */
static int commit_pending(summary *s)
{
	for (size_t i = 0; i < s->stream_count; i++) {
		stream_state *st = &s->streams[i];
		if (st->pending == NULL)
			continue;
		int rc = commit_sample(&s->sections[st->section], st, st->pending);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* Every record of a cursor made with status `rc` (freed here). */
static int read_cursor(summary *s, int rc, weft_cursor *cursor)
{
	const weft_event *ev;
	if (rc < 0)
		return rc;
	while ((rc = weft_cursor_next(cursor, &ev)) == 1)
		if ((rc = summary_record(s, ev)) < 0)
			break;
	weft_cursor_free(cursor);
	return rc;
}

/* ---- Sums of pieces, from ranks and threads ------------------------------------------- */

/* A double as its bits, and back (packed exactly). */
static uint64_t double_bits(double d)
{
	uint64_t u;
	memcpy(&u, &d, sizeof u);
	return u;
}

static double bits_double(uint64_t u)
{
	double d;
	memcpy(&d, &u, sizeof d);
	return d;
}

static void pack_fsum(weft__pack *p, const weft__fsum *f)
{
	for (int i = 0; i < WEFT__FSUM_LIMBS; i++)
		weft__pack_u64(p, f->limb[i]);
	weft__pack_u64(p, double_bits(f->other));
	weft__pack_u64(p, (uint64_t)(f->pos_inf | f->neg_inf << 1 | f->nan << 2));
}

static void unpack_fsum(weft__unpack *u, weft__fsum *f)
{
	for (int i = 0; i < WEFT__FSUM_LIMBS; i++)
		f->limb[i] = weft__unpack_u64(u);
	f->other = bits_double(weft__unpack_u64(u));
	uint64_t flags = weft__unpack_u64(u);
	f->pos_inf = flags & 1;
	f->neg_inf = (flags >> 1) & 1;
	f->nan = (flags >> 2) & 1;
}

static void pack_sample(weft__pack *p, const sample *smp)
{
	for (int k = 0; k < SL_COUNT; k++)
		weft__pack_u64(p, double_bits(smp->v[k]));
	weft__pack_u64(p, smp->has);
}

static void unpack_sample(weft__unpack *u, sample *smp)
{
	for (int k = 0; k < SL_COUNT; k++)
		smp->v[k] = bits_double(weft__unpack_u64(u));
	smp->has = (uint32_t)weft__unpack_u64(u);
}

/*
 * The streams of vt files that a piece has samples of: their state at
 * the piece's end, what the merge needs (note_for_merge), and the sample
 * held back (--dedup).
 */
static void pack_vt_streams(weft__pack *p, const summary *s)
{
	uint64_t count = 0;
	for (size_t i = 0; s->vt_streams != NULL && i < s->stream_count; i++)
		count += s->vt_streams[i] && s->streams[i].seen;
	weft__pack_u64(p, count);
	for (size_t i = 0; count > 0 && i < s->stream_count; i++) {
		const stream_state *st = &s->streams[i];
		if (!s->vt_streams[i] || !st->seen)
			continue;
		weft__pack_u64(p, i);
		weft__pack_u64(p, (uint64_t)st->lv);
		weft__pack_u64(p, double_bits(st->first_vt));
		weft__pack_u64(p, double_bits(st->last_vt));
		weft__pack_u64(p, double_bits(st->max_vt));
		weft__pack_u64(p, (uint64_t)(st->nan | st->more_highs << 1));
		weft__pack_u64(p, st->high_count);
		for (int k = 0; k < st->high_count; k++)
			weft__pack_u64(p, double_bits(st->highs[k]));
		weft__pack_u64(p, st->pending != NULL);
		if (st->pending != NULL)
			pack_sample(p, st->pending);
	}
}

/* One stream's part of a piece, as pack_vt_streams packs it. */
typedef struct vt_part {
	uint64_t stream;
	level lv;
	double first_vt, last_vt, max_vt;
	int nan, more_highs, high_count, has_pending;
	double highs[VT_HIGHS];
	sample pending;
} vt_part;

/* The next stream of a piece's pack: 0, or -1 (u->bad set). */
static int unpack_vt_part(weft__unpack *u, const summary *s, vt_part *e)
{
	e->stream = weft__unpack_u64(u);
	uint64_t lv = weft__unpack_u64(u);
	e->first_vt = bits_double(weft__unpack_u64(u));
	e->last_vt = bits_double(weft__unpack_u64(u));
	e->max_vt = bits_double(weft__unpack_u64(u));
	uint64_t flags = weft__unpack_u64(u), highs = weft__unpack_u64(u);
	if (u->bad || e->stream >= s->stream_count || s->vt_streams == NULL ||
	    !s->vt_streams[e->stream] || lv >= LV_OTHER || highs > VT_HIGHS) {
		u->bad = 1;
		return -1;
	}
	e->lv = (level)lv;
	e->nan = (int)(flags & 1);
	e->more_highs = (int)((flags >> 1) & 1);
	e->high_count = (int)highs;
	for (int k = 0; k < e->high_count; k++)
		e->highs[k] = bits_double(weft__unpack_u64(u));
	e->has_pending = weft__unpack_u64(u) != 0;
	if (e->has_pending)
		unpack_sample(u, &e->pending);
	return u->bad ? -1 : 0;
}

/*
 * A piece's part of a stream of a vt file, after the pieces before it
 * (whose state the stream has here). The piece counted its samples'
 * duplicates and earlier samples against its own samples only; by the
 * stream's whole past (the last virtual time L and the maximum P before
 * the piece):
 *   - its first sample is a duplicate when it equals L, else earlier when
 *     below P;
 *   - a later sample that is no duplicate and not below the piece's
 *     samples before it (a record high) is earlier when below P. Record
 *     highs never go down, so those below P are the first ones: the piece
 *     kept VT_HIGHS of them. When all of those are below P and there were
 *     more, the count is not known: the vt files are then read again
 *     whole (vt_whole), as for a virtual time that is not a number;
 *   - --dedup: the sample held back before the piece is dropped when the
 *     piece's first sample is a duplicate, else counted; the piece's own
 *     held-back sample is held back here.
 * Then the stream's state is the one after the piece. 0 or WEFT_ENOMEM.
 */
static int merge_vt_part(summary *s, const vt_part *e)
{
	stream_state *st = &s->streams[e->stream];
	section *sec = &s->sections[st->section];
	if (e->nan)
		s->vt_whole = 1;
	if (st->seen) {
		double p = st->max_vt;
		int dup = e->first_vt == st->last_vt;
		if (dup)
			sec->dup[e->lv]++;
		else if (e->first_vt < p)
			sec->earlier[e->lv]++;
		for (int k = 0; k < e->high_count; k++)
			sec->earlier[e->lv] += e->highs[k] < p;
		if (e->more_highs && e->high_count > 0 && e->highs[e->high_count - 1] < p)
			s->vt_whole = 1;
		if (st->pending != NULL && dup)
			sec->dropped++;
		else if (st->pending != NULL && commit_sample(sec, st, st->pending) < 0)
			return WEFT_ENOMEM;
	}
	if (!st->seen || e->max_vt > st->max_vt)
		st->max_vt = e->max_vt;
	st->last_vt = e->last_vt;
	st->seen = 1;
	if (e->has_pending && st->pending == NULL &&
	    (st->pending = malloc(sizeof *st->pending)) == NULL)
		return WEFT_ENOMEM;
	if (e->has_pending) {
		*st->pending = e->pending;
	} else {
		free(st->pending);
		st->pending = NULL;
	}
	return 0;
}

/* The vt streams of the next piece (pack_vt_streams), in file order. */
static int merge_vt_streams(summary *s, weft__unpack *u)
{
	uint64_t count = weft__unpack_u64(u);
	for (uint64_t k = 0; k < count && !u->bad; k++) {
		vt_part e;
		if (unpack_vt_part(u, s, &e) < 0)
			break;
		if (merge_vt_part(s, &e) < 0)
			return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	}
	return 0;
}

/*
 * A piece's vt streams (pack_vt_streams), then its sections (counts,
 * times, the totals of each PE). The vt streams come first: the merge
 * counts the sample held back before the piece before the piece's own
 * (the last sample counted gives num_gvts).
 */
static void pack_summary(weft__pack *p, const void *ctx)
{
	const summary *s = ctx;
	pack_vt_streams(p, s);
	weft__pack_u64(p, s->section_count);
	for (size_t i = 0; i < s->section_count; i++) {
		const section *sec = &s->sections[i];
		for (int l = 0; l < LV_COUNT; l++) {
			weft__pack_u64(p, sec->dup[l]);
			weft__pack_u64(p, sec->earlier[l]);
		}
		weft__pack_u64(p, sec->dropped);
		weft__pack_u64(p, sec->end_samples);
		weft__pack_u64(p, (uint64_t)(sec->have_rt | sec->have_vt << 1));
		weft__pack_u64(p, double_bits(sec->rt_first));
		weft__pack_u64(p, double_bits(sec->rt_last));
		weft__pack_u64(p, double_bits(sec->vt_last));
		weft__pack_u64(p, sec->pe_count);
		for (size_t k = 0; k < sec->pe_count; k++) {
			const pe_total *t = &sec->pes[k];
			weft__pack_u64(p, t->pe);
			weft__pack_u64(p, t->samples);
			for (int c = 0; c < SL_COUNTERS; c++)
				weft__pack_u64(p, t->counter[c]);
			for (int c = 0; c < PHASES; c++)
				pack_fsum(p, &t->phase[c]);
			weft__pack_u64(p, t->num_gvts);
			weft__pack_u64(p, t->pq_max);
			weft__pack_u64(p, t->has);
		}
	}
}

/*
 * Adds one PE's totals from the next rank: sums, the largest queue, and
 * num_gvts of the later piece that has one (the pieces come in file
 * order, so its last sample is the file's).
 */
static void add_pe(pe_total *t, weft__unpack *u)
{
	t->samples += weft__unpack_u64(u);
	for (int c = 0; c < SL_COUNTERS; c++)
		t->counter[c] += weft__unpack_u64(u);
	for (int c = 0; c < PHASES; c++) {
		weft__fsum f;
		unpack_fsum(u, &f);
		weft__fsum_merge(&t->phase[c], &f);
	}
	uint64_t gvts = weft__unpack_u64(u), pq = weft__unpack_u64(u);
	uint32_t has = (uint32_t)weft__unpack_u64(u);
	if (has & (1u << SL_NUM_GVTS))
		t->num_gvts = gvts;
	if (pq > t->pq_max)
		t->pq_max = pq;
	t->has |= has;
}

/* The next piece (pack_summary), in file order: on rank 0, or here from threads. */
static int merge_summary(void *ctx, weft__unpack *u)
{
	summary *s = ctx;
	int rc = merge_vt_streams(s, u);
	if (rc < 0)
		return rc;
	if (weft__unpack_u64(u) != s->section_count)
		u->bad = 1;
	for (size_t i = 0; i < s->section_count && !u->bad; i++) {
		section *sec = &s->sections[i];
		for (int l = 0; l < LV_COUNT; l++) {
			sec->dup[l] += weft__unpack_u64(u);
			sec->earlier[l] += weft__unpack_u64(u);
		}
		sec->dropped += weft__unpack_u64(u);
		sec->end_samples += weft__unpack_u64(u);
		uint64_t have = weft__unpack_u64(u);
		double rt_first = bits_double(weft__unpack_u64(u));
		double rt_last = bits_double(weft__unpack_u64(u));
		double vt_last = bits_double(weft__unpack_u64(u));
		if ((have & 1) && (!sec->have_rt || rt_first < sec->rt_first))
			sec->rt_first = rt_first;
		if ((have & 1) && (!sec->have_rt || rt_last > sec->rt_last))
			sec->rt_last = rt_last;
		if ((have & 2) && (!sec->have_vt || vt_last > sec->vt_last))
			sec->vt_last = vt_last;
		sec->have_rt |= (int)(have & 1);
		sec->have_vt |= (int)((have >> 1) & 1);
		uint64_t pes = weft__unpack_u64(u);
		for (uint64_t k = 0; k < pes && !u->bad; k++) {
			int64_t t = pe_index(sec, weft__unpack_u64(u));
			if (t < 0)
				return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
			add_pe(&sec->pes[t], u);
		}
	}
	return 0;
}

/* ---- Sections ------------------------------------------------------------------------ */

/* The level a stream node's kind names ("pe", "kp", "lp"), else LV_OTHER. */
static level level_of_node(const weft_node *node)
{
	if (strcmp(node->kind, "pe") == 0)
		return LV_PE;
	if (strcmp(node->kind, "kp") == 0)
		return LV_KP;
	if (strcmp(node->kind, "lp") == 0)
		return LV_LP;
	return LV_OTHER;
}

/* One section per root node of kind gvt, rt or vt; index per node in *of_root. */
static int find_sections(summary *s, int32_t *of_root)
{
	size_t n = weft_trace_node_count(s->trace);
	s->sections = calloc(n ? n : 1, sizeof *s->sections);
	if (s->sections == NULL)
		return WEFT_ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const weft_node *node = weft_trace_node(s->trace, i);
		char kind[16];
		of_root[i] = -1;
		if (node->parent != WEFT_NO_PARENT)
			continue;
		weft__ross_file_kind(node, kind, sizeof kind);
		if (strcmp(kind, "gvt") != 0 && strcmp(kind, "rt") != 0 && strcmp(kind, "vt") != 0)
			continue;
		section *sec = &s->sections[s->section_count];
		sec->root = node;
		snprintf(sec->kind, sizeof sec->kind, "%s", kind);
		weft__ross_file_of_root(node, sec->file, sizeof sec->file);
		sec->source = LV_OTHER;
		of_root[i] = (int32_t)s->section_count++;
	}
	return 0;
}

/*
 * The section of every stream, and each section's source level: PE
 * samples when it has PE streams, else KP, else LP.
 */
static int assign_streams(summary *s)
{
	size_t nodes = weft_trace_node_count(s->trace);
	int32_t *of_root = malloc((nodes ? nodes : 1) * sizeof *of_root);
	s->stream_count = weft_trace_stream_count(s->trace);
	s->streams = calloc(s->stream_count ? s->stream_count : 1, sizeof *s->streams);
	int rc = of_root != NULL && s->streams != NULL ? find_sections(s, of_root) : WEFT_ENOMEM;
	for (size_t i = 0; rc == 0 && i < s->stream_count; i++) {
		const weft_node *node = weft_trace_node(s->trace, weft_trace_stream(s->trace, i)->node);
		int32_t sec = of_root[weft__ross_root(s->trace, node->id)->id];
		s->streams[i].section = sec;
		s->streams[i].pe_index = -1;
		level lv = level_of_node(node);
		if (sec >= 0 && lv < s->sections[sec].source)
			s->sections[sec].source = lv;
	}
	free(of_root);
	return rc;
}

/* On ranks that read pieces: the streams of vt files, which rank 0 reads whole. */
static int mark_vt_streams(summary *s)
{
	s->vt_streams = calloc(s->stream_count ? s->stream_count : 1, 1);
	if (s->vt_streams == NULL)
		return WEFT_ENOMEM;
	for (size_t i = 0; i < s->stream_count; i++)
		s->vt_streams[i] = s->streams[i].section >= 0 &&
				   strcmp(s->sections[s->streams[i].section].kind, "vt") == 0;
	return 0;
}

/* ---- The analysis ------------------------------------------------------------------------ */

/* Frees the sections and the per-stream state. */
static void summary_free(summary *s)
{
	for (size_t i = 0; i < s->section_count; i++)
		free(s->sections[i].pes);
	free(s->sections);
	for (size_t i = 0; s->streams != NULL && i < s->stream_count; i++)
		free(s->streams[i].pending);
	free(s->streams);
	free(s->maps);
	free(s->vt_streams);
}

/* ---- Reading in pieces ------------------------------------------------------------------ */

/* The records the summary reads: every one but event-trace records. */
static void samples_filter(weft_filter *filter)
{
	memset(filter, 0, sizeof *filter);
	filter->code_pattern = "[!E]*"; /* not EVENT */
}

/* The samples of this handle's piece of each file. */
static int read_pieces(summary *s)
{
	weft_filter filter;
	weft_cursor *cursor = NULL;
	samples_filter(&filter);
	int rc = weft__cursor_create_pieces(s->trace, &filter, &cursor);
	return read_cursor(s, rc, cursor);
}

/* A thread's piece of the files (weft__pieces_run): its sections, packed. */
static int summary_piece(weft_trace *handle, const uint8_t *selected, weft__pack *result,
			 void *arg)
{
	const summary *whole = arg;
	summary s;
	(void)selected;
	memset(&s, 0, sizeof s);
	s.trace = handle;
	s.dedup = whole->dedup;
	s.time_scale = whole->time_scale;
	s.pieces = 1;
	int rc = assign_streams(&s);
	if (rc == 0)
		rc = mark_vt_streams(&s);
	if (rc == 0)
		rc = read_pieces(&s);
	if (rc == 0)
		pack_summary(result, &s);
	summary_free(&s);
	return rc;
}

/*
 * Forgets what the pieces of the vt files gave (sums, stream states),
 * to read them again whole.
 */
static void forget_vt(summary *s)
{
	for (size_t i = 0; i < s->section_count; i++) {
		section *sec = &s->sections[i];
		if (strcmp(sec->kind, "vt") != 0)
			continue;
		section kept = *sec;
		free(sec->pes);
		memset(sec, 0, sizeof *sec);
		sec->root = kept.root;
		memcpy(sec->kind, kept.kind, sizeof sec->kind);
		memcpy(sec->file, kept.file, sizeof sec->file);
		sec->source = kept.source;
	}
	for (size_t i = 0; i < s->stream_count; i++) {
		stream_state *st = &s->streams[i];
		if (!s->vt_streams[i])
			continue;
		int32_t section_index = st->section;
		free(st->pending);
		memset(st, 0, sizeof *st);
		st->section = section_index;
		st->pe_index = -1;
	}
}

/* The vt files read again whole, in place of their pieces (vt_whole). */
static int read_vt_whole(summary *s)
{
	weft_filter filter;
	weft_cursor *cursor = NULL;
	forget_vt(s);
	samples_filter(&filter);
	filter.order = WEFT_ORDER_STORED;
	int rc = weft__cursor_create_selected(s->trace, &filter, s->vt_streams, &cursor);
	return read_cursor(s, rc, cursor);
}

/*
 * One pass over the run: every record but event-trace records. In pieces
 * of the files (on ranks, or on `threads` > 1 threads), each piece's sums
 * are added up in file order (merge_summary: on rank 0, or here), the
 * samples of vt files taking their stream's past into account
 * (merge_vt_part).
 */
static int read_run(summary *s, int threads)
{
	weft_filter filter;
	weft_cursor *cursor = NULL;
	samples_filter(&filter);
	if (!s->pieces) {
		int rc = weft_cursor_create(s->trace, &filter, &cursor);
		return read_cursor(s, rc, cursor);
	}
	return threads > 1 ? weft__pieces_run(s->trace, threads, summary_piece, s, merge_summary, s)
	       : read_pieces(s);
}

/*
 * In pieces, once every piece is merged (on rank 0): the vt files read
 * again whole when their pieces could not be merged exactly (a stream
 * whose virtual times went back below more record highs than a piece
 * keeps, or are not numbers).
 */
static int finish_vt(summary *s)
{
	for (size_t i = 0; i < s->stream_count; i++)
		if (s->vt_streams[i] && s->streams[i].nan)
			s->vt_whole = 1;
	return s->vt_whole ? read_vt_whole(s) : 0;
}

void weft_ross_summary_options_init(weft_ross_summary_options *options)
{
	memset(options, 0, sizeof *options);
}

/* Reads the run once, then writes the report. */
int weft_ross_summary_write(weft_trace *trace, const weft_ross_summary_options *options,
			    FILE *out)
{
	weft_ross_summary_options defaults;
	summary s;
	int rc = weft_ross_analysable(trace);

	if (rc < 0)
		return rc;
	if (options == NULL) {
		weft_ross_summary_options_init(&defaults);
		options = &defaults;
	}
	memset(&s, 0, sizeof s);
	s.trace = trace;
	s.out = out;
	s.dedup = options->dedup;
	double rate = weft__ross_clock_rate(trace);
	s.time_scale = rate > 0 ? 1e9 / rate : 1;
	/* in pieces: on ranks, or on threads when worth it */
	int ranks = weft__dist_pieces(trace) > 0;
	int threads = ranks ? 1 : weft__pieces_threads(trace, 0, WEFT__WORK_LIGHT);
	s.pieces = ranks || threads > 1;
	size_t diags = weft_trace_diag_count(trace);
	rc = assign_streams(&s);
	if (rc == 0 && s.pieces)
		rc = mark_vt_streams(&s);
	if (rc == 0)
		rc = read_run(&s, threads);
	if (ranks) {
		/* every rank takes part, whatever its status; rank 0 writes */
		rc = weft__dist_combine(trace, rc, diags, pack_summary, merge_summary, &s);
		if (!weft__dist_root(trace)) {
			summary_free(&s);
			return rc;
		}
	}
	if (rc == 0 && s.pieces)
		rc = finish_vt(&s);
	if (rc == 0)
		rc = commit_pending(&s);
	weft__trace_diags_sort(trace, diags);
	if (rc == 0)
		rc = weft__ross_summary_print(&s, options->json);
	summary_free(&s);
	return rc;
}
