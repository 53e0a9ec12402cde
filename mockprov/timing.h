/*
 * timing: the mock's timing model and token counts (DESIGN.md). The first
 * token comes ttft_ms (± jitter_ms, drawn uniformly) after the request, plus
 * any `slow` add_ms; then one token every token_ms (or a `slow_tokens`
 * fault's interval). A whole (non-streaming) answer is sent when its last
 * token exists: ttft + token_ms × (tokens − 1). Pure: randomness comes in.
 */
#ifndef FAULTLINE_TIMING_H
#define FAULTLINE_TIMING_H

#include <cjson/cJSON.h>
#include <stddef.h>

#include "mockprov/fault.h"
#include "common/rng.h"

struct timing_model {
	double ttft_ms;
	double jitter_ms;
	double token_ms;
};

struct timing_plan {
	double ttft_ms;		/* after the request, first token */
	double token_ms;	/* between tokens */
	int tokens;		/* output tokens of the answer */
};

/* Plans an answer of `tokens` tokens under the faults in d. */
void timing_plan(const struct timing_model *m, const struct fault_decision *d,
		 int tokens, struct rng *rng, struct timing_plan *out);

/* Milliseconds after the request at which token k (0-based) exists. */
double timing_token_at(const struct timing_plan *p, int k);

/* Milliseconds after the request at which the whole answer exists. */
double timing_done_at(const struct timing_plan *p);

/* How many tokens exist elapsed_ms after the request (0 … tokens). */
int timing_tokens_by(const struct timing_plan *p, double elapsed_ms);

/*
 * Prompt tokens of a request: the characters of every message's text
 * content, one token per 4 started (at least 1).
 */
int timing_prompt_tokens(const cJSON *messages);

/*
 * The characters of one message content: a string's, or the "text" strings
 * of an array of parts (OpenAI's content parts, Anthropic's text blocks).
 */
size_t timing_content_chars(const cJSON *content);

/* The prompt tokens of chars characters of message text: a token per 4, at least 1. */
int timing_prompt_tokens_of(size_t chars);

/*
 * The text of output token k: words from a fixed list, separated by spaces,
 * so the whole answer is the tokens concatenated. Returns its length.
 */
size_t timing_token_text(int k, char *out, size_t len);

#endif
