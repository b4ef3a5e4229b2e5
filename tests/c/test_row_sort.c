/* SPDX-License-Identifier: MIT */
/*
 * test_row_sort.c - the external merge sort of outputs/row_sort.c: rows
 * sorted by key and stable for equal keys, in memory, with a few spilled
 * runs, and with more runs than one merge takes (an intermediate pass);
 * rows longer than the budget; the double keys' order; stopping early.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "outputs/row_sort.h"
#include "testutil.h"

/* What the emit callback saw: the rows must come as "<key> <index>". */
typedef struct seen {
	uint64_t count;
	uint64_t last_key, last_index;
	uint64_t long_rows;
	int bad;
	uint64_t stop_after;
} seen;

/* Checks the order of each row as it comes. */
static int check_row(void *ctx, const char *row, size_t len)
{
	seen *s = ctx;
	unsigned long long key, index;
	char text[64];
	size_t n = len < sizeof text - 1 ? len : sizeof text - 1;
	memcpy(text, row, n);
	text[n] = '\0';
	if (sscanf(text, "%llu %llu", &key, &index) != 2) {
		s->bad++;
		return 1;
	}
	if (s->count > 0 && (key < s->last_key ||
			     (key == s->last_key && index <= s->last_index)))
		s->bad++;
	if (len > 1000)
		s->long_rows++;
	s->last_key = key;
	s->last_index = index;
	s->count++;
	return s->stop_after != 0 && s->count >= s->stop_after ? 7 : 0;
}

/* Adds `rows` rows with keys in [0, keys) and padding of `pad` bytes. */
static void fill(weft__row_sorter *s, uint64_t rows, uint64_t keys, size_t pad)
{
	static char row[300000];
	uint64_t state = 12345;
	for (uint64_t i = 0; i < rows; i++) {
		state = state * 6364136223846793005ull + 1442695040888963407ull;
		uint64_t key = (state >> 33) % keys;
		int n = snprintf(row, sizeof row, "%llu %llu ", (unsigned long long)key,
				 (unsigned long long)i);
		size_t extra = i % 1000 == 999 ? 200000 : pad; /* some rows longer than the budget */
		memset(row + n, 'x', extra);
		row[n + extra] = '\n';
		CHECK(weft__row_sorter_add(s, key, row, (size_t)n + extra + 1) == 0);
	}
}

/* One sort: rows, key range, budget; checks order, count, runs. */
static void sort_case(uint64_t rows, uint64_t keys, uint64_t budget, size_t pad,
		      uint64_t min_runs, uint64_t min_passes)
{
	weft__row_sorter *s;
	weft__row_sort_stats st;
	seen sn;
	memset(&sn, 0, sizeof sn);
	REQUIRE(weft__row_sorter_create(budget, NULL, &s) == 0);
	fill(s, rows, keys, pad);
	CHECK(weft__row_sorter_finish(s, check_row, &sn) == 0);
	weft__row_sorter_stats(s, &st);
	CHECK_EQ_U64(sn.count, rows);
	CHECK_EQ_U64(sn.bad, 0);
	CHECK_EQ_U64(st.rows, rows);
	CHECK(st.runs >= min_runs);
	CHECK(st.merge_passes >= min_passes);
	CHECK_EQ_U64(sn.long_rows, rows / 1000);
	printf("rows %llu budget %llu: %llu runs, %llu passes, %llu bytes spilled\n",
	       (unsigned long long)rows, (unsigned long long)budget,
	       (unsigned long long)st.runs, (unsigned long long)st.merge_passes,
	       (unsigned long long)st.spilled_bytes);
	weft__row_sorter_free(s);
}

/* emit returning non-zero stops the merge and is returned. */
static void test_stop(void)
{
	weft__row_sorter *s;
	seen sn;
	memset(&sn, 0, sizeof sn);
	sn.stop_after = 10;
	REQUIRE(weft__row_sorter_create(64 << 10, NULL, &s) == 0);
	fill(s, 20000, 100, 20);
	CHECK(weft__row_sorter_finish(s, check_row, &sn) == 7);
	CHECK_EQ_U64(sn.count, 10);
	weft__row_sorter_free(s);
}

/* Keys of doubles sort as the values. */
static void test_double_keys(void)
{
	static const double v[] = { -1e300, -2.5, -0.0, 0.0, 1e-300, 1, 2.5, 1e300 };
	for (size_t i = 0; i + 1 < sizeof v / sizeof v[0]; i++)
		CHECK(weft__sort_key_double(v[i]) < weft__sort_key_double(v[i + 1]));
	double inf = 1e308 * 10, nan = inf - inf;
	CHECK(weft__sort_key_double(-inf) < weft__sort_key_double(-1e300));
	CHECK(weft__sort_key_double(inf) > weft__sort_key_double(1e300));
	CHECK(weft__sort_key_double(nan) > weft__sort_key_double(inf));
}

int main(void)
{
	sort_case(5000, 50, 64 << 20, 30, 0, 0);      /* in memory */
	sort_case(100000, 1000, 1 << 20, 30, 3, 0);   /* a few runs */
	sort_case(400000, 1u << 30, 64 << 10, 40, 257, 1); /* > 256 runs: a pass */
	test_stop();
	test_double_keys();
	return tu_result();
}
