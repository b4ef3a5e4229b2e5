/* SPDX-License-Identifier: MIT */
/*
 * test_pallas_writer.c - the Pallas trace writer (weft/pallas.h):
 *
 *   references  the four reference traces of Pallas 0.20 (logical clocks)
 *               written again through the API, every file compared byte
 *               for byte with the reference files (tests/data/pallas/)
 *   grammar     repetitions longer than max_loop_length: found with
 *               long_patterns, not without (Pallas's window); the 120-block
 *               pattern compresses to a loop
 *   records     every record kind with its payload, attributes of every
 *               type, blocks left open at close, a Leave without Enter
 *   values      vectors of more than 1000 values in both layouts and with
 *               helper threads give the same values; delta timestamps
 *   attributes  lists spilled to the scratch file in chunks come back as
 *               the bytes Pallas stores (built here value by value), in
 *               both layouts, with helpers, raw or zstd; writer memory
 *               stays bounded with a list on every Enter
 *   empty       a thread without events is written as Pallas 0.20 writes
 *               it (byte for byte), next to a thread that records
 *   threads     4 threads recording at once
 *   errors      bad directory, existing trace, NULL arguments, records
 *               after close, bad options, an archive stored with an open
 *               thread, attribute lists that overflow
 *
 * The files are checked by a small test-local decoder of the thread file
 * and the .dat files (zstd or raw), not by weft's reader.
 */
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "testutil.h"
#include "weft/weft.h"

static char *scratch; /* this test's scratch directory */

/* ---- Helpers --------------------------------------------------------------------------- */

/* A malloc'd path "<a>/<b>". */
static char *join(const char *a, const char *b)
{
	size_t n = strlen(a) + strlen(b) + 2;
	char *p = malloc(n);
	REQUIRE(p != NULL);
	snprintf(p, n, "%s/%s", a, b);
	return p;
}

/* The directory of a reference trace. */
static char *ref_dir(const char *name)
{
	const char *data = getenv("WEFT_TEST_DATA");
	REQUIRE(data != NULL);
	char buf[512];
	snprintf(buf, sizeof buf, "%s/pallas/%s/trace", data, name);
	return strdup(buf);
}

/* Compares file `rel` of two trace directories byte for byte. */
static void check_same_file(const char *got_dir, const char *want_dir, const char *rel)
{
	char *g = join(got_dir, rel), *w = join(want_dir, rel);
	size_t gn = 0, wn = 0;
	char *gb = tu_read_file(g, &gn), *wb = tu_read_file(w, &wn);
	if (gb == NULL || wb == NULL) {
		tu_fail(__FILE__, __LINE__, "%s: cannot read %s", rel, gb == NULL ? g : w);
	} else if (gn != wn) {
		tu_fail(__FILE__, __LINE__, "%s: %zu bytes, the reference has %zu", rel, gn, wn);
		CHECK_EQ_MEM(gb, wb, gn < wn ? gn : wn);
	} else {
		CHECK_EQ_MEM(gb, wb, gn);
	}
	free(gb), free(wb), free(g), free(w);
}

/* Counts the regular files under `dir` (recursively), e.g. to find stray .tmp files. */
static int count_files(const char *dir, const char *suffix)
{
	DIR *d = opendir(dir);
	int n = 0;
	if (d == NULL)
		return 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.' && (e->d_name[1] == '\0' ||
					    (e->d_name[1] == '.' && e->d_name[2] == '\0')))
			continue;
		char *p = join(dir, e->d_name);
		struct stat st;
		if (stat(p, &st) == 0 && S_ISDIR(st.st_mode))
			n += count_files(p, suffix);
		else if (suffix == NULL ||
			 (strlen(e->d_name) >= strlen(suffix) &&
			  strcmp(e->d_name + strlen(e->d_name) - strlen(suffix), suffix) == 0))
			n++;
		free(p);
	}
	closedir(d);
	return n;
}

/* ---- A test-local decoder ------------------------------------------------------------------ */

/* A vector read back: its values (from the .dat file) and header statistics. */
typedef struct dvec {
	uint64_t size, nsub, min, max, mean;
	uint64_t *v;
} dvec;

typedef struct dthread {
	int compression, delta;          /* from main.pallas */
	uint32_t id, archive, root;
	uint64_t nev, nseq, nloop, first;
	struct dev {
		int32_t record;
		uint8_t size, payload[256];
		uint64_t attr_len;
		uint8_t *attrs;
		dvec ts;
	} *ev;
	struct dseq {
		int32_t type;
		uint64_t n;
		uint32_t *tok;
		dvec dur, excl, ts;
	} *seq;
	struct dloop { uint32_t rep, it; uint64_t occ; } *loop;
	uint32_t *loopmap;
	uint64_t loopmap_n;
} dthread;

/* A bounded cursor over a file's bytes. */
typedef struct cur {
	const uint8_t *p, *end;
	int bad;
} cur;

static void take(cur *c, void *out, size_t n)
{
	if (c->bad || (size_t)(c->end - c->p) < n) {
		c->bad = 1;
		memset(out, 0, n);
		return;
	}
	memcpy(out, c->p, n);
	c->p += n;
}

static uint64_t take64(cur *c) { uint64_t v; take(c, &v, 8); return v; }
static uint32_t take32(cur *c) { uint32_t v; take(c, &v, 4); return v; }

/* Reads the `size` values of a sub-array at `off` of a .dat file. */
static int read_values(const dthread *d, const char *dat, size_t dat_n, uint64_t off,
		       uint64_t size, int timestamps, uint64_t *out)
{
	uint64_t nbytes;
	if (off > dat_n || dat_n - off < 8)
		return -1;
	memcpy(&nbytes, dat + off, 8);
	if (nbytes > dat_n - off - 8)
		return -1;
	if (d->compression) {
		size_t r = ZSTD_decompress(out, size * 8, dat + off + 8, nbytes);
		if (ZSTD_isError(r) || r != size * 8)
			return -1;
	} else {
		if (nbytes != size * 8)
			return -1;
		memcpy(out, dat + off + 8, nbytes);
	}
	if (timestamps && d->delta)
		for (uint64_t i = 1; i < size; i++)
			out[i] += out[i - 1];
	return 0;
}

/* A vector header and its values; the sub-array statistics are checked here. */
static void read_vector(cur *c, const dthread *d, const char *dat, size_t dat_n,
			int durations, dvec *v)
{
	memset(v, 0, sizeof *v);
	v->size = take64(c);
	v->nsub = take64(c);
	if (v->size == 0)
		return;
	if (durations)
		v->min = take64(c), v->max = take64(c), v->mean = take64(c);
	REQUIRE(v->size < (1u << 28));
	v->v = calloc(v->size, 8);
	uint64_t at = 0;
	for (uint64_t k = 0; k < v->nsub && !c->bad; k++) {
		uint64_t n = take64(c), f1 = take64(c), f2 = take64(c);
		uint64_t f3 = durations ? take64(c) : 0, off = take64(c);
		if (n == 0 || n > v->size - at || n > 1000) {
			c->bad = 1;
			break;
		}
		if (read_values(d, dat, dat_n, off, n, !durations, v->v + at) < 0) {
			tu_fail(__FILE__, __LINE__, "sub-array at %llu does not decode",
				(unsigned long long)off);
			c->bad = 1;
			break;
		}
		uint64_t mn = UINT64_MAX, mx = 0, sum = 0;
		for (uint64_t i = 0; i < n; i++) {
			uint64_t x = v->v[at + i];
			mn = x < mn ? x : mn, mx = x > mx ? x : mx, sum += x;
		}
		if (durations) {
			CHECK_EQ_U64(f1, mn);
			CHECK_EQ_U64(f2, mx);
			CHECK_EQ_U64(f3, sum / n);
		} else {
			CHECK_EQ_U64(f1, v->v[at]);
			CHECK_EQ_U64(f2, v->v[at + n - 1]);
		}
		at += n;
	}
	CHECK_EQ_U64(at, v->size);
}

/* Reads main.pallas's settings and thread `loc` of archive `lg`. */
static dthread *decode_thread(const char *dir, const char *main_name, uint32_t lg, uint32_t loc)
{
	char rel[256];
	size_t n;
	char *p = join(dir, main_name);
	uint8_t *mainf = (uint8_t *)tu_read_file(p, &n);
	free(p);
	REQUIRE(mainf != NULL && n >= 33 && mainf[0] == 20);
	dthread *d = calloc(1, sizeof *d);
	int32_t comp, tss;
	memcpy(&comp, mainf + 1, 4);
	memcpy(&tss, mainf + 29, 4);
	d->compression = comp, d->delta = tss == 3;
	free(mainf);
	char *files[3];
	size_t sizes[3];
	const char *names[3] = { "thread.pallas", "event_durations.dat", "sequence_durations.dat" };
	for (int f = 0; f < 3; f++) {
		snprintf(rel, sizeof rel, "archive_%u/thread_%u/%s", lg, loc, names[f]);
		p = join(dir, rel);
		files[f] = tu_read_file(p, &sizes[f]);
		REQUIRE(files[f] != NULL);
		free(p);
	}
	cur c = { (const uint8_t *)files[0], (const uint8_t *)files[0] + sizes[0], 0 };
	d->id = take32(&c), d->archive = take32(&c);
	d->nev = take64(&c), d->nseq = take64(&c), d->nloop = take64(&c);
	d->root = take32(&c), d->first = take64(&c);
	REQUIRE(d->nev < 100000 && d->nseq < 100000 && d->nloop < 100000);
	d->ev = calloc(d->nev + 1, sizeof *d->ev);
	d->seq = calloc(d->nseq + 1, sizeof *d->seq);
	d->loop = calloc(d->nloop + 1, sizeof *d->loop);
	for (uint64_t i = 0; i < d->nev && !c.bad; i++) {
		struct dev *e = &d->ev[i];
		e->record = (int32_t)take32(&c);
		take(&c, &e->size, 1);
		take(&c, e->payload, e->size >= 5 ? e->size - 5u : 0);
		e->attr_len = take64(&c);
		REQUIRE(e->attr_len < (1u << 26));
		e->attrs = malloc(e->attr_len + 1);
		take(&c, e->attrs, e->attr_len);
		read_vector(&c, d, files[1], sizes[1], 0, &e->ts);
	}
	uint64_t m = take64(&c);
	CHECK_EQ_U64(m, d->nev);
	for (uint64_t i = 0; i < m && !c.bad; i++)
		CHECK_EQ_U64(take32(&c), i);
	for (uint64_t i = 0; i < d->nseq && !c.bad; i++) {
		struct dseq *s = &d->seq[i];
		s->type = (int32_t)take32(&c);
		s->n = take64(&c);
		if (s->n == 0)
			continue;
		REQUIRE(s->n < (1u << 26));
		s->tok = calloc(s->n, 4);
		take(&c, s->tok, s->n * 4);
		read_vector(&c, d, files[2], sizes[2], 1, &s->dur);
		read_vector(&c, d, files[2], sizes[2], 1, &s->excl);
		read_vector(&c, d, files[2], sizes[2], 0, &s->ts);
	}
	m = take64(&c);
	CHECK_EQ_U64(m, d->nseq);
	for (uint64_t i = 0; i < m && !c.bad; i++)
		CHECK_EQ_U64(take32(&c), i);
	for (uint64_t i = 0; i < d->nloop && !c.bad; i++)
		d->loop[i].rep = take32(&c), d->loop[i].it = take32(&c), d->loop[i].occ = take64(&c);
	d->loopmap_n = take64(&c);
	REQUIRE(d->loopmap_n < 100000);
	d->loopmap = calloc(d->loopmap_n + 1, 4);
	for (uint64_t i = 0; i < d->loopmap_n; i++)
		d->loopmap[i] = take32(&c);
	CHECK(!c.bad);
	CHECK(c.p == c.end);
	for (int f = 0; f < 3; f++)
		free(files[f]);
	return d;
}

static void free_dvec(dvec *v) { free(v->v); }

static void free_thread(dthread *d)
{
	if (d == NULL)
		return;
	for (uint64_t i = 0; i < d->nev; i++)
		free(d->ev[i].attrs), free_dvec(&d->ev[i].ts);
	for (uint64_t i = 0; i < d->nseq; i++) {
		free(d->seq[i].tok);
		free_dvec(&d->seq[i].dur), free_dvec(&d->seq[i].excl), free_dvec(&d->seq[i].ts);
	}
	free(d->ev), free(d->seq), free(d->loop), free(d->loopmap);
	free(d);
}

/* One event occurrence as recorded: its event id and timestamp. */
typedef struct occ {
	uint32_t event;
	uint64_t ts;
} occ;

/* Replay state: next value of each vector, events produced. */
typedef struct replay {
	dthread *d;
	uint64_t *ev_next, *seq_next;
	occ *out;
	size_t n, cap;
	int bad;
} replay;

/*
 * Unrolls token `tok`: appends its events, checks each sequence
 * occurrence's stored duration, exclusive time and start against the
 * events it spans, and returns what it adds to its parent's block time.
 */
static uint64_t unroll(replay *r, uint32_t tok, uint64_t *start, uint64_t *end, int depth)
{
	dthread *d = r->d;
	uint32_t type = tok & 3, id = tok >> 2;
	if (r->bad || depth > 200) {
		r->bad = 1;
		return 0;
	}
	if (type == 1 && id < d->nev) {
		struct dev *e = &d->ev[id];
		uint64_t k = r->ev_next[id]++;
		if (k >= e->ts.size) {
			r->bad = 1;
			return 0;
		}
		if (r->n == r->cap) {
			r->cap = r->cap ? r->cap * 2 : 1024;
			r->out = realloc(r->out, r->cap * sizeof *r->out);
		}
		r->out[r->n++] = (occ){ id, e->ts.v[k] };
		*start = *end = e->ts.v[k];
		return 0;
	}
	if (type == 3 && id < d->nloop) {
		uint64_t s0 = 0, e0 = 0, total = 0;
		for (uint32_t i = 0; i < d->loop[id].it && !r->bad; i++) {
			uint64_t s, e;
			total += unroll(r, d->loop[id].rep, &s, &e, depth + 1);
			if (i == 0)
				s0 = s;
			e0 = e;
		}
		*start = s0, *end = e0;
		return total;
	}
	if (type != 2 || id >= d->nseq || d->seq[id].n == 0) {
		r->bad = 1;
		return 0;
	}
	struct dseq *s = &d->seq[id];
	uint64_t block = 0, s0 = 0, e0 = 0;
	for (uint64_t i = 0; i < s->n && !r->bad; i++) {
		uint64_t a, b;
		block += unroll(r, s->tok[i], &a, &b, depth + 1);
		if (i == 0)
			s0 = a;
		e0 = b;
	}
	uint64_t k = r->seq_next[id]++;
	if (id != 0 && (k >= s->dur.size || k >= s->excl.size || k >= s->ts.size)) {
		r->bad = 1;
		return 0;
	}
	uint64_t dur = e0 - s0, excl = s->type == 0 ? dur - block : block;
	if (id != 0) {
		CHECK_EQ_U64(s->dur.v[k], dur);
		CHECK_EQ_U64(s->excl.v[k], excl);
		CHECK_EQ_U64(s->ts.v[k], s0);
	}
	*start = s0, *end = e0;
	return s->type == 0 ? dur : excl;
}

/* The events of a decoded thread in recording order; checks every vector is used up. */
static occ *replay_thread(dthread *d, size_t *n)
{
	replay r = { .d = d };
	r.ev_next = calloc(d->nev + 1, 8);
	r.seq_next = calloc(d->nseq + 1, 8);
	uint64_t s, e;
	if (d->nseq > 0 && d->seq[0].n > 0)
		unroll(&r, 2u, &s, &e, 0);
	CHECK(!r.bad);
	for (uint64_t i = 0; i < d->nev; i++)
		CHECK_EQ_U64(r.ev_next[i], d->ev[i].ts.size);
	for (uint64_t i = 1; i < d->nseq; i++)
		if (d->seq[i].n > 0)
			CHECK_EQ_U64(r.seq_next[i], d->seq[i].dur.size);
	free(r.ev_next), free(r.seq_next);
	*n = r.n;
	return r.out;
}

/* ---- A recording to compare with ------------------------------------------------------------- */

/* What a test recorded: record kind, first payload u32, timestamp. */
typedef struct rec {
	int32_t record;
	uint32_t arg;
	uint64_t ts;
} rec;

typedef struct recording {
	rec *r;
	size_t n, cap;
} recording;

static void note(recording *g, int32_t record, uint32_t arg, uint64_t ts)
{
	if (g->n == g->cap) {
		g->cap = g->cap ? g->cap * 2 : 1024;
		g->r = realloc(g->r, g->cap * sizeof *g->r);
		REQUIRE(g->r != NULL);
	}
	g->r[g->n++] = (rec){ record, arg, ts };
}

/* Enter/Leave of `region` at ts, ts + 1 (noted). */
static void call(weft_pallas_thread *t, recording *g, uint32_t region, uint64_t *ts)
{
	CHECK(weft_pallas_record_enter(t, NULL, *ts, region) == 0);
	note(g, 2, region, (*ts)++);
	CHECK(weft_pallas_record_leave(t, NULL, *ts, region) == 0);
	note(g, 3, region, (*ts)++);
}

/* The thread written under `dir` replays exactly the recording. */
static dthread *check_replay(const char *dir, uint32_t lg, uint32_t loc, const recording *g)
{
	dthread *d = decode_thread(dir, "main.pallas", lg, loc);
	size_t n = 0;
	occ *o = replay_thread(d, &n);
	CHECK_EQ_U64(n, g->n);
	for (size_t i = 0; i < n && i < g->n; i++) {
		const struct dev *e = &d->ev[o[i].event];
		uint32_t arg = 0;
		if (e->size >= 9)
			memcpy(&arg, e->payload, 4);
		if (e->record != g->r[i].record || arg != g->r[i].arg || o[i].ts != g->r[i].ts) {
			tu_fail(__FILE__, __LINE__, "event %zu: got record %d arg %u ts %llu, want %d %u %llu",
				i, e->record, arg, (unsigned long long)o[i].ts, g->r[i].record,
				g->r[i].arg, (unsigned long long)g->r[i].ts);
			break;
		}
	}
	free(o);
	return d;
}

/* ---- The reference traces ------------------------------------------------------------------ */

/* The files every reference trace has, apart from its threads. */
static void check_trace_files(const char *got, const char *want, int threads)
{
	check_same_file(got, want, "main.pallas");
	check_same_file(got, want, "archive_0/archive.pallas");
	for (int i = 0; i < threads; i++) {
		char rel[128];
		const char *files[] = { "thread.pallas", "event_durations.dat", "sequence_durations.dat" };
		for (int f = 0; f < 3; f++) {
			snprintf(rel, sizeof rel, "archive_0/thread_%d/%s", i, files[f]);
			check_same_file(got, want, rel);
		}
	}
	CHECK_EQ_I64(count_files(got, NULL), count_files(want, NULL));
	CHECK_EQ_I64(count_files(got, ".tmp"), 0);
}

/* Global archive, strings, regions and location group 0 of a benchmark-style reference. */
static weft_pallas_global *ref_global(const char *dir, const weft_pallas_write_options *o,
				      const char *const *strings, int nstrings, int nregions,
				      uint32_t lg_parent)
{
	weft_pallas_global *g = NULL;
	REQUIRE(weft_pallas_global_create(dir, "main", o, &g) == 0);
	weft_pallas_defs *d = weft_pallas_global_defs(g);
	for (int i = 0; i < nstrings; i++)
		CHECK(weft_pallas_add_string(d, (uint32_t)i, strings[i]) == 0);
	for (int r = 1; r <= nregions; r++)
		CHECK(weft_pallas_add_region(d, (uint32_t)r, (uint32_t)r) == 0);
	CHECK(weft_pallas_add_location_group(d, 0, 0, lg_parent) == 0);
	return g;
}

/* Stores the archive and the global archive and frees everything. */
static void store_all(weft_pallas_global *g, weft_pallas_archive *a)
{
	CHECK(weft_pallas_archive_store(a) == 0);
	CHECK(weft_pallas_global_store(g) == 0);
	weft_pallas_global_free(g);
}

/* wb_enterleave_f3_n1000_t2_logical(_None): 2 threads of 1000 x (f0, f1, f2), time 1, 2, ... */
static void test_ref_enterleave(int compression, const char *name)
{
	static const char *const strings[] = { "Process", "function_0", "function_1",
						"function_2", "thread_0", "thread_1" };
	weft_pallas_write_options o;
	weft_pallas_write_options_init(&o);
	o.compression = compression;
	char *dir = join(scratch, name);
	weft_pallas_global *g = ref_global(dir, &o, strings, 6, 3, WEFT_PALLAS_NO_PARENT);
	weft_pallas_archive *a = NULL;
	REQUIRE(weft_pallas_archive_create(g, 0, &a) == 0);
	for (uint32_t th = 0; th < 2; th++) {
		CHECK(weft_pallas_add_location(weft_pallas_archive_defs(a), th, 4 + th, 0) == 0);
		weft_pallas_thread *t = NULL;
		REQUIRE(weft_pallas_thread_create(a, th, &t) == 0);
		uint64_t ts = 1;
		for (int i = 0; i < 1000; i++) {
			for (uint32_t f = 1; f <= 3; f++) {
				CHECK(weft_pallas_record_enter(t, NULL, ts++, f) == 0);
				CHECK(weft_pallas_record_leave(t, NULL, ts++, f) == 0);
			}
		}
		CHECK(weft_pallas_thread_close(t) == 0);
	}
	store_all(g, a);
	char *want = ref_dir(name);
	check_trace_files(dir, want, 2);
	free(want), free(dir);
}

/* wb_generic_f2_n2000_t4_logical: 4 threads of 2000 x (generic 1, generic 2). */
static void test_ref_generic(void)
{
	static const char *const strings[] = { "Process", "function_0", "function_1", "thread_0",
						"thread_1", "thread_2", "thread_3" };
	const char *name = "wb_generic_f2_n2000_t4_logical";
	char *dir = join(scratch, name);
	weft_pallas_global *g = ref_global(dir, NULL, strings, 7, 2, WEFT_PALLAS_NO_PARENT);
	weft_pallas_archive *a = NULL;
	REQUIRE(weft_pallas_archive_create(g, 0, &a) == 0);
	for (uint32_t th = 0; th < 4; th++) {
		CHECK(weft_pallas_add_location(weft_pallas_archive_defs(a), th, 3 + th, 0) == 0);
		weft_pallas_thread *t = NULL;
		REQUIRE(weft_pallas_thread_create(a, th, &t) == 0);
		uint64_t ts = 1;
		for (int i = 0; i < 2000; i++) {
			CHECK(weft_pallas_record_generic(t, NULL, ts++, 1) == 0);
			CHECK(weft_pallas_record_generic(t, NULL, ts++, 2) == 0);
		}
		CHECK(weft_pallas_thread_close(t) == 0);
	}
	store_all(g, a);
	char *want = ref_dir(name);
	check_trace_files(dir, want, 4);
	free(want), free(dir);
}

/* write_pattern: 4 x (f0, 3 x (f1, f2)) from time 0; its loops leave dead slots. */
static void test_ref_pattern(void)
{
	static const char *const strings[] = { "Main process", "function_0", "function_1",
						"function_2", "function_3", "main_thread" };
	char *dir = join(scratch, "write_pattern");
	weft_pallas_global *g = ref_global(dir, NULL, strings, 6, 4, 0);
	weft_pallas_archive *a = NULL;
	REQUIRE(weft_pallas_archive_create(g, 0, &a) == 0);
	CHECK(weft_pallas_add_location(weft_pallas_archive_defs(a), 0, 5, 0) == 0);
	weft_pallas_thread *t = NULL;
	REQUIRE(weft_pallas_thread_create(a, 0, &t) == 0);
	uint64_t ts = 0;
	for (int i = 0; i < 4; i++) {
		CHECK(weft_pallas_record_enter(t, NULL, ts++, 1) == 0);
		CHECK(weft_pallas_record_leave(t, NULL, ts++, 1) == 0);
		for (int j = 0; j < 3; j++) {
			for (uint32_t f = 2; f <= 3; f++) {
				CHECK(weft_pallas_record_enter(t, NULL, ts++, f) == 0);
				CHECK(weft_pallas_record_leave(t, NULL, ts++, f) == 0);
			}
		}
	}
	weft_pallas_thread_stats st;
	weft_pallas_thread_get_stats(t, &st);
	CHECK_EQ_U64(st.events, 56);
	CHECK(weft_pallas_thread_close(t) == 0);
	weft_pallas_thread_get_stats(t, &st);
	CHECK_EQ_U64(st.distinct_events, 6);
	CHECK_EQ_U64(st.sequences, 6);
	CHECK_EQ_U64(st.loops, 5);
	store_all(g, a);
	char *want = ref_dir("write_pattern");
	check_trace_files(dir, want, 1);
	free(want), free(dir);
}

/* ---- Traces written for the other tests ------------------------------------------------------------- */

typedef void (*body_fn)(weft_pallas_thread *t, recording *g, const void *arg);

/* Trace `name`: 200 regions, location group 0, thread 0 recorded by `body`; returns its directory. */
static char *write_one(const char *name, const weft_pallas_write_options *o, body_fn body,
		       const void *arg, recording *g)
{
	char *dir = join(scratch, name);
	weft_pallas_global *gl = NULL;
	REQUIRE(weft_pallas_global_create(dir, "main", o, &gl) == 0);
	weft_pallas_defs *d = weft_pallas_global_defs(gl);
	uint32_t ref = 99;
	CHECK(weft_pallas_register_string(d, "process", &ref) == 0);
	CHECK_EQ_U64(ref, 0);
	for (uint32_t r = 1; r <= 200; r++)
		CHECK(weft_pallas_add_region(d, r, 0) == 0);
	CHECK(weft_pallas_add_location_group(d, 0, 0, WEFT_PALLAS_NO_PARENT) == 0);
	weft_pallas_archive *a = NULL;
	REQUIRE(weft_pallas_archive_create(gl, 0, &a) == 0);
	CHECK(weft_pallas_add_location(weft_pallas_archive_defs(a), 0, 0, 0) == 0);
	weft_pallas_thread *t = NULL;
	REQUIRE(weft_pallas_thread_create(a, 0, &t) == 0);
	body(t, g, arg);
	CHECK(weft_pallas_thread_close(t) == 0);
	store_all(gl, a);
	return dir;
}

/* `iterations` x (blocks 1 .. `blocks`), each an Enter/Leave pair. */
typedef struct pattern { uint32_t blocks, iterations; uint64_t jitter; } pattern;

static void body_pattern(weft_pallas_thread *t, recording *g, const void *arg)
{
	const pattern *p = arg;
	uint64_t ts = 5, x = 12345;
	for (uint32_t i = 0; i < p->iterations; i++) {
		for (uint32_t b = 1; b <= p->blocks; b++) {
			call(t, g, b, &ts);
			if (p->jitter) {
				x = x * 6364136223846793005ull + 1442695040888963407ull;
				ts += (x >> 33) % p->jitter;
			}
		}
	}
}

/* Reads a whole file of a trace. */
static char *trace_file(const char *dir, const char *rel, size_t *n)
{
	char *p = join(dir, rel);
	char *b = tu_read_file(p, n);
	free(p);
	return b;
}

/* ---- Grammar -------------------------------------------------------------------------------------- */

/*
 * The sequence that the root holds alone when the depth-0 list was not one
 * sequence or loop (Pallas 0.20's reader needs that: docs/pallas-writer.md).
 */
static uint32_t wrapped(const dthread *d)
{
	REQUIRE(d->seq[0].n == 1 && (d->seq[0].tok[0] & 3) == 2); /* a sequence token */
	uint32_t id = d->seq[0].tok[0] >> 2;
	REQUIRE(id < d->nseq);
	CHECK_EQ_I64(d->seq[id].type, 1); /* a "loop" sequence, by Pallas's rule */
	return id;
}

/* 120 different blocks repeated: one loop with long_patterns, none in Pallas's window of 100. */
static void test_long_patterns(void)
{
	pattern p = { 120, 50, 0 };
	weft_pallas_write_options o;
	weft_pallas_write_options_init(&o);
	recording g1 = { 0 }, g2 = { 0 };
	char *dir = write_one("long", &o, body_pattern, &p, &g1);
	dthread *d = check_replay(dir, 0, 0, &g1);
	CHECK_EQ_U64(d->nseq, 122);      /* root, 120 blocks, the loop body */
	CHECK(d->seq[0].n <= 2);
	CHECK(d->nloop >= 1);
	free_thread(d);
	o.long_patterns = 0;
	char *dir2 = write_one("window", &o, body_pattern, &p, &g2);
	d = check_replay(dir2, 0, 0, &g2);
	CHECK_EQ_U64(d->nseq, 122);      /* Pallas finds no loop: root, 120 blocks, */
	CHECK_EQ_U64(d->seq[0].n, 1);    /* and the sequence of the 6000 the root holds */
	CHECK_EQ_U64(d->seq[wrapped(d)].n, 6000);
	free_thread(d);
	free(g1.r), free(g2.r), free(dir), free(dir2);
}

/* Patterns shorter than the window: long_patterns changes nothing. */
static void test_window_same(void)
{
	pattern p = { 7, 300, 3 };
	weft_pallas_write_options o;
	weft_pallas_write_options_init(&o);
	recording g1 = { 0 }, g2 = { 0 };
	char *a = write_one("short1", &o, body_pattern, &p, &g1);
	o.long_patterns = 0;
	char *b = write_one("short2", &o, body_pattern, &p, &g2);
	check_same_file(a, b, "archive_0/thread_0/thread.pallas");
	check_same_file(a, b, "archive_0/thread_0/event_durations.dat");
	check_same_file(a, b, "archive_0/thread_0/sequence_durations.dat");
	free_thread(check_replay(a, 0, 0, &g1));
	free(g1.r), free(g2.r), free(a), free(b);
}

/* Nested calls, loops inside blocks, loops of loops, irregular parts. */
static void body_nested(weft_pallas_thread *t, recording *g, const void *arg)
{
	(void)arg;
	uint64_t ts = 100;
	for (int outer = 0; outer < 40; outer++) {
		CHECK(weft_pallas_record_enter(t, NULL, ts, 10) == 0);
		note(g, 2, 10, ts++);
		for (int i = 0; i < 3 + outer % 4; i++) {
			call(t, g, 11, &ts);
			if (i % 2 == 0)
				call(t, g, 12, &ts);
		}
		for (int k = 0; k < outer % 3; k++) {
			CHECK(weft_pallas_record_generic(t, NULL, ts, 1) == 0);
			note(g, 58, 1, ts++);
		}
		CHECK(weft_pallas_record_leave(t, NULL, ts, 10) == 0);
		note(g, 3, 10, ts++);
		ts += outer % 5;
	}
}

static void test_nested(void)
{
	recording g = { 0 };
	char *dir = write_one("nested", NULL, body_nested, NULL, &g);
	free_thread(check_replay(dir, 0, 0, &g));
	free(g.r), free(dir);
}

/* Blocks left open at close are closed at the last event; a Leave at depth 0 is a plain event. */
static void body_open(weft_pallas_thread *t, recording *g, const void *arg)
{
	(void)arg;
	uint64_t ts = 1;
	CHECK(weft_pallas_record_leave(t, NULL, ts, 5) == 0);
	note(g, 3, 5, ts++);
	call(t, g, 1, &ts);
	CHECK(weft_pallas_record_enter(t, NULL, ts, 2) == 0);
	note(g, 2, 2, ts++);
	CHECK(weft_pallas_record_enter(t, NULL, ts, 3) == 0);
	note(g, 2, 3, ts++);
	CHECK(weft_pallas_record_generic(t, NULL, ts, 4) == 0);
	note(g, 58, 4, ts++);
}

static void test_open_blocks(void)
{
	recording g = { 0 };
	char *dir = write_one("open", NULL, body_open, NULL, &g);
	dthread *d = check_replay(dir, 0, 0, &g);
	CHECK_EQ_U64(d->seq[0].n, 1); /* the sequence of: */
	CHECK_EQ_U64(d->seq[wrapped(d)].n, 3); /* Leave, block 1, the open block 2 */
	free_thread(d);
	free(g.r), free(dir);
}

/* ---- Records and attributes ------------------------------------------------------------------------------ */

/* One attribute list with a value of every kind of size. */
static void fill_attrs(weft_pallas_attrs *l)
{
	weft_pallas_attrs_init(l);
	CHECK(weft_pallas_attrs_add_u8(l, 1, 0xAB) == 0);
	CHECK(weft_pallas_attrs_add_u16(l, 2, 0xBEEF) == 0);
	CHECK(weft_pallas_attrs_add_u32(l, 3, 0xDEADBEEF) == 0);
	CHECK(weft_pallas_attrs_add_u64(l, 4, 0x0123456789ABCDEFull) == 0);
	CHECK(weft_pallas_attrs_add_i8(l, 5, -2) == 0);
	CHECK(weft_pallas_attrs_add_i16(l, 6, -300) == 0);
	CHECK(weft_pallas_attrs_add_i32(l, 7, -70000) == 0);
	CHECK(weft_pallas_attrs_add_i64(l, 8, -5000000000ll) == 0);
	CHECK(weft_pallas_attrs_add_float(l, 9, 1.5f) == 0);
	CHECK(weft_pallas_attrs_add_double(l, 10, -2.25) == 0);
	CHECK(weft_pallas_attrs_add_ref(l, 11, WEFT_PALLAS_TYPE_STRING, 0) == 0);
}

/* Every record function once (some twice), with attributes on the MPI send. */
static void body_records(weft_pallas_thread *t, recording *g, const void *arg)
{
	(void)arg;
	weft_pallas_attrs l;
	fill_attrs(&l);
	uint64_t ts = 10;
#define R(rec, arg, call_) do { CHECK((call_) == 0); note(g, rec, arg, ts++); } while (0)
	R(2, 1, weft_pallas_record_enter(t, NULL, ts, 1));
	R(58, 7, weft_pallas_record_generic(t, NULL, ts, 7));
	R(4, 1, weft_pallas_record_mpi_send(t, NULL, ts, 1, 2, 3, 4));
	R(4, 1, weft_pallas_record_mpi_send(t, &l, ts, 1, 2, 3, 4));
	R(5, 1, weft_pallas_record_mpi_isend(t, NULL, ts, 1, 2, 3, 4, 5));
	R(6, 5, weft_pallas_record_mpi_isend_complete(t, NULL, ts, 5));
	R(7, 6, weft_pallas_record_mpi_irecv_request(t, NULL, ts, 6));
	R(8, 9, weft_pallas_record_mpi_recv(t, NULL, ts, 9, 2, 3, 4));
	R(9, 9, weft_pallas_record_mpi_irecv(t, NULL, ts, 9, 2, 3, 4, 6));
	R(12, 0, weft_pallas_record_mpi_collective_begin(t, NULL, ts));
	R(13, 8, weft_pallas_record_mpi_collective_end(t, NULL, ts, 8, 2, 0, 64, 128));
	R(14, 4, weft_pallas_record_omp_fork(t, NULL, ts, 4));
	R(16, 9, weft_pallas_record_omp_acquire_lock(t, NULL, ts, 9));
	R(17, 9, weft_pallas_record_omp_release_lock(t, NULL, ts, 9));
	R(18, 11, weft_pallas_record_omp_task_create(t, NULL, ts, 11));
	R(19, 11, weft_pallas_record_omp_task_switch(t, NULL, ts, 11));
	R(20, 11, weft_pallas_record_omp_task_complete(t, NULL, ts, 11));
	R(15, 0, weft_pallas_record_omp_join(t, NULL, ts));
	R(25, 2, weft_pallas_record_thread_fork(t, NULL, ts, 2));
	R(27, 0, weft_pallas_record_thread_team_begin(t, NULL, ts));
	R(35, 0, weft_pallas_record_thread_begin(t, NULL, ts));
	R(29, 3, weft_pallas_record_thread_acquire_lock(t, NULL, ts, 3));
	R(30, 3, weft_pallas_record_thread_release_lock(t, NULL, ts, 3));
	R(31, 0, weft_pallas_record_thread_task_create(t, NULL, ts));
	R(32, 0, weft_pallas_record_thread_task_switch(t, NULL, ts));
	R(33, 0, weft_pallas_record_thread_task_complete(t, NULL, ts));
	R(37, 0, weft_pallas_record_thread_end(t, NULL, ts));
	R(28, 0, weft_pallas_record_thread_team_end(t, NULL, ts));
	R(26, 0, weft_pallas_record_thread_join(t, NULL, ts));
	uint32_t v = 77;
	R(52, 77, weft_pallas_record_raw(t, NULL, ts, 52, WEFT_PALLAS_ROLE_BLOCK_START, &v, 4));
	R(53, 77, weft_pallas_record_raw(t, NULL, ts, 53, WEFT_PALLAS_ROLE_BLOCK_END, &v, 4));
	R(3, 1, weft_pallas_record_leave(t, NULL, ts, 1));
#undef R
}

/* The event of decoded thread `d` with record `rec` and a payload of `size` bytes. */
static const struct dev *find_event(const dthread *d, int32_t record, uint8_t size)
{
	for (uint64_t i = 0; i < d->nev; i++)
		if (d->ev[i].record == record && d->ev[i].size == size)
			return &d->ev[i];
	return NULL;
}

static void test_records(void)
{
	recording g = { 0 };
	char *dir = write_one("records", NULL, body_records, NULL, &g);
	dthread *d = check_replay(dir, 0, 0, &g);
	const struct dev *send = find_event(d, 4, 5 + 20);
	REQUIRE(send != NULL);
	static const uint8_t payload[20] = { 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4 };
	CHECK_EQ_MEM(send->payload, payload, 20);
	/* Attributes of its 2nd occurrence (index 1): header, then 11 values. */
	size_t want = 7 + 11 * 6 + 1 + 2 + 4 + 8 + 1 + 2 + 4 + 8 + 4 + 8 + 4;
	CHECK_EQ_U64(send->attr_len, want);
	int32_t index;
	uint16_t size, entry;
	memcpy(&index, send->attrs, 4);
	memcpy(&size, send->attrs + 4, 2);
	CHECK_EQ_I64(index, 1);
	CHECK_EQ_U64(size, want);
	CHECK_EQ_U64(send->attrs[6], 11);
	memcpy(&entry, send->attrs + 7, 2);
	CHECK_EQ_U64(entry, 7);                 /* u16 size + u32 ref + u8 */
	CHECK_EQ_U64(send->attrs[7 + 6], 0xAB);
	double dv;
	size_t at = 7 + 7 + 8 + 10 + 14 + 7 + 8 + 10 + 14 + 10; /* entries before the double */
	memcpy(&entry, send->attrs + at, 2);
	CHECK_EQ_U64(entry, 14);
	memcpy(&dv, send->attrs + at + 6, 8);
	CHECK(dv == -2.25);
	const struct dev *cend = find_event(d, 13, 5 + 28);
	CHECK(cend != NULL);
	const struct dev *cbeg = find_event(d, 12, 5);
	CHECK(cbeg != NULL && cbeg->attr_len == 0);
	/* Blocks: Enter, fork (OMP and thread), team, thread begin, program begin. */
	uint64_t blocks = 0, loops = 0;
	for (uint64_t i = 1; i < d->nseq; i++)
		blocks += d->seq[i].type == 0, loops += d->seq[i].type == 1;
	CHECK_EQ_U64(blocks, 1);                /* only the Enter block is a "block" */
	/* Pallas types the other 5 blocks as loops; the 6th is the body of the
	 * loop of the two identical sends. */
	CHECK_EQ_U64(loops, 6);
	free_thread(d);
	free(g.r), free(dir);
}

/* ---- Values ------------------------------------------------------------------------------------------------ */

/* The 3-block pattern with irregular times, 2500 iterations (3 sub-arrays per vector). */
static char *write_values(const char *name, const weft_pallas_write_options *o, recording *g)
{
	pattern p = { 3, 2500, 1000 };
	char *dir = write_one(name, o, body_pattern, &p, g);
	free_thread(check_replay(dir, 0, 0, g));
	return dir;
}

static void test_values(void)
{
	weft_pallas_write_options o;
	recording g[6] = { { 0 } };
	char *dirs[6];
	weft_pallas_write_options_init(&o);
	dirs[0] = write_values("values", &o, &g[0]);
	o.compress_threads = 2;
	dirs[1] = write_values("values-helpers", &o, &g[1]);
	/* The helpers change nothing in the files. */
	check_same_file(dirs[0], dirs[1], "archive_0/thread_0/thread.pallas");
	check_same_file(dirs[0], dirs[1], "archive_0/thread_0/event_durations.dat");
	check_same_file(dirs[0], dirs[1], "archive_0/thread_0/sequence_durations.dat");
	o.layout = WEFT_PALLAS_LAYOUT_COMPACT;
	dirs[2] = write_values("values-compact-helpers", &o, &g[2]);
	o.compress_threads = 0;
	dirs[3] = write_values("values-compact", &o, &g[3]);
	size_t n0 = 0, n3 = 0;
	free(trace_file(dirs[0], "archive_0/thread_0/sequence_durations.dat", &n0));
	free(trace_file(dirs[3], "archive_0/thread_0/sequence_durations.dat", &n3));
	CHECK(n3 < n0);                        /* identical sub-arrays share one frame */
	o.layout = WEFT_PALLAS_LAYOUT_PALLAS;
	o.delta_timestamps = 1;
	dirs[4] = write_values("values-delta", &o, &g[4]);
	size_t n4 = 0;
	char *m4 = trace_file(dirs[4], "main.pallas", &n4);
	int32_t storage = 0;
	if (m4 != NULL && n4 > 33)
		memcpy(&storage, m4 + 29, 4);
	CHECK_EQ_I64(storage, 3);              /* weft's delta, not Pallas's 1 */
	free(m4);
	o.compression = WEFT_PALLAS_WRITE_RAW;
	dirs[5] = write_values("values-raw-delta", &o, &g[5]);
	for (int i = 0; i < 6; i++) {
		CHECK_EQ_I64(count_files(dirs[i], ".tmp"), 0);
		free(g[i].r), free(dirs[i]);
	}
}

/* Writer memory: the grammar stays small and values go to disk as sub-arrays fill. */
static void body_many(weft_pallas_thread *t, recording *g, const void *arg)
{
	(void)g;
	const uint64_t *n = arg;
	uint64_t ts = 0;
	weft_pallas_thread_stats early, late;
	for (uint64_t i = 0; i < *n; i++) {
		for (uint32_t f = 1; f <= 3; f++) {
			weft_pallas_record_enter(t, NULL, ts, f);
			ts += 50 + (i * 7 + f) % 13;
			weft_pallas_record_leave(t, NULL, ts, f);
			ts += 20 + i % 5;
		}
		if (i == *n / 10)
			weft_pallas_thread_get_stats(t, &early);
	}
	weft_pallas_thread_get_stats(t, &late);
	CHECK_EQ_U64(late.events, *n * 6);
	CHECK(late.memory_peak < 4u << 20);
	/* What grows is one 48-byte header per 1000 values (18 values per
	 * iteration), in arrays that double. */
	uint64_t headers = *n * 18 / 1000 * 48 * 2;
	if (late.memory_peak - early.memory_peak > headers + 65536)
		tu_fail(__FILE__, __LINE__, "memory grew from %llu to %llu bytes",
			(unsigned long long)early.memory_peak, (unsigned long long)late.memory_peak);
	CHECK(late.subarrays_shared * 3 > late.subarrays); /* copies are common */
}

static void test_memory(void)
{
	uint64_t n = 300000;   /* 1.8 M events */
	recording g = { 0 };
	char *dir = write_one("memory", NULL, body_many, &n, &g);
	free(dir);
}

/* ---- Attribute lists spilled to the scratch file --------------------------------------------------------- */

/* The attribute bytes an event must end up with, built here value by value. */
typedef struct xbytes {
	uint8_t *b;
	size_t n, cap;
	uint32_t occurrences;   /* of the event, with or without a list */
} xbytes;

static void xbytes_put(xbytes *x, const void *p, size_t n)
{
	if (x->n + n > x->cap) {
		x->cap = (x->n + n) * 2;
		x->b = realloc(x->b, x->cap);
		REQUIRE(x->b != NULL);
	}
	memcpy(x->b + x->n, p, n);
	x->n += n;
}

/* A list being built: the writer's, and the bytes Pallas stores for it. */
typedef struct xlist {
	weft_pallas_attrs l;
	uint8_t bytes[WEFT_PALLAS_ATTRS_BYTES];
	uint16_t size;
	uint8_t count;
} xlist;

static void xlist_init(xlist *x)
{
	weft_pallas_attrs_init(&x->l);
	x->size = 7, x->count = 0;
}

/* Adds value `v` of attribute `ref` in `size` bytes (1, 2, 4 or 8: u8, u16, u32, u64). */
static void xlist_add(xlist *x, uint32_t ref, uint64_t v, int size)
{
	int rc = size == 1 ? weft_pallas_attrs_add_u8(&x->l, ref, (uint8_t)v) :
		 size == 2 ? weft_pallas_attrs_add_u16(&x->l, ref, (uint16_t)v) :
		 size == 4 ? weft_pallas_attrs_add_u32(&x->l, ref, (uint32_t)v) :
			     weft_pallas_attrs_add_u64(&x->l, ref, v);
	CHECK_EQ_I64(rc, 0);
	uint16_t entry = (uint16_t)(6 + size);
	memcpy(x->bytes + x->size, &entry, 2);
	memcpy(x->bytes + x->size + 2, &ref, 4);
	memcpy(x->bytes + x->size + 6, &v, (size_t)size); /* little-endian: the low bytes */
	x->size = (uint16_t)(x->size + entry);
	x->count++;
}

/* Occurrence `x->occurrences` of an event, with list `l` (NULL: none): its expected bytes. */
static const weft_pallas_attrs *expect_list(xbytes *x, xlist *l)
{
	uint32_t index = x->occurrences++;
	if (l == NULL)
		return NULL;
	uint8_t head[7];
	memcpy(head, &index, 4);
	memcpy(head + 4, &l->size, 2);
	head[6] = l->count;
	xbytes_put(x, head, 7);
	xbytes_put(x, l->bytes + 7, l->size - 7u);
	return &l->l;
}

/* The expected attribute bytes of the events of body_attrs: Enter/Leave 1..3, Generic 0. */
typedef struct xattrs {
	xbytes enter[4], leave[4], generic;
	uint32_t iterations;
} xattrs;

/*
 * Per iteration, Enter of regions 1 to 3, each with a list of 1 to 5
 * values of every size, a Leave with a list every third time, and every
 * 97th iteration a Generic event with the longest list (127 u64 values):
 * each Enter event gathers far more than a chunk of attributes, and all
 * of them more than the scratch buffer, so chunks are read back from the
 * scratch file at close.
 */
static void body_attrs(weft_pallas_thread *t, recording *g, const void *arg)
{
	xattrs *x = (xattrs *)arg;
	static const int sizes[5] = { 1, 2, 4, 8, 4 };
	uint64_t ts = 100;
	xlist l;
	for (uint32_t i = 0; i < x->iterations; i++) {
		for (uint32_t f = 1; f <= 3; f++) {
			xlist_init(&l);
			for (uint32_t k = 0; k <= (i + f) % 5; k++)
				xlist_add(&l, k + 1, (uint64_t)i * 0x9E3779B97F4A7C15ull + k, sizes[k]);
			CHECK(weft_pallas_record_enter(t, expect_list(&x->enter[f], &l), ts, f) == 0);
			note(g, 2, f, ts++);
			xlist_init(&l);
			xlist_add(&l, 7, i, 4);
			CHECK(weft_pallas_record_leave(t, expect_list(&x->leave[f], i % 3 ? NULL : &l),
						       ts, f) == 0);
			note(g, 3, f, ts++);
		}
		if (i % 97 != 0)
			continue;
		xlist_init(&l);
		for (uint32_t k = 0; k < WEFT_PALLAS_ATTRS_MAX; k++)
			xlist_add(&l, 100 + k, (uint64_t)i << 32 | k, 8);
		CHECK(weft_pallas_record_generic(t, expect_list(&x->generic, &l), ts, 0) == 0);
		note(g, 58, 0, ts++);
	}
}

/* The event of decoded thread `d` with record `rec` and first payload u32 `arg`. */
static const struct dev *find_event_arg(const dthread *d, int32_t record, uint32_t arg)
{
	for (uint64_t i = 0; i < d->nev; i++) {
		uint32_t a = 0;
		if (d->ev[i].size >= 9)
			memcpy(&a, d->ev[i].payload, 4);
		if (d->ev[i].record == record && a == arg)
			return &d->ev[i];
	}
	return NULL;
}

/* Event (record, arg) of `d` stores exactly the bytes of `want`. */
static void check_attr_bytes(const dthread *d, int32_t record, uint32_t arg, const xbytes *want)
{
	const struct dev *e = find_event_arg(d, record, arg);
	REQUIRE(e != NULL);
	CHECK_EQ_U64(e->attr_len, want->n);
	if (e->attr_len == want->n && want->n > 0)
		CHECK_EQ_MEM(e->attrs, want->b, want->n);
}

static void free_xattrs(xattrs *x)
{
	for (int f = 0; f < 4; f++)
		free(x->enter[f].b), free(x->leave[f].b);
	free(x->generic.b);
}

/*
 * Attribute lists over many chunks, in both layouts, with and without
 * helpers and compression: every event's stored bytes are those built
 * here (the chunks come back in order), the events replay as recorded.
 */
static void test_attrs_spilled(void)
{
	static const struct { const char *name; int compact, helpers, raw; } cases[] = {
		{ "attrs", 0, 0, 0 }, { "attrs-helpers", 0, 2, 0 }, { "attrs-raw", 0, 0, 1 },
		{ "attrs-compact", 1, 0, 0 }, { "attrs-compact-helpers", 1, 2, 0 },
	};
	for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
		weft_pallas_write_options o;
		weft_pallas_write_options_init(&o);
		o.layout = cases[c].compact ? WEFT_PALLAS_LAYOUT_COMPACT : WEFT_PALLAS_LAYOUT_PALLAS;
		o.compress_threads = cases[c].helpers;
		o.compression = cases[c].raw ? WEFT_PALLAS_WRITE_RAW : WEFT_PALLAS_WRITE_ZSTD;
		xattrs x;
		memset(&x, 0, sizeof x);
		x.iterations = 6000;
		recording g = { 0 };
		char *dir = write_one(cases[c].name, &o, body_attrs, &x, &g);
		dthread *d = check_replay(dir, 0, 0, &g);
		CHECK(x.enter[1].n > 20 * 8192);   /* many chunks per Enter event */
		for (uint32_t f = 1; f <= 3; f++) {
			check_attr_bytes(d, 2, f, &x.enter[f]);
			check_attr_bytes(d, 3, f, &x.leave[f]);
		}
		check_attr_bytes(d, 58, 0, &x.generic);
		CHECK_EQ_I64(count_files(dir, ".tmp"), 0);
		CHECK_EQ_I64(count_files(dir, NULL), 5); /* main, archive, thread and 2 .dat */
		free_thread(d);
		free_xattrs(&x);
		free(g.r), free(dir);
	}
}

/* The 3-function loop with two u32 attributes on every Enter (body_many with lists). */
static void body_many_attrs(weft_pallas_thread *t, recording *g, const void *arg)
{
	(void)g;
	const uint64_t *n = arg;
	uint64_t ts = 0;
	weft_pallas_thread_stats early, late;
	weft_pallas_attrs l;
	for (uint64_t i = 0; i < *n; i++) {
		for (uint32_t f = 1; f <= 3; f++) {
			weft_pallas_attrs_init(&l);
			weft_pallas_attrs_add_u32(&l, 1, (uint32_t)i);
			weft_pallas_attrs_add_u32(&l, 2, (uint32_t)(i * 2654435761u) ^ f);
			weft_pallas_record_enter(t, &l, ts, f);
			ts += 50 + (i * 7 + f) % 13;
			weft_pallas_record_leave(t, NULL, ts, f);
			ts += 20 + i % 5;
		}
		if (i == *n / 10)
			weft_pallas_thread_get_stats(t, &early);
	}
	weft_pallas_thread_get_stats(t, &late);
	CHECK_EQ_U64(late.events, *n * 6);
	/* 27 bytes of attributes per Enter (24 MB here) stay on disk: memory
	 * grows with the value headers only, as without attributes, plus one
	 * 8-byte entry per 8 KiB chunk. */
	CHECK(late.memory_peak < 4u << 20);
	uint64_t headers = *n * 18 / 1000 * 48 * 2, chunks = *n * 3 * 27 / 8192 * 8 * 2;
	if (late.memory_peak - early.memory_peak > headers + chunks + 65536)
		tu_fail(__FILE__, __LINE__, "memory grew from %llu to %llu bytes",
			(unsigned long long)early.memory_peak, (unsigned long long)late.memory_peak);
}

/* Writer memory with attributes on every Enter: bounded as without them. */
static void test_memory_attrs(void)
{
	uint64_t n = 300000;   /* 1.8 M events, 900 000 attribute lists */
	recording g = { 0 };
	char *dir = write_one("memory-attrs", NULL, body_many_attrs, &n, &g);
	size_t size = 0;
	free(trace_file(dir, "archive_0/thread_0/thread.pallas", &size));
	CHECK(size > n * 3 * 27);
	free(dir);
}

/* ---- Empty threads ---------------------------------------------------------------------------------------- */

/*
 * The thread.pallas of a thread without events, as Pallas 0.20 writes it
 * (its threadClose makes the root from the empty depth-0 list, and a
 * sequence of 0 tokens is stored without its vectors): the header with
 * 0 events, 1 sequence, 0 loops, root 0 and no first timestamp (-1), the
 * empty event id map, the root (type 0, 0 tokens), the sequence id map
 * {0} and the empty loop id map.
 */
static size_t empty_thread_bytes(uint32_t loc, uint32_t lg, uint8_t *b)
{
	const uint64_t none = UINT64_MAX, zero = 0, one = 1;
	size_t n = 0;
	memcpy(b + n, &loc, 4), n += 4;
	memcpy(b + n, &lg, 4), n += 4;
	memcpy(b + n, &zero, 8), n += 8;         /* events */
	memcpy(b + n, &one, 8), n += 8;          /* sequences */
	memcpy(b + n, &zero, 8), n += 8;         /* loops */
	memcpy(b + n, &zero, 4), n += 4;         /* root sequence id */
	memcpy(b + n, &none, 8), n += 8;         /* first timestamp */
	memcpy(b + n, &zero, 8), n += 8;         /* event id map */
	memcpy(b + n, &zero, 4), n += 4;         /* the root: type 0 (block), */
	memcpy(b + n, &zero, 8), n += 8;         /* 0 tokens, nothing more */
	memcpy(b + n, &one, 8), n += 8;          /* sequence id map {0} */
	memcpy(b + n, &zero, 4), n += 4;
	memcpy(b + n, &zero, 8), n += 8;         /* loop id map */
	return n;
}

/*
 * A thread created and closed without a record, next to one that
 * records: its files are Pallas's for an empty thread (its .dat files
 * empty), the other thread is unaffected, in both layouts and with
 * helper threads.
 */
static void test_empty_thread(void)
{
	static const struct { const char *name; int compact, helpers; } cases[] = {
		{ "empty", 0, 0 }, { "empty-compact-helpers", 1, 2 },
	};
	for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
		weft_pallas_write_options o;
		weft_pallas_write_options_init(&o);
		o.layout = cases[c].compact ? WEFT_PALLAS_LAYOUT_COMPACT : WEFT_PALLAS_LAYOUT_PALLAS;
		o.compress_threads = cases[c].helpers;
		char *dir = join(scratch, cases[c].name);
		weft_pallas_global *gl = ref_global(dir, &o, (const char *const[]){ "P", "f" }, 2, 1,
						    WEFT_PALLAS_NO_PARENT);
		weft_pallas_archive *a = NULL;
		REQUIRE(weft_pallas_archive_create(gl, 0, &a) == 0);
		weft_pallas_thread *t[2];
		for (uint32_t k = 0; k < 2; k++) {
			CHECK(weft_pallas_add_location(weft_pallas_archive_defs(a), k, 0, 0) == 0);
			REQUIRE(weft_pallas_thread_create(a, k, &t[k]) == 0);
		}
		recording g = { 0 };
		uint64_t ts = 10;
		for (int i = 0; i < 3; i++)
			call(t[1], &g, 1, &ts);
		CHECK(weft_pallas_thread_close(t[0]) == 0);
		CHECK(weft_pallas_thread_close(t[1]) == 0);
		weft_pallas_thread_stats st;
		weft_pallas_thread_get_stats(t[0], &st);
		CHECK_EQ_U64(st.events, 0);
		CHECK_EQ_U64(st.distinct_events, 0);
		CHECK_EQ_U64(st.sequences, 1);
		store_all(gl, a);
		uint8_t want[128];
		size_t n = 0, wn = empty_thread_bytes(0, 0, want);
		char *b = trace_file(dir, "archive_0/thread_0/thread.pallas", &n);
		REQUIRE(b != NULL);
		CHECK_EQ_U64(n, wn);
		if (n == wn)
			CHECK_EQ_MEM(b, want, wn);
		free(b);
		static const char *const dats[2] = { "archive_0/thread_0/event_durations.dat",
						     "archive_0/thread_0/sequence_durations.dat" };
		for (int f = 0; f < 2; f++) {
			b = trace_file(dir, dats[f], &n);
			CHECK(b != NULL && n == 0);
			free(b);
		}
		dthread *d = decode_thread(dir, "main.pallas", 0, 0);
		CHECK_EQ_U64(d->nev, 0);
		CHECK_EQ_U64(d->seq[0].n, 0);
		free_thread(d);
		free_thread(check_replay(dir, 0, 1, &g));
		CHECK_EQ_I64(count_files(dir, ".tmp"), 0);
		free(g.r), free(dir);
	}
}

/* ---- Threads ------------------------------------------------------------------------------------------------ */

typedef struct worker {
	weft_pallas_thread *t;
	recording g;
	uint32_t id;
} worker;

/* One recording thread: its own pattern, shifted in time. */
static void *worker_main(void *arg)
{
	worker *w = arg;
	uint64_t ts = w->id * 1000;
	for (int i = 0; i < 4000; i++)
		for (uint32_t f = 1; f <= 2 + w->id; f++) {
			call(w->t, &w->g, f, &ts);
			ts += (uint64_t)(i % 7);
		}
	return NULL;
}

static void test_threads(int helpers)
{
	weft_pallas_write_options o;
	weft_pallas_write_options_init(&o);
	o.compress_threads = helpers;
	char name[64];
	snprintf(name, sizeof name, "threads-%d", helpers);
	char *dir = join(scratch, name);
	weft_pallas_global *gl = NULL;
	REQUIRE(weft_pallas_global_create(dir, "trace.pallas", &o, &gl) == 0);
	weft_pallas_archive *a = NULL;
	REQUIRE(weft_pallas_archive_create(gl, 0, &a) == 0);
	worker w[4];
	pthread_t th[4];
	for (uint32_t i = 0; i < 4; i++) {
		memset(&w[i], 0, sizeof w[i]);
		w[i].id = i;
		REQUIRE(weft_pallas_thread_create(a, i, &w[i].t) == 0);
		CHECK(weft_pallas_add_location(weft_pallas_archive_defs(a), i, 0, 0) == 0);
	}
	for (int i = 0; i < 4; i++)
		REQUIRE(pthread_create(&th[i], NULL, worker_main, &w[i]) == 0);
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < 4; i++)
		CHECK(weft_pallas_thread_close(w[i].t) == 0);
	CHECK(weft_pallas_archive_store(a) == 0);
	CHECK(weft_pallas_global_store(gl) == 0);
	weft_pallas_global_free(gl);
	for (uint32_t i = 0; i < 4; i++) {
		dthread *d = decode_thread(dir, "trace.pallas", 0, i);
		size_t n = 0;
		occ *o2 = replay_thread(d, &n);
		CHECK_EQ_U64(n, w[i].g.n);
		for (size_t k = 0; k < n && k < w[i].g.n; k++)
			if (o2[k].ts != w[i].g.r[k].ts) {
				tu_fail(__FILE__, __LINE__, "thread %u event %zu: ts %llu, want %llu", i, k,
					(unsigned long long)o2[k].ts, (unsigned long long)w[i].g.r[k].ts);
				break;
			}
		free(o2);
		free_thread(d);
		free(w[i].g.r);
	}
	free(dir);
}

/* ---- Errors ------------------------------------------------------------------------------------------------- */

static void test_errors(void)
{
	weft_pallas_global *g = NULL;
	weft_pallas_archive *a = NULL;
	weft_pallas_thread *t = NULL;
	weft_pallas_write_options o;
	/* Bad directory: below a regular file. */
	char *file = join(scratch, "plain-file");
	FILE *f = fopen(file, "w");
	REQUIRE(f != NULL);
	fclose(f);
	char *bad = join(file, "trace");
	CHECK(weft_pallas_global_create(bad, "main", NULL, &g) == WEFT_ENOTFOUND);
	CHECK(g == NULL);
	CHECK(strstr(weft_last_error(), "plain-file") != NULL);
	CHECK(weft_pallas_archive_create_standalone(bad, 0, NULL, &a) < 0);
	free(bad), free(file);
	/* NULL arguments and bad names or options. */
	CHECK(weft_pallas_global_create(NULL, "main", NULL, &g) == WEFT_EINVAL);
	CHECK(weft_pallas_global_create(scratch, "a/b", NULL, &g) == WEFT_EINVAL);
	CHECK(weft_pallas_global_create(scratch, "", NULL, &g) == WEFT_EINVAL);
	CHECK(weft_pallas_global_create(scratch, "main", NULL, NULL) == WEFT_EINVAL);
	weft_pallas_write_options_init(&o);
	o.zstd_level = 0;
	CHECK(weft_pallas_global_create(scratch, "x", &o, &g) == WEFT_EINVAL);
	CHECK(strstr(weft_last_error(), "zstd_level") != NULL);
	weft_pallas_write_options_init(&o);
	o.compression = 3;
	CHECK(weft_pallas_global_create(scratch, "x", &o, &g) == WEFT_EINVAL);
	CHECK(weft_pallas_add_string(NULL, 0, "x") == WEFT_EINVAL);
	CHECK(weft_pallas_archive_create(NULL, 0, &a) == WEFT_EINVAL);
	CHECK(weft_pallas_thread_create(NULL, 0, &t) == WEFT_EINVAL);
	CHECK(weft_pallas_record_enter(NULL, NULL, 1, 1) == WEFT_EINVAL);
	CHECK(weft_pallas_thread_close(NULL) == WEFT_EINVAL);
	CHECK(weft_pallas_archive_store(NULL) == WEFT_EINVAL);
	CHECK(weft_pallas_global_store(NULL) == WEFT_EINVAL);
	CHECK(weft_pallas_global_defs(NULL) == NULL && weft_pallas_archive_defs(NULL) == NULL);
	weft_pallas_global_free(NULL);
	weft_pallas_archive_free(NULL);
	weft_pallas_thread_free(NULL);
	weft_pallas_thread_get_stats(NULL, NULL);

	/* A trace that exists is not replaced unless asked. */
	char *dir = join(scratch, "errors");
	REQUIRE(weft_pallas_global_create(dir, "main", NULL, &g) == 0);
	weft_pallas_defs *d = weft_pallas_global_defs(g);
	CHECK(weft_pallas_add_string(d, 0, NULL) == WEFT_EINVAL);
	CHECK(weft_pallas_add_attribute(d, 0, 0, 0, 26) == WEFT_EINVAL);
	CHECK(weft_pallas_add_group(d, 0, 0, 0, 0, NULL, 2) == WEFT_EINVAL);
	CHECK(weft_pallas_add_metadata(d, "k", NULL) == WEFT_EINVAL);
	CHECK(weft_pallas_add_metadata(d, "k", "v1") == 0);
	CHECK(weft_pallas_add_metadata(d, "k", "v2") == 0);
	CHECK(weft_pallas_add_metadata(d, "a", "first") == 0);
	uint32_t members[2] = { 0, 1 };
	CHECK(weft_pallas_add_group(d, 3, 0, 1, 2, members, 2) == 0);
	CHECK(weft_pallas_add_comm(d, 1, 0, 3, WEFT_PALLAS_NO_PARENT) == 0);
	CHECK(weft_pallas_add_attribute(d, 1, 0, 0, WEFT_PALLAS_TYPE_DOUBLE) == 0);
	CHECK(weft_pallas_global_store(g) == 0);
	weft_pallas_global *g2 = NULL;
	CHECK(weft_pallas_global_create(dir, "main.pallas", NULL, &g2) == WEFT_EEXIST);
	CHECK(strstr(weft_last_error(), "main.pallas") != NULL);
	weft_pallas_write_options_init(&o);
	o.replace = 1;
	CHECK(weft_pallas_global_create(dir, "main.pallas", &o, &g2) == 0);
	weft_pallas_global_free(g2);

	/* Duplicates, an open thread, records after close. */
	REQUIRE(weft_pallas_archive_create(g, 0, &a) == 0);
	weft_pallas_archive *a2 = NULL;
	CHECK(weft_pallas_archive_create(g, 0, &a2) == WEFT_EEXIST);
	REQUIRE(weft_pallas_thread_create(a, 0, &t) == 0);
	weft_pallas_thread *t2 = NULL;
	CHECK(weft_pallas_thread_create(a, 0, &t2) == WEFT_EEXIST);
	CHECK(weft_pallas_record_raw(t, NULL, 1, 0, 0, NULL, 0) == WEFT_EINVAL);
	CHECK(weft_pallas_record_raw(t, NULL, 1, 60, 0, NULL, 0) == WEFT_EINVAL);
	uint8_t big[300] = { 0 };
	CHECK(weft_pallas_record_raw(t, NULL, 1, 58, 0, big, 251) == WEFT_EINVAL);
	CHECK(weft_pallas_record_raw(t, NULL, 1, 58, 3, big, 4) == WEFT_EINVAL);
	CHECK(weft_pallas_record_raw(t, NULL, 1, 58, 0, big, 250) == 0);
	weft_pallas_attrs l;
	weft_pallas_attrs_init(&l);
	for (int i = 0; i < WEFT_PALLAS_ATTRS_MAX; i++)
		CHECK(weft_pallas_attrs_add_u64(&l, 1, (uint64_t)i) == 0);
	CHECK(weft_pallas_attrs_add_u8(&l, 1, 1) == WEFT_EINVAL);
	CHECK(weft_pallas_record_generic(t, &l, 2, 0) == WEFT_EINVAL);
	weft_pallas_attrs_init(&l);
	CHECK(weft_pallas_attrs_add_ref(&l, 1, WEFT_PALLAS_TYPE_DOUBLE, 0) == WEFT_EINVAL);
	CHECK(weft_pallas_record_generic(t, &l, 2, 0) == WEFT_EINVAL);
	CHECK(weft_pallas_record_generic(t, NULL, 3, 0) == 0);
	CHECK(weft_pallas_archive_store(a) == WEFT_EINVAL);
	CHECK(strstr(weft_last_error(), "still open") != NULL);
	CHECK(weft_pallas_thread_close(t) == 0);
	CHECK(weft_pallas_thread_close(t) == WEFT_EINVAL);
	CHECK(weft_pallas_record_enter(t, NULL, 4, 1) == WEFT_EINVAL);
	CHECK(strstr(weft_last_error(), "closed") != NULL);
	CHECK(strstr(weft_last_error(), "thread_0") != NULL);
	/* An abandoned thread writer leaves nothing behind. */
	REQUIRE(weft_pallas_thread_create(a, 1, &t2) == 0);
	CHECK(weft_pallas_record_enter(t2, NULL, WEFT_PALLAS_TIME_NOW, 1) == 0);
	CHECK(weft_pallas_record_leave(t2, NULL, WEFT_PALLAS_TIME_NOW, 1) == 0);
	weft_pallas_thread_free(t2);
	char *gone = join(dir, "archive_0/thread_1");
	CHECK(access(gone, F_OK) != 0);
	free(gone);
	CHECK(weft_pallas_archive_store(a) == 0);
	weft_pallas_global_free(g);
	CHECK_EQ_I64(count_files(dir, ".tmp"), 0);
	/* The archive counts the one closed thread. */
	size_t n = 0;
	char *arch = trace_file(dir, "archive_0/archive.pallas", &n);
	REQUIRE(arch != NULL && n >= 8);
	uint32_t nb;
	memcpy(&nb, arch + 4, 4);
	CHECK_EQ_U64(nb, 1);
	free(arch);
	/* The main file: sorted metadata (the later value kept), group and comm. */
	char *mainf = trace_file(dir, "main.pallas", &n);
	REQUIRE(mainf != NULL);
	static const char meta[] = "\x02\0\0\0\0\0\0\0a\0\x06\0\0\0\0\0\0\0first\0"
				   "\x02\0\0\0\0\0\0\0k\0\x03\0\0\0\0\0\0\0v2\0";
	CHECK(n > sizeof meta && memcmp(mainf + n - (sizeof meta - 1), meta, sizeof meta - 1) == 0);
	free(mainf);
	free(dir);
}

/* A standalone archive (another rank's): its own options and files. */
static void test_standalone(void)
{
	char *dir = join(scratch, "standalone");
	weft_pallas_archive *a = NULL;
	REQUIRE(weft_pallas_archive_create_standalone(dir, 3, NULL, &a) == 0);
	weft_pallas_thread *t = NULL;
	REQUIRE(weft_pallas_thread_create(a, 7, &t) == 0);
	CHECK(weft_pallas_record_generic(t, NULL, 1, 0) == 0);
	CHECK(weft_pallas_thread_close(t) == 0);
	CHECK(weft_pallas_archive_store(a) == 0);
	weft_pallas_archive_free(a);
	size_t n = 0;
	char *b = trace_file(dir, "archive_3/thread_7/thread.pallas", &n);
	CHECK(b != NULL && n > 44);
	uint32_t ids[2] = { 0, 0 };
	if (b != NULL)
		memcpy(ids, b, 8);
	CHECK_EQ_U64(ids[0], 7);
	CHECK_EQ_U64(ids[1], 3);
	free(b), free(dir);
}

int main(void)
{
	scratch = tu_mkdtemp("pallas-writer");
	REQUIRE(scratch != NULL);
	test_ref_enterleave(WEFT_PALLAS_WRITE_ZSTD, "wb_enterleave_f3_n1000_t2_logical");
	test_ref_enterleave(WEFT_PALLAS_WRITE_RAW, "wb_enterleave_f3_n1000_t2_logical_None");
	test_ref_generic();
	test_ref_pattern();
	test_long_patterns();
	test_window_same();
	test_nested();
	test_open_blocks();
	test_records();
	test_values();
	test_memory();
	test_attrs_spilled();
	test_memory_attrs();
	test_empty_thread();
	test_threads(0);
	test_threads(2);
	test_errors();
	test_standalone();
	return tu_finish_dir(scratch);
}
