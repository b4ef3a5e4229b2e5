#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Message sizes of the MPI point-to-point calls of a Pallas trace.

Pallas records MPI_Send and MPI_Isend events with the peer rank, the
communicator, the tag and the length in bytes (the fields weft dump
prints: peer, comm, tag, length). Each thread of a Pallas trace is a
stream; its rank is the number of its archive (the process).

usage: mpi_message_sizes.py PALLAS_TRACE
"""

import sys

import weft


def message_sizes(path):
    """The sends as a DataFrame: sender stream, peer, tag, length (bytes)."""
    with weft.open(path) as trace:
        df = trace.to_pandas(codes="MPI_*[Ss]end", fields=["peer", "tag", "length"],
                             order="stream")
    return df[["stream", "code", "peer", "tag", "length", "time"]]


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__.strip().splitlines()[-1])
    sends = message_sizes(sys.argv[1])
    # Bytes and messages from each sender to each peer.
    pairs = sends.groupby(["stream", "peer"], observed=True)["length"].agg(["count", "sum"])
    print(pairs.rename(columns={"count": "messages", "sum": "bytes"}).to_string())
    print()
    # The distribution of the sizes.
    print(sends["length"].describe().to_string())


if __name__ == "__main__":
    main()
