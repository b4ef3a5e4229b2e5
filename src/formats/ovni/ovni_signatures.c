/*
 * formats/ovni/ovni_signatures.c - the event signatures of the ovni 1.14
 * models (generated from data/ovni-event-signatures.tsv at build time) and
 * the decoding of payloads into typed, named fields.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "formats/ovni/ovni_internal.h"

static const weft_ovni_signature signatures[] = {
#include "ovni_signatures.inc"
};
#define SIGNATURE_COUNT (sizeof signatures / sizeof signatures[0])

/* A field of a signature, parsed once from its "u32 name, str x" text. */
#define MAX_FIELDS 8
typedef struct compiled_field {
	weft_type type;
	const char *name; /* points into the signature's fields text */
	uint32_t name_len;
	uint32_t size;    /* bytes of a non-string field */
} compiled_field;

typedef struct compiled_signature {
	compiled_field fields[MAX_FIELDS];
	int count;
	uint32_t fixed_size; /* bytes of the non-string fields */
	int has_str;
} compiled_signature;

/*
 * Direct table from a 3-character ASCII MCV (7 bits a character) to the
 * signature index + 1 (0: unknown). 4 MiB of zeroed static memory, of
 * which only the pages of the MCVs in the table are ever touched: one load
 * per event instead of a hash probe.
 */
uint16_t weft__ovni_signature_table[OVNI_SIGNATURE_TABLE_SIZE];
#define table weft__ovni_signature_table
static compiled_signature compiled[SIGNATURE_COUNT];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

/* Table slot of an MCV, or -1 when a character is not 7-bit ASCII. */
static inline int32_t mcv_key(const unsigned char *m)
{
	if ((m[0] | m[1] | m[2]) & 0x80)
		return -1;
	return (int32_t)(((uint32_t)m[0] << 14) | ((uint32_t)m[1] << 7) | m[2]);
}

/* Maps "u32" to WEFT_TYPE_U32 etc.; 0 when unknown. */
static weft_type parse_type(const char *s, size_t n)
{
	static const struct { const char *name; weft_type type; } types[] = {
		{"u8", WEFT_TYPE_U8}, {"u16", WEFT_TYPE_U16}, {"u32", WEFT_TYPE_U32},
		{"u64", WEFT_TYPE_U64}, {"i8", WEFT_TYPE_I8}, {"i16", WEFT_TYPE_I16},
		{"i32", WEFT_TYPE_I32}, {"i64", WEFT_TYPE_I64}, {"str", WEFT_TYPE_STR},
	};
	for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
		if (strlen(types[i].name) == n && memcmp(types[i].name, s, n) == 0)
			return types[i].type;
	return (weft_type)0;
}

static uint32_t type_size(weft_type t)
{
	switch (t) {
	case WEFT_TYPE_U8: case WEFT_TYPE_I8: return 1;
	case WEFT_TYPE_U16: case WEFT_TYPE_I16: return 2;
	case WEFT_TYPE_U32: case WEFT_TYPE_I32: return 4;
	default: return 8;
	}
}

/* Parses "u32 taskid, str label" into typed fields. */
static void compile_signature(const weft_ovni_signature *sig, compiled_signature *c)
{
	const char *s = sig->fields;
	memset(c, 0, sizeof *c);
	while (*s != '\0' && c->count < MAX_FIELDS) {
		while (*s == ' ' || *s == ',')
			s++;
		const char *t = s;
		while (*s != '\0' && *s != ' ')
			s++;
		weft_type type = parse_type(t, (size_t)(s - t));
		while (*s == ' ')
			s++;
		const char *n = s;
		while (*s != '\0' && *s != ',')
			s++;
		if (type == 0 || s == n)
			break;
		compiled_field *f = &c->fields[c->count++];
		f->type = type;
		f->name = n;
		f->name_len = (uint32_t)(s - n);
		f->size = type == WEFT_TYPE_STR ? 0 : type_size(type);
		if (type == WEFT_TYPE_STR)
			c->has_str = 1;
		else
			c->fixed_size += f->size;
	}
}

/* Builds the lookup table once (first lookup, any thread). */
static void table_build(void)
{
	for (size_t i = 0; i < SIGNATURE_COUNT; i++) {
		int32_t key = mcv_key((const unsigned char *)signatures[i].mcv);
		/* The TSV lists a few events twice: the first one counts. */
		if (key >= 0 && table[key] == 0)
			table[key] = (uint16_t)(i + 1);
		compile_signature(&signatures[i], &compiled[i]);
	}
}

/* Set once the table is built: later lookups skip pthread_once. */
static _Atomic int table_ready;

/* Index of the signature of a 3-byte MCV, or -1. */
static inline int signature_index(const unsigned char *mcv)
{
	if (!atomic_load_explicit(&table_ready, memory_order_acquire)) {
		pthread_once(&table_once, table_build);
		atomic_store_explicit(&table_ready, 1, memory_order_release);
	}
	int32_t key = mcv_key(mcv);
	return key < 0 ? -1 : (int)table[key] - 1;
}

int weft__ovni_signature_index(const unsigned char *mcv)
{
	return signature_index(mcv);
}

size_t weft_ovni_signature_count(void)
{
	return SIGNATURE_COUNT;
}

const weft_ovni_signature *weft_ovni_signature_at(size_t index)
{
	return index < SIGNATURE_COUNT ? &signatures[index] : NULL;
}

const weft_ovni_signature *weft_ovni_signature_find(const char *mcv)
{
	if (mcv == NULL || strlen(mcv) < 3)
		return NULL;
	int i = signature_index((const unsigned char *)mcv);
	return i < 0 ? NULL : &signatures[i];
}

/*
 * weft__field_set_scalar() for the integer types of the signatures
 * (inlined: one call less per field). Sets type and value.
 */
static inline void set_scalar(weft_field *o, weft_type type, const uint8_t *raw,
			      int big_endian)
{
	o->type = type;
	switch (type) {
	case WEFT_TYPE_U8: o->v.u = raw[0]; break;
	case WEFT_TYPE_I8: o->v.i = (int8_t)raw[0]; break;
	case WEFT_TYPE_U16: case WEFT_TYPE_I16: {
		uint16_t v;
		memcpy(&v, raw, 2);
		if (big_endian)
			v = (uint16_t)((v >> 8) | (v << 8));
		if (type == WEFT_TYPE_I16)
			o->v.i = (int16_t)v;
		else
			o->v.u = v;
		break;
	}
	case WEFT_TYPE_U32: o->v.u = ovni_load32(raw, big_endian); break;
	case WEFT_TYPE_I32: o->v.i = (int32_t)ovni_load32(raw, big_endian); break;
	case WEFT_TYPE_U64: o->v.u = ovni_load64(raw, big_endian); break;
	case WEFT_TYPE_I64: o->v.i = (int64_t)ovni_load64(raw, big_endian); break;
	default: weft__field_set_scalar(o, type, raw, big_endian); break;
	}
}

/*
 * Decodes the payload (normal events) or the jumbo data (jumbo events) by
 * the event's signature. The sizes must match the signature exactly: a
 * mismatch is reported rather than guessed around.
 */
int weft__ovni_event_fields(const weft_trace *trace, const weft_event *ev,
			    weft_field *out, size_t cap)
{
	if (ev->code_len != 3)
		return 0;
	int i = signature_index((const unsigned char *)ev->code);
	if (i < 0)
		return 0;
	const compiled_signature *c = &compiled[i];
	const weft_stream_info *s = &trace->streams[ev->stream];
	int jumbo = (ev->flags & WEFT_EVENT_JUMBO) != 0;
	const uint8_t *p = jumbo ? ev->data : ev->payload;
	uint64_t size = jumbo ? ev->data_size : ev->payload_size;
	int big_endian = (ev->flags & WEFT_EVENT_BIG_ENDIAN) != 0;
	if (jumbo != signatures[i].jumbo)
		return weft__error(WEFT_EFORMAT, s->file, ev->offset,
				   "%s is %sa jumbo event in the %s model, found %s",
				   signatures[i].mcv, signatures[i].jumbo ? "" : "not ",
				   signatures[i].model, jumbo ? "a jumbo event" : "a normal event");
	if (c->has_str ? size < c->fixed_size + 1 : size != c->fixed_size)
		return weft__error(WEFT_EFORMAT, s->file, ev->offset,
				   "%s expects %s%u payload bytes (%s), found %llu",
				   signatures[i].mcv, c->has_str ? "at least " : "",
				   c->fixed_size + (uint32_t)c->has_str,
				   c->count ? signatures[i].fields : "no fields",
				   (unsigned long long)size);
	uint64_t pos = 0;
	weft_field spare;
	for (int k = 0; k < c->count; k++) {
		const compiled_field *f = &c->fields[k];
		weft_field *o = (size_t)k < cap ? &out[k] : &spare;
		o->name = f->name;
		o->name_len = f->name_len;
		o->is_array = 0;
		o->count = 1;
		o->raw = NULL;
		o->raw_size = 0;
		o->big_endian = big_endian;
		if (f->type == WEFT_TYPE_STR) {
			const uint8_t *nul = memchr(p + pos, '\0', size - pos);
			if (nul == NULL)
				return weft__error(WEFT_EFORMAT, s->file, ev->offset,
						   "%s: string field %.*s is not NUL-terminated",
						   signatures[i].mcv, (int)f->name_len, f->name);
			o->type = WEFT_TYPE_STR;
			o->v.s.ptr = (const char *)p + pos;
			o->v.s.len = (size_t)(nul - (p + pos));
			pos += o->v.s.len + 1;
			continue;
		}
		if (pos + f->size > size)
			return weft__error(WEFT_EFORMAT, s->file, ev->offset,
					   "%s: field %.*s past the payload end",
					   signatures[i].mcv, (int)f->name_len, f->name);
		set_scalar(o, f->type, p + pos, big_endian);
		pos += f->size;
	}
	return c->count;
}
