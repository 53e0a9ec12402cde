/*
 * backoff: how long to wait before retry number n — capped exponential
 * backoff with full jitter (a uniform draw between 0 and min(cap,
 * base × 2^n)), and how a server's Retry-After fits in. Pure: the random
 * state is an argument, nothing reads a clock.
 */
#ifndef FAULTLINE_BACKOFF_H
#define FAULTLINE_BACKOFF_H

#include "common/rng.h"

struct backoff {
	double base_ms;		/* the first retry's ceiling */
	double cap_ms;		/* no wait is longer */
};

/*
 * The wait before retry `retry` (0 for the first retry), in milliseconds:
 * uniform in [0, min(cap, base × 2^retry)). Never negative, below cap when
 * cap > 0; large retry numbers do not overflow. Takes exactly one draw from
 * r whatever the result. Returns 0 when the ceiling is not a finite positive
 * number (a base or cap of zero, negative or NaN).
 */
double backoff_delay_ms(const struct backoff *b, unsigned retry, struct rng *r);

/*
 * The wait when the server may have sent Retry-After (retry_after_ms ≥ 0;
 * negative or NaN: none). When 0 ≤ retry_after_ms ≤ cap, the larger of
 * retry_after_ms and backoff_delay_ms(), so never sooner than the server
 * asked and never above cap; otherwise (none, or more than cap) the
 * jittered backoff alone. Takes exactly one draw from r either way.
 */
double backoff_delay_after_ms(const struct backoff *b, unsigned retry,
			      double retry_after_ms, struct rng *r);

/*
 * Parses a Retry-After header value, surrounding spaces and tabs ignored:
 * delta-seconds ("2", "0.5": digits with an optional fraction; past 2^31 s
 * taken as 2^31 s) or an IMF-fixdate ("Wed, 21 Oct 2015 07:28:00 GMT")
 * relative to now_unix_ms, a date in the past giving 0. Returns
 * milliseconds ≥ 0, or -1 for anything else (NULL, empty, signs, exponents,
 * the obsolete RFC 850 and asctime date forms, impossible dates).
 */
double backoff_parse_retry_after(const char *value, int64_t now_unix_ms);

#endif
