/* SPDX-License-Identifier: MIT */
/*
 * thread.c - processes and thread streams: directories, stream files,
 * opening and closing, and what happens to streams that are never closed.
 *
 * Streams still open when the process exits normally are written out by
 * the library destructor, and those of threads that exit without
 * ovni_thread_free() by a thread-exit destructor. Their stream.json is
 * rewritten WITHOUT "finished": the user never closed them, and readers
 * must be able to tell (docs/libovni.md).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "libovni_priv.h"

struct ov_proc ov_proc;
OV_TLS struct ov_fast ov_fast;
/* Set once the thread called ovni_thread_free(): it cannot init again. */
static OV_TLS int ov_self_finished;

/* Open streams of the process, for the exit handler and fork(). */
static pthread_mutex_t ov_registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ov_thread *ov_registry;
static pthread_key_t ov_exit_key;
static pthread_once_t ov_hooks_once = PTHREAD_ONCE_INIT;

static void ov_at_thread_exit(void *arg);
static void ov_at_fork_child(void);

/* ---- Registry ------------------------------------------------------------ */

/* Registers an open stream (only at thread init: no lock on the emit path). */
static void
ov_registry_add(struct ov_thread *t)
{
	pthread_mutex_lock(&ov_registry_lock);
	t->prev = NULL;
	t->next = ov_registry;
	if (ov_registry != NULL)
		ov_registry->prev = t;
	ov_registry = t;
	pthread_mutex_unlock(&ov_registry_lock);
}

/* Caller holds ov_registry_lock. */
static void
ov_registry_unlink(struct ov_thread *t)
{
	if (t->prev != NULL)
		t->prev->next = t->next;
	else
		ov_registry = t->next;
	if (t->next != NULL)
		t->next->prev = t->prev;
	t->prev = t->next = NULL;
}

/* Installs the thread-exit and fork hooks once per process. */
static void
ov_install_hooks(void)
{
	if (pthread_key_create(&ov_exit_key, ov_at_thread_exit) != 0)
		ov_die("ovni_proc_init", "pthread_key_create failed");
	if (pthread_atfork(NULL, NULL, ov_at_fork_child) != 0)
		ov_die("ovni_proc_init", "pthread_atfork failed");
}

/* ---- Version ------------------------------------------------------------ */

/* The libovni version this library implements, and its build tag. */
void
ovni_version_get(const char **version, const char **commit)
{
	*version = OVNI_LIB_VERSION;
	*commit = OVNI_GIT_COMMIT;
}

/* Accepts programs built against 1.x with x <= our minor (patch ignored),
 * the compatibility rule of libovni. */
void
ovni_version_check_str(const char *version)
{
	int want[3], have[3];

	if (version == NULL)
		ov_die("ovni_version_check", "the version string is NULL");
	if (ov_version_parse(version, want) != 0)
		ov_die("ovni_version_check", "cannot parse version \"%s\"", version);
	if (ov_version_parse(OVNI_LIB_VERSION, have) != 0)
		ov_die("ovni_version_check", "bad library version %s", OVNI_LIB_VERSION);
	if (want[0] != have[0])
		ov_die("ovni_version_check", "incompatible major version: program wants %s, library is %s",
		       version, OVNI_LIB_VERSION);
	if (want[1] > have[1])
		ov_die("ovni_version_check", "program wants %s, library is the older %s",
		       version, OVNI_LIB_VERSION);
}

/* ---- Process ------------------------------------------------------------ */

/* Parses WEFT_OVNI_BUFSIZE ("4M", "65536", "1G"); the default is
 * libovni's 2 MiB. */
static size_t
ov_bufsize_from_env(void)
{
	const char *s = getenv("WEFT_OVNI_BUFSIZE");
	if (s == NULL || *s == '\0')
		return (size_t) OVNI_MAX_EV_BUF;

	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	unsigned shift = 0;
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	default: break;
	}
	if (errno != 0 || end == s || *end != '\0' || v > (1ull << 40) >> shift)
		ov_die("ovni_proc_init", "bad WEFT_OVNI_BUFSIZE=%s (bytes, K/M/G suffix allowed)", s);
	v <<= shift;
	return v < OV_MIN_BUF ? OV_MIN_BUF : (size_t) v;
}

/* Creates <base>/loom.<loom>/proc.<pid> and stores its path in out. */
static void
ov_make_procdir(char *out, const char *base, const char *loom, int pid)
{
	if (snprintf(out, PATH_MAX, "%s/loom.%s/proc.%d", base, loom, pid) >= PATH_MAX)
		ov_die("ovni_proc_init", "path too long: %s/loom.%s/proc.%d", base, loom, pid);
	if (ov_mkpath(out, 0755) != 0)
		ov_die("ovni_proc_init", "cannot create directory %s:", out);
}

/* Once per process: where its streams go ($OVNI_TRACEDIR, default
 * "ovni"; written under $OVNI_TMPDIR first when that is set). */
void
ovni_proc_init(int app, const char *loom, int pid)
{
	if (ov_proc.ready)
		ov_die("ovni_proc_init", "pid %d already initialized", pid);
	if (ov_proc.finished)
		ov_die("ovni_proc_init", "pid %d has finished, cannot init again", pid);
	if (loom == NULL || loom[0] == '\0' || strchr(loom, '/') != NULL)
		ov_die("ovni_proc_init", "bad loom name \"%s\"", loom ? loom : "(null)");
	if (strlen(loom) >= OVNI_MAX_HOSTNAME)
		ov_die("ovni_proc_init", "loom name too long: %s", loom);

	pthread_once(&ov_hooks_once, ov_install_hooks);
	memset(&ov_proc, 0, sizeof(ov_proc));
	strcpy(ov_proc.loom, loom);
	ov_proc.app = app;
	ov_proc.pid = pid;
	ov_proc.bufsize = ov_bufsize_from_env();

	const char *tracedir = getenv("OVNI_TRACEDIR");
	const char *tmpdir = getenv("OVNI_TMPDIR");
	if (tracedir == NULL || tracedir[0] == '\0')
		tracedir = OVNI_TRACEDIR;
	if (tmpdir != NULL && tmpdir[0] != '\0') {
		ov_proc.move_to_final = 1;
		snprintf(ov_proc.tmpdir, PATH_MAX, "%s", tmpdir);
		if (snprintf(ov_proc.loomdir, PATH_MAX, "%s/loom.%s", tmpdir, loom) >= PATH_MAX)
			ov_die("ovni_proc_init", "path too long: %s", tmpdir);
		ov_make_procdir(ov_proc.procdir, tmpdir, loom, pid);
		ov_make_procdir(ov_proc.procdir_final, tracedir, loom, pid);
	} else {
		ov_make_procdir(ov_proc.procdir, tracedir, loom, pid);
	}
	ov_proc.ready = 1;
}

/* Rank and number of ranks of the process. As in libovni, the calling
 * thread must be initialized, and they go into its stream only (at
 * close; the emulator takes them from any stream of the process). */
void
ovni_proc_set_rank(int rank, int nranks)
{
	if (!ov_proc.ready)
		ov_die("ovni_proc_set_rank", "the process is not initialized");
	if (ov_fast.t == NULL)
		ov_die("ovni_proc_set_rank", "thread not yet initialized (call "
		       "ovni_thread_init first)");
	ov_fast.t->rank_set = 1;
	ov_fast.t->rank = rank;
	ov_fast.t->nranks = nranks;
}

/* Removes a directory if it is empty (the OVNI_TMPDIR leftovers). */
static void
ov_try_rmdir(const char *dir)
{
	if (dir[0] != '\0' && rmdir(dir) != 0 && errno != ENOTEMPTY
	    && errno != EEXIST && errno != ENOENT)
		ov_warn("ovni_proc_fini", "cannot remove %s:", dir);
}

/* Ends the process: removes the OVNI_TMPDIR directories left empty. */
void
ovni_proc_fini(void)
{
	if (!ov_proc.ready)
		ov_die("ovni_proc_fini", "the process is not initialized");
	if (ov_proc.move_to_final) {
		ov_try_rmdir(ov_proc.procdir);
		ov_try_rmdir(ov_proc.loomdir);
		ov_try_rmdir(ov_proc.tmpdir);
	}
	ov_proc.ready = 0;
	ov_proc.finished = 1;
}

/* ---- Thread streams ------------------------------------------------------ */

/* The state of the calling thread, which must be initialized. */
struct ov_thread *
ov_thread_get(const char *func)
{
	if (ov_self_finished && ov_fast.t == NULL)
		ov_die(func, "the thread already called ovni_thread_free");
	if (ov_fast.t == NULL)
		ov_die(func, "the thread is not initialized (call ovni_thread_init first)");
	return ov_fast.t;
}

/* Creates <procdir>/thread.<tid> and stores its path in out. */
static void
ov_make_thread_dir(char *out, const char *procdir, pid_t tid)
{
	if (snprintf(out, PATH_MAX, "%s/thread.%d", procdir, (int) tid) >= PATH_MAX)
		ov_die("ovni_thread_init", "path too long: %s/thread.%d", procdir, (int) tid);
	if (ov_mkpath(out, 0755) != 0)
		ov_die("ovni_thread_init", "cannot create directory %s:", out);
}

/* Creates stream.obs with its 8-byte header ("ovni", version 1). */
static void
ov_open_stream(struct ov_thread *t)
{
	char path[PATH_MAX];
	struct ovni_stream_header h;

	if (snprintf(path, sizeof(path), "%s/stream.obs", t->dir) >= (int) sizeof(path))
		ov_die("ovni_thread_init", "path too long: %s/stream.obs", t->dir);
	t->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (t->fd < 0)
		ov_die("ovni_thread_init", "cannot create %s:", path);
	memcpy(h.magic, OVNI_STREAM_MAGIC, 4);
	h.version = OVNI_STREAM_VERSION;
	ov_write_all(t->fd, &h, sizeof(h), path);
}

/* Allocates the state and event buffer of a new stream. */
static struct ov_thread *
ov_thread_alloc(pid_t tid)
{
	struct ov_thread *t = calloc(1, sizeof(*t));
	if (t == NULL)
		ov_die("ovni_thread_init", "out of memory:");
	t->buf = malloc(ov_proc.bufsize + OV_SLACK);
	if (t->buf == NULL)
		ov_die("ovni_thread_init", "cannot allocate a %zu-byte event buffer:",
		       ov_proc.bufsize);
	t->tid = tid;
	t->fd = -1;
	pthread_mutex_init(&t->lock, NULL);
	return t;
}

/* Opens the stream thread.<tid> of the process for the calling thread:
 * stream.obs with its header, and a stream.json without "finished" so
 * that a crash leaves a recognisably unfinished stream. */
void
ovni_thread_init(pid_t tid)
{
	if (ov_fast.t != NULL) {
		ov_warn("ovni_thread_init", "thread %d already initialized, ignored", (int) tid);
		return;
	}
	if (ov_self_finished)
		ov_die("ovni_thread_init", "thread %d has finished, cannot init again", (int) tid);
	if (tid == 0)
		ov_die("ovni_thread_init", "cannot use tid=0");
	if (!ov_proc.ready)
		ov_die("ovni_thread_init", "the process is not initialized (call ovni_proc_init first)");

	struct ov_thread *t = ov_thread_alloc(tid);
	ov_make_thread_dir(t->dir, ov_proc.procdir, tid);
	if (ov_proc.move_to_final)
		ov_make_thread_dir(t->dir_final, ov_proc.procdir_final, tid);
	ov_open_stream(t);
	t->meta = ov_meta_new(t);
	ov_meta_store(t);

	ov_fast.pos = t->buf;
	ov_fast.limit = t->buf + ov_proc.bufsize - 1;
	ov_fast.t = t;
	t->fast = &ov_fast;
	ov_registry_add(t);
	pthread_setspecific(ov_exit_key, t);
}

/* 1 between ovni_thread_init() and ovni_thread_free() in this thread. */
int
ovni_thread_isready(void)
{
	return ov_fast.t != NULL;
}

/* Adds a CPU of the loom; it goes to the stream.json of this thread
 * (libovni 1.14 keeps loom_cpus per thread as well). */
void
ovni_add_cpu(int index, int phyid)
{
	if (index < 0)
		ov_die("ovni_add_cpu", "cannot use negative index %d", index);
	if (phyid < 0)
		ov_die("ovni_add_cpu", "cannot use negative CPU id %d", phyid);
	if (!ov_proc.ready)
		ov_die("ovni_add_cpu", "the process is not initialized");
	struct ov_thread *t = ov_thread_get("ovni_add_cpu");

	if (t->cpus == NULL && (t->cpus = json_array()) == NULL)
		ov_die("ovni_add_cpu", "out of memory");
	json_t *cpu = json_pack("{s:i, s:i}", "index", index, "phyid", phyid);
	if (cpu == NULL || json_array_append_new(t->cpus, cpu) != 0)
		ov_die("ovni_add_cpu", "out of memory");
}

/*
 * Writes the buffered events, closes stream.obs, stores stream.json
 * (finished or not) and moves an OVNI_TMPDIR stream into place. Does
 * nothing once done (dead). Caller holds t->lock.
 */
static void
ov_stream_close_locked(struct ov_thread *t, int finished)
{
	if (t->dead)
		return;
	uint8_t *end = __atomic_load_n(&t->fast->pos, __ATOMIC_ACQUIRE);
	if (end == t->flush_tail)
		end = t->buf; /* only the pair of the last ovni_flush() */
	if (end > t->buf)
		ov_write_all(t->fd, t->buf, (size_t) (end - t->buf), "the event stream");
	if (close(t->fd) != 0)
		ov_die("ovni_thread_free", "cannot close the stream of thread %d:", (int) t->tid);
	t->fd = -1;
	t->dead = 1;
	ov_meta_finalize(t, finished);
	ov_meta_store(t);
	if (ov_proc.move_to_final)
		ov_move_dir(t->dir, t->dir_final);
}

/* Same, taking the stream's lock. */
static void
ov_stream_close(struct ov_thread *t, int finished)
{
	pthread_mutex_lock(&t->lock);
	ov_stream_close_locked(t, finished);
	pthread_mutex_unlock(&t->lock);
}

/* Frees the state of a closed stream. */
static void
ov_thread_release(struct ov_thread *t)
{
	json_decref(t->meta);
	json_decref(t->cpus);
	pthread_mutex_destroy(&t->lock);
	free(t->buf);
	free(t);
}

/* Closes the stream of the calling thread properly: every buffered event
 * is written (but not a lone OF pair of a last ovni_flush(), as in
 * libovni), then stream.json with finished: 1. */
void
ovni_thread_free(void)
{
	struct ov_thread *t = ov_thread_get("ovni_thread_free");

	pthread_mutex_lock(&ov_registry_lock);
	ov_registry_unlink(t);
	pthread_mutex_unlock(&ov_registry_lock);
	pthread_setspecific(ov_exit_key, NULL);

	ov_stream_close(t, 1);
	ov_thread_release(t);
	memset(&ov_fast, 0, sizeof(ov_fast));
	ov_self_finished = 1;
}

/* ---- Streams never closed --------------------------------------------------- */

/* A thread ended without ovni_thread_free(): write what it emitted, and
 * leave its stream.json without "finished". */
static void
ov_at_thread_exit(void *arg)
{
	struct ov_thread *t = arg;

	pthread_mutex_lock(&ov_registry_lock);
	int registered = t->prev != NULL || t->next != NULL || ov_registry == t;
	if (registered)
		ov_registry_unlink(t);
	pthread_mutex_unlock(&ov_registry_lock);
	if (!registered)
		return; /* the exit handler or fork already dealt with it */

	ov_stream_close(t, 0);
	ov_thread_release(t);
	memset(&ov_fast, 0, sizeof(ov_fast));
}

/*
 * Normal process exit (or unload) with streams still open: write each one
 * out, close it and store its stream.json without "finished". This runs
 * as the library's destructor, i.e. after the program's atexit handlers
 * and after the destructors of libraries that use libovni, which may
 * still close their streams properly. A thread still running at this
 * point gets its stream written up to its last complete event; what it
 * emits afterwards is dropped (dead), and its buffer is left allocated.
 */
__attribute__((destructor)) static void
ov_at_exit(void)
{
	pthread_mutex_lock(&ov_registry_lock);
	for (struct ov_thread *t = ov_registry; t != NULL; t = t->next)
		ov_stream_close(t, 0);
	pthread_mutex_unlock(&ov_registry_lock);
}

/*
 * In a child of fork() the inherited streams belong to the parent: the
 * child drops them (without writing anything) and starts with no ovni
 * state, so it may call ovni_proc_init() for itself.
 */
static void
ov_at_fork_child(void)
{
	pthread_mutex_init(&ov_registry_lock, NULL);
	struct ov_thread *t = ov_registry;
	while (t != NULL) {
		struct ov_thread *next = t->next;
		if (t->fd >= 0)
			close(t->fd);
		pthread_mutex_init(&t->lock, NULL);
		ov_thread_release(t);
		t = next;
	}
	ov_registry = NULL;
	memset(&ov_fast, 0, sizeof(ov_fast));
	ov_self_finished = 0;
	pthread_setspecific(ov_exit_key, NULL);
	memset(&ov_proc, 0, sizeof(ov_proc));
}
