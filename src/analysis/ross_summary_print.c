/* SPDX-License-Identifier: MIT */
/*
 * analysis/ross_summary_print.c - the report of `weft summary` (ROSS):
 * the totals of each sampling mode and PE that ross_summary.c read, as
 * aligned text tables or as one JSON document (docs/ross.md, Summary).
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "analysis/ross_summary.h"

/* Short names of the phases, for the text table. */
static const char *const phase_short[PHASES] = {
	"net_read", "net_other", "gvt", "fossil", "aborted", "processed",
	"pq", "rollback", "cancel_q", "avl", "buddy", "lz4",
};

/* ---- Totals ------------------------------------------------------------------------- */

/* 100 * (1 - rolled_back / (processed - rolled_back)); 0 when undefined. */
static double efficiency(uint64_t processed, uint64_t rolled_back)
{
	if (processed == rolled_back)
		return 0;
	double net = (double)processed - (double)rolled_back;
	return 100.0 * (1.0 - (double)rolled_back / net);
}

/*
 * The totals of all PEs of a section: sums, except what every PE counts
 * of the same collective operations (all-reduces, like GVTs): each PE
 * takes part in each of them, so the run did as many as one PE, the
 * largest count.
 */
static void section_total(const section *sec, pe_total *all)
{
	memset(all, 0, sizeof *all);
	for (size_t i = 0; i < sec->pe_count; i++) {
		const pe_total *t = &sec->pes[i];
		all->samples += t->samples;
		all->has |= t->has;
		for (int k = 0; k < SL_COUNTERS; k++)
			if (k != SL_ALL_REDUCE)
				all->counter[k] += t->counter[k];
		if (t->counter[SL_ALL_REDUCE] > all->counter[SL_ALL_REDUCE])
			all->counter[SL_ALL_REDUCE] = t->counter[SL_ALL_REDUCE];
		for (int k = 0; k < PHASES; k++)
			weft__fsum_merge(&all->phase[k], &t->phase[k]);
		if (t->num_gvts > all->num_gvts)
			all->num_gvts = t->num_gvts;
		if (t->pq_max > all->pq_max)
			all->pq_max = t->pq_max;
	}
}

/* PEs in id order. */
static int compare_pes(const void *a, const void *b)
{
	const pe_total *x = a, *y = b;
	return (x->pe > y->pe) - (x->pe < y->pe);
}

/* 1 when the totals have a slot (the source samples have that field). */
static int has_slot(const pe_total *t, int slot)
{
	return (t->has >> slot) & 1u;
}

/* ---- Text output ---------------------------------------------------------------------- */

/* Cells of a table printed with aligned (right-justified) columns. */
typedef struct text_table {
	size_t cols;
	char **cells;
	size_t count, cap;
} text_table;

/* Appends one formatted cell (rows fill left to right). */
static void cell(text_table *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void cell(text_table *t, const char *fmt, ...)
{
	char buf[64];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	if (t->count == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 64;
		char **bigger = realloc(t->cells, cap * sizeof *bigger);
		if (bigger == NULL)
			return;
		t->cells = bigger;
		t->cap = cap;
	}
	if ((t->cells[t->count] = strdup(buf)) != NULL)
		t->count++;
}

/* Prints the table indented by two spaces, then frees its cells. */
static void print_text_table(FILE *out, text_table *t)
{
	size_t width[32] = { 0 };
	for (size_t i = 0; i < t->count; i++) {
		size_t n = strlen(t->cells[i]);
		if (n > width[i % t->cols])
			width[i % t->cols] = n;
	}
	for (size_t i = 0; i < t->count; i++) {
		fprintf(out, "%s%*s", i % t->cols == 0 ? "  " : "  ", (int)width[i % t->cols],
			t->cells[i]);
		if (i % t->cols == t->cols - 1 || i + 1 == t->count)
			fprintf(out, "\n");
		free(t->cells[i]);
	}
	free(t->cells);
	memset(t, 0, sizeof *t);
}

/* A counter cell, or "-" when the source samples lack it. */
static void counter_cell(text_table *t, const pe_total *p, int slot)
{
	if (has_slot(p, slot))
		cell(t, "%" PRIu64, p->counter[slot]);
	else
		cell(t, "-");
}

/* One line of the counters table (a PE or "all"). */
static void counters_row(text_table *t, const char *name, const pe_total *p)
{
	uint64_t processed = p->counter[SL_PROCESSED], rb = p->counter[SL_ROLLED_BACK];
	cell(t, "%s", name);
	cell(t, "%" PRIu64, p->samples);
	cell(t, "%" PRIu64, processed);
	counter_cell(t, p, SL_ABORTED);
	cell(t, "%" PRIu64, rb);
	cell(t, "%" PRId64, (int64_t)(processed - rb));
	cell(t, "%.2f", efficiency(processed, rb));
	counter_cell(t, p, SL_TOTAL_RB);
	counter_cell(t, p, SL_SECONDARY_RB);
	if (has_slot(p, SL_NUM_GVTS))
		cell(t, "%" PRIu64, p->num_gvts);
	else
		cell(t, "-");
}

/* One line of the phase times table. */
static void phases_row(text_table *t, const char *name, const pe_total *p, double scale)
{
	cell(t, "%s", name);
	for (int k = 0; k < PHASES; k++)
		cell(t, "%.6f", weft__fsum_value(&p->phase[k]) * scale);
}

/* The heading line of a section: file, samples, PEs, time spans. */
static void print_section_head(const summary *s, const section *sec, const pe_total *all)
{
	if (sec->source == LV_OTHER) {
		fprintf(s->out, "\n%s samples (%s): none\n", sec->kind, sec->file);
		return;
	}
	fprintf(s->out, "\n%s samples (%s%s%s): %" PRIu64 " %s samples of %zu PE%s", sec->kind, sec->file,
	       strcmp(sec->root->name, sec->kind) != 0 ? ", " : "",
	       strcmp(sec->root->name, sec->kind) != 0 ? sec->root->name : "",
	       all->samples, weft__ross_level_codes[sec->source], sec->pe_count,
	       sec->pe_count == 1 ? "" : "s");
	if (sec->source != LV_PE && sec->pe_count > 0)
		fprintf(s->out, " (summed per PE)");
	fprintf(s->out, "\n");
	if (sec->have_rt)
		fprintf(s->out, "  real time %.9f .. %.9f s (%.6f s)\n", sec->rt_first * s->time_scale,
		       sec->rt_last * s->time_scale, (sec->rt_last - sec->rt_first) * s->time_scale);
	if (sec->have_vt || sec->end_samples > 0) {
		fprintf(s->out, "  virtual time up to %.17g", sec->have_vt ? sec->vt_last : 0.0);
		if (sec->end_samples > 0)
			fprintf(s->out, "; %" PRIu64 " samples at the end (virtual time DBL_MAX)",
			       sec->end_samples);
		fprintf(s->out, "\n");
	}
}

/* vt files: the duplicate counts per level. */
static void print_duplicates(const summary *s, const section *sec)
{
	fprintf(s->out, "  duplicates (same entity and virtual time as its previous sample): "
	       "PE %" PRIu64 ", KP %" PRIu64 ", LP %" PRIu64 ", model %" PRIu64 "\n",
	       sec->dup[LV_PE], sec->dup[LV_KP], sec->dup[LV_LP], sec->dup[LV_MODEL]);
	uint64_t earlier = sec->earlier[LV_PE] + sec->earlier[LV_KP] + sec->earlier[LV_LP] +
			   sec->earlier[LV_MODEL];
	if (earlier > 0)
		fprintf(s->out, "  samples before their entity's latest virtual time: %" PRIu64 "\n", earlier);
	if (s->dedup)
		fprintf(s->out, "  --dedup: %" PRIu64 " duplicate %s samples left out\n", sec->dropped,
		       weft__ross_level_codes[sec->source]);
}

/* The two tables of a section. */
static void print_section(const summary *s, const section *sec)
{
	pe_total all;
	text_table t = { 10, NULL, 0, 0 };
	section_total(sec, &all);
	print_section_head(s, sec, &all);
	if (strcmp(sec->kind, "vt") == 0)
		print_duplicates(s, sec);
	if (sec->pe_count == 0)
		return;
	const char *heads[] = { "pe", "samples", "processed", "aborted", "rolled_back", "net",
				"efficiency", "rollbacks", "secondary", "gvts" };
	for (size_t i = 0; i < 10; i++)
		cell(&t, "%s", heads[i]);
	for (size_t i = 0; i < sec->pe_count; i++) {
		char name[24];
		snprintf(name, sizeof name, "%" PRIu64, sec->pes[i].pe);
		counters_row(&t, name, &sec->pes[i]);
	}
	counters_row(&t, "all", &all);
	print_text_table(s->out, &t);
	if (!has_slot(&all, SL_PHASE0))
		return;
	fprintf(s->out, "  time per engine phase (s):\n");
	t.cols = PHASES + 1;
	cell(&t, "pe");
	for (int k = 0; k < PHASES; k++)
		cell(&t, "%s", phase_short[k]);
	for (size_t i = 0; i < sec->pe_count; i++) {
		char name[24];
		snprintf(name, sizeof name, "%" PRIu64, sec->pes[i].pe);
		phases_row(&t, name, &sec->pes[i], s->time_scale);
	}
	phases_row(&t, "all", &all, s->time_scale);
	print_text_table(s->out, &t);
}

/*
 * 1 when `node` is a file of the run that holds no engine samples (model,
 * evtrace); its kind in kind[16].
 */
static int other_file(const weft_node *node, char kind[16])
{
	if (node->parent != WEFT_NO_PARENT)
		return 0;
	weft__ross_file_kind(node, kind, 16);
	return strcmp(kind, "gvt") != 0 && strcmp(kind, "rt") != 0 && strcmp(kind, "vt") != 0;
}

/*
 * The next file of the run from node *at on that holds no engine samples
 * (its kind in kind[16]), *at moved past it; NULL after the last.
 */
static const weft_node *next_other_file(const summary *s, size_t *at, char kind[16])
{
	size_t n = weft_trace_node_count(s->trace);
	while (*at < n) {
		const weft_node *node = weft_trace_node(s->trace, (*at)++);
		if (other_file(node, kind))
			return node;
	}
	return NULL;
}

/* Files that are not engine samples (model, evtrace): named with their records. */
static void print_other_files(const summary *s)
{
	char kind[16], file[256];
	size_t at = 0;
	for (const weft_node *node; (node = next_other_file(s, &at, kind)) != NULL;) {
		json_t *meta = json_loads(node->metadata_json, 0, NULL);
		json_t *records = json_object_get(meta, "records");
		fprintf(s->out, "\n%s (%s): %" JSON_INTEGER_FORMAT " records, not engine samples\n", kind,
		       weft__ross_file_of_root(node, file, sizeof file),
		       json_is_integer(records) ? json_integer_value(records) : 0);
		json_decref(meta);
	}
}

/* The whole text report: every section, then the other files. */
static void print_text(const summary *s)
{
	fprintf(s->out, "run: %s\n", weft_trace_path(s->trace));
	if (s->section_count == 0)
		fprintf(s->out, "\nno engine samples (no gvt, rt or vt file)\n");
	for (size_t i = 0; i < s->section_count; i++)
		print_section(s, &s->sections[i]);
	print_other_files(s);
}

/* ---- JSON output ----------------------------------------------------------------------- */

/* A counter, or null when the source samples lack it. */
static json_t *json_counter(const pe_total *p, int slot)
{
	return has_slot(p, slot) ? json_integer((json_int_t)p->counter[slot]) : json_null();
}

/* The object of one PE (or of all PEs: `pe` < 0). */
static json_t *json_totals(const pe_total *p, int64_t pe, double scale)
{
	uint64_t processed = p->counter[SL_PROCESSED], rb = p->counter[SL_ROLLED_BACK];
	json_t *o = json_object();
	if (pe >= 0)
		json_object_set_new(o, "pe", json_integer(pe));
	json_object_set_new(o, "samples", json_integer((json_int_t)p->samples));
	for (int k = 0; k < SL_COUNTERS; k++)
		json_object_set_new(o, weft__ross_slot_names[k], json_counter(p, k));
	json_object_set_new(o, "net_events", json_integer((json_int_t)processed - (json_int_t)rb));
	json_object_set_new(o, "efficiency", json_real(efficiency(processed, rb)));
	json_object_set_new(o, "primary_rollbacks",
			    has_slot(p, SL_TOTAL_RB) && has_slot(p, SL_SECONDARY_RB) ?
			    json_integer((json_int_t)p->counter[SL_TOTAL_RB] -
					 (json_int_t)p->counter[SL_SECONDARY_RB]) : json_null());
	json_object_set_new(o, "num_gvts", has_slot(p, SL_NUM_GVTS) ?
			    json_integer((json_int_t)p->num_gvts) : json_null());
	json_object_set_new(o, "priority_queue_size_max", has_slot(p, SL_PQ_SIZE) ?
			    json_integer((json_int_t)p->pq_max) : json_null());
	json_t *phases = has_slot(p, SL_PHASE0) ? json_object() : json_null();
	for (int k = 0; k < PHASES && json_is_object(phases); k++)
		json_object_set_new(phases, weft__ross_slot_names[SL_PHASE0 + k],
				    json_real(weft__fsum_value(&p->phase[k]) * scale));
	json_object_set_new(o, "phase_times", phases);
	return o;
}

/* Per-level counts of a vt section as an object. */
static json_t *json_levels(const uint64_t *counts)
{
	json_t *o = json_object();
	for (int l = 0; l < LV_OTHER; l++)
		json_object_set_new(o, weft__ross_level_codes[l], json_integer((json_int_t)counts[l]));
	return o;
}

/* The object of one sampling-mode file. */
static json_t *json_section(const summary *s, const section *sec)
{
	pe_total all;
	section_total(sec, &all);
	json_t *o = json_object();
	json_object_set_new(o, "mode", json_string(sec->kind));
	json_object_set_new(o, "name", json_string(sec->root->name));
	json_object_set_new(o, "file", json_string(sec->file));
	json_object_set_new(o, "source", sec->source == LV_OTHER ? json_null() :
			    json_string(weft__ross_level_codes[sec->source]));
	json_object_set_new(o, "real_time_first", sec->have_rt ?
			    json_real(sec->rt_first * s->time_scale) : json_null());
	json_object_set_new(o, "real_time_last", sec->have_rt ?
			    json_real(sec->rt_last * s->time_scale) : json_null());
	json_object_set_new(o, "virtual_time_last", sec->have_vt ? json_real(sec->vt_last) :
			    json_null());
	json_object_set_new(o, "end_samples", json_integer((json_int_t)sec->end_samples));
	if (strcmp(sec->kind, "vt") == 0) {
		json_object_set_new(o, "duplicates", json_levels(sec->dup));
		json_object_set_new(o, "earlier", json_levels(sec->earlier));
		json_object_set_new(o, "dropped", json_integer((json_int_t)sec->dropped));
	}
	json_t *pes = json_array();
	for (size_t i = 0; i < sec->pe_count; i++)
		json_array_append_new(pes, json_totals(&sec->pes[i], (int64_t)sec->pes[i].pe,
						       s->time_scale));
	json_object_set_new(o, "pes", pes);
	json_object_set_new(o, "all", json_totals(&all, -1, s->time_scale));
	return o;
}

/* The other files (model, evtrace) with their record counts. */
static json_t *json_other_files(const summary *s)
{
	json_t *a = json_array();
	char kind[16], file[256];
	size_t at = 0;
	for (const weft_node *node; (node = next_other_file(s, &at, kind)) != NULL;) {
		json_t *meta = json_loads(node->metadata_json, 0, NULL);
		json_t *o = json_object();
		json_object_set_new(o, "kind", json_string(kind));
		json_object_set_new(o, "name", json_string(node->name));
		json_object_set_new(o, "file", json_string(weft__ross_file_of_root(node, file, sizeof file)));
		json_object_set(o, "records", json_object_get(meta, "records") ?
				json_object_get(meta, "records") : json_null());
		json_array_append_new(a, o);
		json_decref(meta);
	}
	return a;
}

/* The whole report as one JSON object on one line. */
static int print_json(const summary *s)
{
	json_t *root = json_object();
	json_object_set_new(root, "run", json_string(weft_trace_path(s->trace)));
	double rate = weft__ross_clock_rate(s->trace);
	json_object_set_new(root, "clock_rate", rate > 0 ? json_real(rate) : json_null());
	json_object_set_new(root, "dedup", json_boolean(s->dedup));
	json_t *modes = json_array();
	for (size_t i = 0; i < s->section_count; i++)
		json_array_append_new(modes, json_section(s, &s->sections[i]));
	json_object_set_new(root, "modes", modes);
	json_object_set_new(root, "other_files", json_other_files(s));
	char *text = json_dumps(root, JSON_COMPACT | JSON_REAL_PRECISION(17));
	json_decref(root);
	if (text == NULL)
		return WEFT_ENOMEM;
	fprintf(s->out, "%s\n", text);
	free(text);
	return 0;
}

int weft__ross_summary_print(summary *s, int json)
{
	/* (A file without engine samples has no PE table: NULL, which
	 * qsort() must not get even for 0 elements.) */
	for (size_t i = 0; i < s->section_count; i++)
		if (s->sections[i].pe_count > 1)
			qsort(s->sections[i].pes, s->sections[i].pe_count, sizeof(pe_total),
			      compare_pes);
	if (json)
		return print_json(s);
	print_text(s);
	return 0;
}
