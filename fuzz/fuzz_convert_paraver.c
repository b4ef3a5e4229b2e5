/* SPDX-License-Identifier: MIT */
/*
 * fuzz_convert_paraver - `weft convert -t paraver` of a trace of each format
 * that weft reads, one file of which is the fuzzer's bytes (the first
 * byte chooses which: see fz_convert in fuzz_common.h).
 */
#include "fuzz_common.h"

FZ_CONVERT_TARGET("paraver")
