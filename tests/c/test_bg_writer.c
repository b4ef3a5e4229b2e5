/* SPDX-License-Identifier: MIT */
/*
 * test_bg_writer.c - the output writer thread (outputs/bg_writer.h):
 *   - positioned mode on a regular file: buffers handed over in turn, with
 *     large records written straight to the file between them, land in
 *     order (with and without write-behind); the same bytes as plain mode;
 *   - positioned mode refused for a pipe and for an append-mode file;
 *   - a write that fails (a file size limit) is reported by the next
 *     submit or by finish, never lost.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "core/internal.h"
#include "outputs/bg_writer.h"
#include "testutil.h"

#define BUFFER 4096u

/* Byte i of the expected output: a pattern that shows any misplaced block. */
static char pattern(size_t i)
{
	return (char)('a' + (i * 7 + i / 4093) % 26);
}

/*
 * Writes `total` pattern bytes through w: buffers of up to BUFFER bytes,
 * and, with `direct`, every 7th piece a "large record" of 3 * BUFFER
 * written to fd directly. Returns the first error (0 when none).
 */
static int produce(weft__bg_writer *w, int fd, size_t total, int direct)
{
	char *buf = malloc(BUFFER);
	size_t cap = BUFFER, at = 0;
	int rc = 0, piece = 0;

	REQUIRE(buf != NULL);
	while (at < total && rc == 0) {
		int big_one = direct && piece++ % 7 == 6;
		size_t n = big_one ? 3 * BUFFER : 1 + (size_t)(at * 31 % BUFFER);
		if (n > total - at)
			n = total - at;
		if (big_one) {
			char *big = malloc(n);
			REQUIRE(big != NULL);
			for (size_t i = 0; i < n; i++)
				big[i] = pattern(at + i);
			/* what a writer does for a record larger than its buffer */
			if (write(fd, big, n) != (ssize_t)n)
				rc = WEFT_EIO;
			free(big);
		} else {
			if (buf == NULL) {
				REQUIRE((buf = malloc(BUFFER)) != NULL);
				cap = BUFFER;
			}
			for (size_t i = 0; i < n; i++)
				buf[i] = pattern(at + i);
			rc = weft__bg_writer_submit(w, &buf, &cap, n);
		}
		at += n;
	}
	free(buf);
	return rc;
}

/* The file holds exactly `total` pattern bytes. */
static void check_file(const char *path, size_t total)
{
	size_t size = 0;
	char *text = tu_read_file(path, &size);
	REQUIRE(text != NULL);
	CHECK_EQ_U64(size, total);
	size_t bad = 0;
	for (size_t i = 0; i < size && i < total; i++)
		bad += text[i] != pattern(i);
	CHECK_EQ_U64(bad, 0);
	free(text);
}

static void test_positioned(const char *dir)
{
	static const size_t totals[] = { 0, 1, BUFFER * 3, 5u << 20 };
	char path[4200];

	for (int behind = 0; behind < 2; behind++) {
		for (size_t k = 0; k < sizeof totals / sizeof totals[0]; k++) {
			snprintf(path, sizeof path, "%s/positioned-%d-%zu", dir, behind, k);
			int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
			REQUIRE(fd >= 0);
			weft__bg_writer w;
			CHECK_EQ_I64(weft__bg_writer_start_positioned(&w, fd, behind), 1);
			CHECK_EQ_I64(produce(&w, fd, totals[k], 1), 0);
			CHECK_EQ_I64(weft__bg_writer_finish(&w), 0);
			close(fd);
			check_file(path, totals[k]);
		}
	}
	/* plain mode writes the same bytes (no direct writes: not its use) */
	snprintf(path, sizeof path, "%s/plain", dir);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	REQUIRE(fd >= 0);
	weft__bg_writer w;
	weft__bg_writer_start(&w, fd);
	char *buf = NULL;
	size_t cap = 0, at = 0;
	while (at < (1u << 20)) {
		if (buf == NULL)
			REQUIRE((buf = malloc(cap = BUFFER)) != NULL);
		for (size_t i = 0; i < BUFFER; i++)
			buf[i] = pattern(at + i);
		CHECK_EQ_I64(weft__bg_writer_submit(&w, &buf, &cap, BUFFER), 0);
		at += BUFFER;
	}
	free(buf);
	CHECK_EQ_I64(weft__bg_writer_finish(&w), 0);
	close(fd);
	check_file(path, 1u << 20);
}

/* Pipes and append-mode files cannot take positioned writes. */
static void test_refused(const char *dir)
{
	int p[2];
	weft__bg_writer w;
	char path[4200];

	REQUIRE(pipe(p) == 0);
	CHECK_EQ_I64(weft__bg_writer_start_positioned(&w, p[1], 0), 0);
	close(p[0]);
	close(p[1]);
	snprintf(path, sizeof path, "%s/append", dir);
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0644);
	REQUIRE(fd >= 0);
	CHECK_EQ_I64(weft__bg_writer_start_positioned(&w, fd, 0), 0);
	close(fd);
}

/* A file size limit: the failed write comes back as WEFT_EIO. */
static void test_failure(const char *dir)
{
	struct rlimit old, small = { 64u << 10, 64u << 10 };
	char path[4200];

	snprintf(path, sizeof path, "%s/full", dir);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	REQUIRE(fd >= 0);
	REQUIRE(getrlimit(RLIMIT_FSIZE, &old) == 0);
	small.rlim_max = old.rlim_max;
	signal(SIGXFSZ, SIG_IGN);
	weft__bg_writer w;
	CHECK_EQ_I64(weft__bg_writer_start_positioned(&w, fd, 0), 1);
	REQUIRE(setrlimit(RLIMIT_FSIZE, &small) == 0);
	int rc = produce(&w, fd, 1u << 20, 0);
	int frc = weft__bg_writer_finish(&w);
	REQUIRE(setrlimit(RLIMIT_FSIZE, &old) == 0);
	CHECK(rc == WEFT_EIO || frc == WEFT_EIO);
	CHECK_EQ_I64(frc, WEFT_EIO);
	CHECK(strstr(weft_last_error(), "cannot write") != NULL);
	close(fd);
}

int main(void)
{
	char *dir = tu_mkdtemp("bg-writer");
	REQUIRE(dir != NULL);
	test_positioned(dir);
	test_refused(dir);
	test_failure(dir);
	return tu_finish_dir(dir);
}
