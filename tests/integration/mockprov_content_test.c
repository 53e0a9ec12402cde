/*
 * mockprov's content under a request's response_format, as a real client
 * sees it: normal answers keep the contract (a JSON object; a document for
 * a json_schema, with every required key), plain and streamed (the chunks'
 * concatenation is the document, one chunk a token); bad_content breaks
 * it each way (prose, missing_key, wrong_type) in a well-formed 200 with
 * the usual usage; its rows in mock-NAME.csv; injected through the admin
 * API; and a malformed response_format or an outsized schema gives an
 * answer, not a crash.
 */
#include <criterion/criterion.h>
#include <cjson/cJSON.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "tests/support/harness.h"

#define ALWAYS "\"from_s\":-1000,\"to_s\":1000"
#define TIMING "\"ttft_ms\":5,\"token_ms\":1,\"output_tokens\":6"
/* The six words every answer here is made of. */
#define WORDS "Lorem ipsum dolor sit amet consectetur"

/* ok answers normally; the others answer bad_content, each violation. */
static const char config[] =
	"{\"providers\":["
	"{\"name\":\"ok\",\"listen\":\"127.0.0.1:0\"," TIMING "},"
	"{\"name\":\"prose\",\"listen\":\"127.0.0.1:0\"," TIMING ",\"faults\":[{\"kind\":"
	"\"bad_content\"," ALWAYS "}]},"
	"{\"name\":\"missing\",\"listen\":\"127.0.0.1:0\"," TIMING ",\"faults\":[{\"kind\":"
	"\"bad_content\",\"violation\":\"missing_key\"," ALWAYS "}]},"
	"{\"name\":\"wrong\",\"listen\":\"127.0.0.1:0\"," TIMING ",\"faults\":[{\"kind\":"
	"\"bad_content\",\"violation\":\"wrong_type\"," ALWAYS "}]}]}";

/* A schema with a $ref, an enum, bounds and an array of objects. */
#define SCHEMA \
	"{\"type\":\"object\",\"additionalProperties\":false," \
	"\"properties\":{\"summary\":{\"type\":\"string\",\"minLength\":10}," \
	"\"score\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":5}," \
	"\"mood\":{\"enum\":[\"calm\",\"busy\"]}," \
	"\"items\":{\"type\":\"array\",\"minItems\":2,\"items\":{\"$ref\":\"#/$defs/Item\"}}}," \
	"\"required\":[\"summary\",\"score\",\"mood\",\"items\"]," \
	"\"$defs\":{\"Item\":{\"type\":\"object\",\"properties\":{\"id\":{\"type\":\"integer\"}," \
	"\"ok\":{\"type\":\"boolean\"}},\"required\":[\"id\",\"ok\"]}}}"

#define RF_OBJECT ",\"response_format\":{\"type\":\"json_object\"}"
#define RF_SCHEMA ",\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{" \
	"\"name\":\"report\",\"strict\":true,\"schema\":" SCHEMA "}}"

static struct mock_proc mock;

static void teardown(void)
{
	mock_cleanup(&mock);
}

TestSuite(mockprov_content, .fini = teardown);

static void start(void)
{
	cr_assert_eq(mock_start(&mock, config, 0), 0, "mockprov did not start");
}

/* What a client made of one answer. */
struct answer {
	char *content;		/* message.content, or the deltas' concatenation */
	int chunks;		/* streams: the chunks that carried content */
	int completion_tokens;
	const char *finish;	/* "stop", "length" or "?" */
	bool done;		/* streams: [DONE] came */
};

/* POSTs a chat request (rf: ",response_format…" or "") and reads the answer. */
static void ask(const char *prov, bool stream, const char *rf, struct answer *a)
{
	char url[160];
	char body[4096];
	struct http_opts o = { .body = body, .timeout_ms = 5000 };
	struct http_result r;
	struct buf content = { 0 };
	cJSON *root;

	snprintf(body, sizeof(body), "{\"model\":\"mock-small\",\"stream\":%s,%s\"messages\":"
		 "[{\"role\":\"user\",\"content\":\"Report.\"}]%s}", stream ? "true" : "false",
		 stream ? "\"stream_options\":{\"include_usage\":true}," : "", rf);
	mock_url(&mock, prov, "/v1/chat/completions", url, sizeof(url));
	memset(a, 0, sizeof(*a));
	a->finish = "?";
	cr_assert_eq(http_do(url, &o, &r), 0);
	cr_assert_eq(r.code, CURLE_OK, "%s: %s", prov, r.errbuf);
	cr_assert_eq(r.status, 200, "%s: status %ld: %s", prov, r.status, r.body);
	if (!stream) {
		const cJSON *choice;

		root = cJSON_Parse(r.body);
		cr_assert_not_null(root, "%s: the body is not JSON: %s", prov, r.body);
		choice = cJSON_GetArrayItem(cJSON_GetObjectItem(root, "choices"), 0);
		cr_assert(cJSON_IsString(cJSON_GetObjectItem(cJSON_GetObjectItem(choice, "message"),
							     "content")), "%s", r.body);
		a->content = strdup(cJSON_GetObjectItem(cJSON_GetObjectItem(choice, "message"),
							"content")->valuestring);
		a->finish = strcmp(cJSON_GetObjectItem(choice, "finish_reason")->valuestring, "stop")
				    ? "length" : "stop";
		a->completion_tokens = cJSON_GetObjectItem(cJSON_GetObjectItem(root, "usage"),
							   "completion_tokens")->valueint;
		cJSON_Delete(root);
	} else {
		char **ev;
		size_t nerr;
		size_t n = sse_parse(r.body, &ev, &nerr);
		size_t i;

		cr_assert_eq(nerr, 0);
		for (i = 0; i < n; i++) {
			const cJSON *choice;
			const cJSON *c;

			if (strcmp(ev[i], "[DONE]") == 0) {
				a->done = i == n - 1;
				continue;
			}
			root = cJSON_Parse(ev[i]);
			cr_assert_not_null(root, "%s: a chunk is not JSON: %s", prov, ev[i]);
			choice = cJSON_GetArrayItem(cJSON_GetObjectItem(root, "choices"), 0);
			c = cJSON_GetObjectItem(cJSON_GetObjectItem(choice, "delta"), "content");
			if (cJSON_IsString(c)) {
				buf_puts(&content, c->valuestring);
				a->chunks++;
			}
			if (cJSON_IsString(cJSON_GetObjectItem(choice, "finish_reason")))
				a->finish = strcmp(cJSON_GetObjectItem(choice, "finish_reason")
							   ->valuestring, "stop") ? "length" : "stop";
			if (cJSON_GetObjectItem(root, "usage"))
				a->completion_tokens = cJSON_GetObjectItem(
					cJSON_GetObjectItem(root, "usage"), "completion_tokens")->valueint;
			cJSON_Delete(root);
		}
		sse_free(ev, n);
		a->content = buf_steal(&content);
	}
	http_result_free(&r);
	buf_free(&content);
}

/* The usage and framing every answer here has, whatever its content. */
static void assert_well_formed(const struct answer *a, bool stream, const char *what)
{
	cr_assert_eq(a->completion_tokens, 6, "[%s] usage counts the words: %d", what,
		     a->completion_tokens);
	cr_assert_str_eq(a->finish, "stop", "[%s]", what);
	if (stream) {
		cr_assert(a->done, "[%s] no [DONE] at the end", what);
		cr_assert_eq(a->chunks, 6, "[%s] one content chunk a token: %d", what, a->chunks);
	}
}

static const cJSON *member(const cJSON *o, const char *key)
{
	return cJSON_GetObjectItemCaseSensitive(o, key);
}

/* Checks a document against SCHEMA by hand; the words are in summary. */
static void assert_report(const cJSON *doc, const char *what)
{
	const cJSON *v;
	const cJSON *it;

	cr_assert(cJSON_IsObject(doc), "[%s] not an object", what);
	v = member(doc, "summary");
	cr_assert(cJSON_IsString(v), "[%s] summary", what);
	cr_assert_str_eq(v->valuestring, WORDS, "[%s] the words go in the first string", what);
	v = member(doc, "score");
	cr_assert(cJSON_IsNumber(v) && v->valuedouble >= 1 && v->valuedouble <= 5, "[%s]", what);
	cr_assert_str_eq(member(doc, "mood")->valuestring, "calm", "[%s]", what);
	v = member(doc, "items");
	cr_assert_eq(cJSON_GetArraySize(v), 2, "[%s] minItems", what);
	cJSON_ArrayForEach(it, v) {
		cr_assert(cJSON_IsNumber(member(it, "id")), "[%s]", what);
		cr_assert(cJSON_IsBool(member(it, "ok")), "[%s]", what);
	}
	cr_assert_eq(cJSON_GetArraySize(doc), 4, "[%s] no other key", what);
}

Test(mockprov_content, normal_answers_keep_the_contract, .timeout = 30)
{
	struct answer a;
	cJSON *doc;
	int stream;

	start();
	for (stream = 0; stream <= 1; stream++) {
		ask("ok", stream, RF_OBJECT, &a);
		assert_well_formed(&a, stream, "json_object");
		doc = cJSON_Parse(a.content);
		cr_assert(cJSON_IsObject(doc), "json_object: %s", a.content);
		cr_assert_str_eq(member(doc, "answer")->valuestring, WORDS);
		cJSON_Delete(doc);
		free(a.content);

		ask("ok", stream, RF_SCHEMA, &a);
		assert_well_formed(&a, stream, "json_schema");
		doc = cJSON_Parse(a.content);
		cr_assert_not_null(doc, "json_schema: not JSON: %s", a.content);
		assert_report(doc, stream ? "json_schema stream" : "json_schema");
		cJSON_Delete(doc);
		free(a.content);

		ask("ok", stream, "", &a);
		assert_well_formed(&a, stream, "no response_format");
		cr_assert_str_eq(a.content, WORDS, "prose, as always");
		free(a.content);
	}
}

Test(mockprov_content, bad_content_each_violation, .timeout = 40)
{
	struct csv_table t;
	struct answer a;
	const char *prov;
	cJSON *doc;
	size_t row;
	int stream;

	start();
	for (stream = 0; stream <= 1; stream++) {
		/* prose: not JSON at all, for either contract */
		ask("prose", stream, RF_OBJECT, &a);
		assert_well_formed(&a, stream, "prose json_object");
		cr_assert_str_eq(a.content, "Sure! Here is the answer you asked for: " WORDS);
		cr_assert_null(cJSON_Parse(a.content));
		free(a.content);
		ask("prose", stream, RF_SCHEMA, &a);
		assert_well_formed(&a, stream, "prose json_schema");
		cr_assert_null(cJSON_Parse(a.content), "%s", a.content);
		free(a.content);

		/* missing_key: an object without the key the contract needs */
		ask("missing", stream, RF_OBJECT, &a);
		assert_well_formed(&a, stream, "missing_key json_object");
		cr_assert_str_eq(a.content, "{\"text\":\"" WORDS "\"}");
		free(a.content);
		ask("missing", stream, RF_SCHEMA, &a);
		assert_well_formed(&a, stream, "missing_key json_schema");
		doc = cJSON_Parse(a.content);
		cr_assert(cJSON_IsObject(doc), "%s", a.content);
		cr_assert_null(member(doc, "summary"), "the first required key is gone: %s", a.content);
		cr_assert_not_null(member(doc, "score"));
		cr_assert_not_null(member(doc, "mood"));
		cr_assert_not_null(member(doc, "items"));
		cJSON_Delete(doc);
		free(a.content);

		/* wrong_type: the key is there, of another type */
		ask("wrong", stream, RF_OBJECT, &a);
		assert_well_formed(&a, stream, "wrong_type json_object");
		cr_assert_str_eq(a.content, "{\"answer\":42,\"text\":\"" WORDS "\"}");
		free(a.content);
		ask("wrong", stream, RF_SCHEMA, &a);
		assert_well_formed(&a, stream, "wrong_type json_schema");
		doc = cJSON_Parse(a.content);
		cr_assert(cJSON_IsObject(doc), "%s", a.content);
		cr_assert(cJSON_IsNumber(member(doc, "summary")), "summary is a number: %s", a.content);
		cr_assert_float_eq(member(doc, "summary")->valuedouble, 42, 0);
		cr_assert(cJSON_IsNumber(member(doc, "score")), "the rest is as normal: %s", a.content);
		cJSON_Delete(doc);
		free(a.content);

		/* No response_format: no contract to break, prose as always. */
		ask("wrong", stream, "", &a);
		assert_well_formed(&a, stream, "wrong_type without a contract");
		cr_assert_str_eq(a.content, "Sure! Here is the answer you asked for: " WORDS);
		free(a.content);
	}
	cr_assert_eq(mock_stop(&mock, SIGTERM), 0);
	for (prov = "prose"; prov; prov = strcmp(prov, "prose") == 0 ? "missing"
					   : strcmp(prov, "missing") == 0 ? "wrong" : NULL) {
		cr_assert_eq(mock_log(&mock, prov, &t), 0, "no log for %s", prov);
		cr_assert_geq(t.nrows, 5, "%s: %zu rows", prov, t.nrows);
		for (row = 1; row < t.nrows; row++) {
			cr_assert_str_eq(csv_get(&t, row, "fault"), "bad_content", "%s row %zu", prov,
					 row);
			cr_assert_str_eq(csv_get(&t, row, "outcome"), "faulted", "%s row %zu", prov, row);
			cr_assert_str_eq(csv_get(&t, row, "status"), "200");
			cr_assert_str_eq(csv_get(&t, row, "tokens_out"), "6");
		}
		csv_free(&t);
	}
	cr_assert_eq(mock_log(&mock, "ok", &t), 0);
	cr_assert_eq(t.nrows, 1, "ok was not asked");
	csv_free(&t);
}

/* An admin injection of bad_content takes its violation; a bad one is named. */
Test(mockprov_content, injected_through_the_admin_api, .timeout = 30)
{
	struct http_opts o = { .timeout_ms = 5000 };
	struct http_result r;
	struct answer a;
	char url[160];
	cJSON *doc;

	start();
	cr_assert(mock.admin_addr[0], "no admin address");
	snprintf(url, sizeof(url), "http://%s/faults", mock.admin_addr);
	o.body = "{\"provider\":\"ok\",\"kind\":\"bad_content\",\"violation\":\"sideways\","
		 "\"duration_s\":60}";
	cr_assert_eq(http_do(url, &o, &r), 0);
	cr_assert_eq(r.status, 400, "%s", r.body);
	cr_assert(strstr(r.body, "violation: expected one of prose, missing_key, wrong_type"),
		  "%s", r.body);
	http_result_free(&r);
	o.body = "{\"provider\":\"ok\",\"kind\":\"bad_content\",\"violation\":\"wrong_type\","
		 "\"duration_s\":60}";
	cr_assert_eq(http_do(url, &o, &r), 0);
	cr_assert_eq(r.status, 201, "%s", r.body);
	cr_assert(strstr(r.body, "\"violation\":\"wrong_type\""), "%s", r.body);
	http_result_free(&r);
	ask("ok", false, RF_OBJECT, &a);
	cr_assert_str_eq(a.content, "{\"answer\":42,\"text\":\"" WORDS "\"}");
	free(a.content);
	ask("ok", true, RF_SCHEMA, &a);
	doc = cJSON_Parse(a.content);
	cr_assert(cJSON_IsNumber(member(doc, "summary")), "%s", a.content);
	cJSON_Delete(doc);
	free(a.content);
	snprintf(url, sizeof(url), "http://%s/state", mock.admin_addr);
	o.body = NULL;
	cr_assert_eq(http_do(url, &o, &r), 0);
	cr_assert(strstr(r.body, "\"kind\":\"bad_content\",") &&
		  strstr(r.body, "\"violation\":\"wrong_type\""), "%s", r.body);
	http_result_free(&r);
}

/*
 * A response_format mockprov cannot read gives prose; a json_schema
 * without a schema the json_object shape; a schema asking for more than a
 * mock gives is bounded; none of them is a 400 or a crash.
 */
Test(mockprov_content, malformed_and_outsized_response_formats, .timeout = 30)
{
	static const struct { const char *rf; const char *want; } cases[] = {
		{ ",\"response_format\":\"json\"", WORDS },
		{ ",\"response_format\":null", WORDS },
		{ ",\"response_format\":{\"type\":[1]}", WORDS },
		{ ",\"response_format\":{\"type\":\"json_schema\"}", "{\"answer\":\"" WORDS "\"}" },
		{ ",\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"schema\":7}}",
		  "{\"answer\":\"" WORDS "\"}" },
		{ ",\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"schema\":"
		  "{\"$ref\":\"#/$defs/A\",\"$defs\":{\"A\":{\"$ref\":\"#/$defs/A\"}}}}}", "\"" WORDS "\"" },
	};
	struct answer a;
	cJSON *doc;
	size_t i;
	int stream;

	start();
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		for (stream = 0; stream <= 1; stream++) {
			ask("ok", stream, cases[i].rf, &a);
			assert_well_formed(&a, stream, cases[i].rf);
			cr_assert_str_eq(a.content, cases[i].want, "%s", cases[i].rf);
			free(a.content);
		}
	}
	/* A billion strings of a million characters: a bounded document. */
	ask("ok", true, ",\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"schema\":"
	    "{\"type\":\"array\",\"minItems\":1e9,\"items\":{\"type\":\"array\",\"minItems\":1e9,"
	    "\"items\":{\"type\":\"string\",\"minLength\":1e6}}}}}", &a);
	assert_well_formed(&a, true, "outsized");
	doc = cJSON_Parse(a.content);
	cr_assert(cJSON_IsArray(doc), "one JSON value");
	cr_assert_leq(strlen(a.content), 300 * 1024, "%zu bytes", strlen(a.content));
	cJSON_Delete(doc);
	free(a.content);
}
