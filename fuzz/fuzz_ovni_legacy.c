/* SPDX-License-Identifier: MIT */
/*
 * fuzz_ovni_legacy - layouts 1 and 2 of ovni (libovni 1.0 to 1.10): the
 * first byte chooses the file of the reference traces of tests/data that
 * the rest of the bytes replace (a process's metadata.json, a v2
 * thread.T.json, a thread.T.obs stream, or the clock-offsets.txt table of
 * ovnisync); the trace is then read with every field and checked.
 */
#include <stdio.h>

#include "fuzz_common.h"

static const struct {
	const char *trace, *file;
} files[] = {
	{ "v1", "loom.node1.trace/proc.1000/metadata.json" },
	{ "v1", "loom.node1.trace/proc.1000/thread.1001.obs" },
	{ "v2", "loom.node1.trace/proc.1000/metadata.json" },
	{ "v2", "loom.node1.trace/proc.1000/thread.1001.json" },
	{ "v2", "loom.node1.trace/proc.2000/thread.2001.obs" },
	{ "v2", "clock-offsets.txt" },
};
#define FILE_COUNT (sizeof files / sizeof files[0])

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fz_copy_seed("ovni/v1/1.4.1/ovni", "v1");
	fz_copy_seed("ovni/v2/1.10.0/ovni", "v2");
	fz_copy_seed("ovni/v1/1.4.1/ovni", "v1.orig");
	fz_copy_seed("ovni/v2/1.10.0/ovni", "v2.orig");
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	unsigned which = fz_choice(data, size, FILE_COUNT);
	char rel[256], orig[256];
	snprintf(rel, sizeof rel, "%s/%s", files[which].trace, files[which].file);
	fz_write(rel, size > 0 ? data + 1 : data, size > 0 ? size - 1 : 0);
	fz_read_trace(files[which].trace, NULL);
	fz_cli("check", fz_path(files[which].trace), NULL);
	/* Put the file back for the next input (the table was not there). */
	snprintf(orig, sizeof orig, "%s.orig/%s", files[which].trace, files[which].file);
	if (which == FILE_COUNT - 1)
		fz_remove(rel);
	else
		fz_restore(orig, rel);
	return 0;
}
