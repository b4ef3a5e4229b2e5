/* SPDX-License-Identifier: MIT */
/*
 * analysis/spans_emu.h - the spans of the ovni emulation
 * (weft_span_options.emulate): spans.c hands its iterator's calls here.
 * Internal to libweft (weft__ prefix).
 */
#ifndef WEFT_ANALYSIS_SPANS_EMU_H
#define WEFT_ANALYSIS_SPANS_EMU_H

#include "weft/emu.h"
#include "weft/span.h"

typedef struct weft__emu_spans weft__emu_spans;

/* 0, or WEFT_EINVAL (options that do not fit the emulation, not an ovni
 * trace), WEFT_EFORMAT (refused at load), WEFT_ENOMEM; message set. */
int weft__emu_spans_create(weft_trace *trace, const weft_span_options *options,
			   weft__emu_spans **out);
/* As weft_span_iter_next(). */
int weft__emu_spans_next(weft__emu_spans *s, const weft_span **span);
void weft__emu_spans_stats(const weft__emu_spans *s, weft_span_stats *out);
void weft__emu_spans_free(weft__emu_spans *s);

#endif
