/* SPDX-License-Identifier: MIT */
/*
 * testutil.h - tiny helpers shared by the C tests (tests/c/test_*.c).
 *
 * CHECK* record a failure (printing file:line and the values) and go on;
 * REQUIRE stops the test at once. A test's main() ends with
 * `return tu_result();`, which is 1 when any check failed.
 */
#ifndef WEFT_TESTUTIL_H
#define WEFT_TESTUTIL_H

#include <stddef.h>
#include <stdint.h>

extern int tu_failures;

void tu_fail(const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#define CHECK(cond) \
	do { if (!(cond)) tu_fail(__FILE__, __LINE__, "CHECK(%s)", #cond); } while (0)

/* Stops the test: for preconditions whose failure makes the rest moot. */
#define REQUIRE(cond) \
	do { if (!(cond)) { tu_fail(__FILE__, __LINE__, "REQUIRE(%s)", #cond); \
			     tu_abort_test(); } } while (0)

#define CHECK_EQ_U64(a, b) do { uint64_t a_ = (uint64_t) (a), b_ = (uint64_t) (b); \
	if (a_ != b_) tu_fail(__FILE__, __LINE__, "%s == %s: %llu != %llu", #a, #b, \
			      (unsigned long long) a_, (unsigned long long) b_); } while (0)

#define CHECK_EQ_I64(a, b) do { int64_t a_ = (int64_t) (a), b_ = (int64_t) (b); \
	if (a_ != b_) tu_fail(__FILE__, __LINE__, "%s == %s: %lld != %lld", #a, #b, \
			      (long long) a_, (long long) b_); } while (0)

#define CHECK_EQ_STR(a, b) tu_check_str(__FILE__, __LINE__, #a, (a), (b))

#define CHECK_EQ_MEM(a, b, n) tu_check_mem(__FILE__, __LINE__, #a, (a), (b), (n))

void tu_check_str(const char *file, int line, const char *expr,
		  const char *got, const char *want);
void tu_check_mem(const char *file, int line, const char *expr,
		  const void *got, const void *want, size_t n);

/* Prints the verdict; 0 when every check passed, else 1. */
int tu_result(void);
/* Prints the verdict and exits with status 1. */
_Noreturn void tu_abort_test(void);

/* A new empty directory under $TMPDIR (or /tmp); malloc'd path. */
char *tu_mkdtemp(const char *prefix);
/*
 * Ends a test that used the scratch directory `dir` (malloc'd, may be
 * NULL): removes it when every check passed, keeps it and says where
 * otherwise, frees the path, and returns tu_result().
 */
int tu_finish_dir(char *dir);
/* rm -rf; 0 on success. */
int tu_rmtree(const char *path);
/*
 * $WEFT_TEST_DATA/<rel> (tests/data), valid until the fourth next call;
 * exits 77 (ctest: skipped) when WEFT_TEST_DATA is not set.
 */
const char *tu_data_path(const char *rel);
/* Whole file in a malloc'd, NUL-terminated buffer; NULL on failure. */
char *tu_read_file(const char *path, size_t *size);
/*
 * Runs `$WEFT_BUILD_DIR/weft ARGS 'PATH'` (ARGS is shell text, PATH is
 * quoted) and returns its standard output (malloc'd, NUL-terminated);
 * *status gets its exit status, -1 when it did not exit normally. NULL
 * (and a failure) when the command cannot be run.
 */
char *tu_run_weft(const char *args, const char *path, int *status);
/* 1 when one of the n lines contains `text` (a report's messages). */
int tu_said(char *const *lines, size_t n, const char *text);
/* 1 when two files have the same bytes; a failure names them otherwise. */
int tu_same_file(const char *a, const char *b);
/* Two trees (a file, or folders of them) equal file by file, byte for byte. */
void tu_same_tree(const char *a, const char *b);

/*
 * Opens the trace $WEFT_TEST_DATA/<rel> (stored order when asked), with
 * the format option `key` set to `value` when key is not NULL; NULL (and
 * a failure) when it cannot be opened.
 */
struct weft_trace;
struct weft_trace *tu_open_data(const char *rel, int stored_order, const char *key,
				const char *value);

#endif /* WEFT_TESTUTIL_H */
