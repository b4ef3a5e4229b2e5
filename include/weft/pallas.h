/* SPDX-License-Identifier: MIT */
/*
 * weft/pallas.h - writing Pallas traces (on-disk version 20) from C.
 *
 * A Pallas trace is a directory (see docs/pallas-writer.md):
 *
 *     <dir>/<name>.pallas                        the global archive
 *     <dir>/archive_<lg>/archive.pallas          one archive per location group
 *     <dir>/archive_<lg>/thread_<loc>/thread.pallas          a thread's grammar
 *     <dir>/archive_<lg>/thread_<loc>/event_durations.dat    its timestamps
 *     <dir>/archive_<lg>/thread_<loc>/sequence_durations.dat its durations
 *
 * The objects follow Pallas's API: a global archive (weft_pallas_global)
 * holds the settings, global definitions and location groups; an archive
 * (weft_pallas_archive) per location group (a process) holds local
 * definitions and locations; a thread writer (weft_pallas_thread) per
 * location records the events of one thread. While recording, a thread
 * writer finds the repetitions of its events (sequences, loops) and
 * writes its timestamps and durations in sub-arrays of 1000 values as
 * they fill, so that its memory does not grow with the number of events
 * of a repetitive program.
 *
 * Typical use:
 *
 *     weft_pallas_global *g;
 *     weft_pallas_global_create("trace", "main", NULL, &g);
 *     weft_pallas_defs *gd = weft_pallas_global_defs(g);
 *     weft_pallas_add_string(gd, 0, "Process");
 *     weft_pallas_add_string(gd, 1, "compute");
 *     weft_pallas_add_region(gd, 1, 1);
 *     weft_pallas_add_location_group(gd, 0, 0, WEFT_PALLAS_NO_PARENT);
 *     weft_pallas_archive *a;
 *     weft_pallas_archive_create(g, 0, &a);
 *     weft_pallas_add_location(weft_pallas_archive_defs(a), 0, 0, 0);
 *     // in each thread:
 *     weft_pallas_thread *t;
 *     weft_pallas_thread_create(a, 0, &t);
 *     weft_pallas_record_enter(t, NULL, WEFT_PALLAS_TIME_NOW, 1);
 *     weft_pallas_record_leave(t, NULL, WEFT_PALLAS_TIME_NOW, 1);
 *     weft_pallas_thread_close(t);
 *     // once every thread is closed:
 *     weft_pallas_archive_store(a);
 *     weft_pallas_global_store(g);
 *     weft_pallas_global_free(g);   // frees a and t too
 *
 * Threads: each thread writer must be used by one thread at a time;
 * different thread writers may record at the same time without any lock.
 * Definitions may be added from any thread (each archive locks its own).
 *
 * Files: every file is written to `<file>.tmp` and renamed when complete,
 * so an interrupted program never leaves a file that looks whole.
 *
 * Every function that can fail returns 0 or a negative WEFT_E* code
 * (weft/error.h); weft_last_error() then names the file or object and
 * what failed.
 */
#ifndef WEFT_PALLAS_H
#define WEFT_PALLAS_H

#include <stddef.h>
#include <stdint.h>

#include "weft/error.h"
#include "weft/api.h"

#ifdef __cplusplus
extern "C" {
#endif
WEFT_API_BEGIN

typedef struct weft_pallas_global weft_pallas_global;
typedef struct weft_pallas_archive weft_pallas_archive;
typedef struct weft_pallas_thread weft_pallas_thread;
/* The definitions and metadata of a global archive or of an archive. */
typedef struct weft_pallas_defs weft_pallas_defs;

/* A timestamp argument that means "now": the thread's monotonic clock in
 * ns since its first such reading (Pallas's PALLAS_TIMESTAMP_INVALID). */
#define WEFT_PALLAS_TIME_NOW UINT64_MAX
/* The parent of a root location group (Pallas's -1). */
#define WEFT_PALLAS_NO_PARENT UINT32_MAX

/* ---- Settings ------------------------------------------------------------------ */

/* How the values (.dat files) are stored. */
enum weft_pallas_write_compression {
	WEFT_PALLAS_WRITE_RAW = 0,  /* u64 nbytes + the raw u64 values */
	WEFT_PALLAS_WRITE_ZSTD = 1  /* u64 nbytes + one zstd frame (the default) */
};

/* How repetitions are searched (the settings' loop finding field). */
enum weft_pallas_write_loops {
	WEFT_PALLAS_WRITE_LOOPS_NONE = 0,      /* only blocks (Enter..Leave) */
	WEFT_PALLAS_WRITE_LOOPS_BASIC = 1,     /* no length limit */
	WEFT_PALLAS_WRITE_LOOPS_TRUNCATED = 2  /* max_loop_length (the default) */
};

/* Where the value sub-arrays go in the .dat files. */
enum weft_pallas_write_layout {
	/* Vector by vector, in the order Pallas writes them: the files are
	 * byte for byte Pallas's (the default). Full sub-arrays wait in a
	 * scratch file and are copied in place when the thread is closed. */
	WEFT_PALLAS_LAYOUT_PALLAS = 0,
	/* In the order sub-arrays fill, straight into the .dat files, and
	 * identical sub-arrays share one frame: no copy at close, smaller
	 * files; still read by Pallas, which follows the stored offsets. */
	WEFT_PALLAS_LAYOUT_COMPACT = 1
};

typedef struct weft_pallas_write_options {
	int compression;          /* enum weft_pallas_write_compression */
	int zstd_level;           /* 1 .. 22 (written to the settings; default 5) */
	int loop_finding;         /* enum weft_pallas_write_loops */
	uint64_t max_loop_length; /* written to the settings (default 100) */
	/*
	 * 1 (the default): repetitions longer than max_loop_length are found
	 * too (by hashing: cheap whatever their length), where Pallas gives
	 * up; the grammar is Pallas's whenever every pattern is shorter.
	 * 0: search exactly Pallas's window (same grammar as Pallas always).
	 */
	int long_patterns;
	/*
	 * weft only, 0 by default: store each timestamp sub-array as its
	 * first value then differences (smaller files). The settings then say
	 * timestamp storage 3, which Pallas 0.20 does not read.
	 */
	int delta_timestamps;
	int layout;               /* enum weft_pallas_write_layout */
	/*
	 * Threads that compress full sub-arrays in the background, shared by
	 * all the thread writers of the trace (or of a standalone archive).
	 * Default: 1 when more than one CPU is online
	 * (sysconf(_SC_NPROCESSORS_ONLN) > 1), else 0. Set 0 to compress in
	 * the recording threads (no extra thread). A thread writer with 16
	 * sub-arrays already waiting for the helpers compresses the next one
	 * itself, so a slow or descheduled helper does not stop it (with the
	 * compact layout, whose files take sub-arrays in order, it may wait
	 * for a helper when 64 sub-arrays are in flight). The files are byte
	 * for byte the same with any number of helpers.
	 * Not used without compression (raw values are only copied).
	 */
	int compress_threads;
	int replace;              /* 1: existing trace files may be replaced */
	int sync;                 /* 1: fsync each file before renaming it */
} weft_pallas_write_options;

/* Pallas's defaults: zstd level 5, truncated loop finding with length
 * 100, long patterns on, no delta, Pallas layout; and one helper thread
 * compressing when more than one CPU is online (compress_threads). */
void weft_pallas_write_options_init(weft_pallas_write_options *o);

/* ---- The global archive ----------------------------------------------------------- */

/*
 * Starts the trace `<dir>/<name>.pallas` (".pallas" is added when `name`
 * does not end with it); creates `dir` (and its parents) when missing.
 * Fails with WEFT_EEXIST when the main file exists and `o->replace` is
 * not set. `o` may be NULL (the defaults). Sets *out.
 */
int weft_pallas_global_create(const char *dir, const char *name,
			      const weft_pallas_write_options *o,
			      weft_pallas_global **out);

/* Its global definitions, location groups and metadata. */
weft_pallas_defs *weft_pallas_global_defs(weft_pallas_global *g);

/*
 * Writes the main file (version, settings, definitions, location groups,
 * locations, metadata). May be called again after more definitions.
 */
int weft_pallas_global_store(weft_pallas_global *g);

/*
 * Frees the global archive and every archive and thread writer created
 * from it and not freed yet (a thread writer not closed is abandoned: its
 * files are not written). NULL is accepted.
 */
void weft_pallas_global_free(weft_pallas_global *g);

/* ---- Definitions (global or local to an archive) --------------------------------- */

/* String `ref` (a later definition of the same ref replaces it). */
int weft_pallas_add_string(weft_pallas_defs *d, uint32_t ref, const char *str);
/* A string under the next free ref (1 + the largest ref so far, 0 at first). */
int weft_pallas_register_string(weft_pallas_defs *d, const char *str, uint32_t *ref);
/* Region `ref` named by string `name`. */
int weft_pallas_add_region(weft_pallas_defs *d, uint32_t ref, uint32_t name);
/* Attribute `ref`: name and description strings, value type (WEFT_PALLAS_TYPE_*). */
int weft_pallas_add_attribute(weft_pallas_defs *d, uint32_t ref, uint32_t name,
			      uint32_t description, int type);
/* Group `ref` (type and paradigm as OTF2 numbers them) of `count` members. */
int weft_pallas_add_group(weft_pallas_defs *d, uint32_t ref, uint32_t name,
			  int32_t type, int32_t paradigm, const uint32_t *members,
			  uint32_t count);
/* Communicator `ref` over `group`, `parent` (WEFT_PALLAS_NO_PARENT: none). */
int weft_pallas_add_comm(weft_pallas_defs *d, uint32_t ref, uint32_t name,
			 uint32_t group, uint32_t parent);
/* Location group `id` (a process); parent WEFT_PALLAS_NO_PARENT for a root. */
int weft_pallas_add_location_group(weft_pallas_defs *d, uint32_t id, uint32_t name,
				   uint32_t parent);
/* Location `id` (a thread) in location group `parent`. */
int weft_pallas_add_location(weft_pallas_defs *d, uint32_t id, uint32_t name,
			     uint32_t parent);
/* Custom metadata: `value` for `key` (replaces an earlier value). */
int weft_pallas_add_metadata(weft_pallas_defs *d, const char *key, const char *value);

/* ---- Archives ------------------------------------------------------------------------ */

/* The archive of location group `id` (archive_<id>/), created once. */
int weft_pallas_archive_create(weft_pallas_global *g, uint32_t id,
			       weft_pallas_archive **out);
/*
 * An archive without a global archive in this process (e.g. one MPI rank
 * of a trace whose global archive another rank writes): `dir` is the
 * trace directory, `o` the settings the threads use (NULL: defaults).
 */
int weft_pallas_archive_create_standalone(const char *dir, uint32_t id,
					  const weft_pallas_write_options *o,
					  weft_pallas_archive **out);
weft_pallas_defs *weft_pallas_archive_defs(weft_pallas_archive *a);
/* Writes archive.pallas; every thread writer of the archive must be closed. */
int weft_pallas_archive_store(weft_pallas_archive *a);
/* Frees the archive and its thread writers not freed yet. NULL is accepted. */
void weft_pallas_archive_free(weft_pallas_archive *a);

/* ---- Thread writers -------------------------------------------------------------------- */

/* The writer of location `location` (thread_<location>/), created once per archive. */
int weft_pallas_thread_create(weft_pallas_archive *a, uint32_t location,
			      weft_pallas_thread **out);
/*
 * Ends the thread: closes the blocks still open (as if left at the last
 * event), writes thread.pallas and the two .dat files. Every later record
 * on `t` fails with WEFT_EINVAL.
 */
int weft_pallas_thread_close(weft_pallas_thread *t);
/* Frees a thread writer (not closed: abandoned, nothing written). NULL is accepted. */
void weft_pallas_thread_free(weft_pallas_thread *t);

/* Counters of a thread writer, for tests and statistics. */
typedef struct weft_pallas_thread_stats {
	uint64_t events;         /* event occurrences recorded */
	uint64_t distinct_events, sequences, loops; /* grammar sizes (with dead slots) */
	uint64_t subarrays;      /* value sub-arrays written so far */
	uint64_t subarrays_shared; /* of which identical to an earlier one (not compressed again) */
	uint64_t memory;         /* bytes allocated by the writer now */
	uint64_t memory_peak;
} weft_pallas_thread_stats;
void weft_pallas_thread_get_stats(const weft_pallas_thread *t,
				  weft_pallas_thread_stats *out);

/* ---- Attribute lists ---------------------------------------------------------------------- */

/* Attribute value types (the u8 of attribute definitions), as Pallas numbers them. */
enum weft_pallas_type {
	WEFT_PALLAS_TYPE_NONE = 0,
	WEFT_PALLAS_TYPE_UINT8 = 1, WEFT_PALLAS_TYPE_UINT16 = 2,
	WEFT_PALLAS_TYPE_UINT32 = 3, WEFT_PALLAS_TYPE_UINT64 = 4,
	WEFT_PALLAS_TYPE_INT8 = 5, WEFT_PALLAS_TYPE_INT16 = 6,
	WEFT_PALLAS_TYPE_INT32 = 7, WEFT_PALLAS_TYPE_INT64 = 8,
	WEFT_PALLAS_TYPE_FLOAT = 9, WEFT_PALLAS_TYPE_DOUBLE = 10,
	WEFT_PALLAS_TYPE_STRING = 11,     /* a string ref; u32 refs up to 25 */
	WEFT_PALLAS_TYPE_ATTRIBUTE = 12, WEFT_PALLAS_TYPE_LOCATION = 13,
	WEFT_PALLAS_TYPE_REGION = 14, WEFT_PALLAS_TYPE_GROUP = 15,
	WEFT_PALLAS_TYPE_METRIC = 16, WEFT_PALLAS_TYPE_COMM = 17,
	WEFT_PALLAS_TYPE_PARAMETER = 18, WEFT_PALLAS_TYPE_RMA_WIN = 19,
	WEFT_PALLAS_TYPE_SOURCE_CODE_LOCATION = 20,
	WEFT_PALLAS_TYPE_CALLING_CONTEXT = 21,
	WEFT_PALLAS_TYPE_INTERRUPT_GENERATOR = 22,
	WEFT_PALLAS_TYPE_IO_FILE = 23, WEFT_PALLAS_TYPE_IO_HANDLE = 24,
	WEFT_PALLAS_TYPE_LOCATION_GROUP = 25
};

/* Most values in one list (Pallas's limit), and the bytes they may take. */
#define WEFT_PALLAS_ATTRS_MAX 127
#define WEFT_PALLAS_ATTRS_BYTES (7 + WEFT_PALLAS_ATTRS_MAX * 14)

/*
 * The attributes of one event occurrence, built on the stack: init, then
 * one add per value. Stored as Pallas stores them: a 7-byte header
 * (occurrence index, size, count), then per value u16 size, u32 ref and
 * the value in its type's size.
 */
typedef struct weft_pallas_attrs {
	uint16_t size;   /* bytes used in `bytes`, header included */
	uint8_t count;   /* values */
	int refused;     /* an add failed: recording with this list fails */
	uint8_t bytes[WEFT_PALLAS_ATTRS_BYTES];
} weft_pallas_attrs;

void weft_pallas_attrs_init(weft_pallas_attrs *l);
int weft_pallas_attrs_add_u8(weft_pallas_attrs *l, uint32_t attribute, uint8_t v);
int weft_pallas_attrs_add_u16(weft_pallas_attrs *l, uint32_t attribute, uint16_t v);
int weft_pallas_attrs_add_u32(weft_pallas_attrs *l, uint32_t attribute, uint32_t v);
int weft_pallas_attrs_add_u64(weft_pallas_attrs *l, uint32_t attribute, uint64_t v);
int weft_pallas_attrs_add_i8(weft_pallas_attrs *l, uint32_t attribute, int8_t v);
int weft_pallas_attrs_add_i16(weft_pallas_attrs *l, uint32_t attribute, int16_t v);
int weft_pallas_attrs_add_i32(weft_pallas_attrs *l, uint32_t attribute, int32_t v);
int weft_pallas_attrs_add_i64(weft_pallas_attrs *l, uint32_t attribute, int64_t v);
int weft_pallas_attrs_add_float(weft_pallas_attrs *l, uint32_t attribute, float v);
int weft_pallas_attrs_add_double(weft_pallas_attrs *l, uint32_t attribute, double v);
/* A reference value (string, region, location, ...: types 11 to 25). */
int weft_pallas_attrs_add_ref(weft_pallas_attrs *l, uint32_t attribute, int type,
			      uint32_t ref);

/* ---- Records --------------------------------------------------------------------------------
 *
 * Every record takes the thread writer, an attribute list (NULL: none),
 * the timestamp in ns (WEFT_PALLAS_TIME_NOW: the clock) and the record's
 * payload, in the order of Pallas's pallas_record_* functions. Records
 * that open a block (Enter, fork, team begin, thread begin) and close it
 * (Leave, join, team end, thread end) shape the grammar: a block becomes
 * a sequence when it is closed. A block end with no block open is stored
 * as a plain event.
 */
int weft_pallas_record_enter(weft_pallas_thread *t, const weft_pallas_attrs *attrs,
			     uint64_t ts, uint32_t region);
int weft_pallas_record_leave(weft_pallas_thread *t, const weft_pallas_attrs *attrs,
			     uint64_t ts, uint32_t region);
/* A generic event named by string `name`. */
int weft_pallas_record_generic(weft_pallas_thread *t, const weft_pallas_attrs *attrs,
			       uint64_t ts, uint32_t name);

int weft_pallas_record_mpi_send(weft_pallas_thread *t, const weft_pallas_attrs *attrs,
				uint64_t ts, uint32_t receiver, uint32_t comm,
				uint32_t tag, uint64_t length);
int weft_pallas_record_mpi_isend(weft_pallas_thread *t, const weft_pallas_attrs *attrs,
				 uint64_t ts, uint32_t receiver, uint32_t comm,
				 uint32_t tag, uint64_t length, uint64_t request);
int weft_pallas_record_mpi_isend_complete(weft_pallas_thread *t,
					  const weft_pallas_attrs *attrs,
					  uint64_t ts, uint64_t request);
int weft_pallas_record_mpi_irecv_request(weft_pallas_thread *t,
					 const weft_pallas_attrs *attrs,
					 uint64_t ts, uint64_t request);
int weft_pallas_record_mpi_recv(weft_pallas_thread *t, const weft_pallas_attrs *attrs,
				uint64_t ts, uint32_t sender, uint32_t comm,
				uint32_t tag, uint64_t length);
int weft_pallas_record_mpi_irecv(weft_pallas_thread *t, const weft_pallas_attrs *attrs,
				 uint64_t ts, uint32_t sender, uint32_t comm,
				 uint32_t tag, uint64_t length, uint64_t request);
/* Collective begin/end are plain events, as in Pallas. */
int weft_pallas_record_mpi_collective_begin(weft_pallas_thread *t,
					    const weft_pallas_attrs *attrs, uint64_t ts);
int weft_pallas_record_mpi_collective_end(weft_pallas_thread *t,
					  const weft_pallas_attrs *attrs, uint64_t ts,
					  uint32_t op, uint32_t comm, uint32_t root,
					  uint64_t sent, uint64_t received);

/* OpenMP: fork opens a block, join closes it. */
int weft_pallas_record_omp_fork(weft_pallas_thread *t, const weft_pallas_attrs *attrs,
				uint64_t ts, uint32_t threads);
int weft_pallas_record_omp_join(weft_pallas_thread *t, const weft_pallas_attrs *attrs,
				uint64_t ts);
int weft_pallas_record_omp_acquire_lock(weft_pallas_thread *t,
					const weft_pallas_attrs *attrs, uint64_t ts,
					uint32_t lock);
int weft_pallas_record_omp_release_lock(weft_pallas_thread *t,
					const weft_pallas_attrs *attrs, uint64_t ts,
					uint32_t lock);
int weft_pallas_record_omp_task_create(weft_pallas_thread *t,
				       const weft_pallas_attrs *attrs, uint64_t ts,
				       uint64_t task);
int weft_pallas_record_omp_task_switch(weft_pallas_thread *t,
				       const weft_pallas_attrs *attrs, uint64_t ts,
				       uint64_t task);
int weft_pallas_record_omp_task_complete(weft_pallas_thread *t,
					 const weft_pallas_attrs *attrs, uint64_t ts,
					 uint64_t task);

/* Threads: fork/join, team begin/end and begin/end open and close blocks. */
int weft_pallas_record_thread_fork(weft_pallas_thread *t, const weft_pallas_attrs *attrs,
				   uint64_t ts, uint32_t threads);
int weft_pallas_record_thread_join(weft_pallas_thread *t, const weft_pallas_attrs *attrs,
				   uint64_t ts);
int weft_pallas_record_thread_team_begin(weft_pallas_thread *t,
					 const weft_pallas_attrs *attrs, uint64_t ts);
int weft_pallas_record_thread_team_end(weft_pallas_thread *t,
				       const weft_pallas_attrs *attrs, uint64_t ts);
int weft_pallas_record_thread_begin(weft_pallas_thread *t, const weft_pallas_attrs *attrs,
				    uint64_t ts);
int weft_pallas_record_thread_end(weft_pallas_thread *t, const weft_pallas_attrs *attrs,
				  uint64_t ts);
int weft_pallas_record_thread_acquire_lock(weft_pallas_thread *t,
					   const weft_pallas_attrs *attrs, uint64_t ts,
					   uint32_t lock);
int weft_pallas_record_thread_release_lock(weft_pallas_thread *t,
					   const weft_pallas_attrs *attrs, uint64_t ts,
					   uint32_t lock);
int weft_pallas_record_thread_task_create(weft_pallas_thread *t,
					  const weft_pallas_attrs *attrs, uint64_t ts);
int weft_pallas_record_thread_task_switch(weft_pallas_thread *t,
					  const weft_pallas_attrs *attrs, uint64_t ts);
int weft_pallas_record_thread_task_complete(weft_pallas_thread *t,
					    const weft_pallas_attrs *attrs, uint64_t ts);

/*
 * The most blocks open at once in a thread. Pallas 0.20's reader keeps 100
 * frames (the root and 99 sequences or loops nested below it: one more
 * overflows its call stack) and its writer refuses the 128th block; weft's
 * writer refuses a block start that would open one more than this (the
 * record fails with WEFT_EUNSUPPORTED, the thread writer stays usable),
 * keeps the grammar within the reader's frames (a repetition that would
 * nest too deep is left unrolled) and keeps one frame to give the thread's
 * root the single sequence that Pallas's reader needs.
 */
#define WEFT_PALLAS_MAX_NESTING 98

/* How a raw record shapes the grammar. */
enum weft_pallas_record_role {
	WEFT_PALLAS_ROLE_SINGLE = 0,      /* a plain event */
	WEFT_PALLAS_ROLE_BLOCK_START = 1, /* opens a block */
	WEFT_PALLAS_ROLE_BLOCK_END = 2    /* closes the open block */
};

/*
 * Any record kind (Pallas's numbers, 1 to 59: see docs/pallas-writer.md)
 * with its payload bytes as Pallas lays them out (little-endian fields, no
 * padding, at most 250 bytes). Events are the same event when their kind
 * and payload bytes are equal.
 */
int weft_pallas_record_raw(weft_pallas_thread *t, const weft_pallas_attrs *attrs,
			   uint64_t ts, int32_t record, int role,
			   const void *payload, size_t size);

WEFT_API_END

#ifdef __cplusplus
}
#endif

#endif /* WEFT_PALLAS_H */
