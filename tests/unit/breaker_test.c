/*
 * breaker: every transition (closed → open by each rule, open → half_open
 * at exactly the cooldown, half_open → closed after K clean probes,
 * half_open → open on a probe failure), window ageing bucket by bucket,
 * min_requests, cooldown growth, jitter and cap, trips reset on closing,
 * probe accounting (slots, release, late and stale results), the disabled
 * breaker, the reasons' text and config checking; the latency budget at
 * and past its line, and cancelled attempts' slow results. The clock is a
 * number.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "gateway/breaker.h"
#include "common/rng.h"

#define NA(a) (sizeof(a) / sizeof(a[0]))

/*
 * Every rule off, no jitter: tests switch on what they exercise. Window
 * 10 s in 10 buckets of 1 s; cooldown 1 s × 2 per trip up to 10 s; 3 probes.
 */
static struct breaker_config quiet_config(void)
{
	struct breaker_config cfg = breaker_config_default();

	cfg.consecutive_failures = 0;
	cfg.failure_ratio = 0;
	cfg.slow_ms = 0;
	cfg.slow_ratio = 0;
	cfg.window_ms = 10000;
	cfg.buckets = 10;
	cfg.min_requests = 1;
	cfg.cooldown_ms = 1000;
	cfg.cooldown_multiplier = 2;
	cfg.cooldown_max_ms = 10000;
	cfg.cooldown_jitter = 0;
	cfg.half_open_probes = 3;
	return cfg;
}

/* Records an ordinary (non-probe) result of 10 ms. */
static void result(struct breaker *b, double now, bool ok, struct rng *r,
		   struct breaker_change *chg)
{
	breaker_record(b, now, ok, 10, 0, r, chg);
}

static void assert_change(const struct breaker_change *chg, enum breaker_state from,
			  enum breaker_state to, const char *reason)
{
	cr_assert(chg->changed, "no change; wanted %s -> %s", breaker_state_name(from),
		  breaker_state_name(to));
	cr_assert_eq(chg->from, from, "from %s", breaker_state_name(chg->from));
	cr_assert_eq(chg->to, to, "to %s", breaker_state_name(chg->to));
	cr_assert_str_eq(chg->reason, reason);
}

/*
 * From open, waits out the cooldown and admits the first probe (which
 * moves it half-open); returns the probe's ticket and sets *now to then.
 */
static uint64_t to_half_open(struct breaker *b, double *now)
{
	struct breaker_change chg;
	uint64_t ticket;

	cr_assert_eq(b->state, BREAKER_OPEN);
	*now = b->open_until_ms;
	cr_assert_eq(breaker_admit(b, *now, &ticket, &chg), BREAKER_ADMIT_PROBE);
	cr_assert_eq(b->state, BREAKER_HALF_OPEN);
	cr_assert_neq(ticket, 0);
	return ticket;
}

/* From open: half-open, then the first probe fails; returns the new cooldown. */
static double reopen(struct breaker *b, double *now, struct rng *r)
{
	struct breaker_change chg;
	uint64_t ticket = to_half_open(b, now);

	*now += 50;
	breaker_record(b, *now, false, 50, ticket, r, &chg);
	assert_change(&chg, BREAKER_HALF_OPEN, BREAKER_OPEN, "probe failed");
	cr_assert_eq(b->since_ms, *now);
	cr_assert_eq(b->open_until_ms, *now + b->cooldown_ms);
	return b->cooldown_ms;
}

/* From open: half-open, then K probes succeed one after another. */
static void close_with_probes(struct breaker *b, double *now, struct rng *r)
{
	struct breaker_change chg;
	uint64_t ticket = to_half_open(b, now);
	unsigned k;

	for (k = 1; k <= b->cfg.half_open_probes; k++) {
		if (k > 1)
			cr_assert_eq(breaker_admit(b, *now, &ticket, NULL), BREAKER_ADMIT_PROBE);
		*now += 10;
		breaker_record(b, *now, true, 10, ticket, r, &chg);
	}
	cr_assert_eq(b->state, BREAKER_CLOSED);
}

Test(breaker, state_names, .timeout = 10)
{
	cr_assert_str_eq(breaker_state_name(BREAKER_CLOSED), "closed");
	cr_assert_str_eq(breaker_state_name(BREAKER_OPEN), "open");
	cr_assert_str_eq(breaker_state_name(BREAKER_HALF_OPEN), "half_open");
	cr_assert_str_eq(breaker_state_name((enum breaker_state)7), "unknown");
}

Test(breaker, starts_closed_and_admits, .timeout = 10)
{
	struct breaker_config cfg = breaker_config_default();
	struct breaker b;
	struct breaker_change chg;
	uint64_t ticket = 99;
	char err[160] = "";

	cr_assert_eq(breaker_config_check(&cfg, err, sizeof(err)), 0, "%s", err);
	cr_assert(cfg.enabled);
	cr_assert_eq(cfg.consecutive_failures, 5);
	cr_assert_eq(cfg.cooldown_ms, 5000);
	cr_assert_eq(cfg.half_open_probes, 3);

	breaker_init(&b, &cfg, 1234);
	cr_assert_eq(b.state, BREAKER_CLOSED);
	cr_assert_eq(b.since_ms, 1234);
	cr_assert_eq(b.trips, 0);
	cr_assert_eq(b.last_failure_ms, -INFINITY);
	cr_assert_eq(breaker_admit(&b, 1234, &ticket, &chg), BREAKER_ADMIT);
	cr_assert_eq(ticket, 0);
	cr_assert_not(chg.changed);
}

Test(breaker, consecutive_failures_open_it, .timeout = 10)
{
	static const unsigned ns[] = { 1, 2, 5, 12 };
	struct rng r;
	size_t i;

	rng_seed(&r, 1);
	for (i = 0; i < NA(ns); i++) {
		struct breaker_config cfg = quiet_config();
		struct breaker b;
		struct breaker_change chg;
		char want[64];
		double now = 0;
		unsigned k;

		cfg.consecutive_failures = ns[i];
		breaker_init(&b, &cfg, 0);
		/* N − 1 failures, then a success resets the run. */
		for (k = 1; k < ns[i]; k++)
			result(&b, ++now, false, &r, &chg);
		result(&b, ++now, true, &r, &chg);
		cr_assert_eq(b.consecutive_failures, 0);
		for (k = 1; k < ns[i]; k++) {
			result(&b, ++now, false, &r, &chg);
			cr_assert_not(chg.changed, "N=%u opened after %u", ns[i], k);
		}
		cr_assert_eq(b.state, BREAKER_CLOSED);
		result(&b, ++now, false, &r, &chg);
		snprintf(want, sizeof(want), "%u consecutive failure%s", ns[i],
			 ns[i] == 1 ? "" : "s");
		assert_change(&chg, BREAKER_CLOSED, BREAKER_OPEN, want);
		cr_assert_eq(b.state, BREAKER_OPEN);
		cr_assert_eq(b.since_ms, now);
		cr_assert_eq(b.open_until_ms, now + 1000);
		cr_assert_eq(b.trips, 1);
		cr_assert_eq(b.last_failure_ms, now);
	}
}

/*
 * Outcomes as text, one request each 10 ms: 'x' a failure, '.' a success.
 * opens_at is the index of the result that opens it, or -1.
 */
Test(breaker, failure_ratio_needs_ratio_and_min_requests, .timeout = 10)
{
	static const struct {
		double ratio;
		unsigned min_requests;
		const char *outcomes;
		int opens_at;
	} cases[] = {
		{ 0.5, 4, "x..x", 3 },
		{ 0.5, 4, ".x.x", 3 },
		{ 0.5, 4, "x...", -1 },
		{ 0.5, 4, "xx", -1 },		/* 100 %, but only 2 requests */
		{ 0.5, 4, "...x.xxx", 7 },	/* 3 of 7 is under, 4 of 8 is R */
		{ 0.5, 10, "xxxxxxxxx", -1 },	/* 9 < M */
		{ 0.5, 10, "xxxxxxxxxx", 9 },
		{ 1.0, 3, "xxx", 2 },
		{ 1.0, 3, "xx.xxxxxx", -1 },	/* one success in the window */
		{ 0.125, 8, ".......x", 7 },	/* 1 of 8 is R exactly */
		{ 0.125, 8, "......x.", 7 },	/* M reached only at the 8th */
		{ 0.13, 8, ".......x", -1 },
		{ 1.0, 0, "x", 0 },		/* M = 0 counts as 1 */
		{ 0.5, 0, ".", -1 },
	};
	struct rng r;
	size_t i;

	rng_seed(&r, 2);
	for (i = 0; i < NA(cases); i++) {
		struct breaker_config cfg = quiet_config();
		struct breaker b;
		struct breaker_change chg;
		const char *s = cases[i].outcomes;
		int opened = -1;
		int k;

		cfg.failure_ratio = cases[i].ratio;
		cfg.min_requests = cases[i].min_requests;
		breaker_init(&b, &cfg, 0);
		for (k = 0; s[k] && opened < 0; k++) {
			result(&b, 10.0 * k, s[k] == '.', &r, &chg);
			if (chg.changed)
				opened = k;
		}
		cr_assert_eq(opened, cases[i].opens_at, "case %zu (R %g, M %u, \"%s\"): opened at %d",
			     i, cases[i].ratio, cases[i].min_requests, s, opened);
	}
}

Test(breaker, slow_share_opens_it, .timeout = 10)
{
	struct breaker_config cfg = quiet_config();
	struct breaker b;
	struct breaker_change chg;
	struct rng r;
	int k;

	rng_seed(&r, 3);
	cfg.slow_ms = 2000;
	cfg.slow_ratio = 0.5;
	cfg.min_requests = 10;
	breaker_init(&b, &cfg, 0);
	/* Exactly the budget is not slow. */
	for (k = 0; k < 20; k++) {
		breaker_record(&b, k, true, 2000, 0, &r, &chg);
		cr_assert_not(chg.changed);
	}
	cr_assert_eq(b.totals.slow, 0);

	breaker_init(&b, &cfg, 0);
	/* 4 slow of 9 is under M; 5 of 10 opens it, failures counting as slow too. */
	for (k = 0; k < 9; k++) {
		breaker_record(&b, k, k % 2 == 0, k < 5 ? 10 : 2000.5, 0, &r, &chg);
		cr_assert_not(chg.changed, "opened at %d", k);
	}
	breaker_record(&b, 9, false, 5000, 0, &r, &chg);
	assert_change(&chg, BREAKER_CLOSED, BREAKER_OPEN,
		      "slow calls 0.50 >= 0.50 (over 2000 ms) over 10 s (10 requests)");
	cr_assert_eq(b.totals.slow, 5);
	cr_assert_eq(breaker_window(&b, 9).slow, 5);
}

/* The three reasons an open can give, with the numbers the text shows. */
Test(breaker, reasons_text, .timeout = 10)
{
	struct breaker_config cfg;
	struct breaker b;
	struct breaker_change chg;
	struct rng r;
	int k;

	rng_seed(&r, 4);
	cfg = quiet_config();
	cfg.consecutive_failures = 5;
	cfg.failure_ratio = 0.5;	/* also holds, but consecutive is checked first */
	cfg.min_requests = 5;
	breaker_init(&b, &cfg, 0);
	for (k = 0; k < 5; k++)
		result(&b, k, false, &r, &chg);
	assert_change(&chg, BREAKER_CLOSED, BREAKER_OPEN, "5 consecutive failures");

	cfg = quiet_config();
	cfg.failure_ratio = 0.5;
	cfg.min_requests = 21;
	breaker_init(&b, &cfg, 0);
	for (k = 0; k < 21; k++)
		result(&b, 100.0 * k, k < 8, &r, &chg);
	assert_change(&chg, BREAKER_CLOSED, BREAKER_OPEN,
		      "failure ratio 0.62 >= 0.50 over 10 s (21 requests)");

	cfg = quiet_config();
	cfg.slow_ms = 2000;
	cfg.slow_ratio = 0.5;
	cfg.min_requests = 10;
	cfg.window_ms = 2500;
	breaker_init(&b, &cfg, 0);
	for (k = 0; k < 10; k++)
		breaker_record(&b, k, true, k < 2 ? 100 : 3000, 0, &r, &chg);
	assert_change(&chg, BREAKER_CLOSED, BREAKER_OPEN,
		      "slow calls 0.80 >= 0.50 (over 2000 ms) over 2.5 s (10 requests)");
}

/*
 * 10 s in buckets of 1 s: a result counts until the bucket W after its own
 * begins, so one at 999 ms is gone at 10,000 ms, as is one at 0 ms.
 */
Test(breaker, window_ages_bucket_by_bucket, .timeout = 10)
{
	static const struct {
		double at;
		uint64_t failures;
	} seen[] = {
		{ 1000, 3 }, { 9999, 3 }, { 10000, 1 },
		{ 10999.9, 1 }, { 11000, 0 }, { 50000, 0 },
	};
	struct breaker_config cfg = quiet_config();
	struct breaker b;
	struct rng r;
	size_t i;

	rng_seed(&r, 5);
	breaker_init(&b, &cfg, 0);
	result(&b, 0, false, &r, NULL);
	result(&b, 999, false, &r, NULL);
	cr_assert_eq(breaker_window(&b, 999).failures, 2);
	result(&b, 1000, false, &r, NULL);
	/* Time does not run backwards: an earlier now is the latest bucket. */
	cr_assert_eq(breaker_window(&b, 999).failures, 3);
	for (i = 0; i < NA(seen); i++) {
		struct breaker_counts w = breaker_window(&b, seen[i].at);

		cr_assert_eq(w.failures, seen[i].failures, "at %g: %llu failures", seen[i].at,
			     (unsigned long long)w.failures);
		cr_assert_eq(w.requests, seen[i].failures);
		cr_assert_eq(w.rejected, 0);
	}
	/* Totals do not age. */
	cr_assert_eq(b.totals.failures, 3);

	/* A slot reused a lap later holds only the new result. */
	result(&b, 20500, true, &r, NULL);
	cr_assert_eq(breaker_window(&b, 20500).requests, 1);
	cr_assert_eq(breaker_window(&b, 20500).failures, 0);
}

/* Old failures stop counting towards the ratio: the same four results open
 * it at 9,999 ms but not at 10,000 ms. */
Test(breaker, aged_failures_do_not_open_it, .timeout = 10)
{
	static const struct {
		double later;
		bool opens;
	} cases[] = { { 9999, true }, { 10000, false }, { 10500, false } };
	struct rng r;
	size_t i;

	rng_seed(&r, 6);
	for (i = 0; i < NA(cases); i++) {
		struct breaker_config cfg = quiet_config();
		struct breaker b;
		struct breaker_change chg;
		bool opened = false;
		int k;

		cfg.failure_ratio = 0.5;
		cfg.min_requests = 4;
		breaker_init(&b, &cfg, 0);
		for (k = 0; k < 3; k++)
			result(&b, 0, false, &r, &chg);
		cr_assert_not(chg.changed);
		for (k = 0; k < 4; k++) {
			result(&b, cases[i].later, k == 3 ? false : true, &r, &chg);
			opened = opened || chg.changed;
		}
		cr_assert_eq(opened, cases[i].opens, "later %g", cases[i].later);
	}
}

Test(breaker, half_open_exactly_at_cooldown, .timeout = 10)
{
	static const double early[] = { 100, 2000, 5099, 5099.999 };
	struct breaker_config cfg = quiet_config();
	struct breaker b;
	struct breaker_change chg;
	struct rng r;
	uint64_t ticket;
	size_t i;

	rng_seed(&r, 7);
	cfg.consecutive_failures = 1;
	cfg.cooldown_ms = 5000;
	breaker_init(&b, &cfg, 0);
	result(&b, 100, false, &r, &chg);
	cr_assert_eq(b.open_until_ms, 5100);
	for (i = 0; i < NA(early); i++) {
		cr_assert_eq(breaker_admit(&b, early[i], &ticket, &chg), BREAKER_REJECT,
			     "admitted at %g", early[i]);
		cr_assert_not(chg.changed);
		cr_assert_eq(ticket, 0);
	}
	cr_assert_eq(b.totals.rejected, NA(early));
	cr_assert_eq(b.state, BREAKER_OPEN);

	cr_assert_eq(breaker_admit(&b, 5100, &ticket, &chg), BREAKER_ADMIT_PROBE);
	assert_change(&chg, BREAKER_OPEN, BREAKER_HALF_OPEN, "cooldown 5000 ms over");
	cr_assert_eq(b.since_ms, 5100);
	cr_assert_neq(ticket, 0);
	cr_assert_eq(b.probes_in_flight, 1);
	/* The next admit changes nothing more. */
	cr_assert_eq(breaker_admit(&b, 5101, &ticket, &chg), BREAKER_ADMIT_PROBE);
	cr_assert_not(chg.changed);
}

Test(breaker, k_clean_probes_close_it, .timeout = 10)
{
	static const unsigned ks[] = { 1, 3, 5 };
	struct rng r;
	size_t i;

	rng_seed(&r, 8);
	for (i = 0; i < NA(ks); i++) {
		struct breaker_config cfg = quiet_config();
		struct breaker b;
		struct breaker_change chg;
		uint64_t tickets[8];
		char want[64];
		double now;
		unsigned k;

		cfg.consecutive_failures = 2;
		cfg.failure_ratio = 0.5;
		cfg.half_open_probes = ks[i];
		breaker_init(&b, &cfg, 0);
		result(&b, 1, false, &r, &chg);
		result(&b, 2, false, &r, &chg);
		tickets[0] = to_half_open(&b, &now);
		for (k = 1; k < ks[i]; k++)
			cr_assert_eq(breaker_admit(&b, now, &tickets[k], &chg),
				     BREAKER_ADMIT_PROBE);
		for (k = 0; k < ks[i]; k++) {
			breaker_record(&b, now + 1 + k, true, 20, tickets[k], &r, &chg);
			if (k + 1 < ks[i]) {
				cr_assert_not(chg.changed, "K=%u closed after %u", ks[i], k + 1);
				cr_assert_eq(b.probes_succeeded, k + 1);
			}
		}
		snprintf(want, sizeof(want), "%u probe%s succeeded", ks[i], ks[i] == 1 ? "" : "s");
		assert_change(&chg, BREAKER_HALF_OPEN, BREAKER_CLOSED, want);
		cr_assert_eq(b.since_ms, now + ks[i]);
		/* Closing forgets the trip, the run of failures and the window. */
		cr_assert_eq(b.trips, 0);
		cr_assert_eq(b.consecutive_failures, 0);
		cr_assert_eq(breaker_window(&b, now + ks[i]).requests, 0);
		cr_assert_eq(b.totals.requests, 2 + ks[i]);
		cr_assert_eq(breaker_admit(&b, now + 10, &tickets[0], &chg), BREAKER_ADMIT);
		/* One old failure in the window would have made 1 of 1 ≥ 0.5. */
		result(&b, now + 11, true, &r, &chg);
		cr_assert_not(chg.changed);
	}
}

Test(breaker, probe_failure_reopens_with_longer_cooldown, .timeout = 10)
{
	struct breaker_config cfg = quiet_config();
	struct breaker b;
	struct rng r;
	double now;

	rng_seed(&r, 9);
	cfg.consecutive_failures = 1;
	breaker_init(&b, &cfg, 0);
	result(&b, 0, false, &r, NULL);
	cr_assert_eq(b.open_until_ms, 1000);
	cr_assert_eq(reopen(&b, &now, &r), 2000);
	cr_assert_eq(now, 1050);
	cr_assert_eq(b.open_until_ms, 3050);
	cr_assert_eq(b.trips, 2);
	cr_assert_eq(b.last_failure_ms, 1050);
	cr_assert_eq(b.state, BREAKER_OPEN);
}

Test(breaker, cooldown_grows_to_the_cap, .timeout = 10)
{
	static const struct {
		double base;
		double multiplier;
		double cap;
		double want[6];
	} cases[] = {
		{ 1000, 2, 10000, { 1000, 2000, 4000, 8000, 10000, 10000 } },
		{ 1000, 3, 20000, { 1000, 3000, 9000, 20000, 20000, 20000 } },
		{ 500, 1, 500, { 500, 500, 500, 500, 500, 500 } },
		{ 250, 1.5, 1e9, { 250, 375, 562.5, 843.75, 1265.625, 1898.4375 } },
	};
	struct rng r;
	size_t i;

	rng_seed(&r, 10);
	for (i = 0; i < NA(cases); i++) {
		struct breaker_config cfg = quiet_config();
		struct breaker b;
		double now = 0;
		size_t t;

		cfg.consecutive_failures = 1;
		cfg.cooldown_ms = cases[i].base;
		cfg.cooldown_multiplier = cases[i].multiplier;
		cfg.cooldown_max_ms = cases[i].cap;
		breaker_init(&b, &cfg, 0);
		result(&b, 0, false, &r, NULL);
		cr_assert_eq(b.open_until_ms, cases[i].want[0]);
		for (t = 1; t < NA(cases[i].want); t++) {
			double got = reopen(&b, &now, &r);

			cr_assert_eq(got, cases[i].want[t], "case %zu trip %zu: %g", i, t + 1, got);
			cr_assert_eq(b.trips, t + 1);
		}
	}
}

/*
 * Jitter 0.2 around 1, 2, 4 s, then the 6 s cap: each draw is within
 * [c × 0.8, c × 1.2) and never above the cap, the draws reach near both
 * ends, and about half the capped level's draws are exactly the cap.
 */
Test(breaker, cooldown_jitter_bounds_and_cap, .timeout = 10)
{
	static const double nominal[] = { 1000, 2000, 4000, 6000, 6000 };
	double lo[NA(nominal)];
	double hi[NA(nominal)];
	int at_cap[NA(nominal)] = { 0 };
	struct breaker_config cfg = quiet_config();
	struct rng r;
	size_t t;
	int n;

	rng_seed(&r, 11);
	cfg.consecutive_failures = 1;
	cfg.cooldown_ms = 1000;
	cfg.cooldown_max_ms = 6000;
	cfg.cooldown_jitter = 0.2;
	for (t = 0; t < NA(nominal); t++) {
		lo[t] = INFINITY;
		hi[t] = 0;
	}
	for (n = 0; n < 2000; n++) {
		struct breaker b;
		double now = 0;

		breaker_init(&b, &cfg, 0);
		result(&b, 0, false, &r, NULL);
		for (t = 0; t < NA(nominal); t++) {
			double c = t == 0 ? b.cooldown_ms : reopen(&b, &now, &r);
			double top = fmin(nominal[t] * 1.2, 6000);

			cr_assert(c >= nominal[t] * 0.8 && (c < top || c == 6000),
				  "trip %zu: %.17g outside [%g, %g)", t + 1, c, nominal[t] * 0.8, top);
			lo[t] = fmin(lo[t], c);
			hi[t] = fmax(hi[t], c);
			at_cap[t] += c == 6000;
		}
	}
	for (t = 0; t < 3; t++) {
		cr_assert_lt(lo[t], nominal[t] * 0.81, "trip %zu: smallest %g", t + 1, lo[t]);
		cr_assert_gt(hi[t], nominal[t] * 1.19, "trip %zu: largest %g", t + 1, hi[t]);
		cr_assert_eq(at_cap[t], 0);
	}
	for (t = 3; t < NA(nominal); t++) {
		cr_assert_lt(lo[t], 4800 * 1.01, "trip %zu: smallest %g", t + 1, lo[t]);
		cr_assert_eq(hi[t], 6000);
		cr_assert(at_cap[t] > 850 && at_cap[t] < 1150, "trip %zu: %d of 2000 at the cap",
			  t + 1, at_cap[t]);
	}
}

Test(breaker, same_seed_same_cooldowns, .timeout = 10)
{
	struct breaker_config cfg = quiet_config();
	struct breaker b1;
	struct breaker b2;
	struct breaker b3;
	struct rng r1;
	struct rng r2;
	struct rng r3;
	double now1 = 0;
	double now2 = 0;
	double now3 = 0;
	int differ = 0;
	int t;

	cfg.consecutive_failures = 1;
	cfg.cooldown_max_ms = 1e9;
	cfg.cooldown_jitter = 0.5;
	rng_seed(&r1, 42);
	rng_seed(&r2, 42);
	rng_seed(&r3, 43);
	breaker_init(&b1, &cfg, 0);
	breaker_init(&b2, &cfg, 0);
	breaker_init(&b3, &cfg, 0);
	result(&b1, 0, false, &r1, NULL);
	result(&b2, 0, false, &r2, NULL);
	result(&b3, 0, false, &r3, NULL);
	for (t = 0; t < 10; t++) {
		double c = reopen(&b1, &now1, &r1);

		cr_assert_eq(c, reopen(&b2, &now2, &r2), "trip %d differs", t + 2);
		differ += c != reopen(&b3, &now3, &r3);
	}
	cr_assert_eq(differ, 10);
}

Test(breaker, trips_reset_after_closing, .timeout = 10)
{
	struct breaker_config cfg = quiet_config();
	struct breaker b;
	struct breaker_change chg;
	struct rng r;
	double now = 0;

	rng_seed(&r, 12);
	cfg.consecutive_failures = 1;
	breaker_init(&b, &cfg, 0);
	result(&b, 0, false, &r, NULL);
	cr_assert_eq(reopen(&b, &now, &r), 2000);
	cr_assert_eq(reopen(&b, &now, &r), 4000);
	cr_assert_eq(b.trips, 3);
	close_with_probes(&b, &now, &r);
	cr_assert_eq(b.trips, 0);

	now += 100;
	result(&b, now, false, &r, &chg);
	assert_change(&chg, BREAKER_CLOSED, BREAKER_OPEN, "1 consecutive failure");
	cr_assert_eq(b.trips, 1);
	cr_assert_eq(b.open_until_ms - now, 1000);
	cr_assert_eq(reopen(&b, &now, &r), 2000);
}

/*
 * K = 3: at most three probes hold slots; a released slot admits another;
 * a succeeded probe keeps its place, so successes plus slots in flight
 * never pass K; releases with a wrong ticket give nothing back.
 */
Test(breaker, probe_slots, .timeout = 10)
{
	struct breaker_config cfg = quiet_config();
	struct breaker b;
	struct breaker_change chg;
	struct rng r;
	uint64_t t[5];
	uint64_t extra;
	uint64_t more;
	double now;

	rng_seed(&r, 13);
	cfg.consecutive_failures = 1;
	breaker_init(&b, &cfg, 0);
	result(&b, 0, false, &r, NULL);
	t[0] = to_half_open(&b, &now);
	cr_assert_eq(breaker_admit(&b, now, &t[1], &chg), BREAKER_ADMIT_PROBE);
	cr_assert_eq(breaker_admit(&b, now, &t[2], &chg), BREAKER_ADMIT_PROBE);
	cr_assert_eq(t[1], t[0]);
	cr_assert_eq(t[2], t[0]);
	cr_assert_eq(breaker_admit(&b, now, &extra, &chg), BREAKER_REJECT);
	cr_assert_eq(extra, 0);
	cr_assert_eq(b.totals.rejected, 1);
	cr_assert_eq(b.probes_in_flight, 3);

	breaker_release_probe(&b, 0);
	breaker_release_probe(&b, t[0] + 1);
	cr_assert_eq(b.probes_in_flight, 3);
	cr_assert_eq(breaker_admit(&b, now, &extra, &chg), BREAKER_REJECT);

	breaker_release_probe(&b, t[2]);
	cr_assert_eq(b.probes_in_flight, 2);
	cr_assert_eq(breaker_admit(&b, now, &t[3], &chg), BREAKER_ADMIT_PROBE);
	cr_assert_eq(breaker_admit(&b, now, &extra, &chg), BREAKER_REJECT);

	breaker_record(&b, now + 1, true, 10, t[0], &r, &chg);
	breaker_record(&b, now + 2, true, 10, t[1], &r, &chg);
	cr_assert_not(chg.changed);
	cr_assert_eq(b.probes_succeeded, 2);
	cr_assert_eq(b.probes_in_flight, 1);

	/* The slots are for probes in flight: two came back, so two more may go. */
	cr_assert_eq(breaker_admit(&b, now + 3, &t[4], &chg), BREAKER_ADMIT_PROBE);
	cr_assert_eq(breaker_admit(&b, now + 3, &more, &chg), BREAKER_ADMIT_PROBE);
	cr_assert_eq(breaker_admit(&b, now + 3, &extra, &chg), BREAKER_REJECT);
	cr_assert_eq(b.probes_in_flight, 3);

	/* The last one is cancelled: its slot lets one more probe go. */
	breaker_release_probe(&b, t[3]);
	cr_assert_eq(breaker_admit(&b, now + 4, &t[3], &chg), BREAKER_ADMIT_PROBE);
	cr_assert_eq(breaker_admit(&b, now + 4, &extra, &chg), BREAKER_REJECT);
	breaker_record(&b, now + 5, true, 10, t[4], &r, &chg);
	assert_change(&chg, BREAKER_HALF_OPEN, BREAKER_CLOSED, "3 probes succeeded");
	cr_assert_eq(b.totals.rejected, 5);
	/* Closed: a late release changes nothing. */
	breaker_release_probe(&b, t[3]);
	breaker_release_probe(&b, more);
	cr_assert_eq(b.probes_in_flight, 0);
}

/*
 * Requests admitted while closed that finish while half-open are counted
 * but decide nothing: their successes do not close it, their failures do
 * not reopen it (they say how the target was before the cooldown, not now).
 */
Test(breaker, late_ordinary_results_while_half_open, .timeout = 10)
{
	struct breaker_config cfg = quiet_config();
	struct breaker b;
	struct breaker_change chg;
	struct rng r;
	uint64_t probe;
	uint64_t early[20];
	double now;
	int k;

	rng_seed(&r, 14);
	cfg.consecutive_failures = 3;
	breaker_init(&b, &cfg, 0);
	for (k = 0; k < 20; k++) {
		cr_assert_eq(breaker_admit(&b, 0, &early[k], &chg), BREAKER_ADMIT);
		cr_assert_eq(early[k], 0);
	}
	for (k = 0; k < 3; k++)
		result(&b, 1, false, &r, &chg);
	cr_assert_eq(b.state, BREAKER_OPEN);
	probe = to_half_open(&b, &now);

	for (k = 0; k < 10; k++) {
		breaker_record(&b, now + k, true, 10, early[k], &r, &chg);
		cr_assert_not(chg.changed, "late success %d changed it", k);
	}
	for (k = 10; k < 20; k++) {
		breaker_record(&b, now + k, false, 10, early[k], &r, &chg);
		cr_assert_not(chg.changed, "late failure %d changed it", k);
	}
	cr_assert_eq(b.state, BREAKER_HALF_OPEN);
	cr_assert_eq(b.probes_succeeded, 0);
	cr_assert_eq(b.probes_in_flight, 1);
	cr_assert_eq(b.trips, 1);
	cr_assert_eq(b.totals.requests, 23);
	cr_assert_eq(b.totals.failures, 13);
	cr_assert_eq(b.last_failure_ms, now + 19);

	/* The probes still decide. */
	breaker_record(&b, now + 30, false, 10, probe, &r, &chg);
	assert_change(&chg, BREAKER_HALF_OPEN, BREAKER_OPEN, "probe failed");
}

/* While open, results of requests sent earlier change nothing. */
Test(breaker, late_results_while_open, .timeout = 10)
{
	struct breaker_config cfg = quiet_config();
	struct breaker b;
	struct breaker_change chg;
	struct rng r;
	int k;

	rng_seed(&r, 15);
	cfg.consecutive_failures = 1;
	breaker_init(&b, &cfg, 0);
	result(&b, 0, false, &r, &chg);
	for (k = 1; k <= 10; k++) {
		result(&b, k, k % 2 == 0, &r, &chg);
		cr_assert_not(chg.changed);
	}
	cr_assert_eq(b.state, BREAKER_OPEN);
	cr_assert_eq(b.open_until_ms, 1000);
	cr_assert_eq(b.trips, 1);
	cr_assert_eq(b.totals.requests, 11);
}

/*
 * A probe of an earlier half-open round that resolves in a later one is an
 * ordinary late result: it neither fills nor frees the new round's slots.
 */
Test(breaker, probe_of_an_earlier_round_is_ignored, .timeout = 10)
{
	struct breaker_config cfg = quiet_config();
	struct breaker b;
	struct breaker_change chg;
	struct rng r;
	uint64_t old[2];
	uint64_t p[2];
	double now;

	rng_seed(&r, 16);
	cfg.consecutive_failures = 1;
	cfg.half_open_probes = 2;
	breaker_init(&b, &cfg, 0);
	result(&b, 0, false, &r, NULL);
	old[0] = to_half_open(&b, &now);
	cr_assert_eq(breaker_admit(&b, now, &old[1], &chg), BREAKER_ADMIT_PROBE);
	breaker_record(&b, now + 5, false, 10, old[0], &r, &chg);
	assert_change(&chg, BREAKER_HALF_OPEN, BREAKER_OPEN, "probe failed");

	p[0] = to_half_open(&b, &now);
	cr_assert_neq(p[0], old[1]);
	breaker_record(&b, now + 1, true, 10, old[1], &r, &chg);
	cr_assert_not(chg.changed);
	cr_assert_eq(b.probes_succeeded, 0);
	cr_assert_eq(b.probes_in_flight, 1);
	breaker_record(&b, now + 2, false, 10, old[1], &r, &chg);
	cr_assert_not(chg.changed);
	breaker_release_probe(&b, old[1]);
	cr_assert_eq(b.probes_in_flight, 1);
	cr_assert_eq(b.state, BREAKER_HALF_OPEN);

	cr_assert_eq(breaker_admit(&b, now + 3, &p[1], &chg), BREAKER_ADMIT_PROBE);
	breaker_record(&b, now + 4, true, 10, p[0], &r, &chg);
	breaker_record(&b, now + 5, true, 10, p[1], &r, &chg);
	assert_change(&chg, BREAKER_HALF_OPEN, BREAKER_CLOSED, "2 probes succeeded");
}

Test(breaker, disabled_admits_and_counts, .timeout = 10)
{
	struct breaker_config cfg = quiet_config();
	struct breaker b;
	struct breaker_change chg;
	struct rng r;
	uint64_t ticket;
	int k;

	rng_seed(&r, 17);
	cfg.enabled = false;
	cfg.consecutive_failures = 1;
	cfg.failure_ratio = 0.1;
	cfg.slow_ms = 100;
	cfg.slow_ratio = 0.1;
	breaker_init(&b, &cfg, 0);
	for (k = 0; k < 100; k++) {
		cr_assert_eq(breaker_admit(&b, k, &ticket, &chg), BREAKER_ADMIT);
		cr_assert_eq(ticket, 0);
		cr_assert_not(chg.changed);
		breaker_record(&b, k + 0.5, false, 500, ticket, &r, &chg);
		cr_assert_not(chg.changed);
	}
	cr_assert_eq(b.state, BREAKER_CLOSED);
	cr_assert_eq(b.since_ms, 0);
	cr_assert_eq(b.trips, 0);
	cr_assert_eq(b.totals.requests, 100);
	cr_assert_eq(b.totals.failures, 100);
	cr_assert_eq(b.totals.slow, 100);
	cr_assert_eq(b.totals.rejected, 0);
	cr_assert_eq(b.consecutive_failures, 100);
	cr_assert_eq(b.last_failure_ms, 99.5);
	cr_assert_eq(breaker_window(&b, 99.5).failures, 100);
}

/* A success leaves last_failure_ms alone; NULL change pointers are fine. */
Test(breaker, last_failure_time, .timeout = 10)
{
	struct breaker_config cfg = quiet_config();
	struct breaker b;
	uint64_t ticket;

	breaker_init(&b, &cfg, 0);
	breaker_record(&b, 10, true, 5, 0, NULL, NULL);
	cr_assert_eq(b.last_failure_ms, -INFINITY);
	breaker_record(&b, 1234, false, 5, 0, NULL, NULL);
	breaker_record(&b, 2000, true, 5, 0, NULL, NULL);
	cr_assert_eq(b.last_failure_ms, 1234);
	cr_assert_eq(breaker_admit(&b, 2001, &ticket, NULL), BREAKER_ADMIT);
}

/* Sets the named field of cfg; only the fields the table below uses. */
static void set_field(struct breaker_config *cfg, const char *field, double v)
{
	if (strcmp(field, "failure_ratio") == 0)
		cfg->failure_ratio = v;
	else if (strcmp(field, "window_ms") == 0)
		cfg->window_ms = v;
	else if (strcmp(field, "buckets") == 0)
		cfg->buckets = (unsigned)v;
	else if (strcmp(field, "slow_ms") == 0)
		cfg->slow_ms = v;
	else if (strcmp(field, "slow_ratio") == 0)
		cfg->slow_ratio = v;
	else if (strcmp(field, "cooldown_ms") == 0)
		cfg->cooldown_ms = v;
	else if (strcmp(field, "cooldown_multiplier") == 0)
		cfg->cooldown_multiplier = v;
	else if (strcmp(field, "cooldown_max_ms") == 0)
		cfg->cooldown_max_ms = v;
	else if (strcmp(field, "cooldown_jitter") == 0)
		cfg->cooldown_jitter = v;
	else if (strcmp(field, "half_open_probes") == 0)
		cfg->half_open_probes = (unsigned)v;
	else if (strcmp(field, "latency_budget_ms") == 0)
		cfg->latency_budget_ms = v;
	else if (strcmp(field, "latency_percentile") == 0)
		cfg->latency_percentile = v;
	else
		cr_assert_fail("no field %s", field);
}

Test(breaker, config_check_names_the_bad_field, .timeout = 10)
{
	static const struct {
		const char *field;
		double value;
	} bad[] = {
		{ "failure_ratio", -0.1 }, { "failure_ratio", 1.01 }, { "failure_ratio", NAN },
		{ "window_ms", 0 }, { "window_ms", 9 }, { "window_ms", -1000 },
		{ "window_ms", INFINITY }, { "window_ms", NAN }, { "window_ms", 3600001 },
		{ "buckets", 0 }, { "buckets", BREAKER_MAX_BUCKETS + 1 },
		{ "slow_ms", -1 }, { "slow_ms", INFINITY }, { "slow_ms", NAN },
		{ "slow_ratio", -0.5 }, { "slow_ratio", 2 },
		{ "cooldown_ms", 0 }, { "cooldown_ms", -5 }, { "cooldown_ms", INFINITY },
		{ "cooldown_multiplier", 0.99 }, { "cooldown_multiplier", INFINITY },
		{ "cooldown_multiplier", NAN },
		{ "cooldown_max_ms", 4999 }, { "cooldown_max_ms", INFINITY },
		{ "cooldown_jitter", -0.01 }, { "cooldown_jitter", 1 }, { "cooldown_jitter", NAN },
		{ "half_open_probes", 0 },
		{ "latency_budget_ms", -1 }, { "latency_budget_ms", -0.001 },
		{ "latency_budget_ms", INFINITY }, { "latency_budget_ms", NAN },
		{ "latency_percentile", 40 }, { "latency_percentile", 49.99 },
		{ "latency_percentile", 99.91 }, { "latency_percentile", 100 },
		{ "latency_percentile", 0 }, { "latency_percentile", NAN },
	};
	static const struct {
		const char *field;
		double value;
	} good[] = {
		{ "failure_ratio", 0 }, { "failure_ratio", 1 }, { "slow_ratio", 0 },
		{ "slow_ratio", 1 }, { "window_ms", 10 }, { "window_ms", 3600000 },
		{ "buckets", 1 }, { "buckets", BREAKER_MAX_BUCKETS }, { "slow_ms", 0 },
		{ "cooldown_multiplier", 1 }, { "cooldown_max_ms", 5000 },
		{ "cooldown_jitter", 0 }, { "cooldown_jitter", 0.99 }, { "half_open_probes", 1 },
		{ "latency_budget_ms", 0 }, { "latency_budget_ms", 0.5 },
		{ "latency_budget_ms", 3600000 }, { "latency_percentile", 50 },
		{ "latency_percentile", 99.9 }, { "latency_percentile", 75.5 },
	};
	size_t i;

	for (i = 0; i < NA(bad); i++) {
		struct breaker_config cfg = breaker_config_default();
		char err[160] = "";
		char prefix[64];

		cfg.buckets = 10;
		cfg.window_ms = 10000;
		set_field(&cfg, bad[i].field, bad[i].value);
		cr_assert_eq(breaker_config_check(&cfg, err, sizeof(err)), -EINVAL,
			     "%s = %g accepted", bad[i].field, bad[i].value);
		snprintf(prefix, sizeof(prefix), "%s: expected ", bad[i].field);
		cr_assert(strncmp(err, prefix, strlen(prefix)) == 0, "%s = %g: \"%s\"",
			  bad[i].field, bad[i].value, err);
		/* No buffer is fine too. */
		cr_assert_eq(breaker_config_check(&cfg, NULL, 0), -EINVAL);
	}
	for (i = 0; i < NA(good); i++) {
		struct breaker_config cfg = breaker_config_default();
		char err[160] = "";

		set_field(&cfg, good[i].field, good[i].value);
		cr_assert_eq(breaker_config_check(&cfg, err, sizeof(err)), 0, "%s = %g: %s",
			     good[i].field, good[i].value, err);
	}
}

Test(breaker, config_check_message, .timeout = 10)
{
	struct breaker_config cfg = breaker_config_default();
	char err[160];
	char tiny[8];

	cfg.failure_ratio = 1.5;
	cr_assert_eq(breaker_config_check(&cfg, err, sizeof(err)), -EINVAL);
	cr_assert_str_eq(err, "failure_ratio: expected 0 (off) or a number in (0, 1], got 1.5");
	cr_assert_eq(breaker_config_check(&cfg, tiny, sizeof(tiny)), -EINVAL);
	cr_assert_str_eq(tiny, "failure");

	cfg = breaker_config_default();
	cfg.latency_budget_ms = -1;
	cr_assert_eq(breaker_config_check(&cfg, err, sizeof(err)), -EINVAL);
	cr_assert_str_eq(err, "latency_budget_ms: expected 0 (off) or a finite number > 0, got -1");
	cfg = breaker_config_default();
	cfg.latency_percentile = 40;
	cr_assert_eq(breaker_config_check(&cfg, err, sizeof(err)), -EINVAL);
	cr_assert_str_eq(err, "latency_percentile: expected a number in [50, 99.9], got 40");
}

/* A config that skipped the check still cannot make the window overrun. */
Test(breaker, init_clamps_buckets, .timeout = 10)
{
	struct breaker_config cfg = quiet_config();
	struct breaker b;
	int k;

	cfg.buckets = 1000;
	breaker_init(&b, &cfg, 0);
	cr_assert_eq(b.cfg.buckets, BREAKER_MAX_BUCKETS);
	for (k = 0; k < 5000; k++)
		breaker_record(&b, 7.0 * k, k % 3 == 0, 10, 0, NULL, NULL);
	cfg.buckets = 0;
	breaker_init(&b, &cfg, 0);
	cr_assert_eq(b.cfg.buckets, 1);
	breaker_record(&b, 5, false, 10, 0, NULL, NULL);
	cr_assert_eq(breaker_window(&b, 9999).failures, 1);
	cr_assert_eq(breaker_window(&b, 10000).failures, 0);
}

/*
 * breaker_trip (a health check's verdict): opens a closed or half-open
 * breaker for the next cooldown, leaves an open one be, and does nothing
 * when disabled; breaker_wake: an open breaker goes half-open at once, and
 * its probes decide as after a cooldown.
 */
Test(breaker, trip_and_wake_from_outside, .timeout = 10)
{
	struct breaker_config cfg = quiet_config();
	struct breaker_change chg;
	struct breaker b;
	struct rng r;
	uint64_t probe;

	rng_seed(&r, 1);
	breaker_init(&b, &cfg, 0);
	breaker_wake(&b, 10, "health check passed", &chg);
	cr_assert_not(chg.changed, "waking a closed breaker changed it");
	breaker_trip(&b, 100, "health check failed 2 times", &r, &chg);
	assert_change(&chg, BREAKER_CLOSED, BREAKER_OPEN, "health check failed 2 times");
	cr_assert_float_eq(b.open_until_ms, 1100, 1e-9);
	cr_assert_eq(breaker_admit(&b, 200, &probe, &chg), BREAKER_REJECT);
	breaker_trip(&b, 300, "again", &r, &chg);
	cr_assert_not(chg.changed, "tripping an open breaker changed it");
	cr_assert_float_eq(b.open_until_ms, 1100, 1e-9, "its cooldown moved");

	breaker_wake(&b, 400, "health check passed 2 times", &chg);
	assert_change(&chg, BREAKER_OPEN, BREAKER_HALF_OPEN, "health check passed 2 times");
	cr_assert_eq(breaker_admit(&b, 410, &probe, &chg), BREAKER_ADMIT_PROBE,
		     "no probe before the cooldown's end");
	breaker_trip(&b, 420, "health check failed", &r, &chg);
	assert_change(&chg, BREAKER_HALF_OPEN, BREAKER_OPEN, "health check failed");
	cr_assert_float_eq(b.open_until_ms, 420 + 2000, 1e-9, "the second trip's cooldown");

	cfg.enabled = false;
	breaker_init(&b, &cfg, 0);
	breaker_trip(&b, 100, "down", &r, &chg);
	cr_assert_not(chg.changed);
	cr_assert_eq(b.state, BREAKER_CLOSED);
}

/*
 * Another replica's verdicts (gateway/fleet.h): breaker_open_until opens a
 * closed or half-open breaker until the given time and only lengthens an
 * open one; breaker_close_now closes an open or half-open one and starts
 * its counts again; a stale end (not after now) and a disabled breaker do
 * nothing.
 */
Test(breaker, open_until_and_close_now_from_another_replica, .timeout = 10)
{
	struct breaker_config cfg = quiet_config();
	struct breaker_change chg;
	struct breaker b;
	struct rng r;
	uint64_t probe;

	rng_seed(&r, 1);
	cfg.consecutive_failures = 3;
	breaker_init(&b, &cfg, 0);
	result(&b, 10, false, &r, &chg);
	breaker_open_until(&b, 100, 100, 100, "stale", &chg);
	cr_assert_not(chg.changed, "an open ending now opened it");
	breaker_open_until(&b, 100, 100, 2600, "r2: 3 consecutive failures", &chg);
	assert_change(&chg, BREAKER_CLOSED, BREAKER_OPEN, "r2: 3 consecutive failures");
	cr_assert_float_eq(b.open_until_ms, 2600, 1e-9);
	cr_assert_float_eq(b.cooldown_ms, 2500, 1e-9);
	cr_assert_eq(b.trips, 1);
	cr_assert_eq(breaker_admit(&b, 2599, &probe, &chg), BREAKER_REJECT);
	breaker_open_until(&b, 200, 200, 1000, "shorter", &chg);
	cr_assert_not(chg.changed);
	cr_assert_float_eq(b.open_until_ms, 2600, 1e-9, "a shorter open cut the cooldown");
	breaker_open_until(&b, 200, 200, 3000, "longer", &chg);
	cr_assert_not(chg.changed);
	cr_assert_float_eq(b.open_until_ms, 3000, 1e-9, "a longer open did not hold");

	breaker_close_now(&b, 500, 500, "r2: 1 probe succeeded", &chg);
	assert_change(&chg, BREAKER_OPEN, BREAKER_CLOSED, "r2: 1 probe succeeded");
	cr_assert_eq(b.trips, 0);
	cr_assert_eq(b.consecutive_failures, 0, "the failure before the open still counts");
	cr_assert_eq(breaker_admit(&b, 501, &probe, &chg), BREAKER_ADMIT);
	breaker_close_now(&b, 600, 600, "again", &chg);
	cr_assert_not(chg.changed, "closing a closed breaker changed it");

	/* Half-open (probing here) and another replica's probe failed: open. */
	breaker_trip(&b, 1000, "down", &r, &chg);
	cr_assert_eq(breaker_admit(&b, 2000, &probe, &chg), BREAKER_ADMIT_PROBE);
	breaker_open_until(&b, 2010, 2010, 5000, "r3: probe failed", &chg);
	assert_change(&chg, BREAKER_HALF_OPEN, BREAKER_OPEN, "r3: probe failed");
	breaker_record(&b, 2020, true, 10, probe, &r, &chg);
	cr_assert_not(chg.changed, "a probe of the round before decided");

	cfg.enabled = false;
	breaker_init(&b, &cfg, 0);
	breaker_open_until(&b, 0, 0, 1000, "r2", &chg);
	cr_assert_not(chg.changed);
	cr_assert_eq(b.state, BREAKER_CLOSED);
}

/*
 * The probe gate: while it is on, an open breaker past its cooldown stays
 * open, gate_ms at a time, until breaker_wake gives it the probe; off, the
 * cooldown's end makes it half-open as before.
 */
Test(breaker, the_probe_gate_holds_an_open_breaker, .timeout = 10)
{
	struct breaker_config cfg = quiet_config();
	struct breaker_change chg;
	struct breaker b;
	struct rng r;
	uint64_t probe;

	rng_seed(&r, 1);
	breaker_init(&b, &cfg, 0);
	breaker_gate(&b, 250);
	breaker_trip(&b, 0, "down", &r, &chg);
	cr_assert_float_eq(b.open_until_ms, 1000, 1e-9);
	cr_assert_not(breaker_would_admit(&b, 1000));
	cr_assert_eq(breaker_admit(&b, 1000, &probe, &chg), BREAKER_REJECT);
	cr_assert_not(chg.changed);
	cr_assert_eq(b.state, BREAKER_OPEN);
	cr_assert_float_eq(b.open_until_ms, 1250, 1e-9, "not held gate_ms longer");
	cr_assert_eq(breaker_admit(&b, 1100, &probe, &chg), BREAKER_REJECT);
	breaker_wake(&b, 1200, "probe lock won", &chg);
	assert_change(&chg, BREAKER_OPEN, BREAKER_HALF_OPEN, "probe lock won");
	cr_assert_eq(breaker_admit(&b, 1201, &probe, &chg), BREAKER_ADMIT_PROBE);

	breaker_record(&b, 1300, false, 10, probe, &r, &chg);
	assert_change(&chg, BREAKER_HALF_OPEN, BREAKER_OPEN, "probe failed");
	breaker_gate(&b, 0);
	cr_assert(breaker_would_admit(&b, b.open_until_ms));
	cr_assert_eq(breaker_admit(&b, b.open_until_ms, &probe, &chg), BREAKER_ADMIT_PROBE);
	cr_assert_eq(b.state, BREAKER_HALF_OPEN, "the gate, off, still held it");
}

/* ---- the latency budget, and cancelled attempts' slow results ---- */

/* Quiet, but for a 500 ms budget at p95 over at least 20 results. */
static struct breaker_config budget_config(void)
{
	struct breaker_config cfg = quiet_config();

	cfg.latency_budget_ms = 500;
	cfg.latency_percentile = 95;
	cfg.min_requests = 20;
	return cfg;
}

/*
 * Records n ordinary results at now, the first `late` of them over the
 * budget (600 ms) and the rest on it exactly (500 ms, not late). Returns
 * the 1-based result that opened b, or 0 when none did.
 */
static unsigned record_run(struct breaker *b, double now, unsigned n, unsigned late,
			   struct breaker_change *chg)
{
	unsigned k;

	for (k = 0; k < n; k++) {
		breaker_record(b, now, true, k < late ? 600 : 500, 0, NULL, chg);
		if (chg->changed)
			return k + 1;
	}
	return 0;
}

/*
 * Opens when more than 1 − pct/100 of the window's results are late: at
 * p95, 1 late of 20 (5 %) is not more than 5 %, 2 of 20 is; and never
 * with fewer than min_requests results, however late they all are.
 */
Test(breaker, latency_budget_at_and_past_the_threshold, .timeout = 10)
{
	struct breaker_config cfg = budget_config();
	struct breaker_change chg;
	struct breaker b;

	breaker_init(&b, &cfg, 0);
	cr_assert_eq(record_run(&b, 100, 20, 1, &chg), 0, "1 late of 20 opened it at p95");
	cr_assert_eq(b.state, BREAKER_CLOSED);
	cr_assert_eq(b.totals.late, 1, "exactly the budget is not late");
	cr_assert_eq(breaker_window(&b, 100).late, 1);
	cr_assert_eq(b.totals.slow, 0, "slow_ms is off");

	breaker_init(&b, &cfg, 0);
	cr_assert_eq(record_run(&b, 100, 20, 2, &chg), 20, "2 late of 20 did not open it");
	cr_assert_eq(chg.from, BREAKER_CLOSED);
	cr_assert_eq(chg.to, BREAKER_OPEN);
	cr_assert(strstr(chg.reason, "p95 latency over the 500 ms budget"), "%s", chg.reason);
	cr_assert(strstr(chg.reason, "2 of 20 requests"), "%s", chg.reason);

	/* 1 late of 20, then 1 more result late: 2 of 21 is over 5 %. */
	breaker_init(&b, &cfg, 0);
	cr_assert_eq(record_run(&b, 100, 20, 1, &chg), 0);
	breaker_record(&b, 100, true, 501, 0, NULL, &chg);
	cr_assert(chg.changed, "2 late of 21 did not open it");

	/* Under min_requests nothing opens it, all late as they are. */
	breaker_init(&b, &cfg, 0);
	cr_assert_eq(record_run(&b, 100, 19, 19, &chg), 0, "opened under min_requests");
	breaker_record(&b, 100, true, 600, 0, NULL, &chg);
	cr_assert(chg.changed, "20 late of 20 did not open it");

	/* Failures over the budget are late too (a timeout is slower than the budget). */
	breaker_init(&b, &cfg, 0);
	record_run(&b, 100, 18, 0, &chg);
	breaker_record(&b, 100, false, 5000, 0, NULL, &chg);
	breaker_record(&b, 100, false, 5000, 0, NULL, &chg);
	cr_assert(chg.changed, "late failures were not counted late");
	cr_assert_eq(b.totals.late, 2);

	/* Latency budget 0: the rule is off. */
	cfg.latency_budget_ms = 0;
	breaker_init(&b, &cfg, 0);
	cr_assert_eq(record_run(&b, 100, 40, 40, &chg), 0);
	cr_assert_eq(b.totals.late, 0);
}

/*
 * The same edge at other percentiles, where 1 − pct/100 is not exact in
 * binary: at p90, 2 late of 20 (10 %) is not more than 10 %, 3 are; at
 * p80, 4 of 20 is not, 5 are; at p99.9, 1 late of 1,000 is not, 2 are.
 */
Test(breaker, latency_budget_threshold_is_exact, .timeout = 10)
{
	static const struct {
		double pct;
		unsigned n;
		unsigned late_ok;	/* the most late results that keep it closed */
	} cases[] = {
		{ 95, 20, 1 }, { 90, 20, 2 }, { 90, 100, 10 }, { 80, 20, 4 }, { 55, 20, 9 },
		{ 50, 20, 10 }, { 99, 100, 1 }, { 99.9, 1000, 1 }, { 75, 4, 1 },
	};
	struct breaker_change chg;
	struct breaker b;
	size_t i;

	for (i = 0; i < NA(cases); i++) {
		struct breaker_config cfg = budget_config();

		cfg.latency_percentile = cases[i].pct;
		cfg.min_requests = cases[i].n;
		breaker_init(&b, &cfg, 0);
		cr_assert_eq(record_run(&b, 100, cases[i].n, cases[i].late_ok, &chg), 0,
			     "p%g: %u late of %u opened it", cases[i].pct, cases[i].late_ok,
			     cases[i].n);
		breaker_init(&b, &cfg, 0);
		cr_assert_eq(record_run(&b, 100, cases[i].n, cases[i].late_ok + 1, &chg),
			     cases[i].n, "p%g: %u late of %u did not open it", cases[i].pct,
			     cases[i].late_ok + 1, cases[i].n);
	}
}

/* A cancelled attempt under both thresholds says nothing: nothing is counted. */
Test(breaker, record_slow_quick_counts_nothing, .timeout = 10)
{
	struct breaker_config cfg = budget_config();
	struct breaker_change chg;
	struct breaker b;
	struct breaker_counts w;

	cfg.slow_ms = 300;
	cfg.slow_ratio = 0.5;
	cfg.min_requests = 1;
	breaker_init(&b, &cfg, 0);
	breaker_record_slow(&b, 10, 5, 0, NULL, &chg);
	cr_assert_not(chg.changed);
	breaker_record_slow(&b, 20, 300, 0, NULL, &chg);
	cr_assert_not(chg.changed, "exactly slow_ms is not slow");
	cr_assert_eq(b.totals.requests, 0);
	cr_assert_eq(b.totals.slow, 0);
	cr_assert_eq(b.totals.late, 0);
	w = breaker_window(&b, 20);
	cr_assert_eq(w.requests, 0);
	cr_assert_eq(b.state, BREAKER_CLOSED);

	/* With both rules off, no latency is slow. */
	cfg = quiet_config();
	breaker_init(&b, &cfg, 0);
	breaker_record_slow(&b, 10, 1e6, 0, NULL, &chg);
	cr_assert_eq(b.totals.requests, 0);
}

/*
 * One over latency_budget_ms counts as a late result that did not fail:
 * the consecutive count and the last failure's time stay as they were.
 */
Test(breaker, record_slow_counts_late_not_failed, .timeout = 10)
{
	struct breaker_config cfg = budget_config();
	struct breaker_change chg;
	struct breaker b;
	struct breaker_counts w;
	int k;

	cfg.consecutive_failures = 5;
	breaker_init(&b, &cfg, 0);
	for (k = 0; k < 3; k++)
		result(&b, 10 + k, false, NULL, &chg);
	cr_assert_eq(b.consecutive_failures, 3);
	breaker_record_slow(&b, 50, 600, 0, NULL, &chg);
	cr_assert_not(chg.changed);
	cr_assert_eq(b.consecutive_failures, 3, "a cancelled attempt reset the count");
	cr_assert_float_eq(b.last_failure_ms, 12, 0);
	cr_assert_eq(b.totals.requests, 4);
	cr_assert_eq(b.totals.failures, 3);
	cr_assert_eq(b.totals.late, 1);
	cr_assert_eq(b.totals.slow, 0);
	w = breaker_window(&b, 50);
	cr_assert_eq(w.requests, 4);
	cr_assert_eq(w.failures, 3);
	cr_assert_eq(w.late, 1);
	/* The count goes on from 3: two more failures make 5. */
	result(&b, 60, false, NULL, &chg);
	cr_assert_eq(b.consecutive_failures, 4);
	result(&b, 61, false, NULL, &chg);
	assert_change(&chg, BREAKER_CLOSED, BREAKER_OPEN, "5 consecutive failures");

	/* Slow, not late: counted slow only. */
	cfg = quiet_config();
	cfg.slow_ms = 300;
	cfg.slow_ratio = 0.9;
	breaker_init(&b, &cfg, 0);
	breaker_record_slow(&b, 10, 301, 0, NULL, &chg);
	cr_assert_eq(b.totals.slow, 1);
	cr_assert_eq(b.totals.late, 0);
}

/* Cancelled slow attempts can open a closed breaker, by either latency rule. */
Test(breaker, record_slow_can_open_it, .timeout = 10)
{
	struct breaker_config cfg = budget_config();
	struct breaker_change chg;
	struct rng r;
	struct breaker b;

	rng_seed(&r, 21);
	breaker_init(&b, &cfg, 0);
	cr_assert_eq(record_run(&b, 100, 18, 0, &chg), 0);
	breaker_record_slow(&b, 100, 600, 0, &r, &chg);
	cr_assert_not(chg.changed, "19 results are under min_requests");
	breaker_record_slow(&b, 100, 600, 0, &r, &chg);
	cr_assert(chg.changed, "2 late of 20 did not open it");
	cr_assert_eq(chg.from, BREAKER_CLOSED);
	cr_assert_eq(chg.to, BREAKER_OPEN);
	cr_assert(strstr(chg.reason, "500 ms budget"), "%s", chg.reason);
	cr_assert_eq(b.state, BREAKER_OPEN);
	cr_assert_float_eq(b.open_until_ms, 100 + cfg.cooldown_ms, 1e-9);

	cfg = quiet_config();
	cfg.slow_ms = 300;
	cfg.slow_ratio = 0.5;
	cfg.min_requests = 2;
	breaker_init(&b, &cfg, 0);
	result(&b, 10, true, &r, &chg);
	breaker_record_slow(&b, 20, 400, 0, &r, &chg);
	assert_change(&chg, BREAKER_CLOSED, BREAKER_OPEN,
		      "slow calls 0.50 >= 0.50 (over 300 ms) over 10 s (2 requests)");

	/* Disabled: counted, never opened. */
	cfg = budget_config();
	cfg.enabled = false;
	cfg.min_requests = 1;
	breaker_init(&b, &cfg, 0);
	breaker_record_slow(&b, 10, 600, 0, &r, &chg);
	cr_assert_not(chg.changed);
	cr_assert_eq(b.state, BREAKER_CLOSED);
	cr_assert_eq(b.totals.late, 1);
}

/*
 * A cancelled probe gives its slot back, quick or slow, and decides
 * nothing: no success towards closing, no failure reopening it.
 */
Test(breaker, record_slow_gives_back_the_probe_slot, .timeout = 10)
{
	struct breaker_config cfg = budget_config();
	struct breaker_change chg;
	struct breaker b;
	struct rng r;
	uint64_t t[3];
	uint64_t extra;
	double now;

	rng_seed(&r, 22);
	cfg.consecutive_failures = 1;
	cfg.min_requests = 1;
	breaker_init(&b, &cfg, 0);
	result(&b, 0, false, &r, NULL);
	t[0] = to_half_open(&b, &now);
	cr_assert_eq(breaker_admit(&b, now, &t[1], &chg), BREAKER_ADMIT_PROBE);
	cr_assert_eq(breaker_admit(&b, now, &t[2], &chg), BREAKER_ADMIT_PROBE);
	cr_assert_eq(breaker_admit(&b, now, &extra, &chg), BREAKER_REJECT);
	cr_assert_eq(b.probes_in_flight, 3);

	/* Quick: the slot comes back, nothing is counted. */
	breaker_record_slow(&b, now + 10, 100, t[2], &r, &chg);
	cr_assert_not(chg.changed);
	cr_assert_eq(b.probes_in_flight, 2);
	cr_assert_eq(b.totals.requests, 1);
	cr_assert_eq(breaker_admit(&b, now + 10, &t[2], &chg), BREAKER_ADMIT_PROBE);

	/* Late: the slot comes back, it is counted late, the state stays. */
	breaker_record_slow(&b, now + 700, 700, t[0], &r, &chg);
	cr_assert_not(chg.changed);
	cr_assert_eq(b.state, BREAKER_HALF_OPEN);
	cr_assert_eq(b.probes_in_flight, 2);
	cr_assert_eq(b.probes_succeeded, 0);
	cr_assert_eq(b.totals.late, 1);

	/* A ticket of no round, or 0, gives nothing back. */
	breaker_record_slow(&b, now + 710, 100, t[0] + 1, &r, &chg);
	breaker_record_slow(&b, now + 710, 100, 0, &r, &chg);
	cr_assert_eq(b.probes_in_flight, 2);

	/* The probes still decide: the two left and one more close it. */
	breaker_record(&b, now + 720, true, 10, t[1], &r, &chg);
	breaker_record(&b, now + 721, true, 10, t[2], &r, &chg);
	cr_assert_eq(breaker_admit(&b, now + 722, &extra, &chg), BREAKER_ADMIT_PROBE);
	breaker_record(&b, now + 723, true, 10, extra, &r, &chg);
	assert_change(&chg, BREAKER_HALF_OPEN, BREAKER_CLOSED, "3 probes succeeded");
}
