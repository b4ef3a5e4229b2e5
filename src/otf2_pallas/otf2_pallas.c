/* SPDX-License-Identifier: MIT */
/*
 * otf2_pallas/otf2_pallas.c - the OTF2 writing API on weft's Pallas writer
 * (weft/pallas.h), built as `libopen-trace-format2.so.10` in
 * `<build>/lib/otf2-pallas/`: a program linked with Debian's libotf2, such
 * as EZTrace 2.0, writes a Pallas trace when this library is found first
 * (`LD_LIBRARY_PATH=<build>/lib/otf2-pallas`). docs/otf2-pallas.md lists
 * the calls and what each becomes.
 *
 * Compiled against Debian's OTF2 headers, so that every function has
 * libotf2's exact prototype and types; only the OTF2_* functions are
 * exported (otf2_pallas.map). Map of this file:
 *
 *   - messages: a failed call says why on stderr, once per kind;
 *   - the archive: Open (write mode only), the callbacks (the collective
 *     ones give this process's rank: its Pallas archive), Close (the
 *     thread files are written as writers close; then this rank's archive
 *     file, and on rank 0 the main file);
 *   - attribute lists;
 *   - event writers: one Pallas thread writer per location, the records;
 *   - definition writers: the global definitions (rank 0, as libotf2) go
 *     into the main file's definitions; local definition writers hold
 *     nothing (EZTrace writes none).
 *
 * Threads: EZTrace writes each thread's events from that thread; the
 * archive's tables are guarded by a spin lock of C11 atomics, a writer
 * is used by one thread at a time (as libotf2 requires). Not a pthread
 * mutex: EZTrace's pthread module records every pthread_mutex_lock of
 * the process, this library's too, which added events to the trace.
 */
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <otf2/otf2.h>

#include "core/internal.h"
#include "weft/pallas.h"

#define EXPORT __attribute__((visibility("default")))
#define LIST_MAX WEFT_PALLAS_ATTRS_MAX
#define LOCAL_BITS 16 /* a Pallas location id: rank << 16 | place on the rank */

/* ---- Locks and messages --------------------------------------------------------------------- */

/* A spin lock: the critical sections are a few table operations. */
typedef atomic_flag spin_lock;
#define SPIN_LOCK_INIT ATOMIC_FLAG_INIT

static void lock(spin_lock *l)
{
	while (atomic_flag_test_and_set_explicit(l, memory_order_acquire))
		sched_yield();
}

static void unlock(spin_lock *l)
{
	atomic_flag_clear_explicit(l, memory_order_release);
}

static spin_lock said_lock = SPIN_LOCK_INIT;
static char said[32][64];

/* Prints "weft otf2-pallas: <message>" on stderr, once per `key`. */
static void say_once(const char *key, const char *fmt, ...)
{
	lock(&said_lock);
	int i = 0;
	for (; i < 32 && said[i][0] != '\0'; i++)
		if (strcmp(said[i], key) == 0)
			break;
	int first = i == 32 || said[i][0] == '\0';
	if (first && i < 32)
		snprintf(said[i], sizeof said[i], "%s", key);
	unlock(&said_lock);
	if (!first)
		return;
	va_list va;
	va_start(va, fmt);
	fputs("weft otf2-pallas: ", stderr);
	vfprintf(stderr, fmt, va);
	fputc('\n', stderr);
	va_end(va);
}

/* A failed call of weft's Pallas writer: said (once per call), mapped to an OTF2 error. */
static OTF2_ErrorCode failed(const char *call, int rc)
{
	if (rc >= 0)
		return OTF2_SUCCESS;
	say_once(call, "%s failed: %s", call, weft_last_error());
	return rc == WEFT_ENOMEM ? OTF2_ERROR_MEM_FAULT : OTF2_ERROR_INVALID_CALL;
}

/* ---- Types ------------------------------------------------------------------------------- */

struct OTF2_AttributeList_struct {
	uint32_t count;
	OTF2_AttributeRef refs[LIST_MAX];
	OTF2_Type types[LIST_MAX];
	OTF2_AttributeValue values[LIST_MAX];
};

struct OTF2_EvtWriter_struct {
	OTF2_Archive *archive;
	OTF2_LocationRef location;
	weft_pallas_thread *thread;
	uint64_t events;
	struct OTF2_EvtWriter_struct *next;
};

struct OTF2_GlobalDefWriter_struct {
	OTF2_Archive *archive;
};

struct OTF2_DefWriter_struct {
	OTF2_Archive *archive;
	OTF2_LocationRef location;
};

/* A group definition kept until Close, when location refs become Pallas ids. */
struct pending_group {
	uint32_t ref, name;
	int32_t type, paradigm;
	uint64_t *members;
	uint32_t count;
};

struct OTF2_Archive_struct {
	spin_lock lock;
	char *path, *name;              /* the main file: <path>/<name>.pallas */
	uint32_t rank, size;            /* this process among the archive's writers */
	weft_pallas_global *global;     /* made at the first need */
	weft_pallas_archive *own;       /* this rank's archive (location group `rank`) */
	OTF2_EvtWriter *writers;        /* open event writers */
	OTF2_GlobalDefWriter *global_defs;
	uint64_t *names;                /* rank 0: (location, name string) pairs defined */
	uint32_t name_count;
	size_t name_cap;
	uint64_t *mine;                 /* (OTF2 location, Pallas id) of this rank's writers */
	uint32_t mine_count;            /* values: twice the locations */
	size_t mine_cap;
	struct pending_group *pending;  /* rank 0: the groups, added at Close */
	uint32_t pending_count;
	size_t pending_cap;
	const OTF2_CollectiveCallbacks *coll; /* the collective callbacks, their data */
	void *coll_data;
	OTF2_CollectiveContext *coll_context;
	int failed;                     /* a call failed: Close says it again */
	char *about[3];                 /* creator, description, machine name */
};

static const char *const about_keys[3] = { "otf2.creator", "otf2.description", "otf2.machine" };

/* ---- The archive --------------------------------------------------------------------------- */

/* Appends `n` values to a table of u64; 0 or -1 (out of memory). */
static int push_u64(uint64_t **table, uint32_t *count, size_t *cap, const uint64_t *v, int n)
{
	if (weft__array_grow((void **)table, cap, (size_t)*count + (size_t)n, sizeof **table) < 0)
		return -1;
	memcpy(*table + *count, v, (size_t)n * sizeof *v);
	*count += (uint32_t)n;
	return 0;
}

/* Orders (location, value) pairs by location. */
static int by_location(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
	return (a > b) - (a < b);
}

/* Sorts `count` / 2 (location, value) pairs by location. */
static void sort_pairs(uint64_t *pairs, uint32_t count)
{
	if (pairs != NULL && count > 2)
		qsort(pairs, count / 2, 2 * sizeof *pairs, by_location);
}

/* The value of location `ref` among `count` / 2 sorted pairs, or `absent`. */
static uint64_t pair_value(const uint64_t *pairs, uint32_t count, uint64_t ref, uint64_t absent)
{
	const uint64_t *p = pairs != NULL && count >= 2
		? bsearch(&ref, pairs, count / 2, 2 * sizeof *pairs, by_location) : NULL;
	return p != NULL ? p[1] : absent;
}

/*
 * The main file's writer and this rank's archive, made at their first
 * need (after the collective callbacks gave the rank). Called locked.
 */
static OTF2_ErrorCode ensure_output(OTF2_Archive *a)
{
	if (a->global == NULL) {
		weft_pallas_write_options o;
		weft_pallas_write_options_init(&o);
		o.replace = 1;
		/* No helper thread: the traced program's tracer (EZTrace's pthread
		 * module) would trace it as one of the program's threads. */
		o.compress_threads = 0;
		int rc = weft_pallas_global_create(a->path, a->name, &o, &a->global);
		if (rc < 0)
			return a->failed = 1, failed("creating the Pallas trace", rc);
	}
	if (a->own == NULL) {
		int rc = weft_pallas_archive_create(a->global, a->rank, &a->own);
		if (rc < 0)
			return a->failed = 1, failed("creating the archive of this rank", rc);
	}
	return OTF2_SUCCESS;
}

EXPORT OTF2_Archive *OTF2_Archive_Open(const char *archivePath, const char *archiveName,
				       const OTF2_FileMode fileMode,
				       const uint64_t chunkSizeEvents,
				       const uint64_t chunkSizeDefs,
				       const OTF2_FileSubstrate fileSubstrate,
				       const OTF2_Compression compression)
{
	(void)chunkSizeEvents; (void)chunkSizeDefs; (void)fileSubstrate; (void)compression;
	if (fileMode != OTF2_FILEMODE_WRITE) {
		say_once("open-mode", "OTF2_Archive_Open: only writing is implemented (this "
			 "library writes Pallas traces); use Debian's libotf2 to read");
		return NULL;
	}
	if (archivePath == NULL || archiveName == NULL)
		return NULL;
	OTF2_Archive *a = calloc(1, sizeof *a);
	if (a == NULL)
		return NULL;
	atomic_flag_clear(&a->lock);
	a->path = strdup(archivePath);
	a->name = strdup(archiveName);
	a->size = 1;
	if (a->path == NULL || a->name == NULL) {
		free(a->path);
		free(a->name);
		free(a);
		return NULL;
	}
	return a;
}

/* The rank and size from the collective callbacks (the global context). */
EXPORT OTF2_ErrorCode OTF2_Archive_SetCollectiveCallbacks(OTF2_Archive *archive,
							  const OTF2_CollectiveCallbacks *cb,
							  void *collectiveData,
							  OTF2_CollectiveContext *globalCommContext,
							  OTF2_CollectiveContext *localCommContext)
{
	(void)localCommContext;
	if (archive == NULL || cb == NULL)
		return OTF2_ERROR_INVALID_ARGUMENT;
	uint32_t rank = 0, size = 1;
	if (cb->otf2_get_rank != NULL &&
	    cb->otf2_get_rank(collectiveData, globalCommContext, &rank) != OTF2_CALLBACK_SUCCESS)
		return OTF2_ERROR_COLLECTIVE_CALLBACK;
	if (cb->otf2_get_size != NULL &&
	    cb->otf2_get_size(collectiveData, globalCommContext, &size) != OTF2_CALLBACK_SUCCESS)
		return OTF2_ERROR_COLLECTIVE_CALLBACK;
	archive->rank = rank;
	archive->size = size;
	archive->coll = cb;
	archive->coll_data = collectiveData;
	archive->coll_context = globalCommContext;
	return OTF2_SUCCESS;
}

EXPORT OTF2_ErrorCode OTF2_Archive_SetSerialCollectiveCallbacks(OTF2_Archive *archive)
{
	if (archive == NULL)
		return OTF2_ERROR_INVALID_ARGUMENT;
	archive->rank = 0;
	archive->size = 1;
	return OTF2_SUCCESS;
}

/* The Pallas writer manages its own memory and files: flushing is its own. */
EXPORT OTF2_ErrorCode OTF2_Archive_SetFlushCallbacks(OTF2_Archive *archive,
						     const OTF2_FlushCallbacks *flushCallbacks,
						     void *flushData)
{
	(void)flushCallbacks; (void)flushData;
	return archive == NULL ? OTF2_ERROR_INVALID_ARGUMENT : OTF2_SUCCESS;
}

/* The archive locks its tables with its own mutex. */
EXPORT OTF2_ErrorCode OTF2_Archive_SetLockingCallbacks(OTF2_Archive *archive,
						       const OTF2_LockingCallbacks *lockingCallbacks,
						       void *lockingData)
{
	(void)lockingCallbacks; (void)lockingData;
	return archive == NULL ? OTF2_ERROR_INVALID_ARGUMENT : OTF2_SUCCESS;
}

/* Creator, description, machine name: metadata of the main file. */
static OTF2_ErrorCode set_about(OTF2_Archive *archive, int which, const char *text)
{
	if (archive == NULL || text == NULL)
		return OTF2_ERROR_INVALID_ARGUMENT;
	char *copy = strdup(text);
	if (copy == NULL)
		return OTF2_ERROR_MEM_FAULT;
	free(archive->about[which]);
	archive->about[which] = copy;
	return OTF2_SUCCESS;
}

EXPORT OTF2_ErrorCode OTF2_Archive_SetCreator(OTF2_Archive *archive, const char *creator)
{
	return set_about(archive, 0, creator);
}

EXPORT OTF2_ErrorCode OTF2_Archive_SetDescription(OTF2_Archive *archive,
						  const char *description)
{
	return set_about(archive, 1, description);
}

EXPORT OTF2_ErrorCode OTF2_Archive_SetMachineName(OTF2_Archive *archive,
						  const char *machineName)
{
	return set_about(archive, 2, machineName);
}

/* Files are opened by the writers themselves: these say yes. */
EXPORT OTF2_ErrorCode OTF2_Archive_OpenEvtFiles(OTF2_Archive *archive)
{
	return archive == NULL ? OTF2_ERROR_INVALID_ARGUMENT : OTF2_SUCCESS;
}

EXPORT OTF2_ErrorCode OTF2_Archive_CloseEvtFiles(OTF2_Archive *archive)
{
	return archive == NULL ? OTF2_ERROR_INVALID_ARGUMENT : OTF2_SUCCESS;
}

EXPORT OTF2_ErrorCode OTF2_Archive_OpenDefFiles(OTF2_Archive *archive)
{
	return archive == NULL ? OTF2_ERROR_INVALID_ARGUMENT : OTF2_SUCCESS;
}

EXPORT OTF2_ErrorCode OTF2_Archive_CloseDefFiles(OTF2_Archive *archive)
{
	return archive == NULL ? OTF2_ERROR_INVALID_ARGUMENT : OTF2_SUCCESS;
}

/* Writes the writer's thread files and frees it. Called locked, `w` unlinked. */
static OTF2_ErrorCode close_writer(OTF2_Archive *a, OTF2_EvtWriter *w)
{
	int rc = weft_pallas_thread_close(w->thread);
	weft_pallas_thread_free(w->thread);
	free(w);
	if (rc < 0)
		a->failed = 1;
	return failed("writing a thread", rc);
}

/*
 * Rank 0's location names on every rank: the number of (location, name)
 * pairs, then the pairs, broadcast through the collective callbacks.
 * 0, or -1 when the callbacks failed (the names stay rank 0's).
 */
static int share_names(OTF2_Archive *a)
{
	if (a->size <= 1 || a->coll == NULL || a->coll->otf2_bcast == NULL)
		return 0;
	uint64_t count = a->name_count;
	if (a->coll->otf2_bcast(a->coll_data, a->coll_context, &count, 1, OTF2_TYPE_UINT64, 0) !=
	    OTF2_CALLBACK_SUCCESS || count > UINT32_MAX / 2)
		return -1;
	if (a->rank != 0) {
		uint64_t *names = realloc(a->names, (count ? count : 1) * sizeof *names);
		if (names == NULL)
			return -1; /* the ranks would disagree on the next call: no way back */
		a->names = names;
		a->name_count = (uint32_t)count;
		a->name_cap = (size_t)count;
	}
	if (count > 0 && a->coll->otf2_bcast(a->coll_data, a->coll_context, a->names,
					     (uint32_t)count, OTF2_TYPE_UINT64, 0) !=
			 OTF2_CALLBACK_SUCCESS)
		return -1;
	return 0;
}

/*
 * The locations this rank wrote, in its archive's definitions, named as
 * rank 0 defined them (global strings); a location rank 0 did not name
 * gets a string of its archive, "location <ref>". Called locked.
 */
static OTF2_ErrorCode define_locations(OTF2_Archive *a)
{
	if (share_names(a) < 0)
		say_once("names", "the collective callbacks failed: the locations of rank %u "
			 "are named after their ids", a->rank);
	weft_pallas_defs *d = weft_pallas_archive_defs(a->own);
	sort_pairs(a->names, a->name_count);
	for (uint32_t i = 0; i + 1 < a->mine_count; i += 2) {
		uint64_t loc = a->mine[i], id = a->mine[i + 1];
		uint64_t name = pair_value(a->names, a->name_count, loc, UINT32_MAX);
		int rc = 0;
		char text[48];
		if (name == UINT32_MAX) {
			snprintf(text, sizeof text, "location %llu", (unsigned long long)loc);
			name = UINT32_MAX - 1 - i / 2; /* clear of the program's own refs */
			rc = weft_pallas_add_string(d, (uint32_t)name, text);
		}
		char key[48];
		snprintf(key, sizeof key, "otf2.location.%llu", (unsigned long long)id);
		snprintf(text, sizeof text, "%llu", (unsigned long long)loc);
		if (rc == 0)
			rc = weft_pallas_add_metadata(d, key, text);
		if (rc == 0)
			rc = weft_pallas_add_location(d, (uint32_t)id, (uint32_t)name, a->rank);
		if (rc < 0)
			return a->failed = 1, failed("defining a location", rc);
	}
	return OTF2_SUCCESS;
}

/*
 * Every rank's (location, id) pairs on rank 0, through gather and bcast
 * only (EZTrace's gatherv callback crashed inside MPI_Gatherv on 10
 * ranks): the largest number of pairs on a rank is gathered then
 * broadcast, then every rank gives that many, padded with UINT64_MAX.
 * *all gets them (malloc'd on rank 0, NULL on the others), *count their
 * number of values. 0, or -1 when the callbacks failed. Without other
 * ranks, this rank's own.
 */
static int gather_ids(OTF2_Archive *a, uint64_t **all, uint32_t *count)
{
	*all = NULL;
	*count = 0;
	const OTF2_CollectiveCallbacks *cb = a->coll;
	if (a->size <= 1 || cb == NULL || cb->otf2_gather == NULL || cb->otf2_bcast == NULL) {
		*all = a->mine;
		*count = a->mine_count;
		return a->size <= 1 ? 0 : -1;
	}
	uint32_t mine = a->mine_count, most = 0;
	uint32_t *counts = a->rank == 0 ? calloc(a->size, sizeof *counts) : NULL;
	int rc = cb->otf2_gather(a->coll_data, a->coll_context, &mine, counts, 1, OTF2_TYPE_UINT32,
				 0) == OTF2_CALLBACK_SUCCESS ? 0 : -1;
	for (uint32_t r = 0; counts != NULL && r < a->size; r++)
		if (counts[r] > most)
			most = counts[r];
	free(counts);
	/* Every rank takes part in each call, whatever happened before. */
	if (cb->otf2_bcast(a->coll_data, a->coll_context, &most, 1, OTF2_TYPE_UINT32, 0) !=
	    OTF2_CALLBACK_SUCCESS)
		rc = -1;
	uint64_t n = (uint64_t)most * a->size;
	uint64_t *padded = calloc(most ? most : 1, sizeof *padded);
	uint64_t *pairs = a->rank == 0 && n < UINT32_MAX ? malloc((n ? n : 1) * sizeof *pairs)
							 : NULL;
	for (uint32_t i = 0; padded != NULL && i < most; i++)
		padded[i] = i < a->mine_count ? a->mine[i] : UINT64_MAX;
	if (rc == 0 && most > 0 && cb->otf2_gather(a->coll_data, a->coll_context, padded, pairs,
						   most, OTF2_TYPE_UINT64, 0) !=
			   OTF2_CALLBACK_SUCCESS)
		rc = -1;
	free(padded);
	if (rc < 0 || (a->rank == 0 && pairs == NULL)) {
		free(pairs);
		return -1;
	}
	*all = pairs;
	*count = (uint32_t)n;
	return 0;
}

/*
 * Rank 0 adds the groups to the main file: the members of groups of
 * locations (OTF2_GROUP_TYPE_LOCATIONS, COMM_LOCATIONS) become the
 * locations' Pallas ids (a location no rank wrote keeps its ref, cut to 32
 * bits); the others' members (ranks) stay. Called locked, on every rank.
 */
static OTF2_ErrorCode add_groups(OTF2_Archive *a)
{
	uint64_t *ids;
	uint32_t count;
	if (gather_ids(a, &ids, &count) < 0)
		say_once("ids", "the collective callbacks failed: the location members of groups "
			 "keep their OTF2 refs");
	sort_pairs(ids, count); /* the padding pairs (UINT64_MAX) go last */
	OTF2_ErrorCode e = OTF2_SUCCESS;
	for (uint32_t i = 0; a->rank == 0 && a->global != NULL && i < a->pending_count; i++) {
		struct pending_group *g = &a->pending[i];
		uint32_t *m = malloc((g->count ? g->count : 1) * sizeof *m);
		if (m == NULL) {
			e = OTF2_ERROR_MEM_FAULT;
			break;
		}
		int locations = g->type == OTF2_GROUP_TYPE_LOCATIONS ||
				g->type == OTF2_GROUP_TYPE_COMM_LOCATIONS;
		for (uint32_t k = 0; k < g->count; k++)
			m[k] = (uint32_t)(locations ? pair_value(ids, count, g->members[k],
								 g->members[k]) : g->members[k]);
		OTF2_ErrorCode c = failed("defining a group", weft_pallas_add_group(
			weft_pallas_global_defs(a->global), g->ref, g->name, g->type, g->paradigm, m,
			g->count));
		free(m);
		if (e == OTF2_SUCCESS)
			e = c;
	}
	if (ids != a->mine)
		free(ids);
	return e;
}

/*
 * Closes what is still open, writes this rank's archive file and, on
 * rank 0, the main file, then frees everything.
 */
EXPORT OTF2_ErrorCode OTF2_Archive_Close(OTF2_Archive *archive)
{
	if (archive == NULL)
		return OTF2_ERROR_INVALID_ARGUMENT;
	OTF2_ErrorCode e = OTF2_SUCCESS;
	lock(&archive->lock);
	while (archive->writers != NULL) {
		OTF2_EvtWriter *w = archive->writers;
		archive->writers = w->next;
		OTF2_ErrorCode c = close_writer(archive, w);
		if (e == OTF2_SUCCESS)
			e = c;
	}
	OTF2_ErrorCode g = add_groups(archive);
	if (e == OTF2_SUCCESS)
		e = g;
	if (archive->own != NULL) {
		OTF2_ErrorCode c = define_locations(archive);
		if (e == OTF2_SUCCESS)
			e = c;
		c = failed("writing the archive file", weft_pallas_archive_store(archive->own));
		if (e == OTF2_SUCCESS)
			e = c;
	}
	if (archive->global != NULL && archive->rank == 0) {
		weft_pallas_defs *d = weft_pallas_global_defs(archive->global);
		for (int i = 0; i < 3; i++)
			if (archive->about[i] != NULL && e == OTF2_SUCCESS)
				e = failed("adding metadata", weft_pallas_add_metadata(
						   d, about_keys[i], archive->about[i]));
		OTF2_ErrorCode c = failed("writing the main file",
					  weft_pallas_global_store(archive->global));
		if (e == OTF2_SUCCESS)
			e = c;
	}
	unlock(&archive->lock);
	if (archive->failed && e == OTF2_SUCCESS)
		e = OTF2_ERROR_INVALID_CALL;
	weft_pallas_global_free(archive->global);
	free(archive->global_defs);
	free(archive->names);
	for (uint32_t i = 0; i < archive->pending_count; i++)
		free(archive->pending[i].members);
	free(archive->pending);
	for (int i = 0; i < 3; i++)
		free(archive->about[i]);
	free(archive->mine);
	free(archive->path);
	free(archive->name);
	free(archive);
	return e;
}

/* ---- Attribute lists ------------------------------------------------------------------------ */

EXPORT OTF2_AttributeList *OTF2_AttributeList_New(void)
{
	return calloc(1, sizeof(OTF2_AttributeList));
}

EXPORT OTF2_ErrorCode OTF2_AttributeList_Delete(OTF2_AttributeList *list)
{
	free(list);
	return OTF2_SUCCESS;
}

EXPORT OTF2_ErrorCode OTF2_AttributeList_RemoveAllAttributes(OTF2_AttributeList *list)
{
	if (list == NULL)
		return OTF2_ERROR_INVALID_ARGUMENT;
	list->count = 0;
	return OTF2_SUCCESS;
}

EXPORT OTF2_ErrorCode OTF2_AttributeList_AddAttribute(OTF2_AttributeList *list,
						      OTF2_AttributeRef attribute, OTF2_Type type,
						      OTF2_AttributeValue value)
{
	if (list == NULL)
		return OTF2_ERROR_INVALID_ARGUMENT;
	for (uint32_t i = 0; i < list->count; i++)
		if (list->refs[i] == attribute)
			return OTF2_ERROR_DUPLICATE_MAPPING_TABLE; /* libotf2: one value per attribute */
	if (list->count == LIST_MAX) {
		say_once("attr-list", "an attribute list holds at most %d values here (Pallas's "
			 "limit): the others are left out", LIST_MAX);
		return OTF2_ERROR_MEM_ALLOC_FAILED;
	}
	list->refs[list->count] = attribute;
	list->types[list->count] = type;
	list->values[list->count] = value;
	list->count++;
	return OTF2_SUCCESS;
}

/* The Pallas list of an OTF2 one (types are OTF2's); NULL for none. */
static const weft_pallas_attrs *pallas_attrs(const OTF2_AttributeList *list,
					     weft_pallas_attrs *out)
{
	if (list == NULL || list->count == 0)
		return NULL;
	weft_pallas_attrs_init(out);
	for (uint32_t i = 0; i < list->count; i++) {
		uint32_t ref = list->refs[i];
		const OTF2_AttributeValue *v = &list->values[i];
		switch (list->types[i]) {
		case OTF2_TYPE_UINT8: weft_pallas_attrs_add_u8(out, ref, v->uint8); break;
		case OTF2_TYPE_UINT16: weft_pallas_attrs_add_u16(out, ref, v->uint16); break;
		case OTF2_TYPE_UINT32: weft_pallas_attrs_add_u32(out, ref, v->uint32); break;
		case OTF2_TYPE_UINT64: weft_pallas_attrs_add_u64(out, ref, v->uint64); break;
		case OTF2_TYPE_INT8: weft_pallas_attrs_add_i8(out, ref, v->int8); break;
		case OTF2_TYPE_INT16: weft_pallas_attrs_add_i16(out, ref, v->int16); break;
		case OTF2_TYPE_INT32: weft_pallas_attrs_add_i32(out, ref, v->int32); break;
		case OTF2_TYPE_INT64: weft_pallas_attrs_add_i64(out, ref, v->int64); break;
		case OTF2_TYPE_FLOAT: weft_pallas_attrs_add_float(out, ref, v->float32); break;
		case OTF2_TYPE_DOUBLE: weft_pallas_attrs_add_double(out, ref, v->float64); break;
		default: weft_pallas_attrs_add_ref(out, ref, list->types[i], v->uint32); break;
		}
	}
	return out;
}

/* ---- Event writers ------------------------------------------------------------------------- */

/*
 * The writer of `location`: a thread of this rank's archive. Pallas's
 * location ids are 32 bits and each archive's must follow each other;
 * OTF2's refs are 64 bits (EZTrace's: rank * 536870911 + thread). So the
 * thread's id is rank * 65536 + its place among this rank's writers, and
 * the OTF2 ref is the archive's metadata otf2.location.<id>.
 */
EXPORT OTF2_EvtWriter *OTF2_Archive_GetEvtWriter(OTF2_Archive *archive, OTF2_LocationRef location)
{
	if (archive == NULL)
		return NULL;
	lock(&archive->lock);
	OTF2_EvtWriter *w = archive->writers;
	while (w != NULL && w->location != location)
		w = w->next;
	uint64_t id = ((uint64_t)archive->rank << LOCAL_BITS) | (archive->mine_count / 2);
	if (w == NULL && (archive->rank >= 1u << (32 - LOCAL_BITS) ||
			  archive->mine_count / 2 >= 1u << LOCAL_BITS)) {
		say_once("location", "rank %u, location %u: Pallas numbers locations in 32 bits, "
			 "here %d for the rank and %d for its locations", archive->rank,
			 archive->mine_count / 2, 32 - LOCAL_BITS, LOCAL_BITS);
	} else if (w == NULL && ensure_output(archive) == OTF2_SUCCESS &&
		   (w = calloc(1, sizeof *w))) {
		uint64_t pair[2] = { location, id };
		int rc = weft_pallas_thread_create(archive->own, (uint32_t)id, &w->thread);
		if (rc < 0) {
			archive->failed = 1;
			failed("starting a thread", rc);
			free(w);
			w = NULL;
		} else if (push_u64(&archive->mine, &archive->mine_count, &archive->mine_cap,
				    pair, 2) < 0) {
			weft_pallas_thread_free(w->thread);
			free(w);
			w = NULL;
		} else {
			w->archive = archive;
			w->location = location;
			w->next = archive->writers;
			archive->writers = w;
		}
	}
	unlock(&archive->lock);
	return w;
}

EXPORT OTF2_ErrorCode OTF2_Archive_CloseEvtWriter(OTF2_Archive *archive, OTF2_EvtWriter *writer)
{
	if (archive == NULL || writer == NULL)
		return OTF2_ERROR_INVALID_ARGUMENT;
	lock(&archive->lock);
	OTF2_EvtWriter **p = &archive->writers;
	while (*p != NULL && *p != writer)
		p = &(*p)->next;
	OTF2_ErrorCode e = OTF2_ERROR_INVALID_ARGUMENT;
	if (*p != NULL) {
		*p = writer->next;
		e = close_writer(archive, writer);
	}
	unlock(&archive->lock);
	return e;
}

/*
 * The end of every record: the writer's failure said, the event counted,
 * the attribute list emptied (libotf2 empties it after each record).
 */
static OTF2_ErrorCode recorded(OTF2_EvtWriter *w, OTF2_AttributeList *list, int rc)
{
	if (list != NULL)
		list->count = 0;
	if (rc < 0) {
		w->archive->failed = 1;
		return failed("writing an event", rc);
	}
	w->events++;
	return OTF2_SUCCESS;
}

/* The records: each the Pallas record of the same name (weft/pallas.h). */
#define RECORD(call) do { \
	if (writer == NULL) \
		return OTF2_ERROR_INVALID_ARGUMENT; \
	weft_pallas_attrs pa; \
	const weft_pallas_attrs *a = pallas_attrs(attributeList, &pa); \
	return recorded(writer, attributeList, (call)); \
} while (0)
#define T writer->thread

EXPORT OTF2_ErrorCode OTF2_EvtWriter_Enter(OTF2_EvtWriter *writer,
					   OTF2_AttributeList *attributeList,
					   OTF2_TimeStamp time, OTF2_RegionRef region)
{
	RECORD(weft_pallas_record_enter(T, a, time, region));
}

EXPORT OTF2_ErrorCode OTF2_EvtWriter_Leave(OTF2_EvtWriter *writer,
					   OTF2_AttributeList *attributeList,
					   OTF2_TimeStamp time, OTF2_RegionRef region)
{
	RECORD(weft_pallas_record_leave(T, a, time, region));
}

EXPORT OTF2_ErrorCode OTF2_EvtWriter_MpiSend(OTF2_EvtWriter *writer,
					     OTF2_AttributeList *attributeList, OTF2_TimeStamp time,
					     uint32_t receiver, OTF2_CommRef communicator,
					     uint32_t msgTag, uint64_t msgLength)
{
	RECORD(weft_pallas_record_mpi_send(T, a, time, receiver, communicator, msgTag, msgLength));
}

EXPORT OTF2_ErrorCode OTF2_EvtWriter_MpiIsend(OTF2_EvtWriter *writer,
					      OTF2_AttributeList *attributeList, OTF2_TimeStamp time,
					      uint32_t receiver, OTF2_CommRef communicator,
					      uint32_t msgTag, uint64_t msgLength, uint64_t requestID)
{
	RECORD(weft_pallas_record_mpi_isend(T, a, time, receiver, communicator, msgTag, msgLength,
					    requestID));
}

EXPORT OTF2_ErrorCode OTF2_EvtWriter_MpiIsendComplete(OTF2_EvtWriter *writer,
						      OTF2_AttributeList *attributeList,
						      OTF2_TimeStamp time, uint64_t requestID)
{
	RECORD(weft_pallas_record_mpi_isend_complete(T, a, time, requestID));
}

EXPORT OTF2_ErrorCode OTF2_EvtWriter_MpiIrecvRequest(OTF2_EvtWriter *writer,
						     OTF2_AttributeList *attributeList,
						     OTF2_TimeStamp time, uint64_t requestID)
{
	RECORD(weft_pallas_record_mpi_irecv_request(T, a, time, requestID));
}

EXPORT OTF2_ErrorCode OTF2_EvtWriter_MpiRecv(OTF2_EvtWriter *writer,
					     OTF2_AttributeList *attributeList, OTF2_TimeStamp time,
					     uint32_t sender, OTF2_CommRef communicator,
					     uint32_t msgTag, uint64_t msgLength)
{
	RECORD(weft_pallas_record_mpi_recv(T, a, time, sender, communicator, msgTag, msgLength));
}

EXPORT OTF2_ErrorCode OTF2_EvtWriter_MpiIrecv(OTF2_EvtWriter *writer,
					      OTF2_AttributeList *attributeList, OTF2_TimeStamp time,
					      uint32_t sender, OTF2_CommRef communicator,
					      uint32_t msgTag, uint64_t msgLength, uint64_t requestID)
{
	RECORD(weft_pallas_record_mpi_irecv(T, a, time, sender, communicator, msgTag, msgLength,
					    requestID));
}

EXPORT OTF2_ErrorCode OTF2_EvtWriter_MpiCollectiveBegin(OTF2_EvtWriter *writer,
							OTF2_AttributeList *attributeList,
							OTF2_TimeStamp time)
{
	RECORD(weft_pallas_record_mpi_collective_begin(T, a, time));
}

EXPORT OTF2_ErrorCode OTF2_EvtWriter_MpiCollectiveEnd(OTF2_EvtWriter *writer,
						      OTF2_AttributeList *attributeList,
						      OTF2_TimeStamp time, OTF2_CollectiveOp collectiveOp,
						      OTF2_CommRef communicator, uint32_t root,
						      uint64_t sizeSent, uint64_t sizeReceived)
{
	RECORD(weft_pallas_record_mpi_collective_end(T, a, time, collectiveOp, communicator, root,
						     sizeSent, sizeReceived));
}

/*
 * Pallas 0.20's thread records carry less than OTF2's: the paradigm of
 * fork, join and locks, the acquisition order, the team and the creating
 * thread of tasks and the contingent of thread begin/end are not kept
 * (docs/otf2-pallas.md).
 */
EXPORT OTF2_ErrorCode OTF2_EvtWriter_ThreadFork(OTF2_EvtWriter *writer,
						OTF2_AttributeList *attributeList,
						OTF2_TimeStamp time, OTF2_Paradigm model,
						uint32_t numberOfRequestedThreads)
{
	(void)model;
	RECORD(weft_pallas_record_thread_fork(T, a, time, numberOfRequestedThreads));
}

EXPORT OTF2_ErrorCode OTF2_EvtWriter_ThreadJoin(OTF2_EvtWriter *writer,
						OTF2_AttributeList *attributeList,
						OTF2_TimeStamp time, OTF2_Paradigm model)
{
	(void)model;
	RECORD(weft_pallas_record_thread_join(T, a, time));
}

EXPORT OTF2_ErrorCode OTF2_EvtWriter_ThreadTeamBegin(OTF2_EvtWriter *writer,
						     OTF2_AttributeList *attributeList,
						     OTF2_TimeStamp time, OTF2_CommRef threadTeam)
{
	(void)threadTeam;
	RECORD(weft_pallas_record_thread_team_begin(T, a, time));
}

EXPORT OTF2_ErrorCode OTF2_EvtWriter_ThreadTeamEnd(OTF2_EvtWriter *writer,
						   OTF2_AttributeList *attributeList,
						   OTF2_TimeStamp time, OTF2_CommRef threadTeam)
{
	(void)threadTeam;
	RECORD(weft_pallas_record_thread_team_end(T, a, time));
}

EXPORT OTF2_ErrorCode OTF2_EvtWriter_ThreadAcquireLock(OTF2_EvtWriter *writer,
						       OTF2_AttributeList *attributeList,
						       OTF2_TimeStamp time, OTF2_Paradigm model,
						       uint32_t lockID, uint32_t acquisitionOrder)
{
	(void)model; (void)acquisitionOrder;
	RECORD(weft_pallas_record_thread_acquire_lock(T, a, time, lockID));
}

EXPORT OTF2_ErrorCode OTF2_EvtWriter_ThreadReleaseLock(OTF2_EvtWriter *writer,
						       OTF2_AttributeList *attributeList,
						       OTF2_TimeStamp time, OTF2_Paradigm model,
						       uint32_t lockID, uint32_t acquisitionOrder)
{
	(void)model; (void)acquisitionOrder;
	RECORD(weft_pallas_record_thread_release_lock(T, a, time, lockID));
}

EXPORT OTF2_ErrorCode OTF2_EvtWriter_ThreadTaskCreate(OTF2_EvtWriter *writer,
						      OTF2_AttributeList *attributeList,
						      OTF2_TimeStamp time, OTF2_CommRef threadTeam,
						      uint32_t creatingThread, uint32_t generationNumber)
{
	(void)threadTeam; (void)creatingThread; (void)generationNumber;
	RECORD(weft_pallas_record_thread_task_create(T, a, time));
}

EXPORT OTF2_ErrorCode OTF2_EvtWriter_ThreadTaskSwitch(OTF2_EvtWriter *writer,
						      OTF2_AttributeList *attributeList,
						      OTF2_TimeStamp time, OTF2_CommRef threadTeam,
						      uint32_t creatingThread, uint32_t generationNumber)
{
	(void)threadTeam; (void)creatingThread; (void)generationNumber;
	RECORD(weft_pallas_record_thread_task_switch(T, a, time));
}

EXPORT OTF2_ErrorCode OTF2_EvtWriter_ThreadTaskComplete(OTF2_EvtWriter *writer,
							OTF2_AttributeList *attributeList,
							OTF2_TimeStamp time, OTF2_CommRef threadTeam,
							uint32_t creatingThread,
							uint32_t generationNumber)
{
	(void)threadTeam; (void)creatingThread; (void)generationNumber;
	RECORD(weft_pallas_record_thread_task_complete(T, a, time));
}

EXPORT OTF2_ErrorCode OTF2_EvtWriter_ThreadBegin(OTF2_EvtWriter *writer,
						 OTF2_AttributeList *attributeList,
						 OTF2_TimeStamp time, OTF2_CommRef threadContingent,
						 uint64_t sequenceCount)
{
	(void)threadContingent; (void)sequenceCount;
	RECORD(weft_pallas_record_thread_begin(T, a, time));
}

EXPORT OTF2_ErrorCode OTF2_EvtWriter_ThreadEnd(OTF2_EvtWriter *writer,
					       OTF2_AttributeList *attributeList,
					       OTF2_TimeStamp time, OTF2_CommRef threadContingent,
					       uint64_t sequenceCount)
{
	(void)threadContingent; (void)sequenceCount;
	RECORD(weft_pallas_record_thread_end(T, a, time));
}

/* OpenMP's records (deprecated in OTF2 for the Thread* ones; Pallas keeps them). */
EXPORT OTF2_ErrorCode OTF2_EvtWriter_OmpFork(OTF2_EvtWriter *writer,
					     OTF2_AttributeList *attributeList, OTF2_TimeStamp time,
					     uint32_t numberOfRequestedThreads)
{
	RECORD(weft_pallas_record_omp_fork(T, a, time, numberOfRequestedThreads));
}

EXPORT OTF2_ErrorCode OTF2_EvtWriter_OmpJoin(OTF2_EvtWriter *writer,
					     OTF2_AttributeList *attributeList, OTF2_TimeStamp time)
{
	RECORD(weft_pallas_record_omp_join(T, a, time));
}

EXPORT OTF2_ErrorCode OTF2_EvtWriter_OmpAcquireLock(OTF2_EvtWriter *writer,
						    OTF2_AttributeList *attributeList,
						    OTF2_TimeStamp time, uint32_t lockID,
						    uint32_t acquisitionOrder)
{
	(void)acquisitionOrder;
	RECORD(weft_pallas_record_omp_acquire_lock(T, a, time, lockID));
}

EXPORT OTF2_ErrorCode OTF2_EvtWriter_OmpReleaseLock(OTF2_EvtWriter *writer,
						    OTF2_AttributeList *attributeList,
						    OTF2_TimeStamp time, uint32_t lockID,
						    uint32_t acquisitionOrder)
{
	(void)acquisitionOrder;
	RECORD(weft_pallas_record_omp_release_lock(T, a, time, lockID));
}

EXPORT OTF2_ErrorCode OTF2_EvtWriter_OmpTaskCreate(OTF2_EvtWriter *writer,
						   OTF2_AttributeList *attributeList,
						   OTF2_TimeStamp time, uint64_t taskID)
{
	RECORD(weft_pallas_record_omp_task_create(T, a, time, taskID));
}

EXPORT OTF2_ErrorCode OTF2_EvtWriter_OmpTaskSwitch(OTF2_EvtWriter *writer,
						   OTF2_AttributeList *attributeList,
						   OTF2_TimeStamp time, uint64_t taskID)
{
	RECORD(weft_pallas_record_omp_task_switch(T, a, time, taskID));
}

EXPORT OTF2_ErrorCode OTF2_EvtWriter_OmpTaskComplete(OTF2_EvtWriter *writer,
						     OTF2_AttributeList *attributeList,
						     OTF2_TimeStamp time, uint64_t taskID)
{
	RECORD(weft_pallas_record_omp_task_complete(T, a, time, taskID));
}

/*
 * Records Pallas 0.20 does not have (I/O, metrics, parameters, request
 * tests and cancellations): said once per kind, then accepted and left
 * out, so that the program goes on.
 */
static OTF2_ErrorCode left_out(OTF2_EvtWriter *writer, OTF2_AttributeList *list,
			       const char *kind, const char *call)
{
	say_once(kind, "%s: Pallas 0.20 has no such record; these events are left out", call);
	if (list != NULL)
		list->count = 0;
	return writer == NULL ? OTF2_ERROR_INVALID_ARGUMENT : OTF2_SUCCESS;
}

static OTF2_ErrorCode io_left_out(OTF2_EvtWriter *writer, OTF2_AttributeList *list,
				  const char *call)
{
	return left_out(writer, list, "io", call);
}

EXPORT OTF2_ErrorCode OTF2_EvtWriter_Metric(OTF2_EvtWriter *writer,
					    OTF2_AttributeList *attributeList, OTF2_TimeStamp time,
					    OTF2_MetricRef metric, uint8_t numberOfMetrics,
					    const OTF2_Type *typeIDs,
					    const OTF2_MetricValue *metricValues)
{
	(void)time; (void)metric; (void)numberOfMetrics; (void)typeIDs; (void)metricValues;
	return left_out(writer, attributeList, "metric", "OTF2_EvtWriter_Metric");
}

EXPORT OTF2_ErrorCode OTF2_EvtWriter_ParameterString(OTF2_EvtWriter *writer,
						     OTF2_AttributeList *attributeList,
						     OTF2_TimeStamp time, OTF2_ParameterRef parameter,
						     OTF2_StringRef string)
{
	(void)time; (void)parameter; (void)string;
	return left_out(writer, attributeList, "parameter", "OTF2_EvtWriter_ParameterString");
}

EXPORT OTF2_ErrorCode OTF2_EvtWriter_ParameterInt(OTF2_EvtWriter *writer,
						  OTF2_AttributeList *attributeList,
						  OTF2_TimeStamp time, OTF2_ParameterRef parameter,
						  int64_t value)
{
	(void)time; (void)parameter; (void)value;
	return left_out(writer, attributeList, "parameter", "OTF2_EvtWriter_ParameterInt");
}

EXPORT OTF2_ErrorCode OTF2_EvtWriter_ParameterUnsignedInt(OTF2_EvtWriter *writer,
							  OTF2_AttributeList *attributeList,
							  OTF2_TimeStamp time,
							  OTF2_ParameterRef parameter, uint64_t value)
{
	(void)time; (void)parameter; (void)value;
	return left_out(writer, attributeList, "parameter",
			"OTF2_EvtWriter_ParameterUnsignedInt");
}

EXPORT OTF2_ErrorCode OTF2_EvtWriter_MpiRequestTest(OTF2_EvtWriter *writer,
						    OTF2_AttributeList *attributeList,
						    OTF2_TimeStamp time, uint64_t requestID)
{
	(void)time; (void)requestID;
	return left_out(writer, attributeList, "request", "OTF2_EvtWriter_MpiRequestTest");
}

EXPORT OTF2_ErrorCode OTF2_EvtWriter_MpiRequestCancelled(OTF2_EvtWriter *writer,
							 OTF2_AttributeList *attributeList,
							 OTF2_TimeStamp time, uint64_t requestID)
{
	(void)time; (void)requestID;
	return left_out(writer, attributeList, "request", "OTF2_EvtWriter_MpiRequestCancelled");
}

EXPORT OTF2_ErrorCode OTF2_EvtWriter_IoCreateHandle(OTF2_EvtWriter *writer,
						    OTF2_AttributeList *attributeList,
						    OTF2_TimeStamp time, OTF2_IoHandleRef handle,
						    OTF2_IoAccessMode mode,
						    OTF2_IoCreationFlag creationFlags,
						    OTF2_IoStatusFlag statusFlags)
{
	(void)time; (void)handle; (void)mode; (void)creationFlags; (void)statusFlags;
	return io_left_out(writer, attributeList, "OTF2_EvtWriter_IoCreateHandle");
}

EXPORT OTF2_ErrorCode OTF2_EvtWriter_IoDestroyHandle(OTF2_EvtWriter *writer,
						     OTF2_AttributeList *attributeList,
						     OTF2_TimeStamp time, OTF2_IoHandleRef handle)
{
	(void)time; (void)handle;
	return io_left_out(writer, attributeList, "OTF2_EvtWriter_IoDestroyHandle");
}

EXPORT OTF2_ErrorCode OTF2_EvtWriter_IoOperationBegin(OTF2_EvtWriter *writer,
						      OTF2_AttributeList *attributeList,
						      OTF2_TimeStamp time, OTF2_IoHandleRef handle,
						      OTF2_IoOperationMode mode,
						      OTF2_IoOperationFlag operationFlags,
						      uint64_t bytesRequest, uint64_t matchingId)
{
	(void)time; (void)handle; (void)mode; (void)operationFlags; (void)bytesRequest;
	(void)matchingId;
	return io_left_out(writer, attributeList, "OTF2_EvtWriter_IoOperationBegin");
}

EXPORT OTF2_ErrorCode OTF2_EvtWriter_IoOperationComplete(OTF2_EvtWriter *writer,
							 OTF2_AttributeList *attributeList,
							 OTF2_TimeStamp time, OTF2_IoHandleRef handle,
							 uint64_t bytesResult, uint64_t matchingId)
{
	(void)time; (void)handle; (void)bytesResult; (void)matchingId;
	return io_left_out(writer, attributeList, "OTF2_EvtWriter_IoOperationComplete");
}

EXPORT OTF2_ErrorCode OTF2_EvtWriter_IoSeek(OTF2_EvtWriter *writer,
					    OTF2_AttributeList *attributeList, OTF2_TimeStamp time,
					    OTF2_IoHandleRef handle, int64_t offsetRequest,
					    OTF2_IoSeekOption whence, uint64_t offsetResult)
{
	(void)time; (void)handle; (void)offsetRequest; (void)whence; (void)offsetResult;
	return io_left_out(writer, attributeList, "OTF2_EvtWriter_IoSeek");
}

EXPORT OTF2_ErrorCode OTF2_EvtWriter_GetNumberOfEvents(OTF2_EvtWriter *writer,
						       uint64_t *numberOfEvents)
{
	if (writer == NULL || numberOfEvents == NULL)
		return OTF2_ERROR_INVALID_ARGUMENT;
	*numberOfEvents = writer->events;
	return OTF2_SUCCESS;
}

/* ---- Definition writers ------------------------------------------------------------------- */

/* Rank 0's writer of the global definitions (libotf2 gives none to the other ranks). */
EXPORT OTF2_GlobalDefWriter *OTF2_Archive_GetGlobalDefWriter(OTF2_Archive *archive)
{
	if (archive == NULL || archive->rank != 0)
		return NULL;
	lock(&archive->lock);
	OTF2_GlobalDefWriter *g = archive->global_defs;
	if (g == NULL && ensure_output(archive) == OTF2_SUCCESS &&
	    (g = calloc(1, sizeof *g)) != NULL) {
		g->archive = archive;
		archive->global_defs = g;
	}
	unlock(&archive->lock);
	return g;
}

/* The definitions stay with the archive until it is closed. */
EXPORT OTF2_ErrorCode OTF2_Archive_CloseGlobalDefWriter(OTF2_Archive *archive,
							OTF2_GlobalDefWriter *writer)
{
	return archive == NULL || writer != archive->global_defs ? OTF2_ERROR_INVALID_ARGUMENT
								  : OTF2_SUCCESS;
}

/* Local definitions: EZTrace writes none; the writer holds nothing. */
EXPORT OTF2_DefWriter *OTF2_Archive_GetDefWriter(OTF2_Archive *archive, OTF2_LocationRef location)
{
	if (archive == NULL)
		return NULL;
	OTF2_DefWriter *d = calloc(1, sizeof *d);
	if (d != NULL) {
		d->archive = archive;
		d->location = location;
	}
	return d;
}

EXPORT OTF2_ErrorCode OTF2_Archive_CloseDefWriter(OTF2_Archive *archive, OTF2_DefWriter *writer)
{
	if (archive == NULL || writer == NULL)
		return OTF2_ERROR_INVALID_ARGUMENT;
	free(writer);
	return OTF2_SUCCESS;
}

/* The main file's definitions, locked while one is added. */
#define GLOBAL_DEF(what, call) do { \
	if (writerHandle == NULL) \
		return OTF2_ERROR_INVALID_ARGUMENT; \
	OTF2_Archive *a_ = writerHandle->archive; \
	lock(&a_->lock); \
	weft_pallas_defs *d = weft_pallas_global_defs(a_->global); \
	int rc_ = (call); \
	unlock(&a_->lock); \
	return failed(what, rc_); \
} while (0)

EXPORT OTF2_ErrorCode OTF2_GlobalDefWriter_WriteString(OTF2_GlobalDefWriter *writerHandle,
						       OTF2_StringRef self, const char *string)
{
	GLOBAL_DEF("defining a string", weft_pallas_add_string(d, self, string ? string : ""));
}

EXPORT OTF2_ErrorCode OTF2_GlobalDefWriter_WriteRegion(OTF2_GlobalDefWriter *writerHandle,
						       OTF2_RegionRef self, OTF2_StringRef name,
						       OTF2_StringRef canonicalName,
						       OTF2_StringRef description,
						       OTF2_RegionRole regionRole, OTF2_Paradigm paradigm,
						       OTF2_RegionFlag regionFlags,
						       OTF2_StringRef sourceFile,
						       uint32_t beginLineNumber, uint32_t endLineNumber)
{
	(void)canonicalName; (void)description; (void)regionRole; (void)paradigm;
	(void)regionFlags; (void)sourceFile; (void)beginLineNumber; (void)endLineNumber;
	GLOBAL_DEF("defining a region", weft_pallas_add_region(d, self, name));
}

EXPORT OTF2_ErrorCode OTF2_GlobalDefWriter_WriteAttribute(OTF2_GlobalDefWriter *writerHandle,
							  OTF2_AttributeRef self, OTF2_StringRef name,
							  OTF2_StringRef description, OTF2_Type type)
{
	GLOBAL_DEF("defining an attribute",
		   weft_pallas_add_attribute(d, self, name, description, type));
}

/* 1 when group `ref` was defined already (it is kept for Close). Called locked. */
static int group_seen(const OTF2_Archive *a, uint32_t ref)
{
	for (uint32_t i = 0; i < a->pending_count; i++)
		if (a->pending[i].ref == ref)
			return 1;
	return 0;
}

/*
 * A group, kept until Close: its members are location refs (groups of
 * locations) that become Pallas ids there. EZTrace 2.0 defines group 0
 * twice (MPI_COMM_WORLD's locations, then its ranks): the first is kept,
 * as otf2-print and weft's OTF2 reader do, with a note (Pallas's own OTF2
 * library aborts there).
 */
EXPORT OTF2_ErrorCode OTF2_GlobalDefWriter_WriteGroup(OTF2_GlobalDefWriter *writerHandle,
						      OTF2_GroupRef self, OTF2_StringRef name,
						      OTF2_GroupType groupType, OTF2_Paradigm paradigm,
						      OTF2_GroupFlag groupFlags,
						      uint32_t numberOfMembers, const uint64_t *members)
{
	(void)groupFlags;
	if (writerHandle == NULL || (numberOfMembers > 0 && members == NULL))
		return OTF2_ERROR_INVALID_ARGUMENT;
	OTF2_Archive *a = writerHandle->archive;
	struct pending_group g = { self, name, groupType, paradigm, NULL, numberOfMembers };
	g.members = malloc((numberOfMembers ? numberOfMembers : 1) * sizeof *g.members);
	if (g.members == NULL)
		return OTF2_ERROR_MEM_FAULT;
	memcpy(g.members, members, (size_t)numberOfMembers * sizeof *members);
	lock(&a->lock);
	int seen = group_seen(a, self);
	int rc = seen ? 0 : weft__array_grow((void **)&a->pending, &a->pending_cap,
					     (size_t)a->pending_count + 1, sizeof *a->pending);
	if (!seen && rc == 0)
		a->pending[a->pending_count++] = g;
	unlock(&a->lock);
	if (seen || rc < 0)
		free(g.members);
	if (seen)
		say_once("group", "group %u is defined more than once; the first definition is "
			 "kept", self);
	return rc < 0 ? OTF2_ERROR_MEM_FAULT : OTF2_SUCCESS;
}

EXPORT OTF2_ErrorCode OTF2_GlobalDefWriter_WriteComm(OTF2_GlobalDefWriter *writerHandle,
						     OTF2_CommRef self, OTF2_StringRef name,
						     OTF2_GroupRef group, OTF2_CommRef parent,
						     OTF2_CommFlag flags)
{
	(void)flags;
	GLOBAL_DEF("defining a communicator",
		   weft_pallas_add_comm(d, self, name, group,
					parent == OTF2_UNDEFINED_COMM ? WEFT_PALLAS_NO_PARENT : parent));
}

EXPORT OTF2_ErrorCode OTF2_GlobalDefWriter_WriteLocationGroup(OTF2_GlobalDefWriter *writerHandle,
							      OTF2_LocationGroupRef self,
							      OTF2_StringRef name,
							      OTF2_LocationGroupType type,
							      OTF2_SystemTreeNodeRef systemTreeParent,
							      OTF2_LocationGroupRef creatingLocationGroup)
{
	(void)type; (void)systemTreeParent; (void)creatingLocationGroup;
	GLOBAL_DEF("defining a location group",
		   weft_pallas_add_location_group(d, self, name, WEFT_PALLAS_NO_PARENT));
}

/*
 * A location's name, kept for Archive_Close: each rank puts its own
 * locations in its archive, named after what rank 0 defined here.
 */
EXPORT OTF2_ErrorCode OTF2_GlobalDefWriter_WriteLocation(OTF2_GlobalDefWriter *writerHandle,
							 OTF2_LocationRef self, OTF2_StringRef name,
							 OTF2_LocationType locationType,
							 uint64_t numberOfEvents,
							 OTF2_LocationGroupRef locationGroup)
{
	(void)locationType; (void)numberOfEvents; (void)locationGroup;
	if (writerHandle == NULL)
		return OTF2_ERROR_INVALID_ARGUMENT;
	OTF2_Archive *a = writerHandle->archive;
	uint64_t pair[2] = { self, name };
	lock(&a->lock);
	int rc = push_u64(&a->names, &a->name_count, &a->name_cap, pair, 2);
	unlock(&a->lock);
	return rc < 0 ? OTF2_ERROR_MEM_FAULT : OTF2_SUCCESS;
}

/* Pallas keeps no clock: its timestamps are ns. Another resolution is said. */
EXPORT OTF2_ErrorCode OTF2_GlobalDefWriter_WriteClockProperties(OTF2_GlobalDefWriter *writerHandle,
								uint64_t timerResolution,
								uint64_t globalOffset,
								uint64_t traceLength,
								uint64_t realtimeTimestamp)
{
	(void)globalOffset; (void)traceLength; (void)realtimeTimestamp;
	if (writerHandle == NULL)
		return OTF2_ERROR_INVALID_ARGUMENT;
	if (timerResolution != 1000000000u)
		say_once("clock", "the clock ticks %llu times a second: Pallas's timestamps are "
			 "ns; the events keep the ticks", (unsigned long long)timerResolution);
	return OTF2_SUCCESS;
}

/* Pallas has no system tree: the location groups are its roots. */
EXPORT OTF2_ErrorCode OTF2_GlobalDefWriter_WriteSystemTreeNode(OTF2_GlobalDefWriter *writerHandle,
							       OTF2_SystemTreeNodeRef self,
							       OTF2_StringRef name,
							       OTF2_StringRef className,
							       OTF2_SystemTreeNodeRef parent)
{
	(void)self; (void)name; (void)className; (void)parent;
	return writerHandle == NULL ? OTF2_ERROR_INVALID_ARGUMENT : OTF2_SUCCESS;
}

/* The definitions of records Pallas 0.20 does not have: accepted, not kept. */
EXPORT OTF2_ErrorCode OTF2_GlobalDefWriter_WriteParameter(OTF2_GlobalDefWriter *writerHandle,
							  OTF2_ParameterRef self, OTF2_StringRef name,
							  OTF2_ParameterType parameterType)
{
	(void)self; (void)name; (void)parameterType;
	return writerHandle == NULL ? OTF2_ERROR_INVALID_ARGUMENT : OTF2_SUCCESS;
}

EXPORT OTF2_ErrorCode OTF2_GlobalDefWriter_WriteMetricMember(OTF2_GlobalDefWriter *writerHandle,
							     OTF2_MetricMemberRef self,
							     OTF2_StringRef name,
							     OTF2_StringRef description,
							     OTF2_MetricType metricType,
							     OTF2_MetricMode metricMode,
							     OTF2_Type valueType, OTF2_Base base,
							     int64_t exponent, OTF2_StringRef unit)
{
	(void)self; (void)name; (void)description; (void)metricType; (void)metricMode;
	(void)valueType; (void)base; (void)exponent; (void)unit;
	return writerHandle == NULL ? OTF2_ERROR_INVALID_ARGUMENT : OTF2_SUCCESS;
}

EXPORT OTF2_ErrorCode OTF2_GlobalDefWriter_WriteMetricClass(OTF2_GlobalDefWriter *writerHandle,
							    OTF2_MetricRef self,
							    uint8_t numberOfMetrics,
							    const OTF2_MetricMemberRef *metricMembers,
							    OTF2_MetricOccurrence metricOccurrence,
							    OTF2_RecorderKind recorderKind)
{
	(void)self; (void)numberOfMetrics; (void)metricMembers; (void)metricOccurrence;
	(void)recorderKind;
	return writerHandle == NULL ? OTF2_ERROR_INVALID_ARGUMENT : OTF2_SUCCESS;
}

EXPORT OTF2_ErrorCode OTF2_GlobalDefWriter_WriteParadigm(OTF2_GlobalDefWriter *writerHandle,
							 OTF2_Paradigm paradigm, OTF2_StringRef name,
							 OTF2_ParadigmClass paradigmClass)
{
	(void)paradigm; (void)name; (void)paradigmClass;
	return writerHandle == NULL ? OTF2_ERROR_INVALID_ARGUMENT : OTF2_SUCCESS;
}

/* I/O definitions go with the I/O records, which Pallas 0.20 does not have. */
EXPORT OTF2_ErrorCode OTF2_GlobalDefWriter_WriteIoHandle(OTF2_GlobalDefWriter *writerHandle,
							 OTF2_IoHandleRef self, OTF2_StringRef name,
							 OTF2_IoFileRef file,
							 OTF2_IoParadigmRef ioParadigm,
							 OTF2_IoHandleFlag ioHandleFlags,
							 OTF2_CommRef comm, OTF2_IoHandleRef parent)
{
	(void)self; (void)name; (void)file; (void)ioParadigm; (void)ioHandleFlags; (void)comm;
	(void)parent;
	return writerHandle == NULL ? OTF2_ERROR_INVALID_ARGUMENT : OTF2_SUCCESS;
}

EXPORT OTF2_ErrorCode OTF2_GlobalDefWriter_WriteIoParadigm(OTF2_GlobalDefWriter *writerHandle,
							   OTF2_IoParadigmRef self,
							   OTF2_StringRef identification,
							   OTF2_StringRef name,
							   OTF2_IoParadigmClass ioParadigmClass,
							   OTF2_IoParadigmFlag ioParadigmFlags,
							   uint8_t numberOfProperties,
							   const OTF2_IoParadigmProperty *properties,
							   const OTF2_Type *types,
							   const OTF2_AttributeValue *values)
{
	(void)self; (void)identification; (void)name; (void)ioParadigmClass;
	(void)ioParadigmFlags; (void)numberOfProperties; (void)properties; (void)types;
	(void)values;
	return writerHandle == NULL ? OTF2_ERROR_INVALID_ARGUMENT : OTF2_SUCCESS;
}

/* ---- Errors --------------------------------------------------------------------------------- */

EXPORT const char *OTF2_Error_GetName(OTF2_ErrorCode errorCode)
{
	switch (errorCode) {
	case OTF2_SUCCESS: return "SUCCESS";
	case OTF2_ERROR_INVALID_ARGUMENT: return "INVALID_ARGUMENT";
	case OTF2_ERROR_INVALID_CALL: return "INVALID_CALL";
	case OTF2_ERROR_MEM_FAULT: return "MEM_FAULT";
	case OTF2_ERROR_MEM_ALLOC_FAILED: return "MEM_ALLOC_FAILED";
	case OTF2_ERROR_COLLECTIVE_CALLBACK: return "COLLECTIVE_CALLBACK";
	case OTF2_ERROR_DUPLICATE_MAPPING_TABLE: return "DUPLICATE_MAPPING_TABLE";
	default: return "ERROR";
	}
}

EXPORT const char *OTF2_Error_GetDescription(OTF2_ErrorCode errorCode)
{
	switch (errorCode) {
	case OTF2_SUCCESS: return "Operation was successful";
	case OTF2_ERROR_INVALID_ARGUMENT: return "Invalid argument";
	case OTF2_ERROR_INVALID_CALL: return "The Pallas writer failed (its message is on "
					      "stderr)";
	case OTF2_ERROR_MEM_FAULT: return "Out of memory";
	case OTF2_ERROR_MEM_ALLOC_FAILED: return "The attribute list is full";
	case OTF2_ERROR_COLLECTIVE_CALLBACK: return "A collective callback failed";
	case OTF2_ERROR_DUPLICATE_MAPPING_TABLE: return "The attribute is in the list already";
	default: return "Error of weft's OTF2 library on Pallas";
	}
}
