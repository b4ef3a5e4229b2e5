/* SPDX-License-Identifier: MIT */
/*
 * formats/otf2/otf2_open.c - opening an OTF2 archive through libotf2: the
 * anchor file (`traces.otf2`, or the directory holding one), the global
 * definitions kept in tables (otf2_defs.c), and from them the hierarchy:
 * system tree nodes (machine > node ...), location groups (processes)
 * and locations (threads, one stream each). Events are read per location
 * by otf2_stream.c.
 *
 * libotf2 prints its errors on stderr by default; weft installs an error
 * callback that keeps the last message of the thread instead, to put it
 * in weft's error (a trace that does not open says why, once).
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "formats/otf2/otf2_internal.h"

/* System tree nodes above a location group, at most (a cycle ends there). */
#define TREE_DEPTH_MAX 64

/* ---- Time ------------------------------------------------------------------------ */

/* ticks * 1e9 / resolution without overflow (ticks of a GHz clock: as is). */
uint64_t weft__otf2_ns(const otf2_trace *ot, uint64_t ticks)
{
	uint64_t r = ot->resolution;
	if (r == 1000000000u || r == 0)
		return ticks;
	return (uint64_t)((unsigned __int128)ticks * 1000000000u / r);
}

/* ---- Finding the anchor file ----------------------------------------------------- */

static int ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);
	return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* The only `*.otf2` file of a directory (malloc'ed path), else NULL. */
static char *find_anchor(const char *dir)
{
	DIR *d = opendir(dir);
	if (d == NULL)
		return NULL;
	char *found = NULL;
	int count = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.' || !ends_with(e->d_name, ".otf2"))
			continue;
		if (count++ == 0)
			found = strdup(e->d_name);
	}
	closedir(d);
	if (count != 1) {
		free(found);
		return NULL;
	}
	char *path = weft__path_join(dir, found);
	free(found);
	return path;
}

/* The anchor file of `path` (the file itself, or found in the directory). */
static char *anchor_of(const char *path)
{
	struct stat st;
	if (stat(path, &st) != 0)
		return NULL;
	if (S_ISDIR(st.st_mode))
		return find_anchor(path);
	if (S_ISREG(st.st_mode) && ends_with(path, ".otf2"))
		return strdup(path);
	return NULL;
}

/*
 * 1 when the file starts as libotf2 writes an anchor: a chunk header byte,
 * the byte-order byte, then the magic "OTF2". Checked before libotf2 sees
 * the file: libotf2 leaks what it allocated when it refuses an anchor.
 */
static int has_magic(const char *path)
{
	unsigned char head[6];
	FILE *f = fopen(path, "rb");
	if (f == NULL)
		return 0;
	size_t n = fread(head, 1, sizeof head, f);
	fclose(f);
	return n == sizeof head && memcmp(head + 2, "OTF2", 4) == 0;
}

/*
 * Checks what libotf2 trusts in an anchor file before it sees it: the magic,
 * then (anchor format 3) that the property count fits in the file, two
 * strings per property. libotf2 allocates and then walks two pointers per
 * counted property, so a damaged count made it run for minutes and
 * allocate gigabytes. The layout: core/otf2_common.h.
 */
#define ANCHOR_MAX_SIZE (64u << 20)
static int check_anchor(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (f == NULL)
		return weft__error(WEFT_EIO, path, WEFT_NO_OFFSET, "cannot open the anchor file: %s",
				   strerror(errno));
	struct stat st;
	size_t cap = fstat(fileno(f), &st) == 0 && st.st_size >= 0 && st.st_size < ANCHOR_MAX_SIZE
		? (size_t)st.st_size + 1 : ANCHOR_MAX_SIZE;
	unsigned char *b = malloc(cap);
	size_t size = b ? fread(b, 1, cap, f) : 0;
	int more = b && (size == ANCHOR_MAX_SIZE || (size == cap && fgetc(f) != EOF));
	fclose(f);
	int rc = 0;
	if (b == NULL)
		rc = weft__error(WEFT_ENOMEM, path, WEFT_NO_OFFSET, "out of memory");
	else if (size < 6 || memcmp(b + 2, "OTF2", 4) != 0)
		rc = weft__error(WEFT_EFORMAT, path, 2,
				 "expected the magic \"OTF2\" of an OTF2 anchor file");
	else if (more)
		rc = weft__error(WEFT_EFORMAT, path, ANCHOR_MAX_SIZE,
				 "expected an anchor file of at most %u MiB", ANCHOR_MAX_SIZE >> 20);
	else if (size > 7 && b[7] == 3) {
		size_t at = weft__otf2_anchor_properties_at(b, size);
		if (at == 0 || size - at < 4) {
			rc = weft__error(WEFT_EFORMAT, path, size,
					 "expected the machine name, creator, description and "
					 "property count of the anchor file; the file ends");
		} else {
			uint64_t count = weft__otf2_anchor_uint(b, at, 4);
			if (count > (size - at - 4) / 2)
				rc = weft__error(WEFT_EFORMAT, path, at,
						 "expected a property count that fits in the %zu bytes "
						 "left in the anchor file, found %llu", size - at - 4,
						 (unsigned long long)count);
		}
	}
	free(b);
	return rc;
}

/* An `.otf2` anchor is an OTF2 trace; its magic decides how sure. */
static int otf2_probe(const char *path)
{
	char *anchor = anchor_of(path);
	if (anchor == NULL)
		return 0;
	int score = has_magic(anchor) ? 90 : 40;
	free(anchor);
	return score;
}

/* ---- Global definitions ----------------------------------------------------------- */

typedef struct def_reader {
	otf2_trace *ot;
	int rc;
} def_reader;

/* Adds a definition of `kind`; an error stops the reading. */
static OTF2_CallbackCode add(void *data, otf2_def_kind kind, const otf2_def *def)
{
	def_reader *r = data;
	if (r->rc == 0)
		r->rc = weft__otf2_def_add(&r->ot->defs[kind], def);
	return r->rc == 0 ? OTF2_CALLBACK_SUCCESS : OTF2_CALLBACK_INTERRUPT;
}

static OTF2_CallbackCode on_clock(void *data, uint64_t resolution, uint64_t offset,
				  uint64_t length, uint64_t realtime)
{
	(void)realtime;
	otf2_trace *ot = ((def_reader *)data)->ot;
	if (ot->has_clock)
		return OTF2_CALLBACK_SUCCESS; /* the first one counts */
	ot->resolution = resolution;
	ot->global_offset = offset;
	ot->trace_length = length;
	ot->has_clock = 1;
	return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode on_string(void *data, OTF2_StringRef self, const char *text)
{
	otf2_def d = { .ref = self, .text = (char *)(text ? text : "") };
	return add(data, OTF2_DEF_STRING, &d);
}

static OTF2_CallbackCode on_paradigm(void *data, OTF2_Paradigm p, OTF2_StringRef name,
				     OTF2_ParadigmClass cls)
{
	otf2_def d = { .ref = p, .name = name, .v = { cls } };
	return add(data, OTF2_DEF_PARADIGM, &d);
}

static OTF2_CallbackCode on_attribute(void *data, OTF2_AttributeRef self, OTF2_StringRef name,
				      OTF2_StringRef description, OTF2_Type type)
{
	otf2_def d = { .ref = self, .name = name, .v = { type, description } };
	return add(data, OTF2_DEF_ATTRIBUTE, &d);
}

static OTF2_CallbackCode on_tree_node(void *data, OTF2_SystemTreeNodeRef self,
				      OTF2_StringRef name, OTF2_StringRef cls,
				      OTF2_SystemTreeNodeRef parent)
{
	otf2_def d = { .ref = self, .name = name, .v = { cls, parent } };
	return add(data, OTF2_DEF_SYSTEM_TREE_NODE, &d);
}

static OTF2_CallbackCode on_location_group(void *data, OTF2_LocationGroupRef self,
					   OTF2_StringRef name, OTF2_LocationGroupType type,
					   OTF2_SystemTreeNodeRef parent,
					   OTF2_LocationGroupRef creator)
{
	(void)creator;
	otf2_def d = { .ref = self, .name = name, .v = { type, parent } };
	return add(data, OTF2_DEF_LOCATION_GROUP, &d);
}

static OTF2_CallbackCode on_location(void *data, OTF2_LocationRef self, OTF2_StringRef name,
				     OTF2_LocationType type, uint64_t events,
				     OTF2_LocationGroupRef group)
{
	otf2_def d = { .ref = self, .name = name, .v = { type, group }, .u = events };
	return add(data, OTF2_DEF_LOCATION, &d);
}

static OTF2_CallbackCode on_region(void *data, OTF2_RegionRef self, OTF2_StringRef name,
				   OTF2_StringRef canonical, OTF2_StringRef description,
				   OTF2_RegionRole role, OTF2_Paradigm paradigm,
				   OTF2_RegionFlag flags, OTF2_StringRef file,
				   uint32_t begin, uint32_t end)
{
	(void)description; (void)flags;
	otf2_def d = { .ref = self, .name = name,
		       .v = { role, paradigm, file, begin, end, canonical } };
	return add(data, OTF2_DEF_REGION, &d);
}

static OTF2_CallbackCode on_group(void *data, OTF2_GroupRef self, OTF2_StringRef name,
				  OTF2_GroupType type, OTF2_Paradigm paradigm,
				  OTF2_GroupFlag flags, uint32_t count, const uint64_t *members)
{
	(void)flags;
	otf2_def d = { .ref = self, .name = name, .v = { type, paradigm },
		       .members = (uint64_t *)members, .member_count = members ? count : 0 };
	return add(data, OTF2_DEF_GROUP, &d);
}

static OTF2_CallbackCode on_comm(void *data, OTF2_CommRef self, OTF2_StringRef name,
				 OTF2_GroupRef group, OTF2_CommRef parent, OTF2_CommFlag flags)
{
	(void)flags;
	otf2_def d = { .ref = self, .name = name, .v = { group, parent } };
	return add(data, OTF2_DEF_COMM, &d);
}

static OTF2_CallbackCode on_parameter(void *data, OTF2_ParameterRef self, OTF2_StringRef name,
				      OTF2_ParameterType type)
{
	otf2_def d = { .ref = self, .name = name, .v = { type } };
	return add(data, OTF2_DEF_PARAMETER, &d);
}

static OTF2_CallbackCode on_metric_member(void *data, OTF2_MetricMemberRef self,
					  OTF2_StringRef name, OTF2_StringRef description,
					  OTF2_MetricType type, OTF2_MetricMode mode,
					  OTF2_Type value_type, OTF2_Base base, int64_t exponent,
					  OTF2_StringRef unit)
{
	(void)description; (void)type; (void)mode; (void)base; (void)exponent;
	otf2_def d = { .ref = self, .name = name, .v = { value_type, unit } };
	return add(data, OTF2_DEF_METRIC_MEMBER, &d);
}

static OTF2_CallbackCode on_metric_class(void *data, OTF2_MetricRef self, uint8_t count,
					 const OTF2_MetricMemberRef *members,
					 OTF2_MetricOccurrence occurrence, OTF2_RecorderKind kind)
{
	(void)occurrence; (void)kind;
	uint64_t wide[256];
	for (uint32_t i = 0; members != NULL && i < count; i++)
		wide[i] = members[i];
	otf2_def d = { .ref = self, .name = OTF2_UNDEFINED_STRING, .members = wide,
		       .member_count = members ? count : 0 };
	return add(data, OTF2_DEF_METRIC_CLASS, &d);
}

static OTF2_CallbackCode on_metric_instance(void *data, OTF2_MetricRef self,
					    OTF2_MetricRef cls, OTF2_LocationRef recorder,
					    OTF2_MetricScope scope_kind, uint64_t scope)
{
	(void)recorder; (void)scope_kind; (void)scope;
	otf2_def d = { .ref = self, .name = OTF2_UNDEFINED_STRING, .v = { cls } };
	return add(data, OTF2_DEF_METRIC_INSTANCE, &d);
}

static OTF2_CallbackCode on_rma_win(void *data, OTF2_RmaWinRef self, OTF2_StringRef name,
				    OTF2_CommRef comm, OTF2_RmaWinFlag flags)
{
	(void)flags;
	otf2_def d = { .ref = self, .name = name, .v = { comm } };
	return add(data, OTF2_DEF_RMA_WIN, &d);
}

static OTF2_CallbackCode on_calling_context(void *data, OTF2_CallingContextRef self,
					    OTF2_RegionRef region,
					    OTF2_SourceCodeLocationRef where,
					    OTF2_CallingContextRef parent)
{
	(void)where;
	otf2_def d = { .ref = self, .name = OTF2_UNDEFINED_STRING, .v = { region, parent } };
	return add(data, OTF2_DEF_CALLING_CONTEXT, &d);
}

static OTF2_CallbackCode on_io_handle(void *data, OTF2_IoHandleRef self, OTF2_StringRef name,
				      OTF2_IoFileRef file, OTF2_IoParadigmRef paradigm,
				      OTF2_IoHandleFlag flags, OTF2_CommRef comm,
				      OTF2_IoHandleRef parent)
{
	(void)paradigm; (void)flags; (void)comm; (void)parent;
	otf2_def d = { .ref = self, .name = name, .v = { file } };
	return add(data, OTF2_DEF_IO_HANDLE, &d);
}

static OTF2_CallbackCode on_io_file(void *data, OTF2_IoFileRef self, OTF2_StringRef name,
				    OTF2_SystemTreeNodeRef scope)
{
	otf2_def d = { .ref = self, .name = name, .v = { scope } };
	return add(data, OTF2_DEF_IO_FILE, &d);
}

/* The callbacks of the global definitions weft keeps. */
/* Appends a property of an owner; its value is kept as libotf2 gives it. */
static OTF2_CallbackCode add_property(void *data, int owner, uint64_t ref, OTF2_StringRef name,
				      OTF2_Type type, OTF2_AttributeValue value)
{
	def_reader *r = data;
	otf2_trace *ot = r->ot;
	if (ot->property_count == ot->property_cap) {
		size_t cap = ot->property_cap ? ot->property_cap * 2 : 64;
		otf2_property *p = realloc(ot->properties, cap * sizeof *p);
		if (p == NULL) {
			r->rc = weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
			return OTF2_CALLBACK_INTERRUPT;
		}
		ot->properties = p;
		ot->property_cap = cap;
	}
	ot->properties[ot->property_count] = (otf2_property){ (uint8_t)owner, type, name,
		(uint32_t)ot->property_count, ref, value };
	ot->property_count++;
	return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode on_node_property(void *data, OTF2_SystemTreeNodeRef node,
					  OTF2_StringRef name, OTF2_Type type,
					  OTF2_AttributeValue value)
{
	return add_property(data, 0, node, name, type, value);
}

static OTF2_CallbackCode on_group_property(void *data, OTF2_LocationGroupRef group,
					   OTF2_StringRef name, OTF2_Type type,
					   OTF2_AttributeValue value)
{
	return add_property(data, 1, group, name, type, value);
}

static OTF2_CallbackCode on_location_property(void *data, OTF2_LocationRef loc,
					      OTF2_StringRef name, OTF2_Type type,
					      OTF2_AttributeValue value)
{
	return add_property(data, 2, loc, name, type, value);
}

static OTF2_GlobalDefReaderCallbacks *def_callbacks(void)
{
	OTF2_GlobalDefReaderCallbacks *c = OTF2_GlobalDefReaderCallbacks_New();
	if (c == NULL)
		return NULL;
	OTF2_GlobalDefReaderCallbacks_SetClockPropertiesCallback(c, on_clock);
	OTF2_GlobalDefReaderCallbacks_SetStringCallback(c, on_string);
	OTF2_GlobalDefReaderCallbacks_SetParadigmCallback(c, on_paradigm);
	OTF2_GlobalDefReaderCallbacks_SetAttributeCallback(c, on_attribute);
	OTF2_GlobalDefReaderCallbacks_SetSystemTreeNodeCallback(c, on_tree_node);
	OTF2_GlobalDefReaderCallbacks_SetLocationGroupCallback(c, on_location_group);
	OTF2_GlobalDefReaderCallbacks_SetLocationCallback(c, on_location);
	OTF2_GlobalDefReaderCallbacks_SetSystemTreeNodePropertyCallback(c, on_node_property);
	OTF2_GlobalDefReaderCallbacks_SetLocationGroupPropertyCallback(c, on_group_property);
	OTF2_GlobalDefReaderCallbacks_SetLocationPropertyCallback(c, on_location_property);
	OTF2_GlobalDefReaderCallbacks_SetRegionCallback(c, on_region);
	OTF2_GlobalDefReaderCallbacks_SetGroupCallback(c, on_group);
	OTF2_GlobalDefReaderCallbacks_SetCommCallback(c, on_comm);
	OTF2_GlobalDefReaderCallbacks_SetParameterCallback(c, on_parameter);
	OTF2_GlobalDefReaderCallbacks_SetMetricMemberCallback(c, on_metric_member);
	OTF2_GlobalDefReaderCallbacks_SetMetricClassCallback(c, on_metric_class);
	OTF2_GlobalDefReaderCallbacks_SetMetricInstanceCallback(c, on_metric_instance);
	OTF2_GlobalDefReaderCallbacks_SetRmaWinCallback(c, on_rma_win);
	OTF2_GlobalDefReaderCallbacks_SetCallingContextCallback(c, on_calling_context);
	OTF2_GlobalDefReaderCallbacks_SetIoHandleCallback(c, on_io_handle);
	OTF2_GlobalDefReaderCallbacks_SetIoRegularFileCallback(c, on_io_file);
	return c;
}

typedef struct dup_ctx {
	weft_trace *trace;
	otf2_trace *ot;
} dup_ctx;

/* A definition given twice: a warning (EZTrace 2.0 defines group 0 twice). */
static void on_duplicate(void *data, otf2_def_kind kind, uint64_t ref)
{
	dup_ctx *c = data;
	c->ot->duplicates++;
	const char *anchor = c->ot->anchor;
	const char *slash = strrchr(anchor, '/');
	weft__trace_diag(c->trace, WEFT_SEV_WARNING, WEFT_EFORMAT,
			 slash ? slash + 1 : anchor, WEFT_NO_OFFSET,
			 "%s %" PRIu64 " is defined more than once; the first "
			 "definition is kept", weft__otf2_def_kind_name(kind), ref);
}

/* Reads the global definitions into the tables. */
static int read_definitions(weft_trace *trace, otf2_trace *ot, OTF2_Reader *reader)
{
	OTF2_GlobalDefReader *gdr = OTF2_Reader_GetGlobalDefReader(reader);
	if (gdr == NULL)
		return weft__otf2_error(WEFT_EFORMAT, ot->anchor,
					"cannot read the global definitions", OTF2_SUCCESS);
	OTF2_GlobalDefReaderCallbacks *cb = def_callbacks();
	if (cb == NULL)
		return weft__error(WEFT_ENOMEM, ot->anchor, WEFT_NO_OFFSET, "out of memory");
	def_reader r = { ot, 0 };
	OTF2_ErrorCode e = OTF2_Reader_RegisterGlobalDefCallbacks(reader, gdr, cb, &r);
	uint64_t read = 0;
	if (e == OTF2_SUCCESS)
		e = OTF2_Reader_ReadAllGlobalDefinitions(reader, gdr, &read);
	OTF2_GlobalDefReaderCallbacks_Delete(cb);
	OTF2_Reader_CloseGlobalDefReader(reader, gdr);
	if (r.rc < 0)
		return r.rc;
	if (e != OTF2_SUCCESS)
		return weft__otf2_error(WEFT_EFORMAT, ot->anchor,
					"the global definitions cannot be read", e);
	dup_ctx dc = { trace, ot };
	for (int k = 0; k < OTF2_DEF_KIND_COUNT; k++) {
		int rc = weft__otf2_def_finish(&ot->defs[k], (otf2_def_kind)k, on_duplicate, &dc);
		if (rc < 0)
			return rc;
	}
	if (!ot->has_clock)
		weft__trace_diag(trace, WEFT_SEV_WARNING, WEFT_EFORMAT, NULL, WEFT_NO_OFFSET,
				 "no clock properties: timestamps are taken as ns");
	else if (ot->resolution == 0)
		weft__trace_diag(trace, WEFT_SEV_WARNING, WEFT_EFORMAT, NULL, WEFT_NO_OFFSET,
				 "the clock resolution is 0: timestamps are taken as ns");
	return 0;
}

/* ---- MPI ranks, for the message flows ------------------------------------------- */

static int by_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/*
 * The MPI rank of each stream: the index of its location group's
 * location in the MPI COMM_LOCATIONS group; and for each communicator,
 * the rank of each of its members (OTF2: a communicator's group lists
 * ranks of the COMM_LOCATIONS group).
 */
static int set_ranks(otf2_trace *ot)
{
	const otf2_def_table *groups = &ot->defs[OTF2_DEF_GROUP];
	const otf2_def *world = NULL;
	for (size_t i = 0; i < groups->count && world == NULL; i++)
		if (groups->defs[i].v[0] == OTF2_GROUP_TYPE_COMM_LOCATIONS &&
		    groups->defs[i].v[1] == OTF2_PARADIGM_MPI)
			world = &groups->defs[i];
	for (size_t s = 0; s < ot->stream_count; s++) {
		otf2_stream_ref *sr = &ot->streams[s];
		sr->world_rank = -1;
		for (uint32_t j = 0; world != NULL && j < world->member_count; j++) {
			const otf2_def *loc = weft__otf2_def_find(&ot->defs[OTF2_DEF_LOCATION],
								  world->members[j]);
			if (loc != NULL && loc->v[1] == sr->group) {
				sr->world_rank = j;
				break;
			}
		}
	}
	const otf2_def_table *comms = &ot->defs[OTF2_DEF_COMM];
	ot->comms = calloc(comms->count ? comms->count : 1, sizeof *ot->comms);
	if (ot->comms == NULL)
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	for (size_t i = 0; i < comms->count; i++) {
		otf2_comm_ranks *cr = &ot->comms[ot->comm_count++];
		cr->comm = comms->defs[i].ref;
		const otf2_def *g = weft__otf2_def_find(groups, comms->defs[i].v[0]);
		if (g == NULL || g->member_count == 0) {
			cr->identity = 1;
			continue;
		}
		cr->identity = 1;
		for (uint32_t k = 0; k < g->member_count; k++)
			cr->identity &= g->members[k] == k;
		if (cr->identity)
			continue;
		cr->sorted = malloc(g->member_count * sizeof *cr->sorted);
		if (cr->sorted == NULL)
			return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
		for (uint32_t k = 0; k < g->member_count; k++)
			cr->sorted[k] = (g->members[k] & 0xffffffffu) << 32 | k;
		cr->count = g->member_count;
		qsort(cr->sorted, cr->count, sizeof *cr->sorted, by_u64);
	}
	return 0;
}

/* ---- The hierarchy ---------------------------------------------------------------- */

/* A path component from an OTF2 name: no '/', not empty. */
static void component(char *out, size_t cap, const char *name, const char *fallback,
		      uint64_t ref)
{
	if (name == NULL || name[0] == '\0') {
		snprintf(out, cap, "%s.%" PRIu64, fallback, ref);
		return;
	}
	snprintf(out, cap, "%s", name);
	for (char *p = out; *p; p++)
		if (*p == '/' || *p == ' ')
			*p = '_';
}

static int by_owner(const void *a, const void *b)
{
	const otf2_property *x = a, *y = b;
	if (x->owner != y->owner)
		return x->owner < y->owner ? -1 : 1;
	if (x->ref != y->ref)
		return x->ref < y->ref ? -1 : 1;
	return (x->seq > y->seq) - (x->seq < y->seq);
}

/* A property's value as JSON: strings as text, numbers as numbers. */
static json_t *property_value(const otf2_trace *ot, const otf2_property *p)
{
	const OTF2_AttributeValue *v = &p->value;
	switch (p->type) {
	case OTF2_TYPE_STRING: {
		const char *s = weft__otf2_string(ot, v->stringRef);
		return s ? weft__json_text(s, strlen(s)) : json_null();
	}
	case OTF2_TYPE_UINT8: return json_integer(v->uint8);
	case OTF2_TYPE_UINT16: return json_integer(v->uint16);
	case OTF2_TYPE_UINT32: return json_integer(v->uint32);
	case OTF2_TYPE_UINT64: return json_integer((json_int_t)v->uint64);
	case OTF2_TYPE_INT8: return json_integer(v->int8);
	case OTF2_TYPE_INT16: return json_integer(v->int16);
	case OTF2_TYPE_INT32: return json_integer(v->int32);
	case OTF2_TYPE_INT64: return json_integer(v->int64);
	case OTF2_TYPE_FLOAT: return json_real(v->float32);
	case OTF2_TYPE_DOUBLE: return json_real(v->float64);
	default: return json_integer((json_int_t)v->uint64); /* a reference */
	}
}

/* {"<name>": value, ...} of the properties of `owner` `ref` (the last of a name wins), or NULL. */
static json_t *properties_of(const otf2_trace *ot, int owner, uint64_t ref)
{
	size_t lo = 0, hi = ot->property_count;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const otf2_property *p = &ot->properties[mid];
		if (p->owner < owner || (p->owner == owner && p->ref < ref))
			lo = mid + 1;
		else
			hi = mid;
	}
	json_t *o = NULL;
	for (size_t i = lo; i < ot->property_count && ot->properties[i].owner == owner &&
			    ot->properties[i].ref == ref; i++) {
		const char *name = weft__otf2_string(ot, ot->properties[i].name);
		if (o == NULL)
			o = json_object();
		if (o != NULL)
			json_object_set_new(o, name ? name : "?", property_value(ot, &ot->properties[i]));
	}
	return o;
}

/*
 * Metadata {"name": ..., "class"/"type": ..., "properties": {...}} of a
 * node made of definition `ref` of `owner` (0 system tree node, 1
 * location group, 2 location).
 */
static int node_metadata(weft_trace *trace, uint32_t node, const char *name,
			 const char *key, const char *value, int owner, uint64_t ref)
{
	json_t *m = json_object();
	if (m != NULL && name != NULL)
		json_object_set_new(m, "name", weft__json_text(name, strlen(name)));
	if (m != NULL && value != NULL)
		json_object_set_new(m, key, weft__json_text(value, strlen(value)));
	json_t *props = m != NULL ? properties_of(trace->backend_data, owner, ref) : NULL;
	if (props != NULL)
		json_object_set_new(m, "properties", props);
	return weft__trace_set_node_metadata_object(trace, node, m);
}

typedef struct tree_builder {
	weft_trace *trace;
	otf2_trace *ot;
	uint32_t *stn_node;   /* per system tree node (table index): node id + 1 */
	uint32_t *lg_node;    /* per location group (table index): node id + 1 */
} tree_builder;

/* The weft node of system tree node `ref` (made with its ancestors), or WEFT_NO_PARENT. */
static int tree_node(tree_builder *b, uint64_t ref, int depth, uint32_t *out)
{
	const otf2_def_table *t = &b->ot->defs[OTF2_DEF_SYSTEM_TREE_NODE];
	const otf2_def *d = weft__otf2_def_find(t, ref);
	*out = WEFT_NO_PARENT;
	if (d == NULL || depth > TREE_DEPTH_MAX)
		return 0;
	size_t i = (size_t)(d - t->defs);
	if (b->stn_node[i] != 0) {
		*out = b->stn_node[i] - 1;
		return 0;
	}
	uint32_t parent;
	int rc = d->v[1] == ref ? 0 : tree_node(b, d->v[1], depth + 1, &parent);
	if (d->v[1] == ref)
		parent = WEFT_NO_PARENT;
	if (rc < 0)
		return rc;
	if (b->stn_node[i] != 0) { /* made while making its ancestors (a cycle) */
		*out = b->stn_node[i] - 1;
		return 0;
	}
	const char *name = weft__otf2_string(b->ot, d->name);
	const char *cls = weft__otf2_string(b->ot, d->v[0]);
	char comp[128];
	component(comp, sizeof comp, name, "node", ref);
	uint32_t id;
	rc = weft__trace_add_node(b->trace, parent, cls && *cls ? cls : "node", comp,
				  (int64_t)ref, NULL, &id);
	if (rc == 0)
		rc = node_metadata(b->trace, id, name, "class", cls, 0, ref);
	if (rc < 0)
		return rc;
	b->stn_node[i] = id + 1;
	*out = id;
	return 0;
}

static const char *group_kind(uint32_t type)
{
	return type == OTF2_LOCATION_GROUP_TYPE_ACCELERATOR ? "accelerator" : "process";
}

static const char *location_kind(uint32_t type)
{
	switch (type) {
	case OTF2_LOCATION_TYPE_ACCELERATOR_STREAM: return "gpu";
	case OTF2_LOCATION_TYPE_METRIC: return "metric";
	default: return "thread";
	}
}

/* The weft node of location group `ref` (made under its system tree node). */
static int group_node(tree_builder *b, uint64_t ref, uint32_t *out)
{
	const otf2_def_table *t = &b->ot->defs[OTF2_DEF_LOCATION_GROUP];
	const otf2_def *d = weft__otf2_def_find(t, ref);
	*out = WEFT_NO_PARENT;
	if (d == NULL)
		return 0;
	size_t i = (size_t)(d - t->defs);
	if (b->lg_node[i] != 0) {
		*out = b->lg_node[i] - 1;
		return 0;
	}
	uint32_t parent;
	int rc = tree_node(b, d->v[1], 0, &parent);
	char comp[64];
	snprintf(comp, sizeof comp, "%s.%" PRIu64, group_kind(d->v[0]), ref);
	uint32_t id;
	if (rc == 0)
		rc = weft__trace_add_node(b->trace, parent, group_kind(d->v[0]), comp,
					  (int64_t)ref, NULL, &id);
	if (rc == 0)
		rc = node_metadata(b->trace, id, weft__otf2_string(b->ot, d->name), NULL, NULL, 1,
				   ref);
	if (rc < 0)
		return rc;
	b->lg_node[i] = id + 1;
	*out = id;
	return 0;
}

/* The stream of one location, under its location group. */
static int add_location(tree_builder *b, const otf2_def *loc)
{
	otf2_trace *ot = b->ot;
	uint32_t parent, node, index;
	int rc = group_node(b, loc->v[1], &parent);
	char comp[64], file[96];
	snprintf(comp, sizeof comp, "%s.%" PRIu64, location_kind(loc->v[0]), loc->ref);
	if (rc == 0)
		rc = weft__trace_add_node(b->trace, parent, location_kind(loc->v[0]), comp,
					  (int64_t)loc->ref, NULL, &node);
	if (rc == 0)
		rc = node_metadata(b->trace, node, weft__otf2_string(ot, loc->name), NULL, NULL, 2,
				   loc->ref);
	const char *dir = strrchr(ot->archive_dir, '/');
	snprintf(file, sizeof file, "%s/%" PRIu64 ".evt", dir ? dir + 1 : ot->archive_dir,
		 loc->ref);
	char *path = weft__path_join(ot->archive_dir, strrchr(file, '/') + 1);
	struct stat st;
	uint64_t size = path && stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
	free(path);
	if (rc == 0)
		rc = weft__trace_add_stream(b->trace, node, file, size, &index);
	if (rc < 0)
		return rc;
	b->trace->streams[index].finished = -1; /* OTF2 does not record it */
	ot->streams[ot->stream_count++] = (otf2_stream_ref){ loc->ref, -1, loc->v[1] };
	return 0;
}

/* Nodes and streams: every location, in reference order. */
static int build_tree(weft_trace *trace, otf2_trace *ot)
{
	const otf2_def_table *locs = &ot->defs[OTF2_DEF_LOCATION];
	tree_builder b = { trace, ot, NULL, NULL };
	if (ot->property_count > 1)
		qsort(ot->properties, ot->property_count, sizeof *ot->properties, by_owner);
	b.stn_node = calloc(ot->defs[OTF2_DEF_SYSTEM_TREE_NODE].count + 1, sizeof *b.stn_node);
	b.lg_node = calloc(ot->defs[OTF2_DEF_LOCATION_GROUP].count + 1, sizeof *b.lg_node);
	ot->streams = calloc(locs->count + 1, sizeof *ot->streams);
	int rc = b.stn_node && b.lg_node && ot->streams
			 ? 0 : weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	for (size_t i = 0; rc == 0 && i < locs->count; i++)
		rc = add_location(&b, &locs->defs[i]);
	free(b.stn_node);
	free(b.lg_node);
	return rc;
}

/* ---- Metadata ----------------------------------------------------------------------- */

static json_t *optional_text(const char *s)
{
	return s ? weft__json_text(s, strlen(s)) : json_null();
}

/* The trace-wide metadata: creator, clock, how many definitions of each kind. */
/* OTF2_RegionRole's names (OTF2 3.0), lower case. */
static const char *const region_roles[] = {
	"unknown", "function", "wrapper", "loop", "code", "parallel", "sections", "section",
	"workshare", "single", "single_sblock", "master", "critical", "critical_sblock",
	"atomic", "barrier", "implicit_barrier", "flush", "ordered", "ordered_sblock", "task",
	"task_create", "task_wait", "coll_one2all", "coll_all2one", "coll_all2all",
	"coll_other", "file_io", "point2point", "rma", "data_transfer", "artificial",
	"thread_create", "thread_wait", "task_untied", "allocate", "deallocate", "reallocate",
	"file_io_metadata"
};

/* OTF2_Paradigm's names (OTF2 3.0), lower case. */
static const char *const paradigms[] = {
	"unknown", "user", "compiler", "openmp", "mpi", "cuda", "measurement_system",
	"pthread", "hmpp", "ompss", "hardware", "gaspi", "upc", "shmem", "winthread",
	"qtthread", "acethread", "tbbthread", "openacc", "opencl", "mtapi", "sampling", "none",
	"hip", "kokkos"
};

/* names[value] when in the table, else the number. */
static json_t *enum_name(const char *const *names, size_t count, uint32_t value)
{
	return value < count ? json_string(names[value]) : json_integer(value);
}

/*
 * The regions {"<ref>": {"name", "role", "paradigm", "file", "begin",
 * "end"}} (file and lines when the definition gives them) and the
 * communicators {"<ref>": {"name", "size"}}: what a reader of the trace
 * wants of the definitions besides the names in the events.
 */
static void definition_details(const otf2_trace *ot, json_t *m)
{
	json_t *regions = json_object(), *comms = json_object();
	const otf2_def_table *t = &ot->defs[OTF2_DEF_REGION];
	for (size_t i = 0; regions != NULL && i < t->count; i++) {
		const otf2_def *d = &t->defs[i];
		const char *name = weft__otf2_string(ot, d->name);
		const char *file = weft__otf2_string(ot, d->v[2]);
		json_t *r = json_object();
		json_object_set_new(r, "name", name ? weft__json_text(name, strlen(name)) : json_null());
		json_object_set_new(r, "role", enum_name(region_roles, sizeof region_roles /
							 sizeof *region_roles, d->v[0]));
		json_object_set_new(r, "paradigm", enum_name(paradigms, sizeof paradigms /
							     sizeof *paradigms, d->v[1]));
		if (file != NULL && file[0] != '\0') {
			json_object_set_new(r, "file", weft__json_text(file, strlen(file)));
			json_object_set_new(r, "begin", json_integer(d->v[3]));
			json_object_set_new(r, "end", json_integer(d->v[4]));
		}
		char key[24];
		snprintf(key, sizeof key, "%" PRIu64, d->ref);
		json_object_set_new(regions, key, r);
	}
	t = &ot->defs[OTF2_DEF_COMM];
	for (size_t i = 0; comms != NULL && i < t->count; i++) {
		const otf2_def *d = &t->defs[i];
		const char *name = weft__otf2_string(ot, d->name);
		const otf2_def *g = weft__otf2_def_find(&ot->defs[OTF2_DEF_GROUP], d->v[0]);
		char key[24];
		snprintf(key, sizeof key, "%" PRIu64, d->ref);
		json_object_set_new(comms, key, json_pack("{s:o,s:I}", "name",
			name ? weft__json_text(name, strlen(name)) : json_null(),
			"size", (json_int_t)(g ? g->member_count : 0)));
	}
	if (regions != NULL && json_object_size(regions) > 0)
		json_object_set_new(m, "regions", regions);
	else
		json_decref(regions);
	if (comms != NULL && json_object_size(comms) > 0)
		json_object_set_new(m, "communicators", comms);
	else
		json_decref(comms);
}

/* The anchor file's properties {"NAMESPACE::KEY": "value"}, or NULL (none). */
static json_t *anchor_properties(OTF2_Reader *reader)
{
	uint32_t count = 0;
	char **names = NULL;
	if (OTF2_Reader_GetPropertyNames(reader, &count, &names) != OTF2_SUCCESS || count == 0) {
		free(names);
		return NULL;
	}
	json_t *o = json_object();
	for (uint32_t i = 0; o != NULL && i < count; i++) {
		char *value = NULL;
		if (OTF2_Reader_GetProperty(reader, names[i], &value) == OTF2_SUCCESS && value)
			json_object_set_new(o, names[i], weft__json_text(value, strlen(value)));
		free(value);
	}
	free(names); /* one allocation holds the array and the names */
	return o;
}

static int set_metadata(weft_trace *trace, otf2_trace *ot, OTF2_Reader *reader)
{
	uint8_t major = 0, minor = 0, bugfix = 0;
	char *creator = NULL, *description = NULL, *machine = NULL;
	OTF2_Reader_GetVersion(reader, &major, &minor, &bugfix);
	OTF2_Reader_GetCreator(reader, &creator);
	OTF2_Reader_GetDescription(reader, &description);
	OTF2_Reader_GetMachineName(reader, &machine);
	char version[32];
	snprintf(version, sizeof version, "%u.%u.%u", major, minor, bugfix);
	trace->layout_version = major;
	json_t *defs = json_object();
	for (int k = 0; defs != NULL && k < OTF2_DEF_KIND_COUNT; k++) {
		if (ot->defs[k].count == 0)
			continue;
		char key[32]; /* "system tree node" -> "system_tree_node" */
		snprintf(key, sizeof key, "%s", weft__otf2_def_kind_name((otf2_def_kind)k));
		for (char *p = key; *p; p++)
			*p = *p == ' ' ? '_' : *p == '/' ? '_' : *p;
		json_object_set_new(defs, key, json_integer((json_int_t)ot->defs[k].count));
	}
	json_t *m = json_pack("{s:s,s:o,s:o,s:o,s:{s:I,s:I,s:I},s:o,s:I}",
			      "otf2_version", version,
			      "creator", optional_text(creator),
			      "description", optional_text(description),
			      "machine", optional_text(machine),
			      "clock", "resolution", (json_int_t)ot->resolution,
			      "global_offset", (json_int_t)ot->global_offset,
			      "length", (json_int_t)ot->trace_length,
			      "definitions", defs ? defs : json_object(),
			      "duplicate_definitions", (json_int_t)ot->duplicates);
	free(creator);
	free(description);
	free(machine);
	if (m != NULL)
		definition_details(ot, m);
	json_t *props = anchor_properties(reader);
	if (m != NULL && props != NULL)
		json_object_set_new(m, "properties", props);
	else
		json_decref(props);
	return weft__trace_set_metadata_object(trace, m);
}

/* ---- Open and close --------------------------------------------------------------- */

static void otf2_close(weft_trace *trace)
{
	otf2_trace *ot = trace->backend_data;
	if (ot == NULL)
		return;
	for (int k = 0; k < OTF2_DEF_KIND_COUNT; k++)
		weft__otf2_def_table_free(&ot->defs[k]);
	for (size_t i = 0; i < ot->comm_count; i++)
		free(ot->comms[i].sorted);
	free(ot->comms);
	free(ot->properties);
	free(ot->streams);
	free(ot->anchor);
	free(ot->archive_dir);
	free(ot);
	trace->backend_data = NULL;
}

static int otf2_open(weft_trace *trace, const char *path, const weft_open_options *options)
{
	(void)options;
	otf2_trace *ot = calloc(1, sizeof *ot);
	if (ot == NULL)
		return weft__error(WEFT_ENOMEM, path, WEFT_NO_OFFSET, "out of memory");
	trace->backend_data = ot;
	ot->anchor = anchor_of(path);
	if (ot->anchor == NULL)
		return weft__error(WEFT_ENOTFOUND, path, WEFT_NO_OFFSET,
				   "expected an OTF2 anchor file (*.otf2) or a directory "
				   "holding exactly one");
	ot->archive_dir = strdup(ot->anchor);
	if (ot->archive_dir == NULL)
		return weft__error(WEFT_ENOMEM, path, WEFT_NO_OFFSET, "out of memory");
	ot->archive_dir[strlen(ot->archive_dir) - strlen(".otf2")] = '\0';
	int checked = check_anchor(ot->anchor);
	if (checked < 0)
		return checked;
	weft__otf2_quiet();
	OTF2_Reader *reader = OTF2_Reader_Open(ot->anchor);
	if (reader == NULL)
		return weft__otf2_error(WEFT_EFORMAT, ot->anchor,
					"not an OTF2 archive that libotf2 opens", OTF2_SUCCESS);
	int rc = 0;
	OTF2_ErrorCode e = OTF2_Reader_SetSerialCollectiveCallbacks(reader);
	uint64_t locations = 0;
	if (e == OTF2_SUCCESS)
		e = OTF2_Reader_GetNumberOfLocations(reader, &locations);
	if (e != OTF2_SUCCESS)
		rc = weft__otf2_error(WEFT_EFORMAT, ot->anchor,
				      "not an OTF2 anchor file that libotf2 reads", e);
	if (rc == 0)
		rc = read_definitions(trace, ot, reader);
	if (rc == 0)
		rc = build_tree(trace, ot);
	if (rc == 0)
		rc = set_ranks(ot);
	if (rc == 0)
		rc = set_metadata(trace, ot, reader);
	OTF2_Reader_Close(reader);
	return rc;
}

const weft_backend weft__otf2_backend = {
	.format = WEFT_FORMAT_OTF2,
	.name = "otf2",
	.expected = "an OTF2 anchor file (*.otf2) or its directory",
	.path_kinds = WEFT__PATH_DIR | WEFT__PATH_FILE,
	.payload_is_fields = 1,
	.probe = otf2_probe,
	.open = otf2_open,
	.close = otf2_close,
	.stream_open = weft__otf2_stream_open,
	.stream_next = weft__otf2_stream_next,
	.stream_next_batch = weft__otf2_stream_next_batch,
	.stream_close = weft__otf2_stream_close,
	.event_fields = weft__otf2_event_fields,
	.event_classify = weft__otf2_event_classify,
	.event_schemas = weft__otf2_event_schemas,
	.readers_share_data = 1,
};
