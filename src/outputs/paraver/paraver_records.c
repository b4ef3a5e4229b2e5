/* SPDX-License-Identifier: MIT */
/*
 * outputs/paraver/paraver_records.c - the records of the Paraver writer:
 * their packed form for the external sort (varints), and their text in
 * the .prv (event, state and communication lines, the span stack of each
 * track that resolves span values, the first record and the header).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "outputs/paraver/paraver_internal.h"

/* ---- Record packing (the sort) -------------------------------------------------- */


/* Reads a varint at *p (before end); 0, or -1 when it does not end there. */
int weft__pv_get_varint(const char **p, const char *end, uint64_t *out)
{
	uint64_t v = 0;

	for (unsigned shift = 0; *p < end && shift < 64; shift += 7) {
		unsigned char b = (unsigned char)*(*p)++;
		v |= (uint64_t)(b & 0x7f) << shift;
		if (b < 0x80) {
			*out = v;
			return 0;
		}
	}
	return -1;
}




/* The signed number of a zigzag varint (see zigzag). */
static int64_t unzigzag(uint64_t v)
{
	return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}


/* The record packed in b[0..len); 0, or -1 when it is malformed. */
int weft__pv_rec_unpack(const char *b, size_t len, rec *r)
{
	const char *p = b + 9, *end = b + len;
	uint64_t track, type, v = 0, d = 0, tag = 0;

	if (len < 11 || (unsigned char)b[0] > REC_COMM)
		return -1;
	r->kind = (uint8_t)b[0];
	memcpy(&r->time, b + 1, 8);
	int comm = r->kind == REC_COMM;
	if (weft__pv_get_varint(&p, end, &track) != 0 || weft__pv_get_varint(&p, end, &type) != 0 ||
	    (kind_has_value(r->kind) && weft__pv_get_varint(&p, end, &v) != 0) ||
	    ((kind_has_end(r->kind) || comm) && weft__pv_get_varint(&p, end, &d) != 0) ||
	    (comm && weft__pv_get_varint(&p, end, &tag) != 0) || p != end)
		return -1;
	r->track = (uint32_t)track;
	r->type = (uint32_t)type;
	r->value = unzigzag(v);
	r->end = comm ? r->time + (uint64_t)unzigzag(d) : r->time + d;
	r->tag = (int32_t)unzigzag(tag);
	r->seq = 0;
	return 0;
}


/* ---- Record text ---------------------------------------------------------------------------- */

/* v in exactly `width` digits, zero-padded on the left (v must fit). */
void weft__pv_put_digits(char *p, uint64_t v, unsigned width)
{
	for (unsigned i = width; i-- > 0; v /= 10)
		p[i] = (char)('0' + v % 10);
}

/* v zero-padded to at least `width` digits at p; returns the end. */
static char *put_padded(char *p, uint64_t v, unsigned width)
{
	char digits[24];
	size_t n = (size_t)(weft__fmt_u64(digits, v) - digits);

	for (; n < width; width--)
		*p++ = '0';
	memcpy(p, digits, n);
	return p + n;
}

/* "<type>:" at p from a small cache (a trace has few types); returns the end. */
static inline char *put_type(weft__paraver_writer *w, char *p, uint32_t type)
{
	type_text *c = &w->type_cache[(type * 2654435761u) >> 28];

	if (WEFT__OUT_UNLIKELY(c->type != type || c->len == 0)) {
		memset(c->text, 0, sizeof c->text);
		c->len = (uint8_t)(weft__fmt_u64(c->text, type) - c->text);
		c->text[c->len++] = ':';
		c->type = type;
	}
	memcpy(p, c->text, sizeof c->text);
	return p + c->len;
}

/* A value at p: one digit at once, else the track's last value when it repeats. */
static inline char *put_value(pv_track *tr, char *p, int64_t value)
{
	if (value >= 0 && value < 10) {
		*p = (char)('0' + value);
		return p + 1;
	}
	if (WEFT__OUT_UNLIKELY(value != tr->value_last || tr->value_len == 0)) {
		memset(tr->value_text, 0, sizeof tr->value_text);
		tr->value_len = (uint8_t)(weft__fmt_i64(tr->value_text, value) - tr->value_text);
		tr->value_last = value;
	}
	memcpy(p, tr->value_text, sizeof tr->value_text);
	return p + tr->value_len;
}

/* An event record `2:0:1:task:thread:time:type:value`. */
static void put_event(weft__paraver_writer *w, pv_track *tr, uint64_t time,
		      uint32_t type, int64_t value)
{
	char *p = weft__outbuf_reserve(&w->out, LINE_MAX);

	p = put_object(p, '2', tr);
	p = put_time(w, p, time);
	*p++ = ':';
	p = put_type(w, p, type);
	p = put_value(tr, p, value);
	*p++ = '\n';
	weft__outbuf_commit(&w->out, p);
	w->stats.records++;
}

/* A state record `1:0:1:task:thread:begin:end:state`. */
static void put_state(weft__paraver_writer *w, pv_track *tr, uint64_t begin,
		      uint64_t end, int64_t state)
{
	char *p = weft__outbuf_reserve(&w->out, LINE_MAX);

	p = put_object(p, '1', tr);
	p = put_time(w, p, begin);
	*p++ = ':';
	p = weft__fmt_u64(p, end);
	*p++ = ':';
	p = weft__fmt_i64(p, state);
	*p++ = '\n';
	weft__outbuf_commit(&w->out, p);
	w->stats.records++;
	w->stats.state_records++;
}

/*
 * A communication record `3:0:1:task:thread:send:send:0:1:task:thread:
 * recv:recv:size:tag` (logical and physical times alike).
 */
static void put_comm(weft__paraver_writer *w, pv_track *from, pv_track *to, uint64_t sent,
		     uint64_t received, int64_t size, int32_t tag)
{
	char *p = weft__outbuf_reserve(&w->out, COMM_LINE_MAX);

	p = put_object(p, '3', from);
	p = put_time(w, p, sent);
	*p++ = ':';
	p = weft__fmt_u64(p, sent);
	*p++ = ':';
	memcpy(p, to->prefix + 1, to->prefix_len - 1);
	p += to->prefix_len - 1;
	p = weft__fmt_u64(p, received);
	*p++ = ':';
	p = weft__fmt_u64(p, received);
	*p++ = ':';
	p = weft__fmt_i64(p, size);
	*p++ = ':';
	p = weft__fmt_i64(p, tag);
	*p++ = '\n';
	weft__outbuf_commit(&w->out, p);
	w->stats.records++;
	w->stats.comm_records++;
}

/* Pushes the value of a span that opens on a track (stack bounded). */
static void stack_push(weft__paraver_writer *w, pv_track *tr, int64_t value)
{
	if (tr->depth < tr->stack_cap) {
		tr->stack[tr->depth++] = value;
		return;
	}
	if (tr->stack_cap < STACK_MAX) {
		uint32_t cap = tr->stack_cap ? tr->stack_cap * 2 : 8;
		int64_t *s = realloc(tr->stack, cap * sizeof *s);
		if (s != NULL) {
			tr->stack = s;
			tr->stack_cap = cap;
			tr->stack[tr->depth++] = value;
			return;
		}
		weft__pv_fail_nomem(w, "span stacks");
	}
	tr->depth++; /* too deep: counted, its value not kept */
}

/* Pops the innermost span; returns the value now shown (0: none open). */
static int64_t stack_pop(pv_track *tr)
{
	if (tr->depth > 0)
		tr->depth--;
	if (tr->depth == 0)
		return 0;
	uint32_t top = tr->depth <= tr->stack_cap ? tr->depth : tr->stack_cap;
	return top > 0 ? tr->stack[top - 1] : 0;
}

/* The value shown on a track now (0: no span open). */
static int64_t stack_top(const pv_track *tr)
{
	uint32_t top = tr->depth <= tr->stack_cap ? tr->depth : tr->stack_cap;
	return tr->depth > 0 && top > 0 ? tr->stack[top - 1] : 0;
}

/* Writes one record as text, times from the start. */
void weft__pv_write_record(weft__paraver_writer *w, const rec *r)
{
	pv_track *tr = track_get(w, r->track);
	uint64_t t = r->time - w->stats.start;

	if (tr == NULL)
		return;
	switch (r->kind) {
	case REC_BEGIN:
	case REC_CBEGIN:
		stack_push(w, tr, r->value);
		put_event(w, tr, t, r->type, r->value);
		break;
	case REC_END:
	case REC_CEND:
		put_event(w, tr, t, r->type, stack_pop(tr));
		break;
	case REC_PULSE:
		put_event(w, tr, t, r->type, r->value);
		put_event(w, tr, t, r->type, stack_top(tr));
		break;
	case REC_STATE:
		put_state(w, tr, t, r->end - w->stats.start, r->value);
		break;
	case REC_COMM: {
		pv_track *to = track_get(w, r->type);
		if (to != NULL)
			put_comm(w, tr, to, t, r->end - w->stats.start, r->value, r->tag);
		break;
	}
	default:
		put_event(w, tr, t, r->type, r->value);
		break;
	}
}

/* The first row's track (the trace-start record goes there), or NULL. */
pv_track *weft__pv_first_row_track(const weft__paraver_writer *w)
{
	for (size_t i = 0; i < w->track_cap; i++)
		if (w->tracks[i].kind == WEFT__TRACK_THREAD && w->tracks[i].task == 1 &&
		    w->tracks[i].thread == 1)
			return &w->tracks[i];
	for (size_t i = 0; i < w->track_cap; i++)
		if (w->tracks[i].kind != 0 && w->tracks[i].kind != WEFT__TRACK_PROCESS &&
		    w->tracks[i].task == 1 && w->tracks[i].thread == 1)
			return &w->tracks[i];
	return NULL;
}

/* The trace-start record (type 1 on the first row), when there is a first row. */
int weft__pv_put_trace_start(weft__paraver_writer *w)
{
	pv_track *first = weft__pv_first_row_track(w);

	if (first == NULL)
		return 0;
	put_event(w, first, 0, TYPE_TRACE_START,
		  w->stats.start > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)w->stats.start);
	return 1;
}

/* ---- Header ------------------------------------------------------------------------------------ */

/* "dd/mm/yy at hh:mm" of the start when it is a plausible Unix time in
 * ns (years 2000 to 2099), else of the epoch: reproducible either way. */
static void header_date(uint64_t start, char *buf, size_t cap)
{
	time_t secs = 0;
	struct tm tm;

	if (start >= 946684800ull * 1000000000ull && start < 4102444800ull * 1000000000ull)
		secs = (time_t)(start / 1000000000ull);
	gmtime_r(&secs, &tm);
	strftime(buf, cap, "%d/%m/%y at %H:%M", &tm);
}

/* Decimal digits of v (1 to 20). */
static unsigned digits_of(uint64_t v)
{
	unsigned n = 1;

	for (; v >= 10; v /= 10)
		n++;
	return n;
}

/*
 * The zero padding of the header's numbers: the duration to 20 digits,
 * each thread count to 5, less `cut` zeros in all (taken from the
 * duration first, then from the counts in task order) so that a header
 * with more tasks than the room was made for still fits it. The widths
 * into *dur_width and widths[] (task_count entries); the zeros that could
 * not be cut are returned (0: the cut was made).
 */
static uint64_t header_widths(const weft__paraver_writer *w, uint64_t duration, uint64_t cut,
			      unsigned *dur_width, unsigned *widths)
{
	unsigned d = digits_of(duration), take;

	take = d < DURATION_DIGITS ? DURATION_DIGITS - d : 0;
	take = cut < take ? (unsigned)cut : take;
	*dur_width = DURATION_DIGITS - take;
	cut -= take;
	for (size_t i = 0; i < w->task_count; i++) {
		unsigned c = digits_of(w->tasks[i].threads);
		take = c < COUNT_DIGITS ? COUNT_DIGITS - c : 0;
		take = cut < take ? (unsigned)cut : take;
		widths[i] = COUNT_DIGITS - take;
		cut -= take;
	}
	return cut;
}

/* The header's numbers at p with the given widths; returns the end. */
static char *header_fields(const weft__paraver_writer *w, char *p, uint64_t duration,
			   unsigned dur_width, const unsigned *widths)
{
	p = put_padded(p, duration, dur_width);
	memcpy(p, "_ns:0:1:", 8);
	p = weft__fmt_u64(p + 8, w->task_count);
	*p++ = '(';
	for (size_t i = 0; i < w->task_count; i++) {
		if (i > 0)
			*p++ = ',';
		p = put_padded(p, w->tasks[i].threads, widths[i]);
		memcpy(p, ":1", 2);
		p += 2;
	}
	memcpy(p, ")\n", 2);
	return p + 2;
}

/*
 * The header line, in a malloc'd buffer: date, duration, no resource
 * model, one application with the tasks' thread counts. Its numbers are
 * zero-padded (the duration to 20 digits, the counts to 5: Paraver reads
 * them with their zeros), so that the line keeps its length from the
 * first record written to the end, where it is rewritten in place; with
 * `fit` > 0, padding is removed to make it `fit` bytes long when it came
 * out longer (tasks added since). Its length, or 0 on ENOMEM.
 */
size_t weft__pv_header_build(const weft__paraver_writer *w, uint64_t start, uint64_t duration,
			     size_t fit, char **out)
{
	char date[64];
	char *b = malloc(96 + w->task_count * 32), *p;
	unsigned *widths = malloc((w->task_count + 1) * sizeof *widths), dur_width;

	*out = b;
	if (b == NULL || widths == NULL) {
		free(widths);
		return 0;
	}
	header_date(start, date, sizeof date);
	int head = snprintf(b, 96, "#Paraver (%s):", date);
	header_widths(w, duration, 0, &dur_width, widths);
	p = header_fields(w, b + head, duration, dur_width, widths);
	if (fit > 0 && (size_t)(p - b) > fit) {
		header_widths(w, duration, (uint64_t)(p - b) - fit, &dur_width, widths);
		p = header_fields(w, b + head, duration, dur_width, widths);
	}
	free(widths);
	return (size_t)(p - b);
}

/* Appends the header (final counts and duration) to the output buffer. */
int weft__pv_put_header(weft__paraver_writer *w)
{
	char *h;
	size_t n = weft__pv_header_build(w, w->stats.start, w->stats.duration, 0, &h);

	if (n == 0)
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET,
				   "paraver: out of memory (header)");
	weft__outbuf_put(&w->out, h, n);
	free(h);
	return 0;
}
