/* SPDX-License-Identifier: MIT */
/*
 * formats/ovni/ovni_open.c - finding the streams of an ovni trace (layouts
 * 1, 2 and 3), building the loom > process > thread hierarchy, merging the
 * metadata by the v3 rules and applying ovnisync clock offsets.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "formats/ovni/ovni_internal.h"

#define MAX_WALK_DEPTH 12
/* Directories the probe lists before it says "not ovni" (see ovni_probe). */
#define PROBE_MAX_DIRS 256
/* Hosts read from a clock offset table (one per node of the run). */
#define OVNI_MAX_CLOCK_HOSTS 4096
/* A clock offset table larger than this is refused (4096 hosts take ~250 KB). */
#define OVNI_MAX_CLOCK_TABLE_BYTES (16u << 20)

/* A stream found on disk, before it becomes a weft stream. */
typedef struct found_stream {
	char *rel_path;  /* stream path: v3 directory, or v1/v2 file */
	char *rel_file;  /* binary stream, relative to the root */
	int v3;          /* stream.json + stream.obs directory */
} found_stream;

typedef struct found_list {
	found_stream *items;
	size_t count, cap;
	/* The probe: the walk stops at the first stream, or once it has
	 * listed `dirs_left` directories without finding one. */
	int first_only;
	int dirs_left;
	int dealt;      /* the other ranks were given their share (deal_here) */
} found_list;

/* State of one open: the accumulating metadata of every node. */
typedef struct open_ctx {
	weft_trace *trace;
	const char *root;
	found_list found;
	json_t **meta;  /* merged metadata per node id (NULL = none) */
	size_t meta_cap;
	int layouts_seen[4];
} open_ctx;

/* ---- Walking the directory tree -------------------------------------------- */

static int ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);
	return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* "thread.<digits>" without extension: the streams of ovni 1.0.x. */
static int is_bare_thread_stream(const char *name)
{
	if (strncmp(name, "thread.", 7) != 0 || name[7] == '\0')
		return 0;
	for (const char *p = name + 7; *p; p++)
		if (*p < '0' || *p > '9')
			return 0;
	return 1;
}

static int found_add(found_list *l, const char *rel_path, const char *rel_file, int v3)
{
	if (weft__array_grow((void **)&l->items, &l->cap, l->count + 1, sizeof *l->items) < 0)
		return WEFT_ENOMEM;
	found_stream *f = &l->items[l->count];
	f->rel_path = strdup(rel_path);
	f->rel_file = strdup(rel_file);
	f->v3 = v3;
	if (f->rel_path == NULL || f->rel_file == NULL) {
		free(f->rel_path);
		free(f->rel_file);
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	}
	l->count++;
	return 0;
}

static void found_free(found_list *l)
{
	for (size_t i = 0; i < l->count; i++) {
		free(l->items[i].rel_path);
		free(l->items[i].rel_file);
	}
	free(l->items);
}

/* The probe's walk has its answer: a stream, or too many directories without one. */
static int probe_done(const found_list *l)
{
	return l->first_only && (l->count > 0 || l->dirs_left <= 0);
}

/* "a" + "/" + "b", or just "b" when a is empty. */
static char *rel_join(const char *a, const char *b)
{
	return a[0] ? weft__path_join(a, b) : strdup(b);
}

/*
 * The stream.json of v3 stream `f`, relative to the root (malloc'd, NULL
 * without memory): next to its stream.obs, the trace root itself when the
 * path given is the stream's directory (whose rel_path is then its name).
 */
static char *stream_json_of(const found_stream *f)
{
	size_t dir_len = strlen(f->rel_file) - strlen("stream.obs");
	char *rel = malloc(dir_len + sizeof "stream.json");
	if (rel != NULL) {
		memcpy(rel, f->rel_file, dir_len);
		memcpy(rel + dir_len, "stream.json", sizeof "stream.json");
	}
	return rel;
}

static int walk(weft__metafs *fs, const char *root, const char *rel, int depth,
		found_list *out);
static int prefetch_entry(weft__metafs *book, const char *root, size_t item, void *arg);

/*
 * Looks at one directory entry: a stream file (v1/v2), or a directory to
 * descend into (which may be a v3 stream directory).
 */
static int walk_entry(weft__metafs *fs, const char *root, const char *rel, const char *name,
		      int depth, found_list *out)
{
	char *child_rel = rel_join(rel, name);
	char *abs = child_rel ? weft__path_join(root, child_rel) : NULL;
	int rc = 0, kind;
	uint64_t size;
	if (abs == NULL) {
		rc = weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	} else if ((rc = weft__metafs_stat(fs, abs, &kind, &size)) != 0) {
		rc = rc < 0 ? rc : 0; /* gone since listed: not a stream */
	} else if (kind == WEFT__META_DIR) {
		rc = walk(fs, root, child_rel, depth + 1, out);
	} else if (kind == WEFT__META_FILE && strcmp(name, "stream.obs") != 0 &&
		   (ends_with(name, ".obs") || is_bare_thread_stream(name))) {
		rc = found_add(out, child_rel, child_rel, 0);
	}
	free(abs);
	free(child_rel);
	return rc;
}

/* A directory's entries, for the other ranks' share (prefetch_entry). */
typedef struct deal {
	const char *rel;
	char **names;
	int depth;
} deal;

/*
 * 1 when the other ranks share the entries of this directory (the `n`
 * `names` of a directory at `depth`) to read its streams' metadata for
 * rank 0 (weft__metafs_prefetch): the first directory that holds looms
 * ("loom.*", every layout's), or else the trace's root unless it holds an
 * "ovni" directory (the default trace directory of libovni and nOS-V: a
 * trace given by the directory that holds it, whose looms are one level
 * down; dealing its root's entries gave that whole directory to rank 1).
 */
static int deal_here(char *const *names, size_t n, int depth)
{
	int ovni_dir = 0;
	for (size_t i = 0; i < n; i++) {
		if (strncmp(names[i], "loom.", 5) == 0)
			return 1;
		ovni_dir |= strcmp(names[i], "ovni") == 0;
	}
	return depth == 0 && !ovni_dir;
}

/*
 * Collects the streams below root/rel in name order (so stream order and
 * hierarchy are the same on every run). A directory holding stream.obs is
 * a v3 stream and is not descended further.
 */
static int walk(weft__metafs *fs, const char *root, const char *rel, int depth,
		found_list *out)
{
	if (depth > MAX_WALK_DEPTH)
		return 0;
	char *dir = rel[0] ? weft__path_join(root, rel) : strdup(root);
	if (dir == NULL)
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	char **names;
	size_t n;
	if (out->first_only && out->dirs_left-- <= 0) {
		free(dir);
		return 0;
	}
	int rc = weft__metafs_list(fs, dir, &names, &n);
	if (rc != 0) {
		if (rc > 0 && depth == 0) {
			errno = rc;
			rc = weft__error_errno(dir, "cannot list");
		} else if (rc > 0) {
			rc = 0;
		}
		free(dir);
		return rc;
	}
	int is_v3 = 0;
	for (size_t i = 0; i < n; i++)
		if (strcmp(names[i], "stream.obs") == 0)
			is_v3 = 1;
	/* On ranks: the other ranks walk the entries of the looms' directory
	 * and read their streams' metadata for rank 0. */
	if (!is_v3 && !out->dealt && deal_here(names, n, depth)) {
		out->dealt = 1;
		deal d = { rel, names, depth };
		rc = weft__metafs_prefetch(fs, root, n, prefetch_entry, &d);
	}
	if (is_v3) {
		char *file = rel_join(rel, "stream.obs");
		const char *base = strrchr(root, '/');
		/* The root itself is the stream: name it after its directory. */
		rc = file ? found_add(out, rel[0] ? rel : (base ? base + 1 : root),
				      file, 1) : WEFT_ENOMEM;
		free(file);
	}
	for (size_t i = 0; rc == 0 && !is_v3 && i < n && !probe_done(out); i++)
		if (names[i][0] != '.')
			rc = walk_entry(fs, root, rel, names[i], depth, out);
	weft__metafs_names_free(names, n);
	free(dir);
	return rc;
}

/*
 * A book of what opening asks about the streams below root/name (a loom):
 * the walk, then each stream's size, header and, for layout 3, its
 * stream.json, as add_stream() and load_json() ask them (the same paths,
 * lengths and heads, or rank 0's questions find no answer). Layouts 1 and
 * 2 (the metadata.json of a process is read with its first stream) are
 * left to rank 0.
 */
static int prefetch_stream(weft__metafs *book, const char *root, const found_stream *f)
{
	char *abs = weft__path_join(root, f->rel_file);
	if (abs == NULL)
		return WEFT_ENOMEM;
	int kind;
	uint64_t size;
	char *bytes = NULL;
	size_t len;
	int rc = weft__metafs_stat(book, abs, &kind, &size);
	if (rc >= 0) {
		rc = weft__metafs_read(book, abs, OVNI_STREAM_HEADER_SIZE, 1, &bytes, &len, &size);
		free(bytes);
		bytes = NULL;
	}
	free(abs);
	if (rc < 0 || !f->v3)
		return rc < 0 ? rc : 0;
	char *rel = stream_json_of(f);
	if (rel == NULL)
		return WEFT_ENOMEM;
	abs = weft__path_join(root, rel);
	free(rel);
	if (abs == NULL)
		return WEFT_ENOMEM;
	rc = weft__metafs_read(book, abs, OVNI_MAX_JSON_BYTES, 0, &bytes, &len, &size);
	free(bytes);
	free(abs);
	return rc < 0 ? rc : 0;
}

/* Entry `item` of the dealt directory (`arg`: a deal), for rank 0's book. */
static int prefetch_entry(weft__metafs *book, const char *root, size_t item, void *arg)
{
	const deal *d = arg;
	const char *name = d->names[item];
	if (name[0] == '.')
		return 0;
	found_list found = { 0 };
	int rc = walk_entry(book, root, d->rel, name, d->depth, &found);
	for (size_t i = 0; rc >= 0 && i < found.count; i++)
		rc = prefetch_stream(book, root, &found.items[i]);
	found_free(&found);
	return rc;
}

/* Probe: a .obs file, or a directory with a stream below it. */
static int ovni_probe(const char *path)
{
	struct stat st;
	if (stat(path, &st) != 0)
		return 0;
	if (S_ISREG(st.st_mode))
		return ends_with(path, ".obs") ? 2 : 0;
	if (!S_ISDIR(st.st_mode))
		return 0;
	/* One stream tells an ovni trace; the first is a few directories
	 * down (loom, process, thread). Another format's tree (a Pallas trace
	 * of 4096 threads: 37,000 calls) is not walked to its end. */
	found_list l = { .first_only = 1, .dirs_left = PROBE_MAX_DIRS };
	int rc = walk(NULL, path, "", 0, &l);
	int found = rc == 0 && l.count > 0;
	found_free(&l);
	weft__error_clear();
	return found ? 2 : 0;
}

/* ---- Metadata -------------------------------------------------------------- */

/*
 * Loads a JSON file (bounded in size); NULL with a diagnostic on failure,
 * NULL alone when it does not exist. *rc: < 0 when the open must stop
 * (memory, a replayed tape that does not match).
 */
static json_t *load_json(open_ctx *ctx, const char *rel, int *rc)
{
	char *abs = weft__path_join(ctx->root, rel);
	char *text = NULL;
	size_t len = 0;
	uint64_t size = 0;
	json_t *j = NULL;
	if (abs == NULL) {
		*rc = weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
		return NULL;
	}
	int err = weft__metafs_read(ctx->trace->metafs, abs, OVNI_MAX_JSON_BYTES, 0, &text,
				    &len, &size);
	free(abs);
	if (err < 0)
		*rc = err;
	if (err == ENOENT || err == ENOTDIR || err < 0)
		return NULL;
	if (err > 0) {
		weft__trace_diag(ctx->trace, WEFT_SEV_ERROR, WEFT_EFORMAT, rel, WEFT_NO_OFFSET,
				 "expected JSON: cannot read the file: %s", strerror(err));
	} else if (text == NULL) {
		weft__trace_diag(ctx->trace, WEFT_SEV_ERROR, WEFT_EFORMAT, rel, 0,
				 "metadata file of %lld bytes is larger than %llu: ignored",
				 (long long)size, (unsigned long long)OVNI_MAX_JSON_BYTES);
	} else {
		json_error_t jerr;
		j = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
		if (j == NULL)
			weft__trace_diag(ctx->trace, WEFT_SEV_ERROR, WEFT_EFORMAT, rel,
					 jerr.position >= 0 ? (uint64_t)jerr.position : WEFT_NO_OFFSET,
					 "expected JSON: %s (line %d)", jerr.text, jerr.line);
		else if (!json_is_object(j)) {
			weft__trace_diag(ctx->trace, WEFT_SEV_ERROR, WEFT_EFORMAT, rel, 0,
					 "expected a JSON object");
			json_decref(j);
			j = NULL;
		}
	}
	free(text);
	return j;
}

/*
 * Merges src into dst by the v3 rules: objects key by key, arrays appended
 * (elements already present are not repeated), other values must agree.
 * A disagreement is reported with the key path; the first value is kept.
 */
static void merge_json(open_ctx *ctx, json_t *dst, json_t *src, const char *path,
		       const char *file, const char *scope)
{
	const char *key;
	json_t *value;
	json_object_foreach(src, key, value) {
		json_t *have = json_object_get(dst, key);
		char sub[512];
		snprintf(sub, sizeof sub, "%s%s%s", path, path[0] ? "." : "", key);
		if (have == NULL) {
			json_object_set_new(dst, key, json_deep_copy(value));
		} else if (json_is_object(have) && json_is_object(value)) {
			merge_json(ctx, have, value, sub, file, scope);
		} else if (json_is_array(have) && json_is_array(value)) {
			size_t i;
			json_t *el;
			json_array_foreach(value, i, el) {
				size_t k, n = json_array_size(have);
				for (k = 0; k < n && !json_equal(json_array_get(have, k), el); k++)
					;
				if (k == n)
					json_array_append_new(have, json_deep_copy(el));
			}
		} else if (!json_equal(have, value)) {
			char *a = json_dumps(have, JSON_COMPACT | JSON_ENCODE_ANY);
			char *b = json_dumps(value, JSON_COMPACT | JSON_ENCODE_ANY);
			weft__trace_diag(ctx->trace, WEFT_SEV_WARNING, WEFT_EFORMAT, file,
					 WEFT_NO_OFFSET, "metadata conflict for %s: %s here, "
					 "%s in another stream of the same %s (keeping %s)",
					 sub, b ? b : "?", a ? a : "?", scope, a ? a : "?");
			free(a);
			free(b);
		}
	}
}

/* The merged metadata object of node `id`, created on first use. */
static json_t *node_meta(open_ctx *ctx, uint32_t id)
{
	if (id >= ctx->meta_cap) {
		size_t cap = ctx->meta_cap ? ctx->meta_cap : 64;
		while (cap <= id)
			cap *= 2;
		json_t **p = realloc(ctx->meta, cap * sizeof *p);
		if (p == NULL)
			return NULL;
		memset(p + ctx->meta_cap, 0, (cap - ctx->meta_cap) * sizeof *p);
		ctx->meta = p;
		ctx->meta_cap = cap;
	}
	if (ctx->meta[id] == NULL)
		ctx->meta[id] = json_object();
	return ctx->meta[id];
}

/* Merges {"ovni": {keys...}} taken from `ovni` into node `id`'s metadata. */
static void merge_keys(open_ctx *ctx, uint32_t id, json_t *ovni,
		       const char *const *keys, const char *scope, const char *file)
{
	if (id == WEFT_NO_PARENT || !json_is_object(ovni))
		return;
	json_t *picked = json_object();
	for (size_t i = 0; keys[i]; i++) {
		json_t *v = json_object_get(ovni, keys[i]);
		if (v != NULL)
			json_object_set(picked, keys[i], v);
	}
	if (json_object_size(picked) > 0) {
		json_t *wrap = json_pack("{s:o}", "ovni", picked);
		json_t *dst = node_meta(ctx, id);
		if (dst != NULL && wrap != NULL)
			merge_json(ctx, dst, wrap, "", file, scope);
		json_decref(wrap);
	} else {
		json_decref(picked);
	}
}

/* ---- Hierarchy --------------------------------------------------------------- */

/* Node kind from the directory naming scheme of libovni. */
static const char *kind_of(const char *name, int is_stream)
{
	if (strncmp(name, "loom.", 5) == 0)
		return "loom";
	if (strncmp(name, "proc.", 5) == 0)
		return "process";
	if (strncmp(name, "thread.", 7) == 0)
		return "thread";
	return is_stream ? "stream" : "directory";
}

/* The pid/tid in "proc.123" / "thread.123[.obs]", or -1. */
static int64_t number_of(const char *name)
{
	const char *dot = strchr(name, '.');
	if (dot == NULL || dot[1] < '0' || dot[1] > '9')
		return -1;
	return strtoll(dot + 1, NULL, 10);
}

/* Finds the child `name` of `parent`, searching recent nodes first. */
static int find_child(weft_trace *t, uint32_t parent, const char *name)
{
	for (size_t i = t->node_count; i-- > 0;)
		if (t->nodes[i].parent == parent && strcmp(t->nodes[i].name, name) == 0)
			return (int)i;
	return -1;
}

/*
 * Creates (or finds) the chain of nodes for a stream path and returns the
 * id of the stream's own node.
 */
static int nodes_for_path(weft_trace *t, const char *rel_path, uint32_t *leaf)
{
	char *copy = strdup(rel_path);
	if (copy == NULL)
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	uint32_t parent = WEFT_NO_PARENT;
	char *save = NULL;
	int rc = 0;
	for (char *part = strtok_r(copy, "/", &save); part; part = strtok_r(NULL, "/", &save)) {
		int is_last = save == NULL || *save == '\0';
		int found = is_last ? -1 : find_child(t, parent, part);
		if (found >= 0) {
			parent = (uint32_t)found;
			continue;
		}
		rc = weft__trace_add_node(t, parent, kind_of(part, is_last), part,
					  number_of(part), NULL, &parent);
		if (rc < 0)
			break;
	}
	free(copy);
	*leaf = parent;
	return rc;
}

/* Nearest ancestor of `id` (itself excluded) of the given kind. */
static uint32_t ancestor(const weft_trace *t, uint32_t id, const char *kind)
{
	for (uint32_t p = t->nodes[id].parent; p != WEFT_NO_PARENT; p = t->nodes[p].parent)
		if (strcmp(t->nodes[p].kind, kind) == 0)
			return p;
	return WEFT_NO_PARENT;
}

/* ---- Streams --------------------------------------------------------------------- */

static const char *const process_keys[] = {"pid", "loom", "app_id", "rank", "nranks", "mark", NULL};
static const char *const loom_keys[] = {"loom_cpus", NULL};

/* Layout 3: stream.json next to stream.obs. 0, or < 0 to stop the open. */
static int stream_meta_v3(open_ctx *ctx, const found_stream *f, weft_stream_info *s,
			  uint32_t node)
{
	int rc = 0;
	char *rel = stream_json_of(f);
	json_t *j = rel ? load_json(ctx, rel, &rc) : NULL;
	s->finished = 0;
	if (j == NULL) {
		if (rc == 0)
			weft__trace_diag(ctx->trace, WEFT_SEV_WARNING, WEFT_ENOTFOUND, rel,
					 WEFT_NO_OFFSET, "missing or unreadable stream.json: "
					 "the stream has no metadata");
		free(rel);
		return rc;
	}
	json_t *version = json_object_get(j, "version");
	if (!json_is_integer(version) || json_integer_value(version) != 3)
		weft__trace_diag(ctx->trace, WEFT_SEV_WARNING, WEFT_EFORMAT, rel,
				 WEFT_NO_OFFSET, "expected \"version\": 3");
	json_t *ovni = json_object_get(j, "ovni");
	json_t *fin = json_object_get(ovni, "finished");
	s->finished = json_is_integer(fin) && json_integer_value(fin) == 1;
	json_t *tid = json_object_get(ovni, "tid");
	if (json_is_integer(tid))
		ctx->trace->nodes[node].number = json_integer_value(tid);
	merge_json(ctx, node_meta(ctx, node), j, "", rel, "thread");
	merge_keys(ctx, ancestor(ctx->trace, node, "process"), ovni, process_keys,
		   "process", rel);
	merge_keys(ctx, ancestor(ctx->trace, node, "loom"), ovni, loom_keys, "loom", rel);
	json_decref(j);
	free(rel);
	return 0;
}

/*
 * Layouts 1 and 2: metadata.json per process directory (read once, when
 * the process node gets its first stream), and in layout 2 a
 * thread.<tid>.json next to each stream.
 */
static int stream_meta_v12(open_ctx *ctx, const found_stream *f, weft_stream_info *s,
			   uint32_t node)
{
	weft_trace *t = ctx->trace;
	int layout = 1;
	s->finished = -1;
	size_t n = strlen(f->rel_file);
	char *thread_json = malloc(n + 6);
	if (thread_json == NULL)
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	memcpy(thread_json, f->rel_file, n + 1);
	if (ends_with(thread_json, ".obs"))
		thread_json[n - 4] = '\0';
	strcat(thread_json, ".json");
	int rc = 0;
	json_t *tj = load_json(ctx, thread_json, &rc);
	if (rc < 0) {
		free(thread_json);
		return rc;
	}
	if (tj != NULL) {
		layout = 2;
		json_t *fin = json_object_get(json_object_get(tj, "ovni"), "finished");
		s->finished = json_is_integer(fin) && json_integer_value(fin) == 1;
		merge_json(ctx, node_meta(ctx, node), tj, "", thread_json, "thread");
		merge_keys(ctx, ancestor(t, node, "process"), json_object_get(tj, "ovni"),
			   process_keys, "process", thread_json);
		json_decref(tj);
	}
	free(thread_json);
	uint32_t proc = t->nodes[node].parent;
	if (proc != WEFT_NO_PARENT && (proc >= ctx->meta_cap || ctx->meta[proc] == NULL ||
				       json_object_get(ctx->meta[proc], "version") == NULL)) {
		char *meta_rel = weft__path_join(t->nodes[proc].path, "metadata.json");
		json_t *m = meta_rel ? load_json(ctx, meta_rel, &rc) : NULL;
		if (m != NULL) {
			json_t *version = json_object_get(m, "version");
			if (json_is_integer(version) && json_integer_value(version) == 2)
				layout = 2;
			json_t *pm = node_meta(ctx, proc);
			json_object_set(pm, "version", version ? version : json_null());
			merge_keys(ctx, proc, m, process_keys, "process", meta_rel);
			json_t *cpus = json_object_get(m, "cpus");
			json_t *as_v3 = json_pack("{s:O}", "loom_cpus", cpus ? cpus : json_null());
			if (cpus != NULL)
				merge_keys(ctx, ancestor(t, node, "loom"), as_v3, loom_keys,
					   "loom", meta_rel);
			json_decref(as_v3);
			json_decref(m);
		}
		free(meta_rel);
	}
	return rc < 0 ? rc : layout;
}

/*
 * Reads the stream header now, so that the stream list tells the byte
 * order. A bad header is reported once, by the cursor that reads the
 * stream (reporting it here too would say it twice). 0, or < 0 to stop
 * the open.
 */
static int read_byte_order(open_ctx *ctx, const found_stream *f, weft_stream_info *s)
{
	char *abs = weft__path_join(ctx->root, f->rel_file);
	char *head = NULL;
	size_t len = 0;
	uint64_t size;
	if (abs == NULL)
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	int rc = weft__metafs_read(ctx->trace->metafs, abs, OVNI_STREAM_HEADER_SIZE, 1, &head,
				   &len, &size);
	int big_endian;
	if (rc == 0 && weft__ovni_header_order((const unsigned char *)head, len,
					       &big_endian) == 0)
		s->big_endian = big_endian;
	free(head);
	free(abs);
	return rc < 0 ? rc : 0;
}

/* Turns a found stream into nodes and a weft stream with its metadata. */
static int add_stream(open_ctx *ctx, const found_stream *f)
{
	weft_trace *t = ctx->trace;
	uint32_t node = WEFT_NO_PARENT, index;
	int rc = nodes_for_path(t, f->rel_path, &node);
	if (rc < 0)
		return rc;
	if (node == WEFT_NO_PARENT)
		return weft__error(WEFT_EFORMAT, f->rel_path, WEFT_NO_OFFSET,
				   "empty stream path");
	char *abs = weft__path_join(ctx->root, f->rel_file);
	int kind;
	uint64_t size = 0;
	rc = abs ? weft__metafs_stat(t->metafs, abs, &kind, &size)
		 : weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	free(abs);
	if (rc < 0)
		return rc;
	rc = weft__trace_add_stream(t, node, f->rel_file, rc == 0 ? size : 0, &index);
	if (rc < 0)
		return rc;
	weft_stream_info *s = &t->streams[index];
	rc = read_byte_order(ctx, f, s);
	if (rc < 0)
		return rc;
	if (f->v3) {
		rc = stream_meta_v3(ctx, f, s, node);
		if (rc < 0)
			return rc;
		ctx->layouts_seen[3] = 1;
	} else {
		int layout = stream_meta_v12(ctx, f, s, node);
		if (layout < 0)
			return layout;
		ctx->layouts_seen[layout] = 1;
	}
	if (s->finished == 0)
		weft__trace_diag(t, WEFT_SEV_WARNING, WEFT_ETRUNCATED, s->file, WEFT_NO_OFFSET,
				 "the stream was not closed (no \"finished\": 1 in its "
				 "metadata): it is read up to its last complete event");
	return 0;
}

/* ---- Clock offsets ------------------------------------------------------------ */

/* The host of a loom: its name up to the first dot ("xeon01.x" -> "xeon01"). */
static void loom_host(open_ctx *ctx, uint32_t loom, char *host, size_t cap)
{
	const char *name = ctx->trace->nodes[loom].name;
	if (strncmp(name, "loom.", 5) == 0)
		name += 5;
	size_t len = strcspn(name, ".");
	if (len >= cap)
		len = cap - 1;
	memcpy(host, name, len);
	host[len] = '\0';
}

/* The next line of `text` (at most cap - 1 bytes of it) into `line`; 0 at the end. */
static int next_line(const char **text, const char *end, char *line, size_t cap)
{
	if (*text >= end)
		return 0;
	const char *nl = memchr(*text, '\n', (size_t)(end - *text));
	size_t n = (size_t)((nl ? nl : end) - *text);
	size_t keep = n < cap - 1 ? n : cap - 1;
	memcpy(line, *text, keep);
	line[keep] = '\0';
	*text += n + (nl != NULL);
	return 1;
}

/*
 * Reads an ovnisync table ("rank hostname offset_median mean std" rows
 * after a header line) and adds each loom's offset to its streams.
 */
static int apply_clock_offsets(open_ctx *ctx, const char *path, int required)
{
	char *text = NULL;
	size_t len = 0;
	uint64_t size = 0;
	int err = weft__metafs_read(ctx->trace->metafs, path, OVNI_MAX_CLOCK_TABLE_BYTES, 0,
				    &text, &len, &size);
	if (err < 0)
		return err;
	if (err > 0) {
		errno = err;
		return required ? weft__error_errno(path, "cannot open clock offsets") : 0;
	}
	if (text == NULL) {
		if (required)
			return weft__error(WEFT_EFORMAT, path, WEFT_NO_OFFSET, "a clock offset "
					   "table of %llu bytes, more than %u: not ovnisync's",
					   (unsigned long long)size, OVNI_MAX_CLOCK_TABLE_BYTES);
		weft__trace_diag(ctx->trace, WEFT_SEV_WARNING, WEFT_EFORMAT, path, WEFT_NO_OFFSET,
				 "a clock offset table of %llu bytes, more than %u: not "
				 "ovnisync's, ignored", (unsigned long long)size,
				 OVNI_MAX_CLOCK_TABLE_BYTES);
		return 0;
	}
	typedef struct { char host[128]; long long offset; } host_offset;
	host_offset *table = malloc(OVNI_MAX_CLOCK_HOSTS * sizeof *table);
	char line[1024];
	size_t n = 0;
	if (table == NULL) {
		free(text);
		return weft__error(WEFT_ENOMEM, path, WEFT_NO_OFFSET, "out of memory");
	}
	unsigned lineno = 0;
	const char *at = text;
	while (next_line(&at, text + len, line, sizeof line)) {
		lineno++;
		long long rank, median;
		char host[128];
		if (sscanf(line, "%lld %127s %lld", &rank, host, &median) == 3) {
			if (n == OVNI_MAX_CLOCK_HOSTS) {
				weft__trace_diag(ctx->trace, WEFT_SEV_WARNING, WEFT_EUNSUPPORTED,
						 path, WEFT_NO_OFFSET, "line %u: more than %d hosts: "
						 "the rest are ignored", lineno, OVNI_MAX_CLOCK_HOSTS);
				break;
			}
			memcpy(table[n].host, host, sizeof host);
			table[n++].offset = median;
		} else if (lineno > 1 && strspn(line, " \t\r\n") != strlen(line)) {
			weft__trace_diag(ctx->trace, WEFT_SEV_WARNING, WEFT_EFORMAT, path,
					 WEFT_NO_OFFSET, "line %u: expected \"rank hostname "
					 "offset_median ...\"", lineno);
		}
	}
	free(text);
	weft_trace *t = ctx->trace;
	for (size_t i = 0; i < t->stream_count; i++) {
		uint32_t loom = ancestor(t, t->streams[i].node, "loom");
		if (loom == WEFT_NO_PARENT)
			continue;
		char host[128];
		loom_host(ctx, loom, host, sizeof host);
		size_t k;
		for (k = 0; k < n && strcmp(table[k].host, host) != 0; k++)
			;
		if (k < n)
			t->streams[i].clock_offset = table[k].offset;
		else
			weft__trace_diag(t, WEFT_SEV_WARNING, WEFT_ENOTFOUND, path, WEFT_NO_OFFSET,
					 "no clock offset for host %s (stream %s): offset 0",
					 host, t->streams[i].path);
	}
	free(table);
	return 0;
}

/* ---- Open / close ------------------------------------------------------------ */

/* An integer >= 0 from a JSON number (ovniemu casts them to int), or -1. */
static int64_t json_index(const json_t *v)
{
	if (!json_is_number(v))
		return -1;
	double d = json_number_value(v);
	return d >= 0 && d < 2147483648.0 ? (int64_t)d : -1;
}

/*
 * The merged loom_cpus of a loom, by ovniemu's rules: every entry an
 * object with index and phyid >= 0, one index per phyid, and indices
 * exactly 0..N-1 for the N phyids. Writes what is wrong into why
 * (0 when nothing is).
 */
static int loom_cpus_problem(const json_t *cpus, char *why, size_t cap)
{
	size_t n = json_array_size(cpus);
	size_t phyids = 0;
	for (size_t i = 0; i < n; i++) {
		const json_t *c = json_array_get(cpus, i);
		int64_t index = json_index(json_object_get(c, "index"));
		int64_t phyid = json_index(json_object_get(c, "phyid"));
		int first = 1;
		if (index < 0 || phyid < 0)
			return snprintf(why, cap, "a CPU without a valid index and phyid "
					"(entry %zu)", i), 1;
		for (size_t k = 0; k < i; k++) {
			const json_t *o = json_array_get(cpus, k);
			int64_t oi = json_index(json_object_get(o, "index"));
			int64_t op = json_index(json_object_get(o, "phyid"));
			if (op == phyid && oi != index)
				return snprintf(why, cap, "CPU phyid %lld has index %lld and "
						"index %lld (ovniemu: \"mismatch index in "
						"existing cpu\")", (long long)phyid, (long long)oi,
						(long long)index), 1;
			if (oi == index && op != phyid)
				return snprintf(why, cap, "CPU index %lld is declared for phyid "
						"%lld and phyid %lld (ovniemu: \"cpu with index "
						"%lld already taken\")", (long long)index, (long long)op,
						(long long)phyid, (long long)index), 1;
			first &= op != phyid;
		}
		phyids += first;
	}
	for (size_t i = 0; i < n; i++) {
		int64_t index = json_index(json_object_get(json_array_get(cpus, i), "index"));
		if ((uint64_t)index >= phyids)
			return snprintf(why, cap, "CPU index %lld out of bounds: the loom has "
					"%zu CPUs, indices 0..%zu (ovniemu: \"cpu index out of "
					"bounds\")", (long long)index, phyids, phyids - 1), 1;
	}
	return 0;
}

/* A loom's CPUs: missing (mandatory per loom) or not valid for ovniemu. */
static void check_loom_cpus(weft_trace *t, uint32_t node, const json_t *m)
{
	const json_t *cpus = json_object_get(json_object_get(m, "ovni"), "loom_cpus");
	char why[256];
	if (cpus == NULL)
		weft__trace_diag(t, WEFT_SEV_WARNING, WEFT_ENOTFOUND, t->nodes[node].path,
				 WEFT_NO_OFFSET, "no stream of this loom lists its CPUs "
				 "(ovni.loom_cpus, mandatory per loom)");
	else if (!json_is_array(cpus) || json_array_size(cpus) == 0)
		weft__trace_diag(t, WEFT_SEV_WARNING, WEFT_EFORMAT, t->nodes[node].path,
				 WEFT_NO_OFFSET, "ovni.loom_cpus is not a non-empty array");
	else if (loom_cpus_problem(cpus, why, sizeof why))
		weft__trace_diag(t, WEFT_SEV_WARNING, WEFT_EFORMAT, t->nodes[node].path,
				 WEFT_NO_OFFSET, "the CPUs of this loom (ovni.loom_cpus of its "
				 "streams) are not valid: %s; ovniemu refuses the trace", why);
}

/* Stores the merged metadata in the nodes and checks per-loom keys. */
static int finish_metadata(open_ctx *ctx)
{
	weft_trace *t = ctx->trace;
	for (size_t i = 0; i < t->node_count; i++) {
		json_t *m = i < ctx->meta_cap ? ctx->meta[i] : NULL;
		if (strcmp(t->nodes[i].kind, "loom") == 0)
			check_loom_cpus(t, (uint32_t)i, m);
		if (m == NULL)
			continue;
		char *text = json_dumps(m, JSON_COMPACT);
		if (text == NULL)
			return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
		int rc = weft__trace_set_node_metadata(t, (uint32_t)i, text);
		free(text);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* Reading bounds: per-stream window and unordered look-back (0 or WEFT_EINVAL). */
static int set_bounds(ovni_data *d, const weft_open_options *o, size_t streams)
{
	uint64_t lookback = 0, max_events = 0;
	int rc = weft__option_u64(o, "ovni.unordered_lookback_bytes", &lookback);
	if (rc == 0)
		rc = weft__option_u64(o, "ovni.unordered_max_events", &max_events);
	if (rc < 0)
		return rc;
	uint64_t budget = o->read_budget_bytes ? o->read_budget_bytes : OVNI_DEFAULT_READ_BUDGET;
	uint64_t w = budget / (streams ? streams : 1);
	if (w < OVNI_MIN_WINDOW)
		w = OVNI_MIN_WINDOW;
	if (w > OVNI_MAX_WINDOW)
		w = OVNI_MAX_WINDOW;
	d->lookback = lookback ? lookback : w / 4;
	if (w < 4 * d->lookback)
		w = 4 * d->lookback;
	d->window = w;
	d->max_region_events = max_events ? max_events : OVNI_DEFAULT_MAX_REGION_EVENTS;
	if (d->max_region_events > UINT32_MAX)
		d->max_region_events = UINT32_MAX; /* the index keeps 32-bit places */
	return 0;
}

/* Splits `path` into the root directory and, for a single .obs file, it. */
static int find_streams(open_ctx *ctx, const char *path, ovni_data *d)
{
	int kind;
	uint64_t size;
	int err = weft__metafs_stat(ctx->trace->metafs, path, &kind, &size);
	if (err > 0)
		errno = err;
	if (err != 0)
		return err < 0 ? err : weft__error_errno(path, "cannot open the trace");
	if (kind == WEFT__META_FILE) {
		const char *slash = strrchr(path, '/');
		d->root = slash ? strndup(path, (size_t)(slash - path)) : strdup(".");
		const char *name = slash ? slash + 1 : path;
		if (d->root == NULL)
			return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
		ctx->root = d->root;
		return found_add(&ctx->found, name, name, 0);
	}
	d->root = strdup(path);
	if (d->root == NULL)
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	ctx->root = d->root;
	int rc = walk(ctx->trace->metafs, d->root, "", 0, &ctx->found);
	if (rc == 0 && ctx->found.count == 0)
		rc = weft__error(WEFT_ENOTFOUND, path, WEFT_NO_OFFSET,
				 "no ovni stream found (expected stream.obs or *.obs "
				 "files below loom.*/proc.*/)");
	return rc;
}

static int ovni_open(weft_trace *t, const char *path, const weft_open_options *o)
{
	ovni_data *d = calloc(1, sizeof *d);
	if (d == NULL)
		return weft__error(WEFT_ENOMEM, path, WEFT_NO_OFFSET, "out of memory");
	t->backend_data = d;
	open_ctx ctx = { .trace = t };
	int rc = find_streams(&ctx, path, d);
	for (size_t i = 0; rc == 0 && i < ctx.found.count; i++)
		rc = add_stream(&ctx, &ctx.found.items[i]);
	if (rc == 0)
		rc = finish_metadata(&ctx);
	const char *offsets = NULL;
	if (rc == 0)
		rc = weft__option_text(o, "ovni.clock_offsets", &offsets);
	if (rc == 0) {
		char *table = offsets ? NULL : weft__path_join(d->root, "clock-offsets.txt");
		rc = apply_clock_offsets(&ctx, offsets ? offsets : table, offsets != NULL);
		free(table);
	}
	if (rc == 0 && (d->streams = calloc(t->stream_count, sizeof *d->streams)) == NULL)
		rc = weft__error(WEFT_ENOMEM, path, WEFT_NO_OFFSET, "out of memory");
	for (size_t i = 0; rc == 0 && i < t->stream_count; i++)
		if ((d->streams[i].abs_file = weft__path_join(d->root, t->streams[i].file)) == NULL)
			rc = weft__error(WEFT_ENOMEM, path, WEFT_NO_OFFSET, "out of memory");
	int layouts = ctx.layouts_seen[1] + ctx.layouts_seen[2] + ctx.layouts_seen[3];
	t->layout_version = ctx.layouts_seen[3] ? 3 : ctx.layouts_seen[2] ? 2 : 1;
	if (rc == 0 && layouts > 1)
		weft__trace_diag(t, WEFT_SEV_WARNING, WEFT_EFORMAT, NULL, WEFT_NO_OFFSET,
				 "streams of several layout versions in one trace");
	int bounds = set_bounds(d, o, t->stream_count);
	if (rc == 0)
		rc = bounds;
	if (rc == 0)
		rc = weft__ovni_marks_load(t, d);
	for (size_t i = 0; i < ctx.meta_cap; i++)
		json_decref(ctx.meta[i]);
	free(ctx.meta);
	found_free(&ctx.found);
	return rc;
}

/* The data file of stream `stream` (weft_backend.stream_data_path). */
static const char *ovni_stream_data_path(const weft_trace *t, uint32_t stream)
{
	const ovni_data *d = t->backend_data;
	return d->streams[stream].abs_file;
}

static void ovni_close(weft_trace *t)
{
	ovni_data *d = t->backend_data;
	if (d == NULL)
		return;
	if (d->streams != NULL)
		for (size_t i = 0; i < t->stream_count; i++)
			free(d->streams[i].abs_file);
	free(d->streams);
	free(d->root);
	weft__ovni_marks_free(d);
	free(d);
	t->backend_data = NULL;
}

/* The ovni options of weft_open_options_set(). */
static const weft_format_option ovni_options[] = {
	{ "ovni.clock_offsets", "path", "clock offset table",
	  "the clock offsets of ovnisync (rank hostname offset_median ...); default: "
	  "clock-offsets.txt in the trace directory when it exists", 0 },
	{ "ovni.unordered_lookback_bytes", "bytes", "look-back",
	  "how far back in a stream, in bytes, an unordered region (OU[ .. OU]) may "
	  "move its events (default: a quarter of the stream's read window)", 0 },
	{ "ovni.unordered_max_events", "count", "event count",
	  "the most events an unordered region may hold", 0 },
};

const weft_backend weft__ovni_backend = {
	.format = WEFT_FORMAT_OVNI,
	.name = "ovni",
	.expected = "an ovni trace directory or .obs stream file",
	.path_kinds = WEFT__PATH_DIR | WEFT__PATH_FILE,
	.probe = ovni_probe,
	.open = ovni_open,
	.close = ovni_close,
	.stream_open = weft__ovni_stream_open,
	.stream_next = weft__ovni_stream_next,
	.stream_next_batch = weft__ovni_stream_next_batch,
	.stream_close = weft__ovni_stream_close,
	.event_fields = weft__ovni_event_fields,
	.event_classify = weft__ovni_event_classify,
	.event_schemas = weft__ovni_event_schemas,
	.counts_bytes = 1,
	.options = ovni_options,
	.option_count = sizeof ovni_options / sizeof ovni_options[0],
	.check = &weft__ovni_check_hooks,
	.sort = weft_ovni_sort,
	.stream_data_path = ovni_stream_data_path,
	.readers_share_data = 1,
};
