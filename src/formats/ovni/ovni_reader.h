/* SPDX-License-Identifier: MIT */
/*
 * formats/ovni/ovni_reader.h - the state of one stream reader, shared by
 * the reader itself (ovni_stream.c) and the sorting of unordered regions
 * (ovni_region.c).
 */
#ifndef WEFT_OVNI_READER_H
#define WEFT_OVNI_READER_H

#include "formats/ovni/ovni_internal.h"

/* An event of the block being sorted. */
typedef struct region_entry {
	uint64_t clock;  /* raw clock, before the offset */
	uint64_t offset; /* file offset of the event */
	uint32_t seq;    /* stored index, from the block's first event */
	uint32_t rank;   /* place in the order before a sort (keeps it stable) */
} region_entry;

/* What the look-ahead knows of a region after the current block. */
typedef struct region_note {
	uint64_t ou;        /* offset of its OU[ */
	uint64_t end;       /* offset just after its OU] */
	uint64_t gap_from;  /* where the stretch before it starts (the end of
			     * the region before, or where the look started) */
	uint64_t gap_min;   /* smallest clock from gap_from to its OU[, the
			     * OU[ included (UINT64_MAX: none) */
	uint64_t inner_min; /* smallest clock inside (UINT64_MAX: empty) */
	uint64_t all_min;   /* min(inner_min, the clock of its OU]) */
	uint64_t later_min; /* smallest inner_min of it and the notes after it */
} region_note;

/* Regions the look-ahead keeps at most (48 bytes each). */
#define OVNI_MAX_REGION_NOTES 4096

typedef struct ovni_reader {
	weft_trace *trace;
	ovni_data *data;
	uint32_t stream;
	const char *name;        /* stream file, relative to the trace root */
	weft_mapfile mf;
	int big_endian;
	int finished;
	int64_t clock_offset;
	uint64_t pos;            /* offset of the next event in stored order */
	uint64_t seq;            /* stored index of the event at pos */
	uint64_t last_clock;     /* clock of the last delivered event */
	int backwards_reported;
	/* Signatures whose events were noted for a layout that differs from
	 * the table (a once-note per event kind: weft__trace_diag_once). */
	uint64_t layout_noted[(OVNI_MAX_SIGNATURES + 63) / 64];
	int in_region;           /* stored order: inside OU[ .. OU] */
	/* Scan-ahead for unordered regions (not used in stored order). */
	int scan;
	uint64_t lookback;
	uint64_t max_region_events;
	uint64_t scan_pos;
	/* Sorted index of the block being delivered, when any. */
	region_entry *index;
	size_t index_count, index_next, index_cap;
	uint64_t index_end;      /* file offset just past the block */
	uint64_t index_end_seq;
	/* The regions after the block, read once (ovni_region.c). */
	region_note *notes;
	size_t note_head, note_count, note_cap;
	uint64_t look_pos;       /* the look-ahead has read up to here */
	uint64_t look_from;      /* the stretch after the last note starts here */
	uint64_t look_min;       /* its smallest clock (UINT64_MAX: none) */
	int look_stopped;        /* why it stopped (ovni_region.c), 0: it did not */
	int ended;
} ovni_reader;

/*
 * Maps the event at `offset` and validates its size: sets *event and
 * *size, or returns a WEFT_E* code with the error set.
 */
int weft__ovni_map_event(ovni_reader *r, uint64_t offset,
			 const unsigned char **event, uint64_t *size);

/*
 * Builds the block index for the region whose OU[ is at `ou_offset`:
 * every event from r->pos to its OU] (and to the OU] of the later regions
 * whose sort reaches back into it), sorted as ovnisort sorts them.
 */
int weft__ovni_build_block(ovni_reader *r, uint64_t ou_offset);

#endif /* WEFT_OVNI_READER_H */
