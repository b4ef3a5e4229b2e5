/* SPDX-License-Identifier: MIT */
/*
 * formats/ovni/ovni_check.c - what weft_trace_check() adds for ovni
 * traces: the clocks of a stream are checked in stored order outside its
 * unordered regions (OU[ .. OU]), and after every stream was read, the
 * clock gate ovniemu checks before emulating and, when asked, whether
 * the unordered regions are sorted (what ovniemu requires).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "formats/ovni/ovni_internal.h"

/* ovniemu's bound between the first clocks of the streams: one hour. */
#define CLOCK_GATE_NS (3600ull * 1000000000ull)

/*
 * The clock gate ovniemu checks before emulating: the first clock of each
 * stream (clock offsets applied) within one hour of that of the first
 * stream (in path order) that has events; otherwise the looms need the
 * clock offsets of ovnisync ("detected large clock gate").
 */
static void check_clock_gate(const weft_trace *trace, const weft__stream_start *starts,
			     weft__check_sink *sink)
{
	size_t n = trace->stream_count;
	size_t first = SIZE_MAX;
	char message[1024];

	for (size_t i = 0; i < n; i++)
		if (starts[i].seen && (first == SIZE_MAX ||
		    strcmp(trace->streams[i].path, trace->streams[first].path) < 0))
			first = i;
	for (size_t i = 0; first != SIZE_MAX && i < n; i++) {
		uint64_t a = starts[i].time, b = starts[first].time;
		uint64_t delta = a > b ? a - b : b - a;
		if (!starts[i].seen || delta <= CLOCK_GATE_NS)
			continue;
		snprintf(message, sizeof message, "first clock %" PRIu64 " is %.2f h from the "
			 "first clock of %s (more than 1 h): ovniemu refuses the trace "
			 "(\"detected large clock gate\") unless clock offsets align the "
			 "looms (ovnisync's clock-offsets.txt, --clock-offsets)",
			 a, (double)delta / 3.6e12, trace->streams[first].path);
		sink->add(sink, (uint32_t)i, WEFT_SEV_ERROR, WEFT_EUNSUPPORTED,
			  trace->streams[i].file, starts[i].offset, message);
	}
}

/* What weft_ovni_sort() would do, as one trace-level problem. */
static void check_sorted(const char *path, weft__check_sink *sink)
{
	weft_ovni_sort_report report;
	char message[1024];
	int rc;

	memset(&report, 0, sizeof report);
	rc = weft_ovni_sort(path, 1, &report);
	if (rc < 0) {
		snprintf(message, sizeof message, "cannot check the unordered regions: %s",
			 weft_last_error());
		sink->add(sink, 0, WEFT_SEV_ERROR, rc, path, WEFT_NO_OFFSET, message);
		return;
	}
	if (report.unsorted_streams == 0)
		return;
	snprintf(message, sizeof message, "%" PRIu64 " of %" PRIu64 " stream%s %s unsorted "
		 "unordered regions (%" PRIu64 " region%s, %" PRIu64 " event%s out of place)",
		 report.unsorted_streams, report.streams, report.streams == 1 ? "" : "s",
		 report.unsorted_streams == 1 ? "has" : "have", report.regions,
		 report.regions == 1 ? "" : "s", report.moved_events,
		 report.moved_events == 1 ? "" : "s");
	sink->add(sink, 0, WEFT_SEV_ERROR, WEFT_EFORMAT, path, WEFT_NO_OFFSET, message);
}

/* The checks of the whole trace, after its streams were read. */
static void ovni_trace_check(weft_trace *trace, const weft_check_options *options,
			     const weft__stream_start *starts, weft__check_sink *sink)
{
	if (starts != NULL)
		check_clock_gate(trace, starts, sink);
	if (options->sorted)
		check_sorted(trace->path, sink);
}

const weft__check_hooks weft__ovni_check_hooks = {
	.region_open = "OU[",
	.region_close = "OU]",
	.trace_check = ovni_trace_check,
};
