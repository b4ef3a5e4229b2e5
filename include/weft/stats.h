/* SPDX-License-Identifier: MIT */
/*
 * weft/stats.h - what a stream holds at a glance: how many events and
 * their first and last time (what `weft info` prints per stream), from
 * what the format stores when it can, else from reading the events.
 */
#ifndef WEFT_STATS_H
#define WEFT_STATS_H

#include <stddef.h>
#include <stdint.h>

#include "weft/api.h"
#include "weft/event.h"
#include "weft/trace.h"

#ifdef __cplusplus
extern "C" {
#endif
WEFT_API_BEGIN

typedef struct weft_stream_stats {
	uint64_t events;
	uint64_t untimed;     /* of them without a real time (WEFT_EVENT_NO_TIME) */
	uint64_t first, last; /* of the others: valid when events > untimed */
	/* 1 when the figures come from what the format stores about the
	 * stream (Pallas: its grammar's counts and timestamp headers), not
	 * from reading its events. */
	int stored;
	/* What the format adds about the stream, one line without its end
	 * ("grammar: 12 events, 3 sequences, 1 loops"); "" when nothing. */
	char detail[128];
} weft_stream_stats;

/*
 * The statistics of stream `stream`: from what the format stores when it
 * can (no event read), else by reading the stream's events. 0, or the
 * first error (the figures then count what was read).
 */
int weft_trace_stream_stats(weft_trace *trace, uint32_t stream, weft_stream_stats *out);

/*
 * The statistics of every stream (`stats`: weft_trace_stream_count()
 * entries) from one merged pass over the events: for the formats whose
 * merged cursor reads each file once (weft_trace_file_order_default()),
 * where a cursor per stream would read a file once per stream. 0, or
 * the cursor's error.
 */
int weft_trace_stats_merged(weft_trace *trace, weft_stream_stats *stats);

/*
 * The statistics of every stream (`stats`: weft_trace_stream_count()
 * entries), as weft_trace_stream_stats() gives them one by one (one
 * merged pass for the formats read by whole files), the streams shared
 * among `threads` threads (0: the trace's `threads` option, then
 * WEFT_THREADS, then the cores, at most 8 and one per 32 MiB plus 32 KiB
 * per stream of the trace, when each
 * stream is read without the others' bytes (not ROSS); 1: this one) and, with a weft_dist, among ranks (collective:
 * rank 0 gets every stream's figures). A stream that cannot be read to
 * its end counts what was read; `status` (or NULL) gets each stream's
 * error (0: none), whose message is an error diagnostic of the trace.
 * Returns 0, WEFT_ENOMEM, or the error of the first stream that failed.
 * The figures and diagnostics do not depend on threads or ranks.
 */
int weft_trace_stats_all(weft_trace *trace, int threads, weft_stream_stats *stats,
			 int *status);

/* Adds one event into the statistics of its stream. */
void weft_stream_stats_add(weft_stream_stats *stats, const weft_event *event);

WEFT_API_END

#ifdef __cplusplus
}
#endif

#endif /* WEFT_STATS_H */
