/* SPDX-License-Identifier: MIT */
/*
 * fuzz_pallas_values - the bytes after the first are one value file of
 * the only thread of a Pallas 0.20 trace (write_pattern): bit 0 of the
 * first byte chooses event_durations.dat or sequence_durations.dat (the
 * timestamps and durations the grammar's vectors point into), the rest of
 * it the reader (fz_read_pallas: read with every field, checked,
 * described, dumped as a grammar or profiled, as the commands do).
 */
#include <stdio.h>

#include "fuzz_common.h"

#define THREAD "trace/archive_0/thread_0/"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fz_copy_seed("pallas/write_pattern/trace", "trace");
	fz_copy_seed("pallas/write_pattern/trace", "trace.orig");
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const files[] = { "event_durations.dat", "sequence_durations.dat" };
	unsigned choice = size > 0 ? data[0] : 0;
	const char *name = files[choice & 1];
	char rel[128], orig[128];
	snprintf(rel, sizeof rel, THREAD "%s", name);
	snprintf(orig, sizeof orig, "trace.orig/archive_0/thread_0/%s", name);
	fz_write(rel, size > 0 ? data + 1 : data, size > 0 ? size - 1 : 0);
	fz_read_pallas("trace", (int)((choice >> 1) % FZ_PALLAS_ACTIONS));
	fz_restore(orig, rel);
	return 0;
}
