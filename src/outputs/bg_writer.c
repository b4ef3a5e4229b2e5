/*
 * outputs/bg_writer.c - an output written by a second thread from two
 * swapped buffers (see bg_writer.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/internal.h"
#include "outputs/bg_writer.h"

/* Writes all of buf (retrying short writes); 0 or the errno. */
static int write_all(int fd, const char *buf, size_t len)
{
	size_t done = 0;
	while (done < len) {
		ssize_t n = write(fd, buf + done, len - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno;
		done += (size_t)n;
	}
	return 0;
}

/* The thread: waits for a job, writes it, says it is done; until stopped. */
static void *writer_main(void *arg)
{
	weft__bg_writer *w = arg;
	pthread_mutex_lock(&w->lock);
	for (;;) {
		while (!w->busy && !w->stop)
			pthread_cond_wait(&w->cond, &w->lock);
		if (!w->busy)
			break;
		pthread_mutex_unlock(&w->lock);
		int err = w->error == 0 ? write_all(w->fd, w->job, w->job_len) : 0;
		pthread_mutex_lock(&w->lock);
		if (err != 0 && w->error == 0)
			w->error = err;
		w->busy = 0;
		pthread_cond_broadcast(&w->cond);
	}
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

/* No buffers yet; the thread sleeps until the first submit. */
void weft__bg_writer_start(weft__bg_writer *w, int fd)
{
	memset(w, 0, sizeof *w);
	w->fd = fd;
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->cond, NULL);
	w->threaded = pthread_create(&w->thread, NULL, writer_main, w) == 0;
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
	if (!w->threaded) {
		int err = w->error == 0 ? write_all(w->fd, *buf, len) : 0;
		if (err != 0)
			w->error = err;
		return w->error != 0 ? write_failed(w->error) : 0;
	}
	pthread_mutex_lock(&w->lock);
	while (w->busy)
		pthread_cond_wait(&w->cond, &w->lock);
	char *done = w->job;
	size_t done_cap = w->job_cap;
	w->job = *buf;
	w->job_cap = *cap;
	w->job_len = len;
	w->busy = w->error == 0 && len > 0;
	*buf = done;
	*cap = done_cap;
	int err = w->error;
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
	return err != 0 ? write_failed(err) : 0;
}

/* Lets the last write end, stops and joins the thread, frees its buffer. */
int weft__bg_writer_finish(weft__bg_writer *w)
{
	if (w->threaded) {
		pthread_mutex_lock(&w->lock);
		while (w->busy)
			pthread_cond_wait(&w->cond, &w->lock);
		w->stop = 1;
		pthread_cond_broadcast(&w->cond);
		pthread_mutex_unlock(&w->lock);
		pthread_join(w->thread, NULL);
	}
	free(w->job);
	w->job = NULL;
	pthread_mutex_destroy(&w->lock);
	pthread_cond_destroy(&w->cond);
	return w->error != 0 ? write_failed(w->error) : 0;
}
