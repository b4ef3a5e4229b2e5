/*
 * outputs/bg_writer.h - writing an output from a second thread: the
 * producer fills one buffer while the writer thread write(2)s the other,
 * so that formatting (user time) and the kernel's copy of the bytes into
 * the page cache (system time, as long as the formatting on some
 * machines) overlap. Two buffers, swapped: memory is two buffers' worth.
 * Internal to libweft (weft__ prefix).
 */
#ifndef WEFT_OUTPUTS_BG_WRITER_H
#define WEFT_OUTPUTS_BG_WRITER_H

#include <pthread.h>
#include <stddef.h>

typedef struct weft__bg_writer {
	int fd;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	char *job;          /* the buffer the thread writes (or has written) */
	size_t job_len, job_cap;
	int busy;           /* the thread has a job */
	int stop;
	int error;          /* errno of the first failed write */
	int threaded;       /* 0: the thread could not start, writes are inline */
} weft__bg_writer;

/* Starts the writer thread for fd (inline writes when it cannot start). */
void weft__bg_writer_start(weft__bg_writer *w, int fd);

/*
 * Hands the buffer *buf (len bytes of *cap) to the writer and gives back
 * in *buf / *cap an empty buffer to fill (the one written before, or
 * NULL / 0). Waits while the previous buffer is being written. Returns
 * 0, or WEFT_EIO (message set) after a failed write.
 */
int weft__bg_writer_submit(weft__bg_writer *w, char **buf, size_t *cap, size_t len);

/* Waits for the last write, stops the thread; 0 or WEFT_EIO. */
int weft__bg_writer_finish(weft__bg_writer *w);

#endif /* WEFT_OUTPUTS_BG_WRITER_H */
