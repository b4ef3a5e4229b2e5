/* SPDX-License-Identifier: MIT */
/*
 * python/src/analysis.c - Trace._spans() and Trace._profile(): the
 * library's span iterator (weft/span.h) and profiles (weft/profile.h) for
 * Trace.spans() and Trace.profile(), which make DataFrames of them (of the
 * format's spans, or of the emulated channels of an ovni trace). The
 * spans are read without the GIL into C rows, then copied into numpy
 * columns; their names and timelines become indexes into two lists.
 */
#include "weftpy.h"

#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#define PY_ARRAY_UNIQUE_SYMBOL weftpy_ARRAY_API
#define NO_IMPORT_ARRAY
#include <numpy/arrayobject.h>

#include <stdlib.h>
#include <string.h>

/* ---- Stable strings to indexes ----------------------------------------------------- */

/*
 * The span iterator's names and timelines are stable pointers (one copy
 * of each text): a table keyed by the pointer gives each its index in the
 * order of first meeting, without hashing the text.
 */
typedef struct ptr_index {
	const char **keys;     /* by slot; NULL = empty */
	uint32_t *values;
	size_t mask;
	const char **order;    /* by index */
	size_t count, cap;
} ptr_index;

static int ptr_index_init(ptr_index *t)
{
	memset(t, 0, sizeof *t);
	t->mask = 255;
	t->keys = calloc(t->mask + 1, sizeof *t->keys);
	t->values = calloc(t->mask + 1, sizeof *t->values);
	return t->keys != NULL && t->values != NULL ? 0 : -1;
}

static void ptr_index_free(ptr_index *t)
{
	free(t->keys);
	free(t->values);
	free(t->order);
}

/* The slot of `key`: where it is, or the empty one where it goes. */
static size_t ptr_slot(const ptr_index *t, const char *key)
{
	size_t h = ((uintptr_t)key >> 3) * 0x9E3779B97F4A7C15ull;
	size_t s = h & t->mask;
	while (t->keys[s] != NULL && t->keys[s] != key)
		s = (s + 1) & t->mask;
	return s;
}

/* Doubles the table; -1 without memory. */
static int ptr_index_grow(ptr_index *t)
{
	ptr_index bigger = *t;
	bigger.mask = t->mask * 2 + 1;
	bigger.keys = calloc(bigger.mask + 1, sizeof *bigger.keys);
	bigger.values = calloc(bigger.mask + 1, sizeof *bigger.values);
	if (bigger.keys == NULL || bigger.values == NULL) {
		free(bigger.keys);
		free(bigger.values);
		return -1;
	}
	for (size_t s = 0; s <= t->mask; s++)
		if (t->keys[s] != NULL) {
			size_t to = ptr_slot(&bigger, t->keys[s]);
			bigger.keys[to] = t->keys[s];
			bigger.values[to] = t->values[s];
		}
	free(t->keys);
	free(t->values);
	*t = bigger;
	return 0;
}

/* The index of `key` (NULL: -1), added when new; -2 without memory. */
static int64_t ptr_index_of(ptr_index *t, const char *key)
{
	if (key == NULL)
		return -1;
	size_t s = ptr_slot(t, key);
	if (t->keys[s] == key)
		return t->values[s];
	if ((t->count + 1) * 2 > t->mask && ptr_index_grow(t) < 0)
		return -2;
	if (wpy_grow((void **)&t->order, &t->cap, t->count + 1, sizeof *t->order, 64) < 0)
		return -2;
	s = ptr_slot(t, key);
	t->keys[s] = key;
	t->values[s] = (uint32_t)t->count;
	t->order[t->count] = key;
	return (int64_t)t->count++;
}

/* The texts of the index as a Python list of str. */
static PyObject *ptr_index_list(const ptr_index *t)
{
	return wpy_str_list(t->order, t->count);
}

/* ---- Spans ---------------------------------------------------------------------------- */

/* One span, as the rows keep it until the columns are made. */
typedef struct span_row {
	uint64_t id, parent, start, end, exclusive;
	uint32_t stream, depth, flags;
	int32_t name, timeline, category;
} span_row;

typedef struct span_rows {
	span_row *rows;
	size_t count, cap;
	ptr_index names, timelines, categories;
} span_rows;

/* Reads every span of `it` into `r` (no GIL): 0, a WEFT_E* code, or -2 without memory. */
static int read_spans(weft_span_iter *it, span_rows *r)
{
	const weft_span *s;
	int rc;

	while ((rc = weft_span_iter_next(it, &s)) == 1) {
		if (wpy_grow((void **)&r->rows, &r->cap, r->count + 1, sizeof *r->rows, 4096) < 0)
			return -2;
		int64_t name = ptr_index_of(&r->names, s->name);
		int64_t timeline = ptr_index_of(&r->timelines, s->timeline);
		int64_t category = ptr_index_of(&r->categories, s->category);
		if (name == -2 || timeline == -2 || category == -2)
			return -2;
		r->rows[r->count++] = (span_row){
			s->id, s->parent, s->start, s->end, s->exclusive,
			s->stream, s->depth, s->flags, (int32_t)name, (int32_t)timeline,
			(int32_t)category
		};
	}
	return rc;
}

PyObject *wpy_rows_column(const void *rows, size_t count, size_t stride, size_t offset,
			  int type, size_t size)
{
	npy_intp dims[1] = {(npy_intp)count};
	PyObject *a = PyArray_SimpleNew(1, dims, type);
	if (a == NULL)
		return NULL;
	char *out = PyArray_DATA((PyArrayObject *)a);
	for (size_t i = 0; i < count; i++)
		memcpy(out + i * size, (const char *)rows + i * stride + offset, size);
	return a;
}

/* The columns of the spans, with the name, timeline and category lists, as a dict. */
static PyObject *spans_dict(const span_rows *r)
{
	static const struct { const char *name; size_t offset; int type; size_t size; } cols[] = {
		{"id", offsetof(span_row, id), NPY_UINT64, 8},
		{"parent", offsetof(span_row, parent), NPY_UINT64, 8},
		{"start", offsetof(span_row, start), NPY_UINT64, 8},
		{"end", offsetof(span_row, end), NPY_UINT64, 8},
		{"exclusive", offsetof(span_row, exclusive), NPY_UINT64, 8},
		{"stream", offsetof(span_row, stream), NPY_UINT32, 4},
		{"depth", offsetof(span_row, depth), NPY_UINT32, 4},
		{"flags", offsetof(span_row, flags), NPY_UINT32, 4},
		{"name", offsetof(span_row, name), NPY_INT32, 4},
		{"timeline", offsetof(span_row, timeline), NPY_INT32, 4},
		{"category", offsetof(span_row, category), NPY_INT32, 4},
	};
	PyObject *d = PyDict_New();
	if (d == NULL)
		return NULL;
	for (size_t k = 0; k < sizeof cols / sizeof cols[0]; k++) {
		PyObject *a = wpy_rows_column(r->rows, r->count, sizeof *r->rows, cols[k].offset,
					       cols[k].type, cols[k].size);
		if (a == NULL || PyDict_SetItemString(d, cols[k].name, a) < 0) {
			Py_XDECREF(a);
			Py_DECREF(d);
			return NULL;
		}
		Py_DECREF(a);
	}
	PyObject *names = ptr_index_list(&r->names), *timelines = ptr_index_list(&r->timelines);
	PyObject *categories = ptr_index_list(&r->categories);
	int bad = names == NULL || timelines == NULL || categories == NULL ||
		  PyDict_SetItemString(d, "names", names) < 0 ||
		  PyDict_SetItemString(d, "timelines", timelines) < 0 ||
		  PyDict_SetItemString(d, "categories", categories) < 0;
	Py_XDECREF(names);
	Py_XDECREF(timelines);
	Py_XDECREF(categories);
	if (bad) {
		Py_DECREF(d);
		return NULL;
	}
	return d;
}

/* The filter of the keyword arguments shared by _spans and _profile. */
static int parse_filter(const char *streams, PyObject *start, PyObject *end, const char *codes,
			weft_filter *f)
{
	memset(f, 0, sizeof *f);
	if (wpy_parse_time(start, &f->from, "start") < 0 || wpy_parse_time(end, &f->to, "end") < 0)
		return -1;
	if (f->to != 0 && f->to < f->from) {
		PyErr_SetString(PyExc_ValueError, "end is before start");
		return -1;
	}
	f->stream_pattern = streams;
	f->code_pattern = codes;
	return 0;
}

PyObject *wpy_trace_spans(wpy_trace *self, PyObject *args, PyObject *kwargs)
{
	static char *kwlist[] = {"streams", "start", "end", "codes", "instants", "emulate",
				 "all_models", "channels", NULL};
	const char *streams = NULL, *codes = NULL, *channels = NULL;
	PyObject *start = NULL, *end = NULL;
	int instants = 0, emulate = 0, all_models = 0;
	weft_span_options o;

	if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|zOOzpppz", kwlist, &streams, &start, &end,
					 &codes, &instants, &emulate, &all_models, &channels) ||
	    wpy_trace_check(self) < 0)
		return NULL;
	weft_span_options_init(&o);
	o.with_instants = instants;
	o.emulate = emulate;
	o.all_models = all_models;
	o.channels = channels;
	if (parse_filter(streams, start, end, codes, &o.filter) < 0)
		return NULL;
	span_rows r;
	memset(&r, 0, sizeof r);
	if (ptr_index_init(&r.names) < 0 || ptr_index_init(&r.timelines) < 0 ||
	    ptr_index_init(&r.categories) < 0) {
		ptr_index_free(&r.names);
		ptr_index_free(&r.timelines);
		ptr_index_free(&r.categories);
		return PyErr_NoMemory();
	}
	weft_span_iter *it = NULL;
	int rc;
	self->busy = 1;
	Py_BEGIN_ALLOW_THREADS
	rc = weft_span_iter_create(self->trace, &o, &it);
	if (rc == 0)
		rc = read_spans(it, &r);
	Py_END_ALLOW_THREADS
	self->busy = 0;
	/* the names live as long as the iterator: the lists are made first */
	PyObject *result = rc == 0 ? spans_dict(&r) : rc == -2 ? PyErr_NoMemory() : wpy_raise(rc);
	weft_span_iter_free(it);
	free(r.rows);
	ptr_index_free(&r.names);
	ptr_index_free(&r.timelines);
	ptr_index_free(&r.categories);
	return wpy_progress_finish(self, result);
}

/* ---- Profiles --------------------------------------------------------------------------- */

/* A str of UTF-8 text (bad bytes replaced), or None for NULL. */
static PyObject *text_or_none(const char *s)
{
	return s == NULL ? Py_NewRef(Py_None)
			 : PyUnicode_DecodeUTF8(s, (Py_ssize_t)strlen(s), "replace");
}

/* One profile row as a tuple (name, stream or None, calls, instants, inclusive, exclusive,
 * min, max, mean, timeline or None). */
static PyObject *profile_row(const weft_profile_row *row)
{
	PyObject *stream = row->stream < 0 ? Py_NewRef(Py_None) : PyLong_FromLongLong(row->stream);
	if (stream == NULL)
		return NULL;
	return Py_BuildValue("(NNKKKKKKdN)", text_or_none(row->name),
			     stream, (unsigned long long)row->calls,
			     (unsigned long long)row->instants, (unsigned long long)row->inclusive,
			     (unsigned long long)row->exclusive, (unsigned long long)row->min,
			     (unsigned long long)row->max, row->mean, text_or_none(row->timeline));
}

/* "name"/"stream" and "auto"/"spans"/"durations"/"headers" as the library's values. */
static int parse_profile_choice(const char *by, const char *source, weft_profile_options *o)
{
	static const char *const sources[] = {"auto", "spans", "durations", "headers"};
	if (by == NULL || strcmp(by, "name") == 0 || strcmp(by, "region") == 0)
		o->by = WEFT_PROFILE_BY_NAME;
	else if (strcmp(by, "stream") == 0)
		o->by = WEFT_PROFILE_BY_STREAM;
	else {
		PyErr_Format(PyExc_ValueError, "by must be \"name\" or \"stream\", not \"%s\"", by);
		return -1;
	}
	if (source != NULL && strcmp(source, "replay") == 0)
		source = "spans"; /* the name weft_profile_source_name() gives it */
	for (int i = 0; source != NULL && i < 4; i++)
		if (strcmp(source, sources[i]) == 0) {
			o->source = (weft_profile_source)i;
			return 0;
		}
	if (source == NULL)
		return 0;
	PyErr_Format(PyExc_ValueError, "source must be \"auto\", \"spans\" (or \"replay\"), "
		     "\"durations\" or \"headers\", not \"%s\"", source);
	return -1;
}

PyObject *wpy_trace_profile(wpy_trace *self, PyObject *args, PyObject *kwargs)
{
	static char *kwlist[] = {"by", "streams", "start", "end", "codes", "source", "emulate",
				 "all_models", "channels", NULL};
	const char *by = NULL, *streams = NULL, *codes = NULL, *source = NULL, *channels = NULL;
	PyObject *start = NULL, *end = NULL;
	int emulate = 0, all_models = 0;
	weft_profile_options o;
	weft_profile *p = NULL;
	int rc;

	if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|zzOOzzppz", kwlist, &by, &streams, &start,
					 &end, &codes, &source, &emulate, &all_models, &channels) ||
	    wpy_trace_check(self) < 0)
		return NULL;
	weft_profile_options_init(&o);
	o.emulate = emulate;
	o.all_models = all_models;
	o.channels = channels;
	if (parse_profile_choice(by, source, &o) < 0 ||
	    parse_filter(streams, start, end, codes, &o.filter) < 0)
		return NULL;
	self->busy = 1;
	Py_BEGIN_ALLOW_THREADS
	rc = weft_profile_compute(self->trace, &o, &p);
	Py_END_ALLOW_THREADS
	self->busy = 0;
	if (rc < 0)
		return wpy_progress_finish(self, wpy_raise(rc));
	size_t n = weft_profile_row_count(p);
	PyObject *rows = PyList_New((Py_ssize_t)n);
	for (size_t i = 0; rows != NULL && i < n; i++) {
		PyObject *row = profile_row(weft_profile_row_get(p, i));
		if (row == NULL) {
			Py_CLEAR(rows);
			break;
		}
		PyList_SET_ITEM(rows, (Py_ssize_t)i, row);
	}
	PyObject *result = rows == NULL ? NULL :
		Py_BuildValue("(Ns)", rows, weft_profile_source_name(weft_profile_source_used(p)));
	weft_profile_free(p);
	return wpy_progress_finish(self, result);
}
