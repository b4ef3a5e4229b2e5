/* SPDX-License-Identifier: MIT */
/*
 * outputs/chrome/chrome_writer.c - the Chrome JSON writer's life cycle:
 * creating it (and its writer thread), the document's header and footer,
 * its report (stats, warning) and freeing it. Which file holds what:
 * chrome_internal.h.
 */
#include <stdio.h>
#include <stdlib.h>

#include "outputs/chrome/chrome_internal.h"

/* ---- Entry points ------------------------------------------------------------------------ */

/*
 * Compat mode: streams, tracks and the field array; the buffer is set up
 * by the caller. (The default mode gets its tracks from the view.)
 */
static int writer_setup(weft__chrome_writer *w)
{
	w->stream_count = weft_trace_stream_count(w->trace);
	w->streams = calloc(w->stream_count ? w->stream_count : 1, sizeof *w->streams);
	w->field_cap = INITIAL_FIELD_CAP;
	w->fields = calloc(w->field_cap, sizeof *w->fields);
	if (w->streams == NULL || w->fields == NULL)
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET,
				   "out of memory for the Chrome writer");
	for (size_t i = 0; i < w->stream_count; i++)
		weft__chrome_stream_setup(w, i);
	return weft__chrome_assign_tracks(w);
}

/*
 * The writer, its output buffer (1 MiB; in background mode two buffers
 * of a chunk and its slack) and the per-stream prefixes.
 */
int weft__chrome_writer_create(const weft_trace *trace, int fd,
			       const weft__chrome_options *options,
			       weft__chrome_writer **out)
{
	weft__chrome_options none = { 0 };
	weft__chrome_writer *w = calloc(1, sizeof *w);

	*out = NULL;
	if (w == NULL)
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	if (options == NULL)
		options = &none;
	w->trace = trace;
	w->compat = options->heph_compat;
	int rc = options->background ? weft__bg_output_start(&w->bg, fd, options->write_behind,
							      CHUNK + CHUNK_SLACK) : 0;
	if (rc == 0)
		rc = weft__outbuf_init(&w->out, fd, w->bg.running ? CHUNK + CHUNK_SLACK :
				       WEFT__OUTBUF_DEFAULT_SIZE);
	if (rc == 0 && w->compat)
		rc = writer_setup(w);
	if (rc < 0) {
		weft__chrome_writer_free(w);
		return rc;
	}
	*out = w;
	return 0;
}

/* The opening of the document (Heph's spacing in compat mode). */
void weft__chrome_writer_begin(weft__chrome_writer *w)
{
	if (w->compat) {
		PUT_LITERAL(&w->out, "{\n\t\"displayTimeUnit\": \"ns\",\n\t\"traceEvents\": [\n");
		return;
	}
	PUT_LITERAL(&w->out, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
}

/*
 * View mode: the end of traceEvents, then the origin of ts, under the
 * two keys readers keep: "otherData" (the format's document: Chrome's
 * trace viewer shows it under Metadata) and "metadata" (Perfetto's
 * importer keeps it as json_metadata.ts_origin_ns).
 */
static void put_view_footer(weft__chrome_writer *w)
{
	char origin[24];
	size_t n = (size_t)(weft__fmt_u64(origin, w->origin) - origin);

	PUT_LITERAL(&w->out, "\n],\"otherData\":{\"ts_origin_ns\":");
	weft__outbuf_put(&w->out, origin, n);
	PUT_LITERAL(&w->out, "},\"metadata\":{\"ts_origin_ns\":");
	weft__outbuf_put(&w->out, origin, n);
	PUT_LITERAL(&w->out, "}}\n");
}

/*
 * The closing of the document (Heph's ends without a newline), flushed:
 * the writer thread's last buffer first, then the rest.
 */
int weft__chrome_writer_finish(weft__chrome_writer *w)
{
	if (w->compat)
		PUT_LITERAL(&w->out, "\n\t]\n}");
	else
		put_view_footer(w);
	int rc = weft__bg_output_stop(&w->bg);
	if (rc < 0)
		return rc;
	rc = weft__outbuf_flush(&w->out);
	if (rc < 0)
		return rc;
	if (w->error != 0)
		return weft__error(w->error, NULL, WEFT_NO_OFFSET,
				   "out of memory: the output misses metadata events "
				   "or same-start shifts");
	return 0;
}

/* 1 once a write of the output buffer or of the writer thread has failed. */
int weft__chrome_writer_failed(const weft__chrome_writer *w)
{
	return w->out.error != 0 || w->bg.failed;
}

/* What viewers may not read as written (view mode), or NULL. */
const char *weft__chrome_writer_warning(weft__chrome_writer *w)
{
	if (w->stats.before_origin == 0 && w->stats.beyond_exact == 0)
		return NULL;
	snprintf(w->warning, sizeof w->warning,
		 "%llu event time(s) more than a day before the first one have a "
		 "negative ts (Perfetto drops them), %llu more than 2^42 us after "
		 "ts_origin_ns may be read up to a few ns off",
		 (unsigned long long)w->stats.before_origin,
		 (unsigned long long)w->stats.beyond_exact);
	return w->warning;
}

/* The counts of the writer, with those of the fix-up tables. */
void weft__chrome_writer_stats(const weft__chrome_writer *w, weft__chrome_stats *out)
{
	*out = w->stats;
	if (w->fixup != NULL) {
		out->fixup_entries = weft__fixup_entries(w->fixup);
		out->fixup_bytes = weft__fixup_bytes(w->fixup);
	}
}

/*
 * Releases everything; the buffered bytes are dropped (a buffer the
 * writer thread holds is still written: the thread is stopped first).
 */
void weft__chrome_writer_free(weft__chrome_writer *w)
{
	if (w == NULL)
		return;
	weft__bg_output_free(&w->bg);
	weft__fixup_free(w->fixup);
	free(w->streams);
	free(w->fields);
	for (uint32_t i = 0; w->tracks != NULL && i < w->track_cap; i++)
		free(w->tracks[i].label);
	free(w->tracks);
	weft__outbuf_destroy(&w->out);
	free(w);
}
