/* SPDX-License-Identifier: MIT */
/*
 * test_ovni_layouts.c - events whose payload differs from the signature
 * table of the ovni 1.14 models, as real runtimes and ovni's own tests
 * write them (nOS-V 4.1's 8-byte OCn, OB. with a payload or as a jumbo
 * event, VWC with one i64 per counter): the named fields are decoded, the
 * rest kept as raw bytes, one note per event kind; a payload too short for
 * its signature is still an error of weft_event_fields().
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "weft/weft.h"

static char *scratch_dir;

/* A path in this test's scratch directory. */
static const char *scratch_path(const char *name)
{
	static char buf[4096];
	if (scratch_dir == NULL)
		scratch_dir = tu_mkdtemp("weft-ovni-layouts");
	REQUIRE(scratch_dir != NULL);
	snprintf(buf, sizeof buf, "%s/%s", scratch_dir, name);
	return buf;
}

/* A stream file being built: header, then events appended. */
typedef struct stream_buf {
	unsigned char bytes[4096];
	size_t len;
} stream_buf;

static void put(stream_buf *s, const void *p, size_t n)
{
	REQUIRE(s->len + n <= sizeof s->bytes);
	memcpy(s->bytes + s->len, p, n);
	s->len += n;
}

static void stream_init(stream_buf *s)
{
	s->len = 0;
	put(s, "ovni\1\0\0\0", 8);
}

/* A normal event with `n` payload bytes (n = 0 or 2..16). */
static void put_event(stream_buf *s, const char *mcv, uint64_t clock,
		      const void *payload, unsigned n)
{
	unsigned char flags = (unsigned char)(n ? n - 1 : 0);
	put(s, &flags, 1);
	put(s, mcv, 3);
	put(s, &clock, 8);
	put(s, payload, n);
}

/* A jumbo event: flags 0x13, the u32 size, the data. */
static void put_jumbo(stream_buf *s, const char *mcv, uint64_t clock,
		      const void *data, uint32_t n)
{
	unsigned char flags = 0x13;
	put(s, &flags, 1);
	put(s, mcv, 3);
	put(s, &clock, 8);
	put(s, &n, 4);
	put(s, data, n);
}

/* Writes the stream as a single .obs file, opens it and its cursor. */
static weft_trace *open_stream(const stream_buf *s, const char *name, weft_cursor **c)
{
	const char *path = scratch_path(name);
	FILE *f = fopen(path, "wb");
	REQUIRE(f != NULL);
	REQUIRE(fwrite(s->bytes, 1, s->len, f) == s->len);
	fclose(f);
	weft_open_options o;
	weft_open_options_init(&o);
	weft_trace *t = NULL;
	REQUIRE(weft_trace_open(path, &o, &t) == 0);
	REQUIRE(weft_cursor_create_stream(t, 0, c) == 0);
	return t;
}

/* The notes of the trace, as "MCV@offset" joined by spaces. */
static void notes_of(const weft_trace *t, char *out, size_t cap)
{
	out[0] = '\0';
	for (size_t i = 0; i < weft_trace_diag_count(t); i++) {
		const weft_diag *d = weft_trace_diag(t, i);
		CHECK(d->severity == WEFT_SEV_NOTE);
		size_t len = strlen(out);
		snprintf(out + len, cap - len, "%s%.3s@%llu", len ? " " : "", d->message,
			 (unsigned long long)d->offset);
	}
}

static int field_is(const weft_field *f, const char *name)
{
	return f->name_len == strlen(name) && memcmp(f->name, name, f->name_len) == 0;
}

/* Longer payloads: fields named by the table, then "extra". */
static void test_longer_payloads(void)
{
	stream_buf s;
	int32_t ocn[2] = { 4, 3 };            /* nOS-V 4.1: count, maxcpu */
	int32_t ocn_short[1] = { 7 };
	unsigned char burst[16] = { 1, 2, 3 };
	int64_t hwc[2] = { 133, -186 };
	unsigned char hwc_odd[12] = { 9, 0, 0, 0, 0, 0, 0, 0, 0xaa, 0xbb, 0xcc, 0xdd };
	unsigned char vyc[12] = { 5, 0, 0, 0, 'a', 'b', 0, 0xee, 0xff };

	stream_init(&s);
	put_event(&s, "OCn", 10, ocn, 8);          /* 8 */
	put_event(&s, "OCn", 11, ocn_short, 4);    /* 28: the table's size */
	put_event(&s, "OB.", 12, burst, 16);       /* 44 */
	put_jumbo(&s, "OB.", 13, burst, 16);       /* 72 */
	put_jumbo(&s, "VWC", 14, hwc, 16);         /* 104 */
	put_jumbo(&s, "VWC", 15, hwc_odd, 12);     /* 136 */
	put_jumbo(&s, "VYc", 16, vyc, 9);          /* 164 */
	put_event(&s, "OCn", 17, ocn, 8);          /* 189 */
	weft_cursor *c;
	weft_trace *t = open_stream(&s, "longer.obs", &c);
	const weft_event *ev;
	weft_field f[4];

	REQUIRE(weft_cursor_next(c, &ev) == 1);
	CHECK(weft_event_fields(t, ev, f, 4) == 2);
	CHECK(field_is(&f[0], "cpu") && f[0].type == WEFT_TYPE_I32 && f[0].v.i == 4);
	CHECK(field_is(&f[1], "extra") && f[1].type == WEFT_TYPE_BYTES);
	CHECK(f[1].v.s.len == 4 && memcmp(f[1].v.s.ptr, &ocn[1], 4) == 0);
	/* Fewer slots than fields: the count still says how many. */
	CHECK(weft_event_fields(t, ev, f, 1) == 2);

	REQUIRE(weft_cursor_next(c, &ev) == 1);
	CHECK(weft_event_fields(t, ev, f, 4) == 1 && f[0].v.i == 7);

	/* OB. names no fields: its bytes are shown raw (0 fields). */
	REQUIRE(weft_cursor_next(c, &ev) == 1);
	CHECK(weft_event_fields(t, ev, f, 4) == 0);
	REQUIRE(weft_cursor_next(c, &ev) == 1);
	CHECK((ev->flags & WEFT_EVENT_JUMBO) && weft_event_fields(t, ev, f, 4) == 0);

	/* VWC: one i64 per counter. */
	REQUIRE(weft_cursor_next(c, &ev) == 1);
	CHECK(weft_event_fields(t, ev, f, 4) == 1);
	CHECK(field_is(&f[0], "value") && f[0].is_array && f[0].count == 2 &&
	      f[0].type == WEFT_TYPE_I64);
	weft_field e;
	CHECK(weft_field_element(&f[0], 1, &e) == 0 && e.v.i == -186);
	REQUIRE(weft_cursor_next(c, &ev) == 1);
	CHECK(weft_event_fields(t, ev, f, 4) == 2);
	CHECK(f[0].is_array && f[0].count == 1 && field_is(&f[1], "extra") &&
	      f[1].v.s.len == 4);

	/* A string field, then bytes after its NUL. */
	REQUIRE(weft_cursor_next(c, &ev) == 1);
	CHECK(weft_event_fields(t, ev, f, 4) == 3);
	CHECK(f[0].v.u == 5 && f[1].v.s.len == 2 && field_is(&f[2], "extra") &&
	      f[2].v.s.len == 2);

	REQUIRE(weft_cursor_next(c, &ev) == 1);
	CHECK(weft_cursor_next(c, &ev) == 0);
	weft_cursor_free(c);

	/* One note per event kind, at its first event. */
	char notes[512];
	notes_of(t, notes, sizeof notes);
	CHECK_EQ_STR(notes, "OCn@8 OB.@44 VWC@136");
	weft_trace_free(t);
}

/* Shorter payloads stay errors of weft_event_fields(), without a note. */
static void test_shorter_payloads(void)
{
	stream_buf s;
	int32_t cpu = 1;
	int64_t half[1] = { 3 };

	stream_init(&s);
	put_event(&s, "OHx", 1, &cpu, 4);   /* the table: 16 bytes */
	put_jumbo(&s, "VWC", 2, half, 4);   /* less than one counter */
	weft_cursor *c;
	weft_trace *t = open_stream(&s, "shorter.obs", &c);
	const weft_event *ev;
	weft_field f[4];
	REQUIRE(weft_cursor_next(c, &ev) == 1);
	CHECK(weft_event_fields(t, ev, f, 4) == WEFT_EFORMAT);
	CHECK(strstr(weft_last_error(), "OHx expects 16 payload bytes") != NULL);
	REQUIRE(weft_cursor_next(c, &ev) == 1);
	CHECK(weft_event_fields(t, ev, f, 4) == WEFT_EFORMAT);
	weft_cursor_free(c);
	CHECK(weft_trace_diag_count(t) == 0);
	weft_trace_free(t);
}

int main(void)
{
	test_longer_payloads();
	test_shorter_payloads();
	return tu_finish_dir(scratch_dir);
}
