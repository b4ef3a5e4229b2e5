/* SPDX-License-Identifier: MIT */
/*
 * weft/dump.h - every event of a trace as text lines (ovnidump's
 * layout), raw payload bytes or JSON lines (docs/dump-json.md), written
 * to a file descriptor: what `weft dump` prints.
 *
 *     weft_dump_options o;
 *     weft_dump_status st;
 *     weft_dump_options_init(&o);
 *     o.mode = WEFT_DUMP_JSON;
 *     o.filter.code_pattern = "OH?";
 *     int rc = weft_dump(trace, &o, STDOUT_FILENO, &st);
 *
 * The events are read by a merged cursor with `filter` and decoded into
 * typed fields. Threads (the trace's `threads` option, else WEFT_THREADS,
 * else the cores for traces large enough) give the same bytes as one:
 * with 2, a second thread formats while the first reads; with N >= 3,
 * N - 1 threads each read and format a share of the streams and the
 * calling thread merges their lines in the merged cursor's order (not
 * for cursors over whole files: Heph in stored order, ROSS). Streams
 * that fail on the way end early and become diagnostics of the trace,
 * in stream order at the end; the dump has the rest.
 */
#ifndef WEFT_DUMP_H
#define WEFT_DUMP_H

#include <stdint.h>

#include "weft/api.h"
#include "weft/event.h"

#ifdef __cplusplus
extern "C" {
#endif
WEFT_API_BEGIN

typedef enum weft_dump_mode {
	WEFT_DUMP_FIELDS = 0, /* <clock>  <code>  <stream>  name=value ... */
	WEFT_DUMP_HEX = 1,    /* <clock>  <code>  <stream>  :xx:xx (ovnidump -x) */
	WEFT_DUMP_JSON = 2    /* one JSON object per line */
} weft_dump_mode;

enum weft_dump_flags {
	/* Text lines: the code indented by two spaces per call-tree level
	 * (weft_event.depth: Heph in time order; nothing for other events). */
	WEFT_DUMP_TREE = 1u << 0
};

/* Initialise with weft_dump_options_init(). */
typedef struct weft_dump_options {
	weft_dump_mode mode;
	unsigned flags;       /* enum weft_dump_flags */
	weft_filter filter;   /* time window, stream and code globs, order */
} weft_dump_options;

/* Where a dump failed. */
typedef enum weft_dump_stage {
	WEFT_DUMP_DONE = 0,   /* it did not */
	WEFT_DUMP_CURSOR,     /* the cursor could not be created (nothing written) */
	WEFT_DUMP_START,      /* the output could not be set up (nothing written) */
	WEFT_DUMP_READ,       /* reading stopped (what was read is written) */
	WEFT_DUMP_WRITE       /* writing to `fd` failed */
} weft_dump_stage;

typedef struct weft_dump_status {
	weft_dump_stage stage;
	uint64_t events;      /* events written */
} weft_dump_status;

void weft_dump_options_init(weft_dump_options *options);
/*
 * Writes the events of `trace` to `fd` as `options` say. Returns 0, or
 * the first failure (message set; `status->stage` says where). `status`
 * may be NULL.
 */
int weft_dump(weft_trace *trace, const weft_dump_options *options, int fd,
	      weft_dump_status *status);

WEFT_API_END

#ifdef __cplusplus
}
#endif

#endif /* WEFT_DUMP_H */
