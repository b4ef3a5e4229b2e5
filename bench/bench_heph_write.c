/* SPDX-License-Identifier: MIT */
/*
 * bench_heph_write - cost of writing Heph trace events with weft's writer
 * (weft/heph.h).
 *
 *   bench_heph_write [--events N] [--threads 1,2,4] [--repeat R]
 *                    [--warmup W] [--buffer BYTES] [--dir DIR]
 *       Times N events per thread (default 5 M), each thread writing its
 *       own stream of one shared trace: per event weft_heph_event_begin()
 *       with a 20-byte description, weft_heph_event_add_u64(), and
 *       weft_heph_event_end() (79-byte packets). Times come from a counter
 *       (no clock read: that is the caller's cost). The time includes the
 *       write() of every full buffer and the final flush of the stream.
 *       For each thread count: median and best of R runs (after W
 *       discarded warm-up runs, default 1) of the mean ns per event of the
 *       threads, the user and kernel CPU time per event, and the run's
 *       wall time divided by all its events (total). The trace files are
 *       deleted. One machine-readable line per thread count:
 *         RESULT bench=heph_write threads=T events=N ns_per_event=M
 *                best_ns_per_event=B user_ns=U sys_ns=S total_ns_per_event=A
 *                bytes_per_event=P
 *
 *   bench_heph_write --write-trace FILE [--events 3000000] [--streams 8]
 *       Writes the trace of the conversion benchmark: one thread per
 *       stream, each a loop of parent intervals holding 2 to 4 children,
 *       the children written before their parent (as Heph's runtime does,
 *       since they finish first), descriptions of Heph's runtime (14 to 48
 *       bytes), one u64 attribute on every fourth event; about 200 MB for
 *       3 M events. FILE is removed first (outside the timing), then
 *       written. Prints the wall time and the user and kernel CPU time per
 *       event of the whole process, and one RESULT line.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <weft/weft.h>

#define MAX_THREADS 64
#define MAX_REPEAT 64
/* 08 Jan 2021, the epoch of Heph's sample trace: reproducible files. */
#define BENCH_EPOCH 1610113734118010000ull

struct worker {
	pthread_t th;
	weft_heph_stream *stream;
	uint64_t events;
	pthread_barrier_t *barrier;
	double ns;              /* wall time of the loop and the flush */
	double user_ns, sys_ns; /* CPU time of the thread */
	int failed;
};

/* Wall clock for timing the loops. */
static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* A struct timeval in ns. */
static double tv_ns(struct timeval tv)
{
	return (double)tv.tv_sec * 1e9 + (double)tv.tv_usec * 1e3;
}

/* User and system CPU time of the calling thread, in ns. */
static void thread_cpu_ns(double *user, double *sys)
{
	struct rusage ru;
	getrusage(RUSAGE_THREAD, &ru);
	*user = tv_ns(ru.ru_utime);
	*sys = tv_ns(ru.ru_stime);
}

/* Failures of the benchmark's own set-up, or of the writer. */
static _Noreturn void die(const char *what)
{
	fprintf(stderr, "bench_heph_write: %s: %s\n", what,
		weft_last_error()[0] ? weft_last_error() : strerror(errno));
	exit(1);
}

/* ---- Timing runs -------------------------------------------------------------- */

/* Descriptions of 20 bytes, so that every packet has the same size. */
static const char *const timed_desc[4] = {
	"Scheduling processes", "Receiving a message!",
	"Polling OS events...", "Running an actor now",
};

/* One thread of a timing run: N events with one u64 attribute. */
static void *timed_thread(void *arg)
{
	struct worker *wk = arg;
	weft_heph_stream *s = wk->stream;
	double u0, s0, u1, s1;
	pthread_barrier_wait(wk->barrier);
	thread_cpu_ns(&u0, &s0);
	double t0 = now_ns();
	for (uint64_t i = 0; i < wk->events; i++) {
		weft_heph_event_begin(s, 0, i * 100, i * 100 + 50, timed_desc[i & 3], 20);
		weft_heph_event_add_u64(s, "amount", i);
		if (weft_heph_event_end(s) < 0)
			wk->failed = 1;
	}
	if (weft_heph_stream_flush(s) < 0)
		wk->failed = 1;
	wk->ns = now_ns() - t0;
	thread_cpu_ns(&u1, &s1);
	wk->user_ns = u1 - u0;
	wk->sys_ns = s1 - s0;
	return NULL;
}

/*
 * Figures of one run, per event: ns, user, sys are means over the threads
 * (each thread's time / its events); total is the run's wall time (the
 * slowest thread) / all the events, i.e. what the program pays per event.
 */
struct run {
	double ns, user, sys, total;
	uint64_t bytes;
};

/* File size, for the bytes per event. */
static uint64_t file_size(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
}

/* One run: `threads` streams of one trace in `path`, deleted afterwards. */
static struct run timed_run(const char *path, int threads, uint64_t events, size_t buffer)
{
	weft_heph_writer_options o = { .epoch = BENCH_EPOCH, .has_epoch = 1,
				       .buffer_size = buffer, .replace = 1 };
	weft_heph_writer *w;
	struct worker wk[MAX_THREADS];
	pthread_barrier_t barrier;
	if (weft_heph_writer_create(path, &o, &w) < 0)
		die("cannot create the trace");
	pthread_barrier_init(&barrier, NULL, (unsigned)threads);
	for (int t = 0; t < threads; t++) {
		wk[t] = (struct worker){ .events = events, .barrier = &barrier };
		if (weft_heph_stream_create(w, (uint32_t)t, &wk[t].stream) < 0)
			die("cannot create a stream");
		if (pthread_create(&wk[t].th, NULL, timed_thread, &wk[t]) != 0)
			die("pthread_create");
	}
	struct run r = { 0 };
	for (int t = 0; t < threads; t++) {
		pthread_join(wk[t].th, NULL);
		if (wk[t].failed)
			die("an event failed");
		r.ns += wk[t].ns / (double)events / threads;
		r.user += wk[t].user_ns / (double)events / threads;
		r.sys += wk[t].sys_ns / (double)events / threads;
		if (wk[t].ns / (double)events / threads > r.total)
			r.total = wk[t].ns / (double)events / threads;
	}
	pthread_barrier_destroy(&barrier);
	if (weft_heph_writer_close(w) < 0)
		die("cannot close the trace");
	weft_heph_writer_free(w);
	r.bytes = file_size(path);
	unlink(path);
	return r;
}

/* qsort order of doubles. */
static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Median of n values (sorted in place). */
static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Warm-up, then `repeat` runs with `threads` threads; prints the figures. */
static void timed_case(const char *path, int threads, uint64_t events, size_t buffer,
		       int repeat, int warmup)
{
	double ns[MAX_REPEAT], user[MAX_REPEAT], sys[MAX_REPEAT], total[MAX_REPEAT];
	struct run r = { 0 };
	for (int i = 0; i < warmup; i++)
		timed_run(path, threads, events, buffer);
	for (int i = 0; i < repeat; i++) {
		r = timed_run(path, threads, events, buffer);
		ns[i] = r.ns;
		user[i] = r.user;
		sys[i] = r.sys;
		total[i] = r.total;
	}
	double best = ns[0];
	for (int i = 1; i < repeat; i++)
		best = ns[i] < best ? ns[i] : best;
	double bytes = (double)r.bytes / (double)(events * (uint64_t)threads);
	double med = median(ns, repeat), mu = median(user, repeat), ms = median(sys, repeat);
	double mt = median(total, repeat);
	printf("threads %d: %.1f ns/event per thread median, %.1f best (user %.1f, "
	       "kernel %.1f); all threads: %.1f ns/event, %.1f M events/s\n",
	       threads, med, best, mu, ms, mt, 1e3 / mt);
	printf("RESULT bench=heph_write threads=%d events=%llu ns_per_event=%.2f "
	       "best_ns_per_event=%.2f user_ns=%.2f sys_ns=%.2f total_ns_per_event=%.2f "
	       "bytes_per_event=%.1f\n",
	       threads, (unsigned long long)events, med, best, mu, ms, mt, bytes);
	fflush(stdout);
}

/* ---- The conversion benchmark's trace -------------------------------------------------- */

/* Descriptions written by Heph's runtime: short children, longer parents. */
static const char *const child_desc[] = {
	"receiving message", "sending message", "Polling for OS events",
	"printing message", "Relaying process signals", "Joining worker",
};
static const char *const parent_desc[] = {
	"Running thread-local process", "Running thread-safe process",
	"Scheduling processes", "Scheduling thread-local processes",
	"Scheduling thread-safe processes based on timers",
};
#define NCHILD (sizeof child_desc / sizeof *child_desc)
#define NPARENT (sizeof parent_desc / sizeof *parent_desc)

/* A stream's position in its loop of nested intervals. */
struct shape {
	weft_heph_stream *s;
	uint64_t index;  /* events written */
	uint64_t left;   /* events still to write */
	uint64_t t;      /* time cursor, ns since the epoch */
	int failed;
};

/* One event; every fourth event of the stream carries a u64 attribute. */
static void shape_event(struct shape *sh, uint64_t start, uint64_t end, const char *desc)
{
	weft_heph_event_begin(sh->s, 0, start, end, desc, WEFT_HEPH_CSTR);
	if (sh->index % 4 == 3)
		weft_heph_event_add_u64(sh->s, "amount", sh->index);
	if (weft_heph_event_end(sh->s) < 0)
		sh->failed = 1;
	sh->index++;
	sh->left--;
}

/*
 * One parent with 2, 3 or 4 children (3 on average): the children first,
 * each inside the parent's interval, then the parent.
 */
static void shape_group(struct shape *sh, uint64_t g)
{
	static const int children[4] = { 2, 3, 4, 3 };
	uint64_t parent_start = sh->t;
	sh->t += 100;
	for (int c = 0; c < children[g % 4] && sh->left > 1; c++) {
		uint64_t start = sh->t, end = start + 300 + (g * 7 + (uint64_t)c * 13) % 900;
		shape_event(sh, start, end, child_desc[(g + (uint64_t)c) % NCHILD]);
		sh->t = end + 50;
	}
	sh->t += 100;
	shape_event(sh, parent_start, sh->t, parent_desc[g % NPARENT]);
	sh->t += 200 + g % 500;
}

/* One stream of the trace, in its own thread. */
static void *shape_thread(void *arg)
{
	struct worker *wk = arg;
	struct shape sh = { .s = wk->stream, .left = wk->events,
			    .t = 1000 * (uint64_t)weft_heph_stream_id(wk->stream) };
	for (uint64_t g = 0; sh.left > 0; g++)
		shape_group(&sh, g);
	if (weft_heph_stream_flush(sh.s) < 0)
		sh.failed = 1;
	wk->failed = sh.failed;
	return NULL;
}

/* --write-trace: `events` events over `streams` streams into `path`. */
static void write_trace(const char *path, uint64_t events, int streams)
{
	weft_heph_writer_options o = { .epoch = BENCH_EPOCH, .has_epoch = 1, .replace = 1 };
	weft_heph_writer *w;
	struct worker wk[MAX_THREADS];
	struct rusage r0, r1;
	unlink(path); /* freeing the old file's pages is not the writer's time */
	getrusage(RUSAGE_SELF, &r0);
	double t0 = now_ns();
	if (weft_heph_writer_create(path, &o, &w) < 0)
		die("cannot create the trace");
	for (int i = 0; i < streams; i++) {
		uint64_t n = events / (uint64_t)streams + ((uint64_t)i < events % (uint64_t)streams);
		wk[i] = (struct worker){ .events = n };
		if (weft_heph_stream_create(w, (uint32_t)i, &wk[i].stream) < 0)
			die("cannot create a stream");
		if (pthread_create(&wk[i].th, NULL, shape_thread, &wk[i]) != 0)
			die("pthread_create");
	}
	for (int i = 0; i < streams; i++) {
		pthread_join(wk[i].th, NULL);
		if (wk[i].failed)
			die("an event failed");
	}
	if (weft_heph_writer_close(w) < 0)
		die("cannot close the trace");
	weft_heph_writer_free(w);
	double wall = now_ns() - t0;
	getrusage(RUSAGE_SELF, &r1);
	double user = tv_ns(r1.ru_utime) - tv_ns(r0.ru_utime);
	double sys = tv_ns(r1.ru_stime) - tv_ns(r0.ru_stime);
	uint64_t bytes = file_size(path);
	printf("wrote %s: %llu events, %d streams, %llu bytes (%.1f per event) in %.3f s\n",
	       path, (unsigned long long)events, streams, (unsigned long long)bytes,
	       (double)bytes / (double)events, wall / 1e9);
	printf("RESULT bench=heph_write_trace events=%llu streams=%d bytes=%llu "
	       "seconds=%.3f ns_per_event=%.2f user_ns=%.2f sys_ns=%.2f\n",
	       (unsigned long long)events, streams, (unsigned long long)bytes, wall / 1e9,
	       wall / (double)events, user / (double)events, sys / (double)events);
}

/* ---- Command line ---------------------------------------------------------------- */

/* Bad arguments: the synopsis, exit status 2. */
static _Noreturn void usage(void)
{
	fprintf(stderr,
		"usage: bench_heph_write [--events N] [--threads 1,2] [--repeat R]\n"
		"                        [--warmup W] [--buffer BYTES] [--dir DIR]\n"
		"       bench_heph_write --write-trace FILE [--events N] [--streams S]\n");
	exit(2);
}

/* A positive number argument, or usage. */
static uint64_t number(const char *s)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 10);
	if (*s == '\0' || *end != '\0' || v == 0)
		usage();
	return v;
}

struct options {
	uint64_t events;
	const char *threads, *dir, *trace;
	int repeat, warmup, streams;
	size_t buffer;
};

/* Parses argv into `o`. */
static void parse_args(int argc, char **argv, struct options *o)
{
	if (argc % 2 == 0) /* every option takes a value */
		usage();
	for (int i = 1; i < argc; i += 2) {
		const char *a = argv[i], *v = argv[i + 1];
		if (strcmp(a, "--events") == 0) o->events = number(v);
		else if (strcmp(a, "--threads") == 0) o->threads = v;
		else if (strcmp(a, "--repeat") == 0) o->repeat = (int)number(v);
		else if (strcmp(a, "--warmup") == 0) o->warmup = atoi(v);
		else if (strcmp(a, "--buffer") == 0) o->buffer = (size_t)number(v);
		else if (strcmp(a, "--dir") == 0) o->dir = v;
		else if (strcmp(a, "--write-trace") == 0) o->trace = v;
		else if (strcmp(a, "--streams") == 0) o->streams = (int)number(v);
		else usage();
	}
	if (o->repeat > MAX_REPEAT || o->streams > MAX_THREADS || o->warmup < 0)
		usage();
}

/* --write-trace, or the timing cases for each thread count of --threads. */
int main(int argc, char **argv)
{
	struct options o = { .threads = "1,2", .repeat = 5, .warmup = 1, .streams = 8 };
	parse_args(argc, argv, &o);
	if (o.trace != NULL) {
		write_trace(o.trace, o.events ? o.events : 3000000, o.streams);
		return 0;
	}
	char path[4096];
	const char *base = o.dir ? o.dir : getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	snprintf(path, sizeof path, "%s/bench_heph_write.%ld.bin.log", base, (long)getpid());
	uint64_t events = o.events ? o.events : 5000000;
	printf("bench_heph_write: %llu events per thread, buffer %zu bytes, %d runs\n",
	       (unsigned long long)events, o.buffer ? o.buffer : WEFT_HEPH_DEFAULT_BUFFER,
	       o.repeat);
	for (const char *p = o.threads; *p;) {
		int t = atoi(p);
		if (t < 1 || t > MAX_THREADS)
			usage();
		timed_case(path, t, events, o.buffer, o.repeat, o.warmup);
		p = strchr(p, ',') ? strchr(p, ',') + 1 : p + strlen(p);
	}
	return 0;
}
