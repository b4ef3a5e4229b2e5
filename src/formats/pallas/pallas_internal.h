/* SPDX-License-Identifier: MIT */
/*
 * formats/pallas/pallas_internal.h - the Pallas reader's pieces: a bounded
 * byte reader, the definitions of the main and archive files, the grammar
 * of a thread, the value cache, and the backend functions.
 *
 * Dependency direction: pallas_parse.c (bytes -> definitions) and
 * pallas_thread.c (bytes -> grammar) know nothing of the trace object;
 * pallas_values.c loads value sub-arrays; pallas_open.c and
 * pallas_stream.c tie them to the core's backend interface.
 */
#ifndef WEFT_PALLAS_INTERNAL_H
#define WEFT_PALLAS_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "core/internal.h"
#include "formats/pallas/pallas_format.h"

/* ---- Bounded little-endian reading (pallas_parse.c) ------------------------ */

/* A read position in a byte buffer that never goes past `end`. */
typedef struct pallas_in {
	const uint8_t *base, *p, *end;
	const char *file; /* for messages */
} pallas_in;

void weft__pallas_in_init(pallas_in *in, const uint8_t *data, size_t size,
			  const char *file);
static inline uint64_t weft__pallas_in_offset(const pallas_in *in)
{
	return (uint64_t)(in->p - in->base);
}
static inline uint64_t weft__pallas_in_left(const pallas_in *in)
{
	return (uint64_t)(in->end - in->p);
}
/* Each returns 0, or WEFT_ETRUNCATED naming `what` and the offset. */
int weft__pallas_in_u8(pallas_in *in, uint8_t *v, const char *what);
int weft__pallas_in_u16(pallas_in *in, uint16_t *v, const char *what);
int weft__pallas_in_u32(pallas_in *in, uint32_t *v, const char *what);
int weft__pallas_in_u64(pallas_in *in, uint64_t *v, const char *what);
int weft__pallas_in_bytes(pallas_in *in, uint64_t n, const uint8_t **v,
			  const char *what);
/*
 * Reads a u64 count of items that take at least `min_item_size` bytes
 * each, and refuses a count that the bytes left cannot hold.
 */
int weft__pallas_in_count(pallas_in *in, uint64_t min_item_size,
			  uint64_t *n, const char *what);

static inline uint32_t weft__pallas_le32(const uint8_t *p)
{
	uint32_t v;
	__builtin_memcpy(&v, p, 4);
	return v;
}
static inline uint64_t weft__pallas_le64(const uint8_t *p)
{
	uint64_t v;
	__builtin_memcpy(&v, p, 8);
	return v;
}

/* Reads a whole small file into memory (main, archive, thread files). */
int weft__pallas_read_file(const char *path, const char *name,
			   uint64_t max_size, uint8_t **data, size_t *size);

/* ---- Definitions (pallas_parse.c) ------------------------------------------ */

typedef struct pallas_string {
	uint32_t ref;
	uint32_t len;     /* without the NUL */
	const char *text; /* NUL-terminated, inside the file buffer */
} pallas_string;

typedef struct pallas_region { uint32_t ref, name; } pallas_region;

typedef struct pallas_attribute {
	uint32_t ref, name, description;
	uint8_t type; /* enum weft_pallas_attr_type */
} pallas_attribute;

typedef struct pallas_group {
	uint32_t ref, name;
	int32_t type, paradigm;
	uint32_t member_count;
	const uint8_t *members; /* member_count u32, in the file buffer */
} pallas_group;

typedef struct pallas_comm { uint32_t ref, name, group, parent; } pallas_comm;

/* A location group (archive) or a location (thread), and where it is. */
typedef struct pallas_location {
	uint32_t id, name, parent;
	uint64_t offset;        /* of the entry in its file */
} pallas_location;

typedef struct pallas_metadata_item {
	const char *key, *value; /* inside the file buffer, NUL-terminated */
	uint64_t key_len, value_len;
} pallas_metadata_item;

/*
 * What a main file or an archive file holds after its own header. The
 * string, region, attribute and comm arrays are sorted by reference.
 */
typedef struct pallas_defs {
	pallas_string *strings;       size_t string_count;
	pallas_region *regions;       size_t region_count;
	pallas_attribute *attributes; size_t attribute_count;
	pallas_group *groups;         size_t group_count;
	pallas_comm *comms;           size_t comm_count;
	pallas_location *location_groups; size_t location_group_count;
	pallas_location *locations;   size_t location_count;
	pallas_metadata_item *metadata; size_t metadata_count;
} pallas_defs;

/* Parses definitions, location groups, locations and metadata. */
int weft__pallas_parse_defs(pallas_in *in, pallas_defs *defs);
void weft__pallas_defs_free(pallas_defs *defs);

/* Lookups: NULL when the reference is not defined. */
const pallas_string *weft__pallas_find_string(const pallas_defs *defs,
					      uint32_t ref);
const pallas_region *weft__pallas_find_region(const pallas_defs *defs,
					      uint32_t ref);
const pallas_attribute *weft__pallas_find_attribute(const pallas_defs *defs,
						    uint32_t ref);
const pallas_comm *weft__pallas_find_comm(const pallas_defs *defs,
					  uint32_t ref);

/* Parses the 32-byte settings block. */
int weft__pallas_parse_settings(pallas_in *in, weft_pallas_settings *s);
/* Names of settings values as pallas_info prints them ("ZSTD", ...). */
const char *weft__pallas_compression_name(int32_t c);
const char *weft__pallas_encoding_name(int32_t e);
const char *weft__pallas_loop_finding_name(int32_t l);
const char *weft__pallas_timestamp_storage_name(int32_t t);

/* ---- Thread grammar (pallas_thread.c) --------------------------------------- */

/* A timestamp vector (first/last per sub-array) or a duration vector
 * (min/max/mean per vector and sub-array). */
typedef struct pallas_vector {
	uint64_t size;      /* values */
	uint64_t sub_count;
	uint64_t min, max, mean;   /* duration vectors only */
	const uint8_t *subs;       /* sub_count entries in the thread buffer */
	uint8_t durations;         /* 1: 40-byte entries, 0: 32-byte entries */
	uint8_t which_file;        /* 0: event_durations.dat, 1: sequence_... */
} pallas_vector;

/* One sub-array entry of a vector, decoded. */
typedef struct pallas_subarray {
	uint64_t size, offset;
	uint64_t first, last;     /* timestamps */
	uint64_t min, max, mean;  /* durations */
} pallas_subarray;

void weft__pallas_vector_sub(const pallas_vector *v, uint64_t i,
			     pallas_subarray *out);

typedef struct pallas_event_def {
	int32_t record;
	uint32_t code_len;
	const char *code;        /* the record's name ("Unknown" if none) */
	uint32_t payload_size;
	const uint8_t *payload;
	uint64_t attr_size;
	const uint8_t *attrs;    /* attribute lists, see pallas_stream.c */
	uint64_t offset;         /* of the event in thread.pallas */
	pallas_vector timestamps;
} pallas_event_def;

typedef struct pallas_sequence {
	int32_t type;            /* enum weft_pallas_sequence_type */
	uint64_t token_count;    /* 0: dead slot */
	const uint8_t *tokens;   /* token_count u32 */
	uint64_t offset;
	pallas_vector durations, exclusive, timestamps;
} pallas_sequence;

typedef struct pallas_loop {
	uint32_t repeated;       /* a sequence token; WEFT_PALLAS_TOKEN_NONE if dead */
	uint32_t iterations;
	uint64_t occurrences;
} pallas_loop;

typedef struct pallas_thread {
	uint8_t *buf;            /* the whole thread.pallas */
	size_t size;
	const char *file;        /* path for messages (owned) */
	char *dir;               /* the thread directory (owned) */
	uint32_t thread_id, archive_id, root;
	uint64_t first_timestamp;
	pallas_event_def *events;   uint64_t event_count;
	pallas_sequence *sequences; uint64_t sequence_count;
	pallas_loop *loops;         uint64_t loop_count;
	uint64_t occurrences;    /* sum of the event timestamp vector sizes */
	uint64_t last_timestamp; /* largest sub-array last value */
	uint64_t other_map_entry; /* offset of an id map entry that is not its index, or 0 */
} pallas_thread;

/*
 * Loads and checks the grammar of the thread in directory `dir`: every
 * count against the bytes left, every token against the tables, the root.
 */
int weft__pallas_thread_load(const char *dir, const char *name,
			     pallas_thread **out);
void weft__pallas_thread_free(pallas_thread *t);

/* ---- Values (pallas_values.c) ------------------------------------------------ */

typedef struct pallas_value_cache pallas_value_cache;

pallas_value_cache *weft__pallas_cache_create(uint64_t budget_bytes,
					      const weft_pallas_settings *s);
void weft__pallas_cache_free(pallas_value_cache *c);

/*
 * A held sub-array of values. Valid until released; released entries
 * stay cached until the memory bound evicts them.
 */
typedef struct pallas_values {
	const uint64_t *v;
	uint64_t count;
	void *entry;       /* cache entry (NULL when nothing is held) */
} pallas_values;

/*
 * Gets the values of sub-array `sub` of vector `vec` of thread `t`:
 * reads `u64 nbytes` + data at the sub-array's offset in the right .dat
 * file, decompresses and decodes it, checks the count. Replaces what
 * `out` held.
 */
int weft__pallas_values_get(pallas_value_cache *c, const pallas_thread *t,
			    const pallas_vector *vec, uint64_t sub,
			    pallas_values *out);
void weft__pallas_values_release(pallas_value_cache *c, pallas_values *vals);
/* Drops the cached values and open files of a thread about to be freed. */
void weft__pallas_cache_forget(pallas_value_cache *c, const pallas_thread *t);

/* ---- Backend (pallas_open.c, pallas_stream.c, pallas_records.c) ------------ */

typedef struct pallas_archive {
	uint32_t id;            /* location group id */
	const pallas_location *group; /* its entry in the main file */
	int loaded;             /* archive.pallas read */
	uint32_t nb_threads;    /* the thread count its file says */
	uint8_t *buf;
	size_t size;
	pallas_defs defs;
	uint32_t node;          /* trace node */
} pallas_archive;

typedef struct pallas_stream_ref {
	uint32_t archive;       /* index in archives */
	uint32_t location;      /* thread (location) id */
	char *dir;              /* thread directory */
	char *grammar;          /* its grammar file (the stream's data file) */
} pallas_stream_ref;

typedef struct pallas_trace {
	char *dir;              /* trace directory */
	char *main_path;
	uint8_t *buf;           /* main file */
	size_t size;
	weft_pallas_settings settings;
	pallas_defs defs;
	pallas_archive *archives; size_t archive_count;
	pallas_stream_ref *streams; size_t stream_count, stream_cap;
	pallas_value_cache *cache;
} pallas_trace;

/* A string by reference: the archive's definition, else the global one. */
const pallas_string *weft__pallas_string(const pallas_trace *pt,
					 const pallas_archive *a, uint32_t ref);

/* Loads the grammar of stream `stream` (checks the index). */
int weft__pallas_stream_thread(weft_trace *trace, uint32_t stream,
			       pallas_thread **out);
int weft__pallas_stream_open(weft_trace *trace, uint32_t stream, int stored,
			   void **state);
int weft__pallas_stream_next(void *state, weft_event *event);
int weft__pallas_stream_next_batch(void *state, weft_event *events, size_t cap);
void weft__pallas_stream_close(void *state);
int weft__pallas_event_fields(const weft_trace *trace, const weft_event *event,
			      weft_field *out, size_t cap);
/* weft_event_classify() for Pallas traces (pallas_records.c). */
/* weft_trace_stream_stats() of a Pallas thread: from its grammar (pallas_inspect.c). */
int weft__pallas_stream_stats(weft_trace *trace, uint32_t stream, weft_stream_stats *st);

/* The event kinds: one per record kind (weft/schema.h; pallas_records.c). */
size_t weft__pallas_event_schemas(const weft_trace *trace, const weft_event_schema **out);

/* What weft_trace_check() adds for Pallas (pallas_check.c). */
extern const weft__check_hooks weft__pallas_check_hooks;

void weft__pallas_event_classify(const weft_trace *trace, const weft_event *event,
				 weft_event_class *out);

#endif /* WEFT_PALLAS_INTERNAL_H */
