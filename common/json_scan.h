/*
 * json_scan: JSON text read as written, without building a tree — the one
 * definition of the JSON every program accepts (json_check, which
 * json_parse_whole puts before cJSON), and reading values out of an
 * accepted text by their bytes: a member's value, an array's elements, a
 * value's type, a string's length or a number as cJSON would read them.
 * The gateway's hot paths (a request's checks, an answer's, each stream
 * chunk's) read what they need this way instead of parsing into cJSON.
 *
 * Every reader below takes a text (or a span of one) that json_check
 * accepted; on any other bytes what it says means nothing, but it never
 * reads outside them.
 */
#ifndef FAULTLINE_JSON_SCAN_H
#define FAULTLINE_JSON_SCAN_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

#include "common/buf.h"

/* How deep arrays and objects may nest: cJSON's own limit. */
#define JSON_DEPTH_MAX CJSON_NESTING_LIMIT

/*
 * Whether c is JSON white space (RFC 8259): space, tab, LF or CR. The one
 * definition: cJSON alone takes any byte up to 0x20.
 */
bool json_is_ws(char c);

/* A value as written: len bytes at p. An absent value is len 0. */
struct json_span {
	const char *p;
	size_t len;
};

/* The kinds of value a span holds (JSON_NONE: an empty span, nothing). */
enum json_type {
	JSON_NONE,
	JSON_NULL,
	JSON_FALSE,
	JSON_TRUE,
	JSON_NUMBER,
	JSON_STRING,
	JSON_ARRAY,
	JSON_OBJECT,
};

/* A member json_members looks up: its key in, what was found out. */
struct json_member {
	const char *key;	/* the key, as cJSON reads keys (unescaped) */
	struct json_span v;	/* the first member called key: its value */
	unsigned count;		/* how many members are called key */
};

/*
 * Checks that s (len bytes) is one JSON value, with nothing but white
 * space around it, as RFC 8259 writes it and cJSON reads it the same way:
 * - white space is space, tab, LF and CR only, and there is no byte-order
 *   mark (cJSON takes any byte up to 0x20, and skips a mark);
 * - a number is in RFC 8259's form, -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?
 *   [0-9]+)? (cJSON also reads 01, 1., 1.e5, -01);
 * - a string's escapes are JSON's (a \u with four hex digits: cJSON reads
 *   \uZZZZ as U+0000), a surrogate escape is a high one followed at once by
 *   a low one (as cJSON requires), and an object key holds no \u0000
 *   (cJSON cuts a key there); other bytes in a string are taken as they
 *   are, control bytes and bytes that are not UTF-8 too (as cJSON does),
 *   but never a NUL byte, anywhere;
 * - arrays and objects nest at most JSON_DEPTH_MAX deep (cJSON's limit).
 * Returns 0, or -EINVAL with the offset of the first byte that breaks a
 * rule in *bad_at (len when the text ends too soon; bad_at may be NULL).
 */
int json_check(const char *s, size_t len, size_t *bad_at);

/*
 * json_check, and in the same pass, when s is an object, its members m
 * (n of them) looked up as json_members does: one walk of a body for both.
 * Returns as json_check; on a text it refuses, or a value that is not an
 * object, every m[i] is found nowhere.
 */
int json_check_members(const char *s, size_t len, size_t *bad_at, struct json_member *m,
		       size_t n);

/* The type of the value v holds, told by its first byte. */
enum json_type json_type_of(struct json_span v);

/*
 * Looks up n keys among the members of the object obj in one pass. Keys
 * are compared unescaped, as cJSON reads them (\uXXXX, surrogate pairs,
 * \n and the other two-character escapes), so m[i].v is the value
 * cJSON_GetObjectItemCaseSensitive would give. Returns 0, or -EINVAL when
 * obj is not an object (every m[i] then found nowhere).
 */
int json_members(struct json_span obj, struct json_member *m, size_t n);

/*
 * The value of the first member of obj called key, as
 * cJSON_GetObjectItemCaseSensitive gives it; an empty span when there is
 * none or obj is not an object.
 */
struct json_span json_get(struct json_span obj, const char *key);

/*
 * Steps through v's items as cJSON_ArrayForEach does: an array's elements,
 * an object's members' values, nothing for any other value. *at is 0
 * before the first call; each call sets *item to the next and returns
 * true, false after the last.
 */
bool json_next(struct json_span v, size_t *at, struct json_span *item);

/*
 * json_next and json_members in one walk, for an array of objects such as
 * choices: steps through v's items as json_next does and, for an item that
 * is an object, looks up the n keys of m among its members (for any other,
 * m found nowhere). Returns true for each item, false after the last.
 */
bool json_next_members(struct json_span v, size_t *at, struct json_member *m, size_t n);

/* Whether v is an array or an object with at least one item. */
bool json_has_items(struct json_span v);

/*
 * Whether v is a string whose text as cJSON reads it is not empty: cJSON
 * cuts a string at its first \u0000, so "\u0000abc" reads as "".
 */
bool json_string_nonempty(struct json_span v);

/*
 * The length in bytes of the text of the string v as cJSON reads it
 * (strlen of its valuestring: up to the first \u0000); 0 when v is not a
 * string.
 */
size_t json_string_strlen(struct json_span v);

/*
 * Reads the number v into *d exactly as cJSON does (its valuedouble:
 * strtod over the same bytes). Returns false when v is not a number (or
 * memory for a number of 64 bytes or more runs out).
 */
bool json_number(struct json_span v, double *d);

/*
 * The tree of the value v (from a text json_check accepted), for the
 * readers that need one; NULL when memory runs out. The caller frees it.
 */
cJSON *json_parse_span(struct json_span v);

/*
 * Whether a JSON string literal as written (len bytes of s, the quotes
 * included or not) holds the escape \u0000: cJSON decodes it and then
 * cuts the string there, so "chat\u0000evil" would read as "chat".
 */
bool json_string_has_nul(const char *s, size_t len);

/*
 * Appends the text the JSON string literal s (len bytes, its quotes
 * included or not, from a text json_check accepted) says, unescaped as
 * cJSON reads it but whole: a \u0000 is a NUL byte in b where cJSON's
 * valuestring would end. Returns 0, -EINVAL for an escape cJSON refuses,
 * or -ENOMEM.
 */
int json_unescape(struct buf *b, const char *s, size_t len);

/*
 * Finds the value of the top-level member key in s, len bytes that
 * json_check accepted as an object, as the byte span [*start, *end): the
 * value exactly as written, so a caller can splice another in without
 * re-printing the rest. Keys are compared as json_members compares them.
 * Returns 0; -ENOENT when no member is called key; -EEXIST when more than
 * one is; -EINVAL when s is not an object.
 */
int json_member_span(const char *s, size_t len, const char *key, size_t *start, size_t *end);

/*
 * Steps through the elements of the array in s, len bytes holding one
 * array as written (from a text json_check accepted, like a span
 * json_member_span found): *at is 0 before the first call; each call sets
 * [*start, *end) to the next element's value as written and returns 0;
 * -ENOENT after the last; -EINVAL when s is not an array.
 */
int json_array_next(const char *s, size_t len, size_t *at, size_t *start, size_t *end);

#endif
