/* SPDX-License-Identifier: MIT */
/*
 * outputs/chrome/chrome_fixup.c - the same-start fix-up of Heph's
 * converter, for `weft convert --heph-compat`, exact but without its
 * one-microsecond walk.
 *
 * Heph's rule, per track (pid, tid): a map ts -> dur of every event
 * written so far; while the ts of a new event is taken, it moves: up
 * (ts + 1, dur - 1) when the event there is longer, else down (ts - 1,
 * dur + 1); then it is recorded. Walking one step at a time costs as many
 * steps as there are taken microseconds on the way: on a track with an
 * event in most microseconds, every collision walks to the end of the
 * run of taken slots and the conversion is quadratic.
 *
 * The walk is made of a few straight runs. With key(t) = t + dur(t) and
 * C = ts + dur of the moving event (which a move does not change while
 * dur stays above 0):
 *   - down: it goes on over taken slots with key <= C and ends at the
 *     first free slot (placed there) or at a key > C, where it would go
 *     back up and down forever (Heph hangs: the event is left in place);
 *   - up: it goes on over taken slots with key > C, up to ts = C where
 *     dur reaches 0; it ends at a free slot (placed) or at a key <= C
 *     (endless again);
 *   - up with dur 0 (Heph would underflow; weft keeps 0): it goes on over
 *     slots with dur > 0 and ends at a free slot, or at a slot of dur 0,
 *     from where it goes down (a down run with C = that slot).
 * So an event takes at most four runs, and each run is a search for the
 * first slot that is free or breaks its condition. The searches use a
 * 64-ary tree of blocks over the timestamps: a block of 64^(n+1) slots
 * records which of its 64 parts are full, and over its full parts the
 * largest and smallest key and the smallest dur; a full part whose keys
 * satisfy the run's condition is skipped at once. A track builds its
 * tree only when a walk first goes past 64 slots; sparse tracks never do.
 *
 * Memory: 16 bytes per recorded event in the ts -> dur maps (at 3/8 to
 * 3/4 load), plus, on dense tracks, one 40-byte block per 64 microseconds.
 */
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "outputs/chrome.h"

#define EMPTY_KEY UINT64_MAX    /* key of an empty table slot */
#define NOT_FOUND UINT64_MAX    /* a search that ran past ts 0 */
#define MIN_CAP 16
#define BITS 6                  /* log2 of the fan-out of the tree */
#define FULL UINT64_MAX         /* mask of a block whose 64 parts are full */
/* Levels of blocks: 64^11 > 2^64 slots. */
#define MAX_LEVELS 11
/* Slots a walk looks at one by one before it uses (and builds) the tree. */
#define LINEAR_SCAN 64
/* Runs of one event: down, up, up with dur 0, down (see above). */
#define MAX_RUNS 8

/* ---- Hash tables ------------------------------------------------------------------- */

typedef struct dur_entry {
	uint64_t ts;   /* EMPTY_KEY when free */
	uint64_t dur;
} dur_entry;

/* A block of level n: 64 parts of 64^n slots each. */
typedef struct block {
	uint64_t key;      /* level << 58 | (ts >> (BITS * (level + 1))) */
	uint64_t full;     /* parts that are full (level 0: slots taken) */
	uint64_t max_key, min_key, min_dur; /* over the full parts */
} block;

typedef struct table {
	void *entries;
	size_t cap, count;   /* cap: 0 or a power of two */
	unsigned shift;      /* 64 - log2(cap) */
} table;

typedef struct fixup_track {
	table durs;          /* dur_entry: ts -> dur */
	table blocks;        /* block: the tree, once built */
	int indexed;         /* the tree exists and follows every record */
} fixup_track;

struct weft__fixup {
	fixup_track *tracks;
	size_t track_count;
	uint64_t entries;    /* events recorded */
	uint64_t bytes;      /* memory of the tables */
};

/*
 * Home slot of a key: runs of 8 consecutive keys (timestamps, or block
 * ids of a level) share one home group of 8 slots, placed by Fibonacci
 * hashing (the top bits of the product). The walks look at consecutive
 * timestamps: they then read a few cache lines instead of one per slot.
 */
static inline size_t home(const table *t, uint64_t key)
{
	return (size_t)(((key >> 3) * 0x9E3779B97F4A7C15ull) >> (t->shift + 3)) << 3 |
	       (size_t)(key & 7);
}

/* Keys are the first member of both entry types. */
static inline uint64_t *entry_key(const table *t, size_t i, size_t size)
{
	return (uint64_t *)((char *)t->entries + i * size);
}

/* The slot of `key`: where it is, or the empty slot where it would go. */
static size_t table_slot(const table *t, uint64_t key, size_t size)
{
	size_t mask = t->cap - 1, i = home(t, key);
	uint64_t k;

	while ((k = *entry_key(t, i, size)) != key && k != EMPTY_KEY)
		i = (i + 1) & mask;
	return i;
}

/* The entry of `key`, or NULL. */
static void *table_find(const table *t, uint64_t key, size_t size)
{
	if (t->cap == 0)
		return NULL;
	size_t i = table_slot(t, key, size);
	return *entry_key(t, i, size) == key ? entry_key(t, i, size) : NULL;
}

/* Doubles a table (or makes its first one), moving its entries. */
static int table_grow(weft__fixup *f, table *t, size_t size)
{
	size_t cap = t->cap ? t->cap * 2 : MIN_CAP;
	table bigger = { malloc(cap * size), cap, t->count, 64 };

	if (bigger.entries == NULL)
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET,
				   "out of memory for the same-start fix-up (%llu events)",
				   (unsigned long long)f->entries);
	for (size_t c = cap; c > 1; c >>= 1)
		bigger.shift--;
	memset(bigger.entries, 0xff, cap * size);
	for (size_t i = 0; i < t->cap; i++) {
		uint64_t key = *entry_key(t, i, size);
		if (key != EMPTY_KEY)
			memcpy(entry_key(&bigger, table_slot(&bigger, key, size), size),
			       entry_key(t, i, size), size);
	}
	free(t->entries);
	f->bytes += (cap - t->cap) * size;
	*t = bigger;
	return 0;
}

/*
 * The entry of `key`, created when absent (*created = 1; its bytes after
 * the key are then all 0xff). NULL when out of memory.
 */
static void *table_insert(weft__fixup *f, table *t, uint64_t key, size_t size,
			  int *created)
{
	void *e = table_find(t, key, size);

	*created = e == NULL;
	if (e != NULL)
		return e;
	if ((t->count + 1) * 4 > t->cap * 3 && table_grow(f, t, size) < 0)
		return NULL;
	e = entry_key(t, table_slot(t, key, size), size);
	*(uint64_t *)e = key;
	t->count++;
	return e;
}

/* ---- The tree of blocks ----------------------------------------------------------------- */

/* Table key of block `id` of level `level` (ids stay below 2^58). */
static inline uint64_t block_key(unsigned level, uint64_t id)
{
	return (uint64_t)level << 58 | id;
}

/*
 * Adds a slot to the tree: sets its bit in its level-0 block, and while a
 * block becomes full, the block's bit in its parent, carrying the
 * aggregates of the full part upwards.
 */
static int tree_add(weft__fixup *f, fixup_track *tr, uint64_t ts, uint64_t dur)
{
	uint64_t max_key = ts + dur, min_key = ts + dur, min_dur = dur;
	uint64_t id = ts >> BITS;
	unsigned bit = (unsigned)(ts & 63);

	for (unsigned level = 0; level < MAX_LEVELS; level++) {
		int created;
		block *b = table_insert(f, &tr->blocks, block_key(level, id), sizeof *b,
					&created);
		if (b == NULL)
			return WEFT_ENOMEM;
		if (created) { /* the minima start at UINT64_MAX (0xff bytes) */
			b->full = 0;
			b->max_key = 0;
		}
		b->full |= 1ull << bit;
		b->max_key = max_key > b->max_key ? max_key : b->max_key;
		b->min_key = min_key < b->min_key ? min_key : b->min_key;
		b->min_dur = min_dur < b->min_dur ? min_dur : b->min_dur;
		if (b->full != FULL)
			break;
		max_key = b->max_key, min_key = b->min_key, min_dur = b->min_dur;
		bit = (unsigned)(id & 63);
		id >>= BITS;
	}
	return 0;
}

/* Builds the tree of a track from its map, the first time a walk needs it. */
static int tree_build(weft__fixup *f, fixup_track *tr)
{
	for (size_t i = 0; i < tr->durs.cap; i++) {
		const dur_entry *e = (const dur_entry *)tr->durs.entries + i;
		if (e->ts != EMPTY_KEY && tree_add(f, tr, e->ts, e->dur) < 0)
			return WEFT_ENOMEM;
	}
	tr->indexed = 1;
	return 0;
}

/* ---- Searches ---------------------------------------------------------------------------- */

/* What a run goes on over (see the top of the file). */
enum run_kind {
	RUN_DOWN,     /* taken, key <= c */
	RUN_UP,       /* taken, key > c */
	RUN_UP_ZERO   /* taken, dur > 0 */
};

/* The run goes on over a slot of dur `dur`. */
static inline int slot_ok(enum run_kind kind, uint64_t ts, uint64_t dur, uint64_t c)
{
	switch (kind) {
	case RUN_DOWN: return ts + dur <= c;
	case RUN_UP: return ts + dur > c;
	default: return dur > 0;
	}
}

/* The run goes on over the whole part `unit` of level `level` (>= 1). */
static int part_ok(const fixup_track *tr, unsigned level, uint64_t unit,
		   enum run_kind kind, uint64_t c)
{
	const block *b = table_find(&tr->blocks, block_key(level - 1, unit), sizeof *b);

	if (b == NULL || b->full != FULL)
		return 0;
	switch (kind) {
	case RUN_DOWN: return b->max_key <= c;
	case RUN_UP: return b->min_key > c;
	default: return b->min_dur > 0;
	}
}

/*
 * The run goes on over a unit: at level 0 the slot `unit` (taken, and
 * meeting the condition), above it the whole part `unit`.
 */
static int unit_ok(const fixup_track *tr, unsigned level, uint64_t unit,
		   enum run_kind kind, uint64_t c)
{
	if (level > 0)
		return part_ok(tr, level, unit, kind, c);
	const dur_entry *e = table_find(&tr->durs, unit, sizeof *e);
	return e != NULL && slot_ok(kind, unit, e->dur, c);
}

/*
 * The first slot at or below `pos` that ends the run, through the tree:
 * the parts of each level are looked at downwards to the start of their
 * block, then the level above goes on from the part below; a part that
 * does not let the run through is entered at its top. NOT_FOUND when
 * the run goes through ts 0.
 */
static uint64_t tree_search_down(const fixup_track *tr, uint64_t pos,
				 enum run_kind kind, uint64_t c)
{
	unsigned level = 0;

	for (;;) {
		if (!unit_ok(tr, level, pos, kind, c)) {
			if (level == 0)
				return pos;
			level--;
			pos = pos << BITS | 63;
			continue;
		}
		if ((pos & 63) != 0) {
			pos--;
			continue;
		}
		if ((pos >> BITS) == 0 || level + 1 >= MAX_LEVELS)
			return NOT_FOUND;
		pos = (pos >> BITS) - 1;
		level++;
	}
}

/* The same upwards (a run up always ends: the slots above are finite). */
static uint64_t tree_search_up(const fixup_track *tr, uint64_t pos,
			       enum run_kind kind, uint64_t c)
{
	unsigned level = 0;

	for (;;) {
		if (!unit_ok(tr, level, pos, kind, c)) {
			if (level == 0)
				return pos;
			level--;
			pos = pos << BITS;
			continue;
		}
		if ((pos & 63) != 63) {
			pos++;
			continue;
		}
		if (level + 1 >= MAX_LEVELS)
			return NOT_FOUND;
		pos = (pos >> BITS) + 1;
		level++;
	}
}

/*
 * The first slot from `pos` on (down or up) that ends the run: up to
 * LINEAR_SCAN slots one by one, then through the tree (built on first
 * need). Sets *result; returns 0 or WEFT_ENOMEM.
 */
static int run_end(weft__fixup *f, fixup_track *tr, uint64_t pos, int down,
		   enum run_kind kind, uint64_t c, uint64_t *result)
{
	for (int i = 0; i < LINEAR_SCAN; i++) {
		if (!unit_ok(tr, 0, pos, kind, c)) {
			*result = pos;
			return 0;
		}
		if (down && pos == 0) {
			*result = NOT_FOUND;
			return 0;
		}
		pos = down ? pos - 1 : pos + 1;
	}
	if (!tr->indexed && tree_build(f, tr) < 0)
		return WEFT_ENOMEM;
	*result = down ? tree_search_down(tr, pos, kind, c) : tree_search_up(tr, pos, kind, c);
	return 0;
}

/* ---- Placing an event -------------------------------------------------------------------- */

/* The dur recorded at ts; 0 when ts is free, 1 when taken. */
static int taken(const fixup_track *tr, uint64_t ts, uint64_t *dur)
{
	const dur_entry *e = table_find(&tr->durs, ts, sizeof *e);

	if (e == NULL)
		return 0;
	*dur = e->dur;
	return 1;
}

/* Records an event placed at (ts, dur), in the map and in the tree. */
static int record(weft__fixup *f, fixup_track *tr, uint64_t ts, uint64_t dur)
{
	int created;
	dur_entry *e = table_insert(f, &tr->durs, ts, sizeof *e, &created);

	if (e == NULL)
		return WEFT_ENOMEM;
	e->dur = dur;
	f->entries++;
	return tr->indexed ? tree_add(f, tr, ts, dur) : 0;
}

/*
 * One run from the taken slot ts (dur `stored`) of an event of `dur`:
 * moves *ts and *dur to where the run ends. Returns 1 to go on (the
 * caller looks at the new slot), 0 when the walk would never end, or
 * WEFT_ENOMEM.
 */
static int one_run(weft__fixup *f, fixup_track *tr, uint64_t *ts, uint64_t *dur,
		   uint64_t stored)
{
	uint64_t t = *ts, d = *dur, c = t + d, end, ignored;

	if (stored <= d) { /* down: ends free (placed) or endless */
		if (t == 0)
			return 0;
		if (run_end(f, tr, t - 1, 1, RUN_DOWN, c, &end) < 0)
			return WEFT_ENOMEM;
		if (end == NOT_FOUND || taken(tr, end, &ignored))
			return 0;
		*ts = end, *dur = c - end;
		return 1;
	}
	if (d > 0) { /* up with dur > 0: up to c, where dur reaches 0 */
		if (run_end(f, tr, t + 1, 0, RUN_UP, c, &end) < 0)
			return WEFT_ENOMEM;
		if (end <= c && taken(tr, end, &ignored))
			return 0;
		*ts = end <= c ? end : c;
		*dur = c - *ts;
		return 1;
	}
	if (run_end(f, tr, t + 1, 0, RUN_UP_ZERO, 0, &end) < 0) /* up, dur stays 0 */
		return WEFT_ENOMEM;
	if (end == NOT_FOUND)
		return 0;
	*ts = end;
	return 1;
}

/*
 * Runs from the event's ts until a free slot (recorded there) or an
 * endless walk; at most four runs are ever needed (see the top).
 */
int weft__fixup_place(weft__fixup *f, uint32_t track, uint64_t *ts, uint64_t *dur)
{
	fixup_track *tr = &f->tracks[track];
	uint64_t t = *ts, d = *dur, stored;

	for (int run = 0; run < MAX_RUNS; run++) {
		if (!taken(tr, t, &stored)) {
			if (record(f, tr, t, d) < 0)
				return WEFT_ENOMEM;
			*ts = t, *dur = d;
			return 1;
		}
		int rc = one_run(f, tr, &t, &d, stored);
		if (rc <= 0)
			return rc;
	}
	return 0;
}

/* Empty maps for `tracks` tracks; nothing is allocated per track yet. */
int weft__fixup_create(size_t tracks, weft__fixup **out)
{
	weft__fixup *f = calloc(1, sizeof *f);

	*out = NULL;
	if (f != NULL)
		f->tracks = calloc(tracks ? tracks : 1, sizeof *f->tracks);
	if (f == NULL || f->tracks == NULL) {
		free(f);
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	}
	f->track_count = tracks;
	*out = f;
	return 0;
}

/* Events recorded in the maps. */
uint64_t weft__fixup_entries(const weft__fixup *f)
{
	return f->entries;
}

/* Bytes allocated for the maps and trees. */
uint64_t weft__fixup_bytes(const weft__fixup *f)
{
	return f->bytes;
}

/* Releases the maps and trees of every track. */
void weft__fixup_free(weft__fixup *f)
{
	if (f == NULL)
		return;
	for (size_t i = 0; i < f->track_count; i++) {
		free(f->tracks[i].durs.entries);
		free(f->tracks[i].blocks.entries);
	}
	free(f->tracks);
	free(f);
}
