/*
 * tokens: the one rule for reading a token count out of a usage object,
 * whoever wrote it (an OpenAI usage, an Anthropic one): a number above 0
 * and below TOKENS_MAX, as a whole count; anything else is garbage and
 * counts as 0, never cast into an overflow.
 */
#ifndef FAULTLINE_GATEWAY_TOKENS_H
#define FAULTLINE_GATEWAY_TOKENS_H

#include <stdint.h>

#include "common/json_scan.h"

/* Token counts from here up are garbage (0). */
#define TOKENS_MAX 1e15

/* The count the number v as written says, by the rule above (0 for none). */
int64_t token_count(struct json_span v);

#endif
