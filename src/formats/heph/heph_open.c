/*
 * formats/heph/heph_open.c - opening a Heph trace: one pass over the file
 * that frames and validates every packet, follows the epoch, finds the
 * (stream, substream) pairs and checks the stream counters for lost
 * packets and wrap-around. The events themselves are read later, through
 * the readers of heph_stream.c.
 *
 * What the pass cannot accept becomes a diagnostic with its byte offset:
 * a packet with a bad body (unknown attribute type, text that is not
 * UTF-8, a length past the packet end) is skipped, since its size still
 * frames the next packet; a wrong magic or an impossible size ends the
 * readable part of the file (the framing is lost there); a truncated
 * final packet, which a crash of the writer leaves, is a warning.
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "formats/heph/heph_internal.h"

/* Counter bits remembered per stream id to accept out-of-order packets. */
#define COUNTER_WINDOW 1024u
#define COUNTER_WORDS (COUNTER_WINDOW / 64u)

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

/* ---- The scan ------------------------------------------------------------------ */

/* Counter checks of one stream id (counters are per stream, all substreams). */
typedef struct counter_state {
	uint32_t stream_id;
	uint64_t events;
	uint64_t first, max;      /* unwrapped counters (first seen, highest) */
	uint64_t base;            /* counter of bit 0 of the window */
	uint64_t bits[COUNTER_WORDS];
	uint64_t lost, duplicates, late;
	uint64_t ranges_reported;
} counter_state;

typedef struct scan_ctx {
	weft_trace *trace;
	heph_data *d;
	weft_mapfile mf;
	heph_pair *pairs;         /* pairs in order of appearance */
	size_t pair_count, pair_cap;
	counter_state *counters;  /* per stream id, in order of appearance */
	size_t counter_count, counter_cap;
	uint64_t epoch;
	int has_epoch;
	json_t *epochs;           /* every epoch value, in file order */
	uint64_t events, metadata_packets, skipped_packets;
	uint64_t reversed;        /* events whose end is before their start */
	/* The pair and counter state of the previous event: packets come in
	 * long runs of one stream (a writer's buffer), so most look-ups end
	 * here. */
	uint32_t last_stream_id;
	uint64_t last_substream;
	int64_t last_pair;        /* -1 before the first event */
	size_t last_counter;
} scan_ctx;

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
	if (s->counter_count == s->counter_cap) {
		size_t cap = s->counter_cap ? s->counter_cap * 2 : 16;
		counter_state *n = realloc(s->counters, cap * sizeof *n);
		if (n == NULL)
			return NULL;
		s->counters = n;
		s->counter_cap = cap;
	}
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
	weft__trace_diag(s->trace, WEFT_SEV_WARNING, WEFT_EFORMAT, s->d->name, offset,
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
	if (v >= c->base + COUNTER_WINDOW)
		counter_slide(s, c, v - COUNTER_WINDOW + 1, offset);
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
	if (s->pair_count == s->pair_cap) {
		size_t cap = s->pair_cap ? s->pair_cap * 2 : 16;
		heph_pair *n = realloc(s->pairs, cap * sizeof *n);
		if (n == NULL)
			return WEFT_ENOMEM;
		s->pairs = n;
		s->pair_cap = cap;
	}
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
		weft__trace_diag_last_error(s->trace, WEFT_SEV_ERROR, rc, " (packet skipped)");
		s->skipped_packets++;
	} else if (rc == 0) {
		weft__trace_diag(s->trace, WEFT_SEV_WARNING, WEFT_EUNSUPPORTED, s->d->name,
				 offset, "unknown metadata option '%.*s' skipped (%u bytes)",
				 (int)name_len, (const char *)name, size);
	} else {
		s->epoch = epoch;
		s->has_epoch = 1;
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
		weft__trace_diag_last_error(s->trace, WEFT_SEV_ERROR, rc, " (packet skipped)");
		s->skipped_packets++;
		remember_bad(s->d, offset);
		return 0;
	}
	if (ev.end < ev.start && s->reversed++ == 0)
		weft__trace_diag(s->trace, WEFT_SEV_WARNING, WEFT_EFORMAT, s->d->name,
				 offset + 32, "event ends (%llu) before it starts (%llu): "
				 "read as a zero-length interval (reported once)",
				 (unsigned long long)ev.end, (unsigned long long)ev.start);
	int64_t pair = pair_record(s, ev.stream_id, ev.substream);
	if (pair >= 0) {
		s->last_pair = pair;
		s->last_stream_id = ev.stream_id;
		s->last_substream = ev.substream;
	}
	if (pair == -2) {
		weft__trace_diag(s->trace, WEFT_SEV_ERROR, WEFT_ENOMEM, s->d->name, offset,
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
	return 0;
}

/* Frames every packet up to the end or the first framing problem. */
static int scan_file(scan_ctx *s)
{
	uint64_t offset = 0, end = s->d->file_size;
	for (;;) {
		const uint8_t *p;
		uint32_t size;
		heph_frame_status st = weft__heph_frame(&s->mf, offset, end, &p, &size);
		heph_prefetch(&s->mf, offset);
		if (st == HEPH_FRAME_END)
			break;
		if (st == HEPH_FRAME_TRUNCATED || st == HEPH_FRAME_BROKEN) {
			if (st == HEPH_FRAME_BROKEN && offset == 0)
				return weft__error(WEFT_EFORMAT, weft__error_file(),
						   weft__error_offset(), "%s", weft__error_text());
			weft__trace_diag_last_error(s->trace,
						    st == HEPH_FRAME_TRUNCATED ?
						    WEFT_SEV_WARNING : WEFT_SEV_ERROR,
						    st == HEPH_FRAME_TRUNCATED ?
						    WEFT_ETRUNCATED : WEFT_EFORMAT,
						    " (reading stops there: every packet "
						    "before it is read)");
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
		offset += size;
	}
	s->d->valid_end = end;
	return 0;
}

/* Final counter checks: the counters never seen inside the window. */
static void counters_finish(scan_ctx *s)
{
	for (size_t i = 0; i < s->counter_count; i++) {
		counter_state *c = &s->counters[i];
		counter_slide(s, c, c->max + 1, s->d->valid_end);
		if (c->late || c->duplicates)
			weft__trace_diag(s->trace, WEFT_SEV_WARNING, WEFT_EFORMAT, s->d->name,
					 WEFT_NO_OFFSET, "stream %u: %llu duplicate and %llu "
					 "too-late counter(s)", c->stream_id,
					 (unsigned long long)c->duplicates,
					 (unsigned long long)c->late);
	}
}

/* ---- Building the hierarchy ---------------------------------------------------- */

static int pair_compare(const void *a, const void *b)
{
	const heph_pair *x = a, *y = b;
	if (x->stream_id != y->stream_id)
		return x->stream_id < y->stream_id ? -1 : 1;
	if (x->substream != y->substream)
		return x->substream < y->substream ? -1 : 1;
	return 0;
}

/* Metadata of a stream-id node: its counter checks. */
static json_t *stream_metadata(const counter_state *c)
{
	json_t *o = json_object();
	json_object_set_new(o, "stream_id", json_integer(c->stream_id));
	json_object_set_new(o, "events", json_integer((json_int_t)c->events));
	json_object_set_new(o, "counter_first", json_integer((json_int_t)(c->first & 0xffffffffu)));
	json_object_set_new(o, "counter_last", json_integer((json_int_t)(c->max & 0xffffffffu)));
	json_object_set_new(o, "counter_wraps", json_integer((json_int_t)(c->max >> 32)));
	json_object_set_new(o, "lost_packets", json_integer((json_int_t)c->lost));
	json_object_set_new(o, "duplicate_counters", json_integer((json_int_t)c->duplicates));
	json_object_set_new(o, "late_counters", json_integer((json_int_t)c->late));
	return o;
}

/* Adds the node of a stream id (with its counter checks). */
static int add_stream_node(scan_ctx *s, uint32_t stream_id, uint32_t *node)
{
	char name[32];
	snprintf(name, sizeof name, "stream.%u", stream_id);
	int rc = weft__trace_add_node(s->trace, WEFT_NO_PARENT, "stream", name,
				      stream_id, NULL, node);
	if (rc < 0)
		return rc;
	return weft__trace_set_node_metadata_object(s->trace, *node, stream_metadata(counter_for(s, stream_id)));
}

/* Adds the substream node of a pair and its weft stream. */
static int add_substream(scan_ctx *s, uint32_t parent, const heph_pair *pair)
{
	char name[40];
	uint32_t node, index;
	snprintf(name, sizeof name, "substream.%llu", (unsigned long long)pair->substream);
	int rc = weft__trace_add_node(s->trace, parent, "substream", name,
				      (int64_t)pair->substream, NULL, &node);
	if (rc == 0) {
		json_t *o = json_object();
		json_object_set_new(o, "stream_id", json_integer(pair->stream_id));
		json_object_set_new(o, "substream_id", json_integer((json_int_t)pair->substream));
		json_object_set_new(o, "events", json_integer((json_int_t)pair->events));
		rc = weft__trace_set_node_metadata_object(s->trace, node, o);
	}
	if (rc == 0)
		rc = weft__trace_add_stream(s->trace, node, s->d->name, s->d->file_size, &index);
	if (rc < 0)
		return rc;
	weft_stream_info *si = &s->trace->streams[index];
	si->finished = -1;
	si->big_endian = 1;
	return 0;
}

/*
 * Nodes and streams in (stream id, substream) order, so that the stream
 * indexes do not depend on which packet came first; then the map is
 * rebuilt to give those indexes.
 */
static int build_hierarchy(scan_ctx *s)
{
	heph_data *d = s->d;
	if (s->pair_count > 0)
		qsort(s->pairs, s->pair_count, sizeof *s->pairs, pair_compare);
	uint32_t node = 0;
	for (size_t i = 0; i < s->pair_count; i++) {
		int rc = 0;
		if (i == 0 || s->pairs[i].stream_id != s->pairs[i - 1].stream_id)
			rc = add_stream_node(s, s->pairs[i].stream_id, &node);
		if (rc == 0)
			rc = add_substream(s, node, &s->pairs[i]);
		if (rc < 0)
			return rc;
		d->map_values[map_slot(d, s->pairs[i].stream_id, s->pairs[i].substream)] =
			(uint32_t)i;
	}
	d->stream_count = s->pair_count;
	return 0;
}

/* Trace-level metadata: epochs and packet counts. */
static int set_trace_metadata(scan_ctx *s)
{
	json_t *o = json_object();
	json_object_set_new(o, "epoch", s->has_epoch ?
			    json_integer((json_int_t)json_integer_value(json_array_get(s->epochs, 0))) :
			    json_null());
	json_object_set(o, "epochs", s->epochs);
	json_object_set_new(o, "event_packets", json_integer((json_int_t)s->events));
	json_object_set_new(o, "metadata_packets", json_integer((json_int_t)s->metadata_packets));
	json_object_set_new(o, "skipped_packets", json_integer((json_int_t)s->skipped_packets));
	json_object_set_new(o, "readable_bytes", json_integer((json_int_t)s->d->valid_end));
	json_object_set_new(o, "file_bytes", json_integer((json_int_t)s->d->file_size));
	return weft__trace_set_metadata_object(s->trace, o);
}

/* ---- Backend entry points ------------------------------------------------------- */

/* A regular file that starts with a Heph packet magic. */
static int heph_probe(const char *path)
{
	struct stat st;
	unsigned char head[4];
	if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
		return 0;
	FILE *f = fopen(path, "rb");
	if (f == NULL)
		return 0;
	size_t n = fread(head, 1, sizeof head, f);
	fclose(f);
	if (n != sizeof head)
		return 0;
	uint32_t magic = heph_be32(head);
	return magic == HEPH_EVENT_MAGIC || magic == HEPH_META_MAGIC ? 90 : 0;
}

static void heph_close(weft_trace *trace)
{
	heph_data *d = trace->backend_data;
	if (d == NULL)
		return;
	weft__heph_index_free(d->index);
	free(d->bad_offsets);
	free(d->map_pairs);
	free(d->map_values);
	free(d->file);
	free(d);
	trace->backend_data = NULL;
}

/* Allocates the backend data of the trace at `path`. */
static int data_create(weft_trace *trace, const char *path,
		       const weft_open_options *o, heph_data **out)
{
	heph_data *d = calloc(1, sizeof *d);
	if (d == NULL || (d->file = strdup(path)) == NULL) {
		free(d);
		return weft__error(WEFT_ENOMEM, path, WEFT_NO_OFFSET, "out of memory");
	}
	const char *slash = strrchr(d->file, '/');
	d->name = slash != NULL && slash[1] != '\0' ? slash + 1 : d->file;
	d->sort_budget = o->sort_budget_bytes ? o->sort_budget_bytes : HEPH_DEFAULT_SORT_BUDGET;
	d->stored_order = o->stored_order;
	d->window = o->read_budget_bytes ? o->read_budget_bytes : HEPH_WINDOW;
	trace->backend_data = d;
	*out = d;
	return 0;
}

static int heph_open(weft_trace *trace, const char *path, const weft_open_options *o)
{
	heph_data *d = NULL;
	scan_ctx s;
	int rc = data_create(trace, path, o, &d);
	if (rc < 0)
		return rc;
	memset(&s, 0, sizeof s);
	s.last_pair = -1;
	s.trace = trace;
	s.d = d;
	rc = weft__mapfile_open(&s.mf, path, d->name, HEPH_WINDOW);
	if (rc < 0)
		return rc;
	d->file_size = s.mf.size;
	s.epochs = json_array();
	rc = s.epochs != NULL ? scan_file(&s) :
	     weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	weft__mapfile_close(&s.mf);
	if (rc == 0) {
		counters_finish(&s);
		d->event_count = s.events;
		rc = build_hierarchy(&s);
	}
	if (rc == 0)
		rc = set_trace_metadata(&s);
	json_decref(s.epochs);
	free(s.pairs);
	free(s.counters);
	return rc;
}

const weft_backend weft__heph_backend = {
	.format = WEFT_FORMAT_HEPH,
	.name = "heph",
	.probe = heph_probe,
	.open = heph_open,
	.close = heph_close,
	.stream_open = weft__heph_stream_open,
	.file_open = weft__heph_file_open,
	.stream_next = weft__heph_stream_next,
	.stream_next_batch = weft__heph_stream_next_batch,
	.stream_close = weft__heph_stream_close,
	.event_fields = weft__heph_event_fields,
};
