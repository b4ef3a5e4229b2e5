/* SPDX-License-Identifier: MIT */
/*
 * test_heph_reader.c - the Heph reader against the reference vectors
 * (heph_sample.bin.log: streams, substreams, every attribute type, the call
 * tree) and against hand-built files for every kind of bad input: wrong
 * magic, impossible sizes, unknown types, the bare array type, strings past
 * the packet, invalid UTF-8, truncation, lost and wrapped counters. Also
 * the spilled (external-sort) index against the in-memory one, and random
 * corruptions that must never crash (CI runs this under ASan and UBSan).
 * Every trace that opens is also opened with a helper thread (the scan in
 * two halves), which must change nothing.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/internal.h"
#include "formats/heph/heph_internal.h"
#include "testutil.h"
#include "weft/weft.h"

static char sample[4096];
static char *dir;

/* ---- Building packets by hand ------------------------------------------------ */

typedef struct buf {
	unsigned char *p;
	size_t len, cap;
} buf;

static void put(buf *b, const void *data, size_t n)
{
	if (b->len + n > b->cap) {
		b->cap = (b->len + n) * 2 + 256;
		b->p = realloc(b->p, b->cap);
		REQUIRE(b->p != NULL);
	}
	memcpy(b->p + b->len, data, n);
	b->len += n;
}

static void put_be(buf *b, uint64_t v, int bytes)
{
	unsigned char tmp[8];
	for (int i = 0; i < bytes; i++)
		tmp[i] = (unsigned char)(v >> (8 * (bytes - 1 - i)));
	put(b, tmp, (size_t)bytes);
}

static void put_str(buf *b, const char *s)
{
	put_be(b, strlen(s), 2);
	put(b, s, strlen(s));
}

/* Patches the size field of the packet that starts at `start`. */
static void end_packet(buf *b, size_t start)
{
	uint32_t n = (uint32_t)(b->len - start);
	for (int i = 0; i < 4; i++)
		b->p[start + 4 + i] = (unsigned char)(n >> (8 * (3 - i)));
}

static void add_epoch(buf *b, uint64_t epoch)
{
	size_t start = b->len;
	put_be(b, 0x75D11D4D, 4);
	put_be(b, 0, 4);
	put_str(b, "epoch");
	put_be(b, epoch, 8);
	end_packet(b, start);
}

/* An event header; attributes may follow, then end_packet(). */
static size_t begin_event(buf *b, uint32_t stream, uint32_t counter, uint64_t sub,
			  uint64_t start, uint64_t end, const char *desc)
{
	size_t at = b->len;
	put_be(b, 0xC1FC1FB7, 4);
	put_be(b, 0, 4);
	put_be(b, stream, 4);
	put_be(b, counter, 4);
	put_be(b, sub, 8);
	put_be(b, start, 8);
	put_be(b, end, 8);
	put_str(b, desc);
	return at;
}

static void add_event(buf *b, uint32_t stream, uint32_t counter, uint64_t start,
		      uint64_t end, const char *desc)
{
	end_packet(b, begin_event(b, stream, counter, 0, start, end, desc));
}

static char *write_file(const char *name, const buf *b)
{
	static char path[4200];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	FILE *f = fopen(path, "wb");
	REQUIRE(f != NULL);
	CHECK(fwrite(b->p, 1, b->len, f) == b->len);
	fclose(f);
	return path;
}

/* ---- Helpers over the API ------------------------------------------------------ */

static int check_same_with_helper(const char *path);

static weft_trace *open_ok(const char *path, const weft_open_options *o)
{
	weft_trace *t = NULL;
	int rc = weft_trace_open(path, o, &t);
	if (rc < 0)
		fprintf(stderr, "open %s: %s\n", path, weft_last_error());
	REQUIRE(rc == 0);
	CHECK(weft_trace_format(t) == WEFT_FORMAT_HEPH);
	return t;
}

/* The diagnostic whose message contains `text`, or NULL. */
static const weft_diag *find_diag(const weft_trace *t, const char *text)
{
	for (size_t i = 0; i < weft_trace_diag_count(t); i++)
		if (strstr(weft_trace_diag(t, i)->message, text) != NULL)
			return weft_trace_diag(t, i);
	return NULL;
}

static long count_events(weft_trace *t)
{
	weft_cursor *c;
	const weft_event *ev;
	long n = 0;
	REQUIRE(weft_cursor_create(t, NULL, &c) == 0);
	while (weft_cursor_next(c, &ev) == 1)
		n++;
	weft_cursor_free(c);
	return n;
}

/* ---- The reference vector ------------------------------------------------------- */

static void test_sample_streams(void)
{
	weft_trace *t = open_ok(sample, NULL);
	static const char *paths[] = {
		"stream.0/substream.0", "stream.1/substream.0",
		"stream.1/substream.94355107131408", "stream.1/substream.94355107131632",
		"stream.2/substream.0", "stream.2/substream.7",
	};
	REQUIRE(weft_trace_stream_count(t) == 6);
	for (size_t i = 0; i < 6; i++) {
		const weft_stream_info *s = weft_trace_stream(t, i);
		CHECK_EQ_STR(s->path, paths[i]);
		const weft_node *n = weft_trace_node(t, s->node);
		CHECK_EQ_STR(n->kind, "substream");
		CHECK_EQ_STR(weft_trace_node(t, n->parent)->kind, "stream");
		CHECK(s->big_endian == 1);
	}
	CHECK(strstr(weft_trace_metadata_json(t), "\"epoch\":1610113734118010000") != NULL);
	CHECK(strstr(weft_trace_node(t, 0)->metadata_json, "\"lost_packets\":0") != NULL);
	CHECK_EQ_U64(weft_trace_diag_count(t), 0);
	CHECK_EQ_U64(count_events(t), 21);
	weft_trace_free(t);
}

/* Stream 1 / substream 0, by start time, with its call tree. */
static void test_sample_tree(void)
{
	static const struct {
		uint64_t start;
		const char *code;
		int depth;
		long parent;
	} want[] = {
		{ 120000, "Initialised the worker thread", 0, -1 },
		{ 1000050, "Scheduling processes", 0, -1 },
		{ 1000100, "Polling for OS events", 1, 5 },
		{ 1002000, "Scheduling thread-local processes based on timers", 1, 5 },
		{ 1004000, "Scheduling thread-local processes", 1, 5 },
		{ 1006000, "Scheduling thread-safe processes based on timers", 1, 5 },
		{ 1009000, "Running thread-local process", 0, -1 },
		{ 13000000, "Running thread-safe process", 0, -1 },
		{ 14000000, "Relaying process signal to actors", 0, -1 },
	};
	weft_trace *t = open_ok(sample, NULL);
	int s = weft_trace_stream_find(t, "stream.1/substream.0");
	REQUIRE(s >= 0);
	weft_cursor *c;
	const weft_event *ev;
	REQUIRE(weft_cursor_create_stream(t, (uint32_t)s, &c) == 0);
	size_t i = 0;
	while (weft_cursor_next(c, &ev) == 1) {
		REQUIRE(i < sizeof want / sizeof want[0]);
		CHECK_EQ_U64(ev->time, 1610113734118010000ull + want[i].start);
		CHECK(ev->code_len == strlen(want[i].code) &&
		      memcmp(ev->code, want[i].code, ev->code_len) == 0);
		CHECK_EQ_I64(ev->depth, want[i].depth);
		CHECK_EQ_I64(ev->parent, want[i].parent);
		CHECK(ev->flags & WEFT_EVENT_INTERVAL);
		i++;
	}
	CHECK_EQ_U64(i, sizeof want / sizeof want[0]);
	weft_cursor_free(c);
	weft_trace_free(t);
}

/* Every attribute type of the "All attribute types" event. */
static void test_sample_fields(void)
{
	weft_trace *t = open_ok(sample, NULL);
	int s = weft_trace_stream_find(t, "stream.2/substream.7");
	REQUIRE(s >= 0);
	weft_cursor *c;
	const weft_event *ev;
	weft_field f[32], el;
	REQUIRE(weft_cursor_create_stream(t, (uint32_t)s, &c) == 0);
	REQUIRE(weft_cursor_next(c, &ev) == 1);
	CHECK_EQ_U64(ev->end - ev->time, 1234567);
	int n = weft_event_fields(t, ev, f, 32);
	REQUIRE(n == 18);
	CHECK(f[1].type == WEFT_TYPE_U64 && f[1].v.u == UINT64_MAX);
	CHECK(f[3].type == WEFT_TYPE_I64 && f[3].v.i == INT64_MIN);
	CHECK(f[5].type == WEFT_TYPE_F64 && f[5].v.f == 123.456);
	CHECK(f[10].type == WEFT_TYPE_F64 && f[10].v.f == (double)0.1f);
	CHECK(f[11].type == WEFT_TYPE_STR && f[11].v.s.len == strlen("héllo wörld ✓") &&
	      memcmp(f[11].v.s.ptr, "héllo wörld ✓", f[11].v.s.len) == 0);
	CHECK(f[12].type == WEFT_TYPE_STR && f[12].v.s.len == 0);
	CHECK(f[13].is_array && f[13].type == WEFT_TYPE_U64 && f[13].count == 3);
	CHECK(weft_field_element(&f[13], 2, &el) == 0 && el.v.u == UINT64_MAX);
	CHECK(f[14].is_array && f[14].type == WEFT_TYPE_I64 &&
	      weft_field_element(&f[14], 0, &el) == 0 && el.v.i == -1);
	CHECK(f[15].is_array && weft_field_element(&f[15], 1, &el) == 0 && el.v.f == 789.0);
	CHECK(f[16].is_array && f[16].type == WEFT_TYPE_STR && f[16].count == 3);
	CHECK(weft_field_element(&f[16], 2, &el) == 0 && el.v.s.len == 2 &&
	      memcmp(el.v.s.ptr, "ß", 2) == 0);
	CHECK(weft_field_element(&f[16], 3, &el) < 0);
	CHECK(f[17].is_array && f[17].count == 0);
	CHECK(f[17].name_len == 15 && memcmp(f[17].name, "empty u64 array", 15) == 0);
	weft_cursor_free(c);
	weft_trace_free(t);
}

/* Stored order: the merged cursor gives the packets in file order. */
static void test_sample_file_order(void)
{
	static const uint64_t offsets[] = { 23, 94, 177, 240, 348, 440, 547, 679, 738, 795,
					    898, 961, 1020, 1117, 1183, 1242, 1301, 1403,
					    1498, 1953, 2022 };
	weft_open_options o;
	weft_open_options_init(&o);
	o.stored_order = 1;
	weft_trace *t = open_ok(sample, &o);
	weft_cursor *c;
	const weft_event *ev;
	weft_filter filter = { 0 };
	size_t i = 0;
	REQUIRE(weft_cursor_create(t, NULL, &c) == 0);
	while (weft_cursor_next(c, &ev) == 1) {
		REQUIRE(i < 21);
		CHECK_EQ_U64(ev->offset, offsets[i]);
		CHECK_EQ_I64(ev->depth, -1);
		i++;
	}
	CHECK_EQ_U64(i, 21);
	weft_cursor_free(c);
	/* The stream pattern applies in file order too. */
	filter.stream_pattern = "stream.0/*";
	REQUIRE(weft_cursor_create(t, &filter, &c) == 0);
	for (i = 0; weft_cursor_next(c, &ev) == 1; i++)
		CHECK_EQ_U64(ev->stream, 0);
	CHECK_EQ_U64(i, 6);
	weft_cursor_free(c);
	weft_trace_free(t);
}

/* ---- Edge vectors and bad input ---------------------------------------------------------- */

static void test_edges(void)
{
	char path[4200];
	const char *data = getenv("WEFT_TEST_DATA");
	snprintf(path, sizeof path, "%s/heph/edge_epoch_only.bin.log", data);
	weft_trace *t = open_ok(path, NULL);
	CHECK_EQ_U64(weft_trace_stream_count(t), 0);
	CHECK_EQ_U64(count_events(t), 0);
	weft_trace_free(t);
	snprintf(path, sizeof path, "%s/heph/edge_no_epoch.bin.log", data);
	t = open_ok(path, NULL);
	CHECK(strstr(weft_trace_metadata_json(t), "\"epoch\":null") != NULL);
	weft_cursor *c;
	const weft_event *ev;
	REQUIRE(weft_cursor_create(t, NULL, &c) == 0);
	REQUIRE(weft_cursor_next(c, &ev) == 1);
	CHECK_EQ_U64(ev->time, 5000); /* relative times stay relative */
	weft_cursor_free(c);
	weft_trace_free(t);
}

/* A file whose first packet is not Heph's: refused at byte 0. */
static void test_wrong_magic_first(void)
{
	buf b = { 0 };
	add_event(&b, 1, 0, 1, 2, "x");
	b.p[0] ^= 0x01;
	const char *path = write_file("magic0.bin.log", &b);
	weft_open_options o;
	weft_open_options_init(&o);
	o.format = WEFT_FORMAT_HEPH;
	weft_trace *t = NULL;
	CHECK(weft_trace_open(path, &o, &t) == WEFT_EFORMAT);
	CHECK(strstr(weft_last_error(), "byte 0:") != NULL);
	CHECK(strstr(weft_last_error(), "expected a packet magic") != NULL);
	free(b.p);
}

/*
 * A framing problem in the middle: an error at its offset, and every
 * packet before it read.
 */
static void test_framing_errors(void)
{
	struct { const char *name; int corrupt; const char *text; } cases[] = {
		{ "magic.bin.log", 0, "expected a packet magic" },
		{ "small.bin.log", 1, "smaller than the 42 fixed bytes" },
		{ "large.bin.log", 2, "larger than the" },
	};
	for (size_t k = 0; k < 3; k++) {
		buf b = { 0 };
		add_epoch(&b, 1000);
		add_event(&b, 1, 0, 10, 20, "first");
		size_t bad = b.len;
		add_event(&b, 1, 1, 30, 40, "second");
		add_event(&b, 1, 2, 50, 60, "third");
		if (cases[k].corrupt == 0)
			b.p[bad] = 0x00;
		else if (cases[k].corrupt == 1)
			b.p[bad + 7] = 20;
		else
			b.p[bad + 4] = 0x7f;
		weft_trace *t = open_ok(write_file(cases[k].name, &b), NULL);
		const weft_diag *d = find_diag(t, cases[k].text);
		CHECK(d != NULL);
		if (d != NULL)
			CHECK(d->offset == bad || d->offset == bad + 4);
		CHECK_EQ_U64(count_events(t), 1);
		weft_trace_free(t);
		free(b.p);
	}
}

/* A truncated final packet is a warning; the packets before it are read. */
static void test_truncated(void)
{
	buf b = { 0 };
	add_epoch(&b, 1000);
	add_event(&b, 1, 0, 10, 20, "first");
	add_event(&b, 1, 1, 30, 40, "second");
	size_t whole = b.len;
	for (size_t cut = whole - 20; cut < whole; cut += 7) {
		buf c = b;
		c.len = cut;
		weft_trace *t = open_ok(write_file("trunc.bin.log", &c), NULL);
		const weft_diag *d = weft_trace_diag_count(t) ? weft_trace_diag(t, 0) : NULL;
		CHECK(d != NULL && d->severity == WEFT_SEV_WARNING && d->status == WEFT_ETRUNCATED);
		CHECK_EQ_U64(count_events(t), 1);
		weft_trace_free(t);
	}
	free(b.p);
}

/* Sets the size field of the packet at `at` to `size`. */
static void set_size(buf *b, size_t at, uint32_t size)
{
	for (int i = 0; i < 4; i++)
		b->p[at + 4 + i] = (unsigned char)(size >> (8 * (3 - i)));
}

/*
 * A size that runs past the end of the file: an error when packets follow
 * (the size is wrong and more than the last packet is lost), a warning
 * when it is the last packet (what a crash of the writer leaves), also
 * when the rest holds a magic that frames nothing; with and without the
 * helper thread, which must give the same.
 */
static void test_wrong_sizes(void)
{
	struct { int packet; uint32_t size; int error; } cases[] = {
		{ 1, 0x7fffffffu, 1 },  /* mid-file: 2 packets lost */
		{ 2, 0x7fffffffu, 1 },  /* the one before the last */
		{ 2, 0, 1 },            /* ... one byte past the end */
		{ 3, 0x7fffffffu, 0 },  /* the last packet */
		{ 3, 0, 0 },            /* ... one byte past the end */
	};
	for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
		buf b = { 0 };
		size_t at[4];
		add_epoch(&b, 1000);
		for (int i = 0; i < 4; i++) {
			at[i] = begin_event(&b, 1, (uint32_t)i, 0, 10 * (uint64_t)i + 10,
					    10 * (uint64_t)i + 15, "work");
			/* a packet header inside the last packet (a string
			 * attribute) whose packet would run past the end */
			if (i == 3) {
				put_str(&b, "s");
				put_be(&b, 0x04, 1);
				put_be(&b, 8, 2);
				put(&b, "\xc1\xfc\x1f\xb7\x00\x00\x00\x2a", 8);
			}
			end_packet(&b, at[i]);
		}
		int p = cases[k].packet;
		set_size(&b, at[p], cases[k].size ? cases[k].size
						  : (uint32_t)(b.len - at[p] + 1));
		char *path = write_file("size.bin.log", &b);
		weft_trace *t = open_ok(path, NULL);
		const weft_diag *d = find_diag(t, "is larger than the");
		REQUIRE(d != NULL);
		CHECK_EQ_U64(d->offset, at[p] + 4);
		CHECK(d->severity == (cases[k].error ? WEFT_SEV_ERROR : WEFT_SEV_WARNING));
		CHECK(d->status == (cases[k].error ? WEFT_EFORMAT : WEFT_ETRUNCATED));
		char want[64];
		snprintf(want, sizeof want, "a packet starts at byte %zu within",
			 p < 3 ? at[p + 1] : 0);
		CHECK((strstr(d->message, want) != NULL) == cases[k].error);
		CHECK_EQ_U64(weft_trace_diag_count(t), 1);
		CHECK_EQ_U64(count_events(t), (uint64_t)p);
		weft_trace_free(t);
		check_same_with_helper(path);
		free(b.p);
	}
}

/* The same in the second half of a larger trace, which a helper scans. */
static void test_wrong_size_second_half(void)
{
	buf b = { 0 };
	size_t bad = 0;
	add_epoch(&b, 1000);
	for (uint32_t i = 0; i < 4000; i++) {
		size_t at = b.len;
		add_event(&b, 1, i, 10 * (uint64_t)i + 10, 10 * (uint64_t)i + 15, "work");
		if (i == 3000)
			bad = at;
	}
	set_size(&b, bad, 0x7fffffffu);
	char *path = write_file("size-half.bin.log", &b);
	weft_open_options o;
	weft_open_options_init(&o);
	o.threads = 2;
	weft_trace *t = open_ok(path, &o);
	const weft_diag *d = find_diag(t, "is larger than the");
	CHECK(d != NULL && d->severity == WEFT_SEV_ERROR && d->offset == bad + 4);
	CHECK_EQ_U64(count_events(t), 3000);
	weft_trace_free(t);
	check_same_with_helper(path);
	free(b.p);
}

/*
 * Bad packet bodies: the packet is skipped with an error at the offset of
 * the problem; the packets after it are still read (the size frames them).
 */
static void test_bad_bodies(void)
{
	struct { const char *text; int kind; } cases[] = {
		{ "unknown attribute type 0x05", 0 },
		{ "0x80 alone is invalid", 1 },
		{ "runs past the packet end", 2 },
		{ "expected UTF-8 in the description", 3 },
		{ "expected UTF-8 in the attribute name", 4 },
	};
	for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
		buf b = { 0 };
		add_event(&b, 1, 0, 10, 20, "ok");
		size_t at = begin_event(&b, 1, 1, 0, 30, 40, k == 3 ? "bad\xff" : "bad");
		size_t problem = b.len;
		put_str(&b, k == 4 ? "n\xc3" : "n");
		if (k == 4)
			problem += 3;
		else if (k == 3)
			problem -= 1;
		if (k == 0 || k == 1) {
			problem = b.len;
			put_be(&b, k == 0 ? 0x05 : 0x80, 1);
			put_be(&b, 0, 8);
		} else if (k == 2) {
			put_be(&b, 0x04, 1);
			problem = b.len;
			put_be(&b, 500, 2);
			put(&b, "abc", 3);
		} else {
			put_be(&b, 0x01, 1);
			put_be(&b, 7, 8);
		}
		end_packet(&b, at);
		add_event(&b, 1, 2, 50, 60, "after");
		weft_trace *t = open_ok(write_file("body.bin.log", &b), NULL);
		const weft_diag *d = find_diag(t, cases[k].text);
		CHECK(d != NULL);
		if (d != NULL) {
			CHECK_EQ_U64(d->offset, problem);
			CHECK(d->severity == WEFT_SEV_ERROR);
		} else {
			fprintf(stderr, "case %zu: no '%s' diagnostic\n", k, cases[k].text);
		}
		CHECK_EQ_U64(count_events(t), 2);
		weft_trace_free(t);
		free(b.p);
	}
}

/* Unknown options are skipped with a warning, using the packet size. */
static void test_unknown_option(void)
{
	buf b = { 0 };
	size_t at = b.len;
	put_be(&b, 0x75D11D4D, 4);
	put_be(&b, 0, 4);
	put_str(&b, "colour");
	put(&b, "blue!", 5);
	end_packet(&b, at);
	add_epoch(&b, 7000);
	add_event(&b, 3, 0, 1, 2, "e");
	weft_trace *t = open_ok(write_file("option.bin.log", &b), NULL);
	const weft_diag *d = find_diag(t, "unknown metadata option 'colour'");
	CHECK(d != NULL && d->severity == WEFT_SEV_WARNING && d->offset == 0);
	weft_cursor *c;
	const weft_event *ev;
	REQUIRE(weft_cursor_create(t, NULL, &c) == 0);
	REQUIRE(weft_cursor_next(c, &ev) == 1);
	CHECK_EQ_U64(ev->time, 7001);
	weft_cursor_free(c);
	weft_trace_free(t);
	free(b.p);
}

/* A later epoch re-bases the events after it. */
static void test_epoch_rebase(void)
{
	buf b = { 0 };
	add_epoch(&b, 1000000);
	add_event(&b, 1, 0, 5, 6, "a");
	add_epoch(&b, 2000000);
	add_event(&b, 1, 1, 5, 6, "b");
	weft_trace *t = open_ok(write_file("rebase.bin.log", &b), NULL);
	weft_cursor *c;
	const weft_event *ev;
	REQUIRE(weft_cursor_create(t, NULL, &c) == 0);
	REQUIRE(weft_cursor_next(c, &ev) == 1);
	CHECK_EQ_U64(ev->time, 1000005);
	REQUIRE(weft_cursor_next(c, &ev) == 1);
	CHECK_EQ_U64(ev->time, 2000005);
	CHECK_EQ_U64(ev->end, 2000006);
	weft_cursor_free(c);
	weft_trace_free(t);
	free(b.p);
}

/* Lost packets and wrap-around from the stream counters. */
static void test_counters(void)
{
	buf b = { 0 };
	uint32_t counters[] = { 0, 1, 3, 2, 4, 8, 9 };   /* 5..7 lost; 2 late */
	for (size_t i = 0; i < 7; i++)
		add_event(&b, 1, counters[i], i, i + 1, "e");
	uint32_t wrap[] = { 0xfffffffeu, 0xffffffffu, 0, 1 };
	for (size_t i = 0; i < 4; i++)
		add_event(&b, 2, wrap[i], i, i + 1, "w");
	weft_trace *t = open_ok(write_file("counters.bin.log", &b), NULL);
	const weft_diag *d = find_diag(t, "stream 1: 3 packet(s) lost (counters 5..7");
	CHECK(d != NULL && d->severity == WEFT_SEV_WARNING);
	CHECK(find_diag(t, "stream 2:") == NULL);
	CHECK(strstr(weft_trace_node(t, 0)->metadata_json, "\"lost_packets\":3") != NULL);
	int s2 = weft_trace_stream_find(t, "stream.2/substream.0");
	REQUIRE(s2 >= 0);
	const weft_node *n2 = weft_trace_node(t, weft_trace_node(t, weft_trace_stream(t, (size_t)s2)->node)->parent);
	CHECK(strstr(n2->metadata_json, "\"counter_wraps\":1") != NULL);
	CHECK(strstr(n2->metadata_json, "\"lost_packets\":0") != NULL);
	weft_trace_free(t);
	free(b.p);
}

/*
 * The index spilled to disk (tiny budget) gives the same events, in the
 * same order, with the same tree, as the index in memory.
 */
static void test_spilled_index(void)
{
	buf b = { 0 };
	uint32_t counter[3] = { 0 };
	add_epoch(&b, 1u << 30);
	/* Per stream: loops of a parent [t, t+100] with children written first. */
	for (uint64_t i = 0; i < 3000; i++) {
		uint32_t s = (uint32_t)(i % 3);
		uint64_t t0 = (i / 3) * 1000;
		add_event(&b, s, counter[s]++, t0 + 10, t0 + 20, "child");
		add_event(&b, s, counter[s]++, t0 + 10, t0 + 20, "twin");
		add_event(&b, s, counter[s]++, t0 + 30, t0 + 90, "child2");
		add_event(&b, s, counter[s]++, t0, t0 + 100, "parent");
	}
	const char *path = write_file("spill.bin.log", &b);
	weft_open_options o;
	weft_open_options_init(&o);
	CHECK(weft_open_options_set(&o, "heph.sort_budget_bytes", "1") == 0); /* many runs */
	weft_trace *small = open_ok(path, &o);
	weft_trace *big = open_ok(path, NULL);
	weft_cursor *cs, *cb;
	const weft_event *es, *eb;
	long n = 0;
	REQUIRE(weft_cursor_create(small, NULL, &cs) == 0);
	REQUIRE(weft_cursor_create(big, NULL, &cb) == 0);
	uint64_t last = 0;
	for (;;) {
		int rs = weft_cursor_next(cs, &es), rb = weft_cursor_next(cb, &eb);
		REQUIRE(rs == rb);
		if (rs != 1)
			break;
		CHECK_EQ_U64(es->offset, eb->offset);
		CHECK_EQ_I64(es->depth, eb->depth);
		CHECK_EQ_I64(es->parent, eb->parent);
		CHECK(es->time >= last);
		last = es->time;
		/* parent at depth 0, "twin" (stored later) parent of "child" */
		if (es->code_len == 6 && memcmp(es->code, "parent", 6) == 0)
			CHECK_EQ_I64(es->depth, 0);
		if (es->code_len == 5 && memcmp(es->code, "child", 5) == 0)
			CHECK_EQ_I64(es->depth, 2);
		if (es->code_len == 6 && memcmp(es->code, "child2", 6) == 0)
			CHECK_EQ_I64(es->depth, 1);
		n++;
	}
	CHECK_EQ_U64(n, 12000);
	weft_cursor_free(cs);
	weft_cursor_free(cb);
	weft_trace_free(small);
	weft_trace_free(big);
	free(b.p);
}

/*
 * A trace larger than a reader's window: every event of a batch must stay
 * valid while the window slides (per stream and merged, in stored order).
 */
static void test_batches_across_windows(void)
{
	buf b = { 0 };
	uint32_t counter[2] = { 0 };
	for (uint64_t i = 0; i < 160000; i++) {
		uint32_t s = (uint32_t)(i % 2);
		size_t at = begin_event(&b, s, counter[s]++, 0, i, i + 1,
					"a description of some length");
		put_str(&b, "amount");
		put_be(&b, 0x01, 1);
		put_be(&b, i, 8);
		end_packet(&b, at);
	}
	REQUIRE(b.len > (9u << 20));
	const char *path = write_file("windows.bin.log", &b);
	/* Halves larger than a window. */
	CHECK_EQ_U64(check_same_with_helper(path), 2);
	weft_open_options o;
	weft_open_options_init(&o);
	o.stored_order = 1;
	weft_trace *t = open_ok(path, &o);
	for (int merged = 0; merged < 2; merged++) {
		weft_cursor *c;
		const weft_event *ev;
		weft_field f[4];
		long n = 0, bad = 0;
		REQUIRE((merged ? weft_cursor_create(t, NULL, &c) :
			 weft_cursor_create_stream(t, 1, &c)) == 0);
		while (weft_cursor_next(c, &ev) == 1) {
			if (weft_event_fields(t, ev, f, 4) != 1 || f[0].v.u != ev->time)
				bad++;
			n++;
		}
		weft_cursor_free(c);
		CHECK_EQ_U64(n, merged ? 160000 : 80000);
		CHECK_EQ_U64(bad, 0);
	}
	weft_trace_free(t);
	free(b.p);
}

/* ---- A helper thread changes nothing ---------------------------------------------- */

/* Appends one line to a growing text. */
static void text_add(buf *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void text_add(buf *t, const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	REQUIRE(n >= 0 && (size_t)n < sizeof line);
	put(t, line, (size_t)n);
}

/*
 * Everything a reader sees of a trace, as text: metadata, nodes, streams,
 * diagnostics, then every event of the merged cursor with its fields.
 */
static char *reading_text(weft_trace *t)
{
	buf out = { 0 };
	text_add(&out, "%s\n", weft_trace_metadata_json(t));
	for (size_t i = 0; i < weft_trace_node_count(t); i++) {
		const weft_node *n = weft_trace_node(t, i);
		text_add(&out, "node %s %s\n", n->path, n->metadata_json);
	}
	for (size_t i = 0; i < weft_trace_diag_count(t); i++) {
		const weft_diag *d = weft_trace_diag(t, i);
		text_add(&out, "diag %d %d %llu %s\n", d->severity, d->status,
			 (unsigned long long)d->offset, d->message);
	}
	/* The event kinds, in the order the scan found them. */
	for (size_t i = 0; i < weft_trace_event_schema_count(t); i++) {
		const weft_event_schema *k = weft_trace_event_schema(t, i);
		text_add(&out, "kind %s", k->code);
		for (size_t f = 0; f < k->field_count; f++)
			text_add(&out, " %s:%d", k->fields[f].name, (int)k->fields[f].type);
		text_add(&out, "\n");
	}
	weft_cursor *c;
	const weft_event *ev;
	weft_field f[8];
	REQUIRE(weft_cursor_create(t, NULL, &c) == 0);
	while (weft_cursor_next(c, &ev) == 1) {
		int nf = weft_event_fields(t, ev, f, 8);
		text_add(&out, "%llu %llu %u %llu %llu %d %lld %.*s %d\n",
			 (unsigned long long)ev->time, (unsigned long long)ev->end,
			 ev->stream, (unsigned long long)ev->offset,
			 (unsigned long long)ev->seq, ev->depth, (long long)ev->parent,
			 (int)ev->code_len, ev->code, nf);
	}
	weft_cursor_free(c);
	/* Diagnostics recorded while reading (a stream that failed). */
	text_add(&out, "diags after reading %zu\n", weft_trace_diag_count(t));
	put(&out, "", 1);
	return (char *)out.p;
}

/*
 * Opens `path` alone and with a helper thread, in file order and in time
 * order, and checks that the readings are the same. Returns how many
 * halves the helper's open scan used (2 when its half was joined).
 */
static int check_same_with_helper(const char *path)
{
	int halves = 1;
	for (int stored = 0; stored < 2; stored++) {
		char *text[2];
		for (int threads = 1; threads <= 2; threads++) {
			weft_open_options o;
			weft_open_options_init(&o);
			o.format = WEFT_FORMAT_HEPH;
			o.stored_order = stored;
			o.threads = threads;
			weft_trace *t = NULL;
			int rc = weft_trace_open(path, &o, &t);
			if (rc < 0) {
				text[threads - 1] = strdup(weft_last_error());
			} else {
				heph_data *d = t->backend_data;
				if (threads == 2 && d->scan_halves == 2)
					halves = 2;
				text[threads - 1] = reading_text(t);
				weft_trace_free(t);
			}
			REQUIRE(text[threads - 1] != NULL);
		}
		CHECK_EQ_STR(text[1], text[0]);
		free(text[0]);
		free(text[1]);
	}
	return halves;
}

/* What to put in the trace built by build_mixed(). */
enum mixed_flags {
	MIX_LOSS_SECOND = 1,      /* a lost counter in the second half */
	MIX_HOLE_AT_MIDDLE = 2,   /* a lost counter just before the middle */
	MIX_BAD_SECOND = 4,       /* a description that is not UTF-8 */
	MIX_REVERSED_SECOND = 8,  /* an event that ends before it starts */
	MIX_WRAP_AT_MIDDLE = 16,  /* a counter that wraps at the middle */
	MIX_LATE_SECOND = 32,     /* a counter repeated in the second half */
	MIX_HUGE_EPOCH = 64,      /* times after the middle overflow the epoch */
	MIX_FAKE_MAGIC = 128,     /* a u64 that frames like a packet at the middle */
	MIX_TRUNCATED = 256,      /* the last packet cut short */
	MIX_NEW_KIND_SECOND = 512 /* a description only the second half has */
};

#define MIX_EVENTS 20000

/*
 * A trace of MIX_EVENTS events in runs of one stream (as a writer's
 * buffers leave them) over 4 stream ids and 2 substreams, attributes on
 * some, epochs at the start and at three quarters, a stream id that
 * appears only in the second half, and the anomalies of `flags`; each
 * stream's counters start at first[stream]. `pad` extra epoch packets at
 * the start move the middle. Sets offsets[i] to the offset of event i.
 */
static void mixed_packets(buf *b, unsigned flags, int pad, const uint32_t first[5],
			  uint64_t *offsets)
{
	uint32_t counter[5];
	memcpy(counter, first, sizeof counter);
	for (int i = 0; i <= pad; i++)
		add_epoch(b, 1000000);
	for (uint32_t i = 0; i < MIX_EVENTS; i++) {
		uint32_t run = i / 37;
		uint32_t stream = i >= MIX_EVENTS / 2 + 500 && run % 5 == 4 ? 4 : run % 4;
		int late_here = (flags & MIX_LATE_SECOND) && i == MIX_EVENTS * 3 / 4;
		if (i == MIX_EVENTS * 3 / 4)
			add_epoch(b, (flags & MIX_HUGE_EPOCH) ? UINT64_MAX - 10 : 2000000);
		if (((flags & MIX_LOSS_SECOND) && i == MIX_EVENTS * 5 / 8 && stream == 1) ||
		    ((flags & MIX_HOLE_AT_MIDDLE) && i == MIX_EVENTS / 2 - 60))
			counter[stream]++;
		uint64_t start = (uint64_t)i * 10, end = start + 5 + i % 7;
		if ((flags & MIX_REVERSED_SECOND) && i == MIX_EVENTS * 7 / 8)
			end = start - 1;
		const char *desc = (flags & MIX_BAD_SECOND) && i == MIX_EVENTS * 5 / 8 ?
				   "bad \xff text" : (i % 3 ? "compute" : "exchange halo");
		if ((flags & MIX_NEW_KIND_SECOND) && i >= MIX_EVENTS * 3 / 4 && i % 3 == 1)
			desc = "late phase";
		offsets[i] = b->len;
		size_t at = begin_event(b, stream, late_here ? counter[stream] - 5 :
					counter[stream]++, i % 2, start, end, desc);
		int fake = (flags & MIX_FAKE_MAGIC) && i + 300 >= MIX_EVENTS / 2 &&
			   i < MIX_EVENTS / 2 + 300;
		if (i % 4 == 0 || fake) {
			put_str(b, "bytes");
			put_be(b, 0x01, 1);
			/* The last 8 bytes of the packet read as an event magic and
			 * a size that skips the next packet (next_size bytes). */
			uint64_t next_size = 40 + 2 + ((i + 1) % 3 ? 7 : 13) + 16;
			put_be(b, fake ? 0xC1FC1FB7ull << 32 | (8 + next_size) : i, 8);
		}
		end_packet(b, at);
	}
	if (flags & MIX_TRUNCATED)
		b->len -= 3;
}

/* The stream of event i of mixed_packets() (same rule). */
static uint32_t mixed_stream(uint32_t i)
{
	uint32_t run = i / 37;
	return i >= MIX_EVENTS / 2 + 500 && run % 5 == 4 ? 4 : run % 4;
}

/*
 * Writes the mixed trace. With MIX_WRAP_AT_MIDDLE every stream's counter
 * wraps exactly where the helper's half starts (the first packet at or
 * past the middle): a first build finds that packet.
 */
static char *build_mixed(const char *name, unsigned flags, int pad)
{
	static uint64_t offsets[MIX_EVENTS];
	uint32_t first[5] = { 0, 0, 0, 0xffffffffu - MIX_EVENTS / 8, 0 };
	buf b = { 0 };
	mixed_packets(&b, flags, pad, first, offsets);
	if (flags & MIX_WRAP_AT_MIDDLE) {
		memset(first, 0, sizeof first);
		for (uint32_t i = 0; i < MIX_EVENTS && offsets[i] < b.len / 2; i++)
			first[mixed_stream(i)]--;
		b.len = 0;
		mixed_packets(&b, flags, pad, first, offsets);
	}
	char *path = strdup(write_file(name, &b));
	REQUIRE(path != NULL);
	free(b.p);
	return path;
}

static void test_helper_threads(void)
{
	static const struct { const char *name; unsigned flags; int joined; } cases[] = {
		{ "mix-clean.bin.log", 0, 1 },
		{ "mix-wrap.bin.log", MIX_WRAP_AT_MIDDLE, 1 },
		{ "mix-loss2.bin.log", MIX_LOSS_SECOND, 0 },
		{ "mix-hole.bin.log", MIX_HOLE_AT_MIDDLE, 0 },
		{ "mix-bad2.bin.log", MIX_BAD_SECOND, 0 },
		{ "mix-rev2.bin.log", MIX_REVERSED_SECOND, 0 },
		{ "mix-late2.bin.log", MIX_LATE_SECOND, 0 },
		{ "mix-epoch.bin.log", MIX_HUGE_EPOCH, 0 },
		{ "mix-trunc.bin.log", MIX_TRUNCATED, 0 },
		{ "mix-all.bin.log", 0x1ff, 0 },
		{ "mix-kind2.bin.log", MIX_NEW_KIND_SECOND, 1 },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char *path = build_mixed(cases[i].name, cases[i].flags, 0);
		int halves = check_same_with_helper(path);
		if (cases[i].joined >= 0 && halves != (cases[i].joined ? 2 : 1)) {
			fprintf(stderr, "%s: scanned in %d half(s)\n", cases[i].name, halves);
			CHECK(0);
		}
		free(path);
	}
	/* Boundaries guessed inside a packet (the fake magic) are caught by
	 * the main pass's framing: the middle moves with some padding, and at
	 * least one guess must have been wrong. */
	int wrong_guesses = 0;
	for (int pad = 0; pad < 8; pad++) {
		char *path = build_mixed("mix-pad.bin.log", MIX_FAKE_MAGIC, pad);
		wrong_guesses += check_same_with_helper(path) == 1;
		free(path);
	}
	CHECK(wrong_guesses > 0);
	/* Random damage anywhere (around the middle most of all): the same
	 * with and without the helper, whatever it hits. */
	size_t size;
	char *clean = build_mixed("mix-base.bin.log", 0, 0);
	unsigned char *orig = (unsigned char *)tu_read_file(clean, &size);
	REQUIRE(orig != NULL);
	srand(777);
	for (int round = 0; round < 40; round++) {
		buf d = { 0 };
		put(&d, orig, size);
		for (int k = 0; k < 1 + round % 3; k++) {
			size_t at = round % 2 ? size / 2 - 4096 + (size_t)rand() % 8192
					      : (size_t)rand() % size;
			d.p[at] = (unsigned char)rand();
		}
		check_same_with_helper(write_file("mix-damaged.bin.log", &d));
		free(d.p);
	}
	free(orig);
	free(clean);
	/* The reference vector, its edges and the bad inputs of this file. */
	CHECK_EQ_U64(check_same_with_helper(sample), 2);
}

/*
 * Packets larger than the copied window of a pass front to back (512 KiB:
 * the buffer grows) and larger than what is ever copied (16 MiB: the
 * window is mapped instead), between small ones: read whole, in order.
 */
static void test_big_packets(void)
{
	static const uint32_t arrays[] = { 0, 2, 0, 40, 0, 1, 0 };
	buf b = { 0 };
	add_epoch(&b, 1000);
	for (uint32_t i = 0; i < 7; i++) {
		size_t at = begin_event(&b, 1, i, 0, i * 10, i * 10 + 5, "big");
		for (uint32_t a = 0; a < arrays[i]; a++) {
			put_str(&b, "values");
			put_be(&b, 0x81, 1);
			put_be(&b, 65535, 2);
			for (uint32_t k = 0; k < 65535; k++)
				put_be(&b, (uint64_t)i << 32 | k, 8);
		}
		end_packet(&b, at);
	}
	REQUIRE(b.len > (20u << 20));
	const char *path = write_file("big.bin.log", &b);
	weft_open_options o;
	weft_open_options_init(&o);
	o.stored_order = 1;
	weft_trace *t = open_ok(path, &o);
	CHECK_EQ_U64(weft_trace_diag_count(t), 0);
	weft_cursor *c;
	const weft_event *ev;
	static weft_field f[64];
	uint32_t i = 0;
	REQUIRE(weft_cursor_create(t, NULL, &c) == 0);
	while (weft_cursor_next(c, &ev) == 1) {
		REQUIRE(i < 7);
		CHECK_EQ_U64(ev->time, 1000 + i * 10);
		CHECK_EQ_I64(weft_event_fields(t, ev, f, 64), arrays[i]);
		for (uint32_t a = 0; a < arrays[i] && a < 64; a++) {
			CHECK(f[a].is_array && f[a].count == 65535);
			/* the last element, big-endian, names its packet */
			CHECK_EQ_U64(f[a].raw_size, 65535 * 8);
			CHECK_EQ_U64(f[a].raw[f[a].raw_size - 5], i);
			CHECK_EQ_U64(f[a].raw[f[a].raw_size - 1], 0xfe);
		}
		i++;
	}
	CHECK_EQ_U64(i, 7);
	weft_cursor_free(c);
	weft_trace_free(t);
	/* The middle falls inside the 20 MiB packet: no boundary is found
	 * near it, and one pass scans it all. */
	CHECK_EQ_U64(check_same_with_helper(path), 1);
	free(b.p);
}

/*
 * A file cut short after it was opened: the file-order pass (copied
 * windows) reads what is left and reports where the file ends, with no
 * byte read from past it.
 */
static void test_file_shrinks(void)
{
	buf b = { 0 };
	for (uint32_t i = 0; i < 40000; i++)
		add_event(&b, 1, i, i * 10, i * 10 + 5, "event of a file that shrinks");
	const char *path = write_file("shrinks.bin.log", &b);
	weft_open_options o;
	weft_open_options_init(&o);
	o.stored_order = 1;
	weft_trace *t = open_ok(path, &o);
	REQUIRE(truncate(path, (off_t)(b.len / 2)) == 0);
	long n = count_events(t);
	CHECK(n > 0 && n < 40000);
	const weft_diag *d = find_diag(t, "(the stream ends here)");
	CHECK(d != NULL && d->severity == WEFT_SEV_ERROR);
	weft_trace_free(t);
	free(b.p);
}

/* Truncations and random corruptions of the sample: never a crash. */
static void test_corruptions(void)
{
	size_t size;
	unsigned char *orig = (unsigned char *)tu_read_file(sample, &size);
	REQUIRE(orig != NULL);
	weft_open_options o;
	weft_open_options_init(&o);
	o.format = WEFT_FORMAT_HEPH;
	srand(12345);
	for (int round = 0; round < 1500; round++) {
		buf b = { 0 };
		put(&b, orig, size);
		if (round < 300) {
			b.len = (size_t)rand() % size;
		} else {
			int flips = 1 + rand() % 4;
			for (int k = 0; k < flips; k++)
				b.p[(size_t)rand() % size] = (unsigned char)rand();
		}
		weft_trace *t = NULL;
		const char *path = write_file("fuzz.bin.log", &b);
		if (round % 3 == 0)
			check_same_with_helper(path);
		if (weft_trace_open(path, &o, &t) == 0) {
			weft_cursor *c;
			const weft_event *ev;
			weft_field f[32];
			if (weft_cursor_create(t, NULL, &c) == 0) {
				while (weft_cursor_next(c, &ev) == 1)
					weft_event_fields(t, ev, f, 32);
				weft_cursor_free(c);
			}
			weft_trace_free(t);
		} else {
			CHECK(weft_last_error()[0] != '\0');
		}
		free(b.p);
	}
	free(orig);
}

int main(void)
{
	const char *data = getenv("WEFT_TEST_DATA");
	REQUIRE(data != NULL);
	snprintf(sample, sizeof sample, "%s/heph/heph_sample.bin.log", data);
	dir = tu_mkdtemp("weft-heph-reader");
	REQUIRE(dir != NULL);
	test_sample_streams();
	test_sample_tree();
	test_sample_fields();
	test_sample_file_order();
	test_edges();
	test_wrong_magic_first();
	test_framing_errors();
	test_truncated();
	test_wrong_sizes();
	test_wrong_size_second_half();
	test_bad_bodies();
	test_unknown_option();
	test_epoch_rebase();
	test_counters();
	test_spilled_index();
	test_batches_across_windows();
	test_helper_threads();
	test_big_packets();
	test_file_shrinks();
	test_corruptions();
	return tu_finish_dir(dir);
}
