/*
 * core/mapfile.c - a sliding window of mapped memory over a file.
 *
 * Readers see a file as a pointer range, without copying, while only a
 * window of it is mapped: the resident memory of a reader stays bounded by
 * the window, whatever the size of the file.
 */
#include <errno.h>
#include <fcntl.h>
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

/* Drops the current mapping, if any. */
static void unmap(weft_mapfile *mf)
{
	if (mf->map != NULL)
		munmap(mf->map, mf->map_len);
	mf->map = NULL;
	mf->map_len = 0;
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
	}
	return mf->map + (offset - mf->map_start);
}

void weft__mapfile_close(weft_mapfile *mf)
{
	unmap(mf);
	if (mf->fd >= 0)
		close(mf->fd);
	mf->fd = -1;
}
