/* SPDX-License-Identifier: MIT */
/*
 * test_emu_system.c - step 1 of the ovni emulation (docs/emulation.md,
 * section 5.3): the system ovniemu builds before any event, against the
 * goldens of the real ovniemu 1.14.0 copied into tests/data/ovni-emu/.
 * For each accepted case, thread.row and cpu.row equal the goldens byte
 * for byte, and so do the .prv header lines (ovniemu/prv-headers.txt:
 * the first line of thread.prv, then of cpu.prv); the .pcf head equals
 * the first 42 lines of the copied .pcf goldens; emu-ovni-no-cpus is
 * refused at load as ovniemu refuses it.
 *
 * With an argument, the directory of the whole corpus
 * (../shared/refdata/ovni-emu), it checks every case that has a
 * thread.row there instead (a development check, not run by ctest).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "emu/emu.h"
#include "testutil.h"
#include "weft/weft.h"

/* Accepted cases: one loom and several, several processes (ranks, app
 * ids), the virtual CPU holding a thread, CPUs merged within a loom,
 * looms sorted by name. */
static const char *const accepted[] = {
	"emu-ovni-sort",                  /* one loom, one process */
	"emu-ovni-merge-cpus-loom",       /* 4 processes declare CPUs 0..r */
	"emu-ovni-sort-cpus-by-loom",     /* 4 looms without ranks: by name */
	"emu-nosv-multiple-segment",      /* 2 looms, app ids 1 and 2 */
	"emu-tampi-ss-polling",           /* 4 looms sorted by rank */
	"rt-nosv-several-tasks-level-0",  /* real nOS-V, a thread on the vCPU */
	NULL
};

/* Opens the trace at `path`; NULL (and a failure) when it cannot be opened. */
static weft_trace *open_path(const char *path)
{
	weft_trace *t = NULL;
	if (weft_trace_open(path, NULL, &t) < 0) {
		tu_fail(__FILE__, __LINE__, "%s: %s", path, weft_last_error());
		return NULL;
	}
	return t;
}

/* Checks one .row text against the golden file `golden`. */
static void check_row(const weft__emu_system *sys, weft__emu_kind kind, const char *golden)
{
	char *want = tu_read_file(golden, NULL);
	char *got = weft__emu_row_text(sys, kind);
	REQUIRE(want != NULL && got != NULL);
	CHECK_EQ_STR(got, want);
	free(want);
	free(got);
}

/* Checks both .prv header lines against `want` (thread's line, then cpu's). */
static void check_headers(weft_trace *t, const weft__emu_system *sys, const char *want)
{
	uint64_t duration = 0;
	CHECK(weft__emu_duration(t, &duration) == 0);
	char *th = weft__emu_prv_header(sys, WEFT__EMU_THREAD, duration);
	char *cpu = weft__emu_prv_header(sys, WEFT__EMU_CPU, duration);
	REQUIRE(th != NULL && cpu != NULL);
	size_t n = strlen(th);
	REQUIRE(strlen(want) >= n);
	CHECK_EQ_MEM(th, want, n);
	CHECK_EQ_STR(cpu, want + n);
	free(th);
	free(cpu);
}

/*
 * One accepted case, in directory `dir` (ovni/ and ovniemu/ below it);
 * `headers`: the two .prv header lines, or NULL not to check them.
 */
static void check_case(const char *dir, const char *headers)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/ovni", dir);
	weft_trace *t = open_path(path);
	weft__emu_system *sys = NULL;
	if (t == NULL)
		return;
	if (weft__emu_system_load(t, &sys) != 0) {
		tu_fail(__FILE__, __LINE__, "%s: %s", dir, weft_last_error());
		weft_trace_free(t);
		return;
	}
	fprintf(stderr, "case %s: %zu threads, %zu CPUs%s\n", dir, sys->nthreads, sys->ncpus,
		headers ? ", .prv headers" : "");
	snprintf(path, sizeof path, "%s/ovniemu/thread.row", dir);
	check_row(sys, WEFT__EMU_THREAD, path);
	snprintf(path, sizeof path, "%s/ovniemu/cpu.row", dir);
	check_row(sys, WEFT__EMU_CPU, path);
	if (headers != NULL)
		check_headers(t, sys, headers);
	weft__emu_system_free(sys);
	weft_trace_free(t);
}

/* The copied cases of tests/data/ovni-emu. */
static void check_copied_cases(void)
{
	for (size_t i = 0; accepted[i] != NULL; i++) {
		char dir[4096], headers[4200];
		snprintf(dir, sizeof dir, "%s", tu_data_path("ovni-emu"));
		size_t n = strlen(dir);
		snprintf(dir + n, sizeof dir - n, "/%s", accepted[i]);
		snprintf(headers, sizeof headers, "%s/ovniemu/prv-headers.txt", dir);
		char *want = tu_read_file(headers, NULL);
		REQUIRE(want != NULL);
		check_case(dir, want);
		free(want);
	}
}

/* A loom without CPUs: refused at load with ovniemu's rule, as WEFT_EFORMAT. */
static void check_no_cpus(void)
{
	weft_trace *t = open_path(tu_data_path("ovni-emu/emu-ovni-no-cpus/ovni"));
	weft__emu_system *sys = NULL;
	REQUIRE(t != NULL);
	CHECK_EQ_I64(weft__emu_system_load(t, &sys), WEFT_EFORMAT);
	CHECK(sys == NULL);
	CHECK(strstr(weft_last_error(), "loom vm.0 has no physical CPUs") != NULL);
	CHECK(strstr(weft_last_error(), "loom.vm.0") != NULL);
	fprintf(stderr, "no-cpus: %s\n", weft_last_error());
	weft_trace_free(t);
}

/* The .pcf head equals the first 42 lines of every copied .pcf golden. */
static void check_pcf_head(void)
{
	const char *cases[] = { "emu-mpi-func", "emu-ovni-sort-cpus-by-loom",
				"rt-nosv-yield-noisy-l3", NULL };
	const char *head = weft__emu_pcf_head();
	size_t lines = 0;
	for (const char *p = head; *p; p++)
		lines += *p == '\n';
	CHECK_EQ_U64(lines, 42);
	for (size_t i = 0; cases[i] != NULL; i++) {
		for (int k = 0; k < 2; k++) {
			char rel[256];
			snprintf(rel, sizeof rel, "ovni-emu/%s/ovniemu/%s.pcf", cases[i],
				 k ? "cpu" : "thread");
			char *want = tu_read_file(tu_data_path(rel), NULL);
			REQUIRE(want != NULL);
			CHECK(strncmp(want, head, strlen(head)) == 0);
			CHECK(strncmp(want + strlen(head), "EVENT_TYPE\n", 11) == 0);
			free(want);
		}
	}
}

/* The 13 refusals of the corpus (docs/emulation.md, section 4). */
static int is_refused(const char *name)
{
	static const char *const refused[] = {
		"emu-ovni-no-cpus", "emu-ovni-require-bad-version", "emu-nosv-require-missing",
		"emu-nosv-bad-double-execute", "emu-nosv-bad-nest-from-parallel",
		"emu-nosv-switch-same-type", "emu-nosv-bad-nest-same-task",
		"emu-nosv-bad-pause-parallel", "gen-nosv-mix-yield-l3-refused",
		"emu-nanos6-nested-tasks-bad", "emu-nanos6-ss-mismatch",
		"emu-tampi-ss-mismatch", "emu-mpi-func-mismatch", NULL
	};
	for (size_t i = 0; refused[i] != NULL; i++)
		if (strcmp(refused[i], name) == 0)
			return 1;
	return 0;
}

/*
 * The first lines of the .prv goldens of corpus case `dir` (malloc'd), or
 * NULL for a refused case: its duration is that of the failing event.
 */
static char *corpus_headers(const char *dir)
{
	char path[4200], *out = calloc(1, 256);
	for (int k = 0; out != NULL && k < 2; k++) {
		snprintf(path, sizeof path, "%s/ovniemu/%s.prv", dir, k ? "cpu" : "thread");
		char *text = tu_read_file(path, NULL);
		char *nl = text ? strchr(text, '\n') : NULL;
		if (nl != NULL && (size_t)(nl - text) < 120)
			strncat(out, text, (size_t)(nl - text) + 1);
		free(text);
	}
	return out;
}

/* 1 when the case's golden thread.row is empty. */
static int empty_rows(const char *dir)
{
	char path[4200];
	size_t size = 0;
	snprintf(path, sizeof path, "%s/ovniemu/thread.row", dir);
	char *text = tu_read_file(path, &size);
	int empty = text != NULL && size == 0;
	free(text);
	return empty;
}

/* Every case of a corpus directory that has ovniemu/thread.row (argument). */
static void check_corpus(const char *root)
{
	char cmd[4200];
	snprintf(cmd, sizeof cmd, "cd '%s' && ls -d */ovniemu/thread.row", root);
	FILE *p = popen(cmd, "r");
	char line[1024];
	REQUIRE(p != NULL);
	while (fgets(line, sizeof line, p) != NULL) {
		char dir[4096];
		*strchr(line, '/') = '\0';
		snprintf(dir, sizeof dir, "%s/%s", root, line);
		if (empty_rows(dir)) {
			/* ovniemu refused it before writing anything (a model
			 * version check: step 4 of docs/emulation.md 5.3) */
			fprintf(stderr, "case %s: no rows written by ovniemu, skipped\n", dir);
			continue;
		}
		char *headers = is_refused(line) ? NULL : corpus_headers(dir);
		check_case(dir, headers);
		free(headers);
	}
	pclose(p);
}

int main(int argc, char **argv)
{
	if (argc > 1) {
		struct stat st;
		if (stat(argv[1], &st) != 0) {
			fprintf(stderr, "skipped: no corpus at %s\n", argv[1]);
			return 77;
		}
		check_corpus(argv[1]);
		return tu_result();
	}
	check_copied_cases();
	check_no_cpus();
	check_pcf_head();
	return tu_result();
}
