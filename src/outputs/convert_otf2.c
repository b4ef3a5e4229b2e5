/* SPDX-License-Identifier: MIT */
/*
 * outputs/convert_otf2.c - weft_convert() to otf2 (`weft convert TRACE -t
 * otf2 -o DIR`): any trace weft reads becomes an OTF2 archive written
 * through Debian's libotf2: DIR/traces.otf2 (the anchor), DIR/traces.def
 * (global definitions) and DIR/traces/<location>.evt and .def.
 *
 * The conversion is the one of `-t pallas` (convert_pallas.c): Pallas's
 * data model is OTF2's, so this file is only a target that stores it
 * (conv_target, convert_pallas.h), mapped as docs/convert-otf2.md says:
 *
 *   - strings, regions (one per span name, role "function", paradigm
 *     "user") and typed attributes are OTF2 definitions with the same
 *     refs;
 *   - each location group of the conversion (the parent node of the
 *     streams, an ovni process, a Heph stream...) that holds locations is
 *     an OTF2 location group of type process; one that holds other groups
 *     is a system tree node (class: the node's kind), and so is the
 *     machine at the root, named after the trace; the node's path, kind
 *     and metadata are properties of the group ("weft.path"...);
 *   - each stream is a location (a CPU thread) named after its node, its
 *     path as the location property "weft.path";
 *   - Enter and Leave are OTF2's; weft's MPI records (of OTF2 and Pallas
 *     sources: MPI_Send, MPI_Irecv, MPI_CollectiveEnd...) are OTF2's with
 *     their peers, communicators (the source's numbers and names, over
 *     every rank: one rank per location group), tags, lengths, requests;
 *     any other event that is no span is a ParameterString record of the
 *     string parameter "weft.event" whose value is its name (OTF2 has no
 *     record for a named point event);
 *   - timestamps are ns: the clock's resolution is 1 GHz, its offset the
 *     first event's time; the source's metadata are anchor properties
 *     WEFT::SOURCE_FORMAT, WEFT::SOURCE_PATH, WEFT::SOURCE_METADATA.
 *
 * Memory: one event writer open at a time, of at most 4 chunks of 1 MiB
 * (allocate_chunk); the definitions are kept until the end, when the
 * global definitions are written (their number grows with the distinct
 * names, not with the events).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <otf2/otf2.h>

#include "core/internal.h"
#include "core/otf2_common.h"
#include "outputs/convert_pallas.h"
#include "outputs/outdir.h"
#include "util/strtab.h"

#define ARCHIVE_NAME "traces"
#define EVENT_CHUNK (1u << 20)
#define DEF_CHUNK (4u << 20)

/* An attribute definition. */
typedef struct out_attribute {
	uint32_t ref, name;
	uint8_t type;
} out_attribute;

/* libotf2's freed chunks, kept for the next writer (allocate_chunk). */
#define CHUNKS_MAX 4              /* chunks of one writer at most */
#define POOL_MAX (CHUNKS_MAX + 1) /* an event writer's chunks, a definition chunk */
typedef struct chunk_pool {
	void *chunks[POOL_MAX];
	uint64_t sizes[POOL_MAX];
	unsigned count;
} chunk_pool;

/* A location group of the conversion. */
typedef struct out_group {
	uint32_t name;
	uint32_t group_ref;  /* its OTF2 location group (when it holds locations) */
	uint32_t node_ref;   /* its system tree node (when it holds groups) */
	uint32_t parent;     /* NONE: under the machine */
	uint32_t locations;  /* how many it holds */
	uint32_t children;   /* groups under it */
	uint32_t kind;       /* string ref of its "weft.kind", or NONE */
} out_group;

/* A location: its group, name and number of events. */
typedef struct out_location {
	uint32_t id, group, name;
	uint64_t events;
	uint32_t path;       /* string ref of the source stream's path */
	int written;         /* its events were written here (a part: to move) */
} out_location;

/* A property of a group or of the trace (key and value copied). */
typedef struct out_property {
	uint32_t group;      /* NONE: the trace's */
	uint32_t key, value; /* string refs (the conversion's interned texts) */
} out_property;

/* The OTF2 target's state (conv.target_data). */
typedef struct otf2_out {
	OTF2_Archive *archive;
	OTF2_AttributeList *attributes;
	const char **strings;      /* ref -> the conversion's interned text */
	uint32_t string_count;
	size_t string_cap;
	uint32_t *regions;         /* OTF2 region ref -> its name (the conversion's region ref) */
	uint32_t region_count;
	size_t region_cap;
	uint32_t *region_of;       /* string ref -> OTF2 region ref (refs of a kind are dense) */
	size_t region_of_cap;
	out_attribute *attrs;
	uint32_t attr_count;
	size_t attr_cap;
	out_group *groups;
	uint32_t group_count;
	size_t group_cap;
	out_location *locations;
	uint32_t location_count;
	size_t location_cap;
	uint32_t *location_slots;  /* by id: a location's index + 1, 0 for none */
	size_t location_slot_count; /* a power of two, twice the locations or more */
	out_property *properties;
	uint32_t property_count;
	size_t property_cap;
	uint32_t parameter_name;   /* string ref of "weft.event", NONE until used */
	uint32_t path_key;         /* string ref of "weft.path", NONE until used */
	char *machine;             /* the system tree's root: the trace's file name */
	uint64_t first_time, last_time;
	int evt_files_open;
	uint8_t *located;          /* per selected stream: its location is defined */
	char **comm_names;         /* MPI communicators used, by the source's number */
	uint32_t *comm_named_at;   /* the selected stream whose event named it, NONE */
	uint32_t comm_count;       /* 1 + the largest number used, 0: no MPI record */
	int parameter_used;        /* a point event was written ("weft.event") */
	chunk_pool pool;           /* libotf2's chunks, kept for the next writer */
} otf2_out;

#define COMMS_MAX 65536            /* larger communicator numbers: point events */

/* Room for one more item in table `field` of `o` (core's weft__array_grow); 0 or < 0. */
#define GROW(o, field, count, cap) weft__array_grow((void **)&(o)->field, &(o)->cap, \
						    (size_t)(o)->count + 1, sizeof *(o)->field)

/* libotf2's failure as weft's error about DIR. */
static int otf2_failed(conv *c, const char *what, OTF2_ErrorCode e)
{
	return weft__otf2_error(WEFT_EIO, c->out, what, e);
}

/* ---- Definitions, kept until the end ------------------------------------------------------- */

/* Pre-flush: libotf2 may write a full chunk whenever it wants to. */
static OTF2_FlushType flush_always(void *data, OTF2_FileType type, OTF2_LocationRef loc,
				   void *caller, bool final)
{
	(void)data; (void)type; (void)loc; (void)caller; (void)final;
	return OTF2_FLUSH;
}

/*
 * libotf2 keeps every chunk of a writer in memory until the writer is
 * closed unless its allocator refuses one: then it flushes the chunks to
 * the file (flush_always) and frees them. These callbacks give a buffer
 * at most CHUNKS_MAX chunks, so that memory stays bounded on locations of
 * any length (without them, converting the 10 M-event archive of
 * bench/otf2_bench.sh took 105 MB, 15 MB with them).
 *
 * Freed chunks are kept for the next writer (chunk_pool): libotf2 fills
 * the rest of a chunk it flushes (memset), so a fresh chunk per writer
 * meant fresh pages, faulted in and handed back to the system, for each
 * of a trace's locations: 16 s of system time for the 4096 locations of
 * bench/scaling_bench.sh's trace.
 */
typedef struct chunk_list {
	void *chunks[CHUNKS_MAX];
	uint64_t size;             /* every chunk of a buffer has the same size */
	unsigned count;
} chunk_list;

/* A kept chunk of `size` bytes, or a new one; NULL on ENOMEM. */
static void *pool_take(chunk_pool *p, uint64_t size)
{
	for (unsigned i = 0; i < p->count; i++) {
		if (p->sizes[i] != size)
			continue;
		void *chunk = p->chunks[i];
		p->count--;
		p->chunks[i] = p->chunks[p->count];
		p->sizes[i] = p->sizes[p->count];
		return chunk;
	}
	return malloc(size);
}

/* Keeps `chunk` for later, or frees it when the pool is full. */
static void pool_give(chunk_pool *p, void *chunk, uint64_t size)
{
	if (p->count == POOL_MAX) {
		free(chunk);
		return;
	}
	p->chunks[p->count] = chunk;
	p->sizes[p->count++] = size;
}

static void pool_release(chunk_pool *p)
{
	for (unsigned i = 0; i < p->count; i++)
		free(p->chunks[i]);
	p->count = 0;
}

static void *allocate_chunk(void *data, OTF2_FileType type, OTF2_LocationRef loc,
			    void **per_buffer, uint64_t size)
{
	(void)type; (void)loc;
	chunk_list *l = *per_buffer;
	if (l == NULL && (l = *per_buffer = calloc(1, sizeof *l)) == NULL)
		return NULL;
	if (l->count == CHUNKS_MAX)
		return NULL; /* libotf2 flushes what it has, frees it, asks again */
	void *chunk = pool_take(data, size);
	if (chunk != NULL) {
		l->chunks[l->count++] = chunk;
		l->size = size;
	}
	return chunk;
}

static void free_chunks(void *data, OTF2_FileType type, OTF2_LocationRef loc,
			void **per_buffer, bool final)
{
	(void)type; (void)loc;
	chunk_list *l = *per_buffer;
	if (l == NULL)
		return;
	for (unsigned i = 0; i < l->count; i++)
		pool_give(data, l->chunks[i], l->size);
	l->count = 0;
	if (final) {
		free(l);
		*per_buffer = NULL;
	}
}

/* The archive in c->tmp_dir, its event files open. */
static int otf2_start(conv *c)
{
	otf2_out *o = calloc(1, sizeof *o);
	if (o == NULL)
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	c->target_data = o;
	o->parameter_name = o->path_key = NONE;
	o->first_time = UINT64_MAX;
	const char *path = weft_trace_path(c->trace);
	const char *slash = strrchr(path, '/');
	o->machine = strdup(slash != NULL && slash[1] != '\0' ? slash + 1 : path);
	if (o->machine == NULL)
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	if (c->dry) /* a survey: the definitions only, no archive */
		return (o->attributes = OTF2_AttributeList_New()) != NULL ? 0
			: weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	weft__otf2_quiet();
	o->archive = OTF2_Archive_Open(c->tmp_dir, ARCHIVE_NAME, OTF2_FILEMODE_WRITE, EVENT_CHUNK,
				       DEF_CHUNK, OTF2_SUBSTRATE_POSIX, OTF2_COMPRESSION_NONE);
	o->attributes = OTF2_AttributeList_New();
	if (o->archive == NULL || o->attributes == NULL)
		return otf2_failed(c, "cannot create the OTF2 archive", OTF2_ERROR_INVALID);
	static const OTF2_FlushCallbacks flush = { flush_always, NULL };
	static const OTF2_MemoryCallbacks memory = { allocate_chunk, free_chunks };
	OTF2_ErrorCode e = OTF2_Archive_SetFlushCallbacks(o->archive, &flush, NULL);
	if (e == OTF2_SUCCESS)
		e = OTF2_Archive_SetMemoryCallbacks(o->archive, &memory, &o->pool);
	if (e == OTF2_SUCCESS)
		e = OTF2_Archive_SetSerialCollectiveCallbacks(o->archive);
	if (e == OTF2_SUCCESS)
		e = OTF2_Archive_SetCreator(o->archive, "weft convert -t otf2");
	if (e == OTF2_SUCCESS)
		e = OTF2_Archive_OpenEvtFiles(o->archive);
	if (e != OTF2_SUCCESS)
		return otf2_failed(c, "cannot create the OTF2 archive", e);
	o->evt_files_open = 1;
	return 0;
}

/* String refs are given in order from 0; the text is the conversion's (it stays put). */
static int otf2_string(conv *c, const char *text, uint32_t *ref)
{
	otf2_out *o = c->target_data;
	if (GROW(o, strings, string_count, string_cap) < 0)
		return WEFT_ENOMEM;
	o->strings[o->string_count] = text;
	*ref = o->string_count++;
	return 0;
}

static int otf2_region(conv *c, uint32_t ref, uint32_t name)
{
	otf2_out *o = c->target_data;
	(void)name; /* a region's ref is its name's (convert_pallas_defs.c) */
	if (GROW(o, regions, region_count, region_cap) < 0)
		return WEFT_ENOMEM;
	if (weft__array_grow((void **)&o->region_of, &o->region_of_cap, (size_t)ref + 1,
			     sizeof *o->region_of) < 0)
		return WEFT_ENOMEM;
	o->region_of[ref] = o->region_count;
	o->regions[o->region_count++] = ref;
	return 0;
}

static int otf2_attribute(conv *c, uint32_t ref, uint32_t name, int type)
{
	otf2_out *o = c->target_data;
	if (ref != o->attr_count) /* refs come in order: o->attrs[ref] is ref's */
		return weft__error(WEFT_EINVAL, NULL, WEFT_NO_OFFSET, "attribute %u out of order",
				   ref);
	if (GROW(o, attrs, attr_count, attr_cap) < 0)
		return WEFT_ENOMEM;
	/* Pallas's attribute types are OTF2's (OTF2_Type). */
	o->attrs[o->attr_count++] = (out_attribute){ ref, name, (uint8_t)type };
	return 0;
}

static int otf2_group(conv *c, uint32_t id, uint32_t name, uint32_t parent)
{
	otf2_out *o = c->target_data;
	if (id != o->group_count) /* ids come in order: o->groups[id] is id's */
		return weft__error(WEFT_EINVAL, NULL, WEFT_NO_OFFSET, "group %u out of order", id);
	if (GROW(o, groups, group_count, group_cap) < 0)
		return WEFT_ENOMEM;
	o->groups[o->group_count++] = (out_group){ name, NONE, NONE, parent, 0, 0, NONE };
	if (parent != NONE && parent < id)
		o->groups[parent].children++;
	return 0;
}

/* A string of the conversion's table (interned once, defined with the others). */
static int intern(conv *c, const char *text, uint32_t *ref)
{
	return weft__pconv_intern(c, text, (uint32_t)strlen(text), ref, NULL) < 0 ? WEFT_EIO : 0;
}

/* A property of group `group` (NONE: of the trace), its key and value interned. */
static int add_property(conv *c, uint32_t group, const char *key, const char *value)
{
	otf2_out *o = c->target_data;
	out_property p = { group, 0, 0 };
	if (intern(c, key, &p.key) < 0 || intern(c, value, &p.value) < 0)
		return WEFT_EIO;
	if (GROW(o, properties, property_count, property_cap) < 0)
		return WEFT_ENOMEM;
	o->properties[o->property_count++] = p;
	if (group != NONE && strcmp(key, "weft.kind") == 0)
		o->groups[group].kind = p.value;
	return 0;
}

static int otf2_group_metadata(conv *c, uint32_t group, const char *key, const char *value)
{
	return add_property(c, group, key, value);
}

static int otf2_metadata(conv *c, const char *key, const char *value)
{
	return add_property(c, NONE, key, value);
}

/* ---- Locations by id ---------------------------------------------------------------------- */

/*
 * Finding a location by its id (the event counts of a thread, and of each
 * part's locations) was a scan of all of them: at 64,000 locations, 4
 * billion comparisons for one conversion shared by 1,000 ranks. An open
 * addressing table of their indexes instead (ids are unique).
 */
static size_t location_slot(const otf2_out *o, uint64_t id)
{
	return (size_t)((id * 0x9E3779B97F4A7C15ull) >> 32) & (o->location_slot_count - 1);
}

static void location_put(otf2_out *o, uint32_t index)
{
	size_t h = location_slot(o, o->locations[index].id);
	while (o->location_slots[h] != 0)
		h = (h + 1) & (o->location_slot_count - 1);
	o->location_slots[h] = index + 1;
}

/* Indexes location `index` (the last one added): 0, or WEFT_ENOMEM. */
static int location_index(otf2_out *o, uint32_t index)
{
	if (2 * ((size_t)index + 1) > o->location_slot_count) {
		size_t n = o->location_slot_count ? 2 * o->location_slot_count : 64;
		uint32_t *slots = calloc(n, sizeof *slots);
		if (slots == NULL)
			return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
		free(o->location_slots);
		o->location_slots = slots;
		o->location_slot_count = n;
		for (uint32_t k = 0; k < index; k++)
			location_put(o, k);
	}
	location_put(o, index);
	return 0;
}

/* The location whose id is `id`, or NULL. */
static out_location *location_with_id(otf2_out *o, uint64_t id)
{
	if (o->location_slots == NULL)
		return NULL;
	for (size_t h = location_slot(o, id); o->location_slots[h] != 0;
	     h = (h + 1) & (o->location_slot_count - 1)) {
		out_location *l = &o->locations[o->location_slots[h] - 1];
		if (l->id == id)
			return l;
	}
	return NULL;
}

static int otf2_location(conv *c, uint32_t group, uint32_t id, uint32_t name, uint32_t stream)
{
	otf2_out *o = c->target_data;
	if (GROW(o, locations, location_count, location_cap) < 0)
		return WEFT_ENOMEM;
	if (o->located == NULL && (o->located = calloc(c->selected_count + 1, 1)) == NULL)
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	if (c->loc_of[stream] != NONE)
		o->located[c->loc_of[stream]] = 1;
	out_location *l = &o->locations[o->location_count];
	*l = (out_location){ id, group, name, 0, 0, 0 };
	if ((o->path_key == NONE && intern(c, "weft.path", &o->path_key) < 0) ||
	    intern(c, weft_trace_stream(c->trace, stream)->path, &l->path) < 0)
		return WEFT_EIO;
	if (location_index(o, o->location_count) < 0)
		return WEFT_ENOMEM;
	o->location_count++;
	if (group < o->group_count)
		o->groups[group].locations++;
	return 0;
}

/* ---- Events -------------------------------------------------------------------------------- */

static int otf2_thread_begin(conv *c, stream_out *s)
{
	otf2_out *o = c->target_data;
	if (c->dry) {
		s->thread = o; /* a thread that is never written */
		return 0;
	}
	OTF2_EvtWriter *w = OTF2_Archive_GetEvtWriter(o->archive, s->location);
	if (w == NULL)
		return otf2_failed(c, "cannot start the events of a location", OTF2_ERROR_INVALID);
	s->thread = w;
	return 0;
}

/*
 * The OTF2 attribute list of a Pallas one (entries of u16 size, u32
 * attribute ref, value: convert_pallas_attrs.c builds them), its types
 * from the attribute definitions. NULL for no list.
 */
static OTF2_AttributeList *attribute_list(otf2_out *o, const weft_pallas_attrs *a)
{
	if (a == NULL || a->count == 0)
		return NULL;
	OTF2_AttributeList_RemoveAllAttributes(o->attributes);
	for (size_t at = 7; at + 6 <= a->size;) {
		uint16_t size;
		uint32_t ref;
		memcpy(&size, a->bytes + at, 2);
		memcpy(&ref, a->bytes + at + 2, 4);
		if (size < 6 || at + size > a->size || ref >= o->attr_count)
			break;
		OTF2_AttributeValue v;
		memset(&v, 0, sizeof v);
		size_t n = size - 6u < sizeof v ? size - 6u : sizeof v;
		memcpy(&v, a->bytes + at + 6, n); /* the union's members start at its start */
		OTF2_AttributeList_AddAttribute(o->attributes, ref, o->attrs[ref].type, v);
		at += size;
	}
	return o->attributes;
}

/* The string parameter "weft.event" of point events, defined at its first use. */
static int event_parameter(conv *c, uint32_t *ref)
{
	otf2_out *o = c->target_data;
	if (o->parameter_name == NONE &&
	    weft__pconv_intern(c, "weft.event", 10, &o->parameter_name, NULL) < 0)
		return WEFT_EIO;
	o->parameter_used = 1;
	*ref = 0; /* the only parameter */
	return 0;
}

static int otf2_record(conv *c, stream_out *s, const weft_pallas_attrs *a, uint64_t time,
		       int kind, uint32_t ref)
{
	otf2_out *o = c->target_data;
	OTF2_EvtWriter *w = s->thread;
	OTF2_AttributeList *list = attribute_list(o, a);
	OTF2_ErrorCode e;
	uint32_t parameter;
	if (c->dry) /* a survey: only what defines something */
		return kind == REC_ENTER || kind == REC_LEAVE ? 0 : event_parameter(c, &parameter);
	if (kind == REC_ENTER)
		e = OTF2_EvtWriter_Enter(w, list, time, o->region_of[ref]);
	else if (kind == REC_LEAVE)
		e = OTF2_EvtWriter_Leave(w, list, time, o->region_of[ref]);
	else if (event_parameter(c, &parameter) < 0)
		return WEFT_EIO;
	else
		e = OTF2_EvtWriter_ParameterString(w, list, time, parameter, ref);
	if (e != OTF2_SUCCESS)
		return otf2_failed(c, "cannot write an event", e);
	if (time < o->first_time)
		o->first_time = time;
	if (time > o->last_time)
		o->last_time = time;
	return 0;
}

/* ---- MPI records --------------------------------------------------------------------------- */

/* weft's MPI records that OTF2 has, and the fields each needs, in the order of its arguments. */
enum mpi_kind { MPI_SEND, MPI_ISEND, MPI_ISEND_COMPLETE, MPI_IRECV_REQUEST, MPI_RECV, MPI_IRECV,
		MPI_COLLECTIVE_BEGIN, MPI_COLLECTIVE_END, MPI_KIND_COUNT };
static const struct {
	const char *code;
	const char *fields[5];
} mpi_records[MPI_KIND_COUNT] = {
	[MPI_SEND] = { "MPI_Send", { "peer", "comm", "tag", "length" } },
	[MPI_ISEND] = { "MPI_Isend", { "peer", "comm", "tag", "length", "request" } },
	[MPI_ISEND_COMPLETE] = { "MPI_IsendComplete", { "request" } },
	[MPI_IRECV_REQUEST] = { "MPI_IrecvRequest", { "request" } },
	[MPI_RECV] = { "MPI_Recv", { "peer", "comm", "tag", "length" } },
	[MPI_IRECV] = { "MPI_Irecv", { "peer", "comm", "tag", "length", "request" } },
	[MPI_COLLECTIVE_BEGIN] = { "MPI_CollectiveBegin", { NULL } },
	[MPI_COLLECTIVE_END] = { "MPI_CollectiveEnd", { "op", "comm", "root", "sent", "received" } },
};

/* Index of the field named `name` among the first `n` of conv.fields, or -1. */
static int field_index(const conv *c, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (weft__pconv_field_named(c, i, n, name))
			return i;
	return -1;
}

/* Moves field i to place `to` (the record's own fields go first). */
static void field_to_front(conv *c, int i, int to)
{
	weft_field f = c->fields[i];
	memmove(&c->fields[to + 1], &c->fields[to], (size_t)(i - to) * sizeof f);
	c->fields[to] = f;
}

/* Room for communicators 0 .. count - 1 (new ones unnamed); 0 or -1. */
static int comms_grow(otf2_out *o, uint64_t count)
{
	char **n = realloc(o->comm_names, (size_t)count * sizeof *n);
	if (n != NULL)
		o->comm_names = n;
	uint32_t *at = realloc(o->comm_named_at, (size_t)count * sizeof *at);
	if (at != NULL)
		o->comm_named_at = at;
	if (n == NULL || at == NULL)
		return -1;
	for (uint64_t k = o->comm_count; k < count; k++) {
		n[k] = NULL;
		at[k] = NONE;
	}
	o->comm_count = (uint32_t)count;
	return 0;
}

/*
 * Remembers communicator `comm` (the source's number) and its name (the
 * field comm_name, when the source names it, and the selected stream
 * `loc` that named it first); 0 or < 0.
 */
static int use_comm(conv *c, uint64_t comm, int name_field, uint32_t loc)
{
	otf2_out *o = c->target_data;
	if (comm >= o->comm_count && comms_grow(o, comm + 1) < 0)
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	if (name_field >= 0 && o->comm_names[comm] == NULL) {
		const weft_field *f = &c->fields[name_field];
		o->comm_names[comm] = f->type == WEFT_TYPE_STR
			? strndup(f->v.s.ptr, f->v.s.len) : NULL;
		if (o->comm_names[comm] != NULL)
			o->comm_named_at[comm] = loc;
	}
	return 0;
}

/*
 * An MPI record of weft's vocabulary as OTF2's own: its fields are the
 * record's arguments, its other fields attributes. 0 when it is not one
 * (or lacks a field): the caller writes a point event.
 */
static int otf2_mpi(conv *c, stream_out *s, const weft_event *ev, int nfields)
{
	otf2_out *o = c->target_data;
	int kind = 0;
	while (kind < MPI_KIND_COUNT && (strlen(mpi_records[kind].code) != ev->code_len ||
		memcmp(mpi_records[kind].code, ev->code, ev->code_len) != 0))
		kind++;
	if (kind == MPI_KIND_COUNT)
		return 0;
	uint64_t v[5] = { 0 };
	int own = 0;
	for (int k = 0; k < 5 && mpi_records[kind].fields[k] != NULL; k++) {
		int i = field_index(c, nfields, mpi_records[kind].fields[k]);
		if (i < 0 || c->fields[i].is_array || c->fields[i].type == WEFT_TYPE_STR ||
		    c->fields[i].type == WEFT_TYPE_BYTES || c->fields[i].type == WEFT_TYPE_F32 ||
		    c->fields[i].type == WEFT_TYPE_F64)
			return 0;
		v[k] = c->fields[i].v.u;
		field_to_front(c, i, own++);
	}
	int named = field_index(c, nfields, "comm_name");
	if (named >= 0)
		field_to_front(c, named, own++);
	int comm_at = 1; /* the communicator is the second argument of each */
	int has_comm = kind == MPI_SEND || kind == MPI_ISEND || kind == MPI_RECV ||
		       kind == MPI_IRECV || kind == MPI_COLLECTIVE_END;
	if (has_comm && v[comm_at] >= COMMS_MAX)
		return 0;
	int rc = has_comm ? use_comm(c, v[comm_at], named >= 0 ? own - 1 : -1, s->index) : 0;
	attr_plan p = { 0, NULL, own, nfields };
	weft_pallas_attrs a;
	if (rc < 0 || weft__pconv_build_attrs(c, ev, &p, &a) < 0)
		return rc < 0 ? rc : WEFT_EIO;
	if (c->dry) /* a survey: its definitions are made */
		return 1;
	OTF2_EvtWriter *w = s->thread;
	OTF2_AttributeList *list = attribute_list(o, &a);
	uint64_t t = ev->time;
	OTF2_ErrorCode e;
	switch (kind) {
	case MPI_SEND: e = OTF2_EvtWriter_MpiSend(w, list, t, (uint32_t)v[0], (uint32_t)v[1],
						  (uint32_t)v[2], v[3]); break;
	case MPI_ISEND: e = OTF2_EvtWriter_MpiIsend(w, list, t, (uint32_t)v[0], (uint32_t)v[1],
						    (uint32_t)v[2], v[3], v[4]); break;
	case MPI_ISEND_COMPLETE: e = OTF2_EvtWriter_MpiIsendComplete(w, list, t, v[0]); break;
	case MPI_IRECV_REQUEST: e = OTF2_EvtWriter_MpiIrecvRequest(w, list, t, v[0]); break;
	case MPI_RECV: e = OTF2_EvtWriter_MpiRecv(w, list, t, (uint32_t)v[0], (uint32_t)v[1],
						  (uint32_t)v[2], v[3]); break;
	case MPI_IRECV: e = OTF2_EvtWriter_MpiIrecv(w, list, t, (uint32_t)v[0], (uint32_t)v[1],
						    (uint32_t)v[2], v[3], v[4]); break;
	case MPI_COLLECTIVE_BEGIN: e = OTF2_EvtWriter_MpiCollectiveBegin(w, list, t); break;
	default: e = OTF2_EvtWriter_MpiCollectiveEnd(w, list, t, (OTF2_CollectiveOp)v[0],
						     (uint32_t)v[1], (uint32_t)v[2], v[3], v[4]);
	}
	if (e != OTF2_SUCCESS)
		return otf2_failed(c, "cannot write an event", e);
	if (t < o->first_time)
		o->first_time = t;
	if (t > o->last_time)
		o->last_time = t;
	return 1;
}

/* The location's number of events, then its writer closed (its last chunk written). */
static int otf2_thread_end(conv *c, stream_out *s, int ok)
{
	otf2_out *o = c->target_data;
	uint64_t events = 0;
	if (c->dry) {
		s->thread = NULL;
		return 0;
	}
	OTF2_ErrorCode e = OTF2_EvtWriter_GetNumberOfEvents(s->thread, &events);
	out_location *l = location_with_id(o, s->location);
	if (l != NULL) {
		l->events = events;
		l->written = 1;
	}
	OTF2_ErrorCode closed = OTF2_Archive_CloseEvtWriter(o->archive, s->thread);
	s->thread = NULL;
	if (e == OTF2_SUCCESS)
		e = closed;
	return ok && e != OTF2_SUCCESS ? otf2_failed(c, "cannot write the events of a location", e)
				      : 0;
}

/* ---- The definition files ------------------------------------------------------------------ */

/* A string defined after the conversion's (a property's key or value). */
static OTF2_ErrorCode extra_string(otf2_out *o, OTF2_GlobalDefWriter *g, const char *text,
				   uint32_t *ref)
{
	*ref = o->string_count++;
	return OTF2_GlobalDefWriter_WriteString(g, *ref, text);
}

/* An empty local definition file per location, as libotf2's readers expect. */
static OTF2_ErrorCode write_local_defs(otf2_out *o)
{
	OTF2_ErrorCode e = OTF2_Archive_OpenDefFiles(o->archive);
	for (uint32_t i = 0; e == OTF2_SUCCESS && i < o->location_count; i++) {
		OTF2_DefWriter *d = OTF2_Archive_GetDefWriter(o->archive, o->locations[i].id);
		e = d == NULL ? OTF2_ERROR_INVALID : OTF2_Archive_CloseDefWriter(o->archive, d);
	}
	return e == OTF2_SUCCESS ? OTF2_Archive_CloseDefFiles(o->archive) : e;
}

/*
 * The refs of each kind of definition follow each other from 0 (libotf2's
 * readers warn otherwise): a system tree node per group that holds other
 * groups (after the machine, 0), a location group per group that holds
 * locations, both in group order.
 */
static void number_groups(otf2_out *o)
{
	uint32_t nodes = 1, groups = 0;
	for (uint32_t i = 0; i < o->group_count; i++) {
		out_group *gr = &o->groups[i];
		gr->node_ref = gr->children ? nodes++ : NONE;
		gr->group_ref = gr->locations ? groups++ : NONE;
	}
}

/* The system tree node a group's children or locations are under. */
static uint32_t node_of(const otf2_out *o, uint32_t group)
{
	const out_group *gr = &o->groups[group];
	return gr->node_ref != NONE ? gr->node_ref
	     : gr->parent == NONE ? 0 : o->groups[gr->parent].node_ref;
}

/*
 * The system tree: the machine (0, named after the trace's file), then a
 * node per group that holds other groups, under its parent's node.
 */
static OTF2_ErrorCode write_system_tree(otf2_out *o, OTF2_GlobalDefWriter *g)
{
	uint32_t machine, node, name;
	OTF2_ErrorCode e = extra_string(o, g, "machine", &machine);
	if (e == OTF2_SUCCESS)
		e = extra_string(o, g, "node", &node);
	if (e == OTF2_SUCCESS)
		e = extra_string(o, g, o->machine, &name);
	if (e == OTF2_SUCCESS)
		e = OTF2_GlobalDefWriter_WriteSystemTreeNode(g, 0, name, machine,
							     OTF2_UNDEFINED_SYSTEM_TREE_NODE);
	for (uint32_t i = 0; e == OTF2_SUCCESS && i < o->group_count; i++) {
		const out_group *gr = &o->groups[i];
		if (gr->node_ref == NONE)
			continue;
		uint32_t cls = gr->kind != NONE ? gr->kind : node;
		uint32_t parent = gr->parent == NONE ? 0 : o->groups[gr->parent].node_ref;
		if (e == OTF2_SUCCESS)
			e = OTF2_GlobalDefWriter_WriteSystemTreeNode(g, gr->node_ref, gr->name, cls,
								     parent);
	}
	return e;
}

static int by_location_id(const void *a, const void *b)
{
	uint32_t x = ((const out_location *)a)->id, y = ((const out_location *)b)->id;
	return (x > y) - (x < y);
}

/* The location groups, then the locations in id order. */
static OTF2_ErrorCode write_groups(otf2_out *o, OTF2_GlobalDefWriter *g)
{
	OTF2_ErrorCode e = OTF2_SUCCESS;
	for (uint32_t i = 0; e == OTF2_SUCCESS && i < o->group_count; i++) {
		const out_group *gr = &o->groups[i];
		if (gr->group_ref != NONE)
			e = OTF2_GlobalDefWriter_WriteLocationGroup(
				g, gr->group_ref, gr->name, OTF2_LOCATION_GROUP_TYPE_PROCESS,
				node_of(o, i), OTF2_UNDEFINED_LOCATION_GROUP);
	}
	if (o->location_count > 1)
		qsort(o->locations, o->location_count, sizeof *o->locations, by_location_id);
	for (uint32_t i = 0; e == OTF2_SUCCESS && i < o->location_count; i++) {
		const out_location *l = &o->locations[i];
		e = OTF2_GlobalDefWriter_WriteLocation(g, l->id, l->name,
						       OTF2_LOCATION_TYPE_CPU_THREAD, l->events,
						       o->groups[l->group].group_ref);
	}
	return e;
}

/*
 * The communicators of the MPI records: MPI's world is one rank per
 * location group (in order), its location the group's first; group 0
 * lists those locations (COMM_LOCATIONS), group 1 every rank
 * (COMM_GROUP), and each communicator number the source used is a
 * communicator over group 1, named as the source names it.
 */
static OTF2_ErrorCode write_comms(otf2_out *o, OTF2_GlobalDefWriter *g)
{
	if (o->comm_count == 0)
		return OTF2_SUCCESS;
	uint32_t ranks = 0;
	for (uint32_t i = 0; i < o->group_count; i++)
		ranks += o->groups[i].group_ref != NONE;
	uint64_t *members = calloc(ranks ? ranks : 1, sizeof *members);
	uint8_t *seen = calloc(ranks ? ranks : 1, 1);
	OTF2_ErrorCode e = members && seen ? OTF2_SUCCESS : OTF2_ERROR_MEM_ALLOC_FAILED;
	for (uint32_t i = 0; e == OTF2_SUCCESS && i < o->location_count; i++) {
		uint32_t r = o->groups[o->locations[i].group].group_ref; /* in id order */
		if (r < ranks && !seen[r]) {
			members[r] = o->locations[i].id;
			seen[r] = 1;
		}
	}
	uint32_t world;
	if (e == OTF2_SUCCESS)
		e = extra_string(o, g, "MPI_COMM_WORLD", &world);
	if (e == OTF2_SUCCESS)
		e = OTF2_GlobalDefWriter_WriteGroup(g, 0, world, OTF2_GROUP_TYPE_COMM_LOCATIONS,
						    OTF2_PARADIGM_MPI, OTF2_GROUP_FLAG_NONE, ranks,
						    members);
	for (uint32_t r = 0; e == OTF2_SUCCESS && r < ranks; r++)
		members[r] = r;
	if (e == OTF2_SUCCESS)
		e = OTF2_GlobalDefWriter_WriteGroup(g, 1, world, OTF2_GROUP_TYPE_COMM_GROUP,
						    OTF2_PARADIGM_MPI, OTF2_GROUP_FLAG_NONE, ranks,
						    members);
	for (uint32_t k = 0; e == OTF2_SUCCESS && k < o->comm_count; k++) {
		char fallback[32];
		snprintf(fallback, sizeof fallback, "comm %u", k);
		uint32_t name;
		e = extra_string(o, g, o->comm_names[k] ? o->comm_names[k] : fallback, &name);
		if (e == OTF2_SUCCESS)
			e = OTF2_GlobalDefWriter_WriteComm(g, k, name, 1, OTF2_UNDEFINED_COMM,
							   OTF2_COMM_FLAG_NONE);
	}
	free(members);
	free(seen);
	return e;
}

/*
 * The properties: a group's are location group properties (system tree
 * node properties when it holds no location), a location's path its
 * "weft.path", the trace's anchor properties WEFT::<KEY>.
 */
static OTF2_ErrorCode write_properties(otf2_out *o, OTF2_GlobalDefWriter *g)
{
	OTF2_ErrorCode e = OTF2_SUCCESS;
	for (uint32_t i = 0; e == OTF2_SUCCESS && i < o->property_count; i++) {
		const out_property *p = &o->properties[i];
		OTF2_AttributeValue v = { .stringRef = p->value };
		if (p->group == NONE) {
			const char *key = o->strings[p->key];
			char name[64] = "WEFT::";
			size_t n = 6;
			for (const char *k = strncmp(key, "weft.", 5) == 0 ? key + 5 : key;
			     *k && n + 1 < sizeof name; k++)
				name[n++] = *k == '.' ? '_' : (char)(*k >= 'a' && *k <= 'z' ? *k - 32 : *k);
			name[n] = '\0';
			e = OTF2_Archive_SetProperty(o->archive, name, o->strings[p->value], true);
			continue;
		}
		const out_group *gr = &o->groups[p->group];
		e = gr->group_ref != NONE
			? OTF2_GlobalDefWriter_WriteLocationGroupProperty(g, gr->group_ref, p->key,
									  OTF2_TYPE_STRING, v)
			: OTF2_GlobalDefWriter_WriteSystemTreeNodeProperty(g, gr->node_ref, p->key,
									   OTF2_TYPE_STRING, v);
	}
	for (uint32_t i = 0; e == OTF2_SUCCESS && i < o->location_count; i++) {
		OTF2_AttributeValue v = { .stringRef = o->locations[i].path };
		e = OTF2_GlobalDefWriter_WriteLocationProperty(g, o->locations[i].id, o->path_key,
							       OTF2_TYPE_STRING, v);
	}
	return e;
}

/* Clock, strings, regions, attributes, the parameter, the tree and the properties. */
static OTF2_ErrorCode write_global_defs(otf2_out *o, OTF2_GlobalDefWriter *g)
{
	uint64_t first = o->first_time == UINT64_MAX ? 0 : o->first_time;
	uint64_t length = o->first_time == UINT64_MAX ? 0 : o->last_time - first + 1;
	OTF2_ErrorCode e = OTF2_GlobalDefWriter_WriteClockProperties(g, 1000000000u, first, length,
								     OTF2_UNDEFINED_TIMESTAMP);
	uint32_t strings = o->string_count;
	for (uint32_t i = 0; e == OTF2_SUCCESS && i < strings; i++)
		e = OTF2_GlobalDefWriter_WriteString(g, i, o->strings[i]);
	for (uint32_t i = 0; e == OTF2_SUCCESS && i < o->region_count; i++)
		e = OTF2_GlobalDefWriter_WriteRegion(g, i, o->regions[i], o->regions[i],
						     o->regions[i], OTF2_REGION_ROLE_FUNCTION,
						     OTF2_PARADIGM_USER, OTF2_REGION_FLAG_NONE,
						     OTF2_UNDEFINED_STRING, 0, 0);
	for (uint32_t i = 0; e == OTF2_SUCCESS && i < o->attr_count; i++)
		e = OTF2_GlobalDefWriter_WriteAttribute(g, o->attrs[i].ref, o->attrs[i].name,
							o->attrs[i].name, o->attrs[i].type);
	if (e == OTF2_SUCCESS && o->parameter_name != NONE)
		e = OTF2_GlobalDefWriter_WriteParameter(g, 0, o->parameter_name,
							OTF2_PARAMETER_TYPE_STRING);
	number_groups(o);
	if (e == OTF2_SUCCESS)
		e = write_system_tree(o, g);
	if (e == OTF2_SUCCESS)
		e = write_groups(o, g);
	if (e == OTF2_SUCCESS)
		e = write_comms(o, g);
	return e == OTF2_SUCCESS ? write_properties(o, g) : e;
}

/*
 * The selected streams without a selected event are locations too, with
 * an empty event file: OTF2 readers take a location without events
 * (an archive without any location, neither libotf2's readers nor weft).
 */
static int add_empty_locations(conv *c)
{
	otf2_out *o = c->target_data;
	for (uint32_t loc = 0; loc < c->selected_count; loc++) {
		if (o->located != NULL && o->located[loc])
			continue;
		uint32_t group, id;
		if (weft__pconv_add_location(c, loc, &group, &id) < 0)
			return WEFT_EIO;
		OTF2_EvtWriter *w = OTF2_Archive_GetEvtWriter(o->archive, id);
		OTF2_ErrorCode e = w == NULL ? OTF2_ERROR_INVALID
					     : OTF2_Archive_CloseEvtWriter(o->archive, w);
		if (e != OTF2_SUCCESS)
			return otf2_failed(c, "cannot write the events of a location", e);
	}
	return 0;
}

#define ANCHOR_MAX (1u << 24) /* an anchor holds a few hundred bytes */
#define HASH_CHUNK (64u << 10)

/* A hash of the whole file `fd` (read in chunks: the definitions may be large), or -1. */
static int hash_file(int fd, uint64_t *h)
{
	unsigned char *buf = malloc(HASH_CHUNK);
	int64_t n = buf == NULL ? -1 : 0;
	*h = 14695981039346656037ull;
	for (uint64_t off = 0; buf != NULL; off += (uint64_t)n) {
		n = weft__read_full(fd, buf, HASH_CHUNK, off);
		if (n <= 0)
			break;
		*h = (*h ^ weft__hash_bytes(buf, (size_t)n)) * 1099511628211ull;
	}
	free(buf);
	return n < 0 ? -1 : 0;
}

/*
 * libotf2 writes a random trace id into the anchor file; weft writes a
 * hash of the anchor (without its id) and of the global definitions
 * instead, so that converting the same events gives the same bytes (as
 * every other output of weft does). The anchor's layout: core/otf2_common.h.
 */
static int stamp_trace_id(conv *c)
{
	char anchor[4096], defs[4096];
	snprintf(anchor, sizeof anchor, "%s/" ARCHIVE_NAME ".otf2", c->tmp_dir);
	snprintf(defs, sizeof defs, "%s/" ARCHIVE_NAME ".def", c->tmp_dir);
	unsigned char *a = malloc(ANCHOR_MAX);
	int fa = open(anchor, O_RDWR | O_CLOEXEC), fd = open(defs, O_RDONLY | O_CLOEXEC);
	int64_t na = a != NULL && fa >= 0 ? weft__read_full(fa, a, ANCHOR_MAX, 0) : -1;
	size_t at = na > 7 && a[7] == 3 ? weft__otf2_anchor_trace_id_at(a, (size_t)na) : 0;
	uint64_t id = 0;
	int rc = at == 0 || na == ANCHOR_MAX || fd < 0 || hash_file(fd, &id) < 0
		? weft__error(WEFT_EIO, anchor, WEFT_NO_OFFSET, "cannot read back the anchor file "
			      "and the definitions libotf2 wrote") : 0;
	if (rc == 0) {
		memset(a + at, 0, 8);
		id ^= weft__hash_bytes(a, (size_t)na);
		unsigned char bytes[8];
		for (int i = 0; i < 8; i++)
			bytes[a[1] == 'B' ? i : 7 - i] = (unsigned char)(id >> (8 * i));
		int err = weft__write_full(fa, bytes, 8, at, NULL);
		if (err == 0 && fsync(fa) < 0)
			err = errno;
		if (err != 0)
			rc = weft__error(WEFT_EIO, anchor, (uint64_t)at, "cannot write the trace id: %s",
					 strerror(err));
	}
	if (fa >= 0)
		close(fa);
	if (fd >= 0)
		close(fd);
	free(a);
	return rc;
}

/* Every location has ended: the event files, the local and global definitions, the anchor. */
static int otf2_store(conv *c)
{
	otf2_out *o = c->target_data;
	int rc = add_empty_locations(c);
	if (rc < 0)
		return rc;
	OTF2_ErrorCode e = OTF2_Archive_CloseEvtFiles(o->archive);
	o->evt_files_open = 0;
	if (e == OTF2_SUCCESS)
		e = write_local_defs(o);
	OTF2_GlobalDefWriter *g = e == OTF2_SUCCESS ? OTF2_Archive_GetGlobalDefWriter(o->archive)
						    : NULL;
	if (e == OTF2_SUCCESS && g == NULL)
		e = OTF2_ERROR_INVALID;
	if (e == OTF2_SUCCESS)
		e = write_global_defs(o, g);
	if (g != NULL && e == OTF2_SUCCESS)
		e = OTF2_Archive_CloseGlobalDefWriter(o->archive, g);
	OTF2_ErrorCode closed = OTF2_Archive_Close(o->archive);
	o->archive = NULL;
	if (e == OTF2_SUCCESS)
		e = closed;
	return e == OTF2_SUCCESS ? stamp_trace_id(c)
				 : otf2_failed(c, "cannot write the OTF2 archive", e);
}

/* Frees the state; an archive still open is closed (its directory is removed anyway). */
static void otf2_free(conv *c)
{
	otf2_out *o = c->target_data;
	if (o == NULL)
		return;
	if (o->archive != NULL) {
		if (o->evt_files_open)
			OTF2_Archive_CloseEvtFiles(o->archive);
		OTF2_Archive_Close(o->archive);
	}
	if (o->attributes != NULL)
		OTF2_AttributeList_Delete(o->attributes);
	free(o->strings);
	free(o->regions);
	free(o->region_of);
	free(o->attrs);
	free(o->machine);
	free(o->located);
	for (uint32_t k = 0; k < o->comm_count; k++)
		free(o->comm_names[k]);
	free(o->comm_names);
	free(o->comm_named_at);
	free(o->groups);
	free(o->locations);
	free(o->location_slots);
	free(o->properties);
	pool_release(&o->pool);
	free(o);
	c->target_data = NULL;
}

/* ---- A part of a shared conversion (convert_pallas_shared.c) ------------------------- */

/*
 * The part's archive (in a directory of its own, c->tmp_dir, under the
 * trace's) closed, the event files of its locations moved into the
 * trace's archive, its directory removed. libotf2 writes a location's
 * event file from its events alone, so the file is the one the serial
 * conversion writes. 0 or < 0.
 */
static int otf2_part_finish(conv *c, const char *trace_dir)
{
	otf2_out *o = c->target_data;
	OTF2_ErrorCode e = OTF2_Archive_CloseEvtFiles(o->archive);
	o->evt_files_open = 0;
	OTF2_ErrorCode closed = OTF2_Archive_Close(o->archive);
	o->archive = NULL;
	if (e == OTF2_SUCCESS)
		e = closed;
	if (e != OTF2_SUCCESS)
		return otf2_failed(c, "cannot write the events of a location", e);
	size_t cap = strlen(trace_dir) + strlen(c->tmp_dir) + 64;
	char *from = malloc(cap), *to = malloc(cap);
	int rc = from == NULL || to == NULL
		 ? weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory") : 0;
	if (rc == 0) {
		snprintf(to, cap, "%s/" ARCHIVE_NAME, trace_dir);
		if (mkdir(to, 0777) < 0 && errno != EEXIST)
			rc = weft__error(WEFT_EIO, to, WEFT_NO_OFFSET, "cannot create the "
					 "directory of the event files: %s", strerror(errno));
	}
	for (uint32_t i = 0; rc == 0 && i < o->location_count; i++) {
		if (!o->locations[i].written)
			continue;
		snprintf(from, cap, "%s/" ARCHIVE_NAME "/%" PRIu32 ".evt", c->tmp_dir,
			 o->locations[i].id);
		snprintf(to, cap, "%s/" ARCHIVE_NAME "/%" PRIu32 ".evt", trace_dir,
			 o->locations[i].id);
		if (rename(from, to) < 0)
			rc = weft__error(WEFT_EIO, from, WEFT_NO_OFFSET, "cannot move the event "
					 "file into the archive: %s", strerror(errno));
	}
	free(from);
	free(to);
	if (weft__outdir_remove_tree(c->tmp_dir) < 0 && rc == 0)
		rc = weft__error(WEFT_EIO, c->tmp_dir, WEFT_NO_OFFSET, "cannot remove a part's "
				 "directory: %s", strerror(errno));
	return rc;
}

/*
 * What rank 0's global definitions need of a part's writing: the clock
 * range, whether the point event parameter was used, the events of each
 * location written (id, count; then NONE), the communicators (number,
 * the stream that named it or NONE, its name; then NONE).
 */
static void otf2_part_pack(conv *c, weft__pack *out)
{
	otf2_out *o = c->target_data;
	weft__pack_u64(out, o->first_time);
	weft__pack_u64(out, o->last_time);
	weft__pack_u64(out, o->parameter_used);
	for (uint32_t i = 0; i < o->location_count; i++) {
		if (!o->locations[i].written)
			continue;
		weft__pack_u64(out, o->locations[i].id);
		weft__pack_u64(out, o->locations[i].events);
	}
	weft__pack_u64(out, NONE);
	for (uint32_t k = 0; k < o->comm_count; k++) {
		weft__pack_u64(out, k);
		weft__pack_u64(out, o->comm_named_at[k]);
		weft__pack_text(out, o->comm_names[k] != NULL ? o->comm_names[k] : "");
	}
	weft__pack_u64(out, NONE);
}

/*
 * Rank 0 takes a part's writing (otf2_part_pack): the clock range
 * widened, the parameter (its string is in the plan), each location's
 * events, the communicators; a name from the earliest stream that gave
 * one, as the serial conversion keeps the first it meets. 0 or < 0 (a
 * pack that does not parse sets u->bad).
 */
static int otf2_part_take(conv *c, weft__unpack *u)
{
	otf2_out *o = c->target_data;
	uint64_t first = weft__unpack_u64(u), last = weft__unpack_u64(u);
	if (first < o->first_time)
		o->first_time = first;
	if (last > o->last_time)
		o->last_time = last;
	uint32_t parameter;
	if (weft__unpack_u64(u) != 0 && !u->bad && event_parameter(c, &parameter) < 0)
		return WEFT_EIO;
	for (uint64_t id; (id = weft__unpack_u64(u)) != NONE && !u->bad;) {
		uint64_t events = weft__unpack_u64(u);
		out_location *l = location_with_id(o, id);
		if (l != NULL)
			l->events = events;
	}
	for (uint64_t k; (k = weft__unpack_u64(u)) != NONE && !u->bad;) {
		uint64_t at = weft__unpack_u64(u);
		const char *name = weft__unpack_text(u);
		if (u->bad || k >= COMMS_MAX)
			return u->bad = 1, 0;
		if (k >= o->comm_count && comms_grow(o, k + 1) < 0)
			return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
		if (at == NONE || at >= o->comm_named_at[k])
			continue;
		char *copy = strdup(name);
		if (copy == NULL)
			return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
		free(o->comm_names[k]);
		o->comm_names[k] = copy;
		o->comm_named_at[k] = (uint32_t)at;
	}
	return 0;
}

/* 1 when a directory entry belongs to an OTF2 archive written here (or its leftovers). */
static int otf2_entry(const char *name)
{
	return strcmp(name, ARCHIVE_NAME) == 0 || strcmp(name, ARCHIVE_NAME ".otf2") == 0 ||
	       strcmp(name, ARCHIVE_NAME ".def") == 0;
}

static const weft__outdir_kind otf2_dir = { "an OTF2 archive", otf2_entry };

const conv_target weft__pconv_otf2_target = {
	"OTF2", &otf2_dir, UINT32_MAX, 0, otf2_start, otf2_string, otf2_region,
	otf2_attribute, otf2_group, otf2_group_metadata, otf2_location, otf2_metadata,
	otf2_thread_begin, otf2_record, NULL, otf2_mpi, otf2_thread_end, otf2_store, otf2_free,
	otf2_part_finish, otf2_part_pack, otf2_part_take
};

static int otf2_writer_create(weft_output_writer *w)
{
	return weft__pconv_writer_create(w, &weft__pconv_otf2_target);
}

const weft__writer_ops weft__otf2_writer_ops = {
	1, otf2_writer_create, weft__pconv_writer_event, weft__pconv_writer_end_stream,
	weft__pconv_writer_read_failed, weft__pconv_writer_finish, weft__pconv_writer_free, 0,
	weft__pconv_convert_shared
};
