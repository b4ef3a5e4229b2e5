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
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/internal.h"
#include "emu/emu.h"
#include "outputs/emu_output.h"
#include "outputs/outdir.h"
#include "outputs/outputs.h"
#include "outputs/writer.h"

static const char *const file_names[2][3] = {
	{ "thread.prv", "thread.pcf", "thread.row" },
	{ "cpu.prv", "cpu.pcf", "cpu.row" },
};

/* One .prv being written. */
typedef struct prv_file {
	int fd;
	weft__outbuf ob;
} prv_file;

typedef struct emu_writer {
	weft__emu *emu;
	char *out;            /* OUT (the directory) */
	char *tmp;            /* the temporary directory being written */
	int replace;          /* OUT exists and is replaced */
	int committed;
	prv_file prv[2];      /* thread, cpu */
	uint64_t records;
	weft__emu_window win; /* the time window */
} emu_writer;

/* 1 for the entries an emulated Paraver output has (what --force replaces). */
static int emu_entry(const char *name)
{
	for (int k = 0; k < 2; k++)
		for (int i = 0; i < 3; i++)
			if (strcmp(name, file_names[k][i]) == 0)
				return 1;
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
	int fd = path ? open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666) : -1;
	int rc = fd < 0 ? -1 : weft__write_full(fd, text, strlen(text), WEFT__AT_POSITION, NULL);
	if (fd >= 0 && rc == 0 && fsync(fd) != 0)
		rc = errno;
	if (fd >= 0 && close(fd) != 0 && rc == 0)
		rc = errno;
	int err = fd < 0 ? errno : rc;
	free(path);
	if (fd < 0 || rc != 0)
		return weft__error(WEFT_EIO, name, WEFT_NO_OFFSET, "cannot write: %s",
				   strerror(err ? err : EIO));
	return 0;
}

/* ---- Records -------------------------------------------------------------------- */

/* One record: "2:0:1:1:<row>:<time>:<type>:<value>". */
static int put_record(void *ctx, const weft__emu_record *r)
{
	emu_writer *ew = ctx;
	if (!ew->win.opened)
		return 0;
	weft__outbuf *ob = &ew->prv[r->kind].ob;
	char *p = weft__outbuf_reserve(ob, 96);
	memcpy(p, "2:0:1:1:", 8);
	p = weft__fmt_u64(p + 8, (uint64_t)r->row + 1);
	*p++ = ':';
	p = weft__fmt_u64(p, r->time - ew->win.base);
	*p++ = ':';
	p = weft__fmt_u64(p, r->type);
	*p++ = ':';
	p = weft__fmt_i64(p, r->value);
	*p++ = '\n';
	weft__outbuf_commit(ob, p);
	ew->records++;
	if (ob->error != 0)
		return weft__error(WEFT_EIO, file_names[r->kind][0], WEFT_NO_OFFSET,
				   "cannot write: %s", strerror(ob->error));
	return 0;
}

/* Opens thread.prv or cpu.prv in the temporary directory with its header. */
static int open_prv(emu_writer *ew, int kind)
{
	char *path = join(ew->tmp, file_names[kind][0]);
	prv_file *f = &ew->prv[kind];
	f->fd = path ? open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0666) : -1;
	free(path);
	if (f->fd < 0)
		return weft__error(WEFT_EIO, file_names[kind][0], WEFT_NO_OFFSET,
				   "cannot create: %s", strerror(errno));
	int rc = weft__outbuf_init(&f->ob, f->fd, 4u << 20);
	char *head = weft__emu_prv_header(weft__emu_system_of(ew->emu), (weft__emu_kind)kind, 0);
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
	prv_file *f = &ew->prv[kind];
	int rc = weft__outbuf_flush(&f->ob);
	char *head = weft__emu_prv_header(weft__emu_system_of(ew->emu), (weft__emu_kind)kind,
					  duration(ew));
	if (rc == 0 && (head == NULL ||
			weft__write_full(f->fd, head, strlen(head), 0, NULL) != 0 ||
			fsync(f->fd) != 0))
		rc = weft__error(WEFT_EIO, file_names[kind][0], WEFT_NO_OFFSET,
				 "cannot write: %s", strerror(errno ? errno : EIO));
	free(head);
	if (close(f->fd) != 0 && rc == 0)
		rc = weft__error(WEFT_EIO, file_names[kind][0], WEFT_NO_OFFSET,
				 "cannot write: %s", strerror(errno));
	f->fd = -1;
	weft__outbuf_destroy(&f->ob);
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

static void emu_writer_free_impl(emu_writer *ew)
{
	if (ew == NULL)
		return;
	for (int k = 0; k < 2; k++)
		if (ew->prv[k].fd >= 0) {
			close(ew->prv[k].fd);
			weft__outbuf_destroy(&ew->prv[k].ob);
		}
	if (ew->tmp != NULL && !ew->committed)
		weft__outdir_remove_tree(ew->tmp);
	weft__emu_free(ew->emu);
	free(ew->tmp);
	free(ew->out);
	free(ew);
}

static int emu_create(weft_output_writer *w)
{
	weft_convert_report *r = w->job.report;
	int rc = check_options(w);
	if (rc < 0)
		return rc;
	emu_writer *ew = calloc(1, sizeof *ew);
	if (ew == NULL || (ew->out = strdup(w->options.path)) == NULL) {
		free(ew);
		weft__convert_say(r, "out of memory");
		return WEFT_ENOMEM;
	}
	ew->prv[0].fd = ew->prv[1].fd = -1;
	size_t n = strlen(ew->out);
	while (n > 1 && ew->out[n - 1] == '/')
		ew->out[--n] = '\0';
	rc = weft__outdir_check(r, ew->out, w->options.force, &emu_dir, &ew->replace);
	if (rc == 0 && (ew->tmp = weft__outdir_make_sibling(r, ew->out, "tmp")) == NULL)
		rc = WEFT_EIO;
	if (rc == 0) {
		weft__emu_options eo = { .all_models = w->options.all_models };
		weft__emu_sink sink = { ew, put_record };
		rc = weft__emu_create(w->job.trace, &eo, &sink, &ew->emu);
		if (rc < 0)
			weft__convert_say(r, "cannot emulate the trace: %s", weft_last_error());
	}
	for (int k = 0; rc == 0 && k < 2; k++)
		if ((rc = open_prv(ew, k)) < 0)
			weft__convert_say(r, "%s", weft_last_error());
	if (rc < 0) {
		emu_writer_free_impl(ew);
		return rc;
	}
	weft__emu_output_say_models(w, ew->emu);
	weft__emu_window_init(&ew->win, w);
	w->filter = (weft_filter){ .order = WEFT_ORDER_TIME };
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

/* Writes the .pcf and .row files and the final headers. */
static int write_rest(emu_writer *ew)
{
	const weft__emu_system *sys = weft__emu_system_of(ew->emu);
	int rc = 0;
	for (int k = 0; rc == 0 && k < 2; k++) {
		char *pcf = weft__emu_pcf_text(ew->emu, (weft__emu_kind)k);
		char *row = weft__emu_row_text(sys, (weft__emu_kind)k);
		if (pcf == NULL || row == NULL)
			rc = weft__error(WEFT_ENOMEM, NULL, WEFT_NO_OFFSET, "out of memory");
		if (rc == 0)
			rc = write_file(ew, file_names[k][1], pcf);
		if (rc == 0)
			rc = write_file(ew, file_names[k][2], row);
		free(pcf);
		free(row);
		if (rc == 0)
			rc = close_prv(ew, k);
	}
	return rc;
}

static int emu_finish(weft_output_writer *w, int failed)
{
	emu_writer *ew = w->impl;
	weft_convert_report *r = w->job.report;
	weft__emu_finish(ew->emu, !ew->win.cut && !failed && !r->data_lost);
	int refused = weft__emu_output_say_diags(w, ew->emu);
	r->events = weft__emu_event_count(ew->emu);
	weft__convert_diags(r, w->job.trace);
	if (failed)
		return WEFT_EIO;
	if (refused && !w->options.allow_loss) {
		weft__convert_say(r, "the emulation refused the trace: nothing written "
				  "(--allow-loss keeps the records before the error, as ovniemu "
				  "does; --raw converts without emulating)");
		return WEFT_EFORMAT;
	}
	int rc = ew->win.opened ? 0 : weft__emu_window_open(&ew->win, ew->emu);
	if (rc == 0)
		rc = write_rest(ew);
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

const weft__writer_ops weft__paraver_emu_writer_ops = {
	.by_stream = 0,
	.create = emu_create,
	.event = emu_event,
	.read_failed = weft__emu_output_read_failed,
	.finish = emu_finish,
	.free = emu_free,
};
