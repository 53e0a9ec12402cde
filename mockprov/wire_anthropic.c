/*
 * wire_anthropic: Anthropic's Messages API — POST /v1/messages with its
 * x-api-key and anthropic-version headers, the message answer, the stream
 * of named events (message_start, content_block_start, ping, one
 * content_block_delta a token, content_block_stop, message_delta,
 * message_stop), errors as {"type":"error","error":{"type","message"}} and
 * anthropic-ratelimit-* headers. Structured outputs
 * (output_config.format, a json_schema) become the equivalent OpenAI
 * response_format, so contract.c makes the same content in either dialect.
 */
#include "mockprov/wire.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "common/json.h"
#include "mockprov/timing.h"

/* The error type Anthropic gives a status. */
static const char *error_type(int status)
{
	switch (status) {
	case 400: return "invalid_request_error";
	case 401: return "authentication_error";
	case 403: return "permission_error";
	case 404: return "not_found_error";
	case 413: return "request_too_large";
	case 429: return "rate_limit_error";
	case 500: return "api_error";
	case 529: return "overloaded_error";
	default: return status >= 500 ? "api_error" : "invalid_request_error";
	}
}

/* A message to go with a `status` fault's error type. */
static const char *status_message(const char *type)
{
	static const struct { const char *type, *message; } msgs[] = {
		{ "authentication_error", "invalid x-api-key" },
		{ "permission_error", "Your API key does not have permission to use the "
				      "specified resource." },
		{ "not_found_error", "The requested resource could not be found." },
		{ "request_too_large", "Request exceeds the maximum allowed number of bytes." },
		{ "rate_limit_error", "Number of requests has exceeded your rate limit." },
		{ "api_error", "Internal server error" },
		{ "overloaded_error", "Overloaded" },
	};
	size_t i;

	for (i = 0; i < sizeof(msgs) / sizeof(msgs[0]); i++) {
		if (strcmp(msgs[i].type, type) == 0)
			return msgs[i].message;
	}
	return "The request was rejected by the provider.";
}

/* Sets e to status, with Anthropic's error type for it, and message. */
static void error_set(struct wire_error *e, int status, const char *message)
{
	wire_error_set(e, status, "%s", message);
	e->type = error_type(status);
}

/*
 * A key is an x-api-key, or a bearer token in Authorization — what the
 * official SDK (1.x) sends its apiKey as; any non-empty value will do.
 */
static bool has_key(const struct http_request *req)
{
	const char *key = http_request_header(req, "x-api-key");
	const char *auth = http_request_header(req, "authorization");

	if (key && key[0])
		return true;
	return auth && strncasecmp(auth, "Bearer ", 7) == 0 && auth[7 + strspn(auth + 7, " ")];
}

static int anthropic_check_headers(const struct http_request *req, struct wire_error *e)
{
	const char *version = http_request_header(req, "anthropic-version");

	if (!has_key(req)) {
		error_set(e, 401, "x-api-key header is required");
		return -1;
	}
	if (!version || !version[0]) {
		error_set(e, 400, "anthropic-version: header is required");
		return -1;
	}
	return 0;
}

/* max_tokens: required, a whole number from 1 to 10⁷. */
static int read_max_tokens(const cJSON *root, struct wire_request *r, struct wire_error *e)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "max_tokens");

	if (!v || cJSON_IsNull(v)) {
		error_set(e, 400, "max_tokens: Field required");
		return -1;
	}
	if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble)) {
		error_set(e, 400, "max_tokens: Input should be a valid integer");
		return -1;
	}
	if (v->valuedouble < 1) {
		error_set(e, 400, "max_tokens: Input should be greater than or equal to 1");
		return -1;
	}
	if (v->valuedouble > 1e7) {
		error_set(e, 400, "max_tokens: Input should be less than or equal to 10000000");
		return -1;
	}
	r->max_tokens = (int)v->valuedouble;
	return 0;
}

/*
 * messages: a non-empty array of {"role": "user"|"assistant", "content":
 * a string or an array of blocks}. Adds their text's characters to *chars.
 */
static int read_messages(const cJSON *root, size_t *chars, struct wire_error *e)
{
	const cJSON *messages = cJSON_GetObjectItemCaseSensitive(root, "messages");
	const cJSON *msg;
	int i = 0;

	if (!cJSON_IsArray(messages)) {
		error_set(e, 400, "messages: Field required");
		return -1;
	}
	if (cJSON_GetArraySize(messages) == 0) {
		error_set(e, 400, "messages: at least one message is required");
		return -1;
	}
	cJSON_ArrayForEach(msg, messages) {
		const char *role = json_get_string(msg, "role");
		const cJSON *content = cJSON_GetObjectItemCaseSensitive(msg, "content");

		/* A system turn in the list is taken, as the SDK's MessageParam has it. */
		if (!role || (strcmp(role, "user") != 0 && strcmp(role, "assistant") != 0 &&
			      strcmp(role, "system") != 0)) {
			wire_error_set(e, 400, "messages.%d.role: Input should be 'user', "
				       "'assistant' or 'system'", i);
			e->type = error_type(400);
			return -1;
		}
		if (!cJSON_IsString(content) && !cJSON_IsArray(content)) {
			wire_error_set(e, 400, "messages.%d.content: Field required", i);
			e->type = error_type(400);
			return -1;
		}
		*chars += timing_content_chars(content);
		i++;
	}
	return 0;
}

/* system: absent, a string, or an array of {"type":"text","text":…} blocks. */
static int read_system(const cJSON *root, size_t *chars, struct wire_error *e)
{
	const cJSON *sys = cJSON_GetObjectItemCaseSensitive(root, "system");
	const cJSON *block;

	if (!sys || cJSON_IsNull(sys) || cJSON_IsString(sys))
		goto ok;
	if (!cJSON_IsArray(sys))
		goto bad;
	cJSON_ArrayForEach(block, sys) {
		const char *type = json_get_string(block, "type");

		if (!type || strcmp(type, "text") != 0 || !json_get_string(block, "text"))
			goto bad;
	}
ok:
	*chars += timing_content_chars(sys);
	return 0;
bad:
	error_set(e, 400, "system: Input should be a valid string or a list of text blocks");
	return -1;
}

/*
 * output_config.format, Anthropic's structured outputs: absent, or
 * {"type":"json_schema","schema":{…}}, which becomes the response_format
 * {"type":"json_schema","json_schema":{"name":"output","schema":{…}}} in
 * r->rf (the schema moved out of root).
 */
static int read_output_config(cJSON *root, struct wire_request *r, struct wire_error *e)
{
	cJSON *oc = cJSON_GetObjectItemCaseSensitive(root, "output_config");
	cJSON *format = cJSON_GetObjectItemCaseSensitive(oc, "format");
	const char *type = json_get_string(format, "type");
	cJSON *js;

	if (oc && !cJSON_IsNull(oc) && !cJSON_IsObject(oc)) {
		error_set(e, 400, "output_config: Input should be a valid dictionary");
		return -1;
	}
	if (!format || cJSON_IsNull(format))
		return 0;
	if (!type || strcmp(type, "json_schema") != 0) {
		error_set(e, 400, "output_config.format.type: Input should be 'json_schema'");
		return -1;
	}
	if (!cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(format, "schema"))) {
		error_set(e, 400, "output_config.format.schema: Field required");
		return -1;
	}
	r->rf = cJSON_CreateObject();
	js = cJSON_CreateObject();
	json_put(r->rf, "type", cJSON_CreateString("json_schema"));
	json_put(js, "name", cJSON_CreateString("output"));
	json_put(js, "schema", cJSON_DetachItemFromObjectCaseSensitive(format, "schema"));
	json_put(r->rf, "json_schema", js);	/* out of memory: no contract, prose */
	return 0;
}

static int anthropic_parse(const char *body, size_t len, const char *model_only,
			   struct wire_request *r, struct wire_error *e)
{
	const cJSON *model;
	const cJSON *v;
	size_t chars = 0;
	cJSON *root;
	int rc = -1;

	r->max_tokens = -1;
	root = json_parse_whole(body, len);
	if (!cJSON_IsObject(root)) {
		error_set(e, 400, "There was an error parsing the body of your request: expected "
			  "one JSON object");
		goto out;
	}
	model = cJSON_GetObjectItemCaseSensitive(root, "model");
	if (!cJSON_IsString(model) || !model->valuestring[0]) {
		error_set(e, 400, "model: Field required");
		goto out;
	}
	if (read_max_tokens(root, r, e) || read_messages(root, &chars, e) ||
	    read_system(root, &chars, e))
		goto out;
	v = cJSON_GetObjectItemCaseSensitive(root, "stream");
	if (v && !cJSON_IsBool(v)) {
		error_set(e, 400, "stream: Input should be a valid boolean");
		goto out;
	}
	r->streaming = cJSON_IsTrue(v);
	if (read_output_config(root, r, e))
		goto out;
	if (model_only && strcmp(model->valuestring, model_only) != 0) {
		wire_error_set(e, 404, "model: %s", model->valuestring);
		e->type = error_type(404);
		goto out;
	}
	json_escape(&r->model, model->valuestring);
	r->prompt_tokens = timing_prompt_tokens_of(chars);
	rc = 0;
out:
	cJSON_Delete(root);
	return rc;
}

static void anthropic_error_for(enum wire_situation s, int status, struct wire_error *e)
{
	switch (s) {
	case WIRE_ERR_STATUS:
		error_set(e, status, status_message(error_type(status)));
		break;
	case WIRE_ERR_RATE_LIMIT:
		error_set(e, 429, "This request would exceed the rate limit for your "
			  "organization. Please try again later.");
		break;
	case WIRE_ERR_ERROR_EVENT:
		error_set(e, 500, "Internal server error");
		break;
	case WIRE_ERR_NOT_FOUND:
		error_set(e, 404, "Unknown path: mock providers of the anthropic dialect serve "
			  "/v1/messages, /v1/models and /healthz.");
		break;
	case WIRE_ERR_METHOD_ANSWER:
		error_set(e, 405, "Use POST for /v1/messages.");
		break;
	case WIRE_ERR_METHOD_MODELS:
		error_set(e, 405, "Use GET for /v1/models.");
		break;
	}
}

static void error_json(struct buf *b, const char *type, const char *message)
{
	buf_puts(b, "{\"type\":\"error\",\"error\":{\"type\":");
	json_escape(b, type);
	buf_puts(b, ",\"message\":");
	json_escape(b, message);
	buf_puts(b, "}}");
}

static void anthropic_error_body(struct buf *b, const struct wire_error *e)
{
	error_json(b, e->type, e->message.data ? e->message.data : "");
}

/* RFC 3339 UTC, whole seconds rounded up: when a budget is full again. */
static void fmt_reset(double now_unix_ms, double reset_s, char *out, size_t len)
{
	time_t t = (time_t)ceil((now_unix_ms + fmax(0, reset_s) * 1000) / 1000);
	struct tm tm;

	if (!gmtime_r(&t, &tm) || !strftime(out, len, "%Y-%m-%dT%H:%M:%SZ", &tm))
		snprintf(out, len, "1970-01-01T00:00:00Z");
}

static size_t anthropic_rate_headers(const struct fault_decision *d, double now_unix_ms,
				     struct http_kv *h, char bufs[][WIRE_HDR_LEN])
{
	size_t n = 0;

	if (d->rate_rpm > 0) {
		snprintf(bufs[0], WIRE_HDR_LEN, "%.0f", d->rate_rpm);
		snprintf(bufs[1], WIRE_HDR_LEN, "%.0f", fmax(0, d->rate_requests_left));
		fmt_reset(now_unix_ms, d->rate_reset_requests_s, bufs[2], WIRE_HDR_LEN);
		h[n++] = (struct http_kv){ "anthropic-ratelimit-requests-limit", bufs[0] };
		h[n++] = (struct http_kv){ "anthropic-ratelimit-requests-remaining", bufs[1] };
		h[n++] = (struct http_kv){ "anthropic-ratelimit-requests-reset", bufs[2] };
	}
	if (d->rate_tpm > 0) {
		snprintf(bufs[3], WIRE_HDR_LEN, "%.0f", d->rate_tpm);
		snprintf(bufs[4], WIRE_HDR_LEN, "%.0f", fmax(0, d->rate_tokens_left));
		fmt_reset(now_unix_ms, d->rate_reset_tokens_s, bufs[5], WIRE_HDR_LEN);
		h[n++] = (struct http_kv){ "anthropic-ratelimit-tokens-limit", bufs[3] };
		h[n++] = (struct http_kv){ "anthropic-ratelimit-tokens-remaining", bufs[4] };
		h[n++] = (struct http_kv){ "anthropic-ratelimit-tokens-reset", bufs[5] };
	}
	return n;
}

static const char *stop_reason(const struct wire_answer *a)
{
	return a->capped ? "\"max_tokens\"" : "\"end_turn\"";
}

/* '{"id":…,"type":"message","role":"assistant","model":…,"content":' */
static void message_head(struct buf *b, const struct wire_answer *a)
{
	buf_puts(b, "{\"id\":\"");
	buf_puts(b, a->id);
	buf_puts(b, "\",\"type\":\"message\",\"role\":\"assistant\",\"model\":");
	buf_append(b, a->model->data, a->model->len);
	buf_puts(b, ",\"content\":");
}

static void anthropic_whole(struct buf *b, const struct wire_answer *a, int cut,
			    size_t *cut_at)
{
	message_head(b, a);
	buf_puts(b, "[{\"type\":\"text\",\"text\":\"");
	wire_put_tokens(b, a, 0, cut);
	*cut_at = b->len;
	wire_put_tokens(b, a, cut, a->tokens);
	buf_puts(b, "\"}],\"stop_reason\":");
	buf_puts(b, stop_reason(a));
	buf_puts(b, ",\"stop_sequence\":null,\"usage\":{\"input_tokens\":");
	buf_put_int(b, a->prompt_tokens);
	buf_puts(b, ",\"output_tokens\":");
	buf_put_int(b, a->tokens);
	buf_puts(b, "}}");
}

static void anthropic_models(struct buf *b, const char *model)
{
	buf_puts(b, "{\"data\":[{\"type\":\"model\",\"id\":");
	json_escape(b, model);
	buf_puts(b, ",\"display_name\":");
	json_escape(b, model);
	buf_puts(b, ",\"created_at\":\"2025-01-01T00:00:00Z\"}],\"has_more\":false,\"first_id\":");
	json_escape(b, model);
	buf_puts(b, ",\"last_id\":");
	json_escape(b, model);
	buf_puts(b, "}");
}

/* The head of a content_block_delta event, up to its text's opening quote. */
#define DELTA_HEAD "event: content_block_delta\ndata: {\"type\":\"content_block_delta\"," \
		   "\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":"

/* message_start, content_block_start and a ping: they go out with the headers. */
static void anthropic_stream_begin(struct buf *b, struct wire_answer *a)
{
	buf_puts(&a->prefix, DELTA_HEAD "\"");
	buf_puts(b, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":");
	message_head(b, a);
	buf_puts(b, "[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":");
	buf_put_int(b, a->prompt_tokens);
	buf_puts(b, ",\"output_tokens\":1}}}\n\n"
		 "event: content_block_start\ndata: {\"type\":\"content_block_start\","
		 "\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"
		 "event: ping\ndata: {\"type\":\"ping\"}\n\n");
}

static void anthropic_stream_token(struct buf *b, const struct wire_answer *a, int k)
{
	buf_append(b, a->prefix.data, a->prefix.len);
	wire_put_tokens(b, a, k, k + 1);
	buf_puts(b, "\"}}\n\n");
}

static void anthropic_stream_finish(struct buf *b, const struct wire_answer *a)
{
	buf_puts(b, "event: content_block_stop\ndata: {\"type\":\"content_block_stop\","
		 "\"index\":0}\n\n"
		 "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":"
		 "{\"stop_reason\":");
	buf_puts(b, stop_reason(a));
	buf_puts(b, ",\"stop_sequence\":null},\"usage\":{\"output_tokens\":");
	buf_put_int(b, a->tokens);
	buf_puts(b, "}}\n\n"
		 "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n");
}

static void anthropic_stream_error(struct buf *b)
{
	buf_puts(b, "event: error\ndata: ");
	error_json(b, "overloaded_error", "Overloaded");
	buf_puts(b, "\n\n");
}

/* A delta whose JSON stops after "text":, then the stream's end. */
static void anthropic_stream_malformed(struct buf *b, const struct wire_answer *a)
{
	(void)a;
	buf_puts(b, DELTA_HEAD "\n\n"
		 "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n");
}

const struct wire wire_anthropic = {
	.name = "anthropic",
	.answer_path = "/messages",
	.id_prefix = "msg_mock-",
	.check_headers = anthropic_check_headers,
	.parse = anthropic_parse,
	.error_for = anthropic_error_for,
	.error_body = anthropic_error_body,
	.rate_headers = anthropic_rate_headers,
	.whole = anthropic_whole,
	.models = anthropic_models,
	.stream_begin = anthropic_stream_begin,
	.stream_token = anthropic_stream_token,
	.stream_finish = anthropic_stream_finish,
	.stream_error = anthropic_stream_error,
	.stream_malformed = anthropic_stream_malformed,
};
