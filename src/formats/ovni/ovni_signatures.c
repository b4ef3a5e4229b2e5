/* SPDX-License-Identifier: MIT */
/*
 * formats/ovni/ovni_signatures.c - the event signatures of the ovni 1.14
 * models (generated from data/ovni-event-signatures.tsv at build time) and
 * the decoding of payloads into typed, named fields.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/ovni/ovni_internal.h"

static const weft_ovni_signature signatures[] = {
#include "ovni_signatures.inc"
};
#define SIGNATURE_COUNT (sizeof signatures / sizeof signatures[0])
_Static_assert(sizeof signatures / sizeof signatures[0] <= OVNI_MAX_SIGNATURES,
	       "OVNI_MAX_SIGNATURES is too small for the signature table");

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
	/* A jumbo event of one fixed-size field (nOS-V's VWC, "i64 value"):
	 * the data is an array of it, one element per counter, as ovniemu
	 * reads it (data size / element size of them). */
	int array;
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

/* Maps "u32" to WEFT_TYPE_U32 etc. (integers and str, what ovni names); 0 when unknown. */
static weft_type parse_type(const char *s, size_t n)
{
	weft_type t = weft__type_from_name(s, n);

	if ((t >= WEFT_TYPE_U8 && t <= WEFT_TYPE_I64) || t == WEFT_TYPE_STR)
		return t;
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
	c->array = sig->jumbo && c->count == 1 && !c->has_str;
}

/*
 * The flags byte an event of this signature has when its payload is
 * exactly what the signature names (see weft__ovni_signature_flags).
 */
static unsigned expected_flags(const weft_ovni_signature *sig, const compiled_signature *c)
{
	if (c->array)
		return OVNI_FLAGS_ALWAYS_CHECK; /* the data size says how many */
	if (sig->jumbo)
		return OVNI_FLAG_JUMBO | 0x03u;
	if (c->has_str || c->fixed_size == 1 || c->fixed_size > 16)
		return OVNI_FLAGS_ALWAYS_CHECK; /* no normal event can match */
	return c->fixed_size ? c->fixed_size - 1 : 0;
}

/* Builds the lookup table once (first lookup, any thread). */
static void table_build(void)
{
	for (size_t i = 0; i < SIGNATURE_COUNT; i++) {
		int32_t key = mcv_key((const unsigned char *)signatures[i].mcv);
		/* The TSV lists a few events twice: the first one counts. */
		compile_signature(&signatures[i], &compiled[i]);
		if (key >= 0 && table[key] == 0)
			table[key] = (uint16_t)((i + 1) | (unsigned)expected_flags(
				&signatures[i], &compiled[i]) << OVNI_SIG_INDEX_BITS);
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
	return key < 0 ? -1 : (int)(table[key] & OVNI_SIG_INDEX_MASK) - 1;
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

/* Fills the parts of a field every decoded field shares. */
static void field_init(weft_field *o, const compiled_field *f, int big_endian)
{
	o->name = f->name;
	o->name_len = f->name_len;
	o->is_array = 0;
	o->count = 1;
	o->raw = NULL;
	o->raw_size = 0;
	o->big_endian = big_endian;
}

/* The bytes after the named fields, as the field "extra". */
static void extra_field(weft_field *o, const uint8_t *p, uint64_t size)
{
	static const char name[] = OVNI_EXTRA_FIELD;
	o->name = name;
	o->name_len = sizeof name - 1;
	o->type = WEFT_TYPE_BYTES;
	o->is_array = 0;
	o->count = 1;
	o->v.s.ptr = (const char *)p;
	o->v.s.len = (size_t)size;
	o->raw = NULL;
	o->raw_size = 0;
	o->big_endian = 0;
}

/* The jumbo data of an array signature (VWC) as one array field. */
static int decode_array(const compiled_signature *c, const weft_ovni_signature *sig,
			const weft_event *ev, const char *file, weft_field *out, size_t cap)
{
	const compiled_field *f = &c->fields[0];
	uint64_t n = ev->data_size / f->size;
	if (n == 0 || n > UINT32_MAX)
		return weft__error(WEFT_EFORMAT, file, ev->offset,
				   "%s expects an array of %s (%u bytes each), found %llu "
				   "data bytes", sig->mcv, sig->fields, f->size,
				   (unsigned long long)ev->data_size);
	int big_endian = (ev->flags & WEFT_EVENT_BIG_ENDIAN) != 0;
	uint64_t rest = ev->data_size - n * f->size;
	if (cap > 0) {
		field_init(&out[0], f, big_endian);
		out[0].type = f->type;
		out[0].is_array = 1;
		out[0].count = (uint32_t)n;
		out[0].raw = ev->data;
		out[0].raw_size = (size_t)(n * f->size);
	}
	if (rest > 0 && cap > 1)
		extra_field(&out[1], ev->data + n * f->size, rest);
	return rest > 0 ? 2 : 1;
}

/*
 * Decodes the payload (normal events) or the jumbo data (jumbo events) by
 * the event's signature: the fields it names, in order, then the bytes
 * that follow them, if any, as the field "extra" (real runtimes write
 * longer payloads than the 1.14 table says: nOS-V's 8-byte OCn). A
 * signature that names no fields gives none (the bytes are shown raw); a
 * jumbo event of one fixed-size field is an array. A payload too short for
 * the named fields is reported rather than guessed around.
 */
int weft__ovni_event_fields(const weft_trace *trace, const weft_event *ev,
			    weft_field *out, size_t cap)
{
	if (ev->code_len != 3)
		return 0;
	int i = signature_index((const unsigned char *)ev->code);
	if (i < 0 || compiled[i].count == 0)
		return 0;
	const compiled_signature *c = &compiled[i];
	const char *file = trace->streams[ev->stream].file;
	int jumbo = (ev->flags & WEFT_EVENT_JUMBO) != 0;
	if (c->array && jumbo)
		return decode_array(c, &signatures[i], ev, file, out, cap);
	const uint8_t *p = jumbo ? ev->data : ev->payload;
	uint64_t size = jumbo ? ev->data_size : ev->payload_size;
	int big_endian = (ev->flags & WEFT_EVENT_BIG_ENDIAN) != 0;
	if (size < c->fixed_size + (uint32_t)c->has_str)
		return weft__error(WEFT_EFORMAT, file, ev->offset,
				   "%s expects %s%u payload bytes (%s), found %llu",
				   signatures[i].mcv, c->has_str ? "at least " : "",
				   c->fixed_size + (uint32_t)c->has_str,
				   signatures[i].fields, (unsigned long long)size);
	uint64_t pos = 0;
	weft_field spare;
	for (int k = 0; k < c->count; k++) {
		const compiled_field *f = &c->fields[k];
		weft_field *o = (size_t)k < cap ? &out[k] : &spare;
		field_init(o, f, big_endian);
		if (f->type == WEFT_TYPE_STR) {
			const uint8_t *nul = memchr(p + pos, '\0', size - pos);
			if (nul == NULL)
				return weft__error(WEFT_EFORMAT, file, ev->offset,
						   "%s: string field %.*s is not NUL-terminated",
						   signatures[i].mcv, (int)f->name_len, f->name);
			o->type = WEFT_TYPE_STR;
			o->v.s.ptr = (const char *)p + pos;
			o->v.s.len = (size_t)(nul - (p + pos));
			pos += o->v.s.len + 1;
			continue;
		}
		if (pos + f->size > size)
			return weft__error(WEFT_EFORMAT, file, ev->offset,
					   "%s: field %.*s past the payload end",
					   signatures[i].mcv, (int)f->name_len, f->name);
		set_scalar(o, f->type, p + pos, big_endian);
		pos += f->size;
	}
	if (pos == size)
		return c->count;
	if ((size_t)c->count < cap)
		extra_field(&out[c->count], p + pos, size - pos);
	return c->count + 1;
}

/*
 * Whether an event of signature i with these flags and `bytes` payload
 * bytes (jumbo: data bytes) has more than the signature names, or is a
 * jumbo event where the signature is not (or the reverse): 1 with the
 * explanation in msg, 0 when it matches, -1 when it is too short (an
 * error weft_event_fields() reports).
 */
int weft__ovni_layout_differs(int i, unsigned flags, uint64_t bytes, char *msg, size_t cap)
{
	const compiled_signature *c = &compiled[i];
	const weft_ovni_signature *sig = &signatures[i];
	int jumbo = (flags & OVNI_FLAG_JUMBO) != 0;
	uint32_t need = c->fixed_size + (uint32_t)c->has_str;
	const char *names = c->count ? sig->fields : "no fields";
	if (bytes < need)
		return -1;
	const char *what = jumbo ? "data" : "payload";
	if (jumbo != sig->jumbo) {
		snprintf(msg, cap, "%s is a %s event here (%llu %s bytes), a %s event "
			 "with %s in the ovni 1.14 %s model: %s; reported once per event "
			 "kind", sig->mcv, jumbo ? "jumbo" : "normal", (unsigned long long)bytes,
			 what, sig->jumbo ? "jumbo" : "normal", names, sig->model,
			 c->count ? "the fields it names are decoded, the other bytes kept raw" :
			 "the bytes are kept raw");
		return 1;
	}
	uint64_t named = c->array ? bytes - bytes % c->fields[0].size : need;
	if (c->array ? (bytes % c->fields[0].size == 0 && bytes > 0) : (c->has_str || bytes == need))
		return 0;
	if (c->count == 0)
		snprintf(msg, cap, "%s has %llu %s bytes, its ovni 1.14 signature has no "
			 "fields: the bytes are kept raw; reported once per event kind",
			 sig->mcv, (unsigned long long)bytes, what);
	else
		snprintf(msg, cap, "%s has %llu %s bytes, its ovni 1.14 signature names "
			 "%llu (%s): those fields are decoded, the other %llu bytes kept raw "
			 "(field \"" OVNI_EXTRA_FIELD "\"); reported once per event kind",
			 sig->mcv, (unsigned long long)bytes, what, (unsigned long long)named,
			 names, (unsigned long long)(bytes - named));
	return 1;
}

/* ---- Event kinds (weft/schema.h) --------------------------------------------------- */

/*
 * One kind per MCV of the table (the first of a duplicated one), with the
 * fields weft__ovni_event_fields() gives: the signature's, then "extra"
 * (the bytes past them, which some events have); built once, shared by
 * every ovni trace, never freed.
 */
static weft_event_schema kinds[SIGNATURE_COUNT];
static weft_field_schema kind_fields[SIGNATURE_COUNT * (MAX_FIELDS + 1)];
static char *kind_names;  /* the field names, NUL-terminated, one block */
static size_t kind_count;
static pthread_once_t kinds_once = PTHREAD_ONCE_INIT;

/* The role an event of the signature has on a timeline. */
static weft_event_role signature_role(const weft_ovni_signature *sig)
{
	if (strcmp(sig->role, "enter") == 0)
		return WEFT_ROLE_ENTER;
	return strcmp(sig->role, "leave") == 0 ? WEFT_ROLE_LEAVE : WEFT_ROLE_POINT;
}

/* The kind of signature i, its fields from *f on and names from *names on. */
static void kind_build(size_t i, weft_field_schema **f, char **names)
{
	const weft_ovni_signature *sig = &signatures[i];
	const compiled_signature *c = &compiled[i];
	int jumbo = sig->jumbo != 0;

	kinds[kind_count++] = (weft_event_schema){ sig->mcv, 0, signature_role(sig), sig->model,
		0, (size_t)c->count + (c->count > 0), *f, 0 };
	for (int k = 0; k < c->count; k++) {
		memcpy(*names, c->fields[k].name, c->fields[k].name_len);
		(*names)[c->fields[k].name_len] = '\0';
		*(*f)++ = (weft_field_schema){ *names, c->fields[k].type, c->array,
			c->array || c->fields[k].type == WEFT_TYPE_STR, jumbo };
		*names += c->fields[k].name_len + 1;
	}
	if (c->count > 0)
		*(*f)++ = (weft_field_schema){ OVNI_EXTRA_FIELD, WEFT_TYPE_BYTES, 0, 1, jumbo };
}

/* Builds the kinds once (after the signature table). */
static void kinds_build(void)
{
	size_t bytes = 1;
	signature_index((const unsigned char *)"OHx"); /* builds the table */
	for (size_t i = 0; i < SIGNATURE_COUNT; i++)
		bytes += strlen(signatures[i].fields) + 1;
	if ((kind_names = malloc(bytes)) == NULL)
		return;
	weft_field_schema *f = kind_fields;
	char *names = kind_names;
	for (size_t i = 0; i < SIGNATURE_COUNT; i++)
		if (signature_index((const unsigned char *)signatures[i].mcv) == (int)i)
			kind_build(i, &f, &names);
}

size_t weft__ovni_event_schemas(const weft_trace *trace, const weft_event_schema **out)
{
	(void)trace;
	pthread_once(&kinds_once, kinds_build);
	*out = kinds;
	return kind_count;
}
