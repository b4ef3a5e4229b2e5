/* SPDX-License-Identifier: MIT */
/*
 * outputs/convert_pallas_attrs.c - `weft convert -t pallas`: the attribute
 * list of one record: weft.code, weft.end, the decoded fields as typed
 * attributes and the stored bytes as u64 chunks, within Pallas's limits
 * (values and bytes per list).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "outputs/convert_pallas.h"
#include "util/strtab.h"

/* ---- Attribute lists --------------------------------------------------------------------- */

/*
 * 1 when one more value of `size` bytes fits the list while leaving room
 * for `keep_values` more values of `keep_bytes` bytes in all (a full list
 * would refuse the record).
 */
static int attrs_fit(const weft_pallas_attrs *a, size_t size, unsigned keep_values,
		     size_t keep_bytes)
{
	return a->count + 1u + keep_values <= WEFT_PALLAS_ATTRS_MAX &&
	       a->size + 6u + size + keep_bytes <= WEFT_PALLAS_ATTRS_BYTES;
}

/* The Pallas type of a scalar field, or -1 (arrays and bytes: the payload keeps them). */
static int field_type(const weft_field *f)
{
	if (f->is_array)
		return -1;
	switch (f->type) {
	case WEFT_TYPE_U8: case WEFT_TYPE_BOOL: return WEFT_PALLAS_TYPE_UINT8;
	case WEFT_TYPE_U16: return WEFT_PALLAS_TYPE_UINT16;
	case WEFT_TYPE_U32: return WEFT_PALLAS_TYPE_UINT32;
	case WEFT_TYPE_U64: return WEFT_PALLAS_TYPE_UINT64;
	case WEFT_TYPE_I8: return WEFT_PALLAS_TYPE_INT8;
	case WEFT_TYPE_I16: return WEFT_PALLAS_TYPE_INT16;
	case WEFT_TYPE_I32: return WEFT_PALLAS_TYPE_INT32;
	case WEFT_TYPE_I64: return WEFT_PALLAS_TYPE_INT64;
	case WEFT_TYPE_F32: return WEFT_PALLAS_TYPE_FLOAT;
	case WEFT_TYPE_F64: return WEFT_PALLAS_TYPE_DOUBLE;
	case WEFT_TYPE_STR: return WEFT_PALLAS_TYPE_STRING;
	default: return -1;
	}
}

/* Bytes of a value of Pallas type `type` (the scalar ones and string refs). */
static size_t type_size(int type)
{
	switch (type) {
	case WEFT_PALLAS_TYPE_UINT8: case WEFT_PALLAS_TYPE_INT8: return 1;
	case WEFT_PALLAS_TYPE_UINT16: case WEFT_PALLAS_TYPE_INT16: return 2;
	case WEFT_PALLAS_TYPE_UINT64: case WEFT_PALLAS_TYPE_INT64:
	case WEFT_PALLAS_TYPE_DOUBLE: return 8;
	default: return 4;
	}
}

int weft__pconv_string_value(conv *c, const char *s, size_t len, uint32_t *ref)
{
	str_table *t = &c->strings;
	if (len > STRING_VALUE_MAX || memchr(s, '\0', len) != NULL)
		return 0;
	if (t->cap > 0) {
		str_entry *e = weft__pconv_str_slot(t, s, (uint32_t)len, weft__hash_bytes(s, len));
		if (e->text != NULL) {
			*ref = e->ref;
			return 1;
		}
	}
	if (t->value_bytes + len > c->value_budget) {
		c->over_budget = 1;
		return 0;
	}
	c->interning_value = 1;
	int rc = weft__pconv_intern(c, s, (uint32_t)len, ref, NULL);
	c->interning_value = 0;
	if (rc < 0)
		return -1;
	t->value_bytes += len;
	return 1;
}

/* Appends the value of field `f` as attribute `ref` of Pallas type `type`. */
static int add_value(weft_pallas_attrs *a, uint32_t ref, int type, const weft_field *f,
		     uint32_t str)
{
	switch (type) {
	case WEFT_PALLAS_TYPE_UINT8: return weft_pallas_attrs_add_u8(a, ref, (uint8_t)f->v.u);
	case WEFT_PALLAS_TYPE_UINT16: return weft_pallas_attrs_add_u16(a, ref, (uint16_t)f->v.u);
	case WEFT_PALLAS_TYPE_UINT32: return weft_pallas_attrs_add_u32(a, ref, (uint32_t)f->v.u);
	case WEFT_PALLAS_TYPE_UINT64: return weft_pallas_attrs_add_u64(a, ref, f->v.u);
	case WEFT_PALLAS_TYPE_INT8: return weft_pallas_attrs_add_i8(a, ref, (int8_t)f->v.i);
	case WEFT_PALLAS_TYPE_INT16: return weft_pallas_attrs_add_i16(a, ref, (int16_t)f->v.i);
	case WEFT_PALLAS_TYPE_INT32: return weft_pallas_attrs_add_i32(a, ref, (int32_t)f->v.i);
	case WEFT_PALLAS_TYPE_INT64: return weft_pallas_attrs_add_i64(a, ref, f->v.i);
	case WEFT_PALLAS_TYPE_FLOAT: return weft_pallas_attrs_add_float(a, ref, (float)f->v.f);
	case WEFT_PALLAS_TYPE_DOUBLE: return weft_pallas_attrs_add_double(a, ref, f->v.f);
	default: return weft_pallas_attrs_add_ref(a, ref, WEFT_PALLAS_TYPE_STRING, str);
	}
}

/*
 * Appends field `f` as a typed attribute named after it, when it has a
 * Pallas type and fits (keeping `keep_values` values, `keep_bytes` bytes
 * free); a field left out is counted. 0 or -1.
 */
static int add_field(conv *c, weft_pallas_attrs *a, const weft_field *f,
		     unsigned keep_values, size_t keep_bytes)
{
	int type = field_type(f);
	uint32_t ref, str = 0;
	if (type < 0)
		return 0;
	if (!attrs_fit(a, type_size(type), keep_values, keep_bytes)) {
		c->stats.fields_left_out++;
		return 0;
	}
	if (type == WEFT_PALLAS_TYPE_STRING) {
		int rc = weft__pconv_string_value(c, f->v.s.ptr, f->v.s.len, &str);
		if (rc <= 0) {
			c->stats.strings_left_out += rc == 0;
			return rc;
		}
	}
	if (weft__pconv_field_attribute(c, f, type, &ref) < 0)
		return -1;
	int rc = add_value(a, ref, type, f, str);
	return rc < 0 ? weft__pconv_writer_error(c, "cannot add an attribute value", rc) : 0;
}

/* Copies bytes [off, off + 8) of the event's stored bytes (payload, then data), 0-padded. */
static uint64_t stored_chunk(const weft_event *ev, uint64_t off)
{
	uint8_t b[8] = { 0 };
	for (unsigned i = 0; i < 8; i++) {
		uint64_t k = off + i;
		if (k < ev->payload_size)
			b[i] = ev->payload[k];
		else if (k - ev->payload_size < ev->data_size)
			b[i] = ev->data[k - ev->payload_size];
	}
	uint64_t v = 0;
	for (unsigned i = 0; i < 8; i++)
		v |= (uint64_t)b[i] << (8 * i);
	return v;
}

/* The attribute `weft.payload.<i>` (u64), defined at its first use. */
static int chunk_attribute(conv *c, unsigned i, uint32_t *ref)
{
	if (c->chunk_attr[i] == NONE) {
		char name[32];
		snprintf(name, sizeof name, "weft.payload.%u", i);
		if (weft__pconv_named_attribute(c, name, WEFT_PALLAS_TYPE_UINT64, &c->chunk_attr[i]) < 0)
			return -1;
	}
	*ref = c->chunk_attr[i];
	return 0;
}

/*
 * The stored bytes of the event (payload, then variable data) as
 * `weft.payload_size` (u64) and little-endian u64 chunks `weft.payload.0`,
 * `.1`, ... as far as the list holds them (a payload cut short is
 * counted).
 */
static int add_payload(conv *c, weft_pallas_attrs *a, const weft_event *ev)
{
	uint64_t total = ev->payload_size + ev->data_size;
	uint32_t ref;
	if (total == 0)
		return 0;
	if (!attrs_fit(a, 8, 0, 0)) {
		c->stats.payloads_cut++;
		return 0;
	}
	if (weft__pconv_named_attribute(c, "weft.payload_size", WEFT_PALLAS_TYPE_UINT64, &c->size_attr) < 0)
		return -1;
	int rc = weft_pallas_attrs_add_u64(a, c->size_attr, total);
	for (unsigned i = 0; rc == 0 && (uint64_t)i * 8 < total; i++) {
		if (i >= PAYLOAD_CHUNKS_MAX || !attrs_fit(a, 8, 0, 0)) {
			c->stats.payloads_cut++;
			break;
		}
		if (chunk_attribute(c, i, &ref) < 0)
			return -1;
		rc = weft_pallas_attrs_add_u64(a, ref, stored_chunk(ev, (uint64_t)i * 8));
	}
	return rc < 0 ? weft__pconv_writer_error(c, "cannot add the payload", rc) : 0;
}

/* `weft.code`: the event's code as a string attribute. */
static int add_code(conv *c, weft_pallas_attrs *a, const weft_event *ev)
{
	uint32_t code;
	if (weft__pconv_intern(c, ev->code, ev->code_len, &code, NULL) < 0 ||
	    weft__pconv_named_attribute(c, "weft.code", WEFT_PALLAS_TYPE_STRING, &c->code_attr) < 0)
		return -1;
	int rc = weft_pallas_attrs_add_ref(a, c->code_attr, WEFT_PALLAS_TYPE_STRING, code);
	return rc < 0 ? weft__pconv_writer_error(c, "cannot add the code", rc) : 0;
}

/* `weft.end`: the end of an interval written as one Generic event. */
static int add_end(conv *c, weft_pallas_attrs *a, uint64_t end)
{
	if (weft__pconv_named_attribute(c, "weft.end", WEFT_PALLAS_TYPE_UINT64, &c->end_attr) < 0)
		return -1;
	int rc = weft_pallas_attrs_add_u64(a, c->end_attr, end);
	return rc < 0 ? weft__pconv_writer_error(c, "cannot add the end", rc) : 0;
}


/*
 * The attribute list of a record: weft.code and weft.end when asked, the
 * decoded fields, then (unless the source's payload is its reader's
 * packing of the record, which the fields decode: Pallas, OTF2) the
 * stored bytes, for which room is kept for the size and up to 16 chunks.
 */
int weft__pconv_build_attrs(conv *c, const weft_event *ev, const attr_plan *p,
			   weft_pallas_attrs *a)
{
	uint64_t total = ev->payload_size + ev->data_size;
	int payload = !c->same_format && !c->payload_is_fields && total > 0;
	unsigned chunks = payload ? (unsigned)((total + 7) / 8 < 16 ? (total + 7) / 8 : 16) : 0;
	unsigned keep = payload ? 1 + chunks : 0;
	weft_pallas_attrs_init(a);
	if ((p->with_code && add_code(c, a, ev) < 0) || (p->end && add_end(c, a, *p->end) < 0))
		return -1;
	for (int i = p->first_field; i < p->field_count; i++)
		if (add_field(c, a, &c->fields[i], keep, (size_t)keep * 14) < 0)
			return -1;
	return payload ? add_payload(c, a, ev) : 0;
}

/*
 * Decodes the event's fields into conv.fields; returns how many (0 when
 * the format knows no layout or the payload does not match it: the
 * payload attributes still keep the bytes).
 */
int weft__pconv_decode_fields(conv *c, const weft_event *ev)
{
	int n = weft_event_fields(c->trace, ev, c->fields, FIELDS_MAX);
	if (n < 0)
		return 0;
	return n > FIELDS_MAX ? FIELDS_MAX : n;
}

/* 1 when field i is named `name`. */
int weft__pconv_field_named(const conv *c, int i, int count, const char *name)
{
	size_t n = strlen(name);
	return i < count && c->fields[i].name_len == n &&
	       memcmp(c->fields[i].name, name, n) == 0;
}
