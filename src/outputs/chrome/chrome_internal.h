/* SPDX-License-Identifier: MIT */
/*
 * outputs/chrome/chrome_internal.h - what the files of the Chrome JSON
 * writer share. The writer streams Chrome's Trace Event format (JSON)
 * from the unified event model (see outputs/chrome.h for the mapping and
 * the two modes). The constant part of each event of a stream
 * ("pid":P,"tid":T,"ts":) is rendered once per stream; the rest is
 * formatted by hand into the output buffer, so that an event costs no
 * printf and, in the common case, a few reservations of the buffer.
 *
 * The files:
 *   chrome_writer.c   life cycle: create, header, footer, report, free
 *   chrome_sink.c     the view mode (a sink of outputs/view.h)
 *   chrome_compat.c   the Heph-compatible mode (events as read)
 *   chrome_fixup.c    Heph's same-start fix-up of that mode
 *   chrome_json.c     JSON text: strings, numbers, fields as "args"
 *   chrome_shared.c   part mode: the view mode on streams shared among
 *                     threads and ranks (the engine: outputs/view_shared.c)
 *
 * Internal to the Chrome writer (weft__chrome_ prefix).
 */
#ifndef WEFT_OUTPUTS_CHROME_INTERNAL_H
#define WEFT_OUTPUTS_CHROME_INTERNAL_H

#include <stdint.h>
#include <string.h>

#include "core/internal.h"
#include "outputs/bg_writer.h"
#include "outputs/chrome.h"
#include "outputs/float_format.h"
#include "outputs/keyed_runs.h"
#include "outputs/outputs.h"
#include "outputs/view.h"
#include "outputs/view_shared.h"

/* Strings up to this length are copied in one reservation when plain. */
#define SHORT_STRING_MAX 256
#define INITIAL_FIELD_CAP 16
/* Room of the per-stream prefix: two 20-digit numbers and the keys. */
#define PREFIX_MAX 96
/* Room for the head of an event: separator, phase, prefix, two times. */
#define HEAD_ROOM (PREFIX_MAX + 96)
/*
 * Background mode: a buffer goes to the writer thread once it holds
 * CHUNK bytes; the slack above that takes the event that crosses the
 * mark, so that only events larger than the slack are written directly
 * (in order all the same: see weft__bg_writer_start_positioned).
 */
#define CHUNK (1u << 20)
#define CHUNK_SLACK (64u << 10)

/* ---- The writer ---------------------------------------------------------------- */

/* What the writer keeps of one stream. */
typedef struct chrome_stream {
	char prefix[PREFIX_MAX]; /* '"pid":P,"tid":T,"ts":' (compat: Heph's spacing) */
	size_t prefix_len;
	uint64_t pid, tid;
	uint32_t track;          /* compat: the fix-up table of its (pid, tid) */
	weft__clock_cache ts;    /* the digits of ts above the last four */
} chrome_stream;

/* View mode: what the writer keeps of one view track. */
typedef struct chrome_track {
	char prefix[PREFIX_MAX]; /* '"pid":P,"tid":T,"ts":' */
	size_t prefix_len;
	char *label;             /* counters: "<thread> <counter>" */
	weft__clock_cache ts;
} chrome_track;

struct weft__chrome_writer {
	weft__outbuf out;
	const weft_trace *trace;
	int compat;
	chrome_stream *streams;
	size_t stream_count;
	weft__fixup *fixup;      /* compat: the same-start fix-up */
	size_t track_count;
	weft_field *fields;      /* scratch array for weft_event_fields() */
	size_t field_cap;
	int need_separator;      /* an event was written: the next needs ",\n" */
	int error;               /* WEFT_ENOMEM of the fix-up, else 0 */
	weft__chrome_stats stats;
	weft__bg_output bg;      /* the writer thread, when asked for */
	chrome_track *tracks;    /* view mode: by view track id - 1 */
	uint32_t track_cap;
	weft__view_sink sink;    /* view mode: the callbacks */
	/* View mode: ts is time - origin (ns, whole seconds), chosen at the
	 * first timed event (see time_origin()). */
	uint64_t origin;
	int origin_set;
	char warning[256];       /* weft__chrome_writer_warning() */
	/* Part mode (chrome_shared.c): a part of a conversion shared among
	 * threads, writing records into its keyed run instead of JSON
	 * events; the merge makes them the events. Else NULL. */
	weft__view_part *part;
};

/* Appends a constant string. */
#define PUT_LITERAL(ob, lit) put_small((ob), (lit), sizeof(lit) - 1)

/* Appends n bytes (n <= WEFT__OUTBUF_MAX_RESERVE) with one reservation. */
static inline void put_small(weft__outbuf *ob, const char *s, size_t n)
{
	char *p = weft__outbuf_reserve(ob, n);
	memcpy(p, s, n);
	weft__outbuf_commit(ob, p + n);
}

/* Copies a constant string at p and returns the end. */
#define COPY_LITERAL(p, lit) (memcpy((p), (lit), sizeof(lit) - 1), (p) + sizeof(lit) - 1)

/* ---- Functions shared by the files ---------------------------------------------------- */

/* chrome_compat.c */
void weft__chrome_stream_setup(weft__chrome_writer *w, size_t index);
int weft__chrome_assign_tracks(weft__chrome_writer *w);

/* chrome_json.c */
void weft__chrome_put_string(weft__chrome_writer *w, const char *s, size_t n);
void weft__chrome_put_float(weft__chrome_writer *w, double v, int single);
void weft__chrome_put_member(weft__chrome_writer *w, const weft_field *f);
void weft__chrome_put_args(weft__chrome_writer *w, const weft_event *ev);

/* chrome_shared.c: the records of part mode */
void weft__chrome_part_declare(weft__chrome_writer *w, const weft__view_track *t);
char *weft__chrome_part_head(weft__chrome_writer *w, char *p, const weft__view_track *t,
			     char ph);
void weft__chrome_part_flow(weft__chrome_writer *w, const weft__view_track *t,
			    uint64_t time, const weft__view_item *it);
void weft__chrome_part_line_end(weft__chrome_writer *w);

/* chrome_sink.c: the origin of ts from the first time (view mode) */
uint64_t weft__chrome_time_origin(uint64_t first);
/* chrome_sink.c: what the merge of the parts writes */
void weft__chrome_put_part_line(weft__chrome_writer *w, uint32_t track, char ph,
				const char *text, size_t n);
void weft__chrome_put_flow(weft__chrome_writer *w, const weft__view_track *t,
			   uint64_t time, uint64_t flow_id, int end);

/* ---- Small functions of the per-event path, inline in every file ---------------------- */

/* After each event: hands the buffer to the writer thread once it holds a chunk. */
static inline void maybe_hand_over(weft__chrome_writer *w)
{
	if (WEFT__OUT_UNLIKELY(w->part != NULL))
		weft__chrome_part_line_end(w); /* a record is complete: keyed */
	else if (w->bg.running && w->out.len >= CHUNK)
		weft__bg_output_hand_over(&w->bg, &w->out);
}

/*
 * The three decimals of a time in microseconds, without trailing zeros
 * (nothing for whole microseconds).
 */
static inline char *put_fraction(char *p, uint32_t frac)
{
	if (frac == 0)
		return p;
	*p++ = '.';
	*p++ = (char)('0' + frac / 100);
	frac %= 100;
	if (frac != 0) {
		*p++ = (char)('0' + frac / 10);
		if (frac % 10 != 0)
			*p++ = (char)('0' + frac % 10);
	}
	return p;
}

/*
 * Nanoseconds as microseconds: the integer part, then up to three
 * decimals without trailing zeros (1610113734119010050 ns ->
 * 1610113734119010.05). Exact: no floating point involved.
 */
static inline char *put_micros(char *p, uint64_t ns)
{
	return put_fraction(weft__fmt_u64(p, ns / 1000), (uint32_t)(ns % 1000));
}

/*
 * The same for the start times of a stream, which grow slowly: the
 * digits above the last four come from the stream's cache.
 */
static inline char *put_start_micros(weft__clock_cache *c, char *p, uint64_t ns)
{
	return put_fraction(weft__fmt_clock(c, p, ns / 1000), (uint32_t)(ns % 1000));
}

/* ",\n" before every event but the first. */
static inline char *put_separator(weft__chrome_writer *w, char *p)
{
	if (WEFT__OUT_LIKELY(w->need_separator)) {
		p[0] = ',';
		p[1] = '\n';
		return p + 2;
	}
	w->need_separator = 1;
	return p;
}

#endif
