/* SPDX-License-Identifier: MIT */
/*
 * outputs/paraver/paraver_pcf_row.c - the .pcf (states, their colours,
 * event types and their values, from the label table) and the .row (the
 * names of the tasks and threads).
 */
#include <stdio.h>
#include <stdlib.h>

#include "outputs/paraver/paraver_internal.h"

/* ---- Writing the .pcf ---------------------------------------------------------------------- */

static const char PCF_HEAD[] =
	"DEFAULT_OPTIONS\n\n"
	"LEVEL               THREAD\n"
	"UNITS               NANOSEC\n"
	"LOOK_BACK           100\n"
	"SPEED               1\n"
	"FLAG_ICONS          ENABLED\n"
	"NUM_OF_STATE_COLORS 1000\n"
	"YMAX_SCALE          37\n\n\n"
	"DEFAULT_SEMANTIC\n\n"
	"THREAD_FUNC         State As Is\n\n\n";

/* Colours of states 1, 2, ... (state 0, "Not running", is light grey). */
static const unsigned char STATE_COLORS[][3] = {
	{ 38, 110, 200 }, { 220, 90, 40 }, { 60, 160, 70 }, { 150, 70, 170 },
	{ 230, 180, 30 }, { 40, 170, 170 }, { 200, 60, 120 }, { 120, 120, 40 },
	{ 90, 90, 220 }, { 170, 110, 60 }, { 100, 200, 130 }, { 240, 130, 160 }
};

/* Order of labels in the .pcf: by namespace, then number. */
static int compare_labels(const void *a, const void *b)
{
	const label *x = *(const label *const *)a, *y = *(const label *const *)b;

	if (x->number_ns != y->number_ns)
		return x->number_ns < y->number_ns ? -1 : 1;
	return x->number < y->number ? -1 : (x->number > y->number);
}

/* Writes "<number> <text>\n", the number left-aligned in 10 columns. */
static void put_numbered(weft__outbuf *ob, int64_t number, const char *text)
{
	char num[32];

	snprintf(num, sizeof num, "%-10lld ", (long long)number);
	weft__outbuf_puts(ob, num);
	weft__outbuf_puts(ob, text);
	weft__outbuf_puts(ob, "\n");
}

/* The STATES and STATES_COLOR blocks, from the sorted labels. */
static void put_states(weft__outbuf *ob, label *const *sorted, size_t n)
{
	char line[64];

	weft__outbuf_puts(ob, "STATES\n");
	put_numbered(ob, 0, "Not running");
	for (size_t i = 0; i < n; i++)
		if (sorted[i]->number_ns == NS_STATES)
			put_numbered(ob, sorted[i]->number, sorted[i]->text);
	weft__outbuf_puts(ob, "\n\nSTATES_COLOR\n");
	put_numbered(ob, 0, "{200, 200, 200}");
	for (size_t i = 0; i < n; i++) {
		if (sorted[i]->number_ns != NS_STATES)
			continue;
		const unsigned char *c = STATE_COLORS[(sorted[i]->number - 1) % 12];
		snprintf(line, sizeof line, "{%u, %u, %u}", c[0], c[1], c[2]);
		put_numbered(ob, sorted[i]->number, line);
	}
	weft__outbuf_puts(ob, "\n\n");
}

/*
 * One EVENT_TYPE block per type, with the VALUES of its namespace (the
 * labels of namespace `type` follow the types in the sorted order, in
 * the same order as the types).
 */
static void put_types(weft__outbuf *ob, label *const *sorted, size_t n, uint64_t *types)
{
	size_t v = 0;

	for (size_t i = 0; i < n && sorted[i]->number_ns == NS_TYPES; i++) {
		const label *t = sorted[i];
		weft__outbuf_puts(ob, "EVENT_TYPE\n0    ");
		put_numbered(ob, t->number, t->text);
		weft__outbuf_puts(ob, "VALUES\n");
		while (v < n && (sorted[v]->number_ns == NS_TYPES ||
				 (int64_t)sorted[v]->number_ns < t->number))
			v++;
		for (; v < n && sorted[v]->number_ns != NS_STATES &&
		       (int64_t)sorted[v]->number_ns == t->number; v++)
			put_numbered(ob, sorted[v]->number, sorted[v]->text);
		weft__outbuf_puts(ob, "\n\n");
		(*types)++;
	}
}

/* The .pcf: options, states, then every event type with its values. */
int weft__pv_write_pcf(weft__paraver_writer *w)
{
	size_t n = w->labels.count;
	label **sorted = malloc((n ? n : 1) * sizeof *sorted);
	int rc = sorted ? weft__outbuf_init(&w->out, w->pcf_fd, 64u << 10) : WEFT_ENOMEM;

	if (rc < 0) {
		free(sorted);
		return rc == WEFT_ENOMEM && sorted == NULL
			       ? weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET,
					     "paraver: out of memory (.pcf)")
			       : rc;
	}
	for (size_t i = 0; i < n; i++)
		sorted[i] = &w->labels.items[i];
	qsort(sorted, n, sizeof *sorted, compare_labels);
	weft__outbuf_puts(&w->out, PCF_HEAD);
	put_states(&w->out, sorted, n);
	put_types(&w->out, sorted, n, &w->stats.types);
	free(sorted);
	rc = weft__outbuf_flush(&w->out);
	weft__outbuf_destroy(&w->out);
	return rc;
}

/* ---- Writing the .row ------------------------------------------------------------------------ */

/* Order of rows: by task, then thread number (= declaration in the task). */
static int compare_rows(const void *a, const void *b)
{
	const pv_row *x = a, *y = b;

	if (x->task != y->task)
		return x->task < y->task ? -1 : 1;
	return x->thread < y->thread ? -1 : (x->thread > y->thread);
}

/* "LEVEL <name> SIZE <n>\n". */
static void put_level(weft__outbuf *ob, const char *name, size_t n)
{
	char line[96];

	snprintf(line, sizeof line, "LEVEL %s SIZE %zu\n", name, n);
	weft__outbuf_puts(ob, line);
}

/* The .row: no CPUs (no resource model), one node, tasks, threads. */
int weft__pv_write_row(weft__paraver_writer *w)
{
	int rc = weft__outbuf_init(&w->out, w->row_fd, 64u << 10);

	if (rc < 0)
		return rc;
	qsort(w->rows, w->row_count, sizeof *w->rows, compare_rows);
	put_level(&w->out, "CPU", 0);
	weft__outbuf_puts(&w->out, "\n");
	put_level(&w->out, "NODE", 1);
	weft__outbuf_puts(&w->out, "node 1\n\n");
	put_level(&w->out, "APPL", 1);
	weft__outbuf_puts(&w->out, "weft\n\n");
	put_level(&w->out, "TASK", w->task_count);
	for (size_t i = 0; i < w->task_count; i++) {
		weft__outbuf_puts(&w->out, w->tasks[i].name);
		weft__outbuf_puts(&w->out, "\n");
	}
	weft__outbuf_puts(&w->out, "\n");
	put_level(&w->out, "THREAD", w->row_count);
	for (size_t i = 0; i < w->row_count; i++) {
		weft__outbuf_puts(&w->out, w->rows[i].name);
		weft__outbuf_puts(&w->out, "\n");
	}
	rc = weft__outbuf_flush(&w->out);
	weft__outbuf_destroy(&w->out);
	return rc;
}
