/* SPDX-License-Identifier: MIT */
/*
 * test_dump_api.c - weft_dump() (weft/dump.h) through the public API:
 * every mode, with a filter, into a file, equal byte for byte to what
 * `weft dump` prints for a trace of each format; the stages of its
 * failures (an output that cannot be written, a bad mode); and
 * weft_format_detect() on the same traces.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"
#include "weft/weft.h"

static const char *const traces[] = {
	"ovni/v3/mpi-func-4procs/ovni",
	"heph/heph_sample.bin.log",
	"ross/phold-evtrace-full/np1/ross-stats-evtrace.bin",
	"pallas/weft_order/trace",
};

/* weft_dump() of `rel` with `o` into a file, against `weft dump ARGS`. */
static void check_same(const char *dir, const char *rel, const weft_dump_options *o,
		       const char *args)
{
	char out[4096];
	weft_trace *t;
	weft_dump_status st;
	int status;
	size_t n;

	snprintf(out, sizeof out, "%s/dump.txt", dir);
	REQUIRE(weft_trace_open(tu_data_path(rel), NULL, &t) == 0);
	int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	REQUIRE(fd >= 0);
	CHECK(weft_dump(t, o, fd, &st) == 0);
	CHECK(st.stage == WEFT_DUMP_DONE);
	close(fd);
	weft_trace_free(t);
	char *got = tu_read_file(out, &n);
	char *want = tu_run_weft(args, tu_data_path(rel), &status);
	REQUIRE(got != NULL && want != NULL);
	CHECK_EQ_STR(got, want);
	size_t lines = 0;
	for (size_t i = 0; i < n; i++)
		lines += got[i] == '\n';
	CHECK_EQ_U64(st.events, lines);
	CHECK(lines > 0);
	free(got);
	free(want);
}

int main(void)
{
	char *dir = tu_mkdtemp("dump-api");
	REQUIRE(dir != NULL);
	weft_dump_options o;

	for (size_t i = 0; i < sizeof traces / sizeof *traces; i++) {
		/* weft_format_detect() names the format opening finds. */
		weft_trace *opened;
		REQUIRE(weft_trace_open(tu_data_path(traces[i]), NULL, &opened) == 0);
		CHECK_EQ_I64(weft_format_detect(tu_data_path(traces[i]), NULL),
			     (int)weft_trace_format(opened));
		weft_trace_free(opened);
		weft_dump_options_init(&o);
		check_same(dir, traces[i], &o, "dump");
		o.mode = WEFT_DUMP_JSON;
		check_same(dir, traces[i], &o, "dump --json");
		o.mode = WEFT_DUMP_HEX;
		o.filter.stream_pattern = "*1*";
		check_same(dir, traces[i], &o, "dump -x --stream '*1*'");
	}
	weft_dump_options_init(&o);
	o.flags = WEFT_DUMP_TREE;
	check_same(dir, traces[1], &o, "dump --tree");

	/* Failures: where, and nothing read past them. */
	weft_trace *t;
	weft_dump_status st;
	REQUIRE(weft_trace_open(tu_data_path(traces[1]), NULL, &t) == 0);
	weft_dump_options_init(&o);
	CHECK(weft_dump(t, &o, -1, &st) == WEFT_EIO);
	CHECK(st.stage == WEFT_DUMP_WRITE);
	o.mode = (weft_dump_mode)7;
	CHECK(weft_dump(t, &o, STDOUT_FILENO, &st) == WEFT_EINVAL);
	CHECK(st.stage == WEFT_DUMP_START && st.events == 0);
	o.mode = WEFT_DUMP_FIELDS;
	o.filter.order = 9;
	CHECK(weft_dump(t, &o, STDOUT_FILENO, &st) == WEFT_EINVAL);
	CHECK(st.stage == WEFT_DUMP_CURSOR);
	CHECK(weft_dump(t, &o, STDOUT_FILENO, NULL) == WEFT_EINVAL);
	weft_trace_free(t);
	CHECK(weft_format_detect(tu_data_path("heph/heph_sample.json"), NULL) == WEFT_ENOTFOUND);
	CHECK(weft_format_detect(NULL, NULL) == WEFT_EINVAL);
	/* A forced format, or one an option implies, is the answer. */
	weft_open_options forced;
	weft_open_options_init(&forced);
	forced.format = WEFT_FORMAT_HEPH;
	CHECK_EQ_I64(weft_format_detect(tu_data_path(traces[0]), &forced), WEFT_FORMAT_HEPH);
	weft_open_options_init(&forced);
	REQUIRE(weft_open_options_set(&forced, "ross.kind", "gvt") == 0);
	CHECK_EQ_I64(weft_format_detect(tu_data_path(traces[0]), &forced), WEFT_FORMAT_ROSS);
	return tu_finish_dir(dir);
}
