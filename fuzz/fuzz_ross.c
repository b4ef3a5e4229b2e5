/*
 * fuzz_ross - the bytes after the first are the only file of a ROSS run;
 * the first byte chooses its name, so its kind (engine samples of the
 * GVT, real-time or virtual-time modes, event trace, model data, or a
 * name that says nothing, given as the trace path: the kind is then
 * detected from the data), whether --resync is given, and the level of
 * `weft table`. The run is read with every field, checked, summarised,
 * tabulated and plotted. The directory is made again for each input, so
 * that no file of an earlier one is left in it.
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
	weft_open_options o;
	weft_open_options_init(&o);
	o.ross_resync = resync;
	fz_read_trace(detect ? rel : "run", &o);
	const char *none[] = { NULL };
	const char *table[] = { "--level", levels[(choice >> 4) % 5], "--force", "-o",
				csv_path, NULL };
	const char *plot[] = { "--force", "-o", svg_path, NULL };
	run_command(resync, "check", none);
	run_command(resync, "summary", none);
	run_command(resync, "table", table);
	run_command(resync, "plot", plot);
	return 0;
}
