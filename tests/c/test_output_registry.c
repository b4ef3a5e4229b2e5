/* SPDX-License-Identifier: MIT */
/*
 * test_output_registry.c - the list of outputs (weft/output.h): names,
 * the output an OUT path chooses, the names of the outputs that can do
 * something, and a buffer too short for them.
 */
#include <string.h>

#include "weft/weft.h"
#include "testutil.h"

/* Every output: a unique name, a description, a suffix list (empty: -t only). */
static void test_list(void)
{
	CHECK_EQ_U64(weft_output_count(), 5);
	for (size_t i = 0; i < weft_output_count(); i++) {
		const weft_output_info *o = weft_output_get(i);
		REQUIRE(o != NULL);
		CHECK(o->description != NULL && o->description[0] != '\0');
		CHECK(o->suffixes != NULL);
		/* otf2 is asked for by name: an OUT ending in .otf2 would be taken
		 * for the anchor file, while the archive is the directory OUT */
		CHECK((o->suffixes[0] == NULL) == (strcmp(o->name, "otf2") == 0));
		CHECK(weft_output_find(o->name) == o);
	}
	CHECK(weft_output_get(weft_output_count()) == NULL);
	CHECK(weft_output_find("perfeto") == NULL);
	CHECK(weft_output_find(NULL) == NULL);
}

/* OUT chooses by its suffix; Perfetto when nothing matches. */
static void test_for_path(void)
{
	CHECK(strcmp(weft_output_for_path("run.json")->name, "chrome") == 0);
	CHECK(strcmp(weft_output_for_path("run.prv")->name, "paraver") == 0);
	CHECK(strcmp(weft_output_for_path("out/")->name, "pallas") == 0);
	CHECK(strcmp(weft_output_for_path("run.pallas")->name, "pallas") == 0);
	CHECK(strcmp(weft_output_for_path("run")->name, "perfetto") == 0);
	CHECK(strcmp(weft_output_for_path("-")->name, "perfetto") == 0);
	CHECK(strcmp(weft_output_for_path("run.json.pftrace")->name, "perfetto") == 0);
	CHECK(strcmp(weft_output_for_path(NULL)->name, "perfetto") == 0);
}

/* The names of the outputs with given flags, in list order. */
static void test_names(void)
{
	char buf[128];
	CHECK(strcmp(weft_output_names(0, buf, sizeof buf),
		     "perfetto, chrome, paraver, pallas, otf2") == 0);
	CHECK(strcmp(weft_output_names(WEFT_OUTPUT_VIEWER, buf, sizeof buf),
		     "perfetto, chrome, paraver") == 0);
	CHECK(strcmp(weft_output_names(WEFT_OUTPUT_STDOUT, buf, sizeof buf),
		     "perfetto, chrome") == 0);
	CHECK(strcmp(weft_output_names(WEFT_OUTPUT_HEPH_COMPAT | WEFT_OUTPUT_VIEWER, buf,
				       sizeof buf), "chrome") == 0);
	CHECK(strcmp(weft_output_names(WEFT_OUTPUT_DIRECTORY | WEFT_OUTPUT_STDOUT, buf,
				       sizeof buf), "") == 0);
	/* too short: whole names only, always terminated */
	CHECK(strcmp(weft_output_names(0, buf, 12), "perfetto") == 0);
	CHECK(strcmp(weft_output_names(0, buf, 3), "") == 0);
	buf[0] = 'x';
	weft_output_names(0, buf, 0); /* writes nothing */
	CHECK(buf[0] == 'x');
}

int main(void)
{
	test_list();
	test_for_path();
	test_names();
	return tu_result();
}
