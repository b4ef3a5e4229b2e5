/* SPDX-License-Identifier: MIT */
/*
 * core/progress.c - the progress callback of a trace (weft/progress.h):
 * phases, the interval between calls, the figures it is given, and the
 * threads the library used for the trace.
 *
 * The cost on the hot paths is one add and one compare per batch of
 * events read (weft__progress_count) and one atomic add per window of
 * bytes read (weft__mapfile_count): the clock is looked at every
 * LOOK_STRIDE events only, and only when a callback is installed.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/internal.h"

/* Default time between two calls. */
#define DEFAULT_INTERVAL_NS 100000000ull
/* Events between two looks at the clock (a look is a few ns: at 200 M
 * events/s, one every 20 us). */
#define LOOK_STRIDE 4096

/* The monotonic clock in ns: `coarse` for the frequent looks (cheaper,
 * a few ms of resolution), precise for the figures. */
static uint64_t clock_ns(int coarse)
{
	struct timespec ts;
#ifdef CLOCK_MONOTONIC_COARSE
	if (coarse && clock_gettime(CLOCK_MONOTONIC_COARSE, &ts) == 0)
		return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
#else
	(void)coarse;
#endif
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The bytes read so far (helper threads add to them). */
static uint64_t bytes_now(const weft__progress *p)
{
	return __atomic_load_n(&p->bytes, __ATOMIC_RELAXED);
}

/*
 * The interval an option asks for: > 0 as given, 0 the default (or
 * WEFT_PROGRESS_INTERVAL_NS from the environment, for tests), < 0 none.
 * *stride gets the events between two looks at the clock: every batch
 * when the interval is none (tests see calls on tiny traces).
 */
static uint64_t interval_of(int64_t asked, uint64_t *stride)
{
	if (asked == 0) {
		const char *env = getenv("WEFT_PROGRESS_INTERVAL_NS");
		if (env != NULL && env[0] != '\0')
			asked = strtoll(env, NULL, 10);
		else
			asked = (int64_t)DEFAULT_INTERVAL_NS;
	}
	*stride = asked > 0 ? LOOK_STRIDE : 1;
	return asked > 0 ? (uint64_t)asked : 0;
}

/* Points the next look at the clock `stride` events ahead (never without fn). */
static void schedule_look(weft__progress *p)
{
	p->next_look = p->fn != NULL ? p->events + p->stride : UINT64_MAX;
}

/* Starts a phase: the counters as they are now are its zero. */
static void phase_start(weft__progress *p, const char *phase)
{
	p->phase = phase;
	p->phase_start = clock_ns(0);
	p->phase_events = p->events;
	p->phase_bytes = bytes_now(p);
	p->last_call = clock_ns(1);
}

/* Calls the callback with the figures of the current phase. */
static void call(weft__progress *p, int finished)
{
	weft_progress info;
	memset(&info, 0, sizeof info);
	info.phase = p->phase;
	info.bytes_total = p->bytes_total;
	if (p->bytes_total != 0) {
		uint64_t done = bytes_now(p) - p->phase_bytes;
		info.bytes_done = done < p->bytes_total ? done : p->bytes_total;
	}
	info.events_done = p->events - p->phase_events;
	if (strcmp(p->phase, "opening") != 0)
		info.events_total = p->events_total;
	uint64_t now = clock_ns(0);
	info.elapsed_ns = now > p->phase_start ? now - p->phase_start : 0;
	info.finished = finished;
	p->fn(&info, p->data);
}

void weft__progress_look(weft_trace *trace)
{
	weft__progress *p = &trace->progress;
	schedule_look(p);
	if (p->fn == NULL)
		return;
	uint64_t now = clock_ns(1);
	if (p->interval_ns != 0 && now - p->last_call < p->interval_ns)
		return;
	p->last_call = now;
	call(p, 0);
}

void weft__progress_begin(weft_trace *trace, const char *phase)
{
	weft__progress *p = &trace->progress;
	if (p->depth++ == 0)
		phase_start(p, phase);
}

void weft__progress_end(weft_trace *trace)
{
	weft__progress *p = &trace->progress;
	if (p->depth == 0 || --p->depth > 0)
		return;
	if (p->fn != NULL)
		call(p, 1);
	phase_start(p, "reading");
}

const char *weft__progress_stage_begin(weft_trace *trace, const char *stage)
{
	const char *outer = trace->progress.phase;
	phase_start(&trace->progress, stage);
	return outer;
}

void weft__progress_stage_end(weft_trace *trace, const char *outer)
{
	weft__progress *p = &trace->progress;
	if (p->fn != NULL)
		call(p, 1);
	phase_start(p, outer);
}

int weft__progress_end_with(weft_trace *trace, int rc)
{
	weft__progress_end(trace);
	return rc;
}

void weft__progress_init(weft_trace *trace, const weft_open_options *options)
{
	weft__progress *p = &trace->progress;
	memset(p, 0, sizeof *p);
	p->fn = options->progress;
	p->data = options->progress_data;
	p->interval_ns = interval_of(options->progress_interval_ns, &p->stride);
	p->threads_used = 1;
	schedule_look(p);
	phase_start(p, "reading");
}

/* A data file of the trace and its size. */
typedef struct file_size {
	const char *file;
	uint64_t size;
} file_size;

/* Orders files by name, to count each file of the trace once. */
static int compare_files(const void *a, const void *b)
{
	return strcmp(((const file_size *)a)->file, ((const file_size *)b)->file);
}

/*
 * The streams' data files, each once (ROSS streams share their files):
 * their number and bytes into the progress state (none when out of
 * memory); the bytes are the progress's total when the backend counts
 * what it reads.
 */
void weft__progress_opened(weft_trace *trace)
{
	weft__progress *p = &trace->progress;
	size_t n = trace->stream_count;
	file_size *files = malloc((n ? n : 1) * sizeof *files);
	p->bytes_total = 0;
	if (files == NULL)
		return;
	for (size_t i = 0; i < n; i++)
		files[i] = (file_size){ trace->streams[i].file, trace->streams[i].file_size };
	qsort(files, n, sizeof *files, compare_files);
	for (size_t i = 0; i < n; i++)
		if (i == 0 || strcmp(files[i].file, files[i - 1].file) != 0) {
			p->data_files++;
			p->data_bytes += files[i].size;
		}
	free(files);
	if (trace->backend->counts_bytes)
		p->bytes_total = p->data_bytes;
}

void weft_trace_set_progress(weft_trace *trace, weft_progress_fn fn, void *user_data,
			     int64_t interval_ns)
{
	weft__progress *p = &trace->progress;
	p->fn = fn;
	p->data = user_data;
	p->interval_ns = interval_of(interval_ns, &p->stride);
	schedule_look(p);
}

void weft__progress_add(weft_trace *trace, const weft__progress *other)
{
	trace->progress.events += other->events;
	__atomic_fetch_add(&trace->progress.bytes, bytes_now(other), __ATOMIC_RELAXED);
}

void weft__trace_threads_note(weft_trace *trace, int n)
{
	if (trace != NULL && n > trace->progress.threads_used)
		trace->progress.threads_used = n;
}

int weft_trace_threads_used(const weft_trace *trace)
{
	return trace->progress.threads_used;
}

uint64_t weft_trace_data_bytes(const weft_trace *trace)
{
	return trace->progress.data_bytes;
}

size_t weft_trace_data_files(const weft_trace *trace)
{
	return trace->progress.data_files;
}

void weft__mapfile_count(weft_mapfile *mf, weft_trace *trace)
{
	mf->bytes_read = trace != NULL ? &trace->progress.bytes : NULL;
}

/* ---- Helper threads' counts, shown by the calling thread ------------------- */

void weft__progress_cell_publish(const weft_progress *progress, void *cell)
{
	weft__progress_cell *c = cell;
	__atomic_store_n(&c->events, progress->events_done, __ATOMIC_RELAXED);
	__atomic_store_n(&c->bytes, progress->bytes_done, __ATOMIC_RELAXED);
}

void weft__progress_cell_finish(weft__progress_cell *cell)
{
	__atomic_store_n(&cell->finished, 1, __ATOMIC_RELEASE);
}

static const weft__progress_cell *cell_at(const weft__progress_cells *cells, int i)
{
	return (const weft__progress_cell *)((const char *)cells->first +
					     (size_t)i * cells->stride);
}

int weft__progress_show_cells_once(weft_trace *trace, const weft__progress_cells *cells,
				   uint64_t events, uint64_t bytes)
{
	int finished = 0;
	uint64_t e = 0, b = 0;
	for (int i = 0; i < cells->count; i++) {
		const weft__progress_cell *c = cell_at(cells, i);
		finished += __atomic_load_n(&c->finished, __ATOMIC_ACQUIRE);
		e += __atomic_load_n(&c->events, __ATOMIC_RELAXED);
		b += __atomic_load_n(&c->bytes, __ATOMIC_RELAXED);
	}
	if (finished == cells->count || trace->progress.fn == NULL)
		return 1;
	trace->progress.events = events + e;
	__atomic_store_n(&trace->progress.bytes, bytes + b, __ATOMIC_RELAXED);
	weft__progress_look(trace);
	return 0;
}

void weft__progress_show_cells(weft_trace *trace, const weft__progress_cells *cells)
{
	uint64_t events = trace->progress.events;
	uint64_t bytes = __atomic_load_n(&trace->progress.bytes, __ATOMIC_RELAXED);
	const struct timespec pause = { 0, 20 * 1000 * 1000 };
	while (!weft__progress_show_cells_once(trace, cells, events, bytes))
		nanosleep(&pause, NULL);
	trace->progress.events = events;
	__atomic_store_n(&trace->progress.bytes, bytes, __ATOMIC_RELAXED);
}
