/* SPDX-License-Identifier: MIT */
/*
 * python/src/convert.c - Trace._convert(): weft_convert() (weft/convert.h)
 * for Trace.convert(), without the GIL. The output is written to a
 * temporary name and renamed by the library, so that a failure leaves
 * no half-written output; the report comes back as a dict.
 */
#include "weftpy.h"

#include <string.h>

/* The counts and messages of the report as a dict. */
static PyObject *report_dict(const weft_convert_report *r)
{
	PyObject *messages = wpy_str_list((const char *const *)r->messages, r->message_count);
	if (messages == NULL)
		return NULL;
	return Py_BuildValue("{s:s,s:K,s:K,s:K,s:K,s:K,s:O,s:N}",
			     "output", r->output ? r->output : "",
			     "events", (unsigned long long)r->events,
			     "selected", (unsigned long long)r->selected,
			     "unclosed_spans", (unsigned long long)r->unclosed_spans,
			     "unmatched_leaves", (unsigned long long)r->unmatched_leaves,
			     "too_deep", (unsigned long long)r->too_deep,
			     "data_lost", r->data_lost ? Py_True : Py_False,
			     "messages", messages);
}

PyObject *wpy_trace_convert(wpy_trace *self, PyObject *args, PyObject *kwargs)
{
	static char *kwlist[] = {"path", "to", "streams", "start", "end", "codes", "force",
				 "heph_compat", "virtual_unit", "allow_loss", "emulate",
				 "all_models", "breakdown", "ovni_cfg", NULL};
	const char *path, *to = NULL, *streams = NULL, *codes = NULL, *ovni_cfg = NULL;
	PyObject *start = NULL, *end = NULL, *virtual_unit = NULL, *emulate = Py_None;
	int force = 0, heph_compat = 0, allow_loss = 0, all_models = 0, breakdown = 0;
	weft_convert_options o;
	weft_convert_report report;

	if (!PyArg_ParseTupleAndKeywords(args, kwargs, "s|zzOOzppOpOppz", kwlist, &path, &to,
					 &streams, &start, &end, &codes, &force, &heph_compat,
					 &virtual_unit, &allow_loss, &emulate, &all_models,
					 &breakdown, &ovni_cfg) ||
	    wpy_trace_check(self) < 0)
		return NULL;
	int emulate_true = emulate == Py_None ? 0 : PyObject_IsTrue(emulate);
	if (emulate_true < 0)
		return NULL;
	weft_convert_options_init(&o);
	if (wpy_parse_time(start, &o.filter.from, "start") < 0 ||
	    wpy_parse_time(end, &o.filter.to, "end") < 0 ||
	    wpy_parse_time(virtual_unit, &o.virtual_unit_ns, "virtual_unit") < 0)
		return NULL;
	o.output = to;
	o.path = path;
	o.filter.stream_pattern = streams;
	o.filter.code_pattern = codes;
	o.force = force;
	o.heph_compat = heph_compat;
	o.allow_loss = allow_loss;
	/* None: emulate where it is the default (WEFT_EMULATE_AUTO) */
	o.emulate = emulate == Py_None ? WEFT_EMULATE_AUTO
		  : emulate_true ? WEFT_EMULATE_ON : WEFT_EMULATE_OFF;
	o.all_models = all_models;
	o.breakdown = breakdown;
	o.ovni_cfg = ovni_cfg;
	int rc;
	self->busy = 1;
	Py_BEGIN_ALLOW_THREADS
	rc = weft_convert(self->trace, &o, &report);
	Py_END_ALLOW_THREADS
	self->busy = 0;
	PyObject *result = rc < 0 ? wpy_raise(rc) : report_dict(&report);
	weft_convert_report_free(&report);
	return wpy_progress_finish(self, result);
}
