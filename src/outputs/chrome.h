/* SPDX-License-Identifier: MIT */
/*
 * outputs/chrome.h - events of any trace as Chrome's Trace Event format
 * (JSON object form), written as a stream: header, events, footer.
 *
 * Two modes:
 *   - default (view mode): a sink of the view layer (outputs/view.h),
 *     which never knows the events' format: process and thread names as
 *     metadata events ("M") when a track is first used, spans as "B"/"E"
 *     (their channels on tids of their own, named "<thread> <channel>";
 *     pids and tids are the view's: never 0, within 32 bits), complete spans as "X" with "dur", instants as "i" with
 *     scope "t", counters as "C" named "<thread> <counter>" with
 *     {"value": V}; every string escaped, times in microseconds with the
 *     nanoseconds as decimals, relative to an origin stated at the end
 *     ("otherData" and "metadata": {"ts_origin_ns": O}; see
 *     weft__chrome_time_origin() in chrome/chrome_sink.c), floats as the
 *     shortest JSON number, NaN and infinities as strings; cut or never
 *     closed spans carry "clipped" / "unclosed": true in their args;
 *   - heph_compat: byte for byte what Heph's converter `convert_trace`
 *     writes from the events as read (layout, integer microseconds, its
 *     same-start fix-up, floats as Rust prints them), except that strings
 *     are escaped where its output would not be JSON, arrays are written
 *     as JSON arrays, and NaN and infinities are strings (docs/convert.md).
 *     pid: the stream's top-level node number, tid: the stream's node
 *     number (Heph: stream id and substream id).
 *
 * Internal to libweft (weft__ prefix).
 */
#ifndef WEFT_OUTPUTS_CHROME_H
#define WEFT_OUTPUTS_CHROME_H

#include <stddef.h>
#include <stdint.h>

#include "outputs/view.h"
#include "weft/weft.h"

typedef struct weft__chrome_options {
	int heph_compat;            /* 1: Heph's converter's bytes */
	/* 1: when the output is a regular file, write it from a second
	 * thread (outputs/bg_writer.c), so that formatting and the kernel's
	 * copy into the page cache overlap. */
	int background;
	/* Background mode, for an output synced (fsync) at the end anyway:
	 * written to the disk as it goes and dropped from the page cache
	 * once there (see weft__bg_writer_start_positioned). */
	int write_behind;
} weft__chrome_options;

/* What the writer did, for the command's report. */
typedef struct weft__chrome_stats {
	uint64_t events;          /* events written (metadata events excluded) */
	uint64_t bad_fields;      /* events whose fields could not be decoded */
	uint64_t fixup_moved;     /* compat: events the fix-up moved */
	uint64_t fixup_stuck;     /* compat: events left in place (the fix-up
	                             would never end: Heph's converter hangs) */
	uint64_t fixup_entries;   /* compat: timestamps held by the fix-up */
	uint64_t fixup_bytes;     /* compat: memory of the fix-up tables */
	uint64_t before_origin;   /* times before the origin: negative ts */
	uint64_t beyond_exact;    /* ts of 2^42 us or more (not exact as doubles) */
} weft__chrome_stats;

/* View mode: ts = (time - origin) / 1000, the origin a whole second one
 * day before the first time (0 when that is negative); ts below
 * WEFT__CHROME_EXACT_NS read back exactly in Perfetto's importer. */
#define WEFT__CHROME_NS_PER_S 1000000000ull
#define WEFT__CHROME_ORIGIN_MARGIN_S 86400ull
#define WEFT__CHROME_EXACT_NS ((1ull << 42) * 1000ull)

typedef struct weft__chrome_writer weft__chrome_writer;

/*
 * A writer of the events of `trace` to the file descriptor `fd` (which
 * it does not close). Sets *out; WEFT_ENOMEM (message set) on failure.
 */
int weft__chrome_writer_create(const weft_trace *trace, int fd,
			       const weft__chrome_options *options,
			       weft__chrome_writer **out);
/* The header of the document. */
void weft__chrome_writer_begin(weft__chrome_writer *w);
/* Compat mode: one event; failures of the output are reported by _finish(). */
void weft__chrome_writer_event(weft__chrome_writer *w, const weft_event *event);
/* Default mode: the writer as a sink of the view layer (after _begin()). */
const weft__view_sink *weft__chrome_writer_sink(weft__chrome_writer *w);
/*
 * The footer, then everything is flushed. Returns 0, WEFT_EIO when the
 * output failed, or WEFT_ENOMEM when the fix-up ran out of memory (the
 * output then misses some shifts); the message is set.
 */
int weft__chrome_writer_finish(weft__chrome_writer *w);
/* View mode, after _finish(): a warning about times viewers may not read
 * as written (before the origin, or too far after it), or NULL. */
const char *weft__chrome_writer_warning(weft__chrome_writer *w);
/* 1 once a write of the output has failed (the rest would be lost). */
int weft__chrome_writer_failed(const weft__chrome_writer *w);
void weft__chrome_writer_stats(const weft__chrome_writer *w, weft__chrome_stats *out);
/* Releases the writer (nothing is flushed). NULL is accepted. */
void weft__chrome_writer_free(weft__chrome_writer *w);

/* ---- Heph's same-start fix-up (outputs/chrome/chrome_fixup.c) ------------- */

/*
 * The ts -> dur maps of Heph's converter, one per track (a (pid, tid)
 * pair), and its rule: an event whose ts (us) is taken on its track
 * moves up (ts + 1, dur - 1) while the event there is longer, else down
 * (ts - 1, dur + 1), until its ts is free. The result is exactly that of
 * Heph's one-step walk, found by searches in O(log) instead (see the
 * file). Where Heph would underflow dur, it stays 0.
 */
typedef struct weft__fixup weft__fixup;

int weft__fixup_create(size_t tracks, weft__fixup **out);
/*
 * Places an event of `track` at *ts with *dur: moves them and records
 * the event. Returns 1, or 0 when Heph's walk would never end (the event
 * is left as given and not recorded), or WEFT_ENOMEM (message set).
 */
int weft__fixup_place(weft__fixup *f, uint32_t track, uint64_t *ts, uint64_t *dur);
/* Events recorded, and the bytes of the tables. */
uint64_t weft__fixup_entries(const weft__fixup *f);
uint64_t weft__fixup_bytes(const weft__fixup *f);
void weft__fixup_free(weft__fixup *f);

#endif /* WEFT_OUTPUTS_CHROME_H */
