/* SPDX-License-Identifier: MIT */
/*
 * cli/outfile.h - the output file of a command (`weft table`, `weft
 * plot`): the library's safe output file (weft/outfile.h: a temporary
 * file next to the destination, synced and renamed over it at the end;
 * --force to replace; "-" is standard output; removed when a signal ends
 * the command) with its failures printed as "weft CMD: <why>".
 */
#ifndef WEFT_CLI_OUTFILE_H
#define WEFT_CLI_OUTFILE_H

#include "weft/outfile.h"

typedef struct cli_outfile {
	const char *command;  /* for messages: "table" */
	weft_outfile *file;
	int fd;               /* where to write */
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

#endif /* WEFT_CLI_OUTFILE_H */
