/* SPDX-License-Identifier: MIT */
/*
 * test_metafs.c - a trace opened by rank 0 for every rank (core/metafs.c):
 *   - rank 1, opening from rank 0's metadata tape, builds the trace the
 *     serial open builds (streams, sizes, byte order, clock offsets,
 *     nodes and their merged metadata, diagnostics), on ovni layouts 1, 2
 *     and 3, a stream file alone, marks, a clock offset table, and Pallas
 *     traces (a directory, its main file);
 *   - rank 1 opening a path whose metadata files are gone still builds it:
 *     it replays them;
 *   - two ranks on two threads: rank 1's book of the looms (its walk,
 *     sizes, headers and stream.json) or of the Pallas archives (their
 *     files, their threads' sizes) answers rank 0, which opens a copy
 *     without them and builds the serial trace;
 *   - a format that reads its own files (Heph) is opened by each rank;
 *   - a thread's copy of a trace (weft__trace_reopen) replays the open's
 *     kept tape, and checks the files of its own streams;
 *   - a tape that does not match the questions, ends early, or holds
 *     garbage (huge counts and lengths) fails the replay with a message,
 *     never a crash or an allocation of what the bytes claim.
 * Rank 0's broadcasts are recorded and played back to a "rank 1" in the
 * same process (tests/mpi/ runs real ranks).
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/internal.h"
#include "testutil.h"
#include "weft/weft.h"

/* What rank 0 broadcast, in order, for "rank 1" to receive. */
typedef struct bcast_log {
	weft__pack bytes;  /* every broadcast, one after the other */
	size_t played;     /* rank 1: bytes handed out so far */
} bcast_log;

/* Rank 0: the other rank's report is a copy of its own. */
static int gather_as_root(void *user, const void *bytes, size_t len, void **all,
			  size_t *lens)
{
	(void)user;
	*all = malloc(2 * len + 1);
	REQUIRE(*all != NULL);
	memcpy(*all, bytes, len);
	memcpy((char *)*all + len, bytes, len);
	lens[0] = lens[1] = len;
	return 0;
}

static int record_broadcast(void *user, void *bytes, size_t len)
{
	weft__pack_raw(&((bcast_log *)user)->bytes, bytes, len);
	return 0;
}

/* Rank 1: gives its report to no one. */
static int gather_as_other(void *user, const void *bytes, size_t len, void **all,
			   size_t *lens)
{
	(void)user, (void)bytes, (void)len, (void)lens;
	*all = NULL;
	return 0;
}

static int play_broadcast(void *user, void *bytes, size_t len)
{
	bcast_log *log = user;
	REQUIRE(log->played + len <= log->bytes.len);
	memcpy(bytes, log->bytes.data + log->played, len);
	log->played += len;
	return 0;
}

static weft_trace *open_with(const char *path, const weft_dist *dist, const char *offsets)
{
	weft_open_options o;
	weft_open_options_init(&o);
	o.dist = dist;
	if (offsets != NULL)
		REQUIRE(weft_open_options_set(&o, "ovni.clock_offsets", offsets) == 0);
	weft_trace *t = NULL;
	int rc = weft_trace_open(path, &o, &t);
	if (rc < 0)
		fprintf(stderr, "open %s: %s\n", path, weft_last_error());
	REQUIRE(rc == 0 && t != NULL);
	return t;
}

/* Everything the open built, alike in both. */
static void check_same_trace(const weft_trace *a, const weft_trace *b)
{
	CHECK_EQ_U64(weft_trace_format(a), weft_trace_format(b));
	CHECK_EQ_U64(weft_trace_layout_version(a), weft_trace_layout_version(b));
	REQUIRE(weft_trace_stream_count(a) == weft_trace_stream_count(b));
	for (size_t i = 0; i < weft_trace_stream_count(a); i++) {
		const weft_stream_info *x = weft_trace_stream(a, i), *y = weft_trace_stream(b, i);
		CHECK_EQ_STR(x->path, y->path);
		CHECK_EQ_STR(x->file, y->file);
		CHECK_EQ_U64(x->file_size, y->file_size);
		CHECK_EQ_U64(x->node, y->node);
		CHECK_EQ_I64(x->finished, y->finished);
		CHECK_EQ_I64(x->big_endian, y->big_endian);
		CHECK_EQ_I64(x->clock_offset, y->clock_offset);
	}
	REQUIRE(weft_trace_node_count(a) == weft_trace_node_count(b));
	for (size_t i = 0; i < weft_trace_node_count(a); i++) {
		const weft_node *x = weft_trace_node(a, i), *y = weft_trace_node(b, i);
		CHECK_EQ_STR(x->path, y->path);
		CHECK_EQ_STR(x->kind, y->kind);
		CHECK_EQ_I64(x->number, y->number);
		CHECK_EQ_STR(x->metadata_json, y->metadata_json);
	}
	REQUIRE(weft_trace_diag_count(a) == weft_trace_diag_count(b));
	for (size_t i = 0; i < weft_trace_diag_count(a); i++)
		CHECK_EQ_STR(weft_trace_diag(a, i)->message, weft_trace_diag(b, i)->message);
}

/*
 * Opens `path` serially, as rank 0 of 2 (recording its broadcasts) and as
 * rank 1 at `other_path` (playing them back); the three must agree. 1
 * when rank 0 sent a tape (the verdict said: replay).
 */
static int check_replay(const char *path, const char *other_path, const char *offsets)
{
	bcast_log log = { 0 };
	weft_dist root = { .rank = 0, .ranks = 2, .gather = gather_as_root,
			   .broadcast = record_broadcast, .user = &log };
	weft_dist other = { .rank = 1, .ranks = 2, .gather = gather_as_other,
			    .broadcast = play_broadcast, .user = &log };
	weft_trace *serial = open_with(path, NULL, offsets);
	weft_trace *zero = open_with(path, &root, offsets);
	weft_trace *one = open_with(other_path, &other, offsets);
	CHECK_EQ_U64(log.played, log.bytes.len); /* every broadcast received */
	check_same_trace(serial, zero);
	check_same_trace(serial, one);
	/* The two ranks read every stream between them, each once. */
	for (size_t i = 0; i < weft_trace_stream_count(serial); i++)
		CHECK(weft__dist_selected(zero)[i] + weft__dist_selected(one)[i] == 1);
	/* The first message: its length, then BEGIN, the format, replayable. */
	uint64_t first[4] = { 0 };
	REQUIRE(log.bytes.len >= sizeof first);
	memcpy(first, log.bytes.data, sizeof first);
	CHECK_EQ_U64(first[1], 1);
	weft_trace_free(serial);
	weft_trace_free(zero);
	weft_trace_free(one);
	weft__pack_release(&log.bytes);
	return first[3] == 1;
}

/* Runs a shell command made like printf's; the test stops if it fails. */
static void shell(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void shell(const char *fmt, ...)
{
	char cmd[16384];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(cmd, sizeof cmd, fmt, ap);
	va_end(ap);
	REQUIRE(n > 0 && (size_t)n < sizeof cmd);
	REQUIRE(system(cmd) == 0);
}

/* A copy of test trace `rel` as `dir`/`name`, its path in `out`. */
static void copy_trace(const char *rel, const char *dir, const char *name, char *out,
		       size_t cap)
{
	snprintf(out, cap, "%s/%s", dir, name);
	shell("cp -r %s %s", tu_data_path(rel), out);
}

static void test_replays(void)
{
	static const char *const traces[] = {
		"ovni/v3/mpi-func-4procs/ovni",
		"ovni/v3/ovni-mark-4procs/ovni",
		"ovni/v3/nosv-parallel-tasks/ovni",
		"ovni/v2/1.10.0/ovni",
		"ovni/v1/1.4.1/ovni",
		"pallas/weft_order/trace",
		"pallas/wb_generic_f2_n20_t4_logical/trace",
		"pallas/weft_order/trace/main.pallas",
	};
	for (size_t i = 0; i < sizeof traces / sizeof traces[0]; i++) {
		char *path = strdup(tu_data_path(traces[i]));
		REQUIRE(path != NULL);
		CHECK(check_replay(path, path, NULL));
		free(path);
	}
	/* One stream file alone. */
	char *dir = tu_mkdtemp("metafs");
	REQUIRE(dir != NULL);
	char obs[4200];
	shell("set -- %s/loom.*/proc.*/thread.*/stream.obs && cp \"$1\" %s/one.obs",
	      tu_data_path("ovni/v3/mpi-func-4procs/ovni"), dir);
	snprintf(obs, sizeof obs, "%s/one.obs", dir);
	CHECK(check_replay(obs, obs, NULL));
	/* A clock offset table (ovnisync's): the offsets reach rank 1. */
	char table[4200];
	snprintf(table, sizeof table, "%s/clock-offsets.txt", dir);
	FILE *f = fopen(table, "w");
	REQUIRE(f != NULL);
	fputs("rank hostname offset_median offset_mean offset_std\n"
	      "0 hop 0 0 0\n1 hop 1234 1234 0\nnot a row\n", f);
	fclose(f);
	CHECK(check_replay(tu_data_path("ovni/v3/mpi-func-4procs/ovni"),
			   tu_data_path("ovni/v3/mpi-func-4procs/ovni"), table));
	/* Heph reads its own file: every rank opens it. */
	CHECK(!check_replay(tu_data_path("heph/heph_sample.bin.log"),
			    tu_data_path("heph/heph_sample.bin.log"), NULL));
	tu_finish_dir(dir);
}

/*
 * Rank 1 opens a copy with the data files alone (no stream.json): it
 * builds rank 0's trace all the same, from the tape. (Its book of the
 * looms, see test_books, goes nowhere here: this rank 0 opened first.)
 */
static void test_other_rank_reads_no_metadata(void)
{
	char *dir = tu_mkdtemp("metafs-bare");
	REQUIRE(dir != NULL);
	char copy[4200];
	copy_trace("ovni/v3/mpi-func-4procs/ovni", dir, "ovni", copy, sizeof copy);
	shell("find %s -name stream.json -delete", copy);
	char *path = strdup(tu_data_path("ovni/v3/mpi-func-4procs/ovni"));
	REQUIRE(path != NULL);
	CHECK(check_replay(path, copy, NULL));
	free(path);
	/* Pallas: a copy with the thread directories alone (no main or
	 * archive file, whose definitions the open reads). */
	char pcopy[4200];
	copy_trace("pallas/weft_order/trace", dir, "pallas", pcopy, sizeof pcopy);
	shell("rm %s/main.pallas %s/archive_*/archive.pallas", pcopy, pcopy);
	path = strdup(tu_data_path("pallas/weft_order/trace"));
	REQUIRE(path != NULL);
	CHECK(check_replay(path, pcopy, NULL));
	free(path);
	tu_finish_dir(dir);
}

/* ---- Two ranks on two threads: books ------------------------------------- */

/*
 * A dist of two ranks on two threads of this process: rank 0's
 * broadcasts go to rank 1 in order, rank 1's gathered bytes to rank 0.
 */
typedef struct duo {
	pthread_mutex_t lock;
	pthread_cond_t changed;
	weft__pack sent;      /* every broadcast of rank 0 */
	size_t taken;         /* rank 1: bytes received so far */
	weft__pack given;     /* rank 1's bytes of the current gather */
	int given_ready;
} duo;

static int duo_broadcast(void *user, void *bytes, size_t len, int rank)
{
	duo *d = user;
	pthread_mutex_lock(&d->lock);
	if (rank == 0) {
		weft__pack_raw(&d->sent, bytes, len);
		pthread_cond_broadcast(&d->changed);
	} else {
		while (d->sent.len - d->taken < len)
			pthread_cond_wait(&d->changed, &d->lock);
		memcpy(bytes, d->sent.data + d->taken, len);
		d->taken += len;
	}
	pthread_mutex_unlock(&d->lock);
	return 0;
}

static int duo_gather(void *user, const void *bytes, size_t len, void **all, size_t *lens,
		      int rank)
{
	duo *d = user;
	pthread_mutex_lock(&d->lock);
	*all = NULL;
	if (rank == 1) {
		while (d->given_ready)
			pthread_cond_wait(&d->changed, &d->lock);
		d->given.len = 0;
		weft__pack_raw(&d->given, bytes, len);
		d->given_ready = 1;
		pthread_cond_broadcast(&d->changed);
	} else {
		while (!d->given_ready)
			pthread_cond_wait(&d->changed, &d->lock);
		*all = malloc(len + d->given.len + 1);
		REQUIRE(*all != NULL);
		memcpy(*all, bytes, len);
		memcpy((char *)*all + len, d->given.data, d->given.len);
		lens[0] = len;
		lens[1] = d->given.len;
		d->given_ready = 0;
		pthread_cond_broadcast(&d->changed);
	}
	pthread_mutex_unlock(&d->lock);
	return 0;
}

static int bcast0(void *u, void *b, size_t n) { return duo_broadcast(u, b, n, 0); }
static int bcast1(void *u, void *b, size_t n) { return duo_broadcast(u, b, n, 1); }
static int gather0(void *u, const void *b, size_t n, void **a, size_t *l)
{
	return duo_gather(u, b, n, a, l, 0);
}
static int gather1(void *u, const void *b, size_t n, void **a, size_t *l)
{
	return duo_gather(u, b, n, a, l, 1);
}

typedef struct rank_open {
	const char *path;
	weft_dist dist;
	weft_trace *trace;
} rank_open;

static void *open_rank(void *arg)
{
	rank_open *r = arg;
	r->trace = open_with(r->path, &r->dist, NULL);
	return NULL;
}

/*
 * Rank 0 opens `bare` (without stream.json) and rank 1 `full`, at once:
 * rank 0 takes its streams' metadata from rank 1's book and builds the
 * serial trace of `full`; so does rank 1, from the tape.
 */
static void check_books(const char *full, const char *bare)
{
	duo d = { .given_ready = 0 };
	pthread_mutex_init(&d.lock, NULL);
	pthread_cond_init(&d.changed, NULL);
	rank_open r0 = { bare, { 0, 2, gather0, bcast0, &d }, NULL };
	rank_open r1 = { full, { 1, 2, gather1, bcast1, &d }, NULL };
	pthread_t t0, t1;
	REQUIRE(pthread_create(&t0, NULL, open_rank, &r0) == 0);
	REQUIRE(pthread_create(&t1, NULL, open_rank, &r1) == 0);
	pthread_join(t0, NULL);
	pthread_join(t1, NULL);
	weft_trace *serial = open_with(full, NULL, NULL);
	weft_trace *alone = open_with(bare, NULL, NULL);
	/* the copy alone is another trace (streams without metadata) */
	CHECK(weft_trace_diag_count(alone) != weft_trace_diag_count(serial));
	check_same_trace(serial, r0.trace);
	check_same_trace(serial, r1.trace);
	CHECK_EQ_U64(d.taken, d.sent.len);
	weft_trace_free(serial);
	weft_trace_free(alone);
	weft_trace_free(r0.trace);
	weft_trace_free(r1.trace);
	weft__pack_release(&d.sent);
	weft__pack_release(&d.given);
	pthread_cond_destroy(&d.changed);
	pthread_mutex_destroy(&d.lock);
}

static void test_books(void)
{
	char *dir = tu_mkdtemp("metafs-books");
	REQUIRE(dir != NULL);
	/* Rank 0's copy lacks what the others read: ovni's stream.json
	 * files, Pallas's archive files. */
	static const char *const cases[] = {
		"ovni/v3/mpi-func-4procs/ovni",
		"ovni/v3/ovni-mark-4procs/ovni",
		"pallas/weft_order/trace",
		"pallas/wb_generic_f2_n20_t4_logical/trace",
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char copy[4200], name[16];
		snprintf(name, sizeof name, "bare%zu", i);
		copy_trace(cases[i], dir, name, copy, sizeof copy);
		if (strncmp(cases[i], "ovni", 4) == 0)
			shell("find %s -name stream.json -delete", copy);
		else
			shell("rm %s/archive_*/archive.pallas", copy);
		char *full = strdup(tu_data_path(cases[i]));
		REQUIRE(full != NULL);
		check_books(full, copy);
		free(full);
	}
	tu_finish_dir(dir);
}

/*
 * A thread's copy of the trace comes from the open's tape: the same trace
 * again, without the metadata files (gone by then here); a stream of the
 * thread's whose file changed since the open fails its copy, in the
 * thread's words, and one of another thread's does not.
 */
static void test_threads_replay(void)
{
	char *dir = tu_mkdtemp("metafs-threads");
	REQUIRE(dir != NULL);
	char copy[4200];
	copy_trace("ovni/v3/mpi-func-4procs/ovni", dir, "ovni", copy, sizeof copy);
	/* Kept for a trace that is read on threads (here: asked), not else. */
	weft_open_options o;
	weft_open_options_init(&o);
	o.threads = 1;
	weft_trace *t = NULL, *again = NULL;
	REQUIRE(weft_trace_open(copy, &o, &t) == 0);
	CHECK(t->open_tape == NULL);
	weft_trace_free(t);
	o.threads = 2;
	REQUIRE(weft_trace_open(copy, &o, &t) == 0);
	CHECK(t->open_tape != NULL);
	shell("find %s -name stream.json -delete", copy);
	REQUIRE(weft__trace_reopen(t, 1, &again) == 0);
	check_same_trace(t, again);
	weft_trace_free(again);
	/* Stream 1's file loses its last 16 bytes. */
	const weft_stream_info *s = weft_trace_stream(t, 1);
	shell("truncate -s %llu %s/%s", (unsigned long long)s->file_size - 16, copy, s->file);
	uint8_t mine[64] = { 0 }, others[64] = { 0 };
	REQUIRE(weft_trace_stream_count(t) <= sizeof mine);
	mine[1] = 1;
	others[0] = 1;
	CHECK_EQ_I64(weft__trace_reopen_part(t, mine, &again), WEFT_ETRUNCATED);
	CHECK(again == NULL);
	char want[256];
	snprintf(want, sizeof want, "the file changed since it was opened: it had %llu bytes, "
		 "it now has %llu", (unsigned long long)s->file_size,
		 (unsigned long long)s->file_size - 16);
	CHECK(strstr(weft_last_error(), want) != NULL);
	REQUIRE(weft__trace_reopen_part(t, others, &again) == 0);
	weft_trace_free(again);
	weft_trace_free(t);
	tu_finish_dir(dir);
}

/* A replayer of the raw tape `tape`. */
static weft__metafs *replayer_of(const void *tape, size_t len)
{
	weft__metafs *fs = NULL;
	REQUIRE(weft__metafs_replay_bytes(tape, len, &fs) == 0);
	return fs;
}

/* Questions of the three kinds in turn, from `first`; the worst answer. */
static int ask_all(weft__metafs *fs, int first)
{
	int kind, rc = 0;
	uint64_t size;
	char **names, *bytes;
	size_t count, len;
	for (int i = first; i < first + 8 && rc >= 0; i++) {
		int r = i % 3 == 0 ? weft__metafs_stat(fs, "x", &kind, &size)
			: i % 3 == 1 ? weft__metafs_list(fs, "x", &names, &count)
			: weft__metafs_read(fs, "x", 100, 0, &bytes, &len, &size);
		if (r == 0 && i % 3 == 1)
			weft__metafs_names_free(names, count);
		if (r == 0 && i % 3 == 2)
			free(bytes);
		rc = r < rc ? r : rc;
	}
	return rc;
}

static void test_bad_tapes(void)
{
	/* A recorded tape replayed with other questions, then past its end. */
	weft__metafs *rec = NULL;
	REQUIRE(weft__metafs_recorder(NULL, 0, &rec) == 0);
	int kind;
	uint64_t size;
	CHECK(weft__metafs_stat(rec, tu_data_path("ovni"), &kind, &size) == 0 &&
	      kind == WEFT__META_DIR);
	size_t len;
	const void *tape = weft__metafs_tape(rec, &len);
	weft__metafs *fs = replayer_of(tape, len);
	char **names;
	size_t count;
	CHECK_EQ_I64(weft__metafs_list(fs, "x", &names, &count), WEFT_EFORMAT);
	CHECK(strstr(weft_last_error(), "another question here than on rank 0") != NULL);
	weft__metafs_free(fs);
	fs = replayer_of(tape, len);
	CHECK(weft__metafs_stat(fs, "x", &kind, &size) == 0 && kind == WEFT__META_DIR);
	CHECK_EQ_I64(weft__metafs_stat(fs, "x", &kind, &size), WEFT_EFORMAT);
	weft__metafs_free(fs);
	/* A tape cut anywhere is refused. */
	for (size_t cut = 0; cut < len; cut++) {
		fs = replayer_of(tape, cut);
		CHECK_EQ_I64(weft__metafs_stat(fs, "x", &kind, &size), WEFT_EFORMAT);
		weft__metafs_free(fs);
	}
	weft__metafs_free(rec);

	/* Entries that claim huge counts and lengths, and garbage. */
	weft__pack t = { 0 };
	uint64_t huge[] = { 2, 0, UINT64_MAX };            /* list of 2^64 names */
	uint64_t long_read[] = { 3, 0, 10, 1, UINT64_MAX }; /* read of 2^64 bytes */
	uint64_t bad_errno[] = { 1, UINT64_MAX, 0, 0 };     /* stat, errno 2^64 - 1 */
	const uint64_t *cases[] = { huge, long_read, bad_errno };
	size_t sizes[] = { sizeof huge, sizeof long_read, sizeof bad_errno };
	for (size_t c = 0; c < 3; c++) {
		t.len = 0;
		for (size_t i = 0; i < sizes[c] / 8; i++)
			weft__pack_u64(&t, cases[c][i]);
		for (int first = 0; first < 3; first++) {
			fs = replayer_of(t.data, t.len);
			CHECK(ask_all(fs, first) < 0);
			weft__metafs_free(fs);
		}
	}
	uint64_t x = 0x9e3779b97f4a7c15ull;
	for (int n = 0; n < 64; n++) {
		t.len = 0;
		for (int i = 0; i <= n; i++, x = x * 6364136223846793005ull + 1442695040888963407ull)
			weft__pack_u64(&t, i % 2 ? x >> (x & 63) : x % 4);
		fs = replayer_of(t.data, t.len);
		ask_all(fs, n % 3); /* whatever it answers: no crash, no huge allocation */
		weft__metafs_free(fs);
	}
	weft__pack_release(&t);
}

/* The open's recorder is no excuse for a crash on a NULL handle. */
static void test_no_handle(void)
{
	CHECK_EQ_I64(weft_trace_open(tu_data_path("ovni/v3/mpi-func-4procs/ovni"), NULL, NULL),
		     WEFT_EINVAL);
	weft_trace *t = (weft_trace *)&t;
	CHECK_EQ_I64(weft_trace_open(NULL, NULL, &t), WEFT_EINVAL);
	CHECK(t == NULL);
}

int main(void)
{
	test_no_handle();
	test_replays();
	test_other_rank_reads_no_metadata();
	test_books();
	test_threads_replay();
	test_bad_tapes();
	return tu_result();
}
