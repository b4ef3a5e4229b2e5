/* SPDX-License-Identifier: MIT */
/*
 * fuzz_ovni_stream - the bytes are the stream.obs of a layout-3 ovni trace
 * (ovni-sort-unsorted, its stream.json kept): read in time order (the
 * unordered regions sorted on the fly) with every field, checked in stored
 * order (`weft check --sorted`), sorted in place (`weft sort`), then
 * profiled with its instants (the span iterator on its channels). The
 * trace path is the stream's directory, the format named: what the bytes
 * decide is the same, for a fraction of the directory walking.
 */
#include <string.h>

#include "fuzz_common.h"

#define DIR "ovni/loom.vm.0/proc.2161/thread.2161"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fz_copy_seed("ovni/v3/ovni-sort-unsorted/ovni", "ovni");
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fz_write(DIR "/stream.obs", data, size);
	weft_open_options o;
	weft_open_options_init(&o);
	o.format = WEFT_FORMAT_OVNI;
	fz_read_trace(DIR, &o);
	fz_cli("check", "--format", "ovni", "--sorted", fz_path(DIR), NULL);
	fz_cli("sort", fz_path(DIR), NULL);
	fz_cli("profile", "--format", "ovni", "--instants", fz_path(DIR), NULL);
	return 0;
}
