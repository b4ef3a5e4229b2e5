/* SPDX-License-Identifier: MIT */
/*
 * test_convert_api.c - weft_convert() (weft/convert.h), the public call
 * behind `weft convert`: a trace of each input format (ovni, Heph, ROSS,
 * Pallas) to each output of the registry (and chrome's Heph-compatible
 * bytes) through the call only, each result equal byte for byte to what
 * the command writes; then the refusals: an unknown output, OUT that
 * exists without force (left as it was), a window that ends before it
 * starts, options an output cannot take, and a report that says why;
 * the Pallas report's counts.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "weft/weft.h"

static char *dir;

/* The traces converted: one per input format. */
static const char *const traces[] = {
	"ovni/v3/nosv-parallel-tasks/ovni",
	"heph/heph_sample.bin.log",
	"ross/phold-gvt-pekplp/np2/ross-stats-gvt.bin",
	"pallas/weft_order/trace/main.pallas",
};
#define TRACE_COUNT (sizeof traces / sizeof traces[0])

/* 1 when a report line contains `text`. */
static int said(const weft_convert_report *r, const char *text)
{
	return tu_said(r->messages, r->message_count, text);
}

/*
 * Converts `trace` to `output` through the call into OUT, and with `weft
 * convert` into OUT.cli; the two must be equal (paraver: its 3 files).
 */
static void convert_both(weft_trace *t, const char *trace_path, const char *name,
			 const weft_output_info *output, int heph_compat)
{
	char out[4096], cli[4096], args[8192];
	weft_convert_options o;
	weft_convert_report r;
	const char *suffix = strcmp(output->name, "paraver") == 0 ? ".prv" : "";

	snprintf(out, sizeof out, "%s/%s.%s%s%s", dir, name, output->name,
		 heph_compat ? ".compat" : "", suffix);
	snprintf(cli, sizeof cli, "%s/%s.%s%s.cli%s", dir, name, output->name,
		 heph_compat ? ".compat" : "", suffix);
	weft_convert_options_init(&o);
	o.output = output->name;
	o.path = out;
	o.heph_compat = heph_compat;
	o.emulate = WEFT_EMULATE_OFF; /* the generic mapping (emulation: test_emu_*) */
	int rc = weft_convert(t, &o, &r);
	if (rc != 0)
		tu_fail(__FILE__, __LINE__, "%s to %s: %d: %s", name, output->name, rc,
			r.message_count ? r.messages[0] : "");
	CHECK_EQ_STR(r.output, output->name);
	weft_convert_report_free(&r);
	CHECK(r.messages == NULL && r.message_count == 0);

	int status = -1;
	snprintf(args, sizeof args, "convert --raw -t %s%s -o '%s'", output->name,
		 heph_compat ? " --heph-compat" : "", cli);
	free(tu_run_weft(args, trace_path, &status));
	/* the command exits 1 when data was lost, as data_lost says */
	CHECK(status == 0 || (status == 1 && r.data_lost));
	if (suffix[0] == '\0') {
		tu_same_tree(out, cli);
		return;
	}
	static const char *const parts[] = { ".prv", ".pcf", ".row" };
	size_t no = strlen(out) - 4, nc = strlen(cli) - 4;
	for (int i = 0; i < 3; i++) {
		snprintf(out + no, sizeof out - no, "%s", parts[i]);
		snprintf(cli + nc, sizeof cli - nc, "%s", parts[i]);
		tu_same_file(out, cli);
	}
}

/* Every trace to every output of the registry, through the call. */
static void test_every_output(void)
{
	for (size_t i = 0; i < TRACE_COUNT; i++) {
		const char *path = tu_data_path(traces[i]);
		weft_trace *t = tu_open_data(traces[i], 0, NULL, NULL);
		REQUIRE(t != NULL);
		char name[32];
		snprintf(name, sizeof name, "t%zu", i);
		for (size_t k = 0; k < weft_output_count(); k++) {
			/* every output of the registry can be run */
			REQUIRE(weft_output_get(k)->run != NULL);
			convert_both(t, path, name, weft_output_get(k), 0);
		}
		if (weft_trace_format(t) == WEFT_FORMAT_HEPH)
			convert_both(t, path, name, weft_output_find("chrome"), 1);
		weft_trace_free(t);
	}
}

/* Runs the call expecting `want`; returns the report (to free). */
static weft_convert_report refused(weft_trace *t, const weft_convert_options *o, int want)
{
	weft_convert_report r;
	CHECK_EQ_I64(weft_convert(t, o, &r), want);
	CHECK(r.message_count > 0);
	return r;
}

/* What the call refuses, before or without writing anything. */
static void test_refusals(void)
{
	char out[4096];
	weft_trace *t = tu_open_data(traces[0], 0, NULL, NULL);
	REQUIRE(t != NULL);
	weft_convert_options o;
	weft_convert_report r;

	/* an unknown output */
	weft_convert_options_init(&o);
	snprintf(out, sizeof out, "%s/refused.json", dir);
	o.path = out;
	o.output = "svg";
	r = refused(t, &o, WEFT_EINVAL);
	CHECK(said(&r, "unknown output 'svg' (perfetto, chrome, paraver, pallas, otf2)"));
	weft_convert_report_free(&r);

	/* OUT exists: kept without force, replaced with it */
	FILE *f = fopen(out, "w");
	REQUIRE(f != NULL);
	fputs("keep me", f);
	fclose(f);
	o.output = NULL; /* .json chooses chrome */
	r = refused(t, &o, WEFT_EEXIST);
	CHECK_EQ_STR(r.output, "chrome");
	CHECK(said(&r, "exists; use --force to replace it"));
	weft_convert_report_free(&r);
	char *kept = tu_read_file(out, NULL);
	CHECK(kept != NULL && strcmp(kept, "keep me") == 0);
	free(kept);
	o.force = 1;
	CHECK_EQ_I64(weft_convert(t, &o, &r), 0);
	weft_convert_report_free(&r);
	kept = tu_read_file(out, NULL);
	CHECK(kept != NULL && kept[0] == '{');
	free(kept);

	/* a window that ends before it starts */
	o.filter.from = 2000;
	o.filter.to = 1000;
	r = refused(t, &o, WEFT_EINVAL);
	CHECK(said(&r, "the time window ends (1000 ns) before it starts (2000 ns)"));
	weft_convert_report_free(&r);
	o.filter.from = o.filter.to = 0;

	/* options the output cannot take */
	o.output = "perfetto";
	o.heph_compat = 1;
	r = refused(t, &o, WEFT_EINVAL);
	CHECK(said(&r, "heph_compat is for the outputs chrome"));
	weft_convert_report_free(&r);
	o.heph_compat = 0;
	o.output = "pallas";
	o.virtual_unit_ns = 1000;
	r = refused(t, &o, WEFT_EINVAL);
	CHECK(said(&r, "virtual time is for the viewer outputs"));
	weft_convert_report_free(&r);
	o.virtual_unit_ns = 0;

	/* paraver writes three files: not to standard output */
	o.output = "paraver";
	o.path = "-";
	o.emulate = WEFT_EMULATE_OFF;
	r = refused(t, &o, WEFT_EINVAL);
	CHECK(said(&r, "-t paraver writes 3 files"));
	weft_convert_report_free(&r);

	/* pallas replaces a Pallas trace only, even with force */
	o.output = "pallas";
	o.path = out; /* a file */
	r = refused(t, &o, WEFT_EEXIST);
	CHECK(said(&r, "is not a Pallas trace directory"));
	weft_convert_report_free(&r);
	weft_trace_free(t);
}

/*
 * The Pallas report's counts are the notes' numbers: string values past
 * the budget (lowered for the test) are counted in strings_left_out.
 */
static void test_pallas_counts(void)
{
	char out[4096];
	const char *path = tu_data_path("heph/heph_sample.bin.log");
	weft_trace *t = NULL;
	weft_convert_options o;
	weft_convert_report r;

	snprintf(out, sizeof out, "%s/budget.pallas", dir);
	REQUIRE(weft_trace_open(path, NULL, &t) == 0);
	setenv("WEFT_TEST_PALLAS_VALUE_BUDGET", "5", 1);
	weft_convert_options_init(&o);
	o.output = "pallas";
	o.path = out;
	CHECK_EQ_I64(weft_convert(t, &o, &r), 0);
	unsetenv("WEFT_TEST_PALLAS_VALUE_BUDGET");
	CHECK_EQ_U64(r.strings_left_out, 5);
	CHECK(said(&r, "note: 5 string value(s) not kept"));
	CHECK_EQ_U64(r.leave_fallbacks + r.depth_fallbacks + r.payloads_cut, 0);
	weft_convert_report_free(&r);
	weft_trace_free(t);
}

int main(void)
{
	if (getenv("WEFT_BUILD_DIR") == NULL) { /* `weft convert` is run too */
		fprintf(stderr, "WEFT_BUILD_DIR is not set\n");
		return 77;
	}
	dir = tu_mkdtemp("weft-convert-api");
	REQUIRE(dir != NULL);
	test_every_output();
	test_refusals();
	test_pallas_counts();
	return tu_finish_dir(dir);
}
