#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Write a Pallas trace of an MPI ring from Python (weft.PallasWriter).

Each rank (a process with one thread) sends a message to the next rank
and receives one from the previous, ROUNDS times, inside an "MPI_Sendrecv"
region; the message of round r is 1 KiB << (r % 4), so the sizes vary.
weft.open(), weft dump and Pallas's own tools read the result.

usage: write_mpi_ring.py DIR [RANKS] [ROUNDS]
"""

import sys

import weft


def write_ring(path, ranks=4, rounds=8):
    """Writes the ring into the directory `path` (replaced if it exists)."""
    with weft.PallasWriter(path, replace=True) as w:
        world = w.comm("MPI_COMM_WORLD", list(range(ranks)))
        threads = []
        for rank in range(ranks):
            process = w.process(f"rank {rank}")
            threads.append(w.thread(w.location(f"rank {rank} thread 0", process=process)))
        for rank, t in enumerate(threads):
            now = 1000 * (rank + 1)
            for r in range(rounds):
                size = 1024 << (r % 4)
                t.enter("MPI_Sendrecv", now)
                t.mpi_send((rank + 1) % ranks, world, r, size, now + 10)
                t.mpi_recv((rank - 1) % ranks, world, r, size, now + 10 + size // 64)
                t.leave("MPI_Sendrecv", now + 20 + size // 64)
                now += 100 + size // 32
            t.close()


def main():
    if not 2 <= len(sys.argv) <= 4:
        sys.exit(__doc__.strip().splitlines()[-1])
    ranks = int(sys.argv[2]) if len(sys.argv) > 2 else 4
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 8
    write_ring(sys.argv[1], ranks, rounds)
    print(f"wrote {sys.argv[1]}: {ranks} ranks, {rounds} rounds")


if __name__ == "__main__":
    main()
