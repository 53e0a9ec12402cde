/*
 * json: cJSON helpers — loading a file with a located parse error, parsing
 * a body held to JSON's own rules where cJSON is lax (json_check, from
 * json_scan.h, which this header brings in with the byte readers), escaping
 * strings into a buffer, the OpenAI-style error body every program answers
 * bad requests with.
 */
#ifndef FAULTLINE_JSON_H
#define FAULTLINE_JSON_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

#include "common/buf.h"
#include "common/json_scan.h"

/*
 * Reads and parses a JSON file: one value, as json_parse_whole takes it.
 * On failure returns NULL and writes a message naming the file (and
 * line:column of the first byte json_check refuses) into err.
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
 * Parses a NUL-terminated text of len bytes as one JSON value with nothing
 * but white space around it: the text json_check accepts (JSON as RFC 8259
 * writes it, which cJSON alone is laxer than), then parsed by cJSON, so
 * cJSON and the byte readers of json_scan.h cannot read one accepted text
 * two ways. NULL when json_check refuses it (or memory runs out).
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

/* The string value of key in obj, or NULL when absent or not a string. */
const char *json_get_string(const cJSON *obj, const char *key);

/*
 * Adds item to object o under key, taking it over. Returns false (item
 * freed) when item or o is NULL or the add fails, so a chain of puts
 * building a document can be checked once at the end.
 */
bool json_put(cJSON *o, const char *key, cJSON *item);

#endif
