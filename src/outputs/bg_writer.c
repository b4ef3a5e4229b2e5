/* SPDX-License-Identifier: MIT */
/*
 * outputs/bg_writer.c - an output written by a second thread from two
 * swapped buffers (see bg_writer.h).
 */
/* sync_file_range() (Linux) */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/internal.h"
#include "outputs/bg_writer.h"
#include "outputs/outputs.h"

/* Write-behind: the bytes before the current job left in the page cache
 * (the disk catches up there while the thread goes on writing). */
#define WRITE_BEHIND_LAG (16u << 20)

/*
 * Positioned mode: asks the kernel to start writing the job's pages to
 * the disk now (without waiting), so that a final fsync(2) finds most of
 * the file already written instead of writing all of it then. A hint
 * only: where it is not available, the fsync does all the work.
 */
static void start_writeback(const weft__bg_writer *w)
{
#ifdef SYNC_FILE_RANGE_WRITE
	sync_file_range(w->fd, (off_t)w->job_offset, (off_t)w->job_len,
			SYNC_FILE_RANGE_WRITE);
#else
	(void)w;
#endif
}

/*
 * Write-behind: waits until the file up to WRITE_BEHIND_LAG bytes before
 * the current job is on the disk (its writeback was started when it was
 * written), then drops those pages from the page cache. A page reused
 * that way costs much less than a fresh one on some machines (a virtual
 * machine whose freed memory goes back to the host), and the output does
 * not push the input out of the cache. Waiting consumes the file's
 * writeback error (the final fsync would not see it), so a failure here
 * is a write error; only "not supported" turns write-behind off.
 * 0 or the errno.
 */
static int write_behind(weft__bg_writer *w)
{
#ifdef SYNC_FILE_RANGE_WRITE
	const unsigned wait = SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE |
			      SYNC_FILE_RANGE_WAIT_AFTER;
	if (!w->write_behind || w->job_offset < w->behind + WRITE_BEHIND_LAG)
		return 0;
	uint64_t to = w->job_offset - WRITE_BEHIND_LAG;
	if (sync_file_range(w->fd, (off_t)w->behind, (off_t)(to - w->behind), wait) != 0) {
		if (errno != EINVAL && errno != ENOSYS && errno != ESPIPE)
			return errno;
		w->write_behind = 0;
		return 0;
	}
	posix_fadvise(w->fd, (off_t)w->behind, (off_t)(to - w->behind), POSIX_FADV_DONTNEED);
	w->behind = to;
#else
	(void)w;
#endif
	return 0;
}

/*
 * The thread's job: writes the current buffer, at its offset in
 * positioned mode; 0 or the errno.
 */
static int write_job(void *ctx)
{
	weft__bg_writer *w = ctx;
	if (!w->positioned)
		return weft__write_full(w->fd, w->job, w->job_len, WEFT__AT_POSITION, NULL);
	int err = weft__write_full(w->fd, w->job, w->job_len, w->job_offset, NULL);
	if (err == 0)
		start_writeback(w);
	return err == 0 ? write_behind(w) : err;
}

/* An idle writer for fd: no buffers, no thread yet. */
static void writer_init(weft__bg_writer *w, int fd)
{
	memset(w, 0, sizeof *w);
	w->fd = fd;
}

/* The thread, which sleeps until the first submit (inline writes without it). */
static void start_thread(weft__bg_writer *w)
{
	weft__worker_start(&w->worker, write_job, w);
}

/* No buffers yet; the thread sleeps until the first submit. */
void weft__bg_writer_start(weft__bg_writer *w, int fd)
{
	writer_init(w, fd);
	start_thread(w);
}

/*
 * The file position of a regular file without O_APPEND (where pwrite
 * goes where asked), or -1 for other files.
 */
static off_t seekable_file(int fd)
{
	struct stat st;
	int flags = fcntl(fd, F_GETFL);
	if (flags < 0 || (flags & O_APPEND) || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
		return -1;
	return lseek(fd, 0, SEEK_CUR);
}

/* Positioned mode for regular files (see bg_writer.h); 0 for the others. */
int weft__bg_writer_start_positioned(weft__bg_writer *w, int fd, int write_behind)
{
	off_t at = seekable_file(fd);
	if (at < 0)
		return 0;
	writer_init(w, fd);
	w->positioned = 1;
	w->write_behind = write_behind;
	w->behind = (uint64_t)at;
	start_thread(w);
	return 1;
}

/*
 * Positioned mode: the job takes the bytes at the file position, which
 * moves past them, so that later direct writes of the caller follow it.
 * 0 or the errno.
 */
static int claim_range(weft__bg_writer *w, size_t len, uint64_t *offset)
{
	off_t at = lseek(w->fd, 0, SEEK_CUR);
	if (at < 0 || lseek(w->fd, at + (off_t)len, SEEK_SET) < 0)
		return errno;
	*offset = (uint64_t)at;
	return 0;
}

/* The error of a failed write, as a library error. */
static int write_failed(int err)
{
	return weft__error(WEFT_EIO, NULL, WEFT_NO_OFFSET, "cannot write the output: %s",
			   strerror(err));
}

/*
 * Swaps the caller's full buffer with the one the thread has finished
 * writing (waiting for it when it is still busy).
 */
int weft__bg_writer_submit(weft__bg_writer *w, char **buf, size_t *cap, size_t len)
{
	int *error = &w->worker.error;
	if (!w->worker.threaded) {
		/* Inline: write(2) moves the file position as positioned mode would. */
		int err = *error == 0 ? weft__write_full(w->fd, *buf, len, WEFT__AT_POSITION, NULL) : 0;
		if (err != 0)
			*error = err;
		return *error != 0 ? write_failed(*error) : 0;
	}
	uint64_t offset = 0;
	weft__worker_claim(&w->worker);
	if (w->positioned && *error == 0 && len > 0)
		*error = claim_range(w, len, &offset);
	char *done = w->job;
	size_t done_cap = w->job_cap;
	w->job = *buf;
	w->job_cap = *cap;
	w->job_len = len;
	w->job_offset = offset;
	*buf = done;
	*cap = done_cap;
	int err = *error;
	weft__worker_hand_over(&w->worker, err == 0 && len > 0);
	return err != 0 ? write_failed(err) : 0;
}

/* Lets the last write end, stops and joins the thread, frees its buffer. */
int weft__bg_writer_finish(weft__bg_writer *w)
{
	int err = weft__worker_finish(&w->worker);
	free(w->job);
	w->job = NULL;
	return err != 0 ? write_failed(err) : 0;
}

/* ---- A streamed output buffer written from the thread ---------------------------- */

int weft__bg_output_start(weft__bg_output *o, int fd, int write_behind, size_t buffer_size)
{
	memset(o, 0, sizeof *o);
	o->buffer_size = buffer_size;
	o->spare = malloc(buffer_size);
	if (o->spare == NULL)
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET,
				   "cannot allocate an output buffer of %zu bytes", buffer_size);
	o->running = weft__bg_writer_start_positioned(&o->bg, fd, write_behind);
	if (!o->running) {
		free(o->spare);
		o->spare = NULL;
	}
	return 0;
}

/*
 * The thread gives back the buffer it wrote before (none the first time:
 * then the spare one is used), so that two buffers are all there is.
 */
void weft__bg_output_hand_over(weft__bg_output *o, weft__outbuf *ob)
{
	char *buf = ob->buf;
	size_t cap = ob->cap;

	if (weft__bg_writer_submit(&o->bg, &buf, &cap, ob->len) < 0)
		o->failed = 1;
	if (buf == NULL) {
		buf = o->spare;
		cap = ob->cap;
		o->spare = NULL;
	}
	ob->buf = buf;
	ob->cap = cap;
	ob->len = 0;
}

int weft__bg_output_stop(weft__bg_output *o)
{
	if (!o->running)
		return 0;
	o->running = 0;
	return weft__bg_writer_finish(&o->bg);
}

void weft__bg_output_free(weft__bg_output *o)
{
	weft__bg_output_stop(o);
	free(o->spare);
	o->spare = NULL;
}
