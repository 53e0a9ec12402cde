/*
 * hedge: the pure parts of hedging — a target's recent latencies and their
 * percentile, and the hedge delay an alias uses (the token bucket that
 * bounds retries and hedges is budget.h's). No I/O; times are the caller's
 * milliseconds, so the tests drive them with a fake clock.
 */
#ifndef FAULTLINE_GATEWAY_HEDGE_H
#define FAULTLINE_GATEWAY_HEDGE_H

#include <stdbool.h>

#include "gateway/config.h"

/* Latencies a target remembers for the adaptive delay. */
#define LAT_RING_SIZE 256

/* The latest successful attempts' latencies (a stream's: time to first content). */
struct lat_ring {
	double v[LAT_RING_SIZE];
	unsigned n;			/* held, up to LAT_RING_SIZE */
	unsigned next;			/* where the next goes */
};

/* Remembers one latency, forgetting the oldest once full. */
void lat_ring_add(struct lat_ring *r, double ms);

/*
 * The pct-th percentile (0 < pct ≤ 100) of the latencies held, by the
 * nearest-rank rule (the smallest value with at least pct % of them at or
 * below it); NAN when none is held.
 */
double lat_ring_percentile(const struct lat_ring *r, double pct);

/*
 * How long after an attempt starts its hedge starts: after_ms when set;
 * else the percentile of r within [min_after_ms, max_after_ms], and
 * max_after_ms while r holds fewer than min_samples.
 */
double hedge_delay_ms(const struct gw_hedge *h, const struct lat_ring *r);

#endif
