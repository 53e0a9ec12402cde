/*
 * body: the bodies loadgen sends — a one-question stream's the same bytes
 * every time (as loadgen always built them), response_format copied in,
 * and the question each request of a stream asking several (or one per
 * request) asks, in its prompt's mark.
 */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loadgen/body.h"

static struct body_tpl tpl;
static struct buf out;

static void teardown(void)
{
	body_tpl_free(&tpl);
	buf_free(&out);
}

TestSuite(body, .fini = teardown, .timeout = 10);

/* A stream of model m, prompt_tokens words, max_tokens 16, response_format rf (may be NULL). */
static struct mix_stream stream_of(const char *m, int64_t words, int64_t prompts, char *rf)
{
	return (struct mix_stream){
		.name = "s",
		.model = (char *)m,
		.prompt_tokens = words,
		.prompts = prompts,
		.max_tokens = 16,
		.response_format = rf,
	};
}

/* The message content of body (parsed), copied to text. */
static void content_of(const char *body, char *text, size_t len)
{
	cJSON *root = cJSON_Parse(body);
	const cJSON *msg;
	const cJSON *c;

	cr_assert_not_null(root, "not JSON: %s", body);
	msg = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(root, "messages"), 0);
	c = cJSON_GetObjectItemCaseSensitive(msg, "content");
	cr_assert(cJSON_IsString(c), "%s", body);
	snprintf(text, len, "%s", c->valuestring);
	cJSON_Delete(root);
}

Test(body, one_question_is_the_body_loadgen_always_sent)
{
	struct mix_stream s = stream_of("chat", 3, 1, NULL);

	cr_assert_eq(body_tpl_init(&tpl, &s, false), 0);
	cr_assert_str_eq(tpl.whole, "{\"model\":\"chat\",\"messages\":[{\"role\":\"user\","
			 "\"content\":\"the quick brown\"}],\"max_tokens\":16}");
	cr_assert_eq(tpl.len, strlen(tpl.whole));
	cr_assert_eq(body_build(&tpl, 1, 0, "1", &out), 0);
	cr_assert_str_eq(out.data, tpl.whole);
	cr_assert_eq(body_build(&tpl, 1, 12345, "x-9", &out), 0);
	cr_assert_str_eq(out.data, tpl.whole);
	body_tpl_free(&tpl);

	cr_assert_eq(body_tpl_init(&tpl, &s, true), 0);
	cr_assert_str_eq(tpl.whole, "{\"model\":\"chat\",\"messages\":[{\"role\":\"user\","
			 "\"content\":\"the quick brown\"}],\"max_tokens\":16,\"stream\":true,"
			 "\"stream_options\":{\"include_usage\":true}}");
}

Test(body, response_format_goes_in_as_given)
{
	char rf[] = "{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"answer\","
		    "\"schema\":{\"type\":\"object\"}}}";
	struct mix_stream s = stream_of("m\"odel", 1, 1, rf);
	cJSON *root;
	char *printed;

	cr_assert_eq(body_tpl_init(&tpl, &s, true), 0);
	cr_assert_str_eq(tpl.whole, "{\"model\":\"m\\\"odel\",\"messages\":[{\"role\":\"user\","
			 "\"content\":\"the\"}],\"max_tokens\":16,\"response_format\":"
			 "{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"answer\","
			 "\"schema\":{\"type\":\"object\"}}},\"stream\":true,"
			 "\"stream_options\":{\"include_usage\":true}}");
	root = cJSON_Parse(tpl.whole);
	cr_assert_not_null(root);
	printed = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(root,
									  "response_format"));
	cr_assert_str_eq(printed, rf);
	free(printed);
	cJSON_Delete(root);
}

Test(body, question_selection)
{
	uint64_t k;

	for (k = 0; k < 10; k++) {
		cr_assert_eq(body_question(1, k), 0);
		cr_assert_eq(body_question(3, k), (int64_t)(k % 3));
		cr_assert_eq(body_question(0, k), BODY_OWN_QUESTION);
	}
	cr_assert_eq(body_question(1000000000, 999999999), 999999999);
	cr_assert_eq(body_question(1000000000, 1000000000), 0);
	cr_assert_eq(body_question(2, UINT64_MAX), 1);
	cr_assert(!body_varies(1));
	cr_assert(body_varies(0));
	cr_assert(body_varies(2));
}

/* prompts 3: request k asks question k mod 3, marked at the prompt's end; the rest is the same. */
Test(body, several_questions_mark_the_prompt)
{
	struct mix_stream s = stream_of("chat", 2, 3, NULL);
	char bodies[6][256];
	char text[256];
	uint64_t k;

	cr_assert_eq(body_tpl_init(&tpl, &s, false), 0);
	for (k = 0; k < 6; k++) {
		cr_assert_eq(body_build(&tpl, 3, k, "id", &out), 0);
		cr_assert_eq(out.len, strlen(out.data));
		snprintf(bodies[k], sizeof(bodies[k]), "%s", out.data);
	}
	for (k = 0; k < 6; k++) {
		char want[64];

		cr_assert_eq(body_build(&tpl, 3, k, "id", &out), 0);
		content_of(out.data, text, sizeof(text));
		snprintf(want, sizeof(want), "the quick (question %d)", (int)(k % 3));
		cr_assert_str_eq(text, want);
		cr_assert_eq(strcmp(bodies[k], bodies[(k + 3) % 6]), 0);
		cr_assert_neq(strcmp(bodies[k], bodies[(k + 1) % 6]), 0);
	}
	cr_assert_str_eq(bodies[1], "{\"model\":\"chat\",\"messages\":[{\"role\":\"user\","
			 "\"content\":\"the quick (question 1)\"}],\"max_tokens\":16}");
}

/* prompts 0: each request's prompt is marked with its id, escaped for JSON. */
Test(body, every_request_its_own_question)
{
	struct mix_stream s = stream_of("chat", 1, 0, NULL);
	char text[256];

	cr_assert_eq(body_tpl_init(&tpl, &s, true), 0);
	cr_assert_eq(body_build(&tpl, 0, 0, "run-1-17", &out), 0);
	content_of(out.data, text, sizeof(text));
	cr_assert_str_eq(text, "the (request run-1-17)");
	cr_assert_eq(body_build(&tpl, 0, 0, "run-1-18", &out), 0);
	content_of(out.data, text, sizeof(text));
	cr_assert_str_eq(text, "the (request run-1-18)");
	cr_assert(strstr(out.data, ",\"stream\":true,"), "%s", out.data);
	cr_assert_eq(body_build(&tpl, 0, 0, "a\"b\\c", &out), 0);
	content_of(out.data, text, sizeof(text));
	cr_assert_str_eq(text, "the (request a\"b\\c)");
}
