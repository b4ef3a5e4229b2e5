/* SPDX-License-Identifier: MIT */
/*
 * analysis/check.c - weft_trace_check(): reads a whole trace and lists
 * what is wrong with it (what `weft check` prints), for every format.
 *
 * What is looked at here: payloads that do not match their event's
 * layout, clocks that go back outside unordered regions (each stream in
 * stored order, for the formats whose backend names such regions), spans
 * nested deeper than the viewers keep (the view layer's limit, followed
 * by a view that only tracks the nesting) and streams that cannot be read
 * further. What only a format knows (ovniemu's clock gate, sorted
 * regions, what Pallas 0.20 cannot read) comes from its backend's check
 * hooks (weft__check_hooks), called after the events were read; with
 * `models`, what the emulation of an ovni trace refuses (weft/emu.h).
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "outputs/view.h"

/* At most this many problems of one kind are listed per stream. */
#define MAX_REPORTS_PER_KIND 10

/* One problem and the stream it was found in (for ordering). */
typedef struct problem {
	uint32_t stream;
	weft_diag diag;   /* file and message owned */
} problem;

struct weft_check_report {
	weft__check_sink sink; /* first: the backends' hooks add through it */
	problem *items;
	size_t count, cap;
	int out_of_memory;
	uint32_t stream;       /* the stream problems are being found in */
	uint64_t events;
	weft_trace *trace;
};

void weft_check_options_init(weft_check_options *options)
{
	memset(options, 0, sizeof *options);
}

/* ---- The list of problems ----------------------------------------------------- */

/* Appends a problem of stream `stream` (the strings are copied). */
static void append_problem(weft_check_report *r, uint32_t stream, int severity, int status,
			   const char *file, uint64_t offset, const char *message)
{
	if (weft__array_grow((void **)&r->items, &r->cap, r->count + 1, sizeof *r->items) < 0) {
		r->out_of_memory = 1;
		return;
	}
	problem *p = &r->items[r->count];
	char *file_copy = strdup(file ? file : "");
	char *message_copy = strdup(message);
	if (file_copy == NULL || message_copy == NULL) {
		free(file_copy);
		free(message_copy);
		r->out_of_memory = 1;
		return;
	}
	p->stream = stream;
	p->diag = (weft_diag){ severity, status, file_copy, offset, message_copy };
	r->count++;
}

/* The sink the backends' check hooks add through. */
static void sink_add(weft__check_sink *sink, uint32_t stream, int severity, int status,
		     const char *file, uint64_t offset, const char *message)
{
	append_problem((weft_check_report *)sink, stream, severity, status, file, offset,
		       message);
}

/* Appends a problem of the current stream, formatted. */
static void add_problem(weft_check_report *r, int severity, int status, const char *file,
			uint64_t offset, const char *fmt, ...) WEFT_PRINTF(6, 7);

/* (The message is formatted into a fixed buffer, then copied.) */
static void add_problem(weft_check_report *r, int severity, int status, const char *file,
			uint64_t offset, const char *fmt, ...)
{
	char message[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(message, sizeof message, fmt, ap);
	va_end(ap);
	append_problem(r, r->stream, severity, status, file, offset, message);
}

void weft_check_report_free(weft_check_report *report)
{
	if (report == NULL)
		return;
	for (size_t i = 0; i < report->count; i++) {
		free((char *)report->items[i].diag.file);
		free((char *)report->items[i].diag.message);
	}
	free(report->items);
	free(report);
}

uint64_t weft_check_report_events(const weft_check_report *report)
{
	return report->events;
}

size_t weft_check_report_count(const weft_check_report *report)
{
	return report->count;
}

const weft_diag *weft_check_report_problem(const weft_check_report *report, size_t i)
{
	return i < report->count ? &report->items[i].diag : NULL;
}

int weft_check_report_incomplete(const weft_check_report *report)
{
	return report->out_of_memory;
}

/*
 * 1 when the library already recorded a diagnostic for this place, so
 * that the same problem found by both is listed once.
 */
static int diag_exists_at(const weft_trace *trace, const char *file, uint64_t offset)
{
	for (size_t i = 0; i < trace->diag_count; i++) {
		const weft_diag *d = &trace->diags[i];
		if (d->offset == offset && d->file != NULL && strcmp(d->file, file) == 0)
			return 1;
	}
	return 0;
}

/*
 * The last error's text without its place "<file>: byte <offset>: "
 * when it has both (the problem line shows the place), else whole.
 */
static const char *error_text_without_place(void)
{
	if (weft__error_file() != NULL && weft__error_offset() != WEFT_NO_OFFSET)
		return weft__error_text();
	return weft_last_error();
}

/* ---- Nesting ---------------------------------------------------------------------- */

/* A view without output: it only follows the spans' nesting. */
static void no_track(void *ctx, const weft__view_track *t)
{
	(void)ctx;
	(void)t;
}

static const weft__view_sink no_output = { NULL, no_track, NULL, NULL, NULL, NULL, NULL };

/* The view that follows the nesting of every stream; NULL without memory. */
static weft__view *nesting_view(const weft_trace *trace)
{
	weft__view *view = NULL;

	return weft__view_create(trace, NULL, &no_output, &view) == 0 ? view : NULL;
}

/*
 * Timelines of `stream` whose spans nest deeper than the viewers keep:
 * a warning each (the trace is valid; its viewers lose spans, and `weft
 * convert` fails unless --allow-loss).
 */
static void add_nesting_problems(weft__view *view, const weft_stream_info *info,
				 weft_check_report *r)
{
	size_t n = view ? weft__view_too_deep(view, NULL, 0) : 0;
	weft__view_too_deep_timeline *t = n ? malloc(n * sizeof *t) : NULL;

	if (t == NULL) {
		r->out_of_memory |= n > 0;
		return;
	}
	weft__view_too_deep(view, t, n);
	for (size_t i = 0; i < n; i++) {
		if (t[i].stream != info->index)
			continue;
		add_problem(r, WEFT_SEV_WARNING, WEFT_EUNSUPPORTED, info->file, WEFT_NO_OFFSET,
			    "spans nest %" PRIu64 " deep on %s%s%s: viewers keep %d levels, "
			    "%" PRIu64 " span(s) past them ('weft convert' fails unless "
			    "--allow-loss)", t[i].deepest,
			    t[i].channel ? "timeline '" : "the stream's own timeline",
			    t[i].channel ? t[i].channel : "", t[i].channel ? "'" : "",
			    WEFT__VIEW_MAX_DEPTH, t[i].lost);
	}
	free(t);
}

/* ---- Reading one stream ---------------------------------------------------------- */

/* What is followed while one stream is read in stored order. */
typedef struct stream_check {
	const weft_stream_info *info;
	const weft__check_hooks *hooks; /* clocks checked when it names regions */
	size_t open_len, close_len; /* strlen of the hooks' region markers */
	int region_depth;         /* inside unordered regions */
	int have_clock;
	uint64_t last_clock;      /* last clock outside regions */
	uint64_t last_any_clock;  /* last clock, regions included */
	uint64_t backwards, bad_payloads, unsorted;
	uint64_t first_unsorted_offset;
	weft_field fields[32];
} stream_check;

/*
 * Payload against its layout (weft_event_fields() < 0 means mismatch);
 * *bad counts the mismatches of the stream, the first few are listed.
 */
static void check_payload(const weft_trace *trace, const weft_stream_info *info,
			  uint64_t *bad, weft_field *fields, size_t cap,
			  const weft_event *ev, weft_check_report *r)
{
	int n = weft_event_fields(trace, ev, fields, cap);

	if (n >= 0)
		return;
	if (++*bad <= MAX_REPORTS_PER_KIND)
		add_problem(r, WEFT_SEV_WARNING, n, info->file, ev->offset,
			    "payload of %.*s does not match its signature: %s",
			    (int)ev->code_len, ev->code, error_text_without_place());
}

/*
 * 1 when the event code is exactly `code` (`len` bytes). Called twice per
 * event with markers of a few bytes: compared here, not by a memcmp call.
 */
static inline int code_is(const weft_event *ev, const char *code, size_t len)
{
	if (ev->code_len != len)
		return 0;
	for (size_t i = 0; i < len; i++)
		if (ev->code[i] != code[i])
			return 0;
	return 1;
}

/*
 * Clocks in stored order: outside unordered regions they must not go
 * back (checked against the last clock outside regions, the markers that
 * open and close them included); inside, any order is allowed but noted
 * as unsorted.
 */
static void check_clock(const weft_trace *trace, stream_check *sc,
			const weft_event *ev, weft_check_report *r)
{
	int opens = code_is(ev, sc->hooks->region_open, sc->open_len);
	int closes = code_is(ev, sc->hooks->region_close, sc->close_len);

	if (sc->have_clock && ev->time < sc->last_any_clock && sc->unsorted++ == 0)
		sc->first_unsorted_offset = ev->offset;
	if (sc->region_depth == 0 || closes) {
		if (sc->have_clock && ev->time < sc->last_clock &&
		    ++sc->backwards <= MAX_REPORTS_PER_KIND &&
		    !diag_exists_at(trace, sc->info->file, ev->offset))
			add_problem(r, WEFT_SEV_ERROR, WEFT_EFORMAT, sc->info->file, ev->offset,
				    "clock goes backwards outside an unordered region: "
				    "%" PRIu64 " after %" PRIu64, ev->time, sc->last_clock);
		sc->last_clock = ev->time;
	}
	if (opens)
		sc->region_depth++;
	else if (closes && sc->region_depth > 0)
		sc->region_depth--;
	sc->last_any_clock = ev->time;
	sc->have_clock = 1;
}

/* The line that says how many more payload mismatches were not listed. */
static void add_payload_overflow(const weft_stream_info *info, uint64_t bad,
				 weft_check_report *r)
{
	if (bad > MAX_REPORTS_PER_KIND)
		add_problem(r, WEFT_SEV_WARNING, WEFT_EFORMAT, info->file, WEFT_NO_OFFSET,
			    "%" PRIu64 " more payloads not matching their signature",
			    bad - MAX_REPORTS_PER_KIND);
}

/* Lines that say how many more problems of a kind were not listed. */
static void add_overflow_notes(stream_check *sc, weft_check_report *r)
{
	if (sc->backwards > MAX_REPORTS_PER_KIND)
		add_problem(r, WEFT_SEV_ERROR, WEFT_EFORMAT, sc->info->file, WEFT_NO_OFFSET,
			    "%" PRIu64 " more backward clocks not listed",
			    sc->backwards - MAX_REPORTS_PER_KIND);
	add_payload_overflow(sc->info, sc->bad_payloads, r);
}

/*
 * A stream that could not be read (status `rc`): the place is the last
 * error's, and nothing is added when the library already recorded a
 * diagnostic for that place.
 */
static void add_read_failure(weft_check_report *r, int rc, const char *file,
			     const char *what)
{
	const char *text = error_text_without_place();
	uint64_t offset = text != weft_last_error() ? weft__error_offset() : WEFT_NO_OFFSET;

	if (!diag_exists_at(r->trace, file, offset))
		add_problem(r, WEFT_SEV_ERROR, rc, file, offset, "%s: %s", what, text);
}

/*
 * Reads one stream through its own cursor; problems go to the report,
 * the first event to *start. Returns the number of events read.
 */
static uint64_t check_stream(weft_check_report *r, uint32_t stream, int want_sorted,
			     weft__stream_start *start, weft__view *nesting)
{
	weft_trace *trace = r->trace;
	const weft__check_hooks *hooks = trace->backend->check;
	stream_check sc;
	weft_cursor *cursor;
	const weft_event *ev;
	uint64_t events = 0;
	int rc;

	memset(&sc, 0, sizeof sc);
	r->stream = stream;
	sc.info = weft_trace_stream(trace, stream);
	sc.hooks = hooks != NULL && hooks->region_open != NULL ? hooks : NULL;
	if (sc.hooks != NULL) {
		sc.open_len = strlen(hooks->region_open);
		sc.close_len = hooks->region_close != NULL ? strlen(hooks->region_close) : 0;
	}
	rc = weft_cursor_create_stream(trace, stream, &cursor);
	if (rc < 0) {
		add_read_failure(r, rc, sc.info->file, "cannot read the stream");
		return 0;
	}
	while ((rc = weft_cursor_next(cursor, &ev)) == 1) {
		if (start != NULL && !start->seen)
			*start = (weft__stream_start){ 1, ev->time, ev->offset };
		check_payload(trace, sc.info, &sc.bad_payloads, sc.fields,
			      sizeof sc.fields / sizeof sc.fields[0], ev, r);
		if (sc.hooks != NULL)
			check_clock(trace, &sc, ev, r);
		if (nesting != NULL)
			weft__view_nesting(nesting, ev);
		events++;
	}
	if (rc < 0)
		add_read_failure(r, rc, sc.info->file, "reading stopped");
	weft_cursor_free(cursor);
	add_overflow_notes(&sc, r);
	add_nesting_problems(nesting, sc.info, r);
	if (want_sorted && sc.unsorted > 0)
		add_problem(r, WEFT_SEV_ERROR, WEFT_EFORMAT, sc.info->file,
			    sc.first_unsorted_offset,
			    "stream not sorted: the clock goes back %" PRIu64 " time%s "
			    "(first here; 'weft sort' sorts the unordered regions)",
			    sc.unsorted, sc.unsorted == 1 ? "" : "s");
	return events;
}

/* ---- All streams in one pass ------------------------------------------------------ */

/*
 * Orders the problems by stream, keeping their order within a stream (a
 * counting sort: stable, one pass), as if the streams had been read one
 * after the other.
 */
static int sort_problems_by_stream(weft_check_report *r, size_t streams)
{
	size_t *start = calloc(streams + 1, sizeof *start);
	problem *sorted = malloc((r->count ? r->count : 1) * sizeof *sorted);
	if (start == NULL || sorted == NULL) {
		free(start);
		free(sorted);
		return -1;
	}
	for (size_t i = 0; i < r->count; i++)
		start[r->items[i].stream + 1]++;
	for (size_t s = 0; s < streams; s++)
		start[s + 1] += start[s];
	for (size_t i = 0; i < r->count; i++)
		sorted[start[r->items[i].stream]++] = r->items[i];
	free(r->items);
	free(start);
	r->items = sorted;
	r->cap = r->count ? r->count : 1;
	return 0;
}

/* The problems of a report, for the report of another thread or rank. */
static void pack_problems(weft__pack *p, const weft_check_report *r)
{
	for (size_t i = 0; i < r->count; i++) {
		const problem *q = &r->items[i];
		weft__pack_u64(p, q->stream);
		weft__pack_u64(p, (uint64_t)(int64_t)q->diag.severity);
		weft__pack_u64(p, (uint64_t)(int64_t)q->diag.status);
		weft__pack_text(p, q->diag.file);
		weft__pack_u64(p, q->diag.offset);
		weft__pack_text(p, q->diag.message);
	}
}

/* One packed problem, its texts in the pack: 0, or -1 (u->bad set). */
static int unpack_problem(weft__unpack *u, size_t streams, problem *q)
{
	uint64_t stream = weft__unpack_u64(u);
	q->diag.severity = (int)(int64_t)weft__unpack_u64(u);
	q->diag.status = (int)(int64_t)weft__unpack_u64(u);
	q->diag.file = weft__unpack_text(u);
	q->diag.offset = weft__unpack_u64(u);
	q->diag.message = weft__unpack_text(u);
	q->stream = (uint32_t)stream;
	if (u->bad || stream >= streams) {
		u->bad = 1;
		return -1;
	}
	return 0;
}

/*
 * The payload checks of every event of one merged pass (of this rank's
 * pieces when `pieces`), with a mismatch count per stream in `bad`, and
 * the nesting of its spans when `nesting` is given. Returns the events
 * read.
 */
static uint64_t check_pass(weft_check_report *r, weft__view *nesting, int pieces, uint64_t *bad)
{
	weft_trace *trace = r->trace;
	weft_field fields[32];
	weft_cursor *cursor;
	const weft_event *ev;
	uint64_t events = 0;
	int rc = pieces ? weft__cursor_create_pieces(trace, NULL, &cursor)
		 : weft_cursor_create(trace, NULL, &cursor);
	if (rc < 0) {
		r->stream = 0;
		add_read_failure(r, rc, weft_trace_path(trace), "cannot read the streams");
		return 0;
	}
	while (weft_cursor_next(cursor, &ev) == 1) {
		r->stream = ev->stream;
		check_payload(trace, weft_trace_stream(trace, ev->stream), &bad[ev->stream],
			      fields, sizeof fields / sizeof fields[0], ev, r);
		if (nesting != NULL)
			weft__view_nesting(nesting, ev);
		events++;
	}
	weft_cursor_free(cursor);
	return events;
}

/* The lines that end each stream's problems, then the problems in stream order. */
static void end_streams(weft_check_report *r, weft__view *nesting, const uint64_t *bad)
{
	size_t streams = weft_trace_stream_count(r->trace);
	for (size_t i = 0; i < streams; i++) {
		r->stream = (uint32_t)i;
		add_payload_overflow(weft_trace_stream(r->trace, i), bad[i], r);
		add_nesting_problems(nesting, weft_trace_stream(r->trace, i), r);
	}
	if (sort_problems_by_stream(r, streams) < 0)
		r->out_of_memory = 1;
}

/*
 * Formats whose merged cursor reads each file once (ROSS): every stream
 * in one pass, with a mismatch count per stream, then the problems in
 * stream order: the same lines as reading the streams one by one, for
 * one read of the files instead of one per stream. Returns the events
 * read.
 */
static uint64_t check_merged(weft_check_report *r, weft__view *nesting)
{
	size_t streams = weft_trace_stream_count(r->trace);
	uint64_t *bad = calloc(streams ? streams : 1, sizeof *bad);
	if (bad == NULL) {
		r->stream = 0;
		weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
		add_read_failure(r, WEFT_ENOMEM, weft_trace_path(r->trace), "out of memory");
		return 0;
	}
	uint64_t events = check_pass(r, nesting, 0, bad);
	end_streams(r, nesting, bad);
	free(bad);
	return events;
}

/* ---- Pieces of the files, on ranks ------------------------------------------------ */

/* What the ranks found in their pieces of the files (weft__dist_pieces). */
typedef struct check_pieces {
	weft_check_report *report;
	uint64_t *bad;    /* payloads not matching their signature, per stream */
	uint64_t *listed; /* rank 0: of which listed so far, per stream */
} check_pieces;

/* The events read, the mismatch counts, the problems. */
static void pack_pieces(weft__pack *p, const void *ctx)
{
	const check_pieces *c = ctx;
	const weft_check_report *r = c->report;
	weft__pack_u64(p, r->events);
	weft__pack_u64(p, (uint64_t)r->out_of_memory);
	for (size_t i = 0; i < weft_trace_stream_count(r->trace); i++) {
		if (c->bad[i] == 0)
			continue;
		weft__pack_u64(p, i);
		weft__pack_u64(p, c->bad[i]);
	}
	weft__pack_u64(p, UINT64_MAX); /* the end of the counts */
	pack_problems(p, r);
}

/*
 * Rank 0: another rank's findings, in rank order (the order of the
 * pieces in the files): its mismatches added to the counts, and listed
 * while the stream has fewer than one pass lists.
 */
static int merge_pieces(void *ctx, weft__unpack *u)
{
	check_pieces *c = ctx;
	weft_check_report *r = c->report;
	size_t streams = weft_trace_stream_count(r->trace);
	r->events += weft__unpack_u64(u);
	r->out_of_memory |= weft__unpack_u64(u) != 0;
	for (uint64_t i; !u->bad && (i = weft__unpack_u64(u)) != UINT64_MAX;) {
		uint64_t bad = weft__unpack_u64(u);
		if (i >= streams) {
			u->bad = 1;
			break;
		}
		c->bad[i] += bad;
	}
	while (!u->bad && u->pos < u->len) {
		problem q;
		if (unpack_problem(u, streams, &q) < 0)
			break;
		if (c->listed[q.stream]++ < MAX_REPORTS_PER_KIND)
			append_problem(r, q.stream, q.diag.severity, q.diag.status, q.diag.file,
				       q.diag.offset, q.diag.message);
	}
	return 0;
}

/* Frees the problems of a report (not the report). */
static void free_problems(weft_check_report *r)
{
	for (size_t i = 0; i < r->count; i++) {
		free((char *)r->items[i].diag.file);
		free((char *)r->items[i].diag.message);
	}
	free(r->items);
}

/* A thread's piece of the files (weft__pieces_run): its findings, packed. */
static int check_piece(weft_trace *handle, const uint8_t *selected, weft__pack *result,
		       void *arg)
{
	(void)selected;
	(void)arg;
	size_t streams = weft_trace_stream_count(handle);
	weft_check_report r = { .sink.add = sink_add, .trace = handle };
	check_pieces c = { &r, calloc(streams ? streams : 1, sizeof *c.bad), NULL };
	if (c.bad == NULL)
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	r.events = check_pass(&r, NULL, 1, c.bad);
	pack_pieces(result, &c);
	free_problems(&r);
	free(c.bad);
	return 0;
}

/*
 * Every rank checks the events of its pieces; rank 0 takes the others'
 * findings and ends each stream as one pass does. Alone, threads check
 * the pieces (`threads` > 1) and this thread takes their findings so.
 * Formats read in pieces have no spans to nest (ROSS: points and
 * samples). 0, or an error every rank returns.
 */
static int check_in_pieces(weft_check_report *r, int threads)
{
	weft_trace *trace = r->trace;
	size_t streams = weft_trace_stream_count(trace), diags = weft_trace_diag_count(trace);
	check_pieces c = { r, calloc(streams ? streams : 1, sizeof *c.bad),
			   calloc(streams ? streams : 1, sizeof *c.listed) };
	int rc = c.bad != NULL && c.listed != NULL ? 0
		 : weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	if (rc == 0 && threads > 1)
		rc = weft__pieces_run(trace, threads, check_piece, NULL, merge_pieces, &c);
	else if (rc == 0)
		r->events = check_pass(r, NULL, 1, c.bad);
	for (size_t i = 0; rc == 0 && threads <= 1 && i < r->count; i++)
		c.listed[r->items[i].stream]++;
	if (weft__dist_active(trace))
		rc = weft__dist_combine(trace, rc, diags, pack_pieces, merge_pieces, &c);
	if (rc == 0 && weft__dist_root(trace))
		end_streams(r, NULL, c.bad);
	weft__trace_diags_sort(trace, diags);
	free(c.bad);
	free(c.listed);
	return rc;
}

/* ---- The emulation (models) ---------------------------------------------------------- */

/* The emulator's diagnostics as problems: warnings become notes. */
static void add_emu_diags(weft_check_report *r, const weft_emu *e)
{
	for (size_t i = 0; i < weft_emu_diag_count(e); i++) {
		const weft_diag *d = weft_emu_diag(e, i);
		uint64_t times = weft_emu_diag_repeats(e, i);
		int severity = d->severity == WEFT_SEV_ERROR ? WEFT_SEV_ERROR : WEFT_SEV_NOTE;
		if (times > 1)
			add_problem(r, severity, d->status, d->file, d->offset,
				    "%s (%" PRIu64 " times)", d->message, times);
		else
			append_problem(r, 0, severity, d->status, d->file, d->offset, d->message);
	}
}

/*
 * Runs the emulation of the trace's models to its end (its changes are
 * dropped) and adds what it found: a refusal at load, the rule an event
 * broke, the end checks' errors, its warnings; a reading error that
 * stopped it.
 */
static void check_models(weft_check_report *r, const weft_check_options *options)
{
	weft_emu_options eo;
	weft_emu *e;
	const weft_emu_change *c;

	weft_emu_options_init(&eo);
	eo.all_models = options->all_models;
	r->stream = 0;
	int rc = weft_emu_create(r->trace, &eo, &e);
	if (rc < 0) {
		add_problem(r, WEFT_SEV_ERROR, rc, weft_last_error_file(), weft_last_error_offset(),
			    "%s%s", rc == WEFT_EFORMAT ? "" : "cannot emulate the trace: ",
			    weft_last_error_text());
		return;
	}
	while ((rc = weft_emu_next(e, &c)) == 1)
		;
	add_emu_diags(r, e);
	if (rc < 0 && rc != WEFT_EFORMAT)
		add_problem(r, WEFT_SEV_ERROR, rc, weft_last_error_file(), weft_last_error_offset(),
			    "the emulation stopped: %s", weft_last_error_text());
	weft_emu_free(e);
}

/* ---- Shared among threads and ranks ----------------------------------------------- */

/* The streams of `selected` (NULL: all), each read alone, into `r`. */
static void check_streams(weft_check_report *r, const uint8_t *selected, int want_sorted,
			  weft__stream_start *starts)
{
	weft__view *nesting = nesting_view(r->trace);
	for (size_t i = 0; i < weft_trace_stream_count(r->trace); i++)
		if (selected == NULL || selected[i])
			r->events += check_stream(r, (uint32_t)i, want_sorted,
						  starts ? &starts[i] : NULL, nesting);
	weft__view_free(nesting);
}

/* What a part found: where and what of a check, for the merge. */
typedef struct check_part {
	weft_check_report *report;
	weft__stream_start *starts; /* one per stream of the trace */
	const uint8_t *selected;    /* the part's streams (NULL: all) */
	int want_sorted;
} check_part;

/* The events read, the first event of each stream, the problems. */
static void pack_check(weft__pack *p, const void *ctx)
{
	const check_part *c = ctx;
	const weft_check_report *r = c->report;
	size_t streams = weft_trace_stream_count(r->trace);
	weft__pack_u64(p, r->events);
	weft__pack_u64(p, (uint64_t)r->out_of_memory);
	for (size_t i = 0; c->starts != NULL && i < streams; i++) {
		if ((c->selected != NULL && !c->selected[i]) || !c->starts[i].seen)
			continue;
		weft__pack_u64(p, i);
		weft__pack_u64(p, c->starts[i].time);
		weft__pack_u64(p, c->starts[i].offset);
	}
	weft__pack_u64(p, UINT64_MAX); /* the end of the starts */
	pack_problems(p, r);
}

/* Adds another part's findings to the report (the starts of its streams). */
static int merge_check(void *ctx, weft__unpack *u)
{
	check_part *c = ctx;
	weft_check_report *r = c->report;
	size_t streams = weft_trace_stream_count(r->trace);
	r->events += weft__unpack_u64(u);
	r->out_of_memory |= weft__unpack_u64(u) != 0;
	for (uint64_t i; !u->bad && (i = weft__unpack_u64(u)) != UINT64_MAX;) {
		uint64_t time = weft__unpack_u64(u), offset = weft__unpack_u64(u);
		if (i >= streams) {
			u->bad = 1;
			break;
		}
		if (c->starts != NULL)
			c->starts[i] = (weft__stream_start){ 1, time, offset };
	}
	while (!u->bad && u->pos < u->len) {
		problem q;
		if (unpack_problem(u, streams, &q) < 0)
			break;
		append_problem(r, q.stream, q.diag.severity, q.diag.status, q.diag.file,
			       q.diag.offset, q.diag.message);
	}
	return 0;
}

/* A thread's part (weft__part_fn): its streams checked, packed. */
static int check_part_run(weft_trace *handle, const uint8_t *selected, weft__pack *result,
			  void *arg)
{
	const check_part *whole = arg;
	size_t streams = weft_trace_stream_count(handle);
	weft_check_report r = { .sink.add = sink_add, .trace = handle };
	check_part part = { &r, calloc(streams ? streams : 1, sizeof *part.starts), selected,
			    whole->want_sorted };
	if (part.starts == NULL)
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	check_streams(&r, selected, whole->want_sorted, part.starts);
	pack_check(result, &part);
	free_problems(&r);
	free(part.starts);
	return 0;
}

/*
 * Every stream of this process's share (weft/dist.h), by threads when
 * worth it, then (with a dist) every rank's findings on rank 0, in stream
 * order as one reader finds them. 0, or an error every rank returns.
 */
static int check_shared(weft_trace *trace, check_part *c, int threads_asked)
{
	size_t diags = weft_trace_diag_count(trace);
	const uint8_t *share = weft__dist_selected(trace);
	int rc = 0;
	c->selected = share;
	int threads = weft__parts_threads(trace, share, threads_asked, WEFT__WORK_LIGHT);
	if (threads <= 1)
		check_streams(c->report, share, c->want_sorted, c->starts);
	else
		rc = weft__parts_run(trace, share, threads, check_part_run, c, merge_check, c);
	if (weft__dist_active(trace))
		rc = weft__dist_combine(trace, rc, diags, pack_check, merge_check, c);
	if (rc == 0 && sort_problems_by_stream(c->report, weft_trace_stream_count(trace)) < 0)
		c->report->out_of_memory = 1;
	weft__trace_diags_sort(trace, diags);
	return rc;
}

/* ---- Whole trace --------------------------------------------------------------------- */

/*
 * Every stream (one merged pass for the formats that read whole files),
 * then the format's own checks of the whole trace.
 */
static int check_run(weft_trace *trace, const weft_check_options *options,
		     weft_check_report **out)
{
	weft_check_options defaults;
	weft_check_report *r = calloc(1, sizeof *r);
	size_t streams = weft_trace_stream_count(trace);
	const weft__check_hooks *hooks = trace->backend->check;
	weft__stream_start *starts = NULL;

	*out = NULL;
	if (r == NULL)
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET,
				   "out of memory for the report of a check");
	if (options == NULL) {
		weft_check_options_init(&defaults);
		options = &defaults;
	}
	if (options->models && weft_trace_format(trace) != WEFT_FORMAT_OVNI) {
		free(r);
		return weft__error(WEFT_EINVAL, weft_trace_path(trace), WEFT_NO_OFFSET,
				   "only ovni traces have runtime models to emulate (this is a "
				   "%s trace)", weft_format_name(weft_trace_format(trace)));
	}
	r->sink.add = sink_add;
	r->trace = trace;
	int rc = 0;
	/* Rank 0's work alone under a dist: the files shared by the streams
	 * (weft_trace_share), the format's checks of the whole trace, the
	 * emulation. */
	int whole = weft__dist_root(trace);
	int threads = weft_trace_file_order_default(trace)
		      ? weft__pieces_threads(trace, options->threads, WEFT__WORK_LIGHT) : 1;
	if (weft_trace_file_order_default(trace) && (weft__dist_pieces(trace) > 0 || threads > 1)) {
		rc = check_in_pieces(r, threads);
	} else if (weft_trace_file_order_default(trace)) {
		weft__view *nesting = whole ? nesting_view(trace) : NULL;
		r->events = whole ? check_merged(r, nesting) : 0;
		weft__view_free(nesting);
	} else {
		starts = calloc(streams ? streams : 1, sizeof *starts);
		r->out_of_memory |= starts == NULL;
		check_part c = { r, starts, NULL, options->sorted };
		rc = check_shared(trace, &c, options->threads);
	}
	if (rc < 0) {
		free(starts);
		weft_check_report_free(r);
		return rc;
	}
	if (whole && hooks != NULL && hooks->trace_check != NULL)
		hooks->trace_check(trace, options, starts, &r->sink);
	free(starts);
	if (whole && options->models)
		check_models(r, options);
	*out = r;
	return 0;
}

/* The operation above, as a phase of the progress ("checking"). */
int weft_trace_check(weft_trace *trace, const weft_check_options *options,
		     weft_check_report **out)
{
	weft__progress_begin(trace, "checking");
	return weft__progress_end_with(trace, check_run(trace, options, out));
}
