/* SPDX-License-Identifier: MIT */
/*
 * testutil.c - see testutil.h.
 */
#define _XOPEN_SOURCE 700
#include "testutil.h"

#include "weft/weft.h"

#include <dirent.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

int tu_failures;

/* One line per failure, in the compiler's file:line style so editors and
 * CI logs can jump to it. */
void
tu_fail(const char *file, int line, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "%s:%d: FAILED: ", file, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	tu_failures++;
}

/* Two strings (either may be NULL) must be equal. */
void
tu_check_str(const char *file, int line, const char *expr, const char *got,
	     const char *want)
{
	if (got == NULL || want == NULL ? got != want : strcmp(got, want) != 0)
		tu_fail(file, line, "%s: got \"%s\", want \"%s\"", expr,
			got ? got : "(null)", want ? want : "(null)");
}

/* Reports the first differing byte, which is what one needs to debug a
 * binary mismatch. */
void
tu_check_mem(const char *file, int line, const char *expr, const void *got,
	     const void *want, size_t n)
{
	const unsigned char *g = got, *w = want;
	if (n > 0 && (g == NULL || w == NULL)) {
		tu_fail(file, line, "%s: NULL buffer for %zu bytes", expr, n);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		if (g[i] != w[i]) {
			tu_fail(file, line, "%s: byte %zu of %zu: got 0x%02x, want 0x%02x",
				expr, i, n, g[i], w[i]);
			return;
		}
	}
}

/* The verdict of the test, for main() to return. */
int
tu_result(void)
{
	if (tu_failures) {
		fprintf(stderr, "%d check(s) failed\n", tu_failures);
		return 1;
	}
	printf("all checks passed\n");
	return 0;
}

int
tu_finish_dir(char *dir)
{
	if (dir != NULL && tu_failures == 0)
		tu_rmtree(dir);
	else if (dir != NULL)
		fprintf(stderr, "scratch files kept in %s\n", dir);
	free(dir);
	return tu_result();
}

/* Ends the test now, failed. */
void
tu_abort_test(void)
{
	tu_result();
	exit(1);
}

/* A fresh directory, so parallel tests never share files. */
char *
tu_mkdtemp(const char *prefix)
{
	const char *base = getenv("TMPDIR");
	size_t n = strlen(base ? base : "/tmp") + strlen(prefix) + 16;
	char *path = malloc(n);
	if (path == NULL)
		return NULL;
	snprintf(path, n, "%s/%s.XXXXXX", base ? base : "/tmp", prefix);
	if (mkdtemp(path) == NULL) {
		free(path);
		return NULL;
	}
	return path;
}

/* nftw callback of tu_rmtree(). */
static int
tu_rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void) st; (void) flag; (void) ftw;
	return remove(path);
}

/* Removes a test's directory tree. */
int
tu_rmtree(const char *path)
{
	return nftw(path, tu_rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* Reads a whole file (stream.json, stream.obs) for checks. */
char *
tu_read_file(const char *path, size_t *size)
{
	FILE *f = fopen(path, "rb");
	if (f == NULL)
		return NULL;
	size_t cap = 4096, len = 0;
	char *buf = malloc(cap + 1);
	size_t r;
	while (buf != NULL && (r = fread(buf + len, 1, cap - len, f)) > 0) {
		len += r;
		if (len == cap) {
			char *nb = realloc(buf, 2 * cap + 1);
			if (nb == NULL) {
				free(buf);
				buf = NULL;
				break;
			}
			buf = nb;
			cap *= 2;
		}
	}
	fclose(f);
	if (buf == NULL)
		return NULL;
	buf[len] = '\0';
	if (size)
		*size = len;
	return buf;
}

/* The weft command of the build under test, its output read whole. */
char *
tu_run_weft(const char *args, const char *path, int *status)
{
	const char *build = getenv("WEFT_BUILD_DIR");
	char cmd[4096];
	*status = -1;
	if (build == NULL) {
		tu_fail(__FILE__, __LINE__, "WEFT_BUILD_DIR is not set");
		return NULL;
	}
	snprintf(cmd, sizeof cmd, "%s/weft", build);
	if (access(cmd, X_OK) != 0) {
		tu_fail(__FILE__, __LINE__, "no weft command at %s", cmd);
		return NULL;
	}
	snprintf(cmd, sizeof cmd, "'%s/weft' %s '%s'", build, args, path);
	FILE *p = popen(cmd, "r");
	size_t n = 0, cap = 1 << 16, got;
	char *out = malloc(cap);
	if (p == NULL || out == NULL) {
		tu_fail(__FILE__, __LINE__, "%s: cannot run", cmd);
		if (p != NULL)
			pclose(p);
		free(out);
		return NULL;
	}
	while ((got = fread(out + n, 1, cap - n - 1, p)) > 0) {
		n += got;
		if (n == cap - 1) {
			char *bigger = realloc(out, cap *= 2);
			if (bigger == NULL)
				break;
			out = bigger;
		}
	}
	out[n] = '\0';
	int rc = pclose(p);
	*status = rc != -1 && WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
	return out;
}

/* 1 when two files have the same bytes (a failure names them otherwise). */
int tu_same_file(const char *a, const char *b)
{
	size_t na = 0, nb = 0;
	char *x = tu_read_file(a, &na), *y = tu_read_file(b, &nb);
	int same = x != NULL && y != NULL && na == nb && memcmp(x, y, na) == 0;
	if (!same)
		tu_fail(__FILE__, __LINE__, "%s and %s differ (%zu, %zu bytes)", a, b, na, nb);
	free(x);
	free(y);
	return same;
}

/* Compares two trees (files and folders), every file byte for byte. */
void tu_same_tree(const char *a, const char *b)
{
	struct stat st;
	REQUIRE(stat(a, &st) == 0);
	if (!S_ISDIR(st.st_mode)) {
		tu_same_file(a, b);
		return;
	}
	DIR *d = opendir(a);
	struct dirent *e;
	int entries = 0;
	REQUIRE(d != NULL);
	while ((e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		char pa[4096], pb[4096];
		snprintf(pa, sizeof pa, "%s/%s", a, e->d_name);
		snprintf(pb, sizeof pb, "%s/%s", b, e->d_name);
		tu_same_tree(pa, pb);
		entries++;
	}
	closedir(d);
	CHECK(entries > 0);
}

/* 1 when one of the n lines contains `text`. */
int tu_said(char *const *lines, size_t n, const char *text)
{
	for (size_t i = 0; i < n; i++)
		if (strstr(lines[i], text) != NULL)
			return 1;
	return 0;
}

const char *tu_data_path(const char *rel)
{
	static char paths[4][8192];
	static unsigned next;
	const char *data = getenv("WEFT_TEST_DATA");

	if (data == NULL || *data == '\0') {
		fprintf(stderr, "WEFT_TEST_DATA is not set: skipped\n");
		exit(77);
	}
	char *path = paths[next++ % 4];
	snprintf(path, sizeof paths[0], "%s/%s", data, rel);
	return path;
}

/* The trace at $WEFT_TEST_DATA/<rel>, with one format option when given. */
struct weft_trace *tu_open_data(const char *rel, int stored_order, const char *key,
				const char *value)
{
	const char *path = tu_data_path(rel);
	weft_open_options o;
	weft_trace *t = NULL;

	weft_open_options_init(&o);
	o.stored_order = stored_order;
	if (key != NULL && weft_open_options_set(&o, key, value) < 0)
		tu_fail(__FILE__, __LINE__, "option %s: %s", key, weft_last_error());
	if (weft_trace_open(path, &o, &t) < 0)
		tu_fail(__FILE__, __LINE__, "open %s: %s", path, weft_last_error());
	return t;
}
