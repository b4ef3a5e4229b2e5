/* SPDX-License-Identifier: MIT */
/*
 * formats/heph/heph_index.c - the time-order index of a Heph trace.
 *
 * Heph's runtime writes an event when it ends, so a parent comes after its
 * children and a stream is not in start-time order in the file: a root
 * event that spans the whole run is written last. Delivering a stream by
 * start time (and rebuilding its call tree) therefore needs a sort of the
 * whole stream. The index holds one small entry per event (times, offset,
 * stored position), sorted by (stream, start, end descending, seq
 * descending). It stays in memory up to a budget (sort_budget_bytes of the
 * open options); beyond it, sorted runs are written to an unlinked
 * temporary file and merged while reading, so memory stays bounded
 * whatever the trace size.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "formats/heph/heph_internal.h"

/* Entries read at once from a spilled run. */
#define RUN_BUFFER_ENTRIES 512u
/* The smallest buffer of entries, whatever the budget. */
#define MIN_BUFFER_ENTRIES 1024u

struct heph_index {
	size_t stream_count;
	heph_entry *mem;        /* all entries when nothing was spilled */
	uint64_t *mem_begin;    /* [stream_count + 1]: first entry of each stream */
	int fd;                 /* temporary file of the runs, or -1 */
	size_t run_count;
	uint64_t *run_begin;    /* [run * (stream_count + 1) + s]: entry index */
	uint64_t spilled;       /* entries written to the file */
};

/*
 * Index order: stream, then start time, then the longer interval first
 * (a parent before its children), then the later-stored first: the
 * runtime writes a child before its parent, so of two identical
 * intervals the one stored later is taken as the parent.
 */
static int entry_compare(const void *a, const void *b)
{
	const heph_entry *x = a, *y = b;
	if (x->stream != y->stream)
		return x->stream < y->stream ? -1 : 1;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	if (x->end != y->end)
		return x->end > y->end ? -1 : 1;
	if (x->seq != y->seq)
		return x->seq > y->seq ? -1 : 1;
	return 0;
}

/* Writes all of buf to fd at its current position (EINTR, short writes). */
static int write_all(int fd, const void *buf, size_t n)
{
	int err = weft__write_full(fd, buf, n, WEFT__AT_POSITION, NULL);
	if (err == 0)
		return 0;
	errno = err;
	return weft__error_errno("heph index temporary file", "cannot write");
}

/* Creates the unlinked temporary file of the runs. */
static int open_spill_file(heph_index *ix)
{
	const char *dir = getenv("TMPDIR");
	char *path = weft__path_join(dir != NULL && dir[0] != '\0' ? dir : "/tmp",
				     "weft-heph-index-XXXXXX");
	if (path == NULL)
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	ix->fd = mkstemp(path);
	int rc = ix->fd < 0 ? weft__error_errno(path, "cannot create a temporary file") : 0;
	if (rc == 0)
		unlink(path);
	free(path);
	return rc;
}

/* Per-stream boundaries of a sorted buffer, as entry indexes + `base`. */
static void stream_bounds(const heph_entry *buf, size_t n, size_t streams,
			  uint64_t base, uint64_t *begin)
{
	size_t i = 0;
	for (size_t s = 0; s <= streams; s++) {
		while (i < n && buf[i].stream < s)
			i++;
		begin[s] = base + i;
	}
}

/* Sorts the buffer and appends it to the temporary file as one run. */
static int spill_run(heph_index *ix, heph_entry *buf, size_t n)
{
	if (ix->fd < 0 && open_spill_file(ix) < 0)
		return WEFT_EIO;
	size_t stride = ix->stream_count + 1;
	uint64_t *grown = realloc(ix->run_begin, (ix->run_count + 1) * stride * sizeof *grown);
	if (grown == NULL)
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	ix->run_begin = grown;
	qsort(buf, n, sizeof *buf, entry_compare);
	stream_bounds(buf, n, ix->stream_count, ix->spilled,
		      ix->run_begin + ix->run_count * stride);
	int rc = write_all(ix->fd, buf, n * sizeof *buf);
	if (rc < 0)
		return rc;
	ix->run_count++;
	ix->spilled += n;
	return 0;
}

/* State of the pass that collects the entries. */
typedef struct build_ctx {
	heph_data *d;
	weft_trace *trace;      /* whose progress counts the packets read */
	heph_index *ix;
	weft_mapfile mf;
	heph_entry *buf;
	size_t count, cap;
	uint64_t *seq;          /* next stored position, per stream */
	uint64_t epoch;
	size_t next_bad;        /* position in d->bad_offsets */
} build_ctx;

/* One event packet: an entry, when the scan accepted the packet. */
static int collect_event(build_ctx *b, const uint8_t *p, uint32_t size, uint64_t offset)
{
	heph_event_packet ev;
	heph_entry *e;
	weft__error_clear();
	if (weft__heph_read_event(b->d, &b->next_bad, p, size, offset, &ev) < 0)
		return 0; /* reported by the scan */
	int64_t stream = weft__heph_stream_lookup(b->d, ev.stream_id, ev.substream);
	if (stream < 0)
		return 0;
	if (b->count == b->cap) {
		int rc = spill_run(b->ix, b->buf, b->count);
		if (rc < 0)
			return rc;
		b->count = 0;
	}
	e = &b->buf[b->count];
	if (weft__heph_event_times(&ev, b->epoch, b->d->name, offset, &e->start, &e->end) < 0)
		return 0;
	e->offset = offset;
	e->seq = b->seq[stream]++;
	e->stream = (uint32_t)stream;
	e->pad = 0;
	b->count++;
	return 0;
}

/* The pass over the file: the same framing and checks as the scan. */
static int collect_all(build_ctx *b)
{
	uint64_t offset = 0;
	for (;;) {
		const uint8_t *p;
		uint32_t size;
		heph_frame_status st = weft__heph_frame(&b->mf, offset, b->d->valid_end, &p, &size);
		heph_prefetch(&b->mf, offset);
		if (st == HEPH_FRAME_END)
			return 0;
		if (st < 0)
			return weft__error(WEFT_EFORMAT, b->d->name, offset,
					   "the trace file changed since it was opened");
		if (st == HEPH_FRAME_META) {
			const uint8_t *name;
			uint16_t len;
			uint64_t epoch;
			if (weft__heph_parse_meta(p, size, b->d->name, offset, &epoch,
						  &name, &len) == 1)
				b->epoch = epoch;
		} else {
			int rc = collect_event(b, p, size, offset);
			if (rc < 0)
				return rc;
			weft__progress_count(b->trace, 1);
		}
		offset += size;
	}
}

/* Keeps the last buffer: in memory when alone, else as the last run. */
static int finish_build(build_ctx *b)
{
	heph_index *ix = b->ix;
	if (ix->run_count > 0) {
		int rc = b->count ? spill_run(ix, b->buf, b->count) : 0;
		free(b->buf);
		b->buf = NULL;
		return rc;
	}
	ix->mem_begin = malloc((ix->stream_count + 1) * sizeof *ix->mem_begin);
	if (ix->mem_begin == NULL)
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	qsort(b->buf, b->count, sizeof *b->buf, entry_compare);
	stream_bounds(b->buf, b->count, ix->stream_count, 0, ix->mem_begin);
	ix->mem = b->buf;
	b->buf = NULL;
	return 0;
}

int weft__heph_index_build(heph_data *d, weft_trace *trace, heph_index **out)
{
	build_ctx b;
	heph_index *ix = calloc(1, sizeof *ix);
	memset(&b, 0, sizeof b);
	b.trace = trace;
	if (ix == NULL)
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	ix->fd = -1;
	ix->stream_count = d->stream_count;
	b.d = d;
	b.ix = ix;
	b.cap = d->sort_budget / sizeof(heph_entry);
	if (b.cap < MIN_BUFFER_ENTRIES)
		b.cap = MIN_BUFFER_ENTRIES;
	if (b.cap > d->event_count)
		b.cap = d->event_count ? d->event_count : 1;
	b.buf = malloc(b.cap * sizeof *b.buf);
	b.seq = calloc(d->stream_count ? d->stream_count : 1, sizeof *b.seq);
	int rc = b.buf != NULL && b.seq != NULL ? 0 :
		 weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET,
			     "out of memory for the time-order index");
	if (rc == 0)
		rc = weft__mapfile_open(&b.mf, d->file, d->name, HEPH_COPY_WINDOW);
	if (rc == 0) {
		weft__mapfile_count(&b.mf, trace);
		rc = collect_all(&b);
		weft__mapfile_close(&b.mf);
	}
	if (rc == 0)
		rc = finish_build(&b);
	free(b.buf);
	free(b.seq);
	if (rc < 0) {
		weft__heph_index_free(ix);
		return rc;
	}
	*out = ix;
	return 0;
}

void weft__heph_index_free(heph_index *ix)
{
	if (ix == NULL)
		return;
	if (ix->fd >= 0)
		close(ix->fd);
	free(ix->mem);
	free(ix->mem_begin);
	free(ix->run_begin);
	free(ix);
}

/* ---- Reading one stream ------------------------------------------------------- */

/* One sorted run of a stream: entries [next, end) and a read buffer. */
typedef struct run_cursor {
	uint64_t next, end;     /* entry indexes (in the file, or in mem) */
	const heph_entry *buf;  /* entries from `buf_first` on */
	uint64_t buf_first;
	size_t buf_count;
	heph_entry *own;        /* buffer of a spilled run */
} run_cursor;

struct heph_index_reader {
	heph_index *ix;
	run_cursor *runs;
	size_t run_count;
};

int weft__heph_index_reader_open(heph_index *ix, uint32_t stream,
				 heph_index_reader **out)
{
	heph_index_reader *r = calloc(1, sizeof *r);
	size_t n = ix->run_count ? ix->run_count : 1;
	if (r == NULL || (r->runs = calloc(n, sizeof *r->runs)) == NULL) {
		free(r);
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	}
	r->ix = ix;
	r->run_count = n;
	if (ix->run_count == 0) {
		r->runs[0] = (run_cursor){ ix->mem_begin[stream], ix->mem_begin[stream + 1],
					   ix->mem, 0, (size_t)ix->mem_begin[ix->stream_count],
					   NULL };
		*out = r;
		return 0;
	}
	size_t stride = ix->stream_count + 1;
	for (size_t k = 0; k < n; k++) {
		run_cursor *rc = &r->runs[k];
		rc->next = ix->run_begin[k * stride + stream];
		rc->end = ix->run_begin[k * stride + stream + 1];
		rc->own = malloc(RUN_BUFFER_ENTRIES * sizeof *rc->own);
		if (rc->own == NULL) {
			weft__heph_index_reader_free(r);
			return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
		}
	}
	*out = r;
	return 0;
}

/* Makes the next entry of a spilled run visible in its buffer. */
static int run_fill(heph_index *ix, run_cursor *rc)
{
	if (rc->buf != NULL && rc->next < rc->buf_first + rc->buf_count)
		return 0;
	uint64_t n = rc->end - rc->next;
	if (n > RUN_BUFFER_ENTRIES)
		n = RUN_BUFFER_ENTRIES;
	size_t bytes = (size_t)n * sizeof(heph_entry);
	int64_t got = weft__read_full(ix->fd, rc->own, bytes, rc->next * sizeof(heph_entry));
	if (got < 0 || (uint64_t)got < bytes) {
		errno = got < 0 ? (int)-got : EIO;
		return weft__error_errno("heph index temporary file", "cannot read");
	}
	rc->buf = rc->own;
	rc->buf_first = rc->next;
	rc->buf_count = (size_t)n;
	return 0;
}

int weft__heph_index_reader_next(heph_index_reader *r, heph_entry *entry)
{
	const heph_entry *best = NULL;
	run_cursor *from = NULL;
	for (size_t k = 0; k < r->run_count; k++) {
		run_cursor *rc = &r->runs[k];
		if (rc->next >= rc->end)
			continue;
		if (rc->own != NULL) {
			int err = run_fill(r->ix, rc);
			if (err < 0)
				return err;
		}
		const heph_entry *e = &rc->buf[rc->next - rc->buf_first];
		if (best == NULL || entry_compare(e, best) < 0) {
			best = e;
			from = rc;
		}
	}
	if (best == NULL)
		return 0;
	*entry = *best;
	from->next++;
	return 1;
}

void weft__heph_index_reader_free(heph_index_reader *r)
{
	if (r == NULL)
		return;
	for (size_t k = 0; k < r->run_count; k++)
		free(r->runs[k].own);
	free(r->runs);
	free(r);
}
