/* SPDX-License-Identifier: MIT */
/*
 * outputs/outdir.h - outputs written as a directory (outdir.c): checked
 * before anything is read, written into a temporary directory next to
 * it, renamed into place at the end.
 */
#ifndef WEFT_OUTPUTS_OUTDIR_H
#define WEFT_OUTPUTS_OUTDIR_H

#include "weft/convert.h"

#define WEFT__OUTDIR_DEPTH_MAX 32  /* directory levels removed at most */

/* What kind of output a directory holds, for --force. */
typedef struct weft__outdir_kind {
	const char *what;               /* "a Pallas trace" */
	int (*owns)(const char *name);  /* 1: an entry such an output has */
} weft__outdir_kind;

/*
 * Checks DIR before anything is read: missing is fine; existing needs
 * --force and must be an output of `kind` (or empty), never anything
 * else (WEFT_EEXIST). *replace is set when DIR is to be replaced. 0 or < 0.
 */
int weft__outdir_check(weft_convert_report *r, const char *out, int force,
		       const weft__outdir_kind *kind, int *replace);
/* Creates "<out>.<what>.XXXXXX" (mode 0777 less the umask); NULL after saying why. */
char *weft__outdir_make_sibling(weft_convert_report *r, const char *out, const char *what);
/*
 * Makes the files and directories below `dir` durable (started together,
 * then waited for: one journal commit per file is the slow way); 0 or < 0
 * (weft's error, naming the path).
 */
int weft__outdir_sync_tree(const char *dir);
/* Puts the finished output in place, synced (weft__outdir_sync_tree), replacing
 * DIR when `replace`; 0 or -1. */
int weft__outdir_commit(weft_convert_report *r, const char *tmp, const char *out,
			int replace);
/* Removes a directory tree given by its path (at most DEPTH_MAX deep); 0 or -1. */
int weft__outdir_remove_tree(const char *path);

#endif
