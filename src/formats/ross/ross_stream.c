/* SPDX-License-Identifier: MIT */
/*
 * formats/ross/ross_stream.c - the event readers of a ROSS run:
 *   - file order (what the merged cursor uses: `file_order_default`): a
 *     file read front to back once, every record an event of its stream;
 *     the core merges the files by time;
 *   - one stream: the part of its file between the stream's first and
 *     last record (known from the open scan), keeping its records.
 * Both follow the open scan exactly: they stop where it stopped and jump
 * over the garbage regions it skipped, so they deliver the same records.
 * Memory is one window of the file per reader.
 */
#include <stdlib.h>
#include <string.h>

#include "formats/ross/ross_internal.h"

typedef struct ross_reader {
	const ross_data *d;
	const ross_file *f;
	uint32_t file_index;
	weft_mapfile mf;
	uint64_t offset;       /* next record */
	uint64_t stop;         /* no record starts at or after this offset */
	size_t skip;           /* next skipped region of the file */
	int64_t only_stream;   /* the stream kept, -1 = every stream of the file */
	uint64_t *seq;         /* next stored index per stream of the file */
	/*
	 * The stream that followed each stream of the file last time (index
	 * relative to the file's first stream; UINT32_MAX = none yet), and the
	 * stream of the previous record: every dump of a rank lists its
	 * entities in the same order, so the next record's stream is nearly
	 * always the predicted one, checked with one key comparison instead
	 * of a hash look-up.
	 */
	uint32_t *successor;
	uint32_t previous;
} ross_reader;

/* How far ahead of the record being read its file is prefetched (bytes). */
#define PREFETCH_AHEAD 2048

/* 1 when [offset, offset + len) is in the window: a batch never moves it. */
static int in_window(const weft_mapfile *mf, uint64_t offset, uint64_t len)
{
	return mf->map != NULL && offset >= mf->map_start &&
	       offset + len <= mf->map_start + mf->map_len;
}

/* Jumps over the skipped regions that start at or before the offset. */
static void pass_skips(ross_reader *r)
{
	while (r->skip < r->f->skip_count && r->offset >= r->f->skips[r->skip].from) {
		if (r->offset < r->f->skips[r->skip].to)
			r->offset = r->f->skips[r->skip].to;
		r->skip++;
	}
}

/* Fills the event of a record read at `offset` from bytes `p`. */
static void fill_event(const ross_reader *r, const ross_record *rec, const uint8_t *p,
		       uint64_t offset, weft_event *out)
{
	int clamped = 0;
	/* ROSS never sets the real time of analysis samples (garbage such as
	 * 6e-154): they have none, whatever the bytes say. */
	int untimed = rec->cls == ROSS_REC_ANALYSIS;
	out->time = untimed ? 0 : weft__ross_time_ns(rec->real_time, r->d->time_scale, &clamped);
	out->end = out->time;
	out->offset = offset;
	out->flags = (r->f->parse.big_endian ? WEFT_EVENT_BIG_ENDIAN : 0) |
		     (untimed ? WEFT_EVENT_NO_TIME : 0);
	out->code = weft__ross_class_code(rec->cls);
	out->code_len = weft__ross_class_code_len(rec->cls);
	out->payload = p;
	out->payload_size = rec->fixed;
	out->data = p + rec->fixed;
	out->data_size = rec->data_size;
	out->depth = -1;
	out->parent = -1;
}

/*
 * Parses the record at r->offset without moving the window when a batch
 * has started (returns 2 then: the batch must end first). 1 and *rec,
 * *p on success, < 0 when the file no longer parses as it did.
 */
static int read_record(ross_reader *r, int batch_started, ross_record *rec,
		       const uint8_t **p)
{
	uint64_t left = r->f->valid_end - r->offset;
	uint64_t head = left < ROSS_HEAD_MAX ? left : ROSS_HEAD_MAX;
	if (batch_started && !in_window(&r->mf, r->offset, head))
		return 2;
	const uint8_t *bytes = in_window(&r->mf, r->offset, head) ?
			       r->mf.map + (r->offset - r->mf.map_start) :
			       weft__mapfile_get(&r->mf, r->offset, head);
	if (bytes == NULL)
		return WEFT_EIO;
	/* The hardware prefetcher stops at page boundaries: ask ahead. */
	if (r->offset + PREFETCH_AHEAD < r->mf.map_start + r->mf.map_len)
		__builtin_prefetch(bytes + PREFETCH_AHEAD);
	if (weft__ross_frame(&r->f->parse, bytes, left, rec) != ROSS_PARSE_OK)
		return weft__error(WEFT_EFORMAT, r->f->name, r->offset,
				   "expected the record found when the trace was opened: "
				   "the file changed since");
	if (rec->size > head) {
		if (batch_started && !in_window(&r->mf, r->offset, rec->size))
			return 2;
		if ((bytes = weft__mapfile_get(&r->mf, r->offset, rec->size)) == NULL)
			return WEFT_EIO;
	}
	*p = bytes;
	return 1;
}

/*
 * 1 when the record belongs to stream `s` of this reader's file: the ids
 * its class keys on (those of weft__ross_record_key) are the stream's.
 */
static inline int record_in_stream(const ross_reader *r, const ross_record *rec, uint32_t s)
{
	const ross_key *k = &r->d->streams[s].key;
	if (k->cls != weft__ross_stream_class(rec->cls))
		return 0;
	switch (rec->cls) {
	case ROSS_REC_PE:
		return k->pe == rec->pe;
	case ROSS_REC_KP:
		return k->pe == rec->pe && k->kp == rec->kp;
	case ROSS_REC_EVENT:
		return k->lp == rec->lp;
	default:
		return k->pe == rec->pe && k->kp == rec->kp && k->lp == rec->lp;
	}
}

/*
 * The stream of a record: the predicted successor of the previous
 * record's stream when it matches, else the hash look-up (which then
 * becomes the prediction). -1 for a record of no stream (past the
 * stream limit).
 */
static int64_t stream_of(ross_reader *r, const ross_record *rec)
{
	uint32_t first = r->f->first_stream;
	uint32_t *slot = r->previous < r->f->stream_count ? &r->successor[r->previous] : NULL;
	if (slot != NULL && *slot != UINT32_MAX && record_in_stream(r, rec, first + *slot)) {
		r->previous = *slot;
		return first + *slot;
	}
	ross_key key = weft__ross_record_key(r->file_index, rec);
	int64_t stream = weft__ross_stream_lookup(r->d, &key);
	if (stream < first || stream >= (int64_t)first + r->f->stream_count)
		return stream < 0 ? -1 : stream;
	if (slot != NULL)
		*slot = (uint32_t)(stream - first);
	r->previous = (uint32_t)(stream - first);
	return stream;
}

/*
 * The next record the reader delivers: 1 and *out, 0 at the end, 2 when
 * the batch must end first (window move), or < 0.
 */
static int reader_next(ross_reader *r, weft_event *out, int batch_started)
{
	for (;;) {
		pass_skips(r);
		if (r->offset >= r->stop || r->offset >= r->f->valid_end)
			return 0;
		ross_record rec;
		const uint8_t *p = NULL;
		int rc = read_record(r, batch_started, &rec, &p);
		if (rc != 1)
			return rc;
		uint64_t offset = r->offset;
		r->offset += rec.size;
		int64_t stream = stream_of(r, &rec);
		if (stream < 0 || (r->only_stream >= 0 && stream != r->only_stream))
			continue; /* another stream, or beyond the stream limit */
		fill_event(r, &rec, p, offset, out);
		out->stream = (uint32_t)stream;
		out->seq = r->seq[r->only_stream >= 0 ? 0 : (uint32_t)stream - r->f->first_stream]++;
		return 1;
	}
}

/* A reader of file `file` with its own window; reads all of it. */
static int reader_create(weft_trace *trace, size_t file, uint64_t window, size_t seqs,
			 ross_reader **out)
{
	const ross_data *d = trace->backend_data;
	if (file >= d->file_count)
		return weft__error(WEFT_EINVAL, trace->path, WEFT_NO_OFFSET,
				   "no ROSS file %zu (the run has %zu)", file, d->file_count);
	ross_reader *r = calloc(1, sizeof *r);
	if (r == NULL)
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	r->d = d;
	r->f = &d->files[file];
	r->file_index = (uint32_t)file;
	r->only_stream = -1;
	r->stop = r->f->valid_end;
	r->seq = calloc(seqs ? seqs : 1, sizeof *r->seq);
	r->successor = malloc((r->f->stream_count ? r->f->stream_count : 1) * sizeof *r->successor);
	r->previous = UINT32_MAX;
	for (uint32_t i = 0; r->successor != NULL && i < r->f->stream_count; i++)
		r->successor[i] = UINT32_MAX;
	r->mf.fd = -1;
	int rc = r->seq == NULL || r->successor == NULL ?
		 weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory") :
		 !r->f->readable ? 0 : /* left out at open: nothing to read */
		 weft__mapfile_open(&r->mf, r->f->path, r->f->name, window);
	weft__mapfile_count(&r->mf, trace);
	if (rc < 0) {
		free(r->seq);
		free(r->successor);
		free(r);
		return rc;
	}
	if (r->f->readable && r->mf.size < r->f->valid_end) {
		weft__ross_stream_close(r);
		return weft__error(WEFT_EFORMAT, d->files[file].name, WEFT_NO_OFFSET,
				   "expected the %llu bytes read when the trace was opened: "
				   "the file changed since",
				   (unsigned long long)d->files[file].valid_end);
	}
	*out = r;
	return 0;
}

/* One file reader per data file of the run (the merged cursor's slots). */
size_t weft__ross_file_count(const weft_trace *trace)
{
	const ross_data *d = trace->backend_data;
	return d->file_count;
}

/* The file that holds a stream. */
size_t weft__ross_stream_file(const weft_trace *trace, uint32_t stream)
{
	const ross_data *d = trace->backend_data;
	return stream < d->stream_count ? d->streams[stream].key.file : 0;
}

/* A reader of every record of one file, in file order. */
int weft__ross_file_open(weft_trace *trace, size_t file, void **state)
{
	const ross_data *d = trace->backend_data;
	ross_reader *r;
	size_t seqs = file < d->file_count ? d->files[file].stream_count : 0;
	int rc = reader_create(trace, file, d->file_window, seqs, &r);
	if (rc < 0)
		return rc;
	*state = r;
	return 0;
}

/*
 * A reader of piece `piece` of `pieces` of a file: the records from one of
 * the file's cuts up to another. On ranks (ross_share.c), `pieces` is
 * theirs and the piece is cut `piece`; alone, a thread's piece is a run
 * of the grid's pieces, piece k beginning at cut k * grid / pieces. The
 * stored index of its events counts from the piece's start (the analyses
 * that read pieces do not use it).
 */
int weft__ross_piece_open(weft_trace *trace, size_t file, size_t piece, size_t pieces,
			  void **state)
{
	const ross_data *d = trace->backend_data;
	size_t grid = (size_t)d->grid;
	if (file >= d->file_count || d->files[file].cuts == NULL || piece >= pieces ||
	    pieces > grid || (d->parts > 1 && pieces != grid))
		return weft__error(WEFT_EINVAL, trace->path, WEFT_NO_OFFSET,
				   "no piece %zu of %zu of ROSS file %zu (a bug)", piece, pieces,
				   file);
	ross_reader *r;
	int rc = weft__ross_file_open(trace, file, (void **)&r);
	if (rc < 0)
		return rc;
	r->offset = r->f->cuts[piece * grid / pieces];
	r->stop = r->f->cuts[(piece + 1) * grid / pieces];
	while (r->skip < r->f->skip_count && r->f->skips[r->skip].to <= r->offset)
		r->skip++;
	*state = r;
	return 0;
}

/*
 * A reader of one stream: its file between the stream's first and last
 * records, other streams' records skipped.
 */
int weft__ross_stream_open(weft_trace *trace, uint32_t stream, int stored,
			   void **state)
{
	const ross_data *d = trace->backend_data;
	ross_reader *r;
	if (stream >= d->stream_count)
		return weft__error(WEFT_EINVAL, trace->path, WEFT_NO_OFFSET,
				   "no stream %u (the trace has %zu)", stream, d->stream_count);
	const ross_stream *st = &d->streams[stream];
	int rc = reader_create(trace, st->key.file, d->window, 1, &r);
	if (rc < 0)
		return rc;
	r->only_stream = stream;
	r->offset = st->first_offset;
	r->stop = st->records > 0 ? st->last_offset + 1 : 0;
	while (r->skip < r->f->skip_count && r->f->skips[r->skip].to <= r->offset)
		r->skip++;
	*state = r;
	return 0;
}

/* One event at a time. */
int weft__ross_stream_next(void *state, weft_event *event)
{
	return reader_next(state, event, 0);
}

/*
 * Up to `cap` events that stay valid together: a batch ends where the
 * window would move. A failure after some events ends the batch; the
 * next call meets it again and reports it.
 */
int weft__ross_stream_next_batch(void *state, weft_event *events, size_t cap)
{
	size_t n = 0;
	while (n < cap) {
		int rc = reader_next(state, &events[n], n > 0);
		if (rc < 0 && n == 0)
			return rc;
		if (rc != 1)
			break;
		n++;
	}
	return (int)n;
}

/* Unmaps the window and frees the reader. */
void weft__ross_stream_close(void *state)
{
	ross_reader *r = state;
	if (r == NULL)
		return;
	weft__mapfile_close(&r->mf);
	free(r->seq);
	free(r->successor);
	free(r);
}
