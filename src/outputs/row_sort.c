/* SPDX-License-Identifier: MIT */
/*
 * outputs/row_sort.c - external merge sort of text rows by a 64-bit key
 * (see row_sort.h).
 *
 * In memory: the row bytes in one arena, and per row its key, its arena
 * offset and its length. The order is (key, arena offset): the offset
 * grows with every row added, so equal keys keep their order. When the
 * next row would take the memory past the budget, the rows are sorted and
 * written to the temporary file as a run of records
 *     u64 key | u32 length | bytes
 * (native byte order: the file lives only as long as the sort). The
 * merge reads each run through its own buffer (pread: runs are ranges of
 * one file) and takes the smallest (key, run index), which keeps equal
 * keys in order across runs too. At most MAX_FANIN runs are merged at
 * once; more runs are first merged in groups into longer runs, written at
 * the end of the same file.
 *
 * Runs are written by a second thread: memory holds two sets of rows of
 * half the budget each; while one set is written (the kernel copying the
 * bytes into the page cache, as slow as formatting them on some
 * machines), the caller fills the other.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/internal.h"
#include "outputs/outputs.h"
#include "outputs/row_sort.h"
#include "util/worker.h"

/* Runs merged at once, and the buffer of each run reader. */
#define MAX_FANIN 256
#define MIN_RUN_BUFFER (64u << 10)
#define MAX_RUN_BUFFER (1u << 20)
#define RECORD_HEAD 12u /* u64 key, u32 length */

typedef struct mem_row {
	uint64_t key;
	uint32_t offset; /* in the arena (the budget is below 4 GiB) */
	uint32_t len;
} mem_row;

/* The largest budget: arena offsets are 32-bit. */
#define MAX_BUDGET (UINT32_MAX - (1u << 20))

typedef struct run {
	uint64_t offset; /* in the temporary file */
	uint64_t bytes;
} run;

/* The thread that writes runs, and the run it is given. */
typedef struct run_writer {
	weft__worker worker; /* worker.error: errno of the first failed write */
	int fd;
	const char *arena;  /* the job: rows (sorted) of an arena, at offset */
	const mem_row *rows;
	size_t count;
	uint64_t offset;
} run_writer;

struct weft__row_sorter {
	uint64_t budget;
	uint64_t set_budget;  /* memory of one set of rows (half when threaded) */
	char *tmpdir;
	char *arena;          /* the set being filled */
	size_t arena_len, arena_cap;
	mem_row *rows;
	size_t row_count, row_cap;
	char *spare_arena;    /* the other set: being written, or free */
	size_t spare_arena_cap;
	mem_row *spare_rows;
	size_t spare_row_cap;
	run_writer writer;
	int fd;             /* temporary file, -1 before the first run */
	uint64_t file_end;
	run *runs;
	size_t run_count, run_cap;
	weft__row_sort_stats stats;
};

/* ---- Keys -------------------------------------------------------------------- */

/* Flips the bits so that unsigned order is the order of the values. */
uint64_t weft__sort_key_double(double v)
{
	uint64_t bits;
	if (v != v)
		return UINT64_MAX;
	memcpy(&bits, &v, sizeof bits);
	return (bits >> 63) ? ~bits : bits | (1ull << 63);
}

/* ---- Writing runs ----------------------------------------------------------------- */

/*
 * Writes sorted rows as a run of records (u64 key, u32 length, bytes) at
 * `offset`, through a buffer of 1 MiB. Returns 0 or the errno.
 */
static int write_run(int fd, const char *arena, const mem_row *rows, size_t count,
		     uint64_t offset)
{
	size_t cap = 1u << 20, len = 0;
	char *buf = malloc(cap);
	int err = buf == NULL ? ENOMEM : 0;
	for (size_t i = 0; err == 0 && i < count; i++) {
		if (len + RECORD_HEAD + rows[i].len > cap) {
			err = weft__write_full(fd, buf, len, offset, NULL);
			offset += len;
			len = 0;
		}
		memcpy(buf + len, &rows[i].key, 8);
		memcpy(buf + len + 8, &rows[i].len, 4);
		len += RECORD_HEAD;
		if (len + rows[i].len > cap) { /* a row longer than the buffer */
			err = err ? err : weft__write_full(fd, buf, len, offset, NULL);
			offset += len;
			len = 0;
			err = err ? err : weft__write_full(fd, arena + rows[i].offset, rows[i].len, offset, NULL);
			offset += rows[i].len;
			continue;
		}
		memcpy(buf + len, arena + rows[i].offset, rows[i].len);
		len += rows[i].len;
	}
	if (err == 0 && len > 0)
		err = weft__write_full(fd, buf, len, offset, NULL);
	free(buf);
	return err;
}

/* The thread's job: the run it was given. */
static int write_job(void *ctx)
{
	run_writer *w = ctx;
	return write_run(w->fd, w->arena, w->rows, w->count, w->offset);
}

/* Starts the run writer; without a thread, runs are written inline. */
static void start_writer(weft__row_sorter *s)
{
	int threaded = weft__worker_start(&s->writer.worker, write_job, &s->writer);
	s->set_budget = threaded ? s->budget / 2 : s->budget;
}

/* A failed run write, as a library error. */
static int write_failed(int err)
{
	return weft__error(WEFT_EIO, "(sort temporary file)", WEFT_NO_OFFSET,
			   "cannot write a sorted run: %s", strerror(err));
}

/* ---- Creating and adding ------------------------------------------------------ */

int weft__row_sorter_create(uint64_t budget, const char *tmpdir,
			    weft__row_sorter **out)
{
	weft__row_sorter *s = calloc(1, sizeof *s);
	*out = NULL;
	if (s == NULL)
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	s->budget = budget < (64u << 10) ? (64u << 10) : budget > MAX_BUDGET ? MAX_BUDGET : budget;
	s->fd = -1;
	if (tmpdir == NULL || tmpdir[0] == '\0')
		tmpdir = getenv("TMPDIR");
	s->tmpdir = strdup(tmpdir != NULL && tmpdir[0] != '\0' ? tmpdir : "/tmp");
	if (s->tmpdir == NULL) { /* before the writer thread starts: nothing to stop */
		free(s);
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	}
	start_writer(s);
	*out = s;
	return 0;
}

/* Order of rows in memory: key, then order of addition (arena offset). */
static int compare_rows(const void *a, const void *b)
{
	const mem_row *x = a, *y = b;
	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return (x->offset > y->offset) - (x->offset < y->offset);
}

/*
 * Sorts the rows by key, stably (equal keys keep their order of
 * addition), with a least-significant-byte-first radix sort through
 * `tmp` (n rows): eight counting passes at most, a pass skipped when all
 * keys share that byte (the high bytes of times often do). Faster than a
 * comparison sort on the millions of rows of a table.
 */
static void radix_sort(mem_row *rows, mem_row *tmp, size_t n)
{
	mem_row *from = rows, *to = tmp;
	for (unsigned shift = 0; shift < 64; shift += 8) {
		size_t count[256] = { 0 };
		for (size_t i = 0; i < n; i++)
			count[(from[i].key >> shift) & 0xff]++;
		if (n == 0 || count[(from[0].key >> shift) & 0xff] == n)
			continue;
		size_t sum = 0;
		for (int b = 0; b < 256; b++) {
			size_t c = count[b];
			count[b] = sum;
			sum += c;
		}
		for (size_t i = 0; i < n; i++)
			to[count[(from[i].key >> shift) & 0xff]++] = from[i];
		mem_row *t = from;
		from = to;
		to = t;
	}
	if (from != rows)
		memcpy(rows, from, n * sizeof *rows);
}

/* The rows in key order: radix sort, or qsort when no scratch array fits. */
static void sort_rows(weft__row_sorter *s)
{
	mem_row *tmp = malloc((s->row_count ? s->row_count : 1) * sizeof *tmp);
	if (tmp == NULL) {
		qsort(s->rows, s->row_count, sizeof *s->rows, compare_rows);
		return;
	}
	radix_sort(s->rows, tmp, s->row_count);
	free(tmp);
}

/* Creates the unlinked temporary file of the runs. */
static int open_temp_file(weft__row_sorter *s)
{
	char *path = weft__path_join(s->tmpdir, "weft-sort.XXXXXX");
	if (path == NULL)
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	s->fd = mkstemp(path);
	if (s->fd < 0) {
		int rc = weft__error_errno(path, "cannot create a temporary file for sorting");
		free(path);
		return rc;
	}
	unlink(path);
	free(path);
	return 0;
}

/* Appends a run descriptor. */
static int push_run(weft__row_sorter *s, uint64_t offset, uint64_t bytes)
{
	int rc = weft__array_grow((void **)&s->runs, &s->run_cap, s->run_count + 1, sizeof *s->runs);
	if (rc < 0)
		return rc;
	s->runs[s->run_count++] = (run){ offset, bytes };
	s->stats.runs++;
	s->stats.spilled_bytes += bytes;
	return 0;
}

/* Writes one record of a run through the output buffer. */
static void put_record(weft__outbuf *ob, uint64_t key, const char *row, size_t len)
{
	uint32_t n = (uint32_t)len;
	char head[RECORD_HEAD];
	memcpy(head, &key, 8);
	memcpy(head + 8, &n, 4);
	weft__outbuf_put(ob, head, sizeof head);
	weft__outbuf_put(ob, row, len);
}

/*
 * The filled set becomes the thread's job (once the previous job is
 * written), and the other set, written, is filled next. Without the
 * thread the run is written here.
 */
static int hand_over(weft__row_sorter *s, uint64_t offset)
{
	run_writer *w = &s->writer;
	int *error = &w->worker.error;
	if (!w->worker.threaded) {
		*error = *error ? *error : write_run(s->fd, s->arena, s->rows, s->row_count, offset);
		return *error ? write_failed(*error) : 0;
	}
	int err = weft__worker_wait(&w->worker);
	if (err != 0)
		return write_failed(err);
	char *arena = s->arena;
	mem_row *rows = s->rows;
	size_t arena_cap = s->arena_cap, row_cap = s->row_cap;
	weft__worker_claim(&w->worker);
	w->fd = s->fd;
	w->arena = arena;
	w->rows = rows;
	w->count = s->row_count;
	w->offset = offset;
	weft__worker_hand_over(&w->worker, 1);
	s->arena = s->spare_arena;
	s->arena_cap = s->spare_arena_cap;
	s->rows = s->spare_rows;
	s->row_cap = s->spare_row_cap;
	s->spare_arena = arena;
	s->spare_arena_cap = arena_cap;
	s->spare_rows = rows;
	s->spare_row_cap = row_cap;
	return 0;
}

/* Sorts the rows in memory and makes them a run; the set is empty after. */
static int spill(weft__row_sorter *s)
{
	int rc = s->fd < 0 ? open_temp_file(s) : 0;
	if (rc < 0)
		return rc;
	sort_rows(s);
	uint64_t bytes = 0;
	for (size_t i = 0; i < s->row_count; i++)
		bytes += RECORD_HEAD + s->rows[i].len;
	rc = hand_over(s, s->file_end);
	if (rc == 0)
		rc = push_run(s, s->file_end, bytes);
	s->file_end += bytes;
	s->row_count = 0;
	s->arena_len = 0;
	return rc;
}

/* Grows an array to hold `need` bytes, doubling, at most `limit` (or need). */
static int grow_to(void **buf, size_t *cap, size_t need, size_t limit)
{
	if (need <= *cap)
		return 0;
	size_t c = *cap ? *cap : 4096;
	while (c < need)
		c *= 2;
	if (c > limit && limit >= need)
		c = limit;
	void *bigger = realloc(*buf, c);
	if (bigger == NULL)
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET,
				   "out of memory (sorting: %zu bytes)", c);
	*buf = bigger;
	*cap = c;
	return 0;
}

/*
 * Copies a row into memory; when the budget would be exceeded, the rows
 * held so far are sorted and written as a run first.
 */
int weft__row_sorter_add(weft__row_sorter *s, uint64_t key, const char *row, size_t len)
{
	if (len > UINT32_MAX)
		return weft__error(WEFT_EINVAL, NULL, WEFT_NO_OFFSET,
				   "a row of %zu bytes is too long to sort", len);
	uint64_t used = s->arena_len + len + (s->row_count + 1) * sizeof(mem_row);
	int rc = 0;
	if (used > s->set_budget && s->row_count > 0)
		rc = spill(s);
	size_t row_bytes = s->row_cap * sizeof(mem_row);
	if (rc == 0)
		rc = grow_to((void **)&s->arena, &s->arena_cap, s->arena_len + len,
			     (size_t)s->set_budget);
	if (rc == 0 && s->row_count == s->row_cap) {
		rc = grow_to((void **)&s->rows, &row_bytes, row_bytes + sizeof(mem_row),
			     (size_t)s->set_budget / 4);
		s->row_cap = row_bytes / sizeof(mem_row);
	}
	if (rc < 0)
		return rc;
	memcpy(s->arena + s->arena_len, row, len);
	s->rows[s->row_count++] = (mem_row){ key, (uint32_t)s->arena_len, (uint32_t)len };
	s->arena_len += len;
	s->stats.rows++;
	return 0;
}

/* ---- Merging ---------------------------------------------------------------------- */

/* One run being read: a buffer over its bytes and its current record. */
typedef struct run_reader {
	uint64_t pos, end;  /* file range not yet read into the buffer */
	char *buf;
	size_t cap, len, at; /* buffer size, bytes in it, next record */
	uint64_t key;
	const char *row;
	uint32_t row_len;
	uint32_t index;      /* run order: ties go to the earlier run */
} run_reader;

/* Makes `need` bytes from r->at readable (moving and refilling); 0 or < 0. */
static int reader_fill(int fd, run_reader *r, size_t need)
{
	if (r->len - r->at >= need)
		return 0;
	memmove(r->buf, r->buf + r->at, r->len - r->at);
	r->len -= r->at;
	r->at = 0;
	if (need > r->cap) {
		char *bigger = realloc(r->buf, need);
		if (bigger == NULL)
			return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET,
					   "out of memory (a sorted row of %zu bytes)", need);
		r->buf = bigger;
		r->cap = need;
	}
	if (r->len < need) {
		size_t want = r->cap - r->len;
		if (want > r->end - r->pos)
			want = (size_t)(r->end - r->pos);
		int64_t n = weft__read_full(fd, r->buf + r->len, want, r->pos);
		if (n < 0) {
			errno = (int)-n;
			return weft__error_errno("(sort temporary file)", "cannot read");
		}
		r->len += (size_t)n;
		r->pos += (uint64_t)n;
	}
	if (r->len < need)
		return weft__error(WEFT_EIO, "(sort temporary file)", r->pos,
				   "expected a sorted run, the file ends");
	return 0;
}

/* The next record of a run: 1, 0 at the end of the run, or < 0. */
static int reader_next(int fd, run_reader *r)
{
	if (r->pos == r->end && r->at == r->len)
		return 0;
	int rc = reader_fill(fd, r, RECORD_HEAD);
	if (rc < 0)
		return rc;
	memcpy(&r->key, r->buf + r->at, 8);
	memcpy(&r->row_len, r->buf + r->at + 8, 4);
	if ((rc = reader_fill(fd, r, RECORD_HEAD + (size_t)r->row_len)) < 0)
		return rc;
	r->row = r->buf + r->at + RECORD_HEAD;
	r->at += RECORD_HEAD + r->row_len;
	return 1;
}

/* Heap order of the readers: key, then run order. */
static inline int reader_before(const run_reader *a, const run_reader *b)
{
	if (a->key != b->key)
		return a->key < b->key;
	return a->index < b->index;
}

/* Restores the heap below slot i. */
static void sift_down(run_reader **heap, size_t n, size_t i)
{
	run_reader *moving = heap[i];
	for (;;) {
		size_t l = 2 * i + 1;
		if (l >= n)
			break;
		size_t best = l + 1 < n && reader_before(heap[l + 1], heap[l]) ? l + 1 : l;
		if (!reader_before(heap[best], moving))
			break;
		heap[i] = heap[best];
		i = best;
	}
	heap[i] = moving;
}

/* Where merged rows go: the caller's emit, or a new run (ob non-NULL). */
typedef struct merge_sink {
	weft__row_emit_fn emit;
	void *ctx;
	weft__outbuf *ob;
	uint64_t bytes;
} merge_sink;

/* Hands one row to the sink; non-zero to stop. */
static int sink_row(merge_sink *sink, uint64_t key, const char *row, uint32_t len)
{
	if (sink->ob == NULL)
		return sink->emit(sink->ctx, row, len);
	put_record(sink->ob, key, row, len);
	sink->bytes += RECORD_HEAD + len;
	return 0;
}

/* Frees the buffers of `n` readers, and the arrays. */
static void free_readers(run_reader *readers, run_reader **heap, size_t n)
{
	for (size_t i = 0; readers != NULL && i < n; i++)
		free(readers[i].buf);
	free(readers);
	free(heap);
}

/* Opens readers on runs [first, first + n) and heaps them. */
static int start_readers(weft__row_sorter *s, size_t first, size_t n,
			 run_reader *readers, run_reader **heap, size_t *heap_n)
{
	size_t each = (size_t)(s->budget / (n + 1));
	each = each < MIN_RUN_BUFFER ? MIN_RUN_BUFFER : each > MAX_RUN_BUFFER ? MAX_RUN_BUFFER : each;
	*heap_n = 0;
	for (size_t i = 0; i < n; i++) {
		run_reader *r = &readers[i];
		r->pos = s->runs[first + i].offset;
		r->end = r->pos + s->runs[first + i].bytes;
		r->index = (uint32_t)i;
		r->cap = each;
		if ((r->buf = malloc(each)) == NULL)
			return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
		int rc = reader_next(s->fd, r);
		if (rc < 0)
			return rc;
		if (rc == 1)
			heap[(*heap_n)++] = r;
	}
	for (size_t i = *heap_n / 2; i-- > 0;)
		sift_down(heap, *heap_n, i);
	return 0;
}

/* Merges runs [first, first + n) into the sink. */
static int merge_runs(weft__row_sorter *s, size_t first, size_t n, merge_sink *sink)
{
	run_reader *readers = calloc(n ? n : 1, sizeof *readers);
	run_reader **heap = calloc(n ? n : 1, sizeof *heap);
	size_t heap_n = 0;
	int rc = readers != NULL && heap != NULL ? 0 :
		 weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	if (rc == 0)
		rc = start_readers(s, first, n, readers, heap, &heap_n);
	while (rc == 0 && heap_n > 0) {
		run_reader *r = heap[0];
		rc = sink_row(sink, r->key, r->row, r->row_len);
		if (rc != 0)
			break;
		int more = reader_next(s->fd, r);
		if (more < 0) {
			rc = more;
			break;
		}
		if (more == 0)
			heap[0] = heap[--heap_n];
		if (heap_n > 0)
			sift_down(heap, heap_n, 0);
	}
	free_readers(readers, heap, n);
	return rc;
}

/*
 * While there are more runs than can be merged at once, merges them in
 * consecutive groups into new runs at the end of the file (the order of
 * the groups is kept, so the sort stays stable).
 */
static int reduce_runs(weft__row_sorter *s)
{
	while (s->run_count > MAX_FANIN) {
		size_t groups = (s->run_count + MAX_FANIN - 1) / MAX_FANIN;
		run *merged = calloc(groups, sizeof *merged);
		if (merged == NULL)
			return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
		int rc = 0;
		for (size_t g = 0; rc == 0 && g < groups; g++) {
			size_t first = g * MAX_FANIN;
			size_t n = s->run_count - first < MAX_FANIN ? s->run_count - first : MAX_FANIN;
			weft__outbuf ob;
			merge_sink sink = { NULL, NULL, &ob, 0 };
			if ((rc = weft__outbuf_init(&ob, s->fd, 1u << 20)) < 0)
				break;
			rc = merge_runs(s, first, n, &sink);
			int frc = weft__outbuf_flush(&ob);
			weft__outbuf_destroy(&ob);
			rc = rc != 0 ? rc : frc;
			merged[g] = (run){ s->file_end, sink.bytes };
			s->file_end += sink.bytes;
			s->stats.spilled_bytes += sink.bytes;
		}
		if (rc != 0) {
			free(merged);
			return rc;
		}
		memcpy(s->runs, merged, groups * sizeof *merged);
		s->run_count = groups;
		s->stats.merge_passes++;
		free(merged);
	}
	return 0;
}

/* Frees both sets of rows (after the writer stopped). */
static void free_sets(weft__row_sorter *s)
{
	free(s->arena);
	free(s->rows);
	free(s->spare_arena);
	free(s->spare_rows);
	s->arena = s->spare_arena = NULL;
	s->rows = s->spare_rows = NULL;
	s->arena_cap = s->row_cap = s->spare_arena_cap = s->spare_row_cap = 0;
}

/* Rows sorted in memory, straight to emit (nothing was spilled). */
static int emit_in_memory(weft__row_sorter *s, weft__row_emit_fn emit, void *ctx)
{
	sort_rows(s);
	for (size_t i = 0; i < s->row_count; i++) {
		int rc = emit(ctx, s->arena + s->rows[i].offset, (size_t)s->rows[i].len);
		if (rc != 0)
			return rc;
	}
	return 0;
}

/*
 * Everything in memory: sorted there. Else the last rows become a run too,
 * the arena is freed for the merge buffers, and the runs are merged.
 */
int weft__row_sorter_finish(weft__row_sorter *s, weft__row_emit_fn emit, void *ctx)
{
	if (s->run_count == 0)
		return emit_in_memory(s, emit, ctx);
	int rc = s->row_count > 0 ? spill(s) : 0;
	int err = weft__worker_finish(&s->writer.worker);
	if (rc == 0 && err != 0)
		rc = write_failed(err);
	/* Group merges append runs with write(): from the end of the runs. */
	if (rc == 0 && lseek(s->fd, (off_t)s->file_end, SEEK_SET) < 0)
		rc = weft__error_errno("(sort temporary file)", "cannot seek");
	/* The merge buffers take the place of the sets of rows. */
	free_sets(s);
	if (rc == 0)
		rc = reduce_runs(s);
	merge_sink sink = { emit, ctx, NULL, 0 };
	if (rc == 0)
		rc = merge_runs(s, 0, s->run_count, &sink);
	return rc;
}

/* Rows, runs, bytes spilled and merge passes so far. */
void weft__row_sorter_stats(const weft__row_sorter *s, weft__row_sort_stats *out)
{
	*out = s->stats;
}

/* Closes (and so deletes) the temporary file and frees everything. */
void weft__row_sorter_free(weft__row_sorter *s)
{
	if (s == NULL)
		return;
	weft__worker_finish(&s->writer.worker);
	if (s->fd >= 0)
		close(s->fd);
	free_sets(s);
	free(s->runs);
	free(s->tmpdir);
	free(s);
}
