/* SPDX-License-Identifier: MIT */
/*
 * test_libovni_common.h - shared by the test_libovni_*.c tests: emitting
 * events through <ovni.h> while recording what was emitted, and checking
 * a stream against that record twice, independently:
 *
 *   - on the bytes on disk (stream header "ovni" + u32 1, event layout),
 *     with a parser written here from the format description, and
 *   - through the weft reading API (weft_trace_open, cursors, fields).
 *
 * Header-only (static functions): each test is its own executable.
 */
#ifndef WEFT_TEST_LIBOVNI_COMMON_H
#define WEFT_TEST_LIBOVNI_COMMON_H

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <ovni.h>

#include "testutil.h"
#include "weft/weft.h"

/* ---- What was emitted ---------------------------------------------------- */

/* One emitted event, or (flush) the OF[ / OF] pair of an ovni_flush(). */
typedef struct exp_ev {
	char mcv[4];
	uint64_t clock;
	int psize;           /* 0, 2..16 */
	uint8_t payload[16];
	int jumbo;
	uint8_t *data;       /* jumbo data (malloc'd) */
	uint32_t dsize;
	int flush;           /* an explicit ovni_flush() happened here */
} exp_ev;

typedef struct exp_list {
	exp_ev *ev;
	size_t n, cap;
} exp_list;

static inline exp_ev *
exp_push(exp_list *l)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 256;
		l->ev = realloc(l->ev, l->cap * sizeof(*l->ev));
		REQUIRE(l->ev != NULL);
	}
	exp_ev *e = &l->ev[l->n++];
	memset(e, 0, sizeof(*e));
	return e;
}

static inline void
exp_free(exp_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->ev[i].data);
	free(l->ev);
	memset(l, 0, sizeof(*l));
}

static inline pid_t
test_gettid(void)
{
	return (pid_t) syscall(SYS_gettid);
}

/* Emits a normal event with the given payload (added in pieces of at
 * most `piece` bytes, to exercise repeated ovni_payload_add) and records
 * it. */
static inline void
emit_normal(exp_list *l, const char *mcv, uint64_t clock, const uint8_t *p,
	    int psize, int piece)
{
	struct ovni_ev ev;
	memset(&ev, 0, sizeof(ev));
	ovni_ev_set_mcv(&ev, mcv);
	ovni_ev_set_clock(&ev, clock);
	for (int at = 0; at < psize; ) {
		int n = psize - at;
		if (n > piece)
			n = piece;
		if (psize - at - n == 1) /* never leave a 1-byte rest */
			n = n > 2 ? n - 1 : n + 1;
		ovni_payload_add(&ev, p + at, n);
		at += n;
	}
	CHECK_EQ_I64(ovni_payload_size(&ev), psize);
	CHECK_EQ_I64(ovni_ev_size(&ev), 12 + psize);
	CHECK_EQ_U64(ovni_ev_get_clock(&ev), clock);
	ovni_ev_emit(&ev);

	exp_ev *e = exp_push(l);
	memcpy(e->mcv, mcv, 3);
	e->clock = clock;
	e->psize = psize;
	if (psize > 0)
		memcpy(e->payload, p, (size_t) psize);
}

/* Emits a jumbo event with size bytes of data and records it. */
static inline void
emit_jumbo(exp_list *l, const char *mcv, uint64_t clock, const uint8_t *data,
	   uint32_t size)
{
	struct ovni_ev ev;
	memset(&ev, 0, sizeof(ev));
	ovni_ev_set_mcv(&ev, mcv);
	ovni_ev_set_clock(&ev, clock);
	ovni_ev_jumbo_emit(&ev, data, size);

	exp_ev *e = exp_push(l);
	memcpy(e->mcv, mcv, 3);
	e->clock = clock;
	e->psize = 4;
	memcpy(e->payload, &size, 4);
	e->jumbo = 1;
	e->dsize = size;
	e->data = malloc(size ? size : 1);
	REQUIRE(e->data != NULL);
	if (size)
		memcpy(e->data, data, size);
}

/* Records a mark event as the library must have emitted it. The clock is
 * read by the library, so it is only known to lie in [lo, hi]. */
static inline void
record_mark(exp_list *l, char op, int32_t type, int64_t value)
{
	exp_ev *e = exp_push(l);
	e->mcv[0] = 'O';
	e->mcv[1] = 'M';
	e->mcv[2] = op;
	e->clock = UINT64_MAX; /* not compared */
	e->psize = 12;
	memcpy(e->payload, &value, 8);
	memcpy(e->payload + 8, &type, 4);
}

static inline void
do_flush(exp_list *l)
{
	ovni_flush();
	exp_push(l)->flush = 1;
}

/* ---- Events as read back ----------------------------------------------- */

/* An event as found in a stream, by either reader. */
typedef struct got_ev {
	char mcv[4];
	uint64_t clock;
	int psize;
	const uint8_t *payload;
	int jumbo;
	const uint8_t *data;
	uint64_t dsize;
} got_ev;

/* Counts what a comparison saw. */
typedef struct cmp_stats {
	size_t matched;        /* user events */
	size_t explicit_flush; /* OF pairs of ovni_flush() */
	size_t auto_flush;     /* OF pairs of full-buffer flushes */
} cmp_stats;

/*
 * Compares one event read back with the expected one, field by field.
 * `where` names the reader and the position for the failure message.
 */
static inline int
cmp_event(const exp_ev *e, const got_ev *g, const char *where, size_t i)
{
	int bad = 0;
	if (memcmp(e->mcv, g->mcv, 3) != 0) {
		tu_fail(__FILE__, __LINE__, "%s: event %zu: MCV %.3s, want %.3s", where, i,
			g->mcv, e->mcv);
		return 1;
	}
	if (e->clock != UINT64_MAX && e->clock != g->clock) {
		tu_fail(__FILE__, __LINE__, "%s: event %zu (%.3s): clock %llu, want %llu", where,
			i, e->mcv, (unsigned long long) g->clock, (unsigned long long) e->clock);
		bad = 1;
	}
	if (e->psize != g->psize || e->jumbo != g->jumbo) {
		tu_fail(__FILE__, __LINE__, "%s: event %zu (%.3s): payload %d jumbo %d, want %d %d",
			where, i, e->mcv, g->psize, g->jumbo, e->psize, e->jumbo);
		return 1;
	}
	if (e->psize > 0 && memcmp(e->payload, g->payload, (size_t) e->psize) != 0) {
		tu_fail(__FILE__, __LINE__, "%s: event %zu (%.3s): payload bytes differ", where, i,
			e->mcv);
		bad = 1;
	}
	if (e->jumbo && (g->dsize != e->dsize
			 || (e->dsize && memcmp(e->data, g->data, e->dsize) != 0))) {
		tu_fail(__FILE__, __LINE__, "%s: event %zu (%.3s): jumbo data of %llu bytes, want %u",
			where, i, e->mcv, (unsigned long long) g->dsize, e->dsize);
		bad = 1;
	}
	return bad;
}

static inline int
is_of(const got_ev *g, char v)
{
	return g->mcv[0] == 'O' && g->mcv[1] == 'F' && g->mcv[2] == v && g->psize == 0
	       && !g->jumbo;
}

/*
 * Walks the events of a stream (next() fills one per call, returns 0 at
 * the end) against the expected list. An explicit flush must show up as
 * OF[ then OF] at its place, except a last one with nothing after it,
 * which must not (libovni never writes it); other OF pairs (full-buffer
 * flushes, placed after the event that did not fit) are accepted
 * anywhere, and counted. With allow_prefix, the stream may stop before
 * the end of the list (a crashed writer): only what is there must match.
 */
static inline cmp_stats
compare_stream(const exp_list *l, int (*next)(void *ctx, got_ev *g), void *ctx,
	       const char *where, int allow_prefix)
{
	cmp_stats st = { 0, 0, 0 };
	got_ev g, g2;
	size_t i = 0, k = 0;
	int more;

	while ((more = next(ctx, &g)) > 0) {
		k++;
		if (is_of(&g, '[')) {
			if (next(ctx, &g2) <= 0 || !is_of(&g2, ']')) {
				tu_fail(__FILE__, __LINE__, "%s: event %zu: OF[ not followed by OF]",
					where, k);
				return st;
			}
			CHECK(g.clock <= g2.clock);
			if (i < l->n && l->ev[i].flush) {
				st.explicit_flush++;
				i++;
			} else {
				st.auto_flush++;
			}
			continue;
		}
		while (i < l->n && l->ev[i].flush) {
			tu_fail(__FILE__, __LINE__, "%s: OF pair of ovni_flush() #%zu missing", where,
				st.explicit_flush);
			i++;
		}
		if (i >= l->n) {
			tu_fail(__FILE__, __LINE__, "%s: unexpected event %.3s after the last one",
				where, g.mcv);
			return st;
		}
		if (cmp_event(&l->ev[i], &g, where, i) != 0)
			return st;
		st.matched++;
		i++;
	}
	CHECK(more == 0);
	for (; i < l->n && !allow_prefix; i++) {
		if (l->ev[i].flush && i + 1 == l->n)
			break; /* the pair of a last ovni_flush(): left out */
		if (l->ev[i].flush)
			tu_fail(__FILE__, __LINE__, "%s: the OF pair of the last ovni_flush() is missing",
				where);
		else
			tu_fail(__FILE__, __LINE__, "%s: event %zu (%.3s) missing", where, i,
				l->ev[i].mcv);
		break;
	}
	return st;
}

/* ---- Reader 1: the bytes on disk --------------------------------------- */

typedef struct raw_stream {
	uint8_t *buf;
	size_t size, pos;
	int truncated; /* the file ends inside an event */
} raw_stream;

/* Loads stream.obs and checks its 8-byte header: "ovni", u32 1. */
static inline int
raw_open(raw_stream *r, const char *streamdir)
{
	char path[4096];
	memset(r, 0, sizeof(*r));
	if (snprintf(path, sizeof(path), "%s/stream.obs", streamdir) >= (int) sizeof(path))
		return -1;
	r->buf = (uint8_t *) tu_read_file(path, &r->size);
	if (r->buf == NULL) {
		tu_fail(__FILE__, __LINE__, "cannot read %s: %s", path, strerror(errno));
		return -1;
	}
	uint32_t version;
	if (r->size < 8 || memcmp(r->buf, "ovni", 4) != 0) {
		tu_fail(__FILE__, __LINE__, "%s: no \"ovni\" magic", path);
		return -1;
	}
	memcpy(&version, r->buf + 4, 4);
	CHECK_EQ_U64(version, 1);
	r->pos = 8;
	return 0;
}

/* Parses the next event straight from the bytes: flags (high nibble 0 or
 * 0x10 jumbo, low nibble size code), MCV, u64 clock, payload, data. */
static inline int
raw_next(void *ctx, got_ev *g)
{
	raw_stream *r = ctx;
	if (r->pos == r->size)
		return 0;
	if (r->size - r->pos < 12) {
		r->truncated = 1;
		return 0;
	}
	const uint8_t *p = r->buf + r->pos;
	unsigned flags = p[0], code = flags & 0x0f;
	size_t psize = code ? code + 1 : 0;
	CHECK((flags & 0xe0) == 0);
	memset(g, 0, sizeof(*g));
	memcpy(g->mcv, p + 1, 3);
	memcpy(&g->clock, p + 4, 8);
	g->psize = (int) psize;
	g->payload = p + 12;
	size_t total = 12 + psize;
	if (flags & 0x10) {
		uint32_t dsize;
		CHECK_EQ_U64(psize, 4);
		if (r->size - r->pos < 16) {
			r->truncated = 1;
			return 0;
		}
		memcpy(&dsize, p + 12, 4);
		g->jumbo = 1;
		g->data = p + 16;
		g->dsize = dsize;
		total += dsize;
	}
	if (r->size - r->pos < total) {
		r->truncated = 1;
		return 0;
	}
	r->pos += total;
	return 1;
}

static inline void
raw_close(raw_stream *r)
{
	free(r->buf);
	memset(r, 0, sizeof(*r));
}

/* Checks one stream directory's bytes against the expected list. */
static inline cmp_stats
check_stream_raw(const exp_list *l, const char *streamdir, int allow_prefix)
{
	raw_stream r;
	cmp_stats st = { 0, 0, 0 };
	if (raw_open(&r, streamdir) != 0)
		return st;
	st = compare_stream(l, raw_next, &r, streamdir, allow_prefix);
	CHECK(!r.truncated);
	raw_close(&r);
	return st;
}

/* ---- Reader 2: the weft API ------------------------------------------ */

typedef struct weft_reader {
	weft_cursor *cur;
	int status;
} weft_reader;

static inline int
weft_next_ev(void *ctx, got_ev *g)
{
	weft_reader *r = ctx;
	const weft_event *ev;
	int rc = weft_cursor_next(r->cur, &ev);
	if (rc <= 0) {
		r->status = rc;
		if (rc < 0)
			tu_fail(__FILE__, __LINE__, "weft_cursor_next: %s", weft_last_error());
		return rc;
	}
	memset(g, 0, sizeof(*g));
	CHECK_EQ_U64(ev->code_len, 3);
	memcpy(g->mcv, ev->code, 3);
	g->clock = ev->time;
	g->psize = (int) ev->payload_size;
	g->payload = ev->payload;
	g->jumbo = (ev->flags & WEFT_EVENT_JUMBO) != 0;
	g->data = ev->data;
	g->dsize = ev->data_size;
	CHECK(ev->time == ev->end);
	CHECK((ev->flags & WEFT_EVENT_BIG_ENDIAN) == 0);
	return 1;
}

/* Opens the ovni trace at dir with the weft API (aborting the test when
 * it cannot be opened: nothing else can be checked then). */
static inline weft_trace *
weft_open_checked(const char *dir)
{
	weft_open_options opt;
	weft_trace *t = NULL;
	weft_open_options_init(&opt);
	opt.format = WEFT_FORMAT_OVNI;
	int rc = weft_trace_open(dir, &opt, &t);
	if (rc != 0)
		tu_fail(__FILE__, __LINE__, "weft_trace_open(%s): %s", dir, weft_last_error());
	REQUIRE(rc == 0 && t != NULL);
	CHECK_EQ_I64(weft_trace_format(t), WEFT_FORMAT_OVNI);
	CHECK_EQ_I64(weft_trace_layout_version(t), 3);
	return t;
}

/* "loom.<loom>/proc.<pid>/thread.<tid>", the stream path weft uses. */
static inline void
stream_rel(char *out, size_t n, const char *loom, int pid, int tid)
{
	if (snprintf(out, n, "loom.%s/proc.%d/thread.%d", loom, pid, tid) >= (int) n)
		out[0] = '\0';
}

/* <tracedir>/loom.<loom>/proc.<pid>/thread.<tid>, the stream directory. */
static inline void
stream_dir(char *out, size_t n, const char *tracedir, const char *loom, int pid, int tid)
{
	if (snprintf(out, n, "%s/loom.%s/proc.%d/thread.%d", tracedir, loom, pid, tid) >= (int) n)
		out[0] = '\0';
}

/* The decoded field called name of an event (weft_event_fields), or
 * returns 0 when there is none. */
static inline int
find_field(const weft_trace *t, const weft_event *ev, const char *name, weft_field *out)
{
	weft_field f[16];
	int n = weft_event_fields(t, ev, f, 16);
	for (int i = 0; i < n && i < 16; i++) {
		if (f[i].name_len == strlen(name) && memcmp(f[i].name, name, f[i].name_len) == 0) {
			*out = f[i];
			return 1;
		}
	}
	return 0;
}

/* Checks one stream through the weft API against the expected list, and
 * whether the stream is finished. Returns the stream index or -1. */
static inline int
check_stream_weft(weft_trace *t, const exp_list *l, const char *rel, int finished,
		  int allow_prefix, cmp_stats *out)
{
	int idx = weft_trace_stream_find(t, rel);
	if (idx < 0) {
		tu_fail(__FILE__, __LINE__, "weft: no stream %s", rel);
		return -1;
	}
	const weft_stream_info *si = weft_trace_stream(t, (size_t) idx);
	REQUIRE(si != NULL);
	CHECK_EQ_STR(si->path, rel);
	CHECK_EQ_I64(si->finished, finished);
	CHECK_EQ_I64(si->big_endian, 0);

	weft_reader r = { NULL, 0 };
	int rc = weft_cursor_create_stream(t, (uint32_t) idx, &r.cur);
	if (rc != 0) {
		tu_fail(__FILE__, __LINE__, "weft_cursor_create_stream(%s): %s", rel,
			weft_last_error());
		return -1;
	}
	cmp_stats st = compare_stream(l, weft_next_ev, &r, rel, allow_prefix);
	weft_cursor_free(r.cur);
	if (out)
		*out = st;
	return idx;
}

/* ---- stream.json ------------------------------------------------------- */

/* Parses <streamdir>/stream.json (test fails when it cannot). */
static inline json_t *
load_stream_json(const char *streamdir)
{
	char path[4096];
	json_error_t err;
	if (snprintf(path, sizeof(path), "%s/stream.json", streamdir) >= (int) sizeof(path))
		return NULL;
	json_t *j = json_load_file(path, 0, &err);
	if (j == NULL)
		tu_fail(__FILE__, __LINE__, "%s: %s (line %d)", path, err.text, err.line);
	return j;
}

/* Value at a dot-separated path, or NULL. */
static inline json_t *
jget(json_t *root, const char *dotpath)
{
	char key[256];
	const char *p = dotpath;
	json_t *v = root;
	while (v != NULL && *p) {
		const char *dot = strchr(p, '.');
		size_t n = dot ? (size_t) (dot - p) : strlen(p);
		if (n >= sizeof(key))
			return NULL;
		memcpy(key, p, n);
		key[n] = '\0';
		v = json_object_get(v, key);
		p = dot ? dot + 1 : p + n;
	}
	return v;
}

static inline long long
jint(json_t *root, const char *dotpath)
{
	json_t *v = jget(root, dotpath);
	if (!json_is_integer(v)) {
		tu_fail(__FILE__, __LINE__, "stream.json: %s is not an integer", dotpath);
		return -1;
	}
	return json_integer_value(v);
}

static inline const char *
jstr(json_t *root, const char *dotpath)
{
	json_t *v = jget(root, dotpath);
	if (!json_is_string(v)) {
		tu_fail(__FILE__, __LINE__, "stream.json: %s is not a string", dotpath);
		return "";
	}
	return json_string_value(v);
}

/* Sets OVNI_TRACEDIR to a fresh temporary directory (returned). */
static inline char *
fresh_tracedir(const char *name)
{
	char *dir = tu_mkdtemp(name);
	REQUIRE(dir != NULL);
	setenv("OVNI_TRACEDIR", dir, 1);
	unsetenv("OVNI_TMPDIR");
	return dir;
}

#endif /* WEFT_TEST_LIBOVNI_COMMON_H */
