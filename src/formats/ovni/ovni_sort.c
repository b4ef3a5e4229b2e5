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
	for (uint32_t s = 0; rc == 0 && s < t->stream_count; s++) {
		uint64_t regions, moved;
		size_t diags_before = t->diag_count;
		rc = survey_stream(t, s, &regions, &moved);
		if (rc < 0)
			break;
		const weft_diag *problem = stream_problem(t, diags_before);
		if (problem != NULL) {
			rc = weft__error(WEFT_EFORMAT, t->streams[s].file, WEFT_NO_OFFSET,
					 "the stream has problems (%s): not sorted, "
					 "so that no byte is lost", problem->message);
			break;
		}
		report->streams++;
		report->regions += regions;
		report->moved_events += moved;
		if (moved == 0)
			continue;
		report->unsorted_streams++;
		if (check_only)
			continue;
		rc = rewrite_stream(t, s);
		if (rc == 0)
			report->rewritten_streams++;
	}
	weft__progress_end(t);
	weft_trace_free(t);
	return rc;
}
