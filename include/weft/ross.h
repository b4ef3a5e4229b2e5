/* SPDX-License-Identifier: MIT */
/*
 * weft/ross.h - the analyses of ROSS runs (the samples ROSS's
 * instrumentation writes: GVT, real-time and virtual-time samples, event
 * traces, model data), as `weft table`, `summary` and `plot` print them.
 * See docs/ross.md.
 */
#ifndef WEFT_ROSS_H
#define WEFT_ROSS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

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

/* ---- Summary: the engine samples per sampling mode and PE ---------------- */

typedef struct weft_ross_summary_options {
	int json;   /* one JSON object on one line (schema in docs/ross.md) */
	int dedup;  /* vt files: keep only the last sample of each group of
		     * samples with the same entity and virtual time */
} weft_ross_summary_options;

void weft_ross_summary_options_init(weft_ross_summary_options *options);

/*
 * Reads the run once (the merged cursor) and writes to `out` what its
 * engine samples say, per sampling mode (each gvt, rt and vt file) and
 * per PE: events processed, aborted and rolled back, efficiency,
 * rollbacks, GVT count and the time of each engine phase (rescaled by
 * the ross.clock_rate option the run was opened with), as text (what
 * `weft summary` prints) or JSON. The rules are in docs/ross.md. 0, or
 * WEFT_EUNSUPPORTED for a trace that is no ROSS run, or a reading error
 * (nothing written then); samples that could not be read are
 * diagnostics of the trace.
 */
int weft_ross_summary_write(weft_trace *trace, const weft_ross_summary_options *options,
			    FILE *out);

/* ---- Table: the records of one level as CSV -------------------------------- */

enum weft_ross_table_order {
	WEFT_ROSS_ORDER_FILE = 0, /* each file's order, files merged by real time */
	WEFT_ROSS_ORDER_VIRTUAL,  /* by virtual time (stable) */
	WEFT_ROSS_ORDER_REAL      /* by real time (stable) */
};

typedef struct weft_ross_table_options {
	/* "pe", "kp", "lp", "model" (MODEL and ANALYSIS_MODEL records) or
	 * "event" (weft_ross_table_level_name()). */
	const char *level;
	const char *stream_pattern; /* fnmatch() glob on stream paths, or NULL */
	int order;                  /* enum weft_ross_table_order */
	uint64_t sort_budget;       /* bytes a sort holds before it spills sorted
				     * runs to a temporary file; 0: 32 MiB */
} weft_ross_table_options;

void weft_ross_table_options_init(weft_ross_table_options *options);

/* The levels a table can be of: name i, NULL past the end. */
const char *weft_ross_table_level_name(size_t i);

/* What a table held. */
typedef struct weft_ross_table_report {
	uint64_t rows;
	/* Records with less model data than the model schema: their model
	 * columns are empty. */
	uint64_t short_data;
} weft_ross_table_report;

/*
 * Writes the records of one level of the run to `fd` as CSV (RFC 4180):
 * a header, then one row per record: file, offset, stream, kind,
 * time_ns, virtual_time, real_time, is_end, then the fields of the
 * level's event kinds (weft_trace_event_schema(): the record layouts,
 * then the model data as the ross.model_schema option decodes it, or a
 * hex model_data column), each name once; numbers read back exactly.
 * Rows come in file order or sorted (bounded memory). 0, or a negative
 * code: WEFT_EINVAL for an unknown level, WEFT_EUNSUPPORTED for a trace
 * that is no ROSS run or a record with more than 300 fields (the
 * message says which).
 */
int weft_ross_table_write(weft_trace *trace, const weft_ross_table_options *options, int fd,
			  weft_ross_table_report *report);

/* ---- Plot: efficiency and events processed per PE over time, as SVG ------ */

typedef struct weft_ross_plot_options {
	/* The file to plot: "gvt", "rt", "vt" or a file node's name; NULL:
	 * the first of gvt, rt, vt in the run that has lines (rt, gvt, vt
	 * with real_x). */
	const char *mode;
	int kp;      /* one line per KP instead of per PE */
	int real_x;  /* x: real time since the first sample (seconds,
		      * rescaled by ross.clock_rate) instead of virtual time */
	int dedup;   /* vt files: of the consecutive samples of a line with the
		      * same virtual time, plot only the last (as the summary's
		      * dedup); a note on the chart counts the others */
} weft_ross_plot_options;

void weft_ross_plot_options_init(weft_ross_plot_options *options);

typedef struct weft_ross_plot weft_ross_plot;

/*
 * Picks the file to plot and its lines (nothing is read yet). 0 and
 * *out; WEFT_ENOTFOUND (the message says which file was looked for) when
 * the run has no such file; WEFT_EUNSUPPORTED for a trace that is no
 * ROSS run.
 */
int weft_ross_plot_create(weft_trace *trace, const weft_ross_plot_options *options,
			  weft_ross_plot **out);
/*
 * Reads the samples (one pass; each line keeps at most 1000 buckets of
 * consecutive samples, their minimum and maximum). 0 or the error.
 */
int weft_ross_plot_read(weft_ross_plot *plot);
/*
 * Writes the chart, a self-contained SVG with two panels (efficiency,
 * events processed) and notes on what was left out, to `fd`.
 */
int weft_ross_plot_write(const weft_ross_plot *plot, int fd);
void weft_ross_plot_free(weft_ross_plot *plot);

WEFT_API_END

#ifdef __cplusplus
}
#endif

#endif /* WEFT_ROSS_H */
