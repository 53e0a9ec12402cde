/*
 * wire_openai: OpenAI's chat completions — POST /v1/chat/completions, its
 * JSON answer and its SSE chunks ending in `data: [DONE]`, OpenAI-style
 * errors and x-ratelimit-* headers.
 */
#include "mockprov/wire.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/json.h"
#include "mockprov/timing.h"

/* Any request is welcome: OpenAI's dialect checks no header. */
static int openai_check_headers(const struct http_request *req, struct wire_error *e)
{
	(void)req;
	(void)e;
	return 0;
}

static void bad_request(struct wire_error *e, const char *param, const char *msg)
{
	wire_error_set(e, 400, "%s", msg);
	e->type = "invalid_request_error";
	e->param = param;
}

/* max_completion_tokens (or else max_tokens): absent, null or 1 … 10⁷. */
static int read_max_tokens(const cJSON *root, struct wire_request *r, struct wire_error *e)
{
	const char *key = "max_completion_tokens";
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);

	r->max_tokens = -1;
	if (!v || cJSON_IsNull(v)) {
		key = "max_tokens";
		v = cJSON_GetObjectItemCaseSensitive(root, key);
	}
	if (!v || cJSON_IsNull(v))
		return 0;
	if (!cJSON_IsNumber(v) || v->valuedouble < 1 || v->valuedouble > 1e7 ||
	    v->valuedouble != floor(v->valuedouble)) {
		wire_error_set(e, 400, "'%s' must be a whole number of at least 1.", key);
		e->type = "invalid_request_error";
		e->param = key;
		return -1;
	}
	r->max_tokens = (int)v->valuedouble;
	return 0;
}

static int openai_parse(const char *body, size_t len, const char *model_only,
			struct wire_request *r, struct wire_error *e)
{
	const cJSON *messages;
	const cJSON *model;
	const cJSON *v;
	cJSON *root;
	int rc = -1;

	/* One object and nothing after it: no trailing bytes, no second
	 * object, no NUL (which cJSON would skip as white space). */
	root = json_parse_whole(body, len);
	if (!cJSON_IsObject(root)) {
		bad_request(e, NULL, "We could not parse the JSON body of your request.");
		goto out;
	}
	model = cJSON_GetObjectItemCaseSensitive(root, "model");
	if (!cJSON_IsString(model) || !model->valuestring[0]) {
		bad_request(e, "model", "you must provide a model parameter");
		goto out;
	}
	if (model_only && strcmp(model->valuestring, model_only) != 0) {
		wire_error_set(e, 404, "The model `%s` does not exist or you do not have access "
			       "to it.", model->valuestring);
		e->type = "invalid_request_error";
		e->code = "model_not_found";
		goto out;
	}
	json_escape(&r->model, model->valuestring);
	messages = cJSON_GetObjectItemCaseSensitive(root, "messages");
	if (!cJSON_IsArray(messages) || cJSON_GetArraySize(messages) == 0) {
		bad_request(e, "messages", "'messages' must be a non-empty array.");
		goto out;
	}
	v = cJSON_GetObjectItemCaseSensitive(root, "stream");
	if (v && !cJSON_IsBool(v)) {
		bad_request(e, "stream", "'stream' must be a boolean.");
		goto out;
	}
	r->streaming = cJSON_IsTrue(v);
	/* Kept for the content, read when it is made (contract_read: tolerant). */
	r->rf = cJSON_DetachItemFromObjectCaseSensitive(root, "response_format");
	v = cJSON_GetObjectItemCaseSensitive(root, "stream_options");
	r->include_usage = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(v, "include_usage"));
	if (read_max_tokens(root, r, e))
		goto out;
	r->prompt_tokens = timing_prompt_tokens(messages);
	rc = 0;
out:
	cJSON_Delete(root);
	return rc;
}

static void openai_error_for(enum wire_situation s, int status, struct wire_error *e)
{
	bool server = status >= 500;

	switch (s) {
	case WIRE_ERR_STATUS:
		wire_error_set(e, status, "%s", server ? "The server is overloaded or not ready yet."
						       : "The request was rejected by the provider.");
		e->type = server ? "server_error" : "invalid_request_error";
		e->code = "mock_status";
		break;
	case WIRE_ERR_RATE_LIMIT:
		wire_error_set(e, 429, "Rate limit reached for requests. Please try again later.");
		e->type = "requests";
		e->code = "rate_limit_exceeded";
		break;
	case WIRE_ERR_ERROR_EVENT:
		wire_error_set(e, 500, "The server had an error while processing your request.");
		e->type = "server_error";
		e->code = "mock_error_event";
		break;
	case WIRE_ERR_NOT_FOUND:
		wire_error_set(e, 404, "Unknown path: mock providers serve /v1/chat/completions, "
			       "/v1/models and /healthz.");
		e->type = "invalid_request_error";
		e->code = "not_found";
		break;
	case WIRE_ERR_METHOD_ANSWER:
		wire_error_set(e, 405, "Use POST for /v1/chat/completions.");
		e->type = "invalid_request_error";
		e->code = "method_not_allowed";
		break;
	case WIRE_ERR_METHOD_MODELS:
		wire_error_set(e, 405, "Use GET for /v1/models.");
		e->type = "invalid_request_error";
		e->code = "method_not_allowed";
		break;
	}
}

static void openai_error_body(struct buf *b, const struct wire_error *e)
{
	json_openai_error(b, e->message.data ? e->message.data : "", e->type, e->param, e->code);
}

/* OpenAI's reset times: "1m30s", "2.5s", "250ms". */
static void fmt_reset(double s, char *out, size_t len)
{
	if (s >= 60)
		snprintf(out, len, "%dm%ds", (int)(s / 60), (int)fmod(s, 60));
	else if (s >= 1)
		snprintf(out, len, "%.3gs", s);
	else
		snprintf(out, len, "%dms", (int)ceil(s * 1000));
}

static size_t openai_rate_headers(const struct fault_decision *d, double now_unix_ms,
				  struct http_kv *h, char bufs[][WIRE_HDR_LEN])
{
	size_t n = 0;

	(void)now_unix_ms;
	if (d->rate_rpm > 0) {
		snprintf(bufs[0], WIRE_HDR_LEN, "%.0f", d->rate_rpm);
		snprintf(bufs[1], WIRE_HDR_LEN, "%.0f", fmax(0, d->rate_requests_left));
		fmt_reset(d->rate_reset_requests_s, bufs[2], WIRE_HDR_LEN);
		h[n++] = (struct http_kv){ "x-ratelimit-limit-requests", bufs[0] };
		h[n++] = (struct http_kv){ "x-ratelimit-remaining-requests", bufs[1] };
		h[n++] = (struct http_kv){ "x-ratelimit-reset-requests", bufs[2] };
	}
	if (d->rate_tpm > 0) {
		snprintf(bufs[3], WIRE_HDR_LEN, "%.0f", d->rate_tpm);
		snprintf(bufs[4], WIRE_HDR_LEN, "%.0f", fmax(0, d->rate_tokens_left));
		fmt_reset(d->rate_reset_tokens_s, bufs[5], WIRE_HDR_LEN);
		h[n++] = (struct http_kv){ "x-ratelimit-limit-tokens", bufs[3] };
		h[n++] = (struct http_kv){ "x-ratelimit-remaining-tokens", bufs[4] };
		h[n++] = (struct http_kv){ "x-ratelimit-reset-tokens", bufs[5] };
	}
	return n;
}

static void usage_json(struct buf *b, const struct wire_answer *a)
{
	buf_puts(b, "\"usage\":{\"prompt_tokens\":");
	buf_put_int(b, a->prompt_tokens);
	buf_puts(b, ",\"completion_tokens\":");
	buf_put_int(b, a->tokens);
	buf_puts(b, ",\"total_tokens\":");
	buf_put_int(b, a->prompt_tokens + a->tokens);
	buf_puts(b, "}");
}

static void openai_whole(struct buf *b, const struct wire_answer *a, int cut, size_t *cut_at)
{
	buf_puts(b, "{\"id\":\"");
	buf_puts(b, a->id);
	buf_puts(b, "\",\"object\":\"chat.completion\",\"created\":");
	buf_put_int(b, a->created);
	buf_puts(b, ",\"model\":");
	buf_append(b, a->model->data, a->model->len);
	buf_puts(b, ",\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":\"");
	wire_put_tokens(b, a, 0, cut);
	*cut_at = b->len;
	wire_put_tokens(b, a, cut, a->tokens);
	buf_puts(b, a->capped ? "\"},\"finish_reason\":\"length\"}],"
			      : "\"},\"finish_reason\":\"stop\"}],");
	usage_json(b, a);
	buf_puts(b, "}");
}

static void openai_models(struct buf *b, const char *model)
{
	buf_puts(b, "{\"object\":\"list\",\"data\":[{\"id\":");
	json_escape(b, model);
	buf_puts(b, ",\"object\":\"model\",\"created\":1700000000,\"owned_by\":\"faultline-mock\"}]}");
}

/* The start every chunk shares: 'data: {"id":…,"object":…,"created":…,"model":…,'. */
static void openai_stream_begin(struct buf *b, struct wire_answer *a)
{
	(void)b;
	buf_puts(&a->prefix, "data: {\"id\":\"");
	buf_puts(&a->prefix, a->id);
	buf_puts(&a->prefix, "\",\"object\":\"chat.completion.chunk\",\"created\":");
	buf_put_int(&a->prefix, a->created);
	buf_puts(&a->prefix, ",\"model\":");
	buf_append(&a->prefix, a->model->data, a->model->len);
	buf_puts(&a->prefix, ",");
}

static void openai_stream_token(struct buf *b, const struct wire_answer *a, int k)
{
	buf_append(b, a->prefix.data, a->prefix.len);
	buf_puts(b, k == 0 ? "\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\","
			     "\"content\":\""
			   : "\"choices\":[{\"index\":0,\"delta\":{\"content\":\"");
	wire_put_tokens(b, a, k, k + 1);
	buf_puts(b, "\"},\"finish_reason\":null}]}\n\n");
}

static void openai_stream_finish(struct buf *b, const struct wire_answer *a)
{
	buf_append(b, a->prefix.data, a->prefix.len);
	buf_puts(b, a->capped ? "\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"length\"}]}\n\n"
			      : "\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n");
	if (a->include_usage) {
		buf_append(b, a->prefix.data, a->prefix.len);
		buf_puts(b, "\"choices\":[],");
		usage_json(b, a);
		buf_puts(b, "}\n\n");
	}
	buf_puts(b, "data: [DONE]\n\n");
}

static void openai_stream_error(struct buf *b)
{
	buf_puts(b, "event: error\ndata: ");
	json_openai_error(b, "The server had an error while processing your request.",
			  "server_error", NULL, "mock_error_event");
	buf_puts(b, "\n\n");
}

static void openai_stream_malformed(struct buf *b, const struct wire_answer *a)
{
	buf_append(b, a->prefix.data, a->prefix.len);
	buf_puts(b, "\"choices\":[{\"index\":0,\"delta\":{\"content\":\n\ndata: [DONE]\n\n");
}

const struct wire wire_openai = {
	.name = "openai",
	.answer_path = "/chat/completions",
	.id_prefix = "chatcmpl-mock-",
	.check_headers = openai_check_headers,
	.parse = openai_parse,
	.error_for = openai_error_for,
	.error_body = openai_error_body,
	.rate_headers = openai_rate_headers,
	.whole = openai_whole,
	.models = openai_models,
	.stream_begin = openai_stream_begin,
	.stream_token = openai_stream_token,
	.stream_finish = openai_stream_finish,
	.stream_error = openai_stream_error,
	.stream_malformed = openai_stream_malformed,
};
