/* SPDX-License-Identifier: MIT */
/*
 * formats/pallas/pallas_write_values.c - the value vectors of the Pallas
 * writer and the attribute lists that do not fit in memory.
 *
 * Values: a vector keeps only its open sub-array in memory. When it holds
 * 1000 values it is encoded (raw, or one zstd frame at the configured
 * level) and appended to a spill: with the Pallas layout a scratch file
 * of the thread, unlinked at once (an interrupted program leaves nothing
 * of it), copied vector by vector into the .dat files at close, which
 * gives Pallas's exact files; with the compact layout the .dat files
 * themselves. A sub-array equal to one of the last few encoded takes its
 * bytes instead of being compressed again (the start times of a block are
 * its Enter's timestamps, the exclusive time of a leaf block its
 * duration: such copies are common). Helper threads (one by default
 * when more than one CPU is online) take the compression off the
 * recording threads; which sub-arrays share bytes is decided by the
 * recording thread in the order they fill, and it alone appends records,
 * so the files are the same whoever compressed what.
 *
 * Attribute lists: each event keeps at most PW_ATTR_CHUNK bytes of them;
 * the older ones go as chunks to a scratch file of their own (unlinked
 * at once too), read back at close into thread.pallas, where Pallas
 * stores every list of an event before its timestamps.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

#include "formats/pallas/pallas_writer_internal.h"

#define ATTR_SPILL_BUFFER (64u * 1024u) /* buffer of the attribute chunks' scratch file */
#define CHUNK_WHERE_MAX ((uint64_t)1 << (64 - PW_CHUNK_LEN_BITS)) /* chunk offsets that fit */

/* ---- Encoding ------------------------------------------------------------------------------- */

/* Sets up the compression state of a thread writer or a helper. */
int weft__pw_codec_init(pw_codec *c, const weft_pallas_write_options *o)
{
	memset(c, 0, sizeof *c);
	c->frame = malloc(PW_FRAME_MAX);
	if (c->frame == NULL)
		return WEFT_ENOMEM;
	if (o->compression == WEFT_PALLAS_WRITE_ZSTD && (c->zstd = ZSTD_createCCtx()) == NULL)
		return WEFT_ENOMEM;
	return 0;
}

/* Releases a compression state (its zstd context too). */
void weft__pw_codec_free(pw_codec *c)
{
	ZSTD_freeCCtx(c->zstd);
	free(c->frame);
	memset(c, 0, sizeof *c);
}

/* Whether a vector holds timestamps (delta-encoded when asked). */
int weft__pw_is_timestamps(uint8_t which)
{
	return which == PW_EVENT_TS || which == PW_SEQ_TS;
}

/*
 * The record of `count` values in `dst` (PW_FRAME_MAX bytes): `u64
 * nbytes` then the bytes (raw values, or one zstd frame), timestamps as
 * differences if `delta`. The zstd context is created once per thread
 * writer or helper and reused from frame to frame (setting its
 * parameters once instead, with ZSTD_compress2, gives the same frames and
 * measured no faster: about 53 us per frame of 1000 timestamps here).
 */
int weft__pw_encode_record(pw_codec *c, const weft_pallas_write_options *o,
			   const uint64_t *values, uint32_t count, int delta, uint8_t *dst,
			   size_t *len)
{
	const uint64_t *src = values;
	if (delta && count > 0) {
		c->scratch[0] = values[0];
		for (uint32_t i = 1; i < count; i++)
			c->scratch[i] = values[i] - values[i - 1];
		src = c->scratch;
	}
	uint64_t n = (uint64_t)count * 8;
	if (o->compression == WEFT_PALLAS_WRITE_ZSTD) {
		size_t z = ZSTD_compressCCtx(c->zstd, dst + 8, PW_FRAME_MAX - 8, src, n,
					     o->zstd_level);
		if (ZSTD_isError(z))
			return weft__error(WEFT_EIO, NULL, WEFT_NO_OFFSET, "zstd compression failed: %s",
					   ZSTD_getErrorName(z));
		n = z;
	} else {
		memcpy(dst + 8, src, n);
	}
	memcpy(dst, &n, 8);
	*len = 8 + (size_t)n;
	return 0;
}

/* ---- Helper threads ------------------------------------------------------------------------- */

/*
 * The helpers of a trace (or of a standalone archive). The queue holds
 * the jobs handed over, oldest first; an entry may be stale (its job was
 * taken back by its recording thread, or its slot already reused): a
 * helper runs only what it can claim (QUEUED to RUNNING).
 */
struct pw_pool {
	pthread_mutex_t lock;
	pthread_cond_t work;
	pw_job **queue;        /* circular */
	size_t qcap, qhead, qlen;
	int idle;              /* helpers waiting for work */
	int stop;
	int nthreads;
	pthread_t *threads;
};

/* Takes a queued job for oneself (a helper or its recording thread): 1 if taken. */
static int job_claim(pw_job *j)
{
	int expected = JOB_QUEUED;
	return atomic_compare_exchange_strong_explicit(&j->state, &expected, JOB_RUNNING,
						       memory_order_acquire, memory_order_relaxed);
}

/* Encodes a claimed job with codec `c`; the outcome stays in the job. */
static void job_encode(pw_job *j, pw_codec *c, int ready)
{
	j->status = ready < 0 ? ready :
		    weft__pw_encode_record(c, j->owner->opts, j->values, j->count, j->delta,
					   j->frame, &j->len);
}

/* The next entry of the queue, waiting for one (NULL once stopped and empty; lock held). */
static pw_job *pool_pop_locked(pw_pool *p)
{
	while (!p->stop && p->qlen == 0) {
		p->idle++;
		pthread_cond_wait(&p->work, &p->lock);
		p->idle--;
	}
	if (p->qlen == 0)
		return NULL;
	pw_job *j = p->queue[p->qhead];
	p->qhead = (p->qhead + 1) % p->qcap;
	p->qlen--;
	return j;
}

/*
 * A helper's job is done: the state changes under the pool lock, so that
 * a recording thread that saw it done and then took the lock knows the
 * helper no longer touches its writer.
 */
static void job_finish_locked(pw_job *j)
{
	pw_thread *owner = j->owner;
	atomic_store_explicit(&j->state, JOB_DONE, memory_order_release);
	if (owner->waiting)
		pthread_cond_broadcast(&owner->jobs_done);
}

/*
 * A helper thread: claims queued jobs and encodes them for their owners.
 * An entry is popped and claimed under the lock, so that once a writer
 * has dropped its entries (pool_forget) no helper is about to touch it.
 */
static void *helper_main(void *arg)
{
	pw_pool *p = arg;
	pw_codec codec;
	int ready = 1; /* 1: not set up yet, 0: ready, < 0: failed */
	pthread_mutex_lock(&p->lock);
	for (pw_job *j; (j = pool_pop_locked(p)) != NULL;) {
		if (!job_claim(j))
			continue; /* taken back by its recording thread */
		pthread_mutex_unlock(&p->lock);
		if (ready > 0)
			ready = weft__pw_codec_init(&codec, j->owner->opts);
		job_encode(j, &codec, ready);
		pthread_mutex_lock(&p->lock);
		job_finish_locked(j);
	}
	pthread_mutex_unlock(&p->lock);
	if (ready <= 0)
		weft__pw_codec_free(&codec);
	return NULL;
}

/* Starts `n` helper threads. */
int weft__pw_pool_create(int n, const char *where, pw_pool **out)
{
	*out = NULL;
	if (n <= 0)
		return 0;
	pw_pool *p = calloc(1, sizeof *p);
	if (p == NULL || (p->threads = calloc((size_t)n, sizeof *p->threads)) == NULL) {
		free(p);
		return weft__error(WEFT_ENOMEM, where, WEFT_NO_OFFSET, "out of memory");
	}
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->work, NULL);
	for (int i = 0; i < n; i++) {
		if (pthread_create(&p->threads[i], NULL, helper_main, p) != 0)
			break;
		p->nthreads++;
	}
	*out = p;
	if (p->nthreads == 0)
		return weft__error(WEFT_EIO, where, WEFT_NO_OFFSET, "cannot start helper threads");
	return 0;
}

/*
 * Helper threads worth starting: raw values are copied, not encoded, so
 * handing them over would cost more than it saves.
 */
int weft__pw_helpers_wanted(const weft_pallas_write_options *o)
{
	return o->compression == WEFT_PALLAS_WRITE_ZSTD ? o->compress_threads : 0;
}

/* Stops the helpers (their owners have drained their jobs) and frees the pool. */
void weft__pw_pool_free(pw_pool *p)
{
	if (p == NULL)
		return;
	pthread_mutex_lock(&p->lock);
	p->stop = 1;
	pthread_cond_broadcast(&p->work);
	pthread_mutex_unlock(&p->lock);
	for (int i = 0; i < p->nthreads; i++)
		pthread_join(p->threads[i], NULL);
	pthread_mutex_destroy(&p->lock);
	pthread_cond_destroy(&p->work);
	free(p->queue);
	free(p->threads);
	free(p);
}

/* Doubles the queue (lock held), keeping its entries in order. */
static int pool_grow_locked(pw_pool *p)
{
	size_t cap = p->qcap ? p->qcap * 2 : 64;
	pw_job **q = malloc(cap * sizeof *q);
	if (q == NULL)
		return WEFT_ENOMEM;
	for (size_t i = 0; i < p->qlen; i++)
		q[i] = p->queue[(p->qhead + i) % p->qcap];
	free(p->queue);
	p->queue = q;
	p->qcap = cap;
	p->qhead = 0;
	return 0;
}

/* Hands a prepared job to the helpers; waking one only if one sleeps. */
static int pool_push(pw_pool *p, pw_job *j)
{
	pthread_mutex_lock(&p->lock);
	int rc = p->qlen == p->qcap ? pool_grow_locked(p) : 0;
	if (rc == 0) {
		atomic_store_explicit(&j->state, JOB_QUEUED, memory_order_release);
		p->queue[(p->qhead + p->qlen++) % p->qcap] = j;
		if (p->idle > 0)
			pthread_cond_signal(&p->work);
	}
	pthread_mutex_unlock(&p->lock);
	return rc;
}

/*
 * Drops the queue entries that point at the jobs of `t` (before they are
 * freed); taking the lock also waits for a helper still finishing one.
 */
void weft__pw_pool_forget(pw_pool *p, const pw_thread *t)
{
	pthread_mutex_lock(&p->lock);
	size_t kept = 0;
	for (size_t i = 0; i < p->qlen; i++) {
		pw_job *j = p->queue[(p->qhead + i) % p->qcap];
		uintptr_t at = (uintptr_t)j, lo = (uintptr_t)t->jobs;
		if (at < lo || at >= lo + PW_JOBS * sizeof *t->jobs)
			p->queue[(p->qhead + kept++) % p->qcap] = j;
	}
	p->qlen = kept;
	pthread_mutex_unlock(&p->lock);
}

/* ---- Spills ------------------------------------------------------------------------------------ */

/*
 * Creates a scratch file (`name` ends in XXXXXX) in the thread directory,
 * unlinked at once: the Pallas layout's values, or the attribute chunks.
 */
static int spill_open_scratch(pw_spill *s, const char *dir, const char *name)
{
	char *tmpl = weft__pw_path_join(dir, "%s", name);
	if (tmpl == NULL)
		return weft__error(WEFT_ENOMEM, dir, WEFT_NO_OFFSET, "out of memory");
	int fd = mkstemp(tmpl);
	if (fd < 0) {
		int rc = weft__error_errno(tmpl, "cannot create a scratch file");
		free(tmpl);
		return rc;
	}
	fcntl(fd, F_SETFD, FD_CLOEXEC);
	unlink(tmpl);
	s->fd = fd;
	s->path = tmpl;
	s->unlinked = 1;
	return 0;
}

/* Writes the spill's buffer to its file. */
int weft__pw_spill_flush(pw_spill *s, const char *dir)
{
	int rc = 0;
	if (s->len == 0)
		return 0;
	if (s->fd < 0 && (rc = spill_open_scratch(s, dir, ".weft-values-XXXXXX")) < 0)
		return rc;
	if ((rc = weft__pw_write_all(s->fd, s->buf, s->len, s->path, s->flushed)) < 0)
		return rc;
	s->flushed += s->len;
	s->len = 0;
	return 0;
}

/* Appends one record; *where is its offset in the spill. */
static int spill_append(pw_spill *s, const char *dir, const uint8_t *rec, size_t len,
			uint64_t *where)
{
	int rc;
	if (s->len + len > s->cap && (rc = weft__pw_spill_flush(s, dir)) < 0)
		return rc;
	*where = s->flushed + s->len;
	memcpy(s->buf + s->len, rec, len);
	s->len += len;
	return 0;
}

/* Reads back a record (wholly in the buffer or wholly in the file). */
int weft__pw_spill_read(const pw_spill *s, uint64_t where, size_t len, uint8_t *dst)
{
	if (where >= s->flushed) {
		memcpy(dst, s->buf + (where - s->flushed), len);
		return 0;
	}
	int64_t n = weft__read_full(s->fd, dst, len, where);
	if (n < 0 || (uint64_t)n < len)
		return weft__error(WEFT_EIO, s->path, where + (n < 0 ? 0 : (uint64_t)n),
				   "cannot read back values: %s",
				   n < 0 ? strerror((int)-n) : "end of file");
	return 0;
}

/* ---- Attribute chunks -------------------------------------------------------------------------- */

_Static_assert(PW_ATTR_CHUNK < (1u << PW_CHUNK_LEN_BITS), "a chunk length fits its entry");
_Static_assert(PW_ATTR_CHUNK <= PW_FRAME_MAX, "a chunk fits the copy buffer of the close");
_Static_assert(PW_ATTR_CHUNK >= WEFT_PALLAS_ATTRS_BYTES, "any attribute list fits a chunk");

/*
 * The scratch file of the attribute chunks, its buffer allocated with the
 * first chunk (threads whose events repeat few lists never need it). It
 * is not the values' scratch file (the Pallas layout's): chunks read back
 * from a file of their own made the close 1.5 to 2 times faster here than
 * chunks spread between the value records.
 */
static int attr_spill_of(pw_thread *t, pw_spill **out)
{
	pw_spill *s = &t->attr_scratch;
	int rc = 0;
	if (s->buf == NULL) {
		if ((s->buf = weft__pw_alloc(t, ATTR_SPILL_BUFFER)) == NULL)
			return weft__error(WEFT_ENOMEM, t->dir, WEFT_NO_OFFSET, "out of memory");
		s->cap = ATTR_SPILL_BUFFER;
	}
	if (s->fd < 0)
		rc = spill_open_scratch(s, t->dir, ".weft-attrs-XXXXXX");
	*out = s;
	return rc;
}

/* Room for one more chunk entry of `a` (the list doubles). */
static int attrs_reserve_chunk(pw_thread *t, pw_attrs *a)
{
	if (a->nchunks < a->chunks_cap)
		return 0;
	if (a->chunks_cap >= UINT32_MAX / 2)
		return weft__error(WEFT_EUNSUPPORTED, t->dir, WEFT_NO_OFFSET,
				   "an event with more than 2^31 attribute chunks");
	uint32_t cap = a->chunks_cap ? a->chunks_cap * 2 : 4;
	uint64_t *p = weft__pw_realloc(t, a->chunks, (size_t)a->chunks_cap * 8, (size_t)cap * 8);
	if (p == NULL)
		return weft__error(WEFT_ENOMEM, t->dir, WEFT_NO_OFFSET, "out of memory for attributes");
	a->chunks = p;
	a->chunks_cap = cap;
	return 0;
}

/*
 * The lists in `a->buf` leave memory: appended to the scratch file as one
 * chunk (through its buffer), whose offset and length are remembered in
 * one entry. Called by the recording thread only, like every append.
 */
int weft__pw_attrs_spill(pw_thread *t, pw_attrs *a)
{
	pw_spill *s = NULL;
	uint64_t where = 0;
	int rc = attrs_reserve_chunk(t, a);
	if (rc == 0)
		rc = attr_spill_of(t, &s);
	if (rc == 0)
		rc = spill_append(s, t->dir, a->buf, a->len, &where);
	if (rc < 0)
		return rc;
	if (where >= CHUNK_WHERE_MAX)
		return weft__error(WEFT_EUNSUPPORTED, s->path, where,
				   "attribute scratch file beyond 2^48 bytes");
	a->chunks[a->nchunks++] = where << PW_CHUNK_LEN_BITS | a->len;
	a->len = 0;
	return 0;
}

/* ---- Sharing sub-arrays ------------------------------------------------------------------------ */

/*
 * A key for spotting identical sub-arrays: the count and 8 values spread
 * over the array (a hash of all 1000 would cost more than it saves); a
 * match is confirmed by comparing every value.
 */
static uint64_t values_hash(const uint64_t *v, uint32_t n)
{
	uint64_t h = n;
	for (uint32_t k = 0; n > 0 && k < 8; k++)
		h = (h ^ v[(uint64_t)(n - 1) * k / 7]) * 0x9E3779B97F4A7C15ull, h ^= h >> 31;
	return h;
}

/* The recent slot that holds the same values, or -1. */
static int recent_match(const pw_thread *t, uint64_t h, const uint64_t *values,
			uint32_t count, int delta)
{
	for (int i = 0; i < PW_RECENT; i++) {
		const pw_recent *r = &t->recent[i];
		if (r->used && r->hash == h && r->count == count && r->delta == delta &&
		    memcmp(r->values, values, (size_t)count * 8) == 0)
			return i;
	}
	return -1;
}

/* Remembers sub-array `ticket`, being encoded (round robin); returns its slot. */
static uint32_t recent_put(pw_thread *t, uint64_t h, const uint64_t *values, uint32_t count,
			   int delta, uint64_t ticket)
{
	uint32_t slot = t->recent_next;
	pw_recent *r = &t->recent[slot];
	t->recent_next = (slot + 1) % PW_RECENT;
	memcpy(r->values, values, (size_t)count * 8);
	*r = (pw_recent){ .hash = h, .count = count, .delta = (uint8_t)delta, .used = 1,
			  .ticket = ticket, .values = r->values };
	return slot;
}

/* Record `ticket` was committed: its recent slot (if it still holds it) learns its place. */
static void recent_placed(pw_thread *t, uint32_t slot, uint64_t ticket, uint8_t file,
			  uint64_t where, uint64_t length)
{
	pw_recent *r = &t->recent[slot];
	if (!r->used || r->ticket != ticket)
		return;
	r->committed = 1;
	r->file = file;
	r->where = where;
	r->length = length;
}

/* ---- Committing records (the recording thread, in ticket order) --------------------------------- */

/* The spill of a vector's records (the Pallas layout has one scratch for both files). */
static uint8_t spill_of(const pw_thread *t, uint8_t file)
{
	return t->opts->layout == WEFT_PALLAS_LAYOUT_COMPACT ? file : 0;
}

/* An encoded record: appended to its spill, its place given to its header and recent slot. */
static int commit_encoded(pw_thread *t, pw_sub *s, uint8_t target, const uint8_t *rec,
			  size_t len, uint32_t slot, uint64_t ticket)
{
	int rc = spill_append(&t->spill[target], t->dir, rec, len, &s->where);
	if (rc < 0)
		return rc;
	s->length = len;
	t->subarrays++;
	recent_placed(t, slot, ticket, target, s->where, len);
	return 0;
}

/*
 * A shared record: the place of the earlier identical one or, when that
 * one is in the other .dat file (compact layout), a copy of its bytes.
 */
static int commit_shared(pw_thread *t, pw_sub *s, uint8_t target, uint8_t src_file,
			 uint64_t src_where, uint64_t src_length)
{
	s->length = src_length;
	t->subarrays++;
	t->subarrays_shared++;
	if (src_file == target) {
		s->where = src_where;
		return 0;
	}
	uint8_t *copy = t->codec.frame;
	int rc = weft__pw_spill_read(&t->spill[src_file], src_where, src_length, copy);
	return rc < 0 ? rc : spill_append(&t->spill[target], t->dir, copy, src_length, &s->where);
}

/*
 * Stores a full sub-array at once (no helpers, or at close): shares the
 * record of an identical recent one, or encodes it and appends it.
 */
int weft__pw_store_inline(pw_thread *t, const pw_vector *v, pw_sub *s, const uint64_t *values,
			  uint32_t count)
{
	int delta = weft__pw_is_timestamps(v->which) && t->opts->delta_timestamps;
	uint8_t target = spill_of(t, v->file);
	uint64_t h = values_hash(values, count), ticket = t->tickets++;
	int r = recent_match(t, h, values, count, delta);
	if (r >= 0 && t->recent[r].committed)
		return commit_shared(t, s, target, t->recent[r].file, t->recent[r].where,
				     t->recent[r].length);
	size_t len;
	int rc = weft__pw_encode_record(&t->codec, t->opts, values, count, delta, t->codec.frame,
					&len);
	if (rc < 0)
		return rc;
	uint32_t slot = recent_put(t, h, values, count, delta, ticket);
	return commit_encoded(t, s, target, t->codec.frame, len, slot, ticket);
}

/* ---- Jobs (helpers on) ------------------------------------------------------------------------- */

/* The state of a job as the recording thread sees it. */
static int job_state(pw_job *j)
{
	return atomic_load_explicit(&j->state, memory_order_acquire);
}

/* The vector a job was taken from. */
static pw_vector *vector_of(pw_thread *t, uint8_t which, uint32_t id)
{
	switch (which) {
	case PW_EVENT_TS: return &t->g.events[id].ts;
	case PW_SEQ_DUR: return &t->g.seqs[id].dur;
	case PW_SEQ_EXCL: return &t->g.seqs[id].excl;
	default: return &t->g.seqs[id].ts;
	}
}

/* The slot of in-flight ticket `k`. */
static pw_job *job_of_ticket(pw_thread *t, uint64_t k)
{
	if (t->ordered)
		return &t->jobs[t->order[k % PW_JOBS]];
	for (int i = 0; i < PW_JOBS; i++)
		if (t->jobs[i].ticket == k && job_state(&t->jobs[i]) != JOB_FREE)
			return &t->jobs[i];
	return NULL;
}

/* Takes a pair of spare buffers (values, record) for encode job `j`: 0, or 1 when none is left. */
static int job_take_spares(pw_thread *t, pw_job *j)
{
	if (t->nspares == 0)
		return 1;
	t->nspares--;
	j->values = t->spare_values[t->nspares];
	j->frame = t->spare_frames[t->nspares];
	return 0;
}

/* Gives back the buffers of an encode job once its record is committed (or dropped). */
static void job_give_spares(pw_thread *t, pw_job *j)
{
	if (j->kind != PW_JOB_ENCODE || j->values == NULL)
		return;
	t->spare_values[t->nspares] = j->values;
	t->spare_frames[t->nspares] = j->frame;
	t->nspares++;
	j->values = NULL;
	j->frame = NULL;
}

static int job_commit(pw_thread *t, pw_job *j);

/*
 * Gives the shares that wait for encoded job `src` (committed at `s`) its
 * place; unordered, they are committed at once.
 */
static int resolve_shares(pw_thread *t, const pw_job *src, uint8_t file, const pw_sub *s)
{
	int rc = 0;
	for (int i = 0; rc == 0 && i < PW_JOBS; i++) {
		pw_job *j = &t->jobs[i];
		if (j->kind != PW_JOB_SHARE || j->src_ready || j->src_ticket != src->ticket ||
		    job_state(j) != JOB_DONE)
			continue;
		j->src_file = file, j->src_where = s->where, j->src_length = s->length;
		j->src_ready = 1;
		if (!t->ordered)
			rc = job_commit(t, j);
	}
	return rc;
}

/* Commits done job `j`: its record placed, its sub-array header completed, its slot freed. */
static int job_commit(pw_thread *t, pw_job *j)
{
	pw_vector *v = vector_of(t, j->which, j->id);
	pw_sub *s = &v->subs[j->sub];
	uint8_t target = spill_of(t, v->file);
	int rc;
	if (j->kind == PW_JOB_SHARE)
		rc = commit_shared(t, s, target, j->src_file, j->src_where, j->src_length);
	else if (j->status < 0)
		rc = weft__error(j->status, t->dir, WEFT_NO_OFFSET,
				 "a helper thread could not encode values (%s)",
				 weft_strerror(j->status));
	else
		rc = commit_encoded(t, s, target, j->frame, j->len, j->recent, j->ticket);
	job_give_spares(t, j);
	atomic_store_explicit(&j->state, JOB_FREE, memory_order_relaxed);
	t->in_flight--;
	if (rc == 0 && j->kind == PW_JOB_ENCODE && j->dependents > 0)
		rc = resolve_shares(t, j, target, s);
	return rc;
}

/* Commits the done jobs, oldest first, as long as the next one is done (compact layout). */
static int commit_in_order(pw_thread *t)
{
	int rc = 0;
	while (rc == 0 && t->order_head < t->tickets) {
		pw_job *j = &t->jobs[t->order[t->order_head % PW_JOBS]];
		if (job_state(j) != JOB_DONE)
			break;
		t->order_head++;
		rc = job_commit(t, j);
	}
	return rc;
}

/* Commits every done job (a share once its source's place is known). */
static int commit_any(pw_thread *t)
{
	int rc = 0;
	for (int i = 0; rc == 0 && i < PW_JOBS; i++) {
		pw_job *j = &t->jobs[i];
		if (job_state(j) == JOB_DONE && (j->kind == PW_JOB_ENCODE || j->src_ready))
			rc = job_commit(t, j);
	}
	return rc;
}

/* Commits what can be. */
static int commit_ready(pw_thread *t)
{
	return t->ordered ? commit_in_order(t) : commit_any(t);
}

/*
 * Makes sure job `j` is done: the recording thread encodes it itself
 * when no helper took it yet, or waits for the helper that did.
 */
static void job_complete(pw_thread *t, pw_job *j)
{
	if (job_claim(j)) {
		job_encode(j, &t->codec, 0);
		atomic_store_explicit(&j->state, JOB_DONE, memory_order_release);
		return;
	}
	if (job_state(j) == JOB_DONE)
		return;
	pw_pool *p = t->archive->pool;
	pthread_mutex_lock(&p->lock);
	while (job_state(j) != JOB_DONE) {
		t->waiting = 1;
		pthread_cond_wait(&t->jobs_done, &p->lock);
	}
	t->waiting = 0;
	pthread_mutex_unlock(&p->lock);
}

/*
 * The job that holds the others up: the oldest ticket (compact layout),
 * or the oldest job still to encode, a queued one first (it is taken
 * back, where a running one is waited for). NULL: none.
 */
static pw_job *job_blocking(pw_thread *t)
{
	if (t->ordered)
		return t->order_head < t->tickets ? &t->jobs[t->order[t->order_head % PW_JOBS]] : NULL;
	pw_job *queued = NULL, *running = NULL;
	for (int i = 0; i < PW_JOBS; i++) {
		pw_job *j = &t->jobs[i];
		int st = job_state(j);
		if (st == JOB_QUEUED && (queued == NULL || j->ticket < queued->ticket))
			queued = j;
		else if (st == JOB_RUNNING && (running == NULL || j->ticket < running->ticket))
			running = j;
	}
	return queued != NULL ? queued : running;
}

/*
 * Abandons the jobs of `t` (a writer freed or failed): those no helper
 * took are dropped, those being encoded are waited for; nothing is
 * committed.
 */
void weft__pw_abandon_jobs(pw_thread *t)
{
	for (int i = 0; t->jobs != NULL && i < PW_JOBS; i++) {
		pw_job *j = &t->jobs[i];
		if (job_state(j) == JOB_FREE)
			continue;
		if (job_claim(j))
			atomic_store_explicit(&j->state, JOB_DONE, memory_order_relaxed);
		else
			job_complete(t, j);
		job_give_spares(t, j);
		atomic_store_explicit(&j->state, JOB_FREE, memory_order_relaxed);
	}
	t->in_flight = 0;
	t->order_head = t->tickets;
}

/* A free slot for the next job, finishing (or waiting for) older ones when all are taken. */
static int job_slot(pw_thread *t, pw_job **out)
{
	int rc = commit_ready(t);
	for (;;) {
		for (int i = 0; rc == 0 && t->in_flight < PW_JOBS && i < PW_JOBS; i++) {
			if (job_state(&t->jobs[i]) == JOB_FREE) {
				*out = &t->jobs[i];
				return 0;
			}
		}
		if (rc < 0)
			return rc;
		pw_job *j = job_blocking(t);
		if (j != NULL)
			job_complete(t, j);
		rc = commit_ready(t);
	}
}

/* Whether PW_QUEUED_MAX jobs of `t` already wait for a helper. */
static int helpers_behind(pw_thread *t)
{
	unsigned queued = 0;
	for (int i = 0; i < PW_JOBS; i++)
		queued += atomic_load_explicit(&t->jobs[i].state, memory_order_relaxed) == JOB_QUEUED;
	return queued >= PW_QUEUED_MAX;
}

/*
 * A pair of spare buffers for encode job `j`, finishing older jobs (or
 * waiting for them) when all PW_SPARES are in flight.
 */
static int job_buffers(pw_thread *t, pw_job *j)
{
	int rc = 0;
	while (rc == 0 && job_take_spares(t, j) != 0) {
		pw_job *old = job_blocking(t);
		if (old == NULL)
			return weft__error(WEFT_EIO, t->dir, WEFT_NO_OFFSET, "no buffer left for values");
		job_complete(t, old);
		rc = commit_ready(t);
	}
	return rc;
}

/* A share: done at once, its source's place known or given when the source commits. */
static void job_share(pw_thread *t, pw_job *j, const pw_recent *r)
{
	j->kind = PW_JOB_SHARE;
	j->src_ticket = r->ticket;
	j->src_ready = r->committed;
	if (r->committed)
		j->src_file = r->file, j->src_where = r->where, j->src_length = r->length;
	else
		job_of_ticket(t, r->ticket)->dependents++;
	atomic_store_explicit(&j->state, JOB_DONE, memory_order_relaxed);
}

/*
 * An encode job: the full buffer goes to the job (the slot's spare one
 * becomes the vector's open buffer) and to the helpers. When they are
 * PW_QUEUED_MAX jobs behind (busy, or descheduled on a loaded machine),
 * the recording thread encodes it itself, at once, while its values are
 * still in its cache: the work is shared and recording never waits.
 */
static void job_send(pw_thread *t, pw_job *j, pw_vector *v, uint64_t h, int delta)
{
	uint64_t *full = v->open; /* the full buffer goes, the spare one comes */
	v->open = j->values;
	v->open_cap = PW_SUB_VALUES;
	j->values = full;
	j->kind = PW_JOB_ENCODE;
	j->delta = (uint8_t)delta;
	j->recent = recent_put(t, h, full, j->count, delta, j->ticket);
	if (helpers_behind(t) || pool_push(t->archive->pool, j) < 0) {
		atomic_store_explicit(&j->state, JOB_RUNNING, memory_order_relaxed);
		job_encode(j, &t->codec, 0);
		atomic_store_explicit(&j->state, JOB_DONE, memory_order_release);
	}
}

/* A full sub-array with helpers on: a job, committed when done (and its turn comes). */
static int flush_to_job(pw_thread *t, pw_vector *v, uint32_t k)
{
	pw_job *j;
	int rc = job_slot(t, &j);
	if (rc < 0)
		return rc;
	int delta = weft__pw_is_timestamps(v->which) && t->opts->delta_timestamps;
	uint64_t h = values_hash(v->open, v->open_count);
	int r = recent_match(t, h, v->open, v->open_count, delta);
	if (r < 0 && (rc = job_buffers(t, j)) < 0)
		return rc;
	j->which = v->which, j->id = v->owner, j->sub = k, j->count = v->open_count;
	j->ticket = t->tickets++, j->owner = t, j->dependents = 0, j->status = 0;
	t->order[j->ticket % PW_JOBS] = (uint32_t)(j - t->jobs);
	t->in_flight++;
	if (r >= 0)
		job_share(t, j, &t->recent[r]);
	else
		job_send(t, j, v, h, delta);
	return commit_ready(t);
}

/* Encodes (here, or waits for the helpers) and commits every job of `t` (close). */
int weft__pw_drain_jobs(pw_thread *t)
{
	if (t->jobs == NULL)
		return 0;
	int rc = commit_ready(t);
	while (rc == 0 && t->in_flight > 0) {
		pw_job *j = job_blocking(t);
		if (j != NULL)
			job_complete(t, j);
		rc = commit_ready(t);
	}
	if (rc < 0)
		weft__pw_abandon_jobs(t);
	weft__pw_pool_forget(t->archive->pool, t);
	return rc;
}

/* ---- Vectors ----------------------------------------------------------------------------------------- */

/* Makes room in the open sub-array (its buffer doubles up to PW_SUB_VALUES values). */
static int vector_grow(pw_thread *t, pw_vector *v)
{
	uint32_t cap = v->open_cap ? v->open_cap * 2 : 8;
	if (cap > PW_SUB_VALUES)
		cap = PW_SUB_VALUES;
	uint64_t *p = weft__pw_realloc(t, v->open, (size_t)v->open_cap * 8, (size_t)cap * 8);
	if (p == NULL)
		return weft__error(WEFT_ENOMEM, t->dir, WEFT_NO_OFFSET, "out of memory for values");
	v->open = p;
	v->open_cap = cap;
	return 0;
}

/* Releases the open values and sub-array headers of a vector. */
void weft__pw_vector_free(pw_thread *t, pw_vector *v)
{
	weft__pw_free(t, v->open, (size_t)v->open_cap * 8);
	weft__pw_free(t, v->subs, (size_t)v->sub_cap * sizeof *v->subs);
	v->open = NULL, v->subs = NULL;
	v->open_count = v->open_cap = v->sub_count = v->sub_cap = 0;
	v->min = v->max = v->sum = 0;
}

/*
 * The header of the open sub-array: count, then first and last
 * (timestamps) or min, max and the integer mean (durations), taken from
 * its values in one pass; *sum is the durations' sum.
 */
pw_sub weft__pw_open_sub(const pw_vector *v, uint64_t *sum)
{
	pw_sub s = { .count = v->open_count, .where = PW_PENDING };
	uint32_t n = v->open_count;
	*sum = 0;
	if (n == 0)
		return s;
	if (!v->duration) {
		s.f1 = v->open[0], s.f2 = v->open[n - 1];
		return s;
	}
	uint64_t lo = v->open[0], hi = v->open[0], total = 0;
	for (uint32_t i = 0; i < n; i++) {
		uint64_t x = v->open[i];
		lo = x < lo ? x : lo;
		hi = x > hi ? x : hi;
		total += x;
	}
	s.f1 = lo, s.f2 = hi, s.f3 = total / n;
	*sum = total;
	return s;
}

/* Adds a sub-array's statistics (min, max, `sum`) to the vector's (durations). */
void weft__pw_vector_take(pw_vector *v, const pw_sub *s, uint64_t sum, int first)
{
	if (!v->duration || s->count == 0)
		return;
	if (first || s->f1 < v->min)
		v->min = s->f1;
	if (first || s->f2 > v->max)
		v->max = s->f2;
	v->sum += sum;
}

/* Room for one more sub-array header. */
static int vector_reserve_sub(pw_thread *t, pw_vector *v)
{
	if (v->sub_count < v->sub_cap)
		return 0;
	if (v->sub_cap >= UINT32_MAX / 2)
		return weft__error(WEFT_EUNSUPPORTED, t->dir, WEFT_NO_OFFSET,
				   "a vector of more than 2^31 sub-arrays");
	uint32_t cap = v->sub_cap ? v->sub_cap * 2 : 4;
	pw_sub *p = weft__pw_realloc(t, v->subs, (size_t)v->sub_cap * sizeof *p,
				     (size_t)cap * sizeof *p);
	if (p == NULL)
		return weft__error(WEFT_ENOMEM, t->dir, WEFT_NO_OFFSET, "out of memory for values");
	v->subs = p;
	v->sub_cap = cap;
	return 0;
}

/*
 * A full open sub-array: its header joins the vector's list, its values
 * are shared with an identical recent sub-array or encoded, here or by a
 * helper.
 */
static int vector_flush(pw_thread *t, pw_vector *v)
{
	int rc = vector_reserve_sub(t, v);
	if (rc < 0)
		return rc;
	uint64_t sum;
	uint32_t k = v->sub_count++;
	v->subs[k] = weft__pw_open_sub(v, &sum);
	weft__pw_vector_take(v, &v->subs[k], sum, k == 0);
	if (t->jobs != NULL)
		rc = flush_to_job(t, v, k);
	else
		rc = weft__pw_store_inline(t, v, &v->subs[k], v->open, v->open_count);
	v->open_count = 0;
	return rc;
}

int weft__pw_vector_add_slow(pw_thread *t, pw_vector *v, uint64_t value)
{
	if (v->open_count == v->open_cap) {
		int rc = vector_grow(t, v);
		if (rc < 0)
			return rc;
	}
	v->open[v->open_count++] = value;
	return v->open_count == PW_SUB_VALUES ? vector_flush(t, v) : 0;
}
