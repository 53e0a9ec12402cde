/*
 * fault: the timeline under a fake clock — window edges, which fault decides
 * a request, probability draws, rate_limit budgets — and fault_parse's keys,
 * defaults and errors.
 */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "mockprov/contract.h"
#include "mockprov/fault.h"
#include "common/cfg.h"

#define NF(a) (sizeof(a) / sizeof(a[0]))

/* A fault of kind active over [from_s, to_s) that always applies. */
static struct fault mk(enum fault_kind kind, double from_s, double to_s)
{
	struct fault f;

	memset(&f, 0, sizeof(f));
	f.kind = kind;
	f.from_ms = from_s * 1000;
	f.to_ms = to_s * 1000;
	f.probability = 1;
	f.status = 503;
	f.retry_after_s = -1;
	return f;
}

static struct fault mk_rate(double from_s, double to_s, double rpm, double tpm)
{
	struct fault f = mk(FAULT_RATE_LIMIT, from_s, to_s);

	f.rpm = rpm;
	f.tpm = tpm;
	return f;
}

static void decide(struct fault *faults, size_t n, double t_ms, double cost,
		   struct fault_decision *d)
{
	struct rng r;

	rng_seed(&r, 1);
	fault_decide(faults, n, t_ms, cost, &r, d);
}

/* ---- the timeline ---- */

Test(fault_timeline, window_is_half_open, .timeout = 10)
{
	struct fault f = mk(FAULT_HANG, 15, 45);

	cr_assert_not(fault_active(&f, 14999.999));
	cr_assert(fault_active(&f, 15000), "inactive at from");
	cr_assert(fault_active(&f, 44999.999));
	cr_assert_not(fault_active(&f, 45000), "active at to");
	cr_assert_not(fault_active(&f, 1e9));
}

Test(fault_timeline, down_at_only_for_down_windows, .timeout = 10)
{
	struct fault fs[] = {
		mk(FAULT_HANG, 0, 100),
		mk(FAULT_DOWN, 10, 20),
		mk(FAULT_DOWN, 30, 40),
	};

	cr_assert_not(fault_down_at(fs, NF(fs), 5000), "hang counted as down");
	cr_assert(fault_down_at(fs, NF(fs), 10000));
	cr_assert(fault_down_at(fs, NF(fs), 19999));
	cr_assert_not(fault_down_at(fs, NF(fs), 20000));
	cr_assert_not(fault_down_at(fs, NF(fs), 25000));
	cr_assert(fault_down_at(fs, NF(fs), 30000));
	cr_assert_not(fault_down_at(fs, NF(fs), 40000));
	cr_assert_not(fault_down_at(fs, 0, 15000));
}

Test(fault_timeline, next_edge_all_kinds, .timeout = 10)
{
	struct fault fs[] = {
		mk(FAULT_HANG, 10, 20),
		mk(FAULT_STATUS, 15, 30),
		mk(FAULT_DOWN, 40, 50),
	};

	cr_assert_float_eq(fault_next_edge(fs, NF(fs), 0, FAULT_NKINDS), 10000, 0);
	cr_assert_float_eq(fault_next_edge(fs, NF(fs), 10000, FAULT_NKINDS), 15000, 0,
			   "edge at t is not strictly after t");
	cr_assert_float_eq(fault_next_edge(fs, NF(fs), 15000, FAULT_NKINDS), 20000, 0);
	cr_assert_float_eq(fault_next_edge(fs, NF(fs), 20000, FAULT_NKINDS), 30000, 0);
	cr_assert_float_eq(fault_next_edge(fs, NF(fs), 30000, FAULT_NKINDS), 40000, 0);
	cr_assert_float_eq(fault_next_edge(fs, NF(fs), 49999, FAULT_NKINDS), 50000, 0);
	cr_assert(isinf(fault_next_edge(fs, NF(fs), 50000, FAULT_NKINDS)));
	cr_assert(isinf(fault_next_edge(fs, 0, 0, FAULT_NKINDS)));
}

Test(fault_timeline, next_edge_per_kind, .timeout = 10)
{
	struct fault fs[] = {
		mk(FAULT_HANG, 10, 20),
		mk(FAULT_DOWN, 15, 30),
		mk(FAULT_DOWN, 40, 50),
	};

	cr_assert_float_eq(fault_next_edge(fs, NF(fs), 0, FAULT_DOWN), 15000, 0);
	cr_assert_float_eq(fault_next_edge(fs, NF(fs), 15000, FAULT_DOWN), 30000, 0);
	cr_assert_float_eq(fault_next_edge(fs, NF(fs), 30000, FAULT_DOWN), 40000, 0);
	cr_assert_float_eq(fault_next_edge(fs, NF(fs), 0, FAULT_HANG), 10000, 0);
	cr_assert(isinf(fault_next_edge(fs, NF(fs), 20000, FAULT_HANG)));
	cr_assert(isinf(fault_next_edge(fs, NF(fs), 0, FAULT_STATUS)));
}

/* ---- decisions ---- */

Test(fault_decide, nothing_active_decides_nothing, .timeout = 10)
{
	struct fault fs[] = { mk(FAULT_HANG, 10, 20), mk(FAULT_SLOW, 10, 20) };
	struct fault_decision d;

	fs[1].add_ms = 100;
	decide(fs, NF(fs), 20000, 10, &d);
	cr_assert_null(d.decider);
	cr_assert_str_eq(d.applied, "");
	cr_assert_float_eq(d.add_ms, 0, 0);
	cr_assert_lt(d.token_ms, 0, "token_ms %g replaces the model's", d.token_ms);
	cr_assert_null(d.rate);
}

Test(fault_decide, decides_at_from_not_at_to, .timeout = 10)
{
	struct fault fs[] = { mk(FAULT_HANG, 10, 20) };
	struct fault_decision d;

	decide(fs, 1, 9999.9, 10, &d);
	cr_assert_null(d.decider);
	decide(fs, 1, 10000, 10, &d);
	cr_assert_eq(d.decider, &fs[0]);
	cr_assert_str_eq(d.applied, "hang");
	decide(fs, 1, 20000, 10, &d);
	cr_assert_null(d.decider);
}

Test(fault_decide, first_listed_wins_on_overlap, .timeout = 10)
{
	struct fault fs[] = { mk(FAULT_STATUS, 0, 100), mk(FAULT_HANG, 50, 100) };
	struct fault_decision d;

	decide(fs, NF(fs), 60000, 10, &d);
	cr_assert_eq(d.decider, &fs[0]);
	cr_assert_str_eq(d.applied, "status");
	fs[0] = mk(FAULT_HANG, 50, 100);
	fs[1] = mk(FAULT_STATUS, 0, 100);
	decide(fs, NF(fs), 60000, 10, &d);
	cr_assert_eq(d.decider, &fs[0]);
	cr_assert_str_eq(d.applied, "hang");
	decide(fs, NF(fs), 40000, 10, &d);
	cr_assert_eq(d.decider, &fs[1], "inactive first fault still decided");
}

Test(fault_decide, slows_add_and_largest_slow_tokens_wins, .timeout = 10)
{
	struct fault fs[] = {
		mk(FAULT_SLOW, 0, 10), mk(FAULT_SLOW_TOKENS, 0, 10),
		mk(FAULT_SLOW, 0, 10), mk(FAULT_SLOW_TOKENS, 0, 10),
		mk(FAULT_SLOW_TOKENS, 0, 10),
	};
	struct fault_decision d;

	fs[0].add_ms = 100;
	fs[1].token_ms = 80;
	fs[2].add_ms = 250;
	fs[3].token_ms = 120;
	fs[4].token_ms = 50;
	decide(fs, NF(fs), 5000, 10, &d);
	cr_assert_null(d.decider);
	cr_assert_float_eq(d.add_ms, 350, 0);
	cr_assert_float_eq(d.token_ms, 120, 0);
	cr_assert_str_eq(d.applied, "slow+slow_tokens+slow+slow_tokens+slow_tokens");
}

Test(fault_decide, slow_then_decider_both_applied, .timeout = 10)
{
	struct fault fs[] = {
		mk(FAULT_SLOW, 0, 10), mk(FAULT_TRUNCATE, 0, 10), mk(FAULT_SLOW, 0, 10),
	};
	struct fault_decision d;

	fs[0].add_ms = 100;
	fs[1].after_tokens = 3;
	fs[2].add_ms = 1000;
	decide(fs, NF(fs), 0, 10, &d);
	cr_assert_eq(d.decider, &fs[1]);
	cr_assert_float_eq(d.add_ms, 100, 0, "a slow after the decider was consulted");
	cr_assert_str_eq(d.applied, "slow+truncate");
}

Test(fault_decide, same_seed_same_draws, .timeout = 10)
{
	struct fault fs[] = { mk(FAULT_STATUS, 0, 100), mk(FAULT_HANG, 0, 100) };
	const struct fault *first[200];
	struct fault_decision d;
	struct rng r;
	int mixed[3] = { 0 };
	int i;

	fs[0].probability = 0.5;
	fs[1].probability = 0.5;
	rng_seed(&r, 2024);
	for (i = 0; i < 200; i++) {
		fault_decide(fs, NF(fs), i * 100.0, 10, &r, &d);
		first[i] = d.decider;
		mixed[d.decider ? (int)(d.decider - fs) + 1 : 0]++;
	}
	cr_assert(mixed[0] > 0 && mixed[1] > 0 && mixed[2] > 0,
		  "none %d, status %d, hang %d", mixed[0], mixed[1], mixed[2]);
	rng_seed(&r, 2024);
	for (i = 0; i < 200; i++) {
		fault_decide(fs, NF(fs), i * 100.0, 10, &r, &d);
		cr_assert_eq(d.decider, first[i], "request %d decided differently", i);
	}
}

Test(fault_decide, probability_share_over_10k, .timeout = 10)
{
	struct fault fs[] = { mk(FAULT_STATUS, 0, 1000) };
	struct fault_decision d;
	struct rng r;
	int hits = 0;
	int i;

	fs[0].probability = 0.3;
	rng_seed(&r, 77);
	for (i = 0; i < 10000; i++) {
		fault_decide(fs, 1, i * 10.0, 10, &r, &d);
		hits += d.decider == &fs[0];
	}
	/* Binomial sd is sqrt(10000 × 0.3 × 0.7) ≈ 46. */
	cr_assert(hits > 2800 && hits < 3200, "%d of 10000 decided", hits);
}

Test(fault_decide, inactive_window_draws_nothing, .timeout = 10)
{
	struct fault fs[] = { mk(FAULT_STATUS, 100, 200) };
	struct fault_decision d;
	struct rng r;
	struct rng fresh;

	fs[0].probability = 0.5;
	rng_seed(&r, 5);
	rng_seed(&fresh, 5);
	fault_decide(fs, 1, 0, 10, &r, &d);
	cr_assert_eq(rng_next(&r), rng_next(&fresh), "an inactive window consumed a draw");
}

Test(fault_rate, rpm_budget_then_429, .timeout = 10)
{
	struct fault fs[] = { mk_rate(0, 600, 5, 0) };
	struct fault_decision d;
	int i;

	for (i = 0; i < 5; i++) {
		decide(fs, 1, 1000, 10, &d);
		cr_assert_null(d.decider, "request %d refused", i + 1);
		cr_assert_eq(d.rate, &fs[0]);
		cr_assert_float_eq(d.rate_requests_left, 4 - i, 0);
		cr_assert_float_eq(d.rate_tokens_left, -1, 0);
	}
	decide(fs, 1, 1000, 10, &d);
	cr_assert_eq(d.decider, &fs[0], "6th request passed");
	cr_assert_str_eq(d.applied, "rate_limit");
	cr_assert_geq(d.retry_after_s, 1);
	cr_assert_float_eq(d.retry_after_s, 12, 0, "one request refills in 60/5 s");
	cr_assert_float_eq(d.rate_requests_left, 0, 0);
	cr_assert_float_eq(d.rate_reset_requests_s, 60, 1e-9);
}

Test(fault_rate, rpm_budget_refills, .timeout = 10)
{
	struct fault fs[] = { mk_rate(0, 600, 5, 0) };
	struct fault_decision d;
	int i;

	for (i = 0; i < 5; i++)
		decide(fs, 1, 1000, 10, &d);
	decide(fs, 1, 13000, 10, &d);
	cr_assert_null(d.decider, "12 s at 5 rpm did not refill one request");
	decide(fs, 1, 13000, 10, &d);
	cr_assert_eq(d.decider, &fs[0], "refilled more than one request");
}

Test(fault_rate, rpm_not_refilled_before_12s, .timeout = 10)
{
	struct fault fs[] = { mk_rate(0, 600, 5, 0) };
	struct fault_decision d;
	int i;

	for (i = 0; i < 5; i++)
		decide(fs, 1, 1000, 10, &d);
	decide(fs, 1, 12999, 10, &d);
	cr_assert_eq(d.decider, &fs[0], "passed before a whole request refilled");
	cr_assert_float_eq(d.retry_after_s, 1, 0, "1 ms to wait rounds up to 1 s");
}

/*
 * A client polling every 100 ms while limited: after 12 s at 5 rpm a whole
 * request has refilled, whatever the steps it arrived in (virtual time lands
 * on exact boundaries).
 */
Test(fault_rate, refill_exact_after_small_steps, .timeout = 10)
{
	struct fault fs[] = { mk_rate(0, 600, 5, 0) };
	struct fault_decision d;
	int i;

	for (i = 0; i < 5; i++)
		decide(fs, 1, 0, 10, &d);
	for (i = 1; i < 120; i++) {
		decide(fs, 1, i * 100.0, 10, &d);
		cr_assert_eq(d.decider, &fs[0], "passed at %d ms", i * 100);
	}
	decide(fs, 1, 12000, 10, &d);
	cr_assert_null(d.decider, "refused at 12 s: %.17g requests left after refills",
		       fs[0].rate.requests);
}

Test(fault_rate, refill_caps_at_rpm, .timeout = 10)
{
	struct fault fs[] = { mk_rate(0, 6000, 5, 0) };
	struct fault_decision d;
	int passed = 0;
	int i;

	decide(fs, 1, 0, 10, &d);
	for (i = 0; i < 10; i++) {
		decide(fs, 1, 3600000, 10, &d);
		passed += d.decider == NULL;
	}
	cr_assert_eq(passed, 5, "an hour idle gave %d requests", passed);
}

Test(fault_rate, tpm_budget_with_token_cost, .timeout = 10)
{
	struct fault fs[] = { mk_rate(0, 600, 0, 100) };
	struct fault_decision d;

	decide(fs, 1, 0, 40, &d);
	cr_assert_null(d.decider);
	cr_assert_float_eq(d.rate_tokens_left, 60, 0);
	cr_assert_float_eq(d.rate_requests_left, -1, 0);
	decide(fs, 1, 0, 40, &d);
	cr_assert_null(d.decider);
	cr_assert_float_eq(d.rate_tokens_left, 20, 0);
	decide(fs, 1, 0, 40, &d);
	cr_assert_eq(d.decider, &fs[0]);
	/* 20 more tokens at 100 per minute take 12 s. */
	cr_assert_float_eq(d.retry_after_s, 12, 0);
	decide(fs, 1, 0, 20, &d);
	cr_assert_null(d.decider, "a cheaper request fits the 20 left");
	decide(fs, 1, 24000, 40, &d);
	cr_assert_null(d.decider, "24 s refilled 40 tokens");
}

Test(fault_rate, cost_above_tpm_waits_a_minute, .timeout = 10)
{
	struct fault fs[] = { mk_rate(0, 600, 0, 100) };
	struct fault_decision d;

	decide(fs, 1, 0, 150, &d);
	cr_assert_eq(d.decider, &fs[0]);
	cr_assert_float_eq(d.retry_after_s, 60, 0);
}

Test(fault_rate, negative_cost_skips_budgets, .timeout = 10)
{
	struct fault fs[] = { mk_rate(0, 600, 1, 10) };
	struct fault_decision d;
	int i;

	for (i = 0; i < 10; i++) {
		decide(fs, 1, 1000, -1, &d);
		cr_assert_null(d.decider, "uncounted request %d refused", i);
		cr_assert_null(d.rate);
	}
	cr_assert_not(fs[0].rate.started, "budget touched by uncounted requests");
	decide(fs, 1, 1000, 5, &d);
	cr_assert_null(d.decider, "the budget was spent by uncounted requests");
}

Test(fault_rate, not_spent_after_a_decider, .timeout = 10)
{
	struct fault fs[] = { mk(FAULT_HANG, 0, 10), mk_rate(0, 600, 1, 0) };
	struct fault_decision d;
	int i;

	for (i = 0; i < 5; i++) {
		decide(fs, NF(fs), 1000, 10, &d);
		cr_assert_eq(d.decider, &fs[0]);
		cr_assert_null(d.rate);
	}
	cr_assert_not(fs[1].rate.started);
	decide(fs, NF(fs), 20000, 10, &d);
	cr_assert_null(d.decider, "rate budget was spent behind the hang");
	decide(fs, NF(fs), 20000, 10, &d);
	cr_assert_eq(d.decider, &fs[1]);
}

Test(fault_rate, spent_before_a_later_decider, .timeout = 10)
{
	struct fault fs[] = { mk_rate(0, 600, 1, 0), mk(FAULT_HANG, 0, 10) };
	struct fault_decision d;

	decide(fs, NF(fs), 1000, 10, &d);
	cr_assert_eq(d.decider, &fs[1]);
	cr_assert_eq(d.rate, &fs[0]);
	decide(fs, NF(fs), 1000, 10, &d);
	cr_assert_eq(d.decider, &fs[0], "budget not spent by the request the hang took");
	cr_assert_str_eq(d.applied, "rate_limit");
}

Test(fault_rate, inactive_window_sets_no_rate, .timeout = 10)
{
	struct fault fs[] = { mk_rate(10, 20, 1, 0) };
	struct fault_decision d;

	decide(fs, 1, 5000, 10, &d);
	cr_assert_null(d.rate);
	cr_assert_not(fs[0].rate.started);
}

/* ---- parsing ---- */

static char err[CFG_ERR_LEN];

static int parse(const char *json, struct fault *f)
{
	cJSON *obj = cJSON_Parse(json);
	int rc;

	cr_assert_not_null(obj, "test JSON does not parse: %s", json);
	err[0] = '\0';
	rc = fault_parse(obj, "conf.json", "providers[0].faults[1]", f, err);
	cJSON_Delete(obj);
	return rc;
}

static void assert_parse_error(const char *json, const char *want)
{
	struct fault f;

	cr_assert_eq(parse(json, &f), -EINVAL, "accepted: %s", json);
	cr_assert(strstr(err, want), "%s\n  error \"%s\"\n  lacks \"%s\"", json, err, want);
}

Test(fault_parse, down_and_hang_defaults, .timeout = 10)
{
	struct fault f;

	cr_assert_eq(parse("{\"kind\":\"down\",\"from_s\":15,\"to_s\":45}", &f), 0, "%s", err);
	cr_assert_eq(f.kind, FAULT_DOWN);
	cr_assert_float_eq(f.from_ms, 15000, 0);
	cr_assert_float_eq(f.to_ms, 45000, 0);
	cr_assert_float_eq(f.probability, 1, 0);
	cr_assert_not(f.injected);
	cr_assert_eq(parse("{\"kind\":\"hang\",\"from_s\":0.5,\"to_s\":1.25,\"probability\":0.4}",
			   &f), 0, "%s", err);
	cr_assert_eq(f.kind, FAULT_HANG);
	cr_assert_float_eq(f.from_ms, 500, 0);
	cr_assert_float_eq(f.to_ms, 1250, 0);
	cr_assert_float_eq(f.probability, 0.4, 0);
}

Test(fault_parse, status_defaults_and_values, .timeout = 10)
{
	struct fault f;

	cr_assert_eq(parse("{\"kind\":\"status\",\"from_s\":1,\"to_s\":2}", &f), 0, "%s", err);
	cr_assert_eq(f.kind, FAULT_STATUS);
	cr_assert_eq(f.status, 503);
	cr_assert_lt(f.retry_after_s, 0, "retry_after_s %g means a header", f.retry_after_s);
	cr_assert_float_eq(f.probability, 1, 0);
	cr_assert_eq(parse("{\"kind\":\"status\",\"status\":429,\"retry_after_s\":2,"
			   "\"from_s\":50,\"to_s\":55,\"probability\":0.5}", &f), 0, "%s", err);
	cr_assert_eq(f.status, 429);
	cr_assert_float_eq(f.retry_after_s, 2, 0);
	cr_assert_float_eq(f.probability, 0.5, 0);
	cr_assert_eq(parse("{\"kind\":\"status\",\"retry_after_s\":0,\"from_s\":1,\"to_s\":2}",
			   &f), 0, "%s", err);
	cr_assert_float_eq(f.retry_after_s, 0, 0);
}

Test(fault_parse, slow_kinds, .timeout = 10)
{
	struct fault f;

	cr_assert_eq(parse("{\"kind\":\"slow\",\"add_ms\":300,\"from_s\":1,\"to_s\":2}", &f), 0,
		     "%s", err);
	cr_assert_eq(f.kind, FAULT_SLOW);
	cr_assert_float_eq(f.add_ms, 300, 0);
	cr_assert_eq(parse("{\"kind\":\"slow_tokens\",\"token_ms\":75,\"from_s\":1,\"to_s\":2}",
			   &f), 0, "%s", err);
	cr_assert_eq(f.kind, FAULT_SLOW_TOKENS);
	cr_assert_float_eq(f.token_ms, 75, 0);
}

Test(fault_parse, after_tokens_kinds, .timeout = 10)
{
	static const struct { const char *name; enum fault_kind kind; } kinds[] = {
		{ "stall", FAULT_STALL }, { "truncate", FAULT_TRUNCATE },
		{ "error_event", FAULT_ERROR_EVENT },
	};
	char json[160];
	struct fault f;
	size_t i;

	for (i = 0; i < NF(kinds); i++) {
		snprintf(json, sizeof(json), "{\"kind\":\"%s\",\"after_tokens\":3,"
			 "\"from_s\":1,\"to_s\":2}", kinds[i].name);
		cr_assert_eq(parse(json, &f), 0, "%s", err);
		cr_assert_eq(f.kind, kinds[i].kind);
		cr_assert_eq(f.after_tokens, 3);
		snprintf(json, sizeof(json), "{\"kind\":\"%s\",\"from_s\":1,\"to_s\":2}",
			 kinds[i].name);
		cr_assert_eq(parse(json, &f), 0, "%s", err);
		cr_assert_eq(f.after_tokens, 0);
	}
}

Test(fault_parse, reset_malformed_rate_limit, .timeout = 10)
{
	struct fault f;

	cr_assert_eq(parse("{\"kind\":\"reset\",\"after_bytes\":100,\"from_s\":1,\"to_s\":2}",
			   &f), 0, "%s", err);
	cr_assert_eq(f.kind, FAULT_RESET);
	cr_assert_eq(f.after_bytes, 100);
	cr_assert_eq(parse("{\"kind\":\"reset\",\"from_s\":1,\"to_s\":2}", &f), 0, "%s", err);
	cr_assert_eq(f.after_bytes, 0);
	cr_assert_eq(parse("{\"kind\":\"malformed\",\"from_s\":1,\"to_s\":2}", &f), 0, "%s", err);
	cr_assert_eq(f.kind, FAULT_MALFORMED);
	cr_assert_eq(parse("{\"kind\":\"rate_limit\",\"rpm\":60,\"from_s\":0,\"to_s\":60}", &f),
		     0, "%s", err);
	cr_assert_eq(f.kind, FAULT_RATE_LIMIT);
	cr_assert_float_eq(f.rpm, 60, 0);
	cr_assert_float_eq(f.tpm, 0, 0);
	cr_assert_not(f.rate.started);
	cr_assert_eq(parse("{\"kind\":\"rate_limit\",\"tpm\":1000,\"from_s\":0,\"to_s\":60}", &f),
		     0, "%s", err);
	cr_assert_float_eq(f.rpm, 0, 0);
	cr_assert_float_eq(f.tpm, 1000, 0);
}

Test(fault_parse, bad_content_violations, .timeout = 10)
{
	static const struct { const char *name; enum contract_violation v; } cases[] = {
		{ "prose", VIOLATION_PROSE }, { "missing_key", VIOLATION_MISSING_KEY },
		{ "wrong_type", VIOLATION_WRONG_TYPE },
	};
	char json[160];
	struct fault f;
	size_t i;

	cr_assert_eq(parse("{\"kind\":\"bad_content\",\"from_s\":1,\"to_s\":2}", &f), 0, "%s",
		     err);
	cr_assert_eq(f.kind, FAULT_BAD_CONTENT);
	cr_assert_eq(f.violation, VIOLATION_PROSE, "prose by default");
	cr_assert_float_eq(f.probability, 1, 0);
	for (i = 0; i < NF(cases); i++) {
		snprintf(json, sizeof(json), "{\"kind\":\"bad_content\",\"violation\":\"%s\","
			 "\"from_s\":1,\"to_s\":2,\"probability\":0.25}", cases[i].name);
		cr_assert_eq(parse(json, &f), 0, "%s", err);
		cr_assert_eq(f.violation, (int)cases[i].v, "%s", cases[i].name);
		cr_assert_float_eq(f.probability, 0.25, 0);
	}
}

Test(fault_parse, bad_content_errors, .timeout = 10)
{
	assert_parse_error("{\"kind\":\"bad_content\",\"violation\":\"rude\",\"from_s\":1,"
			   "\"to_s\":2}",
			   "conf.json: providers[0].faults[1].violation: expected one of prose, "
			   "missing_key, wrong_type, got the string \"rude\"");
	assert_parse_error("{\"kind\":\"bad_content\",\"violation\":1,\"from_s\":1,\"to_s\":2}",
			   "providers[0].faults[1].violation: expected one of");
	assert_parse_error("{\"kind\":\"hang\",\"violation\":\"prose\",\"from_s\":1,\"to_s\":2}",
			   "providers[0].faults[1].violation: not a key of a \"hang\" fault (it "
			   "belongs to \"bad_content\")");
	assert_parse_error("{\"kind\":\"bad_content\",\"status\":500,\"from_s\":1,\"to_s\":2}",
			   "providers[0].faults[1].status: not a key of a \"bad_content\" fault "
			   "(it belongs to \"status\"); a \"bad_content\" fault takes: kind, from_s, "
			   "to_s, probability, violation");
}

Test(fault_parse, negative_from_allowed, .timeout = 10)
{
	struct fault f;

	cr_assert_eq(parse("{\"kind\":\"hang\",\"from_s\":-5,\"to_s\":0}", &f), 0, "%s", err);
	cr_assert_float_eq(f.from_ms, -5000, 0);
	cr_assert_float_eq(f.to_ms, 0, 0);
}

Test(fault_parse, unknown_kind_lists_kinds, .timeout = 10)
{
	assert_parse_error("{\"kind\":\"explode\",\"from_s\":1,\"to_s\":2}",
			   "conf.json: providers[0].faults[1].kind: expected one of down, hang, "
			   "status, slow, slow_tokens, stall, truncate, error_event, reset, "
			   "malformed, rate_limit, bad_content, got the string \"explode\"");
}

Test(fault_parse, missing_kind, .timeout = 10)
{
	assert_parse_error("{\"from_s\":1,\"to_s\":2}",
			   "providers[0].faults[1].kind: missing (required)");
}

Test(fault_parse, key_of_another_kind, .timeout = 10)
{
	assert_parse_error("{\"kind\":\"hang\",\"add_ms\":100,\"from_s\":1,\"to_s\":2}",
			   "conf.json: providers[0].faults[1].add_ms: not a key of a \"hang\" fault "
			   "(it belongs to \"slow\"); a \"hang\" fault takes: kind, from_s, to_s, "
			   "probability");
	assert_parse_error("{\"kind\":\"slow\",\"add_ms\":1,\"status\":500,\"from_s\":1,\"to_s\":2}",
			   "providers[0].faults[1].status: not a key of a \"slow\" fault");
	assert_parse_error("{\"kind\":\"down\",\"rpm\":5,\"from_s\":1,\"to_s\":2}",
			   "providers[0].faults[1].rpm: not a key of a \"down\" fault");
	assert_parse_error("{\"kind\":\"hang\",\"form_s\":1,\"from_s\":1,\"to_s\":2}",
			   "providers[0].faults[1].form_s: unknown key; a \"hang\" fault takes: "
			   "kind, from_s, to_s, probability");
}

Test(fault_parse, slow_needs_add_ms, .timeout = 10)
{
	assert_parse_error("{\"kind\":\"slow\",\"from_s\":1,\"to_s\":2}",
			   "providers[0].faults[1].add_ms: missing (required)");
}

Test(fault_parse, to_not_after_from, .timeout = 10)
{
	assert_parse_error("{\"kind\":\"hang\",\"from_s\":10,\"to_s\":10}",
			   "conf.json: providers[0].faults[1].to_s: expected a time after from_s (10), got 10");
	assert_parse_error("{\"kind\":\"hang\",\"from_s\":10,\"to_s\":5}",
			   "providers[0].faults[1].to_s: expected a time after from_s (10), got 5");
}

Test(fault_parse, times_required_and_numeric, .timeout = 10)
{
	assert_parse_error("{\"kind\":\"hang\",\"to_s\":10}",
			   "providers[0].faults[1].from_s: missing (required)");
	assert_parse_error("{\"kind\":\"hang\",\"from_s\":1}",
			   "providers[0].faults[1].to_s: missing (required)");
	assert_parse_error("{\"kind\":\"hang\",\"from_s\":\"1\",\"to_s\":10}",
			   "providers[0].faults[1].from_s: expected seconds after t0");
}

Test(fault_parse, probability_bounds, .timeout = 10)
{
	assert_parse_error("{\"kind\":\"hang\",\"from_s\":1,\"to_s\":2,\"probability\":0}",
			   "providers[0].faults[1].probability: expected a number above 0 and at most 1");
	assert_parse_error("{\"kind\":\"hang\",\"from_s\":1,\"to_s\":2,\"probability\":1.5}",
			   "providers[0].faults[1].probability: expected a number above 0 and at most 1, got 1.5");
	assert_parse_error("{\"kind\":\"hang\",\"from_s\":1,\"to_s\":2,\"probability\":-0.5}",
			   "providers[0].faults[1].probability:");
}

Test(fault_parse, probability_on_down_refused, .timeout = 10)
{
	struct fault f;

	assert_parse_error("{\"kind\":\"down\",\"from_s\":1,\"to_s\":2,\"probability\":0.5}",
			   "providers[0].faults[1].probability: not supported for kind \"down\"");
	cr_assert_eq(parse("{\"kind\":\"down\",\"from_s\":1,\"to_s\":2,\"probability\":1}", &f),
		     0, "%s", err);
}

Test(fault_parse, rate_limit_needs_a_budget, .timeout = 10)
{
	assert_parse_error("{\"kind\":\"rate_limit\",\"from_s\":1,\"to_s\":2}",
			   "conf.json: providers[0].faults[1]: a rate_limit fault needs rpm or tpm");
	assert_parse_error("{\"kind\":\"rate_limit\",\"rpm\":0,\"tpm\":0,\"from_s\":1,\"to_s\":2}",
			   "providers[0].faults[1]: a rate_limit fault needs rpm or tpm");
}

Test(fault_parse, status_out_of_range, .timeout = 10)
{
	assert_parse_error("{\"kind\":\"status\",\"status\":600,\"from_s\":1,\"to_s\":2}",
			   "providers[0].faults[1].status: expected a whole number from 400 to 599, got 600");
	assert_parse_error("{\"kind\":\"status\",\"status\":200,\"from_s\":1,\"to_s\":2}",
			   "providers[0].faults[1].status: expected a whole number from 400 to 599, got 200");
}

Test(fault_parse, not_an_object, .timeout = 10)
{
	assert_parse_error("\"hang\"", "conf.json: providers[0].faults[1]: expected a fault object");
}

Test(fault_misc, kind_names, .timeout = 10)
{
	cr_assert_str_eq(fault_kind_name(FAULT_DOWN), "down");
	cr_assert_str_eq(fault_kind_name(FAULT_SLOW_TOKENS), "slow_tokens");
	cr_assert_str_eq(fault_kind_name(FAULT_ERROR_EVENT), "error_event");
	cr_assert_str_eq(fault_kind_name(FAULT_RATE_LIMIT), "rate_limit");
	cr_assert_str_eq(fault_kind_name(FAULT_BAD_CONTENT), "bad_content");
	cr_assert_str_eq(fault_kind_name(FAULT_NKINDS), "?");
}

Test(fault_misc, to_json_status, .timeout = 10)
{
	struct fault f = mk(FAULT_STATUS, 10, 20);
	cJSON *o = cJSON_CreateObject();

	f.status = 502;
	fault_to_json(&f, 15000, o);
	cr_assert_str_eq(cJSON_GetObjectItem(o, "kind")->valuestring, "status");
	cr_assert_float_eq(cJSON_GetObjectItem(o, "from_s")->valuedouble, 10, 0);
	cr_assert_float_eq(cJSON_GetObjectItem(o, "to_s")->valuedouble, 20, 0);
	cr_assert_float_eq(cJSON_GetObjectItem(o, "status")->valuedouble, 502, 0);
	cr_assert(cJSON_IsTrue(cJSON_GetObjectItem(o, "active")));
	cr_assert_null(cJSON_GetObjectItem(o, "retry_after_s"), "no retry-after was set");
	cJSON_Delete(o);
}

Test(fault_misc, to_json_bad_content_and_group, .timeout = 10)
{
	struct fault f = mk(FAULT_BAD_CONTENT, 10, 20);
	cJSON *o = cJSON_CreateObject();

	f.violation = VIOLATION_WRONG_TYPE;
	fault_to_json(&f, 5000, o);
	cr_assert_str_eq(cJSON_GetObjectItem(o, "kind")->valuestring, "bad_content");
	cr_assert_str_eq(cJSON_GetObjectItem(o, "violation")->valuestring, "wrong_type");
	cr_assert(cJSON_IsFalse(cJSON_GetObjectItem(o, "active")));
	cr_assert_null(cJSON_GetObjectItem(o, "group"), "a provider's own fault");
	cJSON_Delete(o);
	o = cJSON_CreateObject();
	f.group = "eu-west";
	fault_to_json(&f, 5000, o);
	cr_assert_str_eq(cJSON_GetObjectItem(o, "group")->valuestring, "eu-west");
	cJSON_Delete(o);
}

Test(fault_decide, bad_content_decides, .timeout = 10)
{
	struct fault fs[] = {
		mk(FAULT_SLOW, 0, 100),
		mk(FAULT_BAD_CONTENT, 0, 100),
		mk(FAULT_HANG, 0, 100),
	};
	struct fault_decision d;

	fs[0].add_ms = 50;
	decide(fs, NF(fs), 1000, 10, &d);
	cr_assert_eq(d.decider, &fs[1], "the first deciding fault wins");
	cr_assert_float_eq(d.add_ms, 50, 0, "a slow before it still applies");
	cr_assert_str_eq(d.applied, "slow+bad_content");
}

/* ---- pruning expired injections ---- */

static struct fault mk_injected(enum fault_kind kind, double from_s, double to_s)
{
	struct fault f = mk(kind, from_s, to_s);

	f.injected = true;
	return f;
}

Test(fault_prune, drops_only_injected_faults_that_ended, .timeout = 10)
{
	struct fault faults[] = {
		mk_injected(FAULT_HANG, 0, 10),		/* ends at now: dropped */
		mk_injected(FAULT_SLOW, 0, 10.001),	/* still open: kept */
		mk_injected(FAULT_DOWN, 0, 5),		/* long over: dropped */
		mk_injected(FAULT_STATUS, 20, 30),	/* not started: kept */
		mk(FAULT_STALL, 0, 1),			/* the config's, over: kept */
	};
	size_t n = fault_prune_expired(faults, NF(faults), 10000);

	cr_assert_eq(n, 3);
	cr_assert_eq(faults[0].kind, FAULT_SLOW, "the order of the rest is kept");
	cr_assert_eq(faults[1].kind, FAULT_STATUS);
	cr_assert_eq(faults[2].kind, FAULT_STALL);
	cr_assert_not(faults[2].injected);
}

Test(fault_prune, nothing_to_drop_leaves_the_list, .timeout = 10)
{
	struct fault faults[] = {
		mk_injected(FAULT_HANG, 0, 10),
		mk(FAULT_DOWN, -5, -1),
	};

	cr_assert_eq(fault_prune_expired(faults, NF(faults), 9999.999), 2);
	cr_assert_eq(faults[0].kind, FAULT_HANG);
	cr_assert_eq(faults[1].kind, FAULT_DOWN);
	cr_assert_eq(fault_prune_expired(NULL, 0, 0), 0);
}

/* However many injections come and go, the list holds only the live ones. */
Test(fault_prune, list_stays_bounded_under_many_injections, .timeout = 10)
{
	struct fault faults[8];
	size_t n = 0;
	int i;

	for (i = 0; i < 10000; i++) {
		double now_ms = i * 100.0;

		n = fault_prune_expired(faults, n, now_ms);
		cr_assert_lt(n, NF(faults), "%zu faults at injection %d", n, i);
		/* each lasts 0.35 s: at most 4 are live at once */
		faults[n++] = mk_injected(FAULT_SLOW, now_ms / 1000, now_ms / 1000 + 0.35);
	}
	cr_assert_leq(n, 4);
}
