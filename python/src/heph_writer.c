/* SPDX-License-Identifier: MIT */
/*
 * python/src/heph_writer.c - weft._weft.HephWriter and HephStream: the
 * Heph writer of weft/heph.h for Python producers. The Python classes
 * weft.HephWriter and weft.HephStream derive from them
 * (python/weft/_writers.py). The file is written to `<path>.tmp` and
 * renamed by close(); discard() (and leaving a `with` on an exception)
 * frees the writer without closing it, which removes the .tmp file.
 */
#include "writers.h"
#include "weft/heph.h"

#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#define PY_ARRAY_UNIQUE_SYMBOL weftpy_ARRAY_API
#define NO_IMPORT_ARRAY
#include <numpy/arrayobject.h>

#include <stdlib.h>
#include <string.h>

typedef struct wpy_heph_writer {
	wpy_writer_base base;   /* first: the shared head */
	weft_heph_writer *w;    /* NULL once closed or discarded */
} wpy_heph_writer;

typedef struct wpy_heph_stream {
	PyObject_HEAD
	wpy_heph_writer *owner; /* as in wpy_child_base; the handle belongs to owner->w */
	PyObject *dict;
	weft_heph_stream *s;
	uint32_t id;
} wpy_heph_stream;

static PyTypeObject wpy_HephWriterType, wpy_HephStreamType;

/* ---- The writer ------------------------------------------------------------- */

/* base.release: frees the library's writer; one not closed is abandoned (its .tmp removed). */
static void writer_release(PyObject *obj)
{
	wpy_heph_writer *self = (wpy_heph_writer *)obj;
	weft_heph_writer_free(self->w);
	self->w = NULL;
	self->base.st.done = WPY_W_DONE;
}

/*
 * HephWriter(path, epoch=None, buffer_size=0, replace=False, sync=False):
 * creates `<path>.tmp` (weft_heph_writer_create).
 */
static int writer_init(wpy_heph_writer *self, PyObject *args, PyObject *kwargs)
{
	static char *kwlist[] = {"path", "epoch", "buffer_size", "replace", "sync", NULL};
	PyObject *path = NULL, *epoch = Py_None;
	Py_ssize_t buffer_size = 0;
	int replace = 0, sync = 0;
	weft_heph_writer_options o = {0};

	self->base.st.what = "Heph writer";
	self->base.release = writer_release;
	if (self->w != NULL || self->base.st.done) {
		PyErr_SetString(PyExc_RuntimeError, "HephWriter.__init__ called twice");
		return -1;
	}
	if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O&|Onpp", kwlist, PyUnicode_FSConverter,
					 &path, &epoch, &buffer_size, &replace, &sync))
		return -1;
	if (epoch != Py_None && wpy_uint_arg(epoch, UINT64_MAX, "epoch", &o.epoch) < 0)
		goto fail;
	if (buffer_size < 0) {
		PyErr_SetString(PyExc_ValueError, "buffer_size must be >= 0");
		goto fail;
	}
	o.has_epoch = epoch != Py_None;
	o.buffer_size = (size_t)buffer_size;
	o.replace = replace;
	o.sync = sync;
	const char *cpath = PyBytes_AS_STRING(path);
	weft_heph_writer *w = NULL;
	int rc;
	Py_BEGIN_ALLOW_THREADS
	rc = weft_heph_writer_create(cpath, &o, &w);
	Py_END_ALLOW_THREADS
	if (rc < 0) {
		wpy_raise(rc);
		goto fail;
	}
	self->w = w;
	Py_DECREF(path);
	return 0;
fail:
	Py_DECREF(path);
	self->base.st.done = WPY_W_DONE;
	return -1;
}

PyDoc_STRVAR(writer_close_doc, "close()\n\n"
	     "Finishes the trace: writes what every stream buffers and renames\n"
	     "<path>.tmp to <path> (without the GIL). When a write failed, the file\n"
	     "keeps its .tmp name and the error is raised. Every later use of the\n"
	     "writer or its streams raises weft.Error; closing twice is harmless.");

/* weft_heph_writer_close for wpy_wstate_run. */
static int close_writer(void *w)
{
	return weft_heph_writer_close(w);
}

static PyObject *writer_close(wpy_heph_writer *self, PyObject *unused)
{
	if (self->base.st.done)
		Py_RETURN_NONE;
	if (wpy_wstate_check(&self->base.st) < 0)
		return NULL;
	int rc = wpy_wstate_run(&self->base.st, close_writer, self->w);
	PyObject *result = rc < 0 ? wpy_raise(rc) : Py_NewRef(Py_None);
	writer_release((PyObject *)self);
	return result;
}

PyDoc_STRVAR(writer_discard_doc, "discard()\n\n"
	     "Abandons the trace: nothing more is written and <path>.tmp is removed\n"
	     "(what leaving a `with` block on an exception does). Harmless once closed.");

static PyMethodDef writer_methods[] = {
	{"close", (PyCFunction)writer_close, METH_NOARGS, writer_close_doc},
	{"discard", wpy_writer_discard, METH_NOARGS, writer_discard_doc},
	{NULL, NULL, 0, NULL}
};

static PyGetSetDef writer_getset[] = {
	{"closed", wpy_writer_get_closed, NULL,
	 "True once closed or discarded.", NULL},
	{NULL, NULL, NULL, NULL, NULL}
};

static PyTypeObject wpy_HephWriterType = WPY_WRITER_TYPE(
	"weft._weft.HephWriter", "A Heph trace being written (the C part of weft.HephWriter).",
	wpy_heph_writer, writer_init, writer_methods, writer_getset);

/* ---- Attribute values ------------------------------------------------------- */

/* The kinds of attribute values (and of array elements). */
enum { K_BAD, K_INT, K_FLOAT, K_STR };

/* The kind of a scalar value: bools and other types are K_BAD. */
static int value_kind(PyObject *v)
{
	if (PyBool_Check(v) || PyArray_IsScalar(v, Bool))
		return K_BAD;
	if (PyLong_Check(v) || PyArray_IsScalar(v, Integer))
		return K_INT;
	if (PyFloat_Check(v) || PyArray_IsScalar(v, Floating))
		return K_FLOAT;
	if (PyUnicode_Check(v))
		return K_STR;
	return K_BAD;
}

/* -1 with TypeError naming the attribute. */
static int bad_type(const char *name, PyObject *v, const char *why)
{
	PyErr_Format(PyExc_TypeError, "attribute %s: %s, not %.100s", name, why,
		     Py_TYPE(v)->tp_name);
	return -1;
}

/*
 * An integer as u64 (is_signed 0) or i64 (1): Python ints >= 0 are u64
 * and negative ones i64; numpy integers keep their signedness. -1 with
 * OverflowError naming the attribute.
 */
static int int_value(const char *name, PyObject *v, int *is_signed, uint64_t *out)
{
	PyObject *i = PyNumber_Index(v);
	if (i == NULL)
		return -1;
	int neg = _PyLong_Sign(i) < 0;
	*is_signed = neg || PyArray_IsScalar(v, SignedInteger);
	if (*is_signed) {
		long long x = PyLong_AsLongLong(i);
		*out = (uint64_t)x;
	} else {
		*out = PyLong_AsUnsignedLongLong(i);
	}
	Py_DECREF(i);
	if (PyErr_Occurred()) {
		PyErr_Format(PyExc_OverflowError, "attribute %s: %s", name,
			     *is_signed ? "does not fit in an i64" : "does not fit in a u64");
		return -1;
	}
	return 0;
}

/* The UTF-8 bytes of a str value: NULL with an error. */
static const char *utf8(PyObject *v, Py_ssize_t *len)
{
	return PyUnicode_AsUTF8AndSize(v, len);
}

/* An array attribute from a list or tuple of ints, floats or strs (one kind). */
static int add_sequence(weft_heph_stream *s, const char *name, PyObject *seq, int *crc)
{
	Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
	PyObject **items = PySequence_Fast_ITEMS(seq);
	int kind = n > 0 ? value_kind(items[0]) : K_INT;
	for (Py_ssize_t i = 0; i < n; i++)
		if (value_kind(items[i]) != kind || kind == K_BAD)
			return bad_type(name, items[i],
					"a list must hold ints, floats or strs, all of one kind");
	size_t elem = kind == K_STR ? sizeof(char *) + sizeof(size_t) : sizeof(uint64_t);
	void *buf = PyMem_Malloc((size_t)(n > 0 ? n : 1) * elem);
	if (buf == NULL)
		return PyErr_NoMemory(), -1;
	int rc = 0, any_signed = 0, big_unsigned = 0, is_signed;
	uint64_t *u = buf;
	for (Py_ssize_t i = 0; rc == 0 && i < n; i++) {
		if (kind == K_INT) {
			rc = int_value(name, items[i], &is_signed, &u[i]);
			any_signed |= is_signed;
			big_unsigned |= !is_signed && u[i] > INT64_MAX;
		} else if (kind == K_FLOAT) {
			double d = PyFloat_AsDouble(items[i]);
			memcpy(&u[i], &d, sizeof d);
			rc = d == -1.0 && PyErr_Occurred() ? -1 : 0;
		} else {
			Py_ssize_t len;
			((const char **)buf)[i] = utf8(items[i], &len);
			((size_t *)((const char **)buf + n))[i] = (size_t)len;
			rc = ((const char **)buf)[i] == NULL ? -1 : 0;
		}
	}
	if (rc == 0 && any_signed && big_unsigned) { /* an i64 array cannot hold it */
		rc = -1;
		PyErr_Format(PyExc_OverflowError,
			     "attribute %s: a list with negative values must fit in i64", name);
	}
	if (rc == 0) {
		if (kind == K_STR)
			*crc = weft_heph_event_add_str_array(s, name, (const char *const *)buf,
							     (const size_t *)((const char **)buf + n),
							     (size_t)n);
		else if (kind == K_FLOAT)
			*crc = weft_heph_event_add_f64_array(s, name, (const double *)buf, (size_t)n);
		else if (any_signed)
			*crc = weft_heph_event_add_i64_array(s, name, (const int64_t *)buf, (size_t)n);
		else
			*crc = weft_heph_event_add_u64_array(s, name, u, (size_t)n);
	}
	PyMem_Free(buf);
	return rc;
}

/* An array attribute from a 1-D numpy array (unsigned, signed, float, or str/object). */
static int add_ndarray(weft_heph_stream *s, const char *name, PyArrayObject *a, int *crc)
{
	char kind = PyArray_DESCR(a)->kind;
	if (PyArray_NDIM(a) != 1)
		return bad_type(name, (PyObject *)a, "an array must be one-dimensional");
	if (kind == 'U' || kind == 'O') {
		PyObject *list = PyArray_ToList(a);
		if (list == NULL)
			return -1;
		int rc = add_sequence(s, name, list, crc);
		Py_DECREF(list);
		return rc;
	}
	int type = kind == 'u' ? NPY_UINT64 : kind == 'i' ? NPY_INT64 : kind == 'f' ? NPY_FLOAT64 : -1;
	if (type < 0)
		return bad_type(name, (PyObject *)a,
				"an array must hold unsigned, signed or float numbers or strs");
	PyArrayObject *c = (PyArrayObject *)PyArray_FROM_OTF((PyObject *)a, type, NPY_ARRAY_IN_ARRAY);
	if (c == NULL)
		return -1;
	size_t n = (size_t)PyArray_SIZE(c);
	if (type == NPY_UINT64)
		*crc = weft_heph_event_add_u64_array(s, name, PyArray_DATA(c), n);
	else if (type == NPY_INT64)
		*crc = weft_heph_event_add_i64_array(s, name, PyArray_DATA(c), n);
	else
		*crc = weft_heph_event_add_f64_array(s, name, PyArray_DATA(c), n);
	Py_DECREF(c);
	return 0;
}

/*
 * Adds attribute `name` = v to the event begun on s. Returns -1 with a
 * Python error (a value of no Heph type); else 0, with the library's
 * status in *crc.
 */
static int add_attribute(weft_heph_stream *s, PyObject *key, PyObject *v, int *crc)
{
	if (!PyUnicode_Check(key)) {
		PyErr_SetString(PyExc_TypeError, "attribute names must be str");
		return -1;
	}
	const char *name = PyUnicode_AsUTF8(key);
	if (name == NULL)
		return -1;
	*crc = 0;
	switch (value_kind(v)) {
	case K_INT: {
		int is_signed;
		uint64_t u;
		if (int_value(name, v, &is_signed, &u) < 0)
			return -1;
		*crc = is_signed ? weft_heph_event_add_i64(s, name, (int64_t)u)
				 : weft_heph_event_add_u64(s, name, u);
		return 0;
	}
	case K_FLOAT: {
		double d = PyFloat_AsDouble(v);
		if (d == -1.0 && PyErr_Occurred())
			return -1;
		*crc = weft_heph_event_add_f64(s, name, d);
		return 0;
	}
	case K_STR: {
		Py_ssize_t len;
		const char *text = utf8(v, &len);
		if (text == NULL)
			return -1;
		*crc = weft_heph_event_add_str(s, name, text, (size_t)len);
		return 0;
	}
	}
	if (PyArray_Check(v))
		return add_ndarray(s, name, (PyArrayObject *)v, crc);
	if (PyList_Check(v) || PyTuple_Check(v))
		return add_sequence(s, name, v, crc);
	return bad_type(name, v, "a value must be an int, a float, a str or a list or array of them");
}

/* Adds every (key, value) of the dict `attrs` except the skipped keys: -1 on error. */
static int add_attributes(weft_heph_stream *s, PyObject *attrs, int skip_args, int *crc)
{
	PyObject *key, *value;
	Py_ssize_t pos = 0;
	while (attrs != NULL && PyDict_Next(attrs, &pos, &key, &value)) {
		if (skip_args && PyUnicode_Check(key) &&
		    (PyUnicode_CompareWithASCIIString(key, "end") == 0 ||
		     PyUnicode_CompareWithASCIIString(key, "substream") == 0))
			continue;
		if (add_attribute(s, key, value, crc) < 0)
			return -1;
		if (*crc < 0)
			return 0;
	}
	return 0;
}

/* ---- The stream ---------------------------------------------------------------- */

/* -1 with an error when the stream's writer is closed or busy. */
static int stream_check(wpy_heph_stream *self)
{
	if (self->owner == NULL || self->s == NULL) {
		PyErr_SetString(PyExc_RuntimeError, "HephStream not initialised");
		return -1;
	}
	return wpy_wstate_check(&self->owner->base.st);
}

/* HephStream(writer, stream_id): weft_heph_stream_create. */
static int stream_init(wpy_heph_stream *self, PyObject *args, PyObject *kwargs)
{
	static char *kwlist[] = {"writer", "stream_id", NULL};
	wpy_heph_writer *w;
	PyObject *id;
	uint64_t v;
	if (self->owner != NULL) {
		PyErr_SetString(PyExc_RuntimeError, "HephStream.__init__ called twice");
		return -1;
	}
	if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O!O", kwlist, &wpy_HephWriterType, &w, &id) ||
	    wpy_wstate_check(&w->base.st) < 0 || wpy_uint_arg(id, UINT32_MAX, "stream_id", &v) < 0)
		return -1;
	int rc = weft_heph_stream_create(w->w, (uint32_t)v, &self->s);
	if (rc < 0) {
		wpy_raise(rc);
		return -1;
	}
	self->owner = (wpy_heph_writer *)Py_NewRef(w);
	self->id = (uint32_t)v;
	return 0;
}

/* The argument `name` of a call: from args[i] or kwargs, else NULL. */
static PyObject *arg_at(PyObject *args, Py_ssize_t i, PyObject *kwargs, const char *name)
{
	if (PyTuple_GET_SIZE(args) > i)
		return PyTuple_GET_ITEM(args, i);
	return kwargs != NULL ? PyDict_GetItemString(kwargs, name) : NULL;
}

/* start, end and substream of an event: -1 with an error (end before start too). */
static int event_times(PyObject *args, PyObject *kwargs, uint64_t *start, uint64_t *end,
		       uint64_t *sub)
{
	PyObject *o_end = arg_at(args, 2, kwargs, "end"), *o_sub = arg_at(args, 3, kwargs, "substream");
	if (wpy_uint_arg(PyTuple_GET_ITEM(args, 1), UINT64_MAX, "start", start) < 0)
		return -1;
	*end = *start;
	*sub = 0;
	if ((o_end != NULL && o_end != Py_None && wpy_uint_arg(o_end, UINT64_MAX, "end", end) < 0) ||
	    (o_sub != NULL && wpy_uint_arg(o_sub, UINT64_MAX, "substream", sub) < 0))
		return -1;
	if (*end < *start) {
		PyErr_Format(wpy_ArgumentError, "event ends (%llu) before it starts (%llu)",
			     (unsigned long long)*end, (unsigned long long)*start);
		return -1;
	}
	return 0;
}

PyDoc_STRVAR(event_doc, "event(name, start, end=None, substream=0, attributes=None, /, **attributes)\n\n"
	     "Writes one event: the interval [start, end] in ns relative to the epoch\n"
	     "(end None: start), on `substream`, described by `name`, with typed\n"
	     "attributes: int (u64 when >= 0, i64 when negative; numpy integers keep\n"
	     "their signedness), float (f64), str, and lists, tuples or 1-D numpy\n"
	     "arrays of one of these (arrays; an empty list is a u64 array). bool and\n"
	     "other types raise TypeError naming the attribute. Attributes are\n"
	     "keywords, or a dict as the fifth argument (for names such as \"end\").\n"
	     "The library's refusals (a name, string or array longer than 65535)\n"
	     "raise weft.ArgumentError; nothing of a refused event is written.");

static PyObject *stream_event(wpy_heph_stream *self, PyObject *args, PyObject *kwargs)
{
	Py_ssize_t nargs = PyTuple_GET_SIZE(args);
	if (nargs < 2 || nargs > 5)
		return PyErr_Format(PyExc_TypeError,
				    "event() takes name, start, [end, substream, attributes] (%zd given)",
				    nargs);
	if (kwargs != NULL && ((nargs > 2 && PyDict_GetItemString(kwargs, "end") != NULL) ||
			       (nargs > 3 && PyDict_GetItemString(kwargs, "substream") != NULL)))
		return PyErr_Format(PyExc_TypeError, "event() got end or substream twice");
	PyObject *name = PyTuple_GET_ITEM(args, 0);
	PyObject *extra = nargs == 5 ? PyTuple_GET_ITEM(args, 4) : NULL;
	uint64_t start, end, sub;
	Py_ssize_t len;
	if (stream_check(self) < 0 || event_times(args, kwargs, &start, &end, &sub) < 0)
		return NULL;
	if (!PyUnicode_Check(name))
		return PyErr_Format(PyExc_TypeError, "name must be a str, not %.100s",
				    Py_TYPE(name)->tp_name);
	if (extra != NULL && extra != Py_None && !PyDict_Check(extra))
		return PyErr_Format(PyExc_TypeError, "attributes must be a dict");
	const char *desc = utf8(name, &len);
	if (desc == NULL)
		return NULL;
	int crc = weft_heph_event_begin(self->s, sub, start, end, desc, (size_t)len);
	if (crc == 0 && (add_attributes(self->s, kwargs, 1, &crc) < 0 ||
			 (crc == 0 && extra != Py_None &&
			  add_attributes(self->s, extra, 0, &crc) < 0))) {
		weft_heph_event_cancel(self->s);
		return NULL;
	}
	int rc = weft_heph_event_end(self->s);
	if (crc == 0)
		crc = rc;
	return crc < 0 ? wpy_raise(crc) : Py_NewRef(Py_None);
}

/* An attribute column of the fast path: its name, type, values and missing rows. */
typedef struct heph_column {
	const char *name;
	int type;               /* NPY_UINT64, NPY_INT64, NPY_FLOAT64 or NPY_UNICODE */
	const void *data;       /* the numbers; for texts, const char *[n] (NULL: missing) */
	size_t *lens;           /* texts: their lengths (PyMem) */
	const npy_bool *mask;   /* NULL, or true where the event has no value */
} heph_column;

/* What _events() writes, gathered with the GIL, written without it. */
typedef struct heph_batch {
	Py_ssize_t n, ntable;
	const char **desc;      /* by table index */
	size_t *desc_len;
	const int64_t *index;   /* NULL: event i has table[i] */
	const uint64_t *start, *end, *sub;
	heph_column *cols;
	Py_ssize_t ncols;
} heph_batch;

/* The UTF-8 texts of the table (a tuple of str) into b: -1 with an error. */
static int batch_table(heph_batch *b, PyObject *table)
{
	b->ntable = PyTuple_GET_SIZE(table);
	b->desc = PyMem_Calloc((size_t)b->ntable + 1, sizeof *b->desc);
	b->desc_len = PyMem_Calloc((size_t)b->ntable + 1, sizeof *b->desc_len);
	if (b->desc == NULL || b->desc_len == NULL)
		return PyErr_NoMemory(), -1;
	for (Py_ssize_t i = 0; i < b->ntable; i++) {
		PyObject *s = PyTuple_GET_ITEM(table, i);
		Py_ssize_t len;
		if (!PyUnicode_Check(s)) {
			PyErr_Format(PyExc_TypeError, "names[%zd] must be a str, not %.100s", i,
				     Py_TYPE(s)->tp_name);
			return -1;
		}
		if ((b->desc[i] = utf8(s, &len)) == NULL)
			return -1;
		b->desc_len[i] = (size_t)len;
	}
	return 0;
}

/* `o` as a 1-D array of n elements, kept alive by `keep`: NULL with an error. */
static PyArrayObject *kept_array(PyObject *o, Py_ssize_t n, const char *name, PyObject *keep)
{
	PyArrayObject *a = (PyArrayObject *)PyArray_FROM_O(o);
	if (a == NULL || PyList_Append(keep, (PyObject *)a) < 0) {
		Py_XDECREF(a);
		return NULL;
	}
	Py_DECREF(a);
	if (PyArray_NDIM(a) != 1 || PyArray_DIM(a, 0) != n) {
		PyErr_Format(PyExc_ValueError, "attribute %s: a column must be a 1-D array of %zd "
			     "values", name, n);
		return NULL;
	}
	return a;
}

/* `a` cast to `type`, C-contiguous, kept alive by `keep`: its data, or NULL with an error. */
static const void *kept_cast(PyArrayObject *a, int type, PyObject *keep)
{
	PyObject *cast = PyArray_FROM_OTF((PyObject *)a, type, NPY_ARRAY_IN_ARRAY);
	if (cast == NULL || PyList_Append(keep, cast) < 0) {
		Py_XDECREF(cast);
		return NULL;
	}
	Py_DECREF(cast);
	return PyArray_DATA((PyArrayObject *)cast);
}

/* The texts of a str (or object) column: str values, None where missing. */
static int text_column(heph_column *col, PyArrayObject *a, Py_ssize_t n, PyObject *keep)
{
	PyObject *list = PyArray_ToList(a);
	if (list == NULL || PyList_Append(keep, list) < 0) {
		Py_XDECREF(list);
		return -1;
	}
	Py_DECREF(list);
	col->type = NPY_UNICODE; /* from here, batch_free_columns frees what is allocated */
	const char **texts = PyMem_Calloc((size_t)n + 1, sizeof *texts);
	col->lens = PyMem_Calloc((size_t)n + 1, sizeof *col->lens);
	col->data = texts;
	if (texts == NULL || col->lens == NULL)
		return PyErr_NoMemory(), -1;
	for (Py_ssize_t i = 0; i < n; i++) {
		PyObject *v = PyList_GET_ITEM(list, i);
		Py_ssize_t len = 0;
		if (v == Py_None)
			continue;
		if (!PyUnicode_Check(v))
			return bad_type(col->name, v, "a column of texts holds str (None: missing)");
		if ((texts[i] = utf8(v, &len)) == NULL)
			return -1;
		col->lens[i] = (size_t)len;
	}
	return 0;
}

/*
 * Column c of the fast path: `value` is a 1-D array of n numbers or texts,
 * or (values, mask), the mask true where the event has no value. -1 with
 * an error.
 */
static int batch_column(heph_batch *b, heph_column *col, PyObject *value, PyObject *keep)
{
	PyObject *mask = NULL;
	if (PyTuple_Check(value) && PyTuple_GET_SIZE(value) == 2) {
		mask = PyTuple_GET_ITEM(value, 1);
		value = PyTuple_GET_ITEM(value, 0);
	}
	PyArrayObject *a = kept_array(value, b->n, col->name, keep);
	if (a == NULL)
		return -1;
	if (mask != NULL) {
		PyArrayObject *m = kept_array(mask, b->n, col->name, keep);
		if (m == NULL || PyArray_DESCR(m)->kind != 'b')
			return m == NULL ? -1 : bad_type(col->name, mask, "a mask holds bools");
		if ((col->mask = kept_cast(m, NPY_BOOL, keep)) == NULL)
			return -1;
	}
	char kind = PyArray_DESCR(a)->kind;
	if (kind == 'U' || kind == 'O')
		return text_column(col, a, b->n, keep);
	col->type = kind == 'u' ? NPY_UINT64 : kind == 'i' ? NPY_INT64 : kind == 'f' ? NPY_FLOAT64 : -1;
	if (col->type < 0)
		return bad_type(col->name, value,
				"a column holds unsigned, signed or float numbers or texts");
	return (col->data = kept_cast(a, col->type, keep)) == NULL ? -1 : 0;
}

/* The attribute columns (a dict of columns of n elements), kept alive by `keep`. */
static int batch_columns(heph_batch *b, PyObject *columns, PyObject *keep)
{
	PyObject *key, *value;
	Py_ssize_t pos = 0;
	b->ncols = PyDict_Size(columns);
	b->cols = PyMem_Calloc((size_t)b->ncols + 1, sizeof *b->cols);
	if (b->cols == NULL)
		return PyErr_NoMemory(), -1;
	for (Py_ssize_t c = 0; PyDict_Next(columns, &pos, &key, &value); c++) {
		const char *name = PyUnicode_Check(key) ? PyUnicode_AsUTF8(key) : NULL;
		if (name == NULL) {
			if (!PyErr_Occurred())
				PyErr_SetString(PyExc_TypeError, "attribute names must be str");
			return -1;
		}
		b->cols[c].name = name;
		if (batch_column(b, &b->cols[c], value, keep) < 0)
			return -1;
	}
	return 0;
}

/* Adds the value of column `col` for event i (none when missing): the library's status. */
static int add_column_value(weft_heph_stream *s, const heph_column *col, Py_ssize_t i)
{
	if (col->mask != NULL && col->mask[i])
		return 0;
	switch (col->type) {
	case NPY_UINT64:
		return weft_heph_event_add_u64(s, col->name, ((const uint64_t *)col->data)[i]);
	case NPY_INT64:
		return weft_heph_event_add_i64(s, col->name, ((const int64_t *)col->data)[i]);
	case NPY_FLOAT64:
		return weft_heph_event_add_f64(s, col->name, ((const double *)col->data)[i]);
	}
	const char *text = ((const char *const *)col->data)[i];
	return text != NULL ? weft_heph_event_add_str(s, col->name, text, col->lens[i]) : 0;
}

/* Frees what the columns allocated. */
static void batch_free_columns(heph_batch *b)
{
	for (Py_ssize_t c = 0; b->cols != NULL && c < b->ncols; c++) {
		if (b->cols[c].type == NPY_UNICODE) {
			PyMem_Free((void *)b->cols[c].data);
			PyMem_Free(b->cols[c].lens);
		}
	}
	PyMem_Free(b->cols);
}

/* A u64 column of n elements (None: NULL), kept in `keep`: -1 with an error. */
static int batch_u64(PyObject *o, Py_ssize_t n, const char *what, PyObject *keep,
		     const uint64_t **out)
{
	*out = NULL;
	if (o == Py_None)
		return 0;
	PyObject *a = wpy_u64_column(o, n, what);
	if (a == NULL || PyList_Append(keep, a) < 0) {
		Py_XDECREF(a);
		return -1;
	}
	Py_DECREF(a);
	*out = PyArray_DATA((PyArrayObject *)a);
	return 0;
}

/* Checks the table indices and that no event ends before it starts: -1 with an error. */
static int batch_check(const heph_batch *b)
{
	for (Py_ssize_t i = 0; i < b->n; i++) {
		if (b->index != NULL && (b->index[i] < 0 || b->index[i] >= b->ntable)) {
			PyErr_Format(PyExc_IndexError, "name index %lld of event %zd is not in [0, %zd)",
				     (long long)b->index[i], i, b->ntable);
			return -1;
		}
		if (b->end != NULL && b->end[i] < b->start[i]) {
			PyErr_Format(wpy_ArgumentError, "event %zd ends (%llu) before it starts (%llu)",
				     i, (unsigned long long)b->end[i], (unsigned long long)b->start[i]);
			return -1;
		}
	}
	return 0;
}

/* Writes the events of b (no GIL needed): 0, or the first failure (the events before it are written). */
static int batch_write(weft_heph_stream *s, const heph_batch *b)
{
	for (Py_ssize_t i = 0; i < b->n; i++) {
		Py_ssize_t k = b->index != NULL ? (Py_ssize_t)b->index[i] : i;
		uint64_t start = b->start[i];
		int rc = weft_heph_event_begin(s, b->sub != NULL ? b->sub[i] : 0, start,
					       b->end != NULL ? b->end[i] : start, b->desc[k],
					       b->desc_len[k]);
		for (Py_ssize_t c = 0; rc == 0 && c < b->ncols; c++)
			rc = add_column_value(s, &b->cols[c], i);
		rc = weft_heph_event_end(s);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* The int64 index column (None: NULL), kept in `keep`. */
static int batch_index(heph_batch *b, PyObject *index, PyObject *keep)
{
	b->index = NULL;
	if (index == Py_None)
		return 0;
	PyArrayObject *a = (PyArrayObject *)PyArray_FROM_O(index);
	if (a == NULL || PyList_Append(keep, (PyObject *)a) < 0) {
		Py_XDECREF(a);
		return -1;
	}
	Py_DECREF(a);
	char kind = PyArray_DESCR(a)->kind;
	if ((kind != 'u' && kind != 'i' && PyArray_SIZE(a) > 0) || PyArray_NDIM(a) != 1 ||
	    PyArray_DIM(a, 0) != b->n) {
		PyErr_Format(PyExc_TypeError, "the name index must be %zd integers", b->n);
		return -1;
	}
	PyObject *c = PyArray_FROM_OTF((PyObject *)a, NPY_INT64, NPY_ARRAY_IN_ARRAY | NPY_ARRAY_FORCECAST);
	if (c == NULL || PyList_Append(keep, c) < 0) {
		Py_XDECREF(c);
		return -1;
	}
	Py_DECREF(c);
	b->index = PyArray_DATA((PyArrayObject *)c);
	return 0;
}

/* batch_write for wpy_wstate_run. */
struct write_call {
	weft_heph_stream *s;
	const heph_batch *b;
};

static int write_batch(void *arg)
{
	const struct write_call *c = arg;
	return batch_write(c->s, c->b);
}

PyDoc_STRVAR(stream_events_doc, "_events(table, index, starts, ends, substreams, columns)\n\n"
	     "Writes len(starts) events without the GIL: event i is named table[index[i]]\n"
	     "(index None: table[i]), starts at starts[i], ends at ends[i] (None: starts),\n"
	     "on substreams[i] (None: 0), with one attribute per column (a dict of 1-D\n"
	     "arrays of numbers or texts, or of (values, mask) pairs, the mask true where\n"
	     "the event has no value; None in a column of texts: no value). Checked\n"
	     "before anything is written. weft.HephStream.events() is the interface.");

static PyObject *stream_events(wpy_heph_stream *self, PyObject *args)
{
	PyObject *table, *index, *starts, *ends, *subs, *columns;
	heph_batch b = {0};
	PyObject *result = NULL;
	if (!PyArg_ParseTuple(args, "O!OOOOO!", &PyTuple_Type, &table, &index, &starts, &ends, &subs,
			      &PyDict_Type, &columns) ||
	    stream_check(self) < 0)
		return NULL;
	PyObject *keep = PyList_New(0);
	if (keep == NULL)
		return NULL;
	if (batch_u64(starts, -1, "starts", keep, &b.start) < 0)
		goto done;
	b.n = PyArray_DIM((PyArrayObject *)PyList_GET_ITEM(keep, 0), 0);
	if (batch_u64(ends, b.n, "ends", keep, &b.end) < 0 ||
	    batch_u64(subs, b.n, "substreams", keep, &b.sub) < 0 ||
	    batch_index(&b, index, keep) < 0 || batch_table(&b, table) < 0 ||
	    batch_columns(&b, columns, keep) < 0)
		goto done;
	if (b.index == NULL && b.ntable != b.n) {
		PyErr_Format(PyExc_ValueError, "%zd names for %zd events", b.ntable, b.n);
		goto done;
	}
	if (batch_check(&b) < 0)
		goto done;
	struct write_call call = {self->s, &b};
	int rc = wpy_wstate_run(&self->owner->base.st, write_batch, &call);
	result = rc < 0 ? wpy_raise(rc) : Py_NewRef(Py_None);
done:
	PyMem_Free(b.desc);
	PyMem_Free(b.desc_len);
	batch_free_columns(&b);
	Py_DECREF(keep);
	return result;
}

PyDoc_STRVAR(stream_flush_doc, "flush()\n\n"
	     "Writes the complete events the stream buffers to the file now (without\n"
	     "the GIL), e.g. before a risky step.");

/* weft_heph_stream_flush for wpy_wstate_run. */
static int flush_stream(void *s)
{
	return weft_heph_stream_flush(s);
}

static PyObject *stream_flush(wpy_heph_stream *self, PyObject *unused)
{
	if (stream_check(self) < 0)
		return NULL;
	int rc = wpy_wstate_run(&self->owner->base.st, flush_stream, self->s);
	return rc < 0 ? wpy_raise(rc) : Py_NewRef(Py_None);
}

static PyObject *stream_get_counter(wpy_heph_stream *self, void *unused)
{
	if (stream_check(self) < 0)
		return NULL;
	return PyLong_FromUnsignedLong(weft_heph_stream_counter(self->s));
}

static int stream_set_counter(wpy_heph_stream *self, PyObject *value, void *unused)
{
	uint64_t v;
	if (value == NULL) {
		PyErr_SetString(PyExc_AttributeError, "counter cannot be deleted");
		return -1;
	}
	if (stream_check(self) < 0 || wpy_uint_arg(value, UINT32_MAX, "counter", &v) < 0)
		return -1;
	int rc = weft_heph_stream_set_counter(self->s, (uint32_t)v);
	return rc < 0 ? (wpy_raise(rc), -1) : 0;
}

static PyObject *stream_get_id(wpy_heph_stream *self, void *unused)
{
	return PyLong_FromUnsignedLong(self->id);
}

static PyMethodDef stream_methods[] = {
	{"event", (PyCFunction)(void (*)(void))stream_event, METH_VARARGS | METH_KEYWORDS, event_doc},
	{"_events", (PyCFunction)stream_events, METH_VARARGS, stream_events_doc},
	{"flush", (PyCFunction)stream_flush, METH_NOARGS, stream_flush_doc},
	{NULL, NULL, 0, NULL}
};

static PyGetSetDef stream_getset[] = {
	{"counter", (getter)stream_get_counter, (setter)stream_set_counter,
	 "The counter the next event will carry (settable: a u32; the wrap to 0 follows 2**32 - 1).",
	 NULL},
	{"stream_id", (getter)stream_get_id, NULL, "The stream id (a u32).", NULL},
	{NULL, NULL, NULL, NULL, NULL}
};

static PyTypeObject wpy_HephStreamType = WPY_CHILD_TYPE(
	"weft._weft.HephStream",
	"A stream of a Heph trace being written (the C part of weft.HephStream).",
	wpy_heph_stream, stream_init, stream_methods, stream_getset);

int wpy_heph_add(PyObject *mod)
{
	return PyModule_AddType(mod, &wpy_HephWriterType) < 0 ||
	       PyModule_AddType(mod, &wpy_HephStreamType) < 0 ? -1 : 0;
}
