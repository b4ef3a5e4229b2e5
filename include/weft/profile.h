/* SPDX-License-Identifier: MIT */
/*
 * weft/profile.h - where the time goes: per name (region, task type,
 * event description), or per stream and name, how many calls, their
 * inclusive and exclusive time, min, mean and max, for a trace of any
 * format.
 *
 *   weft_profile_options o;
 *   weft_profile_options_init(&o);
 *   o.by = WEFT_PROFILE_BY_STREAM;       // per thread / rank / LP
 *   weft_profile *p;
 *   if (weft_profile_compute(trace, &o, &p) == 0) {
 *       for (size_t i = 0; i < weft_profile_row_count(p); i++) {
 *           const weft_profile_row *r = weft_profile_row_get(p, i);
 *           ...
 *       }
 *       weft_profile_free(p);
 *   }
 *
 * The figures come from the spans (weft/span.h): a call is a span, its
 * inclusive time its length, its exclusive time the length minus what
 * its children on the same timeline cover. Instants (point events) are
 * counted per name too (`instants`), so that traces without spans (ROSS
 * event records) still profile how many events each stream handled.
 *
 * Pallas traces store the duration of every call in their grammar: the
 * default source for them (WEFT_PROFILE_AUTO) reads those instead of
 * replaying the events (same figures, much faster); WEFT_PROFILE_HEADERS
 * reads only the sequence headers (instant: counts, min and max exact,
 * totals from the stored means); WEFT_PROFILE_SPANS replays the events,
 * as for every other format. Stored durations know no time window,
 * stream or code selection and no instants: with a filter, AUTO replays.
 *
 * Emulated (`emulate`, ovni traces): the names are the values the
 * emulated channels of the threads hold (weft/emu.h), a row per channel
 * and value: `weft profile --emulate --by stream` is the time per thread
 * state, subsystem and task type of each thread.
 *
 * Rows: BY_NAME, sorted by inclusive time (largest first), then name;
 * BY_STREAM, by stream index, then the same (emulated: by channel after
 * the stream). Memory: a row per name (per
 * stream and name), plus the span iterator's stacks.
 */
#ifndef WEFT_PROFILE_H
#define WEFT_PROFILE_H

#include <stddef.h>
#include <stdint.h>

#include "weft/span.h"
#include "weft/api.h"

#ifdef __cplusplus
extern "C" {
#endif
WEFT_API_BEGIN

typedef enum weft_profile_by {
	WEFT_PROFILE_BY_NAME = 0,   /* one row per name, over every stream */
	WEFT_PROFILE_BY_STREAM      /* one row per (stream, name) */
} weft_profile_by;

typedef enum weft_profile_source {
	WEFT_PROFILE_AUTO = 0,      /* stored durations where the format has them */
	WEFT_PROFILE_SPANS,         /* replay the events into spans */
	WEFT_PROFILE_DURATIONS,     /* Pallas: the stored durations */
	WEFT_PROFILE_HEADERS        /* Pallas: the sequence headers alone */
} weft_profile_source;

typedef struct weft_profile_options {
	weft_profile_by by;
	weft_profile_source source;
	/* Streams, codes and time window (the window cuts calls to it). */
	weft_filter filter;
	/* > 0: on virtual time (ROSS), one unit = this many ns. */
	double virtual_unit;
	/* 1: profile the spans of the ovni emulation (weft_span_options
	 * .emulate): per channel value (a thread state, a subsystem, a task
	 * type's label) instead of per region; each row names its channel
	 * (weft_profile_row.timeline), so that BY_STREAM gives the time per
	 * task type per thread. Always from the spans (source AUTO or SPANS);
	 * no code_pattern. */
	int emulate;
	/* emulate: every model (ovniemu -a), and the channels to profile (a
	 * glob, as weft_span_options.channels; NULL: the labelled values of
	 * every channel). */
	int all_models;
	const char *channels;
	/* Threads that read streams, each its part (by bytes) with the trace
	 * opened again: 0 = the trace's `threads` option, then WEFT_THREADS,
	 * then the cores (at most 8, one per 4 MiB plus 4 KiB per stream of the
	 * trace: each thread opens the trace again) when each stream is read
	 * without the others' bytes (not ROSS); 1 = this thread only. The profile does not depend on it. Not
	 * for the emulation (one thread). */
	int threads;
} weft_profile_options;

typedef struct weft_profile_row {
	const char *name;        /* NUL-terminated */
	/* BY_STREAM: the stream index; BY_NAME: -1. */
	int64_t stream;
	uint64_t calls;          /* spans */
	uint64_t instants;       /* point events of this name */
	uint64_t inclusive;      /* ns, the sum of the calls' lengths */
	uint64_t exclusive;      /* ns, without their children */
	uint64_t min, max;       /* ns, the shortest and longest call (0: none) */
	double mean;             /* inclusive / calls (0: none) */
	/* emulate: the channel ("nOS-V task type", "Thread: thread state");
	 * rows are per channel and value. NULL otherwise. */
	const char *timeline;
} weft_profile_row;

typedef struct weft_profile weft_profile;

void weft_profile_options_init(weft_profile_options *options);
/*
 * The profile of `trace`. WEFT_EINVAL for options that do not apply
 * (DURATIONS or HEADERS on a format without stored durations, or with a
 * filter), WEFT_ENOMEM, or the reading errors (message set). A stream
 * that cannot be read to its end is a diagnostic of the trace; the
 * profile has what was read.
 */
int weft_profile_compute(weft_trace *trace, const weft_profile_options *options,
			 weft_profile **out);
size_t weft_profile_row_count(const weft_profile *profile);
const weft_profile_row *weft_profile_row_get(const weft_profile *profile, size_t index);
/* What the figures came from: WEFT_PROFILE_SPANS, _DURATIONS or _HEADERS. */
weft_profile_source weft_profile_source_used(const weft_profile *profile);
/* "spans", "durations", "headers" ("auto" for AUTO). */
const char *weft_profile_source_name(weft_profile_source source);
/* What the span replay met (zero for stored durations). */
void weft_profile_span_stats(const weft_profile *profile, weft_span_stats *out);
void weft_profile_free(weft_profile *profile);

WEFT_API_END

#ifdef __cplusplus
}
#endif

#endif /* WEFT_PROFILE_H */
