/* SPDX-License-Identifier: MIT */
/*
 * profile.c - a per-thread profile of a trace of any format (ovni, Heph,
 * ROSS, Pallas), with the public API only (weft/weft.h): for each stream
 * (thread, rank, LP), its regions by time, then, per region, how unevenly
 * the streams that run it share its time (max / mean: 1.00 is perfect
 * balance), which is what one looks for first in a parallel run.
 *
 *   profile TRACE [TOP]
 *
 * TOP: regions shown per stream (default 5). The library finds the
 * format, pairs enters and leaves (or reads Pallas's stored durations)
 * and sums the calls; this program only prints.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "weft/weft.h"

/* Prints the library's last error and exits. */
static void die(const char *what)
{
	fprintf(stderr, "profile: %s: %s\n", what, weft_last_error());
	exit(1);
}

/* The regions of each stream, largest total first (the rows' order). */
static void print_per_stream(const weft_trace *trace, const weft_profile *p, size_t top)
{
	int64_t stream = -1;
	size_t shown = 0;

	for (size_t i = 0; i < weft_profile_row_count(p); i++) {
		const weft_profile_row *r = weft_profile_row_get(p, i);
		if (r->calls == 0)
			continue;
		if (r->stream != stream) {
			stream = r->stream;
			shown = 0;
			printf("\n%s\n", weft_trace_stream(trace, (size_t)stream)->path);
			printf("  %-36s %10s %14s %14s %12s\n", "region", "calls",
			       "total_ns", "exclusive_ns", "mean_ns");
		}
		if (shown++ < top)
			printf("  %-36s %10" PRIu64 " %14" PRIu64 " %14" PRIu64 " %12.1f\n",
			       r->name, r->calls, r->inclusive, r->exclusive, r->mean);
	}
}

/* Per region: how many streams run it, and max / mean of their totals. */
static void print_imbalance(const weft_profile *p)
{
	size_t n = weft_profile_row_count(p);
	char *done = calloc(n + 1, 1);
	if (done == NULL)
		die("out of memory");
	printf("\n%-36s %8s %14s %14s %9s\n", "region", "streams", "max_ns", "mean_ns",
	       "max/mean");
	for (size_t i = 0; i < n; i++) {
		const weft_profile_row *r = weft_profile_row_get(p, i);
		if (done[i] || r->calls == 0)
			continue;
		uint64_t max = 0, sum = 0, streams = 0;
		for (size_t j = i; j < n; j++) {
			const weft_profile_row *o = weft_profile_row_get(p, j);
			if (done[j] || strcmp(o->name, r->name) != 0)
				continue;
			done[j] = 1;
			streams++;
			sum += o->inclusive;
			if (o->inclusive > max)
				max = o->inclusive;
		}
		double mean = (double)sum / (double)streams;
		printf("%-36s %8" PRIu64 " %14" PRIu64 " %14.1f %9.2f\n", r->name, streams,
		       max, mean, mean > 0 ? (double)max / mean : 1.0);
	}
	free(done);
}

int main(int argc, char **argv)
{
	weft_trace *trace;
	weft_profile_options options;
	weft_profile *profile;

	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: profile TRACE [TOP]\n");
		return 2;
	}
	size_t top = argc == 3 ? strtoul(argv[2], NULL, 10) : 5;
	if (weft_trace_open(argv[1], NULL, &trace) < 0)
		die("cannot open the trace");
	weft_profile_options_init(&options);
	options.by = WEFT_PROFILE_BY_STREAM;
	if (weft_profile_compute(trace, &options, &profile) < 0)
		die("cannot compute the profile");
	printf("%s: format %s, %zu streams, figures from %s\n", argv[1],
	       weft_format_name(weft_trace_format(trace)), weft_trace_stream_count(trace),
	       weft_profile_source_name(weft_profile_source_used(profile)));
	print_per_stream(trace, profile, top);
	print_imbalance(profile);
	weft_profile_free(profile);
	weft_trace_free(trace);
	return 0;
}
