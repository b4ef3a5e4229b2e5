/* SPDX-License-Identifier: MIT */
/*
 * test_analysis.c - the analyses that moved from the command into the
 * library: the ROSS summary (weft_ross_summary_write), the ROSS plot
 * (weft_ross_plot_*) and the Pallas structure printer
 * (weft_pallas_structure_write), each against what `weft` printed
 * before the move, and each refusing a trace of another format.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "weft/weft.h"
#include "testutil.h"

/* Opens tests/data/<rel>, with ross.clock_rate when `rate` is given. */
static weft_trace *open_data(const char *rel, const char *rate)
{
	return tu_open_data(rel, 0, rate ? "ross.clock_rate" : NULL, rate);
}

/* What a call wrote to a memory stream (malloc'd). */
typedef struct capture {
	FILE *f;
	char *text;
	size_t size;
} capture;

static void capture_open(capture *c)
{
	c->text = NULL;
	c->size = 0;
	c->f = open_memstream(&c->text, &c->size);
	REQUIRE(c->f != NULL);
}

static const char *capture_close(capture *c)
{
	fclose(c->f);
	return c->text;
}

/* The ROSS summary: text, JSON with the clock rate, another format refused. */
static void test_summary(void)
{
	weft_trace *t = open_data("ross/phold-gvt-pekplp/np2", NULL);
	REQUIRE(t != NULL);
	capture c;
	capture_open(&c);
	CHECK_EQ_I64(weft_ross_summary_write(t, NULL, c.f), 0);
	const char *text = capture_close(&c);
	CHECK(strstr(text, "run: ") == text);
	CHECK(strstr(text, "\ngvt samples (ross-stats-gvt.bin): 194 PE samples of 2 PEs\n"
		      "  real time 1148.493211405 .. 1148.638255016 s (0.145044 s)\n"
		      "  virtual time up to 1986\n") != NULL);
	CHECK(strstr(text, "    0       97      49383        0        33365  16018     "
		      "-108.30       3186       1834   960\n") != NULL);
	free(c.text);
	weft_trace_free(t);

	t = open_data("ross/phold-gvt-pekplp/np2", "2400000000");
	REQUIRE(t != NULL);
	weft_ross_summary_options o;
	weft_ross_summary_options_init(&o);
	o.json = 1;
	capture_open(&c);
	CHECK_EQ_I64(weft_ross_summary_write(t, &o, c.f), 0);
	text = capture_close(&c);
	CHECK(strstr(text, "\"clock_rate\":2400000000.0,\"dedup\":false,\"modes\":[") != NULL);
	CHECK(text[c.size - 1] == '\n');
	free(c.text);
	weft_trace_free(t);

	t = open_data("heph/heph_sample.bin.log", NULL);
	REQUIRE(t != NULL);
	capture_open(&c);
	CHECK_EQ_I64(weft_ross_summary_write(t, NULL, c.f), WEFT_EUNSUPPORTED);
	capture_close(&c);
	CHECK_EQ_U64(c.size, 0);
	free(c.text);
	weft_trace_free(t);
}

/* The ROSS plot: an SVG with a panel per measure; a missing file named. */
static void test_plot(void)
{
	weft_trace *t = open_data("ross/phold-gvt-pekplp/np2", NULL);
	REQUIRE(t != NULL);
	weft_ross_plot_options o;
	weft_ross_plot *plot = NULL;
	weft_ross_plot_options_init(&o);
	o.mode = "nosuch";
	CHECK_EQ_I64(weft_ross_plot_create(t, &o, &plot), WEFT_ENOTFOUND);
	CHECK(plot == NULL);
	CHECK_EQ_STR(weft_last_error(), "no file 'nosuch' in the run (gvt, rt, vt, or a file "
		     "node's name from 'weft info')");
	o.mode = NULL;
	REQUIRE(weft_ross_plot_create(t, &o, &plot) == 0 && plot != NULL);
	CHECK_EQ_I64(weft_ross_plot_read(plot), 0);
	char *dir = tu_mkdtemp("weft-plot");
	char path[4200];
	REQUIRE(dir != NULL);
	snprintf(path, sizeof path, "%s/plot.svg", dir);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	REQUIRE(fd >= 0);
	CHECK_EQ_I64(weft_ross_plot_write(plot, fd), 0);
	close(fd);
	weft_ross_plot_free(plot);
	weft_ross_plot_free(NULL);
	size_t size;
	char *svg = tu_read_file(path, &size);
	REQUIRE(svg != NULL);
	CHECK(strstr(svg, "<svg") != NULL);
	CHECK(strstr(svg, "ROSS gvt samples (ross-stats-gvt.bin) per PE: ") != NULL);
	CHECK(strstr(svg, "efficiency (%)") != NULL);
	CHECK(strstr(svg, "events processed per sample") != NULL);
	free(svg);
	weft_trace_free(t);
	tu_finish_dir(dir);

	t = open_data("ross/im-everything/np1/ross-stats-evtrace.bin", NULL);
	REQUIRE(t != NULL);
	o.kp = 1;
	CHECK_EQ_I64(weft_ross_plot_create(t, &o, &plot), WEFT_ENOTFOUND);
	CHECK_EQ_STR(weft_last_error(), "no gvt, rt or vt file with KP samples in the run");
	weft_trace_free(t);
	t = open_data("ovni/v3/ovni-sort-unsorted/ovni", NULL);
	REQUIRE(t != NULL);
	CHECK_EQ_I64(weft_ross_plot_create(t, NULL, &plot), WEFT_EUNSUPPORTED);
	weft_trace_free(t);
}

/* The Pallas structure printer: the tree of a thread; other formats refused. */
static void test_structure(void)
{
	weft_trace *t = open_data("pallas/weft_order/trace/main.pallas", NULL);
	REQUIRE(t != NULL);
	CHECK_EQ_I64(weft_pallas_grammar_available(t), 1);
	capture c;
	capture_open(&c);
	CHECK_EQ_I64(weft_pallas_structure_write(t, 0, c.f), 0);
	const char *text = capture_close(&c);
	static const char want[] = "--- archive_0/thread_0: 3 events, 3 sequences, 1 loops ---\n"
		"S0 Sequence_0  block  x1  duration min 300 max 300 mean 300 ns\n"
		"  S2 main  block  x1  duration min 300 max 300 mean 300 ns\n"
		"    E0 Enter 1 (main)  x1\n"
		"    L0  3 iterations  x1\n";
	CHECK(strncmp(text, want, sizeof want - 1) == 0);
	free(c.text);
	weft_trace_free(t);

	t = open_data("heph/heph_sample.bin.log", NULL);
	REQUIRE(t != NULL);
	CHECK_EQ_I64(weft_pallas_grammar_available(t), 0);
	capture_open(&c);
	CHECK_EQ_I64(weft_pallas_structure_write(t, 0, c.f), WEFT_EUNSUPPORTED);
	capture_close(&c);
	CHECK_EQ_U64(c.size, 0);
	free(c.text);
	weft_trace_free(t);
}

int main(void)
{
	test_summary();
	test_plot();
	test_structure();
	return tu_result();
}
