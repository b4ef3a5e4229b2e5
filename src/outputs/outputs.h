/* SPDX-License-Identifier: MIT */
/*
 * outputs/outputs.h - text writers shared by the `weft` command and the
 * converters: a large output buffer with hand-written number formatting,
 * string escapers (JSON and quoted text) and the event writers of
 * `weft dump` (fields, raw hex as ovnidump -x, JSON lines).
 *
 * Everything here is internal to libweft (weft__ prefix). The writers are
 * on the hot path of dumps of billions of events: they avoid printf and
 * write through weft__outbuf, which flushes with write(2) in large blocks.
 */
#ifndef WEFT_OUTPUTS_H
#define WEFT_OUTPUTS_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "weft/weft.h"

#if defined(__GNUC__)
#define WEFT__OUT_LIKELY(x) __builtin_expect(!!(x), 1)
#define WEFT__OUT_UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define WEFT__OUT_LIKELY(x) (x)
#define WEFT__OUT_UNLIKELY(x) (x)
#endif

/* ---- Output buffer (outputs/outbuf.c) ------------------------------------ */

/* The largest single reservation: callers chunk anything longer (but a
 * buffer in memory, WEFT__OUTBUF_GROW, grows to any reservation: the
 * shared viewers' records rely on it, outputs/view_replay.c). */
#define WEFT__OUTBUF_MAX_RESERVE 4096
/* Default size of the buffer of the dump writers. */
#define WEFT__OUTBUF_DEFAULT_SIZE (1u << 20)

/*
 * A byte buffer in front of a file descriptor. Writes that fail are
 * remembered (first errno in `error`) and later data is discarded, so the
 * hot path never checks for errors; callers check once at the end.
 */
typedef struct weft__outbuf {
	int fd;
	char *buf;
	size_t len;
	size_t cap;
	int error; /* errno of the first failed write(2), 0 when none */
} weft__outbuf;

/* The fd of a buffer kept in memory: it grows instead of being written. */
#define WEFT__OUTBUF_GROW (-2)

/* Allocates a buffer of `cap` bytes (at least 64 KiB) for `fd`. */
int weft__outbuf_init(weft__outbuf *ob, int fd, size_t cap);
/* Writes out what is buffered. 0, or WEFT_EIO (message set) on failure. */
int weft__outbuf_flush(weft__outbuf *ob);
/* Frees the buffer (without flushing). */
void weft__outbuf_destroy(weft__outbuf *ob);
/* Slow path of weft__outbuf_reserve(): flushes to make room for n bytes. */
char *weft__outbuf_make_room(weft__outbuf *ob, size_t n);
/* Appends n bytes of any length (chunked through the buffer). */
void weft__outbuf_put(weft__outbuf *ob, const void *data, size_t n);
/*
 * The same for a block made elsewhere (a farm's text): one as large as
 * half the buffer is written straight from where it is, after what is
 * buffered, instead of copied. Errors as weft__outbuf_flush() keeps them.
 */
void weft__outbuf_put_block(weft__outbuf *ob, const void *data, size_t n);

/*
 * Returns a pointer where up to n (<= WEFT__OUTBUF_MAX_RESERVE) bytes may
 * be written; weft__outbuf_commit() then tells where the writing ended.
 */
static inline char *weft__outbuf_reserve(weft__outbuf *ob, size_t n)
{
	if (WEFT__OUT_LIKELY(ob->cap - ob->len >= n))
		return ob->buf + ob->len;
	return weft__outbuf_make_room(ob, n);
}

static inline void weft__outbuf_commit(weft__outbuf *ob, char *end)
{
	ob->len = (size_t)(end - ob->buf);
}

/* Appends a NUL-terminated string. */
void weft__outbuf_puts(weft__outbuf *ob, const char *s);

/* ---- Number and byte formatting (outputs/format.c) ----------------------- */

/* Each writes at p and returns the end; at most 20 bytes (21 for i64). */
char *weft__fmt_u64(char *p, uint64_t v);
char *weft__fmt_i64(char *p, int64_t v);
/* Right-aligned in `width` columns with spaces (like printf "%10lu"). */
char *weft__fmt_u64_width(char *p, uint64_t v, unsigned width);
/*
 * Right-aligned clocks of a dump: clocks come in increasing order, so the
 * digits above the last four change only every 10 us; they are kept
 * formatted (with their padding) and only the last four are written per
 * event, inline.
 */
#define WEFT__CLOCK_LOW 10000u /* 10^4: the part written per event */
typedef struct weft__clock_cache {
	uint64_t high;    /* value / 10^4 of the cached text; UINT64_MAX = none */
	unsigned width;   /* column width (cached only up to 20) */
	size_t len;       /* bytes of text, at most 16 */
	char text[32];    /* padding + digits of `high` */
} weft__clock_cache;

/* "00" "01" ... "99": the decimal digits of every pair. */
extern const char weft__digit_pairs[201];

/* An empty cache for a column of `width` characters. */
void weft__clock_cache_init(weft__clock_cache *c, unsigned width);
/*
 * Slow path of weft__fmt_clock(): a value below 10^4, or a new high part
 * (then the cache is re-made). Same contract as weft__fmt_clock().
 */
char *weft__fmt_clock_slow(weft__clock_cache *c, char *p, uint64_t v);

/*
 * Same output as weft__fmt_u64_width(p, v, c->width); writes up to 24
 * bytes at p (more only for columns wider than 20, as that function
 * does): the cached text is copied as one 16-byte block.
 */
static inline char *weft__fmt_clock(weft__clock_cache *c, char *p, uint64_t v)
{
	uint64_t high = v / WEFT__CLOCK_LOW;

	if (WEFT__OUT_UNLIKELY(high != c->high))
		return weft__fmt_clock_slow(c, p, v);
	uint32_t low = (uint32_t)(v - high * WEFT__CLOCK_LOW);
	uint32_t hundreds = low / 100;
	char *q = p + c->len;

	memcpy(p, c->text, 16);
	memcpy(q, weft__digit_pairs + 2 * hundreds, 2);
	memcpy(q + 2, weft__digit_pairs + 2 * (low - hundreds * 100), 2);
	return q + 4;
}

/* ":xx" for every byte (3 bytes out per byte in, plus 1 spare byte). */
char *weft__fmt_hex_colon(char *p, const uint8_t *bytes, size_t n);
/* "xx" for every byte (2 bytes out per byte in). */
char *weft__fmt_hex_plain(char *p, const uint8_t *bytes, size_t n);
/* Same two, for any length, through the buffer. */
void weft__put_hex_colon(weft__outbuf *ob, const uint8_t *bytes, size_t n);
void weft__put_hex_plain(weft__outbuf *ob, const uint8_t *bytes, size_t n);

/* ---- String escaping (outputs/escape.c) ----------------------------------- */

/* UTF-8 validation (weft__utf8_sequence_length) is in core/internal.h. */
/*
 * `s` as a JSON string literal with its quotes: quote, backslash and
 * control characters escaped, invalid UTF-8 replaced by \ufffd.
 */
void weft__put_json_string(weft__outbuf *ob, const char *s, size_t len);
/*
 * `s` as a quoted text literal for humans: quote and backslash escaped,
 * control characters and invalid UTF-8 bytes written as \xNN.
 */
void weft__put_text_string(weft__outbuf *ob, const char *s, size_t len);
/* `s` unquoted, with only control characters and invalid bytes escaped. */
void weft__put_text_bare(weft__outbuf *ob, const char *s, size_t len);

/* ---- Event writers of `weft dump` (outputs/dump_writer.c) ---------------- */

typedef enum weft__dump_mode {
	WEFT__DUMP_FIELDS = 0, /* <clock>  <code>  <stream>  name=value ... */
	WEFT__DUMP_HEX = 1,    /* <clock>  <code>  <stream>  :xx:xx (ovnidump -x) */
	WEFT__DUMP_JSON = 2    /* one JSON object per line (docs/dump-json.md) */
} weft__dump_mode;

/* Options of the dump writer (bits). */
enum weft__dump_option {
	/* Text lines: the code indented by two spaces per call-tree level
	 * (weft_event.depth; none for events without a tree, depth -1). */
	WEFT__DUMP_TREE = 1u << 0
};

/* What the writer keeps of one stream: its path rendered once. */
typedef struct weft__dump_stream {
	char *prefix;        /* text: "  <path>  "; JSON: ",\"stream\":\"<path>\"" */
	size_t prefix_len;
	/* JSON of traces whose files hold many streams (ROSS): ",\"file\":
	 * \"<file>\"", shared by the consecutive streams of one file; else
	 * NULL and 0. */
	char *file;
	size_t file_len;
} weft__dump_stream;

typedef struct weft__dump_writer {
	weft__outbuf out;
	const weft_trace *trace;
	weft__dump_mode mode;
	weft__clock_cache clock; /* the clock column of text lines */
	weft__clock_cache json_clock; /* the unpadded "time" of JSON lines */
	int32_t plain_depth; /* events deeper are indented: 0 with --tree, else INT32_MAX */
	weft__dump_stream *streams;
	size_t stream_count;
	weft_field *fields;  /* scratch array for weft_event_fields() */
	size_t field_cap;
	uint64_t events;     /* events written */
	uint64_t bad_payloads; /* events whose payload did not match its layout */
} weft__dump_writer;

/* `options`: weft__dump_option bits (0 for none). */
int weft__dump_writer_init(weft__dump_writer *w, const weft_trace *trace,
			   int fd, weft__dump_mode mode, unsigned options);
/* Writes one event; errors of the output are reported by _finish(). */
void weft__dump_writer_event(weft__dump_writer *w, const weft_event *event);
/* Flushes; 0 or WEFT_EIO (message set) when the output failed. */
int weft__dump_writer_finish(weft__dump_writer *w);
/*
 * 1 once a write of the output has failed: what follows is discarded, so
 * the caller may stop early; weft__dump_writer_finish() reports the error.
 */
static inline int weft__dump_writer_failed(const weft__dump_writer *w)
{
	return w->out.error != 0;
}
void weft__dump_writer_destroy(weft__dump_writer *w);

/*
 * Decodes the fields of `event` into w->fields (grown when needed).
 * Returns what weft_event_fields() returns.
 */
int weft__dump_writer_fields(weft__dump_writer *w, const weft_event *event);

/* Writes the value of one decoded field (text or JSON flavour). */
void weft__put_field_text(weft__outbuf *ob, const weft_field *field);
void weft__put_field_json(weft__outbuf *ob, const weft_field *field);

/* ---- Field values (outputs/value_text.c) ---------------------------------- */

/*
 * What differs between the outputs that write field values: floats
 * (`single`: an f32) and strings in the output's own notation (ctx is
 * theirs), the separator of array elements, the text of a value that
 * cannot be read, and bytes: a quoted hex string (json) or hex with colons.
 */
typedef struct weft__value_style {
	void (*put_float)(weft__outbuf *ob, void *ctx, double v, int single);
	void (*put_string)(weft__outbuf *ob, void *ctx, const char *s, size_t n);
	void *ctx;
	const char *separator;
	const char *unknown;
	int json;
} weft__value_style;

/* The value of a decoded field: a scalar, or an array as [a,b,c]. */
void weft__put_value(weft__outbuf *ob, const weft_field *f, const weft__value_style *st);

#endif /* WEFT_OUTPUTS_H */
