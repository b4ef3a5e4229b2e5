/* SPDX-License-Identifier: MIT */
/*
 * fuzz_dist_report - the bytes are what another MPI rank sends rank 0
 * (weft/dist.h): the first byte chooses the analysis (counts per stream,
 * profile per stream, every stream's figures, the check, the survey of
 * weft_ovni_sort_with --check), the rest is
 * rank 1's report, handed to rank 0 of two ranks by a gather that plays
 * rank 1 (no MPI). Rank 0 reads its share of an ovni trace (mpi-func-4procs)
 * and merges the report: a report that does not parse must be an error
 * naming the rank, never a crash, an allocation of what a length claims,
 * or a stream index out of the table.
 *
 * WEFT_FUZZ_DIST_SEEDS=DIR (replay only): writes rank 0's own report of
 * each analysis to DIR/<choice>.report, the seeds of this target
 * (tests/data/dist/: a valid report is rank 0's bytes).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"

#define CHOICES 5

/*
 * Rank 1's report (the fuzzer's bytes), and where to keep rank 0's; the
 * first `skip` gathers get `agree` instead (the exchanges before the one
 * fuzzed: opening, and the sort's readiness).
 */
typedef struct other_rank {
	const uint8_t *data;
	size_t size;
	const char *seed_path;
	int skip;
	const struct other_rank *agree;
} other_rank;

static int gather(void *user, const void *bytes, size_t len, void **all, size_t *lens)
{
	other_rank *o = user;
	if (o->skip > 0) {
		o->skip--;
		return gather((void *)o->agree, bytes, len, all, lens);
	}
	if (o->seed_path != NULL) {
		FILE *f = fopen(o->seed_path, "wb");
		if (f != NULL) {
			fputc(0, f); /* replaced by the caller's choice byte */
			fwrite(bytes, 1, len, f);
			fclose(f);
		}
	}
	*all = malloc(len + o->size + 1);
	if (*all == NULL)
		return WEFT_ENOMEM;
	memcpy(*all, bytes, len);
	if (o->size > 0)
		memcpy((char *)*all + len, o->data, o->size);
	lens[0] = len;
	lens[1] = o->size;
	return 0;
}

static int broadcast(void *user, void *bytes, size_t len)
{
	(void)user, (void)bytes, (void)len; /* rank 0's bytes stay */
	return 0;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fz_copy_seed("ovni/v3/mpi-func-4procs/ovni", "ovni");
	return 0;
}

/* Runs analysis `choice` on rank 0 of two, with rank 1's report `o`. */
static void run(int choice, other_rank *o)
{
	weft_dist dist = { .rank = 0, .ranks = 2, .gather = gather, .broadcast = broadcast,
			   .user = o };
	weft_open_options open;
	weft_open_options_init(&open);
	open.dist = &dist;
	open.threads = 1;
	weft_trace *t = NULL;
	/* The open is collective too: rank 1 agrees (an empty report fails). */
	other_rank agree = { NULL, 0, NULL, 0, NULL };
	static const uint8_t ok[33] = { 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0,
					0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 };
	agree.data = ok, agree.size = sizeof ok;
	dist.user = &agree;
	if (weft_trace_open(fz_path("ovni"), &open, &t) < 0)
		return;
	dist.user = o;
	if (choice == 0) {
		weft_count_options co;
		weft_count_options_init(&co);
		co.by_stream = 1;
		weft_counts *c = NULL;
		if (weft_counts_compute(t, &co, &c) == 0)
			weft_counts_rows(c, 3, NULL, 0);
		weft_counts_free(c);
	} else if (choice == 1) {
		weft_profile_options po;
		weft_profile_options_init(&po);
		po.by = WEFT_PROFILE_BY_STREAM;
		weft_profile *p = NULL;
		weft_profile_compute(t, &po, &p);
		weft_profile_free(p);
	} else if (choice == 2) {
		size_t n = weft_trace_stream_count(t);
		weft_stream_stats *s = calloc(n, sizeof *s);
		if (s != NULL)
			weft_trace_stats_all(t, 1, s, NULL);
		free(s);
	} else if (choice == 3) {
		weft_check_report *r = NULL;
		weft_trace_check(t, NULL, &r);
		weft_check_report_free(r);
	}
	weft_trace_free(t);
	if (choice == 4) {
		/* the sort opens the trace itself: two exchanges, then the survey */
		weft_ovni_sort_report report;
		o->skip = 2;
		o->agree = &agree;
		dist.user = o;
		weft_ovni_sort_with(fz_path("ovni"), &open, 1, &report);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	other_rank o = { data + 1, size - 1, NULL, 0, NULL };
	const char *seeds = getenv("WEFT_FUZZ_DIST_SEEDS");
	char path[4096];
	if (seeds != NULL) {
		snprintf(path, sizeof path, "%s/%d.report", seeds, data[0] % CHOICES);
		o.seed_path = path;
	}
	run(data[0] % CHOICES, &o);
	if (seeds != NULL) { /* the choice byte in front of rank 0's report */
		FILE *f = fopen(path, "r+b");
		if (f != NULL) {
			fputc(data[0] % CHOICES, f);
			fclose(f);
		}
	}
	return 0;
}
