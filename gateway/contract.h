/*
 * contract: a request's output contract — what its `response_format`
 * asks of the answer's content (a JSON object, or a document valid under
 * a JSON Schema of the supported subset, gateway/schema.h) — and the
 * check of a chat completion against it. Pure: no I/O, no clock.
 */
#ifndef FAULTLINE_GATEWAY_CONTRACT_H
#define FAULTLINE_GATEWAY_CONTRACT_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

struct schema;

/* A compiled contract. */
struct contract {
	struct schema *schema;		/* json_schema's; NULL: json_object */
};

/*
 * Reads a response_format value (rf) into *out: NULL for `{"type":
 * "text"}` (no contract), a contract for `{"type": "json_object"}` and
 * `{"type": "json_schema", "json_schema": {"schema": {…}, …}}`. Returns
 * 0, or -EINVAL with a message in err (errlen bytes) — not an object, an
 * unknown type, no schema, a schema keyword outside the subset (named),
 * an invalid schema — or -ENOMEM.
 */
int contract_from_response_format(const cJSON *rf, struct contract **out, char *err,
				  size_t errlen);

/* Frees c (NULL is fine). */
void contract_free(struct contract *c);

/*
 * Whether completion (a parsed chat completion with a non-empty choices
 * array) honours c: every choice's message.content is a string that is
 * one JSON object (json_object), or one JSON document valid under the
 * schema. When not, why (whylen bytes) says where and what, e.g.
 * "choices[0].message.content: missing required property \"answer\"".
 */
bool contract_check(const struct contract *c, const cJSON *completion, char *why,
		    size_t whylen);

#endif
