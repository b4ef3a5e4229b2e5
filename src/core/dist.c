/* SPDX-License-Identifier: MIT */
/*
 * core/dist.c - the work on one trace shared among processes (weft/dist.h).
 *
 * Map:
 *   - the share: which streams a rank reads (largest first, to the part
 *     with the fewest bytes);
 *   - packing: the little binary writer and reader of what ranks send
 *     (little-endian integers, length-prefixed texts, every read checked
 *     against the block's end);
 *   - combining: a rank's status, error, diagnostics and result gathered
 *     on rank 0, merged there by the analysis, the final status sent back.
 *
 * The library never calls MPI: the collectives are the caller's
 * (weft_dist.gather, .broadcast). Every rank takes part in every
 * collective whatever its status, so that a rank that fails never leaves
 * the others waiting.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/internal.h"
#include "weft/dist.h"

/* ---- The share ------------------------------------------------------------------ */

/* A stream as the share deals them: largest first, then by index. */
typedef struct dealt_stream {
	uint64_t bytes;
	uint32_t index;
} dealt_stream;

static int largest_first(const void *a, const void *b)
{
	const dealt_stream *x = a, *y = b;
	if (x->bytes != y->bytes)
		return x->bytes > y->bytes ? -1 : 1;
	return x->index < y->index ? -1 : x->index > y->index;
}

/*
 * The deal of weft__share_deal_groups(): the units (a stream each, or a
 * group of streams) largest first, each to the part with the fewest bytes
 * so far; unit_part[u] = the part of unit u. -1 without memory.
 */
static int deal_units(const dealt_stream *units, size_t count, int parts, int *unit_part)
{
	dealt_stream *order = malloc((count ? count : 1) * sizeof *order);
	uint64_t *bytes = calloc((size_t)parts, sizeof *bytes);
	if (order == NULL || bytes == NULL) {
		free(order);
		free(bytes);
		return -1;
	}
	memcpy(order, units, count * sizeof *order);
	qsort(order, count, sizeof *order, largest_first);
	for (size_t k = 0; k < count; k++) {
		int least = 0;
		for (int p = 1; p < parts; p++)
			if (bytes[p] < bytes[least])
				least = p;
		bytes[least] += order[k].bytes;
		unit_part[order[k].index] = least;
	}
	free(order);
	free(bytes);
	return 0;
}

int64_t weft__share_deal_groups(const weft_trace *trace, const uint8_t *among,
				const uint32_t *groups, int part, int parts, uint8_t *selected)
{
	size_t n = trace->stream_count, units = 0;
	/* a unit per stream, or per group (ids below n, else one of their own) */
	dealt_stream *unit = calloc(n ? n + 1 : 1, sizeof *unit);
	int *unit_part = malloc((n + 1) * sizeof *unit_part);
	if (unit == NULL || unit_part == NULL) {
		free(unit);
		free(unit_part);
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	}
	for (size_t i = 0; i < n; i++) {
		if (among != NULL && !among[i])
			continue;
		size_t u = groups == NULL ? i : groups[i] < n ? groups[i] : n;
		/* Streams without bytes still count one, so that empty
		 * streams spread too. */
		unit[u].bytes += trace->streams[i].file_size + 1;
		unit[u].index = (uint32_t)u;
	}
	for (size_t u = 0; u <= n; u++)
		if (unit[u].bytes > 0)
			unit[units++] = unit[u];
	int rc = deal_units(unit, units, parts, unit_part);
	int64_t mine = 0;
	for (size_t i = 0; rc == 0 && i < n; i++) {
		size_t u = groups == NULL ? i : groups[i] < n ? groups[i] : n;
		selected[i] = (among == NULL || among[i]) && unit_part[u] == part;
		mine += selected[i];
	}
	free(unit);
	free(unit_part);
	return rc < 0 ? weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory") : mine;
}

int64_t weft__share_deal(const weft_trace *trace, const uint8_t *among, int part, int parts,
			 uint8_t *selected)
{
	return weft__share_deal_groups(trace, among, NULL, part, parts, selected);
}

int64_t weft_trace_share(const weft_trace *trace, int part, int parts, uint8_t *selected)
{
	if (trace == NULL || selected == NULL || parts < 1 || part < 0 || part >= parts)
		return weft__error(WEFT_EINVAL, NULL, WEFT_NO_OFFSET,
				   "weft_trace_share: part %d of %d", part, parts);
	if (parts == 1 || weft_trace_shared_files(trace)) {
		memset(selected, part == 0, trace->stream_count);
		return part == 0 ? (int64_t)trace->stream_count : 0;
	}
	return weft__share_deal(trace, NULL, part, parts, selected);
}

int64_t weft_trace_share_among(const weft_trace *trace, const uint8_t *among, int part,
			       int parts, uint8_t *selected)
{
	if (trace == NULL || selected == NULL || parts < 1 || part < 0 || part >= parts)
		return weft__error(WEFT_EINVAL, NULL, WEFT_NO_OFFSET,
				   "weft_trace_share_among: part %d of %d", part, parts);
	return weft__share_deal(trace, among, part, parts, selected);
}

int weft__dist_active(const weft_trace *trace)
{
	const weft_dist *d = trace->options.dist;
	return d != NULL && d->ranks > 1;
}

int weft__dist_root(const weft_trace *trace)
{
	return !weft__dist_active(trace) || trace->options.dist->rank == 0;
}

const uint8_t *weft__dist_selected(const weft_trace *trace)
{
	return weft__dist_active(trace) ? trace->dist_selected : NULL;
}

int weft__dist_deal(weft_trace *trace)
{
	if (!weft__dist_active(trace))
		return 0;
	uint8_t *s = malloc(trace->stream_count ? trace->stream_count : 1);
	if (s == NULL)
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	int64_t rc = weft_trace_share(trace, trace->options.dist->rank,
				      trace->options.dist->ranks, s);
	if (rc < 0) {
		free(s);
		return (int)rc;
	}
	trace->dist_selected = s;
	return 0;
}

/* ---- Packing -------------------------------------------------------------------- */

/* Makes room for `more` bytes; sets `failed` when out of memory. */
static uint8_t *pack_room(weft__pack *p, size_t more)
{
	if (p->failed)
		return NULL;
	if (weft__array_grow((void **)&p->data, &p->cap, p->len + more, 1) < 0) {
		p->failed = 1;
		return NULL;
	}
	uint8_t *at = p->data + p->len;
	p->len += more;
	return at;
}

void weft__pack_u64(weft__pack *p, uint64_t v)
{
	uint8_t *at = pack_room(p, 8);
	for (int i = 0; at != NULL && i < 8; i++)
		at[i] = (uint8_t)(v >> (8 * i));
}

void weft__pack_bytes(weft__pack *p, const void *bytes, size_t len)
{
	weft__pack_u64(p, len);
	uint8_t *at = pack_room(p, len);
	if (at != NULL && len > 0)
		memcpy(at, bytes, len);
}

void weft__pack_raw(weft__pack *p, const void *bytes, size_t len)
{
	uint8_t *at = pack_room(p, len);
	if (at != NULL && len > 0)
		memcpy(at, bytes, len);
}

void weft__pack_text(weft__pack *p, const char *text)
{
	weft__pack_bytes(p, text ? text : "", text ? strlen(text) + 1 : 1);
}

void weft__pack_release(weft__pack *p)
{
	free(p->data);
	*p = (weft__pack){ 0 };
}

uint64_t weft__unpack_u64(weft__unpack *u)
{
	if (u->bad || u->len - u->pos < 8) {
		u->bad = 1;
		return 0;
	}
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v |= (uint64_t)u->data[u->pos + i] << (8 * i);
	u->pos += 8;
	return v;
}

const void *weft__unpack_bytes(weft__unpack *u, size_t *len)
{
	uint64_t n = weft__unpack_u64(u);
	if (u->bad || n > u->len - u->pos) {
		u->bad = 1;
		*len = 0;
		return NULL;
	}
	const void *at = u->data + u->pos;
	u->pos += (size_t)n;
	*len = (size_t)n;
	return at;
}

const char *weft__unpack_text(weft__unpack *u)
{
	size_t len;
	const char *t = weft__unpack_bytes(u, &len);
	if (t == NULL || len == 0 || t[len - 1] != '\0') {
		u->bad = 1;
		return "";
	}
	return t;
}

/* ---- Combining ---------------------------------------------------------------- */

/* What a rank sends: status, error, its diagnostics from `from` on, result. */
static void pack_report(weft__pack *p, weft_trace *trace, int rc, size_t from,
			const weft__pack *result)
{
	weft__pack_u64(p, (uint64_t)(int64_t)rc);
	weft__pack_text(p, rc < 0 ? weft_last_error() : "");
	size_t n = weft_trace_diag_count(trace);
	weft__pack_u64(p, n > from ? n - from : 0);
	for (size_t i = from; i < n; i++) {
		const weft_diag *d = weft_trace_diag(trace, i);
		const weft__diag_origin *o = &trace->diag_origins[i];
		weft__pack_u64(p, o->key != NULL);
		weft__pack_text(p, o->key);
		weft__pack_u64(p, o->stream);
		weft__pack_u64(p, (uint64_t)(int64_t)d->severity);
		weft__pack_u64(p, (uint64_t)(int64_t)d->status);
		weft__pack_text(p, d->file);
		weft__pack_u64(p, d->offset);
		weft__pack_text(p, d->message);
	}
	weft__pack_bytes(p, result ? result->data : NULL, result ? result->len : 0);
}

/*
 * Rank 0: takes one rank's report: its diagnostics onto the trace, its
 * error as the status when none came before, its result to `merge`.
 */
static int take_report(weft_trace *trace, int rank, weft__unpack *u, int status,
		       weft__dist_merge_fn merge, void *ctx)
{
	int64_t rc = (int64_t)weft__unpack_u64(u);
	const char *message = weft__unpack_text(u);
	uint64_t diags = weft__unpack_u64(u);
	for (uint64_t i = 0; !u->bad && i < diags; i++) {
		int keyed = weft__unpack_u64(u) != 0;
		const char *key = weft__unpack_text(u);
		uint32_t stream = (uint32_t)weft__unpack_u64(u);
		int severity = (int)(int64_t)weft__unpack_u64(u);
		int dstatus = (int)(int64_t)weft__unpack_u64(u);
		const char *file = weft__unpack_text(u);
		uint64_t offset = weft__unpack_u64(u);
		const char *text = weft__unpack_text(u);
		if (u->bad)
			break;
		if (keyed)
			weft__trace_diag_once(trace, key, stream, severity, dstatus,
					      *file ? file : NULL, offset, "%s", text);
		else
			weft__trace_diag_record(trace, NULL, stream, severity, dstatus,
						*file ? file : NULL, offset, text);
	}
	size_t len;
	const void *result = weft__unpack_bytes(u, &len);
	if (u->bad)
		return status < 0 ? status
		       : weft__error(WEFT_EFORMAT, NULL, WEFT_NO_OFFSET,
				     "rank %d sent a report that does not parse", rank);
	if (status < 0)
		return status;
	if (rc < 0)
		return weft__error((int)rc, NULL, WEFT_NO_OFFSET, "rank %d: %s", rank, message);
	if (merge == NULL)
		return 0;
	weft__unpack r = { .data = result, .len = len };
	int m = merge(ctx, &r);
	if (m == 0 && r.bad)
		m = weft__error(WEFT_EFORMAT, NULL, WEFT_NO_OFFSET,
				"rank %d sent a result that does not parse", rank);
	return m;
}

#define BROADCAST_CHUNK (64u << 10)

/*
 * Sent in chunks that every rank counts alike, so that a rank that cannot
 * hold the pack (out of memory, or `cannot_hold`: a test hook) still takes
 * part, into a scratch buffer, and fails alone: no rank waits for it.
 */
int weft__dist_broadcast_pack(const weft_dist *d, weft__pack *p, int cannot_hold)
{
	uint8_t scratch[BROADCAST_CHUNK];
	uint64_t len = p->failed ? 0 : p->len;
	int rc = d->broadcast(d->user, &len, sizeof len);
	if (rc < 0)
		return rc;
	if (d->rank != 0) {
		weft__pack_release(p);
		if (len > 0 && (cannot_hold || len > SIZE_MAX ||
				(p->data = malloc((size_t)len)) == NULL))
			rc = weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
		else
			p->len = p->cap = (size_t)len;
	}
	for (uint64_t at = 0; at < len; at += BROADCAST_CHUNK) {
		size_t n = len - at < BROADCAST_CHUNK ? (size_t)(len - at) : BROADCAST_CHUNK;
		int brc = d->broadcast(d->user, p->data != NULL ? p->data + at : scratch, n);
		if (brc < 0)
			return brc;
	}
	return rc;
}

/*
 * The error of stream `s`, whose file had `had` bytes on rank 0 (`booked`:
 * on the rank that read its metadata for rank 0) and `has` here.
 */
static int size_changed(const weft_stream_info *s, uint64_t had, uint64_t has, int booked)
{
	return weft__error(WEFT_ETRUNCATED, s->file != NULL ? s->file : s->path,
			   has < had ? has : had, "the file changed since it was opened: it had "
			   "%llu bytes on %s, it has %llu %s", (unsigned long long)had,
			   booked ? "the rank that read its metadata" : "rank 0",
			   (unsigned long long)has, booked ? "on rank 0" : "here");
}

/* This rank's streams against rank 0's (`u`: their count, then each file size). */
static int compare_sizes(const weft_trace *trace, weft__unpack *u)
{
	uint64_t count = weft__unpack_u64(u);
	if (!u->bad && count != trace->stream_count)
		return weft__error(WEFT_EFORMAT, trace->path, WEFT_NO_OFFSET,
				   "the trace changed since it was opened: %llu streams on "
				   "rank 0, %zu here", (unsigned long long)count,
				   trace->stream_count);
	for (size_t i = 0; i < trace->stream_count && !u->bad; i++) {
		const weft_stream_info *s = &trace->streams[i];
		uint64_t size = weft__unpack_u64(u);
		if (u->bad || size == s->file_size)
			continue;
		return size_changed(s, size, s->file_size, 0);
	}
	return u->bad ? weft__error(WEFT_EFORMAT, NULL, WEFT_NO_OFFSET,
				    "rank 0 sent file sizes that do not parse (a bug)") : 0;
}

int weft__dist_agree_sizes(const weft_trace *trace, const weft_dist *d)
{
	weft__pack sizes = { 0 };
	if (d->rank == 0 && trace != NULL) {
		weft__pack_u64(&sizes, trace->stream_count);
		for (size_t i = 0; i < trace->stream_count; i++)
			weft__pack_u64(&sizes, trace->streams[i].file_size);
	}
	int rc = d->rank == 0 && sizes.failed
		 ? weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory") : 0;
	int brc = weft__dist_broadcast_pack(d, &sizes, 0);
	if (rc == 0)
		rc = brc;
	if (rc == 0 && d->rank != 0 && trace != NULL && sizes.len > 0) {
		weft__unpack u = { .data = sizes.data, .len = sizes.len };
		rc = compare_sizes(trace, &u);
	}
	weft__pack_release(&sizes);
	return rc;
}

int weft__trace_check_sizes(const weft_trace *trace, const uint8_t *selected, int on_rank)
{
	if (trace->backend->stream_data_path == NULL)
		return 0; /* no data path per stream (OTF2, ROSS, Heph): 0 */
	for (size_t i = 0; selected != NULL && i < trace->stream_count; i++) {
		const weft_stream_info *s = &trace->streams[i];
		const char *path = selected[i] ? trace->backend->stream_data_path(trace, (uint32_t)i)
					       : NULL;
		struct stat st;
		if (path == NULL)
			continue;
		if (stat(path, &st) != 0)
			return weft__error_errno(s->file != NULL ? s->file : s->path,
						 "cannot read the stream's file");
		if ((uint64_t)st.st_size != s->file_size)
			return on_rank ? size_changed(s, s->file_size, (uint64_t)st.st_size,
						      on_rank == 2)
				       : weft__trace_size_changed(s, s->file_size,
								  (uint64_t)st.st_size);
	}
	return 0;
}

int weft__dist_combine(weft_trace *trace, int rc, size_t diag_from, weft__dist_pack_fn pack,
		       weft__dist_merge_fn merge, void *ctx)
{
	const weft_dist *d = trace->options.dist;
	weft__pack result = { 0 }, mine = { 0 };
	if (rc == 0 && pack != NULL) {
		pack(&result, ctx);
		if (result.failed)
			rc = weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	}
	pack_report(&mine, trace, rc, diag_from, rc == 0 ? &result : NULL);
	weft__pack_release(&result);
	size_t *lens = calloc((size_t)d->ranks, sizeof *lens);
	void *all = NULL;
	int status = rc;
	if (mine.failed || lens == NULL) {
		/* Still take part in the collectives: an empty report. */
		status = status < 0 ? status
			 : weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
		mine.len = 0;
	}
	size_t dummy[1];
	int g = d->gather(d->user, mine.data, mine.len, &all, lens ? lens : dummy);
	if (g < 0 && status >= 0)
		status = weft__error(g, NULL, WEFT_NO_OFFSET, "the ranks could not gather results");
	if (d->rank == 0 && all != NULL && lens != NULL) {
		size_t at = lens[0];
		for (int r = 1; r < d->ranks; r++) {
			weft__unpack u = { .data = (const uint8_t *)all + at, .len = lens[r] };
			status = take_report(trace, r, &u, status, merge, ctx);
			at += lens[r];
		}
	}
	free(all);
	free(lens);
	weft__pack_release(&mine);
	int64_t final = status;
	int b = d->broadcast(d->user, &final, sizeof final);
	if (b < 0)
		return weft__error(b, NULL, WEFT_NO_OFFSET, "the ranks could not agree on a status");
	if (d->rank != 0 && final < 0 && status >= 0)
		weft__error((int)final, NULL, WEFT_NO_OFFSET, "another rank failed (rank 0 says why)");
	return (int)final;
}

/* ---- The collective open's scan ------------------------------------------------- */

/* The hooks of a trace whose open left its scan to the ranks, or NULL. */
static const weft__dist_open_hooks *pending_scan(const weft_trace *trace)
{
	const weft__dist_open_hooks *h = trace != NULL ? trace->backend->dist_open : NULL;
	return h != NULL && h->pending(trace) ? h : NULL;
}

/* A rank's scan, sent as its result; rank 0 merges the others' in rank order. */
typedef struct open_scan {
	weft_trace *trace;
	const weft__dist_open_hooks *hooks;
	weft__pack scan;
	int next_rank;
} open_scan;

static void pack_scan(weft__pack *p, const void *ctx)
{
	const open_scan *s = ctx;
	weft__pack_raw(p, s->scan.data, s->scan.len);
}

static int merge_scan(void *ctx, weft__unpack *u)
{
	open_scan *s = ctx;
	return s->hooks->merge(s->trace, s->next_rank++, u);
}

/*
 * Every rank's scan of its pieces, merged on rank 0 (its own first); 0,
 * or an error every rank returns.
 */
static int gather_scans(weft_trace *trace, const weft_dist *d, int rc,
			const weft__dist_open_hooks *h)
{
	weft_trace failed = { .options = { .dist = d } };
	weft_trace *t = rc == 0 ? trace : &failed;
	open_scan s = { trace, h, { 0 }, 1 };
	if (rc == 0) {
		size_t before = weft_trace_diag_count(trace);
		uint64_t dropped = trace->diags_dropped;
		rc = h->scan(trace, &s.scan);
		if (rc == 0 && s.scan.failed)
			rc = weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
		/* A piece that has a problem is scanned again whole, which
		 * reports it: the pieces' scans report nothing. */
		weft__trace_diags_forget(trace, before, dropped);
	}
	if (rc == 0 && d->rank == 0) {
		weft__unpack own = { .data = s.scan.data, .len = s.scan.len };
		rc = h->merge(trace, 0, &own);
		weft__pack_release(&s.scan); /* taken: not sent to itself */
	}
	rc = weft__dist_combine(t, rc, weft_trace_diag_count(t), pack_scan, merge_scan, &s);
	weft__pack_release(&s.scan);
	return rc;
}

int weft__dist_open_scan(weft_trace *trace, const weft_dist *d, int rc)
{
	/* Rank 0 says whether a scan follows: its open left one. */
	uint64_t pending = d->rank == 0 && rc == 0 && pending_scan(trace) != NULL;
	int b = d->broadcast(d->user, &pending, sizeof pending);
	if (b < 0 && rc == 0)
		rc = weft__error(b, NULL, WEFT_NO_OFFSET, "the ranks could not start the open");
	if (!pending || b < 0)
		return rc;
	const weft__dist_open_hooks *h = rc == 0 ? pending_scan(trace) : NULL;
	if (rc == 0 && h == NULL)
		rc = weft__error(WEFT_EFORMAT, trace->path, WEFT_NO_OFFSET,
				 "rank %d opened the trace as %s, not as rank 0 did", d->rank,
				 weft_format_name(weft_trace_format(trace)));
	rc = gather_scans(trace, d, rc, h);
	if (rc < 0) /* the same status on every rank: no rank waits below */
		return rc;
	weft__pack result = { 0 };
	if (d->rank == 0) {
		rc = h->result(trace, &result);
		if (rc == 0 && result.failed)
			rc = weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
		if (rc < 0) /* sent empty: the others fail to take it */
			weft__pack_release(&result);
	}
	int brc = weft__dist_broadcast_pack(d, &result, 0);
	if (rc == 0)
		rc = brc;
	if (rc == 0) {
		weft__unpack u = { .data = result.data, .len = result.len };
		rc = h->apply(trace, &u);
	}
	weft__pack_release(&result);
	return rc;
}

size_t weft__dist_pieces(const weft_trace *trace)
{
	const weft__dist_open_hooks *h = trace->backend->dist_open;
	return weft__dist_active(trace) && h != NULL ? h->pieces(trace) : 0;
}
