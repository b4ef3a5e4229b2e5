/* SPDX-License-Identifier: MIT */
/*
 * python/src/writers.h - what the writer classes of the module share
 * (weft.HephWriter: heph_writer.c, weft.PallasWriter: pallas_writer.c,
 * helpers: writer_common.c). They are front ends of the public writing
 * APIs, include/weft/heph.h and include/weft/pallas.h.
 */
#ifndef WEFTPY_WRITERS_H
#define WEFTPY_WRITERS_H

#include "weftpy.h"

/* What a writer object is: open, or finished (closed or discarded). */
enum { WPY_W_OPEN = 0, WPY_W_DONE = 1 };

/*
 * The state every writer object shares with the objects made from it
 * (streams, threads): -1 with weft.Error once it is closed, with
 * RuntimeError while a call runs without the GIL (the guard of
 * weft.Trace: one thread at a time).
 */
typedef struct wpy_wstate {
	int done;
	int busy;
	const char *what;   /* "Heph writer", "Pallas writer" */
} wpy_wstate;

int wpy_wstate_check(const wpy_wstate *st);

/*
 * The head of every writer object, and of every object made from one (a
 * Heph stream, a Pallas thread), so that their garbage-collector support
 * is shared: the instance dictionary (the Python layer's attributes) and,
 * for a writer, the weak references; for the others, the writer.
 */
typedef struct wpy_writer_base {
	PyObject_HEAD
	wpy_wstate st;
	PyObject *dict;
	PyObject *weakrefs;
	/* Frees the library's objects (abandoning what is not closed): set by init. */
	void (*release)(PyObject *self);
} wpy_writer_base;

typedef struct wpy_child_base {
	PyObject_HEAD
	PyObject *owner;        /* the writer (strong reference) */
	PyObject *dict;
} wpy_child_base;

int wpy_writer_traverse(PyObject *self, visitproc visit, void *arg);
int wpy_writer_clear(PyObject *self);
/* Untracks the writer, frees its library objects (base.release), then the rest. */
void wpy_writer_dealloc(PyObject *self);
/* discard() of every writer: base.release unless a call runs without the GIL. */
PyObject *wpy_writer_discard(PyObject *self, PyObject *unused);
/* The getter of `closed`. */
PyObject *wpy_writer_get_closed(PyObject *self, void *unused);
/*
 * Runs fn(arg) without the GIL, the writer marked busy meanwhile (other
 * threads' calls are refused): fn's status.
 */
int wpy_wstate_run(wpy_wstate *st, int (*fn)(void *arg), void *arg);
int wpy_child_traverse(PyObject *self, visitproc visit, void *arg);
int wpy_child_clear(PyObject *self);
void wpy_child_dealloc(PyObject *self);

/* The type object of a writer class: `ctype` starts with wpy_writer_base. */
#define WPY_WRITER_TYPE(name, doc, ctype, init, methods, getset) {             \
	PyVarObject_HEAD_INIT(NULL, 0)                                                   \
	.tp_name = name, .tp_doc = PyDoc_STR(doc), .tp_basicsize = sizeof(ctype),        \
	.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,       \
	.tp_new = PyType_GenericNew, .tp_init = (initproc)(init),                          \
	.tp_dealloc = wpy_writer_dealloc,                                                \
	.tp_traverse = wpy_writer_traverse, .tp_clear = wpy_writer_clear,                \
	.tp_methods = methods, .tp_getset = getset,                                      \
	.tp_dictoffset = offsetof(wpy_writer_base, dict),                                \
	.tp_weaklistoffset = offsetof(wpy_writer_base, weakrefs) }

/* The type object of a class whose objects are made from a writer (wpy_child_base's head). */
#define WPY_CHILD_TYPE(name, doc, ctype, init, methods, getset) {                       \
	PyVarObject_HEAD_INIT(NULL, 0)                                                   \
	.tp_name = name, .tp_doc = PyDoc_STR(doc), .tp_basicsize = sizeof(ctype),        \
	.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,       \
	.tp_new = PyType_GenericNew, .tp_init = (initproc)(init),                        \
	.tp_dealloc = wpy_child_dealloc, .tp_traverse = wpy_child_traverse,              \
	.tp_clear = wpy_child_clear, .tp_methods = methods, .tp_getset = getset,         \
	.tp_dictoffset = offsetof(wpy_child_base, dict) }

/*
 * An integer argument (a Python int or anything with __index__, not a
 * bool) in [0, max] into *out: -1 with TypeError or OverflowError naming
 * `what`.
 */
int wpy_uint_arg(PyObject *o, uint64_t max, const char *what, uint64_t *out);

/*
 * An integer column: a 1-D sequence or array of integers >= 0 (no bools,
 * no floats) as a C-contiguous uint64 numpy array of `n` elements (n < 0:
 * any length). A new reference, or NULL with an error naming `what`.
 */
PyObject *wpy_u64_column(PyObject *o, Py_ssize_t n, const char *what);

/* Adds the writer types to the module (module.c): -1 on error. */
int wpy_writers_add(PyObject *mod);
int wpy_heph_add(PyObject *mod);
int wpy_pallas_add(PyObject *mod);

#endif /* WEFTPY_WRITERS_H */
