/* SPDX-License-Identifier: MIT */
/*
 * weft/pallas_grammar.h - the structure of a Pallas thread, without
 * unrolling it: its events, its sequences (blocks and loop bodies) and its
 * loops, with occurrence counts and the duration summaries that Pallas
 * stores in the headers (no value data is read for those).
 *
 * Opened on a stream of a trace opened as Pallas (weft_trace_format() ==
 * WEFT_FORMAT_PALLAS); other formats give WEFT_EUNSUPPORTED.
 */
#ifndef WEFT_PALLAS_GRAMMAR_H
#define WEFT_PALLAS_GRAMMAR_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

#include "weft/event.h"
#include "weft/trace.h"
#include "weft/api.h"

#ifdef __cplusplus
extern "C" {
#endif
WEFT_API_BEGIN

typedef struct weft_pallas_grammar weft_pallas_grammar;

/* Token kinds: a token is (kind, index into that kind's table). */
typedef enum weft_pallas_token_kind {
	WEFT_PALLAS_TOKEN_KIND_INVALID = 0,
	WEFT_PALLAS_TOKEN_KIND_EVENT = 1,
	WEFT_PALLAS_TOKEN_KIND_SEQUENCE = 2,
	WEFT_PALLAS_TOKEN_KIND_LOOP = 3
} weft_pallas_token_kind;

typedef struct weft_pallas_token {
	weft_pallas_token_kind kind;
	uint32_t index;
} weft_pallas_token;

/* Duration summary of a vector: count, min, max, mean (ns, as stored). */
typedef struct weft_pallas_summary {
	uint64_t count, min, max, mean;
} weft_pallas_summary;

typedef struct weft_pallas_event_info {
	int32_t record;          /* Pallas record kind */
	const char *code;        /* "Enter", "MPI_Send", ... */
	uint64_t occurrences;
	/* "Enter 1 (function_0)" as pallas_info names it; valid until the
	 * next call on this grammar. */
	const char *description;
	uint64_t first_time, last_time; /* from the headers */
} weft_pallas_event_info;

typedef struct weft_pallas_sequence_info {
	int is_loop_body;        /* 0: a block (a call), 1: a loop's body */
	int dead;                /* an unused slot: nothing else is set */
	uint64_t token_count;
	/* The region of a block that starts with an Enter, else -1. */
	int64_t region_ref;
	/* The region's name, or "Sequence_<i>"; valid until the next call. */
	const char *name;
	weft_pallas_summary durations;
	/* Blocks: time not spent in nested blocks; loop bodies: time spent
	 * in blocks. */
	weft_pallas_summary exclusive;
} weft_pallas_sequence_info;

typedef struct weft_pallas_loop_info {
	int dead;
	weft_pallas_token repeated; /* the loop body (a sequence) */
	uint32_t iterations;
	uint64_t occurrences;
} weft_pallas_loop_info;

int weft_pallas_grammar_open(weft_trace *trace, uint32_t stream,
			     weft_pallas_grammar **out);
void weft_pallas_grammar_free(weft_pallas_grammar *g);

size_t weft_pallas_grammar_event_count(const weft_pallas_grammar *g);
size_t weft_pallas_grammar_sequence_count(const weft_pallas_grammar *g);
size_t weft_pallas_grammar_loop_count(const weft_pallas_grammar *g);
/* The thread's root sequence (a block). */
uint32_t weft_pallas_grammar_root(const weft_pallas_grammar *g);

int weft_pallas_grammar_event(weft_pallas_grammar *g, size_t i,
			      weft_pallas_event_info *out);
int weft_pallas_grammar_sequence(weft_pallas_grammar *g, size_t i,
				 weft_pallas_sequence_info *out);
/* Token k of sequence i (0 <= k < token_count). */
int weft_pallas_grammar_token(const weft_pallas_grammar *g, size_t i,
			      uint64_t k, weft_pallas_token *out);
int weft_pallas_grammar_loop(const weft_pallas_grammar *g, size_t i,
			     weft_pallas_loop_info *out);

/*
 * What a Pallas event is as a record: its kind (2 Enter, 3 Leave, 4
 * MPI_Send... 58 Generic), the block role Pallas's writer gives that kind
 * (WEFT_PALLAS_ROLE_* of weft/pallas.h: Enter, OMP and thread forks, team
 * and thread begins open a block, their ends close it), and how many of
 * its weft_event_fields() come from its payload (the others are the
 * occurrence's attributes). For a Pallas trace's event only (else
 * WEFT_EUNSUPPORTED).
 */
typedef struct weft_pallas_record_info {
	int32_t record;
	int role;
	int payload_fields;
} weft_pallas_record_info;
int weft_pallas_event_record(const weft_trace *trace, const weft_event *event,
			     weft_pallas_record_info *out);

/*
 * Looks for what weft reads in a Pallas trace but Pallas 0.20's own reader
 * cannot (archives whose location ids it cannot index, grammars deeper
 * than its 100 frames, roots it aborts on or stops reading, threads
 * without events, a trace without threads, delta timestamps), and for
 * what is inconsistent without stopping weft's replay (events and
 * sequences occurring more or less often than their vectors have values,
 * references to undefined regions, strings and attributes). Each finding
 * becomes a diagnostic of the trace (weft_trace_diag_*); returns how many,
 * or a negative code. Loads every thread's grammar (not its values).
 * `weft check` calls it; see docs/pallas.md.
 */
int weft_pallas_check(weft_trace *trace);

/*
 * Exact sums of the stored durations of sequence i (reads its value
 * data: one value per occurrence, not per event): total duration and
 * total exclusive duration, in ns.
 */
int weft_pallas_grammar_sequence_totals(weft_pallas_grammar *g, size_t i,
					uint64_t *total, uint64_t *exclusive_total);

/*
 * The stored durations of sequence i, one value per occurrence in the
 * order the occurrences were recorded (what
 * weft_pallas_grammar_sequence_totals() adds up), read a chunk at a
 * time: copies the values of occurrences first, first + 1, ... into
 * out[0 .. max-1] and sets *copied to how many were copied (fewer than
 * `max` only at the end of the vector; 0 when `first` is at or past it).
 * exclusive: the sequence's exclusive durations instead. The values are
 * read a sub-array at a time through the trace's value cache, so memory
 * stays the caller's buffer and the cache's bound. Returns 0 or a
 * negative code (WEFT_EINVAL for no sequence i, a reading error).
 */
int weft_pallas_grammar_sequence_durations(weft_pallas_grammar *g, size_t i, int exclusive,
					   uint64_t first, uint64_t *out, size_t max,
					   size_t *copied);

/* 1 when the trace's threads have grammars (a Pallas trace), else 0. */
int weft_pallas_grammar_available(const weft_trace *trace);

/*
 * Writes the grammar of thread `stream` to `out` as a tree, without
 * unrolling it (like `pallas_print -S`; what `weft dump --structure`
 * prints): a line "--- <stream path>: N events, N sequences, N loops
 * ---", then sequences with their kind, occurrence count and stored
 * durations, loops with their iteration counts, events with their names
 * and counts, indented by nesting. A sequence used in several places is
 * written in full the first time and referred to afterwards ("(above)"),
 * so the output stays the size of the grammar. 0 or a negative code
 * (WEFT_EUNSUPPORTED for a trace without grammars).
 */
int weft_pallas_structure_write(weft_trace *trace, uint32_t stream, FILE *out);

WEFT_API_END

#ifdef __cplusplus
}
#endif

#endif /* WEFT_PALLAS_GRAMMAR_H */
