/* SPDX-License-Identifier: MIT */
/*
 * fuzz_pallas_main - the bytes are the main.pallas of a Pallas 0.20 trace
 * (wb_generic_f2_n20_t4_logical, written by Pallas 0.20's write_benchmark
 * -n 20: four threads of one archive, 40 events each, so that an input
 * costs little more than its own bytes): the definitions and the
 * locations of the whole trace. Read with every field and checked, as
 * the commands do (the grammar of the threads is fuzz_pallas_thread's).
 */
#include "fuzz_common.h"

FZ_PALLAS_FILE_TARGET("pallas/wb_generic_f2_n20_t4_logical/trace", "main.pallas", 0)
