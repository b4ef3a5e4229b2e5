/* SPDX-License-Identifier: MIT */
/*
 * weft/span.h - the spans of any trace: what was running, from when to
 * when, inside what.
 *
 * A span is an interval on a timeline of a stream: a region between its
 * enter and its leave (ovni enter/leave pairs, thread states, Pallas
 * Enter/Leave), or an event recorded as an interval (Heph). The pairing
 * is the format's (weft_event_classify()): the iterator pairs each ENTER
 * with the next LEAVE of the same channel and pair key, rebuilds the
 * nesting of INTERVAL events by containment, and gives every span its
 * depth, its parent and the time its children cover, so that exclusive
 * time needs no stack of the caller's. Outputs, profiles and users share
 * this one pairing.
 *
 *   weft_span_options o;
 *   weft_span_options_init(&o);
 *   weft_span_iter *it;
 *   if (weft_span_iter_create(trace, &o, &it) == 0) {
 *       const weft_span *s;
 *       while (weft_span_iter_next(it, &s) == 1)
 *           printf("%s %" PRIu64 "\n", s->name, s->end - s->start);
 *       weft_span_iter_free(it);
 *   }
 *
 * Order: a span comes out when it closes, so children come before their
 * parent and spans come in the order of their ends (per timeline);
 * instants come at their time. Ids are given in the order spans begin.
 *
 * Timelines: a stream has its own timeline (Heph, Pallas: one call tree)
 * and, for formats whose enters and leaves nest per channel only (ovni:
 * "nosv VT", "running"), one timeline per channel. Spans nest within a
 * timeline, never across: the parent of a span is on its timeline.
 *
 * Limits and ends, as the viewers see them: a timeline keeps 512 open
 * spans (deeper enters are dropped and counted, the depth Perfetto
 * keeps); a LEAVE that closes nothing is counted and skipped; a span
 * never closed ends at the last time of its stream (WEFT_SPAN_UNCLOSED);
 * with a time window, spans crossing its edges are cut to it
 * (WEFT_SPAN_CLIPPED). Events without a real time (ROSS analysis
 * samples) are left out, unless spans are placed on virtual time.
 *
 * Memory: an open-span stack per timeline and one copy of each name;
 * nothing per event. Not thread-safe: one iterator per thread.
 */
#ifndef WEFT_SPAN_H
#define WEFT_SPAN_H

#include <stddef.h>
#include <stdint.h>

#include "weft/event.h"
#include "weft/api.h"

#ifdef __cplusplus
extern "C" {
#endif
WEFT_API_BEGIN

enum weft_span_flags {
	WEFT_SPAN_CLIPPED = 1u << 0,   /* cut by the time window */
	WEFT_SPAN_UNCLOSED = 1u << 1,  /* never closed in the trace */
	WEFT_SPAN_INSTANT = 1u << 2    /* an instant (with_instants): start == end */
};

typedef struct weft_span {
	uint64_t id;          /* 1, 2, ... in the order spans begin */
	uint64_t parent;      /* the enclosing span's id (same timeline); 0: none */
	uint32_t stream;      /* stream index */
	uint32_t depth;       /* 0 at the top of its timeline */
	/* The timeline: NULL for the stream's own, else the channel's name
	 * ("nosv VT", "running"). Valid as long as the trace. */
	const char *timeline;
	/* Name (region, event description, state) and its group ("nosv",
	 * "mpi"; NULL: none). NUL-terminated, valid as long as the iterator. */
	const char *name;
	const char *category;
	/* with_codes: the code of the event that began the span (ovni "VTx",
	 * a Heph description), NUL-terminated, valid as long as the
	 * iterator; NULL without with_codes, and for a span begun by the
	 * window's start. */
	const char *code;
	uint64_t start, end;  /* ns (virtual time: units x virtual_unit) */
	uint64_t children;    /* ns covered by its direct children */
	uint64_t exclusive;   /* end - start - children (0 when they overlap more) */
	unsigned flags;       /* enum weft_span_flags */
} weft_span;

/* What the iterator takes. Initialise with weft_span_options_init(). */
typedef struct weft_span_options {
	/* Streams and event codes (NULL: all) and the time window [from, to]
	 * (to = 0: none); the window cuts spans, it does not drop them. */
	weft_filter filter;
	/* > 0: spans on virtual time (ROSS), one unit = this many ns. */
	double virtual_unit;
	/* 1: also deliver instants (POINT events, flagged WEFT_SPAN_INSTANT)
	 * with their parent, the innermost span open on their stream's own
	 * timeline (not a channel's), and its depth. */
	int with_instants;
	/* 1: give each span the code of the event that began it (a look-up
	 * per span: off by default). */
	int with_codes;
	/* 1: the spans of the ovni emulation instead of the format's (ovni
	 * traces only; weft/emu.h): on each thread, the intervals during
	 * which a channel of its row in ovniemu's thread.prv holds a value.
	 * stream = the thread's stream; timeline = the channel's title
	 * ("nOS-V task type", "Thread: thread state"); name = the value's
	 * label ("Running", a task type's label; a number has its decimal
	 * text); category = the channel's model ("nosv"; "system" for the
	 * thread's state, affinity and TID). Stack channels (subsystems)
	 * nest: their spans have depth, parent and children. Every event is
	 * replayed: no code_pattern or virtual time; stream_pattern selects
	 * the threads, the window cuts the spans. No instants or codes. A
	 * trace the models refuse ends the iteration with WEFT_EFORMAT (the
	 * spans up to the failing event first, closed there). */
	int emulate;
	/* emulate: run every model, required or not (ovniemu -a). */
	int all_models;
	/* emulate: fnmatch() glob selecting the channels by "<model>.<name>"
	 * ("nosv.type", "system.state") or by title ("nOS-V task type").
	 * NULL: every channel, and of them only the values that have a label
	 * (states, subsystems, task types, CPUs, labelled marks): the values
	 * that are plain numbers (task, body and app ids, ranks, TIDs: one
	 * name per distinct number) come only from channels named here. */
	const char *channels;
} weft_span_options;

/* What the iterator met so far. */
typedef struct weft_span_stats {
	uint64_t events;           /* events read */
	/* events read inside the window (the events before it are read too,
	 * for the spans open at its start): 0 when the filter selected none */
	uint64_t selected;
	uint64_t spans;            /* spans delivered */
	uint64_t instants;         /* instants delivered */
	uint64_t unmatched_leaves; /* LEAVEs that closed nothing (skipped) */
	uint64_t unclosed;         /* spans closed at their stream's end */
	uint64_t too_deep;         /* ENTERs past 512 open spans (dropped) */
	uint64_t no_time;          /* events without a time on the axis (skipped) */
} weft_span_stats;

typedef struct weft_span_iter weft_span_iter;

void weft_span_options_init(weft_span_options *options);
/*
 * An iterator over the spans of `trace`, which it reads through a cursor
 * of its own in time order (WEFT_ORDER_TIME, whatever order the trace
 * was opened in: intervals nest by containment only when parents come
 * first). WEFT_ENOMEM, WEFT_EINVAL (bad options) or the cursor's
 * errors, with the message set.
 */
int weft_span_iter_create(weft_trace *trace, const weft_span_options *options,
			  weft_span_iter **out);
/*
 * The next span: 1 and *span (valid until the next call), 0 at the end,
 * or a negative WEFT_E* code when reading failed (after the spans of
 * what was read, closed, have been delivered).
 */
int weft_span_iter_next(weft_span_iter *iter, const weft_span **span);
void weft_span_iter_stats(const weft_span_iter *iter, weft_span_stats *out);
void weft_span_iter_free(weft_span_iter *iter);

WEFT_API_END

#ifdef __cplusplus
}
#endif

#endif /* WEFT_SPAN_H */
