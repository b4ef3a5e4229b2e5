/* SPDX-License-Identifier: MIT */
/*
 * outputs/outfile.c - output files written through a temporary file and a
 * rename (see outfile.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/internal.h"
#include "outputs/outfile.h"

/* ---- Removal on signals ------------------------------------------------------ */

/*
 * The temporary files to remove when a signal ends the command: one slot
 * per open output file (Paraver writes three at once). A slot's path is
 * written before its flag is raised and the flag is lowered before the
 * slot is left; slots are taken in turn, so that a slot just left is not
 * written again while a handler on another thread may still read it.
 */
#define PENDING_MAX 8
static char pending_path[PENDING_MAX][4096];
static atomic_int pending_armed[PENDING_MAX]; /* lock-free: safe in a handler */
static int pending_next;
static int handlers_installed;
/* The signals that end a command: interrupt, termination, hang-up, quit,
 * a closed pipe, the file size limit. */
static const int end_signals[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGXFSZ };
#define END_SIGNAL_COUNT (sizeof end_signals / sizeof end_signals[0])

/*
 * Removes every pending temporary file (unlink is async-signal-safe), then
 * dies of the signal.
 */
static void remove_on_signal(int sig)
{
	for (int i = 0; i < PENDING_MAX; i++)
		if (atomic_load_explicit(&pending_armed[i], memory_order_acquire))
			unlink(pending_path[i]);
	signal(sig, SIG_DFL);
	raise(sig);
}

/*
 * Installs the handler on the signals that end a command, once. A signal
 * the caller ignores (nohup) stays ignored.
 */
static void install_handlers(void)
{
	struct sigaction sa;

	if (handlers_installed)
		return;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = remove_on_signal;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < END_SIGNAL_COUNT; i++) {
		struct sigaction old;
		if (sigaction(end_signals[i], NULL, &old) == 0 && old.sa_handler != SIG_IGN)
			sigaction(end_signals[i], &sa, NULL);
	}
	handlers_installed = 1;
}

/*
 * Holds back (block = 1) or lets through the signals that end a command on
 * this thread, keeping the previous mask in *saved.
 */
static void hold_end_signals(int block, sigset_t *saved)
{
	if (!block) {
		pthread_sigmask(SIG_SETMASK, saved, NULL);
		return;
	}
	sigset_t set;
	sigemptyset(&set);
	for (size_t i = 0; i < END_SIGNAL_COUNT; i++)
		sigaddset(&set, end_signals[i]);
	pthread_sigmask(SIG_BLOCK, &set, saved);
}

/*
 * Arms the removal of `path` on the signals that end a command. Returns
 * its slot (for watch_end), or -1 when the path is too long or every slot
 * is taken (the file is then only removed by the command itself).
 */
static int watch_temp_file(const char *path)
{
	size_t len = strlen(path);
	if (len >= sizeof pending_path[0])
		return -1;
	for (int tries = 0; tries < PENDING_MAX; tries++) {
		int slot = pending_next;
		pending_next = (pending_next + 1) % PENDING_MAX;
		if (atomic_load(&pending_armed[slot]))
			continue;
		memcpy(pending_path[slot], path, len + 1);
		/* the path is complete before the flag says so */
		atomic_store_explicit(&pending_armed[slot], 1, memory_order_release);
		return slot;
	}
	return -1;
}

/* Disarms the slot of a file that is put in place or removed. */
static void watch_end(int slot)
{
	if (slot >= 0)
		atomic_store(&pending_armed[slot], 0);
}

/* ---- Opening -------------------------------------------------------------------- */

/* An existing destination needs --force; a directory is never replaced. */
static int check_destination(const char *path, int force)
{
	struct stat st;

	if (stat(path, &st) != 0)
		return 0;
	if (S_ISDIR(st.st_mode))
		return weft__error(WEFT_EINVAL, NULL, WEFT_NO_OFFSET, "'%s' is a directory", path);
	if (!force)
		return weft__error(WEFT_EEXIST, NULL, WEFT_NO_OFFSET,
				   "'%s' exists; use --force to replace it", path);
	return 0;
}

/*
 * Creates "<path>.tmp.XXXXXX" with the permissions a new file would get
 * (mkstemp makes it 0600).
 */
int weft__outfile_open(weft__outfile *o, const char *path, int force, int watch)
{
	memset(o, 0, sizeof *o);
	o->watch_slot = -1;
	o->force = force;
	if (strcmp(path, "-") == 0) {
		o->fd = STDOUT_FILENO;
		return 0;
	}
	int rc = check_destination(path, force);
	if (rc < 0)
		return rc;
	o->path = path;
	size_t len = strlen(path) + sizeof ".tmp.XXXXXX";
	if ((o->tmp_path = malloc(len)) == NULL)
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	snprintf(o->tmp_path, len, "%s.tmp.XXXXXX", path);
	/* A signal that comes once the file exists finds it in the table. */
	sigset_t saved;
	if (watch) {
		install_handlers();
		hold_end_signals(1, &saved);
	}
	o->fd = mkstemp(o->tmp_path);
	if (o->fd >= 0 && watch)
		o->watch_slot = watch_temp_file(o->tmp_path);
	if (watch)
		hold_end_signals(0, &saved);
	if (o->fd < 0) {
		rc = weft__error(WEFT_EIO, NULL, WEFT_NO_OFFSET, "cannot create '%s': %s",
				 o->tmp_path, strerror(errno));
		free(o->tmp_path);
		o->tmp_path = NULL;
		return rc;
	}
	mode_t mask = umask(0);
	umask(mask);
	if (fchmod(o->fd, 0666 & ~mask) != 0) {
		/* keep 0600: still a usable file */
	}
	return 0;
}

/* ---- Committing --------------------------------------------------------------- */

/* Syncs the directory holding `path`, so that a rename in it is durable. */
void weft__sync_parent(const char *path)
{
	char *dir = strdup(path);
	if (dir == NULL)
		return;
	char *slash = strrchr(dir, '/');
	const char *name = slash == NULL ? "." : slash == dir ? "/" : dir;
	if (slash != NULL && slash != dir)
		*slash = '\0';
	int fd = open(name, O_RDONLY | O_DIRECTORY);
	if (fd >= 0) {
		fsync(fd);
		close(fd);
	}
	free(dir);
}

/*
 * Moves the temporary file to the destination. Without force, link()
 * fails if the destination appeared meanwhile (rename would replace it);
 * file systems without hard links get a check, then rename.
 */
static int put_in_place(const weft__outfile *o)
{
	if (o->force)
		return rename(o->tmp_path, o->path);
	if (link(o->tmp_path, o->path) == 0)
		return unlink(o->tmp_path);
	if (errno == EEXIST)
		return -1;
	if (access(o->path, F_OK) == 0) {
		errno = EEXIST;
		return -1;
	}
	return rename(o->tmp_path, o->path);
}

/* Syncs, closes and puts the temporary file in place (see outfile.h). */
int weft__outfile_commit(weft__outfile *o)
{
	int rc = 0;
	if (o->tmp_path == NULL)
		return 0;
	const char *step = "write";
	int ok = fsync(o->fd) == 0;
	if (close(o->fd) != 0 && ok) {
		ok = 0;
		step = "close";
	}
	o->fd = -1;
	if (ok && put_in_place(o) != 0) {
		ok = 0;
		step = "rename to";
	}
	if (!ok && step[0] == 'r' && errno == EEXIST)
		rc = weft__error(WEFT_EEXIST, NULL, WEFT_NO_OFFSET,
				 "'%s' appeared meanwhile; use --force to replace it", o->path);
	else if (!ok)
		rc = weft__error(WEFT_EIO, NULL, WEFT_NO_OFFSET, "cannot %s '%s': %s", step,
				 step[0] == 'r' ? o->path : o->tmp_path, strerror(errno));
	else
		weft__sync_parent(o->path);
	watch_end(o->watch_slot);
	o->watch_slot = -1;
	if (!ok)
		unlink(o->tmp_path);
	free(o->tmp_path);
	o->tmp_path = NULL;
	return rc;
}

/* Closes and removes the temporary file; the destination is untouched. */
void weft__outfile_abort(weft__outfile *o)
{
	if (o->tmp_path == NULL)
		return;
	if (o->fd >= 0)
		close(o->fd);
	unlink(o->tmp_path);
	watch_end(o->watch_slot);
	o->watch_slot = -1;
	free(o->tmp_path);
	o->tmp_path = NULL;
}
