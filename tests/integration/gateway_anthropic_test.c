/*
 * bin/gateway with Anthropic targets (docs/dialects.md), as an OpenAI
 * client sees it, against real mock providers of both dialects on
 * loopback: an Anthropic target's answer and stream come back as the same
 * OpenAI chat completion and chunks an OpenAI target gives for the same
 * mock config (mockprov's words are the same in both dialects), usage and
 * cost from Anthropic's usage; what cannot be translated is refused before
 * any attempt; max_tokens gets the provider's default; failover crosses
 * vendors both ways; Anthropic's 4xx pass through in OpenAI's shape; a
 * hedge races an OpenAI target against an Anthropic one; health checks
 * speak the dialect; a stall after the commit ends with the usual error
 * event; and the official openai SDK gets identical content through the
 * gateway whichever vendor answered.
 *
 * The stream faults before and after the commit, in Anthropic's shapes,
 * are gateway_stream's anthropic_* tests. Configs are written with single
 * quotes (gw_template turns them into JSON); @NAME@ stands for mock
 * provider NAME's base_url.
 */
#include <criterion/criterion.h>
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/support/gwharness.h"
#include "tests/support/harness.h"
#include "tests/support/nodeclient.h"
#include "tests/support/scriptstub.h"

#define ALWAYS "'from_s':-1000,'to_s':1000"
#define KEY_ENV "FAULTLINE_TEST_ANTH_KEY"
/* An Anthropic provider of the gateway: its dialect and key. */
#define ANTH ",'dialect':'anthropic','api_key_env':'" KEY_ENV "'"
/* The two dialects' mock providers, alike but for the dialect. */
#define MOCK_PAIR(fields)                                                                   \
	"{'name':'oa','listen':'127.0.0.1:0'," fields "},"                                   \
	"{'name':'an','listen':'127.0.0.1:0','dialect':'anthropic'," fields "}"

static struct mock_proc mock;
static struct gw_proc gw;
static struct gw_held held;
static struct script_stub stub;

static void teardown(void)
{
	script_stub_stop(&stub);
	gw_cleanup();
	mock_cleanup(&mock);
	gw_held_free(&held);
}

static void init(void)
{
	stub.lfd = -1;
}

TestSuite(gateway_anthropic, .init = init, .fini = teardown);

static void start(const char *mock_tmpl, const char *gw_tmpl)
{
	cr_assert_eq(setenv(KEY_ENV, "test-key", 1), 0);
	gw_mock_start_template(&mock, mock_tmpl);
	gw_start_template(&gw, gw_tmpl, &mock, NULL);
}

/* POSTs body to the gateway's chat completions (held until teardown). */
static struct http_result *post(const char *body, double timeout_ms)
{
	struct http_result *r = gw_held_result(&held);
	char url[256];
	struct http_opts o = { .body = body, .timeout_ms = timeout_ms };

	cr_assert_eq(http_do(gw_url(&gw, "/v1/chat/completions", url, sizeof(url)), &o, r), 0,
		     "cannot POST %s", body);
	return r;
}

/* The parsed answer body, asserted a chat completion; held. */
static const cJSON *completion(const struct http_result *r, const char *what)
{
	cJSON *doc = gw_held_doc(&held, cJSON_Parse(r->body));

	cr_assert_eq(r->status, 200, "%s: status %ld, body %s", what, r->status, r->body);
	cr_assert(cJSON_IsObject(doc), "%s: not JSON: %s", what, r->body);
	cr_assert_str_eq(gw_json_str(doc, "object"), "chat.completion", "%s: %s", what, r->body);
	return doc;
}

static const cJSON *choice0(const cJSON *doc)
{
	return cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(doc, "choices"), 0);
}

static const char *content_of(const cJSON *doc)
{
	const char *s = gw_json_str(cJSON_GetObjectItemCaseSensitive(choice0(doc), "message"),
				    "content");

	cr_assert_not_null(s, "no choices[0].message.content");
	return s;
}

static double usage_of(const cJSON *doc, const char *key)
{
	return gw_json_num(cJSON_GetObjectItemCaseSensitive(doc, "usage"), key);
}

/* What a stream's events gave: the joined content, the finish, the usage chunk. */
struct stream_sum {
	char content[4096];
	char finish[32];
	double prompt_tokens;		/* NaN without a usage chunk */
	double completion_tokens;
	size_t ncontent;		/* chunks with content */
	size_t errors;			/* event: error */
	bool done_last;			/* data: [DONE] came, last */
	char error_data[512];		/* the error event's data */
};

/* A streaming request for alias (include_usage) to the gateway, its events summed up. */
static struct http_result *stream(const char *alias, bool include_usage, struct stream_sum *s)
{
	char body[512];
	struct http_result *r;
	char **ev = NULL;
	size_t n;
	size_t i;

	snprintf(body, sizeof(body), "{\"model\":\"%s\",\"stream\":true,%s\"messages\":"
		 "[{\"role\":\"user\",\"content\":\"Say something.\"}]}", alias,
		 include_usage ? "\"stream_options\":{\"include_usage\":true}," : "");
	r = post(body, 10000);
	memset(s, 0, sizeof(*s));
	s->prompt_tokens = s->completion_tokens = NAN;
	n = sse_parse(r->body ? r->body : "", &ev, &s->errors);
	for (i = 0; i < n; i++) {
		cJSON *c = cJSON_Parse(ev[i]);
		const cJSON *ch = choice0(c);
		const cJSON *delta = cJSON_GetObjectItemCaseSensitive(ch, "delta");
		const char *text = gw_json_str(delta, "content");
		const char *fin = gw_json_str(ch, "finish_reason");
		const cJSON *usage = cJSON_GetObjectItemCaseSensitive(c, "usage");

		s->done_last = strcmp(ev[i], "[DONE]") == 0;
		if (cJSON_GetObjectItemCaseSensitive(c, "error"))
			snprintf(s->error_data, sizeof(s->error_data), "%s", ev[i]);
		if (text && text[0]) {
			s->ncontent++;
			strncat(s->content, text, sizeof(s->content) - strlen(s->content) - 1);
		}
		if (fin)
			snprintf(s->finish, sizeof(s->finish), "%s", fin);
		if (cJSON_IsObject(usage)) {
			s->prompt_tokens = gw_json_num(usage, "prompt_tokens");
			s->completion_tokens = gw_json_num(usage, "completion_tokens");
		}
		if (c && !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(c, "object")) &&
		    !cJSON_GetObjectItemCaseSensitive(c, "error"))
			cr_assert_fail("a chunk without object: %s", ev[i]);
		cJSON_Delete(c);
	}
	sse_free(ev, n);
	return r;
}

/*
 * An Anthropic target's answer and stream are what an OpenAI target gives
 * for the same mock config: the same content, finish_reason "stop", the
 * same usage (Anthropic's input_tokens and output_tokens), a usage chunk
 * only with include_usage and [DONE] last; x-faultline-provider names it;
 * x-faultline-cost-usd comes from its usage at its price.
 */
Test(gateway_anthropic, answers_and_streams_translated, .timeout = 30)
{
	struct stream_sum so;
	struct stream_sum sa;
	const cJSON *o;
	const cJSON *a;
	struct http_result *r;

	start("{'providers':[" MOCK_PAIR("'ttft_ms':10,'token_ms':2,'output_tokens':8") "]}",
	      "{'providers':{'oa':{'base_url':'@oa@'},"
	      "'an':{'base_url':'@an@','price_per_1k':{'input':1,'output':2}" ANTH "}},"
	      "'models':{'oa':{'targets':[{'provider':'oa','model':'mock-small'}]},"
	      "'an':{'targets':[{'provider':'an','model':'mock-small'}]}}}");

	o = completion(gw_chat_held(&gw, &held, "oa", "plain-oa", NULL, 5000), "OpenAI target");
	r = gw_chat_held(&gw, &held, "an", "plain-an", NULL, 5000);
	a = completion(r, "Anthropic target");
	gw_expect_answer(r, "Anthropic target", "an", 1);
	cr_assert(content_of(o)[0], "empty content");
	cr_assert_str_eq(content_of(a), content_of(o), "the Anthropic target's content differs");
	cr_assert_str_eq(gw_json_str(choice0(a), "finish_reason"), "stop", "%s", r->body);
	cr_assert_str_eq(gw_json_str(cJSON_GetObjectItemCaseSensitive(choice0(a), "message"),
				     "role"), "assistant", "%s", r->body);
	cr_assert_eq(usage_of(a, "completion_tokens"), 8, "%s", r->body);
	cr_assert_eq(usage_of(a, "prompt_tokens"), usage_of(o, "prompt_tokens"), "%s", r->body);
	cr_assert_eq(usage_of(a, "total_tokens"), usage_of(a, "prompt_tokens") + 8, "%s", r->body);
	gw_expect_cost(&held, r, "Anthropic target", 1, 2, 0);

	stream("oa", true, &so);
	r = stream("an", true, &sa);
	cr_assert_eq(r->status, 200, "status %ld: %s", r->status, r->body);
	cr_assert_eq(sa.errors, 0, "%s", r->body);
	cr_assert_eq(sa.ncontent, 8, "%zu content chunks: %s", sa.ncontent, r->body);
	cr_assert_str_eq(sa.content, content_of(o), "the stream's content: %s", r->body);
	cr_assert_str_eq(sa.content, so.content, "the streams differ");
	cr_assert_str_eq(sa.finish, "stop", "%s", r->body);
	cr_assert(sa.done_last, "[DONE] is not last: %s", r->body);
	cr_assert_eq(sa.completion_tokens, 8, "%s", r->body);
	cr_assert_eq(sa.prompt_tokens, so.prompt_tokens, "%s", r->body);

	r = stream("an", false, &sa);
	cr_assert(isnan(sa.prompt_tokens), "a usage chunk without include_usage: %s", r->body);
	cr_assert_str_eq(sa.content, so.content, "%s", r->body);
	cr_assert(sa.done_last, "%s", r->body);
}

/* A chat body for model: member (with its comma, or "") and messages (NULL: one user "hi"). */
static const char *untranslatable(const char *model, const char *member, const char *messages,
				  char *out, size_t len)
{
	snprintf(out, len, "{\"model\":\"%s\",%s\"messages\":%s}", model, member,
		 messages ? messages : "[{\"role\":\"user\",\"content\":\"hi\"}]");
	return out;
}

/*
 * A request an Anthropic target cannot take — tools, n above 1, a
 * temperature above 1, an audio part, a text holding \u0000 — leaves the
 * Anthropic targets out of its plan: through an OpenAI primary it is
 * answered as before; when the primary fails, its final error says the
 * Anthropic fallback was left out and why; with no other target (the
 * alias's only one, or x-faultline-provider naming it) it is refused with
 * a 400 unsupported_for_provider naming the member, before any attempt.
 * The Anthropic provider never sees one.
 */
Test(gateway_anthropic, untranslatable_requests_leave_anthropic_targets_out, .timeout = 30)
{
	static const struct {
		const char *member;
		const char *messages;
		const char *param;
	} cases[] = {
		{ "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\"}}],", NULL,
		  "tools" },
		{ "\"n\":2,", NULL, "n" },
		{ "\"temperature\":1.5,", NULL, "temperature" },
		{ "", "[{\"role\":\"user\",\"content\":[{\"type\":\"input_audio\","
		  "\"input_audio\":{\"data\":\"AAAA\",\"format\":\"wav\"}}]}]", "messages" },
		{ "", "[{\"role\":\"user\",\"content\":\"hi\\u0000there\"}]", NULL },
	};
	const char *pin[] = { "x-faultline-provider: an", NULL };
	char body[512];
	char url[256];
	size_t i;

	start("{'providers':[" MOCK_PAIR("'ttft_ms':5,'output_tokens':4") ","
	      "{'name':'oa503','listen':'127.0.0.1:0',"
	      "'faults':[{'kind':'status','status':503," ALWAYS "}]}]}",
	      "{'breaker':{'enabled':false},'providers':{'oa':{'base_url':'@oa@'},"
	      "'oa503':{'base_url':'@oa503@'},'an':{'base_url':'@an@'" ANTH "}},"
	      "'models':{'an':{'targets':[{'provider':'an','model':'mock-small'}]},"
	      "'chain':{'targets':[{'provider':'oa','model':'mock-small'},"
	      "{'provider':'an','model':'mock-small'}]},"
	      "'chainbad':{'targets':[{'provider':'oa503','model':'mock-small'},"
	      "{'provider':'an','model':'mock-small'}]}}}");
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *what = cases[i].param ? cases[i].param : "\\u0000";
		struct http_opts o = { .timeout_ms = 5000, .headers = pin };
		struct http_result *r;
		const cJSON *err;
		cJSON *doc;

		r = post(untranslatable("an", cases[i].member, cases[i].messages, body, sizeof(body)),
			 5000);
		doc = gw_held_doc(&held, gw_error_doc(r->body));
		cr_assert_eq(r->status, 400, "%s to the Anthropic alias: %ld %s", what, r->status,
			     r->body);
		cr_assert_not_null(doc, "%s: not an OpenAI error: %s", what, r->body);
		err = cJSON_GetObjectItemCaseSensitive(doc, "error");
		cr_assert_str_eq(gw_json_str(err, "code"), "unsupported_for_provider", "%s", r->body);
		if (cases[i].param)
			cr_assert_str_eq(gw_json_str(err, "param"), cases[i].param, "%s", r->body);
		cr_assert(strstr(r->body, "Anthropic"), "%s", r->body);
		cr_assert_eq(gw_header_num(r, "x-faultline-attempts"), 0, "%s", what);

		r = post(untranslatable("chain", cases[i].member, cases[i].messages, body,
					sizeof(body)), 5000);
		gw_expect_answer(r, what, "oa", 1);

		o.body = body;
		r = gw_held_result(&held);
		cr_assert_eq(http_do(gw_url(&gw, "/v1/chat/completions", url, sizeof(url)), &o, r), 0);
		cr_assert_eq(r->status, 400, "%s pinned to the Anthropic provider: %ld %s", what,
			     r->status, r->body);

		r = post(untranslatable("chainbad", cases[i].member, cases[i].messages, body,
					sizeof(body)), 5000);
		cr_assert_eq(r->status, 502, "%s, the OpenAI primary failing: %ld %s", what, r->status,
			     r->body);
		cr_assert(strstr(r->body, "Anthropic targets were left out"), "%s", r->body);
		cr_assert_eq(gw_header_num(r, "x-faultline-attempts"), 1, "%s", what);
	}
	cr_assert_eq(gw_mock_state(&mock, "an", "requests"), 0,
		     "an untranslatable request reached the Anthropic target");
}

/*
 * Anthropic requires max_tokens: a request without one gets the provider's
 * default_max_tokens (3 here: the answer is cut at 3 tokens, finish_reason
 * "length"); one with max_tokens or max_completion_tokens keeps it.
 */
Test(gateway_anthropic, max_tokens_default, .timeout = 20)
{
	struct http_result *r;
	const cJSON *doc;

	start("{'providers':[" MOCK_PAIR("'ttft_ms':5,'output_tokens':8") "]}",
	      "{'providers':{'oa':{'base_url':'@oa@'},"
	      "'an':{'base_url':'@an@','default_max_tokens':3" ANTH "}},"
	      "'models':{'an':{'targets':[{'provider':'an','model':'mock-small'}]}}}");
	doc = completion(gw_chat_held(&gw, &held, "an", "dflt", NULL, 5000), "no max_tokens");
	cr_assert_eq(usage_of(doc, "completion_tokens"), 3);
	cr_assert_str_eq(gw_json_str(choice0(doc), "finish_reason"), "length");
	r = post("{\"model\":\"an\",\"max_tokens\":5,\"messages\":[{\"role\":\"user\","
		 "\"content\":\"hi\"}]}", 5000);
	doc = completion(r, "max_tokens 5");
	cr_assert_eq(usage_of(doc, "completion_tokens"), 5, "%s", r->body);
	r = post("{\"model\":\"an\",\"max_completion_tokens\":20,\"messages\":[{\"role\":"
		 "\"user\",\"content\":\"hi\"}]}", 5000);
	doc = completion(r, "max_completion_tokens 20");
	cr_assert_eq(usage_of(doc, "completion_tokens"), 8, "%s", r->body);
	cr_assert_str_eq(gw_json_str(choice0(doc), "finish_reason"), "stop");
}

/*
 * Failover crosses vendors both ways: an OpenAI primary's 503 to an
 * Anthropic fallback, an Anthropic primary's 529 (overloaded_error) and
 * its 429 (rate_limit_error) to an OpenAI fallback — plain and streaming —
 * each answered by the fallback after 2 attempts, with the failed attempt
 * counted under its outcome.
 */
Test(gateway_anthropic, failover_crosses_vendors, .timeout = 30)
{
	static const struct {
		const char *alias;
		const char *fallback;
		const char *labels;
	} cases[] = {
		{ "oa503", "an", "provider=oa503,outcome=http_5xx" },
		{ "an529", "oa", "provider=an529,outcome=http_5xx" },
		{ "an429", "oa", "provider=an429,outcome=http_429" },
	};
	struct stream_sum s;
	const char *text;
	size_t i;

	start("{'providers':[" MOCK_PAIR("'ttft_ms':5,'output_tokens':6") ","
	      "{'name':'oa503','listen':'127.0.0.1:0',"
	      "'faults':[{'kind':'status','status':503," ALWAYS "}]},"
	      "{'name':'an529','listen':'127.0.0.1:0','dialect':'anthropic',"
	      "'faults':[{'kind':'status','status':529," ALWAYS "}]},"
	      "{'name':'an429','listen':'127.0.0.1:0','dialect':'anthropic',"
	      "'faults':[{'kind':'status','status':429," ALWAYS "}]}]}",
	      "{'breaker':{'enabled':false},'providers':{'oa':{'base_url':'@oa@'},"
	      "'an':{'base_url':'@an@'" ANTH "},'oa503':{'base_url':'@oa503@'},"
	      "'an529':{'base_url':'@an529@'" ANTH "},'an429':{'base_url':'@an429@'" ANTH "}},"
	      "'models':{"
	      "'oa503':{'targets':[{'provider':'oa503','model':'mock-small'},"
	      "{'provider':'an','model':'mock-small'}]},"
	      "'an529':{'targets':[{'provider':'an529','model':'mock-small'},"
	      "{'provider':'oa','model':'mock-small'}]},"
	      "'an429':{'targets':[{'provider':'an429','model':'mock-small'},"
	      "{'provider':'oa','model':'mock-small'}]}}}");
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct http_result *r = gw_chat_held(&gw, &held, cases[i].alias, NULL, NULL, 5000);
		const cJSON *doc;

		gw_expect_answer(r, cases[i].alias, cases[i].fallback, 2);
		doc = completion(r, cases[i].alias);
		cr_assert_eq(usage_of(doc, "completion_tokens"), 6, "%s", r->body);
		r = stream(cases[i].alias, false, &s);
		cr_assert_eq(r->status, 200, "%s: %ld %s", cases[i].alias, r->status, r->body);
		cr_assert_eq(s.ncontent, 6, "%s stream: %s", cases[i].alias, r->body);
		cr_assert_eq(s.errors, 0, "%s stream: %s", cases[i].alias, r->body);
		cr_assert_eq(gw_header_num(r, "x-faultline-attempts"), 2, "%s", cases[i].alias);
	}
	text = gw_metrics_held(&gw, &held);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		cr_assert_eq(gw_metric(text, "faultline_attempts_total", cases[i].labels), 2,
			     "faultline_attempts_total{%s}:\n%s", cases[i].labels, text);
}

/*
 * An Anthropic 4xx is the request's fault, handed back in OpenAI's shape
 * (its type and message kept), once, with no failover and nothing held
 * against the breaker: a provider without its key gets a 401
 * authentication_error.
 */
Test(gateway_anthropic, anthropic_4xx_passed_through_in_openai_shape, .timeout = 20)
{
	struct http_result *r;
	const cJSON *err;
	cJSON *doc;

	start("{'providers':[" MOCK_PAIR("'ttft_ms':5,'output_tokens':4") "]}",
	      "{'providers':{'oa':{'base_url':'@oa@'},'an':{'base_url':'@an@','dialect':'anthropic'}},"
	      "'models':{'chain':{'targets':[{'provider':'an','model':'mock-small'},"
	      "{'provider':'oa','model':'mock-small'}]}}}");
	r = gw_chat_held(&gw, &held, "chain", "nokey", NULL, 5000);
	cr_assert_eq(r->status, 401, "status %ld: %s", r->status, r->body);
	doc = gw_held_doc(&held, gw_error_doc(r->body));
	cr_assert_not_null(doc, "not an OpenAI error: %s", r->body);
	err = cJSON_GetObjectItemCaseSensitive(doc, "error");
	cr_assert_str_eq(gw_json_str(err, "type"), "authentication_error", "%s", r->body);
	cr_assert(strstr(gw_json_str(err, "message"), "x-api-key"), "%s", r->body);
	cr_assert_null(cJSON_GetObjectItemCaseSensitive(doc, "type"), "Anthropic's shape: %s",
		       r->body);
	cr_assert_eq(gw_header_num(r, "x-faultline-attempts"), 1);
	cr_assert_eq(gw_mock_state(&mock, "oa", "requests"), 0, "failed over on a 401");
}

/*
 * A hedge races an OpenAI target against an Anthropic one: the OpenAI
 * primary is slow (600 ms to its answer), the hedge after 100 ms goes to
 * the Anthropic target, which wins — plain and streaming — and the loser
 * is cancelled.
 */
Test(gateway_anthropic, hedge_races_across_dialects, .timeout = 30)
{
	struct stream_sum s;
	struct http_result *r;
	char v[32];

	start("{'providers':[{'name':'oa','listen':'127.0.0.1:0','ttft_ms':600,'output_tokens':4},"
	      "{'name':'an','listen':'127.0.0.1:0','dialect':'anthropic','ttft_ms':10,"
	      "'output_tokens':4}]}",
	      "{'providers':{'oa':{'base_url':'@oa@'},'an':{'base_url':'@an@'" ANTH "}},"
	      "'models':{'chat':{'targets':[{'provider':'oa','model':'mock-small'},"
	      "{'provider':'an','model':'mock-small'}],'hedge':{'after_ms':100,"
	      "'max':1}}}}");
	r = gw_chat_held(&gw, &held, "chat", "hedged", NULL, 5000);
	gw_expect_answer(r, "hedged", "an", 2);
	cr_assert_str_eq(gw_header_str(r, "x-faultline-hedged", v, sizeof(v)), "1");
	cr_assert_lt(r->total_ms, 500, "answered after %.0f ms: the hedge did not win",
		     r->total_ms);
	r = stream("chat", false, &s);
	cr_assert_eq(r->status, 200, "%ld %s", r->status, r->body);
	cr_assert_str_eq(gw_header_str(r, "x-faultline-provider", v, sizeof(v)), "an");
	cr_assert_eq(s.ncontent, 4, "%s", r->body);
	cr_assert(gw_mock_wait(&mock, "oa", "in_flight", 0, 3000), "the loser was not cancelled");
}

/*
 * Health checks speak the provider's dialect: an Anthropic provider's
 * GET /models and one-token completion checks carry its key and
 * anthropic-version, so mockprov answers them 200 and the provider is
 * healthy; without the key they fail (401) and it is not.
 */
Test(gateway_anthropic, health_checks_speak_the_dialect, .timeout = 30)
{
	const char *text;

	start("{'providers':[{'name':'an','listen':'127.0.0.1:0','dialect':'anthropic'},"
	      "{'name':'an2','listen':'127.0.0.1:0','dialect':'anthropic'},"
	      "{'name':'nokey','listen':'127.0.0.1:0','dialect':'anthropic'}]}",
	      "{'providers':{"
	      "'an':{'base_url':'@an@','health_check':{'interval_ms':100,'rise':1,'fall':1}" ANTH "},"
	      "'an2':{'base_url':'@an2@','health_check':{'interval_ms':100,'rise':1,'fall':1,"
	      "'request':'completion'}" ANTH "},"
	      "'nokey':{'base_url':'@nokey@','dialect':'anthropic',"
	      "'health_check':{'interval_ms':100,'rise':1,'fall':1}}},"
	      "'models':{'chat':{'targets':[{'provider':'an','model':'mock-small'},"
	      "{'provider':'an2','model':'mock-small'},{'provider':'nokey','model':'mock-small'}]}}}");
	cr_assert_eq(gw_metric_wait(&gw, "faultline_provider_healthy", "provider=nokey", 0, 5000), 0,
		     "a check without the key passed");
	text = gw_metrics_held(&gw, &held);
	cr_assert_eq(gw_metric(text, "faultline_provider_healthy", "provider=an"), 1, "%s", text);
	cr_assert_eq(gw_metric(text, "faultline_provider_healthy", "provider=an2"), 1, "%s", text);
}

/*
 * A committed Anthropic stream that goes silent after 3 tokens ends with
 * the gateway's stream_stalled error event at stall_timeout_ms, the 3
 * tokens intact, as an OpenAI one does.
 */
Test(gateway_anthropic, stall_after_commit_ends_with_error_event, .timeout = 20)
{
	struct stream_sum s;
	struct http_result *r;

	start("{'providers':[{'name':'an','listen':'127.0.0.1:0','dialect':'anthropic',"
	      "'ttft_ms':10,'token_ms':10,'output_tokens':8,"
	      "'faults':[{'kind':'stall','after_tokens':3," ALWAYS "}]}]}",
	      "{'stream':{'stall_timeout_ms':300},'providers':{'an':{'base_url':'@an@'" ANTH "}},"
	      "'models':{'chat':{'targets':[{'provider':'an','model':'mock-small'}]}}}");
	r = stream("chat", false, &s);
	cr_assert_eq(r->status, 200, "%ld %s", r->status, r->body);
	cr_assert_eq(s.ncontent, 3, "%s", r->body);
	cr_assert_eq(s.errors, 1, "%s", r->body);
	cr_assert(strstr(s.error_data, "stream_stalled"), "%s", r->body);
	cr_assert(!s.done_last, "[DONE] after a stall: %s", r->body);
}

/*
 * The official openai SDK through the gateway gets identical content —
 * plain and streaming — whether an OpenAI target or an Anthropic one
 * answered, and it is mockprov's own (asked directly).
 */
Test(gateway_anthropic, openai_sdk_same_content_from_either_vendor, .timeout = 60)
{
	static char out[65536];
	static char err[65536];
	char base[160];
	char direct[4096];
	const char *args[] = { "tests/node/openai_client.mjs", base, NULL, NULL };
	const char *aliases[] = { "oa", "an" };
	cJSON *doc;
	size_t i;
	int rc;

	start("{'providers':[" MOCK_PAIR("'ttft_ms':10,'token_ms':2,'output_tokens':12") "]}",
	      "{'providers':{'oa':{'base_url':'@oa@'},'an':{'base_url':'@an@'" ANTH "}},"
	      "'models':{'oa':{'targets':[{'provider':'oa','model':'mock-small'}]},"
	      "'an':{'targets':[{'provider':'an','model':'mock-small'}]}}}");
	snprintf(base, sizeof(base), "http://%s/v1", mock_addr(&mock, "oa"));
	cr_assert_null(node_unavailable("openai"), "%s", node_unavailable("openai"));
	args[2] = "mock-small";
	rc = node_run(args, out, sizeof(out), err, sizeof(err), 20000);
	cr_assert_eq(rc, 0, "openai_client.mjs against mockprov exited %d:\n%s\n%s", rc, out, err);
	doc = gw_held_doc(&held, cJSON_Parse(out));
	cr_assert(gw_json_str(doc, "nonstream"), "%s", out);
	snprintf(direct, sizeof(direct), "%s", gw_json_str(doc, "nonstream"));
	cr_assert(direct[0], "%s", out);

	snprintf(base, sizeof(base), "http://%s/v1", gw.addr);
	for (i = 0; i < 2; i++) {
		args[2] = aliases[i];
		rc = node_run(args, out, sizeof(out), err, sizeof(err), 20000);
		cr_assert_eq(rc, 0, "openai_client.mjs through the gateway to %s exited %d:\n%s\n%s",
			     aliases[i], rc, out, err);
		doc = gw_held_doc(&held, cJSON_Parse(out));
		cr_assert(cJSON_IsObject(doc), "%s", out);
		cr_assert_str_eq(gw_json_str(doc, "nonstream"), direct, "%s: %s", aliases[i], out);
		cr_assert_str_eq(gw_json_str(doc, "stream"), direct, "%s: %s", aliases[i], out);
	}
}

/*
 * A 2xx from an Anthropic target that is not an Anthropic message — here
 * an OpenAI chat completion, as a base_url pointing at the wrong vendor
 * would give — is not passed through as an answer: it is invalid_body,
 * and the request fails over.
 */
Test(gateway_anthropic, a_2xx_that_is_not_a_message_fails_over, .timeout = 20)
{
	static const char body[] = "{\"id\":\"x\",\"object\":\"chat.completion\",\"choices\":"
				   "[{\"index\":0,\"message\":{\"role\":\"assistant\","
				   "\"content\":\"wrong vendor\"},\"finish_reason\":\"stop\"}]}";
	static char head[256];
	static struct script_step steps[2];
	char tmpl[1024];
	struct http_result *r;
	const char *text;

	snprintf(head, sizeof(head), "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
		 "Content-Length: %zu\r\n\r\n", sizeof(body) - 1);
	steps[0] = (struct script_step){ 0, head };
	steps[1] = (struct script_step){ 0, body };
	cr_assert_eq(script_stub_start(&stub, steps, 2, false), 0);
	snprintf(tmpl, sizeof(tmpl),
		 "{'providers':{'oa':{'base_url':'@oa@'},"
		 "'wrong':{'base_url':'http://%s/v1'" ANTH "}},"
		 "'models':{'chat':{'targets':[{'provider':'wrong','model':'m'},"
		 "{'provider':'oa','model':'mock-small'}]}}}", stub.addr);
	start("{'providers':[{'name':'oa','listen':'127.0.0.1:0','ttft_ms':5,'output_tokens':4}]}",
	      tmpl);
	r = gw_chat_held(&gw, &held, "chat", "wrongvendor", NULL, 5000);
	gw_expect_answer(r, "a 2xx that is not a message", "oa", 2);
	cr_assert_null(strstr(r->body, "wrong vendor"), "passed through: %s", r->body);
	cr_assert_eq(script_stub_requests(&stub), 1);
	text = gw_metrics_held(&gw, &held);
	cr_assert_eq(gw_metric(text, "faultline_attempts_total", "provider=wrong,outcome=invalid_body"),
		     1, "%s", text);
}
