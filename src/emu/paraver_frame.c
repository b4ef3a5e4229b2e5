/* SPDX-License-Identifier: MIT */
/*
 * emu/paraver_frame.c - the fixed parts of the Paraver files ovniemu
 * writes (docs/emulation.md, sections 1.1, 1.4 and 1.5): the row labels
 * and .row files, the .prv header line and the .pcf head. Pure text: the
 * Paraver writer mode that writes them to files comes in a later step.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu/emu.h"

/* Number of rows of thread.prv or cpu.prv. */
static size_t row_count(const weft__emu_system *sys, weft__emu_kind kind)
{
	return kind == WEFT__EMU_THREAD ? sys->nthreads : sys->ncpus;
}

/*
 * The label of row `row` (0-based): "TH <app id>.<tid>" for a thread,
 * " CPU <loom index>.<phyid>" (leading blank) or "vCPU <loom index>.*"
 * for a CPU, as ovniemu's .row files write them.
 */
void weft__emu_row_label(const weft__emu_system *sys, weft__emu_kind kind,
			 size_t row, char *buf, size_t cap)
{
	if (kind == WEFT__EMU_THREAD) {
		const weft__emu_thread *t = &sys->threads[row];
		snprintf(buf, cap, "TH %" PRId64 ".%" PRId64, sys->procs[t->proc].app_id,
			 t->tid);
	} else if (sys->cpus[row].phyid < 0) {
		snprintf(buf, cap, "vCPU %zu.*", sys->cpus[row].loom);
	} else {
		snprintf(buf, cap, " CPU %zu.%" PRId64, sys->cpus[row].loom,
			 sys->cpus[row].phyid);
	}
}

/*
 * thread.row or cpu.row: one node named "hostname", then one label per
 * row. Every label fits in 64 bytes, which sizes the buffer in one pass.
 */
char *weft__emu_row_text(const weft__emu_system *sys, weft__emu_kind kind)
{
	size_t n = row_count(sys, kind);
	size_t cap = 64 + n * 64, len;
	char *text = malloc(cap);
	if (text == NULL)
		return NULL;
	len = (size_t)snprintf(text, cap, "LEVEL NODE SIZE 1\nhostname\n\n"
			       "LEVEL THREAD SIZE %zu\n", n);
	for (size_t i = 0; i < n; i++) {
		char label[64];
		weft__emu_row_label(sys, kind, i, label, sizeof label);
		len += (size_t)snprintf(text + len, cap - len, "%s\n", label);
	}
	return text;
}

/*
 * The .prv header line: ovniemu's fixed date, the duration zero-padded to
 * 20 digits, no node level, one application of one task holding every
 * row on node 1.
 */
char *weft__emu_prv_header(const weft__emu_system *sys, weft__emu_kind kind,
			   uint64_t duration)
{
	char *text = malloc(128);
	if (text != NULL)
		snprintf(text, 128, "#Paraver (19/01/38 at 03:14):%020" PRIu64
			 "_ns:0:1:1(%zu:1)\n", duration, row_count(sys, kind));
	return text;
}

/* The default options, semantic and 23 state colours every .pcf starts with. */
static const char pcf_head[] =
	"DEFAULT_OPTIONS\n"
	"\n"
	"LEVEL               THREAD\n"
	"UNITS               NANOSEC\n"
	"LOOK_BACK           100\n"
	"SPEED               1\n"
	"FLAG_ICONS          ENABLED\n"
	"NUM_OF_STATE_COLORS 1000\n"
	"YMAX_SCALE          37\n"
	"\n"
	"\n"
	"DEFAULT_SEMANTIC\n"
	"\n"
	"THREAD_FUNC         State As Is\n"
	"\n"
	"\n"
	"STATES_COLOR\n"
	"0   {  0,   0,   0}\n"
	"1   {  0, 130, 200}\n"
	"2   {217, 217, 217}\n"
	"3   {230,  25,  75}\n"
	"4   { 60, 180,  75}\n"
	"5   {255, 225,  25}\n"
	"6   {245, 130,  48}\n"
	"7   {145,  30, 180}\n"
	"8   { 70, 240, 240}\n"
	"9   {240,  50, 230}\n"
	"10  {210, 245,  60}\n"
	"11  {250, 190, 212}\n"
	"12  {  0, 128, 128}\n"
	"13  {128, 128, 128}\n"
	"14  {220, 190, 255}\n"
	"15  {170, 110,  40}\n"
	"16  {255, 250, 200}\n"
	"17  {128,   0,   0}\n"
	"18  {170, 255, 195}\n"
	"19  {128, 128,   0}\n"
	"20  {255, 215, 180}\n"
	"21  {  0,   0, 128}\n"
	"22  {  0,   0, 255}\n"
	"\n"
	"\n";

/* The 42 lines before the first EVENT_TYPE of every .pcf ovniemu writes. */
const char *weft__emu_pcf_head(void)
{
	return pcf_head;
}
