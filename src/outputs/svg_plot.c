/* SPDX-License-Identifier: MIT */
/*
 * outputs/svg_plot.c - line charts written by hand as SVG, and the
 * min/max decimator of long series (see svg_plot.h).
 *
 * Layout (user units = pixels): the title on top, then each panel (plot
 * area with its y axis on the left and its x axis below), the legend to
 * the right of the panels, the notes at the bottom. Ticks are "nice"
 * numbers (1, 2 or 5 times a power of ten), about six per axis. Every
 * text is escaped for XML, and bytes that are not valid UTF-8 or are
 * control characters become '?', so that the document always parses.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "outputs/outputs.h"
#include "outputs/svg_plot.h"

/* ---- Decimation ---------------------------------------------------------------- */

/* An empty decimator: one sample per bucket until `cap` buckets fill. */
void weft__decimator_init(weft__decimator *d, size_t cap)
{
	memset(d, 0, sizeof *d);
	d->cap = cap < 1 ? 1 : cap;
	d->per_bucket = 1;
}

/* Frees the buckets. */
void weft__decimator_free(weft__decimator *d)
{
	free(d->buckets);
	memset(d, 0, sizeof *d);
}

/* Merges bucket b into a (a comes first). */
static void merge_bucket(weft__bucket *a, const weft__bucket *b)
{
	if (b->y_min < a->y_min) {
		a->y_min = b->y_min;
		a->x_min = b->x_min;
	}
	if (b->y_max > a->y_max) {
		a->y_max = b->y_max;
		a->x_max = b->x_max;
	}
	a->n += b->n;
}

/* Halves the number of buckets by merging neighbours; doubles their size. */
static void compact(weft__decimator *d)
{
	size_t k = 0;
	for (size_t i = 0; i < d->count; i += 2, k++) {
		d->buckets[k] = d->buckets[i];
		if (i + 1 < d->count)
			merge_bucket(&d->buckets[k], &d->buckets[i + 1]);
	}
	d->count = k;
	d->per_bucket *= 2;
}

/* Makes room for one more bucket (growing the array up to cap). */
static int room_for_bucket(weft__decimator *d)
{
	if (d->count == d->cap)
		compact(d);
	if (d->count < d->alloc)
		return 1;
	size_t alloc = d->alloc ? 2 * d->alloc : 16;
	if (alloc > d->cap)
		alloc = d->cap;
	weft__bucket *bigger = realloc(d->buckets, alloc * sizeof *bigger);
	if (bigger == NULL) {
		d->oom = 1;
		return 0;
	}
	d->buckets = bigger;
	d->alloc = alloc;
	return 1;
}

/*
 * Into the last bucket while it has room, else into a new bucket (the
 * buckets are merged in pairs first when there are `cap` of them).
 */
void weft__decimator_add(weft__decimator *d, double x, double y)
{
	d->samples++;
	if (d->count > 0 && d->buckets[d->count - 1].n < d->per_bucket) {
		weft__bucket one = { x, y, x, y, 1 };
		merge_bucket(&d->buckets[d->count - 1], &one);
		return;
	}
	if (!room_for_bucket(d))
		return;
	d->buckets[d->count++] = (weft__bucket){ x, y, x, y, 1 };
}

/* Each bucket gives its minimum and its maximum, in the order of their x. */
size_t weft__decimator_points(const weft__decimator *d, double *x, double *y)
{
	size_t n = 0;
	for (size_t i = 0; i < d->count; i++) {
		const weft__bucket *b = &d->buckets[i];
		int min_first = b->x_min <= b->x_max;
		x[n] = min_first ? b->x_min : b->x_max;
		y[n++] = min_first ? b->y_min : b->y_max;
		if (b->n > 1 && (b->x_min != b->x_max || b->y_min != b->y_max)) {
			x[n] = min_first ? b->x_max : b->x_min;
			y[n++] = min_first ? b->y_max : b->y_min;
		}
	}
	return n;
}

/* ---- Writing ---------------------------------------------------------------------- */

/* printf into the output buffer (pieces of at most 4 KiB). */
static void put_fmt(weft__outbuf *ob, const char *fmt, ...) WEFT_PRINTF(2, 3);
static void put_fmt(weft__outbuf *ob, const char *fmt, ...)
{
	char *p = weft__outbuf_reserve(ob, WEFT__OUTBUF_MAX_RESERVE);
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(p, WEFT__OUTBUF_MAX_RESERVE, fmt, ap);
	va_end(ap);
	if (n > 0)
		weft__outbuf_commit(ob, p + (n < WEFT__OUTBUF_MAX_RESERVE ? n :
					     WEFT__OUTBUF_MAX_RESERVE - 1));
}

/* Text escaped for XML; invalid UTF-8 and control characters become '?'. */
static void put_xml_text(weft__outbuf *ob, const char *s)
{
	size_t len = strlen(s);
	for (size_t i = 0; i < len;) {
		unsigned char c = (unsigned char)s[i];
		size_t n = c < 0x80 ? 1 : weft__utf8_sequence_length((const unsigned char *)s + i,
								     len - i);
		if (c == '&')
			weft__outbuf_puts(ob, "&amp;");
		else if (c == '<')
			weft__outbuf_puts(ob, "&lt;");
		else if (c == '>')
			weft__outbuf_puts(ob, "&gt;");
		else if (c == '"')
			weft__outbuf_puts(ob, "&quot;");
		else if (c == '\'')
			weft__outbuf_puts(ob, "&apos;");
		else if (n == 0 || (c < 0x20 && c != '\t') || c == 0x7f)
			weft__outbuf_puts(ob, "?");
		else
			weft__outbuf_put(ob, s + i, n);
		i += n == 0 ? 1 : n;
	}
}

/* ---- Axes ------------------------------------------------------------------------- */

/* floor() without libm, for |x| < 2^62. */
static double floor_d(double x)
{
	double t = (double)(long long)x;
	return t > x ? t - 1 : t;
}

/*
 * Half of hi - lo, computed so that it never overflows: a range from
 * -DBL_MAX to DBL_MAX (values a damaged file can hold) is 2^1024 wide.
 */
static double half_width(double lo, double hi)
{
	return hi * 0.5 - lo * 0.5;
}

/* 1 for a finite value (not NaN, not infinite). */
static int is_finite_d(double v)
{
	return v == v && v - v == 0;
}

/* Ticks of an axis: step, first tick, count, decimals of the labels. */
typedef struct ticks {
	double lo, hi;     /* the axis range (data range, padded) */
	double step;
	double first_k;    /* tick i is (first_k + i) * step: no overflow */
	int count;
	int decimals;      /* -1: label with %g */
	int ends;          /* only the two ends are ticks (too fine for doubles) */
} ticks;

/*
 * Ranges narrower than this are taken as one value: a step computed from
 * a width of subnormal numbers (0 and 4.9e-324, from a damaged file) is
 * 0 / 0.
 */
#define MIN_WIDTH 1e-280

/* A range of width 0 (one value, or too narrow) or absent gets some room. */
static void pad_range(double *lo, double *hi)
{
	if (*lo > *hi) {
		*lo = 0;
		*hi = 1;
	}
	if (half_width(*lo, *hi) < MIN_WIDTH) {
		double m = *lo < 0 ? -*lo : *lo;
		/* 1 for 0 and the smallest values */
		double pad = m * 0.05 >= MIN_WIDTH ? m * 0.05 : 1;
		*lo = is_finite_d(*lo - pad) ? *lo - pad : *lo; /* not past DBL_MAX */
		*hi = is_finite_d(*hi + pad) ? *hi + pad : *hi;
	}
}

/* The value of tick i (the ends, when only they are labelled). */
static double tick_value(const ticks *t, int i)
{
	if (t->ends)
		return i == 0 ? t->lo : t->hi;
	return (t->first_k + i) * t->step;
}

/*
 * About six nice ticks over [lo, hi]: the step is 1, 2 or 5 times a power
 * of ten; the range widens by 4% on each side so lines do not touch the
 * frame (not past the largest double). Every width is taken as twice a
 * half_width(), and every loop below ends for any finite lo and hi.
 */
static void make_ticks(double lo, double hi, ticks *t)
{
	pad_range(&lo, &hi);
	double margin = half_width(lo, hi) * 0.08;
	t->lo = is_finite_d(lo - margin) ? lo - margin : lo;
	t->hi = is_finite_d(hi + margin) ? hi + margin : hi;
	double raw = half_width(t->lo, t->hi) / 3, mag = 1;
	int e = 0;
	while (mag * 10 <= raw) {
		mag *= 10;
		e++;
	}
	while (mag > raw) {
		mag /= 10;
		e--;
	}
	t->step = raw / mag < 2 ? mag : raw / mag < 5 ? 2 * mag : 5 * mag;
	double big = (t->lo < 0 ? -t->lo : t->lo) / 2 + (t->hi < 0 ? -t->hi : t->hi) / 2;
	if (big / t->step > 5e14) {  /* too fine for doubles: label the ends */
		t->first_k = 0;
		t->step = half_width(t->lo, t->hi); /* for tick_label()'s zero only */
		t->count = 2;
		t->decimals = -1;
		t->ends = 1;
		return;
	}
	t->ends = 0;
	double k = floor_d(t->lo / t->step);
	if (!is_finite_d(k * t->step) || k * t->step < t->lo)
		k += 1;
	t->first_k = k;
	t->count = 0;
	for (double v; t->count < 50; t->count++) {
		v = tick_value(t, t->count);
		if (!is_finite_d(v) || v - t->hi > t->step * 1e-9)
			break;
	}
	t->decimals = e >= 0 ? 0 : -e;
	if (t->decimals > 9 || big >= 5e8)
		t->decimals = -1;
}

/* The label of tick value v. */
static void tick_label(const ticks *t, double v, char *buf, size_t size)
{
	if (v > -t->step * 1e-9 && v < t->step * 1e-9)
		v = 0; /* no "-0" or 1e-17 at zero */
	if (t->decimals < 0)
		snprintf(buf, size, "%.6g", v);
	else
		snprintf(buf, size, "%.*f", t->decimals, v);
}

/* ---- Chart geometry ------------------------------------------------------------------- */

#define CHART_W 960
#define LEFT 84
#define LEGEND_W 190
#define TITLE_H 44
#define PANEL_H 250
#define PANEL_GAP 72
#define NOTE_H 18
#define MAX_LEGEND 30

/* Colours told apart by most eyes (Okabe-Ito, without yellow), then more. */
static const char *const colours[] = {
	"#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9",
	"#000000", "#8c6d31", "#7b4173", "#637939",
};
static const char *const dashes[] = { "", "6,3", "2,2", "9,3,2,3" };
#define COLOURS (sizeof colours / sizeof colours[0])
#define DASHES (sizeof dashes / sizeof dashes[0])

typedef struct geometry {
	double plot_w;
	double x0, x1;     /* x range (after offset) */
	ticks xt;
} geometry;

/* Data range of the x values (minus the offset) over every series. */
static void x_range(const weft__svg_chart *c, double *lo, double *hi)
{
	int any = 0;
	*lo = 1;
	*hi = 0; /* empty: make_ticks() gives [0, 1] */
	for (size_t p = 0; p < c->panel_count; p++)
		for (size_t i = 0; i < c->line_count; i++) {
			const weft__svg_series *s = &c->panels[p].series[i];
			for (size_t k = 0; k < s->n; k++) {
				double x = s->x[k] - c->x_offset;
				if (!any || x < *lo)
					*lo = x;
				if (!any || x > *hi)
					*hi = x;
				any = 1;
			}
		}
}

/* Data range of the y values of one panel. */
static void y_range(const weft__svg_chart *c, const weft__svg_panel *panel, double *lo,
		    double *hi)
{
	int any = 0;
	for (size_t i = 0; i < c->line_count; i++) {
		const weft__svg_series *s = &panel->series[i];
		for (size_t k = 0; k < s->n; k++) {
			if (!any || s->y[k] < *lo)
				*lo = s->y[k];
			if (!any || s->y[k] > *hi)
				*hi = s->y[k];
			any = 1;
		}
	}
	if (!any) {
		*lo = 1;
		*hi = 0;
	}
}

/* Screen x of a data x. */
static double sx(const geometry *g, double x)
{
	return LEFT + (x * 0.5 - g->xt.lo * 0.5) / half_width(g->xt.lo, g->xt.hi) * g->plot_w;
}

/* Screen y of a data y in a panel whose plot area starts at `top`. */
static double sy(const ticks *yt, double top, double y)
{
	return top + PANEL_H - (y * 0.5 - yt->lo * 0.5) / half_width(yt->lo, yt->hi) * PANEL_H;
}

/* The frame, grid lines, ticks and labels of one panel. */
static void put_axes(weft__outbuf *ob, const geometry *g, const ticks *yt, double top,
		     const char *y_title, const char *x_title)
{
	char label[64];
	put_fmt(ob, "<rect x=\"%d\" y=\"%.1f\" width=\"%.1f\" height=\"%d\" fill=\"none\" "
		"stroke=\"#444\" stroke-width=\"1\"/>\n", LEFT, top, g->plot_w, PANEL_H);
	for (int i = 0; i < g->xt.count; i++) {
		double v = tick_value(&g->xt, i), x = sx(g, v);
		tick_label(&g->xt, v, label, sizeof label);
		put_fmt(ob, "<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
			"stroke=\"#ddd\"/><line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
			"stroke=\"#444\"/><text class=\"tick\" x=\"%.1f\" y=\"%.1f\" "
			"text-anchor=\"middle\">%s</text>\n", x, top, x, top + PANEL_H, x,
			top + PANEL_H, x, top + PANEL_H + 5, x, top + PANEL_H + 18, label);
	}
	for (int i = 0; i < yt->count; i++) {
		double v = tick_value(yt, i), y = sy(yt, top, v);
		tick_label(yt, v, label, sizeof label);
		put_fmt(ob, "<line class=\"grid\" x1=\"%d\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
			"stroke=\"#ddd\"/><line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" "
			"stroke=\"#444\"/><text class=\"tick\" x=\"%d\" y=\"%.1f\" "
			"text-anchor=\"end\">%s</text>\n", LEFT, y, LEFT + g->plot_w, y, LEFT - 5, y,
			LEFT, y, LEFT - 8, y + 4, label);
	}
	put_fmt(ob, "<text class=\"axis-title\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">",
		LEFT + g->plot_w / 2, top + PANEL_H + 40);
	put_xml_text(ob, x_title);
	put_fmt(ob, "</text>\n<text class=\"axis-title\" transform=\"translate(%d %.1f) "
		"rotate(-90)\" text-anchor=\"middle\">", 22, top + PANEL_H / 2.0);
	put_xml_text(ob, y_title);
	weft__outbuf_puts(ob, "</text>\n");
}

/* The stroke attributes of line i. */
static void put_stroke(weft__outbuf *ob, size_t i)
{
	put_fmt(ob, "stroke=\"%s\" stroke-width=\"1.3\"", colours[i % COLOURS]);
	const char *dash = dashes[(i / COLOURS) % DASHES];
	if (dash[0] != '\0')
		put_fmt(ob, " stroke-dasharray=\"%s\"", dash);
}

/* One series: a polyline (empty when it has no point), a dot when alone. */
static void put_series(weft__outbuf *ob, const weft__svg_chart *c, const geometry *g,
		       const ticks *yt, double top, const weft__svg_series *s, size_t i)
{
	weft__outbuf_puts(ob, "<polyline class=\"series\" data-line=\"");
	put_xml_text(ob, c->line_names[i]);
	weft__outbuf_puts(ob, "\" fill=\"none\" ");
	put_stroke(ob, i);
	weft__outbuf_puts(ob, " stroke-linejoin=\"round\" points=\"");
	for (size_t k = 0; k < s->n; k++)
		put_fmt(ob, "%s%.1f,%.1f", k ? " " : "", sx(g, s->x[k] - c->x_offset),
			sy(yt, top, s->y[k])); /* a tenth of a pixel is plenty */
	weft__outbuf_puts(ob, "\"><title>");
	put_xml_text(ob, c->line_names[i]);
	weft__outbuf_puts(ob, "</title></polyline>\n");
	if (s->n == 1)
		put_fmt(ob, "<circle class=\"marker\" cx=\"%.2f\" cy=\"%.2f\" r=\"3\" fill=\"%s\"/>\n",
			sx(g, s->x[0] - c->x_offset), sy(yt, top, s->y[0]), colours[i % COLOURS]);
}

/* One panel: its group with the axes and its series. */
static void put_panel(weft__outbuf *ob, const weft__svg_chart *c, const geometry *g,
		      const weft__svg_panel *panel, double top)
{
	double lo, hi;
	ticks yt;
	y_range(c, panel, &lo, &hi);
	make_ticks(lo, hi, &yt);
	weft__outbuf_puts(ob, "<g class=\"panel\" id=\"");
	put_xml_text(ob, panel->id);
	weft__outbuf_puts(ob, "\">\n");
	put_axes(ob, g, &yt, top, panel->y_title, c->x_title);
	for (size_t i = 0; i < c->line_count; i++)
		put_series(ob, c, g, &yt, top, &panel->series[i], i);
	weft__outbuf_puts(ob, "</g>\n");
}

/* The legend: a sample stroke and the name of each line (the first ones). */
static void put_legend(weft__outbuf *ob, const weft__svg_chart *c, const geometry *g)
{
	double x = LEFT + g->plot_w + 18;
	size_t shown = c->line_count > MAX_LEGEND ? MAX_LEGEND - 1 : c->line_count;
	weft__outbuf_puts(ob, "<g class=\"legend\">\n");
	for (size_t i = 0; i < shown; i++) {
		double y = TITLE_H + 8 + 18.0 * (double)i;
		put_fmt(ob, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" ", x, y, x + 26, y);
		put_stroke(ob, i);
		put_fmt(ob, "/><text class=\"legend-name\" x=\"%.1f\" y=\"%.1f\">", x + 32, y + 4);
		put_xml_text(ob, c->line_names[i]);
		weft__outbuf_puts(ob, "</text>\n");
	}
	if (shown < c->line_count)
		put_fmt(ob, "<text class=\"legend-more\" x=\"%.1f\" y=\"%.1f\">... and %zu more</text>\n",
			x, TITLE_H + 12 + 18.0 * (double)shown, c->line_count - shown);
	weft__outbuf_puts(ob, "</g>\n");
}

/* The document: header, title, panels, legend, notes. */
static void put_chart(weft__outbuf *ob, const weft__svg_chart *c)
{
	geometry g;
	double lo, hi;
	int height = TITLE_H + (int)c->panel_count * (PANEL_H + PANEL_GAP) +
		     (int)c->note_count * NOTE_H + 12;
	g.plot_w = CHART_W - LEFT - LEGEND_W;
	x_range(c, &lo, &hi);
	make_ticks(lo, hi, &g.xt);
	put_fmt(ob, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
		"viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"12\">\n"
		"<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
		"<text class=\"title\" x=\"%d\" y=\"26\" font-size=\"15\">", CHART_W, height,
		CHART_W, height, LEFT);
	put_xml_text(ob, c->title);
	weft__outbuf_puts(ob, "</text>\n");
	for (size_t p = 0; p < c->panel_count; p++)
		put_panel(ob, c, &g, &c->panels[p], TITLE_H + (double)p * (PANEL_H + PANEL_GAP));
	put_legend(ob, c, &g);
	double y = TITLE_H + (double)c->panel_count * (PANEL_H + PANEL_GAP);
	for (size_t i = 0; i < c->note_count; i++) {
		put_fmt(ob, "<text class=\"note\" x=\"%d\" y=\"%.1f\" fill=\"#555\">", LEFT,
			y + (double)i * NOTE_H);
		put_xml_text(ob, c->notes[i]);
		weft__outbuf_puts(ob, "</text>\n");
	}
	weft__outbuf_puts(ob, "</svg>\n");
}

/* The whole document through one output buffer, flushed at the end. */
int weft__svg_chart_write(int fd, const weft__svg_chart *chart)
{
	weft__outbuf ob;
	int rc = weft__outbuf_init(&ob, fd, 1u << 20);
	if (rc < 0)
		return rc;
	put_chart(&ob, chart);
	rc = weft__outbuf_flush(&ob);
	weft__outbuf_destroy(&ob);
	return rc;
}
