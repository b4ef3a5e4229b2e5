/* SPDX-License-Identifier: MIT */
/*
 * python/src/weftpy.h - what the files of the extension module weft._weft
 * share: the exceptions, the Trace object, the code table and the event
 * iterator. The module is a front end of the public libweft API
 * (include/weft/): nothing here knows a trace format.
 */
#ifndef WEFTPY_H
#define WEFTPY_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stddef.h>
#include <stdint.h>

#include "weft/weft.h"

/* The exceptions (weft.Error and its subclasses), created by the module. */
extern PyObject *wpy_Error, *wpy_FormatError, *wpy_IOError, *wpy_NotFoundError,
	*wpy_ArgumentError;

/*
 * Raises the exception of a negative WEFT_E* status with the library's
 * last error (its file, byte offset and message as attributes). Returns
 * NULL, for `return wpy_raise(rc);`.
 */
PyObject *wpy_raise(int status);
/*
 * The same with an error taken elsewhere (on another thread: the
 * library's last error is per thread): the whole message, its file (or
 * NULL), offset (or WEFT_NO_OFFSET) and text after the location.
 */
PyObject *wpy_raise_error(int status, const char *msg, const char *file, uint64_t offset,
			  const char *text);

/*
 * The codes met so far, each with an index: the order of first meeting.
 * A hash table of the code bytes so that the loop of a batch finds an
 * event's code index without the GIL and without a Python object.
 */
typedef struct wpy_code {
	char *bytes;
	uint32_t len;
	uint64_t hash;
} wpy_code;

#define WPY_FAST_BITS 10

typedef struct wpy_codes {
	wpy_code *codes;        /* by index */
	uint32_t count, cap;
	uint32_t *slots;        /* index + 1, 0 = empty; size mask + 1 */
	uint32_t mask;
	uint32_t published;     /* codes already appended to the Python list */
	uint64_t *fast_key;     /* direct-mapped cache of short codes: key */
	uint32_t *fast_index;   /* and index */
} wpy_codes;

/* The index of code[0..len-1], added when new; -1 without memory. */
int64_t wpy_codes_index(wpy_codes *t, const char *code, uint32_t len);

/*
 * A short code (at most 7 bytes) as an integer: its bytes, and its length
 * in the top byte. Inline with the cache lookup below because the loop of
 * a batch looks up every event's code (ovni's are 3 bytes).
 */
static inline uint64_t wpy_code_key(const char *s, uint32_t len)
{
	const unsigned char *u = (const unsigned char *)s;
	uint64_t k = 0;
	if (len == 3)
		k = u[0] | (uint64_t)u[1] << 8 | (uint64_t)u[2] << 16;
	else
		for (uint32_t i = 0; i < len; i++)
			k |= (uint64_t)u[i] << (8 * i);
	return k | (uint64_t)len << 56;
}

/* The slot of a short code's key in the direct-mapped cache. */
static inline uint32_t wpy_code_slot(uint64_t key)
{
	return (uint32_t)((key * 0x9E3779B97F4A7C15ull) >> (64 - WPY_FAST_BITS));
}

/* wpy_codes_index(), answered from the cache when it holds the code. */
static inline int64_t wpy_codes_index_fast(wpy_codes *t, const char *code, uint32_t len)
{
	if (len <= 7 && t->fast_key != NULL) {
		uint64_t k = wpy_code_key(code, len);
		uint32_t s = wpy_code_slot(k);
		if (t->fast_key[s] == k)
			return t->fast_index[s];
	}
	return wpy_codes_index(t, code, len);
}
void wpy_codes_free(wpy_codes *t);

/*
 * Makes room for `need` elements of `size` bytes in *array (capacity
 * *cap, doubled, at least `first`): 0, or -1 without memory (the array
 * unchanged).
 */
int wpy_grow(void **array, size_t *cap, size_t need, size_t size, size_t first);

/* An optional time in ns (None or an int >= 0) into *out (0 for None): -1 with an error. */
int wpy_parse_time(PyObject *o, uint64_t *out, const char *what);

/* The texts[0..count-1] (UTF-8, bad bytes replaced) as a list of str: NULL with an error. */
PyObject *wpy_str_list(const char *const *texts, size_t count);

/* The list of item(ctx, i) for i in [start, count): NULL with an error. */
PyObject *wpy_list_of(const void *ctx, size_t start, size_t count,
		      PyObject *(*item)(const void *ctx, size_t i));

typedef struct wpy_events wpy_events;

/* weft._weft.Trace: an open trace. */
typedef struct wpy_trace {
	PyObject_HEAD
	weft_trace *trace;      /* NULL once closed */
	int busy;               /* a call runs without the GIL */
	wpy_codes codes;
	PyObject *code_list;    /* list of str, index = code index */
	wpy_events *iters;      /* live event iterators (their cursors die first) */
	PyObject *dict;         /* instance dictionary (the Python layer caches there) */
	PyObject *weakrefs;
	PyObject *progress_fn;  /* the progress callable, or NULL */
	int64_t progress_interval_ns;
	/* what the callable raised during the running call (progress.c) */
	PyObject *progress_exc_type, *progress_exc_value, *progress_exc_tb;
	/* How it was opened, for the reader threads that open it again
	 * (parallel.c): the path, the options, and the strings they point to. */
	char *open_path;
	weft_open_options open_options;
	PyObject *open_keep;
	/* The diagnostics as Python tuples: the library's, in their order,
	 * and those the reader threads found on their own handles, in the
	 * order the batches met them (wpy_trace_add_diag). */
	PyObject *diag_log;
	size_t diags_logged;    /* the library's diagnostics in diag_log */
	/* comm= (dist.c): the communicator the library's collectives call,
	 * and the weft_dist the trace's options point to (NULL, zeros: none). */
	PyObject *comm;
	weft_dist dist;
} wpy_trace;

/*
 * comm= of weft.open(): with a communicator of several ranks, sets
 * o->dist to self's collectives over it (opening and profile() become
 * collective). 0, or -1 with an exception (its Get_size or Get_rank).
 */
int wpy_dist_setup(wpy_trace *self, PyObject *comm, weft_open_options *o);

/* A diagnostic as (severity, severity name, file, offset, message, line): NULL with an error. */
PyObject *wpy_diag_values(int severity, const char *file, uint64_t offset,
			  const char *message, const char *line);

/*
 * Appends a diagnostic found on another handle of the trace to its list
 * (after those of the library recorded so far): 0, or -1 with an error.
 */
int wpy_trace_add_diag(wpy_trace *self, int severity, const char *file, uint64_t offset,
		       const char *message, const char *line);

/*
 * Threaded reading, order="stream" (parallel.c): readers started on the
 * selected streams (positions into `streams`, which the caller keeps),
 * the next batch (NULL at the end, or with an error raised), and the
 * stop (joins the readers; NULL is fine).
 */
struct wpy_par;
struct wpy_par *wpy_par_start(wpy_trace *owner, const uint32_t *streams, size_t stream_count,
			      const weft_filter *filter, size_t batch, int threads);
PyObject *wpy_par_next(struct wpy_par *p, wpy_trace *owner);
void wpy_par_free(struct wpy_par *p);

extern PyTypeObject wpy_TraceType;
extern PyTypeObject wpy_EventsType;

/* Raises ValueError when the trace is closed, RuntimeError when busy: -1. */
int wpy_trace_check(wpy_trace *self);
/* Appends the codes met since the last call to self->code_list: -1 on error. */
int wpy_trace_publish_codes(wpy_trace *self);
/* Frees the cursors of the live iterators (before the trace is freed). */
void wpy_events_detach_all(wpy_trace *self);
/* Trace._events(...): the iterator of event batches. */
PyObject *wpy_trace_events(wpy_trace *self, PyObject *args, PyObject *kwargs);

/* Trace._spans(...) and Trace._profile(...) (analysis.c). */
PyObject *wpy_trace_spans(wpy_trace *self, PyObject *args, PyObject *kwargs);
PyObject *wpy_trace_profile(wpy_trace *self, PyObject *args, PyObject *kwargs);
/*
 * The progress callback (progress.c): weft.Progress, the callback set in
 * open options or on the open trace, and wpy_progress_finish(), to be
 * given the result of every call that ran the library without the GIL:
 * it returns the result, or NULL with the exception the callable raised
 * meanwhile (the result released).
 */
extern PyTypeObject wpy_ProgressType;
int wpy_progress_init_type(PyObject *mod);
void wpy_progress_open_options(wpy_trace *self, weft_open_options *o, int64_t interval_ns);
void wpy_progress_install(wpy_trace *self, int64_t interval_ns);
PyObject *wpy_progress_finish(wpy_trace *self, PyObject *result);
void wpy_progress_clear(wpy_trace *self);
/* Forgets what the callable raised (a call that did not pass it on). */
void wpy_progress_drop(wpy_trace *self);

/*
 * A numpy column (numpy type `type`, `size` bytes) of the field at
 * `offset` of `count` rows `stride` bytes apart (analysis.c): NULL with
 * an error.
 */
PyObject *wpy_rows_column(const void *rows, size_t count, size_t stride, size_t offset,
			  int type, size_t size);
/* Trace._emulate(...) (emu.c). */
PyObject *wpy_trace_emulate(wpy_trace *self, PyObject *args, PyObject *kwargs);
/* Trace._convert(...) (convert.c). */
PyObject *wpy_trace_convert(wpy_trace *self, PyObject *args, PyObject *kwargs);
/* Adds the format extras (extras.c) to the Trace type and the module: -1 with an error. */
int wpy_extras_register(PyObject *mod);

#endif /* WEFTPY_H */
