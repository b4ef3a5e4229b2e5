/* SPDX-License-Identifier: MIT */
/*
 * outputs/pipeline.h - the events of a cursor handed to a consumer (a
 * writer), either in the calling thread or through a second thread: the
 * calling thread reads and merges the streams and copies the events into
 * a fixed ring of batches; a worker thread takes the batches in order and
 * consumes them (for `weft dump`: formats and writes them). Or, for a
 * consumer whose work on a batch does not depend on the batches before
 * (lines of text), a farm: several threads format batches at once and the
 * texts are written in batch order. Internal to libweft (weft__ prefix).
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
 * 1 when a run over `bytes` of `trace` should use two threads: as its
 * `threads` open option says, else the environment variable WEFT_THREADS
 * (1 = one thread, 2 or more = two), else two when the machine has
 * `min_cpus` CPUs or more (0: two) and the bytes are enough for the
 * second thread to pay off.
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

/* ---- The farm ------------------------------------------------------------ */

/* The text of a batch: a buffer from malloc() that the formatter grows. */
typedef struct weft__farm_text {
	char *buf;
	size_t len;
	size_t cap;
} weft__farm_text;

/*
 * A consumer in two halves. `format` turns `count` events into text
 * (appended to `text`, which it may grow with realloc()) with the state
 * of thread `worker` (0 is the calling thread, then 1 .. threads - 1), on
 * that thread, whatever the batches before it gave: 0, or a negative
 * WEFT_E* code with its message set, which stops the run after the
 * batches before this one. `emit` takes the texts, in batch order, one
 * call at a time (on any of the threads): 0, or non-zero to stop (the
 * output failed: the caller reports it).
 */
typedef struct weft__farm {
	int (*format)(void *ctx, int worker, const weft_event *events, size_t count,
		      weft__farm_text *text);
	int (*emit)(void *ctx, const char *text, size_t len);
	void *ctx;
} weft__farm;

/*
 * The threads a farm over `trace` should use: its `threads` option, else
 * WEFT_THREADS, else the CPUs (at most 8) when the streams hold enough
 * bytes for threads to pay off; 1 or more.
 */
int weft__farm_threads(const weft_trace *trace);

/*
 * Hands every event of `cursor` to the farm until the cursor ends, fails,
 * or the farm stops: this thread reads (and formats when the ring is
 * full), `threads` - 1 more threads format (fewer when they cannot
 * start). Returns 0; or the cursor's error, else the first failed
 * format's in batch order (with its message); or 1 when `emit` stopped it.
 * WEFT_ENOMEM when the ring cannot be made (nothing was read).
 */
int weft__farm_run(weft_cursor *cursor, const weft__farm *farm, int threads);

#endif /* WEFT_OUTPUTS_PIPELINE_H */
