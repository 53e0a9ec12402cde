/*
 * attempt: result classification, the request budget, same-target retry
 * decisions and the final error, as plain functions of their arguments.
 * Only libcurl's error constants are taken from its header.
 */
#include "gateway/attempt.h"

#include "common/buf.h"

#include <curl/curl.h>
#include <math.h>

static struct attempt_class failover(enum attempt_failure f)
{
	return (struct attempt_class){ .verdict = ATTEMPT_FAILOVER, .failure = f };
}

static struct attempt_class verdict(enum attempt_verdict v)
{
	return (struct attempt_class){ .verdict = v, .failure = ATTEMPT_FAIL_NONE };
}

static struct attempt_class classify_curl(int code, bool connected)
{
	switch (code) {
	case CURLE_COULDNT_CONNECT:
	case CURLE_COULDNT_RESOLVE_HOST:
		return failover(ATTEMPT_FAIL_REFUSED);
	case CURLE_OPERATION_TIMEDOUT:
		return failover(connected ? ATTEMPT_FAIL_TIMEOUT : ATTEMPT_FAIL_CONNECT_TIMEOUT);
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
	case CURLE_GOT_NOTHING:
	case CURLE_PARTIAL_FILE:
		return failover(ATTEMPT_FAIL_RESET);
	default:
		return failover(ATTEMPT_FAIL_TRANSPORT);
	}
}

static struct attempt_class classify_status(long status, bool body_valid, bool contract_broken)
{
	if (status >= 200 && status <= 299 && body_valid && contract_broken)
		return failover(ATTEMPT_FAIL_CONTRACT);
	if (status >= 200 && status <= 299)
		return body_valid ? verdict(ATTEMPT_SUCCESS) : failover(ATTEMPT_FAIL_INVALID_BODY);
	if (status == 429)
		return failover(ATTEMPT_FAIL_HTTP_429);
	if (status == 408)
		return failover(ATTEMPT_FAIL_HTTP_408);
	if (status >= 400 && status <= 499)
		return verdict(ATTEMPT_PASS_THROUGH);
	if (status >= 500 && status <= 599)
		return failover(ATTEMPT_FAIL_HTTP_5XX);
	return failover(ATTEMPT_FAIL_BAD_STATUS);
}

struct attempt_class attempt_classify(const struct upstream_facts *f)
{
	if (f->cut)
		return failover(ATTEMPT_FAIL_TIMEOUT);
	if (f->curl_code != CURLE_OK)
		return classify_curl(f->curl_code, f->connected);
	return classify_status(f->status, f->body_valid, f->contract_broken);
}

struct attempt_class attempt_classify_stream(const struct upstream_facts *f,
					     const struct stream_facts *s)
{
	struct upstream_facts plain = *f;

	if (s->committed) {
		if (s->done)
			return verdict(ATTEMPT_SUCCESS);
		if (s->stalled)
			return failover(ATTEMPT_FAIL_STALL);
		if (s->error_event)
			return failover(ATTEMPT_FAIL_ERROR_EVENT);
		if (s->invalid)
			return failover(ATTEMPT_FAIL_INVALID_BODY);
		return failover(f->curl_code == CURLE_OK ? ATTEMPT_FAIL_TRUNCATED : ATTEMPT_FAIL_RESET);
	}
	if (f->cut)
		return failover(ATTEMPT_FAIL_FIRST_TOKEN_TIMEOUT);
	if (s->error_event)
		return failover(ATTEMPT_FAIL_ERROR_EVENT);
	if (s->invalid)
		return failover(ATTEMPT_FAIL_INVALID_BODY);
	if (s->sse)
		return f->curl_code == CURLE_OK ? failover(ATTEMPT_FAIL_TRUNCATED)
						: classify_curl(f->curl_code, f->connected);
	plain.body_valid = false;
	return attempt_classify(&plain);
}

const char *attempt_stream_code(enum attempt_failure f)
{
	switch (f) {
	case ATTEMPT_FAIL_STALL:
		return "stream_stalled";
	case ATTEMPT_FAIL_TRUNCATED:
		return "stream_truncated";
	case ATTEMPT_FAIL_ERROR_EVENT:
		return "stream_error_event";
	case ATTEMPT_FAIL_INVALID_BODY:
		return "stream_invalid";
	default:
		return "stream_reset";
	}
}

bool attempt_counts_as_failure(struct attempt_class c)
{
	return c.verdict == ATTEMPT_FAILOVER;
}

bool attempt_failure_is_unavailable(enum attempt_failure f)
{
	return f == ATTEMPT_FAIL_REFUSED;
}

const char *attempt_failure_name(enum attempt_failure f)
{
	switch (f) {
	case ATTEMPT_FAIL_NONE:
		return "none";
	case ATTEMPT_FAIL_REFUSED:
		return "refused";
	case ATTEMPT_FAIL_RESET:
		return "reset";
	case ATTEMPT_FAIL_CONNECT_TIMEOUT:
		return "connect_timeout";
	case ATTEMPT_FAIL_TIMEOUT:
		return "timeout";
	case ATTEMPT_FAIL_HTTP_5XX:
		return "http_5xx";
	case ATTEMPT_FAIL_HTTP_429:
		return "http_429";
	case ATTEMPT_FAIL_HTTP_408:
		return "http_408";
	case ATTEMPT_FAIL_INVALID_BODY:
		return "invalid_body";
	case ATTEMPT_FAIL_BAD_STATUS:
		return "bad_status";
	case ATTEMPT_FAIL_TRANSPORT:
		return "transport";
	case ATTEMPT_FAIL_FIRST_TOKEN_TIMEOUT:
		return "first_token_timeout";
	case ATTEMPT_FAIL_ERROR_EVENT:
		return "error_event";
	case ATTEMPT_FAIL_TRUNCATED:
		return "truncated";
	case ATTEMPT_FAIL_STALL:
		return "stall";
	case ATTEMPT_FAIL_CONTRACT:
		return "contract_violation";
	case ATTEMPT_NFAILURES:
		break;
	}
	return "unknown";
}

const char *attempt_verdict_name(enum attempt_verdict v)
{
	switch (v) {
	case ATTEMPT_SUCCESS:
		return "success";
	case ATTEMPT_PASS_THROUGH:
		return "pass_through";
	case ATTEMPT_FAILOVER:
		return "failover";
	}
	return "unknown";
}

double attempt_remaining_ms(const struct attempt_budget *b, double now_ms)
{
	return b->deadline_ms - now_ms;
}

double attempt_timeout_ms(const struct attempt_budget *b, double provider_timeout_ms,
			  double now_ms)
{
	return fmin(provider_timeout_ms, attempt_remaining_ms(b, now_ms));
}

bool attempt_deadline_gone(const struct attempt_budget *b, double now_ms)
{
	return !(attempt_remaining_ms(b, now_ms) >= ATTEMPT_MIN_USEFUL_MS);
}

bool attempt_may_start(const struct attempt_budget *b, double now_ms)
{
	return b->attempts < b->max_attempts && !attempt_deadline_gone(b, now_ms);
}

bool attempt_retry_delay(const struct attempt_budget *b, const struct backoff *bo,
			 unsigned retry_no, double retry_after_ms, double now_ms,
			 double min_attempt_ms, struct rng *r, double *delay_ms)
{
	double wait;

	if (b->attempts >= b->max_attempts)
		return false;
	if (retry_after_ms >= 0)
		wait = retry_after_ms;
	else
		wait = backoff_delay_ms(bo, retry_no, r);
	if (!(now_ms + wait + fmax(min_attempt_ms, ATTEMPT_MIN_USEFUL_MS) <= b->deadline_ms))
		return false;
	*delay_ms = wait;
	return true;
}

struct attempt_final attempt_final_answer(bool deadline_exhausted, bool all_unavailable)
{
	if (deadline_exhausted)
		return (struct attempt_final){ 504, "gateway_timeout", "deadline_exceeded" };
	if (all_unavailable)
		return (struct attempt_final){ 503, "service_unavailable",
					       "all_providers_unavailable" };
	return (struct attempt_final){ 502, "bad_gateway", "upstream_error" };
}

int attempt_stream_message(struct buf *b, enum attempt_failure f, const char *provider,
			   double stall_ms, const char *upstream_message, const char *detail)
{
	if (f == ATTEMPT_FAIL_STALL)
		return buf_printf(b, "The upstream stream from %s went silent for %.0f ms.", provider,
				  stall_ms);
	if (f == ATTEMPT_FAIL_ERROR_EVENT)
		return buf_printf(b, "The upstream stream from %s sent an error: %s", provider,
				  upstream_message[0] ? upstream_message : "(no message)");
	if (f == ATTEMPT_FAIL_TRUNCATED)
		return buf_printf(b, "The upstream stream from %s ended without [DONE].", provider);
	if (f == ATTEMPT_FAIL_INVALID_BODY)
		return buf_printf(b, "The upstream stream from %s sent an event that is not JSON.",
				  provider);
	return buf_printf(b, "The upstream stream from %s broke off (%s).", provider,
			  detail[0] ? detail : attempt_failure_name(f));
}
