/*
 * core/mapfile.c - a sliding window of mapped memory over a file.
 *
 * Readers see a file as a pointer range, without copying, while only a
 * window of it is mapped: the resident memory of a reader stays bounded by
 * the window, whatever the size of the file. In copy mode the window is a
 * buffer filled with pread() instead (for passes front to back).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/internal.h"

static uint64_t page_size(void)
{
	static uint64_t size;
	if (size == 0) {
		long p = sysconf(_SC_PAGESIZE);
		size = p > 0 ? (uint64_t)p : 4096;
	}
	return size;
}

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

int weft__mapfile_open_copy(weft_mapfile *mf, const char *path, const char *name,
			    uint64_t window)
{
	int rc = weft__mapfile_open(mf, path, name, window);
	mf->copy = 1;
	return rc;
}

/*
 * Largest window copied in copy mode: a bigger record (a length field
 * may claim gigabytes) is mapped instead, so that nothing is allocated for
 * bytes that may never be read.
 */
#define COPY_MAX (16ull << 20)

/* Drops the current mapping, if any (a copy buffer is kept for reuse). */
static void unmap(weft_mapfile *mf)
{
	if (mf->map != NULL && mf->map != mf->buffer)
		munmap(mf->map, mf->map_len);
	mf->map = NULL;
	mf->map_len = 0;
}

/*
 * Copy mode of remap(): reads [start, start + want) into the buffer,
 * grown when a record is larger than the window. A short read (the file
 * shrank) leaves a shorter window; the caller's bounds check reports it.
 */
static int refill(weft_mapfile *mf, uint64_t start, uint64_t want)
{
	if (want > mf->buffer_cap) {
		unsigned char *b = realloc(mf->buffer, want);
		if (b == NULL)
			return weft__error(WEFT_ENOMEM, mf->name, start,
					   "out of memory for a read window of %llu bytes",
					   (unsigned long long)want);
		mf->buffer = b;
		mf->buffer_cap = want;
	}
	int64_t got = weft__read_full(mf->fd, mf->buffer, want, start);
	if (got < 0) {
		errno = (int)-got;
		return weft__error_errno(mf->name, "cannot read");
	}
	mf->map = mf->buffer;
	mf->map_start = start;
	mf->map_len = (uint64_t)got;
	return 0;
}

/*
 * Maps a new window that starts at the page holding `offset` and covers at
 * least `len` bytes (more, up to the window size, for the reads to come),
 * clipped to the end of the file so that no page past it is ever touched.
 */
static int remap(weft_mapfile *mf, uint64_t offset, uint64_t len)
{
	uint64_t ps = page_size();
	uint64_t start = offset - offset % ps;
	uint64_t want = offset - start + len;
	if (want < mf->window)
		want = mf->window;
	if (want > mf->size - start)
		want = mf->size - start;
	unmap(mf);
	if (mf->copy && want <= COPY_MAX)
		return refill(mf, start, want);
	void *p = mmap(NULL, want, PROT_READ, MAP_PRIVATE | MAP_POPULATE, mf->fd,
		       (off_t)start);
	if (p == MAP_FAILED)
		return weft__error_errno(mf->name, "cannot map");
	madvise(p, want, MADV_SEQUENTIAL);
	mf->map = p;
	mf->map_start = start;
	mf->map_len = want;
	return 0;
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
			/* copy mode: the file is shorter than when it was opened */
			weft__error(WEFT_ETRUNCATED, mf->name, offset,
				    "expected %llu bytes here, the file ends at byte %llu "
				    "(it shrank since it was opened)", (unsigned long long)len,
				    (unsigned long long)(mf->map_start + mf->map_len));
			return NULL;
		}
	}
	return mf->map + (offset - mf->map_start);
}

void weft__mapfile_close(weft_mapfile *mf)
{
	unmap(mf);
	free(mf->buffer);
	mf->buffer = NULL;
	mf->buffer_cap = 0;
	if (mf->fd >= 0)
		close(mf->fd);
	mf->fd = -1;
}
