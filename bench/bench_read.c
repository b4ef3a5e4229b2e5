/* SPDX-License-Identifier: MIT */
/*
 * bench/bench_read.c - how fast the unified reading API delivers the
 * events of any trace: every event through one merged cursor (time order
 * across streams), or stream by stream with --per-stream; prints events,
 * seconds, events per second and the peak resident memory, and the time
 * the trace took to open (Heph: the scan of the whole file). --threads N
 * and --stored-order set the open options of the same names; --progress
 * installs a progress callback (weft/progress.h) that only counts its
 * calls, to measure what the progress costs.
 *
 * usage: bench_read [--per-stream] [--stored-order] [--threads N] [--runs N]
 *                   [--progress] TRACE
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "weft/weft.h"

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Reads every event of a cursor; returns their count, or < 0. */
static long long drain(weft_cursor *cur, uint64_t *checksum)
{
	const weft_event *ev;
	long long n = 0;
	int rc;
	while ((rc = weft_cursor_next(cur, &ev)) == 1) {
		*checksum += ev->time;
		n++;
	}
	weft_cursor_free(cur);
	return rc < 0 ? rc : n;
}

/* --progress: the callback counts its calls (the cost is the library's). */
static long progress_calls;

static void count_call(const weft_progress *p, void *user_data)
{
	(void)p;
	(void)user_data;
	progress_calls++;
}

/* One pass over the trace, merged or per stream. */
static long long read_all(weft_trace *trace, int per_stream, uint64_t *checksum)
{
	weft_cursor *cur;
	if (!per_stream) {
		if (weft_cursor_create(trace, NULL, &cur) < 0)
			return -1;
		return drain(cur, checksum);
	}
	long long total = 0;
	for (size_t s = 0; s < weft_trace_stream_count(trace); s++) {
		if (weft_cursor_create_stream(trace, (uint32_t)s, &cur) < 0)
			return -1;
		long long n = drain(cur, checksum);
		if (n < 0)
			return n;
		total += n;
	}
	return total;
}

int main(int argc, char **argv)
{
	int per_stream = 0, runs = 3;
	const char *path = NULL;
	weft_open_options options;
	weft_open_options_init(&options);
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--per-stream") == 0)
			per_stream = 1;
		else if (strcmp(argv[i], "--stored-order") == 0)
			options.stored_order = 1;
		else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc)
			runs = atoi(argv[++i]);
		else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
			options.threads = atoi(argv[++i]);
		else if (strcmp(argv[i], "--progress") == 0)
			options.progress = count_call;
		else
			path = argv[i];
	}
	if (path == NULL || runs < 1 || options.threads < 0) {
		fprintf(stderr, "usage: bench_read [--per-stream] [--stored-order] "
			"[--threads N] [--runs N] [--progress] TRACE\n");
		return 2;
	}
	double best = 0, best_open = 0;
	long long events = 0;
	uint64_t checksum = 0;
	for (int r = 0; r < runs; r++) {
		weft_trace *trace;
		double t_open = now();
		if (weft_trace_open(path, &options, &trace) < 0) {
			fprintf(stderr, "bench_read: %s\n", weft_last_error());
			return 1;
		}
		double t0 = now();
		events = read_all(trace, per_stream, &checksum);
		double dt = now() - t0;
		weft_trace_free(trace);
		if (events < 0) {
			fprintf(stderr, "bench_read: %s\n", weft_last_error());
			return 1;
		}
		if (r == 0 || dt < best)
			best = dt;
		if (r == 0 || t0 - t_open < best_open)
			best_open = t0 - t_open;
	}
	printf("open: %.3f s (best of %d)\n", best_open, runs);
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	printf("%s: %lld events in %.3f s (best of %d): %.2f M events/s, "
	       "peak RSS %ld MB (checksum %llu)\n", per_stream ? "per stream" : "merged",
	       events, best, runs, (double)events / best / 1e6, ru.ru_maxrss / 1024,
	       (unsigned long long)checksum);
	if (options.progress != NULL)
		printf("progress: %ld calls\n", progress_calls);
	return 0;
}
