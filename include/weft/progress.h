/* SPDX-License-Identifier: MIT */
/*
 * weft/progress.h - feedback on long work: a callback the library calls
 * while it opens, reads, converts, checks or sorts a trace (for a
 * progress line), and what it used (threads).
 *
 * The callback is given when the trace is opened (weft_open_options:
 * progress, progress_data, progress_interval_ns), which covers the work
 * of opening (the Heph scan), or later with weft_trace_set_progress().
 * It is called on the thread that called the library (never on a helper
 * thread), at most once per interval (100 ms by default) while work goes
 * on, and once more with `finished` set when an operation of the library
 * ends (opening, weft_convert(), weft_trace_check(), weft_dump(),
 * weft_ovni_sort_with(), weft_ross_table_write(), weft_counts_compute(),
 * weft_profile_compute()). Events read through a plain cursor count in
 * the phase "reading", which has no final call (the caller knows when it
 * stops). The cost: the cursors add up the events they read and look at
 * a coarse clock every 4096 events; the readers add up the bytes they
 * read per window (256 KiB), not per event.
 */
#ifndef WEFT_PROGRESS_H
#define WEFT_PROGRESS_H

#include <stddef.h>
#include <stdint.h>

#include "weft/api.h"

#ifdef __cplusplus
extern "C" {
#endif
WEFT_API_BEGIN

typedef struct weft_trace weft_trace;

/* Where an operation of the library is, as the callback sees it. */
typedef struct weft_progress {
	/*
	 * What runs: "opening", "reading" (plain cursors, weft_trace_stream_stats),
	 * "converting" then "writing" (weft_convert: the events, then the
	 * writer's finish), "checking", "dumping", "sorting", "counting",
	 * "profiling", "tabulating" (weft_ross_table_write); "indexing": the
	 * Heph time-order index, built when the first cursor in time order
	 * needs it, a stage inside whatever phase runs (its own final call,
	 * then that phase starts again). A static string.
	 */
	const char *phase;
	/*
	 * Input bytes read in this phase (trace files, each window counted
	 * when it is read; a window read again counts again, so bytes_done
	 * is capped at bytes_total), and the bytes of the trace's data files
	 * (0 when unknown: Pallas, whose values are read per thread; and
	 * while a ROSS run is opened). The percentage is done / total.
	 */
	uint64_t bytes_done;
	uint64_t bytes_total;
	/* Events read in this phase (by the cursors; the Heph open scan
	 * counts the events of the half it reads itself; the ROSS open scan
	 * its records), and the events of the trace when opening counted
	 * them (Heph, ROSS; 0 otherwise, and while opening): a better
	 * percentage than the bytes where a phase reads some bytes twice
	 * (the Heph readers in time order, the ovni unordered regions). A
	 * phase that reads part of the trace (a --stream filter) ends below
	 * the total. */
	uint64_t events_done;
	uint64_t events_total;
	/* Nanoseconds since the phase began (monotonic clock). */
	uint64_t elapsed_ns;
	/* 1 on the last call of an operation (the figures are then final). */
	int finished;
} weft_progress;

/* The callback: `progress` is valid during the call only. */
typedef void (*weft_progress_fn)(const weft_progress *progress, void *user_data);

/*
 * Installs (or with fn NULL removes) the progress callback of an opened
 * trace; `interval_ns` as weft_open_options.progress_interval_ns (0:
 * 100 ms). Replaces what the open options gave.
 */
void weft_trace_set_progress(weft_trace *trace, weft_progress_fn fn, void *user_data,
			     int64_t interval_ns);

/*
 * The most threads the library has used at once for this trace so far
 * (1 when it never started a helper thread): the Heph open scan, the
 * two-thread dump, the per-stream counts, the writers' threads that write
 * behind them and the Pallas writer's compression helpers count.
 */
int weft_trace_threads_used(const weft_trace *trace);

/*
 * The data files of the streams (each file once: ROSS streams share
 * theirs) and their bytes, as the trace was opened; for the formats whose
 * readers count what they read (ovni, Heph, ROSS), the bytes are the
 * progress's bytes_total.
 */
size_t weft_trace_data_files(const weft_trace *trace);
uint64_t weft_trace_data_bytes(const weft_trace *trace);

WEFT_API_END

#ifdef __cplusplus
}
#endif

#endif /* WEFT_PROGRESS_H */
