/* SPDX-License-Identifier: MIT */
/*
 * weft/heph.h - writing Heph traces from C.
 *
 * A Heph trace is one file of big-endian packets (see docs/heph-writer.md
 * and the format document): an optional `epoch` metadata packet first,
 * then event packets, each an interval [start, end] in ns relative to the
 * epoch, on a stream (a thread) and a substream (a task multiplexed on
 * it), with a UTF-8 description and typed attributes.
 *
 * The writer is made for many threads: each thread writes through its own
 * stream handle, which numbers its events (the stream counter) and gathers
 * whole packets in its own buffer; full buffers go to one shared file
 * descriptor opened with O_APPEND, always as whole packets, so that the
 * packets of different threads never mix on disk. While the program runs
 * the data goes to `<path>.tmp`; weft_heph_writer_close() renames it to
 * `<path>`. A program that dies before closing leaves `<path>.tmp`, which
 * readers read up to its last complete packet.
 *
 * Typical use:
 *
 *     weft_heph_writer_options o = { .epoch = now_ns, .has_epoch = 1 };
 *     weft_heph_writer *w;
 *     weft_heph_writer_create("run.bin.log", &o, &w);
 *     // in each thread:
 *     weft_heph_stream *s;
 *     weft_heph_stream_create(w, thread_index, &s);
 *     weft_heph_event_begin(s, 0, t0, t1, "Running process", 15);
 *     weft_heph_event_add_u64(s, "id", 42);
 *     if (weft_heph_event_end(s) < 0) ... weft_last_error() ...
 *     // after joining the threads:
 *     if (weft_heph_writer_close(w) < 0) ...
 *     weft_heph_writer_free(w);
 *
 * Every function that can fail returns 0 or a negative WEFT_E* code
 * (weft/error.h), with the detailed message in weft_last_error(). Nothing is ever truncated: a
 * description, name or string longer than 65535 bytes, an array of more
 * than 65535 elements or a packet larger than 2^32 - 1 bytes is refused
 * with WEFT_EINVAL.
 */
#ifndef WEFT_HEPH_H
#define WEFT_HEPH_H

#include <stddef.h>
#include <stdint.h>

#include "weft/error.h"
#include "weft/api.h"

#ifdef __cplusplus
extern "C" {
#endif
WEFT_API_BEGIN

/* Attribute value types as stored in the packet (array = type | ARRAY). */
enum weft_heph_type {
	WEFT_HEPH_TYPE_U64 = 0x01,
	WEFT_HEPH_TYPE_I64 = 0x02,
	WEFT_HEPH_TYPE_F64 = 0x03,
	WEFT_HEPH_TYPE_STR = 0x04,
	WEFT_HEPH_TYPE_ARRAY = 0x80
};

/* Largest description, name, string or array length the format can hold. */
#define WEFT_HEPH_MAX_LEN 65535u

/*
 * Passed as a length: the string is NUL-terminated, its length is
 * strlen() (descriptions and string values).
 */
#define WEFT_HEPH_CSTR ((size_t)-1)

/* Default size of each stream's buffer (weft_heph_writer_options). */
#define WEFT_HEPH_DEFAULT_BUFFER (256u * 1024u)
/* Smallest buffer accepted; smaller sizes are raised to it. */
#define WEFT_HEPH_MIN_BUFFER 256u

typedef struct weft_heph_writer weft_heph_writer;
typedef struct weft_heph_stream weft_heph_stream;

/*
 * How to write the trace. All zero (or a NULL pointer) means: no epoch
 * packet, WEFT_HEPH_DEFAULT_BUFFER bytes per stream, refuse to replace an
 * existing file, no fsync.
 */
typedef struct weft_heph_writer_options {
	uint64_t epoch;       /* ns since the Unix epoch (the trace's time 0) */
	int has_epoch;        /* 1: write the `epoch` packet first */
	size_t buffer_size;   /* bytes buffered per stream; 0: the default */
	int replace;          /* 1: an existing <path> may be replaced */
	int sync;             /* 1: fsync the file at close, before the rename */
} weft_heph_writer_options;

/* ---- The trace file ------------------------------------------------------- */

/*
 * Starts a trace that will be `path`: creates `<path>.tmp` (which must not
 * exist: it would be another writer's, or a crashed run's data) and writes
 * the epoch packet when asked. Fails with WEFT_EEXIST when `path` exists
 * and `opts->replace` is not set. Sets *out.
 */
int weft_heph_writer_create(const char *path, const weft_heph_writer_options *opts,
			    weft_heph_writer **out);

/*
 * Finishes the trace: writes what every stream still buffers (an event
 * begun and not ended is dropped), optionally fsyncs, and renames
 * `<path>.tmp` to `<path>`. When any write of the trace failed, the file
 * is not renamed (it misses packets, so it must not look whole) and the
 * first failure is returned. The stream handles stay allocated until
 * weft_heph_stream_free() or weft_heph_writer_free(), but every call on
 * them then fails. No thread may use a stream of `w` during this call.
 */
int weft_heph_writer_close(weft_heph_writer *w);

/*
 * Releases the writer and every stream handle still attached to it. A
 * writer never closed is abandoned: nothing more is written and
 * `<path>.tmp` is removed (an explicit discard, unlike a crash). After a
 * failed close, `<path>.tmp` stays: it holds every packet that could be
 * written. NULL is accepted.
 */
void weft_heph_writer_free(weft_heph_writer *w);

/* The path of the file being written (`<path>.tmp`, then `<path>`). */
const char *weft_heph_writer_path(const weft_heph_writer *w);

/* ---- Streams (one per thread) ------------------------------------------------ */

/*
 * A handle to write the events of stream `stream_id` (chosen by the
 * caller, unique among the live handles of the writer). Its counter
 * starts at 0, or where the previous, freed handle of the same id
 * stopped. A handle must be used by one thread at a time; different
 * handles may be used by different threads at once. Sets *out.
 */
int weft_heph_stream_create(weft_heph_writer *w, uint32_t stream_id,
			    weft_heph_stream **out);

/*
 * Writes what the stream buffers, as whole packets in one write(), and
 * detaches the handle from the writer before releasing it (a write
 * failure is reported by weft_heph_writer_close()). An event in progress
 * is dropped. Valid until weft_heph_writer_free(), which releases the
 * handles left. NULL is accepted.
 */
void weft_heph_stream_free(weft_heph_stream *s);

/*
 * Writes the complete packets the stream buffers now, so that they are in
 * the file (e.g. before a risky step, or to order packets across
 * streams). An event in progress stays buffered.
 */
int weft_heph_stream_flush(weft_heph_stream *s);

/* The stream id of the handle. */
uint32_t weft_heph_stream_id(const weft_heph_stream *s);

/* The counter the next event of the stream will carry. */
uint32_t weft_heph_stream_counter(const weft_heph_stream *s);

/*
 * Sets the counter of the next event (e.g. to continue a numbering, or to
 * test readers with the wrap from 0xFFFFFFFF to 0). Not during an event.
 */
int weft_heph_stream_set_counter(weft_heph_stream *s, uint32_t next);

/* ---- Events ----------------------------------------------------------------- */

/*
 * Starts an event: substream id, start and end in ns relative to the
 * epoch, description of `desc_len` bytes (WEFT_HEPH_CSTR: NUL-terminated).
 * Attributes follow with weft_heph_event_add_*(), then
 * weft_heph_event_end(). The packet is built in the stream's buffer: no
 * allocation, no system call unless the buffer is full. A begin while an
 * event is in progress is a misuse: both events are refused (a refused
 * event left without an end is simply replaced).
 */
int weft_heph_event_begin(weft_heph_stream *s, uint64_t substream, uint64_t start,
			  uint64_t end, const char *desc, size_t desc_len);

/*
 * Attributes of the event begun on `s`; `name` is NUL-terminated. When
 * one fails (name or value too long, no event begun), the whole event is
 * refused: later additions are ignored and weft_heph_event_end() returns
 * the error without writing anything, so a caller may check only that.
 */
int weft_heph_event_add_u64(weft_heph_stream *s, const char *name, uint64_t value);
int weft_heph_event_add_i64(weft_heph_stream *s, const char *name, int64_t value);
int weft_heph_event_add_f64(weft_heph_stream *s, const char *name, double value);
/* A string of `len` bytes (WEFT_HEPH_CSTR: NUL-terminated). */
int weft_heph_event_add_str(weft_heph_stream *s, const char *name,
			    const char *value, size_t len);

/* Arrays of `count` elements (at most WEFT_HEPH_MAX_LEN; 0 is valid). */
int weft_heph_event_add_u64_array(weft_heph_stream *s, const char *name,
				  const uint64_t *values, size_t count);
int weft_heph_event_add_i64_array(weft_heph_stream *s, const char *name,
				  const int64_t *values, size_t count);
int weft_heph_event_add_f64_array(weft_heph_stream *s, const char *name,
				  const double *values, size_t count);
/* `lens` may be NULL: every element is then NUL-terminated. */
int weft_heph_event_add_str_array(weft_heph_stream *s, const char *name,
				  const char *const *values, const size_t *lens,
				  size_t count);

/*
 * Completes the event begun on `s`: sets its size, gives it the stream's
 * counter (which then advances, wrapping at 2^32) and leaves it in the
 * buffer (a packet larger than the buffer is written alone at once).
 * Returns the error of a refused event, which is then dropped.
 */
int weft_heph_event_end(weft_heph_stream *s);

/* Drops the event begun on `s` (nothing is written, the counter stays). */
void weft_heph_event_cancel(weft_heph_stream *s);

/*
 * One event without attributes, `desc` NUL-terminated: begin + end.
 */
int weft_heph_emit(weft_heph_stream *s, uint64_t substream, uint64_t start,
		   uint64_t end, const char *desc);

WEFT_API_END

#ifdef __cplusplus
}
#endif

#endif /* WEFT_HEPH_H */
