/*
 * errmsg: the words of the gateway's own error answers, which the real
 * gateway sends and the simulator records — each kind, the attempts
 * listed in order with and without a status and a duration, and the cuts
 * a long alias or reason meets.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "gateway/errmsg.h"
#include "gateway/router.h"

static struct gw_provider prov_a = { .name = "primary" };
static struct gw_provider prov_b = { .name = "backup" };
static struct gw_target ta = { .prov = &prov_a, .model = "m1" };
static struct gw_target tb = { .prov = &prov_b, .model = "m2" };

static char *message(const struct policy_action *a, const struct policy_state *st,
		     const struct gw_config *cfg, const char *alias, const char *why)
{
	struct buf b = { 0 };

	cr_assert_eq(errmsg_write(&b, a, st, cfg, alias, why), 0);
	cr_assert_not_null(b.data);
	cr_assert_eq(strlen(b.data), b.len);
	return buf_steal(&b);
}

Test(errmsg, every_attempt_after_the_reason)
{
	struct policy_note notes[] = {
		{ .t = &ta, .outcome = "http_503", .status = 503, .ms = 12.4 },
		{ .t = &tb, .outcome = "timeout", .status = 0, .ms = 2000.6 },
		{ .t = &ta, .outcome = "breaker_open", .status = 0, .ms = NAN },
	};
	struct policy_state st = { .notes = notes, .nnotes = 3, .budget.attempts = 2 };
	struct gw_config cfg = { .deadline_ms = 30000 };
	struct policy_action a = { .error = POLICY_ERR_FINAL, .status = 502 };
	char *m;

	m = message(&a, &st, &cfg, "chat", NULL);
	cr_assert_str_eq(m, "Every upstream attempt for model 'chat' failed after 2 attempts: "
			 "primary/m1: http_503 (HTTP 503, 12 ms); backup/m2: timeout (2001 ms); "
			 "primary/m1: breaker_open.");
	free(m);
	a.status = 504;
	st.nnotes = 1;
	st.budget.attempts = 1;
	m = message(&a, &st, &cfg, "chat", NULL);
	cr_assert_str_eq(m, "The request deadline (30000 ms) ran out after 1 attempt: "
			 "primary/m1: http_503 (HTTP 503, 12 ms).");
	free(m);
	a.status = 503;
	st.nnotes = 0;
	st.budget.attempts = 0;
	m = message(&a, &st, &cfg, "chat", NULL);
	cr_assert_str_eq(m, "No provider of model 'chat' is available after 0 attempts.");
	free(m);
}

Test(errmsg, the_gateways_own_refusals)
{
	struct policy_state st = { 0 };
	struct gw_config cfg = { .batch = { .queue_max = 64, .max_wait_ms = 2500 } };
	struct policy_action a = { .error = POLICY_ERR_QUEUE_FULL, .status = 429 };
	char alias[300];
	char *m;

	m = message(&a, &st, &cfg, "chat", NULL);
	cr_assert_str_eq(m, "The batch queue of model 'chat' is full (64 requests).");
	free(m);
	a.error = POLICY_ERR_QUEUE_TIMEOUT;
	a.status = 503;
	m = message(&a, &st, &cfg, "chat", NULL);
	cr_assert_str_eq(m, "No provider of model 'chat' took the batch request within 2500 ms.");
	free(m);
	/* A long alias is cut at 159 bytes, as these messages always were. */
	memset(alias, 'x', sizeof(alias) - 1);
	alias[sizeof(alias) - 1] = '\0';
	m = message(&a, &st, &cfg, alias, NULL);
	cr_assert_eq(strlen(m), 159);
	cr_assert(strncmp(m, "No provider of model 'xxx", 25) == 0);
	free(m);
	a.error = POLICY_ERR_OVERLOADED;
	m = message(&a, &st, &cfg, "chat", "no memory for a transfer");
	cr_assert_str_eq(m, "The gateway is out of resources (no memory for a transfer); retry "
			 "shortly.");
	free(m);
	m = message(&a, &st, &cfg, "chat", NULL);
	cr_assert_str_eq(m, "The gateway is out of resources (unknown); retry shortly.");
	free(m);
	m = message(&a, &st, &cfg, "chat", alias);
	cr_assert_eq(strlen(m), 191);
	free(m);
	a.error = POLICY_ERR_STOPPING;
	m = message(&a, &st, &cfg, "chat", NULL);
	cr_assert_str_eq(m, "The gateway is stopping; the batch request was not sent.");
	free(m);
}

Test(errmsg, an_unknown_model_named_and_cut)
{
	char msg[256];
	char model[400];

	errmsg_unknown_model(msg, sizeof(msg), "gpt-9");
	cr_assert_str_eq(msg, "The model 'gpt-9' does not exist.");
	memset(model, 'y', sizeof(model) - 1);
	model[sizeof(model) - 1] = '\0';
	errmsg_unknown_model(msg, sizeof(msg), model);
	cr_assert_eq(strlen(msg), strlen("The model '' does not exist.") + 128);
}
