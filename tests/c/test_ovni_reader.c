/* SPDX-License-Identifier: MIT */
/*
 * test_ovni_reader.c - the ovni reader against the reference traces of
 * libovni 1.4.1 (layout 1), 1.10.0 (layout 2) and 1.14.0 (layout 3), and
 * against broken copies of them: truncated, garbage, wrong magic, other
 * byte order, conflicting metadata; plus clock offsets and sorting.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"
#include "weft/weft.h"

static const char *data_dir(void)
{
	const char *d = getenv("WEFT_TEST_DATA");
	return d ? d : "tests/data";
}

/* Path of a reference trace under tests/data/ovni. */
static const char *ref(const char *rel)
{
	static char buf[4096];
	snprintf(buf, sizeof buf, "%s/ovni/%s", data_dir(), rel);
	return buf;
}

/* Opens `path` (stored order when asked), failing the test on error. */
static weft_trace *open_trace(const char *path, int stored_order)
{
	weft_open_options o;
	weft_open_options_init(&o);
	o.stored_order = stored_order;
	weft_trace *t = NULL;
	int rc = weft_trace_open(path, &o, &t);
	if (rc < 0)
		fprintf(stderr, "open %s: %s\n", path, weft_last_error());
	return t;
}

/* Events of the whole trace merged; checks non-decreasing time. */
static long count_merged(weft_trace *t, int *sorted)
{
	weft_cursor *c;
	if (weft_cursor_create(t, NULL, &c) < 0)
		return -1;
	const weft_event *ev;
	long n = 0;
	uint64_t last = 0;
	*sorted = 1;
	while (weft_cursor_next(c, &ev) == 1) {
		if (ev->time < last)
			*sorted = 0;
		last = ev->time;
		n++;
	}
	weft_cursor_free(c);
	return n;
}

/* Does any diagnostic of the trace contain `text`? */
static const weft_diag *find_diag(const weft_trace *t, const char *text)
{
	for (size_t i = 0; i < weft_trace_diag_count(t); i++)
		if (strstr(weft_trace_diag(t, i)->message, text) != NULL)
			return weft_trace_diag(t, i);
	return NULL;
}

static void test_layout3(void)
{
	weft_trace *t = open_trace(ref("v3/nosv-parallel-tasks/ovni"), 0);
	CHECK(t != NULL);
	if (t == NULL)
		return;
	CHECK(weft_trace_format(t) == WEFT_FORMAT_OVNI);
	CHECK(weft_trace_layout_version(t) == 3);
	CHECK(weft_trace_stream_count(t) == 1);
	CHECK(weft_trace_node_count(t) == 3);
	CHECK(strcmp(weft_trace_node(t, 0)->kind, "loom") == 0);
	CHECK(strcmp(weft_trace_node(t, 1)->kind, "process") == 0);
	CHECK(weft_trace_node(t, 1)->number == 2184);
	CHECK(strstr(weft_trace_node(t, 0)->metadata_json, "loom_cpus") != NULL);
	CHECK(strstr(weft_trace_node(t, 1)->metadata_json, "\"app_id\":1") != NULL);
	const weft_stream_info *s = weft_trace_stream(t, 0);
	CHECK(strcmp(s->path, "loom.vm.0/proc.2184/thread.2184") == 0);
	CHECK(s->finished == 1 && s->big_endian == 0);
	CHECK(weft_trace_diag_count(t) == 0);

	weft_cursor *c;
	CHECK(weft_cursor_create_stream(t, 0, &c) == 0);
	const weft_event *ev;
	weft_field f[4];
	CHECK(weft_cursor_next(c, &ev) == 1);
	CHECK(ev->time == 498326698260ull && memcmp(ev->code, "OHx", 3) == 0);
	CHECK(ev->payload_size == 16 && ev->offset == 8 && ev->seq == 0);
	CHECK(weft_event_fields(t, ev, f, 4) == 3);
	CHECK(f[0].name_len == 3 && memcmp(f[0].name, "cpu", 3) == 0 && f[0].v.i == 0);
	CHECK(f[1].type == WEFT_TYPE_I32 && f[1].v.i == -1);
	CHECK(weft_cursor_next(c, &ev) == 1);
	CHECK(memcmp(ev->code, "VYc", 3) == 0 && (ev->flags & WEFT_EVENT_JUMBO));
	CHECK(ev->data_size == 16);
	CHECK(weft_event_fields(t, ev, f, 4) == 2);
	CHECK(f[0].v.u == 100 && f[1].type == WEFT_TYPE_STR);
	CHECK(f[1].v.s.len == 11 && memcmp(f[1].v.s.ptr, "testtype100", 11) == 0);
	long n = 2;
	while (weft_cursor_next(c, &ev) == 1)
		n++;
	CHECK(n == 404);
	weft_cursor_free(c);
	weft_trace_free(t);
}

static void test_layouts_1_and_2(void)
{
	int sorted;
	weft_trace *t = open_trace(ref("v1/1.4.1/ovni"), 0);
	CHECK(t != NULL);
	if (t != NULL) {
		CHECK(weft_trace_layout_version(t) == 1);
		CHECK(weft_trace_stream_count(t) == 5);
		CHECK(strcmp(weft_trace_stream(t, 0)->path,
			     "loom.node1.trace/proc.1000/thread.1001.obs") == 0);
		CHECK(weft_trace_stream(t, 0)->finished == -1);
		CHECK(count_merged(t, &sorted) == 28 && sorted);
		CHECK(strstr(weft_trace_node(t, 0)->metadata_json, "loom_cpus") != NULL);
		weft_trace_free(t);
	}
	t = open_trace(ref("v2/1.10.0/ovni"), 0);
	CHECK(t != NULL);
	if (t != NULL) {
		CHECK(weft_trace_layout_version(t) == 2);
		CHECK(weft_trace_stream(t, 0)->finished == 1);
		CHECK(count_merged(t, &sorted) == 31 && sorted);
		CHECK(strstr(weft_trace_node(t, 1)->metadata_json, "Phase") != NULL);
		weft_trace_free(t);
	}
}

/* The unsorted trace: sorted delivery by default, stored order on request. */
static void test_unordered_regions(void)
{
	int sorted;
	weft_trace *t = open_trace(ref("v3/ovni-sort-unsorted/ovni"), 0);
	CHECK(t != NULL);
	if (t == NULL)
		return;
	CHECK(count_merged(t, &sorted) == 105 && sorted);
	CHECK(weft_trace_diag_count(t) == 0);
	weft_trace_free(t);

	t = open_trace(ref("v3/ovni-sort-unsorted/ovni"), 1);
	CHECK(t != NULL);
	if (t == NULL)
		return;
	CHECK(count_merged(t, &sorted) == 105 && !sorted);
	CHECK(weft_trace_diag_count(t) == 0); /* going back inside OU[..OU] is fine */
	weft_trace_free(t);
}

/* This test's scratch directory, made on first use. */
static char *scratch_dir;

static const char *scratch(void)
{
	if (scratch_dir == NULL)
		scratch_dir = tu_mkdtemp("weft-ovni-reader");
	REQUIRE(scratch_dir != NULL);
	return scratch_dir;
}

/* A scratch copy of a reference trace; returns the copy's path. */
static const char *scratch_copy(const char *rel, const char *name)
{
	static char dst[4096];
	snprintf(dst, sizeof dst, "%s/%s", scratch(), name);
	char cmd[16384];
	snprintf(cmd, sizeof cmd, "rm -rf '%s' && cp -r '%s' '%s' && chmod -R u+w '%s'",
		 dst, ref(rel), dst, dst);
	CHECK(system(cmd) == 0);
	return dst;
}

/* Byte-swaps every multi-byte value of an ovni stream (a big-endian copy). */
static void swap_stream(weft_trace *t, const char *out_path)
{
	FILE *out = fopen(out_path, "wb");
	CHECK(out != NULL);
	if (out == NULL)
		return;
	fwrite("ovni\0\0\0\1", 1, 8, out);
	weft_cursor *c;
	CHECK(weft_cursor_create_stream(t, 0, &c) == 0);
	const weft_event *ev;
	while (weft_cursor_next(c, &ev) == 1) {
		unsigned char buf[64];
		memcpy(buf, ev->code - 1, 4);
		uint64_t clock = __builtin_bswap64(ev->time);
		memcpy(buf + 4, &clock, 8);
		memcpy(buf + 12, ev->payload, ev->payload_size);
		/* Swap each decoded field in place; strings stay as they are. */
		unsigned char *p = buf + 12;
		if (ev->flags & WEFT_EVENT_JUMBO) {
			uint32_t size = __builtin_bswap32((uint32_t)ev->data_size);
			memcpy(p, &size, 4);
		}
		weft_field f[8];
		int n = weft_event_fields(t, ev, f, 8);
		unsigned char data[4096];
		if (ev->data_size > 0)
			memcpy(data, ev->data, ev->data_size);
		unsigned char *q = (ev->flags & WEFT_EVENT_JUMBO) ? data : p;
		for (int i = 0; i < n; i++) {
			static const int width[] = {
				[WEFT_TYPE_U8] = 1, [WEFT_TYPE_U16] = 2, [WEFT_TYPE_U32] = 4,
				[WEFT_TYPE_U64] = 8, [WEFT_TYPE_I8] = 1, [WEFT_TYPE_I16] = 2,
				[WEFT_TYPE_I32] = 4, [WEFT_TYPE_I64] = 8,
			};
			if (f[i].type == WEFT_TYPE_STR) {
				q += f[i].v.s.len + 1;
				continue;
			}
			int w = width[f[i].type];
			for (int k = 0; k < w / 2; k++) {
				unsigned char x = q[k];
				q[k] = q[w - 1 - k];
				q[w - 1 - k] = x;
			}
			q += w;
		}
		fwrite(buf, 1, 12 + ev->payload_size, out);
		fwrite(data, 1, ev->data_size, out);
	}
	weft_cursor_free(c);
	fclose(out);
}

/* A byte-swapped copy reads as the same events with the same fields. */
static void test_big_endian(void)
{
	const char *dir = scratch_copy("v3/nosv-parallel-tasks/ovni", "swapped");
	weft_trace *orig = open_trace(ref("v3/nosv-parallel-tasks/ovni"), 0);
	CHECK(orig != NULL);
	if (orig == NULL)
		return;
	char path[4096];
	snprintf(path, sizeof path, "%s/loom.vm.0/proc.2184/thread.2184/stream.obs", dir);
	swap_stream(orig, path);
	weft_trace *t = open_trace(dir, 0);
	CHECK(t != NULL);
	if (t == NULL) {
		weft_trace_free(orig);
		return;
	}
	weft_cursor *a, *b;
	CHECK(weft_cursor_create(orig, NULL, &a) == 0);
	CHECK(weft_cursor_create(t, NULL, &b) == 0);
	const weft_event *ea, *eb;
	long n = 0, same = 0;
	while (weft_cursor_next(a, &ea) == 1 && weft_cursor_next(b, &eb) == 1) {
		n++;
		weft_field fa[8], fb[8];
		int ka = weft_event_fields(orig, ea, fa, 8), kb = weft_event_fields(t, eb, fb, 8);
		int ok = ea->time == eb->time && memcmp(ea->code, eb->code, 3) == 0 &&
			 ka == kb && (eb->flags & WEFT_EVENT_BIG_ENDIAN);
		for (int i = 0; ok && i < ka; i++)
			ok = fa[i].type == WEFT_TYPE_STR ?
			     fa[i].v.s.len == fb[i].v.s.len : fa[i].v.u == fb[i].v.u;
		same += ok;
	}
	CHECK(n == 404 && same == n);
	CHECK(weft_trace_stream(t, 0)->big_endian == 1);
	weft_cursor_free(a);
	weft_cursor_free(b);
	weft_trace_free(t);
	weft_trace_free(orig);
}

/* Rewrites bytes of a file at `offset` (or truncates it when data is NULL). */
static void patch_file(const char *path, long offset, const void *data, size_t n)
{
	if (data == NULL) {
		CHECK(truncate(path, offset) == 0);
		return;
	}
	FILE *f = fopen(path, "r+b");
	CHECK(f != NULL);
	if (f == NULL)
		return;
	fseek(f, offset, SEEK_SET);
	fwrite(data, 1, n, f);
	fclose(f);
}

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	CHECK(f != NULL);
	if (f != NULL) {
		fputs(text, f);
		fclose(f);
	}
}

#define NOSV_STREAM "/loom.vm.0/proc.2184/thread.2184/stream.obs"
#define NOSV_JSON "/loom.vm.0/proc.2184/thread.2184/stream.json"

/* Each kind of damage gives its diagnostic, and the valid prefix. */
static void test_damaged_streams(void)
{
	char path[4096];
	int sorted;
	/* Truncated in the last event of a finished stream: error, prefix kept. */
	const char *dir = scratch_copy("v3/nosv-parallel-tasks/ovni", "truncated");
	snprintf(path, sizeof path, "%s" NOSV_STREAM, dir);
	struct stat st;
	CHECK(stat(path, &st) == 0);
	patch_file(path, (long)st.st_size - 5, NULL, 0);
	weft_trace *t = open_trace(dir, 0);
	CHECK(t != NULL);
	if (t != NULL) {
		CHECK(count_merged(t, &sorted) == 403);
		const weft_diag *d = find_diag(t, "12-byte event header");
		CHECK(d != NULL && d->severity == WEFT_SEV_ERROR);
		CHECK(d != NULL && d->offset == (uint64_t)st.st_size - 12);
		weft_trace_free(t);
	}
	/* The same without finished: a warning only. */
	snprintf(path, sizeof path, "%s" NOSV_JSON, dir);
	write_text(path, "{\"version\": 3, \"ovni\": {\"part\": \"thread\", \"tid\": 2184,"
		   " \"pid\": 2184, \"loom\": \"vm.0\", \"loom_cpus\": []}}");
	t = open_trace(dir, 0);
	CHECK(t != NULL);
	if (t != NULL) {
		CHECK(weft_trace_stream(t, 0)->finished == 0);
		CHECK(find_diag(t, "not closed") != NULL);
		CHECK(count_merged(t, &sorted) == 403);
		const weft_diag *d = find_diag(t, "12-byte event header");
		CHECK(d != NULL && d->severity == WEFT_SEV_WARNING);
		weft_trace_free(t);
	}

	/* Reserved flag bits on the third event (offset 8 + 28 + 32 = 68). */
	dir = scratch_copy("v3/nosv-parallel-tasks/ovni", "garbage");
	snprintf(path, sizeof path, "%s" NOSV_STREAM, dir);
	patch_file(path, 68, "\x87", 1);
	t = open_trace(dir, 0);
	CHECK(t != NULL);
	if (t != NULL) {
		CHECK(count_merged(t, &sorted) == 2);
		const weft_diag *d = find_diag(t, "reserved bits");
		CHECK(d != NULL && d->offset == 68 && d->severity == WEFT_SEV_ERROR);
		weft_trace_free(t);
	}

	/* Wrong magic: the stream cannot be opened, the message says why. */
	patch_file(path, 0, "ovnx", 4);
	t = open_trace(dir, 0);
	CHECK(t != NULL);
	if (t != NULL) {
		weft_cursor *c;
		CHECK(weft_cursor_create_stream(t, 0, &c) == WEFT_EFORMAT);
		CHECK(strstr(weft_last_error(), "magic") != NULL);
		CHECK(strstr(weft_last_error(), "byte 0") != NULL);
		weft_trace_free(t);
	}

	/* A jumbo size past the end of the file (the VYc at offset 36). */
	dir = scratch_copy("v3/nosv-parallel-tasks/ovni", "jumbo");
	snprintf(path, sizeof path, "%s" NOSV_STREAM, dir);
	patch_file(path, 36 + 12, "\xff\xff\xff\x7f", 4);
	t = open_trace(dir, 0);
	CHECK(t != NULL);
	if (t != NULL) {
		CHECK(count_merged(t, &sorted) == 1);
		const weft_diag *d = find_diag(t, "event VYc needs");
		CHECK(d != NULL && d->offset == 36);
		weft_trace_free(t);
	}
}

/* Two threads of one process that disagree on app_id. */
static void test_metadata_conflict(void)
{
	const char *dir = scratch_copy("v3/bench-valid-small/ovni", "conflict");
	char path[4096];
	snprintf(path, sizeof path, "%s/loom.vm.bench/proc.2213/thread.2215/stream.json", dir);
	char cmd[8192];
	snprintf(cmd, sizeof cmd, "sed -i 's/\"app_id\": 1/\"app_id\": 7/' '%s'", path);
	CHECK(system(cmd) == 0);
	weft_trace *t = open_trace(dir, 0);
	CHECK(t != NULL);
	if (t != NULL) {
		const weft_diag *d = find_diag(t, "conflict for ovni.app_id");
		CHECK(d != NULL);
		CHECK(d != NULL && strstr(d->file, "thread.2215") != NULL);
		weft_trace_free(t);
	}
}

/* ovnisync offsets: the host is the loom name up to the first dot. */
static void test_clock_offsets(void)
{
	const char *dir = scratch_copy("v3/nosv-parallel-tasks/ovni", "offsets");
	char path[4096];
	snprintf(path, sizeof path, "%s/clock-offsets.txt", dir);
	write_text(path, "rank       hostname             offset_median        offset_mean          offset_std\n"
		   "0          vm                   1000                 1000.0               0.0\n");
	weft_trace *t = open_trace(dir, 0);
	CHECK(t != NULL);
	if (t != NULL) {
		CHECK(weft_trace_stream(t, 0)->clock_offset == 1000);
		weft_cursor *c;
		const weft_event *ev;
		CHECK(weft_cursor_create(t, NULL, &c) == 0);
		CHECK(weft_cursor_next(c, &ev) == 1 && ev->time == 498326698260ull + 1000);
		weft_cursor_free(c);
		weft_trace_free(t);
	}
	write_text(path, "rank hostname offset_median\n0 other 5\n");
	t = open_trace(dir, 0);
	CHECK(t != NULL);
	if (t != NULL) {
		CHECK(weft_trace_stream(t, 0)->clock_offset == 0);
		CHECK(find_diag(t, "no clock offset for host vm") != NULL);
		weft_trace_free(t);
	}
}

/* weft_ovni_sort: check, then rewrite; the result reads sorted as stored. */
static void test_sort(void)
{
	const char *dir = scratch_copy("v3/ovni-sort-unsorted/ovni", "sort");
	weft_ovni_sort_report r;
	CHECK(weft_ovni_sort(dir, 1, &r) == 0);
	CHECK(r.streams == 1 && r.regions == 1 && r.unsorted_streams == 1);
	CHECK(r.moved_events > 0 && r.rewritten_streams == 0);
	CHECK(weft_ovni_sort(dir, 0, &r) == 0);
	CHECK(r.rewritten_streams == 1);
	int sorted;
	weft_trace *t = open_trace(dir, 1);
	CHECK(t != NULL);
	if (t != NULL) {
		CHECK(count_merged(t, &sorted) == 105 && sorted);
		weft_trace_free(t);
	}
	CHECK(weft_ovni_sort(dir, 1, &r) == 0 && r.unsorted_streams == 0);
}

static void test_errors(void)
{
	weft_trace *t = NULL;
	CHECK(weft_trace_open("/nonexistent/trace", NULL, &t) == WEFT_ENOTFOUND);
	CHECK(t == NULL);
	CHECK(strstr(weft_last_error(), "/nonexistent/trace") != NULL);
	weft_trace_free(NULL);
	weft_cursor_free(NULL);
	CHECK(strcmp(weft_strerror(WEFT_EFORMAT), "malformed input") == 0);
	const weft_ovni_signature *vtx = weft_ovni_signature_find("VTx");
	REQUIRE(vtx != NULL);
	CHECK(strcmp(vtx->model, "nosv") == 0 && strcmp(vtx->role, "point") == 0);
	CHECK(strcmp(vtx->fields, "u32 taskid, u32 bodyid") == 0);
	const weft_ovni_signature *vs = weft_ovni_signature_find("VS[");
	REQUIRE(vs != NULL);
	CHECK(strcmp(vs->role, "enter") == 0 && strcmp(vs->partner, "VS]") == 0);
	CHECK(weft_ovni_signature_find("zz?") == NULL);
}

int main(void)
{
	test_layout3();
	test_layouts_1_and_2();
	test_unordered_regions();
	test_big_endian();
	test_damaged_streams();
	test_metadata_conflict();
	test_clock_offsets();
	test_sort();
	test_errors();
	return tu_finish_dir(scratch_dir);
}
