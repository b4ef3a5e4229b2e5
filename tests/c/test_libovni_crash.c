/* SPDX-License-Identifier: MIT */
/*
 * test_libovni_crash - streams that were never closed:
 *
 *   abort     the child emits, calls ovni_flush(), emits more, abort()s:
 *             stream.json has no "finished"; the flushed events are on
 *             disk and readable, the OF[ / OF] pair of the flush (in the
 *             buffer, as in libovni) and the later events are not.
 *   _exit     many events (several full buffers), then _exit(): every
 *             buffer written before is readable, whole events only.
 *   exit      a thread returns and the process exit()s, neither having
 *             called ovni_thread_free(): the library writes both streams
 *             out (thread exit and library destructor) and leaves them
 *             without "finished".
 *   running   the process exit()s while a thread is still emitting: its
 *             stream is written up to a whole event, without "finished".
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include "test_libovni_common.h"

#define LOOM "testhost.crash"

enum crash_kind { CRASH_ABORT, CRASH_EXIT_NOW, CRASH_EXIT_NORMAL, CRASH_EXIT_RUNNING };

/* Hundreds of events emitted by the running thread (CRASH_EXIT_RUNNING). */
static atomic_int progress;

/* What the children emit; rebuilt identically by the parent. */
static void
crash_events(exp_list *l, enum crash_kind kind, int really_emit)
{
	int n = kind == CRASH_EXIT_NOW ? 20000 : kind == CRASH_EXIT_RUNNING ? 200000 : 100;
	for (int i = 0; i < n; i++) {
		uint8_t p[8];
		memcpy(p, &i, 4);
		memcpy(p + 4, &kind, 4);
		uint64_t clock = 1000 + (uint64_t) i;
		if (really_emit) {
			emit_normal(l, "TXa", clock, p, 8, 8);
			/* Slowly enough to be still emitting at exit. */
			if (kind == CRASH_EXIT_RUNNING && i % 100 == 99) {
				atomic_fetch_add(&progress, 1);
				usleep(50);
			}
		} else {
			exp_ev *e = exp_push(l);
			memcpy(e->mcv, "TXa", 3);
			e->clock = clock;
			e->psize = 8;
			memcpy(e->payload, p, 8);
		}
	}
}

/* A thread that returns without ovni_thread_free(). */
static void *
unclosed_thread(void *arg)
{
	exp_list *l = arg;
	ovni_thread_init(test_gettid());
	crash_events(l, CRASH_EXIT_NORMAL, 1);
	return NULL; /* no ovni_thread_free() */
}

/* Emits until the process ends under it (or waits there, if slow). */
static void *
running_thread(void *arg)
{
	exp_list l = { 0 };
	(void) arg;
	ovni_thread_init(test_gettid());
	crash_events(&l, CRASH_EXIT_RUNNING, 1);
	for (;;)
		pause();
	return NULL;
}

/* The crashing child; never returns. */
static void
crash_child(enum crash_kind kind)
{
	exp_list l = { 0 };
	struct rlimit no_core = { 0, 0 };
	setrlimit(RLIMIT_CORE, &no_core);
	setenv("WEFT_OVNI_BUFSIZE", "16384", 1);
	ovni_proc_init(1, LOOM, getpid());
	ovni_thread_init(test_gettid());
	if (kind != CRASH_EXIT_RUNNING)
		crash_events(&l, kind, 1);
	switch (kind) {
	case CRASH_ABORT:
		ovni_flush();
		emit_normal(&l, "TXz", 5000, NULL, 0, 16); /* lost */
		abort();
	case CRASH_EXIT_NOW:
		_exit(0);
	case CRASH_EXIT_NORMAL: {
		pthread_t th;
		exp_list l2 = { 0 };
		pthread_create(&th, NULL, unclosed_thread, &l2);
		pthread_join(th, NULL);
		exit(0);
	}
	case CRASH_EXIT_RUNNING: {
		pthread_t th;
		pthread_create(&th, NULL, running_thread, NULL);
		while (atomic_load(&progress) < 10) /* 1000 events out */
			usleep(1000);
		exit(0);
	}
	}
	_exit(3);
}

/* Runs a crashing child; returns its pid after checking how it ended. */
static pid_t
run_child(enum crash_kind kind)
{
	fflush(NULL);
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0)
		crash_child(kind);
	int status;
	waitpid(pid, &status, 0);
	if (kind == CRASH_ABORT)
		CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT);
	else
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	return pid;
}

/* The unfinished stream of thread tid of process pid, against l. */
static cmp_stats
check_unfinished(weft_trace *t, const char *dir, const exp_list *l, pid_t pid, pid_t tid,
		 int prefix)
{
	char sdir[4096], rel[256];
	stream_dir(sdir, sizeof(sdir), dir, LOOM, pid, tid);
	json_t *j = load_stream_json(sdir);
	REQUIRE(j != NULL);
	CHECK(jget(j, "ovni.finished") == NULL);
	CHECK_EQ_I64(jint(j, "ovni.tid"), tid);
	json_decref(j);

	cmp_stats raw = check_stream_raw(l, sdir, prefix), st;
	stream_rel(rel, sizeof(rel), LOOM, pid, tid);
	check_stream_weft(t, l, rel, 0, prefix, &st);
	CHECK_EQ_U64(st.matched, raw.matched);
	return st;
}

/* abort() after ovni_flush(): the events it wrote are on disk; its OF
 * pair, in the buffer with the events after it, is lost (as in libovni). */
static void
test_abort(const char *dir)
{
	pid_t pid = run_child(CRASH_ABORT);
	exp_list l = { 0 };
	crash_events(&l, CRASH_ABORT, 0);
	exp_push(&l)->flush = 1;

	weft_trace *t = weft_open_checked(dir);
	cmp_stats st = check_unfinished(t, dir, &l, pid, pid, 0);
	CHECK_EQ_U64(st.matched, 100);
	CHECK_EQ_U64(st.explicit_flush, 0);
	int warned = 0;
	for (size_t i = 0; i < weft_trace_diag_count(t); i++)
		warned |= weft_trace_diag(t, i)->severity == WEFT_SEV_WARNING;
	CHECK(warned); /* weft says the stream was not closed */
	weft_trace_free(t);
	exp_free(&l);
}

/* _exit() with a partly filled buffer: whole buffers only. */
static void
test_exit_now(const char *dir)
{
	pid_t pid = run_child(CRASH_EXIT_NOW);
	exp_list l = { 0 };
	crash_events(&l, CRASH_EXIT_NOW, 0);
	weft_trace *t = weft_open_checked(dir);
	cmp_stats st = check_unfinished(t, dir, &l, pid, pid, 1);
	CHECK(st.auto_flush >= 10);
	CHECK(st.matched > 15000 && st.matched < 20000);
	weft_trace_free(t);
	exp_free(&l);
}

/* exit() with two streams never closed: all their events are written. */
static void
test_exit_normal(const char *dir)
{
	pid_t pid = run_child(CRASH_EXIT_NORMAL);
	exp_list l = { 0 };
	crash_events(&l, CRASH_EXIT_NORMAL, 0);
	weft_trace *t = weft_open_checked(dir);
	cmp_stats st = check_unfinished(t, dir, &l, pid, pid, 0);
	CHECK_EQ_U64(st.matched, 100);

	/* The other thread's stream is the only other one of the trace. */
	char prefix[128];
	int found = 0;
	snprintf(prefix, sizeof(prefix), "loom.%s/proc.%d/thread.", LOOM, (int) pid);
	CHECK_EQ_U64(weft_trace_stream_count(t), 2);
	for (size_t i = 0; i < weft_trace_stream_count(t); i++) {
		const char *p = weft_trace_stream(t, i)->path;
		if (strncmp(p, prefix, strlen(prefix)) != 0)
			continue;
		int tid = atoi(p + strlen(prefix));
		if (tid == pid)
			continue;
		found++;
		st = check_unfinished(t, dir, &l, pid, tid, 0);
		CHECK_EQ_U64(st.matched, 100);
	}
	CHECK_EQ_I64(found, 1);
	weft_trace_free(t);
	exp_free(&l);
}

/* exit() while another thread emits: its stream ends at a whole event. */
static void
test_exit_running(const char *dir)
{
	pid_t pid = run_child(CRASH_EXIT_RUNNING);
	exp_list l = { 0 }, l_main = { 0 }; /* the main thread emitted nothing */
	crash_events(&l, CRASH_EXIT_RUNNING, 0);
	weft_trace *t = weft_open_checked(dir);
	CHECK_EQ_U64(weft_trace_stream_count(t), 2);
	check_unfinished(t, dir, &l_main, pid, pid, 0);
	char prefix[128];
	snprintf(prefix, sizeof(prefix), "loom.%s/proc.%d/thread.", LOOM, (int) pid);
	for (size_t i = 0; i < weft_trace_stream_count(t); i++) {
		const char *p = weft_trace_stream(t, i)->path;
		int tid = atoi(p + strlen(prefix));
		if (strncmp(p, prefix, strlen(prefix)) != 0 || tid == pid)
			continue;
		cmp_stats st = check_unfinished(t, dir, &l, pid, tid, 1);
		CHECK(st.matched >= 1000 && st.matched <= 200000);
	}
	weft_trace_free(t);
	exp_free(&l);
	exp_free(&l_main);
}

/* Each case in a trace directory of its own. */
static void
run_case(const char *name, void (*fn)(const char *dir))
{
	char *dir = fresh_tracedir(name);
	int before = tu_failures;
	fn(dir);
	if (tu_failures == before)
		tu_rmtree(dir);
	else
		fprintf(stderr, "%s: trace kept in %s\n", name, dir);
	free(dir);
}

/* Every case in its own trace directory. */
int
main(void)
{
	run_case("libovni_crash_abort", test_abort);
	run_case("libovni_crash_exit_now", test_exit_now);
	run_case("libovni_crash_exit", test_exit_normal);
	run_case("libovni_crash_running", test_exit_running);
	return tu_result();
}
