/* SPDX-License-Identifier: MIT */
/*
 * outputs/perfetto/perfetto_writer.c - Perfetto's native protobuf trace,
 * written by hand as a sink of the view layer (see perfetto.h for the
 * mapping).
 *
 * Each packet is encoded straight into the output buffer: the packet's
 * largest possible size is worked out first (a bound, from the lengths of
 * its strings and the number of its fields), then fields are written
 * front to back. A length-delimited field keeps one byte for its length;
 * when its body turns out to be 128 bytes or longer the body moves up by
 * the extra length bytes (rare: most bodies are short), so lengths are
 * always minimal varints. A packet larger than one reservation of the
 * buffer goes through a scratch buffer instead.
 *
 * Interning: three open-addressing hash tables (event names, categories,
 * debug annotation names) map strings (pointer + length) to iids; the
 * strings are copied into an arena. The strings a packet interns for the
 * first time are listed while its iids are resolved and written in its
 * interned_data, so every iid is defined in the packet that first uses
 * it. Past the memory bound the tables are emptied and the next packet
 * that interns clears the sequence's incremental state (sequence_flags 3).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "outputs/bg_writer.h"
#include "outputs/outputs.h"
#include "outputs/perfetto.h"

/* The hot helpers are inlined whatever the compiler's estimate. */
#if defined(__GNUC__)
#define WEFT__NOINLINE __attribute__((noinline))
#define HOT static inline __attribute__((always_inline))
#else
#define WEFT__NOINLINE
#define HOT static inline
#endif

/* ---- Field tags (field number << 3 | wire type) ------------------------------- */

#define WIRE_VARINT 0u
#define WIRE_FIXED64 1u
#define WIRE_LEN 2u
#define TAG(field, wire) (((uint32_t)(field) << 3) | (wire))

/* Trace */
#define T_PACKET TAG(1, WIRE_LEN)
/* TracePacket */
#define P_TIMESTAMP TAG(8, WIRE_VARINT)
#define P_SEQUENCE_ID TAG(10, WIRE_VARINT)
#define P_TRACK_EVENT TAG(11, WIRE_LEN)
#define P_INTERNED_DATA TAG(12, WIRE_LEN)
#define P_SEQUENCE_FLAGS TAG(13, WIRE_VARINT)
#define P_TRACK_DESCRIPTOR TAG(60, WIRE_LEN)
#define P_FIRST_PACKET TAG(87, WIRE_VARINT)
/* TrackDescriptor, ProcessDescriptor, ThreadDescriptor */
#define TD_UUID TAG(1, WIRE_VARINT)
#define TD_NAME TAG(2, WIRE_LEN)
#define TD_PROCESS TAG(3, WIRE_LEN)
#define TD_THREAD TAG(4, WIRE_LEN)
#define TD_PARENT_UUID TAG(5, WIRE_VARINT)
#define TD_COUNTER TAG(8, WIRE_LEN)
#define PD_PID TAG(1, WIRE_VARINT)
#define PD_NAME TAG(6, WIRE_LEN)
#define THD_PID TAG(1, WIRE_VARINT)
#define THD_TID TAG(2, WIRE_VARINT)
#define THD_NAME TAG(5, WIRE_LEN)
/* TrackEvent */
#define TE_CATEGORY_IID TAG(3, WIRE_VARINT)
#define TE_ANNOTATION TAG(4, WIRE_LEN)
#define TE_TYPE TAG(9, WIRE_VARINT)
#define TE_NAME_IID TAG(10, WIRE_VARINT)
#define TE_TRACK_UUID TAG(11, WIRE_VARINT)
#define TE_DOUBLE_COUNTER TAG(44, WIRE_FIXED64)
#define TE_FLOW_IDS TAG(47, WIRE_FIXED64)
#define TE_TERMINATING_FLOW_IDS TAG(48, WIRE_FIXED64)
/* DebugAnnotation */
#define DA_NAME_IID TAG(1, WIRE_VARINT)
#define DA_BOOL TAG(2, WIRE_VARINT)
#define DA_UINT TAG(3, WIRE_VARINT)
#define DA_INT TAG(4, WIRE_VARINT)
#define DA_DOUBLE TAG(5, WIRE_FIXED64)
#define DA_STRING TAG(6, WIRE_LEN)
#define DA_ARRAY_VALUE TAG(12, WIRE_LEN)
/* InternedData entries ({iid 1, name 2}) */
#define IN_IID TAG(1, WIRE_VARINT)
#define IN_NAME TAG(2, WIRE_LEN)

/* InternedData fields, also the index + 1 of the writer's tables. */
enum intern_kind {
	INTERN_CATEGORY = 1,   /* event_categories */
	INTERN_NAME = 2,       /* event_names */
	INTERN_ANNOTATION = 3  /* debug_annotation_names */
};

enum event_type { TYPE_BEGIN = 1, TYPE_END = 2, TYPE_INSTANT = 3, TYPE_COUNTER = 4 };

enum sequence_flags { SEQ_CLEARED = 1, SEQ_NEEDS_STATE = 2 };

/* ---- Size bounds ----------------------------------------------------------------- */

/*
 * Worst cases in bytes, for the bound of a packet: a varint is at most 10
 * bytes, a tag 2, and closing a length-delimited field may add 9 bytes to
 * the one kept for its length (so a field's header counts 11).
 *
 * The fixed part of a packet: record header 11, sequence id 6 (a 12-byte
 * copy), first-packet mark 3, timestamp 11, flags 2, interned_data and
 * track_event headers 11 each, type 2, track uuid 11 (a 16-byte copy),
 * name and category iids 6 each: 80, or a track descriptor's 110 plus
 * its name.
 */
#define PACKET_BASE 128u
/* One annotation: header 11, name iid 6, a scalar value 11 (a string's
 * tag and length: its bytes come on top). */
#define ANNOTATION_BASE 48u
/* One array element: header 11, a scalar value 11 (or a string's tag and
 * length: its bytes, at most the array's stored bytes, come on top). */
#define ELEMENT_BASE 32u
/* One interned entry without its string: header 11, iid 6, name tag and
 * length 11. */
#define ENTRY_BASE 48u
/* What an interned string is taken to cost in memory besides its bytes
 * (its share of the slots at half load, arena rounding). */
#define INTERN_ENTRY_COST 64u

/*
 * Background mode (regular files, when asked): a buffer goes to the
 * writer thread (outputs/bg_writer.c) once it holds CHUNK bytes; the
 * slack above takes the packet that crosses the mark (reservations are at
 * most WEFT__OUTBUF_MAX_RESERVE bytes, so they never flush by themselves).
 */
#define CHUNK (1u << 20)
#define CHUNK_SLACK (64u << 10)

#define INITIAL_SLOTS 256u
#define ARENA_CHUNK (64u << 10)
#define INITIAL_PENDING 64u
/* Hints per intern table: 2^HINT_BITS. */
#define HINT_BITS 6
#define HINTS (1u << HINT_BITS)
/* Content hints per intern table: 2^CONTENT_BITS. */
#define CONTENT_BITS 7
#define CONTENT_HINTS (1u << CONTENT_BITS)

/* ---- The writer ------------------------------------------------------------------ */

/* One interned string: slot of a table (iid 0: empty slot). */
typedef struct intern_slot {
	uint64_t hash;
	const char *str;   /* in the arena */
	uint32_t len;
	uint32_t iid;
} intern_slot;

/*
 * A recently used string by the caller's pointer: most names come from
 * the same few addresses (a backend's constant strings), so a hit costs
 * a comparison of the bytes, no hash. The bytes are compared every time,
 * so a pointer reused for another string only misses.
 */
typedef struct intern_hint {
	const char *ptr;   /* the caller's pointer */
	const char *copy;  /* the interned bytes (arena) */
	uint32_t len;
	uint32_t iid;      /* 0: empty hint */
} intern_hint;

typedef struct intern_table {
	intern_slot *slots;
	size_t mask;       /* slot count - 1 (a power of two) */
	size_t count;      /* strings held; the last iid given */
	intern_hint hints[HINTS];
	/* Recently interned strings by their length and first bytes (ptr
	 * unused): a name that comes from a new address each time (a
	 * description inside each packet of a trace) is found without
	 * hashing it. */
	intern_hint by_content[CONTENT_HINTS];
} intern_table;

/* The encoded track_uuid field of a declared track (tag + varint). */
typedef struct track_code {
	uint8_t bytes[16];
	uint8_t len;       /* 0: not declared */
} track_code;

/* A block of the string arena. */
typedef struct arena_chunk {
	struct arena_chunk *next;
	size_t used, cap;
	char data[];
} arena_chunk;

/* A string interned by the packet being built: goes in its interned_data. */
typedef struct pending_entry {
	uint32_t kind;     /* enum intern_kind */
	uint32_t iid;
	const char *str;
	uint32_t len;
} pending_entry;

struct weft__perfetto_writer {
	weft__outbuf out;
	weft__view_sink sink;
	intern_table tables[3];  /* index: enum intern_kind - 1 */
	arena_chunk *arena;
	size_t intern_bytes;     /* strings + INTERN_ENTRY_COST each */
	size_t intern_limit;
	pending_entry *pending;
	size_t pending_count, pending_cap;
	size_t pending_bound;    /* bytes the pending entries may take */
	uint32_t *arg_iids;      /* annotation name iids of the current item */
	size_t arg_cap;
	uint8_t *scratch;        /* packets too large for one reservation */
	size_t scratch_cap;
	track_code *tracks;      /* by view track id */
	size_t track_cap;
	uint64_t uuid_base;      /* track uuid = uuid_base + view track id */
	uint8_t sequence_field[12]; /* the encoded trusted_packet_sequence_id */
	size_t sequence_len;
	int clear_next;          /* the next interning packet clears the state */
	int need_reset;          /* an interning failed: empty the tables */
	int nomem;               /* an event was left out for want of memory */
	weft__perfetto_stats stats;
	weft__bg_output bg;      /* the writer thread, for regular files */
};

/* ---- Encoding primitives ----------------------------------------------------------- */

/* Writes v as a base-128 varint at p; returns the end. */
HOT uint8_t *put_varint(uint8_t *p, uint64_t v)
{
	while (v >= 0x80) {
		*p++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*p++ = (uint8_t)v;
	return p;
}

/* The bytes of v as a varint. */
static inline size_t varint_size(uint64_t v)
{
	size_t n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

/* A varint field: tag, then value. */
HOT uint8_t *put_uint_field(uint8_t *p, uint32_t tag, uint64_t v)
{
	return put_varint(put_varint(p, tag), v);
}

/* A fixed64 field, little-endian as the wire wants. */
static inline uint8_t *put_fixed64_field(uint8_t *p, uint32_t tag, uint64_t bits)
{
	p = put_varint(p, tag);
	for (int i = 0; i < 8; i++)
		*p++ = (uint8_t)(bits >> (8 * i));
	return p;
}

/* A fixed64 field holding a double. */
static inline uint8_t *put_double_field(uint8_t *p, uint32_t tag, double v)
{
	uint64_t bits;

	memcpy(&bits, &v, sizeof bits);
	return put_fixed64_field(p, tag, bits);
}

/* A length-delimited field holding bytes (a string). */
static inline uint8_t *put_bytes_field(uint8_t *p, uint32_t tag, const void *s, size_t len)
{
	p = put_varint(put_varint(p, tag), len);
	if (len > 0)
		memcpy(p, s, len);
	return p + len;
}

/*
 * Opens a length-delimited field whose body follows: writes the tag and
 * keeps one byte for the length. Returns where the body starts.
 */
HOT uint8_t *nest_open(uint8_t *p, uint32_t tag)
{
	return put_varint(p, tag) + 1;
}

/*
 * Closes the field whose body runs from `body` to `end`: writes its
 * length in the kept byte, or, for bodies of 128 bytes and more, moves
 * the body up to make room for the longer varint. Returns the new end.
 */
HOT uint8_t *nest_close(uint8_t *body, uint8_t *end)
{
	size_t len = (size_t)(end - body);

	if (WEFT_LIKELY(len < 0x80)) {
		body[-1] = (uint8_t)len;
		return end;
	}
	size_t n = varint_size(len);
	memmove(body - 1 + n, body, len);
	put_varint(body - 1, len);
	return end + n - 1;
}

/* ---- Background writes ----------------------------------------------------------- */

/* The full buffer goes to the writer thread (outputs/bg_writer.h). */
static WEFT__NOINLINE void hand_over(weft__perfetto_writer *w)
{
	/* A failed write is kept by the thread and reported by _finish. */
	weft__bg_output_hand_over(&w->bg, &w->out);
}

/* ---- Packets ---------------------------------------------------------------------- */

/* Where a packet is being built. */
typedef struct packet {
	uint8_t *start;    /* the record's first byte (tag of Trace.packet) */
	uint8_t *body;     /* the TracePacket's first byte */
	int direct;        /* 1: in the output buffer; 0: in the scratch buffer */
} packet;

/* Makes the scratch buffer hold at least n bytes; 0 or WEFT_ENOMEM. */
static int scratch_reserve(weft__perfetto_writer *w, size_t n)
{
	if (n <= w->scratch_cap)
		return 0;
	size_t cap = w->scratch_cap ? w->scratch_cap : 8192;
	while (cap < n)
		cap = cap > SIZE_MAX / 2 ? n : cap * 2;
	uint8_t *p = realloc(w->scratch, cap);
	if (p == NULL)
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET,
				   "cannot allocate %zu bytes for a Perfetto packet", cap);
	w->scratch = p;
	w->scratch_cap = cap;
	return 0;
}

/*
 * Starts a packet of at most `bound` bytes: room in the output buffer (or
 * the scratch buffer), the record header, the sequence id, and on the
 * very first packet first_packet_on_sequence. Returns where the next
 * field goes, or NULL (message set) when no memory was left.
 */
HOT uint8_t *packet_open(weft__perfetto_writer *w, size_t bound, packet *pk)
{
	uint8_t *p;

	pk->direct = bound <= WEFT__OUTBUF_MAX_RESERVE;
	if (pk->direct) {
		p = (uint8_t *)weft__outbuf_reserve(&w->out, bound);
	} else {
		if (scratch_reserve(w, bound) < 0)
			return NULL;
		p = w->scratch;
	}
	pk->start = p;
	pk->body = p = nest_open(p, T_PACKET);
	memcpy(p, w->sequence_field, sizeof w->sequence_field);
	p += w->sequence_len;
	if (WEFT_UNLIKELY(w->stats.packets == 0))
		p = put_uint_field(p, P_FIRST_PACKET, 1);
	return p;
}

/* Ends the packet at `end`: its length, then into the output. */
HOT void packet_close(weft__perfetto_writer *w, packet *pk, uint8_t *end)
{
	end = nest_close(pk->body, end);
	size_t n = (size_t)(end - pk->start);

	if (pk->direct)
		weft__outbuf_commit(&w->out, (char *)end);
	else
		weft__outbuf_put(&w->out, pk->start, n);
	w->stats.packets++;
	w->stats.bytes += n;
	if (w->bg.running && w->out.len >= CHUNK)
		hand_over(w);
}

/* An event left out for want of memory: reported by _finish(). */
static void drop_event(weft__perfetto_writer *w)
{
	w->nomem = 1;
}

/* ---- Interning ------------------------------------------------------------------- */

/*
 * The last 1..7 bytes of a string as one word, without a call to memcpy
 * of a variable length (two overlapping 4-byte loads, or three bytes):
 * the same bytes always give the same word.
 */
HOT uint64_t load_tail(const char *s, size_t len)
{
	const unsigned char *u = (const unsigned char *)s;
	uint32_t a, b;

	if (len >= 4) {
		memcpy(&a, s, 4);
		memcpy(&b, s + len - 4, 4);
		return ((uint64_t)b << 32) | a;
	}
	return (uint64_t)u[0] | ((uint64_t)u[len / 2] << 8) | ((uint64_t)u[len - 1] << 16);
}

/*
 * A 64-bit hash of a string, eight bytes at a time (multiply and shift
 * mixing). Only used in memory, so the byte order does not matter.
 */
static inline uint64_t hash_bytes(const char *s, size_t len)
{
	uint64_t h = 0x9e3779b97f4a7c15ull ^ (len * 0xff51afd7ed558ccdull);
	uint64_t word;

	while (len >= 8) {
		memcpy(&word, s, 8);
		h = (h ^ word) * 0xc4ceb9fe1a85ec53ull;
		h ^= h >> 29;
		s += 8;
		len -= 8;
	}
	if (len > 0)
		h = (h ^ load_tail(s, len)) * 0xc4ceb9fe1a85ec53ull;
	h ^= h >> 32;
	h *= 0xff51afd7ed558ccdull;
	return h ^ (h >> 29);
}

/* memcmp(a, b, len) == 0, inline for the short strings of names. */
HOT int same_bytes(const char *a, const char *b, size_t len)
{
	uint64_t x, y;

	while (len >= 8) {
		memcpy(&x, a, 8);
		memcpy(&y, b, 8);
		if (x != y)
			return 0;
		a += 8;
		b += 8;
		len -= 8;
	}
	return len == 0 || load_tail(a, len) == load_tail(b, len);
}

/*
 * Copies a string into the arena; NULL when out of memory. Strings longer
 * than a quarter of a chunk get a chunk of their own, put behind the
 * current one, which keeps its free room.
 */
static const char *arena_copy(weft__perfetto_writer *w, const char *s, size_t len)
{
	arena_chunk *c = w->arena;

	if (c == NULL || c->cap - c->used < len) {
		int own = len > ARENA_CHUNK / 4;
		size_t cap = own ? len : ARENA_CHUNK;
		c = malloc(sizeof *c + cap);
		if (c == NULL)
			return NULL;
		c->used = 0;
		c->cap = cap;
		if (own && w->arena != NULL) {
			c->next = w->arena->next;
			w->arena->next = c;
		} else {
			c->next = w->arena;
			w->arena = c;
		}
	}
	char *dst = c->data + c->used;
	if (len > 0)
		memcpy(dst, s, len);
	c->used += len;
	return dst;
}

/* Frees every chunk of the arena. */
static void arena_free(weft__perfetto_writer *w)
{
	while (w->arena != NULL) {
		arena_chunk *next = w->arena->next;
		free(w->arena);
		w->arena = next;
	}
}

/* Allocates the empty slots of a table; 0 or WEFT_ENOMEM (no message). */
static int table_init(intern_table *t, size_t slots)
{
	t->slots = calloc(slots, sizeof *t->slots);
	if (t->slots == NULL)
		return WEFT_ENOMEM;
	t->mask = slots - 1;
	t->count = 0;
	return 0;
}

/* Doubles the slots of a full table and re-places its strings. */
static int table_grow(intern_table *t)
{
	size_t slots = (t->mask + 1) * 2;
	intern_slot *fresh = calloc(slots, sizeof *fresh);

	if (fresh == NULL)
		return WEFT_ENOMEM;
	for (size_t i = 0; i <= t->mask; i++) {
		const intern_slot *s = &t->slots[i];
		if (s->iid == 0)
			continue;
		size_t j = s->hash & (slots - 1);
		while (fresh[j].iid != 0)
			j = (j + 1) & (slots - 1);
		fresh[j] = *s;
	}
	free(t->slots);
	t->slots = fresh;
	t->mask = slots - 1;
	return 0;
}

/* Adds an entry to the pending list of the packet being built. */
static int pending_add(weft__perfetto_writer *w, uint32_t kind, const intern_slot *s)
{
	if (w->pending_count == w->pending_cap) {
		size_t cap = w->pending_cap * 2;
		pending_entry *p = realloc(w->pending, cap * sizeof *p);
		if (p == NULL)
			return WEFT_ENOMEM;
		w->pending = p;
		w->pending_cap = cap;
	}
	pending_entry *e = &w->pending[w->pending_count++];
	e->kind = kind;
	e->iid = s->iid;
	e->str = s->str;
	e->len = s->len;
	w->pending_bound += ENTRY_BASE + s->len;
	return 0;
}

/*
 * A string seen for the first time goes into its table (grown at half
 * load), the arena and the pending list. Returns its slot, or NULL when
 * out of memory.
 */
static const intern_slot *intern_insert(weft__perfetto_writer *w, uint32_t kind, uint64_t hash,
					const char *s, uint32_t len)
{
	intern_table *t = &w->tables[kind - 1];

	if ((t->count + 1) * 2 > t->mask + 1 && table_grow(t) < 0)
		return NULL;
	size_t i = hash & t->mask;
	while (t->slots[i].iid != 0)
		i = (i + 1) & t->mask;
	const char *copy = arena_copy(w, s, len);
	if (copy == NULL)
		return NULL;
	intern_slot *slot = &t->slots[i];
	slot->hash = hash;
	slot->str = copy;
	slot->len = len;
	slot->iid = (uint32_t)(t->count + 1);
	if (pending_add(w, kind, slot) < 0) {
		slot->iid = 0;
		return NULL;
	}
	t->count++;
	w->intern_bytes += len + INTERN_ENTRY_COST;
	w->stats.interned++;
	return slot;
}

/* The hint slot of a caller's pointer (multiplicative hash: the top bits). */
HOT intern_hint *hint_of(intern_table *t, const char *s)
{
	uint64_t a = (uint64_t)(uintptr_t)s * 0x9e3779b97f4a7c15ull;

	return &t->hints[a >> (64 - HINT_BITS)];
}

/*
 * Slow path of intern(): the string by its hash in the table, inserted
 * when new; then the hint remembers the caller's pointer. 0 when out of
 * memory.
 */
/* The content hint of s[0, len) (len > 0): its length and first 8 bytes. */
HOT intern_hint *content_of(intern_table *t, const char *s, uint32_t len)
{
	uint64_t head;

	if (len >= 8)
		memcpy(&head, s, 8);
	else
		head = load_tail(s, len);
	uint64_t a = (head ^ ((uint64_t)len * 0xff51afd7ed558ccdull)) * 0x9e3779b97f4a7c15ull;
	return &t->by_content[a >> (64 - CONTENT_BITS)];
}

static WEFT__NOINLINE uint32_t intern_lookup(weft__perfetto_writer *w, uint32_t kind,
					     const char *s, uint32_t len)
{
	intern_table *t = &w->tables[kind - 1];
	intern_hint *h = hint_of(t, s);
	intern_hint *c = NULL;
	if (len > 0) {
		c = content_of(t, s, len);
		if (c->iid != 0 && c->len == len && same_bytes(c->copy, s, len)) {
			*h = (intern_hint){ s, c->copy, len, c->iid };
			return c->iid;
		}
	}
	uint64_t hash = hash_bytes(s, len);
	const intern_slot *slot = NULL;

	for (size_t i = hash & t->mask;; i = (i + 1) & t->mask) {
		slot = &t->slots[i];
		if (slot->iid == 0) {
			slot = intern_insert(w, kind, hash, s, len);
			break;
		}
		if (slot->hash == hash && slot->len == len && same_bytes(slot->str, s, len))
			break;
	}
	if (slot == NULL)
		return 0;
	*h = (intern_hint){ s, slot->str, len, slot->iid };
	if (c != NULL)
		*c = (intern_hint){ NULL, slot->str, len, slot->iid };
	return slot->iid;
}

/*
 * The iid of string s (len bytes; s may be NULL when len is 0) in table
 * `kind`, interning it (and listing it for the packet's interned_data)
 * when new. 0 when out of memory. Inline: a hint that matches.
 */
HOT uint32_t intern(weft__perfetto_writer *w, uint32_t kind, const char *s, uint32_t len)
{
	const intern_hint *h = hint_of(&w->tables[kind - 1], s);
	if (WEFT_LIKELY(h->ptr == s && h->len == len && h->iid != 0 &&
			same_bytes(h->copy, s, len)))
		return h->iid;
	return intern_lookup(w, kind, s, len);
}

/*
 * 1 when the NUL-terminated s holds exactly the len bytes of copy (which
 * has no NUL): compared byte by byte, so that s is never read past its
 * terminator.
 */
HOT int same_as_nul_string(const char *copy, uint32_t len, const char *s)
{
	for (uint32_t i = 0; i < len; i++)
		if (s[i] != copy[i])
			return 0;
	return s[len] == '\0';
}

/* intern() of a NUL-terminated string (categories): no strlen on a hit. */
HOT uint32_t intern_nul(weft__perfetto_writer *w, uint32_t kind, const char *s)
{
	const intern_hint *h = hint_of(&w->tables[kind - 1], s);

	if (h->ptr == s && h->iid != 0 && same_as_nul_string(h->copy, h->len, s))
		return h->iid;
	size_t len = strlen(s);
	return intern(w, kind, s, (uint32_t)(len > UINT32_MAX ? UINT32_MAX : len));
}

/* Shrinks a table back to its first size (if it can) and empties it. */
static void table_clear(intern_table *t)
{
	if (t->mask + 1 > INITIAL_SLOTS) {
		intern_slot *small = realloc(t->slots, INITIAL_SLOTS * sizeof *small);
		if (small != NULL) {
			t->slots = small;
			t->mask = INITIAL_SLOTS - 1;
		}
	}
	memset(t->slots, 0, (t->mask + 1) * sizeof *t->slots);
	memset(t->hints, 0, sizeof t->hints);
	memset(t->by_content, 0, sizeof t->by_content);
	t->count = 0;
}

/*
 * Forgets every interned string: the next packet that interns starts
 * the sequence's incremental state again (sequence_flags 3).
 */
static void intern_reset(weft__perfetto_writer *w)
{
	for (int k = 0; k < 3; k++)
		table_clear(&w->tables[k]);
	arena_free(w);
	w->intern_bytes = 0;
	w->need_reset = 0;
	if (!w->clear_next)
		w->stats.intern_resets++;
	w->clear_next = 1;
}

/* Before a packet that interns: empties the tables past the bound. */
static inline void intern_begin(weft__perfetto_writer *w)
{
	if (WEFT_UNLIKELY(w->need_reset || w->intern_bytes > w->intern_limit))
		intern_reset(w);
	w->pending_count = 0;
	w->pending_bound = 0;
}

/* The sequence_flags of a packet that uses interned data. */
static inline uint32_t interning_flags(weft__perfetto_writer *w)
{
	if (WEFT_UNLIKELY(w->clear_next)) {
		w->clear_next = 0;
		return SEQ_CLEARED | SEQ_NEEDS_STATE;
	}
	return SEQ_NEEDS_STATE;
}

/* The packet's interned_data: the strings it interned first. */
static uint8_t *put_interned_data(weft__perfetto_writer *w, uint8_t *p)
{
	uint8_t *data = nest_open(p, P_INTERNED_DATA);

	p = data;
	for (size_t i = 0; i < w->pending_count; i++) {
		const pending_entry *e = &w->pending[i];
		uint8_t *entry = nest_open(p, TAG(e->kind, WIRE_LEN));
		p = put_uint_field(entry, IN_IID, e->iid);
		p = put_bytes_field(p, IN_NAME, e->str, e->len);
		p = nest_close(entry, p);
	}
	return nest_close(data, p);
}

/* ---- Debug annotations ------------------------------------------------------------- */

/* Bytes the value of a field may take as an annotation (its name aside). */
static size_t value_bound(const weft_field *f)
{
	/* Every element takes at least one stored byte: a count larger than
	 * that (a damaged payload) ends at the first element past the data. */
	if (f->is_array)
		return (f->count < f->raw_size ? f->count : f->raw_size) * ELEMENT_BASE +
		       2 * f->raw_size;
	if (f->type == WEFT_TYPE_STR)
		return f->v.s.len;
	if (f->type == WEFT_TYPE_BYTES)
		return 2 * f->v.s.len;
	return 0;
}

/* BYTES as a string of lowercase hex digits. */
static uint8_t *put_hex_string(uint8_t *p, uint32_t tag, const uint8_t *bytes, size_t n)
{
	p = put_varint(put_varint(p, tag), 2 * n);
	return (uint8_t *)weft__fmt_hex_plain((char *)p, bytes, n);
}

/* The value of a scalar field, in the DebugAnnotation field of its type. */
static uint8_t *put_value(uint8_t *p, const weft_field *f)
{
	switch (f->type) {
	case WEFT_TYPE_I8: case WEFT_TYPE_I16: case WEFT_TYPE_I32: case WEFT_TYPE_I64:
		return put_uint_field(p, DA_INT, (uint64_t)f->v.i);
	case WEFT_TYPE_F32: case WEFT_TYPE_F64:
		return put_double_field(p, DA_DOUBLE, f->v.f);
	case WEFT_TYPE_BOOL:
		return put_uint_field(p, DA_BOOL, f->v.u != 0);
	case WEFT_TYPE_STR:
		return put_bytes_field(p, DA_STRING, f->v.s.ptr, f->v.s.len);
	case WEFT_TYPE_BYTES:
		return put_hex_string(p, DA_STRING, (const uint8_t *)f->v.s.ptr, f->v.s.len);
	default:
		return put_uint_field(p, DA_UINT, f->v.u);
	}
}

/* An array: one nested array_values annotation per element, in order. */
static uint8_t *put_array(uint8_t *p, const weft_field *f)
{
	weft_field element;

	for (uint32_t i = 0; i < f->count; i++) {
		if (weft_field_element(f, i, &element) < 0)
			break;
		uint8_t *body = nest_open(p, DA_ARRAY_VALUE);
		p = nest_close(body, put_value(body, &element));
	}
	return p;
}

/* One debug annotation of the track event: interned name, value. */
static uint8_t *put_annotation(uint8_t *p, uint32_t name_iid, const weft_field *f)
{
	uint8_t *body = nest_open(p, TE_ANNOTATION);

	p = put_uint_field(body, DA_NAME_IID, name_iid);
	p = f->is_array ? put_array(p, f) : put_value(p, f);
	return nest_close(body, p);
}

/* A bool annotation set to true ("clipped", "unclosed"). */
static uint8_t *put_flag_annotation(uint8_t *p, uint32_t name_iid)
{
	uint8_t *body = nest_open(p, TE_ANNOTATION);

	p = put_uint_field(body, DA_NAME_IID, name_iid);
	p = put_uint_field(p, DA_BOOL, 1);
	return nest_close(body, p);
}

/* ---- Track events ------------------------------------------------------------------ */

/* What one slice or instant packet carries, its iids resolved. */
typedef struct event_plan {
	uint32_t type;              /* enum event_type */
	uint32_t name_iid;          /* 0: none (ends) */
	uint32_t category_iid;      /* 0: none */
	const weft_field *args;
	int arg_count;
	uint32_t clipped_iid;       /* 0: not flagged */
	uint32_t unclosed_iid;
	uint64_t flow_id;           /* 0: none */
	uint32_t flow_tag;          /* TE_FLOW_IDS (send), TE_TERMINATING_FLOW_IDS */
	size_t bound;               /* bytes the packet may take */
} event_plan;

/* Makes room for the annotation name iids of n args; 0 or WEFT_ENOMEM. */
static int arg_iids_reserve(weft__perfetto_writer *w, size_t n)
{
	if (n <= w->arg_cap)
		return 0;
	uint32_t *p = realloc(w->arg_iids, n * sizeof *p);
	if (p == NULL)
		return WEFT_ENOMEM;
	w->arg_iids = p;
	w->arg_cap = n;
	return 0;
}

/* Interns the annotation names of the args (and their bound); 0 or -1. */
static int plan_args(weft__perfetto_writer *w, event_plan *e)
{
	if (arg_iids_reserve(w, (size_t)e->arg_count) < 0)
		return -1;
	for (int i = 0; i < e->arg_count; i++) {
		const weft_field *f = &e->args[i];
		w->arg_iids[i] = intern(w, INTERN_ANNOTATION, f->name, f->name_len);
		if (w->arg_iids[i] == 0)
			return -1;
		e->bound += ANNOTATION_BASE + value_bound(f);
	}
	return 0;
}

/* Interns the names of the flag annotations an item asks for; 0 or -1. */
static int plan_flags(weft__perfetto_writer *w, event_plan *e, unsigned flags)
{
	if (flags & WEFT__VIEW_CLIPPED) {
		e->clipped_iid = intern(w, INTERN_ANNOTATION, "clipped", 7);
		if (e->clipped_iid == 0)
			return -1;
		e->bound += ANNOTATION_BASE;
	}
	if (flags & WEFT__VIEW_UNCLOSED) {
		e->unclosed_iid = intern(w, INTERN_ANNOTATION, "unclosed", 8);
		if (e->unclosed_iid == 0)
			return -1;
		e->bound += ANNOTATION_BASE;
	}
	return 0;
}

/*
 * Resolves every iid the packet uses (interning what is new) and its
 * bound. `named`: the item's name and category go on the event; `full`:
 * its args and flags too. Returns 0, or -1 when out of memory (the
 * tables are then emptied before the next packet, as some of the
 * strings listed will never be written).
 */
static int plan_event(weft__perfetto_writer *w, event_plan *e, const weft__view_item *item,
		      int named, int full)
{
	intern_begin(w);
	e->bound = PACKET_BASE;
	e->name_iid = e->category_iid = e->clipped_iid = e->unclosed_iid = 0;
	e->flow_id = 0;
	e->flow_tag = 0; /* unused without a flow id (gcc -O1 cannot tell) */
	e->args = NULL;
	e->arg_count = 0;
	if (named) {
		e->name_iid = intern(w, INTERN_NAME, item->name, item->name_len);
		if (e->name_iid == 0)
			goto nomem;
		if (item->category != NULL) {
			e->category_iid = intern_nul(w, INTERN_CATEGORY, item->category);
			if (e->category_iid == 0)
				goto nomem;
		}
	}
	if (full) {
		e->args = item->args;
		e->arg_count = item->args != NULL && item->arg_count > 0 ? item->arg_count : 0;
		if (plan_args(w, e) < 0 || plan_flags(w, e, item->flags) < 0)
			goto nomem;
		/* A message end: the send starts the flow, the receive ends it. */
		e->flow_id = item->flow_id;
		e->flow_tag = item->flow_end == WEFT_FLOW_IN ? TE_TERMINATING_FLOW_IDS
							      : TE_FLOW_IDS;
		e->bound += e->flow_id != 0 ? 12 : 0;
	}
	e->bound += w->pending_bound;
	return 0;
nomem:
	w->need_reset = 1;
	return -1;
}

/* 1 when the planned packet refers to interned strings. */
static inline int plan_interns(const event_plan *e)
{
	return e->name_iid != 0 || e->category_iid != 0 || e->arg_count > 0 ||
	       e->clipped_iid != 0 || e->unclosed_iid != 0;
}

/* The uuid of a view track (and of its parent: id 0 is none). */
static inline uint64_t track_uuid(const weft__perfetto_writer *w, uint32_t id)
{
	return w->uuid_base + id;
}

/*
 * The track_uuid field of a TrackEvent: the bytes encoded when the track
 * was declared (a fixed-size copy), else encoded now.
 */
static inline uint8_t *put_track_uuid(const weft__perfetto_writer *w, uint8_t *p, uint32_t id)
{
	if (WEFT_LIKELY(id < w->track_cap && w->tracks[id].len != 0)) {
		memcpy(p, w->tracks[id].bytes, sizeof w->tracks[id].bytes);
		return p + w->tracks[id].len;
	}
	return put_uint_field(p, TE_TRACK_UUID, track_uuid(w, id));
}

/* The TrackEvent of a planned slice or instant packet. */
static uint8_t *put_track_event(weft__perfetto_writer *w, uint8_t *p, const event_plan *e,
				uint32_t track)
{
	uint8_t *body = nest_open(p, P_TRACK_EVENT);

	p = put_uint_field(body, TE_TYPE, e->type);
	p = put_track_uuid(w, p, track);
	if (e->name_iid != 0)
		p = put_uint_field(p, TE_NAME_IID, e->name_iid);
	if (e->category_iid != 0)
		p = put_uint_field(p, TE_CATEGORY_IID, e->category_iid);
	for (int i = 0; i < e->arg_count; i++)
		p = put_annotation(p, w->arg_iids[i], &e->args[i]);
	if (e->clipped_iid != 0)
		p = put_flag_annotation(p, e->clipped_iid);
	if (e->unclosed_iid != 0)
		p = put_flag_annotation(p, e->unclosed_iid);
	if (e->flow_id != 0)
		p = put_fixed64_field(p, e->flow_tag, e->flow_id);
	return nest_close(body, p);
}

/*
 * One slice begin, slice end or instant packet on `track`: timestamp,
 * sequence flags and interned_data when it uses interned strings, then
 * the TrackEvent.
 */
static void emit_event(weft__perfetto_writer *w, const weft__view_track *track, uint64_t time,
		       uint32_t type, const weft__view_item *item, int named, int full)
{
	event_plan e;
	packet pk;

	e.type = type;
	if (plan_event(w, &e, item, named, full) < 0) {
		drop_event(w);
		return;
	}
	uint8_t *p = packet_open(w, e.bound, &pk);
	if (p == NULL) {
		w->need_reset = w->pending_count > 0;
		drop_event(w);
		return;
	}
	p = put_uint_field(p, P_TIMESTAMP, time);
	if (plan_interns(&e))
		p = put_uint_field(p, P_SEQUENCE_FLAGS, interning_flags(w));
	if (w->pending_count > 0)
		p = put_interned_data(w, p);
	p = put_track_event(w, p, &e, track->id);
	packet_close(w, &pk, p);
}

/* ---- Track descriptors --------------------------------------------------------------- */

/*
 * ProcessDescriptor {pid, process_name}. The view's pids and tids are
 * already what Perfetto reads (int32, never 0: outputs/view.h).
 */
static uint8_t *put_process(uint8_t *p, const weft__view_track *t, size_t name_len)
{
	uint8_t *body = nest_open(p, TD_PROCESS);

	p = put_uint_field(body, PD_PID, (uint64_t)t->pid);
	p = put_bytes_field(p, PD_NAME, t->name, name_len);
	return nest_close(body, p);
}

/* ThreadDescriptor {pid, tid, thread_name}. */
static uint8_t *put_thread(uint8_t *p, const weft__view_track *t, size_t name_len)
{
	uint8_t *body = nest_open(p, TD_THREAD);

	p = put_uint_field(body, THD_PID, (uint64_t)t->pid);
	p = put_uint_field(p, THD_TID, (uint64_t)t->tid);
	p = put_bytes_field(p, THD_NAME, t->name, name_len);
	return nest_close(body, p);
}

/* The TrackDescriptor of a view track (see perfetto.h for the kinds). */
static uint8_t *put_track_descriptor(weft__perfetto_writer *w, uint8_t *p,
				     const weft__view_track *t, size_t name_len)
{
	uint8_t *body = nest_open(p, P_TRACK_DESCRIPTOR);

	p = put_uint_field(body, TD_UUID, track_uuid(w, t->id));
	if (t->parent != 0)
		p = put_uint_field(p, TD_PARENT_UUID, track_uuid(w, t->parent));
	switch (t->kind) {
	case WEFT__TRACK_PROCESS:
		p = put_process(p, t, name_len);
		break;
	case WEFT__TRACK_THREAD:
		p = put_thread(p, t, name_len);
		break;
	case WEFT__TRACK_COUNTER:
		p = put_bytes_field(p, TD_NAME, t->name, name_len);
		p = put_bytes_field(p, TD_COUNTER, NULL, 0);
		break;
	default: /* CHANNEL, STATE */
		p = put_bytes_field(p, TD_NAME, t->name, name_len);
		break;
	}
	return nest_close(body, p);
}

/*
 * Keeps the encoded track_uuid field of a new track for its events (the
 * table grows with the track ids; without memory, events encode it).
 */
static void remember_track(weft__perfetto_writer *w, uint32_t id)
{
	if (id >= w->track_cap) {
		size_t cap = w->track_cap ? w->track_cap : 64;
		while (cap <= id)
			cap *= 2;
		track_code *p = realloc(w->tracks, cap * sizeof *p);
		if (p == NULL)
			return;
		memset(p + w->track_cap, 0, (cap - w->track_cap) * sizeof *p);
		w->tracks = p;
		w->track_cap = cap;
	}
	track_code *c = &w->tracks[id];
	c->len = (uint8_t)(put_uint_field(c->bytes, TE_TRACK_UUID, track_uuid(w, id)) - c->bytes);
}

/* A packet holding the TrackDescriptor of a new view track. */
static void emit_track(weft__perfetto_writer *w, const weft__view_track *t)
{
	size_t name_len = t->name != NULL ? strlen(t->name) : 0;
	packet pk;
	uint8_t *p = packet_open(w, PACKET_BASE + 2 * ANNOTATION_BASE + name_len, &pk);

	if (p == NULL) {
		drop_event(w);
		return;
	}
	p = put_track_descriptor(w, p, t, name_len);
	packet_close(w, &pk, p);
	w->stats.tracks++;
	remember_track(w, t->id);
}

/* A counter value: TrackEvent type 4 with double_counter_value. */
static void emit_counter(weft__perfetto_writer *w, const weft__view_track *t, uint64_t time,
			 double value)
{
	packet pk;
	uint8_t *p = packet_open(w, PACKET_BASE, &pk);

	if (p == NULL) {
		drop_event(w);
		return;
	}
	p = put_uint_field(p, P_TIMESTAMP, time);
	uint8_t *body = nest_open(p, P_TRACK_EVENT);
	p = put_uint_field(body, TE_TYPE, TYPE_COUNTER);
	p = put_track_uuid(w, p, t->id);
	p = put_double_field(p, TE_DOUBLE_COUNTER, value);
	p = nest_close(body, p);
	packet_close(w, &pk, p);
}

/* ---- The sink ---------------------------------------------------------------------- */

/* view sink: a new track. */
static void sink_track(void *ctx, const weft__view_track *track)
{
	emit_track(ctx, track);
}

/* view sink: a span opens (name, category, args, flags). */
static void sink_begin(void *ctx, const weft__view_track *track, uint64_t time,
		       const weft__view_item *item)
{
	emit_event(ctx, track, time, TYPE_BEGIN, item, 1, 1);
}

/* view sink: the innermost span closes (the LEAVE's args, the flags). */
static void sink_end(void *ctx, const weft__view_track *track, uint64_t time,
		     const weft__view_item *item)
{
	static const weft__view_item none = { 0 };

	emit_event(ctx, track, time, TYPE_END, item != NULL ? item : &none, 0, 1);
}

/* view sink: a complete span, as a begin (with everything) and an end. */
static void sink_complete(void *ctx, const weft__view_track *track, uint64_t time,
			  uint64_t end, const weft__view_item *item)
{
	emit_event(ctx, track, time, TYPE_BEGIN, item, 1, 1);
	emit_event(ctx, track, end, TYPE_END, item, 0, 0);
}

/* view sink: an instant (name, category, args, flags). */
static void sink_instant(void *ctx, const weft__view_track *track, uint64_t time,
			 const weft__view_item *item)
{
	emit_event(ctx, track, time, TYPE_INSTANT, item, 1, 1);
}

/* view sink: a value of a counter track. */
static void sink_counter(void *ctx, const weft__view_track *track, uint64_t time,
			 double value)
{
	emit_counter(ctx, track, time, value);
}

/* ---- Life cycle -------------------------------------------------------------------- */

/*
 * The buffers and tables of a new writer (the output buffer: 1 MiB; in
 * background mode two buffers of a chunk and its slack); 0 or
 * WEFT_ENOMEM (message set).
 */
static int writer_setup(weft__perfetto_writer *w, int fd, const weft__perfetto_options *o)
{
	int rc = o != NULL && o->background
		 ? weft__bg_output_start(&w->bg, fd, o->write_behind, CHUNK + CHUNK_SLACK) : 0;

	if (rc == 0)
		rc = weft__outbuf_init(&w->out, fd, w->bg.running ? CHUNK + CHUNK_SLACK :
				       WEFT__OUTBUF_DEFAULT_SIZE);
	if (rc < 0)
		return rc;
	for (int k = 0; k < 3; k++)
		if (table_init(&w->tables[k], INITIAL_SLOTS) < 0)
			goto nomem;
	w->pending = malloc(INITIAL_PENDING * sizeof *w->pending);
	if (w->pending == NULL)
		goto nomem;
	w->pending_cap = INITIAL_PENDING;
	return 0;
nomem:
	return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET,
			   "cannot allocate the Perfetto writer's intern tables");
}

/* A writer (see perfetto.h), its sink's callbacks set. */
int weft__perfetto_writer_create_with(int fd, const weft__perfetto_options *options,
				      weft__perfetto_writer **out)
{
	weft__perfetto_writer *w = calloc(1, sizeof *w);

	*out = NULL;
	if (w == NULL)
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET,
				   "cannot allocate the Perfetto writer");
	int rc = writer_setup(w, fd, options);
	if (rc < 0) {
		weft__perfetto_writer_free(w);
		return rc;
	}
	w->intern_limit = WEFT__PERFETTO_INTERN_LIMIT;
	w->clear_next = 1;
	weft__perfetto_writer_set_ids(w, WEFT__PERFETTO_SEQUENCE_ID, WEFT__PERFETTO_UUID_BASE);
	w->sink.ctx = w;
	w->sink.track = sink_track;
	w->sink.begin = sink_begin;
	w->sink.end = sink_end;
	w->sink.complete = sink_complete;
	w->sink.instant = sink_instant;
	w->sink.counter = sink_counter;
	*out = w;
	return 0;
}

/* Writes inline (no writer thread): the best without a final fsync. */
int weft__perfetto_writer_create(int fd, weft__perfetto_writer **out)
{
	return weft__perfetto_writer_create_with(fd, NULL, out);
}

/* The sink whose ctx is the writer. */
const weft__view_sink *weft__perfetto_writer_sink(weft__perfetto_writer *w)
{
	return &w->sink;
}

/* The sequence id and uuid base, the sequence id field encoded once. */
void weft__perfetto_writer_set_ids(weft__perfetto_writer *w, uint32_t sequence_id,
				   uint64_t uuid_base)
{
	w->uuid_base = uuid_base;
	w->sequence_len = (size_t)(put_uint_field(w->sequence_field, P_SEQUENCE_ID, sequence_id) -
				   w->sequence_field);
}

/* The memory bound of the intern tables (checked before each packet). */
void weft__perfetto_writer_set_intern_limit(weft__perfetto_writer *w, size_t bytes)
{
	w->intern_limit = bytes;
}

/* A copy of the counts. */
void weft__perfetto_writer_stats(const weft__perfetto_writer *w, weft__perfetto_stats *out)
{
	*out = w->stats;
}

/*
 * Writes out what is buffered: the writer thread's last buffer first,
 * then the rest. A failed write wins over a dropped event (both leave
 * the output incomplete; the write error says more).
 */
int weft__perfetto_writer_finish(weft__perfetto_writer *w)
{
	int rc = weft__bg_output_stop(&w->bg);

	if (rc == 0)
		rc = weft__outbuf_flush(&w->out);
	if (rc < 0)
		return rc;
	if (w->nomem)
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET,
				   "out of memory: some events were left out of the Perfetto trace");
	return 0;
}

/*
 * Releases everything; buffered bytes are dropped (a buffer the writer
 * thread holds is still written: the thread is stopped first).
 */
void weft__perfetto_writer_free(weft__perfetto_writer *w)
{
	if (w == NULL)
		return;
	weft__bg_output_free(&w->bg);
	weft__outbuf_destroy(&w->out);
	for (int k = 0; k < 3; k++)
		free(w->tables[k].slots);
	arena_free(w);
	free(w->pending);
	free(w->arg_iids);
	free(w->scratch);
	free(w->tracks);
	free(w);
}
