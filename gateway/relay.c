/*
 * relay: parsing and re-framing an upstream event stream.
 */
#include "gateway/relay.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <string.h>

#include "common/json.h"
#include "gateway/tokens.h"

void relay_usage_tokens(struct json_span usage, int64_t *in, int64_t *out)
{
	struct json_member m[] = { { "prompt_tokens", { NULL, 0 }, 0 },
				   { "completion_tokens", { NULL, 0 }, 0 } };

	json_members(usage, m, 2);
	*in = token_count(m[0].v);
	*out = token_count(m[1].v);
}

/* Whether a choice's delta carries content: text, a tool call, a refusal, reasoning. */
static bool delta_has_content(struct json_span delta)
{
	enum { CONTENT, TOOL_CALLS, FUNCTION_CALL, REFUSAL, REASONING_CONTENT, REASONING, N };
	struct json_member m[N] = {
		[CONTENT] = { "content", { NULL, 0 }, 0 },
		[TOOL_CALLS] = { "tool_calls", { NULL, 0 }, 0 },
		[FUNCTION_CALL] = { "function_call", { NULL, 0 }, 0 },
		[REFUSAL] = { "refusal", { NULL, 0 }, 0 },
		[REASONING_CONTENT] = { "reasoning_content", { NULL, 0 }, 0 },
		[REASONING] = { "reasoning", { NULL, 0 }, 0 },
	};

	json_members(delta, m, N);
	return json_string_nonempty(m[CONTENT].v) ||
	       (json_type_of(m[TOOL_CALLS].v) == JSON_ARRAY && json_has_items(m[TOOL_CALLS].v)) ||
	       json_type_of(m[FUNCTION_CALL].v) == JSON_OBJECT ||
	       json_string_nonempty(m[REFUSAL].v) ||
	       json_string_nonempty(m[REASONING_CONTENT].v) ||
	       json_string_nonempty(m[REASONING].v);
}

/* Notes what one chunk (its usage and choices members) carries: content, a finish, usage. */
static void take_chunk(struct relay *r, struct json_span usage, struct json_span choices)
{
	struct json_member m[] = { { "delta", { NULL, 0 }, 0 },
				   { "finish_reason", { NULL, 0 }, 0 } };
	size_t at = 0;
	bool counted = false;

	if (json_type_of(usage) == JSON_OBJECT) {
		r->has_usage = true;
		relay_usage_tokens(usage, &r->tokens_in, &r->tokens_out);
		r->content = true;
	}
	while (json_next_members(choices, &at, m, 2)) {
		if (delta_has_content(m[0].v)) {
			r->content = true;
			if (!counted)
				r->content_chunks++;
			counted = true;
		}
		if (json_string_nonempty(m[1].v))
			r->content = true;
	}
}

/* Whether a chunk's error member makes it an error, as the SDKs take it: an object or text. */
static bool is_error(struct json_span err)
{
	return json_type_of(err) == JSON_OBJECT || json_string_nonempty(err);
}

/* The error event's message (its data itself when that is not JSON), cut to fit. */
static void take_error(struct relay *r, const struct sse_event *ev)
{
	cJSON *root = json_parse_whole(ev->data, ev->data_len);

	json_copy_cut(r->message, sizeof(r->message), json_error_text(root, ev->data),
		      sizeof(r->message) - 1);
	cJSON_Delete(root);
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

/*
 * An OpenAI chunk is read where it lies (json_scan.h), never parsed into
 * a tree: an error event's alone is, for its message.
 */
static int on_event(void *ctx, const struct sse_event *ev)
{
	struct relay *r = ctx;
	struct json_member m[] = { { "error", { NULL, 0 }, 0 }, { "usage", { NULL, 0 }, 0 },
				   { "choices", { NULL, 0 }, 0 } };
	bool valid;

	r->events++;
	if (r->anthropic)
		return on_anthropic_event(r, ev);
	if (strcmp(ev->data, "[DONE]") == 0) {
		r->done = true;
		r->content = true;
		return reframe(r, ev) ? -ENOMEM : 1;
	}
	valid = json_check_members(ev->data, ev->data_len, NULL, m, 3) == 0;
	if (strcmp(ev->event, "error") == 0 || (valid && is_error(m[0].v))) {
		r->brk = RELAY_ERROR_EVENT;
		take_error(r, ev);
		return 1;
	}
	if (!valid) {
		r->brk = RELAY_INVALID;
		return 1;
	}
	take_chunk(r, m[1].v, m[2].v);
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
