/*
 * testutil.h - the few helpers every C test of weft shares.
 *
 * CHECK(cond) prints file:line and the condition when it fails and marks
 * the test failed; tu_finish() returns main's exit status and prints the
 * "N passed, N failed" line that CI reads.
 */
#ifndef WEFT_TESTUTIL_H
#define WEFT_TESTUTIL_H

#include <stddef.h>

void tu_check(int ok, const char *file, int line, const char *what);
#define CHECK(cond) tu_check(!!(cond), __FILE__, __LINE__, #cond)

/* A fresh private temporary directory for this test process. */
const char *tu_tmpdir(void);
/* Reads a whole (small) file; *size set; NULL when unreadable. free() it. */
char *tu_read_file(const char *path, size_t *size);
/* Exit status of the test: 0 when every CHECK passed. */
int tu_finish(void);

#endif
