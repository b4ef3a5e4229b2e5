/* SPDX-License-Identifier: MIT */
/*
 * test_emu_api.c - the public emulation API (weft/emu.h) on the ovniemu
 * cases copied into tests/data/ovni-emu/.
 *
 * Every case: the changes weft_emu_next() gives are, in order, the
 * records `weft convert -t paraver --emulate` writes into thread.prv and
 * cpu.prv (the same emulator behind both, so the same order), and the
 * emulation ends as the conversion does: a trace the conversion refuses
 * ends with WEFT_EFORMAT and an error diagnostic. Cases whose models are
 * not emulated yet are refused by both, so the loop extends by itself as
 * the models land. Then the details on emu-ovni-libovni-mark (objects,
 * labels, marks as a stack, the .pcf), the refusals at load
 * (emu-ovni-require-bad-version, emu-ovni-no-cpus) and in the middle of
 * the trace (emu-nosv-require-missing: an event of a model the thread
 * did not require), the options, and the emulated spans and profile
 * (weft_span_options.emulate, weft_profile_options.emulate) against the
 * golden thread.prv of a case whose stacks nest (emu-tampi-ss-polling).
 */
#include <dirent.h>
#include <stdarg.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "testutil.h"
#include "weft/weft.h"

/* A growing text. */
typedef struct text {
	char *s;
	size_t len, cap;
} text;

static void text_add(text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void text_add(text *t, const char *fmt, ...)
{
	va_list ap;
	char line[256];
	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	if (t->len + (size_t)n + 1 > t->cap) {
		t->cap = (t->len + (size_t)n + 1) * 2;
		t->s = realloc(t->s, t->cap);
		REQUIRE(t->s != NULL);
	}
	memcpy(t->s + t->len, line, (size_t)n + 1);
	t->len += (size_t)n;
}

static weft_trace *open_trace(const char *path)
{
	weft_trace *t = NULL;
	if (weft_trace_open(path, NULL, &t) < 0) {
		tu_fail(__FILE__, __LINE__, "%s: %s", path, weft_last_error());
		return NULL;
	}
	return t;
}

/* The records of a .prv file, without its header line ("" when none). */
static char *prv_records(const char *path)
{
	char *all = tu_read_file(path, NULL);
	if (all == NULL)
		return NULL;
	char *nl = strchr(all, '\n');
	char *rest = strdup(nl ? nl + 1 : "");
	free(all);
	return rest;
}

/* 1 when the case's ovniemu command enabled every model (-a). */
static int all_models_case(const char *dir)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/ovniemu/written.txt", dir);
	char *w = tu_read_file(path, NULL);
	int all = w != NULL && strstr(w, "ovniemu -a") != NULL;
	free(w);
	return all;
}

/* Emulates `trace` to the end: the records per kind; returns next()'s last status. */
static int emulate_all(weft_emu *e, text *prv, int check_labels)
{
	const weft_emu_change *c;
	int rc;
	uint64_t last = 0;
	while ((rc = weft_emu_next(e, &c)) == 1) {
		text_add(&prv[c->object], "2:0:1:1:%" PRIu32 ":%" PRIu64 ":%" PRIu32 ":%" PRId64 "\n",
			 c->row + 1, c->time, c->type, c->value);
		CHECK(c->time >= last);
		last = c->time;
		CHECK_EQ_U64(c->clock, c->time + weft_emu_start_clock(e));
		CHECK(c->model != NULL && c->channel != NULL && c->title != NULL &&
		      c->pcf_name != NULL);
		CHECK(c->event_offset != WEFT_NO_OFFSET);
		if (c->stack != NULL)
			CHECK_EQ_I64(c->stack[c->depth - 1], c->value);
		if (check_labels && c->value != 0) {
			const char *l = weft_emu_value_label(e, c->object, c->type, c->value);
			CHECK((l == NULL) == (c->label == NULL));
			if (l != NULL && c->label != NULL)
				CHECK_EQ_STR(c->label, l);
		}
	}
	return rc;
}

/* One case: the API's records against the conversion's, or both refuse. */
static void check_case(const char *dir, const char *scratch, const char *name)
{
	char trace_path[4096], out[4096], args[8192], path[8192];
	snprintf(trace_path, sizeof trace_path, "%s/ovni", dir);
	snprintf(out, sizeof out, "%s/%s", scratch, name);
	int all = all_models_case(dir);
	snprintf(args, sizeof args, "convert -q -t paraver --emulate%s -o '%s' 2>/dev/null",
		 all ? " --all-models" : "", out);
	int status;
	free(tu_run_weft(args, trace_path, &status));
	weft_trace *t = open_trace(trace_path);
	if (t == NULL)
		return;
	weft_emu_options o;
	weft_emu_options_init(&o);
	o.all_models = all;
	weft_emu *e = NULL;
	int rc = weft_emu_create(t, &o, &e);
	text prv[2] = { { 0 }, { 0 } };
	if (rc == 0)
		rc = emulate_all(e, prv, 1);
	if (status != 0) {
		/* refused by the conversion: by the API too, with an error diagnostic */
		if (rc != WEFT_EFORMAT)
			tu_fail(__FILE__, __LINE__, "%s: convert refused it, the API says %d", name,
				rc);
		size_t errors = 0;
		for (size_t i = 0; e != NULL && i < weft_emu_diag_count(e); i++)
			errors += weft_emu_diag(e, i)->severity == WEFT_SEV_ERROR;
		CHECK(e == NULL || errors > 0);
		CHECK(strlen(weft_last_error()) > 0);
	} else {
		if (rc != 0)
			tu_fail(__FILE__, __LINE__, "%s: convert took it, the API says %d (%s)", name,
				rc, weft_last_error());
		static const char *const files[2] = { "thread.prv", "cpu.prv" };
		for (int k = 0; rc == 0 && k < 2; k++) {
			snprintf(path, sizeof path, "%s/%s", out, files[k]);
			char *want = prv_records(path);
			REQUIRE(want != NULL);
			if (strcmp(prv[k].s ? prv[k].s : "", want) != 0)
				tu_fail(__FILE__, __LINE__, "%s: %s differs from the changes", name,
					files[k]);
			free(want);
		}
	}
	free(prv[0].s);
	free(prv[1].s);
	weft_emu_free(e);
	weft_trace_free(t);
}

/* Every case directory with a trace. */
static void check_all_cases(const char *scratch)
{
	const char *root = tu_data_path("ovni-emu");
	char rootcopy[1024];
	snprintf(rootcopy, sizeof rootcopy, "%s", root);
	DIR *d = opendir(rootcopy);
	REQUIRE(d != NULL);
	struct dirent *de;
	int cases = 0;
	while ((de = readdir(d)) != NULL) {
		char dir[2048], trace_path[4096];
		struct stat st;
		if (de->d_name[0] == '.')
			continue;
		snprintf(dir, sizeof dir, "%s/%s", rootcopy, de->d_name);
		snprintf(trace_path, sizeof trace_path, "%s/ovni", dir);
		if (stat(trace_path, &st) != 0 || !S_ISDIR(st.st_mode))
			continue;
		check_case(dir, scratch, de->d_name);
		cases++;
	}
	closedir(d);
	CHECK(cases >= 20);
}

/* The objects, labels, marks and .pcf of emu-ovni-libovni-mark. */
static void check_mark_case(void)
{
	weft_trace *t = open_trace(tu_data_path("ovni-emu/emu-ovni-libovni-mark/ovni"));
	REQUIRE(t != NULL);
	weft_emu *e = NULL;
	REQUIRE(weft_emu_create(t, NULL, &e) == 0);
	CHECK_EQ_U64(weft_emu_thread_count(e), 4);
	CHECK_EQ_U64(weft_emu_cpu_count(e), 20);
	const weft_emu_thread_info *th = weft_emu_thread(e, 0);
	REQUIRE(th != NULL);
	CHECK_EQ_STR(th->label, "TH 1.7337");
	CHECK_EQ_I64(th->tid, 7337);
	CHECK_EQ_I64(th->pid, 7337);
	CHECK_EQ_STR(weft_trace_stream(t, th->stream)->path,
		     "loom.vm.0/proc.7337/thread.7337");
	CHECK(weft_emu_thread(e, 4) == NULL);
	const weft_emu_cpu_info *cpu = weft_emu_cpu(e, 1);
	REQUIRE(cpu != NULL);
	CHECK_EQ_STR(cpu->label, "CPU 0.1");
	CHECK_EQ_I64(cpu->phyid, 1);
	CHECK_EQ_STR(cpu->loom_name, "loom.vm.0");
	CHECK_EQ_STR(weft_emu_cpu(e, 4)->label, "vCPU 0.*");
	CHECK_EQ_I64(weft_emu_cpu(e, 4)->phyid, -1);
	CHECK(weft_emu_cpu(e, 20) == NULL);
	REQUIRE(weft_emu_model_count(e) >= 1);
	CHECK_EQ_STR(weft_emu_model_name(e, 0), "ovni");
	CHECK_EQ_STR(weft_emu_model_version(e, 0), "1.1.0");
	CHECK(weft_emu_model_name(e, 99) == NULL);
	/* fixed labels: thread state, affinity, marks (declared in the metadata) */
	CHECK_EQ_STR(weft_emu_value_label(e, WEFT_EMU_THREAD, 4, 1), "Running");
	CHECK_EQ_STR(weft_emu_value_label(e, WEFT_EMU_THREAD, 6, 2), "CPU 0.1");
	CHECK_EQ_STR(weft_emu_value_label(e, WEFT_EMU_THREAD, 102, 3), "Red");
	CHECK(weft_emu_value_label(e, WEFT_EMU_THREAD, 2, 7337) == NULL);

	const weft_emu_change *c;
	int rc, states = 0, marks = 0, stacked = 0, cpu_rows = 0;
	while ((rc = weft_emu_next(e, &c)) == 1) {
		if (c->object == WEFT_EMU_CPU) {
			cpu_rows++;
			CHECK(c->row < 20);
			continue;
		}
		CHECK(c->row < 4);
		if (c->type == 4) {
			states++;
			CHECK_EQ_STR(c->model, "system");
			CHECK_EQ_STR(c->channel, "state");
			CHECK_EQ_STR(c->title, "Thread: thread state");
			if (c->value == 1)
				CHECK_EQ_STR(c->label, "Running");
			CHECK_EQ_U64(c->event_stream, weft_emu_thread(e, c->row)->stream);
		} else if (c->type == 102) {
			/* Colors: a stack of labelled values */
			marks++;
			CHECK_EQ_STR(c->model, "ovni");
			CHECK_EQ_STR(c->title, "Colors");
			CHECK_EQ_STR(c->pcf_name, "Colors");
			if (c->value == 3)
				CHECK_EQ_STR(c->label, "Red");
			if (c->value == 0) {
				CHECK(c->label == NULL && c->stack == NULL);
				continue;
			}
			REQUIRE(c->stack != NULL);
			CHECK(c->depth >= 1);
			stacked++;
			CHECK_EQ_I64(c->depth, 1);  /* no nesting in this trace */
		} else if (c->type == 101) {
			/* Progress: a single channel of numbers */
			CHECK(c->stack == NULL && c->label == NULL);
		}
	}
	CHECK_EQ_I64(rc, 0);
	CHECK(states >= 8);  /* Running and Dead of each thread at least */
	CHECK(marks > 4);
	CHECK(cpu_rows > 0);
	CHECK(stacked > 0);
	CHECK_EQ_I64(weft_emu_next(e, &c), 0);  /* the end stays */
	CHECK(c == NULL);
	CHECK(weft_emu_event_count(e) > 0);
	CHECK_EQ_U64(weft_emu_duration(e), 71185829);  /* thread.prv's header */
	char *pcf = weft_emu_pcf_text(e, WEFT_EMU_THREAD);
	char *want = tu_read_file(tu_data_path("ovni-emu/emu-ovni-libovni-mark/ovniemu/thread.pcf"),
				  NULL);
	REQUIRE(pcf != NULL && want != NULL);
	CHECK_EQ_STR(pcf, want);
	free(pcf);
	free(want);
	weft_emu_free(e);
	weft_trace_free(t);
}

/* Refused before the first event: create fails with the rule and the file. */
static void check_refused_at_load(const char *name, const char *rule)
{
	char rel[512];
	snprintf(rel, sizeof rel, "ovni-emu/%s/ovni", name);
	weft_trace *t = open_trace(tu_data_path(rel));
	REQUIRE(t != NULL);
	weft_emu *e = (weft_emu *)1;
	CHECK_EQ_I64(weft_emu_create(t, NULL, &e), WEFT_EFORMAT);
	CHECK(e == NULL);
	if (strstr(weft_last_error(), rule) == NULL)
		tu_fail(__FILE__, __LINE__, "%s: \"%s\" not in \"%s\"", name, rule,
			weft_last_error());
	CHECK(weft_last_error_file() != NULL);
	weft_trace_free(t);
}

/* An event the models refuse: the changes before it, then the rule at its place. */
static void check_refused_midway(void)
{
	weft_trace *t = open_trace(tu_data_path("ovni-emu/emu-nosv-require-missing/ovni"));
	REQUIRE(t != NULL);
	weft_emu *e = NULL;
	REQUIRE(weft_emu_create(t, NULL, &e) == 0);
	const weft_emu_change *c;
	int rc, changes = 0;
	while ((rc = weft_emu_next(e, &c)) == 1)
		changes++;
	CHECK_EQ_I64(rc, WEFT_EFORMAT);
	CHECK(changes > 0);  /* the thread began running before the refused event */
	CHECK_EQ_I64(weft_emu_next(e, &c), WEFT_EFORMAT);
	REQUIRE(weft_emu_diag_count(e) >= 1);
	const weft_diag *d = weft_emu_diag(e, weft_emu_diag_count(e) - 1);
	CHECK_EQ_I64(d->severity, WEFT_SEV_ERROR);
	CHECK_EQ_STR(d->file, "loom.vm.0/proc.7902/thread.7902/stream.obs");
	CHECK(d->offset != WEFT_NO_OFFSET);
	CHECK(strstr(d->message, "VYc") != NULL);
	CHECK_EQ_U64(weft_emu_diag_repeats(e, weft_emu_diag_count(e) - 1), 1);
	CHECK(weft_emu_diag(e, 99) == NULL);
	/* the message names the same place */
	CHECK(strstr(weft_last_error(), "VYc") != NULL);
	CHECK_EQ_STR(weft_last_error_file(), d->file);
	CHECK_EQ_U64(weft_last_error_offset(), d->offset);
	weft_emu_free(e);
	/* every model on: the same event is no longer refused for want of a require */
	weft_emu_options o;
	weft_emu_options_init(&o);
	o.all_models = 1;
	CHECK_EQ_I64(weft_emu_create(t, &o, &e), 0);
	weft_emu_free(e);
	weft_trace_free(t);
}

/* The ns each (row, type) of a golden thread.prv holds a value, in `ns[row * ntypes + type]`. */
static void golden_busy(const char *prv, uint64_t *ns, size_t nrows, size_t ntypes)
{
	uint64_t duration = 0, *since = calloc(nrows * ntypes, sizeof *since);
	int64_t *value = calloc(nrows * ntypes, sizeof *value);
	REQUIRE(since != NULL && value != NULL);
	const char *p = strstr(prv, "_ns:");
	REQUIRE(p != NULL);
	while (p > prv && p[-1] >= '0' && p[-1] <= '9')
		p--;
	duration = strtoull(p, NULL, 10);
	for (const char *l = strchr(prv, '\n'); l != NULL && l[1] != '\0'; l = strchr(l + 1, '\n')) {
		unsigned row;
		unsigned long long time;
		unsigned type;
		long long v;
		REQUIRE(sscanf(l + 1, "2:0:1:1:%u:%llu:%u:%lld", &row, &time, &type, &v) == 4);
		REQUIRE(row >= 1 && row <= nrows && type < ntypes);
		size_t k = (row - 1) * ntypes + type;
		if (value[k] != 0)
			ns[k] += time - since[k];
		value[k] = v;
		since[k] = time;
	}
	for (size_t k = 0; k < nrows * ntypes; k++)
		if (value[k] != 0)
			ns[k] += duration - since[k];
	free(since);
	free(value);
}

/*
 * The emulated spans (weft_span_options.emulate) of a case with nested
 * stacks (`nests`), or none: parents one level up on the same timeline,
 * enclosing their children; the exclusive time of each thread and channel is the time the
 * golden thread.prv shows a value there; the emulated profile agrees.
 */
static void check_spans(const char *name, int nests)
{
	enum { NTYPES = 256, NROWS = 16 };
	char rel[512];
	snprintf(rel, sizeof rel, "ovni-emu/%s/ovni", name);
	weft_trace *t = open_trace(tu_data_path(rel));
	REQUIRE(t != NULL);
	/* the type and thread of each (stream, title) */
	weft_emu *e = NULL;
	REQUIRE(weft_emu_create(t, NULL, &e) == 0);
	const char *title_of[NTYPES] = { 0 };
	const weft_emu_change *c;
	while (weft_emu_next(e, &c) == 1)
		if (c->object == WEFT_EMU_THREAD && c->type < NTYPES)
			title_of[c->type] = c->title;  /* valid as long as the emulator */
	size_t nrows = weft_emu_thread_count(e);
	REQUIRE(nrows <= NROWS);
	uint32_t stream_of[NROWS];
	for (size_t r = 0; r < nrows; r++)
		stream_of[r] = weft_emu_thread(e, r)->stream;
	snprintf(rel, sizeof rel, "ovni-emu/%s/ovniemu/thread.prv", name);
	char *prv = tu_read_file(tu_data_path(rel), NULL);
	REQUIRE(prv != NULL);
	static uint64_t want[NROWS * NTYPES], got[NROWS * NTYPES], prof[NROWS * NTYPES];
	memset(want, 0, sizeof want);
	memset(got, 0, sizeof got);
	memset(prof, 0, sizeof prof);
	golden_busy(prv, want, nrows, NTYPES);
	free(prv);

	weft_span_options so;
	weft_span_options_init(&so);
	so.emulate = 1;
	so.channels = "*";
	weft_span_iter *it;
	REQUIRE(weft_span_iter_create(t, &so, &it) == 0);
	const weft_span *s;
	int rc, nested = 0;
	static struct { uint64_t start, end; uint32_t depth; const char *timeline; } seen[1 << 16];
	memset(seen, 0, sizeof seen);
	while ((rc = weft_span_iter_next(it, &s)) == 1) {
		REQUIRE(s->id < (1 << 16));
		seen[s->id].start = s->start;
		seen[s->id].end = s->end;
		seen[s->id].depth = s->depth;
		seen[s->id].timeline = s->timeline;
		CHECK(s->category != NULL && s->name != NULL && s->timeline != NULL);
		CHECK_EQ_U64(s->exclusive + s->children, s->end - s->start);
		nested += s->parent != 0; /* checked on a second pass: parents end later */
		for (size_t r = 0; r < nrows; r++)
			for (size_t k = 0; k < NTYPES; k++)
				if (stream_of[r] == s->stream && title_of[k] != NULL &&
				    strcmp(title_of[k], s->timeline) == 0)
					got[r * NTYPES + k] += s->exclusive;
	}
	CHECK_EQ_I64(rc, 0);
	weft_span_iter_free(it);
	/* again, for the parents (all seen now) */
	REQUIRE(weft_span_iter_create(t, &so, &it) == 0);
	while (weft_span_iter_next(it, &s) == 1)
		if (s->parent != 0) {
			CHECK(seen[s->parent].timeline == s->timeline);
			CHECK_EQ_U64(seen[s->parent].depth + 1, s->depth);
			CHECK(seen[s->parent].start <= s->start && s->end <= seen[s->parent].end);
		}
	weft_span_iter_free(it);
	CHECK((nested > 0) == nests);

	weft_profile_options po;
	weft_profile_options_init(&po);
	po.emulate = 1;
	po.channels = "*";
	po.by = WEFT_PROFILE_BY_STREAM;
	weft_profile *p;
	REQUIRE(weft_profile_compute(t, &po, &p) == 0);
	for (size_t i = 0; i < weft_profile_row_count(p); i++) {
		const weft_profile_row *row = weft_profile_row_get(p, i);
		REQUIRE(row->timeline != NULL);
		for (size_t r = 0; r < nrows; r++)
			for (size_t k = 0; k < NTYPES; k++)
				if ((int64_t)stream_of[r] == row->stream && title_of[k] != NULL &&
				    strcmp(title_of[k], row->timeline) == 0)
					prof[r * NTYPES + k] += row->exclusive;
	}
	weft_profile_free(p);
	for (size_t k = 0; k < nrows * NTYPES; k++) {
		if (want[k] != got[k] || want[k] != prof[k])
			tu_fail(__FILE__, __LINE__, "%s: row %zu type %zu: golden %llu, spans %llu, "
				"profile %llu", name, k / NTYPES + 1, k % NTYPES,
				(unsigned long long)want[k], (unsigned long long)got[k],
				(unsigned long long)prof[k]);
	}
	weft_emu_free(e);
	weft_trace_free(t);
}

/* Bad arguments and NULL. */
static void check_arguments(void)
{
	weft_emu *e = (weft_emu *)1;
	CHECK_EQ_I64(weft_emu_create(NULL, NULL, &e), WEFT_EINVAL);
	CHECK(e == NULL);
	weft_emu_free(NULL);
	/* a trace of another format */
	weft_trace *t = NULL;
	if (weft_trace_open(tu_data_path("heph/heph_sample.bin.log"), NULL, &t) == 0) {
		CHECK_EQ_I64(weft_emu_create(t, NULL, &e), WEFT_EINVAL);
		weft_trace_free(t);
	}
}

int main(void)
{
	char *scratch = tu_mkdtemp("weft-emu-api");
	REQUIRE(scratch != NULL);
	check_arguments();
	check_mark_case();
	check_refused_at_load("emu-ovni-require-bad-version", "unsupported ovni model version");
	check_refused_at_load("emu-ovni-no-cpus", "has no physical CPUs");
	check_refused_midway();
	check_spans("emu-tampi-ss-polling", 1);
	check_spans("emu-ovni-libovni-mark", 0);
	check_all_cases(scratch);
	return tu_finish_dir(scratch);
}
