/* SPDX-License-Identifier: MIT */
/*
 * outputs/convert.h - the pieces of weft_convert() (weft/convert.h):
 *   - convert.c: the public call, its checks, the report's lines;
 *   - convert_view.c: the viewer outputs through the view layer
 *     (outputs/view.h): perfetto, chrome (and its Heph-compatible bytes),
 *     paraver;
 *   - convert_pallas*.c: a Pallas trace (a directory).
 * Each output's run function is in its registry entry (registry.c).
 */
#ifndef WEFT_OUTPUTS_CONVERT_H
#define WEFT_OUTPUTS_CONVERT_H

#include <stdint.h>

#include "weft/weft.h"

/* One conversion, as its output's run function gets it (checked). */
typedef struct weft__convert_job {
	weft_trace *trace;
	const weft_convert_options *options;
	weft_convert_report *report;
} weft__convert_job;

/*
 * Appends a line (printf-style) to the report's messages. A line that
 * finds no memory is dropped: the report says less, the conversion goes on.
 */
void weft__convert_say(weft_convert_report *r, const char *fmt, ...)
#if defined(__GNUC__)
	__attribute__((format(printf, 2, 3)))
#endif
	;
/*
 * The line of a failed call, "<what>: <weft_last_error(), or the text of
 * `status`>". Returns `status`.
 */
int weft__convert_fail(weft_convert_report *r, const char *what, int status);
/*
 * The trace's diagnostics, one line each ("<file>:<offset>: <severity>:
 * <message>"). Returns 1 when one of them is an error (data lost).
 */
int weft__convert_diags(weft_convert_report *r, const weft_trace *trace);

/* The run functions of the registry (weft_output_info.run). */
int weft__convert_perfetto(weft_trace *trace, const weft_convert_options *options,
			   weft_convert_report *report);
int weft__convert_chrome(weft_trace *trace, const weft_convert_options *options,
			 weft_convert_report *report);
int weft__convert_paraver(weft_trace *trace, const weft_convert_options *options,
			  weft_convert_report *report);
int weft__convert_pallas(weft_trace *trace, const weft_convert_options *options,
			 weft_convert_report *report);

#endif /* WEFT_OUTPUTS_CONVERT_H */
