/* SPDX-License-Identifier: MIT */
/*
 * outputs/paraver/paraver_direct.c - the direct path's file work: the
 * body written in place through the background writer after a header
 * area, placeholder ends patched, the log of event lines (for a
 * rebuild), and at the end vanishing placeholders and late records
 * spliced in.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "outputs/paraver/paraver_internal.h"

/* ---- Direct output: files ----------------------------------------------------------------------- */

/*
 * 1 when the .prv can take the direct path: a regular file, not in
 * append mode, open for reading too (a merge reads the body back).
 */
int weft__pv_direct_possible(int fd)
{
	struct stat st;
	int flags = fcntl(fd, F_GETFL);

	return flags >= 0 && (flags & O_ACCMODE) == O_RDWR && !(flags & O_APPEND) &&
	       fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && lseek(fd, 0, SEEK_CUR) == 0;
}

/* An unlinked temporary file in tmpdir ($TMPDIR, else /tmp); -1 on failure. */
int weft__pv_temp_file(const weft__paraver_writer *w)
{
	const char *dir = w->tmpdir;

	if (dir == NULL || dir[0] == '\0')
		dir = getenv("TMPDIR");
	char *path = weft__path_join(dir != NULL && dir[0] != '\0' ? dir : "/tmp",
				     "weft-paraver.XXXXXX");
	if (path == NULL)
		return -1;
	int fd = mkstemp(path);
	if (fd >= 0)
		unlink(path);
	free(path);
	return fd;
}

/* Writes all of buf at `offset`; 0 or WEFT_EIO (message set). */
int weft__pv_pwrite_at(int fd, const void *buf, size_t len, uint64_t offset)
{
	int err = weft__write_full(fd, buf, len, offset, NULL);

	return err == 0 ? 0 : weft__error(WEFT_EIO, NULL, WEFT_NO_OFFSET,
					  "paraver: cannot write the output: %s", strerror(err));
}

/* Reads up to len bytes at `offset`; the count, or WEFT_EIO. */
int64_t weft__pv_pread_at(int fd, void *buf, size_t len, uint64_t offset)
{
	int64_t n = weft__read_full(fd, buf, len, offset);

	return n >= 0 ? n : weft__error(WEFT_EIO, NULL, WEFT_NO_OFFSET,
					"paraver: cannot read the output back: %s",
					strerror((int)-n));
}

/* Copies [from, to) of src to the start of dst; 0 or WEFT_EIO. */
int weft__pv_copy_range(int src, uint64_t from, uint64_t to, int dst)
{
	char *buf = malloc(COPY_BUFFER);
	uint64_t at = from;
	int rc = buf != NULL ? 0 : weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET,
					       "paraver: out of memory (copy)");

	while (rc == 0 && at < to) {
		size_t want = to - at < COPY_BUFFER ? (size_t)(to - at) : COPY_BUFFER;
		int64_t n = weft__pv_pread_at(src, buf, want, at);
		if (n <= 0) {
			rc = n < 0 ? (int)n : weft__error(WEFT_EIO, NULL, WEFT_NO_OFFSET,
							  "paraver: the output is shorter than written");
			break;
		}
		rc = weft__pv_pwrite_at(dst, buf, (size_t)n, at - from);
		at += (uint64_t)n;
	}
	free(buf);
	return rc;
}

/* ---- Direct output: the body -------------------------------------------------------------------- */

/* Remembers where the body stood (offset, time of its last line) for the merge. */
static void index_add(weft__paraver_writer *w, uint64_t offset, uint64_t time)
{
	if (w->index_count == w->index_cap &&
	    weft__array_grow((void **)&w->index, &w->index_cap, w->index_count + 1,
			     sizeof *w->index) != 0) {
		weft__pv_fail_nomem(w, "output index");
		return;
	}
	w->index[w->index_count++] = (index_entry){ offset, time };
}

/* Writes the patches whose bytes the writer thread has written. */
static void apply_patches(weft__paraver_writer *w)
{
	size_t kept = 0;

	for (size_t i = 0; i < w->patch_count; i++) {
		patch *p = &w->patches[i];
		if (p->offset + END_DIGITS > w->written_upto) {
			w->patches[kept++] = *p;
			continue;
		}
		int rc = weft__pv_pwrite_at(w->prv_fd, p->digits, END_DIGITS, p->offset);
		if (rc < 0)
			weft__pv_fail(w, rc);
	}
	w->patch_count = kept;
}

/*
 * Hands the full buffer to the writer thread (at the file position,
 * which is its offset) and goes on in the one it gives back. Everything
 * before the handed buffer is then on the file.
 */
void weft__pv_hand_over(weft__paraver_writer *w)
{
	char *buf = w->out.buf;
	size_t cap = w->out.cap, len = w->out.len;

	if (len == 0)
		return;
	if (weft__bg_writer_submit(&w->bg, &buf, &cap, len) < 0)
		weft__pv_fail(w, WEFT_EIO);
	if (buf == NULL) {
		buf = w->spare;
		cap = w->out.cap;
		w->spare = NULL;
	}
	w->written_upto = w->bg.worker.threaded ? w->buf_offset : w->buf_offset + len;
	w->buf_offset += len;
	w->out.buf = buf;
	w->out.cap = cap;
	w->out.len = 0;
	index_add(w, w->buf_offset - w->reserve, w->mark - w->start_base);
	if (w->patch_count > 0)
		apply_patches(w);
}

/* Waits for the writer thread; then the whole body is on the file. */
static void body_flush(weft__paraver_writer *w)
{
	if (!w->bg_on)
		return;
	weft__pv_hand_over(w);
	if (weft__bg_writer_finish(&w->bg) < 0)
		weft__pv_fail(w, WEFT_EIO);
	w->bg_on = 0;
	w->written_upto = w->buf_offset + w->out.len;
	apply_patches(w);
}

/*
 * Completes a written placeholder: its end, zero-padded, in the buffer
 * when it is still there, on the file when the thread wrote it, or later.
 */
void weft__pv_patch_end(weft__paraver_writer *w, const pv_track *tr, uint64_t end)
{
	patch p = { tr->ph_end_at, { 0 } };

	weft__pv_put_digits(p.digits, end - w->start_base, END_DIGITS);
	if (p.offset >= w->buf_offset) {
		memcpy(w->out.buf + (p.offset - w->buf_offset), p.digits, END_DIGITS);
		return;
	}
	if (p.offset + END_DIGITS <= w->written_upto) {
		int rc = weft__pv_pwrite_at(w->prv_fd, p.digits, END_DIGITS, p.offset);
		if (rc < 0)
			weft__pv_fail(w, rc);
		return;
	}
	if (w->patch_count == w->patch_cap &&
	    weft__array_grow((void **)&w->patches, &w->patch_cap, w->patch_count + 1,
			     sizeof *w->patches) != 0) {
		weft__pv_fail_nomem(w, "placeholders");
		return;
	}
	w->patches[w->patch_count++] = p;
}

/* A written placeholder that turned out to be no record: removed at the end. */
void weft__pv_vanish_add(weft__paraver_writer *w, pv_track *tr)
{
	if (w->vanish_count == w->vanish_cap &&
	    weft__array_grow((void **)&w->vanish, &w->vanish_cap, w->vanish_count + 1,
			     sizeof *w->vanish) != 0) {
		weft__pv_fail_nomem(w, "placeholders");
		return;
	}
	w->vanish[w->vanish_count++] = tr->ph_line;
	w->stats.records--;
	w->stats.state_records--;
	w->stats.padded_states--;
}

/* ---- Direct output: the log of event lines ------------------------------------------------------- */

/* Opens the log's temporary file. 0 or -1. */
int weft__pv_log_open(weft__paraver_writer *w)
{
	w->log_fd = weft__pv_temp_file(w);
	if (w->log_fd < 0)
		return -1;
	if (weft__outbuf_init(&w->log, w->log_fd, LOG_BUFFER) < 0) {
		close(w->log_fd);
		w->log_fd = -1;
		return -1;
	}
	return 0;
}

/* Closes the log (and so deletes it). */
void weft__pv_log_close(weft__paraver_writer *w)
{
	if (w->log.buf != NULL)
		weft__outbuf_destroy(&w->log);
	memset(&w->log, 0, sizeof w->log);
	if (w->log_fd >= 0)
		close(w->log_fd);
	w->log_fd = -1;
}

/*
 * Starts writing: time 0 is the earliest time seen (records and open
 * placeholders), the body goes after a header area as long as the header
 * with today's tasks, through the writer thread. 0, or -1 when the
 * direct path cannot start (nothing written then).
 */
int weft__pv_direct_start(weft__paraver_writer *w)
{
	const ph_entry *e = weft__pv_ph_top(w);
	char *h;

	w->start_base = w->min_time;
	if (e != NULL && e->begin < w->start_base)
		w->start_base = e->begin;
	w->mark = w->start_base;
	w->reserve = weft__pv_header_build(w, w->start_base, 0, 0, &h);
	free(h);
	w->spare = malloc(CHUNK + CHUNK_SLACK);
	if (w->reserve == 0 || w->spare == NULL ||
	    lseek(w->prv_fd, (off_t)w->reserve, SEEK_SET) < 0 ||
	    weft__outbuf_init(&w->out, w->prv_fd, CHUNK + CHUNK_SLACK) < 0) {
		free(w->spare);
		w->spare = NULL;
		return -1;
	}
	w->bg_on = weft__bg_writer_start_positioned(&w->bg, w->prv_fd, 1);
	if (!w->bg_on) {
		weft__outbuf_destroy(&w->out);
		free(w->spare);
		w->spare = NULL;
		return -1;
	}
	w->buf_offset = w->written_upto = w->reserve;
	w->stats.start = w->start_base;
	return 0;
}

/* ---- Direct path: the end ----------------------------------------------------------------------- */

#define PEEK 4096u

/* The end (past its '\n') of the line that starts at `line`; 0 on failure. */
static uint64_t line_end_at(int fd, uint64_t line, uint64_t limit)
{
	char buf[PEEK];

	for (uint64_t at = line; at < limit; at += PEEK) {
		int64_t n = weft__pv_pread_at(fd, buf, PEEK, at);
		if (n <= 0)
			return 0;
		char *nl = memchr(buf, '\n', (size_t)n);
		if (nl != NULL)
			return at + (uint64_t)(nl - buf) + 1;
	}
	return 0;
}

/* The offset of the last ':' before `at` (not before `floor`); 0 on failure. */
static uint64_t colon_before(int fd, uint64_t at, uint64_t floor)
{
	char buf[PEEK];

	while (at > floor) {
		uint64_t from = at - floor > PEEK ? at - PEEK : floor;
		int64_t n = weft__pv_pread_at(fd, buf, (size_t)(at - from), from);
		if (n != (int64_t)(at - from))
			return 0;
		for (size_t i = (size_t)n; i-- > 0;)
			if (buf[i] == ':')
				return from + i;
		at = from;
	}
	return 0;
}

/*
 * A placeholder that is no record vanishes: the last number of the line
 * before it takes its bytes as leading zeros ("...:42\n<placeholder>"
 * becomes "...:000...00042\n"), the same value for Paraver.
 */
static int vanish_one(weft__paraver_writer *w, uint64_t line)
{
	uint64_t limit = w->buf_offset + w->out.len;
	uint64_t end = line_end_at(w->prv_fd, line, limit);
	uint64_t colon = end != 0 ? colon_before(w->prv_fd, line - 1, w->reserve) : 0;
	char tail[24], zeros[256];

	if (colon == 0)
		return weft__error(WEFT_EIO, NULL, WEFT_NO_OFFSET,
				   "paraver: a placeholder could not be removed");
	/* the significant digits: the last ones of the field (at most 20) */
	uint64_t from = line - 1 - colon - 1 > 20 ? line - 1 - 20 : colon + 1;
	int64_t n = weft__pv_pread_at(w->prv_fd, tail, (size_t)(line - 1 - from), from);
	char sign;
	if (n < 0 || weft__pv_pread_at(w->prv_fd, &sign, 1, colon + 1) != 1)
		return n < 0 ? (int)n : WEFT_EIO;
	size_t k = 0;
	while (k + 1 < (size_t)n && (tail[k] == '0' || tail[k] == '-'))
		k++;
	/* [colon + 1, end): sign, zeros, digits, '\n' */
	uint64_t at = colon + 1, digits_at = end - 1 - ((size_t)n - k);
	int rc = sign == '-' ? weft__pv_pwrite_at(w->prv_fd, "-", 1, at++) : 0;
	memset(zeros, '0', sizeof zeros);
	while (rc == 0 && at < digits_at) {
		size_t chunk = digits_at - at < sizeof zeros ? (size_t)(digits_at - at) : sizeof zeros;
		rc = weft__pv_pwrite_at(w->prv_fd, zeros, chunk, at);
		at += chunk;
	}
	if (rc == 0)
		rc = weft__pv_pwrite_at(w->prv_fd, tail + k, (size_t)n - k, digits_at);
	return rc == 0 ? weft__pv_pwrite_at(w->prv_fd, "\n", 1, end - 1) : rc;
}

/* Order of vanishing lines: by offset. */
static int compare_offsets(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Removes every vanishing placeholder, first to last (neighbours add up). */
int weft__pv_vanish_all(weft__paraver_writer *w)
{
	int rc = 0;

	if (w->vanish_count == 0)
		return 0;
	qsort(w->vanish, w->vanish_count, sizeof *w->vanish, compare_offsets);
	for (size_t i = 0; rc == 0 && i < w->vanish_count; i++)
		rc = vanish_one(w, w->vanish[i]);
	w->vanish_count = 0;
	return rc;
}

/*
 * The window and the placeholders at the end: placeholders never
 * resolved make no record (unwritten ones are dropped, written ones
 * vanish), the window goes to the body, the writer thread finishes.
 */
void weft__pv_direct_drain(weft__paraver_writer *w)
{
	rec r;

	weft__pv_ph_revert_all(w);
	while (window_count(&w->win) > 0) {
		window_pop(&w->win, &r);
		weft__pv_body_record(w, &r);
	}
	for (size_t i = 0; i < w->track_cap; i++) {
		pv_track *tr = &w->tracks[i];
		if (tr->ph == PH_WRITTEN_RUN || tr->ph == PH_WRITTEN_GAP) {
			weft__pv_vanish_add(w, tr);
			weft__pv_ph_drop(tr);
		}
	}
	body_flush(w);
	if (weft__outbuf_flush(&w->log) < 0)
		weft__pv_fail(w, WEFT_EIO);
}

/*
 * The body offset of the first line after time t (relative): the index
 * gives where to start reading. body_len when there is none.
 */
static int64_t first_after_time(weft__paraver_writer *w, uint64_t t, uint64_t body_len)
{
	size_t lo = 0, hi = w->index_count;
	line_reader lr;
	const char *line;
	size_t n;
	uint64_t lt;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (w->index[mid].time <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	uint64_t at = lo > 0 ? w->index[lo - 1].offset : 0;
	int rc = weft__pv_reader_open(&lr, w->prv_fd, w->reserve + at, w->reserve + body_len);
	if (rc < 0)
		return rc;
	while (weft__pv_reader_line(&lr, &line, &n)) {
		if (weft__pv_line_time(line, line + n, &lt) == 0 && lt > t)
			break;
		at += n;
	}
	rc = lr.error;
	weft__pv_reader_close(&lr);
	return rc < 0 ? rc : (int64_t)at;
}

/* Splice: a late record goes after the body lines of its time or before. */
static int splice_emit(void *ctx, const char *bytes, size_t len)
{
	merge_ctx *m = ctx;
	rec r;
	int rc = weft__pv_sorted_rec(bytes, len, &r);

	if (rc < 0)
		return rc;
	weft__pv_reader_copy_until(&m->body, r.time - m->w->start_base, &m->w->out);
	weft__pv_write_record(m->w, &r);
	return m->body.error;
}

/* The .prv ends where the last write left the file position. 0 or WEFT_EIO. */
int weft__pv_cut_at_position(weft__paraver_writer *w, uint64_t *size)
{
	off_t at = lseek(w->prv_fd, 0, SEEK_CUR);

	if (at < 0 || ftruncate(w->prv_fd, at) != 0)
		return weft__error_errno("(paraver output)", "cannot set the size");
	*size = (uint64_t)at;
	return 0;
}

/*
 * The splice's start: the body from `from` copied to `tmp` and opened
 * there, the header written, the output positioned at `out_at` with a
 * fresh buffer. 0 or WEFT_E*.
 */
static int splice_open(merge_ctx *m, int tmp, uint64_t from, uint64_t out_at,
		       const char *header, size_t hlen)
{
	weft__paraver_writer *w = m->w;
	int rc = weft__pv_copy_range(w->prv_fd, w->reserve + from, w->buf_offset, tmp);

	if (rc == 0)
		rc = weft__pv_pwrite_at(w->prv_fd, header, hlen, 0);
	if (rc == 0)
		rc = weft__pv_reader_open(&m->body, tmp, 0, w->buf_offset - w->reserve - from);
	weft__outbuf_destroy(&w->out);
	if (rc == 0 && lseek(w->prv_fd, (off_t)out_at, SEEK_SET) < 0)
		rc = weft__error_errno("(paraver output)", "cannot seek");
	if (rc == 0)
		rc = weft__outbuf_init(&w->out, w->prv_fd, COPY_BUFFER);
	return rc;
}

/*
 * Merges the late records into the body: the header in place when it
 * kept its length (then only the part after the first late record is
 * rewritten), else the whole file after it. Through a copy of that part.
 */
int weft__pv_splice(weft__paraver_writer *w, const char *header, size_t hlen)
{
	int64_t from = 0;
	merge_ctx m;
	uint64_t size = 0;

	if (hlen == w->reserve && w->sorter != NULL &&
	    (from = first_after_time(w, w->late_min - w->start_base,
				     w->buf_offset - w->reserve)) < 0)
		return (int)from;
	uint64_t out_at = hlen == w->reserve ? w->reserve + (uint64_t)from : hlen;
	int tmp = weft__pv_temp_file(w);
	if (tmp < 0)
		return weft__error_errno(w->tmpdir ? w->tmpdir : "(temporary file)",
					 "cannot create a temporary file");
	memset(&m, 0, sizeof m);
	m.w = w;
	int rc = splice_open(&m, tmp, (uint64_t)from, out_at, header, hlen);
	if (rc == 0 && w->sorter != NULL) {
		rc = weft__row_sorter_finish(w->sorter, splice_emit, &m);
		weft__pv_sort_stats(w);
	}
	if (rc == 0) {
		weft__pv_reader_copy_rest(&m.body, &w->out);
		rc = m.body.error < 0 ? m.body.error : weft__outbuf_flush(&w->out);
	}
	if (rc == 0 && (rc = weft__pv_cut_at_position(w, &size)) == 0)
		w->stats.merge_bytes = size - out_at;
	weft__pv_reader_close(&m.body);
	close(tmp);
	return rc > 0 ? WEFT_EIO : rc;
}
