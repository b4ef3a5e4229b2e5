/* SPDX-License-Identifier: MIT */
/*
 * core/diag_merge.c - diagnostics that do not depend on the order the
 * streams were read in.
 *
 * The analyses that read streams in threads or on MPI ranks (counts,
 * profile) must report what one reader reports. Two things would differ:
 * notes said once per trace (each thread's or rank's handle says its own)
 * and the order of the diagnostics. So a once-note is kept for its lowest
 * stream and offset, whoever found it and when (weft__trace_diag_once),
 * diagnostics keep their stream beside them, and those of a reading are
 * put in stream order at its end (weft__trace_diags_sort).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"

/* The index of the diagnostic of once-key `key`, or -1. */
static int64_t find_key(const weft_trace *trace, const char *key)
{
	for (size_t i = 0; i < trace->diag_count; i++) {
		const char *k = trace->diag_origins[i].key;
		if (k != NULL && strcmp(k, key) == 0)
			return (int64_t)i;
	}
	return -1;
}

/* Records (or replaces, when it comes first) the once-note of `key`. */
static void record_once(weft_trace *trace, const char *key, uint32_t stream, int severity,
			int status, const char *file, uint64_t offset, const char *message)
{
	int64_t at = find_key(trace, key);
	if (at < 0) {
		weft__trace_diag_record(trace, key, stream, severity, status, file, offset,
					message);
		return;
	}
	weft_diag *d = &trace->diags[at];
	uint32_t kept = trace->diag_origins[at].stream;
	if (stream > kept || (stream == kept && offset >= d->offset))
		return;
	const char *f = file ? weft__trace_strdup(trace, file) : NULL;
	const char *m = weft__trace_strdup(trace, message);
	if (m == NULL || (file != NULL && f == NULL))
		return; /* out of memory: the first one stays */
	*d = (weft_diag){ severity, status, f, offset, m };
	trace->diag_origins[at].stream = stream;
}

void weft__trace_diag_once(weft_trace *trace, const char *key, uint32_t stream,
			   int severity, int status, const char *file, uint64_t offset,
			   const char *fmt, ...)
{
	char message[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(message, sizeof message, fmt, ap);
	va_end(ap);
	record_once(trace, key, stream, severity, status, file, offset, message);
}

void weft__trace_diag_copy(weft_trace *trace, const weft_trace *from, size_t index)
{
	const weft_diag *d = &from->diags[index];
	const weft__diag_origin *o = &from->diag_origins[index];
	if (o->key != NULL)
		record_once(trace, o->key, o->stream, d->severity, d->status, d->file, d->offset,
			    d->message);
	else
		weft__trace_diag_record(trace, NULL, o->stream, d->severity, d->status, d->file,
					d->offset, d->message);
}

/* ---- Stream order ------------------------------------------------------------ */

/* A diagnostic's place in stream order. */
typedef struct diag_place {
	uint32_t stream;
	uint64_t offset;
	size_t index;
	weft_diag diag;
	weft__diag_origin origin;
} diag_place;

static int by_place(const void *a, const void *b)
{
	const diag_place *x = a, *y = b;
	if (x->stream != y->stream)
		return x->stream < y->stream ? -1 : 1;
	if (x->offset != y->offset)
		return x->offset < y->offset ? -1 : 1;
	return x->index < y->index ? -1 : x->index > y->index;
}

/* A stream's file, for the look-up of a diagnostic's file. */
typedef struct file_stream {
	const char *file;
	uint32_t stream;
} file_stream;

static int by_file_then_stream(const void *a, const void *b)
{
	const file_stream *x = a, *y = b;
	int c = strcmp(x->file, y->file);
	return c != 0 ? c : (x->stream > y->stream) - (x->stream < y->stream);
}

/* The first stream whose data file is `file`, or WEFT__NO_STREAM. */
static uint32_t stream_of_file(const file_stream *files, size_t n, const char *file)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (strcmp(files[mid].file, file) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && strcmp(files[lo].file, file) == 0 ? files[lo].stream : WEFT__NO_STREAM;
}

void weft__trace_diags_sort(weft_trace *trace, size_t from)
{
	size_t n = trace->diag_count > from ? trace->diag_count - from : 0;
	if (n < 2)
		return;
	diag_place *places = malloc(n * sizeof *places);
	file_stream *files = malloc((trace->stream_count ? trace->stream_count : 1) *
				    sizeof *files);
	if (places == NULL || files == NULL)
		goto done; /* out of memory: the order they came in */
	size_t nf = 0;
	for (size_t s = 0; s < trace->stream_count; s++)
		if (trace->streams[s].file != NULL)
			files[nf++] = (file_stream){ trace->streams[s].file, (uint32_t)s };
	qsort(files, nf, sizeof *files, by_file_then_stream);
	for (size_t i = 0; i < n; i++) {
		const weft_diag *d = &trace->diags[from + i];
		const weft__diag_origin *o = &trace->diag_origins[from + i];
		uint32_t stream = o->stream;
		if (stream == WEFT__NO_STREAM && d->file != NULL)
			stream = stream_of_file(files, nf, d->file);
		places[i] = (diag_place){ stream, d->offset, i, *d, *o };
	}
	qsort(places, n, sizeof *places, by_place);
	for (size_t i = 0; i < n; i++) {
		trace->diags[from + i] = places[i].diag;
		trace->diag_origins[from + i] = places[i].origin;
	}
done:
	free(places);
	free(files);
}

/* Their texts stay in the trace's arena until it is freed (a few lines). */
void weft__trace_diags_forget(weft_trace *trace, size_t count, uint64_t dropped)
{
	if (count < trace->diag_count)
		trace->diag_count = count;
	trace->diags_dropped = dropped;
}
