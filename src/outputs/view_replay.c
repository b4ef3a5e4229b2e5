/* SPDX-License-Identifier: MIT */
/*
 * outputs/view_replay.c - the shared conversion (outputs/view_shared.c)
 * of the viewers whose parts cannot format their events: Perfetto (its
 * packets carry ids interned on first use, in one packet sequence) and
 * Paraver (its event types, values, tasks and rows numbered on first
 * use, its records reordered in one window). Each part records the calls
 * its view makes, with everything they carry (the item's name, category,
 * flags, flow key and decoded fields); the merge makes the same calls on
 * the output's sink in the merged order of all streams, with the tracks
 * and flow ids of the output's one view. The output's writer sees the
 * calls one view over a merged cursor makes, so it writes the same
 * bytes. What the parts take off the writer's thread is the reading, the
 * decoding of every event and the view (on ranks: on every node).
 *
 * Records (native byte order: between ranks of one program):
 *   B, E, I  begin, end, instant: kind (1), track (4), time (8), item
 *   C        complete: kind, track, time, end (8), item
 *   K        counter: kind, track, time, value (8, a double)
 * An item: flags (1), flow end (1), flow key (8), name, category (with
 * its NUL), the field count (4; NO_TEXT: no array) and the fields. A
 * text is its length (4; NO_TEXT: NULL) and its bytes. A field: its name,
 * type (1), is_array (1), big_endian (1), count (4), then an array's raw
 * bytes (length 8, bytes), a text's or bytes' (the same), or the scalar
 * (8 bytes of the union).
 */
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "outputs/view_shared.h"

#define NO_TEXT UINT32_MAX

/* ---- The parts: the view's calls recorded ----------------------------------------- */

typedef struct recorder {
	weft__view_part *p;
	weft__outbuf out;        /* the run's chunks (keyed_runs) */
	const char *category;    /* the last category met (the view's strings */
	uint32_t category_len;   /* repeat) and its length */
} recorder;

/* The bytes of a text: its length, its bytes, `nul` more for its NUL. */
static size_t text_size(const char *s, size_t n, int nul)
{
	return s == NULL || n >= NO_TEXT ? 4 : 4 + n + (nul ? 1 : 0);
}

/* The bytes of a field. */
static size_t field_size(const weft_field *f)
{
	size_t n = text_size(f->name, f->name_len, 0) + 7 + 8;

	if (f->is_array)
		return n + f->raw_size;
	if (f->type == WEFT_TYPE_STR || f->type == WEFT_TYPE_BYTES)
		return n + f->v.s.len;
	return n;
}

/* A text of n bytes at s (NULL: none) at b; `nul`: its NUL kept too. Returns the end. */
static char *put_text(char *b, const char *s, size_t n, int nul)
{
	uint32_t len = s == NULL || n >= NO_TEXT ? NO_TEXT : (uint32_t)n;

	memcpy(b, &len, 4);
	if (len == NO_TEXT)
		return b + 4;
	memcpy(b + 4, s, n + (nul ? 1 : 0));
	return b + 4 + n + (nul ? 1 : 0);
}

static char *put_bytes(char *b, const void *s, uint64_t n)
{
	memcpy(b, &n, 8);
	if (n > 0)
		memcpy(b + 8, s, (size_t)n);
	return b + 8 + n;
}

static char *put_field(char *b, const weft_field *f)
{
	b = put_text(b, f->name, f->name_len, 0);
	b[0] = (char)f->type;
	b[1] = (char)(f->is_array != 0);
	b[2] = (char)(f->big_endian != 0);
	memcpy(b + 3, &f->count, 4);
	b += 7;
	if (f->is_array)
		return put_bytes(b, f->raw, f->raw_size);
	if (f->type == WEFT_TYPE_STR || f->type == WEFT_TYPE_BYTES)
		return put_bytes(b, f->v.s.ptr, f->v.s.len);
	memcpy(b, &f->v.u, 8);
	return b + 8;
}

/*
 * Room for a record of n bytes in the run's buffer, its start kept; NULL
 * without memory (the part then stops). The buffer is in memory
 * (WEFT__OUTBUF_GROW): it grows to any room asked for, so a record is
 * one reservation, whatever its size.
 */
static char *record_room(recorder *r, size_t n)
{
	if (r->p->rc != 0)
		return NULL; /* the part stops at the end of its event: nothing more is kept */
	char *b = r->out.error == 0 ? weft__outbuf_reserve(&r->out, n) : NULL;

	if (r->out.error != 0) {
		if (r->p->rc == 0)
			r->p->rc = weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET,
					       "out of memory for the output's events");
		return NULL;
	}
	r->p->start = r->out.len;
	return b;
}

/* The head of a record: kind, track, time (its key set); returns the end. */
static char *put_head(recorder *r, char *b, char kind, const weft__view_track *t, uint64_t time)
{
	uint32_t id = weft__view_part_track(r->p, t);

	b[0] = kind;
	memcpy(b + 1, &id, 4);
	memcpy(b + 5, &time, 8);
	return b + 13;
}

/* The category's length (the last one's kept). */
static uint32_t category_len(recorder *r, const char *category)
{
	if (category != r->category) {
		r->category = category;
		r->category_len = category != NULL ? (uint32_t)strlen(category) : 0;
	}
	return r->category_len;
}

static size_t item_size(recorder *r, const weft__view_item *it)
{
	size_t n = 2 + 8 + text_size(it->name, it->name_len, 0) +
		   text_size(it->category, category_len(r, it->category), 1) + 4;

	for (int i = 0; it->args != NULL && i < it->arg_count; i++)
		n += field_size(&it->args[i]);
	return n;
}

static char *put_item(recorder *r, char *b, const weft__view_item *it)
{
	uint32_t count = it->args != NULL ? (uint32_t)it->arg_count : NO_TEXT;

	b[0] = (char)it->flags;
	b[1] = (char)it->flow_end;
	memcpy(b + 2, &it->flow_key, 8);
	b = put_text(b + 10, it->name, it->name_len, 0);
	b = put_text(b, it->category, r->category_len, 1);
	memcpy(b, &count, 4);
	b += 4;
	for (int i = 0; it->args != NULL && i < it->arg_count; i++)
		b = put_field(b, &it->args[i]);
	return b;
}

/* A record: head, `extra` (8 bytes, or none), then the item (or none). */
static void put_record(recorder *r, char kind, const weft__view_track *t, uint64_t time,
		       const uint64_t *extra, const weft__view_item *it)
{
	weft__view_part_key(r->p, t);
	size_t n = 13 + (extra != NULL ? 8 : 0) + (it != NULL ? item_size(r, it) : 0);
	char *b = record_room(r, n);
	if (b == NULL)
		return;
	b = put_head(r, b, kind, t, time);
	if (extra != NULL) {
		memcpy(b, extra, 8);
		b += 8;
	}
	if (it != NULL)
		b = put_item(r, b, it);
	r->out.len = (size_t)(b - r->out.buf);
	weft__view_part_record_end(r->p);
}

static void rec_track(void *ctx, const weft__view_track *t)
{
	weft__view_part_declare(((recorder *)ctx)->p, t);
}

static void rec_begin(void *ctx, const weft__view_track *t, uint64_t time,
		      const weft__view_item *it)
{
	put_record(ctx, 'B', t, time, NULL, it);
}

static void rec_end(void *ctx, const weft__view_track *t, uint64_t time,
		    const weft__view_item *it)
{
	put_record(ctx, 'E', t, time, NULL, it);
}

static void rec_instant(void *ctx, const weft__view_track *t, uint64_t time,
			const weft__view_item *it)
{
	put_record(ctx, 'I', t, time, NULL, it);
}

static void rec_complete(void *ctx, const weft__view_track *t, uint64_t time, uint64_t end,
			 const weft__view_item *it)
{
	put_record(ctx, 'C', t, time, &end, it);
}

static void rec_counter(void *ctx, const weft__view_track *t, uint64_t time, double value)
{
	uint64_t bits;

	memcpy(&bits, &value, 8);
	put_record(ctx, 'K', t, time, &bits, NULL);
}

static int part_create(weft_trace *handle, weft__view_part *p, const uint64_t *first,
		       const void *arg, void **state, weft__view_sink *sink)
{
	recorder *r = calloc(1, sizeof *r);

	(void)handle;
	(void)arg;
	(void)first;
	if (r == NULL)
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	r->p = p;
	r->out.fd = WEFT__OUTBUF_GROW; /* no buffer: the run's chunks */
	p->out = &r->out;
	*state = r;
	*sink = (weft__view_sink){ r, rec_track, rec_begin, rec_end, rec_complete, rec_instant,
				   rec_counter };
	return 0;
}

static int part_status(void *state)
{
	const recorder *r = state;

	return r->out.error != 0 ? weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET,
					       "out of memory for the output's events") : 0;
}

static void part_free(void *state, uint64_t *counts)
{
	recorder *r = state;

	(void)counts;
	if (r == NULL)
		return;
	weft__outbuf_destroy(&r->out);
	free(r);
}

/* ---- The merge: the calls made again on the output's sink -------------------------- */

struct weft__view_replay {
	weft__view_sink sink;
	weft_field *fields;      /* the item's fields, pointing into the record */
	size_t field_cap;
};

weft__view_replay *weft__view_replay_create(const weft__view_sink *sink)
{
	weft__view_replay *r = calloc(1, sizeof *r);

	if (r != NULL)
		r->sink = *sink;
	return r;
}

void weft__view_replay_free(weft__view_replay *r)
{
	if (r == NULL)
		return;
	free(r->fields);
	free(r);
}

/* A record read from p to end; `bad` set once it ends early. */
typedef struct reading {
	const char *p, *end;
	int bad;
} reading;

static const char *take(reading *in, size_t n)
{
	if (in->bad || (size_t)(in->end - in->p) < n) {
		in->bad = 1;
		return NULL;
	}
	const char *at = in->p;
	in->p += n;
	return at;
}

static uint32_t take_u32(reading *in)
{
	uint32_t v = 0;
	const char *at = take(in, 4);

	if (at != NULL)
		memcpy(&v, at, 4);
	return v;
}

static uint64_t take_u64(reading *in)
{
	uint64_t v = 0;
	const char *at = take(in, 8);

	if (at != NULL)
		memcpy(&v, at, 8);
	return v;
}

/* A text (NULL when none); *n its length; `nul`: a NUL follows it. */
static const char *take_text(reading *in, uint32_t *n, int nul)
{
	*n = take_u32(in);
	if (*n == NO_TEXT) {
		*n = 0;
		return NULL;
	}
	const char *at = take(in, (size_t)*n + (nul ? 1 : 0));
	if (at != NULL && nul && at[*n] != '\0')
		in->bad = 1; /* a text given as NUL-terminated must be */
	return at;
}

static void take_field(reading *in, weft_field *f)
{
	memset(f, 0, sizeof *f);
	f->name = take_text(in, &f->name_len, 0);
	const char *b = take(in, 7);
	if (b == NULL)
		return;
	f->type = (weft_type)(uint8_t)b[0];
	f->is_array = b[1];
	f->big_endian = b[2];
	memcpy(&f->count, b + 3, 4);
	if (f->is_array) {
		f->raw_size = (size_t)take_u64(in);
		f->raw = (const uint8_t *)take(in, f->raw_size);
	} else if (f->type == WEFT_TYPE_STR || f->type == WEFT_TYPE_BYTES) {
		f->v.s.len = (size_t)take_u64(in);
		f->v.s.ptr = take(in, f->v.s.len);
	} else {
		f->v.u = take_u64(in);
	}
}

/* The item of a record, its fields in r->fields; its flow id the output view's. */
static int take_item(weft__view_replay *r, weft__view *view, reading *in, weft__view_item *it)
{
	uint32_t n;

	memset(it, 0, sizeof *it);
	const char *b = take(in, 2);
	if (b == NULL)
		return 0;
	it->flags = (uint8_t)b[0];
	int flow_end = (signed char)b[1];
	it->flow_key = take_u64(in);
	it->name = take_text(in, &it->name_len, 0);
	it->category = take_text(in, &n, 1);
	uint32_t count = take_u32(in);
	if (count != NO_TEXT) {
		if (count > (size_t)(in->end - in->p) / 15) { /* a field takes 15 bytes at least */
			in->bad = 1;
			return 0;
		}
		if (count > r->field_cap) {
			weft_field *f = realloc(r->fields, count * sizeof *f);
			if (f == NULL)
				return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
			r->fields = f;
			r->field_cap = count;
		}
		for (uint32_t i = 0; i < count; i++)
			take_field(in, &r->fields[i]);
		it->args = r->fields;
		it->arg_count = (int)count;
	}
	if (flow_end != 0 && !in->bad) { /* the n-th end of its key, counted in the merged order */
		it->flow_id = weft__view_flow_id(view, it->flow_key, flow_end);
		it->flow_end = it->flow_id != 0 ? flow_end : 0;
	}
	return 0;
}

static int merge(void *out, weft__view *view, uint32_t track, const char *rec, size_t len)
{
	weft__view_replay *r = out;
	const weft__view_track *t = weft__view_track_get(view, track);
	reading in = { rec + 5, rec + len, 0 };
	weft__view_item it;
	uint64_t time = take_u64(&in), end = 0;
	char kind = rec[0];
	int rc = 0;

	if (t == NULL)
		return weft__view_bad_record();
	if (kind == 'K') {
		uint64_t bits = take_u64(&in);
		double value;
		memcpy(&value, &bits, 8);
		if (in.bad || in.p != in.end)
			return weft__view_bad_record();
		r->sink.counter(r->sink.ctx, t, time, value);
		return 0;
	}
	if (kind == 'C')
		end = take_u64(&in);
	if ((rc = take_item(r, view, &in, &it)) < 0)
		return rc;
	if (in.bad || in.p != in.end)
		return weft__view_bad_record();
	switch (kind) {
	case 'B': r->sink.begin(r->sink.ctx, t, time, &it); break;
	case 'E': r->sink.end(r->sink.ctx, t, time, &it); break;
	case 'I': r->sink.instant(r->sink.ctx, t, time, &it); break;
	case 'C': r->sink.complete(r->sink.ctx, t, time, end, &it); break;
	default: return weft__view_bad_record();
	}
	return 0;
}

static int failed(void *out)
{
	(void)out;
	return 0; /* the writers say so themselves when they finish */
}

static void set_first_time(void *out, uint64_t time)
{
	(void)out;
	(void)time;
}

static void add_counts(void *out, const uint64_t *counts)
{
	(void)out;
	(void)counts;
}

const weft__view_share_ops weft__view_replay_ops = {
	0, part_create, part_status, part_free, set_first_time, merge, failed, add_counts,
	NULL, NULL
};
