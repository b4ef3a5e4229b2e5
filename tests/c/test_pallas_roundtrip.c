/* SPDX-License-Identifier: MIT */
/*
 * test_pallas_roundtrip.c - Pallas traces written with weft's writer
 * (weft/pallas.h) and read back with weft's reader: the unified API
 * (weft_trace_open, cursors, weft_event_fields), the grammar API
 * (weft/pallas_grammar.h) and the `weft` command. Every recorded event
 * is kept on the side (code, time, thread, depth, the fields its payload
 * and attributes must decode to), and what comes back must be exactly
 * that list:
 *
 *   nested     nested Enter/Leave of several regions with explicit
 *              timestamps, 5 threads in 2 archives (a local region and a
 *              local string in archive 1), equal times across threads
 *   mpi        point-to-point and collective records with their payloads,
 *              attribute lists of every value type, generic events
 *   delta      the nested workload with delta_timestamps, raw and zstd,
 *              both layouts and helper threads; `weft dump --json` of
 *              each equals that of the same trace without deltas; deltas
 *              that wrap (timestamps going back); a damaged delta is an
 *              error, not shifted times
 *   loops      thousands of iterations of nested loops (vectors of many
 *              sub-arrays), every timestamp checked, with and without
 *              deltas
 *   attrs      attribute lists on most events, far more than the writer
 *              keeps in memory (spilled in chunks, copied back at close),
 *              every value read back, both layouts, raw and zstd
 *   empty      a thread without events next to one with events: 0 events,
 *              no diagnostic, `weft info`, `dump` and `dump --structure`
 *   profile    `weft profile --json` (stored durations, --replay and
 *              --headers-only): per region count, total, min, max and
 *              exclusive time against the values computed here from the
 *              recorded timestamps
 *
 * Merged order is (time, stream index, stored order), as weft_cursor_create
 * documents; each stream alone is the recorded order.
 */
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "weft/pallas_grammar.h"
#include "weft/weft.h"

static char *scratch; /* this test's scratch directory */

/* ---- Definitions of every trace ---------------------------------------------------------- */

enum string_ref {
	S_P0, S_P1, S_T0, S_T1, S_T2, S_T3, S_T4,
	S_MAIN, S_SOLVE, S_COMPUTE, S_EXCHANGE, S_IO,
	S_CHECKPOINT, S_MARKER, S_TICK,
	S_ITER, S_BYTES, S_FLAG, S_MID, S_SMALL, S_SHORT, S_INT, S_NEG,
	S_SCALE, S_RATIO, S_LABEL, S_WHERE, S_WORLD,
	S_COUNT
};

static const char *const global_strings[S_COUNT] = {
	"Process 0", "Process 1", "rank0-main", "rank0-helper", "rank1-main",
	"rank1-helper", "rank1-extra",
	"main", "solve", "compute", "exchange", "io",
	"checkpoint", "marker", "tick",
	"iter", "bytes", "flag", "mid", "small", "short", "int", "neg",
	"scale", "ratio", "label", "where", "MPI_COMM_WORLD"
};

/* Regions: refs 1..5 global, 10 local to archive 1 (named by a local string). */
enum region_ref { R_MAIN = 1, R_SOLVE, R_COMPUTE, R_EXCHANGE, R_IO, R_LOCAL = 10, R_MAX = 16 };
#define S_LOCAL_KERNEL 200
/* Archive 1 redefines string S_MARKER: its threads' markers read this name. */
static const char *const local_marker = "marker-local";

/* Attributes (refs) and their value types. */
enum attr_ref {
	A_ITER = 1, A_BYTES, A_FLAG, A_MID, A_SMALL, A_SHORT, A_INT, A_NEG,
	A_SCALE, A_RATIO, A_LABEL, A_WHERE, A_COUNT
};

static const struct { uint32_t name; int type; } attr_defs[A_COUNT] = {
	[A_ITER] = { S_ITER, WEFT_PALLAS_TYPE_UINT32 },
	[A_BYTES] = { S_BYTES, WEFT_PALLAS_TYPE_UINT64 },
	[A_FLAG] = { S_FLAG, WEFT_PALLAS_TYPE_UINT8 },
	[A_MID] = { S_MID, WEFT_PALLAS_TYPE_UINT16 },
	[A_SMALL] = { S_SMALL, WEFT_PALLAS_TYPE_INT8 },
	[A_SHORT] = { S_SHORT, WEFT_PALLAS_TYPE_INT16 },
	[A_INT] = { S_INT, WEFT_PALLAS_TYPE_INT32 },
	[A_NEG] = { S_NEG, WEFT_PALLAS_TYPE_INT64 },
	[A_SCALE] = { S_SCALE, WEFT_PALLAS_TYPE_FLOAT },
	[A_RATIO] = { S_RATIO, WEFT_PALLAS_TYPE_DOUBLE },
	[A_LABEL] = { S_LABEL, WEFT_PALLAS_TYPE_STRING },
	[A_WHERE] = { S_WHERE, WEFT_PALLAS_TYPE_REGION },
};

/* The threads of every trace: (archive, location, name). */
#define THREADS 5
static const struct { uint32_t lg, loc, name; } thread_defs[THREADS] = {
	{ 0, 0, S_T0 }, { 0, 1, S_T1 }, { 1, 2, S_T2 }, { 1, 3, S_T3 }, { 1, 4, S_T4 }
};

/* The name of region `ref` as the reader must resolve it. */
static const char *region_name(uint32_t ref)
{
	static const char *const names[] = { "", "main", "solve", "compute", "exchange", "io" };
	if (ref == R_LOCAL)
		return "local_kernel";
	return ref < 6 ? names[ref] : "";
}

/* The text of string `ref` seen from archive `lg` (local strings first). */
static const char *string_text(uint32_t lg, uint32_t ref)
{
	if (lg == 1 && ref == S_MARKER)
		return local_marker;
	if (lg == 1 && ref == S_LOCAL_KERNEL)
		return "local_kernel";
	return ref < S_COUNT ? global_strings[ref] : "";
}

/* ---- What was recorded ------------------------------------------------------------------- */

#define MAX_FIELDS 24
#define MAX_CALLS 64

/* A field an event must decode to. */
typedef struct xfield {
	const char *name;
	weft_type type;
	uint64_t u;
	int64_t i;
	double f;
	const char *s;
} xfield;

/* A recorded event: what the reader must give back. */
typedef struct xev {
	uint64_t time;
	uint32_t lg, loc;
	const char *code;
	int32_t depth;
	int64_t parent; /* index in its stream of the Enter of its innermost call */
	int nf;
	xfield f[MAX_FIELDS];
	size_t order;  /* recording order */
	int stream;    /* stream index, set once the trace is open */
} xev;

typedef struct xtrace {
	xev *ev;
	size_t n, cap;
} xtrace;

/* A thread writer and what it recorded (its open calls too). */
typedef struct tw {
	weft_pallas_thread *t;
	xtrace *x;
	uint32_t lg, loc;
	int depth;
	uint32_t region[MAX_CALLS];
	int64_t events;              /* recorded so far (the next one's index) */
	int64_t call_start[MAX_CALLS]; /* index of the Enter of each open call */
} tw;

/* An attribute list and the fields it must decode to. */
typedef struct xattrs {
	weft_pallas_attrs l;
	int nf;
	xfield f[MAX_FIELDS];
} xattrs;

/* Appends an event to the recorded list. */
static xev *xtrace_add(xtrace *x)
{
	if (x->n == x->cap) {
		x->cap = x->cap ? 2 * x->cap : 1024;
		x->ev = realloc(x->ev, x->cap * sizeof *x->ev);
		REQUIRE(x->ev != NULL);
	}
	xev *e = &x->ev[x->n];
	memset(e, 0, sizeof *e);
	e->order = x->n++;
	return e;
}

/* An unsigned field. */
static xfield fu(const char *name, weft_type type, uint64_t v)
{
	return (xfield){ .name = name, .type = type, .u = v };
}

/* A string field. */
static xfield fs(const char *name, const char *s)
{
	return (xfield){ .name = name, .type = WEFT_TYPE_STR, .s = s };
}

/* Records an expected event of thread `w`: payload fields, then the attributes'. */
static void expect_event(tw *w, uint64_t ts, const char *code, int32_t depth,
			 const xfield *pf, int npf, const xattrs *a)
{
	xev *e = xtrace_add(w->x);
	e->time = ts;
	e->lg = w->lg;
	e->loc = w->loc;
	e->code = code;
	e->depth = depth;
	e->parent = depth > 0 ? w->call_start[depth - 1] : -1;
	w->events++;
	for (int i = 0; i < npf; i++)
		e->f[e->nf++] = pf[i];
	for (int i = 0; a != NULL && i < a->nf; i++)
		e->f[e->nf++] = a->f[i];
}

/* The attribute list handed to the writer (NULL when none). */
static const weft_pallas_attrs *wa(const xattrs *a)
{
	return a ? &a->l : NULL;
}

/* ---- Attribute lists --------------------------------------------------------------------- */

/* An empty attribute list. */
static void xa_init(xattrs *a)
{
	weft_pallas_attrs_init(&a->l);
	a->nf = 0;
}

/* Adds an unsigned value of attribute `attr` (typed by its definition). */
static void xa_unsigned(xattrs *a, uint32_t attr, uint64_t v)
{
	int rc = -1;
	weft_type type = WEFT_TYPE_U64;
	switch (attr_defs[attr].type) {
	case WEFT_PALLAS_TYPE_UINT8:
		rc = weft_pallas_attrs_add_u8(&a->l, attr, (uint8_t)v), type = WEFT_TYPE_U8;
		break;
	case WEFT_PALLAS_TYPE_UINT16:
		rc = weft_pallas_attrs_add_u16(&a->l, attr, (uint16_t)v), type = WEFT_TYPE_U16;
		break;
	case WEFT_PALLAS_TYPE_UINT32:
		rc = weft_pallas_attrs_add_u32(&a->l, attr, (uint32_t)v), type = WEFT_TYPE_U32;
		break;
	case WEFT_PALLAS_TYPE_UINT64:
		rc = weft_pallas_attrs_add_u64(&a->l, attr, v);
		break;
	}
	CHECK_EQ_I64(rc, 0);
	a->f[a->nf++] = fu(global_strings[attr_defs[attr].name], type, v);
}

/* Adds a signed value of attribute `attr`. */
static void xa_signed(xattrs *a, uint32_t attr, int64_t v)
{
	int rc = -1;
	weft_type type = WEFT_TYPE_I64;
	switch (attr_defs[attr].type) {
	case WEFT_PALLAS_TYPE_INT8:
		rc = weft_pallas_attrs_add_i8(&a->l, attr, (int8_t)v), type = WEFT_TYPE_I8;
		break;
	case WEFT_PALLAS_TYPE_INT16:
		rc = weft_pallas_attrs_add_i16(&a->l, attr, (int16_t)v), type = WEFT_TYPE_I16;
		break;
	case WEFT_PALLAS_TYPE_INT32:
		rc = weft_pallas_attrs_add_i32(&a->l, attr, (int32_t)v), type = WEFT_TYPE_I32;
		break;
	case WEFT_PALLAS_TYPE_INT64:
		rc = weft_pallas_attrs_add_i64(&a->l, attr, v);
		break;
	}
	CHECK_EQ_I64(rc, 0);
	a->f[a->nf++] = (xfield){ .name = global_strings[attr_defs[attr].name], .type = type,
				  .i = v };
}

/* Adds a float (A_SCALE) or a double (A_RATIO). */
static void xa_real(xattrs *a, uint32_t attr, double v)
{
	int is_float = attr_defs[attr].type == WEFT_PALLAS_TYPE_FLOAT;
	int rc = is_float ? weft_pallas_attrs_add_float(&a->l, attr, (float)v)
			  : weft_pallas_attrs_add_double(&a->l, attr, v);
	CHECK_EQ_I64(rc, 0);
	a->f[a->nf++] = (xfield){ .name = global_strings[attr_defs[attr].name],
				  .type = is_float ? WEFT_TYPE_F32 : WEFT_TYPE_F64,
				  .f = is_float ? (double)(float)v : v };
}

/* Adds a string reference (A_LABEL, resolved to its text in archive `lg`). */
static void xa_string(xattrs *a, uint32_t lg, uint32_t attr, uint32_t ref)
{
	CHECK_EQ_I64(weft_pallas_attrs_add_ref(&a->l, attr, WEFT_PALLAS_TYPE_STRING, ref), 0);
	a->f[a->nf++] = fs(global_strings[attr_defs[attr].name], string_text(lg, ref));
}

/* Adds a region reference (A_WHERE: a number). */
static void xa_region(xattrs *a, uint32_t attr, uint32_t ref)
{
	CHECK_EQ_I64(weft_pallas_attrs_add_ref(&a->l, attr, WEFT_PALLAS_TYPE_REGION, ref), 0);
	a->f[a->nf++] = fu(global_strings[attr_defs[attr].name], WEFT_TYPE_U32, ref);
}

/* ---- Recording --------------------------------------------------------------------------- */

/* Enters region `r` at `ts`. */
static void w_enter(tw *w, const xattrs *a, uint64_t ts, uint32_t r)
{
	CHECK_EQ_I64(weft_pallas_record_enter(w->t, wa(a), ts, r), 0);
	xfield f[2] = { fs("region", region_name(r)), fu("region_ref", WEFT_TYPE_U32, r) };
	expect_event(w, ts, "Enter", w->depth, f, 2, a);
	REQUIRE(w->depth < MAX_CALLS);
	w->call_start[w->depth] = w->events - 1;
	w->region[w->depth++] = r;
}

/* Leaves the innermost call at `ts`. */
static void w_leave(tw *w, const xattrs *a, uint64_t ts)
{
	REQUIRE(w->depth > 0);
	uint32_t r = w->region[--w->depth];
	CHECK_EQ_I64(weft_pallas_record_leave(w->t, wa(a), ts, r), 0);
	xfield f[2] = { fs("region", region_name(r)), fu("region_ref", WEFT_TYPE_U32, r) };
	expect_event(w, ts, "Leave", w->depth, f, 2, a);
}

/* A generic event named by string `name`. */
static void w_generic(tw *w, const xattrs *a, uint64_t ts, uint32_t name)
{
	CHECK_EQ_I64(weft_pallas_record_generic(w->t, wa(a), ts, name), 0);
	xfield f[2] = { fs("name", string_text(w->lg, name)), fu("name_ref", WEFT_TYPE_U32, name) };
	expect_event(w, ts, "Generic", w->depth, f, 2, a);
}

/* The fields of a point-to-point payload (request too when `with_request`). */
static int p2p_fields(xfield *f, uint32_t peer, uint32_t comm, uint32_t tag, uint64_t len,
		      int with_request, uint64_t request)
{
	f[0] = fu("peer", WEFT_TYPE_U32, peer);
	f[1] = fu("comm", WEFT_TYPE_U32, comm);
	f[2] = fu("tag", WEFT_TYPE_U32, tag);
	f[3] = fu("length", WEFT_TYPE_U64, len);
	f[4] = fu("request", WEFT_TYPE_U64, request);
	return with_request ? 5 : 4;
}

/* MPI_Send (recv = 0) or MPI_Recv (recv = 1). */
static void w_sendrecv(tw *w, const xattrs *a, uint64_t ts, int recv, uint32_t peer,
		       uint32_t comm, uint32_t tag, uint64_t len)
{
	int rc = recv ? weft_pallas_record_mpi_recv(w->t, wa(a), ts, peer, comm, tag, len)
		      : weft_pallas_record_mpi_send(w->t, wa(a), ts, peer, comm, tag, len);
	CHECK_EQ_I64(rc, 0);
	xfield f[5];
	int n = p2p_fields(f, peer, comm, tag, len, 0, 0);
	expect_event(w, ts, recv ? "MPI_Recv" : "MPI_Send", w->depth, f, n, a);
}

/* MPI_Isend (recv = 0) or MPI_Irecv (recv = 1). */
static void w_isendrecv(tw *w, const xattrs *a, uint64_t ts, int recv, uint32_t peer,
			uint32_t comm, uint32_t tag, uint64_t len, uint64_t req)
{
	int rc = recv ? weft_pallas_record_mpi_irecv(w->t, wa(a), ts, peer, comm, tag, len, req)
		      : weft_pallas_record_mpi_isend(w->t, wa(a), ts, peer, comm, tag, len, req);
	CHECK_EQ_I64(rc, 0);
	xfield f[5];
	int n = p2p_fields(f, peer, comm, tag, len, 1, req);
	expect_event(w, ts, recv ? "MPI_Irecv" : "MPI_Isend", w->depth, f, n, a);
}

/* MPI_IsendComplete (recv = 0) or MPI_IrecvRequest (recv = 1). */
static void w_request(tw *w, const xattrs *a, uint64_t ts, int recv, uint64_t req)
{
	int rc = recv ? weft_pallas_record_mpi_irecv_request(w->t, wa(a), ts, req)
		      : weft_pallas_record_mpi_isend_complete(w->t, wa(a), ts, req);
	CHECK_EQ_I64(rc, 0);
	xfield f = fu("request", WEFT_TYPE_U64, req);
	expect_event(w, ts, recv ? "MPI_IrecvRequest" : "MPI_IsendComplete", w->depth, &f, 1, a);
}

/* A collective: its begin at `ts`, its end at `end`. */
static void w_collective(tw *w, const xattrs *a, uint64_t ts, uint64_t end, uint32_t op,
			 uint32_t comm, uint32_t root, uint64_t sent, uint64_t received)
{
	CHECK_EQ_I64(weft_pallas_record_mpi_collective_begin(w->t, NULL, ts), 0);
	expect_event(w, ts, "MPI_CollectiveBegin", w->depth, NULL, 0, NULL);
	CHECK_EQ_I64(weft_pallas_record_mpi_collective_end(w->t, wa(a), end, op, comm, root,
							   sent, received), 0);
	xfield f[5] = { fu("op", WEFT_TYPE_U32, op), fu("comm", WEFT_TYPE_U32, comm),
			fu("root", WEFT_TYPE_U32, root), fu("sent", WEFT_TYPE_U64, sent),
			fu("received", WEFT_TYPE_U64, received) };
	expect_event(w, end, "MPI_CollectiveEnd", w->depth, f, 5, a);
}

/* A small deterministic generator (xorshift), so that failures reproduce. */
static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* ---- Writing a trace --------------------------------------------------------------------- */

typedef void (*workload)(tw *w, int thread);

/* The global definitions: strings, regions, attributes, a group and comm, location groups. */
static void define_global(weft_pallas_defs *gd)
{
	for (uint32_t s = 0; s < S_COUNT; s++)
		CHECK_EQ_I64(weft_pallas_add_string(gd, s, global_strings[s]), 0);
	for (uint32_t r = R_MAIN; r <= R_IO; r++)
		CHECK_EQ_I64(weft_pallas_add_region(gd, r, S_MAIN + (r - R_MAIN)), 0);
	for (uint32_t a = 1; a < A_COUNT; a++)
		CHECK_EQ_I64(weft_pallas_add_attribute(gd, a, attr_defs[a].name, attr_defs[a].name,
						       attr_defs[a].type), 0);
	uint32_t members[2] = { 0, 1 };
	CHECK_EQ_I64(weft_pallas_add_group(gd, 0, S_WORLD, 2, 5, members, 2), 0);
	CHECK_EQ_I64(weft_pallas_add_comm(gd, 0, S_WORLD, 0, WEFT_PALLAS_NO_PARENT), 0);
	CHECK_EQ_I64(weft_pallas_add_location_group(gd, 0, S_P0, WEFT_PALLAS_NO_PARENT), 0);
	CHECK_EQ_I64(weft_pallas_add_location_group(gd, 1, S_P1, WEFT_PALLAS_NO_PARENT), 0);
	CHECK_EQ_I64(weft_pallas_add_metadata(gd, "test", "roundtrip"), 0);
}

/* Archive 1's local definitions: a region named by a local string, another marker name. */
static void define_local(weft_pallas_defs *ad)
{
	CHECK_EQ_I64(weft_pallas_add_string(ad, S_LOCAL_KERNEL, "local_kernel"), 0);
	CHECK_EQ_I64(weft_pallas_add_string(ad, S_MARKER, local_marker), 0);
	CHECK_EQ_I64(weft_pallas_add_region(ad, R_LOCAL, S_LOCAL_KERNEL), 0);
}

/* Records thread `i` with workload `body` and closes it. */
static void write_thread(weft_pallas_archive *a, int i, workload body, xtrace *x)
{
	tw w = { 0 };
	w.x = x;
	w.lg = thread_defs[i].lg;
	w.loc = thread_defs[i].loc;
	REQUIRE(weft_pallas_thread_create(a, w.loc, &w.t) == 0);
	body(&w, i);
	CHECK_EQ_I64(w.depth, 0);
	CHECK_EQ_I64(weft_pallas_thread_close(w.t), 0);
}

/*
 * Writes the trace `<scratch>/<name>/main.pallas`: the definitions, 2
 * archives, the 5 threads (or only the first `nthreads`) recorded with
 * `body`. Returns the trace directory (malloc'd).
 */
static char *write_trace(const char *name, const weft_pallas_write_options *o, workload body,
			 int nthreads, xtrace *x)
{
	char *dir = malloc(strlen(scratch) + strlen(name) + 2);
	REQUIRE(dir != NULL);
	sprintf(dir, "%s/%s", scratch, name);
	weft_pallas_global *g;
	int rc = weft_pallas_global_create(dir, "main", o, &g);
	if (rc < 0)
		tu_fail(__FILE__, __LINE__, "global_create: %s", weft_last_error());
	REQUIRE(rc == 0);
	define_global(weft_pallas_global_defs(g));
	weft_pallas_archive *a[2];
	for (uint32_t lg = 0; lg < 2; lg++)
		REQUIRE(weft_pallas_archive_create(g, lg, &a[lg]) == 0);
	define_local(weft_pallas_archive_defs(a[1]));
	for (int i = 0; i < nthreads; i++)
		CHECK_EQ_I64(weft_pallas_add_location(weft_pallas_archive_defs(a[thread_defs[i].lg]),
						      thread_defs[i].loc, thread_defs[i].name,
						      thread_defs[i].lg), 0);
	for (int i = 0; i < nthreads; i++)
		write_thread(a[thread_defs[i].lg], i, body, x);
	for (uint32_t lg = 0; lg < 2; lg++)
		CHECK_EQ_I64(weft_pallas_archive_store(a[lg]), 0);
	CHECK_EQ_I64(weft_pallas_global_store(g), 0);
	weft_pallas_global_free(g);
	return dir;
}

/* ---- Workloads --------------------------------------------------------------------------- */

/* One solve step: 1 to 3 computes, sometimes an exchange with an io inside. */
static void nested_step(tw *w, uint64_t *ts, uint64_t *seed, int it)
{
	w_enter(w, NULL, *ts, R_SOLVE);
	for (uint64_t k = 0, n = 1 + rnd(seed) % 3; k < n; k++) {
		w_enter(w, NULL, *ts += 1 + rnd(seed) % 50, R_COMPUTE);
		/* Some computes take no time at all. */
		*ts += (rnd(seed) % 5 == 0) ? 0 : 10 + rnd(seed) % 900;
		w_leave(w, NULL, *ts);
	}
	if (it % 4 == 0) {
		w_enter(w, NULL, *ts += 3, R_EXCHANGE);
		w_enter(w, NULL, *ts += 1 + rnd(seed) % 20, R_IO);
		w_leave(w, NULL, *ts += 100 + rnd(seed) % 1000);
		w_leave(w, NULL, *ts += 7);
	}
	if (w->lg == 1 && it % 5 == 2) {
		w_enter(w, NULL, *ts += 2, R_LOCAL);
		w_leave(w, NULL, *ts += 33 + rnd(seed) % 77);
	}
	w_leave(w, NULL, *ts += 1 + rnd(seed) % 10);
}

/*
 * main { 40 x solve }, timestamps from the thread's seed; threads 0 and 2
 * start at the same time (ties across streams), thread 4 at 2^40.
 */
static void body_nested(tw *w, int thread)
{
	uint64_t seed = 0x9E3779B97F4A7C15ull * (uint64_t)(thread + 1);
	uint64_t ts = thread == 4 ? (uint64_t)1 << 40 : thread == 2 ? 1000 : 1000 + 17 * (uint64_t)thread;
	w_enter(w, NULL, ts, R_MAIN);
	for (int it = 0; it < 40; it++) {
		ts += 5 + rnd(&seed) % 30;
		nested_step(w, &ts, &seed, it);
		if (it % 10 == 9)
			w_generic(w, NULL, ts += 1, S_MARKER);
	}
	w_leave(w, NULL, ts + 11);
}

/* An attribute list with one value of every type, varying with `k`. */
static void every_type(xattrs *a, uint32_t lg, uint64_t k)
{
	xa_init(a);
	xa_unsigned(a, A_ITER, (uint32_t)k);
	xa_unsigned(a, A_BYTES, (uint64_t)1 << 40 | k);
	xa_unsigned(a, A_FLAG, 0xF0 | (k & 15));
	xa_unsigned(a, A_MID, 60000 + k);
	xa_signed(a, A_SMALL, -100 + (int64_t)k);
	xa_signed(a, A_SHORT, -30000 + (int64_t)k);
	xa_signed(a, A_INT, -2000000000 + (int64_t)k);
	xa_signed(a, A_NEG, INT64_MIN + (int64_t)k);
	xa_real(a, A_SCALE, 0.1 * (double)k);
	xa_real(a, A_RATIO, -2.25 / (double)(k + 1));
	xa_string(a, lg, A_LABEL, k % 2 ? S_MARKER : S_CHECKPOINT);
	xa_region(a, A_WHERE, R_EXCHANGE);
}

/* One MPI round of rank `rank` (thread i), at *ts, with attributes on some records. */
static void mpi_round(tw *w, uint64_t *ts, uint32_t rank, uint64_t k)
{
	xattrs a, b;
	uint32_t peer = rank ^ 1, tag = 100 + (uint32_t)(k % 3);
	every_type(&a, w->lg, k);
	xa_init(&b);
	xa_unsigned(&b, A_ITER, (uint32_t)k);
	w_enter(w, k % 2 ? &b : NULL, *ts += 10, R_EXCHANGE);
	w_isendrecv(w, NULL, *ts += 3, 0, peer, 0, tag, 4096 << (k % 2), 1000 + 2 * k);
	w_isendrecv(w, &b, *ts += 3, 1, peer, 0, tag, 4096, 1001 + 2 * k);
	w_sendrecv(w, k == 1 ? &a : NULL, *ts += 50, 0, peer, 0, 7, (uint64_t)1 << 33);
	w_sendrecv(w, NULL, *ts += 60, 1, peer, 0, 7, (uint64_t)1 << 33);
	w_request(w, NULL, *ts += 5, 0, 1000 + 2 * k);
	w_request(w, &b, *ts += 5, 1, 1001 + 2 * k);
	w_leave(w, k % 3 == 0 ? &a : NULL, *ts += 2);
	w_collective(w, &a, *ts + 1, *ts + 400 + k, 3, 0, 0, 8 * k, 16 * k);
	*ts += 400 + k;
	w_generic(w, k % 2 ? &a : NULL, *ts += 1, S_CHECKPOINT);
}

/* Ranks (threads 0 and 2) exchange messages; the others record generic events. */
static void body_mpi(tw *w, int thread)
{
	uint64_t ts = 5000 + 3 * (uint64_t)thread;
	w_enter(w, NULL, ts, R_MAIN);
	for (uint64_t k = 0; k < 6; k++) {
		if (thread == 0 || thread == 2) {
			mpi_round(w, &ts, thread == 0 ? 0 : 1, k);
		} else {
			xattrs a;
			every_type(&a, w->lg, k + (uint64_t)thread);
			w_generic(w, k % 2 ? &a : NULL, ts += 100, S_MARKER);
		}
	}
	w_leave(w, NULL, ts += 9);
}

/*
 * Thousands of iterations of nested loops: compute, then i % 4 + 1
 * exchanges each with a tick (attributes every 7th), a send every 10th
 * iteration; times in irregular steps, a jump of 2^33 ns every 997
 * iterations, from 2^50.
 */
static void body_loops(tw *w, int thread)
{
	uint64_t seed = 12345 + (uint64_t)thread, ts = ((uint64_t)1 << 50) + (uint64_t)thread;
	w_enter(w, NULL, ts, R_MAIN);
	for (uint64_t i = 0; i < 2500; i++) {
		w_enter(w, NULL, ts += 1 + rnd(&seed) % 5000, R_COMPUTE);
		w_leave(w, NULL, ts += rnd(&seed) % 3000);
		for (uint64_t k = 0; k <= i % 4; k++) {
			xattrs a;
			xa_init(&a);
			xa_unsigned(&a, A_ITER, (uint32_t)i);
			w_enter(w, NULL, ts += 1 + rnd(&seed) % 100, R_EXCHANGE);
			w_generic(w, i % 7 == 0 ? &a : NULL, ts += rnd(&seed) % 10, S_TICK);
			w_leave(w, NULL, ts += 1 + rnd(&seed) % 100);
		}
		if (i % 10 == 0)
			w_sendrecv(w, NULL, ts += 1, 0, 1, 0, 5, 64);
		if (i % 997 == 996)
			ts += (uint64_t)1 << 33;
	}
	w_leave(w, NULL, ts += 1);
}

/*
 * Attribute lists on most events, long enough that every event's lists
 * leave the writer's memory in many chunks (and the scratch buffer is
 * written to its file more than once): each solve's Enter carries one
 * value of every type, each compute's Enter 1 to 4 values, some Leaves
 * and ticks a list too.
 */
static void body_attrs(tw *w, int thread)
{
	uint64_t seed = 777 + (uint64_t)thread, ts = 1000 + (uint64_t)thread;
	for (uint64_t i = 0; i < 4000; i++) {
		xattrs a, b, c;
		every_type(&a, w->lg, (i + (uint64_t)thread) % 97); /* values in their types' range */
		w_enter(w, &a, ts += 1 + rnd(&seed) % 100, R_SOLVE);
		xa_init(&b);
		xa_unsigned(&b, A_ITER, (uint32_t)i);
		if (i % 4 > 0)
			xa_unsigned(&b, A_BYTES, rnd(&seed));
		if (i % 4 > 1)
			xa_signed(&b, A_SHORT, (int16_t)rnd(&seed));
		if (i % 4 > 2)
			xa_real(&b, A_RATIO, (double)(rnd(&seed) % 1000) / 8.0);
		w_enter(w, &b, ts += 1 + rnd(&seed) % 10, R_COMPUTE);
		xa_init(&c);
		xa_unsigned(&c, A_FLAG, i & 0xFF);
		w_leave(w, i % 3 == 0 ? &c : NULL, ts += rnd(&seed) % 500);
		xa_init(&c);
		xa_signed(&c, A_NEG, -(int64_t)i);
		xa_real(&c, A_RATIO, 1.0 / (double)(i + 1));
		w_generic(w, i % 2 ? &c : NULL, ts += 1, S_TICK);
		w_leave(w, NULL, ts += 1 + rnd(&seed) % 7);
	}
}

/* Thread 1 records nothing (created and closed at once); thread 0 a few calls. */
static void body_one_empty(tw *w, int thread)
{
	uint64_t ts = 100;
	for (int i = 0; thread == 0 && i < 3; i++) {
		w_enter(w, NULL, ts += 10, R_COMPUTE);
		w_leave(w, NULL, ts += 5);
	}
}

/* ---- Reading back ------------------------------------------------------------------------ */

/* Opens a trace; NULL (and a failure) when it does not open. */
static weft_trace *open_trace(const char *dir)
{
	weft_trace *t = NULL;
	int rc = weft_trace_open(dir, NULL, &t);
	if (rc < 0) {
		tu_fail(__FILE__, __LINE__, "open %s: %s", dir, weft_last_error());
		return NULL;
	}
	CHECK_EQ_I64(weft_trace_format(t), WEFT_FORMAT_PALLAS);
	return t;
}

/* Sets the stream index of every recorded event from its archive and thread. */
static void assign_streams(weft_trace *t, xtrace *x)
{
	char path[64];
	for (size_t i = 0; i < x->n; i++) {
		snprintf(path, sizeof path, "archive_%u/thread_%u", x->ev[i].lg, x->ev[i].loc);
		x->ev[i].stream = weft_trace_stream_find(t, path);
		if (x->ev[i].stream < 0) {
			tu_fail(__FILE__, __LINE__, "no stream %s", path);
			REQUIRE(0);
		}
	}
}

/* Merged order: time, then stream index, then stored (= recorded) order. */
static int by_merge_order(const void *pa, const void *pb)
{
	const xev *a = *(const xev *const *)pa, *b = *(const xev *const *)pb;
	if (a->time != b->time)
		return a->time < b->time ? -1 : 1;
	if (a->stream != b->stream)
		return a->stream < b->stream ? -1 : 1;
	return a->order < b->order ? -1 : a->order > b->order;
}

/* Whether decoded field `g` is expected field `w`; reports the difference. */
static int same_field(const weft_field *g, const xfield *w, const xev *x)
{
	int ok = g->name_len == strlen(w->name) && memcmp(g->name, w->name, g->name_len) == 0 &&
		 g->type == w->type && !g->is_array;
	if (ok && (w->type == WEFT_TYPE_STR))
		ok = g->v.s.len == strlen(w->s) && memcmp(g->v.s.ptr, w->s, g->v.s.len) == 0;
	else if (ok && w->type >= WEFT_TYPE_I8 && w->type <= WEFT_TYPE_I64)
		ok = g->v.i == w->i;
	else if (ok && (w->type == WEFT_TYPE_F32 || w->type == WEFT_TYPE_F64))
		ok = g->v.f == w->f;
	else if (ok)
		ok = g->v.u == w->u;
	if (!ok)
		tu_fail(__FILE__, __LINE__, "event %zu (%s at %llu): field %.*s (type %d) is not "
			"%s (type %d, %llu/%lld/%g/%s)", x->order, x->code,
			(unsigned long long)x->time, (int)g->name_len, g->name, (int)g->type,
			w->name, (int)w->type, (unsigned long long)w->u, (long long)w->i, w->f,
			w->s ? w->s : "-");
	return ok;
}

/* Whether event `ev` is the recorded `x` (code, time, stream, depth, fields). */
static int same_event(const weft_trace *t, const weft_event *ev, const xev *x)
{
	if (ev->code_len != strlen(x->code) || memcmp(ev->code, x->code, ev->code_len) != 0 ||
	    ev->time != x->time || ev->end != x->time || (int)ev->stream != x->stream ||
	    ev->depth != x->depth || ev->parent != x->parent) {
		tu_fail(__FILE__, __LINE__, "event %zu: got %.*s at %llu stream %u depth %d "
			"parent %lld, recorded %s at %llu stream %d depth %d parent %lld",
			x->order, (int)ev->code_len, ev->code, (unsigned long long)ev->time,
			ev->stream, ev->depth, (long long)ev->parent, x->code,
			(unsigned long long)x->time, x->stream, x->depth, (long long)x->parent);
		return 0;
	}
	weft_field f[MAX_FIELDS + 4];
	int n = weft_event_fields(t, ev, f, MAX_FIELDS + 4);
	if (n != x->nf) {
		tu_fail(__FILE__, __LINE__, "event %zu (%s at %llu): %d fields, recorded %d",
			x->order, x->code, (unsigned long long)x->time, n, x->nf);
		return 0;
	}
	for (int i = 0; i < n; i++)
		if (!same_field(&f[i], &x->f[i], x))
			return 0;
	return 1;
}

/* Reads cursor `c` to its end against `want[0..n-1]`; stops at the first difference. */
static void check_cursor(weft_trace *t, weft_cursor *c, xev *const *want, size_t n)
{
	const weft_event *ev;
	size_t k = 0;
	int rc;
	while ((rc = weft_cursor_next(c, &ev)) == 1) {
		if (k >= n) {
			tu_fail(__FILE__, __LINE__, "more events than the %zu recorded", n);
			return;
		}
		if (!same_event(t, ev, want[k++]))
			return;
	}
	if (rc < 0)
		tu_fail(__FILE__, __LINE__, "cursor: %s", weft_last_error());
	CHECK_EQ_U64(k, n);
}

/* No warning nor error was recorded while opening and reading. */
static void check_no_diags(const weft_trace *t)
{
	for (size_t i = 0; i < weft_trace_diag_count(t); i++) {
		const weft_diag *d = weft_trace_diag(t, i);
		tu_fail(__FILE__, __LINE__, "diagnostic: %s: %s", d->file ? d->file : "-",
			d->message);
	}
}

/* The merged cursor gives every recorded event, in merged order. */
static void check_merged(weft_trace *t, const xtrace *x)
{
	xev **want = malloc((x->n + 1) * sizeof *want);
	REQUIRE(want != NULL);
	for (size_t i = 0; i < x->n; i++)
		want[i] = &x->ev[i];
	qsort(want, x->n, sizeof *want, by_merge_order);
	weft_cursor *c;
	REQUIRE(weft_cursor_create(t, NULL, &c) == 0);
	check_cursor(t, c, want, x->n);
	weft_cursor_free(c);
	free(want);
}

/* Each stream alone gives its recorded events in recorded order. */
static void check_streams(weft_trace *t, const xtrace *x)
{
	xev **want = malloc((x->n + 1) * sizeof *want);
	REQUIRE(want != NULL);
	for (size_t s = 0; s < weft_trace_stream_count(t); s++) {
		size_t n = 0;
		for (size_t i = 0; i < x->n; i++)
			if (x->ev[i].stream == (int)s)
				want[n++] = &x->ev[i];
		weft_cursor *c;
		REQUIRE(weft_cursor_create_stream(t, (uint32_t)s, &c) == 0);
		check_cursor(t, c, want, n);
		weft_cursor_free(c);
	}
	free(want);
}

/* The settings' timestamp storage as the trace metadata names it. */
static void check_storage(const char *dir, const char *want)
{
	weft_trace *t = open_trace(dir);
	if (t == NULL)
		return;
	json_error_t err;
	json_t *m = json_loads(weft_trace_metadata_json(t), 0, &err);
	REQUIRE(m != NULL);
	json_t *settings = json_object_get(m, "settings");
	CHECK_EQ_STR(json_string_value(json_object_get(settings, "timestamp_storage")), want);
	json_decref(m);
	weft_trace_free(t);
}

/* ---- Expected profiles ------------------------------------------------------------------- */

/* Per region: calls, total, min, max and exclusive time (ns). */
typedef struct pstat {
	uint64_t count, total, min, max, exclusive;
} pstat;

/* Adds one call of duration d with exclusive time e. */
static void pstat_add(pstat *p, uint64_t d, uint64_t e)
{
	if (p->count == 0 || d < p->min)
		p->min = d;
	if (d > p->max)
		p->max = d;
	p->count++;
	p->total += d;
	p->exclusive += e;
}

/*
 * The profile of stream `stream` (-1: all), from the recorded Enter and
 * Leave times: a call lasts from its Enter to its Leave; its exclusive
 * time is that minus the durations of the calls directly inside it.
 */
static void expected_profile(const xtrace *x, int stream, pstat out[R_MAX])
{
	memset(out, 0, R_MAX * sizeof *out);
	for (size_t s = 0; s < THREADS; s++) {
		uint64_t start[MAX_CALLS], child[MAX_CALLS];
		uint32_t region[MAX_CALLS];
		int depth = 0;
		for (size_t i = 0; i < x->n; i++) {
			const xev *e = &x->ev[i];
			if (e->lg != thread_defs[s].lg || e->loc != thread_defs[s].loc ||
			    (stream >= 0 && e->stream != stream))
				continue;
			if (strcmp(e->code, "Enter") == 0) {
				region[depth] = (uint32_t)e->f[1].u;
				start[depth] = e->time;
				child[depth++] = 0;
			} else if (strcmp(e->code, "Leave") == 0) {
				depth--;
				uint64_t d = e->time - start[depth];
				if (depth > 0)
					child[depth - 1] += d;
				pstat_add(&out[region[depth]], d, d - child[depth]);
			}
		}
	}
}

/* ---- The grammar API --------------------------------------------------------------------- */

/* The first and last recorded times of the events of stream `s` that pallas_info names `desc`. */
static uint64_t described_times(const xtrace *x, int s, const char *desc, uint64_t *last)
{
	char buf[128];
	uint64_t n = 0, first = 0;
	for (size_t i = 0; i < x->n; i++) {
		const xev *e = &x->ev[i];
		if (e->stream != s)
			continue;
		if (strcmp(e->code, "Enter") == 0 || strcmp(e->code, "Leave") == 0)
			snprintf(buf, sizeof buf, "%s %llu (%s)", e->code,
				 (unsigned long long)e->f[1].u, e->f[0].s);
		else if (strcmp(e->code, "Generic") == 0)
			snprintf(buf, sizeof buf, "%s", e->f[0].s);
		else
			continue;
		if (strcmp(buf, desc) != 0)
			continue;
		if (n++ == 0)
			first = e->time;
		*last = e->time;
	}
	return n ? first : UINT64_MAX;
}

/* Recorded events of stream `s` with code `code`. */
static uint64_t count_code(const xtrace *x, int s, const char *code)
{
	uint64_t n = 0;
	for (size_t i = 0; i < x->n; i++)
		n += x->ev[i].stream == s && strcmp(x->ev[i].code, code) == 0;
	return n;
}

/*
 * The events table of one grammar: occurrences per record kind add up to
 * the recorded counts; Enter, Leave and Generic events (one per region or
 * name) have the first and last recorded times.
 */
static void check_grammar_events(weft_pallas_grammar *g, const xtrace *x, int s)
{
	static const char *const codes[] = { "Enter", "Leave", "Generic", "MPI_Send", "MPI_Recv",
		"MPI_Isend", "MPI_Irecv", "MPI_IsendComplete", "MPI_IrecvRequest",
		"MPI_CollectiveBegin", "MPI_CollectiveEnd" };
	uint64_t per_code[11] = { 0 }, all = 0;
	for (size_t i = 0; i < weft_pallas_grammar_event_count(g); i++) {
		weft_pallas_event_info e;
		REQUIRE(weft_pallas_grammar_event(g, i, &e) == 0);
		all += e.occurrences;
		for (int c = 0; c < 11; c++)
			if (e.code && strcmp(e.code, codes[c]) == 0)
				per_code[c] += e.occurrences;
		if (e.record != 2 && e.record != 3 && e.record != 58)
			continue;
		uint64_t last = 0, first = described_times(x, s, e.description, &last);
		if (first != e.first_time || last != e.last_time)
			tu_fail(__FILE__, __LINE__, "stream %d event %zu (%s): times %llu .. %llu, "
				"recorded %llu .. %llu", s, i, e.description,
				(unsigned long long)e.first_time, (unsigned long long)e.last_time,
				(unsigned long long)first, (unsigned long long)last);
	}
	uint64_t recorded = 0;
	for (size_t i = 0; i < x->n; i++)
		recorded += x->ev[i].stream == s;
	CHECK_EQ_U64(all, recorded);
	for (int c = 0; c < 11; c++)
		CHECK_EQ_U64(per_code[c], count_code(x, s, codes[c]));
}

/* Adds the calls of one block sequence (headers and exact totals) to `got`. */
static void add_sequence_calls(weft_pallas_grammar *g, size_t i, pstat got[R_MAX])
{
	weft_pallas_sequence_info q;
	REQUIRE(weft_pallas_grammar_sequence(g, i, &q) == 0);
	if (q.dead || q.region_ref < 0 || q.durations.count == 0)
		return;
	REQUIRE(q.region_ref < R_MAX);
	CHECK_EQ_STR(q.name, region_name((uint32_t)q.region_ref));
	CHECK_EQ_U64(q.exclusive.count, q.durations.count);
	uint64_t total = 0, excl = 0;
	CHECK_EQ_I64(weft_pallas_grammar_sequence_totals(g, i, &total, &excl), 0);
	pstat *p = &got[q.region_ref];
	if (p->count == 0 || q.durations.min < p->min)
		p->min = q.durations.min;
	if (q.durations.max > p->max)
		p->max = q.durations.max;
	p->count += q.durations.count;
	p->total += total;
	p->exclusive += excl;
}

/* Two profiles are equal region by region. */
static void check_profiles(const pstat got[R_MAX], const pstat want[R_MAX], const char *what)
{
	for (int r = 0; r < R_MAX; r++)
		if (memcmp(&got[r], &want[r], sizeof got[r]) != 0)
			tu_fail(__FILE__, __LINE__, "%s: region %d: %llu calls, total %llu, "
				"%llu .. %llu, exclusive %llu; recorded %llu calls, total %llu, "
				"%llu .. %llu, exclusive %llu", what, r,
				(unsigned long long)got[r].count, (unsigned long long)got[r].total,
				(unsigned long long)got[r].min, (unsigned long long)got[r].max,
				(unsigned long long)got[r].exclusive, (unsigned long long)want[r].count,
				(unsigned long long)want[r].total, (unsigned long long)want[r].min,
				(unsigned long long)want[r].max, (unsigned long long)want[r].exclusive);
}

/* The grammar of every stream: its events and its block sequences' durations. */
static void check_grammars(weft_trace *t, const xtrace *x)
{
	for (size_t s = 0; s < weft_trace_stream_count(t); s++) {
		weft_pallas_grammar *g;
		int rc = weft_pallas_grammar_open(t, (uint32_t)s, &g);
		if (rc < 0)
			tu_fail(__FILE__, __LINE__, "grammar %zu: %s", s, weft_last_error());
		REQUIRE(rc == 0);
		check_grammar_events(g, x, (int)s);
		pstat got[R_MAX], want[R_MAX];
		memset(got, 0, sizeof got);
		for (size_t i = 0; i < weft_pallas_grammar_sequence_count(g); i++)
			add_sequence_calls(g, i, got);
		expected_profile(x, (int)s, want);
		check_profiles(got, want, "grammar");
		weft_pallas_grammar_free(g);
	}
}

/* Everything that reads a trace back: merged and per-stream events, grammars, no diagnostics. */
static void check_trace(const char *dir, xtrace *x, int nthreads)
{
	weft_trace *t = open_trace(dir);
	if (t == NULL)
		return;
	CHECK_EQ_U64(weft_trace_stream_count(t), nthreads);
	assign_streams(t, x);
	check_merged(t, x);
	check_streams(t, x);
	check_grammars(t, x);
	check_no_diags(t);
	weft_trace_free(t);
}

/* ---- The weft command -------------------------------------------------------------------- */

/* The output of `weft ARGS... DIR` (malloc'd), NULL and a failure when it fails. */
static char *run_weft(const char *args, const char *dir)
{
	int status;
	char *out = tu_run_weft(args, dir, &status);
	if (out != NULL && status != 0) {
		tu_fail(__FILE__, __LINE__, "weft %s %s: exit status %d", args, dir, status);
		free(out);
		return NULL;
	}
	return out;
}

/* The integer member `key` of a JSON object (a failure when missing). */
static uint64_t json_u64(const json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);
	if (!json_is_integer(v)) {
		tu_fail(__FILE__, __LINE__, "profile: no integer %s", key);
		return UINT64_MAX;
	}
	return (uint64_t)json_integer_value(v);
}

/* The region ref of a region name (R_MAX when unknown). */
static int region_of_name(const char *name)
{
	for (int r = 0; r < R_MAX; r++)
		if (name && *region_name((uint32_t)r) && strcmp(region_name((uint32_t)r), name) == 0)
			return r;
	return R_MAX;
}

/*
 * `weft profile --json OPTION` against the recorded profile over all
 * threads; with `--headers-only` only counts, min and max are exact.
 */
static void check_cli_profile(const char *dir, const char *option, const xtrace *x)
{
	char args[64];
	snprintf(args, sizeof args, "profile --json %s", option);
	char *out = run_weft(args, dir);
	if (out == NULL)
		return;
	json_error_t err;
	json_t *root = json_loads(out, 0, &err);
	free(out);
	REQUIRE(root != NULL);
	pstat got[R_MAX], want[R_MAX];
	memset(got, 0, sizeof got);
	expected_profile(x, -1, want);
	json_t *regions = json_object_get(root, "regions"), *o;
	size_t i;
	json_array_foreach(regions, i, o) {
		int r = region_of_name(json_string_value(json_object_get(o, "region")));
		REQUIRE(r < R_MAX);
		got[r] = (pstat){ json_u64(o, "count"), json_u64(o, "total_ns"), json_u64(o, "min_ns"),
				  json_u64(o, "max_ns"), json_u64(o, "exclusive_ns") };
		if (strcmp(option, "--headers-only") == 0)
			got[r].total = want[r].total, got[r].exclusive = want[r].exclusive;
	}
	check_profiles(got, want, option);
	json_decref(root);
}

/* ---- Tests ------------------------------------------------------------------------------- */

/* (a) nested calls, 5 threads in 2 archives, explicit timestamps. */
static void test_nested(void)
{
	xtrace x = { 0 };
	char *dir = write_trace("nested", NULL, body_nested, THREADS, &x);
	check_trace(dir, &x, THREADS);
	check_cli_profile(dir, "", &x);
	check_cli_profile(dir, "--replay", &x);
	check_cli_profile(dir, "--headers-only", &x);
	free(x.ev), free(dir);
}

/* (b) MPI records with their payloads, attributes of every type, generic events. */
static void test_mpi(void)
{
	weft_pallas_write_options o;
	weft_pallas_write_options_init(&o);
	for (int raw = 0; raw < 2; raw++) {
		xtrace x = { 0 };
		o.compression = raw ? WEFT_PALLAS_WRITE_RAW : WEFT_PALLAS_WRITE_ZSTD;
		char *dir = write_trace(raw ? "mpi-raw" : "mpi", &o, body_mpi, THREADS, &x);
		check_trace(dir, &x, THREADS);
		check_cli_profile(dir, "--replay", &x);
		free(x.ev), free(dir);
	}
}

/* The nested workload with options `o`, read back; returns its `weft dump --json`. */
static char *nested_with(const char *name, const weft_pallas_write_options *o)
{
	xtrace x = { 0 };
	char *dir = write_trace(name, o, body_nested, THREADS, &x);
	check_storage(dir, o->delta_timestamps ? "WeftDelta" : "Delta");
	check_trace(dir, &x, THREADS);
	check_cli_profile(dir, "", &x);
	check_cli_profile(dir, "--replay", &x);
	char *dump = run_weft("dump --json", dir);
	if (dump != NULL) {
		size_t lines = 0;
		for (const char *p = dump; *p; p++)
			lines += *p == '\n';
		CHECK_EQ_U64(lines, x.n);
	}
	free(x.ev), free(dir);
	return dump;
}

/*
 * (c) delta timestamps: the nested workload, zstd and raw, both layouts,
 * helper threads; the same events and the same `weft dump --json` as
 * without deltas.
 */
static void test_delta(void)
{
	static const struct { const char *name; int raw, delta, compact, helpers; } cases[] = {
		{ "plain-zstd", 0, 0, 0, 0 }, { "plain-raw", 1, 0, 0, 0 },
		{ "delta-zstd", 0, 1, 0, 0 }, { "delta-raw", 1, 1, 0, 0 },
		{ "delta-compact", 0, 1, 1, 0 }, { "delta-helpers", 0, 1, 1, 2 },
	};
	char *reference = NULL;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		weft_pallas_write_options o;
		weft_pallas_write_options_init(&o);
		o.compression = cases[i].raw ? WEFT_PALLAS_WRITE_RAW : WEFT_PALLAS_WRITE_ZSTD;
		o.delta_timestamps = cases[i].delta;
		o.layout = cases[i].compact ? WEFT_PALLAS_LAYOUT_COMPACT : WEFT_PALLAS_LAYOUT_PALLAS;
		o.compress_threads = cases[i].helpers;
		char *dump = nested_with(cases[i].name, &o);
		if (reference == NULL)
			reference = dump;
		else if (dump != NULL && strcmp(dump, reference) != 0)
			tu_fail(__FILE__, __LINE__, "%s: weft dump --json differs from %s",
				cases[i].name, cases[0].name);
		if (dump != reference)
			free(dump);
	}
	free(reference);
}

/* Timestamps that go back: their deltas wrap around 2^64. */
static void body_backwards(tw *w, int thread)
{
	static const uint64_t times[] = { 5000, 100, (uint64_t)1 << 63, 7, UINT64_MAX - 1000, 0, 42,
					  41, 40, (uint64_t)1 << 62 };
	(void)thread;
	for (size_t k = 0; k < 2000; k++)
		w_generic(w, NULL, times[k % 10] + k / 10, k % 3 ? S_MARKER : S_TICK);
}

/* (c) deltas that wrap, read in stream order (the one thread). */
static void test_delta_wrap(void)
{
	weft_pallas_write_options o;
	weft_pallas_write_options_init(&o);
	o.delta_timestamps = 1;
	xtrace x = { 0 };
	char *dir = write_trace("delta-wrap", &o, body_backwards, 1, &x);
	weft_trace *t = open_trace(dir);
	if (t != NULL) {
		assign_streams(t, &x);
		check_streams(t, &x);
		check_no_diags(t);
		weft_trace_free(t);
	}
	free(x.ev), free(dir);
}

/* Adds 1 to the u64 at `offset` of file `path`. */
static void bump_u64(const char *path, long offset)
{
	FILE *f = fopen(path, "r+b");
	REQUIRE(f != NULL);
	uint64_t v = 0;
	REQUIRE(fseek(f, offset, SEEK_SET) == 0 && fread(&v, 8, 1, f) == 1);
	v++;
	REQUIRE(fseek(f, offset, SEEK_SET) == 0 && fwrite(&v, 8, 1, f) == 1);
	fclose(f);
}

/*
 * A damaged delta (raw values, one delta of the first sub-array bumped):
 * the sums no longer reach the header's last value, so the stream ends
 * with an error diagnostic instead of delivering shifted times.
 */
static void test_delta_damaged(void)
{
	weft_pallas_write_options o;
	weft_pallas_write_options_init(&o);
	o.delta_timestamps = 1;
	o.compression = WEFT_PALLAS_WRITE_RAW;
	xtrace x = { 0 };
	char *dir = write_trace("delta-damaged", &o, body_backwards, 1, &x);
	char path[1024];
	snprintf(path, sizeof path, "%s/archive_0/thread_0/event_durations.dat", dir);
	bump_u64(path, 8 + 8 * 5); /* nbytes, then the 6th value of the first record */
	weft_trace *t = open_trace(dir);
	REQUIRE(t != NULL);
	weft_cursor *c;
	const weft_event *ev;
	uint64_t n = 0;
	REQUIRE(weft_cursor_create(t, NULL, &c) == 0);
	while (weft_cursor_next(c, &ev) == 1)
		n++;
	weft_cursor_free(c);
	CHECK(n < x.n);
	int found = 0;
	for (size_t i = 0; i < weft_trace_diag_count(t); i++) {
		const weft_diag *d = weft_trace_diag(t, i);
		found |= d->severity == WEFT_SEV_ERROR && strstr(d->message, "delta") != NULL;
	}
	CHECK(found);
	weft_trace_free(t);
	free(x.ev), free(dir);
}

/* (d) loops over thousands of iterations: every timestamp, with and without deltas. */
static void test_loops(void)
{
	static const struct { const char *name; int raw, delta, compact; } cases[] = {
		{ "loops-zstd", 0, 0, 0 }, { "loops-raw", 1, 0, 0 },
		{ "loops-delta-zstd", 0, 1, 0 }, { "loops-delta-raw", 1, 1, 0 },
		{ "loops-delta-compact", 0, 1, 1 },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		weft_pallas_write_options o;
		weft_pallas_write_options_init(&o);
		o.compression = cases[i].raw ? WEFT_PALLAS_WRITE_RAW : WEFT_PALLAS_WRITE_ZSTD;
		o.delta_timestamps = cases[i].delta;
		o.layout = cases[i].compact ? WEFT_PALLAS_LAYOUT_COMPACT : WEFT_PALLAS_LAYOUT_PALLAS;
		xtrace x = { 0 };
		char *dir = write_trace(cases[i].name, &o, body_loops, 2, &x);
		CHECK(x.n > 40000);
		check_trace(dir, &x, 2);
		check_cli_profile(dir, "", &x);
		check_cli_profile(dir, "--replay", &x);
		free(x.ev), free(dir);
	}
}

/*
 * (e) attribute lists that leave the writer's memory in chunks (spilled
 * to the scratch file, read back at close): every value of every list
 * read back through the unified API, in both layouts, with helpers, raw
 * or zstd.
 */
static void test_attrs_spilled(void)
{
	static const struct { const char *name; int raw, compact, helpers; } cases[] = {
		{ "attrs-zstd", 0, 0, -1 }, { "attrs-raw", 1, 0, 0 },
		{ "attrs-compact-helpers", 0, 1, 2 },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		weft_pallas_write_options o;
		weft_pallas_write_options_init(&o);
		o.compression = cases[i].raw ? WEFT_PALLAS_WRITE_RAW : WEFT_PALLAS_WRITE_ZSTD;
		o.layout = cases[i].compact ? WEFT_PALLAS_LAYOUT_COMPACT : WEFT_PALLAS_LAYOUT_PALLAS;
		if (cases[i].helpers >= 0)
			o.compress_threads = cases[i].helpers;
		xtrace x = { 0 };
		char *dir = write_trace(cases[i].name, &o, body_attrs, 2, &x);
		CHECK_EQ_U64(x.n, 2 * 4000 * 5);
		check_trace(dir, &x, 2);
		free(x.ev), free(dir);
	}
}

/*
 * (f) a thread without events next to one with events: read back with 0
 * events and no diagnostic; `weft info`, `weft dump` and `weft dump
 * --structure` work on the trace.
 */
static void test_empty_thread(void)
{
	xtrace x = { 0 };
	char *dir = write_trace("empty-thread", NULL, body_one_empty, 2, &x);
	CHECK_EQ_U64(x.n, 6);
	check_trace(dir, &x, 2);
	weft_trace *t = open_trace(dir);
	if (t != NULL) {
		int s = weft_trace_stream_find(t, "archive_0/thread_1");
		REQUIRE(s >= 0);
		weft_cursor *c;
		const weft_event *ev;
		REQUIRE(weft_cursor_create_stream(t, (uint32_t)s, &c) == 0);
		CHECK_EQ_I64(weft_cursor_next(c, &ev), 0);
		weft_cursor_free(c);
		check_no_diags(t);
		weft_trace_free(t);
	}
	char *out = run_weft("info", dir);
	CHECK(out != NULL && strstr(out, "events: 0") != NULL);
	free(out);
	out = run_weft("dump", dir);
	size_t lines = 0;
	for (const char *p = out ? out : ""; *p; p++)
		lines += *p == '\n';
	CHECK_EQ_U64(lines, x.n);
	free(out);
	out = run_weft("dump --structure", dir);
	CHECK(out != NULL && strstr(out, "archive_0/thread_1: 0 events") != NULL);
	free(out);
	free(x.ev), free(dir);
}

/* Every round trip, in one scratch directory (kept when a check fails). */
int main(void)
{
	scratch = tu_mkdtemp("weft-pallas-roundtrip");
	REQUIRE(scratch != NULL);
	test_nested();
	test_mpi();
	test_delta();
	test_delta_wrap();
	test_delta_damaged();
	test_loops();
	test_attrs_spilled();
	test_empty_thread();
	return tu_finish_dir(scratch);
}
