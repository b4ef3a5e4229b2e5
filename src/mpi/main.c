/* SPDX-License-Identifier: MIT */
/*
 * mpi/main.c - `weft-mpi`, the MPI front end: `mpiexec -n R weft-mpi
 * COMMAND ...` runs a weft command on R ranks.
 *
 * The runner only sets up MPI and a weft_dist over it (gather and
 * broadcast on MPI_COMM_WORLD): the commands are weft's own (cli/), and
 * the library shares the work (weft/dist.h). The commands whose library
 * calls combine across ranks run on every rank, each reading its share
 * of the streams, and rank 0 prints what `weft COMMAND` prints; the other
 * commands run on rank 0 alone. The other ranks' stdout and stderr go to
 * /dev/null: the library brings their diagnostics and errors to rank 0.
 * Every rank exits with rank 0's exit code. `weft-mpi sync` is the one
 * MPI-only command (mpi/sync.c).
 */
#include <limits.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "mpi/mpi_runner.h"

/*
 * Under AddressSanitizer, the leak check runs before MPI_Finalize: MPICH
 * unloads modules at the end whose allocations LeakSanitizer could then
 * not name (nor its suppressions match); weft's own work is over by then.
 */
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#define LEAK_CHECK_NOW() __lsan_do_leak_check()
#else
#define LEAK_CHECK_NOW() ((void)0)
#endif

/* The commands whose library calls combine across ranks (weft/dist.h). */
static const char *const shared_commands[] = { "top", "profile", "info", "check", "sort",
						 "convert", "summary", NULL };

/* weft_dist.gather over MPI: lengths first, then the bytes (MPI_Gatherv). */
static int mpi_gather(void *user, const void *bytes, size_t len, void **all, size_t *lens)
{
	MPI_Comm comm = *(MPI_Comm *)user;
	int rank, ranks;
	MPI_Comm_rank(comm, &rank);
	MPI_Comm_size(comm, &ranks);
	unsigned long long mine = len, *every = NULL;
	*all = NULL;
	if (rank == 0 && (every = malloc((size_t)ranks * sizeof *every)) == NULL)
		MPI_Abort(comm, 2);
	MPI_Gather(&mine, 1, MPI_UNSIGNED_LONG_LONG, every, 1, MPI_UNSIGNED_LONG_LONG, 0, comm);
	/* MPI counts are ints: rank 0 says whether the total fits. */
	int *counts = NULL, *displs = NULL, fits = 1;
	unsigned long long total = 0;
	for (int r = 0; rank == 0 && r < ranks; r++) {
		total += every[r];
		lens[r] = (size_t)every[r];
	}
	if (rank == 0) {
		fits = total <= INT_MAX;
		counts = malloc((size_t)ranks * sizeof *counts);
		displs = malloc((size_t)ranks * sizeof *displs);
		*all = malloc(total ? (size_t)total : 1);
		if (counts == NULL || displs == NULL || *all == NULL)
			MPI_Abort(comm, 2);
		for (int r = 0, at = 0; fits && r < ranks; r++) {
			counts[r] = (int)every[r];
			displs[r] = at;
			at += counts[r];
		}
	}
	MPI_Bcast(&fits, 1, MPI_INT, 0, comm);
	if (fits)
		MPI_Gatherv(bytes, (int)len, MPI_BYTE, *all, counts, displs, MPI_BYTE, 0, comm);
	free(every);
	free(counts);
	free(displs);
	if (!fits) {
		free(*all);
		*all = NULL;
		return WEFT_EUNSUPPORTED;
	}
	return 0;
}

/*
 * Waits for `req` without holding a core: MPICH's blocking calls poll
 * while they wait, and a rank that waits long for rank 0 (the ranks of
 * `convert -t chrome` between rank 0's requests, docs/mpi.md) would take
 * the core of a thread that works, when ranks share a node. So: polls
 * for a while (quick answers stay quick), then sleeps between polls, the
 * sleep doubling from 10 us up to 500 us.
 */
static void wait_politely(MPI_Request *req)
{
	long sleep_ns = 10000;
	int done = 0;

	for (int polls = 0; !done; polls++) {
		MPI_Test(req, &done, MPI_STATUS_IGNORE);
		if (done || polls < 2000)
			continue;
		struct timespec ts = { 0, sleep_ns };
		nanosleep(&ts, NULL);
		if (sleep_ns < 500000)
			sleep_ns *= 2;
	}
}

/* weft_dist.broadcast over MPI (waiting politely: wait_politely()). */
static int mpi_broadcast(void *user, void *bytes, size_t len)
{
	MPI_Request req;

	if (len > INT_MAX)
		return WEFT_EUNSUPPORTED;
	MPI_Ibcast(bytes, (int)len, MPI_BYTE, 0, *(MPI_Comm *)user, &req);
	wait_politely(&req);
	return 0;
}

static void print_usage(FILE *out)
{
	fprintf(out,
		"usage: mpiexec -n RANKS weft-mpi COMMAND [OPTIONS] TRACE\n"
		"       mpiexec -n RANKS weft-mpi sync [OPTIONS] TRACE_DIR\n"
		"\n"
		"Runs a weft command on RANKS MPI ranks. top, profile, info, check,\n"
		"summary, sort and convert -t pallas, otf2, chrome, perfetto or paraver\n"
		"share the work among the ranks (the streams balanced by bytes, read from\n"
		"the shared file system; a ROSS run by byte pieces of each file) and\n"
		"combine their results: rank 0 prints (and writes) what\n"
		"'weft COMMAND' does. The other commands (and convert's emulation of\n"
		"ovni models) run on rank 0 alone.\n"
		"sync measures the clock offset of every rank against rank 0 and\n"
		"writes ovnisync's clock-offsets.txt (docs/sync.md).\n"
		"'weft COMMAND --help' describes each command.\n");
}

/* 1 when `name` is one of the commands that combine across ranks. */
static int is_shared(const char *name)
{
	for (size_t i = 0; shared_commands[i] != NULL; i++)
		if (strcmp(shared_commands[i], name) == 0)
			return 1;
	return 0;
}

/* Runs `weft ARGS` on every rank (shared) or on rank 0; rank 0's exit code. */
static int run_command(int argc, char **argv, int rank, int ranks, MPI_Comm *comm)
{
	weft_dist dist = { .rank = rank, .ranks = ranks, .gather = mpi_gather,
			   .broadcast = mpi_broadcast, .user = comm };
	int shared = is_shared(argv[1]);
	int code = 0;
	if (rank != 0 && (freopen("/dev/null", "w", stdout) == NULL ||
			  freopen("/dev/null", "w", stderr) == NULL))
		MPI_Abort(*comm, 2);
	if (shared)
		cli_set_dist(&dist);
	if (shared || rank == 0)
		code = cli_main(argc, argv);
	cli_set_dist(NULL);
	fflush(stdout);
	MPI_Bcast(&code, 1, MPI_INT, 0, *comm);
	return code;
}

int main(int argc, char **argv)
{
	MPI_Comm comm = MPI_COMM_WORLD;
	int rank, ranks, code;

	int provided;

	/* weft's threads (parts, writers, the packing of chrome's records)
	 * never call MPI: only this thread does (FUNNELED) */
	MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
	MPI_Comm_rank(comm, &rank);
	MPI_Comm_size(comm, &ranks);
	if (argc < 2 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
		if (rank == 0)
			print_usage(argc < 2 ? stderr : stdout);
		code = argc < 2 ? CLI_EXIT_FAILURE : CLI_EXIT_OK;
	} else if (strcmp(argv[1], "sync") == 0) {
		code = weft_mpi_sync(argc - 1, argv + 1);
	} else if (!cli_command_exists(argv[1])) {
		if (rank == 0) {
			fprintf(stderr, "weft-mpi: unknown command '%s'\n\n", argv[1]);
			print_usage(stderr);
		}
		code = CLI_EXIT_FAILURE;
	} else {
		code = run_command(argc, argv, rank, ranks, &comm);
	}
	LEAK_CHECK_NOW();
	MPI_Finalize();
	return code;
}
