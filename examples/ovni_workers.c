/* SPDX-License-Identifier: MIT */
/*
 * ovni_workers - a small parallel program traced with the ovni API.
 *
 *   ovni_workers [TRACEDIR]      (default: $OVNI_TRACEDIR, else ./ovni)
 *
 * Four threads count the primes below 400000, in chunks. Each chunk is a
 * nOS-V task (VTc create, VTx execute, VTe end, of a task type declared
 * with the jumbo event VYc), and inside it two nested phases are marked
 * with the mark API (OM[ / OM]). Every thread starts with OHx and ends
 * with OHe, as the ovni model expects. Then look at the trace with e.g.
 *
 *   weft dump TRACEDIR
 *
 * It builds unchanged against the real libovni (link with -lovni).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <ovni.h>

#define NWORKERS 4
#define NCHUNKS 8
#define LIMIT 400000
#define SPAN (LIMIT / (NWORKERS * NCHUNKS)) /* numbers per chunk */

/* Mark types: a stack of phases, and the current chunk number. */
enum { MARK_PHASE = 1, MARK_CHUNK = 2 };
enum { PHASE_SIEVE = 1, PHASE_REDUCE = 2 };

static long primes_found[NWORKERS];

/* Emits a normal event: MCV, current time, and 0..16 payload bytes. */
static void
emit(const char *mcv, const void *payload, int size)
{
	struct ovni_ev ev = { 0 };
	ovni_ev_set_mcv(&ev, mcv);
	ovni_ev_set_clock(&ev, ovni_clock_now());
	if (size > 0)
		ovni_payload_add(&ev, payload, size);
	ovni_ev_emit(&ev);
}

/* Emits a task event of the nOS-V model: {u32 taskid, u32 typeid/bodyid}. */
static void
emit_task(const char *mcv, uint32_t taskid, uint32_t second)
{
	uint32_t p[2] = { taskid, second };
	emit(mcv, p, sizeof(p));
}

/* Declares a task type with VYc, a jumbo event {u32 typeid, str label}. */
static void
emit_task_type(uint32_t typeid, const char *label)
{
	uint8_t buf[64];
	size_t len = strlen(label) + 1;
	memcpy(buf, &typeid, 4);
	memcpy(buf + 4, label, len);

	struct ovni_ev ev = { 0 };
	ovni_ev_set_mcv(&ev, "VYc");
	ovni_ev_set_clock(&ev, ovni_clock_now());
	ovni_ev_jumbo_emit(&ev, buf, (uint32_t) (4 + len));
}

/* The "computation": trial division. */
static int
is_prime(long n)
{
	if (n < 2)
		return 0;
	for (long d = 2; d * d <= n; d++)
		if (n % d == 0)
			return 0;
	return 1;
}

/* One chunk of work, as a task with two marked phases. */
static void
run_chunk(int w, int k, uint32_t typeid)
{
	uint32_t taskid = (uint32_t) (w * NCHUNKS + k + 1);
	long lo = (long) (w * NCHUNKS + k) * SPAN;
	char found[SPAN];

	emit_task("VTc", taskid, typeid);
	emit_task("VTx", taskid, 1);
	ovni_mark_set(MARK_CHUNK, k + 1);

	ovni_mark_push(MARK_PHASE, PHASE_SIEVE);
	for (long i = 0; i < SPAN; i++)
		found[i] = (char) is_prime(lo + i);
	ovni_mark_pop(MARK_PHASE, PHASE_SIEVE);

	ovni_mark_push(MARK_PHASE, PHASE_REDUCE);
	for (long i = 0; i < SPAN; i++)
		primes_found[w] += found[i];
	ovni_mark_pop(MARK_PHASE, PHASE_REDUCE);

	emit_task("VTe", taskid, 1);
}

/* Worker 0 also describes the loom's CPUs and the mark types, which only
 * one stream of the trace needs to carry. */
static void
describe_trace(void)
{
	for (int cpu = 0; cpu < NWORKERS; cpu++)
		ovni_add_cpu(cpu, cpu);
	ovni_mark_type(MARK_PHASE, OVNI_MARK_STACK, "Worker phase");
	ovni_mark_label(MARK_PHASE, PHASE_SIEVE, "Sieve");
	ovni_mark_label(MARK_PHASE, PHASE_REDUCE, "Reduce");
	ovni_mark_type(MARK_CHUNK, 0, "Chunk number");
}

/* One worker thread: its own stream, from OHx to OHe. */
static void *
worker(void *arg)
{
	int w = (int) (intptr_t) arg;
	int32_t ohx[4] = { w, -1, 0, 0 }; /* i32 cpu, i32 creator tid, u64 tag */
	char label[32];

	ovni_thread_init((pid_t) syscall(SYS_gettid));
	ovni_thread_require("nosv", "2.7.0");
	if (w == 0)
		describe_trace();

	emit("OHx", ohx, sizeof(ohx)); /* the thread starts running on CPU w */
	snprintf(label, sizeof(label), "primes of worker %d", w);
	emit_task_type((uint32_t) (w + 1), label);
	for (int k = 0; k < NCHUNKS; k++)
		run_chunk(w, k, (uint32_t) (w + 1));
	emit("OHe", NULL, 0); /* the thread ends */

	ovni_flush();
	ovni_thread_free();
	return NULL;
}

/* Initialises the process, runs the workers, says where the trace is. */
int
main(int argc, char **argv)
{
	pthread_t th[NWORKERS];
	char host[256] = "localhost", loom[300];

	if (argc > 1)
		setenv("OVNI_TRACEDIR", argv[1], 1);
	const char *dir = getenv("OVNI_TRACEDIR") ? getenv("OVNI_TRACEDIR") : "ovni";
	gethostname(host, sizeof(host) - 1);
	host[strcspn(host, ".")] = '\0';
	snprintf(loom, sizeof(loom), "%s.workers", host);

	ovni_version_check();
	ovni_proc_init(1, loom, getpid());
	for (intptr_t w = 0; w < NWORKERS; w++)
		pthread_create(&th[w], NULL, worker, (void *) w);
	long total = 0;
	for (int w = 0; w < NWORKERS; w++) {
		pthread_join(th[w], NULL);
		total += primes_found[w];
	}
	ovni_proc_fini();

	printf("%ld primes below %d\n", total, LIMIT);
	printf("trace written to %s/loom.%s/proc.%d (%d thread streams)\n",
	       dir, loom, (int) getpid(), NWORKERS);
	return 0;
}
