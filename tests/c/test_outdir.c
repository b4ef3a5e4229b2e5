/* SPDX-License-Identifier: MIT */
/*
 * test_outdir.c - outputs/outdir.c's weft__outdir_sync_tree, which makes
 * a directory output durable before it is renamed into place (the Pallas
 * and OTF2 conversions write their files unsynced): a tree of nested
 * directories and files syncs, and so does an empty one; an entry it
 * cannot open (a dangling symbolic link: it never follows links) and a
 * missing directory are errors that name the path.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/internal.h"
#include "outputs/outdir.h"
#include "testutil.h"

/* Writes `text` into dir/name. */
static void put_file(const char *dir, const char *name, const char *text)
{
	char *path = weft__path_join(dir, name);
	REQUIRE(path != NULL);
	FILE *f = fopen(path, "w");
	REQUIRE(f != NULL);
	fputs(text, f);
	REQUIRE(fclose(f) == 0);
	free(path);
}

/* Makes dir/name; returns its path in `path`. */
static void make_dir(const char *dir, const char *name, char *path, size_t cap)
{
	snprintf(path, cap, "%s/%s", dir, name);
	REQUIRE(mkdir(path, 0777) == 0);
}

static void test_tree(const char *top)
{
	char tree[4096], archive[4096], deeper[4096], empty[4096];
	make_dir(top, "tree", tree, sizeof tree);
	put_file(tree, "main.pallas", "main");
	make_dir(tree, "archive_0", archive, sizeof archive);
	put_file(archive, "archive.pallas", "archive");
	make_dir(archive, "thread_0", deeper, sizeof deeper);
	for (int i = 0; i < 40; i++) {
		char name[32];
		snprintf(name, sizeof name, "event_%d.dat", i);
		put_file(deeper, name, "0123456789abcdef");
	}
	make_dir(top, "empty", empty, sizeof empty);
	CHECK_EQ_I64(weft__outdir_sync_tree(tree), 0);
	CHECK_EQ_I64(weft__outdir_sync_tree(empty), 0);
	/* the files are still there, unchanged */
	char path[4200];
	struct stat st;
	snprintf(path, sizeof path, "%s/event_39.dat", deeper);
	CHECK(stat(path, &st) == 0 && st.st_size == 16);
}

static void test_errors(const char *top)
{
	char tree[4096], link_path[4200], missing[4200];
	make_dir(top, "broken", tree, sizeof tree);
	put_file(tree, "a.dat", "a");
	snprintf(link_path, sizeof link_path, "%s/dangling", tree);
	REQUIRE(symlink("nowhere", link_path) == 0);
	CHECK(weft__outdir_sync_tree(tree) < 0);
	CHECK(strstr(weft_last_error(), link_path) != NULL);
	CHECK(strstr(weft_last_error(), "cannot open") != NULL);

	snprintf(missing, sizeof missing, "%s/missing", top);
	CHECK(weft__outdir_sync_tree(missing) < 0);
	CHECK(strstr(weft_last_error(), missing) != NULL);
}

int main(void)
{
	char *dir = tu_mkdtemp("outdir");
	REQUIRE(dir != NULL);
	test_tree(dir);
	test_errors(dir);
	return tu_finish_dir(dir);
}
