/* SPDX-License-Identifier: MIT */
/*
 * mpi/sync.c - `weft-mpi sync`: measures the offset of every MPI rank's
 * CLOCK_MONOTONIC (the clock libovni stamps events with) against rank 0
 * and writes the table of ovni's ovnisync, clock-offsets.txt, which weft
 * and ovniemu add to the clocks of each loom (docs/sync.md).
 *
 * Rank 0 plays many ping-pong rounds with each other rank in turn: it
 * reads t0, sends, the peer reads its clock tp and replies, rank 0 reads
 * t1. Each round gives a sample (t0 + t1) / 2 - tp of the offset (what to
 * add to the peer's clock to get rank 0's) and the round trip t1 - t0
 * that bounds its error. The half of the samples with the smallest round
 * trips is kept and its median is the offset. Only MPI and POSIX are
 * used: the runner links this file without knowing libweft.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <mpi.h>

#include "cli/cli.h"
#include "mpi/mpi_runner.h"

#define PROG "weft-mpi sync"
#define TABLE_NAME "clock-offsets.txt"
#define DEFAULT_ROUNDS 1000
#define MAX_ROUNDS 10000000L
/* Rounds played before the measured ones: connections set up, caches warm. */
#define WARMUP_ROUNDS 20
#define HOST_CAP 256
/* The test-only variables: one offset in ns, one host name per rank. */
#define INJECT_ENV "WEFT_SYNC_TEST_OFFSETS"
#define HOSTS_ENV "WEFT_SYNC_TEST_HOSTNAMES"
/* Larger injected offsets could overflow the sums of clocks. */
#define INJECT_MAX 1000000000000000LL

enum { TAG_PING = 1, TAG_PONG = 2 };

typedef struct {
	long rounds;
	const char *output;   /* -o, or NULL: TRACE_DIR/clock-offsets.txt */
	const char *trace_dir;
	int force;
	int print;
	int verbose;
	int help;
} sync_options;

/* One ping-pong round seen from rank 0; offset2 is twice the offset, so
 * that the midpoint of t0 and t1 stays an integer. */
typedef struct {
	int64_t rtt;
	int64_t offset2;
} sample;

/* What rank 0 reports for one rank, in ns. */
typedef struct {
	int64_t median;
	double mean;
	double std;
	long kept;
	int64_t rtt_min;
	int64_t rtt_kept_max;
} rank_result;

/* Prints the help (the usage first, then the options, as weft's helps). */
static void usage(FILE *out)
{
	fprintf(out,
		"usage: weft-mpi sync [-n ROUNDS] [-o FILE] [-f] [--print] [-v] [TRACE_DIR]\n"
		"\n"
		"Measures the offset of every MPI rank's CLOCK_MONOTONIC against rank 0\n"
		"and writes it as ovnisync's table, TRACE_DIR/clock-offsets.txt, which\n"
		"weft and ovniemu apply to the looms of the trace. Run one rank per node,\n"
		"as ovnisync: ranks on a host already listed are left out of the file.\n"
		"TRACE_DIR (the ovni directory that holds the loom.* directories) must\n"
		"exist; it defaults to $OVNI_TRACEDIR, else \"ovni\", as for ovnisync.\n"
		"\n"
		"options:\n"
		"  -n, --rounds N     measured ping-pong rounds per rank (default %d),\n"
		"                     after %d warm-up rounds; the half with the smallest\n"
		"                     round trip is kept and its median is the offset\n"
		"  -o, --output FILE  write the table to FILE instead of\n"
		"                     TRACE_DIR/clock-offsets.txt\n"
		"  -f, --force        replace an existing table\n"
		"  --print            also print the table on stdout, with every rank\n"
		"                     (repeated hosts included)\n"
		"  -v, --verbose      the round trips of each rank on stderr\n"
		"  -h, --help         this help\n"
		"\n"
		"example:\n"
		"  mpiexec -n 4 weft-mpi sync TRACE_DIR\n"
		"\n"
		"exit status: 0 when the table was written, 2 for bad usage or a\n"
		"failure; every rank returns the same.\n",
		DEFAULT_ROUNDS, WARMUP_ROUNDS);
}

/* A usage error, said by rank 0 as weft's commands say theirs; -1. */
static int usage_error(int rank, const char *fmt, ...)
{
	if (rank != 0)
		return -1;
	char text[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(text, sizeof text, fmt, ap);
	va_end(ap);
	cli_usage_error_as("weft-mpi", "sync", "%s", text);
	return -1;
}

/* Reads a whole decimal number into *out; 0 on success, -1 otherwise. */
static int parse_long(const char *text, long long min, long long max, long long *out)
{
	char *end;
	errno = 0;
	long long v = strtoll(text, &end, 10);
	if (errno != 0 || end == text || *end != '\0' || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

/*
 * Parses the arguments with weft's option parser and sync's table
 * (cli/options.c, cli/commands.c: the spellings of every weft command). Every rank parses the same
 * argv, so every rank reaches the same verdict; only rank 0 says what is
 * wrong. Returns 0 or -1.
 */
static int parse_options(int argc, char **argv, int rank, sync_options *o)
{
	memset(o, 0, sizeof *o);
	o->rounds = DEFAULT_ROUNDS;
	cli_parser p;
	cli_parser_init(&p, "sync", argc, argv, cli_sync_options);
	p.quiet = rank != 0;
	p.program = "weft-mpi"; /* as every other message of PROG's */
	const char *value;
	long long n;
	int id;
	while ((id = cli_next_option(&p, &value)) > 0) {
		switch (id) {
		case CLI_SYNC_HELP: o->help = 1; break;
		case CLI_SYNC_FORCE: o->force = 1; break;
		case CLI_SYNC_PRINT: o->print = 1; break;
		case CLI_SYNC_VERBOSE: o->verbose = 1; break;
		case CLI_SYNC_OUTPUT:
			if (value[0] == '\0')
				return usage_error(rank, "-o needs a file name");
			o->output = value;
			break;
		case CLI_SYNC_ROUNDS:
			if (parse_long(value, 1, MAX_ROUNDS, &n) != 0)
				return usage_error(rank, "-n wants a number of rounds from 1 to "
						   "%ld, not '%s'", MAX_ROUNDS, value);
			o->rounds = (long)n;
			break;
		}
	}
	if (id < 0)
		return -1;
	if (p.positional_count > 1)
		return usage_error(rank, "more than one TRACE_DIR");
	o->trace_dir = p.positional_count == 1 ? p.positional[0] : NULL;
	return 0;
}

/*
 * Reads the next comma-separated field of a test variable into `buf`.
 * Returns 1 with a field, 0 at the end, -1 for an empty or too long one
 * ("1,,2" must not read as two entries).
 */
static int next_field(const char **p, char *buf, size_t cap)
{
	if (**p == '\0')
		return 0;
	size_t len = strcspn(*p, ",");
	if (len == 0 || len >= cap)
		return -1;
	memcpy(buf, *p, len);
	buf[len] = '\0';
	*p += len;
	if (**p == ',' && *++*p == '\0')
		return -1; /* a trailing comma: an empty last field */
	return 1;
}

/*
 * Reads this rank's entry of a test-only variable (docs/sync.md):
 * WEFT_SYNC_TEST_OFFSETS, a signed offset in ns added to every clock
 * reading, or WEFT_SYNC_TEST_HOSTNAMES, the host name to report; they let
 * one machine play a cluster whose clocks disagree by known amounts.
 * Every entry is checked, so that every rank judges the variable alike.
 * `mine` gets this rank's entry; returns 1 (found), 0 (no variable) or
 * -1 with a message on rank 0.
 */
static int test_entry(const char *name, int is_number, int rank, int size, char *mine,
		      size_t cap)
{
	const char *env = getenv(name), *p = env;
	if (env == NULL || env[0] == '\0')
		return 0;
	char field[HOST_CAP];
	int count = 0, got, ok = 1;
	while (ok && (got = next_field(&p, field, sizeof field)) != 0) {
		long long v;
		if (got < 0)
			ok = 0;
		else if (is_number)
			ok = parse_long(field, -INJECT_MAX, INJECT_MAX, &v) == 0;
		else
			ok = strcspn(field, " \t\n") == strlen(field) && strlen(field) < cap;
		if (ok && count++ == rank)
			snprintf(mine, cap, "%s", field);
	}
	if (ok && count >= size)
		return 1;
	if (rank == 0 && is_number)
		fprintf(stderr, "%s: %s='%s': expected one integer (ns, |n| <= %lld) per "
			"rank, comma-separated, for %d ranks\n", PROG, name, env, INJECT_MAX,
			size);
	else if (rank == 0)
		fprintf(stderr, "%s: %s='%s': expected one host name (no space) per rank, "
			"comma-separated, for %d ranks\n", PROG, name, env, size);
	return -1;
}

/* This rank's injected clock offset (0 without the test variable). */
static int injected_offset(int rank, int size, int64_t *out)
{
	char text[HOST_CAP];
	long long v = 0;
	int rc = test_entry(INJECT_ENV, 1, rank, size, text, sizeof text);
	if (rc > 0)
		parse_long(text, -INJECT_MAX, INJECT_MAX, &v);
	*out = v;
	return rc < 0 ? -1 : 0;
}

/* CLOCK_MONOTONIC in ns, as libovni stamps events, plus the injection. */
static int64_t clock_now(int64_t injected)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec + injected;
}

/*
 * Waits for a request while sleeping between tests: with more ranks than
 * cores (several ranks per host, tests), a rank that spins in MPI while
 * it waits for its turn steals the core of the pair being measured.
 */
static void wait_sleeping(MPI_Request *req)
{
	const struct timespec pause = { 0, 100000 };
	for (;;) {
		int done = 0;
		MPI_Test(req, &done, MPI_STATUS_IGNORE);
		if (done)
			return;
		nanosleep(&pause, NULL);
	}
}

/*
 * The host name of this rank (gethostname(), as ovnisync, or the test
 * variable) up to its first dot: ovniemu and weft name a loom's host so,
 * and a dotted name would match no loom. Returns 0, or -1 with a message
 * (the test variable's on rank 0 only).
 */
static int host_name(int rank, int size, char host[HOST_CAP])
{
	memset(host, 0, HOST_CAP);
	int rc = test_entry(HOSTS_ENV, 0, rank, size, host, HOST_CAP);
	if (rc < 0)
		return -1;
	if (rc == 0 && gethostname(host, HOST_CAP - 1) != 0) {
		fprintf(stderr, "%s: rank %d: cannot read the host name: %s\n", PROG, rank,
			strerror(errno));
		return -1;
	}
	size_t dot = strcspn(host, ".");
	if (dot > 0)
		host[dot] = '\0';
	if (host[0] == '\0') {
		fprintf(stderr, "%s: rank %d: empty host name\n", PROG, rank);
		return -1;
	}
	return 0;
}

/*
 * Rank 0's side of the rounds with one peer: fills `s` with the measured
 * rounds (the warm-up ones are played and dropped).
 */
static void measure_peer(MPI_Comm comm, int peer, long rounds, int64_t injected, sample *s)
{
	for (long i = 0; i < WARMUP_ROUNDS + rounds; i++) {
		int ping = 0;
		int64_t tp;
		int64_t t0 = clock_now(injected);
		MPI_Send(&ping, 1, MPI_INT, peer, TAG_PING, comm);
		MPI_Recv(&tp, 1, MPI_INT64_T, peer, TAG_PONG, comm, MPI_STATUS_IGNORE);
		int64_t t1 = clock_now(injected);
		if (i >= WARMUP_ROUNDS) {
			s[i - WARMUP_ROUNDS].rtt = t1 - t0;
			s[i - WARMUP_ROUNDS].offset2 = (t0 - tp) + (t1 - tp);
		}
	}
}

/*
 * A peer's side: answers each ping with its clock, read as soon as the
 * ping is in. The first ping is awaited sleeping (rank 0 may be busy with
 * other ranks for long), the others at full speed.
 */
static void answer_pings(MPI_Comm comm, long rounds, int64_t injected)
{
	for (long i = 0; i < WARMUP_ROUNDS + rounds; i++) {
		int ping;
		if (i == 0) {
			MPI_Request req;
			MPI_Irecv(&ping, 1, MPI_INT, 0, TAG_PING, comm, &req);
			wait_sleeping(&req);
		} else {
			MPI_Recv(&ping, 1, MPI_INT, 0, TAG_PING, comm, MPI_STATUS_IGNORE);
		}
		int64_t tp = clock_now(injected);
		MPI_Send(&tp, 1, MPI_INT64_T, 0, TAG_PONG, comm);
	}
}

/* Orders samples by round trip, then offset (for a stable choice). */
static int by_rtt(const void *pa, const void *pb)
{
	const sample *a = pa, *b = pb;
	if (a->rtt != b->rtt)
		return a->rtt < b->rtt ? -1 : 1;
	return (a->offset2 > b->offset2) - (a->offset2 < b->offset2);
}

/* Orders samples by offset. */
static int by_offset(const void *pa, const void *pb)
{
	const sample *a = pa, *b = pb;
	return (a->offset2 > b->offset2) - (a->offset2 < b->offset2);
}

/*
 * Reduces the samples of one rank: keeps the half with the smallest round
 * trips (their midpoints are the closest to the instant the peer read its
 * clock: a round trip bounds the error of its sample by half of it), then
 * takes the median of their offsets, rounded to the ns, with their mean
 * and standard deviation (n - 1, as ovnisync). Sorts `s` in place.
 */
static rank_result reduce_samples(sample *s, long n)
{
	rank_result r = { 0 };
	qsort(s, (size_t)n, sizeof *s, by_rtt);
	long k = (n + 1) / 2;
	r.kept = k;
	r.rtt_min = s[0].rtt;
	r.rtt_kept_max = s[k - 1].rtt;
	qsort(s, (size_t)k, sizeof *s, by_offset);
	/* In quarters of ns: twice the offset, twice again for the mean of
	 * the two middle samples of an even count. */
	int64_t q = k % 2 ? 2 * s[k / 2].offset2 : s[k / 2 - 1].offset2 + s[k / 2].offset2;
	r.median = q >= 0 ? (q + 2) / 4 : -((-q + 2) / 4); /* half away from 0 */
	/* Deviations from the median keep the sums small and exact enough
	 * even when the offset itself is large (uptimes differ by months). */
	double sum = 0, sq = 0;
	for (long i = 0; i < k; i++)
		sum += (double)(s[i].offset2 - 2 * r.median) / 2;
	double mean_dev = sum / (double)k;
	for (long i = 0; i < k; i++) {
		double d = (double)(s[i].offset2 - 2 * r.median) / 2 - mean_dev;
		sq += d * d;
	}
	r.mean = (double)r.median + mean_dev;
	r.std = k > 1 ? sqrt(sq / (double)(k - 1)) : 0;
	return r;
}

/* Writes ovnisync's header line (its column widths, for ovniemu's eyes). */
static void print_header(FILE *out)
{
	fprintf(out, "%-10s %-20s %-20s %-20s %-20s\n",
		"rank", "hostname", "offset_median", "offset_mean", "offset_std");
}

/* Writes one row of the table, in ovnisync's format. */
static void print_row(FILE *out, int rank, const char *host, const rank_result *r)
{
	fprintf(out, "%-10d %-20s %-20" PRId64 " %-20f %-20f\n",
		rank, host, r->median, r->mean, r->std);
}

/* The first rank below `rank` on the same host, or -1. */
static int first_on_host(const char *hosts, int rank)
{
	for (int j = 0; j < rank; j++)
		if (strcmp(hosts + (size_t)j * HOST_CAP, hosts + (size_t)rank * HOST_CAP) == 0)
			return j;
	return -1;
}

/*
 * The output file of rank 0, open on a temporary name next to it from
 * before the measurement on, so that a directory that does not exist or
 * cannot be written is refused before the rounds are played.
 */
typedef struct {
	char *path;
	char *tmp;
	int fd;
} out_file;

/* Frees the names and removes the temporary file if it is still there. */
static void out_discard(out_file *f)
{
	if (f->fd >= 0)
		close(f->fd);
	if (f->tmp != NULL)
		unlink(f->tmp);
	free(f->path);
	free(f->tmp);
	memset(f, 0, sizeof *f);
	f->fd = -1;
}

/*
 * Checks the destination and creates "<path>.tmp.XXXXXX" with the
 * permissions a new file gets (mkstemp makes it 0600). Returns 0 or -1
 * with a message.
 */
static int out_open(out_file *f, const sync_options *o)
{
	struct stat st;
	memset(f, 0, sizeof *f);
	f->fd = -1;
	if (o->trace_dir != NULL || o->output == NULL) {
		const char *dir = o->trace_dir;
		if (dir == NULL)
			dir = getenv("OVNI_TRACEDIR") ? getenv("OVNI_TRACEDIR") : "ovni";
		if (stat(dir, &st) != 0) {
			fprintf(stderr, "%s: '%s': %s (TRACE_DIR is the ovni trace "
				"directory, with the loom.* directories)\n", PROG, dir,
				strerror(errno));
			return -1;
		}
		if (!S_ISDIR(st.st_mode)) {
			fprintf(stderr, "%s: '%s': not a directory\n", PROG, dir);
			return -1;
		}
		if (o->output == NULL) {
			size_t len = strlen(dir) + sizeof "/" TABLE_NAME;
			if ((f->path = malloc(len)) != NULL)
				snprintf(f->path, len, "%s/%s", dir, TABLE_NAME);
		}
	}
	if (f->path == NULL && o->output != NULL)
		f->path = strdup(o->output);
	if (f->path == NULL) {
		fprintf(stderr, "%s: out of memory\n", PROG);
		return -1;
	}
	if (stat(f->path, &st) == 0 && S_ISDIR(st.st_mode)) {
		fprintf(stderr, "%s: '%s' is a directory\n", PROG, f->path);
		return -1;
	}
	if (!o->force && stat(f->path, &st) == 0) {
		fprintf(stderr, "%s: '%s' exists; use --force to replace it\n", PROG, f->path);
		return -1;
	}
	size_t len = strlen(f->path) + sizeof ".tmp.XXXXXX";
	if ((f->tmp = malloc(len)) == NULL) {
		fprintf(stderr, "%s: out of memory\n", PROG);
		return -1;
	}
	snprintf(f->tmp, len, "%s.tmp.XXXXXX", f->path);
	f->fd = mkstemp(f->tmp);
	if (f->fd < 0) {
		fprintf(stderr, "%s: cannot create a temporary file next to '%s': %s\n", PROG,
			f->path, strerror(errno));
		free(f->tmp);
		f->tmp = NULL;
		return -1;
	}
	mode_t mask = umask(0);
	umask(mask);
	if (fchmod(f->fd, 0666 & ~mask) != 0) {
		/* keep 0600: still a usable file */
	}
	return 0;
}

/*
 * Moves the temporary file to its name. Without force, link() fails if
 * the file appeared meanwhile (rename would replace it); file systems
 * without hard links get a check, then rename. Returns 0 or -1 (errno).
 */
static int put_in_place(const out_file *f, int force)
{
	if (force)
		return rename(f->tmp, f->path);
	if (link(f->tmp, f->path) == 0) {
		unlink(f->tmp);
		return 0;
	}
	if (errno == EEXIST)
		return -1;
	if (access(f->path, F_OK) == 0) {
		errno = EEXIST;
		return -1;
	}
	return rename(f->tmp, f->path);
}

/*
 * Writes the table (one row per host: the first rank on it, as ovnisync;
 * ovniemu refuses a host listed twice), syncs it and puts it in place:
 * without --force, link() fails if the file appeared meanwhile. Returns
 * 0 or -1 with a message; the temporary file is gone either way.
 */
static int out_commit(out_file *f, int force, const char *hosts, const rank_result *res,
		      int size)
{
	FILE *fp = fdopen(f->fd, "w");
	const char *step = "write";
	int ok = fp != NULL;
	if (ok) {
		f->fd = -1;
		print_header(fp);
		for (int r = 0; r < size; r++)
			if (first_on_host(hosts, r) < 0)
				print_row(fp, r, hosts + (size_t)r * HOST_CAP, &res[r]);
		ok = fflush(fp) == 0 && !ferror(fp) && fsync(fileno(fp)) == 0;
		if (fclose(fp) != 0 && ok) {
			ok = 0;
			step = "close";
		}
	}
	if (ok) {
		step = "rename to";
		ok = put_in_place(f, force) == 0;
	}
	if (!ok && step[0] == 'r' && errno == EEXIST)
		fprintf(stderr, "%s: '%s' appeared meanwhile; use --force to replace it\n",
			PROG, f->path);
	else if (!ok)
		fprintf(stderr, "%s: cannot %s '%s': %s\n", PROG, step,
			step[0] == 'r' ? f->path : f->tmp, strerror(errno));
	if (ok) {
		free(f->tmp); /* in place: nothing left to remove */
		f->tmp = NULL;
	}
	out_discard(f);
	return ok ? 0 : -1;
}

/* Says on stderr which ranks were left out of the file for sharing a
 * host with a lower rank: a sign that more than one rank ran per node. */
static void note_shared_hosts(const char *hosts, int size)
{
	for (int r = 1; r < size; r++) {
		int first = first_on_host(hosts, r);
		if (first >= 0)
			fprintf(stderr, "%s: note: rank %d is on host %s, as rank %d: its row is "
				"left out of the file (run one rank per node)\n", PROG, r,
				hosts + (size_t)r * HOST_CAP, first);
	}
}

/*
 * Rank 0's work once everything is set up: the rounds with every peer in
 * turn, the reduction, the table. Returns 0 or -1 with a message.
 */
static int rank0_measure(MPI_Comm comm, int size, const sync_options *o, int64_t injected,
			 const char *hosts, out_file *out)
{
	sample *s = malloc((size_t)o->rounds * sizeof *s);
	rank_result *res = calloc((size_t)size, sizeof *res);
	if (s == NULL || res == NULL) {
		fprintf(stderr, "%s: out of memory for %ld rounds\n", PROG, o->rounds);
		free(s);
		free(res);
		return -1;
	}
	for (int p = 1; p < size; p++) {
		measure_peer(comm, p, o->rounds, injected, s);
		res[p] = reduce_samples(s, o->rounds);
		if (o->verbose)
			fprintf(stderr, "%s: rank %d (%s): round trip min %" PRId64 " ns, "
				"%ld of %ld rounds kept (round trip <= %" PRId64 " ns)\n", PROG,
				p, hosts + (size_t)p * HOST_CAP, res[p].rtt_min, res[p].kept,
				o->rounds, res[p].rtt_kept_max);
	}
	free(s);
	note_shared_hosts(hosts, size);
	if (o->print) {
		print_header(stdout);
		for (int r = 0; r < size; r++)
			print_row(stdout, r, hosts + (size_t)r * HOST_CAP, &res[r]);
		fflush(stdout);
	}
	int rc = out_commit(out, o->force, hosts, res, size);
	free(res);
	return rc;
}

/* See mpi_runner.h. */
int weft_mpi_sync(int argc, char **argv)
{
	int rank, size;
	MPI_Comm comm;
	MPI_Comm_dup(MPI_COMM_WORLD, &comm);
	MPI_Comm_rank(comm, &rank);
	MPI_Comm_size(comm, &size);

	sync_options o;
	if (parse_options(argc, argv, rank, &o) != 0) {
		MPI_Comm_free(&comm);
		return 2;
	}
	if (o.help) {
		if (rank == 0)
			usage(stdout);
		MPI_Comm_free(&comm);
		return 0;
	}

	/* Set up: every rank says whether its part went well. */
	int64_t injected = 0;
	char host[HOST_CAP];
	out_file out = { .fd = -1 };
	int bad = injected_offset(rank, size, &injected) != 0;
	if (host_name(rank, size, host) != 0)
		bad = 1;
	if (rank == 0 && !bad && out_open(&out, &o) != 0)
		bad = 1;
	int any_bad = 0;
	MPI_Allreduce(&bad, &any_bad, 1, MPI_INT, MPI_MAX, comm);
	if (any_bad) {
		out_discard(&out);
		MPI_Comm_free(&comm);
		return 2;
	}

	char *hosts = rank == 0 ? calloc((size_t)size, HOST_CAP) : NULL;
	int failed = rank == 0 && hosts == NULL;
	MPI_Bcast(&failed, 1, MPI_INT, 0, comm);
	if (failed) {
		fprintf(stderr, "%s: out of memory\n", PROG);
		out_discard(&out);
		MPI_Comm_free(&comm);
		return 2;
	}
	MPI_Gather(host, HOST_CAP, MPI_CHAR, hosts, HOST_CAP, MPI_CHAR, 0, comm);

	if (rank == 0)
		failed = rank0_measure(comm, size, &o, injected, hosts, &out) != 0;
	else
		answer_pings(comm, o.rounds, injected);

	/* The verdict of rank 0, awaited sleeping by the ranks already done. */
	MPI_Request req;
	MPI_Ibcast(&failed, 1, MPI_INT, 0, comm, &req);
	wait_sleeping(&req);
	free(hosts);
	out_discard(&out);
	MPI_Comm_free(&comm);
	return failed ? 2 : 0;
}
