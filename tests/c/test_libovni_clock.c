/* SPDX-License-Identifier: MIT */
/*
 * test_libovni_clock - ovni_clock_now() is CLOCK_MONOTONIC in ns: every
 * value lies between clock_gettime() read just before and just after it,
 * values of a thread never decrease, and this holds in two threads at
 * once, over more than the calibration and re-anchoring periods of the
 * TSC path, and with WEFT_OVNI_CLOCK=monotonic.
 */
#include <pthread.h>
#include <sys/wait.h>
#include <time.h>

#include "test_libovni_common.h"

#define RUN_NS 300000000ull /* 300 ms: calibration (20 ms) and many 1 ms anchors */

/* The reference: CLOCK_MONOTONIC through clock_gettime(). */
static uint64_t
mono(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t) ts.tv_sec * 1000000000ull + (uint64_t) ts.tv_nsec;
}

typedef struct clock_result {
	uint64_t calls, outside, backwards;
	int64_t worst; /* ns outside [before, after] */
} clock_result;

/* Brackets ovni_clock_now() between two clock_gettime() calls. */
static void *
clock_worker(void *arg)
{
	clock_result *r = arg;
	uint64_t prev = 0, end = mono() + RUN_NS;
	memset(r, 0, sizeof(*r));
	for (;;) {
		uint64_t a = mono();
		uint64_t c = ovni_clock_now();
		uint64_t b = mono();
		r->calls++;
		if (c < prev)
			r->backwards++;
		prev = c;
		if (c < a || c > b) {
			int64_t off = c < a ? (int64_t) (a - c) : (int64_t) (c - b);
			r->outside++;
			if (off > r->worst)
				r->worst = off;
		}
		/* A few tight runs of calls, as when emitting. */
		for (int i = 0; i < 64; i++) {
			uint64_t d = ovni_clock_now();
			if (d < prev)
				r->backwards++;
			prev = d;
		}
		if (b > end)
			break;
	}
	return NULL;
}

/*
 * Two threads at once. A value may land outside its bracket only by a
 * little (the TSC path interpolates between 1 ms anchors with a slope
 * known to about a ppm, so a few ns at most): allow 1 us.
 */
static int
check_two_threads(const char *label)
{
	pthread_t th[2];
	clock_result r[2];
	int before = tu_failures;
	for (int i = 0; i < 2; i++)
		REQUIRE(pthread_create(&th[i], NULL, clock_worker, &r[i]) == 0);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < 2; i++) {
		printf("%s thread %d: %llu calls, %llu outside (worst %lld ns), %llu backwards\n",
		       label, i, (unsigned long long) r[i].calls,
		       (unsigned long long) r[i].outside, (long long) r[i].worst,
		       (unsigned long long) r[i].backwards);
		CHECK(r[i].calls > 1000);
		CHECK_EQ_U64(r[i].backwards, 0);
		CHECK(r[i].worst <= 1000);
	}
	return tu_failures == before;
}

/* The monotonic-only mode in a child first, then the default mode. */
int
main(void)
{
	/* The monotonic-only mode, in a child (the mode is chosen once). */
	fflush(NULL);
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		setenv("WEFT_OVNI_CLOCK", "monotonic", 1);
		exit(check_two_threads("monotonic") ? 0 : 1);
	}
	int status;
	waitpid(pid, &status, 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);

	check_two_threads("auto");
	return tu_result();
}
