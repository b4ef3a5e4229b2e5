/* SPDX-License-Identifier: MIT */
/*
 * outputs/paraver/paraver_cfg.c - the Paraver views (.cfg files) that come
 * with an emulated Paraver output, in OUT/cfg/ as ovniemu puts them in the
 * trace's cfg/:
 *
 * - ovni's own 53 views (one per channel and view: thread/nosv/
 *   task-type.cfg, cpu/ovni/pid.cfg, ...). They are ovni's files, not
 *   weft's: copied from an ovni installation when there is one (ovniemu
 *   copies them from its installed share/ovni, or $OVNI_CONFIG_DIR);
 * - the views the emulator makes for the trace (the nOS-V hardware
 *   counters', weft__emu_views()).
 *
 * Everything is written into the output's temporary directory, so it is
 * renamed into place with the traces.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/internal.h"
#include "outputs/paraver/paraver_cfg.h"

#define CFG_DEPTH_MAX 4   /* cpu/<model>/<file>: 3 levels below the source */

/* 1 when `dir` is a directory holding thread/ or cpu/. */
static int holds_views(const char *dir)
{
	char path[PATH_MAX];
	struct stat st;
	static const char *const views[] = { "thread", "cpu" };
	for (int i = 0; i < 2; i++)
		if (snprintf(path, sizeof path, "%s/%s", dir, views[i]) < (int)sizeof path &&
		    stat(path, &st) == 0 && S_ISDIR(st.st_mode))
			return 1;
	return 0;
}

int weft__cfg_source(const char *option, char **out)
{
	*out = NULL;
	if (option != NULL && option[0] == '\0')
		return 0;
	if (option != NULL) {
		if (!holds_views(option))
			return weft__error(WEFT_EINVAL, option, WEFT_NO_OFFSET,
					   "expected a directory of ovni's Paraver views, with "
					   "thread/ and cpu/ below it (an installed ovni's "
					   "share/ovni, or ovni's sources' cfg/)");
		*out = strdup(option);
		return *out != NULL ? 0 : WEFT_ENOMEM;
	}
	const char *places[] = { getenv("OVNI_CONFIG_DIR"), "/usr/local/share/ovni",
				 "/usr/share/ovni" };
	for (size_t i = 0; i < sizeof places / sizeof places[0]; i++)
		if (places[i] != NULL && places[i][0] != '\0' && holds_views(places[i])) {
			*out = strdup(places[i]);
			return *out != NULL ? 0 : WEFT_ENOMEM;
		}
	return 0;
}

/* Makes directory `path` unless it exists. 0 or WEFT_EIO. */
static int make_dir(const char *path)
{
	if (mkdir(path, 0777) == 0 || errno == EEXIST)
		return 0;
	return weft__error(WEFT_EIO, path, WEFT_NO_OFFSET, "cannot make the directory: %s",
			   strerror(errno));
}

int weft__paraver_write_whole(const char *path, const void *data, size_t len,
			       const char *name)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
	int rc = fd < 0 ? errno : weft__write_full(fd, data, len, WEFT__AT_POSITION, NULL);
	if (fd >= 0 && rc == 0 && fsync(fd) != 0)
		rc = errno;
	if (fd >= 0 && close(fd) != 0 && rc == 0)
		rc = errno;
	if (rc != 0)
		return weft__error(WEFT_EIO, name != NULL ? name : path, WEFT_NO_OFFSET,
				   "cannot write: %s", strerror(rc));
	return 0;
}

/* Copies the regular file `src` (at most WEFT__CFG_FILE_MAX bytes) to `dst`. */
static int copy_file(const char *src, const char *dst)
{
	int fd = open(src, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) != 0) {
		int err = errno;
		if (fd >= 0)
			close(fd);
		return weft__error(WEFT_EIO, src, WEFT_NO_OFFSET, "cannot read: %s",
				   strerror(err));
	}
	if (!S_ISREG(st.st_mode) || st.st_size > (off_t)WEFT__CFG_FILE_MAX) {
		close(fd);
		return weft__error(WEFT_EIO, src, WEFT_NO_OFFSET, "expected a Paraver view "
				   "(a regular file of at most %u bytes)", WEFT__CFG_FILE_MAX);
	}
	size_t len = (size_t)st.st_size, got = 0;
	char *buf = malloc(len + 1);
	while (buf != NULL && got < len) {
		ssize_t n = read(fd, buf + got, len - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	int rc = buf == NULL ? WEFT_ENOMEM
	       : got < len ? weft__error(WEFT_EIO, src, (uint64_t)got, "the file shrank while "
					 "read (expected %zu bytes)", len)
	       : weft__paraver_write_whole(dst, buf, len, NULL);
	free(buf);
	return rc;
}

/* 1 when `name` ends in ".cfg" (and is more than that). */
static int is_cfg_name(const char *name)
{
	size_t n = strlen(name);
	return n > 4 && strcmp(name + n - 4, ".cfg") == 0;
}

/* Copies the views below `src` into `dst` (depth: levels below the top). */
static int copy_tree(const char *src, const char *dst, int depth, size_t *copied)
{
	DIR *d = opendir(src);
	if (d == NULL)
		return weft__error(WEFT_EIO, src, WEFT_NO_OFFSET, "cannot read the directory: %s",
				   strerror(errno));
	int rc = make_dir(dst);
	char s[PATH_MAX], t[PATH_MAX];
	struct dirent *ent;
	while (rc == 0 && (ent = readdir(d)) != NULL) {
		struct stat st;
		if (ent->d_name[0] == '.' ||
		    snprintf(s, sizeof s, "%s/%s", src, ent->d_name) >= (int)sizeof s ||
		    snprintf(t, sizeof t, "%s/%s", dst, ent->d_name) >= (int)sizeof t ||
		    stat(s, &st) != 0)
			continue;
		if (S_ISDIR(st.st_mode) && depth + 1 < CFG_DEPTH_MAX)
			rc = copy_tree(s, t, depth + 1, copied);
		else if (S_ISREG(st.st_mode) && is_cfg_name(ent->d_name)) {
			if (*copied >= WEFT__CFG_FILES_MAX)
				rc = weft__error(WEFT_EIO, src, WEFT_NO_OFFSET, "more than %d "
						 "Paraver views: not a directory of ovni's views",
						 WEFT__CFG_FILES_MAX);
			else if ((rc = copy_file(s, t)) == 0)
				(*copied)++;
		}
	}
	closedir(d);
	return rc;
}

int weft__cfg_copy(const char *src, const char *dst, size_t *copied)
{
	static const char *const views[] = { "thread", "cpu" };
	char s[PATH_MAX], t[PATH_MAX];
	int rc = make_dir(dst);
	for (int i = 0; rc == 0 && i < 2; i++) {
		struct stat st;
		if (snprintf(s, sizeof s, "%s/%s", src, views[i]) >= (int)sizeof s ||
		    snprintf(t, sizeof t, "%s/%s", dst, views[i]) >= (int)sizeof t)
			return weft__error(WEFT_EIO, src, WEFT_NO_OFFSET, "path too long");
		if (stat(s, &st) == 0 && S_ISDIR(st.st_mode))
			rc = copy_tree(s, t, 1, copied);
	}
	return rc;
}

/* Where weft__cfg_write_generated() writes, and what it counted. */
typedef struct generated {
	const char *dst;
	size_t written;
} generated;

/* One generated view: `rel` below the cfg directory, its directories made. */
static int write_view(void *arg, const char *rel, const char *text)
{
	generated *g = arg;
	char path[PATH_MAX];
	if (snprintf(path, sizeof path, "%s/%s", g->dst, rel) >= (int)sizeof path)
		return weft__error(WEFT_EIO, g->dst, WEFT_NO_OFFSET, "path too long");
	int rc = make_dir(g->dst);
	for (char *slash = strchr(path + strlen(g->dst) + 1, '/'); rc == 0 && slash != NULL;
	     slash = strchr(slash + 1, '/')) {
		*slash = '\0';
		rc = make_dir(path);
		*slash = '/';
	}
	if (rc == 0 && (rc = weft__paraver_write_whole(path, text, strlen(text), NULL)) == 0)
		g->written++;
	return rc;
}

int weft__cfg_write_generated(weft__emu *e, const char *dst, size_t *written)
{
	generated g = { dst, 0 };
	int rc = weft__emu_views(e, write_view, &g);
	*written = g.written;
	return rc;
}
