/* SPDX-License-Identifier: MIT */
/*
 * fuzz_ross - the bytes after the first are the only file of a ROSS run;
 * the first byte chooses:
 *   bits 0-2  its name, so its kind (engine samples of the GVT, real-time
 *             or virtual-time modes, event trace, model data, or a name
 *             that says nothing, given as the trace path: the kind is
 *             then detected from the data);
 *   bit 3     whether --resync is given;
 *   bits 4-7  what reads it, one per input (each open of the run costs
 *             as much as the reading, so running them all made every
 *             input five times slower): the library's reading of every
 *             field, `weft check`, `weft summary`, `weft plot`, or
 *             `weft table` at one of its five levels ((choice >> 4) % 9).
 * The directory is made again for each input, so that no file of an
 * earlier one is left in it.
 */
#include <stdio.h>

#include "fuzz_common.h"

static const char *const names[] = {
	"ross-stats-gvt.bin", "ross-stats-rt.bin", "ross-stats-analysis-lps.bin",
	"ross-stats-evtrace.bin", "ross-stats-model.bin", "data.bin",
};
static const char *const levels[] = { "pe", "kp", "lp", "model", "event" };
static char run_path[4096], file_path[4200], csv_path[4096], svg_path[4096];
static const char *trace_path;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	snprintf(run_path, sizeof run_path, "%s", fz_path("run"));
	snprintf(csv_path, sizeof csv_path, "%s", fz_path("out.csv"));
	snprintf(svg_path, sizeof svg_path, "%s", fz_path("out.svg"));
	return 0;
}

/* Runs `weft <command> --threads 1 [--resync] <args...> RUN` (args: NULL-terminated). */
static void run_command(int resync, const char *command, const char *const *args)
{
	char *argv[16];
	int n = 0;
	argv[n++] = (char *)command;
	argv[n++] = "--threads";
	argv[n++] = "1";
	if (resync)
		argv[n++] = "--resync";
	for (int i = 0; args[i] != NULL && i < 8; i++)
		argv[n++] = (char *)args[i];
	argv[n++] = (char *)trace_path;
	argv[n] = NULL;
	fz_cli_argv(argv);
}

/* Action `action` (0 to 8, as the header says) on the run. */
static void run_action(unsigned action, int resync, const char *rel)
{
	const char *none[] = { NULL };
	const char *plot[] = { "--force", "-o", svg_path, NULL };
	if (action == 0) {
		weft_open_options o;
		weft_open_options_init(&o);
		weft_open_options_set(&o, "ross.resync", resync ? "1" : "0");
		fz_read_trace(rel, &o);
	} else if (action == 1) {
		run_command(resync, "check", none);
	} else if (action == 2) {
		run_command(resync, "summary", none);
	} else if (action == 3) {
		run_command(resync, "plot", plot);
	} else {
		const char *table[] = { "--level", levels[action - 4], "--force", "-o",
					csv_path, NULL };
		run_command(resync, "table", table);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	unsigned choice = size > 0 ? data[0] : 0;
	const char *name = names[(choice & 7) % 6];
	int resync = (choice & 8) != 0;
	char rel[64];
	fz_remove("run");
	fz_mkdir("run");
	snprintf(rel, sizeof rel, "run/%s", name);
	fz_write(rel, size > 0 ? data + 1 : data, size > 0 ? size - 1 : 0);
	snprintf(file_path, sizeof file_path, "%s/%s", run_path, name);
	int detect = (choice & 7) % 6 == 5;
	trace_path = detect ? file_path : run_path;
	run_action((choice >> 4) % 9, resync, detect ? rel : "run");
	return 0;
}
