/* SPDX-License-Identifier: MIT */
/*
 * test_mapfile.c - the sliding window over a file (core/mapfile.c): every
 * range it returns holds the file's bytes, whatever the order of the
 * reads (forward, backward, a reader that scans ahead of what it
 * delivers, records larger than the window); the memory it holds goes
 * back to the window's size; a file that shrinks while it is read is an
 * error at the byte where data went missing, never a crash.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/internal.h"
#include "testutil.h"

#define FILE_SIZE (3u << 20)

static unsigned char *content;

/* A file of FILE_SIZE pseudo-random bytes; its path in `path`. */
static void write_test_file(const char *dir, char *path, size_t cap)
{
	snprintf(path, cap, "%s/data.bin", dir);
	content = malloc(FILE_SIZE);
	REQUIRE(content != NULL);
	uint64_t x = 88172645463325252ull;
	for (size_t i = 0; i < FILE_SIZE; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		content[i] = (unsigned char)x;
	}
	FILE *f = fopen(path, "wb");
	REQUIRE(f != NULL);
	REQUIRE(fwrite(content, 1, FILE_SIZE, f) == FILE_SIZE);
	fclose(f);
}

/* [offset, offset + len) through the window equals the file's bytes. */
static int same_range(weft_mapfile *mf, uint64_t offset, uint64_t len)
{
	const unsigned char *p = weft__mapfile_get(mf, offset, len);
	if (p == NULL) {
		fprintf(stderr, "get(%llu, %llu): %s\n", (unsigned long long)offset,
			(unsigned long long)len, weft_last_error());
		return 0;
	}
	return memcmp(p, content + offset, len) == 0;
}

/* Reads in every pattern a reader uses, with several window sizes. */
static void test_reading_patterns(const char *path)
{
	static const uint64_t windows[] = { 4096, 100000, 512u << 10, 2u << 20, 8u << 20 };
	for (size_t w = 0; w < sizeof windows / sizeof windows[0]; w++) {
		weft_mapfile mf;
		REQUIRE(weft__mapfile_open(&mf, path, "data.bin", windows[w]) == 0);
		/* front to back in records of 1..200 bytes */
		uint64_t off = 0, seed = 7;
		int ok = 1;
		while (ok && off < FILE_SIZE) {
			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			uint64_t len = 1 + (seed >> 33) % 200;
			if (len > FILE_SIZE - off)
				len = FILE_SIZE - off;
			ok = same_range(&mf, off, len);
			off += len;
		}
		CHECK(ok);
		/* a scan ahead of a delivery point (the ovni reader's look-back),
		 * with few window moves (it once moved back and forth at each
		 * event: a read of the file per event) */
		uint64_t ahead = windows[w] / 4, moves = 0;
		weft__mapfile_close(&mf);
		REQUIRE(weft__mapfile_open(&mf, path, "data.bin", windows[w]) == 0);
		for (off = 0; ok && off + ahead + 64 <= FILE_SIZE; off += 97) {
			uint64_t was = mf.map_start ^ (mf.map_len << 32);
			ok = same_range(&mf, off + ahead, 64) && same_range(&mf, off, 64);
			moves += (mf.map_start ^ (mf.map_len << 32)) != was;
		}
		CHECK(ok);
		uint64_t step = windows[w] < (256u << 10) ? windows[w] : (256u << 10);
		CHECK(moves <= 4 * FILE_SIZE / step + 10);
		/* random places, some larger than the window */
		for (int i = 0; ok && i < 2000; i++) {
			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			uint64_t at = (seed >> 20) % FILE_SIZE;
			uint64_t len = i % 50 == 0 ? (seed >> 40) % (1u << 20) : (seed >> 40) % 300;
			if (len > FILE_SIZE - at)
				len = FILE_SIZE - at;
			ok = same_range(&mf, at, len);
		}
		CHECK(ok);
		/* a record larger than the window, then the buffer shrinks back */
		CHECK(same_range(&mf, 1000, FILE_SIZE - 2000));
		CHECK(same_range(&mf, 5000, 10));
		CHECK(same_range(&mf, FILE_SIZE - 10, 10));
		CHECK(mf.buffer_cap <= (mf.window < FILE_SIZE ? 2 * mf.window : FILE_SIZE));
		/* past the end: an error, not a read */
		CHECK(weft__mapfile_get(&mf, FILE_SIZE - 4, 8) == NULL);
		CHECK(strstr(weft_last_error(), "expected 8 more bytes, the file has 4") != NULL);
		weft__mapfile_close(&mf);
	}
}

/* A file that shrinks after it was opened: the error names the byte. */
static void test_file_that_shrinks(const char *path)
{
	weft_mapfile mf;
	REQUIRE(weft__mapfile_open(&mf, path, "data.bin", 1u << 20) == 0);
	CHECK(same_range(&mf, 0, 100));
	REQUIRE(truncate(path, 1500000) == 0);
	/* what the window holds is still delivered (the bytes read as they were:
	 * through a mapping, the first page past the new end was a SIGBUS);
	 * past it, the read is short */
	uint64_t off = 100;
	const unsigned char *p;
	int same = 1;
	while (off + 100 <= FILE_SIZE && (p = weft__mapfile_get(&mf, off, 100)) != NULL) {
		same &= memcmp(p, content + off, 100) == 0;
		off += 100;
	}
	CHECK(same);
	CHECK(off + 100 <= FILE_SIZE);
	CHECK(off >= 1500000 - 100);
	char want[200];
	snprintf(want, sizeof want, "data.bin: byte %llu: expected 100 bytes here, but the "
		 "file changed since it was opened: it had %u bytes, it now has 1500000",
		 (unsigned long long)off, FILE_SIZE);
	CHECK_EQ_STR(weft_last_error(), want);
	/* emptied while open: the same, at the first byte not held */
	REQUIRE(truncate(path, 0) == 0);
	CHECK(weft__mapfile_get(&mf, 2500000, 10) == NULL);
	CHECK(strstr(weft_last_error(), "byte 2500000: expected 10 bytes here, but the file "
			"changed since it was opened: it had 3145728 bytes, it now has 0") != NULL);
	weft__mapfile_close(&mf);
}

int main(void)
{
	char *dir = tu_mkdtemp("weft-mapfile");
	char path[4096];
	REQUIRE(dir != NULL);
	write_test_file(dir, path, sizeof path);
	test_reading_patterns(path);
	test_file_that_shrinks(path);
	free(content);
	return tu_finish_dir(dir);
}
