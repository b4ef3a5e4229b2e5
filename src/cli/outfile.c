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
	int rc = weft__outfile_open(&o->file, path, force, 1);
	o->fd = o->file.fd;
	return rc < 0 ? outfile_failed(o) : CLI_EXIT_OK;
}

int cli_outfile_commit(cli_outfile *o)
{
	return weft__outfile_commit(&o->file) < 0 ? outfile_failed(o) : CLI_EXIT_OK;
}

void cli_outfile_abort(cli_outfile *o)
{
	weft__outfile_abort(&o->file);
}
