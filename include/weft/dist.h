/* SPDX-License-Identifier: MIT */
/*
 * weft/dist.h - sharing the work on one trace among processes (MPI ranks),
 * without the library knowing MPI: the caller gives two collective
 * operations, gather and broadcast, as OTF2 takes its collective
 * callbacks. `weft-mpi` gives them over MPI; a Python program can give
 * them over mpi4py.
 *
 *     weft_dist d = { .rank = r, .ranks = n, .gather = my_gather,
 *                     .broadcast = my_bcast, .user = comm };
 *     weft_open_options o;
 *     weft_open_options_init(&o);
 *     o.dist = &d;
 *     weft_trace_open(path, &o, &trace);      // collective
 *     weft_counts_compute(trace, NULL, &c);   // collective: rank 0 has
 *                                             // the counts of the trace
 *
 * With `dist` set, opening is collective: every rank opens. ovni and
 * Pallas: from what rank 0 read of the trace's metadata, sent to the
 * others as it reads (the streams' metadata itself read for rank 0 by the
 * other ranks, a share of ovni's looms or Pallas's archives each); each
 * rank checks the sizes of its own streams' files; if one fails, all
 * fail, with that rank's message on rank 0. The analyses that combine
 * (weft_counts_compute, weft_profile_compute, weft_trace_stats_all,
 * weft_trace_check; and weft_ovni_sort_with, which opens the trace itself)
 * are collective: each rank reads its share of the streams
 * (weft_trace_share: balanced by bytes), and rank 0 gets the result of
 * the whole trace, equal to what one process computes: tables keyed by
 * name are merged by name, never by order of arrival. The other ranks
 * keep their part. Diagnostics met by any rank, and the first error in
 * rank order, are reported on rank 0; every rank returns the same
 * status. Everything else (cursors, dump) reads the whole trace on every
 * rank: run it on one rank. weft_convert() is collective too: into
 * Pallas and OTF2 each rank converts its share of the streams (rank 0
 * writes the definitions and renames); into the viewers (Chrome JSON,
 * Perfetto, Paraver) each rank reads its share and rank 0 merges and
 * writes it; where an output cannot share (ovni's models emulated, ROSS)
 * rank 0 converts while the others wait; every rank returns rank 0's
 * status.
 */
#ifndef WEFT_DIST_H
#define WEFT_DIST_H

#include <stddef.h>
#include <stdint.h>

#include "weft/api.h"

#ifdef __cplusplus
extern "C" {
#endif
WEFT_API_BEGIN

typedef struct weft_trace weft_trace;

typedef struct weft_dist {
	int rank;   /* this process, 0 .. ranks - 1 */
	int ranks;  /* processes that share the work (1: this one alone) */
	/*
	 * Collective: every rank gives `len` bytes. On rank 0, *all is set to
	 * a block from malloc() with every rank's bytes one after the other
	 * in rank order (the library frees it) and lens[r] to rank r's length
	 * (`lens` has `ranks` entries); on the other ranks *all is NULL.
	 * Returns 0, or a negative WEFT_E* code (the same on every rank).
	 */
	int (*gather)(void *user, const void *bytes, size_t len, void **all, size_t *lens);
	/* Collective: rank 0's `len` bytes copied into `bytes` on every rank. */
	int (*broadcast)(void *user, void *bytes, size_t len);
	void *user;
} weft_dist;

/*
 * The streams that part `part` of `parts` reads (what rank `part` reads
 * under a weft_dist of `parts` ranks): selected[i] is set to 1 for the
 * streams of the part, 0 for the others (`selected` has a byte per
 * stream). The streams are dealt largest first, each to the part with the
 * fewest bytes so far (ties: the lower part), so the parts' bytes are
 * within one stream of each other; deterministic. Traces whose streams
 * share files (weft_trace_shared_files: ROSS) are given whole to part 0
 * (the library's own analyses share a ROSS run among ranks by byte
 * pieces of its files instead: docs/mpi.md).
 * Returns the number of streams of the part, or WEFT_EINVAL.
 */
int64_t weft_trace_share(const weft_trace *trace, int part, int parts, uint8_t *selected);

/*
 * The same deal among the streams that `among` marks (a byte per stream,
 * non-zero: dealt; NULL: every stream), without the rule for formats
 * whose streams share files: for readers that read each stream through a
 * cursor of its own (the Python module's reader threads). Returns the
 * number of streams of the part, or WEFT_EINVAL, WEFT_ENOMEM.
 */
int64_t weft_trace_share_among(const weft_trace *trace, const uint8_t *among, int part,
			       int parts, uint8_t *selected);

WEFT_API_END

#ifdef __cplusplus
}
#endif

#endif /* WEFT_DIST_H */
