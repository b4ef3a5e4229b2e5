/* SPDX-License-Identifier: MIT */
/*
 * bench_emit - cost of emitting ovni events with weft's drop-in libovni.
 *
 *   bench_emit [--dir DIR] [--fixed N] [--mix N] [--threads 1,2]
 *              [--repeat R] [--warmup W] [--keep]
 *       Times three cases, each in a fresh child process, with 1 and 2
 *       threads (N events per thread):
 *         clock    ovni_clock_now() alone (N = the --fixed count)
 *         fixed12  12-byte events ("OB."), clock set once (no clock read)
 *         mix      49.5% 12-byte OB., 49.5% 28-byte OHx, 1% VYc jumbo
 *                  with 64 bytes of data, ovni_clock_now() for each
 *       Events are built the way a program does it: ovni_ev_set_mcv,
 *       ovni_ev_set_clock, ovni_payload_add, then ovni_ev_emit. The time
 *       includes the write() of every full 2 MiB buffer. Prints one line
 *       per case and thread count: median and best of R runs, and the
 *       median CPU time per event spent in user space (the library) and
 *       in the kernel (the writes), from getrusage (after W
 *       discarded warm-up runs, default 1: on a VM the first writes after
 *       an idle period touch page-cache memory the host has reclaimed).
 *
 *   bench_emit --write-trace DIR [--bytes 1G] [--threads 4] [--spans]
 *       Writes an ovni trace of the mix of about that many bytes (valid
 *       ovni: OHx first, OHe last, finished streams, loom_cpus) and exits.
 *       With --spans, the events of a nOS-V program instead (the
 *       benchmark of the viewer conversions): task bodies (VTx .. VTe)
 *       with API calls inside (VAs .. VAS) and points (OB.) between.
 *       With --nosv, a nOS-V program that ovniemu and weft's emulation
 *       accept (the benchmark of the emulation, docs/emulation.md): each
 *       thread a worker (VHw .. VHW) with task types of its own (VYc),
 *       then tasks, each created (VAr VTc VAR), submitted (VAs VU[ VU]
 *       VAS), waited for (VSh VSf), run (VTx, an allocation VMa VMA,
 *       every 8th paused and resumed in its body, VTe); every 64th task
 *       the thread pauses and resumes (OHp OHr). About 180 bytes and 13
 *       events per task. With --looms L, L processes (forked), each the
 *       only one of its loom ("<host>.bench.<i>"), write the trace at
 *       once, each with the threads given and 1/L of the bytes: the nodes
 *       of a cluster (the benchmark of the emulation on looms shared
 *       among threads and ranks, docs/SCALING.md).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <ftw.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <ovni.h>

#define MAX_THREADS 64
#define JUMBO_DATA 64

enum bench_case { CASE_CLOCK, CASE_FIXED, CASE_MIX };
static const char *const case_names[] = { "clock", "fixed12", "mix" };

struct worker {
	pthread_t th;
	int index;
	int nthreads;
	enum bench_case kind;
	uint64_t events;   /* events to emit (timing runs) */
	uint64_t bytes;    /* stream bytes to write (--write-trace) */
	int spans;         /* --write-trace --spans: the nOS-V pattern */
	int nosv;          /* --write-trace --nosv: a nOS-V program the emulation accepts */
	double ns_per_event;
	double user_ns, sys_ns; /* CPU time in user space and in the kernel */
	uint64_t sink;     /* keeps the clock loop from being optimised out */
	pthread_barrier_t *barrier;
};

/* Wall clock for timing the loops (not the ovni clock under test). */
static double
now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double) ts.tv_sec * 1e9 + (double) ts.tv_nsec;
}

/* User and system CPU time of the calling thread, in ns. */
static void
thread_cpu_ns(double *user, double *sys)
{
	struct rusage ru;
	getrusage(RUSAGE_THREAD, &ru);
	*user = (double) ru.ru_utime.tv_sec * 1e9 + (double) ru.ru_utime.tv_usec * 1e3;
	*sys = (double) ru.ru_stime.tv_sec * 1e9 + (double) ru.ru_stime.tv_usec * 1e3;
}

/* Setup failures of the benchmark itself (not of libovni). */
static void
die(const char *msg)
{
	fprintf(stderr, "bench_emit: %s%s%s\n", msg, errno ? ": " : "",
		errno ? strerror(errno) : "");
	exit(1);
}

/* ---- Event shapes ---------------------------------------------------- */

/* 12 bytes: no payload. */
static inline void
emit_ob(uint64_t clock)
{
	struct ovni_ev ev = { 0 };
	ovni_ev_set_mcv(&ev, "OB.");
	ovni_ev_set_clock(&ev, clock);
	ovni_ev_emit(&ev);
}

/* 28 bytes: OHx {i32 cpu, i32 tid, u64 tag}. */
static inline void
emit_ohx(uint64_t clock, int32_t cpu, uint64_t tag)
{
	struct ovni_ev ev = { 0 };
	uint8_t p[16];
	int32_t tid = -1;
	memcpy(p, &cpu, 4);
	memcpy(p + 4, &tid, 4);
	memcpy(p + 8, &tag, 8);
	ovni_ev_set_mcv(&ev, "OHx");
	ovni_ev_set_clock(&ev, clock);
	ovni_payload_add(&ev, p, sizeof(p));
	ovni_ev_emit(&ev);
}

/* Jumbo VYc {u32 typeid, str label}: 64 bytes of data. The label is
 * made once per thread (data), only the type id changes. */
static inline void
emit_vyc(uint64_t clock, uint8_t *data, uint32_t typeid)
{
	struct ovni_ev ev = { 0 };
	memcpy(data, &typeid, 4);
	ovni_ev_set_mcv(&ev, "VYc");
	ovni_ev_set_clock(&ev, clock);
	ovni_ev_jumbo_emit(&ev, data, JUMBO_DATA);
}

/* Fills the 64-byte jumbo data: type id then a NUL-terminated label. */
static void
make_vyc_data(uint8_t *data, int index)
{
	memset(data, 0, JUMBO_DATA);
	snprintf((char *) data + 4, JUMBO_DATA - 4,
		 "bench task type of thread %d, padded to 64 bytes", index);
}

/* ---- Loops ------------------------------------------------------------ */

/* Only the clock: what each event of the mix pays for its timestamp. */
static uint64_t
loop_clock(uint64_t n)
{
	uint64_t sum = 0;
	for (uint64_t i = 0; i < n; i++)
		sum += ovni_clock_now();
	return sum;
}

/* 12-byte events with a clock read once. */
static void
loop_fixed(uint64_t n)
{
	uint64_t clock = ovni_clock_now();
	for (uint64_t i = 0; i < n; i++)
		emit_ob(clock);
}

/* The mix: alternating OB./OHx, and every 100th event a jumbo. Returns
 * the bytes it wrote (for --write-trace). */
static uint64_t
loop_mix(uint64_t n, int index)
{
	static _Thread_local uint32_t typeid;
	uint8_t data[JUMBO_DATA];
	uint64_t bytes = 0;

	make_vyc_data(data, index);
	if (typeid == 0)
		typeid = (uint32_t) index * 100000000u;
	for (uint64_t i = 0; i < n; i++) {
		uint64_t clock = ovni_clock_now();
		if (i % 100 == 99) {
			emit_vyc(clock, data, ++typeid);
			bytes += 16 + JUMBO_DATA;
		} else if (i & 1) {
			emit_ohx(clock, index, i);
			bytes += 28;
		} else {
			emit_ob(clock);
			bytes += 12;
		}
	}
	return bytes;
}

/* ---- Threads ----------------------------------------------------------- */

/* Opens the thread's stream; thread 0 declares the CPUs of the loom. */
static void
thread_open(int index, int nthreads)
{
	ovni_thread_init((pid_t) syscall(SYS_gettid));
	ovni_thread_require("nosv", "2.7.0");
	if (index == 0)
		for (int c = 0; c < nthreads; c++)
			ovni_add_cpu(c, c);
	emit_ohx(ovni_clock_now(), index, 0);
}

/* Ends a stream as a runtime does: OHe, flush, free. */
static void
thread_close(void)
{
	struct ovni_ev ev = { 0 };
	ovni_ev_set_mcv(&ev, "OHe");
	ovni_ev_set_clock(&ev, ovni_clock_now());
	ovni_ev_emit(&ev);
	ovni_flush();
	ovni_thread_free();
}

/* A timed thread: open, wait for the others, emit, close. */
static void *
worker_main(void *arg)
{
	struct worker *w = arg;
	thread_open(w->index, w->nthreads);
	double u0, s0, u1, s1;
	pthread_barrier_wait(w->barrier);
	thread_cpu_ns(&u0, &s0);
	double t0 = now_ns();
	if (w->kind == CASE_CLOCK)
		w->sink = loop_clock(w->events);
	else if (w->kind == CASE_FIXED)
		loop_fixed(w->events);
	else
		loop_mix(w->events, w->index);
	double t1 = now_ns();
	thread_cpu_ns(&u1, &s1);
	w->ns_per_event = (t1 - t0) / (double) w->events;
	w->user_ns = (u1 - u0) / (double) w->events;
	w->sys_ns = (s1 - s0) / (double) w->events;
	thread_close();
	return NULL;
}

/* An event with a payload of two u32 (VTx, VTe: taskid, bodyid). */
static inline void
emit_task(uint64_t clock, const char *mcv, uint32_t taskid)
{
	struct ovni_ev ev = { 0 };
	uint32_t p[2] = { taskid, 1 };
	ovni_ev_set_mcv(&ev, mcv);
	ovni_ev_set_clock(&ev, clock);
	ovni_payload_add(&ev, (const uint8_t *) p, sizeof(p));
	ovni_ev_emit(&ev);
}

/* An event without payload (VAs, VAS). */
static inline void
emit_bare(uint64_t clock, const char *mcv)
{
	struct ovni_ev ev = { 0 };
	ovni_ev_set_mcv(&ev, mcv);
	ovni_ev_set_clock(&ev, clock);
	ovni_ev_emit(&ev);
}

/*
 * --spans: n tasks of 10 events each: VTx, then 3 times (VAs, OB., VAS),
 * then VTe. Returns the bytes written.
 */
static uint64_t
loop_spans(uint64_t n, int index)
{
	static _Thread_local uint32_t taskid;
	for (uint64_t i = 0; i < n; i++) {
		emit_task(ovni_clock_now(), "VTx", ++taskid + (uint32_t) index * 100000000u);
		for (int k = 0; k < 3; k++) {
			emit_bare(ovni_clock_now(), "VAs");
			emit_ob(ovni_clock_now());
			emit_bare(ovni_clock_now(), "VAS");
		}
		emit_task(ovni_clock_now(), "VTe", taskid + (uint32_t) index * 100000000u);
	}
	return n * (2 * 20 + 9 * 12);
}

/* An event with two u32 of payload (VTc: task, type; VTx/VTp/VTr/VTe: task, body). */
static inline void
emit_u32x2(const char *mcv, uint32_t a, uint32_t b)
{
	struct ovni_ev ev = { 0 };
	uint32_t p[2] = { a, b };
	ovni_ev_set_mcv(&ev, mcv);
	ovni_ev_set_clock(&ev, ovni_clock_now());
	ovni_payload_add(&ev, (const uint8_t *) p, sizeof(p));
	ovni_ev_emit(&ev);
}

#define NOSV_TYPES 4 /* task types of each thread */

/* --nosv: the thread's task types, once (ids 1 + index * NOSV_TYPES ...). */
static void
nosv_types(int index)
{
	uint8_t data[JUMBO_DATA];
	for (uint32_t k = 0; k < NOSV_TYPES; k++) {
		memset(data, 0, sizeof data);
		snprintf((char *) data + 4, JUMBO_DATA - 4, "bench kernel %d.%u", index, k);
		emit_vyc(ovni_clock_now(), data, 1 + (uint32_t) index * NOSV_TYPES + k);
	}
}

/*
 * --nosv: n tasks of the thread (module comment). Task ids are unique in
 * the process: 1 + index + nthreads * k. Returns the bytes written.
 */
static uint64_t
loop_nosv(uint64_t n, int index, int nthreads)
{
	static _Thread_local uint64_t k;
	for (uint64_t i = 0; i < n; i++, k++) {
		uint32_t id = 1 + (uint32_t) index + (uint32_t) nthreads * (uint32_t) k;
		uint32_t type = 1 + (uint32_t) index * NOSV_TYPES + (uint32_t) (k % NOSV_TYPES);
		emit_bare(ovni_clock_now(), "VAr");
		emit_u32x2("VTc", id, type);
		emit_bare(ovni_clock_now(), "VAR");
		emit_bare(ovni_clock_now(), "VAs");
		emit_bare(ovni_clock_now(), "VU[");
		emit_bare(ovni_clock_now(), "VU]");
		emit_bare(ovni_clock_now(), "VAS");
		emit_bare(ovni_clock_now(), "VSh");
		emit_bare(ovni_clock_now(), "VSf");
		emit_u32x2("VTx", id, 0);
		emit_bare(ovni_clock_now(), "VMa");
		emit_bare(ovni_clock_now(), "VMA");
		if (k % 8 == 0) {
			emit_bare(ovni_clock_now(), "VAp");
			emit_u32x2("VTp", id, 0);
			emit_u32x2("VTr", id, 0);
			emit_bare(ovni_clock_now(), "VAP");
		}
		emit_u32x2("VTe", id, 0);
		if (k % 64 == 63) {
			emit_bare(ovni_clock_now(), "OHp");
			emit_bare(ovni_clock_now(), "OHr");
		}
	}
	return n * (10 * 12 + 3 * 20) + n / 8 * (2 * 12 + 2 * 20) + n / 64 * 24;
}

/* Writes ~w->bytes of the mix (or spans, or a nOS-V program), in chunks. */
static void *
writer_main(void *arg)
{
	struct worker *w = arg;
	uint64_t done = 0;
	thread_open(w->index, w->nthreads);
	if (w->nosv) {
		emit_bare(ovni_clock_now(), "VHw");
		nosv_types(w->index);
	}
	while (done < w->bytes)
		done += w->nosv ? loop_nosv(1000, w->index, w->nthreads)
			: w->spans ? loop_spans(1000, w->index) : loop_mix(10000, w->index);
	if (w->nosv)
		emit_bare(ovni_clock_now(), "VHW");
	thread_close();
	return NULL;
}

/* Starts n threads running fn and waits for them. */
static void
run_threads(struct worker *ws, int n, void *(*fn)(void *))
{
	for (int i = 0; i < n; i++)
		if (pthread_create(&ws[i].th, NULL, fn, &ws[i]) != 0)
			die("pthread_create");
	for (int i = 0; i < n; i++)
		pthread_join(ws[i].th, NULL);
}

/* "<host>.bench": libovni looms are named after the host. */
static void
loom_name(char *out, size_t n)
{
	char host[256] = "localhost";
	gethostname(host, sizeof(host) - 1);
	host[sizeof(host) - 1] = '\0';
	char *dot = strchr(host, '.');
	if (dot)
		*dot = '\0';
	snprintf(out, n, "%s.bench", host);
}

/* ---- One timed run in a child process --------------------------------- */

/* One run's result: means over its threads, ns per event. */
struct run_result {
	double wall, user, sys;
};

/* Child: runs the case with nthreads, writes its run_result to fd. */
static void
child_run(const char *dir, enum bench_case kind, int nthreads, uint64_t n, int fd)
{
	struct worker ws[MAX_THREADS];
	pthread_barrier_t barrier;
	char loom[300];

	setenv("OVNI_TRACEDIR", dir, 1);
	loom_name(loom, sizeof(loom));
	ovni_version_check();
	ovni_proc_init(1, loom, getpid());
	pthread_barrier_init(&barrier, NULL, (unsigned) nthreads);
	for (int i = 0; i < nthreads; i++)
		ws[i] = (struct worker) { .index = i, .nthreads = nthreads, .kind = kind,
					  .events = n, .barrier = &barrier };
	run_threads(ws, nthreads, worker_main);
	ovni_proc_fini();

	struct run_result r = { 0, 0, 0 };
	for (int i = 0; i < nthreads; i++) {
		r.wall += ws[i].ns_per_event / nthreads;
		r.user += ws[i].user_ns / nthreads;
		r.sys += ws[i].sys_ns / nthreads;
	}
	if (write(fd, &r, sizeof(r)) != (ssize_t) sizeof(r))
		_exit(2);
	exit(0);
}

static int
rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void) st; (void) flag; (void) ftw;
	return remove(path);
}

/* rm -rf */
static void
remove_tree(const char *dir)
{
	nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* Forks a child for one run; returns what it measured. */
static struct run_result
timed_run(const char *base, enum bench_case kind, int nthreads, uint64_t n,
	  int run, int keep)
{
	char dir[4096];
	int p[2];
	struct run_result v = { -1, -1, -1 };

	snprintf(dir, sizeof(dir), "%s/%s-%dt-run%d", base, case_names[kind], nthreads, run);
	if (pipe(p) != 0)
		die("pipe");
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		close(p[0]);
		child_run(dir, kind, nthreads, n, p[1]);
	}
	close(p[1]);
	int status;
	if (read(p[0], &v, sizeof(v)) != (ssize_t) sizeof(v))
		v.wall = -1;
	close(p[0]);
	waitpid(pid, &status, 0);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || v.wall < 0)
		die("a benchmark child failed");
	if (!keep)
		remove_tree(dir);
	return v;
}

/* qsort order of run times. */
static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *) a, y = *(const double *) b;
	return (x > y) - (x < y);
}

/* Sorts v (so v[0] is then the best) and returns its median. */
static double
median(double *v, int n)
{
	qsort(v, (size_t) n, sizeof(v[0]), cmp_double);
	return v[n / 2];
}

/* ---- Command line -------------------------------------------------------- */

/* "20M", "1G", "5000": decimal suffixes for counts, binary for bytes. */
static uint64_t
parse_size(const char *s, int binary)
{
	char *end;
	double v = strtod(s, &end);
	double k = binary ? 1024.0 : 1000.0;
	switch (*end) {
	case 'k': case 'K': v *= k; end++; break;
	case 'm': case 'M': v *= k * k; end++; break;
	case 'g': case 'G': v *= k * k * k; end++; break;
	default: break;
	}
	if (end == s || *end != '\0' || v < 1)
		die("bad number");
	return (uint64_t) v;
}

/* Prints the synopsis and exits with status 2. */
static void
usage(void)
{
	fprintf(stderr,
		"usage: bench_emit [--dir DIR] [--fixed N] [--mix N] [--threads 1,2] [--repeat R]\n"
		"                  [--warmup W] [--keep]\n"
		"       bench_emit --write-trace DIR [--bytes 1G] [--threads 4] [--spans | --nosv]\n"
		"                  [--looms L]\n");
	exit(2);
}

struct options {
	const char *dir;
	const char *write_trace;
	uint64_t fixed_n, mix_n, bytes;
	int threads[8], nthreads_list;
	int repeat, warmup, keep, spans, nosv, looms;
};

/* "1,2" -> thread counts to run each case with. */
static void
parse_threads(struct options *o, const char *s)
{
	o->nthreads_list = 0;
	for (const char *p = s; *p && o->nthreads_list < 8; ) {
		int v = atoi(p);
		if (v < 1 || v > MAX_THREADS)
			die("bad --threads");
		o->threads[o->nthreads_list++] = v;
		p = strchr(p, ',');
		if (!p)
			break;
		p++;
	}
}

/* Options, with the defaults documented at the top of the file. */
static void
parse_args(struct options *o, int argc, char **argv)
{
	*o = (struct options) { .fixed_n = 20000000, .mix_n = 10000000,
				.bytes = 1ull << 30, .threads = { 1, 2 },
				.nthreads_list = 2, .repeat = 3, .warmup = 1 };
	int threads_given = 0;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (strcmp(a, "--keep") == 0) { o->keep = 1; continue; }
		if (strcmp(a, "--spans") == 0) { o->spans = 1; continue; }
		if (strcmp(a, "--nosv") == 0) { o->nosv = 1; continue; }
		if (v == NULL)
			usage();
		if (strcmp(a, "--dir") == 0) o->dir = v;
		else if (strcmp(a, "--write-trace") == 0) o->write_trace = v;
		else if (strcmp(a, "--fixed") == 0) o->fixed_n = parse_size(v, 0);
		else if (strcmp(a, "--mix") == 0) o->mix_n = parse_size(v, 0);
		else if (strcmp(a, "--bytes") == 0) o->bytes = parse_size(v, 1);
		else if (strcmp(a, "--threads") == 0) { parse_threads(o, v); threads_given = 1; }
		else if (strcmp(a, "--looms") == 0) o->looms = atoi(v);
		else if (strcmp(a, "--repeat") == 0) o->repeat = atoi(v);
		else if (strcmp(a, "--warmup") == 0) o->warmup = atoi(v);
		else usage();
		i++;
	}
	if (o->write_trace && !threads_given) {
		o->threads[0] = 4;
		o->nthreads_list = 1;
	}
	if (o->repeat < 1 || o->repeat > 99 || o->warmup < 0 || o->looms < 0 || o->looms > 4096)
		usage();
}

/* One process of --write-trace: its threads' streams in loom `loom`. */
static void
write_process(const struct options *o, const char *loom, uint64_t bytes)
{
	struct worker ws[MAX_THREADS];
	int n = o->threads[0];

	ovni_proc_init(1, loom, getpid());
	for (int i = 0; i < n; i++)
		ws[i] = (struct worker) { .index = i, .nthreads = n, .spans = o->spans, .nosv = o->nosv,
					  .bytes = bytes / (uint64_t) n };
	run_threads(ws, n, writer_main);
	ovni_proc_fini();
}

/* --write-trace: the trace for the read benchmarks (--looms: a child per loom). */
static int
write_trace(const struct options *o)
{
	char loom[300], name[320];
	double t0 = now_ns();

	setenv("OVNI_TRACEDIR", o->write_trace, 1);
	loom_name(loom, sizeof(loom));
	if (o->looms <= 1) {
		write_process(o, loom, o->bytes);
	} else {
		for (int l = 0; l < o->looms; l++) {
			snprintf(name, sizeof(name), "%s.%d", loom, l);
			fflush(stdout);
			pid_t pid = fork();
			if (pid < 0)
				die("fork");
			if (pid == 0) {
				write_process(o, name, o->bytes / (uint64_t) o->looms);
				_exit(0);
			}
		}
		for (int l = 0; l < o->looms; l++) {
			int status;
			if (wait(&status) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
				die("a loom's process failed");
		}
	}
	printf("wrote %s: %d streams, about %.0f MiB, in %.1f s\n", o->write_trace,
	       o->threads[0] * (o->looms > 1 ? o->looms : 1), (double) o->bytes / 1048576.0,
	       (now_ns() - t0) / 1e9);
	return 0;
}

/* Either writes a trace (--write-trace) or runs the timed cases. */
int
main(int argc, char **argv)
{
	struct options o;
	char tmp[] = "/tmp/bench_emit.XXXXXX";

	parse_args(&o, argc, argv);
	if (o.write_trace)
		return write_trace(&o);

	const char *base = o.dir;
	if (base == NULL && (base = mkdtemp(tmp)) == NULL)
		die("mkdtemp");
	if (mkdir(base, 0755) != 0 && errno != EEXIST)
		die("mkdir");
	errno = 0;

	printf("# case threads events_per_thread ns_per_event_median ns_per_event_best "
	       "Mevents_per_s_per_thread user_ns sys_ns\n");
	for (int k = 0; k < 3; k++) {
		enum bench_case kind = (enum bench_case) k;
		uint64_t n = kind == CASE_MIX ? o.mix_n : o.fixed_n;
		for (int t = 0; t < o.nthreads_list; t++) {
			double wall[99], user[99], sys[99];
			for (int r = 0; r < o.warmup; r++)
				timed_run(base, kind, o.threads[t], n, r, 0);
			for (int r = 0; r < o.repeat; r++) {
				struct run_result rr = timed_run(base, kind, o.threads[t], n, r,
								 o.keep);
				wall[r] = rr.wall;
				user[r] = rr.user;
				sys[r] = rr.sys;
			}
			double med = median(wall, o.repeat);
			printf("%-8s %2d %10llu %8.2f %8.2f %8.1f %8.2f %8.2f\n", case_names[kind],
			       o.threads[t], (unsigned long long) n, med, wall[0], 1e3 / med,
			       median(user, o.repeat), median(sys, o.repeat));
			fflush(stdout);
		}
	}
	if (o.dir == NULL && !o.keep)
		remove_tree(base);
	return 0;
}
