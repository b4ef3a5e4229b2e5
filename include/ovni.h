/* SPDX-License-Identifier: MIT */
/*
 * ovni.h - the instrumentation API of libovni 1.14, as provided by weft's
 * drop-in libovni (libovni.so built from src/libovni/).
 *
 * A program written against the real libovni 1.14 builds unchanged against
 * this header and links with -lovni. The trace written is the ovni layout
 * v3: $OVNI_TRACEDIR/loom.<loom>/proc.<pid>/thread.<tid>/stream.{obs,json}.
 * See docs/libovni.md for what differs from the real library.
 *
 * Every function aborts with a message naming itself when it is misused
 * (e.g. emitting from a thread that was not initialised), like libovni.
 */
#ifndef OVNI_H
#define OVNI_H

/* Only the functions below are exported by libovni.so. */
#pragma GCC visibility push(default)

#ifdef __cplusplus
extern "C" {
#endif

/* The real ovni.h includes these; programs may rely on them. */
#include <limits.h>
#ifdef __linux__
#include <linux/limits.h>
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#define OVNI_METADATA_VERSION 3

#define OVNI_TRACEDIR "ovni"
#define OVNI_MAX_HOSTNAME 512

/* Default per-thread event buffer (weft: WEFT_OVNI_BUFSIZE changes it). */
#define OVNI_MAX_EV_BUF (2 * 1024LL * 1024LL) /* 2 MiB */

#define OVNI_STREAM_MAGIC "ovni"
#define OVNI_STREAM_VERSION 1

#define OVNI_STREAM_EXT ".obs"

/* Version of the "ovni" model that every stream requires (libovni 1.14). */
#define OVNI_MODEL_VERSION "1.1.0"

/* Version of the libovni API this library implements (semver). */
#define OVNI_LIB_VERSION "1.14.0"
#define OVNI_GIT_COMMIT "weft"

/* ---- Trace format ----------------------------------------------------- */

enum ovni_ev_flags {
	OVNI_EV_JUMBO = 0x10,
};

/*
 * View of the payload of a jumbo event: the size of the data that follows
 * the event. (ISO C allows no flexible array inside a union member, so the
 * data is declared with one element, as in libovni.)
 */
struct __attribute__((__packed__)) ovni_jumbo_payload {
	uint32_t size;
	uint8_t data[1];
};

/* The 16 payload bytes, seen as arrays of each integer type. */
union __attribute__((__packed__)) ovni_ev_payload {
	int8_t i8[16];
	int16_t i16[8];
	int32_t i32[4];
	int64_t i64[2];

	uint8_t u8[16];
	uint16_t u16[8];
	uint32_t u32[4];
	uint64_t u64[2];

	struct ovni_jumbo_payload jumbo;
};

/* The 12-byte event header, stored as is in the stream. */
struct __attribute__((__packed__)) ovni_ev_header {
	/* high 4 bits: flags (0x10 = jumbo); low 4 bits: payload size code
	 * (0 = none, v = v + 1 bytes) */
	uint8_t flags;
	uint8_t model;
	uint8_t category;
	uint8_t value;
	uint64_t clock;
};

/* An event: users build it on the stack, so its layout is ABI (28 bytes). */
struct __attribute__((__packed__)) ovni_ev {
	struct ovni_ev_header header;

	/* Only the first ovni_payload_size() bytes are stored: 0 or 2..16
	 * for a normal event, the 4-byte size for a jumbo one (whose data
	 * follows it in the stream). */
	union ovni_ev_payload payload;
};

/* The 8 bytes at the start of every stream.obs. */
struct __attribute__((__packed__)) ovni_stream_header {
	char magic[4];
	uint32_t version;
};

/* ---- Library API ------------------------------------------------------ */

/* Aborts unless the library is compatible with the header used to build
 * the caller (same major, minor not newer than the library's). */
#define ovni_version_check() ovni_version_check_str(OVNI_LIB_VERSION)
void ovni_version_check_str(const char *version);
void ovni_version_get(const char **version, const char **commit);

/* Once per process: creates $OVNI_TRACEDIR/loom.<loom>/proc.<pid>/. */
void ovni_proc_init(int app, const char *loom, int pid);

/* Records the rank of this process and the number of ranks (MPI). */
void ovni_proc_set_rank(int rank, int nranks);

void ovni_proc_fini(void);

/* Once per thread: opens the stream thread.<tid>/ of the process. */
void ovni_thread_init(pid_t tid);

void ovni_thread_require(const char *model, const char *version);

/* Writes the pending events and closes the stream (finished: 1). */
void ovni_thread_free(void);

int ovni_thread_isready(void);

void ovni_ev_set_mcv(struct ovni_ev *ev, const char *mcv);

/* Clock of the event, in ns. */
uint64_t ovni_ev_get_clock(const struct ovni_ev *ev);

/* Sets the clock of the event, in ns. */
void ovni_ev_set_clock(struct ovni_ev *ev, uint64_t clock);

/* Current time in ns on the CLOCK_MONOTONIC scale. */
uint64_t ovni_clock_now(void);

void ovni_payload_add(struct ovni_ev *ev, const uint8_t *buf, int size);

int ovni_ev_size(const struct ovni_ev *ev);

int ovni_payload_size(const struct ovni_ev *ev);

/* Adds a CPU of the loom to the stream of the calling thread. */
void ovni_add_cpu(int index, int phyid);

/* Appends the event to the thread's buffer, writing the buffer out first
 * when it is full. A jumbo event carries bufsize bytes of data (any size
 * up to 2^32 - 1 here). */
void ovni_ev_emit(struct ovni_ev *ev);
void ovni_ev_jumbo_emit(struct ovni_ev *ev, const uint8_t *buf, uint32_t bufsize);

/* Writes the buffered events, recording the flush with OF[ and OF]. */
void ovni_flush(void);

/* Attributes of the stream metadata (dot-separated keys). */
int ovni_attr_has(const char *key);
void ovni_attr_set_double(const char *key, double num);
void ovni_attr_set_boolean(const char *key, int value);
void ovni_attr_set_str(const char *key, const char *value);
void ovni_attr_set_json(const char *key, const char *json);
double ovni_attr_get_double(const char *key);
int ovni_attr_get_boolean(const char *key);
const char *ovni_attr_get_str(const char *key);
char *ovni_attr_get_json(const char *key);
void ovni_attr_flush(void);

/* Marks: user-defined channels of values with titles and labels. */
enum ovni_mark_flags {
	OVNI_MARK_STACK = 1, /* the type is a stack: push/pop, not set */
};
void ovni_mark_type(int32_t type, long flags, const char *title);
void ovni_mark_label(int32_t type, int64_t value, const char *label);
void ovni_mark_push(int32_t type, int64_t value);
void ovni_mark_pop(int32_t type, int64_t value);
void ovni_mark_set(int32_t type, int64_t value);

#ifdef __cplusplus
}
#endif

#pragma GCC visibility pop

#endif /* OVNI_H */
