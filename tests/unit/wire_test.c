/*
 * wire: the mock provider's two dialects as pure code — what each accepts
 * and refuses of a request (headers, body), the error each answers with,
 * the exact bytes of its answers and stream events, its rate-limit
 * headers — and the config key that picks one.
 */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "common/cfg.h"
#include "mockprov/config.h"
#include "mockprov/contract.h"
#include "mockprov/wire.h"

TestSuite(wire, .timeout = 10);

/* Parses body with dialect w; returns the result, r and e filled. */
static int parse(const struct wire *w, const char *body, const char *model_only,
		 struct wire_request *r, struct wire_error *e)
{
	memset(r, 0, sizeof(*r));
	memset(e, 0, sizeof(*e));
	return w->parse(body, strlen(body), model_only, r, e);
}

static void request_free(struct wire_request *r, struct wire_error *e)
{
	buf_free(&r->model);
	cJSON_Delete(r->rf);
	wire_error_free(e);
}

/* Expects body refused by Anthropic's dialect with status, type and message. */
static void expect_refused(const char *body, int status, const char *type, const char *message)
{
	struct wire_request r;
	struct wire_error e;

	cr_assert_eq(parse(&wire_anthropic, body, NULL, &r, &e), -1, "accepted: %s", body);
	cr_expect_eq(e.status, status, "%s: status %d", body, e.status);
	cr_expect_str_eq(e.type, type, "%s", body);
	cr_expect_str_eq(e.message.data, message, "%s: %s", body, e.message.data);
	request_free(&r, &e);
}

#define MSGS "\"messages\":[{\"role\":\"user\",\"content\":\"Say something.\"}]"

Test(wire, anthropic_reads_a_request, .timeout = 10)
{
	struct wire_request r;
	struct wire_error e;
	struct contract c;

	cr_assert_eq(parse(&wire_anthropic,
			   "{\"model\":\"claude-x\",\"max_tokens\":7,\"stream\":true,"
			   "\"system\":[{\"type\":\"text\",\"text\":\"Be brief.\"}],"
			   "\"messages\":[{\"role\":\"user\",\"content\":\"Say something.\"},"
			   "{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"Hi\"}]}],"
			   "\"output_config\":{\"format\":{\"type\":\"json_schema\",\"schema\":"
			   "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}}}}}}",
			   NULL, &r, &e), 0, "%s", e.message.data);
	cr_expect_str_eq(r.model.data, "\"claude-x\"");
	cr_expect(r.streaming);
	cr_expect_eq(r.max_tokens, 7);
	/* 14 + 2 + 9 characters, a token per 4 started: as OpenAI's estimate. */
	cr_expect_eq(r.prompt_tokens, 7);
	/* output_config.format is the json_schema response_format contract.c reads. */
	contract_read(r.rf, &c);
	cr_expect_eq(c.kind, CONTRACT_JSON_SCHEMA);
	cr_expect(cJSON_IsObject(c.schema));
	request_free(&r, &e);

	/* The plainest request: no stream, no system, no contract. */
	cr_assert_eq(parse(&wire_anthropic, "{\"model\":\"m\",\"max_tokens\":1," MSGS "}", NULL,
			   &r, &e), 0);
	cr_expect(!r.streaming);
	cr_expect_null(r.rf);
	cr_expect_eq(r.prompt_tokens, 4);
	request_free(&r, &e);
}

Test(wire, anthropic_refuses_what_anthropic_refuses, .timeout = 10)
{
	expect_refused("{\"model\":\"m\"", 400, "invalid_request_error",
		       "There was an error parsing the body of your request: expected one JSON "
		       "object");
	expect_refused("{\"max_tokens\":5," MSGS "}", 400, "invalid_request_error",
		       "model: Field required");
	expect_refused("{\"model\":\"m\"," MSGS "}", 400, "invalid_request_error",
		       "max_tokens: Field required");
	expect_refused("{\"model\":\"m\",\"max_tokens\":null," MSGS "}", 400,
		       "invalid_request_error", "max_tokens: Field required");
	expect_refused("{\"model\":\"m\",\"max_tokens\":1.5," MSGS "}", 400,
		       "invalid_request_error", "max_tokens: Input should be a valid integer");
	expect_refused("{\"model\":\"m\",\"max_tokens\":0," MSGS "}", 400,
		       "invalid_request_error",
		       "max_tokens: Input should be greater than or equal to 1");
	expect_refused("{\"model\":\"m\",\"max_tokens\":5,\"messages\":[]}", 400,
		       "invalid_request_error", "messages: at least one message is required");
	expect_refused("{\"model\":\"m\",\"max_tokens\":5}", 400, "invalid_request_error",
		       "messages: Field required");
	expect_refused("{\"model\":\"m\",\"max_tokens\":5,\"messages\":[{\"role\":\"tool\","
		       "\"content\":\"x\"}]}", 400, "invalid_request_error",
		       "messages.0.role: Input should be 'user', 'assistant' or 'system'");
	expect_refused("{\"model\":\"m\",\"max_tokens\":5," MSGS ",\"stream\":\"yes\"}", 400,
		       "invalid_request_error", "stream: Input should be a valid boolean");
	expect_refused("{\"model\":\"m\",\"max_tokens\":5," MSGS ",\"system\":42}", 400,
		       "invalid_request_error",
		       "system: Input should be a valid string or a list of text blocks");
	expect_refused("{\"model\":\"m\",\"max_tokens\":5," MSGS ",\"output_config\":{\"format\":"
		       "{\"type\":\"json_object\"}}}", 400, "invalid_request_error",
		       "output_config.format.type: Input should be 'json_schema'");
}

Test(wire, anthropic_strict_model_is_not_found, .timeout = 10)
{
	struct wire_request r;
	struct wire_error e;

	cr_assert_eq(parse(&wire_anthropic, "{\"model\":\"claude-x\",\"max_tokens\":5," MSGS "}",
			   "mock-small", &r, &e), -1);
	cr_expect_eq(e.status, 404);
	cr_expect_str_eq(e.type, "not_found_error");
	cr_expect_str_eq(e.message.data, "model: claude-x");
	request_free(&r, &e);
	cr_assert_eq(parse(&wire_anthropic, "{\"model\":\"mock-small\",\"max_tokens\":5," MSGS "}",
			   "mock-small", &r, &e), 0);
	request_free(&r, &e);
}

Test(wire, anthropic_checks_its_headers, .timeout = 10)
{
	struct http_kv both[] = { { "X-Api-Key", "anything" }, { "anthropic-version", "2023-06-01" } };
	struct http_kv empty_key[] = { { "x-api-key", "" }, { "anthropic-version", "2023-06-01" } };
	struct http_kv no_version[] = { { "x-api-key", "k" } };
	struct http_kv bearer[] = { { "Authorization", "Bearer sk-x" },
				    { "anthropic-version", "2023-06-01" } };
	struct http_request req = { .headers = both, .nheaders = 2 };
	struct wire_error e = { 0 };

	cr_expect_eq(wire_anthropic.check_headers(&req, &e), 0);
	req.headers = empty_key;
	cr_assert_eq(wire_anthropic.check_headers(&req, &e), -1);
	cr_expect_eq(e.status, 401);
	cr_expect_str_eq(e.type, "authentication_error");
	cr_expect_str_eq(e.message.data, "x-api-key header is required");
	req.headers = no_version;
	req.nheaders = 1;
	cr_assert_eq(wire_anthropic.check_headers(&req, &e), -1);
	cr_expect_eq(e.status, 400);
	cr_expect_str_eq(e.type, "invalid_request_error");
	cr_expect_str_eq(e.message.data, "anthropic-version: header is required");
	req.nheaders = 0;
	cr_assert_eq(wire_anthropic.check_headers(&req, &e), -1);
	cr_expect_eq(e.status, 401, "the key is checked first");
	/* The official SDK sends its key as a bearer token: as good as x-api-key. */
	req.headers = bearer;
	req.nheaders = 2;
	cr_expect_eq(wire_anthropic.check_headers(&req, &e), 0);
	bearer[0].value = "Bearer ";
	cr_expect_eq(wire_anthropic.check_headers(&req, &e), -1, "an empty bearer token");
	bearer[0].value = "Basic abc";
	cr_expect_eq(wire_anthropic.check_headers(&req, &e), -1, "not a bearer token");
	wire_error_free(&e);
	/* OpenAI's dialect asks for no header. */
	cr_expect_eq(wire_openai.check_headers(&req, &e), 0);
}

Test(wire, anthropic_error_types_by_status, .timeout = 10)
{
	static const struct { int status; const char *type; } want[] = {
		{ 400, "invalid_request_error" }, { 401, "authentication_error" },
		{ 403, "permission_error" }, { 404, "not_found_error" },
		{ 413, "request_too_large" }, { 429, "rate_limit_error" },
		{ 500, "api_error" }, { 529, "overloaded_error" }, { 503, "api_error" },
		{ 599, "api_error" }, { 418, "invalid_request_error" },
		{ 422, "invalid_request_error" },
	};
	struct wire_error e = { 0 };
	struct buf b = { 0 };
	size_t i;

	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		wire_anthropic.error_for(WIRE_ERR_STATUS, want[i].status, &e);
		cr_expect_eq(e.status, want[i].status);
		cr_expect_str_eq(e.type, want[i].type, "status %d", want[i].status);
	}
	wire_anthropic.error_for(WIRE_ERR_STATUS, 529, &e);
	wire_anthropic.error_body(&b, &e);
	cr_expect_str_eq(b.data, "{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\","
			 "\"message\":\"Overloaded\"}}");
	buf_reset(&b);
	wire_anthropic.error_for(WIRE_ERR_RATE_LIMIT, 0, &e);
	cr_expect_eq(e.status, 429);
	cr_expect_str_eq(e.type, "rate_limit_error");
	wire_anthropic.error_for(WIRE_ERR_ERROR_EVENT, 0, &e);
	cr_expect_eq(e.status, 500);
	cr_expect_str_eq(e.type, "api_error");
	wire_anthropic.error_for(WIRE_ERR_NOT_FOUND, 0, &e);
	cr_expect_eq(e.status, 404);
	cr_expect_str_eq(e.type, "not_found_error");
	wire_anthropic.error_for(WIRE_ERR_METHOD_ANSWER, 0, &e);
	cr_expect_eq(e.status, 405);
	cr_expect_str_eq(e.type, "invalid_request_error");
	wire_error_free(&e);
	buf_free(&b);
}

/* An answer of the words "Lorem ipsum dolor" (3 tokens), capped or not. */
static void answer_of(struct wire_answer *a, const struct buf *model, bool capped)
{
	static const size_t off[] = { 0, 5, 11, 17 };

	memset(a, 0, sizeof(*a));
	a->id = "msg_mock-p-1";
	a->model = model;
	a->created = 1700000000;
	a->prompt_tokens = 4;
	a->tokens = 3;
	a->capped = capped;
	a->text = "Lorem ipsum dolor";
	a->off = off;
}

Test(wire, anthropic_answer_bytes, .timeout = 10)
{
	struct buf model = { 0 };
	struct wire_answer a;
	struct buf b = { 0 };
	size_t cut_at;

	buf_puts(&model, "\"claude-x\"");
	answer_of(&a, &model, false);
	wire_anthropic.whole(&b, &a, 1, &cut_at);
	cr_expect_str_eq(b.data, "{\"id\":\"msg_mock-p-1\",\"type\":\"message\",\"role\":\"assistant\","
			 "\"model\":\"claude-x\",\"content\":[{\"type\":\"text\",\"text\":\"Lorem ipsum "
			 "dolor\"}],\"stop_reason\":\"end_turn\",\"stop_sequence\":null,\"usage\":"
			 "{\"input_tokens\":4,\"output_tokens\":3}}");
	cr_expect_eq(cut_at, (size_t)(strstr(b.data, " ipsum") - b.data), "cut after one token");
	buf_reset(&b);
	answer_of(&a, &model, true);
	wire_anthropic.whole(&b, &a, 0, &cut_at);
	cr_expect(strstr(b.data, "\"stop_reason\":\"max_tokens\""), "%s", b.data);
	buf_free(&b);
	buf_free(&model);
}

Test(wire, anthropic_stream_bytes, .timeout = 10)
{
	struct buf model = { 0 };
	struct wire_answer a;
	struct buf b = { 0 };

	buf_puts(&model, "\"claude-x\"");
	answer_of(&a, &model, true);
	wire_anthropic.stream_begin(&b, &a);
	cr_expect_str_eq(b.data,
		"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":"
		"\"msg_mock-p-1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-x\","
		"\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":"
		"{\"input_tokens\":4,\"output_tokens\":1}}}\n\n"
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,"
		"\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"
		"event: ping\ndata: {\"type\":\"ping\"}\n\n");
	buf_reset(&b);
	wire_anthropic.stream_token(&b, &a, 1);
	cr_expect_str_eq(b.data, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\","
			 "\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\" ipsum\"}}\n\n");
	buf_reset(&b);
	wire_anthropic.stream_finish(&b, &a);
	cr_expect_str_eq(b.data,
		"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n"
		"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":"
		"\"max_tokens\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":3}}\n\n"
		"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n");
	buf_reset(&b);
	wire_anthropic.stream_error(&b);
	cr_expect_str_eq(b.data, "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":"
			 "\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n");
	buf_reset(&b);
	wire_anthropic.stream_malformed(&b, &a);
	cr_expect(strstr(b.data, "\"text\":\n\n"), "no cut frame: %s", b.data);
	buf_free(&b);
	buf_free(&a.prefix);
	buf_free(&model);
}

/* A content of the request's own is escaped token by token. */
Test(wire, escaped_content, .timeout = 10)
{
	static const size_t off[] = { 0, 6, 11 };
	struct wire_answer a = { .text = "{\"a\":\"x y\"}", .off = off, .escape = true };
	struct buf b = { 0 };

	wire_put_tokens(&b, &a, 0, 2);
	cr_expect_str_eq(b.data, "{\\\"a\\\":\\\"x y\\\"}");
	buf_free(&b);
}

Test(wire, anthropic_models_list, .timeout = 10)
{
	struct buf b = { 0 };

	wire_anthropic.models(&b, "mock-small");
	cr_expect_str_eq(b.data, "{\"data\":[{\"type\":\"model\",\"id\":\"mock-small\","
			 "\"display_name\":\"mock-small\",\"created_at\":\"2025-01-01T00:00:00Z\"}],"
			 "\"has_more\":false,\"first_id\":\"mock-small\",\"last_id\":\"mock-small\"}");
	buf_free(&b);
}

Test(wire, rate_limit_headers_in_each_dialect, .timeout = 10)
{
	struct fault_decision d = {
		.rate_rpm = 60, .rate_tpm = 1000, .rate_requests_left = 2.4,
		.rate_tokens_left = -3, .rate_reset_requests_s = 1.2, .rate_reset_tokens_s = 90,
	};
	struct http_kv h[WIRE_RATE_HEADERS];
	char bufs[WIRE_RATE_HEADERS][WIRE_HDR_LEN];
	/* 2025-01-01T00:00:00.500Z */
	double now = 1735689600500.0;
	size_t n;

	n = wire_anthropic.rate_headers(&d, now, h, bufs);
	cr_assert_eq(n, 6);
	cr_expect_str_eq(h[0].name, "anthropic-ratelimit-requests-limit");
	cr_expect_str_eq(h[0].value, "60");
	cr_expect_str_eq(h[1].name, "anthropic-ratelimit-requests-remaining");
	cr_expect_str_eq(h[1].value, "2");
	cr_expect_str_eq(h[2].name, "anthropic-ratelimit-requests-reset");
	cr_expect_str_eq(h[2].value, "2025-01-01T00:00:02Z", "1.7 s ahead, rounded up");
	cr_expect_str_eq(h[3].name, "anthropic-ratelimit-tokens-limit");
	cr_expect_str_eq(h[4].name, "anthropic-ratelimit-tokens-remaining");
	cr_expect_str_eq(h[4].value, "0");
	cr_expect_str_eq(h[5].name, "anthropic-ratelimit-tokens-reset");
	cr_expect_str_eq(h[5].value, "2025-01-01T00:01:31Z");

	d.rate_tpm = 0;
	n = wire_openai.rate_headers(&d, now, h, bufs);
	cr_assert_eq(n, 3);
	cr_expect_str_eq(h[0].name, "x-ratelimit-limit-requests");
	cr_expect_str_eq(h[2].name, "x-ratelimit-reset-requests");
	cr_expect_str_eq(h[2].value, "1.2s");
}

/* Config: "dialect" picks one; anything else names the file, key and choices. */
static int load(const char *json, struct mock_config *cfg, char *err)
{
	cJSON *root = cJSON_Parse(json);
	int rc;

	cr_assert_not_null(root);
	rc = mock_config_from_json(root, "conf.json", cfg, err);
	cJSON_Delete(root);
	return rc;
}

Test(wire, config_dialect, .timeout = 10)
{
	struct mock_config cfg;
	char err[CFG_ERR_LEN];

	cr_assert_eq(load("{\"providers\":[{\"name\":\"a\",\"listen\":\"127.0.0.1:0\","
			  "\"dialect\":\"anthropic\"},{\"name\":\"o\",\"listen\":\"127.0.0.1:1\"}]}",
			  &cfg, err), 0, "%s", err);
	cr_expect_eq(cfg.providers[0].dialect, WIRE_ANTHROPIC);
	cr_expect_eq(cfg.providers[1].dialect, WIRE_OPENAI, "openai by default");
	cr_expect_eq(wire_of(cfg.providers[0].dialect), &wire_anthropic);
	cr_expect_eq(wire_of(cfg.providers[1].dialect), &wire_openai);
	mock_config_free(&cfg);

	cr_assert_eq(load("{\"providers\":[{\"name\":\"a\",\"listen\":\"127.0.0.1:0\","
			  "\"dialect\":\"claude\"}]}", &cfg, err), -EINVAL);
	cr_expect(strstr(err, "conf.json") && strstr(err, "providers[0].dialect") &&
		  strstr(err, "openai") && strstr(err, "anthropic") && strstr(err, "claude"),
		  "%s", err);
}
