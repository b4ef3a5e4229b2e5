/* SPDX-License-Identifier: MIT */
/*
 * fuzz/fuzz_common.c - the work directory, seed traces and the readers
 * that every fuzz target drives (see fuzz_common.h).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "fuzz_common.h"

#ifndef WEFT_FUZZ_DATA
#error "WEFT_FUZZ_DATA (the tests/data directory) must be defined"
#endif

static char workdir[4096];

/* Stops the run on a failure of the harness itself (not of weft). */
static void die(const char *what, const char *path)
{
	fprintf(stderr, "fuzz harness: %s %s: %s\n", what, path, strerror(errno));
	abort();
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static void remove_workdir(void)
{
	if (workdir[0] != '\0')
		nftw(workdir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/*
 * Called by the sanitizers before a report ends the process, when they are
 * linked: for the replay programs (libFuzzer sets its own callback after
 * the targets' initialisation; what a crash leaves, the next start removes).
 */
extern void __sanitizer_set_death_callback(void (*callback)(void)) __attribute__((weak));

/*
 * Removes the work directories "weft-fuzz.<pid>.*" in `base` of processes
 * that no longer run (a crash, a timeout or a kill left them behind).
 */
static void remove_stale_workdirs(const char *base)
{
	DIR *d = opendir(base);
	struct dirent *e;
	while (d != NULL && (e = readdir(d)) != NULL) {
		long pid;
		char path[4096];
		if (sscanf(e->d_name, "weft-fuzz.%ld.", &pid) != 1 || pid <= 0 ||
		    kill((pid_t)pid, 0) == 0 || errno != ESRCH)
			continue;
		snprintf(path, sizeof path, "%s/%s", base, e->d_name);
		nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
	}
	if (d != NULL)
		closedir(d);
}

const char *fz_workdir(void)
{
	if (workdir[0] != '\0')
		return workdir;
	const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : getenv("TMPDIR");
	base = base ? base : "/tmp";
	remove_stale_workdirs(base);
	snprintf(workdir, sizeof workdir, "%s/weft-fuzz.%ld.XXXXXX", base, (long)getpid());
	if (mkdtemp(workdir) == NULL)
		die("cannot create", workdir);
	atexit(remove_workdir);
	if (__sanitizer_set_death_callback != NULL)
		__sanitizer_set_death_callback(remove_workdir);
	/* The commands' standard output (dumps, tables) is not looked at. */
	if (freopen("/dev/null", "w", stdout) == NULL)
		die("cannot redirect", "stdout");
	return workdir;
}

const char *fz_path(const char *rel)
{
	static char paths[4][4096];
	static int next;
	char *p = paths[next];
	next = (next + 1) % 4;
	snprintf(p, sizeof paths[0], "%s/%s", fz_workdir(), rel);
	return p;
}

/* Copies the file `src` to `dst` (absolute paths). */
static void copy_file(const char *src, const char *dst)
{
	FILE *in = fopen(src, "rb"), *out = fopen(dst, "wb");
	if (in == NULL || out == NULL)
		die("cannot copy", src);
	char buf[65536];
	size_t n;
	while ((n = fread(buf, 1, sizeof buf, in)) > 0)
		if (fwrite(buf, 1, n, out) != n)
			die("cannot write", dst);
	fclose(in);
	if (fclose(out) != 0)
		die("cannot write", dst);
}

/* Copies the tree `src` to `dst` (absolute paths). */
static void copy_tree(const char *src, const char *dst)
{
	struct stat st;
	if (stat(src, &st) != 0)
		die("no seed", src);
	if (!S_ISDIR(st.st_mode)) {
		copy_file(src, dst);
		return;
	}
	if (mkdir(dst, 0755) != 0 && errno != EEXIST)
		die("cannot create", dst);
	DIR *d = opendir(src);
	if (d == NULL)
		die("cannot list", src);
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		char *s = NULL, *t = NULL;
		if (asprintf(&s, "%s/%s", src, e->d_name) < 0 ||
		    asprintf(&t, "%s/%s", dst, e->d_name) < 0)
			die("out of memory for", src);
		copy_tree(s, t);
		free(s);
		free(t);
	}
	closedir(d);
}

void fz_copy_seed(const char *src, const char *dst)
{
	char from[4096];
	snprintf(from, sizeof from, "%s/%s", WEFT_FUZZ_DATA, src);
	copy_tree(from, fz_path(dst));
}

void fz_restore(const char *from, const char *to)
{
	char src[4096];
	snprintf(src, sizeof src, "%s", fz_path(from));
	copy_file(src, fz_path(to));
}

void fz_write(const char *rel, const uint8_t *data, size_t size)
{
	const char *path = fz_path(rel);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		die("cannot create", path);
	size_t done = 0;
	while (done < size) {
		ssize_t n = write(fd, data + done, size - done);
		if (n <= 0)
			die("cannot write", path);
		done += (size_t)n;
	}
	close(fd);
}

void fz_truncate(const char *rel, uint64_t size)
{
	if (truncate(fz_path(rel), (off_t)size) != 0)
		die("cannot truncate", fz_path(rel));
}

void fz_remove(const char *rel)
{
	nftw(fz_path(rel), remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* Decodes every field of an event, and every element of its arrays. */
static void read_fields(const weft_trace *t, const weft_event *ev)
{
	weft_field fields[64];
	int n = weft_event_fields(t, ev, fields, 64);
	for (int i = 0; i < n && i < 64; i++) {
		weft_field el;
		for (uint32_t k = 0; fields[i].is_array && k < fields[i].count && k < 4096; k++)
			weft_field_element(&fields[i], k, &el);
	}
	weft_event_class cls;
	weft_event_classify(t, ev, &cls);
}

/* Every event of one cursor; a cursor that fails ends there. */
static void read_cursor(const weft_trace *t, weft_cursor *c)
{
	const weft_event *ev;
	while (weft_cursor_next(c, &ev) == 1)
		read_fields(t, ev);
	weft_cursor_free(c);
}

int fz_read_trace(const char *rel, const weft_open_options *options)
{
	weft_trace *t;
	int rc = weft_trace_open(fz_path(rel), options, &t);
	if (rc < 0)
		return rc;
	weft_trace_metadata_json(t);
	for (size_t i = 0; i < weft_trace_node_count(t); i++)
		weft_trace_node(t, i);
	weft_filter filter;
	memset(&filter, 0, sizeof filter);
	weft_cursor *c;
	if (weft_cursor_create(t, &filter, &c) == 0)
		read_cursor(t, c);
	/* One stream alone (the path of per-stream readers): the first. */
	if (weft_trace_stream_count(t) > 1 && weft_cursor_create_stream(t, 0, &c) == 0)
		read_cursor(t, c);
	weft_trace_free(t);
	return 0;
}

void fz_read_pallas(const char *rel, int action)
{
	const char *path = fz_path(rel);
	if (action == FZ_PALLAS_READ_CHECK || action == 0) {
		weft_open_options o;
		weft_open_options_init(&o);
		o.format = WEFT_FORMAT_PALLAS;
		fz_read_trace(rel, &o);
	}
	if (action == FZ_PALLAS_READ_CHECK || action == 1)
		fz_cli("check", "--format", "pallas", path, NULL);
	else if (action == 2)
		fz_cli("info", "--format", "pallas", path, NULL);
	else if (action == 3)
		fz_cli("dump", "--format", "pallas", "--structure", path, NULL);
	else if (action == 4)
		fz_cli("profile", "--format", "pallas", path, NULL);
	else if (action == 5)
		fz_cli("profile", "--format", "pallas", "--headers-only", path, NULL);
	else if (action == 6)
		fz_cli("profile", "--format", "pallas", "--replay", path, NULL);
}

void fz_convert_setup(void)
{
	fz_copy_seed("ovni/v3/ovni-sort-unsorted/ovni", "ovni");
	fz_copy_seed("pallas/write_pattern/trace", "pallas");
	fz_mkdir("heph");
	fz_mkdir("ross");
}

void fz_convert(const uint8_t *data, size_t size, const char *to)
{
	static const struct {
		const char *format, *trace, *file;
	} inputs[] = {
		{ "ovni", "ovni/loom.vm.0/proc.2161/thread.2161",
		  "ovni/loom.vm.0/proc.2161/thread.2161/stream.obs" },
		{ "heph", "heph/trace.bin.log", "heph/trace.bin.log" },
		{ "ross", "ross", "ross/ross-stats-gvt.bin" },
		{ "pallas", "pallas", "pallas/archive_0/thread_0/thread.pallas" },
	};
	unsigned choice = size > 0 ? data[0] : 0;
	unsigned which = choice % 4;
	fz_write(inputs[which].file, size > 0 ? data + 1 : data, size > 0 ? size - 1 : 0);
	char *argv[16];
	int n = 0;
	argv[n++] = "convert";
	argv[n++] = (char *)fz_path(inputs[which].trace);
	argv[n++] = "--format";
	argv[n++] = (char *)inputs[which].format;
	argv[n++] = "-t";
	argv[n++] = (char *)to;
	argv[n++] = "--threads";
	argv[n++] = "1";
	argv[n++] = "--force";
	argv[n++] = "-o";
	argv[n++] = (char *)fz_path(strcmp(to, "chrome") == 0 ? "out.json" : "out");
	if (which == 2 && (choice & 4))
		argv[n++] = "--time=virtual";
	if (which == 1 && (choice & 4) && strcmp(to, "chrome") == 0)
		argv[n++] = "--heph-compat";
	argv[n] = NULL;
	fz_cli_argv(argv);
	fz_remove("out");
	fz_remove("out.json");
	fz_remove("out.prv");
	fz_remove("out.pcf");
	fz_remove("out.row");
}

/* The subcommands by name (as cli/main.c dispatches them). */
typedef int (*cli_command_fn)(int argc, char **argv);

static cli_command_fn find_command(const char *name)
{
	static const struct { const char *name; int (*run)(int, char **); } table[] = {
		{ "info", cli_cmd_info }, { "dump", cli_cmd_dump }, { "top", cli_cmd_top },
		{ "check", cli_cmd_check }, { "sort", cli_cmd_sort },
		{ "convert", cli_cmd_convert }, { "table", cli_cmd_table },
		{ "summary", cli_cmd_summary }, { "plot", cli_cmd_plot },
		{ "profile", cli_cmd_profile },
	};
	for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
		if (strcmp(table[i].name, name) == 0)
			return table[i].run;
	fprintf(stderr, "fuzz harness: no command %s\n", name);
	abort();
}

int fz_cli_argv(char **argv)
{
	int argc = 0;
	while (argv[argc] != NULL)
		argc++;
	int rc = find_command(argv[0])(argc, argv);
	fflush(stdout);
	return rc;
}

int fz_cli(const char *command, ...)
{
	char *argv[32];
	int argc = 0;
	argv[argc++] = (char *)command;
	va_list ap;
	va_start(ap, command);
	const char *a;
	while ((a = va_arg(ap, const char *)) != NULL && argc < 31)
		argv[argc++] = (char *)a;
	va_end(ap);
	argv[argc] = NULL;
	return fz_cli_argv(argv);
}

void fz_mkdir(const char *rel)
{
	if (mkdir(fz_path(rel), 0755) != 0 && errno != EEXIST)
		die("cannot create", fz_path(rel));
}

unsigned fz_choice(const uint8_t *data, size_t size, unsigned n)
{
	return size > 0 ? data[0] % n : 0;
}
