/* SPDX-License-Identifier: MIT */
/*
 * fuzz_ovni_json - the bytes are the stream.json (the metadata) of a
 * layout-3 ovni trace (bench-valid-small: four threads of one process,
 * whose metadata is merged per process and per loom; the streams cut to
 * their first kilobyte): described by `weft info` and checked by
 * `weft check`.
 */
#include <stdio.h>

#include "fuzz_common.h"

#define PROC "ovni/loom.vm.bench/proc.2213"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fz_copy_seed("ovni/v3/bench-valid-small/ovni", "ovni");
	static const char *const threads[] = { "2214", "2215", "2216", "2217" };
	for (int i = 0; i < 4; i++) {
		char rel[128];
		snprintf(rel, sizeof rel, PROC "/thread.%s/stream.obs", threads[i]);
		fz_truncate(rel, 1024);
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fz_write(PROC "/thread.2215/stream.json", data, size);
	fz_cli("info", "--format", "ovni", fz_path("ovni"), NULL);
	fz_cli("check", "--format", "ovni", fz_path("ovni"), NULL);
	return 0;
}
