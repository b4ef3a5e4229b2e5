/*
 * outputs/dump_writer.c - the event lines of `weft dump`, in three modes:
 *   fields: <clock>  <code>  <stream>  name=value name=value ...
 *   hex:    <clock>  <code>  <stream>  :xx:xx...   (exactly ovnidump -x)
 *   json:   {"time":..,"stream":..,"code":..,"fields":{..},"payload":..,
 *            "offset":..}  (schema in docs/dump-json.md)
 * The stream part of each line is rendered once per stream at start-up;
 * the rest is formatted by hand into the output buffer.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "outputs/outputs.h"

/* Width of the clock column, as ovnidump prints it ("%10ld"). */
#define CLOCK_WIDTH 10
/* Codes up to this length are copied without escaping when printable. */
#define SHORT_CODE_MAX 64
#define INITIAL_FIELD_CAP 16

/* ---- Stream prefixes ----------------------------------------------------- */

/*
 * Renders the constant part of a line for one stream in a scratch
 * buffer and keeps a copy: "  <path>  " for text, ',"stream":"<path>"'
 * for JSON (the path escaped once instead of once per event).
 */
static int render_stream_prefix(weft__dump_stream *ds, const char *path,
				weft__dump_mode mode)
{
	weft__outbuf scratch;
	int rc = weft__outbuf_init(&scratch, -1, 0);

	if (rc < 0)
		return rc;
	if (mode == WEFT__DUMP_JSON) {
		weft__outbuf_puts(&scratch, ",\"stream\":");
		weft__put_json_string(&scratch, path, strlen(path));
	} else {
		weft__outbuf_puts(&scratch, "  ");
		weft__put_text_bare(&scratch, path, strlen(path));
		weft__outbuf_puts(&scratch, "  ");
	}
	ds->prefix = malloc(scratch.len + 1);
	if (ds->prefix == NULL) {
		weft__outbuf_destroy(&scratch);
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET,
				   "out of memory for stream names");
	}
	memcpy(ds->prefix, scratch.buf, scratch.len);
	ds->prefix[scratch.len] = '\0';
	ds->prefix_len = scratch.len;
	weft__outbuf_destroy(&scratch);
	return WEFT_OK;
}

/* Prepares the output buffer, the per-stream prefixes and the field array. */
int weft__dump_writer_init(weft__dump_writer *w, const weft_trace *trace,
			   int fd, weft__dump_mode mode)
{
	int rc;

	memset(w, 0, sizeof *w);
	w->trace = trace;
	w->mode = mode;
	rc = weft__outbuf_init(&w->out, fd, WEFT__OUTBUF_DEFAULT_SIZE);
	if (rc < 0)
		return rc;
	w->stream_count = weft_trace_stream_count(trace);
	w->streams = calloc(w->stream_count ? w->stream_count : 1, sizeof *w->streams);
	w->field_cap = INITIAL_FIELD_CAP;
	w->fields = calloc(w->field_cap, sizeof *w->fields);
	if (w->streams == NULL || w->fields == NULL) {
		weft__dump_writer_destroy(w);
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET,
				   "out of memory for the dump writer");
	}
	for (size_t i = 0; i < w->stream_count; i++) {
		rc = render_stream_prefix(&w->streams[i],
					  weft_trace_stream(trace, i)->path, mode);
		if (rc < 0) {
			weft__dump_writer_destroy(w);
			return rc;
		}
	}
	return WEFT_OK;
}

/* Releases everything the writer holds (the output is not flushed). */
void weft__dump_writer_destroy(weft__dump_writer *w)
{
	if (w->streams != NULL)
		for (size_t i = 0; i < w->stream_count; i++)
			free(w->streams[i].prefix);
	free(w->streams);
	free(w->fields);
	weft__outbuf_destroy(&w->out);
	w->streams = NULL;
	w->fields = NULL;
}

/* Flushes the last bytes and reports a write error seen at any time. */
int weft__dump_writer_finish(weft__dump_writer *w)
{
	return weft__outbuf_flush(&w->out);
}

/*
 * Decodes the fields of the event, growing the scratch array when the
 * event has more fields than it holds.
 */
int weft__dump_writer_fields(weft__dump_writer *w, const weft_event *event)
{
	int n = weft_event_fields(w->trace, event, w->fields, w->field_cap);

	if (n > 0 && (size_t)n > w->field_cap) {
		weft_field *bigger = realloc(w->fields, (size_t)n * sizeof *bigger);
		if (bigger == NULL)
			return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET,
					   "out of memory for %d fields", n);
		w->fields = bigger;
		w->field_cap = (size_t)n;
		n = weft_event_fields(w->trace, event, w->fields, w->field_cap);
	}
	return n;
}

/* ---- Common line parts ----------------------------------------------------- */

/* 1 when every byte of the code is printable ASCII. */
static int code_is_plain(const char *code, uint32_t len)
{
	for (uint32_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)code[i];
		if (c < 0x20 || c >= 0x7f)
			return 0;
	}
	return 1;
}

/* "<clock>  <code>" then the stream prefix "  <path>  ". */
static void put_text_head(weft__dump_writer *w, const weft_event *ev)
{
	weft__outbuf *ob = &w->out;
	char *p = weft__outbuf_reserve(ob, 24 + SHORT_CODE_MAX);

	p = weft__fmt_u64_width(p, ev->time, CLOCK_WIDTH);
	*p++ = ' ';
	*p++ = ' ';
	if (WEFT__OUT_LIKELY(ev->code_len <= SHORT_CODE_MAX &&
			     code_is_plain(ev->code, ev->code_len))) {
		memcpy(p, ev->code, ev->code_len);
		weft__outbuf_commit(ob, p + ev->code_len);
	} else {
		weft__outbuf_commit(ob, p);
		weft__put_text_bare(ob, ev->code, ev->code_len);
	}
	const weft__dump_stream *ds = &w->streams[ev->stream];
	weft__outbuf_put(ob, ds->prefix, ds->prefix_len);
}

/* The stored bytes of the event: payload, then the jumbo data. */
static void put_payload_colon_hex(weft__outbuf *ob, const weft_event *ev)
{
	if (WEFT__OUT_LIKELY(ev->payload_size <= 16 && ev->data_size == 0)) {
		char *p = weft__outbuf_reserve(ob, 16 * 3);
		weft__outbuf_commit(ob, weft__fmt_hex_colon(p, ev->payload,
							    ev->payload_size));
		return;
	}
	weft__put_hex_colon(ob, ev->payload, ev->payload_size);
	if (ev->data_size > 0)
		weft__put_hex_colon(ob, ev->data, (size_t)ev->data_size);
}

/* Ends the current line. */
static void put_newline(weft__outbuf *ob)
{
	char *p = weft__outbuf_reserve(ob, 1);
	*p = '\n';
	weft__outbuf_commit(ob, p + 1);
}

/* ---- Field values ------------------------------------------------------------ */

/*
 * A floating-point value: shortest round-trip form (%.9g for float,
 * %.17g for double). Floats are rare in traces, so snprintf is fine here.
 */
static void put_float(weft__outbuf *ob, double v, weft_type type, int json)
{
	char tmp[40];

	if (json && !isfinite(v)) {
		weft__outbuf_puts(ob, "null");
		return;
	}
	snprintf(tmp, sizeof tmp, type == WEFT_TYPE_F32 ? "%.9g" : "%.17g", v);
	weft__outbuf_puts(ob, tmp);
}

/* One scalar value (not an array), text or JSON notation. */
static void put_scalar(weft__outbuf *ob, const weft_field *f, int json)
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
		put_float(ob, f->v.f, f->type, json);
		break;
	case WEFT_TYPE_BOOL:
		weft__outbuf_puts(ob, f->v.u ? "true" : "false");
		break;
	case WEFT_TYPE_STR:
		if (json)
			weft__put_json_string(ob, f->v.s.ptr, f->v.s.len);
		else
			weft__put_text_string(ob, f->v.s.ptr, f->v.s.len);
		break;
	case WEFT_TYPE_BYTES:
		if (json) {
			weft__outbuf_put(ob, "\"", 1);
			weft__put_hex_plain(ob, (const uint8_t *)f->v.s.ptr, f->v.s.len);
			weft__outbuf_put(ob, "\"", 1);
		} else {
			weft__put_hex_colon(ob, (const uint8_t *)f->v.s.ptr, f->v.s.len);
		}
		break;
	default:
		weft__outbuf_puts(ob, json ? "null" : "?");
		break;
	}
}

/* An array as [a,b,c], elements taken one by one from the library. */
static void put_array(weft__outbuf *ob, const weft_field *f, int json)
{
	weft__outbuf_put(ob, "[", 1);
	for (uint32_t i = 0; i < f->count; i++) {
		weft_field element;
		if (i > 0)
			weft__outbuf_put(ob, ",", 1);
		if (weft_field_element(f, i, &element) < 0) {
			weft__outbuf_puts(ob, json ? "null" : "?");
			continue;
		}
		put_scalar(ob, &element, json);
	}
	weft__outbuf_put(ob, "]", 1);
}

/* The value of a field in the text dump. */
void weft__put_field_text(weft__outbuf *ob, const weft_field *field)
{
	if (field->is_array)
		put_array(ob, field, 0);
	else
		put_scalar(ob, field, 0);
}

/* The value of a field in the JSON dump. */
void weft__put_field_json(weft__outbuf *ob, const weft_field *field)
{
	if (field->is_array)
		put_array(ob, field, 1);
	else
		put_scalar(ob, field, 1);
}

/* ---- The three line shapes ---------------------------------------------------- */

/* name=value pairs separated by one space. */
static void put_fields_text(weft__outbuf *ob, const weft_field *fields, int n)
{
	for (int i = 0; i < n; i++) {
		if (i > 0)
			weft__outbuf_put(ob, " ", 1);
		weft__put_text_bare(ob, fields[i].name, fields[i].name_len);
		weft__outbuf_put(ob, "=", 1);
		weft__put_field_text(ob, &fields[i]);
	}
}

/*
 * Text line with decoded fields; events without a known layout, or whose
 * payload does not match it, show their bytes in hex instead.
 */
static void write_fields_line(weft__dump_writer *w, const weft_event *ev)
{
	put_text_head(w, ev);
	int n = weft__dump_writer_fields(w, ev);
	if (n > 0)
		put_fields_text(&w->out, w->fields, n);
	else
		put_payload_colon_hex(&w->out, ev);
	if (n < 0)
		w->bad_payloads++;
	put_newline(&w->out);
}

/* ovnidump -x line: the raw bytes only. */
static void write_hex_line(weft__dump_writer *w, const weft_event *ev)
{
	put_text_head(w, ev);
	put_payload_colon_hex(&w->out, ev);
	put_newline(&w->out);
}

/* "fields":{...} of the JSON line; on a layout mismatch also "decode_error". */
static void put_fields_json(weft__dump_writer *w, const weft_event *ev)
{
	weft__outbuf *ob = &w->out;
	int n = weft__dump_writer_fields(w, ev);

	weft__outbuf_puts(ob, ",\"fields\":{");
	for (int i = 0; i < n; i++) {
		if (i > 0)
			weft__outbuf_put(ob, ",", 1);
		weft__put_json_string(ob, w->fields[i].name, w->fields[i].name_len);
		weft__outbuf_put(ob, ":", 1);
		weft__put_field_json(ob, &w->fields[i]);
	}
	weft__outbuf_put(ob, "}", 1);
	if (n < 0) {
		const char *msg = weft_last_error();
		w->bad_payloads++;
		weft__outbuf_puts(ob, ",\"decode_error\":");
		weft__put_json_string(ob, msg, strlen(msg));
	}
}

/* Appends ,"key":<signed integer>. */
static void put_json_int_member(weft__outbuf *ob, const char *key, int64_t v)
{
	weft__outbuf_puts(ob, key);
	char *p = weft__outbuf_reserve(ob, 24);
	weft__outbuf_commit(ob, weft__fmt_i64(p, v));
}

/* One JSON object per event; key order is fixed (docs/dump-json.md). */
static void write_json_line(weft__dump_writer *w, const weft_event *ev)
{
	weft__outbuf *ob = &w->out;
	char *p = weft__outbuf_reserve(ob, 64);

	memcpy(p, "{\"time\":", 8);
	p = weft__fmt_u64(p + 8, ev->time);
	if (ev->flags & WEFT_EVENT_INTERVAL) {
		memcpy(p, ",\"end\":", 7);
		p = weft__fmt_u64(p + 7, ev->end);
	}
	weft__outbuf_commit(ob, p);
	const weft__dump_stream *ds = &w->streams[ev->stream];
	weft__outbuf_put(ob, ds->prefix, ds->prefix_len);
	weft__outbuf_puts(ob, ",\"code\":");
	weft__put_json_string(ob, ev->code, ev->code_len);
	put_fields_json(w, ev);
	weft__outbuf_puts(ob, ",\"payload\":\"");
	weft__put_hex_plain(ob, ev->payload, ev->payload_size);
	if (ev->data_size > 0)
		weft__put_hex_plain(ob, ev->data, (size_t)ev->data_size);
	p = weft__outbuf_reserve(ob, 40);
	memcpy(p, "\",\"offset\":", 11);
	weft__outbuf_commit(ob, weft__fmt_u64(p + 11, ev->offset));
	if (ev->depth >= 0) {
		put_json_int_member(ob, ",\"depth\":", ev->depth);
		put_json_int_member(ob, ",\"parent\":", ev->parent);
	}
	weft__outbuf_puts(ob, "}\n");
}

/* Writes one event in the writer's mode. */
void weft__dump_writer_event(weft__dump_writer *w, const weft_event *event)
{
	switch (w->mode) {
	case WEFT__DUMP_HEX:
		write_hex_line(w, event);
		break;
	case WEFT__DUMP_JSON:
		write_json_line(w, event);
		break;
	default:
		write_fields_line(w, event);
		break;
	}
	w->events++;
}
