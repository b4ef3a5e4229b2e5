/* SPDX-License-Identifier: MIT */
/*
 * test_ovni_robust.c - bad input is normal input: every truncation of a
 * real stream, and thousands of random corruptions of its bytes and of its
 * metadata, must give either events or diagnostics, never a crash, a hang
 * or an allocation sized by garbage (CI runs this under ASan and UBSan).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"
#include "weft/weft.h"

#define REL_STREAM "loom.vm.0/proc.2184/thread.2184/stream.obs"
#define REL_JSON "loom.vm.0/proc.2184/thread.2184/stream.json"

static char *dir;            /* scratch trace directory */
static char stream_path[4096], json_path[4096];

/* Writes `n` bytes to `path`, replacing it. */
static void write_bytes(const char *path, const void *data, size_t n)
{
	FILE *f = fopen(path, "wb");
	REQUIRE(f != NULL);
	CHECK(fwrite(data, 1, n, f) == n);
	fclose(f);
}

/*
 * Reads every event of the scratch trace merged and per stream, decoding
 * fields. Returns the number of events, or -1 when the trace did not open
 * (which must come with a message).
 */
static long read_all(size_t *diags)
{
	weft_trace *t;
	if (weft_trace_open(dir, NULL, &t) < 0) {
		CHECK(weft_last_error()[0] != '\0');
		*diags = 0;
		return -1;
	}
	long n = 0;
	weft_cursor *c;
	if (weft_cursor_create(t, NULL, &c) == 0) {
		const weft_event *ev;
		weft_field f[8];
		while (weft_cursor_next(c, &ev) == 1) {
			weft_event_fields(t, ev, f, 8);
			n++;
		}
		weft_cursor_free(c);
	}
	*diags = weft_trace_diag_count(t);
	weft_trace_free(t);
	return n;
}

/* Every prefix of the stream: a growing number of events, and a
 * diagnostic whenever the cut is not at an event boundary. */
static void test_every_truncation(const unsigned char *orig, size_t size)
{
	long last = 0;
	size_t bad = 0;
	for (size_t len = 0; len <= size; len++) {
		write_bytes(stream_path, orig, len);
		size_t diags;
		long n = read_all(&diags);
		if (n < last || (n == last && len > 8 && diags == 0 && len != size))
			bad++;
		if (n > last)
			last = n;
	}
	CHECK(bad == 0);
	CHECK(last == 404);
}

/* xorshift64: reproducible pseudo-random numbers. */
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

/* Random bytes overwritten in the stream: events or diagnostics. */
static void test_random_corruption(const unsigned char *orig, size_t size)
{
	unsigned char *copy = malloc(size);
	REQUIRE(copy != NULL);
	unsigned silent_losses = 0;
	for (int round = 0; round < 2000; round++) {
		memcpy(copy, orig, size);
		int flips = 1 + (int)(rng() % 4);
		for (int k = 0; k < flips; k++)
			copy[rng() % size] = (unsigned char)rng();
		write_bytes(stream_path, copy, size);
		size_t diags;
		long n = read_all(&diags);
		/* Fewer events than the original must be explained. */
		if (n >= 0 && n < 404 && diags == 0)
			silent_losses++;
	}
	CHECK(silent_losses == 0);
	write_bytes(stream_path, orig, size);
	free(copy);
}

/* Garbage metadata: a diagnostic, and the events are still read. */
static void test_bad_metadata(void)
{
	static const char *const bad[] = {
		"", "{", "[1, 2]", "{\"version\": 3, \"ovni\": 7}",
		"{\"version\": \"x\", \"ovni\": {\"finished\": \"yes\", \"tid\": -5}}",
		"\xff\xfe garbage",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		write_bytes(json_path, bad[i], strlen(bad[i]));
		size_t diags;
		long n = read_all(&diags);
		CHECK(n == 404);
		CHECK(diags > 0);
	}
}

int main(void)
{
	const char *data = getenv("WEFT_TEST_DATA");
	char src[4096], cmd[16384];
	dir = tu_mkdtemp("weft-ovni-robust");
	REQUIRE(dir != NULL);
	snprintf(src, sizeof src, "%s/ovni/v3/nosv-parallel-tasks/ovni",
		 data ? data : "tests/data");
	snprintf(cmd, sizeof cmd, "cp -r '%s'/. '%s' && chmod -R u+w '%s'", src, dir, dir);
	REQUIRE(system(cmd) == 0);
	snprintf(stream_path, sizeof stream_path, "%s/%s", dir, REL_STREAM);
	snprintf(json_path, sizeof json_path, "%s/%s", dir, REL_JSON);
	size_t size;
	unsigned char *orig = (unsigned char *)tu_read_file(stream_path, &size);
	REQUIRE(orig != NULL);

	test_every_truncation(orig, size);
	write_bytes(stream_path, orig, size);
	test_random_corruption(orig, size);
	test_bad_metadata();

	free(orig);
	return tu_finish_dir(dir);
}
