/* SPDX-License-Identifier: MIT */
/*
 * test_worker.c - the helper thread of util/worker.h: jobs handed over
 * one at a time run in order on the thread while the owner goes on; the
 * first error is kept and the jobs after it are not run; finish reports
 * it; a worker never started (all zero) finishes quietly.
 */
#include <string.h>

#include "testutil.h"
#include "util/worker.h"

typedef struct job_state {
	weft__worker worker;
	int next;           /* the job handed over */
	int done[8];        /* done[i]: job i ran, in order */
	int ran;
	int fail_at;        /* this job fails (with 5, EIO) */
} job_state;

/* The job: records its number (and fails at fail_at). */
static int run_job(void *ctx)
{
	job_state *s = ctx;
	s->done[s->ran++] = s->next;
	return s->next == s->fail_at ? 5 : 0;
}

/* Hands jobs 0..n-1 over, one at a time. */
static void hand_jobs(job_state *s, int n)
{
	for (int i = 0; i < n; i++) {
		weft__worker_claim(&s->worker);
		s->next = i;
		weft__worker_hand_over(&s->worker, 1);
	}
}

static void test_jobs_in_order(void)
{
	job_state s;
	memset(&s, 0, sizeof s);
	s.fail_at = -1;
	REQUIRE(weft__worker_start(&s.worker, run_job, &s) == 1);
	hand_jobs(&s, 5);
	CHECK(weft__worker_wait(&s.worker) == 0);
	CHECK(s.ran == 5);
	for (int i = 0; i < 5; i++)
		CHECK(s.done[i] == i);
	CHECK(weft__worker_finish(&s.worker) == 0);
	CHECK(weft__worker_finish(&s.worker) == 0); /* a second finish does nothing */
}

static void test_first_error_kept(void)
{
	job_state s;
	memset(&s, 0, sizeof s);
	s.fail_at = 2;
	REQUIRE(weft__worker_start(&s.worker, run_job, &s) == 1);
	hand_jobs(&s, 5);
	CHECK(weft__worker_wait(&s.worker) == 5);
	CHECK(s.ran == 3); /* 0, 1 and the failing 2: not the ones after it */
	CHECK(weft__worker_finish(&s.worker) == 5);
}

static void test_never_started(void)
{
	weft__worker w;
	memset(&w, 0, sizeof w);
	CHECK(weft__worker_finish(&w) == 0);
}

int main(void)
{
	test_jobs_in_order();
	test_first_error_kept();
	test_never_started();
	return tu_result();
}
