/* SPDX-License-Identifier: MIT */
/*
 * weft/trace.h - opening a trace of any supported format, its hierarchy of
 * nodes (e.g. ovni loom > process > thread) and its streams.
 *
 * A trace is a set of streams. Each stream is an ordered sequence of events
 * (see weft/event.h) and is attached to a node of the trace's hierarchy.
 * The hierarchy and the metadata are loaded when the trace is opened; the
 * events are read on demand through cursors, in bounded memory.
 */
#ifndef WEFT_TRACE_H
#define WEFT_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "weft/error.h"
#include "weft/api.h"
#include "weft/progress.h"
#include "weft/dist.h"

#ifdef __cplusplus
extern "C" {
#endif
WEFT_API_BEGIN

typedef struct weft_trace weft_trace;

typedef enum weft_format {
	WEFT_FORMAT_AUTO = 0, /* detect from the files */
	WEFT_FORMAT_OVNI = 1,
	WEFT_FORMAT_HEPH = 2,
	WEFT_FORMAT_ROSS = 3,
	WEFT_FORMAT_PALLAS = 4,
	WEFT_FORMAT_OTF2 = 5
} weft_format;

/* "ovni", "heph", ...; NULL for an unknown value. */
const char *weft_format_name(weft_format format);
/* Parses a format name; WEFT_FORMAT_AUTO for "auto", -1 when unknown. */
int weft_format_from_name(const char *name);
/*
 * The formats weft reads, in the order they are detected: count, and
 * format i (WEFT_FORMAT_AUTO past the end). For help texts and messages
 * that list them ("auto" is not one of them).
 */
size_t weft_format_count(void);
weft_format weft_format_at(size_t i);
/*
 * 1 when traces of `format` may store events out of time order that weft
 * puts in order in place (ovni: unordered regions, weft_ovni_sort()), 0
 * otherwise. WEFT_FORMAT_AUTO (a format still to detect): 1 when one of
 * the formats is.
 */
int weft_format_sortable(weft_format format);

/* Format options set at most at once (distinct keys). */
#define WEFT_FORMAT_OPTIONS_MAX 16

/*
 * How a trace is opened. Initialise with weft_open_options_init(). The
 * options of one format have a key of their own ("ross.kind"), set with
 * weft_open_options_set(): a new format adds keys, not fields, so this
 * structure keeps its size.
 */
typedef struct weft_open_options {
	weft_format format;             /* WEFT_FORMAT_AUTO to detect */
	/* Deliver events in stored order: do not sort unordered regions
	 * (ovni). For formats with every stream in one file (Heph), the
	 * merged cursor then delivers the events in file order, in one pass
	 * and without the time-order index. */
	int stored_order;
	/* Upper bound of the bytes of stream data kept in memory at once by
	 * the cursors of this trace (0 = default, 32 MiB). */
	uint64_t read_budget_bytes;
	/* Threads a reader may use for the work of opening (0 = automatic:
	 * one helper thread when more than one CPU is online and the work is
	 * large enough to pay for it; 1 = none; 2 and more = a helper thread
	 * whatever the size). Heph: the open scan reads the second half of the
	 * file on a helper thread. Results never depend on this setting. */
	int threads;
	/* The format options set (weft_open_options_set): the strings are the
	 * caller's, read by weft_trace_open() only. */
	size_t format_option_count;
	const char *format_option_keys[WEFT_FORMAT_OPTIONS_MAX];
	const char *format_option_values[WEFT_FORMAT_OPTIONS_MAX];
	/* Optional feedback on long work (weft/progress.h): called on the
	 * caller's thread while the trace is opened and read, at most once
	 * per progress_interval_ns (0: 100 ms, or the environment variable
	 * WEFT_PROGRESS_INTERVAL_NS when set, for tests; < 0: at every look
	 * at the clock, which is then at every batch of events, for tests). */
	weft_progress_fn progress;
	void *progress_data;
	int64_t progress_interval_ns;
	/* The processes that share the work on this trace (weft/dist.h; the
	 * caller's, kept by the trace: it must outlive it), or NULL: this
	 * process alone. Set, opening and the analyses that combine are
	 * collective. */
	const weft_dist *dist;
} weft_open_options;

void weft_open_options_init(weft_open_options *options);

/*
 * Sets the format option `key` to `value` (a text: numbers in decimal,
 * booleans as 1/0, true/false, yes/no or on/off); setting a key again
 * replaces its value. The keys, their values and their meaning are listed
 * by weft_format_option_get(). WEFT_EINVAL, with a message that says what
 * the key takes, for an unknown key or a value that does not parse;
 * and past WEFT_FORMAT_OPTIONS_MAX distinct keys.
 */
int weft_open_options_set(weft_open_options *options, const char *key, const char *value);
/* The value set for `key`, or NULL. */
const char *weft_open_options_get(const weft_open_options *options, const char *key);

/* A format option, as weft_open_options_set() takes it. */
typedef struct weft_format_option {
	const char *key;            /* "<format>.<name>": "ross.kind" */
	const char *type;           /* "path", "text", "bytes", "count", "rate", "bool",
				     * or the values it takes: "gvt|rt|vt|evtrace|model" */
	const char *what;           /* a noun for messages: "ROSS kind" */
	const char *help;           /* what it does, one or two sentences */
	int implies_format;         /* setting it chooses its format when detecting */
} weft_format_option;

/*
 * The options of `format` (WEFT_FORMAT_AUTO: of every format): count, and
 * option i (NULL past the end). For help texts and front ends.
 */
size_t weft_format_option_count(weft_format format);
const weft_format_option *weft_format_option_get(weft_format format, size_t i);

/*
 * The format weft_trace_open(path, options) would read the trace as: the
 * one `options` force or imply (options may be NULL), else the one the
 * formats' probes detect (each looks at a few bytes; nothing is opened
 * further), or WEFT_ENOTFOUND when no format recognises it.
 */
int weft_format_detect(const char *path, const weft_open_options *options);
/*
 * Opens the trace at `path` (a directory or a file). On success *out owns
 * the trace; release it with weft_trace_free(). Problems that leave the
 * trace readable are kept as warnings (weft_trace_diag_*).
 */
int weft_trace_open(const char *path, const weft_open_options *options,
		    weft_trace **out);
void weft_trace_free(weft_trace *trace);

weft_format weft_trace_format(const weft_trace *trace);
/* Format layout version (ovni: 1, 2 or 3), 0 when not applicable. */
int weft_trace_layout_version(const weft_trace *trace);
const char *weft_trace_path(const weft_trace *trace);
/*
 * Trace-wide metadata as a JSON object text ("{}" when the format has
 * none): for Heph, the epochs and packet counts.
 */
const char *weft_trace_metadata_json(const weft_trace *trace);
/*
 * 1 when the format's natural order is its files' (ROSS): the merged
 * cursor (weft_cursor_create) then reads each data file once, front to
 * back, whereas a cursor per stream reads the part of a file it shares
 * with the other streams. Commands that look at every stream make one
 * merged pass over such traces. 0 otherwise (ovni, Heph).
 */
int weft_trace_file_order_default(const weft_trace *trace);
/*
 * 1 when a trace of the format may be several data files that each hold
 * many streams (ROSS: a run directory): a stream's path then does not
 * name its file, and an event is located by its stream's `file` and its
 * `offset` (`weft dump --json` writes both). 0 when each stream has a
 * file of its own (ovni) or the trace is one file (Heph).
 */
int weft_trace_shared_files(const weft_trace *trace);

/* ---- Hierarchy --------------------------------------------------------- */

#define WEFT_NO_PARENT UINT32_MAX

typedef struct weft_node {
	uint32_t id;         /* index in the node table */
	uint32_t parent;     /* parent node id, or WEFT_NO_PARENT */
	const char *kind;    /* "loom", "process", "thread", ... */
	const char *name;    /* path component, e.g. "proc.2184" */
	const char *path;    /* full path from the root, '/'-separated */
	int64_t number;      /* pid, tid, stream id...; -1 when none */
	int32_t stream;      /* stream index when the node is a stream, or -1 */
	/* Merged metadata of this node as a JSON object text (never NULL;
	 * "{}" when there is none). */
	const char *metadata_json;
} weft_node;

size_t weft_trace_node_count(const weft_trace *trace);
const weft_node *weft_trace_node(const weft_trace *trace, size_t index);

/* ---- Streams ----------------------------------------------------------- */

typedef struct weft_stream_info {
	uint32_t index;      /* stream index, 0..count-1 */
	uint32_t node;       /* node id of the stream in the hierarchy */
	const char *path;    /* stream path, e.g. "loom.vm.0/proc.1/thread.1" */
	const char *file;    /* data file, relative to the trace root */
	uint64_t file_size;  /* bytes */
	int finished;        /* 1: closed properly, 0: not (crash), -1: the
	                        layout does not record it (ovni v1) */
	int big_endian;      /* 1 when the data is big-endian */
	int64_t clock_offset;/* ns added to every clock of the stream */
} weft_stream_info;

size_t weft_trace_stream_count(const weft_trace *trace);
const weft_stream_info *weft_trace_stream(const weft_trace *trace,
					  size_t index);
/* Index of the stream whose path is `path`, or WEFT_ENOTFOUND. */
int weft_trace_stream_find(const weft_trace *trace, const char *path);

/*
 * Threads: a trace and its cursors belong to one thread at a time (cursors
 * record diagnostics on their trace). Open the trace once per thread to
 * read in parallel. One exception: weft_event_fields() and
 * weft_field_element() only read what opening the trace built, so another
 * thread may decode events (copied out of a cursor) while the owner reads
 * on; `weft dump` formats on a second thread this way.
 */

/* ---- Diagnostics --------------------------------------------------------- */

/*
 * Problems found so far: while opening and while reading events through
 * any cursor of this trace. The list only grows (bounded: repeated problems
 * of one stream are counted, not stored again).
 */
size_t weft_trace_diag_count(const weft_trace *trace);
const weft_diag *weft_trace_diag(const weft_trace *trace, size_t index);

WEFT_API_END

#ifdef __cplusplus
}
#endif

#endif /* WEFT_TRACE_H */
