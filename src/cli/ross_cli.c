/* SPDX-License-Identifier: MIT */
/*
 * cli/ross_cli.c - helpers of the ROSS analysis commands (see
 * ross_cli.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/ross_cli.h"

/* The analysis commands read ROSS samples; the library says which traces have them. */
int cli_ross_require(const weft_trace *trace, const char *command)
{
	if (weft_ross_analysable(trace) == 0)
		return CLI_EXIT_OK;
	fprintf(stderr, "weft %s: %s; this command reads ROSS runs\n", command,
		weft_last_error());
	return CLI_EXIT_FAILURE;
}

/* "64M", "1G", "65536": digits and an optional binary unit (and B). */
int cli_parse_size(const char *text, uint64_t *bytes)
{
	char *end;
	if (text[0] < '0' || text[0] > '9')
		return -1;
	unsigned long long v = strtoull(text, &end, 10);
	unsigned shift = 0;
	if (*end == 'K' || *end == 'k')
		shift = 10;
	else if (*end == 'M' || *end == 'm')
		shift = 20;
	else if (*end == 'G' || *end == 'g')
		shift = 30;
	if (shift != 0)
		end++;
	if (*end == 'B' || *end == 'b')
		end++;
	if (*end != '\0' || v > (UINT64_MAX >> shift))
		return -1;
	*bytes = (uint64_t)v << shift;
	return 0;
}
