/* SPDX-License-Identifier: MIT */
/*
 * formats/pallas/pallas_write_grammar.c - the grammar each thread writer of the
 * Pallas writer builds while recording (the records API that feeds it is
 * pallas_write_records.c).
 *
 * The decisions are Pallas 0.20's (docs/pallas-writer.md, "Grammar"):
 * per call depth a list of tokens; after each new token, the shortest
 * suffix equal to a known sequence is replaced by it, then the shortest
 * repetition of the last L tokens right after the same L tokens becomes a
 * loop of 2 iterations (or a loop just before a repeated body gains an
 * iteration), loops equal to an existing one are merged into it ("squash",
 * leaving a dead slot), and a block end turns the depth's list into a
 * block sequence. The same recursion as Pallas's runs, so the same ids
 * come out. What differs is how matches are found:
 *
 *   - every list keeps prefix hashes (a polynomial hash of the tokens),
 *     so the hash of any range costs O(1);
 *   - a suffix is compared only with the lengths of the sequences that
 *     end with the new token (a short list per token), not with every
 *     length up to the window;
 *   - a repetition of length L ending at the new token needs the same
 *     token L places before: the candidates are the previous positions of
 *     that token, kept as a chain per list, walked nearest first;
 *   - merging loops looks its (body, iterations) up in a table.
 *
 * Every token occurrence in a list also carries its start and end time
 * and what it adds to its parent's block time, so durations are computed
 * from the lists, never read back from the values already written.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "formats/pallas/pallas_writer_internal.h"

#define HASH_MUL 0x9E3779B97F4A7C15ull
#define TOKEN_ID_MAX (WEFT_PALLAS_TOKEN_ID_INVALID - 1u) /* 30-bit ids */
#define FAR_CANDIDATES 16   /* matches tried beyond max_loop_length */
#define MAX_RECURSION 4096  /* nested searches after replacements */
#define LEVEL_MIN_CAP 16
#define TABLE_MIN 64
#define CHAIN_MIN 16        /* lists this long keep chains of equal tokens */

#define TOK(type, id) WEFT_PALLAS_TOKEN(type, id)
#define TYPE(tok) WEFT_PALLAS_TOKEN_TYPE(tok)
#define IDX(tok) WEFT_PALLAS_TOKEN_IDX(tok)

static inline int store_token(pw_thread *t, uint32_t d, uint32_t tok, uint64_t start,
		       uint64_t end, uint64_t contrib);

/* ---- Hashing ------------------------------------------------------------------------ */

/*
 * Spreads a token's bits before it enters a hash (one multiply: every
 * hash match is confirmed by comparing the tokens, so speed wins).
 */
static inline uint64_t mix_token(uint32_t tok)
{
	uint64_t x = ((uint64_t)tok + 0x632BE59BD9B4E019ull) * 0xBF58476D1CE4E5B9ull;
	return x ^ (x >> 31);
}

/*
 * The hash of tokens [a, b) of a list, from its prefix hashes
 * (h[i + 1] = h[i] * HASH_MUL + mix_token(tok[i])): the same value as the
 * hash of those tokens alone, which sequences keep.
 */
static inline uint64_t range_hash(const pw_grammar *g, const pw_level *l, size_t a,
				  size_t b)
{
	return l->h[b] - l->h[a] * g->pow[b - a];
}

/*
 * Identity of an event: its record and payload bytes, read 4 at a time
 * (payloads are built with 4- and 8-byte stores: wider loads would wait
 * for them instead of forwarding).
 */
static uint64_t event_hash(int32_t record, const uint8_t *payload, size_t size)
{
	uint64_t h = ((uint64_t)(uint32_t)record << 8 | size) * HASH_MUL;
	size_t i = 0;
	for (; i + 4 <= size; i += 4) {
		uint32_t w;
		memcpy(&w, payload + i, 4);
		h = (h ^ w) * HASH_MUL;
		h ^= h >> 29;
	}
	for (; i < size; i++)
		h = (h ^ payload[i]) * HASH_MUL;
	return h ^ (h >> 32);
}

/* Equal token arrays (inline: most are a few tokens long). */
static inline int same_tokens(const uint32_t *a, const uint32_t *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (a[i] != b[i])
			return 0;
	return 1;
}

/* Equal payloads (inline: most are a few bytes long; 4 at a time, as built). */
static inline int same_bytes(const uint8_t *a, const uint8_t *b, size_t n)
{
	size_t i = 0;
	for (; i + 4 <= n; i += 4) {
		uint32_t x, y;
		memcpy(&x, a + i, 4);
		memcpy(&y, b + i, 4);
		if (x != y)
			return 0;
	}
	for (; i < n; i++)
		if (a[i] != b[i])
			return 0;
	return 1;
}

/* Key of a loop in the merge table: its body and its iteration count (one multiply). */
static inline uint64_t loop_key_hash(uint32_t repeated, uint32_t iterations)
{
	uint64_t x = ((uint64_t)repeated << 32 | iterations) * HASH_MUL;
	return x ^ (x >> 32);
}

/* ---- Chained tables ------------------------------------------------------------------ */

/* How a table reaches the items it indexes (events, sequences or loops). */
typedef struct table_kind {
	uint64_t (*hash)(const pw_grammar *g, uint32_t i);
	uint32_t *(*next)(pw_grammar *g, uint32_t i);
	int (*member)(const pw_grammar *g, uint32_t i);
	uint32_t (*count)(const pw_grammar *g);
} table_kind;

/* Events: every one is in the table. */
static uint64_t ev_hash(const pw_grammar *g, uint32_t i) { return g->events[i].hash; }
static uint32_t *ev_next(pw_grammar *g, uint32_t i) { return &g->events[i].next; }
static int ev_member(const pw_grammar *g, uint32_t i) { (void)g; (void)i; return 1; }
static uint32_t ev_count(const pw_grammar *g) { return g->nevents; }
static const table_kind EVENT_KIND = { ev_hash, ev_next, ev_member, ev_count };

/* Sequences: all but the root. */
static uint64_t seq_hash(const pw_grammar *g, uint32_t i) { return g->seqs[i].hash; }
static uint32_t *seq_next(pw_grammar *g, uint32_t i) { return &g->seqs[i].next; }
/* The root sequence (0) is never looked up. */
static int seq_member(const pw_grammar *g, uint32_t i) { (void)g; return i != 0; }
static uint32_t seq_count(const pw_grammar *g) { return g->nseqs; }
static const table_kind SEQ_KIND = { seq_hash, seq_next, seq_member, seq_count };

/* Loops: the live ones, keyed by (body, iterations). */
static uint64_t loop_hash(const pw_grammar *g, uint32_t i)
{
	return loop_key_hash(g->loops[i].repeated, g->loops[i].iterations);
}
static uint32_t *loop_next(pw_grammar *g, uint32_t i) { return &g->loops[i].next; }
static int loop_member(const pw_grammar *g, uint32_t i) { return g->loops[i].in_table; }
static uint32_t loop_count(const pw_grammar *g) { return g->nloops; }
static const table_kind LOOP_KIND = { loop_hash, loop_next, loop_member, loop_count };

/* Allocates `buckets` empty heads (a power of two). */
static int table_alloc(pw_thread *t, pw_table *tab, uint32_t buckets)
{
	uint32_t *heads = weft__pw_alloc(t, (size_t)buckets * sizeof *heads);
	if (heads == NULL)
		return WEFT_ENOMEM;
	memset(heads, 0xFF, (size_t)buckets * sizeof *heads);
	tab->heads = heads;
	tab->mask = buckets - 1;
	return 0;
}

/* Frees a table's heads (the items are not the table's). */
static void table_release(pw_thread *t, pw_table *tab)
{
	if (tab->heads != NULL)
		weft__pw_free(t, tab->heads, ((size_t)tab->mask + 1) * sizeof *tab->heads);
	tab->heads = NULL;
}

/* Doubles the buckets and rechains every member but `skip` (being inserted). */
static int table_grow(pw_thread *t, pw_table *tab, const table_kind *k, uint32_t skip)
{
	pw_grammar *g = &t->g;
	pw_table bigger = { 0 };
	if (tab->mask >= UINT32_MAX / 4)
		return 0; /* long chains rather than no table */
	int rc = table_alloc(t, &bigger, (tab->mask + 1) * 2);
	if (rc < 0)
		return rc;
	for (uint32_t i = 0, n = k->count(g); i < n; i++) {
		if (i == skip || !k->member(g, i))
			continue;
		uint32_t b = (uint32_t)(k->hash(g, i) & bigger.mask);
		*k->next(g, i) = bigger.heads[b];
		bigger.heads[b] = i;
	}
	bigger.count = tab->count;
	table_release(t, tab);
	*tab = bigger;
	return 0;
}

/* Chains item `i` (its hash already set) into the table. */
static int table_insert(pw_thread *t, pw_table *tab, const table_kind *k, uint32_t i)
{
	pw_grammar *g = &t->g;
	if (tab->count >= tab->mask + 1) {
		int rc = table_grow(t, tab, k, i);
		if (rc < 0)
			return rc;
	}
	uint32_t b = (uint32_t)(k->hash(g, i) & tab->mask);
	*k->next(g, i) = tab->heads[b];
	tab->heads[b] = i;
	tab->count++;
	return 0;
}

/* ---- Lengths of the sequences ending with a token ----------------------------------------- */

/* Adds `len` to a sorted list of distinct lengths. */
static int lengths_add(pw_thread *t, pw_lengths *l, uint32_t len)
{
	uint32_t i = 0;
	while (i < l->n && l->v[i] < len)
		i++;
	if (i < l->n && l->v[i] == len)
		return 0;
	if (l->n == l->cap) {
		uint32_t cap = l->cap ? l->cap * 2 : 2;
		uint32_t *v = weft__pw_realloc(t, l->v, (size_t)l->cap * sizeof *v,
					       (size_t)cap * sizeof *v);
		if (v == NULL)
			return WEFT_ENOMEM;
		l->v = v;
		l->cap = cap;
	}
	memmove(l->v + i + 1, l->v + i, (size_t)(l->n - i) * sizeof *l->v);
	l->v[i] = len;
	l->n++;
	return 0;
}

/* Frees a list of lengths. */
static void lengths_free(pw_thread *t, pw_lengths *l)
{
	weft__pw_free(t, l->v, (size_t)l->cap * sizeof *l->v);
	l->v = NULL;
	l->n = l->cap = 0;
}

/* The list of lengths of the sequences that end with token `tok`. */
static pw_lengths *ends_of(pw_grammar *g, uint32_t tok)
{
	switch (TYPE(tok)) {
	case WEFT_PALLAS_TOKEN_EVENT: return &g->events[IDX(tok)].ends;
	case WEFT_PALLAS_TOKEN_SEQUENCE: return &g->seqs[IDX(tok)].ends;
	default: return &g->loops[IDX(tok)].ends;
	}
}

/* ---- Growing arrays -------------------------------------------------------------------------- */

/* Makes room for one more item of `size` bytes in an array of *cap. */
static int reserve_one(pw_thread *t, void **array, uint32_t n, uint32_t *cap, size_t size)
{
	if (n < *cap)
		return 0;
	if (n >= TOKEN_ID_MAX)
		return weft__error(WEFT_EUNSUPPORTED, t->dir, WEFT_NO_OFFSET,
				   "more than %u events, sequences or loops in one thread",
				   TOKEN_ID_MAX);
	uint32_t grown = *cap ? *cap * 2 : 16;
	if (grown > TOKEN_ID_MAX)
		grown = TOKEN_ID_MAX;
	void *p = weft__pw_realloc(t, *array, (size_t)*cap * size, (size_t)grown * size);
	if (p == NULL)
		return WEFT_ENOMEM;
	*array = p;
	*cap = grown;
	return 0;
}

/* ---- The lists of each depth ------------------------------------------------------------------ */

/* Bytes of a level's block for `cap` tokens (six arrays in one allocation). */
static size_t level_block_size(size_t cap)
{
	return cap * (2 * sizeof(uint64_t) + 2 * sizeof(uint32_t)) +
	       2 * (cap + 1) * sizeof(uint64_t);
}

/* Extends the powers of the hash multiplier to `n` entries. */
static int pow_reserve(pw_thread *t, size_t n)
{
	pw_grammar *g = &t->g;
	if (n <= g->pow_cap)
		return 0;
	size_t cap = g->pow_cap ? g->pow_cap : 64;
	while (cap < n)
		cap *= 2;
	uint64_t *p = weft__pw_realloc(t, g->pow, g->pow_cap * sizeof *p, cap * sizeof *p);
	if (p == NULL)
		return WEFT_ENOMEM;
	for (size_t i = g->pow_cap; i < cap; i++)
		p[i] = i == 0 ? 1 : p[i - 1] * HASH_MUL;
	g->pow = p;
	g->pow_cap = cap;
	return 0;
}

/* Doubles a level's capacity: its six arrays move to one new block. */
static int level_grow(pw_thread *t, pw_level *l)
{
	size_t cap = l->cap ? l->cap * 2 : LEVEL_MIN_CAP;
	if (cap >= UINT32_MAX)
		return weft__error(WEFT_EUNSUPPORTED, t->dir, WEFT_NO_OFFSET,
				   "more than 2^32 tokens at one call depth");
	int rc = pow_reserve(t, cap + 1);
	if (rc < 0)
		return rc;
	uint8_t *block = weft__pw_alloc(t, level_block_size(cap));
	if (block == NULL)
		return WEFT_ENOMEM;
	uint64_t *start = (uint64_t *)block, *end = start + cap;
	uint64_t *csum = end + cap, *h = csum + cap + 1;
	uint32_t *tok = (uint32_t *)(h + cap + 1), *prev = tok + cap;
	if (l->cap != 0) {
		memcpy(start, l->start, l->n * sizeof *start);
		memcpy(end, l->end, l->n * sizeof *end);
		memcpy(csum, l->csum, (l->n + 1) * sizeof *csum);
		memcpy(h, l->h, (l->n + 1) * sizeof *h);
		memcpy(tok, l->tok, l->n * sizeof *tok);
		memcpy(prev, l->prev, l->n * sizeof *prev);
		weft__pw_free(t, l->start, level_block_size(l->cap));
	} else {
		csum[0] = h[0] = 0;
	}
	l->start = start, l->end = end, l->csum = csum, l->h = h;
	l->tok = tok, l->prev = prev;
	l->cap = cap;
	return 0;
}

/* Where the last position of (depth, token) is kept; NULL if absent and !insert. */
static uint32_t *lastpos_slot(pw_thread *t, uint64_t key, int insert)
{
	pw_grammar *g = &t->g;
	size_t mask = g->lastpos_cap - 1;
	size_t i = (size_t)((key * HASH_MUL) >> 20) & mask;
	while (g->lastpos_keys[i] != UINT64_MAX) {
		if (g->lastpos_keys[i] == key)
			return &g->lastpos_vals[i];
		i = (i + 1) & mask;
	}
	if (!insert)
		return NULL;
	g->lastpos_keys[i] = key;
	g->lastpos_vals[i] = PW_NONE;
	g->lastpos_count++;
	return &g->lastpos_vals[i];
}

/* Doubles the last-position map (open addressing, kept under half full). */
static int lastpos_grow(pw_thread *t)
{
	pw_grammar *g = &t->g;
	size_t old_cap = g->lastpos_cap, cap = old_cap ? old_cap * 2 : 256;
	uint64_t *keys = weft__pw_alloc(t, cap * sizeof *keys);
	uint32_t *vals = weft__pw_alloc(t, cap * sizeof *vals);
	if (keys == NULL || vals == NULL) {
		weft__pw_free(t, keys, cap * sizeof *keys);
		weft__pw_free(t, vals, cap * sizeof *vals);
		return WEFT_ENOMEM;
	}
	memset(keys, 0xFF, cap * sizeof *keys);
	uint64_t *old_keys = g->lastpos_keys;
	uint32_t *old_vals = g->lastpos_vals;
	g->lastpos_keys = keys, g->lastpos_vals = vals;
	g->lastpos_cap = cap, g->lastpos_count = 0;
	for (size_t i = 0; i < old_cap; i++)
		if (old_keys[i] != UINT64_MAX)
			*lastpos_slot(t, old_keys[i], 1) = old_vals[i];
	weft__pw_free(t, old_keys, old_cap * sizeof *old_keys);
	weft__pw_free(t, old_vals, old_cap * sizeof *old_vals);
	return 0;
}

/*
 * Chains position p of depth d's list to the previous position of the
 * same token (kept in the last-position map). Only lists of CHAIN_MIN
 * tokens or more keep chains: shorter ones are scanned.
 */
static int chain_push(pw_thread *t, uint32_t d, pw_level *l, size_t p)
{
	pw_grammar *g = &t->g;
	int rc;
	if (2 * (g->lastpos_count + 1) > g->lastpos_cap && (rc = lastpos_grow(t)) < 0)
		return rc;
	uint32_t *last = lastpos_slot(t, (uint64_t)d << 32 | l->tok[p], 1);
	l->prev[p] = *last;
	*last = (uint32_t)p;
	return 0;
}

/* Unchains position p (the last chained one): its token's last position goes back. */
static void chain_pop(pw_thread *t, uint32_t d, pw_level *l, size_t p)
{
	uint32_t *last = lastpos_slot(t, (uint64_t)d << 32 | l->tok[p], 0);
	if (last != NULL)
		*last = l->prev[p];
}

/*
 * Appends a token occurrence to depth d's list, growing it or keeping
 * its chains of equal tokens (lists of CHAIN_MIN tokens or more).
 */
static int level_push_slow(pw_thread *t, uint32_t d, uint32_t tok, uint64_t start,
			   uint64_t end, uint64_t contrib)
{
	pw_level *l = &t->g.levels[d];
	int rc = 0;
	if (l->n == l->cap && (rc = level_grow(t, l)) < 0)
		return rc;
	size_t n = l->n;
	l->tok[n] = tok;
	l->start[n] = start;
	l->end[n] = end;
	l->csum[n + 1] = l->csum[n] + contrib;
	l->h[n + 1] = l->h[n] * HASH_MUL + mix_token(tok);
	l->n = n + 1;
	if (l->chained)
		return chain_push(t, d, l, n);
	if (l->n == CHAIN_MIN) {
		for (size_t p = 0; p < l->n && rc == 0; p++)
			rc = chain_push(t, d, l, p);
		l->chained = 1;
	}
	return rc;
}

/*
 * Appends a token occurrence to depth d's list (no search): inline for
 * short lists with room, which is what most calls see.
 */
static inline int level_push(pw_thread *t, uint32_t d, uint32_t tok, uint64_t start,
			     uint64_t end, uint64_t contrib)
{
	pw_level *l = &t->g.levels[d];
	size_t n = l->n;
	if (n + 1 >= CHAIN_MIN || n == l->cap)
		return level_push_slow(t, d, tok, start, end, contrib);
	l->tok[n] = tok;
	l->start[n] = start;
	l->end[n] = end;
	l->csum[n + 1] = l->csum[n] + contrib;
	l->h[n + 1] = l->h[n] * HASH_MUL + mix_token(tok);
	l->n = n + 1;
	return 0;
}

/* Drops the tokens of a chained list from position k on, restoring their chains. */
static void level_truncate_chained(pw_thread *t, uint32_t d, size_t k)
{
	pw_level *l = &t->g.levels[d];
	size_t stop = k >= CHAIN_MIN ? k : 0; /* too short: unchain it all */
	for (size_t p = l->n; p-- > stop;)
		chain_pop(t, d, l, p);
	l->chained = stop > 0;
	if (k < l->n)
		l->n = k;
}

/* Drops depth d's tokens from position k on (inline: short lists just shrink). */
static inline void level_truncate(pw_thread *t, uint32_t d, size_t k)
{
	pw_level *l = &t->g.levels[d];
	if (l->chained)
		level_truncate_chained(t, d, k);
	else if (k < l->n)
		l->n = k;
}

/* The previous position of the token at position p, or PW_NONE. */
static inline uint32_t previous_same(const pw_level *l, size_t p)
{
	if (l->chained)
		return l->prev[p];
	for (size_t i = p; i-- > 0;)
		if (l->tok[i] == l->tok[p])
			return (uint32_t)i;
	return PW_NONE;
}

/* Makes depth d exist (levels are created as calls nest). */
static int level_enter(pw_thread *t, uint32_t d)
{
	pw_grammar *g = &t->g;
	if (d < g->nlevels)
		return 0;
	if (d >= (uint32_t)INT32_MAX)
		return weft__error(WEFT_EUNSUPPORTED, t->dir, WEFT_NO_OFFSET,
				   "blocks nested more than 2^31 deep");
	uint32_t cap = g->nlevels ? g->nlevels * 2 : 8;
	while (cap <= d)
		cap *= 2;
	pw_level *p = weft__pw_realloc(t, g->levels, g->nlevels * sizeof *p, cap * sizeof *p);
	if (p == NULL)
		return WEFT_ENOMEM;
	memset(p + g->nlevels, 0, (cap - g->nlevels) * sizeof *p);
	g->levels = p;
	g->nlevels = cap;
	return 0;
}

/* ---- Events, sequences, loops ----------------------------------------------------------------- */

/* The id of the event (record, payload), created at its first occurrence. */
static int event_id(pw_thread *t, int32_t record, const uint8_t *payload, uint8_t size,
		    uint32_t *out)
{
	pw_grammar *g = &t->g;
	uint64_t h = event_hash(record, payload, size);
	for (uint32_t i = g->event_table.heads[h & g->event_table.mask]; i != PW_NONE;
	     i = g->events[i].next) {
		const pw_event *e = &g->events[i];
		if (e->hash == h && e->record == record && e->size == size + 5u &&
		    same_bytes(e->payload, payload, size)) {
			*out = i;
			return 0;
		}
	}
	int rc = reserve_one(t, (void **)&g->events, g->nevents, &g->events_cap, sizeof *g->events);
	if (rc < 0)
		return rc;
	pw_event *e = &g->events[g->nevents];
	memset(e, 0, sizeof *e);
	if (size > 0 && (e->payload = weft__pw_alloc(t, size)) == NULL)
		return WEFT_ENOMEM;
	if (size > 0)
		memcpy(e->payload, payload, size);
	e->record = record;
	e->size = (uint8_t)(size + WEFT_PALLAS_EVENT_HEADER);
	e->hash = h;
	e->last_block = PW_NONE;
	e->ts.file = PW_EVENT_FILE;
	e->ts.which = PW_EVENT_TS;
	e->ts.owner = g->nevents;
	*out = g->nevents++;
	return table_insert(t, &g->event_table, &EVENT_KIND, *out);
}

/* The sequence whose tokens are tok[0..n), or PW_NONE. */
static uint32_t seq_find(const pw_grammar *g, uint64_t h, const uint32_t *tok, size_t n)
{
	for (uint32_t i = g->seq_table.heads[h & g->seq_table.mask]; i != PW_NONE;
	     i = g->seqs[i].next) {
		const pw_sequence *s = &g->seqs[i];
		if (s->hash == h && s->ntokens == n && same_tokens(s->tokens, tok, n))
			return i;
	}
	return PW_NONE;
}

/* Prepares the vectors of sequence `id` (tokens set by the caller). */
static void seq_init_vectors(pw_sequence *s, uint32_t id)
{
	s->dur.duration = s->excl.duration = 1;
	s->dur.file = s->excl.file = s->ts.file = PW_SEQUENCE_FILE;
	s->dur.which = PW_SEQ_DUR, s->excl.which = PW_SEQ_EXCL, s->ts.which = PW_SEQ_TS;
	s->dur.owner = s->excl.owner = s->ts.owner = id;
}

/*
 * Reader frames. Pallas 0.20's reader enters every sequence and loop in a
 * frame of a fixed call stack (100 frames, the root's included). A token's
 * height is the frames it takes: 0 for an event, 1 + its tallest token's
 * for a sequence, 1 + its body's for a loop. Every token of depth d's list
 * keeps d + height <= WEFT_PALLAS_MAX_NESTING: events do (no more blocks
 * open), a closed block then does at depth d - 1, and a repetition that
 * would not is left unrolled; the root's token (or the sequence that
 * wraps the depth-0 list, grammar_finish) then needs at most 99 frames
 * below the root.
 */
static inline uint32_t token_height(const pw_grammar *g, uint32_t tok)
{
	switch (TYPE(tok)) {
	case WEFT_PALLAS_TOKEN_SEQUENCE: return g->seqs[IDX(tok)].height;
	case WEFT_PALLAS_TOKEN_LOOP: return g->loops[IDX(tok)].height;
	default: return 0;
	}
}

/* The height of a sequence of tok[0..n). */
static uint32_t tokens_height(const pw_grammar *g, const uint32_t *tok, size_t n)
{
	uint32_t h = 0;
	for (size_t i = 0; i < n; i++) {
		uint32_t k = token_height(g, tok[i]);
		h = k > h ? k : h;
	}
	return h + 1;
}

/* Whether a token of this height may sit in depth d's list. */
static inline int fits(uint32_t d, uint32_t height)
{
	return (uint64_t)d + height <= WEFT_PALLAS_MAX_NESTING;
}

/*
 * A new sequence of tok[0..n): a block when it starts with an Enter event
 * (Pallas's rule: other block starts give "loop" sequences too).
 */
static int seq_create(pw_thread *t, const uint32_t *tok, size_t n, uint64_t h, uint32_t *out)
{
	pw_grammar *g = &t->g;
	if (n > UINT32_MAX)
		return weft__error(WEFT_EUNSUPPORTED, t->dir, WEFT_NO_OFFSET,
				   "a sequence of more than 2^32 tokens");
	int rc = reserve_one(t, (void **)&g->seqs, g->nseqs, &g->seqs_cap, sizeof *g->seqs);
	if (rc < 0)
		return rc;
	pw_sequence *s = &g->seqs[g->nseqs];
	memset(s, 0, sizeof *s);
	seq_init_vectors(s, g->nseqs);
	if ((s->tokens = weft__pw_alloc(t, n * sizeof *tok)) == NULL)
		return WEFT_ENOMEM;
	memcpy(s->tokens, tok, n * sizeof *tok);
	s->ntokens = (uint32_t)n;
	s->height = tokens_height(g, tok, n);
	s->hash = h;
	int block = TYPE(tok[0]) == WEFT_PALLAS_TOKEN_EVENT &&
		    g->events[IDX(tok[0])].record == WEFT_PALLAS_REC_ENTER;
	s->type = block ? WEFT_PALLAS_SEQUENCE_BLOCK : WEFT_PALLAS_SEQUENCE_LOOP;
	uint32_t id = g->nseqs++;
	*out = id;
	if ((rc = table_insert(t, &g->seq_table, &SEQ_KIND, id)) < 0)
		return rc;
	return lengths_add(t, ends_of(g, tok[n - 1]), (uint32_t)n);
}

/* Pallas's getOrCreateSequenceFromArray: one sequence token is itself. */
static int seq_get_or_create(pw_thread *t, const uint32_t *tok, size_t n, uint64_t h,
			     uint32_t *out)
{
	if (n == 1 && TYPE(tok[0]) == WEFT_PALLAS_TOKEN_SEQUENCE) {
		*out = IDX(tok[0]);
		return 0;
	}
	*out = seq_find(&t->g, h, tok, n);
	return *out != PW_NONE ? 0 : seq_create(t, tok, n, h, out);
}

/* A new loop of `seq_token`, 1 iteration, 1 occurrence (not in the merge table yet). */
static int loop_create(pw_thread *t, uint32_t seq_token, uint32_t *out)
{
	pw_grammar *g = &t->g;
	int rc = reserve_one(t, (void **)&g->loops, g->nloops, &g->loops_cap, sizeof *g->loops);
	if (rc < 0)
		return rc;
	pw_loop *l = &g->loops[g->nloops];
	memset(l, 0, sizeof *l);
	l->repeated = seq_token;
	l->height = 1 + token_height(g, seq_token);
	l->iterations = 1;
	l->occurrences = 1;
	*out = g->nloops++;
	return 0;
}

/* Unchains loop `id`, whose key hashes to `h`, from the merge table. */
static inline void loop_unlink(pw_grammar *g, uint32_t id, uint64_t h)
{
	uint32_t *link = &g->loop_table.heads[h & g->loop_table.mask];
	while (*link != PW_NONE) {
		if (*link == id) {
			*link = g->loops[id].next;
			g->loop_table.count--;
			return;
		}
		link = &g->loops[*link].next;
	}
}

/* Chains loop `id`, whose key hashes to `h`, into the merge table. */
static inline int loop_link(pw_thread *t, uint32_t id, uint64_t h)
{
	pw_grammar *g = &t->g;
	if (g->loop_table.count >= g->loop_table.mask + 1)
		return table_insert(t, &g->loop_table, &LOOP_KIND, id); /* grows it */
	uint32_t *head = &g->loop_table.heads[h & g->loop_table.mask];
	g->loops[id].next = *head;
	*head = id;
	g->loop_table.count++;
	return 0;
}

/* One more iteration; the loop is re-keyed in the merge table. */
static int loop_increment(pw_thread *t, uint32_t id)
{
	pw_grammar *g = &t->g;
	pw_loop *l = &g->loops[id];
	if (l->in_table)
		loop_unlink(g, id, loop_key_hash(l->repeated, l->iterations));
	if (l->iterations == UINT32_MAX)
		return weft__error(WEFT_EUNSUPPORTED, t->dir, WEFT_NO_OFFSET,
				   "a loop of more than 2^32 - 1 iterations");
	l->iterations++;
	l->in_table = 1;
	return loop_link(t, id, loop_key_hash(l->repeated, l->iterations));
}

/*
 * Pallas's squashLoop: when another live loop repeats the same body the
 * same number of times, it gains an occurrence and `id` dies (its slot
 * stays, dead, as in Pallas 0.20). Returns the loop that stays.
 */
static uint32_t loop_squash(pw_thread *t, uint32_t id)
{
	pw_grammar *g = &t->g;
	pw_loop *l = &g->loops[id];
	uint64_t h = loop_key_hash(l->repeated, l->iterations);
	for (uint32_t i = g->loop_table.heads[h & g->loop_table.mask]; i != PW_NONE;
	     i = g->loops[i].next) {
		pw_loop *o = &g->loops[i];
		if (i == id || o->repeated != l->repeated || o->iterations != l->iterations)
			continue;
		o->occurrences++;
		loop_unlink(g, id, h);
		l->in_table = 0;
		l->dead = 1;
		l->repeated = WEFT_PALLAS_TOKEN_NONE;
		l->iterations = 0;
		l->occurrences = 0;
		return i;
	}
	return id;
}

/* Pallas's unsquashLoop: a shared loop about to grow is copied first. */
static int loop_unsquash(pw_thread *t, uint32_t id, uint32_t *out)
{
	int rc = loop_create(t, t->g.loops[id].repeated, out);
	if (rc < 0)
		return rc;
	pw_grammar *g = &t->g;
	g->loops[id].occurrences--;
	g->loops[*out].iterations = g->loops[id].iterations;
	return 0;
}

/* ---- The search --------------------------------------------------------------------------------- */

/* Lengths up to max_loop_length are all tried, as Pallas does. */
static inline uint64_t near_window(const pw_thread *t)
{
	return t->g.near;
}

/* How many matches beyond the near window are tried (0: none, as Pallas). */
static inline unsigned far_candidates(const pw_thread *t)
{
	return t->g.far;
}

/* Sets the search limits from the options once (thread writer creation). */
static void search_limits(pw_thread *t)
{
	const weft_pallas_write_options *o = t->opts;
	t->g.near = o->max_loop_length;
	t->g.far = o->loop_finding == WEFT_PALLAS_WRITE_LOOPS_BASIC || o->long_patterns ?
		   FAR_CANDIDATES : 0;
	t->g.loops_on = o->loop_finding != WEFT_PALLAS_WRITE_LOOPS_NONE;
}

/* What a sequence occurrence adds to its parent's block time. */
static inline uint64_t contribution(int32_t type, uint64_t dur, uint64_t excl)
{
	return type == WEFT_PALLAS_SEQUENCE_BLOCK ? dur : excl;
}

/* Duration and exclusive (or block) time of tokens [a, b) of a list. */
static void range_times(const pw_level *l, size_t a, size_t b, int32_t type,
			uint64_t *dur, uint64_t *excl)
{
	uint64_t block = l->csum[b] - l->csum[a];
	*dur = l->end[b - 1] - l->start[a];
	*excl = type == WEFT_PALLAS_SEQUENCE_BLOCK ? *dur - block : block;
}

/* Records one occurrence of sequence `sid`: duration, exclusive time, start. */
static inline int seq_add_occurrence(pw_thread *t, uint32_t sid, uint64_t dur, uint64_t excl,
			      uint64_t start)
{
	pw_sequence *s = &t->g.seqs[sid];
	int rc = weft__pw_vector_add(t, &s->dur, dur);
	if (rc == 0)
		rc = weft__pw_vector_add(t, &s->excl, excl);
	if (rc == 0)
		rc = weft__pw_vector_add(t, &s->ts, start);
	return rc;
}

/* Replaces the last `len` tokens of depth d by sequence `sid` (findSequence). */
static int replace_suffix(pw_thread *t, uint32_t d, uint32_t sid, size_t len)
{
	pw_level *l = &t->g.levels[d];
	size_t n = l->n, a = n - len;
	int32_t type = t->g.seqs[sid].type;
	uint64_t dur, excl, start = l->start[a], end = l->end[n - 1];
	range_times(l, a, n, type, &dur, &excl);
	int rc = seq_add_occurrence(t, sid, dur, excl, start);
	if (rc < 0)
		return rc;
	level_truncate(t, d, a);
	return store_token(t, d, TOK(WEFT_PALLAS_TOKEN_SEQUENCE, sid), start, end,
			   contribution(type, dur, excl));
}

/* Pallas's findSequence: the shortest suffix equal to a known sequence. */
static int find_sequence(pw_thread *t, uint32_t d)
{
	pw_grammar *g = &t->g;
	pw_level *l = &g->levels[d];
	size_t n = l->n;
	if (n < 2)
		return 0;
	const pw_lengths *ends = ends_of(g, l->tok[n - 1]);
	uint64_t near = near_window(t);
	unsigned far = far_candidates(t);
	for (uint32_t i = 0; i < ends->n; i++) {
		size_t len = ends->v[i];
		if (len > n - 1 || (len > near && far-- == 0))
			break;
		uint64_t h = range_hash(g, l, n - len, n);
		uint32_t sid = seq_find(g, h, l->tok + n - len, len);
		if (sid != PW_NONE && fits(d, g->seqs[sid].height))
			return replace_suffix(t, d, sid, len);
	}
	return 0;
}

/*
 * Pallas's checkLoopBefore: the token before the last is a loop whose
 * body is the last token, which becomes one more iteration.
 */
static int check_loop_before(pw_thread *t, uint32_t d)
{
	pw_grammar *g = &t->g;
	pw_level *l = &g->levels[d];
	size_t n = l->n;
	uint32_t id = IDX(l->tok[n - 2]);
	if (g->loops[id].repeated != l->tok[n - 1])
		return 0;
	int rc;
	if (g->loops[id].occurrences > 1 && (rc = loop_unsquash(t, id, &id)) < 0)
		return rc;
	if ((rc = loop_increment(t, id)) < 0)
		return rc;
	uint32_t kept = loop_squash(t, id);
	uint64_t start = l->start[n - 2], end = l->end[n - 1];
	uint64_t contrib = l->csum[n] - l->csum[n - 2];
	level_truncate(t, d, n - 2);
	if (kept != id)
		return store_token(t, d, TOK(WEFT_PALLAS_TOKEN_LOOP, kept), start, end, contrib);
	return level_push(t, d, TOK(WEFT_PALLAS_TOKEN_LOOP, id), start, end, contrib);
}

/*
 * Pallas's replaceTokensInLoop: tokens [first, first + len) repeated
 * right after become a loop of 2 iterations of their sequence.
 */
static int replace_by_loop(pw_thread *t, uint32_t d, size_t len, size_t first)
{
	pw_grammar *g = &t->g;
	pw_level *l = &g->levels[d];
	size_t n = l->n, second = first + len;
	int existed = len == 1 && TYPE(l->tok[first]) == WEFT_PALLAS_TOKEN_SEQUENCE;
	uint32_t sid, id;
	int rc = seq_get_or_create(t, l->tok + first, len, range_hash(g, l, first, second), &sid);
	if (rc < 0 || (rc = loop_create(t, TOK(WEFT_PALLAS_TOKEN_SEQUENCE, sid), &id)) < 0)
		return rc;
	uint64_t contrib = l->csum[n] - l->csum[first];
	if (!existed) {
		int32_t type = g->seqs[sid].type;
		uint64_t d1, e1, d2, e2;
		range_times(l, first, second, type, &d1, &e1);
		range_times(l, second, n, type, &d2, &e2);
		pw_sequence *s = &g->seqs[sid];
		if ((rc = weft__pw_vector_add(t, &s->dur, d1)) < 0 ||
		    (rc = weft__pw_vector_add(t, &s->excl, e1)) < 0 ||
		    (rc = weft__pw_vector_add(t, &s->dur, d2)) < 0 ||
		    (rc = weft__pw_vector_add(t, &s->excl, e2)) < 0 ||
		    (rc = weft__pw_vector_add(t, &s->ts, l->start[first])) < 0 ||
		    (rc = weft__pw_vector_add(t, &s->ts, l->start[second])) < 0)
			return rc;
		contrib = contribution(type, d1, e1) + contribution(type, d2, e2);
	}
	uint64_t start = l->start[first], end = l->end[n - 1];
	level_truncate(t, d, first);
	if ((rc = loop_increment(t, id)) < 0)
		return rc;
	uint32_t kept = loop_squash(t, id);
	if (kept != id)
		return store_token(t, d, TOK(WEFT_PALLAS_TOKEN_LOOP, kept), start, end, contrib);
	return level_push(t, d, TOK(WEFT_PALLAS_TOKEN_LOOP, id), start, end, contrib);
}

/* Whether tokens [n - 2len, n - len) and [n - len, n) are equal. */
static int repeats(const pw_grammar *g, const pw_level *l, size_t len)
{
	size_t n = l->n;
	return range_hash(g, l, n - len, n) == range_hash(g, l, n - 2 * len, n - len) &&
	       same_tokens(l->tok + n - 2 * len, l->tok + n - len, len);
}

/*
 * Whether a loop of the last `len` tokens of depth d's list fits the
 * reader's frames (replace_by_loop). Out of line: repetitions are rare
 * next to the tokens searched.
 */
static __attribute__((noinline)) int loop_fits(const pw_grammar *g, uint32_t d, size_t len)
{
	const pw_level *l = &g->levels[d];
	const uint32_t *tok = l->tok + l->n - len;
	if (len == 1 && TYPE(tok[0]) == WEFT_PALLAS_TOKEN_SEQUENCE)
		return fits(d, 1 + token_height(g, tok[0]));
	return fits(d, 1 + tokens_height(g, tok, len));
}

/*
 * Pallas's findLoopBasic: the shortest L such that the last L tokens
 * repeat the L before them. Such an L puts the last token's previous
 * occurrence L places back: only those positions are tried.
 */
/* (Inlined into the search: it runs after every token of most lists.) */
static inline __attribute__((always_inline)) int find_loop_basic(pw_thread *t, uint32_t d)
{
	pw_grammar *g = &t->g;
	pw_level *l = &g->levels[d];
	if (l->n <= 1)
		return 0;
	if (TYPE(l->tok[l->n - 2]) == WEFT_PALLAS_TOKEN_LOOP) {
		int rc = check_loop_before(t, d);
		if (rc < 0)
			return rc;
		l = &g->levels[d];
	}
	size_t n = l->n;
	if (n <= 1)
		return 0;
	uint64_t near = near_window(t);
	unsigned far = far_candidates(t);
	for (uint32_t p = previous_same(l, n - 1); p != PW_NONE; p = previous_same(l, p)) {
		size_t len = n - 1 - p;
		if (2 * len > n || (len >= near && far-- == 0))
			break;
		if (repeats(g, l, len) && loop_fits(g, d, len))
			return replace_by_loop(t, d, len, n - 2 * len);
	}
	return 0;
}

/* Pallas's findLoop: first known sequences, then new loops. */
static int find_loop(pw_thread *t, uint32_t d)
{
	int rc = find_sequence(t, d);
	return rc < 0 ? rc : find_loop_basic(t, d);
}

/* The search after a token was stored at depth d (bounded recursion). */
static int search_after_push(pw_thread *t, uint32_t d)
{
	pw_grammar *g = &t->g;
	if (g->recursion >= MAX_RECURSION)
		return 0;
	g->recursion++;
	int rc = find_loop(t, d);
	g->recursion--;
	return rc;
}

/*
 * Pallas's storeToken: append, then search. Inline: a list of one token
 * (a block just opened) has nothing to search.
 */
static inline int store_token(pw_thread *t, uint32_t d, uint32_t tok, uint64_t start,
			      uint64_t end, uint64_t contrib)
{
	int rc = level_push(t, d, tok, start, end, contrib);
	if (rc < 0 || !t->g.loops_on || t->g.levels[d].n < 2)
		return rc;
	return search_after_push(t, d);
}

/*
 * Pallas's recordExitFunction for the block of depth d whose tokens are
 * tok[0..n) (hash h, duration dur, `block` the time its tokens add): its
 * sequence (the last one its start event closed, or one found or
 * created) gains an occurrence and becomes a token of depth d - 1.
 */
static int close_tokens(pw_thread *t, uint32_t d, const uint32_t *tok, size_t n, uint64_t h,
			uint64_t dur, uint64_t block)
{
	pw_grammar *g = &t->g;
	uint32_t sid = PW_NONE;
	int rc = 0;
	pw_event *first = TYPE(tok[0]) == WEFT_PALLAS_TOKEN_EVENT ? &g->events[IDX(tok[0])] : NULL;
	if (first != NULL && first->last_block != PW_NONE) { /* most blocks repeat the last one */
		const pw_sequence *s = &g->seqs[first->last_block];
		if (s->ntokens == n && same_tokens(s->tokens, tok, n))
			sid = first->last_block;
	}
	if (sid == PW_NONE && (rc = seq_get_or_create(t, tok, n, h, &sid)) < 0)
		return rc;
	if (first != NULL)
		first->last_block = sid;
	int32_t type = g->seqs[sid].type;
	uint64_t excl = type == WEFT_PALLAS_SEQUENCE_BLOCK ? dur - block : block;
	uint64_t start = g->levels[d].start_ts;
	if ((rc = seq_add_occurrence(t, sid, dur, excl, start)) < 0)
		return rc;
	level_truncate(t, d, 0);
	g->depth = d - 1;
	return store_token(t, d - 1, TOK(WEFT_PALLAS_TOKEN_SEQUENCE, sid), start,
			   start + dur, contribution(type, dur, excl));
}

/* Closes the block of the current depth: its list becomes a sequence. */
static int close_block(pw_thread *t)
{
	uint32_t d = t->g.depth;
	const pw_level *l = &t->g.levels[d];
	size_t n = l->n;
	return close_tokens(t, d, l->tok, n, l->h[n], l->end[n - 1] - l->start[0],
			    l->csum[n] - l->csum[0]);
}

/*
 * Whether block end `tok` closes a leaf block (its list holds the start
 * event alone) where storing it could match nothing: no sequence of one
 * token ends with it and it is not the start event again. Storing and
 * searching it would then change nothing, and close_leaf skips both.
 */
static inline int leaf_end(const pw_grammar *g, uint32_t tok)
{
	const pw_level *l = &g->levels[g->depth];
	if (l->n != 1 || TYPE(l->tok[0]) != WEFT_PALLAS_TOKEN_EVENT || l->tok[0] == tok)
		return 0;
	const pw_lengths *ends = &g->events[IDX(tok)].ends;
	return ends->n == 0 || ends->v[0] > 1;
}

/* Closes a leaf block [start, tok] (leaf_end holds) at time ts, without storing tok. */
static int close_leaf(pw_thread *t, uint32_t tok, uint64_t ts)
{
	uint32_t d = t->g.depth;
	const pw_level *l = &t->g.levels[d];
	uint32_t pair[2] = { l->tok[0], tok };
	uint64_t h = l->h[1] * HASH_MUL + mix_token(tok);
	return close_tokens(t, d, pair, 2, h, ts - l->start[0], l->csum[1] - l->csum[0]);
}

/* ---- Grammar life cycle ----------------------------------------------------------------------- */

/* An empty grammar: tables, depth 0, and the root sequence 0. */
int weft__pw_grammar_init(pw_thread *t)
{
	pw_grammar *g = &t->g;
	memset(g, 0, sizeof *g);
	search_limits(t);
	size_t cache = ((size_t)1 << PW_EVCACHE_BITS) * sizeof *g->evcache;
	if ((g->evcache = weft__pw_alloc(t, cache)) == NULL)
		return WEFT_ENOMEM;
	memset(g->evcache, 0, cache);
	int rc = table_alloc(t, &g->event_table, TABLE_MIN);
	if (rc == 0)
		rc = table_alloc(t, &g->seq_table, TABLE_MIN);
	if (rc == 0)
		rc = table_alloc(t, &g->loop_table, TABLE_MIN);
	if (rc == 0)
		rc = lastpos_grow(t);
	if (rc == 0)
		rc = level_enter(t, 0);
	if (rc == 0)
		rc = reserve_one(t, (void **)&g->seqs, 0, &g->seqs_cap, sizeof *g->seqs);
	if (rc < 0)
		return rc;
	/* Sequence 0 is the root: its tokens are the depth-0 list at close. */
	memset(&g->seqs[0], 0, sizeof g->seqs[0]);
	seq_init_vectors(&g->seqs[0], 0);
	g->seqs[0].type = WEFT_PALLAS_SEQUENCE_BLOCK;
	g->nseqs = 1;
	return 0;
}

/* Frees the grammar and every vector it holds (after close, or on abandon). */
void weft__pw_grammar_free(pw_thread *t)
{
	pw_grammar *g = &t->g;
	for (uint32_t i = 0; i < g->nevents; i++) {
		pw_event *e = &g->events[i];
		weft__pw_free(t, e->payload, e->size - (size_t)WEFT_PALLAS_EVENT_HEADER);
		weft__pw_free(t, e->attrs.buf, e->attrs.cap);
		weft__pw_free(t, e->attrs.chunks, (size_t)e->attrs.chunks_cap * 8);
		weft__pw_vector_free(t, &e->ts);
		lengths_free(t, &e->ends);
	}
	for (uint32_t i = 0; i < g->nseqs; i++) {
		pw_sequence *s = &g->seqs[i];
		weft__pw_free(t, s->tokens, (size_t)s->ntokens * sizeof *s->tokens);
		weft__pw_vector_free(t, &s->dur);
		weft__pw_vector_free(t, &s->excl);
		weft__pw_vector_free(t, &s->ts);
		lengths_free(t, &s->ends);
	}
	for (uint32_t i = 0; i < g->nloops; i++)
		lengths_free(t, &g->loops[i].ends);
	for (uint32_t i = 0; i < g->nlevels; i++)
		if (g->levels[i].cap)
			weft__pw_free(t, g->levels[i].start, level_block_size(g->levels[i].cap));
	weft__pw_free(t, g->events, (size_t)g->events_cap * sizeof *g->events);
	weft__pw_free(t, g->seqs, (size_t)g->seqs_cap * sizeof *g->seqs);
	weft__pw_free(t, g->loops, (size_t)g->loops_cap * sizeof *g->loops);
	weft__pw_free(t, g->levels, (size_t)g->nlevels * sizeof *g->levels);
	weft__pw_free(t, g->pow, g->pow_cap * sizeof *g->pow);
	weft__pw_free(t, g->lastpos_keys, g->lastpos_cap * sizeof *g->lastpos_keys);
	weft__pw_free(t, g->lastpos_vals, g->lastpos_cap * sizeof *g->lastpos_vals);
	table_release(t, &g->event_table);
	table_release(t, &g->seq_table);
	table_release(t, &g->loop_table);
	weft__pw_free(t, g->evcache, ((size_t)1 << PW_EVCACHE_BITS) * sizeof *g->evcache);
	memset(g, 0, sizeof *g);
}

/*
 * Pallas 0.20's reader enters the root's first token at once (an event
 * there aborts it: "Invalid parameter to getToken"), and its merged reader
 * (pallas_print) takes a thread that comes back to the root for ended: a
 * root of several tokens is read to the end of its first. So the depth-0
 * list, when it is not one sequence or loop, becomes one sequence (by
 * Pallas's rule a "loop" sequence, unless it starts with an Enter), the
 * root's only token. Pallas's own writer would leave such a root.
 */
static int wrap_root(pw_thread *t)
{
	pw_grammar *g = &t->g;
	pw_level *l = &g->levels[0];
	size_t n = l->n;
	if (n == 1 && TYPE(l->tok[0]) != WEFT_PALLAS_TOKEN_EVENT)
		return 0;
	uint32_t sid;
	int rc = seq_get_or_create(t, l->tok, n, l->h[n], &sid);
	if (rc < 0)
		return rc;
	int32_t type = g->seqs[sid].type;
	uint64_t dur, excl, start = l->start[0], end = l->end[n - 1];
	range_times(l, 0, n, type, &dur, &excl);
	if ((rc = seq_add_occurrence(t, sid, dur, excl, start)) < 0)
		return rc;
	level_truncate(t, 0, 0);
	return level_push(t, 0, TOK(WEFT_PALLAS_TOKEN_SEQUENCE, sid), start, end,
			  contribution(type, dur, excl));
}

/*
 * Pallas's threadClose: blocks still open are closed at their last event,
 * then the depth-0 list (wrapped, see wrap_root) becomes the root
 * sequence, whose one occurrence spans the first to the last timestamp.
 */
int weft__pw_grammar_finish(pw_thread *t)
{
	pw_grammar *g = &t->g;
	int rc;
	while (g->depth > 0)
		if ((rc = close_block(t)) < 0)
			return rc;
	pw_level *l = &g->levels[0];
	if (l->n == 0)
		return 0; /* an empty thread: a root of 0 tokens, stored as a dead slot */
	if ((rc = wrap_root(t)) < 0)
		return rc;
	pw_sequence *root = &g->seqs[0];
	if ((root->tokens = weft__pw_alloc(t, l->n * sizeof *root->tokens)) == NULL)
		return WEFT_ENOMEM;
	memcpy(root->tokens, l->tok, l->n * sizeof *root->tokens);
	root->ntokens = (uint32_t)l->n;
	return seq_add_occurrence(t, 0, t->last_ts - t->first_ts, 0, t->first_ts);
}

/* ---- Recording ------------------------------------------------------------------------------------- */

/* The timestamp to store: `ts`, or the clock for WEFT_PALLAS_TIME_NOW. */
static uint64_t resolve_time(pw_thread *t, uint64_t ts)
{
	if (ts != WEFT_PALLAS_TIME_NOW)
		return ts;
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	uint64_t ns = (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
	if (!t->clock_started) {
		t->clock_origin = ns;
		t->clock_started = 1;
	}
	return ns - t->clock_origin;
}

/*
 * Room for `size` more bytes of attribute lists in `a->buf`: the buffer
 * doubles up to PW_ATTR_CHUNK bytes; past that, what it holds goes to
 * the scratch file first, so that an event keeps at most PW_ATTR_CHUNK
 * bytes of attributes in memory however many times it occurs.
 */
static int attrs_make_room(pw_thread *t, pw_attrs *a, uint32_t size)
{
	int rc;
	if (a->len + size > PW_ATTR_CHUNK && (rc = weft__pw_attrs_spill(t, a)) < 0)
		return rc;
	if (a->len + size <= a->cap)
		return 0;
	uint32_t cap = a->cap ? a->cap : 256;
	while (cap < a->len + size)
		cap *= 2;
	cap = cap < PW_ATTR_CHUNK ? cap : PW_ATTR_CHUNK;
	uint8_t *p = weft__pw_realloc(t, a->buf, a->cap, cap);
	if (p == NULL)
		return WEFT_ENOMEM;
	a->buf = p;
	a->cap = cap;
	return 0;
}

/* Appends an occurrence's attribute list (Pallas's layout) to its event. */
static int store_attrs(pw_thread *t, pw_event *e, const weft_pallas_attrs *l,
		       uint64_t occurrence)
{
	pw_attrs *a = &e->attrs;
	int rc = a->len + l->size > a->cap ? attrs_make_room(t, a, l->size) : 0;
	if (rc < 0)
		return rc;
	uint8_t *out = a->buf + a->len;
	int32_t index = (int32_t)(uint32_t)occurrence; /* Pallas's `int index` */
	memcpy(out, &index, 4);
	memcpy(out + 4, &l->size, 2);
	out[6] = l->count;
	memcpy(out + 7, l->bytes + 7, l->size - 7u);
	a->len += l->size;
	a->total += l->size;
	return 0;
}

/* The refusal of check_nesting (out of line: it never happens in most traces). */
static __attribute__((noinline, cold)) int nesting_refused(const pw_thread *t)
{
	return weft__error(WEFT_EUNSUPPORTED, t->dir, WEFT_NO_OFFSET,
			   "a block start with %d blocks open: Pallas 0.20 reads at most "
			   "%d nested blocks (record refused)", WEFT_PALLAS_MAX_NESTING,
			   WEFT_PALLAS_MAX_NESTING);
}

/*
 * A block start with WEFT_PALLAS_MAX_NESTING blocks open is refused (not a
 * failure of the thread writer): Pallas 0.20 could not read it.
 */
static inline int check_nesting(const pw_thread *t, int role)
{
	return role == WEFT_PALLAS_ROLE_BLOCK_START && t->g.depth >= WEFT_PALLAS_MAX_NESTING
		       ? nesting_refused(t) : 0;
}

/* Why a record is refused before anything is changed, or 0. */
static int check_record(const pw_thread *t, const weft_pallas_attrs *a, int32_t record,
			int role, const void *payload, size_t size)
{
	if (t == NULL)
		return weft__error(WEFT_EINVAL, NULL, WEFT_NO_OFFSET, "record on a NULL thread writer");
	if (t->state == PW_CLOSED)
		return weft__error(WEFT_EINVAL, t->dir, WEFT_NO_OFFSET,
				   "record after the thread writer was closed");
	if (t->state == PW_FAILED)
		return weft__error(t->error, t->dir, WEFT_NO_OFFSET,
				   "record refused: an earlier record failed (%s)",
				   weft_strerror(t->error));
	if (record <= WEFT_PALLAS_REC_INVALID || record >= WEFT_PALLAS_REC_COUNT)
		return weft__error(WEFT_EINVAL, t->dir, WEFT_NO_OFFSET,
				   "record kind %d is not one of Pallas's (1 to %d)",
				   (int)record, WEFT_PALLAS_REC_COUNT - 1);
	if (role < WEFT_PALLAS_ROLE_SINGLE || role > WEFT_PALLAS_ROLE_BLOCK_END)
		return weft__error(WEFT_EINVAL, t->dir, WEFT_NO_OFFSET, "record role %d unknown", role);
	if (size > WEFT_PALLAS_EVENT_MAX_PAYLOAD || (size > 0 && payload == NULL))
		return weft__error(WEFT_EINVAL, t->dir, WEFT_NO_OFFSET,
				   "record payload of %zu bytes (at most %d, not NULL)", size,
				   WEFT_PALLAS_EVENT_MAX_PAYLOAD);
	if (a != NULL && (a->refused || a->size < 7 || a->size > WEFT_PALLAS_ATTRS_BYTES))
		return weft__error(WEFT_EINVAL, t->dir, WEFT_NO_OFFSET,
				   "record with an attribute list that was refused or not initialised");
	return check_nesting(t, role);
}

/* Pallas's storeEvent: the token of event `id` at its depth, opening or closing a block. */
static int record_occurrence(pw_thread *t, const weft_pallas_attrs *a, uint64_t ts,
			     uint32_t id, int role)
{
	pw_grammar *g = &t->g;
	int rc;
	if (role == WEFT_PALLAS_ROLE_BLOCK_END && g->depth == 0)
		role = WEFT_PALLAS_ROLE_SINGLE; /* nothing to close */
	if (role == WEFT_PALLAS_ROLE_BLOCK_START) {
		if (g->depth + 1 >= g->nlevels && (rc = level_enter(t, g->depth + 1)) < 0)
			return rc;
		g->depth++;
		g->levels[g->depth].start_ts = ts;
	}
	pw_event *e = &g->events[id];
	uint64_t occurrence = e->occurrences++;
	if ((rc = weft__pw_vector_add(t, &e->ts, ts)) < 0)
		return rc;
	if (!t->has_ts)
		t->first_ts = ts, t->has_ts = 1;
	t->last_ts = ts;
	t->events++;
	if (a != NULL && (rc = store_attrs(t, e, a, occurrence)) < 0)
		return rc;
	uint32_t tok = TOK(WEFT_PALLAS_TOKEN_EVENT, id);
	if (role == WEFT_PALLAS_ROLE_BLOCK_END && leaf_end(g, tok))
		return close_leaf(t, tok, ts);
	if ((rc = store_token(t, g->depth, tok, ts, ts, 0)) < 0)
		return rc;
	return role == WEFT_PALLAS_ROLE_BLOCK_END ? close_block(t) : 0;
}

/* A record of any kind: its event found (or created) by its bytes. */
static int record_event(pw_thread *t, const weft_pallas_attrs *a, uint64_t ts,
			int32_t record, int role, const void *payload, size_t size)
{
	uint32_t id;
	ts = resolve_time(t, ts);
	int rc = event_id(t, record, payload, (uint8_t)size, &id);
	return rc < 0 ? rc : record_occurrence(t, a, ts, id, role);
}

/*
 * The id of event (record, one u32 payload), remembered in a small
 * direct-mapped cache: Enter, Leave and most records carry one u32, and
 * the cache spares hashing and comparing their bytes.
 */
static inline int event_id_u32(pw_thread *t, int32_t record, uint32_t v, uint32_t *out)
{
	pw_grammar *g = &t->g;
	uint64_t key = (uint64_t)(uint32_t)record << 32 | v; /* record >= 1: never 0 */
	pw_evslot *slot = &g->evcache[(key * HASH_MUL) >> (64 - PW_EVCACHE_BITS)];
	if (slot->key == key) {
		*out = slot->id;
		return 0;
	}
	uint8_t payload[4];
	memcpy(payload, &v, 4);
	int rc = event_id(t, record, payload, 4, out);
	if (rc == 0)
		slot->key = key, slot->id = *out;
	return rc;
}

/*
 * A record whose payload is one u32, without attributes, on a thread
 * writer that records: the common case (Enter, Leave), checked and
 * looked up with the least work, inlined into the records that use it
 * (their cost is measured in bench_pallas_write). Anything else takes
 * the general path.
 */
static inline __attribute__((always_inline)) int
record_u32_fast(pw_thread *t, uint64_t ts, int32_t record, int role, uint32_t v)
{
	uint32_t id;
	int rc = check_nesting(t, role);
	if (rc < 0)
		return rc;
	ts = resolve_time(t, ts);
	rc = event_id_u32(t, record, v, &id);
	if (rc == 0)
		rc = record_occurrence(t, NULL, ts, id, role);
	return rc < 0 ? weft__pw_fail(t, rc) : 0;
}

/* A one-u32 record: the fast path when it applies, else the general one. */
static inline __attribute__((always_inline)) int
record_u32(weft_pallas_thread *t, const weft_pallas_attrs *a, uint64_t ts, int32_t record,
	   int role, uint32_t v)
{
	if (t != NULL && a == NULL && t->state == PW_OPEN)
		return record_u32_fast(t, ts, record, role, v);
	uint8_t payload[4];
	memcpy(payload, &v, 4); /* little-endian hosts (pallas_writer_internal.h checks) */
	return weft_pallas_record_raw(t, a, ts, record, role, payload, 4);
}

int weft__pw_record_u32(weft_pallas_thread *t, const weft_pallas_attrs *a, uint64_t ts,
			int32_t record, int role, uint32_t v)
{
	return record_u32(t, a, ts, record, role, v);
}

/* The most frequent records, here so that the fast path inlines into them. */
int weft_pallas_record_enter(weft_pallas_thread *t, const weft_pallas_attrs *a,
			     uint64_t ts, uint32_t region)
{
	return record_u32(t, a, ts, WEFT_PALLAS_REC_ENTER, WEFT_PALLAS_ROLE_BLOCK_START, region);
}

int weft_pallas_record_leave(weft_pallas_thread *t, const weft_pallas_attrs *a,
			     uint64_t ts, uint32_t region)
{
	return record_u32(t, a, ts, WEFT_PALLAS_REC_LEAVE, WEFT_PALLAS_ROLE_BLOCK_END, region);
}

int weft_pallas_record_generic(weft_pallas_thread *t, const weft_pallas_attrs *a,
			       uint64_t ts, uint32_t name)
{
	return record_u32(t, a, ts, WEFT_PALLAS_REC_GENERIC, WEFT_PALLAS_ROLE_SINGLE, name);
}

int weft_pallas_record_raw(weft_pallas_thread *t, const weft_pallas_attrs *attrs,
			   uint64_t ts, int32_t record, int role, const void *payload,
			   size_t size)
{
	int rc = check_record(t, attrs, record, role, payload, size);
	if (rc < 0)
		return rc;
	rc = record_event(t, attrs, ts, record, role, payload, size);
	return rc < 0 ? weft__pw_fail(t, rc) : 0;
}
