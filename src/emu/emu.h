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
	int64_t index;        /* loom_cpus index (OHx's cpu argument); -1: virtual */
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

/*
 * Which Paraver trace: thread.* (a row per thread), cpu.* (per CPU), and
 * with the breakdown option nanos6-breakdown.*, nosv-breakdown.* and
 * openmp-breakdown.* (a row per physical CPU: what the CPUs do, sorted;
 * breakdown.c).
 */
typedef enum weft__emu_kind {
	WEFT__EMU_THREAD = 0,
	WEFT__EMU_CPU = 1,
	WEFT__EMU_BD_NANOS6 = 2,
	WEFT__EMU_BD_NOSV = 3,
	WEFT__EMU_BD_OPENMP = 4,
	WEFT__EMU_KINDS = 5
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

/* ---- The emulator (emu.c, engine.c, model_*.c) -------------------------------- */

typedef struct weft__emu weft__emu;

typedef struct weft__emu_options {
	int all_models;   /* enable every model, required or not (ovniemu -a) */
	int no_end_checks;/* skip the checks of what is left open at the end
	                     (ovniemu runs them only with -l) */
	int breakdown;    /* the breakdown traces of nOS-V and Nanos6 (ovniemu -b) */
} weft__emu_options;

/* One record of thread.prv or cpu.prv: a row's channel changed. */
typedef struct weft__emu_record {
	uint64_t time;        /* ns since the first event of the trace */
	weft__emu_kind kind;  /* which trace */
	uint32_t row;         /* 0-based: thread or CPU index */
	uint32_t type;        /* Paraver event type */
	int64_t value;        /* Paraver value (0: null) */
	uint32_t depth;       /* stack channels: entries shown (0 when null) */
	uint16_t slot;        /* model channel slot, or WEFT__EMU_NO_SLOT */
} weft__emu_record;

#define WEFT__EMU_NO_SLOT UINT16_MAX

/* Where the records go: 0, or < 0 to stop (the error set). */
typedef struct weft__emu_sink {
	void *ctx;
	int (*record)(void *ctx, const weft__emu_record *r);
} weft__emu_sink;

/* What the emulation reports: the rule an event broke (error), warnings. */
typedef struct weft__emu_diag {
	weft_diag d;          /* file, offset, message owned by the emulator */
	uint64_t time;        /* ns since the first event; UINT64_MAX: none */
	uint64_t count;       /* warnings: how many times it was met */
} weft__emu_diag;

/*
 * An emulator for `trace` (an ovni trace): its system, the models its
 * threads require (all with all_models), their channels. `sink` may be
 * NULL (checking only). 0 or a negative WEFT_E* code with the last error
 * set (a loom without CPUs, a required version that is not emulated, a
 * trace that is not ovni: WEFT_EFORMAT).
 */
int weft__emu_create(weft_trace *trace, const weft__emu_options *options,
		     const weft__emu_sink *sink, weft__emu **out);
/*
 * Handles the next event, in time order: 0, or WEFT_EFORMAT when it
 * breaks a rule of its model (the emulation stops: the error is the last
 * diagnostic), or the sink's error. Events after a failure are refused.
 */
int weft__emu_event(weft__emu *e, const weft_event *ev);
/*
 * Ends the emulation: the end checks, when `complete` (every event of the
 * trace was handled: not after a reading that stopped early) and they are
 * on. 0, or WEFT_EFORMAT when an error was found (now or before).
 */
int weft__emu_finish(weft__emu *e, int complete);
/*
 * Writes to the sink, at `time` (ns since the first event), a record of
 * every row whose last record holds a value: the state of the rows at the
 * start of a time window. 0 or the sink's error.
 */
int weft__emu_snapshot(weft__emu *e, uint64_t time);
/* The time of the first event (the trace clock of time 0), once started. */
uint64_t weft__emu_first_time(const weft__emu *e);
/* The system (looms, processes, threads, CPUs). */
const weft__emu_system *weft__emu_system_of(const weft__emu *e);
/* The header duration: the time of the last event handled. */
uint64_t weft__emu_now(const weft__emu *e);
/* Events handled, and whether the emulation failed. */
uint64_t weft__emu_event_count(const weft__emu *e);
int weft__emu_failed(const weft__emu *e);
/* The diagnostics, in the order they were found. */
size_t weft__emu_diag_count(const weft__emu *e);
const weft__emu_diag *weft__emu_diag_get(const weft__emu *e, size_t i);
/* The .pcf of a trace (malloc'd; NULL without memory). */
char *weft__emu_pcf_text(weft__emu *e, weft__emu_kind kind);
/* 1 when the emulation writes trace `kind` (thread and cpu always). */
int weft__emu_trace_on(const weft__emu *e, weft__emu_kind kind);
/* The file name of a trace without suffix: "thread", "nosv-breakdown". */
const char *weft__emu_trace_name(weft__emu_kind kind);
/* The rows of a trace. */
uint32_t weft__emu_trace_rows(const weft__emu *e, weft__emu_kind kind);
/* The .row text and the .prv header line of a trace (malloc'd, or NULL). */
char *weft__emu_trace_row_text(const weft__emu *e, weft__emu_kind kind);
char *weft__emu_trace_prv_header(const weft__emu *e, weft__emu_kind kind, uint64_t duration);
/* ---- An emulation shared by looms (outputs/emu_shared.c) ---------------------- */

/*
 * The looms of a system share nothing while they are emulated: an event
 * changes the channels of its own thread, of that thread's process (its
 * tasks) and of the CPUs of its loom. So emulators that each take the
 * events of some looms, in the merged order of their streams, write the
 * records one emulator writes of those looms' events, provided each
 * counts time from the same first event. What crosses looms: the
 * warnings (a message is counted over the whole trace), the task types
 * of every process (the labels of their values, known as they are
 * created; the .pcf lists them process by process; a hash collision
 * between two is an end error) and the clock of the last event. These
 * calls carry that to one emulator, which then ends as if it had handled
 * every event.
 */

/* Counts time from `first_time` (the trace clock of the first event of
 * all streams), before the first event. */
void weft__emu_set_origin(weft__emu *e, uint64_t first_time);
/*
 * The warnings said while events are handled (counted across looms, in
 * the order of all events) go to `fn` instead of the emulator's list,
 * with the event's time (since the origin), file and offset. Those of
 * the start and the end stay: every emulator says the former alike.
 */
typedef void (*weft__emu_warning_fn)(void *ctx, uint64_t time, const char *file,
				     uint64_t offset, const char *message);
void weft__emu_set_warning_sink(weft__emu *e, weft__emu_warning_fn fn, void *ctx);
/* Adds a warning so handed over, as if said at `time` (counted as said before). */
void weft__emu_add_warning(weft__emu *e, uint64_t time, const char *file, uint64_t offset,
			   const char *message);
/* The errors among the diagnostics. */
size_t weft__emu_error_count(const weft__emu *e);
/* The threads whose end checks are this emulator's: those of the streams
 * of `streams` (a byte per stream; NULL: none). 0 or WEFT_ENOMEM. */
int weft__emu_set_scope(weft__emu *e, const uint8_t *streams);
/* The emulation was done by others: started at `first_time`, its last
 * event at `now` (since then), `events` handled. */
void weft__emu_set_handled(weft__emu *e, uint64_t first_time, uint64_t now, uint64_t events);
/* Each task type created (by an event: model character, process, id,
 * label) is also handed to `fn`, as it is created. */
typedef void (*weft__emu_type_fn)(void *ctx, char model, uint32_t proc, uint32_t id,
				  const char *label);
void weft__emu_set_type_sink(weft__emu *e, weft__emu_type_fn fn, void *ctx);
/* Creates a task type so handed over: 0, or WEFT_EFORMAT (a model not
 * emulated, no such process, a type the process has: a bug) or WEFT_ENOMEM. */
int weft__emu_task_type_add(weft__emu *e, char model, uint32_t proc, uint32_t id,
			    const char *label);

/*
 * 1 when `trace` is an ovni trace whose thread streams all declare the
 * models they use (ovni.require, libovni 1.5 and later), each a model the
 * emulator knows in a version it handles, and whose system can be built
 * (threads below their process and loom, looms with CPUs): what the
 * outputs emulate by default (WEFT_EMULATE_AUTO).
 */
int weft__emu_declares_models(const weft_trace *trace);
/* What a model channel slot (weft__emu_record.slot) is. */
typedef struct weft__emu_slot_info {
	const char *model;    /* "nosv" */
	const char *name;     /* "subsystem" */
	const char *prefix;   /* the .pcf name before the tracking suffix */
	uint32_t type;        /* Paraver event type */
	int stack;            /* its values nest (push, pop) */
	int track;            /* thread rows: 0 always, 1 while Running, 2 while active */
} weft__emu_slot_info;

/* The slot's description: 0, or WEFT_EINVAL past the last slot. */
int weft__emu_slot_describe(const weft__emu *e, uint16_t slot, weft__emu_slot_info *out);
/* Model channel slots of every thread and CPU. */
uint32_t weft__emu_slot_count(const weft__emu *e);
/*
 * The label of `value` on `slot` (a fixed label of its model, a task type
 * or mark label known so far), or NULL (a number, or not known yet).
 */
const char *weft__emu_value_label(weft__emu *e, uint16_t slot, int64_t value);
/*
 * The entries, bottom first, of the stack that record `r` shows (its
 * r->depth entries; the top is r->value): the stack of the thread's
 * channel, or of the thread a CPU runs. Valid during the sink's call (and
 * for the records of weft__emu_snapshot). NULL when the record's channel
 * is no stack, or shows none. For the outputs that draw nesting.
 */
const int64_t *weft__emu_record_stack(const weft__emu *e, const weft__emu_record *r);
/* The thread whose channel record `r` shows: its row, or the thread its CPU
 * runs; -1 when none. Valid as weft__emu_record_stack's entries. */
int32_t weft__emu_record_thread(const weft__emu *e, const weft__emu_record *r);
/* Receives one Paraver view (.cfg) made for the trace: its path below
 * the output's cfg/ ("thread/nosv/hwc-PAPI_TOT_CYC.cfg") and its text. */
typedef int (*weft__emu_view_fn)(void *arg, const char *path, const char *text);
/*
 * The Paraver views ovniemu makes for this trace (not the ones it copies
 * from ovni's installation): the nOS-V hardware counters' two per
 * counter, cfg/{thread,cpu}/nosv/hwc-<name>.cfg. Each is given to `fn`
 * (its path below cfg/, its text); 0, or the first < 0 of `fn` or
 * WEFT_ENOMEM.
 */
int weft__emu_views(weft__emu *e, weft__emu_view_fn fn, void *arg);
/* Enabled models: count, and the name and version of each (ovniemu's order). */
size_t weft__emu_model_count(const weft__emu *e);
const char *weft__emu_model_name(const weft__emu *e, size_t i);
void weft__emu_free(weft__emu *e);

#endif
