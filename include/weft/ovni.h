/* SPDX-License-Identifier: MIT */
/*
 * weft/ovni.h - what is specific to ovni traces: the event signature table
 * of the ovni 1.14 models, and sorting of unordered regions (ovnisort).
 *
 * (The drop-in instrumentation library has its own header, <ovni.h>.)
 */
#ifndef WEFT_OVNI_H
#define WEFT_OVNI_H

#include <stddef.h>
#include <stdint.h>

#include "weft/error.h"
#include "weft/api.h"
#include "weft/trace.h"

#ifdef __cplusplus
extern "C" {
#endif
WEFT_API_BEGIN

/* One event of the ovni models, as listed in event-signatures.tsv. */
typedef struct weft_ovni_signature {
	const char *model;         /* "nosv", "ovni", ... */
	char model_id;             /* 'V', 'O', ... */
	const char *model_version; /* "2.6.0" */
	char mcv[4];               /* "VTx" + NUL */
	int jumbo;                 /* 1: 4-byte size then jumbo data */
	const char *fields;        /* "u32 taskid, u32 bodyid" ("" if none) */
	const char *role;          /* "enter", "leave" or "point" */
	const char *partner;       /* MCV that closes/opens it, "" if none */
} weft_ovni_signature;

size_t weft_ovni_signature_count(void);
const weft_ovni_signature *weft_ovni_signature_at(size_t index);
/* The signature of the 3-character MCV `mcv`, or NULL when unknown. */
const weft_ovni_signature *weft_ovni_signature_find(const char *mcv);

/* ---- Sorting unordered regions ------------------------------------------ */

typedef struct weft_ovni_sort_report {
	uint64_t streams;          /* streams looked at */
	uint64_t regions;          /* unordered regions found */
	uint64_t unsorted_streams; /* streams whose events were not in order */
	uint64_t moved_events;     /* events not at their sorted place */
	uint64_t rewritten_streams;/* streams rewritten (0 when check_only) */
} weft_ovni_sort_report;

/*
 * Sorts the unordered regions of every stream of the ovni trace at `path`
 * like ovnisort, but safely: each stream that needs it is written sorted
 * to a temporary file next to it, synced, then renamed over it. With
 * `check_only`, nothing is written and the report tells what would be.
 */
int weft_ovni_sort(const char *path, int check_only,
		   weft_ovni_sort_report *report);
/*
 * The same, with the trace opened with `options` (NULL: the defaults;
 * the format is ovni whatever they say): its progress callback sees the
 * phases "opening" and "sorting" (weft/progress.h), its format options
 * (ovni.unordered_lookback_bytes...) bound the reading. Its `threads`
 * share the streams (0: as for weft_counts_compute), and with its `dist`
 * the call is collective (weft/dist.h): each rank surveys, then rewrites,
 * its share; rank 0's report and status are those of one process sorting
 * stream after stream, which stops at the first stream it cannot sort
 * (every rank returns that status; the other ranks' reports are zeros).
 */
int weft_ovni_sort_with(const char *path, const weft_open_options *options, int check_only,
			weft_ovni_sort_report *report);

WEFT_API_END

#ifdef __cplusplus
}
#endif

#endif /* WEFT_OVNI_H */
