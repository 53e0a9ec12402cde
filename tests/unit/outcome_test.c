/*
 * outcome: the facts of an attempt decide its outcome — libcurl's error
 * first (after a cut by loadgen's own watchdog), then the HTTP status, then
 * the body (a chat completion) or the stream (an event stream, no broken
 * frame, no error event, [DONE]; a "stream_stalled" error event makes it a
 * stall) — and a retrying client tries again only
 * after refused, reset, timeout and HTTP 408, 409, 429, 5xx, and never once
 * a stream has shown content; a libcurl re-send past the retries allowed
 * leaves a request reset.
 */
#include <criterion/criterion.h>
#include <curl/curl.h>
#include <stdbool.h>
#include <stddef.h>

#include "loadgen/outcome.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* One row of a classification table: the facts and the outcome they give. */
struct classify_case {
	const char *what;
	struct attempt_facts f;
	enum outcome want;
};

static void check_classify(const struct classify_case *c, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		enum outcome got = outcome_classify(&c[i].f);

		cr_assert_eq(got, c[i].want, "%s: %s, expected %s", c[i].what, outcome_name(got),
			     outcome_name(c[i].want));
	}
}

Test(outcome, names_as_in_requests_csv, .timeout = 10)
{
	static const struct { enum outcome o; const char *name; } names[] = {
		{ OUT_OK, "ok" }, { OUT_HTTP_ERROR, "http_error" }, { OUT_TIMEOUT, "timeout" },
		{ OUT_REFUSED, "refused" }, { OUT_RESET, "reset" },
		{ OUT_TRUNCATED, "truncated" }, { OUT_STALLED, "stalled" },
		{ OUT_INVALID, "invalid" },
	};
	size_t i;

	cr_assert_eq(N(names), OUT_COUNT);
	for (i = 0; i < N(names); i++)
		cr_assert_str_eq(outcome_name(names[i].o), names[i].name);
	cr_assert_str_eq(outcome_name(OUT_COUNT), "?");
}

Test(outcome, curl_errors, .timeout = 10)
{
	static const struct classify_case cases[] = {
		{ "COULDNT_CONNECT", { .curl_code = CURLE_COULDNT_CONNECT }, OUT_REFUSED },
		{ "COULDNT_RESOLVE_HOST", { .curl_code = CURLE_COULDNT_RESOLVE_HOST },
		  OUT_REFUSED },
		{ "OPERATION_TIMEDOUT", { .curl_code = CURLE_OPERATION_TIMEDOUT }, OUT_TIMEOUT },
		{ "PARTIAL_FILE after a 200", { .curl_code = CURLE_PARTIAL_FILE, .status = 200 },
		  OUT_TRUNCATED },
		{ "RECV_ERROR", { .curl_code = CURLE_RECV_ERROR }, OUT_RESET },
		{ "GOT_NOTHING", { .curl_code = CURLE_GOT_NOTHING }, OUT_RESET },
		{ "SEND_ERROR", { .curl_code = CURLE_SEND_ERROR }, OUT_RESET },
		{ "WEIRD_SERVER_REPLY", { .curl_code = CURLE_WEIRD_SERVER_REPLY }, OUT_INVALID },
		/* The transfer's error wins over what had arrived before it. */
		{ "RECV_ERROR mid-stream after a 200 and content",
		  { .curl_code = CURLE_RECV_ERROR, .status = 200, .streaming = true, .sse = true,
		    .content_seen = true }, OUT_RESET },
		{ "RECV_ERROR on a plain 200 with a valid body so far",
		  { .curl_code = CURLE_RECV_ERROR, .status = 200, .body_valid = true }, OUT_RESET },
		/* …except after [DONE]: the answer was whole, an SDK has handed it on. */
		{ "PARTIAL_FILE on a stream that saw [DONE]",
		  { .curl_code = CURLE_PARTIAL_FILE, .status = 200, .streaming = true, .sse = true,
		    .saw_done = true, .content_seen = true }, OUT_OK },
		{ "RECV_ERROR on a stream that saw [DONE]",
		  { .curl_code = CURLE_RECV_ERROR, .status = 200, .streaming = true, .sse = true,
		    .saw_done = true, .content_seen = true }, OUT_OK },
		{ "RECV_ERROR after [DONE] and an error event",
		  { .curl_code = CURLE_RECV_ERROR, .status = 200, .streaming = true, .sse = true,
		    .saw_done = true, .error_event = true }, OUT_RESET },
		{ "WEIRD_SERVER_REPLY with a status", { .curl_code = CURLE_WEIRD_SERVER_REPLY,
							.status = 200 }, OUT_INVALID },
	};

	check_classify(cases, N(cases));
}

Test(outcome, cuts_by_the_watchdog, .timeout = 10)
{
	static const struct classify_case cases[] = {
		{ "no answer within --timeout", { .cut = CUT_TIMEOUT }, OUT_TIMEOUT },
		{ "no first token within --timeout, headers in",
		  { .cut = CUT_TIMEOUT, .status = 200, .streaming = true, .sse = true },
		  OUT_TIMEOUT },
		{ "silent past --stall-timeout",
		  { .cut = CUT_STALL, .status = 200, .streaming = true, .sse = true,
		    .content_seen = true }, OUT_STALLED },
		{ "still going at --max-time",
		  { .cut = CUT_MAX_TIME, .status = 200, .streaming = true, .sse = true,
		    .content_seen = true }, OUT_TIMEOUT },
		/* A cut is the attempt's end, whatever the status said so far. */
		{ "cut after a 503's headers", { .cut = CUT_TIMEOUT, .status = 503 }, OUT_TIMEOUT },
	};

	check_classify(cases, N(cases));
}

Test(outcome, non_2xx_is_http_error, .timeout = 10)
{
	static const long statuses[] = { 100, 199, 301, 304, 400, 401, 404, 408, 409, 429,
					 500, 502, 503, 504, 599 };
	size_t i;
	int streaming;

	for (i = 0; i < N(statuses); i++) {
		for (streaming = 0; streaming < 2; streaming++) {
			/* A valid-looking body or stream changes nothing. */
			const struct attempt_facts f = {
				.status = statuses[i], .streaming = streaming, .body_valid = true,
				.sse = streaming, .saw_done = streaming,
			};
			enum outcome got = outcome_classify(&f);

			cr_assert_eq(got, OUT_HTTP_ERROR, "HTTP %ld (streaming %d): %s",
				     statuses[i], streaming, outcome_name(got));
		}
	}
}

Test(outcome, plain_answers, .timeout = 10)
{
	static const struct classify_case cases[] = {
		{ "200 with a chat completion", { .status = 200, .body_valid = true }, OUT_OK },
		{ "201 with a chat completion", { .status = 201, .body_valid = true }, OUT_OK },
		{ "299 with a chat completion", { .status = 299, .body_valid = true }, OUT_OK },
		{ "200 with something else", { .status = 200 }, OUT_INVALID },
		{ "204, no body", { .status = 204 }, OUT_INVALID },
		/* Stream facts do not apply to a plain request. */
		{ "200 chat completion, not an event stream",
		  { .status = 200, .body_valid = true, .sse = false, .saw_done = false }, OUT_OK },
		{ "200 chat completion, stray stream facts",
		  { .status = 200, .body_valid = true, .bad_frame = true, .error_event = true },
		  OUT_OK },
	};

	check_classify(cases, N(cases));
}

Test(outcome, streams, .timeout = 10)
{
	static const struct classify_case cases[] = {
		{ "event stream ending in [DONE]",
		  { .status = 200, .streaming = true, .sse = true, .saw_done = true,
		    .content_seen = true }, OUT_OK },
		{ "[DONE] without any content",
		  { .status = 200, .streaming = true, .sse = true, .saw_done = true }, OUT_OK },
		{ "not text/event-stream",
		  { .status = 200, .streaming = true, .sse = false, .saw_done = true },
		  OUT_INVALID },
		{ "not text/event-stream, a JSON body",
		  { .status = 200, .streaming = true, .sse = false, .body_valid = true },
		  OUT_INVALID },
		{ "a data line that is not JSON",
		  { .status = 200, .streaming = true, .sse = true, .bad_frame = true,
		    .saw_done = true }, OUT_INVALID },
		{ "an error event, then the end",
		  { .status = 200, .streaming = true, .sse = true, .error_event = true,
		    .content_seen = true }, OUT_TRUNCATED },
		{ "an error event, even with [DONE]",
		  { .status = 200, .streaming = true, .sse = true, .error_event = true,
		    .saw_done = true }, OUT_TRUNCATED },
		{ "ended without [DONE]",
		  { .status = 200, .streaming = true, .sse = true, .content_seen = true },
		  OUT_TRUNCATED },
		{ "ended without [DONE] or content",
		  { .status = 200, .streaming = true, .sse = true }, OUT_TRUNCATED },
		/* body_valid is the plain answer's fact: a stream ignores it. */
		{ "[DONE], body_valid false",
		  { .status = 200, .streaming = true, .sse = true, .saw_done = true,
		    .body_valid = false }, OUT_OK },
		{ "no [DONE], body_valid true",
		  { .status = 200, .streaming = true, .sse = true, .body_valid = true },
		  OUT_TRUNCATED },
	};

	check_classify(cases, N(cases));
}

/*
 * A gateway that ends a stream because its upstream went silent says so
 * with an error event whose code is "stream_stalled": the client saw a
 * stall, not a truncation — whether or not content had come, and whatever
 * else would have made it truncated (no [DONE], a short chunked body).
 * Another code, or a cut by the transfer's own error, stays as it was.
 */
Test(outcome, stream_stalled_error_event_is_stalled, .timeout = 10)
{
	static const struct classify_case cases[] = {
		{ "stream_stalled after content",
		  { .status = 200, .streaming = true, .sse = true, .error_event = true,
		    .stall_event = true, .content_seen = true }, OUT_STALLED },
		{ "stream_stalled before any content",
		  { .status = 200, .streaming = true, .sse = true, .error_event = true,
		    .stall_event = true }, OUT_STALLED },
		{ "stream_stalled, then a short chunked body",
		  { .curl_code = CURLE_PARTIAL_FILE, .status = 200, .streaming = true,
		    .sse = true, .error_event = true, .stall_event = true, .content_seen = true },
		  OUT_STALLED },
		{ "stream_stalled, even with [DONE]",
		  { .status = 200, .streaming = true, .sse = true, .error_event = true,
		    .stall_event = true, .saw_done = true }, OUT_STALLED },
		{ "another error code",
		  { .status = 200, .streaming = true, .sse = true, .error_event = true,
		    .content_seen = true }, OUT_TRUNCATED },
		{ "stream_stalled, then a reset",
		  { .curl_code = CURLE_RECV_ERROR, .status = 200, .streaming = true, .sse = true,
		    .error_event = true, .stall_event = true, .content_seen = true }, OUT_RESET },
		{ "stream_stalled, then a broken frame",
		  { .status = 200, .streaming = true, .sse = true, .error_event = true,
		    .stall_event = true, .bad_frame = true }, OUT_INVALID },
		{ "stream_stalled in a 503's body",
		  { .status = 503, .streaming = true, .error_event = true, .stall_event = true },
		  OUT_HTTP_ERROR },
		/* loadgen's own watchdog: stalled as before */
		{ "silent past --stall-timeout, no event",
		  { .cut = CUT_STALL, .status = 200, .streaming = true, .sse = true,
		    .content_seen = true }, OUT_STALLED },
	};
	size_t i;

	check_classify(cases, N(cases));
	for (i = 0; i < N(cases); i++) {
		enum outcome o = outcome_classify(&cases[i].f);

		if (o == OUT_STALLED)
			cr_assert_not(outcome_retryable(o, 200, cases[i].f.content_seen),
				      "%s: a stall is retried", cases[i].what);
	}
}

/* One row of a retry table. */
struct retry_case {
	enum outcome o;
	long status;
	bool content_seen;
	bool want;
};

static void check_retryable(const struct retry_case *c, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		cr_assert_eq(outcome_retryable(c[i].o, c[i].status, c[i].content_seen), c[i].want,
			     "%s, status %ld, content_seen %d: expected %s", outcome_name(c[i].o),
			     c[i].status, c[i].content_seen, c[i].want ? "a retry" : "no retry");
}

Test(outcome, retryable_before_content, .timeout = 10)
{
	static const struct retry_case cases[] = {
		{ OUT_REFUSED, 0, false, true },
		{ OUT_RESET, 0, false, true },
		{ OUT_TIMEOUT, 0, false, true },
		/* Broke after a 200's headers, before any content: still retried. */
		{ OUT_RESET, 200, false, true },
		{ OUT_TIMEOUT, 200, false, true },
		{ OUT_HTTP_ERROR, 408, false, true },
		{ OUT_HTTP_ERROR, 409, false, true },
		{ OUT_HTTP_ERROR, 429, false, true },
		{ OUT_HTTP_ERROR, 500, false, true },
		{ OUT_HTTP_ERROR, 502, false, true },
		{ OUT_HTTP_ERROR, 503, false, true },
		{ OUT_HTTP_ERROR, 504, false, true },
		{ OUT_HTTP_ERROR, 599, false, true },
	};

	check_retryable(cases, N(cases));
}

Test(outcome, other_client_errors_are_not_retried, .timeout = 10)
{
	static const struct retry_case cases[] = {
		{ OUT_HTTP_ERROR, 400, false, false },
		{ OUT_HTTP_ERROR, 401, false, false },
		{ OUT_HTTP_ERROR, 403, false, false },
		{ OUT_HTTP_ERROR, 404, false, false },
		{ OUT_HTTP_ERROR, 407, false, false },
		{ OUT_HTTP_ERROR, 410, false, false },
		{ OUT_HTTP_ERROR, 422, false, false },
		{ OUT_HTTP_ERROR, 499, false, false },
		{ OUT_HTTP_ERROR, 301, false, false },
	};

	check_retryable(cases, N(cases));
}

/*
 * Once a stream has shown content the user saw part of an answer: a reset
 * or a --max-time cut then is not retried (that would duplicate the work),
 * nor is anything else.
 */
Test(outcome, never_retried_after_content, .timeout = 10)
{
	static const long statuses[] = { 0, 200, 408, 409, 429, 500, 503, 599 };
	size_t i;
	int o;

	for (o = 0; o < OUT_COUNT; o++) {
		for (i = 0; i < N(statuses); i++)
			cr_assert_not(outcome_retryable((enum outcome)o, statuses[i], true),
				      "%s, status %ld, after content: retried",
				      outcome_name((enum outcome)o), statuses[i]);
	}
}

/* ok, truncated, stalled and invalid are never retried, content or not. */
Test(outcome, ok_truncated_stalled_invalid_never_retried, .timeout = 10)
{
	static const enum outcome never[] = { OUT_OK, OUT_TRUNCATED, OUT_STALLED, OUT_INVALID };
	static const long statuses[] = { 0, 200, 408, 429, 500, 503 };
	size_t i;
	size_t j;
	int seen;

	for (i = 0; i < N(never); i++) {
		for (j = 0; j < N(statuses); j++) {
			for (seen = 0; seen < 2; seen++)
				cr_assert_not(outcome_retryable(never[i], statuses[j], seen),
					      "%s, status %ld, content_seen %d: retried",
					      outcome_name(never[i]), statuses[j], seen);
		}
	}
}

/* The facts of what happened, end to end: classify, then ask about a retry. */
Test(outcome, classify_then_retry, .timeout = 10)
{
	static const struct {
		const char *what;
		struct attempt_facts f;
		bool want;
	} cases[] = {
		{ "reset before any token", { .curl_code = CURLE_RECV_ERROR, .status = 200,
					      .streaming = true, .sse = true }, true },
		{ "reset after a token", { .curl_code = CURLE_RECV_ERROR, .status = 200,
					   .streaming = true, .sse = true,
					   .content_seen = true }, false },
		{ "no first token within --timeout", { .cut = CUT_TIMEOUT, .status = 200,
						       .streaming = true, .sse = true }, true },
		{ "cut at --max-time after content", { .cut = CUT_MAX_TIME, .status = 200,
						       .streaming = true, .sse = true,
						       .content_seen = true }, false },
		{ "stalled after content", { .cut = CUT_STALL, .status = 200, .streaming = true,
					     .sse = true, .content_seen = true }, false },
		{ "a 503 on a stream", { .status = 503, .streaming = true }, true },
		{ "a 429 on a plain request", { .status = 429 }, true },
		{ "a 400", { .status = 400 }, false },
		{ "refused", { .curl_code = CURLE_COULDNT_CONNECT }, true },
	};
	size_t i;

	for (i = 0; i < N(cases); i++) {
		enum outcome o = outcome_classify(&cases[i].f);

		cr_assert_eq(outcome_retryable(o, cases[i].f.status, cases[i].f.content_seen),
			     cases[i].want, "%s (%s): expected %s", cases[i].what, outcome_name(o),
			     cases[i].want ? "a retry" : "no retry");
	}
}

/*
 * libcurl's own re-send counts as a retry: one that takes a request past the
 * retries the client allowed leaves it reset (the last delivery the client
 * allowed broke), whatever the re-send got; within them, the re-send's
 * outcome stands.
 */
Test(outcome, resends_past_the_retries_allowed_are_reset, .timeout = 10)
{
	static const struct {
		enum outcome got;	/* the last delivery's */
		int64_t retries;
		int64_t allowed;
		enum outcome want;
	} cases[] = {
		{ OUT_OK, 0, 0, OUT_OK },
		{ OUT_OK, 1, 0, OUT_RESET },		/* retries off, re-sent, answered */
		{ OUT_HTTP_ERROR, 1, 0, OUT_RESET },
		{ OUT_RESET, 1, 0, OUT_RESET },		/* the re-send was reset too */
		{ OUT_TIMEOUT, 1, 0, OUT_RESET },
		{ OUT_OK, 1, 1, OUT_OK },		/* a re-send within --retries 1 */
		{ OUT_HTTP_ERROR, 3, 3, OUT_HTTP_ERROR },
		{ OUT_OK, 4, 3, OUT_RESET },		/* the last retry re-sent past 3 */
		{ OUT_INVALID, 2, 3, OUT_INVALID },
	};
	size_t i;

	for (i = 0; i < N(cases); i++) {
		enum outcome got = outcome_within_retries(cases[i].got, cases[i].retries,
							  cases[i].allowed);

		cr_assert_eq(got, cases[i].want, "%s after %lld retries of %lld allowed: %s, "
			     "expected %s", outcome_name(cases[i].got),
			     (long long)cases[i].retries, (long long)cases[i].allowed,
			     outcome_name(got), outcome_name(cases[i].want));
	}
}
