/*
 * clock: monotonic time and the t0-relative time base.
 */
#include "common/clock.h"

#include <math.h>
#include <time.h>

uint64_t clock_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int64_t clock_unix_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t clock_unix_ms(void)
{
	return clock_unix_ns() / 1000000;
}

void timebase_init(struct timebase *tb, int64_t t0_unix_ms)
{
	/* Bracket the realtime reading between two monotonic ones. */
	uint64_t m1 = clock_mono_ns();
	int64_t u = clock_unix_ns();
	uint64_t m2 = clock_mono_ns();

	tb->t0_unix_ms = t0_unix_ms;
	tb->unix_minus_mono_ns = u - (int64_t)(m1 + (m2 - m1) / 2);
}

double timebase_rel_ms(const struct timebase *tb, uint64_t mono_ns)
{
	int64_t unix_ns = (int64_t)mono_ns + tb->unix_minus_mono_ns;

	return (double)(unix_ns - tb->t0_unix_ms * 1000000) / 1e6;
}

double timebase_now_ms(const struct timebase *tb)
{
	return timebase_rel_ms(tb, clock_mono_ns());
}

uint64_t timebase_mono_at(const struct timebase *tb, double rel_ms)
{
	/* Whole nanoseconds: doubles near 1.8e18 ns would be off by ~0.25 µs. */
	int64_t mono = tb->t0_unix_ms * 1000000 - tb->unix_minus_mono_ns +
		       (int64_t)llround(rel_ms * 1e6);

	return mono <= 0 ? 0 : (uint64_t)mono;
}

int64_t timebase_child_t0(const struct timebase *tb, int64_t *step_ms)
{
	struct timebase now;
	int64_t step;

	timebase_init(&now, tb->t0_unix_ms);
	step = (int64_t)llround((double)(now.unix_minus_mono_ns - tb->unix_minus_mono_ns) / 1e6);
	if (step_ms)
		*step_ms = step;
	return tb->t0_unix_ms + step;
}
