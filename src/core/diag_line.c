/* SPDX-License-Identifier: MIT */
/*
 * core/diag_line.c - one diagnostic as the line every front end shows,
 * "<file>:<offset>: <severity>: <message>": the conversions put it in
 * their report (outputs/convert.c), the command prints it (cli/common.c).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/internal.h"

/* "note", "warning" or "error", as problem lines name a severity. */
const char *weft_severity_name(int severity)
{
	if (severity == WEFT_SEV_ERROR)
		return "error";
	return severity == WEFT_SEV_NOTE ? "note" : "warning";
}

char *weft_diag_line(const weft_diag *diag, const char *default_file)
{
	const char *file = diag->file != NULL && diag->file[0] != '\0'
				   ? diag->file : default_file;
	const char *sev = weft_severity_name(diag->severity);
	char place[32] = "";

	if (diag->offset != WEFT_NO_OFFSET)
		snprintf(place, sizeof place, ":%" PRIu64, diag->offset);
	int n = snprintf(NULL, 0, "%s%s: %s: %s", file, place, sev, diag->message);
	char *line = n < 0 ? NULL : malloc((size_t)n + 1);
	if (line != NULL)
		snprintf(line, (size_t)n + 1, "%s%s: %s: %s", file, place, sev, diag->message);
	return line;
}
