/* SPDX-License-Identifier: MIT */
/*
 * cli/feedback.c - feedback on long work: the progress line on standard
 * error (when it is a terminal, and not with --quiet) and the --verbose
 * lines (what was opened, the phases and their times, the threads used).
 *
 * Both come from the library's progress callback (weft/progress.h). The
 * line is rewritten in place ("\r", then the text, then "\033[K" to clear
 * what a longer line left) and cleared before anything else is printed on
 * stderr (cli_feedback_clear). With neither a line nor --verbose, no
 * callback is installed: the output and the speed are the same as
 * without this file.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"

/* The one command of the process and what it shows. */
static struct feedback {
	const char *command;
	int line;          /* the progress line is shown */
	int verbose;       /* --verbose */
	int shown;         /* a progress line is on the terminal now */
	int exit_hooked;   /* the line is cleared at exit */
	uint64_t start_ns; /* when the command began to open the trace */
} fb;

/* The monotonic clock, in ns. */
static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void cli_feedback_clear(void)
{
	if (!fb.shown)
		return;
	fputs("\r\033[K", stderr);
	fflush(stderr);
	fb.shown = 0;
}

/* atexit: no progress line is left behind, whatever path the command took. */
static void clear_at_exit(void)
{
	cli_feedback_clear();
}

/* "1.23 GiB", "12.3 k": three digits of `value` and its unit (a short line). */
static void format_scaled(char *buf, size_t size, double value, const char *unit)
{
	const char *format = value < 10 ? "%.2f %s" : value < 100 ? "%.1f %s" : "%.0f %s";
	snprintf(buf, size, format, value, unit);
}

/* "1.23 GiB", "512 KiB", "100 B". */
static void format_bytes(char *buf, size_t size, double bytes)
{
	static const char *const units[] = { "KiB", "MiB", "GiB", "TiB" };
	size_t u = 0;
	if (bytes < 1024) {
		snprintf(buf, size, "%.0f B", bytes);
		return;
	}
	bytes /= 1024;
	while (bytes >= 1024 && u + 1 < sizeof units / sizeof units[0]) {
		bytes /= 1024;
		u++;
	}
	format_scaled(buf, size, bytes, units[u]);
}

/* "404", "12.3 k", "210 M", "1.20 G": event counts. */
static void format_count(char *buf, size_t size, double n)
{
	if (n < 1e3)
		snprintf(buf, size, "%.0f", n);
	else if (n < 1e6)
		format_scaled(buf, size, n / 1e3, "k");
	else if (n < 1e9)
		format_scaled(buf, size, n / 1e6, "M");
	else
		format_scaled(buf, size, n / 1e9, "G");
}

/* The share done, from the events when the total is known, else the bytes; < 0 unknown. */
static double fraction_done(const weft_progress *p)
{
	double f = -1;
	if (p->events_total > 0)
		f = (double)p->events_done / (double)p->events_total;
	else if (p->bytes_total > 0)
		f = (double)p->bytes_done / (double)p->bytes_total;
	return f > 1 ? 1 : f;
}

/* ", ETA 0:08" (h:mm:ss past an hour) from the share done and the time spent. */
static size_t format_eta(char *buf, size_t size, double fraction, double seconds)
{
	if (fraction <= 0.001 || seconds <= 0)
		return 0;
	uint64_t left = (uint64_t)(seconds * (1 - fraction) / fraction + 0.5);
	if (left >= 3600)
		return (size_t)snprintf(buf, size, ", ETA %" PRIu64 ":%02" PRIu64 ":%02" PRIu64,
					left / 3600, left / 60 % 60, left % 60);
	return (size_t)snprintf(buf, size, ", ETA %" PRIu64 ":%02" PRIu64, left / 60, left % 60);
}

/*
 * "weft convert: 45% 1.20 GiB of 2.60 GiB, 210 M events, 180 MiB/s, ETA
 * 0:08 (converting)"; without a total: the events and their rate. The
 * phase comes last: on a narrow terminal, it is what the cut takes.
 */
static void format_line(char *buf, size_t size, const weft_progress *p)
{
	char a[32], b[32], ev[32], rate[32];
	double seconds = (double)p->elapsed_ns / 1e9;
	double fraction = fraction_done(p);
	size_t n = (size_t)snprintf(buf, size, "weft %s:", fb.command);
	if (fraction >= 0 && n < size)
		n += (size_t)snprintf(buf + n, size - n, " %.0f%%", fraction * 100);
	if (p->bytes_total > 0 && n < size) {
		format_bytes(a, sizeof a, (double)p->bytes_done);
		format_bytes(b, sizeof b, (double)p->bytes_total);
		n += (size_t)snprintf(buf + n, size - n, " %s of %s,", a, b);
	}
	format_count(ev, sizeof ev, (double)p->events_done);
	if (p->bytes_total > 0)
		format_bytes(rate, sizeof rate, seconds > 0 ? (double)p->bytes_done / seconds : 0);
	else
		format_count(rate, sizeof rate, seconds > 0 ? (double)p->events_done / seconds : 0);
	if (n < size)
		n += (size_t)snprintf(buf + n, size - n, " %s events, %s%s", ev, rate,
				      p->bytes_total > 0 ? "/s" : " events/s");
	if (n < size)
		n += format_eta(buf + n, size - n, fraction, seconds);
	if (n < size)
		snprintf(buf + n, size - n, " (%s)", p->phase);
}

/* The terminal's width (80 when it cannot tell), less one column for the cursor. */
static size_t terminal_columns(void)
{
	struct winsize ws;
	if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 1)
		return (size_t)ws.ws_col - 1;
	return 79;
}

/*
 * Rewrites the progress line in place, cut to the terminal's width: the
 * phase goes first, whole; then the end of the figures.
 */
static void draw_line(const weft_progress *p)
{
	char line[256];
	format_line(line, sizeof line, p);
	size_t width = terminal_columns();
	char *phase = strrchr(line, '(');
	if (strlen(line) > width && phase != NULL)
		phase[-1] = '\0';
	if (strlen(line) > width)
		line[width] = '\0';
	fprintf(stderr, "\r%s\033[K", line);
	fflush(stderr);
	fb.shown = 1;
}

/* --verbose: "weft CMD: converting: 1.234 s, 404 events, 6.3 KiB read". */
static void print_phase(const weft_progress *p)
{
	char time[64], ev[32], bytes[32];
	cli_format_duration(time, sizeof time, p->elapsed_ns);
	format_count(ev, sizeof ev, (double)p->events_done);
	fprintf(stderr, "weft %s: %s: %s, %s events", fb.command, p->phase, time, ev);
	if (p->bytes_total > 0) {
		format_bytes(bytes, sizeof bytes, (double)p->bytes_done);
		fprintf(stderr, ", %s read", bytes);
	}
	fputc('\n', stderr);
}

/* The library's callback: the line while work goes on, the phase's times at its end. */
static void on_progress(const weft_progress *p, void *user_data)
{
	(void)user_data;
	if (p->finished) {
		cli_feedback_clear();
		if (fb.verbose)
			print_phase(p);
		return;
	}
	if (fb.line)
		draw_line(p);
}

/*
 * 1 when standard output is a file (or /dev/null): a command that streams
 * its output there may draw the line. A terminal would mix both; a pipe
 * is often a pager (`| less`), whose screen the line would scribble on.
 */
static int stdout_is_file(void)
{
	struct stat st;
	if (fstat(STDOUT_FILENO, &st) != 0)
		return 0;
	return S_ISREG(st.st_mode) || (S_ISCHR(st.st_mode) && !isatty(STDOUT_FILENO));
}

void cli_feedback_options(const cli_common *c, const char *command, weft_open_options *o)
{
	fb.command = command;
	fb.verbose = c->verbose;
	fb.line = !c->quiet && isatty(STDERR_FILENO) && (!c->stdout_streamed || stdout_is_file());
	if (fb.start_ns == 0)
		fb.start_ns = now_ns();
	if (!fb.line && !fb.verbose)
		return;
	o->progress = on_progress;
	o->progress_data = NULL;
	if (fb.line && !fb.exit_hooked)
		fb.exit_hooked = atexit(clear_at_exit) == 0;
}

/* "1 stream", "2 streams". */
static const char *plural(uint64_t n, const char *one, const char *many)
{
	return n == 1 ? one : many;
}

void cli_feedback_opened(const weft_trace *trace)
{
	if (!fb.verbose)
		return;
	char bytes[32];
	size_t streams = weft_trace_stream_count(trace);
	size_t files = weft_trace_data_files(trace);
	format_bytes(bytes, sizeof bytes, (double)weft_trace_data_bytes(trace));
	cli_feedback_clear();
	fprintf(stderr, "weft %s: opened '%s': format %s", fb.command, weft_trace_path(trace),
		weft_format_name(weft_trace_format(trace)));
	if (weft_trace_layout_version(trace) != 0)
		fprintf(stderr, ", layout version %d", weft_trace_layout_version(trace));
	fprintf(stderr, ", %zu %s, %zu %s, %s\n", streams, plural(streams, "stream", "streams"),
		files, plural(files, "file", "files"), bytes);
}

void cli_close_trace(weft_trace *trace)
{
	cli_feedback_clear();
	if (fb.verbose) {
		char time[64];
		cli_format_duration(time, sizeof time, now_ns() - fb.start_ns);
		if (trace != NULL)
			fprintf(stderr, "weft %s: threads used: %d\n", fb.command,
				weft_trace_threads_used(trace));
		fprintf(stderr, "weft %s: done in %s\n", fb.command, time);
	}
	weft_trace_free(trace);
}
