/* SPDX-License-Identifier: MIT */
/*
 * outputs/convert_pallas.c - weft_convert() to pallas (`weft convert TRACE
 * -t pallas -o DIR`): any trace weft reads becomes a Pallas 0.20 trace
 * written by libweft's Pallas writer (weft/pallas.h). The mapping (docs/convert-pallas.md):
 *
 *   - the parent node of each stream (an ovni process, a Heph stream, a
 *     ROSS KP...) is a location group with an archive, its ancestors are
 *     location groups too (the hierarchy is kept through their parents);
 *     each stream with a selected event is a location (a thread) of its
 *     parent's group, named after its node;
 *   - ENTER / LEAVE events (weft_event_classify(): ovni enter/leave pairs,
 *     thread running state, stack marks, Pallas Enter/Leave) become
 *     Enter / Leave of a region named after the span (the class name),
 *     as long as the LEAVE closes the innermost open span; any other
 *     LEAVE is a Generic event (Pallas's Leave always closes the
 *     innermost block);
 *   - INTERVAL events (Heph) become an Enter at their start and a Leave
 *     at their end, written when the next event of the thread starts
 *     after it (a stack of pending Leaves per thread); an interval that
 *     overlaps the open one without nesting is a Generic event with its
 *     end as the attribute `weft.end`;
 *   - every other event is a Generic event named after its code;
 *   - the original code is the attribute `weft.code` of an Enter or Leave
 *     (unless the Pallas record says it), decoded fields are typed
 *     attributes, and the stored bytes are `weft.payload_size` and u64
 *     chunks `weft.payload.<i>`.
 *
 * This is the writer of the pallas output (weft/writer.h, outputs/writer.h):
 * the caller pushes each stream's events in time order and ends each
 * stream (its thread is then written and freed); streams not ended are
 * ended at finish, in stream order.
 *
 * Memory: weft_convert() (outputs/convert.c) converts the streams one at
 * a time (one thread writer open; shared among N threads, one per
 * thread: convert_pallas_shared.c), each through its own cursor; formats
 * whose streams share their files (ROSS) are read in passes over the
 * files, a batch of streams per pass.
 * The span stack of a thread is bounded (SPAN_DEPTH_MAX), interned
 * strings used as attribute values too (STRING_VALUE_BUDGET). The Pallas
 * writer itself keeps a thread's attribute lists until the thread is
 * closed (docs/convert-pallas.md, Limits).
 *
 * The output is written to a temporary directory next to DIR, renamed
 * over DIR at the end (an existing DIR is replaced only with --force, and
 * only when it is a Pallas trace or empty). With remove_on_signal, SIGINT,
 * SIGTERM and SIGHUP stop the conversion, remove the temporary directory
 * and end the process with the signal.
 *
 * This file: the records, the streams and the conversion; the tables and
 * definitions are in convert_pallas_defs.c, the attribute lists in
 * convert_pallas_attrs.c, the output directory in outputs/outdir.c, the
 * streams shared among threads and ranks in convert_pallas_shared.c
 * (shared declarations: convert_pallas.h).
 */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "outputs/convert_pallas.h"
#include "outputs/outdir.h"
#include "weft/pallas_grammar.h"

static volatile sig_atomic_t interrupted;

/* ---- Interrupts -------------------------------------------------------------------------- */

/* Remembers the signal; the event loops stop and the temporary directory goes. */
static void on_signal(int sig)
{
	interrupted = sig;
}

static const int watched_signals[] = { SIGINT, SIGTERM, SIGHUP };
#define WATCHED_COUNT (sizeof watched_signals / sizeof watched_signals[0])

/*
 * Installs (`old` != NULL: saving the previous handlers) or restores the
 * handlers of the signals that end a command, so that an interrupted
 * conversion removes its temporary directory. Ignored signals stay so.
 */
static void watch_signals(struct sigaction *old, const struct sigaction *restore)
{
	for (size_t i = 0; i < WATCHED_COUNT; i++) {
		if (restore != NULL) {
			sigaction(watched_signals[i], &restore[i], NULL);
			continue;
		}
		struct sigaction sa;
		memset(&sa, 0, sizeof sa);
		sa.sa_handler = on_signal;
		sigemptyset(&sa.sa_mask);
		if (sigaction(watched_signals[i], NULL, &old[i]) == 0 &&
		    old[i].sa_handler != SIG_IGN)
			sigaction(watched_signals[i], &sa, NULL);
	}
}

/* ---- Threads ------------------------------------------------------------------------------- */

/* Starts selected stream number `loc` (its thread comes with its first event). */
static void stream_begin(conv *c, stream_out *s, uint32_t loc)
{
	memset(s, 0, sizeof *s);
	s->stream = c->selected[loc];
	s->index = loc;
}

/*
 * The stream's location and thread writer, made at its first event (a
 * part of a shared conversion knows its location from the plan: placed).
 */
static int stream_thread(conv *c, stream_out *s)
{
	if (s->thread != NULL)
		return 0;
	if (!s->placed && weft__pconv_add_location(c, s->index, &s->group, &s->location) < 0)
		return -1;
	int rc = c->target->thread_begin(c, s);
	return rc < 0 ? weft__pconv_writer_error(c, "cannot start a thread", rc) : 0;
}

/* ---- Records ------------------------------------------------------------------------------- */

/* Pushes an open block on the thread's stack (bounded by SPAN_DEPTH_MAX). */
static int push_span(conv *c, stream_out *s, const span *sp)
{
	if (s->depth == s->cap) {
		uint32_t cap = s->cap ? s->cap * 2 : 16;
		span *st = realloc(s->stack, cap * sizeof *st);
		if (st == NULL)
			return weft__pconv_out_of_memory(c);
		s->stack = st;
		s->cap = cap;
	}
	s->stack[s->depth++] = *sp;
	return 0;
}

/* The innermost open block, or NULL. */
static span *top_span(const stream_out *s)
{
	return s->depth > 0 ? &s->stack[s->depth - 1] : NULL;
}

/* 1 when the name the event would give a region is its code. */
static int name_is_code(const weft_event *ev, const char *name)
{
	return strlen(name) == ev->code_len && memcmp(name, ev->code, ev->code_len) == 0;
}

/*
 * A Generic event: named after the code, with the fields and payload as
 * attributes, and its end as `weft.end` when it stands for a whole
 * interval.
 */
static int write_generic(conv *c, stream_out *s, const weft_event *ev, int nfields,
			 const uint64_t *end)
{
	attr_plan p = { 0, end, 0, nfields };
	weft_pallas_attrs a;
	uint32_t name;
	if (weft__pconv_intern(c, ev->code, ev->code_len, &name, NULL) < 0 ||
	    weft__pconv_build_attrs(c, ev, &p, &a) < 0)
		return -1;
	int rc = c->target->record(c, s, &a, ev->time, REC_GENERIC, name);
	return rc < 0 ? weft__pconv_writer_error(c, "cannot write an event", rc) : 0;
}

/*
 * An Enter of the region named after the span (the class name, else the
 * code), with weft.code when the region's name is not the code; opens a
 * block as `sp` describes it (a span or an interval). Deeper than
 * SPAN_DEPTH_MAX: a Generic event.
 */
static int write_enter(conv *c, stream_out *s, const weft_event *ev,
		       const weft_event_class *cls, int nfields, const span *sp)
{
	if (s->depth >= c->target->depth_max) {
		c->stats.depth_fallbacks++;
		return write_generic(c, s, ev, nfields,
				     sp->kind == SPAN_INTERVAL ? &sp->end : NULL);
	}
	const char *name = cls->name;
	uint32_t len = name != NULL ? (uint32_t)strlen(name) : ev->code_len;
	span pushed = *sp;
	attr_plan p = { 0, NULL, 0, nfields };
	weft_pallas_attrs a;
	p.with_code = name == NULL ? 0 : !name_is_code(ev, name);
	if (weft__pconv_region_ref(c, name != NULL ? name : ev->code, len, &pushed.region) < 0 ||
	    weft__pconv_build_attrs(c, ev, &p, &a) < 0)
		return -1;
	int rc = c->target->record(c, s, &a, ev->time, REC_ENTER, pushed.region);
	if (rc < 0)
		return weft__pconv_writer_error(c, "cannot write an event", rc);
	return push_span(c, s, &pushed);
}

/* 1 when two channels are the same timeline (NULL: the stream's own). */
static int same_channel(const char *a, const char *b)
{
	return a == b || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

/* 1 when the open block `sp` is the span that a LEAVE of class `cls` closes. */
static int closes(const span *sp, const weft_event_class *cls)
{
	return sp->kind == SPAN_ENTER && !sp->orphan && sp->pair_key == cls->pair_key &&
	       same_channel(sp->channel, cls->channel);
}

/*
 * A LEAVE that closes the innermost open block becomes its Leave (with
 * weft.code: the original code); any other LEAVE is a Generic event, and
 * the span it closes stays open in Pallas (marked, so that no later LEAVE
 * takes it for its own).
 */
static int write_leave(conv *c, stream_out *s, const weft_event *ev,
		       const weft_event_class *cls, int nfields)
{
	span *top = top_span(s);
	if (top == NULL || !closes(top, cls)) {
		for (uint32_t i = s->depth; i-- > 0;) {
			if (closes(&s->stack[i], cls)) {
				s->stack[i].orphan = 1;
				break;
			}
		}
		c->stats.leave_fallbacks++;
		return write_generic(c, s, ev, nfields, NULL);
	}
	attr_plan p = { 1, NULL, 0, nfields };
	weft_pallas_attrs a;
	if (weft__pconv_build_attrs(c, ev, &p, &a) < 0)
		return -1;
	int rc = c->target->record(c, s, &a, ev->time, REC_LEAVE, top->region);
	if (rc < 0)
		return weft__pconv_writer_error(c, "cannot write an event", rc);
	s->depth--;
	return 0;
}

/*
 * Writes the pending Leaves of intervals that end before an event at
 * `time` (depth `depth` in its call tree, -1 when unknown): those that end
 * earlier, and those that end at `time` unless the event is deeper (a
 * zero-length child at its parent's end). At the end of a thread, every
 * pending Leave (time UINT64_MAX).
 */
static int flush_intervals(conv *c, stream_out *s, uint64_t time, int32_t depth)
{
	span *top;
	while ((top = top_span(s)) != NULL && top->kind == SPAN_INTERVAL &&
	       (top->end < time || (top->end == time && !(depth >= 0 && depth > top->depth)))) {
		int rc = c->target->record(c, s, NULL, top->end, REC_LEAVE, top->region);
		if (rc < 0)
			return weft__pconv_writer_error(c, "cannot write an event", rc);
		s->depth--;
	}
	return 0;
}

/*
 * An interval: an Enter at its start, its Leave pending until the thread
 * reaches its end. When it overlaps the open interval without nesting in
 * it (ending later), it is one Generic event with weft.end.
 */
static int write_interval(conv *c, stream_out *s, const weft_event *ev,
			  const weft_event_class *cls, int nfields)
{
	span sp = { NULL, 0, ev->end < ev->time ? ev->time : ev->end, 0, ev->depth,
		    SPAN_INTERVAL, 0, 0 };
	const span *top = top_span(s);
	if (top != NULL && top->kind == SPAN_INTERVAL && top->end < sp.end) {
		c->stats.interval_fallbacks++;
		return write_generic(c, s, ev, nfields, &sp.end);
	}
	return write_enter(c, s, ev, cls, nfields, &sp);
}

/*
 * The payload of a Pallas source's record, its reference renumbered: an
 * Enter's or Leave's region, a Generic's name (the first payload field is
 * its text). Other payloads are kept as they are (numbers: peers,
 * communicators, tags, sizes, requests, locks, tasks). *bytes points to
 * `buf` or to the event's payload. 0 or -1.
 */
static int record_payload(conv *c, const weft_event *ev, int32_t record, int payload_fields,
			  uint8_t buf[4], const uint8_t **bytes)
{
	*bytes = ev->payload;
	int region = record == REC_ENTER || record == REC_LEAVE;
	if ((!region && record != REC_GENERIC) || payload_fields != 2 ||
	    c->fields[0].type != WEFT_TYPE_STR)
		return 0;
	const char *text = c->fields[0].v.s.ptr;
	uint32_t len = (uint32_t)c->fields[0].v.s.len, ref;
	int rc = region ? weft__pconv_region_ref(c, text, len, &ref)
			: weft__pconv_intern(c, text, len, &ref, NULL);
	memcpy(buf, &ref, 4); /* little-endian hosts only (weft/pallas.h) */
	*bytes = buf;
	return rc;
}

/*
 * The role a Pallas source's record gets: its own, except that a block
 * start with SPAN_DEPTH_MAX blocks open (more than Pallas 0.20 reads) is
 * a plain event, and so is the end that closes it. Keeps the stack of
 * open blocks. -1 when out of memory.
 */
static int record_role(conv *c, stream_out *s, int role)
{
	if (role == WEFT_PALLAS_ROLE_BLOCK_START) {
		span sp = { .kind = SPAN_ENTER, .depth = -1, .flat = s->depth >= SPAN_DEPTH_MAX };
		c->stats.depth_fallbacks += sp.flat;
		return push_span(c, s, &sp) < 0 ? -1 : sp.flat ? WEFT_PALLAS_ROLE_SINGLE : role;
	}
	if (role == WEFT_PALLAS_ROLE_BLOCK_END && s->depth > 0)
		return s->stack[--s->depth].flat ? WEFT_PALLAS_ROLE_SINGLE : role;
	return WEFT_PALLAS_ROLE_SINGLE;
}

/*
 * An event of a Pallas source: the same record (kind, payload with its
 * reference renumbered, block role), with the occurrence's attributes.
 */
static int write_record(conv *c, stream_out *s, const weft_event *ev)
{
	weft_pallas_record_info ri;
	uint8_t buf[4];
	const uint8_t *bytes;
	weft_pallas_attrs a;
	if (weft_pallas_event_record(c->trace, ev, &ri) < 0)
		return weft__pconv_writer_error(c, "cannot read a record", WEFT_EUNSUPPORTED);
	int nfields = weft__pconv_decode_fields(c, ev);
	attr_plan p = { 0, NULL, ri.payload_fields, nfields };
	int role = record_role(c, s, ri.role);
	if (role < 0 || record_payload(c, ev, ri.record, ri.payload_fields, buf, &bytes) < 0 ||
	    weft__pconv_build_attrs(c, ev, &p, &a) < 0)
		return -1;
	int rc = c->target->raw(c, s, &a, ev->time, ri.record, role, bytes, ev->payload_size);
	return rc < 0 ? weft__pconv_writer_error(c, "cannot write an event", rc) : 0;
}

/* One event of a stream: classified, then written as its role says. */
static int convert_event(conv *c, stream_out *s, const weft_event *ev)
{
	if (c->same_format)
		return stream_thread(c, s) < 0 ? -1 : write_record(c, s, ev);
	weft_event_class cls;
	weft_event_classify(c->trace, ev, &cls);
	if (stream_thread(c, s) < 0 || flush_intervals(c, s, ev->time, ev->depth) < 0)
		return -1;
	int nfields = weft__pconv_decode_fields(c, ev);
	switch (cls.role) {
	case WEFT_ROLE_ENTER: {
		span sp = { cls.channel, cls.pair_key, 0, 0, -1, SPAN_ENTER, 0, 0 };
		return write_enter(c, s, ev, &cls, nfields, &sp);
	}
	case WEFT_ROLE_LEAVE:
		return write_leave(c, s, ev, &cls, nfields);
	case WEFT_ROLE_INTERVAL:
		return write_interval(c, s, ev, &cls, nfields);
	default:
		if (c->target->mpi != NULL && cls.category != NULL &&
		    strcmp(cls.category, "mpi") == 0) {
			int rc = c->target->mpi(c, s, ev, nfields);
			if (rc != 0)
				return rc < 0 ? weft__pconv_writer_error(c, "cannot write an event",
									 rc) : 0;
		}
		return write_generic(c, s, ev, nfields, NULL);
	}
}

/* ---- Streams ------------------------------------------------------------------------------- */

/*
 * Ends a stream: the pending Leaves of its intervals, then its thread
 * file (`ok`), or abandons its writer (nothing written). Blocks of spans
 * whose LEAVE never came are closed by the writer without an event. A
 * stream without any selected event has no thread.
 */
int weft__pconv_stream_end(conv *c, stream_out *s, int ok)
{
	int rc = 0;
	if (ok && s->thread != NULL && flush_intervals(c, s, UINT64_MAX, -1) < 0)
		ok = 0, rc = -1;
	if (s->thread != NULL && (rc = c->target->thread_end(c, s, ok)) < 0)
		rc = weft__pconv_writer_error(c, "cannot write a thread", rc);
	free(s->stack);
	memset(s, 0, sizeof *s);
	return ok ? rc : -1;
}

/* Prints what the mapping had to adapt (see docs/convert-pallas.md). */
static void report_notes(const conv *c)
{
	const conv_stats *s = &c->stats;
	if (s->leave_fallbacks)
		weft__convert_say(c->report, "note: %" PRIu64 " leave event(s) did not close the "
			"innermost open span: written as Generic events", s->leave_fallbacks);
	if (s->interval_fallbacks)
		weft__convert_say(c->report, "note: %" PRIu64 " interval(s) overlap an open one "
			"without nesting in it: written as Generic events with weft.end",
			s->interval_fallbacks);
	if (s->depth_fallbacks)
		weft__convert_say(c->report, "warning: %" PRIu64 " block(s) would nest deeper "
			"than %d, which Pallas 0.20 cannot read: written as %s",
			s->depth_fallbacks, c->target->depth_max, c->same_format ?
			"plain events (the record without its block)" : "Generic events");
	if (s->strings_left_out)
		weft__convert_say(c->report, "note: %" PRIu64 " string value(s) not kept as "
			"attributes (too long, or over the %u MiB of strings); the payload "
			"attributes keep their bytes", s->strings_left_out, STRING_VALUE_BUDGET >> 20);
	if (s->payloads_cut || s->fields_left_out)
		weft__convert_say(c->report, "note: %" PRIu64 " payload(s) and %" PRIu64
			" field(s) did not fit in Pallas attribute lists (%d values, %d bytes)",
			s->payloads_cut, s->fields_left_out, WEFT_PALLAS_ATTRS_MAX,
			WEFT_PALLAS_ATTRS_BYTES);
}

/* OUT without its trailing slashes (malloc'd), NULL when empty. */
static char *output_path(const char *output)
{
	size_t n = output != NULL ? strlen(output) : 0;
	while (n > 1 && output[n - 1] == '/')
		n--;
	if (n == 0)
		return NULL;
	char *p = malloc(n + 1);
	if (p != NULL) {
		memcpy(p, output, n);
		p[n] = '\0';
	}
	return p;
}


/* ---- The writer --------------------------------------------------------------------------- */

void weft__pconv_free(conv *c)
{
	if (c->target != NULL)
		c->target->free(c);
	weft__pconv_str_free(&c->strings);
	weft__pconv_map_free(&c->attributes);
	free(c->node_group);
	free(c->archives);
	free(c->selected);
	free(c->next_location);
	free(c->tmp_dir);
	free(c->outs);
	free(c->loc_of);
	free(c->out);
	free(c);
}

/*
 * Ends a conversion that has begun: every stream still open (`ok`: its
 * thread written, else abandoned), the target's other files, then
 * DIR put in place (`ok`) or the temporary directory removed; the
 * handlers of signals restored; the notes, the trace's diagnostics and
 * whether data was lost said (report.data_lost). A signal that came meanwhile ends the
 * process, as it would have. 0, or WEFT_EIO when DIR was not written.
 */
static int conv_close(conv *c, int ok)
{
	if (c->follower) { /* rank 0 ends the output */
		for (uint32_t loc = 0; loc < c->selected_count; loc++)
			weft__pconv_stream_end(c, &c->outs[loc], 0);
		weft__pconv_free(c);
		return ok ? 0 : WEFT_EIO;
	}
	ok = ok && !interrupted;
	for (uint32_t loc = 0; loc < c->selected_count; loc++)
		if (weft__pconv_stream_end(c, &c->outs[loc], ok) < 0)
			ok = 0;
	int rc = ok && c->started ? c->target->store(c) : 0;
	if (rc < 0)
		weft__pconv_writer_error(c, "cannot write the trace", rc);
	ok = ok && c->started && rc == 0;
	c->target->free(c);
	rc = ok && !interrupted ? weft__outdir_commit(c->report, c->tmp_dir, c->out,
							     c->replace) : -1;
	if (c->watching)
		watch_signals(NULL, c->old_handlers);
	if (rc < 0 && c->tmp_dir != NULL)
		weft__outdir_remove_tree(c->tmp_dir);
	if (rc == 0)
		report_notes(c);
	c->report->leave_fallbacks = c->stats.leave_fallbacks;
	c->report->interval_fallbacks = c->stats.interval_fallbacks;
	c->report->depth_fallbacks = c->stats.depth_fallbacks;
	c->report->strings_left_out = c->stats.strings_left_out;
	c->report->payloads_cut = c->stats.payloads_cut;
	c->report->fields_left_out = c->stats.fields_left_out;
	/* in stream order, as the streams are converted, whatever the parts */
	weft__trace_diags_sort(c->trace, c->diag_from);
	int lost = weft__convert_diags(c->report, c->trace) || c->lost;
	int sig = interrupted;
	c->report->data_lost = lost;
	weft__pconv_free(c);
	if (sig) {
		signal(sig, SIG_DFL);
		raise(sig);
	}
	return rc < 0 ? WEFT_EIO : 0;
}

int weft__pconv_prepare(conv *c, const uint32_t *selected, uint32_t count)
{
	size_t n = weft_trace_stream_count(c->trace);
	c->selected = malloc((count ? count : 1) * sizeof *c->selected);
	c->outs = calloc(count ? count : 1, sizeof *c->outs);
	c->loc_of = malloc((n ? n : 1) * sizeof *c->loc_of);
	if (c->selected == NULL || c->outs == NULL || c->loc_of == NULL)
		return weft__pconv_out_of_memory(c);
	memcpy(c->selected, selected, count * sizeof *selected);
	c->selected_count = count;
	for (size_t i = 0; i < n; i++)
		c->loc_of[i] = NONE;
	for (uint32_t loc = 0; loc < c->selected_count; loc++) {
		stream_begin(c, &c->outs[loc], loc);
		c->loc_of[c->selected[loc]] = loc;
	}
	c->same_format = c->target->raw_records &&
			 weft_trace_format(c->trace) == WEFT_FORMAT_PALLAS;
	c->payload_is_fields = c->trace->backend->payload_is_fields;
	/* A test-only smaller budget, so that tests reach it with small traces. */
	const char *budget = getenv("WEFT_TEST_PALLAS_VALUE_BUDGET");
	c->value_budget = budget != NULL ? strtoull(budget, NULL, 10) : STRING_VALUE_BUDGET;
	return 0;
}

int weft__pconv_prepare_marked(conv *c, const uint8_t *selected)
{
	size_t n = weft_trace_stream_count(c->trace);
	uint32_t *chosen = malloc((n ? n : 1) * sizeof *chosen), count = 0;
	if (chosen == NULL)
		return weft__pconv_out_of_memory(c);
	for (size_t i = 0; i < n; i++)
		if (selected[i])
			chosen[count++] = (uint32_t)i;
	int rc = weft__pconv_prepare(c, chosen, count);
	free(chosen);
	return rc;
}

/*
 * What is written before the events: the streams' places, the temporary
 * directory, the handlers of signals (remove_on_signal), the main file's
 * writer and the definitions. 0 or -1 after saying why.
 */
static int conv_start(conv *c, const uint8_t *selected)
{
	if (weft__pconv_prepare_marked(c, selected) < 0)
		return -1;
	c->diag_from = weft_trace_diag_count(c->trace);
	if ((c->tmp_dir = weft__outdir_make_sibling(c->report, c->out, "tmp")) == NULL)
		return -1;
	interrupted = 0;
	if (c->job->options->remove_on_signal) {
		watch_signals(c->old_handlers, NULL);
		c->watching = 1;
	}
	int rc = c->target->start(c);
	if (rc < 0)
		return weft__pconv_writer_error(c, "cannot start the trace", rc);
	c->started = 1;
	return weft__pconv_define_structure(c);
}

/* 1 when a directory entry belongs to a Pallas trace (or its leftovers). */
static int pallas_entry(const char *name)
{
	size_t n = strlen(name);
	return strncmp(name, "archive_", 8) == 0 ||
	       (n > 7 && strcmp(name + n - 7, ".pallas") == 0) ||
	       (n > 11 && strcmp(name + n - 11, ".pallas.tmp") == 0);
}

static const weft__outdir_kind pallas_dir = { "a Pallas trace", pallas_entry };

/*
 * Starts a trace of `target` in a temporary directory next to DIR, after
 * checking DIR. Its events: each stream's in time order, with the
 * options' window and code glob on the cursor.
 */
int weft__pconv_writer_create(weft_output_writer *w, const conv_target *target)
{
	weft_convert_report *r = w->job.report;
	int replace = 0, rc = 0;
	char *out = output_path(w->options.path);
	if (out == NULL) {
		weft__convert_say(r, "missing the output directory: -o DIR");
		return WEFT_EINVAL;
	}
	if (!w->follower) /* rank 0 checks DIR */
		rc = weft__outdir_check(r, out, w->options.force, target->dir_kind, &replace);
	conv *c = rc < 0 ? NULL : calloc(1, sizeof *c);
	if (c == NULL) {
		if (rc == 0)
			weft__convert_say(r, "out of memory");
		free(out);
		return rc < 0 ? rc : WEFT_ENOMEM;
	}
	c->job = &w->job;
	c->target = target;
	c->report = r;
	c->trace = w->job.trace;
	c->out = out;
	c->replace = replace;
	/* Threads are written in time order (Heph: parents before their
	 * children), whatever order the trace was opened in. */
	w->filter.order = WEFT_ORDER_TIME;
	c->filter = w->filter;
	if (w->follower ? weft__pconv_follow(c, w->selected) < 0 : conv_start(c, w->selected) < 0) {
		conv_close(c, 0);
		return WEFT_EIO;
	}
	w->impl = c;
	return 0;
}

int weft__pconv_event(conv *c, const weft_event *ev)
{
	uint32_t loc = c->loc_of[ev->stream];
	const char *path = weft_trace_stream(c->trace, ev->stream)->path;

	if (loc == NONE)
		return weft__error(WEFT_EINVAL, NULL, WEFT_NO_OFFSET, "an event of stream %s, "
				   "which the stream pattern leaves out", path);
	stream_out *s = &c->outs[loc];
	if (s->thread != NULL && ev->time < s->last_time)
		return weft__error(WEFT_EINVAL, NULL, WEFT_NO_OFFSET, "an event at %" PRIu64
				   " ns of stream %s after one at %" PRIu64 " ns: a thread's "
				   "events come in time order", ev->time, path, s->last_time);
	if (interrupted)
		return weft__error(WEFT_EIO, NULL, WEFT_NO_OFFSET, "interrupted by signal %d",
				   (int)interrupted);
	if (convert_event(c, s, ev) < 0)
		return weft__error(WEFT_EIO, NULL, WEFT_NO_OFFSET, "the %s output failed",
				   c->target->what);
	s->last_time = ev->time;
	return 0;
}

/*
 * One event of a selected stream, not earlier than the stream's last:
 * written as its role says (its thread is made at its first event).
 */
int weft__pconv_writer_event(weft_output_writer *w, const weft_event *ev)
{
	return weft__pconv_event(w->impl, ev);
}

/* A stream's last event has come: its thread is written now. */
int weft__pconv_writer_end_stream(weft_output_writer *w, uint32_t stream)
{
	conv *c = w->impl;
	uint32_t loc = c->loc_of[stream];

	if (loc == NONE)
		return 0;
	return weft__pconv_stream_end(c, &c->outs[loc], !interrupted) < 0 ? WEFT_EIO : 0;
}

/* The caller's reading stopped: said now; the conversion goes on. */
void weft__pconv_writer_read_failed(weft_output_writer *w, uint32_t stream,
				    const char *message)
{
	conv *c = w->impl;

	if (stream == WEFT_OUTPUT_ALL_STREAMS)
		weft__convert_say(c->report, "error: reading stopped: %s", message);
	else
		weft__convert_say(c->report, "error: %s: reading stopped: %s",
				  weft_trace_stream(c->trace, stream)->path, message);
	c->lost = 1;
}

/* Writes what is left and puts DIR in place (`failed`: removes it all). */
int weft__pconv_writer_finish(weft_output_writer *w, int failed)
{
	int rc = conv_close(w->impl, !failed);

	w->impl = NULL;
	return rc;
}

/* Without finish: the temporary directory goes, DIR stays as it was. */
void weft__pconv_writer_free(weft_output_writer *w)
{
	conv *c = w->impl;

	w->impl = NULL;
	if (c != NULL)
		conv_close(c, 0);
}

/* ---- The Pallas target ------------------------------------------------------------------- */

/* The main file's writer; its global definitions take the strings. */
static int pallas_start(conv *c)
{
	weft_pallas_write_options o;
	weft_pallas_write_options_init(&o);
	o.sync = 0; /* the whole tree when committed (weft__outdir_commit) */
	int rc = weft_pallas_global_create(c->tmp_dir, MAIN_NAME, &o, &c->global);
	if (rc < 0)
		return rc;
	weft__trace_threads_note(c->job->trace, 1 + o.compress_threads);
	c->defs = weft_pallas_global_defs(c->global);
	return 0;
}

static int pallas_string(conv *c, const char *text, uint32_t *ref)
{
	return weft_pallas_register_string(c->defs, text, ref);
}

static int pallas_region(conv *c, uint32_t ref, uint32_t name)
{
	return weft_pallas_add_region(c->defs, ref, name);
}

/* An attribute whose description is its name. */
static int pallas_attribute(conv *c, uint32_t ref, uint32_t name, int type)
{
	return weft_pallas_add_attribute(c->defs, ref, name, name, type);
}

/* A location group and its archive (ids follow each other from 0). */
static int pallas_group(conv *c, uint32_t id, uint32_t name, uint32_t parent)
{
	if (c->group_count == c->group_cap) {
		uint32_t cap = c->group_cap ? c->group_cap * 2 : 16;
		weft_pallas_archive **a = realloc(c->archives, cap * sizeof *a);
		if (a == NULL)
			return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
		c->archives = a;
		c->group_cap = cap;
	}
	int rc = weft_pallas_add_location_group(c->defs, id, name,
						parent == NONE ? WEFT_PALLAS_NO_PARENT : parent);
	return rc < 0 ? rc : weft_pallas_archive_create(c->global, id, &c->archives[id]);
}

/* Metadata of a location group: its archive's. */
static int pallas_group_metadata(conv *c, uint32_t group, const char *key, const char *value)
{
	return weft_pallas_add_metadata(weft_pallas_archive_defs(c->archives[group]), key, value);
}

static int pallas_location(conv *c, uint32_t group, uint32_t id, uint32_t name,
			   uint32_t stream)
{
	(void)stream;
	return weft_pallas_add_location(weft_pallas_archive_defs(c->archives[group]), id, name,
					group);
}

static int pallas_metadata(conv *c, const char *key, const char *value)
{
	return weft_pallas_add_metadata(c->defs, key, value);
}

static int pallas_thread_begin(conv *c, stream_out *s)
{
	weft_pallas_thread *t = NULL;
	int rc = weft_pallas_thread_create(c->archives[s->group], s->location, &t);
	s->thread = t;
	return rc;
}

static int pallas_record(conv *c, stream_out *s, const weft_pallas_attrs *a, uint64_t time,
			 int kind, uint32_t ref)
{
	(void)c;
	return kind == REC_ENTER ? weft_pallas_record_enter(s->thread, a, time, ref)
	     : kind == REC_LEAVE ? weft_pallas_record_leave(s->thread, a, time, ref)
	     : weft_pallas_record_generic(s->thread, a, time, ref);
}

static int pallas_raw(conv *c, stream_out *s, const weft_pallas_attrs *a, uint64_t time,
		      int record, int role, const uint8_t *payload, size_t size)
{
	(void)c;
	return weft_pallas_record_raw(s->thread, a, time, record, role, payload, size);
}

/* Writes the thread's file (`ok`) and frees its writer. */
static int pallas_thread_end(conv *c, stream_out *s, int ok)
{
	(void)c;
	int rc = ok ? weft_pallas_thread_close(s->thread) : 0;
	weft_pallas_thread_free(s->thread);
	s->thread = NULL;
	return rc;
}

/* Every archive file (all their threads are closed by now), then the main file. */
static int pallas_store(conv *c)
{
	for (uint32_t g = 0; g < c->group_count; g++) {
		int rc = weft_pallas_archive_store(c->archives[g]);
		if (rc < 0)
			return rc;
	}
	return weft_pallas_global_store(c->global);
}

static void pallas_free(conv *c)
{
	weft_pallas_global_free(c->global);
	c->global = NULL;
	c->defs = NULL;
}

const conv_target weft__pconv_pallas_target = {
	"Pallas", &pallas_dir, SPAN_DEPTH_MAX, 1, pallas_start, pallas_string, pallas_region,
	pallas_attribute, pallas_group, pallas_group_metadata, pallas_location,
	pallas_metadata, pallas_thread_begin, pallas_record, pallas_raw, NULL, pallas_thread_end,
	pallas_store, pallas_free, NULL, NULL, NULL
};

static int pallas_writer_create(weft_output_writer *w)
{
	return weft__pconv_writer_create(w, &weft__pconv_pallas_target);
}

const weft__writer_ops weft__pallas_writer_ops = {
	1, pallas_writer_create, weft__pconv_writer_event, weft__pconv_writer_end_stream,
	weft__pconv_writer_read_failed, weft__pconv_writer_finish, weft__pconv_writer_free, 0,
	weft__pconv_convert_shared
};
