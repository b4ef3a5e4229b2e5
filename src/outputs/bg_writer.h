/* SPDX-License-Identifier: MIT */
/*
 * outputs/bg_writer.h - writing an output from a second thread: the
 * producer fills one buffer while the writer thread write(2)s the other,
 * so that formatting (user time) and the kernel's copy of the bytes into
 * the page cache (system time, as long as the formatting on some
 * machines) overlap. Two buffers, swapped: memory is two buffers' worth.
 * Plain mode write(2)s the buffers in turn; positioned mode (regular
 * files) puts each at the offset it was submitted at (see below).
 * Internal to libweft (weft__ prefix).
 */
#ifndef WEFT_OUTPUTS_BG_WRITER_H
#define WEFT_OUTPUTS_BG_WRITER_H

#include <stddef.h>
#include <stdint.h>

#include "util/worker.h"

typedef struct weft__bg_writer {
	int fd;
	int positioned;     /* jobs go at their own offsets (pwrite) */
	uint64_t job_offset;
	int write_behind;   /* positioned: drop what is on the disk from the cache */
	uint64_t behind;    /* write-behind: the file is on the disk up to here */
	char *job;          /* the buffer the thread writes (or has written) */
	size_t job_len, job_cap;
	/* The thread; worker.error: errno of the first failed write;
	 * worker.threaded 0: the thread could not start, writes are inline. */
	weft__worker worker;
} weft__bg_writer;

/* Starts the writer thread for fd (inline writes when it cannot start). */
void weft__bg_writer_start(weft__bg_writer *w, int fd);

/*
 * Starts the writer thread in positioned mode when fd is a regular file
 * opened without O_APPEND: each buffer is written with pwrite(2) at the
 * file position it was submitted at, and the file position moves past
 * it at once. The caller may then also write(2) to fd directly between
 * submits (a record too large for its buffer): the bytes land in order
 * whatever the thread is doing. The thread also starts the writeback of
 * each buffer to the disk once written (sync_file_range on Linux), so
 * that a final fsync(2) has little left to do.
 *
 * With `write_behind` (for an output that is synced at the end anyway),
 * the thread then waits for the disk a few megabytes behind the buffer it
 * writes and drops what is on the disk from the page cache: the output
 * does not fill the cache, and new buffers reuse its pages. A writeback
 * error seen then is a write error.
 *
 * Returns 1 when started, 0 (nothing started) for other files (pipes,
 * terminals, devices, append mode).
 */
int weft__bg_writer_start_positioned(weft__bg_writer *w, int fd, int write_behind);

/*
 * Hands the buffer *buf (len bytes of *cap) to the writer and gives back
 * in *buf / *cap an empty buffer to fill (the one written before, or
 * NULL / 0). Waits while the previous buffer is being written. Returns
 * 0, or WEFT_EIO (message set) after a failed write.
 */
int weft__bg_writer_submit(weft__bg_writer *w, char **buf, size_t *cap, size_t len);

/* Waits for the last write, stops the thread; 0 or WEFT_EIO. */
int weft__bg_writer_finish(weft__bg_writer *w);

/* ---- A streamed output buffer written from the thread ------------------------ */

struct weft__outbuf;

/*
 * What the streaming writers (Chrome JSON, Perfetto) keep to hand their
 * output buffer (outputs.h's weft__outbuf) to a positioned writer thread
 * each time it fills, formatting on in the second buffer meanwhile.
 */
typedef struct weft__bg_output {
	weft__bg_writer bg;
	int running;            /* 1 while the writer thread runs */
	int failed;             /* a write of the thread failed */
	char *spare;            /* the second buffer, until first handed over */
	size_t buffer_size;
} weft__bg_output;

/*
 * Starts the thread for fd (weft__bg_writer_start_positioned) with a
 * spare buffer of `buffer_size` bytes; the caller's outbuf must have the
 * same size. 0 (o->running tells whether it started: not for pipes,
 * terminals, append mode), or WEFT_ENOMEM.
 */
int weft__bg_output_start(weft__bg_output *o, int fd, int write_behind, size_t buffer_size);
/* Hands the full buffer of `ob` to the thread and gives `ob` an empty one. */
void weft__bg_output_hand_over(weft__bg_output *o, struct weft__outbuf *ob);
/* Waits for the thread's last write and stops it; 0 or WEFT_EIO. */
int weft__bg_output_stop(weft__bg_output *o);
/* Stops the thread if it runs and frees the spare buffer. */
void weft__bg_output_free(weft__bg_output *o);

#endif /* WEFT_OUTPUTS_BG_WRITER_H */
