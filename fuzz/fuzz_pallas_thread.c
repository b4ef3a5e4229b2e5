/* SPDX-License-Identifier: MIT */
/*
 * fuzz_pallas_thread - the bytes after the first are the thread.pallas of
 * the only thread of a Pallas 0.20 trace (write_pattern): its events,
 * sequences, loops and the sizes of its timestamp vectors. The first byte
 * chooses the reader (fz_read_pallas: read with every field, checked,
 * described, dumped as a grammar or profiled in one of its three ways, as
 * the commands do).
 */
#include "fuzz_common.h"

FZ_PALLAS_FILE_TARGET("pallas/write_pattern/trace", "archive_0/thread_0/thread.pallas", 1)
