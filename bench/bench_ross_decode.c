/* SPDX-License-Identifier: MIT */
/*
 * bench_ross_decode.c - decoding speed of the ROSS reader through the
 * public API: opens a run, iterates every record with the merged cursor
 * (one pass over each file), decodes every record's fields with
 * weft_event_fields() and reads each value (a checksum, so nothing is
 * optimised away). Prints the bytes of the run's files, the records, the
 * wall time, the throughput and the peak resident memory.
 *
 * usage: bench_ross_decode RUN [REPEAT] [typed]
 *   REPEAT  passes over the run (default 3); the best is reported
 *   typed   read each value by its type (a switch per field, as a
 *           consumer converting values would) instead of its 8 bytes
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "weft/weft.h"

/* Monotonic seconds. */
static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* CPU seconds (user + system) of this process. */
static double cpu_now(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 +
	       (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6;
}

/* Bytes of the run: each data file once. */
static uint64_t run_bytes(const weft_trace *trace)
{
	uint64_t bytes = 0;
	size_t n = weft_trace_stream_count(trace);
	for (size_t i = 0; i < n; i++) {
		const weft_stream_info *s = weft_trace_stream(trace, i);
		int seen = 0;
		for (size_t j = 0; j < i && !seen; j++)
			seen = strcmp(weft_trace_stream(trace, j)->file, s->file) == 0;
		if (!seen)
			bytes += s->file_size;
	}
	return bytes;
}

/* Reads every decoded value (its 8 bytes) of a record's fields. */
static void read_values(const weft_field *f, int n, uint64_t *bits)
{
	uint64_t acc = 0;
	for (int k = 0; k < n; k++)
		acc += f[k].v.u;
	*bits += acc;
}

/* Reads every value of a record's fields by type into the checksum. */
static void read_fields(const weft_field *f, int n, double *sum, uint64_t *bits)
{
	for (int k = 0; k < n; k++) {
		switch (f[k].type) {
		case WEFT_TYPE_F32: case WEFT_TYPE_F64:
			*sum += f[k].v.f;
			break;
		case WEFT_TYPE_BYTES: case WEFT_TYPE_STR:
			*bits += f[k].v.s.len;
			break;
		default:
			*bits += f[k].v.u;
			break;
		}
	}
}

/* One pass; returns the records, or -1. */
static int64_t one_pass(weft_trace *trace, int typed, double *sum, uint64_t *bits,
			uint64_t *fields)
{
	weft_cursor *cursor;
	const weft_event *ev;
	weft_field f[64];
	int64_t records = 0;
	int rc = weft_cursor_create(trace, NULL, &cursor);
	if (rc < 0)
		return -1;
	while ((rc = weft_cursor_next(cursor, &ev)) == 1) {
		int n = weft_event_fields(trace, ev, f, 64);
		if (n > 0) {
			if (typed)
				read_fields(f, n, sum, bits);
			else
				read_values(f, n, bits);
			*fields += (uint64_t)n;
		}
		records++;
	}
	weft_cursor_free(cursor);
	return rc < 0 ? -1 : records;
}

/* Opens the run, makes REPEAT passes, prints the best. */
int main(int argc, char **argv)
{
	weft_open_options opt;
	weft_trace *trace;
	if (argc < 2) {
		fprintf(stderr, "usage: bench_ross_decode RUN [REPEAT]\n");
		return 2;
	}
	int repeat = argc > 2 ? atoi(argv[2]) : 3;
	int typed = argc > 3 && strcmp(argv[3], "typed") == 0;
	weft_open_options_init(&opt);
	opt.format = WEFT_FORMAT_ROSS;
	double t0 = now();
	if (weft_trace_open(argv[1], &opt, &trace) < 0) {
		fprintf(stderr, "bench_ross_decode: %s\n", weft_last_error());
		return 2;
	}
	double open_s = now() - t0, best = 1e300, best_cpu = 1e300;
	uint64_t bytes = run_bytes(trace), bits = 0, fields = 0;
	double sum = 0;
	int64_t records = 0;
	for (int r = 0; r < (repeat > 0 ? repeat : 1); r++) {
		double t = now(), c = cpu_now();
		records = one_pass(trace, typed, &sum, &bits, &fields);
		t = now() - t;
		c = cpu_now() - c;
		best_cpu = c < best_cpu ? c : best_cpu;
		if (records < 0) {
			fprintf(stderr, "bench_ross_decode: %s\n", weft_last_error());
			return 2;
		}
		best = t < best ? t : best;
	}
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	printf("run %s: %" PRIu64 " bytes, %" PRId64 " records, %zu streams, open %.3f s\n",
	       argv[1], bytes, records, weft_trace_stream_count(trace), open_s);
	printf("decode (%s): best of %d: %.3f s wall (%.3f s CPU: %.2f GB/s), %.2f GB/s, %.1f M records/s, "
	       "%.1f M fields/s, peak RSS %.1f MB (checksum %g %" PRIu64 ")\n",
	       typed ? "values by type" : "values", repeat, best,
	       best_cpu, bytes / best_cpu / 1e9, bytes / best / 1e9,
	       records / best / 1e6, fields / (double)(repeat > 0 ? repeat : 1) / best / 1e6,
	       ru.ru_maxrss / 1024.0, sum, bits);
	weft_trace_free(trace);
	return 0;
}
