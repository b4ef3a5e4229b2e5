/* SPDX-License-Identifier: MIT */
/*
 * python/src/fields.c - the typed-field columns of an event batch (see
 * fields.h). Each row keeps what the event's field holds (an unsigned or
 * signed integer, a float, a bool, or for texts, bytes and arrays the
 * field with a copy of its bytes) or that the event lacks the field: the
 * batch is read without the GIL. When the batch is taken the texts, bytes
 * and arrays become Python objects, and each
 * column the narrowest numpy array that holds every value:
 * uint64 or int64 (with a mask of the missing rows), float64 (NaN where
 * missing), bool (with a mask), or object (None where missing).
 */
#include "fields.h"

#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#define PY_ARRAY_UNIQUE_SYMBOL weftpy_ARRAY_API
#define NO_IMPORT_ARRAY
#include <numpy/arrayobject.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Grows the array *p of *cap elements of `size` bytes to hold `need` (no GIL): -1 without memory. */
static int grow(void **p, size_t *cap, size_t need, size_t size)
{
	if (need <= *cap)
		return 0;
	void *q = realloc(*p, need * size);
	if (q == NULL)
		return -1;
	*p = q;
	*cap = need;
	return 0;
}

/* Frees the buffers of a column's rows. */
static void drop_rows(wpy_fcol *c)
{
	free(c->tag);
	free(c->val);
	free(c->pend);
	c->tag = NULL;
	c->val = NULL;
	c->pend = NULL;
}

/* Empty row buffers (every row missing) for `rows` rows (no GIL): -1 without memory. */
static int alloc_rows(wpy_fcol *c, size_t rows)
{
	c->tag = calloc(rows ? rows : 1, 1);
	c->val = malloc((rows ? rows : 1) * sizeof *c->val);
	c->pend = malloc((rows ? rows : 1) * sizeof *c->pend);
	if (c->tag != NULL && c->val != NULL && c->pend != NULL)
		return 0;
	drop_rows(c);
	return -1;
}

/*
 * Adds a column named name[0..len-1] (no GIL: `pyname`, the name as str,
 * may be NULL and is then made when the batch is taken). Its index, or
 * -1 without memory.
 */
static Py_ssize_t add_column(wpy_fields *f, const char *name, size_t len, PyObject *pyname)
{
	if (f->count == f->cap &&
	    grow((void **)&f->cols, &f->cap, f->cap ? f->cap * 2 : 8, sizeof *f->cols) < 0)
		return -1;
	wpy_fcol *c = &f->cols[f->count];
	memset(c, 0, sizeof *c);
	c->cname = malloc(len + 1);
	if (c->cname == NULL)
		return -1;
	memcpy(c->cname, name, len);
	c->cname[len] = '\0';
	c->cname_len = len;
	if (f->rows > 0 && alloc_rows(c, f->rows) < 0) {
		free(c->cname);
		return -1;
	}
	c->name = pyname;
	Py_XINCREF(pyname);
	return (Py_ssize_t)f->count++;
}

/* Adds the column of a name given by the caller (a str): -1 with an error. */
static int add_named_column(wpy_fields *f, PyObject *name)
{
	if (!PyUnicode_Check(name)) {
		PyErr_SetString(PyExc_TypeError, "a field name must be a str");
		return -1;
	}
	Py_ssize_t len;
	const char *s = PyUnicode_AsUTF8AndSize(name, &len);
	if (s == NULL)
		return -1;
	if (add_column(f, s, (size_t)len, name) < 0) {
		PyErr_NoMemory();
		return -1;
	}
	return 0;
}

int wpy_fields_init(wpy_fields *f, PyObject *spec)
{
	memset(f, 0, sizeof *f);
	if (spec == NULL || spec == Py_None || spec == Py_False)
		return 0;
	f->active = 1;
	if (spec == Py_True) {
		f->all = 1;
		return 0;
	}
	if (PyUnicode_Check(spec)) {
		PyErr_SetString(PyExc_TypeError, "fields must be True or a list of field names");
		return -1;
	}
	PyObject *iter = PyObject_GetIter(spec);
	if (iter == NULL)
		return -1;
	PyObject *name;
	while ((name = PyIter_Next(iter)) != NULL) {
		int rc = add_named_column(f, name);
		Py_DECREF(name);
		if (rc < 0) {
			Py_DECREF(iter);
			return -1;
		}
	}
	Py_DECREF(iter);
	return PyErr_Occurred() ? -1 : 0;
}

int wpy_fields_begin(wpy_fields *f, size_t rows)
{
	f->arena_used = 0;
	for (size_t k = 0; k < f->count; k++) {
		wpy_fcol *c = &f->cols[k];
		drop_rows(c);
		if (alloc_rows(c, rows) < 0) {
			for (size_t j = k + 1; j < f->count; j++)
				drop_rows(&f->cols[j]);
			f->rows = 0;
			PyErr_NoMemory();
			return -1;
		}
	}
	f->rows = rows;
	return 0;
}

/* The column of a field name, created when fields=True: index, -2 none, -1 no memory. */
static Py_ssize_t find_column(wpy_fields *f, const char *name, size_t len)
{
	for (size_t k = 0; k < f->count; k++)
		if (f->cols[k].cname_len == len && memcmp(f->cols[k].cname, name, len) == 0)
			return (Py_ssize_t)k;
	if (!f->all)
		return -2;
	return add_column(f, name, len, NULL);
}

/* A scalar field as a Python object (the elements of arrays, texts, bytes). */
static PyObject *scalar_object(const weft_field *x)
{
	switch (x->type) {
	case WEFT_TYPE_I8: case WEFT_TYPE_I16: case WEFT_TYPE_I32: case WEFT_TYPE_I64:
		return PyLong_FromLongLong(x->v.i);
	case WEFT_TYPE_F32: case WEFT_TYPE_F64:
		return PyFloat_FromDouble(x->v.f);
	case WEFT_TYPE_BOOL:
		return PyBool_FromLong(x->v.u != 0);
	case WEFT_TYPE_STR:
		return PyUnicode_DecodeUTF8(x->v.s.ptr, (Py_ssize_t)x->v.s.len, "replace");
	case WEFT_TYPE_BYTES:
		return PyBytes_FromStringAndSize(x->v.s.ptr, (Py_ssize_t)x->v.s.len);
	default:
		return PyLong_FromUnsignedLongLong(x->v.u);
	}
}

/* An array field as a list of its element values. */
static PyObject *array_object(const weft_field *x)
{
	PyObject *list = PyList_New(x->count);
	for (uint32_t i = 0; list != NULL && i < x->count; i++) {
		weft_field e;
		PyObject *v = weft_field_element(x, i, &e) < 0 ? Py_NewRef(Py_None) : scalar_object(&e);
		if (v == NULL) {
			Py_CLEAR(list);
			break;
		}
		PyList_SET_ITEM(list, i, v);
	}
	return list;
}

/*
 * Keeps a text, bytes or array field of row `row` for later: the field
 * and a copy of its bytes in the arena (the event's bytes are gone after
 * the next event). -1 without memory.
 */
static int keep_pending(wpy_fields *f, wpy_fcol *c, size_t row, const weft_field *x)
{
	const void *src = x->is_array ? (const void *)x->raw : (const void *)x->v.s.ptr;
	size_t n = x->is_array ? x->raw_size : x->v.s.len;
	if (f->arena_used + n > f->arena_cap) {
		size_t cap = f->arena_cap ? f->arena_cap : 4096;
		while (cap < f->arena_used + n)
			cap *= 2;
		if (grow((void **)&f->arena, &f->arena_cap, cap, 1) < 0)
			return -1;
	}
	if (n > 0)
		memcpy(f->arena + f->arena_used, src, n);
	c->pend[row].field = *x;
	c->pend[row].off = f->arena_used;
	f->arena_used += n;
	c->tag[row] = FV_OBJ;
	return 0;
}

/* Stores one field's value in row `row` of column c (no GIL): -1 without memory. */
static int store_value(wpy_fields *f, wpy_fcol *c, size_t row, const weft_field *x)
{
	if (x->is_array || x->type == WEFT_TYPE_STR || x->type == WEFT_TYPE_BYTES)
		return keep_pending(f, c, row, x);
	switch (x->type) {
	case WEFT_TYPE_I8: case WEFT_TYPE_I16: case WEFT_TYPE_I32: case WEFT_TYPE_I64:
		c->tag[row] = FV_I;
		c->val[row].i = x->v.i;
		break;
	case WEFT_TYPE_F32: case WEFT_TYPE_F64:
		c->tag[row] = FV_F;
		c->val[row].f = x->v.f;
		break;
	case WEFT_TYPE_BOOL:
		c->tag[row] = FV_B;
		c->val[row].u = x->v.u != 0;
		break;
	default:
		c->tag[row] = FV_U;
		c->val[row].u = x->v.u;
		break;
	}
	return 0;
}

/* Makes room for n decoded fields; -1 without memory. */
static int grow_buf(wpy_fields *f, size_t n)
{
	return grow((void **)&f->buf, &f->buf_cap, n, sizeof *f->buf);
}

int wpy_fields_store(wpy_fields *f, const weft_trace *trace, const weft_event *ev, size_t row)
{
	if (f->buf_cap == 0 && grow_buf(f, 32) < 0)
		return -1;
	int n = weft_event_fields(trace, ev, f->buf, f->buf_cap);
	if (n > 0 && (size_t)n > f->buf_cap) {
		if (grow_buf(f, (size_t)n) < 0)
			return -1;
		n = weft_event_fields(trace, ev, f->buf, f->buf_cap);
	}
	/* n <= 0: no layout known, or a payload that does not match it: no fields. */
	for (int i = 0; i < n && (size_t)i < f->buf_cap; i++) {
		const weft_field *x = &f->buf[i];
		Py_ssize_t k = find_column(f, x->name, x->name_len);
		if (k == -1)
			return -1;
		if (k >= 0 && store_value(f, &f->cols[k], row, x) < 0)
			return -1;
	}
	return 0;
}

/* The Python object of an FV_OBJ row, from the field kept in the arena. */
static PyObject *pending_object(const wpy_fields *f, const wpy_fcol *c, size_t r)
{
	weft_field x = c->pend[r].field;
	const char *bytes = f->arena + c->pend[r].off;
	x.name = c->cname;
	x.name_len = (uint32_t)c->cname_len;
	if (x.is_array) {
		x.raw = (const uint8_t *)bytes;
		return array_object(&x);
	}
	x.v.s.ptr = bytes;
	return scalar_object(&x);
}

/* What a column's n rows hold (any of each FV_*) and the largest unsigned value. */
static void survey(const wpy_fcol *c, size_t n, int seen[FV_OBJ + 1], uint64_t *max_u)
{
	memset(seen, 0, (FV_OBJ + 1) * sizeof seen[0]);
	*max_u = 0;
	for (size_t r = 0; r < n; r++) {
		seen[c->tag[r]] = 1;
		if (c->tag[r] == FV_U && c->val[r].u > *max_u)
			*max_u = c->val[r].u;
	}
}

/* Row r as a Python object (None when missing). */
static PyObject *row_object(const wpy_fields *f, wpy_fcol *c, size_t r)
{
	switch (c->tag[r]) {
	case FV_U: return PyLong_FromUnsignedLongLong(c->val[r].u);
	case FV_I: return PyLong_FromLongLong(c->val[r].i);
	case FV_F: return PyFloat_FromDouble(c->val[r].f);
	case FV_B: return PyBool_FromLong((long)c->val[r].u);
	case FV_OBJ: return pending_object(f, c, r);
	default: Py_RETURN_NONE;
	}
}

/* The column as an object array. */
static PyObject *object_column(const wpy_fields *f, wpy_fcol *c, size_t n)
{
	npy_intp dims[1] = {(npy_intp)n};
	PyObject *a = PyArray_SimpleNew(1, dims, NPY_OBJECT);
	if (a == NULL)
		return NULL;
	PyObject **data = PyArray_DATA((PyArrayObject *)a);
	for (size_t r = 0; r < n; r++) {
		PyObject *v = row_object(f, c, r);
		if (v == NULL) {
			Py_DECREF(a);
			return NULL;
		}
		Py_XSETREF(data[r], v);
	}
	return a;
}

/* The column as a numeric array of `type` (missing rows: 0, or NaN for floats). */
static PyObject *numeric_column(const wpy_fcol *c, size_t n, int type)
{
	npy_intp dims[1] = {(npy_intp)n};
	PyObject *a = PyArray_SimpleNew(1, dims, type);
	if (a == NULL)
		return NULL;
	void *data = PyArray_DATA((PyArrayObject *)a);
	for (size_t r = 0; r < n; r++) {
		const wpy_value *v = &c->val[r];
		int t = c->tag[r];
		if (type == NPY_FLOAT64)
			((double *)data)[r] = t == FV_F ? v->f : t == FV_I ? (double)v->i
					      : t == FV_MISSING ? NAN : (double)v->u;
		else if (type == NPY_BOOL)
			((npy_bool *)data)[r] = t == FV_B && v->u != 0;
		else
			((uint64_t *)data)[r] = t == FV_MISSING ? 0 : v->u; /* int64 or uint64 bits */
	}
	return a;
}

/* The mask of the missing rows, or None when no row is missing. */
static PyObject *missing_mask(const wpy_fcol *c, size_t n, int any_missing)
{
	if (!any_missing)
		Py_RETURN_NONE;
	npy_intp dims[1] = {(npy_intp)n};
	PyObject *m = PyArray_SimpleNew(1, dims, NPY_BOOL);
	if (m == NULL)
		return NULL;
	npy_bool *data = PyArray_DATA((PyArrayObject *)m);
	for (size_t r = 0; r < n; r++)
		data[r] = c->tag[r] == FV_MISSING;
	return m;
}

/* One column as (values, mask or None); None when no row has the field. */
static PyObject *column_value(const wpy_fields *f, wpy_fcol *c, size_t n)
{
	int seen[FV_OBJ + 1];
	uint64_t max_u;
	survey(c, n, seen, &max_u);
	if (!(seen[FV_U] || seen[FV_I] || seen[FV_F] || seen[FV_B] || seen[FV_OBJ]))
		Py_RETURN_NONE;
	int ints = seen[FV_U] || seen[FV_I];
	PyObject *values;
	int masked = seen[FV_MISSING];
	if (seen[FV_OBJ] || (seen[FV_B] && (ints || seen[FV_F])) ||
	    (seen[FV_U] && seen[FV_I] && max_u > (uint64_t)INT64_MAX) ||
	    (seen[FV_F] && max_u > ((uint64_t)1 << 53))) {
		values = object_column(f, c, n);
		masked = 0;
	} else if (seen[FV_F]) {
		values = numeric_column(c, n, NPY_FLOAT64);
		masked = 0;
	} else if (seen[FV_B]) {
		values = numeric_column(c, n, NPY_BOOL);
	} else {
		values = numeric_column(c, n, seen[FV_I] ? NPY_INT64 : NPY_UINT64);
	}
	if (values == NULL)
		return NULL;
	PyObject *mask = missing_mask(c, n, masked);
	if (mask == NULL) {
		Py_DECREF(values);
		return NULL;
	}
	return Py_BuildValue("(NN)", values, mask);
}

PyObject *wpy_fields_take(wpy_fields *f, size_t n)
{
	PyObject *d = PyDict_New();
	for (size_t k = 0; d != NULL && k < f->count; k++) {
		wpy_fcol *c = &f->cols[k];
		if (c->name == NULL) {
			c->name = PyUnicode_DecodeUTF8(c->cname, (Py_ssize_t)c->cname_len, "replace");
			if (c->name == NULL) {
				Py_CLEAR(d);
				break;
			}
		}
		PyObject *v = column_value(f, c, n);
		if (v == NULL || PyDict_SetItem(d, f->cols[k].name, v) < 0)
			Py_CLEAR(d);
		Py_XDECREF(v);
	}
	return d;
}

void wpy_fields_free(wpy_fields *f)
{
	for (size_t k = 0; k < f->count; k++) {
		drop_rows(&f->cols[k]);
		free(f->cols[k].cname);
		Py_CLEAR(f->cols[k].name);
	}
	free(f->cols);
	free(f->buf);
	free(f->arena);
	memset(f, 0, sizeof *f);
}
