/*
 * detect_test: the detection study's textbook prediction (detect_predict,
 * pure: each failure class under passive, active and both) and the
 * prediction a scenario's setups get (detect_predict_setup: their gateway
 * configs and the primary's fault read from the file).
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/cfg.h"
#include "runner/detect.h"
#include "tests/support/tmpdir.h"

static const struct detect_passive passive_on = {
	.on = true, .threshold = 3, .timeout_ms = 1000, .first_token_timeout_ms = 800,
	.stall_timeout_ms = 1500,
};
static const struct detect_active active_on = {
	.on = true, .interval_ms = 1000, .timeout_ms = 500, .fall = 2,
};
static const struct detect_passive off_p = { 0 };
static const struct detect_active off_a = { 0 };

static void expect_ms(const struct detect_value *v, double ms, const char *what)
{
	cr_assert_eq(v->why, DETECT_HAS_VALUE, "%s: no value (why %d)", what, v->why);
	cr_assert_float_eq(v->ms, ms, 1e-9, "%s: %.6g ms, expected %.6g", what, v->ms, ms);
}

Test(detect, trials_to_a_run_of_failures, .timeout = 5)
{
	cr_assert_float_eq(detect_trials_to_run(1, 5), 5, 1e-12);
	/* p = 1/2, k = 2: 6; k = 3: 14; k = 5: 62 */
	cr_assert_float_eq(detect_trials_to_run(0.5, 2), 6, 1e-12);
	cr_assert_float_eq(detect_trials_to_run(0.5, 3), 14, 1e-12);
	cr_assert_float_eq(detect_trials_to_run(0.5, 5), 62, 1e-12);
	cr_assert_float_eq(detect_trials_to_run(0.25, 1), 4, 1e-12);
}

Test(detect, refused, .timeout = 5)
{
	const struct detect_fault f = { .kind = DETECT_REFUSED, .probability = 1 };
	struct detect_prediction p;

	/* passive: fails at once, 2 more requests at 20 ms; active: I/2 + (fall − 1) I */
	detect_predict(&passive_on, &active_on, &f, 50, &p);
	expect_ms(&p.passive, 40, "passive at 50/s");
	expect_ms(&p.active, 1500, "active");
	expect_ms(&p.both, 40, "both: the smaller");
	detect_predict(&passive_on, &active_on, &f, 0.5, &p);
	expect_ms(&p.passive, 4000, "passive at 0.5/s");
	expect_ms(&p.both, 1500, "both at 0.5/s: the checks win");
}

Test(detect, hang, .timeout = 5)
{
	struct detect_fault f = { .kind = DETECT_HANG, .probability = 1 };
	struct detect_prediction p;

	/* passive: the attempt timeout + 2 inter-arrivals; active: I/2 + (I + C) + C */
	detect_predict(&passive_on, &active_on, &f, 50, &p);
	expect_ms(&p.passive, 1040, "passive");
	expect_ms(&p.active, 2500, "active");
	expect_ms(&p.both, 1040, "both");
	f.streaming = true;	/* a stream's cap is the first-token timeout, when smaller */
	detect_predict(&passive_on, &off_a, &f, 50, &p);
	expect_ms(&p.passive, 840, "passive, streams");
	cr_assert_eq(p.active.why, DETECT_OFF);
	expect_ms(&p.both, 840, "both = passive when active is off");
}

Test(detect, error_storm_at_half, .timeout = 5)
{
	const struct detect_fault f = { .kind = DETECT_ERROR_STATUS, .probability = 0.5 };
	struct detect_prediction p;

	/* 14 requests for 3 failures in a row; 6 checks for 2 */
	detect_predict(&passive_on, &active_on, &f, 50, &p);
	expect_ms(&p.passive, 13 * 20, "passive");
	expect_ms(&p.active, 500 + 5 * 1000, "active");
}

Test(detect, token_faults, .timeout = 5)
{
	struct detect_fault slow = { .kind = DETECT_SLOW_TOKENS, .probability = 1,
				     .answer_ms = 1700 };
	struct detect_fault stall = { .kind = DETECT_STALL, .probability = 1, .answer_ms = 100,
				      .committed = true, .streaming = true };
	struct detect_active completion = active_on;
	struct detect_passive long_attempt = passive_on;
	struct detect_prediction p;

	/* a slow answer past the timeout fails at the timeout; /models checks never see it */
	detect_predict(&passive_on, &active_on, &slow, 50, &p);
	expect_ms(&p.passive, 1040, "slow, passive");
	cr_assert_eq(p.active.why, DETECT_NEVER);
	expect_ms(&p.both, 1040, "slow, both");
	/* slow but within the timeout: nothing fails */
	slow.answer_ms = 900;
	detect_predict(&passive_on, &active_on, &slow, 50, &p);
	cr_assert_eq(p.passive.why, DETECT_NEVER);
	cr_assert_eq(p.both.why, DETECT_NEVER);
	/* a stall after the commit fails the stall timeout after its last token
	 * (100 + 1500), past the attempt's timeout (1000): committed, the
	 * stream is the stall timer's */
	detect_predict(&passive_on, &off_a, &stall, 50, &p);
	expect_ms(&p.passive, 100 + 1500 + 40, "stall: the stall timeout after the token");
	long_attempt.timeout_ms = 5000;
	stall.committed = false;	/* silence before any token: the first-token cap */
	detect_predict(&long_attempt, &off_a, &stall, 50, &p);
	expect_ms(&p.passive, 800 + 40, "stall before the first token");
	/* a completion check's view of token faults has no formula */
	completion.completion = true;
	detect_predict(&off_p, &completion, &stall, 50, &p);
	cr_assert_eq(p.active.why, DETECT_UNMODELLED);
	cr_assert_eq(p.both.why, DETECT_UNMODELLED);
}

Test(detect, what_the_formulas_do_not_cover, .timeout = 5)
{
	const struct detect_fault other = { .kind = DETECT_OTHER, .probability = 1 };
	const struct detect_fault hang = { .kind = DETECT_HANG, .probability = 1 };
	struct detect_prediction p;

	detect_predict(&passive_on, &active_on, &other, 50, &p);
	cr_assert_eq(p.passive.why, DETECT_UNMODELLED);
	cr_assert_eq(p.active.why, DETECT_UNMODELLED);
	cr_assert_eq(p.both.why, DETECT_UNMODELLED);
	/* closed-loop load: no inter-arrival time */
	detect_predict(&passive_on, &off_a, &hang, 0, &p);
	cr_assert_eq(p.passive.why, DETECT_UNMODELLED);
	detect_predict(&off_p, &off_a, &hang, 50, &p);
	cr_assert_eq(p.both.why, DETECT_OFF);
}

/* A scenario file with a hang of the primary, a direct setup and two gateway setups. */
static const char scenario_json[] =
	"{\"duration_s\":45,\"providers\":[{\"name\":\"primary\",\"ttft_ms\":100,"
	"\"token_ms\":10,\"output_tokens\":16,\"faults\":[{\"kind\":\"hang\",\"from_s\":10,"
	"\"to_s\":30}]},{\"name\":\"secondary\"}],"
	"\"phases\":[{\"name\":\"before\",\"from_s\":0,\"to_s\":10},"
	"{\"name\":\"fault\",\"from_s\":10,\"to_s\":30},{\"name\":\"after\",\"from_s\":30,"
	"\"to_s\":45}],\"detection\":{\"fault_phase\":\"fault\",\"recovery_phase\":\"after\"},"
	"\"load\":{\"rate\":50},\"setups\":["
	"{\"name\":\"d\",\"kind\":\"direct\",\"provider\":\"primary\"},"
	"{\"name\":\"passive\",\"kind\":\"gateway\",\"config\":{\"providers\":{"
	"\"primary\":{\"base_url\":\"{upstream.primary}\",\"timeout_ms\":1000},"
	"\"secondary\":{\"base_url\":\"{upstream.secondary}\"}},"
	"\"breaker\":{\"consecutive_failures\":3},"
	"\"models\":{\"chat\":{\"targets\":[{\"provider\":\"primary\",\"model\":\"m\"},"
	"{\"provider\":\"secondary\",\"model\":\"m\"}]}}}},"
	"{\"name\":\"active\",\"kind\":\"gateway\",\"config\":{\"providers\":{"
	"\"primary\":{\"base_url\":\"{upstream.primary}\",\"timeout_ms\":1000,"
	"\"health_check\":{\"interval_ms\":1000,\"timeout_ms\":500,\"fall\":2}},"
	"\"secondary\":{\"base_url\":\"{upstream.secondary}\"}},"
	"\"breaker\":{\"consecutive_failures\":0,\"failure_ratio\":0},"
	"\"models\":{\"chat\":{\"targets\":[{\"provider\":\"primary\",\"model\":\"m\"},"
	"{\"provider\":\"secondary\",\"model\":\"m\"}]}}}}]}";

Test(detect, a_scenarios_setups_from_their_configs, .timeout = 10)
{
	char dir[64];
	char path[128];
	char err[CFG_ERR_LEN];
	struct detect_prediction p;
	struct scenario sc;

	cr_assert_eq(tmpdir_make(dir, sizeof(dir), "detect"), 0);
	cr_assert_eq(tmpdir_write(dir, "s.json", scenario_json, strlen(scenario_json)), 0);
	snprintf(path, sizeof(path), "%s/s.json", dir);
	cr_assert_eq(scenario_load(path, 1, &sc, err), 0, "%s", err);
	cr_assert_eq(detect_predict_setup(&sc, &sc.setups[0], &p), 0);
	cr_assert_eq(p.both.why, DETECT_OFF, "a direct setup has no breaker");
	cr_assert_eq(detect_predict_setup(&sc, &sc.setups[1], &p), 0);
	expect_ms(&p.both, 1040, "passive");
	cr_assert_eq(p.active.why, DETECT_OFF);
	cr_assert_eq(detect_predict_setup(&sc, &sc.setups[2], &p), 0);
	cr_assert_eq(p.passive.why, DETECT_OFF, "consecutive_failures 0: the rule is off");
	expect_ms(&p.both, 2500, "active");
	scenario_free(&sc);
	/* at a quarter of the time: every time a quarter, the rate four times */
	cr_assert_eq(scenario_load(path, 0.25, &sc, err), 0, "%s", err);
	cr_assert_eq(detect_predict_setup(&sc, &sc.setups[1], &p), 0);
	expect_ms(&p.both, 260, "passive at 0.25");
	scenario_free(&sc);
	tmpdir_remove(dir);
}
