/*
 * attempt: the gateway's policy for the attempts of one request — what an
 * upstream attempt's result means (success, pass the answer through, or
 * fail over), how long the next attempt may take under the request's
 * deadline and attempt cap, whether a same-target retry still fits, and
 * which error the client gets when nothing succeeded. Pure: the time and
 * the random state are arguments; nothing reads a clock or does I/O.
 */
#ifndef FAULTLINE_ATTEMPT_H
#define FAULTLINE_ATTEMPT_H

#include <stdbool.h>

#include "common/backoff.h"
#include "common/rng.h"

/* An attempt needs at least this much of the deadline left to be worth starting. */
#define ATTEMPT_MIN_USEFUL_MS 1.0

/* What the gateway does after one attempt. */
enum attempt_verdict {
	ATTEMPT_SUCCESS,	/* answer the client with it */
	ATTEMPT_PASS_THROUGH,	/* hand the upstream's answer back untouched */
	ATTEMPT_FAILOVER,	/* retry or move on to the next target */
};

/* Why an attempt failed over (ATTEMPT_FAIL_NONE for the other verdicts). */
enum attempt_failure {
	ATTEMPT_FAIL_NONE,
	ATTEMPT_FAIL_REFUSED,		/* could not connect or resolve */
	ATTEMPT_FAIL_RESET,		/* the connection broke mid-transfer */
	ATTEMPT_FAIL_CONNECT_TIMEOUT,	/* curl timed out before connecting */
	ATTEMPT_FAIL_TIMEOUT,		/* the whole attempt ran out of time */
	ATTEMPT_FAIL_HTTP_5XX,
	ATTEMPT_FAIL_HTTP_429,
	ATTEMPT_FAIL_HTTP_408,
	ATTEMPT_FAIL_INVALID_BODY,	/* a 2xx that is not a chat completion */
	ATTEMPT_FAIL_BAD_STATUS,	/* 1xx, 3xx or no valid status at all */
	ATTEMPT_FAIL_TRANSPORT,		/* any other curl error */
	ATTEMPT_FAIL_FIRST_TOKEN_TIMEOUT,	/* a stream: no content within its cap */
	ATTEMPT_FAIL_ERROR_EVENT,	/* a stream: the upstream sent an error event */
	ATTEMPT_FAIL_TRUNCATED,		/* a stream ended without [DONE] */
	ATTEMPT_FAIL_STALL,		/* a committed stream went silent too long */
	ATTEMPT_FAIL_CONTRACT,		/* a 2xx chat completion whose content breaks the
					 * request's output contract (contract_violation) */
	ATTEMPT_NFAILURES		/* how many kinds there are, NONE included */
};

/* The facts about one finished attempt, gathered by the caller. */
struct upstream_facts {
	int curl_code;		/* the transfer's CURLcode; 0 (CURLE_OK) when it completed */
	bool connected;		/* a connection to the upstream was established */
	bool cut;		/* the gateway's own attempt timer ended it */
	long status;		/* the HTTP status (read when curl_code is 0) */
	bool body_valid;	/* a 2xx body parsed as a chat completion */
	bool contract_broken;	/* ... whose content breaks the request's contract */
};

/* What the gateway saw of a streaming attempt's answer. */
struct stream_facts {
	bool sse;		/* a 2xx text/event-stream answer */
	bool committed;		/* its first content arrived: the client has its headers */
	bool done;		/* data: [DONE] arrived */
	bool error_event;	/* an error event (or {"error":…} chunk) arrived */
	bool invalid;		/* a data line that is not JSON, or a line too long */
	bool stalled;		/* the stall timer ended it, after the commit */
};

/* attempt_classify()'s answer. */
struct attempt_class {
	enum attempt_verdict verdict;
	enum attempt_failure failure;	/* set when verdict is ATTEMPT_FAILOVER */
};

/*
 * The budget of one request: an absolute deadline on the caller's clock and
 * a cap on attempts across every target. The caller counts attempts.
 */
struct attempt_budget {
	double deadline_ms;	/* absolute, on the same clock as now_ms */
	unsigned max_attempts;	/* attempts allowed in all (0: none) */
	unsigned attempts;	/* attempts started so far */
};

/* The error the client gets when no attempt succeeded. */
struct attempt_final {
	int status;		/* 504, 503 or 502 */
	const char *type;	/* the OpenAI error body's error.type */
	const char *code;	/* its error.code */
};

/*
 * Classifies one finished attempt, checking in this order:
 *   cut by the gateway's attempt timer → FAILOVER timeout;
 *   curl errors: COULDNT_CONNECT, COULDNT_RESOLVE_HOST → refused;
 *     OPERATION_TIMEDOUT → connect_timeout when not connected, else timeout;
 *     SEND_ERROR, RECV_ERROR, GOT_NOTHING, PARTIAL_FILE → reset;
 *     any other → transport;
 *   HTTP status: 2xx → SUCCESS with a valid body, else FAILOVER invalid_body;
 *     429 → FAILOVER http_429; 408 (the upstream gave up waiting: a blip of
 *     the upstream, not a fault of the request) → FAILOVER http_408; every
 *     other 4xx (400, 401, 403, 404, 409, 413, 422, …) → PASS_THROUGH, since
 *     another provider would refuse the same request; 5xx → FAILOVER
 *     http_5xx; anything else (1xx, 3xx, below 100, 600 and up: nothing a
 *     client of an OpenAI API can use) → FAILOVER bad_status.
 */
struct attempt_class attempt_classify(const struct upstream_facts *f);

/*
 * Classifies a streaming attempt that ended. Before the commit, checking in
 * this order: cut by the attempt timer → FAILOVER first_token_timeout; an
 * error event → error_event; a bad frame → invalid_body; an event stream
 * that ended cleanly without content → truncated, with a transfer error as
 * attempt_classify says; not an event stream → attempt_classify, a 2xx
 * being invalid_body (a stream was asked for). After the commit: [DONE] →
 * SUCCESS; else the break: stall, error_event, invalid_body, truncated (a
 * clean end), and reset for any transfer error.
 */
struct attempt_class attempt_classify_stream(const struct upstream_facts *f,
					     const struct stream_facts *s);

/*
 * The error.code of the event that ends a committed stream broken by f:
 * "stream_stalled", "stream_truncated", "stream_error_event",
 * "stream_invalid", and "stream_reset" for any other failure.
 */
const char *attempt_stream_code(enum attempt_failure f);

/*
 * The message of the error event that ends a committed stream broken by
 * f, into b: provider's stream went silent for stall_ms, sent an error
 * (its upstream message, may be ""), ended without [DONE], sent an event
 * that is not JSON, or broke off (detail: the transport's words, or "").
 * Returns 0 or -ENOMEM.
 */
struct buf;
int attempt_stream_message(struct buf *b, enum attempt_failure f, const char *provider,
			   double stall_ms, const char *upstream_message, const char *detail);

/*
 * Whether an attempt of this class counts as a failure of its target for
 * the breaker and the metrics: true exactly for ATTEMPT_FAILOVER. A passed
 * through 4xx is the request's fault, not the provider's.
 */
bool attempt_counts_as_failure(struct attempt_class c);

/*
 * Whether a failure means the target was unavailable without answering
 * (ATTEMPT_FAIL_REFUSED), for attempt_final_answer()'s all_unavailable.
 */
bool attempt_failure_is_unavailable(enum attempt_failure f);

/*
 * The short name of a failure kind, used as a metrics label and in the
 * per-attempt error message: "refused", "reset", "connect_timeout",
 * "timeout", "http_5xx", "http_429", "http_408", "invalid_body",
 * "bad_status", "transport", "first_token_timeout", "error_event",
 * "truncated", "stall"; "none" for ATTEMPT_FAIL_NONE; "unknown" else.
 */
const char *attempt_failure_name(enum attempt_failure f);

/* "success", "pass_through" or "failover"; "unknown" else. */
const char *attempt_verdict_name(enum attempt_verdict v);

/* The time left before the deadline at now_ms; zero or negative when gone. */
double attempt_remaining_ms(const struct attempt_budget *b, double now_ms);

/*
 * The time the next attempt gets for all of it (connect, headers and body):
 * min(provider_timeout_ms, the remaining deadline). Zero or negative when
 * the deadline is gone.
 */
double attempt_timeout_ms(const struct attempt_budget *b, double provider_timeout_ms,
			  double now_ms);

/*
 * Whether the deadline is spent at now_ms: less than ATTEMPT_MIN_USEFUL_MS
 * is left.
 */
bool attempt_deadline_gone(const struct attempt_budget *b, double now_ms);

/*
 * Whether another attempt may start at now_ms: fewer than max_attempts
 * have started and the deadline is not gone (at least
 * ATTEMPT_MIN_USEFUL_MS left).
 */
bool attempt_may_start(const struct attempt_budget *b, double now_ms);

/*
 * Decides a same-target retry after a failed attempt at now_ms. The wait is
 * retry_after_ms when the server sent Retry-After (≥ 0; negative or NaN:
 * none), honoured exactly even above the backoff cap; otherwise
 * backoff_delay_ms(bo, retry_no, r), a full-jitter draw (the only draw from
 * r, which may be NULL when Retry-After is given). Returns true with the
 * wait in *delay_ms when an attempt is left and the retry fits:
 * now_ms + wait + max(min_attempt_ms, ATTEMPT_MIN_USEFUL_MS) ≤ deadline, so
 * attempt_may_start() holds after the wait. Returns false otherwise (the
 * gateway moves on to the next target), leaving *delay_ms unchanged.
 */
bool attempt_retry_delay(const struct attempt_budget *b, const struct backoff *bo,
			 unsigned retry_no, double retry_after_ms, double now_ms,
			 double min_attempt_ms, struct rng *r, double *delay_ms);

/*
 * The client's error when no attempt succeeded, first rule that holds:
 *   deadline_exhausted (the deadline ran out before an answer: an attempt
 *     was cut by the deadline, or none could start for lack of time)
 *     → 504 "gateway_timeout" / "deadline_exceeded";
 *   all_unavailable (no upstream answered or timed out: every target was
 *     skipped as open or refused the connection)
 *     → 503 "service_unavailable" / "all_providers_unavailable";
 *   otherwise (some upstream was reached and failed: a 5xx, 429, reset,
 *     timeout or invalid body, with attempts or targets used up)
 *     → 502 "bad_gateway" / "upstream_error".
 */
struct attempt_final attempt_final_answer(bool deadline_exhausted, bool all_unavailable);

#endif
