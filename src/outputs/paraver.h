/* SPDX-License-Identifier: MIT */
/*
 * outputs/paraver.h - the tracks and events of a view (outputs/view.h) as
 * a Paraver trace: OUT.prv (records), OUT.pcf (labels), OUT.row (names).
 * A sink of the view layer: it never knows which format the events came
 * from. The mapping and the type numbering are in docs/paraver.md:
 *   - one Paraver application; a task per PROCESS track and, in it, a
 *     thread (a row) per THREAD track, in declaration order; CHANNEL,
 *     STATE and COUNTER tracks write on the row of their stream;
 *   - STATE tracks ("running") as state records `1:` (1 = the span, 0
 *     "Not running" between two spans of the track);
 *   - spans, instants and counters as event records `2:` with types
 *     derived from the channel, counter and event names by a hash (the
 *     same name has the same type in every trace) and values of span
 *     names hashed the same way; every type and value is named in .pcf;
 *   - times in ns from the earliest time seen, which the .pcf names and
 *     the first record (type 1) carries.
 *
 * The .prv is written as the records come when it is a regular file open
 * for reading and writing and the records come in time order (ovni,
 * ROSS, Pallas read merged by time): they pass a bounded reorder window
 * and go to the file after a header of fixed width rewritten at the end;
 * a state record whose span is still open when the output passes its
 * begin is written with its end zero-padded and completed in place;
 * records older than the output (ends of spans never closed) are merged
 * in at the end. Other outputs and inputs (complete spans: Heph) go
 * through an external sort (outputs/row_sort.h: bounded memory, runs
 * spilled to tmpdir) and are written at the end. The same records in the
 * same order either way, but for those zero-padded numbers and the place
 * of such a state record among the records of its begin time
 * (docs/paraver.md).
 * Memory: the window (WEFT__PARAVER_WINDOW, 8 times that until the first
 * write), two output buffers of 4 MiB,
 * the sort's budget when it is used, a record per track (with the stack
 * of open span values while writing, at most WEFT__VIEW_MAX_DEPTH deep),
 * and the label tables (bounded: see WEFT__PARAVER_MAX_LABEL_BYTES).
 *
 * Internal to libweft (weft__ prefix).
 */
#ifndef WEFT_OUTPUTS_PARAVER_H
#define WEFT_OUTPUTS_PARAVER_H

#include <stdint.h>

#include "outputs/view.h"

/* Default memory of the record sort (weft__paraver_writer_set_sort_budget). */
#define WEFT__PARAVER_SORT_BUDGET (32u << 20)
/* Default memory of the reorder window of the direct path (set_window). */
#define WEFT__PARAVER_WINDOW (2u << 20)
/* Bytes of distinct names (types, values) kept for the .pcf; names past
 * it share one value labelled "(other names: label budget exceeded)". */
#define WEFT__PARAVER_MAX_LABEL_BYTES (32u << 20)
/* The largest task or thread number Paraver reads without extended objects. */
#define WEFT__PARAVER_MAX_OBJECT 65535u

typedef struct weft__paraver_writer weft__paraver_writer;

/*
 * Writes the .prv to prv_fd, .pcf to pcf_fd, .row to row_fd (none
 * closed), each from its current position (the .prv's must be 0 for the
 * direct path). tmpdir: where to spill sorted runs and the direct path's
 * temporary files (NULL = $TMPDIR or /tmp). WEFT_ENOMEM (message set) on
 * failure.
 */
int weft__paraver_writer_create(int prv_fd, int pcf_fd, int row_fd, const char *tmpdir,
				weft__paraver_writer **out);

/* The sink to hand to weft__view_create(); valid as long as the writer. */
const weft__view_sink *weft__paraver_writer_sink(weft__paraver_writer *w);

/*
 * The memory of the record sort, in bytes (at least 64 KiB; default
 * WEFT__PARAVER_SORT_BUDGET). Only before the first record: WEFT_EINVAL
 * after.
 */
int weft__paraver_writer_set_sort_budget(weft__paraver_writer *w, uint64_t bytes);

/*
 * The memory of the direct path's reorder window, in bytes (a record
 * takes 48; default WEFT__PARAVER_WINDOW; 8 times that is held before
 * the first write); 0 turns the direct path off
 * (every record through the sort). Only before the first record:
 * WEFT_EINVAL after. For tests and measurements.
 */
int weft__paraver_writer_set_window(weft__paraver_writer *w, uint64_t bytes);

/*
 * Sorts, writes the three files; 0 or WEFT_E* (message set via
 * weft__error): WEFT_ENOMEM or WEFT_EIO from the sort or a callback (the
 * first failure counts), WEFT_EIO when a file could not be written.
 */
int weft__paraver_writer_finish(weft__paraver_writer *w);

/* What the writer did, for the command's report. */
typedef struct weft__paraver_stats {
	uint64_t records;          /* .prv records (state + event) */
	uint64_t state_records;
	uint64_t tasks, rows;      /* Paraver tasks and threads (rows) */
	uint64_t max_object;       /* the largest task or thread number */
	uint64_t start;            /* the earliest time seen (ns): time 0 */
	uint64_t duration;         /* ns from start to the latest time seen */
	uint64_t types;            /* event types in the .pcf */
	uint64_t labels_dropped;   /* names past WEFT__PARAVER_MAX_LABEL_BYTES */
	uint64_t bad_counters;     /* NaN or infinite counter values (skipped) */
	uint64_t sort_runs;        /* sorted runs spilled to tmpdir */
	uint64_t direct;           /* 1: the .prv was written as records came */
	uint64_t late_records;     /* direct: records older than the output (merged) */
	uint64_t padded_states;    /* direct: state records with a zero-padded end */
	uint64_t merge_bytes;      /* direct: bytes of the .prv rewritten at the end */
	uint64_t rebuilt;          /* 1: direct, then remade with the sort at the end */
	uint64_t comm_records;     /* communication records (3:): messages */
	uint64_t comm_unmatched;   /* message ends whose other end never came */
	uint64_t comm_dropped;     /* message ends past the waiting bound */
} weft__paraver_stats;

void weft__paraver_writer_stats(const weft__paraver_writer *w, weft__paraver_stats *out);

/*
 * After finish: a warning for the user, or NULL when there is none.
 * Today: task or thread numbers above WEFT__PARAVER_MAX_OBJECT, which
 * Paraver reads only when built with extended objects. Valid until
 * weft__paraver_writer_free().
 */
const char *weft__paraver_writer_warning(const weft__paraver_writer *w);

/* Releases the writer (nothing more is written). NULL is accepted. */
void weft__paraver_writer_free(weft__paraver_writer *w);

#endif /* WEFT_OUTPUTS_PARAVER_H */
