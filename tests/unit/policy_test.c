/*
 * Unit tests for gateway/policy.c: every decision a chat request goes
 * through, driven with a fake clock and no gateway process — the config
 * loaded from JSON as the gateway loads it, the router's tables and
 * breakers real, and events fed in as the shell (or a simulator) would:
 * arrival, attempt results of each failure class, backoff and hedge
 * timers, cancels, and the batch queue's drains.
 */
#include <criterion/criterion.h>
#include <curl/curl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gateway/config.h"
#include "gateway/policy.h"
#include "gateway/router.h"

#define T0 1000.0	/* the fake clock's start */

/* A gateway's worth of policy environment, with no gateway. */
struct fx {
	struct gw_config cfg;
	struct router router;
	struct provider_stats pstats[4];
	struct rng rng_retry;
	struct rng rng_breaker;
	struct policy_env env;
	struct router_listener listener;
	unsigned changes;		/* breaker state changes the listener saw */
	enum breaker_state last_to;
};

static void on_change(void *arg, struct gw_target *t, const struct breaker_change *chg,
		     const struct change_origin *origin)
{
	(void)origin;
	struct fx *f = arg;

	(void)t;
	f->changes++;
	f->last_to = chg->to;
}

/* Loads json (single quotes for double) as the gateway's config, and builds the router at T0. */
static void fx_init(struct fx *f, const char *json)
{
	char dir[64];
	char file[128];
	char err[CFG_ERR_LEN];
	char *text = strdup(json);
	FILE *fp;
	size_t i;

	cr_assert_not_null(text);
	for (i = 0; text[i]; i++) {
		if (text[i] == '\'')
			text[i] = '"';
	}
	memset(f, 0, sizeof(*f));
	snprintf(dir, sizeof(dir), "/tmp/fl-policy-test-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(file, sizeof(file), "%s/gateway.json", dir);
	fp = fopen(file, "w");
	cr_assert_not_null(fp);
	cr_assert(fputs(text, fp) >= 0);
	cr_assert_eq(fclose(fp), 0);
	err[0] = '\0';
	cr_assert_eq(gw_config_load(file, false, &f->cfg, err), 0, "%s", err);
	unlink(file);
	rmdir(dir);
	free(text);
	cr_assert_eq(router_init(&f->router, &f->cfg, T0), 0);
	rng_seed_stream(&f->rng_retry, 7, 1);
	rng_seed_stream(&f->rng_breaker, 7, 2);
	f->listener = (struct router_listener){ .on_change = on_change, .arg = f };
	router_listen(&f->router, &f->listener);
	f->env = (struct policy_env){
		.router = &f->router,
		.cfg = &f->cfg,
		.pstats = f->pstats,
		.rng_retry = &f->rng_retry,
		.rng_breaker = &f->rng_breaker,
	};
}

static void fx_free(struct fx *f)
{
	router_free(&f->router);
	gw_config_free(&f->cfg);
}

/* Providers a and b (c when three), no jitter, and an alias "chat" over them in order. */
#define PROVIDERS \
	"'providers':{'a':{'base_url':'http://127.0.0.1:1/v1'}," \
	"'b':{'base_url':'http://127.0.0.1:2/v1'},'c':{'base_url':'http://127.0.0.1:3/v1'}}"
#define CHAIN "'targets':[{'provider':'a','model':'m'},{'provider':'b','model':'m'}," \
	"{'provider':'c','model':'m'}]"
#define NOJITTER "'breaker':{'cooldown_jitter':0,'consecutive_failures':2}"

static const char plain[] = "{" PROVIDERS "," NOJITTER ",'models':{'chat':{" CHAIN "}}}";

static struct gw_route *chat(struct fx *f)
{
	struct gw_route *rt = router_find(&f->router, "chat");

	cr_assert_not_null(rt);
	return rt;
}

/* An interactive, non-streaming request arriving at now with a 30 s deadline. */
static struct policy_action arrive(struct fx *f, struct policy_state *st, double now)
{
	struct gw_route *rt = chat(f);
	unsigned nlegs = rt->alias->hedge.enabled ? 1 + rt->alias->hedge.max : 1;

	return policy_arrive(&f->env, st, rt, NULL, false, false, false, nlegs,
			     now + f->cfg.deadline_ms, now);
}

/* Asserts a is a START on provider name in slot, and marks its transfer out. */
static void expect_start(struct policy_state *st, struct policy_action a, const char *name,
			 unsigned slot)
{
	cr_assert_eq(a.kind, POLICY_START, "kind %d, expected a START on %s", a.kind, name);
	cr_assert_str_eq(a.t->prov->name, name);
	cr_assert_eq(a.slot, slot);
	policy_started(st, a.slot);
}

/* Ends leg slot with facts up at now (its duration now - start). */
static struct policy_action end_leg(struct fx *f, struct policy_state *st, unsigned slot,
				    struct upstream_facts up, double retry_after_ms, double now)
{
	struct policy_result r = {
		.ms = now - st->legs[slot].start_ms,
		.up = up,
		.retry_after_ms = retry_after_ms,
	};

	policy_leg_off(st, slot);
	return policy_on_result(&f->env, st, slot, &r, policy_classify(st, &r), now);
}

static const struct upstream_facts ok = { .connected = true, .status = 200, .body_valid = true };
static const struct upstream_facts http503 = { .connected = true, .status = 503 };
static const struct upstream_facts refused = { .curl_code = CURLE_COULDNT_CONNECT };

Test(policy, first_target_then_success_passes, .timeout = 10)
{
	struct fx f;
	struct policy_state st;
	struct policy_action a;

	fx_init(&f, plain);
	a = arrive(&f, &st, T0);
	expect_start(&st, a, "a", 0);
	cr_assert_float_eq(a.timeout_ms, 10000, 1e-9, "the provider's timeout_ms");
	cr_assert_float_eq(a.connect_timeout_ms, 2000, 1e-9);
	cr_assert_lt(a.hedge_after_ms, 0, "no hedging configured");
	cr_assert(a.rerouted);
	cr_assert_eq(st.budget.attempts, 1);
	a = end_leg(&f, &st, 0, ok, -1, T0 + 40);
	cr_assert_eq(a.kind, POLICY_PASS);
	cr_assert_eq(a.slot, 0);
	cr_assert_str_eq(a.t->prov->name, "a");
	cr_assert_eq(chat(&f)->targets[0]->br.totals.requests, 1, "the breaker took it");
	cr_assert_eq(chat(&f)->targets[0]->br.totals.failures, 0, "as a success");
	cr_assert_eq(chat(&f)->targets[0]->lat.n, 1, "its latency remembered for hedging");
	policy_state_free(&st);
	fx_free(&f);
}

/* Each failure class fails over to the next target, noted by name. */
Test(policy, fails_over_on_each_failure_class, .timeout = 10)
{
	static const struct {
		struct upstream_facts up;
		const char *name;
	} cases[] = {
		{ { .curl_code = CURLE_COULDNT_CONNECT }, "refused" },
		{ { .curl_code = CURLE_RECV_ERROR, .connected = true }, "reset" },
		{ { .curl_code = CURLE_OPERATION_TIMEDOUT, .connected = true, .cut = true },
		  "timeout" },
		{ { .connected = true, .status = 500 }, "http_5xx" },
		{ { .connected = true, .status = 429 }, "http_429" },
		{ { .connected = true, .status = 408 }, "http_408" },
		{ { .connected = true, .status = 200, .body_valid = false }, "invalid_body" },
		{ { .connected = true, .status = 302 }, "bad_status" },
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct fx f;
		struct policy_state st;
		struct policy_action a;

		fx_init(&f, plain);
		expect_start(&st, arrive(&f, &st, T0), "a", 0);
		a = end_leg(&f, &st, 0, cases[i].up, -1, T0 + 10);
		expect_start(&st, a, "b", 0);
		cr_assert(a.rerouted, "%s: back to routing", cases[i].name);
		cr_assert_eq(st.nnotes, 1, "%s", cases[i].name);
		cr_assert_str_eq(st.notes[0].outcome, cases[i].name);
		cr_assert_str_eq(st.notes[0].t->prov->name, "a");
		cr_assert_float_eq(st.notes[0].ms, 10, 1e-9);
		cr_assert_eq(st.budget.attempts, 2);
		cr_assert_eq(chat(&f)->targets[0]->br.totals.failures, 1,
			     "%s: held against a's breaker", cases[i].name);
		cr_assert_eq(chat(&f)->targets[0]->failed_slow, cases[i].up.cut,
			     "%s: slow only when cut", cases[i].name);
		policy_state_free(&st);
		fx_free(&f);
	}
}

/* A 4xx other than 408/429 is the client's: passed through, no failover. */
Test(policy, client_error_passes_through, .timeout = 10)
{
	struct fx f;
	struct policy_state st;
	struct policy_action a;

	fx_init(&f, plain);
	expect_start(&st, arrive(&f, &st, T0), "a", 0);
	a = end_leg(&f, &st, 0, (struct upstream_facts){ .connected = true, .status = 400 }, -1,
		    T0 + 5);
	cr_assert_eq(a.kind, POLICY_PASS);
	cr_assert_eq(st.budget.attempts, 1);
	policy_state_free(&st);
	fx_free(&f);
}

/* Every target failed after being reached: 502 upstream_error, every attempt noted. */
Test(policy, chain_exhausted_answers_502, .timeout = 10)
{
	struct fx f;
	struct policy_state st;
	struct policy_action a;

	fx_init(&f, plain);
	expect_start(&st, arrive(&f, &st, T0), "a", 0);
	expect_start(&st, end_leg(&f, &st, 0, http503, -1, T0 + 1), "b", 0);
	expect_start(&st, end_leg(&f, &st, 0, http503, -1, T0 + 2), "c", 0);
	a = end_leg(&f, &st, 0, http503, -1, T0 + 3);
	cr_assert_eq(a.kind, POLICY_ANSWER);
	cr_assert_eq(a.error, POLICY_ERR_FINAL);
	cr_assert_eq(a.status, 502);
	cr_assert_str_eq(a.code, "upstream_error");
	cr_assert_float_eq(a.retry_after_s, 0, 0, "no Retry-After on a 502");
	cr_assert_eq(st.nnotes, 3);
	policy_state_free(&st);
	fx_free(&f);
}

/* Only refusals: 503 all_providers_unavailable. */
Test(policy, all_refused_answers_503, .timeout = 10)
{
	struct fx f;
	struct policy_state st;
	struct policy_action a;

	fx_init(&f, plain);
	expect_start(&st, arrive(&f, &st, T0), "a", 0);
	expect_start(&st, end_leg(&f, &st, 0, refused, -1, T0 + 1), "b", 0);
	expect_start(&st, end_leg(&f, &st, 0, refused, -1, T0 + 2), "c", 0);
	a = end_leg(&f, &st, 0, refused, -1, T0 + 3);
	cr_assert_eq(a.kind, POLICY_ANSWER);
	cr_assert_eq(a.status, 503);
	cr_assert_str_eq(a.code, "all_providers_unavailable");
	policy_state_free(&st);
	fx_free(&f);
}

/* max_attempts caps the attempts across the chain. */
Test(policy, max_attempts_ends_the_chain, .timeout = 10)
{
	struct fx f;
	struct policy_state st;
	struct policy_action a;

	fx_init(&f, "{" PROVIDERS "," NOJITTER ",'models':{'chat':{" CHAIN ",'max_attempts':2}}}");
	expect_start(&st, arrive(&f, &st, T0), "a", 0);
	expect_start(&st, end_leg(&f, &st, 0, http503, -1, T0 + 1), "b", 0);
	a = end_leg(&f, &st, 0, http503, -1, T0 + 2);
	cr_assert_eq(a.kind, POLICY_ANSWER);
	cr_assert_eq(a.status, 502);
	cr_assert_eq(st.budget.attempts, 2);
	policy_state_free(&st);
	fx_free(&f);
}

#define RETRYING "{" PROVIDERS ",'breaker':{'cooldown_jitter':0,'consecutive_failures':100}," \
	"'models':{'chat':{" CHAIN \
	",'max_attempts':6,'retry':{'max_retries':2,'base_ms':100,'cap_ms':1000}%s}}}"

/* A failure with retries left waits a jittered backoff, then tries the same target. */
Test(policy, retries_the_same_target_after_a_backoff, .timeout = 10)
{
	struct fx f;
	struct policy_state st;
	struct policy_action a;
	char json[1024];

	snprintf(json, sizeof(json), RETRYING, "");
	fx_init(&f, json);
	expect_start(&st, arrive(&f, &st, T0), "a", 0);
	a = end_leg(&f, &st, 0, http503, -1, T0 + 10);
	cr_assert_eq(a.kind, POLICY_BACKOFF);
	cr_assert_str_eq(a.t->prov->name, "a");
	cr_assert(a.delay_ms >= 0 && a.delay_ms <= 100, "full jitter under base_ms: %g", a.delay_ms);
	cr_assert_eq(st.retries_here, 1);
	a = policy_backoff_fired(&f.env, &st, T0 + 10 + a.delay_ms);
	expect_start(&st, a, "a", 0);
	cr_assert_not(a.rerouted, "a retry does not go back to routing");
	/* The second retry's backoff is under 2 × base_ms. */
	a = end_leg(&f, &st, 0, http503, -1, T0 + 300);
	cr_assert_eq(a.kind, POLICY_BACKOFF);
	cr_assert(a.delay_ms <= 200, "%g", a.delay_ms);
	expect_start(&st, policy_backoff_fired(&f.env, &st, T0 + 500), "a", 0);
	/* Retries used up: the next target. */
	expect_start(&st, end_leg(&f, &st, 0, http503, -1, T0 + 600), "b", 0);
	cr_assert_eq(st.retries_here, 0);
	cr_assert_eq(st.budget.attempts, 4);
	cr_assert_eq(st.nnotes, 3);
	policy_state_free(&st);
	fx_free(&f);
}

/* A Retry-After is waited exactly, even past cap_ms. */
Test(policy, retry_after_sets_the_wait, .timeout = 10)
{
	struct fx f;
	struct policy_state st;
	struct policy_action a;
	char json[1024];

	snprintf(json, sizeof(json), RETRYING, "");
	fx_init(&f, json);
	expect_start(&st, arrive(&f, &st, T0), "a", 0);
	a = end_leg(&f, &st, 0, (struct upstream_facts){ .connected = true, .status = 429 }, 1500,
		    T0 + 10);
	cr_assert_eq(a.kind, POLICY_BACKOFF);
	cr_assert_float_eq(a.delay_ms, 1500, 1e-9);
	policy_state_free(&st);
	fx_free(&f);
}

/* A Retry-After past the deadline: no retry, the next target. */
Test(policy, retry_that_does_not_fit_moves_on, .timeout = 10)
{
	struct fx f;
	struct policy_state st;
	char json[1024];

	snprintf(json, sizeof(json), RETRYING, "");
	fx_init(&f, json);
	expect_start(&st, arrive(&f, &st, T0), "a", 0);
	expect_start(&st, end_leg(&f, &st, 0, http503, 60000, T0 + 10), "b", 0);
	policy_state_free(&st);
	fx_free(&f);
}

/* The retry budget's bucket empty: no retry (counted), the next target. */
Test(policy, retry_budget_exhausted_moves_on, .timeout = 10)
{
	struct fx f;
	struct policy_state st;
	struct policy_action a;
	char json[1024];

	snprintf(json, sizeof(json), RETRYING,
		 ",'budget':{'ratio':0,'min_per_second':0,'burst':1}");
	fx_init(&f, json);
	expect_start(&st, arrive(&f, &st, T0), "a", 0);
	a = end_leg(&f, &st, 0, http503, -1, T0 + 10);
	cr_assert_eq(a.kind, POLICY_BACKOFF, "the one token");
	expect_start(&st, policy_backoff_fired(&f.env, &st, T0 + 200), "a", 0);
	a = end_leg(&f, &st, 0, http503, -1, T0 + 300);
	expect_start(&st, a, "b", 0);
	cr_assert_str_eq(a.why, "no budget for a retry");
	cr_assert_eq(chat(&f)->exhausted[0], 1);
	policy_state_free(&st);
	fx_free(&f);
}

/* The target's breaker opened during the backoff: skipped as open, the next target. */
Test(policy, backoff_onto_an_open_breaker_moves_on, .timeout = 10)
{
	struct fx f;
	struct policy_state st;
	struct policy_action a;
	struct breaker_change chg;
	char json[1024];

	snprintf(json, sizeof(json), RETRYING, "");
	fx_init(&f, json);
	expect_start(&st, arrive(&f, &st, T0), "a", 0);
	a = end_leg(&f, &st, 0, http503, -1, T0 + 10);
	cr_assert_eq(a.kind, POLICY_BACKOFF);
	breaker_trip(&chat(&f)->targets[0]->br, T0 + 20, "test", &f.rng_breaker, &chg);
	a = policy_backoff_fired(&f.env, &st, T0 + 110);
	expect_start(&st, a, "b", 0);
	cr_assert(a.rerouted);
	cr_assert_str_eq(st.notes[st.nnotes - 1].outcome, "breaker_open");
	policy_state_free(&st);
	fx_free(&f);
}

/* Failures open the breaker (through the router's listeners); the next request skips it. */
Test(policy, breaker_opens_and_is_skipped, .timeout = 10)
{
	struct fx f;
	struct policy_state st;
	struct policy_action a;
	int i;

	fx_init(&f, plain);
	for (i = 0; i < 2; i++) {
		expect_start(&st, arrive(&f, &st, T0 + i), "a", 0);
		expect_start(&st, end_leg(&f, &st, 0, http503, -1, T0 + i), "b", 0);
		cr_assert_eq(end_leg(&f, &st, 0, ok, -1, T0 + i).kind, POLICY_PASS);
		policy_state_free(&st);
	}
	cr_assert_eq(chat(&f)->targets[0]->br.state, BREAKER_OPEN);
	cr_assert_eq(f.changes, 1, "the listener heard the trip");
	cr_assert_eq(f.last_to, BREAKER_OPEN);
	cr_assert_eq(f.router.breaker_gen, 1);
	cr_assert_eq(chat(&f)->targets[0]->transitions[BREAKER_CLOSED][BREAKER_OPEN], 1);
	a = arrive(&f, &st, T0 + 10);
	expect_start(&st, a, "b", 0);
	cr_assert_eq(st.skipped, 1);
	cr_assert_str_eq(st.notes[0].outcome, "breaker_open");
	cr_assert(isnan(st.notes[0].ms));
	policy_state_free(&st);
	fx_free(&f);
}

/*
 * A watchdog cut that the deadline capped is the deadline's, not the
 * provider's: not held against its breaker, and the answer is a 504.
 */
Test(policy, deadline_cut_is_not_held_and_answers_504, .timeout = 10)
{
	struct fx f;
	struct policy_state st;
	struct policy_action a;
	struct gw_route *rt;

	fx_init(&f, plain);
	rt = chat(&f);
	a = policy_arrive(&f.env, &st, rt, NULL, false, false, false, 1, T0 + 500, T0);
	expect_start(&st, a, "a", 0);
	cr_assert_float_eq(a.timeout_ms, 500, 1e-9, "the deadline left, under timeout_ms");
	cr_assert(st.legs[0].capped);
	a = end_leg(&f, &st, 0,
		    (struct upstream_facts){ .curl_code = CURLE_OPERATION_TIMEDOUT, .cut = true,
					     .connected = true }, -1, T0 + 500);
	cr_assert_eq(a.kind, POLICY_ANSWER);
	cr_assert_eq(a.status, 504);
	cr_assert_str_eq(a.code, "deadline_exceeded");
	cr_assert_eq(rt->targets[0]->br.totals.requests, 0, "not recorded");
	cr_assert_not(rt->targets[0]->failed_slow);
	policy_state_free(&st);
	fx_free(&f);
}

/* Time left for the attempt but a cut at a share ≥ CAPPED_SHARE: the provider's timeout. */
Test(policy, provider_timeout_is_held, .timeout = 10)
{
	struct fx f;
	struct policy_state st;
	struct policy_action a;

	fx_init(&f, "{" PROVIDERS "," NOJITTER ",'models':{'chat':{" CHAIN "}}}");
	a = policy_arrive(&f.env, &st, chat(&f), NULL, false, false, false, 1, T0 + 9500, T0);
	expect_start(&st, a, "a", 0);
	cr_assert_float_eq(a.timeout_ms, 9500, 1e-9);
	cr_assert_not(st.legs[0].capped, "9500 ≥ 0.9 × 10000");
	a = end_leg(&f, &st, 0,
		    (struct upstream_facts){ .curl_code = CURLE_OPERATION_TIMEDOUT, .cut = true,
					     .connected = true }, -1, T0 + 9500);
	cr_assert_eq(a.kind, POLICY_ANSWER, "no time left for b");
	cr_assert_eq(a.status, 504);
	cr_assert_eq(chat(&f)->targets[0]->br.totals.failures, 1, "held against a");
	cr_assert(chat(&f)->targets[0]->failed_slow);
	policy_state_free(&st);
	fx_free(&f);
}

/* No deadline left at arrival: none can start, a 504 at once. */
Test(policy, no_time_left_answers_504, .timeout = 10)
{
	struct fx f;
	struct policy_state st;
	struct policy_action a;

	fx_init(&f, plain);
	a = policy_arrive(&f.env, &st, chat(&f), NULL, false, false, false, 1, T0 + 0.5, T0);
	cr_assert_eq(a.kind, POLICY_ANSWER);
	cr_assert_eq(a.status, 504);
	cr_assert_eq(st.budget.attempts, 0);
	policy_state_free(&st);
	fx_free(&f);
}

/* A streaming attempt is capped by first_token_timeout_ms until its commit. */
Test(policy, stream_attempt_takes_the_first_token_cap, .timeout = 10)
{
	struct fx f;
	struct policy_state st;
	struct policy_action a;

	fx_init(&f, plain);
	a = policy_arrive(&f.env, &st, chat(&f), NULL, false, true, false, 1, T0 + 30000, T0);
	expect_start(&st, a, "a", 0);
	cr_assert_float_eq(a.timeout_ms, f.cfg.first_token_timeout_ms, 1e-9);
	cr_assert_not(st.legs[0].capped);
	cr_assert_not(policy_on_commit(&f.env, &st, 0, T0 + 100), "not a hedge");
	cr_assert(st.committed);
	policy_leg_off(&st, 0);
	policy_on_stream_end(&f.env, &st, 0, ATTEMPT_FAIL_NONE, 100, T0 + 900);
	cr_assert_eq(chat(&f)->targets[0]->br.totals.requests, 1);
	cr_assert_eq(chat(&f)->targets[0]->br.totals.failures, 0);
	policy_state_free(&st);
	fx_free(&f);
}

/* The gateway's own failure: not an attempt, not held, 503 gateway_overloaded. */
Test(policy, local_failure_answers_overloaded, .timeout = 10)
{
	struct fx f;
	struct policy_state st;
	struct policy_action a;
	struct policy_result r = { .local = true, .retry_after_ms = -1 };

	fx_init(&f, plain);
	expect_start(&st, arrive(&f, &st, T0), "a", 0);
	policy_leg_off(&st, 0);
	a = policy_on_result(&f.env, &st, 0, &r, (struct attempt_class){ 0 }, T0 + 1);
	cr_assert_eq(a.kind, POLICY_ANSWER);
	cr_assert_eq(a.error, POLICY_ERR_OVERLOADED);
	cr_assert_eq(a.status, 503);
	cr_assert_str_eq(a.code, "gateway_overloaded");
	cr_assert_float_eq(a.retry_after_s, 1, 0);
	cr_assert_eq(st.budget.attempts, 0, "it never left: no attempt");
	cr_assert_eq(chat(&f)->targets[0]->br.totals.requests, 0);
	policy_state_free(&st);
	fx_free(&f);
}

/* A transfer that could not start is uncounted; the caller answers when nothing else is out. */
Test(policy, start_failure_is_uncounted, .timeout = 10)
{
	struct fx f;
	struct policy_state st;
	struct policy_action a;

	fx_init(&f, plain);
	a = arrive(&f, &st, T0);
	cr_assert_eq(a.kind, POLICY_START);
	cr_assert_eq(st.budget.attempts, 1);
	cr_assert(policy_start_failed(&st, a.slot));
	cr_assert_eq(st.budget.attempts, 0);
	cr_assert_eq(st.nactive, 0);
	policy_state_free(&st);
	fx_free(&f);
}

/* x-faultline-no-reroute: a delivered attempt is not sent again; one never delivered is. */
Test(policy, no_reroute_after_a_delivery, .timeout = 10)
{
	struct fx f;
	struct policy_state st;
	struct policy_action a;

	fx_init(&f, plain);
	a = policy_arrive(&f.env, &st, chat(&f), NULL, false, false, true, 1, T0 + 30000, T0);
	expect_start(&st, a, "a", 0);
	expect_start(&st, end_leg(&f, &st, 0, refused, -1, T0 + 1), "b", 0);
	a = end_leg(&f, &st, 0, http503, -1, T0 + 2);
	cr_assert_eq(a.kind, POLICY_ANSWER);
	cr_assert_eq(a.status, 502);
	cr_assert_str_eq(a.why, "no reroute after a delivered attempt");
	policy_state_free(&st);
	fx_free(&f);
}

/* Trips every target of the chat alias at now. */
static void trip_all(struct fx *f, double now)
{
	struct gw_route *rt = chat(f);
	struct breaker_change chg;
	size_t i;

	for (i = 0; i < rt->ntargets; i++) {
		breaker_trip(&rt->targets[i]->br, now, "test", &f->rng_breaker, &chg);
		router_breaker_changed(&f->router, rt->targets[i], &chg);
	}
}

/* Every target open, least_recently_failed: each tried anyway, oldest failure first. */
Test(policy, every_target_open_forces_least_recently_failed, .timeout = 10)
{
	struct fx f;
	struct policy_state st;
	struct policy_action a;

	fx_init(&f, plain);
	trip_all(&f, T0);
	chat(&f)->targets[0]->br.last_failure_ms = T0 - 10;
	chat(&f)->targets[1]->br.last_failure_ms = T0 - 30;
	chat(&f)->targets[2]->br.last_failure_ms = T0 - 20;
	a = arrive(&f, &st, T0 + 1);
	expect_start(&st, a, "b", 0);
	cr_assert(a.forced);
	cr_assert_eq(st.nnotes, 2, "b's skip is dropped: it is being tried");
	expect_start(&st, end_leg(&f, &st, 0, refused, -1, T0 + 2), "c", 0);
	expect_start(&st, end_leg(&f, &st, 0, refused, -1, T0 + 3), "a", 0);
	a = end_leg(&f, &st, 0, refused, -1, T0 + 4);
	cr_assert_eq(a.kind, POLICY_ANSWER);
	cr_assert_eq(a.status, 503);
	cr_assert_float_eq(a.retry_after_s, 0, 0, "attempts were made: no promise");
	policy_state_free(&st);
	fx_free(&f);
}

/* Every target open, fail_fast: 503 with Retry-After to the first cooldown's end. */
Test(policy, every_target_open_fail_fast_retry_after, .timeout = 10)
{
	struct fx f;
	struct policy_state st;
	struct policy_action a;

	fx_init(&f, "{" PROVIDERS ",'breaker':{'cooldown_jitter':0,'cooldown_ms':4200,"
		    "'when_all_open':'fail_fast'},'models':{'chat':{" CHAIN "}}}");
	trip_all(&f, T0);
	a = arrive(&f, &st, T0 + 100);
	cr_assert_eq(a.kind, POLICY_ANSWER);
	cr_assert_eq(a.status, 503);
	cr_assert_str_eq(a.code, "all_providers_unavailable");
	cr_assert_float_eq(a.retry_after_s, 5, 0, "ceil(4.1 s)");
	cr_assert_eq(st.skipped, 3);
	cr_assert_eq(st.budget.attempts, 0);
	policy_state_free(&st);
	fx_free(&f);
}

#define HEDGING "{" PROVIDERS "," NOJITTER ",'models':{'chat':{" CHAIN \
	",'hedge':{'after_ms':50,'max':1}%s}}}"

/* A slow attempt is hedged on the next target; the first success wins, the other is cancelled. */
Test(policy, hedge_wins_and_the_loser_is_cancelled, .timeout = 10)
{
	struct fx f;
	struct policy_state st;
	struct policy_action a;
	struct gw_route *rt;
	char json[1024];

	snprintf(json, sizeof(json), HEDGING, "");
	fx_init(&f, json);
	rt = chat(&f);
	a = arrive(&f, &st, T0);
	expect_start(&st, a, "a", 0);
	cr_assert_float_eq(a.hedge_after_ms, 50, 1e-9);
	a = policy_hedge_fired(&f.env, &st, T0 + 50);
	expect_start(&st, a, "b", 1);
	cr_assert(a.hedge);
	cr_assert_lt(a.hedge_after_ms, 0, "hedge.max reached: no more");
	cr_assert_eq(st.hedges, 1);
	cr_assert_eq(rt->hedges[HEDGE_STARTED], 1);
	cr_assert_eq(policy_hedge_fired(&f.env, &st, T0 + 60).kind, POLICY_NONE, "no free slot");
	a = end_leg(&f, &st, 1, ok, -1, T0 + 80);
	cr_assert_eq(a.kind, POLICY_PASS);
	cr_assert_eq(a.slot, 1);
	cr_assert_eq(rt->hedges[HEDGE_WON], 1);
	policy_leg_off(&st, 0);
	policy_on_cancelled(&f.env, &st, 0, true, T0 + 80);
	cr_assert_eq(rt->hedges[HEDGE_CANCELLED], 1);
	cr_assert_eq(st.nactive, 0);
	cr_assert_eq(st.budget.attempts, 2);
	policy_state_free(&st);
	fx_free(&f);
}

/* The first leg fails while its hedge is out: wait for the hedge, then it answers. */
Test(policy, failure_waits_for_the_hedge_in_flight, .timeout = 10)
{
	struct fx f;
	struct policy_state st;
	struct policy_action a;
	char json[1024];

	snprintf(json, sizeof(json), HEDGING, "");
	fx_init(&f, json);
	expect_start(&st, arrive(&f, &st, T0), "a", 0);
	expect_start(&st, policy_hedge_fired(&f.env, &st, T0 + 50), "b", 1);
	a = end_leg(&f, &st, 0, http503, -1, T0 + 60);
	cr_assert_eq(a.kind, POLICY_NONE);
	/* b was tried as a hedge: the chain goes on at c. */
	expect_start(&st, end_leg(&f, &st, 1, http503, -1, T0 + 70), "c", 0);
	policy_state_free(&st);
	fx_free(&f);
}

/* No budget token for a hedge: none started, counted. */
Test(policy, hedge_budget_exhausted, .timeout = 10)
{
	struct fx f;
	struct policy_state st;
	struct policy_action a;
	char json[1024];

	snprintf(json, sizeof(json), HEDGING, ",'budget':{'ratio':0,'min_per_second':0,'burst':1}");
	fx_init(&f, json);
	chat(&f)->budget.tokens = 0;
	expect_start(&st, arrive(&f, &st, T0), "a", 0);
	a = policy_hedge_fired(&f.env, &st, T0 + 50);
	cr_assert_eq(a.kind, POLICY_NONE);
	cr_assert_str_eq(a.why, "no budget for a hedge");
	cr_assert_eq(chat(&f)->exhausted[1], 1);
	cr_assert_eq(st.hedges, 0);
	policy_state_free(&st);
	fx_free(&f);
}

/* A committed stream is not hedged. */
Test(policy, no_hedge_after_the_commit, .timeout = 10)
{
	struct fx f;
	struct policy_state st;
	char json[1024];

	snprintf(json, sizeof(json), HEDGING, "");
	fx_init(&f, json);
	expect_start(&st, policy_arrive(&f.env, &st, chat(&f), NULL, false, true, false, 2,
					T0 + 30000, T0), "a", 0);
	policy_on_commit(&f.env, &st, 0, T0 + 10);
	cr_assert_eq(policy_hedge_fired(&f.env, &st, T0 + 50).kind, POLICY_NONE);
	policy_state_free(&st);
	fx_free(&f);
}

#define BATCH "{" PROVIDERS ",'breaker':{'cooldown_jitter':0,'cooldown_ms':3000}," \
	"'classes':{'batch':{'queue_max':1,'max_wait_ms':10000,'concurrency':1}}," \
	"'models':{'chat':{" CHAIN "}}}"

static struct policy_action arrive_batch(struct fx *f, struct policy_state *st, double now)
{
	return policy_arrive(&f->env, st, chat(f), NULL, true, false, false, 1,
			     now + f->cfg.deadline_ms, now);
}

/* A batch request no target can take waits in the queue; a full queue answers 429. */
Test(policy, batch_queues_then_full_answers_429, .timeout = 10)
{
	struct fx f;
	struct policy_state st;
	struct policy_state st2;
	struct policy_action a;

	fx_init(&f, BATCH);
	trip_all(&f, T0);
	a = arrive_batch(&f, &st, T0 + 100);
	cr_assert_eq(a.kind, POLICY_QUEUE);
	cr_assert(policy_queued(&st));
	cr_assert_eq(policy_queue_total(&f.env), 1);
	cr_assert_eq(chat(&f)->queue[QUEUE_QUEUED], 1);
	a = arrive_batch(&f, &st2, T0 + 200);
	cr_assert_eq(a.kind, POLICY_ANSWER);
	cr_assert_eq(a.error, POLICY_ERR_QUEUE_FULL);
	cr_assert_eq(a.status, 429);
	cr_assert_str_eq(a.code, "batch_queue_full");
	cr_assert_float_eq(a.retry_after_s, 3, 0, "the cooldown's end, 2.8 s away");
	cr_assert_eq(chat(&f)->queue[QUEUE_FULL], 1);
	policy_finish(&f.env, &st2);
	policy_finish(&f.env, &st);
	cr_assert_eq(policy_queue_total(&f.env), 0);
	policy_state_free(&st);
	policy_state_free(&st2);
	fx_free(&f);
}

/* The queue wakes at the cooldown's end; the drain sends the request on as a probe. */
Test(policy, batch_drains_when_a_breaker_half_opens, .timeout = 10)
{
	struct fx f;
	struct policy_state st;
	struct policy_state *got;
	struct policy_action a;
	struct policy_drain d;
	bool dequeued = false;

	fx_init(&f, BATCH);
	trip_all(&f, T0);
	cr_assert_eq(arrive_batch(&f, &st, T0 + 100).kind, POLICY_QUEUE);
	cr_assert_float_eq(policy_queue_next_wake(&f.env, T0 + 100), T0 + 3000, 1e-9);
	policy_drain_begin(chat(&f), &d);
	cr_assert_null(policy_drain_next(&f.env, chat(&f), &d, T0 + 1000, &a, &dequeued),
		       "every target still open");
	cr_assert_float_eq(policy_queue_next_wake(&f.env, T0 + 3000), T0 + 3000, 1e-9,
			   "may go now");
	policy_drain_begin(chat(&f), &d);
	got = policy_drain_next(&f.env, chat(&f), &d, T0 + 3000, &a, &dequeued);
	cr_assert_eq(got, &st);
	cr_assert(dequeued);
	cr_assert_not(policy_queued(&st));
	cr_assert(st.from_queue);
	cr_assert_eq(chat(&f)->qrunning, 1);
	cr_assert_eq(chat(&f)->queue[QUEUE_DEQUEUED], 1);
	expect_start(&st, a, "a", 0);
	cr_assert_float_eq(st.budget.deadline_ms, T0 + 3000 + f.cfg.deadline_ms, 1e-9,
			   "a fresh deadline");
	cr_assert_null(policy_drain_next(&f.env, chat(&f), &d, T0 + 3000, &a, &dequeued));
	cr_assert(policy_finish(&f.env, &st), "its drain slot freed");
	cr_assert_eq(chat(&f)->qrunning, 0);
	policy_state_free(&st);
	fx_free(&f);
}

/* A queued request past max_wait_ms expires: 503 batch_queue_timeout. */
Test(policy, batch_expires_after_max_wait, .timeout = 10)
{
	struct fx f;
	struct policy_state st;
	struct policy_action a;
	struct policy_drain d;
	bool dequeued = true;

	fx_init(&f, "{" PROVIDERS ",'breaker':{'cooldown_jitter':0,'cooldown_ms':60000},"
		    "'classes':{'batch':{'max_wait_ms':2000}},'models':{'chat':{" CHAIN "}}}");
	trip_all(&f, T0);
	cr_assert_eq(arrive_batch(&f, &st, T0).kind, POLICY_QUEUE);
	cr_assert_float_eq(policy_queue_next_wake(&f.env, T0), T0 + 2000, 1e-9);
	policy_drain_begin(chat(&f), &d);
	cr_assert_eq(policy_drain_next(&f.env, chat(&f), &d, T0 + 2000, &a, &dequeued), &st);
	cr_assert_not(dequeued);
	cr_assert_eq(a.kind, POLICY_ANSWER);
	cr_assert_eq(a.error, POLICY_ERR_QUEUE_TIMEOUT);
	cr_assert_str_eq(a.code, "batch_queue_timeout");
	cr_assert_float_eq(a.retry_after_s, 58, 0);
	cr_assert_eq(chat(&f)->queue[QUEUE_EXPIRED], 1);
	cr_assert_eq(policy_queue_total(&f.env), 0);
	policy_state_free(&st);
	fx_free(&f);
}

/*
 * A dequeued request whose attempts reached no upstream goes back to the
 * head of the queue, and waits for a breaker change or REQUEUE_WAIT_MS.
 */
Test(policy, batch_requeues_and_waits, .timeout = 10)
{
	struct fx f;
	struct policy_state st;
	struct policy_action a;
	struct policy_drain d;
	bool dequeued;

	fx_init(&f, "{" PROVIDERS ",'breaker':{'cooldown_jitter':0,'consecutive_failures':100},"
		    "'classes':{'batch':{'max_wait_ms':60000}},"
		    "'models':{'chat':{'targets':[{'provider':'a','model':'m'}]}}}");
	expect_start(&st, arrive_batch(&f, &st, T0), "a", 0);
	a = end_leg(&f, &st, 0, refused, -1, T0 + 1);
	cr_assert_eq(a.kind, POLICY_QUEUE, "refused: reached no upstream, so it waits");
	cr_assert(st.requeued);
	cr_assert_float_eq(policy_queue_next_wake(&f.env, T0 + 1), T0 + 1 + POLICY_REQUEUE_WAIT_MS,
			   1e-9);
	policy_drain_begin(chat(&f), &d);
	cr_assert_null(policy_drain_next(&f.env, chat(&f), &d, T0 + 500, &a, &dequeued));
	f.router.breaker_gen++;		/* a breaker changed somewhere */
	policy_drain_begin(chat(&f), &d);
	cr_assert_eq(policy_drain_next(&f.env, chat(&f), &d, T0 + 500, &a, &dequeued), &st);
	cr_assert(dequeued);
	expect_start(&st, a, "a", 0);
	cr_assert_eq(st.attempts_before, 1);
	cr_assert_eq(st.budget.attempts, 1);
	a = end_leg(&f, &st, 0, refused, -1, T0 + 501);
	cr_assert_eq(a.kind, POLICY_QUEUE);
	cr_assert_eq(chat(&f)->queue[QUEUE_QUEUED], 1, "counted once, when it first joined");
	cr_assert_eq(chat(&f)->queue[QUEUE_DEQUEUED], 1, "counted once");
	cr_assert_eq(chat(&f)->qrunning, 0, "back in the queue: its slot is free");
	policy_queue_left(&f.env, &st);
	cr_assert_eq(chat(&f)->queue[QUEUE_LEFT], 1);
	policy_finish(&f.env, &st);
	cr_assert_eq(policy_queue_total(&f.env), 0);
	policy_state_free(&st);
	fx_free(&f);
}

/*
 * Requests sent back to the queue after their attempts keep it oldest
 * first, whatever order they come back in: the head is what expires
 * first and goes first. A (joined first) and B both go and come back, A
 * first; at A's max_wait_ms A expires, and B is still waiting behind it.
 */
Test(policy, batch_requeued_stay_oldest_first, .timeout = 10)
{
	struct fx f;
	struct policy_state a_st;
	struct policy_state b_st;
	struct policy_action a;
	struct policy_drain d;
	bool dequeued;

	fx_init(&f, "{" PROVIDERS ",'breaker':{'cooldown_jitter':0,'consecutive_failures':100},"
		    "'classes':{'batch':{'max_wait_ms':10000,'concurrency':2}},"
		    "'models':{'chat':{'targets':[{'provider':'a','model':'m'}]}}}");
	expect_start(&a_st, arrive_batch(&f, &a_st, T0), "a", 0);
	cr_assert_eq(end_leg(&f, &a_st, 0, refused, -1, T0 + 1).kind, POLICY_QUEUE);
	expect_start(&b_st, arrive_batch(&f, &b_st, T0 + 2), "a", 0);
	cr_assert_eq(end_leg(&f, &b_st, 0, refused, -1, T0 + 3).kind, POLICY_QUEUE);
	policy_drain_begin(chat(&f), &d);
	cr_assert_eq(policy_drain_next(&f.env, chat(&f), &d, T0 + 1100, &a, &dequeued), &a_st);
	expect_start(&a_st, a, "a", 0);
	cr_assert_eq(policy_drain_next(&f.env, chat(&f), &d, T0 + 1100, &a, &dequeued), &b_st);
	expect_start(&b_st, a, "a", 0);
	/* A comes back first, then B. */
	cr_assert_eq(end_leg(&f, &a_st, 0, refused, -1, T0 + 1200).kind, POLICY_QUEUE);
	cr_assert_eq(end_leg(&f, &b_st, 0, refused, -1, T0 + 1201).kind, POLICY_QUEUE);
	policy_drain_begin(chat(&f), &d);
	cr_assert_eq(policy_drain_next(&f.env, chat(&f), &d, T0 + 1 + 10000, &a, &dequeued),
		     &a_st, "A, the oldest, expires first");
	cr_assert_not(dequeued);
	cr_assert_eq(a.error, POLICY_ERR_QUEUE_TIMEOUT);
	cr_assert(policy_queued(&b_st), "B has waited less than max_wait_ms");
	policy_finish(&f.env, &a_st);
	policy_finish(&f.env, &b_st);
	cr_assert_eq(policy_queue_total(&f.env), 0);
	policy_state_free(&a_st);
	policy_state_free(&b_st);
	fx_free(&f);
}

/* A stopping gateway queues nothing, and answers what waits with 503 gateway_stopping. */
Test(policy, batch_stopping, .timeout = 10)
{
	struct fx f;
	struct policy_state st;
	struct policy_state st2;
	struct policy_action a;

	fx_init(&f, BATCH);
	trip_all(&f, T0);
	cr_assert_eq(arrive_batch(&f, &st, T0).kind, POLICY_QUEUE);
	f.env.stopping = true;
	a = arrive_batch(&f, &st2, T0 + 1);
	cr_assert_eq(a.kind, POLICY_ANSWER);
	cr_assert_eq(a.error, POLICY_ERR_STOPPING);
	cr_assert_float_eq(a.retry_after_s, 1, 0);
	cr_assert_eq(policy_queue_take(&f.env, chat(&f), &a), &st);
	cr_assert_eq(a.error, POLICY_ERR_STOPPING);
	cr_assert_str_eq(a.code, "gateway_stopping");
	cr_assert_null(policy_queue_take(&f.env, chat(&f), &a));
	cr_assert_eq(chat(&f)->queue[QUEUE_EXPIRED], 1);
	policy_state_free(&st);
	policy_state_free(&st2);
	fx_free(&f);
}

/* A batch request leaves a half-open target with a probe out to interactive work. */
Test(policy, batch_skips_half_open_with_a_probe_out, .timeout = 10)
{
	struct fx f;
	struct policy_state st;
	struct policy_state st2;
	struct policy_action a;
	struct gw_target *ta;
	uint64_t probe = 0;
	struct breaker_change chg;

	fx_init(&f, plain);
	ta = chat(&f)->targets[0];
	breaker_trip(&ta->br, T0, "test", &f.rng_breaker, &chg);
	cr_assert_eq(breaker_admit(&ta->br, T0 + ta->br.cooldown_ms, &probe, &chg),
		     BREAKER_ADMIT_PROBE);
	a = arrive_batch(&f, &st, T0 + ta->br.cooldown_ms);
	expect_start(&st, a, "b", 0);
	a = arrive(&f, &st2, T0 + ta->br.cooldown_ms);
	expect_start(&st2, a, "a", 0);
	cr_assert_neq(st2.legs[0].probe, 0, "an interactive request takes a probe slot");
	policy_state_free(&st);
	policy_state_free(&st2);
	fx_free(&f);
}

/* A committed stream's end: [DONE] completes it; a stall, a break or no [DONE] fails it. */
Test(policy, stream_end_classified, .timeout = 10)
{
	const struct stream_facts done = { .sse = true, .committed = true, .done = true };
	const struct stream_facts stalled = { .sse = true, .committed = true, .stalled = true };
	const struct stream_facts cut_short = { .sse = true, .committed = true };
	const struct stream_facts error = { .sse = true, .committed = true, .error_event = true };

	cr_assert_eq(policy_stream_failure(CURLE_OK, &done), ATTEMPT_FAIL_NONE);
	cr_assert_eq(policy_stream_failure(CURLE_OK, &stalled), ATTEMPT_FAIL_STALL);
	cr_assert_eq(policy_stream_failure(CURLE_OK, &cut_short), ATTEMPT_FAIL_TRUNCATED);
	cr_assert_eq(policy_stream_failure(CURLE_RECV_ERROR, &cut_short), ATTEMPT_FAIL_RESET);
	cr_assert_eq(policy_stream_failure(CURLE_OK, &error), ATTEMPT_FAIL_ERROR_EVENT);
}

/* A hedge goes to a target with no leg in flight: past the one already hedged. */
Test(policy, hedges_skip_targets_in_flight, .timeout = 10)
{
	struct fx f;
	struct policy_state st;
	struct policy_action a;

	fx_init(&f, "{" PROVIDERS "," NOJITTER ",'models':{'chat':{" CHAIN
		    ",'hedge':{'after_ms':50,'max':2}}}}");
	expect_start(&st, arrive(&f, &st, T0), "a", 0);
	a = policy_hedge_fired(&f.env, &st, T0 + 50);
	expect_start(&st, a, "b", 1);
	cr_assert_float_eq(a.hedge_after_ms, 50, 1e-9, "one more hedge may follow");
	expect_start(&st, policy_hedge_fired(&f.env, &st, T0 + 100), "c", 2);
	cr_assert_eq(st.hedges, 2);
	cr_assert_eq(st.hedged_at, (1u << 1) | (1u << 2));
	policy_state_free(&st);
	fx_free(&f);
}

/* The drain sends on at most batch.concurrency at once. */
Test(policy, batch_drain_holds_to_concurrency, .timeout = 10)
{
	struct fx f;
	struct policy_state st[2];
	struct policy_action a;
	struct policy_drain d;
	bool dequeued;

	fx_init(&f, "{" PROVIDERS ",'breaker':{'cooldown_jitter':0,'cooldown_ms':1000},"
		    "'classes':{'batch':{'concurrency':1}},'models':{'chat':{" CHAIN "}}}");
	trip_all(&f, T0);
	cr_assert_eq(arrive_batch(&f, &st[0], T0).kind, POLICY_QUEUE);
	cr_assert_eq(arrive_batch(&f, &st[1], T0 + 1).kind, POLICY_QUEUE);
	policy_drain_begin(chat(&f), &d);
	cr_assert_eq(policy_drain_next(&f.env, chat(&f), &d, T0 + 1000, &a, &dequeued), &st[0],
		     "the oldest first");
	expect_start(&st[0], a, "a", 0);
	cr_assert_null(policy_drain_next(&f.env, chat(&f), &d, T0 + 1000, &a, &dequeued),
		       "one in progress at once");
	cr_assert_float_eq(policy_queue_next_wake(&f.env, T0 + 1000), T0 + 1 + 60000, 1e-9,
			   "only the expiry: a request finishing drains it");
	cr_assert(policy_finish(&f.env, &st[0]));
	policy_drain_begin(chat(&f), &d);
	cr_assert_eq(policy_drain_next(&f.env, chat(&f), &d, T0 + 1001, &a, &dequeued), &st[1]);
	policy_finish(&f.env, &st[1]);
	policy_state_free(&st[0]);
	policy_state_free(&st[1]);
	fx_free(&f);
}

/* A batch request that reached an upstream and failed is answered, not queued. */
Test(policy, batch_reached_is_not_queued, .timeout = 10)
{
	struct fx f;
	struct policy_state st;
	struct policy_action a;

	fx_init(&f, "{" PROVIDERS ",'models':{'chat':{'targets':[{'provider':'a','model':'m'}]}}}");
	expect_start(&st, arrive_batch(&f, &st, T0), "a", 0);
	a = end_leg(&f, &st, 0, http503, -1, T0 + 1);
	cr_assert_eq(a.kind, POLICY_ANSWER);
	cr_assert_eq(a.status, 502);
	cr_assert_eq(policy_queue_total(&f.env), 0);
	policy_state_free(&st);
	fx_free(&f);
}

/*
 * A committed stream's watch: silence past stall_timeout_ms fails it; a
 * stuck client is given up.
 */
Test(policy, stream_watch, .timeout = 10)
{
	struct gw_config cfg = { .stall_timeout_ms = 3000, .idle_timeout_ms = 5000 };
	double again = -1;

	cr_assert_eq(policy_stream_watch(&cfg, T0, false, -1, T0 + 1000, &again),
		     POLICY_WATCH_AGAIN);
	cr_assert_float_eq(again, 2000, 1e-9, "until stall_timeout_ms after the last event");
	cr_assert_eq(policy_stream_watch(&cfg, T0, false, -1, T0 + 2999.5, &again),
		     POLICY_WATCH_STALLED, "less than a millisecond left");
	cr_assert_eq(policy_stream_watch(&cfg, T0, false, -1, T0 + 3000, &again),
		     POLICY_WATCH_STALLED);
	/* Paused for a slow client: never stalled; the client's idleness is what counts. */
	cr_assert_eq(policy_stream_watch(&cfg, T0, true, -1, T0 + 9000, &again),
		     POLICY_WATCH_AGAIN, "it took some just now");
	cr_assert_float_eq(again, 3000, 1e-9, "min(stall, idle)");
	cr_assert_eq(policy_stream_watch(&cfg, T0, true, T0 + 5000, T0 + 9000, &again),
		     POLICY_WATCH_AGAIN);
	cr_assert_eq(policy_stream_watch(&cfg, T0, true, T0 + 4000, T0 + 9000, &again),
		     POLICY_WATCH_CLIENT_STUCK);
}

/* A no-reroute request is never hedged; a hedge timer with no leg out starts nothing. */
Test(policy, no_hedge_for_no_reroute_or_without_a_leg, .timeout = 10)
{
	struct fx f;
	struct policy_state st;
	struct policy_action a;
	char json[1024];

	snprintf(json, sizeof(json), HEDGING, "");
	fx_init(&f, json);
	a = policy_arrive(&f.env, &st, chat(&f), NULL, false, false, true, 2, T0 + 30000, T0);
	expect_start(&st, a, "a", 0);
	cr_assert_lt(a.hedge_after_ms, 0, "one delivery at most: no hedge");
	policy_state_free(&st);
	a = arrive(&f, &st, T0);
	cr_assert_eq(a.kind, POLICY_START);
	cr_assert_eq(policy_hedge_fired(&f.env, &st, T0 + 50).kind, POLICY_NONE,
		     "its transfer never went out");
	cr_assert_eq(st.hedges, 0);
	policy_state_free(&st);
	fx_free(&f);
}
