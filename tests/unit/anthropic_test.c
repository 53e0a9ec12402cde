/*
 * anthropic: the translation between OpenAI chat completions and
 * Anthropic Messages — every request member mapped, dropped or refused
 * (the body compared as parsed JSON, refusals by param and sentence); the
 * answer (each stop_reason, usage sums and garbage, what is not a
 * message, taken as a chat completion by relay_usage_tokens); error
 * bodies; and streams: a real-shaped event sequence to the exact chunk
 * list with and without include_usage, through common/sse in every split,
 * then through the relay; error events, invalid frames, texts with
 * \u0000 and non-ASCII.
 */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "common/sse.h"
#include "gateway/anthropic.h"
#include "gateway/relay.h"

/* Parses n bytes at p (not NUL-terminated there) as one JSON value, or NULL. */
static cJSON *parse_n(const char *p, size_t n)
{
	char *copy = strndup(p, n);
	cJSON *v;

	cr_assert_not_null(copy);
	v = json_parse_whole(copy, strlen(copy));
	free(copy);
	return v;
}

/* ---- the request ---- */

static const struct anth_req_opts opts = { .model = "claude-x", .max_tokens_default = 1000 };

/* Translates json with o; the rc, the body in out, the refusal in why. */
static int translate(const char *json, const struct anth_req_opts *o, struct buf *out,
		     struct anth_refusal *why)
{
	cJSON *root = cJSON_Parse(json);
	int rc;

	cr_assert_not_null(root, "test input is JSON: %s", json);
	buf_reset(out);
	rc = anth_request(root, o, out, why);
	cJSON_Delete(root);
	return rc;
}

/* Asserts json translates (with o) to exactly the JSON want. */
static void expect_body(const char *json, const struct anth_req_opts *o, const char *want)
{
	struct buf out = { 0 };
	struct anth_refusal why;
	cJSON *got;
	cJSON *w = cJSON_Parse(want);
	int rc = translate(json, o, &out, &why);

	cr_assert_eq(rc, 0, "%s: refused (%s)", json, why.message);
	got = json_parse_whole(out.data, out.len);
	cr_assert_not_null(got, "the body is JSON: %s", out.data);
	cr_assert_not_null(w, "want is JSON: %s", want);
	cr_expect(cJSON_Compare(got, w, true), "%s\n  gave %s\n  want %s", json, out.data, want);
	cJSON_Delete(got);
	cJSON_Delete(w);
	buf_free(&out);
}

/* Asserts json is refused with param and a message holding needle. */
static void expect_refused(const char *json, const char *param, const char *needle)
{
	struct buf out = { 0 };
	struct anth_refusal why;
	int rc = translate(json, &opts, &out, &why);

	cr_assert_eq(rc, -EINVAL, "%s: not refused (rc %d): %s", json, rc,
		     out.data ? out.data : "");
	cr_expect_not_null(why.param, "%s: a param", json);
	if (why.param)
		cr_expect_str_eq(why.param, param, "%s", json);
	cr_expect_not_null(strstr(why.message, needle), "%s: message \"%s\" lacks \"%s\"", json,
			   why.message, needle);
	buf_free(&out);
}

#define MSGS "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]"
#define REQ(extra) "{\"model\":\"gpt-4o\"," MSGS extra "}"
#define WANT(extra) "{\"model\":\"claude-x\",\"max_tokens\":1000," MSGS extra "}"

Test(anthropic_request, minimal_takes_the_targets_model_and_default_max_tokens, .timeout = 10)
{
	struct anth_req_opts o = { .model = "claude-x", .max_tokens_default = 0 };

	expect_body(REQ(""), &opts, WANT(""));
	expect_body(REQ(""), &o,
		    "{\"model\":\"claude-x\",\"max_tokens\":4096," MSGS "}");
	o.model = NULL;
	expect_body(REQ(""), &o, "{\"model\":\"gpt-4o\",\"max_tokens\":4096," MSGS "}");
}

Test(anthropic_request, max_tokens_from_either_member, .timeout = 10)
{
	struct buf out = { 0 };
	struct anth_refusal why;

	expect_body(REQ(",\"max_tokens\":77"), &opts,
		    "{\"model\":\"claude-x\",\"max_tokens\":77," MSGS "}");
	expect_body(REQ(",\"max_tokens\":77,\"max_completion_tokens\":55"), &opts,
		    "{\"model\":\"claude-x\",\"max_tokens\":55," MSGS "}");
	expect_body(REQ(",\"max_tokens\":77,\"max_completion_tokens\":null"), &opts,
		    "{\"model\":\"claude-x\",\"max_tokens\":77," MSGS "}");
	expect_body(REQ(",\"max_tokens\":null"), &opts, WANT(""));
	expect_body(REQ(",\"max_tokens\":5.0"), &opts,
		    "{\"model\":\"claude-x\",\"max_tokens\":5," MSGS "}");
	/* A large whole number is written as an integer, not 1e+15. */
	cr_assert_eq(translate(REQ(",\"max_tokens\":1000000000000000"), &opts, &out, &why), 0);
	cr_expect_not_null(strstr(out.data, "\"max_tokens\":1000000000000000,"), "%s", out.data);
	buf_free(&out);
}

Test(anthropic_request, max_tokens_refused_unless_a_whole_number_of_at_least_1, .timeout = 10)
{
	static const char *const bad[] = {
		"0", "-1", "1.5", "\"10\"", "true", "1e400", "9007199254740994", "[]",
	};
	char json[256];
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(json, sizeof(json), REQ(",\"max_tokens\":%s"), bad[i]);
		expect_refused(json, "max_tokens", "'max_tokens' must be a whole number");
		snprintf(json, sizeof(json), REQ(",\"max_completion_tokens\":%s"), bad[i]);
		expect_refused(json, "max_completion_tokens",
			       "'max_completion_tokens' must be a whole number");
	}
}

Test(anthropic_request, system_and_developer_become_the_system_prompt, .timeout = 10)
{
	expect_body("{\"model\":\"m\",\"messages\":["
		    "{\"role\":\"system\",\"content\":\"Be brief.\"},"
		    "{\"role\":\"user\",\"content\":\"hi\",\"name\":\"ann\"},"
		    "{\"role\":\"developer\",\"content\":[{\"type\":\"text\",\"text\":\"One \"},"
		    "{\"type\":\"text\",\"text\":\"line.\"}]},"
		    "{\"role\":\"assistant\",\"content\":\"Hello.\",\"name\":\"bot\"},"
		    "{\"role\":\"user\",\"content\":\"more\"}]}", &opts,
		    "{\"model\":\"claude-x\",\"max_tokens\":1000,"
		    "\"system\":\"Be brief.\\n\\nOne line.\",\"messages\":["
		    "{\"role\":\"user\",\"content\":\"hi\"},"
		    "{\"role\":\"assistant\",\"content\":\"Hello.\"},"
		    "{\"role\":\"user\",\"content\":\"more\"}]}");
	expect_body("{\"model\":\"m\",\"messages\":[{\"role\":\"system\",\"content\":\"\"},"
		    "{\"role\":\"user\",\"content\":\"hi\"}]}", &opts,
		    WANT(",\"system\":\"\""));
}

Test(anthropic_request, content_parts_become_blocks, .timeout = 10)
{
	expect_body("{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":["
		    "{\"type\":\"text\",\"text\":\"What is this?\"},"
		    "{\"type\":\"image_url\",\"image_url\":{\"url\":\"data:image/png;base64,iVBOR=\","
		    "\"detail\":\"high\"}},"
		    "{\"type\":\"image_url\",\"image_url\":{\"url\":\"https://x.test/a.jpg\"}},"
		    "{\"type\":\"image_url\",\"image_url\":{\"url\":\"HTTP://x.test/b.gif\"}}]},"
		    "{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"A cat.\"}]}"
		    "]}", &opts,
		    "{\"model\":\"claude-x\",\"max_tokens\":1000,\"messages\":["
		    "{\"role\":\"user\",\"content\":["
		    "{\"type\":\"text\",\"text\":\"What is this?\"},"
		    "{\"type\":\"image\",\"source\":{\"type\":\"base64\",\"media_type\":\"image/png\","
		    "\"data\":\"iVBOR=\"}},"
		    "{\"type\":\"image\",\"source\":{\"type\":\"url\",\"url\":\"https://x.test/a.jpg\"}},"
		    "{\"type\":\"image\",\"source\":{\"type\":\"url\",\"url\":\"HTTP://x.test/b.gif\"}}]},"
		    "{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"A cat.\"}]}]}");
}

Test(anthropic_request, messages_refused, .timeout = 10)
{
	static const struct {
		const char *messages;
		const char *needle;
	} cases[] = {
		{ "[{\"role\":\"user\",\"content\":[{\"type\":\"input_audio\",\"input_audio\":{}}]}]",
		  "content part type 'input_audio' cannot be sent to an Anthropic target" },
		{ "[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"a\"},"
		  "{\"type\":\"file\",\"file\":{}}]}]",
		  "content part type 'file' cannot be sent to an Anthropic target "
		  "(messages[0].content[1])" },
		{ "[{\"role\":\"assistant\",\"content\":[{\"type\":\"refusal\",\"refusal\":\"no\"}]}]",
		  "content part type 'refusal'" },
		{ "[{\"role\":\"user\",\"content\":[{\"text\":\"no type\"}]}]",
		  "not a content part with a string type" },
		{ "[{\"role\":\"user\",\"content\":[\"bare\"]}]", "not a content part" },
		{ "[{\"role\":\"user\",\"content\":[{\"type\":\"text\"}]}]", "needs a string text" },
		{ "[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\",\"image_url\":"
		  "{\"url\":\"ftp://x.test/a.png\"}}]}]", "base64 data: URL or an http(s) URL" },
		{ "[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\",\"image_url\":"
		  "{\"url\":\"data:image/png,abc\"}}]}]", "base64 data: URL" },
		{ "[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\",\"image_url\":"
		  "{\"url\":\"data:;base64,abc\"}}]}]", "base64 data: URL" },
		{ "[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\",\"image_url\":{}}]}]",
		  "base64 data: URL" },
		{ "[{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"c\"}]}]",
		  "messages[0]: a message with tool calls cannot be sent" },
		{ "[{\"role\":\"assistant\",\"content\":\"x\",\"function_call\":{\"name\":\"f\"}}]",
		  "tool calls" },
		{ "[{\"role\":\"user\",\"content\":\"q\"},{\"role\":\"tool\",\"content\":\"r\","
		  "\"tool_call_id\":\"c\"}]", "messages[1]: role 'tool' cannot be sent" },
		{ "[{\"role\":\"function\",\"content\":\"r\",\"name\":\"f\"}]", "role 'function'" },
		{ "[{\"role\":\"critic\",\"content\":\"r\"}]", "role 'critic' cannot be sent" },
		{ "[{\"content\":\"r\"}]", "messages[0] is not a message with a string role" },
		{ "[\"hi\"]", "is not a message" },
		{ "[{\"role\":\"user\",\"content\":null}]",
		  "messages[0]: content must be a string or an array" },
		{ "[{\"role\":\"user\"}]", "content must be a string or an array" },
		{ "[{\"role\":\"user\",\"content\":5}]", "content must be a string or an array" },
		{ "[{\"role\":\"system\",\"content\":null},{\"role\":\"user\",\"content\":\"q\"}]",
		  "content must be a string or an array" },
		{ "[{\"role\":\"system\",\"content\":[{\"type\":\"image_url\",\"image_url\":"
		  "{\"url\":\"https://x\"}}]},{\"role\":\"user\",\"content\":\"q\"}]",
		  "content part type 'image_url' cannot be sent to an Anthropic target in a "
		  "system prompt" },
		{ "[{\"role\":\"system\",\"content\":\"only a system prompt\"}]",
		  "no user or assistant message" },
		{ "[{\"role\":\"user\",\"content\":\"\"}]",
		  "messages[0]: an empty user turn cannot be sent" },
		{ "[{\"role\":\"user\",\"content\":\"q\"},{\"role\":\"assistant\",\"content\":[]}]",
		  "messages[1]: an empty assistant turn cannot be sent" },
	};
	char json[1024];
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(json, sizeof(json), "{\"model\":\"m\",\"messages\":%s}", cases[i].messages);
		expect_refused(json, "messages", cases[i].needle);
	}
}

Test(anthropic_request, a_long_odd_name_is_quoted_cut_and_valid, .timeout = 10)
{
	struct buf out = { 0 };
	struct anth_refusal why;
	char json[512];
	char type[200];

	memset(type, 'x', sizeof(type) - 3);
	memcpy(type + sizeof(type) - 3, "\xc3\xa9", 3);	/* ends in é */
	snprintf(json, sizeof(json), "{\"model\":\"m\",\"messages\":[{\"role\":\"user\","
		 "\"content\":[{\"type\":\"%s\"}]}]}", type);
	cr_assert_eq(translate(json, &opts, &out, &why), -EINVAL);
	cr_expect_lt(strlen(why.message), sizeof(why.message) - 1, "fits: %s", why.message);
	cr_expect_not_null(strstr(why.message, "'xxxxxxxx"), "%s", why.message);
	cr_expect_not_null(strstr(why.message, "' cannot be sent"), "the name cut at 64: %s",
			   why.message);
	buf_free(&out);
}

Test(anthropic_request, temperature_and_top_p_in_0_to_1, .timeout = 10)
{
	struct buf out = { 0 };
	struct anth_refusal why;
	cJSON *body;

	expect_body(REQ(",\"temperature\":0,\"top_p\":1"), &opts,
		    WANT(",\"temperature\":0,\"top_p\":1"));
	expect_body(REQ(",\"temperature\":null,\"top_p\":null"), &opts, WANT(""));
	/* Numbers read back exactly. */
	cr_assert_eq(translate(REQ(",\"temperature\":0.1,\"top_p\":0.30000000000000004"), &opts,
			       &out, &why), 0);
	body = json_parse_whole(out.data, out.len);
	cr_assert_not_null(body);
	cr_expect(cJSON_GetObjectItem(body, "temperature")->valuedouble == 0.1, "%s", out.data);
	cr_expect(cJSON_GetObjectItem(body, "top_p")->valuedouble == 0.30000000000000004, "%s",
		  out.data);
	cJSON_Delete(body);
	/* And in a schema, where cJSON alone would print 0.3 and 1.23456789012346e+16. */
	cr_assert_eq(translate(REQ(",\"response_format\":{\"type\":\"json_schema\","
				   "\"json_schema\":{\"schema\":{\"minimum\":0.30000000000000004,"
				   "\"maximum\":12345678901234568,\"enum\":[1e300,-2.5e-300]}}}"),
			       &opts, &out, &why), 0);
	cr_expect_not_null(strstr(out.data, "{\"minimum\":0.30000000000000004,"
					    "\"maximum\":12345678901234568,"
					    "\"enum\":[1e+300,-2.5e-300]}"), "%s", out.data);
	buf_free(&out);
	expect_refused(REQ(",\"temperature\":1.5"), "temperature", "from 0 to 1");
	expect_refused(REQ(",\"temperature\":2"), "temperature", "Anthropic's range");
	expect_refused(REQ(",\"temperature\":-0.1"), "temperature", "'temperature'");
	expect_refused(REQ(",\"temperature\":\"0.5\""), "temperature", "'temperature'");
	expect_refused(REQ(",\"temperature\":1e400"), "temperature", "'temperature'");
	expect_refused(REQ(",\"top_p\":1.01"), "top_p", "'top_p' must be a number from 0 to 1");
}

Test(anthropic_request, stop_becomes_stop_sequences, .timeout = 10)
{
	expect_body(REQ(",\"stop\":\"END\""), &opts, WANT(",\"stop_sequences\":[\"END\"]"));
	expect_body(REQ(",\"stop\":[\"a\",\"b\"]"), &opts,
		    WANT(",\"stop_sequences\":[\"a\",\"b\"]"));
	expect_body(REQ(",\"stop\":null"), &opts, WANT(""));
	expect_body(REQ(",\"stop\":[]"), &opts, WANT(""));
	expect_refused(REQ(",\"stop\":5"), "stop", "a string or an array of strings");
	expect_refused(REQ(",\"stop\":[\"a\",1]"), "stop", "a string or an array of strings");
}

Test(anthropic_request, stream_n_and_user, .timeout = 10)
{
	expect_body(REQ(",\"stream\":true,\"stream_options\":{\"include_usage\":true}"), &opts,
		    WANT(",\"stream\":true"));
	expect_body(REQ(",\"stream\":false"), &opts, WANT(",\"stream\":false"));
	expect_body(REQ(",\"n\":1"), &opts, WANT(""));
	expect_body(REQ(",\"n\":null"), &opts, WANT(""));
	expect_refused(REQ(",\"n\":2"), "n", "'n' other than 1");
	expect_refused(REQ(",\"n\":\"1\""), "n", "'n' other than 1");
	expect_body(REQ(",\"user\":\"u-42\""), &opts, WANT(",\"metadata\":{\"user_id\":\"u-42\"}"));
	expect_body(REQ(",\"user\":null"), &opts, WANT(""));
	expect_refused(REQ(",\"user\":42"), "user", "'user' must be a string");
}

Test(anthropic_request, dropped_members_leave_nothing, .timeout = 10)
{
	expect_body(REQ(",\"seed\":7,\"service_tier\":\"auto\",\"store\":true,"
			"\"metadata\":{\"k\":\"v\"},\"reasoning_effort\":\"low\",\"whatever\":[1],"
			"\"presence_penalty\":0,\"frequency_penalty\":null,"
			"\"stream_options\":null,\"modalities\":[\"text\"],\"logprobs\":false,"
			"\"parallel_tool_calls\":false,\"tools\":null,\"tool_choice\":null,"
			"\"functions\":null,\"function_call\":null,\"top_logprobs\":null,"
			"\"logit_bias\":null,\"audio\":null,\"prediction\":null,\"modalities\":null"),
		    &opts, WANT(""));
}

Test(anthropic_request, untranslated_members_refused, .timeout = 10)
{
	static const struct {
		const char *member;
		const char *value;
	} cases[] = {
		{ "tools", "[{\"type\":\"function\",\"function\":{\"name\":\"f\"}}]" },
		{ "tools", "[]" },
		{ "tool_choice", "\"auto\"" },
		{ "functions", "[{\"name\":\"f\"}]" },
		{ "function_call", "\"auto\"" },
		{ "parallel_tool_calls", "true" },
		{ "logprobs", "true" },
		{ "top_logprobs", "3" },
		{ "logit_bias", "{\"50256\":-100}" },
		{ "audio", "{\"voice\":\"alloy\",\"format\":\"wav\"}" },
		{ "prediction", "{\"type\":\"content\",\"content\":\"x\"}" },
		{ "modalities", "[\"text\",\"audio\"]" },
		{ "modalities", "[\"audio\"]" },
		{ "modalities", "\"text\"" },
		{ "presence_penalty", "0.5" },
		{ "frequency_penalty", "-1" },
		{ "frequency_penalty", "\"0\"" },
	};
	char json[512];
	char needle[64];
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(json, sizeof(json), REQ(",\"%s\":%s"), cases[i].member, cases[i].value);
		snprintf(needle, sizeof(needle), "'%s'", cases[i].member);
		expect_refused(json, cases[i].member, needle);
		expect_refused(json, cases[i].member, "cannot be sent to an Anthropic target");
	}
}

Test(anthropic_request, response_format_becomes_output_config, .timeout = 10)
{
	struct anth_req_opts o = opts;

	expect_body(REQ(",\"response_format\":{\"type\":\"text\"}"), &opts, WANT(""));
	expect_body(REQ(",\"response_format\":null"), &opts, WANT(""));
	expect_body(REQ(",\"response_format\":{\"type\":\"json_object\"}"), &opts,
		    WANT(",\"output_config\":{\"format\":{\"type\":\"json_schema\","
			 "\"schema\":{\"type\":\"object\"}}}"));
	expect_body(REQ(",\"response_format\":{\"type\":\"json_schema\",\"json_schema\":"
			"{\"name\":\"a\",\"strict\":true,\"schema\":{\"type\":\"object\","
			"\"properties\":{\"n\":{\"type\":\"number\",\"maximum\":1e300,"
			"\"minimum\":0.1}},\"required\":[\"n\"]}}}"), &opts,
		    WANT(",\"output_config\":{\"format\":{\"type\":\"json_schema\","
			 "\"schema\":{\"type\":\"object\",\"properties\":{\"n\":{\"type\":"
			 "\"number\",\"maximum\":1e300,\"minimum\":0.1}},\"required\":[\"n\"]}}}"));
	o.add_rf = "{\"type\":\"json_object\"}";
	expect_body(REQ(""), &o,
		    WANT(",\"output_config\":{\"format\":{\"type\":\"json_schema\","
			 "\"schema\":{\"type\":\"object\"}}}"));
	expect_body(REQ(",\"response_format\":{\"type\":\"text\"}"), &o, WANT(""));
	o.add_rf = "{\"type\":";
	{
		struct buf out = { 0 };
		struct anth_refusal why;

		cr_assert_eq(translate(REQ(""), &o, &out, &why), -EINVAL);
		cr_expect_str_eq(why.param, "response_format");
		cr_expect_not_null(strstr(why.message, "not JSON"), "%s", why.message);
		buf_free(&out);
	}
}

Test(anthropic_request, response_format_refused, .timeout = 10)
{
	expect_refused(REQ(",\"response_format\":{\"type\":\"json_xml\"}"), "response_format",
		       "response_format type 'json_xml' cannot be sent");
	expect_refused(REQ(",\"response_format\":{\"type\":\"json_schema\"}"), "response_format",
		       "json_schema.schema");
	expect_refused(REQ(",\"response_format\":{\"type\":\"json_schema\",\"json_schema\":"
			   "{\"schema\":true}}"), "response_format", "json_schema.schema");
	expect_refused(REQ(",\"response_format\":\"json_object\""), "response_format",
		       "an object with a string type");
	expect_refused(REQ(",\"response_format\":{}"), "response_format", "string type");
	expect_refused(REQ(",\"response_format\":{\"type\":\"json_schema\",\"json_schema\":"
			   "{\"schema\":{\"maximum\":1e400}}}"), "response_format",
		       "too large to write");
}

Test(anthropic_request, text_survives_non_ascii_and_escapes, .timeout = 10)
{
	expect_body("{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":"
		    "\"caf\\u00e9 \\u2615 \\ud83d\\ude00 \\\"q\\\" \\\\ \\n\"}]}", &opts,
		    "{\"model\":\"claude-x\",\"max_tokens\":1000,\"messages\":[{\"role\":\"user\","
		    "\"content\":\"caf\xc3\xa9 \xe2\x98\x95 \xf0\x9f\x98\x80 \\\"q\\\" \\\\ \\n\"}]}");
}

/* ---- the answer ---- */

#define MESSAGE(content, stop, usage) \
	"{\"id\":\"msg_01XFDUDYJgAACzvnptvVoYEL\",\"type\":\"message\",\"role\":\"assistant\"," \
	"\"model\":\"claude-sonnet-4-5\",\"content\":" content ",\"stop_reason\":" stop \
	",\"stop_sequence\":null,\"usage\":" usage "}"

/*
 * Translates body; asserts it is taken, and that the usage handed back is
 * the completion's; returns the completion parsed.
 */
static cJSON *answer(const char *body, struct buf *out)
{
	int64_t usage[2] = { -1, -1 };
	const cJSON *u;
	cJSON *c;

	buf_reset(out);
	cr_assert_eq(anth_response(body, strlen(body), 1700000000, out, usage), 0, "%s", body);
	c = json_parse_whole(out->data, out->len);
	cr_assert_not_null(c, "the completion is JSON: %s", out->data);
	u = cJSON_GetObjectItemCaseSensitive(c, "usage");
	cr_assert_eq((double)usage[0],
		     cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(u, "prompt_tokens")),
		     "usage[0] %lld: %s", (long long)usage[0], out->data);
	cr_assert_eq((double)usage[1],
		     cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(u, "completion_tokens")),
		     "usage[1] %lld: %s", (long long)usage[1], out->data);
	return c;
}

Test(anthropic_answer, a_real_message_becomes_a_chat_completion, .timeout = 10)
{
	struct buf out = { 0 };
	cJSON *c = answer(MESSAGE("[{\"type\":\"thinking\",\"thinking\":\"hm\",\"signature\":\"s\"},"
				  "{\"type\":\"text\",\"text\":\"Hello\"},"
				  "{\"type\":\"text\",\"text\":\", world\"}]", "\"end_turn\"",
				  "{\"input_tokens\":12,\"cache_creation_input_tokens\":100,"
				  "\"cache_read_input_tokens\":1000,\"output_tokens\":6,"
				  "\"service_tier\":\"standard\"}"), &out);
	cJSON *want = cJSON_Parse(
		"{\"id\":\"msg_01XFDUDYJgAACzvnptvVoYEL\",\"object\":\"chat.completion\","
		"\"created\":1700000000,\"model\":\"claude-sonnet-4-5\",\"choices\":[{\"index\":0,"
		"\"message\":{\"role\":\"assistant\",\"content\":\"Hello, world\"},"
		"\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":1112,"
		"\"completion_tokens\":6,\"total_tokens\":1118}}");
	int64_t in = 0;
	int64_t tout = 0;
	const cJSON *choices = cJSON_GetObjectItem(c, "choices");

	cr_expect(cJSON_Compare(c, want, true), "gave %s", out.data);
	/* What leg.c's check_completion asks of a 2xx body. */
	cr_assert(cJSON_IsObject(c) && cJSON_IsArray(choices) && cJSON_GetArraySize(choices) > 0);
	relay_usage_tokens(json_get((struct json_span){ out.data, out.len }, "usage"), &in, &tout);
	cr_expect_eq(in, 1112);
	cr_expect_eq(tout, 6);
	cJSON_Delete(c);
	cJSON_Delete(want);
	buf_free(&out);
}

Test(anthropic_answer, each_stop_reason, .timeout = 10)
{
	static const struct {
		const char *stop;
		const char *finish;
	} cases[] = {
		{ "\"end_turn\"", "stop" },
		{ "\"stop_sequence\"", "stop" },
		{ "\"pause_turn\"", "stop" },
		{ "\"max_tokens\"", "length" },
		{ "\"model_context_window_exceeded\"", "length" },
		{ "\"tool_use\"", "tool_calls" },
		{ "\"refusal\"", "content_filter" },
		{ "null", "stop" },
		{ "\"something_new\"", "stop" },
		{ "7", "stop" },
	};
	char body[512];
	struct buf out = { 0 };
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cJSON *c;
		const cJSON *fin;

		snprintf(body, sizeof(body), MESSAGE("[]", "%s", "{}"), cases[i].stop);
		c = answer(body, &out);
		fin = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(c, "choices"), 0),
					  "finish_reason");
		cr_assert(cJSON_IsString(fin), "%s", out.data);
		cr_expect_str_eq(fin->valuestring, cases[i].finish, "stop_reason %s", cases[i].stop);
		cJSON_Delete(c);
	}
	buf_free(&out);
}

Test(anthropic_answer, garbage_usage_counts_as_0, .timeout = 10)
{
	static const struct {
		const char *usage;
		int64_t in;
		int64_t out;
	} cases[] = {
		{ "{\"input_tokens\":\"12\",\"output_tokens\":-5}", 0, 0 },
		{ "{\"input_tokens\":1e20,\"cache_read_input_tokens\":3,\"output_tokens\":true}", 3,
		  0 },
		{ "{\"input_tokens\":2.9,\"cache_creation_input_tokens\":null,\"output_tokens\":4}", 2,
		  4 },
		{ "null", 0, 0 },
		{ "[1,2]", 0, 0 },
	};
	char body[512];
	struct buf out = { 0 };
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int64_t in = -1;
		int64_t tout = -1;
		const cJSON *usage;
		cJSON *c;

		snprintf(body, sizeof(body), MESSAGE("[]", "null", "%s"), cases[i].usage);
		c = answer(body, &out);
		usage = cJSON_GetObjectItem(c, "usage");
		relay_usage_tokens(json_get((struct json_span){ out.data, out.len }, "usage"), &in,
				   &tout);
		cr_expect_eq(in, cases[i].in, "%s: %s", cases[i].usage, out.data);
		cr_expect_eq(tout, cases[i].out, "%s: %s", cases[i].usage, out.data);
		cr_expect_eq(cJSON_GetObjectItem(usage, "total_tokens")->valuedouble,
			     (double)(cases[i].in + cases[i].out));
		cJSON_Delete(c);
	}
	buf_free(&out);
}

Test(anthropic_answer, no_text_is_empty_content_and_id_model_default, .timeout = 10)
{
	struct buf out = { 0 };
	cJSON *c = answer("{\"type\":\"message\",\"content\":[{\"type\":\"tool_use\",\"id\":\"t\","
			  "\"name\":\"f\",\"input\":{}}],\"stop_reason\":\"tool_use\"}", &out);
	cJSON *want = cJSON_Parse(
		"{\"id\":\"\",\"object\":\"chat.completion\",\"created\":1700000000,\"model\":\"\","
		"\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":\"\"},"
		"\"finish_reason\":\"tool_calls\"}],\"usage\":{\"prompt_tokens\":0,"
		"\"completion_tokens\":0,\"total_tokens\":0}}");

	cr_expect(cJSON_Compare(c, want, true), "gave %s", out.data);
	cJSON_Delete(c);
	cJSON_Delete(want);
	buf_free(&out);
}

Test(anthropic_answer, text_keeps_nul_non_ascii_and_control_bytes, .timeout = 10)
{
	/* A raw tab inside a string: cJSON takes it; the output escapes it. */
	static const char body[] = MESSAGE("[{\"type\":\"text\",\"text\":\"a\\u0000b "
					   "caf\\u00e9 \xe2\x98\x95\t\\ud83d\\ude00\"}]",
					   "\"end_turn\"", "{}");
	struct buf out = { 0 };
	struct buf content = { 0 };
	size_t a = 0;
	size_t e = 0;
	cJSON *c = answer(body, &out);

	cr_assert_not_null(strstr(out.data, "\"content\":\"a\\u0000b caf\xc3\xa9 \xe2\x98\x95\\t"
					    "\xf0\x9f\x98\x80\""), "%s", out.data);
	/* Read back whole (cJSON would stop at the NUL). */
	cr_assert_not_null(c);
	cr_assert_eq(json_member_span(out.data, out.len, "choices", &a, &e), 0);
	cr_assert_eq(json_unescape(&content, "a\\u0000b", 8), 0);
	cr_expect_eq(content.len, 3);
	cJSON_Delete(c);
	buf_free(&content);
	buf_free(&out);
}

Test(anthropic_answer, not_a_message_is_invalid, .timeout = 10)
{
	static const char *const bad[] = {
		"",
		"not json",
		"[]",
		"\"message\"",
		"{\"type\":\"message\"}",
		"{\"type\":\"message\",\"content\":\"hi\"}",
		"{\"type\":\"message\",\"content\":null}",
		"{\"content\":[]}",
		"{\"type\":\"error\",\"error\":{\"type\":\"api_error\",\"message\":\"x\"}}",
		"{\"type\":\"message\",\"content\":[]} trailing",
		"{\"type\":\"message\",\"content\":[{\"type\":\"text\",\"text\":5}]}",
		"{\"type\":\"message\",\"content\":[{\"type\":\"text\",\"text\":\"a\",\"text\":\"b\"}]}",
		"{\"type\":\"message\",\"content\":[],\"content\":[]}",
	};
	struct buf out = { 0 };
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		buf_reset(&out);
		cr_expect_eq(anth_response(bad[i], strlen(bad[i]), 1, &out, NULL), -EINVAL, "%s", bad[i]);
	}
	buf_free(&out);
}

/*
 * The answer is read by its bytes, not parsed into a tree; what it says
 * must still be what cJSON would read: escaped keys and values decoded, the
 * first of a repeated member taken (content aside: one only), an id or
 * model cut at a \u0000 as cJSON's text is (a content text kept whole),
 * blocks that are not objects or not text passed over, white space
 * anywhere JSON allows it.
 */
Test(anthropic_answer, read_by_its_bytes_as_cjson_reads_it, .timeout = 10)
{
	static const char body[] =
		" { \"typ\\u0065\" : \"mess\\u0061ge\" , \"type\" : \"error\" ,"
		" \"id\" : \"msg_a\\u0000b\" , \"model\" : \"cl\\u00e9\\\"de\" ,"
		" \"content\" : [ 5 , null , [ ] , { \"type\" : \"image\" } ,"
		" { \"text\" : \"no type\" } ,"
		" { \"t\\u0079pe\" : \"te\\u0078t\" , \"text\" : \"x\\u0000y\\n\" } ,"
		" { \"type\" : \"text\" , \"type\" : \"tool_use\" , \"text\" : \"z\" } ] ,"
		" \"stop_reason\" : \"max_\\u0074okens\" , \"stop_reason\" : \"end_turn\" ,"
		" \"usage\" : { \"output_tokens\" : 3 , \"output_tokens\" : 9 ,"
		" \"input_\\u0074okens\" : 1.5e1 , \"cache_read_input_tokens\" : -2 } } ";
	struct buf out = { 0 };
	cJSON *c = answer(body, &out);
	const cJSON *choice = cJSON_GetArrayItem(cJSON_GetObjectItem(c, "choices"), 0);
	const cJSON *msg = cJSON_GetObjectItem(choice, "message");
	const cJSON *content = cJSON_GetObjectItem(msg, "content");
	const cJSON *usage = cJSON_GetObjectItem(c, "usage");

	cr_expect_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(c, "id")), "msg_a", "%s", out.data);
	cr_expect_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(c, "model")), "cl\xc3\xa9\"de",
			 "%s", out.data);
	cr_assert(cJSON_IsString(content), "%s", out.data);
	/* "x\0y\nz": the NUL kept, written as \u0000 */
	cr_expect_not_null(strstr(out.data, "\"content\":\"x\\u0000y\\nz\""), "%s", out.data);
	cr_expect_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(choice, "finish_reason")),
			 "length", "%s", out.data);
	cr_expect_eq(cJSON_GetNumberValue(cJSON_GetObjectItem(usage, "prompt_tokens")), 15,
		     "%s", out.data);
	cr_expect_eq(cJSON_GetNumberValue(cJSON_GetObjectItem(usage, "completion_tokens")), 3,
		     "%s", out.data);
	cr_expect_eq(cJSON_GetNumberValue(cJSON_GetObjectItem(usage, "total_tokens")), 18,
		     "%s", out.data);
	cJSON_Delete(c);
	buf_free(&out);
}

/* A type or a content member that only reads as the right one up to a \u0000 is not one. */
Test(anthropic_answer, a_type_cut_at_nul_is_cjsons_reading, .timeout = 10)
{
	static const char *const ok[] = {
		"{\"type\":\"message\\u0000junk\",\"content\":[]}",
		"{\"type\":\"message\",\"content\":[{\"type\":\"text\\u0000x\",\"text\":\"a\"}]}",
	};
	static const char *const bad[] = {
		"{\"type\":\"messag\",\"content\":[]}",
		"{\"type\":\"messages\",\"content\":[]}",
		"{\"type\":\"\\u0000message\",\"content\":[]}",
		"{\"type\":[\"message\"],\"content\":[]}",
		"{\"type\":\"message\",\"content\":{}}",
		"{\"type\":\"message\",\"con\\u0074ent\":[],\"content\":[]}",
	};
	struct buf out = { 0 };
	size_t i;

	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		buf_reset(&out);
		cr_expect_eq(anth_response(ok[i], strlen(ok[i]), 1, &out, NULL), 0, "%s", ok[i]);
	}
	cr_expect_not_null(strstr(out.data, "\"content\":\"a\""), "%s", out.data);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		buf_reset(&out);
		cr_expect_eq(anth_response(bad[i], strlen(bad[i]), 1, &out, NULL), -EINVAL, "%s",
			     bad[i]);
	}
	buf_free(&out);
}

Test(anthropic_answer, reads_only_len_bytes, .timeout = 10)
{
	static const char body[] = "{\"type\":\"message\",\"content\":[]}GARBAGE";
	struct buf out = { 0 };

	cr_expect_eq(anth_response(body, strlen(body) - 7, 1, &out, NULL), 0);
	buf_reset(&out);
	cr_expect_eq(anth_response(body, strlen(body), 1, &out, NULL), -EINVAL);
	buf_free(&out);
}

/* ---- errors ---- */

Test(anthropic_error, an_error_body_becomes_openais, .timeout = 10)
{
	static const char body[] = "{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\","
				   "\"message\":\"Overloaded \\\"now\\\"\"},\"request_id\":\"req_1\"}";
	struct buf out = { 0 };

	cr_assert_eq(anth_error(body, strlen(body), &out), 0);
	cr_expect_str_eq(out.data, "{\"error\":{\"message\":\"Overloaded \\\"now\\\"\","
				   "\"type\":\"overloaded_error\",\"param\":null,\"code\":null}}");
	buf_free(&out);
}

Test(anthropic_error, anything_else_is_invalid, .timeout = 10)
{
	static const char *const bad[] = {
		"",
		"Bad Gateway",
		"{\"error\":{\"type\":\"x\",\"message\":\"m\"}}",
		"{\"type\":\"message\",\"error\":{\"type\":\"x\",\"message\":\"m\"}}",
		"{\"type\":\"error\",\"error\":\"m\"}",
		"{\"type\":\"error\",\"error\":{\"message\":\"m\"}}",
		"{\"type\":\"error\",\"error\":{\"type\":\"x\"}}",
		"{\"type\":\"error\",\"error\":{\"type\":\"x\",\"message\":3}}",
		"[{\"type\":\"error\"}]",
	};
	struct buf out = { 0 };
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_expect_eq(anth_error(bad[i], strlen(bad[i]), &out), -EINVAL, "%s", bad[i]);
	cr_expect_eq(out.len, 0, "nothing appended");
	buf_free(&out);
}

/* ---- the stream ---- */

#define EV(name, data) "event: " name "\ndata: " data "\n\n"

/* An Anthropic stream as the API sends it: thinking, then text, then the end. */
static const char real_stream[] =
	EV("message_start", "{\"type\":\"message_start\",\"message\":{\"id\":\"msg_1nZd\","
	   "\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"claude-opus-4-6\","
	   "\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":25,"
	   "\"cache_creation_input_tokens\":10,\"cache_read_input_tokens\":5,\"output_tokens\":1}}}")
	EV("content_block_start", "{\"type\":\"content_block_start\",\"index\":0,"
	   "\"content_block\":{\"type\":\"thinking\",\"thinking\":\"\"}}")
	EV("ping", "{\"type\": \"ping\"}")
	EV("content_block_delta", "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":"
	   "{\"type\":\"thinking_delta\",\"thinking\":\"Let me see.\"}}")
	EV("content_block_delta", "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":"
	   "{\"type\":\"signature_delta\",\"signature\":\"EqQB\"}}")
	EV("content_block_stop", "{\"type\":\"content_block_stop\",\"index\":0}")
	EV("content_block_start", "{\"type\":\"content_block_start\",\"index\":1,"
	   "\"content_block\":{\"type\":\"text\",\"text\":\"\"}}")
	EV("content_block_delta", "{\"type\":\"content_block_delta\",\"index\":1,\"delta\":"
	   "{\"type\":\"text_delta\",\"text\":\"Hello\"}}")
	EV("content_block_delta", "{\"type\":\"content_block_delta\",\"index\":1,\"delta\":"
	   "{\"type\":\"text_delta\",\"text\":\"\"}}")
	EV("content_block_delta", "{\"type\":\"content_block_delta\",\"index\":1,\"delta\":"
	   "{\"type\":\"text_delta\",\"text\":\", \\\"w\\\"\\n\"}}")
	EV("content_block_stop", "{\"type\":\"content_block_stop\",\"index\":1}")
	EV("message_delta", "{\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\","
	   "\"stop_sequence\":null},\"usage\":{\"output_tokens\":15}}")
	EV("message_stop", "{\"type\":\"message_stop\"}");

/* What each of real_stream's 13 events gives. */
static const int real_codes[] = {
	ANTH_EV_CHUNK, ANTH_EV_NONE, ANTH_EV_NONE, ANTH_EV_NONE, ANTH_EV_NONE, ANTH_EV_NONE,
	ANTH_EV_NONE, ANTH_EV_CHUNK, ANTH_EV_NONE, ANTH_EV_CHUNK, ANTH_EV_NONE, ANTH_EV_CHUNK,
	ANTH_EV_DONE,
};

#define HEAD "data: {\"id\":\"msg_1nZd\",\"object\":\"chat.completion.chunk\"," \
	"\"created\":1700000000,\"model\":\"claude-opus-4-6\","
#define ROLE HEAD "\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}," \
	"\"finish_reason\":null}]}\n\n"
#define TEXT(t) HEAD "\"choices\":[{\"index\":0,\"delta\":{\"content\":\"" t "\"}," \
	"\"finish_reason\":null}]}\n\n"
#define FIN(r) HEAD "\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"" r "\"}]}\n\n"
#define USAGE(p, c, t) HEAD "\"choices\":[],\"usage\":{\"prompt_tokens\":" p \
	",\"completion_tokens\":" c ",\"total_tokens\":" t "}}\n\n"
#define DONE "data: [DONE]\n\n"

/* A stream fed through common/sse into the translation, each event's result noted. */
struct run {
	struct anth_stream s;
	struct buf out;
	int codes[64];
	struct anth_ev_facts facts[64];
	size_t n;
};

static int on_event(void *ctx, const struct sse_event *ev)
{
	struct run *r = ctx;
	int rc;

	cr_assert_lt(r->n, 64);
	rc = anth_stream_event(&r->s, ev->event, ev->data, ev->data_len, &r->out,
			       &r->facts[r->n]);
	cr_assert_geq(rc, 0);
	r->codes[r->n++] = rc;
	return 0;
}

/* Feeds text (first bytes, then the rest in pieces of step) with include_usage as given. */
static void run_stream(struct run *r, bool usage, const char *text, size_t first, size_t step)
{
	struct sse_parser p;
	size_t n = strlen(text);
	size_t off;

	memset(r, 0, sizeof(*r));
	anth_stream_init(&r->s, usage, 1700000000);
	sse_init(&p, on_event, r);
	cr_assert_eq(sse_feed(&p, text, first < n ? first : n), 0);
	for (off = first; off < n; off += step)
		cr_assert_eq(sse_feed(&p, text + off, step < n - off ? step : n - off), 0);
	cr_assert_not(sse_pending(&p));
	sse_free_parser(&p);
}

Test(anthropic_stream, a_real_stream_gives_the_exact_chunks, .timeout = 10)
{
	struct run r;
	size_t i;

	run_stream(&r, false, real_stream, strlen(real_stream), 1);
	cr_assert_eq(r.n, 13);
	for (i = 0; i < r.n; i++)
		cr_expect_eq(r.codes[i], real_codes[i], "event %zu: %d", i, r.codes[i]);
	cr_assert_str_eq(r.out.data, ROLE TEXT("Hello") TEXT(", \\\"w\\\"\\n") FIN("stop") DONE);
	/* The facts: the role chunk does not commit; text and the finish do. */
	cr_expect_not(r.facts[0].commit);
	cr_expect(r.facts[7].text && r.facts[7].commit);
	cr_expect_not(r.facts[8].text || r.facts[8].commit, "an empty text is nothing");
	cr_expect_not(r.facts[11].text);
	cr_expect(r.facts[11].commit, "the finish commits");
	cr_expect(r.facts[12].commit);
	cr_expect(r.s.has_usage);
	cr_expect_eq(r.s.tokens_in, 40);
	cr_expect_eq(r.s.tokens_out, 15);
	cr_expect_str_eq(r.s.finish, "stop");
	buf_free(&r.out);
}

Test(anthropic_stream, include_usage_adds_the_usage_chunk, .timeout = 10)
{
	struct run r;

	run_stream(&r, true, real_stream, strlen(real_stream), 1);
	cr_assert_str_eq(r.out.data, ROLE TEXT("Hello") TEXT(", \\\"w\\\"\\n") FIN("stop")
				     USAGE("40", "15", "55") DONE);
	buf_free(&r.out);
}

Test(anthropic_stream, every_split_gives_the_same_chunks, .timeout = 10)
{
	static const char *const want = ROLE TEXT("Hello") TEXT(", \\\"w\\\"\\n") FIN("stop")
		USAGE("40", "15", "55") DONE;
	struct run r;
	size_t n = strlen(real_stream);
	size_t cut;
	char *crlf;
	size_t i;
	size_t j = 0;

	for (cut = 0; cut <= n; cut += 7) {
		run_stream(&r, true, real_stream, cut, n);
		cr_assert_str_eq(r.out.data, want, "cut at %zu", cut);
		buf_free(&r.out);
	}
	run_stream(&r, true, real_stream, 1, 1);
	cr_assert_str_eq(r.out.data, want, "byte by byte");
	buf_free(&r.out);
	/* CRLF line ends, as some proxies send them. */
	crlf = malloc(2 * n + 1);
	cr_assert_not_null(crlf);
	for (i = 0; i < n; i++) {
		if (real_stream[i] == '\n')
			crlf[j++] = '\r';
		crlf[j++] = real_stream[i];
	}
	crlf[j] = '\0';
	run_stream(&r, true, crlf, 3, 5);
	cr_assert_str_eq(r.out.data, want, "CRLF");
	buf_free(&r.out);
	free(crlf);
}

Test(anthropic_stream, the_relay_takes_the_translation, .timeout = 10)
{
	struct relay rel;
	struct run r;
	const char *p;
	const char *end;

	run_stream(&r, true, real_stream, strlen(real_stream), 1);
	relay_init(&rel);
	cr_assert_eq(relay_feed(&rel, r.out.data, r.out.len), 0);
	cr_expect(rel.done);
	cr_expect_eq(rel.brk, RELAY_OK);
	cr_expect(rel.content);
	cr_expect_eq(rel.content_chunks, 2);
	cr_expect(rel.has_usage);
	cr_expect_eq(rel.tokens_in, 40);
	cr_expect_eq(rel.tokens_out, 15);
	cr_expect_str_eq(rel.out.data, r.out.data, "the relay passes every chunk as it is");
	/* The role chunk alone does not commit the relay. */
	relay_reset(&rel);
	cr_assert_eq(relay_feed(&rel, ROLE, strlen(ROLE)), 0);
	cr_expect_not(rel.content);
	relay_free(&rel);
	/* Each chunk's data is one JSON value. */
	for (p = r.out.data; (end = strstr(p, "\n\n")); p = end + 2) {
		cJSON *v;

		cr_assert_eq(strncmp(p, "data: ", 6), 0);
		if (strncmp(p, DONE, strlen(DONE)) == 0)
			continue;
		v = parse_n(p + 6, (size_t)(end - p - 6));
		cr_expect_not_null(v, "%.*s", (int)(end - p), p);
		cJSON_Delete(v);
	}
	buf_free(&r.out);
}

/* One event into s; returns its code. */
static int event(struct anth_stream *s, const char *name, const char *data, struct buf *out,
		 struct anth_ev_facts *f)
{
	return anth_stream_event(s, name, data, strlen(data), out, f);
}

#define START "{\"type\":\"message_start\",\"message\":{\"id\":\"msg_1nZd\",\"type\":\"message\"," \
	"\"role\":\"assistant\",\"content\":[],\"model\":\"claude-opus-4-6\",\"usage\":" \
	"{\"input_tokens\":7,\"output_tokens\":1}}}"
#define DELTA(t) "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":" \
	"{\"type\":\"text_delta\",\"text\":\"" t "\"}}"
#define STOP "{\"type\":\"message_stop\"}"

Test(anthropic_stream, message_stop_without_message_delta_finishes_stop, .timeout = 10)
{
	struct anth_stream s;
	struct anth_ev_facts f;
	struct buf out = { 0 };

	anth_stream_init(&s, true, 1700000000);
	cr_assert_eq(event(&s, "message_start", START, &out, &f), ANTH_EV_CHUNK);
	cr_assert_eq(event(&s, "", DELTA("x"), &out, &f), ANTH_EV_CHUNK, "no event name: data.type");
	cr_assert_eq(event(&s, "message_stop", STOP, &out, &f), ANTH_EV_DONE);
	cr_expect(f.commit);
	cr_assert_str_eq(out.data, ROLE TEXT("x") FIN("stop") USAGE("7", "1", "8") DONE);
	cr_expect(s.stopped);
	/* After message_stop, nothing. */
	buf_reset(&out);
	cr_expect_eq(event(&s, "content_block_delta", DELTA("late"), &out, &f), ANTH_EV_NONE);
	cr_expect_eq(event(&s, "message_stop", STOP, &out, &f), ANTH_EV_NONE);
	cr_expect_eq(out.len, 0);
	buf_free(&out);
}

Test(anthropic_stream, stop_reasons_and_usage_of_message_delta, .timeout = 10)
{
	static const struct {
		const char *stop;
		const char *finish;
	} cases[] = {
		{ "\"max_tokens\"", "length" },
		{ "\"model_context_window_exceeded\"", "length" },
		{ "\"tool_use\"", "tool_calls" },
		{ "\"refusal\"", "content_filter" },
		{ "\"stop_sequence\"", "stop" },
		{ "\"pause_turn\"", "stop" },
		{ "null", "stop" },
	};
	struct anth_stream s;
	struct anth_ev_facts f;
	struct buf out = { 0 };
	char data[256];
	char want[512];
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		anth_stream_init(&s, false, 1700000000);
		cr_assert_eq(event(&s, "message_start", START, &out, &f), ANTH_EV_CHUNK);
		buf_reset(&out);
		snprintf(data, sizeof(data), "{\"type\":\"message_delta\",\"delta\":{\"stop_reason\":"
			 "%s},\"usage\":{\"output_tokens\":9,\"input_tokens\":20,"
			 "\"cache_read_input_tokens\":\"x\"}}", cases[i].stop);
		cr_assert_eq(event(&s, "message_delta", data, &out, &f), ANTH_EV_CHUNK);
		cr_expect(f.commit && !f.text);
		snprintf(want, sizeof(want), FIN("%s"), cases[i].finish);
		cr_expect_str_eq(out.data, want, "%s", cases[i].stop);
		cr_expect_eq(s.tokens_in, 20, "input_tokens of message_delta replace the start's");
		cr_expect_eq(s.tokens_out, 9);
		/* A second message_delta: usage only. */
		buf_reset(&out);
		cr_assert_eq(event(&s, "message_delta", "{\"type\":\"message_delta\",\"delta\":{},"
				   "\"usage\":{\"output_tokens\":11}}", &out, &f), ANTH_EV_NONE);
		cr_expect_eq(out.len, 0);
		cr_expect_eq(s.tokens_out, 11);
		cr_expect_eq(s.tokens_in, 20);
		buf_reset(&out);
	}
	buf_free(&out);
}

/*
 * MessageDeltaUsage's input counts may be null: a null keeps the count
 * message_start gave (as the SDK's MessageStream does), so the usage chunk
 * and the bill keep the prompt.
 */
Test(anthropic_stream, null_usage_counts_keep_the_start_s, .timeout = 10)
{
	struct anth_stream s;
	struct anth_ev_facts f;
	struct buf out = { 0 };

	anth_stream_init(&s, true, 1700000000);
	cr_assert_eq(event(&s, "message_start", "{\"type\":\"message_start\",\"message\":"
			   "{\"id\":\"m\",\"type\":\"message\",\"role\":\"assistant\","
			   "\"content\":[],\"model\":\"c\",\"usage\":{\"input_tokens\":25,"
			   "\"cache_read_input_tokens\":5,\"output_tokens\":1}}}", &out, &f),
		     ANTH_EV_CHUNK);
	cr_assert_eq(event(&s, "message_delta", "{\"type\":\"message_delta\",\"delta\":"
			   "{\"stop_reason\":\"end_turn\"},\"usage\":{\"input_tokens\":null,"
			   "\"cache_creation_input_tokens\":null,\"cache_read_input_tokens\":null,"
			   "\"output_tokens\":7}}", &out, &f), ANTH_EV_CHUNK);
	cr_expect_eq(s.tokens_in, 30, "tokens_in %lld", (long long)s.tokens_in);
	cr_expect_eq(s.tokens_out, 7);
	buf_reset(&out);
	cr_assert_eq(event(&s, "message_stop", "{\"type\":\"message_stop\"}", &out, &f),
		     ANTH_EV_DONE);
	cr_expect(strstr(out.data, "\"prompt_tokens\":30,\"completion_tokens\":7"), "%s", out.data);
	buf_free(&out);
}

Test(anthropic_stream, error_events, .timeout = 10)
{
	struct anth_stream s;
	struct anth_ev_facts f;
	struct buf out = { 0 };

	anth_stream_init(&s, false, 1);
	cr_assert_eq(event(&s, "message_start", START, &out, &f), ANTH_EV_CHUNK);
	buf_reset(&out);
	cr_expect_eq(event(&s, "error", "{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\","
			   "\"message\":\"Overloaded\"}}", &out, &f), ANTH_EV_ERROR);
	cr_expect_str_eq(f.message, "Overloaded");
	cr_expect_eq(event(&s, "", "{\"type\":\"error\",\"error\":{\"type\":\"api_error\","
			   "\"message\":\"Internal server error\"}}", &out, &f), ANTH_EV_ERROR,
		     "unnamed, data.type error");
	cr_expect_str_eq(f.message, "Internal server error");
	cr_expect_eq(event(&s, "error", "upstream went away", &out, &f), ANTH_EV_ERROR);
	cr_expect_str_eq(f.message, "upstream went away", "not JSON: the data itself");
	cr_expect_eq(event(&s, "error", "{\"type\":\"error\"}", &out, &f), ANTH_EV_ERROR);
	cr_expect_str_eq(f.message, "");
	/* Before message_start too. */
	anth_stream_init(&s, false, 1);
	cr_expect_eq(event(&s, "error", "{\"type\":\"error\",\"error\":{\"message\":\"early\"}}",
			   &out, &f), ANTH_EV_ERROR);
	cr_expect_str_eq(f.message, "early");
	cr_expect_eq(out.len, 0, "an error appends nothing");
	buf_free(&out);
}

Test(anthropic_stream, invalid_frames, .timeout = 10)
{
	static const struct {
		const char *name;
		const char *data;
	} after_start[] = {
		{ "content_block_delta", "{\"type\":\"content_block_delta\",\"delta\":" },
		{ "content_block_delta", "" },
		{ "ping", "ping" },
		{ "content_block_delta", "[1]" },
		{ "content_block_delta", "{\"index\":0}" },
		{ "message_delta", DELTA("x") },
		{ "", "{\"type\":5}" },
		{ "content_block_delta", "{\"type\":\"content_block_delta\",\"delta\":{}}" },
		{ "content_block_delta", "{\"type\":\"content_block_delta\",\"delta\":"
					 "{\"type\":\"text_delta\",\"text\":7}}" },
		{ "content_block_delta", "{\"type\":\"content_block_delta\",\"delta\":"
					 "{\"type\":\"text_delta\",\"text\":\"a\",\"text\":\"b\"}}" },
		{ "content_block_delta", "{\"type\":\"content_block_delta\",\"delta\":"
					 "{\"type\":\"text_delta\",\"text\":\"a\"},\"delta\":{}}" },
		{ "message_delta", "{\"type\":\"message_delta\"}" },
		{ "message_start", START },
	};
	static const char *const before_start[][2] = {
		{ "content_block_start", "{\"type\":\"content_block_start\",\"index\":0,"
					 "\"content_block\":{\"type\":\"text\",\"text\":\"\"}}" },
		{ "content_block_delta", DELTA("x") },
		{ "content_block_stop", "{\"type\":\"content_block_stop\",\"index\":0}" },
		{ "message_delta", "{\"type\":\"message_delta\",\"delta\":{}}" },
		{ "message_stop", STOP },
		{ "message_start", "{\"type\":\"message_start\"}" },
	};
	struct anth_stream s;
	struct anth_ev_facts f;
	struct buf out = { 0 };
	size_t i;

	for (i = 0; i < sizeof(after_start) / sizeof(after_start[0]); i++) {
		anth_stream_init(&s, false, 1);
		cr_assert_eq(event(&s, "message_start", START, &out, &f), ANTH_EV_CHUNK);
		buf_reset(&out);
		cr_expect_eq(event(&s, after_start[i].name, after_start[i].data, &out, &f),
			     ANTH_EV_INVALID, "%s: %s", after_start[i].name, after_start[i].data);
		cr_expect_eq(out.len, 0, "%s: nothing appended", after_start[i].data);
	}
	for (i = 0; i < sizeof(before_start) / sizeof(before_start[0]); i++) {
		anth_stream_init(&s, false, 1);
		cr_expect_eq(event(&s, before_start[i][0], before_start[i][1], &out, &f),
			     ANTH_EV_INVALID, "before message_start: %s", before_start[i][1]);
		cr_expect_not(s.started);
	}
	cr_expect_eq(out.len, 0);
	buf_free(&out);
}

Test(anthropic_stream, ping_and_unknown_events_are_nothing, .timeout = 10)
{
	struct anth_stream s;
	struct anth_ev_facts f;
	struct buf out = { 0 };

	anth_stream_init(&s, false, 1);
	cr_expect_eq(event(&s, "ping", "{\"type\":\"ping\"}", &out, &f), ANTH_EV_NONE,
		     "a ping before message_start");
	cr_expect_eq(event(&s, "brand_new", "{\"type\":\"brand_new\",\"x\":1}", &out, &f),
		     ANTH_EV_NONE);
	cr_expect_eq(event(&s, "message", START, &out, &f), ANTH_EV_CHUNK,
		     "\"message\" is SSE's name for none");
	buf_reset(&out);
	cr_expect_eq(event(&s, "content_block_delta", "{\"type\":\"content_block_delta\","
			   "\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\"}}",
			   &out, &f), ANTH_EV_NONE);
	cr_expect_eq(event(&s, "content_block_delta", "{\"type\":\"content_block_delta\","
			   "\"delta\":{\"type\":\"citations_delta\",\"citation\":{}}}", &out, &f),
		     ANTH_EV_NONE);
	cr_expect_eq(event(&s, "content_block_delta", DELTA(""), &out, &f), ANTH_EV_NONE);
	cr_expect_not(f.text || f.commit);
	cr_expect_eq(out.len, 0);
	buf_free(&out);
}

Test(anthropic_stream, text_keeps_nul_and_non_ascii, .timeout = 10)
{
	static const char data[] = DELTA("a\\u0000b caf\\u00e9 \xe2\x98\x95 \\ud83d\\ude00\r");
	struct anth_stream s;
	struct anth_ev_facts f;
	struct buf out = { 0 };
	struct buf back = { 0 };
	size_t a = 0;
	size_t e = 0;
	const char *p;
	cJSON *v;

	anth_stream_init(&s, false, 1700000000);
	cr_assert_eq(event(&s, "message_start", START, &out, &f), ANTH_EV_CHUNK);
	buf_reset(&out);
	/* The data given without its NUL terminator: only len bytes are read. */
	cr_assert_eq(anth_stream_event(&s, "content_block_delta", data, sizeof(data) - 1, &out,
				       &f), ANTH_EV_CHUNK);
	cr_assert(f.text);
	cr_assert_str_eq(out.data, TEXT("a\\u0000b caf\xc3\xa9 \xe2\x98\x95 \xf0\x9f\x98\x80\\r"));
	/* Read back: the whole text, NUL included. */
	p = out.data + 6;
	v = parse_n(p, strlen(p) - 2);
	cr_assert_not_null(v);
	cJSON_Delete(v);
	p = strstr(out.data, "\"content\":") + 10;
	e = (size_t)(strstr(p, "\"}") + 1 - p);
	cr_assert_eq(json_unescape(&back, p + a, e), 0);
	cr_expect_eq(back.len, 3 + 1 + 5 + 1 + 3 + 1 + 4 + 1);
	cr_expect_eq(memcmp(back.data, "a\0b caf\xc3\xa9 \xe2\x98\x95 \xf0\x9f\x98\x80\r", back.len), 0);
	buf_free(&back);
	buf_free(&out);
}

Test(anthropic_stream, id_and_model_escaped_and_cut_to_fit, .timeout = 10)
{
	struct anth_stream s;
	struct anth_ev_facts f;
	struct buf out = { 0 };
	struct buf data = { 0 };
	cJSON *v;
	int i;

	cr_assert_eq(buf_puts(&data, "{\"type\":\"message_start\",\"message\":{\"id\":\"m\\\"1\","
				     "\"model\":\""), 0);
	for (i = 0; i < 300; i++)
		cr_assert_eq(buf_puts(&data, "\\\"\\u00e9"), 0);
	cr_assert_eq(buf_puts(&data, "\"}}"), 0);
	anth_stream_init(&s, false, 1);
	cr_assert_eq(anth_stream_event(&s, "message_start", data.data, data.len, &out, &f),
		     ANTH_EV_CHUNK);
	cr_expect_str_eq(s.id, "m\\\"1");
	cr_expect_lt(strlen(s.model), sizeof(s.model));
	cr_expect_gt(strlen(s.model), 100, "cut, not emptied: %zu", strlen(s.model));
	v = parse_n(out.data + 6, out.len - 8);
	cr_expect_not_null(v, "the chunk is still JSON: %s", out.data);
	cJSON_Delete(v);
	buf_free(&data);
	buf_free(&out);
}
