/* SPDX-License-Identifier: MIT */
/*
 * analysis/ross_plot.c - weft_ross_plot_*(): the efficiency and the
 * events processed of each PE (or KP) of a ROSS run over virtual or real
 * time, as a self-contained SVG with two panels (outputs/svg_plot.c);
 * what `weft plot` draws.
 *
 * One sampling-mode file is plotted (gvt, rt or vt: the first present,
 * or the `mode` option). One pass over the run; each line keeps at most
 * 1000 buckets of consecutive samples (their minimum and maximum: at
 * most 2000 points), so memory and the SVG stay small whatever the run's
 * size. Samples at the end of the simulation (virtual time DBL_MAX) have
 * no place on a virtual-time axis: they are left out and a note says so;
 * NaN and infinite values are left out the same way.
 */
#include <float.h>
#include <inttypes.h>
#include <stdarg.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/ross_analysis.h"
#include "outputs/svg_plot.h"

/*
 * Buckets per line (2 points each), and of all lines of a panel: many
 * lines get fewer points each, so that memory and the SVG stay bounded.
 */
#define MAX_BUCKETS 1000
#define PANEL_BUCKETS 100000

/* ---- Lines ------------------------------------------------------------------------- */

/* One sample's values on a line. */
typedef struct plot_point {
	double x, vt, eff, events;
} plot_point;

/* One PE or KP: its name and its two decimated series. */
typedef struct plot_line {
	char *name;
	weft__decimator eff, events;
	plot_point pending;  /* dedup: the sample held back */
	int has_pending;
} plot_line;

struct weft_ross_plot {
	weft_trace *trace;
	weft_ross_plot_options options;
	const weft_node *root;
	plot_line *lines;
	size_t line_count;
	int32_t *line_of_stream;
	int real_x;
	int dedup;               /* the option, on a vt file */
	double time_scale;
	double x_min;
	int have_x;
	uint64_t samples, end_skipped, bad_x, bad_eff, bad_events, duplicates;
	int fields_known;
	uint32_t layout_size;    /* payload size the field indexes are for */
	int vt_field, rt_field, eff_field, events_field;
	weft_field fields[64];
};

typedef struct weft_ross_plot plot_state;

/* 1 when the file node matches --mode (its name or kind), or is the default. */
static int root_matches(const weft_node *root, const char *mode, const char *want_kind)
{
	char kind[16];
	weft__ross_file_kind(root, kind, sizeof kind);
	if (mode != NULL)
		return strcmp(root->name, mode) == 0 || strcmp(kind, mode) == 0;
	return strcmp(kind, want_kind) == 0;
}

/* 1 when a node of the plotted level is a stream under `root`. */
static int is_line_node(const weft_trace *trace, const weft_node *node,
			const weft_node *root, int kp)
{
	return node->stream >= 0 && strcmp(node->kind, kp ? "kp" : "pe") == 0 &&
	       weft__ross_root(trace, node->id) == root;
}

/*
 * The file to plot: --mode, else the first gvt, rt or vt file with lines;
 * on a real-time axis the real-time file first (its samples are taken in
 * real time; the others' are not evenly spaced there).
 */
static const weft_node *pick_root(const weft_trace *trace, const weft_ross_plot_options *s)
{
	static const char *const virtual_order[] = { "gvt", "rt", "vt" };
	static const char *const real_order[] = { "rt", "gvt", "vt" };
	const char *const *order = s->real_x ? real_order : virtual_order;
	size_t n = weft_trace_node_count(trace);
	for (size_t k = 0; k < (s->mode != NULL ? 1 : 3); k++)
		for (size_t i = 0; i < n; i++) {
			const weft_node *root = weft_trace_node(trace, i);
			if (root->parent != WEFT_NO_PARENT || !root_matches(root, s->mode, order[k]))
				continue;
			for (size_t j = 0; j < n; j++)
				if (is_line_node(trace, weft_trace_node(trace, j), root, s->kp))
					return root;
			if (s->mode != NULL)
				return root;
		}
	return NULL;
}

/* One line per stream of the level under the root, named by its path below it. */
static int make_lines(plot_state *p, int kp)
{
	size_t streams = weft_trace_stream_count(p->trace), n = weft_trace_node_count(p->trace);
	size_t root_len = strlen(p->root->path);
	size_t lines = 0;
	for (size_t i = 0; i < n; i++)
		lines += is_line_node(p->trace, weft_trace_node(p->trace, i), p->root, kp);
	p->line_of_stream = malloc((streams ? streams : 1) * sizeof *p->line_of_stream);
	p->lines = calloc(lines ? lines : 1, sizeof *p->lines);
	if (p->line_of_stream == NULL || p->lines == NULL)
		return WEFT_ENOMEM;
	for (size_t i = 0; i < streams; i++)
		p->line_of_stream[i] = -1;
	for (size_t i = 0; i < n; i++) {
		const weft_node *node = weft_trace_node(p->trace, i);
		if (!is_line_node(p->trace, node, p->root, kp))
			continue;
		plot_line *l = &p->lines[p->line_count];
		if ((l->name = strdup(node->path + root_len + 1)) == NULL)
			return WEFT_ENOMEM;
		p->line_of_stream[node->stream] = (int32_t)p->line_count++;
	}
	size_t per_line = PANEL_BUCKETS / (p->line_count ? p->line_count : 1);
	per_line = per_line > MAX_BUCKETS ? MAX_BUCKETS : per_line < 32 ? 32 : per_line;
	for (size_t i = 0; i < p->line_count; i++) {
		weft__decimator_init(&p->lines[i].eff, per_line);
		weft__decimator_init(&p->lines[i].events, per_line);
	}
	return 0;
}

/* ---- Samples ----------------------------------------------------------------------- */

/* Finds the fields of a layout by name (once: PE and KP have one layout each). */
static void learn_fields(plot_state *p, const weft_event *ev, int n)
{
	p->vt_field = p->rt_field = p->eff_field = p->events_field = -1;
	for (int k = 0; k < n; k++) {
		const weft_field *f = &p->fields[k];
		if (weft__field_is(f, "virtual_time"))
			p->vt_field = k;
		else if (weft__field_is(f, "real_time"))
			p->rt_field = k;
		else if (weft__field_is(f, "efficiency"))
			p->eff_field = k;
		else if (weft__field_is(f, "events_processed"))
			p->events_field = k;
	}
	p->layout_size = ev->payload_size;
	p->fields_known = 1;
}

/* 1 for a finite value (not NaN, not infinite). */
static int is_finite(double v)
{
	return v - v == 0;
}

/* The x of a sample, or 0 when it has none to plot (counted). */
static int sample_x(plot_state *p, double *x)
{
	if (p->vt_field < 0 || p->rt_field < 0)
		return 0;
	double vt = p->fields[p->vt_field].v.f, rt = p->fields[p->rt_field].v.f;
	if (!p->real_x && (vt == DBL_MAX || vt > DBL_MAX)) {
		p->end_skipped++;
		return 0;
	}
	*x = p->real_x ? rt * p->time_scale : vt;
	if (!is_finite(*x)) {
		p->bad_x++;
		return 0;
	}
	if (!p->have_x || *x < p->x_min)
		p->x_min = *x;
	p->have_x = 1;
	return 1;
}

/* A point into its line's two series; values that are no number are counted. */
static void add_point(plot_state *p, plot_line *l, const plot_point *pt)
{
	if (is_finite(pt->eff))
		weft__decimator_add(&l->eff, pt->x, pt->eff);
	else
		p->bad_eff++;
	if (is_finite(pt->events))
		weft__decimator_add(&l->events, pt->x, pt->events);
	else
		p->bad_events++;
}

/*
 * dedup: ROSS's vt sampling may write several samples of one entity at
 * the same virtual time (docs/ross.md); each replaces the one held back,
 * and a sample at another virtual time plots the held one first.
 */
static void hold_point(plot_state *p, plot_line *l, const plot_point *pt)
{
	if (l->has_pending && pt->vt == l->pending.vt)
		p->duplicates++;
	else if (l->has_pending)
		add_point(p, l, &l->pending);
	l->pending = *pt;
	l->has_pending = 1;
}

/* One sample of a plotted stream into its line's two series. */
static void plot_sample(plot_state *p, const weft_event *ev)
{
	int32_t line = p->line_of_stream[ev->stream];
	if (line < 0)
		return;
	int n = weft_event_fields(p->trace, ev, p->fields, 64);
	if (n < 0 || n > 64)
		return;
	if (!p->fields_known || ev->payload_size != p->layout_size)
		learn_fields(p, ev, n);
	plot_point pt;
	p->samples++;
	if (!sample_x(p, &pt.x))
		return;
	pt.vt = p->fields[p->vt_field].v.f;
	pt.eff = p->eff_field >= 0 ? weft__field_number(&p->fields[p->eff_field]) : NAN;
	pt.events = p->events_field >= 0 ? weft__field_number(&p->fields[p->events_field]) : NAN;
	if (p->dedup)
		hold_point(p, &p->lines[line], &pt);
	else
		add_point(p, &p->lines[line], &pt);
}

/* One pass: the PE (or KP) records of the run, the file's streams kept. */
static int read_samples(plot_state *p, int kp)
{
	weft_filter filter;
	weft_cursor *cursor;
	const weft_event *ev;
	memset(&filter, 0, sizeof filter);
	filter.code_pattern = kp ? "KP" : "PE";
	int rc = weft_cursor_create(p->trace, &filter, &cursor);
	if (rc < 0)
		return rc;
	while ((rc = weft_cursor_next(cursor, &ev)) == 1)
		plot_sample(p, ev);
	weft_cursor_free(cursor);
	for (size_t i = 0; i < p->line_count; i++)
		if (p->lines[i].has_pending)
			add_point(p, &p->lines[i], &p->lines[i].pending);
	return rc;
}

/* ---- The chart ----------------------------------------------------------------------- */

/* Points of every line, for the two panels (freed by free_points). */
typedef struct chart_points {
	weft__svg_series *eff, *events;
	double *buf;
} chart_points;

/* Decimated points of each line's two series, in one allocation. */
static int collect_points(const plot_state *p, chart_points *cp)
{
	size_t total = 0;
	for (size_t i = 0; i < p->line_count; i++)
		total += 2 * (p->lines[i].eff.count + p->lines[i].events.count);
	cp->eff = calloc(p->line_count + 1, sizeof *cp->eff);
	cp->events = calloc(p->line_count + 1, sizeof *cp->events);
	cp->buf = malloc((2 * total + 1) * sizeof *cp->buf);
	if (cp->eff == NULL || cp->events == NULL || cp->buf == NULL)
		return WEFT_ENOMEM;
	double *at = cp->buf;
	for (size_t i = 0; i < p->line_count; i++) {
		const plot_line *l = &p->lines[i];
		double *x = at, *y = at + 2 * l->eff.count;
		cp->eff[i] = (weft__svg_series){ x, y, weft__decimator_points(&l->eff, x, y) };
		at += 4 * l->eff.count;
		x = at;
		y = at + 2 * l->events.count;
		cp->events[i] = (weft__svg_series){ x, y,
						    weft__decimator_points(&l->events, x, y) };
		at += 4 * l->events.count;
	}
	return 0;
}

/* Frees what collect_points() allocated. */
static void free_points(chart_points *cp)
{
	free(cp->eff);
	free(cp->events);
	free(cp->buf);
}

/* Adds a note line (formatted) to the chart's notes. */
static void add_note(char notes[][200], size_t *count, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void add_note(char notes[][200], size_t *count, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(notes[*count], 200, fmt, ap);
	va_end(ap);
	(*count)++;
}

/* The notes under the chart: what was left out, decimation, the x origin. */
static size_t make_notes(const plot_state *p, char notes[][200])
{
	size_t n = 0;
	uint64_t decimated = 0;
	for (size_t i = 0; i < p->line_count; i++)
		decimated += p->lines[i].eff.per_bucket > 1 || p->lines[i].events.per_bucket > 1;
	if (p->end_skipped > 0)
		add_note(notes, &n, "%" PRIu64 " sample%s taken at the end of the simulation "
			 "(virtual time DBL_MAX) %s not shown on this virtual-time axis.",
			 p->end_skipped, p->end_skipped == 1 ? "" : "s",
			 p->end_skipped == 1 ? "is" : "are");
	if (p->bad_x + p->bad_eff + p->bad_events > 0)
		add_note(notes, &n, "Left out: %" PRIu64 " samples with a NaN or infinite time, "
			 "%" PRIu64 " NaN or infinite efficiencies, %" PRIu64 " event counts.",
			 p->bad_x, p->bad_eff, p->bad_events);
	if (p->dedup)
		add_note(notes, &n, "--dedup: %" PRIu64 " duplicate sample%s (same virtual time "
			 "as the next of the line) left out.", p->duplicates,
			 p->duplicates == 1 ? "" : "s");
	else if (p->options.dedup)
		add_note(notes, &n, "--dedup merges the samples of vt files only: none here.");
	if (decimated > 0)
		add_note(notes, &n, "%" PRIu64 " line%s decimated: minimum and maximum of each "
			 "bucket of consecutive samples (at most %zu points per line).", decimated,
			 decimated == 1 ? "" : "s", 2 * p->lines[0].eff.cap);
	if (p->real_x && p->have_x)
		add_note(notes, &n, "Real time 0 is the first sample, at %.9f s.", p->x_min);
	if (p->samples == 0)
		add_note(notes, &n, "No samples to plot.");
	return n;
}

/* A stream of the plotted file (its file name is the title's). */
static int32_t first_stream(const plot_state *p)
{
	size_t n = weft_trace_stream_count(p->trace);
	for (size_t i = 0; i < n; i++)
		if (p->line_of_stream[i] >= 0)
			return (int32_t)i;
	return 0;
}

/* Builds the chart from the lines and writes it to fd. */
static int write_chart(const plot_state *p, int fd)
{
	chart_points cp;
	char notes_text[6][200];
	const char *notes[6];
	char title[512], kind[16];
	memset(&cp, 0, sizeof cp);
	int rc = collect_points(p, &cp);
	const char **line_names = malloc((p->line_count + 1) * sizeof *line_names);
	if (rc == 0 && line_names == NULL)
		rc = WEFT_ENOMEM;
	if (rc < 0) {
		free_points(&cp);
		free(line_names);
		return rc;
	}
	for (size_t i = 0; i < p->line_count; i++)
		line_names[i] = p->lines[i].name;
	size_t note_count = make_notes(p, notes_text);
	for (size_t i = 0; i < note_count; i++)
		notes[i] = notes_text[i];
	weft__ross_file_kind(p->root, kind, sizeof kind);
	const char *root_file = p->line_count > 0 ?
		weft_trace_stream(p->trace, (size_t)first_stream(p))->file : p->root->name;
	snprintf(title, sizeof title, "ROSS %s samples (%s) per %s: %s", kind, root_file,
		 p->options.kp ? "KP" : "PE", weft_trace_path(p->trace));
	weft__svg_panel panels[2] = {
		{ "efficiency", "efficiency (%)", cp.eff },
		{ "events", "events processed per sample", cp.events },
	};
	weft__svg_chart chart = {
		title, p->real_x ? "real time since the first sample (s)" : "virtual time (GVT)",
		line_names, p->line_count, panels, 2, notes, note_count,
		p->real_x && p->have_x ? p->x_min : 0,
	};
	rc = weft__svg_chart_write(fd, &chart);
	free_points(&cp);
	free(line_names);
	return rc;
}

/* ---- The analysis ------------------------------------------------------------------------ */

void weft_ross_plot_options_init(weft_ross_plot_options *options)
{
	memset(options, 0, sizeof *options);
}

void weft_ross_plot_free(weft_ross_plot *p)
{
	if (p == NULL)
		return;
	for (size_t i = 0; p->lines != NULL && i < p->line_count; i++) {
		free(p->lines[i].name);
		weft__decimator_free(&p->lines[i].eff);
		weft__decimator_free(&p->lines[i].events);
	}
	free(p->lines);
	free(p->line_of_stream);
	free(p);
}

/* The file to plot and its lines; WEFT_ENOTFOUND (message) when none. */
int weft_ross_plot_create(weft_trace *trace, const weft_ross_plot_options *options,
			  weft_ross_plot **out)
{
	weft_ross_plot *p;
	int rc = weft_ross_analysable(trace);

	*out = NULL;
	if (rc < 0)
		return rc;
	if ((p = calloc(1, sizeof *p)) == NULL)
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory for a plot");
	if (options != NULL)
		p->options = *options;
	p->trace = trace;
	p->real_x = p->options.real_x;
	double rate = weft__ross_clock_rate(trace);
	p->time_scale = rate > 0 ? 1e9 / rate : 1;
	if ((p->root = pick_root(trace, &p->options)) == NULL) {
		if (p->options.mode != NULL)
			rc = weft__error(WEFT_ENOTFOUND, NULL, WEFT_NO_OFFSET, "no file '%s' in the "
					 "run (gvt, rt, vt, or a file node's name from 'weft info')",
					 p->options.mode);
		else
			rc = weft__error(WEFT_ENOTFOUND, NULL, WEFT_NO_OFFSET, "no gvt, rt or vt "
					 "file with %s samples in the run", p->options.kp ? "KP" : "PE");
	} else if ((rc = make_lines(p, p->options.kp)) < 0) {
		weft__error(rc, NULL, WEFT_NO_OFFSET, "out of memory for the lines of a plot");
	} else {
		char kind[16];
		weft__ross_file_kind(p->root, kind, sizeof kind);
		p->dedup = p->options.dedup && strcmp(kind, "vt") == 0;
	}
	if (rc < 0) {
		weft_ross_plot_free(p);
		return rc;
	}
	*out = p;
	return 0;
}

int weft_ross_plot_read(weft_ross_plot *plot)
{
	return read_samples(plot, plot->options.kp);
}

int weft_ross_plot_write(const weft_ross_plot *plot, int fd)
{
	return write_chart(plot, fd);
}
