/*
 * hedge: the latency ring and its nearest-rank percentile (known sets,
 * wrap-around past LAT_RING_SIZE, empty), the hedge delay (fixed, then
 * adaptive: max_after_ms before min_samples, then the clamped percentile),
 * and the retry and hedge budget's token bucket (full at the start, one
 * token a take, ratio a request, min_per_second by elapsed time, the burst
 * cap, and the README's bound over a simulated run). The clock is a number.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "gateway/budget.h"
#include "gateway/hedge.h"

#define NA(a) (sizeof(a) / sizeof(a[0]))

static void ring_clear(struct lat_ring *r)
{
	memset(r, 0, sizeof(*r));
}

/* A ring holding 1, 2, …, n, added out of order: n, 1, n − 1, 2, … */
static void ring_of_1_to_n(struct lat_ring *r, unsigned n)
{
	unsigned i;

	ring_clear(r);
	for (i = 0; i < n; i++)
		lat_ring_add(r, i % 2 == 0 ? (double)(n - i / 2) : (double)(i / 2 + 1));
}

/* The adaptive defaults of the README's table. */
static struct gw_hedge adaptive(void)
{
	return (struct gw_hedge){
		.enabled = true,
		.after_ms = NAN,
		.percentile = 95,
		.min_after_ms = 10,
		.max_after_ms = 1000,
		.min_samples = 20,
		.max = 1,
	};
}

Test(lat_ring, empty_is_nan, .timeout = 10)
{
	struct lat_ring r;

	ring_clear(&r);
	cr_assert(isnan(lat_ring_percentile(&r, 50)));
	cr_assert(isnan(lat_ring_percentile(&r, 95)));
	cr_assert(isnan(lat_ring_percentile(&r, 100)));
}

Test(lat_ring, one_value_is_every_percentile, .timeout = 10)
{
	struct lat_ring r;

	ring_clear(&r);
	lat_ring_add(&r, 42.5);
	cr_assert_eq(r.n, 1);
	cr_assert_float_eq(lat_ring_percentile(&r, 0.1), 42.5, 0);
	cr_assert_float_eq(lat_ring_percentile(&r, 50), 42.5, 0);
	cr_assert_float_eq(lat_ring_percentile(&r, 99.9), 42.5, 0);
	cr_assert_float_eq(lat_ring_percentile(&r, 100), 42.5, 0);
}

/*
 * Nearest rank: the smallest value with at least pct % at or below it,
 * i.e. the ceil(pct/100 × n)-th smallest. On 1 … n that is the rank itself.
 */
Test(lat_ring, nearest_rank_on_known_sets, .timeout = 10)
{
	static const struct {
		unsigned n;
		double pct;
		double want;
	} cases[] = {
		{ 10, 50, 5 }, { 10, 51, 6 }, { 10, 90, 9 }, { 10, 90.1, 10 }, { 10, 95, 10 },
		{ 10, 100, 10 }, { 10, 1, 1 }, { 10, 10, 1 }, { 10, 10.5, 2 },
		{ 20, 95, 19 }, { 20, 96, 20 }, { 20, 50, 10 },
		{ 100, 50, 50 }, { 100, 95, 95 }, { 100, 99, 99 }, { 100, 99.9, 100 },
		{ 200, 99.5, 199 }, { 256, 50, 128 }, { 256, 99.9, 256 }, { 3, 50, 2 },
		{ 3, 66, 2 }, { 3, 67, 3 }, { 1, 50, 1 },
	};
	struct lat_ring r;
	size_t i;

	for (i = 0; i < NA(cases); i++) {
		ring_of_1_to_n(&r, cases[i].n);
		cr_assert_eq(r.n, cases[i].n);
		cr_assert_float_eq(lat_ring_percentile(&r, cases[i].pct), cases[i].want, 0,
				   "p%g of 1..%u: got %g, want %g", cases[i].pct, cases[i].n,
				   lat_ring_percentile(&r, cases[i].pct), cases[i].want);
	}
}

/*
 * The rank must be exact where pct/100 × n is a whole number, whatever the
 * rounding of pct/100 in binary: p55 of 1 … 100 is 55 (0.55 × 100 computes
 * as 55.000000000000007, whose ceiling is 56).
 */
Test(lat_ring, whole_ranks_are_not_rounded_up, .timeout = 10)
{
	static const double pcts[] = { 50, 55, 60, 65, 70, 75, 80, 85, 90, 95, 99, 99.5, 99.9 };
	struct lat_ring r;
	size_t i;
	unsigned n;

	for (n = 1; n <= LAT_RING_SIZE; n++) {
		ring_of_1_to_n(&r, n);
		for (i = 0; i < NA(pcts); i++) {
			/* pct × 10 is whole: the exact rank in integers. */
			long p10 = lround(pcts[i] * 10);
			double want = (double)((p10 * (long)n + 999) / 1000);

			cr_assert_float_eq(lat_ring_percentile(&r, pcts[i]), want, 0,
					   "p%g of 1..%u: got %g, want %g", pcts[i], n,
					   lat_ring_percentile(&r, pcts[i]), want);
		}
	}
}

Test(lat_ring, holds_at_most_its_size_and_forgets_the_oldest, .timeout = 10)
{
	struct lat_ring r;
	unsigned i;

	ring_clear(&r);
	/* 256 slow ones, then 256 quick ones: the slow are all forgotten. */
	for (i = 0; i < LAT_RING_SIZE; i++)
		lat_ring_add(&r, 10000 + i);
	cr_assert_eq(r.n, LAT_RING_SIZE);
	cr_assert_float_eq(lat_ring_percentile(&r, 100), 10000 + LAT_RING_SIZE - 1, 0);
	for (i = 0; i < LAT_RING_SIZE - 1; i++)
		lat_ring_add(&r, 1 + i);
	cr_assert_eq(r.n, LAT_RING_SIZE);
	/* One slow one is left, the newest of them. */
	cr_assert_float_eq(lat_ring_percentile(&r, 100), 10000 + LAT_RING_SIZE - 1, 0);
	cr_assert_float_eq(lat_ring_percentile(&r, 99.5), LAT_RING_SIZE - 1, 0);
	lat_ring_add(&r, 1000);
	cr_assert_eq(r.n, LAT_RING_SIZE);
	cr_assert_float_eq(lat_ring_percentile(&r, 100), 1000, 0, "the oldest was kept");
	cr_assert_float_eq(lat_ring_percentile(&r, 50), 128, 0);

	/* One past the size: the first value alone is gone. */
	ring_clear(&r);
	lat_ring_add(&r, 5000);
	for (i = 0; i < LAT_RING_SIZE; i++)
		lat_ring_add(&r, 1);
	cr_assert_eq(r.n, LAT_RING_SIZE);
	cr_assert_float_eq(lat_ring_percentile(&r, 100), 1, 0, "5000 outlived its slot");

	/* Many times round: the last 256 of 1 … 1000, i.e. 745 … 1000. */
	ring_clear(&r);
	for (i = 1; i <= 1000; i++)
		lat_ring_add(&r, i);
	cr_assert_eq(r.n, LAT_RING_SIZE);
	cr_assert_float_eq(lat_ring_percentile(&r, 0.1), 745, 0);
	cr_assert_float_eq(lat_ring_percentile(&r, 50), 744 + 128, 0);
	cr_assert_float_eq(lat_ring_percentile(&r, 100), 1000, 0);
}

Test(hedge_delay, fixed_after_ms_wins, .timeout = 10)
{
	struct gw_hedge h = adaptive();
	struct lat_ring r;
	unsigned i;

	h.after_ms = 250;
	cr_assert_float_eq(hedge_delay_ms(&h, NULL), 250, 0);
	ring_clear(&r);
	cr_assert_float_eq(hedge_delay_ms(&h, &r), 250, 0, "no samples");
	for (i = 0; i < 100; i++)
		lat_ring_add(&r, 5000);
	cr_assert_float_eq(hedge_delay_ms(&h, &r), 250, 0, "not clamped, not adaptive");
	h.after_ms = 2000;	/* above max_after_ms: still the fixed one */
	cr_assert_float_eq(hedge_delay_ms(&h, &r), 2000, 0);
}

Test(hedge_delay, max_after_ms_before_min_samples, .timeout = 10)
{
	struct gw_hedge h = adaptive();
	struct lat_ring r;
	unsigned i;

	cr_assert_float_eq(hedge_delay_ms(&h, NULL), 1000, 0, "no ring");
	ring_clear(&r);
	cr_assert_float_eq(hedge_delay_ms(&h, &r), 1000, 0, "empty ring");
	for (i = 0; i < h.min_samples - 1; i++) {
		lat_ring_add(&r, 50);
		cr_assert_float_eq(hedge_delay_ms(&h, &r), 1000, 0, "%u samples", r.n);
	}
	lat_ring_add(&r, 50);
	cr_assert_eq(r.n, h.min_samples);
	cr_assert_float_eq(hedge_delay_ms(&h, &r), 50, 0, "min_samples reached");
}

Test(hedge_delay, adaptive_percentile_clamped, .timeout = 10)
{
	struct gw_hedge h = adaptive();
	struct lat_ring r;
	unsigned i;

	/* 1 … 100 ms: p95 is 95. */
	ring_of_1_to_n(&r, 100);
	cr_assert_float_eq(hedge_delay_ms(&h, &r), 95, 0);
	h.percentile = 50;
	cr_assert_float_eq(hedge_delay_ms(&h, &r), 50, 0);
	h.percentile = 99;
	cr_assert_float_eq(hedge_delay_ms(&h, &r), 99, 0);

	/* Below min_after_ms: raised to it. */
	h = adaptive();
	ring_clear(&r);
	for (i = 0; i < 30; i++)
		lat_ring_add(&r, 2);
	cr_assert_float_eq(hedge_delay_ms(&h, &r), 10, 0);

	/* Above max_after_ms: cut to it. */
	ring_clear(&r);
	for (i = 0; i < 30; i++)
		lat_ring_add(&r, 7000);
	cr_assert_float_eq(hedge_delay_ms(&h, &r), 1000, 0);

	/* At the bounds themselves. */
	ring_clear(&r);
	for (i = 0; i < 30; i++)
		lat_ring_add(&r, 10);
	cr_assert_float_eq(hedge_delay_ms(&h, &r), 10, 0);
	ring_clear(&r);
	for (i = 0; i < 30; i++)
		lat_ring_add(&r, 1000);
	cr_assert_float_eq(hedge_delay_ms(&h, &r), 1000, 0);

	/* min_samples 1 and min == max: the one bound, whatever was seen. */
	h.min_samples = 1;
	h.min_after_ms = 300;
	h.max_after_ms = 300;
	ring_clear(&r);
	lat_ring_add(&r, 5);
	cr_assert_float_eq(hedge_delay_ms(&h, &r), 300, 0);
}

/* The README's defaults: ratio 0.2, min_per_second 1, burst 10. */
static const struct gw_budget default_budget = { 0.2, 1, 10 };

Test(budget, starts_full_and_each_take_removes_one, .timeout = 10)
{
	struct gw_budget cfg = { 0, 0, 3 };
	struct budget b;

	budget_init(&b, &cfg, 1000);
	cr_assert_float_eq(b.tokens, 3, 0);
	cr_assert(budget_take(&b, &cfg, 1000));
	cr_assert_float_eq(b.tokens, 2, 0);
	cr_assert(budget_take(&b, &cfg, 1000));
	cr_assert(budget_take(&b, &cfg, 1000));
	cr_assert_float_eq(b.tokens, 0, 0);
	cr_assert_not(budget_take(&b, &cfg, 1000), "empty");
	cr_assert_not(budget_take(&b, &cfg, 999999), "no refill at 0 a second");
	cr_assert_float_eq(b.tokens, 0, 0, "a refused take takes nothing");
}

Test(budget, never_below_one_token_taken, .timeout = 10)
{
	struct gw_budget cfg = { 0.5, 0, 10 };
	struct budget b;

	budget_init(&b, &cfg, 0);
	while (budget_take(&b, &cfg, 0))
		;
	cr_assert_float_eq(b.tokens, 0, 0);
	budget_deposit(&b, &cfg, 0);
	cr_assert_float_eq(b.tokens, 0.5, 0);
	cr_assert_not(budget_take(&b, &cfg, 0), "half a token is none");
	cr_assert_float_eq(b.tokens, 0.5, 0, "and is kept");
	budget_deposit(&b, &cfg, 0);
	cr_assert(budget_take(&b, &cfg, 0), "two halves are one");
	cr_assert_float_eq(b.tokens, 0, 1e-12);
	cr_assert(b.tokens >= 0);
}

Test(budget, ratio_per_deposit, .timeout = 10)
{
	struct gw_budget cfg = { 0.2, 0, 10 };
	struct budget b;
	int k;
	int granted = 0;

	budget_init(&b, &cfg, 0);
	while (budget_take(&b, &cfg, 0))
		;
	/* 100 requests at ratio 0.2 buy 20 takes, within rounding of a fifth. */
	for (k = 0; k < 100; k++) {
		budget_deposit(&b, &cfg, 0);
		granted += budget_take(&b, &cfg, 0);
	}
	cr_assert(granted >= 19 && granted <= 20, "granted %d", granted);
	/* Four deposits of 0.25 are exactly one token. */
	cfg.ratio = 0.25;
	budget_init(&b, &cfg, 0);
	while (budget_take(&b, &cfg, 0))
		;
	for (k = 0; k < 3; k++)
		budget_deposit(&b, &cfg, 0);
	cr_assert_float_eq(b.tokens, 0.75, 0);
	cr_assert_not(budget_take(&b, &cfg, 0));
	budget_deposit(&b, &cfg, 0);
	cr_assert(budget_take(&b, &cfg, 0));
}

Test(budget, min_per_second_refills_by_elapsed_ms, .timeout = 10)
{
	struct gw_budget cfg = { 0, 4, 20 };
	struct budget b;

	budget_init(&b, &cfg, 5000);
	while (budget_take(&b, &cfg, 5000))
		;
	/* 4 a second: 250 ms is one token, 249 ms 0.996 of one. */
	cr_assert(budget_take(&b, &cfg, 5250));
	cr_assert_float_eq(b.tokens, 0, 1e-9);
	cr_assert_not(budget_take(&b, &cfg, 5499));
	cr_assert_float_eq(b.tokens, 0.996, 1e-9);
	cr_assert(budget_take(&b, &cfg, 5750));
	cr_assert_float_eq(b.tokens, 1, 1e-9);
	/* 3 s more: 12 tokens more. */
	cr_assert(budget_take(&b, &cfg, 8750));
	cr_assert_float_eq(b.tokens, 12, 1e-9);
	/* A deposit refills too: at ratio 0, only the elapsed time's. */
	budget_deposit(&b, &cfg, 9000);
	cr_assert_float_eq(b.tokens, 13, 1e-9);
	/* Time running backwards adds nothing and takes nothing away. */
	budget_deposit(&b, &cfg, 100);
	cr_assert_float_eq(b.tokens, 13, 1e-9);
	cr_assert(budget_take(&b, &cfg, 100));
	cr_assert_float_eq(b.tokens, 12, 1e-9);
	cr_assert_float_eq(b.last_ms, 9000, 0);
}

Test(budget, never_above_burst, .timeout = 10)
{
	struct gw_budget cfg = default_budget;
	struct budget b;
	int k;

	budget_init(&b, &cfg, 0);
	for (k = 0; k < 1000; k++)
		budget_deposit(&b, &cfg, 0);
	cr_assert_float_eq(b.tokens, 10, 0, "deposits stop at burst");
	cr_assert(budget_take(&b, &cfg, 3600000));
	cr_assert_float_eq(b.tokens, 9, 0, "an hour's refill stops at burst");
	budget_deposit(&b, &cfg, 7200000);
	cr_assert_float_eq(b.tokens, 10, 0);
	/* A long quiet spell gives back burst takes, no more. */
	for (k = 0; k < 10; k++)
		cr_assert(budget_take(&b, &cfg, 7200000), "take %d", k);
	cr_assert_not(budget_take(&b, &cfg, 7200000));
}

/*
 * The README's bound: over any span, retries and hedges are at most
 * ratio × requests + min_per_second × seconds + burst. Requests arrive at a
 * steady rate and after each one the caller tries to take as many tokens
 * as it can (the worst case: every request wants retries or hedges).
 */
Test(budget, takes_bounded_over_a_run, .timeout = 10)
{
	static const struct {
		struct gw_budget cfg;
		double rate;		/* requests a second */
		unsigned requests;
		unsigned tries;		/* takes tried after each request */
	} runs[] = {
		{ { 0.2, 1, 10 }, 100, 10000, 1 },
		{ { 0.2, 1, 10 }, 100, 10000, 5 },
		{ { 0.2, 1, 10 }, 0.5, 200, 3 },
		{ { 0, 1, 10 }, 50, 5000, 2 },
		{ { 1, 0, 1 }, 1000, 20000, 3 },
		{ { 0.05, 20, 100 }, 333, 30000, 1 },
		{ { 10, 100000, 1000000 }, 10, 1000, 50 },
	};
	size_t i;

	for (i = 0; i < NA(runs); i++) {
		const struct gw_budget *cfg = &runs[i].cfg;
		double gap_ms = 1000 / runs[i].rate;
		double start = 12345;
		double now = start;
		double bound;
		unsigned long granted = 0;
		struct budget b;
		unsigned n;
		unsigned t;

		budget_init(&b, cfg, start);
		for (n = 0; n < runs[i].requests; n++) {
			now = start + n * gap_ms;
			budget_deposit(&b, cfg, now);
			for (t = 0; t < runs[i].tries; t++)
				granted += budget_take(&b, cfg, now + 0.5 * t);
			cr_assert(b.tokens >= 0 && b.tokens <= cfg->burst, "run %zu: %g tokens",
				  i, b.tokens);
		}
		now += 0.5 * runs[i].tries;
		bound = cfg->ratio * runs[i].requests + cfg->min_per_second * (now - start) / 1000 +
			cfg->burst;
		cr_assert(granted <= bound + 1e-6, "run %zu: %lu takes granted, bound %g", i,
			  granted, bound);
		/* And it is not stingy: with tries to spare, most of the bound is used. */
		if (runs[i].tries > 1)
			cr_assert(granted + 1 >= 0.99 * (bound - cfg->burst) ||
				  granted >= runs[i].requests * runs[i].tries,
				  "run %zu: only %lu of %g", i, granted, bound);
	}
}

/*
 * A workers gateway: each worker's copy of the bucket counts its own use
 * for the others, and takes theirs in — deposits add the ratio, takes
 * remove tokens, within [0, burst] — so N workers spend one budget.
 */
Test(budget, another_workers_use_is_the_same_budget, .timeout = 10)
{
	struct gw_budget cfg = { 0.5, 0, 10 };
	struct budget a;
	struct budget b;
	int i;

	budget_init(&a, &cfg, 0);
	budget_init(&b, &cfg, 0);
	for (i = 0; i < 4; i++)
		cr_assert(budget_take(&a, &cfg, 0));
	budget_deposit(&a, &cfg, 0);
	cr_assert_eq(a.takes, 4, "its own takes, for the others");
	cr_assert_eq(a.deposits, 1);
	/* b learns a's use: 10 - 4 + 0.5. */
	budget_apply_others(&b, &cfg, a.deposits, a.takes, 0);
	cr_assert_float_eq(b.tokens, 6.5, 1e-9);
	cr_assert_eq(b.takes, 0, "others' use is not counted as b's own");
	cr_assert_eq(b.deposits, 0);
	/* More takes than b holds: empty, not below. */
	budget_apply_others(&b, &cfg, 0, 20, 0);
	cr_assert_float_eq(b.tokens, 0, 1e-9);
	cr_assert_not(budget_take(&b, &cfg, 0));
	/* Deposits past the burst stop at it. */
	budget_apply_others(&b, &cfg, 100, 0, 0);
	cr_assert_float_eq(b.tokens, 10, 1e-9);
}

Test(budget, others_use_with_the_refill_once, .timeout = 10)
{
	struct gw_budget cfg = { 0, 2, 10 };
	struct budget b;

	budget_init(&b, &cfg, 0);
	budget_apply_others(&b, &cfg, 0, 10, 0);
	cr_assert_float_eq(b.tokens, 0, 1e-9);
	/* A second later the floor rate has added 2, once, whoever's call it is. */
	budget_apply_others(&b, &cfg, 0, 0, 1000);
	cr_assert_float_eq(b.tokens, 2, 1e-9);
	cr_assert(budget_take(&b, &cfg, 1000));
	cr_assert_float_eq(b.tokens, 1, 1e-9);
}
