/* SPDX-License-Identifier: MIT */
/*
 * pallas_mpi_ring.c - writes a Pallas trace of an MPI ring with weft's
 * Pallas writer (include/weft/pallas.h), without MPI: RANKS ranks (one
 * location group and one thread each) run ITERATIONS rounds of
 * `compute`, then send a message to the next rank and receive one from
 * the previous rank. Timestamps are made up (1 us steps), so the trace is
 * the same on every run.
 *
 *   pallas_mpi_ring DIR [RANKS] [ITERATIONS]
 *
 * Then: weft info DIR; weft profile DIR; weft convert DIR -o ring.pftrace
 * (the messages are arrows between the ranks in ui.perfetto.dev).
 */
#include <stdio.h>
#include <stdlib.h>

#include "weft/weft.h"
#include "weft/pallas.h"

#define MAX_RANKS 64
#define TAG 7
#define MESSAGE_BYTES 4096

enum { S_COMPUTE, S_WORLD, S_FIRST_RANK };
enum { R_COMPUTE = 1 };

/* Prints the library's last error and exits. */
static void die(const char *what)
{
	fprintf(stderr, "pallas_mpi_ring: %s: %s\n", what, weft_last_error());
	exit(1);
}

/* Strings, the compute region, the world communicator, ranks and threads. */
static void define(weft_pallas_defs *d, int ranks)
{
	uint32_t members[MAX_RANKS];
	char name[32];

	if (weft_pallas_add_string(d, S_COMPUTE, "compute") < 0 ||
	    weft_pallas_add_string(d, S_WORLD, "MPI_COMM_WORLD") < 0 ||
	    weft_pallas_add_region(d, R_COMPUTE, S_COMPUTE) < 0)
		die("definitions");
	for (int r = 0; r < ranks; r++) {
		members[r] = (uint32_t)r;
		snprintf(name, sizeof name, "rank %d", r);
		if (weft_pallas_add_string(d, S_FIRST_RANK + (uint32_t)r, name) < 0 ||
		    weft_pallas_add_location_group(d, (uint32_t)r, S_FIRST_RANK + (uint32_t)r,
						   WEFT_PALLAS_NO_PARENT) < 0)
			die("ranks");
	}
	if (weft_pallas_add_group(d, 0, S_WORLD, 2, 5, members, (uint32_t)ranks) < 0 ||
	    weft_pallas_add_comm(d, 0, S_WORLD, 0, WEFT_PALLAS_NO_PARENT) < 0)
		die("communicator");
}

/*
 * The events of one rank: per round, compute (longer as the rounds go),
 * then send to the next rank and receive from the previous one, which
 * sent at the same time.
 */
static void record_rank(weft_pallas_thread *t, int rank, int ranks, int iterations)
{
	uint64_t now = 1000;

	for (int i = 0; i < iterations; i++) {
		int rc = weft_pallas_record_enter(t, NULL, now, R_COMPUTE);
		now += 2000 + 10 * (uint64_t)i;
		rc |= weft_pallas_record_leave(t, NULL, now, R_COMPUTE);
		rc |= weft_pallas_record_mpi_send(t, NULL, now += 100, (uint32_t)((rank + 1) % ranks),
						  0, TAG, MESSAGE_BYTES);
		rc |= weft_pallas_record_mpi_recv(t, NULL, now += 900,
						  (uint32_t)((rank + ranks - 1) % ranks), 0, TAG,
						  MESSAGE_BYTES);
		if (rc < 0)
			die("record");
	}
}

int main(int argc, char **argv)
{
	int ranks = argc > 2 ? atoi(argv[2]) : 4;
	int iterations = argc > 3 ? atoi(argv[3]) : 10;
	weft_pallas_global *g;

	if (argc < 2 || ranks < 2 || ranks > MAX_RANKS || iterations < 1) {
		fprintf(stderr, "usage: pallas_mpi_ring DIR [RANKS (2-%d)] [ITERATIONS]\n",
			MAX_RANKS);
		return 2;
	}
	if (weft_pallas_global_create(argv[1], "main", NULL, &g) < 0)
		die(argv[1]);
	define(weft_pallas_global_defs(g), ranks);
	for (int r = 0; r < ranks; r++) {
		weft_pallas_archive *a;
		weft_pallas_thread *t = NULL; /* set unless die() ends the program */
		if (weft_pallas_archive_create(g, (uint32_t)r, &a) < 0 ||
		    weft_pallas_add_location(weft_pallas_archive_defs(a), (uint32_t)r,
					     S_FIRST_RANK + (uint32_t)r, (uint32_t)r) < 0 ||
		    weft_pallas_thread_create(a, (uint32_t)r, &t) < 0)
			die("archive");
		record_rank(t, r, ranks, iterations);
		if (weft_pallas_thread_close(t) < 0 || weft_pallas_archive_store(a) < 0)
			die("store");
	}
	if (weft_pallas_global_store(g) < 0)
		die("global store");
	weft_pallas_global_free(g);
	printf("wrote %s: %d ranks, %d rounds\n", argv[1], ranks, iterations);
	return 0;
}
