/* SPDX-License-Identifier: MIT */
/*
 * core/mapfile.c - a sliding window over a file.
 *
 * Readers see a file as a pointer range while only a window of it is in
 * memory: the memory of a reader stays bounded by the window, whatever the
 * size of the file. The window is a buffer filled with pread(), never a
 * mapping of the file: a file that shrinks while it is read (a tracer
 * still writing it, a copy being replaced) then gives a short read, which
 * is reported as "the file changed since it was opened" at the byte where
 * it now ends, where a mapping would kill the process with SIGBUS on the
 * first page past the new end (and show zeros up to it). Copying also
 * leaves the bytes in the cache for the parsing, where a fresh mapping
 * costs page-table work and a cache miss per line as it is parsed.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/internal.h"

/* Reads start on this boundary (aligned copies; the kernel's page). */
#define READ_ALIGN 4096u

int weft__mapfile_open(weft_mapfile *mf, const char *path, const char *name,
		       uint64_t window)
{
	memset(mf, 0, sizeof *mf);
	mf->fd = -1;
	mf->name = name;
	mf->window = window ? window : (8u << 20);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return weft__error_errno(name, "cannot open");
	struct stat st;
	if (fstat(fd, &st) < 0) {
		int rc = weft__error_errno(name, "cannot stat");
		close(fd);
		return rc;
	}
	mf->fd = fd;
	mf->size = (uint64_t)st.st_size;
	return 0;
}

/*
 * Bytes read at a time past what a read asks for: small enough that the
 * bytes just copied are still in the CPU's cache when they are parsed
 * (a copy of 8 MiB at once made a front-to-back pass 50% slower than
 * through a mapping; 64 KiB to 1 MiB runs at the mapping's speed).
 */
#define READ_CHUNK (256u << 10)

/*
 * Makes room for `cap` bytes in the buffer, keeping the `keep` bytes at
 * its start. A buffer grown for one large record is given back once the
 * records are small again, so that the memory held returns to the
 * window's size.
 */
static int reserve(weft_mapfile *mf, uint64_t cap, uint64_t at)
{
	if (cap <= mf->buffer_cap && !(mf->buffer_cap > 2 * mf->window && cap <= mf->window))
		return 0;
	if (cap != (size_t)cap)
		return weft__error(WEFT_ENOMEM, mf->name, at,
				   "a read window of %llu bytes does not fit in memory",
				   (unsigned long long)cap);
	unsigned char *b = realloc(mf->buffer, cap);
	if (b == NULL)
		return weft__error(WEFT_ENOMEM, mf->name, at,
				   "out of memory for a read window of %llu bytes",
				   (unsigned long long)cap);
	mf->buffer = b;
	mf->buffer_cap = cap;
	return 0;
}

/*
 * Where the window that must hold [offset, offset + len) starts, when it
 * cannot simply grow at its end. A reader that has once gone back before
 * its window (the ovni reader, which delivers events up to a quarter of
 * the window behind where it scans ahead for unordered regions) gets the
 * window started a quarter of it before `offset` when it moves forward:
 * both places then fit in one window instead of moving it back and forth.
 * Other readers keep nothing behind (no bytes to move).
 */
static uint64_t window_start(const weft_mapfile *mf, uint64_t offset, uint64_t len,
			     uint64_t cap)
{
	uint64_t start = offset - offset % READ_ALIGN;
	if (!mf->went_back || offset < mf->map_start)
		return start;
	uint64_t back = mf->window / 4;
	back -= back % READ_ALIGN;
	uint64_t keep_from = start > back ? start - back : 0;
	return offset + len - keep_from <= cap ? keep_from : start;
}

/*
 * Makes the window hold [offset, offset + len) and, when the file has
 * them, READ_CHUNK bytes more. The window grows at its end while the
 * buffer has room (no byte moves); otherwise it starts again lower in the
 * file (window_start), with the part of the old window it still covers
 * moved to the front of the buffer, and the rest read. A reader that goes
 * back gets a whole window there (what it read ahead is in it again). A
 * short read (the file shrank) leaves a shorter window; weft__mapfile_get
 * then reports it.
 */
static int remap(weft_mapfile *mf, uint64_t offset, uint64_t len)
{
	uint64_t end = mf->map_start + mf->map_len;
	uint64_t cap = mf->window > len ? mf->window : len;
	uint64_t start = mf->map_start, have = mf->map_len;
	int back = mf->map != NULL && offset < start;
	if (back)
		mf->went_back = 1;
	if (mf->map == NULL || offset < start || offset > end ||
	    offset + len - start > cap) {
		start = window_start(mf, offset, len, cap);
		have = 0;
		if (mf->map != NULL && start >= mf->map_start && start < end)
			have = end - start;
	}
	if (cap < offset + len - start)
		cap = offset + len - start;
	uint64_t want = back ? cap : offset + len - start + READ_CHUNK;
	if (want > cap)
		want = cap;
	if (want > mf->size - start)
		want = mf->size - start;
	if (have > want)
		have = want;
	if (have > 0 && start != mf->map_start)
		memmove(mf->buffer, mf->buffer + (start - mf->map_start), have);
	mf->map = NULL;
	mf->map_len = 0;
	/* Room for the whole window (no file is smaller than what it has left). */
	uint64_t room = mf->window < mf->size - start ? mf->window : mf->size - start;
	int rc = reserve(mf, want > room ? want : room, start);
	if (rc < 0)
		return rc;
	int64_t got = weft__read_full(mf->fd, mf->buffer + have, want - have, start + have);
	if (got < 0) {
		errno = (int)-got;
		return weft__error_errno(mf->name, "cannot read");
	}
	if (mf->bytes_read != NULL)
		__atomic_fetch_add(mf->bytes_read, (uint64_t)got, __ATOMIC_RELAXED);
	mf->map = mf->buffer;
	mf->map_start = start;
	mf->map_len = have + (uint64_t)got;
	return 0;
}

/* The error of a read that found the end of the file before its size at open. */
static void report_shrunk(const weft_mapfile *mf, uint64_t offset, uint64_t len)
{
	struct stat st;
	uint64_t now = mf->map_start + mf->map_len;
	if (fstat(mf->fd, &st) == 0 && (uint64_t)st.st_size < now)
		now = (uint64_t)st.st_size;
	weft__error(WEFT_ETRUNCATED, mf->name, offset,
		    "expected %llu bytes here, but the file changed since it was opened: "
		    "it had %llu bytes, it now has %llu", (unsigned long long)len,
		    (unsigned long long)mf->size, (unsigned long long)now);
}

const unsigned char *weft__mapfile_get(weft_mapfile *mf, uint64_t offset,
				       uint64_t len)
{
	if (offset > mf->size || len > mf->size - offset) {
		weft__error(WEFT_ETRUNCATED, mf->name, offset,
			    "expected %llu more bytes, the file has %llu",
			    (unsigned long long)len,
			    (unsigned long long)(offset > mf->size ? 0 : mf->size - offset));
		return NULL;
	}
	if (len == 0)
		return (const unsigned char *)""; /* nothing to read there */
	if (mf->map == NULL || offset < mf->map_start ||
	    offset + len > mf->map_start + mf->map_len) {
		if (remap(mf, offset, len) < 0)
			return NULL;
		if (offset + len > mf->map_start + mf->map_len) {
			report_shrunk(mf, offset, len);
			return NULL;
		}
	}
	return mf->map + (offset - mf->map_start);
}

void weft__mapfile_close(weft_mapfile *mf)
{
	free(mf->buffer);
	mf->buffer = NULL;
	mf->buffer_cap = 0;
	mf->map = NULL;
	mf->map_len = 0;
	if (mf->fd >= 0)
		close(mf->fd);
	mf->fd = -1;
}
