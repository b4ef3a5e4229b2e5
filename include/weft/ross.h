/* SPDX-License-Identifier: MIT */
/*
 * weft/ross.h - the analyses of ROSS runs (the samples ROSS's
 * instrumentation writes: GVT, real-time and virtual-time samples, event
 * traces, model data), as `weft table`, `summary` and `plot` print them.
 * See docs/ross.md.
 */
#ifndef WEFT_ROSS_H
#define WEFT_ROSS_H

#include "weft/api.h"
#include "weft/trace.h"

#ifdef __cplusplus
extern "C" {
#endif
WEFT_API_BEGIN

/*
 * 0 when `trace` is a ROSS run, which the ROSS analyses read; else
 * WEFT_EUNSUPPORTED with a message that says what it is ("'<path>' is an
 * ovni trace").
 */
int weft_ross_analysable(const weft_trace *trace);

WEFT_API_END

#ifdef __cplusplus
}
#endif

#endif /* WEFT_ROSS_H */
