/* SPDX-License-Identifier: MIT */
/*
 * core/fileio.c - whole reads and writes: read(2) and write(2) may stop
 * short or be interrupted; every reader and writer of weft goes through
 * these two loops rather than its own.
 */
#include <errno.h>
#include <unistd.h>

#include "core/internal.h"

int weft__write_full(int fd, const void *buf, size_t len, uint64_t offset, size_t *done)
{
	const char *p = buf;
	size_t off = 0;
	int err = 0;

	while (off < len) {
		ssize_t n = offset == WEFT__AT_POSITION
			    ? write(fd, p + off, len - off)
			    : pwrite(fd, p + off, len - off, (off_t)(offset + off));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			err = n < 0 ? errno : EIO; /* a write of nothing would loop */
			break;
		}
		off += (size_t)n;
	}
	if (done != NULL)
		*done = off;
	return err;
}

int64_t weft__read_full(int fd, void *buf, size_t len, uint64_t offset)
{
	char *p = buf;
	size_t got = 0;

	while (got < len) {
		ssize_t n = pread(fd, p + got, len - got, (off_t)(offset + got));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -(int64_t)errno;
		if (n == 0)
			break;
		got += (size_t)n;
	}
	return (int64_t)got;
}
