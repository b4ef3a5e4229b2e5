/* SPDX-License-Identifier: MIT */
/*
 * formats/ovni/ovni_sort.c - sorting unordered regions on disk, like
 * ovnisort, but safely: a stream is rewritten to a temporary file next to
 * it, synced, and renamed over the original only when complete, so an
 * interrupted sort never leaves a half-written stream behind.
 *
 * The sorted order is the one the stream reader delivers (see
 * ovni_stream.c), so `weft sort` and reading an unsorted trace agree.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "formats/ovni/ovni_internal.h"

/* The stored bytes of an event delivered by the ovni reader. */
static const unsigned char *event_bytes(const weft_event *ev, uint64_t *size)
{
	*size = OVNI_EVENT_HEADER_SIZE + ev->payload_size + ev->data_size;
	return (const unsigned char *)ev->code - 1;
}

/* Counts regions and out-of-place events of one stream. */
static int survey_stream(weft_trace *t, uint32_t s, uint64_t *regions, uint64_t *moved)
{
	weft_cursor *c;
	int rc = weft_cursor_create_stream(t, s, &c);
	if (rc < 0)
		return rc;
	const weft_event *ev;
	*regions = *moved = 0;
	while ((rc = weft_cursor_next(c, &ev)) == 1) {
		if (ev->code_len == 3 && memcmp(ev->code, "OU[", 3) == 0)
			(*regions)++;
		if (ev->flags & WEFT_EVENT_REORDERED)
			(*moved)++;
	}
	weft_cursor_free(c);
	return rc;
}

/* Writes every event of stream s, sorted, after the 8-byte header. */
static int write_sorted(weft_trace *t, uint32_t s, int fd, const char *tmp_name)
{
	const ovni_data *d = t->backend_data;
	weft_mapfile mf;
	int rc = weft__mapfile_open(&mf, d->streams[s].abs_file, t->streams[s].file, 0);
	if (rc < 0)
		return rc;
	const unsigned char *header = weft__mapfile_get(&mf, 0, OVNI_STREAM_HEADER_SIZE);
	FILE *out = fdopen(dup(fd), "wb");
	if (header == NULL || out == NULL) {
		weft__mapfile_close(&mf);
		if (out)
			fclose(out);
		return header ? weft__error_errno(tmp_name, "cannot write") : WEFT_ETRUNCATED;
	}
	fwrite(header, 1, OVNI_STREAM_HEADER_SIZE, out);
	weft__mapfile_close(&mf);
	weft_cursor *c;
	rc = weft_cursor_create_stream(t, s, &c);
	const weft_event *ev;
	while (rc == 0 && (rc = weft_cursor_next(c, &ev)) == 1) {
		uint64_t size;
		const unsigned char *bytes = event_bytes(ev, &size);
		rc = fwrite(bytes, 1, size, out) == size ? 0 :
		     weft__error_errno(tmp_name, "cannot write");
	}
	weft_cursor_free(c);
	if (fclose(out) != 0 && rc >= 0)
		rc = weft__error_errno(tmp_name, "cannot write");
	return rc < 0 ? rc : 0;
}

/* Rewrites stream s sorted: temporary file, fsync, rename. */
static int rewrite_stream(weft_trace *t, uint32_t s)
{
	const ovni_data *d = t->backend_data;
	const char *path = d->streams[s].abs_file;
	size_t n = strlen(path);
	char *tmp = malloc(n + 32);
	if (tmp == NULL)
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	snprintf(tmp, n + 32, "%s.weft-sort.XXXXXX", path);
	int fd = mkstemp(tmp);
	if (fd < 0) {
		int rc = weft__error_errno(tmp, "cannot create");
		free(tmp);
		return rc;
	}
	struct stat st;
	if (stat(path, &st) == 0)
		fchmod(fd, st.st_mode & 07777);
	int rc = write_sorted(t, s, fd, tmp);
	if (rc == 0 && fsync(fd) != 0)
		rc = weft__error_errno(tmp, "cannot sync");
	close(fd);
	if (rc == 0 && rename(tmp, path) != 0)
		rc = weft__error_errno(path, "cannot replace");
	if (rc != 0)
		unlink(tmp);
	free(tmp);
	return rc;
}

/*
 * The first warning or error reading the stream reported since
 * diags_before, or NULL. A stream with a truncated tail, bad bytes or a
 * region beyond the look-back is left as it is: rewriting it would drop
 * or misplace bytes. Notes (payloads longer than their signature) change
 * nothing here: events are copied whole.
 */
static const weft_diag *stream_problem(const weft_trace *t, size_t diags_before)
{
	for (size_t i = diags_before; i < t->diag_count; i++)
		if (t->diags[i].severity != WEFT_SEV_NOTE)
			return &t->diags[i];
	return NULL;
}

/* ---- Shared among threads and MPI ranks ---------------------------------------- */

/*
 * Sorting is done stream by stream, so threads (core/parts.c) and ranks
 * (weft/dist.h) each take their share of the streams, in two phases: the
 * survey (read only: regions, events out of place, problems), then,
 * once the first stream that fails is known, the rewrite of the unsorted
 * streams before it. So the files come out as one process sorting stream
 * after stream leaves them (it stops at the first stream it cannot
 * sort), and so do the report and the message. Only a rewrite that fails
 * (a full disk) differs: streams after it that another thread or rank
 * rewrote stay rewritten, each whole.
 */
enum sort_phase { SURVEY = 0, REWRITE = 1 };

typedef struct sort_stream {
	uint64_t regions, moved;
	int status;            /* < 0: this phase failed on the stream */
	int rewritten;
	weft__error_copy *error; /* what it failed with */
} sort_stream;

typedef struct sort_table {
	sort_stream *streams;
	size_t count;
	const uint8_t *selected; /* this part's or rank's streams, NULL: all */
	int phase;
	uint64_t limit;          /* REWRITE: the streams before it */
} sort_table;

/* Records that stream s failed with the last error; 0 or ENOMEM. */
static int stream_failed(sort_stream *r, int status)
{
	r->status = status;
	r->error = calloc(1, sizeof *r->error);
	if (r->error == NULL)
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	weft__error_save(r->error, status);
	return 0;
}

/* Surveys stream s into r; 0, or ENOMEM (a stream's failure is in r). */
static int survey_one(weft_trace *t, uint32_t s, sort_stream *r)
{
	size_t diags_before = t->diag_count;
	int rc = survey_stream(t, s, &r->regions, &r->moved);
	if (rc < 0)
		return stream_failed(r, rc);
	const weft_diag *problem = stream_problem(t, diags_before);
	if (problem == NULL)
		return 0;
	return stream_failed(r, weft__error(WEFT_EFORMAT, t->streams[s].file, WEFT_NO_OFFSET,
					    "the stream has problems (%s): not sorted, "
					    "so that no byte is lost", problem->message));
}

/*
 * This phase on the streams of tab->selected (NULL: all) of handle t, in
 * stream order, until one fails: the later ones come after it anyway.
 * 0, or ENOMEM.
 */
static int sort_streams(weft_trace *t, sort_table *tab)
{
	for (uint32_t s = 0; s < tab->count; s++) {
		sort_stream *r = &tab->streams[s];
		if (tab->selected != NULL && !tab->selected[s])
			continue;
		int rc = 0;
		if (tab->phase == SURVEY)
			rc = survey_one(t, s, r);
		else if (s < tab->limit && r->moved > 0)
			rc = (rc = rewrite_stream(t, s)) == 0 ? (r->rewritten = 1, 0)
							      : stream_failed(r, rc);
		if (rc < 0)
			return rc;
		if (r->status < 0)
			break;
	}
	return 0;
}

/* The streams of `selected`: index, figures, status and its error. */
static void pack_sort(weft__pack *p, const void *ctx)
{
	const sort_table *tab = ctx;
	for (size_t i = 0; i < tab->count; i++) {
		const sort_stream *r = &tab->streams[i];
		if (tab->selected != NULL && !tab->selected[i])
			continue;
		weft__pack_u64(p, i);
		weft__pack_u64(p, r->regions);
		weft__pack_u64(p, r->moved);
		weft__pack_u64(p, (uint64_t)(int64_t)r->status);
		weft__pack_u64(p, (uint64_t)r->rewritten);
		if (r->status < 0) {
			weft__pack_u64(p, (uint64_t)r->error->has_file);
			weft__pack_text(p, r->error->file);
			weft__pack_u64(p, r->error->offset);
			weft__pack_text(p, r->error->text);
		}
	}
}

/* Another part's streams into the table (each stream has one part). */
static int merge_sort(void *ctx, weft__unpack *u)
{
	sort_table *tab = ctx;
	while (!u->bad && u->pos < u->len) {
		uint64_t i = weft__unpack_u64(u);
		sort_stream got = { 0 };
		got.regions = weft__unpack_u64(u);
		got.moved = weft__unpack_u64(u);
		got.status = (int)(int64_t)weft__unpack_u64(u);
		got.rewritten = weft__unpack_u64(u) != 0;
		weft__error_copy e = { .status = got.status };
		if (got.status < 0) {
			e.has_file = weft__unpack_u64(u) != 0;
			snprintf(e.file, sizeof e.file, "%s", weft__unpack_text(u));
			e.offset = weft__unpack_u64(u);
			snprintf(e.text, sizeof e.text, "%s", weft__unpack_text(u));
		}
		if (u->bad || i >= tab->count || got.status > 0) {
			u->bad = 1;
			break;
		}
		sort_stream *r = &tab->streams[i];
		free(r->error);
		*r = got;
		if (got.status < 0) {
			r->error = malloc(sizeof *r->error);
			if (r->error == NULL)
				return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
			*r->error = e;
		}
	}
	return 0;
}

/* A thread's part (weft__part_fn): the phase on its streams, packed. */
static int sort_part(weft_trace *handle, const uint8_t *selected, weft__pack *result, void *arg)
{
	const sort_table *whole = arg;
	sort_table part = *whole;
	part.streams = calloc(whole->count ? whole->count : 1, sizeof *part.streams);
	if (part.streams == NULL)
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	/* the rewrite needs what the survey found */
	for (size_t i = 0; i < whole->count; i++)
		part.streams[i].moved = whole->streams[i].moved;
	part.selected = selected;
	int rc = sort_streams(handle, &part);
	if (rc == 0)
		pack_sort(result, &part);
	for (size_t i = 0; i < part.count; i++)
		free(part.streams[i].error);
	free(part.streams);
	return rc;
}

/*
 * One phase over this process's streams (its rank's), on threads when
 * worth it, then, on several ranks, every rank's streams onto rank 0's
 * table (collective). 0, or a failure of the whole (ENOMEM, the ranks).
 */
static int sort_phase(weft_trace *t, sort_table *tab)
{
	const uint8_t *share = weft__dist_selected(t);
	size_t diags = t->diag_count;
	tab->selected = share;
	int threads = weft__parts_threads(t, share, 0, WEFT__WORK_HEAVY);
	int rc = threads <= 1 ? sort_streams(t, tab)
		 : weft__parts_run(t, share, threads, sort_part, tab, merge_sort, tab);
	if (weft__dist_active(t))
		rc = weft__dist_combine(t, rc, diags, pack_sort, merge_sort, tab);
	return rc;
}

/* The first stream that failed in this phase, or tab->count. */
static uint64_t first_failure(const sort_table *tab)
{
	for (size_t i = 0; i < tab->count; i++)
		if (tab->streams[i].status < 0)
			return i;
	return tab->count;
}

/* Every rank takes rank 0's `value` (a no-op without ranks). 0 or < 0. */
static int agree_on(weft_trace *t, uint64_t *value)
{
	if (!weft__dist_active(t))
		return 0;
	const weft_dist *d = t->options.dist;
	int rc = d->broadcast(d->user, value, sizeof *value);
	return rc < 0 ? weft__error(rc, NULL, WEFT_NO_OFFSET, "the ranks could not agree") : 0;
}

/*
 * What one process sorting stream after stream reports: it stops at the
 * first stream whose survey fails (`stop`) or, before it, whose rewrite
 * fails; that stream's error is the status. Rank 0's tables.
 */
static int sort_outcome(const sort_table *survey, const sort_table *rewrite, uint64_t stop,
			weft_ovni_sort_report *report)
{
	uint64_t failed = rewrite != NULL ? first_failure(rewrite) : survey->count;
	if (failed < stop)
		return weft__error_raise(rewrite->streams[failed].error);
	if (stop < survey->count)
		return weft__error_raise(survey->streams[stop].error);
	for (size_t i = 0; i < survey->count; i++) {
		const sort_stream *r = &survey->streams[i];
		report->streams++;
		report->regions += r->regions;
		report->moved_events += r->moved;
		report->unsorted_streams += r->moved > 0;
		report->rewritten_streams += rewrite != NULL && rewrite->streams[i].rewritten;
	}
	return 0;
}

/* A table of `count` streams for a phase; NULL when out of memory. */
static sort_stream *streams_new(size_t count)
{
	return calloc(count ? count : 1, sizeof(sort_stream));
}

static void streams_free(sort_stream *streams, size_t count)
{
	for (size_t i = 0; streams != NULL && i < count; i++)
		free(streams[i].error);
	free(streams);
}

/*
 * Both phases; rank 0's outcome is every rank's status (the others say
 * that rank 0 has the reason; their reports are their own streams').
 */
static int sort_trace(weft_trace *t, int check_only, weft_ovni_sort_report *report)
{
	size_t n = t->stream_count;
	sort_table survey = { streams_new(n), n, NULL, SURVEY, 0 };
	sort_table rewrite = { streams_new(n), n, NULL, REWRITE, 0 };
	int rc = survey.streams != NULL && rewrite.streams != NULL
		 ? 0 : weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	if (weft__dist_active(t)) /* every rank is ready, or none goes on */
		rc = weft__dist_combine(t, rc, t->diag_count, NULL, NULL, NULL);
	if (rc == 0)
		rc = sort_phase(t, &survey);
	uint64_t stop = rc == 0 ? first_failure(&survey) : 0;
	if (rc == 0)
		rc = agree_on(t, &stop);
	if (rc == 0 && !check_only) {
		/* each rank knows what its own streams need */
		for (size_t i = 0; i < n; i++)
			rewrite.streams[i].moved = survey.streams[i].moved;
		rewrite.limit = stop;
		rc = sort_phase(t, &rewrite);
	}
	if (rc == 0 && weft__dist_root(t))
		rc = sort_outcome(&survey, check_only ? NULL : &rewrite, stop, report);
	if (weft__dist_active(t)) {
		int64_t verdict = rc;
		int agreed = t->options.dist->broadcast(t->options.dist->user, &verdict,
							sizeof verdict);
		if (agreed < 0 && rc == 0)
			rc = weft__error(agreed, NULL, WEFT_NO_OFFSET, "the ranks could not agree");
		else if (!weft__dist_root(t) && verdict < 0 && rc == 0)
			rc = weft__error((int)verdict, NULL, WEFT_NO_OFFSET,
					 "the sort failed (rank 0 says why)");
	}
	streams_free(survey.streams, n);
	streams_free(rewrite.streams, n);
	return rc;
}

int weft_ovni_sort(const char *path, int check_only, weft_ovni_sort_report *report)
{
	return weft_ovni_sort_with(path, NULL, check_only, report);
}

int weft_ovni_sort_with(const char *path, const weft_open_options *options, int check_only,
			weft_ovni_sort_report *report)
{
	weft_open_options o;
	if (options != NULL)
		o = *options;
	else
		weft_open_options_init(&o);
	o.format = WEFT_FORMAT_OVNI;
	weft_trace *t;
	memset(report, 0, sizeof *report);
	int rc = weft_trace_open(path, &o, &t);
	if (rc < 0)
		return rc;
	weft__progress_begin(t, "sorting");
	rc = sort_trace(t, check_only, report);
	weft__progress_end(t);
	weft_trace_free(t);
	return rc;
}
