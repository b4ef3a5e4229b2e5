/*
 * cli/convert_pallas.c - `weft convert TRACE --to pallas -o DIR`: any
 * trace weft reads becomes a Pallas 0.20 trace written by libweft's
 * Pallas writer (weft/pallas.h). The mapping (docs/convert-pallas.md):
 *
 *   - the parent node of each stream (an ovni process, a Heph stream, a
 *     ROSS KP...) is a location group with an archive, its ancestors are
 *     location groups too (the hierarchy is kept through their parents);
 *     each stream with a selected event is a location (a thread) of its
 *     parent's group, named after its node;
 *   - ENTER / LEAVE events (weft_event_classify(): ovni enter/leave pairs,
 *     thread running state, stack marks, Pallas Enter/Leave) become
 *     Enter / Leave of a region named after the span (the class name),
 *     as long as the LEAVE closes the innermost open span; any other
 *     LEAVE is a Generic event (Pallas's Leave always closes the
 *     innermost block);
 *   - INTERVAL events (Heph) become an Enter at their start and a Leave
 *     at their end, written when the next event of the thread starts
 *     after it (a stack of pending Leaves per thread); an interval that
 *     overlaps the open one without nesting is a Generic event with its
 *     end as the attribute `weft.end`;
 *   - every other event is a Generic event named after its code;
 *   - the original code is the attribute `weft.code` of an Enter or Leave
 *     (unless the Pallas record says it), decoded fields are typed
 *     attributes, and the stored bytes are `weft.payload_size` and u64
 *     chunks `weft.payload.<i>`.
 *
 * Memory: streams are converted one at a time (one thread writer open),
 * each through its own cursor; formats whose streams share their files
 * (ROSS) are read in passes over the files, a batch of streams per pass.
 * The span stack of a thread is bounded (SPAN_DEPTH_MAX), interned
 * strings used as attribute values too (STRING_VALUE_BUDGET). The Pallas
 * writer itself keeps a thread's attribute lists until the thread is
 * closed (docs/convert-pallas.md, Limits).
 *
 * The output is written to a temporary directory next to DIR, renamed
 * over DIR at the end (an existing DIR is replaced only with --force, and
 * only when it is a Pallas trace or empty).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/convert.h"
#include "cli/outfile.h"
#include "weft/pallas.h"

#define MAIN_NAME "main"              /* DIR/main.pallas */
#define SPAN_DEPTH_MAX 1000           /* deeper spans become Generic events */
#define STREAM_BATCH 32               /* thread writers open at once (shared files) */
#define FIELDS_MAX 128                /* decoded fields of one event */
#define STRING_VALUE_BUDGET (16u << 20) /* bytes of interned string values */
#define STRING_VALUE_MAX 4096         /* longer string values stay in the payload */
#define PAYLOAD_CHUNKS_MAX WEFT_PALLAS_ATTRS_MAX
#define CODE_CACHE_SIZE 64
#define CODE_CACHE_LEN 48
#define FIELD_CACHE_SIZE 64
#define NONE UINT32_MAX
#define REMOVE_DEPTH_MAX 32           /* directory levels removed at most */

/* ---- Types --------------------------------------------------------------------- */

/* An interned string: its global string ref, and whether a region uses it. */
typedef struct str_entry {
	char *text;      /* NUL-terminated copy, NULL for a free slot */
	uint32_t len;
	uint32_t ref;
	uint64_t hash;
	int region;      /* region `ref` (named by this string) is defined */
} str_entry;

/* Open addressing table of strings (capacity a power of two). */
typedef struct str_table {
	str_entry *slots;
	size_t cap, count;
	uint64_t value_bytes; /* bytes interned as attribute values */
} str_table;

/* Open addressing table from a u64 key to a u32 value (attribute refs). */
typedef struct u64_map {
	uint64_t *keys;   /* key + 1; 0 = free */
	uint32_t *values;
	size_t cap, count;
} u64_map;

enum span_kind { SPAN_ENTER = 0, SPAN_INTERVAL = 1 };

/* An open Pallas block of a thread, as the writer sees it. */
typedef struct span {
	const char *channel; /* ENTER: the classification's channel (NULL: own) */
	uint64_t pair_key;   /* ENTER: closed by a LEAVE with the same key */
	uint64_t end;        /* INTERVAL: the time of its pending Leave */
	uint32_t region;
	int32_t depth;       /* INTERVAL: call-tree depth of the event, -1 */
	uint8_t kind;        /* enum span_kind */
	uint8_t orphan;      /* ENTER whose LEAVE was written as a Generic */
} span;

/* A stream being written: its location and its thread writer. */
typedef struct stream_out {
	uint32_t stream;   /* source stream index */
	uint32_t location; /* Pallas location id */
	uint32_t group;    /* Pallas location group id */
	weft_pallas_thread *thread;
	span *stack;
	uint32_t depth, cap;
} stream_out;

/* What the conversion had to adapt, reported on stderr at the end. */
typedef struct conv_stats {
	uint64_t leave_fallbacks;    /* LEAVE not closing the innermost block */
	uint64_t interval_fallbacks; /* intervals overlapping without nesting */
	uint64_t depth_fallbacks;    /* spans deeper than SPAN_DEPTH_MAX */
	uint64_t strings_left_out;   /* string values over the budget */
	uint64_t payloads_cut;       /* payloads longer than the attribute list */
	uint64_t fields_left_out;    /* fields that did not fit the list */
} conv_stats;

/* The attribute of a field name (by its address, stable for most formats). */
typedef struct field_attr {
	const char *name; /* NULL: empty slot */
	const char *text; /* the interned name: checked, as an address may be reused */
	uint32_t len;
	int type;
	uint32_t ref;
} field_attr;

/* One code pattern verdict (per-stream reading applies the filter itself). */
typedef struct code_verdict {
	char code[CODE_CACHE_LEN];
	uint8_t len;     /* 0: empty slot */
	uint8_t selected;
} code_verdict;

/* The whole conversion. */
typedef struct conv {
	const cli_convert_job *job;
	weft_trace *trace;
	int same_format;              /* the source is a Pallas trace */
	char *tmp_dir;                /* the trace being written */
	weft_pallas_global *global;
	weft_pallas_defs *defs;       /* global definitions */
	str_table strings;
	u64_map attributes;           /* (name ref << 8 | type) -> attribute ref */
	uint32_t next_attribute;
	uint32_t chunk_attr[PAYLOAD_CHUNKS_MAX]; /* weft.payload.<i>, NONE until used */
	uint32_t code_attr, end_attr, size_attr; /* weft.code, weft.end, weft.payload_size */
	field_attr field_cache[FIELD_CACHE_SIZE]; /* by field name address */
	uint32_t *node_group;         /* node -> location group, NONE */
	uint32_t root_group;          /* group of streams without a parent node */
	weft_pallas_archive **archives; /* per location group */
	uint32_t group_count, group_cap;
	uint32_t *selected;           /* selected stream indices (location = position) */
	uint32_t selected_count;
	code_verdict *code_cache;
	weft_field fields[FIELDS_MAX];
	conv_stats stats;
	int lost;                     /* some data could not be read */
} conv;

static volatile sig_atomic_t interrupted;

/* ---- Small helpers --------------------------------------------------------------------- */

/* FNV-1a of a byte string, for the tables. */
static uint64_t hash_bytes(const void *p, size_t n)
{
	const unsigned char *b = p;
	uint64_t h = 1469598103934665603u;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 1099511628211u;
	return h;
}

/* Prints the library's last message for a failed writer call; returns -1. */
static int writer_error(const char *what, int rc)
{
	const char *msg = weft_last_error();
	fprintf(stderr, "weft convert: %s: %s\n", what,
		msg != NULL && msg[0] != '\0' ? msg : weft_strerror(rc));
	return -1;
}

/* Prints "out of memory"; returns -1. */
static int out_of_memory(void)
{
	fprintf(stderr, "weft convert: out of memory\n");
	return -1;
}

/* malloc'd "<a><b>" or NULL. */
static char *concat(const char *a, const char *b)
{
	size_t n = strlen(a), m = strlen(b);
	char *s = malloc(n + m + 1);
	if (s != NULL) {
		memcpy(s, a, n);
		memcpy(s + n, b, m + 1);
	}
	return s;
}

/* ---- Interrupts -------------------------------------------------------------------------- */

/* Remembers the signal; the event loops stop and the temporary directory goes. */
static void on_signal(int sig)
{
	interrupted = sig;
}

static const int watched_signals[] = { SIGINT, SIGTERM, SIGHUP };
#define WATCHED_COUNT (sizeof watched_signals / sizeof watched_signals[0])

/*
 * Installs (`old` != NULL: saving the previous handlers) or restores the
 * handlers of the signals that end a command, so that an interrupted
 * conversion removes its temporary directory. Ignored signals stay so.
 */
static void watch_signals(struct sigaction *old, const struct sigaction *restore)
{
	for (size_t i = 0; i < WATCHED_COUNT; i++) {
		if (restore != NULL) {
			sigaction(watched_signals[i], &restore[i], NULL);
			continue;
		}
		struct sigaction sa;
		memset(&sa, 0, sizeof sa);
		sa.sa_handler = on_signal;
		sigemptyset(&sa.sa_mask);
		if (sigaction(watched_signals[i], NULL, &old[i]) == 0 &&
		    old[i].sa_handler != SIG_IGN)
			sigaction(watched_signals[i], &sa, NULL);
	}
}

/* ---- String table ------------------------------------------------------------------------- */

/* Doubles the table (or makes it); 0 or -1. */
static int str_table_grow(str_table *t)
{
	size_t cap = t->cap ? t->cap * 2 : 256;
	str_entry *slots = calloc(cap, sizeof *slots);
	if (slots == NULL)
		return -1;
	for (size_t i = 0; i < t->cap; i++) {
		if (t->slots[i].text == NULL)
			continue;
		size_t j = t->slots[i].hash & (cap - 1);
		while (slots[j].text != NULL)
			j = (j + 1) & (cap - 1);
		slots[j] = t->slots[i];
	}
	free(t->slots);
	t->slots = slots;
	t->cap = cap;
	return 0;
}

/* The slot of `s` (found, or the free slot where it would go). */
static str_entry *str_table_slot(const str_table *t, const char *s, uint32_t len,
				 uint64_t h)
{
	size_t j = h & (t->cap - 1);
	for (;;) {
		str_entry *e = &t->slots[j];
		if (e->text == NULL ||
		    (e->hash == h && e->len == len && memcmp(e->text, s, len) == 0))
			return e;
		j = (j + 1) & (t->cap - 1);
	}
}

static void str_table_free(str_table *t)
{
	for (size_t i = 0; i < t->cap; i++)
		free(t->slots[i].text);
	free(t->slots);
	memset(t, 0, sizeof *t);
}

/*
 * The entry of string `s` (`len` bytes, no NUL inside), registered as a
 * global string of the trace at its first use. NULL after printing why.
 */
static str_entry *intern(conv *c, const char *s, uint32_t len)
{
	str_table *t = &c->strings;
	if ((t->count + 1) * 2 > t->cap && str_table_grow(t) < 0)
		return out_of_memory(), NULL;
	uint64_t h = hash_bytes(s, len);
	str_entry *e = str_table_slot(t, s, len, h);
	if (e->text != NULL)
		return e;
	char *copy = malloc((size_t)len + 1);
	if (copy == NULL)
		return out_of_memory(), NULL;
	memcpy(copy, s, len);
	copy[len] = '\0';
	int rc = weft_pallas_register_string(c->defs, copy, &e->ref);
	if (rc < 0) {
		free(copy);
		return writer_error("cannot add a string", rc), NULL;
	}
	e->text = copy;
	e->len = len;
	e->hash = h;
	t->count++;
	return e;
}

/* The string ref of a NUL-terminated string; 0 or -1. */
static int string_ref(conv *c, const char *s, uint32_t *ref)
{
	str_entry *e = intern(c, s, (uint32_t)strlen(s));
	if (e == NULL)
		return -1;
	*ref = e->ref;
	return 0;
}

/* ---- u64 -> u32 map --------------------------------------------------------------------------- */

/* The slot index of `key` (found, or free). */
static size_t u64_map_slot(const u64_map *m, uint64_t key)
{
	size_t j = hash_bytes(&key, sizeof key) & (m->cap - 1);
	while (m->keys[j] != 0 && m->keys[j] != key + 1)
		j = (j + 1) & (m->cap - 1);
	return j;
}

/* Doubles the map (or makes it); 0 or -1. */
static int u64_map_grow(u64_map *m)
{
	u64_map n = { NULL, NULL, m->cap ? m->cap * 2 : 64, m->count };
	n.keys = calloc(n.cap, sizeof *n.keys);
	n.values = calloc(n.cap, sizeof *n.values);
	if (n.keys == NULL || n.values == NULL) {
		free(n.keys);
		free(n.values);
		return -1;
	}
	for (size_t i = 0; i < m->cap; i++) {
		if (m->keys[i] == 0)
			continue;
		size_t j = u64_map_slot(&n, m->keys[i] - 1);
		n.keys[j] = m->keys[i];
		n.values[j] = m->values[i];
	}
	free(m->keys);
	free(m->values);
	*m = n;
	return 0;
}

/* The value of `key`, or NONE. */
static uint32_t u64_map_get(const u64_map *m, uint64_t key)
{
	if (m->cap == 0)
		return NONE;
	size_t j = u64_map_slot(m, key);
	return m->keys[j] != 0 ? m->values[j] : NONE;
}

/* Sets `key` (absent) to `value`; 0 or -1. */
static int u64_map_put(u64_map *m, uint64_t key, uint32_t value)
{
	if ((m->count + 1) * 2 > m->cap && u64_map_grow(m) < 0)
		return -1;
	size_t j = u64_map_slot(m, key);
	m->keys[j] = key + 1;
	m->values[j] = value;
	m->count++;
	return 0;
}

static void u64_map_free(u64_map *m)
{
	free(m->keys);
	free(m->values);
	memset(m, 0, sizeof *m);
}

/* ---- Definitions ---------------------------------------------------------------------------- */

/*
 * The region named `name` (`len` bytes): one region per distinct name,
 * whose ref is the ref of its name string. 0 or -1.
 */
static int region_ref(conv *c, const char *name, uint32_t len, uint32_t *ref)
{
	str_entry *e = intern(c, name, len);
	if (e == NULL)
		return -1;
	if (!e->region) {
		int rc = weft_pallas_add_region(c->defs, e->ref, e->ref);
		if (rc < 0)
			return writer_error("cannot add a region", rc);
		e->region = 1;
	}
	*ref = e->ref;
	return 0;
}

/*
 * The attribute named `name` (`len` bytes) of Pallas type `type`, defined
 * at its first use (its description is its name). 0 or -1.
 */
static int attribute_ref(conv *c, const char *name, uint32_t len, int type, uint32_t *ref)
{
	str_entry *e = intern(c, name, len);
	if (e == NULL)
		return -1;
	uint64_t key = ((uint64_t)e->ref << 8) | (uint64_t)type;
	uint32_t found = u64_map_get(&c->attributes, key);
	if (found != NONE) {
		*ref = found;
		return 0;
	}
	uint32_t id = c->next_attribute;
	int rc = weft_pallas_add_attribute(c->defs, id, e->ref, e->ref, type);
	if (rc < 0)
		return writer_error("cannot add an attribute", rc);
	if (u64_map_put(&c->attributes, key, id) < 0)
		return out_of_memory();
	c->next_attribute++;
	*ref = id;
	return 0;
}

/* The same for a NUL-terminated name, remembered in *slot (NONE at first). */
static int named_attribute(conv *c, const char *name, int type, uint32_t *slot)
{
	if (*slot != NONE)
		return 0;
	return attribute_ref(c, name, (uint32_t)strlen(name), type, slot);
}

/*
 * attribute_ref() for a field, through a small cache keyed by the address
 * of the field's name (the formats' names mostly stay put; a name read
 * from a file window may move: the text is compared too).
 */
static int field_attribute(conv *c, const weft_field *f, int type, uint32_t *ref)
{
	uintptr_t key = ((uintptr_t)f->name >> 2) ^ (uintptr_t)type;
	field_attr *e = &c->field_cache[key % FIELD_CACHE_SIZE];
	if (e->name == f->name && e->len == f->name_len && e->type == type &&
	    memcmp(e->text, f->name, f->name_len) == 0) {
		*ref = e->ref;
		return 0;
	}
	str_entry *name = intern(c, f->name, f->name_len);
	if (name == NULL || attribute_ref(c, f->name, f->name_len, type, ref) < 0)
		return -1;
	e->text = name->text;
	e->name = f->name;
	e->len = f->name_len;
	e->type = type;
	e->ref = *ref;
	return 0;
}

/* ---- Location groups, archives and locations ------------------------------------------- */

/* Adds a location group (and its archive) after the others; 0 or -1. */
static int add_group(conv *c, uint32_t name, uint32_t parent, uint32_t *id)
{
	if (c->group_count == c->group_cap) {
		uint32_t cap = c->group_cap ? c->group_cap * 2 : 16;
		weft_pallas_archive **a = realloc(c->archives, cap * sizeof *a);
		if (a == NULL)
			return out_of_memory();
		c->archives = a;
		c->group_cap = cap;
	}
	uint32_t g = c->group_count;
	int rc = weft_pallas_add_location_group(c->defs, g, name, parent);
	if (rc == 0)
		rc = weft_pallas_archive_create(c->global, g, &c->archives[g]);
	if (rc < 0)
		return writer_error("cannot add a location group", rc);
	c->group_count++;
	*id = g;
	return 0;
}

/*
 * Sets an archive's metadata: the source node's path, kind and merged
 * metadata (a JSON text), so that nothing of the hierarchy is lost.
 */
static int describe_group(conv *c, uint32_t group, const weft_node *node)
{
	weft_pallas_defs *d = weft_pallas_archive_defs(c->archives[group]);
	int rc = weft_pallas_add_metadata(d, "weft.path", node != NULL ? node->path : "");
	if (rc == 0 && node != NULL)
		rc = weft_pallas_add_metadata(d, "weft.kind", node->kind);
	if (rc == 0 && node != NULL && strcmp(node->metadata_json, "{}") != 0)
		rc = weft_pallas_add_metadata(d, "weft.metadata", node->metadata_json);
	return rc < 0 ? writer_error("cannot add metadata", rc) : 0;
}

/*
 * The location group of node `id`, made at its first use after the
 * groups of its ancestors (so that a parent always has a smaller id).
 */
static int node_group(conv *c, uint32_t id, uint32_t *out)
{
	if (c->node_group[id] != NONE) {
		*out = c->node_group[id];
		return 0;
	}
	const weft_node *node = weft_trace_node(c->trace, id);
	uint32_t parent = WEFT_PALLAS_NO_PARENT, name, g;
	if (node->parent != WEFT_NO_PARENT && node_group(c, node->parent, &parent) < 0)
		return -1;
	if (string_ref(c, node->name, &name) < 0 || add_group(c, name, parent, &g) < 0 ||
	    describe_group(c, g, node) < 0)
		return -1;
	c->node_group[id] = g;
	*out = g;
	return 0;
}

/* The group of streams whose node has no parent, named after the trace. */
static int root_group(conv *c, uint32_t *out)
{
	if (c->root_group != NONE) {
		*out = c->root_group;
		return 0;
	}
	const char *path = weft_trace_path(c->trace);
	const char *slash = strrchr(path, '/');
	const char *base = slash != NULL && slash[1] != '\0' ? slash + 1 : path;
	uint32_t name;
	if (string_ref(c, base, &name) < 0 ||
	    add_group(c, name, WEFT_PALLAS_NO_PARENT, &c->root_group) < 0 ||
	    describe_group(c, c->root_group, NULL) < 0)
		return -1;
	*out = c->root_group;
	return 0;
}

/* The location group of selected stream number `loc`: its parent node's. */
static int stream_group(conv *c, uint32_t loc, uint32_t *group)
{
	const weft_stream_info *s = weft_trace_stream(c->trace, c->selected[loc]);
	const weft_node *node = weft_trace_node(c->trace, s->node);
	return node->parent != WEFT_NO_PARENT ? node_group(c, node->parent, group)
					       : root_group(c, group);
}

/*
 * The location of selected stream number `loc`, named after its node, in
 * its parent's group (made with its ancestors' when new); *group gets it.
 */
static int add_location(conv *c, uint32_t loc, uint32_t *group)
{
	const weft_stream_info *s = weft_trace_stream(c->trace, c->selected[loc]);
	const weft_node *node = weft_trace_node(c->trace, s->node);
	uint32_t name;
	if (stream_group(c, loc, group) < 0 || string_ref(c, node->name, &name) < 0)
		return -1;
	int rc = weft_pallas_add_location(weft_pallas_archive_defs(c->archives[*group]), loc,
					  name, *group);
	return rc < 0 ? writer_error("cannot add a location", rc) : 0;
}

/* The selected streams: those whose path matches the stream glob. */
static int select_streams(conv *c)
{
	size_t n = weft_trace_stream_count(c->trace);
	const char *pattern = c->job->filter.stream_pattern;
	c->selected = malloc((n ? n : 1) * sizeof *c->selected);
	if (c->selected == NULL)
		return out_of_memory();
	for (size_t i = 0; i < n; i++) {
		const weft_stream_info *s = weft_trace_stream(c->trace, i);
		if (pattern == NULL || fnmatch(pattern, s->path, 0) == 0)
			c->selected[c->selected_count++] = (uint32_t)i;
	}
	return 0;
}

/* The source format and trace metadata, in the main file's metadata. */
static int describe_trace(conv *c)
{
	weft_format f = weft_trace_format(c->trace);
	const char *name = weft_format_name(f);
	int rc = weft_pallas_add_metadata(c->defs, "weft.source.format", name ? name : "?");
	if (rc == 0)
		rc = weft_pallas_add_metadata(c->defs, "weft.source.path", weft_trace_path(c->trace));
	const char *meta = weft_trace_metadata_json(c->trace);
	if (rc == 0 && meta != NULL && strcmp(meta, "{}") != 0)
		rc = weft_pallas_add_metadata(c->defs, "weft.source.metadata", meta);
	return rc < 0 ? writer_error("cannot add metadata", rc) : 0;
}

/*
 * What is defined before the events: the trace's metadata and the tables.
 * Locations and their groups come with the first event of each stream
 * (an empty Pallas thread cannot be read back: docs/convert-pallas.md).
 */
static int define_structure(conv *c)
{
	size_t nodes = weft_trace_node_count(c->trace);
	c->node_group = malloc((nodes ? nodes : 1) * sizeof *c->node_group);
	if (c->node_group == NULL)
		return out_of_memory();
	for (size_t i = 0; i < nodes; i++)
		c->node_group[i] = NONE;
	c->root_group = NONE;
	for (size_t i = 0; i < PAYLOAD_CHUNKS_MAX; i++)
		c->chunk_attr[i] = NONE;
	c->code_attr = c->end_attr = c->size_attr = NONE;
	return describe_trace(c);
}

/* ---- Attribute lists --------------------------------------------------------------------- */

/*
 * 1 when one more value of `size` bytes fits the list while leaving room
 * for `keep_values` more values of `keep_bytes` bytes in all (a full list
 * would refuse the record).
 */
static int attrs_fit(const weft_pallas_attrs *a, size_t size, unsigned keep_values,
		     size_t keep_bytes)
{
	return a->count + 1u + keep_values <= WEFT_PALLAS_ATTRS_MAX &&
	       a->size + 6u + size + keep_bytes <= WEFT_PALLAS_ATTRS_BYTES;
}

/* The Pallas type of a scalar field, or -1 (arrays and bytes: the payload keeps them). */
static int field_type(const weft_field *f)
{
	if (f->is_array)
		return -1;
	switch (f->type) {
	case WEFT_TYPE_U8: case WEFT_TYPE_BOOL: return WEFT_PALLAS_TYPE_UINT8;
	case WEFT_TYPE_U16: return WEFT_PALLAS_TYPE_UINT16;
	case WEFT_TYPE_U32: return WEFT_PALLAS_TYPE_UINT32;
	case WEFT_TYPE_U64: return WEFT_PALLAS_TYPE_UINT64;
	case WEFT_TYPE_I8: return WEFT_PALLAS_TYPE_INT8;
	case WEFT_TYPE_I16: return WEFT_PALLAS_TYPE_INT16;
	case WEFT_TYPE_I32: return WEFT_PALLAS_TYPE_INT32;
	case WEFT_TYPE_I64: return WEFT_PALLAS_TYPE_INT64;
	case WEFT_TYPE_F32: return WEFT_PALLAS_TYPE_FLOAT;
	case WEFT_TYPE_F64: return WEFT_PALLAS_TYPE_DOUBLE;
	case WEFT_TYPE_STR: return WEFT_PALLAS_TYPE_STRING;
	default: return -1;
	}
}

/* Bytes of a value of Pallas type `type` (the scalar ones and string refs). */
static size_t type_size(int type)
{
	switch (type) {
	case WEFT_PALLAS_TYPE_UINT8: case WEFT_PALLAS_TYPE_INT8: return 1;
	case WEFT_PALLAS_TYPE_UINT16: case WEFT_PALLAS_TYPE_INT16: return 2;
	case WEFT_PALLAS_TYPE_UINT64: case WEFT_PALLAS_TYPE_INT64:
	case WEFT_PALLAS_TYPE_DOUBLE: return 8;
	default: return 4;
	}
}

/*
 * The string ref of a string value, interned while the budget of value
 * bytes lasts. 1 with *ref set, 0 when the value is left out (too long,
 * a NUL inside, over the budget), -1 on failure.
 */
static int string_value(conv *c, const char *s, size_t len, uint32_t *ref)
{
	str_table *t = &c->strings;
	if (len > STRING_VALUE_MAX || memchr(s, '\0', len) != NULL)
		return 0;
	if (t->cap > 0) {
		str_entry *e = str_table_slot(t, s, (uint32_t)len, hash_bytes(s, len));
		if (e->text != NULL) {
			*ref = e->ref;
			return 1;
		}
	}
	if (t->value_bytes + len > STRING_VALUE_BUDGET)
		return 0;
	str_entry *e = intern(c, s, (uint32_t)len);
	if (e == NULL)
		return -1;
	t->value_bytes += len;
	*ref = e->ref;
	return 1;
}

/* Appends the value of field `f` as attribute `ref` of Pallas type `type`. */
static int add_value(weft_pallas_attrs *a, uint32_t ref, int type, const weft_field *f,
		     uint32_t str)
{
	switch (type) {
	case WEFT_PALLAS_TYPE_UINT8: return weft_pallas_attrs_add_u8(a, ref, (uint8_t)f->v.u);
	case WEFT_PALLAS_TYPE_UINT16: return weft_pallas_attrs_add_u16(a, ref, (uint16_t)f->v.u);
	case WEFT_PALLAS_TYPE_UINT32: return weft_pallas_attrs_add_u32(a, ref, (uint32_t)f->v.u);
	case WEFT_PALLAS_TYPE_UINT64: return weft_pallas_attrs_add_u64(a, ref, f->v.u);
	case WEFT_PALLAS_TYPE_INT8: return weft_pallas_attrs_add_i8(a, ref, (int8_t)f->v.i);
	case WEFT_PALLAS_TYPE_INT16: return weft_pallas_attrs_add_i16(a, ref, (int16_t)f->v.i);
	case WEFT_PALLAS_TYPE_INT32: return weft_pallas_attrs_add_i32(a, ref, (int32_t)f->v.i);
	case WEFT_PALLAS_TYPE_INT64: return weft_pallas_attrs_add_i64(a, ref, f->v.i);
	case WEFT_PALLAS_TYPE_FLOAT: return weft_pallas_attrs_add_float(a, ref, (float)f->v.f);
	case WEFT_PALLAS_TYPE_DOUBLE: return weft_pallas_attrs_add_double(a, ref, f->v.f);
	default: return weft_pallas_attrs_add_ref(a, ref, WEFT_PALLAS_TYPE_STRING, str);
	}
}

/*
 * Appends field `f` as a typed attribute named after it, when it has a
 * Pallas type and fits (keeping `keep_values` values, `keep_bytes` bytes
 * free); a field left out is counted. 0 or -1.
 */
static int add_field(conv *c, weft_pallas_attrs *a, const weft_field *f,
		     unsigned keep_values, size_t keep_bytes)
{
	int type = field_type(f);
	uint32_t ref, str = 0;
	if (type < 0)
		return 0;
	if (!attrs_fit(a, type_size(type), keep_values, keep_bytes)) {
		c->stats.fields_left_out++;
		return 0;
	}
	if (type == WEFT_PALLAS_TYPE_STRING) {
		int rc = string_value(c, f->v.s.ptr, f->v.s.len, &str);
		if (rc <= 0) {
			c->stats.strings_left_out += rc == 0;
			return rc;
		}
	}
	if (field_attribute(c, f, type, &ref) < 0)
		return -1;
	int rc = add_value(a, ref, type, f, str);
	return rc < 0 ? writer_error("cannot add an attribute value", rc) : 0;
}

/* Copies bytes [off, off + 8) of the event's stored bytes (payload, then data), 0-padded. */
static uint64_t stored_chunk(const weft_event *ev, uint64_t off)
{
	uint8_t b[8] = { 0 };
	for (unsigned i = 0; i < 8; i++) {
		uint64_t k = off + i;
		if (k < ev->payload_size)
			b[i] = ev->payload[k];
		else if (k - ev->payload_size < ev->data_size)
			b[i] = ev->data[k - ev->payload_size];
	}
	uint64_t v = 0;
	for (unsigned i = 0; i < 8; i++)
		v |= (uint64_t)b[i] << (8 * i);
	return v;
}

/* The attribute `weft.payload.<i>` (u64), defined at its first use. */
static int chunk_attribute(conv *c, unsigned i, uint32_t *ref)
{
	if (c->chunk_attr[i] == NONE) {
		char name[32];
		snprintf(name, sizeof name, "weft.payload.%u", i);
		if (named_attribute(c, name, WEFT_PALLAS_TYPE_UINT64, &c->chunk_attr[i]) < 0)
			return -1;
	}
	*ref = c->chunk_attr[i];
	return 0;
}

/*
 * The stored bytes of the event (payload, then variable data) as
 * `weft.payload_size` (u64) and little-endian u64 chunks `weft.payload.0`,
 * `.1`, ... as far as the list holds them (a payload cut short is
 * counted).
 */
static int add_payload(conv *c, weft_pallas_attrs *a, const weft_event *ev)
{
	uint64_t total = ev->payload_size + ev->data_size;
	uint32_t ref;
	if (total == 0)
		return 0;
	if (!attrs_fit(a, 8, 0, 0)) {
		c->stats.payloads_cut++;
		return 0;
	}
	if (named_attribute(c, "weft.payload_size", WEFT_PALLAS_TYPE_UINT64, &c->size_attr) < 0)
		return -1;
	int rc = weft_pallas_attrs_add_u64(a, c->size_attr, total);
	for (unsigned i = 0; rc == 0 && (uint64_t)i * 8 < total; i++) {
		if (i >= PAYLOAD_CHUNKS_MAX || !attrs_fit(a, 8, 0, 0)) {
			c->stats.payloads_cut++;
			break;
		}
		if (chunk_attribute(c, i, &ref) < 0)
			return -1;
		rc = weft_pallas_attrs_add_u64(a, ref, stored_chunk(ev, (uint64_t)i * 8));
	}
	return rc < 0 ? writer_error("cannot add the payload", rc) : 0;
}

/* `weft.code`: the event's code as a string attribute. */
static int add_code(conv *c, weft_pallas_attrs *a, const weft_event *ev)
{
	str_entry *e = intern(c, ev->code, ev->code_len);
	if (e == NULL || named_attribute(c, "weft.code", WEFT_PALLAS_TYPE_STRING, &c->code_attr) < 0)
		return -1;
	int rc = weft_pallas_attrs_add_ref(a, c->code_attr, WEFT_PALLAS_TYPE_STRING, e->ref);
	return rc < 0 ? writer_error("cannot add the code", rc) : 0;
}

/* `weft.end`: the end of an interval written as one Generic event. */
static int add_end(conv *c, weft_pallas_attrs *a, uint64_t end)
{
	if (named_attribute(c, "weft.end", WEFT_PALLAS_TYPE_UINT64, &c->end_attr) < 0)
		return -1;
	int rc = weft_pallas_attrs_add_u64(a, c->end_attr, end);
	return rc < 0 ? writer_error("cannot add the end", rc) : 0;
}

/* What goes into the attribute list of one record. */
typedef struct attr_plan {
	int with_code;       /* add weft.code */
	const uint64_t *end; /* add weft.end */
	int first_field;     /* fields before it are the record's own (Pallas sources) */
	int field_count;     /* decoded fields in conv.fields */
} attr_plan;

/*
 * The attribute list of a record: weft.code and weft.end when asked, the
 * decoded fields, then (unless the source is a Pallas trace, whose
 * payloads are references to its own definitions) the stored bytes, for
 * which room is kept for the size and up to 16 chunks.
 */
static int build_attrs(conv *c, const weft_event *ev, const attr_plan *p,
		       weft_pallas_attrs *a)
{
	uint64_t total = ev->payload_size + ev->data_size;
	int payload = !c->same_format && total > 0;
	unsigned chunks = payload ? (unsigned)((total + 7) / 8 < 16 ? (total + 7) / 8 : 16) : 0;
	unsigned keep = payload ? 1 + chunks : 0;
	weft_pallas_attrs_init(a);
	if ((p->with_code && add_code(c, a, ev) < 0) || (p->end && add_end(c, a, *p->end) < 0))
		return -1;
	for (int i = p->first_field; i < p->field_count; i++)
		if (add_field(c, a, &c->fields[i], keep, (size_t)keep * 14) < 0)
			return -1;
	return payload ? add_payload(c, a, ev) : 0;
}

/*
 * Decodes the event's fields into conv.fields; returns how many (0 when
 * the format knows no layout or the payload does not match it: the
 * payload attributes still keep the bytes).
 */
static int decode_fields(conv *c, const weft_event *ev)
{
	int n = weft_event_fields(c->trace, ev, c->fields, FIELDS_MAX);
	if (n < 0)
		return 0;
	return n > FIELDS_MAX ? FIELDS_MAX : n;
}

/* 1 when field i is named `name`. */
static int field_named(const conv *c, int i, int count, const char *name)
{
	size_t n = strlen(name);
	return i < count && c->fields[i].name_len == n &&
	       memcmp(c->fields[i].name, name, n) == 0;
}

/*
 * Pallas sources: the fields that are the record's own payload (region
 * and region_ref of Enter/Leave, name and name_ref of Generic) rather than
 * attributes; 0 for other sources.
 */
static int record_fields(const conv *c, int count)
{
	if (!c->same_format)
		return 0;
	if ((field_named(c, 0, count, "region") && field_named(c, 1, count, "region_ref")) ||
	    (field_named(c, 0, count, "name") && field_named(c, 1, count, "name_ref")))
		return 2;
	return 0;
}

/* ---- Threads ------------------------------------------------------------------------------- */

/* Starts selected stream number `loc` (its thread comes with its first event). */
static void stream_begin(conv *c, stream_out *s, uint32_t loc)
{
	memset(s, 0, sizeof *s);
	s->stream = c->selected[loc];
	s->location = loc;
}

/* The stream's location and thread writer, made at its first event. */
static int stream_thread(conv *c, stream_out *s)
{
	if (s->thread != NULL)
		return 0;
	if (add_location(c, s->location, &s->group) < 0)
		return -1;
	int rc = weft_pallas_thread_create(c->archives[s->group], s->location, &s->thread);
	return rc < 0 ? writer_error("cannot start a thread", rc) : 0;
}

/* ---- Records ------------------------------------------------------------------------------- */

/* Pushes an open block on the thread's stack (bounded by SPAN_DEPTH_MAX). */
static int push_span(stream_out *s, const span *sp)
{
	if (s->depth == s->cap) {
		uint32_t cap = s->cap ? s->cap * 2 : 16;
		span *st = realloc(s->stack, cap * sizeof *st);
		if (st == NULL)
			return out_of_memory();
		s->stack = st;
		s->cap = cap;
	}
	s->stack[s->depth++] = *sp;
	return 0;
}

/* The innermost open block, or NULL. */
static span *top_span(const stream_out *s)
{
	return s->depth > 0 ? &s->stack[s->depth - 1] : NULL;
}

/* 1 when the name the event would give a region is its code. */
static int name_is_code(const weft_event *ev, const char *name)
{
	return strlen(name) == ev->code_len && memcmp(name, ev->code, ev->code_len) == 0;
}

/*
 * A Generic event: named after the code (Pallas sources: a Generic keeps
 * its name), with the fields and payload as attributes, and its end as
 * `weft.end` when it stands for a whole interval.
 */
static int write_generic(conv *c, stream_out *s, const weft_event *ev, int nfields,
			 const uint64_t *end)
{
	attr_plan p = { 0, end, record_fields(c, nfields), nfields };
	weft_pallas_attrs a;
	str_entry *name;
	if (p.first_field == 2 && field_named(c, 0, nfields, "name") &&
	    c->fields[0].type == WEFT_TYPE_STR)
		name = intern(c, c->fields[0].v.s.ptr, (uint32_t)c->fields[0].v.s.len);
	else
		name = intern(c, ev->code, ev->code_len);
	if (name == NULL || build_attrs(c, ev, &p, &a) < 0)
		return -1;
	int rc = weft_pallas_record_generic(s->thread, &a, ev->time, name->ref);
	if (rc < 0)
		return writer_error("cannot write an event", rc);
	return 0;
}

/*
 * An Enter of the region named after the span (the class name, else the
 * code), with weft.code when the region's name is not the code; opens a
 * block as `sp` describes it (a span or an interval). Deeper than
 * SPAN_DEPTH_MAX: a Generic event.
 */
static int write_enter(conv *c, stream_out *s, const weft_event *ev,
		       const weft_event_class *cls, int nfields, const span *sp)
{
	if (s->depth >= SPAN_DEPTH_MAX) {
		c->stats.depth_fallbacks++;
		return write_generic(c, s, ev, nfields,
				     sp->kind == SPAN_INTERVAL ? &sp->end : NULL);
	}
	const char *name = cls->name;
	uint32_t len = name != NULL ? (uint32_t)strlen(name) : ev->code_len;
	span pushed = *sp;
	attr_plan p = { 0, NULL, record_fields(c, nfields), nfields };
	weft_pallas_attrs a;
	p.with_code = !c->same_format && (name == NULL ? 0 : !name_is_code(ev, name));
	if (region_ref(c, name != NULL ? name : ev->code, len, &pushed.region) < 0 ||
	    build_attrs(c, ev, &p, &a) < 0)
		return -1;
	int rc = weft_pallas_record_enter(s->thread, &a, ev->time, pushed.region);
	if (rc < 0)
		return writer_error("cannot write an event", rc);
	return push_span(s, &pushed);
}

/* 1 when two channels are the same timeline (NULL: the stream's own). */
static int same_channel(const char *a, const char *b)
{
	return a == b || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

/* 1 when the open block `sp` is the span that a LEAVE of class `cls` closes. */
static int closes(const span *sp, const weft_event_class *cls)
{
	return sp->kind == SPAN_ENTER && !sp->orphan && sp->pair_key == cls->pair_key &&
	       same_channel(sp->channel, cls->channel);
}

/*
 * A LEAVE that closes the innermost open block becomes its Leave (with
 * weft.code: the original code); any other LEAVE is a Generic event, and
 * the span it closes stays open in Pallas (marked, so that no later LEAVE
 * takes it for its own).
 */
static int write_leave(conv *c, stream_out *s, const weft_event *ev,
		       const weft_event_class *cls, int nfields)
{
	span *top = top_span(s);
	if (top == NULL || !closes(top, cls)) {
		for (uint32_t i = s->depth; i-- > 0;) {
			if (closes(&s->stack[i], cls)) {
				s->stack[i].orphan = 1;
				break;
			}
		}
		c->stats.leave_fallbacks++;
		return write_generic(c, s, ev, nfields, NULL);
	}
	attr_plan p = { !c->same_format, NULL, record_fields(c, nfields), nfields };
	weft_pallas_attrs a;
	if (build_attrs(c, ev, &p, &a) < 0)
		return -1;
	int rc = weft_pallas_record_leave(s->thread, &a, ev->time, top->region);
	if (rc < 0)
		return writer_error("cannot write an event", rc);
	s->depth--;
	return 0;
}

/*
 * Writes the pending Leaves of intervals that end before an event at
 * `time` (depth `depth` in its call tree, -1 when unknown): those that end
 * earlier, and those that end at `time` unless the event is deeper (a
 * zero-length child at its parent's end). At the end of a thread, every
 * pending Leave (time UINT64_MAX).
 */
static int flush_intervals(conv *c, stream_out *s, uint64_t time, int32_t depth)
{
	span *top;
	while ((top = top_span(s)) != NULL && top->kind == SPAN_INTERVAL &&
	       (top->end < time || (top->end == time && !(depth >= 0 && depth > top->depth)))) {
		int rc = weft_pallas_record_leave(s->thread, NULL, top->end, top->region);
		if (rc < 0)
			return writer_error("cannot write an event", rc);
		s->depth--;
	}
	return 0;
}

/*
 * An interval: an Enter at its start, its Leave pending until the thread
 * reaches its end. When it overlaps the open interval without nesting in
 * it (ending later), it is one Generic event with weft.end.
 */
static int write_interval(conv *c, stream_out *s, const weft_event *ev,
			  const weft_event_class *cls, int nfields)
{
	span sp = { NULL, 0, ev->end < ev->time ? ev->time : ev->end, 0, ev->depth,
		    SPAN_INTERVAL, 0 };
	const span *top = top_span(s);
	if (top != NULL && top->kind == SPAN_INTERVAL && top->end < sp.end) {
		c->stats.interval_fallbacks++;
		return write_generic(c, s, ev, nfields, &sp.end);
	}
	return write_enter(c, s, ev, cls, nfields, &sp);
}

/* One event of a stream: classified, then written as its role says. */
static int convert_event(conv *c, stream_out *s, const weft_event *ev)
{
	weft_event_class cls;
	weft_event_classify(c->trace, ev, &cls);
	if (stream_thread(c, s) < 0 || flush_intervals(c, s, ev->time, ev->depth) < 0)
		return -1;
	int nfields = decode_fields(c, ev);
	switch (cls.role) {
	case WEFT_ROLE_ENTER: {
		span sp = { cls.channel, cls.pair_key, 0, 0, -1, SPAN_ENTER, 0 };
		return write_enter(c, s, ev, &cls, nfields, &sp);
	}
	case WEFT_ROLE_LEAVE:
		return write_leave(c, s, ev, &cls, nfields);
	case WEFT_ROLE_INTERVAL:
		return write_interval(c, s, ev, &cls, nfields);
	default:
		return write_generic(c, s, ev, nfields, NULL);
	}
}

/* ---- Streams ------------------------------------------------------------------------------- */

/*
 * Ends a stream: the pending Leaves of its intervals, then its thread
 * file (`ok`), or abandons its writer (nothing written). Blocks of spans
 * whose LEAVE never came are closed by the writer without an event. A
 * stream without any selected event has no thread.
 */
static int stream_end(conv *c, stream_out *s, int ok)
{
	int rc = 0;
	if (ok && s->thread != NULL && flush_intervals(c, s, UINT64_MAX, -1) < 0)
		ok = 0, rc = -1;
	if (ok && s->thread != NULL && (rc = weft_pallas_thread_close(s->thread)) < 0)
		rc = writer_error("cannot write a thread", rc);
	weft_pallas_thread_free(s->thread);
	free(s->stack);
	memset(s, 0, sizeof *s);
	return ok ? rc : -1;
}

/* Reports a stream that could not be read to its end; the conversion goes on. */
static void stream_read_error(conv *c, uint32_t stream, int rc)
{
	const weft_stream_info *si = weft_trace_stream(c->trace, stream);
	const char *msg = weft_last_error();
	fprintf(stderr, "weft convert: error: %s: reading stopped: %s\n", si->path,
		msg != NULL && msg[0] != '\0' ? msg : weft_strerror(rc));
	c->lost = 1;
}

/* The code pattern's verdict on a code (a small cache before fnmatch). */
static int code_selected(conv *c, const char *code, uint32_t len)
{
	char buf[256];
	code_verdict *v = NULL;
	if (len > 0 && len < CODE_CACHE_LEN && c->code_cache != NULL) {
		v = &c->code_cache[hash_bytes(code, len) % CODE_CACHE_SIZE];
		if (v->len == len && memcmp(v->code, code, len) == 0)
			return v->selected;
	}
	size_t n = len < sizeof buf - 1 ? len : sizeof buf - 1;
	memcpy(buf, code, n);
	buf[n] = '\0';
	int selected = fnmatch(c->job->filter.code_pattern, buf, 0) == 0;
	if (v != NULL) {
		memcpy(v->code, code, len);
		v->len = (uint8_t)len;
		v->selected = (uint8_t)selected;
	}
	return selected;
}

/* The time window and code pattern, for cursors of one stream (as weft_cursor_create). */
static int event_selected(conv *c, const weft_event *ev)
{
	const weft_filter *f = &c->job->filter;
	if (ev->time < f->from || (f->to != 0 && ev->time > f->to))
		return 0;
	return f->code_pattern == NULL || code_selected(c, ev->code, ev->code_len);
}

/*
 * Converts selected stream number `loc` through its own cursor. A stream
 * that cannot be read (to its end) is reported and keeps what was read.
 * -1 when the output failed or the command was interrupted.
 */
static int convert_stream(conv *c, uint32_t loc)
{
	stream_out s;
	weft_cursor *cursor;
	const weft_event *ev;
	int rc, ok = 1;
	stream_begin(c, &s, loc);
	rc = weft_cursor_create_stream(c->trace, s.stream, &cursor);
	if (rc < 0) {
		stream_read_error(c, s.stream, rc);
		return stream_end(c, &s, 1);
	}
	while (ok && !interrupted && (rc = weft_cursor_next(cursor, &ev)) == 1)
		if (event_selected(c, ev) && convert_event(c, &s, ev) < 0)
			ok = 0;
	if (ok && rc < 0)
		stream_read_error(c, s.stream, rc);
	weft_cursor_free(cursor);
	return stream_end(c, &s, ok && !interrupted);
}

/*
 * Converts selected streams [first, first + count) in one pass over the
 * trace's files (formats whose streams share files: ROSS), through the
 * merged cursor with the job's filter; events of other streams are
 * skipped. `slot` maps a stream index to its place in the batch.
 */
static int convert_batch(conv *c, uint32_t first, uint32_t count, uint32_t *slot)
{
	stream_out outs[STREAM_BATCH];
	weft_cursor *cursor = NULL;
	const weft_event *ev;
	uint32_t begun = 0;
	int rc = 0, ok = 1;
	for (; begun < count; begun++) {
		stream_begin(c, &outs[begun], first + begun);
		slot[outs[begun].stream] = begun;
	}
	if ((rc = weft_cursor_create(c->trace, &c->job->filter, &cursor)) < 0) {
		fprintf(stderr, "weft convert: cannot read the events: %s\n", weft_last_error());
		ok = 0;
	}
	while (ok && !interrupted && (rc = weft_cursor_next(cursor, &ev)) == 1)
		if (slot[ev->stream] != NONE && convert_event(c, &outs[slot[ev->stream]], ev) < 0)
			ok = 0;
	if (ok && rc < 0) {
		fprintf(stderr, "weft convert: error: reading stopped: %s\n", weft_last_error());
		c->lost = 1;
	}
	weft_cursor_free(cursor);
	for (uint32_t i = 0; i < begun; i++) {
		slot[outs[i].stream] = NONE;
		if (stream_end(c, &outs[i], ok && !interrupted) < 0)
			ok = 0;
	}
	return ok && !interrupted ? 0 : -1;
}

/* Every selected stream in batches (shared files) or one at a time. */
static int convert_streams(conv *c)
{
	if (!weft_trace_file_order_default(c->trace)) {
		c->code_cache = calloc(CODE_CACHE_SIZE, sizeof *c->code_cache);
		for (uint32_t loc = 0; loc < c->selected_count; loc++)
			if (convert_stream(c, loc) < 0)
				return -1;
		return 0;
	}
	size_t n = weft_trace_stream_count(c->trace);
	uint32_t *slot = malloc((n ? n : 1) * sizeof *slot);
	if (slot == NULL)
		return out_of_memory();
	for (size_t i = 0; i < n; i++)
		slot[i] = NONE;
	int rc = 0;
	for (uint32_t first = 0; rc == 0 && first < c->selected_count; first += STREAM_BATCH) {
		uint32_t left = c->selected_count - first;
		rc = convert_batch(c, first, left < STREAM_BATCH ? left : STREAM_BATCH, slot);
	}
	free(slot);
	return rc;
}

/* Writes every archive file (all their threads are closed by now). */
static int store_archives(conv *c)
{
	for (uint32_t g = 0; g < c->group_count; g++) {
		int rc = weft_pallas_archive_store(c->archives[g]);
		if (rc < 0)
			return writer_error("cannot write an archive", rc);
	}
	return 0;
}

/*
 * Heph traces are read in time order (a call tree per substream, parents
 * before children), which the pending Leaves need. A Heph trace opened in
 * stored order (depth -1: children come before their parents) is opened
 * again in time order; *reopened gets it (to free). 0 or -1.
 */
static int heph_in_time_order(conv *c, weft_trace **reopened)
{
	weft_cursor *cursor;
	const weft_event *ev;
	*reopened = NULL;
	if (weft_trace_format(c->trace) != WEFT_FORMAT_HEPH || c->selected_count == 0)
		return 0;
	if (weft_cursor_create_stream(c->trace, c->selected[0], &cursor) < 0)
		return 0; /* reported when the stream is converted */
	int stored = weft_cursor_next(cursor, &ev) == 1 && ev->depth < 0;
	weft_cursor_free(cursor);
	if (!stored)
		return 0;
	weft_open_options o;
	weft_open_options_init(&o);
	o.format = WEFT_FORMAT_HEPH;
	int rc = weft_trace_open(weft_trace_path(c->trace), &o, reopened);
	if (rc < 0) {
		fprintf(stderr, "weft convert: %s\n", weft_last_error());
		return -1;
	}
	c->trace = *reopened;
	return 0;
}

/* ---- The output directory ------------------------------------------------------------------ */

/*
 * Removes `name` in directory `dirfd` and, for a directory, everything in
 * it, at most REMOVE_DEPTH_MAX levels deep (only the command's own
 * temporary directory, or a Pallas trace replaced with --force). 0 or -1.
 */
static int remove_at(int parent, const char *name, int depth)
{
	if (unlinkat(parent, name, 0) == 0)
		return 0;
	if ((errno != EISDIR && errno != EPERM) || depth >= REMOVE_DEPTH_MAX)
		return -1;
	int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
	if (fd < 0)
		return -1;
	DIR *d = fdopendir(fd);
	if (d == NULL) {
		close(fd);
		return -1;
	}
	int rc = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL)
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0 &&
		    remove_at(dirfd(d), e->d_name, depth + 1) < 0)
			rc = -1;
	closedir(d);
	return rc == 0 ? unlinkat(parent, name, AT_REMOVEDIR) : -1;
}

/* Removes a directory tree given by its path; 0 or -1. */
static int remove_tree(const char *path)
{
	return remove_at(AT_FDCWD, path, 0);
}

/* 1 when a directory entry belongs to a Pallas trace (or its leftovers). */
static int pallas_entry(const char *name)
{
	size_t n = strlen(name);
	return strncmp(name, "archive_", 8) == 0 ||
	       (n > 7 && strcmp(name + n - 7, ".pallas") == 0) ||
	       (n > 11 && strcmp(name + n - 11, ".pallas.tmp") == 0);
}

/* 1 when `path` is an empty directory or holds only a Pallas trace's entries. */
static int is_pallas_dir(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *e;
	int ok = d != NULL;
	while (ok && (e = readdir(d)) != NULL)
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
			ok = pallas_entry(e->d_name);
	if (d != NULL)
		closedir(d);
	return ok;
}

/*
 * Checks DIR before anything is read: missing is fine; existing needs
 * --force and must be a Pallas trace (or empty), never anything else.
 * *replace is set when DIR is to be replaced. An exit code.
 */
static int check_output(const char *out, int force, int *replace)
{
	struct stat st;
	*replace = 0;
	if (lstat(out, &st) != 0) {
		if (errno == ENOENT)
			return CLI_EXIT_OK;
		fprintf(stderr, "weft convert: cannot use '%s': %s\n", out, strerror(errno));
		return CLI_EXIT_FAILURE;
	}
	if (!force) {
		fprintf(stderr, "weft convert: '%s' exists; use --force to replace it\n", out);
		return CLI_EXIT_FAILURE;
	}
	if (!S_ISDIR(st.st_mode) || !is_pallas_dir(out)) {
		fprintf(stderr, "weft convert: '%s' is not a Pallas trace directory: not "
			"replaced, even with --force\n", out);
		return CLI_EXIT_FAILURE;
	}
	*replace = 1;
	return CLI_EXIT_OK;
}

/* Creates "<out>.<what>.XXXXXX" (mode 0777 less the umask); NULL after printing why. */
static char *make_sibling_dir(const char *out, const char *what)
{
	char suffix[32];
	snprintf(suffix, sizeof suffix, ".%s.XXXXXX", what);
	char *path = concat(out, suffix);
	if (path == NULL)
		return out_of_memory(), NULL;
	if (mkdtemp(path) == NULL) {
		fprintf(stderr, "weft convert: cannot create '%s': %s\n", path, strerror(errno));
		free(path);
		return NULL;
	}
	mode_t mask = umask(0);
	umask(mask);
	chmod(path, 0777 & ~mask);
	return path;
}

/*
 * Replaces the existing trace DIR by the new one: DIR is moved aside
 * (renamed over an empty directory made for it), the new trace renamed
 * to DIR, then the old one removed; DIR is put back if the second rename
 * fails. 0 or -1.
 */
static int replace_output(const char *tmp, const char *out)
{
	char *aside = make_sibling_dir(out, "old");
	if (aside == NULL)
		return -1;
	int rc = -1;
	if (rename(out, aside) != 0) {
		fprintf(stderr, "weft convert: cannot move '%s' aside: %s\n", out, strerror(errno));
		rmdir(aside);
	} else if (rename(tmp, out) != 0) {
		fprintf(stderr, "weft convert: cannot rename '%s' to '%s': %s\n", tmp, out,
			strerror(errno));
		rename(aside, out);
	} else {
		rc = 0;
		if (remove_tree(aside) < 0)
			fprintf(stderr, "weft convert: warning: the old trace is left in '%s'\n", aside);
	}
	free(aside);
	return rc;
}

/* Puts the finished trace in place (see replace_output); 0 or -1. */
static int commit_output(const char *tmp, const char *out, int replace)
{
	int rc;
	if (replace) {
		rc = replace_output(tmp, out);
	} else if ((rc = rename(tmp, out)) != 0) {
		if (errno == EEXIST || errno == ENOTEMPTY)
			fprintf(stderr, "weft convert: '%s' appeared meanwhile; use --force to "
				"replace it\n", out);
		else
			fprintf(stderr, "weft convert: cannot rename '%s' to '%s': %s\n", tmp, out,
				strerror(errno));
	}
	if (rc == 0)
		cli_sync_parent(out);
	return rc;
}

/* ---- The conversion ------------------------------------------------------------------------- */

/* Prints what the mapping had to adapt (see docs/convert-pallas.md). */
static void report_notes(const conv *c)
{
	const conv_stats *s = &c->stats;
	if (s->leave_fallbacks)
		fprintf(stderr, "weft convert: note: %" PRIu64 " leave event(s) did not close the "
			"innermost open span: written as Generic events\n", s->leave_fallbacks);
	if (s->interval_fallbacks)
		fprintf(stderr, "weft convert: note: %" PRIu64 " interval(s) overlap an open one "
			"without nesting in it: written as Generic events with weft.end\n",
			s->interval_fallbacks);
	if (s->depth_fallbacks)
		fprintf(stderr, "weft convert: note: %" PRIu64 " span(s) nested deeper than %d: "
			"written as Generic events\n", s->depth_fallbacks, SPAN_DEPTH_MAX);
	if (s->strings_left_out)
		fprintf(stderr, "weft convert: note: %" PRIu64 " string value(s) not kept as "
			"attributes (too long, or over the %u MiB of strings); the payload "
			"attributes keep their bytes\n", s->strings_left_out, STRING_VALUE_BUDGET >> 20);
	if (s->payloads_cut || s->fields_left_out)
		fprintf(stderr, "weft convert: note: %" PRIu64 " payload(s) and %" PRIu64
			" field(s) did not fit in Pallas attribute lists (%d values, %d bytes)\n",
			s->payloads_cut, s->fields_left_out, WEFT_PALLAS_ATTRS_MAX,
			WEFT_PALLAS_ATTRS_BYTES);
}

/* Writes the whole trace into the temporary directory; 0 or -1. */
static int write_trace(conv *c)
{
	weft_pallas_write_options o;
	weft_pallas_write_options_init(&o);
	o.sync = 1;
	int rc = weft_pallas_global_create(c->tmp_dir, MAIN_NAME, &o, &c->global);
	if (rc < 0)
		return writer_error("cannot start the trace", rc);
	c->defs = weft_pallas_global_defs(c->global);
	if (define_structure(c) < 0 || convert_streams(c) < 0 || store_archives(c) < 0)
		return -1;
	rc = weft_pallas_global_store(c->global);
	return rc < 0 ? writer_error("cannot write the main file", rc) : 0;
}

/* Frees what the conversion holds (not the job's trace). */
static void conv_free(conv *c)
{
	weft_pallas_global_free(c->global);
	str_table_free(&c->strings);
	u64_map_free(&c->attributes);
	free(c->node_group);
	free(c->archives);
	free(c->selected);
	free(c->code_cache);
	free(c->tmp_dir);
}

/* OUT without its trailing slashes (malloc'd), NULL when empty. */
static char *output_path(const char *output)
{
	size_t n = output != NULL ? strlen(output) : 0;
	while (n > 1 && output[n - 1] == '/')
		n--;
	if (n == 0)
		return NULL;
	char *p = malloc(n + 1);
	if (p != NULL) {
		memcpy(p, output, n);
		p[n] = '\0';
	}
	return p;
}

/*
 * Selects the streams, makes sure of the reading order, writes the trace
 * into a temporary directory and puts it in place. -1 on failure.
 */
static int run(conv *c, const char *out, int replace, weft_trace **reopened)
{
	struct sigaction old[WATCHED_COUNT];
	if (select_streams(c) < 0 || heph_in_time_order(c, reopened) < 0)
		return -1;
	c->same_format = weft_trace_format(c->trace) == WEFT_FORMAT_PALLAS;
	if ((c->tmp_dir = make_sibling_dir(out, "tmp")) == NULL)
		return -1;
	interrupted = 0;
	watch_signals(old, NULL);
	int rc = write_trace(c);
	weft_pallas_global_free(c->global);
	c->global = NULL;
	if (rc == 0 && !interrupted)
		rc = commit_output(c->tmp_dir, out, replace);
	watch_signals(NULL, old);
	if (rc < 0 || interrupted)
		remove_tree(c->tmp_dir);
	return interrupted ? -1 : rc;
}

int cli_convert_pallas(const cli_convert_job *job)
{
	conv c;
	weft_trace *reopened = NULL;
	int replace;
	char *out = output_path(job->output);
	if (out == NULL)
		return cli_usage_error("convert", "missing the output directory: -o DIR");
	int exit_code = check_output(out, job->force, &replace);
	if (exit_code != CLI_EXIT_OK) {
		free(out);
		return exit_code;
	}
	memset(&c, 0, sizeof c);
	c.job = job;
	c.trace = job->trace;
	int rc = run(&c, out, replace, &reopened);
	if (rc == 0)
		report_notes(&c);
	int lost = cli_print_diags_from(c.trace, "convert", 0) || c.lost;
	conv_free(&c);
	weft_trace_free(reopened);
	free(out);
	if (interrupted) {
		signal(interrupted, SIG_DFL);
		raise(interrupted);
	}
	return rc < 0 ? CLI_EXIT_FAILURE : lost ? CLI_EXIT_PROBLEMS : CLI_EXIT_OK;
}
