/* SPDX-License-Identifier: MIT */
/*
 * formats/heph/heph_packet.c - one Heph packet at a time: framing (magic
 * and size), validation of event packets (every length inside the packet,
 * UTF-8 text, known attribute types) and the typed fields of an event.
 *
 * Every check names the byte offset of the problem, so that a user can
 * look at the file with a hex editor and see what the reader saw.
 */
#include <string.h>

#include "formats/heph/heph_internal.h"

/* Width of one bare value of a scalar attribute type; 0 for strings. */
static uint32_t type_width(uint8_t type)
{
	return type == HEPH_TYPE_STR ? 0 : 8;
}

/* 1 for the element types an attribute may have. */
static int type_known(uint8_t type)
{
	return type >= HEPH_TYPE_U64 && type <= HEPH_TYPE_STR;
}

/*
 * The `n` bytes at `offset`: straight from the current mapping when it
 * holds them (nearly every packet of a pass), else through the window.
 */
static inline const uint8_t *mapped_bytes(weft_mapfile *mf, uint64_t offset, uint64_t n)
{
	uint64_t at = offset - mf->map_start;
	if (mf->map != NULL && offset >= mf->map_start && at <= mf->map_len &&
	    n <= mf->map_len - at)
		return mf->map + at;
	return weft__mapfile_get(mf, offset, n);
}

heph_frame_status weft__heph_frame(weft_mapfile *mf, uint64_t offset, uint64_t end,
				   const uint8_t **packet, uint32_t *size)
{
	if (offset >= end)
		return HEPH_FRAME_END;
	if (end - offset < HEPH_FRAME_SIZE) {
		weft__error(WEFT_ETRUNCATED, mf->name, offset,
			    "expected a packet header of 8 bytes, the file ends after %llu",
			    (unsigned long long)(end - offset));
		return HEPH_FRAME_TRUNCATED;
	}
	const uint8_t *p = mapped_bytes(mf, offset, HEPH_FRAME_SIZE);
	if (p == NULL)
		return HEPH_FRAME_BROKEN;
	uint32_t magic = heph_be32(p);
	uint32_t n = heph_be32(p + 4);
	uint32_t fixed;
	if (magic == HEPH_EVENT_MAGIC)
		fixed = HEPH_EVENT_FIXED_SIZE;
	else if (magic == HEPH_META_MAGIC)
		fixed = HEPH_META_FIXED_SIZE;
	else {
		weft__error(WEFT_EFORMAT, mf->name, offset,
			    "expected a packet magic (0xC1FC1FB7 event or 0x75D11D4D "
			    "metadata), found 0x%08X", magic);
		return HEPH_FRAME_BROKEN;
	}
	if (n < fixed) {
		weft__error(WEFT_EFORMAT, mf->name, offset + 4,
			    "packet size %u is smaller than the %u fixed bytes of a%s packet",
			    n, fixed, magic == HEPH_EVENT_MAGIC ? "n event" : " metadata");
		return HEPH_FRAME_BROKEN;
	}
	if (n > end - offset) {
		weft__error(WEFT_ETRUNCATED, mf->name, offset + 4,
			    "packet size %u is larger than the %llu bytes left in the file",
			    n, (unsigned long long)(end - offset));
		return HEPH_FRAME_TRUNCATED;
	}
	p = mapped_bytes(mf, offset, n);
	if (p == NULL)
		return HEPH_FRAME_BROKEN;
	*packet = p;
	*size = n;
	return magic == HEPH_EVENT_MAGIC ? HEPH_FRAME_EVENT : HEPH_FRAME_META;
}

/* The size of the packet whose header is at p; 0 when it is none. */
static uint32_t header_size(const uint8_t *p)
{
	uint32_t magic = heph_be32(p), n = heph_be32(p + 4);
	uint32_t fixed = magic == HEPH_EVENT_MAGIC ? HEPH_EVENT_FIXED_SIZE :
			 magic == HEPH_META_MAGIC ? HEPH_META_FIXED_SIZE : 0;
	return fixed != 0 && n >= fixed ? n : 0;
}

/*
 * 1 when a packet starts at `q`: its header frames a packet that ends the
 * file exactly or is followed by another header (a magic inside an
 * attribute value seldom does both).
 */
static int packet_starts_at(weft_mapfile *mf, uint64_t q, uint64_t end)
{
	const uint8_t *p = weft__mapfile_get(mf, q, HEPH_FRAME_SIZE);
	uint32_t n = p != NULL ? header_size(p) : 0;
	if (n == 0 || n > end - q)
		return 0;
	if (n == end - q)
		return 1;
	if (end - q - n < HEPH_FRAME_SIZE)
		return 0;
	p = weft__mapfile_get(mf, q + n, HEPH_FRAME_SIZE);
	return p != NULL && header_size(p) != 0;
}

/* weft__start_probe of Heph: a packet header that frames (see above). */
static int packet_probe(void *ctx, weft_mapfile *mf, uint64_t at, const unsigned char *p)
{
	uint32_t magic = heph_be32(p);
	return (magic == HEPH_EVENT_MAGIC || magic == HEPH_META_MAGIC) &&
	       packet_starts_at(mf, at, *(const uint64_t *)ctx);
}

int weft__heph_packet_after(weft_mapfile *mf, uint64_t from, uint64_t end, uint64_t *at)
{
	return weft__find_forward(mf, from, end, HEPH_FRAME_SIZE, packet_probe, &end, at);
}

/* Cursor over the variable part of a packet, for the validators. */
typedef struct packet_walk {
	const uint8_t *base;  /* packet start */
	uint32_t pos, size;
	const char *file;
	uint64_t offset;      /* packet offset in the file */
} packet_walk;

/* Fails with the absolute offset of `pos` in the packet. */
#define WALK_FAIL(w, at, ...) \
	weft__error(WEFT_EFORMAT, (w)->file, (w)->offset + (at), __VA_ARGS__)

/*
 * Length of the valid UTF-8 prefix of s[0, n): ASCII, which names and
 * descriptions nearly always are, is checked a word at a time, the last
 * word overlapping the one before (no byte loop for the tail); the rest
 * goes through the core validator from the first non-ASCII byte.
 */
static inline size_t utf8_prefix(const uint8_t *s, size_t n)
{
	const uint64_t high = 0x8080808080808080ull;
	size_t i = 0;
	if (n >= 8) {
		uint64_t word;
		for (; n - i > 8; i += 8) {
			memcpy(&word, s + i, 8);
			if (word & high)
				goto slow;
		}
		memcpy(&word, s + n - 8, 8);
		if (!(word & high))
			return n;
	} else if (n >= 4) {
		uint32_t a, b;
		memcpy(&a, s, 4);
		memcpy(&b, s + n - 4, 4);
		if (!((a | b) & 0x80808080u))
			return n;
	}
slow:
	while (i < n && s[i] < 0x80)
		i++;
	return i == n ? n : i + weft__utf8_valid_prefix(s + i, n - i);
}

/* Reports why the string at the walk position is not acceptable. */
static __attribute__((noinline, cold)) int string_fail(const packet_walk *w,
							 const char *what)
{
	if (w->size - w->pos < 2)
		return WALK_FAIL(w, w->pos, "expected the 2-byte length of the %s, "
				 "the packet ends after %u bytes", what, w->size - w->pos);
	uint16_t n = heph_be16(w->base + w->pos);
	if (n > w->size - w->pos - 2)
		return WALK_FAIL(w, w->pos, "%s of %u bytes runs past the packet end "
				 "(%u bytes left)", what, n, w->size - w->pos - 2);
	const uint8_t *text = w->base + w->pos + 2;
	size_t valid = utf8_prefix(text, n);
	return WALK_FAIL(w, w->pos + 2 + (uint32_t)valid,
			 "expected UTF-8 in the %s, found byte 0x%02X", what, text[valid]);
}

/*
 * Reads a u16-length string of UTF-8 at the walk position (`what` names
 * it for the message). Sets *s and *len, and moves past it. Inline: the
 * description of every event goes through here; the messages do not.
 */
static inline int walk_string(packet_walk *w, const char *what, const uint8_t **s,
			      uint16_t *len)
{
	uint32_t left = w->size - w->pos;
	if (left >= 2) {
		uint16_t n = heph_be16(w->base + w->pos);
		const uint8_t *text = w->base + w->pos + 2;
		if (n <= left - 2 && utf8_prefix(text, n) == n) {
			*s = text;
			*len = n;
			w->pos += 2u + n;
			return 0;
		}
	}
	return string_fail(w, what);
}

/* Skips `count` bare values of `type` (an array body or one scalar). */
static int walk_values(packet_walk *w, uint8_t type, uint32_t count)
{
	uint32_t width = type_width(type);
	if (width != 0) {
		uint64_t need = (uint64_t)count * width;
		if (need > w->size - w->pos)
			return WALK_FAIL(w, w->pos, "expected %llu bytes of values, "
					 "the packet has %u left",
					 (unsigned long long)need, w->size - w->pos);
		w->pos += (uint32_t)need;
		return 0;
	}
	for (uint32_t i = 0; i < count; i++) {
		const uint8_t *s;
		uint16_t n;
		int rc = walk_string(w, "string value", &s, &n);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* One attribute: name, type byte, value or array. */
static int walk_attribute(packet_walk *w)
{
	const uint8_t *name = NULL;
	uint16_t name_len = 0;
	int rc = walk_string(w, "attribute name", &name, &name_len);
	if (rc < 0)
		return rc;
	if (w->pos >= w->size)
		return WALK_FAIL(w, w->pos, "expected the type byte of attribute '%.*s', "
				 "the packet ends", (int)name_len, (const char *)name);
	uint32_t type_at = w->pos;
	uint8_t type = w->base[w->pos++];
	uint8_t element = type & (uint8_t)~HEPH_TYPE_ARRAY;
	if (!type_known(element))
		return WALK_FAIL(w, type_at, "unknown attribute type 0x%02X for '%.*s' "
				 "(expected 0x01-0x04, or one of them | 0x80 for an array%s)",
				 type, (int)name_len, (const char *)name,
				 type == HEPH_TYPE_ARRAY ? "; 0x80 alone is invalid" : "");
	if (!(type & HEPH_TYPE_ARRAY))
		return walk_values(w, element, 1);
	if (w->size - w->pos < 2)
		return WALK_FAIL(w, w->pos, "expected the 2-byte length of array '%.*s', "
				 "the packet ends", (int)name_len, (const char *)name);
	uint16_t count = heph_be16(w->base + w->pos);
	w->pos += 2;
	return walk_values(w, element, count);
}

int weft__heph_parse_event(const uint8_t *packet, uint32_t size, const char *file,
			   uint64_t offset, heph_event_packet *out)
{
	packet_walk w = { packet, HEPH_EVENT_FIXED_SIZE - 2, size, file, offset };
	int rc;

	heph_decode_fixed(packet, size, out);
	rc = walk_string(&w, "description", &out->desc, &out->desc_len);
	if (rc < 0)
		return rc;
	out->attrs = packet + w.pos;
	out->attrs_size = size - w.pos;
	while (w.pos < w.size)
		if ((rc = walk_attribute(&w)) < 0)
			return rc;
	return 0;
}

int weft__heph_decode_event(const uint8_t *packet, uint32_t size, const char *file,
			    uint64_t offset, heph_event_packet *out)
{
	uint32_t at = HEPH_EVENT_FIXED_SIZE - 2;

	if (heph_decode_event_fast(packet, size, out) == 0)
		return 0;
	return weft__error(WEFT_EFORMAT, file, offset + at,
			   "description of %u bytes runs past the packet end "
			   "(%u bytes left)", heph_be16(packet + at), size - HEPH_EVENT_FIXED_SIZE);
}

int weft__heph_read_event(const heph_data *d, size_t *next_bad, const uint8_t *packet,
			  uint32_t size, uint64_t offset, heph_event_packet *out)
{
	if (heph_scan_accepted(d, next_bad, offset))
		return weft__heph_decode_event(packet, size, d->name, offset, out);
	return weft__heph_parse_event(packet, size, d->name, offset, out);
}

int weft__heph_parse_meta(const uint8_t *packet, uint32_t size, const char *file,
			  uint64_t offset, uint64_t *epoch, const uint8_t **name,
			  uint16_t *name_len)
{
	packet_walk w = { packet, HEPH_FRAME_SIZE, size, file, offset };
	int rc = walk_string(&w, "option name", name, name_len);
	if (rc < 0)
		return rc;
	if (*name_len != 5 || memcmp(*name, "epoch", 5) != 0)
		return 0;
	if (size - w.pos != 8)
		return WALK_FAIL(&w, w.pos, "expected an 8-byte epoch value, found %u bytes",
				 size - w.pos);
	*epoch = heph_be64(packet + w.pos);
	return 1;
}

int weft__heph_event_times(const heph_event_packet *ev, uint64_t epoch,
			   const char *file, uint64_t offset, uint64_t *start,
			   uint64_t *end)
{
	uint64_t e = ev->end < ev->start ? ev->start : ev->end;
	if (ev->start > UINT64_MAX - epoch || e > UINT64_MAX - epoch)
		return weft__error(WEFT_EFORMAT, file, offset + 24,
				   "event times %llu..%llu overflow 64 bits with the epoch %llu",
				   (unsigned long long)ev->start, (unsigned long long)ev->end,
				   (unsigned long long)epoch);
	*start = epoch + ev->start;
	*end = epoch + e;
	return 0;
}

/* ---- Typed fields ------------------------------------------------------------ */

static const weft_type scalar_types[] = {
	[HEPH_TYPE_U64] = WEFT_TYPE_U64,
	[HEPH_TYPE_I64] = WEFT_TYPE_I64,
	[HEPH_TYPE_F64] = WEFT_TYPE_F64,
	[HEPH_TYPE_STR] = WEFT_TYPE_STR,
};

/*
 * Fills one field from the attribute at a->base + a->pos (already
 * validated when the event was delivered) and moves past it.
 */
static int field_from_attribute(packet_walk *a, weft_field *f)
{
	const uint8_t *p = a->base + a->pos;
	uint16_t name_len = heph_be16(p);
	uint8_t type = p[2 + name_len];
	uint8_t element = type & (uint8_t)~HEPH_TYPE_ARRAY;
	const uint8_t *value = p + 3 + name_len;

	memset(f, 0, sizeof *f);
	f->name = (const char *)p + 2;
	f->name_len = name_len;
	f->type = scalar_types[element];
	f->big_endian = 1;
	a->pos += 3u + name_len;
	if (type & HEPH_TYPE_ARRAY) {
		uint16_t count = heph_be16(value);
		packet_walk body = *a;
		body.pos += 2;
		(void)walk_values(&body, element, count);
		f->is_array = 1;
		f->count = count;
		f->raw = value + 2;
		f->raw_size = body.pos - a->pos - 2;
		a->pos = body.pos;
		return 0;
	}
	if (element == HEPH_TYPE_STR) {
		f->count = 1;
		f->v.s.len = heph_be16(value);
		f->v.s.ptr = (const char *)value + 2;
		a->pos += 2u + (uint32_t)f->v.s.len;
		return 0;
	}
	a->pos += 8;
	return weft__field_set_scalar(f, f->type, value, 1);
}

/*
 * The attributes of a delivered event (its payload) as fields. The reader
 * validated them, but the payload is walked defensively anyway: a caller
 * may hand in an event it built itself.
 */
int weft__heph_event_fields(const weft_trace *trace, const weft_event *event,
			    weft_field *out, size_t cap)
{
	/* trace NULL: the scan's helper thread, whose kinds need no path */
	packet_walk check = { event->payload, 0, event->payload_size,
			      trace != NULL ? trace->path : NULL, event->offset };
	int n = 0;

	while (check.pos < check.size) {
		packet_walk at = check;
		int rc = walk_attribute(&check);
		if (rc < 0)
			return rc;
		if ((size_t)n < cap)
			field_from_attribute(&at, &out[n]);
		n++;
	}
	return n;
}
