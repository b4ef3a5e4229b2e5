/* SPDX-License-Identifier: MIT */
/*
 * cli/outfile.c - a command's output file: the library's (outputs/outfile.c)
 * with its messages on stderr (see outfile.h).
 */
#include <stdio.h>

#include "cli/cli.h"
#include "cli/outfile.h"

/* Prints why an output file failed; returns CLI_EXIT_FAILURE. */
static int outfile_failed(const cli_outfile *o)
{
	fprintf(stderr, "weft %s: %s\n", o->command, weft_last_error());
	return CLI_EXIT_FAILURE;
}

int cli_outfile_open(cli_outfile *o, const char *command, const char *path, int force)
{
	o->command = command;
	int rc = weft_outfile_open(path, force, 1, &o->file);
	o->fd = rc < 0 ? -1 : weft_outfile_fd(o->file);
	return rc < 0 ? outfile_failed(o) : CLI_EXIT_OK;
}

int cli_outfile_commit(cli_outfile *o)
{
	int rc = weft_outfile_commit(o->file);
	o->file = NULL;
	return rc < 0 ? outfile_failed(o) : CLI_EXIT_OK;
}

void cli_outfile_abort(cli_outfile *o)
{
	weft_outfile_abort(o->file);
	o->file = NULL;
}
