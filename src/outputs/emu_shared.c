/* SPDX-License-Identifier: MIT */
/*
 * outputs/emu_shared.c - the outputs of an emulated ovni trace (Paraver:
 * paraver/paraver_emu.c, Perfetto: perfetto/perfetto_emu.c) with the
 * trace's looms shared among threads and ranks: byte for byte the output
 * one emulator writes, and the messages it says.
 *
 * Why it can be shared: the looms of an ovni trace (its nodes) share
 * nothing while they are emulated (emu/emu.h, "An emulation shared by
 * looms"). So each part (a thread, on any rank) runs an emulator of its
 * own over the streams of some whole looms, in the merged order of those
 * streams (the order one merged cursor gives them, outputs/keyed_runs.h),
 * counting time from the first event of all streams, and writes what its
 * records give keyed by their event; the merge of the parts' runs by key
 * (outputs/view_shared.c, which also carries the runs of other ranks to
 * rank 0) hands them to the output in the order of one emulator reading
 * all streams. For Paraver the parts format the .prv lines, which the
 * merge copies; for Perfetto they hand over the records with what the
 * output asks the emulator of them (the thread a row shows, a stack's
 * entries), and the merge gives them to the output's record sink.
 *
 * What crosses looms goes as records too, keyed by its event, to the
 * writer's emulator, which takes it in the merged order: a warning
 * (ovniemu counts a message across the whole trace, and lists the first
 * ones), a task type created (its label names the type's values from
 * then on; the .pcf lists every process's; two labels of one value are a
 * collision, found at the end); after every event, the part's last
 * event's time (the duration). That emulator then ends as one that
 * handled every event.
 *
 * What one emulator says after an error cannot be put together from
 * parts: an event that breaks a rule stops it, and what it says after
 * depends on every loom. So a conversion whose parts found an error (of
 * an event, or at the end of their threads; of the reading, a stream cut
 * short), or whose part failed, is done again by one thread, from
 * nothing: the output is always one emulator's. The reading's warnings
 * and notes are the same whoever reads (a note said once is kept for its
 * lowest stream: core/diag_merge.c), and both ways list them in stream
 * order. Not shared: a trace of one loom, and what the output says it
 * cannot share (a time window, Paraver's breakdown traces).
 *
 * The records of a part:
 *   'E' (kind n(2) lines)...          the .prv lines of an event in segments,
 *                                     each n bytes of lines of trace `kind`
 *   'R' record(31) thread(4) n(4) entries(8n)   a record of a thread or CPU
 *                                     and what the emulator knew of it
 *   'W' time(8) offset(8) n(4) file message     a warning of the event
 *   'T' model proc(4) id(4) label     a task type of process `proc` created
 *   'N' now(8)                        the part's last event, since the origin
 */
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "outputs/emu_shared.h"
#include "outputs/view_shared.h"

/* Counts a part hands on: events handled, what it said (0: nothing). */
enum { COUNT_EVENTS = 0, COUNT_PROBLEMS = 1 };

/* What every part is told. */
typedef struct part_options {
	int all_models;
	int lines;            /* weft__emu_target.lines */
} part_options;

/* A segment of an 'E' record: its lines' trace (1 byte), their bytes (2). */
#define SEGMENT_HEAD 3
#define SEGMENT_MAX 65535u
/* An 'R' record's fixed part: 'R', the record (time 8, kind 1, row 4,
 * type 4, value 8, depth 4, slot 2), thread 4, entries 4. */
#define RECORD_HEAD 40

/* ---- A part ---------------------------------------------------------------------- */

typedef struct emu_part {
	weft__view_part *p;
	weft__emu *emu;
	int lines;
	weft__prv_lines prv;
	weft__outbuf out;     /* the run's chunks */
	int open;             /* an 'E' record is being written (at p->start) */
	size_t segment;       /* where its last segment's head is in `out` */
	int segment_kind;
} emu_part;

/* Ends the 'E' record of the lines of the event so far, if one was begun. */
static void end_lines(emu_part *ep)
{
	if (ep->open) {
		ep->open = 0;
		weft__view_part_record_end(ep->p);
	}
}

/* A record's line, into its event's 'E' record (one keyed record per
 * event, not per line: the merge's work is per key). */
static void put_line(emu_part *ep, const weft__emu_record *r)
{
	weft__view_part *p = ep->p;

	if (!ep->open) {
		p->start = p->out->len;
		weft__outbuf_put(p->out, "E", 1);
		ep->open = 1;
		ep->segment_kind = -1;
	}
	uint16_t n = 0;
	if (ep->segment_kind == (int)r->kind)
		memcpy(&n, p->out->buf + ep->segment + 1, 2);
	if (ep->segment_kind != (int)r->kind || n > SEGMENT_MAX - WEFT__PRV_LINE_MAX) {
		char *h = weft__outbuf_reserve(p->out, SEGMENT_HEAD);
		ep->segment = p->out->len;
		ep->segment_kind = (int)r->kind;
		h[0] = (char)r->kind;
		n = 0;
		weft__outbuf_commit(p->out, h + SEGMENT_HEAD);
	}
	char *b = weft__outbuf_reserve(p->out, WEFT__PRV_LINE_MAX);
	char *end = weft__prv_line(&ep->prv, r, r->time, b);
	weft__outbuf_commit(p->out, end);
	n = (uint16_t)(n + (end - b));
	memcpy(p->out->buf + ep->segment + 1, &n, 2);
}

/* A record of a thread or CPU with its thread and, for a stack channel
 * that holds a value, its entries: an 'R' record. */
static void put_record(emu_part *ep, const weft__emu_record *r)
{
	weft__view_part *p = ep->p;
	weft__emu_slot_info si;
	const int64_t *stack = NULL;
	uint32_t n = 0;
	int32_t thread = weft__emu_record_thread(ep->emu, r);
	uint32_t kind = (uint32_t)r->kind;

	if (r->slot != WEFT__EMU_NO_SLOT && r->value != 0 &&
	    weft__emu_slot_describe(ep->emu, r->slot, &si) == 0 && si.stack &&
	    (stack = weft__emu_record_stack(ep->emu, r)) != NULL)
		n = r->depth;
	p->start = p->out->len;
	char *b = weft__outbuf_reserve(p->out, RECORD_HEAD);
	b[0] = 'R';
	memcpy(b + 1, &r->time, 8);
	b[9] = (char)kind;
	memcpy(b + 10, &r->row, 4);
	memcpy(b + 14, &r->type, 4);
	memcpy(b + 18, &r->value, 8);
	memcpy(b + 26, &r->depth, 4);
	memcpy(b + 30, &r->slot, 2);
	memcpy(b + 32, &thread, 4);
	memcpy(b + 36, &n, 4);
	weft__outbuf_commit(p->out, b + RECORD_HEAD);
	if (n > 0)
		weft__outbuf_put(p->out, stack, (size_t)n * sizeof *stack);
	weft__view_part_record_end(p);
}

/* The emulator's sink. */
static int part_record(void *ctx, const weft__emu_record *r)
{
	emu_part *ep = ctx;

	if (ep->lines)
		put_line(ep, r);
	else if (r->kind == WEFT__EMU_THREAD || r->kind == WEFT__EMU_CPU)
		put_record(ep, r); /* the breakdown traces are Paraver's */
	return ep->p->rc;
}

/* A 'W' record: a warning of the event being handled (weft__emu_warning_fn). */
static void put_warning(void *ctx, uint64_t time, const char *file, uint64_t offset,
			const char *message)
{
	emu_part *ep = ctx;
	weft__view_part *p = ep->p;
	uint32_t file_len = (uint32_t)strlen(file);

	end_lines(ep); /* the lines before it, then the warning */
	p->start = p->out->len;
	char *b = weft__outbuf_reserve(p->out, 21);
	b[0] = 'W';
	memcpy(b + 1, &time, 8);
	memcpy(b + 9, &offset, 8);
	memcpy(b + 17, &file_len, 4);
	weft__outbuf_commit(p->out, b + 21);
	weft__outbuf_put(p->out, file, file_len);
	weft__outbuf_put(p->out, message, strlen(message));
	weft__view_part_record_end(p);
}

/* A 'T' record: a task type created by the event (weft__emu_type_fn). */
static void put_type(void *ctx, char model, uint32_t proc, uint32_t id, const char *label)
{
	emu_part *ep = ctx;
	weft__view_part *p = ep->p;

	end_lines(ep);
	p->start = p->out->len;
	char *b = weft__outbuf_reserve(p->out, 10);
	b[0] = 'T';
	b[1] = model;
	memcpy(b + 2, &proc, 4);
	memcpy(b + 6, &id, 4);
	weft__outbuf_commit(p->out, b + 10);
	weft__outbuf_put(p->out, label, strlen(label));
	weft__view_part_record_end(p);
}

static int part_create(weft_trace *handle, weft__view_part *p, const uint64_t *first,
		       const void *arg, void **state, weft__view_sink *sink)
{
	const part_options *o = arg;
	emu_part *ep = calloc(1, sizeof *ep);

	(void)sink; /* the part takes the events itself */
	*state = ep;
	if (ep == NULL)
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	ep->p = p;
	ep->lines = o->lines;
	ep->out = (weft__outbuf){ .fd = WEFT__OUTBUF_GROW };
	p->out = &ep->out;
	weft__emu_options eo = { .all_models = o->all_models };
	weft__emu_sink es = { ep, part_record };
	int rc = weft__emu_create(handle, &eo, &es, &ep->emu);
	if (rc == 0 && ep->lines)
		rc = weft__prv_lines_init(&ep->prv, ep->emu);
	if (rc == 0)
		rc = weft__emu_set_scope(ep->emu, p->selected); /* its end checks */
	if (rc == 0) {
		weft__emu_set_warning_sink(ep->emu, put_warning, ep);
		weft__emu_set_type_sink(ep->emu, put_type, ep);
	}
	if (rc == 0 && first != NULL)
		weft__emu_set_origin(ep->emu, *first);
	return rc;
}

/* One event: 1 (stop) once the emulation refused the trace. */
static int part_event(void *state, weft__view_part *p, const weft_event *ev)
{
	emu_part *ep = state;
	int rc = weft__emu_event(ep->emu, ev);

	end_lines(ep);
	if (rc == WEFT_EFORMAT)
		return 1; /* said: the conversion is done again by one thread */
	return rc < 0 && p->rc < 0 ? p->rc : rc;
}

/* The end checks of its threads (what they say makes the conversion one
 * thread's), then the last event's time, keyed after every event. */
static int part_finish(void *state, weft__view_part *p)
{
	emu_part *ep = state;
	uint64_t now = weft__emu_now(ep->emu);

	weft__emu_finish(ep->emu, 1);
	p->time = UINT64_MAX;
	p->stream = WEFT__VIEW_FINISH_STREAM;
	p->start = p->out->len;
	char *b = weft__outbuf_reserve(p->out, 9);
	b[0] = 'N';
	memcpy(b + 1, &now, 8);
	weft__outbuf_commit(p->out, b + 9);
	weft__view_part_record_end(p);
	return p->rc;
}

static int part_status(void *state)
{
	const emu_part *ep = state;

	return ep->out.error != 0 ? weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET,
						"out of memory for the emulation's records") : 0;
}

static void part_free(void *state, uint64_t *counts)
{
	emu_part *ep = state;

	if (ep == NULL)
		return;
	if (ep->emu != NULL) {
		counts[COUNT_EVENTS] += weft__emu_event_count(ep->emu);
		counts[COUNT_PROBLEMS] += weft__emu_error_count(ep->emu) +
					  (uint64_t)weft__emu_failed(ep->emu);
	} else {
		counts[COUNT_PROBLEMS]++;
	}
	weft__prv_lines_free(&ep->prv);
	weft__emu_free(ep->emu);
	free(ep);
}

/* ---- The merge (rank 0, or one process), into the writer ----------------------------- */

/* The merge's side: the output, its emulator, what the parts leave. */
typedef struct emu_merge {
	const weft__emu_target *t;
	void *w;              /* the output's impl */
	weft__emu *emu;       /* its emulator */
	int first_found;      /* the first time of all streams (the origin) */
	uint64_t first;
	uint64_t now;         /* the latest last event of the parts (since the origin) */
	uint64_t events;      /* handled by the parts */
	uint64_t problems;    /* the parts' errors and failures */
	int64_t *stack;       /* an 'R' record's entries, aligned */
	size_t stack_cap;
} emu_merge;

static void set_first_time(void *out, uint64_t time)
{
	emu_merge *m = out;

	m->first_found = 1;
	m->first = time;
	weft__emu_set_origin(m->emu, time); /* the records' times count from it */
}

/* The lines of an event's 'E' record, segment by segment. */
static int merge_lines(emu_merge *m, const char *p, const char *end)
{
	while (end - p >= SEGMENT_HEAD) {
		int kind = p[0];
		uint16_t n;
		memcpy(&n, p + 1, 2);
		p += SEGMENT_HEAD;
		if (kind < 0 || kind >= WEFT__EMU_KINDS || n > end - p)
			return weft__view_bad_record();
		int rc = m->t->put_lines(m->w, kind, p, n);
		if (rc < 0)
			return rc;
		p += n;
	}
	return p == end ? 0 : weft__view_bad_record();
}

/* An 'R' record into the output's record sink. */
static int merge_record(emu_merge *m, const char *rec, size_t len)
{
	weft__emu_record r;
	int32_t thread;
	uint32_t n;

	if (len < RECORD_HEAD)
		return weft__view_bad_record();
	memcpy(&n, rec + 36, 4);
	if (n > (len - RECORD_HEAD) / sizeof(int64_t) ||
	    len != RECORD_HEAD + (size_t)n * sizeof(int64_t))
		return weft__view_bad_record();
	memset(&r, 0, sizeof r);
	memcpy(&r.time, rec + 1, 8);
	r.kind = (weft__emu_kind)(uint8_t)rec[9];
	memcpy(&r.row, rec + 10, 4);
	memcpy(&r.type, rec + 14, 4);
	memcpy(&r.value, rec + 18, 8);
	memcpy(&r.depth, rec + 26, 4);
	memcpy(&r.slot, rec + 30, 2);
	memcpy(&thread, rec + 32, 4);
	if (n > m->stack_cap) {
		int64_t *s = realloc(m->stack, n * sizeof *s);
		if (s == NULL)
			return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
		m->stack = s;
		m->stack_cap = n;
	}
	if (n > 0)
		memcpy(m->stack, rec + RECORD_HEAD, (size_t)n * sizeof *m->stack);
	return m->t->put_record(m->w, &r, thread, n > 0 ? m->stack : NULL);
}

/* A part's warning, counted by the writer's emulator in the merged order. */
static int merge_warning(emu_merge *m, const char *rec, size_t len)
{
	uint64_t time, offset;
	uint32_t file_len;

	memcpy(&time, rec + 1, 8);
	memcpy(&offset, rec + 9, 8);
	memcpy(&file_len, rec + 17, 4);
	if (file_len > len - 21)
		return weft__view_bad_record();
	char *text = malloc(len - 21 + 2);
	if (text == NULL)
		return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	memcpy(text, rec + 21, file_len);
	text[file_len] = '\0';
	memcpy(text + file_len + 1, rec + 21 + file_len, len - 21 - file_len);
	text[len - 21 + 1] = '\0';
	weft__emu_add_warning(m->emu, time, text, offset, text + file_len + 1);
	free(text);
	return 0;
}

static int merge(void *out, weft__view *view, uint32_t track, const char *rec, size_t len)
{
	emu_merge *m = out;
	uint64_t now;
	uint32_t proc, id;
	char label[512];

	(void)view;
	(void)track;
	if (len >= 1 && rec[0] == 'E')
		return merge_lines(m, rec + 1, rec + len);
	if (len >= 1 && rec[0] == 'R')
		return merge_record(m, rec, len);
	if (len >= 21 && rec[0] == 'W')
		return merge_warning(m, rec, len);
	if (len == 9 && rec[0] == 'N') {
		memcpy(&now, rec + 1, 8);
		m->now = now > m->now ? now : m->now;
		return 0;
	}
	if (len < 10 || len - 10 >= sizeof label || rec[0] != 'T')
		return weft__view_bad_record();
	memcpy(&proc, rec + 2, 4);
	memcpy(&id, rec + 6, 4);
	memcpy(label, rec + 10, len - 10);
	label[len - 10] = '\0';
	return weft__emu_task_type_add(m->emu, rec[1], proc, id, label);
}

static int failed(void *out)
{
	const emu_merge *m = out;

	return m->t->failed(m->w);
}

static void add_counts(void *out, const uint64_t *counts)
{
	emu_merge *m = out;

	m->events += counts[COUNT_EVENTS];
	m->problems += counts[COUNT_PROBLEMS];
}

static const weft__view_share_ops emu_share_ops = {
	.wants_first_time = 1,
	.part_create = part_create,
	.part_status = part_status,
	.part_free = part_free,
	.set_first_time = set_first_time,
	.merge = merge,
	.failed = failed,
	.add_counts = add_counts,
	.part_event = part_event,
	.part_finish = part_finish,
};

/* ---- The conversion ---------------------------------------------------------------- */

/*
 * Each stream's loom (its group: weft__share_deal_groups), from the
 * system every rank builds alike from the metadata; streams that are no
 * thread of it are a group of their own. *looms: looms with a stream.
 * NULL without memory, or when the system cannot be built (then one
 * thread converts, and says why).
 */
static uint32_t *loom_groups(const weft_trace *trace, size_t *looms)
{
	weft__emu_system *sys = NULL;
	size_t n = weft_trace_stream_count(trace);
	uint32_t *groups = malloc((n ? n : 1) * sizeof *groups);
	uint8_t *used = NULL;

	*looms = 0;
	if (groups == NULL || weft__emu_system_load(trace, &sys) < 0 ||
	    (used = calloc(sys->nlooms + 1, 1)) == NULL) {
		weft__emu_system_free(sys);
		free(groups);
		return NULL;
	}
	for (size_t i = 0; i < n; i++)
		groups[i] = UINT32_MAX;
	for (size_t t = 0; t < sys->nthreads; t++) {
		size_t loom = sys->procs[sys->threads[t].proc].loom;
		groups[sys->threads[t].stream] = (uint32_t)loom;
		*looms += !used[loom];
		used[loom] = 1;
	}
	free(used);
	weft__emu_system_free(sys);
	return groups;
}

/* The parts' job: the writer's filter and streams, the looms kept whole. */
static void job_init(weft__view_shared *job, const weft_output_writer *w,
		     const weft_filter *filter, const uint32_t *groups, const part_options *o)
{
	memset(job, 0, sizeof *job);
	job->filter = filter;
	job->among = w->selected;
	job->groups = groups;
	job->part_arg = o;
	job->view = (weft__view_options){ .time_ordered = 1 };
}

/* Another rank's part (collective with rank 0's conversion below). */
static int follow(weft_output_writer *w, const part_options *o)
{
	weft_filter filter;
	weft__view_shared job;
	size_t looms;
	uint32_t *groups = loom_groups(w->job.trace, &looms);

	weft_output_writer_filter(w, &filter);
	job_init(&job, w, &filter, groups, o);
	if (groups == NULL)
		job.among = NULL; /* takes part, and fails */
	int rc = weft__view_convert_ranks(w->job.trace, &emu_share_ops, NULL, NULL, &job, 0);
	free(job.too_deep);
	free(groups);
	return rc != 0;
}

/* 1 when the parts' reading said an error (a stream cut short): one
 * emulator would have met what follows at another point. */
static int reading_failed(const weft_trace *trace, size_t diags)
{
	for (size_t i = diags; i < weft_trace_diag_count(trace); i++)
		if (weft_trace_diag(trace, i)->severity == WEFT_SEV_ERROR)
			return 1;
	return 0;
}

/*
 * After the parts: 1 when their output is the output (the writer's
 * emulator then ends as if it had handled every event), 0 when one
 * thread converts again (what the parts said forgotten), < 0 when the
 * output failed.
 */
static int take_parts(weft_output_writer *w, const emu_merge *m, int rc, int write_failed,
		      size_t diags, uint64_t dropped)
{
	weft_trace *trace = w->job.trace;

	if (rc < 0 && write_failed) {
		weft__trace_diags_sort(trace, diags);
		weft__convert_fail(w->job.report, "writing the output failed", rc);
		weft__output_writer_fail(w);
		return rc;
	}
	if (rc < 0 || m->problems > 0 || reading_failed(trace, diags)) {
		weft__trace_diags_forget(trace, diags, dropped);
		/* a phase of its own: --verbose shows the time it takes */
		weft__progress_end(trace);
		weft__progress_begin(trace, "converting again on one thread");
		rc = m->t->restart(w);
		if (rc < 0) {
			weft__output_writer_fail(w);
			return rc;
		}
		return 0;
	}
	/* the parts checked their threads' ends; the task types are checked here */
	if (weft__emu_set_scope(m->emu, NULL) < 0) {
		weft__convert_fail(w->job.report, "cannot end the emulation", WEFT_ENOMEM);
		weft__output_writer_fail(w);
		return WEFT_ENOMEM;
	}
	weft__emu_set_handled(m->emu, m->first, m->now, m->events);
	w->job.report->selected += m->events;
	return 1;
}

int weft__emu_convert_shared(weft_output_writer *w, const weft__emu_target *t)
{
	weft_trace *trace = w->job.trace;
	int on_ranks = weft__dist_active(trace) && !weft_trace_file_order_default(trace);
	part_options o = { w->options.all_models, t->lines };
	weft_filter filter;
	weft__view_shared job;
	size_t looms = 0;

	if (w->follower)
		return on_ranks ? follow(w, &o) : 0;
	weft_output_writer_filter(w, &filter);
	int share = t->can_share(w) && weft__cursor_merges_streams(trace, &filter);
	uint32_t *groups = share ? loom_groups(trace, &looms) : NULL;
	share = groups != NULL && looms >= 2;
	/* the calling thread merges and the output is written on threads of
	 * its own: one part fewer than the threads, as for the viewers */
	int parts = share ? weft__parts_threads(trace, w->selected, 0, WEFT__WORK_HEAVY) - 1 : 0;
	parts = (size_t)parts > looms ? (int)looms : parts;
	if (!on_ranks && parts < 2) {
		free(groups);
		return 0;
	}
	emu_merge m = { .t = t, .w = w->impl, .emu = t->emulator(w->impl) };
	job_init(&job, w, &filter, groups, &o);
	job.parts = parts;
	size_t diags = weft_trace_diag_count(trace);
	uint64_t dropped = trace->diags_dropped;
	int rc;
	if (on_ranks) {
		rc = weft__view_convert_ranks(trace, &emu_share_ops, share ? &m : NULL, NULL, &job,
					      share);
		if (rc == 0) { /* rank 0 converts alone */
			free(groups);
			return 0;
		}
	} else {
		rc = weft__view_convert_shared(trace, &emu_share_ops, &m, NULL, &job);
	}
	free(job.too_deep);
	free(groups);
	free(m.stack);
	rc = take_parts(w, &m, rc < 0 ? rc : 0, job.write_failed, diags, dropped);
	return rc != 0; /* a failed output is said: done */
}
