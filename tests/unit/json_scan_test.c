/*
 * json_scan: json_check's verdict and where it stops, by cases — valid,
 * invalid, truncated at every byte, nested to the limit and past it,
 * numbers, strings with \u0000 and surrogates — and the byte readers
 * (types, members with escaped and repeated keys, items, strings' lengths,
 * numbers) against what cJSON reads.
 */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <string.h>

#include "common/buf.h"
#include "common/json.h"
#include "tests/support/jsondiff.h"

/* A span of a C string. */
static struct json_span sp(const char *s)
{
	return (struct json_span){ s, strlen(s) };
}

struct check_case {
	const char *text;
	size_t len;		/* the bytes, a NUL inside counted */
	long bad_at;		/* -1: accepted; else where json_check stops */
};

#define OK(s) { s, sizeof(s) - 1, -1 }
#define BAD(s, at) { s, sizeof(s) - 1, at }

static const struct check_case check_cases[] = {
	/* valid */
	OK("{}"), OK("[]"), OK("0"), OK("-0"), OK("\"\""), OK("true"), OK("false"), OK("null"),
	OK(" \t\r\n{ \"a\" : [ 1 , 2.5 , -3e+2 , 4E-1 , 0.0 ] , \"b\" : { } } \n"),
	OK("{\"a\":{\"b\":[{\"c\":null}]}}"),
	OK("\"\\\" \\\\ \\/ \\b \\f \\n \\r \\t \\u00e9 \\u4E2D\""),
	OK("\"\\ud83d\\ude00\""),			/* a surrogate pair */
	OK("{\"a\":\"x\\u0000y\"}"),			/* \u0000 in a value: cJSON cuts it, reads it */
	OK("\"\x01\x1f raw control bytes\""),		/* cJSON takes them in a string */
	OK("\"\xff\xfe not UTF-8\""),
	OK("12345678901234567890123456789012345678901234567890123456789012345678901234567890"),
	OK("{\"a\":1,\"a\":2}"),			/* a key twice: JSON, and cJSON keeps both */
	/* not one value */
	BAD("", 0), BAD("   ", 3), BAD("{}{}", 2), BAD("{} x", 3), BAD("[1]]", 3),
	/* white space JSON does not have, a byte-order mark, a NUL */
	BAD("\f{}", 0), BAD("{}\v", 2), BAD("[1,\x1f" "2]", 3), BAD("\xef\xbb\xbf{}", 0),
	BAD("[1]\0", 3), BAD("\"a\0b\"", 2),
	/* numbers outside RFC 8259's form (cJSON reads some of them) */
	BAD("+1", 0), BAD(".5", 0), BAD("01", 1), BAD("-01", 2), BAD("1.", 2), BAD("1.e5", 2),
	BAD("-", 1), BAD("1e", 2), BAD("1e+", 3), BAD("--1", 1), BAD("0x1F", 1), BAD("NaN", 0),
	BAD("-Infinity", 1), BAD("[1-2]", 2),
	/* words */
	BAD("tru", 3), BAD("nul", 3), BAD("True", 0), BAD("nulls", 4),
	/* arrays and objects */
	BAD("[1,]", 3), BAD("[,1]", 1), BAD("[1 2]", 3), BAD("{\"a\":1,}", 7), BAD("{\"a\"}", 4),
	BAD("{1:2}", 1), BAD("{\"a\":1 \"b\":2}", 7), BAD("{\"a\" 1}", 5), BAD("[1}", 2),
	BAD("{\"a\":1]", 6), BAD("{'a':1}", 1),
	/* escapes */
	BAD("\"\\x\"", 1), BAD("\"\\u12\"", 1), BAD("\"\\uZZZZ\"", 1), BAD("\"\\ud800\"", 1),
	BAD("\"\\udc00\"", 1), BAD("\"\\ud800\\u0041\"", 1), BAD("\"\\ud800x\"", 1),
	BAD("\"a\\", 2), BAD("{\"a\\u0000\":1}", 3), BAD("{\"x\":{\"\\u0000\":1}}", 7),
	/* cut short */
	BAD("[", 1), BAD("{\"a\":", 5), BAD("\"abc", 4), BAD("[1,2", 4), BAD("{\"a\"", 4),
};

Test(json_scan, check_cases, .timeout = 10)
{
	size_t i;

	for (i = 0; i < sizeof(check_cases) / sizeof(check_cases[0]); i++) {
		const struct check_case *c = &check_cases[i];
		size_t at = 12345;
		int rc = json_check(c->text, c->len, &at);

		if (c->bad_at < 0) {
			cr_expect_eq(rc, 0, "case %zu (%s) refused at %zu", i, c->text, at);
		} else {
			cr_expect_eq(rc, -EINVAL, "case %zu (%s) accepted", i, c->text);
			cr_expect_eq(at, (size_t)c->bad_at, "case %zu (%s): stops at %zu, not %ld",
				     i, c->text, at, c->bad_at);
		}
	}
}

/* json_check against cJSON (tests/support/jsondiff.c) on each case too. */
Test(json_scan, check_cases_agree_with_the_reference, .timeout = 10)
{
	char text[256];
	char why[512];
	size_t i;

	for (i = 0; i < sizeof(check_cases) / sizeof(check_cases[0]); i++) {
		const struct check_case *c = &check_cases[i];

		cr_assert_lt(c->len, sizeof(text));
		memcpy(text, c->text, c->len);
		text[c->len] = '\0';
		cr_expect_geq(jsondiff_check(text, c->len, why, sizeof(why)), 0, "case %zu: %s",
			      i, why);
	}
}

/* Every proper prefix of an object or array is refused, where it ends or before. */
Test(json_scan, truncated_at_every_byte, .timeout = 30)
{
	static const char *const texts[] = {
		"{\"model\":\"chat\",\"messages\":[{\"role\":\"user\",\"content\":\"h\\u00e9\\ud83d"
		"\\ude00 \\\"q\\\"\"}],\"stream\":true,\"n\":-1.5e+3,\"x\":null,\"f\":false}",
		"[1,[2,[3,{\"a\":[]}]],\"]\",{}]",
	};
	struct json_member m = { "model", { NULL, 0 }, 0 };
	size_t t;
	size_t n;

	for (t = 0; t < sizeof(texts) / sizeof(texts[0]); t++) {
		size_t len = strlen(texts[t]);

		cr_assert_eq(json_check(texts[t], len, NULL), 0, "%s", texts[t]);
		for (n = 0; n < len; n++) {
			size_t at = len + 1;

			cr_expect_eq(json_check(texts[t], n, &at), -EINVAL, "%zu bytes accepted", n);
			cr_expect_leq(at, n, "%zu bytes: stops at %zu", n, at);
			cr_expect_eq(json_check_members(texts[t], n, NULL, &m, 1), -EINVAL);
			cr_expect_eq(m.count, 0, "%zu bytes: a member found in a refused text", n);
			cr_expect_null(m.v.p);
		}
	}
}

/* A text n brackets deep (objects when obj), a 1 inside. */
static void nested(struct buf *b, size_t n, bool obj)
{
	size_t i;

	buf_reset(b);
	for (i = 0; i < n; i++)
		cr_assert_eq(buf_puts(b, obj ? "{\"a\":" : "["), 0);
	cr_assert_eq(buf_puts(b, "1"), 0);
	for (i = 0; i < n; i++)
		cr_assert_eq(buf_puts(b, obj ? "}" : "]"), 0);
}

/* cJSON's nesting limit, exactly: JSON_DEPTH_MAX deep is read, one more is not. */
Test(json_scan, nesting_to_the_limit_and_past_it, .timeout = 30)
{
	struct buf b = { 0 };
	char why[512];
	size_t at = 0;
	int obj;

	for (obj = 0; obj < 2; obj++) {
		nested(&b, JSON_DEPTH_MAX, obj);
		cr_expect_eq(json_check(b.data, b.len, NULL), 0, "%d deep", JSON_DEPTH_MAX);
		cr_expect_eq(jsondiff_check(b.data, b.len, why, sizeof(why)), obj, "%s", why);
		nested(&b, JSON_DEPTH_MAX + 1, obj);
		cr_expect_eq(json_check(b.data, b.len, &at), -EINVAL);
		cr_expect_eq(at, (size_t)JSON_DEPTH_MAX * (obj ? 5 : 1), "the bracket past the limit");
		cr_expect_eq(jsondiff_check(b.data, b.len, why, sizeof(why)), 0, "%s", why);
	}
	buf_free(&b);
}

/* json_members: keys as cJSON reads them, however escaped; a key given twice: its first value. */
Test(json_scan, members_escaped_and_repeated_keys, .timeout = 10)
{
	static const char s[] =
		"{\"mod\\u0065l\":\"a\",\"x\":{\"model\":\"inner\"},\"model\":\"b\",\"\\u00e9\":1,"
		"\"a\\/b\\n\":2,\"\\ud83d\\ude00\":3,\"model\\\"\":4,\"\":5}";
	struct json_member m[] = {
		{ "model", { NULL, 0 }, 0 }, { "\xc3\xa9", { NULL, 0 }, 0 },
		{ "a/b\n", { NULL, 0 }, 0 }, { "\xf0\x9f\x98\x80", { NULL, 0 }, 0 },
		{ "model\"", { NULL, 0 }, 0 }, { "", { NULL, 0 }, 0 }, { "absent", { NULL, 0 }, 0 },
		{ "inner", { NULL, 0 }, 0 },
	};
	static const char *const want[] = { "\"a\"", "1", "2", "3", "4", "5", NULL, NULL };
	static const unsigned count[] = { 2, 1, 1, 1, 1, 1, 0, 0 };
	struct json_member again[sizeof(m) / sizeof(m[0])];
	size_t n = sizeof(m) / sizeof(m[0]);
	size_t i;

	cr_assert_eq(json_check(s, strlen(s), NULL), 0);
	cr_assert_eq(json_members(sp(s), m, n), 0);
	memcpy(again, m, sizeof(m));
	cr_assert_eq(json_check_members(s, strlen(s), NULL, again, n), 0);
	for (i = 0; i < n; i++) {
		cr_expect_eq(m[i].count, count[i], "key %zu: %u", i, m[i].count);
		if (want[i])
			cr_expect(m[i].v.len == strlen(want[i]) &&
				  memcmp(m[i].v.p, want[i], m[i].v.len) == 0, "key %zu: %.*s", i,
				  (int)m[i].v.len, m[i].v.p);
		else
			cr_expect_eq(m[i].v.len, 0, "key %zu", i);
		cr_expect(again[i].count == m[i].count && again[i].v.p == m[i].v.p &&
			  again[i].v.len == m[i].v.len, "json_check_members, key %zu", i);
		cr_expect(json_get(sp(s), m[i].key).p == m[i].v.p, "json_get, key %zu", i);
	}
	cr_expect_eq(json_members(sp("[1]"), m, n), -EINVAL);
	cr_expect_eq(m[0].count, 0);
	cr_expect_eq(json_check_members("[{\"model\":1}]", 13, NULL, m, 1), 0,
		     "an array is accepted");
	cr_expect_eq(m[0].count, 0, "but has no members");
	cr_expect_eq(json_get(sp("\"model\""), "model").len, 0);
}

Test(json_scan, type_of_each_kind, .timeout = 10)
{
	cr_expect_eq(json_type_of(sp("")), JSON_NONE);
	cr_expect_eq(json_type_of(sp("  ")), JSON_NONE);
	cr_expect_eq(json_type_of(sp("null")), JSON_NULL);
	cr_expect_eq(json_type_of(sp("false")), JSON_FALSE);
	cr_expect_eq(json_type_of(sp(" true")), JSON_TRUE);
	cr_expect_eq(json_type_of(sp("-1")), JSON_NUMBER);
	cr_expect_eq(json_type_of(sp("7")), JSON_NUMBER);
	cr_expect_eq(json_type_of(sp("\"x\"")), JSON_STRING);
	cr_expect_eq(json_type_of(sp("[]")), JSON_ARRAY);
	cr_expect_eq(json_type_of(sp("{}")), JSON_OBJECT);
	cr_expect_eq(json_type_of(sp("}")), JSON_NONE);
}

/* json_next: an array's elements, an object's members' values (cJSON_ArrayForEach). */
Test(json_scan, next_items_of_arrays_and_objects, .timeout = 10)
{
	static const struct {
		const char *v;
		const char *items[4];
	} cases[] = {
		{ " [ 1 , \"],\\\"\" ,{\"a\":[2,3]}, [ ] ] ", { "1", "\"],\\\"\"", "{\"a\":[2,3]}", "[ ]" } },
		{ "{\"a\":1,\"b\":{\"c\":\"}\"},\"a\":null}", { "1", "{\"c\":\"}\"}", "null", NULL } },
		{ "[]", { NULL } },
		{ "{ }", { NULL } },
		{ "\"[1]\"", { NULL } },
		{ "17", { NULL } },
	};
	struct json_member m = { "c", { NULL, 0 }, 0 };
	struct json_span item;
	size_t i;
	size_t at;
	size_t n;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		at = 0;
		n = 0;
		while (json_next(sp(cases[i].v), &at, &item)) {
			cr_assert_lt(n, 4);
			cr_assert_not_null(cases[i].items[n], "%s: more than expected", cases[i].v);
			cr_expect(item.len == strlen(cases[i].items[n]) &&
				  memcmp(item.p, cases[i].items[n], item.len) == 0, "%s: item %zu is %.*s",
				  cases[i].v, n, (int)item.len, item.p);
			n++;
		}
		cr_expect(n == 4 || !cases[i].items[n], "%s: %zu items", cases[i].v, n);
		cr_expect_eq(json_has_items(sp(cases[i].v)), n > 0, "%s", cases[i].v);
	}
	/* json_next_members: the same items, each object's members looked up. */
	at = 0;
	n = 0;
	while (json_next_members(sp(cases[1].v), &at, &m, 1)) {
		cr_expect_eq(m.count, n == 1 ? 1u : 0u, "item %zu", n);
		n++;
	}
	cr_expect_eq(n, 3);
	cr_expect(m.count == 0 && m.v.len == 0, "found nowhere after the last");
}

/* Strings as cJSON reads them: cut at \u0000, escapes decoded, surrogate pairs as one. */
Test(json_scan, strings_as_cjson_reads_them, .timeout = 10)
{
	static const struct {
		const char *lit;
		bool nonempty;
		size_t strlen;
	} cases[] = {
		{ "\"\"", false, 0 },
		{ "\"a\"", true, 1 },
		{ "\"\\u0000abc\"", false, 0 },
		{ "\"ab\\u0000c\"", true, 2 },
		{ "\"\\n\"", true, 1 },
		{ "\"caf\\u00e9\"", true, 5 },
		{ "\"\\u4e2d\"", true, 3 },
		{ "\"\\ud83d\\ude00!\"", true, 5 },
		{ "\"caf\xc3\xa9\"", true, 5 },
		{ "\"\\\\u0000\"", true, 6 },	/* a backslash, then text */
		{ "7", false, 0 },
		{ "null", false, 0 },
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cJSON *v = cJSON_Parse(cases[i].lit);

		cr_assert_not_null(v, "%s", cases[i].lit);
		cr_expect_eq(json_string_nonempty(sp(cases[i].lit)), cases[i].nonempty, "%s",
			     cases[i].lit);
		cr_expect_eq(json_string_strlen(sp(cases[i].lit)), cases[i].strlen, "%s: %zu",
			     cases[i].lit, json_string_strlen(sp(cases[i].lit)));
		if (cJSON_IsString(v))
			cr_expect_eq(strlen(v->valuestring), cases[i].strlen, "cJSON, %s",
				     cases[i].lit);
		cJSON_Delete(v);
	}
}

/* Numbers as cJSON reads them (valuedouble), the whole-number shortcut included. */
Test(json_scan, numbers_as_cjson_reads_them, .timeout = 10)
{
	static const char *const nums[] = {
		"0", "-0", "16", "999999999999999", "9999999999999999", "12345678901234567890",
		"1.5", "-2.25e-3", "1E+5", "1e400", "-1e400", "4.9e-324", "0.1", "100000000000000000001",
		"123456789012345678901234567890123456789012345678901234567890123456789012345",
	};
	size_t i;
	double d;

	for (i = 0; i < sizeof(nums) / sizeof(nums[0]); i++) {
		cJSON *v = cJSON_Parse(nums[i]);

		cr_assert(cJSON_IsNumber(v), "%s", nums[i]);
		cr_expect(json_number(sp(nums[i]), &d), "%s", nums[i]);
		cr_expect_eq(memcmp(&d, &v->valuedouble, sizeof(d)), 0, "%s: %.17g, cJSON %.17g",
			     nums[i], d, v->valuedouble);
		cJSON_Delete(v);
	}
	cr_expect(signbit(json_number(sp("-0"), &d) ? d : 0), "-0 keeps its sign");
	cr_expect_not(json_number(sp("\"1\""), &d));
	cr_expect_not(json_number(sp("true"), &d));
	cr_expect_not(json_number(sp(""), &d));
}

/* json_parse_span: the tree of one value inside a text, as cJSON parses it alone. */
Test(json_scan, parse_span_is_the_value_alone, .timeout = 10)
{
	static const char s[] = "{\"rf\":{\"type\":\"json_schema\",\"n\":[1,2]},\"z\":1}";
	struct json_span rf = json_get(sp(s), "rf");
	cJSON *t = json_parse_span(rf);
	char *out;

	cr_assert_not_null(t);
	out = cJSON_PrintUnformatted(t);
	cr_expect_str_eq(out, "{\"type\":\"json_schema\",\"n\":[1,2]}");
	free(out);
	cJSON_Delete(t);
	cr_expect_null(json_parse_span((struct json_span){ NULL, 0 }));
}
