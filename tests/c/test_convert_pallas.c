/* SPDX-License-Identifier: MIT */
/*
 * test_convert_pallas.c - `weft convert -t pallas` on Pallas sources
 * written here with weft's writer (weft/pallas.h), read back with weft's
 * reader: what the conversion must keep, for inputs that only the writer
 * can make.
 *
 *   strings    Generic events with new names and string values: the
 *              converter's string table grows while an event's attributes
 *              are built, at growths that fall on a name and on a value;
 *              every name and value comes back (the name's slot was once
 *              read after it had moved: a use-after-free that wrote a
 *              garbage name reference, issue 13 item 17)
 *   records    every kind of record (MPI, OpenMP, thread records, Enter,
 *              Leave, Generic) nested in each other's blocks, with
 *              attributes, on two threads: the output has the same
 *              records (kind, time, depth, parent, payload fields and
 *              attributes; references are renumbered), not Generic events
 *              (issue 13 item 6)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "weft/pallas.h"
#include "weft/weft.h"

static char *scratch; /* this test's scratch directory */

#define CK(call) CHECK_EQ_I64((call), 0)

/* A source trace: one archive (group 0) with `threads` threads (0..n-1). */
typedef struct source {
	char dir[1024];
	weft_pallas_global *g;
	weft_pallas_defs *gd;
	weft_pallas_archive *a;
} source;

/* Starts source `name` with strings "P" (0) and "T" (1). */
static void source_begin(source *s, const char *name, int threads)
{
	weft_pallas_write_options o;
	weft_pallas_write_options_init(&o);
	snprintf(s->dir, sizeof s->dir, "%s/%s", scratch, name);
	REQUIRE(weft_pallas_global_create(s->dir, "main", &o, &s->g) == 0);
	s->gd = weft_pallas_global_defs(s->g);
	CK(weft_pallas_add_string(s->gd, 0, "P"));
	CK(weft_pallas_add_string(s->gd, 1, "T"));
	CK(weft_pallas_add_location_group(s->gd, 0, 0, WEFT_PALLAS_NO_PARENT));
	REQUIRE(weft_pallas_archive_create(s->g, 0, &s->a) == 0);
	for (int i = 0; i < threads; i++)
		CK(weft_pallas_add_location(weft_pallas_archive_defs(s->a), (uint32_t)i, 1, 0));
}

/* Writes the archive and the main file. */
static void source_end(source *s)
{
	CK(weft_pallas_archive_store(s->a));
	CK(weft_pallas_global_store(s->g));
	weft_pallas_global_free(s->g);
}

/* `weft convert SRC -t pallas -o SRC.out`: the output path (static), NULL when it failed. */
static const char *convert(const source *s, int want_status)
{
	static char out[1100];
	char args[1200];
	int status;
	snprintf(out, sizeof out, "%s.out", s->dir);
	snprintf(args, sizeof args, "convert -t pallas --force -o '%s'", out);
	free(tu_run_weft(args, s->dir, &status));
	CHECK_EQ_I64(status, want_status);
	return status == want_status ? out : NULL;
}

/* The string field `name` of an event ("" when missing). */
static void field_text(const weft_field *f, int n, const char *name, char *buf, size_t cap)
{
	buf[0] = '\0';
	for (int i = 0; i < n; i++)
		if (f[i].name_len == strlen(name) && memcmp(f[i].name, name, f[i].name_len) == 0 &&
		    f[i].type == WEFT_TYPE_STR)
			snprintf(buf, cap, "%.*s", (int)f[i].v.s.len, f[i].v.s.ptr);
}

/* ---- strings ----------------------------------------------------------------------------- */

#define STRING_EVENTS 1500

/*
 * Generic event i is named "g<i>" and, unless i is a multiple of 3, has
 * the new string value "v<i>" of attribute "label": the table of strings
 * the converter makes (a power of two, grown when half full) doubles at
 * its 128th, 256th ... 2048th string, which falls on names and on values
 * (5 new strings every 3 events), whatever came before.
 */
static void test_strings(void)
{
	source s;
	source_begin(&s, "strings", 1);
	CK(weft_pallas_add_string(s.gd, 2, "label"));
	CK(weft_pallas_add_attribute(s.gd, 0, 2, 2, WEFT_PALLAS_TYPE_STRING));
	weft_pallas_thread *t;
	REQUIRE(weft_pallas_thread_create(s.a, 0, &t) == 0);
	for (uint32_t i = 0; i < STRING_EVENTS; i++) {
		char text[32];
		snprintf(text, sizeof text, "g%u", i);
		CK(weft_pallas_add_string(s.gd, 3 + 2 * i, text));
		snprintf(text, sizeof text, "v%u", i);
		CK(weft_pallas_add_string(s.gd, 4 + 2 * i, text));
		weft_pallas_attrs a;
		weft_pallas_attrs_init(&a);
		CK(weft_pallas_attrs_add_ref(&a, 0, WEFT_PALLAS_TYPE_STRING, 4 + 2 * i));
		CK(weft_pallas_record_generic(t, i % 3 ? &a : NULL, 10 + i, 3 + 2 * i));
	}
	CK(weft_pallas_thread_close(t));
	source_end(&s);

	const char *out = convert(&s, 0);
	weft_trace *tr;
	REQUIRE(out != NULL && weft_trace_open(out, NULL, &tr) == 0);
	weft_cursor *c;
	REQUIRE(weft_cursor_create(tr, NULL, &c) == 0);
	const weft_event *ev;
	weft_field f[16];
	uint32_t k = 0;
	while (weft_cursor_next(c, &ev) == 1) {
		char name[64], label[64], want[32];
		int n = weft_event_fields(tr, ev, f, 16);
		field_text(f, n, "name", name, sizeof name);
		field_text(f, n, "label", label, sizeof label);
		snprintf(want, sizeof want, "g%u", k);
		CHECK_EQ_STR(name, want);
		snprintf(want, sizeof want, "v%u", k);
		CHECK_EQ_STR(label, k % 3 ? want : "");
		k++;
	}
	CHECK_EQ_U64(k, STRING_EVENTS);
	weft_cursor_free(c);
	weft_trace_free(tr);
}

/* ---- records ----------------------------------------------------------------------------- */

/* An attribute list with one u32 value of attribute 0 ("size"). */
static const weft_pallas_attrs *size_attr(weft_pallas_attrs *a, uint32_t v)
{
	weft_pallas_attrs_init(a);
	CK(weft_pallas_attrs_add_u32(a, 0, v));
	return a;
}

/* Every record kind of the writer's API, nested in each other's blocks. */
static void record_all(weft_pallas_thread *t, uint32_t peer)
{
	weft_pallas_attrs a;
	uint64_t ts = 100;
	CK(weft_pallas_record_enter(t, size_attr(&a, 1), ts++, 1));
	CK(weft_pallas_record_mpi_send(t, size_attr(&a, 2), ts++, peer, 0, 7, 64));
	CK(weft_pallas_record_mpi_isend(t, NULL, ts++, peer, 0, 8, 16, 99));
	CK(weft_pallas_record_mpi_isend_complete(t, NULL, ts++, 99));
	CK(weft_pallas_record_mpi_recv(t, NULL, ts++, peer, 0, 7, 64));
	CK(weft_pallas_record_mpi_irecv(t, NULL, ts++, peer, 0, 9, 32, 98));
	CK(weft_pallas_record_mpi_irecv_request(t, NULL, ts++, 98));
	CK(weft_pallas_record_mpi_collective_begin(t, NULL, ts++));
	CK(weft_pallas_record_mpi_collective_end(t, NULL, ts++, 1, 0, 0, 8, 8));
	CK(weft_pallas_record_omp_fork(t, size_attr(&a, 3), ts++, 4));
	CK(weft_pallas_record_omp_acquire_lock(t, NULL, ts++, 3));
	CK(weft_pallas_record_omp_task_create(t, NULL, ts++, 5));
	CK(weft_pallas_record_omp_task_switch(t, NULL, ts++, 5));
	CK(weft_pallas_record_omp_task_complete(t, NULL, ts++, 5));
	CK(weft_pallas_record_omp_release_lock(t, NULL, ts++, 3));
	CK(weft_pallas_record_thread_begin(t, NULL, ts++));
	CK(weft_pallas_record_thread_team_begin(t, NULL, ts++));
	CK(weft_pallas_record_thread_fork(t, NULL, ts++, 2));
	CK(weft_pallas_record_thread_acquire_lock(t, NULL, ts++, 4));
	CK(weft_pallas_record_thread_task_create(t, NULL, ts++));
	CK(weft_pallas_record_generic(t, size_attr(&a, 4), ts++, 3));
	CK(weft_pallas_record_thread_release_lock(t, NULL, ts++, 4));
	CK(weft_pallas_record_thread_join(t, NULL, ts++));
	CK(weft_pallas_record_thread_team_end(t, NULL, ts++));
	CK(weft_pallas_record_thread_end(t, NULL, ts++));
	CK(weft_pallas_record_omp_join(t, NULL, ts++));
	CK(weft_pallas_record_leave(t, size_attr(&a, 5), ts++, 1));
}

/* Two fields are the same: name, and value (references are renumbered). */
static void check_same_field(const weft_field *a, const weft_field *b, uint64_t time)
{
	char an[64], bn[64];
	snprintf(an, sizeof an, "%.*s", (int)a->name_len, a->name);
	snprintf(bn, sizeof bn, "%.*s", (int)b->name_len, b->name);
	CHECK_EQ_STR(bn, an);
	size_t n = strlen(an);
	if (n > 4 && strcmp(an + n - 4, "_ref") == 0)
		return;
	CHECK_EQ_I64(b->type, a->type);
	if (a->type == WEFT_TYPE_STR || a->type == WEFT_TYPE_BYTES) {
		CHECK(a->v.s.len == b->v.s.len && memcmp(a->v.s.ptr, b->v.s.ptr, a->v.s.len) == 0);
		return;
	}
	if (a->v.u != b->v.u)
		tu_fail(__FILE__, __LINE__, "event at %llu: %s is %llu, was %llu",
			(unsigned long long)time, an, (unsigned long long)b->v.u,
			(unsigned long long)a->v.u);
}

/*
 * Both traces have the same events: stream, code, time, depth, parent and
 * fields (the payload's, then the attributes); returns how many.
 */
static uint64_t check_same_events(const char *src_dir, const char *out_dir)
{
	weft_trace *src, *out;
	weft_cursor *a, *b;
	REQUIRE(weft_trace_open(src_dir, NULL, &src) == 0);
	REQUIRE(weft_trace_open(out_dir, NULL, &out) == 0);
	REQUIRE(weft_cursor_create(src, NULL, &a) == 0 && weft_cursor_create(out, NULL, &b) == 0);
	const weft_event *x, *y;
	weft_field fx[32], fy[32];
	uint64_t n = 0;
	while (weft_cursor_next(a, &x) == 1) {
		REQUIRE(weft_cursor_next(b, &y) == 1);
		CHECK_EQ_STR(weft_trace_stream(out, y->stream)->path,
			     weft_trace_stream(src, x->stream)->path);
		CHECK(x->code_len == y->code_len && memcmp(x->code, y->code, x->code_len) == 0);
		CHECK_EQ_U64(y->time, x->time);
		CHECK_EQ_I64(y->depth, x->depth);
		CHECK_EQ_I64(y->parent, x->parent);
		int nx = weft_event_fields(src, x, fx, 32), ny = weft_event_fields(out, y, fy, 32);
		CHECK_EQ_I64(ny, nx);
		for (int i = 0; i < nx && i < ny; i++)
			check_same_field(&fx[i], &fy[i], x->time);
		n++;
	}
	CHECK(weft_cursor_next(b, &y) == 0);
	weft_cursor_free(a), weft_cursor_free(b);
	weft_trace_free(src), weft_trace_free(out);
	return n;
}

static void test_records(void)
{
	source s;
	source_begin(&s, "records", 2);
	CK(weft_pallas_add_string(s.gd, 2, "main"));
	CK(weft_pallas_add_string(s.gd, 3, "tick"));
	CK(weft_pallas_add_string(s.gd, 4, "size"));
	CK(weft_pallas_add_region(s.gd, 1, 2));
	CK(weft_pallas_add_attribute(s.gd, 0, 4, 4, WEFT_PALLAS_TYPE_UINT32));
	for (uint32_t i = 0; i < 2; i++) {
		weft_pallas_thread *t;
		REQUIRE(weft_pallas_thread_create(s.a, i, &t) == 0);
		record_all(t, 1 - i);
		CK(weft_pallas_thread_close(t));
	}
	source_end(&s);
	const char *out = convert(&s, 0);
	REQUIRE(out != NULL);
	CHECK_EQ_U64(check_same_events(s.dir, out), 2 * 27);
}

int main(void)
{
	scratch = tu_mkdtemp("weft-convert-pallas");
	REQUIRE(scratch != NULL);
	test_strings();
	test_records();
	return tu_finish_dir(scratch);
}
