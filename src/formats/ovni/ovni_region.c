/* SPDX-License-Identifier: MIT */
/*
 * formats/ovni/ovni_region.c - sorting the unordered regions (OU[ .. OU])
 * of a stream as ovnisort 1.14 sorts them, with bounded memory.
 *
 * ovnisort walks a stream keeping its last 999,999 events; at each
 * region's OU] it takes the smallest clock inside the region, finds the
 * last event before the OU] with a smaller clock (or the stream's start)
 * and stably sorts every event from there up to, not with, the OU]. So a
 * region may reorder events of earlier regions too.
 *
 * The reader does the same on a block index: every event from the
 * delivery point to the region's OU], the region sorted there. Before the
 * block is delivered, the look-ahead reads the regions that follow it
 * within the look-back distance (each byte once: what it learns is kept
 * in notes, one per region) and tells whether one of them would sort
 * events of the block: then the regions up to it join the block.
 */
#include <stdlib.h>
#include <string.h>

#include "formats/ovni/ovni_reader.h"

/*
 * Orders region entries by clock, then by their place in the current
 * order: a stable sort of the current order, as ovnisort's (glibc's merge
 * sort) is. (ovnisort compares clocks as signed numbers when sorting, but
 * aborts when that order is not the unsigned one: the same results.)
 */
static int entry_cmp(const void *a, const void *b)
{
	const region_entry *x = a, *y = b;
	if (x->clock != y->clock)
		return x->clock < y->clock ? -1 : 1;
	return x->rank < y->rank ? -1 : (x->rank > y->rank);
}

/* Appends one entry to the block index, growing it within the bound. */
static int index_push(ovni_reader *r, uint64_t clock, uint64_t offset, uint64_t seq)
{
	if (weft__array_grow((void **)&r->index, &r->index_cap, r->index_count + 1,
			     sizeof *r->index) < 0)
		return weft__error(WEFT_ENOMEM, r->name, offset,
				   "out of memory indexing an unordered region");
	r->index[r->index_count++] = (region_entry){ clock, offset,
		(uint32_t)(seq - r->seq), 0 };
	return 0;
}

/* Where one region lies in the block index. */
typedef struct region_span {
	uint64_t ou;     /* file offset of its OU[ */
	size_t open;     /* index of the OU[ entry */
	size_t close;    /* index of the OU] entry, or the end of what was indexed */
	int closed;      /* an OU] ends it */
} region_span;

/*
 * Appends to the block index every event from `from` on, up to and with
 * the first OU] after the OU[ at rg->ou (or to the end of the stream, or
 * to the event bound). Sets *end to the offset after the last one.
 */
static int index_region(ovni_reader *r, uint64_t from, region_span *rg, uint64_t *end)
{
	uint64_t offset = from, seq = r->seq + r->index_count;
	rg->closed = 0;
	rg->open = SIZE_MAX;
	while (offset < r->mf.size) {
		uint64_t size;
		const unsigned char *p;
		if (weft__ovni_map_event(r, offset, &p, &size) < 0)
			break; /* the error is met again when delivery gets there */
		if (offset == rg->ou)
			rg->open = r->index_count;
		if (r->index_count >= r->max_region_events) {
			weft__trace_diag(r->trace, WEFT_SEV_WARNING, WEFT_ENOMEM, r->name,
					 rg->ou, "unordered region longer than %llu events: "
					 "sorted in pieces", (unsigned long long)r->max_region_events);
			break;
		}
		int rc = index_push(r, ovni_load64(p + 4, r->big_endian), offset, seq);
		if (rc < 0)
			return rc;
		offset += size;
		seq++;
		if (rg->open != SIZE_MAX && r->index_count - 1 > rg->open &&
		    ovni_mcv_is(p + 1, "OU]")) {
			rg->closed = 1;
			break;
		}
	}
	rg->close = rg->closed ? r->index_count - 1 : r->index_count;
	*end = offset;
	return 0;
}

/*
 * Where ovnisort starts sorting a region: the last event before its OU]
 * whose clock is below the smallest clock inside the region (it and
 * everything after it are sorted). Searched in the block index, within
 * the OVNI_SORT_LOOK_BACK events ovnisort keeps. Returns the index, or
 * SIZE_MAX when the block has none.
 */
static size_t region_destination(const ovni_reader *r, const region_span *rg,
				 uint64_t *min_clock, uint64_t *looked)
{
	uint64_t m = UINT64_MAX;
	for (size_t i = rg->open + 1; i < rg->close; i++)
		if (r->index[i].clock < m)
			m = r->index[i].clock;
	*min_clock = m;
	*looked = 0;
	for (size_t i = rg->close; i-- > 0; ++*looked)
		if (r->index[i].clock < m)
			return i;
	return SIZE_MAX;
}

/*
 * Sorts the region `rg` of the block index as ovnisort does: stably, from
 * its destination up to (not with) its OU]. A region whose destination
 * lies before the block (delivered already) is sorted from the block's
 * start: what needed to go further comes late, and delivery reports it.
 * When ovnisort would refuse the stream (no destination within the events
 * it looks back over), a warning says so; the region is still sorted.
 */
static void sort_region(ovni_reader *r, const region_span *rg)
{
	if (rg->open == SIZE_MAX || rg->close <= rg->open + 1)
		return; /* empty: ovnisort leaves it (and warns) */
	uint64_t min_clock, looked;
	size_t from = region_destination(r, rg, &min_clock, &looked);
	if (from == SIZE_MAX)
		from = 0;
	/* ovnisort looks back over its last OVNI_SORT_LOOK_BACK events (or
	 * takes the stream's start when it has fewer). */
	if (looked >= OVNI_SORT_LOOK_BACK)
		weft__trace_diag(r->trace, WEFT_SEV_WARNING, WEFT_EFORMAT, r->name,
				 r->index[rg->open].offset, "unordered region: no event with "
				 "a clock below %llu in the %u events before its OU] (ovnisort's "
				 "look-back): ovnisort cannot sort this stream (\"cannot find a "
				 "event previous to clock\")", (unsigned long long)min_clock,
				 OVNI_SORT_LOOK_BACK);
	for (size_t i = from; i < rg->close; i++)
		r->index[i].rank = (uint32_t)i;
	qsort(r->index + from, rg->close - from, sizeof *r->index, entry_cmp);
}

/* ---- The look-ahead ----------------------------------------------------------- */

/* Why the look-ahead stopped (r->look_stopped). */
enum { LOOK_ON = 0, LOOK_END = 1, LOOK_FULL = 2 };

/* The i-th note from the oldest (the notes are a ring). */
static region_note *note_at(const ovni_reader *r, size_t i)
{
	return &r->notes[(r->note_head + i) % r->note_cap];
}

/* Starts the look-ahead afresh at `from`. */
static void look_reset(ovni_reader *r, uint64_t from)
{
	r->note_head = r->note_count = 0;
	r->look_pos = r->look_from = from;
	r->look_min = UINT64_MAX;
	r->look_stopped = LOOK_ON;
}

/*
 * Drops the notes of the regions that are now in the block (which ends at
 * `end`); when what is left does not start at `end` (the look-ahead was
 * behind, or started elsewhere), starts again from there.
 */
static void notes_sync(ovni_reader *r, uint64_t end)
{
	while (r->note_count > 0 && note_at(r, 0)->ou < end) {
		r->note_head = (r->note_head + 1) % r->note_cap;
		r->note_count--;
		if (r->look_stopped == LOOK_FULL)
			r->look_stopped = 0; /* room again */
	}
	uint64_t from = r->note_count > 0 ? note_at(r, 0)->gap_from : r->look_from;
	if (from != end || r->look_pos < end)
		look_reset(r, end);
}

/* Doubles the ring (up to OVNI_MAX_REGION_NOTES), oldest note first. */
static int notes_grow(ovni_reader *r)
{
	if (r->note_cap >= OVNI_MAX_REGION_NOTES)
		return -1;
	size_t cap = r->note_cap ? r->note_cap * 2 : 64;
	region_note *p = malloc(cap * sizeof *p);
	if (p == NULL)
		return -1;
	for (size_t i = 0; i < r->note_count; i++)
		p[i] = *note_at(r, i);
	free(r->notes);
	r->notes = p;
	r->note_cap = cap;
	r->note_head = 0;
	return 0;
}

/* Appends a note, keeping later_min (the smallest inner_min from each
 * note on) right. Returns -1 when the notes are full. */
static int note_push(ovni_reader *r, const region_note *n)
{
	if (r->note_count == r->note_cap && notes_grow(r) < 0)
		return -1;
	region_note *at = note_at(r, r->note_count++);
	*at = *n;
	at->later_min = n->inner_min;
	for (size_t i = r->note_count - 1; i-- > 0; ) {
		region_note *before = note_at(r, i);
		if (before->later_min <= n->inner_min)
			break;
		before->later_min = n->inner_min;
	}
	return 0;
}

/*
 * Reads the region whose OU[ is at `ou` into a note (the stretch before
 * it is r->look_from .. ou). Returns 0, or why the look-ahead stops
 * there: LOOK_END (the region is left open, an event is damaged) or
 * LOOK_FULL (no room for more notes).
 */
static int look_region(ovni_reader *r, uint64_t ou, uint64_t ou_clock)
{
	region_note n = { .ou = ou, .gap_from = r->look_from,
			  .gap_min = r->look_min < ou_clock ? r->look_min : ou_clock,
			  .inner_min = UINT64_MAX };
	uint64_t offset = r->look_pos;
	while (offset < r->mf.size) {
		uint64_t size;
		const unsigned char *p;
		if (weft__ovni_map_event(r, offset, &p, &size) < 0)
			return LOOK_END;
		uint64_t clock = ovni_load64(p + 4, r->big_endian);
		offset += size;
		if (ovni_mcv_is(p + 1, "OU]")) {
			n.end = offset;
			n.all_min = n.inner_min < clock ? n.inner_min : clock;
			if (note_push(r, &n) < 0)
				return LOOK_FULL;
			r->look_pos = r->look_from = offset;
			r->look_min = UINT64_MAX;
			return 0;
		}
		if (clock < n.inner_min)
			n.inner_min = clock;
	}
	return LOOK_END; /* left open: ovnisort does not sort it */
}

/* Reads on until the notes cover every OU[ before `limit`. */
static void look_extend(ovni_reader *r, uint64_t limit)
{
	while (r->look_stopped == LOOK_ON && r->look_pos < limit && r->look_pos < r->mf.size) {
		uint64_t size;
		const unsigned char *p;
		if (weft__ovni_map_event(r, r->look_pos, &p, &size) < 0) {
			r->look_stopped = LOOK_END; /* delivery reports it */
			return;
		}
		uint64_t at = r->look_pos, clock = ovni_load64(p + 4, r->big_endian);
		r->look_pos += size;
		if (ovni_mcv_is(p + 1, "OU[")) {
			int why = look_region(r, at, clock);
			if (why != LOOK_ON) {
				r->look_pos = at;
				r->look_stopped = why;
			}
		} else if (clock < r->look_min) {
			r->look_min = clock;
		}
	}
}

/*
 * Would ovnisort's sort of a region after the block (which ends at `end`,
 * its last event clocked `last`) reach back into it? Only when its OU[ is
 * within the look-back distance and no event from the block's last one to
 * that OU[ is below the smallest clock inside it. Returns the offset of
 * the first OU[ after the block then (the regions up to that one join
 * the block), UINT64_MAX otherwise; *clear gets the offset up to which
 * there is no OU[ (the scan-ahead need not read that part again).
 */
static uint64_t next_joining_region(ovni_reader *r, uint64_t end, uint64_t last,
				    uint64_t *clear)
{
	uint64_t limit = end + r->lookback, low = last;
	notes_sync(r, end);
	look_extend(r, limit);
	*clear = r->note_count > 0 ? note_at(r, 0)->ou : r->look_pos;
	for (size_t i = 0; i < r->note_count; i++) {
		const region_note *n = note_at(r, i);
		/* Clocks inside this region and the later ones are all above
		 * low, which only goes down: none of them reaches back. */
		if (n->ou >= limit || low < n->later_min)
			break;
		if (n->gap_min < low)
			low = n->gap_min;
		if (n->inner_min != UINT64_MAX && low >= n->inner_min)
			return note_at(r, 0)->ou;
		if (n->all_min < low)
			low = n->all_min;
	}
	return UINT64_MAX;
}

/* ---- The block --------------------------------------------------------------------- */

int weft__ovni_build_block(ovni_reader *r, uint64_t ou_offset)
{
	region_span rg = { .ou = ou_offset };
	uint64_t end, clear = 0;
	r->index_count = 0;
	r->index_next = 0;
	int rc = index_region(r, r->pos, &rg, &end);
	while (rc == 0) {
		sort_region(r, &rg);
		clear = end;
		if (!rg.closed || r->index_count >= r->max_region_events)
			break;
		rg = (region_span){ .ou = next_joining_region(
			r, end, r->index[r->index_count - 1].clock, &clear) };
		if (rg.ou == UINT64_MAX)
			break;
		rc = index_region(r, end, &rg, &end);
	}
	if (rc < 0)
		return rc;
	/* Map the whole block at once: it is delivered in random order. */
	if (end > r->pos && weft__mapfile_get(&r->mf, r->pos, end - r->pos) == NULL)
		return WEFT_EIO;
	r->index_end = end;
	r->index_end_seq = r->seq + r->index_count;
	r->scan_pos = clear > end ? clear : end;
	return 0;
}
