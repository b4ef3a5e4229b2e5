/* SPDX-License-Identifier: MIT */
/*
 * weft/counts.h - how many events of each code (ovni MCV, Heph
 * description, ROSS record kind, Pallas record) a trace has, over all
 * streams and per stream: what `weft top` prints (ovnitop's table).
 *
 *     weft_count_options o;
 *     weft_count_options_init(&o);
 *     weft_counts *c;
 *     if (weft_counts_compute(trace, &o, &c) == 0) {
 *         weft_count_row rows[16];
 *         size_t n = weft_counts_rows(c, WEFT_COUNTS_ALL, rows, 16);
 *         ...
 *         weft_counts_free(c);
 *     }
 *
 * Built for speed: each stream is read alone, in stored order (no merge,
 * no sorting), a 3-letter ASCII code costs one look-up in a flat table,
 * and no payload is decoded. Formats whose streams share files (ROSS) are
 * read in one pass over their files (among ranks, a byte piece of each
 * file per rank: docs/mpi.md). On several cores the streams are
 * shared among threads, each with the trace opened again (a trace
 * belongs to one thread), and with a weft_dist among MPI ranks
 * (weft/dist.h); the counts do not depend on the number of threads or
 * ranks. Problems met while reading are diagnostics of `trace`.
 */
#ifndef WEFT_COUNTS_H
#define WEFT_COUNTS_H

#include <stddef.h>
#include <stdint.h>

#include "weft/api.h"
#include "weft/trace.h"

#ifdef __cplusplus
extern "C" {
#endif
WEFT_API_BEGIN

typedef struct weft_count_options {
	int by_stream;   /* 1: keep the counts of every stream too */
	/* Threads that read streams, each its part (by bytes): 0 = the
	 * trace's `threads` option, then WEFT_THREADS, then the cores (at
	 * most 8, one per 32 MiB plus 32 KiB per stream of the trace) when each
	 * stream is read without the others'
	 * bytes (not ROSS); 1 = this thread only. */
	int threads;
	/*
	 * 1: also pair enters and leaves into spans (weft/span.h, a second
	 * pass through the view layer, several times slower than counting)
	 * and give each code the time of the spans its events began; the
	 * times then all come from the spans (Heph's intervals are spans).
	 */
	int span_time;
} weft_count_options;

typedef struct weft_count_row {
	const char *code;   /* NUL-terminated, valid as long as the counts */
	uint32_t code_len;
	uint64_t count;
	/* The events of the code that have a duration, and the sum of the
	 * durations (ns): the intervals (WEFT_EVENT_INTERVAL: Heph's) and,
	 * with span_time, the events that began a span (ovni "VTx", Pallas
	 * "Enter"), with the span's duration. */
	uint64_t timed;
	uint64_t time_total;
} weft_count_row;

typedef struct weft_counts weft_counts;

/* The scope of weft_counts_rows() that is every stream. */
#define WEFT_COUNTS_ALL (-1)

void weft_count_options_init(weft_count_options *options);
/* Counts the events of `trace`. WEFT_ENOMEM or a reading error (message set). */
int weft_counts_compute(weft_trace *trace, const weft_count_options *options,
			weft_counts **out);
/*
 * The codes that occur in `stream` (WEFT_COUNTS_ALL: in the trace; a
 * stream index needs by_stream), most frequent first, equal counts by
 * code bytes (ovnitop's order): up to `cap` rows in out[]; returns how
 * many there are (call with cap 0 to size the array; 0 also when out of
 * memory).
 */
size_t weft_counts_rows(const weft_counts *counts, int64_t stream, weft_count_row *out,
			size_t cap);
/* The number of events counted. */
uint64_t weft_counts_total(const weft_counts *counts);
void weft_counts_free(weft_counts *counts);

WEFT_API_END

#ifdef __cplusplus
}
#endif

#endif /* WEFT_COUNTS_H */
