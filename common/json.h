/*
 * json: cJSON helpers — loading a file with a located parse error, parsing
 * a body held to JSON's own rules where cJSON is lax, escaping strings into
 * a buffer, the OpenAI-style error body every program answers bad requests
 * with, and a byte scanner that finds a member's value as written (so the
 * gateway can splice one without re-printing the body).
 */
#ifndef FAULTLINE_JSON_H
#define FAULTLINE_JSON_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

#include "common/buf.h"

/*
 * Reads and parses a JSON file: one value, held to the rules json_parse_whole
 * adds to cJSON's. On failure returns NULL and writes a message naming the
 * file (and line:column for syntax errors) into err.
 */
cJSON *json_load_file(const char *path, char *err, size_t errlen);

/* Appends s as a JSON string literal, quotes included. Returns 0 or -ENOMEM. */
int json_escape(struct buf *b, const char *s);

/*
 * Appends len bytes of s as they go inside a JSON string literal, without
 * the quotes (a NUL as \u0000), so a text can be escaped in pieces: pieces
 * cut between UTF-8 sequences escape to the whole's escape. Returns 0 or
 * -ENOMEM.
 */
int json_escape_chars(struct buf *b, const char *s, size_t len);

/*
 * Builds an OpenAI-style error body:
 * {"error":{"message":…,"type":…,"param":…,"code":…}}. param and code may
 * be NULL (written as null). Returns 0 or -ENOMEM.
 */
int json_openai_error(struct buf *b, const char *message, const char *type,
		      const char *param, const char *code);

/*
 * Whether c is JSON white space (RFC 8259): space, tab, LF or CR. The one
 * definition: cJSON alone takes any byte up to 0x20.
 */
bool json_is_ws(char c);

/*
 * Parses a NUL-terminated text of len bytes as one JSON value with nothing
 * but white space after it. NULL when it is not, or has a NUL inside, or
 * breaks a rule of JSON that cJSON alone lets pass, so that cJSON and a
 * byte scanner (json_member_span) cannot read one accepted text two ways:
 * bytes after the value (cJSON alone takes them); white space outside
 * strings other than space, tab, LF and CR (cJSON takes any byte up to
 * 0x20); a leading byte-order mark (cJSON skips it); a \u escape without
 * four hex digits (cJSON reads it as U+0000); an object key with a \u0000
 * (cJSON cuts the key there).
 */
cJSON *json_parse_whole(const char *text, size_t len);

/*
 * Copies at most max bytes of text made from s into out (len bytes),
 * cutting before a UTF-8 sequence rather than inside it; each byte of s
 * that is not part of well-formed UTF-8 is written as the four characters
 * \xNN. The copy is always valid UTF-8: safe to echo in an answer.
 */
void json_copy_cut(char *out, size_t len, const char *s, size_t max);

/*
 * The words of an upstream error document root (an OpenAI {"error":{…}},
 * an Anthropic {"type":"error","error":{…}}, or a bare {"message"}):
 * error.message, else message, else error when it is a string, else "";
 * data itself when root is NULL (the data was not JSON).
 */
const char *json_error_text(const cJSON *root, const char *data);

/*
 * Whether a JSON string literal as written (len bytes of s, the quotes
 * included or not) holds the escape \u0000: cJSON decodes it and then
 * cuts the string there, so "chat\u0000evil" would read as "chat".
 */
bool json_string_has_nul(const char *s, size_t len);

/*
 * Appends the text the JSON string literal s (len bytes, its quotes
 * included or not, from a text json_parse_whole accepted) says, unescaped
 * as cJSON reads it but whole: a \u0000 is a NUL byte in b where cJSON's
 * valuestring would end. Returns 0, -EINVAL for an escape cJSON refuses, or
 * -ENOMEM.
 */
int json_unescape(struct buf *b, const char *s, size_t len);

/* The string value of key in obj, or NULL when absent or not a string. */
const char *json_get_string(const cJSON *obj, const char *key);

/*
 * Adds item to object o under key, taking it over. Returns false (item
 * freed) when item or o is NULL or the add fails, so a chain of puts
 * building a document can be checked once at the end.
 */
bool json_put(cJSON *o, const char *key, cJSON *item);

/*
 * Finds the value of the top-level member key in s, len bytes that
 * json_parse_whole accepted as an object, as the byte span [*start, *end):
 * the value exactly as written, so a caller can splice another in without
 * re-printing the rest. Keys are compared unescaped, as cJSON reads them
 * (\uXXXX, surrogate pairs, \n and the other two-character escapes), so
 * the members found are exactly those cJSON calls key. Returns 0; -ENOENT
 * when no member is called key; -EEXIST when more than one is; -EINVAL when
 * s is not an object. On a text json_parse_whole refuses, the result means
 * nothing, but the scan stays inside the len bytes.
 */
int json_member_span(const char *s, size_t len, const char *key, size_t *start, size_t *end);

/*
 * Steps through the elements of the array in s, len bytes holding one
 * array as written (from a text json_parse_whole accepted, like a span
 * json_member_span found): *at is 0 before the first call; each call sets
 * [*start, *end) to the next element's value as written and returns 0;
 * -ENOENT after the last; -EINVAL when s is not an array. On a text
 * json_parse_whole refuses, the spans mean nothing but stay inside len.
 */
int json_array_next(const char *s, size_t len, size_t *at, size_t *start, size_t *end);

#endif
