/* SPDX-License-Identifier: MIT */
/*
 * formats/pallas/pallas_write_archive.c - the objects of the Pallas
 * writer's API (weft/pallas.h) above the thread writers: the write
 * options, the memory accounting of a thread writer, the global archive
 * and the archives, and their files (main.pallas, the archive files).
 * A thread's .dat files are written before its thread.pallas (see
 * pallas_write_thread.c), so a thread file always comes with its data.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

#include "formats/pallas/pallas_writer_internal.h"

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

/* ---- Main and archive files ------------------------------------------------------------------ */

/* A text of metadata: u64 length with its NUL, then the bytes and NUL. */
static void out_text(pw_out *o, const char *s)
{
	size_t n = strlen(s) + 1;
	out_u64(o, n);
	weft__pw_out_bytes(o, s, n);
}

/* Strings, regions, attributes, groups, comms (Pallas's storeDefinitions). */
static void write_definitions(pw_out *o, const struct weft_pallas_defs *d)
{
	static const uint8_t pad[3] = { 0 };
	out_u64(o, d->nstrings);
	for (size_t i = 0; i < d->nstrings; i++) {
		out_u32(o, d->strings[i].ref);
		out_i32(o, d->strings[i].len);
		weft__pw_out_bytes(o, d->strings[i].str, (size_t)d->strings[i].len);
	}
	out_u64(o, d->nregions);
	for (size_t i = 0; i < d->nregions; i++)
		out_u32(o, d->regions[i].ref), out_u32(o, d->regions[i].name);
	out_u64(o, d->nattrs);
	for (size_t i = 0; i < d->nattrs; i++) {
		out_u32(o, d->attrs[i].ref), out_u32(o, d->attrs[i].name);
		out_u32(o, d->attrs[i].description), out_u8(o, d->attrs[i].type);
		weft__pw_out_bytes(o, pad, sizeof pad);
	}
	out_u64(o, d->ngroups);
	for (size_t i = 0; i < d->ngroups; i++) {
		const pw_group *g = &d->groups[i];
		out_u32(o, g->ref), out_u32(o, g->name), out_i32(o, g->type);
		out_i32(o, g->paradigm), out_u32(o, g->count);
		weft__pw_out_bytes(o, g->members, (size_t)g->count * 4);
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
	a->path = weft__pw_path_join(dir, WEFT_PALLAS_ARCHIVE_FMT, id);
	a->file = a->path ? weft__pw_path_join(a->path, "%s", WEFT_PALLAS_ARCHIVE_FILE) : NULL;
	int rc = a->dir == NULL || a->path == NULL || a->file == NULL ?
		 weft__error(WEFT_ENOMEM, dir, WEFT_NO_OFFSET, "out of memory") :
		 weft__pw_defs_init(&a->defs, a->file);
	if (rc == 0)
		rc = weft__pw_make_dirs(a->path, NULL);
	if (rc == 0)
		rc = weft__pw_check_new(a->file, o->replace);
	if (rc < 0) {
		if (a->defs.owner != NULL)
			weft__pw_defs_free(&a->defs);
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
		rc = weft__pw_make_dirs(dir, NULL);
	if (rc == 0)
		rc = archive_new(dir, id, &opts, out);
	if (rc == 0 && (rc = weft__pw_pool_create(weft__pw_helpers_wanted(&opts), dir,
						   &(*out)->own_pool)) == 0)
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
	int rc = weft__pw_out_open(&o, a->file);
	if (rc < 0) {
		weft__pw_out_abort(&o);
		return rc;
	}
	out_u32(&o, a->id);
	out_u32(&o, nb_threads);
	pthread_mutex_lock(&a->defs.lock);
	write_definitions(&o, &a->defs);
	write_hierarchy(&o, &a->defs);
	pthread_mutex_unlock(&a->defs.lock);
	return weft__pw_out_finish(&o, a->opts.sync);
}

/*
 * Threads of archive `a` written by another writer of the same trace
 * directory (a thread or rank of a shared conversion, which made its own
 * archive object for them): counted in the archive file, as its own.
 */
void weft__pallas_archive_add_threads(weft_pallas_archive *a, uint32_t n)
{
	pthread_mutex_lock(&a->lock);
	a->nb_threads += n;
	pthread_mutex_unlock(&a->lock);
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
	weft__pw_pool_free(a->own_pool);
	if (a->defs.owner != NULL)
		weft__pw_defs_free(&a->defs);
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
	return weft__pw_path_join(dir, "%s%s", name, has ? "" : ".pallas");
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
		rc = weft__pw_make_dirs(dir, NULL);
	if (rc == 0)
		rc = weft__pw_check_new(g->path, g->opts.replace);
	if (rc == 0)
		rc = weft__pw_defs_init(&g->defs, g->path);
	if (rc == 0)
		rc = weft__pw_pool_create(weft__pw_helpers_wanted(&g->opts), g->path, &g->pool);
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
	int rc = weft__pw_out_open(&o, g->path);
	if (rc < 0) {
		weft__pw_out_abort(&o);
		return rc;
	}
	out_u8(&o, WEFT_PALLAS_VERSION);
	write_settings(&o, &g->opts);
	pthread_mutex_lock(&g->defs.lock);
	write_definitions(&o, &g->defs);
	write_hierarchy(&o, &g->defs);
	pthread_mutex_unlock(&g->defs.lock);
	return weft__pw_out_finish(&o, g->opts.sync);
}

void weft_pallas_global_free(weft_pallas_global *g)
{
	if (g == NULL)
		return;
	while (g->archives != NULL)
		weft_pallas_archive_free(g->archives);
	weft__pw_pool_free(g->pool);
	if (g->defs.owner != NULL)
		weft__pw_defs_free(&g->defs);
	pthread_mutex_destroy(&g->lock);
	free(g->dir), free(g->path);
	free(g);
}
