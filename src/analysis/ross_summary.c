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
 */
#include <float.h>
#include <stdarg.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "analysis/ross_analysis.h"
#include "util/fsum.h"

/* ---- Values of a sample --------------------------------------------------------- */

/* The fields a sample contributes, by slot. */
enum slot {
	SL_PROCESSED, SL_ABORTED, SL_ROLLED_BACK, SL_TOTAL_RB, SL_SECONDARY_RB,
	SL_FOSSIL_ATTEMPTS, SL_NET_SENDS, SL_NET_RECEIVES, SL_TIES, SL_ALL_REDUCE,
	SL_COUNTERS, /* the summed counters end here */
	SL_NUM_GVTS = SL_COUNTERS, SL_PQ_SIZE,
	SL_PHASE0, /* the 12 phase times */
	SL_VT = SL_PHASE0 + 12, SL_RT, SL_PE_ID,
	SL_COUNT
};
#define PHASES 12

static const char *const slot_names[SL_COUNT] = {
	"events_processed", "events_aborted", "events_rolled_back", "total_rollbacks",
	"secondary_rollbacks", "fossil_collect_attempts", "network_sends",
	"network_receives", "pe_event_ties", "all_reduce_count",
	"num_gvts", "priority_queue_size",
	"network_read_time", "network_other_time", "gvt_time", "fossil_collect_time",
	"events_aborted_time", "events_processed_time", "priority_queue_time",
	"rollback_time", "cancel_q_time", "avl_tree_time", "buddy_time", "lz4_time",
	"virtual_time", "real_time", "pe_id",
};

/* Short names of the phases, for the text table. */
static const char *const phase_short[PHASES] = {
	"net_read", "net_other", "gvt", "fossil", "aborted", "processed",
	"pq", "rollback", "cancel_q", "avl", "buddy", "lz4",
};

/* One sample's values; `has` says which slots its layout has. */
typedef struct sample {
	double v[SL_COUNT];
	uint32_t has; /* bit per slot below 32 */
} sample;

/* Slot per field of one layout (code, payload size), built on first sight. */
typedef struct slot_map {
	char code[24];
	uint32_t code_len, payload_size;
	int count;
	int8_t slot_of_field[64];
} slot_map;

/* ---- Aggregates ---------------------------------------------------------------- */

typedef enum level { LV_PE, LV_KP, LV_LP, LV_MODEL, LV_OTHER, LV_COUNT } level;
static const char *const level_codes[LV_COUNT] = { "PE", "KP", "LP", "MODEL", "?" };

/* Totals of one PE in one mode (or of all PEs). */
typedef struct pe_total {
	uint64_t pe;
	uint64_t samples;
	uint64_t counter[SL_COUNTERS];
	weft__fsum phase[PHASES]; /* exact: the same whatever the order */
	uint64_t num_gvts;      /* of the last sample */
	uint64_t pq_max;
	uint32_t has;           /* slots seen */
} pe_total;

/* One sampling-mode file (a root node of kind gvt, rt or vt). */
typedef struct section {
	const weft_node *root;
	char kind[16];
	char file[256];         /* the file, relative to the run */
	level source;           /* PE, KP or LP samples */
	pe_total *pes;
	size_t pe_count, pe_cap;
	uint64_t dup[LV_COUNT], earlier[LV_COUNT], dropped;
	uint64_t end_samples;
	double rt_first, rt_last, vt_last;
	int have_rt, have_vt;
} section;

/* Record highs a piece keeps per stream of a vt file (see merge_vt_streams). */
#define VT_HIGHS 4

/* Per stream: which section, and the duplicate detection state. */
typedef struct stream_state {
	int32_t section;        /* -1: not a sampling-mode file */
	uint8_t seen;
	int32_t pe_index;       /* its PE's totals in the section, -1 = not yet */
	double last_vt, max_vt;
	sample *pending;        /* --dedup: the sample held back */
	/*
	 * Read in pieces (vt files): what the merge of the pieces needs of this
	 * piece's samples of the stream (merge_vt_streams): the first one's
	 * virtual time and level, and its first VT_HIGHS record highs after
	 * the first (samples that are no duplicate and reach the maximum of
	 * the samples before them in the piece), `more_highs` when there were
	 * more; `nan`: a virtual time that is not a number (never merged).
	 */
	double first_vt;
	double highs[VT_HIGHS];
	uint8_t high_count, more_highs, nan;
	int8_t lv;
} stream_state;

typedef struct summary {
	weft_trace *trace;
	FILE *out;              /* where the report goes */
	int dedup;
	double time_scale;      /* 1e9 / clock rate, or 1 */
	section *sections;
	size_t section_count;
	stream_state *streams;
	size_t stream_count;
	slot_map *maps;
	size_t map_count;
	weft_field fields[64];
	/* Files read in pieces (on ranks: weft__dist_pieces, or threads):
	 * the streams of vt files, and `vt_whole` once their pieces cannot be
	 * merged exactly (then the vt files are read again whole). */
	uint8_t *vt_streams;
	int pieces, vt_whole;
} summary;

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
		if (weft__field_is(f, slot_names[k]))
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
		if (ev->code_len == strlen(level_codes[l]) &&
		    memcmp(ev->code, level_codes[l], ev->code_len) == 0)
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

/* The "file" member of a file node's metadata (else its name), into buf. */
static const char *file_of_root(const weft_node *root, char *buf, size_t size)
{
	json_t *meta = json_loads(root->metadata_json, 0, NULL);
	json_t *file = json_object_get(meta, "file");
	snprintf(buf, size, "%s", json_is_string(file) ? json_string_value(file) : root->name);
	json_decref(meta);
	return buf;
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
		file_of_root(node, sec->file, sizeof sec->file);
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

/* ---- Totals ------------------------------------------------------------------------- */

/* 100 * (1 - rolled_back / (processed - rolled_back)); 0 when undefined. */
static double efficiency(uint64_t processed, uint64_t rolled_back)
{
	if (processed == rolled_back)
		return 0;
	double net = (double)processed - (double)rolled_back;
	return 100.0 * (1.0 - (double)rolled_back / net);
}

/*
 * The totals of all PEs of a section: sums, except what every PE counts
 * of the same collective operations (all-reduces, like GVTs): each PE
 * takes part in each of them, so the run did as many as one PE, the
 * largest count.
 */
static void section_total(const section *sec, pe_total *all)
{
	memset(all, 0, sizeof *all);
	for (size_t i = 0; i < sec->pe_count; i++) {
		const pe_total *t = &sec->pes[i];
		all->samples += t->samples;
		all->has |= t->has;
		for (int k = 0; k < SL_COUNTERS; k++)
			if (k != SL_ALL_REDUCE)
				all->counter[k] += t->counter[k];
		if (t->counter[SL_ALL_REDUCE] > all->counter[SL_ALL_REDUCE])
			all->counter[SL_ALL_REDUCE] = t->counter[SL_ALL_REDUCE];
		for (int k = 0; k < PHASES; k++)
			weft__fsum_merge(&all->phase[k], &t->phase[k]);
		if (t->num_gvts > all->num_gvts)
			all->num_gvts = t->num_gvts;
		if (t->pq_max > all->pq_max)
			all->pq_max = t->pq_max;
	}
}

/* PEs in id order. */
static int compare_pes(const void *a, const void *b)
{
	const pe_total *x = a, *y = b;
	return (x->pe > y->pe) - (x->pe < y->pe);
}

/* 1 when the totals have a slot (the source samples have that field). */
static int has_slot(const pe_total *t, int slot)
{
	return (t->has >> slot) & 1u;
}

/* ---- Text output ---------------------------------------------------------------------- */

/* Cells of a table printed with aligned (right-justified) columns. */
typedef struct text_table {
	size_t cols;
	char **cells;
	size_t count, cap;
} text_table;

/* Appends one formatted cell (rows fill left to right). */
static void cell(text_table *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void cell(text_table *t, const char *fmt, ...)
{
	char buf[64];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	if (t->count == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 64;
		char **bigger = realloc(t->cells, cap * sizeof *bigger);
		if (bigger == NULL)
			return;
		t->cells = bigger;
		t->cap = cap;
	}
	if ((t->cells[t->count] = strdup(buf)) != NULL)
		t->count++;
}

/* Prints the table indented by two spaces, then frees its cells. */
static void print_text_table(FILE *out, text_table *t)
{
	size_t width[32] = { 0 };
	for (size_t i = 0; i < t->count; i++) {
		size_t n = strlen(t->cells[i]);
		if (n > width[i % t->cols])
			width[i % t->cols] = n;
	}
	for (size_t i = 0; i < t->count; i++) {
		fprintf(out, "%s%*s", i % t->cols == 0 ? "  " : "  ", (int)width[i % t->cols],
			t->cells[i]);
		if (i % t->cols == t->cols - 1 || i + 1 == t->count)
			fprintf(out, "\n");
		free(t->cells[i]);
	}
	free(t->cells);
	memset(t, 0, sizeof *t);
}

/* A counter cell, or "-" when the source samples lack it. */
static void counter_cell(text_table *t, const pe_total *p, int slot)
{
	if (has_slot(p, slot))
		cell(t, "%" PRIu64, p->counter[slot]);
	else
		cell(t, "-");
}

/* One line of the counters table (a PE or "all"). */
static void counters_row(text_table *t, const char *name, const pe_total *p)
{
	uint64_t processed = p->counter[SL_PROCESSED], rb = p->counter[SL_ROLLED_BACK];
	cell(t, "%s", name);
	cell(t, "%" PRIu64, p->samples);
	cell(t, "%" PRIu64, processed);
	counter_cell(t, p, SL_ABORTED);
	cell(t, "%" PRIu64, rb);
	cell(t, "%" PRId64, (int64_t)(processed - rb));
	cell(t, "%.2f", efficiency(processed, rb));
	counter_cell(t, p, SL_TOTAL_RB);
	counter_cell(t, p, SL_SECONDARY_RB);
	if (has_slot(p, SL_NUM_GVTS))
		cell(t, "%" PRIu64, p->num_gvts);
	else
		cell(t, "-");
}

/* One line of the phase times table. */
static void phases_row(text_table *t, const char *name, const pe_total *p, double scale)
{
	cell(t, "%s", name);
	for (int k = 0; k < PHASES; k++)
		cell(t, "%.6f", weft__fsum_value(&p->phase[k]) * scale);
}

/* The heading line of a section: file, samples, PEs, time spans. */
static void print_section_head(const summary *s, const section *sec, const pe_total *all)
{
	if (sec->source == LV_OTHER) {
		fprintf(s->out, "\n%s samples (%s): none\n", sec->kind, sec->file);
		return;
	}
	fprintf(s->out, "\n%s samples (%s%s%s): %" PRIu64 " %s samples of %zu PE%s", sec->kind, sec->file,
	       strcmp(sec->root->name, sec->kind) != 0 ? ", " : "",
	       strcmp(sec->root->name, sec->kind) != 0 ? sec->root->name : "",
	       all->samples, level_codes[sec->source], sec->pe_count,
	       sec->pe_count == 1 ? "" : "s");
	if (sec->source != LV_PE && sec->pe_count > 0)
		fprintf(s->out, " (summed per PE)");
	fprintf(s->out, "\n");
	if (sec->have_rt)
		fprintf(s->out, "  real time %.9f .. %.9f s (%.6f s)\n", sec->rt_first * s->time_scale,
		       sec->rt_last * s->time_scale, (sec->rt_last - sec->rt_first) * s->time_scale);
	if (sec->have_vt || sec->end_samples > 0) {
		fprintf(s->out, "  virtual time up to %.17g", sec->have_vt ? sec->vt_last : 0.0);
		if (sec->end_samples > 0)
			fprintf(s->out, "; %" PRIu64 " samples at the end (virtual time DBL_MAX)",
			       sec->end_samples);
		fprintf(s->out, "\n");
	}
}

/* vt files: the duplicate counts per level. */
static void print_duplicates(const summary *s, const section *sec)
{
	fprintf(s->out, "  duplicates (same entity and virtual time as its previous sample): "
	       "PE %" PRIu64 ", KP %" PRIu64 ", LP %" PRIu64 ", model %" PRIu64 "\n",
	       sec->dup[LV_PE], sec->dup[LV_KP], sec->dup[LV_LP], sec->dup[LV_MODEL]);
	uint64_t earlier = sec->earlier[LV_PE] + sec->earlier[LV_KP] + sec->earlier[LV_LP] +
			   sec->earlier[LV_MODEL];
	if (earlier > 0)
		fprintf(s->out, "  samples before their entity's latest virtual time: %" PRIu64 "\n", earlier);
	if (s->dedup)
		fprintf(s->out, "  --dedup: %" PRIu64 " duplicate %s samples left out\n", sec->dropped,
		       level_codes[sec->source]);
}

/* The two tables of a section. */
static void print_section(const summary *s, const section *sec)
{
	pe_total all;
	text_table t = { 10, NULL, 0, 0 };
	section_total(sec, &all);
	print_section_head(s, sec, &all);
	if (strcmp(sec->kind, "vt") == 0)
		print_duplicates(s, sec);
	if (sec->pe_count == 0)
		return;
	const char *heads[] = { "pe", "samples", "processed", "aborted", "rolled_back", "net",
				"efficiency", "rollbacks", "secondary", "gvts" };
	for (size_t i = 0; i < 10; i++)
		cell(&t, "%s", heads[i]);
	for (size_t i = 0; i < sec->pe_count; i++) {
		char name[24];
		snprintf(name, sizeof name, "%" PRIu64, sec->pes[i].pe);
		counters_row(&t, name, &sec->pes[i]);
	}
	counters_row(&t, "all", &all);
	print_text_table(s->out, &t);
	if (!has_slot(&all, SL_PHASE0))
		return;
	fprintf(s->out, "  time per engine phase (s):\n");
	t.cols = PHASES + 1;
	cell(&t, "pe");
	for (int k = 0; k < PHASES; k++)
		cell(&t, "%s", phase_short[k]);
	for (size_t i = 0; i < sec->pe_count; i++) {
		char name[24];
		snprintf(name, sizeof name, "%" PRIu64, sec->pes[i].pe);
		phases_row(&t, name, &sec->pes[i], s->time_scale);
	}
	phases_row(&t, "all", &all, s->time_scale);
	print_text_table(s->out, &t);
}

/*
 * 1 when `node` is a file of the run that holds no engine samples (model,
 * evtrace); its kind in kind[16].
 */
static int other_file(const weft_node *node, char kind[16])
{
	if (node->parent != WEFT_NO_PARENT)
		return 0;
	weft__ross_file_kind(node, kind, 16);
	return strcmp(kind, "gvt") != 0 && strcmp(kind, "rt") != 0 && strcmp(kind, "vt") != 0;
}

/* Files that are not engine samples (model, evtrace): named with their records. */
static void print_other_files(const summary *s)
{
	size_t n = weft_trace_node_count(s->trace);
	for (size_t i = 0; i < n; i++) {
		const weft_node *node = weft_trace_node(s->trace, i);
		char kind[16], file[256];
		if (!other_file(node, kind))
			continue;
		json_t *meta = json_loads(node->metadata_json, 0, NULL);
		json_t *records = json_object_get(meta, "records");
		fprintf(s->out, "\n%s (%s): %" JSON_INTEGER_FORMAT " records, not engine samples\n", kind,
		       file_of_root(node, file, sizeof file),
		       json_is_integer(records) ? json_integer_value(records) : 0);
		json_decref(meta);
	}
}

/* The whole text report: every section, then the other files. */
static void print_text(const summary *s)
{
	fprintf(s->out, "run: %s\n", weft_trace_path(s->trace));
	if (s->section_count == 0)
		fprintf(s->out, "\nno engine samples (no gvt, rt or vt file)\n");
	for (size_t i = 0; i < s->section_count; i++)
		print_section(s, &s->sections[i]);
	print_other_files(s);
}

/* ---- JSON output ----------------------------------------------------------------------- */

/* A counter, or null when the source samples lack it. */
static json_t *json_counter(const pe_total *p, int slot)
{
	return has_slot(p, slot) ? json_integer((json_int_t)p->counter[slot]) : json_null();
}

/* The object of one PE (or of all PEs: `pe` < 0). */
static json_t *json_totals(const pe_total *p, int64_t pe, double scale)
{
	uint64_t processed = p->counter[SL_PROCESSED], rb = p->counter[SL_ROLLED_BACK];
	json_t *o = json_object();
	if (pe >= 0)
		json_object_set_new(o, "pe", json_integer(pe));
	json_object_set_new(o, "samples", json_integer((json_int_t)p->samples));
	for (int k = 0; k < SL_COUNTERS; k++)
		json_object_set_new(o, slot_names[k], json_counter(p, k));
	json_object_set_new(o, "net_events", json_integer((json_int_t)processed - (json_int_t)rb));
	json_object_set_new(o, "efficiency", json_real(efficiency(processed, rb)));
	json_object_set_new(o, "primary_rollbacks",
			    has_slot(p, SL_TOTAL_RB) && has_slot(p, SL_SECONDARY_RB) ?
			    json_integer((json_int_t)p->counter[SL_TOTAL_RB] -
					 (json_int_t)p->counter[SL_SECONDARY_RB]) : json_null());
	json_object_set_new(o, "num_gvts", has_slot(p, SL_NUM_GVTS) ?
			    json_integer((json_int_t)p->num_gvts) : json_null());
	json_object_set_new(o, "priority_queue_size_max", has_slot(p, SL_PQ_SIZE) ?
			    json_integer((json_int_t)p->pq_max) : json_null());
	json_t *phases = has_slot(p, SL_PHASE0) ? json_object() : json_null();
	for (int k = 0; k < PHASES && json_is_object(phases); k++)
		json_object_set_new(phases, slot_names[SL_PHASE0 + k],
				    json_real(weft__fsum_value(&p->phase[k]) * scale));
	json_object_set_new(o, "phase_times", phases);
	return o;
}

/* Per-level counts of a vt section as an object. */
static json_t *json_levels(const uint64_t *counts)
{
	json_t *o = json_object();
	for (int l = 0; l < LV_OTHER; l++)
		json_object_set_new(o, level_codes[l], json_integer((json_int_t)counts[l]));
	return o;
}

/* The object of one sampling-mode file. */
static json_t *json_section(const summary *s, const section *sec)
{
	pe_total all;
	section_total(sec, &all);
	json_t *o = json_object();
	json_object_set_new(o, "mode", json_string(sec->kind));
	json_object_set_new(o, "name", json_string(sec->root->name));
	json_object_set_new(o, "file", json_string(sec->file));
	json_object_set_new(o, "source", sec->source == LV_OTHER ? json_null() :
			    json_string(level_codes[sec->source]));
	json_object_set_new(o, "real_time_first", sec->have_rt ?
			    json_real(sec->rt_first * s->time_scale) : json_null());
	json_object_set_new(o, "real_time_last", sec->have_rt ?
			    json_real(sec->rt_last * s->time_scale) : json_null());
	json_object_set_new(o, "virtual_time_last", sec->have_vt ? json_real(sec->vt_last) :
			    json_null());
	json_object_set_new(o, "end_samples", json_integer((json_int_t)sec->end_samples));
	if (strcmp(sec->kind, "vt") == 0) {
		json_object_set_new(o, "duplicates", json_levels(sec->dup));
		json_object_set_new(o, "earlier", json_levels(sec->earlier));
		json_object_set_new(o, "dropped", json_integer((json_int_t)sec->dropped));
	}
	json_t *pes = json_array();
	for (size_t i = 0; i < sec->pe_count; i++)
		json_array_append_new(pes, json_totals(&sec->pes[i], (int64_t)sec->pes[i].pe,
						       s->time_scale));
	json_object_set_new(o, "pes", pes);
	json_object_set_new(o, "all", json_totals(&all, -1, s->time_scale));
	return o;
}

/* The other files (model, evtrace) with their record counts. */
static json_t *json_other_files(const summary *s)
{
	json_t *a = json_array();
	size_t n = weft_trace_node_count(s->trace);
	for (size_t i = 0; i < n; i++) {
		const weft_node *node = weft_trace_node(s->trace, i);
		char kind[16], file[256];
		if (!other_file(node, kind))
			continue;
		json_t *meta = json_loads(node->metadata_json, 0, NULL);
		json_t *o = json_object();
		json_object_set_new(o, "kind", json_string(kind));
		json_object_set_new(o, "name", json_string(node->name));
		json_object_set_new(o, "file", json_string(file_of_root(node, file, sizeof file)));
		json_object_set(o, "records", json_object_get(meta, "records") ?
				json_object_get(meta, "records") : json_null());
		json_array_append_new(a, o);
		json_decref(meta);
	}
	return a;
}

/* The whole report as one JSON object on one line. */
static int print_json(const summary *s)
{
	json_t *root = json_object();
	json_object_set_new(root, "run", json_string(weft_trace_path(s->trace)));
	double rate = weft__ross_clock_rate(s->trace);
	json_object_set_new(root, "clock_rate", rate > 0 ? json_real(rate) : json_null());
	json_object_set_new(root, "dedup", json_boolean(s->dedup));
	json_t *modes = json_array();
	for (size_t i = 0; i < s->section_count; i++)
		json_array_append_new(modes, json_section(s, &s->sections[i]));
	json_object_set_new(root, "modes", modes);
	json_object_set_new(root, "other_files", json_other_files(s));
	char *text = json_dumps(root, JSON_COMPACT | JSON_REAL_PRECISION(17));
	json_decref(root);
	if (text == NULL)
		return WEFT_ENOMEM;
	fprintf(s->out, "%s\n", text);
	free(text);
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
	/* (A file without engine samples has no PE table: NULL, which
	 * qsort() must not get even for 0 elements.) */
	for (size_t i = 0; rc == 0 && i < s.section_count; i++)
		if (s.sections[i].pe_count > 1)
			qsort(s.sections[i].pes, s.sections[i].pe_count,
			      sizeof(pe_total), compare_pes);
	if (rc == 0 && options->json)
		rc = print_json(&s);
	else if (rc == 0)
		print_text(&s);
	summary_free(&s);
	return rc;
}
