/* SPDX-License-Identifier: MIT */
/*
 * outputs/row_sort.h - sorting rows of text (CSV lines) by a 64-bit key
 * in bounded memory: rows are kept in memory up to a budget; beyond it
 * each memory-full is sorted and written as a run to a temporary file,
 * and the runs are merged at the end (k-way, with more passes when there
 * are very many runs). Rows with equal keys keep the order they were
 * added in (the sort is stable). Internal to libweft (weft__ prefix).
 */
#ifndef WEFT_OUTPUTS_ROW_SORT_H
#define WEFT_OUTPUTS_ROW_SORT_H

#include <stddef.h>
#include <stdint.h>

typedef struct weft__row_sorter weft__row_sorter;

/*
 * A sorter keeping at most about `budget` bytes of rows in memory (at
 * least 64 KiB); runs go to an unlinked temporary file in `tmpdir` (NULL:
 * $TMPDIR, else /tmp), created when the first run is written.
 */
int weft__row_sorter_create(uint64_t budget, const char *tmpdir,
			    weft__row_sorter **out);

/* Adds a row (copied). 0, or WEFT_ENOMEM / WEFT_EIO with a message. */
int weft__row_sorter_add(weft__row_sorter *s, uint64_t key, const char *row,
			 size_t len);

/* Receives the rows in order; returns 0 to go on, non-zero to stop. */
typedef int (*weft__row_emit_fn)(void *ctx, const char *row, size_t len);

/*
 * Hands every row to `emit` in key order (then order of addition).
 * Returns 0, what `emit` returned when it stopped, or a WEFT_E* code.
 */
int weft__row_sorter_finish(weft__row_sorter *s, weft__row_emit_fn emit, void *ctx);

/* What the sort did (for --verbose style reports and tests). */
typedef struct weft__row_sort_stats {
	uint64_t rows;
	uint64_t runs;          /* sorted runs written to the temporary file */
	uint64_t spilled_bytes; /* bytes written to it, all passes */
	uint64_t merge_passes;  /* passes over the runs before the last */
} weft__row_sort_stats;

void weft__row_sorter_stats(const weft__row_sorter *s, weft__row_sort_stats *out);
void weft__row_sorter_free(weft__row_sorter *s);

/*
 * A key that sorts doubles by value: negative values first, -0 before
 * +0, infinities at the ends, NaN after everything.
 */
uint64_t weft__sort_key_double(double v);

#endif /* WEFT_OUTPUTS_ROW_SORT_H */
