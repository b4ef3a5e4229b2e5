/* SPDX-License-Identifier: MIT */
/*
 * outputs/outdir.c - outputs that are directories (a Pallas trace, the
 * emulated Paraver traces): what may be replaced (--force: an output of
 * the same kind or an empty directory only, never anything else), the
 * temporary directory next to it, making it durable, and putting the
 * finished output in place.
 */
/* sync_file_range() (Linux) */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/internal.h"
#include "outputs/convert.h"
#include "outputs/outdir.h"
#include "outputs/outfile.h"

/* malloc'd "<a><b>" or NULL. */
static char *concat(const char *a, const char *b)
{
	size_t n = strlen(a), m = strlen(b);
	char *s = malloc(n + m + 1);
	if (s != NULL) {
		memcpy(s, a, n);
		memcpy(s + n, b, m + 1);
	}
	return s;
}

/* ---- The output directory ------------------------------------------------------------------ */

/*
 * Removes `name` in directory `dirfd` and, for a directory, everything in
 * it, at most WEFT__OUTDIR_DEPTH_MAX levels deep (only the command's own
 * temporary directory, or a Pallas trace replaced with --force). 0 or -1.
 */
static int remove_at(int parent, const char *name, int depth)
{
	if (unlinkat(parent, name, 0) == 0)
		return 0;
	if ((errno != EISDIR && errno != EPERM) || depth >= WEFT__OUTDIR_DEPTH_MAX)
		return -1;
	int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
	if (fd < 0)
		return -1;
	DIR *d = fdopendir(fd);
	if (d == NULL) {
		close(fd);
		return -1;
	}
	int rc = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL)
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0 &&
		    remove_at(dirfd(d), e->d_name, depth + 1) < 0)
			rc = -1;
	closedir(d);
	return rc == 0 ? unlinkat(parent, name, AT_REMOVEDIR) : -1;
}

/* Removes a directory tree given by its path; 0 or -1. */
int weft__outdir_remove_tree(const char *path)
{
	return remove_at(AT_FDCWD, path, 0);
}

/* ---- Making a tree durable -------------------------------------------------------------- */

enum sync_pass { SYNC_START, SYNC_WAIT };

/*
 * One pass over the entries of directory `fd` (`path` for messages), at
 * most WEFT__OUTDIR_DEPTH_MAX levels deep: SYNC_START starts the
 * write-back of every file without waiting (Linux's sync_file_range;
 * nothing elsewhere), SYNC_WAIT fsyncs every file, then the directory
 * itself (its entries). Takes `fd`. 0, or < 0 after naming the path.
 */
static int sync_dir(int fd, const char *path, enum sync_pass pass, int depth)
{
	DIR *d = fdopendir(fd);
	if (d == NULL) {
		close(fd);
		return weft__error_errno(path, "cannot list");
	}
	int rc = 0;
	struct dirent *e;
	while (rc == 0 && (e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		int child = openat(dirfd(d), e->d_name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		char *child_path = weft__path_join(path, e->d_name);
		struct stat st;
		if (child_path == NULL)
			rc = weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
		else if (child < 0 || fstat(child, &st) != 0)
			rc = weft__error_errno(child_path, "cannot open");
		else if (S_ISDIR(st.st_mode) && depth < WEFT__OUTDIR_DEPTH_MAX) {
			rc = sync_dir(child, child_path, pass, depth + 1);
			child = -1; /* taken */
		} else if (S_ISREG(st.st_mode) && pass == SYNC_WAIT && fsync(child) != 0)
			rc = weft__error_errno(child_path, "cannot sync");
#ifdef SYNC_FILE_RANGE_WRITE
		else if (S_ISREG(st.st_mode) && pass == SYNC_START)
			sync_file_range(child, 0, 0, SYNC_FILE_RANGE_WRITE);
#endif
		if (child >= 0)
			close(child);
		free(child_path);
	}
	if (rc == 0 && pass == SYNC_WAIT && fsync(dirfd(d)) != 0)
		rc = weft__error_errno(path, "cannot sync");
	closedir(d);
	return rc;
}

/*
 * Makes the files and directories below `dir` durable before the tree is
 * renamed into place: the write-back of every file is started first, then
 * each is waited for. A file synced as soon as it is written makes the
 * file system commit its journal once per file; started together, the
 * files' blocks are allocated and committed in a few transactions
 * (`convert -t pallas` of a 4096-thread trace, 13,313 files: 6.9-7.6 s
 * when the writer synced each file as it closed it, 4.1-4.5 s so, 2.4 s
 * without any sync; docs/SCALING.md).
 */
int weft__outdir_sync_tree(const char *dir)
{
	int rc = 0;
	for (int pass = SYNC_START; rc == 0 && pass <= SYNC_WAIT; pass++) {
		int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		rc = fd < 0 ? weft__error_errno(dir, "cannot open")
			    : sync_dir(fd, dir, (enum sync_pass)pass, 0);
	}
	return rc;
}

/* 1 when `path` is an empty directory or holds only entries `kind` owns. */
static int is_kind_dir(const char *path, const weft__outdir_kind *kind)
{
	DIR *d = opendir(path);
	struct dirent *e;
	int ok = d != NULL;
	while (ok && (e = readdir(d)) != NULL)
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
			ok = kind->owns(e->d_name);
	if (d != NULL)
		closedir(d);
	return ok;
}

/*
 * Checks DIR before anything is read: missing is fine; existing needs
 * --force and must be an output of this kind (or empty), never anything
 * else (WEFT_EEXIST). *replace is set when DIR is to be replaced. 0 or < 0.
 */
int weft__outdir_check(weft_convert_report *r, const char *out, int force,
		       const weft__outdir_kind *kind, int *replace)
{
	struct stat st;
	*replace = 0;
	if (lstat(out, &st) != 0) {
		if (errno == ENOENT)
			return 0;
		weft__convert_say(r, "cannot use '%s': %s", out, strerror(errno));
		return WEFT_EIO;
	}
	if (!force) {
		weft__convert_say(r, "'%s' exists; use --force to replace it", out);
		return WEFT_EEXIST;
	}
	if (!S_ISDIR(st.st_mode) || !is_kind_dir(out, kind)) {
		weft__convert_say(r, "'%s' is not %s directory: not replaced, even with "
			"--force", out, kind->what);
		return WEFT_EEXIST;
	}
	*replace = 1;
	return 0;
}

/* Creates "<out>.<what>.XXXXXX" (mode 0777 less the umask); NULL after saying why. */
char *weft__outdir_make_sibling(weft_convert_report *r, const char *out, const char *what)
{
	char suffix[32];
	snprintf(suffix, sizeof suffix, ".%s.XXXXXX", what);
	char *path = concat(out, suffix);
	if (path == NULL)
		return weft__convert_say(r, "out of memory"), NULL;
	if (mkdtemp(path) == NULL) {
		weft__convert_say(r, "cannot create '%s': %s", path, strerror(errno));
		free(path);
		return NULL;
	}
	mode_t mask = umask(0);
	umask(mask);
	chmod(path, 0777 & ~mask);
	return path;
}

/*
 * Replaces the existing output DIR by the new one: DIR is moved aside
 * (renamed over an empty directory made for it), the new trace renamed
 * to DIR, then the old one removed; DIR is put back if the second rename
 * fails. 0 or -1.
 */
static int replace_output(weft_convert_report *r, const char *tmp, const char *out)
{
	char *aside = weft__outdir_make_sibling(r, out, "old");
	if (aside == NULL)
		return -1;
	int rc = -1;
	if (rename(out, aside) != 0) {
		weft__convert_say(r, "cannot move '%s' aside: %s", out, strerror(errno));
		rmdir(aside);
	} else if (rename(tmp, out) != 0) {
		weft__convert_say(r, "cannot rename '%s' to '%s': %s", tmp, out,
			strerror(errno));
		rename(aside, out);
	} else {
		rc = 0;
		if (weft__outdir_remove_tree(aside) < 0)
			weft__convert_say(r, "warning: the old output is left in '%s'", aside);
	}
	free(aside);
	return rc;
}

/*
 * Puts the finished output in place (see replace_output), its files and
 * directories made durable first (weft__outdir_sync_tree); 0 or -1.
 */
int weft__outdir_commit(weft_convert_report *r, const char *tmp, const char *out,
			int replace)
{
	int rc;
	if (weft__outdir_sync_tree(tmp) < 0) {
		weft__convert_say(r, "cannot write '%s': %s", out, weft_last_error());
		rc = -1;
	} else if (replace) {
		rc = replace_output(r, tmp, out);
	} else if ((rc = rename(tmp, out)) != 0) {
		if (errno == EEXIST || errno == ENOTEMPTY)
			weft__convert_say(r, "'%s' appeared meanwhile; use --force to "
				"replace it", out);
		else
			weft__convert_say(r, "cannot rename '%s' to '%s': %s", tmp, out,
				strerror(errno));
	}
	if (rc == 0)
		weft__sync_parent(out);
	return rc;
}
