/* SPDX-License-Identifier: MIT */
/*
 * libovni_priv.h - state and helpers shared by the files of weft's drop-in
 * libovni. Nothing here is exported: everything is static or hidden.
 *
 * The emit path is built for speed: each thread owns a heap buffer whose
 * position and limit are in initial-exec TLS; emitting is a bounds check, a
 * fixed-size copy and a pointer bump, with no lock. Everything else (files,
 * metadata, flushes) is on slow paths.
 */
#ifndef WEFT_LIBOVNI_PRIV_H
#define WEFT_LIBOVNI_PRIV_H

#include <limits.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

#include "ovni.h"

#pragma GCC visibility push(hidden)

#define OV_LIKELY(x) __builtin_expect(!!(x), 1)
#define OV_UNLIKELY(x) __builtin_expect(!!(x), 0)

/* initial-exec TLS: one %fs-relative load instead of a __tls_get_addr call.
 * The library keeps its TLS tiny so it still fits when dlopen()ed. */
#define OV_TLS _Thread_local __attribute__((tls_model("initial-exec")))

/* Bytes past the buffer limit that are always allocated: room for the
 * fixed 28-byte copy of the emit path and for the OF[ event of a flush. */
#define OV_SLACK 64

/* Smallest buffer accepted from WEFT_OVNI_BUFSIZE. */
#define OV_MIN_BUF 4096

/* ---- Process and thread state ---------------------------------------- */

struct ov_proc {
	int ready;
	int finished;
	int app;
	int pid;
	char loom[OVNI_MAX_HOSTNAME];
	/* Where streams are written, and where they end up when OVNI_TMPDIR
	 * is set (move_to_final); empty strings otherwise. */
	char procdir[PATH_MAX];
	char procdir_final[PATH_MAX];
	char loomdir[PATH_MAX];
	char tmpdir[PATH_MAX];
	int move_to_final;
	size_t bufsize;
};

/*
 * What the emit path needs, kept in TLS itself so that reaching pos is a
 * single %fs-relative load (not TLS pointer, then struct). pos == limit
 * == NULL while the thread has no stream, which sends emits to the slow
 * path, where t == NULL is reported.
 */
struct ov_fast {
	uint8_t *pos;        /* next free byte; events end at or before limit */
	uint8_t *limit;      /* buf + capacity - 1 (an event that would fill the
			      * buffer flushes it first, as in libovni);
			      * OV_SLACK bytes follow it */
	struct ov_thread *t; /* the stream of this thread, or NULL */
};

struct ov_thread {
	/* The owner's TLS ov_fast: pos is read from here by the exit
	 * handler while the owner is alive (it is registered). */
	struct ov_fast *fast;
	uint8_t *buf;
	int fd;
	pid_t tid;
	/* Serialises writes of this stream between its owner's slow paths
	 * and the exit handler (never taken on the emit path). */
	pthread_mutex_t lock;
	/* Set by the exit handler once it wrote the stream for a thread that
	 * was still running: nothing more may be written. */
	int dead;
	json_t *meta; /* the stream.json object */
	json_t *cpus; /* ovni_add_cpu() entries, or NULL */
	/* Rank and number of ranks, set by ovni_proc_set_rank() from this
	 * thread (libovni writes them in the caller's stream only). */
	int rank_set;
	int rank;
	int nranks;
	/* The buffer position just after the OF[ / OF] pair that the last
	 * ovni_flush() put there, or NULL: a buffer that holds only that pair
	 * when the stream closes is not written (libovni never writes it). */
	uint8_t *flush_tail;
	char dir[PATH_MAX];       /* thread dir where files are written */
	char dir_final[PATH_MAX]; /* its final place (OVNI_TMPDIR only) */
	struct ov_thread *prev, *next; /* registry of open streams */
};

extern struct ov_proc ov_proc;
extern OV_TLS struct ov_fast ov_fast;

/* ---- Errors (util.c) --------------------------------------------------- */

/* Prints "ovni: <func>: <message>" (plus the errno text when fmt ends
 * with ':') and aborts, like libovni does on misuse and I/O failure. */
_Noreturn void ov_die(const char *func, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void ov_warn(const char *func, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Parses "major.minor.patch" (semver, suffix allowed); 0 or -1. */
int ov_version_parse(const char *s, int out[3]);
/* mkdir -p; 0 or -1 with errno set. */
int ov_mkpath(const char *path, mode_t mode);
/* Writes all n bytes (retrying partial writes); aborts on failure. */
void ov_write_all(int fd, const void *p, size_t n, const char *what);
/* Writes two pieces with writev, retrying partial writes; aborts. */
void ov_write2(int fd, const void *a, size_t na, const void *b, size_t nb,
	       const char *what);
/* Moves every file of directory src into dst (rename, or copy+unlink
 * across file systems), then removes src. Warns on failure. */
void ov_move_dir(const char *src, const char *dst);

/* ---- Clock (clock.c) ---------------------------------------------------- */

/*
 * Per-thread conversion from the TSC to CLOCK_MONOTONIC: ns = ns_anchor +
 * (tsc - tsc_anchor) * mult / 2^32, valid while tsc - tsc_anchor < limit
 * (about 1 ms), then re-anchored on clock_gettime(). floor keeps the
 * values of a thread non-decreasing across re-anchoring. limit = 0 sends
 * every call to the slow path (TSC not usable, or not calibrated yet).
 */
struct ov_clock {
	uint64_t tsc;
	uint64_t ns;
	uint64_t mult;
	uint64_t limit;
	uint64_t floor;
};

extern OV_TLS struct ov_clock ov_clk;

uint64_t ov_clock_slow(void);

/* Reads the TSC where there is one (0 elsewhere: always slow path). */
static inline uint64_t
ov_rdtsc(void)
{
#if defined(__x86_64__) || defined(__i386__)
	return __builtin_ia32_rdtsc();
#else
	return 0;
#endif
}

/* The ovni clock, inlined into the library's own callers. limit == 0
 * (no TSC, or not calibrated yet) skips the TSC read altogether. */
static inline uint64_t
ov_clock(void)
{
	struct ov_clock *c = &ov_clk;
	uint64_t limit = c->limit;

	if (OV_LIKELY(limit != 0)) {
		uint64_t d = ov_rdtsc() - c->tsc;
		if (OV_LIKELY(d < limit)) {
			uint64_t ns = c->ns + ((d * c->mult) >> 32);
			return ns > c->floor ? ns : c->floor;
		}
	}
	return ov_clock_slow();
}

/* ---- Emitting (emit.c) ------------------------------------------------- */

/* Total stored size of a normal event with these flags (12..28). */
static inline size_t
ov_ev_size_of(unsigned flags)
{
	unsigned code = flags & 0x0fu;
	return 12u + code + (code != 0);
}

/*
 * Copies the 28 bytes of an event (the buffer has slack for the part past
 * the event's real size) with loads that each fall inside one of the
 * stores that filled the event: the 4-byte flags+MCV word, the 8-byte
 * clock and the payload in 4-byte pieces. A wider load spanning several
 * recent stores would wait for them to reach the cache (a store-to-load
 * forwarding stall, ~5 ns, as much as the rest of the emit).
 */
static inline void
ov_copy_event(uint8_t *dst, const struct ovni_ev *ev)
{
	const uint8_t *src = (const uint8_t *) ev;
	uint32_t w, p0, p1, p2, p3;
	uint64_t clock;

	__builtin_memcpy(&w, src, 4);
	__builtin_memcpy(&clock, src + 4, 8);
	__builtin_memcpy(&p0, src + 12, 4);
	__builtin_memcpy(&p1, src + 16, 4);
	__builtin_memcpy(&p2, src + 20, 4);
	__builtin_memcpy(&p3, src + 24, 4);
	/* Keeps the compiler from merging the payload loads into one. */
	__asm__("" : "+r"(p0), "+r"(p1), "+r"(p2), "+r"(p3));
	/* Two 8-byte stores: cheaper than the shuffles a 16-byte one needs. */
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	uint64_t q0 = (uint64_t) p0 << 32 | p1, q1 = (uint64_t) p2 << 32 | p3;
#else
	uint64_t q0 = (uint64_t) p1 << 32 | p0, q1 = (uint64_t) p3 << 32 | p2;
#endif
	__builtin_memcpy(dst, &w, 4);
	__builtin_memcpy(dst + 4, &clock, 8);
	__builtin_memcpy(dst + 12, &q0, 8);
	__builtin_memcpy(dst + 20, &q1, 8);
}

/* Slow path of emitting a normal event: checks and buffer-full flush. */
void ov_emit_slow(struct ov_thread *t, const struct ovni_ev *ev,
		  const char *func);

/* Emits a normal event from inside the library. */
static inline void
ov_emit(const struct ovni_ev *ev, const char *func)
{
	struct ov_fast *f = &ov_fast;
	uint8_t *pos = f->pos;
	unsigned flags = ev->header.flags;
	size_t size = ov_ev_size_of(flags);

	if (OV_LIKELY(flags < 0x10u && (size_t) (f->limit - pos) >= size)) {
		ov_copy_event(pos, ev);
		/* Release: the exit handler may read pos from another thread. */
		__atomic_store_n(&f->pos, pos + size, __ATOMIC_RELEASE);
		return;
	}
	ov_emit_slow(f->t, ev, func);
}

/* Writes the buffered events out (caller holds t->lock). */
void ov_buffer_write(struct ov_thread *t);

/* ---- Streams and metadata (thread.c, meta.c) -------------------------- */

/* The thread state of the caller, or abort naming func. */
struct ov_thread *ov_thread_get(const char *func);
/* Builds the initial stream.json object of a new stream. */
json_t *ov_meta_new(const struct ov_thread *t);
/* Adds rank, loom_cpus and (when finished) finished: 1 to the metadata. */
void ov_meta_finalize(struct ov_thread *t, int finished);
/* Writes stream.json of the stream (temp file + rename). */
void ov_meta_store(struct ov_thread *t);
/* The "ovni" object of the stream metadata. */
json_t *ov_meta_ovni(struct ov_thread *t);

#pragma GCC visibility pop

#endif /* WEFT_LIBOVNI_PRIV_H */
