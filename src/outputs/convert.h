/* SPDX-License-Identifier: MIT */
/*
 * outputs/convert.h - the pieces of weft_convert() (weft/convert.h):
 *   - convert.c: the public call (reading the trace into the output's
 *     writer), the report's lines;
 *   - writer.c: the writer interface (weft/writer.h), what every output
 *     shares (outputs/writer.h);
 *   - convert_view.c: the viewer outputs' writer, through the view layer
 *     (outputs/view.h): perfetto, chrome (and its Heph-compatible bytes),
 *     paraver;
 *   - convert_pallas*.c: the writer of a Pallas trace (a directory).
 * Each output's writer is in its registry entry (registry.c).
 */
#ifndef WEFT_OUTPUTS_CONVERT_H
#define WEFT_OUTPUTS_CONVERT_H

#include <stdint.h>

#include "weft/weft.h"

/* One conversion, as its output's writer holds it (checked). */
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

#endif /* WEFT_OUTPUTS_CONVERT_H */
