/* SPDX-License-Identifier: MIT */
/*
 * outputs/outdir.c - outputs that are directories (a Pallas trace, the
 * emulated Paraver traces): what may be replaced (--force: an output of
 * the same kind or an empty directory only, never anything else), the
 * temporary directory next to it, and putting the finished output in
 * place.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

/* Puts the finished output in place (see replace_output); 0 or -1. */
int weft__outdir_commit(weft_convert_report *r, const char *tmp, const char *out,
			int replace)
{
	int rc;
	if (replace) {
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
