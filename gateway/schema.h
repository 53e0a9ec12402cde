/*
 * schema: the checker of structured-output contracts — a subset of JSON
 * Schema draft 7 that a request states in response_format
 * ({"type":"json_schema","json_schema":{"schema":…}}), compiled once, then
 * applied to an answer's message.content. Pure: no I/O, no globals.
 *
 * The subset: boolean schemas (true, false) and the keywords of
 * SCHEMA_KEYWORDS, with draft 7's meaning —
 *   type        a type name or an array of them: null, boolean, object,
 *               array, number, string, integer (a number whose fraction is
 *               zero: 1.0 is an integer)
 *   properties, required, additionalProperties (a boolean or a schema)
 *   items       one schema for every item (the array form, a tuple, and
 *               additionalItems are not in the subset)
 *   enum, const deep JSON equality: numbers by value (0 == -0 == 0.0,
 *               0 != false), objects by their members whatever the order
 *   minItems, maxItems; minLength, maxLength (Unicode code points, not
 *   bytes); minimum, maximum, exclusiveMinimum, exclusiveMaximum (numbers,
 *   draft 7's form)
 *   anyOf
 *   $ref        a JSON pointer into the same schema: "#", "#/definitions/NAME",
 *               "#/$defs/NAME" or any other "#/…" location holding a schema,
 *               ~0, ~1 and %XX escapes decoded. As in draft 7, a schema with
 *               a $ref is that reference alone: its other keywords are
 *               compiled (so they must be in the subset) but never applied.
 * definitions and $defs hold schemas for $ref (each compiled, used or not).
 * The annotations of SCHEMA_ANNOTATIONS are accepted (their value's type
 * checked) and never change a result; $id only at the root, where it
 * names the document (a $ref that spells it out before the "#" is within
 * the schema too): below it, it would start another base URI.
 *
 * Any other keyword, anywhere, fails the compile: nothing is silently
 * ignored. Validation applies at most SCHEMA_MAX_DEPTH schemas one inside
 * another ($ref hops and anyOf branches count) and takes at most
 * SCHEMA_MAX_STEPS steps; a schema nested deeper than SCHEMA_MAX_DEPTH
 * does not compile; a chain of $ref and anyOf that comes back to
 * where it started without reading into the instance (e.g. a definition
 * that is {"$ref":"#"} under a root that refers to it) does not compile.
 */
#ifndef FAULTLINE_GATEWAY_SCHEMA_H
#define FAULTLINE_GATEWAY_SCHEMA_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

/* How many schemas one check may apply one inside another. */
#define SCHEMA_MAX_DEPTH 64

/*
 * How many steps one check may take — a schema applied, or a value
 * compared for enum or const — so that a schema whose anyOf branches
 * refer to one another (2^n ways through n definitions) or a vast enum
 * cannot hold the gateway: a million, about 10-50 ms.
 */
#define SCHEMA_MAX_STEPS 1000000

/* The validation keywords of the subset, as a list of string literals. */
#define SCHEMA_KEYWORDS \
	"type", "properties", "required", "additionalProperties", "items", "enum", "const", \
	"minItems", "maxItems", "minLength", "maxLength", "minimum", "maximum", \
	"exclusiveMinimum", "exclusiveMaximum", "anyOf", "$ref"

/* The keywords that hold schemas only for $ref to reach. */
#define SCHEMA_CONTAINERS "definitions", "$defs"

/* The annotations: accepted, and ignored when checking. */
#define SCHEMA_ANNOTATIONS \
	"title", "description", "$comment", "default", "examples", "$schema", "$id", \
	"readOnly", "writeOnly", "deprecated"

/* A compiled schema; the compile keeps a copy of what it needs. */
struct schema;

/*
 * Whether schema_compile accepts kw somewhere in some form: a keyword of
 * SCHEMA_KEYWORDS, SCHEMA_CONTAINERS or SCHEMA_ANNOTATIONS. (Some of these
 * are refused in one form or place: items as an array, $id below the root,
 * a $ref that leaves the schema.)
 */
bool schema_keyword_supported(const char *kw);

/*
 * Checks the schema itself and compiles it; schema is not kept. NULL on
 * failure, with a message in err (errlen bytes, always valid UTF-8). A
 * keyword, or a form of one, outside the subset gives a message beginning
 * "unsupported JSON Schema keyword " with the keyword next, in double
 * quotes, then " at " and the JSON pointer of the schema that holds it
 * ("the root" for the root), e.g.
 *   unsupported JSON Schema keyword "patternProperties" at /properties/a
 *   unsupported JSON Schema keyword "items" at /properties/xs (an array of
 *     schemas, a tuple: only one schema for every item is supported)
 * Any other message is a schema that is invalid ("minItems": -1,
 * "required": 3, a $ref to nothing, a $ref loop) or nested deeper than
 * SCHEMA_MAX_DEPTH. NULL with "out of memory" when memory ran out.
 */
struct schema *schema_compile(const cJSON *schema, char *err, size_t errlen);

/*
 * Whether instance is valid under s. When it is not, a short reason goes
 * into why (whylen bytes, always valid UTF-8; why may be NULL): the
 * instance's JSON pointer (left out at the root), then what failed, e.g.
 *   /answer: expected type "string", got number
 *   missing required property "answer"
 * A check that would apply more than SCHEMA_MAX_DEPTH schemas one inside
 * another, or take more than SCHEMA_MAX_STEPS steps, stops there and is a
 * violation (saying which bound), not a crash or a stall.
 */
bool schema_check(const struct schema *s, const cJSON *instance, char *why, size_t whylen);

/*
 * Whether text (len bytes; text[len] must be NUL, as for json_parse_whole)
 * is one JSON value, strictly — white space alone may follow it, no prose
 * around it — valid under s, or, with s NULL (response_format json_object),
 * a JSON object. A string holding the escape \u0000 fails too: cJSON would
 * cut it there, so its length and value could not be checked. why as for
 * schema_check, e.g. "content is not JSON (at byte 0)" or
 * "content has more after its JSON value (at byte 12)".
 */
bool schema_check_text(const struct schema *s, const char *text, size_t len, char *why,
		       size_t whylen);

/* Frees s (NULL is fine). */
void schema_free(struct schema *s);

#endif
