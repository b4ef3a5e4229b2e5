/* SPDX-License-Identifier: MIT */
/*
 * formats/ovni/ovni_stream.c - reading the events of one binary stream.
 *
 * The stream is seen through a sliding window (core/mapfile.c), so
 * a reader holds at most a window of the file whatever its size; events
 * are delivered pointing into the window, without copies.
 *
 * Unordered regions (OU[ .. OU]) hold events whose clocks may go back in
 * time, also before the OU[ itself. Unless stored order is asked, the
 * reader delivers them in the order ovnisort writes (docs/ovni.md): it
 * scans ahead of what it delivers by `lookback` bytes; when the scan meets
 * an OU[, every event from the delivery point to the matching OU] is
 * indexed and the region sorted there as ovnisort sorts it, and the next
 * regions join the block as long as their sort would reach back into it.
 * So a region may move events back by at most `lookback` bytes of the
 * stream (and not past a delivered block), and a block holds at most
 * `max_region_events` events: the memory bound is that index (24 bytes an
 * event) plus the span of the block held in the window.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/ovni/ovni_reader.h"

int weft__ovni_header_order(const unsigned char *h, size_t len, int *big_endian)
{
	if (h == NULL || len < OVNI_STREAM_HEADER_SIZE || memcmp(h, OVNI_STREAM_MAGIC, 4) != 0)
		return -1;
	uint32_t version = ovni_load32(h + 4, 0);
	/* big-endian: written on a machine of the other byte order */
	*big_endian = version != OVNI_STREAM_VERSION;
	return version == OVNI_STREAM_VERSION ||
	       weft__bswap32(version) == OVNI_STREAM_VERSION ? 0 : -1;
}

/* weft__ovni_header_order() of the file's header, saying what is wrong. */
int weft__ovni_read_header(weft_mapfile *mf, int *big_endian)
{
	const unsigned char *h = weft__mapfile_get(mf, 0, OVNI_STREAM_HEADER_SIZE);
	if (h == NULL)
		return weft__error(WEFT_ETRUNCATED, mf->name, 0,
				   "expected the 8-byte stream header (\"ovni\" + "
				   "version), the file has %llu bytes",
				   (unsigned long long)mf->size);
	if (weft__ovni_header_order(h, OVNI_STREAM_HEADER_SIZE, big_endian) == 0)
		return 0;
	if (memcmp(h, OVNI_STREAM_MAGIC, 4) != 0)
		return weft__error(WEFT_EFORMAT, mf->name, 0,
				   "expected the magic \"ovni\", found %02x %02x %02x %02x",
				   h[0], h[1], h[2], h[3]);
	return weft__error(WEFT_EUNSUPPORTED, mf->name, 4,
			   "expected stream version 1, found %u", ovni_load32(h + 4, 0));
}

int weft__ovni_event_size(const unsigned char *p, uint64_t avail,
			  int big_endian, const char *name, uint64_t offset,
			  uint64_t *size)
{
	unsigned flags = p[0];
	*size = 0; /* on errors too: the compiler cannot see that they are < 0 */
	if (flags & OVNI_FLAG_RESERVED)
		return weft__error(WEFT_EFORMAT, name, offset,
				   "expected an event header, found flags 0x%02x with "
				   "reserved bits 0x%02x set", flags,
				   flags & OVNI_FLAG_RESERVED);
	for (int i = 1; i <= 3; i++)
		if (p[i] < 0x20 || p[i] > 0x7e)
			return weft__error(WEFT_EFORMAT, name, offset,
					   "expected a printable MCV, found bytes "
					   "%02x %02x %02x (garbage?)", p[1], p[2], p[3]);
	unsigned code = flags & OVNI_SIZE_MASK;
	uint64_t payload = code ? code + 1u : 0u;
	uint64_t total = OVNI_EVENT_HEADER_SIZE + payload;
	if (flags & OVNI_FLAG_JUMBO) {
		if (payload != 4)
			return weft__error(WEFT_EFORMAT, name, offset,
					   "jumbo event %c%c%c: expected a 4-byte payload "
					   "(size code 3), found size code %u",
					   p[1], p[2], p[3], code);
		if (avail < total)
			goto truncated;
		total += ovni_load32(p + OVNI_EVENT_HEADER_SIZE, big_endian);
	}
	if (avail < total)
		goto truncated;
	*size = total;
	return 0;
truncated:
	return weft__error(WEFT_ETRUNCATED, name, offset,
			   "event %c%c%c needs %llu bytes, only %llu left in the file",
			   p[1], p[2], p[3], (unsigned long long)total,
			   (unsigned long long)avail);
}

int weft__ovni_stream_open(weft_trace *trace, uint32_t stream, int stored,
			   void **state)
{
	ovni_data *data = trace->backend_data;
	const weft_stream_info *info = &trace->streams[stream];
	ovni_reader *r = calloc(1, sizeof *r);
	if (r == NULL)
		return weft__error(WEFT_ENOMEM, info->file, WEFT_NO_OFFSET, "out of memory");
	r->trace = trace;
	r->data = data;
	r->stream = stream;
	r->name = info->file;
	r->finished = info->finished;
	r->clock_offset = info->clock_offset;
	r->scan = !stored;
	r->lookback = data->lookback;
	r->max_region_events = data->max_region_events;
	int rc = weft__mapfile_open(&r->mf, data->streams[stream].abs_file,
				    info->file, data->window);
	weft__mapfile_count(&r->mf, trace);
	if (rc == 0)
		rc = weft__ovni_read_header(&r->mf, &r->big_endian);
	if (rc < 0) {
		weft__mapfile_close(&r->mf);
		free(r);
		return rc;
	}
	r->pos = OVNI_STREAM_HEADER_SIZE;
	r->scan_pos = r->pos;
	(void)weft__ovni_signature_index((const unsigned char *)"OHx"); /* builds the table */
	*state = r;
	return 0;
}

void weft__ovni_stream_close(void *state)
{
	ovni_reader *r = state;
	if (r == NULL)
		return;
	weft__mapfile_close(&r->mf);
	free(r->index);
	free(r->notes);
	free(r);
}

/* Events in a row that show that events go on after a cut one. */
#define RESUME_RUN 3

/* What events_resume() looks for: events from this clock on. */
typedef struct resume_probe {
	ovni_reader *r;
	uint64_t clock;
} resume_probe;

/*
 * weft__start_probe of ovni: RESUME_RUN events frame one after the other
 * from `at` (or fewer that end the file exactly), with clocks that do not
 * go back from the cut event's.
 */
static int resume_probe_at(void *ctx, weft_mapfile *mf, uint64_t at, const unsigned char *p)
{
	const resume_probe *rp = ctx;
	uint64_t clock = rp->clock, size;
	if ((p[0] & OVNI_FLAG_RESERVED) || (unsigned)(p[1] - 0x20) > 0x5e)
		return 0; /* (most bytes: no event header) */
	for (int k = 0; k < RESUME_RUN && at < mf->size; k++) {
		uint64_t avail = mf->size - at;
		uint64_t head = OVNI_EVENT_HEADER_SIZE + (avail > OVNI_EVENT_HEADER_SIZE ? 4 : 0);
		if (avail < head || (p = weft__mapfile_get(mf, at, head)) == NULL ||
		    weft__ovni_event_size(p, avail, rp->r->big_endian, NULL, at, &size) < 0 ||
		    ovni_load64(p + 4, rp->r->big_endian) < clock)
			return 0;
		clock = ovni_load64(p + 4, rp->r->big_endian);
		at += size;
	}
	return 1;
}

/*
 * After the event at `offset` that the end of the file cuts: 1 and *at
 * when events start again after its header, for then its size is wrong
 * and more than the last event is lost.
 */
static int events_resume(ovni_reader *r, uint64_t offset, uint64_t *at)
{
	const unsigned char *h = weft__mapfile_get(&r->mf, offset, OVNI_EVENT_HEADER_SIZE);
	if (h == NULL)
		return 0;
	resume_probe rp = { r, ovni_load64(h + 4, r->big_endian) };
	return weft__find_forward(&r->mf, offset + OVNI_EVENT_HEADER_SIZE, r->mf.size,
				  OVNI_EVENT_HEADER_SIZE, resume_probe_at, &rp, at);
}

/*
 * Handles a stream that cannot go on at r->pos: a truncated last event is
 * expected in a stream that was not closed (a warning; everything before
 * it is valid), an error otherwise, or when events go on after it (its
 * size is wrong). Either way the stream ends here.
 */
static int reader_stop(ovni_reader *r, int rc)
{
	r->ended = 1;
	if (rc == WEFT_ETRUNCATED && r->finished != 1) {
		char text[512];
		uint64_t offset = weft__error_offset(), at;
		snprintf(text, sizeof text, "%s", weft__error_text());
		if (offset < r->mf.size && r->mf.size - offset > OVNI_EVENT_HEADER_SIZE &&
		    events_resume(r, offset, &at)) {
			weft__trace_diag(r->trace, WEFT_SEV_ERROR, WEFT_EFORMAT, r->name, offset,
					 "%s, but events start again at byte %llu: its size is "
					 "wrong and the %llu bytes to the end are lost (the stream "
					 "ends at its last complete event)", text,
					 (unsigned long long)at,
					 (unsigned long long)(r->mf.size - offset));
			return 0;
		}
		weft__error(rc, r->name, offset, "%s", text);
	}
	if (rc == WEFT_ETRUNCATED) {
		int severity = r->finished == 1 ? WEFT_SEV_ERROR : WEFT_SEV_WARNING;
		weft__trace_diag_last_error(r->trace, severity, rc, r->finished == 1 ?
					    "; the stream ends at its last complete event" :
					    "; the stream was not closed: it ends at its "
					    "last complete event");
		return 0;
	}
	return rc;
}

/*
 * An event whose flags are not those of its signature: a note, once per
 * event kind and trace, when it holds more than the signature names (the
 * decoder keeps the rest as raw bytes); a payload too short is left to
 * weft_event_fields(), which reports it. The reader notes the first of
 * its stream; the trace keeps the one of the lowest stream (a once-note:
 * the same whatever order, threads or ranks read the streams in).
 */
static void note_layout(ovni_reader *r, int i, const unsigned char *p, uint64_t offset,
			uint64_t size)
{
	uint64_t *noted = &r->layout_noted[i / 64];
	uint64_t bit = 1ull << (i % 64);
	if (*noted & bit)
		return;
	unsigned code = p[0] & OVNI_SIZE_MASK;
	uint64_t bytes = (p[0] & OVNI_FLAG_JUMBO) ? size - OVNI_EVENT_HEADER_SIZE - 4 :
			 (code ? code + 1u : 0u);
	char msg[512], key[32];
	if (weft__ovni_layout_differs(i, p[0], bytes, msg, sizeof msg) <= 0)
		return;
	*noted |= bit;
	snprintf(key, sizeof key, "ovni.layout.%d", i);
	weft__trace_diag_once(r->trace, key, r->stream, WEFT_SEV_NOTE, WEFT_EFORMAT, r->name,
			      offset, "%s", msg);
}

/*
 * The cheap part of the layout check: one table load, one compare (the
 * MCV is printable: the reader checked it). Unknown MCVs (entry 0) are
 * never looked at.
 */
static inline void check_layout(ovni_reader *r, const unsigned char *p, uint64_t offset,
				uint64_t size)
{
	unsigned e = ovni_signature_entry(p + 1);
	if (WEFT_UNLIKELY(e != 0 && (e >> OVNI_SIG_INDEX_BITS) != p[0]))
		note_layout(r, (int)(e & OVNI_SIG_INDEX_MASK) - 1, p, offset, size);
}

/* Parses the event at `offset` (whose size is known valid) into ev. */
static void fill_event(ovni_reader *r, const unsigned char *p, uint64_t offset,
		       uint64_t size, uint64_t seq, weft_event *ev)
{
	uint64_t clock = ovni_load64(p + 4, r->big_endian);
	unsigned code = p[0] & OVNI_SIZE_MASK;
	check_layout(r, p, offset, size);
	ev->time = clock + (uint64_t)r->clock_offset;
	ev->end = ev->time;
	ev->offset = offset;
	ev->seq = seq;
	ev->stream = r->stream;
	ev->flags = r->big_endian ? WEFT_EVENT_BIG_ENDIAN : 0;
	ev->code = (const char *)p + 1;
	ev->code_len = 3;
	ev->payload_size = code ? code + 1u : 0u;
	ev->payload = p + OVNI_EVENT_HEADER_SIZE;
	ev->depth = -1;
	ev->parent = -1;
	if (p[0] & OVNI_FLAG_JUMBO) {
		ev->flags |= WEFT_EVENT_JUMBO;
		ev->data = p + OVNI_EVENT_HEADER_SIZE + 4;
		ev->data_size = size - OVNI_EVENT_HEADER_SIZE - 4;
	} else {
		ev->data = NULL;
		ev->data_size = 0;
	}
}

/*
 * The fast path of reading: when the event at `offset` lies wholly inside
 * the window and its header is sane, return it without calling
 * into the window code (most events). NULL means "take the slow path",
 * which also validates and reports everything the fast path rejects.
 */
static inline const unsigned char *peek_event(const ovni_reader *r, uint64_t offset,
					       uint64_t *size)
{
	const weft_mapfile *mf = &r->mf;
	if (offset < mf->map_start)
		return NULL;
	uint64_t rel = offset - mf->map_start;
	if (rel + OVNI_EVENT_HEADER_SIZE + 4 > mf->map_len)
		return NULL; /* near the window's end: let the slow path decide */
	const unsigned char *p = mf->map + rel;
	unsigned flags = p[0];
	unsigned code = flags & OVNI_SIZE_MASK;
	uint64_t total = OVNI_EVENT_HEADER_SIZE + (code ? code + 1u : 0u);
	if (flags & OVNI_FLAG_RESERVED)
		return NULL;
	if (flags & OVNI_FLAG_JUMBO) {
		if (code != 3)
			return NULL;
		total += ovni_load32(p + OVNI_EVENT_HEADER_SIZE, r->big_endian);
	}
	if (rel + total > mf->map_len ||
	    (unsigned)(p[1] - 0x20) > 0x5e || (unsigned)(p[2] - 0x20) > 0x5e ||
	    (unsigned)(p[3] - 0x20) > 0x5e)
		return NULL;
	*size = total;
	return p;
}

/*
 * Maps the event at `offset` and validates its size: sets *event and
 * *size, or returns a WEFT_E* code with the error set.
 */
int weft__ovni_map_event(ovni_reader *r, uint64_t offset,
			 const unsigned char **event, uint64_t *size)
{
	const unsigned char *fast = peek_event(r, offset, size);
	if (WEFT_LIKELY(fast != NULL)) {
		*event = fast;
		return 0;
	}
	uint64_t avail = r->mf.size - offset;
	if (avail < OVNI_EVENT_HEADER_SIZE)
		return weft__error(WEFT_ETRUNCATED, r->name, offset,
				   "expected a 12-byte event header, only %llu "
				   "bytes left", (unsigned long long)avail);
	/* The header and, for jumbo events, the 4-byte size after it. */
	uint64_t head = avail >= OVNI_EVENT_HEADER_SIZE + 4 ?
			OVNI_EVENT_HEADER_SIZE + 4 : OVNI_EVENT_HEADER_SIZE;
	const unsigned char *p = weft__mapfile_get(&r->mf, offset, head);
	if (p == NULL)
		return WEFT_EIO;
	int rc = weft__ovni_event_size(p, avail, r->big_endian, r->name, offset, size);
	if (rc < 0)
		return rc;
	if (*size > head && (p = weft__mapfile_get(&r->mf, offset, *size)) == NULL)
		return WEFT_EIO;
	*event = p;
	return 0;
}

/*
 * Advances the scan-ahead position up to `lookback` bytes past r->pos.
 * Returns the offset of an OU[ met on the way, UINT64_MAX when none.
 */
static uint64_t scan_ahead(ovni_reader *r)
{
	uint64_t limit = r->pos + r->lookback;
	while (r->scan_pos < limit && r->scan_pos < r->mf.size) {
		uint64_t size = 0;
		const unsigned char *p = NULL; /* set when map_event succeeds */
		if (weft__ovni_map_event(r, r->scan_pos, &p, &size) < 0) {
			r->scan_pos = r->mf.size; /* delivery reports it */
			break;
		}
		uint64_t at = r->scan_pos;
		r->scan_pos += size;
		if (ovni_mcv_is(p + 1, "OU["))
			return at;
	}
	return UINT64_MAX;
}

/* Records a clock that goes back outside unordered regions (once). */
static void check_clock(ovni_reader *r, const weft_event *ev)
{
	if (ev->time < r->last_clock && !r->backwards_reported) {
		r->backwards_reported = 1;
		weft__trace_diag(r->trace, WEFT_SEV_WARNING, WEFT_EFORMAT, r->name,
				 ev->offset, "clock goes backwards %llu -> %llu outside "
				 "a sortable unordered region (reported once per stream)",
				 (unsigned long long)r->last_clock,
				 (unsigned long long)ev->time);
	}
	r->last_clock = ev->time;
}

/* Delivers the next entry of the sorted block index. */
static int next_from_index(ovni_reader *r, weft_event *ev)
{
	/* Stored index of the event that would come here unsorted. */
	uint64_t in_place = r->seq + r->index_next;
	const region_entry *e = &r->index[r->index_next++];
	uint64_t size = 0;
	const unsigned char *p = NULL; /* set when map_event succeeds */
	int rc = weft__ovni_map_event(r, e->offset, &p, &size);
	if (rc < 0)
		return reader_stop(r, rc);
	fill_event(r, p, e->offset, size, r->seq + e->seq, ev);
	if (r->seq + e->seq != in_place)
		ev->flags |= WEFT_EVENT_REORDERED;
	if (r->index_next == r->index_count) {
		r->pos = r->index_end;
		r->seq = r->index_end_seq;
		r->index_count = r->index_next = 0;
	}
	check_clock(r, ev);
	return 1;
}

/*
 * Delivers the event at r->pos in stored order and moves past it. In
 * stored order clocks may go back only inside OU[ .. OU].
 */
static inline void deliver_in_place(ovni_reader *r, const unsigned char *p,
				    uint64_t size, weft_event *ev)
{
	fill_event(r, p, r->pos, size, r->seq, ev);
	r->pos += size;
	r->seq++;
	if (WEFT_UNLIKELY(p[1] == 'O' && p[2] == 'U')) {
		if (p[3] == '[')
			r->in_region = 1;
		else if (p[3] == ']')
			r->in_region = 0;
	}
	if (WEFT_LIKELY(ev->time >= r->last_clock))
		r->last_clock = ev->time;
	else if (!r->in_region)
		check_clock(r, ev);
}

/*
 * The scan-ahead of a batch: moves it to `lookback` bytes past r->pos
 * using only the window. Returns 0 when it cannot (the window ends,
 * or an OU[ is met, left for scan_ahead() to find again), 1 otherwise.
 */
static inline int scan_in_window(ovni_reader *r)
{
	uint64_t limit = r->pos + r->lookback;
	while (r->scan_pos < limit && r->scan_pos < r->mf.size) {
		uint64_t size;
		const unsigned char *p = peek_event(r, r->scan_pos, &size);
		if (p == NULL || ovni_mcv_is(p + 1, "OU["))
			return 0;
		r->scan_pos += size;
	}
	return 1;
}

int weft__ovni_stream_next(void *state, weft_event *ev)
{
	ovni_reader *r = state;
	if (r->index_count > 0)
		return next_from_index(r, ev);
	if (r->ended || r->pos >= r->mf.size)
		return 0;
	if (r->scan) {
		uint64_t ou = scan_ahead(r);
		if (ou != UINT64_MAX) {
			int rc = weft__ovni_build_block(r, ou);
			if (rc < 0)
				return rc;
			if (r->index_count > 0)
				return next_from_index(r, ev);
		}
	}
	uint64_t size;
	const unsigned char *p;
	int rc = weft__ovni_map_event(r, r->pos, &p, &size);
	if (rc < 0)
		return reader_stop(r, rc);
	deliver_in_place(r, p, size, ev);
	return 1;
}

/*
 * Fills several events at once, as long as they lie in the window,
 * so that they all stay valid together; stops early before anything that
 * needs the slow path (a window move, an unordered region, a damaged
 * event), which the next call then handles one event at a time.
 */
int weft__ovni_stream_next_batch(void *state, weft_event *evs, size_t cap)
{
	ovni_reader *r = state;
	int rc = weft__ovni_stream_next(r, &evs[0]);
	if (rc != 1 || r->index_count > 0)
		return rc;
	size_t n = 1;
	while (n < cap && r->pos < r->mf.size) {
		if (r->scan && !scan_in_window(r))
			break;
		uint64_t size;
		const unsigned char *p = peek_event(r, r->pos, &size);
		if (p == NULL)
			break;
		/* The next event's place depends on this one's size: a chain
		 * of loads that the hardware prefetcher alone does not hide. */
		__builtin_prefetch(p + 4096);
		deliver_in_place(r, p, size, &evs[n++]);
	}
	return (int)n;
}
