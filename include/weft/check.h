/* SPDX-License-Identifier: MIT */
/*
 * weft/check.h - checking a whole trace: every event is read and what is
 * wrong is listed, whatever the format (what `weft check` prints).
 *
 * The problems found here come on top of the trace's own diagnostics
 * (weft_trace_diag_*), which opening and reading record and which a
 * front end lists first. Each format adds what only it knows through its
 * backend: ovni the clock order of its unordered regions, ovniemu's clock
 * gate and (with `sorted`) whether the regions are sorted, and (with
 * `models`) what the emulation of its runtime models refuses; Pallas
 * what Pallas 0.20's own reader cannot read (recorded as trace
 * diagnostics, see weft_pallas_check()).
 */
#ifndef WEFT_CHECK_H
#define WEFT_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include "weft/api.h"
#include "weft/error.h"
#include "weft/trace.h"

#ifdef __cplusplus
extern "C" {
#endif
WEFT_API_BEGIN

/* What weft_trace_check() looks for beyond the default checks. */
typedef struct weft_check_options {
	/* Also require sorted unordered regions (what ovniemu requires; the
	 * formats without such regions ignore it). */
	int sorted;
	/* ovni: also run the emulation of the trace's runtime models
	 * (weft/emu.h, as ovniemu -l, writing nothing): the rule an event
	 * breaks is an error at the event's stream file and offset, the end
	 * checks' errors name the thread's stream, a trace refused at load
	 * names its file; ovniemu's warnings (a long flush, an old event) are
	 * notes. Other formats: WEFT_EINVAL. */
	int models;
	/* models: run every model, required or not (ovniemu -a). */
	int all_models;
	/* Threads that read the streams, each its part (by bytes): 0 = the
	 * trace's `threads` option, then WEFT_THREADS, then the cores (at
	 * most 8, one per 32 MiB plus 32 KiB per stream of the trace) when each
	 * stream is read without the others'
	 * bytes (not ROSS); 1 = this thread.
	 * The report does not depend on it (nor on the ranks of a
	 * weft_dist: then rank 0 gets the whole report; the format's checks
	 * of the whole trace and the emulation run there alone). */
	int threads;
} weft_check_options;

void weft_check_options_init(weft_check_options *options);

/* The outcome of weft_trace_check(): the problems it found, in order. */
typedef struct weft_check_report weft_check_report;

/*
 * Reads every event of every stream of `trace` and lists what is wrong:
 * payloads that do not match their event's layout, clocks going back
 * outside unordered regions, spans nested deeper than viewers keep, a
 * stream that cannot be read further, and the checks of the format.
 * Open the trace with `stored_order` set so that clocks are checked as
 * stored. Problems go to the report (at most ten of one kind per stream,
 * then one line that counts the rest); diagnostics go to the trace.
 * Returns 0 and *out (free it with weft_check_report_free()), or
 * WEFT_ENOMEM when not even the report could be made, WEFT_EINVAL
 * when `models` is asked of a trace that is not ovni, or (with a
 * weft_dist) the error of a rank.
 */
int weft_trace_check(weft_trace *trace, const weft_check_options *options,
		     weft_check_report **out);

/* Events read. */
uint64_t weft_check_report_events(const weft_check_report *report);
/* Problems found (the trace's diagnostics not included), and problem i. */
size_t weft_check_report_count(const weft_check_report *report);
const weft_diag *weft_check_report_problem(const weft_check_report *report, size_t i);
/* 1 when memory ran out and some problems are not listed. */
int weft_check_report_incomplete(const weft_check_report *report);
void weft_check_report_free(weft_check_report *report);

WEFT_API_END

#ifdef __cplusplus
}
#endif

#endif /* WEFT_CHECK_H */
