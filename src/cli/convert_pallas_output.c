/* SPDX-License-Identifier: MIT */
/*
 * cli/convert_pallas_output.c - `weft convert --to pallas`: the output
 * directory: what may be replaced (--force: a Pallas trace or an empty
 * directory only), the temporary directory next to it, and putting the
 * finished trace in place.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/convert_pallas.h"
#include "cli/outfile.h"

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
 * it, at most REMOVE_DEPTH_MAX levels deep (only the command's own
 * temporary directory, or a Pallas trace replaced with --force). 0 or -1.
 */
static int remove_at(int parent, const char *name, int depth)
{
	if (unlinkat(parent, name, 0) == 0)
		return 0;
	if ((errno != EISDIR && errno != EPERM) || depth >= REMOVE_DEPTH_MAX)
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
int cli_pallas_remove_tree(const char *path)
{
	return remove_at(AT_FDCWD, path, 0);
}

/* 1 when a directory entry belongs to a Pallas trace (or its leftovers). */
static int pallas_entry(const char *name)
{
	size_t n = strlen(name);
	return strncmp(name, "archive_", 8) == 0 ||
	       (n > 7 && strcmp(name + n - 7, ".pallas") == 0) ||
	       (n > 11 && strcmp(name + n - 11, ".pallas.tmp") == 0);
}

/* 1 when `path` is an empty directory or holds only a Pallas trace's entries. */
static int is_pallas_dir(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *e;
	int ok = d != NULL;
	while (ok && (e = readdir(d)) != NULL)
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
			ok = pallas_entry(e->d_name);
	if (d != NULL)
		closedir(d);
	return ok;
}

/*
 * Checks DIR before anything is read: missing is fine; existing needs
 * --force and must be a Pallas trace (or empty), never anything else.
 * *replace is set when DIR is to be replaced. An exit code.
 */
int cli_pallas_check_output(const char *out, int force, int *replace)
{
	struct stat st;
	*replace = 0;
	if (lstat(out, &st) != 0) {
		if (errno == ENOENT)
			return CLI_EXIT_OK;
		fprintf(stderr, "weft convert: cannot use '%s': %s\n", out, strerror(errno));
		return CLI_EXIT_FAILURE;
	}
	if (!force) {
		fprintf(stderr, "weft convert: '%s' exists; use --force to replace it\n", out);
		return CLI_EXIT_FAILURE;
	}
	if (!S_ISDIR(st.st_mode) || !is_pallas_dir(out)) {
		fprintf(stderr, "weft convert: '%s' is not a Pallas trace directory: not "
			"replaced, even with --force\n", out);
		return CLI_EXIT_FAILURE;
	}
	*replace = 1;
	return CLI_EXIT_OK;
}

/* Creates "<out>.<what>.XXXXXX" (mode 0777 less the umask); NULL after printing why. */
char *cli_pallas_make_sibling_dir(const char *out, const char *what)
{
	char suffix[32];
	snprintf(suffix, sizeof suffix, ".%s.XXXXXX", what);
	char *path = concat(out, suffix);
	if (path == NULL)
		return cli_pallas_out_of_memory(), NULL;
	if (mkdtemp(path) == NULL) {
		fprintf(stderr, "weft convert: cannot create '%s': %s\n", path, strerror(errno));
		free(path);
		return NULL;
	}
	mode_t mask = umask(0);
	umask(mask);
	chmod(path, 0777 & ~mask);
	return path;
}

/*
 * Replaces the existing trace DIR by the new one: DIR is moved aside
 * (renamed over an empty directory made for it), the new trace renamed
 * to DIR, then the old one removed; DIR is put back if the second rename
 * fails. 0 or -1.
 */
static int replace_output(const char *tmp, const char *out)
{
	char *aside = cli_pallas_make_sibling_dir(out, "old");
	if (aside == NULL)
		return -1;
	int rc = -1;
	if (rename(out, aside) != 0) {
		fprintf(stderr, "weft convert: cannot move '%s' aside: %s\n", out, strerror(errno));
		rmdir(aside);
	} else if (rename(tmp, out) != 0) {
		fprintf(stderr, "weft convert: cannot rename '%s' to '%s': %s\n", tmp, out,
			strerror(errno));
		rename(aside, out);
	} else {
		rc = 0;
		if (cli_pallas_remove_tree(aside) < 0)
			fprintf(stderr, "weft convert: warning: the old trace is left in '%s'\n", aside);
	}
	free(aside);
	return rc;
}

/* Puts the finished trace in place (see replace_output); 0 or -1. */
int cli_pallas_commit_output(const char *tmp, const char *out, int replace)
{
	int rc;
	if (replace) {
		rc = replace_output(tmp, out);
	} else if ((rc = rename(tmp, out)) != 0) {
		if (errno == EEXIST || errno == ENOTEMPTY)
			fprintf(stderr, "weft convert: '%s' appeared meanwhile; use --force to "
				"replace it\n", out);
		else
			fprintf(stderr, "weft convert: cannot rename '%s' to '%s': %s\n", tmp, out,
				strerror(errno));
	}
	if (rc == 0)
		cli_sync_parent(out);
	return rc;
}
