/* SPDX-License-Identifier: MIT */
/*
 * test_ross_reader.c - the ROSS reader against real runs and hand-made
 * bad files.
 *
 * Golden: for every .bin of tests/data/ross/<run>/<np>/, every record
 * equals the matching line of its .golden.jsonl (same count, order and
 * byte offset; ints exact; floats bit for bit as float32 or float64,
 * infinities included; model data hex equal), through the merged cursor
 * of the run directory, of each file alone, and the per-stream cursors.
 * Then: kind detection from the data (neutral names, a misleading name,
 * forced kinds), byte-swapped files, the model schema, the clock rate,
 * time clamping, small read windows, and bad input: truncation at every
 * length, impossible sizes, model sizes past the end, garbage with and
 * without resync, and random corruptions that must never crash (CI runs
 * this under ASan and UBSan).
 */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "testutil.h"
#include "weft/weft.h"

static char data_root[4096];
static char *dir;

/* ---- Golden files: flat JSON objects, one per line ----------------------------- */

typedef struct gval {
	const char *key;
	size_t key_len;
	char kind;            /* 'i' integer, 'f' float, 's' string */
	const char *s;
	size_t s_len;
	int negative;
	uint64_t u;
	int64_t i;
	double d;
} gval;

typedef struct grec {
	gval v[40];
	int n;
} grec;

typedef struct golden {
	char name[256];       /* the .bin file name */
	char *text;
	grec *recs;
	size_t count, next;
} golden;

/* A number token: integers exactly, floats (and Infinity, NaN) with strtod. */
static void parse_number(const char *tok, gval *v)
{
	if (strpbrk(tok, ".eEnNI") != NULL) {
		v->kind = 'f';
		v->d = strtod(tok, NULL);
		return;
	}
	v->kind = 'i';
	v->negative = tok[0] == '-';
	if (v->negative)
		v->i = strtoll(tok, NULL, 10);
	else
		v->u = strtoull(tok, NULL, 10);
	v->i = v->negative ? v->i : (int64_t)v->u;
}

/* One line `{"key": value, ...}` (no escapes in these files). */
static int parse_line(char *p, grec *r)
{
	r->n = 0;
	while (*p == ' ')
		p++;
	if (*p++ != '{')
		return -1;
	for (;;) {
		while (*p == ' ' || *p == ',')
			p++;
		if (*p == '}')
			return 0;
		if (*p++ != '"' || r->n >= 40)
			return -1;
		gval *v = &r->v[r->n++];
		memset(v, 0, sizeof *v);
		v->key = p;
		while (*p != '"' && *p != '\0')
			p++;
		v->key_len = (size_t)(p - v->key);
		p++;
		while (*p == ' ' || *p == ':')
			p++;
		if (*p == '"') {
			v->kind = 's';
			v->s = ++p;
			while (*p != '"' && *p != '\0')
				p++;
			v->s_len = (size_t)(p - v->s);
			p++;
			continue;
		}
		char tok[64];
		size_t n = strcspn(p, ",} ");
		if (n == 0 || n >= sizeof tok)
			return -1;
		memcpy(tok, p, n);
		tok[n] = '\0';
		parse_number(tok, v);
		p += n;
	}
}

/* Loads <dir>/<name without .bin>.golden.jsonl. */
static void golden_load(golden *g, const char *run, const char *name)
{
	char path[8192];
	size_t size;
	memset(g, 0, sizeof *g);
	snprintf(g->name, sizeof g->name, "%s", name);
	REQUIRE(snprintf(path, sizeof path, "%s/%.*s.golden.jsonl", run,
			 (int)(strlen(name) - 4), name) < (int)sizeof path);
	g->text = tu_read_file(path, &size);
	REQUIRE(g->text != NULL);
	size_t lines = 0;
	for (size_t i = 0; i < size; i++)
		lines += g->text[i] == '\n';
	g->recs = calloc(lines + 1, sizeof *g->recs);
	REQUIRE(g->recs != NULL);
	for (char *line = g->text; *line != '\0';) {
		char *nl = strchr(line, '\n');
		if (nl != NULL)
			*nl = '\0';
		if (*line != '\0') {
			REQUIRE(parse_line(line, &g->recs[g->count]) == 0);
			g->count++;
		}
		if (nl == NULL)
			break;
		line = nl + 1;
	}
}

static void golden_free(golden *g)
{
	free(g->text);
	free(g->recs);
}

static const gval *gfind(const grec *r, const char *key)
{
	for (int i = 0; i < r->n; i++)
		if (r->v[i].key_len == strlen(key) && memcmp(r->v[i].key, key, r->v[i].key_len) == 0)
			return &r->v[i];
	return NULL;
}

/* ---- Comparing an event with its golden record -------------------------------------- */

static long mismatches;

/* Reports a mismatch (the first ones only: one bad decode breaks every line). */
static void mismatch(const char *file, uint64_t offset, const char *what, const gval *v)
{
	if (++mismatches <= 20)
		tu_fail(__FILE__, __LINE__, "%s: byte %llu: %s (golden key %.*s)", file,
			(unsigned long long)offset, what, v ? (int)v->key_len : 0,
			v ? v->key : "");
}

/* Bit equality of two floats of the stored width (NaN equals NaN). */
static int same_float(double a, double b, weft_type t)
{
	if (isnan(a) || isnan(b))
		return isnan(a) && isnan(b);
	if (t == WEFT_TYPE_F32) {
		float x = (float)a, y = (float)b;
		return memcmp(&x, &y, sizeof x) == 0;
	}
	return memcmp(&a, &b, sizeof a) == 0;
}

/* The lowercase hex of n bytes equals the golden text. */
static int same_hex(const uint8_t *p, size_t n, const gval *v)
{
	static const char digits[] = "0123456789abcdef";
	if (v->kind != 's' || v->s_len != 2 * n)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (v->s[2 * i] != digits[p[i] >> 4] || v->s[2 * i + 1] != digits[p[i] & 15])
			return 0;
	return 1;
}

/* One field against its golden value, by the field's type. */
static int same_value(const weft_field *f, const gval *v)
{
	switch (f->type) {
	case WEFT_TYPE_BYTES:
		return same_hex((const uint8_t *)f->v.s.ptr, f->v.s.len, v);
	case WEFT_TYPE_U8: case WEFT_TYPE_U16: case WEFT_TYPE_U32: case WEFT_TYPE_U64:
		return v->kind == 'i' && !v->negative && v->u == f->v.u;
	case WEFT_TYPE_I8: case WEFT_TYPE_I16: case WEFT_TYPE_I32: case WEFT_TYPE_I64:
		return v->kind == 'i' && v->i == f->v.i;
	case WEFT_TYPE_F32: case WEFT_TYPE_F64:
		return v->kind == 'f' && same_float(v->d, f->v.f, f->type);
	default:
		return 0;
	}
}

/* The event is the golden record: code, offset, every field by name and value. */
static void compare_event(const weft_trace *t, const weft_event *ev, const grec *r,
			  const char *file)
{
	const gval *kind = gfind(r, "kind"), *offset = gfind(r, "offset");
	REQUIRE(kind != NULL && offset != NULL);
	if (ev->code_len != kind->s_len || memcmp(ev->code, kind->s, kind->s_len) != 0)
		mismatch(file, ev->offset, "code", kind);
	if (offset->u != ev->offset)
		mismatch(file, ev->offset, "offset", offset);
	weft_field f[64];
	int n = weft_event_fields(t, ev, f, 64);
	if (n != r->n - 2) {
		mismatch(file, ev->offset, "field count", NULL);
		return;
	}
	int k = 0;
	for (int i = 0; i < r->n; i++) {
		const gval *v = &r->v[i];
		if (v == kind || v == offset)
			continue;
		if (f[k].name_len != v->key_len || memcmp(f[k].name, v->key, v->key_len) != 0)
			mismatch(file, ev->offset, "field name", v);
		else if (!same_value(&f[k], v))
			mismatch(file, ev->offset, "field value", v);
		k++;
	}
	/* The event time is the real time in ns, except for ANALYSIS_MODEL,
	 * whose real time ROSS leaves unset (tiny garbage: 0 ns). */
	const gval *rt = gfind(r, "real_time");
	if (rt != NULL && rt->d >= 0 && ev->time != (uint64_t)(rt->d * 1e9 + 0.5))
		mismatch(file, ev->offset, "event time", rt);
}

/* ---- Opening ------------------------------------------------------------------------- */

static weft_trace *open_ok(const char *path, const weft_open_options *o)
{
	weft_trace *t = NULL;
	int rc = weft_trace_open(path, o, &t);
	if (rc < 0)
		fprintf(stderr, "open %s: %s\n", path, weft_last_error());
	REQUIRE(rc == 0);
	CHECK(weft_trace_format(t) == WEFT_FORMAT_ROSS);
	return t;
}

/* The diagnostic whose message contains `text`, or NULL. */
static const weft_diag *find_diag(const weft_trace *t, const char *text)
{
	for (size_t i = 0; i < weft_trace_diag_count(t); i++)
		if (strstr(weft_trace_diag(t, i)->message, text) != NULL)
			return weft_trace_diag(t, i);
	return NULL;
}

static void print_diags(const weft_trace *t)
{
	for (size_t i = 0; i < weft_trace_diag_count(t); i++)
		fprintf(stderr, "  diag: %s:%llu: %s\n", weft_trace_diag(t, i)->file,
			(unsigned long long)weft_trace_diag(t, i)->offset,
			weft_trace_diag(t, i)->message);
}

/* Events of the merged cursor. */
static long count_events(weft_trace *t)
{
	weft_cursor *c;
	const weft_event *ev;
	long n = 0;
	REQUIRE(weft_cursor_create(t, NULL, &c) == 0);
	while (weft_cursor_next(c, &ev) == 1)
		n++;
	weft_cursor_free(c);
	return n;
}

/*
 * Every stream read alone gives its events in stored order with seq
 * 0, 1, ...; together as many as the merged cursor. Returns the total.
 */
static long check_stream_cursors(weft_trace *t)
{
	long total = 0;
	for (size_t s = 0; s < weft_trace_stream_count(t); s++) {
		weft_cursor *c;
		const weft_event *ev;
		uint64_t i = 0, last = 0;
		REQUIRE(weft_cursor_create_stream(t, (uint32_t)s, &c) == 0);
		while (weft_cursor_next(c, &ev) == 1) {
			CHECK_EQ_U64(ev->stream, s);
			CHECK_EQ_U64(ev->seq, i);
			CHECK(i == 0 || ev->offset > last);
			last = ev->offset;
			i++;
		}
		weft_cursor_free(c);
		total += (long)i;
	}
	return total;
}

/* ---- Golden runs ------------------------------------------------------------------------- */

/* The .bin files of a run directory, sorted; their count. */
static size_t list_bins(const char *run, char names[][256], size_t cap)
{
	DIR *d = opendir(run);
	struct dirent *e;
	size_t n = 0;
	REQUIRE(d != NULL);
	while ((e = readdir(d)) != NULL) {
		size_t len = strlen(e->d_name);
		if (len > 4 && strcmp(e->d_name + len - 4, ".bin") == 0 && n < cap)
			snprintf(names[n++], 256, "%s", e->d_name);
	}
	closedir(d);
	qsort(names, n, 256, (int (*)(const void *, const void *))strcmp);
	return n;
}

/* Every event of the cursor matched against the golden of its file. */
static void compare_cursor(weft_trace *t, golden *g, size_t ng)
{
	weft_cursor *c;
	const weft_event *ev;
	REQUIRE(weft_cursor_create(t, NULL, &c) == 0);
	for (size_t i = 0; i < ng; i++)
		g[i].next = 0;
	while (weft_cursor_next(c, &ev) == 1) {
		const char *file = weft_trace_stream(t, ev->stream)->file;
		golden *gf = NULL;
		for (size_t i = 0; i < ng; i++)
			if (strcmp(g[i].name, file) == 0)
				gf = &g[i];
		REQUIRE(gf != NULL);
		if (gf->next >= gf->count) {
			mismatch(file, ev->offset, "more records than the golden", NULL);
			continue;
		}
		compare_event(t, ev, &gf->recs[gf->next++], file);
	}
	weft_cursor_free(c);
	for (size_t i = 0; i < ng; i++)
		if (g[i].next != g[i].count)
			mismatch(g[i].name, WEFT_NO_OFFSET, "fewer records than the golden", NULL);
}

/* One run: the directory, then each file alone. */
static void test_golden_run(const char *run)
{
	static char names[16][256];
	golden g[16];
	size_t n = list_bins(run, names, 16);
	REQUIRE(n > 0);
	for (size_t i = 0; i < n; i++)
		golden_load(&g[i], run, names[i]);
	weft_trace *t = open_ok(run, NULL);
	if (weft_trace_diag_count(t) != 0)
		print_diags(t);
	CHECK_EQ_U64(weft_trace_diag_count(t), 0);
	compare_cursor(t, g, n);
	long total = 0;
	for (size_t i = 0; i < n; i++)
		total += (long)g[i].count;
	CHECK_EQ_I64(check_stream_cursors(t), total);
	weft_trace_free(t);
	for (size_t i = 0; i < n; i++) {
		char path[8192];
		REQUIRE(snprintf(path, sizeof path, "%s/%s", run, names[i]) < (int)sizeof path);
		t = open_ok(path, NULL);
		compare_cursor(t, &g[i], 1);
		weft_trace_free(t);
	}
	for (size_t i = 0; i < n; i++)
		golden_free(&g[i]);
}

/* Every run under tests/data/ross (<run>/<np>/). */
static void test_golden(void)
{
	char runs[64][256];
	size_t count = 0;
	DIR *d = opendir(data_root);
	struct dirent *e;
	REQUIRE(d != NULL);
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		char sub[4600];
		snprintf(sub, sizeof sub, "%s/%s", data_root, e->d_name);
		DIR *s = opendir(sub);
		struct dirent *f;
		if (s == NULL)
			continue;
		while ((f = readdir(s)) != NULL)
			if (f->d_name[0] != '.' && count < 64)
				REQUIRE(snprintf(runs[count++], 256, "%s/%s", e->d_name,
						 f->d_name) < 256);
		closedir(s);
	}
	closedir(d);
	CHECK(count >= 7);
	for (size_t i = 0; i < count; i++) {
		char path[8192];
		snprintf(path, sizeof path, "%s/%s", data_root, runs[i]);
		test_golden_run(path);
	}
}

/* ---- Files to break -------------------------------------------------------------------------- */

typedef struct buf {
	unsigned char *p;
	size_t len;
} buf;

static buf load(const char *rel)
{
	char path[8192];
	buf b;
	snprintf(path, sizeof path, "%s/%s", data_root, rel);
	b.p = (unsigned char *)tu_read_file(path, &b.len);
	REQUIRE(b.p != NULL);
	return b;
}

static char *write_file(const char *name, const void *p, size_t n)
{
	static char path[8192];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	FILE *f = fopen(path, "wb");
	REQUIRE(f != NULL);
	CHECK(fwrite(p, 1, n, f) == n);
	fclose(f);
	return path;
}

static uint32_t get32(const unsigned char *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return v;
}

static void put32(unsigned char *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

static const char *const GVT = "phold-gvt-pekplp/np2/ross-stats-gvt.bin";
static const char *const MODEL = "phold-model-gvt/np2/ross-stats-model.bin";
static const char *const IM = "im-everything/np1";

/* ---- Stream paths and metadata ---------------------------------------------------------------- */

static void test_paths(void)
{
	char path[8192];
	snprintf(path, sizeof path, "%s/%s", data_root, IM);
	weft_trace *t = open_ok(path, NULL);
	static const char *const want[] = {
		"gvt/pe.0", "gvt/pe.0/kp.1", "gvt/pe.0/kp.1/lp.1", "rt/pe.0/kp.3/lp.3",
		"vt/pe.0/kp.0/lp.0", "vt/pe.0/kp.0/lp.0/model", "model/pe.0/kp.2/lp.2",
		"evtrace/lp.2", "evtrace/lp.7",
	};
	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
		int s = weft_trace_stream_find(t, want[i]);
		CHECK(s >= 0);
		if (s < 0)
			fprintf(stderr, "  missing stream %s\n", want[i]);
	}
	CHECK(weft_trace_stream_find(t, "model/pe.0/kp.2/lp.2/model") < 0);
	const weft_node *root = weft_trace_node(t, 0);
	CHECK_EQ_STR(root->kind, "file");
	CHECK(strstr(root->metadata_json, "\"detected_from\":\"name and data\"") != NULL);
	CHECK(strstr(weft_trace_metadata_json(t), "\"files\":5") != NULL);
	int s = weft_trace_stream_find(t, "rt/pe.0");
	REQUIRE(s >= 0);
	const weft_stream_info *si = weft_trace_stream(t, (size_t)s);
	CHECK_EQ_STR(si->file, "ross-stats-rt.bin");
	CHECK(si->big_endian == 0 && si->finished == -1);
	weft_trace_free(t);
}

/* ---- Detection ------------------------------------------------------------------------------------ */

/* Opens a copy of `rel` named `name`; checks the kind in the root metadata. */
static weft_trace *open_copy(const char *rel, const char *name, const weft_open_options *o)
{
	buf b = load(rel);
	const char *p = write_file(name, b.p, b.len);
	free(b.p);
	return open_ok(p, o);
}

static int root_kind_is(const weft_trace *t, const char *kind)
{
	char want[64];
	snprintf(want, sizeof want, "\"kind\":\"%s\"", kind);
	return strstr(weft_trace_node(t, 0)->metadata_json, want) != NULL;
}

/* Files with neutral names: the data alone decides. */
static void test_detect_from_data(void)
{
	static const struct { const char *rel, *kind; } cases[] = {
		{ "phold-gvt-pekplp/np2/ross-stats-gvt.bin", "gvt" },
		{ "phold-rt-pekplp/np2/ross-stats-rt.bin", "rt" },
		{ "im-everything/np1/ross-stats-analysis-lps.bin", "vt" },
		{ "phold-evtrace-full/np1/ross-stats-evtrace.bin", "evtrace" },
		{ "phold-model-gvt/np2/ross-stats-model.bin", "model" },
		{ "im-everything/np1/ross-stats-model.bin", "model" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		weft_trace *t = open_copy(cases[i].rel, "neutral.bin", NULL);
		CHECK(root_kind_is(t, cases[i].kind));
		CHECK(strstr(weft_trace_node(t, 0)->metadata_json, "\"detected_from\":\"data\""));
		CHECK_EQ_U64(weft_trace_diag_count(t), 0);
		CHECK_EQ_STR(weft_trace_node(t, 0)->name, cases[i].kind);
		weft_trace_free(t);
	}
}

/* A misleading name: the data wins, with a warning. */
static void test_misleading_name(void)
{
	weft_trace *t = open_copy("phold-evtrace-full/np1/ross-stats-evtrace.bin",
				  "run-gvt.bin", NULL);
	CHECK(root_kind_is(t, "evtrace"));
	const weft_diag *d = find_diag(t, "named like a gvt file");
	CHECK(d != NULL && d->severity == WEFT_SEV_WARNING);
	CHECK_EQ_I64(count_events(t), 2392);
	weft_trace_free(t);
	/* vt by name, only engine samples: the name settles the tie. */
	t = open_copy("phold-vt-pekplp/np1/ross-stats-analysis-lps.bin", "x-analysis-lps.bin",
		      NULL);
	CHECK(root_kind_is(t, "vt"));
	CHECK_EQ_U64(weft_trace_diag_count(t), 0);
	weft_trace_free(t);
}

/* The kind option: forces the framing and the root name; bad values fail. */
static void test_forced_kind(void)
{
	weft_open_options o;
	weft_open_options_init(&o);
	CHECK(weft_open_options_set(&o, "ross.kind", "model") == 0);
	weft_trace *t = open_copy(GVT, "forced.dat", &o); /* any name, format implied */
	CHECK(root_kind_is(t, "model"));
	CHECK(strstr(weft_trace_node(t, 0)->metadata_json, "\"detected_from\":\"forced\""));
	CHECK(weft_trace_stream_find(t, "model/pe.0/kp.0/lp.0/engine") >= 0);
	CHECK_EQ_I64(count_events(t), 2522);
	weft_trace_free(t);

	CHECK(weft_open_options_set(&o, "ross.kind", "evtrace") == 0);
	weft_trace *bad = NULL;
	t = open_ok(write_file("f2.bin", "", 0), &o); /* empty: no records */
	CHECK_EQ_I64(count_events(t), 0);
	CHECK(root_kind_is(t, "evtrace"));
	weft_trace_free(t);
	buf b = load(GVT);
	int rc = weft_trace_open(write_file("forced2-gvt.bin", b.p, b.len), &o, &bad);
	CHECK(rc == WEFT_EFORMAT);
	CHECK(strstr(weft_last_error(), "byte 20: expected a model data size") != NULL);
	CHECK(weft_open_options_set(&o, "ross.kind", "bogus") == WEFT_EINVAL);
	CHECK(strstr(weft_last_error(), "unknown ROSS kind 'bogus'") != NULL);
	/* set directly, past weft_open_options_set: the open refuses it */
	REQUIRE(o.format_option_count == 1);
	o.format_option_values[0] = "bogus";
	CHECK(weft_trace_open(write_file("forced3-gvt.bin", b.p, b.len), &o, &bad) == WEFT_EINVAL);
	CHECK(strstr(weft_last_error(), "unknown ROSS kind 'bogus'") != NULL);
	free(b.p);
}

/* Not ROSS data: a neutral .bin of text is not probed; forced, it fails. */
static void test_not_ross(void)
{
	static const char text[] = "this is not a ROSS file, just some text for the probe\n";
	weft_trace *t = NULL;
	const char *p = write_file("text.bin", text, sizeof text - 1);
	CHECK(weft_trace_open(p, NULL, &t) == WEFT_ENOTFOUND);
	weft_open_options o;
	weft_open_options_init(&o);
	o.format = WEFT_FORMAT_ROSS;
	CHECK(weft_trace_open(p, &o, &t) == WEFT_EFORMAT);
	CHECK(strstr(weft_last_error(), "not ROSS data") != NULL);
	/* A directory without ROSS file names. */
	char sub[8192];
	snprintf(sub, sizeof sub, "%s/empty-run", dir);
	REQUIRE(mkdir(sub, 0755) == 0);
	CHECK(weft_trace_open(sub, &o, &t) == WEFT_ENOTFOUND);
	CHECK(strstr(weft_last_error(), "-gvt.bin") != NULL);
}

/* ---- Byte order ------------------------------------------------------------------------------------ */

/* Reverses the bytes of each of `n` words of `width` at p. */
static void swap_words(unsigned char *p, int n, int width)
{
	for (int k = 0; k < n; k++, p += width)
		for (int i = 0; i < width / 2; i++) {
			unsigned char c = p[i];
			p[i] = p[width - 1 - i];
			p[width - 1 - i] = c;
		}
}

/* The file in the other byte order, record by record (its framing known). */
static void byte_swap(unsigned char *p, size_t len, int evtrace)
{
	size_t o = 0;
	while (o < len) {
		unsigned char *r = p + o;
		if (evtrace) {
			uint32_t size = get32(r + 20);
			swap_words(r, 6, 4);
			o += 24 + size;
			continue;
		}
		int32_t type = (int32_t)get32(r), size = (int32_t)get32(r + 4);
		if (type >= 0 && type <= 3 && (size == 104 || size == 44 || size == 36 ||
					       size == 48 || size == 24)) {
			uint32_t model = type == 3 ? get32(r + 44) : 0;
			swap_words(r, 2, 4);
			swap_words(r + 8, 2, 8);
			if (type == 2 && size == 48) {
				swap_words(r + 24, 8, 4);
				swap_words(r + 56, 1, 8);
				swap_words(r + 64, 2, 4);
			} else {
				swap_words(r + 24, size / 4, 4);
			}
			o += 24 + (size_t)size + model;
		} else {
			uint32_t sample = get32(r + 40);
			swap_words(r, 5, 8);
			swap_words(r + 40, 2, 4);
			o += 48 + sample;
		}
	}
}

/* The same file in both byte orders gives the same fields. */
static void test_big_endian(void)
{
	static const struct { const char *rel, *name; int evtrace; } cases[] = {
		{ "im-everything/np1/ross-stats-analysis-lps.bin", "be-analysis-lps.bin", 0 },
		{ "im-everything/np1/ross-stats-evtrace.bin", "be-evtrace.bin", 1 },
		{ "phold-evtrace-full/np1/ross-stats-evtrace.bin", "be2-evtrace.bin", 1 },
		{ "phold-model-gvt/np2/ross-stats-model.bin", "be-model.bin", 0 },
		{ "phold-rt-pekplp/np2/ross-stats-rt.bin", "be-rt.bin", 0 },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		buf b = load(cases[i].rel);
		weft_trace *le = open_ok(write_file("le.bin", b.p, b.len), NULL);
		byte_swap(b.p, b.len, cases[i].evtrace);
		weft_trace *be = open_ok(write_file(cases[i].name, b.p, b.len), NULL);
		free(b.p);
		CHECK(weft_trace_stream(be, 0)->big_endian == 1);
		CHECK(strstr(weft_trace_node(be, 0)->metadata_json, "big-endian") != NULL);
		weft_cursor *cl, *cb;
		const weft_event *el, *eb;
		REQUIRE(weft_cursor_create(le, NULL, &cl) == 0);
		REQUIRE(weft_cursor_create(be, NULL, &cb) == 0);
		long n = 0;
		while (weft_cursor_next(cl, &el) == 1) {
			REQUIRE(weft_cursor_next(cb, &eb) == 1);
			weft_field fl[64], fb[64];
			int nl = weft_event_fields(le, el, fl, 64);
			int nb = weft_event_fields(be, eb, fb, 64);
			CHECK(nl == nb && nl > 0);
			CHECK(eb->flags & WEFT_EVENT_BIG_ENDIAN);
			CHECK_EQ_U64(el->time, eb->time);
			for (int k = 0; k < nl && k < nb; k++) {
				if (fl[k].type == WEFT_TYPE_BYTES)
					CHECK(fl[k].v.s.len == fb[k].v.s.len);
				else if (fl[k].type == WEFT_TYPE_F32 || fl[k].type == WEFT_TYPE_F64)
					CHECK(same_float(fl[k].v.f, fb[k].v.f, fl[k].type));
				else
					CHECK_EQ_U64(fl[k].v.u, fb[k].v.u);
			}
			n++;
		}
		CHECK(weft_cursor_next(cb, &eb) == 0);
		CHECK(n > 0);
		weft_cursor_free(cl);
		weft_cursor_free(cb);
		weft_trace_free(le);
		weft_trace_free(be);
	}
}

/* ---- Model schema ---------------------------------------------------------------------------------- */

/* The first event with this code in the merged cursor, fields decoded. */
static int first_fields(weft_trace *t, const char *code, weft_field *f, size_t cap,
			const weft_event **out, weft_cursor **c)
{
	weft_filter filter;
	memset(&filter, 0, sizeof filter);
	filter.code_pattern = code;
	REQUIRE(weft_cursor_create(t, &filter, c) == 0);
	REQUIRE(weft_cursor_next(*c, out) == 1);
	return weft_event_fields(t, *out, f, cap);
}

static const weft_field *field(const weft_field *f, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (f[i].name_len == strlen(name) && memcmp(f[i].name, name, f[i].name_len) == 0)
			return &f[i];
	return NULL;
}

/* The u32 field `name` of an event (UINT32_MAX when missing). */
static uint32_t u32_field(const weft_trace *t, const weft_event *ev, const char *name)
{
	weft_field f[16];
	int n = weft_event_fields(t, ev, f, 16);
	const weft_field *x = n > 0 && n <= 16 ? field(f, n, name) : NULL;
	return x != NULL ? (uint32_t)x->v.u : UINT32_MAX;
}

/*
 * Event-trace records are filed at their destination LP (ROSS records an
 * event where it is processed), by the merged cursor and by each stream's
 * own; the source LP's stream is where the sending end is drawn.
 */
static void test_evtrace_destination(void)
{
	char path[8192];
	snprintf(path, sizeof path, "%s/phold-evtrace-full/np1", data_root);
	weft_trace *t = open_ok(path, NULL);
	weft_cursor *c;
	const weft_event *ev;
	long apart = 0, records = 0;
	REQUIRE(weft_cursor_create(t, NULL, &c) == 0);
	while (weft_cursor_next(c, &ev) == 1) {
		const weft_node *node = weft_trace_node(t, weft_trace_stream(t, ev->stream)->node);
		uint32_t dest = u32_field(t, ev, "destination_lp");
		uint32_t src = u32_field(t, ev, "source_lp");
		CHECK_EQ_U64((uint64_t)node->number, dest);
		apart += src != dest;
		weft_event_class cls;
		weft_event_classify(t, ev, &cls);
		char want[64];
		snprintf(want, sizeof want, "evtrace/lp.%u", src);
		CHECK(cls.flow_from_stream == weft_trace_stream_find(t, want));
		records++;
	}
	weft_cursor_free(c);
	CHECK_EQ_U64(records, 2392);
	CHECK(apart == 515);
	for (size_t s = 0; s < weft_trace_stream_count(t); s++) {
		const weft_node *node = weft_trace_node(t, weft_trace_stream(t, s)->node);
		REQUIRE(weft_cursor_create_stream(t, (uint32_t)s, &c) == 0);
		while (weft_cursor_next(c, &ev) == 1)
			CHECK_EQ_U64((uint64_t)node->number, u32_field(t, ev, "destination_lp"));
		weft_cursor_free(c);
	}
	weft_trace_free(t);
}

/* The im-everything model: a magic, the LP id, a count; analysis: count, time. */
static void test_schema_im(void)
{
	char path[8192];
	weft_open_options o;
	weft_open_options_init(&o);
	CHECK(weft_open_options_set(&o, "ross.model_schema",
				    "MODEL: u32 magic, u32 lpid, i64 count\n"
				    "ANALYSIS_MODEL: u64 events; f64 vt  # the LP's time\n"
				    "EVENT: u32 kind, pad 4") == 0);
	snprintf(path, sizeof path, "%s/%s", data_root, IM);
	weft_trace *t = open_ok(path, &o);
	weft_field f[64];
	const weft_event *ev;
	weft_cursor *c;
	int n = first_fields(t, "MODEL", f, 64, &ev, &c);
	CHECK_EQ_I64(n, 11);
	CHECK(field(f, n, "model_data") == NULL && field(f, n, "rest") == NULL);
	REQUIRE(field(f, n, "magic") != NULL && field(f, n, "lpid") != NULL);
	CHECK_EQ_U64(field(f, n, "magic")->v.u, 0xc0ffee);
	CHECK(field(f, n, "count")->type == WEFT_TYPE_I64);
	while (weft_cursor_next(c, &ev) == 1) {
		n = weft_event_fields(t, ev, f, 64);
		CHECK_EQ_U64(field(f, n, "lpid")->v.u, field(f, n, "lp_id")->v.u);
	}
	weft_cursor_free(c);
	n = first_fields(t, "ANALYSIS_MODEL", f, 64, &ev, &c);
	CHECK_EQ_I64(n, 8);
	REQUIRE(field(f, n, "vt") != NULL);
	CHECK(field(f, n, "vt")->v.f == field(f, n, "virtual_time")->v.f);
	weft_cursor_free(c);
	/* Event records without model data (the analysis LPs'): a decode error. */
	weft_filter filter;
	memset(&filter, 0, sizeof filter);
	filter.code_pattern = "EVENT";
	REQUIRE(weft_cursor_create(t, &filter, &c) == 0);
	long ok = 0, errors = 0;
	while (weft_cursor_next(c, &ev) == 1) {
		n = weft_event_fields(t, ev, f, 64);
		if (n < 0) {
			errors++;
			CHECK(strstr(weft_last_error(), "expected 8 bytes of model data") != NULL);
			CHECK(strstr(weft_last_error(), "ross-stats-evtrace.bin: byte ") != NULL);
		} else {
			ok++;
			CHECK_EQ_I64(n, 7);
		}
	}
	CHECK_EQ_I64(ok, 1336);
	CHECK_EQ_I64(errors, 36);
	CHECK(find_diag(t, "36 record(s) with less model data than the model schema") != NULL);
	weft_cursor_free(c);
	weft_trace_free(t);
}

/*
 * phold: 4 bytes of model data per LP sample (ROSS's phold leaves the
 * buffer as it was: mostly 0 and 1, sometimes garbage): one u32 word.
 */
static void test_schema_phold(void)
{
	char path[8192], schema_path[8192];
	weft_open_options o;
	weft_open_options_init(&o);
	snprintf(path, sizeof path, "%s/%s", data_root, MODEL);
	snprintf(schema_path, sizeof schema_path, "@%s",
		 write_file("phold.schema", "# phold\nMODEL:\n  u32 word\n", 26));
	CHECK(weft_open_options_set(&o, "ross.model_schema", schema_path) == 0);
	weft_trace *t = open_ok(path, &o);
	weft_field f[64];
	const weft_event *ev;
	weft_cursor *c;
	int n = first_fields(t, "MODEL", f, 64, &ev, &c);
	CHECK_EQ_I64(n, 9);
	CHECK(field(f, n, "word") != NULL && field(f, n, "word")->type == WEFT_TYPE_U32);
	weft_cursor_free(c);
	CHECK_EQ_U64(weft_trace_diag_count(t), 0);
	weft_trace_free(t);
	/* Shorter: the rest as bytes. Longer: a decode error for every event. */
	CHECK(weft_open_options_set(&o, "ross.model_schema", "u16 low") == 0);
	t = open_ok(path, &o);
	n = first_fields(t, "MODEL", f, 64, &ev, &c);
	CHECK_EQ_I64(n, 10);
	REQUIRE(field(f, n, "rest") != NULL);
	CHECK(field(f, n, "rest")->type == WEFT_TYPE_BYTES && field(f, n, "rest")->v.s.len == 2);
	weft_cursor_free(c);
	weft_trace_free(t);
	CHECK(weft_open_options_set(&o, "ross.model_schema", "u32 a, u32 b") == 0);
	t = open_ok(path, &o);
	n = first_fields(t, "MODEL", f, 64, &ev, &c);
	CHECK(n == WEFT_EFORMAT);
	CHECK(strstr(weft_last_error(), "byte 48: expected 8 bytes of model data for the "
		     "model schema of MODEL records, found 4") != NULL);
	weft_cursor_free(c);
	CHECK(find_diag(t, "1680 record(s) with less model data") != NULL);
	weft_trace_free(t);
}

/* Schema texts that must be refused, and what the message says. */
static void test_schema_errors(void)
{
	static const struct { const char *schema, *message; } cases[] = {
		{ "u32", "column 4: expected a field name, found the end of the text" },
		{ "u24 x", "expected a type (u8..u64, i8..i64, f32, f64)" },
		{ "u32 a, u32 a", "expected a field name not used before, found 'a'" },
		{ "u32 lp_id", "not a field of the record itself, found 'lp_id'" },
		{ "u32 rest", "found 'rest'" },
		{ "MODEL: u8 a; MODEL: u8 b", "expected each kind once" },
		{ "KP: u8 a", "expected a record kind (MODEL, ANALYSIS_MODEL, EVENT)" },
		{ "pad 0", "expected a byte count of 1 to 1048576" },
		{ "pad x", "expected a byte count after 'pad'" },
		{ "u8 a b", "line 1, column 6: expected ',', ';' or a new line, found 'b'" },
		{ "u8 a,\nu8 1x", "line 2, column 4: expected a field name" },
		{ "pad 1048576, u8 x", "expected a layout of at most 1 MiB" },
		{ "@/nonexistent/schema", "cannot open the model schema file" },
	};
	char path[8192];
	snprintf(path, sizeof path, "%s/%s", data_root, MODEL);
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		weft_open_options o;
		weft_trace *t = NULL;
		weft_open_options_init(&o);
		CHECK(weft_open_options_set(&o, "ross.model_schema", cases[i].schema) == 0);
		int rc = weft_trace_open(path, &o, &t);
		CHECK(rc == WEFT_EINVAL || (cases[i].schema[0] == '@' && rc == WEFT_ENOTFOUND));
		if (strstr(weft_last_error(), cases[i].message) == NULL)
			tu_fail(__FILE__, __LINE__, "schema '%s': got '%s', want '%s'",
				cases[i].schema, weft_last_error(), cases[i].message);
		weft_trace_free(t);
	}
}

/* ---- Times ---------------------------------------------------------------------------------------- */

/*
 * Analysis model samples have no real time (ROSS leaves it unset): time
 * 0 and WEFT_EVENT_NO_TIME, even when the stored bytes are a plausible
 * time; every other record has its real time and no flag.
 */
static void test_untimed_analysis(void)
{
	char path[8192];
	snprintf(path, sizeof path, "%s/%s/ross-stats-analysis-lps.bin", data_root, IM);
	buf b = load("im-everything/np1/ross-stats-analysis-lps.bin");
	double plausible = 1147.6;
	memcpy(b.p + 2752 + 32, &plausible, 8); /* the first ANALYSIS_MODEL record */
	for (int pass = 0; pass < 2; pass++) {
		weft_trace *t = open_ok(pass == 0 ? path :
					write_file("x-analysis-lps.bin", b.p, b.len), NULL);
		weft_cursor *c;
		const weft_event *ev;
		long untimed = 0;
		REQUIRE(weft_cursor_create(t, NULL, &c) == 0);
		while (weft_cursor_next(c, &ev) == 1) {
			int analysis = ev->code_len == 14 && memcmp(ev->code, "ANALYSIS_MODEL", 14) == 0;
			CHECK(((ev->flags & WEFT_EVENT_NO_TIME) != 0) == analysis);
			CHECK(analysis ? ev->time == 0 : ev->time > 1000000000000ull);
			untimed += analysis;
		}
		weft_cursor_free(c);
		CHECK(untimed == 36);
		weft_trace_free(t);
	}
	free(b.p);
}

/* The clock rate rescales; garbage real times are clamped and noted. */
static void test_times(void)
{
	weft_open_options o;
	weft_open_options_init(&o);
	CHECK(weft_open_options_set(&o, "ross.clock_rate", "2.5e9") == 0);
	buf b = load(GVT);
	weft_trace *t = open_ok(write_file("rate-gvt.bin", b.p, b.len), &o);
	weft_cursor *c;
	const weft_event *ev;
	REQUIRE(weft_cursor_create(t, NULL, &c) == 0);
	REQUIRE(weft_cursor_next(c, &ev) == 1);
	CHECK_EQ_U64(ev->time, (uint64_t)(1148.493211576 * 1e9 / 2.5 + 0.5));
	weft_cursor_free(c);
	CHECK(strstr(weft_trace_metadata_json(t), "\"clock_rate\":2500000000") != NULL);
	weft_trace_free(t);
	CHECK(weft_open_options_set(&o, "ross.clock_rate", "-1") == WEFT_EINVAL);
	CHECK(strstr(weft_last_error(), "invalid clock rate '-1'") != NULL);
	CHECK(weft_open_options_set(&o, "ross.clock_rate", "fast") == WEFT_EINVAL);

	/* Records 0, 1, 2: real time NaN, negative, huge. */
	double nan_v = NAN, neg = -5.0, huge = 1e300;
	memcpy(b.p + 16, &nan_v, 8);
	memcpy(b.p + 128 + 16, &neg, 8);
	memcpy(b.p + 196 + 16, &huge, 8);
	t = open_ok(write_file("clamp-gvt.bin", b.p, b.len), NULL);
	const weft_diag *d = find_diag(t, "3 record(s) with a real time that is negative, NaN");
	CHECK(d != NULL && d->offset == 0 && d->severity == WEFT_SEV_WARNING);
	REQUIRE(weft_cursor_create(t, NULL, &c) == 0);
	uint64_t want[] = { 0, 0, UINT64_MAX };
	for (int i = 0; i < 3; i++) {
		REQUIRE(weft_cursor_next(c, &ev) == 1);
		CHECK_EQ_U64(ev->time, want[i]);
	}
	weft_cursor_free(c);
	weft_trace_free(t);
	free(b.p);
}

/* Small read windows: batches stop before window moves, nothing is lost. */
static void test_small_windows(void)
{
	char path[8192];
	weft_open_options o;
	weft_open_options_init(&o);
	o.read_budget_bytes = 1; /* every reader gets the smallest window */
	snprintf(path, sizeof path, "%s/phold-gvt-pekplp/np2", data_root);
	weft_trace *small = open_ok(path, &o);
	weft_trace *big = open_ok(path, NULL);
	weft_cursor *cs, *cb;
	const weft_event *es, *eb;
	REQUIRE(weft_cursor_create(small, NULL, &cs) == 0);
	REQUIRE(weft_cursor_create(big, NULL, &cb) == 0);
	long n = 0;
	while (weft_cursor_next(cb, &eb) == 1) {
		REQUIRE(weft_cursor_next(cs, &es) == 1);
		CHECK_EQ_U64(es->offset, eb->offset);
		CHECK(es->payload_size == eb->payload_size &&
		      memcmp(es->payload, eb->payload, eb->payload_size) == 0);
		n++;
	}
	CHECK(weft_cursor_next(cs, &es) == 0);
	CHECK_EQ_I64(n, 2522);
	CHECK_EQ_I64(check_stream_cursors(small), 2522);
	weft_cursor_free(cs);
	weft_cursor_free(cb);
	weft_trace_free(small);
	weft_trace_free(big);
}

/*
 * Older ROSS: 36-byte LP samples (no u64, efficiency at +32). The same
 * file with its LP records shortened reads the same values; a file with
 * both sizes warns.
 */
static void test_old_lp_layout(void)
{
	buf b = load(GVT);
	unsigned char *p = malloc(b.len);
	REQUIRE(p != NULL);
	size_t in = 0, out = 0;
	while (in < b.len) {
		uint32_t size = get32(b.p + in + 4);
		if (get32(b.p + in) == 2) {
			memcpy(p + out, b.p + in, 24 + 32);
			put32(p + out + 4, 36);
			memcpy(p + out + 24 + 32, b.p + in + 24 + 40, 4);
			out += 60;
		} else {
			memcpy(p + out, b.p + in, 24 + size);
			out += 24 + size;
		}
		in += 24 + size;
	}
	weft_trace *t48 = open_ok(write_file("lp48-gvt.bin", b.p, b.len), NULL);
	weft_trace *t36 = open_ok(write_file("lp36-gvt.bin", p, out), NULL);
	CHECK_EQ_U64(weft_trace_diag_count(t36), 0);
	weft_cursor *c48, *c36;
	const weft_event *e48, *e36;
	REQUIRE(weft_cursor_create(t48, NULL, &c48) == 0);
	REQUIRE(weft_cursor_create(t36, NULL, &c36) == 0);
	long n = 0;
	while (weft_cursor_next(c48, &e48) == 1) {
		REQUIRE(weft_cursor_next(c36, &e36) == 1);
		weft_field f48[64], f36[64];
		int n48 = weft_event_fields(t48, e48, f48, 64);
		int n36 = weft_event_fields(t36, e36, f36, 64);
		if (e48->code_len == 2 && memcmp(e48->code, "LP", 2) == 0) {
			CHECK(n36 == n48 - 1 && e36->payload_size == 60);
			CHECK(field(f36, n36, "process_event_time_raw") == NULL);
			CHECK(same_float(field(f36, n36, "efficiency")->v.f,
					 field(f48, n48, "efficiency")->v.f, WEFT_TYPE_F32));
			CHECK_EQ_U64(field(f36, n36, "lp_id")->v.u, field(f48, n48, "lp_id")->v.u);
			n++;
		} else {
			CHECK(n36 == n48);
		}
	}
	CHECK_EQ_I64(n, 1552);
	weft_cursor_free(c48);
	weft_cursor_free(c36);
	weft_trace_free(t36);
	/* Both sizes in one file: the two files one after the other. */
	unsigned char *both = malloc(b.len + out);
	REQUIRE(both != NULL);
	memcpy(both, b.p, b.len);
	memcpy(both + b.len, p, out);
	weft_trace *mixed = open_ok(write_file("mixed-gvt.bin", both, b.len + out), NULL);
	free(both);
	CHECK_EQ_I64(count_events(mixed), 2 * 2522);
	CHECK(find_diag(mixed, "LP samples of both 36 bytes") != NULL);
	weft_trace_free(mixed);
	weft_trace_free(t48);
	free(p);
	free(b.p);
}

/* A run directory: two files of one kind, and a file that is not ROSS data. */
static void test_run_directory(void)
{
	char run[8192];
	REQUIRE(snprintf(run, sizeof run, "%s/run", dir) < (int)sizeof run);
	REQUIRE(mkdir(run, 0755) == 0);
	buf g = load(GVT);
	static const char junk[] = "definitely not a ROSS file, only text in it\n";
	const char *names[] = { "run/a-gvt.bin", "run/b-gvt.bin", "run/c-rt.bin",
				"run/notes.txt" };
	write_file(names[0], g.p, g.len);
	write_file(names[1], g.p, 1000);
	write_file(names[2], junk, sizeof junk - 1);
	write_file(names[3], junk, sizeof junk - 1);
	free(g.p);
	weft_trace *t = open_ok(run, NULL);
	CHECK(weft_trace_stream_find(t, "a-gvt/pe.0") >= 0);
	CHECK(weft_trace_stream_find(t, "b-gvt/pe.1/kp.0/lp.8") < 0); /* cut before it */
	CHECK(weft_trace_stream_find(t, "b-gvt/pe.0/kp.0/lp.0") >= 0);
	const weft_diag *d = find_diag(t, "not ROSS data");
	CHECK(d != NULL && d->severity == WEFT_SEV_ERROR &&
	      strstr(d->message, "the file is left out") != NULL);
	CHECK_EQ_STR(d != NULL ? d->file : "", "c-rt.bin");
	CHECK(find_diag(t, "the file ends after") != NULL);
	CHECK(strstr(weft_trace_metadata_json(t), "\"files\":3,\"readable_files\":2") != NULL);
	CHECK_EQ_I64(count_events(t), 2522 + 13);
	CHECK_EQ_I64(check_stream_cursors(t), 2522 + 13);
	weft_trace_free(t);
}

/* ---- Bad input ------------------------------------------------------------------------------------ */

/* Record offsets of a good file (framing from the golden). */
static size_t record_ends(const char *rel, size_t *ends, size_t cap)
{
	buf b = load(rel);
	weft_trace *t = open_ok(write_file("ends-gvt.bin", b.p, b.len), NULL);
	weft_cursor *c;
	const weft_event *ev;
	size_t n = 0;
	REQUIRE(weft_cursor_create(t, NULL, &c) == 0);
	while (weft_cursor_next(c, &ev) == 1 && n < cap)
		ends[n++] = ev->offset + ev->payload_size + ev->data_size;
	weft_cursor_free(c);
	weft_trace_free(t);
	free(b.p);
	return n;
}

/*
 * Every truncation of the start of files of each framing: the complete
 * records are read, a cut record is a warning at its offset (a file cut
 * before its first record does not open). With resync too: a cut record
 * never turns into records.
 */
static void test_truncations(void)
{
	static const struct { const char *rel, *name; size_t max; } files[] = {
		{ "im-everything/np1/ross-stats-gvt.bin", "cut-gvt.bin", 688 },
		{ "im-everything/np1/ross-stats-model.bin", "cut-model.bin", 768 },
		{ "im-everything/np1/ross-stats-rt.bin", "cut-rt.bin", 800 },
		{ "im-everything/np1/ross-stats-evtrace.bin", "cut-evtrace.bin", 700 },
		{ "phold-evtrace-full/np1/ross-stats-evtrace.bin", "cut2-evtrace.bin", 300 },
		{ "im-everything/np1/ross-stats-analysis-lps.bin", "cut-analysis-lps.bin", 3000 },
	};
	for (size_t fi = 0; fi < sizeof files / sizeof files[0]; fi++) {
		size_t ends[512];
		size_t n = record_ends(files[fi].rel, ends, 512);
		buf b = load(files[fi].rel);
		for (size_t len = 1; len < b.len && len <= files[fi].max; len++) {
			size_t complete = 0;
			while (complete < n && ends[complete] <= len)
				complete++;
			for (int resync = 0; resync <= 1; resync++) {
				weft_open_options o;
				weft_open_options_init(&o);
				CHECK(weft_open_options_set(&o, "ross.resync", (resync) ? "1" : "0") == 0);
				weft_trace *t = NULL;
				int rc = weft_trace_open(write_file(files[fi].name, b.p, len), &o, &t);
				if (complete == 0) {
					CHECK(rc == WEFT_EFORMAT);
					continue;
				}
				REQUIRE(rc == 0);
				CHECK_EQ_I64(count_events(t), (long)complete);
				int cut = ends[complete - 1] != len;
				const weft_diag *d = find_diag(t, "the file ends after");
				CHECK(cut ? d != NULL && d->severity == WEFT_SEV_WARNING &&
				      d->status == WEFT_ETRUNCATED : weft_trace_diag_count(t) == 0);
				CHECK(weft_trace_stream(t, 0)->finished == (cut ? 0 : -1));
				weft_trace_free(t);
			}
		}
		free(b.p);
	}
}

/*
 * A model data size (at most 1 MiB) that runs past the end of the file:
 * an error when records start again within the bytes left (the size is
 * wrong, more than the last record is lost), a warning for the last
 * record (a cut file). Event records, model samples, analysis samples.
 */
static void test_wrong_data_sizes(void)
{
	static const struct { const char *rel, *name; uint32_t at; } files[] = {
		{ "im-everything/np1/ross-stats-evtrace.bin", "wrong-evtrace.bin", 20 },
		{ "im-everything/np1/ross-stats-model.bin", "wrong-model.bin", 44 },
		{ "phold-model-gvt/np2/ross-stats-model.bin", "wrong2-model.bin", 44 },
	};
	for (size_t fi = 0; fi < sizeof files / sizeof files[0]; fi++) {
		static size_t ends[4096];
		size_t n = record_ends(files[fi].rel, ends, 4096);
		REQUIRE(n >= 4);
		size_t picks[] = { n / 2, n - 2, n - 1 };
		for (size_t k = 0; k < 3; k++) {
			size_t r = picks[k], start = ends[r - 1];
			for (int past = 1; past <= 2; past++) {
				buf b = load(files[fi].rel);
				/* the model data (after the size field) ends 1 byte past
				 * the end of the file, or a large size within 1 MiB */
				uint32_t size = past == 1 ?
						(uint32_t)(b.len - start - (files[fi].at + 4) + 1) :
						1000000;
				put32(b.p + start + files[fi].at, size);
				weft_trace *t = open_ok(write_file(files[fi].name, b.p, b.len), NULL);
				const weft_diag *d = find_diag(t, "bytes of model data, the file ends");
				REQUIRE(d != NULL);
				int last = r == n - 1;
				CHECK_EQ_U64(d->offset, start + files[fi].at);
				CHECK(d->severity == (last ? WEFT_SEV_WARNING : WEFT_SEV_ERROR));
				char want[64];
				snprintf(want, sizeof want, "records start at byte %zu within", ends[r]);
				CHECK((strstr(d->message, want) != NULL) == !last);
				if ((strstr(d->message, want) != NULL) != !last)
					fprintf(stderr, "  %s record %zu: %s\n", files[fi].name, r,
						d->message);
				CHECK_EQ_I64(count_events(t), (long)r);
				weft_trace_free(t);
				free(b.p);
			}
		}
	}
}

/* Impossible sizes: an error at the byte of the size; records before are read. */
static void test_impossible_sizes(void)
{
	buf b = load(GVT);
	put32(b.p + 128 + 4, 50); /* KP with size 50 */
	weft_trace *t = open_ok(write_file("size-gvt.bin", b.p, b.len), NULL);
	const weft_diag *d = find_diag(t, "found type 1 with size 50");
	CHECK(d != NULL && d->offset == 128 && d->severity == WEFT_SEV_ERROR);
	CHECK(d != NULL && strstr(d->message, "expected a sample header") != NULL);
	CHECK_EQ_I64(count_events(t), 1);
	weft_trace_free(t);
	free(b.p);

	b = load(MODEL);
	size_t len = 52 * 5;
	put32(b.p + 52 * 4 + 44, 100); /* model size past the end of the file */
	t = open_ok(write_file("past-model.bin", b.p, len), NULL);
	d = find_diag(t, "expected 100 bytes of model data, the file ends after 4");
	CHECK(d != NULL && d->offset == 52 * 4 + 44 && d->status == WEFT_ETRUNCATED);
	CHECK_EQ_I64(count_events(t), 4);
	weft_trace_free(t);
	put32(b.p + 52 * 4 + 44, 0x7fffffff); /* beyond any model */
	t = open_ok(write_file("huge-model.bin", b.p, len), NULL);
	d = find_diag(t, "expected a model data size of at most 1048576 bytes, found 2147483647");
	CHECK(d != NULL && d->offset == 52 * 4 + 44 && d->severity == WEFT_SEV_ERROR);
	CHECK_EQ_I64(count_events(t), 4);
	weft_trace_free(t);
	free(b.p);

	b = load("im-everything/np1/ross-stats-analysis-lps.bin");
	put32(b.p + 2752 + 40, (uint32_t)-8); /* analysis sample size */
	t = open_ok(write_file("neg-analysis-lps.bin", b.p, b.len), NULL);
	d = find_diag(t, "expected an analysis sample size of 0 to 1048576 bytes, found -8");
	CHECK(d != NULL && d->offset == 2752 + 40);
	put32(b.p + 2752 + 44, 7); /* analysis flag */
	weft_trace_free(t);
	t = open_ok(write_file("flag-analysis-lps.bin", b.p, b.len), NULL);
	d = find_diag(t, "flag 7");
	CHECK(d != NULL && d->offset == 2752);
	weft_trace_free(t);
	free(b.p);
}

/* Garbage in the middle: an error there; with resync, skipped and read on. */
static void test_garbage(void)
{
	buf g = load(GVT);
	size_t at = 128 + 68 * 4; /* after the first PE and its 4 KPs */
	size_t glen = 37;
	unsigned char *p = malloc(g.len + glen);
	REQUIRE(p != NULL);
	memcpy(p, g.p, at);
	for (size_t i = 0; i < glen; i++)
		p[at + i] = (unsigned char)(0xA5 ^ (i * 7));
	memcpy(p + at + glen, g.p + at, g.len - at);
	const char *path = write_file("garbage-gvt.bin", p, g.len + glen);

	weft_trace *t = open_ok(path, NULL);
	const weft_diag *d = find_diag(t, "expected a sample header");
	CHECK(d != NULL && d->offset == at && d->severity == WEFT_SEV_ERROR);
	CHECK(d != NULL && strstr(d->message, "reading of this file stops here") != NULL);
	CHECK_EQ_I64(count_events(t), 5);
	weft_trace_free(t);

	weft_open_options o;
	weft_open_options_init(&o);
	CHECK(weft_open_options_set(&o, "ross.resync", "1") == 0);
	t = open_ok(path, &o);
	d = find_diag(t, "resync: 37 bytes skipped");
	CHECK(d != NULL && d->offset == at);
	CHECK_EQ_I64(count_events(t), 2522);
	CHECK_EQ_I64(check_stream_cursors(t), 2522);
	CHECK(strstr(weft_trace_node(t, 0)->metadata_json, "\"skipped_bytes\":37") != NULL);
	weft_trace_free(t);

	/* Garbage first: resync finds the records after it. */
	memcpy(p, "garbage!", 8);
	memcpy(p + 8, g.p, g.len);
	path = write_file("garbage-first-gvt.bin", p, g.len + 8);
	t = open_ok(path, &o);
	CHECK(find_diag(t, "resync: 8 bytes skipped, reading goes on at byte 8") != NULL);
	CHECK_EQ_I64(count_events(t), 2522);
	weft_trace_free(t);
	/* Garbage to the end: skipped, reported. */
	memcpy(p, g.p, g.len);
	memset(p + g.len, 0xEE, 8);
	t = open_ok(write_file("garbage-end-gvt.bin", p, g.len + 8), &o);
	CHECK(find_diag(t, "no valid record follows") != NULL ||
	      find_diag(t, "the file ends after") != NULL);
	CHECK_EQ_I64(count_events(t), 2522);
	weft_trace_free(t);
	free(p);
	free(g.p);
}

/* Reads everything a trace offers: cursors, per-stream cursors, fields. */
static void read_all(weft_trace *t, const uint8_t *file, size_t len)
{
	weft_cursor *c;
	const weft_event *ev;
	weft_field f[64];
	if (weft_cursor_create(t, NULL, &c) == 0) {
		while (weft_cursor_next(c, &ev) == 1) {
			CHECK(ev->offset + ev->payload_size + ev->data_size <= len);
			CHECK(memcmp(ev->payload, file + ev->offset, ev->payload_size) == 0);
			weft_event_fields(t, ev, f, 64);
		}
		weft_cursor_free(c);
	}
	for (size_t s = 0; s < weft_trace_stream_count(t); s++) {
		if (weft_cursor_create_stream(t, (uint32_t)s, &c) != 0)
			continue;
		while (weft_cursor_next(c, &ev) == 1)
			weft_event_fields(t, ev, f, 64);
		weft_cursor_free(c);
	}
}

/* Random corruptions and truncations of every kind of file: never a crash. */
static void test_corruptions(void)
{
	static const char *const files[] = {
		"im-everything/np1/ross-stats-analysis-lps.bin",
		"im-everything/np1/ross-stats-evtrace.bin",
		"im-everything/np1/ross-stats-model.bin",
		"phold-rt-pekplp/np2/ross-stats-rt.bin",
	};
	static const char *const names[] = {
		"fuzz-analysis-lps.bin", "fuzz-evtrace.bin", "fuzz-model.bin", "fuzz-rt.bin"
	};
	srand(4242);
	for (size_t fi = 0; fi < 4; fi++) {
		buf orig = load(files[fi]);
		unsigned char *p = malloc(orig.len);
		REQUIRE(p != NULL);
		for (int round = 0; round < 300; round++) {
			size_t len = orig.len;
			memcpy(p, orig.p, orig.len);
			if (round % 3 == 0) {
				len = (size_t)rand() % orig.len;
			} else {
				int flips = 1 + rand() % (round % 3 == 1 ? 4 : 40);
				for (int k = 0; k < flips; k++)
					p[(size_t)rand() % orig.len] = (unsigned char)rand();
			}
			weft_open_options o;
			weft_open_options_init(&o);
			CHECK(weft_open_options_set(&o, "ross.resync", (round % 2) ? "1" : "0") == 0);
			o.read_budget_bytes = round % 5 == 0 ? 1 : 0;
			if (round % 7 == 0)
				CHECK(weft_open_options_set(&o, "ross.model_schema", "u32 a, u16 b") == 0);
			weft_trace *t = NULL;
			if (weft_trace_open(write_file(names[fi], p, len), &o, &t) == 0) {
				read_all(t, p, len);
				weft_trace_free(t);
			} else {
				CHECK(weft_last_error()[0] != '\0');
			}
		}
		free(p);
		free(orig.p);
	}
}

int main(void)
{
	const char *data = getenv("WEFT_TEST_DATA");
	REQUIRE(data != NULL);
	snprintf(data_root, sizeof data_root, "%s/ross", data);
	dir = tu_mkdtemp("weft-ross-reader");
	REQUIRE(dir != NULL);
	test_golden();
	test_paths();
	test_detect_from_data();
	test_misleading_name();
	test_forced_kind();
	test_not_ross();
	test_big_endian();
	test_evtrace_destination();
	test_schema_im();
	test_schema_phold();
	test_schema_errors();
	test_times();
	test_untimed_analysis();
	test_small_windows();
	test_old_lp_layout();
	test_run_directory();
	test_truncations();
	test_impossible_sizes();
	test_wrong_data_sizes();
	test_garbage();
	test_corruptions();
	return tu_finish_dir(dir);
}
