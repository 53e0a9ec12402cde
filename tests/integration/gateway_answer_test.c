/*
 * bin/gateway holding answers to a contract, and answering honestly when
 * nothing healthy can (docs/gateway.md: "Output contracts", "Degraded
 * answers"), as a client sees it against real mock providers on loopback:
 * mockprov's bad_content fault (each violation) failed over to a provider
 * that honours the schema, billed and counted, held against the breaker
 * or not as the alias says; a response_format the gateway cannot check
 * refused before any attempt; the alias's default contract; enforce off;
 * streams relayed unchecked; static answers (JSON and SSE); and the
 * answer cache — a hit marked and never billed, a miss the error, its
 * TTL and its entry bound.
 *
 * Configs are written with single quotes (gw_template turns them into
 * JSON); @NAME@ stands for mock provider NAME's base_url.
 */
#include <criterion/criterion.h>
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/support/gwharness.h"
#include "tests/support/harness.h"

#define ALWAYS "'from_s':-1000,'to_s':1000"
#define FAST "'ttft_ms':10,'jitter_ms':0,'token_ms':0,'output_tokens':8"
#define CHAIN "'targets':[{'provider':'primary','model':'mock-small'}," \
	"{'provider':'secondary','model':'mock-small'}]"
/* Both providers at the same price: a violating answer costs what a good one does. */
#define PRICED "'price_per_1k':{'input':1,'output':2}"
#define SCHEMA "{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"answer\",\"schema\":" \
	"{\"type\":\"object\",\"required\":[\"answer\",\"score\"],\"properties\":{" \
	"\"answer\":{\"type\":\"string\"},\"score\":{\"type\":\"integer\"}}}}}"

static struct mock_proc mock;
static struct gw_proc gw;
static struct gw_held held;

static void teardown(void)
{
	gw_cleanup();
	mock_cleanup(&mock);
	gw_held_free(&held);
}

TestSuite(gateway_answer, .fini = teardown);

/*
 * POSTs a chat request for alias asking question, with extra top-level
 * body members (",\"k\":v…", may be "") and x-request-id rid; held.
 */
static struct http_result *ask(const char *alias, const char *question, const char *extra,
			       const char *rid)
{
	struct http_result *r = gw_held_result(&held);
	char body[2048];
	char url[128];
	char hrid[96];
	const char *headers[] = { hrid, NULL };
	struct http_opts o = { .body = body, .headers = headers, .timeout_ms = 8000 };

	snprintf(hrid, sizeof(hrid), "x-request-id: %s", rid);
	snprintf(body, sizeof(body), "{\"model\":\"%s\",\"messages\":[{\"role\":\"user\","
		 "\"content\":\"%s\"}]%s}", alias, question, extra);
	cr_assert_eq(http_do(gw_url(&gw, "/v1/chat/completions", url, sizeof(url)), &o, r), 0);
	return r;
}

/* The answer's first message.content, parsed as JSON (held), asserted an object. */
static const cJSON *content_doc(const struct http_result *r)
{
	cJSON *root = gw_held_doc(&held, cJSON_Parse(r->body));
	const cJSON *content;
	cJSON *doc;

	cr_assert_not_null(root, "not JSON: %s", r->body);
	content = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(
			cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(root, "choices"), 0),
			"message"),
		"content");
	cr_assert(cJSON_IsString(content), "no content: %s", r->body);
	doc = gw_held_doc(&held, cJSON_Parse(content->valuestring));
	cr_assert(cJSON_IsObject(doc), "content is not a JSON object: %s", content->valuestring);
	return doc;
}

/* What the answer's own usage costs at PRICED. */
static double answer_cost(const struct http_result *r)
{
	cJSON *body = gw_held_doc(&held, cJSON_Parse(r->body));
	const cJSON *usage = cJSON_GetObjectItemCaseSensitive(body, "usage");

	return gw_json_num(usage, "prompt_tokens") * 1 / 1000 +
	       gw_json_num(usage, "completion_tokens") * 2 / 1000;
}

/* The events file's lines with "event": kind (contract violations), counted; the last into *last. */
static int event_lines(const char *kind, const cJSON **last)
{
	cJSON *all = gw_held_doc(&held, gw_events(&gw));
	const cJSON *e;
	int n = 0;

	cr_assert_not_null(all);
	cJSON_ArrayForEach(e, all) {
		const char *k = gw_json_str(e, "event");

		if (k && strcmp(k, kind) == 0) {
			n++;
			if (last)
				*last = e;
		}
	}
	return n;
}

static int breaker_changes(void)
{
	cJSON *all = gw_held_doc(&held, gw_events(&gw));
	const cJSON *e;
	int n = 0;

	cJSON_ArrayForEach(e, all)
		n += gw_json_str(e, "to") != NULL;
	return n;
}

/* mockprov with a primary that breaks every contract (violation v) and a healthy secondary. */
static void start_bad_primary(const char *violation)
{
	char tmpl[1024];

	snprintf(tmpl, sizeof(tmpl),
		 "{'providers':["
		 "{'name':'primary','listen':'127.0.0.1:0'," FAST ",'faults':[{'kind':"
		 "'bad_content','violation':'%s'," ALWAYS "}]},"
		 "{'name':'secondary','listen':'127.0.0.1:0'," FAST "}]}",
		 violation);
	gw_mock_start_template(&mock, tmpl);
}

/* The gateway on the fixture's two providers, alias "chat" with alias_extra keys. */
static void start_chain(const char *alias_extra, const char *top)
{
	char tmpl[2048];

	snprintf(tmpl, sizeof(tmpl),
		 "{%s'providers':{'primary':{'base_url':'@primary@','timeout_ms':3000," PRICED "},"
		 "'secondary':{'base_url':'@secondary@','timeout_ms':3000," PRICED "}},"
		 "'models':{'chat':{" CHAIN "%s}}}",
		 top, alias_extra);
	gw_start_template(&gw, tmpl, &mock, NULL);
}

/*
 * Each violation mockprov can send breaks the schema: the gateway fails
 * over to the secondary, whose answer honours it. The violating attempt
 * is billed in full (the request costs two answers), counted in
 * x-faultline-attempts and /metrics, and written to the events file.
 */
Test(gateway_answer, each_violation_fails_over_to_an_answer_that_honours_the_schema,
     .timeout = 30)
{
	static const char *const violations[] = { "prose", "missing_key", "wrong_type" };
	const cJSON *ev = NULL;
	char rid[32];
	const cJSON *doc;
	struct http_result *r;

	for (size_t i = 0; i < 3; i++) {
		teardown();
		start_bad_primary(violations[i]);
		start_chain("", "");
		snprintf(rid, sizeof(rid), "c-%s", violations[i]);
		r = ask("chat", "Rate this.", ",\"response_format\":" SCHEMA, rid);
		gw_expect_answer(r, violations[i], "secondary", 2);
		doc = content_doc(r);
		cr_assert(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(doc, "answer")), "%s",
			  r->body);
		cr_assert(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(doc, "score")), "%s",
			  r->body);
		/* Two answers of the same usage at the same price: twice one answer. */
		gw_expect_cost(&held, r, violations[i], 1, 2, answer_cost(r));
		cr_assert_eq(gw_metric_wait(&gw, "faultline_attempts_total",
					    "provider=primary,outcome=contract_violation", 1, 2000),
			     1);
		cr_assert_eq(event_lines("contract_violation", &ev), 1, "%s", violations[i]);
		cr_assert_str_eq(gw_json_str(ev, "provider"), "primary");
		cr_assert_str_eq(gw_json_str(ev, "model"), "mock-small");
		cr_assert_str_eq(gw_json_str(ev, "request_id"), rid);
		cr_assert(strncmp(gw_json_str(ev, "why"), "choices[0].message.content: ", 28) == 0,
			  "%s", gw_json_str(ev, "why"));
	}
}

/*
 * With no provider left that honours it, the client gets 502 whose
 * attempts name each contract_violation (status 200); by default each
 * counts against the breaker (consecutive_failures 2 opens it).
 */
Test(gateway_answer, violations_everywhere_are_a_502_and_open_the_breaker, .timeout = 30)
{
	const cJSON *attempts;
	const cJSON *a;
	cJSON *doc;
	struct http_result *r;

	gw_mock_start_template(&mock, "{'providers':["
			       "{'name':'primary','listen':'127.0.0.1:0'," FAST ",'faults':[{'kind':"
			       "'bad_content','violation':'missing_key'," ALWAYS "}]},"
			       "{'name':'secondary','listen':'127.0.0.1:0'," FAST ",'faults':[{"
			       "'kind':'bad_content'," ALWAYS "}]}]}");
	start_chain("", "'breaker':{'consecutive_failures':2,'cooldown_ms':60000},");
	r = ask("chat", "Rate this.", ",\"response_format\":" SCHEMA, "all-1");
	doc = gw_expect_error(&held, r, "every answer broken", 502, "bad_gateway",
			      "upstream_error");
	attempts = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(doc, "error"),
						    "attempts");
	cr_assert_eq(cJSON_GetArraySize(attempts), 2, "%s", r->body);
	cJSON_ArrayForEach(a, attempts) {
		cr_assert_str_eq(gw_json_str(a, "outcome"), "contract_violation", "%s", r->body);
		cr_assert_eq(gw_json_num(a, "status"), 200);
	}
	ask("chat", "Rate this.", ",\"response_format\":" SCHEMA, "all-2");
	cr_assert_str_eq(gw_json_str(gw_breaker_must(gw_breakers_held(&gw, &held), "primary",
						     "mock-small"), "state"),
			 "open", "two violations in a row open it");
	cr_assert_eq(event_lines("contract_violation", NULL), 4);
}

/* contract.counts_as_failure false: the same violations leave the breaker closed. */
Test(gateway_answer, violations_need_not_count_against_the_breaker, .timeout = 30)
{
	start_bad_primary("prose");
	start_chain(",'contract':{'counts_as_failure':false}",
		    "'breaker':{'consecutive_failures':2,'cooldown_ms':60000},");
	for (int i = 0; i < 4; i++) {
		char rid[16];

		snprintf(rid, sizeof(rid), "nc-%d", i);
		gw_expect_answer(ask("chat", "Rate this.", ",\"response_format\":" SCHEMA, rid),
				 rid, "secondary", 2);
	}
	cr_assert_str_eq(gw_json_str(gw_breaker_must(gw_breakers_held(&gw, &held), "primary",
						     "mock-small"), "state"),
			 "closed");
	cr_assert_eq(breaker_changes(), 0);
	cr_assert_eq(event_lines("contract_violation", NULL), 4);
}

/*
 * A response_format the gateway cannot check is refused before any
 * attempt, naming the keyword and where it is; so is an unknown type.
 */
Test(gateway_answer, an_uncheckable_response_format_is_a_400_naming_it, .timeout = 30)
{
	struct http_result *r;
	const cJSON *err;
	cJSON *doc;

	start_bad_primary("prose");
	start_chain("", "");
	r = ask("chat", "q", ",\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{"
		"\"schema\":{\"type\":\"object\",\"properties\":{\"tags\":{\"type\":\"array\","
		"\"uniqueItems\":true}}}}}", "bad-1");
	cr_assert_eq(r->status, 400, "%s", r->body);
	doc = gw_held_doc(&held, gw_error_doc(r->body));
	cr_assert_not_null(doc, "%s", r->body);
	err = cJSON_GetObjectItemCaseSensitive(doc, "error");
	cr_assert_str_eq(gw_json_str(err, "type"), "invalid_request_error");
	cr_assert_str_eq(gw_json_str(err, "param"), "response_format");
	cr_assert_str_eq(gw_json_str(err, "code"), "invalid_response_format");
	cr_assert(strstr(gw_json_str(err, "message"),
			 "unsupported JSON Schema keyword \"uniqueItems\" at /properties/tags"),
		  "%s", r->body);
	r = ask("chat", "q", ",\"response_format\":{\"type\":\"yaml\"}", "bad-2");
	cr_assert_eq(r->status, 400, "%s", r->body);
	cr_assert(strstr(r->body, "yaml"), "%s", r->body);
	cr_assert_eq(gw_mock_state(&mock, "primary", "requests"), 0, "nothing went upstream");
	cr_assert_eq(gw_mock_state(&mock, "secondary", "requests"), 0);
}

/*
 * The alias's default contract holds requests that state none, and the
 * providers are told it (the gateway adds it to the upstream body): the
 * healthy primary answers JSON, the broken one's prose fails over. A
 * request that says {"type":"text"} asks for nothing and gets the prose.
 */
Test(gateway_answer, the_alias_default_contract_and_text, .timeout = 30)
{
	struct http_result *r;

	gw_mock_start_template(&mock, "{'providers':["
			       "{'name':'primary','listen':'127.0.0.1:0'," FAST "},"
			       "{'name':'secondary','listen':'127.0.0.1:0'," FAST "}]}");
	start_chain(",'contract':{'response_format':{'type':'json_object'}}", "");
	r = ask("chat", "q", "", "d-1");
	gw_expect_answer(r, "the default contract, sent upstream", "primary", 1);
	content_doc(r);
	r = ask("chat", "q", ",\"response_format\":{\"type\":\"text\"}", "d-2");
	gw_expect_answer(r, "text asks for nothing", "primary", 1);
	cr_assert_null(gw_held_doc(&held, cJSON_Parse(strstr(r->body, "\"content\":\"") + 11)),
		       "prose: %s", r->body);
	cr_assert_eq(event_lines("contract_violation", NULL), 0);
	teardown();
	start_bad_primary("prose");
	start_chain(",'contract':{'response_format':{'type':'json_object'}}", "");
	r = ask("chat", "q", "", "d-3");
	gw_expect_answer(r, "the broken primary's prose fails over", "secondary", 2);
	content_doc(r);
}

/*
 * enforce false: a broken answer goes to the client as it is. A stream
 * is never checked: its content goes out as it comes.
 */
Test(gateway_answer, enforce_off_and_streams_pass_broken_answers, .timeout = 30)
{
	struct http_result *r;

	start_bad_primary("prose");
	start_chain(",'contract':{'enforce':false}", "");
	r = ask("chat", "q", ",\"response_format\":" SCHEMA, "e-1");
	gw_expect_answer(r, "enforce off", "primary", 1);
	cr_assert(strstr(r->body, "Sure!"), "the prose reached the client: %s", r->body);
	teardown();
	start_bad_primary("prose");
	start_chain("", "");
	r = ask("chat", "q", ",\"stream\":true,\"response_format\":" SCHEMA, "e-2");
	gw_expect_answer(r, "a stream", "primary", 1);
	cr_assert(strstr(r->body, "data: [DONE]"), "%s", r->body);
	cr_assert(strstr(r->body, "Sure!"), "%s", r->body);
}

/* ---- degraded answers ---- */

#define DEAD "{'providers':[{'name':'primary','listen':'127.0.0.1:0'," FAST ",'faults':[" \
	"{'kind':'down'," ALWAYS "}]}]}"
#define ONE "'targets':[{'provider':'primary','model':'mock-small'}]"

Test(gateway_answer, static_answers_when_nothing_can, .timeout = 30)
{
	struct http_result *r;
	char v[64];

	gw_mock_start_template(&mock, DEAD);
	gw_start_template(&gw, "{'providers':{'primary':{'base_url':'@primary@'," PRICED "}},"
			  "'models':{'chat':{" ONE ",'degraded':{'mode':'static','content':"
			  "'Busy; try again soon.'}}}}", &mock, NULL);
	r = ask("chat", "q", "", "s-1");
	cr_assert_eq(r->status, 200, "%s", r->body);
	cr_assert_str_eq(gw_header_str(r, "x-faultline-degraded", v, sizeof(v)), "static");
	cr_assert_str_eq(gw_header_str(r, "x-faultline-provider", v, sizeof(v)), "(absent)");
	cr_assert_str_eq(gw_header_str(r, "x-faultline-cost-usd", v, sizeof(v)), "(absent)",
			 "never billed");
	cr_assert(strstr(r->body, "\"content\":\"Busy; try again soon.\""), "%s", r->body);
	cr_assert(strstr(r->body, "\"id\":\"degraded-s-1\""), "%s", r->body);
	r = ask("chat", "q", ",\"stream\":true", "s-2");
	cr_assert_eq(r->status, 200, "%s", r->body);
	cr_assert(strstr(r->headers, "text/event-stream"), "%s", r->headers);
	cr_assert(strstr(r->body, "Busy; try again soon."), "%s", r->body);
	cr_assert(strstr(r->body, "data: [DONE]\n\n"), "%s", r->body);
	cr_assert_eq(gw_metric_wait(&gw, "faultline_degraded_answers_total",
				    "alias=chat,mode=static", 2, 2000),
		     2);
	/* A request that wants JSON does not get the static prose: it gets the error. */
	r = ask("chat", "q", ",\"response_format\":{\"type\":\"json_object\"}", "s-3");
	gw_expect_error(&held, r, "static prose under a contract", 503, "service_unavailable",
			"all_providers_unavailable");
	cr_assert_str_eq(gw_header_str(r, "x-faultline-degraded", v, sizeof(v)), "(absent)");
}

/* Waits ms of wall time: an answer's age, which no event marks. */
static void age(double ms)
{
	struct timespec ts = { (time_t)(ms / 1000), (long)(fmod(ms, 1000) * 1e6) };

	nanosleep(&ts, NULL);
}

/*
 * The cache answers the same question (however its keys are ordered, and
 * to a stream too) once the provider is down, marked and unbilled; another
 * question gets the error; an answer past its TTL is not given.
 */
Test(gateway_answer, cached_answers_hit_miss_and_expire, .timeout = 30)
{
	struct http_result *first;
	struct http_result *r;
	char v[64];

	gw_mock_start_template(&mock, "{'providers':[{'name':'primary','listen':'127.0.0.1:0',"
			       FAST "}]}");
	gw_start_template(&gw, "{'providers':{'primary':{'base_url':'@primary@'," PRICED "}},"
			  "'models':{'chat':{" ONE ",'degraded':{'mode':'cache','ttl_s':1.5}}}}",
			  &mock, NULL);
	first = ask("chat", "What is up?", ",\"temperature\":0.2", "k-1");
	gw_expect_answer(first, "healthy", "primary", 1);
	cr_assert_eq(gw_mock_inject(&mock, "{\"provider\":\"primary\",\"kind\":\"down\","
				    "\"duration_s\":60}"), 201);
	r = ask("chat", "What is up?", ",\"temperature\":0.2", "k-2");
	cr_assert_eq(r->status, 200, "%s", r->body);
	cr_assert_str_eq(gw_header_str(r, "x-faultline-degraded", v, sizeof(v)), "cache");
	cr_assert_str_eq(r->body, first->body, "the answer as the provider sent it");
	cr_assert_str_eq(gw_header_str(r, "x-faultline-cost-usd", v, sizeof(v)), "(absent)");
	r = ask("chat", "What is up?", ",\"stream\":true,\"temperature\":0.2", "k-3");
	cr_assert_eq(r->status, 200, "%s", r->body);
	cr_assert(strstr(r->headers, "text/event-stream"), "%s", r->headers);
	cr_assert(strstr(r->body, "data: [DONE]"), "%s", r->body);
	r = ask("chat", "Something else?", "", "k-4");
	gw_expect_error(&held, r, "a question never answered", 503, "service_unavailable",
			"all_providers_unavailable");
	r = ask("chat", "What is up?", ",\"temperature\":0.9", "k-5");
	cr_assert_eq(r->status, 503, "another temperature is another question: %s", r->body);
	age(1600);
	r = ask("chat", "What is up?", ",\"temperature\":0.2", "k-6");
	cr_assert_eq(r->status, 503, "past its TTL: %s", r->body);
	cr_assert_eq(gw_metric_wait(&gw, "faultline_degraded_answers_total",
				    "alias=chat,mode=cache", 2, 2000),
		     2);
	cr_assert_eq(gw_metric(gw_metrics_held(&gw, &held), "faultline_degraded_cache_misses_total",
			       "alias=chat"), 3);
	cr_assert_eq(gw_metric(gw_metrics_held(&gw, &held), "faultline_answer_cache_dropped_total",
			       "alias=chat,reason=expired"), 1);
}

/* max_entries 2: the third answer pushes out the least recently used. */
Test(gateway_answer, the_cache_keeps_its_entry_bound, .timeout = 30)
{
	const char *text;
	char q[16];
	char rid[16];

	gw_mock_start_template(&mock, "{'providers':[{'name':'primary','listen':'127.0.0.1:0',"
			       FAST "}]}");
	gw_start_template(&gw, "{'providers':{'primary':{'base_url':'@primary@'}},"
			  "'models':{'chat':{" ONE ",'degraded':{'mode':'cache','max_entries':2}}}}",
			  &mock, NULL);
	for (int i = 1; i <= 3; i++) {
		snprintf(q, sizeof(q), "q%d", i);
		snprintf(rid, sizeof(rid), "b-%d", i);
		gw_expect_answer(ask("chat", q, "", rid), rid, "primary", 1);
	}
	text = gw_metrics_held(&gw, &held);
	cr_assert_eq(gw_metric(text, "faultline_answer_cache_entries", "alias=chat"), 2);
	cr_assert_eq(gw_metric(text, "faultline_answer_cache_dropped_total",
			       "alias=chat,reason=evicted"), 1);
	cr_assert_gt(gw_metric(text, "faultline_answer_cache_bytes", "alias=chat"), 2 * 64);
	cr_assert_eq(gw_mock_inject(&mock, "{\"provider\":\"primary\",\"kind\":\"down\","
				    "\"duration_s\":60}"), 201);
	cr_assert_eq(ask("chat", "q1", "", "b-4")->status, 503, "q1 was pushed out");
	cr_assert_eq(ask("chat", "q3", "", "b-5")->status, 200);
	cr_assert_eq(ask("chat", "q2", "", "b-6")->status, 200);
}

/*
 * Every breaker open with when_all_open fail_fast: nothing is tried, the
 * cache still answers the question it knows, and any other question gets
 * a fast 503 whose Retry-After says when a target goes half-open.
 */
Test(gateway_answer, the_cache_answers_while_every_breaker_is_open, .timeout = 30)
{
	struct http_result *r;
	char v[64];

	gw_mock_start_template(&mock, "{'providers':[{'name':'primary','listen':'127.0.0.1:0',"
			       FAST "}]}");
	gw_start_template(&gw, "{'breaker':{'consecutive_failures':1,'cooldown_ms':30000,"
			  "'when_all_open':'fail_fast'},"
			  "'providers':{'primary':{'base_url':'@primary@'}},"
			  "'models':{'chat':{" ONE ",'degraded':{'mode':'cache'}}}}",
			  &mock, NULL);
	gw_expect_answer(ask("chat", "known", "", "o-1"), "healthy", "primary", 1);
	cr_assert_eq(gw_mock_inject(&mock, "{\"provider\":\"primary\",\"kind\":\"down\","
				    "\"duration_s\":60}"), 201);
	/* The refusal that opens the breaker: this one was tried, so no Retry-After yet. */
	r = ask("chat", "opens it", "", "o-2");
	cr_assert_eq(r->status, 503, "%s", r->body);
	cr_assert_str_eq(gw_json_str(gw_breaker_must(gw_breakers_held(&gw, &held), "primary",
						     "mock-small"), "state"), "open");
	r = ask("chat", "known", "", "o-3");
	cr_assert_eq(r->status, 200, "%s", r->body);
	cr_assert_str_eq(gw_header_str(r, "x-faultline-degraded", v, sizeof(v)), "cache");
	cr_assert_eq(gw_header_num(r, "x-faultline-attempts"), 0, "nothing was tried");
	r = ask("chat", "unknown", "", "o-4");
	gw_expect_error(&held, r, "a miss with every breaker open", 503, "service_unavailable",
			"all_providers_unavailable");
	cr_assert_gt(gw_header_num(r, "Retry-After"), 0, "no Retry-After: %s", r->headers);
	cr_assert_leq(gw_header_num(r, "Retry-After"), 30);
	cr_assert_lt(r->total_ms, 500, "a fast error: %.1f ms", r->total_ms);
	/* o-1 alone reached it: o-2's connection was refused, o-3 and o-4 never tried. */
	cr_assert_eq(gw_mock_state(&mock, "primary", "requests"), 1);
	cr_assert_eq(gw_metric(gw_metrics_held(&gw, &held), "faultline_attempts_total",
			       "provider=primary,outcome=refused"), 1);
}
