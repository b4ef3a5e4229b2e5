/* SPDX-License-Identifier: MIT */
/*
 * formats/heph/heph_internal.h - shared by the pieces of the Heph backend:
 * packet framing and validation (heph_packet.c), trace discovery with the
 * stream-counter checks (heph_open.c), the time-order index with its
 * external sort (heph_index.c) and the event readers (heph_stream.c).
 *
 * A Heph trace is one file of big-endian packets: metadata packets (the
 * `epoch` option) and event packets (an interval with a description and
 * typed attributes, on a stream and substream). Each (stream, substream)
 * pair becomes a weft stream, under a node per stream id.
 */
#ifndef WEFT_HEPH_INTERNAL_H
#define WEFT_HEPH_INTERNAL_H

#include <pthread.h>

#include <jansson.h>

#include "core/internal.h"
#include "util/strtab.h"

#define HEPH_META_MAGIC 0x75D11D4Du
#define HEPH_EVENT_MAGIC 0xC1FC1FB7u
/* magic + size */
#define HEPH_FRAME_SIZE 8u
/* magic, size, stream, counter, substream, start, end, description length */
#define HEPH_EVENT_FIXED_SIZE 42u
/* magic, size, option name length */
#define HEPH_META_FIXED_SIZE 10u

#define HEPH_TYPE_U64 0x01u
#define HEPH_TYPE_I64 0x02u
#define HEPH_TYPE_F64 0x03u
#define HEPH_TYPE_STR 0x04u
#define HEPH_TYPE_ARRAY 0x80u

/* Distinct (stream, substream) pairs a trace may have (bounds memory). */
#define HEPH_MAX_STREAMS 65536u
/* Default memory of the time-order index before it spills to disk. */
#define HEPH_DEFAULT_SORT_BUDGET (64ull << 20)
/* Bytes of the file held at once by one reader. */
#define HEPH_WINDOW (4ull << 20)
/* The window of a pass front to back: small enough to stay in the cache
 * while it is parsed. */
#define HEPH_COPY_WINDOW (512ull << 10)
/*
 * Offsets of skipped event packets the scan remembers (8 bytes each);
 * beyond that the readers validate every packet again.
 */
#define HEPH_MAX_BAD_LISTED 65536u

static inline uint16_t heph_be16(const uint8_t *p)
{
	return (uint16_t)((unsigned)p[0] << 8 | p[1]);
}

static inline uint32_t heph_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static inline uint64_t heph_be64(const uint8_t *p)
{
	return (uint64_t)heph_be32(p) << 32 | heph_be32(p + 4);
}

/* How far ahead of the packet being read a file-order pass prefetches. */
#define HEPH_PREFETCH_AHEAD 2048u

/*
 * Asks for the bytes HEPH_PREFETCH_AHEAD after `offset` when they are in
 * the current mapping: the hardware prefetcher stops at page boundaries,
 * and the first load of each packet was the largest cost of a pass.
 */
static inline void heph_prefetch(const weft_mapfile *mf, uint64_t offset)
{
	if (mf->map != NULL && offset >= mf->map_start &&
	    offset - mf->map_start + HEPH_PREFETCH_AHEAD < mf->map_len)
		__builtin_prefetch(mf->map + (offset - mf->map_start) + HEPH_PREFETCH_AHEAD);
}

/* An event packet, decoded (pointers into the packet in the window). */
typedef struct heph_event_packet {
	uint32_t size;
	uint32_t stream_id;
	uint32_t counter;
	uint64_t substream;
	uint64_t start, end;    /* relative to the epoch in force */
	const uint8_t *desc;
	uint16_t desc_len;
	const uint8_t *attrs;   /* attribute bytes, up to the packet end */
	uint32_t attrs_size;
} heph_event_packet;

/* Outcome of framing the packet at an offset. */
typedef enum heph_frame_status {
	HEPH_FRAME_EVENT = 1,
	HEPH_FRAME_META = 2,
	HEPH_FRAME_END = 0,        /* clean end of the file */
	HEPH_FRAME_TRUNCATED = -1, /* the last packet is cut short */
	HEPH_FRAME_BROKEN = -2     /* wrong magic or impossible size */
} heph_frame_status;

/*
 * Frames the packet at `offset` of `mf` (whose data ends at `end`): checks
 * the magic and the size against the fixed part and the bytes left. Sets
 * *packet to the whole packet and *size. On TRUNCATED or BROKEN the error
 * text is set (file, offset, what was expected).
 */
heph_frame_status weft__heph_frame(weft_mapfile *mf, uint64_t offset, uint64_t end,
				   const uint8_t **packet, uint32_t *size);

/*
 * After a packet whose size runs past the end of the file: 1 and *at when
 * a packet starts in [from, end), that is a packet header (magic, size
 * at least the fixed part) whose packet ends the file exactly or is
 * followed by another header. Then the size was wrong and what follows
 * is lost; 0 when the rest is only the cut last packet (a crash of the
 * writer). Reads the rest of the file once at most, through `mf`.
 */
int weft__heph_packet_after(weft_mapfile *mf, uint64_t from, uint64_t end, uint64_t *at);

/*
 * weft__heph_frame() inline for the common case: an event packet whole
 * inside the current mapping of `mf`. 1 with *packet and *size set (what
 * weft__heph_frame() would give), 0 for any other case, which the caller
 * then frames through weft__heph_frame().
 */
static inline int heph_frame_fast(const weft_mapfile *mf, uint64_t offset, uint64_t end,
				  const uint8_t **packet, uint32_t *size)
{
	uint64_t rel = offset - mf->map_start;
	if (mf->map == NULL || offset < mf->map_start || offset >= end ||
	    rel > mf->map_len || mf->map_len - rel < HEPH_FRAME_SIZE)
		return 0;
	const uint8_t *p = mf->map + rel;
	uint32_t n = heph_be32(p + 4);
	if (heph_be32(p) != HEPH_EVENT_MAGIC || n < HEPH_EVENT_FIXED_SIZE ||
	    n > end - offset || n > mf->map_len - rel)
		return 0;
	*packet = p;
	*size = n;
	return 1;
}

/*
 * Decodes and validates a whole event packet: description and attribute
 * names and strings within the packet and valid UTF-8, known attribute
 * types. Returns 0, or WEFT_EFORMAT with the error set at the byte offset
 * of the problem (`offset` is the packet's offset in `file`).
 */
int weft__heph_parse_event(const uint8_t *packet, uint32_t size, const char *file,
			   uint64_t offset, heph_event_packet *out);

/* The fixed part of an event packet (framing checked its size). */
static inline void heph_decode_fixed(const uint8_t *packet, uint32_t size,
				     heph_event_packet *out)
{
	out->size = size;
	out->stream_id = heph_be32(packet + 8);
	out->counter = heph_be32(packet + 12);
	out->substream = heph_be64(packet + 16);
	out->start = heph_be64(packet + 24);
	out->end = heph_be64(packet + 32);
}

/*
 * weft__heph_decode_event() inline, without the error text: 0, or -1
 * when the description runs past the packet end (the caller then calls
 * weft__heph_decode_event() for the message).
 */
static inline int heph_decode_event_fast(const uint8_t *packet, uint32_t size,
					 heph_event_packet *out)
{
	uint16_t n = heph_be16(packet + HEPH_EVENT_FIXED_SIZE - 2);

	if (n > size - HEPH_EVENT_FIXED_SIZE)
		return -1;
	heph_decode_fixed(packet, size, out);
	out->desc = packet + HEPH_EVENT_FIXED_SIZE;
	out->desc_len = n;
	out->attrs = packet + HEPH_EVENT_FIXED_SIZE + n;
	out->attrs_size = size - HEPH_EVENT_FIXED_SIZE - n;
	return 0;
}

/*
 * Decodes an event packet that the open scan has already validated:
 * the fixed part and the description, checked only against the packet
 * bounds (so that a file changed since the scan cannot make a reader
 * read outside the packet); no UTF-8 and attribute checks. Returns 0, or
 * WEFT_EFORMAT with the error set.
 */
int weft__heph_decode_event(const uint8_t *packet, uint32_t size, const char *file,
			    uint64_t offset, heph_event_packet *out);

/*
 * Applies a metadata packet: sets *epoch for the `epoch` option. Returns 1
 * when it was understood, 0 for an unknown option (skipped; *name set for
 * the warning), or WEFT_EFORMAT with the error set.
 */
int weft__heph_parse_meta(const uint8_t *packet, uint32_t size, const char *file,
			  uint64_t offset, uint64_t *epoch, const uint8_t **name,
			  uint16_t *name_len);

/* Typed fields of an event (weft_event_fields for Heph traces). */
int weft__heph_event_fields(const weft_trace *trace, const weft_event *event,
			    weft_field *out, size_t cap);

/* ---- Trace data ----------------------------------------------------------- */

/* One (stream, substream) pair: a weft stream. */
typedef struct heph_pair {
	uint32_t stream_id;
	uint64_t substream;
	uint64_t events;
} heph_pair;

typedef struct heph_index heph_index;

/* The event kinds the scan found (heph_kinds.c): one per description. */
typedef struct heph_kinds {
	weft__strtab names;           /* descriptions: kind i is string i */
	weft_event_schema *schemas;   /* by kind; fields owned */
	size_t count, cap;
	/* Kind + 1 of recent descriptions, by length and end bytes: the
	 * scan finds most kinds here without hashing (0 = none). */
	uint32_t recent[64];
} heph_kinds;

typedef struct heph_data {
	char *file;                /* path of the trace file */
	const char *name;          /* file name for messages */
	uint64_t file_size;
	uint64_t valid_end;        /* offset where reading stops */
	/* (stream, substream) -> weft stream index: open addressing. */
	heph_pair *map_pairs;      /* key of each slot */
	uint32_t *map_values;      /* stream index, UINT32_MAX = empty slot */
	size_t map_cap;
	size_t stream_count;
	uint64_t event_count;      /* valid event packets */
	uint64_t window;           /* bytes held per reader (window) */
	int scan_halves;           /* 2 when a helper scanned the second half */
	int threads;               /* weft_open_options.threads */
	uint64_t sort_budget;
	heph_index *index;         /* built on first time-ordered read */
	int index_failed;
	/* The index is built by the first reader that needs it, of any
	 * thread: threads borrow the trace (weft_backend.readers_share_data)
	 * and this lock makes the others wait for it, then share it (its
	 * readers read it with positioned reads). */
	pthread_mutex_t index_lock;
	/* Event packets the scan skipped (bad body, times out of range), by
	 * offset ascending: the sequential passes re-validate only these. */
	uint64_t *bad_offsets;
	size_t bad_count, bad_cap;
	int revalidate;            /* more than HEPH_MAX_BAD_LISTED: check all */
	heph_kinds kinds;          /* event kinds, in order of first appearance */
} heph_data;

/* Notes the kind of a valid event packet at `offset`: 0 or WEFT_ENOMEM. */
int weft__heph_kind_note(heph_kinds *k, weft_trace *trace, const heph_event_packet *ev,
			 uint64_t offset);
/* Adds the kinds of `from` (a later part of the file) to `into`. */
int weft__heph_kinds_merge(heph_kinds *into, const heph_kinds *from);
void weft__heph_kinds_free(heph_kinds *k);
/* The backend's event_schemas hook. */
size_t weft__heph_event_schemas(const weft_trace *trace, const weft_event_schema **out);

/* The weft stream of (stream_id, substream), or -1 when unknown. */
int64_t weft__heph_stream_lookup(const heph_data *d, uint32_t stream_id,
				 uint64_t substream);
/* Gives a known pair its final stream index (streams are sorted at open). */
void weft__heph_stream_renumber(heph_data *d, uint32_t stream_id, uint64_t substream,
				uint32_t index);

/* ---- The scan that opens a trace (heph_scan.c) ------------------------------- */

/* Counter bits remembered per stream id to accept out-of-order packets. */
#define COUNTER_WINDOW 1024u
#define COUNTER_WORDS (COUNTER_WINDOW / 64u)

/* Counter checks of one stream id (counters are per stream, all substreams). */
typedef struct counter_state {
	uint32_t stream_id;
	uint64_t events;
	uint64_t first, max;      /* unwrapped counters (first seen, highest) */
	uint64_t base;            /* counter of bit 0 of the window */
	uint64_t bits[COUNTER_WORDS];
	uint64_t lost, duplicates, late;
	uint64_t ranges_reported;
} counter_state;

/* The books of the scan (of a whole file, or of one half of it). */
typedef struct scan_ctx {
	weft_trace *trace;        /* where diagnostics go */
	heph_data *d;
	weft_mapfile mf;
	heph_pair *pairs;         /* pairs in order of appearance */
	size_t pair_count, pair_cap;
	counter_state *counters;  /* per stream id, in order of appearance */
	size_t counter_count, counter_cap;
	uint64_t epoch;
	int has_epoch;
	json_t *epochs;           /* every epoch value, in file order */
	uint64_t events, metadata_packets, skipped_packets;
	uint64_t reversed;        /* events whose end is before their start */
	uint64_t stop_at;         /* main pass: where the helper's half starts */
	/* The helper's half: reports nothing and gives up at its first
	 * diagnostic; it starts without knowing the epoch in force. */
	int quiet, gave_up;
	int epoch_unknown;
	uint64_t unknown_epoch_max; /* latest time read before an epoch packet */
	/* The pair and counter state of the previous event: packets come in
	 * long runs of one stream (a writer's buffer), so most look-ups end
	 * here. */
	uint32_t last_stream_id;
	uint64_t last_substream;
	int64_t last_pair;        /* -1 before the first event */
	size_t last_counter;
} scan_ctx;

/* Empty books reporting to `trace` (mapping still to open in s->mf). */
int weft__heph_scan_init(scan_ctx *s, weft_trace *trace, heph_data *d);
/*
 * Scans the file at `path` (read through s->mf, of d->file_size bytes), on
 * two threads when `threads` allows (weft_open_options.threads); the books
 * are the same either way. Sets d->valid_end. Returns 0 or < 0.
 */
int weft__heph_scan_run(scan_ctx *s, const char *path, int threads);
/* The final counter checks (counters never seen inside the window). */
void weft__heph_scan_finish(scan_ctx *s);
/* The counter state of a stream id that the scan met (never NULL then). */
counter_state *weft__heph_scan_counters(scan_ctx *s, uint32_t stream_id);
void weft__heph_scan_release(scan_ctx *s);

/*
 * Absolute times of an event packet under `epoch`. Returns 0, or
 * WEFT_EFORMAT (error set) when they overflow 64 bits. An end before the
 * start is clamped to the start (the scan warns about it).
 */
int weft__heph_event_times(const heph_event_packet *ev, uint64_t epoch,
			   const char *file, uint64_t offset, uint64_t *start,
			   uint64_t *end);

/*
 * Decodes the event packet at `offset` for a pass that meets the
 * packets in file order (*next_bad: its position in d->bad_offsets,
 * 0 at the start): packets the scan accepted are decoded without being
 * validated again, the others (and every packet when d->revalidate) go
 * through weft__heph_parse_event(). Returns 0, or WEFT_EFORMAT (error
 * set) for a packet the pass must skip.
 */
int weft__heph_read_event(const heph_data *d, size_t *next_bad, const uint8_t *packet,
			  uint32_t size, uint64_t offset, heph_event_packet *out);

/*
 * 1 when the scan accepted the event packet at `offset`: it is not in the
 * list of skipped packets (*next_bad moves along the list as the
 * offsets of a file-order pass grow).
 */
static inline int heph_scan_accepted(const heph_data *d, size_t *next_bad, uint64_t offset)
{
	if (d->revalidate)
		return 0;
	while (*next_bad < d->bad_count && d->bad_offsets[*next_bad] < offset)
		(*next_bad)++;
	return *next_bad == d->bad_count || d->bad_offsets[*next_bad] != offset;
}

/* weft__heph_read_event() with the common case (accepted, well bounded) inline. */
static inline int heph_read_event_inline(const heph_data *d, size_t *next_bad,
					 const uint8_t *packet, uint32_t size,
					 uint64_t offset, heph_event_packet *out)
{
	if (heph_scan_accepted(d, next_bad, offset)) {
		if (heph_decode_event_fast(packet, size, out) == 0)
			return 0;
		return weft__heph_decode_event(packet, size, d->name, offset, out);
	}
	return weft__heph_parse_event(packet, size, d->name, offset, out);
}

/* ---- Time-order index (heph_index.c) --------------------------------------- */

typedef struct heph_entry {
	uint64_t start, end;   /* absolute ns */
	uint64_t offset;       /* packet offset */
	uint64_t seq;          /* index in the stream, stored order */
	uint32_t stream;
	uint32_t pad;
} heph_entry;

/* Builds the index of every valid event of the trace (one pass). */
int weft__heph_index_build(heph_data *d, weft_trace *trace, heph_index **out);
void weft__heph_index_free(heph_index *index);

/* Reads one stream's entries in (start, end desc, seq desc) order. */
typedef struct heph_index_reader heph_index_reader;
int weft__heph_index_reader_open(heph_index *index, uint32_t stream,
				 heph_index_reader **out);
/* 1 and *entry, 0 at the end, < 0 on a read error. */
int weft__heph_index_reader_next(heph_index_reader *r, heph_entry *entry);
void weft__heph_index_reader_free(heph_index_reader *r);

/* ---- Readers (heph_stream.c) ----------------------------------------------- */

int weft__heph_stream_open(weft_trace *trace, uint32_t stream, int stored,
			   void **state);
int weft__heph_file_open(weft_trace *trace, size_t file, void **state);
int weft__heph_stream_next_batch(void *state, weft_event *events, size_t cap);
int weft__heph_stream_next(void *state, weft_event *event);
void weft__heph_stream_close(void *state);

#endif /* WEFT_HEPH_INTERNAL_H */
