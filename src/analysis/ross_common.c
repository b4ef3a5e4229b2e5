/* SPDX-License-Identifier: MIT */
/*
 * analysis/ross_common.c - what the ROSS analyses (weft/ross.h) share:
 * which traces they read.
 */
#include <string.h>

#include "core/internal.h"

/* The analyses read ROSS samples; other formats have none. */
int weft_ross_analysable(const weft_trace *trace)
{
	weft_format format = weft_trace_format(trace);
	const char *name = weft_format_name(format);

	if (format == WEFT_FORMAT_ROSS)
		return 0;
	/* "an ovni trace", "a heph trace": the article by the name's sound */
	return weft__error(WEFT_EUNSUPPORTED, NULL, WEFT_NO_OFFSET, "'%s' is a%s %s trace",
			   weft_trace_path(trace), strchr("aeiou", name[0]) ? "n" : "", name);
}
