/*
 * contract: the content of an answer under the request's output contract
 * (its response_format), and the ways a bad_content fault breaks it. Pure:
 * a schema and the generated words in, a document out.
 *
 * What a request can ask for (contract_read, tolerant: anything it cannot
 * read is no contract, and the answer is prose):
 *   - nothing, {"type":"text"} or a response_format it cannot read:
 *     prose, the words themselves;
 *   - {"type":"json_object"}: a JSON object, {"answer":"WORDS"};
 *   - {"type":"json_schema","json_schema":{"schema":S}}: a document made
 *     to satisfy S (contract_content: the subset it knows), the words in
 *     the first string it writes that may hold them; without a usable S,
 *     the json_object shape.
 *
 * The words are put in verbatim, so a caller knows where each token of them
 * sits in the document (text_at), and streams the document in pieces that
 * follow its tokens: the text before the words goes with the first token,
 * the text after them with the last.
 */
#ifndef FAULTLINE_CONTRACT_H
#define FAULTLINE_CONTRACT_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"

/* The most items (minItems) and characters (minLength) a value is given. */
#define CONTRACT_MIN_CAP 1000
/* A document stops growing past this many values or bytes (a mock's bound). */
#define CONTRACT_MAX_VALUES 10000
#define CONTRACT_MAX_BYTES (256 * 1024)
/* How deep $ref, anyOf and nesting are followed before a value is null. */
#define CONTRACT_MAX_DEPTH 32

enum contract_kind {
	CONTRACT_NONE,		/* prose */
	CONTRACT_JSON_OBJECT,	/* any JSON object: {"answer": WORDS} */
	CONTRACT_JSON_SCHEMA,	/* a document for schema */
};

/* How a bad_content fault breaks the contract (fault "violation"). */
enum contract_violation {
	VIOLATION_PROSE,	/* prose, not JSON */
	VIOLATION_MISSING_KEY,	/* the first required key of the top-level object left out */
	VIOLATION_WRONG_TYPE,	/* that key's value of another type */
	VIOLATION_NONE,		/* a normal answer: the contract kept */
};

/* The prose a bad_content answer opens with, before the words. */
#define CONTRACT_PROSE_LEAD "Sure! Here is the answer you asked for: "

struct contract {
	enum contract_kind kind;
	const cJSON *schema;	/* CONTRACT_JSON_SCHEMA: points into the request */
};

/* The violation names, NULL-terminated, in enum order (the fault's choices). */
extern const char *const contract_violation_names[];

/*
 * Reads a request's response_format (NULL when absent) into c. Never
 * fails: whatever it cannot read is CONTRACT_NONE; a json_schema whose
 * schema is absent or neither an object nor a boolean is CONTRACT_JSON_OBJECT.
 * c->schema points into rf.
 */
void contract_read(const cJSON *rf, struct contract *c);

/*
 * Appends the content of an answer whose generated words are text (len
 * bytes) to out, under contract c, broken as v says (VIOLATION_NONE: kept).
 * *text_at is the offset in out where text starts, verbatim, or SIZE_MAX
 * when the document does not hold it (no string could take it, or it would
 * need escaping). Returns 0 or -ENOMEM.
 *
 * Without a contract the content is text (VIOLATION_NONE) or
 * CONTRACT_PROSE_LEAD + text (any violation: there is no contract to
 * break, so it is prose like a normal answer). Under json_object:
 * {"answer":"TEXT"}; prose: CONTRACT_PROSE_LEAD + text; missing_key:
 * {"text":"TEXT"}; wrong_type: {"answer":42,"text":"TEXT"}. Under
 * json_schema: the document for the schema (contract.c says which
 * keywords it follows); missing_key leaves out the first "required" key of
 * the top-level object (a top level that is no object or requires nothing
 * is {}); wrong_type writes that key's value as another type (a string as
 * 42; a number, integer, boolean, object or array as "42"; null as 42),
 * or the whole document so when there is no such key.
 */
int contract_content(const struct contract *c, enum contract_violation v, const char *text,
		     size_t len, struct buf *out, size_t *text_at);

#endif
