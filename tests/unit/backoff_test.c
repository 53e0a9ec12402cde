/*
 * backoff: the jittered delay's bounds and mean per retry, the cap, huge
 * retry numbers, reproducibility, how Retry-After combines with the
 * backoff, and Retry-After parsing.
 */
#include <criterion/criterion.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>

#include "common/backoff.h"
#include "common/rng.h"

#define DRAWS 20000

/* "Wed, 21 Oct 2015 07:28:00 GMT" (date -u -d '2015-10-21 07:28:00' +%s). */
#define OCT21_MS INT64_C(1445412480000)

/*
 * Draws DRAWS delays for one retry, asserting each lies in [0, ceiling);
 * checks the spread is full jitter (draws near both ends) and the mean is
 * half the ceiling. The standard error of the mean is 0.29 × ceiling /
 * sqrt(DRAWS) ≈ 0.2 % of the ceiling; 1 % is five of them.
 */
static void check_draws(const struct backoff *b, unsigned retry, double ceiling,
			struct rng *r)
{
	double sum = 0;
	double lo = ceiling;
	double hi = 0;
	int i;

	for (i = 0; i < DRAWS; i++) {
		double d = backoff_delay_ms(b, retry, r);

		cr_assert(d >= 0 && d < ceiling, "retry %u draw %d: %.17g not in [0, %g)",
			  retry, i, d, ceiling);
		sum += d;
		lo = fmin(lo, d);
		hi = fmax(hi, d);
	}
	cr_assert_float_eq(sum / DRAWS, ceiling / 2, 0.01 * ceiling,
			   "retry %u: mean %.3f, ceiling %g", retry, sum / DRAWS, ceiling);
	cr_assert_lt(lo, 0.01 * ceiling, "retry %u: smallest draw %g", retry, lo);
	cr_assert_gt(hi, 0.99 * ceiling, "retry %u: largest draw %g", retry, hi);
}

Test(backoff, doubles_per_retry_until_cap, .timeout = 10)
{
	struct backoff b = { .base_ms = 100, .cap_ms = 5000 };
	/* 100 × 2^n, then the cap from retry 6 on (6400 > 5000). */
	static const double ceilings[] = {
		100, 200, 400, 800, 1600, 3200, 5000, 5000, 5000,
	};
	struct rng r;
	unsigned retry;

	rng_seed(&r, 7);
	for (retry = 0; retry < sizeof(ceilings) / sizeof(ceilings[0]); retry++)
		check_draws(&b, retry, ceilings[retry], &r);
}

Test(backoff, huge_retry_numbers_stay_under_cap, .timeout = 10)
{
	struct backoff b = { .base_ms = 250, .cap_ms = 30000 };
	static const unsigned retries[] = { 64, 1000, 1100, 5000, UINT_MAX };
	struct rng r;
	size_t i;

	rng_seed(&r, 11);
	for (i = 0; i < sizeof(retries) / sizeof(retries[0]); i++)
		check_draws(&b, retries[i], 30000, &r);
}

Test(backoff, same_seed_same_sequence, .timeout = 10)
{
	struct backoff b = { .base_ms = 50, .cap_ms = 2000 };
	struct rng r1;
	struct rng r2;
	struct rng r3;
	int differ = 0;
	unsigned i;

	rng_seed(&r1, 99);
	rng_seed(&r2, 99);
	rng_seed(&r3, 100);
	for (i = 0; i < 1000; i++) {
		double d = backoff_delay_ms(&b, i % 8, &r1);

		cr_assert_eq(d, backoff_delay_ms(&b, i % 8, &r2), "draw %u differs", i);
		differ += d != backoff_delay_ms(&b, i % 8, &r3);
	}
	cr_assert_gt(differ, 990, "another seed repeats %d draws", 1000 - differ);
}

Test(backoff, zero_or_invalid_config_waits_zero, .timeout = 10)
{
	struct backoff zero_base = { .base_ms = 0, .cap_ms = 1000 };
	struct backoff zero_cap = { .base_ms = 100, .cap_ms = 0 };
	struct backoff nan_cap = { .base_ms = 100, .cap_ms = NAN };
	struct rng r;
	int i;

	rng_seed(&r, 5);
	for (i = 0; i < 100; i++) {
		cr_assert_eq(backoff_delay_ms(&zero_base, 3, &r), 0);
		cr_assert_eq(backoff_delay_ms(&zero_cap, 3, &r), 0);
		cr_assert_eq(backoff_delay_ms(&nan_cap, 3, &r), 0);
	}
}

/*
 * A twin generator with the same seed predicts the jittered backoff each
 * call draws, so the combination can be checked exactly.
 */
Test(backoff, retry_after_within_cap_is_honoured, .timeout = 10)
{
	struct backoff b = { .base_ms = 100, .cap_ms = 10000 };
	static const double afters[] = { 0, 1, 50, 399, 1000, 9999.5, 10000 };
	struct rng r;
	struct rng twin;
	size_t i;
	int round;

	rng_seed(&r, 3);
	rng_seed(&twin, 3);
	for (round = 0; round < 200; round++) {
		for (i = 0; i < sizeof(afters) / sizeof(afters[0]); i++) {
			double jitter = backoff_delay_ms(&b, 2, &twin);
			double d = backoff_delay_after_ms(&b, 2, afters[i], &r);

			cr_assert_eq(d, fmax(afters[i], jitter),
				     "after %g, jitter %g: got %g", afters[i], jitter, d);
			cr_assert(d >= afters[i] && d <= b.cap_ms);
		}
	}
}

Test(backoff, retry_after_absent_or_past_cap_uses_backoff, .timeout = 10)
{
	struct backoff b = { .base_ms = 100, .cap_ms = 10000 };
	static const double afters[] = { -1, -0.5, 10000.001, 60000, 1e300, INFINITY, NAN };
	struct rng r;
	struct rng twin;
	size_t i;
	int round;

	rng_seed(&r, 4);
	rng_seed(&twin, 4);
	for (round = 0; round < 200; round++) {
		for (i = 0; i < sizeof(afters) / sizeof(afters[0]); i++) {
			double jitter = backoff_delay_ms(&b, 1, &twin);
			double d = backoff_delay_after_ms(&b, 1, afters[i], &r);

			cr_assert_eq(d, jitter, "after %g: got %g, backoff %g", afters[i],
				     d, jitter);
			cr_assert(d >= 0 && d < 200);
		}
	}
}

Test(backoff, parse_delta_seconds, .timeout = 10)
{
	static const struct {
		const char *value;
		double ms;
	} cases[] = {
		{ "0", 0 },
		{ "2", 2000 },
		{ "120", 120000 },
		{ "0.5", 500 },
		{ "1.25", 1250 },
		{ "0.001", 1 },
		{ "3.0001", 3000.1 },
		{ "007", 7000 },
		{ " 3 ", 3000 },
		{ "\t4\t", 4000 },
		/* RFC 9110: past 2^31 seconds counts as 2^31 seconds. */
		{ "2147483648", 2147483648000.0 },
		{ "99999999999999999999999999999", 2147483648000.0 },
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		double got = backoff_parse_retry_after(cases[i].value, OCT21_MS);

		cr_assert_float_eq(got, cases[i].ms, 1e-9 * (cases[i].ms + 1),
				   "\"%s\": got %.17g, want %g", cases[i].value, got,
				   cases[i].ms);
	}
}

Test(backoff, parse_http_date, .timeout = 10)
{
	static const struct {
		const char *value;
		int64_t now_ms;
		double ms;
	} cases[] = {
		{ "Wed, 21 Oct 2015 07:28:00 GMT", OCT21_MS - 30000, 30000 },
		{ "Wed, 21 Oct 2015 07:28:00 GMT", OCT21_MS - 1500, 1500 },
		{ "Wed, 21 Oct 2015 07:28:00 GMT", OCT21_MS, 0 },
		{ "Wed, 21 Oct 2015 07:28:00 GMT", OCT21_MS + 5000, 0 },
		{ "Wed, 21 Oct 2015 07:28:00 GMT", 0, 1445412480000.0 },
		{ "Thu, 22 Oct 2015 07:28:00 GMT", OCT21_MS, 86400000 },
		{ " Wed, 21 Oct 2015 07:29:01 GMT ", OCT21_MS, 61000 },
		/* 1709164800 s: date -u -d 2024-02-29 +%s. */
		{ "Thu, 29 Feb 2024 00:00:00 GMT", INT64_C(1709164800000) - 10, 10 },
		{ "Thu, 01 Jan 1970 00:00:00 GMT", -250, 250 },
		{ "Sun, 01 Jan 2017 00:00:00 GMT", INT64_C(1483228800000) - 1000, 1000 },
		/* No overflow whatever now is. */
		{ "Fri, 31 Dec 9999 23:59:59 GMT", INT64_MAX, 0 },
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		double got = backoff_parse_retry_after(cases[i].value, cases[i].now_ms);

		cr_assert_eq(got, cases[i].ms, "\"%s\" at %lld: got %.17g, want %g",
			     cases[i].value, (long long)cases[i].now_ms, got, cases[i].ms);
	}
}

Test(backoff, parse_rejects_everything_else, .timeout = 10)
{
	static const char *const bad[] = {
		"", " ", "\t", "soon", "-1", "-0.5", "+1", "1e3", "0x10", "1.", ".5",
		"1.2.3", "1 2", "1,5", "inf", "nan", "5s", "1.5 s",
		/* Dates: wrong zone, impossible fields, obsolete forms, wrong case. */
		"Wed, 21 Oct 2015 07:28:00 UTC",
		"Wed, 21 Oct 2015 07:28:00",
		"Wed, 21 Oct 2015 07:28 GMT",
		"Wed, 32 Oct 2015 07:28:00 GMT",
		"Wed, 00 Oct 2015 07:28:00 GMT",
		"Wed, 31 Sep 2015 07:28:00 GMT",
		"Wed, 29 Feb 2023 07:28:00 GMT",
		"Wed, 29 Feb 2100 07:28:00 GMT",
		"Wed, 21 Foo 2015 07:28:00 GMT",
		"Wed, 21 oct 2015 07:28:00 GMT",
		"Xyz, 21 Oct 2015 07:28:00 GMT",
		"Wed, 21 Oct 2015 24:00:00 GMT",
		"Wed, 21 Oct 2015 07:60:00 GMT",
		"Wed, 21 Oct 2015 07:28:61 GMT",
		"Wed, 21 Oct 15 07:28:00 GMT",
		"Wed, 1 Oct 2015 07:28:00 GMT",
		"Wed,21 Oct 2015 07:28:00 GMT ",
		"Wed, 21 Oct 2015 07:28:00 GMTX",
		"Wednesday, 21-Oct-15 07:28:00 GMT",
		"Wed Oct 21 07:28:00 2015",
	};
	size_t i;

	cr_assert_eq(backoff_parse_retry_after(NULL, OCT21_MS), -1);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		double got = backoff_parse_retry_after(bad[i], OCT21_MS);

		cr_assert_eq(got, -1, "\"%s\" parsed as %g", bad[i], got);
	}
}

/* A leap second, 23:59:60, is the same instant as the next day's 00:00:00. */
Test(backoff, parse_leap_second, .timeout = 10)
{
	double leap = backoff_parse_retry_after("Sat, 31 Dec 2016 23:59:60 GMT", 0);
	double next = backoff_parse_retry_after("Sun, 01 Jan 2017 00:00:00 GMT", 0);

	cr_assert_eq(leap, next);
	cr_assert_eq(next, 1483228800000.0);
}
