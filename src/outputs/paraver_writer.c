/* SPDX-License-Identifier: MIT */
/*
 * outputs/paraver_writer.c - a view sink that writes Paraver's .prv, .pcf
 * and .row (see paraver.h and docs/paraver.md for the mapping).
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
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

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

/* ---- Errors ------------------------------------------------------------------------ */

/* Remembers the first failure of a callback (they cannot return it). */
static void fail(weft__paraver_writer *w, int status)
{
	if (w->error != 0)
		return;
	w->error = status;
	snprintf(w->error_text, sizeof w->error_text, "%s", weft_last_error());
}

/* Out of memory in a callback: message and status. */
static void fail_nomem(weft__paraver_writer *w, const char *what)
{
	fail(w, weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET,
			    "paraver: out of memory (%s)", what));
}

/* ---- Hashing --------------------------------------------------------------------- */

/* FNV-1a, 64 bits, of n bytes: the documented source of type numbers. */
static uint64_t fnv1a(const char *s, size_t n)
{
	uint64_t h = 14695981039346656037ull;

	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)s[i];
		h *= 1099511628211ull;
	}
	return h;
}

/* Slot hash of a key in a namespace. */
static uint64_t key_slot_hash(uint32_t ns, const char *key, size_t len)
{
	return fnv1a(key, len) ^ ((uint64_t)ns * 0x9e3779b97f4a7c15ull);
}

/* Slot hash of a number in a namespace. */
static uint64_t number_slot_hash(uint32_t ns, int64_t number)
{
	uint64_t x = (uint64_t)number * 0xff51afd7ed558ccdull ^ ((uint64_t)ns << 29);

	x ^= x >> 33;
	return x * 0xc4ceb9fe1a85ec53ull;
}

/* ---- Label table -------------------------------------------------------------------- */

/* The label of (ns, key), or NULL. */
static label *label_by_key(label_table *t, uint32_t ns, const char *key, size_t len)
{
	if (t->slots == 0)
		return NULL;
	size_t mask = t->slots - 1;
	for (size_t i = key_slot_hash(ns, key, len) & mask;; i = (i + 1) & mask) {
		uint32_t s = t->by_key[i];
		if (s == 0)
			return NULL;
		label *l = &t->items[s - 1];
		if (l->key_ns == ns && l->key_len == len && memcmp(l->key, key, len) == 0)
			return l;
	}
}

/* 1 when `number` is taken in namespace ns. */
static int number_used(const label_table *t, uint32_t ns, int64_t number)
{
	if (t->slots == 0)
		return 0;
	size_t mask = t->slots - 1;
	for (size_t i = number_slot_hash(ns, number) & mask;; i = (i + 1) & mask) {
		uint32_t s = t->by_number[i];
		if (s == 0)
			return 0;
		const label *l = &t->items[s - 1];
		if (l->number_ns == ns && l->number == number)
			return 1;
	}
}

/* Puts item index `idx` (0-based) into both indexes. */
static void index_insert(label_table *t, uint32_t idx)
{
	size_t mask = t->slots - 1;
	const label *l = &t->items[idx];
	size_t i = key_slot_hash(l->key_ns, l->key, l->key_len) & mask;

	while (t->by_key[i] != 0)
		i = (i + 1) & mask;
	t->by_key[i] = idx + 1;
	i = number_slot_hash(l->number_ns, l->number) & mask;
	while (t->by_number[i] != 0)
		i = (i + 1) & mask;
	t->by_number[i] = idx + 1;
}

/* Doubles the indexes (kept at most half full). 0 or -1. */
static int index_grow(label_table *t)
{
	size_t slots = t->slots ? t->slots * 2 : 64;
	uint32_t *k = calloc(slots, sizeof *k), *n = calloc(slots, sizeof *n);

	if (k == NULL || n == NULL) {
		free(k);
		free(n);
		return -1;
	}
	free(t->by_key);
	free(t->by_number);
	t->by_key = k;
	t->by_number = n;
	t->slots = slots;
	for (size_t i = 0; i < t->count; i++)
		index_insert(t, (uint32_t)i);
	return 0;
}

/* A printable copy of `s` for the .pcf: one line, at most LABEL_TEXT_MAX. */
static char *label_text_copy(const char *s, size_t len)
{
	if (len > LABEL_TEXT_MAX)
		len = LABEL_TEXT_MAX;
	char *c = malloc(len + 1);
	if (c == NULL)
		return NULL;
	for (size_t i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)s[i];
		c[i] = ch < 0x20 || ch == 0x7f ? ' ' : (char)ch;
	}
	c[len] = '\0';
	return c;
}

/*
 * Adds a label: key bytes (copied), its number and its text (copied;
 * NULL: the key). Returns it, or NULL on ENOMEM.
 */
static label *label_add(label_table *t, uint32_t key_ns, uint32_t number_ns,
			const char *key, size_t len, int64_t number, const char *text)
{
	if ((t->count + 1) * 2 > t->slots && index_grow(t) != 0)
		return NULL;
	if (t->count == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 64;
		label *items = realloc(t->items, cap * sizeof *items);
		if (items == NULL)
			return NULL;
		t->items = items;
		t->cap = cap;
	}
	label *l = &t->items[t->count];
	memset(l, 0, sizeof *l);
	l->key = malloc(len + 1);
	l->text = text ? label_text_copy(text, strlen(text)) : label_text_copy(key, len);
	if (l->key == NULL || l->text == NULL) {
		free(l->key);
		free(l->text);
		return NULL;
	}
	memcpy(l->key, key, len);
	l->key[len] = '\0';
	l->key_len = (uint32_t)len;
	l->key_ns = key_ns;
	l->number_ns = number_ns;
	l->number = number;
	t->bytes += sizeof *l + 2 * len + 16 * sizeof(uint32_t);
	index_insert(t, (uint32_t)t->count++);
	return l;
}

/* The first free number at or after the hashed place of `key` in [first, first + count). */
static int64_t hashed_number(const label_table *t, uint32_t ns, const char *key,
			     size_t len, int64_t first, uint64_t count)
{
	uint64_t off = fnv1a(key, len) % count;

	for (uint64_t i = 0; i < count; i++) {
		int64_t n = first + (int64_t)((off + i) % count);
		if (!number_used(t, ns, n))
			return n;
	}
	return -1;
}

/* ---- Numbers of names ------------------------------------------------------------------ */

/* 1 when another name would take the label table past its budget. */
static int over_budget(weft__paraver_writer *w, size_t len)
{
	if (w->labels.bytes + len * 2 + 256 <= WEFT__PARAVER_MAX_LABEL_BYTES)
		return 0;
	w->stats.labels_dropped++;
	return 1;
}

/* The fixed type `type` with its label (added once). 0 or -1 (ENOMEM). */
static int fixed_type(weft__paraver_writer *w, uint32_t type, const char *text)
{
	char key[16];
	int n = snprintf(key, sizeof key, "%u", type);

	if (label_by_key(&w->labels, KEY_FIXED, key, (size_t)n) != NULL)
		return 0;
	return label_add(&w->labels, KEY_FIXED, NS_TYPES, key, (size_t)n, type, text) ? 0 : -1;
}

/*
 * The type of a name of kind key_ns (KEY_SPAN, KEY_INSTANT, KEY_COUNTER)
 * in its range; *created tells a new one. 0 on ENOMEM (failure recorded).
 */
static uint32_t type_of(weft__paraver_writer *w, uint32_t key_ns, uint32_t first,
			const char *key, size_t len, const char *text, label **created)
{
	label *l = label_by_key(&w->labels, key_ns, key, len);

	*created = NULL;
	if (l != NULL)
		return (uint32_t)l->number;
	if (over_budget(w, len)) {
		if (fixed_type(w, TYPE_OTHER, OTHER_LABEL) != 0)
			goto nomem;
		return TYPE_OTHER;
	}
	int64_t n = hashed_number(&w->labels, NS_TYPES, key, len, first, RANGE_SIZE);
	l = label_add(&w->labels, key_ns, NS_TYPES, key, len, n, text);
	if (l == NULL)
		goto nomem;
	*created = l;
	return (uint32_t)n;
nomem:
	fail_nomem(w, "type labels");
	return 0;
}

/* The shared value of the names past the label budget in `type`. */
static int64_t other_value(weft__paraver_writer *w, uint32_t type)
{
	if (label_by_key(&w->labels, type, "", 0) == NULL &&
	    label_add(&w->labels, type, type, "", 0, VALUE_OTHER, OTHER_LABEL) == NULL)
		fail_nomem(w, "value labels");
	return VALUE_OTHER;
}

/* The value of a span name in `type` (hashed, labelled once). */
static int64_t value_of(weft__paraver_writer *w, uint32_t type, const char *name, size_t len)
{
	label *l = label_by_key(&w->labels, type, name, len);

	if (l != NULL)
		return l->number;
	if (over_budget(w, len))
		return other_value(w, type);
	int64_t n = hashed_number(&w->labels, type, name, len, VALUE_FIRST, VALUE_COUNT);
	if (label_add(&w->labels, type, type, name, len, n, NULL) == NULL)
		fail_nomem(w, "value labels");
	return n;
}

/* The state number of a STATE channel (1, 2, ... in first-seen order). */
static uint32_t state_of(weft__paraver_writer *w, const char *name)
{
	size_t len = strlen(name);
	label *l = label_by_key(&w->labels, NS_STATES, name, len);
	char text[LABEL_TEXT_MAX + 1];

	if (l != NULL)
		return (uint32_t)l->number;
	snprintf(text, sizeof text, "%s", name);
	if (text[0] >= 'a' && text[0] <= 'z')
		text[0] = (char)(text[0] - 'a' + 'A'); /* "running" -> "Running" */
	uint32_t n = ++w->labels.states;
	if (label_add(&w->labels, NS_STATES, NS_STATES, name, len, n, text) == NULL)
		fail_nomem(w, "state labels");
	return n;
}

/* ---- Record packing (the sort) -------------------------------------------------- */

/* Appends v as a varint (7 bits a byte, low first); returns the end. */
static char *put_varint(char *p, uint64_t v)
{
	while (v >= 0x80) {
		*p++ = (char)(v | 0x80);
		v >>= 7;
	}
	*p++ = (char)v;
	return p;
}

/* Reads a varint at *p (before end); 0, or -1 when it does not end there. */
static int get_varint(const char **p, const char *end, uint64_t *out)
{
	uint64_t v = 0;

	for (unsigned shift = 0; *p < end && shift < 64; shift += 7) {
		unsigned char b = (unsigned char)*(*p)++;
		v |= (uint64_t)(b & 0x7f) << shift;
		if (b < 0x80) {
			*out = v;
			return 0;
		}
	}
	return -1;
}

/* 1 when records of this kind carry a value (all but ends). */
static int kind_has_value(unsigned kind)
{
	return kind != REC_END && kind != REC_CEND;
}

/* 1 when records of this kind carry an end (complete begins, states). */
static int kind_has_end(unsigned kind)
{
	return kind == REC_CBEGIN || kind == REC_STATE;
}

/* A signed number as an unsigned one for a varint (zigzag). */
static uint64_t zigzag(int64_t v)
{
	return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static int64_t unzigzag(uint64_t v)
{
	return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

/*
 * Packs a record (at most REC_MAX bytes): kind, time (8 bytes), then
 * varints: track, type, value (zigzag; not for ends), end - time
 * (complete begins and states; messages: zigzag, a receive may come
 * before its send on skewed clocks, then the tag). Returns its length.
 */
static size_t rec_pack(const rec *r, char *b)
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

/* The record packed in b[0..len); 0, or -1 when it is malformed. */
static int rec_unpack(const char *b, size_t len, rec *r)
{
	const char *p = b + 9, *end = b + len;
	uint64_t track, type, v = 0, d = 0, tag = 0;

	if (len < 11 || (unsigned char)b[0] > REC_COMM)
		return -1;
	r->kind = (uint8_t)b[0];
	memcpy(&r->time, b + 1, 8);
	int comm = r->kind == REC_COMM;
	if (get_varint(&p, end, &track) != 0 || get_varint(&p, end, &type) != 0 ||
	    (kind_has_value(r->kind) && get_varint(&p, end, &v) != 0) ||
	    ((kind_has_end(r->kind) || comm) && get_varint(&p, end, &d) != 0) ||
	    (comm && get_varint(&p, end, &tag) != 0) || p != end)
		return -1;
	r->track = (uint32_t)track;
	r->type = (uint32_t)type;
	r->value = unzigzag(v);
	r->end = comm ? r->time + (uint64_t)unzigzag(d) : r->time + d;
	r->tag = (int32_t)unzigzag(tag);
	r->seq = 0;
	return 0;
}

/* Widens the time span seen to [time, end]. */
static void see_time(weft__paraver_writer *w, uint64_t time, uint64_t end)
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

/* Defined below: routing a record, writing one, leaving the direct path. */
static void add_record(weft__paraver_writer *w, uint8_t kind, uint32_t track, uint32_t type,
		       uint64_t time, uint64_t end, int64_t value);
static void write_record(weft__paraver_writer *w, const rec *r);
static void enter_rebuild(weft__paraver_writer *w);

/* ---- Tracks ------------------------------------------------------------------------------- */

/* Our record of track `id`, or NULL when it was never declared. */
static pv_track *track_get(weft__paraver_writer *w, uint32_t id)
{
	if (id == 0 || id > w->track_cap || w->tracks[id - 1].kind == 0)
		return NULL;
	return &w->tracks[id - 1];
}

/* Makes room for track `id`. 0 or -1. */
static int tracks_reserve(weft__paraver_writer *w, uint32_t id)
{
	if (id <= w->track_cap)
		return 0;
	size_t cap = w->track_cap ? w->track_cap : 16;
	while (cap < id)
		cap *= 2;
	pv_track *t = realloc(w->tracks, cap * sizeof *t);
	if (t == NULL)
		return -1;
	memset(t + w->track_cap, 0, (cap - w->track_cap) * sizeof *t);
	w->tracks = t;
	w->track_cap = cap;
	return 0;
}

/* A new task named `name`; its number (1, 2, ...), or 0 on ENOMEM. */
static uint32_t task_new(weft__paraver_writer *w, const char *name)
{
	if (weft__array_grow((void **)&w->tasks, &w->task_cap, w->task_count + 1,
			     sizeof *w->tasks) != 0)
		return 0;
	char *copy = label_text_copy(name, strlen(name));
	if (copy == NULL)
		return 0;
	w->tasks[w->task_count].name = copy;
	w->tasks[w->task_count].threads = 0;
	return (uint32_t)++w->task_count;
}

/*
 * A new row (Paraver thread) in `task`, named "<task name>/<name>"; sets
 * the track's task and thread. 0 or -1 (ENOMEM).
 */
static int row_new(weft__paraver_writer *w, pv_track *tr, uint32_t task, const char *name)
{
	if (weft__array_grow((void **)&w->rows, &w->row_cap, w->row_count + 1,
			     sizeof *w->rows) != 0)
		return -1;
	const char *task_name = w->tasks[task - 1].name;
	size_t n = strlen(task_name) + strlen(name) + 2;
	char *full = malloc(n);
	if (full == NULL)
		return -1;
	snprintf(full, n, "%s/%s", task_name, name);
	char *clean = label_text_copy(full, strlen(full));
	free(full);
	if (clean == NULL)
		return -1;
	tr->task = task;
	tr->thread = ++w->tasks[task - 1].threads;
	w->rows[w->row_count].task = task;
	w->rows[w->row_count].thread = tr->thread;
	w->rows[w->row_count++].name = clean;
	return 0;
}

/*
 * The row of a track whose parent is `parent`: the parent's row; a new
 * row in the parent's task when the parent is a process; a new task and
 * row when there is no parent. 0 or -1 (ENOMEM).
 */
static int place_on_row(weft__paraver_writer *w, pv_track *tr, const weft__view_track *t)
{
	const pv_track *p = track_get(w, t->parent);

	if (p != NULL && p->kind != WEFT__TRACK_PROCESS) {
		tr->task = p->task;
		tr->thread = p->thread;
		return 0;
	}
	uint32_t task = p != NULL ? p->task : task_new(w, t->name);
	if (task == 0)
		return -1;
	return row_new(w, tr, task, t->name);
}

/* The type of a CHANNEL or COUNTER track, or the state of a STATE track. */
static void track_type(weft__paraver_writer *w, pv_track *tr, const weft__view_track *t)
{
	const char *name = t->channel != NULL ? t->channel : t->name;
	label *created;

	switch (t->kind) {
	case WEFT__TRACK_THREAD:
		tr->type = TYPE_OWN_SPANS; /* labelled at its first span */
		break;
	case WEFT__TRACK_CHANNEL:
		tr->type = type_of(w, KEY_SPAN, RANGE_SPAN, name, strlen(name), NULL, &created);
		break;
	case WEFT__TRACK_COUNTER:
		tr->type = type_of(w, KEY_COUNTER, RANGE_COUNTER, name, strlen(name), NULL,
				   &created);
		if (created != NULL)
			created->numeric = 1;
		break;
	case WEFT__TRACK_STATE:
		tr->type = state_of(w, name);
		break;
	default:
		break;
	}
}

/* The text ":0:1:<task>:<thread>:" that follows a record's kind on its row. */
static void track_prefix(pv_track *tr)
{
	char *p = tr->prefix;

	memcpy(p, ":0:1:", 5);
	p = weft__fmt_u64(p + 5, tr->task);
	*p++ = ':';
	p = weft__fmt_u64(p, tr->thread);
	*p++ = ':';
	tr->prefix_len = (uint32_t)(p - tr->prefix);
}

/* Sink: a new track (once, parents first). */
static void on_track(void *ctx, const weft__view_track *t)
{
	weft__paraver_writer *w = ctx;

	if (w->finished || t->id == 0 || t->id > MAX_TRACK_ID || t->name == NULL)
		return;
	if (tracks_reserve(w, t->id) != 0) {
		fail_nomem(w, "tracks");
		return;
	}
	pv_track *tr = &w->tracks[t->id - 1];
	if (tr->kind != 0)
		return; /* declared twice: the first one counts */
	if (t->kind == WEFT__TRACK_PROCESS) {
		tr->task = task_new(w, t->name);
		if (tr->task == 0) {
			fail_nomem(w, "tasks");
			return;
		}
	} else if (place_on_row(w, tr, t) != 0) {
		fail_nomem(w, "rows");
		return;
	} else {
		track_prefix(tr);
	}
	tr->kind = (int)t->kind;
	track_type(w, tr, t);
}

/* ---- Record text ---------------------------------------------------------------------------- */

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

/* v in exactly `width` digits, zero-padded on the left (v must fit). */
static void put_digits(char *p, uint64_t v, unsigned width)
{
	for (unsigned i = width; i-- > 0; v /= 10)
		p[i] = (char)('0' + v % 10);
}

/* v zero-padded to at least `width` digits at p; returns the end. */
static char *put_padded(char *p, uint64_t v, unsigned width)
{
	char digits[24];
	size_t n = (size_t)(weft__fmt_u64(digits, v) - digits);

	for (; n < width; width--)
		*p++ = '0';
	memcpy(p, digits, n);
	return p + n;
}

/* "<kind>:0:1:<task>:<thread>:" at p; returns the end. */
static inline char *put_object(char *p, char kind, const pv_track *tr)
{
	*p = kind;
	memcpy(p + 1, tr->prefix, sizeof tr->prefix);
	return p + 1 + tr->prefix_len;
}

/* "<type>:" at p from a small cache (a trace has few types); returns the end. */
static inline char *put_type(weft__paraver_writer *w, char *p, uint32_t type)
{
	type_text *c = &w->type_cache[(type * 2654435761u) >> 28];

	if (WEFT__OUT_UNLIKELY(c->type != type || c->len == 0)) {
		memset(c->text, 0, sizeof c->text);
		c->len = (uint8_t)(weft__fmt_u64(c->text, type) - c->text);
		c->text[c->len++] = ':';
		c->type = type;
	}
	memcpy(p, c->text, sizeof c->text);
	return p + c->len;
}

/* A value at p: one digit at once, else the track's last value when it repeats. */
static inline char *put_value(pv_track *tr, char *p, int64_t value)
{
	if (value >= 0 && value < 10) {
		*p = (char)('0' + value);
		return p + 1;
	}
	if (WEFT__OUT_UNLIKELY(value != tr->value_last || tr->value_len == 0)) {
		memset(tr->value_text, 0, sizeof tr->value_text);
		tr->value_len = (uint8_t)(weft__fmt_i64(tr->value_text, value) - tr->value_text);
		tr->value_last = value;
	}
	memcpy(p, tr->value_text, sizeof tr->value_text);
	return p + tr->value_len;
}

/* An event record `2:0:1:task:thread:time:type:value`. */
static void put_event(weft__paraver_writer *w, pv_track *tr, uint64_t time,
		      uint32_t type, int64_t value)
{
	char *p = weft__outbuf_reserve(&w->out, LINE_MAX);

	p = put_object(p, '2', tr);
	p = put_time(w, p, time);
	*p++ = ':';
	p = put_type(w, p, type);
	p = put_value(tr, p, value);
	*p++ = '\n';
	weft__outbuf_commit(&w->out, p);
	w->stats.records++;
}

/* A state record `1:0:1:task:thread:begin:end:state`. */
static void put_state(weft__paraver_writer *w, pv_track *tr, uint64_t begin,
		      uint64_t end, int64_t state)
{
	char *p = weft__outbuf_reserve(&w->out, LINE_MAX);

	p = put_object(p, '1', tr);
	p = put_time(w, p, begin);
	*p++ = ':';
	p = weft__fmt_u64(p, end);
	*p++ = ':';
	p = weft__fmt_i64(p, state);
	*p++ = '\n';
	weft__outbuf_commit(&w->out, p);
	w->stats.records++;
	w->stats.state_records++;
}

/*
 * A communication record `3:0:1:task:thread:send:send:0:1:task:thread:
 * recv:recv:size:tag` (logical and physical times alike).
 */
static void put_comm(weft__paraver_writer *w, pv_track *from, pv_track *to, uint64_t sent,
		     uint64_t received, int64_t size, int32_t tag)
{
	char *p = weft__outbuf_reserve(&w->out, COMM_LINE_MAX);

	p = put_object(p, '3', from);
	p = put_time(w, p, sent);
	*p++ = ':';
	p = weft__fmt_u64(p, sent);
	*p++ = ':';
	memcpy(p, to->prefix + 1, to->prefix_len - 1);
	p += to->prefix_len - 1;
	p = weft__fmt_u64(p, received);
	*p++ = ':';
	p = weft__fmt_u64(p, received);
	*p++ = ':';
	p = weft__fmt_i64(p, size);
	*p++ = ':';
	p = weft__fmt_i64(p, tag);
	*p++ = '\n';
	weft__outbuf_commit(&w->out, p);
	w->stats.records++;
	w->stats.comm_records++;
}

/* Pushes the value of a span that opens on a track (stack bounded). */
static void stack_push(weft__paraver_writer *w, pv_track *tr, int64_t value)
{
	if (tr->depth < tr->stack_cap) {
		tr->stack[tr->depth++] = value;
		return;
	}
	if (tr->stack_cap < STACK_MAX) {
		uint32_t cap = tr->stack_cap ? tr->stack_cap * 2 : 8;
		int64_t *s = realloc(tr->stack, cap * sizeof *s);
		if (s != NULL) {
			tr->stack = s;
			tr->stack_cap = cap;
			tr->stack[tr->depth++] = value;
			return;
		}
		fail_nomem(w, "span stacks");
	}
	tr->depth++; /* too deep: counted, its value not kept */
}

/* Pops the innermost span; returns the value now shown (0: none open). */
static int64_t stack_pop(pv_track *tr)
{
	if (tr->depth > 0)
		tr->depth--;
	if (tr->depth == 0)
		return 0;
	uint32_t top = tr->depth <= tr->stack_cap ? tr->depth : tr->stack_cap;
	return top > 0 ? tr->stack[top - 1] : 0;
}

/* The value shown on a track now (0: no span open). */
static int64_t stack_top(const pv_track *tr)
{
	uint32_t top = tr->depth <= tr->stack_cap ? tr->depth : tr->stack_cap;
	return tr->depth > 0 && top > 0 ? tr->stack[top - 1] : 0;
}

/* Writes one record as text, times from the start. */
static void write_record(weft__paraver_writer *w, const rec *r)
{
	pv_track *tr = track_get(w, r->track);
	uint64_t t = r->time - w->stats.start;

	if (tr == NULL)
		return;
	switch (r->kind) {
	case REC_BEGIN:
	case REC_CBEGIN:
		stack_push(w, tr, r->value);
		put_event(w, tr, t, r->type, r->value);
		break;
	case REC_END:
	case REC_CEND:
		put_event(w, tr, t, r->type, stack_pop(tr));
		break;
	case REC_PULSE:
		put_event(w, tr, t, r->type, r->value);
		put_event(w, tr, t, r->type, stack_top(tr));
		break;
	case REC_STATE:
		put_state(w, tr, t, r->end - w->stats.start, r->value);
		break;
	case REC_COMM: {
		pv_track *to = track_get(w, r->type);
		if (to != NULL)
			put_comm(w, tr, to, t, r->end - w->stats.start, r->value, r->tag);
		break;
	}
	default:
		put_event(w, tr, t, r->type, r->value);
		break;
	}
}

/* The first row's track (the trace-start record goes there), or NULL. */
static pv_track *first_row_track(const weft__paraver_writer *w)
{
	for (size_t i = 0; i < w->track_cap; i++)
		if (w->tracks[i].kind == WEFT__TRACK_THREAD && w->tracks[i].task == 1 &&
		    w->tracks[i].thread == 1)
			return &w->tracks[i];
	for (size_t i = 0; i < w->track_cap; i++)
		if (w->tracks[i].kind != 0 && w->tracks[i].kind != WEFT__TRACK_PROCESS &&
		    w->tracks[i].task == 1 && w->tracks[i].thread == 1)
			return &w->tracks[i];
	return NULL;
}

/* The trace-start record (type 1 on the first row), when there is a first row. */
static int put_trace_start(weft__paraver_writer *w)
{
	pv_track *first = first_row_track(w);

	if (first == NULL)
		return 0;
	put_event(w, first, 0, TYPE_TRACE_START,
		  w->stats.start > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)w->stats.start);
	return 1;
}

/* ---- Header ------------------------------------------------------------------------------------ */

/* "dd/mm/yy at hh:mm" of the start when it is a plausible Unix time in
 * ns (years 2000 to 2099), else of the epoch: reproducible either way. */
static void header_date(uint64_t start, char *buf, size_t cap)
{
	time_t secs = 0;
	struct tm tm;

	if (start >= 946684800ull * 1000000000ull && start < 4102444800ull * 1000000000ull)
		secs = (time_t)(start / 1000000000ull);
	gmtime_r(&secs, &tm);
	strftime(buf, cap, "%d/%m/%y at %H:%M", &tm);
}

/* Decimal digits of v (1 to 20). */
static unsigned digits_of(uint64_t v)
{
	unsigned n = 1;

	for (; v >= 10; v /= 10)
		n++;
	return n;
}

/*
 * The zero padding of the header's numbers: the duration to 20 digits,
 * each thread count to 5, less `cut` zeros in all (taken from the
 * duration first, then from the counts in task order) so that a header
 * with more tasks than the room was made for still fits it. The widths
 * into *dur_width and widths[] (task_count entries); the zeros that could
 * not be cut are returned (0: the cut was made).
 */
static uint64_t header_widths(const weft__paraver_writer *w, uint64_t duration, uint64_t cut,
			      unsigned *dur_width, unsigned *widths)
{
	unsigned d = digits_of(duration), take;

	take = d < DURATION_DIGITS ? DURATION_DIGITS - d : 0;
	take = cut < take ? (unsigned)cut : take;
	*dur_width = DURATION_DIGITS - take;
	cut -= take;
	for (size_t i = 0; i < w->task_count; i++) {
		unsigned c = digits_of(w->tasks[i].threads);
		take = c < COUNT_DIGITS ? COUNT_DIGITS - c : 0;
		take = cut < take ? (unsigned)cut : take;
		widths[i] = COUNT_DIGITS - take;
		cut -= take;
	}
	return cut;
}

/* The header's numbers at p with the given widths; returns the end. */
static char *header_fields(const weft__paraver_writer *w, char *p, uint64_t duration,
			   unsigned dur_width, const unsigned *widths)
{
	p = put_padded(p, duration, dur_width);
	memcpy(p, "_ns:0:1:", 8);
	p = weft__fmt_u64(p + 8, w->task_count);
	*p++ = '(';
	for (size_t i = 0; i < w->task_count; i++) {
		if (i > 0)
			*p++ = ',';
		p = put_padded(p, w->tasks[i].threads, widths[i]);
		memcpy(p, ":1", 2);
		p += 2;
	}
	memcpy(p, ")\n", 2);
	return p + 2;
}

/*
 * The header line, in a malloc'd buffer: date, duration, no resource
 * model, one application with the tasks' thread counts. Its numbers are
 * zero-padded (the duration to 20 digits, the counts to 5: Paraver reads
 * them with their zeros), so that the line keeps its length from the
 * first record written to the end, where it is rewritten in place; with
 * `fit` > 0, padding is removed to make it `fit` bytes long when it came
 * out longer (tasks added since). Its length, or 0 on ENOMEM.
 */
static size_t header_build(const weft__paraver_writer *w, uint64_t start, uint64_t duration,
			   size_t fit, char **out)
{
	char date[64];
	char *b = malloc(96 + w->task_count * 32), *p;
	unsigned *widths = malloc((w->task_count + 1) * sizeof *widths), dur_width;

	*out = b;
	if (b == NULL || widths == NULL) {
		free(widths);
		return 0;
	}
	header_date(start, date, sizeof date);
	int head = snprintf(b, 96, "#Paraver (%s):", date);
	header_widths(w, duration, 0, &dur_width, widths);
	p = header_fields(w, b + head, duration, dur_width, widths);
	if (fit > 0 && (size_t)(p - b) > fit) {
		header_widths(w, duration, (uint64_t)(p - b) - fit, &dur_width, widths);
		p = header_fields(w, b + head, duration, dur_width, widths);
	}
	free(widths);
	return (size_t)(p - b);
}

/* Appends the header (final counts and duration) to the output buffer. */
static int put_header(weft__paraver_writer *w)
{
	char *h;
	size_t n = header_build(w, w->stats.start, w->stats.duration, 0, &h);

	if (n == 0)
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET,
				   "paraver: out of memory (header)");
	weft__outbuf_put(&w->out, h, n);
	free(h);
	return 0;
}

/* ---- Reorder window ---------------------------------------------------------------------------- */

/* The smallest power of two of at least n (n >= 2). */
static size_t pow2_at_least(size_t n)
{
	size_t cap = 2;

	while (cap < n)
		cap *= 2;
	return cap;
}

/* The FIFO's first size in records: it doubles as it fills, up to ring_max. */
#define RING_FIRST 1024u

/*
 * Makes the FIFO `cap` records (a power of two, at least its count), its
 * records copied in order. 0, or -1 (ENOMEM: the FIFO is left as it was).
 */
static int window_resize(pv_window *wn, size_t cap)
{
	rec *ring = malloc(cap * sizeof *ring);

	if (ring == NULL)
		return -1;
	for (size_t i = 0; i < wn->count; i++)
		ring[i] = wn->ring[(wn->head + i) & (wn->ring_cap - 1)];
	free(wn->ring);
	wn->ring = ring;
	wn->ring_cap = cap;
	wn->head = 0;
	return 0;
}

/*
 * Allocates the window's FIFO at the first record. The window is
 * COLLECT_FACTOR times its size until the first write (the tasks the
 * header makes room for are those known then: the later it comes, the
 * more of them), its size after it; the FIFO starts small and doubles
 * as it fills (a small trace, and every input of a fuzz target, never
 * pays for the 16 MiB). 0, or -1 (ENOMEM).
 */
static int window_ensure(weft__paraver_writer *w)
{
	pv_window *wn = &w->win;

	if (wn->ring != NULL)
		return 0;
	size_t limit = (size_t)(w->window_bytes / sizeof(rec));
	wn->steady = limit < 2 ? 2 : limit;
	wn->limit = wn->steady * COLLECT_FACTOR;
	wn->ring_max = pow2_at_least(wn->limit);
	wn->ring_cap = wn->ring_max < RING_FIRST ? wn->ring_max : RING_FIRST;
	wn->ring = malloc(wn->ring_cap * sizeof *wn->ring);
	return wn->ring != NULL ? 0 : -1;
}

/*
 * After the first write: the FIFO shrinks to the window's size once it
 * holds no more. Keeps the large one when the small one cannot be had.
 */
static void window_shrink(pv_window *wn)
{
	wn->shrink = 0;
	if (wn->ring_cap > wn->ring_max)
		window_resize(wn, wn->ring_max);
}

/* Records in the window. */
static inline size_t window_count(const pv_window *wn)
{
	return wn->count + wn->heap_count;
}

/* Moves heap[i] up to its place. */
static void heap_up(rec *h, size_t i)
{
	rec x = h[i];

	while (i > 0 && rec_before(&x, &h[(i - 1) / 2])) {
		h[i] = h[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	h[i] = x;
}

/* Moves heap[i] down to its place. */
static void heap_down(rec *h, size_t n, size_t i)
{
	rec x = h[i];

	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= n)
			break;
		if (c + 1 < n && rec_before(&h[c + 1], &h[c]))
			c++;
		if (!rec_before(&h[c], &x))
			break;
		h[i] = h[c];
		i = c;
	}
	h[i] = x;
}

/*
 * Where a record of time `time` goes in the window: the FIFO's next
 * slot when it comes in order (*in_ring set), else the heap's end. NULL
 * on ENOMEM.
 */
static inline rec *window_slot(pv_window *wn, uint64_t time, int *in_ring)
{
	if (WEFT__OUT_UNLIKELY(wn->count == wn->ring_cap && wn->ring_cap < wn->ring_max))
		window_resize(wn, wn->ring_cap * 2); /* ENOMEM: the heap takes it */
	*in_ring = wn->count < wn->ring_cap && (wn->count == 0 || time >= wn->tail_time);
	if (*in_ring)
		return &wn->ring[(wn->head + wn->count) & (wn->ring_cap - 1)];
	if (wn->heap_count == wn->heap_cap) {
		size_t cap = wn->heap_cap ? wn->heap_cap * 2 : 64;
		rec *h = realloc(wn->heap, cap * sizeof *h);
		if (h == NULL)
			return NULL;
		wn->heap = h;
		wn->heap_cap = cap;
	}
	return &wn->heap[wn->heap_count];
}

/* Makes the record written in the slot from window_slot part of the window. */
static inline void window_commit(pv_window *wn, uint64_t time, int in_ring)
{
	if (in_ring) {
		wn->count++;
		wn->tail_time = time;
		return;
	}
	heap_up(wn->heap, wn->heap_count++);
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
		heap_down(wn->heap, wn->heap_count, 0);
}

/* Takes the oldest record out of the window into *out (the window is not empty). */
static inline void window_pop(pv_window *wn, rec *out)
{
	const rec *m = window_min(wn);

	*out = *m;
	window_drop(wn, m);
}

/* Frees the window's memory. */
static void window_free(pv_window *wn)
{
	free(wn->ring);
	free(wn->heap);
	free(wn->ph);
	memset(wn, 0, sizeof *wn);
}

/* ---- Placeholder heap --------------------------------------------------------------------------- */

/* (a before b) among placeholders: by begin, then order of creation. */
static inline int ph_before(const ph_entry *a, const ph_entry *b)
{
	return a->begin < b->begin || (a->begin == b->begin && a->seq < b->seq);
}

/* Adds an unwritten placeholder. 0 or -1 (ENOMEM). */
static int ph_push(pv_window *wn, ph_entry e)
{
	if (wn->ph_count == wn->ph_cap) {
		size_t cap = wn->ph_cap ? wn->ph_cap * 2 : 64;
		ph_entry *h = realloc(wn->ph, cap * sizeof *h);
		if (h == NULL)
			return -1;
		wn->ph = h;
		wn->ph_cap = cap;
	}
	size_t i = wn->ph_count++;
	while (i > 0 && ph_before(&e, &wn->ph[(i - 1) / 2])) {
		wn->ph[i] = wn->ph[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	wn->ph[i] = e;
	return 0;
}

/* Removes the first placeholder. */
static void ph_pop(pv_window *wn)
{
	ph_entry x = wn->ph[--wn->ph_count];
	size_t i = 0, n = wn->ph_count;

	if (n == 0)
		return;
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= n)
			break;
		if (c + 1 < n && ph_before(&wn->ph[c + 1], &wn->ph[c]))
			c++;
		if (!ph_before(&wn->ph[c], &x))
			break;
		wn->ph[i] = wn->ph[c];
		i = c;
	}
	wn->ph[i] = x;
}

/* 1 when the entry is its track's current unwritten placeholder. */
static int ph_valid(const weft__paraver_writer *w, const ph_entry *e)
{
	const pv_track *tr = &w->tracks[e->track - 1];

	return tr->ph_gen == e->gen && (tr->ph == PH_OPEN_RUN || tr->ph == PH_OPEN_GAP);
}

/* The earliest unwritten placeholder (stale entries dropped), or NULL. */
static const ph_entry *ph_top(weft__paraver_writer *w)
{
	pv_window *wn = &w->win;

	while (wn->ph_count > 0 && !ph_valid(w, &wn->ph[0]))
		ph_pop(wn);
	return wn->ph_count > 0 ? &wn->ph[0] : NULL;
}

/* A track's placeholder is gone (resolved, or its span reverts to the sort). */
static void ph_drop(pv_track *tr)
{
	tr->ph = PH_NONE;
	tr->ph_gen++;
}

/*
 * Unwritten placeholders go back to being plain state records made when
 * their span closes (leaving the direct path, or at the end).
 */
static void ph_revert_all(weft__paraver_writer *w)
{
	pv_window *wn = &w->win;

	for (size_t i = 0; i < wn->ph_count; i++)
		if (ph_valid(w, &wn->ph[i]))
			ph_drop(&w->tracks[wn->ph[i].track - 1]);
	wn->ph_count = 0;
}

/* ---- Direct output: files ----------------------------------------------------------------------- */

/*
 * 1 when the .prv can take the direct path: a regular file, not in
 * append mode, open for reading too (a merge reads the body back).
 */
static int direct_possible(int fd)
{
	struct stat st;
	int flags = fcntl(fd, F_GETFL);

	return flags >= 0 && (flags & O_ACCMODE) == O_RDWR && !(flags & O_APPEND) &&
	       fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && lseek(fd, 0, SEEK_CUR) == 0;
}

/* An unlinked temporary file in tmpdir ($TMPDIR, else /tmp); -1 on failure. */
static int temp_file(const weft__paraver_writer *w)
{
	const char *dir = w->tmpdir;

	if (dir == NULL || dir[0] == '\0')
		dir = getenv("TMPDIR");
	char *path = weft__path_join(dir != NULL && dir[0] != '\0' ? dir : "/tmp",
				     "weft-paraver.XXXXXX");
	if (path == NULL)
		return -1;
	int fd = mkstemp(path);
	if (fd >= 0)
		unlink(path);
	free(path);
	return fd;
}

/* Writes all of buf at `offset`; 0 or WEFT_EIO (message set). */
static int pwrite_at(int fd, const void *buf, size_t len, uint64_t offset)
{
	int err = weft__write_full(fd, buf, len, offset, NULL);

	return err == 0 ? 0 : weft__error(WEFT_EIO, NULL, WEFT_NO_OFFSET,
					  "paraver: cannot write the output: %s", strerror(err));
}

/* Reads up to len bytes at `offset`; the count, or WEFT_EIO. */
static int64_t pread_at(int fd, void *buf, size_t len, uint64_t offset)
{
	int64_t n = weft__read_full(fd, buf, len, offset);

	return n >= 0 ? n : weft__error(WEFT_EIO, NULL, WEFT_NO_OFFSET,
					"paraver: cannot read the output back: %s",
					strerror((int)-n));
}

/* Copies [from, to) of src to the start of dst; 0 or WEFT_EIO. */
static int copy_range(int src, uint64_t from, uint64_t to, int dst)
{
	char *buf = malloc(COPY_BUFFER);
	uint64_t at = from;
	int rc = buf != NULL ? 0 : weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET,
					       "paraver: out of memory (copy)");

	while (rc == 0 && at < to) {
		size_t want = to - at < COPY_BUFFER ? (size_t)(to - at) : COPY_BUFFER;
		int64_t n = pread_at(src, buf, want, at);
		if (n <= 0) {
			rc = n < 0 ? (int)n : weft__error(WEFT_EIO, NULL, WEFT_NO_OFFSET,
							  "paraver: the output is shorter than written");
			break;
		}
		rc = pwrite_at(dst, buf, (size_t)n, at - from);
		at += (uint64_t)n;
	}
	free(buf);
	return rc;
}

/* ---- Direct output: the body -------------------------------------------------------------------- */

/* Remembers where the body stood (offset, time of its last line) for the merge. */
static void index_add(weft__paraver_writer *w, uint64_t offset, uint64_t time)
{
	if (w->index_count == w->index_cap &&
	    weft__array_grow((void **)&w->index, &w->index_cap, w->index_count + 1,
			     sizeof *w->index) != 0) {
		fail_nomem(w, "output index");
		return;
	}
	w->index[w->index_count++] = (index_entry){ offset, time };
}

/* Writes the patches whose bytes the writer thread has written. */
static void apply_patches(weft__paraver_writer *w)
{
	size_t kept = 0;

	for (size_t i = 0; i < w->patch_count; i++) {
		patch *p = &w->patches[i];
		if (p->offset + END_DIGITS > w->written_upto) {
			w->patches[kept++] = *p;
			continue;
		}
		int rc = pwrite_at(w->prv_fd, p->digits, END_DIGITS, p->offset);
		if (rc < 0)
			fail(w, rc);
	}
	w->patch_count = kept;
}

/*
 * Hands the full buffer to the writer thread (at the file position,
 * which is its offset) and goes on in the one it gives back. Everything
 * before the handed buffer is then on the file.
 */
static void hand_over(weft__paraver_writer *w)
{
	char *buf = w->out.buf;
	size_t cap = w->out.cap, len = w->out.len;

	if (len == 0)
		return;
	if (weft__bg_writer_submit(&w->bg, &buf, &cap, len) < 0)
		fail(w, WEFT_EIO);
	if (buf == NULL) {
		buf = w->spare;
		cap = w->out.cap;
		w->spare = NULL;
	}
	w->written_upto = w->bg.threaded ? w->buf_offset : w->buf_offset + len;
	w->buf_offset += len;
	w->out.buf = buf;
	w->out.cap = cap;
	w->out.len = 0;
	index_add(w, w->buf_offset - w->reserve, w->mark - w->start_base);
	if (w->patch_count > 0)
		apply_patches(w);
}

/* After each record: hands the buffer over once it holds a chunk. */
static inline void maybe_hand_over(weft__paraver_writer *w)
{
	if (WEFT__OUT_UNLIKELY(w->out.len >= CHUNK))
		hand_over(w);
}

/* Waits for the writer thread; then the whole body is on the file. */
static void body_flush(weft__paraver_writer *w)
{
	if (!w->bg_on)
		return;
	hand_over(w);
	if (weft__bg_writer_finish(&w->bg) < 0)
		fail(w, WEFT_EIO);
	w->bg_on = 0;
	w->written_upto = w->buf_offset + w->out.len;
	apply_patches(w);
}

/*
 * Completes a written placeholder: its end, zero-padded, in the buffer
 * when it is still there, on the file when the thread wrote it, or later.
 */
static void patch_end(weft__paraver_writer *w, const pv_track *tr, uint64_t end)
{
	patch p = { tr->ph_end_at, { 0 } };

	put_digits(p.digits, end - w->start_base, END_DIGITS);
	if (p.offset >= w->buf_offset) {
		memcpy(w->out.buf + (p.offset - w->buf_offset), p.digits, END_DIGITS);
		return;
	}
	if (p.offset + END_DIGITS <= w->written_upto) {
		int rc = pwrite_at(w->prv_fd, p.digits, END_DIGITS, p.offset);
		if (rc < 0)
			fail(w, rc);
		return;
	}
	if (w->patch_count == w->patch_cap &&
	    weft__array_grow((void **)&w->patches, &w->patch_cap, w->patch_count + 1,
			     sizeof *w->patches) != 0) {
		fail_nomem(w, "placeholders");
		return;
	}
	w->patches[w->patch_count++] = p;
}

/* A written placeholder that turned out to be no record: removed at the end. */
static void vanish_add(weft__paraver_writer *w, pv_track *tr)
{
	if (w->vanish_count == w->vanish_cap &&
	    weft__array_grow((void **)&w->vanish, &w->vanish_cap, w->vanish_count + 1,
			     sizeof *w->vanish) != 0) {
		fail_nomem(w, "placeholders");
		return;
	}
	w->vanish[w->vanish_count++] = tr->ph_line;
	w->stats.records--;
	w->stats.state_records--;
	w->stats.padded_states--;
}

/* ---- Direct output: the log of event lines ------------------------------------------------------- */

/*
 * Log codes of event lines: what the rebuild cannot tell from the text
 * (a span's begin from its end, and the track, which is the span stack).
 */
enum { LOG_EVENT = 0, LOG_BEGIN = 1, LOG_END = 2, LOG_SKIP = 3 };

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
	log_put(w, r->track, r->kind == REC_BEGIN ? LOG_BEGIN : r->kind == REC_END ? LOG_END
											: LOG_EVENT);
}

/* Opens the log's temporary file. 0 or -1. */
static int log_open(weft__paraver_writer *w)
{
	w->log_fd = temp_file(w);
	if (w->log_fd < 0)
		return -1;
	if (weft__outbuf_init(&w->log, w->log_fd, LOG_BUFFER) < 0) {
		close(w->log_fd);
		w->log_fd = -1;
		return -1;
	}
	return 0;
}

/* Closes the log (and so deletes it). */
static void log_close(weft__paraver_writer *w)
{
	if (w->log.buf != NULL)
		weft__outbuf_destroy(&w->log);
	memset(&w->log, 0, sizeof w->log);
	if (w->log_fd >= 0)
		close(w->log_fd);
	w->log_fd = -1;
}

/*
 * Starts writing: time 0 is the earliest time seen (records and open
 * placeholders), the body goes after a header area as long as the header
 * with today's tasks, through the writer thread. 0, or -1 when the
 * direct path cannot start (nothing written then).
 */
static int direct_start(weft__paraver_writer *w)
{
	const ph_entry *e = ph_top(w);
	char *h;

	w->start_base = w->min_time;
	if (e != NULL && e->begin < w->start_base)
		w->start_base = e->begin;
	w->mark = w->start_base;
	w->reserve = header_build(w, w->start_base, 0, 0, &h);
	free(h);
	w->spare = malloc(CHUNK + CHUNK_SLACK);
	if (w->reserve == 0 || w->spare == NULL ||
	    lseek(w->prv_fd, (off_t)w->reserve, SEEK_SET) < 0 ||
	    weft__outbuf_init(&w->out, w->prv_fd, CHUNK + CHUNK_SLACK) < 0) {
		free(w->spare);
		w->spare = NULL;
		return -1;
	}
	w->bg_on = weft__bg_writer_start_positioned(&w->bg, w->prv_fd, 1);
	if (!w->bg_on) {
		weft__outbuf_destroy(&w->out);
		free(w->spare);
		w->spare = NULL;
		return -1;
	}
	w->buf_offset = w->written_upto = w->reserve;
	w->stats.start = w->start_base;
	return 0;
}

/* ---- Where records go --------------------------------------------------------------------------- */

/* Hands a record to the external sort (created at the first one). */
static void sort_add(weft__paraver_writer *w, const rec *r)
{
	char bytes[REC_MAX];

	if (w->error != 0)
		return;
	if (w->sorter == NULL) {
		int rc = weft__row_sorter_create(w->budget, w->tmpdir, &w->sorter);
		if (rc < 0) {
			fail(w, rc);
			return;
		}
	}
	size_t len = rec_pack(r, bytes);
	int rc = weft__row_sorter_add(w->sorter, r->time, bytes, len);
	if (rc < 0)
		fail(w, rc);
	if (r->time < w->late_min)
		w->late_min = r->time;
}

/*
 * Before anything is written: every record from now on goes through the
 * sort, those in the window first (in their order), and placeholders
 * revert to records made when their spans close.
 */
static void to_sort_mode(weft__paraver_writer *w)
{
	rec r;

	ph_revert_all(w);
	w->mode = MODE_SORT;
	while (window_count(&w->win) > 0) {
		window_pop(&w->win, &r);
		sort_add(w, &r);
	}
	window_free(&w->win);
}

/*
 * After the first write, a record broke what the direct path relies on:
 * the window still goes to the body at the end, every new record to the
 * sort, and the .prv is remade from both at the end.
 */
static void enter_rebuild(weft__paraver_writer *w)
{
	if (w->mode != MODE_DIRECT)
		return;
	ph_revert_all(w);
	w->mode = MODE_REBUILD;
}

/* Writes a placeholder: the state record with its end zero-padded. */
static void write_placeholder(weft__paraver_writer *w, const ph_entry *e)
{
	pv_track *tr = &w->tracks[e->track - 1];
	char *p = weft__outbuf_reserve(&w->out, LINE_MAX), *line = p;

	p = put_object(p, '1', tr);
	p = put_time(w, p, e->begin - w->start_base);
	*p++ = ':';
	char *end_at = p;
	memset(p, '0', END_DIGITS);
	p += END_DIGITS;
	*p++ = ':';
	p = weft__fmt_i64(p, tr->ph == PH_OPEN_RUN ? (int64_t)tr->type : 0);
	*p++ = '\n';
	weft__outbuf_commit(&w->out, p);
	tr->ph_line = w->buf_offset + (uint64_t)(line - w->out.buf);
	tr->ph_end_at = w->buf_offset + (uint64_t)(end_at - w->out.buf);
	tr->ph = tr->ph == PH_OPEN_RUN ? PH_WRITTEN_RUN : PH_WRITTEN_GAP;
	w->mark = e->begin;
	w->stats.records++;
	w->stats.state_records++;
	w->stats.padded_states++;
	maybe_hand_over(w);
}

/* Writes the placeholders that begin before `time` (their records come first). */
static void write_due_placeholders(weft__paraver_writer *w, uint64_t time)
{
	const ph_entry *e;

	while ((e = ph_top(w)) != NULL && e->begin < time) {
		ph_entry x = *e;
		ph_pop(&w->win);
		write_placeholder(w, &x);
	}
}

/* A record leaves the window into the body. */
static void body_record(weft__paraver_writer *w, const rec *r)
{
	pv_track *tr = track_get(w, r->track);

	if (tr != NULL) {
		tr->window_count--;
		tr->body_last = r->time;
		tr->has_body = 1;
	}
	w->mark = r->time;
	log_record(w, r);
	write_record(w, r);
	maybe_hand_over(w);
}

/*
 * The first write: the direct path starts (time 0, header area, the
 * trace-start record), or, when it cannot, everything goes to the sort.
 * 0 when it started.
 */
static int first_write(weft__paraver_writer *w)
{
	if (first_row_track(w) == NULL || log_open(w) != 0) {
		to_sort_mode(w);
		return -1;
	}
	if (direct_start(w) != 0) {
		log_close(w);
		to_sort_mode(w);
		return -1;
	}
	w->mode = MODE_DIRECT;
	w->stats.direct = 1;
	w->win.limit = w->win.steady;
	w->win.ring_max = pow2_at_least(w->win.steady);
	w->win.shrink = w->win.ring_max < w->win.ring_cap;
	if (put_trace_start(w))
		log_put(w, 0, LOG_SKIP);
	return 0;
}

/* Writes the oldest record of the window (and the placeholders before it). */
static void release_one(weft__paraver_writer *w)
{
	if (w->mode == MODE_COLLECT && first_write(w) != 0)
		return;
	const rec *m = window_min(&w->win);
	if (m == NULL)
		return;
	if (w->win.ph_count > 0)
		write_due_placeholders(w, m->time);
	body_record(w, m);
	window_drop(&w->win, m);
}

/*
 * Puts a record in the window, its fields written in place from the
 * arguments (a record built on the stack and copied stalls on store
 * forwarding); the oldest records leave while it is full.
 */
static void window_add(weft__paraver_writer *w, pv_track *tr, uint8_t kind, uint32_t track,
		       uint32_t type, uint64_t time, uint64_t end, int64_t value, uint64_t seq,
		       int32_t tag)
{
	pv_window *wn = &w->win;
	rec *slot = NULL;
	int in_ring = 0;

	if (WEFT__OUT_UNLIKELY(window_ensure(w) != 0 ||
			       (slot = window_slot(wn, time, &in_ring)) == NULL)) {
		rec r = { .time = time, .end = end, .value = value, .seq = seq,
			  .track = track, .type = type, .kind = kind, .tag = tag };
		if (w->mode == MODE_COLLECT) {
			to_sort_mode(w);
			sort_add(w, &r);
		} else {
			fail_nomem(w, "reorder window");
		}
		return;
	}
	slot->time = time;
	slot->end = end;
	slot->value = value;
	slot->seq = seq;
	slot->track = track;
	slot->type = type;
	slot->kind = kind;
	slot->tag = tag;
	window_commit(wn, time, in_ring);
	if (tr != NULL)
		tr->window_count++;
	while (window_count(wn) >= wn->limit &&
	       (w->mode == MODE_COLLECT || w->mode == MODE_DIRECT) && w->error == 0)
		release_one(w);
	if (WEFT__OUT_UNLIKELY(wn->shrink) && wn->count < wn->limit)
		window_shrink(wn);
}

/* Where a record goes. */
enum route { ROUTE_WINDOW, ROUTE_SORT, ROUTE_LATE, ROUTE_NONE };

/*
 * Before the first write: a span or event record older than one before
 * it means an input out of time order (not only the state records and
 * the window's small disorder): the sort takes it all.
 */
static int collect_route(weft__paraver_writer *w, unsigned kind, uint64_t time)
{
	if (kind != REC_STATE && kind != REC_COMM) {
		if (w->have_input && time < w->input_max) {
			to_sort_mode(w);
			return ROUTE_SORT;
		}
		w->input_max = time;
		w->have_input = 1;
	}
	return ROUTE_WINDOW;
}

/* On the direct path: the window, or the sort for what is too old. */
static int direct_route(weft__paraver_writer *w, const pv_track *tr, unsigned kind,
			uint64_t time)
{
	if (tr == NULL)
		return ROUTE_NONE;
	if (time < w->start_base) {
		enter_rebuild(w); /* before time 0: every time shifts */
		return ROUTE_SORT;
	}
	if (time < w->mark)
		return ROUTE_LATE;
	if (tr->late && stack_kind(kind)) {
		enter_rebuild(w); /* would follow its track's late ends */
		return ROUTE_SORT;
	}
	return ROUTE_WINDOW;
}

/*
 * A record older than the output: to the sort, merged in at the end.
 * The end of a span may go there only when nothing of its track is
 * written after it or waits in the window (then its value follows from
 * the stack the body left); else the .prv is rebuilt at the end.
 */
static void late_record(weft__paraver_writer *w, pv_track *tr, const rec *r)
{
	if (stack_kind(r->kind)) {
		if (tr->window_count > 0 || (tr->has_body && tr->body_last > r->time))
			enter_rebuild(w);
		else
			tr->late = 1;
	}
	w->stats.late_records++;
	sort_add(w, r);
}

/*
 * One record from a callback, to where the current path sends it (a
 * message's tag with it; 0 for the other kinds).
 */
static void add_tagged(weft__paraver_writer *w, uint8_t kind, uint32_t track, uint32_t type,
		       uint64_t time, uint64_t end, int64_t value, int32_t tag)
{
	if (w->error != 0)
		return;
	uint64_t seq = w->seq++;
	pv_track *tr = track_get(w, track);
	int route = ROUTE_SORT;

	w->records_seen = 1;
	see_time(w, time < end ? time : end, end > time ? end : time);
	if (w->mode == MODE_COLLECT)
		route = collect_route(w, kind, time);
	else if (w->mode == MODE_DIRECT)
		route = direct_route(w, tr, kind, time);
	if (route == ROUTE_WINDOW) {
		window_add(w, tr, kind, track, type, time, end, value, seq, tag);
		return;
	}
	rec r = { .time = time, .end = end, .value = value, .seq = seq,
		  .track = track, .type = type, .kind = kind, .tag = tag };
	if (route == ROUTE_LATE)
		late_record(w, tr, &r);
	else if (route == ROUTE_SORT)
		sort_add(w, &r);
}

static void add_record(weft__paraver_writer *w, uint8_t kind, uint32_t track, uint32_t type,
		       uint64_t time, uint64_t end, int64_t value)
{
	add_tagged(w, kind, track, type, time, end, value, 0);
}

/* ---- State tracks -------------------------------------------------------------------- */

/* 1 while state spans get placeholders (before the first write, and direct). */
static int placeholders_on(const weft__paraver_writer *w)
{
	return w->mode == MODE_COLLECT || w->mode == MODE_DIRECT;
}

/*
 * A placeholder for the state record that begins at `time` (a span, or
 * the gap after one): it holds back the records after `time` until it
 * is resolved or written. None for a begin older than the output (the
 * closing of spans at the end): its record will be late, merged at the
 * end like any other.
 */
static void ph_open(weft__paraver_writer *w, pv_track *tr, uint32_t id, int kind, uint64_t time)
{
	if (w->mode == MODE_DIRECT && time < w->mark)
		return;
	tr->ph = (uint8_t)kind;
	tr->ph_gen++;
	tr->ph_begin = time;
	if (ph_push(&w->win, (ph_entry){ time, w->seq++, id, tr->ph_gen }) != 0) {
		ph_drop(tr);
		fail_nomem(w, "placeholders");
	}
}

/*
 * A STATE span opens at `time`: the gap since the last one is "Not
 * running" (a record, the completion of its written placeholder, or
 * nothing when there is no gap).
 */
static void gap_resolve(weft__paraver_writer *w, pv_track *tr, uint32_t id, uint64_t time)
{
	if (tr->ph == PH_WRITTEN_GAP) {
		if (time > tr->ph_begin) {
			patch_end(w, tr, time);
			see_time(w, tr->ph_begin, time);
		} else {
			vanish_add(w, tr);
		}
		ph_drop(tr);
		return;
	}
	if (tr->ph == PH_OPEN_GAP)
		ph_drop(tr);
	if (tr->state_ended && time > tr->state_last_end)
		add_record(w, REC_STATE, id, 0, tr->state_last_end, time, 0);
}

/* A STATE span opens: the gap before it, then its own placeholder. */
static void state_begin(weft__paraver_writer *w, pv_track *tr, uint32_t id, uint64_t time)
{
	if (tr->state_depth++ > 0)
		return; /* nested: the outer span holds the state */
	gap_resolve(w, tr, id, time);
	tr->state_begin = time;
	if (placeholders_on(w))
		ph_open(w, tr, id, PH_OPEN_RUN, time);
}

/* A STATE span closes: one state record for the outermost span. */
static void state_end(weft__paraver_writer *w, pv_track *tr, uint32_t id, uint64_t time)
{
	if (tr->state_depth == 0 || --tr->state_depth > 0)
		return;
	if (tr->ph == PH_WRITTEN_RUN) {
		patch_end(w, tr, time);
		see_time(w, tr->state_begin, time);
		ph_drop(tr);
	} else {
		ph_drop(tr); /* unwritten: the record takes its place */
		add_record(w, REC_STATE, id, 0, tr->state_begin, time, tr->type);
	}
	tr->state_last_end = time;
	tr->state_ended = 1;
	if (placeholders_on(w))
		ph_open(w, tr, id, PH_OPEN_GAP, time);
}

/* A complete span on a STATE track (never on the direct path). */
static void state_complete(weft__paraver_writer *w, pv_track *tr, uint32_t id,
			   uint64_t time, uint64_t end)
{
	if (tr->state_depth > 0) {
		add_record(w, REC_STATE, id, 0, time, end, tr->type);
		return;
	}
	state_begin(w, tr, id, time);
	state_end(w, tr, id, end);
}

/* ---- Spans, instants, counters ------------------------------------------------------------ */

/* The number cached for key[0..len), or -1. */
static int64_t cache_get(const key_cache *c, const char *key, size_t len)
{
	if (c->len == 0 || c->len != len || memcmp(c->key, key, len) != 0)
		return -1;
	return c->number;
}

/* Remembers key -> number when the key fits. */
static void cache_put(key_cache *c, const char *key, size_t len, int64_t number)
{
	if (len == 0 || len > CACHE_KEY_MAX)
		return;
	memcpy(c->key, key, len);
	c->len = (uint32_t)len;
	c->number = number;
}

/* The value of the span an item names (and the label of the own type). */
static int64_t item_value(weft__paraver_writer *w, pv_track *tr, const weft__view_item *item)
{
	const char *name = "(unnamed)";
	size_t len = 9;

	if (item != NULL && item->name != NULL && item->name_len > 0) {
		name = item->name;
		len = item->name_len;
	} else if (item != NULL && item->category != NULL) {
		name = item->category;
		len = strlen(name);
	}
	int64_t v = cache_get(&tr->span_cache, name, len);
	if (v >= 0)
		return v;
	if (tr->type == TYPE_OWN_SPANS &&
	    fixed_type(w, TYPE_OWN_SPANS, "Spans of the stream's own timeline") != 0)
		fail_nomem(w, "type labels");
	v = value_of(w, tr->type, name, len);
	cache_put(&tr->span_cache, name, len, v);
	return v;
}

/* The track of a span callback, or NULL when it takes no span (finished,
 * unknown, a counter or a process). */
static pv_track *span_track(weft__paraver_writer *w, uint32_t id)
{
	pv_track *tr = track_get(w, id);

	if (w->finished || tr == NULL || tr->kind == WEFT__TRACK_COUNTER ||
	    tr->kind == WEFT__TRACK_PROCESS)
		return NULL;
	return tr;
}

/* Sink: a span opens. */
static void on_begin(void *ctx, const weft__view_track *t, uint64_t time,
		     const weft__view_item *item)
{
	weft__paraver_writer *w = ctx;
	pv_track *tr = span_track(w, t->id);

	if (tr == NULL)
		return;
	if (tr->kind == WEFT__TRACK_STATE) {
		state_begin(w, tr, t->id, time);
		return;
	}
	int64_t value = item_value(w, tr, item);
	add_record(w, REC_BEGIN, t->id, tr->type, time, time, value);
}

/* Sink: the innermost open span of a track closes. */
static void on_end(void *ctx, const weft__view_track *t, uint64_t time,
		   const weft__view_item *item)
{
	weft__paraver_writer *w = ctx;
	pv_track *tr = span_track(w, t->id);

	(void)item;
	if (tr == NULL)
		return;
	if (tr->kind == WEFT__TRACK_STATE) {
		state_end(w, tr, t->id, time);
		return;
	}
	add_record(w, REC_END, t->id, tr->type, time, time, 0);
}

/*
 * Complete spans come with their ends, in any order (Heph: children
 * first): the sort path takes them (before the first write), or the
 * rebuild (after).
 */
static void leave_direct(weft__paraver_writer *w)
{
	if (w->mode == MODE_COLLECT)
		to_sort_mode(w);
	else
		enter_rebuild(w);
}

/* Sink: a span [time, end] at once. */
static void on_complete(void *ctx, const weft__view_track *t, uint64_t time, uint64_t end,
			const weft__view_item *item)
{
	weft__paraver_writer *w = ctx;
	pv_track *tr = span_track(w, t->id);

	if (tr == NULL)
		return;
	leave_direct(w);
	if (end < time)
		end = time;
	if (tr->kind == WEFT__TRACK_STATE) {
		state_complete(w, tr, t->id, time, end);
		return;
	}
	int64_t value = item_value(w, tr, item);
	if (end == time) {
		add_record(w, REC_PULSE, t->id, tr->type, time, time, value);
		return;
	}
	add_record(w, REC_CBEGIN, t->id, tr->type, time, end, value);
	add_record(w, REC_CEND, t->id, tr->type, end, end, 0);
}

/* The first integer (or boolean) argument of an item, or NULL. */
static const weft_field *first_integer(const weft__view_item *item)
{
	for (int i = 0; item->args != NULL && i < item->arg_count; i++) {
		const weft_field *f = &item->args[i];
		if (!f->is_array && f->type != WEFT_TYPE_F32 && f->type != WEFT_TYPE_F64 &&
		    f->type != WEFT_TYPE_STR && f->type != WEFT_TYPE_BYTES)
			return f;
	}
	return NULL;
}

/* An integer field as a Paraver value (u64 above 2^63 - 1: clamped). */
static int64_t field_value(const weft_field *f)
{
	if (f->type >= WEFT_TYPE_I8 && f->type <= WEFT_TYPE_I64)
		return f->v.i;
	return f->v.u > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)f->v.u;
}

/* "category/name": the identity of an instant's type. len = bytes written. */
static size_t instant_key(const weft__view_item *item, char *buf, size_t cap)
{
	const char *name = item->name != NULL ? item->name : "(unnamed)";
	size_t name_len = item->name != NULL ? item->name_len : 9;
	int n = snprintf(buf, cap, "%s/%.*s", item->category ? item->category : "",
			 (int)(name_len > 4096 ? 4096 : name_len), name);
	return n < 0 ? 0 : ((size_t)n < cap ? (size_t)n : cap - 1);
}

/*
 * The .pcf label of a new instant type: the name (prefixed with the
 * category unless the name starts with it), and the argument its values
 * are, if any.
 */
static void instant_label(const weft__view_item *item, const weft_field *arg,
			  char *buf, size_t cap)
{
	const char *cat = item->category;
	const char *name = item->name != NULL ? item->name : "(unnamed)";
	int name_len = (int)(item->name != NULL ? (item->name_len > 256 ? 256 : item->name_len) : 9);
	size_t cat_len = cat != NULL ? strlen(cat) : 0;
	int prefix = cat_len > 0 && !((size_t)name_len > cat_len &&
				      strncmp(name, cat, cat_len) == 0 && name[cat_len] == ' ');
	int n = snprintf(buf, cap, "%s%s%.*s", prefix ? cat : "", prefix ? ": " : "",
			 name_len, name);
	if (arg != NULL && n >= 0 && (size_t)n < cap)
		snprintf(buf + n, cap - (size_t)n, " (%.*s)",
			 (int)(arg->name_len > 64 ? 64 : arg->name_len), arg->name);
}

/*
 * The cache key of an instant: category, name and the argument that
 * gives its value, separated by control bytes (no formatting: this is
 * the hot path). Its length, or 0 when it does not fit.
 */
static size_t instant_cache_key(const weft__view_item *item, const weft_field *arg, char *buf)
{
	size_t cat = item->category != NULL ? strlen(item->category) : 0;
	size_t arg_len = arg != NULL ? arg->name_len : 0;
	size_t len = cat + 1 + item->name_len + 1 + arg_len;

	if (item->name == NULL || len > CACHE_KEY_MAX)
		return 0;
	if (cat > 0) /* no category: NULL, which memcpy must not get even for 0 bytes */
		memcpy(buf, item->category, cat);
	buf[cat] = 0x1f;
	memcpy(buf + cat + 1, item->name, item->name_len);
	buf[cat + 1 + item->name_len] = arg != NULL ? 0x1e : 0x1d;
	if (arg_len > 0)
		memcpy(buf + cat + 2 + item->name_len, arg->name, arg_len);
	return len;
}

/* The type of an instant, made and labelled on its first occurrence. */
static uint32_t instant_type(weft__paraver_writer *w, const weft__view_item *item,
			     const weft_field *arg)
{
	char key[4400], text[LABEL_TEXT_MAX];
	label *created;
	size_t len = instant_key(item, key, sizeof key);

	instant_label(item, arg, text, sizeof text);
	uint32_t type = type_of(w, KEY_INSTANT, RANGE_INSTANT, key, len, text, &created);
	if (type == TYPE_OTHER)
		other_value(w, type);
	if (type == 0 || type == TYPE_OTHER)
		return type;
	if (created != NULL && arg != NULL)
		created->numeric = 1;
	if (arg == NULL && label_by_key(&w->labels, type, "1", 1) == NULL &&
	    label_add(&w->labels, type, type, "1", 1, 1, text) == NULL)
		fail_nomem(w, "value labels");
	return type;
}

/* Most message ends kept waiting for their other end at once (40 bytes each). */
#define FLOWS_WAITING_MAX (1u << 20)

/* The integer field `name` of an item, or `otherwise`. */
static int64_t item_integer(const weft__view_item *item, const char *name, int64_t otherwise)
{
	for (int i = 0; item->args != NULL && i < item->arg_count; i++) {
		const weft_field *f = &item->args[i];
		if (f->is_array || f->name_len != strlen(name) ||
		    memcmp(f->name, name, f->name_len) != 0)
			continue;
		if ((f->type >= WEFT_TYPE_U8 && f->type <= WEFT_TYPE_I64) || f->type == WEFT_TYPE_BOOL)
			return field_value(f);
	}
	return otherwise;
}

/*
 * A message end (an instant with a flow id): the first end of a message
 * waits; the second makes its communication record at the send's time,
 * through the window while the send is not written yet, else through the
 * sort (merged into the .prv at the end, as every late record).
 */
static void on_flow_end(weft__paraver_writer *w, uint32_t track, uint64_t time,
			const weft__view_item *item)
{
	weft__flow_end e = { time, track, item->flow_end, 0, 0 }, other;
	int64_t size = item_integer(item, "length", item_integer(item, "size", 0));
	e.size = size > 0 ? (uint64_t)size : 0;
	e.tag = item_integer(item, "tag", 0);
	if (w->flows == NULL && (w->flows = weft__flow_pairs_create(FLOWS_WAITING_MAX)) == NULL) {
		fail_nomem(w, "message ends");
		return;
	}
	int rc = weft__flow_pairs_meet(w->flows, item->flow_id, &e, &other);
	if (rc < 0)
		w->stats.comm_dropped++;
	if (rc != 1)
		return;
	const weft__flow_end *send = e.end == WEFT_FLOW_IN ? &other : &e;
	const weft__flow_end *recv = e.end == WEFT_FLOW_IN ? &e : &other;
	uint64_t bytes = send->size ? send->size : recv->size;
	int64_t tag = send->tag ? send->tag : recv->tag;
	add_tagged(w, REC_COMM, send->track, recv->track, send->time, recv->time,
		   bytes > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)bytes,
		   tag < INT32_MIN ? INT32_MIN : tag > INT32_MAX ? INT32_MAX : (int32_t)tag);
}

/* Sink: an instant. */
static void on_instant(void *ctx, const weft__view_track *t, uint64_t time,
		       const weft__view_item *item)
{
	weft__paraver_writer *w = ctx;
	pv_track *tr = track_get(w, t->id);
	char ckey[CACHE_KEY_MAX];

	if (w->finished || tr == NULL || tr->kind == WEFT__TRACK_PROCESS || item == NULL)
		return;
	const weft_field *arg = first_integer(item);
	size_t clen = instant_cache_key(item, arg, ckey);
	int64_t cached = clen > 0 ? cache_get(&tr->instant_cache, ckey, clen) : -1;
	uint32_t type = cached >= 0 ? (uint32_t)cached : instant_type(w, item, arg);
	if (type == 0)
		return;
	if (cached < 0)
		cache_put(&tr->instant_cache, ckey, clen, type);
	int64_t value = arg != NULL ? field_value(arg) : 1;
	if (type == TYPE_OTHER)
		value = VALUE_OTHER;
	add_record(w, REC_EVENT, t->id, type, time, time, value);
	if (item->flow_id != 0 && item->flow_end != 0)
		on_flow_end(w, t->id, time, item);
}

/*
 * A counter value as a Paraver integer: rounded half away from zero,
 * clamped to int64 (by hand: libweft does not link libm).
 */
static int64_t round_value(double v)
{
	if (v >= 9.2233720368547758e18)
		return INT64_MAX;
	if (v <= -9.2233720368547758e18)
		return INT64_MIN;
	int64_t t = (int64_t)v; /* toward zero; exact where v has a fraction */
	double frac = v - (double)t;
	if (frac >= 0.5)
		t++;
	else if (frac <= -0.5)
		t--;
	return t;
}

/* Sink: a counter takes a value. */
static void on_counter(void *ctx, const weft__view_track *t, uint64_t time, double value)
{
	weft__paraver_writer *w = ctx;
	pv_track *tr = track_get(w, t->id);

	if (w->finished || tr == NULL || tr->kind != WEFT__TRACK_COUNTER)
		return;
	if (!isfinite(value)) {
		w->stats.bad_counters++;
		return;
	}
	add_record(w, REC_EVENT, t->id, tr->type, time, time, round_value(value));
}

/* ---- Writing the .prv: the sort path ------------------------------------------------------------- */

/* Order of records of one time: complete ends, complete begins (longest
 * first), then the rest, each in order of arrival. */
static int compare_group(const void *a, const void *b)
{
	const group_rec *x = a, *y = b;

	if (x->cls != y->cls)
		return x->cls < y->cls ? -1 : 1;
	if (x->tie != y->tie)
		return x->tie < y->tie ? -1 : 1;
	return x->index < y->index ? -1 : (x->index > y->index);
}

/* Writes the records of one time, reordered when complete spans are among them. */
static void flush_group(weft__paraver_writer *w)
{
	int reorder = 0;

	for (size_t i = 0; i < w->group_len; i++)
		if (w->group[i].cls < 2)
			reorder = 1;
	if (reorder && w->group_len > 1)
		qsort(w->group, w->group_len, sizeof *w->group, compare_group);
	for (size_t i = 0; i < w->group_len; i++)
		write_record(w, &w->group[i].r);
	w->group_len = 0;
}

/* Takes the next record in time order: groups them by time, then writes them. */
static void emit_rec(weft__paraver_writer *w, const rec *r)
{
	group_rec g;

	if (w->group_len > 0 &&
	    (r->time != w->group[0].r.time || w->group_len == GROUP_MAX))
		flush_group(w);
	g.r = *r;
	g.cls = r->kind == REC_CEND ? 0 : r->kind == REC_CBEGIN ? 1 : 2;
	g.tie = r->kind == REC_CBEGIN ? UINT64_MAX - r->end : 0;
	g.index = (uint32_t)w->group_len;
	w->group[w->group_len++] = g;
}

/* A packed record back from the sort; 0, or WEFT_EIO when it is damaged. */
static int sorted_rec(const char *bytes, size_t len, rec *r)
{
	if (len > REC_MAX || rec_unpack(bytes, len, r) != 0)
		return weft__error(WEFT_EIO, NULL, WEFT_NO_OFFSET,
				   "paraver: a sorted record came back damaged (%zu bytes)", len);
	return 0;
}

/* Receives the sorted records of the sort path. */
static int emit_record(void *ctx, const char *bytes, size_t len)
{
	weft__paraver_writer *w = ctx;
	rec r;
	int rc = sorted_rec(bytes, len, &r);

	if (rc == 0)
		emit_rec(w, &r);
	return rc;
}

/* The buffer of a time group. 0 or WEFT_ENOMEM. */
static int group_alloc(weft__paraver_writer *w)
{
	if (w->group == NULL)
		w->group = malloc(GROUP_MAX * sizeof *w->group);
	return w->group != NULL ? 0 : weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET,
						  "paraver: out of memory (record group)");
}

/* The sort's statistics into ours. */
static void sort_stats(weft__paraver_writer *w)
{
	weft__row_sort_stats s;

	weft__row_sorter_stats(w->sorter, &s);
	w->stats.sort_runs = s.runs;
}

/* Sort path: the header, the trace-start record, then the sorted records. */
static int write_prv_sorted(weft__paraver_writer *w)
{
	int rc = weft__outbuf_init(&w->out, w->prv_fd, WEFT__OUTBUF_DEFAULT_SIZE);

	if (rc < 0 || (rc = put_header(w)) < 0)
		return rc;
	put_trace_start(w);
	if (w->sorter != NULL) {
		if ((rc = group_alloc(w)) < 0)
			return rc;
		rc = weft__row_sorter_finish(w->sorter, emit_record, w);
		flush_group(w);
		sort_stats(w);
		if (rc != 0)
			return rc < 0 ? rc : WEFT_EIO;
	}
	if (w->error != 0)
		return w->error;
	rc = weft__outbuf_flush(&w->out);
	weft__outbuf_destroy(&w->out);
	return rc;
}

/*
 * Nothing written yet and every record in the window: the exact header,
 * then the window in order (no placeholder: those still open never
 * closed, and make no record).
 */
static int write_prv_collected(weft__paraver_writer *w)
{
	rec r;
	int rc = weft__outbuf_init(&w->out, w->prv_fd, WEFT__OUTBUF_DEFAULT_SIZE);

	if (rc < 0 || (rc = put_header(w)) < 0)
		return rc;
	put_trace_start(w);
	while (window_count(&w->win) > 0) {
		window_pop(&w->win, &r);
		write_record(w, &r);
	}
	if (w->error != 0)
		return w->error;
	rc = weft__outbuf_flush(&w->out);
	weft__outbuf_destroy(&w->out);
	return rc;
}

/* ---- Reading the body back ------------------------------------------------------------------------ */

/* Lines of a file range, through a buffer. */
typedef struct line_reader {
	int fd;
	char *buf;
	size_t cap, pos, len;  /* unread bytes: buf[pos, len) */
	uint64_t at, end;      /* file offset of buf[len]; read up to `end` */
	int error;
} line_reader;

/* A reader of [from, end) of fd. 0 or WEFT_ENOMEM. */
static int reader_open(line_reader *lr, int fd, uint64_t from, uint64_t end)
{
	memset(lr, 0, sizeof *lr);
	lr->fd = fd;
	lr->at = from;
	lr->end = end;
	lr->cap = COPY_BUFFER;
	lr->buf = malloc(lr->cap);
	return lr->buf != NULL ? 0 : weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET,
						 "paraver: out of memory (merge)");
}

/* Keeps the unread bytes and reads more; the bytes now unread (0 at the end). */
static size_t reader_fill(line_reader *lr)
{
	memmove(lr->buf, lr->buf + lr->pos, lr->len - lr->pos);
	lr->len -= lr->pos;
	lr->pos = 0;
	size_t want = lr->cap - lr->len;
	if (lr->end - lr->at < want)
		want = (size_t)(lr->end - lr->at);
	if (want > 0) {
		int64_t n = pread_at(lr->fd, lr->buf + lr->len, want, lr->at);
		if (n < 0)
			lr->error = (int)n;
		else {
			lr->len += (size_t)n;
			lr->at += (uint64_t)n;
		}
	}
	return lr->len;
}

/* The next whole line (with its '\n') in *line, *n bytes; 0 at the end. */
static int reader_line(line_reader *lr, const char **line, size_t *n)
{
	char *nl = memchr(lr->buf + lr->pos, '\n', lr->len - lr->pos);

	if (nl == NULL && reader_fill(lr) > 0)
		nl = memchr(lr->buf, '\n', lr->len);
	if (nl == NULL)
		return 0; /* the body ends with a '\n': a rest is damage, ignored */
	*line = lr->buf + lr->pos;
	*n = (size_t)(nl + 1 - *line);
	lr->pos += *n;
	return 1;
}

/* The time of a record line (its sixth field). 0, or -1 when it has none. */
static int line_time(const char *s, const char *end, uint64_t *t)
{
	int colons = 0;

	while (s < end && colons < 5)
		colons += *s++ == ':';
	if (colons < 5 || s >= end || *s < '0' || *s > '9')
		return -1;
	uint64_t v = 0;
	while (s < end && *s >= '0' && *s <= '9')
		v = v * 10 + (uint64_t)(*s++ - '0');
	*t = v;
	return 0;
}

/* The first line of [b, last) (whole lines) with a time above t, or last. */
static const char *first_after(const char *b, const char *last, uint64_t t)
{
	uint64_t lt;

	while (b < last) {
		const char *nl = memchr(b, '\n', (size_t)(last - b));
		if (line_time(b, nl, &lt) == 0 && lt > t)
			return b;
		b = nl + 1;
	}
	return last;
}

/*
 * Copies to the output the lines whose time is at most t (relative),
 * whole buffers at once while their last line is: they are sorted.
 */
static void reader_copy_until(line_reader *lr, uint64_t t, weft__outbuf *ob)
{
	uint64_t lt;

	for (;;) {
		if (lr->pos == lr->len && reader_fill(lr) == 0)
			return;
		const char *b = lr->buf + lr->pos, *last = lr->buf + lr->len;
		while (last > b && last[-1] != '\n')
			last--; /* the end of the last whole line */
		if (last == b) {
			size_t unread = lr->len - lr->pos;
			if (reader_fill(lr) == unread)
				return; /* a rest without '\n': copied by reader_copy_rest */
			continue;
		}
		const char *start = last - 1;
		while (start > b && start[-1] != '\n')
			start--;
		const char *stop = line_time(start, last, &lt) == 0 && lt > t
					   ? first_after(b, last, t) : last;
		weft__outbuf_put(ob, b, (size_t)(stop - b));
		lr->pos += (size_t)(stop - b);
		if (stop < last)
			return;
	}
}

/* Copies what is left to read. */
static void reader_copy_rest(line_reader *lr, weft__outbuf *ob)
{
	while (lr->pos < lr->len || reader_fill(lr) > 0) {
		weft__outbuf_put(ob, lr->buf + lr->pos, lr->len - lr->pos);
		lr->pos = lr->len;
	}
}

/* Frees the reader's buffer. */
static void reader_close(line_reader *lr)
{
	free(lr->buf);
	lr->buf = NULL;
}

/* ---- Direct path: the end ----------------------------------------------------------------------- */

#define PEEK 4096u

/* The end (past its '\n') of the line that starts at `line`; 0 on failure. */
static uint64_t line_end_at(int fd, uint64_t line, uint64_t limit)
{
	char buf[PEEK];

	for (uint64_t at = line; at < limit; at += PEEK) {
		int64_t n = pread_at(fd, buf, PEEK, at);
		if (n <= 0)
			return 0;
		char *nl = memchr(buf, '\n', (size_t)n);
		if (nl != NULL)
			return at + (uint64_t)(nl - buf) + 1;
	}
	return 0;
}

/* The offset of the last ':' before `at` (not before `floor`); 0 on failure. */
static uint64_t colon_before(int fd, uint64_t at, uint64_t floor)
{
	char buf[PEEK];

	while (at > floor) {
		uint64_t from = at - floor > PEEK ? at - PEEK : floor;
		int64_t n = pread_at(fd, buf, (size_t)(at - from), from);
		if (n != (int64_t)(at - from))
			return 0;
		for (size_t i = (size_t)n; i-- > 0;)
			if (buf[i] == ':')
				return from + i;
		at = from;
	}
	return 0;
}

/*
 * A placeholder that is no record vanishes: the last number of the line
 * before it takes its bytes as leading zeros ("...:42\n<placeholder>"
 * becomes "...:000...00042\n"), the same value for Paraver.
 */
static int vanish_one(weft__paraver_writer *w, uint64_t line)
{
	uint64_t limit = w->buf_offset + w->out.len;
	uint64_t end = line_end_at(w->prv_fd, line, limit);
	uint64_t colon = end != 0 ? colon_before(w->prv_fd, line - 1, w->reserve) : 0;
	char tail[24], zeros[256];

	if (colon == 0)
		return weft__error(WEFT_EIO, NULL, WEFT_NO_OFFSET,
				   "paraver: a placeholder could not be removed");
	/* the significant digits: the last ones of the field (at most 20) */
	uint64_t from = line - 1 - colon - 1 > 20 ? line - 1 - 20 : colon + 1;
	int64_t n = pread_at(w->prv_fd, tail, (size_t)(line - 1 - from), from);
	char sign;
	if (n < 0 || pread_at(w->prv_fd, &sign, 1, colon + 1) != 1)
		return n < 0 ? (int)n : WEFT_EIO;
	size_t k = 0;
	while (k + 1 < (size_t)n && (tail[k] == '0' || tail[k] == '-'))
		k++;
	/* [colon + 1, end): sign, zeros, digits, '\n' */
	uint64_t at = colon + 1, digits_at = end - 1 - ((size_t)n - k);
	int rc = sign == '-' ? pwrite_at(w->prv_fd, "-", 1, at++) : 0;
	memset(zeros, '0', sizeof zeros);
	while (rc == 0 && at < digits_at) {
		size_t chunk = digits_at - at < sizeof zeros ? (size_t)(digits_at - at) : sizeof zeros;
		rc = pwrite_at(w->prv_fd, zeros, chunk, at);
		at += chunk;
	}
	if (rc == 0)
		rc = pwrite_at(w->prv_fd, tail + k, (size_t)n - k, digits_at);
	return rc == 0 ? pwrite_at(w->prv_fd, "\n", 1, end - 1) : rc;
}

/* Order of vanishing lines: by offset. */
static int compare_offsets(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Removes every vanishing placeholder, first to last (neighbours add up). */
static int vanish_all(weft__paraver_writer *w)
{
	int rc = 0;

	if (w->vanish_count == 0)
		return 0;
	qsort(w->vanish, w->vanish_count, sizeof *w->vanish, compare_offsets);
	for (size_t i = 0; rc == 0 && i < w->vanish_count; i++)
		rc = vanish_one(w, w->vanish[i]);
	w->vanish_count = 0;
	return rc;
}

/*
 * The window and the placeholders at the end: placeholders never
 * resolved make no record (unwritten ones are dropped, written ones
 * vanish), the window goes to the body, the writer thread finishes.
 */
static void direct_drain(weft__paraver_writer *w)
{
	rec r;

	ph_revert_all(w);
	while (window_count(&w->win) > 0) {
		window_pop(&w->win, &r);
		body_record(w, &r);
	}
	for (size_t i = 0; i < w->track_cap; i++) {
		pv_track *tr = &w->tracks[i];
		if (tr->ph == PH_WRITTEN_RUN || tr->ph == PH_WRITTEN_GAP) {
			vanish_add(w, tr);
			ph_drop(tr);
		}
	}
	body_flush(w);
	if (weft__outbuf_flush(&w->log) < 0)
		fail(w, WEFT_EIO);
}

/*
 * The body offset of the first line after time t (relative): the index
 * gives where to start reading. body_len when there is none.
 */
static int64_t first_after_time(weft__paraver_writer *w, uint64_t t, uint64_t body_len)
{
	size_t lo = 0, hi = w->index_count;
	line_reader lr;
	const char *line;
	size_t n;
	uint64_t lt;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (w->index[mid].time <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	uint64_t at = lo > 0 ? w->index[lo - 1].offset : 0;
	int rc = reader_open(&lr, w->prv_fd, w->reserve + at, w->reserve + body_len);
	if (rc < 0)
		return rc;
	while (reader_line(&lr, &line, &n)) {
		if (line_time(line, line + n, &lt) == 0 && lt > t)
			break;
		at += n;
	}
	rc = lr.error;
	reader_close(&lr);
	return rc < 0 ? rc : (int64_t)at;
}

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

/* Splice: a late record goes after the body lines of its time or before. */
static int splice_emit(void *ctx, const char *bytes, size_t len)
{
	merge_ctx *m = ctx;
	rec r;
	int rc = sorted_rec(bytes, len, &r);

	if (rc < 0)
		return rc;
	reader_copy_until(&m->body, r.time - m->w->start_base, &m->w->out);
	write_record(m->w, &r);
	return m->body.error;
}

/* The .prv ends where the last write left the file position. 0 or WEFT_EIO. */
static int cut_at_position(weft__paraver_writer *w, uint64_t *size)
{
	off_t at = lseek(w->prv_fd, 0, SEEK_CUR);

	if (at < 0 || ftruncate(w->prv_fd, at) != 0)
		return weft__error_errno("(paraver output)", "cannot set the size");
	*size = (uint64_t)at;
	return 0;
}

/*
 * The splice's start: the body from `from` copied to `tmp` and opened
 * there, the header written, the output positioned at `out_at` with a
 * fresh buffer. 0 or WEFT_E*.
 */
static int splice_open(merge_ctx *m, int tmp, uint64_t from, uint64_t out_at,
		       const char *header, size_t hlen)
{
	weft__paraver_writer *w = m->w;
	int rc = copy_range(w->prv_fd, w->reserve + from, w->buf_offset, tmp);

	if (rc == 0)
		rc = pwrite_at(w->prv_fd, header, hlen, 0);
	if (rc == 0)
		rc = reader_open(&m->body, tmp, 0, w->buf_offset - w->reserve - from);
	weft__outbuf_destroy(&w->out);
	if (rc == 0 && lseek(w->prv_fd, (off_t)out_at, SEEK_SET) < 0)
		rc = weft__error_errno("(paraver output)", "cannot seek");
	if (rc == 0)
		rc = weft__outbuf_init(&w->out, w->prv_fd, COPY_BUFFER);
	return rc;
}

/*
 * Merges the late records into the body: the header in place when it
 * kept its length (then only the part after the first late record is
 * rewritten), else the whole file after it. Through a copy of that part.
 */
static int splice(weft__paraver_writer *w, const char *header, size_t hlen)
{
	int64_t from = 0;
	merge_ctx m;
	uint64_t size = 0;

	if (hlen == w->reserve && w->sorter != NULL &&
	    (from = first_after_time(w, w->late_min - w->start_base,
				     w->buf_offset - w->reserve)) < 0)
		return (int)from;
	uint64_t out_at = hlen == w->reserve ? w->reserve + (uint64_t)from : hlen;
	int tmp = temp_file(w);
	if (tmp < 0)
		return weft__error_errno(w->tmpdir ? w->tmpdir : "(temporary file)",
					 "cannot create a temporary file");
	memset(&m, 0, sizeof m);
	m.w = w;
	int rc = splice_open(&m, tmp, (uint64_t)from, out_at, header, hlen);
	if (rc == 0 && w->sorter != NULL) {
		rc = weft__row_sorter_finish(w->sorter, splice_emit, &m);
		sort_stats(w);
	}
	if (rc == 0) {
		reader_copy_rest(&m.body, &w->out);
		rc = m.body.error < 0 ? m.body.error : weft__outbuf_flush(&w->out);
	}
	if (rc == 0 && (rc = cut_at_position(w, &size)) == 0)
		w->stats.merge_bytes = size - out_at;
	reader_close(&m.body);
	close(tmp);
	return rc > 0 ? WEFT_EIO : rc;
}

/* ---- Rebuild: the body read back and merged with the sort -------------------------------------------- */

/* Order of the row map: by row. */
static int compare_row_refs(const void *a, const void *b)
{
	const row_ref *x = a, *y = b;

	return x->row < y->row ? -1 : x->row > y->row;
}

/*
 * A track of every row (state lines name their row only), sorted by
 * (task << 32 | thread). 0 or WEFT_ENOMEM.
 */
static int rows_build(merge_ctx *m)
{
	const weft__paraver_writer *w = m->w;

	m->rows = malloc((w->track_cap ? w->track_cap : 1) * sizeof *m->rows);
	if (m->rows == NULL)
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET,
				   "paraver: out of memory (rebuild)");
	for (size_t i = 0; i < w->track_cap; i++)
		if (w->tracks[i].kind != 0 && w->tracks[i].kind != WEFT__TRACK_PROCESS)
			m->rows[m->row_count++] = (row_ref){
				(uint64_t)w->tracks[i].task << 32 | w->tracks[i].thread,
				(uint32_t)(i + 1) };
	qsort(m->rows, m->row_count, sizeof *m->rows, compare_row_refs);
	return 0;
}

/* A track on row (task, thread), or 0. */
static uint32_t row_track(const merge_ctx *m, uint64_t task, uint64_t thread)
{
	uint64_t key = task << 32 | thread;
	size_t lo = 0, hi = m->row_count;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (m->rows[mid].row < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < m->row_count && m->rows[lo].row == key ? m->rows[lo].track : 0;
}

/*
 * ":u1:...:u<nu>:v1:...:v<nv>\n" at s: nu unsigned then nv signed
 * numbers. 0, or -1 when the text is not that.
 */
static int parse_numbers(const char *s, const char *end, uint64_t *u, int nu, int64_t *v,
			 int nv)
{
	for (int i = 0; i < nu + nv; i++) {
		int neg = 0;
		if (s >= end || *s++ != ':')
			return -1;
		if (i >= nu && s < end && *s == '-') {
			neg = 1;
			s++;
		}
		if (s >= end || *s < '0' || *s > '9')
			return -1;
		uint64_t x = 0;
		while (s < end && *s >= '0' && *s <= '9')
			x = x * 10 + (uint64_t)(*s++ - '0');
		if (i < nu)
			u[i] = x;
		else
			v[i - nu] = neg ? (int64_t)(0 - x) : (int64_t)x;
	}
	return s < end && *s == '\n' ? 0 : -1;
}

/* "K:0:1:task:thread:a:b:c\n": the numbers into f[0..5] (kind, cpu, appl,
 * task, thread, a), b and c. 0, or -1 when the line is not one. */
static int parse_line(const char *s, const char *end, uint64_t f[7], int64_t *c)
{
	f[0] = (uint64_t)(*s - '0');
	return parse_numbers(s + 1, end, f + 1, 6, c, 1);
}

/*
 * A communication line "3:0:1:task:thread:send:send:0:1:task:thread:
 * recv:recv:size:tag\n" back into a record (times from `start`). 0 or -1.
 */
static int parse_comm_line(const merge_ctx *m, const char *s, const char *end, rec *r)
{
	uint64_t f[12];
	int64_t v[2];

	if (parse_numbers(s + 1, end, f, 12, v, 2) != 0)
		return -1;
	memset(r, 0, sizeof *r);
	r->kind = REC_COMM;
	r->time = f[4] + m->old_start;
	r->end = f[10] + m->old_start;
	r->track = row_track(m, f[2], f[3]);
	r->type = row_track(m, f[8], f[9]);
	r->value = v[0];
	r->tag = (int32_t)v[1];
	return 0;
}

/* The next entry of the log; 0, or -1 at its end or on damage. */
static int log_next(line_reader *lr, uint64_t *v)
{
	if (lr->len - lr->pos < 10)
		reader_fill(lr);
	const char *p = lr->buf + lr->pos;
	if (get_varint(&p, lr->buf + lr->len, v) != 0)
		return -1;
	lr->pos = (size_t)(p - lr->buf);
	return 0;
}

/*
 * The body's next record (the log says which lines begin and end spans,
 * and their track); 1, or 0 at the end. A line that cannot be read
 * back sets the body's error.
 */
static int rebuild_next(merge_ctx *m, rec *r)
{
	const char *line;
	size_t n;
	uint64_t f[7], code;
	int64_t c;

	while (reader_line(&m->body, &line, &n)) {
		if (n > 0 && line[0] == '3') {
			if (parse_comm_line(m, line, line + n, r) == 0)
				return 1;
			m->body.error = weft__error(WEFT_EIO, NULL, WEFT_NO_OFFSET,
						    "paraver: the output could not be read back");
			return 0;
		}
		if (parse_line(line, line + n, f, &c) != 0 || (f[0] != 1 && f[0] != 2) ||
		    (f[0] == 2 && log_next(&m->log, &code) != 0)) {
			m->body.error = weft__error(WEFT_EIO, NULL, WEFT_NO_OFFSET,
						    "paraver: the output could not be read back");
			return 0;
		}
		memset(r, 0, sizeof *r);
		r->time = f[5] + m->old_start;
		r->value = c;
		if (f[0] == 1) {
			r->kind = REC_STATE;
			r->end = f[6] + m->old_start;
			r->track = row_track(m, f[3], f[4]);
			return 1;
		}
		if ((code & 3) == LOG_SKIP)
			continue; /* the trace-start record: made again */
		r->kind = (code & 3) == LOG_BEGIN ? REC_BEGIN : (code & 3) == LOG_END ? REC_END
										 : REC_EVENT;
		r->track = (uint32_t)(code >> 2);
		r->type = (uint32_t)f[6];
		r->end = r->time;
		return 1;
	}
	return 0;
}

/* Rebuild: the body's records up to a sorted one's time, then that one. */
static int rebuild_emit(void *ctx, const char *bytes, size_t len)
{
	merge_ctx *m = ctx;
	rec r;
	int rc = sorted_rec(bytes, len, &r);

	if (rc < 0)
		return rc;
	while (m->have_next && m->next.time <= r.time) {
		emit_rec(m->w, &m->next);
		m->have_next = rebuild_next(m, &m->next);
	}
	emit_rec(m->w, &r);
	return m->body.error;
}

/* Opens the copy of the body and the log for the rebuild. 0 or WEFT_E*. */
static int rebuild_open(merge_ctx *m, int tmp)
{
	weft__paraver_writer *w = m->w;
	off_t log_len = lseek(w->log_fd, 0, SEEK_END);
	int rc = log_len < 0 ? weft__error_errno("(paraver log)", "cannot seek") : 0;

	if (rc == 0)
		rc = copy_range(w->prv_fd, w->reserve, w->buf_offset, tmp);
	if (rc == 0)
		rc = rows_build(m);
	if (rc == 0)
		rc = reader_open(&m->body, tmp, 0, w->buf_offset - w->reserve);
	if (rc == 0)
		rc = reader_open(&m->log, w->log_fd, 0, (uint64_t)log_len);
	return rc;
}

/* Every span stack empty again (the rebuild writes from the start). */
static void stacks_reset(weft__paraver_writer *w)
{
	for (size_t i = 0; i < w->track_cap; i++)
		w->tracks[i].depth = 0;
}

/* Writes the rebuilt .prv: header, trace start, body and sort merged. */
static int rebuild_write(merge_ctx *m, const char *header, size_t hlen)
{
	weft__paraver_writer *w = m->w;
	int rc;

	weft__outbuf_destroy(&w->out);
	if (lseek(w->prv_fd, 0, SEEK_SET) < 0)
		return weft__error_errno("(paraver output)", "cannot seek");
	if ((rc = weft__outbuf_init(&w->out, w->prv_fd, COPY_BUFFER)) < 0 ||
	    (rc = group_alloc(w)) < 0)
		return rc;
	stacks_reset(w);
	w->stats.records = w->stats.state_records = w->stats.padded_states = 0;
	weft__outbuf_put(&w->out, header, hlen);
	put_trace_start(w);
	m->have_next = rebuild_next(m, &m->next);
	if (w->sorter != NULL) {
		rc = weft__row_sorter_finish(w->sorter, rebuild_emit, m);
		sort_stats(w);
	}
	while (rc == 0 && m->have_next) {
		emit_rec(w, &m->next);
		m->have_next = rebuild_next(m, &m->next);
	}
	flush_group(w);
	if (rc == 0)
		rc = m->body.error < 0 ? m->body.error : m->log.error;
	return rc == 0 ? weft__outbuf_flush(&w->out) : rc;
}

/*
 * The .prv made again from the written body (read back from a copy)
 * and the sorted records, as the sort path would have made it.
 */
static int rebuild(weft__paraver_writer *w, const char *header, size_t hlen)
{
	merge_ctx m;
	int tmp = temp_file(w);

	if (tmp < 0)
		return weft__error_errno(w->tmpdir ? w->tmpdir : "(temporary file)",
					 "cannot create a temporary file");
	memset(&m, 0, sizeof m);
	m.w = w;
	m.old_start = w->start_base;
	uint64_t size = 0;
	int rc = rebuild_open(&m, tmp);
	if (rc == 0)
		rc = rebuild_write(&m, header, hlen);
	if (rc == 0 && (rc = cut_at_position(w, &size)) == 0) {
		w->stats.rebuilt = 1;
		w->stats.merge_bytes = size;
	}
	reader_close(&m.body);
	reader_close(&m.log);
	free(m.rows);
	close(tmp);
	return rc > 0 ? WEFT_EIO : rc;
}

/*
 * The direct path's end (the body written, placeholders done): the
 * header in place when there is nothing to merge, else the merge of the
 * late records, or the rebuild.
 */
static int write_prv_direct(weft__paraver_writer *w)
{
	char *h;
	size_t hlen = header_build(w, w->stats.start, w->stats.duration, w->reserve, &h);
	int rc;

	if (hlen == 0)
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET,
				   "paraver: out of memory (header)");
	if (w->mode == MODE_REBUILD || w->stats.start != w->start_base)
		rc = rebuild(w, h, hlen);
	else if (w->sorter != NULL || hlen != w->reserve)
		rc = splice(w, h, hlen);
	else if ((rc = pwrite_at(w->prv_fd, h, hlen, 0)) == 0 &&
		 ftruncate(w->prv_fd, (off_t)w->buf_offset) != 0)
		rc = weft__error_errno("(paraver output)", "cannot set the size");
	free(h);
	log_close(w);
	weft__outbuf_destroy(&w->out);
	return rc;
}

/* ---- Writing the .pcf ---------------------------------------------------------------------- */

static const char PCF_HEAD[] =
	"DEFAULT_OPTIONS\n\n"
	"LEVEL               THREAD\n"
	"UNITS               NANOSEC\n"
	"LOOK_BACK           100\n"
	"SPEED               1\n"
	"FLAG_ICONS          ENABLED\n"
	"NUM_OF_STATE_COLORS 1000\n"
	"YMAX_SCALE          37\n\n\n"
	"DEFAULT_SEMANTIC\n\n"
	"THREAD_FUNC         State As Is\n\n\n";

/* Colours of states 1, 2, ... (state 0, "Not running", is light grey). */
static const unsigned char STATE_COLORS[][3] = {
	{ 38, 110, 200 }, { 220, 90, 40 }, { 60, 160, 70 }, { 150, 70, 170 },
	{ 230, 180, 30 }, { 40, 170, 170 }, { 200, 60, 120 }, { 120, 120, 40 },
	{ 90, 90, 220 }, { 170, 110, 60 }, { 100, 200, 130 }, { 240, 130, 160 }
};

/* Order of labels in the .pcf: by namespace, then number. */
static int compare_labels(const void *a, const void *b)
{
	const label *x = *(const label *const *)a, *y = *(const label *const *)b;

	if (x->number_ns != y->number_ns)
		return x->number_ns < y->number_ns ? -1 : 1;
	return x->number < y->number ? -1 : (x->number > y->number);
}

/* Writes "<number> <text>\n", the number left-aligned in 10 columns. */
static void put_numbered(weft__outbuf *ob, int64_t number, const char *text)
{
	char num[32];

	snprintf(num, sizeof num, "%-10lld ", (long long)number);
	weft__outbuf_puts(ob, num);
	weft__outbuf_puts(ob, text);
	weft__outbuf_puts(ob, "\n");
}

/* The STATES and STATES_COLOR blocks, from the sorted labels. */
static void put_states(weft__outbuf *ob, label *const *sorted, size_t n)
{
	char line[64];

	weft__outbuf_puts(ob, "STATES\n");
	put_numbered(ob, 0, "Not running");
	for (size_t i = 0; i < n; i++)
		if (sorted[i]->number_ns == NS_STATES)
			put_numbered(ob, sorted[i]->number, sorted[i]->text);
	weft__outbuf_puts(ob, "\n\nSTATES_COLOR\n");
	put_numbered(ob, 0, "{200, 200, 200}");
	for (size_t i = 0; i < n; i++) {
		if (sorted[i]->number_ns != NS_STATES)
			continue;
		const unsigned char *c = STATE_COLORS[(sorted[i]->number - 1) % 12];
		snprintf(line, sizeof line, "{%u, %u, %u}", c[0], c[1], c[2]);
		put_numbered(ob, sorted[i]->number, line);
	}
	weft__outbuf_puts(ob, "\n\n");
}

/*
 * One EVENT_TYPE block per type, with the VALUES of its namespace (the
 * labels of namespace `type` follow the types in the sorted order, in
 * the same order as the types).
 */
static void put_types(weft__outbuf *ob, label *const *sorted, size_t n, uint64_t *types)
{
	size_t v = 0;

	for (size_t i = 0; i < n && sorted[i]->number_ns == NS_TYPES; i++) {
		const label *t = sorted[i];
		weft__outbuf_puts(ob, "EVENT_TYPE\n0    ");
		put_numbered(ob, t->number, t->text);
		weft__outbuf_puts(ob, "VALUES\n");
		while (v < n && (sorted[v]->number_ns == NS_TYPES ||
				 (int64_t)sorted[v]->number_ns < t->number))
			v++;
		for (; v < n && sorted[v]->number_ns != NS_STATES &&
		       (int64_t)sorted[v]->number_ns == t->number; v++)
			put_numbered(ob, sorted[v]->number, sorted[v]->text);
		weft__outbuf_puts(ob, "\n\n");
		(*types)++;
	}
}

/* The .pcf: options, states, then every event type with its values. */
static int write_pcf(weft__paraver_writer *w)
{
	size_t n = w->labels.count;
	label **sorted = malloc((n ? n : 1) * sizeof *sorted);
	int rc = sorted ? weft__outbuf_init(&w->out, w->pcf_fd, 64u << 10) : WEFT_ENOMEM;

	if (rc < 0) {
		free(sorted);
		return rc == WEFT_ENOMEM && sorted == NULL
			       ? weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET,
					     "paraver: out of memory (.pcf)")
			       : rc;
	}
	for (size_t i = 0; i < n; i++)
		sorted[i] = &w->labels.items[i];
	qsort(sorted, n, sizeof *sorted, compare_labels);
	weft__outbuf_puts(&w->out, PCF_HEAD);
	put_states(&w->out, sorted, n);
	put_types(&w->out, sorted, n, &w->stats.types);
	free(sorted);
	rc = weft__outbuf_flush(&w->out);
	weft__outbuf_destroy(&w->out);
	return rc;
}

/* ---- Writing the .row ------------------------------------------------------------------------ */

/* Order of rows: by task, then thread number (= declaration in the task). */
static int compare_rows(const void *a, const void *b)
{
	const pv_row *x = a, *y = b;

	if (x->task != y->task)
		return x->task < y->task ? -1 : 1;
	return x->thread < y->thread ? -1 : (x->thread > y->thread);
}

/* "LEVEL <name> SIZE <n>\n". */
static void put_level(weft__outbuf *ob, const char *name, size_t n)
{
	char line[96];

	snprintf(line, sizeof line, "LEVEL %s SIZE %zu\n", name, n);
	weft__outbuf_puts(ob, line);
}

/* The .row: no CPUs (no resource model), one node, tasks, threads. */
static int write_row(weft__paraver_writer *w)
{
	int rc = weft__outbuf_init(&w->out, w->row_fd, 64u << 10);

	if (rc < 0)
		return rc;
	qsort(w->rows, w->row_count, sizeof *w->rows, compare_rows);
	put_level(&w->out, "CPU", 0);
	weft__outbuf_puts(&w->out, "\n");
	put_level(&w->out, "NODE", 1);
	weft__outbuf_puts(&w->out, "node 1\n\n");
	put_level(&w->out, "APPL", 1);
	weft__outbuf_puts(&w->out, "weft\n\n");
	put_level(&w->out, "TASK", w->task_count);
	for (size_t i = 0; i < w->task_count; i++) {
		weft__outbuf_puts(&w->out, w->tasks[i].name);
		weft__outbuf_puts(&w->out, "\n");
	}
	weft__outbuf_puts(&w->out, "\n");
	put_level(&w->out, "THREAD", w->row_count);
	for (size_t i = 0; i < w->row_count; i++) {
		weft__outbuf_puts(&w->out, w->rows[i].name);
		weft__outbuf_puts(&w->out, "\n");
	}
	rc = weft__outbuf_flush(&w->out);
	weft__outbuf_destroy(&w->out);
	return rc;
}

/* ---- Finishing ---------------------------------------------------------------------------------- */

/*
 * Tasks without threads get one empty row (Paraver wants at least one
 * thread per task), and an empty trace gets one task.
 */
static int complete_objects(weft__paraver_writer *w)
{
	if (w->task_count == 0 && task_new(w, "(no streams)") == 0)
		return -1;
	for (size_t i = 0; i < w->task_count; i++) {
		if (w->tasks[i].threads > 0)
			continue;
		pv_track dummy;
		memset(&dummy, 0, sizeof dummy);
		if (row_new(w, &dummy, (uint32_t)i + 1, "(no streams)") != 0)
			return -1;
	}
	return 0;
}

/* Counts, the time base, the label of type 1 and the object warning. */
static int prepare(weft__paraver_writer *w)
{
	char text[160];
	uint64_t max_threads = 0;

	if (complete_objects(w) != 0)
		return -1;
	w->stats.start = w->have_time ? w->min_time : 0;
	w->stats.duration = w->have_time ? w->max_time - w->min_time : 0;
	w->stats.tasks = w->task_count;
	w->stats.rows = w->row_count;
	for (size_t i = 0; i < w->task_count; i++)
		if (w->tasks[i].threads > max_threads)
			max_threads = w->tasks[i].threads;
	w->stats.max_object = max_threads > w->task_count ? max_threads : w->task_count;
	if (w->stats.max_object > WEFT__PARAVER_MAX_OBJECT)
		snprintf(w->warning, sizeof w->warning,
			 "paraver: %llu tasks, up to %llu threads in a task: Paraver reads "
			 "object numbers above %u only when built with extended objects",
			 (unsigned long long)w->task_count, (unsigned long long)max_threads,
			 WEFT__PARAVER_MAX_OBJECT);
	else if (w->flows != NULL && (weft__flow_pairs_waiting(w->flows) > 0 ||
				      w->stats.comm_dropped > 0))
		snprintf(w->warning, sizeof w->warning,
			 "paraver: %llu message end(s) without their other end in the trace%s "
			 "(shown as events, with no communication line)",
			 (unsigned long long)(weft__flow_pairs_waiting(w->flows) +
					      w->stats.comm_dropped),
			 w->stats.comm_dropped > 0 ? " or past the bound of waiting ends" : "");
	snprintf(text, sizeof text, "Trace start: time 0 is %llu ns of the trace's clock (value)",
		 (unsigned long long)w->stats.start);
	return fixed_type(w, TYPE_TRACE_START, text);
}

/* The .prv on the path the records took. */
static int write_prv(weft__paraver_writer *w)
{
	switch (w->mode) {
	case MODE_COLLECT:
		return write_prv_collected(w);
	case MODE_SORT:
		return write_prv_sorted(w);
	default:
		return write_prv_direct(w);
	}
}

/* Counts and names first, then .prv, .pcf, .row. */
int weft__paraver_writer_finish(weft__paraver_writer *w)
{
	int rc;

	if (w->finished)
		return weft__error(WEFT_EINVAL, NULL, WEFT_NO_OFFSET,
				   "paraver: the writer is finished already");
	w->finished = 1;
	if (w->error == 0 && (w->mode == MODE_DIRECT || w->mode == MODE_REBUILD)) {
		direct_drain(w);
		if (w->error == 0 && (rc = vanish_all(w)) < 0)
			fail(w, rc);
	}
	if (w->error == 0 && prepare(w) != 0)
		fail_nomem(w, "objects");
	if (w->error != 0)
		return weft__error(w->error, NULL, WEFT_NO_OFFSET, "%s", w->error_text);
	rc = write_prv(w);
	if (rc == 0 && w->error != 0)
		rc = weft__error(w->error, NULL, WEFT_NO_OFFSET, "%s", w->error_text);
	if (rc == 0)
		rc = write_pcf(w);
	if (rc == 0)
		rc = write_row(w);
	return rc;
}

/* ---- Life cycle ------------------------------------------------------------------------------------ */

int weft__paraver_writer_create(int prv_fd, int pcf_fd, int row_fd, const char *tmpdir,
				weft__paraver_writer **out)
{
	weft__paraver_writer *w = calloc(1, sizeof *w);

	*out = NULL;
	if (w == NULL || (tmpdir != NULL && (w->tmpdir = strdup(tmpdir)) == NULL)) {
		free(w);
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET,
				   "paraver: out of memory (writer)");
	}
	w->prv_fd = prv_fd;
	w->pcf_fd = pcf_fd;
	w->row_fd = row_fd;
	w->log_fd = -1;
	w->budget = WEFT__PARAVER_SORT_BUDGET;
	w->window_bytes = WEFT__PARAVER_WINDOW;
	w->late_min = UINT64_MAX;
	w->time_high = UINT64_MAX;
	w->direct_ok = direct_possible(prv_fd);
	w->mode = w->direct_ok ? MODE_COLLECT : MODE_SORT;
	w->sink.ctx = w;
	w->sink.track = on_track;
	w->sink.begin = on_begin;
	w->sink.end = on_end;
	w->sink.complete = on_complete;
	w->sink.instant = on_instant;
	w->sink.counter = on_counter;
	*out = w;
	return 0;
}

/* The callbacks, bound to this writer. */
const weft__view_sink *weft__paraver_writer_sink(weft__paraver_writer *w)
{
	return &w->sink;
}

/* The sort is made at the first record: the budget can change until then. */
int weft__paraver_writer_set_sort_budget(weft__paraver_writer *w, uint64_t bytes)
{
	if (w->records_seen || w->finished)
		return weft__error(WEFT_EINVAL, NULL, WEFT_NO_OFFSET,
				   "paraver: the sort budget is set before the first record");
	w->budget = bytes;
	return 0;
}

/* The window is made at the first record: its size can change until then. */
int weft__paraver_writer_set_window(weft__paraver_writer *w, uint64_t bytes)
{
	if (w->records_seen || w->finished)
		return weft__error(WEFT_EINVAL, NULL, WEFT_NO_OFFSET,
				   "paraver: the window is set before the first record");
	w->window_bytes = bytes;
	w->mode = bytes > 0 && w->direct_ok ? MODE_COLLECT : MODE_SORT;
	return 0;
}

/* A copy of the counters (complete after finish). */
void weft__paraver_writer_stats(const weft__paraver_writer *w, weft__paraver_stats *out)
{
	*out = w->stats;
	out->comm_unmatched = w->flows != NULL ? weft__flow_pairs_waiting(w->flows) : 0;
}

/* The warning prepared by finish, if any. */
const char *weft__paraver_writer_warning(const weft__paraver_writer *w)
{
	return w->warning[0] != '\0' ? w->warning : NULL;
}

/* Frees the label table. */
static void labels_free(label_table *t)
{
	for (size_t i = 0; i < t->count; i++) {
		free(t->items[i].key);
		free(t->items[i].text);
	}
	free(t->items);
	free(t->by_key);
	free(t->by_number);
}

/* The direct path's thread, buffers and files. */
static void direct_free(weft__paraver_writer *w)
{
	if (w->bg_on)
		weft__bg_writer_finish(&w->bg);
	w->bg_on = 0;
	free(w->spare);
	log_close(w);
	window_free(&w->win);
	free(w->patches);
	free(w->vanish);
	free(w->index);
}

/* Everything the writer owns: sort (and its file), tracks, names, buffers. */
void weft__paraver_writer_free(weft__paraver_writer *w)
{
	if (w == NULL)
		return;
	direct_free(w);
	weft__row_sorter_free(w->sorter);
	for (size_t i = 0; i < w->track_cap; i++)
		free(w->tracks[i].stack);
	free(w->tracks);
	for (size_t i = 0; i < w->task_count; i++)
		free(w->tasks[i].name);
	free(w->tasks);
	for (size_t i = 0; i < w->row_count; i++)
		free(w->rows[i].name);
	free(w->rows);
	labels_free(&w->labels);
	free(w->group);
	weft__flow_pairs_free(w->flows);
	if (w->out.buf != NULL)
		weft__outbuf_destroy(&w->out);
	free(w->tmpdir);
	free(w);
}
