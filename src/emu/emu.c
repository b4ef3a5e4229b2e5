/* SPDX-License-Identifier: MIT */
/*
 * emu/emu.c - the ovni emulator's life (docs/emulation.md): which models
 * to enable (the `require` of every thread, checked against the versions
 * ovniemu 1.14 emulates), building the system and its channels, handing
 * each event to its model in time order, the end checks, what went wrong
 * as diagnostics (the stream file and byte offset of the event, the rule
 * it broke), and the .pcf of both traces.
 *
 * Map:
 *   models       the known models, enabling them from `require`
 *   diagnostics  fail, warn, end errors
 *   life         create, event, finish, free
 *   .pcf         the types of both traces
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "core/internal.h"
#include "emu/engine.h"
#include "emu/pcf.h"

/* ---- Models ----------------------------------------------------------------------- */

/* The models of ovniemu 1.14, in its order (by model character). */
static const weft__emu_model_spec *const known_models[] = {
	&weft__emu_model_nanos6,
	&weft__emu_model_nodes,
	&weft__emu_model_kernel,
	&weft__emu_model_mpi,
	&weft__emu_model_ovni,
	&weft__emu_model_openmp,
	&weft__emu_model_tampi,
	&weft__emu_model_nosv,
};
#define NKNOWN (sizeof known_models / sizeof known_models[0])

/* Parses "major.minor.patch[-...]"; 0 or -1. */
static int parse_version(const char *s, long v[3])
{
	for (int i = 0; i < 3; i++) {
		char *end;
		if (*s < '0' || *s > '9')
			return -1;
		v[i] = strtol(s, &end, 10);
		if (i < 2 && *end != '.')
			return -1;
		if (i == 2 && *end != '\0' && *end != '-')
			return -1;
		s = end + 1;
	}
	return 0;
}

/*
 * Whether thread `t` requires model `m`: 1 (in a version the emulator
 * handles: same major, minor not newer), 0 (not required), or WEFT_EFORMAT
 * (a version it cannot emulate, as ovniemu's should_enable refuses it).
 */
static int thread_requires(const weft__emu *e, uint32_t t, const weft__emu_model_spec *m,
			   const json_t *require)
{
	const weft_node *n = weft_trace_node(e->trace, e->sys->threads[t].node);
	const char *want = json_string_value(json_object_get(require, m->name));
	long w[3], h[3];
	if (want == NULL)
		return 0;
	if (parse_version(want, w) < 0 || parse_version(m->version, h) < 0)
		return weft__error(WEFT_EFORMAT, n->path, WEFT_NO_OFFSET,
				   "cannot parse the version \"%s\" of model %s required by "
				   "thread.%" PRId64, want, m->name, e->sys->threads[t].tid);
	if (w[0] != h[0] || w[1] > h[1])
		return weft__error(WEFT_EFORMAT, n->path, WEFT_NO_OFFSET,
				   "unsupported %s model version (want %s, have %s) in "
				   "thread.%" PRId64, m->name, want, m->version,
				   e->sys->threads[t].tid);
	return 1;
}

/*
 * The ovni.require object of thread `t`'s metadata (a new reference), or
 * NULL after an error: ovniemu refuses a thread that declares none.
 */
static json_t *thread_require(const weft__emu *e, uint32_t t)
{
	const weft_node *n = weft_trace_node(e->trace, e->sys->threads[t].node);
	json_t *root = json_loads(n->metadata_json, 0, NULL);
	json_t *req = json_incref(json_object_get(json_object_get(root, "ovni"), "require"));
	json_decref(root);
	if (!json_is_object(req)) {
		json_decref(req);
		weft__error(WEFT_EFORMAT, n->path, WEFT_NO_OFFSET,
			    "thread.%" PRId64 " declares no models (no ovni.require in its "
			    "metadata, as libovni before 1.5 writes): emulate every model "
			    "(--all-models) or convert without emulation (--raw)",
			    e->sys->threads[t].tid);
		return NULL;
	}
	return req;
}

/*
 * Enables the models ovniemu would: ovni always, another when a thread
 * requires it (every one with all_models), checking every version.
 */
static int enable_models(weft__emu *e)
{
	int wanted[NKNOWN] = { 0 };
	for (uint32_t t = 0; !e->opt.all_models && t < e->sys->nthreads; t++) {
		json_t *req = thread_require(e, t);
		if (req == NULL)
			return WEFT_EFORMAT;
		for (size_t m = 0; m < NKNOWN; m++) {
			int rc = thread_requires(e, t, known_models[m], req);
			if (rc < 0) {
				json_decref(req);
				return rc;
			}
			wanted[m] |= rc;
		}
		json_decref(req);
	}
	memset(e->model_by_id, -1, sizeof e->model_by_id);
	for (size_t m = 0; m < NKNOWN; m++) {
		const weft__emu_model_spec *spec = known_models[m];
		if (!wanted[m] && !e->opt.all_models && spec != &weft__emu_model_ovni)
			continue;
		e->model_by_id[(unsigned char)spec->id] = (int8_t)e->nmodels;
		e->models[e->nmodels++] = spec;
	}
	return 0;
}

/* 1 when `want` is a version of model `m` the emulator handles. */
static int version_ok(const weft__emu_model_spec *m, const char *want)
{
	long w[3], h[3];
	return want != NULL && parse_version(want, w) == 0 && parse_version(m->version, h) == 0 &&
	       w[0] == h[0] && w[1] <= h[1];
}

/* 1 when every model of a require object is known in a handled version. */
static int require_ok(const json_t *require)
{
	const char *name;
	const json_t *v;
	if (!json_is_object(require))
		return 0;
	json_object_foreach((json_t *)require, name, v) {
		size_t m = 0;
		while (m < NKNOWN && strcmp(known_models[m]->name, name) != 0)
			m++;
		if (m == NKNOWN || !version_ok(known_models[m], json_string_value(v)))
			return 0;
	}
	return 1;
}

int weft__emu_declares_models(const weft_trace *trace)
{
	size_t n = weft_trace_stream_count(trace);
	int all = weft_trace_format(trace) == WEFT_FORMAT_OVNI && n > 0;
	for (size_t i = 0; all && i < n; i++) {
		const weft_node *node = weft_trace_node(trace, weft_trace_stream(trace, i)->node);
		json_t *root = json_loads(node->metadata_json, 0, NULL);
		all = require_ok(json_object_get(json_object_get(root, "ovni"), "require"));
		json_decref(root);
	}
	/* and the system can be built (looms with CPUs, threads below them) */
	weft__emu_system *sys = NULL;
	if (all && weft__emu_system_load(trace, &sys) < 0)
		all = 0;
	weft__emu_system_free(sys);
	return all;
}

int weft__emu_model_index(const weft__emu *e, const weft__emu_model_spec *spec)
{
	return e->model_by_id[(unsigned char)spec->id];
}

uint32_t weft__emu_slot_count(const weft__emu *e)
{
	return e->nslots;
}

int weft__emu_slot_describe(const weft__emu *e, uint16_t slot, weft__emu_slot_info *out)
{
	if (slot >= e->nslots)
		return WEFT_EINVAL;
	const weft__emu_chan_spec *c = e->slots[slot].spec;
	*out = (weft__emu_slot_info){ e->slots[slot].model->name, c->name, c->prefix, c->type,
				      c->stack, c->track };
	return 0;
}

const char *weft__emu_value_label(weft__emu *e, uint16_t slot, int64_t value)
{
	if (slot >= e->nslots)
		return NULL;
	const weft__emu_slot *s = &e->slots[slot];
	for (const weft__emu_label *l = s->spec->labels; l != NULL && l->text != NULL; l++)
		if (l->value == value)
			return l->text;
	int mi = weft__emu_model_index(e, s->model);
	uint32_t chan = slot - e->model_base[mi];
	return s->model->label != NULL ? s->model->label(e, chan, value) : NULL;
}

const int64_t *weft__emu_record_stack(const weft__emu *e, const weft__emu_record *r)
{
	if (r->slot >= e->nslots || !e->slots[r->slot].spec->stack || r->depth == 0)
		return NULL;
	const weft__emu_chan *c = NULL;
	if (r->kind == WEFT__EMU_THREAD && r->row < e->sys->nthreads)
		c = &e->th[r->row].raw[r->slot];
	else if (r->kind == WEFT__EMU_CPU && r->row < e->sys->ncpus && e->cpu[r->row].sel >= 0)
		c = &e->th[e->cpu[r->row].sel].raw[r->slot];
	if (c == NULL || c->depth < r->depth || c->stack == NULL)
		return NULL;
	return c->stack;
}

int32_t weft__emu_record_thread(const weft__emu *e, const weft__emu_record *r)
{
	if (r->kind == WEFT__EMU_THREAD && r->row < e->sys->nthreads)
		return (int32_t)r->row;
	if (r->kind == WEFT__EMU_CPU && r->row < e->sys->ncpus)
		return e->cpu[r->row].sel;
	return -1;
}

int weft__emu_views(weft__emu *e, weft__emu_view_fn fn, void *arg)
{
	int rc = 0;
	for (uint32_t m = 0; rc == 0 && m < e->nmodels; m++)
		if (e->models[m]->views != NULL)
			rc = e->models[m]->views(e, fn, arg);
	return rc;
}

size_t weft__emu_model_count(const weft__emu *e)
{
	return e->nmodels;
}

const char *weft__emu_model_name(const weft__emu *e, size_t i)
{
	return i < e->nmodels ? e->models[i]->name : NULL;
}

/* ---- Diagnostics ------------------------------------------------------------------ */

/* malloc'd vprintf text, or NULL. */
static char *vformat(const char *fmt, va_list ap)
{
	va_list aq;
	va_copy(aq, ap);
	int n = vsnprintf(NULL, 0, fmt, aq);
	va_end(aq);
	char *s = n < 0 ? NULL : malloc((size_t)n + 1);
	if (s != NULL)
		vsnprintf(s, (size_t)n + 1, fmt, ap);
	return s;
}

/* Distinct warnings kept (one per nested task would grow with the trace). */
#define WARNINGS_MAX 100
static const char more_warnings[] = "more warnings, not listed one by one";

/*
 * Appends a diagnostic (its strings are taken); a warning said before is
 * counted, and past WARNINGS_MAX distinct ones a new one only counts in
 * a last "more warnings" entry.
 */
static void add_diag_at(weft__emu *e, uint64_t time, int severity, char *file,
			uint64_t offset, char *message)
{
	size_t nwarn = 0;
	if (message == NULL) {
		free(file);
		return;
	}
	for (size_t i = 0; severity == WEFT_SEV_WARNING && i < e->ndiags; i++)
		if (e->diags[i].d.severity == WEFT_SEV_WARNING && ++nwarn &&
		    strcmp(e->diags[i].d.message, message) == 0) {
			e->diags[i].count++;
			free(file);
			free(message);
			return;
		}
	if (nwarn >= WARNINGS_MAX && strcmp(message, more_warnings) != 0) {
		char *more = malloc(sizeof more_warnings);
		free(file);
		free(message);
		if (more != NULL)
			memcpy(more, more_warnings, sizeof more_warnings);
		add_diag_at(e, time, severity, NULL, WEFT_NO_OFFSET, more);
		return;
	}
	if (e->ndiags == e->diags_cap) {
		size_t cap = e->diags_cap ? e->diags_cap * 2 : 8;
		weft__emu_diag *g = realloc(e->diags, cap * sizeof *g);
		if (g == NULL) {
			free(file);
			free(message);
			return;
		}
		e->diags = g;
		e->diags_cap = cap;
	}
	e->diags[e->ndiags++] = (weft__emu_diag){
		.d = { severity, severity == WEFT_SEV_ERROR ? WEFT_EFORMAT : 0, file, offset,
		       message },
		.time = time, .count = 1 };
}

/* The same at the emulator's time (UINT64_MAX before the first event). */
static void add_diag(weft__emu *e, int severity, char *file, uint64_t offset, char *message)
{
	add_diag_at(e, e->started ? e->now : UINT64_MAX, severity, file, offset, message);
}

/* malloc'd copy of the stream file of thread `t`. */
static char *thread_file(const weft__emu *e, uint32_t t)
{
	const weft_stream_info *si = weft_trace_stream(e->trace, e->sys->threads[t].stream);
	size_t n = strlen(si->file) + 1;
	char *s = malloc(n);
	if (s != NULL)
		memcpy(s, si->file, n);
	return s;
}

int weft__emu_fail(weft__emu *e, const char *fmt, ...)
{
	if (e->error == NULL) {
		va_list ap;
		va_start(ap, fmt);
		e->error = vformat(fmt, ap);
		va_end(ap);
	}
	return -1;
}

void weft__emu_warn(weft__emu *e, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *msg = vformat(fmt, ap);
	va_end(ap);
	if (e->ev != NULL && e->warning_fn != NULL && msg != NULL) {
		uint32_t stream = e->sys->threads[e->ev->thread].stream;
		const weft_stream_info *si = weft_trace_stream(e->trace, stream);
		e->warning_fn(e->warning_ctx, e->now, si->file, e->ev->raw->offset, msg);
		free(msg);
	} else if (e->ev != NULL)
		add_diag(e, WEFT_SEV_WARNING, thread_file(e, e->ev->thread), e->ev->raw->offset,
			 msg);
	else
		add_diag(e, WEFT_SEV_WARNING, NULL, WEFT_NO_OFFSET, msg);
}

void weft__emu_end_error(weft__emu *e, uint32_t t, const char *fmt, ...)
{
	va_list ap;
	if (t != UINT32_MAX && e->scope != NULL && !e->scope[t])
		return; /* another emulator's thread (weft__emu_set_scope) */
	va_start(ap, fmt);
	char *msg = vformat(fmt, ap);
	va_end(ap);
	add_diag(e, WEFT_SEV_ERROR, t == UINT32_MAX ? NULL : thread_file(e, t),
		 WEFT_NO_OFFSET, msg);
	e->failed = 1;
}

/* The error of the event being handled becomes its diagnostic. */
static void event_failed(weft__emu *e, const weft__emu_ev *ev)
{
	char *msg = NULL;
	const char *rule = e->error != NULL ? e->error : "the emulation failed";
	size_t n = strlen(rule) + 128;
	if ((msg = malloc(n)) != NULL)
		snprintf(msg, n, "%s (event %c%c%c of thread %" PRId64 " at %" PRIu64
			 " ns from the start)", rule, ev->m, ev->c, ev->v,
			 e->th[ev->thread].info->tid, ev->time);
	add_diag(e, WEFT_SEV_ERROR, thread_file(e, ev->thread), ev->raw->offset, msg);
	e->failed = 1;
}

size_t weft__emu_diag_count(const weft__emu *e)
{
	return e->ndiags;
}

const weft__emu_diag *weft__emu_diag_get(const weft__emu *e, size_t i)
{
	return i < e->ndiags ? &e->diags[i] : NULL;
}

/* ---- Payloads ------------------------------------------------------------------------ */

/* `n` bytes at `offset` of the payload as a little- or big-endian number. */
static uint64_t payload_bytes(const weft__emu_ev *ev, uint32_t offset, uint32_t n)
{
	uint64_t v = 0;
	if ((uint64_t)offset + n > ev->payload_size)
		return 0;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t k = ev->big_endian ? i : n - 1 - i;
		v = (v << 8) | ev->payload[offset + k];
	}
	return v;
}

uint32_t weft__emu_ev_u32(const weft__emu_ev *ev, uint32_t offset)
{
	return (uint32_t)payload_bytes(ev, offset, 4);
}

int32_t weft__emu_ev_i32(const weft__emu_ev *ev, uint32_t offset)
{
	return (int32_t)(uint32_t)payload_bytes(ev, offset, 4);
}

int64_t weft__emu_ev_i64(const weft__emu_ev *ev, uint32_t offset)
{
	return (int64_t)payload_bytes(ev, offset, 8);
}

/* ---- Life ------------------------------------------------------------------------------ */

/* Maps each stream to its thread (streams outside loom/proc/thread: none). */
static int map_streams(weft__emu *e)
{
	size_t n = weft_trace_stream_count(e->trace);
	e->stream_thread = malloc((n ? n : 1) * sizeof *e->stream_thread);
	if (e->stream_thread == NULL)
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	for (size_t i = 0; i < n; i++)
		e->stream_thread[i] = UINT32_MAX;
	for (uint32_t t = 0; t < e->sys->nthreads; t++)
		e->stream_thread[e->sys->threads[t].stream] = t;
	return 0;
}

/* Each model makes its state (and may declare channels of its own). */
static int create_models(weft__emu *e)
{
	for (uint32_t m = 0; m < e->nmodels; m++)
		if (e->models[m]->create != NULL && e->models[m]->create(e) < 0)
			return -1;
	return 0;
}

/* Each model sets its first values (written by no record). */
static int connect_models(weft__emu *e)
{
	for (uint32_t m = 0; m < e->nmodels; m++)
		if (e->models[m]->connect != NULL && e->models[m]->connect(e) < 0)
			return -1;
	return weft__emu_propagate(e, 0);
}

int weft__emu_create(weft_trace *trace, const weft__emu_options *options,
		     const weft__emu_sink *sink, weft__emu **out)
{
	*out = NULL;
	if (weft_trace_format(trace) != WEFT_FORMAT_OVNI)
		return weft__error(WEFT_EINVAL, weft_trace_path(trace), WEFT_NO_OFFSET,
				   "only ovni traces can be emulated (their runtimes' models)");
	weft__emu *e = calloc(1, sizeof *e);
	if (e == NULL)
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	e->trace = trace;
	if (options != NULL)
		e->opt = *options;
	if (sink != NULL)
		e->sink = *sink;
	int rc = weft__emu_system_load(trace, &e->sys);
	if (rc == 0)
		rc = enable_models(e);
	if (rc == 0)
		rc = map_streams(e);
	if (rc == 0 && create_models(e) < 0)
		rc = weft__error(WEFT_EFORMAT, weft_trace_path(trace), WEFT_NO_OFFSET, "%s",
				 e->error ? e->error : "the models cannot start");
	if (rc == 0)
		rc = weft__emu_engine_build(e);
	if (rc == 0 && weft__emu_bd_create(e) < 0)
		rc = weft__error(WEFT_EFORMAT, weft_trace_path(trace), WEFT_NO_OFFSET, "%s",
				 e->error ? e->error : "the breakdown cannot start");
	if (rc == 0 && connect_models(e) < 0)
		rc = weft__error(WEFT_EFORMAT, weft_trace_path(trace), WEFT_NO_OFFSET, "%s",
				 e->error ? e->error : "the models cannot start");
	if (rc < 0) {
		weft__emu_free(e);
		return rc;
	}
	*out = e;
	return 0;
}

/* Decodes the event for the handlers (MCV, thread, payload, time). */
static int decode(weft__emu *e, const weft_event *raw, weft__emu_ev *ev)
{
	if (raw->stream >= weft_trace_stream_count(e->trace) ||
	    e->stream_thread[raw->stream] == UINT32_MAX)
		return weft__emu_fail(e, "event of a stream that is no thread of the "
				      "loom.*/proc.*/thread.* hierarchy");
	if (raw->code_len != 3)
		return weft__emu_fail(e, "event code \"%.*s\" is no model, category and "
				      "value (MCV)", (int)raw->code_len, raw->code);
	if (!e->started) {
		e->started = 1;
		e->first_time = raw->time;
	}
	uint64_t now = raw->time - e->first_time;
	if (raw->time < e->first_time || now < e->now)
		return weft__emu_fail(e, "the clock goes backwards");
	e->now = now;
	int jumbo = (raw->flags & WEFT_EVENT_JUMBO) != 0;
	*ev = (weft__emu_ev){
		.raw = raw, .m = raw->code[0], .c = raw->code[1], .v = raw->code[2],
		.time = now, .thread = e->stream_thread[raw->stream],
		.payload = jumbo ? raw->data : raw->payload,
		.payload_size = jumbo ? (uint32_t)raw->data_size : raw->payload_size,
		.jumbo = jumbo, .big_endian = (raw->flags & WEFT_EVENT_BIG_ENDIAN) != 0,
	};
	return 0;
}

/* The handler of the event's model: the model must be known and enabled. */
static int dispatch(weft__emu *e, const weft__emu_ev *ev)
{
	unsigned char id = (unsigned char)ev->m;
	int mi = id < 128 ? e->model_by_id[id] : -1;
	if (mi < 0) {
		for (size_t m = 0; m < NKNOWN; m++)
			if (known_models[m]->id == ev->m)
				return weft__emu_fail(e, "model %s not enabled for event %c%c%c "
					"(missing ovni_thread_require(\"%s\", \"%s\")?)",
					known_models[m]->name, ev->m, ev->c, ev->v,
					known_models[m]->name, known_models[m]->version);
		return weft__emu_fail(e, "no model '%c' for event %c%c%c", ev->m, ev->m,
				      ev->c, ev->v);
	}
	const weft__emu_model_spec *spec = e->models[mi];
	return spec->event != NULL ? spec->event(e, ev) : 0;
}

int weft__emu_event(weft__emu *e, const weft_event *raw)
{
	weft__emu_ev ev;
	if (e->failed)
		return WEFT_EFORMAT;
	if (decode(e, raw, &ev) < 0) {
		const char *rule = e->error ? e->error : "bad event";
		char *file = NULL;
		if (raw->stream < weft_trace_stream_count(e->trace)) {
			const char *f = weft_trace_stream(e->trace, raw->stream)->file;
			if ((file = malloc(strlen(f) + 1)) != NULL)
				strcpy(file, f);
		}
		char *msg = malloc(strlen(rule) + 1);
		if (msg != NULL)
			strcpy(msg, rule);
		add_diag(e, WEFT_SEV_ERROR, file, raw->offset, msg);
		e->failed = 1;
		return WEFT_EFORMAT;
	}
	e->ev = &ev;
	int rc = dispatch(e, &ev);
	if (rc == 0)
		rc = weft__emu_propagate(e, 1);
	else
		weft__emu_propagate(e, 0);
	e->ev = NULL;
	e->events++;
	if (rc < 0) {
		if (e->sink_failed)
			return WEFT_EIO;
		event_failed(e, &ev);
		return WEFT_EFORMAT;
	}
	return 0;
}

int weft__emu_finish(weft__emu *e, int complete)
{
	if (!e->failed && !e->finished && complete) {
		e->finished = 1;
		for (uint32_t m = 0; m < e->nmodels; m++)
			if (e->models[m]->finish != NULL)
				e->models[m]->finish(e);
	}
	return e->failed ? WEFT_EFORMAT : 0;
}

void weft__emu_free(weft__emu *e)
{
	if (e == NULL)
		return;
	for (uint32_t m = 0; m < e->nmodels; m++)
		if (e->models[m]->free != NULL)
			e->models[m]->free(e);
	weft__emu_bd_free(e);
	free(e->scope);
	if (e->sys != NULL)
		weft__emu_engine_free(e);
	for (size_t i = 0; i < e->ndiags; i++) {
		free((char *)e->diags[i].d.file);
		free((char *)e->diags[i].d.message);
	}
	free(e->diags);
	free(e->error);
	free(e->stream_thread);
	weft__emu_system_free(e->sys);
	free(e);
}

const weft__emu_system *weft__emu_system_of(const weft__emu *e)
{
	return e->sys;
}

void weft__emu_set_origin(weft__emu *e, uint64_t first_time)
{
	e->started = 1;
	e->first_time = first_time;
}

void weft__emu_set_warning_sink(weft__emu *e, weft__emu_warning_fn fn, void *ctx)
{
	e->warning_fn = fn;
	e->warning_ctx = ctx;
}

void weft__emu_add_warning(weft__emu *e, uint64_t time, const char *file, uint64_t offset,
			   const char *message)
{
	char *f = file != NULL ? strdup(file) : NULL, *m = strdup(message);
	if (m == NULL || (file != NULL && f == NULL)) {
		free(f);
		free(m);
		return; /* as a warning that finds no memory */
	}
	add_diag_at(e, time, WEFT_SEV_WARNING, f, offset, m);
}

size_t weft__emu_error_count(const weft__emu *e)
{
	size_t n = 0;
	for (size_t i = 0; i < e->ndiags; i++)
		n += e->diags[i].d.severity == WEFT_SEV_ERROR;
	return n;
}

int weft__emu_set_scope(weft__emu *e, const uint8_t *streams)
{
	free(e->scope);
	e->scope = calloc(e->sys->nthreads ? e->sys->nthreads : 1, 1);
	if (e->scope == NULL)
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	for (uint32_t t = 0; streams != NULL && t < e->sys->nthreads; t++)
		e->scope[t] = streams[e->sys->threads[t].stream] != 0;
	return 0;
}

void weft__emu_set_handled(weft__emu *e, uint64_t first_time, uint64_t now, uint64_t events)
{
	weft__emu_set_origin(e, first_time);
	e->now = now;
	e->events = events;
}

uint64_t weft__emu_first_time(const weft__emu *e)
{
	return e->first_time;
}

uint64_t weft__emu_now(const weft__emu *e)
{
	return e->now;
}

uint64_t weft__emu_event_count(const weft__emu *e)
{
	return e->events;
}

int weft__emu_failed(const weft__emu *e)
{
	return e->failed;
}

/* ---- .pcf ----------------------------------------------------------------------------- */

/* The thread's own types: CPU affinity (labelled with the CPU rows), TID, state. */
static int thread_types(weft__emu *e, weft__emu_pcf *p)
{
	static const weft__emu_label states[] = {
		{ 0, "Unknown" }, { 1, "Running" }, { 2, "Paused" }, { 3, "Dead" },
		{ 4, "Cooling" }, { 5, "Warming" }, { 0, NULL }
	};
	weft__emu_pcf_type *cpu = weft__emu_pcf_type_add(p, 6, "Thread: CPU affinity");
	for (size_t c = 0; cpu != NULL && c < e->sys->ncpus; c++) {
		char label[64];
		weft__emu_row_label(e->sys, WEFT__EMU_CPU, c, label, sizeof label);
		if (weft__emu_pcf_add(cpu, (int64_t)c + 1, label) < 0)
			return WEFT_ENOMEM;
	}
	weft__emu_pcf_type *st = NULL;
	if (cpu == NULL || weft__emu_pcf_type_add(p, 2, "Thread: TID of the ACTIVE thread") == NULL ||
	    (st = weft__emu_pcf_type_add(p, 4, "Thread: thread state")) == NULL)
		return WEFT_ENOMEM;
	return weft__emu_pcf_add_list(st, states);
}

/* A model's channel types: prefix + the suffix of the row's tracking. */
static int model_types(weft__emu *e, const weft__emu_model_spec *m, weft__emu_kind kind,
		       weft__emu_pcf *p)
{
	static const char *const suffix[] = { "", "of the RUNNING thread",
					      "of the ACTIVE thread" };
	for (uint32_t i = 0; i < m->nchans; i++) {
		const weft__emu_chan_spec *c = &m->chans[i];
		char name[256];
		/* CPU rows follow the running thread, whatever the thread's tracking */
		int track = kind == WEFT__EMU_CPU ? WEFT__TRACK_RUN : c->track;
		snprintf(name, sizeof name, "%s %s", c->prefix, suffix[track]);
		weft__emu_pcf_type *t = weft__emu_pcf_type_add(p, c->type, name);
		if (t == NULL || weft__emu_pcf_add_list(t, c->labels) < 0)
			return WEFT_ENOMEM;
	}
	return m->pcf != NULL ? m->pcf(e, kind, p) : 0;
}

char *weft__emu_pcf_text(weft__emu *e, weft__emu_kind kind)
{
	weft__emu_pcf p = { 0 };
	int rc = kind == WEFT__EMU_THREAD ? thread_types(e, &p) : 0;
	if (kind == WEFT__EMU_THREAD || kind == WEFT__EMU_CPU)
		for (uint32_t m = 0; rc == 0 && m < e->nmodels; m++)
			rc = model_types(e, e->models[m], kind, &p);
	else
		rc = weft__emu_bd_pcf(e, kind, &p);
	char *text = rc == 0 ? weft__emu_pcf_render(&p) : NULL;
	weft__emu_pcf_clear(&p);
	return text;
}

/* ---- The traces ---------------------------------------------------------------------- */

int weft__emu_trace_on(const weft__emu *e, weft__emu_kind kind)
{
	return kind == WEFT__EMU_THREAD || kind == WEFT__EMU_CPU ||
	       (kind < WEFT__EMU_KINDS && weft__emu_bd_rows(e, kind) > 0);
}

const char *weft__emu_trace_name(weft__emu_kind kind)
{
	static const char *const names[] = { "thread", "cpu", "nanos6-breakdown",
					     "nosv-breakdown", "openmp-breakdown" };
	return kind < WEFT__EMU_KINDS ? names[kind] : NULL;
}

/* The rows of a breakdown, "~CPU   16" down to "~CPU    1" (ovniemu's labels). */
static char *bd_row_text(uint32_t n)
{
	size_t cap = 64 + (size_t)n * 16, len;
	char *text = malloc(cap);
	if (text == NULL)
		return NULL;
	len = (size_t)snprintf(text, cap, "LEVEL NODE SIZE 1\nhostname\n\nLEVEL THREAD SIZE %"
			       PRIu32 "\n", n);
	for (uint32_t r = 0; r < n; r++)
		len += (size_t)snprintf(text + len, cap - len, "~CPU %4" PRIu32 "\n", n - r);
	return text;
}

uint32_t weft__emu_trace_rows(const weft__emu *e, weft__emu_kind kind)
{
	if (kind == WEFT__EMU_THREAD)
		return (uint32_t)e->sys->nthreads;
	if (kind == WEFT__EMU_CPU)
		return (uint32_t)e->sys->ncpus;
	return weft__emu_bd_rows(e, kind);
}

char *weft__emu_trace_row_text(const weft__emu *e, weft__emu_kind kind)
{
	if (kind == WEFT__EMU_THREAD || kind == WEFT__EMU_CPU)
		return weft__emu_row_text(e->sys, kind);
	return bd_row_text(weft__emu_bd_rows(e, kind));
}

char *weft__emu_trace_prv_header(const weft__emu *e, weft__emu_kind kind, uint64_t duration)
{
	if (kind == WEFT__EMU_THREAD || kind == WEFT__EMU_CPU)
		return weft__emu_prv_header(e->sys, kind, duration);
	char *text = malloc(128);
	if (text != NULL)
		snprintf(text, 128, "#Paraver (19/01/38 at 03:14):%020" PRIu64
			 "_ns:0:1:1(%" PRIu32 ":1)\n", duration, weft__emu_bd_rows(e, kind));
	return text;
}
