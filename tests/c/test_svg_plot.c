/* SPDX-License-Identifier: MIT */
/*
 * test_svg_plot.c - the chart pieces of outputs/svg_plot.c: the min/max
 * decimator (bounded points, the extremes of every bucket kept, order
 * kept, memory bounded by its cap) and the SVG writer (escaped names,
 * empty and single-point series, constant values).
 */
#include <float.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "outputs/svg_plot.h"
#include "testutil.h"

/* A million samples of a saw with one spike: at most 2 * cap points. */
static void test_decimator(void)
{
	weft__decimator d;
	static double x[2000], y[2000];
	weft__decimator_init(&d, 1000);
	for (int i = 0; i < 1000000; i++)
		weft__decimator_add(&d, i, i == 777777 ? 1e9 : (i % 100) - (i == 3 ? 1e6 : 0));
	CHECK(!d.oom);
	CHECK(d.count <= 1000);
	CHECK_EQ_U64(d.samples, 1000000);
	size_t n = weft__decimator_points(&d, x, y);
	CHECK(n <= 2000 && n > 1000);
	double top = -1e300, bottom = 1e300;
	for (size_t i = 0; i < n; i++) {
		top = y[i] > top ? y[i] : top;
		bottom = y[i] < bottom ? y[i] : bottom;
		if (i > 0)
			CHECK(x[i] >= x[i - 1]);
	}
	CHECK(top == 1e9);
	CHECK(bottom == 3 - 1e6);
	weft__decimator_free(&d);

	/* few samples: every one kept as it is */
	weft__decimator_init(&d, 1000);
	for (int i = 0; i < 10; i++)
		weft__decimator_add(&d, i, 2 * i);
	n = weft__decimator_points(&d, x, y);
	CHECK_EQ_U64(n, 10);
	CHECK(x[9] == 9 && y[9] == 18);
	weft__decimator_free(&d);
}

/* Writes chart c to a temporary file and returns its text (malloc'd). */
static char *chart_text(const weft__svg_chart *c)
{
	char path[] = "/tmp/weft-svg-XXXXXX";
	int fd = mkstemp(path);
	if (fd < 0)
		return NULL;
	CHECK(weft__svg_chart_write(fd, c) == 0);
	close(fd);
	size_t size;
	char *text = tu_read_file(path, &size);
	unlink(path);
	return text;
}

/* A chart with awkward names and series: the text is well formed. */
static void test_chart(void)
{
	static const double x1[] = { 5 }, y1[] = { 7 };
	static const double x2[] = { 1, 2, 3 }, y2[] = { 4, 4, 4 };
	weft__svg_series a[3] = { { x1, y1, 1 }, { x2, y2, 3 }, { NULL, NULL, 0 } };
	const char *names[3] = { "a<b>&\"c'", "bad \xff utf8", "empty" };
	weft__svg_panel panels[1] = { { "p1", "y & title", a } };
	const char *notes[1] = { "note <1>" };
	weft__svg_chart c = { "T&itle", "x", names, 3, panels, 1, notes, 1, 0 };
	char *text = chart_text(&c);
	REQUIRE(text != NULL);
	CHECK(strstr(text, "a&lt;b&gt;&amp;&quot;c&apos;") != NULL);
	CHECK(strstr(text, "bad ? utf8") != NULL);
	CHECK(strstr(text, "T&amp;itle") != NULL);
	CHECK(strstr(text, "note &lt;1&gt;") != NULL);
	CHECK(strstr(text, "<circle") != NULL);     /* the single point */
	CHECK(strstr(text, "points=\"\"") != NULL); /* the empty series */
	CHECK(strstr(text, "nan") == NULL && strstr(text, "inf") == NULL);
	free(text);
}

/*
 * Writes a chart of one series (x, y: n points) and checks that every
 * coordinate is a finite number inside the picture.
 */
static void check_extreme_chart(const double *x, const double *y, size_t n)
{
	weft__svg_series a[1] = { { x, y, n } };
	const char *names[1] = { "s" };
	weft__svg_panel panels[1] = { { "p", "y", a } };
	weft__svg_chart c = { "extreme", "x", names, 1, panels, 1, NULL, 0, 0 };
	char *text = chart_text(&c);
	REQUIRE(text != NULL);
	CHECK(strstr(text, "nan") == NULL && strstr(text, "inf") == NULL);
	const char *p = strstr(text, "points=\"");
	REQUIRE(p != NULL);
	p += strlen("points=\"");
	for (size_t k = 0; k < n; k++) {
		double px, py;
		int used = 0;
		CHECK(sscanf(p, "%lf,%lf%n", &px, &py, &used) == 2);
		CHECK(px >= 0 && px <= 960 && py >= 0 && py <= 400);
		p += used;
	}
	free(text);
}

/*
 * Values as far apart as doubles go (a damaged ROSS file holds any): the
 * axes were 2^1024 wide, their tick loop never ended (fuzz_ross found it).
 */
static void test_extreme_ranges(void)
{
	static const double wide[] = { -DBL_MAX, DBL_MAX }, top[] = { DBL_MAX, DBL_MAX };
	static const double bottom[] = { -DBL_MAX, -DBL_MAX }, tiny[] = { 5e-324, 5e-324 };
	static const double near[] = { 1e300, 1e300 * (1 + 1e-15) }, zero[] = { 0, 0 };
	check_extreme_chart(wide, wide, 2);
	check_extreme_chart(top, top, 2);
	check_extreme_chart(bottom, wide, 2);
	check_extreme_chart(tiny, tiny, 2);
	check_extreme_chart(near, near, 2);
	check_extreme_chart(zero, wide, 2);
	/* a range of subnormal width: its step was 0 / 0 (fuzz_ross) */
	static const double subnormal[] = { 5e-324, 0, 0 }, small[] = { 0, 1e-300, 0 };
	check_extreme_chart(subnormal, subnormal, 3);
	check_extreme_chart(subnormal, small, 3);
	check_extreme_chart(small, subnormal, 3);
}

int main(void)
{
	test_decimator();
	test_chart();
	test_extreme_ranges();
	return tu_result();
}
