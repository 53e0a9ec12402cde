/*
 * timing: the timing model and token counts.
 */
#include "mockprov/timing.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const char *const words[] = {
	"Lorem", "ipsum", "dolor", "sit", "amet", "consectetur", "adipiscing",
	"elit", "sed", "do", "eiusmod", "tempor", "incididunt", "ut", "labore",
	"et", "dolore", "magna", "aliqua", "enim",
};
#define NWORDS (sizeof(words) / sizeof(words[0]))

void timing_plan(const struct timing_model *m, const struct fault_decision *d,
		 int tokens, struct rng *rng, struct timing_plan *out)
{
	double ttft = m->ttft_ms;

	if (m->jitter_ms > 0)
		ttft += rng_range(rng, -m->jitter_ms, m->jitter_ms);
	out->ttft_ms = fmax(0, ttft) + d->add_ms;
	out->token_ms = d->token_ms >= 0 ? d->token_ms : m->token_ms;
	out->tokens = tokens;
}

double timing_token_at(const struct timing_plan *p, int k)
{
	return p->ttft_ms + p->token_ms * k;
}

double timing_done_at(const struct timing_plan *p)
{
	return timing_token_at(p, p->tokens > 0 ? p->tokens - 1 : 0);
}

int timing_tokens_by(const struct timing_plan *p, double elapsed_ms)
{
	double n;

	if (elapsed_ms < p->ttft_ms)
		return 0;
	if (p->token_ms <= 0)
		return p->tokens;
	n = floor((elapsed_ms - p->ttft_ms) / p->token_ms) + 1;
	return n >= p->tokens ? p->tokens : (int)n;
}

size_t timing_content_chars(const cJSON *content)
{
	const cJSON *part;
	size_t n = 0;

	if (cJSON_IsString(content))
		return strlen(content->valuestring);
	cJSON_ArrayForEach(part, content) {
		const cJSON *text = cJSON_GetObjectItemCaseSensitive(part, "text");

		if (cJSON_IsString(text))
			n += strlen(text->valuestring);
	}
	return n;
}

int timing_prompt_tokens(const cJSON *messages)
{
	const cJSON *m;
	size_t chars = 0;

	cJSON_ArrayForEach(m, messages)
		chars += timing_content_chars(cJSON_GetObjectItemCaseSensitive(m, "content"));
	return timing_prompt_tokens_of(chars);
}

int timing_prompt_tokens_of(size_t chars)
{
	return chars ? (int)((chars + 3) / 4) : 1;
}

size_t timing_token_text(int k, char *out, size_t len)
{
	int n = snprintf(out, len, "%s%s", k ? " " : "", words[(size_t)k % NWORDS]);

	return n < 0 ? 0 : (size_t)n;
}
