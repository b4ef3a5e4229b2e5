/* SPDX-License-Identifier: MIT */
/*
 * weft/output.h - the outputs weft writes (the registry): their names,
 * what each is, which file names choose it and what it can do. Each has
 * a writer (weft/writer.h), which weft_convert() (weft/convert.h) feeds. Front ends take their `--to` list, help text and
 * checks from here, so that an output added to the library appears in
 * all of them.
 */
#ifndef WEFT_OUTPUT_H
#define WEFT_OUTPUT_H

#include <stddef.h>

#include "weft/api.h"
#include "weft/convert.h"

#ifdef __cplusplus
extern "C" {
#endif
WEFT_API_BEGIN

/* What an output can do (weft_output_info.flags). */
enum weft_output_flag {
	WEFT_OUTPUT_STDOUT = 1,       /* one file, so "-" (standard output) works */
	WEFT_OUTPUT_VIEWER = 2,       /* a viewer's timeline: a virtual time axis,
				       * spans past the viewers' nesting limit
				       * dropped on request */
	WEFT_OUTPUT_DIRECTORY = 4,    /* OUT is a directory (a trace of files) */
	WEFT_OUTPUT_HEPH_COMPAT = 8,  /* can write the bytes of Heph's converter */
	WEFT_OUTPUT_EMULATE = 16,     /* can show an ovni trace's emulated models
				       * (weft_convert_options.emulate) */
};

/* One output. */
typedef struct weft_output_info {
	const char *name;                 /* "perfetto", "chrome", ... */
	const char *description;          /* one line, for help texts */
	const char *const *suffixes;      /* OUT names that choose it (NULL-ended) */
	unsigned flags;                   /* weft_output_flag bits */
	/* Converts a trace (kept for the registry's callers): weft_convert()
	 * itself for every output, which reaches the output's writer
	 * (weft/writer.h); options->output names this output. */
	int (*run)(weft_trace *trace, const weft_convert_options *options,
		   weft_convert_report *report);
} weft_output_info;

/* Number of outputs, and output i (0 <= i < count; NULL past the end). */
size_t weft_output_count(void);
const weft_output_info *weft_output_get(size_t i);

/* The output named `name`, or NULL. */
const weft_output_info *weft_output_find(const char *name);

/*
 * The output an output path chooses when none is named: the first whose
 * suffix ends `path`, else the default (Perfetto: the format that scales
 * to large traces). Never NULL.
 */
const weft_output_info *weft_output_for_path(const char *path);

/*
 * The names of the outputs that have every flag of `flags` (0: all),
 * joined by ", " into buf (size bytes, always NUL-terminated): for
 * messages such as "--time virtual is for perfetto, chrome, paraver".
 * Returns buf.
 */
const char *weft_output_names(unsigned flags, char *buf, size_t size);

WEFT_API_END

#ifdef __cplusplus
}
#endif

#endif /* WEFT_OUTPUT_H */
