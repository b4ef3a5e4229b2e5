/*
 * bench_emit - cost of emitting ovni events with weft's drop-in libovni.
 *
 *   bench_emit [--dir DIR] [--fixed N] [--mix N] [--threads 1,2]
 *              [--repeat R] [--keep]
 *       Times two cases, each in a fresh child process, with 1 and 2
 *       threads (N events per thread):
 *         fixed12  12-byte events ("OB."), clock set once (no clock read)
 *         mix      49.5% 12-byte OB., 49.5% 28-byte OHx, 1% VYc jumbo
 *                  with 64 bytes of data, ovni_clock_now() for each
 *       Events are built the way a program does it: ovni_ev_set_mcv,
 *       ovni_ev_set_clock, ovni_payload_add, then ovni_ev_emit. The time
 *       includes the write() of every full 2 MiB buffer. Prints one line
 *       per case and thread count (median and best of R runs).
 *
 *   bench_emit --write-trace DIR [--bytes 1G] [--threads 4]
 *       Writes an ovni trace of the mix of about that many bytes (valid
 *       ovni: OHx first, OHe last, finished streams, loom_cpus) and exits.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <ftw.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <ovni.h>

#define MAX_THREADS 64
#define JUMBO_DATA 64

enum bench_case { CASE_FIXED, CASE_MIX };

struct worker {
	pthread_t th;
	int index;
	int nthreads;
	enum bench_case kind;
	uint64_t events;   /* events to emit (timing runs) */
	uint64_t bytes;    /* stream bytes to write (--write-trace) */
	double ns_per_event;
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

static void *
worker_main(void *arg)
{
	struct worker *w = arg;
	thread_open(w->index, w->nthreads);
	pthread_barrier_wait(w->barrier);
	double t0 = now_ns();
	if (w->kind == CASE_FIXED)
		loop_fixed(w->events);
	else
		loop_mix(w->events, w->index);
	double t1 = now_ns();
	w->ns_per_event = (t1 - t0) / (double) w->events;
	thread_close();
	return NULL;
}

/* Writes ~w->bytes of the mix, in chunks of 10000 events. */
static void *
writer_main(void *arg)
{
	struct worker *w = arg;
	uint64_t done = 0;
	thread_open(w->index, w->nthreads);
	while (done < w->bytes)
		done += loop_mix(10000, w->index);
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

/* Child: runs the case with nthreads, writes the mean ns/event to fd. */
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

	double sum = 0;
	for (int i = 0; i < nthreads; i++)
		sum += ws[i].ns_per_event;
	double mean = sum / nthreads;
	if (write(fd, &mean, sizeof(mean)) != (ssize_t) sizeof(mean))
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

/* Forks a child for one run; returns its mean ns/event. */
static double
timed_run(const char *base, enum bench_case kind, int nthreads, uint64_t n,
	  int run, int keep)
{
	char dir[4096];
	int p[2];
	double v = -1;

	snprintf(dir, sizeof(dir), "%s/%s-%dt-run%d", base,
		 kind == CASE_FIXED ? "fixed12" : "mix", nthreads, run);
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
		v = -1;
	close(p[0]);
	waitpid(pid, &status, 0);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || v < 0)
		die("a benchmark child failed");
	if (!keep)
		remove_tree(dir);
	return v;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *) a, y = *(const double *) b;
	return (x > y) - (x < y);
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

static void
usage(void)
{
	fprintf(stderr,
		"usage: bench_emit [--dir DIR] [--fixed N] [--mix N] [--threads 1,2] [--repeat R] [--keep]\n"
		"       bench_emit --write-trace DIR [--bytes 1G] [--threads 4]\n");
	exit(2);
}

struct options {
	const char *dir;
	const char *write_trace;
	uint64_t fixed_n, mix_n, bytes;
	int threads[8], nthreads_list;
	int repeat, keep;
};

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

static void
parse_args(struct options *o, int argc, char **argv)
{
	*o = (struct options) { .fixed_n = 20000000, .mix_n = 10000000,
				.bytes = 1ull << 30, .threads = { 1, 2 },
				.nthreads_list = 2, .repeat = 3 };
	int threads_given = 0;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (strcmp(a, "--keep") == 0) { o->keep = 1; continue; }
		if (v == NULL)
			usage();
		if (strcmp(a, "--dir") == 0) o->dir = v;
		else if (strcmp(a, "--write-trace") == 0) o->write_trace = v;
		else if (strcmp(a, "--fixed") == 0) o->fixed_n = parse_size(v, 0);
		else if (strcmp(a, "--mix") == 0) o->mix_n = parse_size(v, 0);
		else if (strcmp(a, "--bytes") == 0) o->bytes = parse_size(v, 1);
		else if (strcmp(a, "--threads") == 0) { parse_threads(o, v); threads_given = 1; }
		else if (strcmp(a, "--repeat") == 0) o->repeat = atoi(v);
		else usage();
		i++;
	}
	if (o->write_trace && !threads_given) {
		o->threads[0] = 4;
		o->nthreads_list = 1;
	}
	if (o->repeat < 1 || o->repeat > 99)
		usage();
}

/* --write-trace: the trace for the read benchmarks. */
static int
write_trace(const struct options *o)
{
	struct worker ws[MAX_THREADS];
	char loom[300];
	int n = o->threads[0];

	setenv("OVNI_TRACEDIR", o->write_trace, 1);
	loom_name(loom, sizeof(loom));
	ovni_proc_init(1, loom, getpid());
	for (int i = 0; i < n; i++)
		ws[i] = (struct worker) { .index = i, .nthreads = n,
					  .bytes = o->bytes / (uint64_t) n };
	double t0 = now_ns();
	run_threads(ws, n, writer_main);
	ovni_proc_fini();
	printf("wrote %s: %d streams, about %.0f MiB, in %.1f s\n", o->write_trace, n,
	       (double) o->bytes / 1048576.0, (now_ns() - t0) / 1e9);
	return 0;
}

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

	printf("# case threads events_per_thread ns_per_event_median ns_per_event_best Mevents_per_s_per_thread\n");
	for (int k = 0; k < 2; k++) {
		enum bench_case kind = k == 0 ? CASE_FIXED : CASE_MIX;
		uint64_t n = kind == CASE_FIXED ? o.fixed_n : o.mix_n;
		for (int t = 0; t < o.nthreads_list; t++) {
			double v[99];
			for (int r = 0; r < o.repeat; r++)
				v[r] = timed_run(base, kind, o.threads[t], n, r, o.keep);
			qsort(v, (size_t) o.repeat, sizeof(v[0]), cmp_double);
			double med = v[o.repeat / 2];
			printf("%-8s %2d %10llu %8.2f %8.2f %8.1f\n",
			       kind == CASE_FIXED ? "fixed12" : "mix", o.threads[t],
			       (unsigned long long) n, med, v[0], 1e3 / med);
			fflush(stdout);
		}
	}
	if (o.dir == NULL && !o.keep)
		remove_tree(base);
	return 0;
}
