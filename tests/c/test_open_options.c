/* SPDX-License-Identifier: MIT */
/*
 * test_open_options.c - the format options of weft_trace_open()
 * (weft_open_options_set/get, weft_format_option_*): keys of every
 * backend, values checked by type with a message that says what the key
 * takes, a key set again replaced, and a value the caller put in the
 * arrays without the setter refused by the open.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "weft/weft.h"
#include "testutil.h"

/* Every format lists its options; the keys carry the format's name. */
static void test_listing(void)
{
	size_t all = weft_format_option_count(WEFT_FORMAT_AUTO);
	CHECK_EQ_U64(all, 8);
	CHECK_EQ_U64(weft_format_option_count(WEFT_FORMAT_OVNI), 3);
	CHECK_EQ_U64(weft_format_option_count(WEFT_FORMAT_HEPH), 1);
	CHECK_EQ_U64(weft_format_option_count(WEFT_FORMAT_ROSS), 4);
	CHECK_EQ_U64(weft_format_option_count(WEFT_FORMAT_PALLAS), 0);
	CHECK(weft_format_option_get(WEFT_FORMAT_AUTO, all) == NULL);
	CHECK(weft_format_option_get(WEFT_FORMAT_ROSS, 4) == NULL);
	for (size_t i = 0; i < all; i++) {
		const weft_format_option *o = weft_format_option_get(WEFT_FORMAT_AUTO, i);
		REQUIRE(o != NULL);
		const char *dot = strchr(o->key, '.');
		REQUIRE(dot != NULL);
		char name[32];
		snprintf(name, sizeof name, "%.*s", (int)(dot - o->key), o->key);
		CHECK(weft_format_from_name(name) > 0);
		CHECK(o->type[0] != '\0' && o->what[0] != '\0' && o->help[0] != '\0');
	}
	CHECK(strcmp(weft_format_option_get(WEFT_FORMAT_ROSS, 0)->key, "ross.kind") == 0);
	CHECK(weft_format_option_get(WEFT_FORMAT_ROSS, 0)->implies_format == 1);
}

/* Values by type: what each key takes, and the message for what it does not. */
static void test_set_and_get(void)
{
	weft_open_options o;
	weft_open_options_init(&o);
	CHECK(weft_open_options_get(&o, "ross.kind") == NULL);
	CHECK(weft_open_options_set(&o, "ross.kind", "gvt") == 0);
	CHECK(weft_open_options_set(&o, "ross.kind", "evtrace") == 0); /* replaced */
	CHECK_EQ_U64(o.format_option_count, 1);
	CHECK(strcmp(weft_open_options_get(&o, "ross.kind"), "evtrace") == 0);
	CHECK(weft_open_options_set(&o, "ross.resync", "yes") == 0);
	CHECK(weft_open_options_set(&o, "ross.resync", "maybe") == WEFT_EINVAL);
	CHECK(strstr(weft_last_error(), "invalid resync setting 'maybe' (1 or 0") != NULL);
	CHECK(weft_open_options_set(&o, "heph.sort_budget_bytes", "65536") == 0);
	CHECK(weft_open_options_set(&o, "heph.sort_budget_bytes", "64k") == WEFT_EINVAL);
	CHECK(weft_open_options_set(&o, "heph.sort_budget_bytes", "-1") == WEFT_EINVAL);
	CHECK(weft_open_options_set(&o, "heph.sort_budget_bytes", "99999999999999999999") ==
	      WEFT_EINVAL);
	CHECK(weft_open_options_set(&o, "ross.clock_rate", "1e16") == WEFT_EINVAL);
	CHECK(weft_open_options_set(&o, "ross.clock_rate", "nan") == WEFT_EINVAL);
	CHECK(weft_open_options_set(&o, "ovni.clock_offsets", "") == WEFT_EINVAL);
	CHECK(weft_open_options_set(&o, "ross.colour", "red") == WEFT_EINVAL);
	CHECK(strstr(weft_last_error(), "unknown format option 'ross.colour'") != NULL);
	CHECK(weft_open_options_set(&o, NULL, "x") == WEFT_EINVAL);
	CHECK(weft_open_options_set(NULL, "ross.kind", "gvt") == WEFT_EINVAL);
	CHECK_EQ_U64(o.format_option_count, 3);
	CHECK(weft_open_options_get(NULL, "ross.kind") == NULL);
}

/* A value put in the arrays by hand is checked when the trace opens. */
static void test_open_checks(void)
{
	weft_open_options o;
	weft_open_options_init(&o);
	o.format = WEFT_FORMAT_HEPH;
	o.format_option_count = 1;
	o.format_option_keys[0] = "heph.sort_budget_bytes";
	o.format_option_values[0] = "lots";
	weft_trace *t = NULL;
	char path[4096];
	const char *data = getenv("WEFT_TEST_DATA");
	REQUIRE(data != NULL);
	snprintf(path, sizeof path, "%s/heph/heph_sample.bin.log", data);
	CHECK(weft_trace_open(path, &o, &t) == WEFT_EINVAL);
	CHECK(t == NULL);
	CHECK(strstr(weft_last_error(), "invalid sort budget 'lots'") != NULL);
	o.format_option_values[0] = "4096";
	int rc = weft_trace_open(path, &o, &t);
	CHECK(rc == 0);
	weft_trace_free(t);
	/* a key no format has, a key without its value, a count past the arrays */
	o.format_option_keys[0] = "heph.colour";
	CHECK(weft_trace_open(path, &o, &t) == WEFT_EINVAL);
	CHECK(strstr(weft_last_error(), "unknown format option 'heph.colour'") != NULL);
	o.format_option_keys[0] = "heph.sort_budget_bytes";
	o.format_option_values[0] = NULL;
	CHECK(weft_trace_open(path, &o, &t) == WEFT_EINVAL);
	o.format_option_values[0] = "4096";
	o.format_option_count = WEFT_FORMAT_OPTIONS_MAX + 1;
	CHECK(weft_trace_open(path, &o, &t) == WEFT_EINVAL);
}

int main(void)
{
	test_listing();
	test_set_and_get();
	test_open_checks();
	return tu_result();
}
