/* SPDX-License-Identifier: MIT */
/*
 * emit.c - building events and putting them into the thread's buffer.
 *
 * The buffer only ever holds whole events and is only written out whole,
 * so a stream cut short by a crash ends at an event boundary (up to what
 * the kernel itself was writing). Flushes are recorded with an OF[ / OF]
 * pair where libovni puts it (in the buffer, after the flush), so the cost
 * of tracing shows in the trace and the events land where libovni's do;
 * the pair's clocks are never below the event before it.
 */
#include <string.h>

#include "libovni_priv.h"

/* ---- Event construction ---------------------------------------------- */

/*
 * MCV: the three printable characters naming the event ("OHx"). The
 * whole first word (flags + MCV) is stored at once, and ovni_payload_add
 * does the same: the emit path then loads that word straight from the
 * store buffer instead of stalling on a load that spans several stores.
 */
void
ovni_ev_set_mcv(struct ovni_ev *ev, const char *mcv)
{
	uint8_t w[4];
	memcpy(w, ev, 4);
	w[1] = (uint8_t) mcv[0];
	w[2] = (uint8_t) mcv[1];
	w[3] = (uint8_t) mcv[2];
	memcpy(ev, w, 4);
}

/* The clock is whatever the caller says (usually ovni_clock_now()). */
void
ovni_ev_set_clock(struct ovni_ev *ev, uint64_t clock)
{
	ev->header.clock = clock;
}

/* The clock stored in the event. */
uint64_t
ovni_ev_get_clock(const struct ovni_ev *ev)
{
	return ev->header.clock;
}

/* Payload bytes of the event; for a jumbo event, its 4-byte size plus the
 * data that follows it in the stream (as libovni counts it). */
int
ovni_payload_size(const struct ovni_ev *ev)
{
	unsigned flags = ev->header.flags;

	if (flags & OVNI_EV_JUMBO)
		return (int) (sizeof(uint32_t) + ev->payload.jumbo.size);
	return (int) ov_ev_size_of(flags) - 12;
}

/* Bytes the event takes in the stream (12 + payload; jumbo: + data). */
int
ovni_ev_size(const struct ovni_ev *ev)
{
	return (int) sizeof(ev->header) + ovni_payload_size(ev);
}

/*
 * Copies 2..16 bytes in 4-byte pieces (2-byte ones below 4), the last
 * piece overlapping the previous one when n is not a multiple: no call
 * to memcpy, and pieces small enough to be forwarded from the stores
 * that wrote the source and to feed the emit path's loads.
 */
static inline void
ov_copy_small(uint8_t *dst, const uint8_t *src, int n)
{
	if (n < 4) {
		uint16_t a, b;
		__builtin_memcpy(&a, src, 2);
		__builtin_memcpy(&b, src + n - 2, 2);
		__builtin_memcpy(dst, &a, 2);
		__builtin_memcpy(dst + n - 2, &b, 2);
		return;
	}
	for (int i = 0; i < n; i += 4) {
		int at = i + 4 <= n ? i : n - 4;
		uint32_t v;
		__builtin_memcpy(&v, src + at, 4);
		/* Keeps the compiler from merging the loads into a wide one. */
		__asm__("" : "+r"(v));
		__builtin_memcpy(dst + at, &v, 4);
	}
}

/*
 * Appends size bytes to the payload. The size code cannot say "1 byte",
 * and there are 16 bytes at most: both are refused, as in libovni. The
 * flags+MCV word is rewritten whole (see ovni_ev_set_mcv).
 */
void
ovni_payload_add(struct ovni_ev *ev, const uint8_t *buf, int size)
{
	uint8_t w[4];
	memcpy(w, ev, 4);
	unsigned flags = w[0];

	if (flags & OVNI_EV_JUMBO)
		ov_die("ovni_payload_add", "the event is a jumbo event");
	if (size < 2)
		ov_die("ovni_payload_add", "payload size %d too small (2 bytes at least)", size);
	int used = (int) ov_ev_size_of(flags) - 12;
	if (used + size > (int) sizeof(ev->payload))
		ov_die("ovni_payload_add", "no room for %d more bytes (%d of 16 used)",
		       size, used);

	ov_copy_small(&ev->payload.u8[used], buf, size);
	w[0] = (uint8_t) ((flags & 0xf0u) | (unsigned) (used + size - 1));
	memcpy(ev, w, 4);
}

/* ---- Writing the buffer --------------------------------------------- */

/* Writes the buffered events and empties the buffer. Nothing is written
 * once the exit handler has taken the stream over (dead). */
void
ov_buffer_write(struct ov_thread *t)
{
	size_t n = (size_t) (t->fast->pos - t->buf);

	if (n > 0 && !t->dead)
		ov_write_all(t->fd, t->buf, n, "the event stream");
	__atomic_store_n(&t->fast->pos, t->buf, __ATOMIC_RELEASE);
}

/* Builds the 12-byte OF[ or OF] event at dst. */
static void
ov_put_flush_event(uint8_t *dst, char value, uint64_t clock)
{
	struct ovni_ev_header h = {
		.flags = 0, .model = 'O', .category = 'F',
		.value = (uint8_t) value, .clock = clock,
	};
	memcpy(dst, &h, sizeof(h));
}

/* Writes out a full buffer, timing it; the caller adds the OF pair after
 * the event that did not fit. */
static void
ov_flush_full(struct ov_thread *t, uint64_t *t0, uint64_t *t1)
{
	pthread_mutex_lock(&t->lock);
	*t0 = ov_clock();
	ov_buffer_write(t);
	*t1 = ov_clock();
	t->flush_tail = NULL;
	pthread_mutex_unlock(&t->lock);
}

/*
 * Appends the OF[ / OF] pair of a flush timed t0..t1 (callers make sure
 * it fits: the buffer was just emptied and holds at least OV_MIN_BUF).
 * Its clocks are raised to `after`, the clock of the event before it: a
 * program that stamps its events ahead of ovni_clock_now() (ovni's
 * clockgate test: +2 h) must not get a clock that goes backwards.
 */
static void
ov_add_flush_pair(struct ov_thread *t, uint64_t t0, uint64_t t1, uint64_t after)
{
	t0 = t0 > after ? t0 : after;
	t1 = t1 > t0 ? t1 : t0;
	ov_put_flush_event(t->fast->pos, '[', t0);
	ov_put_flush_event(t->fast->pos + 12, ']', t1);
	__atomic_store_n(&t->fast->pos, t->fast->pos + 24, __ATOMIC_RELEASE);
}

/* Clock of the last event between p and end (0 when none): a walk by the
 * event sizes, only done by ovni_flush(). */
static uint64_t
ov_last_clock(const uint8_t *p, const uint8_t *end)
{
	uint64_t clock = 0;

	while (p < end) {
		unsigned flags = p[0];
		size_t size = ov_ev_size_of(flags);
		memcpy(&clock, p + 4, 8);
		if (flags & OVNI_EV_JUMBO) {
			uint32_t n;
			memcpy(&n, p + 12, 4);
			size += n;
		}
		p += size;
	}
	return clock;
}

/* Reports why a normal event cannot be emitted, or makes room for it. */
void
ov_emit_slow(struct ov_thread *t, const struct ovni_ev *ev, const char *func)
{
	unsigned flags = ev->header.flags;

	if (t == NULL)
		ov_die(func, "the thread is not initialized (call ovni_thread_init first)");
	if (flags & OVNI_EV_JUMBO)
		ov_die(func, "the event has the jumbo flag: use ovni_ev_jumbo_emit");
	if (flags & 0xf0u)
		ov_die(func, "reserved flag bits set (flags 0x%02x)", flags);

	uint64_t t0, t1;
	size_t size = ov_ev_size_of(flags);
	ov_flush_full(t, &t0, &t1);
	memcpy(t->fast->pos, ev, size);
	t->fast->pos += size;
	ov_add_flush_pair(t, t0, t1, ev->header.clock);
}

/* ---- Public emit functions ------------------------------------------ */

/* The hot path: see ov_emit() in libovni_priv.h. */
void
ovni_ev_emit(struct ovni_ev *ev)
{
	ov_emit(ev, "ovni_ev_emit");
}

/*
 * A jumbo event: header with flags 0x13, the u32 size, then the data.
 * Unlike libovni 1.14 (which aborts at 2 MiB), any size is accepted: an
 * event larger than the buffer goes straight to the file after a flush.
 * The caller's event is not modified.
 */
void
ovni_ev_jumbo_emit(struct ovni_ev *ev, const uint8_t *buf, uint32_t bufsize)
{
	struct ov_thread *t = ov_fast.t;

	if (t == NULL)
		ov_die("ovni_ev_jumbo_emit", "the thread is not initialized");
	if (ev->header.flags != 0)
		ov_die("ovni_ev_jumbo_emit", "the event payload must be empty (flags 0x%02x)",
		       ev->header.flags);
	if (bufsize > 0 && buf == NULL)
		ov_die("ovni_ev_jumbo_emit", "NULL data of %u bytes", bufsize);

	uint8_t h[16];
	memcpy(h, ev, 4);
	h[0] = OVNI_EV_JUMBO | 0x03;
	memcpy(h + 4, &ev->header.clock, 8);
	memcpy(h + 12, &bufsize, 4);
	size_t total = 16 + (size_t) bufsize;

	if ((size_t) (t->fast->limit - t->fast->pos) >= total) {
		memcpy(t->fast->pos, h, 16);
		if (bufsize > 0)
			memcpy(t->fast->pos + 16, buf, bufsize);
		__atomic_store_n(&t->fast->pos, t->fast->pos + total, __ATOMIC_RELEASE);
		return;
	}

	/* pos must never pass limit: the event and the OF pair must fit. */
	uint64_t t0, t1;
	ov_flush_full(t, &t0, &t1);
	if (total + 24 <= (size_t) (t->fast->limit - t->fast->pos)) {
		memcpy(t->fast->pos, h, 16);
		memcpy(t->fast->pos + 16, buf, bufsize);
		t->fast->pos += total;
	} else {
		pthread_mutex_lock(&t->lock);
		if (!t->dead)
			ov_write2(t->fd, h, 16, buf, bufsize, "a jumbo event");
		pthread_mutex_unlock(&t->lock);
	}
	ov_add_flush_pair(t, t0, t1, ev->header.clock);
}

/*
 * Writes every buffered event now, then puts the OF[ / OF] pair that
 * times the write into the buffer, as libovni does: it reaches the disk
 * with the next write, and a stream that closes with nothing after it
 * leaves it out (libovni loses it there; writing it would add events
 * libovni's trace does not have, after a last event the program may have
 * stamped ahead of the clock).
 */
void
ovni_flush(void)
{
	struct ov_thread *t = ov_fast.t;

	if (t == NULL)
		ov_die("ovni_flush", "the thread is not initialized");
	if (!ov_proc.ready)
		ov_die("ovni_flush", "the process is not initialized");

	pthread_mutex_lock(&t->lock);
	uint64_t last = ov_last_clock(t->buf, t->fast->pos);
	uint64_t t0 = ov_clock();
	ov_buffer_write(t);
	uint64_t t1 = ov_clock();
	ov_add_flush_pair(t, t0, t1, last);
	t->flush_tail = t->fast->pos;
	pthread_mutex_unlock(&t->lock);
}
