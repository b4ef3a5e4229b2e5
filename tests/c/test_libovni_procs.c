/* SPDX-License-Identifier: MIT */
/*
 * test_libovni_procs - several processes (fork) writing one trace, as
 * MPI ranks do: one loom per rank, two threads each, then the whole trace
 * read back with weft stream by stream and merged by time. Also a child
 * forked from an instrumented process: it starts without ovni state, may
 * initialise its own, and never writes into its parent's streams.
 */
#include <pthread.h>
#include <sys/wait.h>

#include "test_libovni_common.h"

#define NPROCS 3
#define NTHREADS 2
#define NEVENTS 3000

/* The events thread j of rank k emits: deterministic, so the parent can
 * rebuild the list. Clocks are synthetic; the final ovni_flush() leaves
 * no OF pair (nothing follows it). */
static void
rank_events(exp_list *l, int k, int j, int really_emit)
{
	for (int i = 0; i < NEVENTS; i++) {
		uint8_t p[12];
		int32_t a = k, b = j, c = i;
		memcpy(p, &a, 4);
		memcpy(p + 4, &b, 4);
		memcpy(p + 8, &c, 4);
		uint64_t clock = 1000000 + (uint64_t) i * 1000 + (uint64_t) k * 10 + (uint64_t) j;
		if (really_emit) {
			emit_normal(l, i % 2 ? "TRa" : "TRb", clock, p, 12, 12);
		} else {
			exp_ev *e = exp_push(l);
			memcpy(e->mcv, i % 2 ? "TRa" : "TRb", 3);
			e->clock = clock;
			e->psize = 12;
			memcpy(e->payload, p, 12);
		}
	}
	if (really_emit)
		do_flush(l);
	else
		exp_push(l)->flush = 1;
}

typedef struct rank_thread {
	int k, j;
} rank_thread;

/* One thread of a rank: its events, a flush, close. */
static void *
rank_thread_main(void *arg)
{
	rank_thread *rt = arg;
	exp_list l = { 0 };
	ovni_thread_init(test_gettid());
	ovni_proc_set_rank(rt->k, NPROCS); /* into this thread's stream */
	rank_events(&l, rt->k, rt->j, 1);
	ovni_thread_free();
	exp_free(&l);
	return NULL;
}

/* One rank: its own loom "testhost.<k>", rank k of NPROCS. */
static void
rank_child(int k)
{
	char loom[64];
	pthread_t th[NTHREADS];
	rank_thread rt[NTHREADS];

	snprintf(loom, sizeof(loom), "testhost.%d", k);
	ovni_proc_init(1, loom, getpid());
	for (int j = 0; j < NTHREADS; j++) {
		rt[j] = (rank_thread) { k, j };
		pthread_create(&th[j], NULL, rank_thread_main, &rt[j]);
	}
	for (int j = 0; j < NTHREADS; j++)
		pthread_join(th[j], NULL);
	ovni_proc_fini();
	exit(tu_failures ? 1 : 0);
}

/* Identifies a stream by its first event's payload (k, j). */
static int
first_event_kj(weft_trace *t, uint32_t s, int *k, int *j)
{
	weft_cursor *c;
	const weft_event *ev;
	int ok = 0;
	if (weft_cursor_create_stream(t, s, &c) != 0)
		return 0;
	if (weft_cursor_next(c, &ev) > 0 && ev->payload_size == 12) {
		int32_t a, b;
		memcpy(&a, ev->payload, 4);
		memcpy(&b, ev->payload + 4, 4);
		*k = a;
		*j = b;
		ok = 1;
	}
	weft_cursor_free(c);
	return ok;
}

/* Every stream of every rank through weft, and stream.json. */
static void
check_ranks(const char *dir, const pid_t *pids)
{
	weft_trace *t = weft_open_checked(dir);
	size_t ns = weft_trace_stream_count(t);
	CHECK_EQ_U64(ns, NPROCS * NTHREADS);
	int seen[NPROCS][NTHREADS] = { { 0 } };

	for (size_t s = 0; s < ns; s++) {
		const weft_stream_info *si = weft_trace_stream(t, s);
		int k = -1, j = -1;
		char want_prefix[128];
		if (!first_event_kj(t, (uint32_t) s, &k, &j) || k < 0 || k >= NPROCS
		    || j < 0 || j >= NTHREADS) {
			tu_fail(__FILE__, __LINE__, "stream %s: cannot identify it", si->path);
			continue;
		}
		seen[k][j]++;
		snprintf(want_prefix, sizeof(want_prefix), "loom.testhost.%d/proc.%d/thread.", k,
			 (int) pids[k]);
		CHECK(strncmp(si->path, want_prefix, strlen(want_prefix)) == 0);

		exp_list l = { 0 };
		rank_events(&l, k, j, 0);
		cmp_stats st;
		check_stream_weft(t, &l, si->path, 1, 0, &st);
		CHECK_EQ_U64(st.matched, NEVENTS);
		CHECK_EQ_U64(st.explicit_flush, 0);
		exp_free(&l);

		char sdir[4096];
		snprintf(sdir, sizeof(sdir), "%s/%s", dir, si->path);
		json_t *jm = load_stream_json(sdir);
		CHECK_EQ_I64(jint(jm, "ovni.rank"), k);
		CHECK_EQ_I64(jint(jm, "ovni.nranks"), NPROCS);
		CHECK_EQ_I64(jint(jm, "ovni.pid"), pids[k]);
		json_decref(jm);
	}
	for (int k = 0; k < NPROCS; k++)
		for (int j = 0; j < NTHREADS; j++)
			CHECK_EQ_I64(seen[k][j], 1);

	/* Merged by time: the synthetic clocks interleave ranks and threads. */
	weft_cursor *c;
	const weft_event *ev;
	uint64_t last = 0, n = 0;
	REQUIRE(weft_cursor_create(t, NULL, &c) == 0);
	while (weft_cursor_next(c, &ev) > 0) {
		CHECK(ev->time >= last);
		last = ev->time;
		n++;
	}
	weft_cursor_free(c);
	CHECK_EQ_U64(n, NPROCS * NTHREADS * NEVENTS);
	weft_trace_free(t);
}

/* Forks NPROCS ranks and checks what they wrote. */
static void
test_ranks(void)
{
	char *dir = fresh_tracedir("libovni_procs");
	pid_t pids[NPROCS];

	for (int k = 0; k < NPROCS; k++) {
		fflush(NULL);
		pids[k] = fork();
		REQUIRE(pids[k] >= 0);
		if (pids[k] == 0)
			rank_child(k);
	}
	for (int k = 0; k < NPROCS; k++) {
		int status;
		waitpid(pids[k], &status, 0);
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	check_ranks(dir, pids);
	if (tu_failures == 0)
		tu_rmtree(dir);
	free(dir);
}

/* The child of an instrumented process. */
static void
forked_child(exp_list *l)
{
	exp_list mine = { 0 };
	CHECK(!ovni_thread_isready());
	ovni_proc_init(1, "testhost.child", getpid());
	ovni_thread_init(test_gettid());
	emit_normal(&mine, "TCc", ovni_clock_now(), NULL, 0, 16);
	ovni_thread_free();
	ovni_proc_fini();
	exp_free(&mine);
	exp_free(l); /* the parent's list, inherited */
	exit(tu_failures ? 1 : 0);
}

/* Parent emits, forks (with unflushed events in its buffer), goes on. */
static void
test_fork_from_instrumented(void)
{
	char *dir = fresh_tracedir("libovni_forkchild");
	exp_list l = { 0 };
	pid_t tid = test_gettid();

	ovni_proc_init(1, "testhost.parent", getpid());
	ovni_thread_init(tid);
	for (int i = 0; i < 10; i++)
		emit_normal(&l, "TPa", ovni_clock_now(), NULL, 0, 16);
	fflush(NULL);
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0)
		forked_child(&l);
	int status;
	waitpid(pid, &status, 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	for (int i = 0; i < 10; i++)
		emit_normal(&l, "TPb", ovni_clock_now(), NULL, 0, 16);
	ovni_thread_free();
	ovni_proc_fini();

	char rel[256];
	weft_trace *t = weft_open_checked(dir);
	CHECK_EQ_U64(weft_trace_stream_count(t), 2);
	stream_rel(rel, sizeof(rel), "testhost.parent", getpid(), tid);
	cmp_stats st;
	check_stream_weft(t, &l, rel, 1, 0, &st); /* no event twice */
	CHECK_EQ_U64(st.matched, 20);
	stream_rel(rel, sizeof(rel), "testhost.child", pid, pid);
	int idx = weft_trace_stream_find(t, rel);
	CHECK(idx >= 0);
	if (idx >= 0)
		CHECK_EQ_U64(weft_trace_stream(t, (size_t) idx)->file_size, 8 + 12);
	weft_trace_free(t);
	exp_free(&l);
	if (tu_failures == 0)
		tu_rmtree(dir);
	free(dir);
}

/* Ranks first, then the child of an instrumented process. */
int
main(void)
{
	test_ranks();
	test_fork_from_instrumented();
	return tu_result();
}
