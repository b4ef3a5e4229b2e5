/* SPDX-License-Identifier: MIT */
/*
 * formats/heph/heph_open.c - opening a Heph trace: the scan of the file
 * (heph_scan.c), then the nodes and streams it found, one node per stream
 * id and one stream per (stream, substream) pair, with the counter checks
 * as metadata.
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "formats/heph/heph_internal.h"

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
	return weft__trace_set_node_metadata_object(s->trace, *node, stream_metadata(weft__heph_scan_counters(s, stream_id)));
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
		weft__heph_stream_renumber(d, s->pairs[i].stream_id, s->pairs[i].substream,
					   (uint32_t)i);
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
	pthread_mutex_destroy(&d->index_lock);
	free(d->bad_offsets);
	free(d->map_pairs);
	free(d->map_values);
	weft__heph_kinds_free(&d->kinds);
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
	pthread_mutex_init(&d->index_lock, NULL);
	const char *slash = strrchr(d->file, '/');
	d->name = slash != NULL && slash[1] != '\0' ? slash + 1 : d->file;
	uint64_t budget = 0;
	int rc = weft__option_u64(o, "heph.sort_budget_bytes", &budget);
	if (rc < 0) {
		pthread_mutex_destroy(&d->index_lock);
		free(d->file);
		free(d);
		return rc;
	}
	d->sort_budget = budget ? budget : HEPH_DEFAULT_SORT_BUDGET;
	d->threads = o->threads;
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
	rc = weft__heph_scan_init(&s, trace, d);
	if (rc == 0)
		rc = weft__mapfile_open(&s.mf, path, d->name, HEPH_COPY_WINDOW);
	weft__mapfile_count(&s.mf, trace);
	if (rc == 0) {
		d->file_size = s.mf.size;
		trace->progress.bytes_total = d->file_size; /* the scan reads it all */
		rc = weft__heph_scan_run(&s, path, o->threads);
		weft__mapfile_close(&s.mf);
	}
	if (rc == 0) {
		weft__heph_scan_finish(&s);
		d->event_count = s.events;
		trace->progress.events_total = s.events;
		rc = build_hierarchy(&s);
	}
	if (rc == 0)
		rc = set_trace_metadata(&s);
	weft__heph_scan_release(&s);
	return rc;
}

/* The Heph options of weft_open_options_set(). */
static const weft_format_option heph_options[] = {
	{ "heph.sort_budget_bytes", "bytes", "sort budget",
	  "memory of the time-order index before it spills sorted runs to a "
	  "temporary file (default 64 MiB)", 0 },
};

const weft_backend weft__heph_backend = {
	.format = WEFT_FORMAT_HEPH,
	.name = "heph",
	.expected = "a Heph trace file",
	.path_kinds = WEFT__PATH_FILE,
	.probe = heph_probe,
	.open = heph_open,
	.close = heph_close,
	.stream_open = weft__heph_stream_open,
	.file_open = weft__heph_file_open,
	/* One pass over the one file, no time-order index: how Heph's own
	 * converter reads it, and what conversions to viewers use. */
	.natural_order = WEFT_ORDER_STORED,
	.stream_next = weft__heph_stream_next,
	.stream_next_batch = weft__heph_stream_next_batch,
	.stream_close = weft__heph_stream_close,
	.event_fields = weft__heph_event_fields,
	.event_schemas = weft__heph_event_schemas,
	.counts_bytes = 1,
	.options = heph_options,
	.option_count = sizeof heph_options / sizeof heph_options[0],
	/* the time-order index, the one thing a reader builds, under its lock */
	.readers_share_data = 1,
};
