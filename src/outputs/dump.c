/* SPDX-License-Identifier: MIT */
/*
 * outputs/dump.c - weft_dump() (weft/dump.h): a merged cursor into the
 * dump writer (dump_writer.c); with three threads or more, the streams
 * shared among them (each writes its share's lines, merged in the serial
 * order: keyed_runs.h); with two, or for cursors over whole files (Heph
 * in stored order, ROSS), one reading thread and a farm of writers, one
 * per thread, formatting batches of events at once (pipeline.h).
 *
 * The farm's writers decode fields (weft_event_fields() on the const
 * trace) while the reading thread's cursor reads the same trace. The
 * backends' decoders only read what opening the trace built, never what
 * a cursor changes (its diagnostics); a second handle opened for each
 * writer would cost a second open, i.e. a second scan of a Heph file.
 */
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "outputs/keyed_runs.h"
#include "outputs/outputs.h"
#include "outputs/pipeline.h"
#include "weft/dump.h"

_Static_assert((int)WEFT_DUMP_FIELDS == (int)WEFT__DUMP_FIELDS &&
	       (int)WEFT_DUMP_HEX == (int)WEFT__DUMP_HEX &&
	       (int)WEFT_DUMP_JSON == (int)WEFT__DUMP_JSON &&
	       (unsigned)WEFT_DUMP_TREE == (unsigned)WEFT__DUMP_TREE,
	       "the public dump modes and flags are the writer's");

void weft_dump_options_init(weft_dump_options *options)
{
	memset(options, 0, sizeof *options);
}

/*
 * Consumer of the events: writes a run of them. Returns non-zero once the
 * output has failed, which stops the reading; the error itself is
 * reported by weft__dump_writer_finish().
 */
static int write_events(void *ctx, const weft_event *events, size_t count)
{
	weft__dump_writer *writer = ctx;

	for (size_t i = 0; i < count; i++)
		weft__dump_writer_event(writer, &events[i]);
	return weft__dump_writer_failed(writer);
}

/* Every event of the cursor into the writer, on this thread alone. */
static weft_dump_stage dump_cursor(weft_trace *trace, const weft_dump_options *o, int fd,
				   weft_cursor *cursor, uint64_t *events, int *rc)
{
	weft__dump_writer writer;

	*rc = weft__dump_writer_init(&writer, trace, fd, (weft__dump_mode)o->mode, o->flags);
	if (*rc < 0)
		return WEFT_DUMP_START;
	weft__trace_threads_note(trace, 1);
	int read_rc = weft__pipeline_run(cursor, write_events, &writer, 0);
	int write_rc = weft__dump_writer_finish(&writer);
	*events = writer.events;
	weft__dump_writer_destroy(&writer);
	*rc = read_rc < 0 ? read_rc : write_rc;
	return read_rc < 0 ? WEFT_DUMP_READ : write_rc < 0 ? WEFT_DUMP_WRITE : WEFT_DUMP_DONE;
}

/* ---- Lines formatted by a farm of threads ------------------------------------ */

/* A writer per thread of the farm, and the output the texts go to. */
typedef struct farm_dump {
	weft__dump_writer *writers;
	int count;
	weft__outbuf out;
} farm_dump;

/*
 * A batch of events into lines, with the writer of thread `worker`: the
 * writer's buffer is the batch's text for the time of the batch (a
 * writer's lines depend on nothing but the event: weft__farm).
 */
static int format_lines(void *ctx, int worker, const weft_event *events, size_t count,
			weft__farm_text *text)
{
	weft__dump_writer *w = &((farm_dump *)ctx)->writers[worker];
	w->out = (weft__outbuf){ .fd = WEFT__OUTBUF_GROW, .buf = text->buf, .len = text->len,
				 .cap = text->cap };
	for (size_t i = 0; i < count; i++)
		weft__dump_writer_event(w, &events[i]);
	*text = (weft__farm_text){ .buf = w->out.buf, .len = w->out.len, .cap = w->out.cap };
	int failed = w->out.error != 0;
	w->out = (weft__outbuf){ .fd = WEFT__OUTBUF_GROW };
	return failed ? weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET,
				    "out of memory for the dump's lines") : 0;
}

/* The lines of a batch, in batch order, into the output. */
static int emit_lines(void *ctx, const char *text, size_t len)
{
	weft__outbuf *out = &((farm_dump *)ctx)->out;
	weft__outbuf_put_block(out, text, len);
	return out->error != 0;
}

/* Frees the writers (NULL is fine) and the output buffer. */
static void farm_dump_free(farm_dump *d)
{
	for (int i = 0; d->writers != NULL && i < d->count; i++)
		weft__dump_writer_destroy(&d->writers[i]);
	free(d->writers);
	weft__outbuf_destroy(&d->out);
}

/*
 * Every event of the cursor through a farm of `threads` threads (this
 * one reads and helps): the same bytes as dump_cursor().
 */
static weft_dump_stage dump_farm(weft_trace *trace, const weft_dump_options *o, int fd,
				 weft_cursor *cursor, int threads, uint64_t *events, int *rc)
{
	farm_dump d = { .count = threads };

	d.writers = calloc((size_t)threads, sizeof *d.writers);
	*rc = d.writers == NULL ? weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory")
				: weft__outbuf_init(&d.out, fd, WEFT__OUTBUF_DEFAULT_SIZE);
	for (int i = 0; *rc == 0 && i < threads; i++) {
		*rc = weft__dump_writer_init(&d.writers[i], trace, WEFT__OUTBUF_GROW,
					     (weft__dump_mode)o->mode, o->flags);
		if (*rc == 0) /* the batches' texts are its buffers */
			weft__outbuf_destroy(&d.writers[i].out);
		else
			d.count = i; /* a failed init freed its own */
	}
	if (*rc < 0) {
		farm_dump_free(&d);
		return WEFT_DUMP_START;
	}
	weft__trace_threads_note(trace, threads);
	weft__farm farm = { format_lines, emit_lines, &d };
	int read_rc = weft__farm_run(cursor, &farm, threads);
	int write_rc = weft__outbuf_flush(&d.out);
	*events = 0;
	for (int i = 0; i < threads; i++)
		*events += d.writers[i].events;
	farm_dump_free(&d);
	*rc = read_rc < 0 ? read_rc : write_rc;
	return read_rc < 0 ? WEFT_DUMP_READ : write_rc < 0 ? WEFT_DUMP_WRITE : WEFT_DUMP_DONE;
}

/* ---- Streams shared among threads ------------------------------------------- */

typedef struct shared_dump {
	const weft_dump_options *options;
	weft__keyed_runs *runs;
	uint64_t *events;       /* written by each part */
	weft__parts_live *live; /* for the progress shown while merging */
} shared_dump;

/*
 * One part: its share's events in its own merged order, rendered into its
 * run with their keys. Runs on the part's thread, with its handle.
 */
static int dump_part(weft_trace *handle, const uint8_t *selected, int part, void *arg)
{
	shared_dump *sd = arg;
	const weft_dump_options *o = sd->options;
	weft__dump_writer writer;
	weft_cursor *cursor = NULL;
	int rc = weft__dump_writer_init(&writer, handle, WEFT__OUTBUF_GROW,
					(weft__dump_mode)o->mode, o->flags);
	if (rc < 0)
		return rc; /* dump_part_end() closes the run */
	weft__outbuf_destroy(&writer.out); /* the run's chunks are its buffers */
	rc = weft__cursor_create_selected(handle, &o->filter, selected, &cursor);
	if (rc == 0)
		rc = weft__keyed_run_begin(sd->runs, part, &writer.out);
	const weft_event *ev;
	while (rc == 0 && weft_cursor_next(cursor, &ev) > 0) {
		size_t start = writer.out.len;
		weft__dump_writer_event(&writer, ev);
		if (weft__dump_writer_failed(&writer))
			rc = weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET,
					 "out of memory for the dump's lines");
		else
			rc = weft__keyed_run_line(sd->runs, part, &writer.out, ev->time,
						  ev->stream, start);
	}
	int end_rc = weft__keyed_run_end(sd->runs, part, &writer.out, rc < 0);
	sd->events[part] = writer.events;
	weft_cursor_free(cursor);
	weft__dump_writer_destroy(&writer);
	return rc < 0 ? rc : end_rc;
}

/* Called last on each part's thread: a part that never began ends its run. */
static void dump_part_end(void *arg, int part, int rc)
{
	(void)rc;
	weft__keyed_run_close(((shared_dump *)arg)->runs, part);
}

static void merge_progress(void *ctx)
{
	weft__parts_show_progress(((shared_dump *)ctx)->live);
}

/*
 * The dump on `threads` threads, each over its share of the streams of
 * `among`, merged on this thread into `fd` (a thread more). The stage
 * that failed: an output that fails is WRITE (its error, not the parts'
 * "stopped"), the parts' errors READ.
 */
static weft_dump_stage dump_shared(weft_trace *trace, const weft_dump_options *o, int fd,
				   int threads, const uint8_t *among, uint64_t *events, int *rc)
{
	shared_dump sd = { .options = o };
	weft__outbuf out;
	sd.runs = weft__keyed_runs_create(threads);
	sd.events = calloc((size_t)threads, sizeof *sd.events);
	*rc = weft__outbuf_init(&out, fd, WEFT__OUTBUF_DEFAULT_SIZE);
	if (sd.runs == NULL || sd.events == NULL || *rc < 0) {
		if (*rc == 0)
			weft__outbuf_destroy(&out);
		weft__keyed_runs_free(sd.runs);
		free(sd.events);
		*rc = weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
		return WEFT_DUMP_START;
	}
	int started = weft__parts_start(trace, among, NULL, threads, dump_part, dump_part_end, &sd,
					&sd.live);
	int write_rc = 0;
	weft__error_copy write_error, start_error;
	if (started < 0) {
		weft__error_save(&start_error, started);
		weft__keyed_runs_abort(sd.runs);
	} else {
		write_rc = weft__keyed_runs_merge(sd.runs, &out, merge_progress, &sd);
	}
	if (write_rc == 0)
		write_rc = weft__outbuf_flush(&out);
	if (write_rc < 0)
		weft__error_save(&write_error, write_rc);
	int read_rc = weft__parts_finish(sd.live);
	if (started < 0 && read_rc == 0) /* no part said more */
		read_rc = weft__error_raise(&start_error);
	*events = 0;
	for (int i = 0; i < threads; i++)
		*events += sd.events[i];
	weft__outbuf_destroy(&out);
	weft__keyed_runs_free(sd.runs);
	free(sd.events);
	if (write_rc < 0) {
		*rc = weft__error_raise(&write_error);
		return WEFT_DUMP_WRITE;
	}
	*rc = read_rc;
	return read_rc < 0 ? WEFT_DUMP_READ : WEFT_DUMP_DONE;
}

/*
 * The streams the dump reads (those its stream pattern matches) in
 * `among`, or NULL without memory.
 */
static uint8_t *streams_dumped(const weft_trace *trace, const weft_filter *filter)
{
	size_t n = trace->stream_count;
	uint8_t *among = malloc(n ? n : 1);
	if (among == NULL)
		return NULL;
	weft__streams_matching(trace, filter->stream_pattern, among);
	return among;
}

/*
 * The dump, shared among threads when the trace's streams can be read
 * apart and three threads or more are wanted (two parts and the merging
 * thread; the merge is this thread's work); else one merged cursor,
 * formatted by a farm of threads when they pay. Two threads stay a farm:
 * on this 2-core machine it is as fast as two parts and a merge
 * (docs/SCALING.md), which gain on more cores when reading is much of
 * the work.
 */
static weft_dump_stage dump_any(weft_trace *trace, const weft_dump_options *o, int fd,
				uint64_t *events, int *rc)
{
	if (weft__cursor_merges_streams(trace, &o->filter)) {
		uint8_t *among = streams_dumped(trace, &o->filter);
		if (among == NULL) {
			*rc = weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
			return WEFT_DUMP_START;
		}
		int parts = weft__parts_threads(trace, among, 0, WEFT__WORK_HEAVY) - 1;
		weft_dump_stage stage = WEFT_DUMP_DONE;
		if (parts > 1)
			stage = dump_shared(trace, o, fd, parts, among, events, rc);
		free(among);
		if (parts > 1)
			return stage;
	}
	weft_cursor *cursor;
	*rc = weft_cursor_create(trace, &o->filter, &cursor);
	if (*rc < 0)
		return WEFT_DUMP_CURSOR;
	int threads = weft__farm_threads(trace);
	weft_dump_stage stage = threads > 1 ? dump_farm(trace, o, fd, cursor, threads, events, rc)
					    : dump_cursor(trace, o, fd, cursor, events, rc);
	weft_cursor_free(cursor);
	return stage;
}

static int dump_run(weft_trace *trace, const weft_dump_options *options, int fd,
		    weft_dump_status *status)
{
	weft_dump_status ignored;

	if (status == NULL)
		status = &ignored;
	memset(status, 0, sizeof *status);
	if (trace == NULL || options == NULL || (unsigned)options->mode > WEFT_DUMP_JSON) {
		status->stage = WEFT_DUMP_START;
		return weft__error(WEFT_EINVAL, NULL, WEFT_NO_OFFSET,
				   "dump: no trace, no options or an unknown mode");
	}
	/* The diagnostics of the reading in stream order, whoever read
	 * which stream (core/diag_merge.c). */
	size_t diags = weft_trace_diag_count(trace);
	int rc;
	status->stage = dump_any(trace, options, fd, &status->events, &rc);
	weft__trace_diags_sort(trace, diags);
	return rc;
}

/* The operation above, as a phase of the progress ("dumping"). */
int weft_dump(weft_trace *trace, const weft_dump_options *options, int fd,
	      weft_dump_status *status)
{
	weft__progress_begin(trace, "dumping");
	return weft__progress_end_with(trace, dump_run(trace, options, fd, status));
}
