/* SPDX-License-Identifier: MIT */
/*
 * test_output_writer.c - the writer of an output (weft/writer.h), fed by
 * the caller's cursors: for a trace of each input format and every output
 * of the registry (and chrome's Heph-compatible bytes), the events pushed
 * through the writer give byte for byte what weft_convert() writes (which
 * test_convert_api compares with `weft convert`), with the same report;
 * free without finish leaves no file and OUT as it was; the refusals (an
 * event of another trace, after finish, of an ended stream, out of time
 * order for pallas, of a stream the glob leaves out); a window's end in
 * time order; a reading that stopped early.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "testutil.h"
#include "weft/weft.h"

static char *dir;

/* The traces written: one per input format. */
static const char *const traces[] = {
	"ovni/v3/nosv-parallel-tasks/ovni",
	"heph/heph_sample.bin.log",
	"ross/phold-gvt-pekplp/np2/ross-stats-gvt.bin",
	"pallas/weft_order/trace/main.pallas",
};
#define TRACE_COUNT (sizeof traces / sizeof traces[0])
#define OVNI 0
#define HEPH 1

/* Opens traces[i] with default options. */
static weft_trace *open_trace(size_t i)
{
	weft_trace *t = tu_open_data(traces[i], 0, NULL, NULL);
	REQUIRE(t != NULL);
	return t;
}

/* 1 when a report line contains `text`. */
static int said(const weft_convert_report *r, const char *text)
{
	return tu_said(r->messages, r->message_count, text);
}

/* Options for `output` into dir/<name> (paraver: the .prv name). */
static void options_for(weft_convert_options *o, char *out, size_t size, const char *name,
			const char *output)
{
	snprintf(out, size, "%s/%s%s", dir, name, strcmp(output, "paraver") == 0 ? ".prv" : "");
	weft_convert_options_init(o);
	o->output = output;
	o->path = out;
	o->emulate = WEFT_EMULATE_OFF; /* the generic mapping (emulation: test_emu_*) */
}

/*
 * Pushes up to `limit` events (0: all) of one cursor; returns how many
 * were taken. Stops at the writer's 1 (no more needed).
 */
static uint64_t push_cursor(weft_output_writer *w, weft_cursor *c, uint64_t limit)
{
	const weft_event *ev;
	uint64_t n = 0;
	int rc;

	while ((limit == 0 || n < limit) && (rc = weft_cursor_next(c, &ev)) == 1) {
		int taken = weft_output_writer_event(w, ev);
		CHECK(taken == 0 || taken == 1);
		n++;
		if (taken != 0)
			break;
	}
	return n;
}

/*
 * Feeds the writer as its order says: a merged cursor with its filter, or
 * (pallas, on formats that do not share files between streams) each
 * stream through its own cursor, ended before the next. `limit` events
 * per cursor at most (0: all).
 */
static void push_events(weft_trace *t, weft_output_writer *w, uint64_t limit)
{
	weft_filter f;
	weft_cursor *c = NULL;
	/* the directory outputs (pallas, otf2) are written a stream at a time */
	int by_stream = (weft_output_writer_output(w)->flags & WEFT_OUTPUT_DIRECTORY) &&
			!weft_trace_file_order_default(t);

	weft_output_writer_filter(w, &f);
	CHECK_EQ_I64(f.order, weft_output_writer_order(w));
	if (!by_stream) {
		REQUIRE(weft_cursor_create(t, &f, &c) == 0);
		push_cursor(w, c, limit);
		weft_cursor_free(c);
		return;
	}
	for (uint32_t i = 0; i < weft_trace_stream_count(t); i++) {
		REQUIRE(weft_cursor_create_stream_filtered(t, i, &f, &c) == 0);
		push_cursor(w, c, limit);
		weft_cursor_free(c);
		CHECK_EQ_I64(weft_output_writer_end_stream(w, i), 0);
	}
}

/* Two reports say the same lines and the same loss. */
static void same_report(const weft_convert_report *a, const weft_convert_report *b)
{
	CHECK_EQ_STR(a->output, b->output);
	CHECK_EQ_I64(a->data_lost, b->data_lost);
	CHECK_EQ_U64(a->events, b->events);
	CHECK_EQ_U64(a->message_count, b->message_count);
	for (size_t i = 0; i < a->message_count && i < b->message_count; i++)
		CHECK_EQ_STR(a->messages[i], b->messages[i]);
}

/* Two outputs of `output` are equal (paraver: its three files). */
static void same_output(const char *a, const char *b, const char *output)
{
	static const char *const parts[] = { ".prv", ".pcf", ".row" };
	char pa[4096], pb[4096];

	if (strcmp(output, "paraver") != 0) {
		tu_same_tree(a, b);
		return;
	}
	for (int i = 0; i < 3; i++) {
		snprintf(pa, sizeof pa, "%.*s%s", (int)strlen(a) - 4, a, parts[i]);
		snprintf(pb, sizeof pb, "%.*s%s", (int)strlen(b) - 4, b, parts[i]);
		tu_same_file(pa, pb);
	}
}

/* One output of one trace, through weft_convert() and through the writer. */
static void write_both(weft_trace *t, size_t ti, const char *output, int heph_compat)
{
	char name[64], out_call[4096], out_writer[4096];
	weft_convert_options o;
	weft_convert_report by_call, by_writer;
	weft_output_writer *w = NULL;

	snprintf(name, sizeof name, "t%zu.%s%s.call", ti, output, heph_compat ? ".compat" : "");
	options_for(&o, out_call, sizeof out_call, name, output);
	o.heph_compat = heph_compat;
	CHECK_EQ_I64(weft_convert(t, &o, &by_call), 0);

	snprintf(name, sizeof name, "t%zu.%s%s.writer", ti, output, heph_compat ? ".compat" : "");
	options_for(&o, out_writer, sizeof out_writer, name, output);
	o.heph_compat = heph_compat;
	REQUIRE(weft_output_writer_create(t, &o, &w) == 0);
	CHECK_EQ_STR(weft_output_writer_output(w)->name, output);
	push_events(t, w, 0);
	CHECK_EQ_I64(weft_output_writer_finish(w, &by_writer), 0);
	weft_output_writer_free(w);

	same_output(out_call, out_writer, output);
	same_report(&by_call, &by_writer);
	weft_convert_report_free(&by_call);
	weft_convert_report_free(&by_writer);
}

/* Every trace to every output: the writer writes what weft_convert() writes. */
static void test_same_bytes(void)
{
	for (size_t i = 0; i < TRACE_COUNT; i++) {
		weft_trace *t = open_trace(i);
		/* pallas: weft_convert() reads ROSS's streams 32 at a time from a
		 * merged cursor; one merged cursor is the same below 33 streams */
		CHECK(weft_trace_stream_count(t) <= 32);
		for (size_t k = 0; k < weft_output_count(); k++)
			write_both(t, i, weft_output_get(k)->name, 0);
		if (weft_trace_format(t) == WEFT_FORMAT_HEPH)
			write_both(t, i, "chrome", 1);
		weft_trace_free(t);
	}
}

/* The entries of a directory, "." and ".." left out. */
static int entry_count(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *e;
	int n = 0;

	REQUIRE(d != NULL);
	while ((e = readdir(d)) != NULL)
		n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
	closedir(d);
	return n;
}

/*
 * Free without finish, for every output: OUT missing stays missing, OUT
 * present (forced) stays as it was, and no temporary file is left.
 */
static void test_free_without_finish(void)
{
	char sub[4096], out[4096], keep[4096], name[64];
	weft_trace *t = open_trace(OVNI);
	weft_convert_options o;
	weft_convert_report r;
	weft_output_writer *w = NULL;
	struct stat st;

	for (size_t k = 0; k < weft_output_count(); k++) {
		const char *output = weft_output_get(k)->name;
		int files = strcmp(output, "paraver") == 0 ? 3 : 1;
		snprintf(sub, sizeof sub, "%s/free.%s", dir, output);
		REQUIRE(mkdir(sub, 0777) == 0);
		/* OUT missing */
		snprintf(name, sizeof name, "free.%s/new", output);
		options_for(&o, out, sizeof out, name, output);
		REQUIRE(weft_output_writer_create(t, &o, &w) == 0);
		push_events(t, w, 10);
		weft_output_writer_free(w);
		CHECK(stat(out, &st) != 0);
		CHECK_EQ_I64(entry_count(sub), 0);
		/* OUT present: replaced only by finish */
		snprintf(name, sizeof name, "free.%s/kept", output);
		options_for(&o, keep, sizeof keep, name, output);
		CHECK_EQ_I64(weft_convert(t, &o, &r), 0);
		weft_convert_report_free(&r);
		snprintf(name, sizeof name, "free.%s/old", output);
		options_for(&o, out, sizeof out, name, output);
		CHECK_EQ_I64(weft_convert(t, &o, &r), 0);
		weft_convert_report_free(&r);
		o.filter.code_pattern = "OH*"; /* other bytes than OUT's */
		o.force = 1;
		REQUIRE(weft_output_writer_create(t, &o, &w) == 0);
		push_events(t, w, 10);
		weft_output_writer_free(w);
		same_output(keep, out, output);
		CHECK_EQ_I64(entry_count(sub), 2 * files);
	}
	weft_trace_free(t);
}

/* The first event of `t` (merged, time order) of a stream >= `stream`. */
static int event_of_stream_from(weft_trace *t, uint32_t stream, weft_cursor **c,
				const weft_event **ev)
{
	REQUIRE(weft_cursor_create(t, NULL, c) == 0);
	while (weft_cursor_next(*c, ev) == 1)
		if ((*ev)->stream >= stream)
			return 1;
	return 0;
}

/* Events of another trace, after finish, of an ended stream: WEFT_EINVAL. */
static void test_refusals(void)
{
	char out[4096];
	weft_trace *heph = open_trace(HEPH), *ovni = open_trace(OVNI);
	weft_trace *small = heph, *big = ovni;
	weft_convert_options o;
	weft_convert_report r;
	weft_output_writer *w = NULL;
	weft_cursor *c = NULL;
	const weft_event *ev;

	if (weft_trace_stream_count(small) > weft_trace_stream_count(big))
		small = ovni, big = heph;
	REQUIRE(weft_trace_stream_count(small) < weft_trace_stream_count(big));
	for (size_t k = 0; k < weft_output_count(); k++) {
		const char *output = weft_output_get(k)->name;
		char name[64];
		snprintf(name, sizeof name, "refusals.%s", output);
		options_for(&o, out, sizeof out, name, output);
		REQUIRE(weft_output_writer_create(small, &o, &w) == 0);
		/* an event of a stream the trace does not have */
		REQUIRE(event_of_stream_from(big, weft_trace_stream_count(small), &c, &ev));
		CHECK_EQ_I64(weft_output_writer_event(w, ev), WEFT_EINVAL);
		CHECK(strstr(weft_last_error(), "an event of another trace?") != NULL);
		weft_cursor_free(c);
		/* an ended stream takes no more */
		REQUIRE(weft_cursor_create_stream(small, 0, &c) == 0);
		REQUIRE(weft_cursor_next(c, &ev) == 1);
		CHECK_EQ_I64(weft_output_writer_event(w, ev), 0);
		CHECK_EQ_I64(weft_output_writer_end_stream(w, 0), 0);
		CHECK_EQ_I64(weft_output_writer_end_stream(w, 0), WEFT_EINVAL);
		REQUIRE(weft_cursor_next(c, &ev) == 1);
		CHECK_EQ_I64(weft_output_writer_event(w, ev), WEFT_EINVAL);
		/* nothing after finish */
		CHECK_EQ_I64(weft_output_writer_finish(w, &r), 0);
		weft_convert_report_free(&r);
		CHECK_EQ_I64(weft_output_writer_event(w, ev), WEFT_EINVAL);
		CHECK(strstr(weft_last_error(), "after the output was finished") != NULL);
		CHECK_EQ_I64(weft_output_writer_end_stream(w, 1), WEFT_EINVAL);
		CHECK_EQ_I64(weft_output_writer_finish(w, &r), WEFT_EINVAL);
		CHECK(r.message_count == 0);
		weft_output_writer_free(w);
		weft_cursor_free(c);
	}
	weft_trace_free(heph);
	weft_trace_free(ovni);
}

/* What cannot be created: OUT exists without force, an unknown output. */
static void test_create_refused(void)
{
	char out[4096];
	weft_trace *t = open_trace(OVNI);
	weft_convert_options o;
	weft_output_writer *w = (weft_output_writer *)&o;

	options_for(&o, out, sizeof out, "exists.json", "chrome");
	FILE *f = fopen(out, "w");
	REQUIRE(f != NULL);
	fputs("keep me", f);
	fclose(f);
	CHECK_EQ_I64(weft_output_writer_create(t, &o, &w), WEFT_EEXIST);
	CHECK(w == NULL);
	CHECK(strstr(weft_last_error(), "exists; use --force to replace it") != NULL);
	char *kept = tu_read_file(out, NULL);
	CHECK(kept != NULL && strcmp(kept, "keep me") == 0);
	free(kept);
	o.output = "svg";
	CHECK_EQ_I64(weft_output_writer_create(t, &o, &w), WEFT_EINVAL);
	CHECK(strstr(weft_last_error(), "unknown output 'svg'") != NULL);
	weft_output_writer_free(NULL);
	weft_trace_free(t);
}

/*
 * The order and cursor filter `output` asks of `t` when the options have
 * the window [5, 10].
 */
static weft_order order_of(weft_trace *t, const char *output, weft_filter *f)
{
	char out[4096];
	weft_convert_options o;
	weft_output_writer *w = NULL;

	options_for(&o, out, sizeof out, "order", output);
	o.filter.from = 5;
	o.filter.to = 10;
	REQUIRE(weft_output_writer_create(t, &o, &w) == 0);
	weft_order order = weft_output_writer_order(w);
	weft_output_writer_filter(w, f);
	weft_output_writer_free(w);
	return order;
}

/* The order each output asks for: viewers the format's natural one, pallas time. */
static void test_orders(void)
{
	weft_trace *heph = open_trace(HEPH), *ovni = open_trace(OVNI);
	weft_filter f;

	CHECK_EQ_I64(order_of(heph, "chrome", &f), WEFT_ORDER_STORED);
	CHECK(f.from == 0 && f.to == 0); /* viewers cut spans: no window on the cursor */
	CHECK_EQ_I64(order_of(ovni, "chrome", &f), WEFT_ORDER_TIME);
	CHECK_EQ_I64(order_of(heph, "pallas", &f), WEFT_ORDER_TIME);
	CHECK(f.from == 5 && f.to == 10); /* pallas: the window on the cursor */
	weft_trace_free(heph);
	weft_trace_free(ovni);
}

/*
 * pallas: an event earlier than its stream's last is refused, and so is
 * one of a stream the glob leaves out; the writer goes on.
 */
static void test_pallas_order(void)
{
	char out[4096];
	weft_trace *t = open_trace(HEPH);
	weft_convert_options o;
	weft_convert_report r;
	weft_output_writer *w = NULL;
	weft_cursor *c = NULL;
	const weft_event *ev;
	weft_filter f;

	options_for(&o, out, sizeof out, "order-refused.pallas", "pallas");
	o.filter.stream_pattern = weft_trace_stream(t, 0)->path;
	REQUIRE(weft_output_writer_create(t, &o, &w) == 0);
	weft_output_writer_filter(w, &f);
	REQUIRE(weft_cursor_create_stream_filtered(t, 0, &f, &c) == 0);
	weft_event back;
	do {
		REQUIRE(weft_cursor_next(c, &ev) == 1);
		CHECK_EQ_I64(weft_output_writer_event(w, ev), 0);
	} while (ev->time == 0);
	back = *ev;
	back.time = ev->time - 1;
	CHECK_EQ_I64(weft_output_writer_event(w, &back), WEFT_EINVAL);
	CHECK(strstr(weft_last_error(), "time order") != NULL);
	REQUIRE(weft_cursor_next(c, &ev) == 1);
	CHECK_EQ_I64(weft_output_writer_event(w, ev), 0); /* goes on */
	weft_cursor_free(c);
	/* stream 1 is left out by the glob */
	REQUIRE(weft_cursor_create_stream(t, 1, &c) == 0);
	REQUIRE(weft_cursor_next(c, &ev) == 1);
	CHECK_EQ_I64(weft_output_writer_event(w, ev), WEFT_EINVAL);
	CHECK(strstr(weft_last_error(), "leaves out") != NULL);
	weft_cursor_free(c);
	weft_output_writer_read_failed(w, 0, WEFT_EIO);
	weft_output_writer_read_failed(w, 9999, WEFT_EIO); /* no such stream: all */
	CHECK_EQ_I64(weft_output_writer_finish(w, &r), 0);
	CHECK(r.data_lost);
	CHECK(said(&r, "stream.0/substream.0: reading stopped: "));
	CHECK(said(&r, "error: reading stopped: "));
	weft_convert_report_free(&r);
	weft_output_writer_free(w);
	weft_trace_free(t);
}

/*
 * A viewer in time order with a window end: the first event past it ends
 * the window (1), later events are ignored, even earlier ones; the output
 * is weft_convert()'s with the same window. A reading that stopped early
 * is said and loses data.
 */
static void test_window_end(void)
{
	char out_call[4096], out_writer[4096];
	weft_trace *t = open_trace(OVNI);
	weft_convert_options o;
	weft_convert_report by_call, by_writer;
	weft_output_writer *w = NULL;
	weft_cursor *c = NULL;
	const weft_event *ev;
	uint64_t first = 0, n = 0;

	REQUIRE(weft_cursor_create(t, NULL, &c) == 0);
	while (weft_cursor_next(c, &ev) == 1)
		if (n++ == 0)
			first = ev->time;
	weft_cursor_free(c);
	options_for(&o, out_call, sizeof out_call, "window.call.json", "chrome");
	o.filter.to = first + 1;
	CHECK_EQ_I64(weft_convert(t, &o, &by_call), 0);
	options_for(&o, out_writer, sizeof out_writer, "window.writer.json", "chrome");
	o.filter.to = first + 1;
	REQUIRE(weft_output_writer_create(t, &o, &w) == 0);
	REQUIRE(weft_cursor_create(t, NULL, &c) == 0);
	uint64_t taken = push_cursor(w, c, 0);
	CHECK(taken < n); /* stopped at the window's end */
	REQUIRE(weft_cursor_next(c, &ev) == 1);
	weft_event early = *ev;
	early.time = first;
	CHECK_EQ_I64(weft_output_writer_event(w, &early), 1); /* ignored */
	weft_cursor_free(c);
	CHECK_EQ_I64(weft_output_writer_finish(w, &by_writer), 0);
	weft_output_writer_free(w);
	tu_same_file(out_call, out_writer);
	same_report(&by_call, &by_writer);
	weft_convert_report_free(&by_call);
	weft_convert_report_free(&by_writer);

	/* a reading that stopped early */
	options_for(&o, out_writer, sizeof out_writer, "stopped.pftrace", "perfetto");
	REQUIRE(weft_output_writer_create(t, &o, &w) == 0);
	weft_output_writer_read_failed(w, WEFT_OUTPUT_ALL_STREAMS, WEFT_ETRUNCATED);
	CHECK_EQ_I64(weft_output_writer_finish(w, &by_writer), 0);
	CHECK(by_writer.data_lost);
	CHECK(said(&by_writer, "reading the events stopped early: "));
	weft_convert_report_free(&by_writer);
	weft_output_writer_free(w);
	weft_trace_free(t);
}

int main(void)
{
	dir = tu_mkdtemp("weft-output-writer");
	REQUIRE(dir != NULL);
	test_same_bytes();
	test_free_without_finish();
	test_refusals();
	test_create_refused();
	test_orders();
	test_pallas_order();
	test_window_end();
	return tu_finish_dir(dir);
}
