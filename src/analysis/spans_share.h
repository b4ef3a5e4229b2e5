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

/*
 * weft_span_iter_create() over this rank's pieces of the files
 * (weft__dist_pieces: ROSS on ranks). Only for formats whose spans are
 * instants (ROSS: points and samples): an interval's ends could be in two
 * pieces. Not for the emulation (WEFT_EUNSUPPORTED).
 */
int weft__span_iter_create_pieces(weft_trace *trace, const weft_span_options *options,
				  weft_span_iter **out);

#endif /* WEFT_SPANS_SHARE_H */
