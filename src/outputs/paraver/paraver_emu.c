/* SPDX-License-Identifier: MIT */
/*
 * outputs/paraver/paraver_emu.c - the Paraver output of an emulated ovni
 * trace (docs/emulation.md): the records of the emulator (src/emu) as
 * ovniemu writes them, into two traces in the directory OUT:
 * thread.{prv,pcf,row} (a row per thread) and cpu.{prv,pcf,row} (a row per
 * CPU and one virtual CPU per loom), so that the Paraver views ovni ships
 * open them unchanged.
 *
 * The emulator replays the events in time order and its records come in
 * time order, so each .prv is written straight through a buffer; its
 * header has a fixed width (the duration in 20 digits) and is rewritten
 * in place at the end. The .pcf (whose task type labels are known only at
 * the end) and the .row are written then. Everything goes into a
 * temporary directory next to OUT, renamed over it at the end.
 *
 * A trace the emulation refuses (a rule of its models broken) leaves OUT
 * as it was, unless data loss is allowed: then the records up to the
 * failing event are kept, as ovniemu keeps them, and the loss reported.
 *
 * A time window [from, to] cuts the records: the emulation still replays
 * every event from the start (the state at `from` depends on them), the
 * records before `from` are not written, the state of every row at
 * `from` is (a record of each row channel that holds a value), and the
 * reading stops after `to`. Times then count from `from`.
 */
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/internal.h"
#include "emu/emu.h"
#include "outputs/bg_writer.h"
#include "outputs/emu_output.h"
#include "outputs/emu_shared.h"
#include "outputs/outdir.h"
#include "outputs/outputs.h"
#include "outputs/paraver/paraver_cfg.h"
#include "outputs/writer.h"

static const char *const suffixes[3] = { ".prv", ".pcf", ".row" };

/* Bytes a .prv's buffer hands to its writer thread at once (and slack for
 * the record that crosses that). */
#define CHUNK (1u << 20)
#define CHUNK_SLACK (4u << 10)

/*
 * One .prv being written: formatted into `ob`, whose full buffers a
 * thread of its own writes (positioned, written back to the disk as it
 * goes, as the output is synced at the end), so that formatting and the
 * kernel's copying overlap: the .prv are several times larger than the
 * trace.
 */
typedef struct prv_file {
	int fd;
	weft__outbuf ob;
	weft__bg_output bg;
} prv_file;

typedef struct emu_writer {
	weft__emu *emu;
	char *out;            /* OUT (the directory) */
	char *tmp;            /* the temporary directory being written */
	char *cfg_source;     /* ovni's views to copy into cfg/, or NULL */
	int replace;          /* OUT exists and is replaced */
	int committed;
	prv_file prv[WEFT__EMU_KINDS]; /* thread, cpu, the breakdowns (fd -1: none) */
	weft__emu_window win; /* the time window */
	weft__prv_lines lines;
} emu_writer;

/* "<trace name><suffix>" of trace `kind`, part `part` (.prv, .pcf, .row). */
static void file_name(int kind, int part, char *buf, size_t cap)
{
	snprintf(buf, cap, "%s%s", weft__emu_trace_name((weft__emu_kind)kind), suffixes[part]);
}

/* 1 for the entries an emulated Paraver output has (what --force replaces). */
static int emu_entry(const char *name)
{
	char f[64];
	for (int k = 0; k < WEFT__EMU_KINDS; k++)
		for (int i = 0; i < 3; i++) {
			file_name(k, i, f, sizeof f);
			if (strcmp(name, f) == 0)
				return 1;
		}
	return strcmp(name, "cfg") == 0;
}

static const weft__outdir_kind emu_dir = { "an emulated Paraver output (thread.prv, cpu.prv)",
					   emu_entry };

/* "<dir>/<name>" (malloc'd, or NULL). */
static char *join(const char *dir, const char *name)
{
	size_t n = strlen(dir), m = strlen(name);
	char *p = malloc(n + m + 2);
	if (p != NULL) {
		memcpy(p, dir, n);
		p[n] = '/';
		memcpy(p + n + 1, name, m + 1);
	}
	return p;
}

/* Writes a whole file `name` of the temporary directory. 0 or WEFT_EIO. */
static int write_file(emu_writer *ew, const char *name, const char *text)
{
	char *path = join(ew->tmp, name);
	int rc = path == NULL ? weft__error(WEFT_ENOMEM, name, WEFT_NO_OFFSET, "out of memory")
	       : weft__paraver_write_whole(path, text, strlen(text), name);
	free(path);
	return rc;
}

/* ---- Records -------------------------------------------------------------------- */

int weft__prv_lines_init(weft__prv_lines *l, const weft__emu *e)
{
	memset(l, 0, sizeof *l);
	for (int k = 0; k < WEFT__EMU_KINDS; k++) {
		if (!weft__emu_trace_on(e, (weft__emu_kind)k))
			continue;
		uint32_t rows = weft__emu_trace_rows(e, (weft__emu_kind)k);
		char *t = malloc(((size_t)rows + 1) * WEFT__PRV_ROW_PREFIX);
		if (t == NULL) {
			weft__prv_lines_free(l);
			return weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
		}
		for (uint32_t r = 0; r < rows; r++) {
			char *p = &t[(size_t)r * WEFT__PRV_ROW_PREFIX];
			int n = snprintf(p + 1, WEFT__PRV_ROW_PREFIX - 1, "2:0:1:1:%" PRIu32 ":",
					 r + 1);
			p[0] = (char)n;
		}
		l->prefix[k] = t;
	}
	return 0;
}

void weft__prv_lines_free(weft__prv_lines *l)
{
	for (int k = 0; k < WEFT__EMU_KINDS; k++) {
		free(l->prefix[k]);
		l->prefix[k] = NULL;
	}
}

/*
 * "2:0:1:1:<row>:<time>:<type>:<value>", from the row's prefix made once
 * and the time's text made once per time (the hot path: the .prv are
 * several times larger than the trace).
 */
char *weft__prv_line(weft__prv_lines *l, const weft__emu_record *r, uint64_t time, char *p)
{
	if (time != l->time || l->time_len == 0) {
		l->time = time;
		l->time_len = (size_t)(weft__fmt_u64(l->time_text, time) - l->time_text);
		l->time_text[l->time_len++] = ':';
	}
	const char *pre = &l->prefix[r->kind][(size_t)r->row * WEFT__PRV_ROW_PREFIX];
	memcpy(p, pre + 1, WEFT__PRV_ROW_PREFIX - 1);
	p += (unsigned char)pre[0];
	memcpy(p, l->time_text, sizeof l->time_text);
	p += l->time_len;
	p = weft__fmt_u64(p, r->type);
	*p++ = ':';
	p = weft__fmt_i64(p, r->value);
	*p++ = '\n';
	return p;
}

/* A .prv's buffer after a line: handed to its thread when full; its error. */
static int line_written(emu_writer *ew, int kind)
{
	prv_file *f = &ew->prv[kind];
	if (f->bg.running && f->ob.len >= CHUNK)
		weft__bg_output_hand_over(&f->bg, &f->ob);
	if (f->ob.error != 0)
		return weft__error(WEFT_EIO, weft__emu_trace_name((weft__emu_kind)kind),
				   WEFT_NO_OFFSET, "cannot write: %s", strerror(f->ob.error));
	return 0;
}

/* One record of the emulator (its sink), into its .prv. */
static int put_record(void *ctx, const weft__emu_record *r)
{
	emu_writer *ew = ctx;
	if (!ew->win.opened)
		return 0;
	weft__outbuf *ob = &ew->prv[r->kind].ob;
	char *p = weft__outbuf_reserve(ob, WEFT__PRV_LINE_MAX);
	weft__outbuf_commit(ob, weft__prv_line(&ew->lines, r, r->time - ew->win.base, p));
	return line_written(ew, r->kind);
}

/* Lines of trace `kind` made by a part (emu_shared.c), into its .prv. */
static int put_lines(void *w, int kind, const char *lines, size_t len)
{
	emu_writer *ew = w;
	weft__outbuf_put(&ew->prv[kind].ob, lines, len);
	return line_written(ew, kind);
}

/* Opens a .prv in the temporary directory, with its header. */
static int open_prv(emu_writer *ew, int kind)
{
	char name[64];
	file_name(kind, 0, name, sizeof name);
	char *path = join(ew->tmp, name);
	prv_file *f = &ew->prv[kind];
	f->fd = path ? open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0666) : -1;
	free(path);
	if (f->fd < 0)
		return weft__error(WEFT_EIO, name, WEFT_NO_OFFSET, "cannot create: %s",
				   strerror(errno));
	int rc = weft__bg_output_start(&f->bg, f->fd, 1, CHUNK + CHUNK_SLACK);
	if (rc == 0)
		rc = weft__outbuf_init(&f->ob, f->fd, CHUNK + CHUNK_SLACK);
	char *head = weft__emu_trace_prv_header(ew->emu, (weft__emu_kind)kind, 0);
	if (rc == 0 && head == NULL)
		rc = weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
	if (rc == 0)
		weft__outbuf_puts(&f->ob, head);
	free(head);
	return rc;
}

/*
 * The header's duration: the last event's time (ovniemu's); with a window,
 * from its start to its end, or to the last event without an end.
 */
static uint64_t duration(const emu_writer *ew)
{
	uint64_t now = weft__emu_now(ew->emu), base = ew->win.base;
	if (!ew->win.windowed)
		return now;
	if (ew->win.to == 0 || weft__emu_event_count(ew->emu) == 0)
		return now > base ? now - base : 0;
	uint64_t start = base + weft__emu_first_time(ew->emu);
	return ew->win.to > start ? ew->win.to - start : 0;
}

/* Closes a .prv: the rest of its buffer, its header with the duration. */
static int close_prv(emu_writer *ew, int kind)
{
	char name[64];
	file_name(kind, 0, name, sizeof name);
	prv_file *f = &ew->prv[kind];
	int rc = weft__bg_output_stop(&f->bg);
	if (rc == 0)
		rc = weft__outbuf_flush(&f->ob);
	char *head = weft__emu_trace_prv_header(ew->emu, (weft__emu_kind)kind, duration(ew));
	if (rc == 0 && (head == NULL ||
			weft__write_full(f->fd, head, strlen(head), 0, NULL) != 0 ||
			fsync(f->fd) != 0))
		rc = weft__error(WEFT_EIO, name, WEFT_NO_OFFSET, "cannot write: %s",
				 strerror(errno ? errno : EIO));
	free(head);
	if (close(f->fd) != 0 && rc == 0)
		rc = weft__error(WEFT_EIO, name, WEFT_NO_OFFSET, "cannot write: %s",
				 strerror(errno));
	f->fd = -1;
	weft__outbuf_destroy(&f->ob);
	weft__bg_output_free(&f->bg);
	return rc;
}

/* ---- The writer ------------------------------------------------------------------- */

/* The options emulation cannot honour (it replays every event), and OUT.prv. */
static int check_options(weft_output_writer *w)
{
	const char *path = w->options.path;
	size_t n = strlen(path);
	if (strcmp(path, "-") == 0 || (n >= 4 && strcmp(path + n - 4, ".prv") == 0))
		return weft__emu_output_check(w, "with emulation, OUT is a directory that "
					      "receives ovniemu's two traces, thread.prv and "
					      "cpu.prv (--raw writes one OUT.prv)");
	return weft__emu_output_check(w, NULL);
}

/* Drops the emulation: its .prv files closed as they are, the emulator freed. */
static void stop_emulation(emu_writer *ew)
{
	for (int k = 0; k < WEFT__EMU_KINDS; k++)
		if (ew->prv[k].fd >= 0) {
			weft__bg_output_free(&ew->prv[k].bg);
			close(ew->prv[k].fd);
			ew->prv[k].fd = -1;
			weft__outbuf_destroy(&ew->prv[k].ob);
		}
	weft__prv_lines_free(&ew->lines);
	weft__emu_free(ew->emu);
	ew->emu = NULL;
}

static void emu_writer_free_impl(emu_writer *ew)
{
	if (ew == NULL)
		return;
	stop_emulation(ew);
	if (ew->tmp != NULL && !ew->committed)
		weft__outdir_remove_tree(ew->tmp);
	free(ew->tmp);
	free(ew->cfg_source);
	free(ew->out);
	free(ew);
}

/* The emulator and the .prv files it writes (created, or emptied). */
static int start_emulation(weft_output_writer *w, emu_writer *ew)
{
	weft_convert_report *r = w->job.report;
	weft__emu_options eo = { .all_models = w->options.all_models,
				 .breakdown = w->options.breakdown };
	weft__emu_sink sink = { ew, put_record };
	int rc = weft__emu_create(w->job.trace, &eo, &sink, &ew->emu);
	if (rc < 0) {
		weft__convert_say(r, "cannot emulate the trace: %s", weft_last_error());
		return rc;
	}
	rc = weft__prv_lines_init(&ew->lines, ew->emu);
	for (int k = 0; rc == 0 && k < WEFT__EMU_KINDS; k++)
		if (weft__emu_trace_on(ew->emu, (weft__emu_kind)k))
			rc = open_prv(ew, k);
	if (rc < 0)
		weft__convert_say(r, "%s", weft_last_error());
	weft__emu_window_init(&ew->win, w);
	return rc;
}

/* Starts over from nothing: a new emulator, the .prv files emptied. */
static int restart(weft_output_writer *w)
{
	emu_writer *ew = w->impl;
	stop_emulation(ew);
	return start_emulation(w, ew);
}

static int emu_create(weft_output_writer *w)
{
	weft_convert_report *r = w->job.report;
	w->filter = (weft_filter){ .order = WEFT_ORDER_TIME };
	if (w->follower)
		return 0; /* another rank's part: emu_shared.c, no output */
	int rc = check_options(w);
	if (rc < 0)
		return rc;
	emu_writer *ew = calloc(1, sizeof *ew);
	if (ew == NULL || (ew->out = strdup(w->options.path)) == NULL) {
		free(ew);
		weft__convert_say(r, "out of memory");
		return WEFT_ENOMEM;
	}
	for (int k = 0; k < WEFT__EMU_KINDS; k++)
		ew->prv[k].fd = -1;
	size_t n = strlen(ew->out);
	while (n > 1 && ew->out[n - 1] == '/')
		ew->out[--n] = '\0';
	rc = weft__cfg_source(w->options.ovni_cfg, &ew->cfg_source);
	if (rc < 0)
		weft__convert_say(r, "ovni_cfg: %s", weft_last_error());
	if (rc == 0)
		rc = weft__outdir_check(r, ew->out, w->options.force, &emu_dir, &ew->replace);
	if (rc == 0 && (ew->tmp = weft__outdir_make_sibling(r, ew->out, "tmp")) == NULL)
		rc = WEFT_EIO;
	if (rc == 0)
		rc = start_emulation(w, ew);
	if (rc < 0) {
		emu_writer_free_impl(ew);
		return rc;
	}
	weft__emu_output_say_models(w, ew->emu);
	w->impl = ew;
	return 0;
}

/* One event to the emulator; a refused trace or the window's end stops the reading (1). */
static int emu_event(weft_output_writer *w, const weft_event *ev)
{
	emu_writer *ew = w->impl;
	int rc = weft__emu_window_step(&ew->win, ew->emu, ev);
	if (rc == 1)
		return 1;
	if (rc < 0)
		return WEFT_EIO;
	rc = weft__emu_event(ew->emu, ev);
	if (rc == WEFT_EFORMAT)
		return 1;
	return rc;
}

/* Writes the .pcf and .row files and the final headers of every trace. */
static int write_rest(emu_writer *ew)
{
	int rc = 0;
	for (int k = 0; rc == 0 && k < WEFT__EMU_KINDS; k++) {
		if (ew->prv[k].fd < 0)
			continue;
		char pcf_name[64], row_name[64];
		file_name(k, 1, pcf_name, sizeof pcf_name);
		file_name(k, 2, row_name, sizeof row_name);
		char *pcf = weft__emu_pcf_text(ew->emu, (weft__emu_kind)k);
		char *row = weft__emu_trace_row_text(ew->emu, (weft__emu_kind)k);
		if (pcf == NULL || row == NULL)
			rc = weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
		if (rc == 0)
			rc = write_file(ew, pcf_name, pcf);
		if (rc == 0)
			rc = write_file(ew, row_name, row);
		free(pcf);
		free(row);
		if (rc == 0)
			rc = close_prv(ew, k);
	}
	return rc;
}

/*
 * The Paraver views in cfg/, as ovniemu leaves them: ovni's own, copied
 * from its installation when there is one, and those made for the trace.
 */
static int write_views(emu_writer *ew, weft_convert_report *r)
{
	char *dir = join(ew->tmp, "cfg");
	size_t copied = 0, made = 0;
	int rc = dir == NULL ? weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory") : 0;
	if (rc == 0 && ew->cfg_source != NULL)
		rc = weft__cfg_copy(ew->cfg_source, dir, &copied);
	if (rc == 0)
		rc = weft__cfg_write_generated(ew->emu, dir, &made);
	if (rc == 0 && copied > 0)
		weft__convert_say(r, "note: %zu Paraver views of ovni copied into %s/cfg/ "
				  "(from %s)", copied, ew->out, ew->cfg_source);
	free(dir);
	return rc;
}

static int emu_finish(weft_output_writer *w, int failed)
{
	emu_writer *ew = w->impl;
	weft_convert_report *r = w->job.report;
	int refused;
	int rc = weft__emu_output_end(w, ew->emu, &ew->win, failed, "--allow-loss keeps the "
				      "records before the error, as ovniemu does", &refused);
	if (rc < 0)
		return rc;
	rc = ew->win.opened ? 0 : weft__emu_window_open(&ew->win, ew->emu);
	if (rc == 0)
		rc = write_rest(ew);
	if (rc == 0)
		rc = write_views(ew, r);
	if (rc < 0) {
		weft__convert_say(r, "%s", weft_last_error());
		return rc;
	}
	if (weft__outdir_commit(r, ew->tmp, ew->out, ew->replace) < 0)
		return WEFT_EIO;
	ew->committed = 1;
	r->data_lost |= refused;
	return 0;
}

static void emu_free(weft_output_writer *w)
{
	emu_writer_free_impl(w->impl);
	w->impl = NULL;
}

/* ---- On looms shared among threads and ranks (emu_shared.c) --------------------------- */

/* A time window (the state at its start is every row's) and the
 * breakdown traces (their rows sort the CPUs of every loom) are one
 * emulator's. */
static int can_share(const weft_output_writer *w)
{
	const emu_writer *ew = w->impl;
	return ew != NULL && !ew->win.windowed && !w->options.breakdown;
}

static weft__emu *emulator(void *w)
{
	return ((emu_writer *)w)->emu;
}

static int failed(void *w)
{
	const emu_writer *ew = w;
	for (int k = 0; k < WEFT__EMU_KINDS; k++)
		if (ew->prv[k].fd >= 0 && ew->prv[k].ob.error != 0)
			return 1;
	return 0;
}

static const weft__emu_target paraver_target = {
	.lines = 1, .can_share = can_share, .emulator = emulator, .put_lines = put_lines,
	.failed = failed, .restart = restart,
};

static int emu_convert_shared(weft_output_writer *w)
{
	return weft__emu_convert_shared(w, &paraver_target);
}

const weft__writer_ops weft__paraver_emu_writer_ops = {
	.by_stream = 0,
	.create = emu_create,
	.event = emu_event,
	.read_failed = weft__emu_output_read_failed,
	.finish = emu_finish,
	.free = emu_free,
	.convert_shared = emu_convert_shared,
};
