/*
 * clock: the t0 time base maps monotonic readings to t0-relative
 * milliseconds and back.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "common/clock.h"

Test(clock, rel_and_mono_at_are_inverses, .timeout = 10)
{
	static const double rels[] = { -5000.25, 0, 0.001, 1000, 123456.789, 3600000.5 };
	struct timebase tb;
	uint64_t now = clock_mono_ns();
	size_t i;

	timebase_init(&tb, clock_unix_ms());
	for (i = 0; i < sizeof(rels) / sizeof(rels[0]); i++) {
		uint64_t m = timebase_mono_at(&tb, rels[i]);
		double back = timebase_rel_ms(&tb, m);

		cr_assert(fabs(back - rels[i]) <= 0.001, "%.6f -> %llu -> %.6f", rels[i],
			  (unsigned long long)m, back);
	}
	for (i = 0; i < 5; i++) {
		uint64_t m = now + i * 7777777777ull;
		uint64_t back = timebase_mono_at(&tb, timebase_rel_ms(&tb, m));
		int64_t diff = (int64_t)(back - m);

		cr_assert(diff >= -1000 && diff <= 1000, "mono %llu came back %lld ns off",
			  (unsigned long long)m, (long long)diff);
	}
}

Test(clock, mono_at_moves_with_rel, .timeout = 10)
{
	struct timebase tb;
	uint64_t a;
	uint64_t b;

	timebase_init(&tb, clock_unix_ms());
	a = timebase_mono_at(&tb, 1000);
	b = timebase_mono_at(&tb, 3500);
	cr_assert(llabs((long long)(b - a) - 2500000000ll) <= 1000, "%llu",
		  (unsigned long long)(b - a));
}

Test(clock, now_relative_to_past_t0, .timeout = 10)
{
	struct timebase tb;
	double rel;

	timebase_init(&tb, clock_unix_ms() - 1000);
	rel = timebase_now_ms(&tb);
	/* clock_unix_ms truncates, so up to 1 ms more; allow scheduling noise. */
	cr_assert(rel >= 1000 && rel < 1100, "now is %.3f ms after t0", rel);
}

Test(clock, future_t0_is_negative, .timeout = 10)
{
	struct timebase tb;
	double rel;

	timebase_init(&tb, clock_unix_ms() + 5000);
	rel = timebase_now_ms(&tb);
	cr_assert(rel > -5001 && rel <= -4900, "%.3f", rel);
}

Test(clock, mono_at_before_epoch_is_zero, .timeout = 10)
{
	struct timebase tb;

	timebase_init(&tb, clock_unix_ms());
	cr_assert_eq(timebase_mono_at(&tb, -1e15), 0);
}

/*
 * A child started after the wall clock stepped gets a t0 moved by the
 * step, so it counts the same milliseconds since t0 as its elders: a time
 * base set up when the clock read 7.9 s later than it does now (it has
 * since stepped back) gives children t0 − 7900; an unstepped one, t0.
 */
Test(clock, a_child_after_a_clock_step_keeps_the_run_time_base, .timeout = 10)
{
	struct timebase tb;
	struct timebase child;
	int64_t step = 0;
	int64_t t0;

	timebase_init(&tb, 1764620000000LL);
	cr_assert_eq(timebase_child_t0(&tb, &step), 1764620000000LL);
	cr_assert_eq(step, 0);
	tb.unix_minus_mono_ns += 7900000000LL;
	t0 = timebase_child_t0(&tb, &step);
	cr_assert_eq(step, -7900, "step %lld", (long long)step);
	cr_assert_eq(t0, 1764620000000LL - 7900);
	/* The child's milliseconds since its t0 are the run's since t0, within 1 ms. */
	timebase_init(&child, t0);
	cr_assert_float_eq(timebase_now_ms(&child), timebase_now_ms(&tb), 1.0);
}
