/* SPDX-License-Identifier: MIT */
/*
 * emu/emu.h - internal API of the ovni emulation layer (issue 17,
 * docs/emulation.md). Step 1 of the build order (section 5.3): the system
 * ovniemu builds before replaying any event (looms, processes, threads and
 * CPUs, sorted and numbered as section 1.3 says) and the fixed parts of
 * the Paraver files it writes (the .row files, the .prv header line, the
 * 42-line .pcf head).
 *
 * Dependency direction: emu uses core and the public reading API only
 * (nodes, streams, their merged metadata, the merged cursor); no output
 * knows about it yet.
 */
#ifndef WEFT_EMU_H
#define WEFT_EMU_H

#include <stddef.h>
#include <stdint.h>

#include "weft/weft.h"

/* A loom (one node of the machine), in ovniemu's order. */
typedef struct weft__emu_loom {
	uint32_t node;        /* its node in the trace's hierarchy */
	const char *id;       /* directory name, "loom.vm.0" (the trace's) */
	int64_t min_rank;     /* lowest rank of its processes, -1 when none */
	int ranked;           /* 1 when every process of the loom has a rank */
	size_t first_cpu;     /* its physical CPUs in weft__emu_system.cpus */
	size_t ncpus;         /* physical CPUs; the virtual CPU follows them */
} weft__emu_loom;

/* A process, in ovniemu's order (loom by loom). */
typedef struct weft__emu_proc {
	uint32_t node;
	size_t loom;          /* index in weft__emu_system.looms */
	int64_t pid;
	int64_t rank;         /* -1 when the process has none */
	int64_t app_id;       /* 0 when the metadata has none */
	int64_t key;          /* order in its loom: rank when the loom is ranked, else pid */
} weft__emu_proc;

/* A thread (one stream), in ovniemu's order: its row in thread.prv - 1. */
typedef struct weft__emu_thread {
	uint32_t stream;
	uint32_t node;
	size_t proc;          /* index in weft__emu_system.procs */
	int64_t tid;
} weft__emu_thread;

/* A CPU, in ovniemu's order: its row in cpu.prv - 1. */
typedef struct weft__emu_cpu {
	size_t loom;          /* index in weft__emu_system.looms */
	int64_t phyid;        /* -1 for the loom's virtual CPU */
} weft__emu_cpu;

/* What ovniemu knows of a trace before its first event. */
typedef struct weft__emu_system {
	weft__emu_loom *looms;
	size_t nlooms;
	weft__emu_proc *procs;
	size_t nprocs;
	weft__emu_thread *threads;
	size_t nthreads;
	weft__emu_cpu *cpus;  /* physical and virtual, loom by loom */
	size_t ncpus;
	int looms_by_rank;    /* 1: looms sorted by rank, 0: by name */
} weft__emu_system;

/*
 * Builds the system of an ovni trace from its nodes and their metadata:
 * 0, or a negative WEFT_E* code with the last error set (a loom without
 * CPUs is refused as ovniemu refuses it: WEFT_EFORMAT).
 */
int weft__emu_system_load(const weft_trace *trace, weft__emu_system **out);
void weft__emu_system_free(weft__emu_system *sys);

/*
 * The duration ovniemu writes in the .prv header of an accepted trace: the
 * last event time minus the first over all streams (0 without events),
 * read with a merged cursor.
 */
int weft__emu_duration(weft_trace *trace, uint64_t *out);

/* Which Paraver trace: thread.* (a row per thread) or cpu.* (per CPU). */
typedef enum weft__emu_kind {
	WEFT__EMU_THREAD = 0,
	WEFT__EMU_CPU = 1
} weft__emu_kind;

/* The label of a row: "TH 1.123", " CPU 0.1", "vCPU 0.*". */
void weft__emu_row_label(const weft__emu_system *sys, weft__emu_kind kind,
			 size_t row, char *buf, size_t cap);
/* The text of thread.row or cpu.row (malloc'd; NULL when out of memory). */
char *weft__emu_row_text(const weft__emu_system *sys, weft__emu_kind kind);
/* The header line of thread.prv or cpu.prv, newline included (malloc'd). */
char *weft__emu_prv_header(const weft__emu_system *sys, weft__emu_kind kind,
			   uint64_t duration);
/* The 42-line head of every .pcf ovniemu writes (a static string). */
const char *weft__emu_pcf_head(void);

#endif
