/* SPDX-License-Identifier: MIT */
/*
 * formats/ovni/ovni_internal.h - shared by the pieces of the ovni backend:
 * trace discovery and metadata (ovni_open.c), the stream reader
 * (ovni_stream.c), the signature table (ovni_signatures.c) and sorting
 * (ovni_sort.c).
 */
#ifndef WEFT_OVNI_INTERNAL_H
#define WEFT_OVNI_INTERNAL_H

#include "core/internal.h"

/* Binary stream constants (every ovni release). */
#define OVNI_STREAM_MAGIC "ovni"
#define OVNI_STREAM_VERSION 1u
#define OVNI_STREAM_HEADER_SIZE 8u
#define OVNI_EVENT_HEADER_SIZE 12u
#define OVNI_FLAG_JUMBO 0x10u
#define OVNI_FLAG_RESERVED 0xe0u
#define OVNI_SIZE_MASK 0x0fu
/* Bound of the signature table (ovni_signatures.c checks it). */
#define OVNI_MAX_SIGNATURES 1023

/* Defaults of the bounds documented in docs/ovni.md. */
#define OVNI_DEFAULT_READ_BUDGET (32ull << 20)
#define OVNI_MIN_WINDOW (1ull << 20)
#define OVNI_MAX_WINDOW (16ull << 20)
#define OVNI_DEFAULT_MAX_REGION_EVENTS (4ull << 20)
/* Events ovnisort looks back over to place a region (its ring of
 * 1,000,000 slots, -n default, holds one less). */
#define OVNI_SORT_LOOK_BACK 999999u
/* Metadata files larger than this are refused (they are a few KiB). */
#define OVNI_MAX_JSON_BYTES (64ull << 20)

/* What the backend keeps per stream beyond weft_stream_info. */
typedef struct ovni_stream_meta {
	char *abs_file;       /* path of the binary stream */
} ovni_stream_meta;

/* A mark type of the metadata ("ovni.mark"), for weft_event_classify(). */
typedef struct ovni_mark_label {
	int64_t value;
	const char *label;     /* owned by the trace */
} ovni_mark_label;

typedef struct ovni_mark {
	int64_t type;
	const char *title;     /* owned by the trace */
	int stack;             /* 1: "stack" (OM[ / OM]), 0: "single" (OM=) */
	ovni_mark_label *labels;
	size_t label_count;
} ovni_mark;

typedef struct ovni_data {
	char *root;                 /* directory the stream paths start from */
	ovni_stream_meta *streams;  /* one per weft stream */
	uint64_t window;            /* bytes held per stream reader (window) */
	uint64_t lookback;          /* unordered-region look-back, bytes */
	uint64_t max_region_events; /* unordered-region size bound */
	ovni_mark *marks;           /* mark types of the metadata */
	size_t mark_count;
} ovni_data;

/* Reads the stream header of `mf`: sets *big_endian, or fails. */
int weft__ovni_read_header(weft_mapfile *mf, int *big_endian);
/* The byte order the `len` first bytes of a stream tell: 0, or -1 when they
 * are no stream header (no message: weft__ovni_read_header says why). */
int weft__ovni_header_order(const unsigned char *h, size_t len, int *big_endian);

/*
 * Size of the event whose 12-byte header is at `p` (with `avail` bytes of
 * the file from p on), validating flags and sizes. Returns 0 and sets
 * *size, or a WEFT_E* code with the error set (naming `name`/`offset`).
 */
int weft__ovni_event_size(const unsigned char *p, uint64_t avail,
			  int big_endian, const char *name, uint64_t offset,
			  uint64_t *size);

/* Decodes typed fields (weft_event_fields for ovni traces). */
int weft__ovni_event_fields(const weft_trace *trace, const weft_event *event,
			    weft_field *out, size_t cap);

/* Index of the signature of a 3-character MCV, or -1. */
int weft__ovni_signature_index(const unsigned char *mcv);

/*
 * The table behind weft__ovni_signature_index() (3 ASCII MCV characters,
 * 7 bits each), built by its first call. An entry holds the signature
 * index + 1 (0: unknown) in its low OVNI_SIG_INDEX_BITS bits and, above
 * them, the flags byte (size code, jumbo bit) of an event whose payload
 * is exactly what the signature names: the reader's layout check is then
 * one load and one compare per event (an event with other flags is looked
 * at closer by weft__ovni_layout_differs). OVNI_FLAGS_ALWAYS_CHECK, which
 * no valid event has (valid flags are 0x00..0x0f and 0x13), marks
 * signatures whose size the flags cannot tell.
 */
#define OVNI_SIGNATURE_TABLE_SIZE (1u << 21)
#define OVNI_SIG_INDEX_BITS 10
#define OVNI_SIG_INDEX_MASK ((1u << OVNI_SIG_INDEX_BITS) - 1)
#define OVNI_FLAGS_ALWAYS_CHECK 0x1fu
extern uint16_t weft__ovni_signature_table[OVNI_SIGNATURE_TABLE_SIZE];

/* The table entry of the printable 3-character MCV at m. */
static inline unsigned ovni_signature_entry(const unsigned char *m)
{
	return weft__ovni_signature_table[((uint32_t)m[0] << 14) |
					  ((uint32_t)m[1] << 7) | m[2]];
}

/* weft__ovni_signature_index() inlined: only once the table is built. */
static inline int ovni_signature_index_built(const unsigned char *m)
{
	if ((m[0] | m[1] | m[2]) & 0x80)
		return -1;
	return (int)(ovni_signature_entry(m) & OVNI_SIG_INDEX_MASK) - 1;
}

/* Name of the field that holds the bytes after the named fields. */
#define OVNI_EXTRA_FIELD "extra"

/*
 * 1 (with why in msg) when an event of signature i with these flags and
 * `bytes` payload (jumbo: data) bytes holds more than its signature
 * names, or is jumbo where the signature is not (or the reverse); 0 when
 * it matches; -1 when it is too short.
 */
int weft__ovni_layout_differs(int i, unsigned flags, uint64_t bytes, char *msg, size_t cap);

/* weft_event_classify() for ovni traces (ovni_classify.c). */
/* The event kinds of the signature table (weft/schema.h; ovni_signatures.c). */
size_t weft__ovni_event_schemas(const weft_trace *trace, const weft_event_schema **out);

/* What weft_trace_check() adds for ovni (ovni_check.c). */
extern const weft__check_hooks weft__ovni_check_hooks;

void weft__ovni_event_classify(const weft_trace *trace, const weft_event *event,
			       weft_event_class *out);
/* Reads the mark types of the metadata into d (at open); frees them. */
int weft__ovni_marks_load(weft_trace *trace, ovni_data *d);
void weft__ovni_marks_free(ovni_data *d);

/* Stream reader entry points for the backend table. */
int weft__ovni_stream_open(weft_trace *trace, uint32_t stream, int stored,
			   void **state);
int weft__ovni_stream_next(void *state, weft_event *event);
int weft__ovni_stream_next_batch(void *state, weft_event *events, size_t cap);
void weft__ovni_stream_close(void *state);

/* Is the 3-byte MCV at p equal to the 3 characters of `mcv`? */
static inline int ovni_mcv_is(const unsigned char *p, const char *mcv)
{
	return p[0] == (unsigned char)mcv[0] && p[1] == (unsigned char)mcv[1] &&
	       p[2] == (unsigned char)mcv[2];
}

static inline uint32_t ovni_load32(const unsigned char *p, int big_endian)
{
	uint32_t v;
	__builtin_memcpy(&v, p, 4);
	return big_endian ? weft__bswap32(v) : v;
}

static inline uint64_t ovni_load64(const unsigned char *p, int big_endian)
{
	uint64_t v;
	__builtin_memcpy(&v, p, 8);
	return big_endian ? weft__bswap64(v) : v;
}

#endif /* WEFT_OVNI_INTERNAL_H */
