/* SPDX-License-Identifier: MIT */
/*
 * test_perfetto_writer.c - the Perfetto protobuf writer (outputs/
 * perfetto/perfetto_writer.c) driven as a view sink with synthetic tracks and
 * events, its output read back by a small protobuf decoder written here
 * (independent of the writer: a varint / length-delimited walker that
 * knows the few Perfetto messages by their field numbers).
 *
 * The decoder checks the wire format (every record is Trace.packet, every
 * varint minimal, every message consumed exactly), one sequence id, the
 * first-packet mark, unique track uuids with parents declared first,
 * balanced and nested slices per track, counters only on counter tracks,
 * and the interning rule: every iid used is defined in the same or an
 * earlier packet since the last clear of the incremental state, the first
 * packet that interns clears it (sequence_flags 3) and the others that
 * use interned data say so (2). The tests then compare what was decoded
 * (names, categories, times, annotation values of every type) with what
 * was given to the sink: nested, complete and flagged spans, instants,
 * counters, a name longer than 127 bytes, negative integers, interning
 * reuse, the intern bound (clears again and again), packets larger than
 * a reservation of the buffer, the background writer, the largest pids
 * and tids, a write error, an empty trace; `protoc --decode_raw`
 * also parses the files when it is installed.
 */
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "outputs/perfetto.h"
#include "testutil.h"

/* ---- A protobuf reader -------------------------------------------------------- */

typedef struct rd {
	const uint8_t *p, *end;
	int ok;
} rd;

typedef struct fld {
	uint32_t num, wire;
	uint64_t v;              /* varint, fixed64 */
	const uint8_t *ptr;      /* length-delimited */
	size_t len;
} fld;

static int decode_errors;

/* Reports a malformed input once per place (the first few only). */
static void bad(rd *r, const char *what)
{
	if (r->ok && decode_errors++ < 20)
		tu_fail(__FILE__, __LINE__, "decoder: %s", what);
	r->ok = 0;
}

/* A varint, which must be minimal (no trailing zero groups). */
static uint64_t rd_varint(rd *r)
{
	uint64_t v = 0;

	for (int shift = 0, i = 0; i < 10; i++, shift += 7) {
		if (r->p >= r->end) {
			bad(r, "varint past the end");
			return 0;
		}
		uint8_t b = *r->p++;
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			if (b == 0 && i > 0)
				bad(r, "varint not minimal");
			return v;
		}
	}
	bad(r, "varint longer than 10 bytes");
	return 0;
}

/* The next field of a message: 1, or 0 at its end (or when malformed). */
static int rd_field(rd *r, fld *f)
{
	*f = (fld){ 0 };
	if (!r->ok || r->p >= r->end)
		return 0;
	uint64_t tag = rd_varint(r);
	f->num = (uint32_t)(tag >> 3);
	f->wire = (uint32_t)(tag & 7);
	if (f->num == 0)
		bad(r, "field number 0");
	switch (f->wire) {
	case 0:
		f->v = rd_varint(r);
		break;
	case 1:
		if (r->end - r->p < 8) {
			bad(r, "fixed64 past the end");
			return 0;
		}
		f->v = 0;
		for (int i = 0; i < 8; i++)
			f->v |= (uint64_t)r->p[i] << (8 * i);
		r->p += 8;
		break;
	case 2:
		f->len = (size_t)rd_varint(r);
		if ((size_t)(r->end - r->p) < f->len) {
			bad(r, "length past the end");
			return 0;
		}
		f->ptr = r->p;
		r->p += f->len;
		break;
	default:
		bad(r, "unexpected wire type");
		return 0;
	}
	return r->ok;
}

/* A reader of the body of a length-delimited field. */
static rd sub(const fld *f)
{
	rd r = { f->ptr, f->ptr + f->len, 1 };
	return r;
}

/* Requires wire type `wire` for the field; reports otherwise. */
static int want_wire(rd *r, const fld *f, uint32_t wire)
{
	if (f->wire != wire)
		bad(r, "wrong wire type for a known field");
	return f->wire == wire;
}

/* The double whose bits a fixed64 holds. */
static double as_double(uint64_t bits)
{
	double d;
	memcpy(&d, &bits, sizeof d);
	return d;
}

/* ---- What was decoded ------------------------------------------------------------- */

#define MAX_TEXT 16384

typedef struct dtrack {
	uint64_t uuid, parent;
	char kind;               /* 'P' process, 'T' thread, 'N' named, 'C' counter */
	int64_t pid, tid;
	char name[512];
	size_t *stack;           /* open slices (indexes) */
	size_t depth, stack_cap;
} dtrack;

typedef struct dslice {
	uint64_t track, begin, end;
	int ended;
	size_t depth;
	long parent;             /* enclosing slice index, -1 */
	char name[512];
	char category[64];
	char *args;              /* "name=value;..." of the begin */
	char *end_args;          /* of the end */
} dslice;

typedef struct dpoint {
	uint64_t track, time;
	double value;            /* counters */
	char name[512];
	char *args;              /* instants */
} dpoint;

typedef struct dstring {
	uint64_t iid;
	char *s;
} dstring;

typedef struct decoded {
	dtrack *tracks;
	size_t ntracks;
	dslice *slices;
	size_t nslices;
	dpoint *instants, *counters;
	size_t ninstants, ncounters;
	struct devent *events;   /* every track event, in file order */
	size_t nevents;
	dstring *defs[4];        /* interned strings of the current generation */
	size_t ndefs[4];
	size_t definitions[4];   /* entries seen in all (for reuse checks) */
	size_t packets, clears, first_marks;
	uint64_t sequence;
	int state_valid;         /* a packet cleared the incremental state */
} decoded;

/* The capacity kept for n elements: the next power of two (0 for 0). */
static size_t room_for(size_t n)
{
	size_t cap = 1;

	while (cap < n)
		cap *= 2;
	return n ? cap : 0;
}

/*
 * Appends to a growable array of elements of `size` bytes; the capacity
 * doubles (implied by the count), so that a long trace costs few copies
 * (quadratic copying is slow under ASan).
 */
static void *push(void *base, size_t *count, size_t size)
{
	char *p = base;

	if (room_for(*count + 1) > room_for(*count)) {
		p = realloc(base, room_for(*count + 1) * size);
		REQUIRE(p != NULL);
	}
	memset(p + *count * size, 0, size);
	(*count)++;
	return p;
}

/* The decoded track of a uuid, or NULL. */
static dtrack *find_track(decoded *d, uint64_t uuid)
{
	for (size_t i = 0; i < d->ntracks; i++)
		if (d->tracks[i].uuid == uuid)
			return &d->tracks[i];
	return NULL;
}

/* The string interned as `iid` in table `kind`, or NULL (undefined). */
static const char *lookup(decoded *d, int kind, uint64_t iid)
{
	for (size_t i = 0; i < d->ndefs[kind]; i++)
		if (d->defs[kind][i].iid == iid)
			return d->defs[kind][i].s;
	return NULL;
}

/* Forgets the interned strings (incremental state cleared). */
static void clear_defs(decoded *d)
{
	for (int k = 1; k <= 3; k++) {
		for (size_t i = 0; i < d->ndefs[k]; i++)
			free(d->defs[k][i].s);
		free(d->defs[k]);
		d->defs[k] = NULL;
		d->ndefs[k] = 0;
	}
}

/* Copies a length-delimited string into dst (NUL-terminated, cut). */
static void copy_text(char *dst, size_t cap, const fld *f)
{
	size_t n = f->len < cap - 1 ? f->len : cap - 1;
	memcpy(dst, f->ptr, n);
	dst[n] = '\0';
}

/* Appends formatted text to a malloc'd string. */
static void append(char **s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void append(char **s, const char *fmt, ...)
{
	char piece[MAX_TEXT];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(piece, sizeof piece, fmt, ap);
	va_end(ap);
	size_t old = *s ? strlen(*s) : 0, len = old + strlen(piece) + 1;
	char *p = *s;
	if (p == NULL || room_for(len) > room_for(old + 1)) {
		p = realloc(*s, room_for(len));
		REQUIRE(p != NULL);
	}
	strcpy(p + old, piece);
	*s = p;
}

/* ---- Decoding the messages ---------------------------------------------------------- */

/* InternedData: entries {iid 1, name 2} in fields 1..3. */
static void decode_interned(decoded *d, rd *r)
{
	fld f, g;

	while (rd_field(r, &f)) {
		if (f.num < 1 || f.num > 3 || !want_wire(r, &f, 2)) {
			bad(r, "unknown InternedData field");
			continue;
		}
		rd e = sub(&f);
		uint64_t iid = 0;
		char *name = NULL;
		while (rd_field(&e, &g)) {
			if (g.num == 1 && want_wire(&e, &g, 0))
				iid = g.v;
			else if (g.num == 2 && want_wire(&e, &g, 2)) {
				name = malloc(g.len + 1);
				REQUIRE(name != NULL);
				memcpy(name, g.ptr, g.len);
				name[g.len] = '\0';
			} else
				bad(&e, "unknown interned entry field");
		}
		if (!e.ok)
			r->ok = 0;
		if (iid == 0 || name == NULL) {
			bad(r, "interned entry without iid or name");
			free(name);
			continue;
		}
		const char *old = lookup(d, (int)f.num, iid);
		if (old != NULL) {
			if (strcmp(old, name) != 0)
				bad(r, "iid redefined with another string");
			free(name);
			continue;
		}
		d->defs[f.num] = push(d->defs[f.num], &d->ndefs[f.num], sizeof(dstring));
		d->defs[f.num][d->ndefs[f.num] - 1] = (dstring){ iid, name };
		d->definitions[f.num]++;
	}
}

/* ProcessDescriptor / ThreadDescriptor into the track. */
static void decode_descriptor_part(rd *r, dtrack *t, int thread)
{
	fld f;

	while (rd_field(r, &f)) {
		if (f.num == 1 && want_wire(r, &f, 0))
			t->pid = (int64_t)f.v;
		else if (thread && f.num == 2 && want_wire(r, &f, 0))
			t->tid = (int64_t)f.v;
		else if (f.num == (thread ? 5u : 6u) && want_wire(r, &f, 2))
			copy_text(t->name, sizeof t->name, &f);
		else
			bad(r, "unknown process/thread descriptor field");
	}
}

/* TrackDescriptor: a new track, uuid unique, parent declared before. */
static void decode_track(decoded *d, rd *r)
{
	fld f;
	dtrack t = { 0 };
	int has_uuid = 0;

	t.kind = '?';
	while (rd_field(r, &f)) {
		rd s;
		switch (f.num) {
		case 1: has_uuid = want_wire(r, &f, 0); t.uuid = f.v; break;
		case 2: if (want_wire(r, &f, 2)) copy_text(t.name, sizeof t.name, &f);
			if (t.kind == '?') t.kind = 'N';
			break;
		case 3: case 4:
			if (!want_wire(r, &f, 2)) break;
			s = sub(&f);
			decode_descriptor_part(&s, &t, f.num == 4);
			if (!s.ok) r->ok = 0;
			t.kind = f.num == 3 ? 'P' : 'T';
			break;
		case 5: if (want_wire(r, &f, 0)) t.parent = f.v; break;
		case 8: if (want_wire(r, &f, 2) && f.len != 0) bad(r, "counter descriptor not empty");
			t.kind = 'C';
			break;
		default: bad(r, "unknown TrackDescriptor field");
		}
	}
	if (!has_uuid || find_track(d, t.uuid) != NULL)
		bad(r, "track uuid missing or not unique");
	if (t.parent != 0 && find_track(d, t.parent) == NULL)
		bad(r, "track parent not declared before");
	d->tracks = push(d->tracks, &d->ntracks, sizeof t);
	d->tracks[d->ntracks - 1] = t;
}

/* The annotation's name from its iid, then '='. */
static void append_name(decoded *d, rd *r, char **out, uint64_t iid)
{
	const char *name = lookup(d, 3, iid);

	if (name == NULL)
		bad(r, "annotation name iid used before its definition");
	append(out, "%s=", name ? name : "?");
}

/* A DebugAnnotation value as text: u:7 i:-3 d:1.5 b:1 s:text a:[...]. */
static void decode_value(decoded *d, rd *r, char **out, int named)
{
	fld f;
	int values = 0, array = 0;

	while (rd_field(r, &f)) {
		rd s;
		switch (f.num) {
		case 1:
			if (!named || !want_wire(r, &f, 0)) {
				bad(r, "annotation name_iid");
				break;
			}
			append_name(d, r, out, f.v);
			break;
		case 2: values++; append(out, "b:%d", (int)f.v); break;
		case 3: values++; append(out, "u:%llu", (unsigned long long)f.v); break;
		case 4: values++; append(out, "i:%lld", (long long)(int64_t)f.v); break;
		case 5: values++; if (want_wire(r, &f, 1)) append(out, "d:%.17g", as_double(f.v)); break;
		case 6: values++; if (want_wire(r, &f, 2)) append(out, "s:%.*s", (int)f.len, (const char *)f.ptr); break;
		case 12:
			if (!want_wire(r, &f, 2)) break;
			append(out, array++ ? "," : "a:[");
			s = sub(&f);
			decode_value(d, &s, out, 0);
			if (!s.ok) r->ok = 0;
			break;
		default: bad(r, "unknown DebugAnnotation field");
		}
	}
	if (array)
		append(out, "]");
	if (values + (array > 0) > 1 || (values > 0 && array > 0))
		bad(r, "annotation with several values");
}

/* What a TrackEvent holds (names copied: the state may be cleared). */
typedef struct devent {
	uint64_t time, index;    /* index: order in the file */
	uint64_t type, uuid;
	char *name;
	char *category;
	char *args;
	double counter;
	int has_counter, uses_iids;
} devent;

/* A copy of an interned string (NULL stays NULL). */
static char *dup_or_null(const char *s)
{
	if (s == NULL)
		return NULL;
	char *p = strdup(s);
	REQUIRE(p != NULL);
	return p;
}

/* TrackEvent fields into e; iids resolved through the current state. */
static void decode_event_fields(decoded *d, rd *r, devent *e)
{
	fld f;

	while (rd_field(r, &f)) {
		rd s;
		switch (f.num) {
		case 9: want_wire(r, &f, 0); e->type = f.v; break;
		case 11: want_wire(r, &f, 0); e->uuid = f.v; break;
		case 10: want_wire(r, &f, 0); e->uses_iids = 1;
			free(e->name);
			e->name = dup_or_null(lookup(d, 2, f.v));
			if (e->name == NULL)
				bad(r, "name iid used before its definition");
			break;
		case 3: want_wire(r, &f, 0); e->uses_iids = 1;
			if (e->category != NULL)
				bad(r, "several categories");
			free(e->category);
			e->category = dup_or_null(lookup(d, 1, f.v));
			if (e->category == NULL)
				bad(r, "category iid used before its definition");
			break;
		case 4: if (!want_wire(r, &f, 2)) break;
			e->uses_iids = 1;
			append(&e->args, "%s", e->args != NULL ? ";" : "");
			s = sub(&f);
			decode_value(d, &s, &e->args, 1);
			if (!s.ok) r->ok = 0;
			break;
		case 44: want_wire(r, &f, 1); e->counter = as_double(f.v); e->has_counter = 1; break;
		default: bad(r, "unknown TrackEvent field");
		}
	}
}

/* A TrackEvent: checked against its track and flags, kept for replay. */
static void decode_event(decoded *d, rd *r, uint64_t time, int has_time, uint64_t flags)
{
	devent e = { 0 };

	decode_event_fields(d, r, &e);
	e.time = time;
	e.index = d->nevents;
	dtrack *t = find_track(d, e.uuid);
	if (!has_time || t == NULL)
		bad(r, "track event without a time or a declared track");
	if (e.uses_iids && (!(flags & 2) || !d->state_valid))
		bad(r, "interned data used without needs-incremental-state / cleared state");
	if (t != NULL && ((e.type == 4) != (t->kind == 'C') || (e.type == 4) != e.has_counter))
		bad(r, "counter value on a non-counter track, or the reverse");
	if ((e.type == 1 || e.type == 3) && e.name == NULL)
		bad(r, "slice or instant without a name");
	if (e.type < 1 || e.type > 4)
		bad(r, "unknown track event type");
	d->events = push(d->events, &d->nevents, sizeof e);
	d->events[d->nevents - 1] = e;
}

/* Begin: a slice opens on its track (nested in the open one). */
static void open_slice(decoded *d, dtrack *t, devent *e)
{
	d->slices = push(d->slices, &d->nslices, sizeof(dslice));
	dslice *s = &d->slices[d->nslices - 1];
	s->track = t->uuid;
	s->begin = e->time;
	s->depth = t->depth;
	s->parent = t->depth ? (long)t->stack[t->depth - 1] : -1;
	snprintf(s->name, sizeof s->name, "%s", e->name ? e->name : "");
	snprintf(s->category, sizeof s->category, "%s", e->category ? e->category : "");
	s->args = e->args;
	e->args = NULL;
	if (t->depth == t->stack_cap) {
		t->stack_cap = t->stack_cap ? 2 * t->stack_cap : 16;
		t->stack = realloc(t->stack, t->stack_cap * sizeof *t->stack);
		REQUIRE(t->stack != NULL);
	}
	t->stack[t->depth++] = d->nslices - 1;
}

/* End: the innermost open slice of the track closes. */
static void close_slice(decoded *d, dtrack *t, devent *e)
{
	if (t->depth == 0) {
		tu_fail(__FILE__, __LINE__, "slice end at %llu without an open slice",
			(unsigned long long)e->time);
		return;
	}
	dslice *s = &d->slices[t->stack[--t->depth]];
	s->end = e->time;
	s->ended = 1;
	s->end_args = e->args;
	e->args = NULL;
}

/* An instant or a counter value. */
static void add_point(decoded *d, devent *e)
{
	dpoint **list = e->type == 3 ? &d->instants : &d->counters;
	size_t *n = e->type == 3 ? &d->ninstants : &d->ncounters;

	*list = push(*list, n, sizeof(dpoint));
	dpoint *p = &(*list)[*n - 1];
	p->track = e->uuid;
	p->time = e->time;
	p->value = e->counter;
	snprintf(p->name, sizeof p->name, "%s", e->name ? e->name : "");
	p->args = e->args;
	e->args = NULL;
}

/* Time order, then file order: how Perfetto's importer sorts events. */
static int event_order(const void *a, const void *b)
{
	const devent *x = a, *y = b;

	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->index < y->index ? -1 : x->index > y->index;
}

/* Replays the events in time order into slices, instants, counters. */
static void replay_events(decoded *d)
{
	if (d->nevents > 0)
		qsort(d->events, d->nevents, sizeof *d->events, event_order);
	for (size_t i = 0; i < d->nevents; i++) {
		devent *e = &d->events[i];
		dtrack *t = find_track(d, e->uuid);
		if (t == NULL)
			continue;
		if (e->type == 1)
			open_slice(d, t, e);
		else if (e->type == 2)
			close_slice(d, t, e);
		else if (e->type == 3 || e->type == 4)
			add_point(d, e);
	}
}

/* The fields of a TracePacket that matter before its payloads. */
typedef struct dpacket {
	uint64_t time, flags, sequence;
	int has_time, has_sequence, first;
	fld interned, event, track;
	int has_interned, has_event, has_track;
} dpacket;

/* First pass over a packet: its scalar fields and where its parts are. */
static void scan_packet(rd *r, dpacket *p)
{
	fld f;

	memset(p, 0, sizeof *p);
	while (rd_field(r, &f)) {
		switch (f.num) {
		case 8: p->has_time = want_wire(r, &f, 0); p->time = f.v; break;
		case 10: p->has_sequence = want_wire(r, &f, 0); p->sequence = f.v; break;
		case 13: want_wire(r, &f, 0); p->flags = f.v; break;
		case 87: want_wire(r, &f, 0); p->first = f.v != 0; break;
		case 11: p->has_event = want_wire(r, &f, 2); p->event = f; break;
		case 12: p->has_interned = want_wire(r, &f, 2); p->interned = f; break;
		case 60: p->has_track = want_wire(r, &f, 2); p->track = f; break;
		default: bad(r, "unknown TracePacket field");
		}
	}
}

/* One TracePacket: sequence, flags, interning, then its payload. */
static void decode_packet(decoded *d, rd *r)
{
	dpacket p;

	scan_packet(r, &p);
	if (!p.has_sequence || (d->packets > 0 && p.sequence != d->sequence))
		bad(r, "packet without the one sequence id");
	if (d->packets == 0)
		d->sequence = p.sequence;
	if (p.first != (d->packets == 0))
		bad(r, "first_packet_on_sequence not exactly on the first packet");
	d->first_marks += p.first;
	if (p.flags & 1) {
		clear_defs(d);
		d->state_valid = 1;
		d->clears++;
	}
	if (p.has_interned && !(p.flags & 1) && !(d->state_valid && (p.flags & 2)))
		bad(r, "interned data before the incremental state was cleared");
	if (p.has_interned) {
		rd s = sub(&p.interned);
		decode_interned(d, &s);
		if (!s.ok) r->ok = 0;
	}
	if (p.has_track + p.has_event != 1)
		bad(r, "a packet holds one track descriptor or one track event");
	rd s = sub(p.has_track ? &p.track : &p.event);
	if (p.has_track)
		decode_track(d, &s);
	else if (p.has_event)
		decode_event(d, &s, p.time, p.has_time, p.flags);
	if (!s.ok) r->ok = 0;
	d->packets++;
}

/* The whole file: Trace.packet records only; every slice closed. */
static void decode_trace(decoded *d, const uint8_t *data, size_t size)
{
	rd r = { data, data + size, 1 };
	fld f;

	memset(d, 0, sizeof *d);
	while (rd_field(&r, &f)) {
		if (f.num != 1 || !want_wire(&r, &f, 2)) {
			bad(&r, "top-level field other than Trace.packet");
			break;
		}
		rd s = sub(&f);
		decode_packet(d, &s);
		if (!s.ok)
			break;
	}
	CHECK(r.ok && r.p == r.end);
	replay_events(d);
	for (size_t i = 0; i < d->ntracks; i++)
		if (d->tracks[i].depth != 0)
			tu_fail(__FILE__, __LINE__, "track %s: %zu slices never closed",
				d->tracks[i].name, d->tracks[i].depth);
	for (size_t i = 0; i < d->nslices; i++) {
		const dslice *s = &d->slices[i];
		if (s->parent >= 0 && s->end > d->slices[s->parent].end)
			tu_fail(__FILE__, __LINE__, "slice %s ends after its parent", s->name);
		if (s->end < s->begin)
			tu_fail(__FILE__, __LINE__, "slice %s ends before it begins", s->name);
	}
}

/* Frees what decode_trace() allocated. */
static void decoded_free(decoded *d)
{
	for (size_t i = 0; i < d->ntracks; i++)
		free(d->tracks[i].stack);
	for (size_t i = 0; i < d->nslices; i++) {
		free(d->slices[i].args);
		free(d->slices[i].end_args);
	}
	for (size_t i = 0; i < d->ninstants; i++)
		free(d->instants[i].args);
	for (size_t i = 0; i < d->nevents; i++) {
		free(d->events[i].name);
		free(d->events[i].category);
		free(d->events[i].args);
	}
	free(d->events);
	clear_defs(d);
	free(d->tracks);
	free(d->slices);
	free(d->instants);
	free(d->counters);
}

/* ---- Driving the sink -------------------------------------------------------------- */

static char *scratch_dir;

/* A new writer to a new file of the scratch directory. */
static weft__perfetto_writer *open_writer(const char *name, int *fd, char *path, size_t cap)
{
	weft__perfetto_writer *w = NULL;

	snprintf(path, cap, "%s/%s", scratch_dir, name);
	*fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	REQUIRE(*fd >= 0);
	REQUIRE(weft__perfetto_writer_create(*fd, &w) == 0 && w != NULL);
	return w;
}

/* Finishes the writer and decodes its file. */
static void close_and_decode(weft__perfetto_writer *w, int fd, const char *path, decoded *d)
{
	size_t size;

	CHECK(weft__perfetto_writer_finish(w) == 0);
	weft__perfetto_writer_free(w);
	close(fd);
	uint8_t *data = (uint8_t *)tu_read_file(path, &size);
	REQUIRE(data != NULL);
	decode_trace(d, data, size);
	free(data);
}

/* protoc --decode_raw must parse the file, when protoc is installed. */
static void check_protoc(const char *path)
{
	char cmd[1024];

	if (system("command -v protoc >/dev/null 2>&1") != 0) {
		printf("protoc not found: --decode_raw check skipped\n");
		return;
	}
	snprintf(cmd, sizeof cmd, "protoc --decode_raw < '%s' > /dev/null", path);
	CHECK(system(cmd) == 0);
}

/* A view track as the view declares it. */
static weft__view_track track_of(uint32_t id, uint32_t parent, weft__view_track_kind kind,
				 int64_t pid, int64_t tid, const char *name)
{
	weft__view_track t = { id, parent, kind, pid, tid, -1, name, NULL };
	if (kind != WEFT__TRACK_PROCESS && kind != WEFT__TRACK_THREAD)
		t.channel = name;
	return t;
}

/* A view item with a NUL-terminated name. */
static weft__view_item item_of(const char *name, const char *category,
			       const weft_field *args, int n, unsigned flags)
{
	weft__view_item it = { .name = name, .name_len = (uint32_t)strlen(name),
			       .category = category, .args = args, .arg_count = n,
			       .flags = flags };
	return it;
}

/* A zeroed scalar field of a type, named. */
static weft_field scalar(const char *name, weft_type type)
{
	weft_field f;
	memset(&f, 0, sizeof f);
	f.name = name;
	f.name_len = (uint32_t)strlen(name);
	f.type = type;
	f.count = 1;
	return f;
}

/* The fields of every type, arrays of three kinds included. */
static int all_kinds_args(weft_field *a)
{
	static const uint8_t u16s[] = { 1, 0, 2, 0, 0xff, 0xff };        /* LE 1, 2, 65535 */
	static const uint8_t i32s[] = { 0xff, 0xff, 0xff, 0xff, 5, 0, 0, 0 }; /* -1, 5 */
	static const uint8_t strs[] = { 0, 3, 'a', 'b', 'c', 0, 0, 0, 2, 'd', 'e' };
	static const uint8_t bytes[] = { 0xde, 0xad, 0x00, 0x7f };
	int n = 0;

	a[n] = scalar("u8", WEFT_TYPE_U8); a[n++].v.u = 200;
	a[n] = scalar("u64", WEFT_TYPE_U64); a[n++].v.u = UINT64_MAX;
	a[n] = scalar("i16", WEFT_TYPE_I16); a[n++].v.i = -300;
	a[n] = scalar("i64", WEFT_TYPE_I64); a[n++].v.i = INT64_MIN;
	a[n] = scalar("f32", WEFT_TYPE_F32); a[n++].v.f = 0.25;
	a[n] = scalar("f64", WEFT_TYPE_F64); a[n++].v.f = -1e300;
	a[n] = scalar("flag", WEFT_TYPE_BOOL); a[n++].v.u = 1;
	a[n] = scalar("off", WEFT_TYPE_BOOL); a[n++].v.u = 0;
	a[n] = scalar("text", WEFT_TYPE_STR); a[n].v.s.ptr = "hello, world"; a[n++].v.s.len = 5;
	a[n] = scalar("empty", WEFT_TYPE_STR); a[n].v.s.ptr = ""; a[n++].v.s.len = 0;
	a[n] = scalar("blob", WEFT_TYPE_BYTES); a[n].v.s.ptr = (const char *)bytes; a[n++].v.s.len = 4;
	a[n] = scalar("u16s", WEFT_TYPE_U16); a[n].is_array = 1; a[n].count = 3;
	a[n].raw = u16s; a[n++].raw_size = sizeof u16s;
	a[n] = scalar("i32s", WEFT_TYPE_I32); a[n].is_array = 1; a[n].count = 2;
	a[n].raw = i32s; a[n++].raw_size = sizeof i32s;
	a[n] = scalar("strs", WEFT_TYPE_STR); a[n].is_array = 1; a[n].count = 3;
	a[n].raw = strs; a[n].raw_size = sizeof strs; a[n++].big_endian = 1;
	return n;
}

static const char ALL_KINDS_TEXT[] =
	"u8=u:200;u64=u:18446744073709551615;i16=i:-300;i64=i:-9223372036854775808;"
	"f32=d:0.25;f64=d:-1.0000000000000001e+300;flag=b:1;off=b:0;text=s:hello;empty=s:;"
	"blob=s:dead007f;u16s=a:[u:1,u:2,u:65535];i32s=a:[i:-1,i:5];strs=a:[s:abc,s:,s:de]";

/* The nth decoded slice with this name, or NULL. */
static const dslice *find_slice(const decoded *d, const char *name, size_t nth)
{
	for (size_t i = 0; i < d->nslices; i++)
		if (strcmp(d->slices[i].name, name) == 0 && nth-- == 0)
			return &d->slices[i];
	return NULL;
}

/* s, or "" for NULL (args of items without fields). */
static const char *text_or_empty(const char *s)
{
	return s ? s : "";
}

/* ---- The tests ---------------------------------------------------------------------- */

#define U(id) (WEFT__PERFETTO_UUID_BASE + (id))

/* The tracks of the main test: two processes, threads, a channel, a
 * state track, a counter; one process and tid negative. */
static void declare_tracks(const weft__view_sink *s, weft__view_track *t)
{
	t[1] = track_of(1, 0, WEFT__TRACK_PROCESS, 100, 0, "loom.x/proc.100");
	t[2] = track_of(2, 1, WEFT__TRACK_THREAD, 100, 1001, "thread.1001");
	t[3] = track_of(3, 1, WEFT__TRACK_THREAD, 100, 1002, "thread.1002");
	t[4] = track_of(4, 2, WEFT__TRACK_CHANNEL, 100, 1001, "nosv VT");
	t[5] = track_of(5, 2, WEFT__TRACK_STATE, 100, 1001, "running");
	t[6] = track_of(6, 3, WEFT__TRACK_COUNTER, 100, 1002, "events_processed");
	t[7] = track_of(7, 0, WEFT__TRACK_PROCESS, -7, 0, "pe.-7");
	t[8] = track_of(8, 7, WEFT__TRACK_THREAD, -7, -8, "kp.-8");
	for (int i = 1; i <= 8; i++)
		s->track(s->ctx, &t[i]);
}

/* The tracks of declare_tracks(), decoded: kinds, uuids, parents, names. */
static void check_tracks(const decoded *d)
{
	CHECK_EQ_U64(d->ntracks, 8);
	if (d->ntracks != 8)
		return;
	const dtrack *t = d->tracks;
	CHECK(t[0].kind == 'P' && t[0].uuid == U(1) && t[0].parent == 0 && t[0].pid == 100);
	CHECK_EQ_STR(t[0].name, "loom.x/proc.100");
	CHECK(t[1].kind == 'T' && t[1].uuid == U(2) && t[1].parent == U(1));
	CHECK(t[1].pid == 100 && t[1].tid == 1001);
	CHECK_EQ_STR(t[1].name, "thread.1001");
	CHECK(t[3].kind == 'N' && t[3].parent == U(2));
	CHECK_EQ_STR(t[3].name, "nosv VT");
	CHECK(t[4].kind == 'N' && t[4].parent == U(2));
	CHECK_EQ_STR(t[4].name, "running");
	CHECK(t[5].kind == 'C' && t[5].parent == U(3));
	CHECK_EQ_STR(t[5].name, "events_processed");
	CHECK(t[6].kind == 'P' && t[6].pid == -7);
	CHECK(t[7].kind == 'T' && t[7].pid == -7 && t[7].tid == -8 && t[7].parent == U(7));
}

/* Nested spans with args on begin and end, every value type. */
static void drive_nested(const weft__view_sink *s, const weft__view_track *t)
{
	weft_field args[16], leave[2];
	int n = all_kinds_args(args);
	weft__view_item it;

	it = item_of("outer", "nosv", args, n, 0);
	s->begin(s->ctx, &t[2], 1000, &it);
	leave[0] = scalar("i8", WEFT_TYPE_I8);
	leave[0].v.i = -1;
	it = item_of("inner", "nosv", leave, 1, 0);
	s->begin(s->ctx, &t[2], 1100, &it);
	leave[0] = scalar("code", WEFT_TYPE_U32);
	leave[0].v.u = 7;
	it = item_of("", NULL, leave, 1, 0);
	s->end(s->ctx, &t[2], 1200, &it);
	it = item_of("", NULL, NULL, 0, 0);
	s->end(s->ctx, &t[2], 1300, &it);
}

/* drive_nested(): times, depths, parent, category and every value. */
static void check_nested(const decoded *d)
{
	const dslice *outer = find_slice(d, "outer", 0), *inner = find_slice(d, "inner", 0);

	REQUIRE(outer != NULL && inner != NULL);
	CHECK(outer->track == U(2) && outer->begin == 1000 && outer->end == 1300);
	CHECK(outer->depth == 0 && inner->depth == 1);
	CHECK(inner->parent == outer - d->slices);
	CHECK(inner->begin == 1100 && inner->end == 1200);
	CHECK_EQ_STR(outer->category, "nosv");
	CHECK_EQ_STR(text_or_empty(outer->args), ALL_KINDS_TEXT);
	CHECK_EQ_STR(text_or_empty(inner->args), "i8=i:-1");
	CHECK_EQ_STR(text_or_empty(inner->end_args), "code=u:7");
	CHECK(outer->end_args == NULL);
}

/* A long name (> 127 bytes: two-byte lengths), a clipped begin and an
 * unclosed end, an instant, complete spans, counters. */
static void drive_others(const weft__view_sink *s, const weft__view_track *t, char *long_name)
{
	weft_field arg = scalar("peer", WEFT_TYPE_I32);
	weft__view_item it;

	memset(long_name, 'L', 300);
	long_name[0] = 'X';
	long_name[300] = '\0';
	it = item_of(long_name, "nosv", NULL, 0, 0);
	s->begin(s->ctx, &t[4], 1500, &it);
	it = item_of("", NULL, NULL, 0, 0);
	s->end(s->ctx, &t[4], 1600, &it);
	it = item_of("Running", NULL, NULL, 0, WEFT__VIEW_CLIPPED);
	s->begin(s->ctx, &t[5], 500, &it);
	it = item_of("", NULL, NULL, 0, WEFT__VIEW_UNCLOSED);
	it.event = NULL;
	s->end(s->ctx, &t[5], 3000, &it);
	arg.v.i = -12;
	it = item_of("MPI_Send", "mpi", &arg, 1, 0);
	s->instant(s->ctx, &t[3], 1700, &it);
	it = (weft__view_item){ .category = "" }; /* empty name and category */
	s->instant(s->ctx, &t[3], 1800, &it);
	it = item_of("heph", "heph", &arg, 1, 0);
	s->complete(s->ctx, &t[3], 2000, 2500, &it);
	it = item_of("heph child", NULL, NULL, 0, WEFT__VIEW_CLIPPED);
	s->complete(s->ctx, &t[3], 2100, 2500, &it);
	s->counter(s->ctx, &t[6], 2000, 1.0);
	s->counter(s->ctx, &t[6], 2100, -2.5);
	s->counter(s->ctx, &t[6], 2200, 1e-300);
	it = item_of("on kp", NULL, NULL, 0, 0);
	s->complete(s->ctx, &t[8], 10, 20, &it);
}

/* drive_others(): the long name, the flags, the instant, the complete
 * spans nested after sorting, the counters. */
static void check_others(const decoded *d, const char *long_name)
{
	const dslice *l = find_slice(d, long_name, 0);
	REQUIRE(l != NULL);
	CHECK(l->track == U(4) && l->begin == 1500 && l->end == 1600);

	const dslice *run = find_slice(d, "Running", 0);
	REQUIRE(run != NULL);
	CHECK(run->track == U(5) && run->begin == 500 && run->end == 3000);
	CHECK_EQ_STR(text_or_empty(run->args), "clipped=b:1");
	CHECK_EQ_STR(text_or_empty(run->end_args), "unclosed=b:1");

	REQUIRE(d->ninstants == 2);
	CHECK(d->instants[1].time == 1800 && d->instants[1].name[0] == '\0');
	CHECK(d->instants[1].args == NULL);
	CHECK(d->instants[0].track == U(3) && d->instants[0].time == 1700);
	CHECK_EQ_STR(d->instants[0].name, "MPI_Send");
	CHECK_EQ_STR(text_or_empty(d->instants[0].args), "peer=i:-12");

	const dslice *h = find_slice(d, "heph", 0), *c = find_slice(d, "heph child", 0);
	REQUIRE(h != NULL && c != NULL);
	CHECK(h->begin == 2000 && h->end == 2500 && h->depth == 0);
	CHECK(c->begin == 2100 && c->end == 2500 && c->depth == 1);
	CHECK_EQ_STR(text_or_empty(h->args), "peer=i:-12");
	CHECK_EQ_STR(h->category, "heph");
	CHECK_EQ_STR(text_or_empty(c->args), "clipped=b:1");
	CHECK(h->end_args == NULL && c->end_args == NULL);

	REQUIRE(d->ncounters == 3);
	CHECK(d->counters[0].track == U(6) && d->counters[0].time == 2000);
	CHECK(d->counters[0].value == 1.0 && d->counters[1].value == -2.5);
	CHECK(d->counters[2].value == 1e-300);

	const dslice *k = find_slice(d, "on kp", 0);
	REQUIRE(k != NULL);
	CHECK(k->track == U(8) && k->begin == 10 && k->end == 20);
}

/* Many spans with the same names: each string is interned once. */
static void drive_reuse(const weft__view_sink *s, const weft__view_track *t)
{
	weft_field args[16];
	int n = all_kinds_args(args);
	weft__view_item it;

	for (uint64_t i = 0; i < 5000; i++) {
		it = item_of(i % 2 ? "outer" : "inner", "nosv", args, n, 0);
		s->begin(s->ctx, &t[2], 10000 + 10 * i, &it);
		it = item_of("", NULL, args, 1, 0);
		s->end(s->ctx, &t[2], 10000 + 10 * i + 5, &it);
	}
}

/* drive_reuse(): every string defined once; the last span intact. */
static void check_reuse(const decoded *d)
{
	/* names: outer, inner, the long one, Running, MPI_Send, "", heph,
	 * heph child, on kp; categories: nosv, mpi, "", heph; annotation
	 * names: 14 kinds, i8, code, peer, clipped, unclosed. */
	CHECK_EQ_U64(d->definitions[2], 9);
	CHECK_EQ_U64(d->definitions[1], 4);
	CHECK_EQ_U64(d->definitions[3], 19);
	CHECK_EQ_U64(d->clears, 1);
	CHECK_EQ_U64(d->first_marks, 1);
	const dslice *last = find_slice(d, "outer", 2500);
	REQUIRE(last != NULL);
	CHECK(last->begin == 10000 + 10 * 4999 && last->end == last->begin + 5);
	CHECK_EQ_STR(text_or_empty(last->args), ALL_KINDS_TEXT);
	CHECK_EQ_STR(text_or_empty(last->end_args), "u8=u:200");
}

/* The sink driven with every kind of track and event, then decoded. */
static void test_main_trace(void)
{
	char path[1024], long_name[301];
	weft__view_track t[9];
	decoded d;
	int fd;
	weft__perfetto_writer *w = open_writer("main.pftrace", &fd, path, sizeof path);
	const weft__view_sink *s = weft__perfetto_writer_sink(w);
	weft__perfetto_stats stats;

	REQUIRE(s != NULL && s->track && s->begin && s->end && s->complete && s->instant &&
		s->counter);
	declare_tracks(s, t);
	drive_nested(s, t);
	drive_others(s, t, long_name);
	drive_reuse(s, t);
	weft__perfetto_writer_stats(w, &stats);
	CHECK_EQ_U64(stats.tracks, 8);
	CHECK_EQ_U64(stats.packets, 8 + 4 + 2 + 2 + 2 + 4 + 3 + 2 + 10000);
	CHECK_EQ_U64(stats.interned, 9 + 4 + 19);
	CHECK_EQ_U64(stats.intern_resets, 0);
	close_and_decode(w, fd, path, &d);
	CHECK_EQ_U64(d.packets, stats.packets);
	check_tracks(&d);
	check_nested(&d);
	check_others(&d, long_name);
	check_reuse(&d);
	decoded_free(&d);
	check_protoc(path);
}

/* Distinct names past a tiny intern bound: the state is cleared again and
 * again, and the iid rule holds across the clears. */
static void test_intern_reset(void)
{
	char path[1024], name[32];
	weft__view_track t[9];
	decoded d;
	int fd;
	weft__perfetto_writer *w = open_writer("reset.pftrace", &fd, path, sizeof path);
	const weft__view_sink *s = weft__perfetto_writer_sink(w);
	weft__perfetto_stats stats;
	weft_field arg = scalar("n", WEFT_TYPE_U32);

	weft__perfetto_writer_set_intern_limit(w, 1000);
	declare_tracks(s, t);
	for (unsigned i = 0; i < 2000; i++) {
		snprintf(name, sizeof name, "span %u", i % 700);
		arg.v.u = i;
		weft__view_item it = item_of(name, "cat", &arg, 1, 0);
		s->begin(s->ctx, &t[3], 100 + 2 * (uint64_t)i, &it);
		it = item_of("", NULL, &arg, 1, 0);
		s->end(s->ctx, &t[3], 101 + 2 * (uint64_t)i, &it);
	}
	weft__perfetto_writer_stats(w, &stats);
	CHECK(stats.intern_resets > 10);
	close_and_decode(w, fd, path, &d);
	CHECK_EQ_U64(d.clears, stats.intern_resets + 1);
	CHECK_EQ_U64(d.nslices, 2000);
	for (size_t i = 0; i < d.nslices && i < 2000; i++) {
		snprintf(name, sizeof name, "span %zu", i % 700);
		char want[64];
		snprintf(want, sizeof want, "n=u:%zu", i);
		if (strcmp(d.slices[i].name, name) != 0 ||
		    strcmp(text_or_empty(d.slices[i].args), want) != 0 ||
		    strcmp(text_or_empty(d.slices[i].end_args), want) != 0) {
			tu_fail(__FILE__, __LINE__, "slice %zu: %s %s", i, d.slices[i].name,
				text_or_empty(d.slices[i].args));
			break;
		}
	}
	decoded_free(&d);
}

/* Packets larger than one reservation of the output buffer: a long
 * string, a long array, a long name; exact bytes back. */
static void test_large_packets(void)
{
	char path[1024];
	weft__view_track t[9];
	decoded d;
	int fd;
	weft__perfetto_writer *w = open_writer("large.pftrace", &fd, path, sizeof path);
	const weft__view_sink *s = weft__perfetto_writer_sink(w);
	size_t big = 100000, elems = 3000;
	char *text = malloc(big + 1), *want = malloc(elems * 24 + 64);
	uint8_t *raw = malloc(elems * 8);
	weft_field args[2];

	REQUIRE(text && want && raw);
	for (size_t i = 0; i < big; i++)
		text[i] = (char)('a' + i % 26);
	text[big] = '\0';
	for (size_t i = 0; i < elems; i++) {
		uint64_t v = i * 1000003u;
		memcpy(raw + 8 * i, &v, 8); /* host order: little-endian expected below */
	}
	args[0] = scalar("text", WEFT_TYPE_STR);
	args[0].v.s.ptr = text;
	args[0].v.s.len = big;
	args[1] = scalar("values", WEFT_TYPE_U64);
	args[1].is_array = 1;
	args[1].count = (uint32_t)elems;
	args[1].raw = raw;
	args[1].raw_size = elems * 8;
	declare_tracks(s, t);
	weft__view_item it = item_of(text, "big", args, 2, 0);
	it.name_len = 5000;
	s->begin(s->ctx, &t[2], 1, &it);
	it = item_of("", NULL, NULL, 0, 0);
	s->end(s->ctx, &t[2], 2, &it);
	it = item_of("small", NULL, NULL, 0, 0);
	s->instant(s->ctx, &t[2], 3, &it);
	close_and_decode(w, fd, path, &d);
	REQUIRE(d.nslices == 1 && d.ninstants == 1);
	CHECK(strlen(d.slices[0].name) == sizeof d.slices[0].name - 1);
	CHECK(strncmp(d.slices[0].name, text, sizeof d.slices[0].name - 1) == 0);
	char *args_text = d.slices[0].args;
	REQUIRE(args_text != NULL);
	CHECK(strncmp(args_text, "text=s:", 7) == 0);
	/* the decoder's append() cuts pieces at MAX_TEXT */
	CHECK(strncmp(args_text + 7, text, MAX_TEXT - 8) == 0);
	char *values = strstr(args_text, ";values=a:[");
	REQUIRE(values != NULL);
	char *p = want;
	for (size_t i = 0; i < elems; i++)
		p += sprintf(p, "%su:%llu", i ? "," : "", (unsigned long long)(i * 1000003u));
	strcpy(p, "]");
	CHECK_EQ_STR(values + strlen(";values=a:["), want);
	decoded_free(&d);
	free(text);
	free(want);
	free(raw);
	check_protoc(path);
}

/*
 * Background mode (writer thread, positioned writes, write-behind): many
 * buffers handed over, packets larger than a buffer's slack written
 * directly in between; everything lands in order.
 */
static void test_background(void)
{
	char path[1024];
	weft__view_track t[9];
	decoded d;
	weft__perfetto_options o = { 1, 1 };
	weft__perfetto_writer *w = NULL;
	weft__perfetto_stats stats;
	weft_field args[16], big;
	int n = all_kinds_args(args);
	size_t size = 200000;
	char *text = malloc(size);

	REQUIRE(text != NULL);
	memset(text, 'b', size);
	big = scalar("big", WEFT_TYPE_STR);
	big.v.s.ptr = text;
	big.v.s.len = size;
	snprintf(path, sizeof path, "%s/background.pftrace", scratch_dir);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	REQUIRE(fd >= 0);
	REQUIRE(weft__perfetto_writer_create_with(fd, &o, &w) == 0);
	const weft__view_sink *s = weft__perfetto_writer_sink(w);
	declare_tracks(s, t);
	for (uint64_t i = 0; i < 40000; i++) {
		weft__view_item it = item_of(i % 1000 ? "span" : "big span", "cat",
					     i % 1000 ? args : &big, i % 1000 ? n : 1, 0);
		s->begin(s->ctx, &t[2 + i % 2], 100 + 4 * i, &it);
		it = item_of("", NULL, NULL, 0, 0);
		s->end(s->ctx, &t[2 + i % 2], 102 + 4 * i, &it);
	}
	weft__perfetto_writer_stats(w, &stats);
	CHECK(stats.bytes > (8u << 20));
	close_and_decode(w, fd, path, &d);
	size_t file_size;
	char *data = tu_read_file(path, &file_size);
	CHECK_EQ_U64(file_size, stats.bytes);
	free(data);
	CHECK_EQ_U64(d.nslices, 40000);
	for (size_t i = 0; i < d.nslices && i < 40000; i++) {
		const dslice *sl = &d.slices[i];
		int is_big = i % 1000 == 0;
		if (sl->begin != 100 + 4 * i || sl->end != sl->begin + 2 ||
		    strcmp(sl->name, is_big ? "big span" : "span") != 0 ||
		    (is_big ? strlen(text_or_empty(sl->args)) != MAX_TEXT - 1 + 4
			    : strcmp(text_or_empty(sl->args), ALL_KINDS_TEXT) != 0)) {
			tu_fail(__FILE__, __LINE__, "slice %zu: %s at %llu", i, sl->name,
				(unsigned long long)sl->begin);
			break;
		}
	}
	decoded_free(&d);
	free(text);
}

/* A failed write is reported by _finish as WEFT_EIO. */
static void test_write_error(void)
{
	int fd = open("/dev/full", O_WRONLY);
	weft__perfetto_writer *w = NULL;
	weft__view_track t[9];

	if (fd < 0) {
		printf("/dev/full missing: write error check skipped\n");
		return;
	}
	REQUIRE(weft__perfetto_writer_create(fd, &w) == 0);
	declare_tracks(weft__perfetto_writer_sink(w), t);
	drive_nested(weft__perfetto_writer_sink(w), t);
	CHECK_EQ_I64(weft__perfetto_writer_finish(w), WEFT_EIO);
	CHECK(strstr(weft_last_error(), "write") != NULL);
	weft__perfetto_writer_free(w);
	weft__perfetto_writer_free(NULL);
	close(fd);
}

/*
 * pids and tids are the view's, written as given: the view keeps them in
 * [1, INT32_MAX] (test_view.c checks that), the largest included.
 */
static void test_numbers(void)
{
	char path[1024];
	decoded d;
	int fd;
	weft__perfetto_writer *w = open_writer("numbers.pftrace", &fd, path, sizeof path);
	const weft__view_sink *s = weft__perfetto_writer_sink(w);
	weft__view_track t[4];

	t[1] = track_of(1, 0, WEFT__TRACK_PROCESS, INT32_MAX, 0, "p");
	t[2] = track_of(2, 1, WEFT__TRACK_THREAD, INT32_MAX, INT32_MAX - 1, "a");
	t[3] = track_of(3, 1, WEFT__TRACK_THREAD, INT32_MAX, 1, "b");
	for (int i = 1; i <= 3; i++)
		s->track(s->ctx, &t[i]);
	close_and_decode(w, fd, path, &d);
	REQUIRE(d.ntracks == 3);
	CHECK_EQ_I64(d.tracks[0].pid, INT32_MAX);
	CHECK_EQ_I64(d.tracks[1].pid, INT32_MAX);
	CHECK_EQ_I64(d.tracks[1].tid, INT32_MAX - 1);
	CHECK_EQ_I64(d.tracks[2].tid, 1);
	decoded_free(&d);
}

/* An empty trace is an empty file (no packet at all). */
static void test_empty(void)
{
	char path[1024];
	decoded d;
	int fd;
	weft__perfetto_writer *w = open_writer("empty.pftrace", &fd, path, sizeof path);

	close_and_decode(w, fd, path, &d);
	CHECK_EQ_U64(d.packets, 0);
	decoded_free(&d);
}

/* Every test in a scratch directory (kept when a check fails). */
int main(void)
{
	scratch_dir = tu_mkdtemp("perfetto");
	REQUIRE(scratch_dir != NULL);
	test_main_trace();
	test_intern_reset();
	test_large_packets();
	test_background();
	test_write_error();
	test_numbers();
	test_empty();
	return tu_finish_dir(scratch_dir);
}
