/* SPDX-License-Identifier: MIT */
/*
 * fuzz/replay.c - runs a fuzz target on files without libFuzzer: the
 * regression tests of the normal build (each crasher found by fuzzing is
 * kept in tests/data/crashers/<target>/) and the reproduction of a
 * finding. Arguments: files, or directories whose files are all run.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz_common.h"

/* Runs the target on the file at `path`; 1 when it was run. */
static int run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (f == NULL) {
		perror(path);
		exit(2);
	}
	size_t cap = 1 << 16, size = 0, n;
	uint8_t *data = malloc(cap);
	while (data != NULL && (n = fread(data + size, 1, cap - size, f)) > 0) {
		size += n;
		if (size == cap)
			data = realloc(data, cap *= 2);
	}
	fclose(f);
	if (data == NULL) {
		fprintf(stderr, "%s: out of memory\n", path);
		exit(2);
	}
	/* A copy of exactly the input's size, so that ASan sees any byte read past it. */
	uint8_t *exact = malloc(size ? size : 1);
	memcpy(exact, data, size);
	free(data);
	LLVMFuzzerTestOneInput(exact, size);
	free(exact);
	return 1;
}

/* The files of a directory in name order (a missing directory has none). */
static int run_dir(const char *dir)
{
	struct dirent **list;
	int n = scandir(dir, &list, NULL, alphasort), count = 0;
	for (int i = 0; i < n; i++) {
		char path[4096];
		snprintf(path, sizeof path, "%s/%s", dir, list[i]->d_name);
		struct stat st;
		if (list[i]->d_name[0] != '.' && stat(path, &st) == 0 && S_ISREG(st.st_mode))
			count += run_file(path);
		free(list[i]);
	}
	free(n > 0 ? list : NULL);
	return count;
}

int main(int argc, char **argv)
{
	LLVMFuzzerInitialize(&argc, &argv);
	int count = 0;
	for (int i = 1; i < argc; i++) {
		struct stat st;
		count += stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode) ? run_dir(argv[i])
									 : run_file(argv[i]);
	}
	fprintf(stderr, "%s: %d input(s) run\n", argv[0], count);
	return 0;
}
