/* SPDX-License-Identifier: MIT */
/*
 * util.c - error reporting, version parsing and file helpers of the
 * drop-in libovni.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "libovni_priv.h"

/*
 * Prints one diagnostic line. A format ending in ':' gets the errno text
 * appended, so I/O failures say why they failed. The line is built first
 * and written with one call so lines of concurrent threads do not mix.
 */
static void
ov_vreport(const char *level, const char *func, const char *fmt, va_list ap)
{
	int saved = errno;
	char msg[1024];
	size_t len = strlen(fmt);
	int n = snprintf(msg, sizeof(msg), "ovni: %s: %s: ", level, func);

	if (n < 0 || (size_t) n >= sizeof(msg))
		n = 0;
	vsnprintf(msg + n, sizeof(msg) - (size_t) n, fmt, ap);
	if (len > 0 && fmt[len - 1] == ':') {
		size_t used = strlen(msg);
		snprintf(msg + used, sizeof(msg) - used, " %s", strerror(saved));
	}
	fprintf(stderr, "%s\n", msg);
	errno = saved;
}

/* Misuse and I/O failures end the program, as in libovni: a trace with
 * silently missing data is worse than no trace. */
void
ov_die(const char *func, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	ov_vreport("fatal", func, fmt, ap);
	va_end(ap);
	abort();
}

/* Problems that leave the trace usable (e.g. a directory not removed). */
void
ov_warn(const char *func, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	ov_vreport("warning", func, fmt, ap);
	va_end(ap);
}

/* Reads one decimal number of a version; -1 when there is none. */
static int
ov_version_number(const char **s)
{
	long v = 0;
	const char *p = *s;

	if (*p < '0' || *p > '9')
		return -1;
	while (*p >= '0' && *p <= '9') {
		v = v * 10 + (*p - '0');
		if (v > 1000000)
			return -1;
		p++;
	}
	*s = p;
	return (int) v;
}

/* "1.14.0" -> {1, 14, 0}; a semver pre-release or build suffix
 * ("-rc1", "+abc") is accepted and ignored. */
int
ov_version_parse(const char *s, int out[3])
{
	const char *p = s;

	for (int i = 0; i < 3; i++) {
		out[i] = ov_version_number(&p);
		if (out[i] < 0)
			return -1;
		if (i < 2 && *p++ != '.')
			return -1;
	}
	return (*p == '\0' || *p == '-' || *p == '+') ? 0 : -1;
}

/* mkdir -p: creates each missing component of path. */
int
ov_mkpath(const char *path, mode_t mode)
{
	char tmp[PATH_MAX];
	size_t len = strlen(path);

	if (len == 0 || len >= sizeof(tmp)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(tmp, path, len + 1);
	for (char *p = tmp + 1; ; p++) {
		if (*p != '/' && *p != '\0')
			continue;
		char c = *p;
		*p = '\0';
		if (mkdir(tmp, mode) != 0 && errno != EEXIST)
			return -1;
		*p = c;
		if (c == '\0')
			break;
	}
	return 0;
}

/* Loops over write() until every byte is written (partial writes and
 * EINTR happen with large buffers and signals). */
void
ov_write_all(int fd, const void *p, size_t n, const char *what)
{
	const uint8_t *b = p;

	while (n > 0) {
		ssize_t w = write(fd, b, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			ov_die("write", "cannot write %s:", what);
		}
		b += w;
		n -= (size_t) w;
	}
}

/* Same for two pieces (a jumbo header and its data) in one system call
 * when possible, so the event is never half-written by our own doing. */
void
ov_write2(int fd, const void *a, size_t na, const void *b, size_t nb,
	  const char *what)
{
	struct iovec iov[2] = {
		{ .iov_base = (void *) a, .iov_len = na },
		{ .iov_base = (void *) b, .iov_len = nb },
	};

	while (iov[0].iov_len + iov[1].iov_len > 0) {
		int first = iov[0].iov_len == 0;
		ssize_t w = writev(fd, iov + first, 2 - first);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			ov_die("write", "cannot write %s:", what);
		}
		size_t done = (size_t) w;
		for (int i = 0; i < 2 && done > 0; i++) {
			size_t k = done < iov[i].iov_len ? done : iov[i].iov_len;
			iov[i].iov_base = (uint8_t *) iov[i].iov_base + k;
			iov[i].iov_len -= k;
			done -= k;
		}
	}
}

/* Copies file src to dst, for moves across file systems. */
static int
ov_copy_file(const char *src, const char *dst)
{
	char buf[65536];
	int in = open(src, O_RDONLY);
	if (in < 0)
		return -1;
	int out = open(dst, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (out < 0) {
		close(in);
		return -1;
	}
	ssize_t r;
	int rc = 0;
	while ((r = read(in, buf, sizeof(buf))) > 0) {
		if (write(out, buf, (size_t) r) != r) {
			rc = -1;
			break;
		}
	}
	if (r < 0)
		rc = -1;
	close(in);
	if (close(out) != 0)
		rc = -1;
	return rc == 0 ? unlink(src) : -1;
}

/* Moves one file: rename when both are on the same file system. */
static int
ov_move_file(const char *src, const char *dst)
{
	if (rename(src, dst) == 0)
		return 0;
	if (errno != EXDEV)
		return -1;
	return ov_copy_file(src, dst);
}

/*
 * Moves the files of an OVNI_TMPDIR thread directory into the trace
 * directory. stream.obs goes before stream.json, so that a stream.json
 * saying "finished" is never in place before its data.
 */
void
ov_move_dir(const char *src, const char *dst)
{
	static const char *const names[] = { "stream.obs", "stream.json" };
	char a[PATH_MAX], b[PATH_MAX];

	for (size_t i = 0; i < 2; i++) {
		if (snprintf(a, sizeof(a), "%s/%s", src, names[i]) >= (int) sizeof(a)
		    || snprintf(b, sizeof(b), "%s/%s", dst, names[i]) >= (int) sizeof(b)) {
			ov_warn("ovni_thread_free", "path too long: %s", src);
			return;
		}
		if (ov_move_file(a, b) != 0)
			ov_warn("ovni_thread_free", "cannot move %s to %s:", a, b);
	}
	if (rmdir(src) != 0 && errno != ENOENT && errno != ENOTEMPTY)
		ov_warn("ovni_thread_free", "cannot remove %s:", src);
}
