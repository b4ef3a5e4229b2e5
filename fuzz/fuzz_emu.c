/* SPDX-License-Identifier: MIT */
/*
 * fuzz_emu - the ovni emulation (docs/emulation.md): the bytes are the
 * stream.obs of the one thread of an emulator test trace
 * (tests/data/ovni-emu/emu-mpi-func-mismatch), emulated with every model
 * enabled (any model's events reach their handler) by `weft convert
 * --emulate --all-models --allow-loss` into the Paraver traces, then into
 * the Perfetto trace (the same records drawn as slices). Whatever
 * the events say, the emulation refuses them with a rule or writes the
 * traces; it never crashes, hangs or grows without bound.
 */
#include "fuzz_common.h"

#define STREAM "trace/loom.vm.0/proc.9052/thread.9052/stream.obs"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fz_copy_seed("ovni-emu/emu-mpi-func-mismatch/ovni", "trace");
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *args[] = { "convert", (char *)fz_path("trace"), "--format", "ovni", "-t",
			 "paraver", "--emulate", "--all-models", "--allow-loss", "--force",
			 "-o", (char *)fz_path("out"), NULL };
	fz_write(STREAM, data, size);
	fz_cli_argv(args);
	fz_remove("out");
	/* fz_path's buffers are used in turn: the paths made after the last call */
	char *pf_args[] = { "convert", (char *)fz_path("trace"), "--format", "ovni", "-t",
			    "perfetto", "--emulate", "--all-models", "--allow-loss", "--force",
			    "-o", (char *)fz_path("out.pftrace"), NULL };
	fz_cli_argv(pf_args);
	fz_remove("out.pftrace");
	return 0;
}
