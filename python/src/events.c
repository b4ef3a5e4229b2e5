/* SPDX-License-Identifier: MIT */
/*
 * python/src/events.c - the iterator of event batches: a cursor of the
 * library read into numpy columns (time, end, stream, code, offset,
 * depth, parent), batch_size events at a time. The loop that fills the
 * columns runs without the GIL and creates no Python object per event;
 * memory is the batch's columns. With fields, the typed fields of each
 * event (weft_event_fields) go into columns of their own, one per name,
 * also without the GIL (fields.c).
 */
#include "columns.h"
#include "fields.h"

#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

struct wpy_events {
	PyObject_HEAD
	wpy_trace *owner;       /* strong reference */
	weft_cursor *cursor;    /* NULL once ended or detached */
	wpy_events *prev, *next; /* in owner->iters */
	Py_ssize_t batch;
	int done;
	char *stream_pattern, *code_pattern; /* the filter's (the cursor reads them) */
	wpy_fields fields;
	/* order="stream": the selected streams, read one after another with a
	 * cursor each (no merge: the fastest way through a trace of one file
	 * per stream); NULL for a merged cursor. */
	uint32_t *streams;
	uint32_t stream_count, next_stream;
	weft_filter filter;
	struct wpy_par *par;    /* order="stream" with threads: the readers (parallel.c) */
};

/* Links the iterator into its trace's list. */
static void link_iter(wpy_events *it)
{
	wpy_trace *t = it->owner;
	it->prev = NULL;
	it->next = t->iters;
	if (t->iters != NULL)
		t->iters->prev = it;
	t->iters = it;
}

/* Ends the iterator: frees its cursor and leaves its trace's list. */
static void end_iter(wpy_events *it)
{
	it->done = 1;
	wpy_par_free(it->par);
	it->par = NULL;
	if (it->cursor != NULL) {
		weft_cursor_free(it->cursor);
		it->cursor = NULL;
	}
	if (it->owner == NULL)
		return;
	if (it->prev != NULL)
		it->prev->next = it->next;
	else if (it->owner->iters == it)
		it->owner->iters = it->next;
	if (it->next != NULL)
		it->next->prev = it->prev;
	it->prev = it->next = NULL;
}

/*
 * The trace closes: every live iterator's cursor goes first. The
 * iterators stay unfinished, so that their next call says the trace is
 * closed (then they end).
 */
void wpy_events_detach_all(wpy_trace *self)
{
	while (self->iters != NULL) {
		wpy_events *it = self->iters;
		end_iter(it);
		it->done = 0;
	}
}

static void events_dealloc(wpy_events *it)
{
	end_iter(it);
	wpy_fields_free(&it->fields);
	free(it->streams);
	free(it->stream_pattern);
	free(it->code_pattern);
	Py_CLEAR(it->owner);
	Py_TYPE(it)->tp_free((PyObject *)it);
}

/* An optional time bound in ns: None or a non-negative int. */
int wpy_parse_time(PyObject *o, uint64_t *out, const char *what)
{
	*out = 0;
	if (o == NULL || o == Py_None)
		return 0;
	unsigned long long v = PyLong_AsUnsignedLongLong(o);
	if (v == (unsigned long long)-1 && PyErr_Occurred()) {
		PyErr_Format(PyExc_ValueError, "%s must be a time in ns (an int >= 0)", what);
		return -1;
	}
	*out = v;
	return 0;
}

/*
 * An order name (None, "time", "stored", "natural") as a weft_order;
 * "stream" sets *per_stream (each stream in turn, in the trace's order).
 */
static int parse_order(const char *name, int *order, int *per_stream)
{
	static const char *names[] = {"default", "time", "stored", "natural"};
	*order = WEFT_ORDER_DEFAULT;
	*per_stream = 0;
	if (name == NULL)
		return 0;
	if (strcmp(name, "stream") == 0) {
		*per_stream = 1;
		return 0;
	}
	for (int i = 0; i < 4; i++)
		if (strcmp(name, names[i]) == 0) {
			*order = i;
			return 0;
		}
	PyErr_Format(PyExc_ValueError,
		     "order must be \"time\", \"stored\", \"natural\" or \"stream\", not \"%s\"", name);
	return -1;
}

/* The streams the pattern selects (fnmatch, as the library's filter), into it->streams. */
static int select_streams(wpy_events *it, weft_trace *trace)
{
	size_t n = weft_trace_stream_count(trace);
	it->streams = malloc((n ? n : 1) * sizeof *it->streams);
	if (it->streams == NULL) {
		PyErr_NoMemory();
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		const weft_stream_info *s = weft_trace_stream(trace, i);
		if (it->stream_pattern == NULL || fnmatch(it->stream_pattern, s->path, 0) == 0)
			it->streams[it->stream_count++] = (uint32_t)i;
	}
	return 0;
}

/*
 * order="stream": the current stream's cursor ended; opens the next
 * selected stream's. 1 when one is open, 0 when none is left, or the
 * library's error.
 */
static int next_stream_cursor(wpy_events *it)
{
	if (it->streams == NULL || it->next_stream >= it->stream_count)
		return 0;
	weft_cursor_free(it->cursor);
	it->cursor = NULL;
	int rc = weft_cursor_create_stream_filtered(it->owner->trace, it->streams[it->next_stream++],
						    &it->filter, &it->cursor);
	return rc < 0 ? rc : 1;
}

/* The next event of the iterator, from the next stream when one ends (weft_cursor_next's codes). */
static inline int next_event(wpy_events *it, const weft_event **ev)
{
	int rc;
	while ((rc = weft_cursor_next(it->cursor, ev)) == 0 && (rc = next_stream_cursor(it)) == 1)
		;
	return rc;
}

/* A copy of an optional pattern: 0, or -1 without memory. */
static int copy_pattern(const char *s, char **out)
{
	*out = NULL;
	if (s == NULL)
		return 0;
	*out = strdup(s);
	if (*out == NULL) {
		PyErr_NoMemory();
		return -1;
	}
	return 0;
}

/* Trace._events(...): creates the cursor (without the GIL) and the iterator. */
PyObject *wpy_trace_events(wpy_trace *self, PyObject *args, PyObject *kwargs)
{
	static char *kwlist[] = {"streams", "start", "end", "codes", "order", "batch_size", "fields",
				 "threads", NULL};
	const char *streams = NULL, *codes = NULL, *order_name = NULL;
	PyObject *start = NULL, *end = NULL, *fields = NULL;
	Py_ssize_t batch = 65536;
	int threads = 1;

	if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|zOOzznOi", kwlist, &streams, &start, &end,
					 &codes, &order_name, &batch, &fields, &threads) ||
	    wpy_trace_check(self) < 0)
		return NULL;
	if (threads < 1 || threads > 256)
		return PyErr_Format(PyExc_ValueError, "threads must be between 1 and 256");
	weft_filter f;
	int per_stream;
	memset(&f, 0, sizeof f);
	if (wpy_parse_time(start, &f.from, "start") < 0 || wpy_parse_time(end, &f.to, "end") < 0 ||
	    parse_order(order_name, &f.order, &per_stream) < 0)
		return NULL;
	if (batch < 1 || batch > (Py_ssize_t)1 << 30)
		return PyErr_Format(PyExc_ValueError, "batch_size must be between 1 and 2**30");
	if (threads > 1 && (!per_stream || (fields != NULL && fields != Py_None && fields != Py_False)))
		return PyErr_Format(PyExc_ValueError,
				    "threads > 1 reads with order=\"stream\" and without fields");
	wpy_events *it = PyObject_New(wpy_events, &wpy_EventsType);
	if (it == NULL)
		return NULL;
	it->owner = (wpy_trace *)Py_NewRef(self);
	it->cursor = NULL;
	it->prev = it->next = NULL;
	it->batch = batch;
	it->done = 0;
	it->stream_pattern = it->code_pattern = NULL;
	it->streams = NULL;
	it->stream_count = it->next_stream = 0;
	it->par = NULL;
	memset(&it->fields, 0, sizeof it->fields);
	if (copy_pattern(streams, &it->stream_pattern) < 0 || copy_pattern(codes, &it->code_pattern) < 0 ||
	    wpy_fields_init(&it->fields, fields) < 0 ||
	    (per_stream && select_streams(it, self->trace) < 0)) {
		Py_DECREF(it);
		return NULL;
	}
	f.stream_pattern = it->stream_pattern;
	f.code_pattern = it->code_pattern;
	it->filter = f;
	if (per_stream && it->stream_count == 0) {
		it->done = 1; /* nothing selected: an iterator that ends at once */
		return (PyObject *)it;
	}
	if (threads > 1) {
		it->par = wpy_par_start(self, it->streams, it->stream_count, &it->filter,
					(size_t)batch, threads);
		if (it->par == NULL) {
			Py_DECREF(it);
			return NULL;
		}
		link_iter(it);
		return (PyObject *)it;
	}
	int rc;
	weft_cursor *c = NULL;
	self->busy = 1;
	Py_BEGIN_ALLOW_THREADS
	if (per_stream) {
		it->next_stream = 1;
		rc = weft_cursor_create_stream_filtered(self->trace, it->streams[0], &it->filter, &c);
	} else {
		rc = weft_cursor_create(self->trace, &f, &c);
	}
	Py_END_ALLOW_THREADS
	self->busy = 0;
	if (rc < 0) {
		Py_DECREF(it);
		return wpy_progress_finish(self, wpy_raise(rc));
	}
	it->cursor = c;
	link_iter(it);
	return wpy_progress_finish(self, (PyObject *)it);
}

/*
 * Reads up to `cap` events into the columns, without the GIL: the count
 * read into *n; returns the cursor's last status (1: more may follow, 0:
 * the end, < 0: an error) or WEFT_ENOMEM when the code table could not grow.
 */
static int read_plain(wpy_events *it, const batch_out *o, size_t cap, size_t *n)
{
	wpy_codes *codes = &it->owner->codes;
	const weft_event *ev;
	size_t i = 0;
	int rc = 1;

	Py_BEGIN_ALLOW_THREADS
	while (i < cap && (rc = next_event(it, &ev)) == 1) {
		if (store_event(codes, o, i, ev) < 0) {
			rc = WEFT_ENOMEM;
			break;
		}
		i++;
	}
	Py_END_ALLOW_THREADS
	*n = i;
	return rc;
}

/*
 * The same with the typed fields of each event into the field columns,
 * also without the GIL (texts, bytes and arrays are copied, made Python
 * objects when the batch is taken).
 */
static int read_with_fields(wpy_events *it, const batch_out *o, size_t cap, size_t *n)
{
	const weft_event *ev;
	size_t i = 0;
	int rc = 1;

	Py_BEGIN_ALLOW_THREADS
	while (i < cap && (rc = next_event(it, &ev)) == 1) {
		if (store_event(&it->owner->codes, o, i, ev) < 0 ||
		    wpy_fields_store(&it->fields, it->owner->trace, ev, i) < 0) {
			rc = WEFT_ENOMEM;
			break;
		}
		i++;
	}
	Py_END_ALLOW_THREADS
	*n = i;
	return rc;
}

/* Creates the columns of a batch of `cap` rows into arrays[] and o. */
static int new_columns(PyObject **arrays, batch_out *o, size_t cap)
{
	npy_intp dims[1] = {(npy_intp)cap};
	for (int k = 0; k < COL_COUNT; k++) {
		arrays[k] = PyArray_SimpleNew(1, dims, columns[k].type);
		if (arrays[k] == NULL)
			return -1;
	}
	o->time = PyArray_DATA((PyArrayObject *)arrays[COL_TIME]);
	o->end = PyArray_DATA((PyArrayObject *)arrays[COL_END]);
	o->stream = PyArray_DATA((PyArrayObject *)arrays[COL_STREAM]);
	o->code = PyArray_DATA((PyArrayObject *)arrays[COL_CODE]);
	o->offset = PyArray_DATA((PyArrayObject *)arrays[COL_OFFSET]);
	o->depth = PyArray_DATA((PyArrayObject *)arrays[COL_DEPTH]);
	o->parent = PyArray_DATA((PyArrayObject *)arrays[COL_PARENT]);
	return 0;
}

/* The batch as a dict of its n first rows (the arrays shrink in place). */
static PyObject *batch_dict(wpy_events *it, PyObject **arrays, size_t n)
{
	PyObject *d = PyDict_New();
	if (d == NULL)
		return NULL;
	npy_intp dims[1] = {(npy_intp)n};
	PyArray_Dims shape = {dims, 1};
	for (int k = 0; k < COL_COUNT; k++) {
		if ((npy_intp)n != PyArray_DIM((PyArrayObject *)arrays[k], 0)) {
			PyObject *r = PyArray_Resize((PyArrayObject *)arrays[k], &shape, 0, NPY_CORDER);
			if (r == NULL)
				goto fail;
			Py_DECREF(r);
		}
		if (PyDict_SetItemString(d, columns[k].name, arrays[k]) < 0)
			goto fail;
	}
	if (it->fields.active) {
		PyObject *f = wpy_fields_take(&it->fields, n);
		if (f == NULL || PyDict_SetItemString(d, "fields", f) < 0) {
			Py_XDECREF(f);
			goto fail;
		}
		Py_DECREF(f);
	}
	return d;
fail:
	Py_DECREF(d);
	return NULL;
}

/* The next batch, or NULL (StopIteration) at the end. */
static PyObject *events_next(wpy_events *it)
{
	if (it->done)
		return NULL;
	if (it->par != NULL && it->owner->trace != NULL) {
		/* busy while it waits without the GIL: a close() from another
		 * thread would free the readers under it */
		if (wpy_trace_check(it->owner) < 0)
			return NULL;
		it->owner->busy = 1;
		PyObject *batch = wpy_par_next(it->par, it->owner);
		it->owner->busy = 0;
		if (batch == NULL)
			end_iter(it);
		return batch;
	}
	if (it->owner->trace == NULL || it->cursor == NULL) {
		end_iter(it);
		PyErr_SetString(PyExc_ValueError, "the trace is closed");
		return NULL;
	}
	if (wpy_trace_check(it->owner) < 0)
		return NULL;
	PyObject *arrays[COL_COUNT] = {NULL};
	PyObject *result = NULL;
	batch_out o;
	size_t n = 0;
	int rc = WEFT_ENOMEM;
	if (new_columns(arrays, &o, (size_t)it->batch) < 0 ||
	    (it->fields.active && wpy_fields_begin(&it->fields, (size_t)it->batch) < 0))
		goto out;
	it->owner->busy = 1;
	rc = it->fields.active ? read_with_fields(it, &o, (size_t)it->batch, &n)
			       : read_plain(it, &o, (size_t)it->batch, &n);
	it->owner->busy = 0;
	if (wpy_trace_publish_codes(it->owner) < 0)
		goto out;
	if (rc < 0) {
		end_iter(it);
		wpy_raise(rc);
		goto out;
	}
	if (rc == 0)
		end_iter(it);
	if (n > 0)
		result = batch_dict(it, arrays, n);
out:
	for (int k = 0; k < COL_COUNT; k++)
		Py_XDECREF(arrays[k]);
	return wpy_progress_finish(it->owner, result);
}

/* ---- The whole selection at once (to_pandas) ------------------------------------------- */

/*
 * Columns that grow by doubling with realloc(): for large arrays glibc
 * moves pages (mremap) rather than bytes, so reading everything costs no
 * copy, where joining batches with numpy.concatenate copied every column
 * once (a third of to_pandas()'s time on 12 M events).
 */
typedef struct all_columns {
	void *col[COL_COUNT];
	size_t cap;
} all_columns;

static int all_grow(all_columns *a, size_t need)
{
	if (need <= a->cap)
		return 0;
	size_t cap = a->cap ? a->cap : (size_t)1 << 16;
	while (cap < need)
		cap *= 2;
	for (int k = 0; k < COL_COUNT; k++) {
		void *p = realloc(a->col[k], cap * columns[k].size);
		if (p == NULL)
			return -1;
		a->col[k] = p;
	}
	a->cap = cap;
	return 0;
}

static void all_free(all_columns *a)
{
	for (int k = 0; k < COL_COUNT; k++)
		free(a->col[k]);
	memset(a, 0, sizeof *a);
}

static void free_column(PyObject *capsule)
{
	free(PyCapsule_GetPointer(capsule, "weft.column"));
}

PyObject *wpy_column_take(void **buffer, int k, size_t n)
{
	npy_intp dims[1] = {(npy_intp)n};
	void *data = *buffer;
	*buffer = NULL;
	if (n == 0) {
		free(data);
		return PyArray_SimpleNew(1, dims, columns[k].type);
	}
	void *fit = realloc(data, n * columns[k].size);
	if (fit != NULL)
		data = fit;
	PyObject *capsule = PyCapsule_New(data, "weft.column", free_column);
	if (capsule == NULL) {
		free(data);
		return NULL;
	}
	PyObject *arr = PyArray_SimpleNewFromData(1, dims, columns[k].type, data);
	if (arr == NULL || PyArray_SetBaseObject((PyArrayObject *)arr, capsule) < 0) {
		Py_XDECREF(arr);
		if (arr == NULL)
			Py_DECREF(capsule);
		return NULL;
	}
	return arr;
}

/*
 * EventBatches._read_all(): every remaining event in one dict of columns
 * (as a batch, any length), then the iterator ends. Not with fields.
 */
static PyObject *events_read_all(wpy_events *it, PyObject *unused)
{
	if (it->fields.active || it->par != NULL) {
		PyErr_SetString(PyExc_ValueError, "_read_all() reads no fields and no threads (use the batches)");
		return NULL;
	}
	if (!it->done && (it->owner->trace == NULL || it->cursor == NULL)) {
		end_iter(it);
		PyErr_SetString(PyExc_ValueError, "the trace is closed");
		return NULL;
	}
	if (!it->done && wpy_trace_check(it->owner) < 0)
		return NULL;
	all_columns a;
	memset(&a, 0, sizeof a);
	size_t n = 0;
	int rc = it->done ? 0 : 1;
	it->owner->busy = 1;
	while (rc == 1) {
		if (all_grow(&a, n + ((size_t)1 << 16)) < 0) {
			rc = WEFT_ENOMEM;
			break;
		}
		batch_out o = batch_out_at(a.col, n);
		size_t got = 0;
		rc = read_plain(it, &o, a.cap - n, &got);
		n += got;
	}
	it->owner->busy = 0;
	PyObject *result = NULL;
	if (wpy_trace_publish_codes(it->owner) < 0)
		goto out;
	end_iter(it);
	if (rc < 0) {
		wpy_raise(rc);
		goto out;
	}
	result = PyDict_New();
	for (int k = 0; result != NULL && k < COL_COUNT; k++) {
		PyObject *arr = wpy_column_take(&a.col[k], k, n);
		if (arr == NULL || PyDict_SetItemString(result, columns[k].name, arr) < 0)
			Py_CLEAR(result);
		Py_XDECREF(arr);
	}
out:
	all_free(&a);
	return wpy_progress_finish(it->owner, result);
}

static PyMethodDef events_methods[] = {
	{"_read_all", (PyCFunction)events_read_all, METH_NOARGS,
	 "_read_all() -> dict\n\nEvery remaining event as one batch of any length (no fields); "
	 "the iterator ends (Trace.to_pandas() without fields)."},
	{NULL, NULL, 0, NULL}
};

PyTypeObject wpy_EventsType = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "weft._weft.EventBatches",
	.tp_doc = PyDoc_STR("An iterator of event batches (dicts of numpy arrays); see weft.Trace.events()."),
	.tp_basicsize = sizeof(wpy_events),
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_dealloc = (destructor)events_dealloc,
	.tp_iter = PyObject_SelfIter,
	.tp_iternext = (iternextfunc)events_next,
	.tp_methods = events_methods,
};
