/* SPDX-License-Identifier: MIT */
/*
 * formats/ross/ross_share.c - the open of a ROSS run shared by the ranks
 * of a weft_dist (core/dist.c: weft__dist_open_scan), and the pieces the
 * ranks then read.
 *
 * Why: alone, the open frames every record of every file once
 * (ross_open.c), and the analyses read every file again. On R ranks,
 * every rank made that whole pass, then rank 0 alone read the files: no
 * work was shared. Now each file is cut into R equal byte pieces, and
 * rank r frames the records of piece r only.
 *
 * How the pieces stay exact: ROSS records have no marker, so the first
 * record start a rank finds in the middle of a file is a guess (where a
 * run of real-looking records starts). Rank r frames from its guess up
 * to the first record boundary at or past the end of its piece; rank 0
 * then checks every guess against the boundary the previous piece's
 * framing reached. Piece 0 starts at byte 0, so by induction every piece
 * is framed exactly as one pass from the start frames it. A guess that
 * does not match, a bad or cut record, a file too small to cut (below
 * 1 MiB a rank): that file is scanned whole by every rank, as alone, and
 * its problems are reported as alone.
 *
 * The streams the ranks found are merged on rank 0 (records added, the
 * first and last offsets kept) and the table goes back to every rank,
 * which finishes its open with it: the same trace as alone. The guesses,
 * now checked, are the cuts (ross_file.cuts) that split the reading: a
 * rank's analyses read its own pieces (weft__cursor_create_pieces).
 *
 * Alone, on N threads (weft__ross_open_on_threads), the open is the same
 * scan with threads for ranks: each thread frames its piece of each file
 * through a handle of its own (a copy of the files, its own table of
 * streams), and the calling thread merges the packs as rank 0 does; the
 * files are then cut for N threads, whose analyses read a piece each
 * through handles that borrow the trace (core/parts.c weft__pieces_run).
 *
 * Messages (core/dist.c packs):
 *   scan:   the file count; per file: clean, size, start, end, records,
 *           the notes (8 numbers); then the rank's streams: their count,
 *           then file, class, pe, kp, lp, records, first and last offsets;
 *   result: the file count; per file: clean, and for a clean one its
 *           records, notes and cuts (parts + 1); then the streams of the
 *           clean files, as above.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "formats/ross/ross_internal.h"

/* Rank 0's merge: each rank's piece of each file ([file * parts + rank]). */
typedef struct ross_share {
	ross_piece *pieces;
	int overflow; /* more streams than ROSS_MAX_STREAMS: scanned whole */
} ross_share;

void weft__ross_share_free(struct ross_share *share)
{
	if (share == NULL)
		return;
	free(share->pieces);
	free(share);
}

/* ---- Packing ---------------------------------------------------------------------- */

static void pack_notes(weft__pack *p, const ross_notes *n)
{
	weft__pack_u64(p, n->clamped);
	weft__pack_u64(p, n->first_clamped);
	weft__pack_u64(p, n->reversed);
	weft__pack_u64(p, n->first_reversed);
	weft__pack_u64(p, n->short_model);
	weft__pack_u64(p, n->first_short_model);
	weft__pack_u64(p, (uint64_t)n->lp_sizes);
	weft__pack_u64(p, (uint64_t)n->saw_end_time);
}

static void unpack_notes(weft__unpack *u, ross_notes *n)
{
	n->clamped = weft__unpack_u64(u);
	n->first_clamped = weft__unpack_u64(u);
	n->reversed = weft__unpack_u64(u);
	n->first_reversed = weft__unpack_u64(u);
	n->short_model = weft__unpack_u64(u);
	n->first_short_model = weft__unpack_u64(u);
	n->lp_sizes = (int)(weft__unpack_u64(u) & 3);
	n->saw_end_time = weft__unpack_u64(u) != 0;
}

/* The streams of the table (of clean files only, when `clean` is given). */
static void pack_streams(weft__pack *p, const ross_data *d, const uint8_t *clean)
{
	uint64_t count = 0;
	for (size_t i = 0; i < d->stream_count; i++)
		count += clean == NULL || clean[d->streams[i].key.file];
	weft__pack_u64(p, count);
	for (size_t i = 0; i < d->stream_count; i++) {
		const ross_stream *st = &d->streams[i];
		if (clean != NULL && !clean[st->key.file])
			continue;
		weft__pack_u64(p, st->key.file);
		weft__pack_u64(p, st->key.cls);
		weft__pack_u64(p, st->key.pe);
		weft__pack_u64(p, st->key.kp);
		weft__pack_u64(p, st->key.lp);
		weft__pack_u64(p, st->records);
		weft__pack_u64(p, st->first_offset);
		weft__pack_u64(p, st->last_offset);
	}
}

/*
 * Adds packed streams to the table: a known one gets the records and
 * the first and last offsets of both. Sets *overflow when the table is
 * full (then the caller scans the files whole).
 */
static int take_streams(ross_data *d, weft__unpack *u, int *overflow)
{
	uint64_t count = weft__unpack_u64(u);
	for (uint64_t k = 0; k < count && !u->bad; k++) {
		ross_key key;
		memset(&key, 0, sizeof key);
		key.file = (uint32_t)weft__unpack_u64(u);
		key.cls = (uint8_t)weft__unpack_u64(u);
		key.pe = weft__unpack_u64(u);
		key.kp = weft__unpack_u64(u);
		key.lp = weft__unpack_u64(u);
		uint64_t records = weft__unpack_u64(u);
		uint64_t first = weft__unpack_u64(u), last = weft__unpack_u64(u);
		if (u->bad || key.file >= d->file_count || key.cls >= ROSS_REC_COUNT || records == 0) {
			u->bad = 1;
			break;
		}
		int64_t idx = weft__ross_stream_lookup(d, &key);
		if (idx < 0 && d->stream_count >= ROSS_MAX_STREAMS) {
			*overflow = 1;
			continue;
		}
		if (idx < 0 && (idx = weft__ross_stream_insert(d, &key)) < 0)
			return (int)idx;
		ross_stream *st = &d->streams[idx];
		if (st->records == 0 || first < st->first_offset)
			st->first_offset = first;
		if (st->records == 0 || last > st->last_offset)
			st->last_offset = last;
		st->records += records;
	}
	return u->bad ? weft__error(WEFT_EFORMAT, NULL, WEFT_NO_OFFSET,
				    "a rank sent ROSS streams that do not parse (a bug)") : 0;
}

/* The table emptied (the map too). */
static int clear_streams(ross_data *d)
{
	d->stream_count = 0;
	return weft__ross_map_rebuild(d);
}

/* ---- The hooks ---------------------------------------------------------------------- */

static int share_pending(const weft_trace *trace)
{
	const ross_data *d = trace->backend_data;
	return d != NULL && d->pending;
}

/* Piece `part` of each file, and the streams found there. */
static int scan_part(weft_trace *trace, int part, weft__pack *out)
{
	ross_data *d = trace->backend_data;
	weft__pack_u64(out, d->file_count);
	for (uint32_t i = 0; i < d->file_count; i++) {
		ross_piece pc;
		int rc = weft__ross_scan_piece(trace, i, part, &pc);
		if (rc < 0)
			return rc;
		weft__pack_u64(out, (uint64_t)pc.clean);
		weft__pack_u64(out, pc.size);
		weft__pack_u64(out, pc.start);
		weft__pack_u64(out, pc.end);
		weft__pack_u64(out, pc.records);
		pack_notes(out, &pc.notes);
	}
	pack_streams(out, d, NULL);
	/* From here the table is rank 0's merge, then the result. */
	return clear_streams(d);
}

/* Every rank: its piece of each file, and the streams found there. */
static int share_scan(weft_trace *trace, weft__pack *out)
{
	return scan_part(trace, trace->options.dist->rank, out);
}

/* Rank 0: the pack of rank `rank` (its own first, then in rank order). */
static int share_merge(weft_trace *trace, int rank, weft__unpack *u)
{
	ross_data *d = trace->backend_data;
	size_t parts = (size_t)d->parts;
	if (d->share == NULL) {
		d->share = calloc(1, sizeof *d->share);
		if (d->share != NULL)
			d->share->pieces = calloc(d->file_count * parts + 1, sizeof(ross_piece));
		if (d->share == NULL || d->share->pieces == NULL)
			return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	}
	if (rank < 0 || (size_t)rank >= parts || weft__unpack_u64(u) != d->file_count)
		u->bad = 1;
	for (size_t i = 0; i < d->file_count && !u->bad; i++) {
		ross_piece *pc = &d->share->pieces[i * parts + (size_t)rank];
		pc->clean = weft__unpack_u64(u) == 1;
		pc->size = weft__unpack_u64(u);
		pc->start = weft__unpack_u64(u);
		pc->end = weft__unpack_u64(u);
		pc->records = weft__unpack_u64(u);
		unpack_notes(u, &pc->notes);
	}
	if (u->bad)
		return weft__error(WEFT_EFORMAT, NULL, WEFT_NO_OFFSET,
				   "rank %d sent ROSS pieces that do not parse (a bug)", rank);
	return take_streams(d, u, &d->share->overflow);
}

/*
 * 1 when the pieces of a file join up: piece 0 starts at 0, each piece
 * starts where the framing of the one before it stopped, the last ends at
 * the end of the file, and every rank saw the same size.
 */
static int pieces_join(const ross_piece *pc, int parts)
{
	if (pc[0].start != 0)
		return 0;
	for (int r = 0; r < parts; r++)
		if (!pc[r].clean || pc[r].size != pc[0].size ||
		    pc[r].end != (r + 1 < parts ? pc[r + 1].start : pc[0].size))
			return 0;
	return 1;
}

/* The notes of a file: counts added, the first place from the first piece that has one. */
static void add_notes(ross_notes *all, const ross_notes *n)
{
	if (all->clamped == 0)
		all->first_clamped = n->first_clamped;
	if (all->reversed == 0)
		all->first_reversed = n->first_reversed;
	if (all->short_model == 0)
		all->first_short_model = n->first_short_model;
	all->clamped += n->clamped;
	all->reversed += n->reversed;
	all->short_model += n->short_model;
	all->lp_sizes |= n->lp_sizes;
	all->saw_end_time |= n->saw_end_time;
}

/* Rank 0: which files were scanned cleanly, their counts and cuts, their streams. */
static int share_result(weft_trace *trace, weft__pack *out)
{
	ross_data *d = trace->backend_data;
	int parts = d->parts;
	uint8_t *clean = calloc(d->file_count ? d->file_count : 1, 1);
	if (clean == NULL || d->share == NULL) {
		free(clean);
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	}
	weft__pack_u64(out, d->file_count);
	for (size_t i = 0; i < d->file_count; i++) {
		const ross_piece *pc = &d->share->pieces[i * (size_t)parts];
		clean[i] = !d->share->overflow && pieces_join(pc, parts);
		weft__pack_u64(out, clean[i]);
		if (!clean[i])
			continue;
		ross_notes notes;
		uint64_t records = 0;
		memset(&notes, 0, sizeof notes);
		for (int r = 0; r < parts; r++) {
			records += pc[r].records;
			add_notes(&notes, &pc[r].notes);
		}
		weft__pack_u64(out, records);
		pack_notes(out, &notes);
		for (int r = 0; r < parts; r++)
			weft__pack_u64(out, pc[r].start);
		weft__pack_u64(out, pc[0].size);
	}
	pack_streams(out, d, clean);
	free(clean);
	weft__ross_share_free(d->share);
	d->share = NULL;
	return clear_streams(d);
}

/* Every rank: rank 0's result, then the rest of the open (ross_open.c). */
static int share_apply(weft_trace *trace, weft__unpack *u)
{
	ross_data *d = trace->backend_data;
	size_t parts = (size_t)d->parts;
	ross_file_scanned *scanned = calloc(d->file_count ? d->file_count : 1, sizeof *scanned);
	if (scanned == NULL)
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	int rc = clear_streams(d);
	if (weft__unpack_u64(u) != d->file_count)
		u->bad = 1;
	for (size_t i = 0; rc == 0 && i < d->file_count && !u->bad; i++) {
		ross_file *f = &d->files[i];
		scanned[i].clean = weft__unpack_u64(u) == 1;
		if (!scanned[i].clean)
			continue;
		scanned[i].records = weft__unpack_u64(u);
		unpack_notes(u, &scanned[i].notes);
		if (f->cuts == NULL && (f->cuts = calloc(parts + 1, sizeof *f->cuts)) == NULL)
			rc = weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
		for (size_t k = 0; rc == 0 && k <= parts; k++) {
			f->cuts[k] = weft__unpack_u64(u);
			if (k > 0 ? f->cuts[k] < f->cuts[k - 1] : f->cuts[0] != 0)
				u->bad = 1; /* pieces that leave out the start or go back */
		}
	}
	int overflow = 0;
	if (rc == 0 && !u->bad)
		rc = take_streams(d, u, &overflow);
	if (rc == 0 && (u->bad || overflow))
		rc = weft__error(WEFT_EFORMAT, NULL, WEFT_NO_OFFSET,
				 "rank 0 sent a ROSS scan that does not parse (a bug)");
	if (rc == 0)
		rc = weft__ross_open_finish(trace, scanned);
	free(scanned);
	return rc;
}

/* ---- Alone, on threads ------------------------------------------------------------------ */

/*
 * One thread's scan of its piece of each file: through a handle that
 * borrows the trace with data of its own (a copy of the files, an empty
 * table of streams), packed as a rank's scan.
 */
typedef struct thread_scan {
	weft_trace *handle;
	ross_data data;
	int part;
	weft__pack pack;
	int rc;
	weft__error_copy error; /* errors are per thread */
	pthread_t thread;
	weft__progress_cell progress; /* published by the thread */
} thread_scan;

/* The handle and data of a thread's scan, from the trace's (files copied). */
static int scan_handle(weft_trace *trace, thread_scan *t)
{
	const ross_data *d = trace->backend_data;
	int rc = weft__trace_borrow(trace, 0, 0, &t->handle);
	if (rc < 0)
		return rc;
	t->data = *d;
	t->data.streams = NULL;
	t->data.stream_count = t->data.stream_cap = 0;
	t->data.map = NULL;
	t->data.map_cap = 0;
	t->data.share = NULL;
	t->data.files = malloc((d->file_count ? d->file_count : 1) * sizeof *t->data.files);
	if (t->data.files == NULL)
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	for (size_t i = 0; i < d->file_count; i++) {
		t->data.files[i] = d->files[i]; /* names shared, read only */
		t->data.files[i].skips = NULL;
		t->data.files[i].skip_count = t->data.files[i].skip_cap = 0;
		t->data.files[i].cuts = NULL;
	}
	t->handle->backend_data = &t->data;
	weft_trace_set_progress(t->handle, weft__progress_cell_publish, &t->progress,
				10 * 1000 * 1000);
	return 0;
}

/* Frees what scan_handle made (the pieces' scans make no skips or cuts). */
static void scan_handle_free(thread_scan *t)
{
	free(t->data.files);
	free(t->data.streams);
	free(t->data.map);
	weft_trace_free(t->handle);
	weft__pack_release(&t->pack);
}

static void *scan_thread(void *arg)
{
	thread_scan *t = arg;
	t->rc = scan_part(t->handle, t->part, &t->pack);
	if (t->rc == 0 && t->pack.failed)
		t->rc = weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	if (t->rc < 0)
		weft__error_save(&t->error, t->rc);
	weft__progress_cell_finish(&t->progress);
	return NULL;
}

/*
 * Takes the threads' scans in part order, as rank 0 takes the ranks'
 * (share_merge), then their outcome (share_result, share_apply), which
 * finishes the open. 0 or an error.
 */
static int take_scans(weft_trace *trace, thread_scan *ts, int started, int rc)
{
	for (int k = 0; k < started; k++) {
		pthread_join(ts[k].thread, NULL);
		__atomic_fetch_add(&trace->progress.bytes,
				   __atomic_load_n(&ts[k].handle->progress.bytes, __ATOMIC_RELAXED),
				   __ATOMIC_RELAXED);
		if (rc == 0 && ts[k].rc < 0)
			rc = weft__error_raise(&ts[k].error);
		if (rc == 0) {
			weft__unpack u = { .data = ts[k].pack.data, .len = ts[k].pack.len };
			rc = share_merge(trace, k, &u);
		}
		scan_handle_free(&ts[k]);
	}
	weft__pack result = { 0 };
	if (rc == 0)
		rc = share_result(trace, &result);
	if (rc == 0 && result.failed)
		rc = weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	if (rc == 0) {
		weft__unpack u = { .data = result.data, .len = result.len };
		rc = share_apply(trace, &u);
	}
	weft__pack_release(&result);
	return rc;
}

/*
 * The open's scan alone on `threads` threads: the ranks' scan (each
 * thread frames its piece of each file, guessed starts checked here in
 * piece order, a file that does not join up scanned whole here), with
 * the files then cut for that many threads (d->grid). See the top of the
 * file.
 */
int weft__ross_open_on_threads(weft_trace *trace, int threads)
{
	ross_data *d = trace->backend_data;
	d->parts = d->grid = threads;
	thread_scan *ts = calloc((size_t)threads, sizeof *ts);
	int rc = ts != NULL ? 0 : weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	int started = 0;
	while (rc == 0 && started < threads) {
		thread_scan *t = &ts[started];
		t->part = started;
		rc = scan_handle(trace, t);
		if (rc == 0 && pthread_create(&t->thread, NULL, scan_thread, t) != 0)
			rc = weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "cannot start a thread");
		if (rc < 0)
			scan_handle_free(t);
		else
			started++;
	}
	weft__trace_threads_note(trace, started);
	/* the scans' counts shown while they run: the open counts their
	 * records when it takes them */
	weft__progress_cells cells = { ts != NULL ? &ts[0].progress : NULL, sizeof *ts,
				       ts != NULL ? started : 0 };
	weft__progress_show_cells(trace, &cells);
	rc = take_scans(trace, ts, started, rc);
	weft__ross_share_free(d->share);
	d->share = NULL;
	d->parts = 1; /* alone: the cuts are the threads' (share_thread_pieces) */
	free(ts);
	return rc;
}

static size_t share_pieces(const weft_trace *trace)
{
	const ross_data *d = trace->backend_data;
	return d->parts > 1 && !d->pending ? (size_t)d->parts : 0;
}

/* Alone, the grid's pieces (ross_file.cuts), which threads join into theirs. */
static size_t share_thread_pieces(const weft_trace *trace)
{
	const ross_data *d = trace->backend_data;
	return d->parts == 1 && !d->pending ? (size_t)d->grid : 0;
}

const weft__dist_open_hooks weft__ross_dist_open = {
	.pending = share_pending,
	.scan = share_scan,
	.merge = share_merge,
	.result = share_result,
	.apply = share_apply,
	.pieces = share_pieces,
	.thread_pieces = share_thread_pieces,
	.piece_open = weft__ross_piece_open,
};
