/* SPDX-License-Identifier: MIT */
/*
 * outputs/writer.h - the writer of an output (weft/writer.h) as each
 * output implements it: writer.c does what is common (the options' copy,
 * the checks of every event, the states, the report) and calls the
 * output's functions (weft__writer_ops, in its registry entry:
 * registry.c). convert_view.c implements perfetto, chrome (and its
 * Heph-compatible bytes) and paraver, convert_pallas.c pallas.
 */
#ifndef WEFT_OUTPUTS_WRITER_H
#define WEFT_OUTPUTS_WRITER_H

#include <stdint.h>

#include "outputs/convert.h"

/* Where a writer is in its life. */
enum weft__writer_state {
	WEFT__WRITER_OPEN = 0,  /* takes events */
	WEFT__WRITER_FAILED,    /* the output failed: finish says why */
	WEFT__WRITER_FINISHED   /* finish was called */
};

/* Streams a merged cursor feeds at once to an output written a stream at
 * a time, when streams share their files (weft_convert(): ROSS). */
#define WEFT__CONVERT_BATCH 32

/* What an output does with the writer's calls. */
typedef struct weft__writer_ops {
	/* 1: written a stream at a time (each stream's events in order,
	 * weft_convert() reads one stream after another); 0: one merged
	 * cursor. */
	int by_stream;
	/*
	 * Starts the output (w->job, w->filter and w->selected are set):
	 * sets w->impl and w->filter.order (the order it needs), adjusts
	 * w->filter (a viewer takes the window off the cursor). On failure,
	 * says why in w->job.report, frees what it made, returns < 0.
	 */
	int (*create)(weft_output_writer *w);
	/* One event (checked by writer.c): 0, 1 (no more needed), < 0. */
	int (*event)(weft_output_writer *w, const weft_event *event);
	/* No more events of `stream` (optional): 0 or < 0 (failed). */
	int (*end_stream)(weft_output_writer *w, uint32_t stream);
	/* The caller's reading stopped: `message` is the text to say. */
	void (*read_failed)(weft_output_writer *w, uint32_t stream, const char *message);
	/* Ends and commits the output (`failed`: the output failed before). */
	int (*finish)(weft_output_writer *w, int failed);
	/* Frees w->impl; without finish, removes what it wrote (NULL impl fine). */
	void (*free)(weft_output_writer *w);
	/*
	 * CPUs the machine needs before the events are read on a second
	 * thread by default (no --threads, no WEFT_THREADS; 0: two, as for
	 * every pipeline). chrome: 3, its writing thread is kept busy by its
	 * large text output, and on 2 CPUs a third busy thread made it
	 * slower (docs/SCALING.md).
	 */
	int auto_cpus;
	/*
	 * Optional: converts the streams on parts of its own (threads, and
	 * for by_stream outputs ranks) with the same output as one thread:
	 * 1 when it did (its failures said, the writer failed), 0 when the
	 * caller reads the streams (too few threads asked, or the output
	 * cannot share them this time). On a trace shared among ranks it is
	 * collective: rank 0 calls it with its writer, the others with a
	 * follower (weft__output_writer_follow); 0 on rank 0 leaves the
	 * conversion to it alone. Outputs of one merged cursor (the viewers,
	 * outputs/view_shared.h) say there, to the others, whether they
	 * share this time.
	 */
	int (*convert_shared)(weft_output_writer *w);
} weft__writer_ops;

/* The writer (opaque to the public: weft/writer.h). */
struct weft_output_writer {
	const weft_output_info *info;
	const weft__writer_ops *ops;
	weft_convert_options options;  /* the caller's, strings copied */
	weft_convert_report own;       /* the report when the caller gives none */
	weft__convert_job job;         /* trace, &options, the report in use */
	weft_filter filter;            /* what to read the trace with */
	uint32_t stream_count;
	uint8_t *selected;             /* per stream: the stream glob takes it */
	uint8_t *ended;                /* per stream: end_stream was called */
	int state;                     /* enum weft__writer_state */
	int read_aside;                /* weft_convert() read on a second thread */
	int follower;                  /* another rank's part of a shared conversion:
					  rank 0 writes the output (convert_shared) */
	void *impl;                    /* the output's own state */
};

/*
 * weft_output_writer_create() for weft_convert(): the messages of the
 * whole conversion go into `report` (filled from scratch here), also when
 * create fails.
 */
int weft__output_writer_create(weft_trace *trace, const weft_convert_options *options,
			       weft_convert_report *report, weft_output_writer **out);

/*
 * Marks the output as failed (weft_convert(): the reading could not start
 * for an output that writes what it has even so); finish then fails.
 */
void weft__output_writer_fail(weft_output_writer *w);

/*
 * On a rank other than 0 of a shared conversion: a writer that takes its
 * part of the streams (convert_shared) without output of its own: no
 * check of the output, no temporary name (rank 0's is used). When it
 * cannot be made (out of memory) but its output is known, *out is still
 * set, failed and without impl: its convert_shared takes part in the
 * collectives and fails them, so that no rank waits for it.
 */
int weft__output_writer_follow(weft_trace *trace, const weft_convert_options *options,
			       weft_convert_report *report, weft_output_writer **out);

/* 1 when the output is written a stream at a time (weft__writer_ops). */
static inline int weft__writer_by_stream(const weft_output_writer *w)
{
	return w->ops->by_stream;
}

/* The writer functions of a registry entry (registry.c), and its writer
 * of emulated ovni models (NULL: the output cannot show them). */
const weft__writer_ops *weft__output_ops(const weft_output_info *info);
const weft__writer_ops *weft__output_emu_ops(const weft_output_info *info);

/* The ops of each output (convert_view.c, convert_pallas.c). */
extern const weft__writer_ops weft__perfetto_writer_ops;
extern const weft__writer_ops weft__chrome_writer_ops;
extern const weft__writer_ops weft__paraver_writer_ops;
extern const weft__writer_ops weft__pallas_writer_ops;
extern const weft__writer_ops weft__otf2_writer_ops;
extern const weft__writer_ops weft__paraver_emu_writer_ops;
extern const weft__writer_ops weft__perfetto_emu_writer_ops;

#endif /* WEFT_OUTPUTS_WRITER_H */
