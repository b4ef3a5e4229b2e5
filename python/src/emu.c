/* SPDX-License-Identifier: MIT */
/*
 * python/src/emu.c - Trace._emulate(): the ovni emulation (weft/emu.h)
 * for Trace.emulate(), which makes a DataFrame of it. The changes are read
 * without the GIL into C rows, then copied into numpy columns; their texts
 * (labels, models, channels, titles) become indexes into four lists.
 */
#include "weftpy.h"

#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#define PY_ARRAY_UNIQUE_SYMBOL weftpy_ARRAY_API
#define NO_IMPORT_ARRAY
#include <numpy/arrayobject.h>

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* One change, as the rows keep it until the columns are made. */
typedef struct change_row {
	uint64_t clock, time;
	int64_t value;
	uint32_t row, type, depth;
	int32_t label;        /* index in the labels, -1: none */
	int32_t model, channel, title;
	uint8_t object;
} change_row;

/* The texts of the changes, one table per column. */
enum { T_LABEL, T_MODEL, T_CHANNEL, T_TITLE, T_MAX };

typedef struct change_rows {
	change_row *rows;
	size_t count, cap;
	wpy_codes texts[T_MAX];
} change_rows;

/* The index of `s` in table `k` (NULL: -1); -2 without memory. */
static int64_t text_index(change_rows *r, int k, const char *s)
{
	if (s == NULL)
		return -1;
	int64_t i = wpy_codes_index(&r->texts[k], s, (uint32_t)strlen(s));
	return i < 0 ? -2 : i;
}

/* Reads every change of `e` into `r` (no GIL): weft_emu_next()'s last status, or -2. */
static int read_changes(weft_emu *e, change_rows *r)
{
	const weft_emu_change *c;
	int rc;
	while ((rc = weft_emu_next(e, &c)) == 1) {
		if (wpy_grow((void **)&r->rows, &r->cap, r->count + 1, sizeof *r->rows, 4096) < 0)
			return -2;
		int64_t label = text_index(r, T_LABEL, c->label);
		int64_t model = text_index(r, T_MODEL, c->model);
		int64_t channel = text_index(r, T_CHANNEL, c->channel);
		int64_t title = text_index(r, T_TITLE, c->title);
		if (label == -2 || model == -2 || channel == -2 || title == -2)
			return -2;
		r->rows[r->count++] = (change_row){
			c->clock, c->time, c->value, c->row, c->type, c->depth, (int32_t)label,
			(int32_t)model, (int32_t)channel, (int32_t)title, (uint8_t)c->object };
	}
	return rc;
}

/* The texts of table `k` as a list of str. */
static PyObject *text_list(const change_rows *r, int k)
{
	const wpy_codes *t = &r->texts[k];
	PyObject *list = PyList_New(t->count);
	for (uint32_t i = 0; list != NULL && i < t->count; i++) {
		PyObject *s = PyUnicode_DecodeUTF8(t->codes[i].bytes, t->codes[i].len, "replace");
		if (s == NULL) {
			Py_CLEAR(list);
			break;
		}
		PyList_SET_ITEM(list, i, s);
	}
	return list;
}

/* Sets d[key] = value (a new reference, taken): 0, or -1 with an error. */
static int set_item(PyObject *d, const char *key, PyObject *value)
{
	int rc = value == NULL ? -1 : PyDict_SetItemString(d, key, value);
	Py_XDECREF(value);
	return rc;
}

/* The columns of the changes and the lists of their texts, into `d`. */
static int put_columns(PyObject *d, const change_rows *r)
{
	static const struct { const char *name; size_t offset; int type; size_t size; } cols[] = {
		{"clock", offsetof(change_row, clock), NPY_UINT64, 8},
		{"time", offsetof(change_row, time), NPY_UINT64, 8},
		{"value", offsetof(change_row, value), NPY_INT64, 8},
		{"row", offsetof(change_row, row), NPY_UINT32, 4},
		{"type", offsetof(change_row, type), NPY_UINT32, 4},
		{"depth", offsetof(change_row, depth), NPY_UINT32, 4},
		{"label", offsetof(change_row, label), NPY_INT32, 4},
		{"model", offsetof(change_row, model), NPY_INT32, 4},
		{"channel", offsetof(change_row, channel), NPY_INT32, 4},
		{"title", offsetof(change_row, title), NPY_INT32, 4},
		{"object", offsetof(change_row, object), NPY_UINT8, 1},
	};
	static const char *const lists[T_MAX] = {"labels", "models", "channels", "titles"};
	for (size_t k = 0; k < sizeof cols / sizeof cols[0]; k++)
		if (set_item(d, cols[k].name,
			     wpy_rows_column(r->rows, r->count, sizeof *r->rows, cols[k].offset,
					     cols[k].type, cols[k].size)) < 0)
			return -1;
	for (int k = 0; k < T_MAX; k++)
		if (set_item(d, lists[k], text_list(r, k)) < 0)
			return -1;
	return 0;
}

/* The threads, CPUs, models and diagnostics of the emulation, into `d`. */
static int put_objects(PyObject *d, const weft_emu *e, const char *root)
{
	PyObject *threads = PyList_New(0), *cpus = PyList_New(0), *models = PyList_New(0);
	PyObject *diags = PyList_New(0);
	int rc = threads && cpus && models && diags ? 0 : -1;
	for (size_t i = 0; rc == 0 && i < weft_emu_thread_count(e); i++) {
		const weft_emu_thread_info *t = weft_emu_thread(e, i);
		PyObject *o = Py_BuildValue("{s:L,s:L,s:L,s:L,s:I,s:I,s:s}", "tid", (long long)t->tid,
					    "pid", (long long)t->pid, "rank", (long long)t->rank,
					    "app_id", (long long)t->app_id, "stream", t->stream,
					    "loom", t->loom, "label", t->label);
		rc = o == NULL ? -1 : PyList_Append(threads, o);
		Py_XDECREF(o);
	}
	for (size_t i = 0; rc == 0 && i < weft_emu_cpu_count(e); i++) {
		const weft_emu_cpu_info *c = weft_emu_cpu(e, i);
		PyObject *o = Py_BuildValue("{s:I,s:s,s:L,s:L,s:s}", "loom", c->loom, "loom_name",
					    c->loom_name, "phyid", (long long)c->phyid, "index",
					    (long long)c->index, "label", c->label);
		rc = o == NULL ? -1 : PyList_Append(cpus, o);
		Py_XDECREF(o);
	}
	for (size_t i = 0; rc == 0 && i < weft_emu_model_count(e); i++) {
		PyObject *o = Py_BuildValue("(ss)", weft_emu_model_name(e, i),
					    weft_emu_model_version(e, i));
		rc = o == NULL ? -1 : PyList_Append(models, o);
		Py_XDECREF(o);
	}
	for (size_t i = 0; rc == 0 && i < weft_emu_diag_count(e); i++) {
		const weft_diag *g = weft_emu_diag(e, i);
		char *line = weft_diag_line(g, root);
		PyObject *o = line == NULL ? PyErr_NoMemory()
			      : wpy_diag_values(g->severity, g->file, g->offset, g->message, line);
		free(line);
		rc = o == NULL ? -1 : PyList_Append(diags, o);
		Py_XDECREF(o);
	}
	if (rc == 0)
		rc = set_item(d, "threads", threads) | set_item(d, "cpus", cpus) |
		     set_item(d, "models_enabled", models) | set_item(d, "diagnostics", diags);
	else {
		Py_XDECREF(threads);
		Py_XDECREF(cpus);
		Py_XDECREF(models);
		Py_XDECREF(diags);
	}
	if (rc == 0)
		rc = set_item(d, "start_clock", PyLong_FromUnsignedLongLong(weft_emu_start_clock(e))) |
		     set_item(d, "duration", PyLong_FromUnsignedLongLong(weft_emu_duration(e))) |
		     set_item(d, "events", PyLong_FromUnsignedLongLong(weft_emu_event_count(e)));
	return rc < 0 ? -1 : 0;
}

/* Everything as one dict (the emulator still alive: its texts are valid). */
static PyObject *emulation_dict(const change_rows *r, const weft_emu *e, const char *root,
				int status)
{
	PyObject *d = PyDict_New();
	if (d == NULL || put_columns(d, r) < 0 || put_objects(d, e, root) < 0 ||
	    set_item(d, "status", PyLong_FromLong(status)) < 0) {
		Py_XDECREF(d);
		return NULL;
	}
	return d;
}

PyObject *wpy_trace_emulate(wpy_trace *self, PyObject *args, PyObject *kwargs)
{
	static char *kwlist[] = {"all_models", "end_checks", "allow_loss", NULL};
	int all_models = 0, end_checks = 1, allow_loss = 0;
	weft_emu_options o;

	if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|ppp", kwlist, &all_models, &end_checks,
					 &allow_loss) ||
	    wpy_trace_check(self) < 0)
		return NULL;
	weft_emu_options_init(&o);
	o.all_models = all_models;
	o.no_end_checks = !end_checks;
	change_rows r;
	memset(&r, 0, sizeof r);
	weft_emu *e = NULL;
	int rc;
	self->busy = 1;
	Py_BEGIN_ALLOW_THREADS
	rc = weft_emu_create(self->trace, &o, &e);
	if (rc == 0)
		rc = read_changes(e, &r);
	Py_END_ALLOW_THREADS
	self->busy = 0;
	PyObject *result;
	if (rc == -2)
		result = PyErr_NoMemory();
	else if (rc < 0 && !(allow_loss && rc == WEFT_EFORMAT && e != NULL))
		result = wpy_raise(rc);
	else
		result = emulation_dict(&r, e, weft_trace_path(self->trace), rc);
	weft_emu_free(e);
	free(r.rows);
	for (int k = 0; k < T_MAX; k++)
		wpy_codes_free(&r.texts[k]);
	return wpy_progress_finish(self, result);
}
