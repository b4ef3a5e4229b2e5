/* SPDX-License-Identifier: MIT */
/*
 * test_value_text.c - the shared text of field values
 * (outputs/value_text.c) in the notations of `weft dump` (text and JSON),
 * and weft__type_from_name(), the reverse of
 * weft_type_name() that the ovni and ROSS readers use for the type names
 * in their files.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/internal.h"
#include "outputs/outputs.h"
#include "testutil.h"

/* The text `put` writes for `f` (through a temporary file). */
static char *value_text(void (*put)(weft__outbuf *, const weft_field *), const weft_field *f)
{
	char path[] = "/tmp/weft-value-text-XXXXXX";
	int fd = mkstemp(path);
	weft__outbuf ob;
	REQUIRE(fd >= 0);
	REQUIRE(weft__outbuf_init(&ob, fd, 0) == 0);
	put(&ob, f);
	REQUIRE(weft__outbuf_flush(&ob) == 0);
	weft__outbuf_destroy(&ob);
	close(fd);
	char *text = tu_read_file(path, NULL);
	unlink(path);
	REQUIRE(text != NULL);
	return text;
}

/* Checks the text and JSON notations of one field. */
static void check_value(const weft_field *f, const char *text, const char *json)
{
	char *got = value_text(weft__put_field_text, f);
	CHECK_EQ_STR(got, text);
	free(got);
	got = value_text(weft__put_field_json, f);
	CHECK_EQ_STR(got, json);
	free(got);
}

/* A scalar field of `type`. */
static weft_field scalar(weft_type type)
{
	weft_field f;
	memset(&f, 0, sizeof f);
	f.name = "x";
	f.name_len = 1;
	f.type = type;
	return f;
}

static void test_scalars(void)
{
	weft_field f = scalar(WEFT_TYPE_U64);
	f.v.u = UINT64_MAX;
	check_value(&f, "18446744073709551615", "18446744073709551615");
	f = scalar(WEFT_TYPE_I64);
	f.v.i = INT64_MIN;
	check_value(&f, "-9223372036854775808", "-9223372036854775808");
	f = scalar(WEFT_TYPE_F32);
	f.v.f = 0.1f;
	check_value(&f, "0.100000001", "0.100000001");
	f = scalar(WEFT_TYPE_F64);
	f.v.f = NAN;
	check_value(&f, "nan", "null");
	f = scalar(WEFT_TYPE_BOOL);
	f.v.u = 1;
	check_value(&f, "true", "true");
	f = scalar(WEFT_TYPE_STR);
	f.v.s.ptr = "a\"b";
	f.v.s.len = 3;
	check_value(&f, "\"a\\\"b\"", "\"a\\\"b\"");
	f = scalar(WEFT_TYPE_BYTES);
	f.v.s.ptr = "\x01\xff";
	f.v.s.len = 2;
	check_value(&f, ":01:ff", "\"01ff\"");
	f = scalar((weft_type)99);
	check_value(&f, "?", "null");
}

static void test_arrays(void)
{
	static const uint8_t raw[] = { 1, 0, 2, 0, 3 }; /* two u16 and a stray byte */
	weft_field f = scalar(WEFT_TYPE_U16);
	f.is_array = 1;
	f.count = 2;
	f.raw = raw;
	f.raw_size = 4;
	check_value(&f, "[1,2]", "[1,2]");
	f.count = 3; /* the third element is past the data */
	check_value(&f, "[1,2,?]", "[1,2,null]");
}

static void test_type_names(void)
{
	for (int t = WEFT_TYPE_U8; t <= WEFT_TYPE_BOOL; t++) {
		const char *name = weft_type_name((weft_type)t);
		CHECK(weft__type_from_name(name, strlen(name)) == (weft_type)t);
	}
	CHECK(weft__type_from_name("u320", 3) == WEFT_TYPE_U32);
	CHECK(weft__type_from_name("u320", 4) == 0);
	CHECK(weft__type_from_name("U32", 3) == 0);
	CHECK(weft__type_from_name("", 0) == 0);
	CHECK(weft__type_from_name("?", 1) == 0);
}

int main(void)
{
	test_scalars();
	test_arrays();
	test_type_names();
	return tu_result();
}
