/* SPDX-License-Identifier: MIT */
/*
 * formats/heph/heph_scan.c - the pass that opens a Heph trace: it frames
 * and validates every packet, follows the epoch, finds the (stream,
 * substream) pairs and checks the stream counters for lost packets and
 * wrap-around. The events themselves are read later, through the readers
 * of heph_stream.c.
 *
 * What the pass cannot accept becomes a diagnostic with its byte offset:
 * a packet with a bad body (unknown attribute type, text that is not
 * UTF-8, a length past the packet end) is skipped, since its size still
 * frames the next packet; a wrong magic or an impossible size ends the
 * readable part of the file (the framing is lost there); a truncated
 * final packet, which a crash of the writer leaves, is a warning, but a
 * size past the end while packets follow is an error (data is lost).
 *
 * The pass is bound by reading the file. On a machine with more than one
 * CPU the second half is scanned by a helper thread (see "Two halves").
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/heph/heph_internal.h"

/* ---- Diagnostics ------------------------------------------------------------------ */

/*
 * 1 when the pass must not report: the helper's half keeps quiet and gives
 * up at its first diagnostic (the main pass then scans that half itself,
 * so that every diagnostic comes from one pass, in file order).
 */
static int scan_quiet(scan_ctx *s)
{
	if (s->quiet)
		s->gave_up = 1;
	return s->quiet;
}

static void scan_diag(scan_ctx *s, int severity, int status, uint64_t offset,
		      const char *fmt, ...) WEFT_PRINTF(5, 6);

/* A diagnostic of the pass on the trace file, at `offset`. */
static void scan_diag(scan_ctx *s, int severity, int status, uint64_t offset,
		      const char *fmt, ...)
{
	char message[1024];
	va_list ap;
	if (scan_quiet(s))
		return;
	va_start(ap, fmt);
	vsnprintf(message, sizeof message, fmt, ap);
	va_end(ap);
	weft__trace_diag(s->trace, severity, status, s->d->name, offset, "%s", message);
}

/* The last error (set by the packet checks) as a diagnostic, with a note. */
static void scan_diag_last_error(scan_ctx *s, int severity, int status, const char *note)
{
	if (!scan_quiet(s))
		weft__trace_diag_last_error(s->trace, severity, status, note);
}

/* ---- (stream, substream) map ----------------------------------------------- */

/* Hash of a (stream, substream) pair for open addressing. */
static size_t pair_hash(uint32_t stream_id, uint64_t substream, size_t cap)
{
	uint64_t h = (substream ^ ((uint64_t)stream_id << 32 | stream_id)) *
		     0x9E3779B97F4A7C15ull;
	return (size_t)(h >> 17) & (cap - 1);
}

/* Slot of the pair in the map: where it is, or the empty slot for it. */
static size_t map_slot(const heph_data *d, uint32_t stream_id, uint64_t substream)
{
	size_t i = pair_hash(stream_id, substream, d->map_cap);
	while (d->map_values[i] != UINT32_MAX &&
	       (d->map_pairs[i].stream_id != stream_id ||
		d->map_pairs[i].substream != substream))
		i = (i + 1) & (d->map_cap - 1);
	return i;
}

void weft__heph_stream_renumber(heph_data *d, uint32_t stream_id, uint64_t substream,
				uint32_t index)
{
	d->map_values[map_slot(d, stream_id, substream)] = index;
}

int64_t weft__heph_stream_lookup(const heph_data *d, uint32_t stream_id,
				 uint64_t substream)
{
	if (d->map_cap == 0)
		return -1;
	size_t i = map_slot(d, stream_id, substream);
	return d->map_values[i] == UINT32_MAX ? -1 : (int64_t)d->map_values[i];
}

/* Allocates an empty map for up to cap / 2 pairs (cap a power of two). */
static int map_alloc(heph_data *d, size_t cap)
{
	d->map_pairs = calloc(cap, sizeof *d->map_pairs);
	d->map_values = malloc(cap * sizeof *d->map_values);
	if (d->map_pairs == NULL || d->map_values == NULL) {
		free(d->map_pairs);
		free(d->map_values);
		d->map_pairs = NULL;
		d->map_values = NULL;
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	}
	memset(d->map_values, 0xff, cap * sizeof *d->map_values);
	d->map_cap = cap;
	return 0;
}

/* Doubles the map, keeping its pairs and values. */
static int map_grow(heph_data *d)
{
	heph_data old = *d;
	if (map_alloc(d, old.map_cap ? old.map_cap * 2 : 64) < 0) {
		*d = old;
		return WEFT_ENOMEM;
	}
	for (size_t i = 0; i < old.map_cap; i++) {
		if (old.map_values[i] == UINT32_MAX)
			continue;
		size_t j = map_slot(d, old.map_pairs[i].stream_id, old.map_pairs[i].substream);
		d->map_pairs[j] = old.map_pairs[i];
		d->map_values[j] = old.map_values[i];
	}
	free(old.map_pairs);
	free(old.map_values);
	return 0;
}

/* ---- Stream counters ----------------------------------------------------------- */

/* The counter state of a stream id (linear search: stream ids are few). */
static counter_state *counter_for(scan_ctx *s, uint32_t stream_id)
{
	if (s->last_counter < s->counter_count &&
	    s->counters[s->last_counter].stream_id == stream_id)
		return &s->counters[s->last_counter];
	for (size_t i = s->counter_count; i-- > 0;)
		if (s->counters[i].stream_id == stream_id) {
			s->last_counter = i;
			return &s->counters[i];
		}
	if (weft__array_grow((void **)&s->counters, &s->counter_cap, s->counter_count + 1,
			     sizeof *s->counters) < 0)
		return NULL;
	s->last_counter = s->counter_count;
	counter_state *c = &s->counters[s->counter_count++];
	memset(c, 0, sizeof *c);
	c->stream_id = stream_id;
	return c;
}

/* Reports the counters [from, to] as lost packets of the stream. */
static void report_lost(scan_ctx *s, counter_state *c, uint64_t from, uint64_t to,
			uint64_t offset)
{
	c->lost += to - from + 1;
	c->ranges_reported++;
	scan_diag(s, WEFT_SEV_WARNING, WEFT_EFORMAT, offset,
		  "stream %u: %llu packet(s) lost (counters %llu..%llu missing%s)",
		  c->stream_id, (unsigned long long)(to - from + 1),
		  (unsigned long long)(from & 0xffffffffu),
		  (unsigned long long)(to & 0xffffffffu),
		  (from >> 32) != (to >> 32) ? ", across a wrap-around" : "");
}

/*
 * Slides the window so that it starts at `new_base`, reporting the
 * counters that leave it without having been seen.
 */
static void counter_slide(scan_ctx *s, counter_state *c, uint64_t new_base,
			  uint64_t offset)
{
	uint64_t gap_from = UINT64_MAX;
	while (c->base < new_base && c->base <= c->max) {
		uint64_t bit = c->base % COUNTER_WINDOW;
		int seen = (c->bits[bit / 64] >> (bit % 64)) & 1;
		c->bits[bit / 64] &= ~(1ull << (bit % 64));
		if (!seen && gap_from == UINT64_MAX)
			gap_from = c->base;
		if (seen && gap_from != UINT64_MAX) {
			report_lost(s, c, gap_from, c->base - 1, offset);
			gap_from = UINT64_MAX;
		}
		c->base++;
	}
	if (c->base < new_base) {
		/* Counters above the highest seen: never seen either. */
		if (gap_from == UINT64_MAX)
			gap_from = c->base;
		c->base = new_base;
	}
	if (gap_from != UINT64_MAX)
		report_lost(s, c, gap_from, c->base - 1, offset);
}

/*
 * Records the counter of one event of a stream id. Counters are unwrapped
 * to 64 bits (the u32 counter wraps at 2^32) relative to the highest one
 * seen, so that a small step back is a late packet, not a wrap.
 */
static void counter_record(scan_ctx *s, counter_state *c, uint32_t counter,
			   uint64_t offset)
{
	uint64_t v;
	if (c->events++ == 0) {
		c->first = c->max = c->base = counter;
	}
	int32_t delta = (int32_t)(counter - (uint32_t)c->max);
	if (delta < 0 && (uint64_t)-(int64_t)delta > c->max) {
		c->late++;
		return;
	}
	v = c->max + (int64_t)delta;
	if (v < c->base) {
		c->late++;
		return;
	}
	if (v == c->base + COUNTER_WINDOW && c->base <= c->max &&
	    ((c->bits[c->base % COUNTER_WINDOW / 64] >> (c->base % 64)) & 1)) {
		/* The steady state, one step forward over a counter that was
		 * seen: what counter_slide() does, without the call. */
		c->bits[c->base % COUNTER_WINDOW / 64] &= ~(1ull << (c->base % 64));
		c->base++;
	} else if (v >= c->base + COUNTER_WINDOW) {
		counter_slide(s, c, v - COUNTER_WINDOW + 1, offset);
	}
	uint64_t bit = v % COUNTER_WINDOW;
	if ((c->bits[bit / 64] >> (bit % 64)) & 1)
		c->duplicates++;
	c->bits[bit / 64] |= 1ull << (bit % 64);
	if (v > c->max)
		c->max = v;
}

/* Remembers a (stream, substream) pair; its index in s->pairs. */
static int64_t pair_record(scan_ctx *s, uint32_t stream_id, uint64_t substream)
{
	heph_data *d = s->d;
	if (s->last_pair >= 0 && s->last_stream_id == stream_id &&
	    s->last_substream == substream)
		return s->last_pair;
	if (d->map_cap == 0 || (s->pair_count + 1) * 2 > d->map_cap)
		if (map_grow(d) < 0)
			return WEFT_ENOMEM;
	size_t slot = map_slot(d, stream_id, substream);
	if (d->map_values[slot] != UINT32_MAX)
		return d->map_values[slot];
	if (s->pair_count >= HEPH_MAX_STREAMS)
		return -2;
	if (weft__array_grow((void **)&s->pairs, &s->pair_cap, s->pair_count + 1,
			     sizeof *s->pairs) < 0)
		return WEFT_ENOMEM;
	s->pairs[s->pair_count] = (heph_pair){ stream_id, substream, 0 };
	d->map_pairs[slot] = s->pairs[s->pair_count];
	d->map_values[slot] = (uint32_t)s->pair_count;
	return (int64_t)s->pair_count++;
}

/* A metadata packet: the epoch, or an unknown option skipped. */
static void scan_meta(scan_ctx *s, const uint8_t *p, uint32_t size, uint64_t offset)
{
	const uint8_t *name;
	uint16_t name_len;
	uint64_t epoch;
	int rc = weft__heph_parse_meta(p, size, s->d->name, offset, &epoch, &name, &name_len);

	s->metadata_packets++;
	if (rc < 0) {
		scan_diag_last_error(s, WEFT_SEV_ERROR, rc, " (packet skipped)");
		s->skipped_packets++;
	} else if (rc == 0) {
		scan_diag(s, WEFT_SEV_WARNING, WEFT_EUNSUPPORTED, offset,
			  "unknown metadata option '%.*s' skipped (%u bytes)",
			  (int)name_len, (const char *)name, size);
	} else {
		s->epoch = epoch;
		s->has_epoch = 1;
		s->epoch_unknown = 0;
		json_array_append_new(s->epochs, json_integer((json_int_t)epoch));
	}
}

/*
 * Remembers the offset of a skipped event packet, so that the readers
 * validate it again (and skip it) while trusting the others. Past
 * HEPH_MAX_BAD_LISTED offsets, or without memory, the list is dropped
 * and the readers validate every packet.
 */
static void remember_bad(heph_data *d, uint64_t offset)
{
	if (d->revalidate)
		return;
	if (d->bad_count == d->bad_cap) {
		size_t cap = d->bad_cap ? d->bad_cap * 2 : 64;
		uint64_t *n = cap <= HEPH_MAX_BAD_LISTED ?
			      realloc(d->bad_offsets, cap * sizeof *n) : NULL;
		if (n == NULL) {
			free(d->bad_offsets);
			d->bad_offsets = NULL;
			d->bad_count = d->bad_cap = 0;
			d->revalidate = 1;
			return;
		}
		d->bad_offsets = n;
		d->bad_cap = cap;
	}
	d->bad_offsets[d->bad_count++] = offset;
}

/* An event packet: validation, times, pair and counters. */
static int scan_event(scan_ctx *s, const uint8_t *p, uint32_t size, uint64_t offset)
{
	heph_event_packet ev;
	uint64_t start, end;
	int rc = weft__heph_parse_event(p, size, s->d->name, offset, &ev);
	if (rc == 0)
		rc = weft__heph_event_times(&ev, s->epoch, s->d->name, offset, &start, &end);
	if (rc < 0) {
		scan_diag_last_error(s, WEFT_SEV_ERROR, rc, " (packet skipped)");
		s->skipped_packets++;
		remember_bad(s->d, offset);
		return 0;
	}
	if (s->epoch_unknown && end > s->unknown_epoch_max)
		s->unknown_epoch_max = end; /* end >= start: times are clamped */
	if (ev.end < ev.start && s->reversed++ == 0)
		scan_diag(s, WEFT_SEV_WARNING, WEFT_EFORMAT, offset + 32,
			  "event ends (%llu) before it starts (%llu): "
			  "read as a zero-length interval (reported once)",
			  (unsigned long long)ev.end, (unsigned long long)ev.start);
	int64_t pair = pair_record(s, ev.stream_id, ev.substream);
	if (pair >= 0) {
		s->last_pair = pair;
		s->last_stream_id = ev.stream_id;
		s->last_substream = ev.substream;
	}
	if (pair == -2) {
		scan_diag(s, WEFT_SEV_ERROR, WEFT_ENOMEM, offset,
			  "more than %u (stream, substream) pairs: packet skipped",
			  HEPH_MAX_STREAMS);
		s->skipped_packets++;
		return 0;
	}
	if (pair < 0)
		return (int)pair;
	counter_state *c = counter_for(s, ev.stream_id);
	if (c == NULL)
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	counter_record(s, c, ev.counter, offset);
	s->pairs[pair].events++;
	s->events++;
	if (s->trace != NULL) /* the main pass (the helper's has none) */
		weft__progress_count(s->trace, 1);
	return weft__heph_kind_note(&s->d->kinds, s->trace, &ev, offset);
}

#define STOP_NOTE " (reading stops there: every packet before it is read)"

/*
 * A packet at `offset` that the end of the file cuts (the framing's error
 * is set): a warning when it is the last packet, cut by a crash of the
 * writer; an error when packets start after it, for then its size is
 * wrong and more than the last packet is lost.
 */
static void report_cut(scan_ctx *s, uint64_t offset, uint64_t end)
{
	char text[512];
	uint64_t at, where = weft__error_offset();

	if (scan_quiet(s))
		return;
	snprintf(text, sizeof text, "%s", weft__error_text());
	if (end - offset > HEPH_FRAME_SIZE &&
	    weft__heph_packet_after(&s->mf, offset + HEPH_FRAME_SIZE, end, &at))
		scan_diag(s, WEFT_SEV_ERROR, WEFT_EFORMAT, where, "%s, but a packet starts "
			  "at byte %llu within them: the size is wrong and the %llu bytes "
			  "after this packet's header are lost" STOP_NOTE, text,
			  (unsigned long long)at,
			  (unsigned long long)(end - offset - HEPH_FRAME_SIZE));
	else
		scan_diag(s, WEFT_SEV_WARNING, WEFT_ETRUNCATED, where, "%s" STOP_NOTE, text);
}

/*
 * Frames every packet from `from` up to the end or the first framing
 * problem: 0. Returns 1 instead when it reaches s->stop_at exactly (the
 * start of the helper's half); a framing that steps over it proves the
 * guessed boundary wrong, and the pass goes on to the end.
 */
static int scan_file(scan_ctx *s, uint64_t from)
{
	uint64_t offset = from, end = s->d->file_size;
	for (;;) {
		const uint8_t *p;
		uint32_t size;
		if (offset >= s->stop_at) {
			if (offset == s->stop_at)
				return 1;
			s->stop_at = UINT64_MAX;
		}
		heph_frame_status st = HEPH_FRAME_EVENT;
		if (!heph_frame_fast(&s->mf, offset, end, &p, &size))
			st = weft__heph_frame(&s->mf, offset, end, &p, &size);
		heph_prefetch(&s->mf, offset);
		if (st == HEPH_FRAME_END)
			break;
		if (st == HEPH_FRAME_TRUNCATED) {
			report_cut(s, offset, end);
			s->d->valid_end = offset;
			return 0;
		}
		if (st == HEPH_FRAME_BROKEN) {
			if (offset == 0)
				return weft__error(WEFT_EFORMAT, weft__error_file(),
						   weft__error_offset(), "%s", weft__error_text());
			scan_diag_last_error(s, WEFT_SEV_ERROR, WEFT_EFORMAT, STOP_NOTE);
			s->d->valid_end = offset;
			return 0;
		}
		int rc = 0;
		if (st == HEPH_FRAME_META)
			scan_meta(s, p, size, offset);
		else
			rc = scan_event(s, p, size, offset);
		if (rc < 0)
			return rc;
		if (s->quiet && s->gave_up)
			return 0;
		offset += size;
	}
	s->d->valid_end = end;
	return 0;
}

void weft__heph_scan_finish(scan_ctx *s)
{
	for (size_t i = 0; i < s->counter_count; i++) {
		counter_state *c = &s->counters[i];
		counter_slide(s, c, c->max + 1, s->d->valid_end);
		if (c->late || c->duplicates)
			scan_diag(s, WEFT_SEV_WARNING, WEFT_EFORMAT, WEFT_NO_OFFSET,
				  "stream %u: %llu duplicate and %llu too-late counter(s)",
				  c->stream_id, (unsigned long long)c->duplicates,
				  (unsigned long long)c->late);
	}
}

/* ---- Two halves ------------------------------------------------------------------- */

/*
 * A helper thread scans the second half of the file while the main pass
 * scans the first: each reads half of the file, and reading is what the
 * pass waits for. The helper starts at a packet boundary guessed past the
 * middle (a magic from which SPLIT_CONFIRM_PACKETS packets frame well);
 * the guess holds when the main pass's own framing lands on it exactly.
 *
 * The helper's books join the main pass's only when the join is seamless,
 * that is when one pass would have found the same:
 *   - the helper reported nothing (no bad packet, lost counter, reversed
 *     event or framing problem: it gives up at the first one);
 *   - its events before its first epoch packet fit under the epoch the
 *     main half ends with;
 *   - for every stream id of both halves, the main half's counter window
 *     has no hole and the helper's first counter follows the main's
 *     highest, with no late or repeated counter in the helper's half.
 * Otherwise the main pass goes on into the second half itself, as it
 * would without a helper: the result never depends on the split.
 */

/* Packets that must frame from a guessed boundary before it is tried. */
#define SPLIT_CONFIRM_PACKETS 16
/* How far past the middle a boundary is looked for. */
#define SPLIT_SEARCH_BYTES (1u << 20)
/* Files smaller than this are scanned by one thread unless told otherwise. */
#define SPLIT_MIN_BYTES (16u << 20)

typedef struct heph_scan_helper scan_helper;

struct heph_scan_helper {
	pthread_t thread;
	heph_data d;              /* its own pair map and file view */
	scan_ctx s;
	uint64_t from;            /* where its half starts */
	int rc;
};

/* 1 when SPLIT_CONFIRM_PACKETS packets (or all up to the end) frame from `at`. */
static int frames_well(weft_mapfile *mf, uint64_t at, uint64_t end)
{
	for (int i = 0; i < SPLIT_CONFIRM_PACKETS; i++) {
		const uint8_t *p;
		uint32_t size;
		heph_frame_status st = weft__heph_frame(mf, at, end, &p, &size);
		if (st == HEPH_FRAME_END)
			return 1;
		if (st < 0)
			return 0;
		at += size;
	}
	return 1;
}

/* A likely packet boundary past the middle of the file, or UINT64_MAX. */
static uint64_t guess_boundary(weft_mapfile *mf, uint64_t end)
{
	uint64_t from = end / 2;
	uint64_t stop = end - from < SPLIT_SEARCH_BYTES ? end : from + SPLIT_SEARCH_BYTES;
	for (uint64_t at = from; at + HEPH_FRAME_SIZE <= stop; at++) {
		const uint8_t *p = weft__mapfile_get(mf, at, 4);
		if (p == NULL)
			return UINT64_MAX;
		uint32_t magic = heph_be32(p);
		if ((magic == HEPH_EVENT_MAGIC || magic == HEPH_META_MAGIC) &&
		    frames_well(mf, at, end))
			return at;
	}
	return UINT64_MAX;
}

static void *helper_main(void *arg)
{
	scan_helper *h = arg;
	h->rc = scan_file(&h->s, h->from);
	return NULL;
}

/* Frees a helper that is not running (NULL accepted). */
static void helper_free(scan_helper *h)
{
	if (h == NULL)
		return;
	weft__heph_scan_release(&h->s);
	weft__mapfile_close(&h->s.mf);
	free(h->d.map_pairs);
	free(h->d.map_values);
	free(h->d.bad_offsets);
	weft__heph_kinds_free(&h->d.kinds);
	free(h);
}

/*
 * Starts the helper on the second half when it is worth it (see
 * weft__helper_wanted) and a boundary is found; NULL otherwise, or when
 * anything fails (the main pass then scans everything).
 */
static scan_helper *helper_start(scan_ctx *main_pass, const char *path, int threads)
{
	heph_data *d = main_pass->d;
	if (!weft__helper_wanted(threads, d->file_size, SPLIT_MIN_BYTES))
		return NULL;
	uint64_t from = guess_boundary(&main_pass->mf, d->file_size);
	scan_helper *h = from != UINT64_MAX ? calloc(1, sizeof *h) : NULL;
	if (h == NULL)
		return NULL;
	h->d.name = d->name;
	h->d.file_size = d->file_size;
	h->from = from;
	if (weft__heph_scan_init(&h->s, NULL, &h->d) < 0 ||
	    weft__mapfile_open(&h->s.mf, path, d->name, HEPH_COPY_WINDOW) < 0 ||
	    h->s.mf.size != d->file_size) {
		helper_free(h);
		return NULL;
	}
	h->s.mf.bytes_read = main_pass->mf.bytes_read; /* its bytes count as the trace's */
	h->s.quiet = 1;
	h->s.epoch_unknown = 1;
	if (pthread_create(&h->thread, NULL, helper_main, h) != 0) {
		helper_free(h);
		return NULL;
	}
	weft__trace_threads_note(main_pass->trace, 2);
	return h;
}

/* The counter state of a stream id, or NULL (never creates one). */
static counter_state *counter_find(const scan_ctx *s, uint32_t stream_id)
{
	for (size_t i = 0; i < s->counter_count; i++)
		if (s->counters[i].stream_id == stream_id)
			return &s->counters[i];
	return NULL;
}

/* 1 when every counter of the window from its base to the highest was seen. */
static int window_whole(const counter_state *c)
{
	for (uint64_t v = c->base; v <= c->max; v++) {
		uint64_t bit = v % COUNTER_WINDOW;
		if (!((c->bits[bit / 64] >> (bit % 64)) & 1))
			return 0;
	}
	return 1;
}

/* 1 when the helper's half joins the main pass's seamlessly (see above). */
static int helper_joins(scan_ctx *m, const scan_helper *h)
{
	const scan_ctx *hs = &h->s;
	if (h->rc != 0 || hs->gave_up || hs->unknown_epoch_max > UINT64_MAX - m->epoch)
		return 0;
	size_t new_pairs = 0;
	for (size_t i = 0; i < hs->pair_count; i++)
		new_pairs += weft__heph_stream_lookup(m->d, hs->pairs[i].stream_id,
						      hs->pairs[i].substream) < 0;
	if (m->pair_count + new_pairs > HEPH_MAX_STREAMS)
		return 0;
	for (size_t i = 0; i < hs->counter_count; i++) {
		const counter_state *hc = &hs->counters[i];
		const counter_state *mc = counter_find(m, hc->stream_id);
		if (mc != NULL && (!window_whole(mc) || hc->late || hc->duplicates ||
				   (uint32_t)(mc->max + 1) != (uint32_t)hc->first))
			return 0;
	}
	return 1;
}

/*
 * Adds the helper's books to the main pass's. A counter state shared by
 * both continues the main one: the helper's counters were unwrapped from
 * its first one, a whole number of 2^32 below the main's numbering (so
 * the window bits, counted modulo COUNTER_WINDOW, line up unchanged).
 */
static int helper_merge(scan_ctx *m, scan_helper *h)
{
	scan_ctx *hs = &h->s;
	for (size_t i = 0; i < hs->pair_count; i++) {
		int64_t pair = pair_record(m, hs->pairs[i].stream_id, hs->pairs[i].substream);
		if (pair < 0)
			return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
		m->pairs[pair].events += hs->pairs[i].events;
	}
	for (size_t i = 0; i < hs->counter_count; i++) {
		const counter_state *hc = &hs->counters[i];
		counter_state *mc = counter_find(m, hc->stream_id);
		if (mc == NULL) {
			if ((mc = counter_for(m, hc->stream_id)) == NULL)
				return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET,
						   "out of memory");
			*mc = *hc;
			continue;
		}
		uint64_t shift = mc->max + 1 - hc->first;
		mc->events += hc->events;
		mc->max = hc->max + shift;
		mc->base = hc->base + shift;
		memcpy(mc->bits, hc->bits, sizeof mc->bits);
		mc->lost += hc->lost;
		mc->ranges_reported += hc->ranges_reported;
	}
	for (size_t i = 0; i < json_array_size(hs->epochs); i++)
		json_array_append(m->epochs, json_array_get(hs->epochs, i));
	if (hs->has_epoch) {
		m->epoch = hs->epoch;
		m->has_epoch = 1;
	}
	if (weft__heph_kinds_merge(&m->d->kinds, &hs->d->kinds) < 0)
		return WEFT_ENOMEM;
	m->events += hs->events;
	m->metadata_packets += hs->metadata_packets;
	m->d->valid_end = hs->d->valid_end;
	m->d->scan_halves = 2;
	return 0;
}

/* ---- Entry points ------------------------------------------------------------------ */

counter_state *weft__heph_scan_counters(scan_ctx *s, uint32_t stream_id)
{
	return counter_find(s, stream_id);
}

int weft__heph_scan_init(scan_ctx *s, weft_trace *trace, heph_data *d)
{
	memset(s, 0, sizeof *s);
	s->trace = trace;
	s->d = d;
	s->last_pair = -1;
	s->stop_at = UINT64_MAX;
	s->epochs = json_array();
	return s->epochs != NULL ? 0 :
	       weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
}

void weft__heph_scan_release(scan_ctx *s)
{
	json_decref(s->epochs);
	free(s->pairs);
	free(s->counters);
	s->epochs = NULL;
	s->pairs = NULL;
	s->counters = NULL;
}

int weft__heph_scan_run(scan_ctx *s, const char *path, int threads)
{
	scan_helper *h = helper_start(s, path, threads);
	s->stop_at = h != NULL ? h->from : UINT64_MAX;
	int rc = scan_file(s, 0);
	if (h == NULL)
		return rc;
	pthread_join(h->thread, NULL);
	if (rc == 1) {
		s->stop_at = UINT64_MAX;
		rc = helper_joins(s, h) ? helper_merge(s, h) : scan_file(s, h->from);
	}
	helper_free(h);
	return rc;
}
