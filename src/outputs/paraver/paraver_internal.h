/* SPDX-License-Identifier: MIT */
/*
 * outputs/paraver/paraver_internal.h - what the files of the Paraver
 * writer share: its numbering, records, tracks, window and state. The
 * writer is a view sink that writes Paraver's .prv, .pcf and .row (see
 * outputs/paraver.h and docs/paraver.md for the mapping).
 *
 * Every callback becomes one or two small records (kind, time, end,
 * value, track, type, and the order of arrival, which orders equal
 * times). Their text is made when they are written, in time order: span
 * values are resolved then (each track keeps the stack of the values of
 * its open spans: a begin pushes and writes its value, an end pops and
 * writes the value of the span that encloses it again, or 0). The .prv
 * is made on one of three paths, with the same records in the same order
 * (the direct path may zero-pad some numbers, see below):
 *
 *   - direct (the .prv a regular file open for reading and writing, the
 *     records in time order but for small disorder, no complete span
 *     before the first write): records wait in a bounded reorder window
 *     (a FIFO of the records that come in order, a heap for the others)
 *     and are formatted into the .prv as they leave it, after a header
 *     area rewritten in place at the end (zero-padded duration and
 *     thread counts, whose zeros make room for tasks added after the
 *     first write; the window is larger until then). A state record is
 *     known at the end of its span but sorts by its begin: while the
 *     span is open, its begin holds the window's output back; when the
 *     output must pass it, the record is written with its end
 *     zero-padded to 20 digits and completed in place later (a
 *     placeholder). So is the "Not running" gap that may follow a span;
 *     when the thread never runs again, its placeholder vanishes into
 *     leading zeros of the line before. Records older than the output
 *     ("late": ends of spans never closed, of a stream that ended long
 *     before the trace) go to the external sort and are merged in at the
 *     end, in one pass over the part of the file after the first of them;
 *     without late records only the header is rewritten;
 *   - rebuild: when, after the first write, a record breaks what the
 *     direct path relies on (an end older than a written record of its
 *     track, a complete span, a time before time 0), the rest goes to the
 *     sort and at the end the written body is read back (with a log of
 *     each event line's kind and track) and merged with the sort into a
 *     new .prv;
 *   - sort (other outputs, and inputs with complete spans or disorder
 *     before the first write: Heph): every record goes through the
 *     external sort keyed by absolute time and the .prv is written at the
 *     end. Records of one time are then reordered so that complete spans
 *     (which come with their ends, in any order) nest right: their ends
 *     first, then their begins longest first, then everything else in the
 *     order it came.
 *
 * Names become numbers through one label table: types (by name, hashed
 * into documented ranges, so that a name has the same type in every
 * trace), values of span names (hashed the same way, per type) and states
 * (numbered in first-seen order). The table is bounded by
 * WEFT__PARAVER_MAX_LABEL_BYTES.
 *
 * The files:
 *   paraver_writer.c    life cycle: create, finish (the three paths), free
 *   paraver_sink.c      the view callbacks: tracks, states, spans, instants,
 *                       counters become records
 *   paraver_labels.c    the label table: names to types, values, states
 *   paraver_records.c   records packed for the sort, their .prv text, header
 *   paraver_window.c    the reorder window, placeholders, where records go
 *   paraver_direct.c    the direct path's file: body, patches, log, splice
 *   paraver_reader.c    the written body read back line by line
 *   paraver_rebuild.c   the rebuild merge, and the end of the direct path
 *   paraver_sort.c      the sort path: records of one time reordered
 *   paraver_pcf_row.c   the .pcf and the .row
 *
 * Internal to the Paraver writer (weft__pv_ prefix).
 */
#ifndef WEFT_OUTPUTS_PARAVER_INTERNAL_H
#define WEFT_OUTPUTS_PARAVER_INTERNAL_H

#include <stdint.h>
#include <string.h>

#include "core/internal.h"
#include "outputs/bg_writer.h"
#include "outputs/flow_pairs.h"
#include "outputs/outputs.h"
#include "outputs/paraver.h"
#include "outputs/row_sort.h"

/* ---- Numbering (docs/paraver.md) -------------------------------------------- */

#define TYPE_TRACE_START 1u   /* value: the absolute time of time 0 */
#define TYPE_OWN_SPANS 2u     /* spans of a stream's own timeline */
#define TYPE_OTHER 3u         /* kinds past the label budget */
#define RANGE_SPAN 100000000u /* channel spans: 100000000 .. 199999999 */
#define RANGE_INSTANT 200000000u
#define RANGE_COUNTER 300000000u
#define RANGE_SIZE 100000000u
#define VALUE_FIRST 1
#define VALUE_COUNT 2147483646u  /* span values 1 .. 2^31 - 2 */
#define VALUE_OTHER 2147483647   /* names past the label budget */

/* Namespaces of numbers: types, the values of one type (its number), states. */
#define NS_TYPES 0u
#define NS_STATES UINT32_MAX
/* Namespaces of type names (names of different kinds may be equal). */
#define KEY_SPAN (UINT32_MAX - 1)
#define KEY_INSTANT (UINT32_MAX - 2)
#define KEY_COUNTER (UINT32_MAX - 3)
#define KEY_FIXED (UINT32_MAX - 4)

#define LABEL_TEXT_MAX 512   /* longest label written to the .pcf */
#define STACK_MAX WEFT__VIEW_MAX_DEPTH
#define GROUP_MAX 4096       /* records of one time reordered together */
#define MAX_TRACK_ID (1u << 26)
#define OTHER_LABEL "(other names: label budget exceeded)"

/* ---- Output layout ------------------------------------------------------------ */

#define DURATION_DIGITS 20    /* the header's duration, zero-padded */
#define COUNT_DIGITS 5        /* the header's thread counts, zero-padded */
#define END_DIGITS 20         /* the end of a placeholder state record */
#define LINE_MAX 128          /* longest record line (but communications) */
#define COMM_LINE_MAX 256     /* longest communication record line */
#define CHUNK (4u << 20)      /* direct: bytes handed to the writer thread at once */
#define CHUNK_SLACK (64u << 10)
#define COPY_BUFFER (4u << 20) /* the final merge's reads and writes */
#define LOG_BUFFER (256u << 10)
#define COLLECT_FACTOR 8      /* the window before the first write, in windows */

/* ---- Records ------------------------------------------------------------------ */

enum rec_kind {
	REC_CEND = 0,  /* end of a complete span: pop */
	REC_CBEGIN,    /* begin of a complete span: push (end = its end) */
	REC_BEGIN,     /* begin of a span: push */
	REC_END,       /* end of a span: pop */
	REC_PULSE,     /* a complete span of no length: value, then back */
	REC_EVENT,     /* a plain (type, value) */
	REC_STATE,     /* state `value` over [time, end] */
	REC_COMM       /* a message: sent at time from track, received at end
	                  on track `type`; value = size, tag (through the sort) */
};

#define REC_MAX 48u /* kind, time, 6 varints at most (see rec_pack) */

typedef struct rec {
	uint64_t time, end;
	int64_t value;
	uint64_t seq;        /* order of arrival (orders equal times) */
	uint32_t track, type;
	uint8_t kind;
	int32_t tag;         /* REC_COMM only */
} rec;

/* A record of a time group, with its place in the reordering. */
typedef struct group_rec {
	rec r;
	uint32_t cls;   /* 0: complete ends, 1: complete begins, 2: the rest */
	uint64_t tie;   /* complete begins: longest first */
	uint32_t index; /* order of arrival */
} group_rec;

/* ---- Labels ------------------------------------------------------------------- */

typedef struct label {
	uint32_t key_ns;     /* what the key names (KEY_*, a type, NS_STATES) */
	uint32_t number_ns;  /* where the number lives (NS_TYPES, a type, NS_STATES) */
	int64_t number;
	char *key;           /* identity (kind-specific bytes) */
	uint32_t key_len;
	char *text;          /* .pcf label, NUL-terminated */
	int numeric;         /* types: values are numbers, not codes */
} label;

typedef struct label_table {
	label *items;
	size_t count, cap;
	uint32_t *by_key, *by_number; /* open addressing: index + 1, 0 = empty */
	size_t slots;                 /* power of two */
	uint64_t bytes;
	uint32_t states;              /* states numbered so far */
} label_table;

/* ---- Tracks, tasks, rows --------------------------------------------------------- */

/* The last name seen on a track and its number (most events repeat it). */
#define CACHE_KEY_MAX 64
typedef struct key_cache {
	uint32_t len;        /* 0: empty */
	char key[CACHE_KEY_MAX];
	int64_t number;      /* a span's value, an instant's type */
} key_cache;

/* The placeholder of a STATE track (direct path, see the top). */
enum ph_state {
	PH_NONE = 0,
	PH_OPEN_RUN,     /* a span is open, its record not written */
	PH_OPEN_GAP,     /* a span ended: a gap may follow, not written */
	PH_WRITTEN_RUN,  /* written with its end padded, to be completed */
	PH_WRITTEN_GAP
};

typedef struct pv_track {
	int kind;            /* weft__view_track_kind; 0 = not declared */
	uint32_t task;       /* PROCESS: its task; others: the task of its row */
	uint32_t thread;     /* the thread number of its row in the task */
	uint32_t type;       /* spans and counters: event type; STATE: state */
	/* ":0:1:<task>:<thread>:", the part of a record after its kind */
	char prefix[32];
	uint32_t prefix_len;
	/* STATE tracks, while collecting */
	uint32_t state_depth;
	int state_ended;
	uint64_t state_begin, state_last_end;
	key_cache span_cache, instant_cache;
	/* While writing: values of the open spans */
	int64_t *stack;
	uint32_t depth, stack_cap;
	/* Direct path */
	uint8_t ph;          /* enum ph_state */
	uint8_t late;        /* it has span ends in the sort */
	uint8_t has_body;    /* a record of it was written */
	uint32_t ph_gen;     /* placeholder entries of older generations are stale */
	uint32_t window_count; /* its records in the window */
	uint64_t ph_begin;
	uint64_t ph_line;    /* written placeholder: file offset of its line */
	uint64_t ph_end_at;  /* ... and of its end's digits */
	uint64_t body_last;  /* time of its last record written */
	/* The text of the last value written (values repeat) */
	int64_t value_last;
	char value_text[24];
	uint8_t value_len;
} pv_track;

typedef struct pv_task {
	char *name;
	uint32_t threads;
} pv_task;

typedef struct pv_row {
	uint32_t task, thread;
	char *name;
} pv_row;

/* ---- Direct path ----------------------------------------------------------------- */

enum pv_mode {
	MODE_COLLECT = 0, /* records wait in the window; nothing written yet */
	MODE_DIRECT,      /* the .prv is written as records leave the window */
	MODE_REBUILD,     /* written so far, remade at the end with the sort */
	MODE_SORT         /* everything through the external sort */
};

/* An unwritten placeholder: the begin that holds the output back. */
typedef struct ph_entry {
	uint64_t begin, seq;
	uint32_t track, gen;
} ph_entry;

/*
 * The reorder window: records that come in time order wait in a FIFO
 * (ring), the others in a heap; the oldest of both leaves first.
 */
typedef struct pv_window {
	rec *ring;
	size_t ring_cap, head, count;   /* ring_cap: a power of two */
	size_t ring_max;                /* ring_cap grows up to it (a power of two) */
	uint64_t tail_time;             /* time of the ring's last record */
	rec *heap;
	size_t heap_count, heap_cap;
	ph_entry *ph;                   /* unwritten placeholders, by begin */
	size_t ph_count, ph_cap;
	size_t limit;                   /* records held before the oldest goes */
	size_t steady;                  /* the limit after the first write */
	int shrink;                     /* the FIFO is larger than the window */
} pv_window;

/* The text of a type, "<type>:" (a cache entry). */
typedef struct type_text {
	uint32_t type;
	uint8_t len;         /* 0: empty */
	char text[15];
} type_text;

/* A placeholder end to write once its bytes are on the file. */
typedef struct patch {
	uint64_t offset;
	char digits[END_DIGITS];
} patch;

/* Where the body stood when a chunk was handed over (for the merge). */
typedef struct index_entry {
	uint64_t offset; /* body bytes before it... */
	uint64_t time;   /* ...have times up to this one (relative) */
} index_entry;

struct weft__paraver_writer {
	weft__view_sink sink;
	int prv_fd, pcf_fd, row_fd;
	char *tmpdir;
	uint64_t budget;
	weft__row_sorter *sorter;  /* sort path: every record; else the late ones */
	pv_track *tracks;
	size_t track_cap;
	pv_task *tasks;
	size_t task_count, task_cap;
	pv_row *rows;
	size_t row_count, row_cap;
	label_table labels;
	uint64_t min_time, max_time;
	int have_time;
	int error, finished;
	char error_text[512];
	weft__outbuf out;
	group_rec *group;
	size_t group_len;
	weft__paraver_stats stats;
	char warning[256];
	/* Paths */
	int mode;                  /* enum pv_mode */
	int direct_ok;             /* the .prv can be written in place and read back */
	int records_seen;
	uint64_t window_bytes;
	uint64_t seq;
	uint64_t input_max;        /* latest time of a span or event record */
	int have_input;
	pv_window win;
	/* Direct output */
	uint64_t start_base;       /* time 0 of what is written */
	uint64_t mark;             /* time of the last record written */
	uint64_t reserve;          /* bytes of the header area */
	uint64_t buf_offset;       /* file offset of out.buf[0] */
	uint64_t written_upto;     /* the file is written before this offset */
	uint64_t late_min;         /* earliest late record */
	weft__bg_writer bg;
	int bg_on;
	char *spare;
	patch *patches;
	size_t patch_count, patch_cap;
	uint64_t *vanish;          /* lines of placeholders that vanish */
	size_t vanish_count, vanish_cap;
	index_entry *index;
	size_t index_count, index_cap;
	int log_fd;                /* kind and track of each event line */
	weft__outbuf log;
	/* Times are written in order: their digits above the last four kept */
	uint64_t time_high;
	char time_text[24];
	size_t time_len;
	type_text type_cache[16];
	/* Message ends waiting for their other end (communication records) */
	weft__flow_pairs *flows;
};

/* ---- The end: the body read back and merged ------------------------------------------ */

/*
 * Log codes of event lines: what the rebuild cannot tell from the text
 * (a span's begin from its end, and the track, which is the span stack).
 */
enum { LOG_EVENT = 0, LOG_BEGIN = 1, LOG_END = 2, LOG_SKIP = 3 };

/* Lines of a file range, through a buffer. */
typedef struct line_reader {
	int fd;
	char *buf;
	size_t cap, pos, len;  /* unread bytes: buf[pos, len) */
	uint64_t at, end;      /* file offset of buf[len]; read up to `end` */
	int error;
} line_reader;

/* A row and one of its tracks. */
typedef struct row_ref {
	uint64_t row;         /* task << 32 | thread */
	uint32_t track;
} row_ref;

/* The final merge: body lines copied, late records formatted between. */
typedef struct merge_ctx {
	weft__paraver_writer *w;
	line_reader body;
	line_reader log;
	uint64_t old_start;   /* rebuild: time 0 of the body */
	rec next;             /* rebuild: the body's next record */
	int have_next;
	row_ref *rows;        /* rebuild: a track of each row, sorted */
	size_t row_count;
} merge_ctx;

/* ---- Functions shared by the files ---------------------------------------------------- */

/* paraver_writer.c */
void weft__pv_fail(weft__paraver_writer *w, int status);
void weft__pv_fail_nomem(weft__paraver_writer *w, const char *what);

/* paraver_labels.c */
label *weft__pv_label_by_key(label_table *t, uint32_t ns, const char *key, size_t len);
char *weft__pv_label_text_copy(const char *s, size_t len);
label *weft__pv_label_add(label_table *t, uint32_t key_ns, uint32_t number_ns,
			  const char *key, size_t len, int64_t number, const char *text);
int weft__pv_fixed_type(weft__paraver_writer *w, uint32_t type, const char *text);
uint32_t weft__pv_type_of(weft__paraver_writer *w, uint32_t key_ns, uint32_t first,
			  const char *key, size_t len, const char *text, label **created);
int64_t weft__pv_other_value(weft__paraver_writer *w, uint32_t type);
int64_t weft__pv_value_of(weft__paraver_writer *w, uint32_t type, const char *name, size_t len);
uint32_t weft__pv_state_of(weft__paraver_writer *w, const char *name);

/* paraver_records.c */
int weft__pv_get_varint(const char **p, const char *end, uint64_t *out);
int weft__pv_rec_unpack(const char *b, size_t len, rec *r);
void weft__pv_put_digits(char *p, uint64_t v, unsigned width);
void weft__pv_write_record(weft__paraver_writer *w, const rec *r);
pv_track *weft__pv_first_row_track(const weft__paraver_writer *w);
int weft__pv_put_trace_start(weft__paraver_writer *w);
size_t weft__pv_header_build(const weft__paraver_writer *w, uint64_t start, uint64_t duration,
			     size_t fit, char **out);
int weft__pv_put_header(weft__paraver_writer *w);

/* paraver_sink.c */
uint32_t weft__pv_task_new(weft__paraver_writer *w, const char *name);
int weft__pv_row_new(weft__paraver_writer *w, pv_track *tr, uint32_t task, const char *name);
void weft__pv_sink_init(weft__paraver_writer *w);

/* paraver_window.c */
void weft__pv_heap_down(rec *h, size_t n, size_t i);
void weft__pv_window_free(pv_window *wn);
int weft__pv_ph_push(pv_window *wn, ph_entry e);
const ph_entry *weft__pv_ph_top(weft__paraver_writer *w);
void weft__pv_ph_drop(pv_track *tr);
void weft__pv_ph_revert_all(weft__paraver_writer *w);
void weft__pv_to_sort_mode(weft__paraver_writer *w);
void weft__pv_enter_rebuild(weft__paraver_writer *w);
void weft__pv_body_record(weft__paraver_writer *w, const rec *r);
void weft__pv_add_tagged(weft__paraver_writer *w, uint8_t kind, uint32_t track, uint32_t type,
			 uint64_t time, uint64_t end, int64_t value, int32_t tag);

/* paraver_direct.c */
int weft__pv_direct_possible(int fd);
int weft__pv_temp_file(const weft__paraver_writer *w);
int weft__pv_pwrite_at(int fd, const void *buf, size_t len, uint64_t offset);
int64_t weft__pv_pread_at(int fd, void *buf, size_t len, uint64_t offset);
int weft__pv_copy_range(int src, uint64_t from, uint64_t to, int dst);
void weft__pv_hand_over(weft__paraver_writer *w);
void weft__pv_patch_end(weft__paraver_writer *w, const pv_track *tr, uint64_t end);
void weft__pv_vanish_add(weft__paraver_writer *w, pv_track *tr);
int weft__pv_log_open(weft__paraver_writer *w);
void weft__pv_log_close(weft__paraver_writer *w);
int weft__pv_direct_start(weft__paraver_writer *w);
int weft__pv_vanish_all(weft__paraver_writer *w);
void weft__pv_direct_drain(weft__paraver_writer *w);
int weft__pv_cut_at_position(weft__paraver_writer *w, uint64_t *size);
int weft__pv_splice(weft__paraver_writer *w, const char *header, size_t hlen);

/* paraver_sort.c */
void weft__pv_flush_group(weft__paraver_writer *w);
void weft__pv_emit_rec(weft__paraver_writer *w, const rec *r);
int weft__pv_sorted_rec(const char *bytes, size_t len, rec *r);
int weft__pv_group_alloc(weft__paraver_writer *w);
void weft__pv_sort_stats(weft__paraver_writer *w);
int weft__pv_write_prv_sorted(weft__paraver_writer *w);
int weft__pv_write_prv_collected(weft__paraver_writer *w);

/* paraver_reader.c */
int weft__pv_reader_open(line_reader *lr, int fd, uint64_t from, uint64_t end);
size_t weft__pv_reader_fill(line_reader *lr);
int weft__pv_reader_line(line_reader *lr, const char **line, size_t *n);
int weft__pv_line_time(const char *s, const char *end, uint64_t *t);
void weft__pv_reader_copy_until(line_reader *lr, uint64_t t, weft__outbuf *ob);
void weft__pv_reader_copy_rest(line_reader *lr, weft__outbuf *ob);
void weft__pv_reader_close(line_reader *lr);

/* paraver_rebuild.c */
int weft__pv_write_prv_direct(weft__paraver_writer *w);

/* paraver_pcf_row.c */
int weft__pv_write_pcf(weft__paraver_writer *w);
int weft__pv_write_row(weft__paraver_writer *w);

/* ---- Small functions of the per-record path, inline in every file --------------------- */

/* Our record of track `id`, or NULL when it was never declared. */
static inline pv_track *track_get(weft__paraver_writer *w, uint32_t id)
{
	if (id == 0 || id > w->track_cap || w->tracks[id - 1].kind == 0)
		return NULL;
	return &w->tracks[id - 1];
}

/* Widens the time span seen to [time, end]. */
static inline void see_time(weft__paraver_writer *w, uint64_t time, uint64_t end)
{
	if (!w->have_time) {
		w->min_time = time;
		w->max_time = end;
		w->have_time = 1;
		return;
	}
	if (time < w->min_time)
		w->min_time = time;
	if (end > w->max_time)
		w->max_time = end;
}

/* Appends v as a varint (7 bits a byte, low first); returns the end. */
static inline char *put_varint(char *p, uint64_t v)
{
	while (v >= 0x80) {
		*p++ = (char)(v | 0x80);
		v >>= 7;
	}
	*p++ = (char)v;
	return p;
}

/* 1 when records of this kind carry a value (all but ends). */
static inline int kind_has_value(unsigned kind)
{
	return kind != REC_END && kind != REC_CEND;
}

/* 1 when records of this kind carry an end (complete begins, states). */
static inline int kind_has_end(unsigned kind)
{
	return kind == REC_CBEGIN || kind == REC_STATE;
}

/* A signed number as an unsigned one for a varint (zigzag). */
static inline uint64_t zigzag(int64_t v)
{
	return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

/*
 * Packs a record (at most REC_MAX bytes): kind, time (8 bytes), then
 * varints: track, type, value (zigzag; not for ends), end - time
 * (complete begins and states; messages: zigzag, a receive may come
 * before its send on skewed clocks, then the tag). Returns its length.
 */
static inline size_t rec_pack(const rec *r, char *b)
{
	char *p = b;

	*p++ = (char)r->kind;
	memcpy(p, &r->time, 8);
	p = put_varint(p + 8, r->track);
	p = put_varint(p, r->type);
	if (kind_has_value(r->kind))
		p = put_varint(p, zigzag(r->value));
	if (kind_has_end(r->kind))
		p = put_varint(p, r->end - r->time);
	if (r->kind == REC_COMM) {
		p = put_varint(p, zigzag((int64_t)(r->end - r->time)));
		p = put_varint(p, zigzag(r->tag));
	}
	return (size_t)(p - b);
}

/* One record from a callback (no message tag). */
static inline void add_record(weft__paraver_writer *w, uint8_t kind, uint32_t track,
			      uint32_t type, uint64_t time, uint64_t end, int64_t value)
{
	weft__pv_add_tagged(w, kind, track, type, time, end, value, 0);
}

/* (a before b): by time, then order of arrival. */
static inline int rec_before(const rec *a, const rec *b)
{
	return a->time < b->time || (a->time == b->time && a->seq < b->seq);
}

/* 1 for the records whose text depends on the span stack of their track. */
static inline int stack_kind(unsigned kind)
{
	return kind == REC_BEGIN || kind == REC_END;
}

/*
 * The decimal of a time at p, returning the end. Times mostly grow, so
 * the digits above the last four are kept formatted and copied (the
 * same text as weft__fmt_u64).
 */
static inline char *put_time(weft__paraver_writer *w, char *p, uint64_t t)
{
	uint64_t high = t / 10000u;

	if (high == 0)
		return weft__fmt_u64(p, t);
	if (WEFT__OUT_UNLIKELY(high != w->time_high)) {
		memset(w->time_text, 0, sizeof w->time_text);
		w->time_len = (size_t)(weft__fmt_u64(w->time_text, high) - w->time_text);
		w->time_high = high;
	}
	uint32_t low = (uint32_t)(t - high * 10000u), hundreds = low / 100;
	memcpy(p, w->time_text, 16); /* high < 2^64 / 10^4 has at most 16 digits */
	p += w->time_len;
	memcpy(p, weft__digit_pairs + 2 * hundreds, 2);
	memcpy(p + 2, weft__digit_pairs + 2 * (low - hundreds * 100), 2);
	return p + 4;
}

/* "<kind>:0:1:<task>:<thread>:" at p; returns the end. */
static inline char *put_object(char *p, char kind, const pv_track *tr)
{
	*p = kind;
	memcpy(p + 1, tr->prefix, sizeof tr->prefix);
	return p + 1 + tr->prefix_len;
}

/* Records in the window. */
static inline size_t window_count(const pv_window *wn)
{
	return wn->count + wn->heap_count;
}

/* The oldest record of the window (by time, then arrival), or NULL. */
static inline const rec *window_min(const pv_window *wn)
{
	const rec *a = wn->count > 0 ? &wn->ring[wn->head] : NULL;
	const rec *b = wn->heap_count > 0 ? &wn->heap[0] : NULL;

	if (a == NULL || b == NULL)
		return a != NULL ? a : b;
	return rec_before(b, a) ? b : a;
}

/* Removes `m`, the oldest record of the window (from window_min). */
static inline void window_drop(pv_window *wn, const rec *m)
{
	if (wn->count > 0 && m == &wn->ring[wn->head]) {
		wn->head = (wn->head + 1) & (wn->ring_cap - 1);
		wn->count--;
		return;
	}
	wn->heap[0] = wn->heap[--wn->heap_count];
	if (wn->heap_count > 0)
		weft__pv_heap_down(wn->heap, wn->heap_count, 0);
}

/* Takes the oldest record out of the window into *out (the window is not empty). */
static inline void window_pop(pv_window *wn, rec *out)
{
	const rec *m = window_min(wn);

	*out = *m;
	window_drop(wn, m);
}

/* After each record: hands the buffer over once it holds a chunk. */
static inline void maybe_hand_over(weft__paraver_writer *w)
{
	if (WEFT__OUT_UNLIKELY(w->out.len >= CHUNK))
		weft__pv_hand_over(w);
}

/* Appends a line's entry: varint of (track << 2 | code). */
static inline void log_put(weft__paraver_writer *w, uint32_t track, unsigned code)
{
	char *p = weft__outbuf_reserve(&w->log, 10);

	p = put_varint(p, (uint64_t)track << 2 | code);
	weft__outbuf_commit(&w->log, p);
}

/* The log entry of a record written to the body (none for state and
 * communication lines: they say what they are). */
static inline void log_record(weft__paraver_writer *w, const rec *r)
{
	if (r->kind == REC_STATE || r->kind == REC_COMM)
		return;
	log_put(w, r->track, r->kind == REC_BEGIN ? LOG_BEGIN
			     : r->kind == REC_END ? LOG_END
						  : LOG_EVENT);
}

#endif
