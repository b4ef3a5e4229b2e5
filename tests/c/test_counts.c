/* SPDX-License-Identifier: MIT */
/*
 * test_counts.c - weft_counts_compute() (weft/counts.h): the counts of a
 * trace of each format equal what `weft top --streams` prints, the same
 * on one thread and on several, per-stream rows add up to the totals;
 * and weft__trace_reopen(), which the threads use, keeps the format
 * options the trace was opened with (a clock offset table).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "testutil.h"
#include "weft/weft.h"

static const char *const traces[] = {
	"ovni/v3/mpi-func-4procs/ovni",
	"ovni/v3/bench-mix-small/ovni",
	"heph/heph_sample.bin.log",
	"ross/phold-evtrace-full/np1/ross-stats-evtrace.bin",
	"pallas/weft_order/trace",
};

/*
 * Appends the rows of one scope, as `weft top` orders them: code, count,
 * and the intervals and their time, one row per line.
 */
static void print_rows(const weft_counts *c, int64_t stream, const char *indent,
		       char *buf, size_t size)
{
	weft_count_row rows[256];
	size_t n = weft_counts_rows(c, stream, rows, 256);
	REQUIRE(n <= 256);
	for (size_t i = 0; i < n; i++) {
		size_t used = strlen(buf);
		snprintf(buf + used, size - used, "%s%s|%" PRIu64 "|%" PRIu64 "|%" PRIu64 "\n",
			 indent, rows[i].code, rows[i].count, rows[i].timed,
			 rows[i].time_total);
	}
}

/*
 * The text of `weft top --streams` (its aligned columns, a header when it
 * shows times) holds the same rows: each line starts with the code and
 * its count after the padding; the time columns are checked by
 * tests/python/test_top.py against the events.
 */
static void check_top_text(const char *rows, const char *top)
{
	const char *r = rows, *l = top;
	while (*r != '\0' && *l != '\0') {
		const char *r_end = strchr(r, '\n'), *l_end = strchr(l, '\n');
		REQUIRE(r_end != NULL && l_end != NULL);
		if (strstr(l, "name ") == l || strstr(l, "  name ") == l) {
			l = l_end + 1; /* the header of the time columns */
			continue;
		}
		const char *bar = memchr(r, '|', (size_t)(r_end - r));
		size_t head = bar != NULL ? (size_t)(bar - r) : (size_t)(r_end - r);
		CHECK(strncmp(l, r, head) == 0);
		if (bar != NULL) {
			const char *p = l + head;
			while (*p == ' ')
				p++;
			CHECK_EQ_U64(strtoull(p, NULL, 10), strtoull(bar + 1, NULL, 10));
		}
		r = r_end + 1;
		l = l_end + 1;
	}
	CHECK(*r == '\0' && *l == '\0');
}

/* The counts as the rows of `weft top --streams`. */
static char *as_top_text(const weft_trace *t, const weft_counts *c)
{
	size_t size = 1 << 20;
	char *buf = calloc(1, size);
	REQUIRE(buf != NULL);
	print_rows(c, WEFT_COUNTS_ALL, "", buf, size);
	for (size_t i = 0; i < weft_trace_stream_count(t); i++) {
		size_t used = strlen(buf);
		snprintf(buf + used, size - used, "\n%s:\n", weft_trace_stream(t, i)->path);
		print_rows(c, (int64_t)i, "  ", buf, size);
	}
	return buf;
}

static void test_trace(const char *rel)
{
	weft_trace *t;
	weft_counts *one, *many;
	weft_count_options o;
	int status;

	REQUIRE(weft_trace_open(tu_data_path(rel), NULL, &t) == 0);
	weft_count_options_init(&o);
	o.by_stream = 1;
	o.threads = 1;
	REQUIRE(weft_counts_compute(t, &o, &one) == 0);
	o.threads = 3;
	REQUIRE(weft_counts_compute(t, &o, &many) == 0);
	char *a = as_top_text(t, one), *b = as_top_text(t, many);
	char *want = tu_run_weft("top --streams", tu_data_path(rel), &status);
	REQUIRE(want != NULL);
	CHECK_EQ_STR(a, b);
	check_top_text(a, want);

	/* The rows of the streams add up to the totals. */
	weft_count_row rows[256];
	uint64_t sum = 0;
	for (size_t i = 0; i < weft_trace_stream_count(t); i++) {
		size_t n = weft_counts_rows(one, (int64_t)i, rows, 256);
		for (size_t k = 0; k < n; k++)
			sum += rows[k].count;
	}
	CHECK_EQ_U64(sum, weft_counts_total(one));
	CHECK_EQ_U64(weft_counts_total(one), weft_counts_total(many));
	CHECK(weft_counts_total(one) > 0);
	CHECK_EQ_U64(weft_counts_rows(one, (int64_t)weft_trace_stream_count(t), rows, 256), 0);
	CHECK_EQ_U64(weft_counts_rows(one, -2, rows, 256), 0);
	free(a);
	free(b);
	free(want);
	weft_counts_free(one);
	weft_counts_free(many);

	/* Without by_stream: totals only. */
	weft_count_options_init(&o);
	REQUIRE(weft_counts_compute(t, &o, &one) == 0);
	CHECK(weft_counts_rows(one, WEFT_COUNTS_ALL, NULL, 0) > 0);
	CHECK_EQ_U64(weft_counts_rows(one, 0, rows, 256), 0);
	weft_counts_free(one);
	weft_counts_free(NULL);
	weft_trace_free(t);
}

/* A reopened trace has the clock offsets of a table given as an option. */
static void test_reopen_keeps_format_options(void)
{
	char *dir = tu_mkdtemp("counts");
	char table[4096];
	weft_open_options o;
	weft_trace *t, *again;

	REQUIRE(dir != NULL);
	snprintf(table, sizeof table, "%s/clock-offsets.txt", dir);
	FILE *f = fopen(table, "w");
	REQUIRE(f != NULL);
	fputs("rank hostname offset_median offset_mean offset_std\n0 vm 1000 1000.0 0.0\n", f);
	fclose(f);
	weft_open_options_init(&o);
	char value[4096];
	snprintf(value, sizeof value, "%s", table);
	REQUIRE(weft_open_options_set(&o, "ovni.clock_offsets", value) == 0);
	REQUIRE(weft_trace_open(tu_data_path(traces[0]), &o, &t) == 0);
	memset(value, 'x', 16); /* the caller's string is read by open only */
	REQUIRE(weft__trace_reopen(t, 0, &again) == 0);
	CHECK_EQ_I64(weft_trace_stream(t, 0)->clock_offset, 1000);
	CHECK_EQ_I64(weft_trace_stream(again, 0)->clock_offset, 1000);
	CHECK_EQ_U64(weft_trace_format(again), WEFT_FORMAT_OVNI);
	CHECK_EQ_I64(again->options.threads, t->options.threads); /* the caller's choice */
	weft_trace_free(again);
	/* a part's copy is one thread's: its open starts none */
	REQUIRE(weft__trace_reopen(t, 1, &again) == 0);
	CHECK_EQ_I64(again->options.threads, 1);
	CHECK_EQ_I64(weft_trace_stream(again, 0)->clock_offset, 1000);
	weft_trace_free(again);
	weft_trace_free(t);
	CHECK(tu_rmtree(dir) == 0);
	free(dir);
}

int main(void)
{
	for (size_t i = 0; i < sizeof traces / sizeof *traces; i++)
		test_trace(traces[i]);
	test_reopen_keeps_format_options();
	return tu_result();
}
