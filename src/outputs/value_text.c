/* SPDX-License-Identifier: MIT */
/*
 * outputs/value_text.c - the text of a decoded field's value, shared by
 * the outputs that write fields (`weft dump` text and JSON, Chrome JSON):
 * integers, booleans, bytes and arrays are written the same everywhere;
 * floats, strings, the separator of array elements and the text of a
 * value that cannot be read come from the output's style.
 */
#include "outputs/outputs.h"

/* One scalar value (not an array). */
static void put_scalar(weft__outbuf *ob, const weft_field *f, const weft__value_style *st)
{
	char *p;

	switch (f->type) {
	case WEFT_TYPE_U8: case WEFT_TYPE_U16: case WEFT_TYPE_U32: case WEFT_TYPE_U64:
		p = weft__outbuf_reserve(ob, 24);
		weft__outbuf_commit(ob, weft__fmt_u64(p, f->v.u));
		break;
	case WEFT_TYPE_I8: case WEFT_TYPE_I16: case WEFT_TYPE_I32: case WEFT_TYPE_I64:
		p = weft__outbuf_reserve(ob, 24);
		weft__outbuf_commit(ob, weft__fmt_i64(p, f->v.i));
		break;
	case WEFT_TYPE_F32: case WEFT_TYPE_F64:
		st->put_float(ob, st->ctx, f->v.f, f->type == WEFT_TYPE_F32);
		break;
	case WEFT_TYPE_BOOL:
		weft__outbuf_puts(ob, f->v.u ? "true" : "false");
		break;
	case WEFT_TYPE_STR:
		st->put_string(ob, st->ctx, f->v.s.ptr, f->v.s.len);
		break;
	case WEFT_TYPE_BYTES:
		if (st->json) {
			weft__outbuf_put(ob, "\"", 1);
			weft__put_hex_plain(ob, (const uint8_t *)f->v.s.ptr, f->v.s.len);
			weft__outbuf_put(ob, "\"", 1);
		} else {
			weft__put_hex_colon(ob, (const uint8_t *)f->v.s.ptr, f->v.s.len);
		}
		break;
	default:
		weft__outbuf_puts(ob, st->unknown);
		break;
	}
}

/* A scalar, or an array as [a,b,c] with its elements taken one by one from the library. */
void weft__put_value(weft__outbuf *ob, const weft_field *f, const weft__value_style *st)
{
	if (!f->is_array) {
		put_scalar(ob, f, st);
		return;
	}
	weft__outbuf_put(ob, "[", 1);
	for (uint32_t i = 0; i < f->count; i++) {
		weft_field element;
		if (i > 0)
			weft__outbuf_puts(ob, st->separator);
		if (weft_field_element(f, i, &element) < 0)
			weft__outbuf_puts(ob, st->unknown);
		else
			put_scalar(ob, &element, st);
	}
	weft__outbuf_put(ob, "]", 1);
}
