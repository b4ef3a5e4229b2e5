/* SPDX-License-Identifier: MIT */
/*
 * cli/convert.h - the parts of `weft convert` (cmd_convert.c reads the
 * options and opens the trace; each output format has its own file):
 *   - convert_view.c: the viewer formats written through the view layer
 *     (outputs/view.h): perfetto, chrome, paraver;
 *   - convert_pallas.c: a Pallas trace (a directory).
 */
#ifndef WEFT_CLI_CONVERT_H
#define WEFT_CLI_CONVERT_H

#include <stdint.h>

#include "cli/cli.h"

/* What cmd_convert.c hands to an output format. */
typedef struct cli_convert_job {
	weft_trace *trace;        /* opened in the reading order of its format */
	weft_filter filter;       /* from/to (0: none), stream and event globs */
	const char *output;       /* OUT as given (a file, a base name, a dir) */
	int force;                /* replace OUT when it exists */
	/* --time virtual: ns per unit of virtual time (ROSS); 0: real time */
	double virtual_unit;
	/* --allow-loss: spans past the view's nesting limit are dropped with
	 * a warning (without it: an error, exit 1) */
	int allow_loss;
} cli_convert_job;

/* `--to perfetto|chrome|paraver`: exit code (CLI_EXIT_*). */
int cli_convert_view(const cli_convert_job *job, const char *format);
/* `--to pallas`: exit code (CLI_EXIT_*). */
int cli_convert_pallas(const cli_convert_job *job);

#endif /* WEFT_CLI_CONVERT_H */
