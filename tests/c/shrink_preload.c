/* SPDX-License-Identifier: MIT */
/*
 * shrink_preload.c - fault injection for the tests: a library preloaded
 * into `weft` (LD_PRELOAD) that truncates a file while weft reads it, at
 * a chosen point, so that "a file that shrinks while it is read" is a
 * deterministic test rather than a race.
 *
 * Environment:
 *   WEFT_SHRINK_FILE  the file (absolute path, as /proc/self/fd shows it)
 *   WEFT_SHRINK_AT    a byte offset T of that file
 *   WEFT_SHRINK_PASS  K (default 1): the K-th read that crosses T (a read
 *                     at T or past it on a descriptor whose last read was
 *                     before T: one per pass over the file)
 *   WEFT_SHRINK_TO    the size it is truncated to, just before that read
 *
 * Only pread() is watched: weft's windows over trace files (and Pallas's
 * reads) all go through it.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#define MAX_FD 4096

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long long last_offset[MAX_FD]; /* + 1; 0 = no read yet */
static int crossings, done;

/* 1 when `fd` is the watched file. */
static int is_target(int fd, const char *target)
{
	char link[64], path[PATH_MAX];
	snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
	ssize_t n = readlink(link, path, sizeof path - 1);
	if (n < 0)
		return 0;
	path[n] = '\0';
	return strcmp(path, target) == 0;
}

/* Truncates the file when this read is the chosen crossing of T. */
static void maybe_shrink(int fd, off_t offset)
{
	const char *target = getenv("WEFT_SHRINK_FILE");
	const char *at_text = getenv("WEFT_SHRINK_AT");
	if (target == NULL || at_text == NULL || fd < 0 || fd >= MAX_FD)
		return;
	long long at = atoll(at_text);
	const char *pass_text = getenv("WEFT_SHRINK_PASS");
	int pass = pass_text != NULL ? atoi(pass_text) : 1;
	pthread_mutex_lock(&lock);
	if (!done && is_target(fd, target)) {
		long long before = last_offset[fd] - 1;
		last_offset[fd] = (long long)offset + 1;
		if (offset >= at && before < at && ++crossings == pass) {
			const char *to = getenv("WEFT_SHRINK_TO");
			if (truncate(target, to != NULL ? atoll(to) : 0) == 0)
				done = 1;
		}
	}
	pthread_mutex_unlock(&lock);
}

typedef ssize_t (*pread_fn)(int, void *, size_t, off_t);

/* The watched read: the shrink, if it is time, then libc's `name`. */
static ssize_t watched_pread(pread_fn *real, const char *name, int fd, void *buf,
			     size_t n, off_t offset)
{
	if (*real == NULL)
		*real = (pread_fn)dlsym(RTLD_NEXT, name);
	maybe_shrink(fd, offset);
	return (*real)(fd, buf, n, offset);
}

ssize_t pread(int fd, void *buf, size_t n, off_t offset)
{
	static pread_fn real;
	return watched_pread(&real, "pread", fd, buf, n, offset);
}

ssize_t pread64(int fd, void *buf, size_t n, off_t offset)
{
	static pread_fn real;
	return watched_pread(&real, "pread64", fd, buf, n, offset);
}
