/*
 * jsondiff: the JSON scanner (common/json_scan.h) checked against cJSON on
 * one text — the differential the json unit tests and the json_span fuzz
 * harness share.
 */
#ifndef FAULTLINE_JSONDIFF_H
#define FAULTLINE_JSONDIFF_H

#include <stddef.h>

/*
 * Checks text (len bytes, NUL-terminated at len):
 * - json_check's verdict against the reference's: cJSON's own parse, held
 *   to the rules json_check documents where cJSON is lax (white space,
 *   byte-order mark, \u escapes, \u0000 in keys, NUL bytes, numbers in
 *   RFC 8259's form), each found here by a walk of its own; and
 *   json_parse_whole's verdict against both;
 * - on an accepted text, every fact the byte readers give against cJSON's
 *   tree, value by value: the type, a string's emptiness, length and text,
 *   a number's double, an array's and object's items in order, every
 *   member's count and first value by key (json_members, json_get), and
 *   json_parse_span's tree near the top;
 * - on an accepted object, json_member_span for every top-level key and
 *   "model": absent (-ENOENT), given more than once (-EEXIST), or one
 *   value; and splicing "spliced" into that span must give a text
 *   json_parse_whole accepts, with that member changed and as many
 *   members;
 * - on any text, that no reader's span leaves it.
 * Returns 1 when they agree on an accepted object, 0 when they agree on
 * anything else, -1 when they disagree, with a sentence saying how in why.
 */
int jsondiff_check(const char *text, size_t len, char *why, size_t whylen);

#endif
