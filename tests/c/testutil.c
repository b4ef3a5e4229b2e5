/*
 * testutil.c - shared helpers of the C tests (see testutil.h).
 */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static unsigned passed, failed;
static char tmpdir[4096];

void tu_check(int ok, const char *file, int line, const char *what)
{
	if (ok) {
		passed++;
		return;
	}
	failed++;
	fprintf(stderr, "%s:%d: CHECK failed: %s\n", file, line, what);
}

/* Removes the temporary directory when the test passed. */
static void remove_tmpdir(void)
{
	if (tmpdir[0] != '\0' && failed == 0) {
		char cmd[4200];
		snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
		if (system(cmd) != 0)
			fprintf(stderr, "could not remove %s\n", tmpdir);
	}
}

const char *tu_tmpdir(void)
{
	if (tmpdir[0] == '\0') {
		const char *base = getenv("TMPDIR");
		snprintf(tmpdir, sizeof tmpdir, "%s/weft-test-XXXXXX", base ? base : "/tmp");
		if (mkdtemp(tmpdir) == NULL) {
			perror("mkdtemp");
			exit(2);
		}
		atexit(remove_tmpdir);
	}
	return tmpdir;
}

char *tu_read_file(const char *path, size_t *size)
{
	FILE *f = fopen(path, "rb");
	if (f == NULL)
		return NULL;
	size_t cap = 4096, n = 0;
	char *buf = malloc(cap + 1);
	size_t got;
	while (buf != NULL && (got = fread(buf + n, 1, cap - n, f)) > 0) {
		n += got;
		if (n == cap) {
			char *p = realloc(buf, cap * 2 + 1);
			if (p == NULL) {
				free(buf);
				buf = NULL;
				break;
			}
			buf = p;
			cap *= 2;
		}
	}
	fclose(f);
	if (buf != NULL) {
		buf[n] = '\0';
		*size = n;
	}
	return buf;
}

int tu_finish(void)
{
	printf("%u passed, %u failed\n", passed, failed);
	return failed ? 1 : 0;
}
