/*
 * hist: percentiles against the exact nearest-rank values of a sorted
 * sample, exact small values, the error bound in every octave, merging,
 * clamping of huge and negative values, and the empty histogram.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/hist.h"
#include "common/rng.h"

#define SAMPLES 100000

/* The header's promise for a reported percentile, relative to the value. */
#define HIST_REL_ERROR 0.004

/* The top value with a bucket of its own: 2^42 - 1 µs. */
#define TOP_US ((UINT64_C(1) << 42) - 1)

/* A struct hist is 36 KiB: too big to want several on a test's stack. */
static struct hist *hist_new(void)
{
	struct hist *h = malloc(sizeof(*h));

	cr_assert_not_null(h);
	hist_init(h);
	return h;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a;
	double y = *(const double *)b;

	return (x > y) - (x < y);
}

/*
 * A log-normal latency around 40 ms (sigma 1.2, a normal from twelve
 * uniforms), already rounded to the microsecond the histogram keeps.
 */
static double lognormal_ms(struct rng *r)
{
	double z = -6;
	int i;

	for (i = 0; i < 12; i++)
		z += rng_uniform(r);
	return round(40000.0 * exp(1.2 * z)) / 1000.0;
}

Test(hist, percentiles_match_sorted_sample, .timeout = 10)
{
	/* Ranks as integers, so the reference owes nothing to floating point. */
	static const struct {
		double p;
		size_t rank;
	} cases[] = {
		{ 50, 50000 }, { 90, 90000 }, { 99, 99000 },
		{ 99.9, 99900 }, { 99.99, 99990 }, { 100, SAMPLES },
	};
	struct hist *h = hist_new();
	double *sample = malloc(SAMPLES * sizeof(*sample));
	struct rng r;
	size_t i;

	cr_assert_not_null(sample);
	rng_seed(&r, 2024);
	for (i = 0; i < SAMPLES; i++) {
		sample[i] = lognormal_ms(&r);
		hist_record_ms(h, sample[i]);
	}
	qsort(sample, SAMPLES, sizeof(*sample), cmp_double);
	/* The sample must span many octaves for the test to mean anything. */
	cr_assert_lt(sample[0], 1.0, "min %g ms", sample[0]);
	cr_assert_gt(sample[SAMPLES - 1], 1000.0, "max %g ms", sample[SAMPLES - 1]);

	cr_assert_eq(h->count, SAMPLES);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		double want = sample[cases[i].rank - 1];
		double got = hist_percentile_ms(h, cases[i].p);

		cr_assert(fabs(got - want) <= HIST_REL_ERROR * want,
			  "p%g: got %.6f ms, exact %.6f ms (%.3f%% off)", cases[i].p,
			  got, want, 100 * fabs(got - want) / want);
	}
	cr_assert_eq(hist_max_ms(h), sample[SAMPLES - 1]);
	cr_assert_eq(hist_min_ms(h), sample[0]);
	free(sample);
	free(h);
}

Test(hist, mean_is_exact, .timeout = 10)
{
	struct hist *h = hist_new();

	hist_record_ms(h, 1);
	hist_record_ms(h, 2);
	hist_record_ms(h, 6);
	cr_assert_float_eq(hist_mean_ms(h), 3.0, 1e-12);
	cr_assert_eq(hist_min_ms(h), 1.0);
	cr_assert_eq(hist_max_ms(h), 6.0);
	free(h);
}

/* Below 256 µs every bucket holds one value, so every rank is exact. */
Test(hist, small_values_are_exact, .timeout = 10)
{
	struct hist *h = hist_new();
	unsigned us;
	unsigned rank;

	for (us = 0; us < 256; us++)
		hist_record_ms(h, us / 1000.0);
	for (us = 0; us < 256; us++)
		cr_assert_eq(h->buckets[us], 1, "bucket %u holds %llu", us,
			     (unsigned long long)h->buckets[us]);
	for (rank = 1; rank <= 256; rank++) {
		double p = 100.0 * rank / 256;
		double got = hist_percentile_ms(h, p);

		cr_assert_float_eq(got, (rank - 1) / 1000.0, 1e-12,
				   "p%g (rank %u): %.6f ms", p, rank, got);
	}
	free(h);
}

/* Nearest rank rounds a fractional rank up: ceil(p/100 × count). */
Test(hist, fractional_ranks_round_up, .timeout = 10)
{
	static const struct {
		double p;
		double ms;
	} cases[] = {
		{ 0.1, 0.010 }, { 25, 0.010 }, { 25.1, 0.020 }, { 50, 0.020 },
		{ 50.1, 0.030 }, { 75, 0.030 }, { 99, 0.040 }, { 100, 0.040 },
	};
	struct hist *h = hist_new();
	size_t i;

	hist_record_ms(h, 0.010);
	hist_record_ms(h, 0.020);
	hist_record_ms(h, 0.030);
	hist_record_ms(h, 0.040);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		cr_assert_float_eq(hist_percentile_ms(h, cases[i].p), cases[i].ms, 1e-12,
				   "p%g: %.6f ms", cases[i].p,
				   hist_percentile_ms(h, cases[i].p));
	free(h);
}

/*
 * Where p/100 × count is a whole number the rank is that number, even when
 * the floating-point product lands a hair above it: 99.9 % of 1,000 is rank
 * 999 and 64.4 % of 100,000 is rank 64,400, not the next.
 */
Test(hist, whole_ranks_do_not_round_up, .timeout = 10)
{
	static const struct {
		double p;
		unsigned count;
	} cases[] = {
		{ 99.9, 1000 }, { 64.4, 100000 }, { 92.04, 10000 }, { 66.9, 100000 },
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct hist *h = hist_new();
		uint64_t rank = (uint64_t)llround(cases[i].p * 1000) * cases[i].count / 100000;
		uint64_t k;

		/* rank values of 10 µs, then 20 µs: the rank-th value is 10 µs. */
		for (k = 0; k < cases[i].count; k++)
			hist_record_ms(h, k < rank ? 0.010 : 0.020);
		cr_assert_float_eq(hist_percentile_ms(h, cases[i].p), 0.010, 1e-12,
				   "p%g of %u (rank %llu): %.6f ms", cases[i].p,
				   cases[i].count, (unsigned long long)rank,
				   hist_percentile_ms(h, cases[i].p));
		free(h);
	}
}

/* A bucket's middle may lie outside what was recorded; the clamp keeps it in. */
Test(hist, percentile_clamped_to_min_and_max, .timeout = 10)
{
	struct hist *h = hist_new();

	/* 1000 µs is the bottom of bucket [1000, 1003], whose middle is 1001.5. */
	hist_record_ms(h, 1.000);
	cr_assert_eq(hist_percentile_ms(h, 50), 1.000);
	cr_assert_eq(hist_percentile_ms(h, 100), 1.000);
	hist_init(h);
	hist_record_ms(h, 1.003);
	cr_assert_eq(hist_percentile_ms(h, 1), 1.003);
	cr_assert_eq(hist_percentile_ms(h, 100), 1.003);
	free(h);
}

Test(hist, rounds_to_the_microsecond, .timeout = 10)
{
	struct hist *h = hist_new();

	hist_record_ms(h, 0.0004);
	hist_record_ms(h, 0.0014);
	hist_record_ms(h, 0.0016);
	hist_record_ms(h, 5.0004);
	cr_assert_eq(h->buckets[0], 1);
	cr_assert_eq(h->buckets[1], 1);
	cr_assert_eq(h->buckets[2], 1);
	cr_assert_eq(h->max_us, 5000);
	free(h);
}

/* The layout the header describes: 128 buckets per octave from 128 µs. */
Test(hist, bucket_boundaries, .timeout = 10)
{
	static const struct {
		uint64_t us;
		size_t index;
	} cases[] = {
		{ 127, 127 }, { 128, 128 }, { 255, 255 },
		{ 256, 256 }, { 257, 256 }, { 258, 257 }, { 511, 383 },
		{ 512, 384 }, { 1000, 128 + 2 * 128 + (1000 >> 2) - 128 },
		{ TOP_US, HIST_BUCKETS - 1 },
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct hist *h = hist_new();

		hist_record_ms(h, cases[i].us / 1000.0);
		cr_assert_eq(h->buckets[cases[i].index], 1, "%llu µs not in bucket %zu",
			     (unsigned long long)cases[i].us, cases[i].index);
		free(h);
	}
}

/*
 * The bound for every bucket: both edges of each bucket in every octave,
 * recorded three times between a 0 and the top value so the clamp to
 * [min, max] cannot hide the bucket's middle.
 */
Test(hist, error_bound_in_every_octave, .timeout = 10)
{
	struct hist *h = malloc(sizeof(*h));
	unsigned shift;
	unsigned sub;
	int edge;

	cr_assert_not_null(h);
	for (shift = 0; shift <= HIST_MAX_SHIFT; shift++) {
		for (sub = HIST_SUB; sub < 2 * HIST_SUB; sub++) {
			for (edge = 0; edge < 2; edge++) {
				uint64_t lo = (uint64_t)sub << shift;
				uint64_t v = edge ? lo + (UINT64_C(1) << shift) - 1 : lo;
				double got;
				double rel;

				hist_init(h);
				hist_record_ms(h, 0);
				hist_record_ms(h, TOP_US / 1000.0);
				hist_record_ms(h, v / 1000.0);
				hist_record_ms(h, v / 1000.0);
				hist_record_ms(h, v / 1000.0);
				got = hist_percentile_ms(h, 50) * 1000.0;
				rel = fabs(got - (double)v) / (double)v;
				cr_assert(rel <= HIST_REL_ERROR,
					  "%llu µs reported as %.1f µs (%.3f%% off)",
					  (unsigned long long)v, got, 100 * rel);
			}
		}
	}
	free(h);
}

Test(hist, empty_is_nan, .timeout = 10)
{
	struct hist *h = hist_new();

	cr_assert(isnan(hist_percentile_ms(h, 50)));
	cr_assert(isnan(hist_percentile_ms(h, 100)));
	cr_assert(isnan(hist_max_ms(h)));
	cr_assert(isnan(hist_min_ms(h)));
	cr_assert(isnan(hist_mean_ms(h)));
	cr_assert_eq(h->count, 0);
	free(h);
}

Test(hist, out_of_range_p_is_clamped, .timeout = 10)
{
	struct hist *h = hist_new();

	hist_record_ms(h, 0.010);
	hist_record_ms(h, 0.020);
	hist_record_ms(h, 0.030);
	cr_assert_float_eq(hist_percentile_ms(h, 0), 0.010, 1e-12);
	cr_assert_float_eq(hist_percentile_ms(h, -5), 0.010, 1e-12);
	cr_assert_float_eq(hist_percentile_ms(h, 250), 0.030, 1e-12);
	cr_assert(isnan(hist_percentile_ms(h, NAN)));
	free(h);
}

Test(hist, merge_equals_recording_both, .timeout = 10)
{
	static const double ps[] = { 1, 25, 50, 75, 90, 99, 99.9, 100 };
	struct hist *a = hist_new();
	struct hist *b = hist_new();
	struct hist *both = hist_new();
	struct hist *empty = hist_new();
	struct rng ra;
	struct rng rb;
	size_t i;

	rng_seed(&ra, 1);
	rng_seed(&rb, 2);
	for (i = 0; i < 20000; i++) {
		double va = lognormal_ms(&ra);
		double vb = lognormal_ms(&rb) * 3;

		hist_record_ms(a, va);
		hist_record_ms(both, va);
		hist_record_ms(b, vb);
		hist_record_ms(both, vb);
	}
	hist_merge(a, b);
	cr_assert_eq(a->count, both->count);
	cr_assert_eq(a->min_us, both->min_us);
	cr_assert_eq(a->max_us, both->max_us);
	cr_assert_float_eq(a->sum_us, both->sum_us, 1e-9 * both->sum_us);
	cr_assert_eq(memcmp(a->buckets, both->buckets, sizeof(a->buckets)), 0);
	for (i = 0; i < sizeof(ps) / sizeof(ps[0]); i++)
		cr_assert_eq(hist_percentile_ms(a, ps[i]), hist_percentile_ms(both, ps[i]),
			     "p%g differs", ps[i]);

	/* Merging into an empty histogram copies; merging an empty one is a no-op. */
	hist_merge(empty, both);
	cr_assert_eq(empty->min_us, both->min_us);
	cr_assert_eq(empty->max_us, both->max_us);
	cr_assert_eq(hist_percentile_ms(empty, 50), hist_percentile_ms(both, 50));
	hist_init(b);
	hist_merge(a, b);
	cr_assert_eq(a->count, both->count);
	cr_assert_eq(a->min_us, both->min_us);
	free(a);
	free(b);
	free(both);
	free(empty);
}

Test(hist, huge_values_clamp_to_top, .timeout = 10)
{
	struct hist *h = hist_new();
	double top_ms = TOP_US / 1000.0;
	double p;

	hist_record_ms(h, 1e15);
	hist_record_ms(h, 1e300);
	hist_record_ms(h, INFINITY);
	hist_record_ms(h, top_ms);
	cr_assert_eq(h->count, 4);
	cr_assert_eq(h->buckets[HIST_BUCKETS - 1], 4);
	cr_assert_eq(h->max_us, TOP_US);
	cr_assert_eq(hist_max_ms(h), top_ms);
	p = hist_percentile_ms(h, 50);
	cr_assert(isfinite(p) && p <= top_ms && p >= top_ms * (1 - HIST_REL_ERROR),
		  "p50 %g ms", p);
	cr_assert(isfinite(hist_mean_ms(h)));
	free(h);
}

Test(hist, negative_and_nan_count_as_zero, .timeout = 10)
{
	struct hist *h = hist_new();

	hist_record_ms(h, -5);
	hist_record_ms(h, -INFINITY);
	hist_record_ms(h, NAN);
	hist_record_ms(h, 2);
	cr_assert_eq(h->count, 4);
	cr_assert_eq(h->buckets[0], 3);
	cr_assert_eq(hist_min_ms(h), 0.0);
	cr_assert_eq(hist_percentile_ms(h, 75), 0.0);
	cr_assert_eq(hist_max_ms(h), 2.0);
	cr_assert_float_eq(hist_mean_ms(h), 0.5, 1e-12);
	free(h);
}
