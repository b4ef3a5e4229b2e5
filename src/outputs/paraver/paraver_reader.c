/* SPDX-License-Identifier: MIT */
/*
 * outputs/paraver/paraver_reader.c - reading the written .prv body back,
 * line by line, through a buffer (the rebuild and the splice of the direct
 * path's end read it; times are found by a search on record lines).
 */
#include <stdlib.h>
#include <string.h>

#include "outputs/paraver/paraver_internal.h"

/* ---- Reading the body back ------------------------------------------------------------------------ */

/* A reader of [from, end) of fd. 0 or WEFT_ENOMEM. */
int weft__pv_reader_open(line_reader *lr, int fd, uint64_t from, uint64_t end)
{
	memset(lr, 0, sizeof *lr);
	lr->fd = fd;
	lr->at = from;
	lr->end = end;
	lr->cap = COPY_BUFFER;
	lr->buf = malloc(lr->cap);
	return lr->buf != NULL ? 0 : weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET,
						 "paraver: out of memory (merge)");
}

/* Keeps the unread bytes and reads more; the bytes now unread (0 at the end). */
size_t weft__pv_reader_fill(line_reader *lr)
{
	memmove(lr->buf, lr->buf + lr->pos, lr->len - lr->pos);
	lr->len -= lr->pos;
	lr->pos = 0;
	size_t want = lr->cap - lr->len;
	if (lr->end - lr->at < want)
		want = (size_t)(lr->end - lr->at);
	if (want > 0) {
		int64_t n = weft__pv_pread_at(lr->fd, lr->buf + lr->len, want, lr->at);
		if (n < 0)
			lr->error = (int)n;
		else {
			lr->len += (size_t)n;
			lr->at += (uint64_t)n;
		}
	}
	return lr->len;
}

/* The next whole line (with its '\n') in *line, *n bytes; 0 at the end. */
int weft__pv_reader_line(line_reader *lr, const char **line, size_t *n)
{
	char *nl = memchr(lr->buf + lr->pos, '\n', lr->len - lr->pos);

	if (nl == NULL && weft__pv_reader_fill(lr) > 0)
		nl = memchr(lr->buf, '\n', lr->len);
	if (nl == NULL)
		return 0; /* the body ends with a '\n': a rest is damage, ignored */
	*line = lr->buf + lr->pos;
	*n = (size_t)(nl + 1 - *line);
	lr->pos += *n;
	return 1;
}

/* The time of a record line (its sixth field). 0, or -1 when it has none. */
int weft__pv_line_time(const char *s, const char *end, uint64_t *t)
{
	int colons = 0;

	while (s < end && colons < 5)
		colons += *s++ == ':';
	if (colons < 5 || s >= end || *s < '0' || *s > '9')
		return -1;
	uint64_t v = 0;
	while (s < end && *s >= '0' && *s <= '9')
		v = v * 10 + (uint64_t)(*s++ - '0');
	*t = v;
	return 0;
}

/* The first line of [b, last) (whole lines) with a time above t, or last. */
static const char *first_after(const char *b, const char *last, uint64_t t)
{
	uint64_t lt;

	while (b < last) {
		const char *nl = memchr(b, '\n', (size_t)(last - b));
		if (weft__pv_line_time(b, nl, &lt) == 0 && lt > t)
			return b;
		b = nl + 1;
	}
	return last;
}

/*
 * Copies to the output the lines whose time is at most t (relative),
 * whole buffers at once while their last line is: they are sorted.
 */
void weft__pv_reader_copy_until(line_reader *lr, uint64_t t, weft__outbuf *ob)
{
	uint64_t lt;

	for (;;) {
		if (lr->pos == lr->len && weft__pv_reader_fill(lr) == 0)
			return;
		const char *b = lr->buf + lr->pos, *last = lr->buf + lr->len;
		while (last > b && last[-1] != '\n')
			last--; /* the end of the last whole line */
		if (last == b) {
			size_t unread = lr->len - lr->pos;
			if (weft__pv_reader_fill(lr) == unread)
				return; /* a rest without '\n': weft__pv_reader_copy_rest */
			continue;
		}
		const char *start = last - 1;
		while (start > b && start[-1] != '\n')
			start--;
		const char *stop = weft__pv_line_time(start, last, &lt) == 0 && lt > t
					   ? first_after(b, last, t) : last;
		weft__outbuf_put(ob, b, (size_t)(stop - b));
		lr->pos += (size_t)(stop - b);
		if (stop < last)
			return;
	}
}

/* Copies what is left to read. */
void weft__pv_reader_copy_rest(line_reader *lr, weft__outbuf *ob)
{
	while (lr->pos < lr->len || weft__pv_reader_fill(lr) > 0) {
		weft__outbuf_put(ob, lr->buf + lr->pos, lr->len - lr->pos);
		lr->pos = lr->len;
	}
}

/* Frees the reader's buffer. */
void weft__pv_reader_close(line_reader *lr)
{
	free(lr->buf);
	lr->buf = NULL;
}
