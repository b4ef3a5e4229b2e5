/* SPDX-License-Identifier: MIT */
/*
 * outputs/svg_plot.h - line charts as self-contained SVG (no script, no
 * external resource, no library): panels stacked vertically that share
 * the x axis and the lines (one colour and name per line, one legend),
 * with ticks, tick labels and axis titles; and a decimator that keeps a
 * long series to a bounded number of points (the minimum and maximum of
 * each bucket of consecutive samples), in bounded memory while streaming.
 * Internal to libweft (weft__ prefix).
 */
#ifndef WEFT_OUTPUTS_SVG_PLOT_H
#define WEFT_OUTPUTS_SVG_PLOT_H

#include <stddef.h>
#include <stdint.h>

/* ---- Decimation ------------------------------------------------------------- */

/* One bucket of consecutive samples: where its minimum and maximum are. */
typedef struct weft__bucket {
	double x_min, y_min;  /* the sample with the smallest y */
	double x_max, y_max;  /* the sample with the largest y */
	uint64_t n;           /* samples in the bucket */
} weft__bucket;

/*
 * Samples in arrival order, in at most `cap` buckets of `per_bucket`
 * samples each: when the buckets are full, neighbours are merged in
 * pairs and per_bucket doubles. A series then has at most 2 * cap points.
 */
typedef struct weft__decimator {
	weft__bucket *buckets;
	size_t count, cap, alloc;
	uint64_t per_bucket;
	uint64_t samples;
	int oom;
} weft__decimator;

/* An empty decimator of at most `cap` buckets (at least 1). */
void weft__decimator_init(weft__decimator *d, size_t cap);
/* Adds a finite sample (the caller leaves out NaN and infinities). */
void weft__decimator_add(weft__decimator *d, double x, double y);
/*
 * The points kept, in order (each bucket's min and max, by x), into
 * x[] and y[] of room 2 * count; returns how many.
 */
size_t weft__decimator_points(const weft__decimator *d, double *x, double *y);
void weft__decimator_free(weft__decimator *d);

/* ---- Charts --------------------------------------------------------------------- */

/* One line of one panel: its points (x increasing or not), its name. */
typedef struct weft__svg_series {
	const double *x, *y;
	size_t n;
} weft__svg_series;

/* A panel: its y axis title and one series per line (same order in all). */
typedef struct weft__svg_panel {
	const char *id;      /* element id of the panel group ("efficiency") */
	const char *y_title;
	const weft__svg_series *series;
} weft__svg_panel;

typedef struct weft__svg_chart {
	const char *title;
	const char *x_title;
	const char *const *line_names;  /* one per line: legend and <title> */
	size_t line_count;
	const weft__svg_panel *panels;
	size_t panel_count;
	const char *const *notes;       /* lines of text under the chart */
	size_t note_count;
	double x_offset;                /* subtracted from every x (0 = none) */
} weft__svg_chart;

/*
 * Writes the chart as an SVG document to `fd`. Returns 0, or WEFT_EIO /
 * WEFT_ENOMEM with a message.
 */
int weft__svg_chart_write(int fd, const weft__svg_chart *chart);

#endif /* WEFT_OUTPUTS_SVG_PLOT_H */
