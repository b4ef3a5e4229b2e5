/* SPDX-License-Identifier: MIT */
/*
 * formats/pallas/pallas_writer_internal.h - what the parts of the
 * Pallas writer share:
 *
 *   pallas_write_records.c  the records API (payloads, attribute lists)
 *   pallas_write_grammar.c  the grammar of each thread (events,
 *                           sequences, loops, the per-depth token lists
 *                           and the search for repetitions)
 *   pallas_write_values.c   the value vectors (sub-arrays compressed and
 *                           spilled as they fill, optionally by helper
 *                           threads) and the attribute chunks
 *   pallas_write_thread.c   thread writers and their files at close
 *   pallas_write_defs.c     definitions (global archive, archives)
 *   pallas_write_archive.c  options, memory accounting, the global
 *                           archive and archives and their files
 *   pallas_write_files.c    paths, and output files written as
 *                           `<file>.tmp`, renamed when complete
 *
 * The reader's files are the other pallas_*.c (its grammar replay is
 * pallas_thread.c, its public header weft/pallas_grammar.h).
 * Internal names start with pw_ (types) and weft__pw_ (functions shared
 * by the files), apart from the reader's pallas_ names.
 */
#ifndef WEFT_PALLAS_WRITER_INTERNAL_H
#define WEFT_PALLAS_WRITER_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "core/internal.h"
#include "formats/pallas/pallas_format.h"
#include "weft/pallas.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the Pallas writer stores host-order values: little-endian hosts only"
#endif

#define PW_SUB_VALUES WEFT_PALLAS_SUBARRAY_VALUES /* values per sub-array */
#define PW_NONE UINT32_MAX                        /* no index */
#define PW_PENDING UINT64_MAX                     /* sub-array not placed yet */

/* ---- Value vectors ------------------------------------------------------------- */

/* Which .dat file a vector's sub-arrays go to. */
enum pw_file { PW_EVENT_FILE = 0, PW_SEQUENCE_FILE = 1 };

/* Which vector of its owner a vector is (helper threads name it so). */
enum pw_which { PW_EVENT_TS = 0, PW_SEQ_DUR = 1, PW_SEQ_EXCL = 2, PW_SEQ_TS = 3 };

/* A full sub-array: its header fields and where its record lies. */
typedef struct pw_sub {
	uint64_t count;
	uint64_t f1, f2, f3;  /* timestamps: first, last; durations: min, max, mean */
	uint64_t where;       /* offset of `u64 nbytes + data` in its store, or PW_PENDING */
	uint64_t length;      /* bytes of that record */
} pw_sub;

/*
 * One linked vector of Pallas: the values of the open sub-array in
 * memory, the full ones already compressed away (only their headers
 * stay), and the statistics of those full ones. Appending a value is a
 * store and a compare: the statistics of a sub-array (min, max, sum for
 * durations; first and last for timestamps) are taken from its values
 * when it is full (or at close), not value by value.
 */
typedef struct pw_vector {
	uint64_t *open;           /* values of the open sub-array */
	uint32_t open_count, open_cap;
	uint8_t duration;         /* 1: durations (min/max/mean), 0: timestamps */
	uint8_t file;             /* enum pw_file */
	uint8_t which;            /* enum pw_which: whose vector it is */
	uint32_t owner;           /* the index of that event or sequence */
	uint64_t min, max, sum;   /* over the full sub-arrays (durations) */
	pw_sub *subs;
	uint32_t sub_count, sub_cap;
} pw_vector;

typedef struct weft_pallas_thread pw_thread;

/* Appends `value` when the open sub-array has no room left or becomes full. */
int weft__pw_vector_add_slow(pw_thread *t, pw_vector *v, uint64_t value);
/* Releases what `v` holds. */
void weft__pw_vector_free(pw_thread *t, pw_vector *v);

/* Values in a vector: every full sub-array holds PW_SUB_VALUES. */
static inline uint64_t weft__pw_vector_size(const pw_vector *v)
{
	return (uint64_t)v->sub_count * PW_SUB_VALUES + v->open_count;
}

/*
 * Appends a value (the hot path: one compare, one store); growing the
 * open sub-array and sending a full one away are out of line.
 */
static inline int weft__pw_vector_add(pw_thread *t, pw_vector *v, uint64_t value)
{
	uint32_t n = v->open_count;
	if (n + 1 >= v->open_cap)
		return weft__pw_vector_add_slow(t, v, value);
	v->open[n] = value;
	v->open_count = n + 1;
	return 0;
}

/* ---- The grammar of a thread ------------------------------------------------------- */

/* Lengths of the sequences that end with a token (ascending, distinct). */
typedef struct pw_lengths {
	uint32_t *v;
	uint32_t n, cap;
} pw_lengths;

/*
 * The attribute lists of one event, in the order recorded. The newest
 * ones stay in `buf` (at most PW_ATTR_CHUNK bytes); when a list would not
 * fit, the buffer goes to the thread's attribute scratch file as one
 * chunk and only its place stays (8 bytes per chunk). At close the
 * chunks, then the buffer, are copied into thread.pallas: the bytes
 * Pallas stores.
 */
typedef struct pw_attrs {
	uint8_t *buf;          /* the lists not spilled yet */
	uint32_t len, cap;
	uint64_t total;        /* bytes of every list so far (the stored attr_bytes) */
	uint64_t *chunks;      /* spilled chunks, oldest first: offset << 16 | length */
	uint32_t nchunks, chunks_cap;
} pw_attrs;

#define PW_ATTR_CHUNK 8192u    /* attribute bytes an event keeps in memory at most */
#define PW_CHUNK_LEN_BITS 16   /* a chunk's length in the low bits of its entry */

/*
 * Sends the lists in `a->buf` (a->len > 0) to the scratch file as one
 * chunk (pallas_write_values.c).
 */
int weft__pw_attrs_spill(pw_thread *t, pw_attrs *a);

typedef struct pw_event {
	int32_t record;
	uint8_t size;          /* event_size: 5 + payload bytes */
	uint8_t *payload;
	uint64_t hash;
	uint32_t next;         /* hash chain */
	uint32_t last_block;   /* the sequence its last block was (Enter events), or PW_NONE */
	uint64_t occurrences;
	pw_vector ts;
	pw_attrs attrs;        /* attribute lists, as stored */
	pw_lengths ends;
} pw_event;

typedef struct pw_sequence {
	uint32_t *tokens;
	uint32_t ntokens;
	int32_t type;          /* WEFT_PALLAS_SEQUENCE_BLOCK or _LOOP */
	uint32_t height;       /* reader frames it takes: 1 + its tallest token's */
	uint64_t hash;
	uint32_t next;         /* hash chain */
	pw_vector dur, excl, ts;
	pw_lengths ends;
} pw_sequence;

typedef struct pw_loop {
	uint32_t repeated;     /* a sequence token; WEFT_PALLAS_TOKEN_NONE when dead */
	uint32_t iterations;
	uint64_t occurrences;
	uint32_t height;       /* reader frames it takes: 1 + its body's */
	uint8_t dead, in_table;
	uint32_t next;         /* chain of the (repeated, iterations) table */
	pw_lengths ends;
} pw_loop;

/*
 * The token list of one call depth, with what each token's occurrence
 * needs later: its start and end time, and prefix sums of what it adds
 * to its parent's block time (csum) and of its hash (h), so that any
 * range's duration, block time and hash cost O(1).
 */
typedef struct pw_level {
	uint32_t *tok;
	uint32_t *prev;        /* previous position of the same token (chained lists) */
	uint64_t *start, *end;
	uint64_t *csum;        /* n + 1 entries */
	uint64_t *h;           /* n + 1 entries */
	size_t n, cap;
	uint64_t start_ts;     /* the timestamp of the block start */
	int chained;           /* prev[] and the last-position map are kept */
} pw_level;

/* A chained hash table of indices (heads hold index + 1, 0 = empty). */
typedef struct pw_table {
	uint32_t *heads;
	uint32_t mask;
	uint32_t count;
} pw_table;

/* A remembered event id: (record << 32 | u32 payload) -> id; key 0: empty. */
typedef struct pw_evslot {
	uint64_t key;
	uint32_t id;
} pw_evslot;

#define PW_EVCACHE_BITS 10     /* 1024 slots: the events of one-u32 payloads */

typedef struct pw_grammar {
	pw_evslot *evcache;    /* events with a u32 payload (Enter, Leave...), found without hashing bytes */
	uint64_t near;         /* lengths tried, as Pallas does (max_loop_length) */
	unsigned far;          /* candidates tried beyond them (long patterns) */
	int loops_on;          /* loop_finding is not NONE */
	pw_event *events;
	uint32_t nevents, events_cap;
	pw_sequence *seqs;
	uint32_t nseqs, seqs_cap;
	pw_loop *loops;
	uint32_t nloops, loops_cap;
	pw_table event_table, seq_table, loop_table;
	pw_level *levels;
	uint32_t nlevels, depth;
	uint64_t *pow;         /* powers of the hash multiplier */
	size_t pow_cap;
	uint64_t *lastpos_keys; /* (depth << 32 | token) -> last position */
	uint32_t *lastpos_vals;
	size_t lastpos_cap, lastpos_count;
	uint32_t recursion;
} pw_grammar;

/* ---- Value storage --------------------------------------------------------------------- */

/*
 * Where full sub-arrays go while recording: a buffer, written to a file
 * when full. With the Pallas layout, one scratch file (unlinked as soon
 * as created); with the compact layout, the two .dat files themselves.
 */
typedef struct pw_spill {
	int fd;                /* -1 until the first write */
	uint8_t *buf;
	size_t len, cap;
	uint64_t flushed;      /* bytes already in the file */
	char *path;            /* the file (for messages) */
	int unlinked;          /* a scratch file */
} pw_spill;

/*
 * A recently encoded sub-array, so that an identical one takes the same
 * bytes. `ticket` names the record (sub-arrays are numbered in the order
 * they fill); its place is known once that record is committed.
 */
typedef struct pw_recent {
	uint64_t hash;
	uint32_t count;
	uint8_t delta, used, committed, file;
	uint64_t ticket;
	uint64_t where, length;
	uint64_t *values;
} pw_recent;

#define PW_RECENT 16
#define PW_JOBS 64             /* sub-arrays in flight per thread writer (helpers on) */
#define PW_SPARES 24           /* buffer pairs for those being encoded (helpers on) */
#define PW_QUEUED_MAX 16       /* this many queued: the recording thread compresses the next */
#define PW_FRAME_MAX (8u + 8u * PW_SUB_VALUES + 1024u) /* >= 8 + ZSTD_compressBound */

/* What a job stores: an encoded record, or the record of an earlier one. */
enum pw_job_kind { PW_JOB_ENCODE = 0, PW_JOB_SHARE = 1 };

/*
 * A full sub-array between the moment it fills and the moment its
 * record is committed (appended to its spill, its header completed).
 * Helpers (or the recording thread) encode jobs in any order; the
 * recording thread commits them: in ticket order with the compact layout
 * (whose .dat files take records in that order), as they finish with the
 * Pallas layout (the scratch file's order never reaches the files). The
 * files do not depend on who encoded what when.
 */
/*
 * A job's life: FREE (its slot unused), QUEUED (handed to the helpers;
 * whoever claims it first encodes it, a helper or its recording thread),
 * RUNNING, DONE (waiting for its commit by the recording thread).
 */
enum job_state { JOB_FREE = 0, JOB_QUEUED, JOB_RUNNING, JOB_DONE };

typedef struct pw_job {
	_Atomic int state;     /* enum job_state; the hand-over between threads */
	uint8_t kind;          /* enum pw_job_kind */
	uint8_t which;         /* the vector (enum pw_which) */
	uint8_t delta;         /* encode differences (delta timestamps) */
	uint8_t src_ready;     /* share: the source's place is known */
	uint32_t id, sub;      /* its owner's index and the sub-array's */
	uint32_t count;
	uint32_t recent;       /* encode: the recent slot it filled */
	uint32_t dependents;   /* encode: shares waiting for its place */
	uint64_t ticket;
	uint64_t src_ticket;   /* share: the record it takes */
	uint8_t src_file;
	uint64_t src_where, src_length;
	int status;            /* encode: 0 or the failure */
	size_t len;            /* encode: bytes of the record in `frame` */
	uint64_t *values;      /* encode: the full sub-array (a vector's buffer) */
	uint8_t *frame;        /* encode: the encoded record (PW_FRAME_MAX bytes) */
	pw_thread *owner;
} pw_job;

typedef struct pw_pool pw_pool;

/* Compression state owned by whoever encodes (a thread writer or a helper). */
typedef struct pw_codec {
	void *zstd;            /* ZSTD_CCtx, its parameters set once */
	uint64_t scratch[PW_SUB_VALUES];
	uint8_t *frame;        /* PW_FRAME_MAX bytes */
} pw_codec;

/* ---- The API objects -------------------------------------------------------------------- */

typedef struct pw_string { uint32_t ref; int32_t len; char *str; } pw_string;
typedef struct pw_region { uint32_t ref, name; } pw_region;
typedef struct pw_attribute { uint32_t ref, name, description; uint8_t type; } pw_attribute;
typedef struct pw_group {
	uint32_t ref, name;
	int32_t type, paradigm;
	uint32_t count;
	uint32_t *members;
} pw_group;
typedef struct pw_comm { uint32_t ref, name, group, parent; } pw_comm;
typedef struct pw_location { uint32_t id, name, parent; } pw_location;
typedef struct pw_meta { char *key, *value; } pw_meta;

struct weft_pallas_defs {
	pthread_mutex_t lock;
	const char *owner;     /* the file it is stored in, for messages */
	pw_string *strings; size_t nstrings, strings_cap;
	pw_region *regions; size_t nregions, regions_cap;
	pw_attribute *attrs; size_t nattrs, attrs_cap;
	pw_group *groups; size_t ngroups, groups_cap;
	pw_comm *comms; size_t ncomms, comms_cap;
	pw_location *lgs; size_t nlgs, lgs_cap;
	pw_location *locs; size_t nlocs, locs_cap;
	pw_meta *meta; size_t nmeta, meta_cap;
};

struct weft_pallas_global {
	char *dir;
	char *path;            /* <dir>/<name>.pallas */
	weft_pallas_write_options opts;
	struct weft_pallas_defs defs;
	pthread_mutex_t lock;  /* the list of archives */
	weft_pallas_archive *archives;
	pw_pool *pool;
};

struct weft_pallas_archive {
	weft_pallas_global *global;   /* NULL: standalone */
	weft_pallas_archive *next;
	char *dir;             /* the trace directory */
	char *path;            /* <dir>/archive_<id> */
	char *file;            /* <path>/archive.pallas */
	uint32_t id;
	weft_pallas_write_options opts;
	struct weft_pallas_defs defs;
	pthread_mutex_t lock;  /* the list of thread writers */
	pw_thread *threads;
	uint32_t nb_threads;   /* thread writers closed: their files exist */
	pw_pool *pool;         /* the global's, or its own when standalone */
	pw_pool *own_pool;
};

enum pw_state { PW_OPEN = 0, PW_CLOSED = 1, PW_FAILED = 2 };

struct weft_pallas_thread {
	weft_pallas_archive *archive;
	pw_thread *next;
	uint32_t location;
	char *dir;             /* <archive>/thread_<location> */
	int created_dir;
	int state;             /* enum pw_state */
	int error;             /* the first failure (sticky) */
	const weft_pallas_write_options *opts;
	pw_grammar g;
	/* Time. */
	uint64_t clock_origin;
	int clock_started;
	uint64_t first_ts, last_ts;
	int has_ts;
	uint64_t events;
	/* Values (touched by the recording thread only; helpers see jobs). */
	pw_spill spill[2];            /* by enum pw_file (Pallas layout: both use [0]) */
	pw_spill attr_scratch;        /* attribute chunks: a scratch file of their own */
	pw_recent recent[PW_RECENT];
	uint32_t recent_next;
	pw_codec codec;
	uint64_t tickets;             /* sub-arrays numbered so far */
	pw_job *jobs;                 /* PW_JOBS slots (helpers on) */
	uint64_t *spare_values[PW_SPARES]; /* free buffers: a full sub-array's buffer */
	uint8_t *spare_frames[PW_SPARES];  /* is swapped for one, its record goes in one */
	uint32_t nspares;             /* allocated when the writer is created: memory stays flat */
	uint32_t in_flight;           /* slots in use */
	int ordered;                  /* commits in ticket order (compact layout) */
	uint64_t order_head;          /* ordered: the oldest ticket not committed */
	uint32_t order[PW_JOBS];      /* ordered: the slot of ticket k, at k % PW_JOBS */
	pthread_cond_t jobs_done;     /* a job of this writer finished (pool lock) */
	int waiting;                  /* the recording thread waits on jobs_done */
	uint64_t subarrays, subarrays_shared;
	uint64_t memory, memory_peak;
	uint32_t final_events, final_seqs, final_loops; /* grammar sizes once released */
};

/* Memory accounting of a thread writer (weft_pallas_thread_get_stats). */
void *weft__pw_alloc(pw_thread *t, size_t size);
void *weft__pw_realloc(pw_thread *t, void *p, size_t old_size, size_t new_size);
/* Counts `n` threads written by another writer (outputs/convert_pallas_shared.c). */
void weft__pallas_archive_add_threads(weft_pallas_archive *a, uint32_t n);
void weft__pw_free(pw_thread *t, void *p, size_t size);

/* Records the first failure of `t` and returns it (later records fail too). */
int weft__pw_fail(pw_thread *t, int status);

/* ---- Grammar entry points (pallas_write_grammar.c) --------------------------------------------- */

int weft__pw_grammar_init(pw_thread *t);
void weft__pw_grammar_free(pw_thread *t);
/* Closes the levels still open and fills the root sequence (thread close). */
int weft__pw_grammar_finish(pw_thread *t);
/*
 * A record whose payload is one u32 (regions, strings, counts, locks):
 * without attributes on a thread writer that is open, checked and
 * recorded with the least work, else through weft_pallas_record_raw().
 */
int weft__pw_record_u32(weft_pallas_thread *t, const weft_pallas_attrs *a, uint64_t ts,
			int32_t record, int role, uint32_t v);

/* ---- Output files (pallas_write_files.c) ---------------------------------------------- */

/* An output file: written as <path>.tmp through a buffer, renamed when complete. */
typedef struct pw_out {
	int fd;
	char *path, *tmp;
	uint8_t *buf;
	size_t len;
	uint64_t offset;       /* bytes written so far (the next byte's offset) */
	int error;
} pw_out;

/* ---- Functions shared by the files ---------------------------------------------------- */

/* pallas_write_files.c */
char *weft__pw_path_join(const char *a, const char *fmt, ...);
int weft__pw_make_dirs(const char *dir, int *created);
int weft__pw_check_new(const char *path, int replace);
int weft__pw_out_open(pw_out *o, const char *path);
int weft__pw_write_all(int fd, const uint8_t *p, size_t len, const char *name, uint64_t at);
void weft__pw_out_bytes(pw_out *o, const void *p, size_t n);
void weft__pw_out_abort(pw_out *o);
int weft__pw_out_finish(pw_out *o, int sync);

/* pallas_write_defs.c */
int weft__pw_defs_init(struct weft_pallas_defs *d, const char *owner);
void weft__pw_defs_free(struct weft_pallas_defs *d);

/* pallas_write_values.c */
int weft__pw_codec_init(pw_codec *c, const weft_pallas_write_options *o);
void weft__pw_codec_free(pw_codec *c);
int weft__pw_is_timestamps(uint8_t which);
int weft__pw_encode_record(pw_codec *c, const weft_pallas_write_options *o,
			   const uint64_t *values, uint32_t count, int delta, uint8_t *dst,
			   size_t *len);
int weft__pw_pool_create(int n, const char *where, pw_pool **out);
int weft__pw_helpers_wanted(const weft_pallas_write_options *o);
void weft__pw_pool_free(pw_pool *p);
void weft__pw_pool_forget(pw_pool *p, const pw_thread *t);
int weft__pw_spill_flush(pw_spill *s, const char *dir);
int weft__pw_spill_read(const pw_spill *s, uint64_t where, size_t len, uint8_t *dst);
int weft__pw_store_inline(pw_thread *t, const pw_vector *v, pw_sub *s, const uint64_t *values,
			  uint32_t count);
void weft__pw_abandon_jobs(pw_thread *t);
int weft__pw_drain_jobs(pw_thread *t);
pw_sub weft__pw_open_sub(const pw_vector *v, uint64_t *sum);
void weft__pw_vector_take(pw_vector *v, const pw_sub *s, uint64_t sum, int first);

/* Fixed-size fields, host order (little-endian, checked above). */
static inline void out_u8(pw_out *o, uint8_t v) { weft__pw_out_bytes(o, &v, 1); }
static inline void out_u32(pw_out *o, uint32_t v) { weft__pw_out_bytes(o, &v, 4); }
static inline void out_i32(pw_out *o, int32_t v) { weft__pw_out_bytes(o, &v, 4); }
static inline void out_u64(pw_out *o, uint64_t v) { weft__pw_out_bytes(o, &v, 8); }

#endif /* WEFT_PALLAS_WRITER_INTERNAL_H */
