/*
 * json: string escaping, the OpenAI-style error body, and the located
 * errors of json_load_file.
 */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "json.h"

static const char *escaped(struct buf *b, const char *s)
{
	buf_reset(b);
	cr_assert_eq(json_escape(b, s), 0);
	return b->data;
}

Test(json, escape_quotes_backslash_controls, .timeout = 10)
{
	struct buf b = { 0 };

	cr_assert_str_eq(escaped(&b, "plain"), "\"plain\"");
	cr_assert_str_eq(escaped(&b, ""), "\"\"");
	cr_assert_str_eq(escaped(&b, "a\"b"), "\"a\\\"b\"");
	cr_assert_str_eq(escaped(&b, "a\\b"), "\"a\\\\b\"");
	cr_assert_str_eq(escaped(&b, "\n\r\t"), "\"\\n\\r\\t\"");
	cr_assert_str_eq(escaped(&b, "x\x01y"), "\"x\\u0001y\"");
	cr_assert_str_eq(escaped(&b, "\x1f"), "\"\\u001f\"");
	cr_assert_str_eq(escaped(&b, "caf\xc3\xa9"), "\"caf\xc3\xa9\"");
	buf_free(&b);
}

Test(json, escape_appends, .timeout = 10)
{
	struct buf b = { 0 };

	cr_assert_eq(buf_puts(&b, "{\"k\":"), 0);
	cr_assert_eq(json_escape(&b, "v\""), 0);
	cr_assert_str_eq(b.data, "{\"k\":\"v\\\"\"");
	buf_free(&b);
}

Test(json, escape_round_trips_through_cjson, .timeout = 10)
{
	static const char *const s = "quote\" back\\ nl\n tab\t bell\x07 esc\x1b end";
	struct buf b = { 0 };
	cJSON *v;

	cr_assert_eq(json_escape(&b, s), 0);
	v = cJSON_Parse(b.data);
	cr_assert(cJSON_IsString(v), "not a JSON string: %s", b.data);
	cr_assert_str_eq(v->valuestring, s);
	cJSON_Delete(v);
	buf_free(&b);
}

Test(json, openai_error_fields, .timeout = 10)
{
	struct buf b = { 0 };
	const cJSON *e;
	cJSON *root;

	cr_assert_eq(json_openai_error(&b, "model \"x\" not found", "invalid_request_error",
				       NULL, "model_not_found"), 0);
	root = cJSON_Parse(b.data);
	cr_assert_not_null(root, "not JSON: %s", b.data);
	e = cJSON_GetObjectItemCaseSensitive(root, "error");
	cr_assert(cJSON_IsObject(e), "%s", b.data);
	cr_assert_str_eq(json_get_string(e, "message"), "model \"x\" not found");
	cr_assert_str_eq(json_get_string(e, "type"), "invalid_request_error");
	cr_assert(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(e, "param")), "%s", b.data);
	cr_assert_str_eq(json_get_string(e, "code"), "model_not_found");
	cr_assert_eq(cJSON_GetArraySize(e), 4);
	cJSON_Delete(root);
	buf_free(&b);
}

Test(json, openai_error_null_code_and_param_string, .timeout = 10)
{
	struct buf b = { 0 };
	const cJSON *e;
	cJSON *root;

	cr_assert_eq(json_openai_error(&b, "bad", "server_error", "messages", NULL), 0);
	root = cJSON_Parse(b.data);
	cr_assert_not_null(root, "not JSON: %s", b.data);
	e = cJSON_GetObjectItemCaseSensitive(root, "error");
	cr_assert_str_eq(json_get_string(e, "param"), "messages");
	cr_assert(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(e, "code")), "%s", b.data);
	cJSON_Delete(root);
	buf_free(&b);
}

Test(json, get_string_only_strings, .timeout = 10)
{
	cJSON *o = cJSON_Parse("{\"s\":\"v\",\"n\":1,\"z\":null}");

	cr_assert_str_eq(json_get_string(o, "s"), "v");
	cr_assert_null(json_get_string(o, "n"));
	cr_assert_null(json_get_string(o, "z"));
	cr_assert_null(json_get_string(o, "missing"));
	cJSON_Delete(o);
}

/* Writes text to a fresh temporary file; its name goes to path. */
static void write_tmp(char *path, size_t len, const char *text)
{
	FILE *fp;
	int fd;

	snprintf(path, len, "/tmp/fl-json-XXXXXX");
	fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	fp = fdopen(fd, "w");
	cr_assert_not_null(fp);
	fputs(text, fp);
	fclose(fp);
}

Test(json, load_file_parses, .timeout = 10)
{
	char path[64];
	char err[256] = "";
	cJSON *root;

	write_tmp(path, sizeof(path), "{\n  \"a\": [1, 2],\n  \"b\": \"x\"\n}\n");
	root = json_load_file(path, err, sizeof(err));
	cr_assert_not_null(root, "%s", err);
	cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItem(root, "a")), 2);
	cr_assert_str_eq(json_get_string(root, "b"), "x");
	cJSON_Delete(root);
	unlink(path);
}

Test(json, load_file_locates_syntax_error, .timeout = 10)
{
	char path[64];
	char err[256] = "";
	char want[96];
	cJSON *root;
	int line = 0;
	int col = 0;

	write_tmp(path, sizeof(path), "{\n  \"a\": 1,\n  \"b\": ,\n  \"c\": 2\n}\n");
	root = json_load_file(path, err, sizeof(err));
	cr_assert_null(root);
	snprintf(want, sizeof(want), "%s:", path);
	cr_assert(strncmp(err, want, strlen(want)) == 0, "%s", err);
	cr_assert_eq(sscanf(err + strlen(want), "%d:%d", &line, &col), 2, "%s", err);
	cr_assert_eq(line, 3, "%s", err);
	/* The bad value is the ',' in column 8 of `  "b": ,`. */
	cr_assert(col >= 7 && col <= 9, "%s", err);
	cr_assert(strstr(err, ": invalid JSON"), "%s", err);
	unlink(path);
}

Test(json, load_file_empty_is_invalid, .timeout = 10)
{
	char path[64];
	char err[256] = "";
	char want[96];

	write_tmp(path, sizeof(path), "");
	cr_assert_null(json_load_file(path, err, sizeof(err)));
	snprintf(want, sizeof(want), "%s:1:1: invalid JSON", path);
	cr_assert_str_eq(err, want);
	unlink(path);
}

Test(json, load_file_trailing_garbage_refused, .timeout = 10)
{
	char path[64];
	char err[256] = "";
	cJSON *root;

	write_tmp(path, sizeof(path), "{\"a\":1}\n}\n");
	root = json_load_file(path, err, sizeof(err));
	cJSON_Delete(root);
	unlink(path);
	cr_assert_null(root, "trailing '}' after the object accepted");
	cr_assert(strstr(err, "invalid JSON"), "%s", err);
}

Test(json, load_file_missing_says_cannot_open, .timeout = 10)
{
	char err[256] = "";

	cr_assert_null(json_load_file("/nonexistent-fl/conf.json", err, sizeof(err)));
	cr_assert(strncmp(err, "/nonexistent-fl/conf.json: cannot open", 38) == 0, "%s", err);
	cr_assert(strstr(err, "No such file"), "%s", err);
}

/* ---- json_member_span ---- */

/* The span of key in s as a string, or the error code's name. */
static const char *span_of(const char *s, const char *key, char *out, size_t len)
{
	size_t a = 0;
	size_t b = 0;
	int rc = json_member_span(s, strlen(s), key, &a, &b);

	if (rc == -ENOENT)
		return "ENOENT";
	if (rc == -EEXIST)
		return "EEXIST";
	if (rc == -EINVAL)
		return "EINVAL";
	snprintf(out, len, "%.*s", (int)(b - a), s + a);
	return out;
}

struct span_case {
	const char *json;
	const char *key;
	const char *want;
};

static const struct span_case span_cases[] = {
	{ "{\"model\":\"chat\",\"messages\":[]}", "model", "\"chat\"" },
	{ " { \"messages\" : [ {\"model\":\"inner\"} ] , \"model\" : \"x\\\"y\" } ", "model",
	  "\"x\\\"y\"" },
	{ "{\"a\":{\"b\":[1,{\"c\":\"}\"}]},\"model\":\"m\"}", "model", "\"m\"" },
	{ "{\"a\":\"]}\\\\\",\"model\":\"m\"}", "model", "\"m\"" },
	{ "{\"model\":12.5e3,\"x\":true}", "model", "12.5e3" },
	{ "{\"x\":null,\"model\":null}", "model", "null" },
	{ "{\"models\":\"m\",\"mode\":1}", "model", "ENOENT" },
	{ "{}", "model", "ENOENT" },
	{ "{\"model\":\"a\",\"model\":\"b\"}", "model", "EEXIST" },
	{ "{\"mod\\u0065l\":\"a\"}", "model", "EINVAL" },
	{ "[\"model\"]", "model", "EINVAL" },
	{ "{\"content\":\"\\\"model\\\":\\\"fake\\\"\",\"model\":\"real\"}", "model", "\"real\"" },
};

Test(json, member_span, .timeout = 10)
{
	char out[128];
	size_t i;

	for (i = 0; i < sizeof(span_cases) / sizeof(span_cases[0]); i++) {
		const struct span_case *c = &span_cases[i];

		cr_assert_str_eq(span_of(c->json, c->key, out, sizeof(out)), c->want, "in %s",
				 c->json);
	}
}
