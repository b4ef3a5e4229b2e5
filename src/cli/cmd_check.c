/* SPDX-License-Identifier: MIT */
/*
 * cli/cmd_check.c - `weft check`: reads a whole trace and lists what is
 * wrong with it, one "<file>:<offset>: <severity>: <message>" per
 * problem; exit 0 when clean, 1 when problems were found.
 *
 * What is looked at: every diagnostic the library records while opening
 * and reading (missing or conflicting metadata, unfinished streams,
 * truncated or malformed events, byte order, ...), payloads that do not
 * match their event's layout, clocks that go back outside unordered
 * regions (each stream in stored order), ovniemu's clock gate between the
 * first clocks of the streams, spans nested deeper than the viewers keep
 * (the view layer's limit, followed by a view that only tracks the
 * nesting), and with --sorted whether the unordered regions are sorted
 * (what ovniemu requires). Notes (layouts that differ from the signature
 * table but are kept whole) count only with --strict.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "outputs/view.h"
#include "weft/pallas_grammar.h"

enum check_option_id {
	OPT_SORTED = 100,
	OPT_STRICT
};

static const cli_option check_options[] = {
	CLI_COMMON_OPTIONS,
	{ "sorted", 0, 0, OPT_SORTED },
	{ "strict", 0, 0, OPT_STRICT },
	{ NULL, 0, 0, 0 }
};

/* What the options ask for. */
typedef struct check_settings {
	int want_sorted; /* --sorted */
	int strict;      /* --strict: notes are problems too */
} check_settings;

/* At most this many problems of one kind are listed per stream. */
#define MAX_REPORTS_PER_KIND 10

/* Usage text of `weft check --help`. */
static void print_check_help(void)
{
	printf("usage: weft check [OPTIONS] TRACE\n"
	       "\n"
	       "Reads every event of TRACE and prints one line per problem:\n"
	       "  <file>:<offset>: <severity>: <message>\n"
	       "(file relative to the trace root; no offset when the problem is not at\n"
	       "one place). Exit status 0 when the trace is clean, 1 otherwise. Notes\n"
	       "(severity \"note\": layouts real runtimes write that differ from the ovni\n"
	       "1.14 signature table, such as longer payloads, fully kept) are listed\n"
	       "but only count with --strict.\n"
	       "\n"
	       "Checks: metadata (missing, conflicting, unfinished streams, missing\n"
	       "loom_cpus), stream headers and byte order, truncated or malformed events,\n"
	       "payloads that do not match their event's signature, clocks going back\n"
	       "outside unordered regions, spans nested deeper than viewers keep (512\n"
	       "levels); ovni: what ovniemu refuses before emulating (first clocks of the\n"
	       "streams more than 1 h apart without clock offsets, CPUs of a loom with a\n"
	       "duplicated index or phyid).\n"
	       "\n"
	       "options:\n"
	       "  --sorted             also require sorted unordered regions (as ovniemu)\n"
	       "  --strict             count notes as problems\n"
	       "  --format NAME        auto (default), ovni, heph, ross, pallas\n"
	       "  --clock-offsets FILE ovnisync clock offsets\n"
	       "  -h, --help           this text\n"
	       "\n"
	       "example:\n"
	       "  weft check --sorted ovni/\n");
}

/* ---- The list of problems ----------------------------------------------------- */

typedef struct problem {
	uint32_t stream;   /* the stream it was found in (for ordering) */
	int severity;
	char *file;
	uint64_t offset;
	char *message;
} problem;

typedef struct problem_list {
	problem *items;
	size_t count, cap;
	int out_of_memory;
	uint32_t stream;   /* the stream problems are being found in */
} problem_list;

/* Appends a problem (the strings are copied). */
static void add_problem(problem_list *l, int severity, const char *file,
			uint64_t offset, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

/* (The message is formatted into a fixed buffer, then copied.) */
static void add_problem(problem_list *l, int severity, const char *file,
			uint64_t offset, const char *fmt, ...)
{
	char message[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(message, sizeof message, fmt, ap);
	va_end(ap);
	if (l->count == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 32;
		problem *bigger = realloc(l->items, cap * sizeof *bigger);
		if (bigger == NULL) {
			l->out_of_memory = 1;
			return;
		}
		l->items = bigger;
		l->cap = cap;
	}
	problem *p = &l->items[l->count];
	p->stream = l->stream;
	p->severity = severity;
	p->file = strdup(file ? file : "");
	p->offset = offset;
	p->message = strdup(message);
	if (p->file == NULL || p->message == NULL) {
		free(p->file);
		free(p->message);
		l->out_of_memory = 1;
		return;
	}
	l->count++;
}

/* Releases the problems and their strings. */
static void free_problems(problem_list *l)
{
	for (size_t i = 0; i < l->count; i++) {
		free(l->items[i].file);
		free(l->items[i].message);
	}
	free(l->items);
}

/*
 * 1 when the library already recorded a diagnostic for this place, so
 * that the same problem found by both is listed once.
 */
static int diag_exists_at(const weft_trace *trace, const char *file, uint64_t offset)
{
	size_t n = weft_trace_diag_count(trace);

	for (size_t i = 0; i < n; i++) {
		const weft_diag *d = weft_trace_diag(trace, i);
		if (d->offset == offset && d->file != NULL && strcmp(d->file, file) == 0)
			return 1;
	}
	return 0;
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
				 problem_list *problems)
{
	size_t n = view ? weft__view_too_deep(view, NULL, 0) : 0;
	weft__view_too_deep_timeline *t = n ? malloc(n * sizeof *t) : NULL;

	if (t == NULL) {
		problems->out_of_memory |= n > 0;
		return;
	}
	weft__view_too_deep(view, t, n);
	for (size_t i = 0; i < n; i++) {
		if (t[i].stream != info->index)
			continue;
		add_problem(problems, WEFT_SEV_WARNING, info->file, WEFT_NO_OFFSET,
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
	int ovni;                 /* OU[ .. OU] regions exist */
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
			  const weft_event *ev, problem_list *problems)
{
	int n = weft_event_fields(trace, ev, fields, cap);

	if (n >= 0)
		return;
	if (++*bad <= MAX_REPORTS_PER_KIND)
		add_problem(problems, WEFT_SEV_WARNING, info->file, ev->offset,
			    "payload of %.*s does not match its signature: %s",
			    (int)ev->code_len, ev->code,
			    cli_message_without_place(weft_last_error()));
}

/* 1 when the event code is exactly `code` (3-letter ovni MCVs). */
static int code_is(const weft_event *ev, const char *code)
{
	return ev->code_len == strlen(code) && memcmp(ev->code, code, ev->code_len) == 0;
}

/*
 * Clocks in stored order: outside unordered regions they must not go
 * back (checked against the last clock outside regions, the OU[ and OU]
 * included); inside, any order is allowed but noted as unsorted.
 */
static void check_clock(const weft_trace *trace, stream_check *sc,
			const weft_event *ev, problem_list *problems)
{
	int opens = sc->ovni && code_is(ev, "OU[");
	int closes = sc->ovni && code_is(ev, "OU]");

	if (sc->have_clock && ev->time < sc->last_any_clock && sc->unsorted++ == 0)
		sc->first_unsorted_offset = ev->offset;
	if (sc->region_depth == 0 || closes) {
		if (sc->have_clock && ev->time < sc->last_clock &&
		    ++sc->backwards <= MAX_REPORTS_PER_KIND &&
		    !diag_exists_at(trace, sc->info->file, ev->offset))
			add_problem(problems, WEFT_SEV_ERROR, sc->info->file, ev->offset,
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
				 problem_list *problems)
{
	if (bad > MAX_REPORTS_PER_KIND)
		add_problem(problems, WEFT_SEV_WARNING, info->file, WEFT_NO_OFFSET,
			    "%" PRIu64 " more payloads not matching their signature",
			    bad - MAX_REPORTS_PER_KIND);
}

/* Lines that say how many more problems of a kind were not listed. */
static void add_overflow_notes(stream_check *sc, problem_list *problems)
{
	if (sc->backwards > MAX_REPORTS_PER_KIND)
		add_problem(problems, WEFT_SEV_ERROR, sc->info->file, WEFT_NO_OFFSET,
			    "%" PRIu64 " more backward clocks not listed",
			    sc->backwards - MAX_REPORTS_PER_KIND);
	add_payload_overflow(sc->info, sc->bad_payloads, problems);
}

/*
 * A stream that could not be read: the place is taken from the library
 * message ("<file>: byte <offset>: ..."), and nothing is added when the
 * library already recorded a diagnostic for that place.
 */
static void add_read_failure(const weft_trace *trace, const char *file,
			     const char *what, problem_list *problems)
{
	const char *msg = weft_last_error();
	const char *text = cli_message_without_place(msg);
	const char *byte = strstr(msg, ": byte ");
	uint64_t offset = WEFT_NO_OFFSET;

	if (text != msg)
		offset = strtoull(byte + 7, NULL, 10);
	if (!diag_exists_at(trace, file, offset))
		add_problem(problems, WEFT_SEV_ERROR, file, offset, "%s: %s", what, text);
}

/* The first event of a stream (for the clock gate of ovni traces). */
typedef struct stream_start {
	int seen;
	uint64_t time;
	uint64_t offset;
} stream_start;

/*
 * Reads one stream through its own cursor. Returns the number of events
 * read; problems go to the list, the first event to *start (when given).
 */
static uint64_t check_stream(weft_trace *trace, uint32_t stream, int want_sorted,
			     stream_start *start, weft__view *nesting, problem_list *problems)
{
	stream_check sc;
	weft_cursor *cursor;
	const weft_event *ev;
	uint64_t events = 0;
	int rc;

	memset(&sc, 0, sizeof sc);
	problems->stream = stream;
	sc.info = weft_trace_stream(trace, stream);
	sc.ovni = weft_trace_format(trace) == WEFT_FORMAT_OVNI;
	rc = weft_cursor_create_stream(trace, stream, &cursor);
	if (rc < 0) {
		add_read_failure(trace, sc.info->file, "cannot read the stream", problems);
		return 0;
	}
	while ((rc = weft_cursor_next(cursor, &ev)) == 1) {
		if (start != NULL && !start->seen)
			*start = (stream_start){ 1, ev->time, ev->offset };
		check_payload(trace, sc.info, &sc.bad_payloads, sc.fields,
			      sizeof sc.fields / sizeof sc.fields[0], ev, problems);
		/* Heph stores an event when it ends: its clocks are not ordered. */
		if (sc.ovni)
			check_clock(trace, &sc, ev, problems);
		if (nesting != NULL)
			weft__view_nesting(nesting, ev);
		events++;
	}
	if (rc < 0)
		add_read_failure(trace, sc.info->file, "reading stopped", problems);
	weft_cursor_free(cursor);
	add_overflow_notes(&sc, problems);
	add_nesting_problems(nesting, sc.info, problems);
	if (want_sorted && sc.unsorted > 0)
		add_problem(problems, WEFT_SEV_ERROR, sc.info->file, sc.first_unsorted_offset,
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
static int sort_problems_by_stream(problem_list *l, size_t streams)
{
	size_t *start = calloc(streams + 1, sizeof *start);
	problem *sorted = malloc((l->count ? l->count : 1) * sizeof *sorted);
	if (start == NULL || sorted == NULL) {
		free(start);
		free(sorted);
		return -1;
	}
	for (size_t i = 0; i < l->count; i++)
		start[l->items[i].stream + 1]++;
	for (size_t s = 0; s < streams; s++)
		start[s + 1] += start[s];
	for (size_t i = 0; i < l->count; i++)
		sorted[start[l->items[i].stream]++] = l->items[i];
	free(l->items);
	free(start);
	l->items = sorted;
	l->cap = l->count ? l->count : 1;
	return 0;
}

/*
 * Formats whose merged cursor reads each file once (ROSS): every stream
 * in one pass, with a mismatch count per stream, then the problems in
 * stream order: the same lines as reading the streams one by one, for
 * one read of the files instead of one per stream. Returns the events
 * read.
 */
static uint64_t check_merged(weft_trace *trace, weft__view *nesting, problem_list *problems)
{
	size_t streams = weft_trace_stream_count(trace);
	uint64_t *bad = calloc(streams ? streams : 1, sizeof *bad);
	weft_field fields[32];
	weft_cursor *cursor;
	const weft_event *ev;
	uint64_t events = 0;

	if (bad == NULL || weft_cursor_create(trace, NULL, &cursor) < 0) {
		problems->stream = 0;
		add_read_failure(trace, weft_trace_path(trace),
				 bad == NULL ? "out of memory" : "cannot read the streams", problems);
		free(bad);
		return 0;
	}
	while (weft_cursor_next(cursor, &ev) == 1) {
		problems->stream = ev->stream;
		check_payload(trace, weft_trace_stream(trace, ev->stream), &bad[ev->stream],
			      fields, sizeof fields / sizeof fields[0], ev, problems);
		if (nesting != NULL)
			weft__view_nesting(nesting, ev);
		events++;
	}
	weft_cursor_free(cursor);
	for (size_t i = 0; i < streams; i++) {
		problems->stream = (uint32_t)i;
		add_payload_overflow(weft_trace_stream(trace, i), bad[i], problems);
		add_nesting_problems(nesting, weft_trace_stream(trace, i), problems);
	}
	free(bad);
	if (sort_problems_by_stream(problems, streams) < 0)
		problems->out_of_memory = 1;
	return events;
}

/* ---- Whole trace --------------------------------------------------------------------- */

/* ovniemu's bound between the first clocks of the streams: one hour. */
#define CLOCK_GATE_NS (3600ull * 1000000000ull)

/*
 * The clock gate ovniemu checks before emulating: the first clock of each
 * stream (clock offsets applied) within one hour of that of the first
 * stream (in path order) that has events; otherwise the looms need the
 * clock offsets of ovnisync ("detected large clock gate").
 */
static void check_clock_gate(const weft_trace *trace, const stream_start *starts,
			     problem_list *problems)
{
	size_t n = weft_trace_stream_count(trace);
	size_t first = SIZE_MAX;

	for (size_t i = 0; i < n; i++)
		if (starts[i].seen && (first == SIZE_MAX ||
		    strcmp(weft_trace_stream(trace, i)->path,
			   weft_trace_stream(trace, first)->path) < 0))
			first = i;
	for (size_t i = 0; first != SIZE_MAX && i < n; i++) {
		uint64_t a = starts[i].time, b = starts[first].time;
		uint64_t delta = a > b ? a - b : b - a;
		if (!starts[i].seen || delta <= CLOCK_GATE_NS)
			continue;
		problems->stream = (uint32_t)i;
		add_problem(problems, WEFT_SEV_ERROR, weft_trace_stream(trace, i)->file,
			    starts[i].offset, "first clock %" PRIu64 " is %.2f h from the "
			    "first clock of %s (more than 1 h): ovniemu refuses the trace "
			    "(\"detected large clock gate\") unless clock offsets align the "
			    "looms (ovnisync's clock-offsets.txt, --clock-offsets)",
			    a, (double)delta / 3.6e12, weft_trace_stream(trace, first)->path);
	}
}

/* --sorted: what weft_ovni_sort() would do, as one trace-level problem. */
static void check_sorted(const char *path, problem_list *problems)
{
	weft_ovni_sort_report report;
	int rc;

	memset(&report, 0, sizeof report);
	rc = weft_ovni_sort(path, 1, &report);
	if (rc < 0) {
		add_problem(problems, WEFT_SEV_ERROR, path, WEFT_NO_OFFSET,
			    "cannot check the unordered regions: %s", weft_last_error());
		return;
	}
	if (report.unsorted_streams > 0)
		add_problem(problems, WEFT_SEV_ERROR, path, WEFT_NO_OFFSET,
			    "%" PRIu64 " of %" PRIu64 " streams have unsorted unordered "
			    "regions (%" PRIu64 " regions, %" PRIu64 " events out of place)",
			    report.unsorted_streams, report.streams, report.regions,
			    report.moved_events);
}

/*
 * Diagnostics of the library first, then the problems found here.
 * Returns how many count as problems (notes only with --strict); *notes
 * gets the number of notes.
 */
static size_t print_problems(const weft_trace *trace, const problem_list *problems,
			     int strict, size_t *notes)
{
	size_t n = weft_trace_diag_count(trace);
	const char *root = weft_trace_path(trace);

	*notes = 0;
	for (size_t i = 0; i < n; i++) {
		const weft_diag *d = weft_trace_diag(trace, i);
		*notes += d->severity == WEFT_SEV_NOTE;
		cli_print_diag(stdout, d, root);
	}
	for (size_t i = 0; i < problems->count; i++) {
		const problem *p = &problems->items[i];
		weft_diag d = { p->severity, 0, p->file, p->offset, p->message };
		cli_print_diag(stdout, &d, root);
	}
	return n - (strict ? 0 : *notes) + problems->count;
}

/*
 * An open that failed on malformed data is a finding, not a usage error:
 * the library message "<file>: byte <offset>: <text>" becomes a problem
 * line "<file>:<offset>: error: <text>". A path that is no trace (missing,
 * of no format), that cannot be read (a failed system call) or a lack of
 * memory is a failure to open, as in every command.
 */
static int report_open_failure(const char *path, int status)
{
	const char *msg = weft_last_error();
	const char *byte = strstr(msg, ": byte ");
	uint64_t offset;
	char rest[1024];

	if (status == WEFT_ENOTFOUND || status == WEFT_EIO || status == WEFT_EINVAL ||
	    status == WEFT_ENOMEM) {
		fprintf(stderr, "weft check: cannot open '%s': %s\n", path,
			cli_message_about(path, status));
		return CLI_EXIT_FAILURE;
	}
	if (byte != NULL && sscanf(byte, ": byte %" SCNu64 ": %1023[^\n]", &offset, rest) == 2)
		printf("%.*s:%" PRIu64 ": error: %s\n", (int)(byte - msg), msg, offset, rest);
	else
		printf("%s: error: %s\n", path, msg[0] ? msg : weft_strerror(status));
	return CLI_EXIT_PROBLEMS;
}

/*
 * Opens in stored order, reads every stream, prints the problems and a
 * summary line; the exit code says whether anything was found.
 */
static int run_check(cli_common *common, const check_settings *set)
{
	int want_sorted = set->want_sorted;
	weft_trace *trace;
	problem_list problems;
	uint64_t events = 0;

	common->open.stored_order = 1; /* clocks are checked as stored */
	int rc = weft_trace_open(common->trace_path, &common->open, &trace);
	if (rc < 0)
		return report_open_failure(common->trace_path, rc);
	memset(&problems, 0, sizeof problems);
	size_t streams = weft_trace_stream_count(trace);
	weft__view *nesting = nesting_view(trace);
	if (weft_trace_file_order_default(trace))
		events = check_merged(trace, nesting, &problems);
	int ovni = weft_trace_format(trace) == WEFT_FORMAT_OVNI;
	stream_start *starts = ovni ? calloc(streams ? streams : 1, sizeof *starts) : NULL;
	if (ovni && starts == NULL)
		problems.out_of_memory = 1;
	for (size_t i = 0; !weft_trace_file_order_default(trace) && i < streams; i++)
		events += check_stream(trace, (uint32_t)i, want_sorted,
				       starts ? &starts[i] : NULL, nesting, &problems);
	weft__view_free(nesting);
	if (starts != NULL)
		check_clock_gate(trace, starts, &problems);
	free(starts);
	if (want_sorted && weft_trace_format(trace) == WEFT_FORMAT_OVNI)
		check_sorted(common->trace_path, &problems);
	if (weft_trace_format(trace) == WEFT_FORMAT_PALLAS)
		weft_pallas_check(trace); /* what Pallas 0.20 cannot read: diagnostics */
	size_t notes;
	size_t found = print_problems(trace, &problems, set->strict, &notes);
	if (problems.out_of_memory)
		fprintf(stderr, "weft check: out of memory: some problems are not listed\n");
	if (found == 0 && notes > 0)
		printf("ok: %zu streams, %" PRIu64 " events, no problems (%zu note%s, "
		       "counted with --strict)\n", streams, events, notes, notes == 1 ? "" : "s");
	else if (found == 0)
		printf("ok: %zu streams, %" PRIu64 " events, no problems\n", streams, events);
	else
		printf("%zu problems in %zu streams, %" PRIu64 " events\n", found, streams, events);
	free_problems(&problems);
	weft_trace_free(trace);
	return found == 0 ? CLI_EXIT_OK : CLI_EXIT_PROBLEMS;
}

/* Entry of `weft check`: options, then the check. */
int cli_cmd_check(int argc, char **argv)
{
	cli_parser parser;
	cli_common common;
	check_settings set = { 0, 0 };
	const char *value;
	int id;

	cli_common_init(&common);
	cli_parser_init(&parser, "check", argc, argv, check_options);
	while ((id = cli_next_option(&parser, &value)) != 0) {
		if (id < 0)
			return CLI_EXIT_FAILURE;
		if (id == CLI_OPT_HELP) {
			print_check_help();
			return CLI_EXIT_OK;
		}
		if (id == OPT_SORTED)
			set.want_sorted = 1;
		else if (id == OPT_STRICT)
			set.strict = 1;
		else if (cli_common_option(&common, "check", id, value) != 1)
			return CLI_EXIT_FAILURE;
	}
	if (cli_take_trace_path(&common, &parser) < 0)
		return CLI_EXIT_FAILURE;
	return run_check(&common, &set);
}
