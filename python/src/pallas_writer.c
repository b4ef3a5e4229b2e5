/* SPDX-License-Identifier: MIT */
/*
 * python/src/pallas_writer.c - weft._weft.PallasWriter and PallasThread:
 * the Pallas writer of weft/pallas.h for Python producers. The Python
 * classes weft.PallasWriter and weft.PallasThread derive from them
 * (python/weft/_writers.py), which keep the names of strings, regions,
 * attributes and locations; here are the library's objects: the global
 * archive, one archive per location group, one thread writer per
 * location, and the records.
 */
#include "writers.h"
#include "weft/pallas.h"

#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#define PY_ARRAY_UNIQUE_SYMBOL weftpy_ARRAY_API
#define NO_IMPORT_ARRAY
#include <numpy/arrayobject.h>

#include <stdlib.h>
#include <string.h>

/* The archive of a location group. */
typedef struct pallas_archive {
	uint32_t id;
	weft_pallas_archive *a;
} pallas_archive;

typedef struct wpy_pallas_writer {
	wpy_writer_base base;   /* first: the shared head */
	weft_pallas_global *g;  /* NULL once stored or discarded */
	pallas_archive *archives;
	size_t narchives, cap;
} wpy_pallas_writer;

typedef struct wpy_pallas_thread {
	PyObject_HEAD
	wpy_pallas_writer *owner; /* as in wpy_child_base; the thread writer belongs to owner->g */
	PyObject *dict;
	weft_pallas_thread *t;
	uint32_t group, location;
	int closed;
	uint64_t last_ts;       /* of the last record (0 before the first) */
} wpy_pallas_thread;

static PyTypeObject wpy_PallasWriterType, wpy_PallasThreadType;

/* ---- The writer ------------------------------------------------------------- */

/* base.release: frees the global archive and what was made from it (threads not closed are abandoned). */
static void writer_release(PyObject *obj)
{
	wpy_pallas_writer *self = (wpy_pallas_writer *)obj;
	weft_pallas_global_free(self->g);
	self->g = NULL;
	free(self->archives);
	self->archives = NULL;
	self->narchives = self->cap = 0;
	self->base.st.done = WPY_W_DONE;
}

/* The index of `name` in `names` (NULL-terminated) into *out, for an option: -1 with an error. */
static int option_choice(const char *option, const char *name, const char *const *names, int *out)
{
	for (int i = 0; names[i] != NULL; i++) {
		if (strcmp(name, names[i]) == 0) {
			*out = i;
			return 0;
		}
	}
	PyErr_Format(wpy_ArgumentError, "%s must be one of %s, %s%s%s (not %s)", option, names[0],
		     names[1], names[2] ? ", " : "", names[2] ? names[2] : "", name);
	return -1;
}

/*
 * PallasWriter(dir, name="main", compression="zstd", zstd_level=5,
 * loop_finding="truncated", max_loop_length=100, long_patterns=True,
 * delta_timestamps=False, layout="pallas", compress_threads=None,
 * replace=False, sync=False): weft_pallas_global_create.
 */
static int writer_init(wpy_pallas_writer *self, PyObject *args, PyObject *kwargs)
{
	static char *kwlist[] = {"dir", "name", "compression", "zstd_level", "loop_finding",
				 "max_loop_length", "long_patterns", "delta_timestamps", "layout",
				 "compress_threads", "replace", "sync", NULL};
	static const char *const compressions[] = {"raw", "zstd", NULL};
	static const char *const loops[] = {"none", "basic", "truncated", NULL};
	static const char *const layouts[] = {"pallas", "compact", NULL};
	PyObject *dir = NULL, *threads = Py_None;
	const char *name = "main", *compression = "zstd", *loop = "truncated", *layout = "pallas";
	unsigned long long max_loop = 100;
	weft_pallas_write_options o;

	weft_pallas_write_options_init(&o);
	self->base.st.what = "Pallas writer";
	self->base.release = writer_release;
	if (self->g != NULL || self->base.st.done) {
		PyErr_SetString(PyExc_RuntimeError, "PallasWriter.__init__ called twice");
		return -1;
	}
	self->base.st.done = WPY_W_DONE; /* until created */
	if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O&|ssisKppsOpp", kwlist,
					 PyUnicode_FSConverter, &dir, &name, &compression,
					 &o.zstd_level, &loop, &max_loop, &o.long_patterns,
					 &o.delta_timestamps, &layout, &threads, &o.replace, &o.sync))
		return -1;
	int rc = -1;
	if (option_choice("compression", compression, compressions, &o.compression) < 0 ||
	    option_choice("loop_finding", loop, loops, &o.loop_finding) < 0 ||
	    option_choice("layout", layout, layouts, &o.layout) < 0)
		goto done;
	o.max_loop_length = max_loop;
	if (threads != Py_None) {
		uint64_t n;
		if (wpy_uint_arg(threads, 64, "compress_threads", &n) < 0)
			goto done;
		o.compress_threads = (int)n;
	}
	const char *cdir = PyBytes_AS_STRING(dir);
	weft_pallas_global *g = NULL;
	Py_BEGIN_ALLOW_THREADS
	rc = weft_pallas_global_create(cdir, name, &o, &g);
	Py_END_ALLOW_THREADS
	if (rc < 0) {
		wpy_raise(rc);
		goto done;
	}
	self->g = g;
	self->base.st.done = WPY_W_OPEN;
done:
	Py_DECREF(dir);
	return rc < 0 ? -1 : 0;
}

/* The archive of location group `id`, or NULL. */
static weft_pallas_archive *archive_of(wpy_pallas_writer *self, uint32_t id)
{
	for (size_t i = 0; i < self->narchives; i++)
		if (self->archives[i].id == id)
			return self->archives[i].a;
	return NULL;
}

/* The archive of location group `id`, created at the first call: NULL with an error. */
static weft_pallas_archive *archive_get(wpy_pallas_writer *self, uint32_t id)
{
	weft_pallas_archive *a = archive_of(self, id);
	if (a != NULL)
		return a;
	if (wpy_grow((void **)&self->archives, &self->cap, self->narchives + 1,
		     sizeof *self->archives, 8) < 0)
		return PyErr_NoMemory(), NULL;
	int rc = weft_pallas_archive_create(self->g, id, &a);
	if (rc < 0)
		return wpy_raise(rc), NULL;
	self->archives[self->narchives++] = (pallas_archive){id, a};
	return a;
}

/* None, or raises the library's error for a negative rc: `return done_rc(rc);`. */
static PyObject *done_rc(int rc)
{
	return rc < 0 ? wpy_raise(rc) : Py_NewRef(Py_None);
}

/* A u32 argument that may be None (WEFT_PALLAS_NO_PARENT). */
static int parent_arg(PyObject *o, uint32_t *out)
{
	uint64_t v;
	*out = WEFT_PALLAS_NO_PARENT;
	if (o == Py_None)
		return 0;
	if (wpy_uint_arg(o, UINT32_MAX - 1, "parent", &v) < 0)
		return -1;
	*out = (uint32_t)v;
	return 0;
}

static PyObject *writer_add_string(wpy_pallas_writer *self, PyObject *args)
{
	unsigned int ref;
	const char *text;
	if (!PyArg_ParseTuple(args, "Is", &ref, &text) || wpy_wstate_check(&self->base.st) < 0)
		return NULL;
	return done_rc(weft_pallas_add_string(weft_pallas_global_defs(self->g), ref, text));
}

static PyObject *writer_register_string(wpy_pallas_writer *self, PyObject *args)
{
	const char *text;
	uint32_t ref;
	if (!PyArg_ParseTuple(args, "s", &text) || wpy_wstate_check(&self->base.st) < 0)
		return NULL;
	int rc = weft_pallas_register_string(weft_pallas_global_defs(self->g), text, &ref);
	return rc < 0 ? wpy_raise(rc) : PyLong_FromUnsignedLong(ref);
}

static PyObject *writer_add_region(wpy_pallas_writer *self, PyObject *args)
{
	unsigned int ref, name;
	if (!PyArg_ParseTuple(args, "II", &ref, &name) || wpy_wstate_check(&self->base.st) < 0)
		return NULL;
	return done_rc(weft_pallas_add_region(weft_pallas_global_defs(self->g), ref, name));
}

static PyObject *writer_add_attribute(wpy_pallas_writer *self, PyObject *args)
{
	unsigned int ref, name, desc;
	int type;
	if (!PyArg_ParseTuple(args, "IIIi", &ref, &name, &desc, &type) ||
	    wpy_wstate_check(&self->base.st) < 0)
		return NULL;
	return done_rc(weft_pallas_add_attribute(weft_pallas_global_defs(self->g), ref, name, desc,
						 type));
}

/* _add_comm(ref, name, group_ref, group_type, paradigm, members, parent): a group and its comm. */
static PyObject *writer_add_comm(wpy_pallas_writer *self, PyObject *args)
{
	unsigned int ref, name, group;
	int type, paradigm;
	PyObject *members, *parent;
	uint32_t par;
	if (!PyArg_ParseTuple(args, "IIIiiOO", &ref, &name, &group, &type, &paradigm, &members,
			      &parent) ||
	    wpy_wstate_check(&self->base.st) < 0 || parent_arg(parent, &par) < 0)
		return NULL;
	PyObject *col = wpy_u64_column(members, -1, "members");
	if (col == NULL)
		return NULL;
	Py_ssize_t n = PyArray_Size(col);
	uint32_t *m = PyMem_Malloc(sizeof *m * (size_t)(n + 1));
	const uint64_t *v = PyArray_DATA((PyArrayObject *)col);
	PyObject *result = NULL;
	if (m == NULL) {
		PyErr_NoMemory();
		goto done;
	}
	for (Py_ssize_t i = 0; i < n; i++) {
		if (v[i] > UINT32_MAX) {
			PyErr_SetString(PyExc_OverflowError, "members must be u32 location ids");
			goto done;
		}
		m[i] = (uint32_t)v[i];
	}
	weft_pallas_defs *d = weft_pallas_global_defs(self->g);
	int rc = weft_pallas_add_group(d, group, name, type, paradigm, m, (uint32_t)n);
	if (rc == 0)
		rc = weft_pallas_add_comm(d, ref, name, group, par);
	result = done_rc(rc);
done:
	PyMem_Free(m);
	Py_DECREF(col);
	return result;
}

static PyObject *writer_add_location_group(wpy_pallas_writer *self, PyObject *args)
{
	unsigned int id, name;
	PyObject *parent;
	uint32_t par;
	if (!PyArg_ParseTuple(args, "IIO", &id, &name, &parent) || wpy_wstate_check(&self->base.st) < 0 ||
	    parent_arg(parent, &par) < 0)
		return NULL;
	return done_rc(weft_pallas_add_location_group(weft_pallas_global_defs(self->g), id, name,
						      par));
}

/* _add_location(id, name, group): the archive of the group (created once) and its location. */
static PyObject *writer_add_location(wpy_pallas_writer *self, PyObject *args)
{
	unsigned int id, name, group;
	if (!PyArg_ParseTuple(args, "III", &id, &name, &group) || wpy_wstate_check(&self->base.st) < 0)
		return NULL;
	weft_pallas_archive *a = archive_get(self, group);
	if (a == NULL)
		return NULL;
	return done_rc(weft_pallas_add_location(weft_pallas_archive_defs(a), id, name, group));
}

static PyObject *writer_add_metadata(wpy_pallas_writer *self, PyObject *args)
{
	const char *key, *value;
	if (!PyArg_ParseTuple(args, "ss", &key, &value) || wpy_wstate_check(&self->base.st) < 0)
		return NULL;
	return done_rc(weft_pallas_add_metadata(weft_pallas_global_defs(self->g), key, value));
}

/* Stores every archive, then the global archive: the first failure, or 0. */
static int store_all(void *arg)
{
	wpy_pallas_writer *self = arg;
	for (size_t i = 0; i < self->narchives; i++) {
		int rc = weft_pallas_archive_store(self->archives[i].a);
		if (rc < 0)
			return rc;
	}
	return weft_pallas_global_store(self->g);
}

PyDoc_STRVAR(writer_store_doc, "_store()\n\n"
	     "Writes every archive and the main file (without the GIL), then frees the\n"
	     "writer; every thread must be closed (PallasWriter.close() closes them).");

static PyObject *writer_store(wpy_pallas_writer *self, PyObject *unused)
{
	if (wpy_wstate_check(&self->base.st) < 0)
		return NULL;
	PyObject *result = done_rc(wpy_wstate_run(&self->base.st, store_all, self));
	writer_release((PyObject *)self);
	return result;
}

PyDoc_STRVAR(writer_discard_doc, "discard()\n\n"
	     "Abandons the trace: threads not closed are dropped (their files are not\n"
	     "written) and the main file is not written, so no reader takes the\n"
	     "directory for a trace (what leaving a `with` block on an exception does).\n"
	     "Harmless once closed.");

static PyMethodDef writer_methods[] = {
	{"_add_string", (PyCFunction)writer_add_string, METH_VARARGS, "_add_string(ref, text)"},
	{"_register_string", (PyCFunction)writer_register_string, METH_VARARGS,
	 "_register_string(text) -> ref"},
	{"_add_region", (PyCFunction)writer_add_region, METH_VARARGS, "_add_region(ref, name_ref)"},
	{"_add_attribute", (PyCFunction)writer_add_attribute, METH_VARARGS,
	 "_add_attribute(ref, name_ref, description_ref, type)"},
	{"_add_comm", (PyCFunction)writer_add_comm, METH_VARARGS,
	 "_add_comm(ref, name_ref, group_ref, group_type, paradigm, members, parent)"},
	{"_add_location_group", (PyCFunction)writer_add_location_group, METH_VARARGS,
	 "_add_location_group(id, name_ref, parent)"},
	{"_add_location", (PyCFunction)writer_add_location, METH_VARARGS,
	 "_add_location(id, name_ref, group)"},
	{"_add_metadata", (PyCFunction)writer_add_metadata, METH_VARARGS, "_add_metadata(key, value)"},
	{"_store", (PyCFunction)writer_store, METH_NOARGS, writer_store_doc},
	{"discard", wpy_writer_discard, METH_NOARGS, writer_discard_doc},
	{NULL, NULL, 0, NULL}
};

static PyGetSetDef writer_getset[] = {
	{"closed", wpy_writer_get_closed, NULL, "True once closed or discarded.", NULL},
	{NULL, NULL, NULL, NULL, NULL}
};

static PyTypeObject wpy_PallasWriterType = WPY_WRITER_TYPE(
	"weft._weft.PallasWriter", "A Pallas trace being written (the C part of weft.PallasWriter).",
	wpy_pallas_writer, writer_init, writer_methods, writer_getset);

/* ---- Attribute lists ---------------------------------------------------------- */

/* A signed value of `bits` bits: -1 with OverflowError naming the attribute. */
static int signed_value(PyObject *v, int bits, const char *name, int64_t *out)
{
	if (PyBool_Check(v) || !PyIndex_Check(v)) {
		PyErr_Format(PyExc_TypeError, "attribute %s: an int, not %.100s", name,
			     Py_TYPE(v)->tp_name);
		return -1;
	}
	PyObject *i = PyNumber_Index(v);
	if (i == NULL)
		return -1;
	int overflow;
	long long x = PyLong_AsLongLongAndOverflow(i, &overflow);
	Py_DECREF(i);
	int64_t lim = bits == 64 ? INT64_MAX : ((int64_t)1 << (bits - 1)) - 1;
	if (overflow || x > lim || x < -lim - 1) {
		PyErr_Format(PyExc_OverflowError, "attribute %s: does not fit in an i%d", name, bits);
		return -1;
	}
	*out = x;
	return x == -1 && PyErr_Occurred() ? -1 : 0;
}

/* Adds value v of attribute `ref` of Pallas type `type` to l: -1 with a Python error. */
static int attrs_add(weft_pallas_attrs *l, uint32_t ref, int type, PyObject *v, const char *name)
{
	static const uint64_t umax[] = {0, UINT8_MAX, UINT16_MAX, UINT32_MAX, UINT64_MAX};
	static const int ibits[] = {0, 0, 0, 0, 0, 8, 16, 32, 64};
	char what[80];
	uint64_t u;
	int64_t i;
	int rc;
	snprintf(what, sizeof what, "attribute %.60s", name);
	if (type >= WEFT_PALLAS_TYPE_UINT8 && type <= WEFT_PALLAS_TYPE_UINT64) {
		if (wpy_uint_arg(v, umax[type], what, &u) < 0)
			return -1;
		rc = type == 1 ? weft_pallas_attrs_add_u8(l, ref, (uint8_t)u)
		   : type == 2 ? weft_pallas_attrs_add_u16(l, ref, (uint16_t)u)
		   : type == 3 ? weft_pallas_attrs_add_u32(l, ref, (uint32_t)u)
			       : weft_pallas_attrs_add_u64(l, ref, u);
	} else if (type >= WEFT_PALLAS_TYPE_INT8 && type <= WEFT_PALLAS_TYPE_INT64) {
		if (signed_value(v, ibits[type], name, &i) < 0)
			return -1;
		rc = type == 5 ? weft_pallas_attrs_add_i8(l, ref, (int8_t)i)
		   : type == 6 ? weft_pallas_attrs_add_i16(l, ref, (int16_t)i)
		   : type == 7 ? weft_pallas_attrs_add_i32(l, ref, (int32_t)i)
			       : weft_pallas_attrs_add_i64(l, ref, i);
	} else if (type == WEFT_PALLAS_TYPE_FLOAT || type == WEFT_PALLAS_TYPE_DOUBLE) {
		if (PyBool_Check(v) || !(PyFloat_Check(v) || PyLong_Check(v) ||
					 PyArray_IsScalar(v, Number))) {
			PyErr_Format(PyExc_TypeError, "attribute %s: a float, not %.100s", name,
				     Py_TYPE(v)->tp_name);
			return -1;
		}
		double d = PyFloat_AsDouble(v);
		if (d == -1.0 && PyErr_Occurred())
			return -1;
		rc = type == WEFT_PALLAS_TYPE_FLOAT ? weft_pallas_attrs_add_float(l, ref, (float)d)
						    : weft_pallas_attrs_add_double(l, ref, d);
	} else {
		if (wpy_uint_arg(v, UINT32_MAX, what, &u) < 0)
			return -1;
		rc = weft_pallas_attrs_add_ref(l, ref, type, (uint32_t)u);
	}
	return rc < 0 ? (wpy_raise(rc), -1) : 0;
}

/* The list of (ref, type, value, name) tuples `attrs` into l: -1 with an error. */
static int attrs_build(weft_pallas_attrs *l, PyObject *attrs)
{
	weft_pallas_attrs_init(l);
	Py_ssize_t n = PyTuple_GET_SIZE(attrs);
	for (Py_ssize_t k = 0; k < n; k++) {
		unsigned int ref;
		int type;
		PyObject *value, *item = PyTuple_GET_ITEM(attrs, k);
		const char *name;
		if (!PyTuple_Check(item)) {
			PyErr_SetString(PyExc_TypeError, "attrs must hold (ref, type, value, name) tuples");
			return -1;
		}
		if (!PyArg_ParseTuple(item, "IiOs", &ref, &type, &value, &name) ||
		    attrs_add(l, ref, type, value, name) < 0)
			return -1;
	}
	return 0;
}

/* ---- Thread writers ------------------------------------------------------------- */

/* -1 with an error when the writer is closed or busy, or the thread closed. */
static int thread_check(wpy_pallas_thread *self)
{
	if (self->owner == NULL) {
		PyErr_SetString(PyExc_RuntimeError, "PallasThread not initialised");
		return -1;
	}
	if (wpy_wstate_check(&self->owner->base.st) < 0)
		return -1;
	if (self->closed) {
		PyErr_Format(wpy_Error, "archive_%u/thread_%u: the thread is closed", self->group,
			     self->location);
		return -1;
	}
	return 0;
}

/* PallasThread(writer, group, location): weft_pallas_thread_create in the group's archive. */
static int thread_init(wpy_pallas_thread *self, PyObject *args, PyObject *kwargs)
{
	static char *kwlist[] = {"writer", "group", "location", NULL};
	wpy_pallas_writer *w;
	unsigned int group, location;
	if (self->owner != NULL) {
		PyErr_SetString(PyExc_RuntimeError, "PallasThread.__init__ called twice");
		return -1;
	}
	if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O!II", kwlist, &wpy_PallasWriterType, &w,
					 &group, &location) ||
	    wpy_wstate_check(&w->base.st) < 0)
		return -1;
	weft_pallas_archive *a = archive_of(w, group);
	if (a == NULL) {
		PyErr_Format(wpy_ArgumentError, "location group %u has no location", group);
		return -1;
	}
	int rc = weft_pallas_thread_create(a, location, &self->t);
	if (rc < 0) {
		wpy_raise(rc);
		return -1;
	}
	self->owner = (wpy_pallas_writer *)Py_NewRef(w);
	self->group = group;
	self->location = location;
	return 0;
}

/* Calls the record function of Pallas kind `kind` with payload p[]: its status (1: no such kind). */
static int record(weft_pallas_thread *t, const weft_pallas_attrs *l, uint64_t ts, int kind,
		  const uint64_t *p)
{
	uint32_t a = (uint32_t)p[0], b = (uint32_t)p[1], c = (uint32_t)p[2];
	switch (kind) {
	case 2: return weft_pallas_record_enter(t, l, ts, a);
	case 3: return weft_pallas_record_leave(t, l, ts, a);
	case 4: return weft_pallas_record_mpi_send(t, l, ts, a, b, c, p[3]);
	case 5: return weft_pallas_record_mpi_isend(t, l, ts, a, b, c, p[3], p[4]);
	case 6: return weft_pallas_record_mpi_isend_complete(t, l, ts, p[0]);
	case 7: return weft_pallas_record_mpi_irecv_request(t, l, ts, p[0]);
	case 8: return weft_pallas_record_mpi_recv(t, l, ts, a, b, c, p[3]);
	case 9: return weft_pallas_record_mpi_irecv(t, l, ts, a, b, c, p[3], p[4]);
	case 12: return weft_pallas_record_mpi_collective_begin(t, l, ts);
	case 13: return weft_pallas_record_mpi_collective_end(t, l, ts, a, b, c, p[3], p[4]);
	case 14: return weft_pallas_record_omp_fork(t, l, ts, a);
	case 15: return weft_pallas_record_omp_join(t, l, ts);
	case 16: return weft_pallas_record_omp_acquire_lock(t, l, ts, a);
	case 17: return weft_pallas_record_omp_release_lock(t, l, ts, a);
	case 18: return weft_pallas_record_omp_task_create(t, l, ts, p[0]);
	case 19: return weft_pallas_record_omp_task_switch(t, l, ts, p[0]);
	case 20: return weft_pallas_record_omp_task_complete(t, l, ts, p[0]);
	case 25: return weft_pallas_record_thread_fork(t, l, ts, a);
	case 26: return weft_pallas_record_thread_join(t, l, ts);
	case 27: return weft_pallas_record_thread_team_begin(t, l, ts);
	case 28: return weft_pallas_record_thread_team_end(t, l, ts);
	case 29: return weft_pallas_record_thread_acquire_lock(t, l, ts, a);
	case 30: return weft_pallas_record_thread_release_lock(t, l, ts, a);
	case 31: return weft_pallas_record_thread_task_create(t, l, ts);
	case 32: return weft_pallas_record_thread_task_switch(t, l, ts);
	case 33: return weft_pallas_record_thread_task_complete(t, l, ts);
	case 35: return weft_pallas_record_thread_begin(t, l, ts);
	case 37: return weft_pallas_record_thread_end(t, l, ts);
	case 58: return weft_pallas_record_generic(t, l, ts, a);
	}
	return 1; /* not a kind the module records */
}

/*
 * The payload arguments of kind `kind`: which of the first three are u32
 * (the rest are u64). The Python layer passes exactly the record's.
 */
static uint64_t payload_max(int kind, Py_ssize_t i)
{
	switch (kind) {
	case 6: case 7: case 18: case 19: case 20:
		return UINT64_MAX;
	}
	return i < 3 ? UINT32_MAX : UINT64_MAX;
}

PyDoc_STRVAR(thread_record_doc, "_record(kind, time, attrs, *payload)\n\n"
	     "Records an event of Pallas kind `kind` (2: Enter, 3: Leave, ...; see\n"
	     "docs/pallas-writer.md, \"Records\") at `time` (ns, not before the thread's\n"
	     "previous record) with `attrs`, a tuple of (ref, type, value, name), and the\n"
	     "payload integers. weft.PallasThread's methods are the interface.");

static PyObject *thread_record(wpy_pallas_thread *self, PyObject *args)
{
	Py_ssize_t n = PyTuple_GET_SIZE(args);
	int kind;
	uint64_t ts, p[5] = {0};
	weft_pallas_attrs l;
	char what[32];
	if (n < 3 || n > 8)
		return PyErr_Format(PyExc_TypeError, "_record takes 3 to 8 arguments");
	if (thread_check(self) < 0)
		return NULL;
	kind = (int)PyLong_AsLong(PyTuple_GET_ITEM(args, 0));
	if (PyErr_Occurred() || wpy_uint_arg(PyTuple_GET_ITEM(args, 1), UINT64_MAX - 1, "time", &ts) < 0)
		return NULL;
	for (Py_ssize_t i = 3; i < n; i++) {
		snprintf(what, sizeof what, "argument %zd", i - 2);
		if (wpy_uint_arg(PyTuple_GET_ITEM(args, i), payload_max(kind, i - 3), what, &p[i - 3]) < 0)
			return NULL;
	}
	PyObject *attrs = PyTuple_GET_ITEM(args, 2);
	if (attrs != Py_None && (!PyTuple_Check(attrs) || attrs_build(&l, attrs) < 0))
		return PyTuple_Check(attrs) || attrs == Py_None ? NULL
			: PyErr_Format(PyExc_TypeError, "attrs must be a tuple");
	if (ts < self->last_ts)
		return PyErr_Format(wpy_ArgumentError,
				    "archive_%u/thread_%u: time %llu is before the time of the "
				    "thread's previous event (%llu)", self->group, self->location,
				    (unsigned long long)ts, (unsigned long long)self->last_ts);
	int rc = record(self->t, attrs != Py_None ? &l : NULL, ts, kind, p);
	if (rc == 1)
		return PyErr_Format(PyExc_ValueError, "record kind %d is not one _record writes", kind);
	if (rc < 0)
		return wpy_raise(rc);
	self->last_ts = ts;
	Py_RETURN_NONE;
}

PyDoc_STRVAR(thread_close_doc, "close()\n\n"
	     "Ends the thread (without the GIL): closes the blocks still open (as if\n"
	     "left at its last event) and writes thread.pallas and its two .dat\n"
	     "files. Every later record raises weft.Error; closing twice is harmless.\n"
	     "PallasWriter.close() closes the threads left open.");

/* weft_pallas_thread_close for wpy_wstate_run. */
static int close_thread(void *t)
{
	return weft_pallas_thread_close(t);
}

static PyObject *thread_close(wpy_pallas_thread *self, PyObject *unused)
{
	if (self->closed)
		Py_RETURN_NONE;
	if (thread_check(self) < 0)
		return NULL;
	int rc = wpy_wstate_run(&self->owner->base.st, close_thread, self->t);
	self->closed = 1;
	return done_rc(rc);
}

static PyObject *thread_get_closed(wpy_pallas_thread *self, void *unused)
{
	return PyBool_FromLong(self->closed || self->owner == NULL || self->owner->base.st.done);
}

static PyObject *thread_get_location(wpy_pallas_thread *self, void *unused)
{
	return PyLong_FromUnsignedLong(self->location);
}

static PyObject *thread_get_last_time(wpy_pallas_thread *self, void *unused)
{
	return PyLong_FromUnsignedLongLong(self->last_ts);
}

static PyMethodDef thread_methods[] = {
	{"_record", (PyCFunction)thread_record, METH_VARARGS, thread_record_doc},
	{"close", (PyCFunction)thread_close, METH_NOARGS, thread_close_doc},
	{NULL, NULL, 0, NULL}
};

static PyGetSetDef thread_getset[] = {
	{"closed", (getter)thread_get_closed, NULL,
	 "True once the thread (or its writer) is closed.", NULL},
	{"location", (getter)thread_get_location, NULL, "The location id of the thread.", NULL},
	{"last_time", (getter)thread_get_last_time, NULL,
	 "The time of the last record (0 before the first): the next may not be earlier.", NULL},
	{NULL, NULL, NULL, NULL, NULL}
};

static PyTypeObject wpy_PallasThreadType = WPY_CHILD_TYPE(
	"weft._weft.PallasThread",
	"A thread of a Pallas trace being written (the C part of weft.PallasThread).",
	wpy_pallas_thread, thread_init, thread_methods, thread_getset);

int wpy_pallas_add(PyObject *mod)
{
	return PyModule_AddType(mod, &wpy_PallasWriterType) < 0 ||
	       PyModule_AddType(mod, &wpy_PallasThreadType) < 0 ? -1 : 0;
}
