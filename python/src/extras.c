/* SPDX-License-Identifier: MIT */
/*
 * python/src/extras.c - the format extras of weft.Trace, each a front end
 * of a format-specific public libweft call: ROSS tables and summaries
 * (weft/ross.h) and a Pallas thread's grammar and stored durations
 * (weft/pallas_grammar.h). The Python layer (python/weft/_extras.py)
 * makes DataFrames of what these return. The methods are added to the
 * Trace type when the module is made (wpy_extras_register()).
 */
#include "weftpy.h"

#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#define PY_ARRAY_UNIQUE_SYMBOL weftpy_ARRAY_API
#define NO_IMPORT_ARRAY
#include <numpy/arrayobject.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "weft/pallas_grammar.h"
#include "weft/ross.h"

/* ---- ROSS --------------------------------------------------------------------------- */

/* "file", "virtual" or "real" as a weft_ross_table_order: -1 with ValueError. */
static int parse_table_order(const char *name, int *order)
{
	static const char *const names[] = {"file", "virtual", "real"};
	for (int i = 0; i < 3; i++)
		if (name == NULL || strcmp(name, names[i]) == 0) {
			*order = name == NULL ? WEFT_ROSS_ORDER_FILE : i;
			return 0;
		}
	PyErr_Format(PyExc_ValueError, "order must be \"file\", \"virtual\" or \"real\", not \"%s\"",
		     name);
	return -1;
}

/*
 * _ross_table(level, streams, order, sort_budget, fd) -> (rows, short_data):
 * writes the table of one level as CSV to the file descriptor `fd`
 * (weft_ross_table_write(), without the GIL).
 */
static PyObject *trace_ross_table(wpy_trace *self, PyObject *args)
{
	const char *level, *streams = NULL, *order = NULL;
	unsigned long long budget = 0;
	int fd;
	weft_ross_table_options o;
	weft_ross_table_report report = {0, 0};

	if (!PyArg_ParseTuple(args, "szzKi", &level, &streams, &order, &budget, &fd) ||
	    wpy_trace_check(self) < 0)
		return NULL;
	weft_ross_table_options_init(&o);
	if (parse_table_order(order, &o.order) < 0)
		return NULL;
	o.level = level;
	o.stream_pattern = streams;
	o.sort_budget = budget;
	int rc;
	self->busy = 1;
	Py_BEGIN_ALLOW_THREADS
	rc = weft_ross_table_write(self->trace, &o, fd, &report);
	Py_END_ALLOW_THREADS
	self->busy = 0;
	if (rc < 0)
		return wpy_progress_finish(self, wpy_raise(rc));
	return wpy_progress_finish(self, Py_BuildValue("(KK)", (unsigned long long)report.rows,
						       (unsigned long long)report.short_data));
}

/*
 * _ross_summary(dedup) -> str: what `weft summary --json` prints
 * (weft_ross_summary_write(), without the GIL), one JSON text.
 */
static PyObject *trace_ross_summary(wpy_trace *self, PyObject *args)
{
	int dedup = 0;
	weft_ross_summary_options o;

	if (!PyArg_ParseTuple(args, "p", &dedup) || wpy_trace_check(self) < 0)
		return NULL;
	weft_ross_summary_options_init(&o);
	o.json = 1;
	o.dedup = dedup;
	char *text = NULL;
	size_t size = 0;
	FILE *out = open_memstream(&text, &size);
	if (out == NULL)
		return PyErr_NoMemory();
	int rc;
	self->busy = 1;
	Py_BEGIN_ALLOW_THREADS
	rc = weft_ross_summary_write(self->trace, &o, out);
	Py_END_ALLOW_THREADS
	self->busy = 0;
	int closed = fclose(out);
	PyObject *result = rc < 0 ? wpy_raise(rc) : closed != 0 ? PyErr_NoMemory() :
			   PyUnicode_DecodeUTF8(text, (Py_ssize_t)size, "replace");
	free(text);
	return wpy_progress_finish(self, result);
}

/* The level names of ROSS tables (weft_ross_table_level_name()). */
static PyObject *py_ross_levels(PyObject *unused, PyObject *unused2)
{
	const char *names[16];
	size_t n = 0;
	while (n < 16 && (names[n] = weft_ross_table_level_name(n)) != NULL)
		n++;
	return wpy_str_list(names, n);
}

/* ---- Pallas grammars -------------------------------------------------------------- */

/* Opens the grammar of stream `stream` without the GIL: 0, or -1 with an error. */
static int grammar_open(wpy_trace *self, unsigned int stream, weft_pallas_grammar **g)
{
	int rc;
	*g = NULL;
	if (stream >= weft_trace_stream_count(self->trace)) {
		PyErr_Format(PyExc_IndexError, "no stream %u", stream);
		return -1;
	}
	self->busy = 1;
	Py_BEGIN_ALLOW_THREADS
	rc = weft_pallas_grammar_open(self->trace, stream, g);
	Py_END_ALLOW_THREADS
	self->busy = 0;
	if (rc < 0) {
		wpy_raise(rc);
		return -1;
	}
	return 0;
}

/* A numpy array of n elements of `type`, filled later; NULL with an error. */
static PyObject *new_array(size_t n, int type)
{
	npy_intp dims[1] = {(npy_intp)n};
	return PyArray_ZEROS(1, dims, type, 0);
}

/* Element i of a numpy array as a pointer of the right type. */
#define AT(array, ctype, i) (((ctype *)PyArray_DATA((PyArrayObject *)(array)))[i])

/* Sets d[name] = value (stolen); -1 with an error. */
static int put(PyObject *d, const char *name, PyObject *value)
{
	if (value == NULL)
		return -1;
	int rc = PyDict_SetItemString(d, name, value);
	Py_DECREF(value);
	return rc;
}

/* 0 for a library call that succeeded, else -1 with its exception raised. */
static int raised(int status)
{
	if (status >= 0)
		return 0;
	wpy_raise(status);
	return -1;
}

/* Stores the n columns in d when rc is 0, and drops them: -1 with an error. */
static int publish(PyObject *d, const char *const *names, PyObject **cols, size_t n, int rc)
{
	for (size_t k = 0; k < n; k++) {
		if (rc == 0 && cols[k] != NULL)
			rc = put(d, names[k], Py_NewRef(cols[k]));
		Py_XDECREF(cols[k]);
	}
	return rc < 0 ? -1 : 0;
}

/* A str of a library text (NULL: ""). */
static PyObject *text(const char *s)
{
	return PyUnicode_DecodeUTF8(s ? s : "", (Py_ssize_t)strlen(s ? s : ""), "replace");
}

/* 1 when none of the n columns is NULL (all were made). */
static int all_made(PyObject *const *cols, size_t n)
{
	for (size_t k = 0; k < n; k++)
		if (cols[k] == NULL)
			return 0;
	return 1;
}

/* The events table of a grammar as columns (their names below). -1 with an error. */
enum { EV_RECORD, EV_OCC, EV_FIRST, EV_LAST, EV_CODE, EV_DESC, EV_COLS };
static const char *const event_names[EV_COLS] = {
	"record", "occurrences", "first_time", "last_time", "code", "description"
};

static int grammar_events(weft_pallas_grammar *g, PyObject *d)
{
	size_t n = weft_pallas_grammar_event_count(g);
	PyObject *c[EV_COLS] = {
		new_array(n, NPY_INT32), new_array(n, NPY_UINT64), new_array(n, NPY_UINT64),
		new_array(n, NPY_UINT64), PyList_New((Py_ssize_t)n), PyList_New((Py_ssize_t)n)
	};
	int rc = all_made(c, EV_COLS) ? 0 : -1;
	for (size_t i = 0; rc == 0 && i < n; i++) {
		weft_pallas_event_info e;
		if ((rc = raised(weft_pallas_grammar_event(g, i, &e))) < 0)
			break;
		AT(c[EV_RECORD], int32_t, i) = e.record;
		AT(c[EV_OCC], uint64_t, i) = e.occurrences;
		AT(c[EV_FIRST], uint64_t, i) = e.first_time;
		AT(c[EV_LAST], uint64_t, i) = e.last_time;
		PyObject *code = text(e.code), *desc = text(e.description);
		if (code == NULL || desc == NULL) {
			Py_XDECREF(code);
			Py_XDECREF(desc);
			rc = -1;
			break;
		}
		PyList_SET_ITEM(c[EV_CODE], (Py_ssize_t)i, code);
		PyList_SET_ITEM(c[EV_DESC], (Py_ssize_t)i, desc);
	}
	return publish(d, event_names, c, EV_COLS, rc);
}

/* The columns of the sequences table: uint64 ones first, in this order. */
enum { SQ_TOKENS, SQ_COUNT, SQ_MIN, SQ_MAX, SQ_MEAN, SQ_XCOUNT, SQ_XMIN, SQ_XMAX, SQ_XMEAN,
       SQ_TOTAL, SQ_XTOTAL, SQ_U64, SQ_DEAD = SQ_U64, SQ_BODY, SQ_REGION, SQ_NAME, SQ_COLS };
static const char *const sequence_names[SQ_COLS] = {
	"token_count", "count", "min", "max", "mean", "exclusive_count", "exclusive_min",
	"exclusive_max", "exclusive_mean", "total", "exclusive_total", "dead", "loop_body",
	"region_ref", "name"
};

/* Sequence info `q` into row i of the columns (not the totals nor the name). */
static void sequence_row(PyObject *const *c, size_t i, const weft_pallas_sequence_info *q)
{
	const uint64_t v[SQ_TOTAL] = {
		q->token_count, q->durations.count, q->durations.min, q->durations.max,
		q->durations.mean, q->exclusive.count, q->exclusive.min, q->exclusive.max,
		q->exclusive.mean
	};
	for (int k = 0; k < SQ_TOTAL; k++)
		AT(c[k], uint64_t, i) = v[k];
	AT(c[SQ_DEAD], npy_bool, i) = (npy_bool)q->dead;
	AT(c[SQ_BODY], npy_bool, i) = (npy_bool)q->is_loop_body;
	AT(c[SQ_REGION], int64_t, i) = q->region_ref;
}

/*
 * Exact totals of every live sequence (weft_pallas_grammar_sequence_totals(),
 * reads the value data) into the total columns, without the GIL. 0 or a
 * negative code.
 */
static int sequence_totals(wpy_trace *self, weft_pallas_grammar *g, const npy_bool *dead,
			   uint64_t *total, uint64_t *xtotal)
{
	int rc = 0;
	size_t n = weft_pallas_grammar_sequence_count(g);
	self->busy = 1;
	Py_BEGIN_ALLOW_THREADS
	for (size_t i = 0; rc == 0 && i < n; i++)
		if (!dead[i])
			rc = weft_pallas_grammar_sequence_totals(g, i, &total[i], &xtotal[i]);
	Py_END_ALLOW_THREADS
	self->busy = 0;
	return rc;
}

/*
 * The sequences table as columns (the totals only when `totals`). -1
 * with an error.
 */
static int grammar_sequences(wpy_trace *self, weft_pallas_grammar *g, int totals, PyObject *d)
{
	size_t n = weft_pallas_grammar_sequence_count(g);
	PyObject *c[SQ_COLS];
	for (int k = 0; k < SQ_U64; k++)
		c[k] = new_array(n, NPY_UINT64);
	c[SQ_DEAD] = new_array(n, NPY_BOOL);
	c[SQ_BODY] = new_array(n, NPY_BOOL);
	c[SQ_REGION] = new_array(n, NPY_INT64);
	c[SQ_NAME] = PyList_New((Py_ssize_t)n);
	int rc = all_made(c, SQ_COLS) ? 0 : -1;
	for (size_t i = 0; rc == 0 && i < n; i++) {
		weft_pallas_sequence_info q;
		if ((rc = raised(weft_pallas_grammar_sequence(g, i, &q))) < 0)
			break;
		sequence_row(c, i, &q);
		PyObject *s = text(q.dead ? "" : q.name);
		if (s == NULL) {
			rc = -1;
			break;
		}
		PyList_SET_ITEM(c[SQ_NAME], (Py_ssize_t)i, s);
	}
	if (rc == 0 && totals)
		rc = raised(sequence_totals(self, g, PyArray_DATA((PyArrayObject *)c[SQ_DEAD]),
					    PyArray_DATA((PyArrayObject *)c[SQ_TOTAL]),
					    PyArray_DATA((PyArrayObject *)c[SQ_XTOTAL])));
	if (!totals) { /* left out rather than zeros */
		Py_CLEAR(c[SQ_TOTAL]);
		Py_CLEAR(c[SQ_XTOTAL]);
	}
	return publish(d, sequence_names, c, SQ_COLS, rc);
}

/* The loops table as columns (their names below). -1 with an error. */
enum { LP_DEAD, LP_KIND, LP_BODY, LP_ITER, LP_OCC, LP_COLS };
static const char *const loop_names[LP_COLS] = {
	"dead", "body_kind", "body", "iterations", "occurrences"
};

static int grammar_loops(weft_pallas_grammar *g, PyObject *d)
{
	size_t n = weft_pallas_grammar_loop_count(g);
	PyObject *c[LP_COLS] = {
		new_array(n, NPY_BOOL), new_array(n, NPY_UINT8), new_array(n, NPY_UINT32),
		new_array(n, NPY_UINT32), new_array(n, NPY_UINT64)
	};
	int rc = all_made(c, LP_COLS) ? 0 : -1;
	for (size_t i = 0; rc == 0 && i < n; i++) {
		weft_pallas_loop_info l;
		if ((rc = raised(weft_pallas_grammar_loop(g, i, &l))) < 0)
			break;
		AT(c[LP_DEAD], npy_bool, i) = (npy_bool)l.dead;
		AT(c[LP_KIND], uint8_t, i) = (uint8_t)l.repeated.kind;
		AT(c[LP_BODY], uint32_t, i) = l.repeated.index;
		AT(c[LP_ITER], uint32_t, i) = l.iterations;
		AT(c[LP_OCC], uint64_t, i) = l.occurrences;
	}
	return publish(d, loop_names, c, LP_COLS, rc);
}

/*
 * The tokens of every sequence, flattened: start (uint64, sequence i's
 * tokens are [start[i], start[i + 1])), kind (uint8, weft_pallas_token_kind)
 * and index (uint32).
 */
static const char *const token_names[3] = {"start", "kind", "index"};

static int grammar_tokens(weft_pallas_grammar *g, PyObject *sequences, PyObject *d)
{
	size_t n = weft_pallas_grammar_sequence_count(g);
	PyObject *counts = PyDict_GetItemString(sequences, "token_count");
	if (counts == NULL)
		return -1;
	uint64_t total = 0;
	for (size_t i = 0; i < n; i++)
		total += AT(counts, uint64_t, i);
	PyObject *c[3] = {
		new_array(n + 1, NPY_UINT64), new_array((size_t)total, NPY_UINT8),
		new_array((size_t)total, NPY_UINT32)
	};
	int rc = all_made(c, 3) ? 0 : -1;
	uint64_t at = 0;
	for (size_t i = 0; rc == 0 && i < n; i++) {
		AT(c[0], uint64_t, i) = at;
		for (uint64_t k = 0; k < AT(counts, uint64_t, i); k++, at++) {
			weft_pallas_token t;
			if ((rc = raised(weft_pallas_grammar_token(g, i, k, &t))) < 0)
				break;
			AT(c[1], uint8_t, at) = (uint8_t)t.kind;
			AT(c[2], uint32_t, at) = t.index;
		}
	}
	if (rc == 0)
		AT(c[0], uint64_t, n) = at;
	return publish(d, token_names, c, 3, rc);
}

/* A new dict stored as d[name] (borrowed), or NULL with an error. */
static PyObject *sub_dict(PyObject *d, const char *name)
{
	PyObject *s = PyDict_New();
	if (s == NULL || put(d, name, s) < 0)
		return NULL;
	return s;
}

/*
 * _pallas_grammar(stream, totals) -> dict: the grammar of one thread as
 * columns: root, events, sequences (with the exact totals when `totals`:
 * reads the value data), loops, tokens.
 */
static PyObject *trace_pallas_grammar(wpy_trace *self, PyObject *args)
{
	unsigned int stream;
	int totals = 1;
	weft_pallas_grammar *g;

	if (!PyArg_ParseTuple(args, "I|p", &stream, &totals) || wpy_trace_check(self) < 0 ||
	    grammar_open(self, stream, &g) < 0)
		return NULL;
	PyObject *d = PyDict_New(), *events, *sequences, *loops, *tokens;
	if (d == NULL || put(d, "root", PyLong_FromUnsignedLong(weft_pallas_grammar_root(g))) < 0 ||
	    (events = sub_dict(d, "events")) == NULL || grammar_events(g, events) < 0 ||
	    (sequences = sub_dict(d, "sequences")) == NULL ||
	    grammar_sequences(self, g, totals, sequences) < 0 ||
	    (loops = sub_dict(d, "loops")) == NULL || grammar_loops(g, loops) < 0 ||
	    (tokens = sub_dict(d, "tokens")) == NULL || grammar_tokens(g, sequences, tokens) < 0)
		Py_CLEAR(d);
	weft_pallas_grammar_free(g);
	return d;
}

/*
 * _pallas_durations(stream, sequence, exclusive) -> numpy uint64 array:
 * the stored (exclusive) durations of one sequence, one per occurrence
 * (weft_pallas_grammar_sequence_durations(), without the GIL).
 */
static PyObject *trace_pallas_durations(wpy_trace *self, PyObject *args)
{
	unsigned int stream;
	Py_ssize_t seq;
	int exclusive = 0;
	weft_pallas_grammar *g;

	if (!PyArg_ParseTuple(args, "In|p", &stream, &seq, &exclusive) ||
	    wpy_trace_check(self) < 0 || grammar_open(self, stream, &g) < 0)
		return NULL;
	weft_pallas_sequence_info q;
	int rc = seq < 0 ? WEFT_EINVAL : weft_pallas_grammar_sequence(g, (size_t)seq, &q);
	if (rc < 0) {
		weft_pallas_grammar_free(g);
		return seq < 0 ? PyErr_Format(PyExc_IndexError, "no sequence %zd", seq)
			       : wpy_raise(rc);
	}
	size_t n = (size_t)(exclusive ? q.exclusive.count : q.durations.count);
	PyObject *a = new_array(n, NPY_UINT64);
	size_t copied = 0;
	if (a != NULL) {
		uint64_t *out = PyArray_DATA((PyArrayObject *)a);
		self->busy = 1;
		Py_BEGIN_ALLOW_THREADS
		rc = weft_pallas_grammar_sequence_durations(g, (size_t)seq, exclusive, 0, out, n,
							   &copied);
		Py_END_ALLOW_THREADS
		self->busy = 0;
	}
	weft_pallas_grammar_free(g);
	if (a != NULL && rc < 0) {
		Py_DECREF(a);
		return wpy_raise(rc);
	}
	if (a != NULL && copied != n) {
		Py_DECREF(a);
		return PyErr_Format(wpy_FormatError, "sequence %zd: %zu stored durations, %zu expected",
				    seq, copied, n);
	}
	return a;
}

/* ---- Registration ------------------------------------------------------------------- */

static PyMethodDef extras_trace_methods[] = {
	{"_ross_table", (PyCFunction)trace_ross_table, METH_VARARGS,
	 "_ross_table(level, streams, order, sort_budget, fd) -> (rows, short_data): the CSV "
	 "table of a level to fd (Trace.ross_table())."},
	{"_ross_summary", (PyCFunction)trace_ross_summary, METH_VARARGS,
	 "_ross_summary(dedup) -> str: the JSON of `weft summary --json` (Trace.ross_summary())."},
	{"_pallas_grammar", (PyCFunction)trace_pallas_grammar, METH_VARARGS,
	 "_pallas_grammar(stream, totals=True) -> dict: a thread's grammar as columns "
	 "(Trace.grammar())."},
	{"_pallas_durations", (PyCFunction)trace_pallas_durations, METH_VARARGS,
	 "_pallas_durations(stream, sequence, exclusive=False) -> numpy.ndarray: the stored "
	 "durations of a sequence (Grammar.durations())."},
	{NULL, NULL, 0, NULL}
};

static PyMethodDef extras_module_methods[] = {
	{"ross_levels", py_ross_levels, METH_NOARGS,
	 "ross_levels() -> list of str\n\nThe levels of Trace.ross_table(): \"pe\", \"kp\", ..."},
	{NULL, NULL, 0, NULL}
};

int wpy_extras_register(PyObject *mod)
{
	PyObject *dict = wpy_TraceType.tp_dict;
	for (PyMethodDef *m = extras_trace_methods; m->ml_name != NULL; m++) {
		PyObject *descr = PyDescr_NewMethod(&wpy_TraceType, m);
		if (descr == NULL || PyDict_SetItemString(dict, m->ml_name, descr) < 0) {
			Py_XDECREF(descr);
			return -1;
		}
		Py_DECREF(descr);
	}
	PyType_Modified(&wpy_TraceType);
	return PyModule_AddFunctions(mod, extras_module_methods);
}
