/* SPDX-License-Identifier: MIT */
/*
 * formats/ross/ross_internal.h - shared by the pieces of the ROSS backend:
 * record parsing and typed fields (ross_record.c), the model data schema
 * (ross_schema.c), run discovery, kind detection and the open scan
 * (ross_open.c, ross_detect.c) and the event readers (ross_stream.c).
 *
 * A ROSS run is a set of files of raw native structs, one file per
 * sampling mode (`<prefix>-gvt.bin`, `-rt.bin`, `-analysis-lps.bin`,
 * `-evtrace.bin`, `-model.bin`), without header, magic or byte-order
 * marker. Each record becomes an event; the records of one PE, KP or LP
 * of one file form a weft stream, under a root node per file.
 */
#ifndef WEFT_ROSS_INTERNAL_H
#define WEFT_ROSS_INTERNAL_H

#include "core/internal.h"

/* ---- Record layouts (bytes) ------------------------------------------------- */

#define ROSS_SAMPLE_HEADER 24u   /* i32 type, i32 size, f64 vt, f64 rt */
#define ROSS_MODEL_HEADER 24u    /* u32 pe, kp, lp, f32 gvt, i32 stats, u32 size */
#define ROSS_ANALYSIS_HEADER 48u /* u64 lp, kp, pe, f64 vt, rt, i32 size, i32 flag */
#define ROSS_EVENT_HEADER 24u    /* u32 src, dst, f32 send, recv, rt, u32 size */
#define ROSS_PE_BODY 104u
#define ROSS_KP_BODY 44u
#define ROSS_LP_OLD_BODY 36u
#define ROSS_LP_BODY 48u
#define ROSS_ANALYSIS_FLAG 3
/* The largest fixed part of a record (sample header + PE body). */
#define ROSS_HEAD_MAX (ROSS_SAMPLE_HEADER + ROSS_PE_BODY)
/*
 * Model data sizes above these are taken as corruption: when reading
 * (lenient) and when looking for a record start (strict, resync and
 * detection). Models store small structs; ROSS's own buffers are a few
 * MiB per PE.
 */
#define ROSS_MAX_MODEL_DATA (1u << 20)
#define ROSS_STRICT_MODEL_DATA (64u << 10)

/* Streams a trace may have (bounds the node and stream tables). */
#define ROSS_MAX_STREAMS (1u << 20)
/* Garbage regions skipped by --resync, per file. */
#define ROSS_MAX_SKIPS 4096u
/* Records a run of valid records needs to resynchronise on. */
#define ROSS_RESYNC_RUN 3
/* Records looked at to detect the kind of a file. */
#define ROSS_DETECT_RECORDS 64
/* Bytes of a file held at once by one reader (its window). */
#define ROSS_WINDOW (4ull << 20)

/* ---- Kinds and record classes ------------------------------------------------- */

/* How the records of a file are framed. */
typedef enum ross_family {
	ROSS_FAMILY_SAMPLES = 0,  /* 24-byte sample headers (gvt, rt, model) */
	ROSS_FAMILY_ANALYSIS = 1, /* the same, plus 48-byte analysis headers (vt) */
	ROSS_FAMILY_EVTRACE = 2   /* 24-byte event records */
} ross_family;

/* What a file is: the sampling mode that wrote it (its root node name). */
typedef enum ross_kind {
	ROSS_KIND_GVT = 0,
	ROSS_KIND_RT,
	ROSS_KIND_VT,
	ROSS_KIND_EVTRACE,
	ROSS_KIND_MODEL,
	ROSS_KIND_NONE /* unknown: no name hint, nothing forced */
} ross_kind;

/* What a record is (its event code). */
typedef enum ross_class {
	ROSS_REC_PE = 0,
	ROSS_REC_KP,
	ROSS_REC_LP,
	ROSS_REC_MODEL,
	ROSS_REC_ANALYSIS,
	ROSS_REC_EVENT,
	ROSS_REC_COUNT
} ross_class;

/* "gvt", "rt", ...; "?" for ROSS_KIND_NONE. */
const char *weft__ross_kind_name(ross_kind kind);
/* The kind named `name`, or ROSS_KIND_NONE. */
ross_kind weft__ross_kind_from_name(const char *name);
/* The record family of a kind. */
ross_family weft__ross_kind_family(ross_kind kind);
/* The event code of a record class ("PE", ..., "EVENT"), and its length. */
const char *weft__ross_class_code(ross_class cls);
uint32_t weft__ross_class_code_len(ross_class cls);

/* ---- One record (ross_record.c) ------------------------------------------------- */

/* A record as parsed at an offset: sizes, ids and times. */
typedef struct ross_record {
	ross_class cls;
	uint32_t fixed;       /* bytes before the model data (the event payload) */
	uint64_t data_size;   /* bytes of model data after them */
	uint64_t size;        /* fixed + data_size */
	/* Ids (those the record has). Event records: lp is the destination
	 * LP, which processed the event and recorded it. */
	uint64_t pe, kp, lp;
	double virtual_time;  /* as stored (f64, or f32 for event records) */
	double real_time;     /* seconds as stored by ROSS */
	double recv_time;     /* event records: virtual receive time */
	int plausible;        /* the values look like a real record (strict) */
} ross_record;

/* Outcome of parsing the record at an offset. */
typedef enum ross_parse_status {
	ROSS_PARSE_OK = 1,
	ROSS_PARSE_END = 0,        /* no bytes left */
	ROSS_PARSE_TRUNCATED = -1, /* the file ends inside the record */
	ROSS_PARSE_BAD = -2,       /* not a record of this family */
	ROSS_PARSE_IO = -3         /* the bytes could not be read (error set) */
} ross_parse_status;

/* Where a record is parsed from, and how messages name it. */
typedef struct ross_parse_ctx {
	ross_family family;
	int big_endian;
	const char *file;  /* for messages; NULL = no message (probing) */
} ross_parse_ctx;

/*
 * Parses the record at `offset` from `p`, where `have` bytes are
 * readable and `left` bytes remain in the data (have <= left; have must
 * be at least min(left, ROSS_HEAD_MAX)). Sets *rec on OK; on TRUNCATED
 * and BAD sets the error text (when ctx->file is set) with the byte
 * offset of the problem.
 */
ross_parse_status weft__ross_parse(const ross_parse_ctx *ctx, const uint8_t *p,
				   uint64_t have, uint64_t left, uint64_t offset,
				   ross_record *rec);

/*
 * The readers' framing of a record already validated by the open scan:
 * class, fixed and data sizes, ids and real time only (no plausibility,
 * no message). BAD or TRUNCATED mean the file changed since the open.
 * Needs min(left, ROSS_HEAD_MAX) readable bytes at p.
 */
ross_parse_status weft__ross_frame(const ross_parse_ctx *ctx, const uint8_t *p,
				   uint64_t left, ross_record *rec);

/* Reads the record at `offset` of a windowed file: head, then all of it. */
ross_parse_status weft__ross_read(const ross_parse_ctx *ctx, weft_mapfile *mf,
				  uint64_t offset, uint64_t end, ross_record *rec,
				  const uint8_t **bytes);

/*
 * Event time in ns of a real time in seconds, rescaled by `scale`
 * (1e9 / clock rate, or 1). Sets *clamped when the value was negative,
 * NaN or too large and had to be clamped to 0 or UINT64_MAX.
 */
uint64_t weft__ross_time_ns(double seconds, double scale, int *clamped);

/* ---- Model data schema (ross_schema.c) -------------------------------------------- */

typedef struct ross_schema_field {
	char *name;
	weft_type type;
	uint32_t offset;   /* in the model data */
} ross_schema_field;

/* The fields one record class's model data is decoded into. */
typedef struct ross_schema {
	ross_schema_field *fields;
	uint32_t count;
	uint32_t size;     /* bytes the fields (and pads) take */
} ross_schema;

/*
 * The compiled schema option: up to one section per model-data class
 * (MODEL, ANALYSIS_MODEL, EVENT); NULL when that class is shown as hex.
 */
typedef struct ross_schemas {
	ross_schema *sections;
	size_t section_count;
	const ross_schema *by_class[ROSS_REC_COUNT];
} ross_schemas;

/*
 * Compiles the text of the schema option (or "@FILE"). Returns 0, or
 * WEFT_EINVAL with a message naming the place of the problem.
 */
int weft__ross_schema_compile(const char *spec, ross_schemas *out);
void weft__ross_schema_free(ross_schemas *s);

/* ---- Trace data ---------------------------------------------------------------------- */

/* A garbage region the open scan skipped (--resync). */
typedef struct ross_skip {
	uint64_t from, to;
} ross_skip;

/* One data file of the run. */
typedef struct ross_file {
	char *path;            /* absolute or as given */
	char *name;            /* relative to the trace root, for messages */
	char *prefix;          /* "<prefix>" of "<prefix>-gvt.bin", or NULL */
	uint64_t size;
	uint64_t valid_end;    /* where reading stops */
	ross_kind kind;
	ross_kind name_kind;   /* what the name says, ROSS_KIND_NONE if nothing */
	ross_parse_ctx parse;  /* family, byte order, name for messages */
	ross_skip *skips;      /* sorted by offset */
	size_t skip_count, skip_cap;
	uint32_t first_stream; /* the file's streams: [first, first + count) */
	uint32_t stream_count;
	uint64_t records;
	int truncated;         /* ends inside a record */
	int readable;          /* has a detected kind and is read */
	/*
	 * The file cut at record boundaries into ross_data.grid pieces, piece
	 * k being [cuts[k], cuts[k + 1]) (grid + 1 entries): under a weft_dist
	 * of several ranks, one piece per rank (ross_share.c); alone, the
	 * pieces that threads join up into theirs (weft__ross_piece_open).
	 * Cut k is the first record start at or after the k-th of `grid`
	 * equal byte pieces (or the end of the records).
	 */
	uint64_t *cuts;
} ross_file;

/* What the pass notes about a file's records, added up over its pieces. */
typedef struct ross_notes {
	uint64_t clamped, first_clamped;
	uint64_t reversed, first_reversed;
	uint64_t short_model, first_short_model;
	int lp_sizes;          /* bit 0: 36-byte LP bodies, bit 1: 48 */
	int saw_end_time;      /* a virtual time of DBL_MAX */
} ross_notes;

/* A stream: the records of one class of one PE/KP/LP in one file. */
typedef struct ross_key {
	uint64_t pe, kp, lp;
	uint32_t file;
	uint8_t cls;           /* PE, KP, LP, MODEL (model and analysis), EVENT */
} ross_key;

typedef struct ross_stream {
	ross_key key;
	uint64_t records;
	uint64_t first_offset, last_offset;
} ross_stream;

/*
 * The pieces a file is cut into when the run is opened alone, for threads
 * (each reads a run of them): enough to balance 8 threads within 2%
 * of a file, for 2 KiB per file.
 */
#define ROSS_GRID 256

/* Record layouts: PE, KP, LP, older LP, MODEL, ANALYSIS_MODEL, EVENT. */
#define ROSS_KIND_COUNT 7

typedef struct ross_data {
	char *root;            /* the trace path */
	ross_file *files;
	size_t file_count;
	ross_stream *streams;  /* by stream index once the hierarchy is built */
	size_t stream_count, stream_cap;
	/* key -> index in streams: open addressing, UINT32_MAX = empty. */
	uint32_t *map;
	size_t map_cap;
	double time_scale;     /* 1e9 / clock rate, or 1 */
	ross_schemas schemas;
	int resync;
	ross_kind forced;      /* the ross.kind option, ROSS_KIND_NONE = none */
	double clock_rate;     /* the ross.clock_rate option, 0 = none */
	int single_file;       /* the trace is one file, not a directory */
	/*
	 * Under a weft_dist of several ranks: the files are cut into `parts`
	 * pieces (1: not cut), and `pending` while the open waits for the
	 * ranks to scan them (ross_share.c); `share` is rank 0's merge.
	 */
	int parts, pending;
	struct ross_share *share;
	int grid;              /* the pieces of the files' cuts: `parts`, or ROSS_GRID alone */
	uint64_t window;       /* bytes held per stream reader (window) */
	uint64_t file_window;  /* bytes held per file reader (window) */
	/* The event kinds (weft/schema.h): one per record layout. */
	weft_event_schema kinds[ROSS_KIND_COUNT];
	weft_field_schema *kind_fields;
} ross_data;

/*
 * The event kinds of the run (ross_record.c): built when it is opened,
 * from the record layouts and the model schema; 0 or WEFT_ENOMEM.
 */
int weft__ross_kinds_build(ross_data *d);
void weft__ross_kinds_free(ross_data *d);
size_t weft__ross_event_schemas(const weft_trace *trace, const weft_event_schema **out);

/* The class a record is filed under as a stream (analysis -> model). */
static inline uint8_t weft__ross_stream_class(ross_class cls)
{
	return cls == ROSS_REC_ANALYSIS ? (uint8_t)ROSS_REC_MODEL : (uint8_t)cls;
}

/* The key of a record of file `file`. */
ross_key weft__ross_record_key(uint32_t file, const ross_record *rec);
/* The stream of a key, or -1 when unknown. */
int64_t weft__ross_stream_lookup(const ross_data *d, const ross_key *key);
/* Adds a key (new stream, index = stream_count); its index, or < 0. */
int64_t weft__ross_stream_insert(ross_data *d, const ross_key *key);
/* Rebuilds the map after the streams were reordered. */
int weft__ross_map_rebuild(ross_data *d);

/* ---- Detection (ross_detect.c) -------------------------------------------------------- */

/* What the data of a file looks like under the best hypothesis. */
typedef struct ross_detection {
	ross_family family;
	int big_endian;
	int records;       /* records parsed before the first problem */
	int plausible;     /* of which look like real records */
	int reached_end;   /* the records end exactly at the end of the file */
	int all_model;     /* every record was a model sample (type 3) */
	int saw_analysis;  /* a 48-byte analysis header was seen */
} ross_detection;

/* The kind a file name says ("x-gvt.bin" -> GVT), and its prefix. */
ross_kind weft__ross_name_kind(const char *name, size_t *prefix_len);
/*
 * Looks at the records of a file from `start` under every framing and
 * byte order and picks the best: most records that look real; the
 * framing of the name `hint` wins ties, and is taken when no hypothesis
 * is convincing but it parses something. Returns 1 with *out set, 0 when
 * nothing fits. `only_family` >= 0 restricts the framing (forced kind).
 */
int weft__ross_detect(weft_mapfile *mf, uint64_t start, ross_kind hint, int only_family,
		      ross_detection *out);
/*
 * For a file whose start is garbage (resync): the first offset below
 * `limit` where a run of real-looking records starts, and the detection
 * from there. Returns 1 with *start and *out set, or 0.
 */
int weft__ross_detect_resync(weft_mapfile *mf, uint64_t limit, ross_kind hint,
			     int only_family, uint64_t *start, ross_detection *out);

/* ---- The open's pass, shared by the ranks (ross_open.c, ross_share.c) ---------------------- */

/* One rank's piece of a file, as its scan found it. */
typedef struct ross_piece {
	int clean;             /* framed from a record start to its end, no problem */
	uint64_t size;         /* the file's, when this rank scanned it */
	uint64_t start, end;   /* the first record's offset, and the end of the last */
	uint64_t records;
	ross_notes notes;
} ross_piece;

/* A file as the ranks scanned it: in pieces (clean), else whole on every rank. */
typedef struct ross_file_scanned {
	int clean;
	uint64_t records;
	ross_notes notes;
} ross_file_scanned;

/* First byte of piece k of `parts` of a file of `size` bytes (k = parts: size). */
static inline uint64_t weft__ross_piece_bound(uint64_t size, int k, int parts)
{
	return size / (uint64_t)parts * (uint64_t)k + size % (uint64_t)parts * (uint64_t)k /
	       (uint64_t)parts;
}

/*
 * Scans piece `part` (of d->parts) of file `file`: its kind chosen as
 * the open would (without its warning), the first record start at or
 * after the piece's first byte found, then records framed up to the
 * first boundary at or after its last, their streams filed in the
 * backend's table. Anything unusual (no record start, a bad or cut
 * record) leaves the piece unclean, as does a file too small to cut: the
 * file is then scanned whole by every rank. Returns 0, or WEFT_ENOMEM.
 */
int weft__ross_scan_piece(weft_trace *trace, uint32_t file, int part, ross_piece *out);
/*
 * Finishes the open: each file either takes what the ranks found
 * (`scanned[i].clean`: its streams are in the table, its cuts set) or is
 * scanned whole here; then the hierarchy and the metadata. `scanned`
 * NULL: every file scanned here (the open of one process).
 */
int weft__ross_open_finish(weft_trace *trace, const ross_file_scanned *scanned);
/*
 * The open alone on `threads` threads (ross_share.c): the ranks' scan
 * with threads for ranks, then weft__ross_open_finish; the files are cut
 * for that many threads (ross_data.grid).
 */
int weft__ross_open_on_threads(weft_trace *trace, int threads);
/* The collective hooks of the open's scan on ranks (core/dist.c). */
extern const weft__dist_open_hooks weft__ross_dist_open;
/* Rank 0's merge of the ranks' scans (ross_share.c), freed with the trace. */
void weft__ross_share_free(struct ross_share *share);

/* ---- Readers (ross_stream.c) ------------------------------------------------------------ */

int weft__ross_stream_open(weft_trace *trace, uint32_t stream, int stored,
			   void **state);
int weft__ross_file_open(weft_trace *trace, size_t file, void **state);
/* A reader of piece `piece` of `pieces` of a file (ross_file.cuts). */
int weft__ross_piece_open(weft_trace *trace, size_t file, size_t piece, size_t pieces,
			  void **state);
size_t weft__ross_file_count(const weft_trace *trace);
size_t weft__ross_stream_file(const weft_trace *trace, uint32_t stream);
int weft__ross_stream_next(void *state, weft_event *event);
int weft__ross_stream_next_batch(void *state, weft_event *events, size_t cap);
void weft__ross_stream_close(void *state);

/* Typed fields of an event (weft_event_fields for ROSS traces). */
int weft__ross_event_fields(const weft_trace *trace, const weft_event *event,
			    weft_field *out, size_t cap);

#endif /* WEFT_ROSS_INTERNAL_H */
