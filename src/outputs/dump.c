/* SPDX-License-Identifier: MIT */
/*
 * outputs/dump.c - weft_dump() (weft/dump.h): a merged cursor into the
 * dump writer (dump_writer.c), through the two-thread pipeline
 * (pipeline.c) when it pays.
 *
 * With two threads, the writer decodes fields (weft_event_fields() on the
 * const trace) while the reading thread's cursor reads the same trace.
 * The backends' decoders only read what opening the trace built, never
 * what a cursor changes (its diagnostics); a second handle opened for the
 * writer would cost a second open, i.e. a second scan of a Heph file.
 */
#include <string.h>

#include "core/internal.h"
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

/* Every event of the cursor into the writer; the stage that failed. */
static weft_dump_stage dump_cursor(weft_trace *trace, const weft_dump_options *o, int fd,
				   weft_cursor *cursor, uint64_t *events, int *rc)
{
	weft__dump_writer writer;

	*rc = weft__dump_writer_init(&writer, trace, fd, (weft__dump_mode)o->mode, o->flags);
	if (*rc < 0)
		return WEFT_DUMP_START;
	int threaded = weft__pipeline_wanted(trace);
	weft__trace_threads_note(trace, threaded ? 2 : 1);
	int read_rc = weft__pipeline_run(cursor, write_events, &writer, threaded);
	int write_rc = weft__dump_writer_finish(&writer);
	*events = writer.events;
	weft__dump_writer_destroy(&writer);
	*rc = read_rc < 0 ? read_rc : write_rc;
	return read_rc < 0 ? WEFT_DUMP_READ : write_rc < 0 ? WEFT_DUMP_WRITE : WEFT_DUMP_DONE;
}

static int dump_run(weft_trace *trace, const weft_dump_options *options, int fd,
		    weft_dump_status *status)
{
	weft_dump_status ignored;
	weft_cursor *cursor;

	if (status == NULL)
		status = &ignored;
	memset(status, 0, sizeof *status);
	if (trace == NULL || options == NULL || (unsigned)options->mode > WEFT_DUMP_JSON) {
		status->stage = WEFT_DUMP_START;
		return weft__error(WEFT_EINVAL, NULL, WEFT_NO_OFFSET,
				   "dump: no trace, no options or an unknown mode");
	}
	int rc = weft_cursor_create(trace, &options->filter, &cursor);
	if (rc < 0) {
		status->stage = WEFT_DUMP_CURSOR;
		return rc;
	}
	status->stage = dump_cursor(trace, options, fd, cursor, &status->events, &rc);
	weft_cursor_free(cursor);
	return rc;
}

/* The operation above, as a phase of the progress ("dumping"). */
int weft_dump(weft_trace *trace, const weft_dump_options *options, int fd,
	      weft_dump_status *status)
{
	weft__progress_begin(trace, "dumping");
	return weft__progress_end_with(trace, dump_run(trace, options, fd, status));
}
