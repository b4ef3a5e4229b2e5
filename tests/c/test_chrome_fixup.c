/* SPDX-License-Identifier: MIT */
/*
 * test_chrome_fixup.c - the same-start fix-up of `weft convert
 * --heph-compat` (outputs/chrome/chrome_fixup.c) against a plain
 * transcription of Heph's rule that walks one microsecond at a time: on random dense
 * tracks (many events per microsecond, durations of 0 and more, a few
 * very long ones), every event must land on the same (ts, dur), and the
 * same events must be found endless (Heph's converter would loop
 * forever on them). Then a long run, where the fast version must not
 * walk slot by slot.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "outputs/chrome.h"
#include "testutil.h"

/* ---- The reference: Heph's walk, one step at a time ----------------------------- */

#define REF_SLOTS 32768 /* timestamps 0..REF_SLOTS-1 */
#define REF_FREE UINT64_MAX
/* Steps after which the reference gives up (it never should: see below). */
#define REF_MAX_STEPS 10000000

typedef struct reference {
	uint64_t dur[REF_SLOTS]; /* REF_FREE when no event starts there */
	int cap_hit;
} reference;

static void ref_init(reference *r)
{
	for (int i = 0; i < REF_SLOTS; i++)
		r->dur[i] = REF_FREE;
	r->cap_hit = 0;
}

/*
 * While ts is taken: up (ts + 1, dur - 1, staying at 0) when the event
 * there is longer, else down (ts - 1, dur + 1). Endless when a state
 * comes back two steps later, or when the walk would go below 0.
 * Returns 1 (placed and recorded) or 0 (endless).
 */
static int ref_place(reference *r, uint64_t *ts, uint64_t *dur)
{
	uint64_t t = *ts, d = *dur;
	uint64_t prev_t = REF_FREE, prev_d = 0, back_t = REF_FREE, back_d = 0;

	for (long steps = 0; r->dur[t] != REF_FREE; steps++) {
		if ((t == back_t && d == back_d))
			return 0;
		if (steps == REF_MAX_STEPS) {
			r->cap_hit = 1;
			return 0;
		}
		back_t = prev_t, back_d = prev_d;
		prev_t = t, prev_d = d;
		if (r->dur[t] > d) {
			t++;
			d = d > 0 ? d - 1 : 0;
		} else {
			if (t == 0)
				return 0;
			t--;
			d++;
		}
		REQUIRE(t < REF_SLOTS);
	}
	r->dur[t] = d;
	*ts = t;
	*dur = d;
	return 1;
}

/* ---- Random tracks -------------------------------------------------------------- */

static uint64_t next_random(uint64_t *state)
{
	uint64_t x = *state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * 0x2545F4914F6CDD1Dull;
}

/* A duration: mostly 0..4 us, sometimes tens, rarely hundreds. */
static uint64_t random_dur(uint64_t *state)
{
	uint64_t r = next_random(state) % 100;

	if (r < 80)
		return r % 5;
	if (r < 97)
		return r % 40;
	return 100 + next_random(state) % 400;
}

/*
 * The start of the next event of a track, like a runtime's trace: a time
 * cursor that advances by 0 to 2 us per event, the event starting at the
 * cursor or a little before it (a parent written after its children).
 */
static uint64_t next_start(uint64_t *state, uint64_t *cursor)
{
	uint64_t back = next_random(state) % 4 == 0 ? next_random(state) % 12 : 0;

	*cursor += next_random(state) % 3;
	return *cursor > back ? *cursor - back : 0;
}

/*
 * `events` events on `tracks` tracks, starting from `base` (in order,
 * or anywhere in [base, base + span) with `scattered`): both versions
 * must agree on each of them. Returns the number of events moved.
 */
static int compare_random(uint64_t seed, int tracks, int events, uint64_t base,
			  uint64_t span, int scattered)
{
	reference *refs = calloc((size_t)tracks, sizeof *refs);
	uint64_t cursors[3] = { base, base, base };
	weft__fixup *f;
	uint64_t state = seed;
	int endless = 0, moved = 0;

	REQUIRE(tracks <= 3 && refs != NULL && weft__fixup_create((size_t)tracks, &f) == 0);
	for (int i = 0; i < tracks; i++)
		ref_init(&refs[i]);
	for (int i = 0; i < events; i++) {
		uint32_t track = (uint32_t)(next_random(&state) % (uint64_t)tracks);
		uint64_t ts = scattered ? base + next_random(&state) % span
					: next_start(&state, &cursors[track]);
		uint64_t dur = random_dur(&state);
		uint64_t ref_ts = ts, ref_dur = dur, given = ts;
		int want = ref_place(&refs[track], &ref_ts, &ref_dur);
		int got = weft__fixup_place(f, track, &ts, &dur);
		if (got != want || ts != ref_ts || dur != ref_dur) {
			tu_fail(__FILE__, __LINE__, "seed %llu event %d: got %d (%llu, %llu), "
				"want %d (%llu, %llu)", (unsigned long long)seed, i, got,
				(unsigned long long)ts, (unsigned long long)dur, want,
				(unsigned long long)ref_ts, (unsigned long long)ref_dur);
			break;
		}
		endless += want == 0;
		moved += want == 1 && ts != given;
	}
	for (int i = 0; i < tracks; i++)
		CHECK(!refs[i].cap_hit);
	if (getenv("FIXUP_VERBOSE"))
		printf("seed %llu: %d endless, %d moved\n", (unsigned long long)seed,
		       endless, moved);
	weft__fixup_free(f);
	free(refs);
	return moved;
}

/*
 * Many seeds: tracks filled in time order like a trace (long runs of
 * taken microseconds, long walks), and scattered events, near 0 and
 * away from it.
 */
static void test_random_tracks(void)
{
	int moved = 0;

	for (uint64_t seed = 1; seed <= 80; seed++) {
		uint64_t base = seed % 2 ? 0 : 600;
		int tracks = 1 + (int)(seed % 3);
		if (seed % 4 == 0)
			moved += compare_random(seed * 0x9E3779B97F4A7C15ull, tracks, 1500,
						base, seed % 8 == 0 ? 400 : 2500, 1);
		else
			moved += compare_random(seed * 0x9E3779B97F4A7C15ull, tracks,
						2000 * tracks, base, 0, 0);
	}
	CHECK(moved > 50000);
}

/*
 * A run of 2^18 taken microseconds, then events at its top that walk all
 * the way down: the fast version must find the free slot below the run
 * without stepping through it (the reference would take 2^18 steps per
 * event; here 2000 events must take well under a second).
 */
static void test_long_run(void)
{
	weft__fixup *f;
	const uint64_t base = 1000000, run = 1u << 18;

	REQUIRE(weft__fixup_create(1, &f) == 0);
	for (uint64_t t = 0; t < run; t++) {
		uint64_t ts = base + t, dur = 0;
		REQUIRE(weft__fixup_place(f, 0, &ts, &dur) == 1);
		CHECK_EQ_U64(ts, base + t);
	}
	clock_t c0 = clock();
	for (uint64_t i = 0; i < 2000; i++) {
		uint64_t ts = base + run - 1, dur = 0;
		/* stored 0 <= 0: down, over keys t + 0 <= C, to the free slot below */
		REQUIRE(weft__fixup_place(f, 0, &ts, &dur) == 1);
		CHECK_EQ_U64(ts, base - 1 - i);
		CHECK_EQ_U64(dur, run + i);
	}
	double secs = (double)(clock() - c0) / CLOCKS_PER_SEC;
	if (secs > 1.0)
		tu_fail(__FILE__, __LINE__, "2000 long walks took %.2f s", secs);
	CHECK_EQ_U64(weft__fixup_entries(f), run + 2000);
	weft__fixup_free(f);
}

/* ---- Long runs: every search of the tree ----------------------------------------- */

/* The dur of slot x in the run of a scenario. */
typedef uint64_t (*dur_fn)(uint64_t x, uint64_t param);

/*
 * Down runs: short events, and at `param` one that ends at 15000 +
 * param % 4 (a wall for the runs whose C = ts + dur is below that).
 */
static uint64_t dur_short_with_wall(uint64_t x, uint64_t param)
{
	return x == param ? 15000 + param % 4 - x : x % 3;
}

/* Up runs: every key (x + dur) is 30000, but at `param`: 29000. */
static uint64_t dur_key_plateau(uint64_t x, uint64_t param)
{
	return (x == param ? 29000 : 30000) - x;
}

/* Up runs with dur 0: durations 1..5, and a 0 at `param`. */
static uint64_t dur_positive_with_zero(uint64_t x, uint64_t param)
{
	return x == param ? 0 : 1 + x % 5;
}

/* Places an event in both versions and compares. */
static void place_both(reference *r, weft__fixup *f, uint64_t ts, uint64_t dur,
		       const char *what, uint64_t param)
{
	uint64_t ref_ts = ts, ref_dur = dur;
	int want = ref_place(r, &ref_ts, &ref_dur);
	int got = weft__fixup_place(f, 0, &ts, &dur);

	if (got != want || ts != ref_ts || dur != ref_dur)
		tu_fail(__FILE__, __LINE__, "%s (param %llu): got %d (%llu, %llu), want %d "
			"(%llu, %llu)", what, (unsigned long long)param, got,
			(unsigned long long)ts, (unsigned long long)dur, want,
			(unsigned long long)ref_ts, (unsigned long long)ref_dur);
}

/*
 * A run of taken slots [lo, hi) with durations from `fn`, then events of
 * start `ts` and durations first_dur, first_dur + 1, ... (count of them):
 * both versions must agree. The runs are longer than 4096 slots, so
 * that two levels of blocks are skipped.
 */
static void run_scenario(const char *what, dur_fn fn, uint64_t param, uint64_t lo,
			 uint64_t hi, uint64_t ts, uint64_t first_dur, int count)
{
	reference *r = malloc(sizeof *r);
	weft__fixup *f;

	REQUIRE(r != NULL && weft__fixup_create(1, &f) == 0);
	ref_init(r);
	for (uint64_t x = lo; x < hi; x++)
		place_both(r, f, x, fn(x, param), what, param);
	for (int i = 0; i < count; i++)
		place_both(r, f, ts, first_dur + (uint64_t)i, what, param);
	CHECK(!r->cap_hit);
	weft__fixup_free(f);
	free(r);
}

/*
 * Down runs end at the free slot below the run, or at the wall (whose key
 * is compared with C exactly: below, equal, above); up runs pass keys
 * above C and end at the first key not above it; up runs at dur 0 pass
 * durations above 0 and turn down at a 0.
 */
static void test_long_runs(void)
{
	/* walls at the last child of a block of level 0 and of level 1 */
	static const uint64_t walls[] = { 9000, 9001, 9023, 12234, 12235, 12236, 12237 };
	for (size_t i = 0; i < sizeof walls / sizeof walls[0]; i++)
		run_scenario("down, wall", dur_short_with_wall, walls[i], 5000, 15000, 14999,
			     0, 10);
	run_scenario("down, no wall", dur_short_with_wall, 0, 5000, 15000, 14999, 0, 30);
	for (uint64_t dip = 10000; dip < 10003; dip++)
		run_scenario("up, plateau", dur_key_plateau, dip, 5000, 15000, 5000,
			     10000 + (dip - 10000) * 7000, 40);
	run_scenario("up, plateau, to the end", dur_key_plateau, 0, 5000, 15000, 5000,
		     10000, 40);
	for (uint64_t zero = 6000; zero < 15000; zero += 4499)
		run_scenario("up at dur 0", dur_positive_with_zero, zero, 5000, 15000, 5000,
			     0, 20);
}

/* The examples of the golden: shifts by one in both directions. */
static void test_small_cases(void)
{
	weft__fixup *f;
	uint64_t ts, dur;

	REQUIRE(weft__fixup_create(2, &f) == 0);
	ts = 10, dur = 0;
	CHECK_EQ_I64(weft__fixup_place(f, 0, &ts, &dur), 1);
	ts = 10, dur = 8; /* longer than the one at 10: moves down */
	CHECK_EQ_I64(weft__fixup_place(f, 0, &ts, &dur), 1);
	CHECK_EQ_U64(ts, 9);
	CHECK_EQ_U64(dur, 9);
	ts = 9, dur = 3; /* shorter than the one at 9 (9): moves up, 10 taken by 0 <= 2: down */
	CHECK_EQ_I64(weft__fixup_place(f, 0, &ts, &dur), 0);
	ts = 10, dur = 5; /* other track: free */
	CHECK_EQ_I64(weft__fixup_place(f, 1, &ts, &dur), 1);
	CHECK_EQ_U64(ts, 10);
	ts = 0, dur = 0;
	CHECK_EQ_I64(weft__fixup_place(f, 1, &ts, &dur), 1);
	ts = 0, dur = 4; /* would go below 0 */
	CHECK_EQ_I64(weft__fixup_place(f, 1, &ts, &dur), 0);
	CHECK_EQ_U64(weft__fixup_entries(f), 4);
	weft__fixup_free(f);
}

int main(void)
{
	test_small_cases();
	test_random_tracks();
	test_long_run();
	test_long_runs();
	return tu_result();
}
