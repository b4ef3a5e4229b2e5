/* SPDX-License-Identifier: MIT */
/*
 * outputs/outfile.h - an output file written safely: the bytes go to a
 * temporary file next to the destination (same file system), which is
 * synced and renamed over it at the end, so that the destination is
 * either the old file or the complete new one; an existing destination
 * is replaced only when asked (force); "-" is standard output. On request
 * (`watch`), a signal that ends the process (SIGINT, SIGTERM, SIGHUP,
 * SIGQUIT, SIGPIPE, SIGXFSZ) removes every temporary file open (up to 8
 * at once). Used by the conversions (outputs/convert*.c) and, through
 * cli/outfile.h, by `weft table` and `weft plot`.
 *
 * Failures return a negative WEFT_E* code with weft_last_error() saying
 * why, without a place: "'run.json' exists; use --force to replace it".
 */
#ifndef WEFT_OUTPUTS_OUTFILE_H
#define WEFT_OUTPUTS_OUTFILE_H

typedef struct weft__outfile {
	const char *path;     /* destination; NULL for standard output */
	char *tmp_path;       /* temporary file being written (malloc'd) */
	int fd;               /* where to write */
	int force;            /* replace an existing destination */
	int watch_slot;       /* its slot in the removal on signals, or -1 */
} weft__outfile;

/*
 * Checks the destination (an existing file needs `force`: WEFT_EEXIST; a
 * directory is refused: WEFT_EINVAL) and creates the temporary file
 * (removed on signals when `watch`). 0 or a negative WEFT_E* code.
 */
int weft__outfile_open(weft__outfile *o, const char *path, int force, int watch);
/*
 * Syncs and closes the temporary file and puts it in place. 0, or a
 * negative WEFT_E* code (the temporary file is then removed and the
 * destination left as it was).
 */
int weft__outfile_commit(weft__outfile *o);
/* Gives up: closes and removes the temporary file (nothing for stdout). */
void weft__outfile_abort(weft__outfile *o);
/* Syncs the directory holding `path`, so that a rename in it is durable. */
void weft__sync_parent(const char *path);

#endif /* WEFT_OUTPUTS_OUTFILE_H */
