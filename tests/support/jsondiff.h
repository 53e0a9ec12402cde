/*
 * jsondiff: the gateway's body scanner (json_member_span) checked against
 * cJSON on one text — the differential the json unit tests and the
 * json_span fuzz harness share.
 */
#ifndef FAULTLINE_JSONDIFF_H
#define FAULTLINE_JSONDIFF_H

#include <stddef.h>

/*
 * Checks text (len bytes, NUL-terminated at len). When json_parse_whole
 * accepts it as an object, every top-level key cJSON sees, and "model",
 * must be found by json_member_span as cJSON sees it: absent (-ENOENT),
 * given more than once (-EEXIST), or one value whose bytes parse to the
 * same value; and splicing "spliced" into that span must give a text
 * json_parse_whole accepts, with that member changed and as many members.
 * Returns 1 when they agree on an accepted object, 0 when the text is not
 * one, -1 when they disagree, with a sentence saying how in why.
 */
int jsondiff_check(const char *text, size_t len, char *why, size_t whylen);

#endif
