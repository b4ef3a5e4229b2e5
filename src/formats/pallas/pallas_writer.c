/* SPDX-License-Identifier: MIT */
/*
 * formats/pallas/pallas_writer.c - the Pallas writer's objects and files
 * (weft/pallas.h): global archive, archives, thread writers, definitions,
 * the value vectors and every byte written. The grammar is in
 * pallas_grammar.c, the records API in pallas_write_records.c.
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
 *
 * Files: everything is written as `<file>.tmp`, then renamed; a thread's
 * .dat files before its thread.pallas, so a thread file always comes
 * with its data.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "formats/pallas/pallas_writer_internal.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the Pallas writer stores host-order values: little-endian hosts only"
#endif

#define OUT_BUFFER (64u * 1024u)       /* buffer of each output file */
#define SPILL_BUFFER (512u * 1024u)    /* buffer of each spill */
#define ATTR_SPILL_BUFFER (64u * 1024u) /* buffer of the attribute chunks' scratch file */
#define CHUNK_WHERE_MAX ((uint64_t)1 << (64 - PW_CHUNK_LEN_BITS)) /* chunk offsets that fit */
#define MAX_HELPERS 64
#define DEFAULT_LEVEL 5
#define DEFAULT_LOOP_LENGTH 100

/* ---- Memory accounting ------------------------------------------------------------ */

/* Counts what a thread writer holds (weft_pallas_thread_get_stats). */
static void account(pw_thread *t, size_t add, size_t sub)
{
	if (t == NULL)
		return;
	t->memory = t->memory + add - sub;
	if (t->memory > t->memory_peak)
		t->memory_peak = t->memory;
}

/* malloc, counted against the thread writer. */
void *weft__pw_alloc(pw_thread *t, size_t size)
{
	void *p = malloc(size ? size : 1);
	if (p != NULL)
		account(t, size, 0);
	return p;
}

/* realloc, counted (old_size: what `p` had). */
void *weft__pw_realloc(pw_thread *t, void *p, size_t old_size, size_t new_size)
{
	void *q = realloc(p, new_size ? new_size : 1);
	if (q != NULL)
		account(t, new_size, p != NULL ? old_size : 0);
	return q;
}

/* free, uncounted (`size`: what `p` had); NULL is accepted. */
void weft__pw_free(pw_thread *t, void *p, size_t size)
{
	if (p == NULL)
		return;
	free(p);
	account(t, 0, size);
}

/* The thread writer stops at its first failure: partial state is never written. */
int weft__pw_fail(pw_thread *t, int status)
{
	if (t->error == 0)
		t->error = status;
	t->state = PW_FAILED;
	return status;
}

/* ---- Options ------------------------------------------------------------------------ */

/*
 * One helper thread when more than one CPU is online: compression (most
 * of the cost of a trace) then leaves the recording thread, and the files
 * are the same as without helpers. 0 on a single CPU, where a helper
 * could only take turns with the recording thread.
 */
static int default_helpers(void)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	return cpus > 1 ? 1 : 0;
}

void weft_pallas_write_options_init(weft_pallas_write_options *o)
{
	if (o == NULL)
		return;
	memset(o, 0, sizeof *o);
	o->compress_threads = default_helpers();
	o->compression = WEFT_PALLAS_WRITE_ZSTD;
	o->zstd_level = DEFAULT_LEVEL;
	o->loop_finding = WEFT_PALLAS_WRITE_LOOPS_TRUNCATED;
	o->max_loop_length = DEFAULT_LOOP_LENGTH;
	o->long_patterns = 1;
	o->layout = WEFT_PALLAS_LAYOUT_PALLAS;
}

/* Copies `in` (NULL: the defaults) into `out` after checking every field. */
static int options_take(const weft_pallas_write_options *in, weft_pallas_write_options *out,
			const char *where)
{
	weft_pallas_write_options o;
	if (in == NULL)
		weft_pallas_write_options_init(&o);
	else
		o = *in;
	const char *bad = NULL;
	if (o.compression != WEFT_PALLAS_WRITE_RAW && o.compression != WEFT_PALLAS_WRITE_ZSTD)
		bad = "compression (raw or zstd)";
	else if (o.zstd_level < 1 || o.zstd_level > ZSTD_maxCLevel())
		bad = "zstd_level (1 to 22)";
	else if (o.loop_finding < WEFT_PALLAS_WRITE_LOOPS_NONE ||
		 o.loop_finding > WEFT_PALLAS_WRITE_LOOPS_TRUNCATED)
		bad = "loop_finding (none, basic or truncated)";
	else if (o.layout != WEFT_PALLAS_LAYOUT_PALLAS && o.layout != WEFT_PALLAS_LAYOUT_COMPACT)
		bad = "layout (pallas or compact)";
	else if (o.compress_threads < 0 || o.compress_threads > MAX_HELPERS)
		bad = "compress_threads (0 to 64)";
	if (bad != NULL)
		return weft__error(WEFT_EINVAL, where, WEFT_NO_OFFSET, "bad option: %s", bad);
	o.long_patterns = o.long_patterns != 0;
	o.delta_timestamps = o.delta_timestamps != 0;
	o.replace = o.replace != 0;
	o.sync = o.sync != 0;
	*out = o;
	return 0;
}

/* ---- Paths ---------------------------------------------------------------------------- */

/* A malloc'd "<a>/<b>" (b printf-formatted), or NULL. */
static char *path_join(const char *a, const char *fmt, ...) WEFT_PRINTF(2, 3);
static char *path_join(const char *a, const char *fmt, ...)
{
	char tail[256];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(tail, sizeof tail, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof tail)
		return NULL;
	size_t len = strlen(a) + 1 + (size_t)n + 1;
	char *p = malloc(len);
	if (p != NULL)
		snprintf(p, len, "%s/%s", a, tail);
	return p;
}

/* mkdir -p; sets *created when the last component is new. */
static int make_dirs(const char *dir, int *created)
{
	char *p = strdup(dir);
	if (p == NULL)
		return weft__error(WEFT_ENOMEM, dir, WEFT_NO_OFFSET, "out of memory");
	if (created != NULL)
		*created = 0;
	for (char *s = p + 1;; s++) {
		int last = *s == '\0';
		if (*s != '/' && !last)
			continue;
		char keep = *s;
		*s = '\0';
		if (mkdir(p, 0777) == 0) {
			if (last && created != NULL)
				*created = 1;
		} else if (errno != EEXIST) {
			int rc = weft__error_errno(p, "cannot create the directory");
			free(p);
			return rc;
		}
		if (last)
			break;
		*s = keep;
	}
	free(p);
	struct stat st;
	if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
		return weft__error(WEFT_EIO, dir, WEFT_NO_OFFSET, "not a directory");
	return 0;
}

/* Refuses to replace an existing `path` unless asked to. */
static int check_new(const char *path, int replace)
{
	if (!replace && access(path, F_OK) == 0)
		return weft__error(WEFT_EEXIST, path, WEFT_NO_OFFSET,
				   "exists (set the `replace` option to overwrite it)");
	return 0;
}

/* ---- Output files (written as <path>.tmp, renamed when complete) -------------------------------- */

typedef struct pw_out {
	int fd;
	char *path, *tmp;
	uint8_t *buf;
	size_t len;
	uint64_t offset;       /* bytes written so far (the next byte's offset) */
	int error;
} pw_out;

/* Creates `<path>.tmp` for writing. */
static int out_open(pw_out *o, const char *path)
{
	memset(o, 0, sizeof *o);
	o->fd = -1;
	size_t n = strlen(path) + sizeof ".tmp";
	o->path = strdup(path);
	o->tmp = malloc(n);
	o->buf = malloc(OUT_BUFFER);
	if (o->path == NULL || o->tmp == NULL || o->buf == NULL)
		return o->error = weft__error(WEFT_ENOMEM, path, WEFT_NO_OFFSET, "out of memory");
	snprintf(o->tmp, n, "%s.tmp", path);
	o->fd = open(o->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
	if (o->fd < 0)
		return o->error = weft__error_errno(o->tmp, "cannot create");
	return 0;
}

/* Writes all of `len` bytes (short writes and EINTR retried). */
static int write_all(int fd, const uint8_t *p, size_t len, const char *name, uint64_t at)
{
	size_t done;
	int err = weft__write_full(fd, p, len, WEFT__AT_POSITION, &done);

	return err == 0 ? 0 : weft__error(WEFT_EIO, name, at + done, "cannot write %zu bytes: %s",
					  len - done, strerror(err));
}

/* Writes what the buffer holds. */
static int out_flush(pw_out *o)
{
	if (o->error == 0 && o->len > 0)
		o->error = write_all(o->fd, o->buf, o->len, o->tmp, o->offset - o->len);
	o->len = 0;
	return o->error;
}

/* Appends bytes (a failure is kept and reported at out_finish). */
static void out_bytes(pw_out *o, const void *p, size_t n)
{
	const uint8_t *b = p;
	while (n > 0 && o->error == 0) {
		if (o->len == OUT_BUFFER && out_flush(o) < 0)
			return;
		size_t k = OUT_BUFFER - o->len < n ? OUT_BUFFER - o->len : n;
		memcpy(o->buf + o->len, b, k);
		o->len += k, o->offset += k, b += k, n -= k;
	}
}

/* Fixed-size fields, host order (little-endian, checked above). */
static void out_u8(pw_out *o, uint8_t v) { out_bytes(o, &v, 1); }
static void out_u32(pw_out *o, uint32_t v) { out_bytes(o, &v, 4); }
static void out_i32(pw_out *o, int32_t v) { out_bytes(o, &v, 4); }
static void out_u64(pw_out *o, uint64_t v) { out_bytes(o, &v, 8); }

/* Releases an output, removing its .tmp (an abandoned or failed file). */
static void out_abort(pw_out *o)
{
	if (o->fd >= 0) {
		close(o->fd);
		unlink(o->tmp);
	}
	free(o->path), free(o->tmp), free(o->buf);
	memset(o, 0, sizeof *o);
	o->fd = -1;
}

/* Flushes, optionally fsyncs, and closes; the file stays as .tmp. */
static int out_close(pw_out *o, int sync)
{
	out_flush(o);
	if (o->error == 0 && sync && fsync(o->fd) != 0)
		o->error = weft__error_errno(o->tmp, "cannot fsync");
	if (close(o->fd) != 0 && o->error == 0)
		o->error = weft__error_errno(o->tmp, "cannot close");
	o->fd = -1;
	return o->error;
}

/* Renames the closed .tmp to its final name. */
static int out_rename(pw_out *o)
{
	if (rename(o->tmp, o->path) != 0)
		return o->error = weft__error_errno(o->path, "cannot rename the .tmp file to");
	return 0;
}

/* Completes a file: close, rename; on failure the .tmp is removed. */
static int out_finish(pw_out *o, int sync)
{
	int rc = out_close(o, sync);
	if (rc == 0)
		rc = out_rename(o);
	if (rc < 0)
		unlink(o->tmp);
	free(o->path), free(o->tmp), free(o->buf);
	memset(o, 0, sizeof *o);
	o->fd = -1;
	return rc;
}

/* ---- Definitions -------------------------------------------------------------------------- */

/* Initialises an empty set of definitions stored in file `owner`. */
static int defs_init(struct weft_pallas_defs *d, const char *owner)
{
	memset(d, 0, sizeof *d);
	d->owner = owner;
	if (pthread_mutex_init(&d->lock, NULL) != 0)
		return weft__error(WEFT_ENOMEM, owner, WEFT_NO_OFFSET, "cannot create a mutex");
	return 0;
}

/* Releases definitions and what they own. */
static void defs_free(struct weft_pallas_defs *d)
{
	for (size_t i = 0; i < d->nstrings; i++)
		free(d->strings[i].str);
	for (size_t i = 0; i < d->ngroups; i++)
		free(d->groups[i].members);
	for (size_t i = 0; i < d->nmeta; i++)
		free(d->meta[i].key), free(d->meta[i].value);
	free(d->strings), free(d->regions), free(d->attrs), free(d->groups);
	free(d->comms), free(d->lgs), free(d->locs), free(d->meta);
	pthread_mutex_destroy(&d->lock);
	memset(d, 0, sizeof *d);
}

/* Room for one more element of `size` bytes in *array (n used, *cap allocated). */
static int grow_array(void **array, size_t n, size_t *cap, size_t size)
{
	if (n < *cap)
		return 0;
	size_t grown = *cap ? *cap * 2 : 8;
	if (grown > SIZE_MAX / size)
		return WEFT_ENOMEM;
	void *p = realloc(*array, grown * size);
	if (p == NULL)
		return WEFT_ENOMEM;
	*array = p;
	*cap = grown;
	return 0;
}

/*
 * Position of `ref` in an array sorted by the u32 that starts each
 * element (Pallas keeps definitions in maps): *found says if it is there.
 */
static size_t sorted_slot(const void *array, size_t n, size_t size, uint32_t ref, int *found)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		uint32_t key;
		memcpy(&key, (const uint8_t *)array + mid * size, sizeof key);
		if (key < ref)
			lo = mid + 1;
		else
			hi = mid;
	}
	uint32_t key = 0;
	if (lo < n)
		memcpy(&key, (const uint8_t *)array + lo * size, sizeof key);
	*found = lo < n && key == ref;
	return lo;
}

/*
 * Puts `elem` (starting with its u32 ref) in its sorted place, replacing
 * an element of the same ref (whose old copy goes to *old when given).
 */
static int sorted_put(void **array, size_t *n, size_t *cap, size_t size, const void *elem,
		      void *old, int *replaced)
{
	uint32_t ref;
	int found;
	memcpy(&ref, elem, sizeof ref);
	size_t i = sorted_slot(*array, *n, size, ref, &found);
	uint8_t *base;
	if (!found) {
		if (grow_array(array, *n, cap, size) < 0)
			return WEFT_ENOMEM;
		base = *array;
		memmove(base + (i + 1) * size, base + i * size, (*n - i) * size);
		(*n)++;
	} else {
		base = *array;
		if (old != NULL)
			memcpy(old, base + i * size, size);
	}
	memcpy(base + i * size, elem, size);
	if (replaced != NULL)
		*replaced = found;
	return 0;
}

/* Locks `d` after checking it; the error names the call. */
static int defs_lock(struct weft_pallas_defs *d, const char *what)
{
	if (d == NULL)
		return weft__error(WEFT_EINVAL, NULL, WEFT_NO_OFFSET, "%s: NULL definitions", what);
	pthread_mutex_lock(&d->lock);
	return 0;
}

/* Unlocks and turns an internal ENOMEM into a message. */
static int defs_unlock(struct weft_pallas_defs *d, int rc, const char *what)
{
	pthread_mutex_unlock(&d->lock);
	if (rc == WEFT_ENOMEM)
		return weft__error(rc, d->owner, WEFT_NO_OFFSET, "%s: out of memory", what);
	return rc;
}

/* Puts string `ref` (lock held): WEFT_EINVAL without a message, or ENOMEM. */
static int put_string(struct weft_pallas_defs *d, uint32_t ref, const char *str)
{
	if (str == NULL || strlen(str) >= (size_t)INT32_MAX)
		return WEFT_EINVAL;
	pw_string s = { ref, (int32_t)(strlen(str) + 1), strdup(str) }, old;
	int replaced = 0;
	int rc = s.str == NULL ? WEFT_ENOMEM :
		 sorted_put((void **)&d->strings, &d->nstrings, &d->strings_cap, sizeof s, &s,
			    &old, &replaced);
	if (rc < 0)
		free(s.str);
	else if (replaced)
		free(old.str);
	return rc;
}

int weft_pallas_add_string(weft_pallas_defs *d, uint32_t ref, const char *str)
{
	int rc = defs_lock(d, "add_string");
	if (rc < 0)
		return rc;
	rc = put_string(d, ref, str);
	if (rc == WEFT_EINVAL) {
		pthread_mutex_unlock(&d->lock);
		return weft__error(rc, d->owner, WEFT_NO_OFFSET,
				   "string %u: NULL or longer than 2^31 - 2 bytes", ref);
	}
	return defs_unlock(d, rc, "add_string");
}

int weft_pallas_register_string(weft_pallas_defs *d, const char *str, uint32_t *ref)
{
	int rc = defs_lock(d, "register_string");
	if (rc < 0)
		return rc;
	uint32_t next = d->nstrings ? d->strings[d->nstrings - 1].ref + 1u : 0;
	if (ref == NULL || (d->nstrings && next == 0)) {
		pthread_mutex_unlock(&d->lock);
		return weft__error(WEFT_EINVAL, d->owner, WEFT_NO_OFFSET, "register_string: %s",
				   ref == NULL ? "NULL ref" : "no string ref left");
	}
	rc = put_string(d, next, str);
	if (rc == WEFT_EINVAL) {
		pthread_mutex_unlock(&d->lock);
		return weft__error(rc, d->owner, WEFT_NO_OFFSET,
				   "register_string: NULL string or longer than 2^31 - 2 bytes");
	}
	if (rc == 0)
		*ref = next;
	return defs_unlock(d, rc, "register_string");
}

int weft_pallas_add_region(weft_pallas_defs *d, uint32_t ref, uint32_t name)
{
	int rc = defs_lock(d, "add_region");
	if (rc < 0)
		return rc;
	pw_region r = { ref, name };
	rc = sorted_put((void **)&d->regions, &d->nregions, &d->regions_cap, sizeof r, &r,
			NULL, NULL);
	return defs_unlock(d, rc, "add_region");
}

int weft_pallas_add_attribute(weft_pallas_defs *d, uint32_t ref, uint32_t name,
			      uint32_t description, int type)
{
	int rc = defs_lock(d, "add_attribute");
	if (rc < 0)
		return rc;
	if (type < WEFT_PALLAS_TYPE_NONE || type > WEFT_PALLAS_TYPE_LOCATION_GROUP) {
		pthread_mutex_unlock(&d->lock);
		return weft__error(WEFT_EINVAL, d->owner, WEFT_NO_OFFSET,
				   "attribute %u: type %d is not 0 to 25", ref, type);
	}
	pw_attribute a = { ref, name, description, (uint8_t)type };
	rc = sorted_put((void **)&d->attrs, &d->nattrs, &d->attrs_cap, sizeof a, &a, NULL, NULL);
	return defs_unlock(d, rc, "add_attribute");
}

int weft_pallas_add_group(weft_pallas_defs *d, uint32_t ref, uint32_t name, int32_t type,
			  int32_t paradigm, const uint32_t *members, uint32_t count)
{
	int rc = defs_lock(d, "add_group");
	if (rc < 0)
		return rc;
	if (count > 0 && members == NULL) {
		pthread_mutex_unlock(&d->lock);
		return weft__error(WEFT_EINVAL, d->owner, WEFT_NO_OFFSET,
				   "group %u: %u members but a NULL array", ref, count);
	}
	pw_group g = { ref, name, type, paradigm, count, malloc((size_t)count * 4 + 1) }, old;
	int replaced = 0;
	if (g.members != NULL && count > 0)
		memcpy(g.members, members, (size_t)count * 4);
	rc = g.members == NULL ? WEFT_ENOMEM :
	     sorted_put((void **)&d->groups, &d->ngroups, &d->groups_cap, sizeof g, &g, &old,
			&replaced);
	if (rc < 0)
		free(g.members);
	else if (replaced)
		free(old.members);
	return defs_unlock(d, rc, "add_group");
}

int weft_pallas_add_comm(weft_pallas_defs *d, uint32_t ref, uint32_t name, uint32_t group,
			 uint32_t parent)
{
	int rc = defs_lock(d, "add_comm");
	if (rc < 0)
		return rc;
	pw_comm c = { ref, name, group, parent };
	rc = sorted_put((void **)&d->comms, &d->ncomms, &d->comms_cap, sizeof c, &c, NULL, NULL);
	return defs_unlock(d, rc, "add_comm");
}

/* Location groups and locations keep their order (Pallas's vectors); an id given again replaces. */
static int put_location(pw_location **array, size_t *n, size_t *cap, pw_location l)
{
	for (size_t i = 0; i < *n; i++) {
		if ((*array)[i].id == l.id) {
			(*array)[i] = l;
			return 0;
		}
	}
	if (grow_array((void **)array, *n, cap, sizeof l) < 0)
		return WEFT_ENOMEM;
	(*array)[(*n)++] = l;
	return 0;
}

int weft_pallas_add_location_group(weft_pallas_defs *d, uint32_t id, uint32_t name,
				   uint32_t parent)
{
	int rc = defs_lock(d, "add_location_group");
	if (rc < 0)
		return rc;
	pw_location l = { id, name, parent };
	rc = put_location(&d->lgs, &d->nlgs, &d->lgs_cap, l);
	return defs_unlock(d, rc, "add_location_group");
}

int weft_pallas_add_location(weft_pallas_defs *d, uint32_t id, uint32_t name,
			     uint32_t parent)
{
	int rc = defs_lock(d, "add_location");
	if (rc < 0)
		return rc;
	pw_location l = { id, name, parent };
	rc = put_location(&d->locs, &d->nlocs, &d->locs_cap, l);
	return defs_unlock(d, rc, "add_location");
}

int weft_pallas_add_metadata(weft_pallas_defs *d, const char *key, const char *value)
{
	int rc = defs_lock(d, "add_metadata");
	if (rc < 0)
		return rc;
	if (key == NULL || value == NULL) {
		pthread_mutex_unlock(&d->lock);
		return weft__error(WEFT_EINVAL, d->owner, WEFT_NO_OFFSET, "add_metadata: NULL key or value");
	}
	size_t i = 0;
	while (i < d->nmeta && strcmp(d->meta[i].key, key) < 0)
		i++;
	char *v = strdup(value), *k = NULL;
	if (v == NULL) {
		rc = WEFT_ENOMEM;
	} else if (i < d->nmeta && strcmp(d->meta[i].key, key) == 0) {
		free(d->meta[i].value);
		d->meta[i].value = v;
	} else if ((k = strdup(key)) == NULL ||
		   grow_array((void **)&d->meta, d->nmeta, &d->meta_cap, sizeof *d->meta) < 0) {
		free(k), free(v);
		rc = WEFT_ENOMEM;
	} else {
		memmove(d->meta + i + 1, d->meta + i, (d->nmeta - i) * sizeof *d->meta);
		d->meta[i] = (pw_meta){ k, v };
		d->nmeta++;
	}
	return defs_unlock(d, rc, "add_metadata");
}

/* ---- Main and archive files ------------------------------------------------------------------ */

/* A text of metadata: u64 length with its NUL, then the bytes and NUL. */
static void out_text(pw_out *o, const char *s)
{
	size_t n = strlen(s) + 1;
	out_u64(o, n);
	out_bytes(o, s, n);
}

/* Strings, regions, attributes, groups, comms (Pallas's storeDefinitions). */
static void write_definitions(pw_out *o, const struct weft_pallas_defs *d)
{
	static const uint8_t pad[3] = { 0 };
	out_u64(o, d->nstrings);
	for (size_t i = 0; i < d->nstrings; i++) {
		out_u32(o, d->strings[i].ref);
		out_i32(o, d->strings[i].len);
		out_bytes(o, d->strings[i].str, (size_t)d->strings[i].len);
	}
	out_u64(o, d->nregions);
	for (size_t i = 0; i < d->nregions; i++)
		out_u32(o, d->regions[i].ref), out_u32(o, d->regions[i].name);
	out_u64(o, d->nattrs);
	for (size_t i = 0; i < d->nattrs; i++) {
		out_u32(o, d->attrs[i].ref), out_u32(o, d->attrs[i].name);
		out_u32(o, d->attrs[i].description), out_u8(o, d->attrs[i].type);
		out_bytes(o, pad, sizeof pad);
	}
	out_u64(o, d->ngroups);
	for (size_t i = 0; i < d->ngroups; i++) {
		const pw_group *g = &d->groups[i];
		out_u32(o, g->ref), out_u32(o, g->name), out_i32(o, g->type);
		out_i32(o, g->paradigm), out_u32(o, g->count);
		out_bytes(o, g->members, (size_t)g->count * 4);
	}
	out_u64(o, d->ncomms);
	for (size_t i = 0; i < d->ncomms; i++) {
		const pw_comm *c = &d->comms[i];
		out_u32(o, c->ref), out_u32(o, c->name), out_u32(o, c->group), out_u32(o, c->parent);
	}
}

/* Location groups, locations and metadata, which follow the definitions. */
static void write_hierarchy(pw_out *o, const struct weft_pallas_defs *d)
{
	out_u64(o, d->nlgs);
	for (size_t i = 0; i < d->nlgs; i++)
		out_u32(o, d->lgs[i].id), out_u32(o, d->lgs[i].name), out_u32(o, d->lgs[i].parent);
	out_u64(o, d->nlocs);
	for (size_t i = 0; i < d->nlocs; i++)
		out_u32(o, d->locs[i].id), out_u32(o, d->locs[i].name), out_u32(o, d->locs[i].parent);
	out_u64(o, d->nmeta);
	for (size_t i = 0; i < d->nmeta; i++)
		out_text(o, d->meta[i].key), out_text(o, d->meta[i].value);
}

/* The 32 bytes of settings after the version byte. */
static void write_settings(pw_out *o, const weft_pallas_write_options *opts)
{
	out_i32(o, opts->compression == WEFT_PALLAS_WRITE_ZSTD ? WEFT_PALLAS_COMPRESS_ZSTD :
			WEFT_PALLAS_COMPRESS_NONE);
	out_i32(o, WEFT_PALLAS_ENCODE_NONE);
	out_u64(o, (uint64_t)opts->zstd_level);
	out_i32(o, opts->loop_finding);
	out_u64(o, opts->max_loop_length);
	/* Pallas records "delta" by default while storing absolute values. */
	out_i32(o, opts->delta_timestamps ? WEFT_PALLAS_TS_WEFT_DELTA : WEFT_PALLAS_TS_DELTA);
}

/* ---- Encoding ------------------------------------------------------------------------------- */

/*
 * A job's life: FREE (its slot unused), QUEUED (handed to the helpers;
 * whoever claims it first encodes it, a helper or its recording thread),
 * RUNNING, DONE (waiting for its commit by the recording thread).
 */
enum job_state { JOB_FREE = 0, JOB_QUEUED, JOB_RUNNING, JOB_DONE };

/* Sets up the compression state of a thread writer or a helper. */
static int codec_init(pw_codec *c, const weft_pallas_write_options *o)
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
static void codec_free(pw_codec *c)
{
	ZSTD_freeCCtx(c->zstd);
	free(c->frame);
	memset(c, 0, sizeof *c);
}

/* Whether a vector holds timestamps (delta-encoded when asked). */
static int is_timestamps(uint8_t which)
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
static int encode_record(pw_codec *c, const weft_pallas_write_options *o,
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
		    encode_record(c, j->owner->opts, j->values, j->count, j->delta, j->frame,
				  &j->len);
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
			ready = codec_init(&codec, j->owner->opts);
		job_encode(j, &codec, ready);
		pthread_mutex_lock(&p->lock);
		job_finish_locked(j);
	}
	pthread_mutex_unlock(&p->lock);
	if (ready <= 0)
		codec_free(&codec);
	return NULL;
}

/* Starts `n` helper threads. */
static int pool_create(int n, const char *where, pw_pool **out)
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
static int helpers_wanted(const weft_pallas_write_options *o)
{
	return o->compression == WEFT_PALLAS_WRITE_ZSTD ? o->compress_threads : 0;
}

/* Stops the helpers (their owners have drained their jobs) and frees the pool. */
static void pool_free(pw_pool *p)
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
static void pool_forget(pw_pool *p, const pw_thread *t)
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
	char *tmpl = path_join(dir, "%s", name);
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
static int spill_flush(pw_spill *s, const char *dir)
{
	int rc = 0;
	if (s->len == 0)
		return 0;
	if (s->fd < 0 && (rc = spill_open_scratch(s, dir, ".weft-values-XXXXXX")) < 0)
		return rc;
	if ((rc = write_all(s->fd, s->buf, s->len, s->path, s->flushed)) < 0)
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
	if (s->len + len > s->cap && (rc = spill_flush(s, dir)) < 0)
		return rc;
	*where = s->flushed + s->len;
	memcpy(s->buf + s->len, rec, len);
	s->len += len;
	return 0;
}

/* Reads back a record (wholly in the buffer or wholly in the file). */
static int spill_read(const pw_spill *s, uint64_t where, size_t len, uint8_t *dst)
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
	int rc = spill_read(&t->spill[src_file], src_where, src_length, copy);
	return rc < 0 ? rc : spill_append(&t->spill[target], t->dir, copy, src_length, &s->where);
}

/*
 * Stores a full sub-array at once (no helpers, or at close): shares the
 * record of an identical recent one, or encodes it and appends it.
 */
static int store_inline(pw_thread *t, const pw_vector *v, pw_sub *s, const uint64_t *values,
			uint32_t count)
{
	int delta = is_timestamps(v->which) && t->opts->delta_timestamps;
	uint8_t target = spill_of(t, v->file);
	uint64_t h = values_hash(values, count), ticket = t->tickets++;
	int r = recent_match(t, h, values, count, delta);
	if (r >= 0 && t->recent[r].committed)
		return commit_shared(t, s, target, t->recent[r].file, t->recent[r].where,
				     t->recent[r].length);
	size_t len;
	int rc = encode_record(&t->codec, t->opts, values, count, delta, t->codec.frame, &len);
	if (rc < 0)
		return rc;
	uint32_t slot = recent_put(t, h, values, count, delta, ticket);
	return commit_encoded(t, s, target, t->codec.frame, len, slot, ticket);
}

/* ---- Jobs (helpers on) ------------------------------------------------------------------------- */

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

/* The state of a job as the recording thread sees it. */
static int job_state(pw_job *j)
{
	return atomic_load_explicit(&j->state, memory_order_acquire);
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
static void abandon_jobs(pw_thread *t)
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
	int delta = is_timestamps(v->which) && t->opts->delta_timestamps;
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
static int drain_jobs(pw_thread *t)
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
		abandon_jobs(t);
	pool_forget(t->archive->pool, t);
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
static pw_sub open_sub(const pw_vector *v, uint64_t *sum)
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
static void vector_take(pw_vector *v, const pw_sub *s, uint64_t sum, int first)
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
	v->subs[k] = open_sub(v, &sum);
	vector_take(v, &v->subs[k], sum, k == 0);
	if (t->jobs != NULL)
		rc = flush_to_job(t, v, k);
	else
		rc = store_inline(t, v, &v->subs[k], v->open, v->open_count);
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
	return spill_read(sp, where, len, copy);
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
		out_bytes(g, rec, len);
	}
	out_bytes(g, a->buf, a->len);
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
	out_bytes(o, rec, s->length);
	return o->error;
}

/* Stores the last, partial sub-array of a vector at close (its statistics join the vector's). */
static int place_open(assembly *as, pw_vector *v, pw_sub *s)
{
	pw_thread *t = as->t;
	uint64_t sum;
	*s = open_sub(v, &sum);
	vector_take(v, s, sum, v->sub_count == 0);
	if (t->opts->layout == WEFT_PALLAS_LAYOUT_COMPACT)
		return store_inline(t, v, s, v->open, v->open_count);
	size_t len;
	int rc = encode_record(&t->codec, t->opts, v->open, v->open_count,
			       is_timestamps(v->which) && t->opts->delta_timestamps,
			       t->codec.frame, &len);
	if (rc < 0)
		return rc;
	pw_out *o = &as->dat[v->file];
	s->where = o->offset;
	s->length = len;
	out_bytes(o, t->codec.frame, len);
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
		out_bytes(g, e->payload, e->size - (size_t)WEFT_PALLAS_EVENT_HEADER);
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
		out_bytes(g, s->tokens, (size_t)s->ntokens * 4);
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
	int rc = spill_flush(s, t->dir);
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
		     finish_compact_dat(t, &t->spill[f]) : out_finish(&as->dat[f], t->opts->sync);
	if (rc == 0)
		return out_finish(&as->grammar, t->opts->sync);
	out_abort(&as->grammar);
	return rc;
}

/* Writes thread.pallas and the .dat files of a finished grammar. */
static int write_thread_files(pw_thread *t)
{
	assembly as = { .t = t };
	char *path = path_join(t->dir, "%s", WEFT_PALLAS_THREAD_FILE);
	as.copy = malloc(PW_FRAME_MAX);
	int rc = path == NULL || as.copy == NULL ?
		 weft__error(WEFT_ENOMEM, t->dir, WEFT_NO_OFFSET, "out of memory") :
		 out_open(&as.grammar, path);
	for (int f = 0; rc == 0 && f < 2 && t->opts->layout == WEFT_PALLAS_LAYOUT_PALLAS; f++) {
		char *dat = path_join(t->dir, "%s", DAT_NAMES[f]);
		rc = dat == NULL ? weft__error(WEFT_ENOMEM, t->dir, WEFT_NO_OFFSET, "out of memory") :
		     out_open(&as.dat[f], dat);
		free(dat);
	}
	if (rc == 0)
		rc = write_grammar(&as);
	if (rc == 0)
		rc = finish_thread_files(&as);
	else
		out_abort(&as.grammar);
	for (int f = 0; f < 2; f++)
		if (as.dat[f].path != NULL)
			out_abort(&as.dat[f]);
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
	codec_free(&t->codec);
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
	s->path = path_join(t->dir, "%s.tmp", name);
	if (s->path == NULL)
		return weft__error(WEFT_ENOMEM, t->dir, WEFT_NO_OFFSET, "out of memory");
	s->fd = open(s->path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
	return s->fd < 0 ? weft__error_errno(s->path, "cannot create") : 0;
}

/* Allocates the value storage of a new thread writer. */
static int thread_storage_init(pw_thread *t)
{
	int rc = codec_init(&t->codec, t->opts);
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
	char *file = path_join(t->dir, "%s", WEFT_PALLAS_THREAD_FILE);
	int rc = file == NULL ? weft__error(WEFT_ENOMEM, t->dir, WEFT_NO_OFFSET, "out of memory") :
		 check_new(file, t->opts->replace);
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
	if (rc == 0 && (t->dir = path_join(a->path, WEFT_PALLAS_THREAD_FMT, location)) == NULL)
		rc = weft__error(WEFT_ENOMEM, a->path, WEFT_NO_OFFSET, "out of memory");
	if (rc == 0 && (rc = make_dirs(t->dir, &t->created_dir)) == 0)
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
		rc = drain_jobs(t);
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
		abandon_jobs(t);
		pool_forget(t->archive->pool, t);
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

/* ---- Archives ---------------------------------------------------------------------------------------- */

/* A new archive of location group `id` in trace directory `dir`. */
static int archive_new(const char *dir, uint32_t id, const weft_pallas_write_options *o,
		       weft_pallas_archive **out)
{
	weft_pallas_archive *a = calloc(1, sizeof *a);
	*out = NULL;
	if (a == NULL)
		return weft__error(WEFT_ENOMEM, dir, WEFT_NO_OFFSET, "out of memory");
	a->id = id;
	a->opts = *o;
	pthread_mutex_init(&a->lock, NULL);
	a->dir = strdup(dir);
	a->path = path_join(dir, WEFT_PALLAS_ARCHIVE_FMT, id);
	a->file = a->path ? path_join(a->path, "%s", WEFT_PALLAS_ARCHIVE_FILE) : NULL;
	int rc = a->dir == NULL || a->path == NULL || a->file == NULL ?
		 weft__error(WEFT_ENOMEM, dir, WEFT_NO_OFFSET, "out of memory") :
		 defs_init(&a->defs, a->file);
	if (rc == 0)
		rc = make_dirs(a->path, NULL);
	if (rc == 0)
		rc = check_new(a->file, o->replace);
	if (rc < 0) {
		if (a->defs.owner != NULL)
			defs_free(&a->defs);
		free(a->dir), free(a->path), free(a->file);
		pthread_mutex_destroy(&a->lock);
		free(a);
		return rc;
	}
	*out = a;
	return 0;
}

int weft_pallas_archive_create(weft_pallas_global *g, uint32_t id, weft_pallas_archive **out)
{
	if (out != NULL)
		*out = NULL;
	if (g == NULL || out == NULL)
		return weft__error(WEFT_EINVAL, NULL, WEFT_NO_OFFSET, "archive_create: NULL argument");
	int rc = 0;
	pthread_mutex_lock(&g->lock);
	for (weft_pallas_archive *o = g->archives; o != NULL; o = o->next)
		if (o->id == id)
			rc = weft__error(WEFT_EEXIST, g->path, WEFT_NO_OFFSET,
					 "archive %u was already created", id);
	weft_pallas_archive *a = NULL;
	if (rc == 0 && (rc = archive_new(g->dir, id, &g->opts, &a)) == 0) {
		a->global = g;
		a->pool = g->pool;
		a->next = g->archives;
		g->archives = a;
	}
	pthread_mutex_unlock(&g->lock);
	*out = a;
	return rc;
}

int weft_pallas_archive_create_standalone(const char *dir, uint32_t id,
					  const weft_pallas_write_options *o,
					  weft_pallas_archive **out)
{
	weft_pallas_write_options opts;
	if (out != NULL)
		*out = NULL;
	if (dir == NULL || out == NULL)
		return weft__error(WEFT_EINVAL, NULL, WEFT_NO_OFFSET,
				   "archive_create_standalone: NULL argument");
	int rc = options_take(o, &opts, dir);
	if (rc == 0)
		rc = make_dirs(dir, NULL);
	if (rc == 0)
		rc = archive_new(dir, id, &opts, out);
	if (rc == 0 && (rc = pool_create(helpers_wanted(&opts), dir, &(*out)->own_pool)) == 0)
		(*out)->pool = (*out)->own_pool;
	if (rc < 0 && *out != NULL) {
		weft_pallas_archive_free(*out);
		*out = NULL;
	}
	return rc;
}

/* The archive's own definitions (NULL for a NULL archive). */
weft_pallas_defs *weft_pallas_archive_defs(weft_pallas_archive *a)
{
	return a != NULL ? &a->defs : NULL;
}

int weft_pallas_archive_store(weft_pallas_archive *a)
{
	if (a == NULL)
		return weft__error(WEFT_EINVAL, NULL, WEFT_NO_OFFSET, "archive_store: NULL archive");
	pthread_mutex_lock(&a->lock);
	uint32_t nb_threads = a->nb_threads;
	for (pw_thread *t = a->threads; t != NULL; t = t->next) {
		if (t->state == PW_OPEN) {
			pthread_mutex_unlock(&a->lock);
			return weft__error(WEFT_EINVAL, a->file, WEFT_NO_OFFSET,
					   "thread writer %u is still open: close it first",
					   t->location);
		}
	}
	pthread_mutex_unlock(&a->lock);
	pw_out o;
	int rc = out_open(&o, a->file);
	if (rc < 0) {
		out_abort(&o);
		return rc;
	}
	out_u32(&o, a->id);
	out_u32(&o, nb_threads);
	pthread_mutex_lock(&a->defs.lock);
	write_definitions(&o, &a->defs);
	write_hierarchy(&o, &a->defs);
	pthread_mutex_unlock(&a->defs.lock);
	return out_finish(&o, a->opts.sync);
}

void weft_pallas_archive_free(weft_pallas_archive *a)
{
	if (a == NULL)
		return;
	while (a->threads != NULL)
		weft_pallas_thread_free(a->threads);
	weft_pallas_global *g = a->global;
	if (g != NULL) {
		pthread_mutex_lock(&g->lock);
		for (weft_pallas_archive **p = &g->archives; *p != NULL; p = &(*p)->next) {
			if (*p == a) {
				*p = a->next;
				break;
			}
		}
		pthread_mutex_unlock(&g->lock);
	}
	pool_free(a->own_pool);
	if (a->defs.owner != NULL)
		defs_free(&a->defs);
	pthread_mutex_destroy(&a->lock);
	free(a->dir), free(a->path), free(a->file);
	free(a);
}

/* ---- The global archive ---------------------------------------------------------------------------- */

/* `<dir>/<name>`, with ".pallas" added unless `name` ends with it. */
static char *main_path(const char *dir, const char *name)
{
	size_t n = strlen(name), ext = strlen(".pallas");
	int has = n >= ext && strcmp(name + n - ext, ".pallas") == 0;
	return path_join(dir, "%s%s", name, has ? "" : ".pallas");
}

int weft_pallas_global_create(const char *dir, const char *name,
			      const weft_pallas_write_options *o, weft_pallas_global **out)
{
	if (out != NULL)
		*out = NULL;
	if (dir == NULL || name == NULL || out == NULL || name[0] == '\0' || strchr(name, '/'))
		return weft__error(WEFT_EINVAL, dir, WEFT_NO_OFFSET,
				   "global_create: NULL argument or bad trace name \"%s\"",
				   name ? name : "(null)");
	weft_pallas_global *g = calloc(1, sizeof *g);
	if (g == NULL)
		return weft__error(WEFT_ENOMEM, dir, WEFT_NO_OFFSET, "out of memory");
	pthread_mutex_init(&g->lock, NULL);
	int rc = options_take(o, &g->opts, dir);
	if (rc == 0 && ((g->dir = strdup(dir)) == NULL || (g->path = main_path(dir, name)) == NULL))
		rc = weft__error(WEFT_ENOMEM, dir, WEFT_NO_OFFSET, "out of memory or name too long");
	if (rc == 0)
		rc = make_dirs(dir, NULL);
	if (rc == 0)
		rc = check_new(g->path, g->opts.replace);
	if (rc == 0)
		rc = defs_init(&g->defs, g->path);
	if (rc == 0)
		rc = pool_create(helpers_wanted(&g->opts), g->path, &g->pool);
	if (rc < 0) {
		weft_pallas_global_free(g);
		return rc;
	}
	*out = g;
	return 0;
}

/* The global definitions (NULL for a NULL global archive). */
weft_pallas_defs *weft_pallas_global_defs(weft_pallas_global *g)
{
	return g != NULL ? &g->defs : NULL;
}

int weft_pallas_global_store(weft_pallas_global *g)
{
	if (g == NULL)
		return weft__error(WEFT_EINVAL, NULL, WEFT_NO_OFFSET, "global_store: NULL global archive");
	pw_out o;
	int rc = out_open(&o, g->path);
	if (rc < 0) {
		out_abort(&o);
		return rc;
	}
	out_u8(&o, WEFT_PALLAS_VERSION);
	write_settings(&o, &g->opts);
	pthread_mutex_lock(&g->defs.lock);
	write_definitions(&o, &g->defs);
	write_hierarchy(&o, &g->defs);
	pthread_mutex_unlock(&g->defs.lock);
	return out_finish(&o, g->opts.sync);
}

void weft_pallas_global_free(weft_pallas_global *g)
{
	if (g == NULL)
		return;
	while (g->archives != NULL)
		weft_pallas_archive_free(g->archives);
	pool_free(g->pool);
	if (g->defs.owner != NULL)
		defs_free(&g->defs);
	pthread_mutex_destroy(&g->lock);
	free(g->dir), free(g->path);
	free(g);
}
