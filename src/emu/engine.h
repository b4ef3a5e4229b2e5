/* SPDX-License-Identifier: MIT */
/*
 * emu/engine.h - what the models of the ovni emulation share: channels,
 * the thread and CPU state they live in, the model table, and the calls
 * an event handler makes (docs/emulation.md, section 3.1).
 *
 * The state of the emulated system is a set of channels. A channel holds
 * a value, or a stack whose top is its value; an empty channel is null
 * (Paraver value 0). Each thread has, per enabled model, one raw channel
 * per entry of the model's table (the model's own state: "the subsystem
 * stack of this thread") and, for channels that follow the thread's
 * state (tracking RUN or ACT), an output channel: the raw value while the
 * thread is Running (RUN) or active (ACT: Running, Cooling, Warming),
 * else null. Each CPU has one output channel per table entry: the raw
 * value of the one thread running on it, else a default (null, or
 * Resting for the idle channels). Threads and CPUs also have system
 * channels (CPU affinity, state, TID; PID, TID and count of the running
 * threads).
 *
 * An event is handled in four phases, as ovniemu does, so that the same
 * records come out in the same order:
 *   1. the model's handler changes raw and system channels; each change
 *      marks the channel dirty and appends it to the dirty list;
 *   2. propagation walks the dirty list (which grows as it goes): a
 *      thread's state selects or drops its RUN/ACT outputs, a raw channel
 *      updates its selected outputs (the thread's, and the CPU's that
 *      runs it), a CPU's running thread selects the CPU's outputs;
 *   3. every dirty channel bound to a Paraver row is written, unless its
 *      duplicate rule says not to (WEFT__PRV_*);
 *   4. every dirty channel keeps its value as its last one and is clean.
 * A channel may change once per event unless it is an output (written
 * several times while dirty); setting the value it had at the last event
 * is an error unless the channel allows duplicates (or ignores them).
 *
 * Internal to src/emu (weft__emu_ prefix).
 */
#ifndef WEFT_EMU_ENGINE_H
#define WEFT_EMU_ENGINE_H

#include <stdarg.h>
#include <stdint.h>

#include "emu/emu.h"

/* ---- Values and channels ------------------------------------------------------ */

/* A channel value: `v` when `set`, else null. */
typedef struct weft__emu_val {
	int64_t v;
	int64_t set;
} weft__emu_val;

static inline weft__emu_val weft__emu_int(int64_t v)
{
	return (weft__emu_val){ v, 1 };
}

static inline weft__emu_val weft__emu_null(void)
{
	return (weft__emu_val){ 0, 0 };
}

static inline int weft__emu_val_eq(weft__emu_val a, weft__emu_val b)
{
	return a.set == b.set && a.v == b.v;
}

/* How a thread's row shows a model channel (ovniemu's thread tracking). */
enum weft__emu_track {
	WEFT__TRACK_ANY = 0,  /* always the raw value */
	WEFT__TRACK_RUN,      /* the raw value while Running, else null */
	WEFT__TRACK_ACT       /* while Running, Cooling or Warming */
};

/* The duplicate and value rules of a Paraver row (ovniemu's prv flags). */
enum weft__prv_flags {
	WEFT__PRV_EMITDUP = 1u << 0,     /* a repeated value is written again */
	WEFT__PRV_SKIPDUP = 1u << 1,     /* a repeated value writes nothing */
	WEFT__PRV_NEXT = 1u << 2,        /* the value written is value + 1 */
	WEFT__PRV_ZERO = 1u << 3,        /* value 0 may be written for a number */
	WEFT__PRV_SKIPDUPNULL = 1u << 4  /* a repeated null writes nothing, a
	                                    repeated number is written again */
};
/* Without any of EMITDUP, SKIPDUP, SKIPDUPNULL a repeated value is an error. */

/* Channel properties. */
enum weft__emu_chan_props {
	WEFT__CHAN_STACK = 1u << 0,       /* a stack; its top is the value */
	WEFT__CHAN_ALLOW_DUP = 1u << 1,   /* may be set to its last value */
	WEFT__CHAN_IGNORE_DUP = 1u << 2,  /* setting its last value does nothing */
	WEFT__CHAN_DIRTY_WRITE = 1u << 3  /* may change again while dirty (outputs) */
};

/* What a channel is, for the propagation. */
enum weft__emu_chan_role {
	WEFT__ROLE_PLAIN = 0,
	WEFT__ROLE_TH_STATE,   /* a thread's state: selects its RUN/ACT outputs */
	WEFT__ROLE_TH_RAW,     /* a thread's raw model channel */
	WEFT__ROLE_CPU_THRUN,  /* a CPU's running thread: selects its outputs */
	WEFT__ROLE_CPU_OUT,    /* a CPU's model output (the breakdowns read some) */
	WEFT__ROLE_BD_TR,      /* breakdown: a CPU's runtime or task value */
	WEFT__ROLE_BD_TRI      /* breakdown: the same, or its idle state */
};

/* Which Paraver trace a channel is written to (0: none). */
enum weft__emu_file {
	WEFT__FILE_NONE = 0,
	WEFT__FILE_THREAD,     /* weft__emu_kind + 1 */
	WEFT__FILE_CPU,
	WEFT__FILE_BD_NANOS6,
	WEFT__FILE_BD_NOSV,
	WEFT__FILE_BD_OPENMP
};

#define WEFT__EMU_STACK_MAX 512  /* deepest stack (ovniemu's limit) */

typedef struct weft__emu_chan {
	weft__emu_val cur;       /* the value now (a stack: its top) */
	weft__emu_val last;      /* the value at the end of the last event */
	weft__emu_val emitted;   /* the last value written (duplicate rules) */
	int64_t written;         /* the Paraver value of its last record (0: none) */
	int64_t *stack;          /* stack channels: the entries, bottom first */
	uint32_t depth, cap;
	uint32_t owner;          /* its thread or CPU index */
	uint32_t type;           /* Paraver event type when `file` is set */
	uint16_t slot;           /* model channels: the slot (weft__emu.slots) */
	uint8_t props;           /* enum weft__emu_chan_props */
	uint8_t role;            /* enum weft__emu_chan_role */
	uint8_t file;            /* enum weft__emu_file */
	uint8_t prv_flags;       /* enum weft__prv_flags */
	uint8_t dirty;
	uint8_t emitted_set;     /* `emitted` holds a written value */
	uint8_t on_cpu;          /* `owner` is a CPU (else a thread) */
} weft__emu_chan;

/* ---- Models --------------------------------------------------------------------- */

/* A value and its .pcf label; lists end with a NULL label. */
typedef struct weft__emu_label {
	int64_t value;
	const char *text;
} weft__emu_label;

/* One channel of a model, as ovniemu's setup tables declare it. */
typedef struct weft__emu_chan_spec {
	const char *name;          /* "subsystem" */
	uint32_t type;             /* Paraver event type */
	const char *prefix;        /* .pcf type name before the tracking suffix */
	const weft__emu_label *labels; /* fixed values, or NULL */
	uint8_t stack;             /* a stack channel */
	uint8_t dup;               /* the thread channel allows duplicates */
	uint8_t track;             /* enum weft__emu_track of the thread row */
	uint8_t prv_flags;         /* enum weft__prv_flags of both rows */
	uint8_t cpu_default_set;   /* the CPU row shows cpu_default when it runs
	                              no single thread (else null) */
	int64_t cpu_default;
} weft__emu_chan_spec;

typedef struct weft__emu weft__emu;
typedef struct weft__emu_ev weft__emu_ev;
typedef struct weft__emu_pcf_type weft__emu_pcf_type;
typedef struct weft__emu_pcf weft__emu_pcf;

/* A model: its identity, its channels and what it does at each phase. */
typedef struct weft__emu_model_spec {
	char id;                   /* the model character of its events: 'V' */
	const char *name;          /* "nosv": the key of ovni.require */
	const char *version;       /* the version ovniemu 1.14 emulates */
	const weft__emu_chan_spec *chans;
	uint32_t nchans;
	/* Everything optional (NULL). `create` makes the model's state, once
	 * the system and channels exist; `connect` gives the channels their
	 * first values (before the first event, written by no record);
	 * `event` handles one event of the model; `finish` runs the end
	 * checks (only when every event was handled); `pcf` adds to a .pcf
	 * after the model's channel types (per-trace values such as task
	 * type labels, types of its own such as marks); `label` names a
	 * per-trace value; `free` frees
	 * the state. Each returns 0 or, after weft__emu_fail(), -1. */
	int (*create)(weft__emu *e);
	int (*connect)(weft__emu *e);
	int (*event)(weft__emu *e, const weft__emu_ev *ev);
	int (*finish)(weft__emu *e);
	int (*pcf)(weft__emu *e, weft__emu_kind kind, weft__emu_pcf *pcf);
	/* The label of a per-trace value of channel `chan` (an index in the
	 * model's table, or past it for channels it added), known so far (a
	 * task type's label): NULL when none. For the outputs that name
	 * values as they go (Perfetto). */
	const char *(*label)(weft__emu *e, uint32_t chan, int64_t value);
	/* The Paraver views the model makes for this trace (ovniemu writes
	 * them next to the views it copies), each given to `fn`. */
	int (*views)(weft__emu *e, weft__emu_view_fn fn, void *arg);
	void (*free)(weft__emu *e);
} weft__emu_model_spec;

/* The models ovniemu 1.14 knows, each in its own file (model_*.c). */
extern const weft__emu_model_spec weft__emu_model_ovni;
extern const weft__emu_model_spec weft__emu_model_nosv;
extern const weft__emu_model_spec weft__emu_model_nanos6;
extern const weft__emu_model_spec weft__emu_model_openmp;
extern const weft__emu_model_spec weft__emu_model_kernel;
extern const weft__emu_model_spec weft__emu_model_mpi;
extern const weft__emu_model_spec weft__emu_model_tampi;
extern const weft__emu_model_spec weft__emu_model_nodes;

/* ---- Threads and CPUs -------------------------------------------------------------- */

/* Thread states (Paraver type 4 values). */
enum weft__emu_th_state {
	WEFT__TH_UNKNOWN = 0,
	WEFT__TH_RUNNING,
	WEFT__TH_PAUSED,
	WEFT__TH_DEAD,
	WEFT__TH_COOLING,
	WEFT__TH_WARMING
};

/* A thread's system channels. */
enum { WEFT__TH_CH_CPU = 0, WEFT__TH_CH_TID, WEFT__TH_CH_STATE, WEFT__TH_CH_MAX };
/* A CPU's system channels (in the order ovniemu sets them). */
enum {
	WEFT__CPU_CH_TID = 0, WEFT__CPU_CH_PID, WEFT__CPU_CH_THRUN, WEFT__CPU_CH_NRUN,
	WEFT__CPU_CH_THACT, WEFT__CPU_CH_MAX
};

typedef struct weft__emu_th {
	const weft__emu_thread *info;  /* its system entry (tid, process, stream) */
	uint32_t loom;
	int state;                    /* enum weft__emu_th_state */
	uint8_t running, active;      /* state is Running; Running/Cooling/Warming */
	uint8_t out_of_cpu;           /* kernel: between KCO and KCI */
	uint8_t sel_run, sel_act;     /* its RUN / ACT outputs show the raw value */
	int32_t cpu;                  /* its CPU (index in the CPU list), -1 */
	int32_t cpu_sel;              /* the CPU whose outputs follow it, -1 */
	weft__emu_chan sys[WEFT__TH_CH_MAX];
	weft__emu_chan *raw;          /* per slot */
	weft__emu_chan *out;          /* per slot (used for RUN/ACT slots) */
} weft__emu_th;

typedef struct weft__emu_cpu_st {
	const weft__emu_cpu *info;    /* its system entry (loom, phyid) */
	uint32_t *threads;            /* threads placed on it, in order */
	uint32_t nthreads, cap;
	int32_t sel;                  /* the running thread its outputs follow, -1 */
	weft__emu_chan sys[WEFT__CPU_CH_MAX];
	weft__emu_chan *out;          /* per slot */
} weft__emu_cpu_st;

/* A model channel of every thread and CPU: which model, which entry. */
typedef struct weft__emu_slot {
	const weft__emu_model_spec *model;
	const weft__emu_chan_spec *spec;
} weft__emu_slot;

/* The event being handled, decoded for the handlers. */
struct weft__emu_ev {
	const weft_event *raw;
	char m, c, v;                /* model, category, value of the MCV */
	uint64_t time;               /* ns since the first event */
	uint32_t thread;             /* index of its thread */
	const uint8_t *payload;      /* the payload bytes (jumbo: the data) */
	uint32_t payload_size;
	int jumbo;
	int big_endian;
};

/* Reads payload numbers (0 past the end: handlers check the size first). */
uint32_t weft__emu_ev_u32(const weft__emu_ev *ev, uint32_t offset);
int32_t weft__emu_ev_i32(const weft__emu_ev *ev, uint32_t offset);
int64_t weft__emu_ev_i64(const weft__emu_ev *ev, uint32_t offset);

#define WEFT__EMU_MAX_MODELS 8

/* The emulator (emu.c creates it; the models reach into it). */
struct weft__emu {
	weft_trace *trace;
	weft__emu_system *sys;
	weft__emu_options opt;
	/* enabled models, in ovniemu's order (by model character) */
	const weft__emu_model_spec *models[WEFT__EMU_MAX_MODELS];
	uint32_t model_base[WEFT__EMU_MAX_MODELS];  /* first slot of each */
	void *model_state[WEFT__EMU_MAX_MODELS];
	/* channels a model declares for this trace (marks), after its table's */
	const weft__emu_chan_spec *extra[WEFT__EMU_MAX_MODELS];
	uint32_t nextra[WEFT__EMU_MAX_MODELS];
	uint32_t nmodels;
	int8_t model_by_id[128];      /* model character -> index, -1 */
	weft__emu_slot *slots;
	uint32_t nslots;
	weft__emu_th *th;
	weft__emu_cpu_st *cpu;
	uint32_t *stream_thread;      /* stream index -> thread index, UINT32_MAX */
	int32_t *cpu_by_index;        /* loom l's CPU of index k: [first_cpu + k];
	                                 its virtual CPU: [first_cpu + ncpus] */
	/* the dirty list of the event being handled */
	weft__emu_chan **dirty;
	size_t ndirty, dirty_cap;
	/* the clock */
	uint64_t first_time;
	uint64_t now;                 /* ns since the first event */
	uint64_t events;              /* events handled */
	int started, finished, failed, sink_failed;
	struct weft__emu_bd *bd;      /* the breakdowns (breakdown.c), or NULL */
	const weft__emu_ev *ev;       /* the event being handled */
	weft__emu_sink sink;
	/* what went wrong (weft__emu_fail), and the warnings */
	weft__emu_diag *diags;
	size_t ndiags, diags_cap;
	char *error;                  /* the first error's rule */
	weft__emu_warning_fn warning_fn; /* the events' warnings go there, or NULL */
	void *warning_ctx;
	weft__emu_type_fn type_fn;    /* told of each task type created, or NULL */
	void *type_ctx;
	uint8_t *scope;               /* per thread: its end checks are this emulator's
	                                 (NULL: every thread's; weft__emu_set_scope) */
};

/* ---- Calls for the models ------------------------------------------------------------ */

/* The index of model `spec` among the enabled ones, or -1 (not enabled). */
int weft__emu_model_index(const weft__emu *e, const weft__emu_model_spec *spec);
/*
 * Declares `n` more channels of model `spec` for this trace (in its
 * create hook; `specs` live as long as the emulator). Returns the slot of
 * the first: thread t's channel k is e->th[t].raw[slot + k].
 */
uint32_t weft__emu_add_chans(weft__emu *e, const weft__emu_model_spec *spec,
			     const weft__emu_chan_spec *specs, uint32_t n);
/* Raw channel `i` of model `mi` of thread `t`. */
static inline weft__emu_chan *weft__emu_th_chan(weft__emu *e, uint32_t t, int mi, uint32_t i)
{
	return &e->th[t].raw[e->model_base[mi] + i];
}
/* CPU output `i` of model `mi` of CPU `c`. */
static inline weft__emu_chan *weft__emu_cpu_out(weft__emu *e, uint32_t c, int mi, uint32_t i)
{
	return &e->cpu[c].out[e->model_base[mi] + i];
}

/*
 * Channel changes, with ovniemu's rules: 0, or -1 after weft__emu_fail()
 * (a channel changed twice in one event, a repeated value where none is
 * allowed, a pop that does not match the top, a stack too deep or empty).
 */
int weft__emu_set(weft__emu *e, weft__emu_chan *c, weft__emu_val v);
/* weft__emu_set, giving a single channel a nesting depth that its records
 * carry (a task id: the bodies on the thread's stack), for the outputs
 * that draw nesting (Perfetto). */
int weft__emu_set_depth(weft__emu *e, weft__emu_chan *c, weft__emu_val v, uint32_t depth);
int weft__emu_push(weft__emu *e, weft__emu_chan *c, int64_t v);
int weft__emu_pop(weft__emu *e, weft__emu_chan *c, int64_t expected);

/* A thread's state changes (the state and TID channels follow). */
int weft__emu_th_set_state(weft__emu *e, uint32_t t, int state);
/* Puts a thread on a CPU, moves it, takes it off (the affinity channel follows). */
int weft__emu_th_set_cpu(weft__emu *e, uint32_t t, int32_t cpu);
int weft__emu_th_migrate_cpu(weft__emu *e, uint32_t t, int32_t cpu);
int weft__emu_th_unset_cpu(weft__emu *e, uint32_t t);
/* CPU membership: the running thread, PID, TID and count follow. */
int weft__emu_cpu_add(weft__emu *e, int32_t cpu, uint32_t t);
int weft__emu_cpu_remove(weft__emu *e, int32_t cpu, uint32_t t);
int weft__emu_cpu_update(weft__emu *e, int32_t cpu);
/* The CPU of loom `loom` whose index is `index` (-1: the virtual CPU), or -1. */
int32_t weft__emu_loom_cpu(const weft__emu *e, uint32_t loom, int64_t index);
/* The thread with `tid` in process `proc`, else in loom `loom`; UINT32_MAX. */
uint32_t weft__emu_find_thread(const weft__emu *e, size_t proc, uint32_t loom, int64_t tid);

/*
 * Records the error that stops the emulation: the rule broken, as text
 * (the event and stream are added by the caller). Returns -1.
 */
int weft__emu_fail(weft__emu *e, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* A warning about the event being handled (or none), which goes on. */
void weft__emu_warn(weft__emu *e, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* An error found at the end (end checks): file = thread `t`'s stream, or none. */
void weft__emu_end_error(weft__emu *e, uint32_t t, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* ---- The engine (engine.c) -------------------------------------------------------------- */

/* Builds threads, CPUs and their channels for the enabled models. */
int weft__emu_engine_build(weft__emu *e);
void weft__emu_engine_free(weft__emu *e);
/* Phases 2-4 after a handler (or the connect phase, `emit` 0: no records). */
int weft__emu_propagate(weft__emu *e, int emit);

/* ---- Breakdowns (breakdown.c) -------------------------------------------------------- */

/* Sets up the breakdowns of the enabled nOS-V and Nanos6 models (option
 * breakdown), after the channels exist. 0 or -1 after weft__emu_fail. */
int weft__emu_bd_create(weft__emu *e);
void weft__emu_bd_free(weft__emu *e);
/* Propagation of a dirty breakdown input (CPU output, tr, tri channel). */
int weft__emu_bd_dirty(weft__emu *e, weft__emu_chan *c);
/* Rows of a breakdown trace (0: not written). */
uint32_t weft__emu_bd_rows(const weft__emu *e, weft__emu_kind kind);
/* Its .pcf types (after the head). */
int weft__emu_bd_pcf(weft__emu *e, weft__emu_kind kind, weft__emu_pcf *pcf);

/* ---- .pcf types (pcf.c) ------------------------------------------------------------------ */

/* Adds value `value` labelled `text` to a .pcf type (a label already
 * there for `value` is kept). 0 or WEFT_ENOMEM. */
int weft__emu_pcf_add(weft__emu_pcf_type *t, int64_t value, const char *text);
/* The label of `value` in a type, or NULL. */
const char *weft__emu_pcf_find(const weft__emu_pcf_type *t, int64_t value);

#endif
