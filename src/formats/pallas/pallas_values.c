/* SPDX-License-Identifier: MIT */
/*
 * formats/pallas/pallas_values.c - on-demand value data: the sub-arrays of
 * timestamps and durations stored in event_durations.dat and
 * sequence_durations.dat, decoded once and kept in a cache bounded in
 * bytes (least recently used out first), with a bounded set of open files.
 *
 * Data at an offset: u64 nbytes, then nbytes of a zstd frame (compression
 * 1) or of raw values (compression 0). Masking encoding keeps the low
 * `w` bytes of each value (w = bytes / count). The lossy compressions
 * (histogram, SZ, ZFP) are refused: their values are not the ones recorded.
 *
 * weft's writer may store timestamps as deltas (settings timestamp storage
 * WEFT_PALLAS_TS_WEFT_DELTA): each timestamp sub-array (event timestamps,
 * sequence start times; never durations) holds its first value, then
 * v[i] - v[i-1] (u64, wrapping), restarting at every sub-array. They are
 * summed back here, once per load, so that the cache always holds
 * absolute values and readers need not know; the result is checked
 * against the absolute first and last values of the sub-array's header.
 *
 * One mutex guards the cache, so that cursors of one trace may run on
 * different threads; it is taken once per sub-array (1000 values).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "formats/pallas/pallas_internal.h"

#define MAX_OPEN_FILES 32
#define MIN_BUDGET ((uint64_t)1 << 20)

typedef struct cache_entry {
	const pallas_thread *thread; /* key: thread, file, offset */
	uint8_t which_file;
	uint64_t offset;
	uint8_t deltas;              /* key too: values summed from deltas */
	uint64_t *values;
	uint64_t count;
	uint64_t last_use;
	uint32_t holders;            /* pinned while > 0 */
	struct cache_entry *next;    /* hash chain */
} cache_entry;

typedef struct open_file {
	const pallas_thread *thread;
	uint8_t which_file;
	int fd;
	uint64_t size;
	uint64_t last_use;
} open_file;

struct pallas_value_cache {
	pthread_mutex_t lock;
	weft_pallas_settings settings;
	uint64_t budget, used, clock;
	cache_entry **buckets;
	size_t bucket_count, entry_count;
	open_file files[MAX_OPEN_FILES];
	ZSTD_DCtx *zstd;
};

pallas_value_cache *weft__pallas_cache_create(uint64_t budget_bytes,
					      const weft_pallas_settings *s)
{
	pallas_value_cache *c = calloc(1, sizeof *c);
	if (c == NULL)
		return NULL;
	c->settings = *s;
	c->budget = budget_bytes < MIN_BUDGET ? MIN_BUDGET : budget_bytes;
	c->bucket_count = 1024;
	c->buckets = calloc(c->bucket_count, sizeof *c->buckets);
	c->zstd = ZSTD_createDCtx();
	if (c->buckets == NULL || c->zstd == NULL) {
		free(c->buckets);
		ZSTD_freeDCtx(c->zstd);
		free(c);
		return NULL;
	}
	for (int i = 0; i < MAX_OPEN_FILES; i++)
		c->files[i].fd = -1;
	pthread_mutex_init(&c->lock, NULL);
	return c;
}

void weft__pallas_cache_free(pallas_value_cache *c)
{
	if (c == NULL)
		return;
	for (size_t b = 0; b < c->bucket_count; b++) {
		cache_entry *e = c->buckets[b];
		while (e) {
			cache_entry *next = e->next;
			free(e->values);
			free(e);
			e = next;
		}
	}
	for (int i = 0; i < MAX_OPEN_FILES; i++)
		if (c->files[i].fd >= 0)
			close(c->files[i].fd);
	free(c->buckets);
	ZSTD_freeDCtx(c->zstd);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

static size_t bucket_of(const pallas_value_cache *c, const pallas_thread *t,
			int which, uint64_t offset)
{
	uint64_t h = (uint64_t)(uintptr_t)t * 0x9E3779B97F4A7C15ull;
	h ^= (offset + (uint64_t)which) * 0xC2B2AE3D27D4EB4Full;
	return (size_t)((h ^ (h >> 29)) % c->bucket_count);
}

static const char *data_file_name(int which)
{
	return which ? WEFT_PALLAS_SEQUENCE_DATA : WEFT_PALLAS_EVENT_DATA;
}

/*
 * The open file of a thread's .dat file, opening it when needed and
 * closing the least recently used one beyond MAX_OPEN_FILES.
 */
static int get_file(pallas_value_cache *c, const pallas_thread *t, int which,
		    open_file **out)
{
	open_file *victim = &c->files[0];
	for (int i = 0; i < MAX_OPEN_FILES; i++) {
		open_file *f = &c->files[i];
		if (f->fd >= 0 && f->thread == t && f->which_file == which) {
			f->last_use = ++c->clock;
			*out = f;
			return 0;
		}
		if (f->fd < 0 || (victim->fd >= 0 && f->last_use < victim->last_use))
			victim = f;
	}
	char *path = weft__path_join(t->dir, data_file_name(which));
	if (path == NULL)
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	int rc = fd < 0 ? weft__error_errno(path, "cannot open value data")
			: fstat(fd, &st) != 0 ? weft__error_errno(path, "cannot stat") : 0;
	if (rc < 0) {
		if (fd >= 0)
			close(fd);
		free(path);
		return rc;
	}
	free(path);
	if (victim->fd >= 0)
		close(victim->fd);
	victim->thread = t;
	victim->which_file = (uint8_t)which;
	victim->fd = fd;
	victim->size = (uint64_t)st.st_size;
	victim->last_use = ++c->clock;
	*out = victim;
	return 0;
}

/* Forgets the open files of a thread (its grammar is being freed). */
static void forget_files(pallas_value_cache *c, const pallas_thread *t)
{
	for (int i = 0; i < MAX_OPEN_FILES; i++)
		if (c->files[i].fd >= 0 && c->files[i].thread == t) {
			close(c->files[i].fd);
			c->files[i].fd = -1;
		}
}

static int read_exact(int fd, void *buf, size_t n, uint64_t offset,
		      const char *name)
{
	int64_t got = weft__read_full(fd, buf, n, offset);
	if (got < 0) {
		errno = (int)-got;
		return weft__error_errno(name, "cannot read value data");
	}
	if ((uint64_t)got < n)
		return weft__error(WEFT_ETRUNCATED, name, offset + (uint64_t)got,
				   "value data ends early");
	return 0;
}

/* Widens masked values (the low `width` bytes of each) in place. */
static void unmask(uint64_t *values, uint64_t count, unsigned width)
{
	const uint8_t *src = (const uint8_t *)values;
	for (uint64_t i = count; i-- > 0;) {
		uint64_t v = 0;
		memcpy(&v, src + i * width, width);
		values[i] = v;
	}
}

/*
 * Turns the stored bytes of a sub-array into `count` values in `values`
 * (count * 8 bytes): zstd frame or raw bytes, then masking.
 */
static int decode_values(pallas_value_cache *c, const uint8_t *stored,
			 uint64_t nbytes, uint64_t *values, uint64_t count,
			 const char *name, uint64_t offset)
{
	uint64_t full = count * 8, plain = nbytes;
	if (c->settings.compression == WEFT_PALLAS_COMPRESS_ZSTD) {
		unsigned long long content = ZSTD_getFrameContentSize(stored, nbytes);
		if (content == ZSTD_CONTENTSIZE_ERROR || content == ZSTD_CONTENTSIZE_UNKNOWN ||
		    content > full)
			return weft__error(WEFT_EFORMAT, name, offset + 8,
					   "expected a zstd frame of at most %llu bytes "
					   "(%llu values)", (unsigned long long)full,
					   (unsigned long long)count);
		size_t got = ZSTD_decompressDCtx(c->zstd, values, (size_t)full, stored,
						 (size_t)nbytes);
		if (ZSTD_isError(got) || got != content)
			return weft__error(WEFT_EFORMAT, name, offset + 8,
					   "the zstd frame does not decode: %s",
					   ZSTD_isError(got) ? ZSTD_getErrorName(got)
							     : "short output");
		plain = got;
	} else {
		memcpy(values, stored, (size_t)nbytes);
	}
	if (plain == full)
		return 0;
	if (c->settings.encoding == WEFT_PALLAS_ENCODE_MASKING && count > 0 &&
	    plain % count == 0 && plain / count >= 1 && plain / count < 8) {
		unmask(values, count, (unsigned)(plain / count));
		return 0;
	}
	return weft__error(WEFT_EFORMAT, name, offset,
			   "%llu bytes of values, expected %llu (%llu values)",
			   (unsigned long long)plain, (unsigned long long)full,
			   (unsigned long long)count);
}

/* Reads and decodes one sub-array from its file. */
static int load_subarray(pallas_value_cache *c, const pallas_thread *t,
			 int which, const pallas_subarray *sub, uint64_t *values)
{
	open_file *f = NULL;
	int rc = get_file(c, t, which, &f);
	if (rc < 0)
		return rc;
	char name[512];
	snprintf(name, sizeof name, "%s/%s", t->dir, data_file_name(which));
	uint64_t nbytes;
	if (sub->offset > f->size || f->size - sub->offset < 8)
		return weft__error(WEFT_EFORMAT, name, sub->offset,
				   "expected a sub-array of %llu values here, but the "
				   "file has %llu bytes", (unsigned long long)sub->size,
				   (unsigned long long)f->size);
	if ((rc = read_exact(f->fd, &nbytes, 8, sub->offset, name)) < 0)
		return rc;
	uint64_t limit = c->settings.compression == WEFT_PALLAS_COMPRESS_ZSTD
				 ? ZSTD_compressBound((size_t)(sub->size * 8))
				 : sub->size * 8;
	if (nbytes > f->size - sub->offset - 8 || nbytes > limit)
		return weft__error(WEFT_EFORMAT, name, sub->offset,
				   "sub-array of %llu bytes, expected at most %llu "
				   "(%llu values, %llu bytes left in the file)",
				   (unsigned long long)nbytes, (unsigned long long)limit,
				   (unsigned long long)sub->size,
				   (unsigned long long)(f->size - sub->offset - 8));
	uint8_t *stored = malloc(nbytes ? (size_t)nbytes : 1);
	if (stored == NULL)
		return weft__error(WEFT_ENOMEM, name, sub->offset, "out of memory");
	rc = read_exact(f->fd, stored, (size_t)nbytes, sub->offset + 8, name);
	if (rc == 0)
		rc = decode_values(c, stored, nbytes, values, sub->size, name,
				   sub->offset);
	free(stored);
	return rc;
}

/* Evicts unpinned entries, least recently used first, down to the budget. */
static void evict(pallas_value_cache *c, uint64_t need)
{
	while (c->used + need > c->budget && c->entry_count > 0) {
		cache_entry **victim = NULL;
		for (size_t b = 0; b < c->bucket_count; b++)
			for (cache_entry **e = &c->buckets[b]; *e; e = &(*e)->next)
				if ((*e)->holders == 0 &&
				    (victim == NULL || (*e)->last_use < (*victim)->last_use))
					victim = e;
		if (victim == NULL)
			return; /* everything is pinned: go over the budget */
		cache_entry *dead = *victim;
		*victim = dead->next;
		c->used -= dead->count * 8;
		c->entry_count--;
		free(dead->values);
		free(dead);
	}
}

/*
 * Whether the stored values of vector `vec` are deltas: the timestamp
 * vectors (not the durations) of a trace written with weft's
 * delta_timestamps option.
 */
static int stored_as_deltas(const pallas_value_cache *c, const pallas_vector *vec)
{
	return !vec->durations &&
	       c->settings.timestamp_storage == WEFT_PALLAS_TS_WEFT_DELTA;
}

/*
 * Turns a sub-array of deltas back into timestamps (running sum, u64
 * wrapping as written) and checks them against the sub-array header's
 * absolute first and last values, so that damaged or misread deltas are
 * reported instead of giving wrong times.
 */
static int sum_deltas(const pallas_thread *t, const pallas_vector *vec,
		      const pallas_subarray *sub, uint64_t *values)
{
	uint64_t v = 0;
	for (uint64_t i = 0; i < sub->size; i++)
		values[i] = v += values[i];
	if (sub->size > 0 && (values[0] == sub->first && v == sub->last))
		return 0;
	char name[512];
	snprintf(name, sizeof name, "%s/%s", t->dir, data_file_name(vec->which_file));
	return weft__error(WEFT_EFORMAT, name, sub->offset,
			   "delta timestamps sum to %llu .. %llu, the sub-array "
			   "header says %llu .. %llu",
			   (unsigned long long)(sub->size ? values[0] : 0),
			   (unsigned long long)v, (unsigned long long)sub->first,
			   (unsigned long long)sub->last);
}

/* Refuses value data that weft cannot give back exactly (lossy, unknown encodings). */
static int check_supported(const pallas_value_cache *c)
{
	int32_t comp = c->settings.compression;
	if (comp != WEFT_PALLAS_COMPRESS_NONE && comp != WEFT_PALLAS_COMPRESS_ZSTD)
		return weft__error(WEFT_EUNSUPPORTED, NULL, WEFT_NO_OFFSET,
				   "value data compressed with %s (%d) is lossy and "
				   "not supported: its values are not the recorded ones",
				   weft__pallas_compression_name(comp), comp);
	if (c->settings.encoding != WEFT_PALLAS_ENCODE_NONE &&
	    c->settings.encoding != WEFT_PALLAS_ENCODE_MASKING)
		return weft__error(WEFT_EUNSUPPORTED, NULL, WEFT_NO_OFFSET,
				   "value encoding %s (%d) is not supported",
				   weft__pallas_encoding_name(c->settings.encoding),
				   c->settings.encoding);
	return 0;
}

/* Finds or loads the entry of a sub-array; called with the lock held. */
static int find_or_load(pallas_value_cache *c, const pallas_thread *t,
			const pallas_vector *vec, const pallas_subarray *sub,
			cache_entry **out)
{
	uint8_t deltas = (uint8_t)stored_as_deltas(c, vec);
	size_t b = bucket_of(c, t, vec->which_file, sub->offset);
	for (cache_entry *e = c->buckets[b]; e; e = e->next)
		if (e->thread == t && e->which_file == vec->which_file &&
		    e->offset == sub->offset && e->count == sub->size &&
		    e->deltas == deltas) {
			*out = e;
			return 0;
		}
	int rc = check_supported(c);
	if (rc < 0)
		return rc;
	if (sub->size > c->budget / 8)
		return weft__error(WEFT_ENOMEM, t->dir, sub->offset,
				   "a sub-array of %llu values is larger than the value "
				   "memory bound (%llu bytes)",
				   (unsigned long long)sub->size,
				   (unsigned long long)c->budget);
	evict(c, sub->size * 8);
	cache_entry *e = calloc(1, sizeof *e);
	uint64_t *values = malloc((size_t)sub->size * 8);
	if (e == NULL || values == NULL) {
		free(e);
		free(values);
		return weft__error(WEFT_ENOMEM, t->dir, sub->offset, "out of memory");
	}
	rc = load_subarray(c, t, vec->which_file, sub, values);
	if (rc == 0 && deltas)
		rc = sum_deltas(t, vec, sub, values);
	if (rc < 0) {
		free(e);
		free(values);
		return rc;
	}
	e->thread = t;
	e->which_file = vec->which_file;
	e->offset = sub->offset;
	e->deltas = deltas;
	e->values = values;
	e->count = sub->size;
	e->next = c->buckets[b];
	c->buckets[b] = e;
	c->used += sub->size * 8;
	c->entry_count++;
	*out = e;
	return 0;
}

int weft__pallas_values_get(pallas_value_cache *c, const pallas_thread *t,
			    const pallas_vector *vec, uint64_t sub_index,
			    pallas_values *out)
{
	weft__pallas_values_release(c, out);
	if (sub_index >= vec->sub_count)
		return weft__error(WEFT_EINVAL, t->file, WEFT_NO_OFFSET,
				   "sub-array %llu of a vector of %llu",
				   (unsigned long long)sub_index,
				   (unsigned long long)vec->sub_count);
	pallas_subarray sub;
	weft__pallas_vector_sub(vec, sub_index, &sub);
	pthread_mutex_lock(&c->lock);
	cache_entry *e = NULL;
	int rc = find_or_load(c, t, vec, &sub, &e);
	if (rc == 0) {
		e->holders++;
		e->last_use = ++c->clock;
		out->v = e->values;
		out->count = e->count;
		out->entry = e;
	}
	pthread_mutex_unlock(&c->lock);
	return rc;
}

void weft__pallas_values_release(pallas_value_cache *c, pallas_values *vals)
{
	if (vals->entry == NULL)
		return;
	pthread_mutex_lock(&c->lock);
	((cache_entry *)vals->entry)->holders--;
	pthread_mutex_unlock(&c->lock);
	vals->entry = NULL;
	vals->v = NULL;
	vals->count = 0;
}

/*
 * Drops what the cache holds of thread `t` (its grammar is being freed and
 * its address may be reused). Entries still held are a caller bug.
 */
void weft__pallas_cache_forget(pallas_value_cache *c, const pallas_thread *t)
{
	pthread_mutex_lock(&c->lock);
	forget_files(c, t);
	for (size_t b = 0; b < c->bucket_count; b++) {
		cache_entry **e = &c->buckets[b];
		while (*e) {
			if ((*e)->thread == t && (*e)->holders == 0) {
				cache_entry *dead = *e;
				*e = dead->next;
				c->used -= dead->count * 8;
				c->entry_count--;
				free(dead->values);
				free(dead);
			} else {
				e = &(*e)->next;
			}
		}
	}
	pthread_mutex_unlock(&c->lock);
}
