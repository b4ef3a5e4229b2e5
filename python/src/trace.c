/* SPDX-License-Identifier: MIT */
/*
 * python/src/trace.c - weft._weft.Trace: an open trace, what opening it
 * found (format, streams, hierarchy, diagnostics, event kinds) as Python
 * values, and closing it. The Python class weft.Trace derives from it and
 * turns the JSON metadata into dicts (python/weft/__init__.py).
 */
#include "weftpy.h"

#include <string.h>

/* -1 with ValueError when the trace is closed, RuntimeError while busy. */
int wpy_trace_check(wpy_trace *self)
{
	if (self->trace == NULL) {
		PyErr_SetString(PyExc_ValueError, "the trace is closed");
		return -1;
	}
	if (self->busy) {
		PyErr_SetString(PyExc_RuntimeError,
				"the trace is being read by another thread (open it once per thread)");
		return -1;
	}
	/* What a progress callback raised during a call that did not raise it
	 * (none should: see wpy_progress_finish) is not raised by a later one. */
	wpy_progress_drop(self);
	return 0;
}

/* Appends the codes met since the last call to the list trace.codes. */
int wpy_trace_publish_codes(wpy_trace *self)
{
	while (self->codes.published < self->codes.count) {
		const wpy_code *c = &self->codes.codes[self->codes.published];
		PyObject *s = PyUnicode_DecodeUTF8(c->bytes, c->len, "replace");
		if (s == NULL || PyList_Append(self->code_list, s) < 0) {
			Py_XDECREF(s);
			return -1;
		}
		Py_DECREF(s);
		self->codes.published++;
	}
	return 0;
}

/* Frees the library's trace (the cursors of live iterators first). */
static void trace_release(wpy_trace *self)
{
	if (self->trace == NULL)
		return;
	wpy_events_detach_all(self);
	weft_trace_free(self->trace);
	self->trace = NULL;
}

static void trace_dealloc(wpy_trace *self)
{
	PyObject_GC_UnTrack(self);
	if (self->weakrefs != NULL)
		PyObject_ClearWeakRefs((PyObject *)self);
	trace_release(self);
	wpy_codes_free(&self->codes);
	Py_CLEAR(self->code_list);
	Py_CLEAR(self->dict);
	wpy_progress_clear(self);
	free(self->open_path);
	Py_CLEAR(self->open_keep);
	Py_CLEAR(self->diag_log);
	Py_CLEAR(self->comm);
	Py_TYPE(self)->tp_free((PyObject *)self);
}

static int trace_traverse(wpy_trace *self, visitproc visit, void *arg)
{
	Py_VISIT(self->code_list);
	Py_VISIT(self->dict);
	Py_VISIT(self->progress_fn);
	Py_VISIT(self->comm);
	return 0;
}

static int trace_clear(wpy_trace *self)
{
	Py_CLEAR(self->dict);
	Py_CLEAR(self->progress_fn);
	wpy_progress_install(self, 0);
	return 0;
}

/*
 * Sets the format options of `pairs` (a sequence of (key, value) str
 * pairs, as the Python layer normalises them) on `o`. The strings are
 * kept alive by `keep` (a list) until the trace is opened.
 */
static int set_format_options(weft_open_options *o, PyObject *pairs, PyObject *keep)
{
	PyObject *seq = PySequence_Fast(pairs, "options must be a sequence of (key, value) pairs");
	if (seq == NULL)
		return -1;
	for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
		PyObject *pair = PySequence_Fast_GET_ITEM(seq, i);
		const char *key, *value;
		if (!PyArg_ParseTuple(pair, "ss", &key, &value) || PyList_Append(keep, pair) < 0) {
			Py_DECREF(seq);
			return -1;
		}
		int rc = weft_open_options_set(o, key, value);
		if (rc < 0) {
			Py_DECREF(seq);
			wpy_raise(rc);
			return -1;
		}
	}
	Py_DECREF(seq);
	return 0;
}

/* A progress interval in seconds (None: the library's 0.1 s) as ns into *out: -1 with an error. */
static int parse_interval(PyObject *o, int64_t *out)
{
	*out = 0;
	if (o == NULL || o == Py_None)
		return 0;
	double s = PyFloat_AsDouble(o);
	if (s == -1.0 && PyErr_Occurred())
		return -1;
	if (!(s >= 0 && s <= 86400.0)) {
		PyErr_SetString(wpy_ArgumentError, "progress_interval: seconds from 0 to 86400");
		return -1;
	}
	*out = (int64_t)(s * 1e9);
	if (*out == 0)
		*out = 1; /* 0 means "the default" to the library: as often as it looks */
	return 0;
}

/* A progress callable (None: none) into self->progress_fn: -1 with TypeError. */
static int set_progress_fn(wpy_trace *self, PyObject *fn)
{
	if (fn != NULL && fn != Py_None && !PyCallable_Check(fn)) {
		PyErr_SetString(PyExc_TypeError, "progress: a callable taking a weft.Progress, or None");
		return -1;
	}
	Py_XSETREF(self->progress_fn, fn == NULL || fn == Py_None ? NULL : Py_NewRef(fn));
	return 0;
}

/*
 * Trace(path, format=None, options=(), stored_order=False, threads=0,
 * read_budget_bytes=0, progress=None, progress_interval=None, comm=None)
 * (comm: dist.c): opens the
 * trace, without the GIL.
 */
static int trace_init(wpy_trace *self, PyObject *args, PyObject *kwargs)
{
	static char *kwlist[] = {"path", "format", "options", "stored_order", "threads",
				 "read_budget_bytes", "progress", "progress_interval", "comm",
				 NULL};
	PyObject *path = NULL, *options = NULL, *progress = NULL, *interval = NULL;
	PyObject *comm = NULL;
	const char *format = NULL;
	int stored_order = 0, threads = 0;
	unsigned long long budget = 0;

	if (self->trace != NULL || self->code_list != NULL) {
		PyErr_SetString(PyExc_RuntimeError, "Trace.__init__ called twice");
		return -1;
	}
	if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O&|zOpiKOOO", kwlist,
					 PyUnicode_FSConverter, &path, &format, &options,
					 &stored_order, &threads, &budget, &progress, &interval, &comm))
		return -1;
	if (parse_interval(interval, &self->progress_interval_ns) < 0 ||
	    set_progress_fn(self, progress) < 0) {
		Py_DECREF(path);
		return -1;
	}
	weft_open_options o;
	weft_open_options_init(&o);
	o.stored_order = stored_order;
	o.threads = threads;
	o.read_budget_bytes = budget;
	int rc = 0;
	PyObject *keep = PyList_New(0);
	if (keep == NULL)
		goto fail;
	if (format != NULL) {
		int f = weft_format_from_name(format);
		if (f < 0) {
			PyErr_Format(wpy_ArgumentError, "unknown format %s", format);
			goto fail;
		}
		o.format = (weft_format)f;
	}
	if (options != NULL && options != Py_None && set_format_options(&o, options, keep) < 0)
		goto fail;
	wpy_progress_open_options(self, &o, self->progress_interval_ns);
	if (wpy_dist_setup(self, comm, &o) < 0)
		goto fail;
	self->code_list = PyList_New(0);
	if (self->code_list == NULL)
		goto fail;
	const char *cpath = PyBytes_AS_STRING(path);
	weft_trace *t = NULL;
	Py_BEGIN_ALLOW_THREADS
	rc = weft_trace_open(cpath, &o, &t);
	Py_END_ALLOW_THREADS
	if (rc < 0) {
		wpy_raise(rc);
		wpy_progress_finish(self, NULL);
		goto fail;
	}
	self->trace = t;
	if (wpy_progress_finish(self, Py_NewRef(Py_None)) == NULL) {
		trace_release(self);
		goto fail;
	}
	Py_DECREF(Py_None);
	self->open_path = strdup(cpath);
	self->diag_log = PyList_New(0);
	if (self->open_path == NULL || self->diag_log == NULL) {
		PyErr_NoMemory();
		trace_release(self);
		goto fail;
	}
	self->open_options = o;
	self->open_options.format = weft_trace_format(t); /* no detection again */
	self->open_options.dist = NULL; /* the reader threads open it alone */
	self->open_keep = keep;
	Py_DECREF(path);
	return 0;
fail:
	Py_XDECREF(keep);
	Py_XDECREF(path);
	return -1;
}

PyDoc_STRVAR(close_doc, "close()\n\nCloses the trace: its files and memory are released, its "
	     "iterators end,\nand every later use raises ValueError. Closing twice is harmless.");

static PyObject *trace_close(wpy_trace *self, PyObject *unused)
{
	if (self->busy) {
		PyErr_SetString(PyExc_RuntimeError, "the trace is being read by another thread");
		return NULL;
	}
	trace_release(self);
	Py_RETURN_NONE;
}

/* A JSON object text as a str ("{}" for NULL). */
static PyObject *json_text(const char *s)
{
	return PyUnicode_DecodeUTF8(s ? s : "{}", (Py_ssize_t)strlen(s ? s : "{}"), "replace");
}

/* A C string as str, or None for NULL. */
static PyObject *str_or_none(const char *s)
{
	if (s == NULL)
		Py_RETURN_NONE;
	return PyUnicode_DecodeUTF8(s, (Py_ssize_t)strlen(s), "replace");
}

/* The list of item(ctx, i) for i in [start, count). */
PyObject *wpy_list_of(const void *ctx, size_t start, size_t count,
		      PyObject *(*item)(const void *ctx, size_t i))
{
	PyObject *list = PyList_New(0);
	for (size_t i = start; list != NULL && i < count; i++) {
		PyObject *x = item(ctx, i);
		if (x == NULL || PyList_Append(list, x) < 0)
			Py_CLEAR(list);
		Py_XDECREF(x);
	}
	return list;
}

/* Node i as a dict; metadata as its JSON text (the Python layer parses it). */
static PyObject *node_dict(const void *trace, size_t i)
{
	const weft_node *n = weft_trace_node(trace, i);
	return Py_BuildValue("{s:I,s:N,s:N,s:N,s:N,s:N,s:N,s:N}", "id", n->id, "parent",
			     n->parent == WEFT_NO_PARENT ? Py_NewRef(Py_None) : PyLong_FromUnsignedLong(n->parent),
			     "kind", str_or_none(n->kind), "name", str_or_none(n->name),
			     "path", str_or_none(n->path), "number",
			     n->number < 0 ? Py_NewRef(Py_None) : PyLong_FromLongLong(n->number),
			     "stream", n->stream < 0 ? Py_NewRef(Py_None) : PyLong_FromLong(n->stream),
			     "metadata", json_text(n->metadata_json));
}

PyDoc_STRVAR(nodes_doc, "_nodes() -> list of dict\n\nThe hierarchy, metadata as JSON text.");

static PyObject *trace_nodes(wpy_trace *self, PyObject *unused)
{
	if (wpy_trace_check(self) < 0)
		return NULL;
	return wpy_list_of(self->trace, 0, weft_trace_node_count(self->trace), node_dict);
}

/* Stream i as a dict, with its node's kind, name, number and metadata. */
static PyObject *stream_dict(const void *t, size_t i)
{
	const weft_stream_info *s = weft_trace_stream(t, i);
	const weft_node *n = weft_trace_node(t, s->node);
	return Py_BuildValue("{s:I,s:N,s:N,s:N,s:N,s:N,s:K,s:N,s:N,s:L,s:I,s:N}", "index", s->index,
			     "path", str_or_none(s->path), "kind", str_or_none(n ? n->kind : NULL),
			     "name", str_or_none(n ? n->name : NULL), "number",
			     n == NULL || n->number < 0 ? Py_NewRef(Py_None) : PyLong_FromLongLong(n->number),
			     "file", str_or_none(s->file), "file_size", (unsigned long long)s->file_size,
			     "finished", s->finished < 0 ? Py_NewRef(Py_None) : PyBool_FromLong(s->finished),
			     "big_endian", PyBool_FromLong(s->big_endian),
			     "clock_offset", (long long)s->clock_offset, "node", s->node,
			     "metadata", json_text(n ? n->metadata_json : NULL));
}

PyDoc_STRVAR(streams_doc, "_streams() -> list of dict\n\nThe streams, metadata as JSON text.");

static PyObject *trace_streams(wpy_trace *self, PyObject *unused)
{
	if (wpy_trace_check(self) < 0)
		return NULL;
	return wpy_list_of(self->trace, 0, weft_trace_stream_count(self->trace), stream_dict);
}

/* A diagnostic as (severity, severity name, file, offset, message, line). */
PyObject *wpy_diag_values(int severity, const char *file, uint64_t offset,
			  const char *message, const char *line)
{
	return Py_BuildValue("(isNNNN)", severity, weft_severity_name(severity), str_or_none(file),
			     offset == WEFT_NO_OFFSET ? Py_NewRef(Py_None)
						      : PyLong_FromUnsignedLongLong(offset),
			     str_or_none(message), str_or_none(line));
}

/* Diagnostic i of the library's trace as wpy_diag_values() makes it. */
static PyObject *diag_tuple(const void *t, size_t i)
{
	const weft_diag *d = weft_trace_diag(t, i);
	char *line = weft_diag_line(d, weft_trace_path(t));
	if (line == NULL)
		return PyErr_NoMemory();
	PyObject *tuple = wpy_diag_values(d->severity, d->file, d->offset, d->message, line);
	free(line);
	return tuple;
}

PyDoc_STRVAR(diagnostics_doc, "_diagnostics(start=0) -> list of tuple\n\n"
	     "The diagnostics from index `start` on: (severity, severity name, file,\n"
	     "offset, message, line).");

/* Appends the library's diagnostics recorded since the last call to diag_log. */
static int log_library_diags(wpy_trace *self)
{
	size_t total = weft_trace_diag_count(self->trace);
	for (; self->diags_logged < total; self->diags_logged++) {
		PyObject *d = diag_tuple(self->trace, self->diags_logged);
		if (d == NULL || PyList_Append(self->diag_log, d) < 0) {
			Py_XDECREF(d);
			return -1;
		}
		Py_DECREF(d);
	}
	return 0;
}

int wpy_trace_add_diag(wpy_trace *self, int severity, const char *file, uint64_t offset,
		       const char *message, const char *line)
{
	if (log_library_diags(self) < 0)
		return -1;
	PyObject *d = wpy_diag_values(severity, file, offset, message, line);
	int rc = d == NULL ? -1 : PyList_Append(self->diag_log, d);
	Py_XDECREF(d);
	return rc;
}

static PyObject *trace_diagnostics(wpy_trace *self, PyObject *args)
{
	Py_ssize_t start = 0;
	if (!PyArg_ParseTuple(args, "|n", &start) || wpy_trace_check(self) < 0 ||
	    log_library_diags(self) < 0)
		return NULL;
	Py_ssize_t n = PyList_GET_SIZE(self->diag_log);
	return PyList_GetSlice(self->diag_log, start < 0 ? 0 : start > n ? n : start, n);
}

/* Field i of an event kind as a dict. */
static PyObject *field_dict(const void *kind, size_t i)
{
	const weft_field_schema *f = &((const weft_event_schema *)kind)->fields[i];
	return Py_BuildValue("{s:s,s:s,s:N,s:N,s:N}", "name", f->name, "type", weft_type_name(f->type),
			     "array", PyBool_FromLong(f->is_array), "variable",
			     PyBool_FromLong(f->variable), "in_data", PyBool_FromLong(f->in_data));
}

/* Event kind i as a dict, with its fields. */
static PyObject *kind_dict(const void *trace, size_t i)
{
	const weft_event_schema *k = weft_trace_event_schema(trace, i);
	PyObject *fields = wpy_list_of(k, 0, k->field_count, field_dict);
	if (fields == NULL)
		return NULL;
	return Py_BuildValue("{s:N,s:I,s:s,s:N,s:I,s:N,s:N}", "code", str_or_none(k->code),
			     "payload_size", k->payload_size, "role", weft_event_role_name(k->role),
			     "category", str_or_none(k->category), "data_size", k->data_size,
			     "fields", fields, "variable_fields", PyBool_FromLong(k->variable_fields));
}

PyDoc_STRVAR(schema_doc, "_schema() -> list of dict\n\nThe event kinds and their fields.");

static PyObject *trace_schema(wpy_trace *self, PyObject *unused)
{
	if (wpy_trace_check(self) < 0)
		return NULL;
	return wpy_list_of(self->trace, 0, weft_trace_event_schema_count(self->trace), kind_dict);
}

PyDoc_STRVAR(start_time_doc, "_start_time() -> int or None\n\n"
	     "The time (ns) of the trace's earliest event, None when it has none.");

static PyObject *trace_start_time(wpy_trace *self, PyObject *unused)
{
	if (wpy_trace_check(self) < 0)
		return NULL;
	uint64_t start = 0;
	int rc;
	self->busy = 1;
	Py_BEGIN_ALLOW_THREADS
	rc = weft_trace_start_time(self->trace, &start);
	Py_END_ALLOW_THREADS
	self->busy = 0;
	PyObject *r = rc < 0 ? wpy_raise(rc) : rc == 0 ? Py_NewRef(Py_None)
						      : PyLong_FromUnsignedLongLong(start);
	return wpy_progress_finish(self, r);
}

/* ---- Attributes ------------------------------------------------------------- */

static PyObject *get_closed(wpy_trace *self, void *unused)
{
	return PyBool_FromLong(self->trace == NULL);
}

static PyObject *get_format(wpy_trace *self, void *unused)
{
	if (wpy_trace_check(self) < 0)
		return NULL;
	return str_or_none(weft_format_name(weft_trace_format(self->trace)));
}

static PyObject *get_path(wpy_trace *self, void *unused)
{
	if (wpy_trace_check(self) < 0)
		return NULL;
	const char *p = weft_trace_path(self->trace);
	return PyUnicode_DecodeFSDefault(p ? p : "");
}

static PyObject *get_layout_version(wpy_trace *self, void *unused)
{
	if (wpy_trace_check(self) < 0)
		return NULL;
	return PyLong_FromLong(weft_trace_layout_version(self->trace));
}

static PyObject *get_metadata_json(wpy_trace *self, void *unused)
{
	if (wpy_trace_check(self) < 0)
		return NULL;
	return json_text(weft_trace_metadata_json(self->trace));
}

static PyObject *get_codes(wpy_trace *self, void *unused)
{
	if (wpy_trace_check(self) < 0)
		return NULL;
	return PyList_GetSlice(self->code_list, 0, PyList_GET_SIZE(self->code_list));
}

/* The path of stream i. */
static PyObject *stream_path(const void *trace, size_t i)
{
	return str_or_none(weft_trace_stream(trace, i)->path);
}

static PyObject *get_stream_paths(wpy_trace *self, void *unused)
{
	if (wpy_trace_check(self) < 0)
		return NULL;
	return wpy_list_of(self->trace, 0, weft_trace_stream_count(self->trace), stream_path);
}

static PyObject *get_natural_order(wpy_trace *self, void *unused)
{
	if (wpy_trace_check(self) < 0)
		return NULL;
	return PyUnicode_FromString(weft_trace_natural_order(self->trace) == WEFT_ORDER_STORED
					    ? "stored" : "time");
}

static PyObject *get_shared_files(wpy_trace *self, void *unused)
{
	if (wpy_trace_check(self) < 0)
		return NULL;
	return PyBool_FromLong(weft_trace_shared_files(self->trace));
}

static PyObject *get_progress(wpy_trace *self, void *unused)
{
	return Py_NewRef(self->progress_fn ? self->progress_fn : Py_None);
}

static int set_progress(wpy_trace *self, PyObject *fn, void *unused)
{
	if (self->busy) {
		PyErr_SetString(PyExc_RuntimeError, "the trace is busy (a call runs on it)");
		return -1;
	}
	if (set_progress_fn(self, fn) < 0)
		return -1;
	wpy_progress_install(self, self->progress_interval_ns);
	return 0;
}

static PyGetSetDef trace_getset[] = {
	{"progress", (getter)get_progress, (setter)set_progress,
	 "The progress callable (None: none), called with a weft.Progress at most\n"
	 "every progress_interval seconds (weft.open(); 0.1 by default) while the\n"
	 "library works on the trace, and with finished=True when an operation\n"
	 "ends. What it raises is raised when the running call returns.", NULL},
	{"closed", (getter)get_closed, NULL, "True once the trace is closed.", NULL},
	{"format", (getter)get_format, NULL, "The format's name: \"ovni\", \"heph\", \"ross\" or \"pallas\".", NULL},
	{"path", (getter)get_path, NULL, "The path the trace was opened at.", NULL},
	{"layout_version", (getter)get_layout_version, NULL,
	 "The format's layout version (ovni: 1, 2 or 3), 0 when not applicable.", NULL},
	{"metadata_json", (getter)get_metadata_json, NULL,
	 "The trace-wide metadata as JSON text (\"{}\" when none).", NULL},
	{"codes", (getter)get_codes, NULL,
	 "The event codes met so far by event reads, in the order first met: the\n"
	 "`code` column of a batch indexes this list. It grows as reads meet new codes.", NULL},
	{"stream_paths", (getter)get_stream_paths, NULL,
	 "The stream paths by stream index: the `stream` column of a batch indexes it.", NULL},
	{"natural_order", (getter)get_natural_order, NULL,
	 "The order the format is best read in: \"time\" or \"stored\" (Heph).", NULL},
	{"shared_files", (getter)get_shared_files, NULL,
	 "True when the trace's files each hold many streams (ROSS): an event is then\n"
	 "located by its stream's file and its offset.", NULL},
	{NULL, NULL, NULL, NULL, NULL}
};

static PyMethodDef trace_methods[] = {
	{"close", (PyCFunction)trace_close, METH_NOARGS, close_doc},
	{"_nodes", (PyCFunction)trace_nodes, METH_NOARGS, nodes_doc},
	{"_streams", (PyCFunction)trace_streams, METH_NOARGS, streams_doc},
	{"_diagnostics", (PyCFunction)trace_diagnostics, METH_VARARGS, diagnostics_doc},
	{"_schema", (PyCFunction)trace_schema, METH_NOARGS, schema_doc},
	{"_start_time", (PyCFunction)trace_start_time, METH_NOARGS, start_time_doc},
	{"_convert", (PyCFunction)(void (*)(void))wpy_trace_convert, METH_VARARGS | METH_KEYWORDS,
	 "_convert(path, to, streams, start, end, codes, force, heph_compat, virtual_unit, "
	 "allow_loss): weft_convert(); the report as a dict (Trace.convert())."},
	{"_spans", (PyCFunction)(void (*)(void))wpy_trace_spans, METH_VARARGS | METH_KEYWORDS,
	 "_spans(streams, start, end, codes, instants, emulate, all_models, channels): every "
	 "span as a dict of numpy columns and the lists of names and timelines (Trace.spans())."},
	{"_profile", (PyCFunction)(void (*)(void))wpy_trace_profile, METH_VARARGS | METH_KEYWORDS,
	 "_profile(by, streams, start, end, codes, source, emulate, all_models, channels): the "
	 "rows of the profile and the source used (Trace.profile())."},
	{"_emulate", (PyCFunction)(void (*)(void))wpy_trace_emulate, METH_VARARGS | METH_KEYWORDS,
	 "_emulate(all_models, end_checks, allow_loss): the changes of the ovni emulation as a "
	 "dict of numpy columns and lists, with the threads, CPUs, models and diagnostics "
	 "(Trace.emulate())."},
	{"_events", (PyCFunction)(void (*)(void))wpy_trace_events, METH_VARARGS | METH_KEYWORDS,
	 "_events(streams=None, start=None, end=None, codes=None, order=None,\n"
	 "        batch_size=65536, fields=None) -> iterator of dict\n\n"
	 "The iterator of event batches (weft.Trace.events() is the documented call)."},
	{NULL, NULL, 0, NULL}
};

PyTypeObject wpy_TraceType = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "weft._weft.Trace",
	.tp_doc = PyDoc_STR("An open trace (the C part of weft.Trace; use weft.open())."),
	.tp_basicsize = sizeof(wpy_trace),
	.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
	.tp_new = PyType_GenericNew,
	.tp_init = (initproc)trace_init,
	.tp_dealloc = (destructor)trace_dealloc,
	.tp_traverse = (traverseproc)trace_traverse,
	.tp_clear = (inquiry)trace_clear,
	.tp_methods = trace_methods,
	.tp_getset = trace_getset,
	.tp_dictoffset = offsetof(wpy_trace, dict),
	.tp_weaklistoffset = offsetof(wpy_trace, weakrefs),
};
