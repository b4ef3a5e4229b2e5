/* SPDX-License-Identifier: MIT */
/*
 * mpi/mpi_runner.h - the parts of `weft-mpi`, the MPI front end: the
 * runner (main.c: MPI set up, the weft_dist over MPI, the commands run
 * by every rank) and the MPI-only commands (sync.c).
 */
#ifndef WEFT_MPI_RUNNER_H
#define WEFT_MPI_RUNNER_H

/*
 * `weft-mpi sync [OPTIONS] TRACE_DIR` (argv[0] is "sync"): the clock
 * offset of every rank against rank 0, written as ovnisync's
 * clock-offsets.txt. MPI is initialised and finalised by the caller.
 * Returns the exit code, the same on every rank.
 */
int weft_mpi_sync(int argc, char **argv);

#endif /* WEFT_MPI_RUNNER_H */
