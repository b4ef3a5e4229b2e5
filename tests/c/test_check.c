/* SPDX-License-Identifier: MIT */
/*
 * test_check.c - the public calls that took format knowledge out of the
 * commands: weft_trace_check() (with the ovni and Pallas check hooks),
 * the list of formats (weft_format_count/at/name/from_name/sortable),
 * weft_ross_analysable(), and the stream statistics (weft/stats.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "weft/weft.h"
#include "testutil.h"

static const char *data_dir;

/* Opens tests/data/<rel> (in stored order, as `weft check` does). */
static weft_trace *open_data(const char *rel, int stored_order)
{
	return tu_open_data(rel, stored_order, NULL, NULL);
}

/* Checks `t` with `sorted` and returns the report (REQUIREd). */
static weft_check_report *check(weft_trace *t, int sorted)
{
	weft_check_options o;
	weft_check_report *r = NULL;

	weft_check_options_init(&o);
	o.sorted = sorted;
	REQUIRE(weft_trace_check(t, &o, &r) == 0 && r != NULL);
	CHECK(!weft_check_report_incomplete(r));
	return r;
}

/* ovni: the clock gate of ovniemu, one error per stream too far away. */
static void test_ovni_clock_gate(void)
{
	weft_trace *t = open_data("ovni/peer/emu-ovni-clockgate/ovni", 1);
	REQUIRE(t != NULL);
	weft_check_report *r = check(t, 0);
	CHECK_EQ_U64(weft_check_report_events(r), 4);
	REQUIRE(weft_check_report_count(r) == 3);
	const weft_diag *d = weft_check_report_problem(r, 0);
	CHECK_EQ_STR(d->file, "loom.vm.1/proc.6715/thread.6715/stream.obs");
	CHECK_EQ_U64(d->offset, 8);
	CHECK_EQ_I64(d->severity, WEFT_SEV_ERROR);
	CHECK(strstr(d->message, "first clock 7954625914395 is 2.00 h from the first clock "
		     "of loom.vm.0/proc.6717/thread.6717") == d->message);
	CHECK(weft_check_report_problem(r, 3) == NULL);
	weft_check_report_free(r);
	weft_trace_free(t);
}

/* ovni: unsorted regions count only when sorted regions are asked for. */
static void test_ovni_sorted(void)
{
	weft_trace *t = open_data("ovni/v3/ovni-sort-unsorted/ovni", 1);
	REQUIRE(t != NULL);
	weft_check_report *r = check(t, 0);
	CHECK_EQ_U64(weft_check_report_count(r), 0);
	CHECK_EQ_U64(weft_check_report_events(r), 105);
	weft_check_report_free(r);
	r = check(t, 1);
	REQUIRE(weft_check_report_count(r) == 2);
	const weft_diag *d = weft_check_report_problem(r, 0);
	CHECK_EQ_U64(d->offset, 48);
	CHECK(strstr(d->message, "stream not sorted: the clock goes back 1 time") == d->message);
	d = weft_check_report_problem(r, 1);
	CHECK_EQ_U64(d->offset, WEFT_NO_OFFSET);
	CHECK_EQ_STR(d->message, "1 of 1 stream has unsorted unordered regions "
		     "(1 region, 102 events out of place)");
	weft_check_report_free(r);
	weft_trace_free(t);
}

/* ROSS (one merged pass) and Heph: clean traces, every event read. */
static void test_clean_traces(void)
{
	weft_trace *t = open_data("ross/im-everything/np1/ross-stats-evtrace.bin", 1);
	REQUIRE(t != NULL);
	weft_check_report *r = check(t, 1);
	CHECK_EQ_U64(weft_check_report_count(r), 0);
	CHECK_EQ_U64(weft_check_report_events(r), 1372);
	weft_check_report_free(r);
	weft_trace_free(t);
	t = open_data("heph/heph_sample.bin.log", 1);
	REQUIRE(t != NULL);
	r = check(t, 0);
	CHECK_EQ_U64(weft_check_report_count(r), 0);
	CHECK_EQ_U64(weft_check_report_events(r), 21);
	weft_check_report_free(r);
	weft_trace_free(t);
	weft_check_report_free(NULL);
}

/*
 * Pallas: the hook records what Pallas 0.20 cannot read as diagnostics of
 * the trace (a trace without threads, written by `weft convert`).
 */
static void test_pallas_hook(void)
{
	char *dir = tu_mkdtemp("weft-check");
	char args[4400], out[4200], heph[4096];
	int status;

	REQUIRE(dir != NULL);
	snprintf(out, sizeof out, "%s/empty.pallas", dir);
	snprintf(args, sizeof args, "convert -t pallas -o '%s'", out);
	snprintf(heph, sizeof heph, "%s/heph/edge_epoch_only.bin.log", data_dir);
	free(tu_run_weft(args, heph, &status));
	REQUIRE(status == 0);
	weft_open_options o;
	weft_trace *t = NULL;
	weft_open_options_init(&o);
	o.stored_order = 1;
	REQUIRE(weft_trace_open(out, &o, &t) == 0);
	CHECK_EQ_U64(weft_trace_diag_count(t), 0);
	weft_check_report *r = check(t, 0);
	CHECK_EQ_U64(weft_check_report_count(r), 0);
	REQUIRE(weft_trace_diag_count(t) == 1);
	CHECK(strstr(weft_trace_diag(t, 0)->message, "no thread: Pallas 0.20") != NULL);
	weft_check_report_free(r);
	weft_trace_free(t);
	tu_finish_dir(dir);
}

/* The formats come from the backend table, in the order they are detected. */
static void test_format_list(void)
{
	static const char *const names[] = { "ovni", "heph", "ross", "pallas", "otf2" };

	REQUIRE(weft_format_count() == 5);
	for (size_t i = 0; i < 5; i++) {
		weft_format f = weft_format_at(i);
		CHECK_EQ_STR(weft_format_name(f), names[i]);
		CHECK_EQ_I64(weft_format_from_name(names[i]), (int)f);
		CHECK_EQ_I64(weft_format_sortable(f), f == WEFT_FORMAT_OVNI);
	}
	CHECK(weft_format_at(5) == WEFT_FORMAT_AUTO);
	CHECK_EQ_STR(weft_format_name(WEFT_FORMAT_AUTO), "auto");
	CHECK_EQ_I64(weft_format_from_name("auto"), WEFT_FORMAT_AUTO);
	CHECK_EQ_I64(weft_format_from_name("otf3"), -1);
	CHECK(weft_format_name((weft_format)99) == NULL);
	CHECK_EQ_I64(weft_format_sortable(WEFT_FORMAT_AUTO), 1);
}

/* Only ROSS runs have the samples the ROSS analyses read. */
static void test_ross_analysable(void)
{
	weft_trace *t = open_data("ross/im-everything/np1/ross-stats-gvt.bin", 0);
	REQUIRE(t != NULL);
	CHECK_EQ_I64(weft_ross_analysable(t), 0);
	weft_trace_free(t);
	t = open_data("ovni/v3/ovni-sort-unsorted/ovni", 0);
	REQUIRE(t != NULL);
	CHECK_EQ_I64(weft_ross_analysable(t), WEFT_EUNSUPPORTED);
	CHECK(strstr(weft_last_error(), "ovni-sort-unsorted/ovni' is an ovni trace") != NULL);
	weft_trace_free(t);
	t = open_data("heph/heph_sample.bin.log", 0);
	REQUIRE(t != NULL);
	CHECK_EQ_I64(weft_ross_analysable(t), WEFT_EUNSUPPORTED);
	CHECK(strstr(weft_last_error(), "heph_sample.bin.log' is a heph trace") != NULL);
	weft_trace_free(t);
}

/* Stream statistics: read (ovni), stored (Pallas), merged (ROSS). */
static void test_stats(void)
{
	weft_stream_stats st;
	weft_trace *t = open_data("ovni/v3/ovni-sort-unsorted/ovni", 0);
	REQUIRE(t != NULL);
	CHECK_EQ_I64(weft_trace_stream_stats(t, 0, &st), 0);
	CHECK_EQ_U64(st.events, 105);
	CHECK(st.stored == 0 && st.detail[0] == '\0' && st.first <= st.last);
	CHECK_EQ_I64(weft_trace_stream_stats(t, 1, &st), WEFT_EINVAL);
	weft_trace_free(t);

	t = open_data("pallas/weft_order/trace/main.pallas", 0);
	REQUIRE(t != NULL);
	CHECK_EQ_I64(weft_trace_stream_stats(t, 0, &st), 0);
	CHECK(st.stored == 1);
	CHECK_EQ_U64(st.events, 5);
	CHECK_EQ_U64(st.first, 100);
	CHECK_EQ_U64(st.last, 400);
	CHECK(strncmp(st.detail, "grammar: ", 9) == 0);
	weft_trace_free(t);

	t = open_data("ross/im-everything/np1/ross-stats-evtrace.bin", 0);
	REQUIRE(t != NULL);
	size_t n = weft_trace_stream_count(t);
	weft_stream_stats *all = calloc(n, sizeof *all);
	REQUIRE(all != NULL);
	CHECK_EQ_I64(weft_trace_stats_merged(t, all), 0);
	uint64_t total = 0;
	for (size_t i = 0; i < n; i++) {
		CHECK_EQ_I64(weft_trace_stream_stats(t, (uint32_t)i, &st), 0);
		CHECK_EQ_U64(all[i].events, st.events);
		CHECK_EQ_U64(all[i].first, st.first);
		CHECK_EQ_U64(all[i].last, st.last);
		total += st.events;
	}
	CHECK_EQ_U64(total, 1372);
	free(all);
	weft_trace_free(t);

	weft_event ev;
	memset(&ev, 0, sizeof ev);
	memset(&st, 0, sizeof st);
	ev.flags = WEFT_EVENT_NO_TIME;
	weft_stream_stats_add(&st, &ev);
	ev.flags = 0;
	ev.time = 7;
	weft_stream_stats_add(&st, &ev);
	ev.time = 5;
	weft_stream_stats_add(&st, &ev);
	CHECK_EQ_U64(st.events, 3);
	CHECK_EQ_U64(st.untimed, 1);
	CHECK_EQ_U64(st.first, 5);
	CHECK_EQ_U64(st.last, 7);
}

int main(void)
{
	data_dir = getenv("WEFT_TEST_DATA");
	if (data_dir == NULL) {
		fprintf(stderr, "WEFT_TEST_DATA is not set\n");
		return 77;
	}
	test_ovni_clock_gate();
	test_ovni_sorted();
	test_clean_traces();
	test_pallas_hook();
	test_format_list();
	test_ross_analysable();
	test_stats();
	return tu_result();
}
