/* SPDX-License-Identifier: MIT */
/*
 * fuzz_heph - the bytes are a Heph trace file: read in time order (the
 * time-order index, the call trees) with every field, in stored order
 * with the open scan split between two threads (as on large files),
 * checked, dumped as JSON lines, and profiled per stream (the span
 * iterator rebuilds the call trees by containment).
 */
#include "fuzz_common.h"

#define TRACE "trace.bin.log"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fz_workdir();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fz_write(TRACE, data, size);
	weft_open_options o;
	weft_open_options_init(&o);
	o.format = WEFT_FORMAT_HEPH;
	o.threads = 1;
	fz_read_trace(TRACE, &o);
	o.stored_order = 1;
	o.threads = 2;
	fz_read_trace(TRACE, &o);
	fz_cli("check", "--format", "heph", "--threads", "1", fz_path(TRACE), NULL);
	fz_cli("dump", "--format", "heph", "--json", "--threads", "1", fz_path(TRACE), NULL);
	fz_cli("profile", "--format", "heph", "--by", "stream", "--threads", "1",
	       fz_path(TRACE), NULL);
	return 0;
}
