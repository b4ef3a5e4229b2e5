/* SPDX-License-Identifier: MIT */
/*
 * cli/outfile.h - an output file written safely: the bytes go to a
 * temporary file next to the destination (same file system), which is
 * synced and renamed over it at the end, so that the destination is
 * either the old file or the complete new one; an existing destination
 * is replaced only when asked (--force); "-" is standard output. An
 * interrupted command (SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGXFSZ)
 * removes every temporary file it has open (up to 8 at once). Used by
 * `weft convert`, `weft table` and `weft plot`.
 */
#ifndef WEFT_CLI_OUTFILE_H
#define WEFT_CLI_OUTFILE_H

typedef struct cli_outfile {
	const char *command;  /* for messages: "table" */
	const char *path;     /* destination; NULL for standard output */
	char *tmp_path;       /* temporary file being written (malloc'd) */
	int fd;               /* where to write */
	int force;            /* replace an existing destination */
	int watch_slot;       /* its slot in the removal on signals, or -1 */
} cli_outfile;

/*
 * Checks the destination (an existing file needs `force`; a directory is
 * refused) and creates the temporary file. Returns CLI_EXIT_OK, or
 * CLI_EXIT_FAILURE after printing why.
 */
int cli_outfile_open(cli_outfile *o, const char *command, const char *path, int force);
/*
 * Syncs and closes the temporary file and puts it in place. Returns
 * CLI_EXIT_OK, or CLI_EXIT_FAILURE after printing why (the temporary
 * file is then removed and the destination left as it was).
 */
int cli_outfile_commit(cli_outfile *o);
/* Gives up: closes and removes the temporary file (nothing for stdout). */
void cli_outfile_abort(cli_outfile *o);
/* Syncs the directory holding `path`, so that a rename in it is durable. */
void cli_sync_parent(const char *path);

#endif /* WEFT_CLI_OUTFILE_H */
