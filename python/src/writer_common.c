/* SPDX-License-Identifier: MIT */
/*
 * python/src/writer_common.c - what the writer classes share: the state
 * check of a writer and of the objects made from it, integer arguments
 * and integer columns, and the registration of the writer types.
 */
#include "writers.h"

#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#define PY_ARRAY_UNIQUE_SYMBOL weftpy_ARRAY_API
#define NO_IMPORT_ARRAY
#include <numpy/arrayobject.h>

int wpy_wstate_check(const wpy_wstate *st)
{
	if (st->done) {
		PyErr_Format(wpy_Error, "the %s is closed", st->what);
		return -1;
	}
	if (st->busy) {
		PyErr_Format(PyExc_RuntimeError,
			     "the %s is being used by another thread (use it from one thread)",
			     st->what);
		return -1;
	}
	return 0;
}

int wpy_writer_traverse(PyObject *self, visitproc visit, void *arg)
{
	Py_VISIT(((wpy_writer_base *)self)->dict);
	return 0;
}

int wpy_writer_clear(PyObject *self)
{
	Py_CLEAR(((wpy_writer_base *)self)->dict);
	return 0;
}

void wpy_writer_dealloc(PyObject *self)
{
	wpy_writer_base *w = (wpy_writer_base *)self;
	PyObject_GC_UnTrack(self);
	if (w->weakrefs != NULL)
		PyObject_ClearWeakRefs(self);
	if (w->release != NULL)
		w->release(self);
	Py_CLEAR(w->dict);
	Py_TYPE(self)->tp_free(self);
}

PyObject *wpy_writer_discard(PyObject *self, PyObject *unused)
{
	wpy_writer_base *w = (wpy_writer_base *)self;
	if (w->st.busy && wpy_wstate_check(&w->st) < 0)
		return NULL;
	if (w->release != NULL)
		w->release(self);
	w->st.done = WPY_W_DONE;
	Py_RETURN_NONE;
}

PyObject *wpy_writer_get_closed(PyObject *self, void *unused)
{
	return PyBool_FromLong(((wpy_writer_base *)self)->st.done);
}

int wpy_wstate_run(wpy_wstate *st, int (*fn)(void *arg), void *arg)
{
	int rc;
	st->busy = 1;
	Py_BEGIN_ALLOW_THREADS
	rc = fn(arg);
	Py_END_ALLOW_THREADS
	st->busy = 0;
	return rc;
}

int wpy_child_traverse(PyObject *self, visitproc visit, void *arg)
{
	Py_VISIT(((wpy_child_base *)self)->owner);
	Py_VISIT(((wpy_child_base *)self)->dict);
	return 0;
}

int wpy_child_clear(PyObject *self)
{
	Py_CLEAR(((wpy_child_base *)self)->dict);
	return 0;
}

/* The writer is dropped last: the library's object of the child belongs to it. */
void wpy_child_dealloc(PyObject *self)
{
	wpy_child_base *c = (wpy_child_base *)self;
	PyObject_GC_UnTrack(self);
	Py_CLEAR(c->dict);
	Py_CLEAR(c->owner);
	Py_TYPE(self)->tp_free(self);
}

int wpy_uint_arg(PyObject *o, uint64_t max, const char *what, uint64_t *out)
{
	if (PyBool_Check(o) || PyArray_IsScalar(o, Bool) || !PyIndex_Check(o)) {
		PyErr_Format(PyExc_TypeError, "%s must be an int, not %.100s", what,
			     Py_TYPE(o)->tp_name);
		return -1;
	}
	PyObject *i = PyNumber_Index(o);
	if (i == NULL)
		return -1;
	int overflow = 0;
	unsigned long long v = 0;
	if (_PyLong_Sign(i) < 0) {
		overflow = 1;
	} else {
		v = PyLong_AsUnsignedLongLong(i);
		if (v == (unsigned long long)-1 && PyErr_Occurred()) {
			PyErr_Clear();
			overflow = 1;
		}
	}
	Py_DECREF(i);
	if (overflow || v > max) {
		PyErr_Format(PyExc_OverflowError, "%s must be in [0, %llu]", what,
			     (unsigned long long)max);
		return -1;
	}
	*out = v;
	return 0;
}

/* -1 with TypeError: the column `what` is not made of integers. */
static int not_integers(const char *what, PyArrayObject *a)
{
	PyErr_Format(PyExc_TypeError, "%s must be integers >= 0 (got an array of %c)", what,
		     PyArray_DESCR(a)->kind);
	return -1;
}

/* 0 when every element of the signed array `a` (int64) is >= 0, else -1 with an error. */
static int check_not_negative(PyArrayObject *a, const char *what)
{
	const int64_t *v = PyArray_DATA(a);
	npy_intp n = PyArray_SIZE(a);
	for (npy_intp i = 0; i < n; i++) {
		if (v[i] < 0) {
			PyErr_Format(PyExc_OverflowError, "%s[%zd] is negative (%lld)", what,
				     (Py_ssize_t)i, (long long)v[i]);
			return -1;
		}
	}
	return 0;
}

PyObject *wpy_u64_column(PyObject *o, Py_ssize_t n, const char *what)
{
	PyArrayObject *a = (PyArrayObject *)PyArray_FROM_O(o);
	if (a == NULL)
		return NULL;
	PyArrayObject *out = NULL;
	char kind = PyArray_DESCR(a)->kind;
	if (PyArray_NDIM(a) != 1) {
		PyErr_Format(PyExc_ValueError, "%s must be one-dimensional", what);
	} else if (n >= 0 && PyArray_DIM(a, 0) != n) {
		PyErr_Format(PyExc_ValueError, "%s has %zd elements, not %zd", what,
			     (Py_ssize_t)PyArray_DIM(a, 0), n);
	} else if (PyArray_SIZE(a) == 0 || kind == 'u') {
		out = (PyArrayObject *)PyArray_FROM_OTF((PyObject *)a, NPY_UINT64,
							NPY_ARRAY_IN_ARRAY | NPY_ARRAY_FORCECAST);
	} else if (kind == 'i') {
		PyArrayObject *s = (PyArrayObject *)PyArray_FROM_OTF((PyObject *)a, NPY_INT64,
								     NPY_ARRAY_IN_ARRAY);
		if (s != NULL && check_not_negative(s, what) == 0)
			out = (PyArrayObject *)PyArray_FROM_OTF((PyObject *)s, NPY_UINT64,
								NPY_ARRAY_IN_ARRAY |
								NPY_ARRAY_FORCECAST);
		Py_XDECREF(s);
	} else {
		not_integers(what, a);
	}
	Py_DECREF(a);
	return (PyObject *)out;
}

int wpy_writers_add(PyObject *mod)
{
	return wpy_heph_add(mod) < 0 || wpy_pallas_add(mod) < 0 ? -1 : 0;
}
