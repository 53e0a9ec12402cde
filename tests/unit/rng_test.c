/*
 * rng: reproducible sequences, independent streams, and the distribution of
 * the uniform and exponential draws.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>

#include "common/rng.h"

#define DRAWS 100000

Test(rng, same_seed_same_sequence, .timeout = 10)
{
	struct rng a;
	struct rng b;
	int i;

	rng_seed(&a, 42);
	rng_seed(&b, 42);
	for (i = 0; i < 1000; i++)
		cr_assert_eq(rng_next(&a), rng_next(&b), "draw %d differs", i);
}

Test(rng, different_seeds_differ, .timeout = 10)
{
	struct rng a;
	struct rng b;
	int same = 0;
	int i;

	rng_seed(&a, 1);
	rng_seed(&b, 2);
	for (i = 0; i < 100; i++)
		same += rng_next(&a) == rng_next(&b);
	cr_assert_eq(same, 0);
}

Test(rng, streams_repeat_and_differ, .timeout = 10)
{
	struct rng s1;
	struct rng s1b;
	struct rng s2;
	struct rng plain;
	int same12 = 0;
	int same1p = 0;
	int i;

	rng_seed_stream(&s1, 7, 1);
	rng_seed_stream(&s1b, 7, 1);
	rng_seed_stream(&s2, 7, 2);
	rng_seed(&plain, 7);
	for (i = 0; i < 100; i++) {
		uint64_t v1 = rng_next(&s1);

		cr_assert_eq(v1, rng_next(&s1b));
		same12 += v1 == rng_next(&s2);
		same1p += v1 == rng_next(&plain);
	}
	cr_assert_eq(same12, 0, "streams 1 and 2 share %d draws", same12);
	cr_assert_eq(same1p, 0, "stream 1 repeats the unstreamed seed");
}

Test(rng, uniform_in_unit_interval_mean_half, .timeout = 10)
{
	struct rng r;
	double sum = 0;
	double lo = 1;
	double hi = 0;
	int below_tenth = 0;
	int i;

	rng_seed(&r, 12345);
	for (i = 0; i < DRAWS; i++) {
		double u = rng_uniform(&r);

		cr_assert(u >= 0 && u < 1, "draw %d: %.17g", i, u);
		sum += u;
		lo = fmin(lo, u);
		hi = fmax(hi, u);
		below_tenth += u < 0.1;
	}
	/* The standard error of the mean is 0.29 / sqrt(1e5) ≈ 0.0009. */
	cr_assert_float_eq(sum / DRAWS, 0.5, 0.005, "mean %.5f", sum / DRAWS);
	cr_assert_lt(lo, 0.001);
	cr_assert_gt(hi, 0.999);
	cr_assert(below_tenth > 9500 && below_tenth < 10500, "%d below 0.1", below_tenth);
}

Test(rng, range_stays_in_bounds, .timeout = 10)
{
	struct rng r;
	double sum = 0;
	int i;

	rng_seed(&r, 3);
	for (i = 0; i < 10000; i++) {
		double v = rng_range(&r, -20, 20);

		cr_assert(v >= -20 && v < 20, "%.17g", v);
		sum += v;
	}
	cr_assert_float_eq(sum / 10000, 0, 0.5);
}

Test(rng, exp_mean_matches, .timeout = 10)
{
	struct rng r;
	double sum = 0;
	int i;

	rng_seed(&r, 99);
	for (i = 0; i < DRAWS; i++) {
		double v = rng_exp(&r, 250);

		cr_assert(v >= 0 && isfinite(v), "draw %d: %g", i, v);
		sum += v;
	}
	/* Standard error 250 / sqrt(1e5) ≈ 0.8; allow 2 %. */
	cr_assert_float_eq(sum / DRAWS, 250, 5, "mean %.3f", sum / DRAWS);
}
