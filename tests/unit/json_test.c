/*
 * json: string escaping, the OpenAI-style error body, the located errors
 * of json_load_file, what json_parse_whole refuses that cJSON takes, and
 * the body scanners json_member_span and json_array_next, json_unescape
 * (a \u0000 kept) — by cases, and json_member_span against cJSON on
 * generated texts (tests/support/jsondiff.c).
 */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/json.h"
#include "tests/support/jsondiff.h"
#include "common/rng.h"

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

Test(json, escape_chars_in_pieces_is_the_whole, .timeout = 10)
{
	static const char s[] = "a\"b\\c\nd\x01" "e caf\xc3\xa9 \0z";
	size_t len = sizeof(s) - 1;
	struct buf whole = { 0 };
	struct buf parts = { 0 };
	size_t cut;

	cr_assert_eq(json_escape_chars(&whole, s, len), 0);
	cr_assert_str_eq(whole.data, "a\\\"b\\\\c\\nd\\u0001e caf\xc3\xa9 \\u0000z",
			 "no quotes, a NUL escaped: %s", whole.data);
	for (cut = 0; cut <= len; cut++) {
		if (cut < len && ((unsigned char)s[cut] & 0xC0) == 0x80)
			continue;	/* pieces are cut between UTF-8 sequences */
		buf_reset(&parts);
		cr_assert_eq(json_escape_chars(&parts, s, cut), 0);
		cr_assert_eq(json_escape_chars(&parts, s + cut, len - cut), 0);
		cr_assert_str_eq(parts.data, whole.data, "cut at %zu", cut);
	}
	buf_reset(&parts);
	cr_assert_eq(json_escape_chars(&parts, "", 0), 0);
	cr_assert_eq(parts.len, 0);
	buf_free(&whole);
	buf_free(&parts);
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
	{ "{\"mod\\u0065l\":\"a\"}", "model", "\"a\"" },
	{ "{\"mod\\u0065l\":\"a\",\"model\":\"b\"}", "model", "EEXIST" },
	{ "{\"\\u006D\\u006f\\u0064\\u0065\\u006c\":7}", "model", "7" },
	{ "{\"a\\/b\\n\":1,\"a/b\":2}", "a/b", "2" },
	{ "{\"a\\/b\\n\":1,\"a/b\":2}", "a/b\n", "1" },
	{ "{\"\\ud83d\\ude00\":\"smile\"}", "\xf0\x9f\x98\x80", "\"smile\"" },
	{ "{\"\\u00e9\":1,\"\\u4e2d\":2}", "\xe4\xb8\xad", "2" },
	{ "{\"model\\\"\":\"q\"}", "model", "ENOENT" },
	{ "{\"model\":1e400,\"n\":123456789012345678901234567890}", "model", "1e400" },
	{ "{\"n\":123456789012345678901234567890}", "n", "123456789012345678901234567890" },
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

/* ---- json_parse_whole: what cJSON alone would take ---- */

struct whole_case {
	const char *text;
	size_t len;		/* 0: strlen */
	bool ok;
};

#define WC(s, ok) { s, sizeof(s) - 1, ok }

static const struct whole_case whole_cases[] = {
	WC("{\"a\":1}", true),
	WC(" \t\r\n{ \"a\" :\t[ 1 ,\r\n2 ] }\n ", true),
	WC("{\"a\":1}\f", false),
	WC("\v{\"a\":1}", false),
	WC("{\"model\":\"chat\"\f,\"model\":\"other\"}", false),
	WC("{\"a\":\x01" "1}", false),
	WC("{\"a\":[1,\x1f" "2]}", false),
	WC("{\"a\"\x0b:1}", false),
	WC("{\"a\":\"\f in a string is the string's\"}", true),
	WC("{\"a\":1} x", false),
	WC("{\"a\":1}{}", false),
	WC("\xef\xbb\xbf{\"a\":1}", false),
	WC("{\"a\\uZZZZb\":1}", false),
	WC("{\"a\":\"\\u12G4\"}", false),
	WC("{\"a\\u0000b\":1}", false),
	WC("{\"a\" : {\"b\\u0000\" :1}}", false),
	WC("{\"a\":\"x\\u0000y\"}", true),
	WC("[\"\\u0000\", 1]", true),
	WC("{\"\\ud83d\\ude00\":1}", true),
	WC("{\"a\":\"b\\u0000\\\":\"}", true),
	WC("{\"a\":\"b\0\"}", false),
	/* numbers: RFC 8259's form only (cJSON alone reads these) */
	WC("{\"a\":01}", false),
	WC("{\"a\":-01}", false),
	WC("{\"a\":1.}", false),
	WC("{\"a\":1.e5}", false),
	WC("{\"a\":-0,\"b\":0.5,\"c\":1e-5,\"d\":-1.5E+10}", true),
};

Test(json, parse_whole_holds_cjson_to_json, .timeout = 10)
{
	size_t i;

	for (i = 0; i < sizeof(whole_cases) / sizeof(whole_cases[0]); i++) {
		const struct whole_case *c = &whole_cases[i];
		cJSON *root = json_parse_whole(c->text, c->len);

		cr_expect_eq(root != NULL, c->ok, "case %zu (%s): %s", i, c->text,
			     root ? "accepted" : "refused");
		cJSON_Delete(root);
	}
}

Test(json, load_file_locates_a_number_json_does_not_allow, .timeout = 10)
{
	char path[64];
	char err[256] = "";
	char want[96];

	write_tmp(path, sizeof(path), "{\n  \"a\": 1,\n  \"b\": 007\n}\n");
	cr_assert_null(json_load_file(path, err, sizeof(err)));
	snprintf(want, sizeof(want), "%s:3:9: invalid JSON", path);
	cr_assert_str_eq(err, want, "the second 0 of 007");
	unlink(path);
}

Test(json, load_file_locates_a_form_feed, .timeout = 10)
{
	char path[64];
	char err[256] = "";
	char want[96];

	write_tmp(path, sizeof(path), "{\n  \"a\": 1,\f\n  \"b\": 2\n}\n");
	cr_assert_null(json_load_file(path, err, sizeof(err)));
	snprintf(want, sizeof(want), "%s:2:10: invalid JSON", path);
	cr_assert_str_eq(err, want);
	unlink(path);
}

/* ---- json_member_span against cJSON ---- */

static const char *const diff_seeds[] = {
	"{\"model\":\"chat\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],"
	"\"stream\":true}",
	" { \"messages\" : [ {\"model\":\"inner\"} ] , \"model\" : \"x\\\"y\" } ",
	"{\"a\":{\"b\":[1,{\"c\":\"}\"}]},\"model\":\"m\",\"n\":1e400,"
	"\"big\":12345678901234567890}",
	"{\"mod\\u0065l\":\"a\",\"x\":\"\\ud83d\\ude00\",\"\\u006dodel\":\"b\"}",
	"{\"content\":\"\\\"model\\\":\\\"fake\\\"\",\"model\":\"real\",\"s\":\"\\\\\","
	"\"t\":\"\\/\"}",
	"{\"model\":null,\"m\":[],\"o\":{},\"t\":true,\"f\":false,\"e\":\"\","
	"\"u\":\"\\u00e9\\u4e2d\"}",
};

/* Inserts n bytes at offset at of t (at ≤ t->len). */
static void buf_insert(struct buf *t, size_t at, const char *p, size_t n)
{
	cr_assert_eq(buf_reserve(t, n), 0);
	memmove(t->data + at + n, t->data + at, t->len - at + 1);
	memcpy(t->data + at, p, n);
	t->len += n;
}

/* Removes n bytes at offset at of t (at + n ≤ t->len). */
static void buf_cut(struct buf *t, size_t at, size_t n)
{
	memmove(t->data + at, t->data + at + n, t->len - at - n + 1);
	t->len -= n;
}

/* Bytes a mutation inserts: every control byte and space, and JSON's own. */
static char pool_byte(struct rng *r)
{
	static const char extra[] = "\"\\,:{}[]u0el";
	uint64_t k = rng_next(r) % (0x21 + sizeof(extra) - 1);

	return k <= 0x20 ? (char)k : extra[k - 0x21];
}

/* Changes t in one of a few ways that keep it JSON often enough to matter. */
static void mutate(struct buf *t, struct rng *r)
{
	static const char *const pieces[] = {
		",\"model\":\"dup\"", "\"model\":1,", "\\ud83d\\ude00", "\\u0000", " ", "\t",
		"\r\n", "\f", "\\\"", "\\/",
	};
	size_t at = t->len ? (size_t)(rng_next(r) % t->len) : 0;
	char hex[8];
	char c;

	switch (rng_next(r) % 6) {
	case 0:		/* insert a byte */
		c = pool_byte(r);
		buf_insert(t, at, &c, 1);
		break;
	case 1:		/* replace a byte */
		if (t->len)
			t->data[at] = pool_byte(r);
		break;
	case 2:		/* delete a byte */
		if (t->len)
			buf_cut(t, at, 1);
		break;
	case 3:		/* spell a letter as an escape (inside a string, the same key) */
		c = t->len ? t->data[at] : 'x';
		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
			snprintf(hex, sizeof(hex), rng_next(r) & 1 ? "\\u%04x" : "\\u%04X", c);
			buf_cut(t, at, 1);
			buf_insert(t, at, hex, 6);
		}
		break;
	case 4:		/* a member given twice, or another piece */
	default: {
		const char *p = pieces[rng_next(r) % (sizeof(pieces) / sizeof(pieces[0]))];

		if (p[0] == ',' && t->len && t->data[t->len - 1] == '}')
			at = t->len - 1;
		else if (p[0] == '"' && t->len && t->data[0] == '{')
			at = 1;
		buf_insert(t, at, p, strlen(p));
		break;
	}
	}
}

Test(json, member_span_agrees_with_cjson, .timeout = 60)
{
	/* Each with what jsondiff_check must say: 0 refused, 1 accepted and agreed. */
	static const struct {
		const char *text;
		int want;
	} fixed[] = {
		{ "{\"model\":\"chat\"\f,\"model\":\"other\",\"messages\":[1]}", 0 },
		{ "{\"model\":\"chat\",\"mod\\u0065l\":\"other\"}", 1 },
		{ "{\"\\u006dodel\":\"a\",\"messages\":[1]}", 1 },
		{ "{\"model\":\"chat\"\v,\"messages\":[1]}", 0 },
	};
	struct buf t = { 0 };
	struct rng r;
	char why[512] = "";
	unsigned accepted = 0;
	size_t i;
	int n;

	for (i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++) {
		n = jsondiff_check(fixed[i].text, strlen(fixed[i].text), why, sizeof(why));
		cr_assert_eq(n, fixed[i].want, "%d: %s\nin %s", n, why, fixed[i].text);
	}
	rng_seed(&r, 15);
	for (i = 0; i < 40000; i++) {
		int k = 1 + (int)(rng_next(&r) % 3);

		buf_reset(&t);
		cr_assert_eq(buf_puts(&t, diff_seeds[i % (sizeof(diff_seeds) /
							  sizeof(diff_seeds[0]))]), 0);
		while (k--)
			mutate(&t, &r);
		cr_assert_eq(buf_append(&t, "", 0), 0);
		n = jsondiff_check(t.data, t.len, why, sizeof(why));
		cr_assert_geq(n, 0, "%s\nin %s", why, t.data);
		accepted += n == 1;
	}
	/* Enough of the mutants stay objects for the comparison to mean something. */
	cr_assert_gt(accepted, 5000, "only %u accepted", accepted);
	buf_free(&t);
}

/* json_copy_cut: valid UTF-8 out whatever comes in, cut between sequences. */
Test(json, copy_cut_is_always_text, .timeout = 10)
{
	static const struct {
		const char *in;
		size_t max;
		const char *out;
	} cases[] = {
		{ "chat", 128, "chat" },
		{ "caf\xc3\xa9", 128, "caf\xc3\xa9" },
		{ "caf\xc3\xa9", 4, "caf" },			/* not inside the sequence */
		{ "ch\xff" "at", 128, "ch\\xffat" },		/* a byte that is never UTF-8 */
		{ "\xc3", 128, "\\xc3" },			/* a sequence cut short */
		{ "\xc0\xaf", 128, "\\xc0\\xaf" },		/* overlong */
		{ "\xed\xa0\x80", 128, "\\xed\\xa0\\x80" },	/* a surrogate */
		{ "\xf4\x90\x80\x80", 128, "\\xf4\\x90\\x80\\x80" },	/* past U+10FFFF */
		{ "\xf0\x9f\x98\x80", 128, "\xf0\x9f\x98\x80" },	/* U+1F600 */
		{ "ab\xff", 4, "ab" },				/* \xff does not fit whole */
		{ "abcdef", 3, "abc" },
	};
	char out[64];
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		json_copy_cut(out, sizeof(out), cases[i].in, cases[i].max);
		cr_expect_str_eq(out, cases[i].out, "case %zu", i);
	}
	json_copy_cut(out, 4, "abcdef", 100);	/* the buffer bounds it too */
	cr_expect_str_eq(out, "abc");
}

/* json_string_has_nul: the \u0000 escape as written, not an escaped backslash before u0000. */
Test(json, string_has_nul, .timeout = 10)
{
	cr_expect(json_string_has_nul("\"chat\\u0000evil\"", 16));
	cr_expect(json_string_has_nul("\\u0000", 6));
	cr_expect_not(json_string_has_nul("\"chat\"", 6));
	cr_expect_not(json_string_has_nul("\"a\\\\u0000\"", 10));	/* "a\\u0000": a backslash, then text */
	cr_expect_not(json_string_has_nul("\"\\u00001\"", 5));	/* cut before the escape ends */
	cr_expect_not(json_string_has_nul("\"\\u0001\"", 8));
}

/* json_put: adds and owns; frees the item when there is no object, and fails on no item. */
Test(json, put_adds_or_frees, .timeout = 10)
{
	cJSON *o = cJSON_CreateObject();
	bool ok = true;

	ok &= json_put(o, "a", cJSON_CreateNumber(1));
	cr_assert(ok);
	cr_assert_float_eq(cJSON_GetObjectItemCaseSensitive(o, "a")->valuedouble, 1, 0);
	cr_assert_not(json_put(o, "b", NULL));
	cr_assert_null(cJSON_GetObjectItemCaseSensitive(o, "b"));
	cr_assert_not(json_put(NULL, "c", cJSON_CreateString("freed, not leaked")));
	cJSON_Delete(o);
}

/* json_unescape: cJSON's reading of a literal, but a \u0000 kept as a byte and the rest kept. */
Test(json, unescape_keeps_nul_and_the_rest, .timeout = 10)
{
	static const char lit[] = "\"a\\u0000b\\n\\\"\\\\\\/caf\\u00e9 \\ud83d\\ude00 \xc3\xa9\"";
	static const char want[] = "a\0b\n\"\\/caf\xc3\xa9 \xf0\x9f\x98\x80 \xc3\xa9";
	struct buf b = { 0 };
	cJSON *v = json_parse_whole(lit, strlen(lit));

	cr_assert_not_null(v, "the literal is JSON");
	cr_assert_eq(json_unescape(&b, lit, strlen(lit)), 0);
	cr_assert_eq(b.len, sizeof(want) - 1, "all of it, past the NUL: %zu bytes", b.len);
	cr_assert_eq(memcmp(b.data, want, b.len), 0);
	cr_assert_str_eq(v->valuestring, "a", "where cJSON stops");
	buf_reset(&b);
	cr_assert_eq(json_unescape(&b, "x\\ty", 4), 0, "without quotes");
	cr_assert_str_eq(b.data, "x\ty");
	buf_reset(&b);
	cr_assert_eq(json_unescape(&b, "\"\"", 2), 0);
	cr_assert_eq(b.len, 0);
	cr_assert_eq(json_unescape(&b, "\"\\ude00\"", 8), -EINVAL, "a lone low surrogate");
	cr_assert_eq(json_unescape(&b, "\"\\x\"", 4), -EINVAL);
	cr_assert_eq(json_unescape(&b, "\"\\u12\"", 6), -EINVAL);
	cJSON_Delete(v);
	buf_free(&b);
}

/* json_array_next: each element as written, nested brackets and strings skipped whole. */
Test(json, array_next_steps_through_elements, .timeout = 10)
{
	static const char s[] = " [ 1 , \"],\\\"\" ,{\"a\":[2,3]}, [ ] ,null ] ";
	static const char *const want[] = { "1", "\"],\\\"\"", "{\"a\":[2,3]}", "[ ]", "null" };
	size_t at = 0;
	size_t a = 0;
	size_t e = 0;
	size_t n = 0;

	while (json_array_next(s, strlen(s), &at, &a, &e) == 0) {
		cr_assert_lt(n, 5);
		cr_assert_eq(e - a, strlen(want[n]), "element %zu", n);
		cr_assert_eq(memcmp(s + a, want[n], e - a), 0, "element %zu: %.*s", n,
			     (int)(e - a), s + a);
		n++;
	}
	cr_assert_eq(n, 5);
	at = 0;
	cr_assert_eq(json_array_next("[]", 2, &at, &a, &e), -ENOENT);
	at = 0;
	cr_assert_eq(json_array_next("{}", 2, &at, &a, &e), -EINVAL);
	at = 0;
	cr_assert_eq(json_array_next("[1", 2, &at, &a, &e), 0, "cut short: still inside");
	cr_assert_eq(e, 2);
	cr_assert_eq(json_array_next("[1", 2, &at, &a, &e), -ENOENT);
}
