/* SPDX-License-Identifier: MIT */
/*
 * outputs/registry.c - the list of outputs (include/weft/output.h): the
 * one place that names them, in the order help texts list them, with the
 * writer of each (outputs/writer.h). The default output comes first.
 */
#include <stdio.h>
#include <string.h>

#include "outputs/writer.h"
#include "weft/output.h"

static const char *const perfetto_suffixes[] = { ".pftrace", ".perfetto-trace", NULL };
static const char *const chrome_suffixes[] = { ".json", NULL };
static const char *const paraver_suffixes[] = { ".prv", NULL };
static const char *const pallas_suffixes[] = { ".pallas", "/", NULL };
static const char *const otf2_suffixes[] = { NULL };   /* -t otf2 only: OUT is a directory */

/* An output: its public entry and its writer (outputs/writer.h). */
typedef struct output_entry {
	weft_output_info info;
	const weft__writer_ops *ops;
	const weft__writer_ops *emu_ops;  /* its writer of emulated ovni models */
} output_entry;

static const output_entry outputs[] = {
	{ { "perfetto", "Perfetto's protobuf (.pftrace; the default): ui.perfetto.dev; "
	    "emulated ovni: threads, CPUs, tasks and subsystems",
	    perfetto_suffixes, WEFT_OUTPUT_STDOUT | WEFT_OUTPUT_VIEWER | WEFT_OUTPUT_EMULATE,
	    weft_convert },
	  &weft__perfetto_writer_ops, &weft__perfetto_emu_writer_ops },
	{ { "chrome", "Chrome's Trace Event JSON (default for OUT ending in .json)",
	    chrome_suffixes, WEFT_OUTPUT_STDOUT | WEFT_OUTPUT_VIEWER | WEFT_OUTPUT_HEPH_COMPAT,
	    weft_convert },
	  &weft__chrome_writer_ops, NULL },
	{ { "paraver", "Paraver's OUT.prv, OUT.pcf, OUT.row (default for OUT.prv); "
	    "emulated ovni: ovniemu's thread.* and cpu.* in the directory OUT",
	    paraver_suffixes, WEFT_OUTPUT_VIEWER | WEFT_OUTPUT_EMULATE, weft_convert },
	  &weft__paraver_writer_ops, &weft__paraver_emu_writer_ops },
	{ { "pallas", "a Pallas 0.20 trace in the directory OUT",
	    pallas_suffixes, WEFT_OUTPUT_DIRECTORY, weft_convert },
	  &weft__pallas_writer_ops, NULL },
	{ { "otf2", "an OTF2 archive in the directory OUT (OUT/traces.otf2), through libotf2",
	    otf2_suffixes, WEFT_OUTPUT_DIRECTORY, weft_convert },
	  &weft__otf2_writer_ops, NULL },
};
#define OUTPUT_COUNT (sizeof outputs / sizeof outputs[0])

size_t weft_output_count(void)
{
	return OUTPUT_COUNT;
}

const weft_output_info *weft_output_get(size_t i)
{
	return i < OUTPUT_COUNT ? &outputs[i].info : NULL;
}

const weft_output_info *weft_output_find(const char *name)
{
	for (size_t i = 0; name != NULL && i < OUTPUT_COUNT; i++)
		if (strcmp(outputs[i].info.name, name) == 0)
			return &outputs[i].info;
	return NULL;
}

/* 1 when `path` ends with `suffix`. */
static int ends_with(const char *path, const char *suffix)
{
	size_t n = strlen(path), m = strlen(suffix);

	return n >= m && strcmp(path + n - m, suffix) == 0;
}

const weft_output_info *weft_output_for_path(const char *path)
{
	for (size_t i = 0; path != NULL && i < OUTPUT_COUNT; i++)
		for (const char *const *s = outputs[i].info.suffixes; *s != NULL; s++)
			if (ends_with(path, *s))
				return &outputs[i].info;
	return &outputs[0].info;
}

const char *weft_output_names(unsigned flags, char *buf, size_t size)
{
	size_t used = 0;

	if (size == 0)
		return buf;
	buf[0] = '\0';
	for (size_t i = 0; i < OUTPUT_COUNT; i++) {
		if ((outputs[i].info.flags & flags) != flags)
			continue;
		int n = snprintf(buf + used, size - used, "%s%s", used ? ", " : "",
				 outputs[i].info.name);
		if (n < 0 || (size_t)n >= size - used) {
			buf[used] = '\0'; /* no part of a name */
			break;
		}
		used += (size_t)n;
	}
	return buf;
}

const weft__writer_ops *weft__output_ops(const weft_output_info *info)
{
	for (size_t i = 0; i < OUTPUT_COUNT; i++)
		if (&outputs[i].info == info)
			return outputs[i].ops;
	return NULL;
}

const weft__writer_ops *weft__output_emu_ops(const weft_output_info *info)
{
	for (size_t i = 0; i < OUTPUT_COUNT; i++)
		if (&outputs[i].info == info)
			return outputs[i].emu_ops;
	return NULL;
}
