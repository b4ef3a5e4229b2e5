/* SPDX-License-Identifier: MIT */
/*
 * weft/writer.h - the writer of an output (weft/output.h), fed one event
 * at a time by the caller: what a front end uses when it reads the events
 * itself (a Python module pushing the events of a trace, an MPI runner
 * feeding each rank's share of the streams). weft_convert()
 * (weft/convert.h) is this interface with the reading done for you:
 * create, read the cursor the writer asks for, every event, finish.
 *
 *     weft_output_writer *w;
 *     weft_convert_report r;
 *     weft_filter f;
 *     weft_cursor *c;
 *     const weft_event *ev;
 *     int rc = weft_output_writer_create(trace, &options, &w);
 *     weft_output_writer_filter(w, &f);        (order, window, globs)
 *     weft_cursor_create(trace, &f, &c);
 *     while ((rc = weft_cursor_next(c, &ev)) == 1)
 *             if (weft_output_writer_event(w, ev) != 0)
 *                     break;              (1: no more needed; < 0: refused or failed)
 *     if (rc < 0)
 *             weft_output_writer_read_failed(w, WEFT_OUTPUT_ALL_STREAMS, rc);
 *     weft_cursor_free(c);
 *     rc = weft_output_writer_finish(w, &r);   (OUT in place)
 *     weft_output_writer_free(w);
 *     weft_convert_report_free(&r);
 *
 * The order each output needs (weft_output_writer_order()):
 *   - perfetto, chrome, paraver (the viewers) and chrome's Heph-compatible
 *     bytes: the events of a merged cursor (weft_cursor_create) in the
 *     format's natural order: TIME, or STORED for Heph (one pass over its
 *     file). Another order still gives a valid output, with its records
 *     in another order. Viewers cut spans at the window's edges, so their
 *     filter has no window: read every event, the writer keeps what falls
 *     in it. When the order is TIME and the options have a window end,
 *     the first event past it ends the window: the writer returns 1 and
 *     ignores what comes after (events that go back in time included).
 *   - pallas: each stream's events in TIME order, with the options'
 *     window and code glob on the cursor. Streams may interleave (a merged
 *     cursor) or come one after another (weft_cursor_create_stream_filtered);
 *     weft_output_writer_end_stream() after each closes its Pallas thread,
 *     so that one thread is held at a time, as weft_convert() does. A
 *     stream's location is numbered at its first event, so the order of
 *     first events shapes the bytes (not the content). An event earlier
 *     than the one before it on its stream is refused (WEFT_EINVAL: a
 *     Pallas thread's timestamps only go forward), as is an event of a
 *     stream the stream glob leaves out.
 * Every output refuses (WEFT_EINVAL) an event of a stream the trace does
 * not have (an event of another trace with more streams: the writer
 * cannot tell an event of another trace of the same shape), of a stream
 * already ended, and any event after finish or after the output failed.
 *
 * OUT is written to temporary names next to it (a directory for pallas)
 * and renamed over OUT by finish; free without finish removes them and
 * leaves OUT as it was. No output refuses to take events one by one
 * (WEFT_EUNSUPPORTED is kept for one that would need the whole trace).
 *
 * A writer is used by one thread at a time; events are of the trace given
 * to create, which stays open until the writer is freed.
 */
#ifndef WEFT_WRITER_H
#define WEFT_WRITER_H

#include <stdint.h>

#include "weft/api.h"
#include "weft/convert.h"
#include "weft/event.h"
#include "weft/output.h"
#include "weft/trace.h"

#ifdef __cplusplus
extern "C" {
#endif
WEFT_API_BEGIN

typedef struct weft_output_writer weft_output_writer;

/* weft_output_writer_read_failed(): the reading of every stream (a merged cursor). */
#define WEFT_OUTPUT_ALL_STREAMS UINT32_MAX

/*
 * Starts writing `trace` as `options` say (the output chosen and checked
 * as weft_convert() does: options->output, else the path's suffix): OUT's
 * temporary files (or directory) are created. The options are copied
 * (their strings too). Returns 0 with *out set, or a negative WEFT_E*
 * code (weft_last_error() says why): WEFT_EINVAL for an unknown output or
 * options that do not fit it, WEFT_EEXIST when OUT exists without
 * `force`, WEFT_EUNSUPPORTED for an output that cannot take events one by
 * one (none today), or the error that stopped it; nothing is left behind.
 */
int weft_output_writer_create(weft_trace *trace, const weft_convert_options *options,
			      weft_output_writer **out);

/* The registry entry of the writer's output. */
const weft_output_info *weft_output_writer_output(const weft_output_writer *writer);

/*
 * The order the output needs its events in: WEFT_ORDER_TIME or
 * WEFT_ORDER_STORED (see the top of this file: merged for the viewers,
 * per stream for pallas).
 */
weft_order weft_output_writer_order(const weft_output_writer *writer);

/*
 * The filter to read the trace with: the order above, the options' globs,
 * and their time window for the outputs that want it on the cursor (not
 * the viewers: they cut spans at its edges). Its strings belong to the
 * writer.
 */
void weft_output_writer_filter(const weft_output_writer *writer, weft_filter *filter);

/*
 * Writes one event of the trace. Returns 0 when taken, 1 when taken and
 * the output needs no more (the time window has ended: later events are
 * ignored), WEFT_EINVAL for a refused event (the writer goes on; see the
 * top of this file), or another negative code when the output failed
 * (finish then says why and fails).
 */
int weft_output_writer_event(weft_output_writer *writer, const weft_event *event);

/*
 * No more events of `stream` will come: pallas closes its thread now; the
 * other outputs only remember it. Later events of the stream are refused.
 * 0, WEFT_EINVAL (no such stream, already ended, after finish) or the
 * output's failure.
 */
int weft_output_writer_end_stream(weft_output_writer *writer, uint32_t stream);

/*
 * Tells the writer that the caller's reading stopped early with `status`
 * (what weft_cursor_create or weft_cursor_next returned) on `stream`
 * (WEFT_OUTPUT_ALL_STREAMS for a merged cursor, as is a stream the trace
 * does not have): OUT keeps what came, the
 * report says it (with weft_last_error(), taken now) and sets data_lost.
 */
void weft_output_writer_read_failed(weft_output_writer *writer, uint32_t stream, int status);

/*
 * Ends the output: closes what is still open (spans at their stream's
 * last time, Pallas threads), writes what remains and renames the
 * temporary files over OUT. Returns 0 when OUT was written (with
 * report->data_lost as weft_convert() sets it), or a negative code when
 * it was not (OUT left as it was). The report is filled from scratch as
 * weft_convert() fills it (its messages, then the trace's diagnostics);
 * free it with weft_convert_report_free(). Once only: a second call is
 * WEFT_EINVAL.
 */
int weft_output_writer_finish(weft_output_writer *writer, weft_convert_report *report);

/*
 * Frees the writer; NULL is fine. Without finish, the temporary files are
 * removed and OUT is untouched (what went to standard output stays sent).
 */
void weft_output_writer_free(weft_output_writer *writer);

WEFT_API_END

#ifdef __cplusplus
}
#endif

#endif /* WEFT_WRITER_H */
