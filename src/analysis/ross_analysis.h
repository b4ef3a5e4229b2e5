/* SPDX-License-Identifier: MIT */
/*
 * analysis/ross_analysis.h - what the ROSS analyses (weft/ross.h: table,
 * summary, plot) share: the file (root node) of a stream and its kind,
 * the clock rate the run was opened with, fields by name and as numbers.
 */
#ifndef WEFT_ANALYSIS_ROSS_ANALYSIS_H
#define WEFT_ANALYSIS_ROSS_ANALYSIS_H

#include <stddef.h>
#include <stdint.h>

#include "core/internal.h"

/* The root node (one per ROSS file) above node `id`. */
const weft_node *weft__ross_root(const weft_trace *trace, uint32_t id);

/*
 * The kind of a ROSS file node from its metadata ("gvt", "rt", "vt",
 * "evtrace", "model"), copied into buf (size bytes); "" when unknown.
 */
void weft__ross_file_kind(const weft_node *root, char *buf, size_t size);

/* The ross.clock_rate the run was opened with (Hz), 0 when none. */
double weft__ross_clock_rate(const weft_trace *trace);

/* 1 when the text `name` (NUL-terminated) is the field's name. */
int weft__field_is(const weft_field *field, const char *name);

/* A scalar field as a double (integers converted; NaN for bytes/text/arrays). */
double weft__field_number(const weft_field *field);

#endif /* WEFT_ANALYSIS_ROSS_ANALYSIS_H */
