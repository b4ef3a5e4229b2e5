/* SPDX-License-Identifier: MIT */
/*
 * cli/convert_view.c - `weft convert --to perfetto|chrome|paraver`: the trace
 * through the view layer (outputs/view.h) into a viewer writer.
 *
 * What is common to the viewer formats lives here: the output files
 * (written to temporary names, committed together at the end or all
 * removed), the cursor (stream and event globs; the time window is the
 * view's, so that spans crossing its edges are cut, not lost), and the
 * report of what the view met (unmatched leaves, unclosed spans).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/convert.h"
#include "cli/outfile.h"
#include "outputs/chrome.h"
#include "outputs/paraver.h"
#include "outputs/perfetto.h"
#include "outputs/view.h"

#define MAX_FILES 3

/* A viewer writer behind one interface. */
typedef struct view_output {
	const char *name;
	int file_count;
	const char *suffixes[MAX_FILES]; /* added to the base name; NULL: OUT as is */
	/* synced: the files are regular files synced at the end. */
	int (*create)(const weft_trace *trace, const int *fds, int synced, void **writer);
	const weft__view_sink *(*sink)(void *writer);
	int (*finish)(void *writer);
	/* Optional: a warning about the output after finish, or NULL. */
	const char *(*warning)(void *writer);
	void (*free)(void *writer);
} view_output;

/* ---- The writers ----------------------------------------------------------- */

static int chrome_create(const weft_trace *trace, const int *fds, int synced,
			 void **writer)
{
	weft__chrome_options o = { .background = 1, .write_behind = synced };
	int rc = weft__chrome_writer_create(trace, fds[0], &o, (weft__chrome_writer **)writer);

	if (rc == 0)
		weft__chrome_writer_begin(*writer);
	return rc;
}

static const weft__view_sink *chrome_sink(void *writer)
{
	return weft__chrome_writer_sink(writer);
}

static int chrome_finish(void *writer)
{
	return weft__chrome_writer_finish(writer);
}

static const char *chrome_warning(void *writer)
{
	return weft__chrome_writer_warning(writer);
}

static void chrome_free(void *writer)
{
	weft__chrome_writer_free(writer);
}

static int perfetto_create(const weft_trace *trace, const int *fds, int synced,
			   void **writer)
{
	weft__perfetto_options o = { .background = 1, .write_behind = synced };

	(void)trace;
	return weft__perfetto_writer_create_with(fds[0], &o, (weft__perfetto_writer **)writer);
}

static const weft__view_sink *perfetto_sink(void *writer)
{
	return weft__perfetto_writer_sink(writer);
}

static int perfetto_finish(void *writer)
{
	return weft__perfetto_writer_finish(writer);
}

static void perfetto_free(void *writer)
{
	weft__perfetto_writer_free(writer);
}

static int paraver_create(const weft_trace *trace, const int *fds, int synced,
			  void **writer)
{
	(void)trace;
	(void)synced;
	return weft__paraver_writer_create(fds[0], fds[1], fds[2], NULL,
					   (weft__paraver_writer **)writer);
}

static const weft__view_sink *paraver_sink(void *writer)
{
	return weft__paraver_writer_sink(writer);
}

static int paraver_finish(void *writer)
{
	return weft__paraver_writer_finish(writer);
}

static const char *paraver_warning(void *writer)
{
	return weft__paraver_writer_warning(writer);
}

static void paraver_free(void *writer)
{
	weft__paraver_writer_free(writer);
}

static const view_output outputs[] = {
	{ "chrome", 1, { NULL }, chrome_create, chrome_sink, chrome_finish, chrome_warning,
	  chrome_free },
	{ "perfetto", 1, { NULL }, perfetto_create, perfetto_sink, perfetto_finish,
	  NULL, perfetto_free },
	{ "paraver", 3, { ".prv", ".pcf", ".row" }, paraver_create, paraver_sink,
	  paraver_finish, paraver_warning, paraver_free },
};

/* ---- Output files ---------------------------------------------------------- */

/* The files of one conversion. */
typedef struct output_files {
	cli_outfile files[MAX_FILES];
	char *paths[MAX_FILES];
	int fds[MAX_FILES];
	int open_count;
} output_files;

/* OUT for formats of several files: the base name without the suffix. */
static char *base_name(const view_output *o, const char *out)
{
	size_t n = strlen(out), m = strlen(o->suffixes[0]);
	if (n > m && strcmp(out + n - m, o->suffixes[0]) == 0)
		n -= m;
	return strndup(out, n);
}

static void files_abort(output_files *f)
{
	for (int i = 0; i < f->open_count; i++)
		cli_outfile_abort(&f->files[i]);
	for (int i = 0; i < MAX_FILES; i++)
		free(f->paths[i]);
}

/* Opens every file of the output (standard output only for one file). */
static int files_open(output_files *f, const view_output *o, const cli_convert_job *job)
{
	memset(f, 0, sizeof *f);
	if (o->file_count > 1 && strcmp(job->output, "-") == 0)
		return cli_usage_error("convert", "--to %s writes %d files: give a base "
				       "name, not '-'", o->name, o->file_count);
	char *base = o->file_count > 1 ? base_name(o, job->output) : strdup(job->output);
	if (base == NULL)
		return cli_usage_error("convert", "out of memory");
	for (int i = 0; i < o->file_count; i++) {
		const char *suffix = o->suffixes[i] ? o->suffixes[i] : "";
		f->paths[i] = malloc(strlen(base) + strlen(suffix) + 1);
		if (f->paths[i] != NULL)
			sprintf(f->paths[i], "%s%s", base, suffix);
		int rc = f->paths[i] == NULL ? cli_usage_error("convert", "out of memory")
			 : cli_outfile_open(&f->files[i], "convert", f->paths[i], job->force);
		if (rc != CLI_EXIT_OK) {
			free(base);
			files_abort(f);
			return rc;
		}
		f->fds[i] = f->files[i].fd;
		f->open_count++;
	}
	free(base);
	return CLI_EXIT_OK;
}

/* Puts every file in place; on a failure the rest is removed. */
static int files_commit(output_files *f)
{
	int exit_code = CLI_EXIT_OK;
	for (int i = 0; i < f->open_count; i++) {
		if (exit_code == CLI_EXIT_OK)
			exit_code = cli_outfile_commit(&f->files[i]);
		else
			cli_outfile_abort(&f->files[i]);
	}
	for (int i = 0; i < MAX_FILES; i++)
		free(f->paths[i]);
	return exit_code;
}

/* ---- Conversion ------------------------------------------------------------- */

/* "weft convert: warning: <n> <what>" when n is not 0. */
static void warn_count(uint64_t n, const char *what)
{
	if (n > 0)
		fprintf(stderr, "weft convert: warning: %llu %s\n", (unsigned long long)n, what);
}

/* The events that have no place on the view's time axis, on stderr. */
static void report_time_axis(const weft__view_stats *st)
{
	warn_count(st->no_real_time, "event(s) without a real time (ROSS analysis model "
		   "samples: ROSS records none) left out of the real-time view (--time "
		   "virtual shows them)");
	warn_count(st->virtual_end, "sample(s) taken at the end of the run (virtual time "
		   "DBL_MAX) left out: they have no place on the virtual time axis");
	warn_count(st->no_virtual_time, "event(s) without a virtual time that fits the "
		   "axis (none, negative, NaN or past 2^64 ns) left out");
}

/*
 * Spans past the view's nesting limit: how many, the timeline that lost
 * the most (its stream, channel, depth) and how many others lost some.
 * An error (returns 1) unless the user accepted the loss.
 */
static int report_too_deep(const cli_convert_job *job, weft__view *view, uint64_t lost)
{
	size_t n = weft__view_too_deep(view, NULL, 0);
	weft__view_too_deep_timeline *t = calloc(n ? n : 1, sizeof *t);
	size_t worst = 0;

	if (t == NULL || weft__view_too_deep(view, t, n) != n || n == 0) {
		fprintf(stderr, "weft convert: %s: %llu span(s) nested deeper than %d levels "
			"were dropped\n", job->allow_loss ? "warning" : "error",
			(unsigned long long)lost, WEFT__VIEW_MAX_DEPTH);
		free(t);
		return !job->allow_loss;
	}
	for (size_t i = 1; i < n; i++)
		if (t[i].lost > t[worst].lost)
			worst = i;
	fprintf(stderr, "weft convert: %s: %llu span(s) nested deeper than %d levels were "
		"dropped: %llu on %s (%s%s%s, %llu deep)",
		job->allow_loss ? "warning" : "error", (unsigned long long)lost,
		WEFT__VIEW_MAX_DEPTH, (unsigned long long)t[worst].lost,
		weft_trace_stream(job->trace, t[worst].stream)->path,
		t[worst].channel ? "timeline '" : "its own timeline",
		t[worst].channel ? t[worst].channel : "", t[worst].channel ? "'" : "",
		(unsigned long long)t[worst].deepest);
	if (n > 1)
		fprintf(stderr, ", %llu on %zu other timeline(s)",
			(unsigned long long)(lost - t[worst].lost), n - 1);
	if (!job->allow_loss)
		fprintf(stderr, "; viewers keep %d levels (Perfetto drops deeper slices); "
			"--allow-loss accepts the loss", WEFT__VIEW_MAX_DEPTH);
	fputc('\n', stderr);
	free(t);
	return !job->allow_loss;
}

/* What the view met, on stderr; 1 when data was lost (undecodable fields). */
static int report_view(const weft__view_stats *st)
{
	if (st->unmatched_leaves > 0)
		fprintf(stderr, "weft convert: warning: %llu leave event(s) closed no open "
			"span (skipped)\n", (unsigned long long)st->unmatched_leaves);
	if (st->unclosed_spans > 0)
		fprintf(stderr, "weft convert: warning: %llu span(s) never closed: closed "
			"at the end of their stream (or by their parent's leave), flagged "
			"\"unclosed\"\n", (unsigned long long)st->unclosed_spans);
	warn_count(st->state_restarts, "state span(s) entered again while on (e.g. ovni "
		   "OHx while running): the state restarts there, the span before is closed "
		   "and flagged \"unclosed\"");
	report_time_axis(st);
	if (st->bad_fields > 0)
		fprintf(stderr, "weft convert: error: %llu event(s) with fields that could "
			"not be decoded (written without them)\n",
			(unsigned long long)st->bad_fields);
	return st->bad_fields > 0;
}

/*
 * Runs the view into the writer. Returns an exit code; *lost is set when
 * reading stopped early or fields were lost.
 */
static int run_view(const view_output *o, const cli_convert_job *job, void *writer,
		    int *lost)
{
	weft_filter filter = job->filter;
	weft_format format = weft_trace_format(job->trace);
	weft__view_options vo = { .from = filter.from, .to = filter.to,
				  .virtual_unit = job->virtual_unit };
	/* Heph is read in file order, virtual times come in any order. */
	vo.time_ordered = format != WEFT_FORMAT_HEPH && job->virtual_unit == 0;
	weft_cursor *cursor = NULL;
	weft__view *view = NULL;
	weft__view_stats st;

	filter.from = 0;
	filter.to = 0;
	int rc = weft_cursor_create(job->trace, &filter, &cursor);
	if (rc == 0)
		rc = weft__view_create(job->trace, &vo, o->sink(writer), &view);
	if (rc < 0) {
		weft_cursor_free(cursor);
		return cli_library_error("convert", "cannot read the events", rc);
	}
	int read_rc = weft__view_run(view, cursor);
	weft__view_stats_get(view, &st);
	int too_deep = st.too_deep > 0 ? report_too_deep(job, view, st.too_deep) : 0;
	weft__view_free(view);
	weft_cursor_free(cursor);
	rc = o->finish(writer);
	if (rc < 0)
		return cli_library_error("convert", "writing the output failed", rc);
	const char *warning = o->warning ? o->warning(writer) : NULL;
	if (warning != NULL)
		fprintf(stderr, "weft convert: warning: %s\n", warning);
	*lost = report_view(&st) | too_deep;
	if (read_rc < 0) {
		cli_library_error("convert", "reading the events stopped early", read_rc);
		*lost = 1;
	}
	return CLI_EXIT_OK;
}

/* The writer's entry, or NULL. */
static const view_output *find_output(const char *format)
{
	for (size_t i = 0; i < sizeof outputs / sizeof outputs[0]; i++)
		if (strcmp(outputs[i].name, format) == 0)
			return &outputs[i];
	return NULL;
}

int cli_convert_view(const cli_convert_job *job, const char *format)
{
	const view_output *o = find_output(format);
	output_files files;
	void *writer = NULL;
	int lost = 0;

	if (o == NULL)
		return cli_usage_error("convert", "unknown viewer format '%s'", format);
	int exit_code = files_open(&files, o, job);
	if (exit_code != CLI_EXIT_OK)
		return exit_code;
	int rc = o->create(job->trace, files.fds, files.files[0].tmp_path != NULL, &writer);
	exit_code = rc < 0 ? cli_library_error("convert", "cannot start the output", rc)
			   : run_view(o, job, writer, &lost);
	o->free(writer);
	if (exit_code != CLI_EXIT_OK) {
		files_abort(&files);
		return exit_code;
	}
	exit_code = files_commit(&files);
	if (exit_code != CLI_EXIT_OK)
		return exit_code;
	lost |= cli_print_diags_from(job->trace, "convert", 0);
	return lost ? CLI_EXIT_PROBLEMS : CLI_EXIT_OK;
}
