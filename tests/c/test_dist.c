/* SPDX-License-Identifier: MIT */
/*
 * test_dist.c - the work shared among ranks (weft/dist.h), without MPI:
 *   - weft_trace_share() deals every stream to exactly one part, the
 *     parts' bytes within one stream of each other, the same every time;
 *     weft_trace_share_among() the streams of a mask alone; the deal by
 *     groups (weft__share_deal_groups) keeps each group in one part;
 *   - a rank's report that does not parse (cut, garbage, a huge length)
 *     is an error that names the rank, never a crash or an allocation of
 *     what the bytes claim;
 *   - a second rank that reports what rank 0 counted doubles every count
 *     (the merge adds by code, whatever the order of the table);
 *   - an error of another rank is the command's, with its message.
 * The other ranks are played by a dist whose gather hands rank 0 its own
 * report and a crafted one for rank 1 (tests/mpi/ runs real ranks).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "testutil.h"
#include "weft/weft.h"

/* What "rank 1" reports: a copy of rank 0's report, cut or spoiled. */
enum fake_mode { FAKE_SAME, FAKE_EMPTY, FAKE_CUT, FAKE_GARBAGE, FAKE_HUGE, FAKE_FAILED };

typedef struct fake_ranks {
	enum fake_mode mode;
	size_t cut;        /* FAKE_CUT: bytes of the report kept */
	int gathers;
} fake_ranks;

/* A report: status, message, no diagnostics, the result's bytes. */
static void report(weft__pack *p, int status, const char *message, const weft__pack *result)
{
	weft__pack_u64(p, (uint64_t)(int64_t)status);
	weft__pack_text(p, message);
	weft__pack_u64(p, 0);
	weft__pack_bytes(p, result->data, result->len);
}

static int fake_gather(void *user, const void *bytes, size_t len, void **all, size_t *lens)
{
	fake_ranks *f = user;
	weft__pack other = { 0 };
	f->gathers++;
	switch (f->mode) {
	case FAKE_SAME:
	case FAKE_CUT:
		other.len = f->mode == FAKE_CUT && f->cut < len ? f->cut : len;
		other.data = malloc(other.len + 1);
		REQUIRE(other.data != NULL);
		memcpy(other.data, bytes, other.len);
		break;
	case FAKE_EMPTY: {
		weft__pack no_codes = { 0 };
		weft__pack_u64(&no_codes, 0); /* counts of no code */
		report(&other, 0, "", &no_codes);
		weft__pack_release(&no_codes);
		break;
	}
	case FAKE_GARBAGE:
		for (int i = 0; i < 64; i++)
			weft__pack_u64(&other, 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1));
		break;
	case FAKE_HUGE:
		weft__pack_u64(&other, 0);
		weft__pack_u64(&other, UINT64_MAX / 2); /* a message of 2^63 bytes */
		break;
	case FAKE_FAILED: {
		weft__pack none = { 0 };
		report(&other, WEFT_EFORMAT, "stream.obs: byte 12: expected an event", &none);
		break;
	}
	}
	REQUIRE(!other.failed);
	*all = malloc(len + other.len + 1);
	REQUIRE(*all != NULL);
	memcpy(*all, bytes, len);
	memcpy((char *)*all + len, other.data, other.len);
	lens[0] = len;
	lens[1] = other.len;
	weft__pack_release(&other);
	return 0;
}

static int fake_broadcast(void *user, void *bytes, size_t len)
{
	(void)user, (void)bytes, (void)len; /* rank 0's bytes are already here */
	return 0;
}

/* Opens `rel` as rank 0 of 2 ranks played by `f`. */
static weft_trace *open_shared(const char *rel, const weft_dist *dist)
{
	weft_open_options o;
	weft_open_options_init(&o);
	o.dist = dist;
	weft_trace *t = NULL;
	int rc = weft_trace_open(tu_data_path(rel), &o, &t);
	if (rc < 0)
		fprintf(stderr, "open %s: %s\n", rel, weft_last_error());
	REQUIRE(rc == 0);
	return t;
}

/* The parts of every stream: one each, bytes balanced, deterministic. */
static void test_share(const char *rel)
{
	weft_trace *t = NULL;
	REQUIRE(weft_trace_open(tu_data_path(rel), NULL, &t) == 0);
	size_t n = weft_trace_stream_count(t);
	uint64_t largest = 0;
	for (size_t i = 0; i < n; i++)
		if (weft_trace_stream(t, i)->file_size > largest)
			largest = weft_trace_stream(t, i)->file_size;
	for (int parts = 1; parts <= 5; parts++) {
		int *owner = calloc(n ? n : 1, sizeof *owner);
		uint8_t *sel = malloc(n ? n : 1), *again = malloc(n ? n : 1);
		uint64_t lo = UINT64_MAX, hi = 0;
		REQUIRE(owner != NULL && sel != NULL && again != NULL);
		for (int p = 0; p < parts; p++) {
			int64_t count = weft_trace_share(t, p, parts, sel);
			CHECK(count >= 0);
			CHECK(weft_trace_share(t, p, parts, again) == count);
			CHECK(memcmp(sel, again, n) == 0);
			uint64_t bytes = 0;
			for (size_t i = 0; i < n; i++) {
				owner[i] += sel[i];
				bytes += sel[i] ? weft_trace_stream(t, i)->file_size + 1 : 0;
			}
			lo = bytes < lo ? bytes : lo;
			hi = bytes > hi ? bytes : hi;
		}
		for (size_t i = 0; i < n; i++)
			CHECK(owner[i] == 1);
		if (!weft_trace_shared_files(t) && (size_t)parts <= n)
			CHECK(hi - lo <= largest + 1);
		free(owner);
		free(sel);
		free(again);
	}
	uint8_t one;
	CHECK(weft_trace_share(t, 2, 2, &one) == WEFT_EINVAL);
	CHECK(weft_trace_share(t, 0, 0, &one) == WEFT_EINVAL);
	weft_trace_free(t);
}

/*
 * weft_trace_share_among(): the streams of a mask (every other one), each
 * to one part, none outside it; without a mask, weft_trace_share()'s deal
 * where the streams have files of their own; ROSS's streams are dealt too.
 */
static void test_share_among(const char *rel)
{
	weft_trace *t = NULL;
	REQUIRE(weft_trace_open(tu_data_path(rel), NULL, &t) == 0);
	size_t n = weft_trace_stream_count(t);
	uint8_t *among = malloc(n ? n : 1), *sel = malloc(n ? n : 1), *all = malloc(n ? n : 1);
	int *owner = calloc(n ? n : 1, sizeof *owner);
	REQUIRE(among != NULL && sel != NULL && all != NULL && owner != NULL);
	for (size_t i = 0; i < n; i++)
		among[i] = i % 2 == 0;
	const int parts = 3;
	int64_t total = 0;
	for (int p = 0; p < parts; p++) {
		int64_t count = weft_trace_share_among(t, among, p, parts, sel);
		CHECK(count >= 0);
		total += count;
		for (size_t i = 0; i < n; i++) {
			CHECK(!sel[i] || among[i]);
			owner[i] += sel[i];
		}
		CHECK(weft_trace_share_among(t, NULL, p, parts, sel) >= 0);
		if (!weft_trace_shared_files(t)) {
			CHECK(weft_trace_share(t, p, parts, all) >= 0);
			CHECK(memcmp(sel, all, n) == 0);
		}
	}
	for (size_t i = 0; i < n; i++)
		CHECK(owner[i] == among[i]);
	CHECK(total == (int64_t)((n + 1) / 2));
	CHECK(weft_trace_share_among(t, among, 3, 3, sel) == WEFT_EINVAL);
	CHECK(weft_trace_share_among(NULL, among, 0, 3, sel) == WEFT_EINVAL);
	free(among);
	free(sel);
	free(all);
	free(owner);
	weft_trace_free(t);
}

/* Counts of event code `code` over the trace (0 when absent). */
static uint64_t count_of(const weft_counts *c, const char *code)
{
	weft_count_row rows[512];
	size_t n = weft_counts_rows(c, WEFT_COUNTS_ALL, rows, 512);
	for (size_t i = 0; i < n && i < 512; i++)
		if (strcmp(rows[i].code, code) == 0)
			return rows[i].count;
	return 0;
}

/* Rank 1 reporting rank 0's counts doubles them; spoiled reports fail. */
static void test_reports(void)
{
	const char *rel = "ovni/v3/mpi-func-4procs/ovni";
	weft_trace *alone = NULL;
	weft_counts *serial = NULL;
	REQUIRE(weft_trace_open(tu_data_path(rel), NULL, &alone) == 0);
	REQUIRE(weft_counts_compute(alone, NULL, &serial) == 0);

	fake_ranks f = { .mode = FAKE_SAME };
	weft_dist dist = { .rank = 0, .ranks = 2, .gather = fake_gather,
			   .broadcast = fake_broadcast, .user = &f };
	weft_trace *t = open_shared(rel, &dist);
	/* Opening is collective: the other ranks' books (core/metafs.c),
	 * then every rank's status. */
	CHECK(f.gathers == 2);
	weft_counts *c = NULL;
	uint8_t *mine = calloc(weft_trace_stream_count(t), 1);
	REQUIRE(mine != NULL);
	CHECK(weft_trace_share(t, 0, 2, mine) > 0);
	free(mine);
	/* Rank 0 counts its share, "rank 1" nothing; then the same counts. */
	f.mode = FAKE_EMPTY;
	REQUIRE(weft_counts_compute(t, NULL, &c) == 0);
	CHECK(f.gathers == 3);
	uint64_t share_total = weft_counts_total(c), share_ohx = count_of(c, "OHx");
	CHECK(share_total > 0 && share_total < weft_counts_total(serial));
	weft_counts_free(c);
	f.mode = FAKE_SAME;
	REQUIRE(weft_counts_compute(t, NULL, &c) == 0);
	CHECK_EQ_U64(weft_counts_total(c), 2 * share_total);
	CHECK_EQ_U64(count_of(c, "OHx"), 2 * share_ohx);
	weft_counts_free(c);

	static const enum fake_mode spoiled[] = { FAKE_CUT, FAKE_GARBAGE, FAKE_HUGE };
	for (size_t k = 0; k < sizeof spoiled / sizeof *spoiled; k++) {
		for (size_t cut = 0; cut < (spoiled[k] == FAKE_CUT ? 64 : 1); cut += 3) {
			f = (fake_ranks){ .mode = spoiled[k], .cut = cut };
			c = NULL;
			CHECK(weft_counts_compute(t, NULL, &c) == WEFT_EFORMAT);
			CHECK(c == NULL);
			CHECK(strstr(weft_last_error(), "rank 1 sent a report that does not parse") !=
			      NULL);
		}
	}
	f = (fake_ranks){ .mode = FAKE_FAILED };
	CHECK(weft_counts_compute(t, NULL, &c) == WEFT_EFORMAT);
	CHECK(strstr(weft_last_error(), "rank 1: stream.obs: byte 12: expected an event") != NULL);
	weft_trace_free(t);

	weft_dist whole = { .rank = 0, .ranks = 1 };
	weft_open_options o;
	weft_open_options_init(&o);
	o.dist = &whole; /* one rank: not shared, nothing exchanged */
	REQUIRE(weft_trace_open(tu_data_path(rel), &o, &t) == 0);
	REQUIRE(weft_counts_compute(t, NULL, &c) == 0);
	CHECK_EQ_U64(weft_counts_total(c), weft_counts_total(serial));
	CHECK_EQ_U64(count_of(c, "OHx"), count_of(serial, "OHx"));
	weft_counts_free(c);
	weft_trace_free(t);
	weft_counts_free(serial);
	weft_trace_free(alone);
}

/* Unpacking never reads past the end, whatever the bytes claim. */
static void test_unpack_bounds(void)
{
	weft__pack p = { 0 };
	weft__pack_u64(&p, 7);
	weft__pack_text(&p, "abc");
	weft__pack_bytes(&p, "xyz", 3);
	REQUIRE(!p.failed);
	for (size_t len = 0; len <= p.len; len++) {
		weft__unpack u = { .data = p.data, .len = len };
		uint64_t v = weft__unpack_u64(&u);
		const char *t = weft__unpack_text(&u);
		size_t n;
		const void *b = weft__unpack_bytes(&u, &n);
		if (len == p.len) {
			CHECK(!u.bad && v == 7 && strcmp(t, "abc") == 0 && n == 3 &&
			      memcmp(b, "xyz", 3) == 0);
		} else {
			CHECK(u.bad);
		}
	}
	/* A text without its NUL is refused. */
	weft__pack q = { 0 };
	weft__pack_bytes(&q, "abc", 3);
	weft__unpack u = { .data = q.data, .len = q.len };
	CHECK(strcmp(weft__unpack_text(&u), "") == 0 && u.bad);
	weft__pack_release(&p);
	weft__pack_release(&q);
}

/*
 * weft__share_deal_groups() (the emulation's looms): the streams of a
 * group in one part, every selected stream in exactly one, the groups'
 * bytes balanced within the largest group; streams whose group id is
 * past the streams are one group; a group per stream is the plain deal.
 */
static void test_share_groups(const char *rel)
{
	weft_trace *t = NULL;
	REQUIRE(weft_trace_open(tu_data_path(rel), NULL, &t) == 0);
	size_t n = weft_trace_stream_count(t);
	REQUIRE(n >= 4);
	uint32_t *groups = malloc(n * sizeof *groups), *own = malloc(n * sizeof *own);
	uint8_t *sel = malloc(n), *plain = malloc(n);
	int *part_of = malloc(n * sizeof *part_of);
	REQUIRE(groups != NULL && own != NULL && sel != NULL && plain != NULL &&
		part_of != NULL);
	for (size_t i = 0; i < n; i++) {
		groups[i] = i + 1 == n ? UINT32_MAX : (uint32_t)(i / 2); /* pairs, a loner */
		own[i] = (uint32_t)i;
	}
	groups[0] = (uint32_t)n + 7; /* past the streams: with the loner */
	for (int parts = 1; parts <= 4; parts++) {
		uint64_t bytes[4] = { 0 }, group_bytes = 0, largest = 0;
		for (size_t i = 0; i < n; i++)
			part_of[i] = -1;
		for (int p = 0; p < parts; p++) {
			int64_t count = weft__share_deal_groups(t, NULL, groups, p, parts, sel);
			CHECK(count >= 0);
			for (size_t i = 0; i < n; i++)
				if (sel[i]) {
					CHECK(part_of[i] == -1);
					part_of[i] = p;
					bytes[p] += weft_trace_stream(t, i)->file_size + 1;
				}
			CHECK(weft__share_deal_groups(t, NULL, own, p, parts, sel) ==
			      weft__share_deal(t, NULL, p, parts, plain));
			CHECK(memcmp(sel, plain, n) == 0);
		}
		for (size_t i = 0; i < n; i++) {
			CHECK(part_of[i] >= 0);
			for (size_t k = 0; k < n; k++) {
				uint32_t gi = groups[i] < n ? groups[i] : (uint32_t)n;
				uint32_t gk = groups[k] < n ? groups[k] : (uint32_t)n;
				if (gi == gk)
					CHECK(part_of[i] == part_of[k]);
			}
		}
		for (size_t g = 0; g <= n; g++, group_bytes = 0) {
			for (size_t i = 0; i < n; i++)
				if ((groups[i] < n ? groups[i] : n) == g)
					group_bytes += weft_trace_stream(t, i)->file_size + 1;
			largest = group_bytes > largest ? group_bytes : largest;
		}
		uint64_t lo = UINT64_MAX, hi = 0;
		for (int p = 0; p < parts; p++) {
			lo = bytes[p] < lo ? bytes[p] : lo;
			hi = bytes[p] > hi ? bytes[p] : hi;
		}
		if ((size_t)parts <= n / 2)
			CHECK(hi - lo <= largest);
	}
	/* a mask: its streams alone, still by groups */
	uint8_t *among = calloc(n, 1);
	REQUIRE(among != NULL);
	among[0] = among[2] = among[3] = 1;
	int64_t total = 0;
	for (int p = 0; p < 2; p++) {
		total += weft__share_deal_groups(t, among, groups, p, 2, sel);
		for (size_t i = 0; i < n; i++)
			CHECK(!sel[i] || among[i]);
		CHECK(sel[0] == sel[3]); /* one group: past the streams, and the loner */
	}
	CHECK(total == 3);
	free(among);
	free(groups);
	free(own);
	free(sel);
	free(plain);
	free(part_of);
	weft_trace_free(t);
}

int main(void)
{
	test_share("ovni/v3/mpi-func-4procs/ovni");
	test_share("ovni/v3/nosv-parallel-tasks/ovni");
	test_share("heph/heph_sample.bin.log");
	test_share("ross/phold-evtrace-full/np1/ross-stats-evtrace.bin");
	test_share_among("ovni/v3/nosv-parallel-tasks/ovni");
	test_share_among("ross/phold-evtrace-full/np1/ross-stats-evtrace.bin");
	test_share_groups("ovni/v3/mpi-func-4procs/ovni");
	test_share_groups("ovni/v3/bench-valid-small/ovni");
	test_reports();
	test_unpack_bounds();
	return tu_result();
}
