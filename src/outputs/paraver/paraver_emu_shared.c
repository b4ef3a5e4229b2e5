/* SPDX-License-Identifier: MIT */
/*
 * outputs/paraver/paraver_emu_shared.c - the emulated Paraver output of an
 * ovni trace (paraver_emu.c) with its looms shared among threads and
 * ranks: byte for byte the files one emulator writes.
 *
 * Why it can be shared: the looms of an ovni trace (its nodes) share
 * nothing while they are emulated (emu/emu.h, "An emulation shared by
 * looms"). So each part (a thread, on any rank) runs an emulator of its
 * own over the streams of some whole looms, in the merged order of those
 * streams (the order one merged cursor gives them, outputs/keyed_runs.h),
 * counting time from the first event of all streams, and formats each
 * record's line of thread.prv or cpu.prv keyed by its event; the merge of
 * the parts' runs by key (outputs/view_shared.c, which also carries the
 * runs of other ranks to rank 0) puts the lines in the order of one
 * emulator reading all streams. What crosses looms comes at the parts'
 * end, keyed after every event: the task types of each process (keyed by
 * the process: the .pcf lists them process by process), added to the
 * writer's emulator, which then checks them for hash collisions as one
 * emulator does at its end; and the last event's time (the header's
 * duration).
 *
 * The warnings of the events (ovniemu counts each message across looms,
 * and lists the first ones) go as records too, keyed by their event, and
 * the writer's emulator counts them in the merged order. What one
 * emulator would say after an error cannot be put together from parts: an
 * event that breaks a rule stops it, and what it says after depends on
 * every loom. So a conversion whose parts found an error (of an event,
 * or at the end of their threads; of the reading, a stream cut short),
 * or whose part failed, is done again by one thread, from nothing: the
 * output is always one emulator's. The reading's warnings and notes are
 * the same whoever reads (a note said once is kept for its lowest stream:
 * core/diag_merge.c), and both ways list them in stream order. Not shared either: a time
 * window (the state at its start is that of every row), the breakdown
 * traces (their rows sort the CPUs of every loom), a trace of one loom.
 *
 * The records of a part:
 *   'E' (kind n(2) lines)...          the lines of an event in segments, each
 *                                     n bytes of lines of trace `kind` (0 thread,
 *                                     1 cpu), newlines included
 *   'W' time(8) offset(8) n(4) file message   a warning of the event (file: n bytes)
 *   'N' now(8)                        the part's last event, since the origin
 *   'T' model proc(4) id(4) label     a task type of process `proc`
 */
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "outputs/paraver/paraver_emu.h"
#include "outputs/view_shared.h"

/* Counts a part hands on: events handled, what it said (0: nothing). */
enum { COUNT_EVENTS = 0, COUNT_PROBLEMS = 1 };

/* What every part is told: the emulator's option. */
typedef struct part_options {
	int all_models;
} part_options;

/* ---- A part ---------------------------------------------------------------------- */

typedef struct emu_part {
	weft__view_part *p;
	weft__emu *emu;
	weft__prv_lines lines;
	weft__outbuf out;     /* the run's chunks */
	int open;             /* an 'E' record is being written (at p->start) */
	size_t segment;       /* where its last segment's head is in `out` */
	int segment_kind;
} emu_part;

/* A segment of an 'E' record: its lines' trace (1 byte), their bytes (2). */
#define SEGMENT_HEAD 3
#define SEGMENT_MAX 65535u

/* Ends the 'E' record of the lines of the event so far, if one was begun. */
static void end_lines(emu_part *ep)
{
	if (ep->open) {
		ep->open = 0;
		weft__view_part_record_end(ep->p);
	}
}

/* The emulator's sink: the record's line, into its event's 'E' record
 * (one keyed record per event, not per line: the merge's work is per key). */
static int part_record(void *ctx, const weft__emu_record *r)
{
	emu_part *ep = ctx;
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
	char *end = weft__prv_line(&ep->lines, r, r->time, b);
	weft__outbuf_commit(p->out, end);
	n = (uint16_t)(n + (end - b));
	memcpy(p->out->buf + ep->segment + 1, &n, 2);
	return p->rc;
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
	ep->out = (weft__outbuf){ .fd = WEFT__OUTBUF_GROW };
	p->out = &ep->out;
	weft__emu_options eo = { .all_models = o->all_models };
	weft__emu_sink es = { ep, part_record };
	int rc = weft__emu_create(handle, &eo, &es, &ep->emu);
	if (rc == 0)
		rc = weft__prv_lines_init(&ep->lines, ep->emu);
	if (rc == 0)
		rc = weft__emu_set_scope(ep->emu, p->selected); /* its end checks */
	if (rc == 0)
		weft__emu_set_warning_sink(ep->emu, put_warning, ep);
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

/* A 'T' record (weft__emu_type_fn). */
static int put_type(void *arg, char model, uint32_t proc, uint32_t id, const char *label)
{
	weft__view_part *p = arg;
	size_t n = strlen(label);

	p->start = p->out->len;
	char *b = weft__outbuf_reserve(p->out, 10);
	b[0] = 'T';
	b[1] = model;
	memcpy(b + 2, &proc, 4);
	memcpy(b + 6, &id, 4);
	weft__outbuf_commit(p->out, b + 10);
	weft__outbuf_put(p->out, label, n);
	weft__view_part_record_end(p);
	return p->rc;
}

/* The end checks (what they say makes the conversion one thread's), then
 * the last event's time and every process's task types. */
static int part_finish(void *state, weft__view_part *p)
{
	emu_part *ep = state;
	const weft__emu_system *sys = weft__emu_system_of(ep->emu);
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
	for (size_t proc = 0; p->rc == 0 && proc < sys->nprocs; proc++) {
		p->stream = WEFT__VIEW_FINISH_STREAM | (uint32_t)proc;
		int rc = weft__emu_task_types(ep->emu, (uint32_t)proc, put_type, p);
		if (rc < 0)
			return rc;
	}
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
	weft__prv_lines_free(&ep->lines);
	weft__emu_free(ep->emu);
	free(ep);
}

/* ---- The merge (rank 0, or one process), into the writer ----------------------------- */

static void set_first_time(void *out, uint64_t time)
{
	weft__paraver_emu *ew = out;

	ew->shared.first_found = 1;
	ew->shared.first = time;
}

/* The lines of an event's 'E' record, segment by segment. */
static int merge_lines(weft__paraver_emu *ew, const char *p, const char *end)
{
	while (end - p >= SEGMENT_HEAD) {
		int kind = p[0];
		uint16_t n;
		memcpy(&n, p + 1, 2);
		p += SEGMENT_HEAD;
		if (kind < 0 || kind >= WEFT__EMU_KINDS || ew->prv[kind].fd < 0 || n > end - p)
			return weft__view_bad_record();
		int rc = weft__paraver_emu_put(ew, kind, p, n);
		if (rc < 0)
			return rc;
		p += n;
	}
	return p == end ? 0 : weft__view_bad_record();
}

/* A part's warning, counted by the writer's emulator in the merged order. */
static int merge_warning(weft__paraver_emu *ew, const char *rec, size_t len)
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
	weft__emu_add_warning(ew->emu, time, text, offset, text + file_len + 1);
	free(text);
	return 0;
}

static int merge(void *out, weft__view *view, uint32_t track, const char *rec, size_t len)
{
	weft__paraver_emu *ew = out;
	uint64_t now;
	uint32_t proc, id;
	char label[512];

	(void)view;
	(void)track;
	if (len >= 1 && rec[0] == 'E')
		return merge_lines(ew, rec + 1, rec + len);
	if (len == 9 && rec[0] == 'N') {
		memcpy(&now, rec + 1, 8);
		ew->shared.now = now > ew->shared.now ? now : ew->shared.now;
		return 0;
	}
	if (len >= 21 && rec[0] == 'W')
		return merge_warning(ew, rec, len);
	if (len < 10 || len - 10 >= sizeof label || rec[0] != 'T')
		return weft__view_bad_record();
	memcpy(&proc, rec + 2, 4);
	memcpy(&id, rec + 6, 4);
	memcpy(label, rec + 10, len - 10);
	label[len - 10] = '\0';
	return weft__emu_task_type_add(ew->emu, rec[1], proc, id, label);
}

static int failed(void *out)
{
	const weft__paraver_emu *ew = out;

	for (int k = 0; k < WEFT__EMU_KINDS; k++)
		if (ew->prv[k].fd >= 0 && ew->prv[k].ob.error != 0)
			return 1;
	return 0;
}

static void add_counts(void *out, const uint64_t *counts)
{
	weft__paraver_emu *ew = out;

	ew->shared.events += counts[COUNT_EVENTS];
	ew->shared.problems += counts[COUNT_PROBLEMS];
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

/* 1 when one emulator's output can come from parts (see the top). */
static int can_share(const weft_output_writer *w, const weft_filter *filter)
{
	const weft__paraver_emu *ew = w->impl;

	return ew != NULL && !ew->win.windowed && !w->options.breakdown &&
	       weft__cursor_merges_streams(w->job.trace, filter);
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
static int follow(weft_output_writer *w)
{
	weft_filter filter;
	weft__view_shared job;
	part_options o = { w->options.all_models };
	size_t looms;
	uint32_t *groups = loom_groups(w->job.trace, &looms);

	weft_output_writer_filter(w, &filter);
	job_init(&job, w, &filter, groups, &o);
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
 * After the parts: 1 when their lines are the output (the writer's
 * emulator then ends as if it had handled every event), 0 when one
 * thread converts again (what the parts said forgotten), < 0 when the
 * output failed.
 */
static int take_parts(weft_output_writer *w, int rc, int write_failed, size_t diags,
		      uint64_t dropped)
{
	weft__paraver_emu *ew = w->impl;
	weft_trace *trace = w->job.trace;

	if (rc < 0 && write_failed) {
		weft__trace_diags_sort(trace, diags);
		weft__convert_fail(w->job.report, "writing the output failed", rc);
		weft__output_writer_fail(w);
		return rc;
	}
	if (rc < 0 || ew->shared.problems > 0 || reading_failed(trace, diags)) {
		weft__trace_diags_forget(trace, diags, dropped);
		/* a phase of its own: --verbose shows the time it takes */
		weft__progress_end(trace);
		weft__progress_begin(trace, "converting again on one thread");
		rc = weft__paraver_emu_restart(w);
		if (rc < 0) {
			weft__output_writer_fail(w);
			return rc;
		}
		return 0;
	}
	/* the parts checked their threads' ends; the types are checked here */
	if (weft__emu_set_scope(ew->emu, NULL) < 0) {
		weft__convert_fail(w->job.report, "cannot end the emulation", WEFT_ENOMEM);
		weft__output_writer_fail(w);
		return WEFT_ENOMEM;
	}
	weft__emu_set_handled(ew->emu, ew->shared.first, ew->shared.now, ew->shared.events);
	w->job.report->selected += ew->shared.events;
	return 1;
}

int weft__paraver_emu_convert_shared(weft_output_writer *w)
{
	weft_trace *trace = w->job.trace;
	int on_ranks = weft__dist_active(trace) && !weft_trace_file_order_default(trace);
	weft_filter filter;
	weft__view_shared job;
	part_options o = { w->options.all_models };
	size_t looms = 0;

	if (w->follower)
		return on_ranks ? follow(w) : 0;
	weft__paraver_emu *ew = w->impl;
	weft_output_writer_filter(w, &filter);
	int share = can_share(w, &filter);
	uint32_t *groups = share ? loom_groups(trace, &looms) : NULL;
	share = groups != NULL && looms >= 2;
	/* the calling thread merges and the .prv are written on threads of
	 * their own: one part fewer than the threads, as for the viewers */
	int parts = share ? weft__parts_threads(trace, w->selected, 0, WEFT__WORK_HEAVY) - 1 : 0;
	parts = (size_t)parts > looms ? (int)looms : parts;
	if (!on_ranks && parts < 2) {
		free(groups);
		return 0;
	}
	job_init(&job, w, &filter, groups, &o);
	job.parts = parts;
	size_t diags = weft_trace_diag_count(trace);
	uint64_t dropped = trace->diags_dropped;
	int rc;
	if (on_ranks) {
		rc = weft__view_convert_ranks(trace, &emu_share_ops, share ? ew : NULL, NULL, &job,
					      share);
		if (rc == 0) { /* rank 0 converts alone */
			free(groups);
			return 0;
		}
	} else {
		rc = weft__view_convert_shared(trace, &emu_share_ops, ew, NULL, &job);
	}
	free(job.too_deep);
	free(groups);
	rc = take_parts(w, rc < 0 ? rc : 0, job.write_failed, diags, dropped);
	return rc != 0; /* a failed output is said: done */
}
