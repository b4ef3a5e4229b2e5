/* SPDX-License-Identifier: MIT */
/*
 * weft/emu.h - the ovni emulation: the runtime models of an ovni trace
 * (ovni, nOS-V, Nanos6, ...) replayed as ovniemu 1.14 replays them, and
 * what they say: how the channels of every thread and CPU change (the
 * records of ovniemu's thread.prv and cpu.prv, with their labels), and
 * the rules the trace breaks (ovniemu's errors and warnings).
 *
 *   weft_emu *e;
 *   if (weft_emu_create(trace, NULL, &e) == 0) {
 *       const weft_emu_change *c;
 *       int rc;
 *       while ((rc = weft_emu_next(e, &c)) == 1)
 *           if (c->object == WEFT_EMU_THREAD && strcmp(c->channel, "type") == 0)
 *               printf("%s %" PRIu64 " %s\n", weft_emu_thread(e, c->row)->label,
 *                      c->time, c->label ? c->label : "-");
 *       for (size_t i = 0; i < weft_emu_diag_count(e); i++)
 *           ...  // the rule that stopped it (rc == WEFT_EFORMAT), warnings
 *       weft_emu_free(e);
 *   }
 *
 * Objects: a row per thread (a stream of the loom.* / proc.* / thread.*
 * hierarchy), a row per CPU and one virtual CPU per loom (threads
 * outside any CPU), numbered as ovniemu numbers its rows.
 *
 * Changes: the emulator reads the trace with a time-ordered cursor of its
 * own and hands each event to its model; the channels it changed come out
 * one by one, in ovniemu's record order (weft convert -t paraver
 * --emulate writes the same records). A channel holds a value or a stack
 * of values (a subsystem stack: the top shows); value 0 is none. Which
 * models run: those the threads declare (ovni.require), or all of them.
 *
 * Memory: the state of the threads, CPUs and live tasks, and the changes
 * of one event; nothing per event read. Not thread-safe: one emulator per
 * thread (several emulators of one trace may run at once).
 */
#ifndef WEFT_EMU_API_H
#define WEFT_EMU_API_H

#include <stddef.h>
#include <stdint.h>

#include "weft/api.h"
#include "weft/error.h"
#include "weft/trace.h"

#ifdef __cplusplus
extern "C" {
#endif
WEFT_API_BEGIN

typedef struct weft_emu weft_emu;

/* What the emulator does. Initialise with weft_emu_options_init(). */
typedef struct weft_emu_options {
	/* 1: run every model, whether the threads require it or not
	 * (ovniemu -a; the way to emulate traces of libovni before 1.5,
	 * which declare no models). */
	int all_models;
	/* 1: skip the checks of what is left open at the end of the trace
	 * (stacks not empty, threads not dead: ovniemu's linter mode -l). */
	int no_end_checks;
} weft_emu_options;

void weft_emu_options_init(weft_emu_options *options);

/* The two kinds of rows: ovniemu's thread.prv and cpu.prv. */
typedef enum weft_emu_object {
	WEFT_EMU_THREAD = 0,
	WEFT_EMU_CPU = 1
} weft_emu_object;

/* A thread (a row of thread.prv). */
typedef struct weft_emu_thread_info {
	int64_t tid;
	int64_t pid;
	int64_t rank;         /* of its process; -1 when none */
	int64_t app_id;       /* of its process; 0 when none */
	uint32_t stream;      /* its stream index */
	uint32_t loom;        /* index of its loom (weft_emu_cpu_info.loom) */
	const char *label;    /* the row's name in thread.row: "TH 1.123" */
} weft_emu_thread_info;

/* A CPU (a row of cpu.prv): a physical one, or its loom's virtual CPU. */
typedef struct weft_emu_cpu_info {
	uint32_t loom;        /* index of its loom, in ovniemu's order */
	const char *loom_name;/* "loom.vm.0" */
	int64_t phyid;        /* its physical id; -1 for the virtual CPU */
	int64_t index;        /* its index in the loom's loom_cpus; -1: virtual */
	const char *label;    /* "CPU 0.1", "vCPU 0.*" (cpu.row without the pad) */
} weft_emu_cpu_info;

/* A channel of a row changed: one record of thread.prv or cpu.prv. */
typedef struct weft_emu_change {
	uint64_t clock;       /* the trace clock (ns) of the event behind it */
	uint64_t time;        /* ns since the first event (the .prv time) */
	weft_emu_object object;
	uint32_t row;         /* thread or CPU index */
	uint32_t type;        /* Paraver event type */
	int64_t value;        /* Paraver value; 0: none */
	/* The value's label (a subsystem, a task type label, a thread
	 * state, a CPU), or NULL (a number: a task id, a TID). */
	const char *label;
	/* Stack channels: how many values it holds (shown or not: 0 when
	 * the value is 0); the other channels: their nesting depth when the
	 * model gives one (task ids: the bodies on the thread), else 0. */
	uint32_t depth;
	/* Stack channels: the `depth` values of the stack, bottom first (the
	 * last is `value`); NULL for the other channels and when empty. */
	const int64_t *stack;
	/* The channel: its model ("nosv", "ovni"; "system" for the thread
	 * states, affinity and TIDs and the CPUs' running threads), its name
	 * in the model ("subsystem", "state"), its title ("nOS-V subsystem",
	 * "Thread: thread state") and the name of its type in the row's
	 * .pcf ("nOS-V subsystem of the RUNNING thread"). */
	const char *model;
	const char *channel;
	const char *title;
	const char *pcf_name;
	/* The event that caused it: its stream and byte offset in the
	 * stream's file (WEFT_NO_OFFSET: none). */
	uint32_t event_stream;
	uint64_t event_offset;
} weft_emu_change;

/*
 * An emulator of `trace` (an ovni trace; `options` NULL: the defaults).
 * 0, or a negative WEFT_E* code with the message set: WEFT_EINVAL (not
 * an ovni trace), WEFT_EFORMAT (refused before its first event, as
 * ovniemu refuses it: a loom without CPUs, a model version ovniemu 1.14
 * does not emulate, a thread that declares no models without
 * all_models; the message names the file and the rule), WEFT_ENOMEM.
 */
int weft_emu_create(weft_trace *trace, const weft_emu_options *options, weft_emu **out);
/* Frees the emulator (NULL: nothing); the trace stays open. */
void weft_emu_free(weft_emu *emu);

/*
 * The next change: 1 and *change (valid until the next call), 0 at the
 * end, or a negative code: WEFT_EFORMAT when the trace breaks a rule of
 * its models (the emulation stops there; the rule is the last error
 * diagnostic and the message, with the file and offset of the event),
 * or the reading's error. Once it returned 0 or an error, it returns the
 * same again.
 */
int weft_emu_next(weft_emu *emu, const weft_emu_change **change);

/* The threads and CPUs, in row order (NULL past the end). */
size_t weft_emu_thread_count(const weft_emu *emu);
const weft_emu_thread_info *weft_emu_thread(const weft_emu *emu, size_t index);
size_t weft_emu_cpu_count(const weft_emu *emu);
const weft_emu_cpu_info *weft_emu_cpu(const weft_emu *emu, size_t index);

/* The models it runs, in ovniemu's order: name ("nosv") and the version
 * of the model it emulates ("2.6.0"); NULL past the end. */
size_t weft_emu_model_count(const weft_emu *emu);
const char *weft_emu_model_name(const weft_emu *emu, size_t index);
const char *weft_emu_model_version(const weft_emu *emu, size_t index);

/*
 * The label of `value` of Paraver type `type` on rows of `object` (a
 * fixed label of its model, a task type or mark label known so far, a
 * thread state, a CPU), or NULL (a number, or not known yet): what the
 * .pcf says, for the values of a change's stack below its top.
 */
const char *weft_emu_value_label(weft_emu *emu, weft_emu_object object, uint32_t type,
				 int64_t value);

/* Events handled so far, the trace clock of the first one (time 0) and
 * the time of the last one (ns since the first: the .prv duration). */
uint64_t weft_emu_event_count(const weft_emu *emu);
uint64_t weft_emu_start_clock(const weft_emu *emu);
uint64_t weft_emu_duration(const weft_emu *emu);

/*
 * What the emulation found, in order: the rule an event broke (error:
 * file = the event's stream file, offset = its byte offset; message =
 * the rule, the event and its time), the errors of the end checks (file
 * = the thread's stream file, no offset), warnings (each once; see
 * weft_emu_diag_repeats()). NULL past the end; valid until the next
 * weft_emu_next().
 */
size_t weft_emu_diag_count(const weft_emu *emu);
const weft_diag *weft_emu_diag(const weft_emu *emu, size_t index);
/* How many times the diagnostic was met (warnings repeat), 0 past the end. */
uint64_t weft_emu_diag_repeats(const weft_emu *emu, size_t index);

/*
 * The .pcf text of thread.prv or cpu.prv as ovniemu writes it, with the
 * labels known so far (task types come with their events: ask at the
 * end). malloc'd: free() it; NULL without memory (message set).
 */
char *weft_emu_pcf_text(weft_emu *emu, weft_emu_object object);

WEFT_API_END

#ifdef __cplusplus
}
#endif

#endif /* WEFT_EMU_API_H */
