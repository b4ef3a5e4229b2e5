/* SPDX-License-Identifier: MIT */
/*
 * outputs/convert_view.c - weft_convert() to perfetto, chrome, paraver:
 * the trace through the view layer (outputs/view.h) into a viewer writer,
 * and chrome's Heph-compatible bytes (events straight to the Chrome
 * writer, as Heph's converter writes them).
 *
 * What is common to the viewer formats lives here: the output files
 * (written to temporary names, committed together at the end or all
 * removed), the cursor (the format's natural order; stream and event
 * globs; the time window is the view's, so that spans crossing its edges
 * are cut, not lost), and the report of what the view met (unmatched
 * leaves, unclosed spans).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "outputs/convert.h"
#include "outputs/outfile.h"
#include "outputs/chrome.h"
#include "outputs/paraver.h"
#include "outputs/perfetto.h"
#include "outputs/view.h"
#include "outputs/view_shared.h"
#include "outputs/writer.h"

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
	/* On shared streams (outputs/view_shared.h): the parts format the
	 * events (Chrome's), or record the view's calls for the merge to make
	 * again on the sink (NULL: weft__view_replay_ops). */
	const weft__view_share_ops *share;
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
	  chrome_free, &weft__chrome_share_ops },
	{ "perfetto", 1, { NULL }, perfetto_create, perfetto_sink, perfetto_finish,
	  NULL, perfetto_free, NULL },
	{ "paraver", 3, { ".prv", ".pcf", ".row" }, paraver_create, paraver_sink,
	  paraver_finish, paraver_warning, paraver_free, NULL },
};

/* ---- Output files ---------------------------------------------------------- */

/* The files of one conversion. */
typedef struct output_files {
	weft__outfile files[MAX_FILES];
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
		weft__outfile_abort(&f->files[i]);
	for (int i = 0; i < MAX_FILES; i++)
		free(f->paths[i]);
}

/* The line of a refused or failed output file; returns `rc`. */
static int file_failed(const weft__convert_job *job, int rc)
{
	weft__convert_say(job->report, "%s", weft_last_error());
	return rc;
}

/* Opens every file of the output (standard output only for one file). */
static int files_open(output_files *f, const view_output *o, const weft__convert_job *job)
{
	const char *out = job->options->path;

	memset(f, 0, sizeof *f);
	if (o->file_count > 1 && strcmp(out, "-") == 0)
		return file_failed(job, weft__error(WEFT_EINVAL, NULL, WEFT_NO_OFFSET,
						    "-t %s writes %d files: give a base name, "
						    "not '-'", o->name, o->file_count));
	char *base = o->file_count > 1 ? base_name(o, out) : strdup(out);
	if (base == NULL)
		return file_failed(job, weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET,
						    "out of memory"));
	for (int i = 0; i < o->file_count; i++) {
		const char *suffix = o->suffixes[i] ? o->suffixes[i] : "";
		f->paths[i] = malloc(strlen(base) + strlen(suffix) + 1);
		if (f->paths[i] != NULL)
			sprintf(f->paths[i], "%s%s", base, suffix);
		int rc = f->paths[i] == NULL
			 ? weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory")
			 : weft__outfile_open(&f->files[i], f->paths[i], job->options->force,
					      job->options->remove_on_signal);
		if (rc < 0) {
			free(base);
			files_abort(f);
			return file_failed(job, rc);
		}
		f->fds[i] = f->files[i].fd;
		f->open_count++;
	}
	free(base);
	return 0;
}

/* Puts every file in place; on a failure the rest is removed. */
static int files_commit(output_files *f, const weft__convert_job *job)
{
	int rc = 0;
	for (int i = 0; i < f->open_count; i++) {
		if (rc == 0 && (rc = weft__outfile_commit(&f->files[i])) < 0)
			file_failed(job, rc);
		else if (rc < 0)
			weft__outfile_abort(&f->files[i]);
	}
	for (int i = 0; i < MAX_FILES; i++)
		free(f->paths[i]);
	return rc;
}

/* ---- Report ----------------------------------------------------------------- */

/* "warning: <n> <what>" when n is not 0. */
static void warn_count(weft_convert_report *r, uint64_t n, const char *what)
{
	if (n > 0)
		weft__convert_say(r, "warning: %llu %s", (unsigned long long)n, what);
}

/* The events that have no place on the view's time axis. */
static void report_time_axis(weft_convert_report *r, const weft__view_stats *st)
{
	warn_count(r, st->no_real_time, "event(s) without a real time (ROSS analysis model "
		   "samples: ROSS records none) left out of the real-time view (--time "
		   "virtual shows them)");
	warn_count(r, st->virtual_end, "sample(s) taken at the end of the run (virtual time "
		   "DBL_MAX) left out: they have no place on the virtual time axis");
	warn_count(r, st->no_virtual_time, "event(s) without a virtual time that fits the "
		   "axis (none, negative, NaN or past 2^64 ns) left out");
}

/*
 * The line about spans past the view's nesting limit, into `m`: how many,
 * the timeline that lost the most (its stream, channel, depth) and how
 * many others lost some. NULL-safe on `t` (n == 0: the count alone).
 */
static void print_too_deep(FILE *m, const weft__convert_job *job,
			   const weft__view_too_deep_timeline *t, size_t n, uint64_t lost)
{
	int allow = job->options->allow_loss;
	size_t worst = 0;

	if (n == 0) {
		fprintf(m, "%s: %llu span(s) nested deeper than %d levels were dropped",
			allow ? "warning" : "error", (unsigned long long)lost,
			WEFT__VIEW_MAX_DEPTH);
		return;
	}
	for (size_t i = 1; i < n; i++)
		if (t[i].lost > t[worst].lost)
			worst = i;
	fprintf(m, "%s: %llu span(s) nested deeper than %d levels were dropped: %llu on %s "
		"(%s%s%s, %llu deep)", allow ? "warning" : "error", (unsigned long long)lost,
		WEFT__VIEW_MAX_DEPTH, (unsigned long long)t[worst].lost,
		weft_trace_stream(job->trace, t[worst].stream)->path,
		t[worst].channel ? "timeline '" : "its own timeline",
		t[worst].channel ? t[worst].channel : "", t[worst].channel ? "'" : "",
		(unsigned long long)t[worst].deepest);
	if (n > 1)
		fprintf(m, ", %llu on %zu other timeline(s)",
			(unsigned long long)(lost - t[worst].lost), n - 1);
	if (!allow)
		fprintf(m, "; viewers keep %d levels (Perfetto drops deeper slices); "
			"--allow-loss accepts the loss", WEFT__VIEW_MAX_DEPTH);
}

/*
 * Spans past the view's nesting limit, as one line. Data lost (returns 1)
 * unless the caller accepted the loss.
 */
static int report_too_deep(const weft__convert_job *job, const weft__view_too_deep_timeline *t,
			   size_t n, uint64_t lost)
{
	char *line = NULL;
	size_t size = 0;
	FILE *m = open_memstream(&line, &size);

	if (m != NULL) {
		print_too_deep(m, job, t, n, lost);
		fclose(m);
		weft__convert_say(job->report, "%s", line);
	}
	free(line);
	return !job->options->allow_loss;
}

/* The same for the timelines of `view` (count only when out of memory). */
static int report_view_too_deep(const weft__convert_job *job, weft__view *view, uint64_t lost)
{
	size_t n = weft__view_too_deep(view, NULL, 0);
	weft__view_too_deep_timeline *t = calloc(n ? n : 1, sizeof *t);

	if (t == NULL || weft__view_too_deep(view, t, n) != n)
		n = 0;
	int rc = report_too_deep(job, t, n, lost);
	free(t);
	return rc;
}

/* The events whose fields could not be decoded: an error (returns 1). */
static int report_bad_fields(weft_convert_report *r, uint64_t n)
{
	if (n > 0)
		weft__convert_say(r, "error: %llu event(s) with fields that could not be "
				  "decoded (written without them)", (unsigned long long)n);
	return n > 0;
}

/* What the view met, into the report; 1 when data was lost (undecodable fields). */
static int report_view(weft_convert_report *r, const weft__view_stats *st)
{
	r->events = st->events;
	r->unmatched_leaves = st->unmatched_leaves;
	r->unclosed_spans = st->unclosed_spans;
	r->state_restarts = st->state_restarts;
	r->too_deep = st->too_deep;
	r->no_real_time = st->no_real_time;
	r->virtual_end = st->virtual_end;
	r->no_virtual_time = st->no_virtual_time;
	r->bad_fields = st->bad_fields;
	if (st->unmatched_leaves > 0)
		weft__convert_say(r, "warning: %llu leave event(s) closed no open span "
				  "(skipped)", (unsigned long long)st->unmatched_leaves);
	if (st->unclosed_spans > 0)
		weft__convert_say(r, "warning: %llu span(s) never closed: closed at the end of "
				  "their stream (or by their parent's leave), flagged \"unclosed\"",
				  (unsigned long long)st->unclosed_spans);
	warn_count(r, st->state_restarts, "state span(s) entered again while on (e.g. ovni "
		   "OHx while running): the state restarts there, the span before is closed "
		   "and flagged \"unclosed\"");
	report_time_axis(r, st);
	return report_bad_fields(r, st->bad_fields);
}

/* ---- The writer ---------------------------------------------------------------- */

/* A viewer output being written (weft_output_writer.impl). */
typedef struct view_writer {
	const view_output *o;
	int compat;               /* chrome as Heph's converter writes it: no view */
	output_files files;
	int files_done;           /* committed or removed */
	void *writer;             /* the viewer writer (compat: weft__chrome_writer) */
	weft__view *view;         /* NULL for compat */
	weft__view_options view_options; /* the view's (with the window) */
	int shared;               /* converted on shared streams: */
	weft__view_shared shared_job; /* what its parts met */
	weft__view_replay *replay; /* the merge's calls on the sink (not chrome) */
	int failed_rc;            /* < 0: the shared conversion failed (said) */
	char *read_error;         /* the caller's reading stopped: why (first time) */
} view_writer;

/* The writer's entry, or NULL. */
static const view_output *find_output(const char *format)
{
	for (size_t i = 0; i < sizeof outputs / sizeof outputs[0]; i++)
		if (strcmp(outputs[i].name, format) == 0)
			return &outputs[i];
	return NULL;
}

/*
 * Chrome's JSON as Heph's convert_trace writes it: the events straight to
 * the writer, which writes from a second thread into a regular file, and
 * OUT (`synced`: fsync'ed when committed) goes to the disk as it is
 * written, leaving the page cache (docs/convert.md).
 */
static int compat_create(const weft__convert_job *job, view_writer *v)
{
	weft__chrome_options o = { .heph_compat = 1, .background = 1,
				   .write_behind = v->files.files[0].tmp_path != NULL };
	int rc = weft__chrome_writer_create(job->trace, v->files.fds[0], &o,
					    (weft__chrome_writer **)&v->writer);

	if (rc < 0)
		return weft__convert_fail(job->report, "cannot start the output", rc);
	weft__chrome_writer_begin(v->writer);
	return 0;
}

/*
 * A viewer writer and the view that feeds it. The view cuts spans at the
 * window's edges, so the cursor has no window; it stops at the window's
 * end when the events come in time order (virtual times come in any).
 */
static int view_start(const weft__convert_job *job, weft_filter *filter, view_writer *v)
{
	const weft_convert_options *opt = job->options;
	weft__view_options vo = { .from = filter->from, .to = filter->to,
				  .virtual_unit = (double)opt->virtual_unit_ns };
	int rc = v->o->create(job->trace, v->files.fds, v->files.files[0].tmp_path != NULL,
			      &v->writer);

	if (rc < 0)
		return weft__convert_fail(job->report, "cannot start the output", rc);
	weft__trace_threads_note(job->trace, 2); /* the viewers write behind on a thread */
	filter->from = 0;
	filter->to = 0;
	vo.time_ordered = filter->order == WEFT_ORDER_TIME && opt->virtual_unit_ns == 0;
	v->view_options = vo;
	rc = weft__view_create(job->trace, &vo, v->o->sink(v->writer), &v->view);
	return rc < 0 ? weft__convert_fail(job->report, "cannot read the events", rc) : 0;
}

/*
 * Starts a viewer output: its files, its writer, the view. The events
 * come in the format's natural order (Heph: one pass over its file;
 * formats read by whole files, ROSS: merged by time).
 */
static int view_writer_create(weft_output_writer *w)
{
	view_writer *v = calloc(1, sizeof *v);

	if (v != NULL && w->follower && weft__view_share_test_fault(w->job.trace, "follow")) {
		free(v); /* as if out of memory: a follower without impl */
		v = NULL;
	}
	w->impl = v;
	if (v == NULL)
		return weft__convert_fail(w->job.report, "cannot start the output",
					  weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET,
						      "out of memory"));
	v->o = find_output(w->info->name);
	v->compat = w->options.heph_compat;
	w->filter.order = weft_trace_file_order_default(w->job.trace)
			  ? WEFT_ORDER_TIME : weft_trace_natural_order(w->job.trace);
	if (w->follower) { /* another rank's part of a viewer on ranks: no file */
		v->files_done = 1;
		w->filter.from = 0;
		w->filter.to = 0;
		return 0;
	}
	int rc = v->o != NULL ? files_open(&v->files, v->o, &w->job) : WEFT_EINVAL;
	if (rc < 0) {
		v->files_done = 1;
		w->ops->free(w);
		return rc;
	}
	rc = v->compat ? compat_create(&w->job, v) : view_start(&w->job, &w->filter, v);
	if (rc < 0)
		w->ops->free(w);
	return rc;
}

/* One event: to the view (0; 1 once its window has ended), or compat's writer. */
static int view_writer_event(weft_output_writer *w, const weft_event *event)
{
	view_writer *v = w->impl;

	if (v->compat) {
		weft__chrome_writer_event(v->writer, event);
		return weft__chrome_writer_failed(v->writer) ? WEFT_EIO : 0;
	}
	if (weft__view_window_ended(v->view))
		return 1;
	weft__view_event(v->view, event);
	return weft__view_window_ended(v->view);
}

/* Keeps why the caller's reading stopped, said at the end. */
static void view_writer_read_failed(weft_output_writer *w, uint32_t stream,
				    const char *message)
{
	view_writer *v = w->impl;

	(void)stream;
	if (v->read_error == NULL)
		v->read_error = strdup(message);
}

/* The line of the caller's reading stopped early: data lost (returns 1). */
static int report_read_error(weft_convert_report *r, const view_writer *v)
{
	if (v->read_error == NULL)
		return 0;
	weft__convert_say(r, "reading the events stopped early: %s", v->read_error);
	return 1;
}

/*
 * Closes the view (its open spans) and finishes the viewer writer, then
 * says what the view met. Returns 0, or a negative code when the output
 * failed; *lost is set when data was lost.
 */
static int view_end(const weft__convert_job *job, view_writer *v, int *lost)
{
	weft__view_stats st;
	int too_deep = 0;

	weft__view_finish(v->view);
	weft__view_stats_get(v->view, &st);
	if (v->shared)
		st = v->shared_job.stats; /* what the parts' views met */
	if (st.too_deep > 0 && v->shared)
		too_deep = report_too_deep(job, v->shared_job.too_deep,
					   v->shared_job.too_deep_count, st.too_deep);
	else if (st.too_deep > 0)
		too_deep = report_view_too_deep(job, v->view, st.too_deep);
	weft__view_free(v->view);
	v->view = NULL;
	int rc = v->o->finish(v->writer);
	if (rc < 0)
		return weft__convert_fail(job->report, "writing the output failed", rc);
	const char *warning = v->o->warning ? v->o->warning(v->writer) : NULL;
	if (warning != NULL)
		weft__convert_say(job->report, "warning: %s", warning);
	*lost = report_view(job->report, &st) | too_deep;
	*lost |= report_read_error(job->report, v);
	return 0;
}

/*
 * The trace's diagnostics and what compat's writer met. Returns 1 when
 * some data could not be read (an error diagnostic, fields that could not
 * be decoded), 0 when there were only warnings or nothing.
 */
static int compat_report(const weft__convert_job *job, const weft__chrome_stats *st)
{
	weft_convert_report *r = job->report;
	int lost = weft__convert_diags(r, job->trace);

	r->bad_fields = st->bad_fields;
	r->fixup_stuck = st->fixup_stuck;
	lost |= report_bad_fields(r, st->bad_fields);
	if (st->fixup_stuck > 0)
		weft__convert_say(r, "warning: %llu event(s) left at their own timestamp: the "
				  "same-start fix-up would never end for them (Heph's converter "
				  "hangs there)", (unsigned long long)st->fixup_stuck);
	return lost;
}

/* Finishes compat's writer (its footer, the fix-up) and keeps its stats. */
static int compat_end(const weft__convert_job *job, view_writer *v, weft__chrome_stats *st)
{
	int rc = weft__chrome_writer_finish(v->writer);

	weft__chrome_writer_stats(v->writer, st);
	weft__chrome_writer_free(v->writer);
	v->writer = NULL;
	return rc < 0 ? weft__convert_fail(job->report, "writing the output failed", rc) : 0;
}

/*
 * Ends the output: the writer's last bytes, the files put in place, then
 * the report (viewers: what the view met, then the trace's diagnostics;
 * compat: the diagnostics, then what its writer met).
 */
static int view_writer_finish(weft_output_writer *w, int failed)
{
	const weft__convert_job *job = &w->job;
	view_writer *v = w->impl;
	weft__chrome_stats stats;
	int lost = 0;

	memset(&stats, 0, sizeof stats);
	if (failed && v->failed_rc < 0) /* said already; free removes the files */
		return v->failed_rc;
	/* otherwise the writers say why themselves when they finish */
	int rc = v->compat ? compat_end(job, v, &stats) : view_end(job, v, &lost);
	if (!v->compat) {
		v->o->free(v->writer);
		v->writer = NULL;
	}
	if (rc < 0)
		return rc; /* free removes the files */
	v->files_done = 1;
	if ((rc = files_commit(&v->files, job)) < 0)
		return rc;
	if (v->compat)
		lost = compat_report(job, &stats) | report_read_error(job->report, v);
	else
		lost |= weft__convert_diags(job->report, job->trace);
	job->report->data_lost = lost;
	return 0;
}

/* Frees the output; what was not committed is removed. */
static void view_writer_free(weft_output_writer *w)
{
	view_writer *v = w->impl;

	if (v == NULL)
		return;
	weft__view_free(v->view);
	if (v->compat)
		weft__chrome_writer_free(v->writer);
	else if (v->writer != NULL)
		v->o->free(v->writer);
	if (!v->files_done)
		files_abort(&v->files);
	free(v->shared_job.too_deep);
	weft__view_replay_free(v->replay);
	free(v->read_error);
	free(v);
	w->impl = NULL;
}

/*
 * The viewers on streams shared among threads and ranks
 * (outputs/view_shared.h): 1 when done (its failures said: a reading
 * that stopped, or the output failed), 0 when the caller reads the
 * merged cursor: fewer than three threads (two parts and the merge), a
 * time window or virtual time (the view's window opens at the first
 * event of all streams), Heph's bytes, streams that share files or are
 * read in file order.
 */

/* 1 when the streams can be shared (rank 0 or one process alone). */
static int can_share(const weft_output_writer *w, const weft_filter *filter)
{
	const view_writer *v = w->impl;

	return v != NULL && !v->compat && v->view != NULL && v->view_options.from == 0 &&
	       v->view_options.to == 0 && v->view_options.virtual_unit <= 0 &&
	       filter->order == WEFT_ORDER_TIME &&
	       weft__cursor_merges_streams(w->job.trace, filter);
}

/* The output's part in the shared conversion: its calls, and what they act on. */
static const weft__view_share_ops *share_ops(const view_output *o)
{
	return o != NULL && o->share != NULL ? o->share : &weft__view_replay_ops;
}

static void *share_target(view_writer *v)
{
	if (v->o->share != NULL)
		return v->writer;
	if (v->replay == NULL)
		v->replay = weft__view_replay_create(v->o->sink(v->writer));
	return v->replay;
}

/*
 * Another rank's part of a shared conversion on ranks (collective, with
 * rank 0's view_convert_shared): its share converted and sent to rank 0.
 * A follower that could not be made (no impl) takes part and fails.
 */
static int follow(weft_output_writer *w)
{
	const view_writer *v = w->impl;
	weft__view_shared job;
	weft_filter filter;

	memset(&job, 0, sizeof job);
	weft_output_writer_filter(w, &filter);
	job.filter = &filter;
	job.among = v != NULL ? w->selected : NULL;
	job.view = (weft__view_options){ .time_ordered = 1 };
	/* the output's own calls, also without impl: every rank must make
	 * the same collectives (Chrome's exchange its first time) */
	int rc = weft__view_convert_ranks(w->job.trace, share_ops(find_output(w->info->name)),
					  NULL, NULL, &job, 0);
	free(job.too_deep);
	return rc != 0;
}

/* A shared conversion that failed on a rank (not a stream: those are diagnostics). */
static int ranks_failed(weft_output_writer *w, size_t diags, int rc)
{
	view_writer *v = w->impl;

	weft__trace_diags_sort(w->job.trace, diags);
	v->failed_rc = weft__convert_fail(w->job.report, v->shared_job.write_failed
					  ? "writing the output failed"
					  : "cannot convert the streams", rc);
	weft__output_writer_fail(w);
	return 1;
}

static int view_convert_shared(weft_output_writer *w)
{
	view_writer *v = w->impl;
	weft_trace *trace = w->job.trace;
	/* as convert.c's convert_on_ranks: then every rank is here */
	int on_ranks = weft__dist_active(trace) && !weft_trace_file_order_default(trace);
	weft_filter filter;
	int rc;

	if (w->follower)
		return on_ranks ? follow(w) : 0;
	weft_output_writer_filter(w, &filter);
	int share = can_share(w, &filter);
	int parts = share ? weft__parts_threads(trace, w->selected, 0, WEFT__WORK_HEAVY) - 1 : 0;
	if (!on_ranks && parts < 2)
		return 0;
	void *target = share ? share_target(v) : NULL;
	if (share && target == NULL)
		share = 0; /* no memory for the replay: rank 0 converts alone */
	const weft__view_share_ops *ops = share_ops(v->o);
	weft__view_shared *job = &v->shared_job;
	job->filter = &filter;
	job->among = w->selected;
	job->parts = parts;
	job->view = v->view_options;
	size_t diags = weft_trace_diag_count(trace);
	if (on_ranks) {
		rc = weft__view_convert_ranks(trace, ops, target, v->view, job, share);
		if (rc == 0)
			return 0; /* rank 0 converts alone */
		if (rc < 0)
			return ranks_failed(w, diags, rc);
		rc = 0;
	} else {
		if (target == NULL)
			return 0;
		rc = weft__view_convert_shared(trace, ops, target, v->view, job);
	}
	v->shared = 1;
	weft__trace_diags_sort(trace, diags); /* the parts' in stream order */
	w->job.report->selected += job->stats.events;
	if (rc < 0 && job->write_failed) {
		weft__convert_fail(w->job.report, "writing the output failed", rc);
		weft__output_writer_fail(w);
	} else if (rc < 0) {
		weft_output_writer_read_failed(w, WEFT_OUTPUT_ALL_STREAMS, rc);
	}
	return 1;
}

/* The viewers' writer functions (one table: the view_output picks the writer). */
#define VIEW_WRITER_OPS(cpus, shared) { 0, view_writer_create, view_writer_event, NULL, \
					view_writer_read_failed, view_writer_finish, \
					view_writer_free, cpus, shared }
const weft__writer_ops weft__perfetto_writer_ops = VIEW_WRITER_OPS(0, view_convert_shared);
const weft__writer_ops weft__chrome_writer_ops = VIEW_WRITER_OPS(3, view_convert_shared);
const weft__writer_ops weft__paraver_writer_ops = VIEW_WRITER_OPS(0, view_convert_shared);
