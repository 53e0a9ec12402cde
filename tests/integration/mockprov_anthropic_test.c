/*
 * mockprov's anthropic dialect as a client sees it: a real bin/mockprov on
 * loopback, asked through libcurl, a raw socket (for the events' times) and
 * the official @anthropic-ai/sdk — Messages answers and streams, the header
 * and body checks, every fault kind in Anthropic's shape, the log rows, and
 * the same words as the OpenAI dialect serves for the same config.
 */
#include <criterion/criterion.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/support/gwharness.h"
#include "tests/support/harness.h"
#include "tests/support/nodeclient.h"
#include "tests/support/rawhttp.h"

#define ALWAYS "'from_s':-1000,'to_s':1000"
#define KEY_HDR "x-api-key: test-key"
#define VERSION_HDR "anthropic-version: 2023-06-01"
#define MSGS "'messages':[{'role':'user','content':'Say something.'}]"

/* The mockprov this test started; stopped and removed by the teardown. */
static struct mock_proc mock;
static bool mock_running;

static void stop_leftover(void)
{
	if (!mock_running)
		return;
	mock_stop(&mock, SIGKILL);
	mock_cleanup(&mock);
	mock_running = false;
}

TestSuite(mockprov_anthropic, .fini = stop_leftover);

/* JSON written with ' for " (none of the tests' strings holds a quote). */
static char *dq(const char *s)
{
	char *d = strdup(s);
	char *p;

	cr_assert_not_null(d);
	for (p = d; *p; p++) {
		if (*p == '\'')
			*p = '"';
	}
	return d;
}

static void start_mock(const char *config)
{
	char *c = dq(config);

	cr_assert_eq(mock_start(&mock, c, 0), 0, "mockprov did not start on %s", c);
	free(c);
	mock_running = true;
}

/* POSTs body (' for ") to prov's path with x-request-id rid and hdrs (NULL: key and version). */
static void post_h(const char *prov, const char *path, const char *rid, const char *body,
		   const char *const *hdrs, double timeout_ms, struct http_result *r)
{
	char url[160];
	char ridh[96];
	const char *h[8];
	size_t n = 0;
	char *b = dq(body);
	struct http_opts o = { .body = b, .timeout_ms = timeout_ms, .headers = h,
			       .fresh_connection = true };

	snprintf(ridh, sizeof(ridh), "x-request-id: %s", rid);
	h[n++] = ridh;
	if (!hdrs) {
		h[n++] = KEY_HDR;
		h[n++] = VERSION_HDR;
	}
	while (hdrs && *hdrs && n < 7)
		h[n++] = *hdrs++;
	h[n] = NULL;
	mock_url(&mock, prov, path, url, sizeof(url));
	cr_assert_eq(http_do(url, &o, r), 0, "curl could not start");
	free(b);
}

static void post(const char *prov, const char *rid, const char *body, double timeout_ms,
		 struct http_result *r)
{
	post_h(prov, "/v1/messages", rid, body, NULL, timeout_ms, r);
}

static void get(const char *prov, const char *path, const char *const *hdrs,
		struct http_result *r)
{
	char url[160];
	struct http_opts o = { .headers = hdrs, .timeout_ms = 3000, .fresh_connection = true };

	mock_url(&mock, prov, path, url, sizeof(url));
	cr_assert_eq(http_do(url, &o, r), 0);
}

/* Held documents, freed by the test's end (cr_assert leaves no other way out). */
static cJSON *held[32];
static size_t nheld;

static cJSON *hold(cJSON *j)
{
	if (nheld < sizeof(held) / sizeof(held[0]))
		held[nheld++] = j;
	return j;
}

static void free_held(void)
{
	while (nheld)
		cJSON_Delete(held[--nheld]);
}

static cJSON *parse_json(const char *text)
{
	cJSON *j = hold(cJSON_Parse(text));

	cr_assert_not_null(j, "not JSON: %s", text);
	return j;
}

/* The string at a dotted path of j ("error.type", "content.0.text"), or NULL. */
static const char *jstr(const cJSON *j, const char *path)
{
	char key[64];
	const char *p = path;

	while (j && *p) {
		size_t n = strcspn(p, ".");

		snprintf(key, sizeof(key), "%.*s", (int)n, p);
		if (cJSON_IsArray(j))
			j = cJSON_GetArrayItem(j, atoi(key));
		else
			j = cJSON_GetObjectItemCaseSensitive(j, key);
		p += n + (p[n] == '.');
	}
	return cJSON_IsString(j) ? j->valuestring : NULL;
}

static double jnum_at(const cJSON *j, const char *obj, const char *key)
{
	const cJSON *o = obj ? cJSON_GetObjectItemCaseSensitive(j, obj) : j;
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

/* Asserts r is Anthropic's error {"type":"error","error":{type, message}}. */
static void expect_error(const struct http_result *r, long status, const char *type,
			 const char *message)
{
	char v[64];
	cJSON *j;

	cr_assert_eq(r->status, status, "status %ld: %s", r->status, r->body);
	cr_expect_str_eq(http_header(r, "content-type", v, sizeof(v)), "application/json");
	j = parse_json(r->body);
	cr_expect_str_eq(jstr(j, "type"), "error", "%s", r->body);
	cr_expect_str_eq(jstr(j, "error.type"), type, "%s", r->body);
	if (message)
		cr_expect_str_eq(jstr(j, "error.message"), message, "%s", r->body);
	else
		cr_expect(jstr(j, "error.message") && jstr(j, "error.message")[0], "%s", r->body);
}

/* The events of an SSE body. */
static void events_of(const struct http_result *r, struct sse_reader *rd)
{
	memset(rd, 0, sizeof(*rd));
	cr_assert_eq(sse_reader_feed(rd, r->body, r->body_len, 0), 0);
}

/* Event names joined by ',' ("content_block_delta" as "delta"), into out. */
static const char *names(const struct sse_reader *rd, char *out, size_t len)
{
	size_t used = 0;
	size_t i;

	out[0] = '\0';
	for (i = 0; i < rd->nev && used < len; i++) {
		const char *e = rd->ev[i].event ? rd->ev[i].event : "(none)";

		if (strcmp(e, "content_block_delta") == 0)
			e = "delta";
		used += (size_t)snprintf(out + used, len - used, "%s%s", i ? "," : "", e);
	}
	return out;
}

/* The text of the events' text deltas, joined, into out. */
static const char *delta_text(const struct sse_reader *rd, char *out, size_t len)
{
	size_t i;

	out[0] = '\0';
	for (i = 0; i < rd->nev; i++) {
		cJSON *j;

		if (!rd->ev[i].event || strcmp(rd->ev[i].event, "content_block_delta") != 0)
			continue;
		j = parse_json(rd->ev[i].data);
		cr_assert_str_eq(jstr(j, "delta.type"), "text_delta", "%s", rd->ev[i].data);
		cr_assert_eq(jnum_at(j, NULL, "index"), 0);
		strncat(out, jstr(j, "delta.text"), len - strlen(out) - 1);
	}
	return out;
}

/* ---- log rows ---- */

static void read_log(const char *prov, struct csv_table *t)
{
	cr_assert_eq(mock_log(&mock, prov, t), 0, "no mock-%s.csv in %s", prov, mock.dir);
	cr_assert_eq(t->ncols, 10, "mock-%s.csv has %zu columns", prov, t->ncols);
}

/* The row of rid, asserting exactly one; its fault, status, tokens_out (-1: any), outcome. */
static size_t expect_row(const struct csv_table *t, const char *rid, const char *fault,
			 long status, long tokens_out, const char *outcome)
{
	size_t found = 0;
	size_t n = gw_rows_of(t, rid, &found, 1);

	cr_assert_eq(n, 1, "%zu log rows for %s, expected 1", n, rid);
	cr_expect_str_eq(csv_get(t, found, "fault"), fault, "%s: fault", rid);
	cr_expect_eq(atol(csv_get(t, found, "status")), status, "%s: status", rid);
	if (tokens_out >= 0)
		cr_expect_eq(atol(csv_get(t, found, "tokens_out")), tokens_out, "%s: tokens_out %s",
			     rid, csv_get(t, found, "tokens_out"));
	cr_expect_str_eq(csv_get(t, found, "outcome"), outcome, "%s: outcome", rid);
	return found;
}

/* Waits for mockprov to have nothing in flight (the clients' ends are seen), then stops it. */
static void settle_and_stop(void)
{
	double end = now_ms() + 3000;
	char url[160];

	snprintf(url, sizeof(url), "http://%s/state", mock.admin_addr);
	for (;;) {
		struct http_result r;
		struct http_opts o = { .timeout_ms = 2000 };
		double inflight = 0;
		const cJSON *p;
		cJSON *st;

		cr_assert_eq(http_do(url, &o, &r), 0);
		st = cJSON_Parse(r.body);
		http_result_free(&r);
		cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(st, "providers"))
			inflight += jnum_at(p, NULL, "in_flight");
		cJSON_Delete(st);
		if (inflight == 0)
			break;
		cr_assert_lt(now_ms(), end, "requests still in flight");
		usleep(1000);	/* polling the admin API for the event */
	}
	cr_assert_eq(mock_stop(&mock, SIGTERM), 0, "mockprov did not exit 0 on SIGTERM");
	mock_running = false;
}

/* ---- answers ---- */

/*
 * A plain answer and a stream: Anthropic's shapes, ids, usage and
 * stop_reason (max_tokens caps it), the same words as the OpenAI dialect
 * for the same config, and a row each.
 */
Test(mockprov_anthropic, answers_and_streams, .timeout = 20)
{
	struct http_result r;
	struct sse_reader rd;
	struct csv_table log;
	char oa_text[512];
	char text[512];
	char seq[512];
	char v[64];
	const cJSON *msg;
	cJSON *j;
	size_t i;

	start_mock("{'providers':["
		   "{'name':'a','listen':'127.0.0.1:0','dialect':'anthropic','ttft_ms':10,"
		   "'token_ms':2,'output_tokens':6},"
		   "{'name':'o','listen':'127.0.0.1:0','ttft_ms':10,'token_ms':2,'output_tokens':6}]}");

	/* The OpenAI dialect's words for the same config. */
	{
		char url[160];
		char body[256];
		struct http_opts o = { .body = chat_body(false, body, sizeof(body)),
				       .timeout_ms = 3000 };

		mock_url(&mock, "o", "/v1/chat/completions", url, sizeof(url));
		cr_assert_eq(http_do(url, &o, &r), 0);
		cr_assert_eq(r.status, 200);
		j = parse_json(r.body);
		snprintf(oa_text, sizeof(oa_text), "%s", jstr(j, "choices.0.message.content"));
		cr_assert(oa_text[0]);
		http_result_free(&r);
	}

	post("a", "plain", "{'model':'claude-x','max_tokens':100," MSGS "}", 3000, &r);
	cr_assert_eq(r.code, CURLE_OK, "%s", r.errbuf);
	cr_assert_eq(r.status, 200, "%s", r.body);
	cr_expect_str_eq(http_header(&r, "content-type", v, sizeof(v)), "application/json");
	cr_expect_str_eq(http_header(&r, "x-mock-provider", v, sizeof(v)), "a");
	cr_expect_str_eq(http_header(&r, "x-request-id", v, sizeof(v)), "plain");
	j = parse_json(r.body);
	cr_expect(strncmp(jstr(j, "id"), "msg_mock-a-", 11) == 0, "%s", r.body);
	cr_expect_str_eq(jstr(j, "type"), "message");
	cr_expect_str_eq(jstr(j, "role"), "assistant");
	cr_expect_str_eq(jstr(j, "model"), "claude-x");
	cr_expect_eq(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(j, "content")), 1);
	cr_expect_str_eq(jstr(j, "content.0.type"), "text");
	cr_expect_str_eq(jstr(j, "content.0.text"), oa_text, "not the OpenAI dialect's words");
	cr_expect_str_eq(jstr(j, "stop_reason"), "end_turn");
	cr_expect(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(j, "stop_sequence")));
	/* "Say something." is 14 characters: 4 tokens, as OpenAI's prompt_tokens. */
	cr_expect_eq(jnum_at(j, "usage", "input_tokens"), 4);
	cr_expect_eq(jnum_at(j, "usage", "output_tokens"), 6);
	http_result_free(&r);

	/* max_tokens caps it; the bare /messages path works too. */
	post_h("a", "/messages", "capped", "{'model':'claude-x','max_tokens':3," MSGS "}", NULL,
	       3000, &r);
	cr_assert_eq(r.status, 200, "%s", r.body);
	j = parse_json(r.body);
	cr_expect_str_eq(jstr(j, "stop_reason"), "max_tokens");
	cr_expect_eq(jnum_at(j, "usage", "output_tokens"), 3);
	cr_expect_str_eq(jstr(j, "content.0.text"), "Lorem ipsum dolor");
	http_result_free(&r);

	post("a", "sse", "{'model':'claude-x','max_tokens':100,'stream':true," MSGS "}", 3000, &r);
	cr_assert_eq(r.code, CURLE_OK, "%s", r.errbuf);
	cr_assert_eq(r.status, 200);
	cr_expect_str_eq(http_header(&r, "content-type", v, sizeof(v)), "text/event-stream");
	events_of(&r, &rd);
	cr_expect_str_eq(names(&rd, seq, sizeof(seq)),
			 "message_start,content_block_start,ping,delta,delta,delta,delta,delta,"
			 "delta,content_block_stop,message_delta,message_stop", "%s", r.body);
	for (i = 0; i < rd.nev; i++) {
		j = parse_json(rd.ev[i].data);
		cr_expect_str_eq(jstr(j, "type"), rd.ev[i].event, "event %s's data", rd.ev[i].event);
	}
	j = parse_json(rd.ev[0].data);
	msg = cJSON_GetObjectItemCaseSensitive(j, "message");
	cr_expect(strncmp(jstr(msg, "id"), "msg_mock-a-", 11) == 0);
	cr_expect_str_eq(jstr(msg, "model"), "claude-x");
	cr_expect_eq(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(msg, "content")), 0);
	cr_expect(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(msg, "stop_reason")));
	cr_expect_eq(jnum_at(msg, "usage", "input_tokens"), 4);
	cr_expect_eq(jnum_at(msg, "usage", "output_tokens"), 1);
	j = parse_json(rd.ev[1].data);
	cr_expect_str_eq(jstr(j, "content_block.type"), "text");
	cr_expect_str_eq(jstr(j, "content_block.text"), "");
	cr_expect_str_eq(delta_text(&rd, text, sizeof(text)), oa_text);
	j = parse_json(rd.ev[rd.nev - 2].data);
	cr_expect_str_eq(jstr(j, "delta.stop_reason"), "end_turn");
	cr_expect(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(j, "delta"), "stop_sequence")));
	cr_expect_eq(jnum_at(j, "usage", "output_tokens"), 6);
	sse_reader_free(&rd);
	http_result_free(&r);

	post("a", "sse-capped", "{'model':'m','max_tokens':2,'stream':true," MSGS "}", 3000, &r);
	events_of(&r, &rd);
	cr_expect_str_eq(names(&rd, seq, sizeof(seq)),
			 "message_start,content_block_start,ping,delta,delta,content_block_stop,"
			 "message_delta,message_stop");
	j = parse_json(rd.ev[rd.nev - 2].data);
	cr_expect_str_eq(jstr(j, "delta.stop_reason"), "max_tokens");
	cr_expect_eq(jnum_at(j, "usage", "output_tokens"), 2);
	sse_reader_free(&rd);
	http_result_free(&r);

	settle_and_stop();
	read_log("a", &log);
	expect_row(&log, "plain", "", 200, 6, "completed");
	expect_row(&log, "capped", "", 200, 3, "completed");
	i = expect_row(&log, "sse", "", 200, 6, "completed");
	cr_expect_str_eq(csv_get(&log, i, "streaming"), "1");
	cr_expect_str_eq(csv_get(&log, i, "kind"), "chat");
	expect_row(&log, "sse-capped", "", 200, 2, "completed");
	csv_free(&log);
	mock_cleanup(&mock);
	free_held();
}

/*
 * The stream's timing is the OpenAI dialect's: message_start (and the
 * block's start, a ping) with the headers, each text delta at ttft + k ×
 * token_ms, and ttft_ms in the log is the first text delta's.
 */
Test(mockprov_anthropic, deltas_come_at_the_tokens_times, .timeout = 20)
{
	static const char body[] =
		"{\"model\":\"m\",\"max_tokens\":100,\"stream\":true,\"messages\":[{\"role\":"
		"\"user\",\"content\":\"hi\"}]}";
	const char *hdrs[] = { KEY_HDR, VERSION_HDR, "x-request-id: timed", NULL };
	struct raw_http c;
	struct csv_table log;
	size_t want = 3;
	size_t i;
	size_t first = 0;
	size_t i_row;

	start_mock("{'providers':[{'name':'a','listen':'127.0.0.1:0','dialect':'anthropic',"
		   "'ttft_ms':300,'token_ms':60,'output_tokens':4}]}");
	cr_assert_eq(raw_open(&c, mock_addr(&mock, "a"), 0), 0);
	cr_assert_eq(raw_post(&c, "/v1/messages", 1, hdrs, body), 0);
	/* The preamble comes with the headers, long before the first token. */
	cr_assert_eq(raw_read(&c, raw_has_events, &want, 3000), 0, "%s", raw_tail(&c, 400));
	cr_expect_lt(c.sse.ev[2].at_ms - c.sent_ms, 200, "ping at %.1f ms",
		     c.sse.ev[2].at_ms - c.sent_ms);
	cr_assert_eq(raw_read(&c, NULL, NULL, 5000), 0, "%s", raw_tail(&c, 400));
	cr_assert_eq(c.sse.nev, 10);
	for (i = 0; i < c.sse.nev; i++) {
		if (strcmp(c.sse.ev[i].event, "content_block_delta") == 0 && !first)
			first = i;
	}
	cr_assert_eq(first, 3);
	for (i = 0; i < 4; i++) {
		double at = c.sse.ev[first + i].at_ms - c.sent_ms;
		double due = 300 + 60 * (double)i;

		cr_expect_geq(at, due - 2, "delta %zu at %.1f ms, due %.0f", i, at, due);
		cr_expect_lt(at, due + 150, "delta %zu at %.1f ms, due %.0f", i, at, due);
	}
	raw_free(&c);
	settle_and_stop();
	read_log("a", &log);
	i_row = expect_row(&log, "timed", "", 200, 4, "completed");
	cr_expect_geq(atof(csv_get(&log, i_row, "ttft_ms")), 298, "ttft_ms %s",
		      csv_get(&log, i_row, "ttft_ms"));
	csv_free(&log);
	mock_cleanup(&mock);
}

/* ---- what a request must carry ---- */

Test(mockprov_anthropic, headers_paths_and_body_checks, .timeout = 20)
{
	static const char *const no_key[] = { VERSION_HDR, NULL };
	static const char *const empty_key[] = { "x-api-key;", VERSION_HDR, NULL };
	static const char *const no_version[] = { KEY_HDR, NULL };
	static const char *const both[] = { KEY_HDR, VERSION_HDR, NULL };
	struct http_result r;
	struct csv_table log;
	char v[64];
	cJSON *j;

	start_mock("{'providers':[{'name':'a','listen':'127.0.0.1:0','dialect':'anthropic',"
		   "'ttft_ms':0,'output_tokens':3},"
		   "{'name':'strict','listen':'127.0.0.1:0','dialect':'anthropic','strict_model':true,"
		   "'model':'claude-mock','ttft_ms':0}]}");

	post_h("a", "/v1/messages", "nokey", "{'model':'m','max_tokens':5," MSGS "}", no_key,
	       3000, &r);
	expect_error(&r, 401, "authentication_error", "x-api-key header is required");
	http_result_free(&r);
	post_h("a", "/v1/messages", "emptykey", "{'model':'m','max_tokens':5," MSGS "}",
	       empty_key, 3000, &r);
	expect_error(&r, 401, "authentication_error", "x-api-key header is required");
	http_result_free(&r);
	post_h("a", "/v1/messages", "noversion", "{'model':'m','max_tokens':5," MSGS "}",
	       no_version, 3000, &r);
	expect_error(&r, 400, "invalid_request_error", "anthropic-version: header is required");
	http_result_free(&r);

	post("a", "nomax", "{'model':'m'," MSGS "}", 3000, &r);
	expect_error(&r, 400, "invalid_request_error", "max_tokens: Field required");
	http_result_free(&r);
	post("a", "zeromax", "{'model':'m','max_tokens':0," MSGS "}", 3000, &r);
	expect_error(&r, 400, "invalid_request_error",
		     "max_tokens: Input should be greater than or equal to 1");
	http_result_free(&r);
	/* A system turn in the list is taken (the SDK's MessageParam has one); a tool role is not. */
	post("a", "system", "{'model':'m','max_tokens':5,'messages':[{'role':'system',"
	     "'content':'Be brief.'},{'role':'user','content':'hi'}]}", 3000, &r);
	cr_expect_eq(r.status, 200, "%s", r.body);
	http_result_free(&r);
	post("a", "toolrole", "{'model':'m','max_tokens':5,'messages':[{'role':'tool',"
	     "'content':'x'}]}", 3000, &r);
	expect_error(&r, 400, "invalid_request_error",
		     "messages.0.role: Input should be 'user', 'assistant' or 'system'");
	http_result_free(&r);
	post("a", "nomodel", "{'max_tokens':5," MSGS "}", 3000, &r);
	expect_error(&r, 400, "invalid_request_error", "model: Field required");
	http_result_free(&r);
	post("a", "nomsgs", "{'model':'m','max_tokens':5,'messages':[]}", 3000, &r);
	expect_error(&r, 400, "invalid_request_error", NULL);
	http_result_free(&r);
	post("a", "notjson", "{'model':'m',", 3000, &r);
	expect_error(&r, 400, "invalid_request_error", NULL);
	http_result_free(&r);
	post("a", "badstream", "{'model':'m','max_tokens':5,'stream':null," MSGS "}", 3000, &r);
	expect_error(&r, 400, "invalid_request_error", "stream: Input should be a valid boolean");
	http_result_free(&r);
	/* A system prompt, as a string or text blocks, is welcome. */
	post("a", "withsystem", "{'model':'m','max_tokens':5,'system':[{'type':'text',"
	     "'text':'Be brief.'}]," MSGS "}", 3000, &r);
	cr_expect_eq(r.status, 200, "%s", r.body);
	http_result_free(&r);

	post("strict", "other", "{'model':'claude-x','max_tokens':5," MSGS "}", 3000, &r);
	expect_error(&r, 404, "not_found_error", "model: claude-x");
	http_result_free(&r);
	post("strict", "same", "{'model':'claude-mock','max_tokens':5," MSGS "}", 3000, &r);
	cr_expect_eq(r.status, 200, "%s", r.body);
	http_result_free(&r);

	/* OpenAI's path is not served; a wrong method is 405 with Allow. */
	post_h("a", "/v1/chat/completions", "openai-path", "{'model':'m'," MSGS "}", both, 3000,
	       &r);
	expect_error(&r, 404, "not_found_error", NULL);
	http_result_free(&r);
	get("a", "/v1/messages", both, &r);
	expect_error(&r, 405, "invalid_request_error", NULL);
	cr_expect_str_eq(http_header(&r, "allow", v, sizeof(v)), "POST");
	http_result_free(&r);
	get("a", "/healthz", NULL, &r);
	cr_expect_eq(r.status, 200);
	cr_expect_str_eq(r.body, "{\"status\":\"ok\"}");
	http_result_free(&r);

	/* The model list: Anthropic's shape, behind the same headers. */
	get("strict", "/v1/models", both, &r);
	cr_assert_eq(r.status, 200, "%s", r.body);
	cr_expect_str_eq(r.body, "{\"data\":[{\"type\":\"model\",\"id\":\"claude-mock\","
			 "\"display_name\":\"claude-mock\",\"created_at\":\"2025-01-01T00:00:00Z\"}],"
			 "\"has_more\":false,\"first_id\":\"claude-mock\",\"last_id\":\"claude-mock\"}");
	j = parse_json(r.body);
	cr_expect_str_eq(jstr(j, "data.0.type"), "model");
	http_result_free(&r);
	get("strict", "/models", no_key, &r);
	expect_error(&r, 401, "authentication_error", NULL);
	http_result_free(&r);

	settle_and_stop();
	read_log("a", &log);
	expect_row(&log, "nokey", "", 401, 0, "completed");
	expect_row(&log, "noversion", "", 400, 0, "completed");
	expect_row(&log, "nomax", "", 400, 0, "completed");
	expect_row(&log, "withsystem", "", 200, 3, "completed");
	expect_row(&log, "system", "", 200, 3, "completed");
	expect_row(&log, "toolrole", "", 400, 0, "completed");
	/* 404 and 405 leave no row: 12 answers to /v1/messages. */
	cr_expect_eq(log.nrows - 1, 12, "%zu rows", log.nrows - 1);
	csv_free(&log);
	read_log("strict", &log);
	cr_expect_eq(log.nrows - 1, 4, "%zu rows", log.nrows - 1);
	cr_expect_str_eq(csv_get(&log, 3, "kind"), "models");
	cr_expect_str_eq(csv_get(&log, 4, "status"), "401");
	csv_free(&log);
	mock_cleanup(&mock);
	free_held();
}

/* ---- faults ---- */

/* `status` 529 with retry-after, and `rate_limit` with Anthropic's headers. */
Test(mockprov_anthropic, status_and_rate_limit, .timeout = 20)
{
	struct http_result r;
	struct csv_table log;
	char v[64];
	int i;

	start_mock("{'providers':["
		   "{'name':'s','listen':'127.0.0.1:0','dialect':'anthropic','ttft_ms':2000,"
		   "'faults':[{'kind':'status','status':529,'retry_after_s':2," ALWAYS "}]},"
		   "{'name':'s503','listen':'127.0.0.1:0','dialect':'anthropic',"
		   "'faults':[{'kind':'status','status':503," ALWAYS "}]},"
		   "{'name':'rl','listen':'127.0.0.1:0','dialect':'anthropic','ttft_ms':0,"
		   "'output_tokens':4,'faults':[{'kind':'rate_limit','rpm':2,'tpm':100000," ALWAYS "}]}]}");

	post("s", "overloaded", "{'model':'m','max_tokens':5," MSGS "}", 3000, &r);
	expect_error(&r, 529, "overloaded_error", "Overloaded");
	cr_expect_lt(r.total_ms, 1000, "not at once: %.1f ms", r.total_ms);
	cr_expect_str_eq(http_header(&r, "retry-after", v, sizeof(v)), "2");
	http_result_free(&r);
	post("s", "overloaded-sse", "{'model':'m','max_tokens':5,'stream':true," MSGS "}", 3000,
	     &r);
	expect_error(&r, 529, "overloaded_error", "Overloaded");
	http_result_free(&r);
	post("s503", "unavailable", "{'model':'m','max_tokens':5," MSGS "}", 3000, &r);
	expect_error(&r, 503, "api_error", NULL);
	cr_expect_null(http_header(&r, "retry-after", v, sizeof(v)));
	http_result_free(&r);

	for (i = 0; i < 2; i++) {
		post("rl", i ? "pass2" : "pass1", "{'model':'m','max_tokens':5," MSGS "}", 3000, &r);
		cr_assert_eq(r.status, 200, "%s", r.body);
		cr_expect_str_eq(http_header(&r, "anthropic-ratelimit-requests-limit", v, sizeof(v)),
				 "2");
		cr_expect_str_eq(http_header(&r, "anthropic-ratelimit-requests-remaining", v,
					     sizeof(v)), i ? "0" : "1");
		cr_expect_str_eq(http_header(&r, "anthropic-ratelimit-tokens-limit", v, sizeof(v)),
				 "100000");
		cr_expect_null(http_header(&r, "x-ratelimit-limit-requests", v, sizeof(v)),
			       "OpenAI's headers on an anthropic answer");
		http_result_free(&r);
	}
	post("rl", "limited", "{'model':'m','max_tokens':5," MSGS "}", 3000, &r);
	expect_error(&r, 429, "rate_limit_error", NULL);
	cr_expect_geq(atof(http_header(&r, "retry-after", v, sizeof(v)) ? v : "0"), 1);
	cr_expect_str_eq(http_header(&r, "anthropic-ratelimit-requests-remaining", v, sizeof(v)),
			 "0");
	cr_assert_not_null(http_header(&r, "anthropic-ratelimit-requests-reset", v, sizeof(v)));
	/* RFC 3339, UTC: 2026-12-05T01:20:48Z */
	cr_expect(strlen(v) == 20 && v[4] == '-' && v[10] == 'T' && v[19] == 'Z', "reset %s", v);
	cr_expect_not_null(http_header(&r, "anthropic-ratelimit-tokens-remaining", v, sizeof(v)));
	cr_expect_not_null(http_header(&r, "anthropic-ratelimit-tokens-reset", v, sizeof(v)));
	http_result_free(&r);

	settle_and_stop();
	read_log("s", &log);
	expect_row(&log, "overloaded", "status", 529, 0, "faulted");
	expect_row(&log, "overloaded-sse", "status", 529, 0, "faulted");
	csv_free(&log);
	read_log("rl", &log);
	expect_row(&log, "pass1", "", 200, 4, "completed");
	expect_row(&log, "limited", "rate_limit", 429, 0, "faulted");
	csv_free(&log);
	mock_cleanup(&mock);
	free_held();
}

/* `error_event`, `stall` and `truncate` after after_tokens deltas. */
Test(mockprov_anthropic, error_event_stall_truncate, .timeout = 20)
{
	struct http_result r;
	struct sse_reader rd;
	struct csv_table log;
	char seq[512];
	char text[256];
	cJSON *j;

	start_mock("{'providers':["
		   "{'name':'ee','listen':'127.0.0.1:0','dialect':'anthropic','ttft_ms':10,"
		   "'token_ms':5,'output_tokens':10,"
		   "'faults':[{'kind':'error_event','after_tokens':2," ALWAYS "}]},"
		   "{'name':'st','listen':'127.0.0.1:0','dialect':'anthropic','ttft_ms':10,"
		   "'token_ms':10,'output_tokens':10,"
		   "'faults':[{'kind':'stall','after_tokens':3," ALWAYS "}]},"
		   "{'name':'tr','listen':'127.0.0.1:0','dialect':'anthropic','ttft_ms':10,"
		   "'token_ms':5,'output_tokens':10,"
		   "'faults':[{'kind':'truncate','after_tokens':3," ALWAYS "}]}]}");

	post("ee", "ee-sse", "{'model':'m','max_tokens':50,'stream':true," MSGS "}", 3000, &r);
	cr_assert_eq(r.code, CURLE_OK, "%s", r.errbuf);
	cr_assert_eq(r.status, 200);
	events_of(&r, &rd);
	cr_expect_str_eq(names(&rd, seq, sizeof(seq)),
			 "message_start,content_block_start,ping,delta,delta,error", "%s", r.body);
	cr_expect_str_eq(delta_text(&rd, text, sizeof(text)), "Lorem ipsum");
	cr_expect(strstr(r.body, "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":"
			 "\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n"), "%s", r.body);
	sse_reader_free(&rd);
	http_result_free(&r);
	post("ee", "ee-json", "{'model':'m','max_tokens':50," MSGS "}", 3000, &r);
	expect_error(&r, 500, "api_error", NULL);
	http_result_free(&r);

	/* stall: three deltas, then silence until the client gives up. */
	post("st", "st-sse", "{'model':'m','max_tokens':50,'stream':true," MSGS "}", 600, &r);
	cr_assert_eq(r.code, CURLE_OPERATION_TIMEDOUT, "curl %d %s", r.code, r.errbuf);
	cr_assert_eq(r.status, 200);
	events_of(&r, &rd);
	cr_expect_str_eq(names(&rd, seq, sizeof(seq)),
			 "message_start,content_block_start,ping,delta,delta,delta", "%s", r.body);
	sse_reader_free(&rd);
	http_result_free(&r);
	post("st", "st-json", "{'model':'m','max_tokens':50," MSGS "}", 500, &r);
	cr_assert_eq(r.code, CURLE_OPERATION_TIMEDOUT, "curl %d %s", r.code, r.errbuf);
	cr_assert_eq(r.status, 200);
	cr_expect(strstr(r.body, "\"text\":\"Lorem ipsum dolor"), "%s", r.body);
	cr_expect_null(strstr(r.body, "Lorem ipsum dolor sit"), "%s", r.body);
	http_result_free(&r);

	/* truncate: three deltas and a clean end, without message_delta or message_stop. */
	post("tr", "tr-sse", "{'model':'m','max_tokens':50,'stream':true," MSGS "}", 3000, &r);
	cr_assert_eq(r.code, CURLE_OK, "curl %d %s", r.code, r.errbuf);
	events_of(&r, &rd);
	cr_expect_str_eq(names(&rd, seq, sizeof(seq)),
			 "message_start,content_block_start,ping,delta,delta,delta", "%s", r.body);
	sse_reader_free(&rd);
	http_result_free(&r);
	post("tr", "tr-json", "{'model':'m','max_tokens':50," MSGS "}", 3000, &r);
	cr_assert_eq(r.code, CURLE_PARTIAL_FILE, "curl %d %s", r.code, r.errbuf);
	cr_assert_eq(r.status, 200);
	j = cJSON_Parse(r.body);
	cr_expect_null(j, "a cut body parses: %s", r.body);
	cJSON_Delete(j);
	cr_expect(strstr(r.body, "{\"id\":\"msg_mock-tr-"), "%s", r.body);
	http_result_free(&r);

	settle_and_stop();
	read_log("ee", &log);
	expect_row(&log, "ee-sse", "error_event", 200, 2, "faulted");
	expect_row(&log, "ee-json", "error_event", 500, 2, "faulted");
	csv_free(&log);
	read_log("st", &log);
	expect_row(&log, "st-sse", "stall", 200, 3, "faulted");
	expect_row(&log, "st-json", "stall", 200, 3, "faulted");
	csv_free(&log);
	read_log("tr", &log);
	expect_row(&log, "tr-sse", "truncate", 200, 3, "faulted");
	expect_row(&log, "tr-json", "truncate", 200, 3, "faulted");
	csv_free(&log);
	mock_cleanup(&mock);
	free_held();
}

/* `malformed`, `reset`, `hang` and `down`. */
Test(mockprov_anthropic, malformed_reset_hang_down, .timeout = 20)
{
	struct http_result r;
	struct sse_reader rd;
	struct csv_table log;
	size_t unparsable = 0;
	size_t i;
	cJSON *j;

	start_mock("{'providers':["
		   "{'name':'mf','listen':'127.0.0.1:0','dialect':'anthropic','ttft_ms':10,"
		   "'output_tokens':6,'faults':[{'kind':'malformed'," ALWAYS "}]},"
		   "{'name':'rs','listen':'127.0.0.1:0','dialect':'anthropic','ttft_ms':10,"
		   "'faults':[{'kind':'reset','after_bytes':0," ALWAYS "}]},"
		   "{'name':'hg','listen':'127.0.0.1:0','dialect':'anthropic','ttft_ms':10,"
		   "'faults':[{'kind':'hang'," ALWAYS "}]},"
		   "{'name':'dn','listen':'127.0.0.1:0','dialect':'anthropic',"
		   "'faults':[{'kind':'down'," ALWAYS "}]}]}");

	post("mf", "mf-json", "{'model':'m','max_tokens':50," MSGS "}", 3000, &r);
	cr_assert_eq(r.code, CURLE_OK, "%s", r.errbuf);
	cr_assert_eq(r.status, 200);
	cr_assert_gt(r.body_len, 0);
	j = cJSON_Parse(r.body);
	cr_expect_null(j, "parses: %s", r.body);
	cJSON_Delete(j);
	cr_expect(strncmp(r.body, "{\"id\":\"msg_mock-mf-", 19) == 0, "%s", r.body);
	http_result_free(&r);
	post("mf", "mf-sse", "{'model':'m','max_tokens':50,'stream':true," MSGS "}", 3000, &r);
	cr_assert_eq(r.code, CURLE_OK, "%s", r.errbuf);
	events_of(&r, &rd);
	for (i = 0; i < rd.nev; i++) {
		j = cJSON_Parse(rd.ev[i].data);
		if (!j) {
			unparsable++;
			cr_expect_str_eq(rd.ev[i].event, "content_block_delta");
		}
		cJSON_Delete(j);
	}
	cr_expect_eq(unparsable, 1, "%s", r.body);
	sse_reader_free(&rd);
	http_result_free(&r);

	post("rs", "rs", "{'model':'m','max_tokens':50," MSGS "}", 3000, &r);
	cr_expect_eq(r.code, CURLE_RECV_ERROR, "curl %d %s", r.code, r.errbuf);
	cr_expect_eq(r.os_errno, ECONNRESET, "errno %ld", r.os_errno);
	cr_expect_eq(r.status, 0);
	http_result_free(&r);

	post("hg", "hg", "{'model':'m','max_tokens':50,'stream':true," MSGS "}", 300, &r);
	cr_expect_eq(r.code, CURLE_OPERATION_TIMEDOUT, "curl %d %s", r.code, r.errbuf);
	cr_expect_eq(r.status, 0);
	cr_expect_eq(r.body_len, 0);
	http_result_free(&r);

	post("dn", "dn", "{'model':'m','max_tokens':50," MSGS "}", 1000, &r);
	cr_expect_eq(r.code, CURLE_COULDNT_CONNECT, "curl %d %s", r.code, r.errbuf);
	cr_expect_eq(r.os_errno, ECONNREFUSED);
	http_result_free(&r);

	settle_and_stop();
	read_log("mf", &log);
	expect_row(&log, "mf-json", "malformed", 200, -1, "faulted");
	expect_row(&log, "mf-sse", "malformed", 200, -1, "faulted");
	csv_free(&log);
	read_log("rs", &log);
	expect_row(&log, "rs", "reset", 0, 0, "faulted");
	csv_free(&log);
	read_log("hg", &log);
	expect_row(&log, "hg", "hang", 0, 0, "faulted");
	csv_free(&log);
	read_log("dn", &log);
	cr_expect_eq(log.nrows, 1, "a refused connection left a row");
	csv_free(&log);
	mock_cleanup(&mock);
}

/*
 * Structured outputs: output_config.format's schema shapes the content as
 * response_format does in the OpenAI dialect (the same document), and
 * bad_content breaks it the same way.
 */
Test(mockprov_anthropic, output_config_and_bad_content, .timeout = 20)
{
#define SCHEMA "{'type':'object','properties':{'name':{'type':'string'},'n':{'type':'integer'}}," \
	       "'required':['name','n'],'additionalProperties':false}"
	struct http_result r;
	struct csv_table log;
	char oa_doc[512];
	const char *doc;
	cJSON *j;
	cJSON *d;

	start_mock("{'providers':["
		   "{'name':'a','listen':'127.0.0.1:0','dialect':'anthropic','ttft_ms':0,'output_tokens':4},"
		   "{'name':'o','listen':'127.0.0.1:0','ttft_ms':0,'output_tokens':4},"
		   "{'name':'bad','listen':'127.0.0.1:0','dialect':'anthropic','ttft_ms':0,"
		   "'output_tokens':4,'faults':[{'kind':'bad_content','violation':'wrong_type',"
		   ALWAYS "}]}]}");

	post_h("o", "/v1/chat/completions", "oa", "{'model':'m','response_format':{'type':"
	       "'json_schema','json_schema':{'name':'x','schema':" SCHEMA "}}," MSGS "}", NULL,
	       3000, &r);
	cr_assert_eq(r.status, 200, "%s", r.body);
	j = parse_json(r.body);
	snprintf(oa_doc, sizeof(oa_doc), "%s", jstr(j, "choices.0.message.content"));
	http_result_free(&r);

	post("a", "schema", "{'model':'m','max_tokens':50,'output_config':{'format':{'type':"
	     "'json_schema','schema':" SCHEMA "}}," MSGS "}", 3000, &r);
	cr_assert_eq(r.status, 200, "%s", r.body);
	j = parse_json(r.body);
	doc = jstr(j, "content.0.text");
	cr_assert_not_null(doc, "%s", r.body);
	cr_expect_str_eq(doc, oa_doc, "not the OpenAI dialect's document");
	d = parse_json(doc);
	cr_expect_str_eq(jstr(d, "name"), "Lorem ipsum dolor sit");
	cr_expect(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(d, "n")), "%s", doc);
	cr_expect_eq(jnum_at(j, "usage", "output_tokens"), 4);
	http_result_free(&r);

	post("bad", "wrong", "{'model':'m','max_tokens':50,'output_config':{'format':{'type':"
	     "'json_schema','schema':" SCHEMA "}}," MSGS "}", 3000, &r);
	cr_assert_eq(r.status, 200, "%s", r.body);
	j = parse_json(r.body);
	d = parse_json(jstr(j, "content.0.text"));
	cr_expect(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(d, "name")),
		  "name is not the wrong type: %s", r.body);
	http_result_free(&r);

	settle_and_stop();
	read_log("bad", &log);
	expect_row(&log, "wrong", "bad_content", 200, 4, "faulted");
	csv_free(&log);
	mock_cleanup(&mock);
	free_held();
#undef SCHEMA
}

/* The admin API names each provider's dialect. */
Test(mockprov_anthropic, admin_state_names_the_dialect, .timeout = 15)
{
	struct http_result r;
	struct http_opts o = { .timeout_ms = 2000 };
	char url[160];
	const cJSON *p;
	cJSON *st;
	int seen = 0;

	start_mock("{'providers':[{'name':'a','listen':'127.0.0.1:0','dialect':'anthropic'},"
		   "{'name':'o','listen':'127.0.0.1:0'}]}");
	snprintf(url, sizeof(url), "http://%s/state", mock.admin_addr);
	cr_assert_eq(http_do(url, &o, &r), 0);
	st = parse_json(r.body);
	http_result_free(&r);
	cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(st, "providers")) {
		const char *name = jstr(p, "name");

		cr_expect_str_eq(jstr(p, "dialect"), strcmp(name, "a") == 0 ? "anthropic" : "openai");
		seen++;
	}
	cr_expect_eq(seen, 2);
	settle_and_stop();
	mock_cleanup(&mock);
	free_held();
}

/* ---- a real client: the @anthropic-ai/sdk ---- */

/* Runs a tests/node script against base and model; its output parsed (held). */
static cJSON *run_client(const char *script, const char *base, const char *model,
			 bool stream_only, int *rc)
{
	static char out[65536];
	static char err[65536];
	const char *args[] = { script, base, model, stream_only ? "--stream-only" : NULL, NULL };
	cJSON *doc;

	*rc = node_run(args, out, sizeof(out), err, sizeof(err), 20000);
	doc = hold(cJSON_Parse(out));
	cr_assert(cJSON_IsObject(doc), "%s printed no JSON object (exit %d):\n%s\nstderr:\n%s",
		  script, *rc, out, err);
	return doc;
}

/*
 * The official SDK reads the dialect as Anthropic's own: a message and a
 * stream (its text deltas joined) give the same non-empty words, and the
 * words the openai SDK gets from an OpenAI-dialect provider of the same
 * config; a 529 is an APIError with status 529 and type overloaded_error;
 * an error event mid-stream raises during iteration after the first tokens.
 */
Test(mockprov_anthropic, anthropic_sdk_client, .timeout = 90)
{
	const char *why = node_unavailable("@anthropic-ai/sdk");
	const cJSON *e;
	const char *ns;
	const char *s;
	char base[160];
	cJSON *doc;
	int rc;

	cr_assert_null(why, "%s", why);
	cr_assert_null(node_unavailable("openai"), "%s", node_unavailable("openai"));
	start_mock("{'providers':["
		   "{'name':'a','listen':'127.0.0.1:0','dialect':'anthropic','ttft_ms':20,"
		   "'token_ms':5,'output_tokens':12},"
		   "{'name':'o','listen':'127.0.0.1:0','ttft_ms':20,'token_ms':5,'output_tokens':12},"
		   "{'name':'busy','listen':'127.0.0.1:0','dialect':'anthropic',"
		   "'faults':[{'kind':'status','status':529," ALWAYS "}]},"
		   "{'name':'breaks','listen':'127.0.0.1:0','dialect':'anthropic','ttft_ms':20,"
		   "'token_ms':10,'output_tokens':12,"
		   "'faults':[{'kind':'error_event','after_tokens':3," ALWAYS "}]}]}");

	snprintf(base, sizeof(base), "http://%s", mock_addr(&mock, "a"));
	doc = run_client("tests/node/anthropic_client.mjs", base, "claude-mock", false, &rc);
	cr_assert_eq(rc, 0, "anthropic_client.mjs exited %d: %s", rc, cJSON_PrintUnformatted(doc));
	ns = jstr(doc, "nonstream");
	s = jstr(doc, "stream");
	cr_assert(ns && s && ns[0], "no text");
	cr_expect_str_eq(s, ns, "the stream and the message differ");
	cr_expect_str_eq(jstr(doc, "stop_reason"), "end_turn");
	/* 12 deltas and the five other events (the SDK drops the ping). */
	cr_expect_eq(jnum_at(doc, NULL, "events"), 17);
	cr_expect_str_eq(jstr(doc, "types.0"), "message_start");
	cr_expect_str_eq(jstr(doc, "types.16"), "message_stop");

	snprintf(base, sizeof(base), "http://%s/v1", mock_addr(&mock, "o"));
	doc = run_client("tests/node/openai_client.mjs", base, "mock-small", false, &rc);
	cr_assert_eq(rc, 0, "openai_client.mjs exited %d", rc);
	cr_expect_str_eq(jstr(doc, "nonstream"), ns, "the OpenAI dialect's words differ");
	cr_expect_str_eq(jstr(doc, "stream"), ns, "the OpenAI dialect's stream differs");

	snprintf(base, sizeof(base), "http://%s", mock_addr(&mock, "busy"));
	doc = run_client("tests/node/anthropic_client.mjs", base, "claude-mock", false, &rc);
	cr_expect_eq(rc, 1, "a 529 did not raise");
	e = cJSON_GetObjectItemCaseSensitive(doc, "nonstream_error");
	cr_assert(cJSON_IsObject(e), "no error for a 529");
	cr_expect_eq(jnum_at(e, NULL, "status"), 529);
	cr_expect_str_eq(jstr(e, "type"), "overloaded_error");
	cr_expect_str_eq(jstr(e, "name"), "OverloadedError", "an APIError subclass for 529");
	e = cJSON_GetObjectItemCaseSensitive(doc, "stream_error");
	cr_assert(cJSON_IsObject(e));
	cr_expect_eq(jnum_at(e, NULL, "status"), 529);

	snprintf(base, sizeof(base), "http://%s", mock_addr(&mock, "breaks"));
	doc = run_client("tests/node/anthropic_client.mjs", base, "claude-mock", true, &rc);
	cr_expect_eq(rc, 1, "an error event did not raise");
	e = cJSON_GetObjectItemCaseSensitive(doc, "stream_error");
	cr_assert(cJSON_IsObject(e), "the stream ended without an error");
	cr_expect_str_eq(jstr(e, "type"), "overloaded_error");
	cr_expect_str_eq(jstr(e, "name"), "APIError");
	cr_expect_str_eq(jstr(doc, "stream"), "Lorem ipsum dolor", "the text before the error");

	settle_and_stop();
	mock_cleanup(&mock);
	free_held();
}
