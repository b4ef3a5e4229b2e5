/* SPDX-License-Identifier: MIT */
/*
 * weft/outfile.h - an output file written safely, as every weft output
 * is: the bytes go to a temporary file next to the destination (same
 * file system), which is synced and renamed over it at the end, so that
 * the destination is either the old file or the complete new one. For
 * front ends that write what the library formats into a descriptor
 * (weft_dump(), weft_ross_table_write(), weft_ross_plot_write()).
 *
 *     weft_outfile *f;
 *     if (weft_outfile_open("rates.csv", 0, 0, &f) == 0) {
 *         int rc = weft_ross_table_write(trace, &o, weft_outfile_fd(f), &r);
 *         rc = rc < 0 ? (weft_outfile_abort(f), rc) : weft_outfile_commit(f);
 *     }
 *
 * Failures return a negative WEFT_E* code with weft_last_error() saying
 * why, without a place: "'run.json' exists; use --force to replace it".
 */
#ifndef WEFT_OUTFILE_H
#define WEFT_OUTFILE_H

#include "weft/api.h"

#ifdef __cplusplus
extern "C" {
#endif
WEFT_API_BEGIN

typedef struct weft_outfile weft_outfile;

/*
 * Checks the destination (an existing file needs `force`: WEFT_EEXIST; a
 * directory is refused: WEFT_EINVAL) and creates the temporary file. "-"
 * is standard output (nothing to rename). With `remove_on_signal`, a
 * signal that ends the process (SIGINT, SIGTERM, SIGHUP, SIGQUIT,
 * SIGPIPE, SIGXFSZ) removes the temporary file: for commands; a program
 * with its own handlers leaves it 0.
 */
int weft_outfile_open(const char *path, int force, int remove_on_signal,
		      weft_outfile **out);
/* The descriptor to write to. */
int weft_outfile_fd(const weft_outfile *file);
/*
 * Syncs and closes the temporary file and renames it over the
 * destination, then frees `file`. 0, or a negative WEFT_E* code (the
 * temporary file is then removed and the destination left as it was).
 */
int weft_outfile_commit(weft_outfile *file);
/* Gives up: removes the temporary file and frees `file` (NULL is fine). */
void weft_outfile_abort(weft_outfile *file);

WEFT_API_END

#ifdef __cplusplus
}
#endif

#endif /* WEFT_OUTFILE_H */
