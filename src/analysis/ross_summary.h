/* SPDX-License-Identifier: MIT */
/*
 * analysis/ross_summary.h - the state of weft_ross_summary_write() shared
 * by its reading (ross_summary.c) and its printing (ross_summary_print.c):
 * the values of a sample by slot, the totals per PE and sampling mode,
 * and the per-stream state. Internal to libweft.
 */
#ifndef WEFT_ANALYSIS_ROSS_SUMMARY_H
#define WEFT_ANALYSIS_ROSS_SUMMARY_H

#include <stdint.h>
#include <stdio.h>

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

/* The field names of the slots (ross_summary.c). */
extern const char *const weft__ross_slot_names[SL_COUNT];

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
/* The record codes of the levels (ross_summary.c). */
extern const char *const weft__ross_level_codes[LV_COUNT];

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

/* The "file" member of a file node's metadata (else its name), into buf. */
const char *weft__ross_file_of_root(const weft_node *root, char *buf, size_t size);

/*
 * The report of a summary that was read (its PEs sorted first), as text
 * or JSON, into s->out. 0, or WEFT_ENOMEM / WEFT_EIO.
 */
int weft__ross_summary_print(summary *s, int json);

#endif
