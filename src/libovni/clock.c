/* SPDX-License-Identifier: MIT */
/*
 * clock.c - ovni_clock_now(): CLOCK_MONOTONIC in ns, cheaply.
 *
 * clock_gettime() through the vDSO costs about 20 ns here, as much as the
 * rest of emitting an event. Where the kernel itself keeps time with the
 * TSC (clocksource "tsc": invariant and synchronised across CPUs), each
 * thread converts the TSC to CLOCK_MONOTONIC with a linear map that it
 * re-anchors on clock_gettime() every millisecond. The slope is measured
 * against CLOCK_MONOTONIC since the library was loaded, so it follows the
 * kernel's (NTP-disciplined) rate and the error stays in the nanoseconds;
 * values of a thread never decrease. WEFT_OVNI_CLOCK=monotonic turns this
 * off (every call is clock_gettime()); other clock sources do too.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "libovni_priv.h"

OV_TLS struct ov_clock ov_clk;

/* Calibration origin (taken at load time) and whether the TSC is used. */
static uint64_t ov_tsc0;
static uint64_t ov_ns0;
static int ov_tsc_ok;
static pthread_once_t ov_clock_once = PTHREAD_ONCE_INIT;

/* Slope measured over less than this is too noisy: use clock_gettime. */
#define OV_CALIB_NS 20000000ull /* 20 ms */
/* How long a thread uses one anchor before reading clock_gettime again. */
#define OV_ANCHOR_NS 1000000ull /* 1 ms */

/* CLOCK_MONOTONIC in ns; the clock cannot fail on Linux, but say so if
 * it does rather than return garbage timestamps. */
static uint64_t
ov_mono_now(void)
{
	struct timespec tp;

	if (clock_gettime(CLOCK_MONOTONIC, &tp) != 0)
		ov_die("ovni_clock_now", "clock_gettime() failed:");
	return (uint64_t) tp.tv_sec * 1000000000ull + (uint64_t) tp.tv_nsec;
}

/*
 * Reads CLOCK_MONOTONIC and the TSC at (nearly) the same instant: the TSC
 * is read before and after, and the tightest of a few tries is kept, so
 * that an interrupt during one try does not skew the pairing (a 10 us
 * skew over the 20 ms calibration span would be a 500 ppm error).
 */
static void
ov_clock_pair(uint64_t *tsc, uint64_t *ns)
{
	uint64_t best = UINT64_MAX;

	for (int i = 0; i < 3; i++) {
		uint64_t a = ov_rdtsc();
		uint64_t n = ov_mono_now();
		uint64_t b = ov_rdtsc();
		if (b - a < best) {
			best = b - a;
			*tsc = a + (b - a) / 2;
			*ns = n;
		}
	}
}

/* The calibration origin is taken when the library is loaded, so that by
 * the time a program emits in earnest the slope is already accurate. */
__attribute__((constructor)) static void
ov_clock_origin(void)
{
	ov_clock_pair(&ov_tsc0, &ov_ns0);
}

/* True when the kernel's current clock source is the TSC. */
static int
ov_kernel_uses_tsc(void)
{
	char buf[32] = { 0 };
	int fd = open("/sys/devices/system/clocksource/clocksource0/current_clocksource",
		      O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	return n >= 3 && strncmp(buf, "tsc", 3) == 0
	       && (buf[3] == '\n' || buf[3] == '\0');
}

/* Decides once per process whether the TSC path may be used. */
static void
ov_clock_detect(void)
{
	const char *env = getenv("WEFT_OVNI_CLOCK");

	if (env != NULL && strcmp(env, "monotonic") == 0)
		return;
	if (env != NULL && strcmp(env, "auto") != 0 && strcmp(env, "tsc") != 0)
		ov_warn("ovni_clock_now", "unknown WEFT_OVNI_CLOCK=%s, using auto", env);
#if defined(__x86_64__) || defined(__i386__)
	ov_tsc_ok = ov_kernel_uses_tsc();
#endif
}

/* Largest value the old anchor could have returned up to tsc t. */
static uint64_t
ov_clock_old_max(const struct ov_clock *c, uint64_t t)
{
	if (c->limit == 0)
		return c->floor;
	if (t < c->tsc) /* TSC went back (should not happen): hold */
		return c->ns > c->floor ? c->ns : c->floor;
	uint64_t d = t - c->tsc;
	if (d >= c->limit)
		d = c->limit - 1;
	uint64_t ns = c->ns + ((d * c->mult) >> 32);
	return ns > c->floor ? ns : c->floor;
}

/* Sets a new anchor (tsc, ns) with the slope measured since load time;
 * leaves limit at 0 while the measuring span is too short. */
static void
ov_clock_anchor(struct ov_clock *c, uint64_t tsc, uint64_t ns)
{
	c->limit = 0;
	if (ns - ov_ns0 < OV_CALIB_NS || tsc <= ov_tsc0)
		return;
	double ns_per_tick = (double) (ns - ov_ns0) / (double) (tsc - ov_tsc0);
	double mult = ns_per_tick * 4294967296.0;
	if (!(mult >= 1.0 && mult < 1e15))
		return;
	c->tsc = tsc;
	c->ns = ns;
	c->mult = (uint64_t) mult;
	uint64_t limit = (uint64_t) ((double) OV_ANCHOR_NS / ns_per_tick);
	uint64_t max_d = UINT64_MAX / c->mult; /* d * mult must not overflow */
	c->limit = limit < max_d ? limit : max_d;
}

/*
 * Slow path: first call of a thread, anchor expired, or no TSC. Reads
 * CLOCK_MONOTONIC, paired with the TSC when it is used, and re-anchors.
 * The result never goes below what this thread was already given.
 */
uint64_t
ov_clock_slow(void)
{
	struct ov_clock *c = &ov_clk;
	uint64_t tsc = 0, ns = 0; /* set by ov_clock_pair (gcc -O3 cannot tell) */

	pthread_once(&ov_clock_once, ov_clock_detect);
	if (!ov_tsc_ok) {
		ns = ov_mono_now();
		c->floor = ns > c->floor ? ns : c->floor;
		return c->floor;
	}
	ov_clock_pair(&tsc, &ns);
	uint64_t old = ov_clock_old_max(c, tsc);
	uint64_t out = ns > old ? ns : old;
	ov_clock_anchor(c, tsc, ns);
	c->floor = out;
	return out;
}

/* The public clock: the inline fast path behind one call. */
uint64_t
ovni_clock_now(void)
{
	return ov_clock();
}
