/* SPDX-License-Identifier: MIT */
/*
 * outputs/paraver/paraver_rebuild.c - the end of the direct and rebuild
 * paths: the body written so far read back with its log of event lines
 * and merged with the sorted records into a new .prv, or, on the direct
 * path, only the header rewritten and the late records spliced in.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "outputs/paraver/paraver_internal.h"

/* ---- Rebuild: the body read back and merged with the sort -------------------------------------------- */

/* Order of the row map: by row. */
static int compare_row_refs(const void *a, const void *b)
{
	const row_ref *x = a, *y = b;

	return x->row < y->row ? -1 : x->row > y->row;
}

/*
 * A track of every row (state lines name their row only), sorted by
 * (task << 32 | thread). 0 or WEFT_ENOMEM.
 */
static int rows_build(merge_ctx *m)
{
	const weft__paraver_writer *w = m->w;

	m->rows = malloc((w->track_cap ? w->track_cap : 1) * sizeof *m->rows);
	if (m->rows == NULL)
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET,
				   "paraver: out of memory (rebuild)");
	for (size_t i = 0; i < w->track_cap; i++)
		if (w->tracks[i].kind != 0 && w->tracks[i].kind != WEFT__TRACK_PROCESS)
			m->rows[m->row_count++] = (row_ref){
				(uint64_t)w->tracks[i].task << 32 | w->tracks[i].thread,
				(uint32_t)(i + 1) };
	qsort(m->rows, m->row_count, sizeof *m->rows, compare_row_refs);
	return 0;
}

/* A track on row (task, thread), or 0. */
static uint32_t row_track(const merge_ctx *m, uint64_t task, uint64_t thread)
{
	uint64_t key = task << 32 | thread;
	size_t lo = 0, hi = m->row_count;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (m->rows[mid].row < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < m->row_count && m->rows[lo].row == key ? m->rows[lo].track : 0;
}

/*
 * ":u1:...:u<nu>:v1:...:v<nv>\n" at s: nu unsigned then nv signed
 * numbers. 0, or -1 when the text is not that.
 */
static int parse_numbers(const char *s, const char *end, uint64_t *u, int nu, int64_t *v,
			 int nv)
{
	for (int i = 0; i < nu + nv; i++) {
		int neg = 0;
		if (s >= end || *s++ != ':')
			return -1;
		if (i >= nu && s < end && *s == '-') {
			neg = 1;
			s++;
		}
		if (s >= end || *s < '0' || *s > '9')
			return -1;
		uint64_t x = 0;
		while (s < end && *s >= '0' && *s <= '9')
			x = x * 10 + (uint64_t)(*s++ - '0');
		if (i < nu)
			u[i] = x;
		else
			v[i - nu] = neg ? (int64_t)(0 - x) : (int64_t)x;
	}
	return s < end && *s == '\n' ? 0 : -1;
}

/* "K:0:1:task:thread:a:b:c\n": the numbers into f[0..5] (kind, cpu, appl,
 * task, thread, a), b and c. 0, or -1 when the line is not one. */
static int parse_line(const char *s, const char *end, uint64_t f[7], int64_t *c)
{
	f[0] = (uint64_t)(*s - '0');
	return parse_numbers(s + 1, end, f + 1, 6, c, 1);
}

/*
 * A communication line "3:0:1:task:thread:send:send:0:1:task:thread:
 * recv:recv:size:tag\n" back into a record (times from `start`). 0 or -1.
 */
static int parse_comm_line(const merge_ctx *m, const char *s, const char *end, rec *r)
{
	uint64_t f[12];
	int64_t v[2];

	if (parse_numbers(s + 1, end, f, 12, v, 2) != 0)
		return -1;
	memset(r, 0, sizeof *r);
	r->kind = REC_COMM;
	r->time = f[4] + m->old_start;
	r->end = f[10] + m->old_start;
	r->track = row_track(m, f[2], f[3]);
	r->type = row_track(m, f[8], f[9]);
	r->value = v[0];
	r->tag = (int32_t)v[1];
	return 0;
}

/* The next entry of the log; 0, or -1 at its end or on damage. */
static int log_next(line_reader *lr, uint64_t *v)
{
	if (lr->len - lr->pos < 10)
		weft__pv_reader_fill(lr);
	const char *p = lr->buf + lr->pos;
	if (weft__pv_get_varint(&p, lr->buf + lr->len, v) != 0)
		return -1;
	lr->pos = (size_t)(p - lr->buf);
	return 0;
}

/*
 * The body's next record (the log says which lines begin and end spans,
 * and their track); 1, or 0 at the end. A line that cannot be read
 * back sets the body's error.
 */
static int rebuild_next(merge_ctx *m, rec *r)
{
	const char *line;
	size_t n;
	uint64_t f[7], code;
	int64_t c;

	while (weft__pv_reader_line(&m->body, &line, &n)) {
		if (n > 0 && line[0] == '3') {
			if (parse_comm_line(m, line, line + n, r) == 0)
				return 1;
			m->body.error = weft__error(WEFT_EIO, NULL, WEFT_NO_OFFSET,
						    "paraver: the output could not be read back");
			return 0;
		}
		if (parse_line(line, line + n, f, &c) != 0 || (f[0] != 1 && f[0] != 2) ||
		    (f[0] == 2 && log_next(&m->log, &code) != 0)) {
			m->body.error = weft__error(WEFT_EIO, NULL, WEFT_NO_OFFSET,
						    "paraver: the output could not be read back");
			return 0;
		}
		memset(r, 0, sizeof *r);
		r->time = f[5] + m->old_start;
		r->value = c;
		if (f[0] == 1) {
			r->kind = REC_STATE;
			r->end = f[6] + m->old_start;
			r->track = row_track(m, f[3], f[4]);
			return 1;
		}
		if ((code & 3) == LOG_SKIP)
			continue; /* the trace-start record: made again */
		r->kind = (code & 3) == LOG_BEGIN ? REC_BEGIN : (code & 3) == LOG_END ? REC_END
										 : REC_EVENT;
		r->track = (uint32_t)(code >> 2);
		r->type = (uint32_t)f[6];
		r->end = r->time;
		return 1;
	}
	return 0;
}

/* Rebuild: the body's records up to a sorted one's time, then that one. */
static int rebuild_emit(void *ctx, const char *bytes, size_t len)
{
	merge_ctx *m = ctx;
	rec r;
	int rc = weft__pv_sorted_rec(bytes, len, &r);

	if (rc < 0)
		return rc;
	while (m->have_next && m->next.time <= r.time) {
		weft__pv_emit_rec(m->w, &m->next);
		m->have_next = rebuild_next(m, &m->next);
	}
	weft__pv_emit_rec(m->w, &r);
	return m->body.error;
}

/* Opens the copy of the body and the log for the rebuild. 0 or WEFT_E*. */
static int rebuild_open(merge_ctx *m, int tmp)
{
	weft__paraver_writer *w = m->w;
	off_t log_len = lseek(w->log_fd, 0, SEEK_END);
	int rc = log_len < 0 ? weft__error_errno("(paraver log)", "cannot seek") : 0;

	if (rc == 0)
		rc = weft__pv_copy_range(w->prv_fd, w->reserve, w->buf_offset, tmp);
	if (rc == 0)
		rc = rows_build(m);
	if (rc == 0)
		rc = weft__pv_reader_open(&m->body, tmp, 0, w->buf_offset - w->reserve);
	if (rc == 0)
		rc = weft__pv_reader_open(&m->log, w->log_fd, 0, (uint64_t)log_len);
	return rc;
}

/* Every span stack empty again (the rebuild writes from the start). */
static void stacks_reset(weft__paraver_writer *w)
{
	for (size_t i = 0; i < w->track_cap; i++)
		w->tracks[i].depth = 0;
}

/* Writes the rebuilt .prv: header, trace start, body and sort merged. */
static int rebuild_write(merge_ctx *m, const char *header, size_t hlen)
{
	weft__paraver_writer *w = m->w;
	int rc;

	weft__outbuf_destroy(&w->out);
	if (lseek(w->prv_fd, 0, SEEK_SET) < 0)
		return weft__error_errno("(paraver output)", "cannot seek");
	if ((rc = weft__outbuf_init(&w->out, w->prv_fd, COPY_BUFFER)) < 0 ||
	    (rc = weft__pv_group_alloc(w)) < 0)
		return rc;
	stacks_reset(w);
	w->stats.records = w->stats.state_records = w->stats.padded_states = 0;
	weft__outbuf_put(&w->out, header, hlen);
	weft__pv_put_trace_start(w);
	m->have_next = rebuild_next(m, &m->next);
	if (w->sorter != NULL) {
		rc = weft__row_sorter_finish(w->sorter, rebuild_emit, m);
		weft__pv_sort_stats(w);
	}
	while (rc == 0 && m->have_next) {
		weft__pv_emit_rec(w, &m->next);
		m->have_next = rebuild_next(m, &m->next);
	}
	weft__pv_flush_group(w);
	if (rc == 0)
		rc = m->body.error < 0 ? m->body.error : m->log.error;
	return rc == 0 ? weft__outbuf_flush(&w->out) : rc;
}

/*
 * The .prv made again from the written body (read back from a copy)
 * and the sorted records, as the sort path would have made it.
 */
static int rebuild(weft__paraver_writer *w, const char *header, size_t hlen)
{
	merge_ctx m;
	int tmp = weft__pv_temp_file(w);

	if (tmp < 0)
		return weft__error_errno(w->tmpdir ? w->tmpdir : "(temporary file)",
					 "cannot create a temporary file");
	memset(&m, 0, sizeof m);
	m.w = w;
	m.old_start = w->start_base;
	uint64_t size = 0;
	int rc = rebuild_open(&m, tmp);
	if (rc == 0)
		rc = rebuild_write(&m, header, hlen);
	if (rc == 0 && (rc = weft__pv_cut_at_position(w, &size)) == 0) {
		w->stats.rebuilt = 1;
		w->stats.merge_bytes = size;
	}
	weft__pv_reader_close(&m.body);
	weft__pv_reader_close(&m.log);
	free(m.rows);
	close(tmp);
	return rc > 0 ? WEFT_EIO : rc;
}

/*
 * The direct path's end (the body written, placeholders done): the
 * header in place when there is nothing to merge, else the merge of the
 * late records, or the rebuild.
 */
int weft__pv_write_prv_direct(weft__paraver_writer *w)
{
	char *h;
	size_t hlen = weft__pv_header_build(w, w->stats.start, w->stats.duration, w->reserve, &h);
	int rc;

	if (hlen == 0)
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET,
				   "paraver: out of memory (header)");
	if (w->mode == MODE_REBUILD || w->stats.start != w->start_base)
		rc = rebuild(w, h, hlen);
	else if (w->sorter != NULL || hlen != w->reserve)
		rc = weft__pv_splice(w, h, hlen);
	else if ((rc = weft__pv_pwrite_at(w->prv_fd, h, hlen, 0)) == 0 &&
		 ftruncate(w->prv_fd, (off_t)w->buf_offset) != 0)
		rc = weft__error_errno("(paraver output)", "cannot set the size");
	free(h);
	weft__pv_log_close(w);
	weft__outbuf_destroy(&w->out);
	return rc;
}
