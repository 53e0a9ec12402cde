/*
 * timing: the mock's timing plan (ttft ± jitter, slow faults), when tokens
 * exist, prompt token counts and the token texts.
 */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "mockprov/timing.h"

/* The decision of a request no fault touches. */
static void no_faults(struct fault_decision *d)
{
	struct rng r;

	rng_seed(&r, 1);
	fault_decide(NULL, 0, 0, 10, &r, d);
}

static struct timing_plan plan_of(double ttft, double token_ms, int tokens)
{
	struct timing_plan p = { .ttft_ms = ttft, .token_ms = token_ms, .tokens = tokens };

	return p;
}

static int prompt_tokens(const char *messages_json)
{
	cJSON *m = cJSON_Parse(messages_json);
	int n;

	cr_assert_not_null(m, "test JSON does not parse: %s", messages_json);
	n = timing_prompt_tokens(m);
	cJSON_Delete(m);
	return n;
}

Test(timing, plan_without_jitter_or_faults, .timeout = 10)
{
	struct timing_model m = { .ttft_ms = 200, .jitter_ms = 0, .token_ms = 30 };
	struct fault_decision d;
	struct timing_plan p;
	struct rng r;

	no_faults(&d);
	rng_seed(&r, 1);
	timing_plan(&m, &d, 16, &r, &p);
	cr_assert_float_eq(p.ttft_ms, 200, 0);
	cr_assert_float_eq(p.token_ms, 30, 0);
	cr_assert_eq(p.tokens, 16);
}

Test(timing, jitter_within_bounds_and_reproducible, .timeout = 10)
{
	struct timing_model m = { .ttft_ms = 200, .jitter_ms = 50, .token_ms = 10 };
	struct fault_decision d;
	struct timing_plan p;
	struct rng r;
	double first[1000];
	double lo = INFINITY;
	double hi = -INFINITY;
	int i;

	no_faults(&d);
	rng_seed(&r, 31);
	for (i = 0; i < 1000; i++) {
		timing_plan(&m, &d, 4, &r, &p);
		cr_assert(p.ttft_ms >= 150 && p.ttft_ms <= 250, "ttft %.3f", p.ttft_ms);
		first[i] = p.ttft_ms;
		lo = fmin(lo, p.ttft_ms);
		hi = fmax(hi, p.ttft_ms);
	}
	cr_assert_lt(lo, 160, "jitter never went low: min %.3f", lo);
	cr_assert_gt(hi, 240, "jitter never went high: max %.3f", hi);
	rng_seed(&r, 31);
	for (i = 0; i < 1000; i++) {
		timing_plan(&m, &d, 4, &r, &p);
		cr_assert_float_eq(p.ttft_ms, first[i], 0, "plan %d differs", i);
	}
}

Test(timing, jitter_never_negative, .timeout = 10)
{
	struct timing_model m = { .ttft_ms = 5, .jitter_ms = 50, .token_ms = 10 };
	struct fault_decision d;
	struct timing_plan p;
	struct rng r;
	int i;

	no_faults(&d);
	rng_seed(&r, 8);
	for (i = 0; i < 1000; i++) {
		timing_plan(&m, &d, 4, &r, &p);
		cr_assert_geq(p.ttft_ms, 0, "ttft %.3f", p.ttft_ms);
	}
}

Test(timing, slow_add_ms_is_added, .timeout = 10)
{
	struct timing_model m = { .ttft_ms = 200, .jitter_ms = 0, .token_ms = 30 };
	struct fault fs[2];
	struct fault_decision d;
	struct timing_plan p;
	struct rng r;

	memset(fs, 0, sizeof(fs));
	fs[0].kind = FAULT_SLOW;
	fs[0].to_ms = 1000;
	fs[0].probability = 1;
	fs[0].add_ms = 300;
	fs[1] = fs[0];
	fs[1].add_ms = 50;
	rng_seed(&r, 1);
	fault_decide(fs, 2, 0, 10, &r, &d);
	timing_plan(&m, &d, 8, &r, &p);
	cr_assert_float_eq(p.ttft_ms, 550, 0);
	cr_assert_float_eq(p.token_ms, 30, 0, "slow changed the token interval");
}

Test(timing, slow_tokens_replaces_token_ms, .timeout = 10)
{
	struct timing_model m = { .ttft_ms = 200, .jitter_ms = 0, .token_ms = 30 };
	struct fault f;
	struct fault_decision d;
	struct timing_plan p;
	struct rng r;

	memset(&f, 0, sizeof(f));
	f.kind = FAULT_SLOW_TOKENS;
	f.to_ms = 1000;
	f.probability = 1;
	f.token_ms = 250;
	rng_seed(&r, 1);
	fault_decide(&f, 1, 0, 10, &r, &d);
	timing_plan(&m, &d, 8, &r, &p);
	cr_assert_float_eq(p.token_ms, 250, 0);
	cr_assert_float_eq(p.ttft_ms, 200, 0);
	f.token_ms = 5;
	fault_decide(&f, 1, 0, 10, &r, &d);
	timing_plan(&m, &d, 8, &r, &p);
	cr_assert_float_eq(p.token_ms, 5, 0, "a faster slow_tokens still replaces");
}

Test(timing, token_at_and_done_at, .timeout = 10)
{
	struct timing_plan p = plan_of(200, 30, 16);

	cr_assert_float_eq(timing_token_at(&p, 0), 200, 0);
	cr_assert_float_eq(timing_token_at(&p, 1), 230, 0);
	cr_assert_float_eq(timing_token_at(&p, 15), 650, 0);
	cr_assert_float_eq(timing_done_at(&p), 650, 0, "ttft + token_ms × (tokens − 1)");
	p = plan_of(200, 30, 1);
	cr_assert_float_eq(timing_done_at(&p), 200, 0);
	p = plan_of(200, 30, 0);
	cr_assert_float_eq(timing_done_at(&p), 200, 0);
}

Test(timing, tokens_by_at_boundaries, .timeout = 10)
{
	struct timing_plan p = plan_of(200, 30, 16);

	cr_assert_eq(timing_tokens_by(&p, 0), 0);
	cr_assert_eq(timing_tokens_by(&p, 199.999), 0);
	cr_assert_eq(timing_tokens_by(&p, 200), 1);
	cr_assert_eq(timing_tokens_by(&p, 229.999), 1);
	cr_assert_eq(timing_tokens_by(&p, 230), 2);
	cr_assert_eq(timing_tokens_by(&p, 649.999), 15);
	cr_assert_eq(timing_tokens_by(&p, 650), 16);
	cr_assert_eq(timing_tokens_by(&p, 1e6), 16);
}

Test(timing, tokens_by_matches_token_at, .timeout = 10)
{
	struct timing_plan p = plan_of(123.5, 17.25, 40);
	int k;

	for (k = 0; k < 40; k++)
		cr_assert_eq(timing_tokens_by(&p, timing_token_at(&p, k)), k + 1, "token %d", k);
	cr_assert_eq(timing_tokens_by(&p, timing_done_at(&p)), 40);
}

Test(timing, zero_token_ms_all_at_ttft, .timeout = 10)
{
	struct timing_plan p = plan_of(200, 0, 16);

	cr_assert_eq(timing_tokens_by(&p, 199.9), 0);
	cr_assert_eq(timing_tokens_by(&p, 200), 16);
	cr_assert_float_eq(timing_done_at(&p), 200, 0);
}

Test(timing, prompt_tokens_rounds_up, .timeout = 10)
{
	cr_assert_eq(prompt_tokens("[{\"role\":\"user\",\"content\":\"abcd\"}]"), 1);
	cr_assert_eq(prompt_tokens("[{\"role\":\"user\",\"content\":\"abcde\"}]"), 2);
	cr_assert_eq(prompt_tokens("[{\"role\":\"user\",\"content\":\"abcdefgh\"}]"), 2);
	cr_assert_eq(prompt_tokens("[{\"role\":\"system\",\"content\":\"abc\"},"
				   "{\"role\":\"user\",\"content\":\"abcdef\"}]"), 3);
}

Test(timing, prompt_tokens_at_least_one, .timeout = 10)
{
	cr_assert_eq(prompt_tokens("[]"), 1);
	cr_assert_eq(prompt_tokens("[{\"role\":\"user\",\"content\":\"\"}]"), 1);
	cr_assert_eq(prompt_tokens("[{\"role\":\"assistant\",\"content\":null}]"), 1);
}

Test(timing, prompt_tokens_counts_text_parts, .timeout = 10)
{
	cr_assert_eq(prompt_tokens("[{\"role\":\"user\",\"content\":["
				   "{\"type\":\"text\",\"text\":\"abcdefgh\"},"
				   "{\"type\":\"image_url\",\"image_url\":{\"url\":\"http://x/very-long-url\"}},"
				   "{\"type\":\"text\",\"text\":\"ab\"}]},"
				   "{\"role\":\"user\",\"content\":\"xyz\"}]"), 4);
}

Test(timing, token_text_first_has_no_space, .timeout = 10)
{
	char t[32];

	cr_assert_eq(timing_token_text(0, t, sizeof(t)), 5);
	cr_assert_str_eq(t, "Lorem");
	cr_assert_eq(timing_token_text(1, t, sizeof(t)), 6);
	cr_assert_str_eq(t, " ipsum");
}

Test(timing, token_text_concatenates_with_single_spaces, .timeout = 10)
{
	char all[1024] = "";
	char t[32];
	size_t len = 0;
	int words = 0;
	int k;
	char *p;

	for (k = 0; k < 45; k++) {
		size_t n = timing_token_text(k, t, sizeof(t));

		cr_assert_eq(n, strlen(t));
		cr_assert_gt(n, 0);
		cr_assert_lt(len + n, sizeof(all));
		memcpy(all + len, t, n + 1);
		len += n;
	}
	cr_assert_neq(all[0], ' ');
	cr_assert_neq(all[len - 1], ' ');
	cr_assert_null(strstr(all, "  "), "double space in \"%s\"", all);
	cr_assert_eq(strncmp(all, "Lorem ipsum dolor sit amet consectetur", 38), 0, "%s", all);
	for (p = all; *p; p++)
		words += *p != ' ' && (p == all || p[-1] == ' ');
	cr_assert_eq(words, 45, "%s", all);
}
