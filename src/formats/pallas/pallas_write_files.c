/* SPDX-License-Identifier: MIT */
/*
 * formats/pallas/pallas_write_files.c - the files of the Pallas writer:
 * paths, directories, and output files written as `<file>.tmp` through a
 * buffer, then renamed when complete (an interrupted writer leaves no
 * file that looks whole).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "formats/pallas/pallas_writer_internal.h"

#define OUT_BUFFER (64u * 1024u)       /* buffer of each output file */

/* ---- Paths ---------------------------------------------------------------------------- */

char *weft__pw_path_join(const char *a, const char *fmt, ...)
{
	char tail[256];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(tail, sizeof tail, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof tail)
		return NULL;
	size_t len = strlen(a) + 1 + (size_t)n + 1;
	char *p = malloc(len);
	if (p != NULL)
		snprintf(p, len, "%s/%s", a, tail);
	return p;
}

/* mkdir -p; sets *created when the last component is new. */
int weft__pw_make_dirs(const char *dir, int *created)
{
	char *p = strdup(dir);
	if (p == NULL)
		return weft__error(WEFT_ENOMEM, dir, WEFT_NO_OFFSET, "out of memory");
	if (created != NULL)
		*created = 0;
	for (char *s = p + 1;; s++) {
		int last = *s == '\0';
		if (*s != '/' && !last)
			continue;
		char keep = *s;
		*s = '\0';
		if (mkdir(p, 0777) == 0) {
			if (last && created != NULL)
				*created = 1;
		} else if (errno != EEXIST) {
			int rc = weft__error_errno(p, "cannot create the directory");
			free(p);
			return rc;
		}
		if (last)
			break;
		*s = keep;
	}
	free(p);
	struct stat st;
	if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
		return weft__error(WEFT_EIO, dir, WEFT_NO_OFFSET, "not a directory");
	return 0;
}

/* Refuses to replace an existing `path` unless asked to. */
int weft__pw_check_new(const char *path, int replace)
{
	if (!replace && access(path, F_OK) == 0)
		return weft__error(WEFT_EEXIST, path, WEFT_NO_OFFSET,
				   "exists (set the `replace` option to overwrite it)");
	return 0;
}

/* ---- Output files (written as <path>.tmp, renamed when complete) -------------------------------- */

/* Creates `<path>.tmp` for writing. */
int weft__pw_out_open(pw_out *o, const char *path)
{
	memset(o, 0, sizeof *o);
	o->fd = -1;
	size_t n = strlen(path) + sizeof ".tmp";
	o->path = strdup(path);
	o->tmp = malloc(n);
	o->buf = malloc(OUT_BUFFER);
	if (o->path == NULL || o->tmp == NULL || o->buf == NULL)
		return o->error = weft__error(WEFT_ENOMEM, path, WEFT_NO_OFFSET, "out of memory");
	snprintf(o->tmp, n, "%s.tmp", path);
	o->fd = open(o->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
	if (o->fd < 0)
		return o->error = weft__error_errno(o->tmp, "cannot create");
	return 0;
}

/* Writes all of `len` bytes (short writes and EINTR retried). */
int weft__pw_write_all(int fd, const uint8_t *p, size_t len, const char *name, uint64_t at)
{
	size_t done;
	int err = weft__write_full(fd, p, len, WEFT__AT_POSITION, &done);

	return err == 0 ? 0 : weft__error(WEFT_EIO, name, at + done, "cannot write %zu bytes: %s",
					  len - done, strerror(err));
}

/* Writes what the buffer holds. */
static int out_flush(pw_out *o)
{
	if (o->error == 0 && o->len > 0)
		o->error = weft__pw_write_all(o->fd, o->buf, o->len, o->tmp, o->offset - o->len);
	o->len = 0;
	return o->error;
}

/* Appends bytes (a failure is kept and reported at out_finish). */
void weft__pw_out_bytes(pw_out *o, const void *p, size_t n)
{
	const uint8_t *b = p;
	while (n > 0 && o->error == 0) {
		if (o->len == OUT_BUFFER && out_flush(o) < 0)
			return;
		size_t k = OUT_BUFFER - o->len < n ? OUT_BUFFER - o->len : n;
		memcpy(o->buf + o->len, b, k);
		o->len += k, o->offset += k, b += k, n -= k;
	}
}

/* Releases an output, removing its .tmp (an abandoned or failed file). */
void weft__pw_out_abort(pw_out *o)
{
	if (o->fd >= 0) {
		close(o->fd);
		unlink(o->tmp);
	}
	free(o->path), free(o->tmp), free(o->buf);
	memset(o, 0, sizeof *o);
	o->fd = -1;
}

/* Flushes, optionally fsyncs, and closes; the file stays as .tmp. */
static int out_close(pw_out *o, int sync)
{
	out_flush(o);
	if (o->error == 0 && sync && fsync(o->fd) != 0)
		o->error = weft__error_errno(o->tmp, "cannot fsync");
	if (close(o->fd) != 0 && o->error == 0)
		o->error = weft__error_errno(o->tmp, "cannot close");
	o->fd = -1;
	return o->error;
}

/* Renames the closed .tmp to its final name. */
static int out_rename(pw_out *o)
{
	if (rename(o->tmp, o->path) != 0)
		return o->error = weft__error_errno(o->path, "cannot rename the .tmp file to");
	return 0;
}

/* Completes a file: close, rename; on failure the .tmp is removed. */
int weft__pw_out_finish(pw_out *o, int sync)
{
	int rc = out_close(o, sync);
	if (rc == 0)
		rc = out_rename(o);
	if (rc < 0)
		unlink(o->tmp);
	free(o->path), free(o->tmp), free(o->buf);
	memset(o, 0, sizeof *o);
	o->fd = -1;
	return rc;
}
