/* SPDX-License-Identifier: MIT */
/*
 * core/internal.h - what the core gives the format backends and outputs:
 * the backend interface, the trace object they fill, errors, diagnostics.
 *
 * Dependency direction: formats/ and outputs/ include this; core/ never
 * includes anything from formats/ except the backend table in trace.c.
 */
#ifndef WEFT_CORE_INTERNAL_H
#define WEFT_CORE_INTERNAL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "weft/weft.h"

struct json_t;
typedef struct json_t json_t;

#if defined(__GNUC__)
#define WEFT_PRINTF(f, a) __attribute__((format(printf, f, a)))
#define WEFT_LIKELY(x) __builtin_expect(!!(x), 1)
#define WEFT_UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define WEFT_PRINTF(f, a)
#define WEFT_LIKELY(x) (x)
#define WEFT_UNLIKELY(x) (x)
#endif

/* ---- Errors (core/error.c) ----------------------------------------------- */

/*
 * Records the detailed message of a failure for weft_last_error() and
 * returns `status`, so that readers can write `return weft__error(...)`.
 * The message reads "<file>: byte <offset>: <text>" (parts left out when
 * file is NULL or offset is WEFT_NO_OFFSET).
 */
int weft__error(int status, const char *file, uint64_t offset,
		const char *fmt, ...) WEFT_PRINTF(4, 5);
/* Same, with the text of errno appended (": No such file or directory"). */
int weft__error_errno(const char *file, const char *what);
void weft__error_clear(void);
/* The parts of the last error: file (NULL if none), offset, bare text. */
const char *weft__error_file(void);
uint64_t weft__error_offset(void);
const char *weft__error_text(void);

/*
 * A last error carried from one thread to another (the last error is per
 * thread): saved where it happened, raised again, parts and all, in the
 * thread that reports it.
 */
typedef struct weft__error_copy {
	int status;          /* 0: nothing saved */
	int has_file;
	char file[1024];
	uint64_t offset;
	char text[1024];
} weft__error_copy;
/* Keeps `status` and this thread's last error in `copy`; returns status. */
int weft__error_save(weft__error_copy *copy, int status);
/* Makes `copy` this thread's last error; returns its status. */
int weft__error_raise(const weft__error_copy *copy);

/* ---- Format checks (weft_trace_check(), analysis/check.c) ------------------- */

/* The first event of a stream, as weft_trace_check() read it. */
typedef struct weft__stream_start {
	int seen;        /* the stream has an event */
	uint64_t time;
	uint64_t offset;
} weft__stream_start;

/*
 * Where the check of a format puts a problem: the stream it belongs to,
 * its severity (WEFT_SEV_*), a WEFT_E* code that classifies it, the file
 * relative to the trace root, the offset (or WEFT_NO_OFFSET) and the
 * message (copied).
 */
typedef struct weft__check_sink {
	void (*add)(struct weft__check_sink *sink, uint32_t stream, int severity,
		    int status, const char *file, uint64_t offset, const char *message);
} weft__check_sink;

/* What a format adds to weft_trace_check(). */
typedef struct weft__check_hooks {
	/*
	 * The codes of the events that open and close the regions where the
	 * stored clocks of a stream may go back (ovni "OU[" and "OU]"); the
	 * clocks must not go back outside them. NULL: the format's stored
	 * clocks are not in order (Heph stores an event when it ends) and
	 * are not checked.
	 */
	const char *region_open, *region_close;
	/*
	 * Optional: the checks of the whole trace, after every stream was
	 * read. `starts` holds the first event of each stream, or is NULL
	 * (the streams were read in one merged pass, or memory ran out).
	 */
	void (*trace_check)(weft_trace *trace, const weft_check_options *options,
			    const weft__stream_start *starts, weft__check_sink *sink);
} weft__check_hooks;

/* ---- Backends --------------------------------------------------------------- */

struct weft__pack;
struct weft__unpack;

/*
 * A collective open, for formats whose open scans files that many streams
 * share (ROSS), under a weft_dist of several ranks (weft__dist_open_scan):
 * the backend's open leaves its scan pending; each rank scans its piece
 * of each file and packs what it found (scan); rank 0 takes the packs in
 * rank order, its own first (merge), and packs the outcome (result),
 * which every rank applies to finish its open (apply). The files are then
 * cut into `pieces` (0: not cut), and a rank's analyses read its own
 * pieces (piece_open, through weft__cursor_create_pieces).
 */
typedef struct weft__dist_open_hooks {
	int (*pending)(const weft_trace *trace);
	int (*scan)(weft_trace *trace, struct weft__pack *out);
	int (*merge)(weft_trace *trace, int rank, struct weft__unpack *u);
	int (*result)(weft_trace *trace, struct weft__pack *out);
	int (*apply)(weft_trace *trace, struct weft__unpack *u);
	size_t (*pieces)(const weft_trace *trace);
	/*
	 * Optional: the most pieces a trace opened alone can cut its files
	 * into for threads (weft__pieces_run; 0: none), from the cuts its
	 * open's scan noted.
	 */
	size_t (*thread_pieces)(const weft_trace *trace);
	/* Piece `piece` of `pieces` of file `file`: the ranks' (`pieces`
	 * from pieces()) or the threads' (at most thread_pieces()). */
	int (*piece_open)(weft_trace *trace, size_t file, size_t piece, size_t pieces,
			  void **state);
} weft__dist_open_hooks;

typedef struct weft_backend {
	weft_format format;
	const char *name;
	/*
	 * What a trace of this format is, for the messages about a path that
	 * is none ("a Heph trace file"), and which kinds of path it can be
	 * (WEFT__PATH_FILE, WEFT__PATH_DIR).
	 */
	const char *expected;
	int path_kinds;
	/*
	 * 1: an event's payload is the reader's own packing of the record
	 * (Pallas: references to its definitions; OTF2: libotf2's values),
	 * which its fields decode completely: a converter keeps the fields
	 * and leaves the bytes out.
	 */
	int payload_is_fields;
	/* > 0 when `path` looks like this format (higher = surer), else 0. */
	int (*probe)(const char *path);
	/* Fills the trace: nodes, streams, backend_data, layout version. */
	int (*open)(weft_trace *trace, const char *path,
		    const weft_open_options *options);
	void (*close)(weft_trace *trace);
	/*
	 * Optional, for formats that keep many streams in one file (Heph,
	 * ROSS): a reader of all the streams of data file `file` (0 ..
	 * file_count - 1; file_count NULL means one file) in file order, with
	 * the same next/close functions. The merged cursor uses these readers,
	 * merged by time across files, when the trace is opened in stored
	 * order, or always when `file_order_default` is set (formats whose
	 * natural order is the file's).
	 */
	size_t (*file_count)(const weft_trace *trace);
	int (*file_open)(weft_trace *trace, size_t file, void **state);
	/* Optional: the data file that holds a stream, so that a cursor over
	 * some streams opens only their files. */
	size_t (*stream_file)(const weft_trace *trace, uint32_t stream);
	int file_order_default;
	/*
	 * The order the format is best read in (weft_trace_natural_order()):
	 * WEFT_ORDER_STORED, or 0 for time.
	 */
	weft_order natural_order;
	/* Per-stream reader: open (`stored`: in stored order, else in time
	 * order), next event (1 / 0 at end / < 0), close. */
	int (*stream_open)(weft_trace *trace, uint32_t stream, int stored, void **state);
	int (*stream_next)(void *state, weft_event *event);
	/*
	 * Optional: up to `cap` next events at once, all valid until the
	 * next call (returns their count >= 1, 0 at the end, or < 0).
	 */
	int (*stream_next_batch)(void *state, weft_event *events, size_t cap);
	void (*stream_close)(void *state);
	/* Typed fields of an event (see weft_event_fields()). */
	int (*event_fields)(const weft_trace *trace, const weft_event *event,
			    weft_field *out, size_t cap);
	/* Optional: the event's role on a timeline (see weft_event_classify());
	 * `out` arrives as a POINT named by the code. */
	void (*event_classify)(const weft_trace *trace, const weft_event *event,
			       weft_event_class *out);
	/* The format's options (weft_open_options_set keys "<name>.<...>"). */
	const weft_format_option *options;
	size_t option_count;
	/* Optional: what the format adds to weft_trace_check(). */
	const weft__check_hooks *check;
	/*
	 * Optional: puts in time order, in place, the events a trace of the
	 * format may store out of it (ovni: unordered regions); with
	 * `check_only`, only reports. weft_format_sortable() says which
	 * formats have it.
	 */
	int (*sort)(const char *path, int check_only, weft_ovni_sort_report *report);
	/*
	 * Optional: the statistics of a stream from what the format stores
	 * about it, without reading its events (see weft_trace_stream_stats();
	 * `out` arrives zeroed).
	 */
	int (*stream_stats)(weft_trace *trace, uint32_t stream, weft_stream_stats *out);
	/*
	 * Optional: the event kinds of the trace (weft/schema.h), owned by
	 * the backend (static, or built when the trace was opened); sets *out
	 * and returns their count.
	 */
	size_t (*event_schemas)(const weft_trace *trace, const weft_event_schema **out);
	/* 1 when the readers count the bytes they read (weft__mapfile_count):
	 * the progress then has a total and a percentage. */
	int counts_bytes;
	/*
	 * Optional, for a collective open read by rank 0 alone: `open` asks
	 * the file system only through trace->metafs (core/metafs.c), and
	 * this gives the data file a stream's reader opens, so that each rank
	 * can check the size of its own streams' files.
	 */
	const char *(*stream_data_path)(const weft_trace *trace, uint32_t stream);
	/* Optional: the collective open and the pieces above. */
	const weft__dist_open_hooks *dist_open;
	/*
	 * 1 when nothing that reads the trace once it is open (the stream
	 * readers, cursors, event_fields) writes the backend's data, the
	 * streams, nodes or metadata: the threads of weft__parts_run then
	 * borrow the trace (weft__trace_borrow) instead of opening it again
	 * (Heph: the first reader in time order builds the index under a
	 * lock, the others wait for it). Not Pallas (its shared
	 * decoded-values cache would serialise the threads on its lock; a
	 * copy has its own).
	 */
	int readers_share_data;
} weft_backend;

/* Backend i of the table (src/core/trace.c), NULL past the end. */
const weft_backend *weft__backend_at(size_t i);

/*
 * Format options, read by the backends while they open a trace
 * (core/options.c): each sets *out from the value set for `key` and
 * leaves it when none is; 0, or WEFT_EINVAL for a value that does not
 * parse. weft__options_implied_format: the format an option chooses.
 */
int weft__option_text(const weft_open_options *o, const char *key, const char **out);
int weft__option_u64(const weft_open_options *o, const char *key, uint64_t *out);
int weft__option_rate(const weft_open_options *o, const char *key, double *out);
int weft__option_bool(const weft_open_options *o, const char *key, int *out);
weft_format weft__options_implied_format(const weft_open_options *options);
/* Every format option set is known and its value parses: 0 or WEFT_EINVAL. */
int weft__options_check(const weft_open_options *options);

/* weft_backend.path_kinds: a trace may be a regular file, a directory. */
#define WEFT__PATH_FILE 1
#define WEFT__PATH_DIR 2

extern const weft_backend weft__ovni_backend;
extern const weft_backend weft__heph_backend;
extern const weft_backend weft__ross_backend;
extern const weft_backend weft__pallas_backend;
extern const weft_backend weft__otf2_backend;

/* ---- Progress (core/progress.c) -------------------------------------------- */

/*
 * The progress state of a trace (weft/progress.h). The counters run from
 * the open on; a phase remembers where they were when it began.
 */
typedef struct weft__progress {
	weft_progress_fn fn;
	void *data;
	uint64_t interval_ns;  /* between two calls; 0: at every look */
	uint64_t stride;       /* events between two looks at the clock */
	uint64_t events;       /* events read (cursors, the Heph open scan) */
	uint64_t next_look;    /* `events` at the next look; UINT64_MAX without fn */
	uint64_t bytes;        /* input bytes read: added atomically (helper threads) */
	uint64_t bytes_total;  /* the data files' bytes, 0 when unknown */
	uint64_t events_total; /* the events of the trace, when opening counted them */
	const char *phase;     /* "reading" between operations */
	int depth;             /* operations in progress (nested: the outermost counts) */
	uint64_t phase_start;  /* monotonic ns */
	uint64_t phase_events, phase_bytes;
	uint64_t last_call;    /* coarse monotonic ns of the last call */
	int threads_used;      /* most threads at once, 1 or more */
	size_t data_files;     /* the streams' data files, each once */
	uint64_t data_bytes;   /* and their bytes */
} weft__progress;

struct weft_trace;
/* The slow path of weft__progress_count(): the clock, maybe a call. */
void weft__progress_look(struct weft_trace *trace);
/*
 * An operation of the library begins (`phase`: a static string) or ends
 * (the callback's final call, `finished` set); nested ones count in the
 * outermost's phase. The phase is "reading" between operations.
 */
void weft__progress_begin(struct weft_trace *trace, const char *phase);
void weft__progress_end(struct weft_trace *trace);
/*
 * A stage inside whatever phase runs (the Heph time-order index, built
 * when the first cursor needs it): its own figures and final call, then
 * the phase it returns (`outer`) starts again, its time and counts from
 * there.
 */
const char *weft__progress_stage_begin(struct weft_trace *trace, const char *stage);
void weft__progress_stage_end(struct weft_trace *trace, const char *outer);
/* weft__progress_end(), then `rc`: `return weft__progress_end_with(t, run(...));`. */
int weft__progress_end_with(struct weft_trace *trace, int rc);
/* The state of a trace being opened, from its open options. */
void weft__progress_init(struct weft_trace *trace, const weft_open_options *options);
/* Once opened: bytes_total from the streams' files (each file once). */
void weft__progress_opened(struct weft_trace *trace);
/* Adds what another handle of the trace read (a helper thread's) to its progress. */
void weft__progress_add(struct weft_trace *trace, const weft__progress *other);

/*
 * What a helper thread publishes of its reading (through its own handle)
 * for the calling thread to show as the trace's progress while it waits:
 * the handle's callback is weft__progress_cell_publish() with the cell as
 * its data, and the thread calls weft__progress_cell_finish() last.
 */
typedef struct weft__progress_cell {
	uint64_t events, bytes; /* atomics */
	int finished;
} weft__progress_cell;
/* Cells inside an array of structs: `count` of them, `stride` bytes apart. */
typedef struct weft__progress_cells {
	const weft__progress_cell *first;
	size_t stride;
	int count;
} weft__progress_cells;
void weft__progress_cell_publish(const weft_progress *progress, void *cell);
void weft__progress_cell_finish(weft__progress_cell *cell);
/*
 * The cells' counts added to `events` and `bytes` as the trace's progress,
 * its callback called as if this thread read them; 1 (nothing shown) once
 * every cell's thread has finished, or without a callback.
 */
int weft__progress_show_cells_once(struct weft_trace *trace, const weft__progress_cells *cells,
				   uint64_t events, uint64_t bytes);
/*
 * The same every 20 ms until every cell's thread has finished; the
 * trace's counts are then as before (the caller adds the threads' totals
 * when it takes their results).
 */
void weft__progress_show_cells(struct weft_trace *trace, const weft__progress_cells *cells);
/* Notes that `n` threads work at once for the trace (the most is kept). */
void weft__trace_threads_note(struct weft_trace *trace, int n);

/* ---- The trace object --------------------------------------------------- */

struct weft_trace {
	const weft_backend *backend;
	void *backend_data;
	char *path;
	int layout_version;
	weft_open_options options;

	weft_node *nodes;
	size_t node_count, node_cap;
	weft_stream_info *streams;
	size_t stream_count, stream_cap;
	weft_diag *diags;
	size_t diag_count, diag_cap;
	/* Per diagnostic: its once-key and stream (core/diag_merge.c). */
	struct weft__diag_origin *diag_origins;
	size_t diag_origin_cap;
	uint64_t diags_dropped;

	char *metadata_json;  /* trace-wide metadata, NULL = "{}" */

	/* weft_trace_start_time(): 0 not asked yet, 1 known (start_time),
	 * 2 known to have no timed event. */
	int start_time_state;
	uint64_t start_time;

	/* Strings owned by the trace (names, paths, messages). */
	char **strings;
	size_t string_count, string_cap;

	weft__progress progress;

	/* With a weft_dist of several ranks: this rank's streams (a byte per
	 * stream), dealt when the trace is opened (weft__dist_selected). */
	uint8_t *dist_selected;
	/* While a backend opens the trace: where its metadata questions go
	 * (core/metafs.c; NULL: the file system). */
	struct weft__metafs *metafs;
	/* What the open asked and was answered (core/metafs.c), kept so that
	 * the trace's threads open it again without the file system
	 * (weft__trace_reopen); NULL for formats whose open reads its own. */
	void *open_tape;
	size_t open_tape_len;
	/*
	 * A thread's handle that borrows its origin's backend data, tables
	 * and metadata (weft__trace_borrow), to read piece `piece` of
	 * `piece_count` of each file (weft__cursor_create_pieces).
	 */
	int borrowed;
	size_t piece, piece_count;
};

/*
 * Adds n events read to the trace's count, and looks at the clock (and
 * maybe calls the progress callback) once the count passes next_look:
 * every `stride` events with a callback, never without. One add and one
 * compare per batch of events.
 */
static inline void weft__progress_count(weft_trace *trace, uint64_t n)
{
	weft__progress *p = &trace->progress;
	p->events += n;
	if (WEFT_UNLIKELY(p->events >= p->next_look))
		weft__progress_look(trace);
}

/*
 * The same trace opened again, with the options it was opened with (its
 * format options included), for another thread: a trace and its cursors
 * belong to one thread at a time. Diagnostics of opening are found again.
 * With `one_thread`, the copy is one thread's work (a part's, whose
 * threads are the parts): its open starts no threads of its own (the
 * open's scan of a ROSS run or of a Heph file stays on the thread).
 */
int weft__trace_reopen(const weft_trace *trace, int one_thread, weft_trace **out);
/*
 * The same for a part's thread that reads the streams of `selected` (a
 * byte per stream; one_thread): opened from the trace's open tape when it
 * has one, and then the files of those streams checked against the sizes
 * of the table.
 */
int weft__trace_reopen_part(const weft_trace *trace, const uint8_t *selected,
			    weft_trace **out);
/*
 * A handle of `trace` for another thread that reads piece `piece` of
 * `pieces` of each file (weft__pieces_run), or (`pieces` 0) some of its
 * streams (weft__parts_run): it shares the trace's backend data, streams,
 * nodes, metadata and open tape, which it only reads (for backends whose
 * readers do not change their data once the trace is open:
 * readers_share_data), and has its own diagnostics, strings and
 * progress; its open options say one thread. It must be freed before
 * `trace`.
 */
int weft__trace_borrow(const weft_trace *trace, size_t piece, size_t pieces,
		       weft_trace **out);
/* "the file changed since it was opened" of stream `s`: `was` bytes then, `now` now. */
int weft__trace_size_changed(const weft_stream_info *s, uint64_t was, uint64_t now);

/* A copy of `s` owned by the trace (freed with it); NULL on ENOMEM. */
const char *weft__trace_strdup(weft_trace *trace, const char *s);

/*
 * Appends a node. `metadata_json` may be NULL ("{}"). Sets *id. Strings
 * are copied. The node path is the parent's path + "/" + name.
 */
int weft__trace_add_node(weft_trace *trace, uint32_t parent, const char *kind,
			 const char *name, int64_t number,
			 const char *metadata_json, uint32_t *id);
/* Sets the trace-wide metadata (copied). */
int weft__trace_set_metadata(weft_trace *trace, const char *metadata_json);
/*
 * The same two from a jansson object, which they consume (NULL is taken
 * as out of memory): the text is compact, in the object's key order.
 */
int weft__trace_set_metadata_object(weft_trace *trace, struct json_t *obj);
int weft__trace_set_node_metadata_object(weft_trace *trace, uint32_t node,
					 struct json_t *obj);
/* Replaces the metadata of a node (copied). */
int weft__trace_set_node_metadata(weft_trace *trace, uint32_t id,
				  const char *metadata_json);
/*
 * Appends a stream attached to node `node` (which becomes a stream node).
 * The stream path is the node path. Sets *index.
 */
int weft__trace_add_stream(weft_trace *trace, uint32_t node, const char *file,
			   uint64_t file_size, uint32_t *index);

/*
 * Records a diagnostic on the trace. Repeated diagnostics beyond a fixed
 * bound are counted (diags_dropped) instead of stored.
 */
void weft__trace_diag(weft_trace *trace, int severity, int status,
		      const char *file, uint64_t offset, const char *fmt, ...)
	WEFT_PRINTF(6, 7);

/* Where a diagnostic comes from, beside it (core/diag_merge.c). */
#define WEFT__NO_STREAM UINT32_MAX
typedef struct weft__diag_origin {
	const char *key;  /* once-key (weft__trace_diag_once), or NULL */
	uint32_t stream;  /* the stream it is about, or WEFT__NO_STREAM */
} weft__diag_origin;

/* Records a formatted diagnostic with its origin; 0, or -1 when dropped. */
int weft__trace_diag_record(weft_trace *trace, const char *key, uint32_t stream,
			    int severity, int status, const char *file, uint64_t offset,
			    const char *message);
/*
 * A diagnostic said once per trace for `key` (a kind of event whose layout
 * differs, say): a second one of the same key replaces the first when it
 * comes from a lower stream, or the same stream and a lower offset, and is
 * dropped otherwise. So the note kept is the same whatever order the
 * streams were read in (by time, by stream, by threads or ranks).
 */
void weft__trace_diag_once(weft_trace *trace, const char *key, uint32_t stream,
			   int severity, int status, const char *file, uint64_t offset,
			   const char *fmt, ...) WEFT_PRINTF(8, 9);
/* Copies diagnostic `index` of `from` (another handle of the trace) onto
 * `trace`, once-key and stream included. */
void weft__trace_diag_copy(weft_trace *trace, const weft_trace *from, size_t index);
/*
 * Puts the diagnostics from index `from` on in the order of their stream
 * (a diagnostic without one: of its file's first stream; without file
 * either: last), then offset, then the order they came in: the order one
 * reader going stream by stream finds them, whatever order they were
 * found in. For analyses whose results do not depend on threads or ranks.
 */
void weft__trace_diags_sort(weft_trace *trace, size_t from);
/*
 * Forgets the diagnostics recorded since the trace had `count` (and
 * `dropped` dropped): a reading done twice (a survey before the real
 * pass) reports once.
 */
void weft__trace_diags_forget(weft_trace *trace, size_t count, uint64_t dropped);

/*
 * Records the last error of this thread (weft__error) as a diagnostic,
 * keeping its file and offset apart from its text, plus a note.
 */
void weft__trace_diag_last_error(weft_trace *trace, int severity, int status,
				 const char *note);

/* ---- Work shared among processes (core/dist.c, weft/dist.h) ------------------ */

/* What a rank sends: little-endian integers and length-prefixed bytes. */
typedef struct weft__pack {
	uint8_t *data;
	size_t len, cap;
	int failed; /* out of memory: the pack is incomplete */
} weft__pack;

/* Reading a pack: every read is checked against the end (bad: it was not). */
typedef struct weft__unpack {
	const uint8_t *data;
	size_t len, pos;
	int bad;
} weft__unpack;

void weft__pack_u64(weft__pack *p, uint64_t v);
void weft__pack_bytes(weft__pack *p, const void *bytes, size_t len);
/* Bytes as they are, without their length (a part of another pack). */
void weft__pack_raw(weft__pack *p, const void *bytes, size_t len);
/* A NUL-terminated text (NULL as ""), its NUL included. */
void weft__pack_text(weft__pack *p, const char *text);
void weft__pack_release(weft__pack *p);
uint64_t weft__unpack_u64(weft__unpack *u);
const void *weft__unpack_bytes(weft__unpack *u, size_t *len);
/* A text packed by weft__pack_text ("" and bad set when it is not one). */
const char *weft__unpack_text(weft__unpack *u);

/* 1 when the trace was opened with a weft_dist of more than one rank. */
int weft__dist_active(const weft_trace *trace);
/* 1 on rank 0, or without a dist: the process that does the whole trace's
 * work (what reads every stream, the results of every rank). */
int weft__dist_root(const weft_trace *trace);
/* This rank's streams (a byte per stream, 1 = read it, dealt by the
 * collective open), or NULL when the trace is not shared (read every
 * stream). */
const uint8_t *weft__dist_selected(const weft_trace *trace);
/* Deals this rank's streams (weft_trace_share) into trace->dist_selected
 * when the trace is shared: 0, or ENOMEM (weft_trace_open fails then). */
int weft__dist_deal(weft_trace *trace);
/*
 * Collective, after each rank's own open (`rc`, its status; `trace` NULL
 * when it failed): the scan the backend left pending (weft__dist_open_hooks),
 * shared by the ranks. Returns 0 or an error every rank returns (rank 0
 * names the rank and why).
 */
int weft__dist_open_scan(weft_trace *trace, const weft_dist *d, int rc);
/*
 * The number of pieces the trace's files are cut into for its ranks, each
 * rank reading its own (weft__cursor_create_pieces); 0 when they are not:
 * then rank 0 reads the files that streams share.
 */
size_t weft__dist_pieces(const weft_trace *trace);
/*
 * A merged cursor over this handle's piece of each file: a thread's
 * (weft__pieces_run), else this rank's (weft__dist_pieces: the trace's
 * files cut for its ranks); every stream of the piece, the events in
 * each file's order, files merged by time. WEFT_EINVAL when the files
 * are not cut.
 */
int weft__cursor_create_pieces(weft_trace *trace, const weft_filter *filter,
			       weft_cursor **out);
/* weft_cursor_create() over the streams of `selected` (a byte per stream;
 * NULL: every stream). */
int weft__cursor_create_selected(weft_trace *trace, const weft_filter *filter,
				 const uint8_t *selected, weft_cursor **out);
/*
 * 1 when a merged cursor with `filter` merges cursors over single streams
 * by (time, stream), each reading its stream's own bytes: a merge of
 * cursors over shares of the streams then gives the same order
 * (outputs/keyed_runs.h). 0 for cursors over whole files (Heph in stored
 * order, ROSS) and for streams that share their files.
 */
int weft__cursor_merges_streams(const weft_trace *trace, const weft_filter *filter);
/* selected[i] = 1 for the streams whose path matches the fnmatch() glob
 * `pattern` (NULL: every stream), as a merged cursor selects them. */
void weft__streams_matching(const weft_trace *trace, const char *pattern, uint8_t *selected);
/*
 * The streams of `among` (NULL: all) dealt into `parts` parts by bytes, as
 * weft_trace_share() deals them: selected[i] = 1 for those of part `part`.
 * Returns their number, or WEFT_ENOMEM.
 */
int64_t weft__share_deal(const weft_trace *trace, const uint8_t *among, int part, int parts,
			 uint8_t *selected);
/*
 * The same, the streams of one group kept together: `groups` gives each
 * stream's group (ids below the stream count; others are one group of
 * their own; NULL: a group per stream), and the groups are dealt by their
 * bytes, largest first (the emulation's looms: outputs/emu_shared.c).
 */
int64_t weft__share_deal_groups(const weft_trace *trace, const uint8_t *among,
				const uint32_t *groups, int part, int parts, uint8_t *selected);
/* Packs this rank's (or thread's) result of the analysis `ctx`. */
typedef void (*weft__dist_pack_fn)(weft__pack *out, const void *ctx);
/* On rank 0, adds one other rank's result to the analysis's; 0 or an error. */
typedef int (*weft__dist_merge_fn)(void *ctx, weft__unpack *result);
/*
 * Collective: every rank's status `rc`, its diagnostics from index
 * `diag_from` on and its result packed by `pack` (NULL: none) go to
 * rank 0, which
 * records the diagnostics on its trace and calls `merge` for each other
 * rank's result in rank order while no rank has failed. Returns the
 * final status, the same on every rank: rank 0's own error, else the
 * first error in rank order (its message on rank 0, "rank R: ...").
 */
int weft__dist_combine(weft_trace *trace, int rc, size_t diag_from, weft__dist_pack_fn pack,
		       weft__dist_merge_fn merge, void *ctx);

/*
 * Collective: rank 0's pack `p` copied on every rank (the others' `p` is
 * replaced); 0 or < 0. A rank that cannot hold it still takes part and
 * fails alone (`cannot_hold`: as if out of memory, for tests).
 */
int weft__dist_broadcast_pack(const weft_dist *d, weft__pack *p, int cannot_hold);
/*
 * Collective, in weft_trace_open: rank 0's stream count and file sizes go
 * to every rank, and a rank whose own differ fails ("the file changed
 * since it was opened"). Each rank deals the streams by its own sizes
 * (weft_trace_share): a file that changed between the ranks' opens would
 * be read by two ranks or by none. `trace`: this rank's, NULL when its
 * open failed. 0 or < 0 (message set).
 */
int weft__dist_agree_sizes(const weft_trace *trace, const weft_dist *d);
/*
 * For formats whose streams have a data file each (weft_backend.
 * stream_data_path; 0 for the others): the files of the streams of `selected` have the
 * sizes in the table, else WEFT_ETRUNCATED, "the file changed since it
 * was opened", in a thread's words (`on_rank` 0), or a rank's: 1, "it had
 * N bytes on rank 0, it has M here"; 2 (rank 0, whose sizes came from the
 * other ranks' books), "it had N bytes on the rank that read its
 * metadata, it has M on rank 0". 0 or < 0.
 */
int weft__trace_check_sizes(const weft_trace *trace, const uint8_t *selected, int on_rank);

/* ---- Metadata reads, recorded and replayed (core/metafs.c) -------------------- */

/*
 * What a backend asks the file system while it opens a trace, through a
 * weft__metafs: NULL asks the file system; a recorder asks it and writes
 * the questions and answers down (and sends them to the other ranks of
 * its weft_dist as it goes); a replayer answers from rank 0's tape
 * (weft_trace_open with a weft_dist: rank 0 alone reads the metadata).
 * Each question returns 0, the errno the file system answered (> 0; the
 * same on every rank), or < 0 (memory, a tape that does not match:
 * message set).
 */
typedef struct weft__metafs weft__metafs;
enum { WEFT__META_MISSING, WEFT__META_FILE, WEFT__META_DIR, WEFT__META_OTHER };
/*
 * A recorder that sends its tape to the ranks of `d` (rank 0's), keeps it
 * (`keep`: for the trace's threads, weft__metafs_take_kept; without `d`
 * it is compressed at the end, in one chunk), or both. One with neither
 * keeps its tape unsent (tests: weft__metafs_tape).
 */
int weft__metafs_recorder(const weft_dist *d, int keep, weft__metafs **out);
/* The others: BEGIN from rank 0 (the format in *format; *replayable: the
 * open can be replayed, said even when this rank fails), then a replayer
 * of the tape that follows. */
int weft__metafs_replayer(const weft_dist *d, int keep, weft__metafs **out, int *format,
			  int *replayable);
/* The same from a kept tape (weft__metafs_take_kept), for a thread. */
int weft__metafs_replayer_kept(const void *tape, size_t len, weft__metafs **out,
			       int *format, int *replayable);
/* A recorder that keeps without sending (a serial open) keeps nothing
 * after all: what it wrote is dropped, nothing is compressed. */
void weft__metafs_unkeep(weft__metafs *fs);
/* After weft__metafs_end: the kept tape (malloc'd, the caller's) when it
 * is whole and replayable; 1 then, else 0. */
int weft__metafs_take_kept(weft__metafs *fs, void **tape, size_t *len);
int weft__metafs_replayable(const weft__metafs *fs);
/* Rank 0: 1 when other ranks' books answer its questions (weft__metafs_prefetch). */
int weft__metafs_booked(const weft__metafs *fs);
/* Rank 0: `backend` is about to open the trace (sends BEGIN). 0 or < 0. */
int weft__metafs_begin(weft__metafs *fs, const weft_backend *backend);
/* After the open (status `rc`): rank 0 sends the rest and its status, the
 * others take every message up to it. Returns the open's status. */
int weft__metafs_end(weft__metafs *fs, int rc);
void weft__metafs_free(weft__metafs *fs);
/* What `path` is (WEFT__META_*) and its size. */
int weft__metafs_stat(weft__metafs *fs, const char *path, int *kind, uint64_t *size);
/* The names in directory `path` but "." and "..", in strcmp order; free
 * them with weft__metafs_names_free. */
int weft__metafs_list(weft__metafs *fs, const char *path, char ***names, size_t *count);
void weft__metafs_names_free(char **names, size_t count);
/*
 * The bytes of `path` in a new NUL-terminated buffer (*len of them), and
 * its size: the first `max` with `head`, else the whole file, or none
 * (*bytes NULL) when it has more than `max`.
 */
int weft__metafs_read(weft__metafs *fs, const char *path, size_t max, int head, char **bytes,
		      size_t *len, uint64_t *size);
/*
 * Collective, at a point of the open that every rank reaches (the same
 * questions asked before it): with a dist of two ranks or more, ranks 1
 * and up each call `fn` on their share of the `count` items (every
 * ranks - 1'th item, from their own rank - 1: ovni's loom directories,
 * Pallas's archives) with a metafs that asks the file system and writes
 * the questions and answers in a book; rank 0 gathers the books and
 * answers its later questions from them (those no book has, from the file
 * system). `root`: the trace's root, which book paths are relative to
 * (ranks may open copies at other paths). Without a dist, on a thread's
 * replay, or after rank 0 failed: nothing. 0, or an error of the
 * collectives.
 */
typedef int (*weft__metafs_prefetch_fn)(weft__metafs *book, const char *root, size_t item,
					void *arg);
int weft__metafs_prefetch(weft__metafs *fs, const char *root, size_t count,
			  weft__metafs_prefetch_fn fn, void *arg);
/* For tests: a recorder's tape without a dist, and a replayer of such bytes. */
const void *weft__metafs_tape(const weft__metafs *fs, size_t *len);
int weft__metafs_replay_bytes(const void *tape, size_t len, weft__metafs **out);

/* ---- Streams shared among threads (core/parts.c) ------------------------------ */

/*
 * A part's work: the analysis over the streams of `selected`, read through
 * `handle` (the part's own handle of the trace), its result packed into
 * `result` for weft__dist_merge_fn. 0 or an error (message set).
 */
typedef int (*weft__part_fn)(weft_trace *handle, const uint8_t *selected, weft__pack *result,
			     void *arg);
/* How much work an analysis does per byte it reads (weft__parts_threads). */
typedef enum weft__work {
	WEFT__WORK_LIGHT,  /* counting, checking: `top`, `check`, `info` */
	WEFT__WORK_HEAVY   /* about 8 times more: profiles, conversions, dumps, sorting */
} weft__work;
/*
 * The threads worth starting for an analysis over the streams of `among`
 * (NULL: all): `asked` (> 0), else the trace's `threads` option, else
 * WEFT_THREADS, else the cores when the streams have files of their own
 * (formats read by whole files, one file for all streams: 1), at most 8
 * and one per 32 MiB of the streams plus 32 KiB per stream of the trace
 * when each thread opens the trace again (not readers_share_data), 8
 * times fewer bytes for heavy `work`; never more than the streams.
 */
int weft__parts_threads(const weft_trace *trace, const uint8_t *among, int asked,
			weft__work work);
/* The automatic choice: threads worth starting on `cores` (at most 8) to
 * read `bytes` of a trace of `trace_streams` streams; 1 or more. */
long weft__threads_worth(uint64_t bytes, size_t trace_streams, long cores, weft__work work);
/*
 * Runs `compute` on `threads` threads, each over its part of the streams
 * of `among` (NULL: all; dealt by bytes) with its own handle of the trace,
 * and merges the parts' results in part order through `merge` (whatever
 * order they finish in); their diagnostics go onto `trace` (once-notes
 * kept once) and their progress into its. 0, or the first error in part
 * order.
 */
int weft__parts_run(weft_trace *trace, const uint8_t *among, int threads,
		    weft__part_fn compute, void *arg, weft__dist_merge_fn merge, void *ctx);

/*
 * The threads worth starting to read the trace's files in byte pieces, for
 * an analysis of every stream in one pass over the files (formats whose
 * open notes where records start: ROSS; weft__pieces_run): `asked` (> 0),
 * else the threads option, else WEFT_THREADS, else the cores (at most 8)
 * and one per 32 MiB of the files, 8 times fewer bytes for heavy `work`;
 * never more than the pieces the files can be cut into. 1 when the files
 * cannot be cut (other formats, or cut for ranks already: weft__dist_pieces).
 */
int weft__pieces_threads(const weft_trace *trace, int asked, weft__work work);
/*
 * Runs `compute` on `threads` threads, part k over piece k of `threads`
 * of every file (its handle borrows the trace's data: weft__trace_borrow;
 * it reads with weft__cursor_create_pieces; `selected` is NULL), and
 * merges the parts' results in part order, which is file order, through
 * `merge`; diagnostics and progress as weft__parts_run.
 */
int weft__pieces_run(weft_trace *trace, int threads, weft__part_fn compute, void *arg,
		     weft__dist_merge_fn merge, void *ctx);

/*
 * Parts whose results go on while they run (a dump's lines, merged by the
 * caller as they come), the streams of `among` dealt by bytes (by
 * `groups`, when set: weft__share_deal_groups): `run` is called on each part's thread with the
 * part's number (0 to started - 1), then `end` (when set) with the
 * part's status, also when its handle could not be opened, so that a
 * caller waiting for the part learns it is over. weft__parts_start()
 * returns the number of parts started, or an error; either way *live is
 * set (NULL without memory) and weft__parts_finish() must be called,
 * after the caller has stopped waiting for the parts (and let any it
 * would block go on): it joins them, takes their diagnostics and
 * progress, and returns the start's error or the first part's error in
 * part order. weft__parts_show_progress() shows the parts' counts as the
 * trace's progress, from the caller's thread.
 */
typedef struct weft__parts_live weft__parts_live;
typedef int (*weft__part_live_fn)(weft_trace *handle, const uint8_t *selected, int part,
				  void *arg);
typedef void (*weft__part_end_fn)(void *arg, int part, int rc);
int weft__parts_start(weft_trace *trace, const uint8_t *among, const uint32_t *groups,
		      int threads, weft__part_live_fn run, weft__part_end_fn end, void *arg,
		      weft__parts_live **live);
void weft__parts_show_progress(weft__parts_live *live);
int weft__parts_finish(weft__parts_live *live);

/* ---- Windowed file reading (core/mapfile.c) -------------------------------- */

/*
 * A read-only view of a file through a window that slides over it: a
 * buffer filled with pread() (never a mapping: a file that shrinks while
 * it is read is then an error, not a SIGBUS). At most `window` bytes are
 * held at a time (more only for a record larger than the window), which
 * keeps the memory of a reader bounded whatever the file size. Pointers
 * returned stay valid until the next call that moves the window.
 */
typedef struct weft_mapfile {
	int fd;
	uint64_t size;        /* file size when it was opened */
	uint64_t window;      /* preferred window size */
	uint64_t map_start;   /* file offset of the window */
	uint64_t map_len;     /* bytes in the window */
	unsigned char *map;   /* the window; NULL when nothing is read yet */
	const char *name;     /* for messages */
	int went_back;        /* a read before the window was asked once */
	unsigned char *buffer;
	uint64_t buffer_cap;
	uint64_t *bytes_read; /* NULL, or where the bytes read are added (atomically) */
} weft_mapfile;

int weft__mapfile_open(weft_mapfile *mf, const char *path, const char *name,
		       uint64_t window);
/*
 * Makes [offset, offset + len) visible and returns a pointer to offset, or
 * NULL with an error set when the range is outside the file, cannot be
 * read, or is no longer in the file (it shrank since it was opened:
 * WEFT_ETRUNCATED, "the file changed since it was opened", at `offset`).
 * `len` may exceed the window (the buffer grows for it).
 */
const unsigned char *weft__mapfile_get(weft_mapfile *mf, uint64_t offset,
				       uint64_t len);
void weft__mapfile_close(weft_mapfile *mf);
/*
 * Counts what `mf` reads as input bytes of `trace` (its progress), from
 * this call on. The readers of trace data call it; other files (indexes,
 * temporary files) are not counted.
 */
void weft__mapfile_count(weft_mapfile *mf, struct weft_trace *trace);

/*
 * Whether records start at `at`, whose first `head` bytes are at p (a
 * format's test, core/find_forward.c). The probe may read further through
 * `mf`, which moves the window: p is then stale, and it must not use it
 * after such a read. 1 when they start there.
 */
typedef int (*weft__start_probe)(void *ctx, weft_mapfile *mf, uint64_t at,
				 const unsigned char *p);
/*
 * The first offset in [from, end - head] where `probe` says records start:
 * 1 and *at, or 0 (none, or the file could not be read). Reads the bytes
 * once, through the window of `mf`.
 */
int weft__find_forward(weft_mapfile *mf, uint64_t from, uint64_t end, uint32_t head,
		       weft__start_probe probe, void *ctx, uint64_t *at);

/* ---- Helper threads (core/threads.c) -------------------------------------- */

/*
 * 1 when work over `bytes` of input should get a helper thread, per the
 * `threads` open option: 1 never, 2 and more always; 0 (automatic): as
 * the environment variable WEFT_THREADS says when set (same numbers), else
 * when more than one CPU is online and `bytes` >= `worth_bytes` (below, a
 * thread costs more than it saves).
 */
int weft__helper_wanted(int threads, uint64_t bytes, uint64_t worth_bytes);
/* WEFT_THREADS as a positive number, or 0 when unset or not a number. */
long weft__threads_from_environment(void);

/* ---- Whole reads and writes (core/fileio.c) -------------------------------- */

/* `offset` of weft__write_full(): the file position (write(2)). */
#define WEFT__AT_POSITION UINT64_MAX

/*
 * Writes all `len` bytes of buf at `offset` (pwrite(2)), or at the file
 * position (WEFT__AT_POSITION), retrying EINTR and short writes. Returns
 * 0, or the errno of the failure (EIO when a call wrote nothing); *done,
 * when not NULL, gets the bytes written.
 */
int weft__write_full(int fd, const void *buf, size_t len, uint64_t offset, size_t *done);

/*
 * Reads up to `len` bytes at `offset` (pread(2)), retrying EINTR and short
 * reads until `len` or the end of the file. Returns the bytes read (fewer
 * than len only at the end of the file), or -errno.
 */
int64_t weft__read_full(int fd, void *buf, size_t len, uint64_t offset);

/* ---- Small helpers --------------------------------------------------------- */

/*
 * Grows *array (*cap elements of `size` bytes) to hold at least `need`,
 * doubling. 0, or WEFT_ENOMEM (message set) with the array unchanged.
 */
int weft__array_grow(void **array, size_t *cap, size_t need, size_t size);
/* The same, the new elements zeroed (tables indexed by an id or a slot). */
int weft__array_grow_zeroed(void **array, size_t *cap, size_t need, size_t size);

static inline uint16_t weft__bswap16(uint16_t x) { return __builtin_bswap16(x); }
static inline uint32_t weft__bswap32(uint32_t x) { return __builtin_bswap32(x); }
static inline uint64_t weft__bswap64(uint64_t x) { return __builtin_bswap64(x); }

/*
 * Sets a scalar field from `raw` bytes of `type` (fixed-size types only),
 * in the given byte order. Returns 0 or WEFT_EINVAL.
 */
int weft__field_set_scalar(weft_field *out, weft_type type, const uint8_t *raw,
			   int big_endian);

/*
 * The type whose weft_type_name() is the n bytes at s ("u32", "f64",
 * "str"...), or 0: the formats that name field types in their files
 * (ovni signatures, ROSS model descriptions) use the same names.
 */
weft_type weft__type_from_name(const char *s, size_t n);

/*
 * The slow path of decoding the fields of an event into a scratch array
 * (the writers that print fields keep one): weft_event_fields() said the
 * event has n fields, more than *cap; grows *fields to n and decodes
 * again. Returns what weft_event_fields() returns, or WEFT_ENOMEM
 * (message set).
 */
int weft__event_fields_grow(const weft_trace *trace, const weft_event *event,
			    weft_field **fields, size_t *cap, int n);

/* ---- UTF-8 (core/utf8.c) ---------------------------------------------------- */

/*
 * Length of the valid UTF-8 sequence at s (1..4), or 0 when the bytes at s
 * are not valid UTF-8 (overlong forms, surrogates and code points above
 * U+10FFFF are invalid).
 */
size_t weft__utf8_sequence_length(const unsigned char *s, size_t len);
/* Length of the longest valid UTF-8 prefix of s (len when all valid). */
size_t weft__utf8_valid_prefix(const unsigned char *s, size_t len);
/* s[0..len) with every byte that starts no valid sequence as U+FFFD
 * (malloc'd, NUL-terminated), or NULL on ENOMEM. */
char *weft__utf8_repaired(const char *s, size_t len);
/* A jansson string of s[0..len), repaired where not UTF-8; NULL on ENOMEM. */
json_t *weft__json_text(const char *s, size_t len);

/* Path joining into a malloc'ed string ("a" + "/" + "b"). */
char *weft__path_join(const char *a, const char *b);

#endif /* WEFT_CORE_INTERNAL_H */
