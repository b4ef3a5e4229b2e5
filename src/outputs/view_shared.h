/* SPDX-License-Identifier: MIT */
/*
 * outputs/view_shared.h - a viewer conversion on streams shared among
 * threads and ranks, byte for byte the output of one thread reading one
 * merged cursor (outputs/view_shared.c says how).
 *
 * Each part (a thread over its share of the streams) runs a view of its
 * own into a sink the output gives it, which writes records into the
 * part's keyed run (outputs/keyed_runs.h), each keyed by the event the
 * view is at; the engine merges the runs (and, on ranks, one run per
 * other rank) and hands each record back to the output, in the merged
 * order of all streams, with its track numbered on one view for the whole
 * output. Three kinds of output use it:
 *   - Chrome JSON (outputs/chrome/chrome_shared.c): its parts format the
 *     events' text, the merge adds the heads and flow ids;
 *   - every other viewer (Perfetto, Paraver: outputs/view_replay.c): the
 *     parts record the view's calls with what they carry, the merge makes
 *     the same calls on the output's sink, in the same order;
 *   - the emulation of ovni models (outputs/emu_shared.c): its parts take
 *     the events themselves (no view, records without tracks), each an
 *     emulator of whole looms (the deal by groups).
 *
 * Internal to libweft (weft__ prefix).
 */
#ifndef WEFT_OUTPUTS_VIEW_SHARED_H
#define WEFT_OUTPUTS_VIEW_SHARED_H

#include <stddef.h>
#include <stdint.h>

#include "outputs/keyed_runs.h"
#include "outputs/outputs.h"
#include "outputs/view.h"

/* ---- A part's records ------------------------------------------------------- */

/*
 * What a part's sink writes its records with. Every record begins with
 * its kind (one byte); the engine's own, 'D' (a track the part's view
 * declared), is written by weft__view_part_declare(); every other record
 * has, next, its track (4 bytes: weft__view_part_track()), which the
 * merge turns into the output's track.
 */
typedef struct weft__view_part {
	weft__keyed_runs *runs;
	int run;
	const uint8_t *selected; /* the part's streams (a byte per stream) */
	/* A track's number in the records: its view id * stride + part, so
	 * that the parts of one rank, merged into one run for rank 0, never
	 * give two tracks one number. */
	uint32_t stride, part;
	uint64_t time;           /* the key of the records being written: */
	uint32_t stream;         /* the event the view is at */
	int finishing;           /* the view's finish: after every event */
	size_t start;            /* where the record being written began */
	int rc;                  /* the first error of the run (stops the part) */
	weft__outbuf *out;       /* the run's buffer (the output's part sets it) */
} weft__view_part;

/* Keys what is written next on track t during the view's finish: after
 * every event, in stream order, as one view closes them. */
#define WEFT__VIEW_FINISH_STREAM 0x80000000u
static inline void weft__view_part_key(weft__view_part *p, const weft__view_track *t)
{
	if (p->finishing) {
		p->time = UINT64_MAX;
		p->stream = WEFT__VIEW_FINISH_STREAM | (uint32_t)t->stream;
	}
}

/* The number of a track in the part's records. */
static inline uint32_t weft__view_part_track(const weft__view_part *p,
					     const weft__view_track *t)
{
	return t->id * p->stride + p->part;
}

/* Ends the record begun at p->start: keyed, handed on when a chunk is full. */
void weft__view_part_record_end(weft__view_part *p);
/* The 'D' record of a track the part's view declares (processes: none,
 * the merge declares them with their first thread). */
void weft__view_part_declare(weft__view_part *p, const weft__view_track *t);

/* The error of a record the merge cannot read (a part's bug). */
int weft__view_bad_record(void);

/* ---- What an output gives ---------------------------------------------------- */

#define WEFT__VIEW_SHARE_COUNTS 3 /* an output's own counts, added up */

typedef struct weft__view_share_ops {
	/* 1: the output needs the first time the view of all streams gives
	 * (Chrome's origin of ts), found before the parts start. */
	int wants_first_time;
	/* A part's sink over `handle` writing records through `p` (it sets
	 * p->out); *state is handed to the calls below. first: NULL, or the
	 * first time; arg: the job's part_arg. 0 or an error. On the part's
	 * thread. */
	int (*part_create)(weft_trace *handle, weft__view_part *p, const uint64_t *first,
			   const void *arg, void **state, weft__view_sink *sink);
	/* After the part's view finished: 0, or the error that lost records
	 * (no memory). */
	int (*part_status)(void *state);
	/* Adds its counts to counts[WEFT__VIEW_SHARE_COUNTS] and frees it (NULL: nothing). */
	void (*part_free)(void *state, uint64_t *counts);
	/* The merge, on the output (`out`): the first time (wants_first_time);
	 * a record of the output's track `track` of `view`; 1 once the output
	 * failed; the parts' and other ranks' counts. */
	void (*set_first_time)(void *out, uint64_t time);
	int (*merge)(void *out, weft__view *view, uint32_t track, const char *rec, size_t len);
	int (*failed)(void *out);
	void (*add_counts)(void *out, const uint64_t *counts);
	/* Optional: a part that takes the events itself instead of a view's
	 * calls (the emulation of ovni models: outputs/emu_shared.c).
	 * part_event gets each event of the part's share, p->time and
	 * p->stream set to its key (0, 1 to stop reading, or an error);
	 * part_finish ends the part, p->finishing set (it keys what it
	 * writes itself, after every event). Its records carry no track:
	 * the merge hands them to `merge` as they are (view NULL, track 0),
	 * and the first time is that of the first event. */
	int (*part_event)(void *state, weft__view_part *p, const weft_event *ev);
	int (*part_finish)(void *state, weft__view_part *p);
} weft__view_share_ops;

/* Chrome's (outputs/chrome/chrome_shared.c: its `out` a weft__chrome_writer). */
extern const weft__view_share_ops weft__chrome_share_ops;
/* Every other viewer's (outputs/view_replay.c: its `out` a weft__view_replay). */
extern const weft__view_share_ops weft__view_replay_ops;

/* The merge's end of the replay: the output's sink, called as one view would. */
typedef struct weft__view_replay weft__view_replay;
/* NULL without memory. */
weft__view_replay *weft__view_replay_create(const weft__view_sink *sink);
void weft__view_replay_free(weft__view_replay *r);

/* ---- The conversion ----------------------------------------------------------- */

typedef struct weft__view_shared {
	const weft_filter *filter;   /* the cursor's: no time window */
	const uint8_t *among;        /* per stream: converted */
	const uint32_t *groups;      /* per stream: its group, whose streams one part
	                                converts (weft__share_deal_groups); NULL: none */
	const void *part_arg;        /* handed to the output's part_create */
	int parts;                   /* threads that read them (2 or more) */
	weft__view_options view;     /* no time window, real time */
	/* Out: the parts' views' counts added (tracks: the output's); the
	 * timelines that lost spans, in stream order (channels the output
	 * view's strings; free() the array); 1 when the output failed (else
	 * an error is the reading's). */
	weft__view_stats stats;
	weft__view_too_deep_timeline *too_deep;
	size_t too_deep_count;
	int write_failed;
} weft__view_shared;

/*
 * Converts the streams of `job` on job->parts threads into `out` (the
 * output of `ops`, begun, whose sink feeds `view`, which has read
 * nothing): the bytes one thread writes from a merged cursor over them.
 * 0, or the first error of the parts in part order, or the output's.
 */
int weft__view_convert_shared(weft_trace *trace, const weft__view_share_ops *ops, void *out,
			      weft__view *view, weft__view_shared *job);

/*
 * The same on ranks (collective: every rank of the trace's weft_dist).
 * Rank 0 passes its output and view and `share`, its verdict (0: it
 * converts alone: every rank returns 0 at once); the other ranks NULL,
 * NULL, and a job with their filter, streams and view options. Every rank
 * converts its share of the streams on threads of its own; rank 0 merges
 * them. Returns 0 (not shared), 1 (done), or the first error in rank
 * order (the same on every rank).
 */
int weft__view_convert_ranks(weft_trace *trace, const weft__view_share_ops *ops, void *out,
			     weft__view *view, weft__view_shared *job, int share);

/* 1 when the test hook WEFT_TEST_SHARE_FAIL fails `step` on this rank
 * (view_shared.c says which steps). */
int weft__view_share_test_fault(const weft_trace *trace, const char *step);

#endif /* WEFT_OUTPUTS_VIEW_SHARED_H */
