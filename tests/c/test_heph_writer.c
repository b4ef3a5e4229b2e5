/* SPDX-License-Identifier: MIT */
/*
 * test_heph_writer.c - the Heph trace writer (weft/heph.h):
 *
 *   replay      every event of the reference traces re-emitted through the
 *               writer (flushed one by one) gives the same bytes
 *   files       <path>.tmp while writing, <path> after close; an abandoned
 *               writer leaves nothing; a crashed one leaves whole packets
 *   threads     4 threads x 10000 buffered events with big packets: every
 *               packet whole, each stream's counters 0..N-1, events intact
 *   errors      lengths that do not fit, misuse, NULL, after close
 *   counters    wrap from 0xFFFFFFFF to 0; continued across handles
 *   write fail  a write cut short by RLIMIT_FSIZE: the file ends with whole
 *               packets but one, close fails and does not rename
 *
 * The reference traces are parsed here by a small test-local parser, not
 * by weft's reader, so that each side is checked on its own.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"
#include "weft/weft.h"

#define EVENT_MAGIC 0xC1FC1FB7u
#define META_MAGIC 0x75D11D4Du
#define MAX_ATTRS 64

static char *dir; /* scratch directory */

/* ---- A test-local packet parser ------------------------------------------------ */

/* Big-endian loads. */
static uint16_t be16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint64_t be64(const uint8_t *p) { return (uint64_t)be32(p) << 32 | be32(p + 4); }

/* One attribute: name, type, and its value bytes (after the type byte). */
typedef struct attr {
	const uint8_t *name;
	uint16_t name_len;
	uint8_t type;
	const uint8_t *value;
	size_t value_size;
} attr;

/* One event packet, pointing into the file's bytes. */
typedef struct packet {
	uint32_t size, stream, counter;
	uint64_t substream, start, end;
	const uint8_t *desc;
	uint16_t desc_len;
	attr attrs[MAX_ATTRS];
	int nattrs;
} packet;

/* Bytes of a value of `type` at p (n bytes left), or 0 when malformed. */
static size_t value_size(uint8_t type, const uint8_t *p, size_t n)
{
	uint8_t base = type & 0x7f;
	if (base < 1 || base > 4)
		return 0;
	if (!(type & 0x80))
		return base == 4 ? (n >= 2 && 2u + be16(p) <= n ? 2u + be16(p) : 0) :
			(n >= 8 ? 8 : 0);
	if (n < 2)
		return 0;
	size_t off = 2;
	for (unsigned i = 0; i < be16(p); i++) {
		size_t e = value_size(base, p + off, n - off);
		if (e == 0)
			return 0;
		off += e;
	}
	return off;
}

/* Parses the attributes of a packet; 0, or -1 when they do not fill it exactly. */
static int parse_attrs(const uint8_t *p, size_t n, packet *pk)
{
	size_t off = 0;
	pk->nattrs = 0;
	while (off < n) {
		if (n - off < 3 || pk->nattrs == MAX_ATTRS)
			return -1;
		attr *a = &pk->attrs[pk->nattrs++];
		a->name_len = be16(p + off);
		if (n - off < 3u + a->name_len)
			return -1;
		a->name = p + off + 2;
		a->type = p[off + 2 + a->name_len];
		off += 3u + a->name_len;
		a->value = p + off;
		a->value_size = value_size(a->type, p + off, n - off);
		if (a->value_size == 0)
			return -1;
		off += a->value_size;
	}
	return 0;
}

/*
 * Parses the event packet at `off` of a file of `len` bytes. Returns its
 * size, 0 for an epoch metadata packet (*epoch set), or -1 when it is
 * not whole and well formed.
 */
static long parse_packet(const uint8_t *d, size_t len, size_t off, packet *pk,
			 uint64_t *epoch)
{
	if (len - off < 8)
		return -1;
	uint32_t magic = be32(d + off), size = be32(d + off + 4);
	if (size > len - off)
		return -1;
	const uint8_t *p = d + off;
	if (magic == META_MAGIC) {
		if (size != 23 || be16(p + 8) != 5 || memcmp(p + 10, "epoch", 5) != 0)
			return -1;
		*epoch = be64(p + 15);
		return 0;
	}
	if (magic != EVENT_MAGIC || size < 42)
		return -1;
	pk->size = size;
	pk->stream = be32(p + 8);
	pk->counter = be32(p + 12);
	pk->substream = be64(p + 16);
	pk->start = be64(p + 24);
	pk->end = be64(p + 32);
	pk->desc_len = be16(p + 40);
	pk->desc = p + 42;
	if (42u + pk->desc_len > size)
		return -1;
	return parse_attrs(p + 42 + pk->desc_len, size - 42 - pk->desc_len, pk) < 0 ? -1 : (long)size;
}

/* Path of a file in the scratch directory. */
static void scratch(char *out, size_t n, const char *name)
{
	snprintf(out, n, "%s/%s", dir, name);
}

/* Is there a file (or anything) at path? */
static int exists(const char *path)
{
	struct stat st;
	return lstat(path, &st) == 0;
}

/* ---- replay ----------------------------------------------------------------------- */

/* A NUL-terminated copy of an attribute name (names hold no NUL here). */
static const char *name_of(const attr *a, char *buf)
{
	memcpy(buf, a->name, a->name_len);
	buf[a->name_len] = '\0';
	return buf;
}

/* Re-emits a string array attribute: pointers and lengths of its elements. */
static int add_str_array(weft_heph_stream *s, const char *name, const attr *a)
{
	unsigned n = be16(a->value);
	const char **v = calloc(n + 1, sizeof *v);
	size_t *lens = calloc(n + 1, sizeof *lens);
	REQUIRE(v != NULL && lens != NULL);
	const uint8_t *p = a->value + 2;
	for (unsigned i = 0; i < n; i++) {
		lens[i] = be16(p);
		v[i] = (const char *)p + 2;
		p += 2 + lens[i];
	}
	int rc = weft_heph_event_add_str_array(s, name, v, lens, n);
	free(v);
	free(lens);
	return rc;
}

/* Re-emits a fixed-size array attribute (u64, i64 or f64 elements). */
static int add_array8(weft_heph_stream *s, const char *name, const attr *a)
{
	unsigned n = be16(a->value);
	uint64_t *u = calloc(n + 1, sizeof *u);
	REQUIRE(u != NULL);
	for (unsigned i = 0; i < n; i++)
		u[i] = be64(a->value + 2 + 8 * i);
	int rc;
	if ((a->type & 0x7f) == WEFT_HEPH_TYPE_U64) {
		rc = weft_heph_event_add_u64_array(s, name, u, n);
	} else if ((a->type & 0x7f) == WEFT_HEPH_TYPE_I64) {
		int64_t *v = calloc(n + 1, sizeof *v);
		REQUIRE(v != NULL);
		memcpy(v, u, n * sizeof *v);
		rc = weft_heph_event_add_i64_array(s, name, v, n);
		free(v);
	} else {
		double *v = calloc(n + 1, sizeof *v);
		REQUIRE(v != NULL);
		memcpy(v, u, n * sizeof *v);
		rc = weft_heph_event_add_f64_array(s, name, v, n);
		free(v);
	}
	free(u);
	return rc;
}

/* Re-emits one attribute with the call of its type. */
static int add_attr(weft_heph_stream *s, const attr *a)
{
	char name[65536];
	name_of(a, name);
	uint64_t u = a->value_size >= 8 ? be64(a->value) : 0;
	double f;
	memcpy(&f, &u, sizeof f);
	switch (a->type) {
	case WEFT_HEPH_TYPE_U64: return weft_heph_event_add_u64(s, name, u);
	case WEFT_HEPH_TYPE_I64: return weft_heph_event_add_i64(s, name, (int64_t)u);
	case WEFT_HEPH_TYPE_F64: return weft_heph_event_add_f64(s, name, f);
	case WEFT_HEPH_TYPE_STR:
		return weft_heph_event_add_str(s, name, (const char *)a->value + 2,
					       be16(a->value));
	case WEFT_HEPH_TYPE_STR | WEFT_HEPH_TYPE_ARRAY: return add_str_array(s, name, a);
	default: return add_array8(s, name, a);
	}
}

/* The handle of a stream id, created on first use (ids are small here). */
static weft_heph_stream *stream_for(weft_heph_writer *w, weft_heph_stream **handles,
				    uint32_t id)
{
	REQUIRE(id < 16);
	if (handles[id] == NULL)
		REQUIRE(weft_heph_stream_create(w, id, &handles[id]) == 0);
	return handles[id];
}

/* Re-emits one parsed event: begin, its attributes, end, flush. */
static void replay_event(weft_heph_stream *s, const packet *pk)
{
	CHECK_EQ_U64(weft_heph_stream_counter(s), pk->counter);
	CHECK(weft_heph_event_begin(s, pk->substream, pk->start, pk->end,
				    (const char *)pk->desc, pk->desc_len) == 0);
	for (int i = 0; i < pk->nattrs; i++)
		CHECK(add_attr(s, &pk->attrs[i]) == 0);
	CHECK(weft_heph_event_end(s) == 0);
	CHECK(weft_heph_stream_flush(s) == 0);
}

/*
 * Parses the reference trace `name`, writes each of its events through
 * the writer in file order, and compares the bytes.
 */
static void test_replay(const char *name)
{
	char ref_path[PATH_MAX], out[PATH_MAX];
	snprintf(ref_path, sizeof ref_path, "%s/heph/%s", getenv("WEFT_TEST_DATA"), name);
	scratch(out, sizeof out, name);
	size_t len;
	uint8_t *ref = (uint8_t *)tu_read_file(ref_path, &len);
	REQUIRE(ref != NULL);
	weft_heph_writer_options o = { 0 };
	packet pk;
	size_t off = 0;
	if (len >= 8 && be32(ref) == META_MAGIC) {
		REQUIRE(parse_packet(ref, len, 0, &pk, &o.epoch) == 0);
		o.has_epoch = 1;
		off = 23;
	}
	weft_heph_writer *w;
	REQUIRE(weft_heph_writer_create(out, &o, &w) == 0);
	weft_heph_stream *handles[16] = { 0 };
	int events = 0;
	while (off < len) {
		uint64_t epoch;
		long n = parse_packet(ref, len, off, &pk, &epoch);
		REQUIRE(n > 0); /* an event: metadata only comes first here */
		replay_event(stream_for(w, handles, pk.stream), &pk);
		off += (size_t)n;
		events++;
	}
	CHECK(weft_heph_writer_close(w) == 0);
	weft_heph_writer_free(w);
	size_t got_len;
	uint8_t *got = (uint8_t *)tu_read_file(out, &got_len);
	REQUIRE(got != NULL);
	CHECK_EQ_U64(got_len, len);
	CHECK_EQ_MEM(got, ref, got_len < len ? got_len : len);
	printf("replay %s: %d events, %zu bytes\n", name, events, len);
	free(got);
	free(ref);
}

/* ---- files ------------------------------------------------------------------------- */

/* <path>.tmp while running, <path> after close, nothing when abandoned. */
static void test_file_names(void)
{
	char path[PATH_MAX], tmp[PATH_MAX + 8];
	scratch(path, sizeof path, "names.bin.log");
	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	weft_heph_writer *w;
	weft_heph_stream *s;
	REQUIRE(weft_heph_writer_create(path, NULL, &w) == 0);
	CHECK_EQ_STR(weft_heph_writer_path(w), tmp);
	CHECK(exists(tmp) && !exists(path));
	REQUIRE(weft_heph_stream_create(w, 3, &s) == 0);
	CHECK(weft_heph_emit(s, 0, 1, 2, "one") == 0);
	CHECK(weft_heph_writer_close(w) == 0);
	CHECK_EQ_STR(weft_heph_writer_path(w), path);
	CHECK(!exists(tmp) && exists(path));
	weft_heph_stream_free(s); /* after close: allowed, fails nothing */
	weft_heph_writer_free(w);

	/* The trace exists: refused unless replace is set. */
	CHECK(weft_heph_writer_create(path, NULL, &w) == WEFT_EEXIST);
	CHECK(w == NULL && !exists(tmp));
	weft_heph_writer_options o = { .replace = 1, .sync = 1 };
	REQUIRE(weft_heph_writer_create(path, &o, &w) == 0);
	/* A second writer on the same path: the .tmp is taken. */
	weft_heph_writer *w2;
	CHECK(weft_heph_writer_create(path, &o, &w2) == WEFT_EEXIST);
	CHECK(strstr(weft_last_error(), ".tmp") != NULL);
	CHECK(weft_heph_writer_close(w) == 0);
	weft_heph_writer_free(w);
	size_t n;
	char *bytes = tu_read_file(path, &n);
	CHECK(bytes != NULL && n == 0); /* replaced by an empty trace */
	free(bytes);

	/* Abandoned: freed without close, with streams left attached. */
	char gone[PATH_MAX], gone_tmp[PATH_MAX + 8];
	scratch(gone, sizeof gone, "abandoned.bin.log");
	snprintf(gone_tmp, sizeof gone_tmp, "%s.tmp", gone);
	REQUIRE(weft_heph_writer_create(gone, NULL, &w) == 0);
	REQUIRE(weft_heph_stream_create(w, 1, &s) == 0);
	CHECK(weft_heph_emit(s, 0, 1, 2, "lost") == 0);
	CHECK(weft_heph_stream_flush(s) == 0);
	weft_heph_writer_free(w);
	CHECK(!exists(gone) && !exists(gone_tmp));
}

/*
 * A program that dies without closing: the .tmp file holds the flushed
 * packets, whole; the buffered ones are lost; <path> does not exist.
 */
static void test_crash(void)
{
	char path[PATH_MAX], tmp[PATH_MAX + 8];
	scratch(path, sizeof path, "crash.bin.log");
	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	fflush(NULL); /* the child must not print the parent's buffered output */
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		weft_heph_writer_options o = { .epoch = 7, .has_epoch = 1, .buffer_size = 1024 };
		weft_heph_writer *w;
		weft_heph_stream *s;
		if (weft_heph_writer_create(path, &o, &w) != 0 ||
		    weft_heph_stream_create(w, 1, &s) != 0)
			_exit(2);
		for (int i = 0; i < 1000; i++) /* several full buffers */
			weft_heph_emit(s, 0, (uint64_t)i, (uint64_t)i + 1, "before the crash");
		weft_heph_stream_flush(s);
		weft_heph_emit(s, 0, 5000, 5001, "buffered, lost");
		weft_heph_event_begin(s, 0, 6000, 6001, "in progress", WEFT_HEPH_CSTR);
		_exit(0);
	}
	int status;
	REQUIRE(waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	CHECK(!exists(path));
	size_t len;
	uint8_t *d = (uint8_t *)tu_read_file(tmp, &len);
	REQUIRE(d != NULL);
	size_t off = 0;
	uint32_t next = 0;
	packet pk;
	uint64_t epoch = 0;
	CHECK(parse_packet(d, len, 0, &pk, &epoch) == 0 && epoch == 7);
	for (off = 23; off < len;) {
		long n = parse_packet(d, len, off, &pk, &epoch);
		REQUIRE(n > 0);
		CHECK_EQ_U64(pk.counter, next);
		next++;
		off += (size_t)n;
	}
	CHECK_EQ_U64(next, 1000);
	free(d);
}

/* ---- threads ------------------------------------------------------------------------ */

#define THREADS 4
#define PER_THREAD 10000
#define BIG_STR 5000 /* larger than the threads' 4 KiB buffers */

static char big_str[BIG_STR]; /* filled before the threads start */

/* The description of event i of a thread (lengths vary). */
static int thread_desc(char *buf, size_t n, uint32_t stream, uint32_t i)
{
	return snprintf(buf, n, "stream %u event %u%.*s", stream, i, (int)(i % 23),
			"......................................");
}

/* Writes the events of one stream; returns non-NULL on failure. */
static void *thread_main(void *arg)
{
	weft_heph_stream *s = arg;
	uint32_t id = weft_heph_stream_id(s);
	uint64_t arr[20];
	for (uint32_t i = 0; i < PER_THREAD; i++) {
		char desc[128];
		int n = thread_desc(desc, sizeof desc, id, i);
		for (int k = 0; k < 20; k++)
			arr[k] = (uint64_t)id << 32 | (uint64_t)(i + (uint32_t)k);
		int rc = weft_heph_event_begin(s, id * 10u, i, i + 5u, desc, (size_t)n);
		weft_heph_event_add_u64(s, "i", i);
		weft_heph_event_add_i64(s, "neg", -(int64_t)i);
		if (i % 7 == 0)
			weft_heph_event_add_u64_array(s, "arr", arr, i % 20);
		if (i % 100 == 0)
			weft_heph_event_add_str(s, "big", big_str, sizeof big_str);
		if (rc != 0 || weft_heph_event_end(s) != 0)
			return s;
	}
	return NULL;
}

/* Checks the attributes of event i of stream `id` as thread_main wrote them. */
static void check_thread_attrs(const packet *pk, uint32_t id, uint32_t i)
{
	int want = 2 + (i % 7 == 0) + (i % 100 == 0);
	REQUIRE(pk->nattrs == want);
	CHECK(pk->attrs[0].type == WEFT_HEPH_TYPE_U64 && be64(pk->attrs[0].value) == i);
	CHECK(pk->attrs[1].type == WEFT_HEPH_TYPE_I64 &&
	      be64(pk->attrs[1].value) == (uint64_t)-(int64_t)i);
	int k = 2;
	if (i % 7 == 0) {
		const attr *a = &pk->attrs[k++];
		CHECK(a->type == (WEFT_HEPH_TYPE_U64 | WEFT_HEPH_TYPE_ARRAY));
		CHECK_EQ_U64(be16(a->value), i % 20);
		for (unsigned e = 0; e < i % 20; e++)
			CHECK_EQ_U64(be64(a->value + 2 + 8 * e), (uint64_t)id << 32 | (i + e));
	}
	if (i % 100 == 0) {
		const attr *a = &pk->attrs[k];
		CHECK(a->type == WEFT_HEPH_TYPE_STR && be16(a->value) == BIG_STR);
		CHECK(a->value[2] == 'x' && a->value[1 + BIG_STR] == 'x');
	}
}

/* Checks event packet `pk`, expected to be the next one of its stream. */
static void check_thread_event(const packet *pk, uint32_t *next)
{
	REQUIRE(pk->stream >= 1 && pk->stream <= THREADS);
	uint32_t id = pk->stream, i = next[id - 1]++;
	CHECK_EQ_U64(pk->counter, i);
	CHECK_EQ_U64(pk->substream, id * 10u);
	CHECK_EQ_U64(pk->start, i);
	CHECK_EQ_U64(pk->end, i + 5u);
	char desc[128];
	int n = thread_desc(desc, sizeof desc, id, i);
	CHECK_EQ_U64(pk->desc_len, (unsigned)n);
	if (pk->desc_len == (unsigned)n)
		CHECK_EQ_MEM(pk->desc, desc, (size_t)n);
	check_thread_attrs(pk, id, i);
}

/* Many threads, small buffers, no flush: every packet whole and in order. */
static void test_threads(void)
{
	char path[PATH_MAX];
	scratch(path, sizeof path, "threads.bin.log");
	weft_heph_writer_options o = { .epoch = 1, .has_epoch = 1, .buffer_size = 4096 };
	weft_heph_writer *w;
	REQUIRE(weft_heph_writer_create(path, &o, &w) == 0);
	memset(big_str, 'x', sizeof big_str);
	weft_heph_stream *s[THREADS];
	pthread_t th[THREADS];
	for (int t = 0; t < THREADS; t++) {
		REQUIRE(weft_heph_stream_create(w, (uint32_t)t + 1, &s[t]) == 0);
		REQUIRE(pthread_create(&th[t], NULL, thread_main, s[t]) == 0);
	}
	for (int t = 0; t < THREADS; t++) {
		void *ret;
		pthread_join(th[t], &ret);
		CHECK(ret == NULL);
	}
	CHECK(weft_heph_writer_close(w) == 0);
	weft_heph_writer_free(w); /* frees the stream handles too */
	size_t len;
	uint8_t *d = (uint8_t *)tu_read_file(path, &len);
	REQUIRE(d != NULL);
	uint32_t next[THREADS] = { 0 };
	static packet pk;
	uint64_t epoch;
	REQUIRE(parse_packet(d, len, 0, &pk, &epoch) == 0);
	for (size_t off = 23; off < len;) {
		long n = parse_packet(d, len, off, &pk, &epoch);
		REQUIRE(n > 0);
		check_thread_event(&pk, next);
		off += (size_t)n;
	}
	for (int t = 0; t < THREADS; t++)
		CHECK_EQ_U64(next[t], PER_THREAD);
	printf("threads: %d x %d events, %zu bytes\n", THREADS, PER_THREAD, len);
	free(d);
}

/* ---- errors ------------------------------------------------------------------------------ */

/* NULL handles and arguments: WEFT_EINVAL with a message, never a crash. */
static void test_null_args(void)
{
	weft_heph_writer *w = (weft_heph_writer *)1;
	weft_heph_stream *s = (weft_heph_stream *)1;
	CHECK(weft_heph_writer_create(NULL, NULL, &w) == WEFT_EINVAL && w == NULL);
	CHECK(weft_last_error()[0] != '\0');
	CHECK(weft_heph_writer_create("", NULL, &w) == WEFT_EINVAL);
	CHECK(weft_heph_writer_create("x", NULL, NULL) == WEFT_EINVAL);
	CHECK(weft_heph_writer_close(NULL) == WEFT_EINVAL);
	CHECK(weft_heph_stream_create(NULL, 0, &s) == WEFT_EINVAL && s == NULL);
	CHECK(weft_heph_stream_flush(NULL) == WEFT_EINVAL);
	CHECK(weft_heph_stream_set_counter(NULL, 1) == WEFT_EINVAL);
	CHECK(weft_heph_event_begin(NULL, 0, 0, 0, "x", 1) == WEFT_EINVAL);
	CHECK(weft_heph_event_add_u64(NULL, "x", 1) == WEFT_EINVAL);
	CHECK(weft_heph_event_add_str(NULL, "x", "y", 1) == WEFT_EINVAL);
	CHECK(weft_heph_event_add_str_array(NULL, "x", NULL, NULL, 0) == WEFT_EINVAL);
	CHECK(weft_heph_event_add_f64_array(NULL, "x", NULL, 0) == WEFT_EINVAL);
	CHECK(weft_heph_event_end(NULL) == WEFT_EINVAL);
	CHECK(weft_heph_emit(NULL, 0, 0, 0, "x") == WEFT_EINVAL);
	CHECK(weft_heph_writer_path(NULL) == NULL);
	weft_heph_event_cancel(NULL);
	weft_heph_stream_free(NULL);
	weft_heph_writer_free(NULL);

	char path[PATH_MAX];
	scratch(path, sizeof path, "null.bin.log");
	REQUIRE(weft_heph_writer_create(path, NULL, &w) == 0);
	REQUIRE(weft_heph_stream_create(w, 0, &s) == 0);
	CHECK(weft_heph_stream_create(w, 0, NULL) == WEFT_EINVAL);
	CHECK(weft_heph_event_begin(s, 0, 0, 0, NULL, 3) == WEFT_EINVAL);
	CHECK(weft_heph_event_end(s) == WEFT_EINVAL);
	CHECK(weft_heph_event_begin(s, 0, 0, 0, "d", 1) == 0);
	CHECK(weft_heph_event_add_u64(s, NULL, 1) == WEFT_EINVAL);
	CHECK(weft_heph_event_end(s) == WEFT_EINVAL);
	CHECK(weft_heph_event_begin(s, 0, 0, 0, "d", 1) == 0);
	CHECK(weft_heph_event_add_str(s, "s", NULL, 2) == WEFT_EINVAL);
	CHECK(weft_heph_event_end(s) == WEFT_EINVAL);
	CHECK(weft_heph_event_begin(s, 0, 0, 0, "d", 1) == 0);
	CHECK(weft_heph_event_add_u64_array(s, "a", NULL, 2) == WEFT_EINVAL);
	CHECK(weft_heph_event_end(s) == WEFT_EINVAL);
	/* NULL with no bytes is an empty value. */
	CHECK(weft_heph_event_begin(s, 0, 0, 0, NULL, 0) == 0);
	CHECK(weft_heph_event_add_str(s, "s", NULL, 0) == 0);
	CHECK(weft_heph_event_add_u64_array(s, "a", NULL, 0) == 0);
	CHECK(weft_heph_event_end(s) == 0);
	CHECK_EQ_U64(weft_heph_stream_counter(s), 1);
	CHECK(weft_heph_writer_close(w) == 0);
	weft_heph_writer_free(w);
}

/*
 * Writes one event whose part `what` has `len` bytes or elements; returns
 * the status of the call that adds it, and checks that end then refuses
 * the event with the same status (the counter does not move).
 */
static int oversized(weft_heph_stream *s, const char *what, size_t len)
{
	static char bytes[70000];
	static uint64_t u[70000];
	static const char *strs[70000];
	memset(bytes, 'b', sizeof bytes);
	bytes[len < sizeof bytes ? len : sizeof bytes - 1] = '\0';
	for (size_t i = 0; i < 70000; i++)
		strs[i] = "s";
	uint32_t counter = weft_heph_stream_counter(s);
	int rc = strcmp(what, "desc") == 0 ?
		weft_heph_event_begin(s, 0, 0, 0, bytes, len) :
		weft_heph_event_begin(s, 0, 0, 0, "ok", 2);
	if (strcmp(what, "name") == 0)
		rc = weft_heph_event_add_u64(s, bytes, 1);
	else if (strcmp(what, "str") == 0)
		rc = weft_heph_event_add_str(s, "n", bytes, len);
	else if (strcmp(what, "u64 array") == 0)
		rc = weft_heph_event_add_u64_array(s, "n", u, len);
	else if (strcmp(what, "str array") == 0)
		rc = weft_heph_event_add_str_array(s, "n", strs, NULL, len);
	else if (strcmp(what, "str element") == 0)
		rc = weft_heph_event_add_str_array(s, "n", (const char *const[]){ "a", bytes },
						   NULL, 2);
	int again = weft_heph_event_add_u64(s, "later", 1); /* ignored */
	int end = weft_heph_event_end(s);
	if (rc < 0) {
		CHECK(again == rc);
		CHECK(end == rc);
		CHECK_EQ_U64(weft_heph_stream_counter(s), counter);
	} else {
		CHECK(end == 0);
	}
	return rc;
}

/* Lengths that do not fit 16 bits are refused, and only those. */
static void test_lengths(void)
{
	char path[PATH_MAX];
	scratch(path, sizeof path, "lengths.bin.log");
	weft_heph_writer *w;
	weft_heph_stream *s;
	weft_heph_writer_options o = { .buffer_size = 1000 }; /* big packets grow it */
	REQUIRE(weft_heph_writer_create(path, &o, &w) == 0);
	REQUIRE(weft_heph_stream_create(w, 9, &s) == 0);
	const char *what[] = { "desc", "name", "str", "u64 array", "str array", "str element" };
	for (size_t k = 0; k < sizeof what / sizeof *what; k++) {
		CHECK(oversized(s, what[k], 65536) == WEFT_EINVAL);
		CHECK(strstr(weft_last_error(), "16 bits") != NULL);
		CHECK(oversized(s, what[k], 65535) == 0);
	}
	CHECK(weft_heph_writer_close(w) == 0);
	weft_heph_writer_free(w);
	/* Only the accepted events are in the file, whole, counters 0..5. */
	size_t len;
	uint8_t *d = (uint8_t *)tu_read_file(path, &len);
	REQUIRE(d != NULL);
	static packet pk;
	uint64_t epoch;
	uint32_t n = 0;
	for (size_t off = 0; off < len; n++) {
		long sz = parse_packet(d, len, off, &pk, &epoch);
		REQUIRE(sz > 0);
		CHECK_EQ_U64(pk.counter, n);
		off += (size_t)sz;
	}
	CHECK_EQ_U64(n, 6);
	free(d);
}

/* Calls in the wrong order, duplicate ids, and everything after close. */
static void test_misuse(void)
{
	char path[PATH_MAX];
	scratch(path, sizeof path, "misuse.bin.log");
	weft_heph_writer *w;
	weft_heph_stream *s, *s2;
	weft_heph_writer_options big = { .buffer_size = (size_t)1 << 31 };
	CHECK(weft_heph_writer_create(path, &big, &w) == WEFT_EINVAL);
	REQUIRE(weft_heph_writer_create(path, NULL, &w) == 0);
	REQUIRE(weft_heph_stream_create(w, 5, &s) == 0);
	CHECK(weft_heph_stream_create(w, 5, &s2) == WEFT_EINVAL && s2 == NULL);
	CHECK(weft_heph_event_add_u64(s, "x", 1) == WEFT_EINVAL);   /* no begin */
	CHECK(weft_heph_event_end(s) == WEFT_EINVAL);
	CHECK(weft_heph_event_begin(s, 0, 0, 0, "a", 1) == 0);
	CHECK(weft_heph_stream_set_counter(s, 9) == WEFT_EINVAL);   /* during an event */
	CHECK(weft_heph_stream_flush(s) == 0);                      /* allowed */
	CHECK(weft_heph_event_begin(s, 0, 0, 0, "b", 1) == WEFT_EINVAL); /* no end */
	CHECK(weft_heph_event_end(s) == WEFT_EINVAL);               /* both refused */
	CHECK(weft_heph_event_begin(s, 0, 0, 0, "c", 1) == 0);
	weft_heph_event_cancel(s);
	CHECK(weft_heph_emit(s, 0, 0, 0, "kept") == 0);
	CHECK_EQ_U64(weft_heph_stream_counter(s), 1);
	CHECK(weft_heph_event_begin(s, 0, 0, 0, "dropped at close", WEFT_HEPH_CSTR) == 0);
	CHECK(weft_heph_writer_close(w) == 0);
	/* After close: every call fails, with a message that says why. */
	CHECK(weft_heph_emit(s, 0, 0, 0, "late") == WEFT_EINVAL);
	CHECK(strstr(weft_last_error(), "closed") != NULL);
	CHECK(weft_heph_event_begin(s, 0, 0, 0, "late", 4) == WEFT_EINVAL);
	CHECK(weft_heph_event_add_u64(s, "x", 1) == WEFT_EINVAL);
	CHECK(weft_heph_event_end(s) == WEFT_EINVAL);
	CHECK(weft_heph_stream_flush(s) == WEFT_EINVAL);
	CHECK(weft_heph_stream_create(w, 6, &s2) == WEFT_EINVAL);
	CHECK(weft_heph_writer_close(w) == WEFT_EINVAL);
	weft_heph_writer_free(w);
	size_t len;
	uint8_t *d = (uint8_t *)tu_read_file(path, &len);
	REQUIRE(d != NULL);
	static packet pk;
	uint64_t epoch;
	CHECK_EQ_U64(len, 42 + 4);
	CHECK(parse_packet(d, len, 0, &pk, &epoch) == (long)len &&
	      memcmp(pk.desc, "kept", 4) == 0);
	free(d);
}

/* ---- counters ------------------------------------------------------------------------------ */

/* The counter wraps from 0xFFFFFFFF to 0, and continues across handles. */
static void test_counters(void)
{
	char path[PATH_MAX];
	scratch(path, sizeof path, "wrap.bin.log");
	weft_heph_writer *w;
	weft_heph_stream *s;
	REQUIRE(weft_heph_writer_create(path, NULL, &w) == 0);
	REQUIRE(weft_heph_stream_create(w, 2, &s) == 0);
	CHECK(weft_heph_stream_set_counter(s, 0xFFFFFFFEu) == 0);
	for (int i = 0; i < 3; i++)
		CHECK(weft_heph_emit(s, 0, 0, 0, "w") == 0);
	weft_heph_stream_free(s); /* stops at 1 */
	REQUIRE(weft_heph_stream_create(w, 2, &s) == 0);
	CHECK_EQ_U64(weft_heph_stream_counter(s), 1);
	CHECK(weft_heph_emit(s, 0, 0, 0, "w") == 0);
	CHECK(weft_heph_writer_close(w) == 0);
	weft_heph_writer_free(w);
	size_t len;
	uint8_t *d = (uint8_t *)tu_read_file(path, &len);
	REQUIRE(d != NULL && len == 4 * 43);
	const uint32_t want[] = { 0xFFFFFFFEu, 0xFFFFFFFFu, 0, 1 };
	for (int i = 0; i < 4; i++)
		CHECK_EQ_U64(be32(d + 43 * i + 12), want[i]);
	free(d);
}

/* ---- write failure ------------------------------------------------------------------------- */

/*
 * In a child limited to 10000-byte files: the write that crosses the
 * limit is cut short, the next one fails (EFBIG). The file then ends with
 * at most one partial packet; every call that writes afterwards fails;
 * close fails and leaves the .tmp file.
 */
static void write_fail_child(const char *path, const char *tmp)
{
	struct rlimit rl = { 10000, 10000 };
	signal(SIGXFSZ, SIG_IGN);
	REQUIRE(setrlimit(RLIMIT_FSIZE, &rl) == 0);
	weft_heph_writer_options o = { .buffer_size = 4096 };
	weft_heph_writer *w;
	weft_heph_stream *s;
	REQUIRE(weft_heph_writer_create(path, &o, &w) == 0);
	REQUIRE(weft_heph_stream_create(w, 1, &s) == 0);
	int failed = 0;
	for (int i = 0; i < 1000 && !failed; i++)
		failed = weft_heph_emit(s, 0, 0, 0, "fill the file up to its limit") < 0;
	CHECK(failed);
	CHECK(weft_heph_stream_flush(s) == WEFT_EIO);
	CHECK(weft_heph_writer_close(w) == WEFT_EIO);
	CHECK(strstr(weft_last_error(), "cannot write") != NULL);
	weft_heph_writer_free(w);
	CHECK(exists(tmp) && !exists(path));
	exit(tu_failures ? 1 : 0);
}

/* Runs write_fail_child() and checks what it left on disk. */
static void test_write_failure(void)
{
	char path[PATH_MAX], tmp[PATH_MAX + 8];
	scratch(path, sizeof path, "full.bin.log");
	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	fflush(NULL); /* the child must not print the parent's buffered output */
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0)
		write_fail_child(path, tmp);
	int status;
	REQUIRE(waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	size_t len;
	uint8_t *d = (uint8_t *)tu_read_file(tmp, &len);
	REQUIRE(d != NULL);
	CHECK_EQ_U64(len, 10000);
	size_t off = 0;
	static packet pk;
	uint64_t epoch;
	long n;
	while ((n = parse_packet(d, len, off, &pk, &epoch)) > 0)
		off += (size_t)n;
	CHECK(len - off < 71); /* whole packets, then part of one at most */
	free(d);
}

/* Every case in one scratch directory, removed when all pass. */
int main(void)
{
	REQUIRE(getenv("WEFT_TEST_DATA") != NULL);
	dir = tu_mkdtemp("weft-heph-writer");
	REQUIRE(dir != NULL);
	test_replay("heph_sample.bin.log");
	test_replay("heph_sample_compat.bin.log");
	test_replay("edge_no_epoch.bin.log");
	test_replay("edge_epoch_only.bin.log");
	test_file_names();
	test_crash();
	test_threads();
	test_null_args();
	test_lengths();
	test_misuse();
	test_counters();
	test_write_failure();
	return tu_finish_dir(dir);
}
