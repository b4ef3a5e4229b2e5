/* SPDX-License-Identifier: MIT */
/*
 * test_pallas_durations.c - weft_pallas_grammar_sequence_durations(): for
 * every sequence of every thread of every Pallas trace of tests/data, the
 * stored durations (and exclusive durations) read a chunk at a time have
 * as many values as the sequence occurs (its summary's count), add up to
 * weft_pallas_grammar_sequence_totals(), and their minimum and maximum are
 * the summary's; chunks of every size give the same vector; reading past
 * the end copies nothing; an unknown sequence is WEFT_EINVAL.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "weft/pallas_grammar.h"
#include "weft/weft.h"

/* What a vector read in chunks of `chunk` values adds up to. */
typedef struct vec_stats {
	uint64_t count, sum, min, max;
} vec_stats;

/*
 * Reads the (exclusive) durations of sequence i in chunks of `chunk`
 * values into `all` (room for `cap`), returning their count, sum, min
 * and max.
 */
static vec_stats read_chunks(weft_pallas_grammar *g, size_t i, int exclusive, size_t chunk,
			     uint64_t *all, uint64_t cap)
{
	vec_stats st = {0, 0, UINT64_MAX, 0};
	uint64_t *buf = malloc(chunk * sizeof *buf);
	REQUIRE(buf != NULL);
	for (;;) {
		size_t copied = 99;
		REQUIRE(weft_pallas_grammar_sequence_durations(g, i, exclusive, st.count, buf, chunk,
							       &copied) == 0);
		CHECK(copied <= chunk);
		for (size_t k = 0; k < copied; k++) {
			st.sum += buf[k];
			st.min = buf[k] < st.min ? buf[k] : st.min;
			st.max = buf[k] > st.max ? buf[k] : st.max;
			if (st.count + k < cap)
				all[st.count + k] = buf[k];
		}
		st.count += copied;
		if (copied < chunk)
			break;
	}
	free(buf);
	return st;
}

/* The checks of one vector (durations or exclusive) of sequence i. */
static void check_vector(weft_pallas_grammar *g, size_t i, int exclusive,
			 const weft_pallas_summary *summary, uint64_t total, const char *where)
{
	uint64_t cap = summary->count;
	uint64_t *one = malloc((cap ? cap : 1) * sizeof *one);
	uint64_t *chunked = malloc((cap ? cap : 1) * sizeof *chunked);
	REQUIRE(one != NULL && chunked != NULL);
	vec_stats a = read_chunks(g, i, exclusive, cap + 1, one, cap);
	vec_stats b = read_chunks(g, i, exclusive, 7, chunked, cap);
	if (a.count != summary->count || a.sum != total)
		tu_fail(__FILE__, __LINE__, "%s sequence %zu%s: %llu values adding up to %llu; "
			"the summary counts %llu, the totals say %llu", where, i,
			exclusive ? " (exclusive)" : "", (unsigned long long)a.count,
			(unsigned long long)a.sum, (unsigned long long)summary->count,
			(unsigned long long)total);
	if (a.count > 0 && (a.min != summary->min || a.max != summary->max))
		tu_fail(__FILE__, __LINE__, "%s sequence %zu%s: values %llu .. %llu, the "
			"summary says %llu .. %llu", where, i, exclusive ? " (exclusive)" : "",
			(unsigned long long)a.min, (unsigned long long)a.max,
			(unsigned long long)summary->min, (unsigned long long)summary->max);
	CHECK_EQ_U64(b.count, a.count);
	CHECK_EQ_MEM(chunked, one, (size_t)cap * sizeof *one);
	size_t copied = 99;
	CHECK_EQ_I64(weft_pallas_grammar_sequence_durations(g, i, exclusive, cap, one, 4, &copied), 0);
	CHECK_EQ_U64(copied, 0);
	free(one);
	free(chunked);
}

/* Every sequence of every thread of the trace at `path`; the sequences checked. */
static size_t check_trace(const char *path)
{
	weft_trace *t = NULL;
	size_t checked = 0;
	REQUIRE(weft_trace_open(path, NULL, &t) == 0);
	for (uint32_t s = 0; s < weft_trace_stream_count(t); s++) {
		weft_pallas_grammar *g = NULL;
		REQUIRE(weft_pallas_grammar_open(t, s, &g) == 0);
		char where[600];
		snprintf(where, sizeof where, "%.500s stream %u", path, s);
		for (size_t i = 0; i < weft_pallas_grammar_sequence_count(g); i++) {
			weft_pallas_sequence_info q;
			REQUIRE(weft_pallas_grammar_sequence(g, i, &q) == 0);
			if (q.dead)
				continue;
			uint64_t total = 0, excl = 0;
			REQUIRE(weft_pallas_grammar_sequence_totals(g, i, &total, &excl) == 0);
			/* the copies of the summary: the next call reuses the name's buffer */
			weft_pallas_summary d = q.durations, x = q.exclusive;
			check_vector(g, i, 0, &d, total, where);
			check_vector(g, i, 1, &x, excl, where);
			checked++;
		}
		uint64_t v;
		size_t copied = 99;
		CHECK_EQ_I64(weft_pallas_grammar_sequence_durations(
			g, weft_pallas_grammar_sequence_count(g), 0, 0, &v, 1, &copied), WEFT_EINVAL);
		CHECK_EQ_U64(copied, 0);
		weft_pallas_grammar_free(g);
	}
	weft_trace_free(t);
	return checked;
}

int main(void)
{
	char dir[4096];
	snprintf(dir, sizeof dir, "%s", tu_data_path("pallas"));
	DIR *d = opendir(dir);
	REQUIRE(d != NULL);
	struct dirent *e;
	size_t traces = 0, sequences = 0;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		char path[8192];
		snprintf(path, sizeof path, "%s/%s/trace/main.pallas", dir, e->d_name);
		FILE *f = fopen(path, "rb");
		if (f == NULL)
			continue;
		fclose(f);
		sequences += check_trace(path);
		traces++;
	}
	closedir(d);
	CHECK(traces >= 6);
	CHECK(sequences > 20);
	printf("%zu traces, %zu sequences\n", traces, sequences);
	return tu_result();
}
