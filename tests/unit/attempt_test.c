/*
 * attempt: every classification row (each curl error group, timeouts with
 * and without a connection, the gateway's own cut, status boundaries of
 * every class), what counts against a provider, the names, the attempt
 * timeout under the deadline, when an attempt may start, same-target retry
 * delays (backoff bounds over many seeds, Retry-After fitting or not) and
 * the final error. The clock is a number.
 */
#include <criterion/criterion.h>
#include <curl/curl.h>
#include <math.h>
#include <stdint.h>

#include "gateway/attempt.h"
#include "common/rng.h"

#define NA(a) (sizeof(a) / sizeof(a[0]))

struct classify_row {
	struct upstream_facts facts;
	enum attempt_verdict verdict;
	enum attempt_failure failure;
};

/* A completed transfer with this status and body validity. */
#define HTTP(s, valid) { .curl_code = CURLE_OK, .connected = true, .status = (s), \
			 .body_valid = (valid) }
/* A failed transfer. */
#define CURL(code, conn) { .curl_code = (code), .connected = (conn) }

static const struct classify_row classify_rows[] = {
	/* curl errors */
	{ CURL(CURLE_COULDNT_CONNECT, false), ATTEMPT_FAILOVER, ATTEMPT_FAIL_REFUSED },
	{ CURL(CURLE_COULDNT_RESOLVE_HOST, false), ATTEMPT_FAILOVER, ATTEMPT_FAIL_REFUSED },
	{ CURL(CURLE_OPERATION_TIMEDOUT, false), ATTEMPT_FAILOVER, ATTEMPT_FAIL_CONNECT_TIMEOUT },
	{ CURL(CURLE_OPERATION_TIMEDOUT, true), ATTEMPT_FAILOVER, ATTEMPT_FAIL_TIMEOUT },
	{ CURL(CURLE_SEND_ERROR, true), ATTEMPT_FAILOVER, ATTEMPT_FAIL_RESET },
	{ CURL(CURLE_RECV_ERROR, true), ATTEMPT_FAILOVER, ATTEMPT_FAIL_RESET },
	{ CURL(CURLE_GOT_NOTHING, true), ATTEMPT_FAILOVER, ATTEMPT_FAIL_RESET },
	{ CURL(CURLE_PARTIAL_FILE, true), ATTEMPT_FAILOVER, ATTEMPT_FAIL_RESET },
	{ CURL(CURLE_SSL_CONNECT_ERROR, true), ATTEMPT_FAILOVER, ATTEMPT_FAIL_TRANSPORT },
	{ CURL(CURLE_WRITE_ERROR, true), ATTEMPT_FAILOVER, ATTEMPT_FAIL_TRANSPORT },
	/* the gateway's own timer wins over whatever curl reported */
	{ { .cut = true, .curl_code = CURLE_ABORTED_BY_CALLBACK, .connected = true },
	  ATTEMPT_FAILOVER, ATTEMPT_FAIL_TIMEOUT },
	{ { .cut = true, .curl_code = CURLE_ABORTED_BY_CALLBACK, .connected = false },
	  ATTEMPT_FAILOVER, ATTEMPT_FAIL_TIMEOUT },
	{ { .cut = true, .curl_code = CURLE_OK, .connected = true, .status = 200,
	    .body_valid = true }, ATTEMPT_FAILOVER, ATTEMPT_FAIL_TIMEOUT },
	/* a curl error wins over a status seen before it */
	{ { .curl_code = CURLE_PARTIAL_FILE, .connected = true, .status = 200,
	    .body_valid = true }, ATTEMPT_FAILOVER, ATTEMPT_FAIL_RESET },
	/* statuses, class by class, boundaries included */
	{ HTTP(0, false), ATTEMPT_FAILOVER, ATTEMPT_FAIL_BAD_STATUS },
	{ HTTP(100, false), ATTEMPT_FAILOVER, ATTEMPT_FAIL_BAD_STATUS },
	{ HTTP(199, true), ATTEMPT_FAILOVER, ATTEMPT_FAIL_BAD_STATUS },
	{ HTTP(200, true), ATTEMPT_SUCCESS, ATTEMPT_FAIL_NONE },
	{ HTTP(200, false), ATTEMPT_FAILOVER, ATTEMPT_FAIL_INVALID_BODY },
	{ HTTP(201, true), ATTEMPT_SUCCESS, ATTEMPT_FAIL_NONE },
	{ HTTP(299, true), ATTEMPT_SUCCESS, ATTEMPT_FAIL_NONE },
	{ HTTP(299, false), ATTEMPT_FAILOVER, ATTEMPT_FAIL_INVALID_BODY },
	{ HTTP(300, true), ATTEMPT_FAILOVER, ATTEMPT_FAIL_BAD_STATUS },
	{ HTTP(302, false), ATTEMPT_FAILOVER, ATTEMPT_FAIL_BAD_STATUS },
	{ HTTP(399, false), ATTEMPT_FAILOVER, ATTEMPT_FAIL_BAD_STATUS },
	{ HTTP(400, false), ATTEMPT_PASS_THROUGH, ATTEMPT_FAIL_NONE },
	{ HTTP(401, false), ATTEMPT_PASS_THROUGH, ATTEMPT_FAIL_NONE },
	{ HTTP(403, false), ATTEMPT_PASS_THROUGH, ATTEMPT_FAIL_NONE },
	{ HTTP(404, false), ATTEMPT_PASS_THROUGH, ATTEMPT_FAIL_NONE },
	{ HTTP(408, false), ATTEMPT_FAILOVER, ATTEMPT_FAIL_HTTP_408 },
	{ HTTP(409, false), ATTEMPT_PASS_THROUGH, ATTEMPT_FAIL_NONE },
	{ HTTP(413, false), ATTEMPT_PASS_THROUGH, ATTEMPT_FAIL_NONE },
	{ HTTP(422, false), ATTEMPT_PASS_THROUGH, ATTEMPT_FAIL_NONE },
	{ HTTP(428, false), ATTEMPT_PASS_THROUGH, ATTEMPT_FAIL_NONE },
	{ HTTP(429, false), ATTEMPT_FAILOVER, ATTEMPT_FAIL_HTTP_429 },
	{ HTTP(430, false), ATTEMPT_PASS_THROUGH, ATTEMPT_FAIL_NONE },
	{ HTTP(499, false), ATTEMPT_PASS_THROUGH, ATTEMPT_FAIL_NONE },
	{ HTTP(500, false), ATTEMPT_FAILOVER, ATTEMPT_FAIL_HTTP_5XX },
	{ HTTP(502, false), ATTEMPT_FAILOVER, ATTEMPT_FAIL_HTTP_5XX },
	{ HTTP(503, false), ATTEMPT_FAILOVER, ATTEMPT_FAIL_HTTP_5XX },
	{ HTTP(599, false), ATTEMPT_FAILOVER, ATTEMPT_FAIL_HTTP_5XX },
	{ HTTP(600, true), ATTEMPT_FAILOVER, ATTEMPT_FAIL_BAD_STATUS },
	{ HTTP(-1, true), ATTEMPT_FAILOVER, ATTEMPT_FAIL_BAD_STATUS },
};

Test(attempt, classify_every_row, .timeout = 10)
{
	for (size_t i = 0; i < NA(classify_rows); i++) {
		const struct classify_row *row = &classify_rows[i];
		struct attempt_class c = attempt_classify(&row->facts);

		cr_assert_eq(c.verdict, row->verdict,
			     "row %zu (curl %d, status %ld): verdict %s, wanted %s", i,
			     row->facts.curl_code, row->facts.status,
			     attempt_verdict_name(c.verdict), attempt_verdict_name(row->verdict));
		cr_assert_eq(c.failure, row->failure,
			     "row %zu (curl %d, status %ld): failure %s, wanted %s", i,
			     row->facts.curl_code, row->facts.status,
			     attempt_failure_name(c.failure), attempt_failure_name(row->failure));
		/* exactly what fails over is held against the provider */
		cr_assert_eq(attempt_counts_as_failure(c), row->verdict == ATTEMPT_FAILOVER,
			     "row %zu: counts_as_failure", i);
	}
}

struct stream_row {
	struct upstream_facts facts;
	struct stream_facts stream;
	enum attempt_verdict verdict;
	enum attempt_failure failure;
};

#define SSE_OK { .curl_code = CURLE_OK, .connected = true, .status = 200 }
#define ABORTED { .curl_code = CURLE_WRITE_ERROR, .connected = true, .status = 200 }

static const struct stream_row stream_rows[] = {
	/* before the commit */
	{ { .cut = true, .connected = true, .status = 200 }, { .sse = true },
	  ATTEMPT_FAILOVER, ATTEMPT_FAIL_FIRST_TOKEN_TIMEOUT },
	{ { .cut = true, .curl_code = CURLE_ABORTED_BY_CALLBACK }, { 0 },
	  ATTEMPT_FAILOVER, ATTEMPT_FAIL_FIRST_TOKEN_TIMEOUT },
	{ ABORTED, { .sse = true, .error_event = true }, ATTEMPT_FAILOVER, ATTEMPT_FAIL_ERROR_EVENT },
	{ ABORTED, { .sse = true, .invalid = true }, ATTEMPT_FAILOVER, ATTEMPT_FAIL_INVALID_BODY },
	{ SSE_OK, { .sse = true }, ATTEMPT_FAILOVER, ATTEMPT_FAIL_TRUNCATED },
	{ { .curl_code = CURLE_RECV_ERROR, .connected = true, .status = 200 }, { .sse = true },
	  ATTEMPT_FAILOVER, ATTEMPT_FAIL_RESET },
	{ { .curl_code = CURLE_PARTIAL_FILE, .connected = true, .status = 200 }, { .sse = true },
	  ATTEMPT_FAILOVER, ATTEMPT_FAIL_RESET },
	/* not an event stream: as a plain answer, a 2xx being no use */
	{ { .curl_code = CURLE_OK, .connected = true, .status = 200, .body_valid = true }, { 0 },
	  ATTEMPT_FAILOVER, ATTEMPT_FAIL_INVALID_BODY },
	{ { .curl_code = CURLE_OK, .connected = true, .status = 503 }, { 0 },
	  ATTEMPT_FAILOVER, ATTEMPT_FAIL_HTTP_5XX },
	{ { .curl_code = CURLE_OK, .connected = true, .status = 400 }, { 0 },
	  ATTEMPT_PASS_THROUGH, ATTEMPT_FAIL_NONE },
	{ { .curl_code = CURLE_OK, .connected = true, .status = 429 }, { 0 },
	  ATTEMPT_FAILOVER, ATTEMPT_FAIL_HTTP_429 },
	{ { .curl_code = CURLE_COULDNT_CONNECT }, { 0 }, ATTEMPT_FAILOVER, ATTEMPT_FAIL_REFUSED },
	/* after the commit */
	{ SSE_OK, { .sse = true, .committed = true, .done = true }, ATTEMPT_SUCCESS,
	  ATTEMPT_FAIL_NONE },
	{ { .curl_code = CURLE_RECV_ERROR, .connected = true, .status = 200 },
	  { .sse = true, .committed = true, .done = true }, ATTEMPT_SUCCESS, ATTEMPT_FAIL_NONE },
	{ SSE_OK, { .sse = true, .committed = true, .stalled = true }, ATTEMPT_FAILOVER,
	  ATTEMPT_FAIL_STALL },
	{ ABORTED, { .sse = true, .committed = true, .error_event = true }, ATTEMPT_FAILOVER,
	  ATTEMPT_FAIL_ERROR_EVENT },
	{ ABORTED, { .sse = true, .committed = true, .invalid = true }, ATTEMPT_FAILOVER,
	  ATTEMPT_FAIL_INVALID_BODY },
	{ SSE_OK, { .sse = true, .committed = true }, ATTEMPT_FAILOVER, ATTEMPT_FAIL_TRUNCATED },
	{ { .curl_code = CURLE_RECV_ERROR, .connected = true, .status = 200 },
	  { .sse = true, .committed = true }, ATTEMPT_FAILOVER, ATTEMPT_FAIL_RESET },
	{ { .curl_code = CURLE_SSL_CONNECT_ERROR, .connected = true, .status = 200 },
	  { .sse = true, .committed = true }, ATTEMPT_FAILOVER, ATTEMPT_FAIL_RESET },
};

Test(attempt, classify_stream_every_row, .timeout = 10)
{
	for (size_t i = 0; i < NA(stream_rows); i++) {
		const struct stream_row *row = &stream_rows[i];
		struct attempt_class c = attempt_classify_stream(&row->facts, &row->stream);

		cr_assert_eq(c.verdict, row->verdict, "row %zu: verdict %s, want %s", i,
			     attempt_verdict_name(c.verdict), attempt_verdict_name(row->verdict));
		cr_assert_eq(c.failure, row->failure, "row %zu: failure %s, want %s", i,
			     attempt_failure_name(c.failure), attempt_failure_name(row->failure));
	}
}

Test(attempt, stream_codes, .timeout = 10)
{
	cr_assert_str_eq(attempt_stream_code(ATTEMPT_FAIL_STALL), "stream_stalled");
	cr_assert_str_eq(attempt_stream_code(ATTEMPT_FAIL_TRUNCATED), "stream_truncated");
	cr_assert_str_eq(attempt_stream_code(ATTEMPT_FAIL_ERROR_EVENT), "stream_error_event");
	cr_assert_str_eq(attempt_stream_code(ATTEMPT_FAIL_INVALID_BODY), "stream_invalid");
	cr_assert_str_eq(attempt_stream_code(ATTEMPT_FAIL_RESET), "stream_reset");
	cr_assert_str_eq(attempt_stream_code(ATTEMPT_FAIL_TRANSPORT), "stream_reset");
}

Test(attempt, counts_as_failure, .timeout = 10)
{
	static const struct {
		long status;
		bool body_valid;
		bool counts;
	} rows[] = {
		{ 200, true, false }, { 200, false, true }, { 400, false, false },
		{ 401, false, false }, { 403, false, false }, { 404, false, false },
		{ 422, false, false }, { 408, false, true }, { 429, false, true },
		{ 500, false, true }, { 503, false, true },
	};

	for (size_t i = 0; i < NA(rows); i++) {
		struct upstream_facts f = HTTP(rows[i].status, rows[i].body_valid);

		cr_assert_eq(attempt_counts_as_failure(attempt_classify(&f)), rows[i].counts,
			     "status %ld", rows[i].status);
	}
	cr_assert(attempt_counts_as_failure((struct attempt_class){ ATTEMPT_FAILOVER,
								     ATTEMPT_FAIL_REFUSED }));
	cr_assert_not(attempt_counts_as_failure((struct attempt_class){ ATTEMPT_PASS_THROUGH,
									 ATTEMPT_FAIL_NONE }));
}

Test(attempt, contract_violation_fails_over_only_on_a_valid_2xx, .timeout = 10)
{
	struct upstream_facts f = { .status = 200, .connected = true, .body_valid = true,
				    .contract_broken = true };
	struct attempt_class c = attempt_classify(&f);

	cr_assert_eq(c.verdict, ATTEMPT_FAILOVER);
	cr_assert_eq(c.failure, ATTEMPT_FAIL_CONTRACT);
	cr_assert(attempt_counts_as_failure(c));
	/* Not a chat completion at all: that is the body's fault, not the contract's. */
	f.body_valid = false;
	cr_assert_eq(attempt_classify(&f).failure, ATTEMPT_FAIL_INVALID_BODY);
	/* An error status stays what it is. */
	f = (struct upstream_facts){ .status = 503, .connected = true, .contract_broken = true };
	cr_assert_eq(attempt_classify(&f).failure, ATTEMPT_FAIL_HTTP_5XX);
	f = (struct upstream_facts){ .status = 200, .connected = true, .body_valid = true };
	cr_assert_eq(attempt_classify(&f).verdict, ATTEMPT_SUCCESS);
}

Test(attempt, unavailable_is_refused_only, .timeout = 10)
{
	for (int f = ATTEMPT_FAIL_NONE; f < ATTEMPT_NFAILURES; f++)
		cr_assert_eq(attempt_failure_is_unavailable((enum attempt_failure)f),
			     f == ATTEMPT_FAIL_REFUSED, "%s",
			     attempt_failure_name((enum attempt_failure)f));
}

Test(attempt, names, .timeout = 10)
{
	static const struct {
		enum attempt_failure f;
		const char *name;
	} rows[] = {
		{ ATTEMPT_FAIL_NONE, "none" },
		{ ATTEMPT_FAIL_REFUSED, "refused" },
		{ ATTEMPT_FAIL_RESET, "reset" },
		{ ATTEMPT_FAIL_CONNECT_TIMEOUT, "connect_timeout" },
		{ ATTEMPT_FAIL_TIMEOUT, "timeout" },
		{ ATTEMPT_FAIL_HTTP_5XX, "http_5xx" },
		{ ATTEMPT_FAIL_HTTP_429, "http_429" },
		{ ATTEMPT_FAIL_HTTP_408, "http_408" },
		{ ATTEMPT_FAIL_INVALID_BODY, "invalid_body" },
		{ ATTEMPT_FAIL_BAD_STATUS, "bad_status" },
		{ ATTEMPT_FAIL_TRANSPORT, "transport" },
		{ ATTEMPT_FAIL_FIRST_TOKEN_TIMEOUT, "first_token_timeout" },
		{ ATTEMPT_FAIL_ERROR_EVENT, "error_event" },
		{ ATTEMPT_FAIL_TRUNCATED, "truncated" },
		{ ATTEMPT_FAIL_STALL, "stall" },
		{ ATTEMPT_FAIL_CONTRACT, "contract_violation" },
		{ ATTEMPT_NFAILURES, "unknown" },
		{ (enum attempt_failure)99, "unknown" },
	};

	for (size_t i = 0; i < NA(rows); i++)
		cr_assert_str_eq(attempt_failure_name(rows[i].f), rows[i].name);
	cr_assert_str_eq(attempt_verdict_name(ATTEMPT_SUCCESS), "success");
	cr_assert_str_eq(attempt_verdict_name(ATTEMPT_PASS_THROUGH), "pass_through");
	cr_assert_str_eq(attempt_verdict_name(ATTEMPT_FAILOVER), "failover");
	cr_assert_str_eq(attempt_verdict_name((enum attempt_verdict)7), "unknown");
}

Test(attempt, timeout_is_min_of_provider_and_deadline, .timeout = 10)
{
	static const struct {
		double deadline, provider, now, want;
	} rows[] = {
		{ 5000, 1000, 0, 1000 },	/* provider timeout is shorter */
		{ 5000, 1000, 4000, 1000 },	/* exactly equal */
		{ 5000, 1000, 4500, 500 },	/* the deadline is shorter */
		{ 5000, 1000, 4999.5, 0.5 },
		{ 5000, 1000, 5000, 0 },	/* deadline reached */
		{ 5000, 1000, 6000, -1000 },	/* deadline gone */
		{ 10000, 1000, 9000, 1000 },
	};

	for (size_t i = 0; i < NA(rows); i++) {
		struct attempt_budget b = { .deadline_ms = rows[i].deadline, .max_attempts = 3 };

		cr_assert_float_eq(attempt_timeout_ms(&b, rows[i].provider, rows[i].now),
				   rows[i].want, 1e-9, "row %zu", i);
		cr_assert_float_eq(attempt_remaining_ms(&b, rows[i].now),
				   rows[i].deadline - rows[i].now, 1e-9, "row %zu", i);
	}
	struct attempt_budget gone = { .deadline_ms = 100, .max_attempts = 3 };

	cr_assert_leq(attempt_timeout_ms(&gone, 1000, 100), 0);
	cr_assert_leq(attempt_timeout_ms(&gone, 1000, 150), 0);
}

Test(attempt, may_start_at_cap_and_deadline_edge, .timeout = 10)
{
	static const struct {
		unsigned max, attempts;
		double now;
		bool may, gone;
	} rows[] = {
		{ 3, 0, 0, true, false },
		{ 3, 2, 0, true, false },
		{ 3, 3, 0, false, false },		/* at max attempts */
		{ 3, 4, 0, false, false },
		{ 0, 0, 0, false, false },		/* no attempts allowed */
		{ 3, 0, 999, true, false },		/* exactly the minimum left */
		{ 3, 0, 999.5, false, true },		/* less than the minimum */
		{ 3, 0, 1000, false, true },		/* at the deadline */
		{ 3, 0, 1200, false, true },		/* past it */
		{ 3, 3, 1200, false, true },
	};

	for (size_t i = 0; i < NA(rows); i++) {
		struct attempt_budget b = { .deadline_ms = 1000, .max_attempts = rows[i].max,
					    .attempts = rows[i].attempts };

		cr_assert_eq(attempt_may_start(&b, rows[i].now), rows[i].may, "row %zu", i);
		cr_assert_eq(attempt_deadline_gone(&b, rows[i].now), rows[i].gone, "row %zu", i);
	}
}

Test(attempt, retry_delay_within_backoff_bounds, .timeout = 10)
{
	const struct backoff bo = { .base_ms = 100, .cap_ms = 1000 };
	struct attempt_budget b = { .deadline_ms = 1e9, .max_attempts = 100, .attempts = 1 };
	double ceiling[] = { 100, 200, 400, 800, 1000, 1000 };

	for (uint64_t seed = 1; seed <= 500; seed++) {
		struct rng r, twin;

		rng_seed(&r, seed);
		rng_seed(&twin, seed);
		for (unsigned n = 0; n < NA(ceiling); n++) {
			double d = -1, same;

			cr_assert(attempt_retry_delay(&b, &bo, n, -1, 0, 10, &r, &d),
				  "seed %llu retry %u", (unsigned long long)seed, n);
			cr_assert_geq(d, 0);
			cr_assert_lt(d, ceiling[n], "seed %llu retry %u: %f",
				     (unsigned long long)seed, n, d);
			/* exactly backoff's draw: the same stream gives the same wait */
			same = backoff_delay_ms(&bo, n, &twin);
			cr_assert_float_eq(d, same, 1e-12);
		}
	}
}

Test(attempt, retry_delay_spreads_over_the_range, .timeout = 10)
{
	const struct backoff bo = { .base_ms = 100, .cap_ms = 1000 };
	struct attempt_budget b = { .deadline_ms = 1e9, .max_attempts = 100 };
	unsigned low = 0, high = 0;
	struct rng r;

	rng_seed(&r, 42);
	for (int i = 0; i < 2000; i++) {
		double d;

		cr_assert(attempt_retry_delay(&b, &bo, 2, -1, 0, 10, &r, &d));
		low += d < 100;
		high += d >= 300;
	}
	/* full jitter over [0, 400): each quarter holds about 500 */
	cr_assert(low > 350 && low < 650, "low %u", low);
	cr_assert(high > 350 && high < 650, "high %u", high);
}

Test(attempt, retry_delay_fits_the_deadline, .timeout = 10)
{
	/* base = cap = a tiny ceiling, so the draw is < 1 ms and the edges are clear */
	const struct backoff tiny = { .base_ms = 1e-6, .cap_ms = 1e-6 };
	static const struct {
		double now, min_attempt, retry_after;
		unsigned attempts;
		bool ok;
		double want;	/* the wait when ok and Retry-After was given */
	} rows[] = {
		{ 0, 100, -1, 1, true, 0 },		/* backoff, plenty of time */
		{ 900.5, 100, -1, 1, false, 0 },	/* 900.5 + ε + 100 > 1000 */
		{ 890, 100, -1, 1, true, 0 },
		{ 0, 100, -1, 3, false, 0 },		/* no attempt left */
		{ 0, 100, 500, 1, true, 500 },		/* Retry-After fits */
		{ 0, 100, 900, 1, true, 900 },		/* exactly fits: 0 + 900 + 100 = 1000 */
		{ 0, 100, 900.5, 1, false, 0 },		/* just too long */
		{ 0, 100, 5000, 1, false, 0 },		/* far beyond the deadline */
		{ 0, 100, 5000, 3, false, 0 },
		{ 0, 0, 999, 1, true, 999 },		/* min_attempt below the floor … */
		{ 0, 0, 999.5, 1, false, 0 },		/* … ATTEMPT_MIN_USEFUL_MS still applies */
		{ 0, 100, 0, 1, true, 0 },		/* Retry-After: 0 */
		{ 0, 100, INFINITY, 1, false, 0 },
		{ 1000, 0, 0, 1, false, 0 },		/* the deadline itself */
	};

	for (size_t i = 0; i < NA(rows); i++) {
		struct attempt_budget b = { .deadline_ms = 1000, .max_attempts = 3,
					    .attempts = rows[i].attempts };
		struct rng r;
		double d = -7;
		bool ok;

		rng_seed(&r, i + 1);
		ok = attempt_retry_delay(&b, &tiny, 0, rows[i].retry_after, rows[i].now,
					 rows[i].min_attempt, &r, &d);
		cr_assert_eq(ok, rows[i].ok, "row %zu", i);
		if (!ok) {
			cr_assert_eq(d, -7, "row %zu: *delay_ms written on refusal", i);
			continue;
		}
		if (rows[i].retry_after >= 0)
			cr_assert_float_eq(d, rows[i].want, 1e-12, "row %zu", i);
		/* a granted retry can start after its wait */
		cr_assert(attempt_may_start(&b, rows[i].now + d), "row %zu", i);
	}
}

Test(attempt, retry_after_beats_backoff_and_takes_no_draw, .timeout = 10)
{
	const struct backoff bo = { .base_ms = 100, .cap_ms = 200 };
	struct attempt_budget b = { .deadline_ms = 10000, .max_attempts = 5, .attempts = 1 };
	double d;

	/* above the backoff cap but inside the deadline: honoured as sent */
	cr_assert(attempt_retry_delay(&b, &bo, 0, 3000, 0, 500, NULL, &d));
	cr_assert_float_eq(d, 3000, 1e-12);
	/* would fit only without min_attempt_ms */
	cr_assert_not(attempt_retry_delay(&b, &bo, 0, 9600, 0, 500, NULL, &d));
}

Test(attempt, final_answer_rules, .timeout = 10)
{
	static const struct {
		bool deadline, unavailable;
		int status;
		const char *type, *code;
	} rows[] = {
		{ true, true, 504, "gateway_timeout", "deadline_exceeded" },
		{ true, false, 504, "gateway_timeout", "deadline_exceeded" },
		{ false, true, 503, "service_unavailable", "all_providers_unavailable" },
		{ false, false, 502, "bad_gateway", "upstream_error" },
	};

	for (size_t i = 0; i < NA(rows); i++) {
		struct attempt_final f = attempt_final_answer(rows[i].deadline,
							      rows[i].unavailable);

		cr_assert_eq(f.status, rows[i].status, "row %zu", i);
		cr_assert_str_eq(f.type, rows[i].type, "row %zu", i);
		cr_assert_str_eq(f.code, rows[i].code, "row %zu", i);
	}
}
