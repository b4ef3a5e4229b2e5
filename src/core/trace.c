/* SPDX-License-Identifier: MIT */
/*
 * core/trace.c - opening a trace with the right backend, and the tables of
 * nodes, streams and diagnostics that every backend fills the same way.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/internal.h"

/* Every format weft reads, in the order they are probed. */
static const weft_backend *const backends[] = {
	&weft__ovni_backend,
	&weft__heph_backend,
	&weft__ross_backend,
	&weft__pallas_backend,
	&weft__otf2_backend,
};
#define BACKEND_COUNT (sizeof backends / sizeof backends[0])

/* Diagnostics kept per trace; more are counted in diags_dropped. */
#define DIAG_MAX 4096

const char *weft_version(void)
{
	return WEFT_VERSION_STRING;
}

/* The names come from the backend table: the one list of formats. */
const char *weft_format_name(weft_format format)
{
	if (format == WEFT_FORMAT_AUTO)
		return "auto";
	for (size_t i = 0; i < BACKEND_COUNT; i++)
		if (backends[i]->format == format)
			return backends[i]->name;
	return NULL;
}

int weft_format_from_name(const char *name)
{
	if (strcmp(name, "auto") == 0)
		return WEFT_FORMAT_AUTO;
	for (size_t i = 0; i < BACKEND_COUNT; i++)
		if (strcmp(name, backends[i]->name) == 0)
			return (int)backends[i]->format;
	return -1;
}

size_t weft_format_count(void)
{
	return BACKEND_COUNT;
}

weft_format weft_format_at(size_t i)
{
	return i < BACKEND_COUNT ? backends[i]->format : WEFT_FORMAT_AUTO;
}

/* A format can be sorted when its backend has a sort (auto: when one has). */
int weft_format_sortable(weft_format format)
{
	for (size_t i = 0; i < BACKEND_COUNT; i++)
		if ((format == WEFT_FORMAT_AUTO || backends[i]->format == format) &&
		    backends[i]->sort != NULL)
			return 1;
	return 0;
}

const weft_backend *weft__backend_at(size_t i)
{
	return i < BACKEND_COUNT ? backends[i] : NULL;
}

const char *weft__trace_strdup(weft_trace *trace, const char *s)
{
	if (weft__array_grow((void **)&trace->strings, &trace->string_cap,
		 trace->string_count + 1, sizeof(char *)) < 0)
		return NULL;
	char *copy = strdup(s);
	if (copy == NULL)
		return NULL;
	trace->strings[trace->string_count++] = copy;
	return copy;
}

/* Chooses the backend: the forced one, or the one most sure of `path`. */
static const weft_backend *pick_backend(const char *path, weft_format format)
{
	const weft_backend *best = NULL;
	int best_score = 0;
	for (size_t i = 0; i < BACKEND_COUNT; i++) {
		if (format != WEFT_FORMAT_AUTO) {
			if (backends[i]->format == format)
				return backends[i];
			continue;
		}
		int score = backends[i]->probe(path);
		if (score > best_score) {
			best = backends[i];
			best_score = score;
		}
	}
	return best;
}

int weft_format_detect(const char *path, const weft_open_options *options)
{
	if (path == NULL)
		return weft__error(WEFT_EINVAL, NULL, WEFT_NO_OFFSET, "no path");
	/* As weft_trace_open: the format forced, or implied by an option. */
	weft_format format = options != NULL ? options->format : WEFT_FORMAT_AUTO;
	if (format == WEFT_FORMAT_AUTO && options != NULL)
		format = weft__options_implied_format(options);
	if (format != WEFT_FORMAT_AUTO)
		return (int)format;
	const weft_backend *b = pick_backend(path, WEFT_FORMAT_AUTO);
	if (b == NULL)
		return weft__error(WEFT_ENOTFOUND, path, WEFT_NO_OFFSET,
				   "not a trace of any supported format");
	return (int)b->format;
}

/*
 * What a trace of each format (or of `only`) is, from the backend table,
 * for the messages about a path that is not a trace: "one of: a; b; c".
 */
static const char *expected_list(const weft_backend *only)
{
	static _Thread_local char text[512];
	if (only != NULL)
		return only->expected;
	size_t n = (size_t)snprintf(text, sizeof text, "one of: ");
	for (size_t i = 0; i < BACKEND_COUNT && n < sizeof text; i++)
		n += (size_t)snprintf(text + n, sizeof text - n, "%s%s", i ? "; " : "",
				      backends[i]->expected);
	return text;
}

/* 1 when the directory `path` holds no entry but "." and "..". */
static int directory_is_empty(const char *path)
{
	DIR *d = opendir(path);
	if (d == NULL)
		return 0;
	struct dirent *e;
	int empty = 1;
	while (empty && (e = readdir(d)) != NULL)
		empty = strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0;
	closedir(d);
	return empty;
}

/*
 * Refuses, before any backend looks at it, a path that cannot be a trace:
 * missing, unreadable, neither a file nor a directory, or (for a forced
 * format) the wrong one of the two. The message names the path and says
 * what was expected. Fills *st.
 */
static int check_path(const char *path, const weft_backend *forced, struct stat *st)
{
	if (stat(path, st) != 0) {
		int err = errno;
		if (err == ENOENT || err == ENOTDIR)
			return weft__error(WEFT_ENOTFOUND, path, WEFT_NO_OFFSET,
					   "no such file or directory");
		if (err == EACCES)
			return weft__error(WEFT_EIO, path, WEFT_NO_OFFSET, "permission denied "
					   "(a directory on its path cannot be searched)");
		return weft__error(WEFT_EIO, path, WEFT_NO_OFFSET, "cannot look at it: %s",
				   strerror(err));
	}
	int is_dir = S_ISDIR(st->st_mode);
	if (!is_dir && !S_ISREG(st->st_mode))
		return weft__error(WEFT_ENOTFOUND, path, WEFT_NO_OFFSET,
				   "neither a regular file nor a directory; expected %s",
				   expected_list(forced));
	if (forced != NULL && !(forced->path_kinds & (is_dir ? WEFT__PATH_DIR : WEFT__PATH_FILE)))
		return weft__error(WEFT_ENOTFOUND, path, WEFT_NO_OFFSET,
				   "a %s; expected %s", is_dir ? "directory" : "file",
				   forced->expected);
	DIR *d = is_dir ? opendir(path) : NULL;
	int fd = is_dir ? -1 : open(path, O_RDONLY | O_CLOEXEC);
	if (d == NULL && fd < 0)
		return weft__error(WEFT_EIO, path, WEFT_NO_OFFSET, "cannot %s: %s",
				   is_dir ? "list the directory" : "read the file", strerror(errno));
	if (d != NULL)
		closedir(d);
	if (fd >= 0)
		close(fd);
	return 0;
}

/* The message when no backend recognises `path` (a readable file or directory). */
static int not_a_trace(const char *path, const struct stat *st)
{
	const char *what = "not a trace of any supported format";
	if (S_ISREG(st->st_mode) && st->st_size == 0)
		what = "an empty file, not a trace";
	else if (S_ISDIR(st->st_mode) && directory_is_empty(path))
		what = "an empty directory, not a trace";
	return weft__error(WEFT_ENOTFOUND, path, WEFT_NO_OFFSET, "%s; expected %s", what,
			   expected_list(NULL));
}

/*
 * A failed open frees the trace and its diagnostics: the first error among
 * them (what made a backend give up, "no readable file") is added to the
 * message, so that the reason is not lost with them.
 */
static void with_first_problem(const weft_trace *trace)
{
	const weft_diag *d = NULL;
	for (size_t i = 0; i < trace->diag_count && d == NULL; i++)
		if (trace->diags[i].severity == WEFT_SEV_ERROR)
			d = &trace->diags[i];
	if (d == NULL)
		return;
	char place[64] = "";
	if (d->offset != WEFT_NO_OFFSET)
		snprintf(place, sizeof place, "byte %llu: ", (unsigned long long)d->offset);
	weft__error(WEFT_OK, weft__error_file(), weft__error_offset(), "%s; first problem: %s%s%s%s",
		    weft__error_text(), d->file ? d->file : "", d->file ? ": " : "", place,
		    d->message);
}

/*
 * The options the trace was opened with, its format options copied (the
 * caller's strings are read by open only), so that weft__trace_reopen()
 * can open the same trace again. -1 when out of memory.
 */
static int keep_options(weft_trace *trace, const weft_open_options *options)
{
	trace->options = *options;
	for (size_t i = 0; i < options->format_option_count; i++) {
		const char *value = weft__trace_strdup(trace, options->format_option_values[i]);
		if (value == NULL)
			return -1;
		trace->options.format_option_values[i] = value; /* keys: the tables' */
	}
	return 0;
}

int weft__trace_size_changed(const weft_stream_info *s, uint64_t was, uint64_t now)
{
	return weft__error(WEFT_ETRUNCATED, s->file != NULL ? s->file : s->path,
			   now < was ? now : was, "the file changed since it was opened: it "
			   "had %llu bytes, it now has %llu", (unsigned long long)was,
			   (unsigned long long)now);
}

static int open_here(const char *path, const weft_open_options *options, weft__metafs *fs,
		     weft_trace **out);

/* The copy of `trace` from what its open read (its tape), as `o` says. */
static int reopen_replayed(const weft_trace *trace, const weft_open_options *o,
			   weft_trace **out)
{
	weft__metafs *fs = NULL;
	int format = 0;
	int replayable = 0;
	int rc = weft__metafs_replayer_kept(trace->open_tape, trace->open_tape_len, &fs, &format,
					    &replayable);
	if (rc == 0 && !replayable)
		rc = weft__error(WEFT_EFORMAT, trace->path, WEFT_NO_OFFSET,
				 "the trace's open tape cannot be replayed (a bug)");
	if (rc == 0)
		rc = open_here(trace->path, o, fs, out);
	rc = weft__metafs_end(fs, rc);
	weft__metafs_free(fs);
	return rc;
}

int weft__trace_reopen(const weft_trace *trace, int one_thread, weft_trace **out)
{
	weft_open_options o = trace->options;
	o.format = trace->backend->format;
	o.progress = NULL; /* the copy is read on another thread: no callback there */
	o.dist = NULL;     /* ... by this rank alone: opening it is not collective */
	if (one_thread)
		o.threads = 1; /* no threads inside a part's thread */
	int rc = trace->open_tape != NULL ? reopen_replayed(trace, &o, out)
					  : weft_trace_open(trace->path, &o, out);
	if (rc < 0)
		return rc;
	/* The copy must read what the caller's handle saw: a file that
	 * changed in between would be read short (or long) without a word.
	 * (A replayed copy has the same table: weft__trace_reopen_part.) */
	const weft_trace *t = *out;
	for (size_t i = 0; i < t->stream_count && i < trace->stream_count; i++) {
		const weft_stream_info *was = &trace->streams[i], *now = &t->streams[i];
		if (now->file_size != was->file_size) {
			rc = weft__trace_size_changed(now, was->file_size, now->file_size);
			break;
		}
	}
	if (rc == 0 && t->stream_count != trace->stream_count)
		rc = weft__error(WEFT_EFORMAT, trace->path, WEFT_NO_OFFSET,
				 "the trace changed since it was opened: %zu streams, now %zu",
				 trace->stream_count, t->stream_count);
	if (rc < 0) {
		weft_trace_free(*out);
		*out = NULL;
	}
	return rc;
}

int weft__trace_reopen_part(const weft_trace *trace, const uint8_t *selected,
			    weft_trace **out)
{
	int rc = weft__trace_reopen(trace, 1, out);
	if (rc == 0 && trace->open_tape != NULL)
		rc = weft__trace_check_sizes(*out, selected, 0);
	if (rc < 0) {
		weft_trace_free(*out);
		*out = NULL;
	}
	return rc;
}

int weft__trace_borrow(const weft_trace *trace, size_t piece, size_t pieces,
		       weft_trace **out)
{
	weft_trace *t = malloc(sizeof *t);
	*out = t;
	if (t == NULL)
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	*t = *trace;
	t->borrowed = 1;
	t->piece = piece;
	t->piece_count = pieces;
	/* its own: strings, diagnostics, progress; no dist, tape or share */
	t->strings = NULL;
	t->string_count = t->string_cap = 0;
	t->diags = NULL;
	t->diag_count = t->diag_cap = 0;
	t->diag_origins = NULL;
	t->diag_origin_cap = 0;
	t->diags_dropped = 0;
	t->dist_selected = NULL;
	t->metafs = NULL; /* (the open's tape stays: a probe may replay it) */
	t->options.dist = NULL;
	t->options.threads = 1; /* a thread's: no threads inside it */
	t->options.progress = NULL;
	weft__progress_init(t, &t->options);
	t->progress.bytes_total = trace->progress.bytes_total;
	t->progress.events_total = trace->progress.events_total;
	t->progress.data_files = trace->progress.data_files;
	t->progress.data_bytes = trace->progress.data_bytes;
	return 0;
}

/*
 * The end of an open through `fs` (sends or takes what is left of the
 * tape); the tape stays with the trace for its threads.
 */
static int open_end(weft__metafs *fs, int rc, weft_trace **out)
{
	if (out == NULL) { /* open_here refused it */
		weft__metafs_free(fs);
		return rc;
	}
	/* Alone, the tape is kept only for a trace its analyses would read on
	 * threads (weft__parts_threads: the threads option, WEFT_THREADS, or
	 * enough bytes for heavy work); an analysis that asks for threads
	 * itself then opens its copies from the files. */
	if (rc == 0 && !weft__dist_active(*out) &&
	    weft__parts_threads(*out, NULL, 0, WEFT__WORK_HEAVY) <= 1)
		weft__metafs_unkeep(fs);
	rc = weft__metafs_end(fs, rc);
	if (rc == 0 && *out != NULL)
		weft__metafs_take_kept(fs, &(*out)->open_tape, &(*out)->open_tape_len);
	weft__metafs_free(fs);
	if (rc < 0 && *out != NULL) {
		weft_trace_free(*out);
		*out = NULL;
	}
	return rc;
}

/*
 * The open of a trace shared by the ranks of `d`: rank 0 opens it through
 * a recorder that sends its metadata reads to the others as it goes; they
 * open it from that tape, replaying while rank 0 reads, without reading
 * the metadata themselves, or by themselves for formats whose open cannot
 * be replayed (core/metafs.c). Every rank takes part in every message
 * whatever happens. Sets *replayed (the same on every rank) and *booked
 * (rank 0: the other ranks' books answered some of its questions).
 */
static int open_shared(const char *path, const weft_open_options *options,
		       const weft_dist *d, weft_trace **out, int *replayed, int *booked)
{
	weft__metafs *fs = NULL;
	int rc;
	*booked = 0;
	if (d->rank == 0) {
		rc = weft__metafs_recorder(d, 1, &fs);
		if (rc == 0)
			rc = open_here(path, options, fs, out);
	} else {
		int format = 0;
		rc = weft__metafs_replayer(d, 1, &fs, &format, replayed);
		weft_open_options forced = *options;
		forced.format = (weft_format)format;
		if (rc == 0)
			rc = open_here(path, *replayed ? &forced : options, *replayed ? fs : NULL,
				       out);
		return open_end(fs, rc, out);
	}
	*replayed = weft__metafs_replayable(fs);
	*booked = weft__metafs_booked(fs);
	return open_end(fs, rc, out);
}

/*
 * Opens the trace; with a weft_dist of several ranks, rank 0 reads its
 * metadata for all (open_shared), every rank checks the files it will
 * read, and they agree: if one fails, all do (rank 0 says which and why).
 */
int weft_trace_open(const char *path, const weft_open_options *options,
		    weft_trace **out)
{
	if (out != NULL)
		*out = NULL;
	const weft_dist *d = options != NULL ? options->dist : NULL;
	if (d == NULL || d->ranks <= 1 || out == NULL) {
		weft__metafs *fs = NULL;
		if (out != NULL && weft__metafs_recorder(NULL, 1, &fs) < 0)
			weft__error_clear(); /* then without a tape */
		return open_end(fs, open_here(path, options, fs, out), out);
	}
	if (d->rank < 0 || d->rank >= d->ranks || d->gather == NULL || d->broadcast == NULL)
		return weft__error(WEFT_EINVAL, path, WEFT_NO_OFFSET,
				   "weft_dist: rank %d of %d, or no gather or broadcast",
				   d->rank, d->ranks);
	int replayed, booked;
	int rc = open_shared(path, options, d, out, &replayed, &booked);
	/* A backend that scans files many streams share (ROSS) left the scan
	 * to the ranks: each scans a piece of each file. */
	rc = weft__dist_open_scan(rc == 0 ? *out : NULL, d, rc);
	if (rc < 0 && *out != NULL) {
		with_first_problem(*out); /* as when its own open fails */
		weft_trace_free(*out);
		*out = NULL;
	}
	/* The agreement needs a trace to report on: a failed rank's stand-in. */
	weft_trace failed = { .options = { .dist = d } };
	int agreed = replayed ? 0 : weft__dist_agree_sizes(rc == 0 ? *out : NULL, d);
	if (rc == 0)
		rc = agreed < 0 ? agreed : weft__dist_deal(*out);
	/* Each rank checks the files of its streams against the sizes it was
	 * given; rank 0 too when the other ranks read them for it (their
	 * books): a rank that opened another copy is caught either way. */
	if (rc == 0 && replayed && d->rank != 0)
		rc = weft__trace_check_sizes(*out, weft__dist_selected(*out), 1);
	else if (rc == 0 && booked)
		rc = weft__trace_check_sizes(*out, weft__dist_selected(*out), 2);
	if (rc < 0 && *out != NULL) {
		weft_trace_free(*out);
		*out = NULL;
	}
	weft_trace *t = rc == 0 ? *out : &failed;
	size_t diags = weft_trace_diag_count(t);
	rc = weft__dist_combine(t, rc, diags, NULL, NULL, NULL);
	if (rc < 0 && t != &failed) {
		weft_trace_free(*out);
		*out = NULL;
	}
	return rc;
}

/* This process's open; the backend's metadata questions go to `fs` (NULL: the files). */
static int open_here(const char *path, const weft_open_options *options, weft__metafs *fs,
		     weft_trace **out)
{
	weft_open_options defaults;
	if (path == NULL || out == NULL)
		return weft__error(WEFT_EINVAL, NULL, WEFT_NO_OFFSET,
				   "weft_trace_open: NULL argument");
	*out = NULL;
	if (options == NULL) {
		weft_open_options_init(&defaults);
		options = &defaults;
	}
	int rc = weft__options_check(options);
	if (rc < 0)
		return rc;
	weft_format format = options->format;
	/* An option that only makes sense for one format implies it (ross.kind). */
	if (format == WEFT_FORMAT_AUTO)
		format = weft__options_implied_format(options);
	const weft_backend *forced = format == WEFT_FORMAT_AUTO ? NULL
				     : pick_backend(path, format);
	if (format != WEFT_FORMAT_AUTO && forced == NULL)
		return weft__error(WEFT_EUNSUPPORTED, path, WEFT_NO_OFFSET,
				   "format %s is not supported yet",
				   weft_format_name(format) ? weft_format_name(format) : "?");
	struct stat st;
	rc = check_path(path, forced, &st);
	if (rc < 0)
		return rc;
	const weft_backend *backend = forced ? forced : pick_backend(path, format);
	if (backend == NULL)
		return not_a_trace(path, &st);
	weft_trace *trace = calloc(1, sizeof *trace);
	if (trace == NULL)
		return weft__error(WEFT_ENOMEM, path, WEFT_NO_OFFSET, "out of memory");
	trace->path = strdup(path);
	if (trace->path == NULL || keep_options(trace, options) < 0) {
		weft_trace_free(trace); /* no backend yet: nothing to close */
		return weft__error(WEFT_ENOMEM, path, WEFT_NO_OFFSET, "out of memory");
	}
	trace->backend = backend;
	weft__progress_init(trace, options);
	weft__progress_begin(trace, "opening");
	trace->metafs = fs;
	rc = weft__metafs_begin(fs, backend);
	if (rc == 0)
		rc = backend->open(trace, path, options);
	trace->metafs = NULL;
	if (rc < 0) {
		with_first_problem(trace);
		weft_trace_free(trace);
		return rc;
	}
	weft__progress_opened(trace);
	weft__progress_end(trace);
	*out = trace;
	return 0;
}

void weft_trace_free(weft_trace *trace)
{
	if (trace == NULL)
		return;
	if (trace->backend && trace->backend->close && !trace->borrowed)
		trace->backend->close(trace);
	for (size_t i = 0; i < trace->string_count; i++)
		free(trace->strings[i]);
	free(trace->strings);
	free(trace->diags);
	free(trace->diag_origins);
	if (trace->borrowed) { /* the rest is its origin's */
		free(trace);
		return;
	}
	free(trace->nodes);
	free(trace->streams);
	free(trace->metadata_json);
	free(trace->dist_selected);
	free(trace->open_tape);
	free(trace->path);
	free(trace);
}

weft_format weft_trace_format(const weft_trace *trace)
{
	return trace->backend->format;
}

int weft_trace_layout_version(const weft_trace *trace)
{
	return trace->layout_version;
}

const char *weft_trace_path(const weft_trace *trace)
{
	return trace->path;
}

const char *weft_trace_metadata_json(const weft_trace *trace)
{
	return trace->metadata_json != NULL ? trace->metadata_json : "{}";
}

/* The backend reads whole files in its merged cursor by default (ROSS). */
int weft_trace_file_order_default(const weft_trace *trace)
{
	return trace->backend->file_open != NULL && trace->backend->file_order_default;
}

/* Several files of many streams each: the backend reads them one by one. */
int weft_trace_shared_files(const weft_trace *trace)
{
	return trace->backend->file_count != NULL;
}

int weft__trace_set_metadata(weft_trace *trace, const char *metadata_json)
{
	char *copy = strdup(metadata_json);
	if (copy == NULL)
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	free(trace->metadata_json);
	trace->metadata_json = copy;
	return 0;
}

size_t weft_trace_node_count(const weft_trace *trace)
{
	return trace->node_count;
}

const weft_node *weft_trace_node(const weft_trace *trace, size_t index)
{
	return index < trace->node_count ? &trace->nodes[index] : NULL;
}

size_t weft_trace_stream_count(const weft_trace *trace)
{
	return trace->stream_count;
}

const weft_stream_info *weft_trace_stream(const weft_trace *trace, size_t index)
{
	return index < trace->stream_count ? &trace->streams[index] : NULL;
}

int weft_trace_stream_find(const weft_trace *trace, const char *path)
{
	for (size_t i = 0; i < trace->stream_count; i++)
		if (strcmp(trace->streams[i].path, path) == 0)
			return (int)i;
	return weft__error(WEFT_ENOTFOUND, trace->path, WEFT_NO_OFFSET,
			   "no stream named %s", path);
}

/*
 * The first timed event of a time-ordered cursor: priming the merge reads
 * the head of every stream, which is all it costs on formats whose streams
 * are sorted. It reads through a second handle of the trace, so that what
 * it meets is not recorded on `trace` (the command's own read reports it
 * once) and reports said once per trace are not used up. Kept, because
 * `+T` options may ask several times.
 */
int weft_trace_start_time(weft_trace *trace, uint64_t *start)
{
	*start = 0;
	if (trace->start_time_state == 0) {
		weft_filter filter = { .order = WEFT_ORDER_TIME };
		weft_trace *probe = NULL;
		weft_cursor *cursor = NULL;
		const weft_event *ev;
		int rc = weft__trace_reopen(trace, 0, &probe);
		if (rc == 0)
			rc = weft_cursor_create(probe, &filter, &cursor);
		while (rc == 0 && (rc = weft_cursor_next(cursor, &ev)) == 1 &&
		       (ev->flags & WEFT_EVENT_NO_TIME))
			rc = 0;
		if (rc == 1)
			trace->start_time = ev->time;
		weft_cursor_free(cursor);
		weft_trace_free(probe);
		if (rc < 0)
			return rc;
		trace->start_time_state = rc == 1 ? 1 : 2;
	}
	*start = trace->start_time;
	return trace->start_time_state == 1;
}

size_t weft_trace_diag_count(const weft_trace *trace)
{
	return trace->diag_count;
}

const weft_diag *weft_trace_diag(const weft_trace *trace, size_t index)
{
	return index < trace->diag_count ? &trace->diags[index] : NULL;
}

int weft__trace_add_node(weft_trace *trace, uint32_t parent, const char *kind,
			 const char *name, int64_t number,
			 const char *metadata_json, uint32_t *id)
{
	int rc = weft__array_grow((void **)&trace->nodes, &trace->node_cap,
		      trace->node_count + 1, sizeof(weft_node));
	if (rc < 0)
		return rc;
	char *path;
	if (parent == WEFT_NO_PARENT)
		path = strdup(name);
	else
		path = weft__path_join(trace->nodes[parent].path, name);
	if (path == NULL)
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	const char *owned_path = weft__trace_strdup(trace, path);
	free(path);
	weft_node *node = &trace->nodes[trace->node_count];
	node->id = (uint32_t)trace->node_count;
	node->parent = parent;
	node->kind = weft__trace_strdup(trace, kind);
	node->name = weft__trace_strdup(trace, name);
	node->path = owned_path;
	node->number = number;
	node->stream = -1;
	node->metadata_json = weft__trace_strdup(trace, metadata_json ? metadata_json : "{}");
	if (!node->kind || !node->name || !node->path || !node->metadata_json)
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	*id = node->id;
	trace->node_count++;
	return 0;
}

int weft__trace_set_node_metadata(weft_trace *trace, uint32_t id,
				  const char *metadata_json)
{
	const char *copy = weft__trace_strdup(trace, metadata_json);
	if (copy == NULL)
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	trace->nodes[id].metadata_json = copy;
	return 0;
}

int weft__trace_add_stream(weft_trace *trace, uint32_t node, const char *file,
			   uint64_t file_size, uint32_t *index)
{
	int rc = weft__array_grow((void **)&trace->streams, &trace->stream_cap,
		      trace->stream_count + 1, sizeof(weft_stream_info));
	if (rc < 0)
		return rc;
	weft_stream_info *s = &trace->streams[trace->stream_count];
	memset(s, 0, sizeof *s);
	s->index = (uint32_t)trace->stream_count;
	s->node = node;
	s->path = trace->nodes[node].path;
	s->file = weft__trace_strdup(trace, file);
	if (s->file == NULL)
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	s->file_size = file_size;
	trace->nodes[node].stream = (int32_t)s->index;
	*index = s->index;
	trace->stream_count++;
	return 0;
}

void weft__trace_diag(weft_trace *trace, int severity, int status,
		      const char *file, uint64_t offset, const char *fmt, ...)
{
	char message[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(message, sizeof message, fmt, ap);
	va_end(ap);
	weft__trace_diag_record(trace, NULL, WEFT__NO_STREAM, severity, status, file, offset,
				message);
}

int weft__trace_diag_record(weft_trace *trace, const char *key, uint32_t stream,
			    int severity, int status, const char *file, uint64_t offset,
			    const char *message)
{
	if (trace->diag_count >= DIAG_MAX ||
	    weft__array_grow((void **)&trace->diags, &trace->diag_cap,
		 trace->diag_count + 1, sizeof(weft_diag)) < 0 ||
	    weft__array_grow((void **)&trace->diag_origins, &trace->diag_origin_cap,
		 trace->diag_count + 1, sizeof *trace->diag_origins) < 0) {
		trace->diags_dropped++;
		return -1;
	}
	weft_diag *d = &trace->diags[trace->diag_count];
	d->severity = severity;
	d->status = status;
	d->file = file ? weft__trace_strdup(trace, file) : NULL;
	d->offset = offset;
	d->message = weft__trace_strdup(trace, message);
	const char *kept_key = key ? weft__trace_strdup(trace, key) : NULL;
	if (d->message == NULL || (key != NULL && kept_key == NULL)) {
		trace->diags_dropped++;
		return -1;
	}
	trace->diag_origins[trace->diag_count] = (weft__diag_origin){ kept_key, stream };
	trace->diag_count++;
	return 0;
}

char *weft__path_join(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	char *p = malloc(la + lb + 2);
	if (p == NULL)
		return NULL;
	memcpy(p, a, la);
	p[la] = '/';
	memcpy(p + la + 1, b, lb + 1);
	return p;
}

void weft__trace_diag_last_error(weft_trace *trace, int severity, int status,
				 const char *note)
{
	weft__trace_diag(trace, severity, status, weft__error_file(),
			 weft__error_offset(), "%s%s", weft__error_text(),
			 note ? note : "");
}
