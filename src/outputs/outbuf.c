/* SPDX-License-Identifier: MIT */
/*
 * outputs/outbuf.c - the output buffer of the text writers: bytes gather
 * in one large block that goes out with write(2), so that a dump costs a
 * few system calls per megabyte instead of one stdio call per field; or,
 * for a writer on a thread whose lines another thread puts in order
 * (outputs/keyed_runs.c), a block in memory that grows instead.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/internal.h"
#include "outputs/outputs.h"

#define OUTBUF_MIN_SIZE (64u * 1024u)

/*
 * Sets up an empty buffer of at least OUTBUF_MIN_SIZE bytes, so that any
 * reservation up to WEFT__OUTBUF_MAX_RESERVE fits after a flush.
 */
int weft__outbuf_init(weft__outbuf *ob, int fd, size_t cap)
{
	if (cap < OUTBUF_MIN_SIZE)
		cap = OUTBUF_MIN_SIZE;
	ob->fd = fd;
	ob->len = 0;
	ob->cap = cap;
	ob->error = 0;
	ob->buf = malloc(cap);
	if (ob->buf == NULL)
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET,
				   "cannot allocate an output buffer of %zu bytes", cap);
	return WEFT_OK;
}

/*
 * A buffer in memory (WEFT__OUTBUF_GROW) doubles until it has `room` free
 * bytes. Without memory, what it holds is dropped (the error is kept, as
 * a failed write's) so that the caller still gets the room it asked for.
 */
static int grow(weft__outbuf *ob, size_t room)
{
	/* no buffer (a keyed run's writer whose next chunk never came):
	 * a new one, or the doubling would never end */
	size_t cap = ob->cap > 0 ? ob->cap : OUTBUF_MIN_SIZE;
	while (cap - ob->len < room)
		cap *= 2;
	char *bigger = cap > ob->cap ? realloc(ob->buf, cap) : ob->buf;
	if (bigger == NULL || ob->error != 0) {
		if (ob->error == 0)
			ob->error = ENOMEM;
		ob->len = 0;
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET,
				   "out of memory for the output (%zu bytes)", cap);
	}
	ob->buf = bigger;
	ob->cap = cap;
	return WEFT_OK;
}

/*
 * Writes the whole buffer, retrying short writes and EINTR. After a
 * failure the data is dropped and the first errno is kept: the caller
 * learns about it once, from the final flush.
 */
int weft__outbuf_flush(weft__outbuf *ob)
{
	if (ob->fd == WEFT__OUTBUF_GROW)
		return grow(ob, ob->cap);
	if (ob->error == 0)
		ob->error = weft__write_full(ob->fd, ob->buf, ob->len, WEFT__AT_POSITION, NULL);
	ob->len = 0;
	if (ob->error != 0)
		return weft__error(WEFT_EIO, NULL, WEFT_NO_OFFSET,
				   "cannot write the output: %s", strerror(ob->error));
	return WEFT_OK;
}

/* Releases the memory of the buffer; buffered bytes are lost. */
void weft__outbuf_destroy(weft__outbuf *ob)
{
	free(ob->buf);
	ob->buf = NULL;
	ob->len = ob->cap = 0;
}

/*
 * Out of line part of weft__outbuf_reserve(): empties the buffer. The
 * buffer is never smaller than the largest reservation, so this always
 * leaves enough room.
 */
char *weft__outbuf_make_room(weft__outbuf *ob, size_t n)
{
	if (ob->fd == WEFT__OUTBUF_GROW)
		grow(ob, n);
	else
		weft__outbuf_flush(ob);
	return ob->buf + ob->len;
}

/* Copies data of any length, one buffer-full at a time. */
void weft__outbuf_put(weft__outbuf *ob, const void *data, size_t n)
{
	const char *src = data;

	while (n > 0) {
		size_t room = ob->cap - ob->len;
		if (room == 0) {
			weft__outbuf_flush(ob);
			room = ob->cap - ob->len;
		}
		size_t chunk = n < room ? n : room;
		memcpy(ob->buf + ob->len, src, chunk);
		ob->len += chunk;
		src += chunk;
		n -= chunk;
	}
}

/* Convenience for constant strings. */
void weft__outbuf_puts(weft__outbuf *ob, const char *s)
{
	weft__outbuf_put(ob, s, strlen(s));
}

/* A large block goes out without a copy: one write(2) after the buffer's. */
void weft__outbuf_put_block(weft__outbuf *ob, const void *data, size_t n)
{
	if (n < ob->cap / 2 || ob->fd == WEFT__OUTBUF_GROW) {
		weft__outbuf_put(ob, data, n);
		return;
	}
	if (ob->len > 0 && ob->error == 0)
		ob->error = weft__write_full(ob->fd, ob->buf, ob->len, WEFT__AT_POSITION, NULL);
	ob->len = 0;
	if (ob->error == 0)
		ob->error = weft__write_full(ob->fd, data, n, WEFT__AT_POSITION, NULL);
}
