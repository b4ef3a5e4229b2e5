/* SPDX-License-Identifier: MIT */
/*
 * outputs/convert_pallas_shared.c - `weft convert -t pallas` and `-t
 * otf2` with their streams shared among threads and ranks: the same files
 * as one thread writes.
 *
 * A Pallas trace is a thread file per location, written from that
 * location's events alone, plus definitions (strings, regions,
 * attributes, location groups and locations) numbered in the order the
 * conversion first meets them, stream after stream: the numbers are in
 * the thread files. So the streams are converted twice, each part (a
 * thread with its own handle of the trace, core/parts.c) taking its
 * share of them in stream order:
 *
 *   1. survey: each part converts its streams without writing anything
 *      and logs, per stream, the definitions that are new to the part in
 *      the order it made them (a string and whether it is an attribute
 *      value, a region's name, an attribute's name and type, a stream's
 *      location);
 *   2. plan: the logs are replayed in stream order on a conversion that
 *      writes nothing; what is new there is what the serial conversion
 *      defines, in its order: the plan. A definition new to the serial
 *      reading is new to the part that reads it too (the part has read
 *      less), so nothing is missed. A string value over the budget of
 *      value strings (the serial conversion leaves some out) makes the
 *      plan inexact: then the caller converts on one thread;
 *   3. write: the plan is replayed by the conversion that writes the
 *      definitions (the caller's: main file, archives) and by each part,
 *      which then converts its streams again and writes their thread
 *      files in the same temporary directory (its own archive objects,
 *      never stored); the caller counts the threads into its archives,
 *      says the parts' reading errors in stream order and finishes as the
 *      serial conversion does.
 *
 * OTF2 is the same (an event file per location, definitions numbered as
 * they are first met): a part's conversion goes through a proxy target
 * that logs or checks the definitions and calls OTF2's target, dry in
 * the survey (defining what the serial conversion would, so that the
 * strings OTF2's target defines itself are in the plan), then writing
 * into an archive of the part's own whose event files are moved into
 * the caller's (conv_target.part_finish); the caller takes the parts'
 * event counts, clock range and communicators (part_pack, part_take).
 *
 * The survey reads every event a second time: worth it when writing (the
 * grammar, compression) costs more than reading (docs/SCALING.md).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "outputs/convert_pallas.h"

/* What a log (or the plan) says, one operation after the other. */
enum op_kind {
	OP_STRING = 1, /* text */
	OP_VALUE,      /* text: a string value (the budget applies) */
	OP_REGION,     /* the region's name */
	OP_ATTRIBUTE,  /* name, type */
	OP_LOCATION    /* source stream index */
};

/* A part's conversion: its proxy target's state (conv.shared). */
typedef struct part_state {
	const conv_target *real;   /* OTF2: the target the proxy calls (its state in
				      conv.target_data); NULL: Pallas, written here */
	int survey;                /* 1: log definitions, write nothing */
	int sync_each;             /* on ranks: each file synced as it is closed */
	int planned;               /* write: the plan is replayed, nothing new may come */
	uint32_t next_string;      /* string refs, given as the Pallas writer does */
	const char **texts;        /* by string ref (the conversion's copies) */
	size_t text_cap;
	weft__pack log;            /* survey: the current stream's operations */
	weft_pallas_global *global; /* write: owner of the part's archives */
	uint32_t *written;         /* write: threads written, by location group */
	size_t written_cap, groups; /* groups: 1 + the last group written */
	uint64_t threads_written;
} part_state;

/* The shared conversion: the writer, the logs of the survey, the plan. */
typedef struct shared_job {
	weft_output_writer *w;
	conv *root;                /* the writer's conversion */
	weft__pack *logs;          /* by selected stream number: its survey log */
	weft__pack plan;
	int inexact;               /* a part's string values went over the budget */
	int failed;                /* a part's output failed (its lines said) */
	char **read_errors;        /* by selected stream number: why its reading stopped */
	uint32_t *threads;         /* by location group: threads the parts wrote */
	size_t group_slots;
	uint64_t selected;         /* events in the window */
	conv_stats stats;
	const weft_dist *dist;     /* the ranks, NULL: threads of one process */
	uint8_t *among;            /* this process's streams (a byte per stream) */
	int ok;                    /* ready (else the collectives go on, failing) */
	weft__pack target_packs;   /* the parts' packs of a real target (part_pack), each
				      length-prefixed, in part order */
} shared_job;

/* ---- The parts' target ------------------------------------------------------------ */

static part_state *state_of(conv *c)
{
	return c->shared;
}

/* A directory of the part's own under the trace's, its files' (c->tmp_dir). */
static int part_dir(conv *c)
{
	size_t n = strlen(c->tmp_dir) + 16;
	char *dir = malloc(n);
	if (dir == NULL)
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	snprintf(dir, n, "%s/part.XXXXXX", c->tmp_dir);
	if (mkdtemp(dir) == NULL) {
		int rc = weft__error(WEFT_EIO, dir, WEFT_NO_OFFSET, "cannot create a part's "
				     "directory: %s", strerror(errno));
		free(dir);
		return rc;
	}
	free(c->tmp_dir);
	c->tmp_dir = dir;
	return 0;
}

/* Pallas: the part's main file object (write). A real target: its dry
 * state (survey) or its output in a directory of the part's own. */
static int part_start(conv *c)
{
	part_state *p = state_of(c);
	if (p->real != NULL) {
		c->dry = p->survey;
		int rc = p->survey ? 0 : part_dir(c);
		return rc < 0 ? rc : p->real->start(c);
	}
	if (p->survey)
		return 0;
	weft_pallas_write_options o;
	weft_pallas_write_options_init(&o);
	/* One process syncs the whole tree when it commits it (outdir.c), its
	 * files together; on ranks, each syncs its own files (another node's
	 * fsync does not reach them). */
	o.sync = p->sync_each;
	return weft_pallas_global_create(c->tmp_dir, MAIN_NAME, &o, &p->global);
}

/* Logs one operation of the survey: its kind, a text, a number. */
static void log_op(part_state *p, enum op_kind kind, const char *text, uint64_t number)
{
	weft__pack_u64(&p->log, kind);
	if (text != NULL)
		weft__pack_bytes(&p->log, text, strlen(text));
	if (kind == OP_ATTRIBUTE || kind == OP_LOCATION)
		weft__pack_u64(&p->log, number);
}

/*
 * A definition the plan does not have, met while writing: the trace
 * changed between the survey and the writing (a file that grew); its
 * thread would name what no definition says.
 */
static int unplanned(conv *c, const char *what, const char *text)
{
	return weft__error(WEFT_EFORMAT, weft_trace_path(c->trace), WEFT_NO_OFFSET,
			   "the trace changed while it was converted: %s \"%.64s\" was not "
			   "there when the streams were surveyed", what, text);
}

/* A string's ref, in the order the Pallas writer gives them; its text kept by ref. */
static int part_string(conv *c, const char *text, uint32_t *ref)
{
	part_state *p = state_of(c);
	if (p->planned)
		return unplanned(c, "the string", text);
	if (weft__array_grow((void **)&p->texts, &p->text_cap, (size_t)p->next_string + 1,
			     sizeof *p->texts) < 0)
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	p->texts[p->next_string] = text;
	*ref = p->next_string++;
	if (p->survey)
		log_op(p, c->interning_value ? OP_VALUE : OP_STRING, text, 0);
	uint32_t real_ref;
	int rc = p->real != NULL ? p->real->string(c, text, &real_ref) : 0;
	if (rc == 0 && p->real != NULL && real_ref != *ref)
		rc = weft__error(WEFT_EINVAL, NULL, WEFT_NO_OFFSET, "string %u numbered %u by "
				 "the %s target (a bug)", *ref, real_ref, p->real->what);
	return rc;
}

static int part_region(conv *c, uint32_t ref, uint32_t name)
{
	part_state *p = state_of(c);
	(void)ref;
	if (p->planned)
		return unplanned(c, "the region", p->texts[name]);
	if (p->survey)
		log_op(p, OP_REGION, p->texts[name], 0);
	return p->real != NULL ? p->real->region(c, ref, name) : 0;
}

static int part_attribute(conv *c, uint32_t ref, uint32_t name, int type)
{
	part_state *p = state_of(c);
	(void)ref;
	if (p->planned)
		return unplanned(c, "the attribute", p->texts[name]);
	if (p->survey)
		log_op(p, OP_ATTRIBUTE, p->texts[name], (uint64_t)type);
	return p->real != NULL ? p->real->attribute(c, ref, name, type) : 0;
}

/* A location group: its archive is made when a thread of it is (write). */
static int part_group(conv *c, uint32_t id, uint32_t name, uint32_t parent)
{
	size_t cap = c->group_cap;
	if (weft__array_grow_zeroed((void **)&c->archives, &cap, (size_t)id + 1,
				    sizeof *c->archives) < 0)
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	c->group_cap = (uint32_t)cap;
	const conv_target *real = state_of(c)->real;
	return real != NULL ? real->group(c, id, name, parent) : 0;
}

/* Pallas: kept by rank 0 alone; a real target may define strings there. */
static int part_group_metadata(conv *c, uint32_t group, const char *key, const char *value)
{
	const conv_target *real = state_of(c)->real;
	return real != NULL ? real->group_metadata(c, group, key, value) : 0;
}

/* Survey: logged; write (the plan replayed): the stream's place, for its thread. */
static int part_location(conv *c, uint32_t group, uint32_t id, uint32_t name,
			 uint32_t stream)
{
	part_state *p = state_of(c);
	if (p->planned)
		return unplanned(c, "the stream", weft_trace_stream(c->trace, stream)->path);
	if (p->survey) {
		log_op(p, OP_LOCATION, NULL, stream);
	} else {
		stream_out *s = &c->outs[c->loc_of[stream]];
		s->group = group;
		s->location = id;
		s->placed = 1;
	}
	return p->real != NULL ? p->real->location(c, group, id, name, stream) : 0;
}

static int part_metadata(conv *c, const char *key, const char *value)
{
	const conv_target *real = state_of(c)->real;
	return real != NULL ? real->metadata(c, key, value) : 0;
}

/* Survey: a thread that is never written (non-NULL); write: the Pallas thread. */
static int part_thread_begin(conv *c, stream_out *s)
{
	part_state *p = state_of(c);
	if (p->real != NULL)
		return p->real->thread_begin(c, s);
	if (p->survey) {
		s->thread = p;
		return 0;
	}
	if (c->archives[s->group] == NULL) {
		int rc = weft_pallas_archive_create(p->global, s->group, &c->archives[s->group]);
		if (rc < 0)
			return rc;
	}
	return weft__pconv_pallas_target.thread_begin(c, s);
}

static int part_record(conv *c, stream_out *s, const weft_pallas_attrs *a, uint64_t time,
		       int kind, uint32_t ref)
{
	part_state *p = state_of(c);
	if (p->real != NULL)
		return p->real->record(c, s, a, time, kind, ref);
	if (p->survey)
		return 0;
	return weft__pconv_pallas_target.record(c, s, a, time, kind, ref);
}

static int part_raw(conv *c, stream_out *s, const weft_pallas_attrs *a, uint64_t time,
		    int record, int role, const uint8_t *payload, size_t size)
{
	if (state_of(c)->survey)
		return 0;
	return weft__pconv_pallas_target.raw(c, s, a, time, record, role, payload, size);
}

/* A real target's record of its own (OTF2: MPI records). */
static int part_mpi(conv *c, stream_out *s, const weft_event *ev, int nfields)
{
	return state_of(c)->real->mpi(c, s, ev, nfields);
}

/* Write: the thread's file, counted for its archive. */
static int part_thread_end(conv *c, stream_out *s, int ok)
{
	part_state *p = state_of(c);
	if (p->survey && p->real == NULL) {
		s->thread = NULL;
		return 0;
	}
	int rc = p->real != NULL ? p->real->thread_end(c, s, ok)
				 : weft__pconv_pallas_target.thread_end(c, s, ok);
	if (p->survey)
		return rc;
	if (rc == 0 && ok) {
		if (weft__array_grow_zeroed((void **)&p->written, &p->written_cap,
					    (size_t)s->group + 1, sizeof *p->written) < 0)
			return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
		p->written[s->group]++;
		p->threads_written++;
		if (s->group >= p->groups)
			p->groups = (size_t)s->group + 1;
	}
	return rc;
}

static int part_store(conv *c)
{
	(void)c;
	return 0;
}

static void part_free(conv *c)
{
	part_state *p = state_of(c);
	if (p == NULL)
		return;
	if (p->real != NULL)
		p->real->free(c);
	weft_pallas_global_free(p->global); /* its archives' files stay */
	free(p->texts);
	free(p->written);
	weft__pack_release(&p->log);
	free(p);
	c->shared = NULL;
	free(c->archives);
	c->archives = NULL;
}

/*
 * The proxies: a part's conversion goes through one of them, which logs
 * its definitions (survey) or refuses new ones (write) and writes (Pallas:
 * here; OTF2: through the real target, in the part's directory). Their
 * constants are their real target's.
 */
static const conv_target part_target = {
	"Pallas", NULL, SPAN_DEPTH_MAX, 1, part_start, part_string, part_region,
	part_attribute, part_group, part_group_metadata, part_location, part_metadata,
	part_thread_begin, part_record, part_raw, NULL, part_thread_end, part_store, part_free,
	NULL, NULL, NULL
};

static const conv_target otf2_part_target = {
	"OTF2", NULL, UINT32_MAX /* weft__pconv_otf2_target's */, 0, part_start, part_string,
	part_region, part_attribute, part_group, part_group_metadata, part_location,
	part_metadata, part_thread_begin, part_record, NULL, part_mpi, part_thread_end,
	part_store, part_free, NULL, NULL, NULL
};

/* The proxy of a conversion into `t` (a real target, or a proxy already). */
static const conv_target *proxy_of(const conv_target *t)
{
	return t == &weft__pconv_otf2_target || t == &otf2_part_target ? &otf2_part_target
									: &part_target;
}

/* What the proxy calls: OTF2, or NULL (Pallas, written by the proxy). */
static const conv_target *real_of(const conv_target *proxy)
{
	return proxy == &otf2_part_target ? &weft__pconv_otf2_target : NULL;
}

/* ---- A part's conversion ----------------------------------------------------------- */

/*
 * A conversion of the caller's streams over `trace` (the part's handle)
 * into the parts' target: the caller's settings, its own tables
 * (`sync_each`: its Pallas files synced one by one, on ranks). NULL when
 * out of memory.
 */
static conv *part_conv_create(const conv *root, weft_trace *trace, int survey,
			      int sync_each, weft_convert_report *report)
{
	conv *c = calloc(1, sizeof *c);
	part_state *p = calloc(1, sizeof *p);
	if (c == NULL || p == NULL) {
		free(c);
		free(p);
		return NULL;
	}
	p->survey = survey;
	p->sync_each = sync_each;
	c->job = root->job;
	c->target = proxy_of(root->target);
	p->real = real_of(c->target);
	c->shared = p;
	c->report = report;
	c->trace = trace;
	c->filter = root->filter;
	if ((c->tmp_dir = strdup(root->tmp_dir)) == NULL ||
	    weft__pconv_prepare(c, root->selected, root->selected_count) < 0 ||
	    c->target->start(c) < 0 || weft__pconv_define_structure(c) < 0) {
		weft__pconv_free(c);
		return NULL;
	}
	c->started = 1;
	return c;
}

/* Ends a part's conversion: threads still open are abandoned. */
static void part_conv_free(conv *c)
{
	if (c == NULL)
		return;
	for (uint32_t loc = 0; loc < c->selected_count; loc++)
		if (c->outs[loc].thread != NULL)
			weft__pconv_stream_end(c, &c->outs[loc], 0);
	weft__pconv_free(c);
}

/*
 * Replays operations (a survey log or the plan) on conversion `c`: each
 * defines what it names unless `c` has it. With `plan`, the operations
 * that defined something are added to it. 0; 1 when a string value is
 * over the budget (the plan would not be the serial one); -1 on failure
 * (said) or a log that does not parse.
 */
static int replay(conv *c, const weft__pack *ops, weft__pack *plan)
{
	weft__unpack u = { .data = ops->data, .len = ops->len };
	while (u.pos < u.len && !u.bad) {
		size_t start = u.pos, len = 0;
		uint64_t kind = weft__unpack_u64(&u), before = c->defined, number = 0;
		const char *text = kind != OP_LOCATION ? weft__unpack_bytes(&u, &len) : NULL;
		uint32_t ref, group;
		int rc = 0;
		if (kind == OP_ATTRIBUTE || kind == OP_LOCATION)
			number = weft__unpack_u64(&u);
		if (u.bad)
			break;
		switch (kind) {
		case OP_STRING:
			rc = weft__pconv_intern(c, text, (uint32_t)len, &ref, NULL);
			break;
		case OP_VALUE:
			rc = weft__pconv_string_value(c, text, len, &ref);
			if (rc == 0)
				return 1;
			rc = rc < 0 ? -1 : 0;
			break;
		case OP_REGION:
			rc = weft__pconv_region_ref(c, text, (uint32_t)len, &ref);
			break;
		case OP_ATTRIBUTE:
			rc = weft__pconv_attribute_ref(c, text, (uint32_t)len, (int)number, &ref);
			break;
		case OP_LOCATION:
			if (number >= c->trace->stream_count || c->loc_of[number] == NONE) {
				u.bad = 1;
				continue;
			}
			rc = weft__pconv_add_location(c, c->loc_of[number], &group, &ref);
			break;
		default:
			u.bad = 1;
			continue;
		}
		if (rc < 0)
			return -1;
		if (plan != NULL && c->defined != before)
			weft__pack_raw(plan, ops->data + start, u.pos - start);
	}
	if (u.bad || (plan != NULL && plan->failed))
		return weft__pconv_writer_error(c, "cannot plan the definitions",
						weft__error(WEFT_EFORMAT, NULL, WEFT_NO_OFFSET,
							    "a log does not parse or out of "
							    "memory (a bug)"));
	return 0;
}

/*
 * Converts selected stream number `loc` through `c` as the serial
 * conversion does (outputs/convert.c, read_streams): its events in time
 * order with the writer's filter, then its end; the events in the job's
 * window are counted into *selected. A reading that stops leaves its
 * reason in *read_error (malloc'd) and the stream is ended as it is. 0,
 * or the failure's status (said in c->report): WEFT_EINVAL for an event
 * the output refuses (out of time order), another for the output's own.
 */
static int convert_stream(conv *c, uint32_t loc, uint64_t *selected, char **read_error)
{
	const weft_filter *window = &c->job->options->filter;
	weft_cursor *cursor = NULL;
	const weft_event *ev;
	int failed = 0;
	int rc = weft_cursor_create_stream_filtered(c->trace, c->selected[loc], &c->filter,
						    &cursor);
	while (rc == 0 && (rc = weft_cursor_next(cursor, &ev)) == 1) {
		*selected += ev->time >= window->from && (window->to == 0 || ev->time <= window->to);
		int taken = weft__pconv_event(c, ev);
		if (taken == WEFT_EINVAL)
			weft__convert_fail(c->report, "an event was refused", taken);
		if (taken < 0) {
			failed = taken;
			break;
		}
		rc = 0;
	}
	if (rc < 0 && !failed) {
		const char *msg = weft_last_error();
		*read_error = strdup(msg != NULL && msg[0] != '\0' ? msg : weft_strerror(rc));
	}
	weft_cursor_free(cursor);
	if (weft__pconv_stream_end(c, &c->outs[loc], failed == 0) < 0 && failed == 0)
		failed = WEFT_EIO;
	return failed;
}

/* ---- Survey and plan ---------------------------------------------------------------- */

#define END_OF_LOGS UINT64_MAX

/*
 * A part's survey (weft__part_fn): its streams converted without output;
 * the result is each stream's log (its number, the operations), then
 * END_OF_LOGS and whether a string value went over the budget.
 */
static int survey_part(weft_trace *handle, const uint8_t *share, weft__pack *result,
		       void *arg)
{
	shared_job *j = arg;
	weft_convert_report report = { 0 };
	conv *c = part_conv_create(j->root, handle, 1, 0, &report);
	int rc = 0;
	if (c == NULL)
		rc = weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	for (uint32_t loc = 0; c != NULL && loc < c->selected_count; loc++) {
		if (!share[c->selected[loc]])
			continue;
		part_state *p = state_of(c);
		uint64_t selected = 0;
		char *read_error = NULL;
		weft__pack_release(&p->log);
		int failed = convert_stream(c, loc, &selected, &read_error);
		if (failed < 0) /* the status travels: a refused event is the trace's */
			rc = weft__error(failed == WEFT_EINVAL ? WEFT_EINVAL : WEFT_EIO,
					 NULL, WEFT_NO_OFFSET, "%s",
					 report.message_count > 0
					 ? report.messages[report.message_count - 1]
					 : "the survey of the streams failed");
		free(read_error); /* the write meets it again */
		if (rc < 0 || p->log.failed)
			break;
		weft__pack_u64(result, loc);
		weft__pack_bytes(result, p->log.data, p->log.len);
	}
	weft__pack_u64(result, END_OF_LOGS);
	weft__pack_u64(result, c != NULL && c->over_budget);
	if (rc == 0 && c != NULL && state_of(c)->log.failed)
		rc = weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	part_conv_free(c);
	weft_convert_report_free(&report);
	return rc;
}

/* Keeps a part's logs by stream (weft__dist_merge_fn). */
static int survey_merge(void *ctx, weft__unpack *u)
{
	shared_job *j = ctx;
	for (;;) {
		uint64_t loc = weft__unpack_u64(u);
		if (u->bad || loc == END_OF_LOGS)
			break;
		size_t len;
		const void *log = weft__unpack_bytes(u, &len);
		if (u->bad || loc >= j->root->selected_count)
			return u->bad = 1, 0;
		weft__pack_raw(&j->logs[loc], log, len);
		if (j->logs[loc].failed)
			return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	}
	j->inexact |= weft__unpack_u64(u) != 0;
	return 0;
}

/*
 * The plan: the logs replayed in stream order on a conversion that writes
 * nothing. 0; 1 when it cannot give the serial numbering; -1 (said).
 */
static int make_plan(shared_job *j)
{
	weft_convert_report report = { 0 };
	conv *c = part_conv_create(j->root, j->root->trace, 1, 0, &report);
	int rc = c == NULL ? weft__pconv_out_of_memory(j->root) : 0;
	for (uint32_t loc = 0; rc == 0 && loc < j->root->selected_count; loc++)
		if (j->logs[loc].len > 0)
			rc = replay(c, &j->logs[loc], &j->plan);
	for (size_t i = 0; rc < 0 && i < report.message_count; i++)
		weft__convert_say(j->root->report, "%s", report.messages[i]);
	part_conv_free(c);
	weft_convert_report_free(&report);
	return rc;
}

/* ---- Write ---------------------------------------------------------------------------- */

/*
 * A part's writing (weft__part_fn): the plan replayed, then its streams
 * converted into thread files. Its result: whether its output failed and
 * its lines, the reading errors of its streams (number, text; then
 * END_OF_LOGS), the events in the window, the mapping's counts and the
 * threads written per location group.
 */
static int write_part(weft_trace *handle, const uint8_t *share, weft__pack *result, void *arg)
{
	shared_job *j = arg;
	weft_convert_report report = { 0 };
	conv *c = part_conv_create(j->root, handle, 0, j->dist != NULL, &report);
	uint64_t selected = 0;
	int failed = c == NULL || replay(c, &j->plan, NULL) != 0;
	if (!failed)
		state_of(c)->planned = 1;
	if (c == NULL)
		weft__convert_say(&report, "cannot start a part of the conversion: out of memory");
	weft__pack errors = { 0 };
	for (uint32_t loc = 0; !failed && loc < c->selected_count; loc++) {
		char *read_error = NULL;
		if (!share[c->selected[loc]])
			continue;
		int placed = c->outs[loc].placed;
		uint64_t before = state_of(c)->threads_written;
		failed = convert_stream(c, loc, &selected, &read_error) < 0;
		if (!failed && placed && state_of(c)->threads_written == before) {
			/* planned with events, none now: the archive would
			 * list a location without its thread */
			weft__error(WEFT_EFORMAT, weft_trace_stream(c->trace, c->selected[loc])->path,
				    WEFT_NO_OFFSET, "the trace changed while it was converted: "
				    "the stream had events when the streams were surveyed, none now");
			weft__convert_fail(&report, "cannot write a thread", WEFT_EFORMAT);
			failed = 1;
		}
		if (read_error != NULL) {
			weft__pack_u64(&errors, loc);
			weft__pack_text(&errors, read_error);
			free(read_error);
		}
	}
	const conv_target *real = c != NULL ? state_of(c)->real : NULL;
	weft__pack target = { 0 };
	if (!failed && real != NULL) {
		int rc = real->part_finish(c, j->root->tmp_dir);
		if (rc < 0)
			weft__convert_fail(&report, "cannot write the events", rc);
		failed = rc < 0;
		weft__pack own = { 0 };
		real->part_pack(c, &own);
		weft__pack_bytes(&target, own.data, own.len);
		target.failed |= own.failed;
		weft__pack_release(&own);
	}
	weft__pack_u64(result, failed);
	weft__pack_u64(result, report.message_count);
	for (size_t i = 0; i < report.message_count; i++)
		weft__pack_text(result, report.messages[i]);
	weft__pack_raw(result, errors.data, errors.len);
	weft__pack_u64(result, END_OF_LOGS);
	weft__pack_u64(result, selected);
	const conv_stats *st = c != NULL ? &c->stats : &(conv_stats){ 0 };
	const uint64_t counts[] = { st->leave_fallbacks, st->interval_fallbacks,
				    st->depth_fallbacks, st->strings_left_out, st->payloads_cut,
				    st->fields_left_out };
	for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++)
		weft__pack_u64(result, counts[i]);
	part_state *p = c != NULL ? state_of(c) : NULL;
	weft__pack_u64(result, p != NULL ? p->groups : 0);
	for (size_t g = 0; p != NULL && g < p->groups; g++)
		weft__pack_u64(result, p->written[g]);
	weft__pack_bytes(result, target.data, target.len);
	result->failed |= target.failed;
	weft__pack_release(&target);
	weft__pack_release(&errors);
	part_conv_free(c);
	weft_convert_report_free(&report);
	return 0;
}

/* Adds a part's writing to the job's (weft__dist_merge_fn). */
static int write_merge(void *ctx, weft__unpack *u)
{
	shared_job *j = ctx;
	j->failed |= weft__unpack_u64(u) != 0;
	for (uint64_t n = weft__unpack_u64(u); n > 0 && !u->bad; n--)
		weft__convert_say(j->root->report, "%s", weft__unpack_text(u));
	for (;;) {
		uint64_t loc = weft__unpack_u64(u);
		if (u->bad || loc == END_OF_LOGS)
			break;
		const char *text = weft__unpack_text(u);
		if (u->bad || loc >= j->root->selected_count || j->read_errors[loc] != NULL)
			return u->bad = 1, 0;
		if ((j->read_errors[loc] = strdup(text)) == NULL)
			return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	}
	j->selected += weft__unpack_u64(u);
	uint64_t *counts[] = { &j->stats.leave_fallbacks, &j->stats.interval_fallbacks,
			       &j->stats.depth_fallbacks, &j->stats.strings_left_out,
			       &j->stats.payloads_cut, &j->stats.fields_left_out };
	for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++)
		*counts[i] += weft__unpack_u64(u);
	uint64_t groups = weft__unpack_u64(u);
	if (u->bad || groups > j->root->group_count)
		return u->bad = 1, 0;
	for (uint64_t g = 0; g < groups; g++)
		j->threads[g] += (uint32_t)weft__unpack_u64(u);
	size_t len;
	const void *packs = weft__unpack_bytes(u, &len);
	if (!u->bad)
		weft__pack_raw(&j->target_packs, packs, len);
	return j->target_packs.failed
	       ? weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory") : 0;
}

/*
 * What the parts did, on the caller's conversion: the reading errors in
 * stream order (as the serial conversion says them), the threads in the
 * archives (Pallas), the counts, what a real target's parts packed
 * (OTF2: event counts, clock range, communicators). 0 or < 0 (said).
 */
static int take_writing(shared_job *j)
{
	conv *root = j->root;
	for (uint32_t loc = 0; loc < root->selected_count; loc++) {
		if (j->read_errors[loc] == NULL)
			continue;
		weft__convert_say(root->report, "error: %s: reading stopped: %s",
				  weft_trace_stream(root->trace, root->selected[loc])->path,
				  j->read_errors[loc]);
		root->lost = 1;
	}
	for (uint32_t g = 0; root->archives != NULL && g < root->group_count; g++)
		weft__pallas_archive_add_threads(root->archives[g], j->threads[g]);
	root->stats.leave_fallbacks += j->stats.leave_fallbacks;
	root->stats.interval_fallbacks += j->stats.interval_fallbacks;
	root->stats.depth_fallbacks += j->stats.depth_fallbacks;
	root->stats.strings_left_out += j->stats.strings_left_out;
	root->stats.payloads_cut += j->stats.payloads_cut;
	root->stats.fields_left_out += j->stats.fields_left_out;
	j->w->job.report->selected += j->selected;
	weft__unpack u = { .data = j->target_packs.data, .len = j->target_packs.len };
	while (u.pos < u.len && !u.bad) {
		size_t len;
		const void *one = weft__unpack_bytes(&u, &len);
		weft__unpack part = { .data = one, .len = len };
		if (u.bad)
			break;
		int rc = root->target->part_take(root, &part);
		if (rc == 0 && part.bad)
			rc = weft__error(WEFT_EFORMAT, NULL, WEFT_NO_OFFSET,
					 "a part's writing does not parse (a bug)");
		if (rc < 0)
			return weft__convert_fail(root->report, "cannot take the parts' writing", rc);
	}
	return u.bad ? weft__convert_fail(root->report, "cannot take the parts' writing",
					  weft__error(WEFT_EFORMAT, NULL, WEFT_NO_OFFSET,
						      "the parts' writing does not parse (a bug)"))
		     : 0;
}

/* ---- The call ----------------------------------------------------------------------------- */

static void job_free(shared_job *j)
{
	for (uint32_t loc = 0; j->logs != NULL && loc < j->root->selected_count; loc++)
		weft__pack_release(&j->logs[loc]);
	for (uint32_t loc = 0; j->read_errors != NULL && loc < j->root->selected_count; loc++)
		free(j->read_errors[loc]);
	free(j->logs);
	free(j->read_errors);
	free(j->threads);
	weft__pack_release(&j->plan);
	weft__pack_release(&j->target_packs);
	free(j->among);
}

/* ---- Ranks ---------------------------------------------------------------------------- */

/*
 * Test hook: WEFT_TEST_PALLAS_FAIL="STEP@RANK" fails STEP on rank RANK as
 * if memory ran out ("follow": the rank's follower is not made; "plan":
 * the rank cannot hold the plan). These are the paths where a rank must
 * fail without leaving the others waiting, and no test could reach them
 * otherwise (tests/mpi/test_mpi_convert.py).
 */
static int test_fault(const weft_trace *trace, const char *step)
{
	const char *spec = getenv("WEFT_TEST_PALLAS_FAIL");
	size_t n = strlen(step);
	if (spec == NULL || !weft__dist_active(trace) || strncmp(spec, step, n) != 0 ||
	    spec[n] != '@')
		return 0;
	return strtol(spec + n + 1, NULL, 10) == trace->options.dist->rank;
}

/* The survey's logs of this rank, as a part packs them (survey_part). */
static void pack_logs(weft__pack *out, const void *ctx)
{
	const shared_job *j = ctx;
	for (uint32_t loc = 0; loc < j->root->selected_count; loc++) {
		if (j->logs[loc].len == 0)
			continue;
		weft__pack_u64(out, loc);
		weft__pack_bytes(out, j->logs[loc].data, j->logs[loc].len);
	}
	weft__pack_u64(out, END_OF_LOGS);
	weft__pack_u64(out, j->inexact);
}

/* The writing of this rank, as a part packs it (write_part). */
static void pack_writing(weft__pack *out, const void *ctx)
{
	const shared_job *j = ctx;
	const weft_convert_report *r = j->root->report;
	weft__pack_u64(out, j->failed);
	weft__pack_u64(out, r->message_count);
	for (size_t i = 0; i < r->message_count; i++)
		weft__pack_text(out, r->messages[i]);
	for (uint32_t loc = 0; loc < j->root->selected_count; loc++) {
		if (j->read_errors[loc] == NULL)
			continue;
		weft__pack_u64(out, loc);
		weft__pack_text(out, j->read_errors[loc]);
	}
	weft__pack_u64(out, END_OF_LOGS);
	weft__pack_u64(out, j->selected);
	const conv_stats *st = &j->stats;
	const uint64_t counts[] = { st->leave_fallbacks, st->interval_fallbacks,
				    st->depth_fallbacks, st->strings_left_out, st->payloads_cut,
				    st->fields_left_out };
	for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++)
		weft__pack_u64(out, counts[i]);
	weft__pack_u64(out, j->root->group_count);
	for (uint32_t g = 0; g < j->root->group_count; g++)
		weft__pack_u64(out, j->threads[g]);
	weft__pack_bytes(out, j->target_packs.data, j->target_packs.len);
}

/* ---- The phases ------------------------------------------------------------------------- */

/*
 * Runs `fn` over this process's streams (j->among): on `threads` threads,
 * or on the caller's handle; each part's result merged by `merge`.
 */
static int run_local(shared_job *j, int threads, weft__part_fn fn, weft__dist_merge_fn merge)
{
	weft_trace *trace = j->root->trace;
	if (threads > 1)
		return weft__parts_run(trace, j->among, threads, fn, j, merge, j);
	weft__pack result = { 0 };
	int rc = fn(trace, j->among, &result, j);
	if (rc == 0 && result.failed)
		rc = weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	if (rc == 0) {
		weft__unpack u = { .data = result.data, .len = result.len };
		rc = merge(j, &u);
		if (rc == 0 && u.bad)
			rc = weft__error(WEFT_EFORMAT, NULL, WEFT_NO_OFFSET,
					 "a part's result does not parse (a bug)");
	}
	weft__pack_release(&result);
	return rc;
}

/*
 * The survey (every rank, its diagnostics forgotten: the writing reads
 * again) and, on rank 0, the plan, which every rank gets. 0 (planned),
 * 1 (rank 0 converts alone: the plan would not be exact, or the survey
 * failed), -1 (said on rank 0), -2 (this rank could not take the plan:
 * it must still join the writing's combine, failing it).
 *
 * A survey that meets an event the output refuses (out of time order in
 * its stream) says nothing: rank 0 converts alone, meets it again and
 * says it as one thread says it, with the stream's diagnostics. Other
 * failures (memory, a rank that could not take part) are this run's, not
 * the trace's: they fail it.
 */
static int plan_shared(shared_job *j, int threads)
{
	weft_trace *trace = j->root->trace;
	size_t diags = trace->diag_count;
	uint64_t dropped = trace->diags_dropped;
	uint64_t events = trace->progress.events, bytes = trace->progress.bytes;
	int rc = j->ok ? run_local(j, threads, survey_part, survey_merge) : WEFT_EIO;
	weft__trace_diags_forget(trace, diags, dropped);
	trace->progress.events = events;
	trace->progress.bytes = bytes;
	if (j->dist != NULL)
		rc = weft__dist_combine(trace, rc, trace->diag_count, pack_logs, survey_merge, j);
	int root = j->dist == NULL || j->dist->rank == 0;
	int64_t verdict = rc >= 0 ? 0 : rc == WEFT_EINVAL && j->ok ? 1 : -1;
	if (verdict < 0 && root)
		weft__convert_fail(j->root->report, "cannot survey the streams", rc);
	if (verdict == 0 && root)
		verdict = j->inexact ? 1 : make_plan(j);
	if (j->dist == NULL)
		return (int)verdict;
	if (j->dist->broadcast(j->dist->user, &verdict, sizeof verdict) < 0)
		return -1;
	if (verdict == 0 && weft__dist_broadcast_pack(j->dist, &j->plan, test_fault(trace, "plan")) < 0)
		return -2; /* this rank alone: the others write; it fails their combine */
	return (int)verdict;
}

/*
 * The writing: the plan replayed by the caller's conversion (rank 0:
 * the definitions), the streams converted, the ranks' results combined
 * on rank 0 (`broken`: this rank has no plan, it fails the combine). 0,
 * or < 0 (said on rank 0).
 */
static int write_shared(shared_job *j, int threads, int broken)
{
	conv *root = j->root;
	weft_trace *trace = root->trace;
	size_t diags = trace->diag_count;
	int rc = broken ? WEFT_ENOMEM : replay(root, &j->plan, NULL) != 0 ? WEFT_EIO : 0;
	if (rc == 0 && (j->threads = calloc(root->group_count + 1, sizeof *j->threads)) == NULL)
		rc = weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	if (rc == 0)
		rc = run_local(j, threads, write_part, write_merge);
	if (j->dist != NULL)
		rc = weft__dist_combine(trace, rc, diags, pack_writing, write_merge, j);
	if (rc < 0 && (j->dist == NULL || j->dist->rank == 0))
		weft__convert_fail(root->report, "cannot convert the streams", rc);
	return rc;
}

/* This process's streams: the writer's, and on ranks the rank's share. */
static uint8_t *own_streams(const weft_output_writer *w)
{
	const weft_trace *trace = w->job.trace;
	const uint8_t *share = weft__dist_selected(trace);
	uint8_t *among = malloc(w->stream_count ? w->stream_count : 1);
	for (uint32_t i = 0; among != NULL && i < w->stream_count; i++)
		among[i] = w->selected[i] && (share == NULL || share[i]);
	return among;
}

/* Collective on ranks: rank 0's temporary directory, where every rank writes. */
static int share_tmp_dir(shared_job *j)
{
	weft__pack dir = { 0 };
	if (j->dist->rank == 0)
		weft__pack_raw(&dir, j->root->tmp_dir, strlen(j->root->tmp_dir) + 1);
	int rc = weft__dist_broadcast_pack(j->dist, &dir, 0);
	if (rc == 0 && j->dist->rank != 0) {
		free(j->root->tmp_dir);
		j->root->tmp_dir = dir.len > 0 && dir.data[dir.len - 1] == '\0'
				   ? strdup((const char *)dir.data) : NULL;
		if (j->root->tmp_dir == NULL)
			rc = WEFT_ENOMEM;
	}
	weft__pack_release(&dir);
	return rc;
}

int weft__pconv_follow(conv *c, const uint8_t *selected)
{
	part_state *p = test_fault(c->trace, "follow") ? NULL : calloc(1, sizeof *p);
	c->follower = 1;
	if (p == NULL)
		return weft__pconv_out_of_memory(c);
	p->survey = 1;
	c->target = proxy_of(c->target);
	p->real = real_of(c->target);
	c->shared = p;
	if (weft__pconv_prepare_marked(c, selected) < 0 || c->target->start(c) < 0 ||
	    weft__pconv_define_structure(c) < 0)
		return -1;
	c->started = 1;
	return 0;
}

/*
 * A rank whose follower could not be made (out of memory): the
 * collectives of the others, failing them (the survey's combine says
 * this rank's error on rank 0, so no plan comes and no writing starts).
 */
static int abstain(weft_trace *trace)
{
	const weft_dist *d = trace->options.dist;
	const char *msg = weft_last_error();
	char why[256];
	snprintf(why, sizeof why, "%s", msg != NULL && msg[0] != '\0' ? msg : "out of memory");
	weft__pack received = { 0 };
	weft__dist_broadcast_pack(d, &received, 0); /* the temporary directory */
	weft__pack_release(&received);
	int rc = weft__dist_combine(trace, weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "%s",
						       why),
				    trace->diag_count, NULL, NULL, NULL);
	int64_t verdict = -1;
	if (d->broadcast(d->user, &verdict, sizeof verdict) == 0 && verdict == 0) {
		/* not reached (the survey failed), but never out of step */
		weft__dist_broadcast_pack(d, &received, 0);
		weft__pack_release(&received);
		weft__dist_combine(trace, WEFT_ENOMEM, trace->diag_count, NULL, NULL, NULL);
	}
	return rc < 0 ? rc : WEFT_ENOMEM;
}

int weft__pconv_convert_shared(weft_output_writer *w)
{
	conv *root = w->impl;
	if (root == NULL) { /* a follower that could not be made */
		if (weft__dist_active(w->job.trace))
			abstain(w->job.trace);
		return 1;
	}
	weft_trace *trace = root->trace;
	const weft_dist *dist = weft__dist_active(trace) ? trace->options.dist : NULL;
	/* on ranks, rank 0 chose to share (outputs/convert.c) */
	if (dist == NULL && ((root->target != &weft__pconv_pallas_target &&
			      root->target != &weft__pconv_otf2_target) ||
			     weft_trace_shared_files(trace) || weft_trace_file_order_default(trace)))
		return 0;
	shared_job j = { .w = w, .root = root, .dist = dist };
	j.among = own_streams(w);
	int threads = j.among != NULL ? weft__parts_threads(trace, j.among, 0, WEFT__WORK_HEAVY) : 1;
	if (dist == NULL && threads < 2) {
		free(j.among);
		return 0;
	}
	size_t n = root->selected_count ? root->selected_count : 1;
	j.logs = calloc(n, sizeof *j.logs);
	j.read_errors = calloc(n, sizeof *j.read_errors);
	j.ok = j.among != NULL && j.logs != NULL && j.read_errors != NULL;
	if (!j.ok)
		weft__pconv_out_of_memory(root);
	if (dist != NULL && share_tmp_dir(&j) < 0)
		j.ok = 0;
	int rc = plan_shared(&j, threads);
	if (rc == 0 || rc == -2)
		rc = write_shared(&j, threads, rc == -2);
	if (rc == 0 && !j.failed && !root->follower)
		rc = take_writing(&j);
	else if (rc == 0)
		rc = -1;
	if (rc < 0)
		weft__output_writer_fail(w);
	job_free(&j);
	return rc == 1 ? 0 : 1;
}
