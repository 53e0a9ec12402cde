/*
 * What an alias holds its answers to: the contract and degraded config
 * sections (defaults, values, each mistake refused naming the key), a
 * request's response_format read into a contract and completions checked
 * against it, and the degraded answers' pure parts — the cache key and
 * the completions built for static and cached answers.
 */
#include <criterion/criterion.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/cfg.h"
#include "gateway/config.h"
#include "gateway/contract.h"
#include "gateway/degraded.h"

#define NA(a) (sizeof(a) / sizeof((a)[0]))
#define PROVIDERS "\"providers\":{\"p\":{\"base_url\":\"http://127.0.0.1:9001/v1\"}}"
#define TARGETS "\"targets\":[{\"provider\":\"p\",\"model\":\"m\"}]"

static char err[CFG_ERR_LEN];

/* Loads a config whose one alias "chat" has the keys alias_keys (after its targets). */
static int load_alias(const char *alias_keys, struct gw_config *cfg)
{
	char json[2048];
	cJSON *root;
	int rc;

	snprintf(json, sizeof(json), "{" PROVIDERS ",\"models\":{\"chat\":{" TARGETS "%s}}}",
		 alias_keys);
	root = cJSON_Parse(json);
	cr_assert_not_null(root, "the test's JSON: %s", json);
	err[0] = '\0';
	rc = gw_config_from_json(root, "gw.json", false, cfg, err);
	cJSON_Delete(root);
	return rc;
}

Test(answer_config, defaults_check_contracts_and_answer_errors, .timeout = 10)
{
	struct gw_config c;

	cr_assert_eq(load_alias("", &c), 0, "%s", err);
	cr_assert(c.aliases[0].contract.enforce);
	cr_assert(c.aliases[0].contract.counts_as_failure);
	cr_assert_null(c.aliases[0].contract.dflt);
	cr_assert_eq(c.aliases[0].degraded.mode, GW_DEGRADED_ERROR);
	gw_config_free(&c);
}

Test(answer_config, values_are_read, .timeout = 10)
{
	struct gw_config c;

	cr_assert_eq(load_alias(",\"contract\":{\"enforce\":false,\"counts_as_failure\":false,"
				"\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{"
				"\"schema\":{\"type\":\"object\",\"required\":[\"a\"]}}}},"
				"\"degraded\":{\"mode\":\"cache\",\"ttl_s\":2.5,\"max_entries\":7,"
				"\"max_bytes\":8192}",
				&c),
		     0, "%s", err);
	cr_assert_not(c.aliases[0].contract.enforce);
	cr_assert_not(c.aliases[0].contract.counts_as_failure);
	cr_assert_not_null(c.aliases[0].contract.dflt);
	cr_assert_eq(c.aliases[0].degraded.mode, GW_DEGRADED_CACHE);
	cr_assert_float_eq(c.aliases[0].degraded.ttl_ms, 2500, 1e-9);
	cr_assert_eq(c.aliases[0].degraded.max_entries, 7);
	cr_assert_eq(c.aliases[0].degraded.max_bytes, 8192);
	gw_config_free(&c);

	cr_assert_eq(load_alias(",\"degraded\":{\"mode\":\"static\",\"content\":\"later\"}", &c), 0,
		     "%s", err);
	cr_assert_eq(c.aliases[0].degraded.mode, GW_DEGRADED_STATIC);
	cr_assert_str_eq(c.aliases[0].degraded.content, "later");
	gw_config_free(&c);
}

Test(answer_config, mistakes_name_the_key, .timeout = 10)
{
	static const struct {
		const char *keys;
		const char *says;
	} bad[] = {
		{ ",\"contract\":{\"strict\":true}", "models.chat.contract.strict: unknown key" },
		{ ",\"contract\":3", "models.chat.contract: expected an object" },
		{ ",\"contract\":{\"enforce\":\"yes\"}", "models.chat.contract.enforce:" },
		{ ",\"contract\":{\"response_format\":{\"type\":\"yaml\"}}",
		  "models.chat.contract.response_format: expected a response_format the gateway "
		  "can check: expected \"type\" text, json_object or json_schema, got \"yaml\"" },
		{ ",\"contract\":{\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{"
		  "\"schema\":{\"properties\":{\"a\":{\"pattern\":\"x\"}}}}}}",
		  "unsupported JSON Schema keyword \"pattern\" at /properties/a" },
		{ ",\"contract\":{\"response_format\":{\"type\":\"json_schema\"}}",
		  "response_format: expected a response_format the gateway can check: expected "
		  "json_schema.schema" },
		{ ",\"degraded\":{\"mode\":\"guess\"}", "models.chat.degraded.mode:" },
		{ ",\"degraded\":{\"mode\":\"static\"}",
		  "models.chat.degraded.content: expected a string with mode static" },
		{ ",\"degraded\":{\"mode\":\"cache\",\"content\":\"x\"}",
		  "models.chat.degraded.content: expected only with mode static" },
		{ ",\"degraded\":{\"ttl_s\":5}", "models.chat.degraded.ttl_s: expected only with "
		  "mode cache" },
		{ ",\"degraded\":{\"mode\":\"cache\",\"max_entries\":0}",
		  "models.chat.degraded.max_entries:" },
		{ ",\"degraded\":{\"mode\":\"cache\",\"max_bytes\":100}",
		  "models.chat.degraded.max_bytes:" },
		{ ",\"degraded\":{\"mode\":\"cache\",\"ttl_s\":0}", "models.chat.degraded.ttl_s:" },
	};

	for (size_t i = 0; i < NA(bad); i++) {
		struct gw_config c;

		cr_assert_eq(load_alias(bad[i].keys, &c), -EINVAL, "accepted %s", bad[i].keys);
		cr_assert(strncmp(err, "gw.json", 7) == 0, "names the file: %s", err);
		cr_assert(strstr(err, bad[i].says), "expected \"%s\" in \"%s\"", bad[i].says, err);
		cr_assert_null(c.aliases);
	}
}

/* ---- contracts ---- */

static struct contract *contract_of(const char *rf_json)
{
	cJSON *rf = cJSON_Parse(rf_json);
	struct contract *c = NULL;
	char why[256];

	cr_assert_not_null(rf);
	cr_assert_eq(contract_from_response_format(rf, &c, why, sizeof(why)), 0, "%s: %s", rf_json,
		     why);
	cJSON_Delete(rf);
	return c;
}

/* Whether a completion whose one choice's content is content (a JSON string literal) honours c. */
static bool honours(const struct contract *c, const char *content_literal, char *why,
		    size_t len)
{
	char json[1024];
	cJSON *root;
	bool ok;

	snprintf(json, sizeof(json), "{\"choices\":[{\"index\":0,\"message\":{\"role\":"
		 "\"assistant\",\"content\":%s}}]}", content_literal);
	root = cJSON_Parse(json);
	cr_assert_not_null(root, "%s", json);
	ok = contract_check(c, root, why, len);
	cJSON_Delete(root);
	return ok;
}

Test(contract, text_asks_for_nothing_and_bad_formats_are_named, .timeout = 10)
{
	static const struct {
		const char *rf;
		const char *says;
	} bad[] = {
		{ "[]", "expected an object with a string \"type\"" },
		{ "{\"type\":1}", "expected an object with a string \"type\"" },
		{ "{\"type\":\"xml\"}", "got \"xml\"" },
		{ "{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"x\"}}",
		  "expected json_schema.schema" },
		{ "{\"type\":\"json_schema\",\"json_schema\":{\"schema\":{\"type\":\"object\","
		  "\"properties\":{\"tags\":{\"uniqueItems\":true}}}}}",
		  "unsupported JSON Schema keyword \"uniqueItems\" at /properties/tags" },
	};
	struct contract *c = (struct contract *)1;
	char why[256];

	cr_assert_null(contract_of("{\"type\":\"text\"}"));
	for (size_t i = 0; i < NA(bad); i++) {
		cJSON *rf = cJSON_Parse(bad[i].rf);

		cr_assert_eq(contract_from_response_format(rf, &c, why, sizeof(why)), -EINVAL,
			     "%s", bad[i].rf);
		cr_assert_null(c);
		cr_assert(strstr(why, bad[i].says), "expected \"%s\" in \"%s\"", bad[i].says, why);
		cJSON_Delete(rf);
	}
}

Test(contract, json_object_wants_one_object_and_nothing_else, .timeout = 10)
{
	struct contract *c = contract_of("{\"type\":\"json_object\"}");
	char why[256];

	cr_assert(honours(c, "\"{\\\"a\\\": 1}\"", why, sizeof(why)), "%s", why);
	cr_assert(honours(c, "\" {} \\n\"", why, sizeof(why)), "%s", why);
	cr_assert_not(honours(c, "\"Sure! {\\\"a\\\": 1}\"", why, sizeof(why)));
	cr_assert(strstr(why, "choices[0].message.content: "), "%s", why);
	cr_assert_not(honours(c, "\"{\\\"a\\\": 1} thanks\"", why, sizeof(why)));
	cr_assert_not(honours(c, "\"[1,2]\"", why, sizeof(why)));
	cr_assert_not(honours(c, "null", why, sizeof(why)));
	cr_assert_str_eq(why, "choices[0].message.content: not a string");
	contract_free(c);
}

Test(contract, json_schema_names_what_broke_it, .timeout = 10)
{
	struct contract *c = contract_of(
		"{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"a\",\"schema\":{"
		"\"type\":\"object\",\"required\":[\"answer\",\"score\"],"
		"\"additionalProperties\":false,\"properties\":{"
		"\"answer\":{\"type\":\"string\",\"minLength\":1},"
		"\"score\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":10}}}}}");
	char why[256];
	char json[512];
	cJSON *two;

	cr_assert(honours(c, "\"{\\\"answer\\\":\\\"yes\\\",\\\"score\\\":3}\"", why, sizeof(why)),
		  "%s", why);
	cr_assert_not(honours(c, "\"{\\\"answer\\\":\\\"yes\\\"}\"", why, sizeof(why)));
	cr_assert(strstr(why, "score"), "%s", why);
	cr_assert_not(honours(c, "\"{\\\"answer\\\":7,\\\"score\\\":3}\"", why, sizeof(why)));
	cr_assert(strstr(why, "/answer"), "%s", why);
	cr_assert_not(honours(c, "\"{\\\"answer\\\":\\\"y\\\",\\\"score\\\":11}\"", why,
			      sizeof(why)));
	cr_assert_not(honours(c, "\"{\\\"answer\\\":\\\"y\\\",\\\"score\\\":1,\\\"x\\\":1}\"", why,
			      sizeof(why)));
	/* Every choice is held to it: the second one breaks it here. */
	snprintf(json, sizeof(json), "{\"choices\":[{\"message\":{\"content\":"
		 "\"{\\\"answer\\\":\\\"a\\\",\\\"score\\\":1}\"}},{\"message\":{\"content\":"
		 "\"no\"}}]}");
	two = cJSON_Parse(json);
	cr_assert_not(contract_check(c, two, why, sizeof(why)));
	cr_assert(strncmp(why, "choices[1].message.content: ", 28) == 0, "%s", why);
	cJSON_Delete(two);
	contract_free(c);
}

/* ---- degraded answers ---- */

static void key_of(const char *body, struct buf *key)
{
	cJSON *root = cJSON_Parse(body);

	cr_assert_not_null(root);
	buf_reset(key);
	cr_assert_eq(degraded_key(root, key), 0);
	cJSON_Delete(root);
}

Test(degraded, the_key_is_what_changes_the_answer, .timeout = 10)
{
	struct buf a = { 0 };
	struct buf b = { 0 };

	key_of("{\"model\":\"chat\",\"messages\":[{\"role\":\"user\",\"content\":\"q\"}],"
	       "\"temperature\":0.5}", &a);
	/* Another order, white space, stream and user: the same question. */
	key_of("{ \"temperature\": 0.5, \"stream\": true, \"user\": \"u1\", "
	       "\"stream_options\": {\"include_usage\": true}, \"metadata\": {\"k\": \"v\"},"
	       "\"messages\": [{\"role\": \"user\", \"content\": \"q\"}], \"model\": \"chat\"}", &b);
	cr_assert_str_eq(a.data, b.data);
	/* What changes the answer changes the key. */
	key_of("{\"model\":\"chat\",\"messages\":[{\"role\":\"user\",\"content\":\"q\"}],"
	       "\"temperature\":0.7}", &b);
	cr_assert_str_neq(a.data, b.data);
	key_of("{\"model\":\"chat\",\"messages\":[{\"role\":\"user\",\"content\":\"q2\"}],"
	       "\"temperature\":0.5}", &b);
	cr_assert_str_neq(a.data, b.data);
	key_of("{\"model\":\"other\",\"messages\":[{\"role\":\"user\",\"content\":\"q\"}],"
	       "\"temperature\":0.5}", &b);
	cr_assert_str_neq(a.data, b.data);
	key_of("{\"model\":\"chat\",\"messages\":[{\"role\":\"user\",\"content\":\"q\"}],"
	       "\"temperature\":0.5,\"response_format\":{\"type\":\"json_object\"}}", &b);
	cr_assert_str_neq(a.data, b.data);
	key_of("{\"model\":\"chat\",\"messages\":[{\"role\":\"user\",\"content\":\"q\"}],"
	       "\"temperature\":0.5,\"x_unknown\":1}", &b);
	cr_assert_str_neq(a.data, b.data, "a key the gateway does not know may matter");
	buf_free(&a);
	buf_free(&b);
}

Test(degraded, a_static_answer_is_a_well_formed_completion, .timeout = 10)
{
	struct buf out = { 0 };
	cJSON *root;
	const cJSON *msg;

	cr_assert_eq(degraded_completion(&out, "r1", "chat", "Try \"later\".", false, 1700000000.7),
		     0);
	root = cJSON_Parse(out.data);
	cr_assert_not_null(root, "%s", out.data);
	cr_assert_str_eq(cJSON_GetObjectItem(root, "id")->valuestring, "degraded-r1");
	cr_assert_str_eq(cJSON_GetObjectItem(root, "object")->valuestring, "chat.completion");
	cr_assert_str_eq(cJSON_GetObjectItem(root, "model")->valuestring, "chat");
	cr_assert_eq(cJSON_GetObjectItem(root, "created")->valuedouble, 1700000000);
	msg = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(root, "choices"), 0),
				  "message");
	cr_assert_str_eq(cJSON_GetObjectItem(msg, "content")->valuestring, "Try \"later\".");
	cr_assert_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(root, "usage"),
					 "total_tokens")->valuedouble, 0);
	cJSON_Delete(root);
	buf_free(&out);
}

/* The content of every data line of an SSE body but [DONE], concatenated; asserts it ends so. */
static void sse_content(const char *body, char *out, size_t len)
{
	const char *p = body;
	size_t n = 0;
	int chunks = 0;

	out[0] = '\0';
	while ((p = strstr(p, "data: ")) != NULL) {
		const char *eol = strstr(p, "\n\n");
		char line[2048];
		cJSON *c;
		const cJSON *content;

		cr_assert_not_null(eol, "every event ends with a blank line");
		snprintf(line, sizeof(line), "%.*s", (int)(eol - p - 6), p + 6);
		p = eol + 2;
		if (strcmp(line, "[DONE]") == 0) {
			cr_assert_eq(*p, '\0', "nothing after [DONE]");
			cr_assert_geq(chunks, 2);
			return;
		}
		chunks++;
		c = cJSON_Parse(line);
		cr_assert_not_null(c, "%s", line);
		cr_assert_str_eq(cJSON_GetObjectItem(c, "object")->valuestring,
				 "chat.completion.chunk");
		content = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetArrayItem(
			cJSON_GetObjectItem(c, "choices"), 0), "delta"), "content");
		if (cJSON_IsString(content))
			n += (size_t)snprintf(out + n, len - n, "%s", content->valuestring);
		cJSON_Delete(c);
	}
	cr_assert_fail("no [DONE] in %s", body);
}

Test(degraded, streams_get_sse_static_and_cached, .timeout = 10)
{
	static const char cached[] = "{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion\","
				     "\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\","
				     "\"content\":\"forty-two\"},\"finish_reason\":\"stop\"}],"
				     "\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":2}}";
	struct buf out = { 0 };
	char content[256];

	cr_assert_eq(degraded_completion(&out, "r2", "chat", "static text", true, 1), 0);
	sse_content(out.data, content, sizeof(content));
	cr_assert_str_eq(content, "static text");
	buf_reset(&out);
	cr_assert_eq(degraded_restream(&out, cached, strlen(cached), "r3", "chat", 1), 0);
	sse_content(out.data, content, sizeof(content));
	cr_assert_str_eq(content, "forty-two");
	buf_reset(&out);
	cr_assert_eq(degraded_restream(&out, "{\"choices\":[]}", 14, "r4", "chat", 1), -EINVAL);
	buf_free(&out);
}
