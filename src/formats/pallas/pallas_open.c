/* SPDX-License-Identifier: MIT */
/*
 * formats/pallas/pallas_open.c - opening a Pallas trace: the main file
 * (settings, global definitions, location groups) eagerly, then each
 * archive file (local definitions and locations), which gives the nodes
 * (an archive per location group, a thread per location) and the streams
 * (one per thread). Thread grammars and value data are read on demand, by
 * the stream readers (pallas_stream.c).
 *
 * A missing or damaged archive or thread file is a diagnostic, not a
 * failure: the rest of the trace stays readable.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/pallas/pallas_internal.h"

/* Main and archive files hold definitions only. */
#define DEFS_FILE_MAX ((uint64_t)1 << 30)

/* ---- Finding the main file ---------------------------------------------------- */

static int ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);
	return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* The first byte of a file, or -1. */
static int first_byte(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (f == NULL)
		return -1;
	int c = fgetc(f);
	fclose(f);
	return c;
}

/*
 * The main file of a trace directory: "main.pallas" when present, else
 * the first `*.pallas` file by name (malloc'ed path), or NULL. Its
 * questions go to `fs` (core/metafs.c; NULL: the file system).
 */
static char *find_main_file(weft__metafs *fs, const char *dir)
{
	char *main_path = weft__path_join(dir, "main.pallas");
	int kind;
	uint64_t size;
	if (main_path && weft__metafs_stat(fs, main_path, &kind, &size) == 0 &&
	    kind == WEFT__META_FILE)
		return main_path;
	free(main_path);
	char **names, *path = NULL;
	size_t n;
	if (weft__metafs_list(fs, dir, &names, &n) != 0)
		return NULL;
	for (size_t i = 0; i < n && path == NULL; i++) /* in name order */
		if (ends_with(names[i], ".pallas") && names[i][0] != '.')
			path = weft__path_join(dir, names[i]);
	weft__metafs_names_free(names, n);
	return path;
}

/* The main file of `path` (the file itself or found in the directory). */
static char *main_file_of(weft__metafs *fs, const char *path)
{
	int kind;
	uint64_t size;
	if (weft__metafs_stat(fs, path, &kind, &size) != 0)
		return NULL;
	if (kind == WEFT__META_DIR)
		return find_main_file(fs, path);
	if (kind == WEFT__META_FILE && ends_with(path, ".pallas"))
		return strdup(path);
	return NULL;
}

/*
 * weft__pallas_read_file() of a main or archive file through the open's
 * `fs`, in the same words: whole, bounded by `max_size`.
 */
static int read_defs_file(weft__metafs *fs, const char *path, const char *name,
			  uint64_t max_size, uint8_t **data, size_t *size)
{
	int kind;
	uint64_t had;
	char *bytes = NULL;
	size_t len = 0;
	int err = weft__metafs_stat(fs, path, &kind, &had);
	if (err == 0 && kind != WEFT__META_FILE)
		return weft__error(WEFT_EFORMAT, name, WEFT_NO_OFFSET, "expected a regular file");
	if (err == 0 && had <= max_size)
		err = weft__metafs_read(fs, path, (size_t)max_size, 0, &bytes, &len, &had);
	if (err > 0) {
		errno = err;
		return weft__error_errno(name, "cannot open");
	}
	if (err < 0)
		return err;
	if (bytes == NULL)
		return weft__error(WEFT_EUNSUPPORTED, name, WEFT_NO_OFFSET,
				   "file of %llu bytes is larger than the %llu bytes "
				   "accepted for this part of a Pallas trace",
				   (unsigned long long)had, (unsigned long long)max_size);
	if (len < had) {
		free(bytes);
		return weft__error(WEFT_ETRUNCATED, name, (uint64_t)len,
				   "file shrank while being read");
	}
	*data = (uint8_t *)bytes;
	*size = len;
	return 0;
}

/*
 * A `.pallas` main file (named so, not an archive or thread file) is a
 * Pallas trace; the version byte decides how sure (a wrong version is
 * still reported by open, as a clear error).
 */
static int pallas_probe(const char *path)
{
	char *main_path = main_file_of(NULL, path);
	if (main_path == NULL)
		return 0;
	int score = 0;
	if (!ends_with(main_path, "/" WEFT_PALLAS_ARCHIVE_FILE) &&
	    !ends_with(main_path, "/" WEFT_PALLAS_THREAD_FILE))
		score = first_byte(main_path) == WEFT_PALLAS_VERSION ? 90 : 40;
	free(main_path);
	return score;
}

/* ---- Metadata as JSON ----------------------------------------------------------- */

/*
 * The name of the timestamp storage: Pallas's names, and "WeftDelta" for
 * the deltas of weft's writer (a value Pallas does not define).
 */
static const char *storage_name(int32_t storage)
{
	return storage == WEFT_PALLAS_TS_WEFT_DELTA
		       ? "WeftDelta" : weft__pallas_timestamp_storage_name(storage);
}

static json_t *settings_json(const weft_pallas_settings *s)
{
	return json_pack("{s:s,s:s,s:I,s:s,s:I,s:s}",
			 "compression", weft__pallas_compression_name(s->compression),
			 "encoding", weft__pallas_encoding_name(s->encoding),
			 "zstd_level", (json_int_t)s->zstd_level,
			 "loop_finding", weft__pallas_loop_finding_name(s->loop_finding),
			 "max_loop_length", (json_int_t)s->max_loop_length,
			 "timestamp_storage", storage_name(s->timestamp_storage));
}

/* The custom metadata pairs of a file, as an object (NULL on ENOMEM). */
static json_t *metadata_json(const pallas_defs *d)
{
	json_t *m = json_object();
	for (size_t i = 0; m && i < d->metadata_count; i++) {
		char *key = weft__utf8_repaired(d->metadata[i].key, d->metadata[i].key_len);
		if (key != NULL)
			json_object_set_new(m, key, weft__json_text(d->metadata[i].value,
							      d->metadata[i].value_len));
		free(key);
	}
	return m;
}

/* Strings and regions with names: what pallas_info lists. */
static json_t *definitions_json(const pallas_trace *pt, const pallas_archive *a,
				const pallas_defs *d)
{
	json_t *strings = json_object(), *regions = json_object();
	char key[16];
	for (size_t i = 0; i < d->string_count; i++) {
		snprintf(key, sizeof key, "%u", d->strings[i].ref);
		json_object_set_new(strings, key, weft__json_text(d->strings[i].text,
							    d->strings[i].len));
	}
	for (size_t i = 0; i < d->region_count; i++) {
		const pallas_string *s = weft__pallas_string(pt, a, d->regions[i].name);
		snprintf(key, sizeof key, "%u", d->regions[i].ref);
		json_object_set_new(regions, key, s ? weft__json_text(s->text, s->len)
						    : json_null());
	}
	return json_pack("{s:o,s:o,s:I,s:I,s:I}", "strings", strings, "regions",
			 regions, "attributes", (json_int_t)d->attribute_count,
			 "groups", (json_int_t)d->group_count, "comms",
			 (json_int_t)d->comm_count);
}

static json_t *name_json(const pallas_trace *pt, const pallas_archive *a,
			 uint32_t ref)
{
	const pallas_string *s = weft__pallas_string(pt, a, ref);
	return s ? weft__json_text(s->text, s->len) : json_null();
}

/* ---- Main file ------------------------------------------------------------------------ */

static int parse_main(weft_trace *trace, pallas_trace *pt)
{
	int rc = read_defs_file(trace->metafs, pt->main_path, pt->main_path, DEFS_FILE_MAX,
				&pt->buf, &pt->size);
	if (rc < 0)
		return rc;
	pallas_in in;
	weft__pallas_in_init(&in, pt->buf, pt->size, pt->main_path);
	uint8_t version;
	if ((rc = weft__pallas_in_u8(&in, &version, "the format version")) < 0)
		return rc;
	if (version != WEFT_PALLAS_VERSION)
		return weft__error(WEFT_EUNSUPPORTED, pt->main_path, 0,
				   "format version %u, expected %d (Pallas 0.20)",
				   version, WEFT_PALLAS_VERSION);
	if ((rc = weft__pallas_parse_settings(&in, &pt->settings)) < 0 ||
	    (rc = weft__pallas_parse_defs(&in, &pt->defs)) < 0)
		return rc;
	if (weft__pallas_in_left(&in) > 0)
		weft__trace_diag(trace, WEFT_SEV_WARNING, WEFT_EFORMAT, pt->main_path,
				 weft__pallas_in_offset(&in),
				 "%llu bytes after the metadata are ignored",
				 (unsigned long long)weft__pallas_in_left(&in));
	int32_t comp = pt->settings.compression;
	if (comp != WEFT_PALLAS_COMPRESS_NONE && comp != WEFT_PALLAS_COMPRESS_ZSTD)
		weft__trace_diag(trace, WEFT_SEV_WARNING, WEFT_EUNSUPPORTED,
				 pt->main_path, 1,
				 "values compressed with %s are lossy: weft reads "
				 "the structure but refuses the values",
				 weft__pallas_compression_name(comp));
	return 0;
}

/* ---- Archives ------------------------------------------------------------------------ */

/* Reads archive_<id>/archive.pallas: u32 id | u32 threads | definitions. */
static int load_archive(weft__metafs *fs, pallas_trace *pt, pallas_archive *a, char *file)
{
	char rel[64];
	snprintf(rel, sizeof rel, WEFT_PALLAS_ARCHIVE_FMT "/%s", a->id,
		 WEFT_PALLAS_ARCHIVE_FILE);
	char *path = weft__path_join(pt->dir, rel);
	if (path == NULL)
		return weft__error(WEFT_ENOMEM, rel, WEFT_NO_OFFSET, "out of memory");
	snprintf(file, 512, "%s", path);
	int rc = read_defs_file(fs, path, file, DEFS_FILE_MAX, &a->buf, &a->size);
	free(path);
	if (rc < 0)
		return rc;
	pallas_in in;
	weft__pallas_in_init(&in, a->buf, a->size, file);
	uint32_t id, threads;
	if ((rc = weft__pallas_in_u32(&in, &id, "the archive id")) < 0 ||
	    (rc = weft__pallas_in_u32(&in, &threads, "the thread count")) < 0 ||
	    (rc = weft__pallas_parse_defs(&in, &a->defs)) < 0)
		return rc;
	if (id != a->id)
		return weft__error(WEFT_EFORMAT, file, 0,
				   "archive id %u, expected %u (its location group)",
				   id, a->id);
	a->nb_threads = threads;
	a->loaded = 1;
	return 0;
}

/* The archive node: "archive_<id>", with its name and definitions. */
static int add_archive_node(weft_trace *trace, pallas_trace *pt, pallas_archive *a)
{
	char name[32];
	snprintf(name, sizeof name, WEFT_PALLAS_ARCHIVE_FMT, a->id);
	int rc = weft__trace_add_node(trace, WEFT_NO_PARENT, "archive", name, a->id,
				      NULL, &a->node);
	if (rc < 0)
		return rc;
	const pallas_location *lg = a->group;
	json_t *m = json_pack("{s:o,s:o}", "name", name_json(pt, a, lg->name),
			      "parent", lg->parent == WEFT_PALLAS_NO_REF
						? json_null()
						: json_integer(lg->parent));
	if (m && a->loaded) {
		json_object_set_new(m, "definitions", definitions_json(pt, a, &a->defs));
		json_object_set_new(m, "metadata", metadata_json(&a->defs));
	}
	return weft__trace_set_node_metadata_object(trace, a->node, m);
}

/* A location (a thread) of an archive, and the file that defines it. */
typedef struct loc_ref {
	const pallas_location *loc;
	const char *file;
} loc_ref;

/* The grammar file of thread `thread` of archive `archive`, relative to the trace. */
static void thread_rel(char rel[96], uint32_t archive, uint32_t thread)
{
	snprintf(rel, 96, WEFT_PALLAS_ARCHIVE_FMT "/" WEFT_PALLAS_THREAD_FMT "/%s", archive,
		 thread, WEFT_PALLAS_THREAD_FILE);
}

/* A thread of an archive: a node and a stream, when its files exist. */
static int add_thread(weft_trace *trace, pallas_trace *pt, uint32_t archive,
		      const pallas_location *loc)
{
	pallas_archive *a = &pt->archives[archive];
	char rel[96], name[32];
	snprintf(name, sizeof name, WEFT_PALLAS_THREAD_FMT, loc->id);
	thread_rel(rel, a->id, loc->id);
	char *file = weft__path_join(pt->dir, rel);
	int kind, err;
	uint64_t size;
	if (file == NULL)
		return weft__error(WEFT_ENOMEM, rel, WEFT_NO_OFFSET, "out of memory");
	if ((err = weft__metafs_stat(trace->metafs, file, &kind, &size)) < 0) {
		free(file);
		return err;
	}
	if (err != 0) {
		weft__trace_diag(trace, WEFT_SEV_WARNING, WEFT_ENOTFOUND, file,
				 WEFT_NO_OFFSET, "thread %u of archive %u has no "
				 "grammar file: the thread is left out", loc->id, a->id);
		free(file);
		return 0;
	}
	/* The table grows first: a stream of the trace always has its entry. */
	int rc = weft__array_grow((void **)&pt->streams, &pt->stream_cap,
				  pt->stream_count + 1, sizeof *pt->streams);
	uint32_t node, index;
	if (rc == 0)
		rc = weft__trace_add_node(trace, a->node, "thread", name, loc->id, NULL,
					  &node);
	if (rc == 0)
		rc = weft__trace_set_node_metadata_object(
			trace, node, json_pack("{s:o}", "name", name_json(pt, a, loc->name)));
	if (rc == 0)
		rc = weft__trace_add_stream(trace, node, rel, size, &index);
	if (rc < 0) {
		free(file);
		return rc;
	}
	trace->streams[index].finished = -1; /* Pallas does not record it */
	pallas_stream_ref *s = &pt->streams[pt->stream_count++];
	s->archive = archive;
	s->location = loc->id;
	s->grammar = file;
	s->dir = strdup(file);
	if (s->dir == NULL)
		return weft__error(WEFT_ENOMEM, rel, WEFT_NO_OFFSET, "out of memory");
	*strrchr(s->dir, '/') = '\0';
	return 0;
}

/* An id and the position of its entry, to find ids given twice. */
typedef struct id_pos { uint32_t id, pos; } id_pos;

static int cmp_id_pos(const void *a, const void *b)
{
	const id_pos *x = a, *y = b;
	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return x->pos < y->pos ? -1 : x->pos > y->pos;
}

/*
 * Sets skip[i] for each of the n ids that an earlier entry already has
 * (ids[i].pos must be i on entry; ids comes back sorted by id).
 */
static void mark_duplicates(id_pos *ids, size_t n, uint8_t *skip)
{
	qsort(ids, n, sizeof *ids, cmp_id_pos);
	for (size_t i = 1; i < n; i++)
		if (ids[i].id == ids[i - 1].id)
			skip[ids[i].pos] = 1;
}

/* 1 when `id` is in ids (n entries sorted by id). */
static int has_id(const id_pos *ids, size_t n, uint32_t id)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (ids[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && ids[lo].id == id;
}

/* Orders locations of one table by id, then by place in the table. */
static int cmp_loc_ref(const void *a, const void *b)
{
	const pallas_location *x = ((const loc_ref *)a)->loc, *y = ((const loc_ref *)b)->loc;
	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return x < y ? -1 : x > y;
}

/*
 * The locations of archive `a`, in the order its threads become streams,
 * which is Pallas's (it sorts each table by id when it reads it): the
 * archive's own by id, then the main file's whose parent is this
 * location group, by id. *out is malloc'd (*n entries).
 */
static int archive_locations(const pallas_trace *pt, const pallas_archive *a,
			     const char *archive_file, loc_ref **out, size_t *n)
{
	size_t cap = a->defs.location_count + pt->defs.location_count;
	loc_ref *list = malloc((cap ? cap : 1) * sizeof *list);
	*out = list;
	*n = 0;
	if (list == NULL)
		return weft__error(WEFT_ENOMEM, archive_file, WEFT_NO_OFFSET, "out of memory");
	for (size_t k = 0; k < a->defs.location_count; k++)
		list[(*n)++] = (loc_ref){ &a->defs.locations[k], archive_file };
	size_t own = *n;
	for (size_t k = 0; k < pt->defs.location_count; k++)
		if (pt->defs.locations[k].parent == a->id)
			list[(*n)++] = (loc_ref){ &pt->defs.locations[k], pt->main_path };
	qsort(list, own, sizeof *list, cmp_loc_ref);
	qsort(list + own, *n - own, sizeof *list, cmp_loc_ref);
	return 0;
}

/*
 * Adds the threads of archive `i` (its locations, see archive_locations).
 * A thread id given twice in the archive is a warning, and only its first
 * definition is used (each would read the same thread directory).
 */
static int add_archive_threads(weft_trace *trace, pallas_trace *pt, uint32_t i)
{
	pallas_archive *a = &pt->archives[i];
	char file[512];
	snprintf(file, sizeof file, "%s/" WEFT_PALLAS_ARCHIVE_FMT "/%s", pt->dir, a->id,
		 WEFT_PALLAS_ARCHIVE_FILE);
	loc_ref *list;
	size_t n;
	int rc = archive_locations(pt, a, file, &list, &n);
	id_pos *ids = rc == 0 ? malloc((n ? n : 1) * sizeof *ids) : NULL;
	uint8_t *skip = ids != NULL ? calloc(n ? n : 1, 1) : NULL;
	if (rc == 0 && skip == NULL)
		rc = weft__error(WEFT_ENOMEM, file, WEFT_NO_OFFSET, "out of memory");
	for (size_t k = 0; rc == 0 && k < n; k++)
		ids[k] = (id_pos){ list[k].loc->id, (uint32_t)k };
	if (rc == 0)
		mark_duplicates(ids, n, skip);
	for (size_t k = 0; rc == 0 && k < n; k++) {
		if (!skip[k]) {
			rc = add_thread(trace, pt, i, list[k].loc);
			continue;
		}
		weft__trace_diag(trace, WEFT_SEV_WARNING, WEFT_EFORMAT, list[k].file,
				 list[k].loc->offset, "thread %u of archive %u is defined "
				 "again: this definition is ignored", list[k].loc->id, a->id);
	}
	free(skip);
	free(ids);
	free(list);
	return rc;
}

/*
 * Warns about the main file's locations whose parent is no location group
 * (no archive reads them). `groups`: the group ids, sorted.
 */
static void check_orphan_locations(weft_trace *trace, const pallas_trace *pt,
				   const id_pos *groups, size_t n)
{
	for (size_t k = 0; k < pt->defs.location_count; k++) {
		const pallas_location *l = &pt->defs.locations[k];
		if (!has_id(groups, n, l->parent))
			weft__trace_diag(trace, WEFT_SEV_WARNING, WEFT_EFORMAT, pt->main_path,
					 l->offset, "location %u: its parent %u is not a "
					 "location group: the thread is left out", l->id,
					 l->parent);
	}
}

/*
 * The archives: one per location group of the main file, by id (Pallas's
 * order); a group id given twice is a warning and only its first
 * definition is used.
 */
static int make_archives(weft_trace *trace, pallas_trace *pt, id_pos **sorted)
{
	size_t n = pt->defs.location_group_count;
	id_pos *ids = malloc((n ? n : 1) * sizeof *ids);
	uint8_t *skip = calloc(n ? n : 1, 1);
	pt->archives = calloc(n ? n : 1, sizeof *pt->archives);
	*sorted = ids;
	if (ids == NULL || skip == NULL || pt->archives == NULL) {
		free(skip);
		return weft__error(WEFT_ENOMEM, pt->main_path, WEFT_NO_OFFSET, "out of memory");
	}
	for (size_t i = 0; i < n; i++)
		ids[i] = (id_pos){ pt->defs.location_groups[i].id, (uint32_t)i };
	mark_duplicates(ids, n, skip);
	for (size_t k = 0; k < n; k++) {
		uint32_t i = ids[k].pos;
		const pallas_location *lg = &pt->defs.location_groups[i];
		if (skip[i]) {
			weft__trace_diag(trace, WEFT_SEV_WARNING, WEFT_EFORMAT, pt->main_path,
					 lg->offset, "location group %u is defined again: "
					 "this definition is ignored", lg->id);
			continue;
		}
		pallas_archive *a = &pt->archives[pt->archive_count++];
		a->id = lg->id;
		a->group = lg;
	}
	free(skip);
	return 0;
}

/*
 * A book of what opening asks about archive `item` (`arg`: the trace, its
 * main file read): the archive file, then the size of each of its
 * threads' grammar files, as load_archive() and add_thread() ask them.
 */
static int prefetch_archive(weft__metafs *book, const char *root, size_t item, void *arg)
{
	(void)root;
	pallas_trace *pt = arg;
	pallas_archive a = { .id = pt->archives[item].id, .group = pt->archives[item].group };
	char file[512];
	loc_ref *list = NULL;
	size_t n = 0;
	int rc = load_archive(book, pt, &a, file);
	if (rc == 0)
		rc = archive_locations(pt, &a, file, &list, &n);
	for (size_t k = 0; rc == 0 && k < n; k++) {
		char rel[96];
		thread_rel(rel, a.id, list[k].loc->id);
		char *grammar = weft__path_join(pt->dir, rel);
		int kind;
		uint64_t size;
		rc = grammar != NULL ? weft__metafs_stat(book, grammar, &kind, &size) : WEFT_ENOMEM;
		rc = rc < 0 ? rc : 0;
		free(grammar);
	}
	free(list);
	weft__pallas_defs_free(&a.defs);
	free(a.buf);
	return rc;
}

/*
 * Loads every archive and adds its threads: the archive's locations, and
 * the main file's locations whose parent is this location group.
 */
static int load_archives(weft_trace *trace, pallas_trace *pt)
{
	id_pos *groups;
	int rc = make_archives(trace, pt, &groups);
	/* On ranks: the other ranks read the archives for rank 0. */
	if (rc == 0)
		rc = weft__metafs_prefetch(trace->metafs, pt->dir, pt->archive_count,
					   prefetch_archive, pt);
	for (size_t i = 0; rc == 0 && i < pt->archive_count; i++) {
		pallas_archive *a = &pt->archives[i];
		char file[512];
		if (load_archive(trace->metafs, pt, a, file) < 0) {
			/* A damaged archive (a count or size past its end) loses
			 * the data of all its threads: an error, not a warning. */
			int missing = weft__error_offset() == WEFT_NO_OFFSET;
			weft__trace_diag_last_error(trace, missing ? WEFT_SEV_WARNING
								   : WEFT_SEV_ERROR,
						    missing ? WEFT_ENOTFOUND : WEFT_EFORMAT,
						    " (the archive's threads are left out)");
			weft__pallas_defs_free(&a->defs);
			a->loaded = 0;
		}
	}
	if (rc == 0)
		check_orphan_locations(trace, pt, groups, pt->defs.location_group_count);
	free(groups);
	for (size_t i = 0; rc == 0 && i < pt->archive_count; i++) {
		rc = add_archive_node(trace, pt, &pt->archives[i]);
		if (rc == 0 && pt->archives[i].loaded)
			rc = add_archive_threads(trace, pt, (uint32_t)i);
	}
	return rc;
}

/* The trace-wide metadata: version, settings, global definitions. */
static int set_trace_metadata(weft_trace *trace, const pallas_trace *pt)
{
	json_t *m = json_pack("{s:i,s:o,s:o,s:o,s:o}", "format_version",
			      WEFT_PALLAS_VERSION, "main_file",
			      weft__json_text(pt->main_path, strlen(pt->main_path)),
			      "settings", settings_json(&pt->settings), "definitions",
			      definitions_json(pt, NULL, &pt->defs), "metadata",
			      metadata_json(&pt->defs));
	return weft__trace_set_metadata_object(trace, m);
}

static void pallas_close(weft_trace *trace)
{
	pallas_trace *pt = trace->backend_data;
	if (pt == NULL)
		return;
	for (size_t i = 0; i < pt->archive_count; i++) {
		weft__pallas_defs_free(&pt->archives[i].defs);
		free(pt->archives[i].buf);
	}
	for (size_t i = 0; i < pt->stream_count; i++) {
		free(pt->streams[i].dir);
		free(pt->streams[i].grammar);
	}
	weft__pallas_cache_free(pt->cache);
	weft__pallas_defs_free(&pt->defs);
	free(pt->archives);
	free(pt->streams);
	free(pt->buf);
	free(pt->main_path);
	free(pt->dir);
	free(pt);
	trace->backend_data = NULL;
}

static int pallas_open(weft_trace *trace, const char *path,
		       const weft_open_options *options)
{
	pallas_trace *pt = calloc(1, sizeof *pt);
	if (pt == NULL)
		return weft__error(WEFT_ENOMEM, path, WEFT_NO_OFFSET, "out of memory");
	trace->backend_data = pt;
	pt->main_path = main_file_of(trace->metafs, path);
	if (pt->main_path == NULL)
		return weft__error(WEFT_ENOTFOUND, path, WEFT_NO_OFFSET,
				   "expected a Pallas main file (*.pallas) or a "
				   "directory holding one");
	pt->dir = strdup(pt->main_path);
	if (pt->dir == NULL)
		return weft__error(WEFT_ENOMEM, path, WEFT_NO_OFFSET, "out of memory");
	char *slash = strrchr(pt->dir, '/');
	if (slash)
		*slash = '\0';
	else
		strcpy(pt->dir, ".");
	int rc = parse_main(trace, pt);
	if (rc == 0)
		rc = load_archives(trace, pt);
	if (rc == 0)
		rc = set_trace_metadata(trace, pt);
	if (rc == 0) {
		uint64_t budget = options && options->read_budget_bytes
					  ? options->read_budget_bytes
					  : (uint64_t)32 << 20;
		pt->cache = weft__pallas_cache_create(budget, &pt->settings);
		if (pt->cache == NULL)
			rc = weft__error(WEFT_ENOMEM, path, WEFT_NO_OFFSET, "out of memory");
	}
	trace->layout_version = WEFT_PALLAS_VERSION;
	return rc;
}

/* The grammar file of stream `stream` (weft_backend.stream_data_path). */
static const char *pallas_stream_data_path(const weft_trace *trace, uint32_t stream)
{
	const pallas_trace *pt = trace->backend_data;
	return stream < pt->stream_count ? pt->streams[stream].grammar : NULL;
}

int weft__pallas_stream_thread(weft_trace *trace, uint32_t stream,
			       pallas_thread **out)
{
	const pallas_trace *pt = trace->backend_data;
	if (stream >= pt->stream_count)
		return weft__error(WEFT_EINVAL, NULL, WEFT_NO_OFFSET, "no stream %u", stream);
	return weft__pallas_thread_load(pt->streams[stream].dir,
					weft_trace_stream(trace, stream)->path, out);
}

const weft_backend weft__pallas_backend = {
	.format = WEFT_FORMAT_PALLAS,
	.name = "pallas",
	.expected = "a Pallas trace directory or main .pallas file",
	.path_kinds = WEFT__PATH_DIR | WEFT__PATH_FILE,
	.payload_is_fields = 1,
	.probe = pallas_probe,
	.open = pallas_open,
	.close = pallas_close,
	.stream_open = weft__pallas_stream_open,
	.stream_next = weft__pallas_stream_next,
	.stream_next_batch = weft__pallas_stream_next_batch,
	.stream_close = weft__pallas_stream_close,
	.event_fields = weft__pallas_event_fields,
	.event_classify = weft__pallas_event_classify,
	.check = &weft__pallas_check_hooks,
	.stream_stats = weft__pallas_stream_stats,
	.event_schemas = weft__pallas_event_schemas,
	.stream_data_path = pallas_stream_data_path,
};
