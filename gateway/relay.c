/*
 * relay: parsing and re-framing an upstream event stream.
 */
#include "gateway/relay.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <string.h>

#include "common/json.h"

/* Token counts past this are taken as garbage (0). */
#define MAX_TOKENS 1e15

static int64_t tokens(const cJSON *usage, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(usage, key);

	if (cJSON_IsNumber(v) && v->valuedouble > 0 && v->valuedouble < MAX_TOKENS)
		return (int64_t)v->valuedouble;
	return 0;
}

void relay_usage_tokens(const cJSON *usage, int64_t *in, int64_t *out)
{
	*in = tokens(usage, "prompt_tokens");
	*out = tokens(usage, "completion_tokens");
}

static bool non_empty_string(const cJSON *v)
{
	return cJSON_IsString(v) && v->valuestring[0];
}

/* Notes what one chunk carries: content, a finish, usage. */
static void take_chunk(struct relay *r, const cJSON *root)
{
	const cJSON *usage = cJSON_GetObjectItemCaseSensitive(root, "usage");
	const cJSON *choices = cJSON_GetObjectItemCaseSensitive(root, "choices");
	const cJSON *choice;
	bool counted = false;

	if (cJSON_IsObject(usage)) {
		r->has_usage = true;
		relay_usage_tokens(usage, &r->tokens_in, &r->tokens_out);
		r->content = true;
	}
	cJSON_ArrayForEach(choice, choices) {
		const cJSON *delta = cJSON_GetObjectItemCaseSensitive(choice, "delta");
		const cJSON *fin = cJSON_GetObjectItemCaseSensitive(choice, "finish_reason");
		const cJSON *tools = cJSON_GetObjectItemCaseSensitive(delta, "tool_calls");
		const cJSON *fn = cJSON_GetObjectItemCaseSensitive(delta, "function_call");
		const cJSON *refusal = cJSON_GetObjectItemCaseSensitive(delta, "refusal");

		if (non_empty_string(cJSON_GetObjectItemCaseSensitive(delta, "content")) ||
		    (cJSON_IsArray(tools) && cJSON_GetArraySize(tools) > 0) ||
		    cJSON_IsObject(fn) || non_empty_string(refusal) ||
		    non_empty_string(cJSON_GetObjectItemCaseSensitive(delta, "reasoning_content")) ||
		    non_empty_string(cJSON_GetObjectItemCaseSensitive(delta, "reasoning"))) {
			r->content = true;
			if (!counted)
				r->content_chunks++;
			counted = true;
		}
		if (non_empty_string(fin))
			r->content = true;
	}
}

/* Whether a chunk is an error, as the SDKs take it: an "error" member that is an object or text. */
static bool is_error(const cJSON *root)
{
	const cJSON *err = cJSON_GetObjectItemCaseSensitive(root, "error");

	return cJSON_IsObject(err) || non_empty_string(err);
}

/* The error event's message (its data itself when that is not JSON), cut to fit. */
static void take_error(struct relay *r, const cJSON *root, const char *data)
{
	json_copy_cut(r->message, sizeof(r->message), json_error_text(root, data),
		      sizeof(r->message) - 1);
}

/* Appends the event as the client gets it. */
static int reframe(struct relay *r, const struct sse_event *ev)
{
	const char *p = ev->data;
	const char *end = ev->data + ev->data_len;
	const char *nl;
	int rc = 0;

	if (ev->event[0] && strcmp(ev->event, "message") != 0) {
		rc |= buf_puts(&r->out, "event: ");
		rc |= buf_puts(&r->out, ev->event);
		rc |= buf_puts(&r->out, "\n");
	}
	for (;;) {
		nl = memchr(p, '\n', (size_t)(end - p));
		rc |= buf_puts(&r->out, "data: ");
		rc |= buf_append(&r->out, p, (size_t)((nl ? nl : end) - p));
		rc |= buf_puts(&r->out, "\n");
		if (!nl)
			break;
		p = nl + 1;
	}
	return rc | buf_puts(&r->out, "\n");
}

/*
 * One Anthropic event, translated: the chunks go out as the client gets
 * them. An event that gives the client nothing (a ping, a block's start or
 * stop) is not counted as the stream's progress: a stream that only pings
 * has stalled. Until message_delta says how many tokens came,
 * message_start's output count is a placeholder: the content chunks count
 * instead when there are more of them (a stream cut before its end).
 */
static int on_anthropic_event(struct relay *r, const struct sse_event *ev)
{
	struct anth_ev_facts f;
	int rc = anth_stream_event(&r->anth, ev->event, ev->data, ev->data_len, &r->out, &f);

	if (rc == ANTH_EV_NONE)
		r->events--;
	r->content |= rc == ANTH_EV_CHUNK && f.commit;
	r->content_chunks += rc == ANTH_EV_CHUNK && f.text;
	r->has_usage = r->anth.has_usage;
	r->tokens_in = r->anth.tokens_in;
	r->tokens_out = r->anth.finished || r->anth.tokens_out >= (int64_t)r->content_chunks
				? r->anth.tokens_out
				: (int64_t)r->content_chunks;
	switch (rc) {
	case ANTH_EV_NONE:
		return 0;
	case ANTH_EV_CHUNK:
		return 0;
	case ANTH_EV_DONE:
		r->done = true;
		r->content = true;
		return 1;
	case ANTH_EV_ERROR:
		r->brk = RELAY_ERROR_EVENT;
		json_copy_cut(r->message, sizeof(r->message), f.message, sizeof(r->message) - 1);
		return 1;
	case ANTH_EV_INVALID:
		r->brk = RELAY_INVALID;
		return 1;
	default:
		return -ENOMEM;
	}
}

static int on_event(void *ctx, const struct sse_event *ev)
{
	struct relay *r = ctx;
	cJSON *root;

	r->events++;
	if (r->anthropic)
		return on_anthropic_event(r, ev);
	if (strcmp(ev->data, "[DONE]") == 0) {
		r->done = true;
		r->content = true;
		return reframe(r, ev) ? -ENOMEM : 1;
	}
	root = json_parse_whole(ev->data, ev->data_len);
	if (strcmp(ev->event, "error") == 0 || (root && is_error(root))) {
		r->brk = RELAY_ERROR_EVENT;
		take_error(r, root, ev->data);
		cJSON_Delete(root);
		return 1;
	}
	if (!root) {
		r->brk = RELAY_INVALID;
		return 1;
	}
	take_chunk(r, root);
	cJSON_Delete(root);
	return reframe(r, ev) ? -ENOMEM : 0;
}

void relay_init(struct relay *r)
{
	memset(r, 0, sizeof(*r));
	sse_init(&r->parser, on_event, r);
}

void relay_reset(struct relay *r)
{
	sse_reset(&r->parser);
	buf_reset(&r->out);
	r->content = false;
	r->done = false;
	r->brk = RELAY_OK;
	r->message[0] = '\0';
	r->has_usage = false;
	r->tokens_in = r->tokens_out = 0;
	r->content_chunks = 0;
	r->events = 0;
	r->anthropic = false;
}

void relay_anthropic(struct relay *r, bool include_usage, long long created_s)
{
	r->anthropic = true;
	anth_stream_init(&r->anth, include_usage, created_s);
}

void relay_free(struct relay *r)
{
	sse_free_parser(&r->parser);
	buf_free(&r->out);
}

bool relay_over(const struct relay *r)
{
	return r->done || r->brk != RELAY_OK;
}

int relay_feed(struct relay *r, const char *data, size_t len)
{
	int rc;

	if (relay_over(r))
		return 0;
	rc = sse_feed(&r->parser, data, len);
	if (rc == -E2BIG) {
		r->brk = RELAY_INVALID;
		return 0;
	}
	return rc < 0 ? rc : 0;
}

int relay_error_event(struct buf *b, const char *code, const char *message)
{
	int rc = buf_puts(b, "event: error\ndata: ");

	rc |= json_openai_error(b, message, "server_error", NULL, code);
	rc |= buf_puts(b, "\n\n");
	return rc ? -ENOMEM : 0;
}
