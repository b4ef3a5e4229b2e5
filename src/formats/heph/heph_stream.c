/* SPDX-License-Identifier: MIT */
/*
 * formats/heph/heph_stream.c - the event readers of a Heph trace:
 *   - time order (the default): one stream by start time, through the
 *     index of heph_index.c, with the call tree rebuilt on the way (depth
 *     and parent of each event);
 *   - stored order, one stream: the file read front to back, keeping the
 *     packets of that stream;
 *   - file order, every stream: the file read front to back once (what
 *     the merged cursor uses for a trace opened in stored order).
 * The sequential readers follow the epoch packets as they meet them; the
 * index already holds absolute times.
 */
#include <stdlib.h>
#include <string.h>

#include "formats/heph/heph_internal.h"

/* The smallest window of a time-order reader. */
#define MIN_STREAM_WINDOW (64u << 10)

/* An open ancestor in the call tree: its end and stored position. */
typedef struct tree_frame {
	uint64_t end;
	uint64_t seq;
} tree_frame;

typedef struct heph_reader {
	heph_data *d;
	weft_mapfile mf;
	int time_order;
	int64_t only_stream;      /* sequential: the stream kept, -1 = all */
	uint64_t offset;          /* sequential: next packet */
	uint64_t epoch;
	uint64_t *seq;            /* sequential: next stored position per stream */
	size_t next_bad;          /* sequential: position in d->bad_offsets */
	heph_index_reader *index;
	tree_frame *stack;        /* time order: the open ancestors */
	size_t depth, stack_cap;
} heph_reader;

/* Fills the parts of an event that come from its packet. */
static void event_from_packet(const heph_event_packet *ev, uint64_t offset,
			      weft_event *out)
{
	out->offset = offset;
	out->flags = WEFT_EVENT_INTERVAL | WEFT_EVENT_BIG_ENDIAN;
	out->code = (const char *)ev->desc;
	out->code_len = ev->desc_len;
	out->payload = ev->attrs;
	out->payload_size = ev->attrs_size;
	out->data = NULL;
	out->data_size = 0;
}

/* ---- Sequential readers ---------------------------------------------------------- */

/*
 * 1 when [offset, offset + len) is inside the current mapping: a batch
 * stops before a packet that would move the window, since moving it would
 * invalidate the events already in the batch.
 */
static int in_window(const weft_mapfile *mf, uint64_t offset, uint64_t len)
{
	return mf->map != NULL && offset >= mf->map_start &&
	       offset + len <= mf->map_start + mf->map_len;
}

/*
 * 1 when the packet at r->offset (header and body) can be framed without
 * moving the window. Framing maps the whole packet, so the check must
 * come first: its size is read from the header, which is in the window.
 */
static int packet_in_window(const heph_reader *r)
{
	if (!in_window(&r->mf, r->offset, HEPH_FRAME_SIZE))
		return 0;
	const uint8_t *header = r->mf.map + (r->offset - r->mf.map_start);
	return in_window(&r->mf, r->offset, heph_be32(header + 4));
}

/*
 * Next packet of the sequential reader that it delivers: 1 and *out,
 * 0 at the end, or 2 when the batch must end first (window move).
 */
static int sequential_next(heph_reader *r, weft_event *out, int batch_started)
{
	for (;;) {
		const uint8_t *p;
		uint32_t size;
		heph_frame_status st;
		/* Fast path: an event packet whole inside the current mapping,
		 * framed inline (the packets it declines go through
		 * weft__heph_frame()). */
		if (heph_frame_fast(&r->mf, r->offset, r->d->valid_end, &p, &size)) {
			st = HEPH_FRAME_EVENT;
			heph_prefetch(&r->mf, r->offset);
			goto framed;
		}
		if (batch_started && r->offset < r->d->valid_end && !packet_in_window(r))
			return 2;
		st = weft__heph_frame(&r->mf, r->offset, r->d->valid_end, &p, &size);
		heph_prefetch(&r->mf, r->offset);
		if (st == HEPH_FRAME_END)
			return 0;
		if (st < 0)
			return weft__error(WEFT_EFORMAT, r->d->name, r->offset,
					   "the trace file changed since it was opened");
		if (batch_started && !in_window(&r->mf, r->offset, size))
			return 2;
	framed:;
		uint64_t offset = r->offset;
		r->offset += size;
		if (st == HEPH_FRAME_META) {
			const uint8_t *name;
			uint16_t len;
			uint64_t epoch;
			if (weft__heph_parse_meta(p, size, r->d->name, offset, &epoch, &name,
						  &len) == 1)
				r->epoch = epoch;
			continue;
		}
		heph_event_packet ev;
		uint64_t start, end;
		if (heph_read_event_inline(r->d, &r->next_bad, p, size, offset, &ev) < 0 ||
		    weft__heph_event_times(&ev, r->epoch, r->d->name, offset, &start, &end) < 0)
			continue; /* reported when the trace was opened */
		int64_t stream = weft__heph_stream_lookup(r->d, ev.stream_id, ev.substream);
		if (stream < 0 || (r->only_stream >= 0 && stream != r->only_stream))
			continue;
		event_from_packet(&ev, offset, out);
		out->time = start;
		out->end = end;
		out->stream = (uint32_t)stream;
		out->seq = r->seq[r->only_stream >= 0 ? 0 : stream]++;
		out->depth = -1;
		out->parent = -1;
		return 1;
	}
}

/* ---- Time-order reader ---------------------------------------------------------------- */

/*
 * Places the event in the call tree: ancestors that end before it ends
 * are closed (the index order guarantees they started no later), the
 * innermost open one is its parent.
 */
static int tree_place(heph_reader *r, const heph_entry *e, weft_event *out)
{
	while (r->depth > 0 && r->stack[r->depth - 1].end < e->end)
		r->depth--;
	out->depth = (int32_t)(r->depth < INT32_MAX ? r->depth : INT32_MAX);
	out->parent = r->depth > 0 ? (int64_t)r->stack[r->depth - 1].seq : -1;
	if (r->depth == r->stack_cap &&
	    weft__array_grow((void **)&r->stack, &r->stack_cap, r->depth + 1, sizeof *r->stack) < 0)
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET,
				   "out of memory for a call tree %zu deep", r->depth);
	r->stack[r->depth++] = (tree_frame){ e->end, e->seq };
	return 0;
}

/* Next event by start time: its index entry, then its packet. */
static int time_order_next(heph_reader *r, weft_event *out)
{
	heph_entry e;
	const uint8_t *p;
	uint32_t size;
	heph_event_packet ev;
	int rc = weft__heph_index_reader_next(r->index, &e);
	if (rc <= 0)
		return rc;
	heph_frame_status st = weft__heph_frame(&r->mf, e.offset, r->d->valid_end, &p, &size);
	/* The index holds only packets the scan accepted. */
	if (st != HEPH_FRAME_EVENT ||
	    weft__heph_decode_event(p, size, r->d->name, e.offset, &ev) < 0)
		return weft__error(WEFT_EFORMAT, r->d->name, e.offset,
				   "the trace file changed since it was opened");
	event_from_packet(&ev, e.offset, out);
	out->time = e.start;
	out->end = e.end;
	out->stream = (uint32_t)r->only_stream;
	out->seq = e.seq;
	rc = tree_place(r, &e, out);
	return rc < 0 ? rc : 1;
}

/* ---- Entry points ----------------------------------------------------------------------- */

/*
 * A reader with its own window of `window` bytes on the file (the
 * file-order reader's one pass front to back takes a small one).
 */
static int reader_create(weft_trace *trace, uint64_t window, heph_reader **out)
{
	heph_data *d = trace->backend_data;
	heph_reader *r = calloc(1, sizeof *r);
	if (r == NULL)
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	r->d = d;
	r->only_stream = -1;
	r->seq = calloc(d->stream_count ? d->stream_count : 1, sizeof *r->seq);
	int rc = r->seq == NULL ? weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory") :
		 weft__mapfile_open(&r->mf, d->file, d->name, window);
	weft__mapfile_count(&r->mf, trace);
	if (rc < 0) {
		free(r->seq);
		free(r);
		return rc;
	}
	*out = r;
	return 0;
}

/* The index, built on the first time-ordered read of the trace (by one
 * thread of those that borrow it: the others wait, then share it). */
static int ensure_index(weft_trace *trace, heph_data *d)
{
	int rc = 0;
	pthread_mutex_lock(&d->index_lock);
	if (d->index == NULL && !d->index_failed) {
		/* a stage of its own: a pass over the whole file before the first event */
		const char *outer = weft__progress_stage_begin(trace, "indexing");
		rc = weft__heph_index_build(d, trace, &d->index);
		weft__progress_stage_end(trace, outer);
		d->index_failed = rc < 0;
	} else if (d->index == NULL) {
		rc = weft__error(WEFT_EIO, d->name, WEFT_NO_OFFSET,
				 "the time-order index could not be built");
	}
	pthread_mutex_unlock(&d->index_lock);
	return rc;
}

int weft__heph_stream_open(weft_trace *trace, uint32_t stream, int stored,
			   void **state)
{
	heph_data *d = trace->backend_data;
	heph_reader *r = NULL;
	uint64_t window = d->window / (d->stream_count ? d->stream_count : 1);
	if (window < MIN_STREAM_WINDOW)
		window = MIN_STREAM_WINDOW;
	if (window > HEPH_WINDOW)
		window = HEPH_WINDOW;
	int rc = stored ? 0 : ensure_index(trace, d);
	if (rc == 0)
		rc = reader_create(trace, window, &r);
	if (rc < 0)
		return rc;
	r->only_stream = stream;
	r->time_order = !stored;
	if (r->time_order && (rc = weft__heph_index_reader_open(d->index, stream, &r->index)) < 0) {
		weft__heph_stream_close(r);
		return rc;
	}
	*state = r;
	return 0;
}

int weft__heph_file_open(weft_trace *trace, size_t file, void **state)
{
	(void)file; /* a Heph trace is one file */
	heph_reader *r = NULL;
	int rc = reader_create(trace, HEPH_COPY_WINDOW, &r);
	if (rc < 0)
		return rc;
	*state = r;
	return 0;
}

int weft__heph_stream_next(void *state, weft_event *event)
{
	heph_reader *r = state;
	if (r->time_order)
		return time_order_next(r, event);
	return sequential_next(r, event, 0);
}

/*
 * Up to `cap` events that stay valid together: the sequential readers stop
 * a batch where the window would move; the time-order reader, which jumps
 * around the file, delivers one event per call.
 */
int weft__heph_stream_next_batch(void *state, weft_event *events, size_t cap)
{
	heph_reader *r = state;
	if (r->time_order)
		return time_order_next(r, events);
	size_t n = 0;
	while (n < cap) {
		int rc = sequential_next(r, &events[n], n > 0);
		if (rc < 0)
			return rc;
		if (rc != 1)
			break;
		n++;
	}
	return (int)n;
}

void weft__heph_stream_close(void *state)
{
	heph_reader *r = state;
	if (r == NULL)
		return;
	weft__mapfile_close(&r->mf);
	weft__heph_index_reader_free(r->index);
	free(r->seq);
	free(r->stack);
	free(r);
}
