/* SPDX-License-Identifier: MIT */
/*
 * fuzz/fuzz_common.h - what the fuzz targets share (docs/fuzzing.md).
 *
 * Each target puts the fuzzer's bytes in the place of one file of a valid
 * trace copied from tests/data into a private work directory (on /dev/shm
 * when it exists: no disk), then reads that trace the way the `weft`
 * command does: through the public API and through the command's own
 * functions (cli_cmd_check, cli_cmd_convert, ...). Nothing the trace says
 * may crash, hang, leak or read out of bounds: the sanitizers of the fuzz
 * build (and of the replay tests) report it.
 */
#ifndef WEFT_FUZZ_COMMON_H
#define WEFT_FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include "weft/weft.h"

/* The entry points libFuzzer calls (also called by fuzz/replay.c). */
int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/*
 * The private work directory of this process (created on first use,
 * removed at exit) and a path in it; fz_path's result is valid for the
 * next three calls (it is one of four buffers used in turn).
 */
const char *fz_workdir(void);
const char *fz_path(const char *rel);
/* Copies tests/data/<src> (a file or a directory) to <workdir>/<dst>. */
void fz_copy_seed(const char *src, const char *dst);
/* Copies <workdir>/<from> over <workdir>/<to> (a file put back as it was). */
void fz_restore(const char *from, const char *to);
/* Replaces <workdir>/<rel> with `size` bytes of `data`. */
void fz_write(const char *rel, const uint8_t *data, size_t size);
/* Cuts <workdir>/<rel> to its first `size` bytes (a smaller seed trace). */
void fz_truncate(const char *rel, uint64_t size);
/* Removes <workdir>/<rel> and everything below it (outputs of a run). */
void fz_remove(const char *rel);

/*
 * Opens the trace at <workdir>/<rel> with `options` (NULL: defaults) and
 * reads it as a reader of the API does: every node, the events merged by
 * time with their typed fields (array elements too) and their timeline
 * role, and the first stream alone (when there are several). 0, or the
 * open's error.
 */
int fz_read_trace(const char *rel, const weft_open_options *options);

/*
 * A Pallas trace at <workdir>/<rel>, read by one of the readers, chosen
 * by `action` modulo FZ_PALLAS_ACTIONS: the API reader with every field,
 * `check`, `info`, `dump --structure`, and `profile` from the stored
 * durations, from the headers and by a replay of the events (one per
 * input: each opens the whole trace, so running them all made every
 * input seven times slower). FZ_PALLAS_READ_CHECK: the API reader and
 * `check`, for the targets of files that hold no grammar.
 */
#define FZ_PALLAS_ACTIONS 7
#define FZ_PALLAS_READ_CHECK (-1)
void fz_read_pallas(const char *rel, int action);

/*
 * The two entry points of a target whose bytes are the file `file` of the
 * Pallas trace tests/data/<seed>, read by fz_read_pallas: with
 * `grammar`, the first byte chooses the reader and the rest is the file;
 * without, the bytes are the file, read and checked.
 */
#define FZ_PALLAS_FILE_TARGET(seed, file, grammar) \
	int LLVMFuzzerInitialize(int *argc, char ***argv) \
	{ \
		(void)argc; \
		(void)argv; \
		fz_copy_seed(seed, "trace"); \
		return 0; \
	} \
	int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) \
	{ \
		size_t skip = (grammar) && size > 0 ? 1 : 0; \
		fz_write("trace/" file, data + skip, size - skip); \
		fz_read_pallas("trace", (grammar) ? (int)fz_choice(data, size, FZ_PALLAS_ACTIONS) \
						  : FZ_PALLAS_READ_CHECK); \
		return 0; \
	}

/*
 * The conversion targets: the first byte chooses the kind of input the
 * rest of the bytes are (an ovni stream.obs, a Heph file, the gvt file of
 * a ROSS run, the thread.pallas of a Pallas trace) and options of the
 * conversion (ROSS: --time virtual; Heph into chrome: --heph-compat);
 * then `weft convert --to <to>` writes it into the work directory (the
 * output is removed after). fz_convert_setup() copies the seed traces.
 */
void fz_convert_setup(void);
void fz_convert(const uint8_t *data, size_t size, const char *to);
/* The two entry points of the conversion target into `to`. */
#define FZ_CONVERT_TARGET(to) \
	int LLVMFuzzerInitialize(int *argc, char ***argv) \
	{ \
		(void)argc; \
		(void)argv; \
		fz_convert_setup(); \
		return 0; \
	} \
	int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) \
	{ \
		fz_convert(data, size, to); \
		return 0; \
	}

/*
 * Runs one subcommand of `weft` (cli_cmd_<name>) with the NULL-terminated
 * arguments after the command name; its standard output goes nowhere.
 * Returns its exit code.
 */
int fz_cli(const char *command, ...);

/* The same with the arguments in an array (argv[0]: the command), NULL-terminated. */
int fz_cli_argv(char **argv);
/* Creates the directory <workdir>/<rel> (it may exist). */
void fz_mkdir(const char *rel);

/* The first byte of an input as a choice among `n` (0 when empty). */
unsigned fz_choice(const uint8_t *data, size_t size, unsigned n);

#endif /* WEFT_FUZZ_COMMON_H */
