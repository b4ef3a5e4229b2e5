/* SPDX-License-Identifier: MIT */
/*
 * bench_pallas_write - cost of writing Pallas traces with weft's writer
 * (weft/pallas.h), on the workloads of Pallas 0.20's figures.
 *
 *   bench_pallas_write [--events N] [--repeat R] [--case NAME[,NAME...]]
 *                      [--dir DIR] [--keep]
 *
 * Each case runs R times (default 3), each run in a fresh child process
 * that writes one trace of one thread into DIR (default $TMPDIR or /tmp),
 * then deletes it (--keep keeps the last). The time of a run is the wall
 * time from the first record to the end of weft_pallas_global_store()
 * (closing the thread writes its files), divided by the events; the
 * bytes are those of every file of the trace. Cases (N events each,
 * default 6 M):
 *
 *   real-zstd5       Enter/Leave of 3 functions in a loop, timestamps from
 *                    the writer's clock (clock_gettime), zstd level 5,
 *                    default options (one helper thread when more than
 *                    one CPU is online)
 *   real-zstd5-single   the same with compress_threads = 0 (everything in
 *                    the recording thread)
 *   real-zstd5-helper   the same with compress_threads = 1
 *   logical-zstd5    timestamps 1, 2, 3, ..., default options
 *   real-none        real clock, no compression
 *   logical-none     logical clock, no compression
 *   real-zstd5-delta real clock, zstd 5, weft's delta timestamps
 *   real-zstd5-compact  real clock, zstd 5, compact layout
 *   block120-real    a loop body of 120 different Enter/Leave pairs,
 *                    real clock, zstd 5, default options
 *   block120-single  the same with compress_threads = 0
 *   block120-window  the same with long_patterns off (Pallas's window)
 *   real-zstd5-attrs the 3-function loop, real clock, zstd 5, defaults,
 *                    with an attribute list of two u32 values (a counter
 *                    and a value that changes) on every Enter
 *   real-zstd5-attrs-compact  the same, compact layout
 *
 * Default: every case but real-zstd5-helper, block120-window and the
 * two -attrs ones. Per
 * run: the recording loop's ns per event, the close and stores in ms,
 * the total ns per event, the bytes per event on disk and the child's
 * peak RSS. Per case one machine-readable line (medians; best in
 * best_ns_per_event; helpers: the compress_threads used):
 *   RESULT bench=pallas_write case=C events=N helpers=H ns_per_event=T
 *          best_ns_per_event=B record_ns=R record_cpu_ns=U process_cpu_ns=P
 *          close_ms=M bytes_per_event=Y peak_rss_mb=S
 * record_cpu_ns is the CPU time of the recording thread during the loop,
 * process_cpu_ns that of the whole process (helper threads included)
 * from the first record to the end of the stores: on a shared machine
 * they move much less than the wall times. The load average is printed
 * before each case and at the end.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <weft/weft.h>

#define MAX_REPEAT 32
#define DEFAULT_HELPERS (-1) /* keep weft_pallas_write_options_init's choice */
#define D DEFAULT_HELPERS

typedef struct bench_case {
	const char *name;
	int real_clock;        /* timestamps from the writer's clock */
	int compression;
	int delta, compact;
	int helpers;           /* compress_threads, or DEFAULT_HELPERS */
	int window;
	uint32_t blocks;       /* functions in the loop body */
	int default_on;
	int attrs;             /* two u32 attributes on every Enter */
} bench_case;

static const bench_case CASES[] = {
	{ "real-zstd5", 1, WEFT_PALLAS_WRITE_ZSTD, 0, 0, D, 0, 3, 1, 0 },
	{ "real-zstd5-single", 1, WEFT_PALLAS_WRITE_ZSTD, 0, 0, 0, 0, 3, 1, 0 },
	{ "real-zstd5-helper", 1, WEFT_PALLAS_WRITE_ZSTD, 0, 0, 1, 0, 3, 0, 0 },
	{ "logical-zstd5", 0, WEFT_PALLAS_WRITE_ZSTD, 0, 0, D, 0, 3, 1, 0 },
	{ "real-none", 1, WEFT_PALLAS_WRITE_RAW, 0, 0, D, 0, 3, 1, 0 },
	{ "logical-none", 0, WEFT_PALLAS_WRITE_RAW, 0, 0, D, 0, 3, 1, 0 },
	{ "real-zstd5-delta", 1, WEFT_PALLAS_WRITE_ZSTD, 1, 0, D, 0, 3, 1, 0 },
	{ "real-zstd5-compact", 1, WEFT_PALLAS_WRITE_ZSTD, 0, 1, D, 0, 3, 1, 0 },
	{ "block120-real", 1, WEFT_PALLAS_WRITE_ZSTD, 0, 0, D, 0, 120, 1, 0 },
	{ "block120-single", 1, WEFT_PALLAS_WRITE_ZSTD, 0, 0, 0, 0, 120, 1, 0 },
	{ "block120-window", 1, WEFT_PALLAS_WRITE_ZSTD, 0, 0, D, 1, 120, 0, 0 },
	{ "real-zstd5-attrs", 1, WEFT_PALLAS_WRITE_ZSTD, 0, 0, D, 0, 3, 0, 1 },
	{ "real-zstd5-attrs-compact", 1, WEFT_PALLAS_WRITE_ZSTD, 0, 1, D, 0, 3, 0, 1 },
};
#undef D
#define NCASES (sizeof CASES / sizeof CASES[0])

/* What one run measured (sent from the child to the parent). */
typedef struct run_result {
	double record_ns;      /* per event, recording loop only */
	double record_cpu_ns;  /* per event, CPU time of the recording thread in the loop */
	double process_cpu_ns; /* per event, CPU time of the whole process (helpers too) */
	double total_ns;       /* per event, loop + close + stores */
	double close_ms;
	double bytes_per_event;
	double peak_rss_mb;
	int failed;
} run_result;

/* A clock in ns: wall (CLOCK_MONOTONIC) or CPU time. */
static double clock_ns(clockid_t id)
{
	struct timespec t;
	clock_gettime(id, &t);
	return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static double now_ns(void) { return clock_ns(CLOCK_MONOTONIC); }

static uint64_t tree_bytes;

static int add_size(const char *path, const struct stat *st, int flag, struct FTW *f)
{
	(void)path, (void)f;
	if (flag == FTW_F)
		tree_bytes += (uint64_t)st->st_size;
	return 0;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *f)
{
	(void)st, (void)flag, (void)f;
	return remove(path);
}

/* Sets up the trace: definitions of `blocks` functions, one archive, one thread. */
static int open_trace(const char *dir, const bench_case *c, weft_pallas_global **g,
		      weft_pallas_archive **a, weft_pallas_thread **t)
{
	weft_pallas_write_options o;
	weft_pallas_write_options_init(&o);
	o.compression = c->compression;
	o.delta_timestamps = c->delta;
	o.layout = c->compact ? WEFT_PALLAS_LAYOUT_COMPACT : WEFT_PALLAS_LAYOUT_PALLAS;
	if (c->helpers != DEFAULT_HELPERS)
		o.compress_threads = c->helpers;
	o.long_patterns = !c->window;
	o.replace = 1;
	if (weft_pallas_global_create(dir, "main", &o, g) < 0)
		return -1;
	weft_pallas_defs *d = weft_pallas_global_defs(*g);
	char name[32];
	weft_pallas_add_string(d, 0, "Process");
	for (uint32_t f = 1; f <= c->blocks; f++) {
		snprintf(name, sizeof name, "function_%u", f - 1);
		weft_pallas_add_string(d, f, name);
		weft_pallas_add_region(d, f, f);
	}
	weft_pallas_add_string(d, c->blocks + 1, "thread_0");
	weft_pallas_add_string(d, c->blocks + 2, "iteration");
	weft_pallas_add_string(d, c->blocks + 3, "value");
	weft_pallas_add_attribute(d, 1, c->blocks + 2, c->blocks + 2, WEFT_PALLAS_TYPE_UINT32);
	weft_pallas_add_attribute(d, 2, c->blocks + 3, c->blocks + 3, WEFT_PALLAS_TYPE_UINT32);
	weft_pallas_add_location_group(d, 0, 0, WEFT_PALLAS_NO_PARENT);
	if (weft_pallas_archive_create(*g, 0, a) < 0)
		return -1;
	weft_pallas_add_location(weft_pallas_archive_defs(*a), 0, c->blocks + 1, 0);
	return weft_pallas_thread_create(*a, 0, t);
}

/*
 * The attribute list of the Enter of iteration `it` of function `f`: two
 * u32 values, the iteration and a value that varies (as decoded fields
 * of a converted trace do), so that the lists do not compress to nothing.
 */
static const weft_pallas_attrs *enter_attrs(const bench_case *c, weft_pallas_attrs *l,
					    uint64_t it, uint32_t f)
{
	if (!c->attrs)
		return NULL;
	weft_pallas_attrs_init(l);
	weft_pallas_attrs_add_u32(l, 1, (uint32_t)it);
	weft_pallas_attrs_add_u32(l, 2, (uint32_t)((it * 2654435761u) >> 7) ^ f);
	return l;
}

/* Records `events` events: a loop over `blocks` Enter/Leave pairs. */
static int record_loop(weft_pallas_thread *t, const bench_case *c, uint64_t events)
{
	uint64_t ts = 1, done = 0, it = 0;
	int bad = 0;
	weft_pallas_attrs l;
	for (; done < events; it++) {
		for (uint32_t f = 1; f <= c->blocks && done < events; f++, done += 2) {
			uint64_t t1 = c->real_clock ? WEFT_PALLAS_TIME_NOW : ts++;
			bad |= weft_pallas_record_enter(t, enter_attrs(c, &l, it, f), t1, f);
			uint64_t t2 = c->real_clock ? WEFT_PALLAS_TIME_NOW : ts++;
			bad |= weft_pallas_record_leave(t, NULL, t2, f);
		}
	}
	return bad;
}

/* One run, in the child: writes the trace, measures, removes it unless kept. */
static run_result run_once(const char *dir, const bench_case *c, uint64_t events, int keep)
{
	run_result r = { 0 };
	weft_pallas_global *g = NULL;
	weft_pallas_archive *a = NULL;
	weft_pallas_thread *t = NULL;
	if (open_trace(dir, c, &g, &a, &t) < 0) {
		fprintf(stderr, "bench_pallas_write: %s\n", weft_last_error());
		r.failed = 1;
		return r;
	}
	double p0 = clock_ns(CLOCK_PROCESS_CPUTIME_ID), c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	double t0 = now_ns();
	r.failed |= record_loop(t, c, events) != 0;
	double t1 = now_ns();
	r.record_cpu_ns = (clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0) / (double)events;
	r.failed |= weft_pallas_thread_close(t) < 0;
	r.failed |= weft_pallas_archive_store(a) < 0;
	r.failed |= weft_pallas_global_store(g) < 0;
	double t2 = now_ns();
	r.process_cpu_ns = (clock_ns(CLOCK_PROCESS_CPUTIME_ID) - p0) / (double)events;
	if (r.failed)
		fprintf(stderr, "bench_pallas_write: %s\n", weft_last_error());
	weft_pallas_global_free(g);
	r.record_ns = (t1 - t0) / (double)events;
	r.total_ns = (t2 - t0) / (double)events;
	r.close_ms = (t2 - t1) / 1e6;
	tree_bytes = 0;
	nftw(dir, add_size, 16, FTW_PHYS);
	r.bytes_per_event = (double)tree_bytes / (double)events;
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	r.peak_rss_mb = (double)ru.ru_maxrss / 1024.0;
	if (!keep)
		nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
	return r;
}

/* Runs one case in a child process (fresh memory, so peak RSS is the run's own). */
static run_result run_child(const char *dir, const bench_case *c, uint64_t events, int keep)
{
	run_result r = { .failed = 1 };
	int fd[2];
	if (pipe(fd) != 0)
		return r;
	pid_t pid = fork();
	if (pid == 0) {
		close(fd[0]);
		run_result mine = run_once(dir, c, events, keep);
		ssize_t w = write(fd[1], &mine, sizeof mine);
		_exit(w == (ssize_t)sizeof mine ? 0 : 1);
	}
	close(fd[1]);
	if (pid > 0 && read(fd[0], &r, sizeof r) != (ssize_t)sizeof r)
		r.failed = 1;
	close(fd[0]);
	if (pid > 0)
		waitpid(pid, NULL, 0);
	return r;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* The median of n values (sorted in place). */
static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The compress_threads a case runs with. */
static int case_helpers(const bench_case *c)
{
	weft_pallas_write_options o;
	weft_pallas_write_options_init(&o);
	return c->helpers == DEFAULT_HELPERS ? o.compress_threads : c->helpers;
}

/* Prints the load average (the machine may be shared: figures depend on it). */
static void print_load(const char *when)
{
	double l[3];
	if (getloadavg(l, 3) == 3)
		printf("load average %s: %.2f %.2f %.2f\n", when, l[0], l[1], l[2]);
	fflush(stdout);
}

/* Runs a case `repeat` times and prints its runs and its RESULT line. */
static int bench(const char *dir, const bench_case *c, uint64_t events, int repeat, int keep)
{
	double total[MAX_REPEAT], rec[MAX_REPEAT], close_ms[MAX_REPEAT];
	double bytes[MAX_REPEAT], rss[MAX_REPEAT], tcpu[MAX_REPEAT], pcpu[MAX_REPEAT];
	print_load(c->name);
	for (int i = 0; i < repeat; i++) {
		run_result r = run_child(dir, c, events, keep && i == repeat - 1);
		if (r.failed) {
			fprintf(stderr, "bench_pallas_write: case %s failed\n", c->name);
			return 1;
		}
		printf("  %-19s run %d: record %6.1f ns/event (thread CPU %6.1f), close %6.1f ms, "
		       "total %6.1f ns/event (process CPU %6.1f), %5.2f bytes/event, peak RSS %5.1f MB\n",
		       c->name, i + 1, r.record_ns, r.record_cpu_ns, r.close_ms, r.total_ns,
		       r.process_cpu_ns, r.bytes_per_event, r.peak_rss_mb);
		fflush(stdout);
		total[i] = r.total_ns, rec[i] = r.record_ns, close_ms[i] = r.close_ms;
		bytes[i] = r.bytes_per_event, rss[i] = r.peak_rss_mb;
		tcpu[i] = r.record_cpu_ns, pcpu[i] = r.process_cpu_ns;
	}
	double best = total[0];
	for (int i = 1; i < repeat; i++)
		best = total[i] < best ? total[i] : best;
	printf("RESULT bench=pallas_write case=%s events=%llu helpers=%d ns_per_event=%.1f "
	       "best_ns_per_event=%.1f record_ns=%.1f record_cpu_ns=%.1f process_cpu_ns=%.1f "
	       "close_ms=%.1f bytes_per_event=%.3f peak_rss_mb=%.1f\n", c->name,
	       (unsigned long long)events, case_helpers(c), median(total, repeat), best, median(rec, repeat),
	       median(tcpu, repeat), median(pcpu, repeat), median(close_ms, repeat),
	       median(bytes, repeat), median(rss, repeat));
	fflush(stdout);
	return 0;
}

/* Whether case `name` is listed in the comma-separated `list` (NULL: the defaults). */
static int selected(const bench_case *c, const char *list)
{
	if (list == NULL)
		return c->default_on;
	size_t n = strlen(c->name);
	for (const char *p = list; p != NULL && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
		if (strncmp(p, c->name, n) == 0 && (p[n] == ',' || p[n] == '\0'))
			return 1;
	return 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: bench_pallas_write [--events N] [--repeat R] "
		"[--case NAME[,NAME...]] [--dir DIR] [--keep]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	uint64_t events = 6000000;
	int repeat = 3, keep = 0;
	const char *list = NULL, *base = getenv("TMPDIR");
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--events") == 0 && i + 1 < argc)
			events = strtoull(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--repeat") == 0 && i + 1 < argc)
			repeat = atoi(argv[++i]);
		else if (strcmp(argv[i], "--case") == 0 && i + 1 < argc)
			list = argv[++i];
		else if (strcmp(argv[i], "--dir") == 0 && i + 1 < argc)
			base = argv[++i];
		else if (strcmp(argv[i], "--keep") == 0)
			keep = 1;
		else
			usage();
	}
	if (events < 2 || repeat < 1 || repeat > MAX_REPEAT)
		usage();
	char dir[4096];
	snprintf(dir, sizeof dir, "%s/weft-bench-pallas-%d", base ? base : "/tmp", (int)getpid());
	int status = 0;
	for (size_t i = 0; i < NCASES; i++)
		if (selected(&CASES[i], list))
			status |= bench(dir, &CASES[i], events, repeat, keep);
	print_load("at the end");
	if (!keep)
		rmdir(dir);
	else
		printf("trace kept in %s\n", dir);
	return status;
}
