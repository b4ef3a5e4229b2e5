/* SPDX-License-Identifier: MIT */
/*
 * formats/pallas/pallas_write_thread.c - the thread writers of the Pallas
 * writer: creating and closing one, and at close its files (the .dat
 * files assembled from the spills, then thread.pallas with the grammar,
 * the vectors' headers and the attribute lists).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "formats/pallas/pallas_writer_internal.h"

#define SPILL_BUFFER (512u * 1024u)    /* buffer of each spill */

/* ---- Thread files -------------------------------------------------------------------------------- */

/* The files of a thread being written at close. */
typedef struct assembly {
	pw_thread *t;
	pw_out grammar;        /* thread.pallas */
	pw_out dat[2];         /* the .dat files (Pallas layout) */
	uint8_t *copy;         /* a record read back from the scratch file */
} assembly;

/*
 * The bytes [where, where + len) of spill `sp`: in its buffer, or read
 * back into `copy`. (Mapping the file instead saves no time measurable
 * here, and its pages would count in the process's resident memory.)
 */
static int spill_view(const pw_spill *sp, uint64_t where, size_t len, uint8_t *copy,
		      const uint8_t **rec)
{
	if (where >= sp->flushed) {
		*rec = sp->buf + (where - sp->flushed);
		return 0;
	}
	*rec = copy;
	return weft__pw_spill_read(sp, where, len, copy);
}

/* The bytes of a sub-array's record in the scratch file. */
static int scratch_record(assembly *as, const pw_sub *s, const uint8_t **rec)
{
	return spill_view(&as->t->spill[0], s->where, s->length, as->copy, rec);
}

/*
 * An event's attribute lists into thread.pallas, in the order recorded:
 * its spilled chunks read back from the scratch file, then its buffer.
 */
static int write_attrs(assembly *as, const pw_attrs *a)
{
	pw_out *g = &as->grammar;
	const pw_spill *sp = &as->t->attr_scratch;
	out_u64(g, a->total);
	for (uint32_t k = 0; k < a->nchunks && g->error == 0; k++) {
		uint64_t where = a->chunks[k] >> PW_CHUNK_LEN_BITS;
		size_t len = (size_t)(a->chunks[k] & ((1u << PW_CHUNK_LEN_BITS) - 1));
		const uint8_t *rec;
		int rc = spill_view(sp, where, len, as->copy, &rec);
		if (rc < 0)
			return rc;
		weft__pw_out_bytes(g, rec, len);
	}
	weft__pw_out_bytes(g, a->buf, a->len);
	return g->error;
}

/* Copies a full sub-array's record to its .dat file; its offset there replaces `where`. */
static int place_sub(assembly *as, const pw_vector *v, pw_sub *s)
{
	if (as->t->opts->layout == WEFT_PALLAS_LAYOUT_COMPACT)
		return 0;
	pw_out *o = &as->dat[v->file];
	const uint8_t *rec;
	int rc = scratch_record(as, s, &rec);
	if (rc < 0)
		return rc;
	s->where = o->offset;
	weft__pw_out_bytes(o, rec, s->length);
	return o->error;
}

/* Stores the last, partial sub-array of a vector at close (its statistics join the vector's). */
static int place_open(assembly *as, pw_vector *v, pw_sub *s)
{
	pw_thread *t = as->t;
	uint64_t sum;
	*s = weft__pw_open_sub(v, &sum);
	weft__pw_vector_take(v, s, sum, v->sub_count == 0);
	if (t->opts->layout == WEFT_PALLAS_LAYOUT_COMPACT)
		return weft__pw_store_inline(t, v, s, v->open, v->open_count);
	size_t len;
	int delta = weft__pw_is_timestamps(v->which) && t->opts->delta_timestamps;
	int rc = weft__pw_encode_record(&t->codec, t->opts, v->open, v->open_count, delta,
					t->codec.frame, &len);
	if (rc < 0)
		return rc;
	pw_out *o = &as->dat[v->file];
	s->where = o->offset;
	s->length = len;
	weft__pw_out_bytes(o, t->codec.frame, len);
	return o->error;
}

/* One sub-array entry of a vector header. */
static void write_sub_entry(pw_out *g, const pw_vector *v, const pw_sub *s)
{
	out_u64(g, s->count);
	out_u64(g, s->f1);
	out_u64(g, s->f2);
	if (v->duration)
		out_u64(g, s->f3);
	out_u64(g, s->where);
}

/* A vector: its data placed in its .dat file, then its header in the grammar. */
static int write_vector(assembly *as, pw_vector *v)
{
	pw_sub last;
	uint64_t size = weft__pw_vector_size(v);
	int rc = 0, has_open = v->open_count > 0;
	for (uint32_t k = 0; rc == 0 && k < v->sub_count; k++)
		rc = place_sub(as, v, &v->subs[k]);
	if (rc == 0 && has_open)
		rc = place_open(as, v, &last);
	if (rc < 0)
		return rc;
	pw_out *g = &as->grammar;
	out_u64(g, size);
	out_u64(g, (uint64_t)v->sub_count + (uint64_t)has_open);
	if (size == 0)
		return 0;
	if (v->duration) {
		out_u64(g, v->min);
		out_u64(g, v->max);
		out_u64(g, v->sum / size);
	}
	for (uint32_t k = 0; k < v->sub_count; k++)
		write_sub_entry(g, v, &v->subs[k]);
	if (has_open)
		write_sub_entry(g, v, &last);
	return g->error;
}

/* An id map: here every slot is its own id but dead loops (0xFFFFFFFF). */
static void write_id_map(pw_out *g, const pw_grammar *gr, uint32_t n, int loops)
{
	out_u64(g, n);
	for (uint32_t i = 0; i < n; i++)
		out_u32(g, loops && gr->loops[i].dead ? WEFT_PALLAS_NO_REF : i);
}

/* The grammar file with, along the way, the values of every vector. */
static int write_grammar(assembly *as)
{
	pw_thread *t = as->t;
	pw_grammar *gr = &t->g;
	pw_out *g = &as->grammar;
	int rc = 0;
	out_u32(g, t->location);
	out_u32(g, t->archive->id);
	out_u64(g, gr->nevents);
	out_u64(g, gr->nseqs);
	out_u64(g, gr->nloops);
	out_u32(g, 0); /* the root sequence */
	out_u64(g, t->has_ts ? t->first_ts : UINT64_MAX);
	for (uint32_t i = 0; rc == 0 && i < gr->nevents; i++) {
		pw_event *e = &gr->events[i];
		out_i32(g, e->record);
		out_u8(g, e->size);
		weft__pw_out_bytes(g, e->payload, e->size - (size_t)WEFT_PALLAS_EVENT_HEADER);
		if ((rc = write_attrs(as, &e->attrs)) == 0)
			rc = write_vector(as, &e->ts);
	}
	write_id_map(g, gr, gr->nevents, 0);
	for (uint32_t i = 0; rc == 0 && i < gr->nseqs; i++) {
		pw_sequence *s = &gr->seqs[i];
		out_i32(g, s->type);
		out_u64(g, s->ntokens);
		if (s->ntokens == 0)
			continue; /* a dead slot: nothing follows */
		weft__pw_out_bytes(g, s->tokens, (size_t)s->ntokens * 4);
		if ((rc = write_vector(as, &s->dur)) == 0 && (rc = write_vector(as, &s->excl)) == 0)
			rc = write_vector(as, &s->ts);
	}
	write_id_map(g, gr, gr->nseqs, 0);
	for (uint32_t i = 0; i < gr->nloops; i++) {
		out_u32(g, gr->loops[i].repeated);
		out_u32(g, gr->loops[i].iterations);
		out_u64(g, gr->loops[i].occurrences);
	}
	write_id_map(g, gr, gr->nloops, 1);
	return rc < 0 ? rc : g->error;
}

static const char *const DAT_NAMES[2] = { WEFT_PALLAS_EVENT_DATA, WEFT_PALLAS_SEQUENCE_DATA };

/* Completes a compact-layout .dat file: its spill is the .tmp file. */
static int finish_compact_dat(pw_thread *t, pw_spill *s)
{
	int rc = weft__pw_spill_flush(s, t->dir);
	if (rc == 0 && t->opts->sync && fsync(s->fd) != 0)
		rc = weft__error_errno(s->path, "cannot fsync");
	if (close(s->fd) != 0 && rc == 0)
		rc = weft__error_errno(s->path, "cannot close");
	s->fd = -1;
	if (rc == 0) {
		char *final = strdup(s->path);
		if (final == NULL)
			return weft__error(WEFT_ENOMEM, s->path, WEFT_NO_OFFSET, "out of memory");
		final[strlen(final) - 4] = '\0'; /* drop ".tmp" */
		if (rename(s->path, final) != 0)
			rc = weft__error_errno(final, "cannot rename the .tmp file to");
		free(final);
	}
	return rc;
}

/* Closes and renames the .dat files, then the grammar (which makes the thread whole). */
static int finish_thread_files(assembly *as)
{
	pw_thread *t = as->t;
	int rc = 0;
	for (int f = 0; f < 2 && rc == 0; f++)
		rc = t->opts->layout == WEFT_PALLAS_LAYOUT_COMPACT ?
		     finish_compact_dat(t, &t->spill[f])
		   : weft__pw_out_finish(&as->dat[f], t->opts->sync);
	if (rc == 0)
		return weft__pw_out_finish(&as->grammar, t->opts->sync);
	weft__pw_out_abort(&as->grammar);
	return rc;
}

/* Writes thread.pallas and the .dat files of a finished grammar. */
static int write_thread_files(pw_thread *t)
{
	assembly as = { .t = t };
	char *path = weft__pw_path_join(t->dir, "%s", WEFT_PALLAS_THREAD_FILE);
	as.copy = malloc(PW_FRAME_MAX);
	int rc = path == NULL || as.copy == NULL ?
		 weft__error(WEFT_ENOMEM, t->dir, WEFT_NO_OFFSET, "out of memory") :
		 weft__pw_out_open(&as.grammar, path);
	for (int f = 0; rc == 0 && f < 2 && t->opts->layout == WEFT_PALLAS_LAYOUT_PALLAS; f++) {
		char *dat = weft__pw_path_join(t->dir, "%s", DAT_NAMES[f]);
		rc = dat == NULL ? weft__error(WEFT_ENOMEM, t->dir, WEFT_NO_OFFSET, "out of memory") :
		     weft__pw_out_open(&as.dat[f], dat);
		free(dat);
	}
	if (rc == 0)
		rc = write_grammar(&as);
	if (rc == 0)
		rc = finish_thread_files(&as);
	else
		weft__pw_out_abort(&as.grammar);
	for (int f = 0; f < 2; f++)
		if (as.dat[f].path != NULL)
			weft__pw_out_abort(&as.dat[f]);
	free(as.copy);
	free(path);
	return rc;
}

/* ---- Thread writers -------------------------------------------------------------------------------- */

/* Closes a spill's file (removing an abandoned compact .dat.tmp) and frees its buffer. */
static void spill_release(pw_thread *t, pw_spill *s)
{
	if (s->fd >= 0) {
		close(s->fd);
		if (!s->unlinked && t->state != PW_CLOSED)
			unlink(s->path);
	}
	weft__pw_free(t, s->buf, s->cap);
	free(s->path);
	memset(s, 0, sizeof *s);
	s->fd = -1;
}

/* Frees what recording needs (after close, or before freeing the writer). */
static void thread_release(pw_thread *t)
{
	if (t->g.events != NULL || t->g.seqs != NULL) {
		t->final_events = t->g.nevents;
		t->final_seqs = t->g.nseqs;
		t->final_loops = t->g.nloops;
	}
	weft__pw_grammar_free(t);
	weft__pw_codec_free(&t->codec);
	for (int f = 0; f < 2; f++)
		spill_release(t, &t->spill[f]);
	spill_release(t, &t->attr_scratch);
	for (int i = 0; i < PW_RECENT; i++)
		weft__pw_free(t, t->recent[i].values, PW_SUB_VALUES * 8);
	memset(t->recent, 0, sizeof t->recent);
	for (uint32_t i = 0; i < t->nspares; i++) {
		weft__pw_free(t, t->spare_values[i], PW_SUB_VALUES * 8);
		weft__pw_free(t, t->spare_frames[i], PW_FRAME_MAX);
	}
	t->nspares = 0;
	weft__pw_free(t, t->jobs, PW_JOBS * sizeof *t->jobs);
	t->jobs = NULL;
}

/* The compact layout records straight into `<dir>/<name>.dat.tmp`. */
static int open_compact_dat(pw_thread *t, pw_spill *s, const char *name)
{
	s->path = weft__pw_path_join(t->dir, "%s.tmp", name);
	if (s->path == NULL)
		return weft__error(WEFT_ENOMEM, t->dir, WEFT_NO_OFFSET, "out of memory");
	s->fd = open(s->path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
	return s->fd < 0 ? weft__error_errno(s->path, "cannot create") : 0;
}

/* Allocates the value storage of a new thread writer. */
static int thread_storage_init(pw_thread *t)
{
	int rc = weft__pw_codec_init(&t->codec, t->opts);
	int compact = t->opts->layout == WEFT_PALLAS_LAYOUT_COMPACT;
	if (rc < 0)
		return weft__error(rc, t->dir, WEFT_NO_OFFSET, "cannot set up compression");
	for (int f = 0; f < (compact ? 2 : 1); f++) {
		pw_spill *s = &t->spill[f];
		if ((s->buf = weft__pw_alloc(t, SPILL_BUFFER)) == NULL)
			return weft__error(WEFT_ENOMEM, t->dir, WEFT_NO_OFFSET, "out of memory");
		s->cap = SPILL_BUFFER;
		if (compact && (rc = open_compact_dat(t, s, DAT_NAMES[f])) < 0)
			return rc;
	}
	for (int i = 0; i < PW_RECENT; i++)
		if ((t->recent[i].values = weft__pw_alloc(t, PW_SUB_VALUES * 8)) == NULL)
			return weft__error(WEFT_ENOMEM, t->dir, WEFT_NO_OFFSET, "out of memory");
	t->ordered = compact;
	if (t->archive->pool != NULL) {
		if ((t->jobs = weft__pw_alloc(t, PW_JOBS * sizeof *t->jobs)) == NULL)
			return weft__error(WEFT_ENOMEM, t->dir, WEFT_NO_OFFSET, "out of memory");
		memset(t->jobs, 0, PW_JOBS * sizeof *t->jobs);
		for (int i = 0; i < PW_JOBS; i++)
			atomic_init(&t->jobs[i].state, JOB_FREE);
		for (; t->nspares < PW_SPARES; t->nspares++) {
			uint32_t k = t->nspares;
			t->spare_values[k] = weft__pw_alloc(t, PW_SUB_VALUES * 8);
			t->spare_frames[k] = weft__pw_alloc(t, PW_FRAME_MAX);
			if (t->spare_values[k] == NULL || t->spare_frames[k] == NULL) {
				weft__pw_free(t, t->spare_values[k], PW_SUB_VALUES * 8);
				weft__pw_free(t, t->spare_frames[k], PW_FRAME_MAX);
				return weft__error(WEFT_ENOMEM, t->dir, WEFT_NO_OFFSET, "out of memory");
			}
		}
	}
	return 0;
}

/* Sets up a thread writer whose directory is made (archive lock held). */
static int thread_init(pw_thread *t)
{
	char *file = weft__pw_path_join(t->dir, "%s", WEFT_PALLAS_THREAD_FILE);
	int rc = file == NULL ? weft__error(WEFT_ENOMEM, t->dir, WEFT_NO_OFFSET, "out of memory") :
		 weft__pw_check_new(file, t->opts->replace);
	free(file);
	if (rc < 0)
		return rc;
	for (int f = 0; f < 2; f++)
		t->spill[f].fd = -1;
	t->attr_scratch.fd = -1;
	if ((rc = weft__pw_grammar_init(t)) < 0)
		return weft__error(rc, t->dir, WEFT_NO_OFFSET, "out of memory");
	return thread_storage_init(t);
}

int weft_pallas_thread_create(weft_pallas_archive *a, uint32_t location,
			      weft_pallas_thread **out)
{
	if (out != NULL)
		*out = NULL;
	if (a == NULL || out == NULL)
		return weft__error(WEFT_EINVAL, NULL, WEFT_NO_OFFSET, "thread_create: NULL argument");
	pw_thread *t = calloc(1, sizeof *t);
	if (t == NULL)
		return weft__error(WEFT_ENOMEM, a->path, WEFT_NO_OFFSET, "out of memory");
	t->archive = a;
	t->location = location;
	t->opts = &a->opts;
	t->spill[0].fd = t->spill[1].fd = t->attr_scratch.fd = -1;
	pthread_cond_init(&t->jobs_done, NULL);
	int rc = 0;
	pthread_mutex_lock(&a->lock);
	for (pw_thread *o = a->threads; o != NULL; o = o->next)
		if (o->location == location)
			rc = weft__error(WEFT_EEXIST, a->path, WEFT_NO_OFFSET,
					 "a thread writer for location %u exists", location);
	if (rc == 0 &&
	    (t->dir = weft__pw_path_join(a->path, WEFT_PALLAS_THREAD_FMT, location)) == NULL)
		rc = weft__error(WEFT_ENOMEM, a->path, WEFT_NO_OFFSET, "out of memory");
	if (rc == 0 && (rc = weft__pw_make_dirs(t->dir, &t->created_dir)) == 0)
		rc = thread_init(t);
	if (rc == 0) {
		t->next = a->threads;
		a->threads = t;
	}
	pthread_mutex_unlock(&a->lock);
	if (rc < 0) {
		weft_pallas_thread_free(t);
		return rc;
	}
	*out = t;
	return 0;
}

int weft_pallas_thread_close(weft_pallas_thread *t)
{
	if (t == NULL)
		return weft__error(WEFT_EINVAL, NULL, WEFT_NO_OFFSET, "thread_close: NULL thread writer");
	if (t->state == PW_CLOSED)
		return weft__error(WEFT_EINVAL, t->dir, WEFT_NO_OFFSET, "thread writer already closed");
	if (t->state == PW_FAILED)
		return weft__error(t->error, t->dir, WEFT_NO_OFFSET,
				   "not written: an earlier record failed (%s)", weft_strerror(t->error));
	int rc = weft__pw_grammar_finish(t);
	if (rc == 0)
		rc = weft__pw_drain_jobs(t);
	if (rc == 0)
		rc = write_thread_files(t);
	if (rc < 0)
		return weft__pw_fail(t, rc);
	pthread_mutex_lock(&t->archive->lock); /* archive_store reads both */
	t->state = PW_CLOSED;
	t->archive->nb_threads++;
	pthread_mutex_unlock(&t->archive->lock);
	thread_release(t);
	return 0;
}

void weft_pallas_thread_free(weft_pallas_thread *t)
{
	if (t == NULL)
		return;
	if (t->jobs != NULL) { /* no helper may touch the writer once it is freed */
		weft__pw_abandon_jobs(t);
		weft__pw_pool_forget(t->archive->pool, t);
	}
	weft_pallas_archive *a = t->archive;
	pthread_mutex_lock(&a->lock);
	for (pw_thread **p = &a->threads; *p != NULL; p = &(*p)->next) {
		if (*p == t) {
			*p = t->next;
			break;
		}
	}
	pthread_mutex_unlock(&a->lock);
	thread_release(t);
	if (t->state != PW_CLOSED && t->created_dir && t->dir != NULL)
		rmdir(t->dir); /* abandoned: its directory goes if we made it and it is empty */
	pthread_cond_destroy(&t->jobs_done);
	free(t->dir);
	free(t);
}

void weft_pallas_thread_get_stats(const weft_pallas_thread *t, weft_pallas_thread_stats *out)
{
	if (out == NULL)
		return;
	memset(out, 0, sizeof *out);
	if (t == NULL)
		return;
	int live = t->g.events != NULL;
	out->events = t->events;
	out->distinct_events = live ? t->g.nevents : t->final_events;
	out->sequences = live ? t->g.nseqs : t->final_seqs;
	out->loops = live ? t->g.nloops : t->final_loops;
	out->subarrays = t->subarrays;
	out->subarrays_shared = t->subarrays_shared;
	out->memory = t->memory;
	out->memory_peak = t->memory_peak;
}
