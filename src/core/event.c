/* SPDX-License-Identifier: MIT */
/*
 * core/event.c - typed fields of events, dispatched to the backend that
 * knows the layouts of its format.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"

const char *weft_type_name(weft_type type)
{
	static const char *const names[] = {
		[WEFT_TYPE_U8] = "u8", [WEFT_TYPE_U16] = "u16",
		[WEFT_TYPE_U32] = "u32", [WEFT_TYPE_U64] = "u64",
		[WEFT_TYPE_I8] = "i8", [WEFT_TYPE_I16] = "i16",
		[WEFT_TYPE_I32] = "i32", [WEFT_TYPE_I64] = "i64",
		[WEFT_TYPE_F32] = "f32", [WEFT_TYPE_F64] = "f64",
		[WEFT_TYPE_STR] = "str", [WEFT_TYPE_BYTES] = "bytes",
		[WEFT_TYPE_BOOL] = "bool",
	};
	if ((unsigned)type >= sizeof names / sizeof names[0] || names[type] == NULL)
		return "?";
	return names[type];
}

/* The reverse of weft_type_name() (WEFT_TYPE_BOOL is the last type). */
weft_type weft__type_from_name(const char *s, size_t n)
{
	for (int t = WEFT_TYPE_U8; t <= WEFT_TYPE_BOOL; t++) {
		const char *name = weft_type_name((weft_type)t);
		if (strlen(name) == n && memcmp(name, s, n) == 0)
			return (weft_type)t;
	}
	return (weft_type)0;
}

int weft_event_fields(const weft_trace *trace, const weft_event *event,
		      weft_field *out, size_t cap)
{
	if (trace->backend->event_fields == NULL)
		return 0;
	return trace->backend->event_fields(trace, event, out, cap);
}

/* A scratch array of fields grown to n, then the event decoded again. */
int weft__event_fields_grow(const weft_trace *trace, const weft_event *event,
			    weft_field **fields, size_t *cap, int n)
{
	weft_field *bigger = realloc(*fields, (size_t)n * sizeof *bigger);

	if (bigger == NULL)
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET,
				   "out of memory for %d fields", n);
	*fields = bigger;
	*cap = (size_t)n;
	return weft_event_fields(trace, event, *fields, *cap);
}

const char *weft_event_role_name(weft_event_role role)
{
	static const char *const names[] = {
		[WEFT_ROLE_POINT] = "point", [WEFT_ROLE_INTERVAL] = "interval",
		[WEFT_ROLE_ENTER] = "enter", [WEFT_ROLE_LEAVE] = "leave",
		[WEFT_ROLE_COUNTER] = "counter", [WEFT_ROLE_SAMPLE] = "sample",
	};
	if ((unsigned)role >= sizeof names / sizeof names[0])
		return "?";
	return names[role];
}

/*
 * Starts every event as a point named by its code (interval events as
 * intervals), then lets the backend say more. The class is cleared field
 * by field: a few stores, where a memset of it (or a compound literal)
 * compiles to a string instruction that cost a tenth of a Perfetto
 * conversion (once per event). The assertion catches a field added at
 * the end of the struct; a field added elsewhere must be cleared here
 * too.
 */
_Static_assert(offsetof(weft_event_class, flow_from_virtual_field) + sizeof(const char *) ==
	       sizeof(weft_event_class),
	       "weft_event_class has a new last field: clear it in weft_event_classify()");
void weft_event_classify(const weft_trace *trace, const weft_event *event,
			 weft_event_class *out)
{
	out->role = (event->flags & WEFT_EVENT_INTERVAL) ? WEFT_ROLE_INTERVAL
							 : WEFT_ROLE_POINT;
	out->channel = NULL;
	out->pair_key = 0;
	out->name = NULL;
	out->name_len = 0;
	out->category = NULL;
	out->value = 0;
	out->sample_skip = NULL;
	out->virtual_time_field = NULL;
	out->flow = WEFT_FLOW_NONE;
	out->flow_key = 0;
	out->flow_from_stream = -1;
	out->flow_from_virtual_field = NULL;
	if (trace->backend->event_classify != NULL)
		trace->backend->event_classify(trace, event, out);
}

/* Width in bytes of a fixed-size type, 0 for STR/BYTES. */
static size_t type_width(weft_type type)
{
	switch (type) {
	case WEFT_TYPE_U8: case WEFT_TYPE_I8: case WEFT_TYPE_BOOL: return 1;
	case WEFT_TYPE_U16: case WEFT_TYPE_I16: return 2;
	case WEFT_TYPE_U32: case WEFT_TYPE_I32: case WEFT_TYPE_F32: return 4;
	case WEFT_TYPE_U64: case WEFT_TYPE_I64: case WEFT_TYPE_F64: return 8;
	default: return 0;
	}
}

/*
 * Reads an unsigned integer of `width` (1, 2, 4 or 8) bytes stored in the
 * given byte order (weft runs on little-endian hosts).
 */
static inline uint64_t load_uint(const uint8_t *p, size_t width, int big_endian)
{
	switch (width) {
	case 1:
		return p[0];
	case 2: {
		uint16_t v;
		memcpy(&v, p, 2);
		return big_endian ? __builtin_bswap16(v) : v;
	}
	case 4: {
		uint32_t v;
		memcpy(&v, p, 4);
		return big_endian ? __builtin_bswap32(v) : v;
	}
	default: {
		uint64_t v;
		memcpy(&v, p, 8);
		return big_endian ? __builtin_bswap64(v) : v;
	}
	}
}

/*
 * Fills `out` with the scalar value of `raw` (of `type`): sign extension
 * for signed types, IEEE bit patterns for floats.
 */
int weft__field_set_scalar(weft_field *out, weft_type type, const uint8_t *raw,
			   int big_endian)
{
	size_t w = type_width(type);
	if (w == 0)
		return WEFT_EINVAL;
	uint64_t bits = load_uint(raw, w, big_endian);
	out->type = type;
	out->is_array = 0;
	out->count = 1;
	switch (type) {
	case WEFT_TYPE_I8: out->v.i = (int8_t)bits; break;
	case WEFT_TYPE_I16: out->v.i = (int16_t)bits; break;
	case WEFT_TYPE_I32: out->v.i = (int32_t)bits; break;
	case WEFT_TYPE_I64: out->v.i = (int64_t)bits; break;
	case WEFT_TYPE_F32: {
		uint32_t b32 = (uint32_t)bits;
		float f;
		memcpy(&f, &b32, sizeof f);
		out->v.f = f;
		break;
	}
	case WEFT_TYPE_F64: {
		double d;
		memcpy(&d, &bits, sizeof d);
		out->v.f = d;
		break;
	}
	default: out->v.u = bits; break;
	}
	return 0;
}

/*
 * Element i of an array field. Fixed-size elements are at i * width;
 * string elements are stored as u16 length + bytes (Heph's layout), so
 * they are found by walking the lengths.
 */
int weft_field_element(const weft_field *array, uint32_t i, weft_field *out)
{
	if (!array->is_array || i >= array->count)
		return weft__error(WEFT_EINVAL, NULL, WEFT_NO_OFFSET,
				   "element %u of a field of %u elements", i,
				   array->is_array ? array->count : 0);
	*out = *array;
	out->is_array = 0;
	out->count = 1;
	out->raw = NULL;
	out->raw_size = 0;
	size_t w = type_width(array->type);
	if (w != 0) {
		if ((size_t)(i + 1) * w > array->raw_size)
			return weft__error(WEFT_EFORMAT, NULL, WEFT_NO_OFFSET,
					   "array element %u past its data", i);
		return weft__field_set_scalar(out, array->type, array->raw + (size_t)i * w,
					      array->big_endian);
	}
	size_t pos = 0;
	for (uint32_t k = 0;; k++) {
		if (pos + 2 > array->raw_size)
			return weft__error(WEFT_EFORMAT, NULL, WEFT_NO_OFFSET,
					   "array element %u past its data", k);
		size_t len = (size_t)load_uint(array->raw + pos, 2, array->big_endian);
		if (pos + 2 + len > array->raw_size)
			return weft__error(WEFT_EFORMAT, NULL, WEFT_NO_OFFSET,
					   "array element %u past its data", k);
		if (k == i) {
			out->v.s.ptr = (const char *)array->raw + pos + 2;
			out->v.s.len = len;
			return 0;
		}
		pos += 2 + len;
	}
}
