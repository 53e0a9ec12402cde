/*
 * schema: the structured-output checker — each keyword of the subset
 * passing and failing with its reason, keywords outside it refused
 * wherever they are, bad values refused, $ref's forms and loops, lengths
 * in code points, integer 1.0, the depth bound, and content held to
 * strict JSON. (The official suite runs in schema_suite_test.c.)
 */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "gateway/schema.h"

TestSuite(schema, .timeout = 10);

static char err[512];
static char why[512];

/* The schema of the JSON text json, compiled; the test fails when it does not compile. */
static struct schema *compiled(const char *json)
{
	cJSON *doc = cJSON_Parse(json);
	struct schema *s;

	cr_assert_not_null(doc, "not JSON: %s", json);
	s = schema_compile(doc, err, sizeof(err));
	cJSON_Delete(doc);
	cr_assert_not_null(s, "%s does not compile: %s", json, err);
	return s;
}

/* The compile error of the JSON text json; the test fails when it compiles. */
static const char *refused(const char *json)
{
	cJSON *doc = cJSON_Parse(json);
	struct schema *s;

	cr_assert_not_null(doc, "not JSON: %s", json);
	s = schema_compile(doc, err, sizeof(err));
	cJSON_Delete(doc);
	cr_assert_null(s, "%s compiles", json);
	schema_free(s);
	return err;
}

/* Whether the JSON text json is valid under s; the reason in why. */
static bool valid(const struct schema *s, const char *json)
{
	cJSON *v = cJSON_Parse(json);
	bool ok;

	cr_assert_not_null(v, "not JSON: %s", json);
	ok = schema_check(s, v, why, sizeof(why));
	cJSON_Delete(v);
	if (ok)
		cr_assert_str_eq(why, "", "a reason for a valid %s: %s", json, why);
	else
		cr_assert_neq(why[0], '\0', "no reason for the invalid %s", json);
	return ok;
}

/* Asserts json is valid under the schema text schema. */
static void pass(const char *schema, const char *json)
{
	struct schema *s = compiled(schema);

	cr_assert(valid(s, json), "%s under %s: %s", json, schema, why);
	schema_free(s);
}

/* Asserts json is invalid under schema, for the reason reason. */
static void fail(const char *schema, const char *json, const char *reason)
{
	struct schema *s = compiled(schema);

	cr_assert_not(valid(s, json), "%s passes %s", json, schema);
	cr_assert_str_eq(why, reason, "%s under %s", json, schema);
	schema_free(s);
}

/* ---- type ---- */

Test(schema, type_each_of_the_seven)
{
	pass("{\"type\":\"null\"}", "null");
	pass("{\"type\":\"boolean\"}", "false");
	pass("{\"type\":\"object\"}", "{}");
	pass("{\"type\":\"array\"}", "[]");
	pass("{\"type\":\"number\"}", "1.5");
	pass("{\"type\":\"string\"}", "\"\"");
	pass("{\"type\":\"integer\"}", "-3");
	fail("{\"type\":\"null\"}", "0", "expected type \"null\", got number");
	fail("{\"type\":\"boolean\"}", "null", "expected type \"boolean\", got null");
	fail("{\"type\":\"object\"}", "[]", "expected type \"object\", got array");
	fail("{\"type\":\"array\"}", "{}", "expected type \"array\", got object");
	fail("{\"type\":\"number\"}", "\"1\"", "expected type \"number\", got string");
	fail("{\"type\":\"string\"}", "true", "expected type \"string\", got boolean");
}

Test(schema, integer_is_a_number_with_no_fraction)
{
	pass("{\"type\":\"integer\"}", "1.0");
	pass("{\"type\":\"integer\"}", "1e3");
	pass("{\"type\":\"integer\"}", "-0");
	fail("{\"type\":\"integer\"}", "1.5", "expected type \"integer\", got number");
	pass("{\"type\":\"number\"}", "7");
}

Test(schema, type_array_any_of_its_names)
{
	pass("{\"type\":[\"string\",\"null\"]}", "null");
	pass("{\"type\":[\"string\",\"null\"]}", "\"x\"");
	fail("{\"type\":[\"string\",\"null\"]}", "3", "expected type \"null\" or \"string\", got number");
	pass("{\"type\":[\"integer\",\"boolean\"]}", "2.0");
}

/* ---- objects ---- */

Test(schema, properties_checked_where_present)
{
	const char *sch = "{\"type\":\"object\",\"properties\":{\"answer\":{\"type\":\"string\"},"
			  "\"n\":{\"type\":\"integer\"}}}";

	pass(sch, "{\"answer\":\"yes\",\"n\":2}");
	pass(sch, "{}");
	pass(sch, "{\"other\":[1]}");
	fail(sch, "{\"answer\":42}", "/answer: expected type \"string\", got number");
	fail(sch, "{\"answer\":\"a\",\"n\":0.5}", "/n: expected type \"integer\", got number");
	/* A repeated name: every member is checked, not the first alone. */
	fail(sch, "{\"n\":1,\"n\":\"x\"}", "/n: expected type \"integer\", got string");
	/* Not an object: properties says nothing. */
	pass("{\"properties\":{\"a\":false}}", "[1]");
}

Test(schema, required_names_the_missing_property)
{
	const char *sch = "{\"required\":[\"answer\",\"why\"]}";

	pass(sch, "{\"answer\":1,\"why\":null}");
	fail(sch, "{\"why\":1}", "missing required property \"answer\"");
	fail(sch, "{\"answer\":1}", "missing required property \"why\"");
	pass(sch, "\"not an object\"");
	pass("{\"required\":[]}", "{}");
	fail("{\"properties\":{\"a\":{\"required\":[\"b\"]}}}", "{\"a\":{}}",
	     "/a: missing required property \"b\"");
}

Test(schema, additional_properties_false_or_a_schema)
{
	const char *closed = "{\"properties\":{\"a\":{}},\"additionalProperties\":false}";
	const char *typed = "{\"properties\":{\"a\":{}},\"additionalProperties\":{\"type\":\"number\"}}";

	pass(closed, "{\"a\":\"anything\"}");
	fail(closed, "{\"a\":1,\"b\":2}",
	     "property \"b\" is not allowed (additionalProperties is false)");
	pass(typed, "{\"a\":\"x\",\"b\":2,\"c\":3.5}");
	fail(typed, "{\"b\":\"x\"}", "/b: expected type \"number\", got string");
	pass("{\"additionalProperties\":true}", "{\"z\":1}");
}

Test(schema, pointer_segments_escaped_in_reasons)
{
	fail("{\"properties\":{\"a/b\":{\"properties\":{\"c~d\":{\"type\":\"string\"}}}}}",
	     "{\"a/b\":{\"c~d\":1}}", "/a~1b/c~0d: expected type \"string\", got number");
}

/* ---- arrays ---- */

Test(schema, items_one_schema_for_every_item)
{
	const char *sch = "{\"type\":\"array\",\"items\":{\"type\":\"integer\"}}";

	pass(sch, "[]");
	pass(sch, "[1,2,3.0]");
	fail(sch, "[1,2,\"3\"]", "/2: expected type \"integer\", got string");
	fail("{\"items\":{\"items\":{\"type\":\"null\"}}}", "[[null],[null,1]]",
	     "/1/1: expected type \"null\", got number");
	fail("{\"items\":false}", "[1]", "/0: no value is allowed here (the schema is false)");
	pass("{\"items\":false}", "[]");
}

Test(schema, min_and_max_items)
{
	const char *sch = "{\"minItems\":2,\"maxItems\":3}";

	pass(sch, "[1,2]");
	pass(sch, "[1,2,3]");
	fail(sch, "[1]", "1 item, fewer than minItems 2");
	fail(sch, "[1,2,3,4]", "4 items, more than maxItems 3");
	pass(sch, "\"not an array\"");
	pass("{\"maxItems\":2.0}", "[1,2]");
}

/* ---- strings ---- */

Test(schema, lengths_count_code_points_not_bytes)
{
	const char *sch = "{\"minLength\":2,\"maxLength\":3}";

	pass(sch, "\"ab\"");
	pass(sch, "\"\xc3\xa9t\xc3\xa9\"");		/* été: 3 code points, 5 bytes */
	pass(sch, "\"\xf0\x9f\x98\x80\xf0\x9f\x98\x80\"");	/* two emoji: 2, in 8 bytes */
	pass(sch, "\"\\ud83d\\ude00\\u00e9\"");		/* a surrogate pair is one */
	fail(sch, "\"\xf0\x9f\x98\x80\"", "1 character, fewer than minLength 2");
	fail(sch, "\"abcd\"", "4 characters, more than maxLength 3");
	fail("{\"maxLength\":1}", "\"\xc3\xa9\xc3\xa9\"", "2 characters, more than maxLength 1");
	pass(sch, "12345");
}

/* ---- numbers ---- */

Test(schema, minimum_maximum_and_their_exclusive_forms)
{
	pass("{\"minimum\":1,\"maximum\":3}", "1");
	pass("{\"minimum\":1,\"maximum\":3}", "3.0");
	fail("{\"minimum\":1,\"maximum\":3}", "0.5", "0.5 is less than minimum 1");
	fail("{\"minimum\":1,\"maximum\":3}", "3.25", "3.25 is greater than maximum 3");
	pass("{\"exclusiveMinimum\":1,\"exclusiveMaximum\":3}", "1.1");
	fail("{\"exclusiveMinimum\":1}", "1", "1 is not greater than exclusiveMinimum 1");
	fail("{\"exclusiveMaximum\":3}", "3", "3 is not less than exclusiveMaximum 3");
	fail("{\"minimum\":-1e-7}", "-0.1", "-0.1 is less than minimum -1e-07");
	pass("{\"minimum\":1}", "\"0\"");
}

/* ---- enum and const ---- */

Test(schema, enum_deep_equality)
{
	const char *sch = "{\"enum\":[1,\"two\",null,{\"a\":[1,{\"b\":true}],\"c\":2},[1,2]]}";

	pass(sch, "1.0");
	pass(sch, "\"two\"");
	pass(sch, "null");
	pass(sch, "{\"c\":2.0,\"a\":[1,{\"b\":true}]}");
	pass(sch, "[1,2]");
	fail(sch, "[2,1]", "not one of the 5 values of enum");
	fail(sch, "{\"a\":[1,{\"b\":true}]}", "not one of the 5 values of enum");
	fail(sch, "{\"a\":[1,{\"b\":true}],\"c\":2,\"d\":3}", "not one of the 5 values of enum");
	fail(sch, "true", "not one of the 5 values of enum");
	fail("{\"enum\":[]}", "1", "not one of the 0 values of enum");
	fail("{\"properties\":{\"mode\":{\"enum\":[\"fast\",\"slow\"]}}}", "{\"mode\":\"Fast\"}",
	     "/mode: not one of the 2 values of enum");
}

Test(schema, const_numbers_by_value_types_apart)
{
	pass("{\"const\":0}", "-0");
	pass("{\"const\":0}", "0.0");
	pass("{\"const\":-0}", "0");
	fail("{\"const\":0}", "false", "not the value of const");
	fail("{\"const\":false}", "0", "not the value of const");
	fail("{\"const\":1}", "true", "not the value of const");
	fail("{\"const\":null}", "0", "not the value of const");
	fail("{\"const\":\"\"}", "null", "not the value of const");
	pass("{\"const\":{\"x\":[1,2],\"y\":{}}}", "{\"y\":{},\"x\":[1.0,2]}");
	fail("{\"const\":{\"x\":1}}", "{\"x\":1,\"y\":1}", "not the value of const");
	fail("{\"const\":{\"x\":1,\"y\":1}}", "{\"x\":1,\"x\":1}", "not the value of const");
	fail("{\"const\":[{}]}", "[{},{}]", "not the value of const");
}

/* ---- anyOf and boolean schemas ---- */

Test(schema, any_of_one_branch_is_enough)
{
	const char *sch = "{\"anyOf\":[{\"type\":\"string\",\"maxLength\":2},{\"type\":\"integer\"}]}";

	pass(sch, "\"ab\"");
	pass(sch, "7");
	fail(sch, "\"abc\"", "matches none of the 2 schemas of anyOf");
	fail(sch, "1.5", "matches none of the 2 schemas of anyOf");
	fail("{\"properties\":{\"v\":{\"anyOf\":[false]}}}", "{\"v\":1}",
	     "/v: does not match the one schema of anyOf");
	/* A failed branch's reason does not leak into a passing check. */
	pass("{\"anyOf\":[{\"required\":[\"x\"]},true]}", "{}");
}

Test(schema, boolean_schemas)
{
	pass("true", "{\"anything\":[1]}");
	pass("{}", "null");
	fail("false", "null", "no value is allowed here (the schema is false)");
	fail("{\"properties\":{\"gone\":false}}", "{\"gone\":0}",
	     "/gone: no value is allowed here (the schema is false)");
}

/* ---- $ref ---- */

Test(schema, ref_to_definitions_defs_and_root)
{
	const char *defs = "{\"definitions\":{\"pos\":{\"type\":\"integer\",\"minimum\":1}},"
			   "\"properties\":{\"n\":{\"$ref\":\"#/definitions/pos\"}}}";
	const char *dollar = "{\"$defs\":{\"name\":{\"type\":\"string\"}},"
			     "\"items\":{\"$ref\":\"#/$defs/name\"}}";
	const char *tree = "{\"type\":\"object\",\"required\":[\"v\"],\"properties\":{\"v\":"
			   "{\"type\":\"number\"},\"kids\":{\"type\":\"array\",\"items\":{\"$ref\":\"#\"}}},"
			   "\"additionalProperties\":false}";

	pass(defs, "{\"n\":3}");
	fail(defs, "{\"n\":0}", "/n: 0 is less than minimum 1");
	pass(dollar, "[\"a\",\"b\"]");
	fail(dollar, "[\"a\",2]", "/1: expected type \"string\", got number");
	pass(tree, "{\"v\":1,\"kids\":[{\"v\":2,\"kids\":[]},{\"v\":3}]}");
	fail(tree, "{\"v\":1,\"kids\":[{\"v\":2,\"kids\":[{\"w\":1}]}]}",
	     "/kids/0/kids/0: missing required property \"v\"");
	/* A $ref to a definition that is itself a $ref. */
	pass("{\"definitions\":{\"a\":{\"type\":\"null\"},\"b\":{\"$ref\":\"#/definitions/a\"}},"
	     "\"$ref\":\"#/definitions/b\"}", "null");
	fail("{\"$ref\":\"#/definitions/f\",\"definitions\":{\"f\":false}}", "1",
	     "no value is allowed here (the schema is false)");
}

Test(schema, ref_pointer_escapes)
{
	const char *sch = "{\"definitions\":{\"a/b\":{\"type\":\"string\"},\"c~d\":{\"type\":\"null\"},"
			  "\"e%f\":{\"type\":\"boolean\"},\"g h\":{\"type\":\"integer\"}},"
			  "\"properties\":{\"1\":{\"$ref\":\"#/definitions/a~1b\"},"
			  "\"2\":{\"$ref\":\"#/definitions/c~0d\"},"
			  "\"3\":{\"$ref\":\"#/definitions/e%25f\"},"
			  "\"4\":{\"$ref\":\"#/definitions/g%20h\"}}}";

	pass(sch, "{\"1\":\"s\",\"2\":null,\"3\":true,\"4\":5}");
	fail(sch, "{\"1\":1}", "/1: expected type \"string\", got number");
	fail(sch, "{\"2\":1}", "/2: expected type \"null\", got number");
	fail(sch, "{\"3\":1}", "/3: expected type \"boolean\", got number");
	fail(sch, "{\"4\":\"x\"}", "/4: expected type \"integer\", got string");
}

Test(schema, ref_to_any_schema_in_the_document)
{
	const char *sch = "{\"properties\":{\"a\":{\"type\":\"integer\"},"
			  "\"b\":{\"$ref\":\"#/properties/a\"},"
			  "\"c\":{\"$ref\":\"#/anyOf/1\"}},\"anyOf\":[true,{\"type\":\"object\"}]}";

	pass(sch, "{\"a\":1,\"b\":2,\"c\":{}}");
	fail(sch, "{\"b\":\"x\"}", "/b: expected type \"integer\", got string");
	fail(sch, "{\"c\":[]}", "/c: expected type \"object\", got array");
}

Test(schema, ref_siblings_are_ignored_as_in_draft_7)
{
	const char *sch = "{\"definitions\":{\"list\":{\"type\":\"array\"}},"
			  "\"properties\":{\"xs\":{\"$ref\":\"#/definitions/list\",\"maxItems\":1}}}";

	pass(sch, "{\"xs\":[1,2,3]}");
	fail(sch, "{\"xs\":1}", "/xs: expected type \"array\", got number");
	/* Ignored, but still held to the subset. */
	cr_assert_str_eq(refused("{\"$ref\":\"#/definitions/a\",\"definitions\":{\"a\":true},"
				 "\"not\":{}}"),
			 "unsupported JSON Schema keyword \"not\" at the root");
	/* A property called $ref is a property. */
	pass("{\"properties\":{\"$ref\":{\"type\":\"string\"}}}", "{\"$ref\":\"x\"}");
	fail("{\"properties\":{\"$ref\":{\"type\":\"string\"}}}", "{\"$ref\":1}",
	     "/$ref: expected type \"string\", got number");
}

Test(schema, ref_outside_the_document_refused)
{
	cr_assert_str_eq(refused("{\"properties\":{\"x\":{\"$ref\":\"http://localhost:1234/integer.json\"}}}"),
			 "unsupported JSON Schema keyword \"$ref\" at /properties/x "
			 "(\"http://localhost:1234/integer.json\" is not a pointer within this schema: "
			 "\"#\", \"#/definitions/NAME\", \"#/$defs/NAME\")");
	cr_assert_str_eq(refused("{\"$ref\":\"other.json#/definitions/a\"}"),
			 "unsupported JSON Schema keyword \"$ref\" at the root "
			 "(\"other.json#/definitions/a\" is not a pointer within this schema: "
			 "\"#\", \"#/definitions/NAME\", \"#/$defs/NAME\")");
	cr_assert_str_eq(refused("{\"$ref\":\"#foo\"}"),
			 "unsupported JSON Schema keyword \"$ref\" at the root "
			 "(\"#foo\" is not a pointer within this schema: "
			 "\"#\", \"#/definitions/NAME\", \"#/$defs/NAME\")");
}

Test(schema, ref_to_nothing_refused)
{
	cr_assert_str_eq(refused("{\"items\":{\"$ref\":\"#/definitions/nope\"}}"),
			 "invalid JSON Schema at /items: \"$ref\" \"#/definitions/nope\" points at "
			 "nothing in the schema");
	cr_assert_str_eq(refused("{\"$ref\":\"#/definitions/a%2\"}"),
			 "invalid JSON Schema at the root: \"$ref\" \"#/definitions/a%2\" has a bad "
			 "%-escape");
	cr_assert_str_eq(refused("{\"$ref\":\"#/definitions/a~2\",\"definitions\":{\"a~2\":true}}"),
			 "invalid JSON Schema at the root: \"$ref\" \"#/definitions/a~2\" points at "
			 "nothing in the schema");
	/* A target that is not a schema. */
	cr_assert_str_eq(refused("{\"$ref\":\"#/enum/0\",\"enum\":[3]}"),
			 "invalid JSON Schema at /enum/0: a schema is an object or a boolean, not number");
}

Test(schema, ref_loops_refused_not_followed)
{
	cr_assert_str_eq(refused("{\"definitions\":{\"a\":{\"$ref\":\"#\"}},\"$ref\":\"#/definitions/a\"}"),
			 "invalid JSON Schema at the root: \"$ref\" \"#/definitions/a\" leads back to "
			 "itself without reading into the instance (a $ref loop)");
	cr_assert_str_eq(refused("{\"$ref\":\"#\"}"),
			 "invalid JSON Schema at the root: \"$ref\" \"#\" leads back to itself without "
			 "reading into the instance (a $ref loop)");
	cr_assert_str_eq(refused("{\"anyOf\":[{\"type\":\"string\"},{\"$ref\":\"#\"}]}"),
			 "invalid JSON Schema at /anyOf/1: \"$ref\" \"#\" leads back to itself without "
			 "reading into the instance (a $ref loop)");
	cr_assert_str_eq(refused("{\"definitions\":{\"a\":{\"$ref\":\"#/definitions/b\"},"
				 "\"b\":{\"anyOf\":[{\"$ref\":\"#/definitions/a\"}]}}}"),
			 "invalid JSON Schema at /definitions/a: \"$ref\" \"#/definitions/b\" leads "
			 "back to itself without reading into the instance (a $ref loop)");
}

/* {"properties":{"a":{"$ref":"#"}}} with an instance n objects deep: {"a":{"a":…{}}}. */
static bool nested_a(int n)
{
	struct schema *s = compiled("{\"properties\":{\"a\":{\"$ref\":\"#\"}}}");
	struct buf b = { 0 };
	cJSON *v;
	bool ok;
	int i;

	for (i = 0; i < n; i++)
		cr_assert_eq(buf_puts(&b, "{\"a\":"), 0);
	cr_assert_eq(buf_puts(&b, "{}"), 0);
	for (i = 0; i < n; i++)
		cr_assert_eq(buf_puts(&b, "}"), 0);
	v = cJSON_Parse(b.data);
	cr_assert_not_null(v);
	ok = schema_check(s, v, why, sizeof(why));
	cJSON_Delete(v);
	buf_free(&b);
	schema_free(s);
	return ok;
}

Test(schema, depth_bound_is_a_violation_not_a_crash)
{
	/* Each level applies two schemas: the property's $ref, then the root. */
	cr_assert(nested_a(SCHEMA_MAX_DEPTH / 2 - 1), "%s", why);
	cr_assert_not(nested_a(SCHEMA_MAX_DEPTH / 2));
	cr_assert(strstr(why, ": more than 64 schemas deep (the checker's bound)"), "%s", why);
	cr_assert_not(nested_a(900));
	cr_assert(strstr(why, "/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a: "),
		  "%s", why);
	/* Inside anyOf too: the bound ends the whole check. */
	{
		struct schema *s = compiled("{\"anyOf\":[{\"items\":{\"$ref\":\"#\"}},true]}");
		cJSON *v = cJSON_Parse("[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]");

		cr_assert_not(schema_check(s, v, why, sizeof(why)));
		cr_assert(strstr(why, "more than 64 schemas deep"), "%s", why);
		cJSON_Delete(v);
		schema_free(s);
	}
}

/* n definitions, each an anyOf of two $refs to the next, the last false: 2^n ways through. */
static char *anyof_ladder(int n)
{
	struct buf b = { 0 };
	int i;

	cr_assert_eq(buf_puts(&b, "{\"$ref\":\"#/definitions/d0\",\"definitions\":{"), 0);
	for (i = 0; i < n; i++)
		cr_assert_eq(buf_printf(&b, "\"d%d\":{\"anyOf\":[{\"$ref\":\"#/definitions/d%d\"},"
					"{\"$ref\":\"#/definitions/d%d\"}]},", i, i + 1, i + 1), 0);
	cr_assert_eq(buf_printf(&b, "\"d%d\":false}}", n), 0);
	return buf_steal(&b);
}

Test(schema, step_bound_stops_exponential_schemas)
{
	char *ladder = anyof_ladder(25);
	struct schema *s = compiled(ladder);
	struct buf b = { 0 };
	cJSON *v;
	int i;

	cr_assert_not(valid(s, "1"));
	cr_assert_str_eq(why, "the check took more than 1000000 steps (the checker's bound)");
	schema_free(s);
	free(ladder);
	/* A large enum against many items: each comparison is a step. */
	cr_assert_eq(buf_puts(&b, "{\"items\":{\"enum\":["), 0);
	for (i = 0; i < 5000; i++)
		cr_assert_eq(buf_printf(&b, "%s\"v%d\"", i ? "," : "", i), 0);
	cr_assert_eq(buf_puts(&b, "]}}"), 0);
	s = compiled(b.data);
	buf_reset(&b);
	cr_assert_eq(buf_puts(&b, "["), 0);
	for (i = 0; i < 400; i++)
		cr_assert_eq(buf_printf(&b, "%s\"v4999\"", i ? "," : ""), 0);
	cr_assert_eq(buf_puts(&b, "]"), 0);
	cr_assert_not(valid(s, b.data));
	cr_assert(strstr(why, ": the check took more than 1000000 steps"), "%s", why);
	schema_free(s);
	/* A plain schema over a large answer stays well inside it. */
	s = compiled("{\"type\":\"array\",\"items\":{\"type\":\"integer\",\"minimum\":0}}");
	buf_reset(&b);
	cr_assert_eq(buf_puts(&b, "["), 0);
	for (i = 0; i < 200000; i++)
		cr_assert_eq(buf_printf(&b, "%s%d", i ? "," : "", i), 0);
	cr_assert_eq(buf_puts(&b, "]"), 0);
	v = cJSON_Parse(b.data);
	cr_assert(schema_check(s, v, why, sizeof(why)), "%s", why);
	cJSON_Delete(v);
	schema_free(s);
	buf_free(&b);
}

/* A schema of n properties nested one inside another: {"properties":{"p":{"properties":…{}}}}. */
static char *nested_schema(int n)
{
	struct buf b = { 0 };
	int i;

	for (i = 0; i < n; i++)
		cr_assert_eq(buf_puts(&b, "{\"properties\":{\"p\":"), 0);
	cr_assert_eq(buf_puts(&b, "{}"), 0);
	for (i = 0; i < n; i++)
		cr_assert_eq(buf_puts(&b, "}}"), 0);
	return buf_steal(&b);
}

Test(schema, schema_nested_past_the_bound_refused)
{
	char *ok = nested_schema(SCHEMA_MAX_DEPTH - 1);
	char *deep = nested_schema(SCHEMA_MAX_DEPTH);

	schema_free(compiled(ok));
	cr_assert(strncmp(refused(deep), "JSON Schema nested deeper than 64 schemas at /properties/p/", 59) == 0,
		  "%s", err);
	free(ok);
	free(deep);
}

/* ---- what the subset refuses ---- */

Test(schema, unsupported_keywords_refused_wherever_they_are)
{
	cr_assert_str_eq(refused("{\"properties\":{\"a\":{\"patternProperties\":{\"x\":{}}}}}"),
			 "unsupported JSON Schema keyword \"patternProperties\" at /properties/a");
	cr_assert_str_eq(refused("{\"oneOf\":[true]}"),
			 "unsupported JSON Schema keyword \"oneOf\" at the root");
	cr_assert_str_eq(refused("{\"definitions\":{\"unused\":{\"pattern\":\"^a\"}}}"),
			 "unsupported JSON Schema keyword \"pattern\" at /definitions/unused");
	cr_assert_str_eq(refused("{\"$defs\":{\"x\":{\"items\":{\"format\":\"date\"}}}}"),
			 "unsupported JSON Schema keyword \"format\" at /$defs/x/items");
	cr_assert_str_eq(refused("{\"anyOf\":[true,{\"not\":{}}]}"),
			 "unsupported JSON Schema keyword \"not\" at /anyOf/1");
	cr_assert_str_eq(refused("{\"additionalProperties\":{\"uniqueItems\":true}}"),
			 "unsupported JSON Schema keyword \"uniqueItems\" at /additionalProperties");
	cr_assert_str_eq(refused("{\"type\":\"array\",\"items\":[{\"type\":\"string\"}]}"),
			 "unsupported JSON Schema keyword \"items\" at the root (an array of schemas, "
			 "a tuple: only one schema for every item is supported)");
	cr_assert_str_eq(refused("{\"items\":{},\"additionalItems\":false}"),
			 "unsupported JSON Schema keyword \"additionalItems\" at the root");
	cr_assert_str_eq(refused("{\"allOf\":[true],\"type\":\"string\"}"),
			 "unsupported JSON Schema keyword \"allOf\" at the root");
	cr_assert_str_eq(refused("{\"properties\":{\"a\":{\"Type\":\"string\"}}}"),
			 "unsupported JSON Schema keyword \"Type\" at /properties/a");
}

Test(schema, bad_keyword_values_refused)
{
	cr_assert_str_eq(refused("{\"minItems\":-1}"),
			 "invalid JSON Schema at the root: \"minItems\" must be a non-negative integer");
	cr_assert_str_eq(refused("{\"properties\":{\"s\":{\"maxLength\":1.5}}}"),
			 "invalid JSON Schema at /properties/s: \"maxLength\" must be a non-negative "
			 "integer");
	cr_assert_str_eq(refused("{\"minLength\":\"2\"}"),
			 "invalid JSON Schema at the root: \"minLength\" must be a non-negative integer");
	cr_assert_str_eq(refused("{\"required\":3}"),
			 "invalid JSON Schema at the root: \"required\" must be an array of distinct "
			 "property names");
	cr_assert_str_eq(refused("{\"required\":[\"a\",\"a\"]}"),
			 "invalid JSON Schema at the root: \"required\" must be an array of distinct "
			 "property names");
	cr_assert_str_eq(refused("{\"required\":[\"a\",1]}"),
			 "invalid JSON Schema at the root: \"required\" must be an array of distinct "
			 "property names");
	cr_assert(strstr(refused("{\"type\":\"float\"}"), "\"type\" must be a type name"), "%s", err);
	cr_assert(strstr(refused("{\"type\":[]}"), "\"type\" must be a type name"), "%s", err);
	cr_assert(strstr(refused("{\"type\":[\"string\",\"string\"]}"), "\"type\" must be"), "%s", err);
	cr_assert_str_eq(refused("{\"properties\":[]}"),
			 "invalid JSON Schema at the root: \"properties\" must be an object of schemas");
	cr_assert_str_eq(refused("{\"properties\":{\"a\":3}}"),
			 "invalid JSON Schema at /properties/a: a schema is an object or a boolean, not "
			 "number");
	cr_assert_str_eq(refused("{\"properties\":{\"a\":{},\"a\":{}}}"),
			 "invalid JSON Schema at the root: \"properties\" names \"a\" twice");
	cr_assert_str_eq(refused("{\"anyOf\":[]}"),
			 "invalid JSON Schema at the root: \"anyOf\" must be a non-empty array of schemas");
	cr_assert_str_eq(refused("{\"enum\":{}}"),
			 "invalid JSON Schema at the root: \"enum\" must be an array of values");
	cr_assert_str_eq(refused("{\"minimum\":\"1\"}"),
			 "invalid JSON Schema at the root: \"minimum\" must be a number");
	cr_assert_str_eq(refused("{\"exclusiveMaximum\":true}"),
			 "invalid JSON Schema at the root: \"exclusiveMaximum\" must be a number");
	cr_assert_str_eq(refused("{\"$ref\":3}"),
			 "invalid JSON Schema at the root: \"$ref\" must be a string");
	cr_assert_str_eq(refused("{\"definitions\":[]}"),
			 "invalid JSON Schema at the root: \"definitions\" must be an object of schemas");
	cr_assert_str_eq(refused("{\"type\":\"string\",\"type\":\"number\"}"),
			 "invalid JSON Schema at the root: \"type\" appears twice");
	cr_assert_str_eq(refused("[]"),
			 "invalid JSON Schema at the root: a schema is an object or a boolean, not array");
	cr_assert_str_eq(refused("{\"title\":3}"),
			 "invalid JSON Schema at the root: \"title\" must be a string");
	cr_assert_str_eq(refused("{\"readOnly\":\"yes\"}"),
			 "invalid JSON Schema at the root: \"readOnly\" must be true or false");
	cr_assert_str_eq(refused("{\"examples\":{}}"),
			 "invalid JSON Schema at the root: \"examples\" must be an array");
	cr_assert_null(schema_compile(NULL, err, sizeof(err)));
	cr_assert_str_eq(err, "invalid JSON Schema: there is none");
}

Test(schema, annotations_accepted_and_ignored)
{
	const char *sch = "{\"$schema\":\"http://json-schema.org/draft-07/schema#\","
			  "\"$id\":\"https://example.com/answer.json\",\"title\":\"T\","
			  "\"description\":\"D\",\"$comment\":\"C\",\"default\":{\"a\":1},"
			  "\"examples\":[1,\"x\"],\"readOnly\":true,\"writeOnly\":false,"
			  "\"deprecated\":true,\"type\":\"object\",\"properties\":{\"a\":{\"title\":\"A\","
			  "\"default\":\"not an integer\",\"type\":\"integer\"}}}";

	pass(sch, "{\"a\":1}");
	fail(sch, "{\"a\":\"x\"}", "/a: expected type \"integer\", got string");
	/* The root's $id does not change where "#…" leads. */
	pass("{\"$id\":\"http://example.com/root.json\",\"definitions\":{\"s\":{\"type\":\"string\"}},"
	     "\"items\":{\"$ref\":\"#/definitions/s\"}}", "[\"a\"]");
	/* A $ref that spells the root's $id out is within the document too. */
	pass("{\"$id\":\"http://example.com/root.json\",\"definitions\":{\"s\":{\"type\":\"string\"}},"
	     "\"properties\":{\"a\":{\"$ref\":\"http://example.com/root.json#/definitions/s\"},"
	     "\"b\":{\"items\":{\"$ref\":\"http://example.com/root.json\"}}}}",
	     "{\"a\":\"x\",\"b\":[{\"a\":\"y\"}]}");
	fail("{\"$id\":\"http://example.com/root.json#\",\"definitions\":{\"s\":{\"type\":\"string\"}},"
	     "\"items\":{\"$ref\":\"http://example.com/root.json#/definitions/s\"}}", "[1]",
	     "/0: expected type \"string\", got number");
	cr_assert(strncmp(refused("{\"$id\":\"http://example.com/a\",\"items\":"
				  "{\"$ref\":\"http://example.com/ab#/definitions/s\"}}"),
			  "unsupported JSON Schema keyword \"$ref\" at /items", 47) == 0, "%s", err);
	cr_assert(strncmp(refused("{\"$id\":\"http://example.com/root.json\",\"items\":"
				  "{\"$ref\":\"http://example.com/other.json#/definitions/s\"}}"),
			  "unsupported JSON Schema keyword \"$ref\" at /items", 47) == 0, "%s", err);
	/* An empty $ref is the document itself, as "#" is. */
	pass("{\"type\":\"array\",\"items\":{\"$ref\":\"\"}}", "[[],[[]]]");
	fail("{\"type\":\"array\",\"items\":{\"$ref\":\"\"}}", "[[],[1]]",
	     "/1/0: expected type \"array\", got number");
	cr_assert_str_eq(refused("{\"definitions\":{\"node\":{\"$id\":\"http://example.com/node\"}}}"),
			 "unsupported JSON Schema keyword \"$id\" at /definitions/node (only the root may "
			 "have one: below it, it starts another base URI)");
}

Test(schema, keyword_lists_match_what_compiles)
{
	static const char *const known[] = { SCHEMA_KEYWORDS, SCHEMA_CONTAINERS, SCHEMA_ANNOTATIONS };
	static const char *const unknown[] = {
		"allOf", "oneOf", "not", "if", "then", "else", "pattern", "patternProperties",
		"format", "multipleOf", "uniqueItems", "contains", "additionalItems",
		"propertyNames", "dependencies", "minProperties", "maxProperties", "TYPE", "",
	};
	char json[128];
	char prefix[96];
	size_t i;

	for (i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
		struct schema *s;
		cJSON *doc;

		cr_assert(schema_keyword_supported(known[i]), "%s", known[i]);
		/* A value of the wrong type: refused, but never as unsupported. */
		snprintf(json, sizeof(json), "{\"%s\":null}", known[i]);
		doc = cJSON_Parse(json);
		s = schema_compile(doc, err, sizeof(err));
		cJSON_Delete(doc);
		schema_free(s);
		cr_assert(s || strncmp(err, "unsupported", 11) != 0, "%s: %s", known[i], err);
	}
	for (i = 0; i < sizeof(unknown) / sizeof(unknown[0]); i++) {
		cr_assert_not(schema_keyword_supported(unknown[i]), "%s", unknown[i]);
		snprintf(json, sizeof(json), "{\"%s\":{}}", unknown[i]);
		snprintf(prefix, sizeof(prefix), "unsupported JSON Schema keyword \"%s\" at the root",
			 unknown[i]);
		cr_assert_str_eq(refused(json), prefix);
	}
}

/* ---- reasons ---- */

Test(schema, reasons_cut_as_utf8)
{
	struct schema *s = compiled("{\"required\":[\"\xc3\xa9\xc3\xa9\xc3\xa9\"]}");
	cJSON *v = cJSON_Parse("{}");
	char small[24];

	cr_assert_not(schema_check(s, v, small, sizeof(small)));
	/* "missing required property \"" is 27 bytes: cut at 23, whole characters only. */
	cr_assert_str_eq(small, "missing required proper");
	cr_assert_not(schema_check(s, v, NULL, 0));
	cJSON_Delete(v);
	schema_free(s);
	schema_free(NULL);
	s = compiled("{\"properties\":{\"\xff\":{\"type\":\"null\"}}}");
	v = cJSON_Parse("{\"\xff\":1}");
	cr_assert_not(schema_check(s, v, why, sizeof(why)));
	cr_assert_str_eq(why, "/\\xff: expected type \"null\", got number");
	cJSON_Delete(v);
	schema_free(s);
}

/* ---- content as text ---- */

/* schema_check_text on a C string. */
static bool text_ok(const struct schema *s, const char *text)
{
	return schema_check_text(s, text, strlen(text), why, sizeof(why));
}

Test(schema, text_is_one_json_value_alone)
{
	struct schema *s = compiled("{\"type\":\"object\",\"required\":[\"answer\"],"
				    "\"properties\":{\"answer\":{\"type\":\"string\"}}}");

	cr_assert(text_ok(s, "{\"answer\":\"yes\"}"), "%s", why);
	cr_assert(text_ok(s, " \n\t{\"answer\":\"yes\"}\r\n "), "%s", why);
	cr_assert_not(text_ok(s, "{\"answer\":\"yes\"} trailing"));
	cr_assert_str_eq(why, "content has more after its JSON value (at byte 17)");
	cr_assert_not(text_ok(s, "{\"answer\":\"yes\"}{}"));
	cr_assert_str_eq(why, "content has more after its JSON value (at byte 16)");
	cr_assert_not(text_ok(s, "Sure! Here it is: {\"answer\":\"yes\"}"));
	cr_assert_str_eq(why, "content is not JSON (at byte 0)");
	cr_assert_not(text_ok(s, "```json\n{\"answer\":\"yes\"}\n```"));
	cr_assert_str_eq(why, "content is not JSON (at byte 0)");
	cr_assert_not(text_ok(s, "{\"answer\":\"yes\""));
	cr_assert(strncmp(why, "content is not JSON (at byte ", 29) == 0, "%s", why);
	cr_assert_not(text_ok(s, ""));
	cr_assert_str_eq(why, "content is empty");
	cr_assert_not(text_ok(s, "  \n"));
	cr_assert_str_eq(why, "content is empty");
	cr_assert_not(text_ok(s, "\xef\xbb\xbf{\"answer\":\"yes\"}"));
	cr_assert(strncmp(why, "content is not", 14) == 0, "%s", why);
	cr_assert_not(text_ok(s, "{\"answer\":\"yes\"}\f"));
	cr_assert(strncmp(why, "content ", 8) == 0, "%s", why);
	cr_assert_not(text_ok(s, "{\"answer\":42}"));
	cr_assert_str_eq(why, "/answer: expected type \"string\", got number");
	cr_assert_not(text_ok(s, "{}"));
	cr_assert_str_eq(why, "missing required property \"answer\"");
	cr_assert_not(schema_check_text(s, "{}\0{}", 4, why, sizeof(why)));
	cr_assert_str_eq(why, "content is not JSON (a NUL byte at byte 2)");
	schema_free(s);
}

Test(schema, text_json_object_mode)
{
	cr_assert(text_ok(NULL, "{}"), "%s", why);
	cr_assert(text_ok(NULL, "{\"anything\":[1,2]}"), "%s", why);
	cr_assert_not(text_ok(NULL, "[1,2]"));
	cr_assert_str_eq(why, "content is a JSON array, not an object");
	cr_assert_not(text_ok(NULL, "\"{}\""));
	cr_assert_str_eq(why, "content is a JSON string, not an object");
	cr_assert_not(text_ok(NULL, "42"));
	cr_assert_str_eq(why, "content is a JSON number, not an object");
	cr_assert_not(text_ok(NULL, "null"));
	cr_assert_str_eq(why, "content is a JSON null, not an object");
	cr_assert_not(text_ok(NULL, "The answer is {\"a\":1}."));
	cr_assert_str_eq(why, "content is not JSON (at byte 0)");
}

Test(schema, text_with_a_nul_escape_cannot_be_checked)
{
	struct schema *s = compiled("{\"properties\":{\"a\":{\"maxLength\":1}}}");

	cr_assert_not(text_ok(s, "{\"a\":\"x\\u0000yz\"}"));
	cr_assert_str_eq(why, "content has a string holding \\u0000, which cannot be checked");
	cr_assert(text_ok(s, "{\"a\":\"\\\\u0000\"}") == false);	/* \\u0000 is six characters */
	cr_assert_str_eq(why, "/a: 6 characters, more than maxLength 1");
	cr_assert_not(text_ok(NULL, "{\"a\":\"\\u0000\"}"));
	schema_free(s);
}

/* A wide object as a const (or an instance under many required names): names compared are steps. */
Test(schema, step_bound_stops_wide_objects)
{
	struct buf b = { 0 };
	struct buf inst = { 0 };
	struct schema *s;
	int i;

	/* const: every name of one object looked for among the other's. */
	cr_assert_eq(buf_puts(&b, "{\"const\":{"), 0);
	cr_assert_eq(buf_puts(&inst, "{"), 0);
	for (i = 0; i < 5000; i++) {
		cr_assert_eq(buf_printf(&b, "%s\"k%d\":%d", i ? "," : "", i, i), 0);
		/* The same members in the opposite order: the worst case of the scan. */
		cr_assert_eq(buf_printf(&inst, "%s\"k%d\":%d", i ? "," : "", 4999 - i, 4999 - i), 0);
	}
	cr_assert_eq(buf_puts(&b, "}}"), 0);
	cr_assert_eq(buf_puts(&inst, "}"), 0);
	s = compiled(b.data);
	cr_assert_not(valid(s, inst.data));
	cr_assert_str_eq(why, "the check took more than 1000000 steps (the checker's bound)");
	schema_free(s);
	/* required: 2,000 names, all there, behind 2,000 other members of the answer. */
	buf_reset(&b);
	buf_reset(&inst);
	cr_assert_eq(buf_puts(&b, "{\"required\":["), 0);
	cr_assert_eq(buf_puts(&inst, "{"), 0);
	for (i = 0; i < 2000; i++) {
		cr_assert_eq(buf_printf(&b, "%s\"r%d\"", i ? "," : "", i), 0);
		cr_assert_eq(buf_printf(&inst, "\"x%d\":0,", i), 0);
	}
	for (i = 1999; i >= 0; i--)
		cr_assert_eq(buf_printf(&inst, "\"r%d\":0%s", i, i ? "," : ""), 0);
	cr_assert_eq(buf_puts(&b, "]}"), 0);
	cr_assert_eq(buf_puts(&inst, "}"), 0);
	s = compiled(b.data);
	cr_assert_not(valid(s, inst.data));
	cr_assert_str_eq(why, "the check took more than 1000000 steps (the checker's bound)");
	schema_free(s);
	/* A modest const still compares whole. */
	s = compiled("{\"const\":{\"a\":1,\"b\":[1,2]}}");
	cr_assert(valid(s, "{\"b\":[1,2],\"a\":1.0}"), "%s", why);
	schema_free(s);
	buf_free(&b);
	buf_free(&inst);
}

/* A $ref to a pointer longer than messages show: later pushes must stay in the buffer. */
Test(schema, a_long_ref_path_is_cut_and_stays_in_bounds)
{
	struct buf b = { 0 };
	char name[260];
	const char *msg;

	memset(name, 'n', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	cr_assert_eq(buf_printf(&b, "{\"$ref\":\"#/definitions/%s\",\"definitions\":{\"%s\":"
				"{\"properties\":{\"a\":{\"properties\":{\"b\":{\"pattern\":\"x\"}}}}}}}",
				name, name), 0);
	msg = refused(b.data);
	cr_assert(strstr(msg, "unsupported JSON Schema keyword \"pattern\" at /definitions/"),
		  "%s", msg);
	cr_assert(strstr(msg, "/..."), "the pointer is cut: %s", msg);
	cr_assert_lt(strlen(msg), 400);
	buf_free(&b);
}
