/* SPDX-License-Identifier: MIT */
/*
 * outputs/pipeline.h - the events of a cursor handed to a consumer (a
 * writer), either in the calling thread or through a second thread: the
 * calling thread reads and merges the streams and copies the events into
 * a fixed ring of batches; a worker thread takes the batches in order and
 * consumes them (for `weft dump`: formats and writes them). Internal to
 * libweft (weft__ prefix).
 */
#ifndef WEFT_OUTPUTS_PIPELINE_H
#define WEFT_OUTPUTS_PIPELINE_H

#include <stddef.h>

#include "weft/weft.h"

/*
 * Takes `count` events, in order. The events and the bytes they point to
 * stay valid until the consumer returns. Returns 0 to go on, non-zero to
 * stop the run (e.g. the output failed).
 */
typedef int (*weft__consume_fn)(void *ctx, const weft_event *events, size_t count);

/*
 * 1 when a run over `trace` should use two threads: as its `threads` open
 * option says, else the environment variable WEFT_THREADS (1 = one
 * thread, 2 or more = two), else two when the machine has two CPUs or
 * more and the streams hold enough bytes for the second thread to pay off.
 */
int weft__pipeline_wanted(const weft_trace *trace);

/*
 * The same for a run over `bytes` of the trace (one stream's, say) whose
 * consumer pays off by default only on `min_cpus` CPUs or more (0: two).
 */
int weft__pipeline_wanted_bytes(const weft_trace *trace, uint64_t bytes, int min_cpus);

/*
 * Hands every event of `cursor` to `consume` until the cursor ends, fails,
 * or `consume` asks to stop. With `threaded`, `consume` runs in a second
 * thread while this one reads (when the thread or its ring cannot be
 * set up, everything runs in this thread). Returns 0, or a negative
 * WEFT_E* code (from weft_cursor_next(), or out of memory for a huge
 * event) with its message in this thread's weft_last_error().
 */
int weft__pipeline_run(weft_cursor *cursor, weft__consume_fn consume, void *ctx,
		       int threaded);

#endif /* WEFT_OUTPUTS_PIPELINE_H */
