/*
 * bin/gateway's failover as a client sees it, against real mock providers
 * on loopback: a healthy answer and its headers, failing over on every
 * kind of upstream failure and handing back the upstream's own 4xx, slow
 * upstreams (a hang, headers then silence) cut at their timeout, same-
 * target retries that wait for Retry-After (or do not, when it cannot fit
 * the deadline), the deadline's 504, the 503 of unreachable providers, the
 * 502 of exhausted attempts, and forcing a provider by header. Each test
 * checks the mock providers' logs too: who was asked, when, and what they
 * answered.
 *
 * The gateway_breaker suite (same fixtures) follows circuit breakers
 * through their states as a client, the providers' logs, the events file,
 * /admin/breakers and /metrics see them: consecutive failures, the window
 * rules, cooldowns growing after a failed probe, half-open probes, shared
 * and disabled breakers.
 *
 * Configs are written with single quotes (gw_template turns them into
 * JSON); @NAME@ stands for mock provider NAME's base_url.
 */
#include <criterion/criterion.h>
#include <cjson/cJSON.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tests/support/gwharness.h"
#include "tests/support/harness.h"

#define ALWAYS "'from_s':-1000,'to_s':1000"
/* Timing of a fast healthy mock provider. */
#define FAST "'ttft_ms':20,'jitter_ms':0,'token_ms':0,'output_tokens':8"

/* ---- fixtures: what a test started or read, undone by teardown ---- */

static struct mock_proc mock;
static struct gw_proc gw;

static struct gw_held held;

static void teardown(void)
{
	gw_cleanup();
	mock_cleanup(&mock);
	gw_held_free(&held);
}

TestSuite(gateway, .fini = teardown);

/* ---- helpers ---- */

/* Starts mockprov on a template of its config (single quotes). */
static void start_mock(const char *tmpl)
{
	gw_mock_start_template(&mock, tmpl);
}

/* Starts the gateway on a template of its config, @NAME@ naming mock providers. */
static void start_gw(const char *tmpl)
{
	gw_start_template(&gw, tmpl, &mock, NULL);
}

/* A chat request to the gateway (gw_chat_held), held until teardown. */
static struct http_result *chat(const char *alias, const char *rid, const char *extra,
				double timeout_ms)
{
	return gw_chat_held(&gw, &held, alias, rid, extra, timeout_ms);
}

/* Asserts a gateway error (gw_expect_error), the body held until teardown. */
static cJSON *expect_error(const struct http_result *r, const char *what, long status,
			   const char *type, const char *code)
{
	return gw_expect_error(&held, r, what, status, type, code);
}

/* error.attempts[i] of an error document, asserted present. */
static const cJSON *attempt_at(const cJSON *doc, int i)
{
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(doc, "error"), "attempts");
	const cJSON *e = cJSON_GetArrayItem(a, i);

	cr_assert(cJSON_IsObject(e), "no error.attempts[%d] in %s", i, cJSON_PrintUnformatted(a));
	return e;
}

static int attempts_len(const cJSON *doc)
{
	return cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(doc, "error"), "attempts"));
}

/* Asserts error.attempts[i]: its provider and outcome (NULL: any non-empty). */
static const cJSON *expect_attempt(const cJSON *doc, int i, const char *prov, const char *outcome)
{
	const cJSON *e = attempt_at(doc, i);
	const char *p = gw_json_str(e, "provider");
	const char *o = gw_json_str(e, "outcome");

	cr_assert(p && strcmp(p, prov) == 0, "attempts[%d].provider %s, expected %s", i,
		  p ? p : "(none)", prov);
	cr_assert(o && o[0], "attempts[%d] has no outcome", i);
	if (outcome)
		cr_assert_str_eq(o, outcome, "attempts[%d] (%s): outcome", i, prov);
	cr_assert(gw_json_str(e, "model"), "attempts[%d] has no model", i);
	return e;
}

/* GET /metrics, the text held until teardown. */
static const char *metrics(void)
{
	return gw_metrics_held(&gw, &held);
}

/* /admin/breakers, held. */
static const cJSON *breakers(void)
{
	return gw_breakers_held(&gw, &held);
}

/* A breaker's number field, asserting the breaker exists. */
static double breaker_num(const cJSON *doc, const char *prov, const char *key)
{
	return gw_json_num(gw_breaker_must(doc, prov, "mock-small"), key);
}

/* ---- a healthy answer ---- */

/*
 * A healthy primary answers: 200 with its chat completion (the upstream's
 * model name in it: the mock is strict, so the alias was rewritten), the
 * x-faultline-* headers, the client's x-request-id both ways, and
 * x-faultline-cost-usd equal to the answer's usage times the primary's
 * price table. The path without /v1 works too; the secondary is never
 * asked.
 */
Test(gateway, healthy_primary_answers, .timeout = 20)
{
	static const char *const provs[] = { "primary", "secondary", NULL };
	const struct csv_table *log;
	struct http_result *r;
	struct http_result *r2;
	const cJSON *usage;
	cJSON *body;
	char url[128];
	char v[128];
	char req[256];
	size_t row;

	start_mock("{'providers':["
		   "{'name':'primary','listen':'127.0.0.1:0','strict_model':true," FAST "},"
		   "{'name':'secondary','listen':'127.0.0.1:0'," FAST "}]}");
	start_gw("{'request_deadline_ms':5000,"
		 "'providers':{"
		 "'primary':{'base_url':'@primary@','timeout_ms':2000,"
		 "'price_per_1k':{'input':0.15,'output':0.6}},"
		 "'secondary':{'base_url':'@secondary@','timeout_ms':2000,"
		 "'price_per_1k':{'input':1,'output':2}}},"
		 "'models':{'chat':{'targets':[{'provider':'primary','model':'mock-small'},"
		 "{'provider':'secondary','model':'mock-small'}]}}}");

	r = chat("chat", "client-id-1", NULL, 5000);
	gw_expect_answer(r, "healthy", "primary", 1);
	cr_assert_str_eq(gw_header_str(r, "x-request-id", v, sizeof(v)), "client-id-1");
	cr_assert_str_eq(gw_header_str(r, "x-faultline-hedged", v, sizeof(v)), "0");
	cr_assert(strstr(gw_header_str(r, "content-type", v, sizeof(v)), "application/json"),
		  "content-type %s", v);
	cr_assert_null(http_header(r, "x-mock-provider", v, sizeof(v)),
		       "the upstream's x-mock-provider: %s was relayed", v);
	body = gw_held_doc(&held, cJSON_Parse(r->body));
	cr_assert_not_null(body, "the answer is not JSON: %s", r->body);
	cr_assert_gt(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(body, "choices")), 0,
		     "no choices: %s", r->body);
	cr_assert_str_eq(gw_json_str(body, "model"), "mock-small",
			 "the upstream's model is not in the answer: %s", r->body);
	usage = cJSON_GetObjectItemCaseSensitive(body, "usage");
	/* mockprov: ceil(14 characters / 4) in, output_tokens out. */
	cr_assert(gw_json_num(usage, "prompt_tokens") == 4 &&
		  gw_json_num(usage, "completion_tokens") == 8, "usage in %s", r->body);
	gw_expect_cost(&held, r, "healthy", 0.15, 0.6, 0);

	/* No /v1 prefix. */
	r2 = gw_held_result(&held);
	{
		const char *hdrs[] = { "x-request-id: client-id-2", NULL };
		struct http_opts o = { .body = gw_chat_body("chat", req, sizeof(req)),
				       .headers = hdrs, .timeout_ms = 5000 };

		cr_assert_eq(http_do(gw_url(&gw, "/chat/completions", url, sizeof(url)), &o, r2), 0);
	}
	gw_expect_answer(r2, "no /v1 prefix", "primary", 1);

	gw_mock_settle(&mock, provs);
	log = gw_mock_rows(&held, &mock, "primary");
	row = gw_row_of(log, "primary", "client-id-1");
	cr_assert_eq(gw_row_num(log, row, "status"), 200);
	cr_assert_str_eq(csv_get(log, row, "outcome"), "completed");
	gw_row_of(log, "primary", "client-id-2");
	log = gw_mock_rows(&held, &mock, "secondary");
	cr_assert_eq(log->nrows, 1, "the secondary was asked %zu times", log->nrows - 1);
}

/* ---- failover ---- */

/* One upstream failure the gateway fails over on. */
struct failover_case {
	const char *alias;		/* also the mock provider's name */
	const char *fault;		/* the mock's fault object(s) */
	const char *log_fault;		/* the fault column it logs; NULL: no row (refused) */
	const char *outcome;		/* the attempt outcome metric label */
};

static const struct failover_case failovers[] = {
	{ "down", "{'kind':'down'," ALWAYS "}", NULL, "refused" },
	{ "s503", "{'kind':'status','status':503," ALWAYS "}", "status", "http_5xx" },
	{ "s429", "{'kind':'status','status':429," ALWAYS "}", "status", "http_429" },
	{ "s408", "{'kind':'status','status':408," ALWAYS "}", "status", "http_408" },
	{ "reset", "{'kind':'reset','after_bytes':0," ALWAYS "}", "reset", "reset" },
	{ "short", "{'kind':'truncate','after_tokens':2," ALWAYS "}", "truncate", "reset" },
	{ "malformed", "{'kind':'malformed'," ALWAYS "}", "malformed", "invalid_body" },
};
#define NFAILOVERS (sizeof(failovers) / sizeof(failovers[0]))

/*
 * Every kind of upstream failure fails over: the secondary answers (200,
 * attempts 2) with no delay past its own 50 ms; the failed attempt shows in
 * faultline_attempts_total under its outcome name; the failing provider
 * logged the request (with the client's x-request-id) with its fault, and
 * so did the secondary.
 */
Test(gateway, failover_on_upstream_failures, .timeout = 30)
{
	struct gw_fallback cfg;
	char rid[64];
	char labels[128];
	const char *provs[NFAILOVERS + 2];
	const char *text;
	const struct csv_table *log;
	const struct csv_table *sec_log;
	size_t i;

	gw_fallback_begin(&cfg, "'ttft_ms':50,'output_tokens':4", "'request_deadline_ms':5000,",
			  ",'timeout_ms':2000,'price_per_1k':{'input':1,'output':2}");
	for (i = 0; i < NFAILOVERS; i++)
		gw_fallback_add(&cfg, failovers[i].alias, FAST, failovers[i].fault,
				",'timeout_ms':2000");
	cr_assert_eq(gw_fallback_end(&cfg, ""), 0, "the configs do not fit");
	start_mock(cfg.mock);
	start_gw(cfg.gw);

	for (i = 0; i < NFAILOVERS; i++) {
		struct http_result *r;

		snprintf(rid, sizeof(rid), "fo-%s", failovers[i].alias);
		r = chat(failovers[i].alias, rid, NULL, 5000);
		gw_expect_answer(r, failovers[i].alias, "secondary", 2);
		cr_assert_lt(r->total_ms, 50 + 300, "%s: answered after %.0f ms (secondary: 50 ms)",
			     failovers[i].alias, r->total_ms);
		gw_expect_cost(&held, r, failovers[i].alias, 1, 2, 0);
	}

	text = metrics();
	for (i = 0; i < NFAILOVERS; i++) {
		snprintf(labels, sizeof(labels), "provider=%s,outcome=%s", failovers[i].alias,
			 failovers[i].outcome);
		cr_assert_eq(gw_metric(text, "faultline_attempts_total", labels), 1,
			     "faultline_attempts_total{%s}: %g; metrics:\n%s", labels,
			     gw_metric(text, "faultline_attempts_total", labels), text);
	}
	cr_assert_eq(gw_metric(text, "faultline_attempts_total", "provider=secondary,outcome=success"),
		     NFAILOVERS);

	for (i = 0; i < NFAILOVERS; i++)
		provs[i] = failovers[i].alias;
	provs[NFAILOVERS] = "secondary";
	provs[NFAILOVERS + 1] = NULL;
	gw_mock_settle(&mock, provs);
	sec_log = gw_mock_rows(&held, &mock, "secondary");
	for (i = 0; i < NFAILOVERS; i++) {
		size_t row;

		snprintf(rid, sizeof(rid), "fo-%s", failovers[i].alias);
		row = gw_row_of(sec_log, "secondary", rid);
		cr_assert_eq(gw_row_num(sec_log, row, "status"), 200);
		if (!failovers[i].log_fault)
			continue;
		log = gw_mock_rows(&held, &mock, failovers[i].alias);
		row = gw_row_of(log, failovers[i].alias, rid);
		cr_assert_str_eq(csv_get(log, row, "fault"), failovers[i].log_fault, "%s",
				 failovers[i].alias);
	}
}

/* An upstream 4xx the gateway hands back. */
struct passthrough_case {
	const char *alias;		/* also the mock provider's name */
	int status;
};

static const struct passthrough_case passthroughs[] = {
	{ "s400", 400 }, { "s401", 401 }, { "s404", 404 }, { "s422", 422 },
};
#define NPASSTHROUGHS (sizeof(passthroughs) / sizeof(passthroughs[0]))

/*
 * An upstream 400, 401, 404 or 422 is handed back untouched: the same
 * status, content type and body bytes as the provider's own answer (asked
 * directly), x-faultline-provider the provider; the secondary is never
 * asked, and the provider's breaker holds nothing against it.
 */
Test(gateway, upstream_4xx_is_passed_through, .timeout = 20)
{
	struct gw_fallback cfg;
	char rid[64];
	char url[128];
	char req[256];
	char v[128];
	char labels[128];
	const char *text;
	const cJSON *br;
	size_t i;

	gw_fallback_begin(&cfg, FAST, "'request_deadline_ms':5000,", "");
	for (i = 0; i < NPASSTHROUGHS; i++) {
		char fault[128];

		snprintf(fault, sizeof(fault), "{'kind':'status','status':%d," ALWAYS "}",
			 passthroughs[i].status);
		gw_fallback_add(&cfg, passthroughs[i].alias, FAST, fault, "");
	}
	cr_assert_eq(gw_fallback_end(&cfg, ",'breaker':{'consecutive_failures':1}"), 0,
		     "the configs do not fit");
	start_mock(cfg.mock);
	start_gw(cfg.gw);

	for (i = 0; i < NPASSTHROUGHS; i++) {
		struct http_result *direct = gw_held_result(&held);
		struct http_result *r;
		struct http_opts o = { .body = gw_chat_body("mock-small", req, sizeof(req)),
				       .timeout_ms = 3000 };
		char ct_direct[128];

		/* The provider's own answer to the same request. */
		cr_assert_eq(http_do(mock_url(&mock, passthroughs[i].alias, "/v1/chat/completions",
					      url, sizeof(url)), &o, direct), 0);
		cr_assert_eq(direct->status, passthroughs[i].status);
		snprintf(rid, sizeof(rid), "pt-%s", passthroughs[i].alias);
		/* Twice: a breaker that opens after 1 failure would skip it the second time. */
		r = chat(passthroughs[i].alias, rid, NULL, 5000);
		r = chat(passthroughs[i].alias, rid, NULL, 5000);
		cr_assert_eq(r->code, CURLE_OK, "%s: curl %s", rid, r->errbuf);
		cr_assert_eq(r->status, passthroughs[i].status, "%s: status %ld, body %s", rid,
			     r->status, r->body);
		cr_assert_eq(r->body_len, direct->body_len, "%s: body\n%s\nnot the upstream's\n%s",
			     rid, r->body, direct->body);
		cr_assert_eq(memcmp(r->body, direct->body, r->body_len), 0,
			     "%s: body\n%s\nnot the upstream's\n%s", rid, r->body, direct->body);
		cr_assert_str_eq(gw_header_str(r, "content-type", v, sizeof(v)),
				 gw_header_str(direct, "content-type", ct_direct, sizeof(ct_direct)));
		cr_assert_str_eq(gw_header_str(r, "x-faultline-provider", v, sizeof(v)),
				 passthroughs[i].alias);
		cr_assert_eq(gw_header_num(r, "x-faultline-attempts"), 1, "%s: attempts %s", rid,
			     gw_header_str(r, "x-faultline-attempts", v, sizeof(v)));
	}

	text = metrics();
	br = breakers();
	for (i = 0; i < NPASSTHROUGHS; i++) {
		const cJSON *b = gw_breaker(br, passthroughs[i].alias, "mock-small");

		snprintf(labels, sizeof(labels), "provider=%s,outcome=pass_through",
			 passthroughs[i].alias);
		cr_assert_eq(gw_metric(text, "faultline_attempts_total", labels), 2,
			     "faultline_attempts_total{%s}; metrics:\n%s", labels, text);
		cr_assert_not_null(b, "no breaker for %s", passthroughs[i].alias);
		cr_assert_str_eq(gw_json_str(b, "state"), "closed", "%s: a 4xx opened its breaker",
				 passthroughs[i].alias);
		cr_assert_eq(gw_json_num(b, "consecutive_failures"), 0, "%s",
			     passthroughs[i].alias);
	}
	cr_assert_eq(gw_mock_state(&mock, "secondary", "requests"), 0,
		     "the secondary was asked after a 4xx");
	{
		static const char *const provs[] = { "secondary", NULL };

		gw_mock_settle(&mock, provs);
	}
	cr_assert_eq(gw_mock_rows(&held, &mock, "secondary")->nrows, 1,
		     "the secondary's log has rows");
}

/* A slow upstream, cut at its provider's timeout. */
struct slow_case {
	const char *alias;		/* also the mock provider's name */
	const char *log_fault;
	int log_status;			/* what the mock logs: 0 for no headers sent */
};

static const struct slow_case slows[] = {
	{ "hang", "hang", 0 },		/* never answers */
	{ "stall", "stall", 200 },	/* headers (full Content-Length), part of the body, silence */
};

/*
 * A primary that hangs, and one that sends its headers and part of its
 * body and then goes silent, are both cut at their 1000 ms timeout — by
 * the gateway's own timer, well inside the 5000 ms deadline — and the
 * secondary (50 ms) answers at about 1050 ms. The secondary's request
 * arrives about 1000 ms after the primary's.
 */
Test(gateway, slow_upstreams_are_cut_at_their_timeout, .timeout = 30)
{
	static const char *const provs[] = { "hang", "stall", "secondary", NULL };
	const struct csv_table *slow_log;
	const struct csv_table *sec_log;
	char rid[64];
	const char *text;
	size_t i;

	start_mock("{'providers':["
		   "{'name':'hang','listen':'127.0.0.1:0'," FAST ",'faults':[{'kind':'hang'," ALWAYS "}]},"
		   "{'name':'stall','listen':'127.0.0.1:0'," FAST
		   ",'faults':[{'kind':'stall','after_tokens':2," ALWAYS "}]},"
		   "{'name':'secondary','listen':'127.0.0.1:0','ttft_ms':50,'output_tokens':4}]}");
	start_gw("{'request_deadline_ms':5000,"
		 "'providers':{'hang':{'base_url':'@hang@','timeout_ms':1000},"
		 "'stall':{'base_url':'@stall@','timeout_ms':1000},"
		 "'secondary':{'base_url':'@secondary@','timeout_ms':1000}},"
		 "'models':{"
		 "'hang':{'targets':[{'provider':'hang','model':'mock-small'},"
		 "{'provider':'secondary','model':'mock-small'}]},"
		 "'stall':{'targets':[{'provider':'stall','model':'mock-small'},"
		 "{'provider':'secondary','model':'mock-small'}]}}}");

	for (i = 0; i < 2; i++) {
		struct http_result *r;

		snprintf(rid, sizeof(rid), "slow-%s", slows[i].alias);
		r = chat(slows[i].alias, rid, NULL, 8000);
		gw_expect_answer(r, slows[i].alias, "secondary", 2);
		cr_assert(r->total_ms >= 950 && r->total_ms <= 2000,
			  "%s: answered after %.0f ms; expected 1000 (timeout) + 50 (secondary)",
			  slows[i].alias, r->total_ms);
	}
	text = metrics();
	cr_assert_eq(gw_metric(text, "faultline_attempts_total", "provider=hang,outcome=timeout"), 1,
		     "metrics:\n%s", text);
	cr_assert_eq(gw_metric(text, "faultline_attempts_total", "provider=stall,outcome=timeout"), 1,
		     "metrics:\n%s", text);

	gw_mock_settle(&mock, provs);
	sec_log = gw_mock_rows(&held, &mock, "secondary");
	for (i = 0; i < 2; i++) {
		size_t srow;
		size_t prow;
		double gap;

		snprintf(rid, sizeof(rid), "slow-%s", slows[i].alias);
		slow_log = gw_mock_rows(&held, &mock, slows[i].alias);
		prow = gw_row_of(slow_log, slows[i].alias, rid);
		cr_assert_str_eq(csv_get(slow_log, prow, "fault"), slows[i].log_fault);
		cr_assert_eq(gw_row_num(slow_log, prow, "status"), slows[i].log_status,
			     "%s: the mock sent status %s", rid, csv_get(slow_log, prow, "status"));
		cr_assert_str_eq(csv_get(slow_log, prow, "outcome"), "faulted");
		srow = gw_row_of(sec_log, "secondary", rid);
		gap = gw_row_num(sec_log, srow, "t_ms") - gw_row_num(slow_log, prow, "t_ms");
		cr_assert(gap >= 950 && gap <= 1500,
			  "%s: the secondary was asked %.0f ms after the primary (timeout 1000)",
			  rid, gap);
	}
}

/* ---- retries ---- */

/*
 * A single-target alias with one same-target retry: the primary answers
 * 503 with Retry-After: 1 for its first 500 ms. The gateway waits the
 * whole second — past its 50 ms backoff cap, as Retry-After is honoured
 * exactly — and the retry succeeds: 200 from the primary after ≥ 1000 ms,
 * attempts 2; the mock saw the two requests ≥ 1 s apart.
 */
Test(gateway, retry_after_is_waited_for_on_the_same_target, .timeout = 20)
{
	static const char *const provs[] = { "primary", NULL };
	const struct csv_table *log;
	struct http_result *r;
	size_t rows[4];
	size_t n;
	double gap;

	start_mock("{'providers':[{'name':'primary','listen':'127.0.0.1:0'," FAST "}]}");
	start_gw("{'request_deadline_ms':5000,"
		 "'providers':{'primary':{'base_url':'@primary@','timeout_ms':1000}},"
		 "'models':{'solo':{'targets':[{'provider':'primary','model':'mock-small'}],"
		 "'max_attempts':2,'retry':{'max_retries':1,'base_ms':10,'cap_ms':50}}}}");
	cr_assert_eq(gw_mock_inject(&mock, "{\"provider\":\"primary\",\"kind\":\"status\","
				    "\"status\":503,\"retry_after_s\":1,\"duration_s\":0.5}"), 201);

	r = chat("solo", "ra-1", NULL, 5000);
	gw_expect_answer(r, "retry after 1 s", "primary", 2);
	cr_assert(r->total_ms >= 1000 && r->total_ms <= 1800,
		  "answered after %.0f ms; expected Retry-After's 1000 + 20", r->total_ms);

	gw_mock_settle(&mock, provs);
	log = gw_mock_rows(&held, &mock, "primary");
	n = gw_rows_of(log, "ra-1", rows, 4);
	cr_assert_eq(n, 2, "the primary saw %zu requests for ra-1", n);
	cr_assert_eq(gw_row_num(log, rows[0], "status"), 503);
	cr_assert_eq(gw_row_num(log, rows[1], "status"), 200);
	gap = gw_row_num(log, rows[1], "t_ms") - gw_row_num(log, rows[0], "t_ms");
	cr_assert(gap >= 995 && gap <= 1500, "the retry came %.0f ms after the 503", gap);
}

/*
 * A Retry-After of 30 s cannot fit in a 3 s deadline, so the gateway does
 * not wait for it: with a second target it fails over at once (the
 * secondary answers in well under a second), and with none it answers a
 * 502 at once, after one attempt.
 */
Test(gateway, retry_after_past_the_deadline_is_not_waited_for, .timeout = 20)
{
	struct http_result *r;
	cJSON *doc;
	const cJSON *e;

	start_mock("{'providers':["
		   "{'name':'primary','listen':'127.0.0.1:0'," FAST ",'faults':"
		   "[{'kind':'status','status':503,'retry_after_s':30," ALWAYS "}]},"
		   "{'name':'secondary','listen':'127.0.0.1:0'," FAST "}]}");
	start_gw("{'request_deadline_ms':3000,"
		 "'providers':{'primary':{'base_url':'@primary@','timeout_ms':1000},"
		 "'secondary':{'base_url':'@secondary@','timeout_ms':1000}},"
		 "'retry':{'max_retries':1},"
		 "'models':{"
		 "'chat':{'targets':[{'provider':'primary','model':'mock-small'},"
		 "{'provider':'secondary','model':'mock-small'}],'max_attempts':3},"
		 "'solo':{'targets':[{'provider':'primary','model':'mock-small'}],'max_attempts':2}}}");

	r = chat("chat", "ra30-chat", NULL, 5000);
	gw_expect_answer(r, "Retry-After 30 s, two targets", "secondary", 2);
	cr_assert_lt(r->total_ms, 500, "answered after %.0f ms: it waited", r->total_ms);

	r = chat("solo", "ra30-solo", NULL, 5000);
	cr_assert_lt(r->total_ms, 500, "answered after %.0f ms: it waited", r->total_ms);
	cr_assert_eq(gw_header_num(r, "x-faultline-attempts"), 1);
	/* README: a retry whose Retry-After does not fit is not waited for; that ends in a 502. */
	doc = expect_error(r, "Retry-After 30 s, one target", 502, "bad_gateway", "upstream_error");
	cr_assert_eq(attempts_len(doc), 1, "%s", r->body);
	e = expect_attempt(doc, 0, "primary", "http_5xx");
	cr_assert_eq(gw_json_num(e, "status"), 503, "%s", r->body);
}

/* ---- the gateway's own errors ---- */

/* A request whose deadline runs out. */
struct deadline_case {
	const char *alias;
	int attempts;			/* x-faultline-attempts */
	const char *cut_by_deadline;	/* the provider whose attempt the deadline cut */
	const char *timed_out;		/* one cut by its own timeout first, or NULL */
};

static const struct deadline_case deadlines[] = {
	/* Both hang with timeout 5000: the first attempt gets the whole 1500 ms. */
	{ "long", 1, "a5000", NULL },
	/* The first times out at its own 1000 ms; the second gets the last 500 ms. */
	{ "short_first", 2, "b5000", "a1000" },
};

/*
 * Deadline 1500 ms with hanging providers: a 504 gateway_timeout /
 * deadline_exceeded at about 1500 ms, error.attempts listing the
 * attempts. An attempt cut by the deadline is not held against its
 * provider (its breaker counts no failure); one that ran out its own
 * timeout is.
 */
Test(gateway, deadline_exhausted_is_504, .timeout = 30)
{
	size_t i;

	start_mock("{'providers':["
		   "{'name':'h1','listen':'127.0.0.1:0'," FAST ",'faults':[{'kind':'hang'," ALWAYS "}]},"
		   "{'name':'h2','listen':'127.0.0.1:0'," FAST ",'faults':[{'kind':'hang'," ALWAYS "}]}]}");
	start_gw("{'request_deadline_ms':1500,"
		 "'providers':{'a5000':{'base_url':'@h1@','timeout_ms':5000},"
		 "'b5000':{'base_url':'@h2@','timeout_ms':5000},"
		 "'a1000':{'base_url':'@h1@','timeout_ms':1000}},"
		 "'models':{"
		 "'long':{'targets':[{'provider':'a5000','model':'mock-small'},"
		 "{'provider':'b5000','model':'mock-small'}]},"
		 "'short_first':{'targets':[{'provider':'a1000','model':'mock-small'},"
		 "{'provider':'b5000','model':'mock-small'}]}}}");

	for (i = 0; i < sizeof(deadlines) / sizeof(deadlines[0]); i++) {
		const struct deadline_case *c = &deadlines[i];
		struct http_result *r = chat(c->alias, NULL, NULL, 8000);
		const cJSON *br;
		cJSON *doc;

		cr_assert(r->total_ms >= 1400 && r->total_ms <= 2300,
			  "%s: answered after %.0f ms; deadline 1500", c->alias, r->total_ms);
		doc = expect_error(r, c->alias, 504, "gateway_timeout", "deadline_exceeded");
		cr_assert_eq(gw_header_num(r, "x-faultline-attempts"), c->attempts, "%s", c->alias);
		cr_assert_eq(attempts_len(doc), c->attempts, "%s: %s", c->alias, r->body);
		if (c->timed_out) {
			const cJSON *e = expect_attempt(doc, 0, c->timed_out, "timeout");
			double ms = gw_json_num(e, "ms");

			cr_assert(ms >= 900 && ms <= 1400, "%s: attempts[0].ms %g (timeout 1000)",
				  c->alias, ms);
			expect_attempt(doc, 1, c->cut_by_deadline, NULL);
		} else {
			expect_attempt(doc, 0, c->cut_by_deadline, NULL);
		}
		br = breakers();
		cr_assert_eq(breaker_num(br, c->cut_by_deadline, "consecutive_failures"), 0,
			     "%s: an attempt cut by the deadline was held against %s", c->alias,
			     c->cut_by_deadline);
		if (c->timed_out)
			cr_assert_eq(breaker_num(br, c->timed_out, "consecutive_failures"), 1,
				     "%s: %s's own timeout was not counted", c->alias, c->timed_out);
	}
}

/*
 * A provider timeout as long as the whole deadline (the usual way configs
 * are written): each hang still counts against the provider, though the
 * deadline's remainder is always a little under timeout_ms — after two the
 * breaker opens and the next request goes straight to the healthy target.
 */
Test(gateway, hang_as_long_as_the_deadline_opens_the_breaker, .timeout = 30)
{
	struct http_result *r;
	const cJSON *br;
	int i;

	start_mock("{'providers':["
		   "{'name':'hang','listen':'127.0.0.1:0'," FAST ",'faults':[{'kind':'hang'," ALWAYS "}]},"
		   "{'name':'ok','listen':'127.0.0.1:0'," FAST "}]}");
	start_gw("{'request_deadline_ms':1000,"
		 "'providers':{'hang':{'base_url':'@hang@','timeout_ms':1000},"
		 "'ok':{'base_url':'@ok@','timeout_ms':1000}},"
		 "'breaker':{'consecutive_failures':2,'cooldown_ms':60000},"
		 "'models':{'chat':{'targets':[{'provider':'hang','model':'mock-small'},"
		 "{'provider':'ok','model':'mock-small'}]}}}");
	for (i = 0; i < 2; i++) {
		r = chat("chat", NULL, NULL, 5000);
		expect_error(r, "hang eats the deadline", 504, "gateway_timeout", "deadline_exceeded");
	}
	br = breakers();
	cr_assert_str_eq(gw_json_str(gw_breaker(br, "hang", "mock-small"), "state"), "open",
			 "two hangs as long as the deadline did not open the breaker");
	r = chat("chat", NULL, NULL, 5000);
	cr_assert_eq(r->status, 200, "%s", r->body);
	cr_assert_lt(r->total_ms, 500, "the open primary was not skipped: %.0f ms", r->total_ms);
	cr_assert_eq(gw_header_num(r, "x-faultline-attempts"), 1);
}

/* How a request goes when every target is unreachable. */
struct unreachable_case {
	const char *when_all_open;
	int attempts_when_open;		/* x-faultline-attempts once both are open */
};

static const struct unreachable_case unreachables[] = {
	{ "least_recently_failed", 2 },	/* each refusing target is tried anyway */
	{ "fail_fast", 0 },		/* nothing is tried */
};

/*
 * Both providers refuse connections: every request gets 503
 * service_unavailable / all_providers_unavailable at once — before the
 * breakers open (refusals fail fast) and after (consecutive_failures 2
 * opens both after two requests, as the events file and /admin/breakers
 * show). Once both are open, least_recently_failed still tries each of
 * them, oldest failure first (a refusal costs nothing); fail_fast tries
 * none, and says in Retry-After when the first breaker goes half-open.
 */
Test(gateway, unreachable_providers_answer_503_at_once, .timeout = 30)
{
	char tmpl[2048];
	size_t k;

	start_mock("{'providers':["
		   "{'name':'d1','listen':'127.0.0.1:0'," FAST ",'faults':[{'kind':'down'," ALWAYS "}]},"
		   "{'name':'d2','listen':'127.0.0.1:0'," FAST ",'faults':[{'kind':'down'," ALWAYS "}]}]}");
	for (k = 0; k < sizeof(unreachables) / sizeof(unreachables[0]); k++) {
		const struct unreachable_case *c = &unreachables[k];
		const cJSON *br;
		cJSON *ev;
		int i;

		snprintf(tmpl, sizeof(tmpl),
			 "{'request_deadline_ms':5000,"
			 "'providers':{'d1':{'base_url':'@d1@'},'d2':{'base_url':'@d2@'}},"
			 "'breaker':{'consecutive_failures':2,'cooldown_ms':10000,"
			 "'cooldown_jitter':0,'when_all_open':'%s'},"
			 "'models':{'chat':{'targets':[{'provider':'d1','model':'mock-small'},"
			 "{'provider':'d2','model':'mock-small'}]}}}", c->when_all_open);
		start_gw(tmpl);
		for (i = 0; i < 4; i++) {
			struct http_result *r = chat("chat", NULL, NULL, 5000);
			cJSON *doc;
			int j;
			int open = 0;

			doc = expect_error(r, c->when_all_open, 503, "service_unavailable",
					   "all_providers_unavailable");
			cr_assert_lt(r->total_ms, 300, "%s, request %d: %.0f ms", c->when_all_open,
				     i + 1, r->total_ms);
			cr_assert_eq(attempts_len(doc), 2, "%s: %s", c->when_all_open, r->body);
			for (j = 0; j < 2; j++) {
				const char *o = gw_json_str(attempt_at(doc, j), "outcome");

				cr_assert(o && (strcmp(o, "refused") == 0 ||
						strcmp(o, "breaker_open") == 0),
					  "%s: outcome %s in %s", c->when_all_open, o, r->body);
				open += strcmp(o, "breaker_open") == 0;
			}
			if (i < 2) {
				cr_assert_eq(open, 0, "%s, request %d: %s", c->when_all_open, i + 1,
					     r->body);
				cr_assert_eq(gw_header_num(r, "x-faultline-attempts"), 2);
			} else {
				cr_assert_eq(open, 2 - c->attempts_when_open,
					     "%s, request %d: %s", c->when_all_open, i + 1, r->body);
				/*
				 * Every request tries d1, then d2: d1's failure is always
				 * the older, so it goes first.
				 */
				if (c->attempts_when_open == 2)
					cr_assert_str_eq(gw_json_str(attempt_at(doc, 0), "provider"),
							 "d1", "not the least recently failed first: %s",
							 r->body);
				cr_assert_eq(gw_header_num(r, "x-faultline-attempts"),
					     c->attempts_when_open, "%s, request %d",
					     c->when_all_open, i + 1);
			}
			/*
			 * Retry-After only when nothing was tried because every
			 * target is open: the seconds until the first goes
			 * half-open (cooldown 10 s).
			 */
			if (i >= 2 && c->attempts_when_open == 0) {
				double ra = gw_header_num(r, "Retry-After");

				cr_assert(ra >= 9 && ra <= 10, "%s, request %d: Retry-After %.0f",
					  c->when_all_open, i + 1, ra);
			} else {
				char v[32];

				cr_assert_null(http_header(r, "Retry-After", v, sizeof(v)),
					       "%s, request %d: Retry-After %s", c->when_all_open,
					       i + 1, v);
			}
		}
		br = breakers();
		cr_assert_str_eq(gw_json_str(gw_breaker(br, "d1", "mock-small"), "state"), "open");
		cr_assert_str_eq(gw_json_str(gw_breaker(br, "d2", "mock-small"), "state"), "open");
		ev = gw_held_doc(&held, gw_events(&gw));
		cr_assert_not_null(ev, "a line of the events file is not JSON");
		cr_assert_geq(cJSON_GetArraySize(ev), 2, "%s: events %s", c->when_all_open,
			      cJSON_PrintUnformatted(ev));
		cr_assert_str_eq(gw_json_str(cJSON_GetArrayItem(ev, 0), "to"), "open");
		cr_assert_str_eq(gw_json_str(cJSON_GetArrayItem(ev, 1), "to"), "open");
		cr_assert_eq(gw_metric(metrics(), "faultline_requests_total", "alias=chat,status=503"), 4,
			     "%s: faultline_requests_total{alias=\"chat\",status=\"503\"}",
			     c->when_all_open);
		cr_assert_eq(gw_stop(&gw, SIGTERM, 5000), 0, "the gateway did not exit 0");
	}
}

/*
 * Upstreams that were reached and failed: both 503 → 502 bad_gateway /
 * upstream_error listing both attempts (http_5xx, status 503, their
 * providers named in the message too); and max_attempts 1 stops at the
 * first target, so the healthy second one is never asked.
 */
Test(gateway, exhausted_attempts_are_502, .timeout = 20)
{
	struct http_result *r;
	const char *msg;
	cJSON *doc;
	int i;

	start_mock("{'providers':["
		   "{'name':'e1','listen':'127.0.0.1:0'," FAST ",'faults':[{'kind':'status'," ALWAYS "}]},"
		   "{'name':'e2','listen':'127.0.0.1:0'," FAST ",'faults':[{'kind':'status'," ALWAYS "}]},"
		   "{'name':'ok','listen':'127.0.0.1:0'," FAST "}]}");
	start_gw("{'request_deadline_ms':5000,"
		 "'providers':{'e1':{'base_url':'@e1@'},'e2':{'base_url':'@e2@'},"
		 "'ok':{'base_url':'@ok@'}},"
		 "'models':{"
		 "'both':{'targets':[{'provider':'e1','model':'mock-small'},"
		 "{'provider':'e2','model':'mock-small'}]},"
		 "'capped':{'targets':[{'provider':'e1','model':'mock-small'},"
		 "{'provider':'ok','model':'mock-small'}],'max_attempts':1},"
		 "'retried':{'targets':[{'provider':'e1','model':'mock-small'},"
		 "{'provider':'e2','model':'mock-small'},{'provider':'ok','model':'mock-small'}],"
		 "'max_attempts':3,'retry':{'max_retries':1,'base_ms':20,'cap_ms':40}}}}");

	r = chat("both", NULL, NULL, 5000);
	doc = expect_error(r, "both 503", 502, "bad_gateway", "upstream_error");
	cr_assert_eq(gw_header_num(r, "x-faultline-attempts"), 2);
	cr_assert_eq(attempts_len(doc), 2, "%s", r->body);
	for (i = 0; i < 2; i++) {
		const cJSON *e = expect_attempt(doc, i, i ? "e2" : "e1", "http_5xx");

		cr_assert_eq(gw_json_num(e, "status"), 503, "%s", r->body);
		cr_assert(gw_json_num(e, "ms") >= 0, "attempts[%d].ms in %s", i, r->body);
	}
	msg = gw_json_str(cJSON_GetObjectItemCaseSensitive(doc, "error"), "message");
	cr_assert(strstr(msg, "e1") && strstr(msg, "e2"), "the message names neither: %s", msg);

	r = chat("capped", NULL, NULL, 5000);
	doc = expect_error(r, "max_attempts 1", 502, "bad_gateway", "upstream_error");
	cr_assert_eq(gw_header_num(r, "x-faultline-attempts"), 1);
	expect_attempt(doc, 0, "e1", "http_5xx");
	cr_assert_eq(gw_mock_state(&mock, "ok", "requests"), 0,
		     "max_attempts 1, yet the second target was asked");

	/* One retry per target, three attempts in all: e1, e1 again, e2 — never ok. */
	r = chat("retried", NULL, NULL, 5000);
	doc = expect_error(r, "retries under max_attempts 3", 502, "bad_gateway", "upstream_error");
	cr_assert_eq(gw_header_num(r, "x-faultline-attempts"), 3, "%s", r->body);
	cr_assert_eq(attempts_len(doc), 3, "%s", r->body);
	expect_attempt(doc, 0, "e1", "http_5xx");
	expect_attempt(doc, 1, "e1", "http_5xx");
	expect_attempt(doc, 2, "e2", "http_5xx");
	cr_assert_eq(gw_mock_state(&mock, "ok", "requests"), 0,
		     "max_attempts 3 used up, yet the third target was asked");
	cr_assert_eq(gw_mock_state(&mock, "e1", "requests"), 4);
}

/*
 * x-faultline-provider: secondary uses only the secondary's targets: it
 * answers, with one attempt, and the primary is never asked.
 */
Test(gateway, provider_header_forces_a_provider, .timeout = 20)
{
	struct http_result *r;

	start_mock("{'providers':["
		   "{'name':'primary','listen':'127.0.0.1:0'," FAST "},"
		   "{'name':'secondary','listen':'127.0.0.1:0'," FAST "}]}");
	start_gw("{'providers':{'primary':{'base_url':'@primary@'},"
		 "'secondary':{'base_url':'@secondary@'}},"
		 "'models':{'chat':{'targets':[{'provider':'primary','model':'mock-small'},"
		 "{'provider':'secondary','model':'mock-small'}]}}}");
	r = chat("chat", NULL, "x-faultline-provider: secondary", 5000);
	gw_expect_answer(r, "forced secondary", "secondary", 1);
	r = chat("chat", NULL, NULL, 5000);
	gw_expect_answer(r, "no header", "primary", 1);
	cr_assert_eq(gw_mock_state(&mock, "primary", "requests"), 1);
	cr_assert_eq(gw_mock_state(&mock, "secondary", "requests"), 1);
}

/*
 * x-faultline-no-reroute: 1, a request with side effects. Once an attempt
 * has reached an upstream (connected) it is neither retried nor failed
 * over: a 503 from the primary comes back as the gateway's 502 after one
 * attempt, though a retry and a healthy secondary were there, and the
 * secondary never sees it; a hung primary is not re-sent either (504
 * within the deadline). A primary that refuses the connection never got
 * the request, so the secondary may take it. Without the header the same
 * 503 fails over as usual.
 */
Test(gateway, no_reroute_sends_a_request_once, .timeout = 30)
{
	static const char *const nr = "x-faultline-no-reroute: 1";
	struct http_result *r;
	cJSON *doc;

	start_mock("{'providers':["
		   "{'name':'fails','listen':'127.0.0.1:0'," FAST ","
		   "'faults':[{'kind':'status','status':503," ALWAYS "}]},"
		   "{'name':'hangs','listen':'127.0.0.1:0'," FAST ","
		   "'faults':[{'kind':'hang'," ALWAYS "}]},"
		   "{'name':'refuses','listen':'127.0.0.1:0'," FAST ","
		   "'faults':[{'kind':'down'," ALWAYS "}]},"
		   "{'name':'secondary','listen':'127.0.0.1:0'," FAST "}]}");
	start_gw("{'request_deadline_ms':3000,'breaker':{'enabled':false},"
		 "'providers':{'fails':{'base_url':'@fails@','timeout_ms':500},"
		 "'hangs':{'base_url':'@hangs@','timeout_ms':500},"
		 "'refuses':{'base_url':'@refuses@','timeout_ms':500},"
		 "'secondary':{'base_url':'@secondary@','timeout_ms':500}},"
		 "'models':{"
		 "'a':{'targets':[{'provider':'fails','model':'mock-small'},"
		 "{'provider':'secondary','model':'mock-small'}],'max_attempts':3,"
		 "'retry':{'max_retries':1,'base_ms':1,'cap_ms':5}},"
		 "'b':{'targets':[{'provider':'hangs','model':'mock-small'},"
		 "{'provider':'secondary','model':'mock-small'}]},"
		 "'c':{'targets':[{'provider':'refuses','model':'mock-small'},"
		 "{'provider':'secondary','model':'mock-small'}]}}}");

	r = chat("a", "nr-503", nr, 5000);
	doc = expect_error(r, "no reroute after a 503", 502, "bad_gateway", "upstream_error");
	cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(
			     cJSON_GetObjectItemCaseSensitive(doc, "error"), "attempts")), 1,
		     "not one attempt: %s", r->body);
	cr_assert_eq(gw_header_num(r, "x-faultline-attempts"), 1);
	cr_assert_eq(gw_mock_state(&mock, "fails", "requests"), 1, "retried on the same target");
	cr_assert_eq(gw_mock_state(&mock, "secondary", "requests"), 0, "failed over");

	r = chat("b", "nr-hang", nr, 5000);
	expect_error(r, "no reroute after a hang", 502, "bad_gateway", "upstream_error");
	cr_assert(r->total_ms < 1500, "answered after %.0f ms: the attempt's 500 ms, then at once",
		  r->total_ms);
	cr_assert_eq(gw_mock_state(&mock, "secondary", "requests"), 0, "a hung request re-sent");

	r = chat("c", "nr-refused", nr, 5000);
	gw_expect_answer(r, "refused: never delivered", "secondary", 2);

	r = chat("a", "rr-503", NULL, 5000);
	gw_expect_answer(r, "without the header", "secondary", 3);
}

/*
 * Spend in /metrics: each answer's x-faultline-cost-usd, summed by
 * provider, tenant and feature (x-faultline-tenant and -feature; "" when
 * absent), with its tokens; a request that failed over is counted where it
 * was answered.
 */
Test(gateway, spend_by_provider_tenant_and_feature, .timeout = 20)
{
	static const struct {
		const char *tenant;
		const char *feature;
		const char *alias;
	} reqs[] = {
		{ "acme", "search", "chat" }, { "acme", "search", "chat" },
		{ "acme", "summary", "chat" }, { "globex", "search", "fo" }, { NULL, NULL, "chat" },
	};
	double want[5] = { 0 };
	double tokens = 0;
	char th[96];
	char fh[96];
	char labels[160];
	size_t i;

	start_mock("{'providers':["
		   "{'name':'primary','listen':'127.0.0.1:0'," FAST "},"
		   "{'name':'down','listen':'127.0.0.1:0'," FAST ",'faults':[{'kind':'down'," ALWAYS "}]},"
		   "{'name':'secondary','listen':'127.0.0.1:0'," FAST "}]}");
	start_gw("{'providers':{"
		 "'primary':{'base_url':'@primary@','price_per_1k':{'input':0.15,'output':0.6}},"
		 "'down':{'base_url':'@down@'},"
		 "'secondary':{'base_url':'@secondary@','price_per_1k':{'input':1,'output':2}}},"
		 "'models':{'chat':{'targets':[{'provider':'primary','model':'mock-small'}]},"
		 "'fo':{'targets':[{'provider':'down','model':'mock-small'},"
		 "{'provider':'secondary','model':'mock-small'}]}}}");
	for (i = 0; i < sizeof(reqs) / sizeof(reqs[0]); i++) {
		const char *hdrs[3] = { NULL, NULL, NULL };
		struct http_result *r = gw_held_result(&held);

		if (reqs[i].tenant) {
			snprintf(th, sizeof(th), "x-faultline-tenant: %s", reqs[i].tenant);
			snprintf(fh, sizeof(fh), "x-faultline-feature: %s", reqs[i].feature);
			hdrs[0] = th;
			hdrs[1] = fh;
		}
		cr_assert_eq(gw_chat(&gw, reqs[i].alias, hdrs, 5000, r), 0);
		cr_assert_eq(r->status, 200, "request %zu: %ld %s", i, r->status, r->body);
		want[i] = gw_header_num(r, "x-faultline-cost-usd");
		cr_assert_gt(want[i], 0, "request %zu: no cost", i);
	}
	cr_assert_float_eq(gw_metric(metrics(), "faultline_cost_usd_total",
				     "provider=primary,tenant=acme,feature=search"),
			   want[0] + want[1], 1e-9);
	cr_assert_float_eq(gw_metric(metrics(), "faultline_cost_usd_total",
				     "provider=primary,tenant=acme,feature=summary"), want[2], 1e-9);
	cr_assert_float_eq(gw_metric(metrics(), "faultline_cost_usd_total",
				     "provider=secondary,tenant=globex,feature=search"), want[3], 1e-9);
	snprintf(labels, sizeof(labels), "provider=primary,tenant=,feature=");
	cr_assert_float_eq(gw_metric(metrics(), "faultline_cost_usd_total", labels), want[4], 1e-9);
	cr_assert(isnan(gw_metric(metrics(), "faultline_cost_usd_total",
				  "provider=down,tenant=globex,feature=search")),
		  "the provider that refused has a spend row");
	tokens = gw_metric(metrics(), "faultline_tokens_total",
			   "provider=primary,tenant=acme,feature=search,direction=output");
	cr_assert_eq(tokens, 16, "two answers of 8 tokens: %g", tokens);
}

/*
 * Active health checks (GET /models every 100 ms, fall 2, rise 2) feed the
 * breaker with no traffic at all: the primary goes down while idle, and
 * its breaker opens (within a few checks) before any request comes, so the
 * first request goes to the secondary in one attempt; once the primary is
 * back the breaker goes half-open long before its 30 s cooldown, still
 * with no traffic, and the next request is answered by the primary.
 */
Test(gateway, health_checks_open_and_wake_the_breaker, .timeout = 30)
{
	static const char *const open_st = "provider=primary,model=mock-small";
	struct http_result *r;
	double v;

	start_mock("{'providers':["
		   "{'name':'primary','listen':'127.0.0.1:0'," FAST "},"
		   "{'name':'secondary','listen':'127.0.0.1:0'," FAST "}]}");
	start_gw("{'breaker':{'cooldown_ms':30000,'cooldown_jitter':0},"
		 "'providers':{'primary':{'base_url':'@primary@',"
		 "'health_check':{'interval_ms':100,'unhealthy_interval_ms':100,"
		 "'timeout_ms':300,'fall':2,'rise':2}},"
		 "'secondary':{'base_url':'@secondary@'}},"
		 "'models':{'chat':{'targets':[{'provider':'primary','model':'mock-small'},"
		 "{'provider':'secondary','model':'mock-small'}]}}}");
	v = gw_metric_wait(&gw, "faultline_provider_healthy", "provider=primary", 1, 2000);
	cr_assert_eq(v, 1, "the primary is not healthy at the start: %g", v);
	/* A provider starts healthy: wait for a check that passed, which the end counts. */
	v = gw_metric_wait_min(&gw, "faultline_health_checks_total",
			       "provider=primary,result=pass", 1, 2000);
	cr_assert_geq(v, 1, "no health check passed at the start: %g", v);
	cr_assert_eq(gw_mock_inject(&mock, "{\"provider\":\"primary\",\"kind\":\"down\","
				    "\"duration_s\":1.5}"), 201);
	v = gw_metric_wait(&gw, "faultline_breaker_state", open_st, 1, 1200);
	cr_assert_eq(v, 1, "the breaker did not open from the health checks: state %g", v);
	cr_assert_eq(gw_metric(metrics(), "faultline_provider_healthy", "provider=primary"), 0);
	r = chat("chat", "after-down", NULL, 5000);
	gw_expect_answer(r, "the first request after the checks saw it down", "secondary", 1);

	v = gw_metric_wait(&gw, "faultline_breaker_state", open_st, 2, 4000);
	cr_assert_eq(v, 2, "the breaker did not go half-open when the checks passed: state %g", v);
	r = chat("chat", "after-up", NULL, 5000);
	gw_expect_answer(r, "the probe after the checks saw it back", "primary", 1);
	cr_assert_geq(gw_metric(metrics(), "faultline_health_checks_total",
				"provider=primary,result=fail"), 2);
	cr_assert_geq(gw_metric(metrics(), "faultline_health_checks_total",
				"provider=primary,result=pass"), 3);
}

/*
 * Checks speed up while traffic holds a breaker open (HAProxy's "on-error
 * fastinter"): the primary is checked every 60 s while all is well, so a
 * 503 storm that begins between checks is found by requests alone — the
 * first opens the breaker (one failure in a row) for 30 s. The checks then
 * run every 100 ms: the next one, due at once, fails and makes the
 * provider unhealthy (fall 1), and the first to pass after the storm
 * (rise 1) sends the breaker half-open, long before its cooldown, and the
 * next request is the primary's. Without the faster checks the primary
 * would be out for the whole 30 s (the test's timeout is 20).
 */
Test(gateway, checks_speed_up_while_a_breaker_is_open, .timeout = 20)
{
	static const char *const open_st = "provider=primary,model=mock-small";
	struct http_result *r;
	double v;

	start_mock("{'providers':["
		   "{'name':'primary','listen':'127.0.0.1:0'," FAST "},"
		   "{'name':'secondary','listen':'127.0.0.1:0'," FAST "}]}");
	start_gw("{'breaker':{'cooldown_ms':30000,'cooldown_jitter':0,'consecutive_failures':1,"
		 "'half_open_probes':1},"
		 "'providers':{'primary':{'base_url':'@primary@',"
		 "'health_check':{'interval_ms':60000,'unhealthy_interval_ms':100,"
		 "'timeout_ms':300,'fall':1,'rise':1}},"
		 "'secondary':{'base_url':'@secondary@'}},"
		 "'models':{'chat':{'targets':[{'provider':'primary','model':'mock-small'},"
		 "{'provider':'secondary','model':'mock-small'}]}}}");
	v = gw_metric_wait_min(&gw, "faultline_health_checks_total",
			       "provider=primary,result=pass", 1, 5000);
	cr_assert_geq(v, 1, "the first check of the primary did not pass: %g", v);
	cr_assert_eq(gw_mock_inject(&mock, "{\"provider\":\"primary\",\"kind\":\"status\","
				    "\"status\":503,\"duration_s\":1.5}"), 201);
	r = chat("chat", "in-the-storm", NULL, 5000);
	gw_expect_answer(r, "the request that found the storm", "secondary", 2);
	cr_assert_eq(gw_metric(metrics(), "faultline_breaker_state", open_st), 1,
		     "one 503 did not open the breaker");
	v = gw_metric_wait(&gw, "faultline_provider_healthy", "provider=primary", 0, 2000);
	cr_assert_eq(v, 0, "no check came at once to confirm the storm: healthy %g", v);
	v = gw_metric_wait(&gw, "faultline_breaker_state", open_st, 2, 5000);
	cr_assert_eq(v, 2, "the checks did not see the primary back before the cooldown: state %g",
		     v);
	r = chat("chat", "after-the-storm", NULL, 5000);
	gw_expect_answer(r, "the probe after the checks saw it back", "primary", 1);
	cr_assert_eq(gw_metric(metrics(), "faultline_breaker_state", open_st), 0,
		     "the probe's success did not close the breaker");
}

/*
 * A gateway's health checks reach the providers' logs (what a detection
 * study counts its check overhead by): the primary's GET /models checks
 * as rows of kind "models", and while a hang fault holds them, rows of
 * fault "hang" (outcome faulted) that the gateway gave up at the check's
 * timeout (300 ms); the secondary's completion checks as chat rows whose
 * x-request-id is health-check-secondary-N. No user request is sent: every row is a check.
 */
Test(gateway, health_checks_are_logged_by_the_providers, .timeout = 30)
{
	static const char *const provs[] = { "primary", "secondary", NULL };
	const struct csv_table *log;
	size_t models = 0, hung = 0, full = 0, chats = 0;
	double v;
	size_t i;

	start_mock("{'providers':["
		   "{'name':'primary','listen':'127.0.0.1:0'," FAST "},"
		   "{'name':'secondary','listen':'127.0.0.1:0'," FAST "}]}");
	start_gw("{'providers':{'primary':{'base_url':'@primary@',"
		 "'health_check':{'interval_ms':100,'unhealthy_interval_ms':100,"
		 "'timeout_ms':300,'fall':2,'rise':2}},"
		 "'secondary':{'base_url':'@secondary@',"
		 "'health_check':{'interval_ms':100,'timeout_ms':1000,'request':'completion'}}},"
		 "'models':{'chat':{'targets':[{'provider':'primary','model':'mock-small'},"
		 "{'provider':'secondary','model':'mock-small'}]}}}");
	v = gw_metric_wait(&gw, "faultline_provider_healthy", "provider=primary", 1, 2000);
	cr_assert_eq(v, 1, "the primary is not healthy at the start: %g", v);
	/*
	 * A provider starts out healthy, before any check: wait for one that
	 * passed (on a loaded machine the first may come late), then hang it.
	 */
	v = gw_metric_wait_min(&gw, "faultline_health_checks_total",
			       "provider=primary,result=pass", 1, 5000);
	cr_assert_geq(v, 1, "no check of the primary passed: %g", v);
	cr_assert_eq(gw_mock_inject(&mock, "{\"provider\":\"primary\",\"kind\":\"hang\","
				    "\"duration_s\":30}"), 201);
	v = gw_metric_wait(&gw, "faultline_provider_healthy", "provider=primary", 0, 3000);
	cr_assert_eq(v, 0, "the hang did not make the primary unhealthy: %g", v);
	cr_assert_eq(gw_stop(&gw, SIGTERM, 5000), 0, "the gateway did not stop cleanly");
	gw_mock_settle(&mock, provs);

	log = gw_mock_rows(&held, &mock, "primary");
	for (i = 1; i < log->nrows; i++) {
		const char *rid = csv_get(log, i, "request_id");

		cr_assert_str_eq(csv_get(log, i, "kind"), "models", "row %zu", i);
		cr_assert(rid && strncmp(rid, "health-check-primary-", 21) == 0,
			  "row %zu: request_id %s", i, rid ? rid : "(none)");
		models++;
		if (strcmp(csv_get(log, i, "fault"), "hang") != 0)
			continue;
		hung++;
		cr_assert_str_eq(csv_get(log, i, "outcome"), "faulted", "row %zu", i);
		full += gw_row_num(log, i, "dur_ms") >= 290;
	}
	/*
	 * Each hung check held to its 300 ms but the one the gateway's stop
	 * cut (the next check is due at once after a timeout longer than the
	 * 100 ms interval: one is always out).
	 */
	cr_assert_geq(hung, 2, "%zu hung checks logged (fall is 2)", hung);
	cr_assert_geq(full + 1, hung, "%zu of %zu hung checks given up before their 300 ms",
		      hung - full, hung);
	cr_assert_gt(models, hung, "no passing check logged before the hang");

	log = gw_mock_rows(&held, &mock, "secondary");
	for (i = 1; i < log->nrows; i++) {
		const char *rid = csv_get(log, i, "request_id");

		cr_assert_str_eq(csv_get(log, i, "kind"), "chat", "row %zu", i);
		cr_assert(rid && strncmp(rid, "health-check-secondary-", 23) == 0,
			  "row %zu: request_id %s", i, rid ? rid : "(none)");
		chats++;
	}
	cr_assert_geq(chats, 2, "%zu completion checks logged", chats);
}

/* ---- circuit breakers ---- */

TestSuite(gateway_breaker, .fini = teardown);

/* Unix epoch ms with sub-millisecond precision. */
static double unix_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Waits until at_ms (Unix ms): paces requests, or lets a cooldown pass by design. */
static void wait_until(double at_ms)
{
	double left = at_ms - unix_now();

	if (left > 0)
		usleep((useconds_t)(left * 1000));
}

/* What one of a sequence of requests got. */
struct seen {
	double sent;			/* Unix ms */
	long status;
	char provider[32];
	double attempts;
};

/* One chat request, recorded (no assertion, nothing held). */
static void chat_seen(const char *alias, const char *rid, struct seen *s)
{
	char hrid[96];
	const char *hdrs[] = { hrid, NULL };
	struct http_result r;

	snprintf(hrid, sizeof(hrid), "x-request-id: %s", rid);
	s->sent = unix_now();
	if (gw_chat(&gw, alias, hdrs, 5000, &r) != 0) {
		s->status = -1;
		return;
	}
	s->status = r.code == CURLE_OK ? r.status : -1;
	if (!http_header(&r, "x-faultline-provider", s->provider, sizeof(s->provider)))
		snprintf(s->provider, sizeof(s->provider), "(none)");
	s->attempts = gw_header_num(&r, "x-faultline-attempts");
	http_result_free(&r);
}

/* The events of provider prov, in order, as an array held until teardown. */
static const cJSON *events_of(const char *prov)
{
	cJSON *all = gw_events(&gw);
	cJSON *mine = gw_held_doc(&held, cJSON_CreateArray());
	const cJSON *e;

	cr_assert_not_null(all, "a line of %s is not a JSON object", gw.events_path);
	gw_held_doc(&held, all);
	cJSON_ArrayForEach(e, all) {
		const char *p = gw_json_str(e, "provider");

		if (p && strcmp(p, prov) == 0)
			cJSON_AddItemReferenceToArray(mine, (cJSON *)e);
	}
	return mine;
}

/*
 * Asserts event i: from → to, for provider prov, model mock-small, with a
 * reason. Returns its time (Unix ms).
 */
static double expect_event(const cJSON *evs, int i, const char *prov, const char *from,
			   const char *to)
{
	const cJSON *e = cJSON_GetArrayItem(evs, i);
	const char *reason;

	cr_assert_not_null(e, "no event %d for %s: %s", i, prov, cJSON_PrintUnformatted(evs));
	cr_assert_str_eq(gw_json_str(e, "model"), "mock-small");
	cr_assert_str_eq(gw_json_str(e, "from") ? gw_json_str(e, "from") : "", from,
			 "event %d: %s", i, cJSON_PrintUnformatted(e));
	cr_assert_str_eq(gw_json_str(e, "to") ? gw_json_str(e, "to") : "", to,
			 "event %d: %s", i, cJSON_PrintUnformatted(e));
	reason = gw_json_str(e, "reason");
	cr_assert(reason && reason[0], "event %d has no reason", i);
	cr_assert(gw_json_num(e, "t_unix_ms") > 1e12, "event %d: t_unix_ms", i);
	return gw_json_num(e, "t_unix_ms");
}

#define BR_REQUESTS 32
#define BR_PERIOD_MS 100.0
#define BR_COOLDOWN_MS 1500.0

/*
 * The breaker's whole cycle. The primary answers 503 for the first second
 * after an injected fault; a request every 100 ms. The first three fail
 * over (attempts 2) and the third opens the breaker ("3 consecutive
 * failures"); for the 1500 ms cooldown (jitter 0) the primary is skipped at
 * no network cost (attempts 1, its log shows exactly the three 503s before
 * it), /admin/breakers shows it open; after the cooldown — the fault is
 * over by then — two half-open probes succeed and close it, and the
 * primary answers again. The events file shows closed → open → half_open
 * → closed; /metrics counts each transition and every rejection.
 */
Test(gateway_breaker, opens_skips_and_closes_after_the_cooldown, .timeout = 30)
{
	static const char *const provs[] = { "primary", "secondary", NULL };
	struct seen seen[BR_REQUESTS];
	const struct csv_table *log;
	const cJSON *snap;
	const cJSON *b;
	const cJSON *evs;
	const char *text;
	char rid[32];
	char labels[160];
	double t_inj;
	double t_open;
	double t_half;
	double t_closed;
	double remaining;
	size_t rows_before_half = 0;
	size_t probes = 0;
	int rejected = 0;
	int i;

	start_mock("{'providers':["
		   "{'name':'primary','listen':'127.0.0.1:0'," FAST "},"
		   "{'name':'secondary','listen':'127.0.0.1:0'," FAST "}]}");
	start_gw("{'request_deadline_ms':3000,"
		 "'providers':{'primary':{'base_url':'@primary@','timeout_ms':1000},"
		 "'secondary':{'base_url':'@secondary@','timeout_ms':1000}},"
		 "'breaker':{'consecutive_failures':3,'failure_ratio':0,'cooldown_ms':1500,"
		 "'cooldown_jitter':0,'cooldown_multiplier':1,'half_open_probes':2},"
		 "'models':{'chat':{'targets':[{'provider':'primary','model':'mock-small'},"
		 "{'provider':'secondary','model':'mock-small'}]}}}");

	t_inj = unix_now();
	cr_assert_eq(gw_mock_inject(&mock, "{\"provider\":\"primary\",\"kind\":\"status\","
				    "\"status\":503,\"duration_s\":1.0}"), 201);
	for (i = 0; i < BR_REQUESTS; i++) {
		wait_until(t_inj + i * BR_PERIOD_MS);
		snprintf(rid, sizeof(rid), "br-%02d", i);
		chat_seen("chat", rid, &seen[i]);
		cr_assert_eq(seen[i].status, 200, "%s: status %ld", rid, seen[i].status);
		if (i == 2) {
			snap = breakers();
			b = gw_breaker(snap, "primary", "mock-small");
			cr_assert_not_null(b);
			cr_assert_str_eq(gw_json_str(b, "state"), "open",
					 "after 3 failures: %s", cJSON_PrintUnformatted(b));
			cr_assert_eq(gw_json_num(b, "trips"), 1);
			cr_assert_eq(gw_json_num(b, "cooldown_ms"), BR_COOLDOWN_MS);
			remaining = gw_json_num(b, "open_remaining_ms");
			cr_assert(remaining > 0 && remaining <= BR_COOLDOWN_MS,
				  "open_remaining_ms %g", remaining);
			cr_assert_eq(gw_json_num(cJSON_GetObjectItemCaseSensitive(b, "totals"),
						 "failures"), 3, "%s", cJSON_PrintUnformatted(b));
			cr_assert_eq(gw_metric(metrics(), "faultline_breaker_state",
					       "provider=primary,model=mock-small"), 1,
				     "faultline_breaker_state while open");
		}
	}

	evs = events_of("primary");
	cr_assert_eq(cJSON_GetArraySize(evs), 3, "events: %s", cJSON_PrintUnformatted(evs));
	t_open = expect_event(evs, 0, "primary", "closed", "open");
	cr_assert(strstr(gw_json_str(cJSON_GetArrayItem(evs, 0), "reason"), "3 consecutive failures"),
		  "reason: %s", gw_json_str(cJSON_GetArrayItem(evs, 0), "reason"));
	t_half = expect_event(evs, 1, "primary", "open", "half_open");
	t_closed = expect_event(evs, 2, "primary", "half_open", "closed");
	cr_assert(t_half - t_open >= BR_COOLDOWN_MS - 2 && t_half - t_open <= BR_COOLDOWN_MS + 400,
		  "half-open %.0f ms after it opened (cooldown 1500, jitter 0)", t_half - t_open);
	cr_assert_geq(t_closed, t_half);

	for (i = 0; i < BR_REQUESTS; i++) {
		snprintf(rid, sizeof(rid), "br-%02d", i);
		if (i < 3) {
			cr_assert(strcmp(seen[i].provider, "secondary") == 0 && seen[i].attempts == 2,
				  "%s: %s after %g attempts", rid, seen[i].provider, seen[i].attempts);
		} else if (seen[i].sent > t_open + 5 && seen[i].sent < t_open + BR_COOLDOWN_MS - 50) {
			cr_assert(strcmp(seen[i].provider, "secondary") == 0 && seen[i].attempts == 1,
				  "%s, breaker open: %s after %g attempts", rid, seen[i].provider,
				  seen[i].attempts);
			rejected++;
		} else if (seen[i].sent > t_closed + 5) {
			cr_assert(strcmp(seen[i].provider, "primary") == 0 && seen[i].attempts == 1,
				  "%s, breaker closed again: %s after %g attempts", rid,
				  seen[i].provider, seen[i].attempts);
		}
	}
	cr_assert_geq(rejected, 10, "only %d requests while open", rejected);

	snap = breakers();
	b = gw_breaker(snap, "primary", "mock-small");
	cr_assert_str_eq(gw_json_str(b, "state"), "closed", "%s", cJSON_PrintUnformatted(b));
	cr_assert(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(b, "open_remaining_ms")),
		  "open_remaining_ms is not null once closed: %s", cJSON_PrintUnformatted(b));
	cr_assert_geq(gw_json_num(cJSON_GetObjectItemCaseSensitive(b, "totals"), "rejected"),
		      rejected, "%s", cJSON_PrintUnformatted(b));

	text = metrics();
	{
		static const char *const tr[][2] = {
			{ "closed", "open" }, { "open", "half_open" }, { "half_open", "closed" } };
		size_t k;

		for (k = 0; k < 3; k++) {
			snprintf(labels, sizeof(labels), "provider=primary,model=mock-small,from=%s,to=%s",
				 tr[k][0], tr[k][1]);
			cr_assert_eq(gw_metric(text, "faultline_breaker_transitions_total", labels), 1,
				     "faultline_breaker_transitions_total{%s}; metrics:\n%s", labels,
				     text);
		}
	}
	cr_assert_eq(gw_metric(text, "faultline_breaker_state", "provider=primary,model=mock-small"),
		     0);
	cr_assert_geq(gw_metric(text, "faultline_breaker_rejections_total",
				"provider=primary,model=mock-small"), rejected);

	gw_mock_settle(&mock, provs);
	log = gw_mock_rows(&held, &mock, "primary");
	for (i = 1; i < (int)log->nrows; i++) {
		double t = (double)mock.t0 + gw_row_num(log, (size_t)i, "t_ms");

		if (t < t_half) {
			rows_before_half++;
			cr_assert_eq(gw_row_num(log, (size_t)i, "status"), 503,
				     "row %d (%s) before half-open", i, csv_get(log, (size_t)i, "request_id"));
			cr_assert(t < t_open + 5, "the primary was asked %.0f ms into the open period",
				  t - t_open);
		} else {
			cr_assert_eq(gw_row_num(log, (size_t)i, "status"), 200, "row %d after half-open", i);
			if (t <= t_closed + 1)
				probes++;
		}
	}
	cr_assert_eq(rows_before_half, 3, "the primary saw %zu requests before half-open",
		     rows_before_half);
	cr_assert_eq(probes, 2, "%zu probes before it closed (half_open_probes 2)", probes);
}

/*
 * A probe that fails reopens the breaker for the next, longer cooldown:
 * 400 ms, then × 2 = 800 ms, then capped by cooldown_max_ms 1000. A
 * request inside the longer cooldown is still skipped.
 */
Test(gateway_breaker, a_failed_probe_reopens_for_longer, .timeout = 20)
{
	struct seen s;
	const cJSON *b;
	const cJSON *evs;
	double t;

	start_mock("{'providers':["
		   "{'name':'primary','listen':'127.0.0.1:0'," FAST ",'faults':"
		   "[{'kind':'status','status':503," ALWAYS "}]},"
		   "{'name':'secondary','listen':'127.0.0.1:0'," FAST "}]}");
	start_gw("{'request_deadline_ms':3000,"
		 "'providers':{'primary':{'base_url':'@primary@'},'secondary':{'base_url':'@secondary@'}},"
		 "'breaker':{'consecutive_failures':1,'failure_ratio':0,'cooldown_ms':400,"
		 "'cooldown_jitter':0,'cooldown_multiplier':2,'cooldown_max_ms':1000,"
		 "'half_open_probes':1},"
		 "'models':{'chat':{'targets':[{'provider':'primary','model':'mock-small'},"
		 "{'provider':'secondary','model':'mock-small'}]}}}");

	chat_seen("chat", "rp-1", &s);
	cr_assert(s.status == 200 && s.attempts == 2, "rp-1: %ld, %g attempts", s.status, s.attempts);
	b = gw_breaker(breakers(), "primary", "mock-small");
	cr_assert_str_eq(gw_json_str(b, "state"), "open");
	cr_assert_eq(gw_json_num(b, "cooldown_ms"), 400);

	t = expect_event(events_of("primary"), 0, "primary", "closed", "open");
	wait_until(t + 450);	/* the first cooldown passes */
	chat_seen("chat", "rp-2", &s);
	cr_assert(s.status == 200 && s.attempts == 2, "rp-2 (probe): %ld, %g attempts", s.status,
		  s.attempts);
	b = gw_breaker(breakers(), "primary", "mock-small");
	cr_assert_str_eq(gw_json_str(b, "state"), "open", "%s", cJSON_PrintUnformatted(b));
	cr_assert_eq(gw_json_num(b, "cooldown_ms"), 800, "%s", cJSON_PrintUnformatted(b));
	cr_assert_eq(gw_json_num(b, "trips"), 2, "%s", cJSON_PrintUnformatted(b));

	evs = events_of("primary");
	expect_event(evs, 1, "primary", "open", "half_open");
	t = expect_event(evs, 2, "primary", "half_open", "open");
	wait_until(t + 450);	/* inside the 800 ms cooldown */
	chat_seen("chat", "rp-3", &s);
	cr_assert(s.status == 200 && s.attempts == 1 && strcmp(s.provider, "secondary") == 0,
		  "rp-3 (still open): %ld, %s after %g attempts", s.status, s.provider, s.attempts);
	wait_until(t + 850);	/* the 800 ms cooldown passes */
	chat_seen("chat", "rp-4", &s);
	cr_assert(s.status == 200 && s.attempts == 2, "rp-4 (probe): %ld, %g attempts", s.status,
		  s.attempts);
	b = gw_breaker(breakers(), "primary", "mock-small");
	cr_assert_eq(gw_json_num(b, "cooldown_ms"), 1000, "capped by cooldown_max_ms: %s",
		     cJSON_PrintUnformatted(b));
	evs = events_of("primary");
	cr_assert_eq(cJSON_GetArraySize(evs), 5, "%s", cJSON_PrintUnformatted(evs));
	expect_event(evs, 3, "primary", "open", "half_open");
	expect_event(evs, 4, "primary", "half_open", "open");
	cr_assert_eq(gw_mock_state(&mock, "primary", "requests"), 3,
		     "the primary was asked during a cooldown");
}

/*
 * "enabled": false: a failing primary is never skipped — every request
 * tries it first — but its breaker still counts, for /admin/breakers and
 * the metrics.
 */
Test(gateway_breaker, disabled_breakers_never_skip_but_still_count, .timeout = 20)
{
	const cJSON *b;
	const cJSON *totals;
	struct seen s;
	char rid[32];
	int i;

	start_mock("{'providers':["
		   "{'name':'primary','listen':'127.0.0.1:0'," FAST ",'faults':"
		   "[{'kind':'status','status':503," ALWAYS "}]},"
		   "{'name':'secondary','listen':'127.0.0.1:0'," FAST "}]}");
	start_gw("{'providers':{'primary':{'base_url':'@primary@'},"
		 "'secondary':{'base_url':'@secondary@'}},"
		 "'breaker':{'enabled':false,'consecutive_failures':2},"
		 "'models':{'chat':{'targets':[{'provider':'primary','model':'mock-small'},"
		 "{'provider':'secondary','model':'mock-small'}]}}}");
	for (i = 0; i < 5; i++) {
		snprintf(rid, sizeof(rid), "off-%d", i);
		chat_seen("chat", rid, &s);
		cr_assert(s.status == 200 && s.attempts == 2 && strcmp(s.provider, "secondary") == 0,
			  "%s: %ld, %s after %g attempts", rid, s.status, s.provider, s.attempts);
	}
	cr_assert_eq(gw_mock_state(&mock, "primary", "requests"), 5);
	b = gw_breaker(breakers(), "primary", "mock-small");
	cr_assert_not_null(b);
	totals = cJSON_GetObjectItemCaseSensitive(b, "totals");
	cr_assert_eq(gw_json_num(totals, "failures"), 5, "%s", cJSON_PrintUnformatted(b));
	cr_assert_eq(gw_json_num(totals, "rejected"), 0, "%s", cJSON_PrintUnformatted(b));
}

/* A breaker rule other than consecutive failures. */
struct rule_case {
	const char *what;
	const char *primary;		/* the mock primary's timing and faults */
	const char *breaker;		/* the breaker config */
	int opens_after;		/* requests that reach the primary before it opens */
	const char *reason;		/* a word the open event's reason must hold */
};

static const struct rule_case rules[] = {
	{ "failure ratio", FAST ",'faults':[{'kind':'status','status':503," ALWAYS "}]",
	  "'consecutive_failures':0,'failure_ratio':0.5,'min_requests':4,'window_ms':10000,"
	  "'buckets':10,'cooldown_ms':10000", 4, "ratio" },
	{ "slow calls", "'ttft_ms':150,'output_tokens':2",
	  "'consecutive_failures':0,'failure_ratio':0,'slow_ms':100,'slow_ratio':0.5,"
	  "'min_requests':3,'window_ms':10000,'cooldown_ms':10000", 3, "slow" },
};

/*
 * The window rules: a failure ratio ≥ 0.5 over at least min_requests
 * results (4), and a share of calls slower than slow_ms (a 150 ms primary
 * against slow_ms 100) ≥ 0.5 over at least 3 — each opens the breaker
 * exactly when the window has min_requests results and not before, and
 * the event's reason says which rule it was.
 */
Test(gateway_breaker, window_rules_open_at_min_requests, .timeout = 30)
{
	char tmpl[2048];
	size_t k;

	for (k = 0; k < sizeof(rules) / sizeof(rules[0]); k++) {
		const struct rule_case *c = &rules[k];
		const cJSON *evs;
		const char *reason;
		struct seen s;
		char rid[32];
		int i;

		snprintf(tmpl, sizeof(tmpl), "{'providers':["
			 "{'name':'primary','listen':'127.0.0.1:0',%s},"
			 "{'name':'secondary','listen':'127.0.0.1:0'," FAST "}]}", c->primary);
		start_mock(tmpl);
		snprintf(tmpl, sizeof(tmpl),
			 "{'providers':{'primary':{'base_url':'@primary@'},"
			 "'secondary':{'base_url':'@secondary@'}},'breaker':{%s},"
			 "'models':{'chat':{'targets':[{'provider':'primary','model':'mock-small'},"
			 "{'provider':'secondary','model':'mock-small'}]}}}", c->breaker);
		start_gw(tmpl);
		for (i = 0; i < c->opens_after + 2; i++) {
			snprintf(rid, sizeof(rid), "rule-%d", i);
			chat_seen("chat", rid, &s);
			cr_assert_eq(s.status, 200, "%s, %s: %ld", c->what, rid, s.status);
			if (i < c->opens_after)
				cr_assert(s.attempts >= 1 && gw_mock_state(&mock, "primary", "requests") ==
					  i + 1, "%s, %s: the primary was not asked (open too early)",
					  c->what, rid);
			else
				cr_assert(s.attempts == 1 && strcmp(s.provider, "secondary") == 0,
					  "%s, %s: %s after %g attempts; open after %d results?",
					  c->what, rid, s.provider, s.attempts, c->opens_after);
		}
		cr_assert_eq(gw_mock_state(&mock, "primary", "requests"), c->opens_after);
		evs = events_of("primary");
		cr_assert_eq(cJSON_GetArraySize(evs), 1, "%s: %s", c->what,
			     cJSON_PrintUnformatted(evs));
		expect_event(evs, 0, "primary", "closed", "open");
		reason = gw_json_str(cJSON_GetArrayItem(evs, 0), "reason");
		cr_assert(strstr(reason, c->reason), "%s: reason \"%s\" does not say %s", c->what,
			  reason, c->reason);
		cr_assert_eq(gw_stop(&gw, SIGTERM, 5000), 0);
		gw_cleanup();
		mock_cleanup(&mock);
		memset(&mock, 0, sizeof(mock));
	}
}

/*
 * Asserts that every breaker of an /admin/breakers document has the
 * README's fields: numbers, but open_remaining_ms (null unless open) and
 * cooldown_ms (null before the first trip).
 */
static void expect_breaker_fields(const cJSON *doc)
{
	static const char *const nums[] = { "time_in_state_ms", "consecutive_failures", "trips",
					    "cooldown_ms", "probes_in_flight", "probes_succeeded",
					    "totals/requests", "totals/failures", "totals/slow",
					    "totals/rejected", "window/requests", "window/failures",
					    "window/slow" };
	const cJSON *b;
	size_t i;

	cJSON_ArrayForEach(b, cJSON_GetObjectItemCaseSensitive(doc, "breakers")) {
		const char *st = gw_json_str(b, "state");
		const cJSON *orm = cJSON_GetObjectItemCaseSensitive(b, "open_remaining_ms");
		const char *prov = gw_json_str(b, "provider");

		cr_assert(prov && gw_json_str(b, "model"), "a breaker without provider or model");
		cr_assert(st && (strcmp(st, "closed") == 0 || strcmp(st, "open") == 0 ||
				 strcmp(st, "half_open") == 0), "%s: state %s", prov, st);
		cr_assert(strcmp(st, "open") == 0 ? cJSON_IsNumber(orm) : cJSON_IsNull(orm),
			  "%s: open_remaining_ms is not a number when open and null otherwise", prov);
		cr_assert(cJSON_IsBool(cJSON_GetObjectItemCaseSensitive(b, "enabled")),
			  "%s: enabled is not a boolean", prov);
		for (i = 0; i < sizeof(nums) / sizeof(nums[0]); i++) {
			const char *slash = strchr(nums[i], '/');
			const cJSON *obj = b;
			char key[32];

			snprintf(key, sizeof(key), "%s", slash ? slash + 1 : nums[i]);
			if (slash) {
				char sub[32];

				snprintf(sub, sizeof(sub), "%.*s", (int)(slash - nums[i]), nums[i]);
				obj = cJSON_GetObjectItemCaseSensitive(b, sub);
			}
			if (strcmp(key, "cooldown_ms") == 0 && strcmp(st, "closed") == 0 &&
			    gw_json_num(b, "trips") == 0 &&
			    gw_json_num(cJSON_GetObjectItemCaseSensitive(b, "totals"), "failures") == 0 &&
			    cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(b, "cooldown_ms")))
				continue;	/* never tripped */
			cr_assert(!isnan(gw_json_num(obj, key)),
				  "breaker %s (%s): %s is not a number", prov, st, nums[i]);
		}
	}
}

/*
 * Two aliases with the same target share its breaker: failures through
 * "a" open it (after 2, the primary's own override of the top-level 5),
 * and "b" then skips the primary too.
 */
Test(gateway_breaker, aliases_share_a_targets_breaker, .timeout = 20)
{
	struct seen s;

	start_mock("{'providers':["
		   "{'name':'primary','listen':'127.0.0.1:0'," FAST ",'faults':"
		   "[{'kind':'status','status':503," ALWAYS "}]},"
		   "{'name':'secondary','listen':'127.0.0.1:0'," FAST "}]}");
	start_gw("{'providers':{'primary':{'base_url':'@primary@',"
		 "'breaker':{'consecutive_failures':2,'cooldown_ms':10000}},"
		 "'secondary':{'base_url':'@secondary@'}},"
		 "'breaker':{'consecutive_failures':5},"
		 "'models':{"
		 "'a':{'targets':[{'provider':'primary','model':'mock-small'},"
		 "{'provider':'secondary','model':'mock-small'}]},"
		 "'b':{'targets':[{'provider':'primary','model':'mock-small'},"
		 "{'provider':'secondary','model':'mock-small'}]},"
		 "'c':{'targets':[{'provider':'primary','model':'mock-small'},"
		 "{'provider':'secondary','model':'mock-small'}],'max_attempts':1}}}");
	chat_seen("a", "sh-1", &s);
	cr_assert(s.status == 200 && s.attempts == 2, "sh-1: %ld, %g", s.status, s.attempts);
	chat_seen("a", "sh-2", &s);
	cr_assert(s.status == 200 && s.attempts == 2, "sh-2: %ld, %g", s.status, s.attempts);
	chat_seen("b", "sh-3", &s);
	cr_assert(s.status == 200 && s.attempts == 1 && strcmp(s.provider, "secondary") == 0,
		  "alias b after a opened the shared breaker: %ld, %s after %g attempts", s.status,
		  s.provider, s.attempts);
	/* A skipped target is no attempt: max_attempts 1 still reaches the secondary. */
	chat_seen("c", "sh-4", &s);
	cr_assert(s.status == 200 && s.attempts == 1 && strcmp(s.provider, "secondary") == 0,
		  "max_attempts 1 with the first target open: %ld, %s after %g attempts", s.status,
		  s.provider, s.attempts);
	cr_assert_eq(gw_mock_state(&mock, "primary", "requests"), 2);
	cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(breakers(), "breakers")), 2,
		     "one breaker per target, not per alias");
}

/*
 * /admin/breakers has the README's fields for every breaker, closed (one
 * that never tripped) and open: numbers, and open_remaining_ms a number
 * only while open.
 */
Test(gateway_breaker, admin_breakers_has_the_readme_fields, .timeout = 20)
{
	struct seen s;

	start_mock("{'providers':["
		   "{'name':'primary','listen':'127.0.0.1:0'," FAST ",'faults':"
		   "[{'kind':'status','status':503," ALWAYS "}]},"
		   "{'name':'secondary','listen':'127.0.0.1:0'," FAST "}]}");
	start_gw("{'providers':{'primary':{'base_url':'@primary@'},"
		 "'secondary':{'base_url':'@secondary@'}},"
		 "'breaker':{'consecutive_failures':1,'cooldown_ms':10000},"
		 "'models':{'chat':{'targets':[{'provider':'primary','model':'mock-small'},"
		 "{'provider':'secondary','model':'mock-small'}]}}}");
	expect_breaker_fields(breakers());	/* both closed, never used */
	chat_seen("chat", "fields-1", &s);
	cr_assert_eq(s.status, 200);
	cr_assert_str_eq(gw_json_str(gw_breaker(breakers(), "primary", "mock-small"), "state"), "open");
	expect_breaker_fields(breakers());	/* one open, one closed */
}

/* A request on a thread of its own, recorded. */
struct bg_seen {
	pthread_t thread;
	const char *rid;
	struct seen s;
};

static void *bg_seen_main(void *arg)
{
	struct bg_seen *b = arg;

	chat_seen("chat", b->rid, &b->s);
	return NULL;
}

/*
 * Half-open admits half_open_probes (1) requests at a time: of two
 * concurrent requests after the cooldown, one is the probe (the primary,
 * now healthy but 300 ms slow, answers it) and the other skips the primary
 * at once (the secondary answers in well under the probe's 300 ms); the
 * probe's success closes the breaker.
 */
Test(gateway_breaker, half_open_admits_only_its_probes, .timeout = 20)
{
	struct bg_seen bg[2] = { { .rid = "ho-a" }, { .rid = "ho-b" } };
	struct seen s;
	const cJSON *evs;
	double t;
	int probe;
	int other;
	int k;

	start_mock("{'providers':["
		   "{'name':'primary','listen':'127.0.0.1:0','ttft_ms':300,'output_tokens':2},"
		   "{'name':'secondary','listen':'127.0.0.1:0'," FAST "}]}");
	start_gw("{'providers':{'primary':{'base_url':'@primary@'},"
		 "'secondary':{'base_url':'@secondary@'}},"
		 "'breaker':{'consecutive_failures':1,'failure_ratio':0,'cooldown_ms':500,"
		 "'cooldown_jitter':0,'half_open_probes':1},"
		 "'models':{'chat':{'targets':[{'provider':'primary','model':'mock-small'},"
		 "{'provider':'secondary','model':'mock-small'}]}}}");
	cr_assert_eq(gw_mock_inject(&mock, "{\"provider\":\"primary\",\"kind\":\"status\","
				    "\"status\":503,\"duration_s\":0.3}"), 201);
	chat_seen("chat", "ho-open", &s);
	cr_assert(s.status == 200 && s.attempts == 2, "ho-open: %ld, %g", s.status, s.attempts);
	t = expect_event(events_of("primary"), 0, "primary", "closed", "open");
	wait_until(t + 550);	/* the cooldown, and the fault, pass */
	for (k = 0; k < 2; k++)
		cr_assert_eq(pthread_create(&bg[k].thread, NULL, bg_seen_main, &bg[k]), 0);
	for (k = 0; k < 2; k++)
		pthread_join(bg[k].thread, NULL);
	probe = strcmp(bg[0].s.provider, "primary") == 0 ? 0 : 1;
	other = 1 - probe;
	cr_assert(bg[probe].s.status == 200 && strcmp(bg[probe].s.provider, "primary") == 0 &&
		  bg[probe].s.attempts == 1, "no probe went to the primary: %s/%s",
		  bg[0].s.provider, bg[1].s.provider);
	cr_assert(bg[other].s.status == 200 && strcmp(bg[other].s.provider, "secondary") == 0 &&
		  bg[other].s.attempts == 1,
		  "the request beside the probe: %ld, %s after %g attempts (should skip the primary)",
		  bg[other].s.status, bg[other].s.provider, bg[other].s.attempts);
	cr_assert_eq(gw_mock_state(&mock, "primary", "requests"), 2,
		     "half_open_probes 1, yet both requests reached the primary");
	evs = events_of("primary");
	cr_assert_eq(cJSON_GetArraySize(evs), 3, "%s", cJSON_PrintUnformatted(evs));
	expect_event(evs, 1, "primary", "open", "half_open");
	expect_event(evs, 2, "primary", "half_open", "closed");
}

/* ---- the client leaving ---- */

/*
 * A client that leaves before its answer (its own 300 ms timeout, against
 * a 2 s provider) has the upstream attempt cancelled at once: the provider
 * logs the request as client_aborted long before its answer was due, and
 * /metrics counts the request as status 499 and the attempt as cancelled.
 */
Test(gateway, client_leaving_cancels_the_upstream_attempt, .timeout = 20)
{
	static const char *const provs[] = { "primary", NULL };
	const struct csv_table *log;
	struct http_result *r;
	const char *text;
	double t;
	size_t row;

	start_mock("{'providers':[{'name':'primary','listen':'127.0.0.1:0','ttft_ms':2000,"
		   "'output_tokens':2}]}");
	start_gw("{'providers':{'primary':{'base_url':'@primary@'}},"
		 "'models':{'chat':{'targets':[{'provider':'primary','model':'mock-small'}]}}}");
	r = chat("chat", "leaver-1", NULL, 300);
	cr_assert_eq(r->code, CURLE_OPERATION_TIMEDOUT, "curl %d %s (status %ld)", r->code,
		     r->errbuf, r->status);
	t = now_ms();
	cr_assert(gw_mock_wait(&mock, "primary", "in_flight", 0, 1500),
		  "the upstream request outlived its client by 1.5 s");
	cr_assert_lt(now_ms() - t, 1200, "the upstream attempt was not cancelled at once");
	text = metrics();
	cr_assert_eq(gw_metric(text, "faultline_requests_total", "alias=chat,status=499"), 1,
		     "metrics:\n%s", text);
	cr_assert_eq(gw_metric(text, "faultline_attempts_total", "provider=primary,outcome=cancelled"),
		     1, "metrics:\n%s", text);
	cr_assert_eq(gw_metric(text, "faultline_requests_in_flight", ""), 0);
	gw_mock_settle(&mock, provs);
	log = gw_mock_rows(&held, &mock, "primary");
	row = gw_row_of(log, "primary", "leaver-1");
	cr_assert_str_eq(csv_get(log, row, "outcome"), "client_aborted");
	cr_assert_lt(gw_row_num(log, row, "dur_ms"), 1500, "the upstream request lasted %s ms",
		     csv_get(log, row, "dur_ms"));
}
