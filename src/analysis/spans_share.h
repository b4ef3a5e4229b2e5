/* SPDX-License-Identifier: MIT */
/*
 * analysis/spans_share.h - the span iterator over some of the streams,
 * for the analyses that share the streams among threads and ranks.
 */
#ifndef WEFT_SPANS_SHARE_H
#define WEFT_SPANS_SHARE_H

#include <stdint.h>

#include "weft/span.h"

/*
 * weft_span_iter_create() over the streams of `selected` (a byte per
 * stream; NULL: every stream). Spans never cross streams (a track is a
 * stream or a stream's channel), so the spans of the parts are the
 * trace's. Not for the emulation, whose CPUs see every stream:
 * WEFT_EUNSUPPORTED with a selection.
 */
int weft__span_iter_create_selected(weft_trace *trace, const weft_span_options *options,
				    const uint8_t *selected, weft_span_iter **out);

#endif /* WEFT_SPANS_SHARE_H */
