/* SPDX-License-Identifier: MIT */
/*
 * fuzz_pallas_archive - the bytes are the archive.pallas of a Pallas 0.20
 * trace (wb_generic_f2_n20_t4_logical, 40 events per thread: the archive
 * of its four threads): the archive's definitions and locations. Read
 * with every field and checked, as the commands do (the grammar of the
 * threads is fuzz_pallas_thread's).
 */
#include "fuzz_common.h"

FZ_PALLAS_FILE_TARGET("pallas/wb_generic_f2_n20_t4_logical/trace", "archive_0/archive.pallas", 0)
