/* SPDX-License-Identifier: MIT */
/*
 * outputs/view.h - the events of any trace as what a timeline viewer
 * shows: tracks (processes, threads, sub-timelines, counters) and, on
 * them, spans that open and close, complete spans, instants and counter
 * values. The viewer writers (Perfetto, Chrome JSON, Paraver) and the
 * Pallas converter are sinks of this layer; none of them knows which
 * format the events came from.
 *
 * The view reads a cursor and uses weft_event_classify() (decided by each
 * format's backend) to turn events into:
 *   - spans: an ENTER opens a span on the timeline of its (stream,
 *     channel), the next LEAVE with the same pair key closes it. Spans of
 *     one timeline nest. A LEAVE that matches no open span is counted and
 *     skipped; a span still open at the end is closed at the last time
 *     seen on its stream, flagged WEFT__VIEW_UNCLOSED;
 *   - complete spans (INTERVAL events, e.g. Heph): [time, end] at once;
 *   - instants (POINT events); message ends (sends and receives that the
 *     backend gives a flow key) carry a flow id: the n-th send and the
 *     n-th receive of one key share it;
 *   - counter values (COUNTER events: one counter; SAMPLE events: one
 *     counter per numeric field, named after the field).
 * Events that have no real time (WEFT_EVENT_NO_TIME) are left out of
 * real-time views (counted), kept in virtual-time views.
 *
 * Tracks: a process track per parent node of the streams (ovni process,
 * Heph stream, ROSS PE, Pallas archive; a stream without a parent gets
 * its own), a thread track per stream, a child track per (stream,
 * channel) other than the stream's own, a counter track per (stream,
 * counter name). Each track is declared to the sink once, before its
 * first use, parents first. pid and tid are the nodes' numbers when they
 * are in [1, WEFT__VIEW_NUMBER_MAX] and unique (pids in the output, tids
 * in their process), else fresh numbers, new to the output, counted up
 * from above the largest node number (then from 1); CHANNEL and STATE
 * tracks get a fresh tid of their own (Chrome has no sub-tracks), COUNTER
 * tracks their thread's. So every number fits Perfetto's int32 and
 * Chrome's 32 bits, none is 0 (the idle thread of Perfetto), and no
 * sub-timeline has its process's pid as tid (the main thread's).
 *
 * Time window: with from/to set, events are still read from the start
 * (so that spans opened earlier are known) but only what happens in
 * [from, to] reaches the sink: spans open at `from` begin at `from`
 * (flagged WEFT__VIEW_CLIPPED), spans open at `to` end at `to` (flagged),
 * complete spans are cut to the window; counters show their last value
 * at `from`. The cursor must be created without a time window.
 *
 * Nesting limit: a timeline keeps WEFT__VIEW_MAX_DEPTH open spans, the
 * depth Perfetto's importer keeps (it drops deeper slices). Deeper enters
 * are dropped and counted per timeline (weft__view_too_deep()); while
 * some are open, a leave closes the innermost of them. A STATE timeline
 * does not nest: an ENTER while its state is on closes the span before.
 *
 * Memory: a stack per timeline (bounded by WEFT__VIEW_MAX_DEPTH spans)
 * and a record per track; nothing per event.
 *
 * Internal to libweft (weft__ prefix).
 */
#ifndef WEFT_OUTPUTS_VIEW_H
#define WEFT_OUTPUTS_VIEW_H

#include <stddef.h>
#include <stdint.h>

#include "weft/weft.h"

/* Open spans kept per timeline: Perfetto's trace processor keeps 512
 * nested slices per track (SliceTracker::kMaxDepth) and drops deeper ones
 * with an import error; Chrome JSON and Paraver use the same limit. */
#define WEFT__VIEW_MAX_DEPTH 512
/* The largest pid or tid the view hands out (int32, Perfetto's type). */
#define WEFT__VIEW_NUMBER_MAX INT32_MAX

typedef enum weft__view_track_kind {
	WEFT__TRACK_PROCESS = 1, /* a process: groups thread tracks */
	WEFT__TRACK_THREAD,      /* a stream's own timeline */
	WEFT__TRACK_CHANNEL,     /* a sub-timeline of a stream (ovni "nosv VT") */
	WEFT__TRACK_STATE,       /* a stream's running state (channel "running") */
	WEFT__TRACK_COUNTER      /* values of one counter of a stream */
} weft__view_track_kind;

typedef struct weft__view_track {
	uint32_t id;             /* 1, 2, ... in declaration order */
	uint32_t parent;         /* the enclosing track's id; 0 for processes */
	weft__view_track_kind kind;
	int64_t pid;             /* process number (unique in the output) */
	/* thread number (unique in its process; CHANNEL, STATE: their own;
	 * COUNTER: the thread's); processes: 0 (none) */
	int64_t tid;
	int32_t stream;          /* stream index; -1 for processes */
	/* Display name, NUL-terminated: the process node's path, the stream
	 * node's name ("thread.2184"), the channel ("nosv VT"), the counter
	 * name ("events_processed"). */
	const char *name;
	/* CHANNEL, STATE, COUNTER: the channel or counter name (= name). */
	const char *channel;
} weft__view_track;

enum weft__view_flags {
	WEFT__VIEW_CLIPPED = 1u << 0,  /* cut by the time window */
	WEFT__VIEW_UNCLOSED = 1u << 1  /* never closed in the trace */
};

/* What an event shows: name, category and its decoded fields. */
typedef struct weft__view_item {
	const char *name;        /* NOT NUL-terminated: name_len */
	uint32_t name_len;
	const char *category;    /* NUL-terminated, or NULL */
	const weft_field *args;  /* the event's decoded fields */
	int arg_count;
	const weft_event *event; /* the source event (NULL for synthetic
	                            ends: unclosed or clipped spans) */
	unsigned flags;          /* enum weft__view_flags */
	/* Instants that are message ends: the id both ends share (nonzero),
	 * and which end this is (WEFT_FLOW_OUT or WEFT_FLOW_IN; 0: none). */
	uint64_t flow_id;
	int flow_end;
	/* The flow key the id was made from (the backend's), with flow_id. */
	uint64_t flow_key;
} weft__view_item;

/*
 * The receiver of a view. Every callback is required. Calls come in the
 * cursor's order (time order for merged cursors; file order for Heph),
 * except the ends of complete spans, which come with their begins, and
 * the closing of unclosed spans, which comes at the end. The track and
 * item pointers are valid during the call only (keep the track's id).
 */
typedef struct weft__view_sink {
	void *ctx;
	/* A new track (once, before its first use, after its parent). */
	void (*track)(void *ctx, const weft__view_track *track);
	/* A span opens at `time` on `track` (THREAD, CHANNEL or STATE). */
	void (*begin)(void *ctx, const weft__view_track *track, uint64_t time,
		      const weft__view_item *item);
	/* The innermost open span of `track` closes at `time`. `item` is
	 * the LEAVE event (its fields as args), or a synthetic item with
	 * event NULL and the flags. */
	void (*end)(void *ctx, const weft__view_track *track, uint64_t time,
		    const weft__view_item *item);
	/* A span [time, end] (end >= time), nested like the source's. */
	void (*complete)(void *ctx, const weft__view_track *track, uint64_t time,
			 uint64_t end, const weft__view_item *item);
	/* An instant at `time`. */
	void (*instant)(void *ctx, const weft__view_track *track, uint64_t time,
			const weft__view_item *item);
	/* A COUNTER track takes `value` at `time`. */
	void (*counter)(void *ctx, const weft__view_track *track, uint64_t time,
			double value);
} weft__view_sink;

typedef struct weft__view_options {
	uint64_t from;           /* window start (ns), inclusive */
	uint64_t to;             /* window end (ns), inclusive; 0 = none */
	/* 1 when the cursor delivers events in time order (merged cursors):
	 * reading stops at the first event after `to`. */
	int time_ordered;
	/* > 0: virtual time instead of real time (ROSS): an event's time is
	 * its virtual time (the field weft_event_classify() names) times
	 * this many ns; events without one are skipped (counted). */
	double virtual_unit;
	/* 1: items carry no decoded fields (args NULL, arg_count 0), for
	 * sinks that only want names and times (spans, profiles): saves the
	 * decoding of every event. */
	int no_args;
} weft__view_options;

/* What the view did, for the command's report. */
typedef struct weft__view_stats {
	uint64_t events;            /* events read */
	uint64_t in_window;         /* events read whose time is in the window */
	uint64_t spans;             /* spans begun (complete ones included) */
	uint64_t instants;
	uint64_t flow_ends;         /* instants that are message ends */
	uint64_t counter_values;
	uint64_t unmatched_leaves;  /* LEAVEs that closed nothing (skipped) */
	uint64_t unclosed_spans;    /* spans closed at the end of their stream */
	uint64_t too_deep;          /* ENTERs past WEFT__VIEW_MAX_DEPTH (dropped) */
	uint64_t state_restarts;    /* STATE spans closed by an ENTER (flagged unclosed) */
	uint64_t bad_fields;        /* events whose fields could not be decoded */
	uint64_t no_virtual_time;   /* virtual time: events without one (skipped) */
	uint64_t virtual_end;       /* virtual time: samples at the end of the run
	                               (virtual time DBL_MAX: skipped) */
	uint64_t no_real_time;      /* real time: WEFT_EVENT_NO_TIME events (skipped) */
	uint64_t tracks;
} weft__view_stats;

typedef struct weft__view weft__view;

/* A timeline that lost spans past WEFT__VIEW_MAX_DEPTH. */
typedef struct weft__view_too_deep_timeline {
	uint32_t stream;            /* stream index */
	const char *channel;        /* NULL: the stream's own timeline */
	uint64_t lost;              /* ENTERs dropped */
	uint64_t deepest;           /* the deepest nesting met */
} weft__view_too_deep_timeline;

/* A view of `trace` into `sink`. WEFT_ENOMEM (message set) on failure. */
int weft__view_create(const weft_trace *trace, const weft__view_options *options,
		      const weft__view_sink *sink, weft__view **out);
/*
 * Reads the cursor to its end, feeding the sink, then closes what is
 * still open. Returns what weft_cursor_next() returned last (0, or a
 * negative WEFT_E* code: what was read before is delivered and closed).
 */
int weft__view_run(weft__view *view, weft_cursor *cursor);
/* One event (for callers that read the cursor themselves). */
void weft__view_event(weft__view *view, const weft_event *event);
/*
 * Instead of weft__view_event(), for `weft check`: only follows how the
 * event's spans nest (ENTER and LEAVE), to find the timelines that go
 * deeper than WEFT__VIEW_MAX_DEPTH (weft__view_too_deep()). The sink gets
 * the tracks, nothing else.
 */
void weft__view_nesting(weft__view *view, const weft_event *event);
/* Closes every open span (at the window's end or its stream's last time). */
void weft__view_finish(weft__view *view);
/* 1 once the time window has ended (time-ordered cursors): reading
 * further changes nothing. */
int weft__view_window_ended(const weft__view *view);
/* A stable NUL-terminated copy of s[0..n), kept as long as the view
 * (one per distinct text); NULL when out of memory. */
const char *weft__view_intern(weft__view *view, const char *s, size_t n);
/* The track of a stream / of a track id (NULL when unknown). */
const weft__view_track *weft__view_track_get(const weft__view *view, uint32_t id);
void weft__view_stats_get(const weft__view *view, weft__view_stats *out);
/* Adds the counts of `part` to `sum` (tracks too: set them apart). */
void weft__view_stats_add(weft__view_stats *sum, const weft__view_stats *part);
/*
 * For a conversion shared among threads (outputs/view_shared.c),
 * where each part runs a view of its own over some streams and one view
 * numbers the tracks and flows for the whole output, in the merged order:
 *   - weft__view_declare() declares the track a part met first (kind,
 *     stream, and the channel or counter name) as if that view had met
 *     the same event: the stream's process and thread tracks first, each
 *     once. NULL when out of memory; processes are declared through
 *     their threads (NULL for WEFT__TRACK_PROCESS);
 *   - weft__view_flow_id() is the id of a message end of `key` (the n-th
 *     send and the n-th receive of a key share it), counted in the order
 *     of the calls.
 */
const weft__view_track *weft__view_declare(weft__view *view, weft__view_track_kind kind,
					   uint32_t stream, const char *name, size_t name_len);
uint64_t weft__view_flow_id(weft__view *view, uint64_t key, int end);
/*
 * The timelines that lost spans past the limit, in stream order: up to
 * `cap` in out[]; returns how many there are.
 */
size_t weft__view_too_deep(const weft__view *view, weft__view_too_deep_timeline *out,
			   size_t cap);
void weft__view_free(weft__view *view);

#endif /* WEFT_OUTPUTS_VIEW_H */
