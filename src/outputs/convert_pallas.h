/* SPDX-License-Identifier: MIT */
/*
 * outputs/convert_pallas.h - the pieces of `weft convert -t pallas` and
 * `-t otf2` (convert_pallas.c) shared by their files: the conversion
 * state, the string and attribute tables and the definitions
 * (convert_pallas_defs.c), the attribute lists of a record
 * (convert_pallas_attrs.c), and the targets that store the converted
 * trace: Pallas (convert_pallas.c) and OTF2 (convert_otf2.c).
 * docs/convert-pallas.md, docs/convert-otf2.md.
 */
#ifndef WEFT_OUTPUTS_CONVERT_PALLAS_H
#define WEFT_OUTPUTS_CONVERT_PALLAS_H

#include <signal.h>
#include <stdint.h>

#include "core/internal.h"
#include "outputs/convert.h"
#include "outputs/outdir.h"
#include "outputs/writer.h"
#include "weft/pallas.h"

#define MAIN_NAME "main"              /* DIR/main.pallas */
#define SPAN_DEPTH_MAX WEFT_PALLAS_MAX_NESTING /* deeper spans: plain events */
#define FIELDS_MAX 128                /* decoded fields of one event */
#define STRING_VALUE_BUDGET (16u << 20) /* bytes of interned string values */
#define STRING_VALUE_MAX 4096         /* longer string values stay in the payload */
#define PAYLOAD_CHUNKS_MAX WEFT_PALLAS_ATTRS_MAX
#define FIELD_CACHE_SIZE 64
#define NONE UINT32_MAX

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
	uint8_t flat;        /* Pallas sources: a block start written as a plain event */
} span;

/* A stream being written: its location and its thread writer. */
typedef struct stream_out {
	uint32_t stream;   /* source stream index */
	uint32_t index;    /* its place among the selected streams */
	uint32_t location; /* location id (once its thread is made) */
	uint32_t group;    /* location group id */
	void *thread;      /* the target's writer of this location */
	uint64_t last_time; /* of its last event: a thread goes forward in time */
	int placed;        /* location and group known (a part of a shared conversion) */
	span *stack;
	uint32_t depth, cap;
} stream_out;

/* What the conversion had to adapt, reported on stderr at the end. */
typedef struct conv_stats {
	uint64_t leave_fallbacks;    /* LEAVE not closing the innermost block */
	uint64_t interval_fallbacks; /* intervals overlapping without nesting */
	uint64_t depth_fallbacks;    /* blocks deeper than SPAN_DEPTH_MAX */
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

typedef struct conv conv;

/* Record kinds of conv_target.record (Pallas's numbers). */
#define REC_ENTER 2
#define REC_LEAVE 3
#define REC_GENERIC 58

/*
 * Where the converted trace goes. The conversion builds Pallas's data
 * model, which is OTF2's (strings, regions, typed attributes, location
 * groups holding locations, per-location records with attribute lists);
 * a target stores it. Every function returns 0 or a negative weft error
 * code (the caller reports it); refs and ids are the conversion's.
 */
typedef struct conv_target {
	const char *what;             /* "Pallas", "OTF2": in messages */
	const weft__outdir_kind *dir_kind; /* what DIR may hold (for --force) */
	uint32_t depth_max;           /* deeper blocks are written as Generic events */
	int raw_records;              /* a Pallas source's records are kept as they are */
	int (*start)(conv *c);        /* the output, in c->tmp_dir */
	int (*string)(conv *c, const char *text, uint32_t *ref); /* text stays put */
	int (*region)(conv *c, uint32_t ref, uint32_t name);
	int (*attribute)(conv *c, uint32_t ref, uint32_t name, int type);
	int (*group)(conv *c, uint32_t id, uint32_t name, uint32_t parent);
	int (*group_metadata)(conv *c, uint32_t group, const char *key, const char *value);
	/* Location `id` of source stream `stream`, in `group`. */
	int (*location)(conv *c, uint32_t group, uint32_t id, uint32_t name, uint32_t stream);
	int (*metadata)(conv *c, const char *key, const char *value);
	int (*thread_begin)(conv *c, stream_out *s);
	/* REC_ENTER/REC_LEAVE of region `ref`, REC_GENERIC named by string `ref`. */
	int (*record)(conv *c, stream_out *s, const weft_pallas_attrs *a, uint64_t time,
		      int kind, uint32_t ref);
	/* A Pallas source's record (raw_records only). */
	int (*raw)(conv *c, stream_out *s, const weft_pallas_attrs *a, uint64_t time,
		   int record, int role, const uint8_t *payload, size_t size);
	/*
	 * Optional: a point event of category "mpi" (weft's MPI records:
	 * MPI_Send, MPI_Irecv, MPI_CollectiveEnd...; its fields decoded in
	 * conv.fields[0..nfields)) written as the target's own record: 1, or
	 * 0 when it is not one the target has (a Generic event then), < 0.
	 */
	int (*mpi)(conv *c, stream_out *s, const weft_event *ev, int nfields);
	int (*thread_end)(conv *c, stream_out *s, int ok); /* !ok: abandoned */
	int (*store)(conv *c);        /* every thread has ended: the rest of the files */
	void (*free)(conv *c);        /* what the target holds */
	/*
	 * Optional, for a target whose parts write their locations' files
	 * in a directory of their own (OTF2; convert_pallas_shared.c): the
	 * part's files closed and moved into `trace_dir` (the trace being
	 * written); what rank 0 needs of the part's writing, packed; rank
	 * 0's conversion taking one part's pack before its store. With
	 * conv.dry set (the survey) the target defines, never writes.
	 */
	int (*part_finish)(conv *c, const char *trace_dir);
	void (*part_pack)(conv *c, weft__pack *out);
	int (*part_take)(conv *c, weft__unpack *u);
} conv_target;

extern const conv_target weft__pconv_pallas_target;
extern const conv_target weft__pconv_otf2_target;

/* The whole conversion. */
struct conv {
	const weft__convert_job *job;
	const conv_target *target;
	void *target_data;            /* the target's own state */
	weft_convert_report *report;  /* the job's: the lines to show */
	weft_trace *trace;
	weft_filter filter;           /* the job's window and code glob, in time order */
	int started;                  /* the target's start succeeded */
	int same_format;              /* the source is a Pallas trace (raw_records) */
	int payload_is_fields;        /* the source's payloads: its fields (Pallas, OTF2) */
	char *tmp_dir;                /* the trace being written */
	weft_pallas_global *global;   /* Pallas target: the main file */
	weft_pallas_defs *defs;       /* Pallas target: global definitions */
	str_table strings;
	u64_map attributes;           /* (name ref << 8 | type) -> attribute ref */
	uint32_t next_attribute;
	uint32_t chunk_attr[PAYLOAD_CHUNKS_MAX]; /* weft.payload.<i>, NONE until used */
	uint32_t code_attr, end_attr, size_attr; /* weft.code, weft.end, weft.payload_size */
	field_attr field_cache[FIELD_CACHE_SIZE]; /* by field name address */
	uint32_t *node_group;         /* node -> location group, NONE */
	uint32_t root_group;          /* group of streams without a parent node */
	weft_pallas_archive **archives; /* Pallas target: per location group */
	uint32_t group_count, group_cap;
	uint32_t *selected;           /* selected stream indices */
	uint32_t selected_count;
	uint32_t *next_location;      /* by parent node (+ no parent): next location id */
	weft_field fields[FIELDS_MAX];
	conv_stats stats;
	int lost;                     /* some data could not be read */
	uint64_t defined;             /* definitions made: strings, regions, attributes,
					 locations (convert_pallas_shared.c) */
	int interning_value;          /* the string interned is an attribute value */
	int over_budget;              /* a string value was left out for the budget */
	uint64_t value_budget;        /* STRING_VALUE_BUDGET (tests: WEFT_TEST_PALLAS_VALUE_BUDGET) */
	int follower;                 /* a rank's part of a shared conversion (not rank 0) */
	void *shared;                 /* a part's state in a shared conversion (its proxy
					 target's), beside the real target's target_data */
	int dry;                      /* a shared conversion's survey: the target defines
					 what the serial conversion would, writes nothing */
	size_t diag_from;             /* the trace's diagnostics of this conversion */
	/* The writer (weft/writer.h): the streams being written, by their
	 * place among the selected ones, and where each stream is. */
	stream_out *outs;
	uint32_t *loc_of;             /* stream index -> its place, NONE */
	char *out;                    /* DIR, without trailing slashes */
	int replace;                  /* DIR exists and is replaced */
	int watching;                 /* the signal handlers are installed */
	struct sigaction old_handlers[3]; /* SIGINT, SIGTERM, SIGHUP's before */
};

/* What goes into the attribute list of one record. */
typedef struct attr_plan {
	int with_code;       /* add weft.code */
	const uint64_t *end; /* add weft.end */
	int first_field;     /* fields before it are the record's own (Pallas sources) */
	int field_count;     /* decoded fields in conv.fields */
} attr_plan;

/* ---- The conversion (convert_pallas.c) -------------------------------------------- */

/*
 * The streams of the conversion (`count` stream indices, in order), their
 * places, and what the source is; 0 or -1 after saying why.
 */
int weft__pconv_prepare(conv *c, const uint32_t *selected, uint32_t count);

/* The same for the streams marked in `selected` (a byte per stream). */
int weft__pconv_prepare_marked(conv *c, const uint8_t *selected);

/* One event of a selected stream (in time order): 0, or < 0 with the message set. */
int weft__pconv_event(conv *c, const weft_event *ev);

/*
 * Ends a stream: the pending Leaves of its intervals, then its thread
 * (`ok`: written, else abandoned). 0, or -1 after saying why.
 */
int weft__pconv_stream_end(conv *c, stream_out *s, int ok);

/* Frees what the conversion holds (not the job's trace). */
void weft__pconv_free(conv *c);

/*
 * The conversion's streams shared among threads and ranks
 * (convert_pallas_shared.c; collective on a trace shared among ranks):
 * 1 when it converted them (a failure said, the writer failed), 0 when it
 * did not (one thread asked, ROSS, or a plan that cannot give the serial
 * bytes: rank 0 converts the streams itself).
 */
int weft__pconv_convert_shared(weft_output_writer *w);

/*
 * The conversion of a rank other than 0 of a shared conversion: the
 * streams of `selected` (a byte per stream), no output of its own (rank
 * 0's temporary directory comes with weft__pconv_convert_shared). 0 or -1.
 */
int weft__pconv_follow(conv *c, const uint8_t *selected);

/* Adds `n` threads written by another writer of the trace to archive `a`'s
 * count (formats/pallas/pallas_write_archive.c). */
void weft__pallas_archive_add_threads(weft_pallas_archive *a, uint32_t n);

/* ---- Tables and definitions (convert_pallas_defs.c) ---------------------------- */

/*
 * Starts a conversion into `target` (the create of a writer,
 * outputs/writer.h): checks DIR, then starts the output in a temporary
 * directory next to it. The writer's other functions are the same for
 * every target (weft__pconv_writer_ops' below).
 */
int weft__pconv_writer_create(weft_output_writer *w, const conv_target *target);
int weft__pconv_writer_event(weft_output_writer *w, const weft_event *ev);
int weft__pconv_writer_end_stream(weft_output_writer *w, uint32_t stream);
void weft__pconv_writer_read_failed(weft_output_writer *w, uint32_t stream,
				    const char *message);
int weft__pconv_writer_finish(weft_output_writer *w, int failed);
void weft__pconv_writer_free(weft_output_writer *w);


/* Reports the library's last message for a failed writer call; returns -1. */
int weft__pconv_writer_error(conv *c, const char *what, int rc);

/* Reports "out of memory"; returns -1. */
int weft__pconv_out_of_memory(conv *c);

/* The slot of `s` (found, or the free slot where it would go). */
str_entry *weft__pconv_str_slot(const str_table *t, const char *s, uint32_t len,
			       uint64_t h);

/* Frees the strings and the table. */
void weft__pconv_str_free(str_table *t);

/*
 * The global string ref of `s` (`len` bytes, no NUL inside), registered at
 * its first use: 0 with *ref set (and *text, when asked, the interned copy,
 * which stays put), or -1 after printing why. No slot of the table is
 * handed out: the next string may move them all (the table grows).
 */
int weft__pconv_intern(conv *c, const char *s, uint32_t len, uint32_t *ref,
		      const char **text);

/* Frees the map. */
void weft__pconv_map_free(u64_map *m);

/*
 * The region named `name` (`len` bytes): one region per distinct name,
 * whose ref is the ref of its name string. 0 or -1.
 */
int weft__pconv_region_ref(conv *c, const char *name, uint32_t len, uint32_t *ref);

/* The same for a NUL-terminated name, remembered in *slot (NONE at first). */
int weft__pconv_named_attribute(conv *c, const char *name, int type, uint32_t *slot);

/*
 * attribute_ref() for a field, through a small cache keyed by the address
 * of the field's name (the formats' names mostly stay put; a name read
 * from a file window may move: the text is compared too).
 */
int weft__pconv_field_attribute(conv *c, const weft_field *f, int type, uint32_t *ref);

/*
 * The location of selected stream number `loc`, named after its node, in
 * its parent's group (made with its ancestors' when new): *group and *id
 * get them; each group's ids are contiguous, as Pallas's reader needs.
 */
int weft__pconv_add_location(conv *c, uint32_t loc, uint32_t *group, uint32_t *id);

/*
 * The attribute named `name` (`len` bytes) of Pallas type `type`, defined
 * at its first use (its description is its name). 0 or -1.
 */
int weft__pconv_attribute_ref(conv *c, const char *name, uint32_t len, int type,
			      uint32_t *ref);

/*
 * What is defined before the events: the trace's metadata and the tables.
 * Locations and their groups come with the first event of each stream
 * (an empty Pallas thread cannot be read back: docs/convert-pallas.md).
 */
int weft__pconv_define_structure(conv *c);

/* ---- Attribute lists (convert_pallas_attrs.c) ---------------------------------- */

/*
 * The attribute list of a record: weft.code and weft.end when asked, the
 * decoded fields, then (unless the source is a Pallas trace, whose
 * payloads are references to its own definitions) the stored bytes, for
 * which room is kept for the size and up to 16 chunks.
 */
int weft__pconv_build_attrs(conv *c, const weft_event *ev, const attr_plan *p,
			   weft_pallas_attrs *a);

/*
 * Decodes the event's fields into conv.fields; returns how many (0 when
 * the format knows no layout or the payload does not match it: the
 * payload attributes still keep the bytes).
 */
int weft__pconv_decode_fields(conv *c, const weft_event *ev);

/*
 * The string ref of a string value, interned while the budget of value
 * bytes lasts. 1 with *ref set, 0 when the value is left out (too long,
 * a NUL inside, over the budget: over_budget set), -1 on failure.
 */
int weft__pconv_string_value(conv *c, const char *s, size_t len, uint32_t *ref);

/* 1 when field i is named `name`. */
int weft__pconv_field_named(const conv *c, int i, int count, const char *name);

#endif /* WEFT_OUTPUTS_CONVERT_PALLAS_H */
