/*
 * relay: the commit point (role-only and empty chunks held back; content,
 * tool calls, a finish, usage or [DONE] commit), re-framing (event names,
 * multi-line data, comments and ids dropped), breaks (error events, bad
 * JSON or bytes after it, an over-long line or event; "error": null is
 * none), usage and content counting, every split of a
 * stream giving the same output, and the error event's shape.
 */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <string.h>

#include "gateway/relay.h"

#define ROLE "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n"
#define TOK(t) "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"" t "\"}}]}\n\n"
#define FIN "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n"
#define USAGE "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":7,\"completion_tokens\":3}}\n\n"
#define DONE "data: [DONE]\n\n"

static void feed(struct relay *r, const char *s)
{
	cr_assert_eq(relay_feed(r, s, strlen(s)), 0);
}

Test(relay, role_chunk_is_held_until_content, .timeout = 10)
{
	struct relay r;

	relay_init(&r);
	feed(&r, ": keep-alive\n\n" ROLE);
	cr_assert_not(r.content, "a role-only chunk is not content");
	cr_assert_eq(r.events, 1);
	feed(&r, TOK("Hi"));
	cr_assert(r.content);
	cr_assert_str_eq(r.out.data, ROLE TOK("Hi"), "held events come out in order");
	cr_assert_eq(r.content_chunks, 1);
	relay_free(&r);
}

Test(relay, each_kind_of_content_commits, .timeout = 10)
{
	static const char *const commits[] = {
		TOK("x"),
		FIN,
		USAGE,
		DONE,
		"data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0}]}}]}\n\n",
		"data: {\"choices\":[{\"delta\":{\"function_call\":{\"name\":\"f\"}}}]}\n\n",
		"data: {\"choices\":[{\"delta\":{\"refusal\":\"no\"}}]}\n\n",
		"data: {\"choices\":[{\"delta\":{\"reasoning_content\":\"hm\"}}]}\n\n",
		"data: {\"choices\":[{\"delta\":{\"reasoning\":\"hm\"}}]}\n\n",
	};
	static const char *const holds[] = {
		ROLE,
		"data: {\"choices\":[{\"delta\":{}}]}\n\n",
		"data: {\"choices\":[{\"delta\":{\"content\":null},\"finish_reason\":null}]}\n\n",
		"data: {\"object\":\"chat.completion.chunk\"}\n\n",
		": comment only\n\n",
	};
	struct relay r;

	relay_init(&r);
	for (size_t i = 0; i < sizeof(commits) / sizeof(commits[0]); i++) {
		relay_reset(&r);
		feed(&r, commits[i]);
		cr_assert(r.content, "commits: %s", commits[i]);
	}
	for (size_t i = 0; i < sizeof(holds) / sizeof(holds[0]); i++) {
		relay_reset(&r);
		feed(&r, holds[i]);
		cr_assert_not(r.content, "holds: %s", holds[i]);
		cr_assert_eq(r.brk, RELAY_OK);
	}
	relay_free(&r);
}

Test(relay, done_ends_it_and_usage_is_taken, .timeout = 10)
{
	struct relay r;

	relay_init(&r);
	feed(&r, TOK("a") TOK("b") FIN USAGE DONE TOK("after"));
	cr_assert(r.done);
	cr_assert(relay_over(&r));
	cr_assert(r.has_usage);
	cr_assert_eq(r.tokens_in, 7);
	cr_assert_eq(r.tokens_out, 3);
	cr_assert_eq(r.content_chunks, 2);
	cr_assert_str_eq(r.out.data, TOK("a") TOK("b") FIN USAGE DONE, "nothing after [DONE]");
	feed(&r, TOK("later"));
	cr_assert_str_eq(r.out.data, TOK("a") TOK("b") FIN USAGE DONE);
	relay_free(&r);
}

Test(relay, reframing_keeps_event_names_and_lines, .timeout = 10)
{
	struct relay r;

	relay_init(&r);
	feed(&r, "id: 7\nevent: custom\ndata: {\"a\":\ndata: 1}\nretry: 10\n\n"
		 "event: message\r\ndata:{\"b\":2}\r\n\r\n");
	cr_assert_str_eq(r.out.data, "event: custom\ndata: {\"a\":\ndata: 1}\n\n"
				     "data: {\"b\":2}\n\n");
	cr_assert_eq(r.events, 2);
	relay_free(&r);
}

Test(relay, error_event_breaks_and_is_not_copied, .timeout = 10)
{
	struct relay r;

	relay_init(&r);
	feed(&r, TOK("a") "event: error\ndata: {\"error\":{\"message\":\"boom\"}}\n\n" TOK("b"));
	cr_assert_eq(r.brk, RELAY_ERROR_EVENT);
	cr_assert_str_eq(r.message, "boom");
	cr_assert_str_eq(r.out.data, TOK("a"));
	relay_reset(&r);
	feed(&r, "data: {\"error\":{\"message\":\"quota\",\"code\":\"x\"}}\n\n");
	cr_assert_eq(r.brk, RELAY_ERROR_EVENT, "an error object without an event name");
	cr_assert_str_eq(r.message, "quota");
	cr_assert_not(r.content);
	relay_reset(&r);
	feed(&r, "event: error\ndata: upstream overloaded\n\n");
	cr_assert_eq(r.brk, RELAY_ERROR_EVENT, "an error event whose data is not JSON");
	cr_assert_str_eq(r.message, "upstream overloaded");
	relay_reset(&r);
	feed(&r, "data: {\"error\":null,\"choices\":[{\"delta\":{\"content\":\"x\"}}]}\n\n");
	cr_assert_eq(r.brk, RELAY_OK, "\"error\": null is no error");
	cr_assert(r.content);
	relay_free(&r);
}

Test(relay, bad_json_and_long_lines_are_invalid, .timeout = 10)
{
	static char line[SSE_MAX_LINE + 16];
	struct relay r;

	relay_init(&r);
	feed(&r, TOK("a") "data: {\"choices\":[{\"delta\":{\"content\":\n\n");
	cr_assert_eq(r.brk, RELAY_INVALID);
	cr_assert_str_eq(r.out.data, TOK("a"));
	relay_reset(&r);
	feed(&r, "data: {\"choices\":[]}xyz\n\n");
	cr_assert_eq(r.brk, RELAY_INVALID, "bytes after the JSON value");
	relay_reset(&r);
	memcpy(line, "data: ", 6);
	memset(line + 6, 'x', sizeof(line) - 6);
	cr_assert_eq(relay_feed(&r, line, sizeof(line)), 0);
	cr_assert_eq(r.brk, RELAY_INVALID);
	/* An event that never ends: lines of 1000 bytes, no blank line. */
	relay_reset(&r);
	memset(line, 'y', 1000);
	memcpy(line, "data: ", 6);
	line[999] = '\n';
	for (int i = 0; i < 2000 && r.brk == RELAY_OK; i++)
		cr_assert_eq(relay_feed(&r, line, 1000), 0);
	cr_assert_eq(r.brk, RELAY_INVALID, "an event past SSE_MAX_EVENT");
	relay_free(&r);
}

Test(relay, every_split_gives_the_same_output, .timeout = 10)
{
	static const char stream[] = ROLE TOK("one") TOK("two") ": ping\n\n" FIN USAGE DONE;
	size_t len = sizeof(stream) - 1;
	struct relay whole;
	struct relay r;

	relay_init(&whole);
	feed(&whole, stream);
	relay_init(&r);
	for (size_t cut = 0; cut <= len; cut++) {
		relay_reset(&r);
		cr_assert_eq(relay_feed(&r, stream, cut), 0);
		cr_assert_eq(relay_feed(&r, stream + cut, len - cut), 0);
		cr_assert_str_eq(r.out.data, whole.out.data, "cut at %zu", cut);
		cr_assert(r.done);
		cr_assert_eq(r.content_chunks, 2);
	}
	relay_free(&r);
	relay_free(&whole);
}

Test(relay, error_event_is_openai_shaped, .timeout = 10)
{
	struct buf b = { 0 };
	cJSON *root;
	const cJSON *err;
	const char *data;

	cr_assert_eq(relay_error_event(&b, "stream_stalled", "went \"silent\""), 0);
	cr_assert(strncmp(b.data, "event: error\ndata: ", 19) == 0);
	cr_assert(b.len > 2 && strcmp(b.data + b.len - 2, "\n\n") == 0);
	data = b.data + 19;
	root = cJSON_ParseWithLength(data, b.len - 19 - 2);
	cr_assert_not_null(root);
	err = cJSON_GetObjectItemCaseSensitive(root, "error");
	cr_assert_str_eq(cJSON_GetObjectItemCaseSensitive(err, "message")->valuestring,
			 "went \"silent\"");
	cr_assert_str_eq(cJSON_GetObjectItemCaseSensitive(err, "type")->valuestring, "server_error");
	cr_assert(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(err, "param")));
	cr_assert_str_eq(cJSON_GetObjectItemCaseSensitive(err, "code")->valuestring,
			 "stream_stalled");
	cJSON_Delete(root);
	buf_free(&b);
}

/* Anthropic events, as an Anthropic target's stream reaches the relay. */
#define A_START "event: message_start\ndata: {\"type\":\"message_start\",\"message\":" \
	"{\"id\":\"m\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[]," \
	"\"model\":\"c\",\"usage\":{\"input_tokens\":7,\"output_tokens\":1}}}\n\n"
#define A_TOK(t) "event: content_block_delta\ndata: {\"type\":\"content_block_delta\"," \
	"\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"" t "\"}}\n\n"
#define A_PING "event: ping\ndata: {\"type\":\"ping\"}\n\n"

/*
 * A ping (or a block's start or stop) gives the client nothing and is not
 * the stream's progress: the stall timer, which reads events, sees a
 * stream that only pings as silent.
 */
Test(relay, anthropic_pings_are_not_progress, .timeout = 10)
{
	struct relay r;
	uint64_t events;

	relay_init(&r);
	relay_anthropic(&r, false, 1700000000);
	feed(&r, A_START A_TOK("one"));
	cr_assert(r.content, "the first text delta commits");
	events = r.events;
	feed(&r, A_PING A_PING "event: content_block_stop\ndata: {\"type\":"
	     "\"content_block_stop\",\"index\":0}\n\n");
	cr_expect_eq(r.events, events, "pings counted as progress: %llu events",
		     (unsigned long long)r.events);
	feed(&r, A_TOK("two"));
	cr_expect_eq(r.events, events + 1);
	relay_free(&r);
}

/*
 * A stream cut before message_delta bills the text that came: message_start's
 * output count (1, a placeholder) gives way to the content chunks, and
 * message_delta's count is taken once it comes.
 */
Test(relay, anthropic_output_tokens_before_message_delta, .timeout = 10)
{
	struct relay r;

	relay_init(&r);
	relay_anthropic(&r, false, 1700000000);
	feed(&r, A_START A_TOK("a") A_TOK("b") A_TOK("c") A_TOK("d") A_TOK("e") A_TOK("f"));
	cr_expect(r.has_usage);
	cr_expect_eq(r.tokens_in, 7);
	cr_expect_eq(r.tokens_out, 6, "tokens_out %lld after 6 text deltas",
		     (long long)r.tokens_out);
	feed(&r, "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":"
	     "\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n");
	cr_expect_eq(r.brk, RELAY_ERROR_EVENT);
	cr_expect_str_eq(r.message, "Overloaded");
	cr_expect_eq(r.tokens_out, 6);
	relay_reset(&r);
	relay_anthropic(&r, false, 1700000000);
	feed(&r, A_START A_TOK("a") "event: message_delta\ndata: {\"type\":\"message_delta\","
	     "\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":4}}\n\n");
	cr_expect_eq(r.tokens_out, 4, "message_delta's count, once it came");
	relay_free(&r);
}
