/* SPDX-License-Identifier: MIT */
/*
 * python/src/progress.c - the progress callback of a trace (weft/progress.h)
 * as a Python callable: weft.open(path, progress=fn) and Trace.progress.
 *
 * The library calls back on the thread that called it, while that thread
 * runs without the GIL (the module releases it around every long call):
 * the callback takes the GIL back for the Python call, then gives it up.
 * The library cannot be stopped from a callback, so an exception raised
 * by the Python callable is kept, the callable is not called again during
 * that operation, and the exception is raised when the operation returns
 * (wpy_progress_finish), in place of its result. So a KeyboardInterrupt
 * (Ctrl-C, which Python raises in the callable) ends a long conversion
 * when the library returns, not at once.
 */
#include "weftpy.h"

static PyStructSequence_Field progress_fields[] = {
	{"phase", "What runs: \"opening\", \"reading\", \"converting\", \"writing\", "
		  "\"checking\", \"profiling\", \"indexing\", ... (weft/progress.h)."},
	{"bytes_done", "Input bytes read in this phase."},
	{"bytes_total", "The bytes of the trace's data files (0 when unknown)."},
	{"events_done", "Events read in this phase."},
	{"events_total", "The events of the trace when opening counted them, else 0."},
	{"elapsed", "Seconds since the phase began."},
	{"finished", "True on the last report of an operation (the figures are final)."},
	{"fraction", "Done as a fraction of the total (by events when their total is known, "
		     "else by bytes), or None when no total is known."},
	{NULL, NULL}
};

static PyStructSequence_Desc progress_desc = {
	"weft.Progress",
	"Where a long operation of the library is: what a progress callback\n"
	"(weft.open(path, progress=fn), Trace.progress) is given, at most every\n"
	"0.1 s while the work goes on and once more with finished=True at the\n"
	"end of each operation.",
	progress_fields,
	8,
};

PyTypeObject wpy_ProgressType;

int wpy_progress_init_type(PyObject *mod)
{
	if (PyStructSequence_InitType2(&wpy_ProgressType, &progress_desc) < 0)
		return -1;
	return PyModule_AddObjectRef(mod, "Progress", (PyObject *)&wpy_ProgressType);
}

/* The fraction done, or None. */
static PyObject *progress_fraction(const weft_progress *p)
{
	if (p->events_total > 0)
		return PyFloat_FromDouble(p->events_done >= p->events_total
						  ? 1.0 : (double)p->events_done / (double)p->events_total);
	if (p->bytes_total > 0)
		return PyFloat_FromDouble(p->bytes_done >= p->bytes_total
						  ? 1.0 : (double)p->bytes_done / (double)p->bytes_total);
	Py_RETURN_NONE;
}

/* A weft.Progress of `p`: NULL with an error. */
static PyObject *progress_object(const weft_progress *p)
{
	PyObject *o = PyStructSequence_New(&wpy_ProgressType);
	if (o == NULL)
		return NULL;
	PyObject *items[8] = {
		PyUnicode_FromString(p->phase ? p->phase : ""),
		PyLong_FromUnsignedLongLong(p->bytes_done),
		PyLong_FromUnsignedLongLong(p->bytes_total),
		PyLong_FromUnsignedLongLong(p->events_done),
		PyLong_FromUnsignedLongLong(p->events_total),
		PyFloat_FromDouble((double)p->elapsed_ns / 1e9),
		PyBool_FromLong(p->finished),
		progress_fraction(p),
	};
	int ok = 1;
	for (int i = 0; i < 8; i++) {
		if (items[i] == NULL)
			ok = 0;
		PyStructSequence_SET_ITEM(o, i, items[i] ? items[i] : Py_NewRef(Py_None));
	}
	if (!ok) {
		Py_DECREF(o);
		return NULL;
	}
	return o;
}

/*
 * The library's callback: `data` is the wpy_trace. Runs on the thread
 * that released the GIL for the library call, so PyGILState_Ensure takes
 * it back for this thread.
 */
static void progress_callback(const weft_progress *p, void *data)
{
	wpy_trace *self = data;
	PyGILState_STATE g = PyGILState_Ensure();
	if (self->progress_fn != NULL && self->progress_exc_type == NULL) {
		PyObject *arg = progress_object(p);
		PyObject *r = arg ? PyObject_CallOneArg(self->progress_fn, arg) : NULL;
		Py_XDECREF(arg);
		if (r == NULL)
			PyErr_Fetch(&self->progress_exc_type, &self->progress_exc_value,
				    &self->progress_exc_tb);
		Py_XDECREF(r);
	}
	PyGILState_Release(g);
}

/* Sets the callback in open options (before the trace exists). */
void wpy_progress_open_options(wpy_trace *self, weft_open_options *o, int64_t interval_ns)
{
	if (self->progress_fn == NULL)
		return;
	o->progress = progress_callback;
	o->progress_data = self;
	o->progress_interval_ns = interval_ns;
}

/* Installs self->progress_fn (or removes the callback when NULL) on the open trace. */
void wpy_progress_install(wpy_trace *self, int64_t interval_ns)
{
	if (self->trace == NULL)
		return;
	if (self->progress_fn != NULL)
		weft_trace_set_progress(self->trace, progress_callback, self, interval_ns);
	else
		weft_trace_set_progress(self->trace, NULL, NULL, 0);
}

PyObject *wpy_progress_finish(wpy_trace *self, PyObject *result)
{
	if (self->progress_exc_type == NULL)
		return result;
	Py_XDECREF(result);
	/* the callback's exception wins over the library's (if any) */
	PyErr_Clear();
	PyErr_Restore(self->progress_exc_type, self->progress_exc_value, self->progress_exc_tb);
	self->progress_exc_type = self->progress_exc_value = self->progress_exc_tb = NULL;
	return NULL;
}

void wpy_progress_drop(wpy_trace *self)
{
	Py_CLEAR(self->progress_exc_type);
	Py_CLEAR(self->progress_exc_value);
	Py_CLEAR(self->progress_exc_tb);
}

void wpy_progress_clear(wpy_trace *self)
{
	Py_CLEAR(self->progress_fn);
	Py_CLEAR(self->progress_exc_type);
	Py_CLEAR(self->progress_exc_value);
	Py_CLEAR(self->progress_exc_tb);
}
