/* SPDX-License-Identifier: MIT */
/*
 * formats/otf2/otf2_internal.h - the OTF2 backend (read through Debian's
 * libotf2, never a parser of our own): the definitions kept from the
 * global definition file, the record kinds and their fields, and the
 * per-location event readers.
 *
 * Files:
 *   otf2_open.c    probe, open (global definitions -> hierarchy, tables),
 *                  close, libotf2's error messages;
 *   otf2_defs.c    the definition tables (duplicates, lookups);
 *   otf2_records.c the record kinds: libotf2 callbacks that pack each
 *                  record, weft_event_fields(), classification, schemas;
 *   otf2_stream.c  a stream = one location, read in batches.
 */
#ifndef WEFT_FORMATS_OTF2_INTERNAL_H
#define WEFT_FORMATS_OTF2_INTERNAL_H

#include <stdint.h>

#include <otf2/otf2.h>

#include "core/otf2_common.h"

#include "core/internal.h"

/* ---- Definitions (otf2_defs.c) ------------------------------------------------ */

/* The definition kinds weft keeps. */
typedef enum otf2_def_kind {
	OTF2_DEF_STRING, OTF2_DEF_PARADIGM, OTF2_DEF_ATTRIBUTE, OTF2_DEF_SYSTEM_TREE_NODE,
	OTF2_DEF_LOCATION_GROUP, OTF2_DEF_LOCATION, OTF2_DEF_REGION, OTF2_DEF_GROUP,
	OTF2_DEF_COMM, OTF2_DEF_PARAMETER, OTF2_DEF_METRIC_MEMBER, OTF2_DEF_METRIC_CLASS,
	OTF2_DEF_METRIC_INSTANCE, OTF2_DEF_RMA_WIN, OTF2_DEF_CALLING_CONTEXT,
	OTF2_DEF_IO_HANDLE, OTF2_DEF_IO_FILE, OTF2_DEF_KIND_COUNT
} otf2_def_kind;

/*
 * One definition. `name` is a string reference (the text of a STRING
 * definition is in `text`); v[] and u hold the numbers of the kind:
 *   PARADIGM           v0 class
 *   ATTRIBUTE          v0 type, v1 description
 *   SYSTEM_TREE_NODE   v0 class name, v1 parent
 *   LOCATION_GROUP     v0 type, v1 system tree parent
 *   LOCATION           v0 type, v1 location group, u number of events
 *   REGION             v0 role, v1 paradigm, v2 source file, v3 begin line,
 *                      v4 end line, v5 canonical name
 *   GROUP              v0 type, v1 paradigm, members = the members
 *   COMM               v0 group, v1 parent
 *   PARAMETER          v0 type
 *   METRIC_MEMBER      v0 value type, v1 unit
 *   METRIC_CLASS       members = its metric members
 *   METRIC_INSTANCE    v0 metric class
 *   CALLING_CONTEXT    v0 region
 */
typedef struct otf2_def {
	uint64_t ref;
	uint32_t name;
	uint32_t v[6];
	uint64_t u;
	uint64_t *members;
	uint32_t member_count;
	uint32_t seq;       /* order of definition: the first of duplicates wins */
	char *text;
} otf2_def;

/* The definitions of one kind, sorted by reference once all are read. */
typedef struct otf2_def_table {
	otf2_def *defs;
	size_t count, cap;
	uint32_t *direct;   /* ref -> index + 1 when refs are dense, else NULL */
	uint64_t direct_count;
} otf2_def_table;

/* Appends a definition (copied; members and text copied): 0 or WEFT_ENOMEM. */
int weft__otf2_def_add(otf2_def_table *t, const otf2_def *def);
/*
 * Sorts the table by reference and removes the duplicates, keeping the
 * first definition of a reference; each removed one is reported to
 * `on_duplicate` (its kind and reference). 0 or WEFT_ENOMEM.
 */
int weft__otf2_def_finish(otf2_def_table *t, otf2_def_kind kind,
			  void (*on_duplicate)(void *ctx, otf2_def_kind kind, uint64_t ref),
			  void *ctx);
/* The definition of `ref`, or NULL. */
const otf2_def *weft__otf2_def_find(const otf2_def_table *t, uint64_t ref);
void weft__otf2_def_table_free(otf2_def_table *t);
/* "string", "region", ... for messages. */
const char *weft__otf2_def_kind_name(otf2_def_kind kind);

/* ---- The trace ---------------------------------------------------------------- */

/* Rank of every member of a communicator, for the message flows. */
typedef struct otf2_comm_ranks {
	uint64_t comm;
	int identity;       /* member k is world rank k */
	uint64_t *sorted;   /* (world rank << 32 | comm rank), sorted */
	uint32_t count;
} otf2_comm_ranks;

typedef struct otf2_stream_ref {
	uint64_t location;
	int64_t world_rank; /* MPI rank of its location group, -1 unknown */
	uint64_t group;     /* its location group */
} otf2_stream_ref;

/* A property of a system tree node, location group or location (their "properties"). */
typedef struct otf2_property {
	uint8_t owner;               /* 0 system tree node, 1 location group, 2 location */
	uint8_t type;                /* OTF2_Type */
	uint32_t name;               /* string ref */
	uint32_t seq;                /* order of definition */
	uint64_t ref;                /* the owner's ref */
	OTF2_AttributeValue value;
} otf2_property;

typedef struct otf2_trace {
	char *anchor;                /* path of the .otf2 anchor file */
	char *archive_dir;           /* anchor without ".otf2": the local files */
	otf2_def_table defs[OTF2_DEF_KIND_COUNT];
	uint64_t resolution;         /* clock ticks per second */
	uint64_t global_offset, trace_length;
	int has_clock;
	otf2_stream_ref *streams;
	size_t stream_count;
	otf2_comm_ranks *comms;
	size_t comm_count;
	uint64_t duplicates;         /* definitions given twice */
	otf2_property *properties;   /* sorted by owner, ref, order once read */
	size_t property_count, property_cap;
} otf2_trace;

/* Ticks of the trace's clock to ns. */
uint64_t weft__otf2_ns(const otf2_trace *ot, uint64_t ticks);
/* The text of string `ref`, or NULL. */
const char *weft__otf2_string(const otf2_trace *ot, uint32_t ref);
/* The text of the name of definition `ref` of `kind`, or NULL. */
const char *weft__otf2_def_name(const otf2_trace *ot, otf2_def_kind kind, uint64_t ref);

/* libotf2's errors: core/otf2_common.h. */

/* ---- Records (otf2_records.c) ------------------------------------------------- */

/* Reference kinds of a record's fields: what a number refers to. */
typedef enum otf2_ref {
	OTF2_REF_NONE, OTF2_REF_TIME, OTF2_REF_REGION, OTF2_REF_STRING,
	OTF2_REF_PARAMETER, OTF2_REF_COMM, OTF2_REF_METRIC, OTF2_REF_GROUP,
	OTF2_REF_RMA_WIN, OTF2_REF_IO_HANDLE, OTF2_REF_IO_FILE
} otf2_ref;

/*
 * A packed event: payload = one little-endian-free u64 slot per field
 * (host order, as libotf2 delivered it), data = the attribute list,
 * `u32 count` then entries of 16 bytes: u32 attribute, u8 OTF2 type,
 * 3 bytes 0, u64 value. Metric: slots metric, count, then (type, value)
 * pairs; ProgramBegin: program, count, then the argument strings.
 */
typedef struct otf2_batch {
	const otf2_trace *ot;
	uint32_t stream;
	weft_event *events;
	size_t count, cap;
	uint64_t *slots;           /* payload slots of every event of the batch */
	size_t slot_count, slot_cap;
	uint8_t *attrs;            /* attribute lists of the batch */
	size_t attr_size, attr_cap;
	size_t *slot_at, *attr_at; /* per event: where its slots and list start */
	size_t slot_at_cap, attr_at_cap;
	int failed;                /* out of memory in a callback */
} otf2_batch;

/* A reader's callbacks for every record kind, packing into an otf2_batch. */
OTF2_EvtReaderCallbacks *weft__otf2_event_callbacks(void);
/* After a read: the events' payload and data pointers into the batch. */
void weft__otf2_batch_fix(otf2_batch *b);

int weft__otf2_event_fields(const weft_trace *trace, const weft_event *event,
			    weft_field *out, size_t cap);
void weft__otf2_event_classify(const weft_trace *trace, const weft_event *event,
			       weft_event_class *out);
size_t weft__otf2_event_schemas(const weft_trace *trace, const weft_event_schema **out);

/* ---- Streams (otf2_stream.c) -------------------------------------------------- */

int weft__otf2_stream_open(weft_trace *trace, uint32_t stream, int stored, void **state);
int weft__otf2_stream_next(void *state, weft_event *event);
int weft__otf2_stream_next_batch(void *state, weft_event *events, size_t cap);
void weft__otf2_stream_close(void *state);

#endif /* WEFT_FORMATS_OTF2_INTERNAL_H */
