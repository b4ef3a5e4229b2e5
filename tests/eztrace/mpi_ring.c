/* SPDX-License-Identifier: MIT */
/*
 * tests/eztrace/mpi_ring.c - an MPI program for `eztrace -t mpich`
 * (tests/python/test_otf2_pallas.py): 5 rounds of a token around the
 * ring (blocking send and receive), a non-blocking exchange with the
 * neighbours, an Allreduce and a Barrier; `mpi_ring N`: N rounds
 * (bench/eztrace_bench.sh).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	int rank, size, token = 0;
	int rounds = argc > 1 ? atoi(argv[1]) : 5;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	int next = (rank + 1) % size, prev = (rank + size - 1) % size;
	for (int round = 0; round < rounds; round++) {
		if (rank == 0) {
			MPI_Send(&token, 1, MPI_INT, next, round % 1000, MPI_COMM_WORLD);
			MPI_Recv(&token, 1, MPI_INT, prev, round % 1000, MPI_COMM_WORLD,
				 MPI_STATUS_IGNORE);
		} else {
			MPI_Recv(&token, 1, MPI_INT, prev, round % 1000, MPI_COMM_WORLD,
				 MPI_STATUS_IGNORE);
			token++;
			MPI_Send(&token, 1, MPI_INT, next, round % 1000, MPI_COMM_WORLD);
		}
		MPI_Request requests[2];
		MPI_Status statuses[2];
		int mine = rank, theirs = -1;
		MPI_Isend(&mine, 1, MPI_INT, next, 1000 + round % 1000, MPI_COMM_WORLD, &requests[0]);
		MPI_Irecv(&theirs, 1, MPI_INT, prev, 1000 + round % 1000, MPI_COMM_WORLD,
			  &requests[1]);
		MPI_Waitall(2, requests, statuses);
		MPI_Allreduce(MPI_IN_PLACE, &token, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
		MPI_Barrier(MPI_COMM_WORLD);
	}
	if (rank == 0)
		printf("token %d\n", token);
	MPI_Finalize();
	return 0;
}
