/* SPDX-License-Identifier: MIT */
/*
 * weft/convert.h - converting a trace to an output of the registry
 * (weft/output.h): Perfetto, Chrome JSON (optionally the bytes of Heph's
 * converter), Paraver, a Pallas trace. `weft convert` is this call with
 * options from its command line; docs/convert.md.
 *
 *     weft_convert_options o;
 *     weft_convert_report r;
 *     weft_convert_options_init(&o);
 *     o.output = "perfetto";
 *     o.path = "run.pftrace";
 *     int rc = weft_convert(trace, &o, &r);
 *     for (size_t i = 0; i < r.message_count; i++)
 *             fprintf(stderr, "%s\n", r.messages[i]);
 *     weft_convert_report_free(&r);
 *
 * Each output reads the trace in the order it needs (the cursor's order,
 * weft/event.h): viewers in the format's natural order (Heph: one pass
 * over its file), Pallas in time order per stream; the caller opens the
 * trace once, with default options.
 */
#ifndef WEFT_CONVERT_H
#define WEFT_CONVERT_H

#include <stddef.h>
#include <stdint.h>

#include "weft/api.h"
#include "weft/event.h"
#include "weft/trace.h"

#ifdef __cplusplus
extern "C" {
#endif
WEFT_API_BEGIN

/* A conversion. Initialise with weft_convert_options_init(). */
typedef struct weft_convert_options {
	/* The output's registry name ("perfetto", "chrome", "paraver",
	 * "pallas"); NULL: the one `path` chooses (weft_output_for_path). */
	const char *output;
	/* OUT: a file, "-" for standard output (outputs with
	 * WEFT_OUTPUT_STDOUT), a base name (paraver: OUT.prv, OUT.pcf,
	 * OUT.row; a trailing ".prv" is dropped), a directory (pallas). */
	const char *path;
	/* The time window (from, to in ns; to 0: none; viewers cut spans at
	 * its edges), the stream and event-code globs. Its order is not
	 * looked at: each output reads in the order it needs. */
	weft_filter filter;
	int force;              /* replace OUT when it exists */
	int heph_compat;        /* chrome: the bytes of Heph's convert_trace */
	/* > 0: viewers draw ROSS's virtual time, one unit = this many ns
	 * (outputs with WEFT_OUTPUT_VIEWER); 0: real time. */
	uint64_t virtual_unit_ns;
	/* Viewers: spans nested deeper than the viewers keep (512 levels)
	 * are dropped with a warning; without it, the loss is an error
	 * (report.data_lost). */
	int allow_loss;
	/* Installs handlers of SIGINT, SIGTERM, SIGHUP (and for files also
	 * SIGQUIT, SIGPIPE, SIGXFSZ) that remove the temporary files before
	 * the process dies of the signal: for commands; a program with its
	 * own handlers leaves it 0 (the default). */
	int remove_on_signal;
	/* ovni traces: replay the runtimes' models as ovniemu does
	 * (docs/emulation.md). paraver then writes ovniemu's two traces,
	 * thread.{prv,pcf,row} and cpu.{prv,pcf,row}, into the directory OUT
	 * (the views ovni ships open them); perfetto draws the same as
	 * tracks (docs/perfetto.md). WEFT_EMULATE_AUTO (0): emulate
	 * an ovni trace whose threads declare their models (ovni.require)
	 * for the outputs that can (WEFT_OUTPUT_EMULATE); ON: emulate (an
	 * error where it cannot); OFF: the generic mapping of every format. */
	int emulate;
	/* With emulation: every model, required or not (ovniemu -a). */
	int all_models;
	/* With emulation into paraver: also the breakdown traces of the
	 * nOS-V, Nanos6 and OpenMP models, nosv-breakdown.*,
	 * nanos6-breakdown.* and openmp-breakdown.*
	 * (ovniemu -b). */
	int breakdown;
	/* With emulation into paraver: the directory of ovni's Paraver views
	 * (.cfg files, thread/ and cpu/ below it: an installed ovni's
	 * share/ovni, or ovni's sources' cfg/), copied into OUT/cfg/ as
	 * ovniemu copies them. NULL: the first of $OVNI_CONFIG_DIR,
	 * /usr/local/share/ovni, /usr/share/ovni that holds them, else none;
	 * "": none. The views ovniemu makes for the trace (the nOS-V
	 * hardware counters') are written into OUT/cfg/ either way. */
	const char *ovni_cfg;
} weft_convert_options;

/* weft_convert_options.emulate */
enum weft_emulate { WEFT_EMULATE_AUTO = 0, WEFT_EMULATE_ON = 1, WEFT_EMULATE_OFF = 2 };

/* Everything off: output chosen by the path, no window, real time. */
void weft_convert_options_init(weft_convert_options *options);

/* What a conversion met and said. Free with weft_convert_report_free(). */
typedef struct weft_convert_report {
	const char *output;          /* the output that ran (registry name) */
	/* Every output: the events that the filter selected (pattern and
	 * time window); 0 when it selected none. */
	uint64_t selected;
	/* Viewer outputs: what the view layer met. */
	uint64_t events;             /* events read */
	uint64_t unmatched_leaves;   /* leaves that closed no open span (skipped) */
	uint64_t unclosed_spans;     /* spans closed at the end of their stream */
	uint64_t state_restarts;     /* state spans entered again while on */
	uint64_t too_deep;           /* spans past the nesting limit (dropped) */
	uint64_t no_real_time;       /* events without a real time (left out) */
	uint64_t virtual_end;        /* samples at the end of the run (left out) */
	uint64_t no_virtual_time;    /* events without a usable virtual time */
	uint64_t bad_fields;         /* events whose fields could not be decoded */
	/* chrome with heph_compat: events left at their own timestamp by
	 * the same-start fix-up. */
	uint64_t fixup_stuck;
	/* pallas: what the mapping had to adapt (docs/convert-pallas.md). */
	uint64_t leave_fallbacks;    /* leaves written as Generic events */
	uint64_t interval_fallbacks; /* overlapping intervals as Generic events */
	uint64_t depth_fallbacks;    /* blocks too deep for Pallas 0.20 */
	uint64_t strings_left_out;   /* string values not kept as attributes */
	uint64_t payloads_cut;       /* payloads longer than an attribute list */
	uint64_t fields_left_out;    /* fields that did not fit an attribute list */
	/* 1: OUT is complete, but some data could not be read or was
	 * dropped (`weft convert` exits with 1). */
	int data_lost;
	/* Every line to show, in order: the errors, warnings and notes of
	 * the conversion and the trace's diagnostics, e.g. "warning: 3 span(s)
	 * never closed: ..." (`weft convert` prints each after "weft
	 * convert: "). NUL-terminated, owned by the report. */
	size_t message_count;
	char **messages;
} weft_convert_report;

/*
 * Converts `trace` as `options` say, into a temporary file (or directory)
 * next to OUT that is renamed over OUT at the end, so that OUT is either
 * as it was or whole. Returns 0 when OUT was written (report->data_lost
 * tells whether data was lost on the way), or a negative WEFT_E* code
 * when nothing was: WEFT_EINVAL for an unknown output or options that do
 * not fit it (a window that ends before it starts, heph_compat for an
 * output other than chrome, virtual time or allow_loss for a non-viewer,
 * "-" for an output of several files), WEFT_EEXIST when OUT exists
 * without `force` (or, for pallas, is not a Pallas trace directory), or
 * the error that stopped it. The report is filled from scratch (what it
 * held is not freed): its messages say why, as weft_last_error() does.
 */
int weft_convert(weft_trace *trace, const weft_convert_options *options,
		 weft_convert_report *report);

/* Frees the report's messages (the counts stay); NULL is fine. */
void weft_convert_report_free(weft_convert_report *report);

WEFT_API_END

#ifdef __cplusplus
}
#endif

#endif /* WEFT_CONVERT_H */
