/*
 * test_convert_pallas.c - `weft convert --to pallas` on Pallas sources
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

/* `weft convert SRC --to pallas -o SRC.out`: the output path (static), NULL when it failed. */
static const char *convert(const source *s, int want_status)
{
	static char out[1100];
	char args[1200];
	int status;
	snprintf(out, sizeof out, "%s.out", s->dir);
	snprintf(args, sizeof args, "convert --to pallas --force -o '%s'", out);
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

int main(void)
{
	scratch = tu_mkdtemp("weft-convert-pallas");
	REQUIRE(scratch != NULL);
	test_strings();
	return tu_finish_dir(scratch);
}
