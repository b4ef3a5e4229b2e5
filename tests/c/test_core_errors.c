/* SPDX-License-Identifier: MIT */
/*
 * test_core_errors.c - the core's error messages: an error passed on with
 * its own parts (file, offset and text of the last error, as a reader does
 * when it gives a message a new status) keeps them, and the open of a path
 * that is no trace names the path and says why.
 */
#include <stdio.h>
#include <string.h>

#include "core/internal.h"
#include "testutil.h"

/* The file and text of the last error, passed back to weft__error. */
static void test_error_passed_on(void)
{
	weft__error(WEFT_ETRUNCATED, "trace.bin.log", 42, "expected %d more bytes", 8);
	CHECK_EQ_STR(weft_last_error(), "trace.bin.log: byte 42: expected 8 more bytes");
	int rc = weft__error(WEFT_EFORMAT, weft__error_file(), weft__error_offset(), "%s",
			     weft__error_text());
	CHECK(rc == WEFT_EFORMAT);
	CHECK_EQ_STR(weft_last_error(), "trace.bin.log: byte 42: expected 8 more bytes");
	CHECK_EQ_STR(weft__error_file(), "trace.bin.log");
	CHECK_EQ_STR(weft__error_text(), "expected 8 more bytes");
	CHECK_EQ_U64(weft__error_offset(), 42);

	/* The text of the last error inside a longer one. */
	weft__error(WEFT_EIO, weft__error_file(), WEFT_NO_OFFSET, "%s (again)",
		    weft__error_text());
	CHECK_EQ_STR(weft_last_error(), "trace.bin.log: expected 8 more bytes (again)");
	CHECK(weft__error_offset() == WEFT_NO_OFFSET);

	/* The public parts (front ends keep them apart: Python's exceptions). */
	weft__error(WEFT_ETRUNCATED, "a.obs", 7, "cut");
	CHECK_EQ_STR(weft_last_error_file(), "a.obs");
	CHECK_EQ_U64(weft_last_error_offset(), 7);
	CHECK_EQ_STR(weft_last_error_text(), "cut");
	weft__error(WEFT_EINVAL, NULL, WEFT_NO_OFFSET, "no file");
	CHECK(weft_last_error_file() == NULL);
	CHECK(weft_last_error_offset() == WEFT_NO_OFFSET);
	CHECK_EQ_STR(weft_last_error_text(), "no file");
}

/* A missing path, and one of the wrong kind for a forced format. */
static void test_open_messages(const char *dir)
{
	weft_trace *t = NULL;
	CHECK(weft_trace_open("/nonexistent/trace", NULL, &t) == WEFT_ENOTFOUND);
	CHECK_EQ_STR(weft_last_error(), "/nonexistent/trace: no such file or directory");
	CHECK(t == NULL);

	weft_open_options o;
	weft_open_options_init(&o);
	o.format = WEFT_FORMAT_HEPH;
	CHECK(weft_trace_open("/", &o, &t) == WEFT_ENOTFOUND);
	CHECK_EQ_STR(weft_last_error(), "/: a directory; expected a Heph trace file");

	/* Every format's description, from the backend table. */
	CHECK(weft_trace_open(dir, NULL, &t) == WEFT_ENOTFOUND);
	const char *msg = weft_last_error();
	CHECK(strstr(msg, "an empty directory, not a trace; expected one of: an ovni") != NULL);
	CHECK(strstr(msg, "; a Heph trace file; a ROSS") != NULL);
	CHECK(strstr(msg, "; a Pallas trace directory or main .pallas file") != NULL);
}

int main(void)
{
	test_error_passed_on();
	char *dir = tu_mkdtemp("weft-errors");
	REQUIRE(dir != NULL);
	test_open_messages(dir);
	return tu_finish_dir(dir);
}
