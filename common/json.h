/*
 * json: cJSON helpers — loading a file with a located parse error, escaping
 * strings into a buffer, and the OpenAI-style error body every program
 * answers bad requests with.
 */
#ifndef FAULTLINE_JSON_H
#define FAULTLINE_JSON_H

#include <cjson/cJSON.h>
#include <stddef.h>

#include "buf.h"

/*
 * Reads and parses a JSON file. On failure returns NULL and writes a message
 * naming the file (and line:column for syntax errors) into err.
 */
cJSON *json_load_file(const char *path, char *err, size_t errlen);

/* Appends s as a JSON string literal, quotes included. Returns 0 or -ENOMEM. */
int json_escape(struct buf *b, const char *s);

/*
 * Builds an OpenAI-style error body:
 * {"error":{"message":…,"type":…,"param":…,"code":…}}. param and code may
 * be NULL (written as null). Returns 0 or -ENOMEM.
 */
int json_openai_error(struct buf *b, const char *message, const char *type,
		      const char *param, const char *code);

/*
 * Writes root, indented, to path through path.tmp and a rename, so a
 * reader never sees half a file. Returns 0 or a negative errno.
 */
int json_write_file(const char *path, const cJSON *root);

/*
 * Parses a NUL-terminated text of len bytes as one JSON value with nothing
 * but white space after it (cJSON alone takes trailing bytes). NULL when it
 * is not, or has a NUL inside.
 */
cJSON *json_parse_whole(const char *text, size_t len);

/*
 * Copies at most max bytes of s into out (len bytes, max < len), cutting
 * before a UTF-8 sequence rather than inside it, so the copy stays text.
 */
void json_copy_cut(char *out, size_t len, const char *s, size_t max);

/* The string value of key in obj, or NULL when absent or not a string. */
const char *json_get_string(const cJSON *obj, const char *key);

/*
 * Finds the value of the top-level member key in s (len bytes of JSON that
 * cJSON has already parsed as an object), as the byte span [*start, *end).
 * Keys are compared as written, so a key spelt with escapes is not found
 * for its unescaped self: callers that must catch every spelling check
 * the return value. Returns 0; -ENOENT when no member is called key;
 * -EEXIST when two are; -EINVAL when some top-level key has an escape (it
 * might be key) or s is not an object.
 */
int json_member_span(const char *s, size_t len, const char *key, size_t *start, size_t *end);

#endif
