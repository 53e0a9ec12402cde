/*
 * contract: the content made for a request's response_format — reading it
 * tolerantly, the document a schema gets (checked by hand against the
 * schema: keys, types, bounds, where the words went), the bad_content
 * violations of it, and the bounds that hold whatever the schema.
 */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <time.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "common/json.h"
#include "mockprov/contract.h"

#define WORDS "Lorem ipsum dolor"

struct made {
	struct buf out;
	size_t text_at;
	cJSON *doc;		/* the content parsed, or NULL when it is not JSON */
};

/* The content for response_format rf (JSON text, or NULL) and violation v. */
static void make(struct made *m, const char *rf, enum contract_violation v, const char *text)
{
	cJSON *r = rf ? cJSON_Parse(rf) : NULL;
	struct contract c;

	cr_assert(!rf || r, "test JSON does not parse: %s", rf);
	memset(m, 0, sizeof(*m));
	contract_read(r, &c);
	cr_assert_eq(contract_content(&c, v, text, strlen(text), &m->out, &m->text_at), 0);
	cr_assert_not_null(m->out.data);
	m->doc = json_parse_whole(m->out.data, m->out.len);
	cJSON_Delete(r);
}

static void made_free(struct made *m)
{
	cJSON_Delete(m->doc);
	buf_free(&m->out);
}

/* The content for schema (JSON text) as a json_schema response_format. */
static void make_schema(struct made *m, const char *schema, enum contract_violation v)
{
	char rf[4096];

	snprintf(rf, sizeof(rf), "{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"t\","
		 "\"strict\":true,\"schema\":%s}}", schema);
	make(m, rf, v, WORDS);
	cr_assert_not_null(m->doc, "not one JSON value: %s", m->out.data);
}

/* The words sit verbatim at text_at. */
static void assert_words_at(const struct made *m)
{
	cr_assert_neq(m->text_at, SIZE_MAX, "the words were not placed: %s", m->out.data);
	cr_assert_leq(m->text_at + strlen(WORDS), m->out.len);
	cr_assert(memcmp(m->out.data + m->text_at, WORDS, strlen(WORDS)) == 0,
		  "not at %zu: %s", m->text_at, m->out.data);
}

static const cJSON *member(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	cr_assert_not_null(v, "no \"%s\" in %s", key, cJSON_PrintUnformatted(o));
	return v;
}

/* ---- reading response_format ---- */

Test(contract_read, tolerant, .timeout = 10)
{
	static const struct { const char *rf; enum contract_kind want; } cases[] = {
		{ "null", CONTRACT_NONE },
		{ "\"json_object\"", CONTRACT_NONE },
		{ "[]", CONTRACT_NONE },
		{ "{}", CONTRACT_NONE },
		{ "{\"type\":5}", CONTRACT_NONE },
		{ "{\"type\":\"text\"}", CONTRACT_NONE },
		{ "{\"type\":\"xml\"}", CONTRACT_NONE },
		{ "{\"type\":\"json_object\"}", CONTRACT_JSON_OBJECT },
		{ "{\"type\":\"json_schema\"}", CONTRACT_JSON_OBJECT },
		{ "{\"type\":\"json_schema\",\"json_schema\":5}", CONTRACT_JSON_OBJECT },
		{ "{\"type\":\"json_schema\",\"json_schema\":{\"schema\":\"x\"}}", CONTRACT_JSON_OBJECT },
		{ "{\"type\":\"json_schema\",\"json_schema\":{\"schema\":{}}}", CONTRACT_JSON_SCHEMA },
		{ "{\"type\":\"json_schema\",\"json_schema\":{\"schema\":true}}", CONTRACT_JSON_SCHEMA },
	};
	struct contract c;
	size_t i;

	contract_read(NULL, &c);
	cr_assert_eq(c.kind, CONTRACT_NONE);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cJSON *rf = cJSON_Parse(cases[i].rf);

		cr_assert_not_null(rf);
		contract_read(rf, &c);
		cr_assert_eq(c.kind, cases[i].want, "%s: kind %d", cases[i].rf, c.kind);
		cr_assert_eq(c.schema != NULL, cases[i].want == CONTRACT_JSON_SCHEMA);
		cJSON_Delete(rf);
	}
}

/* ---- no contract, json_object ---- */

Test(contract_prose, words_alone_or_with_the_lead, .timeout = 10)
{
	struct made m;

	make(&m, NULL, VIOLATION_NONE, WORDS);
	cr_assert_str_eq(m.out.data, WORDS);
	cr_assert_eq(m.text_at, 0);
	made_free(&m);
	/* No contract to break: any violation is prose, like a normal answer. */
	make(&m, "{\"type\":\"text\"}", VIOLATION_WRONG_TYPE, WORDS);
	cr_assert_str_eq(m.out.data, CONTRACT_PROSE_LEAD WORDS);
	cr_assert_null(m.doc, "prose is not JSON");
	assert_words_at(&m);
	made_free(&m);
	make(&m, "{\"type\":\"json_object\"}", VIOLATION_PROSE, WORDS);
	cr_assert_str_eq(m.out.data, CONTRACT_PROSE_LEAD WORDS);
	cr_assert_null(m.doc);
	made_free(&m);
	make(&m, "{\"type\":\"json_schema\",\"json_schema\":{\"schema\":{\"type\":\"object\"}}}",
	     VIOLATION_PROSE, WORDS);
	cr_assert_str_eq(m.out.data, CONTRACT_PROSE_LEAD WORDS);
	made_free(&m);
}

Test(contract_object, shapes, .timeout = 10)
{
	struct made m;

	make(&m, "{\"type\":\"json_object\"}", VIOLATION_NONE, WORDS);
	cr_assert_str_eq(m.out.data, "{\"answer\":\"" WORDS "\"}");
	assert_words_at(&m);
	made_free(&m);
	make(&m, "{\"type\":\"json_object\"}", VIOLATION_MISSING_KEY, WORDS);
	cr_assert_str_eq(m.out.data, "{\"text\":\"" WORDS "\"}");
	assert_words_at(&m);
	made_free(&m);
	make(&m, "{\"type\":\"json_object\"}", VIOLATION_WRONG_TYPE, WORDS);
	cr_assert_str_eq(m.out.data, "{\"answer\":42,\"text\":\"" WORDS "\"}");
	assert_words_at(&m);
	made_free(&m);
}

Test(contract_object, words_that_need_escaping_lose_their_place, .timeout = 10)
{
	struct made m;

	make(&m, "{\"type\":\"json_object\"}", VIOLATION_NONE, "say \"hi\"\n");
	cr_assert_not_null(m.doc, "%s", m.out.data);
	cr_assert_str_eq(member(m.doc, "answer")->valuestring, "say \"hi\"\n");
	cr_assert_eq(m.text_at, SIZE_MAX);
	made_free(&m);
	make(&m, "{\"type\":\"json_schema\",\"json_schema\":{\"schema\":{\"type\":\"object\","
	     "\"properties\":{\"a\":{\"type\":\"string\"}},\"required\":[\"a\"]}}}",
	     VIOLATION_NONE, "back\\slash");
	cr_assert_not_null(m.doc, "%s", m.out.data);
	cr_assert(cJSON_IsString(member(m.doc, "a")));
	cr_assert_eq(m.text_at, SIZE_MAX);
	made_free(&m);
}

/* ---- json_schema: the document ---- */

#define PERSON \
	"{\"type\":\"object\"," \
	"\"properties\":{" \
	"\"age\":{\"type\":\"integer\",\"minimum\":18,\"maximum\":99}," \
	"\"name\":{\"type\":\"string\",\"minLength\":30}," \
	"\"nick\":{\"type\":\"string\"}," \
	"\"score\":{\"type\":\"number\",\"exclusiveMinimum\":1.5,\"exclusiveMaximum\":2}," \
	"\"role\":{\"enum\":[\"admin\",\"user\"]}," \
	"\"v\":{\"const\":{\"major\":2}}," \
	"\"ok\":{\"type\":\"boolean\"}," \
	"\"gone\":{\"type\":\"null\"}," \
	"\"maybe\":{\"type\":[\"null\",\"string\"],\"format\":\"date-time\"}," \
	"\"tags\":{\"type\":\"array\",\"items\":{\"type\":\"string\",\"maxLength\":2},\"minItems\":3}," \
	"\"home\":{\"$ref\":\"#/$defs/Place\"}," \
	"\"work\":{\"$ref\":\"#/definitions/Place\"}," \
	"\"pet\":{\"anyOf\":[{\"type\":\"null\"},{\"type\":\"integer\",\"minimum\":-5,\"maximum\":-2}]}" \
	"}," \
	"\"required\":[\"name\",\"age\",\"score\",\"role\",\"v\",\"ok\",\"gone\",\"maybe\",\"tags\"," \
	"\"home\",\"work\",\"pet\",\"extra\"]," \
	"\"additionalProperties\":false," \
	"\"$defs\":{\"Place\":{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"}}," \
	"\"required\":[\"city\"]}}," \
	"\"definitions\":{\"Place\":{\"type\":\"object\",\"properties\":{\"zip\":{\"type\":\"integer\"}}," \
	"\"required\":[\"zip\"]}}}"

Test(contract_schema, a_document_that_satisfies_it, .timeout = 10)
{
	const cJSON *v;
	const cJSON *e;
	struct made m;
	int n = 0;

	make_schema(&m, PERSON, VIOLATION_NONE);
	cr_assert(cJSON_IsObject(m.doc));
	/* The words go into the first string that can take them, padded to minLength. */
	v = member(m.doc, "name");
	cr_assert(cJSON_IsString(v));
	cr_assert_eq(strncmp(v->valuestring, WORDS, strlen(WORDS)), 0, "%s", v->valuestring);
	cr_assert_eq(strlen(v->valuestring), 30);
	assert_words_at(&m);
	cr_assert_str_eq(member(m.doc, "nick")->valuestring, "mock", "an optional key near the top");
	v = member(m.doc, "age");
	cr_assert(cJSON_IsNumber(v));
	cr_assert_float_eq(v->valuedouble, 18, 0);
	v = member(m.doc, "score");
	cr_assert_gt(v->valuedouble, 1.5);
	cr_assert_lt(v->valuedouble, 2);
	cr_assert_str_eq(member(m.doc, "role")->valuestring, "admin");
	cr_assert_float_eq(member(member(m.doc, "v"), "major")->valuedouble, 2, 0);
	cr_assert(cJSON_IsTrue(member(m.doc, "ok")));
	cr_assert(cJSON_IsNull(member(m.doc, "gone")));
	cr_assert_str_eq(member(m.doc, "maybe")->valuestring, "2026-01-01T00:00:00Z");
	v = member(m.doc, "tags");
	cr_assert_eq(cJSON_GetArraySize(v), 3);
	cJSON_ArrayForEach(e, v) {
		cr_assert(cJSON_IsString(e));
		cr_assert_leq(strlen(e->valuestring), 2);
	}
	cr_assert(cJSON_IsString(member(member(m.doc, "home"), "city")));
	cr_assert(cJSON_IsNumber(member(member(m.doc, "work"), "zip")));
	v = member(m.doc, "pet");
	cr_assert(cJSON_IsNumber(v), "anyOf's first branch that is not only null");
	cr_assert_float_eq(v->valuedouble, -2, 0);
	cr_assert(cJSON_IsString(member(m.doc, "extra")), "a required key without a schema");
	cJSON_ArrayForEach(e, m.doc)
		n++;
	cr_assert_eq(n, 14, "every property and the extra required key, once each");
	made_free(&m);
}

Test(contract_schema, top_levels_other_than_objects, .timeout = 10)
{
	struct made m;

	make_schema(&m, "{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"minItems\":2}",
		    VIOLATION_NONE);
	cr_assert_eq(cJSON_GetArraySize(m.doc), 2);
	cr_assert_str_eq(cJSON_GetArrayItem(m.doc, 0)->valuestring, WORDS);
	cr_assert_str_eq(cJSON_GetArrayItem(m.doc, 1)->valuestring, "mock", "the words once");
	made_free(&m);
	make_schema(&m, "{\"type\":\"string\"}", VIOLATION_NONE);
	cr_assert_str_eq(m.doc->valuestring, WORDS);
	made_free(&m);
	make_schema(&m, "true", VIOLATION_NONE);
	cr_assert_str_eq(m.doc->valuestring, WORDS, "anything goes: a string");
	made_free(&m);
	make_schema(&m, "{\"type\":\"integer\",\"multipleOf\":7,\"minimum\":10}", VIOLATION_NONE);
	cr_assert_float_eq(m.doc->valuedouble, 14, 0);
	cr_assert_eq(m.text_at, SIZE_MAX, "no string to hold the words");
	made_free(&m);
	make_schema(&m, "{\"type\":\"number\",\"maximum\":-3.25}", VIOLATION_NONE);
	cr_assert_float_eq(m.doc->valuedouble, -3.25, 0);
	made_free(&m);
	make_schema(&m, "{\"prefixItems\":[{\"type\":\"boolean\"},{\"type\":\"integer\"}],"
		    "\"minItems\":3}", VIOLATION_NONE);
	cr_assert(cJSON_IsTrue(cJSON_GetArrayItem(m.doc, 0)));
	cr_assert(cJSON_IsNumber(cJSON_GetArrayItem(m.doc, 1)));
	cr_assert(cJSON_IsString(cJSON_GetArrayItem(m.doc, 2)));
	made_free(&m);
}

/* ---- json_schema: violations ---- */

Test(contract_schema, missing_key_leaves_out_the_first_required, .timeout = 10)
{
	struct made m;

	make_schema(&m, PERSON, VIOLATION_MISSING_KEY);
	cr_assert_null(cJSON_GetObjectItemCaseSensitive(m.doc, "name"), "%s", m.out.data);
	cr_assert_not_null(cJSON_GetObjectItemCaseSensitive(m.doc, "age"));
	cr_assert_not_null(cJSON_GetObjectItemCaseSensitive(m.doc, "extra"));
	/* The words move to the next string that can take them. */
	cr_assert_str_eq(member(m.doc, "nick")->valuestring, WORDS);
	assert_words_at(&m);
	made_free(&m);
	/* A required key that no property describes is left out too. */
	make_schema(&m, "{\"type\":\"object\",\"required\":[\"x\",\"y\"]}", VIOLATION_MISSING_KEY);
	cr_assert_null(cJSON_GetObjectItemCaseSensitive(m.doc, "x"));
	cr_assert_not_null(cJSON_GetObjectItemCaseSensitive(m.doc, "y"));
	made_free(&m);
	/* Nothing required, or no object at the top: {}. */
	make_schema(&m, "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}}}",
		    VIOLATION_MISSING_KEY);
	cr_assert_str_eq(m.out.data, "{}");
	cr_assert_eq(m.text_at, SIZE_MAX);
	made_free(&m);
	make_schema(&m, "{\"type\":\"array\"}", VIOLATION_MISSING_KEY);
	cr_assert_str_eq(m.out.data, "{}");
	made_free(&m);
}

Test(contract_schema, wrong_type_per_type, .timeout = 10)
{
	static const struct { const char *prop; const char *want; } cases[] = {
		{ "{\"type\":\"string\"}", "42" },
		{ "{\"type\":\"number\"}", "\"42\"" },
		{ "{\"type\":\"integer\"}", "\"42\"" },
		{ "{\"type\":\"boolean\"}", "\"42\"" },
		{ "{\"type\":\"object\"}", "\"42\"" },
		{ "{\"type\":\"array\"}", "\"42\"" },
		{ "{\"type\":\"null\"}", "42" },
		{ "{\"enum\":[1,2]}", "\"42\"" },
		{ "{\"const\":\"x\"}", "42" },
		{ "{\"$ref\":\"#/$defs/N\"}", "\"42\"" },
		{ "{\"anyOf\":[{\"type\":\"null\"},{\"type\":\"string\"}]}", "42" },
	};
	char schema[512];
	char want[64];
	struct made m;
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(schema, sizeof(schema), "{\"type\":\"object\",\"properties\":{\"k\":%s,"
			 "\"b\":{\"type\":\"boolean\"}},\"required\":[\"k\",\"b\"],"
			 "\"$defs\":{\"N\":{\"type\":\"number\"}}}", cases[i].prop);
		make_schema(&m, schema, VIOLATION_WRONG_TYPE);
		snprintf(want, sizeof(want), "{\"k\":%s,\"b\":true}", cases[i].want);
		cr_assert_str_eq(m.out.data, want, "for %s", cases[i].prop);
		made_free(&m);
	}
	/* No required key: the whole document is of another type. */
	make_schema(&m, "{\"type\":\"object\"}", VIOLATION_WRONG_TYPE);
	cr_assert_str_eq(m.out.data, "\"42\"");
	made_free(&m);
	make_schema(&m, "{\"type\":\"string\"}", VIOLATION_WRONG_TYPE);
	cr_assert_str_eq(m.out.data, "42");
	made_free(&m);
}

/* ---- bounds and bad schemas ---- */

Test(contract_bounds, counts_capped, .timeout = 10)
{
	struct made m;

	make_schema(&m, "{\"type\":\"array\",\"items\":{\"type\":\"integer\"},\"minItems\":1e9}",
		    VIOLATION_NONE);
	cr_assert_eq(cJSON_GetArraySize(m.doc), CONTRACT_MIN_CAP);
	made_free(&m);
	make_schema(&m, "{\"type\":\"string\",\"minLength\":1e12}", VIOLATION_NONE);
	cr_assert_eq(strlen(m.doc->valuestring), CONTRACT_MIN_CAP);
	made_free(&m);
	/* 1000 × 1000 × 1000 strings of 1000: cut short, still one JSON value. */
	make_schema(&m, "{\"type\":\"array\",\"minItems\":1000,\"items\":{\"type\":\"array\","
		    "\"minItems\":1000,\"items\":{\"type\":\"array\",\"minItems\":1000,"
		    "\"items\":{\"type\":\"string\",\"minLength\":1000}}}}", VIOLATION_NONE);
	cr_assert_leq(m.out.len, CONTRACT_MAX_BYTES + 2 * CONTRACT_MIN_CAP);
	made_free(&m);
}

Test(contract_bounds, recursion_ends, .timeout = 10)
{
	const cJSON *node;
	struct made m;
	int depth = 0;

	/* A tree whose children are optional: they stop past the first levels. */
	make_schema(&m, "{\"$ref\":\"#/$defs/Node\",\"$defs\":{\"Node\":{\"type\":\"object\","
		    "\"properties\":{\"label\":{\"type\":\"string\"},\"children\":{\"type\":\"array\","
		    "\"items\":{\"$ref\":\"#/$defs/Node\"}}},\"required\":[\"label\"]}}}",
		    VIOLATION_NONE);
	for (node = m.doc; node; depth++)
		node = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(node, "children"), 0);
	cr_assert_gt(depth, 1);
	cr_assert_lt(depth, 10);
	made_free(&m);
	/* A key required all the way down: nulls past the depth bound, and it ends. */
	make_schema(&m, "{\"$defs\":{\"L\":{\"type\":\"object\",\"properties\":{\"next\":"
		    "{\"$ref\":\"#/$defs/L\"}},\"required\":[\"next\"]}},\"$ref\":\"#/$defs/L\"}",
		    VIOLATION_NONE);
	for (node = m.doc, depth = 0; cJSON_IsObject(node); depth++)
		node = cJSON_GetObjectItemCaseSensitive(node, "next");
	cr_assert(cJSON_IsNull(node));
	cr_assert_eq(depth, CONTRACT_MAX_DEPTH);
	made_free(&m);
	/* $ref cycles with no value between them. */
	make_schema(&m, "{\"$ref\":\"#/$defs/A\",\"$defs\":{\"A\":{\"$ref\":\"#/$defs/B\"},"
		    "\"B\":{\"$ref\":\"#/$defs/A\"}}}", VIOLATION_WRONG_TYPE);
	made_free(&m);
}

Test(contract_bounds, bad_schemas_give_json, .timeout = 10)
{
	static const char *const schemas[] = {
		"{\"type\":5}",
		"{\"type\":[]}",
		"{\"type\":[\"null\"]}",
		"{\"type\":\"object\",\"properties\":[1,2],\"required\":\"x\"}",
		"{\"type\":\"object\",\"properties\":{\"a\":5},\"required\":[5,\"a\",\"a\"]}",
		"{\"type\":\"array\",\"items\":5,\"minItems\":-3,\"maxItems\":\"x\"}",
		"{\"type\":\"array\",\"items\":[{\"type\":\"integer\"}],\"minItems\":2}",
		"{\"$ref\":\"http://example.com/s\"}",
		"{\"$ref\":\"#/nowhere/at/all\"}",
		"{\"$ref\":\"#/$defs/a~1b/0\",\"$defs\":{\"a/b\":[{\"type\":\"integer\"}]}}",
		"{\"anyOf\":[]}",
		"{\"anyOf\":5,\"oneOf\":[{\"type\":\"boolean\"}]}",
		"{\"allOf\":[{\"type\":\"integer\"},{\"type\":\"string\"}]}",
		"{\"enum\":[]}",
		"{\"type\":\"integer\",\"minimum\":5,\"maximum\":1}",
		"{\"type\":\"number\",\"minimum\":1e308,\"exclusiveMinimum\":true}",
		"{\"type\":\"integer\",\"minimum\":1e300}",
		"{\"type\":\"string\",\"maxLength\":0,\"minLength\":3}",
		"{\"type\":\"object\",\"properties\":{\"\\u0000\\\"\":{\"type\":\"string\"}},"
		"\"required\":[\"\\u0000\\\"\"]}",
		"false",
	};
	enum contract_violation v;
	struct made m;
	size_t i;

	for (i = 0; i < sizeof(schemas) / sizeof(schemas[0]); i++) {
		for (v = VIOLATION_MISSING_KEY; v <= VIOLATION_NONE; v++) {
			make_schema(&m, schemas[i], v);
			made_free(&m);
		}
	}
	make_schema(&m, "{\"$ref\":\"#/$defs/a~1b/0\",\"$defs\":{\"a/b\":[{\"type\":\"integer\"}]}}",
		    VIOLATION_NONE);
	cr_assert(cJSON_IsNumber(m.doc), "a pointer with ~1 and an index: %s", m.out.data);
	made_free(&m);
	make_schema(&m, "{\"type\":\"integer\",\"minimum\":1e300}", VIOLATION_NONE);
	cr_assert_float_eq(m.doc->valuedouble, 9007199254740991.0, 0, "%s", m.out.data);
	made_free(&m);
}

/* Wide schemas — a thousand properties and required names at every level — end quickly. */
Test(contract_bounds, wide_schemas_end_quickly, .timeout = 10)
{
	struct buf schema = { 0 };
	struct buf rf = { 0 };
	struct timespec a;
	struct timespec b;
	struct contract c;
	struct buf out = { 0 };
	size_t at;
	cJSON *root;
	cJSON *doc;
	int i;

	buf_puts(&schema, "{\"type\":\"object\",\"properties\":{");
	for (i = 0; i < 1000; i++)
		buf_printf(&schema, "%s\"p%d\":{\"$ref\":\"#/$defs/d%d\"}", i ? "," : "", i, i);
	buf_puts(&schema, "},\"required\":[");
	for (i = 0; i < 1000; i++)
		buf_printf(&schema, "%s\"r%d\"", i ? "," : "", i);
	buf_puts(&schema, "],\"$defs\":{");
	for (i = 0; i < 1000; i++)
		buf_printf(&schema, "%s\"d%d\":{\"type\":\"array\",\"minItems\":1000,"
			   "\"items\":{\"$ref\":\"#\"}}", i ? "," : "", i);
	buf_puts(&schema, "}}");
	buf_printf(&rf, "{\"type\":\"json_schema\",\"json_schema\":{\"schema\":%s}}", schema.data);
	root = cJSON_Parse(rf.data);
	cr_assert_not_null(root);
	contract_read(root, &c);
	cr_assert_eq(c.kind, CONTRACT_JSON_SCHEMA);
	clock_gettime(CLOCK_MONOTONIC, &a);
	cr_assert_eq(contract_content(&c, VIOLATION_NONE, WORDS, strlen(WORDS), &out, &at), 0);
	clock_gettime(CLOCK_MONOTONIC, &b);
	cr_assert_lt((double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9, 2.0,
		     "it took too long");
	doc = json_parse_whole(out.data, out.len);
	cr_assert(cJSON_IsObject(doc), "one JSON value (%zu bytes)", out.len);
	cJSON_Delete(doc);
	cJSON_Delete(root);
	buf_free(&out);
	buf_free(&rf);
	buf_free(&schema);
}
