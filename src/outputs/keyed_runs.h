/* SPDX-License-Identifier: MIT */
/*
 * outputs/keyed_runs.h - lines written by several threads, each over its
 * share of the streams, put in the order one merged cursor gives.
 *
 * A merged cursor delivers events by (time, stream) with a min-heap; so
 * does a cursor over a share of the streams, and the greedy merge is
 * associative: at every step the least head of all streams is the least
 * of the shares' least heads. So each thread renders its share's events
 * in its own merged order, keeping with each line the (time, stream) of
 * its event, and one merge of the shares' runs by that key gives the
 * serial bytes, whatever the number of threads (also for streams whose
 * events are not in time order: the merge is the cursor's, not a sort).
 *
 * A run is a queue of chunks (the lines' bytes and their keys) between
 * its writer thread and the merging thread, at most RUN_DEPTH chunks of
 * about 1 MiB each in flight: memory is bounded whatever the trace.
 *
 * Internal to libweft (weft__ prefix).
 */
#ifndef WEFT_OUTPUTS_KEYED_RUNS_H
#define WEFT_OUTPUTS_KEYED_RUNS_H

#include <stddef.h>
#include <stdint.h>

#include "outputs/outputs.h"

/* The key of a line: its event's place in the merged order. */
typedef struct weft__line_key {
	uint64_t time;
	uint32_t stream;
	uint32_t len;  /* the line's bytes */
} weft__line_key;

typedef struct weft__keyed_runs weft__keyed_runs;

/* `runs` queues; NULL without memory. */
weft__keyed_runs *weft__keyed_runs_create(int runs);
/* Frees the queues (every writer and the merge must be done). */
void weft__keyed_runs_free(weft__keyed_runs *kr);

/*
 * Writer side, on run `run`'s thread: weft__keyed_run_begin() points
 * `out` (an outbuf in WEFT__OUTBUF_GROW mode, without a buffer of its
 * own) at an empty chunk; each line is written into `out`, then
 * weft__keyed_run_line() keeps its key and hands the chunk on once it is
 * full (waiting while RUN_DEPTH chunks are in flight).
 * weft__keyed_run_end() hands on the last chunk (not when `failed`) and
 * closes the run; `out` has no buffer after it. Call it on every path
 * after a begin; weft__keyed_run_close() closes a run that never began
 * (its writer could not start), or the merge would wait for ever. The
 * calls return 0, or an error: the merge stopped (no one takes the
 * lines), or no memory.
 */
int weft__keyed_run_begin(weft__keyed_runs *kr, int run, weft__outbuf *out);
int weft__keyed_run_line(weft__keyed_runs *kr, int run, weft__outbuf *out, uint64_t time,
			 uint32_t stream, size_t line_start);
int weft__keyed_run_end(weft__keyed_runs *kr, int run, weft__outbuf *out, int failed);
/* Closes run `run` (any thread; idempotent; after its end, or instead). */
void weft__keyed_run_close(weft__keyed_runs *kr, int run);

/*
 * Merging side: the lines of the runs into `out` by key, until every run
 * is closed and drained, or `out` fails (then the writers are told to
 * stop). `progress` (optional) is called between chunks. 0 or WEFT_EIO.
 */
int weft__keyed_runs_merge(weft__keyed_runs *kr, weft__outbuf *out,
			   void (*progress)(void *ctx), void *ctx);
/*
 * The same, each line handed to `line` (with the run it came from and
 * its key, whose len is the line's) instead of copied: for lines that are records the merge turns into
 * bytes (outputs/view_shared.c). `line` returns 0, or an error
 * that stops the merge (returned).
 */
typedef int (*weft__keyed_line_fn)(void *ctx, int run, const weft__line_key *key,
				   const char *line);
int weft__keyed_runs_merge_each(weft__keyed_runs *kr, weft__keyed_line_fn line,
				void *line_ctx, void (*progress)(void *ctx), void *ctx);
/*
 * Makes run `run` one that the merging thread feeds itself (another
 * rank's lines, received as the merge needs them): when the merge has
 * read its lines, `source` gives the next chunk: *text (*len bytes) and
 * *keys (*count keys, their lengths adding up to *len), both from
 * malloc() (the runs free them), and returns 1; or returns 0 at the
 * run's end, or an error, which stops the merge. No writer uses the run.
 */
typedef int (*weft__keyed_source_fn)(void *ctx, int run, char **text, size_t *len,
				     weft__line_key **keys, size_t *count);
void weft__keyed_run_set_source(weft__keyed_runs *kr, int run, weft__keyed_source_fn source,
				void *ctx);
/* Tells the writers to stop (their next call fails); for a merge that
 * will not run. */
void weft__keyed_runs_abort(weft__keyed_runs *kr);

#endif
