/* SPDX-License-Identifier: MIT */
/*
 * outputs/convert_pallas.c - weft_convert() to pallas (`weft convert TRACE
 * --to pallas -o DIR`): any trace weft reads becomes a Pallas 0.20 trace
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
 * Memory: streams are converted one at a time (one thread writer open),
 * each through its own cursor; formats whose streams share their files
 * (ROSS) are read in passes over the files, a batch of streams per pass.
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
 * convert_pallas_attrs.c, the output directory in convert_pallas_output.c
 * (shared declarations: convert_pallas.h).
 */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "outputs/convert_pallas.h"
#include "weft/pallas_grammar.h"

/* Pallas record kinds whose payload holds a reference (docs/pallas-writer.md). */
#define REC_ENTER 2
#define REC_LEAVE 3
#define REC_GENERIC 58

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

/* The stream's location and thread writer, made at its first event. */
static int stream_thread(conv *c, stream_out *s)
{
	if (s->thread != NULL)
		return 0;
	if (weft__pconv_add_location(c, s->index, &s->group, &s->location) < 0)
		return -1;
	int rc = weft_pallas_thread_create(c->archives[s->group], s->location, &s->thread);
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
	int rc = weft_pallas_record_generic(s->thread, &a, ev->time, name);
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
	if (s->depth >= SPAN_DEPTH_MAX) {
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
	int rc = weft_pallas_record_enter(s->thread, &a, ev->time, pushed.region);
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
	int rc = weft_pallas_record_leave(s->thread, &a, ev->time, top->region);
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
		int rc = weft_pallas_record_leave(s->thread, NULL, top->end, top->region);
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
	int rc = weft_pallas_record_raw(s->thread, &a, ev->time, ri.record, role, bytes,
					ev->payload_size);
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
static int stream_end(conv *c, stream_out *s, int ok)
{
	int rc = 0;
	if (ok && s->thread != NULL && flush_intervals(c, s, UINT64_MAX, -1) < 0)
		ok = 0, rc = -1;
	if (ok && s->thread != NULL && (rc = weft_pallas_thread_close(s->thread)) < 0)
		rc = weft__pconv_writer_error(c, "cannot write a thread", rc);
	weft_pallas_thread_free(s->thread);
	free(s->stack);
	memset(s, 0, sizeof *s);
	return ok ? rc : -1;
}

/* Reports a stream that could not be read to its end; the conversion goes on. */
static void stream_read_error(conv *c, uint32_t stream, int rc)
{
	const weft_stream_info *si = weft_trace_stream(c->trace, stream);
	const char *msg = weft_last_error();
	weft__convert_say(c->report, "error: %s: reading stopped: %s", si->path,
		msg != NULL && msg[0] != '\0' ? msg : weft_strerror(rc));
	c->lost = 1;
}

/*
 * Converts selected stream number `loc` through its own cursor. A stream
 * that cannot be read (to its end) is reported and keeps what was read.
 * -1 when the output failed or the command was interrupted.
 */
static int convert_stream(conv *c, uint32_t loc)
{
	stream_out s;
	weft_cursor *cursor;
	const weft_event *ev;
	int rc, ok = 1;
	stream_begin(c, &s, loc);
	rc = weft_cursor_create_stream_filtered(c->trace, s.stream, &c->filter, &cursor);
	if (rc < 0) {
		stream_read_error(c, s.stream, rc);
		return stream_end(c, &s, 1);
	}
	while (ok && !interrupted && (rc = weft_cursor_next(cursor, &ev)) == 1)
		if (convert_event(c, &s, ev) < 0)
			ok = 0;
	if (ok && rc < 0)
		stream_read_error(c, s.stream, rc);
	weft_cursor_free(cursor);
	return stream_end(c, &s, ok && !interrupted);
}

/*
 * Converts selected streams [first, first + count) in one pass over the
 * trace's files (formats whose streams share files: ROSS), through the
 * merged cursor with the job's filter; events of other streams are
 * skipped. `slot` maps a stream index to its place in the batch.
 */
static int convert_batch(conv *c, uint32_t first, uint32_t count, uint32_t *slot)
{
	stream_out outs[STREAM_BATCH];
	weft_cursor *cursor = NULL;
	const weft_event *ev;
	uint32_t begun = 0;
	int rc = 0, ok = 1;
	for (; begun < count; begun++) {
		stream_begin(c, &outs[begun], first + begun);
		slot[outs[begun].stream] = begun;
	}
	if ((rc = weft_cursor_create(c->trace, &c->filter, &cursor)) < 0) {
		weft__convert_say(c->report, "cannot read the events: %s", weft_last_error());
		ok = 0;
	}
	while (ok && !interrupted && (rc = weft_cursor_next(cursor, &ev)) == 1)
		if (slot[ev->stream] != NONE && convert_event(c, &outs[slot[ev->stream]], ev) < 0)
			ok = 0;
	if (ok && rc < 0) {
		weft__convert_say(c->report, "error: reading stopped: %s", weft_last_error());
		c->lost = 1;
	}
	weft_cursor_free(cursor);
	for (uint32_t i = 0; i < begun; i++) {
		slot[outs[i].stream] = NONE;
		if (stream_end(c, &outs[i], ok && !interrupted) < 0)
			ok = 0;
	}
	return ok && !interrupted ? 0 : -1;
}

/* Every selected stream in batches (shared files) or one at a time. */
static int convert_streams(conv *c)
{
	if (!weft_trace_file_order_default(c->trace)) {
		for (uint32_t loc = 0; loc < c->selected_count; loc++)
			if (convert_stream(c, loc) < 0)
				return -1;
		return 0;
	}
	size_t n = weft_trace_stream_count(c->trace);
	uint32_t *slot = malloc((n ? n : 1) * sizeof *slot);
	if (slot == NULL)
		return weft__pconv_out_of_memory(c);
	for (size_t i = 0; i < n; i++)
		slot[i] = NONE;
	int rc = 0;
	for (uint32_t first = 0; rc == 0 && first < c->selected_count; first += STREAM_BATCH) {
		uint32_t left = c->selected_count - first;
		rc = convert_batch(c, first, left < STREAM_BATCH ? left : STREAM_BATCH, slot);
	}
	free(slot);
	return rc;
}

/* Writes every archive file (all their threads are closed by now). */
static int store_archives(conv *c)
{
	for (uint32_t g = 0; g < c->group_count; g++) {
		int rc = weft_pallas_archive_store(c->archives[g]);
		if (rc < 0)
			return weft__pconv_writer_error(c, "cannot write an archive", rc);
	}
	return 0;
}

/* ---- The conversion ------------------------------------------------------------------------- */

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
			s->depth_fallbacks, SPAN_DEPTH_MAX, c->same_format ?
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

/* Writes the whole trace into the temporary directory; 0 or -1. */
static int write_trace(conv *c)
{
	weft_pallas_write_options o;
	weft_pallas_write_options_init(&o);
	o.sync = 1;
	int rc = weft_pallas_global_create(c->tmp_dir, MAIN_NAME, &o, &c->global);
	if (rc < 0)
		return weft__pconv_writer_error(c, "cannot start the trace", rc);
	c->defs = weft_pallas_global_defs(c->global);
	if (weft__pconv_define_structure(c) < 0 || convert_streams(c) < 0 || store_archives(c) < 0)
		return -1;
	rc = weft_pallas_global_store(c->global);
	return rc < 0 ? weft__pconv_writer_error(c, "cannot write the main file", rc) : 0;
}

/* Frees what the conversion holds (not the job's trace). */
static void conv_free(conv *c)
{
	weft_pallas_global_free(c->global);
	weft__pconv_str_free(&c->strings);
	weft__pconv_map_free(&c->attributes);
	free(c->node_group);
	free(c->archives);
	free(c->selected);
	free(c->next_location);
	free(c->tmp_dir);
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

/*
 * Selects the streams, makes sure of the reading order, writes the trace
 * into a temporary directory and puts it in place. -1 on failure.
 */
static int run(conv *c, const char *out, int replace)
{
	struct sigaction old[WATCHED_COUNT];
	if (weft__pconv_select_streams(c) < 0)
		return -1;
	c->same_format = weft_trace_format(c->trace) == WEFT_FORMAT_PALLAS;
	if ((c->tmp_dir = weft__pconv_make_sibling_dir(c->report, out, "tmp")) == NULL)
		return -1;
	interrupted = 0;
	if (c->job->options->remove_on_signal)
		watch_signals(old, NULL);
	int rc = write_trace(c);
	weft_pallas_global_free(c->global);
	c->global = NULL;
	if (rc == 0 && !interrupted)
		rc = weft__pconv_commit_output(c->report, c->tmp_dir, out, replace);
	if (c->job->options->remove_on_signal)
		watch_signals(NULL, old);
	if (rc < 0 || interrupted)
		weft__pconv_remove_tree(c->tmp_dir);
	return interrupted ? -1 : rc;
}

/*
 * Checks DIR, converts, reports. Returns 0 (report->data_lost when some
 * data could not be read), or a negative code when DIR was not written.
 */
static int convert_pallas(const weft__convert_job *job)
{
	conv c;
	int replace;
	char *out = output_path(job->options->path);
	if (out == NULL) {
		weft__convert_say(job->report, "missing the output directory: -o DIR");
		return WEFT_EINVAL;
	}
	int rc = weft__pconv_check_output(job->report, out, job->options->force, &replace);
	if (rc < 0) {
		free(out);
		return rc;
	}
	memset(&c, 0, sizeof c);
	c.job = job;
	c.report = job->report;
	c.trace = job->trace;
	/* Pallas threads are written in time order (Heph: parents before
	 * their children), whatever order the trace was opened in. */
	c.filter = job->options->filter;
	c.filter.order = WEFT_ORDER_TIME;
	rc = run(&c, out, replace);
	if (rc == 0)
		report_notes(&c);
	int lost = weft__convert_diags(c.report, c.trace) || c.lost;
	conv_free(&c);
	free(out);
	if (interrupted) {
		signal(interrupted, SIG_DFL);
		raise(interrupted);
	}
	job->report->data_lost = lost;
	return rc < 0 ? WEFT_EIO : 0;
}

int weft__convert_pallas(weft_trace *trace, const weft_convert_options *options,
			 weft_convert_report *report)
{
	weft__convert_job job = { trace, options, report };
	return convert_pallas(&job);
}
