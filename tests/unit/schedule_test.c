/*
 * schedule: constant arrivals land exactly on k / rate, Poisson arrivals
 * have the right count and gap distribution, the same seed repeats, sources
 * merge in time order, shared arrivals split by weight, the end is exclusive
 * and the cap holds, and bad arguments are refused.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "loadgen/schedule.h"

#define NA(a) (sizeof(a) / sizeof(a[0]))

/* Drains s; returns the number of arrivals and counts them per stream. */
static uint64_t drain(struct sched *s, uint64_t *per_stream, size_t nstreams)
{
	double prev = -INFINITY;
	double at;
	uint64_t n = 0;
	int stream;

	while (sched_next(s, &at, &stream)) {
		cr_assert(at >= prev, "arrival %llu at %.17g before %.17g",
			  (unsigned long long)n, at, prev);
		cr_assert(stream >= 0 && (size_t)stream < nstreams, "stream %d", stream);
		per_stream[stream]++;
		prev = at;
		n++;
	}
	return n;
}

Test(schedule, constant_500_per_s_is_1000_arrivals_2ms_apart, .timeout = 10)
{
	const double rates[] = { 500 };
	const enum arrival arr[] = { ARRIVAL_CONSTANT };
	struct sched s;
	double at;
	double first = -1;
	double prev = 0;
	int stream;
	int n = 0;

	cr_assert_eq(sched_init_rates(&s, rates, arr, 1, 2000, 1), 0);
	while (sched_next(&s, &at, &stream)) {
		cr_assert_eq(stream, 0);
		if (n == 0)
			first = at;
		else
			cr_assert_float_eq(at - prev, 2.0, 1e-9, "gap %d is %.17g", n, at - prev);
		cr_assert_eq(at, 2.0 * n, "arrival %d at %.17g", n, at);
		prev = at;
		n++;
	}
	cr_assert_eq(n, 1000);
	cr_assert_eq(first, 0);
	cr_assert_eq(prev, 1998);
	cr_assert_eq(sched_peek(&s), INFINITY);
	sched_free(&s);
}

Test(schedule, constant_times_do_not_drift, .timeout = 10)
{
	const double rates[] = { 7 };
	const enum arrival arr[] = { ARRIVAL_CONSTANT };
	struct sched s;
	double at = 0;
	uint64_t k = 0;
	int stream;

	/* 700,000 arrivals of 1/7 s: a running sum would be off by now. */
	cr_assert_eq(sched_init_rates(&s, rates, arr, 1, 100000.0 * 1000, 1), 0);
	while (sched_next(&s, &at, &stream)) {
		cr_assert_eq(at, (double)k * 1000.0 / 7, "arrival %llu at %.17g",
			     (unsigned long long)k, at);
		k++;
	}
	cr_assert_eq(k, 700000);
	sched_free(&s);
}

Test(schedule, end_is_exclusive, .timeout = 10)
{
	const double rates[] = { 1 };
	const enum arrival arr[] = { ARRIVAL_CONSTANT };
	struct sched s;
	uint64_t per[1] = { 0 };

	cr_assert_eq(sched_init_rates(&s, rates, arr, 1, 1000, 1), 0);
	cr_assert_eq(drain(&s, per, 1), 1, "the arrival at 1000 ms is at the end");
	sched_free(&s);
	cr_assert_eq(sched_init_rates(&s, rates, arr, 1, 1000.5, 1), 0);
	cr_assert_eq(drain(&s, per, 1), 2);
	sched_free(&s);
	cr_assert_eq(sched_init_rates(&s, rates, arr, 1, 0, 1), 0);
	cr_assert_eq(sched_peek(&s), INFINITY);
	cr_assert_eq(drain(&s, per, 1), 0, "a zero duration has no arrivals");
	sched_free(&s);
}

Test(schedule, poisson_count_and_gaps, .timeout = 10)
{
	const double rates[] = { 1000 };
	const enum arrival arr[] = { ARRIVAL_POISSON };
	struct sched s;
	double at;
	double prev = 0;
	double first = -1;
	double sum = 0;
	double sumsq = 0;
	double mean;
	double cv;
	uint64_t n = 0;
	int stream;

	cr_assert_eq(sched_init_rates(&s, rates, arr, 1, 100000, 2024), 0);
	while (sched_next(&s, &at, &stream)) {
		double gap = at - prev;

		cr_assert_eq(stream, 0);
		cr_assert(gap >= 0 && at < 100000, "arrival at %.17g after %.17g", at, prev);
		if (n == 0)
			first = at;
		sum += gap;
		sumsq += gap * gap;
		prev = at;
		n++;
	}
	/* Expected 100,000 with a standard deviation of sqrt(100,000) ≈ 316. */
	cr_assert(fabs((double)n - 100000) <= 3 * 316.3, "%llu arrivals", (unsigned long long)n);
	cr_assert_gt(first, 0, "the first Poisson arrival is one gap in");
	mean = sum / (double)n;
	cv = sqrt(sumsq / (double)n - mean * mean) / mean;
	/* The mean gap's standard error is 1 / sqrt(1e5) ≈ 0.003 ms. */
	cr_assert_float_eq(mean, 1.0, 0.02, "mean gap %.5f ms", mean);
	cr_assert_float_eq(cv, 1.0, 0.03, "coefficient of variation %.4f", cv);
	sched_free(&s);
}

/* The first n arrival times of a Poisson schedule at 100/s with seed. */
static void poisson_times(uint64_t seed, double *out, int n)
{
	const double rates[] = { 100, 30 };
	const enum arrival arr[] = { ARRIVAL_POISSON, ARRIVAL_POISSON };
	struct sched s;
	int stream;
	int i;

	cr_assert_eq(sched_init_rates(&s, rates, arr, 2, INFINITY, seed), 0);
	for (i = 0; i < n; i++)
		cr_assert(sched_next(&s, &out[i], &stream));
	sched_free(&s);
}

Test(schedule, same_seed_same_sequence_other_seed_differs, .timeout = 10)
{
	double a[200];
	double b[200];
	double c[200];
	int same = 0;
	int i;

	poisson_times(7, a, 200);
	poisson_times(7, b, 200);
	poisson_times(8, c, 200);
	for (i = 0; i < 200; i++) {
		cr_assert_eq(a[i], b[i], "arrival %d: %.17g vs %.17g", i, a[i], b[i]);
		same += a[i] == c[i];
	}
	cr_assert_eq(same, 0, "seeds 7 and 8 share %d arrival times", same);
}

Test(schedule, shared_picks_repeat_for_a_seed, .timeout = 10)
{
	const double w[] = { 1, 1, 1 };
	struct sched a;
	struct sched b;
	double ta;
	double tb;
	int sa;
	int sb;
	int i;

	cr_assert_eq(sched_init_shared(&a, 50, ARRIVAL_POISSON, w, 3, INFINITY, 11), 0);
	cr_assert_eq(sched_init_shared(&b, 50, ARRIVAL_POISSON, w, 3, INFINITY, 11), 0);
	for (i = 0; i < 1000; i++) {
		cr_assert(sched_next(&a, &ta, &sa));
		cr_assert(sched_next(&b, &tb, &sb));
		cr_assert_eq(ta, tb);
		cr_assert_eq(sa, sb, "pick %d differs", i);
	}
	sched_free(&a);
	sched_free(&b);
}

Test(schedule, rate_sources_merge_in_time_order, .timeout = 10)
{
	const double rates[] = { 100, 50 };
	const enum arrival arr[] = { ARRIVAL_CONSTANT, ARRIVAL_CONSTANT };
	struct sched s;
	uint64_t per[2] = { 0, 0 };
	double at;
	int stream;

	cr_assert_eq(sched_init_rates(&s, rates, arr, 2, 1000, 3), 0);
	/* Source 1 of 2 starts half its 20 ms period in: 10, 30, 50… */
	cr_assert(sched_next(&s, &at, &stream));
	cr_assert_eq(at, 0);
	cr_assert_eq(stream, 0);
	cr_assert(sched_next(&s, &at, &stream));
	cr_assert_eq(at, 10);
	cr_assert_eq(stream, 0, "the tie at 10 ms goes to source 0");
	cr_assert(sched_next(&s, &at, &stream));
	cr_assert_eq(at, 10);
	cr_assert_eq(stream, 1);
	cr_assert_eq(sched_peek(&s), 20);
	cr_assert(sched_next(&s, &at, &stream));
	cr_assert_eq(at, 20);
	cr_assert_eq(stream, 0);
	per[0] = 3;
	per[1] = 1;
	drain(&s, per, 2);
	cr_assert_eq(per[0], 100);
	cr_assert_eq(per[1], 50);
	sched_free(&s);
}

Test(schedule, poisson_sources_merge_with_their_rates, .timeout = 10)
{
	const double rates[] = { 300, 100, 600 };
	const enum arrival arr[] = { ARRIVAL_POISSON, ARRIVAL_CONSTANT, ARRIVAL_POISSON };
	struct sched s;
	uint64_t per[3] = { 0, 0, 0 };

	cr_assert_eq(sched_init_rates(&s, rates, arr, 3, 100000, 5), 0);
	drain(&s, per, 3);
	/* Expected 30,000 / 10,000 / 60,000; sigma sqrt(expected). */
	cr_assert(fabs((double)per[0] - 30000) < 3 * 173.3, "%llu", (unsigned long long)per[0]);
	cr_assert_eq(per[1], 10000);
	cr_assert(fabs((double)per[2] - 60000) < 3 * 245.0, "%llu", (unsigned long long)per[2]);
	sched_free(&s);
}

Test(schedule, shared_mode_splits_by_weight, .timeout = 10)
{
	const double w[] = { 1, 3, 0, 6 };
	struct sched s;
	uint64_t per[4] = { 0, 0, 0, 0 };
	uint64_t n;

	cr_assert_eq(sched_init_shared(&s, 1000, ARRIVAL_CONSTANT, w, 4, 100000, 9), 0);
	n = drain(&s, per, 4);
	cr_assert_eq(n, 100000);
	/* A binomial share of 1e5 draws has a standard error below 0.0016. */
	cr_assert_float_eq(per[0] / 1e5, 0.1, 0.006, "%llu", (unsigned long long)per[0]);
	cr_assert_float_eq(per[1] / 1e5, 0.3, 0.006, "%llu", (unsigned long long)per[1]);
	cr_assert_eq(per[2], 0, "a stream of weight 0 was picked");
	cr_assert_float_eq(per[3] / 1e5, 0.6, 0.006, "%llu", (unsigned long long)per[3]);
	sched_free(&s);
}

Test(schedule, shared_one_stream_is_stream_0, .timeout = 10)
{
	const double w[] = { 2.5 };
	struct sched s;
	uint64_t per[1] = { 0 };

	cr_assert_eq(sched_init_shared(&s, 200, ARRIVAL_POISSON, w, 1, 1000, 4), 0);
	cr_assert_gt(drain(&s, per, 1), 100);
	cr_assert_eq(sched_pick(&s), 0);
	sched_free(&s);
}

Test(schedule, pick_follows_weights_or_rates, .timeout = 10)
{
	const double w[] = { 0, 1, 0 };
	const double rates[] = { 10, 30 };
	const enum arrival arr[] = { ARRIVAL_CONSTANT, ARRIVAL_CONSTANT };
	struct sched s;
	int n1 = 0;
	int i;

	cr_assert_eq(sched_init_shared(&s, 1, ARRIVAL_CONSTANT, w, 3, 1000, 4), 0);
	for (i = 0; i < 1000; i++)
		cr_assert_eq(sched_pick(&s), 1);
	sched_free(&s);

	cr_assert_eq(sched_init_rates(&s, rates, arr, 2, 1000, 4), 0);
	for (i = 0; i < 10000; i++)
		n1 += sched_pick(&s) == 1;
	cr_assert_float_eq(n1 / 1e4, 0.75, 0.02, "%d of 10000 picked stream 1", n1);
	sched_free(&s);

	/* An empty (freed) schedule has no weights: stream 0. */
	cr_assert_eq(sched_pick(&s), 0);
}

Test(schedule, max_requests_caps_arrivals, .timeout = 10)
{
	const double rates[] = { 100, 100 };
	const enum arrival arr[] = { ARRIVAL_POISSON, ARRIVAL_CONSTANT };
	struct sched s;
	uint64_t per[2] = { 0, 0 };

	cr_assert_eq(sched_init_rates(&s, rates, arr, 2, 10000, 6), 0);
	sched_set_max(&s, 25);
	cr_assert_eq(drain(&s, per, 2), 25);
	cr_assert_eq(sched_peek(&s), INFINITY);
	/* 0 lifts the cap: the rest of the 10 s follows. */
	sched_set_max(&s, 0);
	cr_assert_lt(sched_peek(&s), 10000);
	cr_assert_gt(drain(&s, per, 2), 1500);
	sched_free(&s);

	cr_assert_eq(sched_init_rates(&s, rates, arr, 2, INFINITY, 6), 0);
	sched_set_max(&s, 1000);
	cr_assert_eq(drain(&s, per, 2), 1000, "an endless run stops at the cap");
	sched_free(&s);
}

Test(schedule, peek_matches_next, .timeout = 10)
{
	const double w[] = { 1, 1 };
	struct sched s;
	double at;
	double peek;
	int stream;
	int i;

	cr_assert_eq(sched_init_shared(&s, 100, ARRIVAL_POISSON, w, 2, 1000, 12), 0);
	for (i = 0; i < 1000; i++) {
		peek = sched_peek(&s);
		if (!sched_next(&s, &at, &stream))
			break;
		cr_assert_eq(peek, at);
	}
	cr_assert_eq(sched_peek(&s), INFINITY);
	cr_assert_gt(i, 50);
	sched_free(&s);
}

Test(schedule, invalid_arguments_refused, .timeout = 10)
{
	const enum arrival arr2[] = { ARRIVAL_CONSTANT, ARRIVAL_POISSON };
	const double ok2[] = { 1, 2 };
	const double bad_rates[][2] = {
		{ 1, 0 }, { -1, 1 }, { NAN, 1 }, { 1, INFINITY },
	};
	const double bad_weights[][2] = {
		{ -1, 2 }, { 0, 0 }, { NAN, 1 }, { INFINITY, 1 },
	};
	const enum arrival bad_arr[] = { ARRIVAL_CONSTANT, (enum arrival)7 };
	struct sched s;
	size_t i;

	for (i = 0; i < NA(bad_rates); i++) {
		cr_assert_eq(sched_init_rates(&s, bad_rates[i], arr2, 2, 1000, 1), -EINVAL,
			     "rates {%g, %g}", bad_rates[i][0], bad_rates[i][1]);
		sched_free(&s);
	}
	cr_assert_eq(sched_init_rates(&s, ok2, arr2, 0, 1000, 1), -EINVAL);
	cr_assert_eq(sched_init_rates(&s, ok2, arr2, 2, -1, 1), -EINVAL);
	cr_assert_eq(sched_init_rates(&s, ok2, arr2, 2, NAN, 1), -EINVAL);
	cr_assert_eq(sched_init_rates(&s, ok2, bad_arr, 2, 1000, 1), -EINVAL);

	for (i = 0; i < NA(bad_weights); i++) {
		cr_assert_eq(sched_init_shared(&s, 10, ARRIVAL_CONSTANT, bad_weights[i], 2, 1000, 1),
			     -EINVAL, "weights {%g, %g}", bad_weights[i][0], bad_weights[i][1]);
		sched_free(&s);
	}
	cr_assert_eq(sched_init_shared(&s, 0, ARRIVAL_CONSTANT, ok2, 2, 1000, 1), -EINVAL);
	cr_assert_eq(sched_init_shared(&s, -5, ARRIVAL_CONSTANT, ok2, 2, 1000, 1), -EINVAL);
	cr_assert_eq(sched_init_shared(&s, NAN, ARRIVAL_CONSTANT, ok2, 2, 1000, 1), -EINVAL);
	cr_assert_eq(sched_init_shared(&s, INFINITY, ARRIVAL_CONSTANT, ok2, 2, 1000, 1), -EINVAL);
	cr_assert_eq(sched_init_shared(&s, 10, ARRIVAL_CONSTANT, ok2, 0, 1000, 1), -EINVAL);
	cr_assert_eq(sched_init_shared(&s, 10, ARRIVAL_CONSTANT, ok2, 2, -0.5, 1), -EINVAL);
	cr_assert_eq(sched_init_shared(&s, 10, (enum arrival)7, ok2, 2, 1000, 1), -EINVAL);
	/* A refused schedule is empty and issues nothing. */
	cr_assert_eq(sched_peek(&s), INFINITY);
	sched_free(&s);
}

Test(schedule, sources_draw_independent_streams, .timeout = 10)
{
	const double rates[] = { 100, 100 };
	const enum arrival arr[] = { ARRIVAL_POISSON, ARRIVAL_POISSON };
	struct sched s;
	struct rng r;
	double t[2][50];
	int n[2] = { 0, 0 };
	double at;
	int stream;
	int same = 0;
	int i;

	cr_assert_eq(sched_init_rates(&s, rates, arr, 2, INFINITY, 21), 0);
	/* Source i draws from random stream i + 1 of the seed (see schedule.h). */
	rng_seed_stream(&r, 21, 2);
	cr_assert_eq(s.src[1].next_ms, rng_exp(&r, 10.0));
	while ((n[0] < 50 || n[1] < 50) && sched_next(&s, &at, &stream)) {
		if (n[stream] < 50)
			t[stream][n[stream]++] = at;
	}
	for (i = 0; i < 50; i++)
		same += t[0][i] == t[1][i];
	cr_assert_eq(same, 0, "two sources of the same rate share %d arrival times", same);
	sched_free(&s);
}

Test(schedule, closed_loop_ramp_up_begins_client_k_at_k_over_n, .timeout = 10)
{
	/* 4 clients over 200 ms: they begin at 0, 50, 100 and 150 ms. */
	static const struct {
		uint64_t busy;
		double now;
		double want;		/* the return */
		int64_t started;	/* after the call */
		const char *why;
	} steps[] = {
		{ 0, 0, 0, 1, "the first begins at once" },
		{ 1, 10, 50, 1, "the one begun is busy: the next begins at 50" },
		{ 0, 20, 20, 1, "its answer came: it sends again, no new client" },
		{ 1, 50, 50, 2, "50 ms: the second begins" },
		{ 2, 170, 170, 3, "a late wake begins one client a call" },
		{ 3, 170, 170, 4, "… and the next on the next call" },
		{ 4, 300, INFINITY, 4, "all four busy: only an answer frees one" },
	};
	int64_t started = 0;
	size_t i;

	for (i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		double got = sched_closed_next(4, 200, &started, steps[i].busy, steps[i].now);

		cr_assert_eq(got, steps[i].want, "step %zu (%s): %g", i, steps[i].why, got);
		cr_assert_eq(started, steps[i].started, "step %zu (%s)", i, steps[i].why);
	}
}

/* --error-think: after an error the client is free think_ms later, never past the window. */
Test(schedule, closed_loop_thinks_after_an_error_within_the_window, .timeout = 10)
{
	static const struct {
		double think, now, want;
		bool ok;
		const char *why;
	} cases[] = {
		{ 10, 100, 110, false, "an error: free 10 ms after it ended" },
		{ 10, 100, 100, true, "an ok answer: free at once" },
		{ 0, 100, 100, false, "no think time: free at once" },
		{ 10, 995, 1000, false, "a think past the window ends with it" },
		{ 10, 1000, 1000, false, "at the window's end: nothing follows anyway" },
		{ 10, 1200, 1200, false, "after it (a request the window let finish)" },
		{ 0.25, 3.5, 3.75, false, "fractions of a millisecond (a scaled think)" },
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		double got = sched_closed_free_at(cases[i].think, cases[i].ok, cases[i].now, 1000);

		cr_assert_eq(got, cases[i].want, "case %zu (%s): %g", i, cases[i].why, got);
	}
}

Test(schedule, closed_loop_without_ramp_up_begins_every_client_at_once, .timeout = 10)
{
	int64_t started = 0;
	uint64_t busy;

	for (busy = 0; busy < 10; busy++)
		cr_assert_eq(sched_closed_next(10, 0, &started, busy, 0), 0);
	cr_assert_eq(started, 10);
	cr_assert(isinf(sched_closed_next(10, 0, &started, 10, 0)));
}
